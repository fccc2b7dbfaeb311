//! The step loop: recording chunks of steps (the per-step uniforms, the dispatches of
//! either trainer, Adam's step counts and bias corrections), the switch to fine-tuning,
//! and the single-step entry points the tests compare with the CPU reference
//! ([`GpuTrainer::gradients`], [`GpuTrainer::apply_adam`], [`GpuTrainer::draw_batch`]).

use std::collections::VecDeque;
use std::time::Instant;

use super::kernels::{
    ADAM_DECODER_PER_GROUP, ADAM_WORKGROUP, DELTA_SCALE, Kernels, SAMPLE_WORKGROUP, StepKernels,
    chunk_plan, timed_plans,
};
use super::layout::{FLAG_GIVEN_BATCH, FLAG_LATENT_GRADIENTS, FLAG_QAT, StepParams};
use super::readback::f32s;
use super::{
    CHUNK_STEPS, GRAD_SCALE_DECODER, GRAD_SCALE_LATENTS, GpuTrainError, GpuTrainer, MAX_IN_FLIGHT,
    QatNoise, TAPS_PER_SAMPLE,
};
use crate::gpu::encoder::FrameEncoder;
use crate::gpu::profiler::label_ms;
use crate::gpu::{GpuError, GpuProfiler, read_buffer};
use crate::ntc::quant;
use crate::ntc::train::checkpoint::{AdamMoments, CheckpointError};
use crate::ntc::train::cpu::Gradients;
use crate::ntc::train::schedule::{Phase, StepPlan};
use crate::ntc::train::{Sample, TrainError};

/// Where the step loop and Adam stand: the next step, Adam's step counts, what the
/// gradient buffer holds, and the chunks still queued on the GPU.
pub(super) struct StepState {
    /// The next global step.
    pub(super) step: u64,
    /// Adam's step count of the decoder (restarts with fine-tuning).
    pub(super) decoder_t: u32,
    /// Adam's step count of the latents.
    pub(super) latent_t: u32,
    /// Gradients left in the buffer by [`gradients`](GpuTrainer::gradients).
    pub(super) grads_dirty: bool,
    /// Mixed-precision trainer: the length of the batch whose per-workgroup decoder
    /// gradients [`gradients`](GpuTrainer::gradients) left for
    /// [`apply_adam`](GpuTrainer::apply_adam) (0 for none).
    pub(super) pending_batch: u32,
    /// Submitted chunks, oldest first.
    pub(super) in_flight: VecDeque<wgpu::SubmissionIndex>,
    /// Mixed-precision trainer: the cap on a step's `train_step` workgroups
    /// ([`chunk_plan`]); [`GpuTrainer::time_workgroup_plans`] sets it.
    pub(super) workgroup_cap: u32,
    /// Lazy latent Adam: steps ran since every latent texel was last brought up to the
    /// current step ([`GpuTrainer::sync_latents`]).
    pub(super) latents_behind: bool,
}

impl StepState {
    /// The state at global step `step` with Adam's step counts from `adam`, steps of at
    /// most `workgroup_cap` workgroups.
    pub(super) fn new(step: u64, adam: &AdamMoments, workgroup_cap: u32) -> Self {
        StepState {
            step,
            decoder_t: adam.decoder.step,
            latent_t: adam.latents.first().map_or(0, |s| s.step),
            grads_dirty: false,
            pending_batch: 0,
            in_flight: VecDeque::new(),
            workgroup_cap,
            latents_behind: false,
        }
    }
}

/// Steps each plan runs for while [`GpuTrainer::time_workgroup_plans`] times it.
pub const TIMED_STEPS: u64 = 4;

/// Plans [`GpuTrainer::time_workgroup_plans`] times a second time: the fastest of the
/// first round.
pub const RETIMED_PLANS: usize = 3;

/// Steps [`GpuTrainer::profile_kernels`] times.
pub const PROFILED_STEPS: u64 = 8;

/// What [`GpuTrainer::profile_kernels`] measured: the GPU milliseconds per step of each
/// kernel of a training step, from timestamp queries around its dispatches.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTimes {
    /// `(kernel, mean milliseconds per step)`, in dispatch order.
    pub kernels: Vec<(&'static str, f64)>,
}

impl KernelTimes {
    /// The step's GPU time as the batch's gradients (every kernel but Adam) and Adam.
    pub fn split(&self) -> StepKernelMs {
        let (adam, gradients): (Vec<_>, Vec<_>) = self
            .kernels
            .iter()
            .partition(|&&(kernel, _)| kernel.starts_with(ADAM_LABEL));
        StepKernelMs {
            gradients: gradients.iter().map(|&&(_, ms)| ms).sum(),
            adam: adam.iter().map(|&&(_, ms)| ms).sum(),
        }
    }
}

/// Label of the Adam kernel's timing row.
const ADAM_LABEL: &str = "train.adam";

/// Label of lazy latent Adam's catch-up kernel's timing row (part of Adam's time).
const CATCH_UP_LABEL: &str = "train.adam_catch_up";

/// Label of lazy latent Adam's replay kernel's timing row (part of Adam's time).
const REPLAY_LABEL: &str = "train.adam_replay";

/// A step's GPU milliseconds ([`KernelTimes::split`]): the kernels that draw the batch and
/// compute its gradients, and Adam, which updates every parameter of the group.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepKernelMs {
    /// The batch's kernels (sampling, forward and backward, loss): `train_step`, or
    /// `sample` + `forward_backward` + `reduce_loss`.
    pub gradients: f64,
    /// Adam.
    pub adam: f64,
}

impl std::fmt::Display for KernelTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GPU time per step over {PROFILED_STEPS} steps:")?;
        for (i, (kernel, ms)) in self.kernels.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep} {kernel} {ms:.3} ms")?;
        }
        Ok(())
    }
}

/// What [`GpuTrainer::time_workgroup_plans`] measured: per plan its workgroups, chunks
/// per workgroup and wall seconds per step, and the plan kept.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkgroupTiming {
    /// `(workgroups, chunks per workgroup, seconds per step)`, most workgroups first; the
    /// seconds of a plan timed twice are the mean of both rounds.
    pub plans: Vec<(u32, u32, f64)>,
    /// The workgroups of the fastest plan, used from then on.
    pub chosen: u32,
}

impl std::fmt::Display for WorkgroupTiming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "train_step: {} workgroups per step, the fastest of",
            self.chosen
        )?;
        for (i, (groups, chunks, seconds)) in self.plans.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep} {groups}×{chunks} {:.3} ms", seconds * 1e3)?;
        }
        Ok(())
    }
}

impl GpuTrainer {
    /// Run up to `count` more steps of the schedule (fewer at its end) and return how
    /// many ran. Steps are recorded [`CHUNK_STEPS`] to a command buffer and submitted
    /// without reading anything back; the CPU only waits when more than
    /// [`MAX_IN_FLIGHT`] chunks are queued, and once per run when the fine-tuning phase
    /// starts (the latents are then snapped to their quantisation levels with
    /// [`quant::snap`] on the CPU and the decoder's moments restart, as in `train_cpu`).
    pub fn step(&mut self, count: u64) -> Result<u64, GpuTrainError> {
        self.advance(count, None)
    }

    /// [`step`](Self::step), with every kernel's dispatches in a compute pass of its own
    /// timed by `profiler` when one is given.
    fn advance(
        &mut self,
        count: u64,
        profiler: Option<&GpuProfiler>,
    ) -> Result<u64, GpuTrainError> {
        let start = self.state.step;
        let end = self
            .state
            .step
            .saturating_add(count)
            .min(self.total_steps());
        if self.state.grads_dirty && self.state.step < end {
            self.clear_gradients()?;
        }
        while self.state.step < end {
            let Some(plan) = self.run.schedule.plan(self.state.step) else {
                break;
            };
            if plan.phase == Phase::FineTune && plan.phase_step == 0 {
                self.begin_finetune()?;
            }
            let phase_end = match plan.phase {
                Phase::Main => end.min(self.run.schedule.main_steps),
                Phase::FineTune => end,
            };
            self.run_chunk((phase_end - self.state.step).min(CHUNK_STEPS), profiler)?;
        }
        Ok(self.state.step - start)
    }

    /// Main steps of the schedule not yet run.
    pub fn main_steps_left(&self) -> u64 {
        self.run.schedule.main_steps.saturating_sub(self.state.step)
    }

    /// Mixed-precision trainer: run the next steps of the schedule [`TIMED_STEPS`] at a
    /// time, once untimed, then once with each plan of `timed_plans` for the batch and
    /// again with the [`RETIMED_PLANS`] fastest, each waited for and timed on the wall
    /// clock, and keep the plan fastest over both rounds for the rest of the run (so one
    /// disturbed measurement does not decide). The timed steps are steps of the run like
    /// any other (the plans differ only in how a step's chunks are shared out). `None`,
    /// running nothing, for the f32 trainer or when fewer main steps are left than the
    /// timing takes.
    pub fn time_workgroup_plans(&mut self) -> Result<Option<WorkgroupTiming>, GpuTrainError> {
        let Some(rows) = self.device.kernels.rows() else {
            return Ok(None);
        };
        let candidates = timed_plans(self.device.batch_capacity, rows);
        let rounds = candidates.len() + 1 + candidates.len().min(RETIMED_PLANS);
        if self.main_steps_left() < rounds as u64 * TIMED_STEPS {
            return Ok(None);
        }
        self.time_plan(candidates[0].1)?;
        let mut plans = Vec::with_capacity(candidates.len());
        for &(chunks, groups) in &candidates {
            plans.push((groups, chunks, self.time_plan(groups)?));
        }
        let mut fastest: Vec<usize> = (0..plans.len()).collect();
        fastest.sort_by(|&a, &b| plans[a].2.total_cmp(&plans[b].2));
        fastest.truncate(RETIMED_PLANS);
        for &i in &fastest {
            plans[i].2 = (plans[i].2 + self.time_plan(plans[i].0)?) / 2.0;
        }
        let chosen = fastest
            .iter()
            .map(|&i| plans[i])
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .map_or(candidates[0].1, |p| p.0);
        self.state.workgroup_cap = chosen;
        Ok(Some(WorkgroupTiming { plans, chosen }))
    }

    /// Run the next [`PROFILED_STEPS`] steps of the schedule (steps of the run like any
    /// other) with each kernel's dispatches timed by GPU timestamps, and wait for them: the
    /// mean GPU time per step of each kernel. `None`, running nothing, without the
    /// `timestamps` feature or when fewer main steps are left.
    pub fn profile_kernels(&mut self) -> Result<Option<KernelTimes>, GpuTrainError> {
        if !self.ctx.granted.timestamps || self.main_steps_left() < PROFILED_STEPS {
            return Ok(None);
        }
        let mut profiler = GpuProfiler::new(&self.ctx);
        self.advance(PROFILED_STEPS, Some(&profiler))?;
        profiler.end_frame(&self.ctx);
        let rows = profiler.collect(&self.ctx);
        self.state.in_flight.clear();
        // The dispatches of a main step (the profiled steps are main steps): with lazy
        // latent Adam they include its catch-up.
        let kernels = self
            .step_dispatches(self.layout.param_count)
            .into_iter()
            .map(|(kernel, _, _)| (kernel, label_ms(&rows, kernel) / PROFILED_STEPS as f64))
            .collect();
        let times = KernelTimes { kernels };
        self.kernel_ms = Some(times.split());
        Ok(Some(times))
    }

    /// Run the next [`TIMED_STEPS`] steps with at most `groups` workgroups and wait for
    /// them: wall seconds per step.
    fn time_plan(&mut self, groups: u32) -> Result<f64, GpuTrainError> {
        self.state.workgroup_cap = groups;
        let start = Instant::now();
        self.step(TIMED_STEPS)?;
        self.ctx.wait_idle()?;
        self.state.in_flight.clear();
        Ok(start.elapsed().as_secs_f64() / TIMED_STEPS as f64)
    }

    /// One forward and backward pass over `batch` with the current parameters, read
    /// back: the mean loss and the gradients of the mean batch loss, as
    /// [`cpu::batch_gradients`](crate::ntc::train::cpu::batch_gradients) computes them, with QAT
    /// noise when `noise` is given. The gradients stay in the GPU buffer for
    /// [`apply_adam`](Self::apply_adam); [`step`](Self::step) clears them first. Blocks.
    pub fn gradients(
        &mut self,
        batch: &[Sample],
        noise: Option<QatNoise>,
    ) -> Result<(f64, Gradients), GpuTrainError> {
        self.sync_latents()?;
        if batch.len() > self.device.batch_capacity as usize {
            return Err(GpuTrainError::BatchTooLarge {
                len: batch.len(),
                capacity: self.device.batch_capacity,
            });
        }
        let encoded = batch
            .iter()
            .map(|&s| self.encode_sample(s))
            .collect::<Result<Vec<[u32; 2]>, _>>()?;
        let len = batch.len() as u32;
        let mixed = self.device.kernels.rows().is_some();
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
            .write_buffer(&self.device.buffers.step, 0, bytemuck::bytes_of(&params));
        if !encoded.is_empty() {
            self.ctx.queue.write_buffer(
                &self.device.buffers.batch,
                0,
                bytemuck::cast_slice(&encoded),
            );
        }
        self.submit(|encoder, trainer| {
            encoder.clear_buffer(&trainer.device.buffers.grads, 0, None);
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_bind_group(0, &trainer.device.bind_group, &[0]);
            let k = &trainer.device.kernels;
            match &k.step {
                StepKernels::F32 {
                    forward_backward,
                    reduce_loss,
                } => {
                    pass.set_pipeline(forward_backward);
                    dispatch(&mut pass, params.loss_groups, trainer.device.max_dispatch);
                    pass.set_pipeline(reduce_loss);
                }
                StepKernels::Mixed { train_step, .. } => {
                    pass.set_pipeline(train_step);
                    dispatch(&mut pass, params.loss_groups, trainer.device.max_dispatch);
                    // Adam with nothing to update: only its loss reduction runs.
                    pass.set_pipeline(&k.adam);
                }
            }
            pass.dispatch_workgroups(1, 1, 1);
        })?;
        self.state.grads_dirty = true;
        self.state.pending_batch = if mixed { len } else { 0 };
        let slot = 4 * u64::from(params.loss_slot);
        let loss = f32s(&read_buffer(
            &self.ctx,
            &self.device.buffers.losses,
            slot..slot + 4,
        )?);
        let raw = read_buffer(
            &self.ctx,
            &self.device.buffers.grads,
            0..4 * u64::from(self.layout.param_count),
        )?;
        let decoder_count = self.layout.decoder_count as usize;
        let mut values: Vec<f64> = raw
            .chunks_exact(4)
            .enumerate()
            .map(|(i, c)| {
                let bytes = [c[0], c[1], c[2], c[3]];
                if self.device.kernels.fixed_point {
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
                &self.device.buffers.dw_partials,
                0..4 * u64::from(params.loss_groups) * u64::from(self.layout.decoder_count),
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
        let mut latents = Vec::with_capacity(self.layout.layouts.len());
        for layout in &self.layout.layouts {
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
            &self.device.kernels.sample,
            self.device.batch_capacity.div_ceil(SAMPLE_WORKGROUP),
        )?;
        let bytes = read_buffer(
            &self.ctx,
            &self.device.buffers.batch,
            0..8 * u64::from(self.device.batch_capacity),
        )?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| {
                let entry = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                let texel = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
                let material = self
                    .layout
                    .entries
                    .get(entry as usize)
                    .map_or(u32::MAX, |e| e.material);
                let first = self
                    .layout
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
        self.sync_latents()?;
        // The decoder's gradients are those of the batch `gradients` ran (none after
        // they were applied once): its workgroups and its 1 / length.
        let pending = self.batch_params(self.state.pending_batch);
        let params = StepParams {
            partial_count: if self.state.pending_batch > 0 {
                pending.partial_count
            } else {
                0
            },
            inv_batch: pending.inv_batch,
            ..self.adam_params(lr_latents, lr_decoder)
        };
        self.run_kernel(
            &params,
            &self.device.kernels.adam,
            self.adam_groups(params.update_count, false),
        )?;
        self.state.pending_batch = 0;
        self.state.grads_dirty = lr_latents.is_none();
        Ok(())
    }

    /// The batch encoding of `sample`: `[entry, x | y << 16]`.
    fn encode_sample(&self, sample: Sample) -> Result<[u32; 2], TrainError> {
        let out_of_range = || TrainError::SampleOutOfRange(sample);
        let m = sample.material as usize;
        let first = *self
            .layout
            .material_entries
            .get(m)
            .ok_or_else(out_of_range)?;
        let mips = self.layout.layouts.get(m).ok_or_else(out_of_range)?.mips();
        if sample.mip as usize >= mips {
            return Err(out_of_range());
        }
        let index = first + sample.mip as usize;
        let entry = self.layout.entries.get(index).ok_or_else(out_of_range)?;
        if sample.x >= entry.width || sample.y >= entry.height {
            return Err(out_of_range());
        }
        Ok([index as u32, sample.x | (sample.y << 16)])
    }

    /// What every dispatch shares: sizes, seeds, Adam's constants; nothing to update, no
    /// noise, the spare loss slot.
    pub(super) fn base_params(&self) -> StepParams {
        let adam = &self.run.config.adam;
        StepParams {
            noise_seed: self.run.noise_seed,
            sample_seed: self.run.sample_seed,
            entry_count: self.layout.entries.len() as u32,
            total_texels: self.layout.total_texels,
            sample_tile: self.run.config.sample_tile,
            loss_slot: self.total_steps() as u32,
            decoder_count: self.layout.decoder_count,
            quant_step: quant::step(self.run.config.model.latent_bits),
            beta1: adam.beta1 as f32,
            beta2: adam.beta2 as f32,
            one_minus_beta1: (1.0 - adam.beta1) as f32,
            one_minus_beta2: (1.0 - adam.beta2) as f32,
            epsilon: adam.epsilon as f32,
            ..self.batch_params(self.device.batch_capacity)
        }
    }

    /// What depends on the batch's length: the length and its inverse, the workgroups
    /// whose loss sums are reduced and, for the mixed-precision trainer, the chunks per
    /// `train_step` workgroup and the workgroups whose decoder gradients Adam sums.
    fn batch_params(&self, batch: u32) -> StepParams {
        let (train_chunks, groups) = match self.device.kernels.rows() {
            Some(rows) => chunk_plan(batch, rows, self.state.workgroup_cap),
            None => (0, batch.div_ceil(self.device.kernels.workgroup)),
        };
        StepParams {
            batch_size: batch,
            inv_batch: (1.0 / f64::from(batch.max(1))) as f32,
            loss_groups: groups,
            train_chunks,
            partial_count: if self.device.kernels.rows().is_some() {
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
    /// With `lazy`, one per value of the texels a step can list ([`listed_values`](Self::listed_values)).
    fn adam_groups(&self, update_count: u32, lazy: bool) -> u32 {
        let decoder = update_count.min(self.layout.decoder_count);
        let latents = update_count - decoder;
        let latent_threads = if lazy {
            self.listed_values(latents)
        } else {
            latents
        };
        let decoder_per_group = match self.device.kernels.step {
            StepKernels::F32 { .. } => ADAM_WORKGROUP,
            StepKernels::Mixed { .. } => ADAM_DECODER_PER_GROUP,
        };
        (decoder.div_ceil(decoder_per_group) + latent_threads.div_ceil(ADAM_WORKGROUP)).max(1)
    }

    /// Lazy latent Adam: the values of the most latent texels a step can list, with
    /// `latents` latent values updated: at most every texel, and at most
    /// [`TAPS_PER_SAMPLE`] per sample of the batch (`adam`'s and `replay`'s threads).
    fn listed_values(&self, latents: u32) -> u32 {
        let features = self.run.config.model.features.max(1);
        let listed = u64::from(latents / features)
            .min(TAPS_PER_SAMPLE * u64::from(self.device.batch_capacity));
        (listed * u64::from(features)) as u32
    }

    /// Lazy latent Adam: bring every latent texel up to the current step (the end of the
    /// main phase once it is past), so that the latents can be read, snapped or stepped by
    /// [`apply_adam`](Self::apply_adam). Nothing to do for dense Adam or when they are.
    pub(super) fn sync_latents(&mut self) -> Result<(), GpuTrainError> {
        let Some(lazy) = &self.device.kernels.lazy else {
            return Ok(());
        };
        if !self.state.latents_behind {
            return Ok(());
        }
        let texels = self.layout.latent_texels(self.run.config.model.features);
        let params = StepParams {
            step: self.state.step.min(self.run.schedule.main_steps) as u32,
            update_count: self.layout.param_count,
            ..self.base_params()
        };
        self.run_kernel(&params, &lazy.catch_up_all, texels.div_ceil(ADAM_WORKGROUP))?;
        self.state.latents_behind = false;
        Ok(())
    }

    /// Workgroups of one step's `forward_backward` or `train_step` dispatch.
    pub(super) fn step_groups(&self) -> u32 {
        self.batch_params(self.device.batch_capacity).loss_groups
    }

    /// The Adam part of a step: advances the step counts (the latents' only when they
    /// are updated) and sets rates and bias corrections `1 − β^t` (computed in f64).
    fn adam_params(&mut self, lr_latents: Option<f64>, lr_decoder: f64) -> StepParams {
        self.state.decoder_t = self.state.decoder_t.saturating_add(1);
        if lr_latents.is_some() {
            self.state.latent_t = self.state.latent_t.saturating_add(1);
        }
        let adam = self.run.config.adam;
        let corrections = |t: u32| {
            let t = t.min(i32::MAX as u32) as i32;
            (
                (1.0 - adam.beta1.powi(t)) as f32,
                (1.0 - adam.beta2.powi(t)) as f32,
            )
        };
        let (bc1_decoder, bc2_decoder) = corrections(self.state.decoder_t);
        let (bc1_latents, bc2_latents) = corrections(self.state.latent_t);
        StepParams {
            update_count: if lr_latents.is_some() {
                self.layout.param_count
            } else {
                self.layout.decoder_count
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
        let flags = match (main, self.run.config.qat) {
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

    /// Record and submit `count` training steps from the current one: in one compute
    /// pass, or with `profiler` in one timed pass per kernel dispatch.
    fn run_chunk(
        &mut self,
        count: u64,
        profiler: Option<&GpuProfiler>,
    ) -> Result<(), GpuTrainError> {
        let stride = self.device.step_stride as usize;
        let size = std::mem::size_of::<StepParams>();
        let mut bytes = vec![0u8; count as usize * stride];
        let mut updates = Vec::with_capacity(count as usize);
        let mut rates = Vec::new();
        for i in 0..count {
            let step = self.state.step + i;
            let plan = self.run.schedule.plan(step).ok_or_else(|| {
                CheckpointError::Invalid(format!("step {step} is past the end of the run"))
            })?;
            let params = self.plan_params(step, &plan);
            let at = i as usize * stride;
            bytes[at..at + size].copy_from_slice(bytemuck::bytes_of(&params));
            updates.push(params.update_count);
            if params.update_count > self.layout.decoder_count {
                rates.push([
                    params.lr_latents,
                    params.bc1_latents,
                    params.bc2_latents,
                    0.0,
                ]);
            }
        }
        self.ctx
            .queue
            .write_buffer(&self.device.buffers.step, 0, &bytes);
        // Lazy latent Adam: the latents' rates of the chunk's main steps, which come first.
        if self.device.kernels.lazy.is_some() && !rates.is_empty() {
            self.ctx.queue.write_buffer(
                &self.device.buffers.latent_rates,
                16 * self.state.step,
                bytemuck::cast_slice(&rates),
            );
            self.state.latents_behind = true;
        }
        let index = self.submit(|encoder, trainer| {
            let max = trainer.device.max_dispatch;
            let bind_group = &trainer.device.bind_group;
            let offset = |i: usize| [(i * stride) as u32];
            match profiler {
                None => {
                    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some(Kernels::LABEL),
                        timestamp_writes: None,
                    });
                    for (i, &update) in updates.iter().enumerate() {
                        pass.set_bind_group(0, bind_group, &offset(i));
                        for (_, pipeline, groups) in trainer.step_dispatches(update) {
                            pass.set_pipeline(pipeline);
                            dispatch(&mut pass, groups, max);
                        }
                    }
                }
                Some(profiler) => {
                    let mut frame = FrameEncoder::new(&trainer.ctx, encoder, profiler);
                    for (i, &update) in updates.iter().enumerate() {
                        for (kernel, pipeline, groups) in trainer.step_dispatches(update) {
                            frame.compute_pass(kernel, |pass| {
                                pass.set_bind_group(0, bind_group, &offset(i));
                                pass.set_pipeline(pipeline);
                                dispatch(pass, groups, max);
                            });
                        }
                    }
                }
            }
        })?;
        self.state.step += count;
        self.state.in_flight.push_back(index);
        while self.state.in_flight.len() > MAX_IN_FLIGHT {
            if let Some(oldest) = self.state.in_flight.pop_front() {
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

    /// The dispatches of one step that updates `params[0 .. update]` with Adam, in order:
    /// each kernel's label (its timing row), pipeline and workgroups.
    fn step_dispatches(&self, update: u32) -> Vec<(&'static str, &wgpu::ComputePipeline, u32)> {
        let k = &self.device.kernels;
        let groups = self.step_groups();
        let adam = match &k.lazy {
            None => (ADAM_LABEL, &k.adam, self.adam_groups(update, false)),
            Some(lazy) => (ADAM_LABEL, &lazy.adam, self.adam_groups(update, true)),
        };
        // Lazy latent Adam: the texels the batch reads listed and brought up to the step
        // first.
        let catch_up = match &k.lazy {
            Some(lazy) if update > self.layout.decoder_count => {
                let taps = TAPS_PER_SAMPLE as u32 * self.device.batch_capacity;
                let values = self.listed_values(update - self.layout.decoder_count);
                vec![
                    (
                        CATCH_UP_LABEL,
                        &lazy.catch_up,
                        taps.div_ceil(ADAM_WORKGROUP),
                    ),
                    (
                        REPLAY_LABEL,
                        &lazy.replay,
                        values.div_ceil(ADAM_WORKGROUP).max(1),
                    ),
                ]
            }
            _ => Vec::new(),
        };
        let mut dispatches = Vec::with_capacity(6);
        match &k.step {
            StepKernels::F32 {
                forward_backward,
                reduce_loss,
            } => {
                dispatches.push((
                    "train.sample",
                    &k.sample,
                    self.device.batch_capacity.div_ceil(SAMPLE_WORKGROUP),
                ));
                dispatches.extend(catch_up);
                dispatches.push(("train.forward_backward", forward_backward, groups));
                dispatches.push(("train.reduce_loss", reduce_loss, 1));
            }
            StepKernels::Mixed { train_step, .. } => {
                dispatches.extend(catch_up);
                dispatches.push(("train.train_step", train_step, groups));
            }
        }
        dispatches.push(adam);
        dispatches
    }

    /// Write `params` to the step uniform and run `kernel` over `groups` workgroups in one
    /// submit (validation errors returned as values).
    pub(super) fn run_kernel(
        &self,
        params: &StepParams,
        kernel: &wgpu::ComputePipeline,
        groups: u32,
    ) -> Result<(), GpuTrainError> {
        self.ctx
            .queue
            .write_buffer(&self.device.buffers.step, 0, bytemuck::bytes_of(params));
        self.submit(|encoder, trainer| {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_bind_group(0, &trainer.device.bind_group, &[0]);
            pass.set_pipeline(kernel);
            dispatch(&mut pass, groups, trainer.device.max_dispatch);
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
        self.submit(|encoder, trainer| {
            encoder.clear_buffer(&trainer.device.buffers.grads, 0, None)
        })?;
        self.state.grads_dirty = false;
        Ok(())
    }

    /// The switch to fine-tuning: latents snapped to their levels (on the CPU, bit for
    /// bit [`quant::snap`]), decoder moments and step count reset.
    fn begin_finetune(&mut self) -> Result<(), GpuTrainError> {
        self.sync_latents()?;
        let latents =
            4 * u64::from(self.layout.decoder_count)..4 * u64::from(self.layout.param_count);
        let mut values = f32s(&read_buffer(
            &self.ctx,
            &self.device.buffers.params,
            latents.clone(),
        )?);
        self.state.in_flight.clear();
        quant::snap(&mut values, self.run.config.model.latent_bits);
        self.ctx.queue.write_buffer(
            &self.device.buffers.params,
            latents.start,
            bytemuck::cast_slice(&values),
        );
        let decoder_moments = 8 * u64::from(self.layout.decoder_count);
        self.submit(|encoder, trainer| {
            encoder.clear_buffer(&trainer.device.buffers.moments, 0, Some(decoder_moments));
        })?;
        self.state.decoder_t = 0;
        Ok(())
    }
}

/// Record a 1D grid of `groups` workgroups as a 2D dispatch (x first) within `max_x`.
fn dispatch(pass: &mut wgpu::ComputePass<'_>, groups: u32, max_x: u32) {
    if groups == 0 {
        return;
    }
    let x = groups.min(max_x.max(1));
    pass.dispatch_workgroups(x, groups.div_ceil(x), 1);
}
