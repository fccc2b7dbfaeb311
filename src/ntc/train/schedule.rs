//! Training schedules, shared by the CPU reference and the GPU trainer: the paper's
//! gradual decoder freezing (Algorithm 1), cosine learning-rate decay, and the two
//! phases of a run.
//!
//! A run has `main_steps` steps of joint training (latents with QAT noise and the
//! decoder, the decoder's update scaled by the freezing factor λ) followed by
//! `finetune_steps` (≈ 5 % of the main steps) in which the latents are quantised and
//! frozen and only the decoder learns, on the quantised latents, without noise.
//! [`Schedule::plan`] says, for every global step, the phase and both learning rates.

use serde::{Deserialize, Serialize};

/// Algorithm 1 of the shared-decoder paper, literally: the factor that scales the
/// decoder's update at `epoch`. 1 before `freeze_start` (or always when it is `None`),
/// 0 from `freeze_start + duration` on, and `½(1 + cos(π · (epoch − start) / duration))`
/// in between. A zero `duration` freezes abruptly at `freeze_start`.
pub fn freeze_scale(epoch: f64, freeze_start: Option<f64>, duration: f64) -> f64 {
    match freeze_start {
        None => 1.0,
        Some(start) if epoch < start => 1.0,
        Some(start) if epoch >= start + duration => 0.0,
        Some(start) => {
            let progress = (epoch - start) / duration;
            0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
        }
    }
}

/// Gradual decoder freezing in fractions of the main phase: λ falls from 1 at
/// `start_fraction · total` to 0 at `(start_fraction + duration_fraction) · total`.
/// Defaults: start at 50 % (the paper's best freezing point), over 25 %.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FreezeSchedule {
    /// Where freezing starts, as a fraction of the main steps (default 0.5).
    pub start_fraction: f64,
    /// How long λ takes to fall from 1 to 0, as a fraction of the main steps (default
    /// 0.25).
    pub duration_fraction: f64,
}

impl Default for FreezeSchedule {
    fn default() -> Self {
        FreezeSchedule {
            start_fraction: 0.5,
            duration_fraction: 0.25,
        }
    }
}

impl FreezeSchedule {
    /// True when both fractions are finite and in \[0, 1\].
    pub fn is_valid(&self) -> bool {
        [self.start_fraction, self.duration_fraction]
            .iter()
            .all(|f| (0.0..=1.0).contains(f))
    }

    /// λ at `step` of `total_steps`: [`freeze_scale`] with `e_start = start_fraction ·
    /// total_steps` and `T = duration_fraction · total_steps`, i.e.
    /// `λ = ½(1 + cos(π·p))`, `p = clamp((step − e_start) / T, 0, 1)`.
    pub fn lambda(&self, step: u64, total_steps: u64) -> f64 {
        let total = total_steps as f64;
        freeze_scale(
            step as f64,
            Some(self.start_fraction * total),
            self.duration_fraction * total,
        )
    }
}

/// Cosine decay from 1 at step 0 to 0 at `total`: `½(1 + cos(π · min(step, total) /
/// total))`; 1 when `total` is 0.
pub fn cosine_decay(step: u64, total: u64) -> f64 {
    if total == 0 {
        return 1.0;
    }
    let t = step.min(total) as f64 / total as f64;
    0.5 * (1.0 + (std::f64::consts::PI * t).cos())
}

/// Steps of the fine-tuning phase: `⌈main_steps · fraction⌉` (0 for a non-positive or
/// non-finite fraction).
pub fn finetune_steps(main_steps: u64, fraction: f64) -> u64 {
    if fraction.is_finite() && fraction > 0.0 {
        (main_steps as f64 * fraction).ceil() as u64
    } else {
        0
    }
}

/// The phase a step belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Joint training of latents (with QAT noise) and decoder.
    Main,
    /// Latents quantised and frozen; only the decoder learns.
    FineTune,
}

/// What one step does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepPlan {
    /// The phase.
    pub phase: Phase,
    /// The step's index within its phase.
    pub phase_step: u64,
    /// Learning rate of the latents (0 in the fine-tuning phase).
    pub lr_latents: f64,
    /// Learning rate of the decoder, the freezing factor included.
    pub lr_decoder: f64,
    /// The freezing factor λ (1 in the fine-tuning phase).
    pub lambda: f64,
}

/// The learning-rate and freezing plan of a whole run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// Steps of joint training.
    pub main_steps: u64,
    /// Steps of decoder fine-tuning on quantised latents.
    pub finetune_steps: u64,
    /// Initial latent learning rate.
    pub lr_latents: f64,
    /// Initial decoder learning rate.
    pub lr_decoder: f64,
    /// Decoder learning rate of the fine-tuning phase, relative to `lr_decoder`.
    pub finetune_lr_scale: f64,
    /// Gradual decoder freezing, `None` for none (λ ≡ 1).
    pub freeze: Option<FreezeSchedule>,
}

impl Schedule {
    /// All steps of the run.
    pub fn total_steps(&self) -> u64 {
        self.main_steps.saturating_add(self.finetune_steps)
    }

    /// The plan of global step `step`, `None` past the end. Main phase: both rates decay
    /// with [`cosine_decay`] over the main steps and the decoder's is also scaled by λ.
    /// Fine-tuning: latents frozen, the decoder's rate `lr_decoder · finetune_lr_scale`
    /// decays with its own cosine over the fine-tuning steps.
    pub fn plan(&self, step: u64) -> Option<StepPlan> {
        if step < self.main_steps {
            let decay = cosine_decay(step, self.main_steps);
            let lambda = self.freeze.map_or(1.0, |f| f.lambda(step, self.main_steps));
            Some(StepPlan {
                phase: Phase::Main,
                phase_step: step,
                lr_latents: self.lr_latents * decay,
                lr_decoder: self.lr_decoder * decay * lambda,
                lambda,
            })
        } else if step < self.total_steps() {
            let t = step - self.main_steps;
            Some(StepPlan {
                phase: Phase::FineTune,
                phase_step: t,
                lr_latents: 0.0,
                lr_decoder: self.lr_decoder
                    * self.finetune_lr_scale
                    * cosine_decay(t, self.finetune_steps),
                lambda: 1.0,
            })
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn algorithm_1_endpoints_midpoint_and_clamping() {
        // Start 100, duration 50.
        let s = Some(100.0);
        assert_eq!(freeze_scale(0.0, s, 50.0), 1.0);
        assert_eq!(freeze_scale(99.999, s, 50.0), 1.0);
        assert!(close(freeze_scale(100.0, s, 50.0), 1.0));
        assert!(close(freeze_scale(125.0, s, 50.0), 0.5));
        let quarter = 0.5 * (1.0 + (std::f64::consts::FRAC_PI_4).cos());
        assert!(close(freeze_scale(112.5, s, 50.0), quarter));
        assert_eq!(freeze_scale(150.0, s, 50.0), 0.0);
        assert_eq!(freeze_scale(1e9, s, 50.0), 0.0);
        // No freezing at all.
        assert_eq!(freeze_scale(1e9, None, 50.0), 1.0);
        // Zero duration: an abrupt freeze, no division by zero.
        assert_eq!(freeze_scale(99.0, s, 0.0), 1.0);
        assert_eq!(freeze_scale(100.0, s, 0.0), 0.0);
        // Monotone non-increasing.
        let mut last = 1.0;
        for e in 0..200 {
            let l = freeze_scale(e as f64, s, 50.0);
            assert!(l <= last && (0.0..=1.0).contains(&l));
            last = l;
        }
    }

    #[test]
    fn lambda_matches_the_closed_form() {
        let f = FreezeSchedule::default();
        let total = 1000;
        for step in (0..=1200).step_by(7) {
            let p = ((step as f64 - 500.0) / 250.0).clamp(0.0, 1.0);
            let expected = 0.5 * (1.0 + (std::f64::consts::PI * p).cos());
            assert!(close(f.lambda(step, total), expected), "step {step}");
        }
        assert_eq!(f.lambda(500, total), 1.0);
        assert!(close(f.lambda(625, total), 0.5));
        assert_eq!(f.lambda(750, total), 0.0);
        assert!(f.is_valid());
        assert!(
            !FreezeSchedule {
                start_fraction: 1.5,
                duration_fraction: 0.1
            }
            .is_valid()
        );
    }

    #[test]
    fn cosine_decay_and_finetune_length() {
        assert_eq!(cosine_decay(0, 100), 1.0);
        assert!(close(cosine_decay(50, 100), 0.5));
        assert!(close(cosine_decay(100, 100), 0.0));
        assert!(close(cosine_decay(150, 100), 0.0));
        assert_eq!(cosine_decay(3, 0), 1.0);
        assert_eq!(finetune_steps(1000, 0.05), 50);
        assert_eq!(finetune_steps(10, 0.05), 1);
        assert_eq!(finetune_steps(10, 0.0), 0);
        assert_eq!(finetune_steps(10, f64::NAN), 0);
    }

    #[test]
    fn plan_walks_both_phases() {
        let s = Schedule {
            main_steps: 100,
            finetune_steps: 5,
            lr_latents: 0.01,
            lr_decoder: 0.005,
            finetune_lr_scale: 0.1,
            freeze: Some(FreezeSchedule::default()),
        };
        assert_eq!(s.total_steps(), 105);
        let first = s.plan(0).expect("step 0");
        assert_eq!(first.phase, Phase::Main);
        assert!(close(first.lr_latents, 0.01) && close(first.lr_decoder, 0.005));
        let frozen = s.plan(80).expect("step 80");
        assert_eq!(frozen.lambda, 0.0);
        assert_eq!(frozen.lr_decoder, 0.0);
        assert!(frozen.lr_latents > 0.0);
        let ft = s.plan(100).expect("step 100");
        assert_eq!(ft.phase, Phase::FineTune);
        assert_eq!(ft.phase_step, 0);
        assert_eq!(ft.lr_latents, 0.0);
        assert!(close(ft.lr_decoder, 0.0005));
        assert!(s.plan(105).is_none());
        let unfrozen = Schedule { freeze: None, ..s };
        assert_eq!(unfrozen.plan(80).expect("step 80").lambda, 1.0);
    }
}
