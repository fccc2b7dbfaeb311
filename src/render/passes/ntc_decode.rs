//! Real-time NTC decode pass (`shaders/ntc_decode.wgsl`): a compute pass after the
//! G-buffer that decodes every pixel's material from the package's latents and writes the
//! same [`MaterialTargets`] as the reference pass.
//!
//! One workgroup per screen tile ([`TileSize`]), one thread per pixel. The workgroup runs
//! the MLP once per distinct decoder of its tile: all threads copy that decoder's weights
//! into workgroup memory, then the pixels using it evaluate it. Three kernels
//! ([`NtcKernel`]) differ only in that evaluation (`shaders/common/ntc_decode.wgsl`).
//!
//! Mip and texel: from the G-buffer's UV derivatives; stochastic trilinear by default
//! (one decoded texel per pixel and frame, whose average over frames is the trilinear
//! filter), or the nearest mip and texel ([`DecodeSettings`]).

use bytemuck::{Pod, Zeroable};

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::kernel::{ComputeKernel, Group, KernelDesc, KernelError};
use crate::gpu::layout::Slot;
use crate::gpu::shader::describe_defines;
use crate::gpu::{CachedBindGroup, GpuContext, GrantedFeatures};
use crate::ntc::model::{NtcConfig, OUTPUTS};
use crate::render::ntc_gpu::{NtcRenderError, NtcSceneGpu, model_defines};
use crate::render::targets::{GBuffer, MaterialTargets, format};
use crate::render::tiles::TileSize;

/// How the decoder MLP is evaluated.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum NtcKernel {
    /// f32 arithmetic (FMA) on the package's f16 weights, kept as f16 pairs in workgroup
    /// memory and unpacked exactly. Runs everywhere; matches the CPU reference to ~1e-5.
    #[default]
    F32,
    /// f16 weights, activations, products and sums (`SHADER_F16`). Each dot product of
    /// `n` terms carries a rounding error of at most `n · 2⁻¹¹ · Σ|wᵢ xᵢ|` (typically
    /// `√n` times less), compounding over the layers; outputs in \[0, 1\] are within a few
    /// 1e-3 of the f32 kernel for decoders with moderate weights.
    F16,
    /// 16 × 16 f16 cooperative matrices with f32 accumulators
    /// (`EXPERIMENTAL_COOPERATIVE_MATRIX`, with `SHADER_F16` and `SUBGROUP`): the pixels
    /// of the current decoder are compacted into the rows of an input matrix and every
    /// layer is a sequence of matrix multiply-adds. Needs hidden widths that are multiples
    /// of 16 and an adapter with a 16×16×16 f16 → f32 configuration.
    #[value(name = "coop-matrix")]
    #[serde(rename = "coop-matrix")]
    CoopMatrix,
}

impl NtcKernel {
    /// Every kernel, the portable one first.
    pub const ALL: [NtcKernel; 3] = [NtcKernel::F32, NtcKernel::F16, NtcKernel::CoopMatrix];

    /// `f32`, `f16` or `coop-matrix`.
    pub fn name(self) -> &'static str {
        match self {
            NtcKernel::F32 => "f32",
            NtcKernel::F16 => "f16",
            NtcKernel::CoopMatrix => "coop-matrix",
        }
    }

    /// Whether the device's features allow this kernel (the model and the adapter's
    /// matrix configurations are checked by [`NtcDecodePass::new`]).
    pub fn supported(self, granted: &GrantedFeatures) -> bool {
        self.missing(granted).is_none()
    }

    /// The kernel used when none is chosen: f16 where the features allow, else f32.
    /// Cooperative matrices only on request: measured on an H200 (docs/RESULTS.md), they
    /// were 4–17 % slower than f16 at ~1.3 decoders per tile, where each decoder's
    /// 64-pixel batch is too little work to amortise staging it into matrix tiles.
    pub fn best(granted: &GrantedFeatures) -> NtcKernel {
        if NtcKernel::F16.supported(granted) {
            NtcKernel::F16
        } else {
            NtcKernel::F32
        }
    }

    /// The first missing feature, by its [`GrantedFeatures`] name.
    fn missing(self, granted: &GrantedFeatures) -> Option<&'static str> {
        let needs: &[(&'static str, bool)] = match self {
            NtcKernel::F32 => &[],
            NtcKernel::F16 => &[("shader_f16", granted.shader_f16)],
            NtcKernel::CoopMatrix => &[
                ("cooperative_matrix", granted.cooperative_matrix),
                ("shader_f16", granted.shader_f16),
                ("subgroup", granted.subgroup),
            ],
        };
        needs.iter().find(|(_, on)| !on).map(|(name, _)| *name)
    }

    /// The kernel's shader defines.
    fn defines(self) -> &'static [&'static str] {
        match self {
            NtcKernel::F32 => &["NTC_KERNEL_F32"],
            NtcKernel::F16 => &["NTC_KERNEL_F16", "NTC_F16"],
            NtcKernel::CoopMatrix => &["NTC_KERNEL_COOP", "NTC_F16"],
        }
    }

    /// Bytes of workgroup memory for `config` and `tile` (as declared in
    /// `common/ntc_decode.wgsl` and `ntc_decode.wgsl`).
    pub fn workgroup_bytes(self, config: &NtcConfig, tile: TileSize) -> u64 {
        // Weights as f16 (or f16 pairs), plus the decoder loop's two words.
        let weights = config.decoder_param_count() as u64 * 2 + 8;
        match self {
            NtcKernel::F32 | NtcKernel::F16 => weights,
            NtcKernel::CoopMatrix => {
                let rows = u64::from(tile.pixels().min(64));
                let widest = config
                    .hidden
                    .iter()
                    .map(|&w| w as usize)
                    .chain([config.input_width(), OUTPUTS])
                    .max()
                    .unwrap_or(OUTPUTS) as u64;
                // f16 inputs and f32 products per row, plus the compaction counters.
                weights + rows * widest * (2 + 4) + 8
            }
        }
    }
}

impl std::fmt::Display for NtcKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Per-frame settings of the decode pass.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DecodeSettings {
    /// Stochastic trilinear mip and texel choice from blue noise (default true); false:
    /// the nearest mip and texel.
    pub stochastic: bool,
    /// Added to every pixel's LOD before clamping, in mips (default 0; negative = sharper).
    pub lod_bias: f32,
}

impl Default for DecodeSettings {
    fn default() -> Self {
        Self {
            stochastic: true,
            lod_bias: 0.0,
        }
    }
}

/// WGSL `DecodeParams` (`shaders/ntc_decode.wgsl`): the pass's uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct DecodeParams {
    /// `DECODE_*` flags (1 = stochastic).
    pub flags: u32,
    /// Added to every pixel's LOD before clamping (mips).
    pub lod_bias: f32,
    /// Padding.
    pub _pad: [u32; 2],
}

/// [`DecodeParams::flags`] bit of stochastic trilinear filtering (WGSL `DECODE_STOCHASTIC`).
pub const DECODE_STOCHASTIC: u32 = 1;

impl DecodeParams {
    /// The uniform for `settings`.
    pub fn new(settings: &DecodeSettings) -> Self {
        Self {
            flags: if settings.stochastic {
                DECODE_STOCHASTIC
            } else {
                0
            },
            lod_bias: settings.lod_bias,
            _pad: [0; 2],
        }
    }
}

/// What the decode pass reads.
#[derive(Clone, Copy, Debug)]
pub struct DecodeInputs<'a> {
    /// The frame uniform (viewport, frame index for the blue noise).
    pub frame: &'a wgpu::Buffer,
    /// The scene's material constants (`array<MaterialData>`).
    pub materials: &'a wgpu::Buffer,
    /// The G-buffer.
    pub gbuffer: &'a GBuffer,
    /// The blue-noise tile (64² `R32Float`).
    pub blue_noise: &'a wgpu::TextureView,
    /// The package on the GPU.
    pub package: &'a NtcSceneGpu,
    /// Mip and texel choice.
    pub settings: &'a DecodeSettings,
}

/// The NTC decode pass.
#[derive(Debug)]
pub struct NtcDecodePass {
    kernel: NtcKernel,
    tile: TileSize,
    pipeline: ComputeKernel,
    params: wgpu::Buffer,
    bind_group: CachedBindGroup,
    ntc_bind_group: CachedBindGroup,
}

impl NtcDecodePass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "ntc.decode";

    /// Build the pipeline for decoders of shape `config`, evaluated with `kernel`, one
    /// workgroup per `tile`. A kernel the device or the model cannot run is an error that
    /// says why (pick another, e.g. [`NtcKernel::best`]); so is a shader-compiler panic
    /// while building the pipeline ([`NtcRenderError::KernelUnavailable`]).
    pub fn new(
        ctx: &GpuContext,
        config: &NtcConfig,
        kernel: NtcKernel,
        tile: TileSize,
    ) -> Result<Self, NtcRenderError> {
        let unavailable = |reason: String| NtcRenderError::KernelUnavailable {
            kernel: kernel.to_string(),
            reason,
        };
        if let Some(feature) = kernel.missing(&ctx.granted) {
            return Err(unavailable(format!(
                "the device lacks `{feature}` (granted: {})",
                ctx.granted
            )));
        }
        if kernel == NtcKernel::CoopMatrix {
            if let Some(w) = config.hidden.iter().find(|w| *w % 16 != 0) {
                return Err(unavailable(format!(
                    "hidden width {w} is not a multiple of 16"
                )));
            }
            let has_config = ctx.adapter.cooperative_matrix_properties().iter().any(|p| {
                (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
                    && p.ab_type == wgpu::CooperativeScalarType::F16
                    && p.cr_type == wgpu::CooperativeScalarType::F32
            });
            if !has_config {
                return Err(unavailable(
                    "the adapter offers no 16×16×16 f16 × f16 → f32 matrix configuration".into(),
                ));
            }
        }
        let limits = ctx.device.limits();
        let bytes = kernel.workgroup_bytes(config, tile);
        if bytes > u64::from(limits.max_compute_workgroup_storage_size) {
            return Err(unavailable(format!(
                "it needs {bytes} bytes of workgroup memory for this model and {tile} tiles, \
                 the device allows {}",
                limits.max_compute_workgroup_storage_size
            )));
        }
        if tile.pixels() > limits.max_compute_invocations_per_workgroup {
            return Err(unavailable(format!(
                "{tile} tiles need {} threads per workgroup, the device allows {}",
                tile.pixels(),
                limits.max_compute_invocations_per_workgroup
            )));
        }

        let device = &ctx.device;
        let defines = Self::defines(config, kernel, tile);
        let define_refs: Vec<(&str, &str)> = defines
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let target = Slot::WriteTexture(format::MATERIAL_TARGET);
        let kernel_desc = KernelDesc {
            label: Self::LABEL,
            shader: "ntc_decode.wgsl",
            defines: &define_refs,
            entry: "decode",
            groups: &[
                Group::Slots(&[
                    Slot::Uniform,
                    Slot::Storage,
                    Slot::FloatTexture,
                    Slot::FloatTexture,
                    Slot::FloatTexture,
                    Slot::UintTexture,
                    Slot::FloatTexture,
                    Slot::Uniform,
                    target,
                    target,
                    target,
                ]),
                Group::Slots(&NtcSceneGpu::GROUP),
            ],
        };
        // A compiler panic must not take the process down: it makes the kernel
        // unavailable (the renderer then falls back to another one).
        let pipeline = ComputeKernel::new(ctx, &kernel_desc).map_err(|e| match e {
            KernelError::Shader(e) => NtcRenderError::Shader(e),
            KernelError::CompilerPanic(failure) => unavailable(format!(
                "the shader compiler panicked building ntc_decode.wgsl with defines [{}]: {}",
                describe_defines(&define_refs),
                failure.message
            )),
            KernelError::Pipeline(failure) => NtcRenderError::Gpu {
                what: format!("creating the {kernel} decode pipeline"),
                message: failure.message,
            },
        })?;
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(Self::LABEL),
            size: std::mem::size_of::<DecodeParams>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Ok(Self {
            kernel,
            tile,
            pipeline,
            params,
            bind_group: CachedBindGroup::new(),
            ntc_bind_group: CachedBindGroup::new(),
        })
    }

    /// The defines `ntc_decode.wgsl` is composed with for decoders of shape `config`,
    /// evaluated with `kernel`, one workgroup per `tile`.
    pub fn defines(config: &NtcConfig, kernel: NtcKernel, tile: TileSize) -> Vec<(String, String)> {
        let mut defines = model_defines(config, tile.pixels());
        defines.extend(tile.defines().map(|(k, v)| (k.to_owned(), v)));
        defines.extend(
            kernel
                .defines()
                .iter()
                .map(|k| ((*k).to_owned(), "1".to_owned())),
        );
        defines
    }

    /// The kernel the pipeline evaluates the MLP with.
    pub fn kernel(&self) -> NtcKernel {
        self.kernel
    }

    /// The tile (workgroup) shape.
    pub fn tile(&self) -> TileSize {
        self.tile
    }

    /// Record the decode of `inputs` into `targets` (of the G-buffer's size).
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        inputs: &DecodeInputs<'_>,
        targets: &MaterialTargets,
    ) {
        let view = wgpu::BindingResource::TextureView;
        let g = inputs.gbuffer;
        let bind_group = self.bind_group.get(
            frame.device(),
            Self::LABEL,
            self.pipeline.layout(0),
            &[
                (0, inputs.frame.as_entire_binding()),
                (1, inputs.materials.as_entire_binding()),
                (2, view(&g.normal_tangent.view)),
                (3, view(&g.uv.view)),
                (4, view(&g.uv_grad.view)),
                (5, view(&g.material.view)),
                (6, view(inputs.blue_noise)),
                (7, self.params.as_entire_binding()),
                (8, view(&targets.base_color.view)),
                (9, view(&targets.normal_rm.view)),
                (10, view(&targets.emissive_ao.view)),
            ],
        );
        let ntc_bind_group = self.ntc_bind_group.get(
            frame.device(),
            "ntc",
            self.pipeline.layout(1),
            &inputs.package.resources(),
        );
        frame.queue().write_buffer(
            &self.params,
            0,
            bytemuck::bytes_of(&DecodeParams::new(inputs.settings)),
        );
        let size = (g.material.texture.width(), g.material.texture.height());
        let (x, y) = self.tile.grid(size);
        frame.compute_pass(Self::LABEL, |pass| {
            pass.set_pipeline(self.pipeline.pipeline());
            pass.set_bind_group(0, &bind_group, &[]);
            pass.set_bind_group(1, &ntc_bind_group, &[]);
            pass.dispatch_workgroups(x, y, 1);
        });
    }
}
