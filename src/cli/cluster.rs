//! `neurotex cluster`: embed texture sets and group them into a plan of shared decoders,
//! with a contact sheet.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::cluster;

use super::args::{InputsArg, describe_sources, parse_image_path, parse_positive_usize};
use super::record_args::CooccurrenceArgs;
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

/// Run `neurotex cluster`.
pub fn run(a: ClusterArgs) -> Result<()> {
    let sources = a.inputs.sources()?;
    let inputs = neurotex::inputs::InputSets::open(&sources)?;
    if a.strategy == cluster::Strategy::Category
        && !neurotex::inputs::has_category_labels(&inputs.categories)
    {
        anyhow::bail!(
            "strategy `category` needs category labels, but no texture set of {} has one ({})",
            describe_sources(&sources),
            neurotex::inputs::CATEGORY_LABEL_SOURCES
        );
    }
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
    let recorded = a
        .cooccurrence
        .record(&a.inputs, a.strategy == cluster::Strategy::DivergenceAware)?;
    let plan_inputs = cluster::PlanInputs {
        categories,
        cooccurrence: a.cooccurrence.input(&recorded),
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
        let moved = match c.moved.len() {
            0 => "no set moved from its cluster".to_string(),
            n => format!(
                "{n} sets moved from their cluster (marked on the contact sheet): {}",
                c.moved.join(", ")
            ),
        };
        println!(
            "divergence-aware (weight {}): 𝒟 {:.4} from the k-means start's {:.4}; {moved}",
            c.weight, c.divergence, c.start_divergence,
        );
    }
    Ok(())
}
