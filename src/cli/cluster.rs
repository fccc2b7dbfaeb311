//! `neurotex cluster`: embed texture sets and group them into a plan of shared decoders,
//! with a contact sheet.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::gpu::GpuContext;
use neurotex::packages::{PackageRecipe, ScenePackages};
use neurotex::render::cooccurrence::{self as record, RecordSettings};
use neurotex::render::tiles::TileSize;
use neurotex::{cluster, texture};

use super::args::{
    InputsArg, TextureLimitArg, describe_sources, parse_image_path, parse_positive_usize,
    parse_size,
};
use super::{distinct_outputs, output_policy};

/// The arguments of `neurotex cluster`.
#[derive(Args, Debug)]
pub struct ClusterArgs {
    #[command(flatten)]
    inputs: InputsArg,
    /// Number of groups (clustered, random).
    #[arg(long, default_value_t = 10, value_parser = parse_positive_usize)]
    m: usize,
    /// Grouping strategy.
    #[arg(long, value_enum, default_value_t = cluster::Strategy::Clustered)]
    strategy: cluster::Strategy,
    /// Texture embedder.
    #[arg(long, value_enum, default_value_t = cluster::EmbedderKind::Stats)]
    embedder: cluster::EmbedderKind,
    /// CLIP ViT-B/32 weights (safetensors) for `--embedder clip`.
    #[arg(long)]
    clip_weights: Option<PathBuf>,
    /// Seed of k-means and of the random strategy.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output plan (JSON).
    #[arg(long)]
    out: PathBuf,
    /// Contact sheet image (.png, .jpg, .jpeg; default: next to the plan, `<plan>.png`).
    #[arg(long, value_parser = parse_image_path)]
    contact_sheet: Option<PathBuf>,
    #[command(flatten)]
    cooccurrence: CooccurrenceArgs,
}

/// The screen co-occurrence inputs of `cluster`.
#[derive(Args, Debug)]
struct CooccurrenceArgs {
    /// Co-occurrence record of the scene's views (JSON) to read. With a record, every
    /// strategy reports its predicted divergence on the recorded views. Without one,
    /// `divergence-aware` records the `--scene`'s views into the scene's package cache
    /// (or reuses the record there while the scene is unchanged).
    #[arg(long, conflicts_with = "record_cooccurrence")]
    cooccurrence: Option<PathBuf>,
    /// Record the `--scene`'s views into this file (reused when it already holds a record
    /// of the same scene files, sets, tile, size and views) and use it.
    #[arg(long)]
    record_cooccurrence: Option<PathBuf>,
    /// Size of the recorded views, WIDTHxHEIGHT. Default: the scene's, else 1280x720.
    #[arg(long, value_parser = parse_size)]
    record_size: Option<(u32, u32)>,
    /// Screen tile of the recorded views (the decode pass's).
    #[arg(long, value_enum, default_value_t = TileSize::T8x8)]
    record_tile: TileSize,
    /// Seconds between two recorded samples of each camera path.
    #[arg(long, default_value_t = record::DEFAULT_INTERVAL)]
    record_interval: f32,
    /// Weight of the divergence term against the appearance spread in `divergence-aware`,
    /// 0..=1 (0: appearance only, 1: divergence only).
    #[arg(long, default_value_t = cluster::DEFAULT_COOCCURRENCE_WEIGHT)]
    cooccurrence_weight: f64,
}

/// Run `neurotex cluster`.
pub fn run(a: ClusterArgs) -> Result<()> {
    let sources = a.inputs.sources()?;
    let inputs = texture::inputs::InputSets::open(&sources)?;
    // The plan and its contact sheet (also the derived `<plan>.png`) are checked before
    // anything is decoded: neither may replace an input or, without --force, a file.
    let sheet = a
        .contact_sheet
        .clone()
        .unwrap_or_else(|| a.out.with_extension("png"));
    let policy = output_policy(inputs.files().iter().chain(a.clip_weights.iter()));
    distinct_outputs(&[&a.out, &sheet])?;
    policy.check_all([a.out.as_path(), sheet.as_path()])?;
    let sets = inputs.load_sets(&a.inputs.load_options())?;
    let embedder = cluster::EmbedderChoice::new(a.embedder, a.clip_weights.as_deref())?;
    let embeddings = cluster::embed_sets(&sets, &embedder)?;
    let categories =
        (a.strategy == cluster::Strategy::Category).then_some(inputs.categories.as_slice());
    let c = &a.cooccurrence;
    let recorded = match (&c.cooccurrence, &c.record_cooccurrence) {
        (Some(file), _) => Some((cluster::CooccurrenceRecord::read(file)?, file.clone())),
        (None, Some(file)) => Some(record_scene(&a.inputs, c, Some(file))?),
        (None, None) if a.strategy == cluster::Strategy::DivergenceAware => {
            Some(record_scene(&a.inputs, c, None)?)
        }
        (None, None) => None,
    };
    let record = recorded
        .as_ref()
        .map(|(record, file)| (record, file.as_path()));
    let plan_inputs = cluster::PlanInputs {
        categories,
        cooccurrence: record.map(|(record, file)| cluster::CooccurrenceInput {
            record,
            file,
            weight: a.cooccurrence.cooccurrence_weight,
        }),
    };
    let mut plan = cluster::make_plan_with(a.strategy, &embeddings, a.m, a.seed, &plan_inputs)?;
    plan.input = describe_sources(&sources);
    plan.write(&a.out)?;
    cluster::write_contact_sheet(&sheet, &sets, &plan)?;
    println!("{}", cluster::plan_summary(&plan, &embeddings)?);
    if let Some(input) = &plan_inputs.cooccurrence {
        let plan_inputs = cluster::PlanInputs {
            categories: Some(&inputs.categories),
            ..plan_inputs
        };
        divergence_report(input, &plan_inputs, &embeddings, &plan, a.m, a.seed)?;
    }
    println!("wrote {} and {}", a.out.display(), sheet.display());
    Ok(())
}

/// The co-occurrence record of the one `--scene` of `inputs`: `file`'s (or, without one,
/// the scene's package cache's) when it holds a record of the scene as it is now, else
/// the scene's views recorded on the GPU (with a progress bar) and written there.
fn record_scene(
    inputs: &InputsArg,
    c: &CooccurrenceArgs,
    file: Option<&PathBuf>,
) -> Result<(cluster::CooccurrenceRecord, PathBuf)> {
    let [scene] = inputs.scenes.as_slice() else {
        anyhow::bail!(
            "recording the screen co-occurrence needs exactly one --scene (given {}); or \
             pass a record with --cooccurrence FILE",
            inputs.scenes.len()
        );
    };
    let opened = neurotex::scene::open::open(Some(scene))?;
    let defaults = RecordSettings::for_scene(&opened);
    let settings = RecordSettings {
        size: c.record_size.unwrap_or(defaults.size),
        tile: c.record_tile,
        interval: c.record_interval,
    };
    let file = match file {
        Some(f) => f.clone(),
        None => ScenePackages::open(scene, PackageRecipe::default())?
            .cooccurrence_path(scene, &settings),
    };
    let (source, _) = record::expected_source(&opened, scene, &settings)?;
    if let Some(existing) = record::reusable(&file, &source) {
        println!("co-occurrence: reusing {}", file.display());
        return Ok((existing, file));
    }
    let policy = output_policy(super::scene_files(&opened, Some(scene)));
    if c.record_cooccurrence.is_some() {
        policy.check_all([file.as_path()])?;
    }
    let limit = TextureLimitArg {
        max_texture_size: inputs.limit.max_texture_size,
    };
    let textures = texture::SceneTextures::load(&opened.scene.materials, &limit.load_options())?;
    let ctx = GpuContext::headless()?;
    let bar = super::steps_bar("recording views [{bar:32}] {pos}/{len}  ETA {eta}")?;
    bar.set_length(source.views.len() as u64);
    let recorded = record::load_or_record(
        &ctx,
        &opened,
        scene,
        &textures,
        &settings,
        &file,
        &mut |done, _| bar.set_position(done as u64),
    )?;
    bar.finish_and_clear();
    println!(
        "co-occurrence: recorded {} views ({}×{}, {} tiles) of {} into {}",
        source.views.len(),
        settings.size.0,
        settings.size.1,
        settings.tile,
        scene.display(),
        file.display()
    );
    Ok((recorded.record, file))
}

/// Print the predicted divergence on the recorded views and the appearance spread of
/// `plan` and of every other strategy at the same `m` and seed.
fn divergence_report(
    input: &cluster::CooccurrenceInput,
    plan_inputs: &cluster::PlanInputs,
    embeddings: &cluster::Embeddings,
    plan: &cluster::Plan,
    m: usize,
    seed: u64,
) -> Result<()> {
    let table = cluster::DivergenceTable::new(input.record, input.file, &embeddings.set_names)?;
    let source = &input.record.source;
    println!(
        "predicted divergence per {} tile on {} recorded views ({}×{}, {} tiles show a set) of {}:",
        source.tile,
        source.views.len(),
        source.size[0],
        source.size[1],
        table.covered_tiles(),
        input.file.display()
    );
    println!(
        "  {:<18} {:>6} {:>10} {:>8} {:>16}",
        "strategy", "groups", "𝒟", "mean D", "mean sq spread"
    );
    for (score, own) in cluster::score_strategies(plan, embeddings, plan_inputs, &table, m, seed)? {
        let mark = if own { " (this plan)" } else { "" };
        println!("  {score}{mark}");
    }
    if let Some(c) = &plan.cooccurrence {
        println!(
            "divergence-aware (weight {}): 𝒟 {:.4} from the k-means start's {:.4}; {} sets moved \
             from their cluster (marked on the contact sheet): {}",
            c.weight,
            c.divergence,
            c.start_divergence,
            c.moved.len(),
            c.moved.join(", ")
        );
    }
    Ok(())
}
