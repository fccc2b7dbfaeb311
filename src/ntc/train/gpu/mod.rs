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
//! | `sample` | `sample.wgsl` | one per sample | f32 trainer (and [`GpuTrainer::draw_batch`]): draws the batch with `pcg_hash` in tiles of [`sample_tile`](crate::ntc::TrainConfig::sample_tile)² texels: an anchor uniform over all texels of all mips of all materials (material ∝ its mip chain's texel count, mip ∝ area), the tile's texels from it |
//! | `forward_backward` | `forward_backward.wgsl` | one per sample | f32 trainer: noisy latents, bilinear taps, PE, LOD, MLP forward, weighted L2 loss, backward, gradient accumulation |
//! | `reduce_loss` | `loss.wgsl` | one workgroup | f32 trainer: the step's mean loss into `losses[step]` |
//! | `train_step` | `train_step.wgsl` | [`TRAIN_THREADS`] per chunk of [`TRAIN_ROWS`] samples | mixed-precision trainer: draws the chunk's samples (the `sample` kernel's batch), builds its input matrix, forward and backward as matrix products (cooperative matrices for `coop-matrix`), per-workgroup decoder gradients, latent scatter, per-workgroup loss |
//! | `adam` | `adam.wgsl` | one per parameter | Adam over both parameter blocks (per-block rate, λ and clamp), zeroes the latent gradients; in the mixed-precision trainer also sums the decoder's per-workgroup gradients, writes the f16 copy of the decoder and reduces the step's loss |
//! | `catch_up`, `replay`, `catch_up_all` | `adam.wgsl` | one per (sample, grid, tap) / per listed latent value / per latent texel | [`LatentAdam::Lazy`]: list each latent texel a batch reads once, with the step it is current at / replay the zero-gradient Adam steps the listed texels missed, before the batch's gradients / replay for every texel before a readback; `adam` then steps only the listed texels, one thread per value |
//! | `evaluate` | `forward_backward.wgsl` | grid-stride over a mip | per-channel squared errors of a decoded mip 0 ([`Quality`](crate::ntc::train::Quality)), f32 |
//!
//! The batch differs from [`sample_batch`](super::sample_batch) in one respect: a material
//! is drawn in proportion to its texel count, not uniformly, so that every texel of the
//! group is equally likely (the same thing for sets of one size). Batches are drawn on the
//! GPU from `pcg_hash` and the run's seed, so they differ from the CPU trainer's anyway.
//!
//! A training step is 4 dispatches in the f32 trainer (sample, forward_backward,
//! reduce_loss, adam) and 2 in the mixed-precision one (train_step, adam), two more
//! (catch_up, replay, before the batch's gradients) in main steps with lazy latent Adam,
//! with no CPU synchronisation; steps are recorded [`CHUNK_STEPS`] at a time into one
//! command buffer, each step reading its `StepParams` from its own 256-byte slot of one
//! uniform buffer (dynamic offset). At most [`MAX_IN_FLIGHT`] chunks are queued ahead of the GPU. The loss
//! of every step stays on the GPU until [`GpuTrainer::request_losses`] copies a range to a
//! staging buffer and maps it asynchronously ([`GpuTrainer::poll_losses`]).
//! [`GpuTrainer::profile_kernels`] records a few steps with each dispatch in a compute
//! pass of its own, timed by GPU timestamps (`train.sample`, `train.forward_backward`,
//! `train.reduce_loss`, `train.train_step`, `train.adam`), to say where a step's time goes.
//!
//! # The mixed-precision step (`train_step.wgsl`)
//!
//! A workgroup of the largest of [`TRAIN_THREADS`] the device allows works on chunks of
//! `R` consecutive samples (`R` the largest of [`TRAIN_ROWS`] whose workgroup memory,
//! [`mixed_workgroup_bytes`], fits with those threads: 48 for the default decoder in an
//! NVIDIA GPU's 48 KiB, 32 in lavapipe's 32 KiB), one chunk after another, as many
//! workgroups as chunks up to a cap of at most [`MAX_TRAIN_WORKGROUPS`]
//! ([`TrainWorkgroups`]: by default [`train_gpu`] times the plans of 512 down to 64
//! workgroups on a run's first steps and keeps the fastest, since a step is fastest when
//! its workgroups fit the GPU in one wave). Per chunk the layers' inputs are
//! f16 matrices in workgroup memory (`R` rows), and every product is a matrix product
//! with f16 operands and f32 sums: `Z = A · Wᵀ` forward, `δ_in = δ · W` backward (then
//! `⊙ act'(z)`), and the weight gradient `dW += δᵀ · A` over the chunk's
//! rows, which the workgroup adds to its own slice of decoder gradients (no atomics).
//! Each product covers a whole layer (one 16×16 tile per subgroup at a time) into an f32
//! stage, so a chunk has two workgroup barriers per layer and direction.
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
//! samples against 0.63 ms for the one-set groups of `baseline`. With 512 threads and
//! whole-layer products (docs/RESULTS.md, per stage before and after) the same set runs
//! 103 M texels/s, as with 16-column products and ~40 barriers per chunk (104 M): of its
//! ~9.7 ns per sample the products take 3.8, the scatter 0.5, Adam 0.3, the gathers 0.1,
//! and 5.0 ns remain with all of those removed.
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
//! | 3 | storage | parameters: the decoder ([`DecoderWeights::params`](crate::ntc::model::DecoderWeights::params) order), then each material's latents |
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
//!
//! # Files
//!
//! `layout` (bindings, the uniform and mip-table mirrors, the mip table, the buffers),
//! `kernels` (the trainer's choice, its pipelines and workgroup shapes), `step` (the step
//! loop, Adam's step counts, the single-step entry points) and `readback` (losses, model,
//! checkpoint, quality). Checkpoints know nothing of the GPU: this module uses
//! [`super::checkpoint`], never the reverse.

mod kernels;
mod layout;
mod readback;
mod step;

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

pub use kernels::{
    Chunk, DELTA_SCALE, MAX_TRAIN_WORKGROUPS, TRAIN_ROWS, TRAIN_THREADS, TrainKernel,
    mixed_workgroup_bytes,
};
use kernels::{Kernels, MAX_WORKGROUP, pick_workgroup};
use layout::{DeviceObjects, GroupLayout};
use readback::LossReadback;
use step::StepState;
pub use step::{
    KernelTimes, PROFILED_STEPS, RETIMED_PLANS, StepKernelMs, TIMED_STEPS, WorkgroupTiming,
};

use super::checkpoint::{Checkpoint, CheckpointError};
use super::cpu::BATCH_STREAM;
use super::schedule::{Phase, Schedule};
use super::{TrainConfig, TrainError, TrainedGroup, psnr};
use crate::gpu::kernel::KernelError;
use crate::gpu::{GpuContext, GpuError};
use crate::texture::TextureSet;

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

/// Errors of GPU training.
#[derive(Debug, thiserror::Error)]
pub enum GpuTrainError {
    /// The configuration, a texture set, a sample or a model part is invalid.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// Device work or a readback failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A training kernel could not be built (its shader failed to compose or validate, or
    /// its pipeline was rejected).
    #[error(transparent)]
    Kernel(#[from] KernelError),
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
    /// A checkpoint that does not fit the run or the data, or a checkpoint file that
    /// cannot be read, written or used.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The loss stopped being a number: the learning rates are too high for the data.
    #[error(
        "training diverged: the loss is not finite from step {step} on; lower the learning \
         rates (--lr-latents, --lr-decoder)"
    )]
    Diverged {
        /// The first step whose loss is NaN or infinite.
        step: u64,
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
    /// Workgroups of a mixed-precision step (default [`TrainWorkgroups::Timed`]).
    pub train_workgroups: TrainWorkgroups,
    /// How Adam steps the latents (default [`LatentAdam::Auto`]).
    pub latent_adam: LatentAdam,
}

impl Default for GpuTrainerOptions {
    fn default() -> Self {
        GpuTrainerOptions {
            atomics: GradientAtomics::Auto,
            max_workgroup: MAX_WORKGROUP,
            kernel: None,
            train_workgroups: TrainWorkgroups::Timed,
            latent_adam: LatentAdam::Auto,
        }
    }
}

/// How Adam steps the latents. Both are the same optimiser with the same results: every
/// latent of the group takes every main step, with a zero gradient where no sample of the
/// step touched it (the paper's dense Adam).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[derive(clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LatentAdam {
    /// Per group: [`Lazy`](Self::Lazy) where the group's latent texels outnumber the
    /// texels a batch reads ([`TAPS_PER_SAMPLE`] per sample) more than
    /// [`LAZY_TEXELS_PER_TAP`] times, else [`Dense`](Self::Dense)
    /// ([`resolve`](Self::resolve)).
    #[default]
    Auto,
    /// One pass over every latent of the group per step: a step costs in proportion to
    /// the group's latents.
    Dense,
    /// A latent's zero-gradient steps are deferred and replayed, with the same arithmetic,
    /// when a batch next reads it or the latents are read back (`shaders/ntc/adam.wgsl`):
    /// a step costs in proportion to its batch.
    Lazy,
}

/// Latent texels a training sample reads: four bilinear taps in each of the two grids.
pub const TAPS_PER_SAMPLE: u64 = 8;

/// [`LatentAdam::Auto`] steps a group's latents lazily where its latent texels exceed this
/// many times the taps of a batch. Measured with the lazy optimiser whose replay runs one
/// thread per value, on the H100 at 1024² (docs/RESULTS.md): dense is 1.04× faster at
/// twice as many texels as taps (twelve sets, batch 65 536), lazy 1.41× faster at four
/// times (twelve sets, batch 32 768), 1.63× at six (36 sets) and 2.56× at twelve (36
/// sets, batch 32 768); the crossover, interpolated on the ratio's logarithm, lies near
/// 2.2, and three keeps the measured twice on dense.
pub const LAZY_TEXELS_PER_TAP: u64 = 3;

impl LatentAdam {
    /// The optimiser this choice runs for a group of `latent_texels` latent texels
    /// trained on batches of `batch` samples: [`Dense`](Self::Dense) or
    /// [`Lazy`](Self::Lazy), never [`Auto`](Self::Auto).
    pub fn resolve(self, latent_texels: u64, batch: u32) -> LatentAdam {
        match self {
            LatentAdam::Auto
                if latent_texels > LAZY_TEXELS_PER_TAP * TAPS_PER_SAMPLE * u64::from(batch) =>
            {
                LatentAdam::Lazy
            }
            LatentAdam::Auto => LatentAdam::Dense,
            chosen => chosen,
        }
    }
}

/// How many `train_step` workgroups a step of the mixed-precision trainer spreads its
/// batch's chunks over (the f32 trainer runs one workgroup per slice of the batch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrainWorkgroups {
    /// At most this many (clamped to 1 ..= [`MAX_TRAIN_WORKGROUPS`]), each taking an
    /// equal share of the chunks.
    AtMost(u32),
    /// [`train_gpu`] times the plans of up to [`MAX_TRAIN_WORKGROUPS`] down to 64
    /// workgroups on the first steps of a run ([`GpuTrainer::time_workgroup_plans`]) and
    /// keeps the fastest; a deterministic run, or one of fewer than
    /// [`TIMED_MIN_MAIN_STEPS`] main steps left, uses [`MAX_TRAIN_WORKGROUPS`].
    Timed,
}

/// Main steps a run must have left for [`TrainWorkgroups::Timed`] to time the plans (the
/// timing takes [`TIMED_STEPS`] steps per round: one untimed, one per plan and
/// [`RETIMED_PLANS`] again, about 2 % of this), and for [`train_gpu`] to log the kernels'
/// GPU times per step ([`GpuTrainer::profile_kernels`]) after it.
pub const TIMED_MIN_MAIN_STEPS: u64 = 3000;

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
    /// Mixed-precision trainer: the `train_step` workgroups of a step now
    /// ([`TrainWorkgroups`]); `None` for the f32 trainer.
    pub train_workgroups: Option<u32>,
    /// How Adam steps the latents ([`GpuTrainer::latent_adam`]).
    pub latent_adam: LatentAdam,
    /// A step's GPU time per kernel group, when the run profiled its kernels
    /// ([`GpuTrainer::profile_kernels`]).
    pub kernel_ms: Option<StepKernelMs>,
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
/// `options.log_every` steps and once at the end. A run of at least
/// [`TIMED_MIN_MAIN_STEPS`] main steps logs each kernel's GPU time per step
/// ([`GpuTrainer::profile_kernels`]) once its workgroups are chosen.
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
                .map_err(CheckpointError::Invalid)?;
            checkpoint
        }
        None => Checkpoint::fresh(sets, config, steps, seed)?,
    };
    let mut trainer = GpuTrainer::new(ctx, sets, start, &options.gpu)?;
    let long = trainer.main_steps_left() >= TIMED_MIN_MAIN_STEPS;
    if options.gpu.train_workgroups == TrainWorkgroups::Timed
        && !config.deterministic
        && long
        && let Some(timing) = trainer.time_workgroup_plans()?
    {
        log::info!("{timing}");
    }
    if long && let Some(times) = trainer.profile_kernels()? {
        log::info!("{times}");
    }
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
        let weight = trainer.layout.loss_weight;
        TrainProgress {
            step: range.end,
            total: trainer.total_steps(),
            phase: trainer
                .run
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
            train_workgroups: trainer.train_workgroups(),
            latent_adam: trainer.latent_adam(),
            kernel_ms: trainer.kernel_ms,
        }
    }
}

/// Trains one group on the GPU. [`train_gpu`] drives it; tests use its pieces directly:
/// [`gradients`](Self::gradients) (one forward and backward pass over a given batch, read
/// back), [`apply_adam`](Self::apply_adam), [`download`](Self::download) and
/// [`evaluate`](Self::evaluate). Its state is grouped by what changes it: the run's
/// settings (fixed), the group's layout in GPU memory (fixed), the device objects (fixed
/// after [`new`](Self::new)), where the step loop and Adam stand, the loss readback and
/// the kernels' profile.
pub struct GpuTrainer {
    ctx: GpuContext,
    run: RunSettings,
    layout: GroupLayout,
    device: DeviceObjects,
    state: StepState,
    readback: LossReadback,
    /// What [`profile_kernels`](Self::profile_kernels) measured last.
    kernel_ms: Option<StepKernelMs>,
}

/// What a run is: its recipe and schedule, its length and its seeds.
struct RunSettings {
    config: TrainConfig,
    schedule: Schedule,
    /// Main steps (the schedule is `config.schedule(steps, k)`).
    steps: u64,
    seed: u64,
    /// The QAT noise stream's seed (from `seed`).
    noise_seed: u32,
    /// The batch stream's seed (from `seed ^ BATCH_STREAM`).
    sample_seed: u32,
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
            return Err(CheckpointError::Invalid(format!(
                "{} texture sets for a model of {} materials",
                sets.len(),
                model.pyramids().len()
            ))
            .into());
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
        let (layout, host) = GroupLayout::new(sets, &model, &adam, &config)?;
        let schedule = config.schedule(steps, sets.len());
        let latent_texels = layout.latent_texels(config.model.features);
        let latent_adam = options
            .latent_adam
            .resolve(u64::from(latent_texels), config.batch_size);
        if options.latent_adam == LatentAdam::Auto {
            log::info!(
                "latent Adam: {latent_adam:?} ({latent_texels} latent texels, {} read per step)",
                TAPS_PER_SAMPLE * u64::from(config.batch_size)
            );
        }
        let kernels = Kernels::new(
            ctx,
            layout::bind_group_layout(ctx),
            &config.model,
            kernel,
            workgroup,
            fixed_point,
            latent_adam == LatentAdam::Lazy,
        )?;
        let device = DeviceObjects::new(
            ctx,
            kernels,
            &layout,
            &host,
            &model,
            config.batch_size,
            &schedule,
            step,
        )?;
        let batch_seed = seed ^ BATCH_STREAM;
        Ok(GpuTrainer {
            ctx: ctx.clone(),
            run: RunSettings {
                config,
                schedule,
                steps,
                seed,
                noise_seed: (seed ^ (seed >> 32)) as u32,
                sample_seed: (batch_seed ^ (batch_seed >> 32)) as u32,
            },
            layout,
            device,
            state: StepState::new(
                step,
                &adam,
                match options.train_workgroups {
                    TrainWorkgroups::AtMost(n) => n,
                    TrainWorkgroups::Timed => MAX_TRAIN_WORKGROUPS,
                },
            ),
            readback: LossReadback::new(losses),
            kernel_ms: None,
        })
    }

    /// The next global step to run.
    pub fn current_step(&self) -> u64 {
        self.state.step
    }

    /// All steps of the run (main and fine-tuning).
    pub fn total_steps(&self) -> u64 {
        self.run.schedule.total_steps()
    }

    /// The run's schedule.
    pub fn schedule(&self) -> &Schedule {
        &self.run.schedule
    }

    /// Samples per training batch.
    pub fn batch_size(&self) -> u32 {
        self.device.batch_capacity
    }

    /// Workgroup size of the f32 kernels `forward_backward` (samples per decoder-gradient
    /// reduction of the f32 trainer) and `evaluate`.
    pub fn workgroup_size(&self) -> u32 {
        self.device.kernels.workgroup
    }

    /// True when gradients are accumulated in fixed point (`atomic<i32>`).
    pub fn fixed_point(&self) -> bool {
        self.device.kernels.fixed_point
    }

    /// The kernels that train.
    pub fn kernel(&self) -> TrainKernel {
        self.device.kernels.kernel
    }

    /// How Adam steps the latents: [`LatentAdam::Dense`] or [`LatentAdam::Lazy`] (what
    /// the options' choice resolved to for this group).
    pub fn latent_adam(&self) -> LatentAdam {
        if self.device.kernels.lazy.is_some() {
            LatentAdam::Lazy
        } else {
            LatentAdam::Dense
        }
    }

    /// Samples per `train_step` chunk of the mixed-precision trainer (`None` for
    /// [`TrainKernel::F32`]).
    pub fn chunk_rows(&self) -> Option<u32> {
        self.device.kernels.rows()
    }

    /// Mixed-precision trainer: the `train_step` workgroups of a step of the whole batch
    /// with the current cap ([`TrainWorkgroups`]); `None` for the f32 trainer.
    pub fn train_workgroups(&self) -> Option<u32> {
        self.chunk_rows().map(|_| self.step_groups())
    }

    /// The losses read back so far: one per step, from step 0.
    pub fn losses(&self) -> &[f64] {
        &self.readback.losses
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_latent_adam_is_lazy_only_for_groups_much_larger_than_a_batch() {
        // Latent texels of one 1024² set (full mip chain) at the default preset.
        let config = crate::ntc::model::NtcConfig::default();
        let set = crate::ntc::model::LatentLayout::new(
            1024,
            1024,
            crate::ntc::model::full_mip_count(1024, 1024),
            config.preset,
            config.features,
        )
        .expect("layout")
        .texel_count() as u64;
        let auto = |sets: u64, batch: u32| LatentAdam::Auto.resolve(sets * set, batch);
        // The measured groups: dense won for 1, 4 and 12 sets at batch 65 536, lazy for 12
        // sets at 32 768 and for 36 sets at 65 536 and 32 768.
        for sets in [1, 4, 12] {
            assert_eq!(auto(sets, 65_536), LatentAdam::Dense, "{sets} sets");
        }
        assert_eq!(auto(12, 32_768), LatentAdam::Lazy);
        assert_eq!(auto(36, 65_536), LatentAdam::Lazy);
        assert_eq!(auto(36, 32_768), LatentAdam::Lazy);
        // The boundary: lazy only above three texels per tap.
        let taps = TAPS_PER_SAMPLE * 1000;
        assert_eq!(LatentAdam::Auto.resolve(3 * taps, 1000), LatentAdam::Dense);
        assert_eq!(
            LatentAdam::Auto.resolve(3 * taps + 1, 1000),
            LatentAdam::Lazy
        );
        // An explicit choice stands whatever the sizes.
        for texels in [0, u64::from(u32::MAX)] {
            assert_eq!(LatentAdam::Dense.resolve(texels, 1), LatentAdam::Dense);
            assert_eq!(LatentAdam::Lazy.resolve(texels, 1 << 20), LatentAdam::Lazy);
        }
    }
}
