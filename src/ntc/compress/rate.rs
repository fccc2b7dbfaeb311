//! Rate control: which preset each group is trained at ([`RateControl`]), the short
//! probes that predict the smallest preset reaching the targets, and the tries each set
//! records.

use std::sync::atomic::AtomicBool;

use serde::Serialize;

use super::CompressError;
use super::group::GroupRun;
use crate::gpu::GpuContext;
use crate::ntc::model::Preset;
use crate::ntc::train::TrainedGroup;
use crate::ntc::train::gpu::{GpuTrainError, GpuTrainerOptions, TrainOptions};
use crate::texture::TextureSet;
use crate::texture::metrics::Psnr;

/// A BCn baseline to match ([`RateControl::MatchBcn`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum BcnTarget {
    /// BC1 colour (BC3 with alpha), BC5 normals, BC1 ORM and emissive (4–8 bpt per
    /// texture).
    Bc1,
    /// BC7 colour, BC5 normals, BC7 ORM and emissive (8 bpt per texture).
    Bc7,
}

impl BcnTarget {
    /// Index of this baseline in [`bcn_baselines`](crate::texture::bcn::bcn_baselines)' list.
    pub(super) fn index(self) -> usize {
        match self {
            BcnTarget::Bc1 => 0,
            BcnTarget::Bc7 => 1,
        }
    }
}

/// How a group's latent resolution (preset) is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RateControl {
    /// The recipe's preset ([`TrainConfig::model`](crate::ntc::train::TrainConfig::model)) for every group.
    Fixed,
    /// The smallest preset at which every set of the group reaches this pooled PSNR (dB,
    /// mip 0, all present channels); the largest preset when none does.
    TargetPsnr(f64),
    /// The smallest preset at which every set of the group reaches the pooled PSNR of its
    /// own BCn baseline; the largest when none does.
    MatchBcn(BcnTarget),
}

impl RateControl {
    /// The presets to try, in order.
    pub(super) fn presets(self, fixed: Preset) -> Vec<Preset> {
        match self {
            RateControl::Fixed => vec![fixed],
            RateControl::TargetPsnr(_) | RateControl::MatchBcn(_) => Preset::ALL.to_vec(),
        }
    }
}

/// One try of rate control for one set: the preset, the main steps (a probe's fraction
/// or the full budget) and the pooled PSNR it reached.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RateTry {
    /// The preset tried.
    pub preset: Preset,
    /// Its main steps.
    pub steps: u64,
    /// Pooled PSNR of mip 0 at that preset (dB; `None` when nothing was measured).
    pub psnr_pooled: Option<Psnr>,
}

/// Rate control's probes train `1 / PROBE_DIVISOR` of the main steps.
pub const PROBE_DIVISOR: u64 = 16;

/// Record one try of `trained` (at `preset`, `steps` main steps) in each member's
/// `tries` (under rate control), and return each member's margin to its target in dB
/// (pooled PSNR − target; +∞ without a target, −∞ when nothing was measured).
pub(super) fn record_tries(
    trained: &TrainedGroup,
    preset: Preset,
    steps: u64,
    rate: RateControl,
    targets: &[Option<f64>],
    tries: &mut [Vec<RateTry>],
) -> Vec<f64> {
    trained
        .materials
        .iter()
        .zip(targets)
        .zip(tries.iter_mut())
        .map(|((m, target), tried)| {
            let pooled = m.quality.pooled();
            if rate != RateControl::Fixed {
                tried.push(RateTry {
                    preset,
                    steps,
                    psnr_pooled: pooled,
                });
            }
            match (target, pooled) {
                (None, _) => f64::INFINITY,
                (Some(t), Some(p)) => p.db - t,
                (Some(_), None) => f64::NEG_INFINITY,
            }
        })
        .collect()
}

impl GroupRun<'_> {
    /// Rate control's prediction: each preset in turn (smallest first) trains a probe of
    /// `steps / PROBE_DIVISOR` main steps; the smallest preset also one of half that, and
    /// the PSNR gained by that doubling, per member, extends the probe's PSNR over the
    /// doublings left to `steps` (PSNR grows about linearly in the logarithm of the
    /// budget). Returns the index of the first preset at which every member's predicted
    /// PSNR reaches its target (the last when none does); probing stops there. An
    /// interrupted probe is not kept: a resumed run probes again.
    #[expect(
        clippy::too_many_arguments,
        reason = "one probe's group, presets, budget and targets, each a separate input"
    )]
    pub(super) fn probe(
        &self,
        ctx: &GpuContext,
        sets: &[TextureSet],
        g: usize,
        presets: &[Preset],
        steps: u64,
        seed: u64,
        stop: &AtomicBool,
        targets: &[Option<f64>],
        tries: &mut [Vec<RateTry>],
    ) -> Result<usize, CompressError> {
        let short = (steps / PROBE_DIVISOR).max(2);
        let doublings = (steps as f64 / short as f64).log2().max(0.0);
        let run = |preset, probe_steps| {
            let options = TrainOptions {
                log_every: self.opts.log_every,
                cancel: Some(stop),
                resume: None,
                gpu: GpuTrainerOptions {
                    kernel: self.opts.kernel,
                    latent_adam: self.opts.latent_adam,
                    ..GpuTrainerOptions::default()
                },
            };
            match self.train(
                ctx,
                sets,
                g,
                preset,
                probe_steps,
                seed,
                options,
                &mut |_| {},
            ) {
                Ok(t) => Ok(t),
                Err(GpuTrainError::Cancelled(_)) => Err(CompressError::Interrupted {
                    partial: self.partial.to_path_buf(),
                }),
                Err(e) => Err(e.into()),
            }
        };
        let mut gains: Option<Vec<f64>> = None;
        for (i, &preset) in presets.iter().enumerate() {
            let trained = run(preset, short)?;
            let margins = record_tries(&trained, preset, short, self.opts.rate, targets, tries);
            if gains.is_none() {
                let half = run(preset, (short / 2).max(1))?;
                gains = Some(
                    trained
                        .materials
                        .iter()
                        .zip(&half.materials)
                        .map(|(a, b)| match (a.quality.pooled(), b.quality.pooled()) {
                            (Some(a), Some(b)) => (a.db - b.db).max(0.0),
                            _ => 0.0,
                        })
                        .collect(),
                );
            }
            let predicted_reach = margins
                .iter()
                .zip(gains.iter().flatten())
                .all(|(margin, gain)| margin + gain * doublings >= 0.0);
            if predicted_reach {
                return Ok(i);
            }
        }
        Ok(presets.len().saturating_sub(1))
    }
}
