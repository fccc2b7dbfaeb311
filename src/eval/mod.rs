//! The shared-decoder study on our data (`neurotex eval`): the paper's Table 2 (mean
//! PSNR per grouping strategy, overall and per category), the gradual-freezing ablation
//! (its Figures 5–6) and a sweep over the number of decoders, clustered against random
//! (and `divergence-aware` when Table 2 has it). With a screen co-occurrence record of
//! the scene's views, every run's predicted divergence 𝒟 on those views stands beside
//! its PSNR.
//!
//! ```text
//! sets + categories ──plan_eval──► EvalPlan: a plan per strategy, the distinct runs
//!  (+ co-occurrence                (sections share identical trainings), which run
//!     record)                      answers which table cell, each run's predicted 𝒟
//!                   ──evaluate───► per run: ntc::compress ─► runs/<name>.json
//!                                  (loaded instead of retrained on --resume)
//!                                  ─► EvalReport ─► the out folder (below)
//! ```
//!
//! The out folder: `table2.{csv,md}`, `plans/<strategy>.json` and the contact sheets of
//! the clustered and divergence-aware plans `plans/<strategy>.png`; `freezing.{csv,md}`,
//! `freezing_curves.{csv,png}`; `m_sweep.{csv,md,png}`; `summary.json` (setup and every
//! run) and `report.md`; and `runs/<name>.json` (`.ntc` too with `keep_packages`). Every
//! file is written through a temporary file and a rename.
//!
//! Sub-modules: `runs` (freezing settings, run names, sharing, run records), `divergence`
//! (the co-occurrence record checked against the sets, each run's predicted 𝒟),
//! `tables` (the tables and the report), `figures` (the charts' panels), [`study_shards`]
//! (`eval --shard I/N` and `eval --merge`) and [`seeds`] (`eval --seeds`: one evaluation
//! per seed in `seed-<s>/`, every cell as mean, deviation and range over the seeds) and
//! [`budgets`] (the budget in epochs and samples, `eval --epochs`; `eval --budgets`: one
//! evaluation per budget in `budget-<b>/`, PSNR against budget). This module trains only through
//! [`ntc::compress`](crate::ntc::compress::compress) and renders nothing.

pub mod budgets;
mod divergence;
mod figures;
pub mod rd;
mod runs;
pub mod seeds;
pub mod study_shards;
mod tables;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use crate::charts::{PlotError, write_panels_png};
use crate::cluster::{
    ClusterError, CooccurrenceInput, EmbedderChoice, Plan, PlanInputs, Strategy, embed_sets,
    make_plan_with, write_contact_sheet,
};
use crate::gpu::GpuContext;
use crate::ntc::TrainConfig;
use crate::ntc::compress::{
    CompressError, CompressJob, CompressOptions, RateControl, compress, group_main_steps,
};
use crate::ntc::train::LossWeighting;
use crate::ntc::train::gpu::{LatentAdam, TrainKernel, TrainProgress};
use crate::ntc::train::schedule::finetune_steps;
use crate::texture::{CHANNELS, TextureSet};

pub use budgets::TrainingBudget;
pub use divergence::{RecordedViews, RunDivergence};
pub use figures::{CHART_SIZE, freezing_panel, sweep_panel};
pub use runs::{
    CurvePoint, Freeze, GroupResult, MaterialResult, RunList, RunRecord, RunSpec, default_sweep,
    run_name,
};
pub use tables::{
    EvalReport, FreezingRow, FreezingTable, NO_CATEGORY, RunFigures, RunSummary, SweepRow,
    SweepTable, Table2, Table2Row, category_columns, mean_curve,
};

/// The strategies of Table 2, in the paper's order (the default list; `divergence-aware`
/// runs only when asked for, as it needs a co-occurrence record).
pub const STRATEGIES: [Strategy; 5] = [
    Strategy::Baseline,
    Strategy::Single,
    Strategy::Clustered,
    Strategy::Random,
    Strategy::Category,
];

/// The default freezing settings of the ablation: none, and from 25, 50 and 75 % of
/// the main steps.
pub const DEFAULT_FREEZE: [Freeze; 4] = [
    Freeze::Off,
    Freeze::At(0.25),
    Freeze::At(0.5),
    Freeze::At(0.75),
];

/// Errors of an evaluation. Each names the file, run or input involved.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// `category` was asked for, but no set has a category label.
    #[error(
        "strategy `category` needs category labels, but no texture set of {inputs} has one ({}); leave `category` out of --strategies",
        crate::inputs::CATEGORY_LABEL_SOURCES
    )]
    NoCategories {
        /// The inputs.
        inputs: String,
    },
    /// The inputs disagree with each other (one category and one constant per set).
    #[error("evaluation inputs: {reason}")]
    Inputs {
        /// What is wrong.
        reason: String,
    },
    /// `divergence-aware` was asked for without a co-occurrence record.
    #[error(
        "strategy `divergence-aware` needs a co-occurrence record of the scene's views, and {inputs} gives none (manifests have no views): pass --cooccurrence FILE (a record written by `neurotex cluster --record-cooccurrence FILE`), evaluate one --scene (its views are recorded into its package cache), or leave `divergence-aware` out of --strategies"
    )]
    NoCooccurrence {
        /// The inputs.
        inputs: String,
    },
    /// The co-occurrence record is not of the evaluated texture sets.
    #[error(
        "{file}: the co-occurrence record is not of the evaluated texture sets ({reason}); record the views of the evaluated scene, or pass that scene's record"
    )]
    CooccurrenceSets {
        /// The record file.
        file: PathBuf,
        /// Which sets differ.
        reason: String,
    },
    /// Embedding the sets or building a plan failed.
    #[error("{what}: {source}")]
    Plan {
        /// Which plan (or the embedding).
        what: String,
        /// The cause.
        source: ClusterError,
    },
    /// Writing a plan or the contact sheet failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The out folder holds files and `resume` is off.
    #[error(
        "{dir} is not empty; pass --resume to continue the evaluation there, or choose an empty folder"
    )]
    OutNotEmpty {
        /// The out folder.
        dir: PathBuf,
    },
    /// A training run failed.
    #[error("run `{run}`: {source}")]
    Compress {
        /// The run's name.
        run: String,
        /// The cause (boxed: it is large).
        source: Box<CompressError>,
    },
    /// Interrupted: finished runs and the current run's progress are kept.
    #[error(
        "interrupted; finished runs are kept in {runs} — run the same command with --resume to continue"
    )]
    Interrupted {
        /// The runs folder.
        runs: PathBuf,
    },
    /// A run record cannot be read or does not match the evaluation.
    #[error("{path}: {reason}")]
    RunFile {
        /// The record.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file or folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A chart could not be drawn or written.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// A shard's folder that cannot be merged (see [`study_shards`]): not a shard's, damaged, of
    /// another evaluation, or given twice.
    #[error("{path}: {reason}")]
    Part {
        /// The shard's folder or one of its files.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Shards missing from a merge.
    #[error(
        "cannot merge: {missing} missing (of {count} shards); run them and merge all {count} folders"
    )]
    MissingShards {
        /// Each missing shard with its runs.
        missing: String,
        /// The number of shards.
        count: u32,
    },
}

/// The texture sets an evaluation reads, decoded once by the caller.
#[derive(Clone, Copy, Debug)]
pub struct EvalInputs<'a> {
    /// The sets.
    pub sets: &'a [TextureSet],
    /// One category label per set (empty when unknown).
    pub categories: &'a [String],
    /// Per set: the material constants the packages store (see
    /// [`set_constants`](crate::texture::set_constants)).
    pub constants: &'a [[f32; CHANNELS]],
    /// The input files, for plans and reports.
    pub description: &'a str,
    /// The screen co-occurrence record of the scene's views (its sets must be `sets`,
    /// by id) with the weight of `divergence-aware`'s divergence term: required by
    /// `divergence-aware`; with it, every run's predicted 𝒟 is reported.
    pub cooccurrence: Option<CooccurrenceInput<'a>>,
}

impl EvalInputs<'_> {
    /// BLAKE3 (hex) of what training sees of the inputs: every decoded set (name and
    /// [`set_digest`](crate::ntc::compress::set_digest)) and its constants. A run record
    /// carries it, so a record trained on images that changed since is not reused.
    pub fn digest(&self) -> String {
        let mut h = blake3::Hasher::new();
        for set in self.sets {
            h.update(set.name.as_bytes());
            h.update(&[0]);
            h.update(crate::ntc::compress::set_digest(set).as_bytes());
        }
        for c in self.constants.iter().flatten() {
            h.update(&c.to_le_bytes());
        }
        h.finalize().to_hex().to_string()
    }

    fn check(&self) -> Result<(), EvalError> {
        let n = self.sets.len();
        let bad = |what: &str, len: usize| EvalError::Inputs {
            reason: format!("{len} {what} for {n} texture sets"),
        };
        if n == 0 {
            return Err(EvalError::Inputs {
                reason: "no texture sets".into(),
            });
        }
        if self.categories.len() != n {
            return Err(bad("category labels", self.categories.len()));
        }
        if self.constants.len() != n {
            return Err(bad("constant sets", self.constants.len()));
        }
        Ok(())
    }
}

/// How to evaluate.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    /// Strategies of Table 2; `None`: all of [`STRATEGIES`], `category` left out (with a
    /// note) when no set has a category. Asking for `category` explicitly without
    /// categories is an error, and so is `divergence-aware` without a co-occurrence
    /// record ([`EvalInputs::cooccurrence`]); with `divergence-aware` listed, the sweep
    /// runs it at every `m` too.
    pub strategies: Option<Vec<Strategy>>,
    /// Groups of `clustered`, `random` and `divergence-aware` in Table 2 and the ablation.
    pub m: usize,
    /// The embedder of the clustered plans.
    pub embedder: EmbedderChoice,
    /// The training settings; their freezing start is the default freezing setting
    /// (Table 2 and the sweep use it).
    pub train: TrainConfig,
    /// The recipe's name, for the reports.
    pub recipe: String,
    /// Main training steps per texture set: a group of `k` sets trains `k` times as many
    /// ([`group_main_steps`]), so every strategy
    /// gives each material the same samples.
    pub steps: u64,
    /// The training kernels; `None` for the adapter's best.
    pub kernel: Option<TrainKernel>,
    /// How Adam steps the latents (the same results either way).
    pub latent_adam: LatentAdam,
    /// Seed of k-means, the random grouping and training.
    pub seed: u64,
    /// Progress and loss-curve interval in steps.
    pub log_every: u64,
    /// Freezing settings of the ablation.
    pub freeze: Vec<Freeze>,
    /// Decoder counts of the sweep; `None`: [`default_sweep`].
    pub m_sweep: Option<Vec<usize>>,
    /// Run the freezing ablation.
    pub ablation: bool,
    /// Run the decoder-count sweep.
    pub sweep: bool,
    /// Load finished runs from the out folder instead of retraining them (and continue
    /// an interrupted one); without it the out folder must be empty.
    pub resume: bool,
    /// Keep each run's `.ntc` package next to its record.
    pub keep_packages: bool,
    /// Measure each set's ꟻLIP in the run records (decoded on the CPU).
    pub flip: bool,
    /// The loss weights of every run.
    pub loss_weights: LossWeighting,
    /// No group of any run starts training at or after this instant (`--stop-after`;
    /// [`CompressOptions::start_by`]): the evaluation then ends
    /// [`EvalError::Interrupted`], its finished runs and groups kept for `resume`.
    pub start_by: Option<std::time::Instant>,
    /// The command line, for the summary.
    pub command_line: String,
}

impl EvalOptions {
    /// The compression settings of one run trained with `train`: no BCn baselines and a
    /// fixed preset, the rest as the evaluation's.
    pub(crate) fn compress_options(&self, train: TrainConfig) -> CompressOptions {
        CompressOptions {
            train,
            steps: self.steps,
            seed: self.seed,
            resume: self.resume,
            skip_bcn: true,
            log_every: self.log_every,
            rate: RateControl::Fixed,
            kernel: self.kernel,
            latent_adam: self.latent_adam,
            input_files: Vec::new(),
            loss_weights: self.loss_weights,
            flip: self.flip,
            start_by: self.start_by,
        }
    }
}

/// One point of the sweep: the run of `strategy` at `m` groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepPoint {
    /// Requested groups.
    pub m: usize,
    /// `clustered`, `random` or `divergence-aware`.
    pub strategy: Strategy,
    /// Index into [`EvalPlan::runs`].
    pub run: usize,
}

/// What an evaluation will train, and which run answers which table cell.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalPlan {
    /// The embedder (name and version).
    pub embedder: String,
    /// Number of texture sets.
    pub sets: usize,
    /// The plan of each Table 2 strategy, in order.
    pub plans: Vec<Plan>,
    /// The clustered plan at `m` (Table 2's, the ablation's), when either uses it.
    pub clustered: Option<Plan>,
    /// The distinct runs, in training order.
    pub runs: Vec<RunSpec>,
    /// Table 2: each strategy's run (index into `runs`).
    pub table2: Vec<(Strategy, usize)>,
    /// The ablation: each freezing setting's run.
    pub freezing: Vec<(Freeze, usize)>,
    /// The sweep's points.
    pub sweep: Vec<SweepPoint>,
    /// The run whose decoders are all unshared (the sweep's reference), if any.
    pub baseline: Option<usize>,
    /// The default freezing setting.
    pub default_freeze: Freeze,
    /// Main steps per texture set ([`EvalOptions::steps`]).
    pub steps_per_set: u64,
    /// Fine-tuning steps as a fraction of a group's main steps.
    pub finetune_fraction: f64,
    /// Each run's predicted divergence on the co-occurrence record, when one is given.
    pub divergence: Option<RunDivergence>,
    /// Things left out and why.
    pub notes: Vec<String>,
}

impl EvalPlan {
    /// Group trainings over all runs.
    pub fn group_trainings(&self) -> usize {
        self.runs.iter().map(RunSpec::decoders).sum()
    }

    /// Training steps over all runs, fine-tuning included: a group of `k` sets trains
    /// `k · steps_per_set` main steps ([`group_main_steps`]) plus its fine-tuning, so
    /// every run costs about the same (the cost of the evaluation is about proportional).
    pub fn total_steps(&self) -> u64 {
        self.runs
            .iter()
            .flat_map(|r| &r.groups)
            .map(|g| {
                let main = group_main_steps(self.steps_per_set, g.len());
                main + finetune_steps(main, self.finetune_fraction)
            })
            .sum()
    }

    /// Where run `i` is used: `Table 2 clustered`, `freezing none`, `sweep m=4 random`.
    fn uses(&self, i: usize) -> Vec<String> {
        let mut v: Vec<String> = self
            .table2
            .iter()
            .filter(|t| t.1 == i)
            .map(|(s, _)| format!("Table 2 {s}"))
            .collect();
        v.extend(
            self.freezing
                .iter()
                .filter(|f| f.1 == i)
                .map(|(f, _)| format!("freezing {f}")),
        );
        v.extend(
            self.sweep
                .iter()
                .filter(|p| p.run == i)
                .map(|p| format!("sweep m={} {}", p.m, p.strategy)),
        );
        v
    }
}

impl std::fmt::Display for EvalPlan {
    /// A header with the totals, then one line per run with its uses.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} texture sets, embedder {}: {} runs, {} group trainings, {} main steps per set \
             ({} steps in all with fine-tuning)",
            self.sets,
            self.embedder,
            self.runs.len(),
            self.group_trainings(),
            self.steps_per_set,
            self.total_steps()
        )?;
        if let Some(d) = &self.divergence {
            let v = &d.views;
            writeln!(
                f,
                "predicted 𝒟 on {} recorded views ({}×{}, {} tiles) of {} in {}",
                v.views, v.size[0], v.size[1], v.tile, v.scene, v.file
            )?;
        }
        let width = self.runs.iter().map(|r| r.name.len()).max().unwrap_or(0);
        for (i, r) in self.runs.iter().enumerate() {
            let predicted = self
                .divergence
                .as_ref()
                .and_then(|d| d.runs.get(i))
                .map_or(String::new(), |p| format!("𝒟 {:.4}  ", p.divergence));
            writeln!(
                f,
                "  {:<width$}  decoders {:>4}  freeze {:<5}  {predicted}{}",
                r.name,
                r.decoders(),
                r.freeze.to_string(),
                self.uses(i).join(", ")
            )?;
        }
        Ok(())
    }
}

/// Plan an evaluation: embed the sets, build the plans of every section and the
/// distinct runs, and predict each run's divergence on the co-occurrence record when one
/// is given. Errors: `category` without categories, `divergence-aware` without a record,
/// a record of other sets, `m` (or a sweep point) outside 1..=number of sets, an embedder
/// failure.
pub fn plan_eval(inputs: &EvalInputs, opts: &EvalOptions) -> Result<EvalPlan, EvalError> {
    inputs.check()?;
    let n = inputs.sets.len();
    let labelled = crate::inputs::has_category_labels(inputs.categories);
    let mut notes = Vec::new();
    let mut strategies: Vec<Strategy> = Vec::new();
    match &opts.strategies {
        Some(list) => {
            if list.contains(&Strategy::Category) && !labelled {
                return Err(EvalError::NoCategories {
                    inputs: inputs.description.to_string(),
                });
            }
            for &s in list {
                if !strategies.contains(&s) {
                    strategies.push(s);
                }
            }
        }
        None => {
            strategies = STRATEGIES.to_vec();
            if !labelled {
                strategies.retain(|&s| s != Strategy::Category);
                notes.push(format!(
                    "strategy `category` left out: no texture set of {} has a category label",
                    inputs.description
                ));
            }
        }
    }
    if strategies.contains(&Strategy::DivergenceAware) && inputs.cooccurrence.is_none() {
        return Err(EvalError::NoCooccurrence {
            inputs: inputs.description.to_string(),
        });
    }
    let table = inputs
        .cooccurrence
        .as_ref()
        .map(|c| divergence::table(c, inputs.sets))
        .transpose()?;
    let embeddings = embed_sets(inputs.sets, &opts.embedder).map_err(|source| EvalError::Plan {
        what: "embedding the texture sets".into(),
        source,
    })?;
    let plan_inputs = PlanInputs {
        categories: Some(inputs.categories),
        cooccurrence: inputs.cooccurrence,
    };
    let plan = |strategy: Strategy, m: usize, what: String| {
        make_plan_with(strategy, &embeddings, m, opts.seed, &plan_inputs)
            .map(|mut p| {
                p.input = inputs.description.to_string();
                p
            })
            .map_err(|source| EvalError::Plan { what, source })
    };
    let groups =
        |p: &Plan| -> Vec<Vec<usize>> { p.groups.iter().map(|g| g.indices.clone()).collect() };
    let default_freeze = Freeze::of(&opts.train);
    let name = |s: Strategy, m: usize, f: Freeze| run_name(s, m, f, default_freeze);
    let mut list = RunList::new(opts.train.freeze_single);

    let mut plans = Vec::new();
    let mut table2 = Vec::new();
    for &s in &strategies {
        let p = plan(
            s,
            opts.m,
            format!("Table 2 strategy `{s}` (--m {})", opts.m),
        )?;
        table2.push((
            s,
            list.request(
                name(s, opts.m, default_freeze),
                s,
                groups(&p),
                default_freeze,
            ),
        ));
        plans.push(p);
    }
    let clustered = match plans.iter().find(|p| p.strategy == Strategy::Clustered) {
        Some(p) => Some(p.clone()),
        None if opts.ablation => Some(plan(
            Strategy::Clustered,
            opts.m,
            format!("the freezing ablation's clustered plan (--m {})", opts.m),
        )?),
        None => None,
    };
    let mut freezing = Vec::new();
    if let (true, Some(p)) = (opts.ablation, &clustered) {
        for &f in &opts.freeze {
            if freezing.iter().any(|&(g, _)| g == f) {
                continue;
            }
            let s = Strategy::Clustered;
            freezing.push((f, list.request(name(s, opts.m, f), s, groups(p), f)));
        }
    }
    let mut sweep = Vec::new();
    if opts.sweep {
        let mut ms = opts
            .m_sweep
            .clone()
            .unwrap_or_else(|| default_sweep(n, opts.m));
        ms.sort_unstable();
        ms.dedup();
        let mut swept = vec![Strategy::Clustered, Strategy::Random];
        if strategies.contains(&Strategy::DivergenceAware) {
            swept.push(Strategy::DivergenceAware);
        }
        for m in ms {
            for &s in &swept {
                let p = plan(s, m, format!("sweep point m = {m}"))?;
                let run = list.request(name(s, m, default_freeze), s, groups(&p), default_freeze);
                sweep.push(SweepPoint {
                    m,
                    strategy: s,
                    run,
                });
            }
        }
    }
    let baseline = list.runs.iter().position(|r| r.decoders() == n);
    let divergence = table
        .as_ref()
        .zip(inputs.cooccurrence.as_ref())
        .map(|(t, c)| divergence::predict_runs(t, c, &list.runs));
    Ok(EvalPlan {
        embedder: format!("{} v{}", embeddings.embedder, embeddings.embedder_version),
        sets: n,
        plans,
        clustered,
        runs: list.runs,
        table2,
        freezing,
        sweep,
        baseline,
        default_freeze,
        steps_per_set: opts.steps,
        finetune_fraction: opts.train.finetune_fraction,
        divergence,
        notes,
    })
}

/// What [`evaluate`] reports as it goes. `run` counts from 0 to `runs - 1`.
#[derive(Debug)]
pub enum EvalEvent<'a> {
    /// A run starts training.
    RunStarted {
        /// Its index.
        run: usize,
        /// Number of runs.
        runs: usize,
        /// The run.
        spec: &'a RunSpec,
    },
    /// Training progress of one group of the current run.
    Training {
        /// The run's index.
        run: usize,
        /// Number of runs.
        runs: usize,
        /// The run.
        spec: &'a RunSpec,
        /// The device training it (index into the evaluation's devices).
        device: usize,
        /// The group (decoder) in training.
        group: usize,
        /// Groups of the run.
        groups: usize,
        /// The trainer's progress.
        progress: &'a TrainProgress,
    },
    /// A run is done: trained now, or `loaded` from the record of an earlier invocation.
    RunFinished {
        /// Its index.
        run: usize,
        /// Number of runs.
        runs: usize,
        /// Its record.
        record: &'a RunRecord,
        /// Where the record is.
        path: &'a Path,
        /// Loaded rather than trained.
        loaded: bool,
    },
}

/// Write `text` to `path` through a temporary file and a rename.
fn write_text(path: &Path, text: &str) -> Result<(), EvalError> {
    crate::io::write_atomic(path, text.as_bytes()).map_err(|source| EvalError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Create `dir` (and parents); refuse a non-empty one unless `resume`.
fn prepare_out_dir(dir: &Path, resume: bool) -> Result<(), EvalError> {
    let io = |source| EvalError::Io {
        path: dir.to_path_buf(),
        source,
    };
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if !resume && entries.next().is_some() {
                return Err(EvalError::OutNotEmpty {
                    dir: dir.to_path_buf(),
                });
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(io)
        }
        Err(e) => Err(io(e)),
    }
}

/// Run the evaluation `plan` (from [`plan_eval`] with the same inputs and options) on
/// `devices` (each run's groups spread over them) into the folder `out`, and write every
/// table, chart and summary there. `progress` hears of every run and of training
/// progress; setting `cancel` stops after the current training chunk with
/// [`EvalError::Interrupted`].
pub fn evaluate(
    devices: &[GpuContext],
    inputs: &EvalInputs,
    plan: &EvalPlan,
    opts: &EvalOptions,
    out: &Path,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(&EvalEvent),
) -> Result<EvalReport, EvalError> {
    let all: Vec<usize> = (0..plan.runs.len()).collect();
    let records = train_runs(devices, inputs, plan, opts, &all, out, cancel, progress)?;
    let mut adapters: Vec<String> = devices.iter().map(GpuContext::describe).collect();
    adapters.dedup();
    let report = build_report(&adapters.join("; "), inputs, plan, opts, &records);
    write_outputs(out, &report)?;
    Ok(report)
}

/// Prepare the out folder `out` (see [`prepare_out_dir`]) with its `runs/` and `plans/`
/// folders, and write the plans and the contact sheets of the clustered and
/// divergence-aware plans. Returns the runs folder.
fn prepare_outputs(
    inputs: &EvalInputs,
    plan: &EvalPlan,
    opts: &EvalOptions,
    out: &Path,
) -> Result<PathBuf, EvalError> {
    inputs.check()?;
    prepare_out_dir(out, opts.resume)?;
    let runs_dir = out.join("runs");
    let plans_dir = out.join("plans");
    for dir in [&runs_dir, &plans_dir] {
        std::fs::create_dir_all(dir).map_err(|source| EvalError::Io {
            path: dir.clone(),
            source,
        })?;
    }
    for p in &plan.plans {
        p.write(&plans_dir.join(format!("{}.json", p.strategy)))?;
    }
    if let Some(p) = &plan.clustered {
        p.write(&plans_dir.join("clustered.json"))?;
        write_contact_sheet(&plans_dir.join("clustered.png"), inputs.sets, p)?;
    }
    // The divergence-aware sheet marks the sets moved away from their cluster.
    for p in plan
        .plans
        .iter()
        .filter(|p| p.strategy == Strategy::DivergenceAware)
    {
        write_contact_sheet(
            &plans_dir.join(format!("{}.png", p.strategy)),
            inputs.sets,
            p,
        )?;
    }
    Ok(runs_dir)
}

/// The runs `selection` (indices into `plan.runs`, each once) of the evaluation into
/// `out` ([`prepare_outputs`]): each trained into `runs/<name>.json`, or with `resume`
/// loaded from there when its record matches. Returns each selected run's record and
/// whether it was loaded, in `selection` order.
#[expect(
    clippy::too_many_arguments,
    reason = "the evaluation's inputs, plan, options and selection, and the run's output, \
              cancel flag and progress, as `evaluate` and `evaluate_shard` hand them over"
)]
fn train_runs(
    devices: &[GpuContext],
    inputs: &EvalInputs,
    plan: &EvalPlan,
    opts: &EvalOptions,
    selection: &[usize],
    out: &Path,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(&EvalEvent),
) -> Result<Vec<(RunRecord, bool)>, EvalError> {
    let runs_dir = prepare_outputs(inputs, plan, opts, out)?;
    let digest = inputs.digest();
    let runs = plan.runs.len();
    let mut records: Vec<(RunRecord, bool)> = Vec::with_capacity(selection.len());
    for &run in selection {
        let spec = &plan.runs[run];
        let path = runs_dir.join(format!("{}.json", spec.name));
        let train = spec.freeze.apply(&opts.train);
        if opts.resume
            && let Some(record) = finished_record(&path, spec, opts, &digest)?
        {
            progress(&EvalEvent::RunFinished {
                run,
                runs,
                record: &record,
                path: &path,
                loaded: true,
            });
            records.push((record, true));
            continue;
        }
        progress(&EvalEvent::RunStarted { run, runs, spec });
        let package = runs_dir.join(format!("{}.ntc", spec.name));
        let options = opts.compress_options(train.clone());
        let job = CompressJob {
            devices,
            sets: inputs.sets,
            constants: inputs.constants,
            groups: &spec.groups,
            opts: &options,
            inputs: inputs.description,
            out: &package,
            cancel,
        };
        let result = compress(&job, &mut |p| {
            progress(&EvalEvent::Training {
                run,
                runs,
                spec,
                device: p.device,
                group: p.group,
                groups: p.groups,
                progress: &p.train,
            })
        });
        let report = match result {
            Ok((_, report)) => report,
            Err(CompressError::Interrupted { .. }) => {
                return Err(EvalError::Interrupted { runs: runs_dir });
            }
            Err(source) => {
                return Err(EvalError::Compress {
                    run: spec.name.clone(),
                    source: Box::new(source),
                });
            }
        };
        let record = RunRecord::new(spec, &train, &report, &digest);
        record.write(&path)?;
        if !opts.keep_packages {
            std::fs::remove_file(&package).map_err(|source| EvalError::Io {
                path: package.clone(),
                source,
            })?;
        }
        progress(&EvalEvent::RunFinished {
            run,
            runs,
            record: &record,
            path: &path,
            loaded: false,
        });
        records.push((record, false));
    }
    Ok(records)
}

/// The finished record of run `spec` at `path` (`None` when there is none), an error when
/// it is not a record of that run with `opts` on the inputs of `digest`.
fn finished_record(
    path: &Path,
    spec: &RunSpec,
    opts: &EvalOptions,
    digest: &str,
) -> Result<Option<RunRecord>, EvalError> {
    if !path.exists() {
        return Ok(None);
    }
    let record = RunRecord::read(path)?;
    let train = spec.freeze.apply(&opts.train);
    if let Some(reason) = record.mismatch(spec, opts.steps, opts.seed, &train, digest) {
        return Err(EvalError::RunFile {
            path: path.to_path_buf(),
            reason: format!(
                "{reason}; delete it to retrain that run, or evaluate into an empty folder"
            ),
        });
    }
    Ok(Some(record))
}

/// Table 2's runs of the evaluation of `plan` in `out` that stopped before it finished
/// (interrupted, or `--stop-after`): each strategy with its run's record where that run
/// finished.
pub fn unfinished_table2(
    inputs: &EvalInputs,
    plan: &EvalPlan,
    opts: &EvalOptions,
    out: &Path,
) -> Result<Vec<(Strategy, Option<RunRecord>)>, EvalError> {
    let digest = inputs.digest();
    plan.table2
        .iter()
        .map(|&(strategy, run)| {
            let spec = &plan.runs[run];
            let path = out.join("runs").join(format!("{}.json", spec.name));
            Ok((strategy, finished_record(&path, spec, opts, &digest)?))
        })
        .collect()
}

/// What an evaluation stopped in a budget or seed did not run there, for its report:
/// Table 2's `strategies` without a finished run (no PSNR in their `cells`), or that
/// Table 2's runs all finished.
fn not_run_clause(strategies: &[Strategy], cells: &str) -> String {
    if strategies.is_empty() {
        return "Table 2's runs all finished (it stopped in the ablation or the sweep)".into();
    }
    let names: Vec<String> = strategies.iter().map(Strategy::to_string).collect();
    format!("{} did not run (no PSNR in its {cells})", names.join(", "))
}

/// The report of `plan` over its finished runs (`records[i]` is run `i`, with whether it
/// was loaded).
pub fn build_report(
    adapter: &str,
    inputs: &EvalInputs,
    plan: &EvalPlan,
    opts: &EvalOptions,
    records: &[(RunRecord, bool)],
) -> EvalReport {
    let rec = |i: usize| &records[i].0;
    let predicted = |i: usize| {
        plan.divergence
            .as_ref()
            .and_then(|d| d.runs.get(i).copied())
    };
    let table2: Vec<(Strategy, &RunRecord, _)> = plan
        .table2
        .iter()
        .map(|&(s, i)| (s, rec(i), predicted(i)))
        .collect();
    let freezing: Vec<(Freeze, &RunRecord)> =
        plan.freezing.iter().map(|&(f, i)| (f, rec(i))).collect();
    let sweep: Vec<(usize, Strategy, &RunRecord, _)> = plan
        .sweep
        .iter()
        .map(|p| (p.m, p.strategy, rec(p.run), predicted(p.run)))
        .collect();
    EvalReport {
        adapter: adapter.to_string(),
        command_line: opts.command_line.clone(),
        inputs: inputs.description.to_string(),
        sets: plan.sets,
        embedder: plan.embedder.clone(),
        seed: opts.seed,
        recipe: opts.recipe.clone(),
        steps: opts.steps,
        budget: TrainingBudget::new(inputs.sets, &opts.train, opts.steps),
        train: opts.train.clone(),
        table2: Table2::new(&table2, inputs.categories),
        freezing: (!freezing.is_empty()).then(|| {
            FreezingTable::new(plan.clustered.as_ref().map_or(opts.m, |p| p.m), &freezing)
        }),
        sweep: (!sweep.is_empty())
            .then(|| SweepTable::new(&sweep, plan.baseline.and_then(|i| rec(i).mean_psnr))),
        runs: records
            .iter()
            .enumerate()
            .map(|(i, (r, loaded))| RunSummary::new(r, *loaded, predicted(i)))
            .collect(),
        cooccurrence: plan.divergence.as_ref().map(|d| d.views.clone()),
        notes: plan.notes.clone(),
    }
}

/// The files [`write_outputs`] writes into `out` for a report with every section (the
/// freezing and M-sweep files only when the report has those tables).
pub const OUTPUT_FILES: [&str; 11] = [
    "table2.csv",
    "table2.md",
    "freezing.csv",
    "freezing.md",
    "freezing_curves.csv",
    "freezing_curves.png",
    "m_sweep.csv",
    "m_sweep.md",
    "m_sweep.png",
    "summary.json",
    "report.md",
];

/// Write the tables, charts, `summary.json` and `report.md` of `report` into `out`.
pub fn write_outputs(out: &Path, report: &EvalReport) -> Result<(), EvalError> {
    let file = |name: &str| out.join(name);
    write_text(&file("table2.csv"), &report.table2.csv())?;
    write_text(&file("table2.md"), &report.table2.markdown())?;
    let (w, h) = CHART_SIZE;
    if let Some(f) = &report.freezing {
        write_text(&file("freezing.csv"), &f.csv())?;
        write_text(&file("freezing.md"), &f.markdown())?;
        write_text(&file("freezing_curves.csv"), &f.curves_csv())?;
        write_panels_png(&file("freezing_curves.png"), &[freezing_panel(f)], w, h)?;
    }
    if let Some(s) = &report.sweep {
        write_text(&file("m_sweep.csv"), &s.csv())?;
        write_text(&file("m_sweep.md"), &s.markdown())?;
        write_panels_png(&file("m_sweep.png"), &[sweep_panel(s)], w, h)?;
    }
    let json = serde_json::to_string_pretty(report).map_err(|e| EvalError::RunFile {
        path: file("summary.json"),
        reason: e.to_string(),
    })?;
    write_text(&file("summary.json"), &json)?;
    write_text(&file("report.md"), &report.markdown())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::texture::ChannelMask;

    /// A 16² set: warm noise (family 0) or cool stripes (family 1).
    fn set(i: usize) -> TextureSet {
        let n = 16u32;
        let family = i % 2;
        let mut state = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        TextureSet::from_fn(format!("s{i}"), ChannelMask::BASE_COLOR, (n, n), |x, _| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let v = (state >> 58) as u8;
            let rgb = if family == 0 {
                [180 + v, 40 + v, 30]
            } else {
                let on = (x + i as u32) % 6 < 3;
                [30, 60, if on { 220 } else { 120 } - v]
            };
            [
                rgb[0], rgb[1], rgb[2], 255, 128, 128, 255, 255, 255, 255, 255, 255,
            ]
        })
    }

    struct Fixture {
        sets: Vec<TextureSet>,
        categories: Vec<String>,
        constants: Vec<[f32; CHANNELS]>,
    }

    impl Fixture {
        fn new(labelled: bool) -> Fixture {
            let sets: Vec<TextureSet> = (0..6).map(set).collect();
            let categories = (0..6)
                .map(|i| match (labelled, i % 2) {
                    (false, _) => String::new(),
                    (true, 0) => "brick".into(),
                    (true, _) => "fabric".into(),
                })
                .collect();
            Fixture {
                constants: vec![[1.0; CHANNELS]; sets.len()],
                sets,
                categories,
            }
        }

        fn inputs(&self) -> EvalInputs<'_> {
            EvalInputs {
                sets: &self.sets,
                categories: &self.categories,
                constants: &self.constants,
                description: "fixture.csv",
                cooccurrence: None,
            }
        }
    }

    fn options() -> EvalOptions {
        EvalOptions {
            strategies: None,
            m: 2,
            embedder: EmbedderChoice::Stats,
            train: TrainConfig::default(),
            recipe: "default".into(),
            steps: 20,
            kernel: None,
            latent_adam: LatentAdam::Dense,
            seed: 1,
            log_every: 5,
            freeze: vec![Freeze::Off, Freeze::At(0.5)],
            m_sweep: Some(vec![2, 1, 2]),
            ablation: true,
            sweep: true,
            resume: false,
            keep_packages: false,
            flip: false,
            loss_weights: LossWeighting::Fixed,
            start_by: None,
            command_line: "neurotex eval".into(),
        }
    }

    fn names(plan: &EvalPlan) -> Vec<&str> {
        plan.runs.iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn sections_share_runs() {
        let f = Fixture::new(true);
        let plan = plan_eval(&f.inputs(), &options()).unwrap();
        // Category groups = the two families = the clustered plan: one run. The sweep's
        // m = 1 points are `single`, its m = 2 points Table 2's runs.
        assert_eq!(
            names(&plan),
            vec![
                "baseline",
                "single",
                "clustered-m2",
                "random-m2",
                "clustered-m2-freeze-none"
            ]
        );
        let strategies: Vec<Strategy> = plan.table2.iter().map(|t| t.0).collect();
        assert_eq!(strategies, STRATEGIES.to_vec());
        let run_of = |s| plan.table2.iter().find(|t| t.0 == s).unwrap().1;
        assert_eq!(run_of(Strategy::Category), run_of(Strategy::Clustered));
        assert_eq!(plan.freezing, vec![(Freeze::Off, 4), (Freeze::At(0.5), 2)]);
        let sweep: Vec<(usize, usize)> = plan.sweep.iter().map(|p| (p.m, p.run)).collect();
        assert_eq!(sweep, vec![(1, 1), (1, 1), (2, 2), (2, 3)]);
        assert_eq!(plan.baseline, Some(0));
        assert_eq!(plan.group_trainings(), 6 + 1 + 2 + 2 + 2);
        // Every run trains 6 sets × 20 main steps, plus per group ⌈5 % of k · 20⌉.
        assert_eq!(plan.steps_per_set, 20);
        assert_eq!(plan.total_steps(), 5 * 126);
        let single = &plan.runs[1];
        assert_eq!(single.groups, vec![(0..6).collect::<Vec<_>>()]);
        // Clustering keeps the families apart.
        let groups = &plan.runs[2].groups;
        assert!(
            groups.iter().all(|g| g.iter().all(|&s| s % 2 == g[0] % 2)),
            "{groups:?}"
        );
        assert_eq!(plan.clustered.as_ref().map(|p| p.m), Some(2));
        assert_eq!(plan.plans.len(), 5);
        assert!(plan.plans.iter().all(|p| p.input == "fixture.csv"));
        let text = plan.to_string();
        assert!(
            text.contains(
                "5 runs, 13 group trainings, 20 main steps per set (630 steps in all with \
                 fine-tuning)"
            ),
            "{text}"
        );
        assert!(
            text.contains("Table 2 clustered, Table 2 category, freezing 0.5, sweep m=2 clustered"),
            "{text}"
        );
    }

    #[test]
    fn default_sweep_and_switches() {
        let f = Fixture::new(true);
        let opts = EvalOptions {
            m_sweep: None,
            ablation: false,
            strategies: Some(vec![Strategy::Single, Strategy::Single]),
            ..options()
        };
        let plan = plan_eval(&f.inputs(), &opts).unwrap();
        let ms: Vec<usize> = plan.sweep.iter().map(|p| p.m).collect();
        assert_eq!(ms, vec![1, 1, 2, 2, 4, 4, 6, 6]);
        assert!(plan.freezing.is_empty() && plan.clustered.is_none());
        assert_eq!(plan.table2.len(), 1);
        // m = 6 of 6 sets is one decoder per set: the sweep's reference.
        assert_eq!(plan.baseline.map(|i| plan.runs[i].decoders()), Some(6));
        let none = plan_eval(
            &f.inputs(),
            &EvalOptions {
                sweep: false,
                ..opts
            },
        )
        .unwrap();
        assert_eq!(names(&none), vec!["single"]);
        assert_eq!(none.baseline, None);
    }

    #[test]
    fn category_needs_labels() {
        let f = Fixture::new(false);
        let plan = plan_eval(&f.inputs(), &options()).unwrap();
        assert!(plan.table2.iter().all(|t| t.0 != Strategy::Category));
        assert_eq!(plan.notes.len(), 1);
        assert!(plan.notes[0].contains("category") && plan.notes[0].contains("fixture.csv"));
        let explicit = EvalOptions {
            strategies: Some(vec![Strategy::Baseline, Strategy::Category]),
            ..options()
        };
        let e = plan_eval(&f.inputs(), &explicit).unwrap_err().to_string();
        assert!(e.contains("fixture.csv") && e.contains("category"), "{e}");
    }

    #[test]
    fn bad_m_and_inputs_are_errors() {
        let f = Fixture::new(true);
        let e = plan_eval(&f.inputs(), &EvalOptions { m: 7, ..options() })
            .unwrap_err()
            .to_string();
        assert!(e.contains("--m 7") && e.contains("6 texture sets"), "{e}");
        let e = plan_eval(
            &f.inputs(),
            &EvalOptions {
                m_sweep: Some(vec![1, 9]),
                ..options()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("sweep point m = 9"), "{e}");
        let short = EvalInputs {
            categories: &f.categories[..2],
            ..f.inputs()
        };
        let e = plan_eval(&short, &options()).unwrap_err().to_string();
        assert!(e.contains("2 category labels for 6 texture sets"), "{e}");
    }

    /// A record per run of `plan` as if trained: per set 30 dB + decoders + 1 for odd
    /// sets, the first run loaded.
    fn fake_records(plan: &EvalPlan, opts: &EvalOptions) -> Vec<(RunRecord, bool)> {
        plan.runs
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let materials: Vec<MaterialResult> = (0..6)
                    .map(|set| MaterialResult {
                        set,
                        name: format!("s{set}"),
                        group: spec.groups.iter().position(|g| g.contains(&set)).unwrap(),
                        psnr: Some(30.0 + spec.decoders() as f64 + (set % 2) as f64),
                        psnr_exact: false,
                        bits_per_texel: 2.0,
                        flip: None,
                    })
                    .collect();
                let record = RunRecord {
                    name: spec.name.clone(),
                    strategy: spec.strategy,
                    freeze: spec.freeze,
                    groups: spec.groups.clone(),
                    steps: 20,
                    seed: 1,
                    train: spec.freeze.apply(&opts.train),
                    adapter: "test".into(),
                    mean_psnr: Some(30.5 + spec.decoders() as f64),
                    psnr_convention: runs::PSNR_CONVENTION.into(),
                    materials,
                    group_results: spec
                        .groups
                        .iter()
                        .map(|g| GroupResult {
                            sets: g.len(),
                            seconds: 0.5,
                            final_loss: Some(0.01),
                            kernel_ms: None,
                        })
                        .collect(),
                    mean_bits_per_texel: 2.0,
                    seconds: 0.5 * spec.decoders() as f64,
                    curves: (1..=4)
                        .map(|k| CurvePoint {
                            group: 0,
                            step: 5 * k,
                            loss: 0.1 / k as f64,
                        })
                        .collect(),
                    inputs: String::new(),
                };
                (record, i == 0)
            })
            .collect()
    }

    #[test]
    fn report_from_records_and_outputs() {
        let f = Fixture::new(true);
        let opts = options();
        let plan = plan_eval(&f.inputs(), &opts).unwrap();
        let records = fake_records(&plan, &opts);
        let report = build_report("test adapter", &f.inputs(), &plan, &opts, &records);
        assert_eq!(report.table2.categories, vec!["brick", "fabric"]);
        let base = &report.table2.rows[0];
        assert_eq!(
            (base.figures.decoders, base.figures.mean_psnr),
            (6, Some(36.5))
        );
        assert_eq!(base.category_psnr, vec![Some(36.0), Some(37.0)]);
        let sweep = report.sweep.as_ref().unwrap();
        assert_eq!(sweep.baseline, Some(36.5));
        assert_eq!(sweep.rows.len(), 4);
        let freezing = report.freezing.as_ref().unwrap();
        assert_eq!(freezing.m, 2);
        assert_eq!(freezing.rows[0].run, "clustered-m2-freeze-none");
        assert_eq!(report.runs.len(), 5);
        assert!(report.runs[0].loaded && !report.runs[1].loaded);

        let dir = std::env::temp_dir().join(format!("neurotex-eval-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        prepare_out_dir(&dir, false).unwrap();
        write_outputs(&dir, &report).unwrap();
        for name in OUTPUT_FILES {
            assert!(dir.join(name).is_file(), "{name}");
        }
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(summary["command_line"], "neurotex eval");
        assert_eq!(summary["runs"].as_array().map(Vec::len), Some(5));
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(md.contains("## Table 2") && md.contains("freezing_curves.png"));
        // A non-empty folder needs resume.
        let e = prepare_out_dir(&dir, false).unwrap_err().to_string();
        assert!(e.contains("not empty") && e.contains("--resume"), "{e}");
        prepare_out_dir(&dir, true).unwrap();
    }

    /// A record of 4 views of the fixture's sets, listed in `names` order: per view 20
    /// tiles of s0 and s1 together, 20 of s2 and s3, 10 of s4, 10 of s5 alone.
    fn record(names: &[&str]) -> crate::cluster::CooccurrenceRecord {
        use crate::cluster::{CooccurrenceRecord, RecordSource, ViewCounts, ViewSpec};
        let id = |n: &str| names.iter().position(|&x| x == n).map(|i| i as u32);
        let mut histogram = std::collections::BTreeMap::new();
        for (sets, tiles) in [
            (&["s0", "s1"][..], 20),
            (&["s2", "s3"], 20),
            (&["s4"], 10),
            (&["s5"], 10),
        ] {
            let mut ids: Vec<u32> = sets.iter().filter_map(|&n| id(n)).collect();
            ids.sort_unstable();
            histogram.insert(ids, tiles);
        }
        let views = (0..4)
            .map(|k| ViewSpec::Camera {
                name: format!("c{k}"),
                position: [0.0, k as f32, 0.0],
                forward: [0.0, 0.0, -1.0],
                yfov: 1.0,
            })
            .collect();
        let source = RecordSource {
            scene: "fixture.toml".into(),
            scene_files: Vec::new(),
            set_names: names.iter().map(|n| n.to_string()).collect(),
            tile: crate::screen::tiles::TileSize::T8x8,
            size: [64, 64],
            views,
        };
        CooccurrenceRecord::new(source, vec![ViewCounts::from_histogram(histogram); 4]).unwrap()
    }

    #[test]
    fn divergence_aware_runs_beside_clustered_and_every_run_gets_its_predicted_divergence() {
        let f = Fixture::new(true);
        // The record lists the sets in another order than the inputs: matched by id.
        let rec = record(&["s5", "s4", "s3", "s2", "s1", "s0"]);
        let file = std::path::Path::new("views.json");
        let with = |weight: f64| EvalInputs {
            cooccurrence: Some(CooccurrenceInput {
                record: &rec,
                file,
                weight,
            }),
            ..f.inputs()
        };
        let opts = EvalOptions {
            strategies: Some(vec![
                Strategy::Baseline,
                Strategy::Clustered,
                Strategy::Random,
                Strategy::DivergenceAware,
            ]),
            ..options()
        };
        let plan = plan_eval(&with(1.0), &opts).unwrap();
        let strategies: Vec<Strategy> = plan.table2.iter().map(|t| t.0).collect();
        assert_eq!(strategies, opts.strategies.clone().unwrap());
        let run_of = |s| plan.table2.iter().find(|t| t.0 == s).unwrap().1;
        let aware = run_of(Strategy::DivergenceAware);
        assert_eq!(plan.runs[aware].name, "divergence-aware-m2");
        let d = plan.divergence.as_ref().expect("predictions");
        assert_eq!(d.runs.len(), plan.runs.len());
        assert_eq!((d.views.views, d.views.covered_tiles), (4, 240));
        assert_eq!(d.views.file, "views.json");
        let predicted = |s| d.runs[run_of(s)].divergence;
        // One decoder per set: the 160 tiles of two sets run two decoders.
        assert!((predicted(Strategy::Baseline) - 160.0 / 240.0).abs() < 1e-12);
        // The clusters keep the families (even, odd) apart, so s0|s1 and s2|s3 split.
        assert!((predicted(Strategy::Clustered) - 160.0 / 240.0).abs() < 1e-12);
        // Divergence alone (w = 1) puts each co-occurring pair in one group.
        assert_eq!(predicted(Strategy::DivergenceAware), 0.0);
        // The sweep runs divergence-aware at every m, m = 1 being `single` (𝒟 0).
        let swept: Vec<(usize, Strategy)> = plan.sweep.iter().map(|p| (p.m, p.strategy)).collect();
        assert_eq!(
            swept,
            [1, 2]
                .into_iter()
                .flat_map(|m| {
                    [
                        Strategy::Clustered,
                        Strategy::Random,
                        Strategy::DivergenceAware,
                    ]
                    .map(|s| (m, s))
                })
                .collect::<Vec<_>>()
        );
        let single = plan.sweep[2].run;
        assert_eq!(plan.runs[single].decoders(), 1);
        assert_eq!(d.runs[single].divergence, 0.0);
        let text = plan.to_string();
        assert!(
            text.contains("predicted 𝒟 on 4 recorded views (64×64, 8x8 tiles)"),
            "{text}"
        );
        assert!(text.contains("𝒟 0.6667  Table 2 clustered"), "{text}");

        // The report: 𝒟 beside the PSNR in Table 2, the sweep and the run list.
        let records = fake_records(&plan, &opts);
        let report = build_report("test adapter", &with(1.0), &plan, &opts, &records);
        assert!(
            report
                .table2
                .rows
                .iter()
                .all(|r| r.figures.predicted.is_some())
        );
        let csv = report.table2.csv();
        assert!(
            csv.starts_with("strategy,decoders,mean_psnr_db,predicted_divergence,psnr_db_brick"),
            "{csv}"
        );
        assert!(csv.contains("\nclustered,2,32.5000,0.6667,"), "{csv}");
        assert!(
            csv.contains("\ndivergence-aware,2,32.5000,0.0000,"),
            "{csv}"
        );
        let sweep = report.sweep.as_ref().unwrap();
        assert!(
            sweep
                .csv()
                .starts_with("m,strategy,decoders,mean_psnr_db,predicted_divergence,")
        );
        assert!(
            sweep.markdown().contains(
                "| divergence-aware (dB) | clustered 𝒟 | random 𝒟 | divergence-aware 𝒟 |"
            )
        );
        let md = report.markdown();
        assert!(
            md.contains("over the 240 tiles that show a texture set in 4 recorded views"),
            "{md}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["cooccurrence"]["covered_tiles"], 240);
        assert_eq!(
            json["table2"]["rows"][1]["predicted"]["divergence"]
                .as_f64()
                .map(|v| (v * 1e4).round()),
            Some(6667.0)
        );

        // Without a record: no column, no JSON field.
        let plain = plan_eval(&f.inputs(), &options()).unwrap();
        assert!(plain.divergence.is_none());
        let report = build_report(
            "a",
            &f.inputs(),
            &plain,
            &options(),
            &fake_records(&plain, &options()),
        );
        assert!(!report.table2.csv().contains("predicted"));
        assert!(
            serde_json::to_value(&report)
                .unwrap()
                .get("cooccurrence")
                .is_none()
        );

        // The shards' identity covers the record's predictions and weight.
        let id = |inputs: &EvalInputs, plan: &EvalPlan| {
            study_shards::eval_identity(inputs, plan, &opts).unwrap()
        };
        let mut other = plan.clone();
        other.divergence.as_mut().unwrap().views.weight = 0.5;
        assert_ne!(id(&with(1.0), &plan), id(&with(1.0), &other));
        other.divergence = None;
        assert_ne!(id(&with(1.0), &plan), id(&with(1.0), &other));
    }

    #[test]
    fn divergence_aware_needs_a_record_of_the_evaluated_sets() {
        let f = Fixture::new(true);
        let opts = EvalOptions {
            strategies: Some(vec![Strategy::Clustered, Strategy::DivergenceAware]),
            ..options()
        };
        let e = plan_eval(&f.inputs(), &opts).unwrap_err();
        assert!(matches!(e, EvalError::NoCooccurrence { .. }), "{e}");
        let e = e.to_string();
        assert!(
            e.contains("fixture.csv") && e.contains("--cooccurrence FILE"),
            "{e}"
        );
        // A record of other sets: refused, naming the file and the sets that differ, even
        // when divergence-aware is not asked for.
        for (names, needles) in [
            (
                &["s0", "s1", "s2", "s3", "s4", "t5"][..],
                &["only in the record: `t5`", "only in the inputs: `s5`"][..],
            ),
            (
                &["s0", "s1", "s2", "s3", "s4"],
                &[
                    "5 texture sets, the evaluation has 6",
                    "only in the inputs: `s5`",
                ],
            ),
        ] {
            let rec = record(names);
            let inputs = EvalInputs {
                cooccurrence: Some(CooccurrenceInput {
                    record: &rec,
                    file: std::path::Path::new("other/views.json"),
                    weight: 0.2,
                }),
                ..f.inputs()
            };
            for strategies in [opts.strategies.clone(), None] {
                let o = EvalOptions {
                    strategies,
                    ..opts.clone()
                };
                let e = plan_eval(&inputs, &o).unwrap_err();
                assert!(matches!(e, EvalError::CooccurrenceSets { .. }), "{e}");
                let e = e.to_string();
                assert!(e.starts_with("other/views.json: "), "{e}");
                for n in needles {
                    assert!(e.contains(n), "{e} lacks {n}");
                }
            }
        }
    }
}
