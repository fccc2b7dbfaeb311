//! One evaluation over several seeds (`eval --seeds`): each seed's evaluation (its own
//! k-means, random grouping and training) in its own folder `seed-<s>/` of the out
//! folder, and over the seeds every PSNR cell of Table 2, the sweep and the freezing
//! ablation as mean, sample standard deviation and range, with the paired differences
//! the study's claims rest on (each strategy against the baseline of the same seed,
//! clustered against random of the same seed) and in how many seeds the paper's
//! ordering baseline > clustered > random > single holds.
//!
//! An evaluation stopped in a seed (interrupted, or by `--stop-after`) still writes the
//! study: over the seeds that finished and the Table 2 runs that finished in the seed it
//! stopped in ([`UnfinishedSeed`]), naming what did not run.
//!
//! The out folder's own files: `table2.{csv,md}`, `m_sweep.{csv,md}`,
//! `freezing.{csv,md}` (sections that ran), `summary.json` and `report.md`, each written
//! through a temporary file and a rename. This module trains nothing: it reads the
//! per-seed reports that [`evaluate`](super::evaluate) returns.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::runs::{Freeze, RunRecord};
use super::tables::{Cell, FreezingTable, Grid, SweepTable, Table2, Table2Row};
use super::{EvalError, prepare_out_dir, write_text};
use crate::cluster::Strategy;

/// The paper's ordering of Table 2's strategies, best first.
pub const PAPER_ORDER: [Strategy; 4] = [
    Strategy::Baseline,
    Strategy::Clustered,
    Strategy::Random,
    Strategy::Single,
];

/// The folder of seed `seed`'s evaluation inside the out folder `out`.
pub fn seed_dir(out: &Path, seed: u64) -> PathBuf {
    out.join(format!("seed-{seed}"))
}

/// Create the out folder of an evaluation over seeds (or budgets, [`super::budgets`]); a
/// non-empty one is refused unless `resume` (each seed's folder is then continued as
/// `eval --resume` continues one).
pub fn prepare(out: &Path, resume: bool) -> Result<(), EvalError> {
    prepare_out_dir(out, resume)
}

/// The distinct seeds of `seeds` in the order given; an error for an empty list.
pub fn distinct_seeds(seeds: &[u64]) -> Result<Vec<u64>, EvalError> {
    let mut v: Vec<u64> = Vec::with_capacity(seeds.len());
    for &s in seeds {
        if !v.contains(&s) {
            v.push(s);
        }
    }
    if v.is_empty() {
        return Err(EvalError::Inputs {
            reason: "--seeds lists no seed".into(),
        });
    }
    Ok(v)
}

/// A value over the seeds: each seed's (absent where that seed has none) and, over the
/// present ones, their mean, sample standard deviation (two or more values) and range.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeedSpread {
    /// One value per seed, in the seeds' order.
    pub values: Vec<Option<f64>>,
    /// Mean of the present values.
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator); `None` for one value.
    pub sd: Option<f64>,
    /// Smallest present value.
    pub min: f64,
    /// Largest present value.
    pub max: f64,
}

impl SeedSpread {
    /// The spread of `values`; `None` when no value is present.
    pub fn of(values: Vec<Option<f64>>) -> Option<SeedSpread> {
        let present: Vec<f64> = values.iter().flatten().copied().collect();
        if present.is_empty() {
            return None;
        }
        let n = present.len() as f64;
        let mean = present.iter().sum::<f64>() / n;
        let sd = (present.len() > 1)
            .then(|| (present.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
        Some(SeedSpread {
            mean,
            sd,
            min: present.iter().copied().fold(f64::INFINITY, f64::min),
            max: present.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            values,
        })
    }

    /// The per-seed differences `a − b` (absent where either is).
    fn difference(a: &[Option<f64>], b: &[Option<f64>]) -> Option<SeedSpread> {
        SeedSpread::of(a.iter().zip(b).map(|(a, b)| Some((*a)? - (*b)?)).collect())
    }
}

/// The cells of a spread: mean, sd, min, max.
fn spread_cells(s: Option<&SeedSpread>) -> [Cell; 4] {
    [
        Cell::Fixed(s.map(|s| s.mean)),
        Cell::Fixed(s.and_then(|s| s.sd)),
        Cell::Fixed(s.map(|s| s.min)),
        Cell::Fixed(s.map(|s| s.max)),
    ]
}

/// Markdown of a spread: `mean ± sd (min–max)`.
fn spread_markdown(s: Option<&SeedSpread>) -> String {
    match s {
        None => "–".into(),
        Some(s) => match s.sd {
            Some(sd) => format!("{:.2} ± {sd:.2} ({:.2}–{:.2})", s.mean, s.min, s.max),
            None => format!("{:.2}", s.mean),
        },
    }
}

/// The results of one seed's evaluation that the aggregate reads.
#[derive(Clone, Copy, Debug)]
pub struct SeedResult<'a> {
    /// The seed.
    pub seed: u64,
    /// Its Table 2.
    pub table2: &'a Table2,
    /// Its sweep, when it ran.
    pub sweep: Option<&'a SweepTable>,
    /// Its freezing ablation, when it ran.
    pub freezing: Option<&'a FreezingTable>,
}

/// One strategy of Table 2 over the seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StrategySpread {
    /// The strategy.
    pub strategy: Strategy,
    /// Its number of decoders in each seed (k-means may leave a group empty).
    pub decoders: Vec<Option<usize>>,
    /// Mean PSNR over all materials (dB).
    pub psnr: Option<SeedSpread>,
    /// Its PSNR minus the baseline's of the same seed (dB), when Table 2 has `baseline`.
    pub minus_baseline: Option<SeedSpread>,
}

/// One point of the sweep over the seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepSpread {
    /// Requested groups.
    pub m: usize,
    /// The strategy.
    pub strategy: Strategy,
    /// Mean PSNR (dB).
    pub psnr: Option<SeedSpread>,
}

/// One freezing setting over the seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FreezingSpread {
    /// The setting.
    pub freeze: Freeze,
    /// Mean PSNR (dB).
    pub psnr: Option<SeedSpread>,
    /// Mean final loss.
    pub final_loss: Option<SeedSpread>,
}

/// How often the paper's ordering held.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OrderingCheck {
    /// The ordering checked: [`PAPER_ORDER`], best first.
    pub order: Vec<Strategy>,
    /// Seeds in which every strategy's PSNR is above the next one's.
    pub held: Vec<u64>,
    /// Seeds in which it does not (or a PSNR is missing).
    pub failed: Vec<u64>,
}

/// The evaluation over several seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeedStudy {
    /// The seeds, in order.
    pub seeds: Vec<u64>,
    /// Table 2 over the seeds, in the first seed's row order.
    pub table2: Vec<StrategySpread>,
    /// Clustered minus random of the same seed (dB), when Table 2 has both.
    pub clustered_minus_random: Option<SeedSpread>,
    /// The paper's ordering, when Table 2 has all four of its strategies.
    pub ordering: Option<OrderingCheck>,
    /// The sweep over the seeds (points of the first seed that ran it).
    pub sweep: Vec<SweepSpread>,
    /// The freezing ablation over the seeds.
    pub freezing: Vec<FreezingSpread>,
    /// Decoders of the ablation's clustered plan.
    pub freezing_m: Option<usize>,
    /// Where the evaluation stopped before finishing, if it did.
    pub not_run: Option<SeedsNotRun>,
}

/// What an evaluation stopped in a seed did not run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeedsNotRun {
    /// The seed it stopped in.
    pub seed: u64,
    /// Table 2's strategies with no finished run in that seed.
    pub strategies: Vec<Strategy>,
    /// The seeds after it, not started.
    pub later_seeds: Vec<u64>,
}

/// The seed an evaluation stopped in: Table 2 over its finished runs.
#[derive(Clone, Debug)]
pub struct UnfinishedSeed {
    /// Table 2's rows of the finished runs.
    pub table2: Table2,
    /// What did not run (with the seed).
    pub not_run: SeedsNotRun,
}

impl UnfinishedSeed {
    /// Seed `seed`, stopped with `runs` (each of Table 2's strategies with its finished
    /// run's record, or `None`; [`unfinished_table2`](super::unfinished_table2)), over sets
    /// labelled `categories`; `later_seeds` were not started.
    pub fn new(
        seed: u64,
        runs: &[(Strategy, Option<RunRecord>)],
        categories: &[String],
        later_seeds: Vec<u64>,
    ) -> UnfinishedSeed {
        let finished: Vec<_> = runs
            .iter()
            .filter_map(|(strategy, record)| Some((*strategy, record.as_ref()?, None)))
            .collect();
        UnfinishedSeed {
            table2: Table2::new(&finished, categories),
            not_run: SeedsNotRun {
                seed,
                strategies: runs
                    .iter()
                    .filter(|(_, record)| record.is_none())
                    .map(|&(strategy, _)| strategy)
                    .collect(),
                later_seeds,
            },
        }
    }

    /// This seed's entry of the study's results.
    pub fn result(&self) -> SeedResult<'_> {
        SeedResult {
            seed: self.not_run.seed,
            table2: &self.table2,
            sweep: None,
            freezing: None,
        }
    }
}

impl SeedStudy {
    /// The study over `results` (one per seed, in order), with what did not run where the
    /// evaluation stopped in a seed (its finished runs the last of `results`).
    pub fn new(results: &[SeedResult], not_run: Option<SeedsNotRun>) -> SeedStudy {
        let seeds: Vec<u64> = results.iter().map(|r| r.seed).collect();
        fn row<'a>(r: &SeedResult<'a>, s: Strategy) -> Option<&'a Table2Row> {
            r.table2.rows.iter().find(|x| x.strategy == s)
        }
        let psnr_of = |s: Strategy| -> Vec<Option<f64>> {
            results
                .iter()
                .map(|r| row(r, s).and_then(|x| x.figures.mean_psnr))
                .collect()
        };
        let has = |s: Strategy| results.iter().any(|r| row(r, s).is_some());
        let mut strategies: Vec<Strategy> = Vec::new();
        for r in results {
            for x in &r.table2.rows {
                if !strategies.contains(&x.strategy) {
                    strategies.push(x.strategy);
                }
            }
        }
        let baseline = has(Strategy::Baseline).then(|| psnr_of(Strategy::Baseline));
        let table2 = strategies
            .iter()
            .map(|&s| {
                let psnr = psnr_of(s);
                StrategySpread {
                    strategy: s,
                    decoders: results
                        .iter()
                        .map(|r| row(r, s).map(|x| x.figures.decoders))
                        .collect(),
                    minus_baseline: baseline
                        .as_ref()
                        .filter(|_| s != Strategy::Baseline)
                        .and_then(|b| SeedSpread::difference(&psnr, b)),
                    psnr: SeedSpread::of(psnr),
                }
            })
            .collect();
        let clustered_minus_random = (has(Strategy::Clustered) && has(Strategy::Random))
            .then(|| {
                SeedSpread::difference(&psnr_of(Strategy::Clustered), &psnr_of(Strategy::Random))
            })
            .flatten();
        let ordering = PAPER_ORDER.iter().all(|&s| has(s)).then(|| {
            let (mut held, mut failed) = (Vec::new(), Vec::new());
            for r in results {
                let values: Option<Vec<f64>> = PAPER_ORDER
                    .iter()
                    .map(|&s| row(r, s).and_then(|x| x.figures.mean_psnr))
                    .collect();
                // A seed without all four (one an evaluation stopped in) is not counted.
                match values {
                    Some(v) if v.windows(2).all(|w| w[0] > w[1]) => held.push(r.seed),
                    Some(_) => failed.push(r.seed),
                    None => {}
                }
            }
            OrderingCheck {
                order: PAPER_ORDER.to_vec(),
                held,
                failed,
            }
        });
        let sweep = results
            .iter()
            .find_map(|r| r.sweep)
            .map(|first| {
                first
                    .rows
                    .iter()
                    .map(|p| SweepSpread {
                        m: p.m,
                        strategy: p.strategy,
                        psnr: SeedSpread::of(
                            results
                                .iter()
                                .map(|r| {
                                    r.sweep?
                                        .rows
                                        .iter()
                                        .find(|q| q.m == p.m && q.strategy == p.strategy)?
                                        .figures
                                        .mean_psnr
                                })
                                .collect(),
                        ),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let first_freezing = results.iter().find_map(|r| r.freezing);
        let freezing = first_freezing
            .map(|first| {
                first
                    .rows
                    .iter()
                    .map(|f| {
                        let of = |value: fn(&super::FreezingRow) -> Option<f64>| {
                            SeedSpread::of(
                                results
                                    .iter()
                                    .map(|r| {
                                        r.freezing?
                                            .rows
                                            .iter()
                                            .find(|g| g.freeze == f.freeze)
                                            .and_then(value)
                                    })
                                    .collect(),
                            )
                        };
                        FreezingSpread {
                            freeze: f.freeze,
                            psnr: of(|g| g.mean_psnr),
                            final_loss: of(|g| g.final_loss),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        SeedStudy {
            seeds,
            table2,
            clustered_minus_random,
            ordering,
            sweep,
            freezing,
            freezing_m: first_freezing.map(|f| f.m),
            not_run,
        }
    }

    /// Per-seed value columns' headers: `<what>_seed_<s>`.
    fn seed_headers(&self, what: &str) -> Vec<String> {
        self.seeds
            .iter()
            .map(|s| format!("{what}_seed_{s}"))
            .collect()
    }

    /// Table 2 over the seeds as CSV: `strategy,decoders,mean_psnr_db,sd_db,min_db,
    /// max_db,minus_baseline_db,minus_baseline_sd_db,psnr_db_seed_<s>…` (`decoders`: the
    /// per-seed counts joined by `/` where they differ).
    pub fn table2_csv(&self) -> String {
        let mut header: Vec<String> = [
            "strategy",
            "decoders",
            "mean_psnr_db",
            "sd_db",
            "min_db",
            "max_db",
            "minus_baseline_db",
            "minus_baseline_sd_db",
        ]
        .map(String::from)
        .to_vec();
        header.extend(self.seed_headers("psnr_db"));
        Grid {
            header,
            rows: self
                .table2
                .iter()
                .map(|r| {
                    let mut row = vec![Cell::Text(r.strategy.to_string()), decoders(&r.decoders)];
                    row.extend(spread_cells(r.psnr.as_ref()));
                    let d = r.minus_baseline.as_ref();
                    row.extend([
                        Cell::Fixed(d.map(|d| d.mean)),
                        Cell::Fixed(d.and_then(|d| d.sd)),
                    ]);
                    row.extend(per_seed(r.psnr.as_ref(), self.seeds.len()));
                    row
                })
                .collect(),
        }
        .csv()
    }

    /// Table 2 over the seeds as Markdown: `mean ± sd (min–max)` of the PSNR and of the
    /// difference to the baseline, then each seed's PSNR.
    pub fn table2_markdown(&self) -> String {
        let mut header: Vec<String> = ["strategy", "decoders", "mean PSNR (dB)", "− baseline (dB)"]
            .map(String::from)
            .to_vec();
        header.extend(self.seeds.iter().map(|s| format!("seed {s}")));
        let mut s = Grid {
            header,
            rows: self
                .table2
                .iter()
                .map(|r| {
                    let mut row = vec![
                        Cell::Text(r.strategy.to_string()),
                        decoders(&r.decoders),
                        Cell::Text(spread_markdown(r.psnr.as_ref())),
                        Cell::Text(spread_markdown(r.minus_baseline.as_ref())),
                    ];
                    row.extend(per_seed(r.psnr.as_ref(), self.seeds.len()));
                    row
                })
                .collect(),
        }
        .markdown();
        if let Some(d) = &self.clustered_minus_random {
            s.push_str(&format!(
                "\nClustered − random, paired by seed: {} dB.\n",
                spread_markdown(Some(d))
            ));
        }
        if let Some(o) = self
            .ordering
            .as_ref()
            .filter(|o| !o.held.is_empty() || !o.failed.is_empty())
        {
            let order: Vec<String> = o.order.iter().map(Strategy::to_string).collect();
            s.push_str(&format!(
                "\nThe ordering {} held in {} of {} seeds{}.\n",
                order.join(" > "),
                o.held.len(),
                o.held.len() + o.failed.len(),
                if o.failed.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (not in seed {})",
                        o.failed
                            .iter()
                            .map(u64::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            ));
        }
        if let Some(n) = &self.not_run {
            let what = super::not_run_clause(&n.strategies, "column");
            let later = if n.later_seeds.is_empty() {
                String::new()
            } else {
                let seeds: Vec<String> = n.later_seeds.iter().map(u64::to_string).collect();
                format!("; the later seeds {} did not start", seeds.join(", "))
            };
            s.push_str(&format!(
                "\nUnfinished: the evaluation stopped in seed {}, where {what}{later}; the same \
                 command with --resume trains only what is missing.\n",
                n.seed
            ));
        }
        s
    }

    /// The headers of a PSNR spread's columns: `mean_psnr_db,sd_db,min_db,max_db,
    /// psnr_db_seed_<s>…` in CSV, `mean PSNR (dB),seed <s>…` in Markdown.
    fn psnr_headers(&self, csv: bool) -> Vec<String> {
        let mut header = Vec::new();
        if csv {
            header.extend(["mean_psnr_db", "sd_db", "min_db", "max_db"].map(String::from));
            header.extend(self.seed_headers("psnr_db"));
        } else {
            header.push("mean PSNR (dB)".into());
            header.extend(self.seeds.iter().map(|s| format!("seed {s}")));
        }
        header
    }

    /// The cells of a PSNR spread under [`Self::psnr_headers`].
    fn psnr_cells(&self, psnr: Option<&SeedSpread>, csv: bool) -> Vec<Cell> {
        let mut row = Vec::new();
        if csv {
            row.extend(spread_cells(psnr));
        } else {
            row.push(Cell::Text(spread_markdown(psnr)));
        }
        row.extend(per_seed(psnr, self.seeds.len()));
        row
    }

    fn sweep_grid(&self, csv: bool) -> Grid {
        let mut header: Vec<String> = ["m", "strategy"].map(String::from).to_vec();
        header.extend(self.psnr_headers(csv));
        Grid {
            header,
            rows: self
                .sweep
                .iter()
                .map(|p| {
                    let mut row = vec![Cell::Count(p.m), Cell::Text(p.strategy.to_string())];
                    row.extend(self.psnr_cells(p.psnr.as_ref(), csv));
                    row
                })
                .collect(),
        }
    }

    /// The sweep over the seeds as CSV: `m,strategy,mean_psnr_db,sd_db,min_db,max_db,
    /// psnr_db_seed_<s>…`.
    pub fn sweep_csv(&self) -> String {
        self.sweep_grid(true).csv()
    }

    /// The sweep over the seeds as Markdown.
    pub fn sweep_markdown(&self) -> String {
        self.sweep_grid(false).markdown()
    }

    fn freezing_grid(&self, csv: bool) -> Grid {
        let mut header: Vec<String> = vec!["freeze".into()];
        header.extend(self.psnr_headers(csv));
        header.push(
            if csv {
                "final_loss_mean"
            } else {
                "final loss (mean)"
            }
            .into(),
        );
        Grid {
            header,
            rows: self
                .freezing
                .iter()
                .map(|f| {
                    let mut row = vec![Cell::Text(f.freeze.to_string())];
                    row.extend(self.psnr_cells(f.psnr.as_ref(), csv));
                    row.push(Cell::Sci(f.final_loss.as_ref().map(|l| l.mean)));
                    row
                })
                .collect(),
        }
    }

    /// The freezing ablation over the seeds as CSV: `freeze,mean_psnr_db,sd_db,min_db,
    /// max_db,psnr_db_seed_<s>…,final_loss_mean`.
    pub fn freezing_csv(&self) -> String {
        self.freezing_grid(true).csv()
    }

    /// The freezing ablation over the seeds as Markdown.
    pub fn freezing_markdown(&self) -> String {
        self.freezing_grid(false).markdown()
    }

    /// The report: the seeds and their folders, then the three sections.
    pub fn markdown(&self) -> String {
        let seeds: Vec<String> = self.seeds.iter().map(u64::to_string).collect();
        let mut s = format!(
            "# Shared-decoder evaluation over {} seeds\n\nSeeds {} (each seed's evaluation, \
             with its own plans, runs and report, is in `seed-<s>/`). Cells: mean ± sample \
             standard deviation (min–max) over the seeds; differences are paired by seed.\n\n\
             ## Table 2\n\n",
            self.seeds.len(),
            seeds.join(", ")
        );
        s.push_str(&self.table2_markdown());
        if !self.freezing.is_empty() {
            s.push_str(&format!(
                "\n## Freezing ablation (clustered, {} decoders)\n\n",
                self.freezing_m.unwrap_or(0)
            ));
            s.push_str(&self.freezing_markdown());
        }
        if !self.sweep.is_empty() {
            s.push_str("\n## PSNR against the number of decoders\n\n");
            s.push_str(&self.sweep_markdown());
        }
        s
    }

    /// Write the study's files into `out` (see the module docs).
    pub fn write(&self, out: &Path) -> Result<(), EvalError> {
        write_text(&out.join("table2.csv"), &self.table2_csv())?;
        write_text(&out.join("table2.md"), &self.table2_markdown())?;
        if !self.sweep.is_empty() {
            write_text(&out.join("m_sweep.csv"), &self.sweep_csv())?;
            write_text(&out.join("m_sweep.md"), &self.sweep_markdown())?;
        }
        if !self.freezing.is_empty() {
            write_text(&out.join("freezing.csv"), &self.freezing_csv())?;
            write_text(&out.join("freezing.md"), &self.freezing_markdown())?;
        }
        let json = serde_json::to_string_pretty(self).map_err(|e| EvalError::Io {
            path: out.join("summary.json"),
            source: std::io::Error::other(e),
        })?;
        write_text(&out.join("summary.json"), &json)?;
        write_text(&out.join("report.md"), &self.markdown())
    }
}

/// The decoders cell: one count, or the per-seed counts joined by `/` where they differ.
fn decoders(counts: &[Option<usize>]) -> Cell {
    let present: Vec<usize> = counts.iter().flatten().copied().collect();
    match present.first() {
        None => Cell::Text(String::new()),
        Some(&first) if present.iter().all(|&c| c == first) => Cell::Count(first),
        Some(_) => Cell::Text(
            present
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join("/"),
        ),
    }
}

/// Each seed's value (`n` cells, empty where absent).
fn per_seed(s: Option<&SeedSpread>, n: usize) -> Vec<Cell> {
    match s {
        Some(s) => s.values.iter().map(|&v| Cell::Fixed(v)).collect(),
        None => vec![Cell::Fixed(None); n],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::tables::{RunFigures, SweepRow};

    /// A run's figures with `decoders` and mean PSNR `psnr`.
    fn figures(decoders: usize, psnr: f64) -> RunFigures {
        RunFigures {
            decoders,
            mean_psnr: Some(psnr),
            predicted: None,
            seconds: 1.0,
        }
    }

    fn table2(rows: &[(Strategy, usize, f64)]) -> Table2 {
        Table2 {
            categories: Vec::new(),
            rows: rows
                .iter()
                .map(|&(strategy, decoders, psnr)| Table2Row {
                    strategy,
                    run: strategy.to_string(),
                    figures: figures(decoders, psnr),
                    category_psnr: Vec::new(),
                    bits_per_texel: 5.33,
                })
                .collect(),
        }
    }

    fn sweep(points: &[(usize, Strategy, f64)]) -> SweepTable {
        SweepTable {
            rows: points
                .iter()
                .map(|&(m, strategy, psnr)| SweepRow {
                    m,
                    strategy,
                    run: format!("{strategy}_{m}"),
                    figures: figures(m, psnr),
                })
                .collect(),
            baseline: None,
        }
    }

    #[test]
    fn spread_is_the_mean_the_sample_deviation_and_the_range_of_present_values() {
        let s = SeedSpread::of(vec![Some(30.0), None, Some(31.0), Some(33.0)]).expect("values");
        assert!((s.mean - 94.0 / 3.0).abs() < 1e-12);
        // ((−4/3)² + (−1/3)² + (5/3)²) / 2 = 7/3.
        assert!((s.sd.expect("three values") - (7.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!((s.min, s.max), (30.0, 33.0));
        assert_eq!(s.values.len(), 4);
        let one = SeedSpread::of(vec![Some(2.0)]).expect("one value");
        assert_eq!((one.mean, one.sd), (2.0, None));
        assert!(SeedSpread::of(vec![None, None]).is_none());
    }

    #[test]
    fn differences_are_paired_by_seed_and_the_ordering_is_counted() {
        use Strategy::*;
        let t1 = table2(&[
            (Baseline, 4, 30.0),
            (Single, 1, 25.0),
            (Clustered, 2, 29.0),
            (Random, 2, 28.0),
        ]);
        // Seed 2: random above clustered, so the ordering fails there.
        let t2 = table2(&[
            (Baseline, 4, 32.0),
            (Single, 1, 26.0),
            (Clustered, 2, 29.5),
            (Random, 3, 30.0),
        ]);
        let s1 = sweep(&[(2, Clustered, 27.0), (2, Random, 26.0)]);
        let s2 = sweep(&[(2, Clustered, 28.0), (2, Random, 27.0)]);
        let study = SeedStudy::new(
            &[
                SeedResult {
                    seed: 7,
                    table2: &t1,
                    sweep: Some(&s1),
                    freezing: None,
                },
                SeedResult {
                    seed: 9,
                    table2: &t2,
                    sweep: Some(&s2),
                    freezing: None,
                },
            ],
            None,
        );
        assert_eq!(study.seeds, vec![7, 9]);
        let row = |s: Strategy| study.table2.iter().find(|r| r.strategy == s).expect("row");
        let clustered = row(Clustered);
        assert_eq!(clustered.psnr.as_ref().expect("psnr").mean, 29.25);
        // Paired: (29 − 30, 29.5 − 32) = (−1, −2.5), not 29.25 − 31.
        let d = clustered.minus_baseline.as_ref().expect("difference");
        assert_eq!((d.mean, d.min, d.max), (-1.75, -2.5, -1.0));
        assert!(row(Baseline).minus_baseline.is_none());
        let cr = study
            .clustered_minus_random
            .as_ref()
            .expect("clustered − random");
        assert_eq!(cr.values, vec![Some(1.0), Some(-0.5)]);
        let o = study.ordering.as_ref().expect("ordering");
        assert_eq!((o.held.clone(), o.failed.clone()), (vec![7], vec![9]));
        assert_eq!(study.sweep.len(), 2);
        assert_eq!(study.sweep[0].psnr.as_ref().expect("sweep").mean, 27.5);
        // Differing decoder counts are shown per seed.
        let csv = study.table2_csv();
        let random_line = csv
            .lines()
            .find(|l| l.starts_with("random,"))
            .expect("random row");
        assert!(
            random_line.starts_with("random,2/3,29.0000,"),
            "{random_line}"
        );
        assert!(
            csv.lines()
                .next()
                .expect("header")
                .ends_with("psnr_db_seed_7,psnr_db_seed_9")
        );
        let md = study.table2_markdown();
        assert!(md.contains("held in 1 of 2 seeds (not in seed 9)"), "{md}");
        assert!(md.contains("29.25 ± 0.35 (29.00–29.50)"), "{md}");
    }

    #[test]
    fn seeds_are_deduplicated_and_an_empty_list_is_refused() {
        assert_eq!(distinct_seeds(&[3, 1, 3, 2]).expect("seeds"), vec![3, 1, 2]);
        assert!(distinct_seeds(&[]).is_err());
        assert_eq!(
            seed_dir(Path::new("out"), 4),
            Path::new("out").join("seed-4")
        );
    }
}
