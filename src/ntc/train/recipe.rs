//! Named training recipes (`--recipe`): a [`TrainConfig`] preset chosen by name, so
//! every command that trains (compress, eval, the viewer's packages) means the same
//! settings by the same word.
//!
//! Every value a recipe sets is in [`Recipe::values`], one table per recipe; everything
//! else is [`TrainConfig::default`]'s. To re-tune a recipe, change its table (and the
//! measurements in docs/RESULTS.md that justify it).

use super::{TrainConfig, TrainError};
use crate::ntc::model::Preset;

/// Training recipes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Recipe {
    /// The project's default (see [`Recipe::values`]).
    Default,
    /// The shared-decoder paper's: encoder lr 4e-3, decoder lr 4e-4, batch 32K,
    /// freezing from 50 %.
    Paper,
}

/// The values that make a recipe.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecipeValues {
    /// Main training steps per texture set (`--steps`' default; a group of `k` sets
    /// trains `k` times as many).
    pub steps: u64,
    /// Texels per batch.
    pub batch_size: u32,
    /// Initial latent learning rate (cosine decay to 0 over the main steps).
    pub lr_latents: f64,
    /// Initial decoder learning rate (cosine decay to 0 over the main steps).
    pub lr_decoder: f64,
    /// Gradual decoder freezing of shared decoders starts at this fraction of the main
    /// steps.
    pub freeze_start: f64,
    /// Steps on quantised, frozen latents (decoder only) as a fraction of the main
    /// steps.
    pub finetune_fraction: f64,
}

impl Recipe {
    /// The recipe's name as `--recipe` spells it (`default`, `paper`).
    pub fn name(self) -> &'static str {
        match self {
            Recipe::Default => "default",
            Recipe::Paper => "paper",
        }
    }

    /// The recipe's values.
    ///
    /// `default` is the best point of a sweep measured on an NVIDIA H200 within the goal
    /// of ≤ 10 s of training per 1024² set (`plastic_crate_01`, base colour, normal, ORM;
    /// preset high, 5.33 bits per texel; `coop-matrix` kernel at 7.2e7 texels/s; PSNR
    /// pooled over the present channels at mip 0): batch 65536, latents lr 3e-2, decoder
    /// lr 1e-2, 8000 steps: 35.38 dB in 7.7 s (16000 steps: 36.44 dB in 15.3 s). The
    /// previous default (batch 32768, lr 1e-2 / 5e-3, 4000 steps) gave 32.73 dB in 2.1 s;
    /// at batch 65536 and 8000 steps, latents lr 3e-3 / 1e-2 / 3e-2 / 0.1 gave 33.42 /
    /// 34.46 / 34.79 / 35.27 dB and decoder lr 2e-3 / 5e-3 / 1e-2 / 2e-2 33.89 / 34.46 /
    /// 34.96 / 35.26 dB (the larger rates together are not measured yet), a fine-tuning
    /// fraction of 0.1 instead of 0.05 34.47 dB. BC1/BC5 reaches 36.90 dB there at 21.3
    /// bits per texel. One set only: re-measure on the living room and the Bistro sets
    /// before relying on it.
    pub fn values(self) -> RecipeValues {
        match self {
            Recipe::Default => RecipeValues {
                steps: 8000,
                batch_size: 65536,
                lr_latents: 3e-2,
                lr_decoder: 1e-2,
                freeze_start: 0.5,
                finetune_fraction: 0.05,
            },
            Recipe::Paper => RecipeValues {
                steps: 4000,
                batch_size: 32768,
                lr_latents: 4e-3,
                lr_decoder: 4e-4,
                freeze_start: 0.5,
                finetune_fraction: 0.05,
            },
        }
    }

    /// The training settings of this recipe for `preset`, not validated.
    pub fn config(self, preset: Preset) -> TrainConfig {
        let v = self.values();
        let mut train = TrainConfig {
            lr_latents: v.lr_latents,
            lr_decoder: v.lr_decoder,
            batch_size: v.batch_size,
            finetune_fraction: v.finetune_fraction,
            ..TrainConfig::default()
        };
        train.model.preset = preset;
        train.freeze.start_fraction = v.freeze_start;
        train
    }

    /// The training settings of this recipe for `preset`, with `batch` texels per batch
    /// when given; validated.
    pub fn train_config(
        self,
        preset: Preset,
        batch: Option<u32>,
    ) -> Result<TrainConfig, TrainError> {
        let mut train = self.config(preset);
        if let Some(b) = batch {
            train.batch_size = b;
        }
        train.validate()?;
        Ok(train)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn names_match_the_command_line() {
        for r in Recipe::value_variants() {
            let v = r.to_possible_value().expect("named");
            assert_eq!(v.get_name(), r.name());
        }
    }

    #[test]
    fn recipes_follow_their_tables_and_batch_overrides() {
        for recipe in Recipe::value_variants() {
            let v = recipe.values();
            let t = recipe.train_config(Preset::Low, None).unwrap();
            assert_eq!(t.model.preset, Preset::Low);
            assert_eq!((t.lr_latents, t.lr_decoder), (v.lr_latents, v.lr_decoder));
            assert_eq!(t.batch_size, v.batch_size);
            assert_eq!(t.freeze.start_fraction, v.freeze_start);
            assert_eq!(t.finetune_fraction, v.finetune_fraction);
            assert!(v.steps > 0);
            // Everything else is the default.
            assert_eq!(
                TrainConfig {
                    model: TrainConfig::default().model,
                    lr_latents: 0.0,
                    lr_decoder: 0.0,
                    batch_size: 0,
                    finetune_fraction: 0.0,
                    freeze: TrainConfig::default().freeze,
                    ..t.clone()
                },
                TrainConfig {
                    lr_latents: 0.0,
                    lr_decoder: 0.0,
                    batch_size: 0,
                    finetune_fraction: 0.0,
                    ..TrainConfig::default()
                }
            );
        }
        let p = Recipe::Paper
            .train_config(Preset::High, Some(1024))
            .unwrap();
        assert_eq!((p.lr_latents, p.lr_decoder), (4e-3, 4e-4));
        assert_eq!(p.freeze.start_fraction, 0.5);
        assert_eq!(p.batch_size, 1024);
        let err = Recipe::Default
            .train_config(Preset::High, Some(0))
            .unwrap_err();
        assert!(err.to_string().contains("batch_size"), "{err}");
    }
}
