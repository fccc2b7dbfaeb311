//! The training budget in the paper's units, and quality against budget.
//!
//! [`TrainingBudget`]: what a budget of `s` main steps per set means — epochs as the paper
//! counts them (an epoch covers every mip-0 texel of a group's sets once at the batch
//! size, so a group of `k` sets of `T` texels each at batch `B` runs `k · T / B` steps per
//! epoch, and `s` steps per set are `s · B / T` epochs), samples per material and
//! optimiser steps per decoder (a group of `k` sets takes `k · s` main steps plus its
//! fine-tuning). `eval --epochs N` turns epochs into steps per set with it.
//!
//! [`BudgetStudy`] (`eval --budgets b1,b2,…`): Table 2's strategies evaluated once per
//! budget, each budget in its own folder `budget-<b>/` of the out folder, then mean PSNR
//! against budget per strategy (`budgets.{csv,md,png}`, `budgets.json`), the crossover
//! where the baseline overtakes a shared strategy, and each strategy's convergence
//! ([`CONVERGED_GAIN`]).
//!
//! Runs are not extended from one budget to the next: the recipe's schedule is defined by
//! its length (the cosine decay reaches zero at the last main step, freezing starts and
//! fine-tuning lasts a fraction of the main steps), so the first `b` steps of a run of
//! `2b` are not a run of `b`. What is reused is every finished run of a budget: a budget's
//! folder is an evaluation like any other, and `--resume` loads its records instead of
//! training them again, so a sweep extended by a larger budget trains only that budget.
//! A sweep that stops before its last budget finishes (interrupted, or `--stop-after`)
//! still writes the study, over every finished budget and the finished runs of the one it
//! stopped in ([`UnfinishedBudget`]), and names what was not run.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::figures::psnr_panel;
use super::runs::RunRecord;
use super::tables::{Cell, Grid, first_appearances};
use super::{EvalError, EvalReport, write_text};
use crate::charts::{Panel, write_panels_png};
use crate::cluster::Strategy;
use crate::ntc::TrainConfig;
use crate::ntc::compress::group_main_steps;
use crate::ntc::train::schedule::finetune_steps;
use crate::texture::TextureSet;

/// A strategy counts as converged at a budget when doubling that budget gains less than
/// this many dB of mean PSNR.
pub const CONVERGED_GAIN: f64 = 0.1;

/// What a budget of main steps per set amounts to.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrainingBudget {
    /// Main steps per texture set (a group of `k` sets trains `k` times as many).
    pub steps_per_set: u64,
    /// Samples per step.
    pub batch: u32,
    /// Mean mip-0 texels per set.
    pub texels_per_set: f64,
    /// Epochs: `steps_per_set · batch / texels_per_set`.
    pub epochs: f64,
    /// Samples drawn per material in the main phase: `steps_per_set · batch` (for sets of
    /// one size exactly; a group draws a material in proportion to its texels).
    pub samples_per_material: u64,
    /// Fine-tuning steps as a fraction of a group's main steps.
    pub finetune_fraction: f64,
}

/// Mean mip-0 texels per set (0 for none).
fn mean_texels(sets: &[TextureSet]) -> f64 {
    let sum: f64 = sets
        .iter()
        .map(|s| f64::from(s.width) * f64::from(s.height))
        .sum();
    sum / sets.len().max(1) as f64
}

impl TrainingBudget {
    /// The budget of `steps_per_set` main steps per set of `sets` trained with `train`.
    pub fn new(sets: &[TextureSet], train: &TrainConfig, steps_per_set: u64) -> Self {
        let texels_per_set = mean_texels(sets);
        let batch = train.batch_size;
        let samples = steps_per_set.saturating_mul(u64::from(batch));
        TrainingBudget {
            steps_per_set,
            batch,
            texels_per_set,
            epochs: if texels_per_set > 0.0 {
                samples as f64 / texels_per_set
            } else {
                0.0
            },
            samples_per_material: samples,
            finetune_fraction: train.finetune_fraction,
        }
    }

    /// Main steps per set for `epochs` epochs of `sets` at `train`'s batch size (rounded
    /// up, at least 1); an error for epochs that are not positive and finite or a step
    /// count past u64.
    pub fn steps_for_epochs(
        sets: &[TextureSet],
        train: &TrainConfig,
        epochs: f64,
    ) -> Result<u64, EvalError> {
        let steps = (epochs * mean_texels(sets) / f64::from(train.batch_size.max(1))).ceil();
        let valid = epochs.is_finite() && epochs > 0.0 && steps < u64::MAX as f64;
        if !valid {
            return Err(EvalError::Inputs {
                reason: format!("--epochs {epochs}: expected a positive number of epochs"),
            });
        }
        Ok((steps as u64).max(1))
    }

    /// Optimiser steps of the decoder of a group of `sets` sets: its main steps plus its
    /// fine-tuning.
    pub fn decoder_steps(&self, sets: usize) -> u64 {
        let main = group_main_steps(self.steps_per_set, sets);
        main + finetune_steps(main, self.finetune_fraction)
    }

    /// One Markdown line: steps, epochs, samples per material.
    pub fn markdown(&self) -> String {
        format!(
            "{} main steps per set (× the sets of a group) at batch {} = {:.1} epochs of the \
             sets' mip-0 texels ({:.0} per set), {} samples per material",
            self.steps_per_set,
            self.batch,
            self.epochs,
            self.texels_per_set,
            self.samples_per_material
        )
    }
}

/// The distinct budgets of `budgets` in increasing order; an error for an empty list.
pub fn distinct_budgets(budgets: &[u64]) -> Result<Vec<u64>, EvalError> {
    let mut v = budgets.to_vec();
    v.sort_unstable();
    v.dedup();
    if v.is_empty() {
        return Err(EvalError::Inputs {
            reason: "--budgets lists no budget".into(),
        });
    }
    Ok(v)
}

/// The folder of budget `budget`'s evaluation inside the out folder `out`.
pub fn budget_dir(out: &Path, budget: u64) -> PathBuf {
    out.join(format!("budget-{budget}"))
}

/// One strategy at one budget.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BudgetCell {
    /// The strategy.
    pub strategy: Strategy,
    /// Main steps per set.
    pub budget: u64,
    /// Epochs of that budget.
    pub epochs: f64,
    /// Mean PSNR over all materials (dB).
    pub mean_psnr: Option<f64>,
    /// Optimiser steps per decoder (fewest, most over the run's groups).
    pub decoder_steps: [u64; 2],
    /// The run's record was loaded (`--resume`) rather than trained by the evaluation
    /// that reported it; in the budget a sweep stopped in, read back from its record.
    pub loaded: bool,
}

/// The budget at which a strategy converged: the first budget where the budget at least
/// twice as large gains less than [`CONVERGED_GAIN`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Convergence {
    /// The strategy.
    pub strategy: Strategy,
    /// The budget, or `None` when no listed budget qualifies.
    pub budget: Option<u64>,
    /// The gain from that budget to the compared one (dB).
    pub gain: Option<f64>,
}

/// Where the baseline overtakes a shared strategy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Crossover {
    /// The shared strategy.
    pub strategy: Strategy,
    /// The last budget at which the strategy is ahead of the baseline and the first at
    /// which the baseline is level or ahead; `None` when the order never flips that way.
    pub between: Option<(u64, u64)>,
    /// The baseline is level or ahead at every budget.
    pub baseline_always_ahead: bool,
}

/// The budget a sweep stopped in: Table 2's strategies, each with its run's record where
/// it finished ([`unfinished_table2`](super::unfinished_table2)).
#[derive(Clone, Debug)]
pub struct UnfinishedBudget {
    /// The budget.
    pub budget: TrainingBudget,
    /// Each strategy, with its finished run's record or `None`.
    pub runs: Vec<(Strategy, Option<RunRecord>)>,
}

/// What an unfinished sweep did not run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NotRun {
    /// The budget it stopped in (main steps per set).
    pub budget: u64,
    /// The strategies with no finished run at that budget.
    pub strategies: Vec<Strategy>,
}

/// Quality against budget over the evaluations of every budget.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BudgetStudy {
    /// The budgets, increasing (the last the unfinished one, where the sweep stopped).
    pub budgets: Vec<TrainingBudget>,
    /// Every strategy at every budget, budget-major.
    pub cells: Vec<BudgetCell>,
    /// Per strategy, where it converged.
    pub convergence: Vec<Convergence>,
    /// Per shared strategy, where the baseline overtakes it (with a baseline only).
    pub crossovers: Vec<Crossover>,
    /// What is reused across budgets, and why not more.
    pub reuse: String,
    /// Where the sweep stopped before finishing, if it did.
    pub not_run: Option<NotRun>,
}

impl BudgetStudy {
    /// The study of `reports`, one evaluation per budget in increasing order, and of the
    /// finished runs of `unfinished`, the next budget, when the sweep stopped in it.
    pub fn new(reports: &[EvalReport], unfinished: Option<&UnfinishedBudget>) -> Self {
        let mut cells = Vec::new();
        for report in reports {
            let budget = &report.budget;
            for row in &report.table2.rows {
                let run = report.runs.iter().find(|r| r.name == row.run);
                cells.push(BudgetCell {
                    strategy: row.strategy,
                    budget: budget.steps_per_set,
                    epochs: budget.epochs,
                    mean_psnr: row.figures.mean_psnr,
                    decoder_steps: run.map_or([0, 0], |r| r.decoder_steps),
                    loaded: run.is_some_and(|r| r.loaded),
                });
            }
        }
        if let Some(u) = unfinished {
            for (strategy, record) in &u.runs {
                cells.push(BudgetCell {
                    strategy: *strategy,
                    budget: u.budget.steps_per_set,
                    epochs: u.budget.epochs,
                    mean_psnr: record.as_ref().and_then(|r| r.mean_psnr),
                    decoder_steps: record.as_ref().map_or([0, 0], RunRecord::decoder_steps),
                    loaded: record.is_some(),
                });
            }
        }
        let mut strategies: Vec<Strategy> = Vec::new();
        for c in &cells {
            if !strategies.contains(&c.strategy) {
                strategies.push(c.strategy);
            }
        }
        let curve = |s: Strategy| -> Vec<(u64, f64)> {
            cells
                .iter()
                .filter(|c| c.strategy == s)
                .filter_map(|c| Some((c.budget, c.mean_psnr?)))
                .collect()
        };
        let convergence = strategies
            .iter()
            .map(|&s| converged(s, &curve(s)))
            .collect();
        let crossovers = if strategies.contains(&Strategy::Baseline) {
            let base = curve(Strategy::Baseline);
            strategies
                .iter()
                .filter(|&&s| s != Strategy::Baseline)
                .map(|&s| crossover(s, &base, &curve(s)))
                .collect()
        } else {
            Vec::new()
        };
        BudgetStudy {
            budgets: reports
                .iter()
                .map(|r| r.budget.clone())
                .chain(unfinished.map(|u| u.budget.clone()))
                .collect(),
            cells,
            convergence,
            crossovers,
            reuse: "each budget's runs are trained in budget-<b>/ and loaded from there by \
                    --resume; no run is extended to a larger budget, since the schedule \
                    (cosine decay to the last main step, freezing and fine-tuning as \
                    fractions of the main steps) is defined by the run's length"
                .into(),
            not_run: unfinished.map(|u| NotRun {
                budget: u.budget.steps_per_set,
                strategies: u
                    .runs
                    .iter()
                    .filter(|(_, record)| record.is_none())
                    .map(|&(strategy, _)| strategy)
                    .collect(),
            }),
        }
    }

    /// The strategies, in first-seen order.
    pub fn strategies(&self) -> Vec<Strategy> {
        first_appearances(self.cells.iter().map(|c| c.strategy))
    }

    /// One row per (budget, strategy).
    fn grid(&self) -> Grid {
        Grid {
            header: [
                "steps_per_set",
                "epochs",
                "strategy",
                "mean_psnr_db",
                "decoder_steps_min",
                "decoder_steps_max",
                "loaded",
            ]
            .map(String::from)
            .to_vec(),
            rows: self
                .cells
                .iter()
                .map(|c| {
                    vec![
                        Cell::Text(c.budget.to_string()),
                        Cell::Fixed(Some(c.epochs)),
                        Cell::Text(c.strategy.to_string()),
                        Cell::Fixed(c.mean_psnr),
                        Cell::Text(c.decoder_steps[0].to_string()),
                        Cell::Text(c.decoder_steps[1].to_string()),
                        Cell::Text(if c.loaded { "yes" } else { "no" }.into()),
                    ]
                })
                .collect(),
        }
    }

    /// `budgets.csv`.
    pub fn csv(&self) -> String {
        self.grid().csv()
    }

    /// `budgets.md`: the budgets, the table, convergence, crossovers and reuse.
    pub fn markdown(&self) -> String {
        let mut s = String::from("# Quality against training budget\n\n");
        for b in &self.budgets {
            s.push_str(&format!("- {}\n", b.markdown()));
        }
        s.push('\n');
        s.push_str(&self.grid().markdown());
        s.push_str(&format!(
            "\n![PSNR against budget](budgets.png)\n\n## Convergence (doubling the budget \
             gains < {CONVERGED_GAIN} dB)\n\n"
        ));
        for c in &self.convergence {
            match (c.budget, c.gain) {
                (Some(b), Some(g)) => s.push_str(&format!(
                    "- {}: converged at {b} steps per set (the next budget of at least twice \
                     that gains {g:+.2} dB)\n",
                    c.strategy
                )),
                _ => s.push_str(&format!(
                    "- {}: not converged within the budgets listed\n",
                    c.strategy
                )),
            }
        }
        if !self.crossovers.is_empty() {
            s.push_str("\n## Crossover (baseline against each shared strategy)\n\n");
        }
        for c in &self.crossovers {
            let line = match (c.between, c.baseline_always_ahead) {
                (_, true) => "the baseline is level or ahead at every budget".to_string(),
                (Some((a, b)), _) => {
                    format!("the baseline overtakes it between {a} and {b} steps per set")
                }
                (None, _) => "the baseline does not overtake it within the budgets listed".into(),
            };
            s.push_str(&format!("- {}: {line}\n", c.strategy));
        }
        s.push_str(&format!("\nReuse: {}.\n", self.reuse));
        if let Some(n) = &self.not_run {
            let what = super::not_run_clause(&n.strategies, "row");
            s.push_str(&format!(
                "\nUnfinished: the sweep stopped in budget {} steps per set, where {what}; the \
                 same command with --resume trains only what is missing.\n",
                n.budget
            ));
        }
        s
    }

    /// Mean PSNR against budget (log scale), one line per strategy.
    pub fn panel(&self) -> Panel {
        psnr_panel(
            "mean PSNR against training budget",
            "main steps per set",
            self.strategies(),
            &self.cells,
            |c| (c.strategy, c.budget as f64, c.mean_psnr),
        )
    }

    /// Write `budgets.{csv,md,png}` and `budgets.json` into `out`.
    pub fn write(&self, out: &Path) -> Result<(), EvalError> {
        write_text(&out.join("budgets.csv"), &self.csv())?;
        write_text(&out.join("budgets.md"), &self.markdown())?;
        let json = serde_json::to_string_pretty(self).map_err(|e| EvalError::Inputs {
            reason: format!("budgets.json: {e}"),
        })?;
        write_text(&out.join("budgets.json"), &json)?;
        let (w, h) = super::CHART_SIZE;
        write_panels_png(&out.join("budgets.png"), &[self.panel()], w, h)?;
        Ok(())
    }
}

/// Where `curve` (budget, PSNR; increasing budgets) converges: the first budget whose
/// smallest listed budget of at least twice its size gains less than [`CONVERGED_GAIN`].
fn converged(strategy: Strategy, curve: &[(u64, f64)]) -> Convergence {
    for (i, &(b, p)) in curve.iter().enumerate() {
        let doubled = curve[i + 1..]
            .iter()
            .find(|(c, _)| *c >= b.saturating_mul(2));
        if let Some(&(_, q)) = doubled
            && q - p < CONVERGED_GAIN
        {
            return Convergence {
                strategy,
                budget: Some(b),
                gain: Some(q - p),
            };
        }
    }
    Convergence {
        strategy,
        budget: None,
        gain: None,
    }
}

/// Where `base` (the baseline's curve) overtakes `shared`'s, at the budgets both have.
fn crossover(strategy: Strategy, base: &[(u64, f64)], shared: &[(u64, f64)]) -> Crossover {
    let both: Vec<(u64, bool)> = base
        .iter()
        .filter_map(|&(b, p)| {
            let q = shared.iter().find(|(c, _)| *c == b)?.1;
            Some((b, p >= q))
        })
        .collect();
    let between = both
        .windows(2)
        .find(|w| !w[0].1 && w[1].1)
        .map(|w| (w[0].0, w[1].0));
    Crossover {
        strategy,
        between,
        baseline_always_ahead: !both.is_empty() && both.iter().all(|&(_, ahead)| ahead),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::texture::{ChannelMask, SetMip};

    fn set(side: u32) -> TextureSet {
        let texels = vec![0u8; (side * side) as usize * crate::texture::CHANNELS];
        TextureSet::from_mip0(
            "s",
            ChannelMask::ALL,
            SetMip {
                width: side,
                height: side,
                texels,
            },
        )
    }

    #[test]
    fn epochs_are_the_papers() {
        // The paper: 350 epochs of a 1024² set at batch 32K are 11 200 steps.
        let train = TrainConfig {
            batch_size: 32768,
            ..TrainConfig::default()
        };
        let sets = [set(1024)];
        assert_eq!(
            TrainingBudget::steps_for_epochs(&sets, &train, 350.0).unwrap(),
            11_200
        );
        let b = TrainingBudget::new(&sets, &train, 11_200);
        assert!((b.epochs - 350.0).abs() < 1e-9, "{}", b.epochs);
        assert_eq!(b.samples_per_material, 11_200 * 32768);
        // A group of 3 sets: 3 × the main steps plus the fine-tuning fraction.
        let main = 3 * 11_200;
        assert_eq!(
            b.decoder_steps(3),
            main + finetune_steps(main, train.finetune_fraction)
        );
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(TrainingBudget::steps_for_epochs(&sets, &train, bad).is_err());
        }
        // Rounded up, never 0.
        assert_eq!(
            TrainingBudget::steps_for_epochs(&[set(4)], &train, 1.0).unwrap(),
            1
        );
    }

    #[test]
    fn convergence_and_crossover() {
        let base = [(1000, 40.0), (2000, 42.0), (4000, 44.0), (8000, 44.05)];
        let shared = [(1000, 42.0), (2000, 43.0), (4000, 43.5), (8000, 43.55)];
        let c = converged(Strategy::Baseline, &base);
        assert_eq!(c.budget, Some(4000));
        assert!((c.gain.unwrap() - 0.05).abs() < 1e-9);
        assert_eq!(converged(Strategy::Single, &shared).budget, Some(4000));
        // Gains of ≥ 0.1 dB at every doubling: not converged.
        assert_eq!(converged(Strategy::Single, &base[..3]).budget, None);
        let x = crossover(Strategy::Single, &base, &shared);
        assert_eq!(x.between, Some((2000, 4000)));
        assert!(!x.baseline_always_ahead);
        let never = crossover(Strategy::Single, &shared, &base);
        assert_eq!(never.between, None);
        assert!(!never.baseline_always_ahead);
        assert!(crossover(Strategy::Single, &base[2..], &shared[2..]).baseline_always_ahead);
        assert_eq!(distinct_budgets(&[8, 2, 8]).unwrap(), vec![2, 8]);
        assert!(distinct_budgets(&[]).is_err());
    }
}
