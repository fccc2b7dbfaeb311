//! Named training recipes (`--recipe`): a [`TrainConfig`] preset chosen by name, so
//! every command that trains (compress, eval) means the same settings by the same word.

use super::{TrainConfig, TrainError};
use crate::ntc::model::Preset;

/// Training recipes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Recipe {
    /// The defaults of `ntc::TrainConfig` (latents 1e-2, decoder 5e-3, batch 32K).
    Default,
    /// The paper's: encoder lr 4e-3, decoder lr 4e-4, batch 32K, freezing from 50 %.
    Paper,
}

impl Recipe {
    /// The recipe's name as `--recipe` spells it (`default`, `paper`).
    pub fn name(self) -> &'static str {
        match self {
            Recipe::Default => "default",
            Recipe::Paper => "paper",
        }
    }

    /// The training settings of this recipe for `preset`, with `batch` texels per batch
    /// when given; validated.
    pub fn train_config(
        self,
        preset: Preset,
        batch: Option<u32>,
    ) -> Result<TrainConfig, TrainError> {
        let mut train = TrainConfig::default();
        train.model.preset = preset;
        if self == Recipe::Paper {
            train.lr_latents = 4e-3;
            train.lr_decoder = 4e-4;
            train.batch_size = 32768;
            train.freeze.start_fraction = 0.5;
        }
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
    fn paper_recipe_and_batch_override() {
        let d = Recipe::Default.train_config(Preset::Low, None).unwrap();
        assert_eq!(d.model.preset, Preset::Low);
        assert_eq!(
            TrainConfig {
                model: d.model.clone(),
                ..TrainConfig::default()
            },
            d
        );
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
