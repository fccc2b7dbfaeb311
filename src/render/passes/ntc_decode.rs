//! Real-time NTC decode pass (`shaders/ntc_decode_tiles.wgsl`, or `shaders/ntc_sort.wgsl` and
//! `shaders/ntc_decode_runs.wgsl` for the sorted kernels): a compute pass after the
//! G-buffer that decodes every pixel's material from the package's latents and writes the
//! same [`MaterialTargets`] as the reference pass.
//!
//! Per-tile kernels: one workgroup per screen tile ([`TileSize`]), one thread per pixel.
//! The workgroup runs the MLP once per distinct decoder of its tile: all threads load that
//! decoder's weights (into workgroup memory, or point at them), then the pixels using it
//! evaluate it. The kernels ([`NtcKernel`]) differ in that evaluation
//! (`shaders/common/ntc_decode.wgsl`, `ntc_fma.wgsl`, `ntc_coop.wgsl`).
//!
//! Sorted kernels ([`NtcKernel::is_sorted`]): explicit sub-stages, each its own timed
//! pass — `ntc.sort.count` (pixels without a decoder written, per-decoder pixel counts),
//! `ntc.sort.scan` (runs aligned to the decode's workgroup, prefix sums, indirect
//! dispatch arguments), `ntc.sort.scatter` (every pixel into its decoder's run, whole 8×8
//! tiles contiguous), then `ntc.decode` over the runs (indirect), one decoder per
//! workgroup. The sort's buffers belong to the pass and follow the frame size and the
//! package's decoder count; [`sorted_runs`] is their CPU reference.
//!
//! Mip and texel: from the G-buffer's UV derivatives; stochastic trilinear by default
//! (one decoded texel per pixel and frame, whose average over frames is the trilinear
//! filter), or the nearest mip and texel ([`DecodeSettings`]).

use crate::gpu::Defines;

use bytemuck::{Pod, Zeroable};

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::kernel::{ComputeKernel, Group, KernelDesc, KernelError};
use crate::gpu::layout::{Slot, group_layout};
use crate::gpu::{CachedBindGroup, GpuContext, GpuError, GrantedFeatures, read_buffer};
use crate::ntc::model::{NtcConfig, OUTPUTS};
use crate::render::ntc_gpu::{NtcRenderError, NtcSceneGpu, model_defines};
use crate::render::targets::{GBuffer, MaterialTargets};
use crate::screen::tiles::TileSize;

/// How the decoder MLP is evaluated, and how the frame's pixels reach it.
///
/// The first five kernels decode per screen tile: one workgroup per tile runs the MLP
/// once per distinct decoder of its tile. The two sorted kernels first sort the frame's
/// pixels by decoder (count, prefix sum, scatter into runs aligned to the decode's
/// workgroup, `shaders/ntc_sort.wgsl`) and then decode the runs, so that every workgroup
/// evaluates exactly one decoder (`shaders/ntc_decode_runs.wgsl`): no divergence at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[derive(clap::ValueEnum, serde::Serialize, serde::Deserialize)]
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
    /// f16 FMA with the MLP state in registers (`#for`-unrolled, constant indices),
    /// values and weights as f16 pairs, weights in workgroup memory read eight at a time
    /// (`common/ntc_fma.wgsl`; `SHADER_F16`). Needs layer widths that are multiples of 8.
    /// Arithmetic and error bound as [`NtcKernel::F16`].
    Fma,
    /// Staged cooperative matrices (`common/ntc_coop.wgsl`): the current decoder's pixels
    /// compacted 32 per subgroup, 16×16×16 f16 × f16 → f16 multiply-adds, f16 ping-pong
    /// staging, weights in workgroup memory. Needs `EXPERIMENTAL_COOPERATIVE_MATRIX`,
    /// `SHADER_F16`, `SUBGROUP`, subgroups of exactly 32, an f16 → f16 16×16×16
    /// configuration and layer widths that are multiples of 16.
    Mma,
    /// The sorted (divergence-free) decode with [`NtcKernel::Fma`]'s evaluation: 256
    /// threads per run workgroup, one pixel each, weights in workgroup memory (the
    /// fastest decode measured on an H200 in scenes, docs/RESULTS.md; 1.6× faster there
    /// than with 128 threads, while 512 threads, two pixels per thread or several runs
    /// per workgroup gained nothing).
    SortedFma,
    /// The sorted (divergence-free) decode with [`NtcKernel::Mma`]'s evaluation: 128
    /// threads (four subgroups of 32 pixels) per run workgroup, weights read from the
    /// decoder buffer.
    SortedMma,
    /// [`NtcKernel::Mma`] chained layer to layer: one f16 slice per subgroup, overwritten
    /// in place by each layer, and subgroup barriers between layers (one workgroup
    /// barrier per decoder of the tile); weights read from the decoder buffer (the slices
    /// of a 16×16 tile and a weight copy would exceed 48 KiB). Needs [`NtcKernel::Mma`]'s
    /// features and `SUBGROUP_BARRIER`.
    Chain,
    /// The sorted decode with [`NtcKernel::Chain`]'s evaluation, persistent: 192 threads
    /// (six subgroups) per run workgroup load its decoder's weights into workgroup memory
    /// once, then each subgroup runs tile after tile of 32 pixels against them
    /// ([`CHAIN_ROUNDS`] per subgroup), with subgroup barriers only.
    SortedChain,
}

/// Threads (and slots of a run) per workgroup of the sorted kernels' decode: `sorted-fma`
/// and `sorted-mma` (four subgroups of 32, whose f16 staging of 256 threads would exceed
/// the 48 KiB of workgroup memory most adapters have).
const RUN_THREADS_FMA: u32 = 256;
const RUN_THREADS_MMA: u32 = 128;
/// Threads per workgroup of `sorted-chain`: six subgroups, whose single slices (24 KiB)
/// and the default decoder's weights (16.3 KiB) fit 48 KiB of workgroup memory.
const RUN_THREADS_CHAIN: u32 = 192;
/// Tiles of 32 pixels each subgroup of `sorted-chain` runs per weight load (its
/// workgroup's slots: `RUN_THREADS_CHAIN` · this).
pub const CHAIN_ROUNDS: u32 = 8;
/// Width of the sorted decode's indirect dispatch grid (`NTC_RUN_GRID_X`).
const RUN_GRID_X: u32 = 1024;
/// Side of the sort's screen tiles (`NTC_SORT_TILE`): runs hold whole 8×8 tiles.
const SORT_TILE: u32 = 8;
/// The sort packs pixels as 16 bits per axis (`common/ntc_runs.wgsl`).
const MAX_SORTED_SIDE: u32 = 0xFFFF;

impl NtcKernel {
    /// Every kernel, the portable one first.
    pub const ALL: [NtcKernel; 9] = [
        NtcKernel::F32,
        NtcKernel::F16,
        NtcKernel::CoopMatrix,
        NtcKernel::Fma,
        NtcKernel::Mma,
        NtcKernel::SortedFma,
        NtcKernel::SortedMma,
        NtcKernel::Chain,
        NtcKernel::SortedChain,
    ];

    /// The kernels [`crate::render::kernel_choice`] calibrates: the sorted ones, which
    /// decode any scene without divergence (the per-tile kernels slow down with every
    /// further decoder in a tile, which a calibration frame cannot stand for).
    pub const CANDIDATES: [NtcKernel; 3] = [
        NtcKernel::SortedFma,
        NtcKernel::SortedMma,
        NtcKernel::SortedChain,
    ];

    /// `f32`, `f16`, `coop-matrix`, `fma`, `mma`, `sorted-fma`, `sorted-mma`, `chain` or
    /// `sorted-chain`.
    pub fn name(self) -> &'static str {
        match self {
            NtcKernel::F32 => "f32",
            NtcKernel::F16 => "f16",
            NtcKernel::CoopMatrix => "coop-matrix",
            NtcKernel::Fma => "fma",
            NtcKernel::Mma => "mma",
            NtcKernel::SortedFma => "sorted-fma",
            NtcKernel::SortedMma => "sorted-mma",
            NtcKernel::Chain => "chain",
            NtcKernel::SortedChain => "sorted-chain",
        }
    }

    /// Whether the frame's pixels are sorted by decoder before the decode.
    pub fn is_sorted(self) -> bool {
        matches!(
            self,
            NtcKernel::SortedFma | NtcKernel::SortedMma | NtcKernel::SortedChain
        )
    }

    /// Slots each run of a sorted kernel is aligned to: its decode's pixels (threads) per
    /// workgroup; `None` for the per-tile kernels, which have no runs.
    pub fn run_align(self) -> Option<u32> {
        match self {
            NtcKernel::SortedFma => Some(RUN_THREADS_FMA),
            NtcKernel::SortedMma => Some(RUN_THREADS_MMA),
            NtcKernel::SortedChain => Some(RUN_THREADS_CHAIN * CHAIN_ROUNDS),
            _ => None,
        }
    }

    /// Whether the MLP runs on cooperative matrices (the peak that bounds it).
    pub fn uses_matrices(self) -> bool {
        matches!(
            self,
            NtcKernel::CoopMatrix
                | NtcKernel::Mma
                | NtcKernel::SortedMma
                | NtcKernel::Chain
                | NtcKernel::SortedChain
        )
    }

    /// Whether the arithmetic is f16 (f32 otherwise).
    pub fn is_f16(self) -> bool {
        self != NtcKernel::F32
    }

    /// Whether the device's features allow this kernel (the model and the adapter's
    /// matrix configurations are checked by [`NtcDecodePass::new`]).
    pub fn supported(self, granted: &GrantedFeatures) -> bool {
        self.missing(granted).is_empty()
    }

    /// The fixed choice where nothing was measured (software adapters, a failed
    /// calibration; [`crate::render::kernel_choice`] picks by measurement otherwise): the
    /// sorted f16-FMA decode where the adapter
    /// has f16 (measured the fastest of every kernel on the street at 1080p, 1.2× the
    /// sorted matrix decode, and within 1.27× of its own shared-decoder time at up to 16
    /// decoders per tile: docs/RESULTS.md), else f32. [`NtcKernel::Fma`] with 16×16 tiles
    /// is faster where one decoder covers the screen, but slows with every further
    /// decoder in a tile, so it is not chosen on its own.
    pub fn best(granted: &GrantedFeatures) -> NtcKernel {
        if NtcKernel::SortedFma.supported(granted) {
            NtcKernel::SortedFma
        } else {
            NtcKernel::F32
        }
    }

    /// Every missing feature, by its [`GrantedFeatures`] name.
    pub fn missing(self, granted: &GrantedFeatures) -> Vec<&'static str> {
        let needs: &[(&'static str, bool)] = match self {
            NtcKernel::F32 => &[],
            NtcKernel::F16 | NtcKernel::Fma | NtcKernel::SortedFma => {
                &[("shader_f16", granted.shader_f16)]
            }
            NtcKernel::CoopMatrix | NtcKernel::Mma | NtcKernel::SortedMma => &[
                ("cooperative_matrix", granted.cooperative_matrix),
                ("shader_f16", granted.shader_f16),
                ("subgroup", granted.subgroup),
            ],
            NtcKernel::Chain | NtcKernel::SortedChain => &[
                ("cooperative_matrix", granted.cooperative_matrix),
                ("shader_f16", granted.shader_f16),
                ("subgroup", granted.subgroup),
                ("subgroup_barrier", granted.subgroup_barrier),
            ],
        };
        needs
            .iter()
            .filter(|(_, on)| !on)
            .map(|(name, _)| *name)
            .collect()
    }

    /// The kernel's shader defines (of `ntc_decode_tiles.wgsl`, or `ntc_decode_runs.wgsl` for
    /// the sorted kernels).
    fn defines(self) -> Defines {
        let f16 = |kernel: &str| Defines::new().flag(kernel).flag("NTC_F16");
        match self {
            NtcKernel::F32 => Defines::new().flag("NTC_KERNEL_F32"),
            NtcKernel::F16 => f16("NTC_KERNEL_F16"),
            NtcKernel::CoopMatrix => f16("NTC_KERNEL_COOP"),
            NtcKernel::Fma | NtcKernel::SortedFma => {
                f16("NTC_KERNEL_FMA").with("NTC_FMA_PIXELS", 1)
            }
            NtcKernel::Mma => f16("NTC_KERNEL_MMA"),
            NtcKernel::SortedMma => f16("NTC_KERNEL_MMA")
                .flag("NTC_DECODERS_F16")
                .flag("NTC_COOP_STORAGE"),
            NtcKernel::Chain => f16("NTC_KERNEL_MMA")
                .flag("NTC_DECODERS_F16")
                .flag("NTC_COOP_STORAGE")
                .flag("NTC_COOP_CHAIN"),
            NtcKernel::SortedChain => f16("NTC_KERNEL_MMA").flag("NTC_COOP_CHAIN"),
        }
    }

    /// Why `ctx`'s device cannot run this kernel: the features it lacks (`None`: it has
    /// them all).
    pub(crate) fn lacking(self, ctx: &GpuContext) -> Option<String> {
        let missing = self.missing(&ctx.granted);
        (!missing.is_empty()).then(|| {
            format!(
                "the device lacks {} (granted: {})",
                missing
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                ctx.granted
            )
        })
    }

    /// Why decoders of shape `config` do not fit this kernel: the first layer width
    /// (input or hidden) that is not a multiple of [`Self::width_multiple`] (`None`: all are).
    pub(crate) fn misfit_width(self, config: &NtcConfig) -> Option<String> {
        let multiple = self.width_multiple();
        std::iter::once(config.input_width())
            .chain(config.hidden.iter().map(|&w| w as usize))
            .find(|w| w % multiple != 0)
            .map(|w| format!("layer width {w} is not a multiple of {multiple}"))
    }

    /// The multiple every layer width (input and hidden) must be of.
    fn width_multiple(self) -> usize {
        match self {
            NtcKernel::F32 | NtcKernel::F16 => 1,
            NtcKernel::Fma | NtcKernel::SortedFma => 8,
            NtcKernel::CoopMatrix => 1,
            NtcKernel::Mma | NtcKernel::SortedMma | NtcKernel::Chain | NtcKernel::SortedChain => 16,
        }
    }

    /// Threads per workgroup of the decode (the tile's pixels, or a run's slots).
    pub fn threads(self, tile: TileSize) -> u32 {
        match self {
            NtcKernel::SortedChain => RUN_THREADS_CHAIN,
            _ => self.run_align().unwrap_or_else(|| tile.pixels()),
        }
    }

    /// Bytes of workgroup memory for `config` and `tile` (as declared in
    /// `common/ntc_decode.wgsl`, `common/ntc_fma.wgsl`, `common/ntc_coop.wgsl`,
    /// `ntc_decode_tiles.wgsl` and `ntc_decode_runs.wgsl`).
    pub fn workgroup_bytes(self, config: &NtcConfig, tile: TileSize) -> u64 {
        // Weights as f16 (or f16 pairs), plus the decoder loop's two words.
        let weights = config.decoder_param_count() as u64 * 2 + 8;
        let widest = config
            .hidden
            .iter()
            .map(|&w| w as usize)
            .chain([config.input_width(), OUTPUTS])
            .max()
            .unwrap_or(OUTPUTS) as u64;
        // The staged matrix kernels: per subgroup of 32 pixels `slices` f16 slices of the
        // widest layer (two: ping-pong; one: chained in place).
        let staging =
            |threads: u32, slices: u64| u64::from(threads.div_ceil(32)) * slices * 32 * widest * 2;
        match self {
            NtcKernel::F32 | NtcKernel::F16 | NtcKernel::Fma => weights,
            NtcKernel::CoopMatrix => {
                let rows = u64::from(tile.pixels().min(64));
                // f16 inputs and f32 products per row, plus the compaction counters.
                weights + rows * widest * (2 + 4) + 8
            }
            NtcKernel::Mma => weights + staging(tile.pixels(), 2) + 4,
            NtcKernel::Chain => staging(tile.pixels(), 1) + 12,
            // The run batch (three words) beside the weights or the staging.
            NtcKernel::SortedFma => weights + 12,
            NtcKernel::SortedMma => staging(RUN_THREADS_MMA, 2) + 16,
            NtcKernel::SortedChain => weights + staging(RUN_THREADS_CHAIN, 1) + 12,
        }
    }
}

/// Which stages of a pixel's decode a pass runs: all of them (rendering), or one alone
/// (`bench decode`'s stage costs; the cuts are defines of the decode shaders,
/// `common/ntc_pixel.wgsl`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecodeStage {
    /// The whole decode.
    #[default]
    All,
    /// Texel choice, latent fetch, dequantisation, positional encoding, features stored.
    Input,
    /// The MLP alone, on inputs already on chip.
    Mlp,
    /// Clamping, neutral channels, transforms, G-buffer reads and target writes.
    Output,
}

impl DecodeStage {
    /// The three single stages, in a pixel's order.
    pub const SINGLE: [DecodeStage; 3] =
        [DecodeStage::Input, DecodeStage::Mlp, DecodeStage::Output];

    /// `all`, `input`, `mlp` or `output`.
    pub fn name(self) -> &'static str {
        match self {
            DecodeStage::All => "all",
            DecodeStage::Input => "input",
            DecodeStage::Mlp => "mlp",
            DecodeStage::Output => "output",
        }
    }

    /// The define that cuts the decode to this stage (none for the whole decode).
    fn define(self) -> Option<&'static str> {
        match self {
            DecodeStage::All => None,
            DecodeStage::Input => Some("NTC_STAGE_INPUT"),
            DecodeStage::Mlp => Some("NTC_STAGE_MLP"),
            DecodeStage::Output => Some("NTC_STAGE_OUTPUT"),
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

/// WGSL `DecodeParams` (`shaders/ntc_decode_tiles.wgsl`): the pass's uniform.
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

/// The sort's buffers for one frame size and decoder count (`common/ntc_runs.wgsl`).
#[derive(Debug)]
struct SortBuffers {
    /// Frame size and decoders they were made for.
    key: ((u32, u32), usize),
    runs: wgpu::Buffer,
    slots: wgpu::Buffer,
    counts: wgpu::Buffer,
    cursors: wgpu::Buffer,
    dispatch: wgpu::Buffer,
}

/// The sorted kernels' sub-stages: count, scan and scatter (`ntc_sort.wgsl`), whose
/// buffers feed the decode of the runs, and their cached bind groups.
#[derive(Debug)]
struct SortStages {
    count: ComputeKernel,
    scan: ComputeKernel,
    scatter: ComputeKernel,
    /// The buffers of the last sorted frame's size and decoder count.
    buffers: Option<SortBuffers>,
    sort_group: CachedBindGroup,
    runs_group: CachedBindGroup,
}

/// The NTC decode pass.
#[derive(Debug)]
pub struct NtcDecodePass {
    kernel: NtcKernel,
    tile: TileSize,
    /// The per-tile decode, or the decode of the runs (sorted kernels).
    pipeline: ComputeKernel,
    sort: Option<SortStages>,
    params: wgpu::Buffer,
    bind_group: CachedBindGroup,
    ntc_bind_group: CachedBindGroup,
}

/// The sort's runs and slots as the GPU left them (tests compare them with
/// [`sorted_runs`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortedRuns {
    /// Per decoder, (first slot, pixels); then (total slots, 0).
    pub runs: Vec<[u32; 2]>,
    /// Per slot, the pixel as `y << 16 | x` (slots past a run's pixels: unspecified).
    pub slots: Vec<u32>,
}

/// The sort's runs on the CPU: per decoder, its first slot (counts rounded up to `align`,
/// prefix sum in decoder order) and pixel count, for the decoders of a frame's pixels
/// (`decoder_of_pixel`, [`crate::render::ntc_gpu::NO_DECODER`] for none); then (total
/// slots, 0). Decoders at or past `decoders` are ignored.
pub fn sorted_runs(decoder_of_pixel: &[u32], decoders: usize, align: u32) -> Vec<[u32; 2]> {
    let mut counts = vec![0u32; decoders];
    for &d in decoder_of_pixel {
        if let Some(c) = counts.get_mut(d as usize) {
            *c += 1;
        }
    }
    let mut start = 0u32;
    let mut runs: Vec<[u32; 2]> = counts
        .iter()
        .map(|&c| {
            let run = [start, c];
            start += c.div_ceil(align) * align;
            run
        })
        .collect();
    runs.push([start, 0]);
    runs
}

/// The group-0 slots of every decode stage (`common/ntc_pixel.wgsl`: blue noise and the
/// decode parameters at 6 and 7).
const GROUP0: [Slot; 11] = super::material_pass_slots(Slot::FloatTexture, Slot::Uniform);

impl NtcDecodePass {
    /// Label of the pass (of the decode stage of the sorted kernels), its timing row and
    /// its wgpu objects.
    pub const LABEL: &'static str = "ntc.decode";
    /// Labels of the sorted kernels' sort stages, in order (each its own timed pass).
    pub const SORT_LABELS: [&'static str; 3] =
        ["ntc.sort.count", "ntc.sort.scan", "ntc.sort.scatter"];

    /// Whether `label` is a timing row of this pass (the decode or a sort stage).
    pub fn is_stage_label(label: &str) -> bool {
        label == Self::LABEL || Self::SORT_LABELS.contains(&label)
    }

    /// Build the pipelines for decoders of shape `config`, evaluated with `kernel`, one
    /// workgroup per `tile` (the sorted kernels sort in 8×8 tiles whatever `tile`). A
    /// kernel the device or the model cannot run is an error that says why, listing every
    /// missing feature (pick another, e.g. [`NtcKernel::best`]); so is a shader-compiler
    /// panic while building a pipeline ([`NtcRenderError::KernelUnavailable`]).
    pub fn new(
        ctx: &GpuContext,
        config: &NtcConfig,
        kernel: NtcKernel,
        tile: TileSize,
    ) -> Result<Self, NtcRenderError> {
        Self::with_stage(ctx, config, kernel, tile, DecodeStage::All)
    }

    /// [`NtcDecodePass::new`] running only `stage` of every pixel's decode (the others
    /// cut; its targets then hold nothing meaningful): what `bench decode` times stage by
    /// stage.
    pub fn with_stage(
        ctx: &GpuContext,
        config: &NtcConfig,
        kernel: NtcKernel,
        tile: TileSize,
        stage: DecodeStage,
    ) -> Result<Self, NtcRenderError> {
        Self::check(ctx, config, kernel, tile)?;
        let unavailable = |reason: String| NtcRenderError::KernelUnavailable {
            kernel: kernel.to_string(),
            reason,
        };
        let device = &ctx.device;
        let group0 = group_layout(device, Self::LABEL, &GROUP0);
        let group1 = group_layout(device, "ntc", &NtcSceneGpu::GROUP);
        let build = |label: &str,
                     shader: &str,
                     entry: &str,
                     defines: &Defines,
                     group2: Option<&wgpu::BindGroupLayout>| {
            let mut groups = vec![Group::Layout(&group0), Group::Layout(&group1)];
            groups.extend(group2.map(Group::Layout));
            // A compiler panic must not take the process down: it makes the kernel
            // unavailable (the renderer then falls back to another one).
            ComputeKernel::new(
                ctx,
                &KernelDesc {
                    label,
                    shader,
                    defines,
                    entry,
                    groups: &groups,
                },
            )
            .map_err(|e| match e {
                KernelError::Shader(e) => NtcRenderError::Shader(e),
                e @ KernelError::Binding { .. } => NtcRenderError::Kernel(e),
                KernelError::CompilerPanic(failure) => unavailable(format!(
                    "the shader compiler panicked building {shader} with defines [{defines}]: {}",
                    failure.message
                )),
                KernelError::Pipeline(failure) => NtcRenderError::Gpu {
                    what: format!("creating the {kernel} decode pipeline ({label})"),
                    message: failure.message,
                },
            })
        };
        let mut defines = Self::defines(config, kernel, tile);
        if let Some(cut) = stage.define() {
            defines.set(cut, 1);
        }
        let (pipeline, sort) = if let Some(align) = kernel.run_align() {
            let rw = |b: u32| Slot::StorageRw.entry(b);
            let sort_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("ntc.sort"),
                entries: &[rw(1), rw(2), rw(3), rw(4), rw(5)],
            });
            let runs_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("ntc.runs"),
                entries: &[Slot::Storage.entry(1), Slot::Storage.entry(2)],
            });
            let sort_defines = Self::sort_defines(config, align);
            let [count, scan, scatter] = Self::SORT_LABELS;
            let count = build(
                count,
                "ntc_sort.wgsl",
                "count",
                &sort_defines,
                Some(&sort_layout),
            )?;
            let scan = build(
                scan,
                "ntc_sort.wgsl",
                "scan",
                &sort_defines,
                Some(&sort_layout),
            )?;
            let scatter = build(
                scatter,
                "ntc_sort.wgsl",
                "scatter",
                &sort_defines,
                Some(&sort_layout),
            )?;
            let decode = build(
                Self::LABEL,
                "ntc_decode_runs.wgsl",
                "decode_runs",
                &defines,
                Some(&runs_layout),
            )?;
            let stages = SortStages {
                count,
                scan,
                scatter,
                buffers: None,
                sort_group: CachedBindGroup::new(),
                runs_group: CachedBindGroup::new(),
            };
            (decode, Some(stages))
        } else {
            let decode = build(
                Self::LABEL,
                "ntc_decode_tiles.wgsl",
                "decode",
                &defines,
                None,
            )?;
            (decode, None)
        };
        let params = crate::gpu::layout::uniform_buffer::<DecodeParams>(device, Self::LABEL);
        Ok(Self {
            kernel,
            tile,
            pipeline,
            sort,
            params,
            bind_group: CachedBindGroup::new(),
            ntc_bind_group: CachedBindGroup::new(),
        })
    }

    /// Whether `kernel` can run decoders of shape `config` with `tile` on this device:
    /// features (all missing ones named), matrix configuration and subgroup size, layer
    /// widths, workgroup memory and threads.
    fn check(
        ctx: &GpuContext,
        config: &NtcConfig,
        kernel: NtcKernel,
        tile: TileSize,
    ) -> Result<(), NtcRenderError> {
        let unavailable = |reason: String| NtcRenderError::KernelUnavailable {
            kernel: kernel.to_string(),
            reason,
        };
        if let Some(reason) = kernel.lacking(ctx) {
            return Err(unavailable(reason));
        }
        if kernel == NtcKernel::CoopMatrix
            && let Some(w) = config.hidden.iter().find(|w| *w % 16 != 0)
        {
            return Err(unavailable(format!(
                "hidden width {w} is not a multiple of 16"
            )));
        }
        if let Some(reason) = kernel.misfit_width(config) {
            return Err(unavailable(reason));
        }
        if kernel.uses_matrices() {
            let accumulator = if kernel == NtcKernel::CoopMatrix {
                wgpu::CooperativeScalarType::F32
            } else {
                wgpu::CooperativeScalarType::F16
            };
            let has_config = ctx.adapter.cooperative_matrix_properties().iter().any(|p| {
                (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
                    && p.ab_type == wgpu::CooperativeScalarType::F16
                    && p.cr_type == accumulator
            });
            if !has_config {
                return Err(unavailable(format!(
                    "the adapter offers no 16×16×16 f16 × f16 → {accumulator:?} matrix \
                     configuration"
                )));
            }
            let info = ctx.adapter.get_info();
            if kernel != NtcKernel::CoopMatrix
                && (info.subgroup_min_size, info.subgroup_max_size) != (32, 32)
            {
                return Err(unavailable(format!(
                    "it needs subgroups of exactly 32 invocations, the adapter's are {}–{}",
                    info.subgroup_min_size, info.subgroup_max_size
                )));
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
        let threads = kernel.threads(tile);
        if threads > limits.max_compute_invocations_per_workgroup {
            return Err(unavailable(format!(
                "{threads} threads per workgroup, the device allows {}",
                limits.max_compute_invocations_per_workgroup
            )));
        }
        Ok(())
    }

    /// The defines the decode shader (`ntc_decode_tiles.wgsl`, or `ntc_decode_runs.wgsl` for the
    /// sorted kernels) is composed with for decoders of shape `config`, evaluated with
    /// `kernel`, one workgroup per `tile`.
    pub fn defines(config: &NtcConfig, kernel: NtcKernel, tile: TileSize) -> Defines {
        let layout = match kernel.run_align() {
            Some(align) => Self::run_defines(align),
            None => tile.defines(),
        };
        model_defines(config, kernel.threads(tile))
            .merged(&layout)
            .merged(&kernel.defines())
    }

    /// The defines of the sort (`ntc_sort.wgsl`) for decoders of shape `config`, making
    /// runs aligned to `align` slots (the sorted kernel's [`NtcKernel::run_align`]).
    pub fn sort_defines(config: &NtcConfig, align: u32) -> Defines {
        model_defines(config, SORT_TILE * SORT_TILE)
            .with("NTC_SORT_TILE", SORT_TILE)
            .merged(&Self::run_defines(align))
    }

    /// `NTC_RUN_ALIGN` (runs aligned to `align` slots) and `NTC_RUN_GRID_X`, the same in
    /// the sort and the decode.
    fn run_defines(align: u32) -> Defines {
        Defines::new()
            .with("NTC_RUN_ALIGN", align)
            .with("NTC_RUN_GRID_X", RUN_GRID_X)
    }

    /// The kernel the pipeline evaluates the MLP with.
    pub fn kernel(&self) -> NtcKernel {
        self.kernel
    }

    /// The tile (workgroup) shape.
    pub fn tile(&self) -> TileSize {
        self.tile
    }

    /// Floating-point operations of one decoded pixel's MLP (a multiply-add counts two).
    pub fn flops_per_pixel(config: &NtcConfig) -> f64 {
        config
            .layer_shapes()
            .iter()
            .map(|s| 2.0 * (s.inputs * s.outputs) as f64)
            .sum()
    }

    /// New sort buffers for a `size` frame and `decoders` decoders of `kernel`'s runs
    /// (zeroed: the counts start at zero). Sizes are checked against the sort's 16-bit
    /// pixel coordinates and the device's buffer limits first.
    fn sort_buffers(
        device: &wgpu::Device,
        kernel: NtcKernel,
        size: (u32, u32),
        decoders: usize,
    ) -> Result<SortBuffers, NtcRenderError> {
        if size.0 > MAX_SORTED_SIDE || size.1 > MAX_SORTED_SIDE {
            return Err(NtcRenderError::FrameTooLarge {
                kernel: kernel.to_string(),
                width: size.0,
                height: size.1,
                limit: MAX_SORTED_SIDE,
            });
        }
        // An empty package still gets one (empty) run, so that no binding is empty.
        let n = decoders.max(1) as u64;
        let limits = device.limits();
        let limit = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let pixels = u64::from(size.0) * u64::from(size.1);
        let padding = kernel.run_align().map_or(0, |a| a - 1);
        let slot_bytes = 4 * (pixels + n * u64::from(padding));
        for (what, bytes) in [
            ("the sorted decode's slots", slot_bytes),
            ("the sorted decode's runs", 8 * (n + 1)),
        ] {
            if bytes > limit {
                return Err(NtcRenderError::TooLarge {
                    what: what.to_owned(),
                    bytes,
                    limit,
                });
            }
        }
        let storage = |label: &str, bytes: u64, extra: wgpu::BufferUsages| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage: wgpu::BufferUsages::STORAGE | extra,
                mapped_at_creation: false,
            })
        };
        let readable = wgpu::BufferUsages::COPY_SRC;
        Ok(crate::gpu::allocate(
            device,
            "the sorted decode's buffers",
            || {
                let buffers = SortBuffers {
                    key: (size, decoders),
                    runs: storage("ntc.sort.runs", 8 * (n + 1), readable),
                    slots: storage("ntc.sort.slots", slot_bytes, readable),
                    counts: storage("ntc.sort.counts", 4 * n, wgpu::BufferUsages::empty()),
                    cursors: storage("ntc.sort.cursors", 4 * n, wgpu::BufferUsages::empty()),
                    dispatch: storage("ntc.sort.dispatch", 4 * 3, wgpu::BufferUsages::INDIRECT),
                };
                (buffers, slot_bytes + 8 * (n + 1) + 8 * n + 4 * 3)
            },
        )?)
    }

    /// The runs and slots of the last sorted frame (submitted and finished), read back;
    /// `None` for a per-tile kernel or before the first frame.
    pub fn read_sorted_runs(&self, ctx: &GpuContext) -> Result<Option<SortedRuns>, GpuError> {
        let Some(stages) = &self.sort else {
            return Ok(None);
        };
        let Some(b) = stages.buffers.as_ref() else {
            return Ok(None);
        };
        let runs = read_buffer(ctx, &b.runs, 0..b.runs.size())?;
        let slots = read_buffer(ctx, &b.slots, 0..b.slots.size())?;
        Ok(Some(SortedRuns {
            runs: bytemuck::pod_collect_to_vec(&runs),
            slots: bytemuck::pod_collect_to_vec(&slots),
        }))
    }

    /// Record the decode of `inputs` into `targets` (of the G-buffer's size). Sorted
    /// kernels record four timed passes (`ntc.sort.count`, `ntc.sort.scan`,
    /// `ntc.sort.scatter`, `ntc.decode`); a frame they cannot sort (over 65 535 pixels
    /// per axis, sort buffers over the device's limits or out of memory) is an error and
    /// records nothing.
    pub fn record(
        &mut self,
        frame: &mut FrameEncoder<'_>,
        inputs: &DecodeInputs<'_>,
        targets: &MaterialTargets,
    ) -> Result<(), NtcRenderError> {
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
        let size = g.material.size();
        frame.queue().write_buffer(
            &self.params,
            0,
            bytemuck::bytes_of(&DecodeParams::new(inputs.settings)),
        );
        let Some(stages) = &mut self.sort else {
            let groups = [&bind_group, &ntc_bind_group];
            self.pipeline.dispatch(frame, &groups, self.tile.grid(size));
            return Ok(());
        };
        let key = (size, inputs.package.decoder_count());
        if stages.buffers.as_ref().is_none_or(|b| b.key != key) {
            stages.buffers = Some(Self::sort_buffers(
                frame.device(),
                self.kernel,
                key.0,
                key.1,
            )?);
        }
        let b = stages.buffers.as_ref().expect("made above");
        let sort_entries = [
            (1, b.runs.as_entire_binding()),
            (2, b.slots.as_entire_binding()),
            (3, b.counts.as_entire_binding()),
            (4, b.cursors.as_entire_binding()),
            (5, b.dispatch.as_entire_binding()),
        ];
        let sort_group = stages.sort_group.get(
            frame.device(),
            "ntc.sort",
            stages.count.layout(2),
            &sort_entries,
        );
        // The decode reads what the sort wrote: its first two bindings, the runs and slots.
        let runs_group = stages.runs_group.get(
            frame.device(),
            "ntc.runs",
            self.pipeline.layout(2),
            &sort_entries[..2],
        );
        let tiles = (size.0.div_ceil(SORT_TILE), size.1.div_ceil(SORT_TILE));
        for (kernel, grid) in [
            (&stages.count, tiles),
            (&stages.scan, (1, 1)),
            (&stages.scatter, tiles),
        ] {
            kernel.dispatch(frame, &[&bind_group, &ntc_bind_group, &sort_group], grid);
        }
        frame.compute_pass(Self::LABEL, |pass| {
            pass.set_pipeline(self.pipeline.pipeline());
            pass.set_bind_group(0, &bind_group, &[]);
            pass.set_bind_group(1, &ntc_bind_group, &[]);
            pass.set_bind_group(2, &runs_group, &[]);
            pass.dispatch_workgroups_indirect(&b.dispatch, 0);
        });
        Ok(())
    }
}
