//! What comes back from the GPU: the losses (asynchronously, a range at a time), the
//! model, the checkpoint, the quality of every material and the finished group.

use std::ops::Range;
use std::sync::mpsc;

use super::kernels::EVAL_WORKGROUPS;
use super::layout::StepParams;
use super::{GpuTrainError, GpuTrainer};
use crate::gpu::{GpuError, read_buffer};
use crate::ntc::model::{DecoderWeights, GroupModel, LatentPyramid};
use crate::ntc::quant;
use crate::ntc::train::checkpoint::{AdamMoments, Checkpoint};
use crate::ntc::train::cpu::AdamState;
use crate::ntc::train::{QUALITY_GROUPS, Quality, TrainError, TrainedGroup, TrainedMaterial, psnr};
use crate::texture::{CHANNELS, ChannelMask};

/// An asynchronous loss readback in flight.
pub(super) struct PendingLosses {
    /// First step of the range.
    first: u64,
    /// Steps in the range.
    count: u64,
    staging: wgpu::Buffer,
    done: mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
}

/// The losses read back so far and the readback in flight.
pub(super) struct LossReadback {
    /// Losses read back so far (steps `0 .. losses.len()`).
    pub(super) losses: Vec<f64>,
    pub(super) pending: Option<PendingLosses>,
}

impl LossReadback {
    /// Nothing in flight, `losses` (those of a checkpoint) already read.
    pub(super) fn new(losses: Vec<f64>) -> Self {
        LossReadback {
            losses,
            pending: None,
        }
    }
}

impl GpuTrainer {
    /// Start copying the losses of the steps run since the last readback to the CPU,
    /// unless a readback is in flight or there is nothing new; true when one started.
    /// Never waits: [`poll_losses`](Self::poll_losses) collects the result.
    pub fn request_losses(&mut self) -> Result<bool, GpuTrainError> {
        let first = self.readback.losses.len() as u64;
        if self.readback.pending.is_some() || first >= self.state.step {
            return Ok(false);
        }
        let count = self.state.step - first;
        let device = &self.ctx.device;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("ntc.train.losses readback"),
            size: 4 * count,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(
            &self.device.buffers.losses,
            4 * first,
            &staging,
            0,
            4 * count,
        );
        self.ctx.queue.submit([encoder.finish()]);
        let (sender, done) = mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |result| {
            // A send error means the trainer is gone and nobody waits for the losses.
            let _ = sender.send(result);
        });
        self.readback.pending = Some(PendingLosses {
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
        self.collect_losses(false)
    }

    /// Collect the pending loss readback into [`losses`](Self::losses): with `wait`, once
    /// the device is idle and its map callback has run
    /// ([`crate::gpu::readback::receive_mapped`]), else only if it already has.
    fn collect_losses(&mut self, wait: bool) -> Result<Option<Range<u64>>, GpuTrainError> {
        let ready = match &self.readback.pending {
            None => return Ok(None),
            Some(pending) => {
                match crate::gpu::readback::receive_mapped(
                    &pending.done,
                    wait.then_some(&self.ctx),
                )? {
                    Ok(result) => result,
                    Err(mpsc::TryRecvError::Empty) => return Ok(None),
                    Err(mpsc::TryRecvError::Disconnected) => {
                        return Err(
                            GpuError::Readback("loss map callback was dropped".into()).into()
                        );
                    }
                }
            }
        };
        ready.map_err(|e| GpuError::Readback(format!("mapping the losses failed: {e}")))?;
        let Some(pending) = self.readback.pending.take() else {
            return Ok(None);
        };
        let values = f32s(
            &pending
                .staging
                .get_mapped_range(..)
                .map_err(|e| GpuError::Readback(format!("mapped losses: {e}")))?,
        );
        pending.staging.unmap();
        self.readback
            .losses
            .extend(values.iter().map(|&v| f64::from(v)));
        Ok(Some(pending.first..pending.first + pending.count))
    }

    /// Read back every outstanding loss (blocking).
    pub(super) fn sync_losses(&mut self) -> Result<(), GpuTrainError> {
        for _ in 0..2 {
            if self.readback.pending.is_none() && !self.request_losses()? {
                continue;
            }
            self.collect_losses(true)?;
        }
        if (self.readback.losses.len() as u64) < self.state.step {
            return Err(GpuError::Readback(format!(
                "losses of steps {}..{} did not arrive",
                self.readback.losses.len(),
                self.state.step
            ))
            .into());
        }
        Ok(())
    }

    /// The current model (blocking readback of the parameters).
    pub fn download(&mut self) -> Result<GroupModel, GpuTrainError> {
        self.sync_latents()?;
        let bytes = read_buffer(
            &self.ctx,
            &self.device.buffers.params,
            0..4 * u64::from(self.layout.param_count),
        )?;
        let params = f32s(&bytes);
        let (decoder, mut rest) =
            params.split_at((self.layout.decoder_count as usize).min(params.len()));
        let decoder = DecoderWeights::from_params(&self.run.config.model, decoder.to_vec())
            .map_err(TrainError::from)?;
        let mut pyramids = Vec::with_capacity(self.layout.layouts.len());
        for layout in &self.layout.layouts {
            let (values, tail) = rest.split_at(layout.value_count().min(rest.len()));
            pyramids.push(
                LatentPyramid::new(layout.clone(), values.to_vec()).map_err(TrainError::from)?,
            );
            rest = tail;
        }
        Ok(
            GroupModel::from_parts(self.run.config.model.clone(), decoder, pyramids)
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
            &self.device.buffers.moments,
            0..8 * u64::from(self.layout.param_count),
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
        let mut start = self.layout.decoder_count as usize;
        let decoder = state(0..start, self.state.decoder_t);
        let latents = self
            .layout
            .layouts
            .iter()
            .map(|layout| {
                let range = start..start + layout.value_count();
                start = range.end;
                state(range, self.state.latent_t)
            })
            .collect();
        Ok(Checkpoint {
            config: self.run.config.clone(),
            steps: self.run.steps,
            seed: self.run.seed,
            step: self.state.step,
            model,
            adam: AdamMoments { decoder, latents },
            losses: self.readback.losses.clone(),
        })
    }

    /// The quality of every material's mip 0 decoded with the current parameters (no
    /// noise), measured on the GPU as [`Quality::measure`] measures it (outputs clamped
    /// to \[0, 1\]). Squared errors are summed in f32 per thread and workgroup, then in
    /// f64. Blocks once per material.
    pub fn evaluate(&mut self) -> Result<Vec<Quality>, GpuTrainError> {
        self.sync_latents()?;
        let mut qualities = Vec::with_capacity(self.layout.material_entries.len());
        for m in 0..self.layout.material_entries.len() {
            let first = self.layout.material_entries[m];
            let entry = self.layout.entries[first];
            let texels = entry.width * entry.height;
            let groups = texels
                .div_ceil(self.device.kernels.workgroup)
                .min(EVAL_WORKGROUPS);
            let params = StepParams {
                eval_entry: first as u32,
                ..self.base_params()
            };
            self.run_kernel(&params, &self.device.kernels.evaluate, groups)?;
            let sums = f32s(&read_buffer(
                &self.ctx,
                &self.device.buffers.partials,
                0..4 * u64::from(groups) * CHANNELS as u64,
            )?);
            let mut errors = [0.0f64; CHANNELS];
            for (i, &v) in sums.iter().enumerate() {
                errors[i % CHANNELS] += f64::from(v);
            }
            let present = self
                .layout
                .materials
                .get(m)
                .map_or(ChannelMask::NONE, |(_, p)| *p);
            qualities.push(quality_from_errors(&errors, u64::from(texels), present));
        }
        Ok(qualities)
    }

    /// End the run as `train_cpu` does (an error when a loss is not finite: the run
    /// diverged): every loss read back, the latents snapped to
    /// their quantisation levels (a no-op after fine-tuning), the decoder rounded through
    /// f16 and uploaded, quality measured with [`evaluate`](Self::evaluate).
    pub fn finish(&mut self) -> Result<TrainedGroup, GpuTrainError> {
        self.sync_losses()?;
        if let Some(step) = self.readback.losses.iter().position(|l| !l.is_finite()) {
            return Err(GpuTrainError::Diverged { step: step as u64 });
        }
        let mut model = self.download()?;
        for pyramid in model.pyramids_mut() {
            quant::snap(pyramid.values_mut(), self.run.config.model.latent_bits);
        }
        quant::round_through_f16(model.decoder_mut().params_mut()).map_err(TrainError::from)?;
        let mut params = model.decoder().params().to_vec();
        for pyramid in model.pyramids() {
            params.extend_from_slice(pyramid.values());
        }
        self.ctx.queue.write_buffer(
            &self.device.buffers.params,
            0,
            bytemuck::cast_slice(&params),
        );
        let quality = self.evaluate()?;
        let materials = self
            .layout
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
            losses: self.readback.losses.clone(),
        })
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

/// Little-endian f32 bytes as values.
pub(super) fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
