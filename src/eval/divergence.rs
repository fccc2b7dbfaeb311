//! The predicted divergence of an evaluation's runs on a screen co-occurrence record: the
//! record (a [`CooccurrenceInput`]) is checked to be of the evaluated texture sets (the
//! same set ids, in any order), and every run's groups are scored with
//! [`DivergenceTable::predict`] — the objective the `divergence-aware` search lowers, so
//! the numbers beside each PSNR are exactly the 𝒟 the divergence pass would measure on
//! the recorded views.

use std::path::Path;

use serde::Serialize;

use super::EvalError;
use super::runs::RunSpec;
use crate::cluster::{CooccurrenceInput, DivergencePrediction, DivergenceTable};
use crate::screen::tiles::TileSize;
use crate::texture::TextureSet;

/// Set names listed in a mismatch error, per side.
const LISTED_SETS: usize = 5;

/// The co-occurrence record an evaluation scores its runs on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecordedViews {
    /// The record file.
    pub file: String,
    /// The scene whose views it holds, as the record names it.
    pub scene: String,
    /// Number of recorded views.
    pub views: usize,
    /// The screen tile the views were counted over.
    pub tile: TileSize,
    /// Size of each view in pixels (width, height).
    pub size: [u32; 2],
    /// Tiles over all views that show at least one texture set (𝒟's denominator).
    pub covered_tiles: u64,
    /// The weight of the divergence term in `divergence-aware` (0 ≤ w ≤ 1).
    pub weight: f64,
}

/// The predicted divergence of every run of an evaluation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunDivergence {
    /// The record.
    pub views: RecordedViews,
    /// Per run (the same index as [`EvalPlan::runs`](super::EvalPlan::runs)), the
    /// predicted divergence of its groups on the recorded views.
    pub runs: Vec<DivergencePrediction>,
}

/// Up to [`LISTED_SETS`] names of `names`, in backticks, with a count of the rest.
fn list(names: &[&str]) -> String {
    let mut s: Vec<String> = names
        .iter()
        .take(LISTED_SETS)
        .map(|n| format!("`{n}`"))
        .collect();
    if names.len() > LISTED_SETS {
        s.push(format!("and {} more", names.len() - LISTED_SETS));
    }
    s.join(", ")
}

/// The names of `a` that are not in `b`, in `a`'s order.
fn only_in<'a>(a: &[&'a str], b: &[&str]) -> Vec<&'a str> {
    a.iter().copied().filter(|n| !b.contains(n)).collect()
}

/// Check that `record_sets` (read from `file`) are the set ids of `sets`, in any order.
fn check_sets(record_sets: &[String], file: &Path, sets: &[TextureSet]) -> Result<(), EvalError> {
    let recorded: Vec<&str> = record_sets.iter().map(String::as_str).collect();
    let evaluated: Vec<&str> = sets.iter().map(|s| s.name.as_str()).collect();
    let (extra, missing) = (
        only_in(&recorded, &evaluated),
        only_in(&evaluated, &recorded),
    );
    if extra.is_empty() && missing.is_empty() {
        return Ok(());
    }
    let mut parts = vec![format!(
        "it records {} texture sets, the evaluation has {}",
        recorded.len(),
        evaluated.len()
    )];
    if !extra.is_empty() {
        parts.push(format!("only in the record: {}", list(&extra)));
    }
    if !missing.is_empty() {
        parts.push(format!("only in the inputs: {}", list(&missing)));
    }
    Err(EvalError::CooccurrenceSets {
        file: file.to_path_buf(),
        reason: parts.join("; "),
    })
}

/// The record of `input` pooled over the evaluated `sets`, after checking that it records
/// exactly those sets (by id). Errors name the record file.
pub(super) fn table(
    input: &CooccurrenceInput,
    sets: &[TextureSet],
) -> Result<DivergenceTable, EvalError> {
    check_sets(&input.record.source.set_names, input.file, sets)?;
    let names: Vec<String> = sets.iter().map(|s| s.name.clone()).collect();
    DivergenceTable::new(input.record, input.file, &names).map_err(EvalError::Cluster)
}

/// The predicted divergence of every run of `runs` on `table` (the record of `input`);
/// every run's groups cover the table's sets.
pub(super) fn predict_runs(
    table: &DivergenceTable,
    input: &CooccurrenceInput,
    runs: &[RunSpec],
) -> RunDivergence {
    let source = &input.record.source;
    RunDivergence {
        views: RecordedViews {
            file: input.file.display().to_string(),
            scene: source.scene.clone(),
            views: source.views.len(),
            tile: source.tile,
            size: source.size,
            covered_tiles: table.covered_tiles(),
            weight: input.weight,
        },
        runs: runs
            .iter()
            .map(|run| {
                let mut labels = vec![0; table.n_sets()];
                for (g, group) in run.groups.iter().enumerate() {
                    for &set in group {
                        labels[set] = g;
                    }
                }
                table.predict(&labels)
            })
            .collect(),
    }
}
