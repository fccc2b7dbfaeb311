//! One group's training: read back finished from the partial folder, or trained at the
//! preset rate control picks (continuing its checkpoint when resuming) and sealed there.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::partial::group_seal;
use super::rate::{RateTry, record_tries};
use super::report::GroupReport;
use super::{CompressError, CompressOptions, group_main_steps, write_file};
use crate::gpu::GpuContext;
use crate::ntc::format::NtcPackage;
use crate::ntc::model::{LatentLayout, Preset};
use crate::ntc::train::checkpoint::{Checkpoint, CheckpointError};
use crate::ntc::train::gpu::{
    GpuTrainError, GpuTrainerOptions, TrainKernel, TrainOptions, TrainProgress, train_gpu,
};
use crate::ntc::train::{LossWeights, TrainedGroup};
use crate::texture::{CHANNELS, TextureSet};

/// The preset whose standard layouts `layout` has (for groups resumed finished), else
/// `fallback`.
pub(super) fn preset_of(layout: &LatentLayout, fallback: Preset) -> Preset {
    Preset::ALL
        .into_iter()
        .find(|&p| {
            LatentLayout::new(
                layout.width(),
                layout.height(),
                layout.mips(),
                p,
                layout.features(),
            )
            .is_ok_and(|l| l == *layout)
        })
        .unwrap_or(fallback)
}

/// A finished training try of one group.
struct GroupTry {
    trained: TrainedGroup,
    preset: Preset,
    rates: Vec<f64>,
    last: Option<TrainProgress>,
    curves: Vec<(usize, u64, f64, f64)>,
}

/// One finished group: its package (one decoder), its report line, the rate-control
/// tries of each member (in member order) and its loss curve.
pub(super) struct GroupDone {
    pub(super) package: NtcPackage,
    pub(super) report: GroupReport,
    pub(super) tries: Vec<Vec<RateTry>>,
    pub(super) curves: Vec<(usize, u64, f64, f64)>,
}

/// What every group's training shares: the run's inputs, settings and partial folder.
pub(super) struct GroupRun<'a> {
    pub(super) sets: &'a [TextureSet],
    pub(super) constants: &'a [[f32; CHANNELS]],
    pub(super) groups: &'a [Vec<usize>],
    pub(super) opts: &'a CompressOptions,
    pub(super) partial: &'a Path,
    pub(super) resuming: bool,
    /// BLAKE3 of the partial folder's manifest: the key of every finished group's seal
    /// ([`group_seal`]).
    pub(super) owner: [u8; 32],
    /// Rate control's pooled PSNR target per set.
    pub(super) targets: &'a [Option<f64>],
    /// The loss weights of each group.
    pub(super) weights: &'a [LossWeights],
    /// Training FLOPs per sample of the recipe's decoder.
    pub(super) flops: f64,
}

impl GroupRun<'_> {
    /// Group `g` on `device` (`ctx`): read back finished from the partial folder, or
    /// trained (continuing its checkpoint when resuming) and saved there. `stop` ends the
    /// training at its next chunk with the checkpoint saved.
    pub(super) fn group(
        &self,
        device: usize,
        ctx: &GpuContext,
        g: usize,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(&TrainProgress),
    ) -> Result<GroupDone, CompressError> {
        let opts = self.opts;
        let members = &self.groups[g];
        let done = self.partial.join(format!("group{g}.ntc"));
        let ckpt = self.partial.join(format!("group{g}.ckpt"));
        let steps = group_main_steps(opts.steps, members.len());
        let seal = self.partial.join(format!("group{g}.seal"));
        // The seal is written before the package, so a finished group always has one
        // (a kill in between leaves a seal alone, and the group is trained again).
        if self.resuming && done.exists() {
            let io = |path: &Path| {
                let path = path.to_path_buf();
                move |source| CompressError::Io { path, source }
            };
            let bytes = std::fs::read(&done).map_err(io(&done))?;
            let sealed = match std::fs::read_to_string(&seal) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => return Err(io(&seal)(e)),
            };
            if sealed.trim() != group_seal(&self.owner, g, &bytes) {
                return Err(CompressError::ForeignGroup {
                    path: done,
                    reason: format!(
                        "it is not group {g} as this run wrote it ({} is missing or does not \
                         match)",
                        seal.display()
                    ),
                });
            }
            let finished =
                NtcPackage::from_bytes(&bytes).map_err(|source| CompressError::Partial {
                    path: done.clone(),
                    source,
                })?;
            if finished.decoders.len() != 1 || finished.materials.len() != members.len() {
                return Err(CompressError::ForeignGroup {
                    path: done,
                    reason: format!(
                        "{} decoders and {} materials for a group of {} sets",
                        finished.decoders.len(),
                        finished.materials.len(),
                        members.len()
                    ),
                });
            }
            let preset = finished
                .materials
                .first()
                .map_or(opts.train.model.preset, |m| {
                    preset_of(&m.layout, opts.train.model.preset)
                });
            return Ok(GroupDone {
                package: finished,
                report: GroupReport {
                    sets: members.clone(),
                    steps,
                    preset,
                    loss_weights: self.weights[g],
                    kernel: None,
                    device: None,
                    seconds: None,
                    texels_per_second: None,
                    tflops: None,
                    final_loss: f64::NAN,
                    train_workgroups: None,
                    latent_adam: None,
                    kernel_ms: None,
                },
                tries: vec![Vec::new(); members.len()],
                curves: Vec::new(),
            });
        }
        if opts.start_by.is_some_and(|t| Instant::now() >= t) {
            return Err(CompressError::Interrupted {
                partial: self.partial.to_path_buf(),
            });
        }
        let group_sets: Vec<TextureSet> = members.iter().map(|&i| self.sets[i].clone()).collect();
        let seed = opts.seed.wrapping_add(g as u64);
        let mut presets = opts.rate.presets(opts.train.model.preset);
        let mut resume = if self.resuming && ckpt.exists() {
            let checkpoint = Checkpoint::load(&ckpt)?;
            // An interrupted try resumes where rate control was: its smaller presets had
            // missed the target.
            let at = presets
                .iter()
                .position(|&p| p == checkpoint.config.model.preset)
                .ok_or_else(|| CheckpointError::File {
                    path: ckpt.clone(),
                    reason: format!(
                        "it was trained at preset {:?}, which this run does not try",
                        checkpoint.config.model.preset
                    ),
                })?;
            let mut train = opts.train.clone();
            train.model.preset = presets[at];
            train.loss_weights = self.weights[g];
            checkpoint
                .fits(&train, steps, seed)
                .map_err(|reason| CheckpointError::File {
                    path: ckpt.clone(),
                    reason,
                })?;
            presets.drain(..at);
            Some(checkpoint)
        } else {
            None
        };
        let t0 = Instant::now();
        let targets: Vec<Option<f64>> = members.iter().map(|&s| self.targets[s]).collect();
        let mut tries = vec![Vec::new(); members.len()];
        // Rate control: short probes predict the smallest preset that reaches the
        // targets, so that usually one full training follows (a resumed full try skips
        // them).
        if presets.len() > 1 && resume.is_none() {
            let at = self.probe(
                ctx,
                &group_sets,
                g,
                &presets,
                steps,
                seed,
                stop,
                &targets,
                &mut tries,
            )?;
            presets.drain(..at);
        }
        let mut kept = None;
        for (i, &preset) in presets.iter().enumerate() {
            let mut rates = Vec::new();
            let mut last = None;
            let mut try_curves = Vec::new();
            let result = self.train(
                ctx,
                &group_sets,
                g,
                preset,
                steps,
                seed,
                TrainOptions {
                    log_every: opts.log_every,
                    cancel: Some(stop),
                    resume: resume.take(),
                    gpu: GpuTrainerOptions {
                        kernel: opts.kernel,
                        latent_adam: opts.latent_adam,
                        ..GpuTrainerOptions::default()
                    },
                },
                &mut |p| {
                    try_curves.push((g, p.step, p.loss, p.psnr_estimate));
                    if p.texels_per_second.is_finite() && p.texels_per_second > 0.0 {
                        rates.push(p.texels_per_second);
                    }
                    last = Some(*p);
                    progress(p);
                },
            );
            let trained = match result {
                Ok(t) => t,
                Err(GpuTrainError::Cancelled(checkpoint)) => {
                    checkpoint.save(&ckpt)?;
                    return Err(CompressError::Interrupted {
                        partial: self.partial.to_path_buf(),
                    });
                }
                Err(source @ GpuTrainError::Diverged { .. }) => {
                    return Err(CompressError::Group {
                        group: g,
                        sets: crate::ntc::shard::capped_list(
                            members.iter().map(|&i| self.sets[i].name.clone()),
                            ", ",
                            "sets",
                        ),
                        source,
                    });
                }
                Err(e) => return Err(e.into()),
            };
            let reached = record_tries(&trained, preset, steps, opts.rate, &targets, &mut tries)
                .iter()
                .all(|r| *r >= 0.0);
            if reached || i + 1 == presets.len() {
                kept = Some(GroupTry {
                    trained,
                    preset,
                    rates,
                    last,
                    curves: try_curves,
                });
                break;
            }
        }
        let Some(kept) = kept else {
            return Err(CompressError::Groups(format!(
                "group {g}: rate control has no preset to try"
            )));
        };
        let mut train = opts.train.clone();
        train.model.preset = kept.preset;
        train.loss_weights = self.weights[g];
        let mut one = NtcPackage::new(train.model.clone())?;
        let group_constants: Vec<[f32; CHANNELS]> =
            members.iter().map(|&i| self.constants[i]).collect();
        one.add_group(&kept.trained, &group_constants)?;
        let bytes = one.to_bytes()?;
        write_file(&seal, group_seal(&self.owner, g, &bytes).as_bytes())?;
        write_file(&done, &bytes)?;
        let _ = std::fs::remove_file(&ckpt);
        let texels_per_second = (!kept.rates.is_empty())
            .then(|| kept.rates.iter().sum::<f64>() / kept.rates.len() as f64);
        Ok(GroupDone {
            package: one,
            report: GroupReport {
                sets: members.clone(),
                steps,
                preset: kept.preset,
                loss_weights: self.weights[g],
                kernel: Some(
                    opts.kernel
                        .unwrap_or_else(|| TrainKernel::best(ctx, &train.model)),
                ),
                device: Some(device),
                seconds: Some(t0.elapsed().as_secs_f64()),
                texels_per_second,
                tflops: texels_per_second.map(|t| t * self.flops / 1e12),
                final_loss: kept.last.map_or(f64::NAN, |p| p.loss),
                train_workgroups: kept.last.and_then(|p| p.train_workgroups),
                latent_adam: kept.last.map(|p| p.latent_adam),
                kernel_ms: kept.last.and_then(|p| p.kernel_ms),
            },
            tries,
            curves: kept.curves,
        })
    }
}

impl GroupRun<'_> {
    /// Train group `g` (`sets`) at `preset` for `steps` main steps with the run's recipe
    /// and the group's loss weights.
    #[expect(
        clippy::too_many_arguments,
        reason = "the trainer's own arguments plus the group, preset and budget it trains at"
    )]
    pub(super) fn train(
        &self,
        ctx: &GpuContext,
        sets: &[TextureSet],
        g: usize,
        preset: Preset,
        steps: u64,
        seed: u64,
        options: TrainOptions,
        progress: &mut dyn FnMut(&TrainProgress),
    ) -> Result<TrainedGroup, GpuTrainError> {
        let mut train = self.opts.train.clone();
        train.model.preset = preset;
        train.loss_weights = self.weights[g];
        train_gpu(ctx, sets, &train, steps, seed, options, progress)
    }
}
