//! The trainer's kernels: which trainer runs ([`TrainKernel`]), the compiled pipelines
//! and their defines, and the workgroup shapes the adapter allows (the f32 trainer's
//! tile-limited workgroup, the mixed-precision trainer's [`Chunk`]).

use serde::{Deserialize, Serialize};

use super::GpuTrainError;
use super::{GRAD_SCALE_DECODER, GRAD_SCALE_LATENTS};
use crate::gpu::kernel::{ComputeKernel, Group, KernelDesc, KernelError};
use crate::gpu::{Defines, GpuContext};
use crate::ntc::model::{Activation, LEAKY_SLOPE, MAX_HIDDEN_LAYERS, NtcConfig, OUTPUTS};

/// Largest workgroup of `forward_backward` and `evaluate`.
pub(super) const MAX_WORKGROUP: u32 = 64;

/// Workgroup size of `sample` (`SAMPLE_WORKGROUP` in `sample.wgsl`).
pub(super) const SAMPLE_WORKGROUP: u32 = 256;

/// Workgroup size of `adam` (`ADAM_WORKGROUP` in `adam.wgsl`).
pub(super) const ADAM_WORKGROUP: u32 = 256;

/// Decoder parameters per workgroup of the mixed-precision `adam` (`DECODER_PER_GROUP`
/// in `adam.wgsl`), each summed by `ADAM_WORKGROUP / DECODER_PER_GROUP` lanes.
pub(super) const ADAM_DECODER_PER_GROUP: u32 = 32;

/// Workgroups of one `evaluate` dispatch (each thread loops over the mip).
pub(super) const EVAL_WORKGROUPS: u32 = 4096;

/// Candidate threads of a `train_step` workgroup (`TRAIN_THREADS` in `train_step.wgsl`),
/// largest first: the trainer takes the first the device allows. 512 are sixteen
/// subgroups of 32 on NVIDIA GPUs, each running its share of the matrix products (one
/// 16×16 output tile at a time: 12 tiles for a 64-wide layer over 48 rows) and of the
/// per-element phases between them. Measured on an H200 (1024² set, batch 65 536,
/// `coop-matrix`, chunks of 64 computed 16 columns at a time): 103.9 M texels/s with 512
/// threads, 93.3 M with 256 and 70.7 M with 128, to the same final loss; with whole-layer
/// products, 512 threads over 48 rows 103 M, 256 over 48 90.1 M, 512 over 32 99.4 M.
/// With the timed workgroup plans (H100, docs/RESULTS.md): 512 threads 138.2 M, 1 024
/// 134.0 M, 256 118.3 M, each at its fastest plan of 125 workgroups.
pub const TRAIN_THREADS: [u32; 3] = [512, 256, 128];

/// Candidate sample rows per `train_step` chunk (`TRAIN_ROWS`), largest first: the trainer
/// takes the first whose workgroup memory fits the adapter ([`mixed_workgroup_bytes`]).
/// Fewer rows let more workgroups share a compute unit but cost more per sample: with the
/// timed workgroup plans (H100, docs/RESULTS.md), 48 rows 138.5 M texels/s (125
/// workgroups), 32 rows 122–124 M (128 or 256), 16 rows 113.6 M (256).
pub const TRAIN_ROWS: [u32; 4] = [64, 48, 32, 16];

/// Most `train_step` workgroups per step: each owns a slice of `decoder_count` floats of
/// decoder gradients that Adam sums, so this bounds that buffer and that sum; a larger
/// batch gives each workgroup more chunks instead.
pub const MAX_TRAIN_WORKGROUPS: u32 = 512;

/// The mixed-precision trainer stores δ in f16 as `DELTA_SCALE` times the per-sample
/// gradient `2 w (y − t)` (`DELTA_SCALE` in `train_step.wgsl` and `adam.wgsl`). The batch
/// mean, which the f32 trainer accumulates, is 1/65536 of that at the usual batch and
/// would fall below f16's normal range (6.1e-5) for errors under about 1 %; the per-sample
/// gradient of an error of half an 8-bit step at the smallest loss weight (0.35) is
/// 1.4e-3, and the scale of 16 lifts that to 2.2e-2, while the largest, 2 · 2 · 1 · 16 =
/// 64, leaves a factor of 1000 below f16's maximum for the growth through the layers.
pub const DELTA_SCALE: f32 = 16.0;

/// Which kernels train: the f32 reference trainer or the mixed-precision one (f16
/// operands and f32 accumulation, with or without cooperative matrices). All follow the
/// same recipe and draw the same batches; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[derive(clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum TrainKernel {
    /// One thread per sample in f32 (`forward_backward`, `reduce_loss`, `adam`): the
    /// reference, needs nothing optional.
    F32,
    /// `train_step` with f16 operands widened to f32 and summed in f32, one thread per
    /// product element, then the mixed `adam`: needs `SHADER_F16`. Slower than `f32`
    /// (see [`TrainKernel::best`]); it runs the mixed-precision step where cooperative
    /// matrices are missing, e.g. to test it on lavapipe.
    F16,
    /// `train_step` with 16×16×16 f16 cooperative matrices and f32 accumulators: needs
    /// `EXPERIMENTAL_COOPERATIVE_MATRIX` (with a 16×16×16 f16 → f32 configuration),
    /// `SHADER_F16`, `SUBGROUP` and hidden widths that are multiples of 16.
    #[value(name = "coop-matrix")]
    #[serde(rename = "coop-matrix")]
    CoopMatrix,
}

impl TrainKernel {
    /// Every kernel.
    pub const ALL: [TrainKernel; 3] = [TrainKernel::F32, TrainKernel::F16, TrainKernel::CoopMatrix];

    /// `f32`, `f16` or `coop-matrix`.
    pub fn name(self) -> &'static str {
        match self {
            TrainKernel::F32 => "f32",
            TrainKernel::F16 => "f16",
            TrainKernel::CoopMatrix => "coop-matrix",
        }
    }

    /// Why `ctx` cannot train a model of shape `config` with this kernel, or `None` when
    /// it can.
    pub fn unavailable(self, ctx: &GpuContext, config: &NtcConfig) -> Option<String> {
        let granted = &ctx.granted;
        let limits = ctx.device.limits();
        if self == TrainKernel::F32 {
            return pick_workgroup(config, &limits, MAX_WORKGROUP)
                .err()
                .map(|e| e.to_string());
        }
        let mut needs = vec![("shader_f16", granted.shader_f16)];
        if self == TrainKernel::CoopMatrix {
            needs.extend([
                ("cooperative_matrix", granted.cooperative_matrix),
                ("subgroup", granted.subgroup),
            ]);
        }
        if let Some((feature, _)) = needs.iter().find(|(_, has)| !has) {
            return Some(format!("the device lacks `{feature}` (granted: {granted})"));
        }
        if self == TrainKernel::CoopMatrix {
            if let Some(w) = config.hidden.iter().find(|w| !w.is_multiple_of(16)) {
                return Some(format!("hidden width {w} is not a multiple of 16"));
            }
            let has_config = ctx.adapter.cooperative_matrix_properties().iter().any(|p| {
                (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
                    && p.ab_type == wgpu::CooperativeScalarType::F16
                    && p.cr_type == wgpu::CooperativeScalarType::F32
            });
            if !has_config {
                return Some(
                    "the adapter offers no 16×16×16 f16 × f16 → f32 matrix configuration".into(),
                );
            }
        }
        pick_chunk(config, self, &limits)
            .err()
            .map(|e| e.to_string())
    }

    /// The fastest kernel `ctx` can train `config` with: `coop-matrix` where it runs,
    /// else `f32`. `f16` is never the default: measured slower than `f32` everywhere
    /// (NVIDIA H200, 1024² set, batch 65536: 9.7e6 against 3.3e7 texels/s; lavapipe on
    /// 2 cores, 64², batch 1024: 2.7e3 against 1.7e4), since without matrix units its
    /// products run one thread per output element between many workgroup barriers; it
    /// exists to test the mixed-precision step on adapters without cooperative matrices.
    pub fn best(ctx: &GpuContext, config: &NtcConfig) -> TrainKernel {
        if TrainKernel::CoopMatrix.unavailable(ctx, config).is_none() {
            TrainKernel::CoopMatrix
        } else {
            TrainKernel::F32
        }
    }
}

impl std::fmt::Display for TrainKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The compiled kernels and their shared bind-group layout.
pub(super) struct Kernels {
    pub(super) layout: wgpu::BindGroupLayout,
    /// Which kernels train.
    pub(super) kernel: TrainKernel,
    pub(super) sample: wgpu::ComputePipeline,
    pub(super) evaluate: wgpu::ComputePipeline,
    pub(super) adam: wgpu::ComputePipeline,
    /// [`LatentAdam::Lazy`](super::LatentAdam::Lazy): its kernels (`None` for dense).
    pub(super) lazy: Option<LazyKernels>,
    /// The per-step kernels before Adam.
    pub(super) step: StepKernels,
    /// Workgroup size of `evaluate` (and of `forward_backward`).
    pub(super) workgroup: u32,
    /// Gradients are fixed-point `atomic<i32>`.
    pub(super) fixed_point: bool,
}

/// The kernels of lazy latent Adam (`adam.wgsl` with `LAZY_LATENTS`).
pub(super) struct LazyKernels {
    /// Adam updating only the latent texels the step's `catch_up` listed.
    pub(super) adam: wgpu::ComputePipeline,
    /// Lists the latent texels a step's batch reads, with the step each is current at.
    pub(super) catch_up: wgpu::ComputePipeline,
    /// Brings the listed texels up to the step, one thread per value.
    pub(super) replay: wgpu::ComputePipeline,
    /// Brings every latent texel up to a step.
    pub(super) catch_up_all: wgpu::ComputePipeline,
}

/// The kernels of a step before Adam.
pub(super) enum StepKernels {
    /// The f32 trainer: `sample`, `forward_backward`, `reduce_loss`.
    F32 {
        forward_backward: wgpu::ComputePipeline,
        reduce_loss: wgpu::ComputePipeline,
    },
    /// The mixed-precision trainer: `train_step` over chunks of `rows` samples.
    Mixed {
        train_step: wgpu::ComputePipeline,
        rows: u32,
    },
}

impl Kernels {
    pub(super) const LABEL: &'static str = "ntc.train";

    /// The pipelines of `kernel` for a model of shape `config` over the bind-group
    /// `layout`, the f32 kernels with workgroups of `workgroup`.
    pub(super) fn new(
        ctx: &GpuContext,
        layout: wgpu::BindGroupLayout,
        config: &NtcConfig,
        kernel: TrainKernel,
        workgroup: u32,
        fixed_point: bool,
        lazy: bool,
    ) -> Result<Self, GpuTrainError> {
        let f32_defines = shader_defines(config, workgroup, fixed_point);
        let chunk = match kernel {
            TrainKernel::F32 => None,
            _ => Some(pick_chunk(config, kernel, &ctx.device.limits())?),
        };
        let rows = chunk.map(|c| c.rows);
        let mixed_defines = chunk.map(|c| mixed_defines(config, kernel, c, fixed_point));
        let pipeline = |shader: &str,
                        entry: &str,
                        defines: &Defines|
         -> Result<wgpu::ComputePipeline, GpuTrainError> {
            let built = ComputeKernel::new(
                ctx,
                &KernelDesc {
                    label: entry,
                    shader,
                    defines,
                    entry,
                    groups: &[Group::Layout(&layout)],
                },
            );
            match built {
                Ok(k) => Ok(k.pipeline().clone()),
                // A compiler panic on a mixed kernel names the kernel choice, whose
                // remedy is another `--train-kernel`.
                Err(KernelError::CompilerPanic(failure)) if kernel != TrainKernel::F32 => {
                    Err(GpuTrainError::KernelUnavailable {
                        kernel,
                        reason: format!(
                            "the shader compiler panicked on `{entry}` (a wgpu/naga bug): {}",
                            failure.message
                        ),
                    })
                }
                Err(e) => Err(e.into()),
            }
        };
        let step = match (rows, &mixed_defines) {
            (Some(rows), Some(defines)) => StepKernels::Mixed {
                train_step: pipeline("ntc/train_step.wgsl", "train_step", defines)?,
                rows,
            },
            _ => StepKernels::F32 {
                forward_backward: pipeline(
                    "ntc/forward_backward.wgsl",
                    "forward_backward",
                    &f32_defines,
                )?,
                reduce_loss: pipeline("ntc/loss.wgsl", "reduce_loss", &f32_defines)?,
            },
        };
        let adam_defines = mixed_defines.as_ref().unwrap_or(&f32_defines);
        let adam = pipeline("ntc/adam.wgsl", "adam", adam_defines)?;
        let lazy = if lazy {
            let defines = adam_defines.clone().flag("LAZY_LATENTS");
            Some(LazyKernels {
                adam: pipeline("ntc/adam.wgsl", "adam", &defines)?,
                catch_up: pipeline("ntc/adam.wgsl", "catch_up", &defines)?,
                replay: pipeline("ntc/adam.wgsl", "replay", &defines)?,
                catch_up_all: pipeline("ntc/adam.wgsl", "catch_up_all", &defines)?,
            })
        } else {
            None
        };
        Ok(Kernels {
            lazy,
            sample: pipeline("ntc/sample.wgsl", "sample", &f32_defines)?,
            evaluate: pipeline("ntc/forward_backward.wgsl", "evaluate", &f32_defines)?,
            adam,
            step,
            kernel,
            layout,
            workgroup,
            fixed_point,
        })
    }

    /// Sample rows per `train_step` chunk (mixed-precision trainer only).
    pub(super) fn rows(&self) -> Option<u32> {
        match self.step {
            StepKernels::F32 { .. } => None,
            StepKernels::Mixed { rows, .. } => Some(rows),
        }
    }
}

/// The defines every training shader is composed with (documented in
/// `shaders/common/ntc_mlp.wgsl` and `ntc_train.wgsl`).
pub(super) fn shader_defines(config: &NtcConfig, workgroup: u32, fixed_point: bool) -> Defines {
    let mut defines = Defines::new()
        .with("WORKGROUP_SIZE", workgroup)
        .with("NTC_FEATURES", config.features)
        .with("NTC_PE_WAVES", config.pe_waves)
        .with("NTC_INPUT_WIDTH", config.input_width())
        .with("NTC_LAYERS", config.hidden.len() + 1)
        .with("NTC_LEAKY_SLOPE", format!("{LEAKY_SLOPE:?}"))
        .flag("NTC_TRAINING")
        .with("GRAD_SCALE_DECODER", format!("{GRAD_SCALE_DECODER:?}"))
        .with("GRAD_SCALE_LATENTS", format!("{GRAD_SCALE_LATENTS:?}"));
    for layer in 0..MAX_HIDDEN_LAYERS {
        let width = config.hidden.get(layer).copied().unwrap_or(0);
        defines.set(&format!("NTC_HIDDEN_{layer}"), width);
    }
    if config.activation == Activation::LeakyRelu {
        defines.set("NTC_LEAKY_RELU", 1);
    }
    if fixed_point {
        defines.set("FIXED_POINT_GRADIENTS", 1);
    }
    defines
}

/// The defines of the mixed-precision trainer's kernels (`train_step.wgsl`, `adam.wgsl`
/// with `NTC_MIXED`): the model's, the chunk size, the threads, the δ scale and, for
/// [`TrainKernel::CoopMatrix`], `TRAIN_COOP`.
pub(super) fn mixed_defines(
    config: &NtcConfig,
    kernel: TrainKernel,
    chunk: Chunk,
    fixed_point: bool,
) -> Defines {
    let defines = shader_defines(config, MAX_WORKGROUP, fixed_point)
        .flag("NTC_MIXED")
        .with("TRAIN_ROWS", chunk.rows)
        .with("TRAIN_THREADS", chunk.threads)
        .with("DELTA_SCALE", format!("{DELTA_SCALE:?}"));
    if kernel == TrainKernel::CoopMatrix {
        defines.flag("TRAIN_COOP")
    } else {
        defines
    }
}

/// Bytes of workgroup memory `train_step` of `kernel` (`f16` or `coop-matrix`) needs with
/// chunks of `rows` samples and `threads` threads: the f16 activations (`rows × (input + 2
/// · Σ hidden + 16)`), the f32 stage (`rows ×` `stage_columns`), the rows' samples (8
/// bytes each), the first-chunk flag, the f32 scratch of the loss sums (one per thread) and
/// the bias sums (a layer's outputs in whole 16-blocks, 16 floats each with cooperative
/// matrices, which also need a 16×16 f16 tile of ones).
pub fn mixed_workgroup_bytes(
    config: &NtcConfig,
    kernel: TrainKernel,
    rows: u32,
    threads: u32,
) -> u32 {
    let hidden: u32 = config.hidden.iter().sum();
    let halves = config.input_width() as u32 + 2 * hidden + OUTPUTS as u32;
    let coop = kernel == TrainKernel::CoopMatrix;
    let widest = config
        .hidden
        .iter()
        .copied()
        .max()
        .unwrap_or(0)
        .max(OUTPUTS as u32);
    let bias_floats = widest.next_multiple_of(16) * if coop { 16 } else { 1 };
    let ones = if coop { 2 * 16 * 16 } else { 0 };
    rows * (2 * halves + 4 * stage_columns(config) + 8) + 4 + 4 * threads.max(bias_floats) + ones
}

/// Columns of `train_step`'s f32 stage (`STAGE_COLS`): its widest product, a layer's
/// outputs or the latent inputs' δ, in whole 16-column blocks.
fn stage_columns(config: &NtcConfig) -> u32 {
    let widest = config.hidden.iter().copied().max().unwrap_or(0);
    (widest.next_multiple_of(16))
        .max(OUTPUTS as u32)
        .max((2 * config.features).next_multiple_of(16))
}

/// The shape of a `train_step` workgroup: sample rows per chunk and threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Sample rows per chunk (one of [`TRAIN_ROWS`]).
    pub rows: u32,
    /// Threads per workgroup (one of [`TRAIN_THREADS`]).
    pub threads: u32,
}

/// The largest of [`TRAIN_THREADS`] the device allows, then the largest of
/// [`TRAIN_ROWS`] whose `train_step` fits its workgroup memory with them.
pub(super) fn pick_chunk(
    config: &NtcConfig,
    kernel: TrainKernel,
    limits: &wgpu::Limits,
) -> Result<Chunk, GpuTrainError> {
    let threads = TRAIN_THREADS
        .into_iter()
        .find(|&t| t <= limits.max_compute_invocations_per_workgroup)
        .ok_or(GpuTrainError::Limit {
            what: "the mixed-precision trainer's threads per workgroup",
            needed: u64::from(TRAIN_THREADS[TRAIN_THREADS.len() - 1]),
            limit: u64::from(limits.max_compute_invocations_per_workgroup),
        })?;
    let limit = limits.max_compute_workgroup_storage_size;
    TRAIN_ROWS
        .into_iter()
        .find(|&rows| mixed_workgroup_bytes(config, kernel, rows, threads) <= limit)
        .map(|rows| Chunk { rows, threads })
        .ok_or(GpuTrainError::Limit {
            what: "the mixed-precision trainer's chunk (bytes of workgroup storage)",
            needed: u64::from(mixed_workgroup_bytes(config, kernel, 16, threads)),
            limit: u64::from(limit),
        })
}

/// Chunks per `train_step` workgroup and workgroups for a batch of `batch` samples in
/// chunks of `rows`: as many workgroups as chunks up to `cap` (clamped to
/// 1 ..= [`MAX_TRAIN_WORKGROUPS`]), then more chunks per workgroup.
pub(super) fn chunk_plan(batch: u32, rows: u32, cap: u32) -> (u32, u32) {
    let chunks = batch.div_ceil(rows).max(1);
    let per_group = chunks.div_ceil(cap.clamp(1, MAX_TRAIN_WORKGROUPS));
    (per_group, chunks.div_ceil(per_group))
}

/// Workgroup caps the timed choice of [`TrainWorkgroups::Timed`](super::TrainWorkgroups)
/// tries, largest first. A GPU runs as many `train_step` workgroups at once as its
/// compute units hold (one per unit where the kernel's registers fill it); a step is
/// fastest when its workgroups fit that in one wave, and a plan just above it runs a
/// second wave, so the caps step finely through the counts GPUs have.
const TIMED_CAPS: [u32; 14] = [
    512, 448, 384, 320, 256, 224, 192, 160, 144, 128, 112, 96, 80, 64,
];

/// The distinct plans ([`chunk_plan`]) of [`TIMED_CAPS`] for a batch of `batch` samples in
/// chunks of `rows`, most workgroups first, each in the form its own workgroup count makes
/// as the cap (a plan's count as the cap can give fewer chunks per workgroup; the second
/// application of [`chunk_plan`] is a fixed point), so that timing a plan with its
/// workgroups as the cap runs exactly that plan.
pub(super) fn timed_plans(batch: u32, rows: u32) -> Vec<(u32, u32)> {
    let mut plans: Vec<(u32, u32)> = TIMED_CAPS
        .iter()
        .map(|&cap| chunk_plan(batch, rows, chunk_plan(batch, rows, cap).1))
        .collect();
    plans.dedup();
    plans
}

/// Bytes of workgroup memory `forward_backward` needs per thread: one row of each tile
/// (`IN_STRIDE` and `OUT_STRIDE` floats in `forward_backward.wgsl`: the widest layer
/// input and output, plus one each).
pub(super) fn tile_bytes_per_thread(config: &NtcConfig) -> u32 {
    let widest_hidden = config.hidden.iter().copied().max().unwrap_or(0);
    let tile_in = (config.input_width() as u32).max(widest_hidden);
    let tile_out = widest_hidden.max(OUTPUTS as u32);
    4 * (tile_in + 1 + tile_out + 1)
}

/// The largest power-of-two workgroup ≤ `max` whose tiles fit the adapter.
pub(super) fn pick_workgroup(
    config: &NtcConfig,
    limits: &wgpu::Limits,
    max: u32,
) -> Result<u32, GpuTrainError> {
    let per_thread = tile_bytes_per_thread(config);
    let cap = max
        .clamp(1, MAX_WORKGROUP)
        .min(limits.max_compute_invocations_per_workgroup)
        .min(limits.max_compute_workgroup_size_x)
        .max(1);
    let mut workgroup = 1u32 << (31 - cap.leading_zeros());
    while workgroup > 1 && workgroup * per_thread > limits.max_compute_workgroup_storage_size {
        workgroup /= 2;
    }
    if workgroup * per_thread > limits.max_compute_workgroup_storage_size {
        return Err(GpuTrainError::Limit {
            what: "the decoder's backward tiles (bytes of workgroup storage)",
            needed: u64::from(per_thread),
            limit: u64::from(limits.max_compute_workgroup_storage_size),
        });
    }
    Ok(workgroup)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader::ShaderLibrary;
    use crate::ntc::train::gpu::layout::{MipEntry, StepParams};

    /// A training shader composed with `config`'s defines, as the trainer composes it.
    fn module(path: &str, config: &NtcConfig, workgroup: u32) -> naga::Module {
        let defines = shader_defines(config, workgroup, false);
        ShaderLibrary::embedded()
            .validate(path, &defines)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The bytes of workgroup memory `m` declares.
    fn workgroup_bytes(m: &naga::Module) -> u32 {
        m.global_variables
            .iter()
            .filter(|(_, g)| g.space == naga::AddressSpace::WorkGroup)
            .map(|(_, g)| m.types[g.ty].inner.size(m.to_ctx()))
            .sum()
    }

    #[test]
    fn host_structs_match_the_wgsl_structs() {
        let config = NtcConfig::default();
        let m = module("ntc/adam.wgsl", &config, 32);
        crate::gpu::mirror::assert_mirrors::<StepParams>(&m, "StepParams");
        crate::gpu::mirror::assert_mirrors::<MipEntry>(&m, "MipEntry");
        assert!(
            std::mem::size_of::<StepParams>() <= 256,
            "fits one dynamic-offset slot"
        );
        // Lazy latent Adam's lists, sized by the host, filled and read by the kernels.
        let lazy = ShaderLibrary::embedded()
            .validate(
                "ntc/adam.wgsl",
                &shader_defines(&config, 32, false).flag("LAZY_LATENTS"),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        crate::gpu::mirror::assert_const(&lazy, "LIST_TAPS", super::super::TAPS_PER_SAMPLE as u32);
        crate::gpu::mirror::assert_const(
            &lazy,
            "LIST_ENTRY",
            super::super::layout::LIST_ENTRY_WORDS as u32,
        );
    }

    #[test]
    fn workgroup_sizes_and_tiles_match_the_wgsl() {
        let workgroup_of = |m: &naga::Module, entry: &str| {
            m.entry_points
                .iter()
                .find(|e| e.name == entry)
                .map(|e| e.workgroup_size[0])
                .unwrap_or_else(|| panic!("no entry point {entry}"))
        };
        let config = NtcConfig::default();
        assert_eq!(
            workgroup_of(&module("ntc/sample.wgsl", &config, 32), "sample"),
            SAMPLE_WORKGROUP
        );
        assert_eq!(
            workgroup_of(&module("ntc/adam.wgsl", &config, 32), "adam"),
            ADAM_WORKGROUP
        );
        for config in [
            config,
            NtcConfig {
                features: 8,
                hidden: vec![32, 128, 16],
                pe_waves: 5,
                ..NtcConfig::default()
            },
        ] {
            for workgroup in [16, 64] {
                let m = module("ntc/forward_backward.wgsl", &config, workgroup);
                assert_eq!(workgroup_of(&m, "forward_backward"), workgroup);
                assert_eq!(workgroup_of(&m, "evaluate"), workgroup);
                assert_eq!(
                    workgroup_bytes(&m),
                    workgroup * tile_bytes_per_thread(&config)
                );
            }
        }
    }

    #[test]
    fn train_step_memory_and_threads_match_the_host() {
        let default = NtcConfig::default();
        let narrow = NtcConfig {
            features: 8,
            hidden: vec![32, 16, 48],
            pe_waves: 5,
            ..NtcConfig::default()
        };
        for config in [default.clone(), narrow] {
            for kernel in [TrainKernel::F16, TrainKernel::CoopMatrix] {
                for (rows, threads) in [(16, 128), (64, 512)] {
                    let chunk = Chunk { rows, threads };
                    let defines = mixed_defines(&config, kernel, chunk, false);
                    let m = ShaderLibrary::embedded()
                        .validate("ntc/train_step.wgsl", &defines)
                        .unwrap_or_else(|e| panic!("{e}"));
                    let entry = m
                        .entry_points
                        .iter()
                        .find(|e| e.name == "train_step")
                        .expect("train_step");
                    assert_eq!(entry.workgroup_size[0], threads);
                    assert_eq!(
                        workgroup_bytes(&m),
                        mixed_workgroup_bytes(&config, kernel, rows, threads),
                        "{kernel} {rows}"
                    );
                }
            }
        }
        // The default decoder: chunks of 48 in an NVIDIA GPU's 48 KiB, 32 in lavapipe's
        // 32 KiB (without cooperative matrices; 16 with their larger bias scratch).
        let limits = |storage: u32, threads: u32| wgpu::Limits {
            max_compute_workgroup_storage_size: storage,
            max_compute_invocations_per_workgroup: threads,
            ..wgpu::Limits::default()
        };
        let chunk = |rows, threads| Some(Chunk { rows, threads });
        let coop = TrainKernel::CoopMatrix;
        assert_eq!(
            pick_chunk(&default, coop, &limits(49152, 1024)).ok(),
            chunk(48, 512)
        );
        assert_eq!(
            pick_chunk(&default, TrainKernel::F16, &limits(32768, 1024)).ok(),
            chunk(32, 512)
        );
        assert_eq!(
            pick_chunk(&default, coop, &limits(32768, 1024)).ok(),
            chunk(16, 512)
        );
        assert_eq!(
            pick_chunk(&default, coop, &limits(49152, 256)).ok(),
            chunk(48, 256)
        );
        for kernel in [TrainKernel::F16, coop] {
            for (storage, threads) in [(4096, 1024), (49152, 64)] {
                assert!(matches!(
                    pick_chunk(&default, kernel, &limits(storage, threads)),
                    Err(GpuTrainError::Limit { .. })
                ));
            }
        }
        // Chunks spread over at most `cap` (≤ MAX_TRAIN_WORKGROUPS) workgroups.
        let max = MAX_TRAIN_WORKGROUPS;
        assert_eq!(chunk_plan(65536, 64, max), (2, 512));
        assert_eq!(chunk_plan(32768, 64, max), (1, 512));
        assert_eq!(chunk_plan(170, 64, max), (1, 3));
        assert_eq!(chunk_plan(65537, 64, max), (3, 342));
        assert_eq!(chunk_plan(65536, 64, 10_000), (2, 512));
        assert_eq!(chunk_plan(65536, 48, 128), (11, 125));
        assert_eq!(chunk_plan(65536, 48, 0), (1366, 1));
    }

    #[test]
    fn the_timed_plans_are_distinct_and_cover_the_batch() {
        let plans = timed_plans(65536, 48);
        assert_eq!(plans.first(), Some(&(3, 456)));
        assert_eq!(plans.last(), Some(&(22, 63)));
        // 448 and 384 both give 4 chunks per workgroup: one plan.
        assert_eq!(plans.len(), TIMED_CAPS.len() - 1);
        for pair in plans.windows(2) {
            assert!(pair[0].1 > pair[1].1, "{plans:?}");
        }
        for &(per_group, groups) in &plans {
            assert!(per_group * groups >= 1366 && per_group * (groups - 1) < 1366);
            assert_eq!(chunk_plan(65536, 48, groups), (per_group, groups));
        }
        // Every plan is the one its own workgroup count makes, at any batch.
        for batch in [100, 4096, 10_000, 65_536, 100_003, 1 << 20] {
            for rows in [16, 48, 64] {
                for (per_group, groups) in timed_plans(batch, rows) {
                    assert_eq!(chunk_plan(batch, rows, groups), (per_group, groups));
                }
            }
        }
        // A batch of fewer chunks than the smallest cap has one plan.
        assert_eq!(timed_plans(1024, 16), vec![(1, 64)]);
    }

    #[test]
    fn the_workgroup_is_the_largest_that_fits() {
        let limits = |storage: u32| wgpu::Limits {
            max_compute_workgroup_storage_size: storage,
            ..wgpu::Limits::default()
        };
        let default = NtcConfig::default();
        // Tiles of (64 + 1 + 64 + 1) floats per thread.
        assert_eq!(tile_bytes_per_thread(&default), 520);
        assert_eq!(pick_workgroup(&default, &limits(32768), 64).ok(), Some(32));
        assert_eq!(pick_workgroup(&default, &limits(49152), 64).ok(), Some(64));
        assert_eq!(pick_workgroup(&default, &limits(49152), 48).ok(), Some(32));
        let wide = NtcConfig {
            hidden: vec![256; 4],
            ..NtcConfig::default()
        };
        assert_eq!(pick_workgroup(&wide, &limits(32768), 64).ok(), Some(8));
        assert!(matches!(
            pick_workgroup(&wide, &limits(1024), 64),
            Err(GpuTrainError::Limit { .. })
        ));
    }
}
