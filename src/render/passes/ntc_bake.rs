//! Inference on load (`shaders/ntc_bake.wgsl`): decode every texel of every mip of every
//! package material on the GPU into the three channel-group textures the reference path
//! samples, so that the reference pass renders NTC-decoded textures (trilinear and
//! anisotropic filtering by the hardware, no per-frame decode cost).
//!
//! The input vector and the MLP are the real-time pass's (`shaders/common/ntc_decode.wgsl`,
//! evaluated by a [`BakeKernel`]: f32, or the sorted decode's f16 FMA); outputs are clamped to \[0, 1\] and absent channels are neutral, as
//! the original texture sets hold them. One dispatch per (material, mip), one decoder per
//! workgroup of 16 × 16 (f32: 8 × 8) texels. Group 0 is written through a linear `Rgba8Unorm` view (storage) of a texture
//! sampled as `Rgba8UnormSrgb`, so the sRGB-encoded values decode in the sampler like the
//! originals.
//!
//! With a [`Transcode`], the decoded mips are block-compressed on the GPU
//! ([`BcnEncodePass`]) instead: a set's mips are decoded into scratch RGBA8 textures with
//! its mip chain, each group's chain is encoded into a block buffer in one dispatch (the
//! small mips beside the large one) and copied into block-compressed textures with full
//! mip chains ([`set_formats`] says which format each group gets); the scratch textures
//! and block buffer of a set are dropped once its work is submitted, so no RGBA8 copy is
//! kept.

use crate::gpu::Defines;
use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::kernel::{ComputeKernel, Group, KernelDesc};
use crate::gpu::layout::{self, Slot};
use crate::ntc::format::NtcPackage;
use crate::ntc::model::NtcConfig;
use crate::render::ntc_gpu::{NtcRenderError, NtcSceneGpu, model_defines};
use crate::render::passes::bcn_encode::{BcnEncodePass, EncodeJob, EncodeLevel, GpuBlockFormat};
use crate::render::passes::ntc_decode::NtcKernel;
use crate::render::scene_gpu::{SET_FORMATS, SampleFill, SceneGpu, neutral_set_views};
use crate::texture::ChannelMask;

/// How the bake evaluates the decoders (`ntc_bake.wgsl`'s kernels, `--bake-kernel`).
///
/// On an H200 (docs/RESULTS.md) `fma` bakes a 1024² set with mips in 1.35 ms of GPU time
/// against `f32`'s 9.0 ms, but its pipeline (the unrolled MLP) takes the driver about a
/// second more to create, so `f32` loads faster unless a scene has well over a hundred
/// such sets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum BakeKernel {
    /// [`NtcKernel::F32`]'s arithmetic, 8 × 8 texels per workgroup: within one 8-bit step
    /// of the CPU decode. Runs everywhere.
    #[default]
    F32,
    /// [`NtcKernel::Fma`]'s f16 FMA evaluation (the real-time sorted decode's: weights
    /// in workgroup memory, the MLP in registers), 16 × 16 texels per workgroup, with its
    /// error bound and needs (`SHADER_F16`, layer widths that are multiples of 8).
    Fma,
}

impl BakeKernel {
    /// Both, the portable one first.
    pub const ALL: [BakeKernel; 2] = [BakeKernel::F32, BakeKernel::Fma];

    /// `f32` or `fma`.
    pub fn name(self) -> &'static str {
        self.arithmetic().name()
    }

    /// The real-time decode kernel whose evaluation this is.
    pub const fn arithmetic(self) -> NtcKernel {
        match self {
            BakeKernel::F32 => NtcKernel::F32,
            BakeKernel::Fma => NtcKernel::Fma,
        }
    }

    /// Texels per workgroup side (`NTC_BAKE_SIDE`).
    pub const fn side(self) -> u32 {
        match self {
            BakeKernel::F32 => 8,
            BakeKernel::Fma => 16,
        }
    }

    /// Why `ctx`'s device cannot bake decoders of shape `config` with this kernel (`None`:
    /// it can).
    pub fn unavailable(self, ctx: &GpuContext, config: &NtcConfig) -> Option<String> {
        let kernel = self.arithmetic();
        kernel.lacking(ctx).or_else(|| kernel.misfit_width(config))
    }
}

impl std::fmt::Display for BakeKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Block compression of the baked textures (inference on load with `--transcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Transcode {
    /// BC1 where a group's channels fit RGB, BC7 where they need four, BC5 or BC4 for a
    /// group of two or one ([`set_formats`]).
    Bc1,
    /// BC7 where a group has three or four channels, BC5 or BC4 for two or one.
    Bc7,
}

impl Transcode {
    /// Both, in menu order.
    pub const ALL: [Transcode; 2] = [Self::Bc1, Self::Bc7];

    /// The name the command line and reports use.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Bc1 => "bc1",
            Self::Bc7 => "bc7",
        }
    }
}

impl std::fmt::Display for Transcode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One channel-group texture of a baked set: its sampled format, and the GPU encoder that
/// fills it (`None`: RGBA8, written by the bake itself).
pub type GroupFormat = (wgpu::TextureFormat, Option<GpuBlockFormat>);

/// The transcode a set of mip-0 size `size` takes: `transcode` when its sides are whole
/// 4×4 blocks (a block-compressed texture's must be), else none (it is baked
/// uncompressed).
pub fn set_transcode(size: (u32, u32), transcode: Option<Transcode>) -> Option<Transcode> {
    transcode.filter(|_| size.0.is_multiple_of(4) && size.1.is_multiple_of(4))
}

/// The texture of each channel group of a baked set whose package material has channels
/// `present`; `None` for a group none of whose channels the material has: no texture is
/// made for it, and the set samples a 1×1 neutral texture there (what the bake would
/// write everywhere), so a base colour + normal set holds what its BCn bundle holds.
///
/// Without transcoding: [`SET_FORMATS`]. With it, the channels a group holds decide, as
/// in the bundles and the BC4/BC5/BC7 protocol (each group is one texture sampled as
/// RGBA; a channel a format does not store reads as its neutral value through the
/// material's [`SampleFill`]):
/// - group 0 (base colour, alpha): BC1 (sRGB), or BC7 where the set has alpha, which
///   BC1's opaque mode drops;
/// - group 1 (normal X, Y, occlusion, roughness): BC5 where the set has only the normal
///   there, BC7 otherwise (the same 8 bits per texel; BC5 would drop the other two);
/// - group 2 (metallic, emissive RGB): BC4 where the set has only metallic (the BC1/BC5
///   bundle's bytes for its ORM image, with one channel at BC4's precision), BC7 with
///   emissive, whose blue (in alpha) BC1 would drop.
///
/// `Transcode::Bc7` makes group 0 BC7 too; BC5 and BC4 stay.
pub fn set_formats(present: ChannelMask, transcode: Option<Transcode>) -> [Option<GroupFormat>; 3] {
    use wgpu::TextureFormat as F;
    let formats = match transcode {
        None => SET_FORMATS.map(|f| (f, None)),
        Some(transcode) => {
            let bc7 = transcode == Transcode::Bc7;
            let pick = |four_channels: bool, srgb: bool| match (bc7 || four_channels, srgb) {
                (true, true) => (F::Bc7RgbaUnormSrgb, Some(GpuBlockFormat::Bc7)),
                (true, false) => (F::Bc7RgbaUnorm, Some(GpuBlockFormat::Bc7)),
                (false, true) => (F::Bc1RgbaUnormSrgb, Some(GpuBlockFormat::Bc1)),
                (false, false) => (F::Bc1RgbaUnorm, Some(GpuBlockFormat::Bc1)),
            };
            let normal_only = !present.intersects(ChannelMask::OCCLUSION | ChannelMask::ROUGHNESS);
            let metallic_only = !present.intersects(ChannelMask::EMISSIVE);
            [
                pick(present.intersects(ChannelMask::ALPHA), true),
                if normal_only {
                    (F::Bc5RgUnorm, Some(GpuBlockFormat::Bc5))
                } else {
                    pick(true, false)
                },
                if metallic_only {
                    (F::Bc4RUnorm, Some(GpuBlockFormat::Bc4 { channel: 0 }))
                } else {
                    pick(true, false)
                },
            ]
        }
    };
    std::array::from_fn(|g| {
        present
            .intersects(ChannelMask::texture_group(g))
            .then_some(formats[g])
    })
}

/// Bytes of a `format` texture of `size` texels with `mips` levels (block formats count
/// whole blocks, as wgpu allocates them).
pub fn texture_bytes(format: wgpu::TextureFormat, (width, height): (u32, u32), mips: u32) -> u64 {
    let (bw, bh) = format.block_dimensions();
    let block = u64::from(format.block_copy_size(None).unwrap_or(4));
    (0..mips)
        .map(|l| {
            let (w, h) = ((width >> l).max(1), (height >> l).max(1));
            u64::from(w.div_ceil(bw)) * u64::from(h.div_ceil(bh)) * block
        })
        .sum()
}

/// Bytes the textures of `package` baked with `transcode` take (the sum over its
/// materials of [`texture_bytes`] in [`set_formats`]), without baking.
pub fn package_baked_bytes(package: &NtcPackage, transcode: Option<Transcode>) -> u64 {
    package
        .materials
        .iter()
        .map(|m| {
            let size = (m.layout.width(), m.layout.height());
            set_formats(m.present, set_transcode(size, transcode))
                .iter()
                .flatten()
                .map(|(f, _)| texture_bytes(*f, size, m.layout.mips() as u32))
                .sum::<u64>()
        })
        .sum()
}

/// WGSL `BakeParams`: one dispatch.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct BakeParams {
    /// Entry of the mip table to decode.
    pub mip: u32,
    /// The material's decoder.
    pub decoder: u32,
    /// The material's channel mask.
    pub present: u32,
    /// Padding.
    pub _pad0: u32,
}

/// One package material decoded into textures.
#[derive(Debug)]
pub struct BakedSet {
    /// The package material's (texture set's) name.
    pub name: String,
    /// The channel-group textures with full mip chains, in [`set_formats`]: RGBA8 (group
    /// 0 viewed as sRGB; usable as storage) or block-compressed (copy destination);
    /// sampled and copy source either way. `None` for a group the set has no channel of.
    pub textures: [Option<wgpu::Texture>; 3],
    /// Sampled views (sRGB for group 0), for [`SceneGpu::material_bind_groups_with`]; a
    /// group without a texture samples the bake's 1×1 neutral one.
    pub views: [wgpu::TextureView; 3],
    /// What the views' samples lack (a BC5 normal group's occlusion).
    pub fill: SampleFill,
}

/// The bake pipeline and, when transcoding, the block encoder.
#[derive(Debug)]
pub struct NtcBakePass {
    kernel: ComputeKernel,
    evaluation: BakeKernel,
    encoder: Option<(Transcode, BcnEncodePass)>,
}

/// A scratch or output texture's storage view of one level, written by the bake.
fn storage_view(texture: &wgpu::Texture, mip: u32) -> wgpu::TextureView {
    texture.create_view(&wgpu::TextureViewDescriptor {
        format: Some(wgpu::TextureFormat::Rgba8Unorm),
        usage: Some(wgpu::TextureUsages::STORAGE_BINDING),
        base_mip_level: mip,
        mip_level_count: Some(1),
        ..Default::default()
    })
}

impl NtcBakePass {
    /// Label of the pass and its wgpu objects.
    pub const LABEL: &'static str = "ntc.bake";

    /// Build the pipeline for decoders of shape `config` evaluated by `evaluation` (an
    /// error where the device or the model cannot run it), baking into RGBA8 or, with
    /// `transcode`, into block-compressed textures (which needs the device's
    /// `TEXTURE_COMPRESSION_BC`; without it, one error says so).
    pub fn new(
        ctx: &GpuContext,
        config: &NtcConfig,
        transcode: Option<Transcode>,
        evaluation: BakeKernel,
    ) -> Result<Self, NtcRenderError> {
        if let Some(reason) = evaluation.unavailable(ctx, config) {
            return Err(NtcRenderError::KernelUnavailable {
                kernel: format!("{evaluation} (inference on load)"),
                reason,
            });
        }
        let device = &ctx.device;
        let needed = config.decoder_param_count() as u64 * 2;
        let limit = u64::from(device.limits().max_compute_workgroup_storage_size);
        if needed > limit {
            return Err(NtcRenderError::TooLarge {
                what: "the decoder in workgroup memory".into(),
                bytes: needed,
                limit,
            });
        }
        let encoder = match transcode {
            None => None,
            Some(t) if !ctx.granted.texture_compression_bc => {
                return Err(NtcRenderError::Gpu {
                    what: format!("transcoding to {t} on load"),
                    message: format!(
                        "{} offers no block-compressed textures (TEXTURE_COMPRESSION_BC); \
                         render without --transcode, or pick another adapter with WGPU_ADAPTER_NAME",
                        ctx.describe()
                    ),
                });
            }
            Some(t) => Some((t, BcnEncodePass::new(ctx)?)),
        };
        let target = Slot::WriteTexture(wgpu::TextureFormat::Rgba8Unorm);
        let kernel = ComputeKernel::new(
            ctx,
            &KernelDesc {
                label: Self::LABEL,
                shader: "ntc_bake.wgsl",
                defines: &Self::defines(config, evaluation),
                entry: "bake_mip",
                groups: &[
                    Group::Slots(&[Slot::Uniform, target, target, target]),
                    Group::Slots(&NtcSceneGpu::GROUP),
                ],
            },
        )?;
        Ok(Self {
            kernel,
            evaluation,
            encoder,
        })
    }

    /// The kernel the decoders are evaluated with.
    pub fn evaluation(&self) -> BakeKernel {
        self.evaluation
    }

    /// The block compression this pass bakes into (`None`: RGBA8).
    pub fn transcode(&self) -> Option<Transcode> {
        self.encoder.as_ref().map(|(t, _)| *t)
    }

    /// The transcode of package material `m` ([`set_transcode`] of its size).
    fn set_transcode(&self, m: &crate::ntc::format::NtcMaterial) -> Option<Transcode> {
        set_transcode((m.layout.width(), m.layout.height()), self.transcode())
    }

    /// The defines `ntc_bake.wgsl` is composed with for decoders of shape `config`,
    /// evaluated by `evaluation`.
    pub fn defines(config: &NtcConfig, evaluation: BakeKernel) -> Defines {
        let side = evaluation.side();
        let defines = model_defines(config, side * side).with("NTC_BAKE_SIDE", side);
        match evaluation {
            BakeKernel::F32 => defines.flag("NTC_KERNEL_F32"),
            BakeKernel::Fma => defines
                .flag("NTC_KERNEL_FMA")
                .flag("NTC_F16")
                .with("NTC_FMA_PIXELS", 1),
        }
    }

    /// Decode every package material of `package` (uploaded as `ntc`) into textures, in
    /// package order; the work is submitted before this returns. The upload and the baked
    /// textures together must fit `budget` bytes
    /// ([`NtcPackage::check_upload_budget`]), checked before anything is allocated.
    /// Transcoding needs sets whose sides are multiples of 4 (the block size of mip 0).
    /// Where the device has timestamps, the GPU time of its passes is measured (and
    /// waited for).
    pub fn bake(
        &self,
        ctx: &GpuContext,
        package: &NtcPackage,
        ntc: &NtcSceneGpu,
        budget: u64,
    ) -> Result<BakedTextures, NtcRenderError> {
        package.check_upload_budget(true, budget)?;
        let device = &ctx.device;
        let max_side = device.limits().max_texture_dimension_2d;
        let align = u64::from(device.limits().min_uniform_buffer_offset_alignment)
            .max(std::mem::size_of::<BakeParams>() as u64);
        let mut params = Vec::new();
        let mut sets = Vec::with_capacity(package.materials.len());
        // The passes the timer times: one per mip decoded, one per texture encoded.
        let mut passes = 0u64;
        let neutral = neutral_set_views(device, &ctx.queue);
        for (index, m) in package.materials.iter().enumerate() {
            let (width, height) = (m.layout.width(), m.layout.height());
            if width.max(height) > max_side {
                return Err(NtcRenderError::TooLarge {
                    what: format!("texture set `{}` ({width}×{height} texels)", m.name),
                    bytes: u64::from(width) * u64::from(height) * 4,
                    limit: u64::from(max_side) * u64::from(max_side) * 4,
                });
            }
            let transcode = self.set_transcode(m);
            if let Some(t) = self.transcode()
                && transcode.is_none()
            {
                log::warn!(
                    "texture set `{}`: its {width}×{height} texels are not whole 4×4 blocks, \
                     so it is baked uncompressed (RGBA8) instead of transcoded to {t}",
                    m.name
                );
            }
            for mip in 0..m.layout.mips() {
                let entry = ntc
                    .mip_entry(index, mip)
                    .ok_or_else(|| NtcRenderError::Gpu {
                        what: format!("baking `{}`", m.name),
                        message: format!("no mip-table entry for mip {mip}"),
                    })?;
                params.push(BakeParams {
                    mip: entry,
                    decoder: m.decoder,
                    present: u32::from(m.present.0),
                    _pad0: 0,
                });
            }
            let mips = m.layout.mips() as u32;
            let formats = set_formats(m.present, transcode);
            passes += mips as u64
                + formats
                    .iter()
                    .flatten()
                    .filter(|(_, e)| e.is_some())
                    .count() as u64;
            let bytes = formats
                .iter()
                .flatten()
                .map(|(f, _)| texture_bytes(*f, (width, height), mips))
                .sum();
            let what = format!("the baked textures of `{}`", m.name);
            sets.push(crate::gpu::allocate(device, &what, || {
                (
                    baked_set(device, &m.name, (width, height), mips, &formats, &neutral),
                    bytes,
                )
            })?);
        }
        let mut bytes = vec![0u8; (params.len() as u64 * align) as usize];
        for (i, p) in params.iter().enumerate() {
            let at = i * align as usize;
            bytes[at..at + std::mem::size_of::<BakeParams>()]
                .copy_from_slice(bytemuck::bytes_of(p));
        }
        if bytes.is_empty() {
            return Ok(BakedTextures { sets, gpu_ms: None });
        }
        let params_buffer = wgpu::util::DeviceExt::create_buffer_init(
            device,
            &wgpu::util::BufferInitDescriptor {
                label: Some(Self::LABEL),
                contents: &bytes,
                usage: wgpu::BufferUsages::UNIFORM,
            },
        );
        let ntc_bind_group = ntc.bind_group(device, self.kernel.layout(1));
        let dispatch = Dispatcher {
            kernel: &self.kernel,
            side: self.evaluation.side(),
            params: &params_buffer,
            align,
            ntc: &ntc_bind_group,
            timer: PassTimer::new(ctx, passes),
            unwritten: storage_view(
                &device.create_texture(&layout::texture_2d(
                    "ntc.bake.unwritten",
                    (1, 1),
                    1,
                    wgpu::TextureFormat::Rgba8Unorm,
                    wgpu::TextureUsages::STORAGE_BINDING,
                )),
                0,
            ),
        };
        ctx.error_scope(|| {
            // Sets baked uncompressed are decoded straight into their textures, in one
            // submit; each transcoded set is decoded into scratch textures and encoded.
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some(Self::LABEL),
            });
            let mut slot = 0u64;
            for (set, m) in sets.iter().zip(&package.materials) {
                match (&self.encoder, self.set_transcode(m)) {
                    (Some((_, bcn)), Some(t)) => {
                        let formats = set_formats(m.present, Some(t));
                        transcode_set(ctx, &dispatch, bcn, set, &formats, &m.layout, slot)?;
                    }
                    _ => {
                        for mip in 0..m.layout.mips() {
                            let size = m.layout.mip_size(mip).unwrap_or((1, 1));
                            let views = dispatch.targets(&set.textures, mip as u32);
                            dispatch.record(device, &mut encoder, slot + mip as u64, &views, size);
                        }
                    }
                }
                slot += m.layout.mips() as u64;
            }
            ctx.queue.submit([encoder.finish()]);
            Ok(())
        })
        .and_then(|r| r)
        .and_then(|()| dispatch.timer.map(|t| t.finish(ctx)).transpose())
        .map(|gpu_ms| BakedTextures { sets, gpu_ms })
        .map_err(|e: crate::gpu::GpuError| NtcRenderError::Gpu {
            what: "baking the NTC package".into(),
            message: e.to_string(),
        })
    }

    /// Bake `package` into textures and make the material bind groups of `scene` with
    /// every texture set the package holds (by name) sampling its baked textures.
    pub fn bake_materials(
        &self,
        ctx: &GpuContext,
        package: &NtcPackage,
        ntc: &NtcSceneGpu,
        scene: &SceneGpu,
    ) -> Result<BakedMaterials, NtcRenderError> {
        let BakedTextures { sets, gpu_ms } =
            self.bake(ctx, package, ntc, crate::texture::budget::limit())?;
        let replacements: Vec<(usize, [wgpu::TextureView; 3], SampleFill)> = scene
            .sets
            .iter()
            .enumerate()
            .filter_map(|(set, desc)| {
                let name = desc.name();
                sets.iter()
                    .find(|b| b.name == name)
                    .map(|b| (set, b.views.clone(), b.fill))
            })
            .collect();
        let bind_groups = scene
            .material_bind_groups_with(&ctx.device, &replacements)
            .map_err(|e| NtcRenderError::Gpu {
                what: "using the baked textures".into(),
                message: e.to_string(),
            })?;
        Ok(BakedMaterials {
            transcode: self.transcode(),
            evaluation: self.evaluation,
            gpu_ms,
            replaced: replacements.len(),
            sets,
            bind_groups,
        })
    }
}

/// What every bake dispatch shares: the pipeline, the parameter slots, the package, the
/// timer of the passes and the stand-in target of groups a set does not have.
struct Dispatcher<'a> {
    kernel: &'a ComputeKernel,
    /// Texels per workgroup side.
    side: u32,
    params: &'a wgpu::Buffer,
    align: u64,
    ntc: &'a wgpu::BindGroup,
    timer: Option<PassTimer>,
    /// A 1×1 storage view bound for a group without a texture (the kernel skips it).
    unwritten: wgpu::TextureView,
}

impl Dispatcher<'_> {
    /// The storage views of level `mip` of `textures`, the stand-in where a group has none.
    fn targets(&self, textures: &[Option<wgpu::Texture>; 3], mip: u32) -> [wgpu::TextureView; 3] {
        textures.each_ref().map(|t| {
            t.as_ref()
                .map_or_else(|| self.unwritten.clone(), |t| storage_view(t, mip))
        })
    }

    /// Record, in its own compute pass, the decode of parameter slot `slot` (one
    /// material's mip of `size` texels) into the three storage `views`.
    fn record(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        slot: u64,
        views: &[wgpu::TextureView; 3],
        (w, h): (u32, u32),
    ) {
        let bind_group = self.kernel.bind_group(
            device,
            0,
            &[
                (
                    0,
                    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: self.params,
                        offset: slot * self.align,
                        size: wgpu::BufferSize::new(std::mem::size_of::<BakeParams>() as u64),
                    }),
                ),
                (1, wgpu::BindingResource::TextureView(&views[0])),
                (2, wgpu::BindingResource::TextureView(&views[1])),
                (3, wgpu::BindingResource::TextureView(&views[2])),
            ],
        );
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(NtcBakePass::LABEL),
            timestamp_writes: self.timer.as_ref().and_then(PassTimer::writes),
        });
        pass.set_pipeline(self.kernel.pipeline());
        pass.set_bind_group(0, &bind_group, &[]);
        pass.set_bind_group(1, self.ntc, &[]);
        pass.dispatch_workgroups(w.div_ceil(self.side), h.div_ceil(self.side), 1);
    }
}

/// Decode every mip of one set (parameter slots from `first_slot`) into scratch RGBA8
/// textures with the set's mip chain, block-compress each group's chain in one dispatch
/// into a buffer and copy the blocks into `set`'s block-compressed textures; one
/// submission, after which the scratch textures and the buffer are dropped. Levels smaller
/// than a block are copied at their physical (4×4) size, as wgpu requires.
fn transcode_set(
    ctx: &GpuContext,
    dispatch: &Dispatcher<'_>,
    bcn: &BcnEncodePass,
    set: &BakedSet,
    formats: &[Option<GroupFormat>; 3],
    layout: &crate::ntc::model::LatentLayout,
    first_slot: u64,
) -> Result<(), crate::gpu::GpuError> {
    let device = &ctx.device;
    let mips = layout.mips();
    let size = |mip: usize| layout.mip_size(mip).unwrap_or((1, 1));
    // Per encoded group, its levels' places in the one block buffer.
    let mut total = 0u64;
    let levels: [Vec<EncodeLevel>; 3] = formats.map(|format| {
        let Some((_, Some(encoding))) = format else {
            return Vec::new();
        };
        (0..mips)
            .map(|mip| {
                let size = size(mip);
                let row_bytes = (size.0.div_ceil(4) * encoding.block_bytes())
                    .next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
                let level = EncodeLevel {
                    mip: mip as u32,
                    size,
                    first_byte: total,
                    row_bytes,
                };
                total += u64::from(row_bytes) * u64::from(level.blocks().1);
                level
            })
            .collect()
    });
    let blocks = crate::gpu::allocate(device, "the transcode's block buffer", || {
        (
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(BcnEncodePass::LABEL),
                size: total.max(4),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            total,
        )
    })
    .map_err(|e| crate::gpu::GpuError::Validation(e.to_string()))?;
    let scratch: [Option<wgpu::Texture>; 3] = std::array::from_fn(|g| {
        (!levels[g].is_empty()).then(|| {
            device.create_texture(&layout::texture_2d(
                &format!("ntc.bake.scratch.group{g}"),
                size(0),
                mips as u32,
                wgpu::TextureFormat::Rgba8Unorm,
                wgpu::TextureUsages::STORAGE_BINDING | wgpu::TextureUsages::TEXTURE_BINDING,
            ))
        })
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some(BcnEncodePass::LABEL),
    });
    for mip in 0..mips {
        let views = dispatch.targets(&scratch, mip as u32);
        dispatch.record(
            device,
            &mut encoder,
            first_slot + mip as u64,
            &views,
            size(mip),
        );
    }
    for g in 0..3 {
        let (Some((format, Some(encoding))), Some(scratch), Some(target)) =
            (formats[g], &scratch[g], &set.textures[g])
        else {
            continue;
        };
        let sampled = scratch.create_view(&wgpu::TextureViewDescriptor {
            usage: Some(wgpu::TextureUsages::TEXTURE_BINDING),
            ..Default::default()
        });
        let timestamps = dispatch.timer.as_ref().and_then(PassTimer::writes);
        let job = EncodeJob {
            source: &sampled,
            levels: &levels[g],
            format: encoding,
            blocks: &blocks,
        };
        bcn.record(device, &mut encoder, job, timestamps);
        for level in &levels[g] {
            let physical = wgpu::Extent3d {
                width: level.size.0,
                height: level.size.1,
                depth_or_array_layers: 1,
            }
            .physical_size(format);
            encoder.copy_buffer_to_texture(
                wgpu::TexelCopyBufferInfo {
                    buffer: &blocks,
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: level.first_byte,
                        bytes_per_row: Some(level.row_bytes),
                        rows_per_image: None,
                    },
                },
                wgpu::TexelCopyTextureInfo {
                    texture: target,
                    mip_level: level.mip,
                    origin: wgpu::Origin3d::ZERO,
                    aspect: wgpu::TextureAspect::All,
                },
                physical,
            );
        }
    }
    ctx.queue.submit([encoder.finish()]);
    Ok(())
}

/// The textures of a bake, in package order, and its GPU time.
#[derive(Debug)]
pub struct BakedTextures {
    /// One set per package material.
    pub sets: Vec<BakedSet>,
    /// GPU milliseconds of the bake's compute passes (decode, and with a transcode the
    /// block encoding), where the device has timestamps.
    pub gpu_ms: Option<f64>,
}

/// GPU time of a bake's compute passes: each pass writes a timestamp at its beginning
/// and end (`TIMESTAMP_QUERY`), and the time is the sum of the passes' spans, so gaps
/// while the host records the next set's work do not count (the buffer → texture copies
/// of a transcode are not timed).
struct PassTimer {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    capacity: u32,
    next: std::cell::Cell<u32>,
}

impl PassTimer {
    /// A timer for `passes` passes; `None` where the device has no timestamps or the
    /// passes need more queries than one query set holds.
    fn new(ctx: &GpuContext, passes: u64) -> Option<Self> {
        let capacity = u32::try_from(passes * 2)
            .ok()
            .filter(|&c| c > 0 && c <= wgpu::QUERY_SET_MAX_QUERIES)?;
        if !ctx.granted.timestamps {
            return None;
        }
        let device = &ctx.device;
        Some(Self {
            set: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some(NtcBakePass::LABEL),
                ty: wgpu::QueryType::Timestamp,
                count: capacity,
            }),
            resolve: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(NtcBakePass::LABEL),
                size: u64::from(capacity) * 8,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            capacity,
            next: std::cell::Cell::new(0),
        })
    }

    /// The timestamp writes of the next pass.
    fn writes(&self) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let at = self.next.get();
        (at + 2 <= self.capacity).then(|| {
            self.next.set(at + 2);
            wgpu::ComputePassTimestampWrites {
                query_set: &self.set,
                beginning_of_pass_write_index: Some(at),
                end_of_pass_write_index: Some(at + 1),
            }
        })
    }

    /// Resolve, wait and return the passes' summed milliseconds.
    fn finish(self, ctx: &GpuContext) -> Result<f64, crate::gpu::GpuError> {
        let used = self.next.get();
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        encoder.resolve_query_set(&self.set, 0..used, &self.resolve, 0);
        ctx.queue.submit([encoder.finish()]);
        let bytes = crate::gpu::readback::read_buffer(ctx, &self.resolve, 0..u64::from(used) * 8)?;
        let ticks: u64 = bytes
            .chunks_exact(16)
            .map(|span| {
                let [start, end]: [u64; 2] = bytemuck::pod_read_unaligned(span);
                end.saturating_sub(start)
            })
            .sum();
        Ok(ticks as f64 * f64::from(ctx.queue.get_timestamp_period()) / 1e6)
    }
}

/// A package baked for one scene: the textures, and the scene's material bind groups with
/// the sets the package holds sampling them.
#[derive(Debug)]
pub struct BakedMaterials {
    /// The block compression the textures were baked into (`None`: RGBA8).
    pub transcode: Option<Transcode>,
    /// The kernel that evaluated the decoders.
    pub evaluation: BakeKernel,
    /// The bake's GPU milliseconds ([`BakedTextures::gpu_ms`]).
    pub gpu_ms: Option<f64>,
    /// The baked textures, in package order.
    pub sets: Vec<BakedSet>,
    /// Per scene material, its bind group (baked textures where the package holds its set,
    /// the originals elsewhere).
    pub bind_groups: Vec<wgpu::BindGroup>,
    /// How many of the scene's texture sets sample baked textures.
    pub replaced: usize,
}

/// The textures of one baked set, in `formats`, and their sampled views (`neutral`'s
/// where a group has no texture).
fn baked_set(
    device: &wgpu::Device,
    name: &str,
    size: (u32, u32),
    mips: u32,
    formats: &[Option<GroupFormat>; 3],
    neutral: &[wgpu::TextureView; 3],
) -> BakedSet {
    let textures: [Option<wgpu::Texture>; 3] = std::array::from_fn(|g| {
        let label = format!("ntc.baked.{name}.group{g}");
        let (sampled, encoding) = formats[g]?;
        if encoding.is_some() {
            return Some(device.create_texture(&layout::texture_2d(
                &label,
                size,
                mips,
                sampled,
                wgpu::TextureUsages::TEXTURE_BINDING
                    | wgpu::TextureUsages::COPY_DST
                    | wgpu::TextureUsages::COPY_SRC,
            )));
        }
        let srgb_view = [sampled];
        Some(device.create_texture(&wgpu::TextureDescriptor {
            view_formats: if sampled == wgpu::TextureFormat::Rgba8Unorm {
                &[]
            } else {
                &srgb_view
            },
            ..layout::texture_2d(
                &label,
                size,
                mips,
                wgpu::TextureFormat::Rgba8Unorm,
                wgpu::TextureUsages::STORAGE_BINDING
                    | wgpu::TextureUsages::TEXTURE_BINDING
                    | wgpu::TextureUsages::COPY_SRC,
            )
        }))
    });
    let views = std::array::from_fn(|g| match (&textures[g], formats[g]) {
        (Some(texture), Some((format, _))) => texture.create_view(&wgpu::TextureViewDescriptor {
            format: Some(format),
            // An sRGB view cannot be a storage binding: this one is only sampled.
            usage: Some(wgpu::TextureUsages::TEXTURE_BINDING),
            ..Default::default()
        }),
        _ => neutral[g].clone(),
    });
    BakedSet {
        name: name.to_owned(),
        textures,
        views,
        fill: SampleFill::of(std::array::from_fn(|g| {
            formats[g].map_or(SET_FORMATS[g], |(format, _)| format)
        })),
    }
}
