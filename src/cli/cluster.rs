//! `neurotex cluster`: embed texture sets and group them into a plan of shared decoders,
//! with a contact sheet.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::{cluster, texture};

use super::args::{InputsArg, describe_sources, parse_image_path, parse_positive_usize};
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
    let mut plan = cluster::make_plan(a.strategy, &embeddings, a.m, a.seed, categories)?;
    plan.input = describe_sources(&sources);
    plan.write(&a.out)?;
    cluster::write_contact_sheet(&sheet, &sets, &plan)?;
    println!("{}", cluster::plan_summary(&plan, &embeddings)?);
    println!("wrote {} and {}", a.out.display(), sheet.display());
    Ok(())
}
