//! `neurotex compress`: compress texture sets into a `.ntc` package on the GPU, with a
//! quality report on request; also the training-setting flags `eval` shares.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::{cluster, ntc, texture};

use super::args::{
    InputsArg, StopAfterArg, describe_sources, parse_positive, parse_positive_usize,
};
use super::devices::{DeviceBars, DevicesArg};
use super::{cancel_on_ctrl_c, distinct_outputs, output_policy};

/// The arguments of `neurotex compress`.
#[derive(Args, Debug)]
pub struct CompressArgs {
    #[command(flatten)]
    inputs: InputsArg,
    /// Output package.
    #[arg(long)]
    out: PathBuf,
    /// Quality preset (latent grid scale source/8, /6, /5, /4, /3); with --target-psnr or
    /// --match-bcn the one the package header names.
    #[arg(long, value_enum, default_value_t = ntc::Preset::High)]
    preset: ntc::Preset,
    /// Per set, the smallest preset whose PSNR pooled over all present channels (mip 0)
    /// reaches DB; a shared group takes one preset for all its sets.
    #[arg(long, value_name = "DB", conflicts_with = "match_bcn", value_parser = parse_target_psnr)]
    target_psnr: Option<f64>,
    /// Per set, the smallest preset whose pooled PSNR reaches that of the set's BCn
    /// baseline (bc1: BC1/BC5, bc7: BC7/BC5).
    #[arg(long, value_enum, conflicts_with = "no_bcn")]
    match_bcn: Option<ntc::compress::BcnTarget>,
    /// Main training steps per texture set (a group of k sets trains k times as many;
    /// default: the recipe's).
    #[arg(long, value_parser = parse_positive)]
    steps: Option<u64>,
    /// Texels per training batch (default: the recipe's).
    #[arg(long)]
    batch: Option<u32>,
    /// Training recipe.
    #[arg(long, value_enum, default_value_t = ntc::Recipe::Default)]
    recipe: ntc::Recipe,
    #[command(flatten)]
    overrides: TrainOverrides,
    /// How materials share decoders.
    #[arg(long, value_enum, default_value_t = cluster::Strategy::Baseline)]
    strategy: cluster::Strategy,
    /// Groups for clustered / random.
    #[arg(long, default_value_t = 10, value_parser = parse_positive_usize)]
    m: usize,
    /// Use the groups of a plan from `neurotex cluster` instead of --strategy.
    #[arg(long, conflicts_with_all = ["cooccurrence", "record_cooccurrence"])]
    plan: Option<PathBuf>,
    /// The co-occurrence record `divergence-aware` groups by.
    #[command(flatten)]
    cooccurrence: super::record_args::CooccurrenceArgs,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Quality report (JSON; a Markdown table and the loss curves CSV go beside it).
    #[arg(long)]
    report: Option<PathBuf>,
    /// Continue an interrupted run (from `<out>.partial/`).
    #[arg(long)]
    resume: bool,
    #[command(flatten)]
    stop_after: StopAfterArg,
    /// Skip the BCn baselines in the report.
    #[arg(long)]
    no_bcn: bool,
    /// Skip ꟻLIP in the report (NTC decoded on the CPU, and the BCn baselines).
    #[arg(long)]
    no_flip: bool,
    /// Loss weights per channel group: the recipe's, or balanced per group of sets
    /// against the BC1/BC5 baseline's error in each channel group.
    #[arg(long, value_enum, default_value_t = ntc::train::LossWeighting::default())]
    loss_weights: ntc::train::LossWeighting,
    /// Rate–distortion curves: train every rung of the latent-shape ladder (2–10.7 bits
    /// per texel), one package per rung beside --out (`<out>.<rung>.ntc`), and write
    /// the curves beside --report (`.rd.json`, `.rd.csv`, `.rd.md`, `.rd.png`) with the
    /// NTC rate that matches each BCn baseline per set. Each finished rung's points are
    /// kept beside its package (`<out>.<rung>.points.json`); with --resume, finished
    /// rungs are kept and the unfinished one continues.
    #[arg(long, requires = "report", conflicts_with_all = ["target_psnr", "match_bcn", "shard"])]
    rd: bool,
    /// Report progress (and record the loss curve) about every this many steps.
    #[arg(long, default_value_t = 100, value_parser = parse_positive)]
    log_every: u64,
    /// Train only the groups of shard I of N (`I/N`, or `auto/N` for the index of a Slurm
    /// array task or a Kubernetes Indexed Job) and write a part file to --out for
    /// `neurotex merge`.
    #[arg(long, value_parser = parse_shard)]
    shard: Option<ntc::shard::ShardArg>,
    /// Train with order-independent sums only (fixed-point gradients), so that runs with
    /// the same seed on the same adapter give byte-identical packages.
    #[arg(long)]
    deterministic: bool,
    #[command(flatten)]
    devices: DevicesArg,
}

/// The package of one rung of `--rd`: `<out stem>.<rung>.ntc` beside `out`.
fn rung_package(out: &std::path::Path, rung: ntc::rd::Rung) -> PathBuf {
    out.with_extension(format!("{}.ntc", rung.label()))
}

/// `--shard`'s value (of `compress` and `eval`).
pub fn parse_shard(arg: &str) -> Result<ntc::shard::ShardArg, String> {
    arg.parse()
        .map_err(|e: ntc::shard::ShardError| e.to_string())
}

/// Training settings on top of the recipe's, shared by `compress` and `eval`.
#[derive(Args, Debug)]
pub struct TrainOverrides {
    /// Initial latent learning rate (default: the recipe's).
    #[arg(long)]
    lr_latents: Option<f64>,
    /// Initial decoder learning rate (default: the recipe's).
    #[arg(long)]
    lr_decoder: Option<f64>,
    /// Steps on quantised, frozen latents as a fraction of the main steps (default: the
    /// recipe's).
    #[arg(long)]
    finetune_fraction: Option<f64>,
    /// Draw the training batches in tiles of N × N neighbouring texels (1 to 16;
    /// default: the recipe's, 1), so that a tile's samples share latents.
    #[arg(long)]
    sample_tile: Option<u32>,
    /// Training kernels (default: coop-matrix where the adapter has it, else f32; f16 is
    /// slower than f32 and there to test the mixed-precision step).
    #[arg(long, value_enum)]
    pub train_kernel: Option<ntc::train::gpu::TrainKernel>,
    /// How Adam steps the latents: `dense` passes over every latent of a group each step;
    /// `lazy` defers a latent's zero-gradient steps and replays them when it is next read,
    /// with the same results at a cost that follows the batch, not the group; `auto` (the
    /// default) takes lazy for a group whose latent texels exceed three times the texels a
    /// batch reads (eight per sample), dense otherwise.
    #[arg(long, value_enum, default_value_t)]
    pub latent_adam: ntc::train::gpu::LatentAdam,
}

impl TrainOverrides {
    /// `train` with the given settings replaced, validated.
    pub fn apply(&self, mut train: ntc::TrainConfig) -> Result<ntc::TrainConfig> {
        if let Some(lr) = self.lr_latents {
            train.lr_latents = lr;
        }
        if let Some(lr) = self.lr_decoder {
            train.lr_decoder = lr;
        }
        if let Some(f) = self.finetune_fraction {
            train.finetune_fraction = f;
        }
        if let Some(t) = self.sample_tile {
            train.sample_tile = t;
        }
        train.validate()?;
        Ok(train)
    }
}

/// Parse `--target-psnr`: dB strictly between 0 and 100 (the PSNR of a texture stored
/// in 8 or 16 bits; -5, 0 or 1000 are no target).
fn parse_target_psnr(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(db) if db > 0.0 && db < 100.0 => Ok(db),
        _ => Err(format!("`{s}`: expected a PSNR in dB between 0 and 100")),
    }
}

/// Run `neurotex compress`.
pub fn run(a: CompressArgs) -> Result<()> {
    let start_by = a.stop_after.deadline();
    let shard = a
        .shard
        .map(|s| s.resolve(|name| std::env::var(name).ok()))
        .transpose()?;
    let sources = a.inputs.sources()?;
    let inputs = neurotex::inputs::InputSets::open(&sources)?;
    // The package and every report file are checked before training starts.
    let policy = output_policy(inputs.files().iter().chain(a.plan.iter()));
    let mut outputs: Vec<std::path::PathBuf> = vec![a.out.clone()];
    if let Some(report) = &a.report {
        outputs.extend(ntc::compress::CompressReport::files(report));
        if a.rd {
            outputs.extend(ntc::rd::RdReport::files(report));
        }
    }
    // Each rung's package and points; with --resume, finished rungs are kept.
    let rungs: Vec<PathBuf> = if a.rd {
        ntc::rd::LADDER
            .iter()
            .map(|r| rung_package(&a.out, *r))
            .flat_map(|p| [ntc::rd::points_path(&p), p])
            .collect()
    } else {
        Vec::new()
    };
    let every: Vec<&std::path::Path> = outputs.iter().chain(&rungs).map(|p| p.as_path()).collect();
    distinct_outputs(&every)?;
    if a.resume && !a.rd && a.out.exists() && !policy.force {
        anyhow::bail!(
            "{} exists: the run it resumes has finished (pass --force to train it again)",
            a.out.display()
        );
    }
    policy.check_all(outputs.iter().map(|p| p.as_path()))?;
    for rung in &rungs {
        if a.resume {
            policy.check_kept(rung)?;
        } else {
            policy.check(rung)?;
        }
    }
    let mut train = a
        .overrides
        .apply(a.recipe.train_config(a.preset, a.batch)?)?;
    train.deterministic = a.deterministic;
    let devices = a.devices.open(&train, a.overrides.train_kernel)?;
    let sets = inputs.load_sets(&a.inputs.load_options())?;
    let rate = match (a.target_psnr, a.match_bcn) {
        (Some(db), _) => ntc::compress::RateControl::TargetPsnr(db),
        (None, Some(target)) => ntc::compress::RateControl::MatchBcn(target),
        (None, None) => ntc::compress::RateControl::Fixed,
    };
    let plan = match &a.plan {
        Some(plan_path) => {
            let plan = cluster::Plan::read(plan_path)?;
            // A plan made for other inputs is named in the error.
            plan.validate(&sets).map_err(|e| match e {
                cluster::ClusterError::InvalidPlan { file: None, reason } => {
                    cluster::ClusterError::InvalidPlan {
                        file: Some(plan_path.clone()),
                        reason,
                    }
                }
                other => other,
            })?;
            plan
        }
        None => {
            let embeddings = cluster::embed_sets(&sets, &cluster::EmbedderChoice::Stats)?;
            let recorded = a
                .cooccurrence
                .record(&a.inputs, a.strategy == cluster::Strategy::DivergenceAware)?;
            let plan_inputs = cluster::PlanInputs {
                categories: Some(&inputs.categories),
                cooccurrence: a.cooccurrence.input(&recorded),
            };
            cluster::make_plan_with(a.strategy, &embeddings, a.m, a.seed, &plan_inputs)?
        }
    };
    let groups: Vec<Vec<usize>> = plan.groups.iter().map(|g| g.indices.clone()).collect();
    let constants = texture::set_constants(&inputs.materials, &inputs.material_sets, sets.len());
    let cancel = cancel_on_ctrl_c()?;
    let bars = DeviceBars::new(
        &devices,
        "{prefix} [{bar:32}] {pos}/{len} steps  {msg}  ETA {eta}",
    )?;
    let options = ntc::compress::CompressOptions {
        train,
        steps: a.steps.unwrap_or(a.recipe.values().steps),
        seed: a.seed,
        resume: a.resume,
        skip_bcn: a.no_bcn,
        log_every: a.log_every,
        rate,
        kernel: a.overrides.train_kernel,
        latent_adam: a.overrides.latent_adam,
        input_files: inputs.files(),
        loss_weights: a.loss_weights,
        flip: !a.no_flip,
        start_by,
    };
    let input_names = describe_sources(&sources);
    let mut progress = |p: &ntc::parallel::GroupProgress| {
        let t = &p.train;
        bars.show(
            p,
            &format!("group {}/{}", p.group + 1, p.groups),
            format!(
                "loss {:.5}  ≈{:.2} dB  {:.1} Mtexel/s",
                t.loss,
                t.psnr_estimate,
                t.texels_per_second / 1e6
            ),
        );
    };
    let job = ntc::compress::CompressJob {
        devices: &devices.devices,
        sets: &sets,
        constants: &constants,
        groups: &groups,
        opts: &options,
        inputs: &input_names,
        out: &a.out,
        cancel: &cancel,
    };
    if a.rd
        && let Some(path) = &a.report
    {
        let rd = ntc::rd::compress_ladder(
            &job,
            &|rung| rung_package(&a.out, rung),
            &mut progress,
            &mut |rung, points, kept| {
                bars.suspend(|| println!("{}", ntc::rd::rung_summary(rung, points, kept)))
            },
        )?;
        bars.finish();
        rd.write(path)?;
        println!(
            "wrote {} (+ .rd.csv, .rd.md, .rd.png)",
            path.with_extension("rd.json").display()
        );
        return Ok(());
    }
    let (package, report) = match shard {
        None => ntc::compress::compress(&job, &mut progress)?,
        Some(shard) => {
            let (part, report) = ntc::shard::compress_shard(&job, shard, &mut progress)?;
            println!(
                "shard {}/{}: groups {:?} of {}",
                shard.index,
                shard.count,
                part.header.groups(),
                groups.len()
            );
            (part.package, report)
        }
    };
    bars.finish();
    for g in &report.groups {
        if let Some(kernel) = g.kernel {
            let on = match g.device {
                Some(d) if devices.devices.len() > 1 => format!(" on device {d}"),
                _ => String::new(),
            };
            let workgroups = g
                .train_workgroups
                .map_or(String::new(), |n| format!(" ({n} workgroups per step)"));
            let profile = g.kernel_ms.map_or(String::new(), |k| {
                format!(
                    ", GPU per step {:.3} ms gradients + {:.3} ms Adam",
                    k.gradients, k.adam
                )
            });
            let adam = g
                .latent_adam
                .and_then(|a| clap::ValueEnum::to_possible_value(&a))
                .map_or(String::new(), |a| format!(", {} latent Adam", a.get_name()));
            let throughput = match (g.texels_per_second, g.tflops) {
                (Some(t), Some(f)) => format!("{:.1} Mtexel/s ({f:.2} TFLOP/s)", t / 1e6),
                _ => "too short to time".into(),
            };
            println!(
                "group of {} sets{on}: preset {:?}, {} main steps, {} kernel{workgroups}{adam}, \
                 {throughput}{profile}, {:.1} s",
                g.sets.len(),
                g.preset,
                g.steps,
                kernel,
                g.seconds.unwrap_or(0.0)
            );
        }
    }
    for w in &report.warnings {
        println!("warning: {w}");
    }
    println!(
        "wrote {}: {} materials, {} decoders, mean PSNR {}{}, mean {:.3} bits/texel, {:.1} s{}",
        a.out.display(),
        package.materials.len(),
        package.decoders.len(),
        report
            .mean_psnr
            .map_or("–".into(), |p| format!("{p:.2} dB")),
        report
            .mean_flip
            .map_or(String::new(), |f| format!(", mean ꟻLIP {f:.4}")),
        report.mean_bits_per_texel,
        report.seconds,
        match report.warnings.len() {
            0 => String::new(),
            n => format!(", {n} target(s) missed"),
        }
    );
    if let Some(path) = &a.report {
        report.write(path)?;
        println!("wrote {} (+ .md, .curves.csv, .curves.png)", path.display());
    }
    Ok(())
}
