//! The evaluation's tables, built from run records: Table 2 (one row per strategy, PSNR
//! per category), the freezing ablation (with its mean loss curves) and the decoder-count
//! sweep, each rendered as CSV and Markdown; and the combined report. With a
//! co-occurrence record, Table 2, the sweep and the run list carry each run's predicted
//! divergence 𝒟 on the recorded views beside its PSNR (a column only then).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;

use super::budgets::TrainingBudget;
use super::divergence::RecordedViews;
use super::runs::{Freeze, RunRecord};
use crate::cluster::{DivergencePrediction, Strategy};
use crate::io::csv_field;
use crate::ntc::TrainConfig;

/// The column of sets without a category, when other sets have one.
pub const NO_CATEGORY: &str = "(none)";

/// One cell of a rendered table.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Cell {
    /// Text as is.
    Text(String),
    /// A count.
    Count(usize),
    /// A value with 4 decimals in CSV, 2 in Markdown; empty / `–` when absent.
    Fixed(Option<f64>),
    /// A value in scientific notation (losses); empty / `–` when absent.
    Sci(Option<f64>),
    /// A value with 4 decimals in CSV and Markdown (divergence); empty / `–` when absent.
    Precise(Option<f64>),
}

impl Cell {
    fn csv(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Count(n) => n.to_string(),
            Cell::Fixed(v) | Cell::Precise(v) => v.map_or(String::new(), |v| format!("{v:.4}")),
            Cell::Sci(v) => v.map_or(String::new(), |v| format!("{v:.4e}")),
        }
    }

    fn markdown(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Count(n) => n.to_string(),
            Cell::Fixed(v) => v.map_or("–".into(), |v| format!("{v:.2}")),
            Cell::Sci(v) => v.map_or("–".into(), |v| format!("{v:.3e}")),
            Cell::Precise(v) => v.map_or("–".into(), |v| format!("{v:.4}")),
        }
    }
}

/// A header and rows of cells, rendered as CSV or Markdown.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Grid {
    pub(super) header: Vec<String>,
    pub(super) rows: Vec<Vec<Cell>>,
}

impl Grid {
    pub(super) fn csv(&self) -> String {
        let line = |cells: Vec<String>| {
            let quoted: Vec<Cow<str>> = cells.iter().map(|c| csv_field(c)).collect();
            quoted.join(",") + "\n"
        };
        let mut s = line(self.header.clone());
        for row in &self.rows {
            s.push_str(&line(row.iter().map(Cell::csv).collect()));
        }
        s
    }

    pub(super) fn markdown(&self) -> String {
        let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
        let mut s = line(self.header.clone());
        s.push_str(&line(vec!["---".into(); self.header.len()]));
        for row in &self.rows {
            s.push_str(&line(row.iter().map(Cell::markdown).collect()));
        }
        s
    }
}

/// Each strategy of `strategies` once, in order of first appearance.
pub(super) fn first_appearances(strategies: impl IntoIterator<Item = Strategy>) -> Vec<Strategy> {
    let mut v: Vec<Strategy> = Vec::new();
    for s in strategies {
        if !v.contains(&s) {
            v.push(s);
        }
    }
    v
}

/// The predicted 𝒟 column's header: `predicted_divergence` in CSV, `predicted 𝒟` in
/// Markdown.
fn divergence_header(csv: bool) -> String {
    if csv {
        "predicted_divergence"
    } else {
        "predicted 𝒟"
    }
    .into()
}

/// Mean of the present values (`None` when there are none).
fn mean(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.flatten().collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The category columns of `categories` (one label per set): the distinct labels,
/// sorted, then [`NO_CATEGORY`] when some sets have none; empty when no set has one.
pub fn category_columns(categories: &[String]) -> Vec<String> {
    let mut labels: Vec<String> = categories
        .iter()
        .map(|c| c.trim())
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect();
    labels.sort();
    labels.dedup();
    if !labels.is_empty() && categories.iter().any(|c| c.trim().is_empty()) {
        labels.push(NO_CATEGORY.into());
    }
    labels
}

/// What Table 2, the sweep and the run list report of every run: decoders, mean PSNR,
/// predicted divergence and training time (flattened into each row's JSON).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunFigures {
    /// Number of decoders.
    pub decoders: usize,
    /// Mean PSNR over all materials (dB).
    pub mean_psnr: Option<f64>,
    /// The run's predicted divergence on the recorded views (with a co-occurrence record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted: Option<DivergencePrediction>,
    /// Training seconds of the run.
    pub seconds: f64,
}

impl RunFigures {
    /// The figures of `record`, with its groups' predicted divergence.
    pub fn new(record: &RunRecord, predicted: Option<DivergencePrediction>) -> RunFigures {
        RunFigures {
            decoders: record.groups.len(),
            mean_psnr: record.mean_psnr,
            predicted,
            seconds: record.seconds,
        }
    }

    /// The predicted 𝒟 cell (absent without a prediction).
    fn divergence_cell(&self) -> Cell {
        Cell::Precise(self.predicted.map(|p| p.divergence))
    }

    /// The header of [`RunFigures::cells`]: `decoders`, `mean_psnr_db` and, when
    /// `predicted`, the predicted 𝒟 (CSV's header when `csv`).
    fn header(predicted: bool, csv: bool) -> Vec<String> {
        let mut header: Vec<String> = ["decoders", "mean_psnr_db"].map(String::from).to_vec();
        if predicted {
            header.push(divergence_header(csv));
        }
        header
    }

    /// The decoders and mean PSNR cells, then the predicted 𝒟 when `predicted`.
    fn cells(&self, predicted: bool) -> Vec<Cell> {
        let mut row = vec![Cell::Count(self.decoders), Cell::Fixed(self.mean_psnr)];
        if predicted {
            row.push(self.divergence_cell());
        }
        row
    }
}

/// Whether any of `figures` carries a predicted divergence (the tables then have a
/// predicted-𝒟 column).
fn any_predicted<'a>(mut figures: impl Iterator<Item = &'a RunFigures>) -> bool {
    figures.any(|f| f.predicted.is_some())
}

/// One strategy's row of Table 2.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Table2Row {
    /// The strategy.
    pub strategy: Strategy,
    /// The run its numbers come from (shared runs appear under several strategies).
    pub run: String,
    /// The run's decoders, mean PSNR, predicted divergence and training seconds.
    #[serde(flatten)]
    pub figures: RunFigures,
    /// Mean PSNR per category column (dB).
    pub category_psnr: Vec<Option<f64>>,
    /// Mean latent bits per texel.
    pub bits_per_texel: f64,
}

/// Table 2 of the paper on our data.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Table2 {
    /// The category columns (see [`category_columns`]).
    pub categories: Vec<String>,
    /// One row per strategy, in the order requested.
    pub rows: Vec<Table2Row>,
}

impl Table2 {
    /// Rows for `(strategy, record, predicted divergence)` triples; `categories` has one
    /// label per set.
    pub fn new(
        rows: &[(Strategy, &RunRecord, Option<DivergencePrediction>)],
        categories: &[String],
    ) -> Table2 {
        let columns = category_columns(categories);
        let label_of = |set: usize| {
            let c = categories.get(set).map_or("", |c| c.trim());
            if c.is_empty() { NO_CATEGORY } else { c }
        };
        Table2 {
            rows: rows
                .iter()
                .map(|&(strategy, r, predicted)| Table2Row {
                    strategy,
                    run: r.name.clone(),
                    figures: RunFigures::new(r, predicted),
                    category_psnr: columns
                        .iter()
                        .map(|c| {
                            mean(
                                r.materials
                                    .iter()
                                    .filter(|m| label_of(m.set) == c)
                                    .map(|m| m.psnr),
                            )
                        })
                        .collect(),
                    bits_per_texel: r.mean_bits_per_texel,
                })
                .collect(),
            categories: columns,
        }
    }

    fn grid(&self, csv: bool) -> Grid {
        let predicted = any_predicted(self.rows.iter().map(|r| &r.figures));
        let mut header = vec!["strategy".to_string()];
        header.extend(RunFigures::header(predicted, csv));
        header.extend(self.categories.iter().map(|c| {
            if csv {
                format!("psnr_db_{c}")
            } else {
                c.clone()
            }
        }));
        header.extend(["bits_per_texel", "train_seconds", "run"].map(String::from));
        Grid {
            header,
            rows: self
                .rows
                .iter()
                .map(|r| {
                    let mut row = vec![Cell::Text(r.strategy.to_string())];
                    row.extend(r.figures.cells(predicted));
                    row.extend(r.category_psnr.iter().map(|&p| Cell::Fixed(p)));
                    row.extend([
                        Cell::Fixed(Some(r.bits_per_texel)),
                        Cell::Fixed(Some(r.figures.seconds)),
                        Cell::Text(r.run.clone()),
                    ]);
                    row
                })
                .collect(),
        }
    }

    /// CSV: `strategy,decoders,mean_psnr_db,[predicted_divergence,]psnr_db_<category>…,
    /// bits_per_texel,train_seconds,run` (`predicted_divergence` with a co-occurrence
    /// record).
    pub fn csv(&self) -> String {
        self.grid(true).csv()
    }

    /// Markdown: the CSV's columns, categories by name.
    pub fn markdown(&self) -> String {
        self.grid(false).markdown()
    }
}

/// One freezing setting of the ablation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FreezingRow {
    /// The setting.
    pub freeze: Freeze,
    /// Its run.
    pub run: String,
    /// Final mean PSNR over all materials (dB).
    pub mean_psnr: Option<f64>,
    /// Mean over groups of the final loss.
    pub final_loss: Option<f64>,
    /// Loss vs step, averaged over the run's groups.
    #[serde(skip)]
    pub curve: Vec<(u64, f64)>,
}

/// The freezing ablation on the clustered plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FreezingTable {
    /// Decoders of the clustered plan.
    pub m: usize,
    /// One row per setting, in the order requested.
    pub rows: Vec<FreezingRow>,
}

/// A run's loss vs step, averaged over its groups at each reported step.
pub fn mean_curve(record: &RunRecord) -> Vec<(u64, f64)> {
    let mut sums: BTreeMap<u64, (f64, usize)> = BTreeMap::new();
    for p in &record.curves {
        let e = sums.entry(p.step).or_default();
        e.0 += p.loss;
        e.1 += 1;
    }
    sums.into_iter()
        .map(|(step, (sum, n))| (step, sum / n as f64))
        .collect()
}

impl FreezingTable {
    /// Rows for `(setting, record)` pairs on the clustered plan with `m` decoders.
    pub fn new(m: usize, rows: &[(Freeze, &RunRecord)]) -> FreezingTable {
        FreezingTable {
            m,
            rows: rows
                .iter()
                .map(|&(freeze, r)| FreezingRow {
                    freeze,
                    run: r.name.clone(),
                    mean_psnr: r.mean_psnr,
                    final_loss: r.final_loss(),
                    curve: mean_curve(r),
                })
                .collect(),
        }
    }

    /// CSV: `freeze,mean_psnr_db,final_loss,run`.
    pub fn csv(&self) -> String {
        self.grid().csv()
    }

    /// Markdown of the CSV's columns.
    pub fn markdown(&self) -> String {
        self.grid().markdown()
    }

    fn grid(&self) -> Grid {
        Grid {
            header: ["freeze", "mean_psnr_db", "final_loss", "run"]
                .map(String::from)
                .to_vec(),
            rows: self
                .rows
                .iter()
                .map(|r| {
                    vec![
                        Cell::Text(r.freeze.to_string()),
                        Cell::Fixed(r.mean_psnr),
                        Cell::Sci(r.final_loss),
                        Cell::Text(r.run.clone()),
                    ]
                })
                .collect(),
        }
    }

    /// The curves as CSV: `freeze,step,loss` (loss averaged over groups).
    pub fn curves_csv(&self) -> String {
        Grid {
            header: ["freeze", "step", "loss"].map(String::from).to_vec(),
            rows: self
                .rows
                .iter()
                .flat_map(|r| {
                    r.curve.iter().map(|&(step, loss)| {
                        vec![
                            Cell::Text(r.freeze.to_string()),
                            Cell::Text(step.to_string()),
                            Cell::Sci(Some(loss)),
                        ]
                    })
                })
                .collect(),
        }
        .csv()
    }
}

/// One point of the decoder-count sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepRow {
    /// The requested number of groups.
    pub m: usize,
    /// `clustered`, `random` or `divergence-aware`.
    pub strategy: Strategy,
    /// Its run.
    pub run: String,
    /// The run's decoders, mean PSNR, predicted divergence and training seconds.
    #[serde(flatten)]
    pub figures: RunFigures,
}

/// PSNR against the number of decoders, clustered, random (and divergence-aware) at the
/// same `m`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepTable {
    /// The points, by `m`, then strategy.
    pub rows: Vec<SweepRow>,
    /// Mean PSNR of the baseline (one decoder per set), the reference line.
    pub baseline: Option<f64>,
}

impl SweepTable {
    /// Rows for `(m, strategy, record, predicted divergence)` tuples; `baseline` is the
    /// reference.
    pub fn new(
        points: &[(usize, Strategy, &RunRecord, Option<DivergencePrediction>)],
        baseline: Option<f64>,
    ) -> SweepTable {
        SweepTable {
            rows: points
                .iter()
                .map(|&(m, strategy, r, predicted)| SweepRow {
                    m,
                    strategy,
                    run: r.name.clone(),
                    figures: RunFigures::new(r, predicted),
                })
                .collect(),
            baseline,
        }
    }

    /// CSV: `m,strategy,decoders,mean_psnr_db,[predicted_divergence,]train_seconds,run`
    /// (`predicted_divergence` with a co-occurrence record).
    pub fn csv(&self) -> String {
        let predicted = any_predicted(self.rows.iter().map(|r| &r.figures));
        let mut header: Vec<String> = ["m", "strategy"].map(String::from).to_vec();
        header.extend(RunFigures::header(predicted, true));
        header.extend(["train_seconds", "run"].map(String::from));
        Grid {
            header,
            rows: self
                .rows
                .iter()
                .map(|r| {
                    let mut row = vec![Cell::Count(r.m), Cell::Text(r.strategy.to_string())];
                    row.extend(r.figures.cells(predicted));
                    row.extend([
                        Cell::Fixed(Some(r.figures.seconds)),
                        Cell::Text(r.run.clone()),
                    ]);
                    row
                })
                .collect(),
        }
        .csv()
    }

    /// The strategies of the sweep, in order of first appearance.
    pub fn strategies(&self) -> Vec<Strategy> {
        first_appearances(self.rows.iter().map(|r| r.strategy))
    }

    /// Markdown: one row per `m`, one PSNR column per strategy (then, with a
    /// co-occurrence record, one predicted-𝒟 column per strategy), then the baseline.
    pub fn markdown(&self) -> String {
        let strategies = self.strategies();
        let predicted = any_predicted(self.rows.iter().map(|r| &r.figures));
        let mut ms: Vec<usize> = self.rows.iter().map(|r| r.m).collect();
        ms.dedup();
        let mut header = vec!["m".to_string()];
        header.extend(strategies.iter().map(|s| format!("{s} (dB)")));
        if predicted {
            header.extend(strategies.iter().map(|s| format!("{s} 𝒟")));
        }
        let row_of =
            |m: usize, st: Strategy| self.rows.iter().find(|r| r.m == m && r.strategy == st);
        let mut s =
            Grid {
                header,
                rows: ms
                    .iter()
                    .map(|&m| {
                        let mut row = vec![Cell::Count(m)];
                        row.extend(strategies.iter().map(|&st| {
                            Cell::Fixed(row_of(m, st).and_then(|r| r.figures.mean_psnr))
                        }));
                        if predicted {
                            row.extend(strategies.iter().map(|&st| {
                                Cell::Precise(
                                    row_of(m, st)
                                        .and_then(|r| r.figures.predicted)
                                        .map(|p| p.divergence),
                                )
                            }));
                        }
                        row
                    })
                    .collect(),
            }
            .markdown();
        if let Some(b) = self.baseline {
            s.push_str(&format!("\nBaseline (one decoder per set): {b:.2} dB.\n"));
        }
        s
    }
}

/// One run in the summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSummary {
    /// Name (`runs/<name>.json`).
    pub name: String,
    /// Strategy of its first request.
    pub strategy: Strategy,
    /// Freezing setting.
    pub freeze: Freeze,
    /// Its decoders, mean PSNR, predicted divergence and training seconds.
    #[serde(flatten)]
    pub figures: RunFigures,
    /// Set indices per group.
    pub groups: Vec<Vec<usize>>,
    /// Mean latent bits per texel.
    pub mean_bits_per_texel: f64,
    /// Mean over groups of the final loss.
    pub final_loss: Option<f64>,
    /// Optimiser steps per decoder (main and fine-tuning), fewest and most over the
    /// groups: a group of `k` sets takes `k` times the steps per set.
    pub decoder_steps: [u64; 2],
    /// Loaded from an earlier invocation (`--resume`) rather than trained now.
    pub loaded: bool,
}

impl RunSummary {
    /// The summary of `record`, with its groups' predicted divergence.
    pub fn new(
        record: &RunRecord,
        loaded: bool,
        predicted: Option<DivergencePrediction>,
    ) -> RunSummary {
        RunSummary {
            name: record.name.clone(),
            strategy: record.strategy,
            freeze: record.freeze,
            figures: RunFigures::new(record, predicted),
            groups: record.groups.clone(),
            mean_bits_per_texel: record.mean_bits_per_texel,
            final_loss: record.final_loss(),
            decoder_steps: record.decoder_steps(),
            loaded,
        }
    }
}

/// Everything an evaluation found: the setup, the three sections and every run
/// (`summary.json`; `report.md` renders it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EvalReport {
    /// The adapter that trained.
    pub adapter: String,
    /// The command line.
    pub command_line: String,
    /// The inputs (files).
    pub inputs: String,
    /// Number of texture sets.
    pub sets: usize,
    /// The embedder of the clustered plans (name and version).
    pub embedder: String,
    /// Seed of k-means, the random grouping and training.
    pub seed: u64,
    /// The training recipe's name.
    pub recipe: String,
    /// Main steps per texture set.
    pub steps: u64,
    /// The budget in the paper's units: epochs, samples per material.
    pub budget: TrainingBudget,
    /// The training settings (freezing at the recipe's default).
    pub train: TrainConfig,
    /// Table 2.
    pub table2: Table2,
    /// The freezing ablation (absent with `--no-ablation`).
    pub freezing: Option<FreezingTable>,
    /// The decoder-count sweep (absent with `--no-sweep`).
    pub sweep: Option<SweepTable>,
    /// Every run, in training order.
    pub runs: Vec<RunSummary>,
    /// The co-occurrence record the predicted divergences are of (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cooccurrence: Option<RecordedViews>,
    /// Notes (strategies left out and why).
    pub notes: Vec<String>,
}

impl EvalReport {
    /// The report as Markdown: setup, Table 2, the ablation and the sweep (with their
    /// plots), notes and the run list.
    pub fn markdown(&self) -> String {
        let mut s = String::from("# Shared-decoder evaluation\n\n");
        s.push_str(&format!(
            "- command: `{}`\n- adapter: {}\n- inputs: {} ({} texture sets)\n- embedder: {}\n- recipe: {}, preset {:?}, seed {}\n- budget: {}; optimiser steps per decoder in the run list\n- default freezing: from {} of the main steps\n",
            self.command_line,
            self.adapter,
            self.inputs,
            self.sets,
            self.embedder,
            self.recipe,
            self.train.model.preset,
            self.seed,
            self.budget.markdown(),
            Freeze::of(&self.train),
        ));
        s.push_str("\n## Table 2: mean PSNR per strategy\n\n");
        s.push_str(
            "PSNR of a set: pooled over its present channels at mip 0 (dB, 99 for an exact \
             match); the tables give the mean over sets.\n\n",
        );
        if let Some(v) = &self.cooccurrence {
            s.push_str(&format!(
                "Predicted 𝒟 of a run: the mean, over the {} tiles that show a texture set in \
                 {} recorded views ({}×{}, {} tiles) of {} (`{}`), of the run's distinct \
                 decoders per tile minus one (0: one decoder per tile); `divergence-aware` \
                 trades it against appearance with weight {}.\n\n",
                v.covered_tiles, v.views, v.size[0], v.size[1], v.tile, v.scene, v.file, v.weight
            ));
        }
        s.push_str(&self.table2.markdown());
        if let Some(f) = &self.freezing {
            s.push_str(&format!(
                "\n## Decoder freezing (clustered, {} decoders)\n\n",
                f.m
            ));
            s.push_str(&f.markdown());
            s.push_str("\n![loss curves](freezing_curves.png)\n");
        }
        if let Some(sw) = &self.sweep {
            s.push_str("\n## Number of decoders\n\n");
            s.push_str(&sw.markdown());
            s.push_str("\n![PSNR vs decoders](m_sweep.png)\n");
        }
        if !self.notes.is_empty() {
            s.push_str("\n## Notes\n\n");
            for n in &self.notes {
                s.push_str(&format!("- {n}\n"));
            }
        }
        s.push_str("\n## Runs\n\n");
        let predicted = any_predicted(self.runs.iter().map(|r| &r.figures));
        let mut header: Vec<String> = ["run", "decoders", "freeze", "mean_psnr_db"]
            .map(String::from)
            .to_vec();
        if predicted {
            header.push(divergence_header(false));
        }
        header.extend(["final_loss", "decoder_steps", "train_seconds", "loaded"].map(String::from));
        s.push_str(
            &Grid {
                header,
                rows: self
                    .runs
                    .iter()
                    .map(|r| {
                        let mut row = vec![
                            Cell::Text(r.name.clone()),
                            Cell::Count(r.figures.decoders),
                            Cell::Text(r.freeze.to_string()),
                            Cell::Fixed(r.figures.mean_psnr),
                        ];
                        if predicted {
                            row.push(r.figures.divergence_cell());
                        }
                        row.extend([
                            Cell::Sci(r.final_loss),
                            Cell::Text(match r.decoder_steps {
                                [a, b] if a == b => a.to_string(),
                                [a, b] => format!("{a}–{b}"),
                            }),
                            Cell::Fixed(Some(r.figures.seconds)),
                            Cell::Text(if r.loaded { "yes" } else { "no" }.into()),
                        ]);
                        row
                    })
                    .collect(),
            }
            .markdown(),
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::runs::{CurvePoint, GroupResult, MaterialResult};

    /// A record over 4 sets with the given per-set PSNRs and groups.
    fn record(name: &str, psnr: [Option<f64>; 4], groups: Vec<Vec<usize>>) -> RunRecord {
        let group_of = |s: usize| groups.iter().position(|g| g.contains(&s)).unwrap();
        RunRecord {
            name: name.into(),
            strategy: Strategy::Clustered,
            freeze: Freeze::At(0.5),
            materials: (0..4)
                .map(|set| MaterialResult {
                    set,
                    name: format!("s{set}"),
                    group: group_of(set),
                    psnr: psnr[set],
                    psnr_exact: false,
                    bits_per_texel: 1.5,
                    flip: None,
                })
                .collect(),
            group_results: groups
                .iter()
                .enumerate()
                .map(|(g, m)| GroupResult {
                    sets: m.len(),
                    seconds: 1.0,
                    final_loss: Some(0.001 * (g + 1) as f64),
                    kernel_ms: None,
                })
                .collect(),
            curves: groups
                .iter()
                .enumerate()
                .flat_map(|(g, _)| {
                    [10, 20].map(|step| CurvePoint {
                        group: g,
                        step,
                        loss: 0.1 * (g + 1) as f64 / step as f64,
                    })
                })
                .collect(),
            groups,
            steps: 20,
            seed: 1,
            inputs: String::new(),
            train: TrainConfig::default(),
            adapter: "test".into(),
            mean_psnr: mean(psnr.into_iter()),
            psnr_convention: crate::eval::runs::PSNR_CONVENTION.into(),
            mean_bits_per_texel: 1.5,
            seconds: 2.5,
        }
    }

    fn cats() -> Vec<String> {
        ["wood", "metal, painted", "wood", ""]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn category_columns_are_sorted_with_unlabelled_last() {
        assert_eq!(
            category_columns(&cats()),
            vec!["metal, painted", "wood", NO_CATEGORY]
        );
        assert!(category_columns(&["".into(), " ".into()]).is_empty());
        assert_eq!(category_columns(&["b".into(), "a".into()]), vec!["a", "b"]);
    }

    #[test]
    fn table2_rows_category_means_csv_and_markdown() {
        let base = record(
            "baseline",
            [Some(40.0), Some(30.0), Some(36.0), None],
            vec![vec![0], vec![1], vec![2], vec![3]],
        );
        let clus = record(
            "clustered-m2",
            [Some(34.0), Some(28.0), Some(32.0), Some(20.0)],
            vec![vec![0, 2], vec![1, 3]],
        );
        let t = Table2::new(
            &[
                (Strategy::Baseline, &base, None),
                (Strategy::Clustered, &clus, None),
                (Strategy::Category, &clus, None),
            ],
            &cats(),
        );
        assert_eq!(t.rows.len(), 3);
        assert_eq!(t.rows[0].figures.decoders, 4);
        assert_eq!(t.rows[0].category_psnr, vec![Some(30.0), Some(38.0), None]);
        assert_eq!(
            t.rows[1].category_psnr,
            vec![Some(28.0), Some(33.0), Some(20.0)]
        );
        assert_eq!(t.rows[2].run, "clustered-m2");
        let csv = t.csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "strategy,decoders,mean_psnr_db,\"psnr_db_metal, painted\",psnr_db_wood,psnr_db_(none),bits_per_texel,train_seconds,run"
        );
        assert_eq!(
            lines[1],
            "baseline,4,35.3333,30.0000,38.0000,,1.5000,2.5000,baseline"
        );
        assert_eq!(lines.len(), 4);
        let md = t.markdown();
        assert!(md.starts_with(
            "| strategy | decoders | mean_psnr_db | metal, painted | wood | (none) |"
        ));
        assert!(
            md.contains("| baseline | 4 | 35.33 | 30.00 | 38.00 | – | 1.50 | 2.50 | baseline |"),
            "{md}"
        );
        // No categories: no category columns.
        let plain = Table2::new(&[(Strategy::Single, &base, None)], &vec![String::new(); 4]);
        assert!(
            plain
                .csv()
                .starts_with("strategy,decoders,mean_psnr_db,bits_per_texel,")
        );
    }

    #[test]
    fn freezing_table_and_mean_curves() {
        let on = record(
            "clustered-m2",
            [Some(30.0); 4],
            vec![vec![0, 2], vec![1, 3]],
        );
        let off = record(
            "clustered-m2-freeze-none",
            [Some(29.0); 4],
            vec![vec![0, 2], vec![1, 3]],
        );
        // Groups 0 and 1 at step 10: 0.01 and 0.02, mean 0.015.
        let curve = mean_curve(&on);
        assert_eq!(curve.iter().map(|p| p.0).collect::<Vec<_>>(), vec![10, 20]);
        assert!((curve[0].1 - 0.015).abs() < 1e-12 && (curve[1].1 - 0.0075).abs() < 1e-12);
        let t = FreezingTable::new(2, &[(Freeze::Off, &off), (Freeze::At(0.5), &on)]);
        assert_eq!(t.rows[0].final_loss, Some(0.0015));
        let csv = t.csv();
        assert_eq!(
            csv.lines().collect::<Vec<_>>(),
            vec![
                "freeze,mean_psnr_db,final_loss,run",
                "none,29.0000,1.5000e-3,clustered-m2-freeze-none",
                "0.5,30.0000,1.5000e-3,clustered-m2",
            ]
        );
        let curves = t.curves_csv();
        assert_eq!(curves.lines().count(), 1 + 2 * 2);
        assert!(curves.contains("\nnone,10,1.5000e-2\n"), "{curves}");
        assert!(t.markdown().contains("| none | 29.00 | 1.500e-3 |"));
    }

    #[test]
    fn sweep_table_long_csv_and_wide_markdown() {
        let single = record("single", [Some(25.0); 4], vec![vec![0, 1, 2, 3]]);
        let c2 = record(
            "clustered-m2",
            [Some(30.0); 4],
            vec![vec![0, 2], vec![1, 3]],
        );
        let r2 = record("random-m2", [Some(28.0); 4], vec![vec![0, 1], vec![2, 3]]);
        let t = SweepTable::new(
            &[
                (1, Strategy::Clustered, &single, None),
                (1, Strategy::Random, &single, None),
                (2, Strategy::Clustered, &c2, None),
                (2, Strategy::Random, &r2, None),
            ],
            Some(35.0),
        );
        assert_eq!(t.strategies(), vec![Strategy::Clustered, Strategy::Random]);
        let csv = t.csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "m,strategy,decoders,mean_psnr_db,train_seconds,run"
        );
        assert_eq!(lines[1], "1,clustered,1,25.0000,2.5000,single");
        assert_eq!(lines[4], "2,random,2,28.0000,2.5000,random-m2");
        let md = t.markdown();
        assert!(md.contains("| m | clustered (dB) | random (dB) |"));
        assert!(md.contains("| 2 | 30.00 | 28.00 |"));
        assert!(md.contains("35.00 dB"));
    }

    #[test]
    fn rows_carry_the_run_figures_as_their_own_json_fields() {
        let r = record("m2", [Some(30.0); 4], vec![vec![0, 2], vec![1, 3]]);
        let predicted = Some(DivergencePrediction {
            divergence: 0.5,
            mean_decoders: 1.5,
            covered_tiles: 8,
        });
        let keys = |row: serde_json::Value| -> Vec<String> {
            let mut v: Vec<String> = row.as_object().expect("object").keys().cloned().collect();
            v.sort();
            v
        };
        let sorted = |keys: &[&str]| {
            let mut v: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
            v.sort();
            v
        };
        let table2 = Table2::new(&[(Strategy::Clustered, &r, predicted)], &[]);
        let json = serde_json::to_value(&table2.rows[0]).unwrap();
        assert_eq!(json["predicted"]["divergence"], 0.5);
        assert_eq!(
            keys(json),
            sorted(&[
                "strategy",
                "run",
                "decoders",
                "mean_psnr",
                "predicted",
                "category_psnr",
                "bits_per_texel",
                "seconds",
            ])
        );
        let sweep = SweepTable::new(&[(2, Strategy::Clustered, &r, None)], None);
        assert_eq!(
            keys(serde_json::to_value(&sweep.rows[0]).unwrap()),
            sorted(&["m", "strategy", "run", "decoders", "mean_psnr", "seconds"])
        );
        let summary = serde_json::to_value(RunSummary::new(&r, false, predicted)).unwrap();
        assert_eq!(
            (&summary["decoders"], &summary["seconds"]),
            (&2.into(), &2.5.into())
        );
        assert_eq!(
            keys(summary),
            sorted(&[
                "name",
                "strategy",
                "freeze",
                "decoders",
                "groups",
                "mean_psnr",
                "mean_bits_per_texel",
                "predicted",
                "final_loss",
                "decoder_steps",
                "seconds",
                "loaded",
            ])
        );
    }
}
