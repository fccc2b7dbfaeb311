//! The GPU trainer: one group (`k` texture sets, `k` latent pyramids, one shared decoder)
//! trained with WGSL compute kernels, following the CPU reference ([`super::cpu`]) step for
//! step: the same schedule ([`TrainConfig::schedule`]: cosine-decayed Adam with separate
//! latent and decoder rates, gradual decoder freezing λ, then quantised frozen latents and
//! a decoder fine-tune), the same input vector, QAT noise, loss and gradients.
//!
//! It owns the training dispatch logic only; the model, the maths it must match and the
//! schedule live in [`crate::ntc::model`], [`super::cpu`] and [`super::schedule`], and
//! nothing here touches rendering.
//!
//! # Kernels (`shaders/ntc/`, shared code in `shaders/common/ntc_*.wgsl`)
//!
//! Two trainers follow the recipe, chosen by [`TrainKernel`] ([`TrainKernel::best`] by
//! default): the f32 reference (`f32`) and the mixed-precision trainer (`f16`,
//! `coop-matrix`: f16 product operands, f32 accumulation, f32 master weights and Adam
//! state).
//!
//! | kernel | file | threads | does |
//! |---|---|---|---|
//! | `sample` | `sample.wgsl` | one per sample | f32 trainer (and [`GpuTrainer::draw_batch`]): draws the batch with `pcg_hash`: a texel uniform over all texels of all mips of all materials (material ∝ its mip chain's texel count, mip ∝ area) |
//! | `forward_backward` | `forward_backward.wgsl` | one per sample | f32 trainer: noisy latents, bilinear taps, PE, LOD, MLP forward, weighted L2 loss, backward, gradient accumulation |
//! | `reduce_loss` | `loss.wgsl` | one workgroup | f32 trainer: the step's mean loss into `losses[step]` |
//! | `train_step` | `train_step.wgsl` | [`TRAIN_THREADS`] per chunk of [`TRAIN_ROWS`] samples | mixed-precision trainer: draws the chunk's samples (the `sample` kernel's batch), builds its input matrix, forward and backward as matrix products (cooperative matrices for `coop-matrix`), per-workgroup decoder gradients, latent scatter, per-workgroup loss |
//! | `adam` | `adam.wgsl` | one per parameter | Adam over both parameter blocks (per-block rate, λ and clamp), zeroes the latent gradients; in the mixed-precision trainer also sums the decoder's per-workgroup gradients, writes the f16 copy of the decoder and reduces the step's loss |
//! | `evaluate` | `forward_backward.wgsl` | grid-stride over a mip | per-channel squared errors of a decoded mip 0 ([`Quality`]), f32 |
//!
//! The batch differs from [`sample_batch`](super::sample_batch) in one respect: a material
//! is drawn in proportion to its texel count, not uniformly, so that every texel of the
//! group is equally likely (the same thing for sets of one size). Batches are drawn on the
//! GPU from `pcg_hash` and the run's seed, so they differ from the CPU trainer's anyway.
//!
//! A training step is 4 dispatches in the f32 trainer (sample, forward_backward,
//! reduce_loss, adam) and 2 in the mixed-precision one (train_step, adam), with no CPU
//! synchronisation; steps are recorded [`CHUNK_STEPS`] at a time into one command buffer,
//! each step reading its `StepParams` from its own 256-byte slot of one uniform buffer
//! (dynamic offset). At most [`MAX_IN_FLIGHT`] chunks are queued ahead of the GPU. The loss
//! of every step stays on the GPU until [`GpuTrainer::request_losses`] copies a range to a
//! staging buffer and maps it asynchronously ([`GpuTrainer::poll_losses`]).
//!
//! # The mixed-precision step (`train_step.wgsl`)
//!
//! A workgroup of the largest of [`TRAIN_THREADS`] the device allows works on chunks of
//! `R` consecutive samples (`R` the largest of [`TRAIN_ROWS`] whose workgroup memory,
//! [`mixed_workgroup_bytes`], fits with those threads: 64 for the default decoder in an
//! NVIDIA GPU's 48 KiB, 32 in lavapipe's 32 KiB), one chunk after another, as many
//! workgroups as chunks up to [`MAX_TRAIN_WORKGROUPS`]. Per chunk the layers' inputs are
//! f16 matrices in workgroup memory (`R` rows), and every product is a matrix product
//! with f16 operands and f32 sums: `Z = A · Wᵀ` forward, `δ_in = δ · W` backward (then
//! `⊙ act'(z)`), and the weight gradient `dW += δᵀ · A` over the chunk's
//! rows, which the workgroup adds to its own slice of decoder gradients (no atomics).
//! Adam sums the slices in a fixed order. δ is stored in f16 as [`DELTA_SCALE`] times
//! the per-sample gradient (loss scaling: the batch mean would underflow f16), and
//! unscaled in f32 where it leaves f16: in the decoder's sums and before the latent
//! scatter. The weights are read from an f16 copy of the f32 master weights that Adam
//! writes after every update.
//!
//! **Measured** (NVIDIA H200, one 1024² Bistro set, `compress --steps 2000`, batch
//! 65 536, `coop-matrix`; the Mtexel/s each report gives): with 128 threads per workgroup
//! 70.9 M texels/s (3.5 TFLOP/s nominal, 0.92 ms per step); leaving one stage out of
//! `train_step` (variants built for the measurement only) gave 94.1 M without the latent
//! gathers of the input matrix, 79.3 M without the latent scatter, 91.6 M without the
//! matrix products and 165.3 M without all three. Per texel that is about 14.1 ns: gathers
//! 3.5, products 3.2, scatter 1.5, and 6.1 ns for the rest (sampling, the scalar phases
//! between the ~40 workgroup barriers, Adam). More threads per workgroup spread those
//! phases: 256 give 93.3 M and 512 ([`TRAIN_THREADS`]) 103.9 M; batch 16 384 gives
//! 62.4 M and 131 072 gives 73.9 M (with 128 threads; per-step costs are small). Adam updates every latent of the group each step, so a step of a group of
//! many sets costs more: the 63-set `single` run of `eval` took 3.8 ms per step of 32 768
//! samples against 0.63 ms for the one-set groups of `baseline`.
//!
//! **Determinism.** Everything but the latent scatter sums in a fixed order: the decoder
//! gradients (per workgroup, then in workgroup order), the losses, the matrix products
//! (the same operands in the same order give the same sums on one GPU). With
//! [`GradientAtomics::FixedPoint`] the latent scatter adds integers, so a run is
//! bit-for-bit reproducible from its seed (tested); the cost is a multiply and a rounding
//! per scattered value and the bounded quantisation error below, no extra pass. The f32
//! trainer is deterministic on that path too.
//! # Bindings (group 0, every kernel; `shaders/common/ntc_train.wgsl`)
//!
//! | binding | buffer | contents |
//! |---|---|---|
//! | 0 | uniform, dynamic offset | `StepParams` of the step |
//! | 1 | storage, read | `MipEntry` per (material, mip), materials in group order |
//! | 2 | storage, read | target texels of every mip of every material, 12 bytes each |
//! | 3 | storage | parameters: the decoder ([`DecoderWeights::params`] order), then each material's latents |
//! | 4 | storage, atomic | gradients of the mean batch loss, laid out like binding 3 |
//! | 5 | storage | Adam moments `(m, v)` per parameter |
//! | 6 | storage | the batch: `(entry, x | y << 16)` per sample |
//! | 7 | storage | per-workgroup partial sums (loss; squared errors of `evaluate`) |
//! | 8 | storage | mean loss of every step (plus one slot for [`GpuTrainer::gradients`]) |
//! | 9 | storage | mixed-precision trainer: the decoder's parameters in f16 |
//! | 10 | storage | mixed-precision trainer: decoder gradients per `train_step` workgroup |
//!
//! # Gradient reduction in the f32 trainer
//!
//! Decoder gradients are dense: every sample touches every weight. `forward_backward` runs
//! the backward pass one layer at a time; each thread writes its sample's `δ` (layer
//! outputs) and layer inputs into two workgroup tiles (rows padded by one float, so that
//! threads writing their own rows hit different banks), then the workgroup computes
//! `dW = Σ_samples δ ⊗ a` in 4 × 4 register blocks and `db = Σ_samples δ` and adds each
//! sum with one atomic per parameter per workgroup. The tiles take `workgroup × (widest
//! input + 1 + widest output + 1) × 4` bytes; the workgroup size is the largest power of two
//! ≤ 64 that fits the adapter's workgroup storage (for the default 48→64→64→16 decoder: 64
//! in the 48 KiB of an NVIDIA GPU, 32 in lavapipe's 32 KiB). Latent gradients are sparse:
//! each sample adds `tap weight · δ` to the `4 taps × F features` of each of its two grids
//! with one atomic per value.
//!
//! Atomics are `atomic<f32>` when the device has `SHADER_FLOAT32_ATOMIC`
//! ([`GradientAtomics::Auto`]), otherwise fixed-point `atomic<i32>`: a value `g` is added
//! as `round(g · S)` with `S =` [`GRAD_SCALE_DECODER`] (2^24) for the decoder and
//! [`GRAD_SCALE_LATENTS`] (2^26) for the latents, in units of the mean batch loss's
//! gradient, so the sums must stay within ±128 and ±32 (far above the gradients of a
//! loss on \[0, 1\] targets). Each added value is rounded, so a parameter's gradient is off
//! by at most `adds / (2 S)`: one add per workgroup for a decoder parameter, one per
//! sample that taps a latent. (The mixed-precision trainer uses atomics, of either kind,
//! for the latents only.)
//!
//! # Determinism
//!
//! `atomic<f32>` sums depend on the order the GPU happens to run the adds in, so two runs
//! with one seed differ in the last bits of the gradients, and the difference grows over
//! the steps. Integer addition is associative (also where it wraps), so the fixed-point
//! sums are the same in every order. Everything else is order-independent already: each
//! thread's forward and backward pass is its own, the workgroup sums of `dW` and the loss
//! run in loops of fixed order, `reduce_loss` and the host's sums of `evaluate`'s
//! per-workgroup partials run in index order, and batches and QAT noise are hashes of the
//! seed and step. So a [`TrainConfig::deterministic`] recipe, which selects the fixed-point
//! path, gives bit-identical results for one seed on one adapter and driver (the
//! workgroup size, and with it where the rounding happens, is the adapter's).
//!
//! # Interruption
//!
//! [`Checkpoint`] ([`super::checkpoint`]) holds a whole training state (model, Adam
//! moments, step, losses so far) and its file format. [`train_gpu`] checks its cancel
//! flag between chunks and returns [`GpuTrainError::Cancelled`] with a checkpoint;
//! [`TrainOptions::resume`] continues from one.

use crate::gpu::Defines;
use std::collections::VecDeque;
use std::num::NonZeroU64;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use bytemuck::{Pod, Zeroable};
use serde::{Deserialize, Serialize};
use wgpu::util::DeviceExt as _;

use super::checkpoint::{AdamMoments, Checkpoint};
use super::cpu::{AdamState, BATCH_STREAM, Gradients};
use super::schedule::{Phase, Schedule, StepPlan};
use super::{
    QUALITY_GROUPS, Quality, Sample, TrainConfig, TrainError, TrainedGroup, TrainedMaterial, psnr,
};
use crate::gpu::kernel::{ComputeKernel, Group, KernelDesc, KernelError};
use crate::gpu::layout::{Slot, group_layout};
use crate::gpu::{GpuContext, GpuError, ShaderError, read_buffer};
use crate::ntc::model::{
    Activation, DecoderWeights, GroupModel, LEAKY_SLOPE, LatentLayout, LatentPyramid,
    MAX_HIDDEN_LAYERS, NtcConfig, OUTPUTS, lod_input,
};
use crate::ntc::quant;
use crate::texture::{CHANNELS, ChannelMask, TextureSet};

/// Fixed-point scale of decoder gradients on the `atomic<i32>` path (2^24): a quantum of
/// 6e-8, sums within ±128.
pub const GRAD_SCALE_DECODER: f32 = 16_777_216.0;

/// Fixed-point scale of latent gradients on the `atomic<i32>` path (2^26): a quantum of
/// 1.5e-8, sums within ±32.
pub const GRAD_SCALE_LATENTS: f32 = 67_108_864.0;

/// Steps recorded into one command buffer.
pub const CHUNK_STEPS: u64 = 32;

/// Chunks queued ahead of the GPU before the CPU waits for the oldest.
pub const MAX_IN_FLIGHT: usize = 2;

/// Largest workgroup of `forward_backward` and `evaluate`.
const MAX_WORKGROUP: u32 = 64;

/// Workgroup size of `sample` (`SAMPLE_WORKGROUP` in `sample.wgsl`).
const SAMPLE_WORKGROUP: u32 = 256;

/// Workgroup size of `adam` (`ADAM_WORKGROUP` in `adam.wgsl`).
const ADAM_WORKGROUP: u32 = 256;

/// Decoder parameters per workgroup of the mixed-precision `adam` (`DECODER_PER_GROUP`
/// in `adam.wgsl`), each summed by `ADAM_WORKGROUP / DECODER_PER_GROUP` lanes.
const ADAM_DECODER_PER_GROUP: u32 = 32;

/// Workgroups of one `evaluate` dispatch (each thread loops over the mip).
const EVAL_WORKGROUPS: u32 = 4096;

/// Candidate threads of a `train_step` workgroup (`TRAIN_THREADS` in `train_step.wgsl`),
/// largest first: the trainer takes the first the device allows. 512 are sixteen
/// subgroups of 32 on NVIDIA GPUs, each running its share of the matrix products (the
/// forward and δ products have one 16-row block per subgroup for four of them, the weight
/// gradients' 16×16 tiles go to all) and of the scalar phases between them. Measured on
/// an H200 (1024² set, batch 65 536, `coop-matrix`): 103.9 M texels/s with 512 threads,
/// 93.3 M with 256 and 70.7 M with 128, to the same final loss.
pub const TRAIN_THREADS: [u32; 3] = [512, 256, 128];

/// Candidate sample rows per `train_step` chunk (`TRAIN_ROWS`), largest first: the trainer
/// takes the first whose workgroup memory fits the adapter ([`mixed_workgroup_bytes`]).
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

/// `FLAG_QAT` of `ntc_train.wgsl`: add QAT noise to the latents.
const FLAG_QAT: u32 = 1;

/// `FLAG_LATENT_GRADIENTS` of `ntc_train.wgsl`: scatter latent gradients.
const FLAG_LATENT_GRADIENTS: u32 = 2;

/// `FLAG_GIVEN_BATCH` of `ntc_train.wgsl`: `train_step` reads the batch buffer.
const FLAG_GIVEN_BATCH: u32 = 4;

/// Binding numbers of group 0 (`shaders/common/ntc_train.wgsl`).
mod binding {
    pub const STEP: u32 = 0;
    pub const MIPS: u32 = 1;
    pub const TARGETS: u32 = 2;
    pub const PARAMS: u32 = 3;
    pub const GRADS: u32 = 4;
    pub const MOMENTS: u32 = 5;
    pub const BATCH: u32 = 6;
    pub const PARTIALS: u32 = 7;
    pub const LOSSES: u32 = 8;
    pub const WEIGHTS16: u32 = 9;
    pub const DW_PARTIALS: u32 = 10;
}

/// The bindings of group 0 in binding order ([`binding`]): the step parameters at a
/// dynamic offset, the read-only mip table and targets, then the read-write buffers
/// (the last two used by the mixed-precision trainer only).
const GROUP_SLOTS: [Slot; 11] = [
    Slot::DynamicUniform,
    Slot::Storage,
    Slot::Storage,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::StorageRw,
    Slot::StorageRw,
];

/// Errors of GPU training.
#[derive(Debug, thiserror::Error)]
pub enum GpuTrainError {
    /// The configuration, a texture set, a sample or a model part is invalid.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// Device work or a readback failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A training kernel's pipeline could not be built.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// A training shader failed to compose, validate or compile.
    #[error(transparent)]
    Shader(#[from] ShaderError),
    /// The group needs more of something than the adapter allows.
    #[error(
        "{what} needs {needed} but the adapter allows {limit}; use a smaller batch, fewer \
         steps or smaller texture sets"
    )]
    Limit {
        /// What was measured.
        what: &'static str,
        /// What the group needs.
        needed: u64,
        /// The adapter's limit.
        limit: u64,
    },
    /// A batch longer than the trainer's batch buffers.
    #[error(
        "a batch of {len} samples exceeds the trainer's capacity of {capacity} \
         (TrainConfig::batch_size)"
    )]
    BatchTooLarge {
        /// Samples given.
        len: usize,
        /// The configured batch size.
        capacity: u32,
    },
    /// The requested training kernel cannot run here.
    #[error("training kernel `{kernel}` is unavailable: {reason}")]
    KernelUnavailable {
        /// The kernel.
        kernel: TrainKernel,
        /// Why.
        reason: String,
    },
    /// A checkpoint that does not fit the run or the data, or a damaged checkpoint file.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// Reading or writing a checkpoint file failed.
    #[error("checkpoint file {}: {message}", path.display())]
    CheckpointIo {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A checkpoint file that is damaged, not a checkpoint, or of another run.
    #[error(
        "cannot resume from the checkpoint {}: {reason}; delete it (or the whole folder {}) \
         to train this group from the start",
        path.display(),
        path.parent().unwrap_or(path).display()
    )]
    CheckpointFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Training stopped on request; the checkpoint resumes it.
    #[error("training cancelled at step {}; resume from the checkpoint", .0.step)]
    Cancelled(Box<Checkpoint>),
}

/// How gradients are accumulated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GradientAtomics {
    /// `atomic<f32>` when the device has `SHADER_FLOAT32_ATOMIC` and the recipe is not
    /// [`deterministic`](TrainConfig::deterministic), fixed point otherwise.
    #[default]
    Auto,
    /// `atomic<f32>`; an error when the device lacks `SHADER_FLOAT32_ATOMIC` or the recipe
    /// is deterministic.
    Float,
    /// Fixed-point `atomic<i32>` (see the module docs for scales and error bounds).
    FixedPoint,
}

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
        pick_chunk(config, &limits).err().map(|e| e.to_string())
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

/// Device-side choices of a [`GpuTrainer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuTrainerOptions {
    /// How gradients are accumulated (default [`GradientAtomics::Auto`]).
    pub atomics: GradientAtomics,
    /// Largest workgroup of `forward_backward` (a power of two in 1..=64, default 64);
    /// the trainer halves it until its tiles fit the adapter's workgroup storage.
    pub max_workgroup: u32,
    /// The kernels; `None` (the default) for [`TrainKernel::best`].
    pub kernel: Option<TrainKernel>,
}

impl Default for GpuTrainerOptions {
    fn default() -> Self {
        GpuTrainerOptions {
            atomics: GradientAtomics::Auto,
            max_workgroup: MAX_WORKGROUP,
            kernel: None,
        }
    }
}

/// The QAT noise of one step: latent `i` of material `m` gets
/// [`cpu::qat_noise`](super::cpu::qat_noise)`(seed, step, m, i, bits)` added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QatNoise {
    /// The noise seed.
    pub seed: u32,
    /// The step.
    pub step: u32,
}

/// Progress of [`train_gpu`], reported about every [`TrainOptions::log_every`] steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrainProgress {
    /// Steps completed (global: main, then fine-tuning).
    pub step: u64,
    /// All steps of the run.
    pub total: u64,
    /// The phase of the last completed step.
    pub phase: Phase,
    /// Mean batch loss over the steps since the previous report.
    pub loss: f64,
    /// PSNR in dB estimated from `loss`: `10 · log10(W / loss)` with `W` the expected sum
    /// of a sample's loss weights, i.e. the PSNR of the loss-weighted mean squared error
    /// over all mips (noisy latents in the main phase). Infinite when nothing is weighted.
    pub psnr_estimate: f64,
    /// Training throughput since the previous report, in batch texels per second.
    pub texels_per_second: f64,
}

/// How [`train_gpu`] runs besides the recipe.
#[derive(Clone, Debug)]
pub struct TrainOptions<'a> {
    /// Report progress about every this many steps (default 100; 0 counts as 1). Losses
    /// are read back asynchronously, so a report arrives a chunk or two late.
    pub log_every: u64,
    /// Set to true (e.g. from a Ctrl-C handler) to stop after the current chunk with
    /// [`GpuTrainError::Cancelled`].
    pub cancel: Option<&'a AtomicBool>,
    /// Continue this checkpoint instead of starting afresh (its settings, steps and seed
    /// must be the call's).
    pub resume: Option<Checkpoint>,
    /// Device-side choices.
    pub gpu: GpuTrainerOptions,
}

impl Default for TrainOptions<'_> {
    fn default() -> Self {
        TrainOptions {
            log_every: 100,
            cancel: None,
            resume: None,
            gpu: GpuTrainerOptions::default(),
        }
    }
}

/// Train one group on the GPU: the recipe of [`train_cpu`](super::train_cpu) (same
/// initialisation from `seed`, same schedule, QAT noise, quantisation and fine-tuning,
/// decoder rounded to f16 at the end) with batches drawn on the GPU. Quality is measured
/// on the GPU (`evaluate`) against each set's mip 0, like
/// [`cpu::evaluate`](super::cpu::evaluate). `progress` is called about every
/// `options.log_every` steps and once at the end.
pub fn train_gpu(
    ctx: &GpuContext,
    sets: &[TextureSet],
    config: &TrainConfig,
    steps: u64,
    seed: u64,
    options: TrainOptions<'_>,
    progress: &mut dyn FnMut(&TrainProgress),
) -> Result<TrainedGroup, GpuTrainError> {
    let start = match options.resume {
        Some(checkpoint) => {
            checkpoint
                .fits(config, steps, seed)
                .map_err(GpuTrainError::Checkpoint)?;
            checkpoint
        }
        None => Checkpoint::fresh(sets, config, steps, seed)?,
    };
    let mut trainer = GpuTrainer::new(ctx, sets, start, &options.gpu)?;
    let total = trainer.total_steps();
    let log_every = options.log_every.max(1);
    let mut requested = trainer.current_step();
    let mut reporter = Reporter {
        step: trainer.current_step(),
        time: Instant::now(),
    };
    while trainer.current_step() < total {
        if options.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(GpuTrainError::Cancelled(Box::new(trainer.checkpoint()?)));
        }
        trainer.step(CHUNK_STEPS)?;
        if config.deterministic {
            // Reports at fixed steps (the first chunk end past every `log_every`), so
            // that the loss curve is as reproducible as the training: wait for them.
            if trainer.current_step() >= requested.saturating_add(log_every) {
                trainer.sync_losses()?;
                requested = trainer.current_step();
                progress(&reporter.report(&trainer, reporter.step..requested));
            }
            continue;
        }
        if trainer.current_step() >= requested.saturating_add(log_every)
            && trainer.request_losses()?
        {
            requested = trainer.current_step();
        }
        if let Some(range) = trainer.poll_losses()? {
            progress(&reporter.report(&trainer, range));
        }
    }
    let group = trainer.finish()?;
    if reporter.step < total {
        progress(&reporter.report(&trainer, reporter.step..total));
    }
    Ok(group)
}

/// Turns loss readbacks into [`TrainProgress`] reports.
struct Reporter {
    /// Steps covered by the reports so far.
    step: u64,
    /// When the last report was made.
    time: Instant,
}

impl Reporter {
    /// The report of the losses of `range` (which starts at `self.step`).
    fn report(&mut self, trainer: &GpuTrainer, range: Range<u64>) -> TrainProgress {
        let losses = trainer
            .losses()
            .get(range.start as usize..range.end as usize)
            .unwrap_or(&[]);
        let loss = losses.iter().sum::<f64>() / losses.len().max(1) as f64;
        let now = Instant::now();
        let seconds = now.duration_since(self.time).as_secs_f64();
        let texels = range.end.saturating_sub(self.step) as f64 * f64::from(trainer.batch_size());
        self.step = range.end;
        self.time = now;
        let weight = trainer.loss_weight;
        TrainProgress {
            step: range.end,
            total: trainer.total_steps(),
            phase: trainer
                .schedule
                .plan(range.end.saturating_sub(1))
                .map_or(Phase::FineTune, |p| p.phase),
            loss,
            psnr_estimate: if weight > 0.0 {
                f64::from(psnr(loss / weight))
            } else {
                f64::INFINITY
            },
            texels_per_second: if seconds > 0.0 { texels / seconds } else { 0.0 },
        }
    }
}

/// Per-step parameters, one [`GpuTrainer::step_stride`]-aligned slot per step of a chunk.
/// Mirrors `StepParams` of `shaders/common/ntc_train.wgsl` (field docs there).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
struct StepParams {
    step: u32,
    batch_size: u32,
    flags: u32,
    noise_seed: u32,
    sample_seed: u32,
    entry_count: u32,
    total_texels: u32,
    loss_slot: u32,
    loss_groups: u32,
    decoder_count: u32,
    update_count: u32,
    eval_entry: u32,
    inv_batch: f32,
    quant_step: f32,
    beta1: f32,
    beta2: f32,
    one_minus_beta1: f32,
    one_minus_beta2: f32,
    epsilon: f32,
    lr_decoder: f32,
    bc1_decoder: f32,
    bc2_decoder: f32,
    lr_latents: f32,
    bc1_latents: f32,
    bc2_latents: f32,
    train_chunks: u32,
    partial_count: u32,
    _pad: u32,
}

/// One colour mip of one material. Mirrors `MipEntry` of `shaders/common/ntc_train.wgsl`
/// (field docs there).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
struct MipEntry {
    width: u32,
    height: u32,
    texel_start: u32,
    material: u32,
    latent_base: u32,
    fine_offset: u32,
    fine_width: u32,
    fine_height: u32,
    coarse_offset: u32,
    coarse_width: u32,
    coarse_height: u32,
    lod: f32,
    loss_weights: [f32; OUTPUTS],
}

/// The compiled kernels and their shared bind-group layout.
struct Kernels {
    layout: wgpu::BindGroupLayout,
    /// Which kernels train.
    kernel: TrainKernel,
    sample: wgpu::ComputePipeline,
    evaluate: wgpu::ComputePipeline,
    adam: wgpu::ComputePipeline,
    /// The per-step kernels before Adam.
    step: StepKernels,
    /// Workgroup size of `evaluate` (and of `forward_backward`).
    workgroup: u32,
    /// Gradients are fixed-point `atomic<i32>`.
    fixed_point: bool,
}

/// The kernels of a step before Adam.
enum StepKernels {
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
    const LABEL: &'static str = "ntc.train";

    fn new(
        ctx: &GpuContext,
        config: &NtcConfig,
        kernel: TrainKernel,
        workgroup: u32,
        fixed_point: bool,
    ) -> Result<Self, GpuTrainError> {
        let layout = group_layout(&ctx.device, Self::LABEL, &GROUP_SLOTS);
        let f32_defines = shader_defines(config, workgroup, fixed_point);
        let chunk = match kernel {
            TrainKernel::F32 => None,
            _ => Some(pick_chunk(config, &ctx.device.limits())?),
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
        let (step, adam) = match (rows, &mixed_defines) {
            (Some(rows), Some(defines)) => (
                StepKernels::Mixed {
                    train_step: pipeline("ntc/train_step.wgsl", "train_step", defines)?,
                    rows,
                },
                pipeline("ntc/adam.wgsl", "adam", defines)?,
            ),
            _ => (
                StepKernels::F32 {
                    forward_backward: pipeline(
                        "ntc/forward_backward.wgsl",
                        "forward_backward",
                        &f32_defines,
                    )?,
                    reduce_loss: pipeline("ntc/loss.wgsl", "reduce_loss", &f32_defines)?,
                },
                pipeline("ntc/adam.wgsl", "adam", &f32_defines)?,
            ),
        };
        Ok(Kernels {
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
    fn rows(&self) -> Option<u32> {
        match self.step {
            StepKernels::F32 { .. } => None,
            StepKernels::Mixed { rows, .. } => Some(rows),
        }
    }
}

/// The defines every training shader is composed with (documented in
/// `shaders/common/ntc_mlp.wgsl` and `ntc_train.wgsl`).
fn shader_defines(config: &NtcConfig, workgroup: u32, fixed_point: bool) -> Defines {
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
fn mixed_defines(
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

/// Bytes of workgroup memory `train_step` needs with chunks of `rows` samples and
/// `threads` threads: the f16 activations (`rows × (input + 2 · Σ hidden + 16)`), the f32
/// stage (`rows × 16`), the rows' samples (8 bytes each), the loss sums (4 per thread) and
/// the first-chunk flag.
pub fn mixed_workgroup_bytes(config: &NtcConfig, rows: u32, threads: u32) -> u32 {
    let hidden: u32 = config.hidden.iter().sum();
    let halves = config.input_width() as u32 + 2 * hidden + OUTPUTS as u32;
    rows * (2 * halves + 4 * 16 + 8) + 4 * threads + 4
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
fn pick_chunk(config: &NtcConfig, limits: &wgpu::Limits) -> Result<Chunk, GpuTrainError> {
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
        .find(|&rows| mixed_workgroup_bytes(config, rows, threads) <= limit)
        .map(|rows| Chunk { rows, threads })
        .ok_or(GpuTrainError::Limit {
            what: "the mixed-precision trainer's chunk (bytes of workgroup storage)",
            needed: u64::from(mixed_workgroup_bytes(config, 16, threads)),
            limit: u64::from(limit),
        })
}

/// Chunks per `train_step` workgroup and workgroups for a batch of `batch` samples in
/// chunks of `rows`: as many workgroups as chunks up to [`MAX_TRAIN_WORKGROUPS`], then
/// more chunks per workgroup.
fn chunk_plan(batch: u32, rows: u32) -> (u32, u32) {
    let chunks = batch.div_ceil(rows).max(1);
    let per_group = chunks.div_ceil(MAX_TRAIN_WORKGROUPS);
    (per_group, chunks.div_ceil(per_group))
}

/// Bytes of workgroup memory `forward_backward` needs per thread: one row of each tile
/// (`IN_STRIDE` and `OUT_STRIDE` floats in `forward_backward.wgsl`: the widest layer
/// input and output, plus one each).
fn tile_bytes_per_thread(config: &NtcConfig) -> u32 {
    let widest_hidden = config.hidden.iter().copied().max().unwrap_or(0);
    let tile_in = (config.input_width() as u32).max(widest_hidden);
    let tile_out = widest_hidden.max(OUTPUTS as u32);
    4 * (tile_in + 1 + tile_out + 1)
}

/// The largest power-of-two workgroup ≤ `max` whose tiles fit the adapter.
fn pick_workgroup(
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

/// The buffers of one trainer (bindings in the module docs).
struct Buffers {
    step: wgpu::Buffer,
    mips: wgpu::Buffer,
    targets: wgpu::Buffer,
    params: wgpu::Buffer,
    grads: wgpu::Buffer,
    moments: wgpu::Buffer,
    batch: wgpu::Buffer,
    partials: wgpu::Buffer,
    losses: wgpu::Buffer,
    weights16: wgpu::Buffer,
    dw_partials: wgpu::Buffer,
}

/// An asynchronous loss readback in flight.
struct PendingLosses {
    /// First step of the range.
    first: u64,
    /// Steps in the range.
    count: u64,
    staging: wgpu::Buffer,
    done: mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
}

/// A texture-set error.
fn bad_set(set: &TextureSet, reason: String) -> TrainError {
    TrainError::BadSet {
        name: set.name.clone(),
        reason,
    }
}

/// Check that `set` has the mips `layout` describes.
fn check_set(set: &TextureSet, layout: &LatentLayout) -> Result<(), TrainError> {
    if (set.width, set.height) != (layout.width(), layout.height()) {
        return Err(bad_set(
            set,
            format!(
                "{}×{} but its latents describe {}×{}",
                set.width,
                set.height,
                layout.width(),
                layout.height()
            ),
        ));
    }
    if set.mips.len() != layout.mips() {
        return Err(bad_set(
            set,
            format!(
                "{} mips, its latents describe {}",
                set.mips.len(),
                layout.mips()
            ),
        ));
    }
    for (m, mip) in set.mips.iter().enumerate() {
        let expected = layout.mip_size(m);
        if expected != Some((mip.width, mip.height)) {
            return Err(bad_set(
                set,
                format!(
                    "mip {m} is {}×{}, expected {expected:?}",
                    mip.width, mip.height
                ),
            ));
        }
        if mip.texels.len() != mip.width as usize * mip.height as usize * CHANNELS {
            return Err(bad_set(
                set,
                format!(
                    "mip {m} holds {} bytes, expected {}",
                    mip.texels.len(),
                    mip.width as usize * mip.height as usize * CHANNELS
                ),
            ));
        }
    }
    Ok(())
}

/// `value` as u32, or a [`GpuTrainError::Limit`] naming `what`.
fn fits_u32(what: &'static str, value: usize) -> Result<u32, GpuTrainError> {
    u32::try_from(value).map_err(|_| GpuTrainError::Limit {
        what,
        needed: value as u64,
        limit: u64::from(u32::MAX),
    })
}

/// `values` rounded to f16 (round to nearest even), as `weights16` holds them.
fn halves(values: &[f32]) -> Vec<half::f16> {
    values.iter().map(|&v| half::f16::from_f32(v)).collect()
}

/// Little-endian f32 bytes as values.
fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Record a 1D grid of `groups` workgroups as a 2D dispatch (x first) within `max_x`.
fn dispatch(pass: &mut wgpu::ComputePass<'_>, groups: u32, max_x: u32) {
    if groups == 0 {
        return;
    }
    let x = groups.min(max_x.max(1));
    pass.dispatch_workgroups(x, groups.div_ceil(x), 1);
}

/// Trains one group on the GPU. [`train_gpu`] drives it; tests use its pieces directly:
/// [`gradients`](Self::gradients) (one forward and backward pass over a given batch, read
/// back), [`apply_adam`](Self::apply_adam), [`download`](Self::download) and
/// [`evaluate`](Self::evaluate).
pub struct GpuTrainer {
    ctx: GpuContext,
    config: TrainConfig,
    schedule: Schedule,
    steps: u64,
    seed: u64,
    noise_seed: u32,
    sample_seed: u32,
    layouts: Vec<LatentLayout>,
    materials: Vec<(String, ChannelMask)>,
    /// Host copy of the mip table.
    entries: Vec<MipEntry>,
    /// First entry of each material.
    material_entries: Vec<usize>,
    decoder_count: u32,
    param_count: u32,
    total_texels: u32,
    /// Expected sum of a sample's loss weights under the sampling distribution.
    loss_weight: f64,
    kernels: Kernels,
    buffers: Buffers,
    bind_group: wgpu::BindGroup,
    step_stride: u64,
    batch_capacity: u32,
    max_dispatch: u32,
    /// The next global step.
    step: u64,
    decoder_t: u32,
    latent_t: u32,
    /// Gradients left in the buffer by [`gradients`](Self::gradients).
    grads_dirty: bool,
    /// Mixed-precision trainer: the length of the batch whose per-workgroup decoder
    /// gradients [`gradients`](Self::gradients) left for [`apply_adam`](Self::apply_adam)
    /// (0 for none).
    pending_batch: u32,
    /// Losses read back so far (steps `0 .. losses.len()`).
    losses: Vec<f64>,
    pending: Option<PendingLosses>,
    in_flight: VecDeque<wgpu::SubmissionIndex>,
}

impl GpuTrainer {
    /// A trainer for the group `sets` in the state `start` ([`Checkpoint::fresh`] for a
    /// new run, [`Checkpoint::new`] for a given model, or a saved checkpoint). Uploads
    /// the targets (all mips of all sets, 12 bytes per texel), the parameters and the
    /// moments once.
    pub fn new(
        ctx: &GpuContext,
        sets: &[TextureSet],
        start: Checkpoint,
        options: &GpuTrainerOptions,
    ) -> Result<Self, GpuTrainError> {
        start.check()?;
        let Checkpoint {
            config,
            steps,
            seed,
            step,
            model,
            adam,
            losses,
        } = start;
        if sets.len() != model.pyramids().len() {
            return Err(GpuTrainError::Checkpoint(format!(
                "{} texture sets for a model of {} materials",
                sets.len(),
                model.pyramids().len()
            )));
        }
        let fixed_point = match options.atomics {
            GradientAtomics::Auto => config.deterministic || !ctx.granted.float32_atomic,
            GradientAtomics::Float if config.deterministic => {
                return Err(TrainError::Setting {
                    name: "deterministic",
                    reason: "needs fixed-point gradients, not atomic<f32>".into(),
                }
                .into());
            }
            GradientAtomics::Float => {
                ctx.require(wgpu::Features::SHADER_FLOAT32_ATOMIC)?;
                false
            }
            GradientAtomics::FixedPoint => true,
        };
        let limits = ctx.device.limits();
        let workgroup = pick_workgroup(&config.model, &limits, options.max_workgroup)?;
        let kernel = match options.kernel {
            Some(kernel) => {
                if let Some(reason) = kernel.unavailable(ctx, &config.model) {
                    return Err(GpuTrainError::KernelUnavailable { kernel, reason });
                }
                kernel
            }
            None => TrainKernel::best(ctx, &config.model),
        };

        // The mip table, targets and parameters.
        let decoder_count = fits_u32("decoder parameters", model.decoder().params().len())?;
        let weights = config.loss_weights;
        let mut entries = Vec::new();
        let mut material_entries = Vec::with_capacity(sets.len());
        let mut targets: Vec<u8> = Vec::new();
        let mut params: Vec<f32> = model.decoder().params().to_vec();
        let mut moments: Vec<f32> = interleave(&adam.decoder);
        let mut weighted = 0.0f64;
        for (m, ((set, pyramid), state)) in sets
            .iter()
            .zip(model.pyramids())
            .zip(&adam.latents)
            .enumerate()
        {
            let layout = pyramid.layout();
            check_set(set, layout)?;
            material_entries.push(entries.len());
            let latent_base = fits_u32("parameters", params.len())?;
            let loss_weights = weights.per_output(set.present).map(|w| w as f32);
            let weight_sum: f64 = weights.per_output(set.present).iter().sum();
            for (mip, level) in set.mips.iter().enumerate() {
                let (pair, fine, coarse) = layout
                    .pair(mip)
                    .and_then(|p| Some((p, layout.grid(p.fine)?, layout.grid(p.coarse)?)))
                    .ok_or_else(|| bad_set(set, format!("mip {mip} has no grid pair")))?;
                let offset = |g: u32| -> Result<u32, GpuTrainError> {
                    fits_u32("latent values", layout.grid_offset(g).unwrap_or(0))
                };
                let texel_start = fits_u32("texels", targets.len() / CHANNELS)?;
                entries.push(MipEntry {
                    width: level.width,
                    height: level.height,
                    texel_start,
                    material: m as u32,
                    latent_base,
                    fine_offset: offset(pair.fine)?,
                    fine_width: fine.width,
                    fine_height: fine.height,
                    coarse_offset: offset(pair.coarse)?,
                    coarse_width: coarse.width,
                    coarse_height: coarse.height,
                    lod: lod_input(mip, layout.mips()) as f32,
                    loss_weights,
                });
                weighted += weight_sum * (level.width as f64 * level.height as f64);
                targets.extend_from_slice(&level.texels);
            }
            params.extend_from_slice(pyramid.values());
            moments.extend(interleave(state));
        }
        let texel_count = targets.len() / CHANNELS;
        // Target words are addressed as 3 · texel in u32.
        fits_u32("target words", texel_count * 3)?;
        let total_texels = fits_u32("texels", texel_count)?;
        let param_count = fits_u32("parameters", params.len())?;
        let loss_weight = weighted / texel_count.max(1) as f64;

        let total_steps = config.schedule(steps, sets.len()).total_steps();
        let batch_capacity = config.batch_size;
        let kernels = Kernels::new(ctx, &config.model, kernel, workgroup, fixed_point)?;
        // Mixed-precision trainer: one slice of decoder gradients per train_step
        // workgroup, at most as many as chunks (chunk_plan never makes more).
        let partial_slots = kernels.rows().map_or(0, |rows| {
            batch_capacity.div_ceil(rows).clamp(1, MAX_TRAIN_WORKGROUPS)
        });
        let partial_count = u64::from(batch_capacity.div_ceil(workgroup))
            .max(u64::from(EVAL_WORKGROUPS) * CHANNELS as u64);
        let loss_slots = total_steps.saturating_add(1);
        let step_stride = (std::mem::size_of::<StepParams>() as u64)
            .next_multiple_of(u64::from(limits.min_uniform_buffer_offset_alignment.max(1)));
        let max_binding = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        for (what, bytes) in [
            ("the target texels (bytes)", targets.len() as u64),
            ("the parameters (bytes)", 4 * u64::from(param_count)),
            ("the Adam moments (bytes)", 8 * u64::from(param_count)),
            ("the batch (bytes)", 8 * u64::from(batch_capacity)),
            ("the loss of every step (bytes)", 4 * loss_slots),
            (
                "the per-workgroup decoder gradients (bytes)",
                4 * u64::from(partial_slots) * u64::from(decoder_count),
            ),
        ] {
            if bytes > max_binding {
                return Err(GpuTrainError::Limit {
                    what,
                    needed: bytes,
                    limit: max_binding,
                });
            }
        }

        let device = &ctx.device;
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let init = |label: &str, contents: &[u8]| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: storage,
            })
        };
        let zeroed = |label: &str, size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(4),
                usage: storage,
                mapped_at_creation: false,
            })
        };
        let buffers = ctx.error_scope(|| Buffers {
            step: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("ntc.train.step"),
                size: CHUNK_STEPS * step_stride,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            mips: init("ntc.train.mips", bytemuck::cast_slice(&entries)),
            targets: init("ntc.train.targets", &targets),
            params: init("ntc.train.params", bytemuck::cast_slice(&params)),
            grads: zeroed("ntc.train.grads", 4 * u64::from(param_count)),
            moments: init("ntc.train.moments", bytemuck::cast_slice(&moments)),
            batch: zeroed("ntc.train.batch", 8 * u64::from(batch_capacity)),
            partials: zeroed("ntc.train.partials", 4 * partial_count),
            losses: zeroed("ntc.train.losses", 4 * loss_slots),
            weights16: match kernel {
                TrainKernel::F32 => zeroed("ntc.train.weights16", 4),
                _ => init(
                    "ntc.train.weights16",
                    bytemuck::cast_slice(&halves(model.decoder().params())),
                ),
            },
            dw_partials: zeroed(
                "ntc.train.dw_partials",
                4 * u64::from(partial_slots) * u64::from(decoder_count),
            ),
        })?;
        let bind_group = ctx.error_scope(|| {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(Kernels::LABEL),
                layout: &kernels.layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: binding::STEP,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer: &buffers.step,
                            offset: 0,
                            size: NonZeroU64::new(std::mem::size_of::<StepParams>() as u64),
                        }),
                    },
                    entry(binding::MIPS, &buffers.mips),
                    entry(binding::TARGETS, &buffers.targets),
                    entry(binding::PARAMS, &buffers.params),
                    entry(binding::GRADS, &buffers.grads),
                    entry(binding::MOMENTS, &buffers.moments),
                    entry(binding::BATCH, &buffers.batch),
                    entry(binding::PARTIALS, &buffers.partials),
                    entry(binding::LOSSES, &buffers.losses),
                    entry(binding::WEIGHTS16, &buffers.weights16),
                    entry(binding::DW_PARTIALS, &buffers.dw_partials),
                ],
            })
        })?;
        let schedule = config.schedule(steps, sets.len());
        let batch_seed = seed ^ BATCH_STREAM;
        Ok(GpuTrainer {
            ctx: ctx.clone(),
            schedule,
            steps,
            seed,
            noise_seed: (seed ^ (seed >> 32)) as u32,
            sample_seed: (batch_seed ^ (batch_seed >> 32)) as u32,
            layouts: model
                .pyramids()
                .iter()
                .map(|p| p.layout().clone())
                .collect(),
            materials: sets.iter().map(|s| (s.name.clone(), s.present)).collect(),
            entries,
            material_entries,
            decoder_count,
            param_count,
            total_texels,
            loss_weight,
            kernels,
            buffers,
            bind_group,
            step_stride,
            batch_capacity,
            max_dispatch: limits.max_compute_workgroups_per_dimension,
            step,
            decoder_t: adam.decoder.step,
            latent_t: adam.latents.first().map_or(0, |s| s.step),
            grads_dirty: false,
            pending_batch: 0,
            losses,
            pending: None,
            in_flight: VecDeque::new(),
            config,
        })
    }

    /// The next global step to run.
    pub fn current_step(&self) -> u64 {
        self.step
    }

    /// All steps of the run (main and fine-tuning).
    pub fn total_steps(&self) -> u64 {
        self.schedule.total_steps()
    }

    /// The run's schedule.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// Samples per training batch.
    pub fn batch_size(&self) -> u32 {
        self.batch_capacity
    }

    /// Workgroup size of the f32 kernels `forward_backward` (samples per decoder-gradient
    /// reduction of the f32 trainer) and `evaluate`.
    pub fn workgroup_size(&self) -> u32 {
        self.kernels.workgroup
    }

    /// True when gradients are accumulated in fixed point (`atomic<i32>`).
    pub fn fixed_point(&self) -> bool {
        self.kernels.fixed_point
    }

    /// The kernels that train.
    pub fn kernel(&self) -> TrainKernel {
        self.kernels.kernel
    }

    /// Samples per `train_step` chunk of the mixed-precision trainer (`None` for
    /// [`TrainKernel::F32`]).
    pub fn chunk_rows(&self) -> Option<u32> {
        self.kernels.rows()
    }

    /// The losses read back so far: one per step, from step 0.
    pub fn losses(&self) -> &[f64] {
        &self.losses
    }

    /// Run up to `count` more steps of the schedule (fewer at its end) and return how
    /// many ran. Steps are recorded [`CHUNK_STEPS`] to a command buffer and submitted
    /// without reading anything back; the CPU only waits when more than
    /// [`MAX_IN_FLIGHT`] chunks are queued, and once per run when the fine-tuning phase
    /// starts (the latents are then snapped to their quantisation levels with
    /// [`quant::snap`] on the CPU and the decoder's moments restart, as in `train_cpu`).
    pub fn step(&mut self, count: u64) -> Result<u64, GpuTrainError> {
        let start = self.step;
        let end = self.step.saturating_add(count).min(self.total_steps());
        if self.grads_dirty && self.step < end {
            self.clear_gradients()?;
        }
        while self.step < end {
            let Some(plan) = self.schedule.plan(self.step) else {
                break;
            };
            if plan.phase == Phase::FineTune && plan.phase_step == 0 {
                self.begin_finetune()?;
            }
            let phase_end = match plan.phase {
                Phase::Main => end.min(self.schedule.main_steps),
                Phase::FineTune => end,
            };
            self.run_chunk((phase_end - self.step).min(CHUNK_STEPS))?;
        }
        Ok(self.step - start)
    }

    /// Start copying the losses of the steps run since the last readback to the CPU,
    /// unless a readback is in flight or there is nothing new; true when one started.
    /// Never waits: [`poll_losses`](Self::poll_losses) collects the result.
    pub fn request_losses(&mut self) -> Result<bool, GpuTrainError> {
        let first = self.losses.len() as u64;
        if self.pending.is_some() || first >= self.step {
            return Ok(false);
        }
        let count = self.step - first;
        let device = &self.ctx.device;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("ntc.train.losses readback"),
            size: 4 * count,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&self.buffers.losses, 4 * first, &staging, 0, 4 * count);
        self.ctx.queue.submit([encoder.finish()]);
        let (sender, done) = mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |result| {
            // A send error means the trainer is gone and nobody waits for the losses.
            let _ = sender.send(result);
        });
        self.pending = Some(PendingLosses {
            first,
            count,
            staging,
            done,
        });
        Ok(true)
    }

    /// Collect a finished loss readback without waiting: the range of steps whose losses
    /// just arrived in [`losses`](Self::losses), or `None`.
    pub fn poll_losses(&mut self) -> Result<Option<Range<u64>>, GpuTrainError> {
        self.ctx
            .device
            .poll(wgpu::PollType::Poll)
            .map_err(|e| GpuError::Readback(format!("device poll failed: {e}")))?;
        let ready = match &self.pending {
            None => return Ok(None),
            Some(pending) => match pending.done.try_recv() {
                Ok(result) => result,
                Err(mpsc::TryRecvError::Empty) => return Ok(None),
                Err(mpsc::TryRecvError::Disconnected) => {
                    return Err(GpuError::Readback("loss map callback was dropped".into()).into());
                }
            },
        };
        ready.map_err(|e| GpuError::Readback(format!("mapping the losses failed: {e}")))?;
        let Some(pending) = self.pending.take() else {
            return Ok(None);
        };
        let values = f32s(
            &pending
                .staging
                .get_mapped_range(..)
                .map_err(|e| GpuError::Readback(format!("mapped losses: {e}")))?,
        );
        pending.staging.unmap();
        self.losses.extend(values.iter().map(|&v| f64::from(v)));
        Ok(Some(pending.first..pending.first + pending.count))
    }

    /// One forward and backward pass over `batch` with the current parameters, read
    /// back: the mean loss and the gradients of the mean batch loss, as
    /// [`cpu::batch_gradients`](super::cpu::batch_gradients) computes them, with QAT
    /// noise when `noise` is given. The gradients stay in the GPU buffer for
    /// [`apply_adam`](Self::apply_adam); [`step`](Self::step) clears them first. Blocks.
    pub fn gradients(
        &mut self,
        batch: &[Sample],
        noise: Option<QatNoise>,
    ) -> Result<(f64, Gradients), GpuTrainError> {
        if batch.len() > self.batch_capacity as usize {
            return Err(GpuTrainError::BatchTooLarge {
                len: batch.len(),
                capacity: self.batch_capacity,
            });
        }
        let encoded = batch
            .iter()
            .map(|&s| self.encode_sample(s))
            .collect::<Result<Vec<[u32; 2]>, _>>()?;
        let len = batch.len() as u32;
        let mixed = self.kernels.rows().is_some();
        let sized = self.batch_params(len);
        let params = StepParams {
            step: noise.map_or(0, |n| n.step),
            noise_seed: noise.map_or(0, |n| n.seed),
            flags: FLAG_LATENT_GRADIENTS
                | if noise.is_some() { FLAG_QAT } else { 0 }
                | if mixed { FLAG_GIVEN_BATCH } else { 0 },
            batch_size: sized.batch_size,
            inv_batch: sized.inv_batch,
            loss_groups: sized.loss_groups,
            train_chunks: sized.train_chunks,
            ..self.base_params()
        };
        self.ctx
            .queue
            .write_buffer(&self.buffers.step, 0, bytemuck::bytes_of(&params));
        if !encoded.is_empty() {
            self.ctx
                .queue
                .write_buffer(&self.buffers.batch, 0, bytemuck::cast_slice(&encoded));
        }
        self.submit(|encoder, trainer| {
            encoder.clear_buffer(&trainer.buffers.grads, 0, None);
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_bind_group(0, &trainer.bind_group, &[0]);
            let k = &trainer.kernels;
            match &k.step {
                StepKernels::F32 {
                    forward_backward,
                    reduce_loss,
                } => {
                    pass.set_pipeline(forward_backward);
                    dispatch(&mut pass, params.loss_groups, trainer.max_dispatch);
                    pass.set_pipeline(reduce_loss);
                }
                StepKernels::Mixed { train_step, .. } => {
                    pass.set_pipeline(train_step);
                    dispatch(&mut pass, params.loss_groups, trainer.max_dispatch);
                    // Adam with nothing to update: only its loss reduction runs.
                    pass.set_pipeline(&k.adam);
                }
            }
            pass.dispatch_workgroups(1, 1, 1);
        })?;
        self.grads_dirty = true;
        self.pending_batch = if mixed { len } else { 0 };
        let slot = 4 * u64::from(params.loss_slot);
        let loss = f32s(&read_buffer(
            &self.ctx,
            &self.buffers.losses,
            slot..slot + 4,
        )?);
        let raw = read_buffer(
            &self.ctx,
            &self.buffers.grads,
            0..4 * u64::from(self.param_count),
        )?;
        let decoder_count = self.decoder_count as usize;
        let mut values: Vec<f64> = raw
            .chunks_exact(4)
            .enumerate()
            .map(|(i, c)| {
                let bytes = [c[0], c[1], c[2], c[3]];
                if self.kernels.fixed_point {
                    let scale = if i < decoder_count {
                        GRAD_SCALE_DECODER
                    } else {
                        GRAD_SCALE_LATENTS
                    };
                    f64::from(i32::from_le_bytes(bytes)) / f64::from(scale)
                } else {
                    f64::from(f32::from_le_bytes(bytes))
                }
            })
            .collect();
        if mixed {
            // The decoder's gradients are the per-workgroup partials, summed as Adam sums
            // them: in f32, in its order (8 lanes of every 8th partial, then the lanes),
            // times the f32 inv_batch / DELTA_SCALE
            // (nearly cancelling partials make an f64 sum differ in the last bits, which
            // Adam's normalisation magnifies for gradients near ε).
            let partials = f32s(&read_buffer(
                &self.ctx,
                &self.buffers.dw_partials,
                0..4 * u64::from(params.loss_groups) * u64::from(self.decoder_count),
            )?);
            let unscale = params.inv_batch / DELTA_SCALE;
            let lanes = (ADAM_WORKGROUP / ADAM_DECODER_PER_GROUP) as usize;
            for (i, g) in values.iter_mut().take(decoder_count).enumerate() {
                let column: Vec<f32> = partials
                    .iter()
                    .skip(i)
                    .step_by(decoder_count.max(1))
                    .copied()
                    .collect();
                let sum = (0..lanes)
                    .map(|lane| {
                        column
                            .iter()
                            .skip(lane)
                            .step_by(lanes)
                            .fold(0.0f32, |sum, &p| sum + p)
                    })
                    .fold(0.0f32, |sum, lane| sum + lane);
                *g = f64::from(sum * unscale);
            }
        }
        let (decoder, mut rest) = values.split_at(decoder_count.min(values.len()));
        let mut latents = Vec::with_capacity(self.layouts.len());
        for layout in &self.layouts {
            let (material, tail) = rest.split_at(layout.value_count().min(rest.len()));
            latents.push(material.to_vec());
            rest = tail;
        }
        Ok((
            loss.first().map_or(0.0, |&l| f64::from(l)),
            Gradients {
                decoder: decoder.to_vec(),
                latents,
            },
        ))
    }

    /// The batch the `sample` kernel draws for global step `step` (what training uses at
    /// that step), read back. Blocks.
    pub fn draw_batch(&mut self, step: u64) -> Result<Vec<Sample>, GpuTrainError> {
        let params = StepParams {
            step: step as u32,
            ..self.base_params()
        };
        self.run_kernel(
            &params,
            &self.kernels.sample,
            self.batch_capacity.div_ceil(SAMPLE_WORKGROUP),
        )?;
        let bytes = read_buffer(
            &self.ctx,
            &self.buffers.batch,
            0..8 * u64::from(self.batch_capacity),
        )?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| {
                let entry = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                let texel = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
                let material = self
                    .entries
                    .get(entry as usize)
                    .map_or(u32::MAX, |e| e.material);
                let first = self
                    .material_entries
                    .get(material as usize)
                    .map_or(0, |&f| f as u32);
                Sample {
                    material,
                    mip: entry.wrapping_sub(first),
                    x: texel & 0xffff,
                    y: texel >> 16,
                }
            })
            .collect())
    }

    /// One Adam step on the gradients [`gradients`](Self::gradients) left: the decoder
    /// with rate `lr_decoder`, the latents with `lr_latents` (then clamped to \[−1, 1\])
    /// or, for `None`, not at all (neither values nor moments change, as while
    /// fine-tuning). Advances the Adam step counts and zeroes the gradients it consumes.
    pub fn apply_adam(
        &mut self,
        lr_latents: Option<f64>,
        lr_decoder: f64,
    ) -> Result<(), GpuTrainError> {
        // The decoder's gradients are those of the batch `gradients` ran (none after
        // they were applied once): its workgroups and its 1 / length.
        let pending = self.batch_params(self.pending_batch);
        let params = StepParams {
            partial_count: if self.pending_batch > 0 {
                pending.partial_count
            } else {
                0
            },
            inv_batch: pending.inv_batch,
            ..self.adam_params(lr_latents, lr_decoder)
        };
        self.run_kernel(
            &params,
            &self.kernels.adam,
            self.adam_groups(params.update_count),
        )?;
        self.pending_batch = 0;
        self.grads_dirty = lr_latents.is_none();
        Ok(())
    }

    /// The current model (blocking readback of the parameters).
    pub fn download(&self) -> Result<GroupModel, GpuTrainError> {
        let bytes = read_buffer(
            &self.ctx,
            &self.buffers.params,
            0..4 * u64::from(self.param_count),
        )?;
        let params = f32s(&bytes);
        let (decoder, mut rest) = params.split_at((self.decoder_count as usize).min(params.len()));
        let decoder = DecoderWeights::from_params(&self.config.model, decoder.to_vec())
            .map_err(TrainError::from)?;
        let mut pyramids = Vec::with_capacity(self.layouts.len());
        for layout in &self.layouts {
            let (values, tail) = rest.split_at(layout.value_count().min(rest.len()));
            pyramids.push(
                LatentPyramid::new(layout.clone(), values.to_vec()).map_err(TrainError::from)?,
            );
            rest = tail;
        }
        Ok(
            GroupModel::from_parts(self.config.model.clone(), decoder, pyramids)
                .map_err(TrainError::from)?,
        )
    }

    /// The training state as of [`current_step`](Self::current_step). Blocks: waits for
    /// the GPU and reads the parameters, the moments and the outstanding losses.
    pub fn checkpoint(&mut self) -> Result<Checkpoint, GpuTrainError> {
        self.sync_losses()?;
        let model = self.download()?;
        let moments = f32s(&read_buffer(
            &self.ctx,
            &self.buffers.moments,
            0..8 * u64::from(self.param_count),
        )?);
        let state = |range: Range<usize>, step: u32| AdamState {
            m: moments
                .iter()
                .skip(2 * range.start)
                .step_by(2)
                .take(range.len())
                .copied()
                .collect(),
            v: moments
                .iter()
                .skip(2 * range.start + 1)
                .step_by(2)
                .take(range.len())
                .copied()
                .collect(),
            step,
        };
        let mut start = self.decoder_count as usize;
        let decoder = state(0..start, self.decoder_t);
        let latents = self
            .layouts
            .iter()
            .map(|layout| {
                let range = start..start + layout.value_count();
                start = range.end;
                state(range, self.latent_t)
            })
            .collect();
        Ok(Checkpoint {
            config: self.config.clone(),
            steps: self.steps,
            seed: self.seed,
            step: self.step,
            model,
            adam: AdamMoments { decoder, latents },
            losses: self.losses.clone(),
        })
    }

    /// The quality of every material's mip 0 decoded with the current parameters (no
    /// noise), measured on the GPU as [`Quality::measure`] measures it (outputs clamped
    /// to \[0, 1\]). Squared errors are summed in f32 per thread and workgroup, then in
    /// f64. Blocks once per material.
    pub fn evaluate(&mut self) -> Result<Vec<Quality>, GpuTrainError> {
        let mut qualities = Vec::with_capacity(self.material_entries.len());
        for m in 0..self.material_entries.len() {
            let first = self.material_entries[m];
            let entry = self.entries[first];
            let texels = entry.width * entry.height;
            let groups = texels.div_ceil(self.kernels.workgroup).min(EVAL_WORKGROUPS);
            let params = StepParams {
                eval_entry: first as u32,
                ..self.base_params()
            };
            self.run_kernel(&params, &self.kernels.evaluate, groups)?;
            let sums = f32s(&read_buffer(
                &self.ctx,
                &self.buffers.partials,
                0..4 * u64::from(groups) * CHANNELS as u64,
            )?);
            let mut errors = [0.0f64; CHANNELS];
            for (i, &v) in sums.iter().enumerate() {
                errors[i % CHANNELS] += f64::from(v);
            }
            let present = self.materials.get(m).map_or(ChannelMask::NONE, |(_, p)| *p);
            qualities.push(quality_from_errors(&errors, u64::from(texels), present));
        }
        Ok(qualities)
    }

    /// End the run as `train_cpu` does: every loss read back, the latents snapped to
    /// their quantisation levels (a no-op after fine-tuning), the decoder rounded through
    /// f16 and uploaded, quality measured with [`evaluate`](Self::evaluate).
    pub fn finish(&mut self) -> Result<TrainedGroup, GpuTrainError> {
        self.sync_losses()?;
        let mut model = self.download()?;
        for pyramid in model.pyramids_mut() {
            quant::snap(pyramid.values_mut(), self.config.model.latent_bits);
        }
        quant::round_through_f16(model.decoder_mut().params_mut()).map_err(TrainError::from)?;
        let mut params = model.decoder().params().to_vec();
        for pyramid in model.pyramids() {
            params.extend_from_slice(pyramid.values());
        }
        self.ctx
            .queue
            .write_buffer(&self.buffers.params, 0, bytemuck::cast_slice(&params));
        let quality = self.evaluate()?;
        let materials = self
            .materials
            .iter()
            .zip(quality)
            .map(|((name, present), quality)| TrainedMaterial {
                name: name.clone(),
                present: *present,
                quality,
            })
            .collect();
        Ok(TrainedGroup {
            model,
            materials,
            losses: self.losses.clone(),
        })
    }

    /// The batch encoding of `sample`: `[entry, x | y << 16]`.
    fn encode_sample(&self, sample: Sample) -> Result<[u32; 2], TrainError> {
        let out_of_range = || TrainError::SampleOutOfRange(sample);
        let m = sample.material as usize;
        let first = *self.material_entries.get(m).ok_or_else(out_of_range)?;
        let mips = self.layouts.get(m).ok_or_else(out_of_range)?.mips();
        if sample.mip as usize >= mips {
            return Err(out_of_range());
        }
        let index = first + sample.mip as usize;
        let entry = self.entries.get(index).ok_or_else(out_of_range)?;
        if sample.x >= entry.width || sample.y >= entry.height {
            return Err(out_of_range());
        }
        Ok([index as u32, sample.x | (sample.y << 16)])
    }

    /// What every dispatch shares: sizes, seeds, Adam's constants; nothing to update, no
    /// noise, the spare loss slot.
    fn base_params(&self) -> StepParams {
        let adam = &self.config.adam;
        StepParams {
            noise_seed: self.noise_seed,
            sample_seed: self.sample_seed,
            entry_count: self.entries.len() as u32,
            total_texels: self.total_texels,
            loss_slot: self.total_steps() as u32,
            decoder_count: self.decoder_count,
            quant_step: quant::step(self.config.model.latent_bits),
            beta1: adam.beta1 as f32,
            beta2: adam.beta2 as f32,
            one_minus_beta1: (1.0 - adam.beta1) as f32,
            one_minus_beta2: (1.0 - adam.beta2) as f32,
            epsilon: adam.epsilon as f32,
            ..self.batch_params(self.batch_capacity)
        }
    }

    /// What depends on the batch's length: the length and its inverse, the workgroups
    /// whose loss sums are reduced and, for the mixed-precision trainer, the chunks per
    /// `train_step` workgroup and the workgroups whose decoder gradients Adam sums.
    fn batch_params(&self, batch: u32) -> StepParams {
        let (train_chunks, groups) = match self.kernels.rows() {
            Some(rows) => chunk_plan(batch, rows),
            None => (0, batch.div_ceil(self.kernels.workgroup)),
        };
        StepParams {
            batch_size: batch,
            inv_batch: (1.0 / f64::from(batch.max(1))) as f32,
            loss_groups: groups,
            train_chunks,
            partial_count: if self.kernels.rows().is_some() {
                groups
            } else {
                0
            },
            ..StepParams::default()
        }
    }

    /// Workgroups of an `adam` dispatch updating `params[0 .. update_count]`: one
    /// parameter per thread, except that the mixed-precision trainer's decoder takes
    /// [`ADAM_DECODER_PER_GROUP`] per workgroup; at least one (its workgroup 0 reduces the
    /// loss).
    fn adam_groups(&self, update_count: u32) -> u32 {
        match self.kernels.step {
            StepKernels::F32 { .. } => update_count.div_ceil(ADAM_WORKGROUP),
            StepKernels::Mixed { .. } => {
                let decoder = update_count.min(self.decoder_count);
                (decoder.div_ceil(ADAM_DECODER_PER_GROUP)
                    + (update_count - decoder).div_ceil(ADAM_WORKGROUP))
                .max(1)
            }
        }
    }

    /// Workgroups of one step's `forward_backward` or `train_step` dispatch.
    fn step_groups(&self) -> u32 {
        self.batch_params(self.batch_capacity).loss_groups
    }

    /// The Adam part of a step: advances the step counts (the latents' only when they
    /// are updated) and sets rates and bias corrections `1 − β^t` (computed in f64).
    fn adam_params(&mut self, lr_latents: Option<f64>, lr_decoder: f64) -> StepParams {
        self.decoder_t = self.decoder_t.saturating_add(1);
        if lr_latents.is_some() {
            self.latent_t = self.latent_t.saturating_add(1);
        }
        let adam = self.config.adam;
        let corrections = |t: u32| {
            let t = t.min(i32::MAX as u32) as i32;
            (
                (1.0 - adam.beta1.powi(t)) as f32,
                (1.0 - adam.beta2.powi(t)) as f32,
            )
        };
        let (bc1_decoder, bc2_decoder) = corrections(self.decoder_t);
        let (bc1_latents, bc2_latents) = corrections(self.latent_t);
        StepParams {
            update_count: if lr_latents.is_some() {
                self.param_count
            } else {
                self.decoder_count
            },
            lr_decoder: lr_decoder as f32,
            bc1_decoder,
            bc2_decoder,
            lr_latents: lr_latents.unwrap_or(0.0) as f32,
            bc1_latents,
            bc2_latents,
            ..self.base_params()
        }
    }

    /// The parameters of global step `step` following `plan`.
    fn plan_params(&mut self, step: u64, plan: &StepPlan) -> StepParams {
        let main = plan.phase == Phase::Main;
        let flags = match (main, self.config.qat) {
            (true, true) => FLAG_LATENT_GRADIENTS | FLAG_QAT,
            (true, false) => FLAG_LATENT_GRADIENTS,
            (false, _) => 0,
        };
        StepParams {
            step: step as u32,
            flags,
            loss_slot: step as u32,
            ..self.adam_params(main.then_some(plan.lr_latents), plan.lr_decoder)
        }
    }

    /// Record and submit `count` training steps from the current one.
    fn run_chunk(&mut self, count: u64) -> Result<(), GpuTrainError> {
        let stride = self.step_stride as usize;
        let size = std::mem::size_of::<StepParams>();
        let mut bytes = vec![0u8; count as usize * stride];
        let mut updates = Vec::with_capacity(count as usize);
        for i in 0..count {
            let step = self.step + i;
            let plan = self.schedule.plan(step).ok_or_else(|| {
                GpuTrainError::Checkpoint(format!("step {step} is past the end of the run"))
            })?;
            let params = self.plan_params(step, &plan);
            let at = i as usize * stride;
            bytes[at..at + size].copy_from_slice(bytemuck::bytes_of(&params));
            updates.push(params.update_count);
        }
        self.ctx.queue.write_buffer(&self.buffers.step, 0, &bytes);
        let index = self.submit(|encoder, trainer| {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(Kernels::LABEL),
                timestamp_writes: None,
            });
            let k = &trainer.kernels;
            let max = trainer.max_dispatch;
            let groups = trainer.step_groups();
            for (i, &update) in updates.iter().enumerate() {
                pass.set_bind_group(0, &trainer.bind_group, &[(i * stride) as u32]);
                match &k.step {
                    StepKernels::F32 {
                        forward_backward,
                        reduce_loss,
                    } => {
                        pass.set_pipeline(&k.sample);
                        dispatch(
                            &mut pass,
                            trainer.batch_capacity.div_ceil(SAMPLE_WORKGROUP),
                            max,
                        );
                        pass.set_pipeline(forward_backward);
                        dispatch(&mut pass, groups, max);
                        pass.set_pipeline(reduce_loss);
                        pass.dispatch_workgroups(1, 1, 1);
                    }
                    StepKernels::Mixed { train_step, .. } => {
                        pass.set_pipeline(train_step);
                        dispatch(&mut pass, groups, max);
                    }
                }
                pass.set_pipeline(&k.adam);
                dispatch(&mut pass, trainer.adam_groups(update), max);
            }
        })?;
        self.step += count;
        self.in_flight.push_back(index);
        while self.in_flight.len() > MAX_IN_FLIGHT {
            if let Some(oldest) = self.in_flight.pop_front() {
                self.ctx
                    .device
                    .poll(wgpu::PollType::Wait {
                        submission_index: Some(oldest),
                        timeout: None,
                    })
                    .map_err(|e| GpuError::Readback(format!("device poll failed: {e}")))?;
            }
        }
        Ok(())
    }

    /// Write `params` to the step uniform and run `kernel` over `groups` workgroups in one
    /// submit (validation errors returned as values).
    fn run_kernel(
        &self,
        params: &StepParams,
        kernel: &wgpu::ComputePipeline,
        groups: u32,
    ) -> Result<(), GpuTrainError> {
        self.ctx
            .queue
            .write_buffer(&self.buffers.step, 0, bytemuck::bytes_of(params));
        self.submit(|encoder, trainer| {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_bind_group(0, &trainer.bind_group, &[0]);
            pass.set_pipeline(kernel);
            dispatch(&mut pass, groups, trainer.max_dispatch);
        })?;
        Ok(())
    }

    /// Record commands with `record` into one encoder and submit them, validation errors
    /// returned as values.
    fn submit(
        &self,
        record: impl FnOnce(&mut wgpu::CommandEncoder, &Self),
    ) -> Result<wgpu::SubmissionIndex, GpuTrainError> {
        Ok(self.ctx.error_scope(|| {
            let mut encoder =
                self.ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some(Kernels::LABEL),
                    });
            record(&mut encoder, self);
            self.ctx.queue.submit([encoder.finish()])
        })?)
    }

    /// Zero every gradient.
    fn clear_gradients(&mut self) -> Result<(), GpuTrainError> {
        self.submit(|encoder, trainer| encoder.clear_buffer(&trainer.buffers.grads, 0, None))?;
        self.grads_dirty = false;
        Ok(())
    }

    /// The switch to fine-tuning: latents snapped to their levels (on the CPU, bit for
    /// bit [`quant::snap`]), decoder moments and step count reset.
    fn begin_finetune(&mut self) -> Result<(), GpuTrainError> {
        let latents = 4 * u64::from(self.decoder_count)..4 * u64::from(self.param_count);
        let mut values = f32s(&read_buffer(
            &self.ctx,
            &self.buffers.params,
            latents.clone(),
        )?);
        self.in_flight.clear();
        quant::snap(&mut values, self.config.model.latent_bits);
        self.ctx.queue.write_buffer(
            &self.buffers.params,
            latents.start,
            bytemuck::cast_slice(&values),
        );
        let decoder_moments = 8 * u64::from(self.decoder_count);
        self.submit(|encoder, trainer| {
            encoder.clear_buffer(&trainer.buffers.moments, 0, Some(decoder_moments));
        })?;
        self.decoder_t = 0;
        Ok(())
    }

    /// Read back every outstanding loss (blocking).
    fn sync_losses(&mut self) -> Result<(), GpuTrainError> {
        for _ in 0..2 {
            if self.pending.is_none() && !self.request_losses()? {
                continue;
            }
            self.ctx.wait_idle()?;
            self.poll_losses()?;
        }
        if (self.losses.len() as u64) < self.step {
            return Err(GpuError::Readback(format!(
                "losses of steps {}..{} did not arrive",
                self.losses.len(),
                self.step
            ))
            .into());
        }
        Ok(())
    }
}

/// Quality from per-channel sums of squared errors over `texels` texels, grouped as
/// [`Quality::measure`] groups them.
fn quality_from_errors(errors: &[f64; CHANNELS], texels: u64, present: ChannelMask) -> Quality {
    let mut quality = Quality::default();
    for (slot, (mask, _)) in quality.psnr.iter_mut().zip(QUALITY_GROUPS) {
        if !present.contains(mask) {
            continue;
        }
        let (sum, n) = mask.channels().fold((0.0, 0u64), |(sum, n), c| {
            (sum + errors[c.index()], n + texels)
        });
        *slot = (n > 0).then(|| psnr(sum / n as f64));
    }
    quality
}

/// A bind-group entry for all of `buffer`.
fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buffer.as_entire_binding(),
    }
}

/// `(m, v)` pairs of an Adam state, as the GPU stores them.
fn interleave(state: &AdamState) -> Vec<f32> {
    state
        .m
        .iter()
        .zip(&state.v)
        .flat_map(|(&m, &v)| [m, v])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader::ShaderLibrary;

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
                        mixed_workgroup_bytes(&config, rows, threads),
                        "{kernel} {rows}"
                    );
                }
            }
        }
        // The default decoder: chunks of 64 in an NVIDIA GPU's 48 KiB, 32 in lavapipe's
        // 32 KiB.
        let limits = |storage: u32, threads: u32| wgpu::Limits {
            max_compute_workgroup_storage_size: storage,
            max_compute_invocations_per_workgroup: threads,
            ..wgpu::Limits::default()
        };
        let chunk = |rows, threads| Some(Chunk { rows, threads });
        assert_eq!(
            pick_chunk(&default, &limits(49152, 1024)).ok(),
            chunk(64, 512)
        );
        assert_eq!(
            pick_chunk(&default, &limits(32768, 1024)).ok(),
            chunk(32, 512)
        );
        assert_eq!(
            pick_chunk(&default, &limits(49152, 256)).ok(),
            chunk(64, 256)
        );
        for (storage, threads) in [(4096, 1024), (49152, 64)] {
            assert!(matches!(
                pick_chunk(&default, &limits(storage, threads)),
                Err(GpuTrainError::Limit { .. })
            ));
        }
        // Chunks spread over at most MAX_TRAIN_WORKGROUPS workgroups.
        assert_eq!(chunk_plan(65536, 64), (2, 512));
        assert_eq!(chunk_plan(32768, 64), (1, 512));
        assert_eq!(chunk_plan(170, 64), (1, 3));
        assert_eq!(chunk_plan(65537, 64), (3, 342));
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

    #[test]
    fn quality_groups_errors_like_quality_measure() {
        let reference = crate::texture::SetMip {
            width: 2,
            height: 1,
            texels: vec![255; 2 * CHANNELS],
        };
        let mut decoded = vec![1.0f32; 2 * CHANNELS];
        decoded[0] = 0.9;
        decoded[CHANNELS + 7] = 0.5;
        let present = ChannelMask::BASE_COLOR | ChannelMask::ROUGHNESS;
        let mut errors = [0.0f64; CHANNELS];
        for (i, d) in decoded.iter().enumerate() {
            errors[i % CHANNELS] += (1.0 - f64::from(*d)).powi(2);
        }
        let expected = Quality::measure(&decoded, &reference, present);
        let got = quality_from_errors(&errors, 2, present);
        for (g, e) in got.psnr.iter().zip(expected.psnr) {
            match (g, e) {
                (Some(g), Some(e)) => assert!((g - e).abs() < 1e-4, "{g} vs {e}"),
                (g, e) => assert_eq!(*g, e),
            }
        }
    }
}
