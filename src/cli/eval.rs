//! `neurotex eval`: the shared-decoder study (Table 2, decoder freezing, decoder counts)
//! with progress lines, or its plan alone (`--dry-run`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::eval::{self, EvalEvent};
use neurotex::ntc::parallel::GroupProgress;
use neurotex::{cluster, ntc, texture};

use super::args::{
    InputsArg, StopAfterArg, describe_sources, parse_positive, parse_positive_usize,
};
use super::compress::{TrainOverrides, parse_shard};
use super::devices::{DeviceBars, DevicesArg};
use super::record_args::CooccurrenceArgs;
use super::{cancel_on_ctrl_c, output_policy};

/// The arguments of `neurotex eval`.
#[derive(Args, Debug)]
pub struct EvalArgs {
    #[command(flatten)]
    inputs: InputsArg,
    /// Output folder: tables, charts, plans, runs/, summary.json, report.md.
    #[arg(long)]
    out: PathBuf,
    /// Strategies of Table 2, comma-separated. Default: the paper's five (`category` only
    /// when the inputs have category labels). `divergence-aware` runs only when listed
    /// (in Table 2 and at every m of the sweep): it needs the co-occurrence record of the
    /// `--scene`'s views (recorded into the scene's package cache, or reused from there)
    /// or `--cooccurrence FILE`.
    #[arg(long, value_enum, value_delimiter = ',')]
    strategies: Option<Vec<cluster::Strategy>>,
    /// Groups of `clustered`, `random` and `divergence-aware` (Table 2 and the freezing
    /// ablation).
    #[arg(long, default_value_t = 10, value_parser = parse_positive_usize)]
    m: usize,
    /// Texture embedder of the clustered plans.
    #[arg(long, value_enum, default_value_t = cluster::EmbedderKind::Stats)]
    embedder: cluster::EmbedderKind,
    /// CLIP ViT-B/32 weights (safetensors) for `--embedder clip`.
    #[arg(long)]
    clip_weights: Option<PathBuf>,
    /// Main training steps per texture set: a group of k sets trains k times as many, so
    /// every strategy gives each material the same samples (default: the recipe's).
    #[arg(long, value_parser = parse_positive)]
    steps: Option<u64>,
    /// Main training as epochs instead of --steps, as the paper counts them: an epoch
    /// covers every mip-0 texel of a group's sets once at the batch size (350 epochs of a
    /// 1024² set at batch 32 768 are 11 200 steps per set).
    #[arg(long, conflicts_with = "steps")]
    epochs: Option<f64>,
    /// Training budgets in main steps per set, comma-separated: Table 2's strategies are
    /// evaluated once per budget, each into `--out`/budget-<b>/, then mean PSNR against
    /// budget per strategy, the crossover where the baseline overtakes a shared strategy
    /// and each strategy's convergence (budgets.{csv,md,png,json} in --out). With
    /// --resume, finished runs of every budget are loaded, not retrained.
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = parse_positive,
        conflicts_with_all = ["steps", "epochs", "seeds", "shard", "merge"]
    )]
    budgets: Option<Vec<u64>>,
    /// Quality preset (latent grid scale source/8, /6, /4, /3).
    #[arg(long, value_enum, default_value_t = ntc::Preset::High)]
    preset: ntc::Preset,
    /// Training recipe (its freezing start is the default freezing setting).
    #[arg(long, value_enum, default_value_t = ntc::Recipe::Paper)]
    recipe: ntc::Recipe,
    /// Texels per training batch (default: the recipe's).
    #[arg(long)]
    batch: Option<u32>,
    #[command(flatten)]
    overrides: TrainOverrides,
    /// Seed of k-means, the random grouping and training.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Evaluate once per seed, comma-separated, each into `--out`/seed-<s>/, and write
    /// every cell over the seeds (mean, sample deviation, range, paired differences) into
    /// --out.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["seed", "shard", "merge"])]
    seeds: Option<Vec<u64>>,
    /// Freezing settings of the ablation, comma-separated: `none` or the start as a
    /// fraction of the main steps.
    #[arg(long, value_delimiter = ',', default_value = "none,0.25,0.5,0.75")]
    freeze: Vec<eval::Freeze>,
    /// Decoder counts of the sweep (clustered, random and, when listed in --strategies,
    /// divergence-aware at each), comma-separated. Default: 1, 2, 4, … below the number
    /// of sets, --m, and the number of sets.
    #[arg(long, value_delimiter = ',', value_parser = parse_positive_usize)]
    m_sweep: Option<Vec<usize>>,
    /// Skip the freezing ablation.
    #[arg(long)]
    no_ablation: bool,
    /// Skip the decoder-count sweep.
    #[arg(long)]
    no_sweep: bool,
    /// Continue in a non-empty output folder: finished runs are loaded, not retrained.
    #[arg(long)]
    resume: bool,
    #[command(flatten)]
    stop_after: StopAfterArg,
    /// Keep each run's .ntc package in runs/.
    #[arg(long)]
    keep_packages: bool,
    /// Also measure every set's ꟻLIP in the run records (decoded on the CPU).
    #[arg(long)]
    flip: bool,
    /// Loss weights per channel group: the recipe's, or balanced per group of sets
    /// against the BC1/BC5 baseline's error in each channel group.
    #[arg(long, value_enum, default_value_t = ntc::train::LossWeighting::default())]
    loss_weights: ntc::train::LossWeighting,
    /// Also the rate–distortion curves of the sets: one decoder per set with the
    /// evaluation's training settings at every rung of the latent-shape ladder (2–10.7
    /// bits per texel), beside the BCn baselines, into --out/rd/ (one package per rung,
    /// `curves.rd.json`, `.rd.csv`, `.rd.md`, `.rd.png`), with the NTC rate that matches
    /// each BCn baseline per set. With --resume, finished rungs are kept.
    #[arg(long, conflicts_with_all = ["seeds", "budgets", "shard", "merge"])]
    rd: bool,
    /// Print the runs the evaluation would train, then stop (`divergence-aware`'s groups
    /// need the co-occurrence record, so a missing or stale cached one is recorded first).
    #[arg(long)]
    dry_run: bool,
    /// Report progress (and record the loss curves) about every this many steps.
    #[arg(long, default_value_t = 100, value_parser = parse_positive)]
    log_every: u64,
    #[command(flatten)]
    cooccurrence: CooccurrenceArgs,
    #[command(flatten)]
    devices: DevicesArg,
    /// Train with order-independent sums only (fixed-point gradients), so that runs with
    /// the same seed on the same adapter give identical results (shards merge into the
    /// unsharded evaluation's numbers).
    #[arg(long)]
    deterministic: bool,
    /// Evaluate only the runs of shard I of N (`I/N`, or `auto/N` for the index of a Slurm
    /// array task or a Kubernetes Indexed Job) into --out, with a part manifest for
    /// `eval --merge`.
    #[arg(long, value_parser = parse_shard, conflicts_with = "merge")]
    shard: Option<ntc::shard::ShardArg>,
    /// Merge the --out folders of every shard of this evaluation (run with the same
    /// inputs and settings) into --out: the tables, charts and report of an unsharded run.
    #[arg(long, num_args = 1.., value_name = "SHARD_DIR", conflicts_with = "dry_run")]
    merge: Vec<PathBuf>,
}

/// The command line as a shell would re-run it (arguments with spaces or quotes quoted).
fn command_line() -> String {
    std::env::args()
        .map(|arg| {
            if arg.is_empty() || arg.contains(|c: char| c.is_whitespace() || "'\"$\\".contains(c)) {
                format!("'{}'", arg.replace('\'', "'\\''"))
            } else {
                arg
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run `neurotex eval`.
pub fn run(a: EvalArgs) -> Result<()> {
    let start_by = a.stop_after.deadline();
    let command_line = command_line();
    let sources = a.inputs.sources()?;
    let description = describe_sources(&sources);
    // divergence-aware needs the views of a scene or a record file: refused before
    // anything is opened, decoded or trained.
    let aware = a
        .strategies
        .as_ref()
        .is_some_and(|s| s.contains(&cluster::Strategy::DivergenceAware));
    if aware && !a.cooccurrence.given() && a.inputs.scenes.is_empty() {
        return Err(eval::EvalError::NoCooccurrence {
            inputs: description,
        }
        .into());
    }
    let inputs = neurotex::inputs::InputSets::open(&sources)?;
    // The folder is the evaluation's (a non-empty one needs --resume): it may neither be
    // nor hold an input (resumed there, it would replace those named like its outputs).
    let shard = a
        .shard
        .map(|s| s.resolve(|name| std::env::var(name).ok()))
        .transpose()?;
    output_policy(
        inputs
            .files()
            .iter()
            .chain(a.clip_weights.iter())
            .chain(a.cooccurrence.cooccurrence.iter())
            .chain(a.merge.iter()),
    )
    .check_own_dir(&a.out)?;
    let recorded = a.cooccurrence.record(&a.inputs, aware)?;
    let sets = inputs.load_sets(&a.inputs.load_options())?;
    let constants = texture::set_constants(&inputs.materials, &inputs.material_sets, sets.len());
    let eval_inputs = eval::EvalInputs {
        sets: &sets,
        categories: &inputs.categories,
        constants: &constants,
        description: &description,
        cooccurrence: a.cooccurrence.input(&recorded),
    };
    let mut train = a
        .overrides
        .apply(a.recipe.train_config(a.preset, a.batch)?)?;
    train.deterministic = a.deterministic;
    let steps = match a.epochs {
        Some(epochs) => eval::TrainingBudget::steps_for_epochs(&sets, &train, epochs)?,
        None => a.steps.unwrap_or(a.recipe.values().steps),
    };
    let options = eval::EvalOptions {
        strategies: a.strategies,
        m: a.m,
        embedder: cluster::EmbedderChoice::new(a.embedder, a.clip_weights.as_deref())?,
        train,
        recipe: a.recipe.name().to_string(),
        steps,
        kernel: a.overrides.train_kernel,
        latent_adam: a.overrides.latent_adam,
        seed: a.seed,
        log_every: a.log_every,
        freeze: a.freeze,
        m_sweep: a.m_sweep,
        ablation: !a.no_ablation,
        sweep: !a.no_sweep,
        resume: a.resume,
        keep_packages: a.keep_packages,
        flip: a.flip,
        loss_weights: a.loss_weights,
        start_by,
        command_line,
    };
    // One evaluation, or one per seed of --seeds or per budget of --budgets (each
    // planned, and printed, first).
    let seeds = a
        .seeds
        .as_deref()
        .map(eval::seeds::distinct_seeds)
        .transpose()?;
    let budgets = a
        .budgets
        .as_deref()
        .map(eval::budgets::distinct_budgets)
        .transpose()?;
    let variants: Vec<(u64, u64)> = match (&seeds, &budgets) {
        (Some(seeds), _) => seeds.iter().map(|&s| (s, options.steps)).collect(),
        (None, Some(budgets)) => budgets.iter().map(|&b| (options.seed, b)).collect(),
        (None, None) => vec![(options.seed, options.steps)],
    };
    let mut evaluations = Vec::new();
    for (seed, steps) in variants {
        let options = eval::EvalOptions {
            seed,
            steps,
            ..options.clone()
        };
        let plan = eval::plan_eval(&eval_inputs, &options)?;
        if seeds.is_some() {
            println!("seed {seed}:");
        }
        if budgets.is_some() {
            println!(
                "budget: {}",
                eval::TrainingBudget::new(&sets, &options.train, steps).markdown()
            );
        }
        print!("{plan}");
        for note in &plan.notes {
            println!("note: {note}");
        }
        evaluations.push((options, plan));
    }
    if a.dry_run {
        return Ok(());
    }
    if seeds.is_some() || budgets.is_some() {
        eval::seeds::prepare(&a.out, a.resume)?;
    }
    let (options, plan) = evaluations[0].clone();
    if !a.merge.is_empty() {
        let report =
            eval::study_shards::merge_parts(&eval_inputs, &plan, &options, &a.merge, &a.out)?;
        print!("{}", report.table2.markdown());
        println!(
            "merged {} shards into the evaluation in {}",
            a.merge.len(),
            a.out.display()
        );
        return Ok(());
    }
    let devices = a.devices.open(&options.train, options.kernel)?;
    let cancel = cancel_on_ctrl_c()?;
    let bar = DeviceBars::new(
        &devices,
        "{prefix} [{bar:32}] {pos}/{len} steps  {msg}  ETA {eta}",
    )?;
    let mut on_event = |event: &EvalEvent| match event {
        EvalEvent::RunStarted { run, runs, spec } => bar.suspend(|| {
            let n = spec.decoders();
            let groups = if n == 1 { "group" } else { "groups" };
            println!("[{}/{runs}] {}: training {n} {groups}", run + 1, spec.name)
        }),
        EvalEvent::Training {
            run,
            runs,
            spec,
            device,
            group,
            groups,
            progress: p,
        } => {
            let at = GroupProgress {
                device: *device,
                group: *group,
                groups: *groups,
                train: **p,
            };
            bar.show(
                &at,
                &format!(
                    "run {}/{runs} {} group {}/{groups}",
                    run + 1,
                    spec.name,
                    group + 1
                ),
                format!("loss {:.5}  ≈{:.2} dB", p.loss, p.psnr_estimate),
            );
            // Without a terminal the bar is hidden: one line per finished group.
            if bar.is_hidden() && p.step == p.total {
                println!(
                    "  group {}/{groups}: loss {:.5} after {} steps",
                    group + 1,
                    p.loss,
                    p.total
                );
            }
        }
        EvalEvent::RunFinished {
            run,
            runs,
            record,
            path,
            loaded,
        } => bar.suspend(|| {
            let psnr = record
                .mean_psnr
                .map_or("–".into(), |p| format!("{p:.2} dB"));
            if *loaded {
                println!(
                    "[{}/{runs}] {}: loaded {} (mean PSNR {psnr})",
                    run + 1,
                    record.name,
                    path.display()
                );
            } else {
                println!(
                    "[{}/{runs}] {}: trained, mean PSNR {psnr}, {:.1} s",
                    run + 1,
                    record.name,
                    record.seconds
                );
            }
        }),
    };
    if let Some(shard) = shard {
        let part = eval::study_shards::evaluate_shard(
            &devices.devices,
            &eval_inputs,
            &plan,
            &options,
            shard,
            &a.out,
            &cancel,
            &mut on_event,
        )?;
        bar.finish();
        let names: Vec<&str> = part.runs.iter().map(|r| r.name.as_str()).collect();
        println!(
            "shard {}/{}: runs [{}] of {}; wrote {}",
            shard.index,
            shard.count,
            names.join(", "),
            plan.runs.len(),
            a.out.join(eval::study_shards::PART_FILE).display()
        );
        return Ok(());
    }
    // An evaluation per budget or per seed, each into its own folder, in order: the reports
    // of those that finished, and the error that stopped the next one, if any did.
    let mut evaluate_each = |folder: &dyn Fn(&eval::EvalOptions) -> (PathBuf, String)| {
        let mut reports = Vec::with_capacity(evaluations.len());
        for (options, plan) in &evaluations {
            let (dir, what) = folder(options);
            bar.suspend(|| println!("{what}: evaluating into {}", dir.display()));
            match eval::evaluate(
                &devices.devices,
                &eval_inputs,
                plan,
                options,
                &dir,
                &cancel,
                &mut on_event,
            ) {
                Ok(report) => reports.push(report),
                Err(e) => {
                    bar.finish();
                    return (reports, Some(e));
                }
            }
        }
        bar.finish();
        (reports, None)
    };
    // A study over several evaluations: its summary table, then where it went.
    let wrote_study = |markdown: String, count: usize, over: &str| {
        print!("{markdown}");
        println!(
            "wrote the evaluation over {count} {over} into {}",
            a.out.display()
        );
    };
    if budgets.is_some() {
        let (reports, stopped) = evaluate_each(&|o| {
            (
                eval::budgets::budget_dir(&a.out, o.steps),
                format!("budget {} steps per set", o.steps),
            )
        });
        // Stopped by an interruption or --stop-after: the study over what finished, the
        // budget it stopped in with the runs that finished there.
        let unfinished = interrupted_in(stopped.as_ref(), &evaluations, reports.len())
            .map(|(options, plan)| {
                let dir = eval::budgets::budget_dir(&a.out, options.steps);
                Ok::<_, eval::EvalError>(eval::budgets::UnfinishedBudget {
                    budget: eval::TrainingBudget::new(&sets, &options.train, options.steps),
                    runs: eval::unfinished_table2(&eval_inputs, plan, options, &dir)?,
                })
            })
            .transpose()?;
        let stopped = match stopped {
            Some(e) if unfinished.is_none() => return Err(e.into()),
            stopped => stopped,
        };
        let study = eval::budgets::BudgetStudy::new(&reports, unfinished.as_ref());
        study.write(&a.out)?;
        wrote_study(study.markdown(), study.budgets.len(), "budgets");
        return match stopped {
            Some(e) => Err(e.into()),
            None => Ok(()),
        };
    }
    if seeds.is_some() {
        let (reports, stopped) = evaluate_each(&|o| {
            (
                eval::seeds::seed_dir(&a.out, o.seed),
                format!("seed {}", o.seed),
            )
        });
        // Stopped by an interruption or --stop-after: the study over the seeds that
        // finished and the Table 2 runs that finished in the seed it stopped in.
        let unfinished = interrupted_in(stopped.as_ref(), &evaluations, reports.len())
            .map(|(options, plan)| {
                let dir = eval::seeds::seed_dir(&a.out, options.seed);
                let runs = eval::unfinished_table2(&eval_inputs, plan, options, &dir)?;
                let later = evaluations[reports.len() + 1..]
                    .iter()
                    .map(|(o, _)| o.seed)
                    .collect();
                Ok::<_, eval::EvalError>(eval::seeds::UnfinishedSeed::new(
                    options.seed,
                    &runs,
                    eval_inputs.categories,
                    later,
                ))
            })
            .transpose()?;
        let stopped = match stopped {
            Some(e) if unfinished.is_none() => return Err(e.into()),
            stopped => stopped,
        };
        let results: Vec<eval::seeds::SeedResult> = reports
            .iter()
            .map(|r| eval::seeds::SeedResult {
                seed: r.seed,
                table2: &r.table2,
                sweep: r.sweep.as_ref(),
                freezing: r.freezing.as_ref(),
            })
            .chain(unfinished.as_ref().map(eval::seeds::UnfinishedSeed::result))
            .collect();
        let study =
            eval::seeds::SeedStudy::new(&results, unfinished.as_ref().map(|u| u.not_run.clone()));
        study.write(&a.out)?;
        wrote_study(study.table2_markdown(), results.len(), "seeds");
        return match stopped {
            Some(e) => Err(e.into()),
            None => Ok(()),
        };
    }
    let report = eval::evaluate(
        &devices.devices,
        &eval_inputs,
        &plan,
        &options,
        &a.out,
        &cancel,
        &mut on_event,
    )?;
    print!("{}", report.table2.markdown());
    println!("wrote the evaluation into {}", a.out.display());
    if a.rd {
        let mut progress = |p: &GroupProgress| {
            bar.show(
                p,
                &format!("rd group {}/{}", p.group + 1, p.groups),
                format!("loss {:.5}  ≈{:.2} dB", p.train.loss, p.train.psnr_estimate),
            )
        };
        eval::rd::rd_curves(
            &devices.devices,
            &eval_inputs,
            &options,
            &a.out,
            &cancel,
            &mut progress,
            &mut |rung, points, kept| {
                bar.suspend(|| println!("rd {}", ntc::rd::rung_summary(rung, points, kept)))
            },
        )?;
        println!(
            "wrote the rate–distortion curves into {}",
            eval::rd::rd_report_path(&a.out)
                .with_extension("rd.json")
                .display()
        );
    }
    bar.finish();
    Ok(())
}

/// The one of `evaluations` (an evaluation per budget or seed) that an interruption
/// (Ctrl-C, `--stop-after`) stopped after the first `finished`, where the study over what
/// finished is still written; `None` when `stopped` is another error or none.
fn interrupted_in<'e, T>(
    stopped: Option<&eval::EvalError>,
    evaluations: &'e [T],
    finished: usize,
) -> Option<&'e T> {
    match stopped {
        Some(eval::EvalError::Interrupted { .. }) => evaluations.get(finished),
        _ => None,
    }
}
