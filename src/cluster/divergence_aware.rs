//! The `divergence-aware` strategy: groups that cut the distinct decoders per screen tile
//! on the recorded views while staying similar in appearance.
//!
//! # Objective
//!
//! A [`DivergenceTable`] holds a co-occurrence record's signatures pooled over its views
//! (every tile of every view counted once) and re-indexed to the sets being grouped.
//! Under a grouping (one label per set) a tile with signature `s` runs
//! `D(s)` = the number of distinct labels among `s`'s sets, so the predicted score is
//!
//! ```text
//! 𝒟 = Σ_s tiles(s) · (D(s) − 1) / Σ_s tiles(s)
//! ```
//!
//! exactly the divergence pass's 𝒟 over the recorded tiles (tiles showing no set run no
//! decoder and are left out, as there). The appearance term is the within-group spread
//! `plan_summary` reports: the sum over sets of the squared distance to their group's
//! centroid in embedding space (k-means' inertia). Both are scaled to [0, 1] by their
//! values at the two extreme groupings, and one weight `w` (`--cooccurrence-weight`,
//! default [`DEFAULT_COOCCURRENCE_WEIGHT`]) trades them:
//!
//! ```text
//! J = (1 − w) · inertia / inertia(one group for all)
//!   +      w  · Σ tiles·(D − 1) / Σ tiles·(D − 1)(one group per set)
//! ```
//!
//! `w = 0` is k-means' own objective, `w = 1` divergence alone.
//!
//! # Search
//!
//! A deterministic descent on `J`, started from the seeded k-means clusters of the same
//! `m`: passes over the sets in a seeded order, each set moved to the group that lowers
//! `J` most (never emptying a group), then swaps of two sets of different groups (which
//! keep the sizes), until a pass changes nothing. Every step is evaluated incrementally:
//! a move of set `i` touches only the signatures that contain `i` (per signature and
//! group, the count of its sets in the group) and the two groups' sums for the inertia.
//! Only strict improvements are taken, so `J` decreases at every step; the trace of `J`
//! is kept.

use std::collections::BTreeMap;
use std::path::Path;

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::SeedableRng;
use serde::{Deserialize, Serialize};

use super::ClusterError;
use super::cooccurrence::{self, CooccurrenceRecord};
use super::embed::Embeddings;
use super::kmeans;
use super::strategy::below;

/// The default weight of the divergence term (see the module docs). Measured on the
/// street's 36 sets along both camera paths (docs/ARCHITECTURE.md, "Divergence-aware
/// groups"): at 0.2 the predicted 𝒟 of m = 10 groups is 44 % below the k-means clusters'
/// at the same appearance spread (+0.2 %); larger weights cut more divergence for more
/// spread. Re-tune per scene with `neurotex cluster --cooccurrence-weight`, which prints
/// both terms for every strategy.
pub const DEFAULT_COOCCURRENCE_WEIGHT: f64 = 0.2;

/// Mixed into the seed of the search's visiting order, so it does not replay k-means'.
const ORDER_SALT: u64 = 0xd1fe_5ea2_c400_0001;

/// Improvements smaller than this are not taken (they would be rounding noise).
const MIN_IMPROVEMENT: f64 = 1e-12;

/// Pass cap of the descent (each pass that changes something strictly lowers `J`, so
/// the search ends anyway; the cap bounds its time on huge inputs).
const MAX_PASSES: usize = 1000;

/// A co-occurrence record's signatures pooled over its views, in the index space of the
/// sets being grouped.
#[derive(Clone, Debug, PartialEq)]
pub struct DivergenceTable {
    set_names: Vec<String>,
    /// Distinct signatures (ascending set indices).
    signatures: Vec<Vec<u32>>,
    /// Tiles per signature.
    tiles: Vec<u64>,
    /// Per set, the signatures that contain it.
    by_set: Vec<Vec<u32>>,
}

/// The predicted divergence of a grouping on the recorded views.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DivergencePrediction {
    /// 𝒟: mean over the recorded tiles that show a set of `D − 1`.
    pub divergence: f64,
    /// Mean `D` over those tiles (`divergence + 1`; 0 when there are none).
    pub mean_decoders: f64,
    /// Tiles that show at least one set, over all views.
    pub covered_tiles: u64,
}

impl DivergenceTable {
    /// Pool `record` (read from `file`, named in errors) and re-index it to `set_names`
    /// (the sets being grouped, by name). The record is checked as files are; its sets
    /// must all be among `set_names`; sets missing from the record never appear on
    /// screen.
    pub fn new(
        record: &CooccurrenceRecord,
        file: &Path,
        set_names: &[String],
    ) -> Result<Self, ClusterError> {
        if let Some(reason) = record.problem() {
            return Err(cooccurrence::invalid(file, reason));
        }
        let n = set_names.len();
        let index: BTreeMap<&str, u32> = set_names
            .iter()
            .enumerate()
            .rev()
            .map(|(i, s)| (s.as_str(), i as u32))
            .collect();
        let remap = record
            .source
            .set_names
            .iter()
            .map(|s| {
                index
                    .get(s.as_str())
                    .copied()
                    .ok_or_else(|| ClusterError::CooccurrenceSet {
                        file: file.to_path_buf(),
                        set: s.clone(),
                        n,
                    })
            })
            .collect::<Result<Vec<u32>, _>>()?;
        let mut pooled: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
        for sig in record.pooled() {
            let mut sets: Vec<u32> = sig.sets.iter().map(|&s| remap[s as usize]).collect();
            sets.sort_unstable();
            *pooled.entry(sets).or_insert(0) += sig.tiles;
        }
        let (signatures, tiles): (Vec<Vec<u32>>, Vec<u64>) = pooled.into_iter().unzip();
        let mut by_set = vec![Vec::new(); n];
        for (k, sets) in signatures.iter().enumerate() {
            for &s in sets {
                by_set[s as usize].push(k as u32);
            }
        }
        Ok(Self {
            set_names: set_names.to_vec(),
            signatures,
            tiles,
            by_set,
        })
    }

    /// Number of sets being grouped.
    pub fn n_sets(&self) -> usize {
        self.set_names.len()
    }

    /// Tiles that show at least one set, over all views.
    pub fn covered_tiles(&self) -> u64 {
        self.tiles.iter().sum()
    }

    /// `Σ tiles · (D − 1)` under `labels` (one group label per set).
    fn excess(&self, labels: &[usize]) -> u64 {
        let mut groups = Vec::new();
        self.signatures
            .iter()
            .zip(&self.tiles)
            .map(|(sets, &tiles)| {
                groups.clear();
                groups.extend(sets.iter().map(|&s| labels[s as usize]));
                groups.sort_unstable();
                groups.dedup();
                tiles * (groups.len() as u64 - 1)
            })
            .sum()
    }

    /// The exact predicted divergence of `labels` (one group label per set).
    pub fn predict(&self, labels: &[usize]) -> DivergencePrediction {
        let covered = self.covered_tiles();
        if covered == 0 {
            return DivergencePrediction {
                divergence: 0.0,
                mean_decoders: 0.0,
                covered_tiles: 0,
            };
        }
        let divergence = self.excess(labels) as f64 / covered as f64;
        DivergencePrediction {
            divergence,
            mean_decoders: divergence + 1.0,
            covered_tiles: covered,
        }
    }

    /// The predicted divergence of `plan`'s groups (the plan must cover this table's
    /// sets).
    pub fn predict_plan(&self, plan: &super::Plan) -> Result<DivergencePrediction, ClusterError> {
        let names: Vec<&str> = self.set_names.iter().map(String::as_str).collect();
        Ok(self.predict(&plan.check(&names)?))
    }
}

/// A plan's predicted divergence next to its appearance spread.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanScore {
    /// The plan's strategy.
    pub strategy: super::Strategy,
    /// Its number of groups.
    pub groups: usize,
    /// Predicted divergence on the recorded views.
    pub predicted: DivergencePrediction,
    /// Mean squared member-to-centroid distance ([`super::PlanSummary::mean_sq_spread`]).
    pub mean_sq_spread: f32,
}

impl PlanScore {
    /// The score of `plan` (made from `embeddings`) on `table`.
    pub fn new(
        plan: &super::Plan,
        embeddings: &Embeddings,
        table: &DivergenceTable,
    ) -> Result<Self, ClusterError> {
        Ok(Self {
            strategy: plan.strategy,
            groups: plan.groups.len(),
            predicted: table.predict_plan(plan)?,
            mean_sq_spread: super::plan_summary(plan, embeddings)?.mean_sq_spread,
        })
    }
}

impl std::fmt::Display for PlanScore {
    /// One table row: strategy, groups, predicted 𝒟, mean D, mean squared spread.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<18} {:>6} {:>10.4} {:>8.4} {:>16.4}",
            self.strategy.name(),
            self.groups,
            self.predicted.divergence,
            self.predicted.mean_decoders,
            self.mean_sq_spread
        )
    }
}

/// `plan` and every other strategy at the same `m` and seed, scored on `table`: the rows
/// `neurotex cluster` prints when given a co-occurrence record. `category` is left out
/// when `inputs` carries no labels; the flag marks `plan`'s own row.
pub fn score_strategies(
    plan: &super::Plan,
    embeddings: &Embeddings,
    inputs: &super::PlanInputs,
    table: &DivergenceTable,
    m: usize,
    seed: u64,
) -> Result<Vec<(PlanScore, bool)>, ClusterError> {
    use super::Strategy;
    let labelled = inputs
        .categories
        .is_some_and(|c| c.len() == embeddings.len() && crate::inputs::has_category_labels(c));
    let m = m.clamp(1, embeddings.len());
    let mut rows = Vec::new();
    // Every strategy, in declaration order.
    for &s in <Strategy as clap::ValueEnum>::value_variants() {
        if s == Strategy::Category && !labelled {
            continue;
        }
        let own = s == plan.strategy;
        let score = if own {
            PlanScore::new(plan, embeddings, table)?
        } else {
            let other = super::make_plan_with(s, embeddings, m, seed, inputs)?;
            PlanScore::new(&other, embeddings, table)?
        };
        rows.push((score, own));
    }
    Ok(rows)
}

/// The value of the combined objective for one grouping.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObjectiveValue {
    /// Predicted 𝒟 on the recorded views.
    pub divergence: f64,
    /// Inertia over the inertia of one group for all sets (0 … 1).
    pub spread: f64,
    /// `J` (see the module docs).
    pub combined: f64,
}

/// The combined objective over one table, one embedding and one weight.
#[derive(Clone, Debug)]
pub struct Objective<'a> {
    table: &'a DivergenceTable,
    vectors: &'a [Vec<f32>],
    weight: f64,
    /// `Σ tiles · (|s| − 1)`: the excess of one group per set.
    baseline_excess: u64,
    /// Inertia of one group for all sets.
    total_inertia: f64,
}

impl<'a> Objective<'a> {
    /// The objective of grouping `embeddings`' sets (those of `table`, in order) with
    /// divergence weight `weight` (0 ≤ w ≤ 1).
    pub fn new(
        table: &'a DivergenceTable,
        embeddings: &'a Embeddings,
        weight: f64,
    ) -> Result<Self, ClusterError> {
        if !(0.0..=1.0).contains(&weight) {
            return Err(ClusterError::BadWeight { weight });
        }
        embeddings.check()?;
        if embeddings.set_names != table.set_names {
            return Err(ClusterError::BadEmbedding {
                set: embeddings.set_names.first().cloned().unwrap_or_default(),
                reason: "the embeddings are not of the co-occurrence table's sets".into(),
            });
        }
        let baseline_excess = table
            .signatures
            .iter()
            .zip(&table.tiles)
            .map(|(s, &t)| t * (s.len() as u64 - 1))
            .sum();
        let vectors = embeddings.vectors.as_slice();
        let total_inertia = inertia(vectors, &vec![0; vectors.len()], 1);
        Ok(Self {
            table,
            vectors,
            weight,
            baseline_excess,
            total_inertia,
        })
    }

    /// `J` from an excess and an inertia.
    fn combine(&self, excess: f64, inertia: f64) -> f64 {
        let spread = self.spread(inertia);
        let div = if self.baseline_excess > 0 {
            excess / self.baseline_excess as f64
        } else {
            0.0
        };
        (1.0 - self.weight) * spread + self.weight * div
    }

    /// Inertia relative to one group for all.
    fn spread(&self, inertia: f64) -> f64 {
        if self.total_inertia > 0.0 {
            inertia / self.total_inertia
        } else {
            0.0
        }
    }

    /// The objective of `labels` (`m` groups), computed from scratch.
    pub fn evaluate(&self, labels: &[usize], m: usize) -> ObjectiveValue {
        let excess = self.table.excess(labels) as f64;
        let inertia = inertia(self.vectors, labels, m);
        ObjectiveValue {
            divergence: self.table.predict(labels).divergence,
            spread: self.spread(inertia),
            combined: self.combine(excess, inertia),
        }
    }
}

/// Sum over sets of the squared distance to their group's centroid (`m` groups).
fn inertia(vectors: &[Vec<f32>], labels: &[usize], m: usize) -> f64 {
    let dim = vectors.first().map_or(0, Vec::len);
    let mut sums = vec![0f64; m * dim];
    let mut sizes = vec![0usize; m];
    for (v, &g) in vectors.iter().zip(labels) {
        sizes[g] += 1;
        for (s, &x) in sums[g * dim..(g + 1) * dim].iter_mut().zip(v) {
            *s += f64::from(x);
        }
    }
    vectors
        .iter()
        .zip(labels)
        .map(|(v, &g)| {
            let k = sizes[g] as f64;
            v.iter()
                .zip(&sums[g * dim..(g + 1) * dim])
                .map(|(&x, &s)| (f64::from(x) - s / k).powi(2))
                .sum::<f64>()
        })
        .sum()
}

/// A grouping with everything a move needs, kept up to date incrementally.
#[derive(Clone, Debug)]
pub(super) struct SearchState<'o, 'a> {
    objective: &'o Objective<'a>,
    m: usize,
    dim: usize,
    labels: Vec<usize>,
    /// Signature × group: sets of the signature in the group.
    counts: Vec<u16>,
    /// `Σ tiles · (D − 1)` now.
    excess: u64,
    sizes: Vec<usize>,
    /// Group × dimension: sum of the members' vectors.
    sums: Vec<f64>,
    /// Per group, the sum of the members' squared norms.
    norms: Vec<f64>,
    /// Per set, its squared norm.
    set_norms: Vec<f64>,
}

impl<'o, 'a> SearchState<'o, 'a> {
    /// The state of `labels` (each below `m`, every group non-empty).
    pub(super) fn new(objective: &'o Objective<'a>, labels: Vec<usize>, m: usize) -> Self {
        let table = objective.table;
        let dim = objective.vectors.first().map_or(0, Vec::len);
        let mut counts = vec![0u16; table.signatures.len() * m];
        for (k, sets) in table.signatures.iter().enumerate() {
            for &s in sets {
                counts[k * m + labels[s as usize]] += 1;
            }
        }
        let mut sizes = vec![0usize; m];
        let mut sums = vec![0f64; m * dim];
        let mut norms = vec![0f64; m];
        let set_norms: Vec<f64> = objective
            .vectors
            .iter()
            .map(|v| v.iter().map(|&x| f64::from(x).powi(2)).sum())
            .collect();
        for (i, &g) in labels.iter().enumerate() {
            sizes[g] += 1;
            norms[g] += set_norms[i];
            for (s, &x) in sums[g * dim..(g + 1) * dim]
                .iter_mut()
                .zip(&objective.vectors[i])
            {
                *s += f64::from(x);
            }
        }
        let excess = table.excess(&labels);
        Self {
            objective,
            m,
            dim,
            labels,
            counts,
            excess,
            sizes,
            sums,
            norms,
            set_norms,
        }
    }

    /// The groups' labels.
    pub(super) fn labels(&self) -> &[usize] {
        &self.labels
    }

    /// Inertia of group `g` with set `i` added (`sign` = 1), removed (−1) or as is (0).
    fn group_inertia(&self, g: usize, i: usize, sign: f64) -> f64 {
        let k = self.sizes[g] as f64 + sign;
        if k <= 0.0 {
            return 0.0;
        }
        let x = &self.objective.vectors[i];
        let sum_sq: f64 = self.sums[g * self.dim..(g + 1) * self.dim]
            .iter()
            .zip(x)
            .map(|(&s, &xi)| (s + sign * f64::from(xi)).powi(2))
            .sum();
        (self.norms[g] + sign * self.set_norms[i] - sum_sq / k).max(0.0)
    }

    /// The current inertia.
    fn inertia(&self) -> f64 {
        (0..self.m).map(|g| self.group_inertia(g, 0, 0.0)).sum()
    }

    /// `J` now.
    pub(super) fn value(&self) -> f64 {
        self.objective.combine(self.excess as f64, self.inertia())
    }

    /// Change of `Σ tiles · (D − 1)` when set `i` moves to group `b`.
    fn excess_delta(&self, i: usize, b: usize) -> i64 {
        let (a, m) = (self.labels[i], self.m);
        let table = self.objective.table;
        table.by_set[i]
            .iter()
            .map(|&k| {
                let c = &self.counts[k as usize * m..(k as usize + 1) * m];
                let opened = i64::from(c[b] == 0);
                let closed = i64::from(c[a] == 1);
                (opened - closed) * table.tiles[k as usize] as i64
            })
            .sum()
    }

    /// Change of `J` when set `i` moves to group `b` (0 when it is there already).
    pub(super) fn move_delta(&self, i: usize, b: usize) -> f64 {
        let a = self.labels[i];
        if a == b {
            return 0.0;
        }
        let d_inertia = self.group_inertia(a, i, -1.0) + self.group_inertia(b, i, 1.0)
            - self.group_inertia(a, i, 0.0)
            - self.group_inertia(b, i, 0.0);
        let d_excess = self.excess_delta(i, b) as f64;
        self.objective.combine(d_excess, d_inertia)
    }

    /// Move set `i` to group `b`.
    pub(super) fn apply_move(&mut self, i: usize, b: usize) {
        let (a, m) = (self.labels[i], self.m);
        if a == b {
            return;
        }
        let delta = self.excess_delta(i, b);
        self.excess = (self.excess as i64 + delta) as u64;
        for &k in &self.objective.table.by_set[i] {
            let c = &mut self.counts[k as usize * m..(k as usize + 1) * m];
            c[a] -= 1;
            c[b] += 1;
        }
        let x = &self.objective.vectors[i];
        for (g, sign) in [(a, -1.0), (b, 1.0)] {
            for (s, &xi) in self.sums[g * self.dim..(g + 1) * self.dim]
                .iter_mut()
                .zip(x)
            {
                *s += sign * f64::from(xi);
            }
            self.norms[g] += sign * self.set_norms[i];
        }
        self.sizes[a] -= 1;
        self.sizes[b] += 1;
        self.labels[i] = b;
    }
}

/// What the divergence-aware search did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchTrace {
    /// The k-means clusters the search started from (one label per set).
    pub start: Vec<usize>,
    /// The labels it ended with.
    pub labels: Vec<usize>,
    /// `J` at the start and after every step taken (strictly decreasing).
    pub values: Vec<f64>,
    /// The objective at the start.
    pub first: ObjectiveValue,
    /// The objective at the end.
    pub last: ObjectiveValue,
    /// Single-set moves taken.
    pub moves: usize,
    /// Swaps taken.
    pub swaps: usize,
    /// Passes over the sets (the last one changed nothing, unless the cap was hit).
    pub passes: usize,
}

/// Search `m` groups of `embeddings`' sets minimising `J` with weight `weight` on the
/// signatures of `table`, starting from the k-means clusters of `m` and `seed`;
/// deterministic for a seed (see the module docs).
pub(super) fn search(
    embeddings: &Embeddings,
    table: &DivergenceTable,
    m: usize,
    seed: u64,
    weight: f64,
) -> Result<SearchTrace, ClusterError> {
    let objective = Objective::new(table, embeddings, weight)?;
    let start = kmeans::kmeans_assign(&embeddings.vectors, m, seed)?;
    let n = start.len();
    let mut state = SearchState::new(&objective, start.clone(), m);
    let mut values = vec![state.value()];
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ ORDER_SALT);
    let (mut moves, mut swaps, mut passes) = (0, 0, 0);
    let mut order: Vec<usize> = (0..n).collect();
    while passes < MAX_PASSES {
        passes += 1;
        let mut changed = false;
        for k in (1..n).rev() {
            order.swap(k, below(&mut rng, k as u64 + 1) as usize);
        }
        for &i in &order {
            let a = state.labels[i];
            if state.sizes[a] < 2 {
                continue;
            }
            let best = (0..m)
                .filter(|&b| b != a)
                .map(|b| (b, state.move_delta(i, b)))
                .min_by(|x, y| x.1.total_cmp(&y.1));
            if let Some((b, _)) = best.filter(|&(_, d)| d < -MIN_IMPROVEMENT) {
                state.apply_move(i, b);
                values.push(state.value());
                moves += 1;
                changed = true;
            }
        }
        for (p, &i) in order.iter().enumerate() {
            for &j in &order[p + 1..] {
                let (a, b) = (state.labels[i], state.labels[j]);
                if a == b {
                    continue;
                }
                let first = state.move_delta(i, b);
                state.apply_move(i, b);
                let delta = first + state.move_delta(j, a);
                if delta < -MIN_IMPROVEMENT {
                    state.apply_move(j, a);
                    values.push(state.value());
                    swaps += 1;
                    changed = true;
                } else {
                    state.apply_move(i, a);
                }
            }
        }
        if !changed {
            break;
        }
    }
    let labels = state.labels().to_vec();
    Ok(SearchTrace {
        first: objective.evaluate(&start, m),
        last: objective.evaluate(&labels, m),
        start,
        labels,
        values,
        moves,
        swaps,
        passes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::cooccurrence::{RecordSource, ViewCounts, ViewSpec};
    use crate::ntc::model::SplitMix64;
    use crate::screen::tiles::TileSize;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("set{i}")).collect()
    }

    /// Embeddings of `n` sets: random 6-dimensional vectors.
    fn embeddings(n: usize, rng: &mut SplitMix64) -> Embeddings {
        Embeddings {
            embedder: "test".into(),
            embedder_version: "1".into(),
            detail: String::new(),
            blocks: Vec::new(),
            set_names: names(n),
            vectors: (0..n)
                .map(|_| (0..6).map(|_| rng.below(1000) as f32 / 100.0).collect())
                .collect(),
        }
    }

    /// A record of `views` random views over `n` sets: signatures of 1–4 sets.
    fn random_record(n: usize, views: usize, rng: &mut SplitMix64) -> CooccurrenceRecord {
        let counts = (0..views)
            .map(|_| {
                let mut h = BTreeMap::new();
                for _ in 0..60 {
                    let mut sets: Vec<u32> = (0..1 + rng.below(4))
                        .map(|_| rng.below(n as u64) as u32)
                        .collect();
                    sets.sort_unstable();
                    sets.dedup();
                    *h.entry(sets).or_insert(0) += 1 + rng.below(40);
                }
                ViewCounts::from_histogram(h)
            })
            .collect();
        CooccurrenceRecord::new(source(names(n), views), counts).expect("record")
    }

    /// A random problem: the embeddings of `n` sets and the table of a record of `views`
    /// views over them.
    fn random_problem(
        n: usize,
        views: usize,
        rng: &mut SplitMix64,
    ) -> (Embeddings, DivergenceTable) {
        let emb = embeddings(n, rng);
        let record = random_record(n, views, rng);
        let table = DivergenceTable::new(&record, Path::new("r"), &emb.set_names).expect("table");
        (emb, table)
    }

    fn source(set_names: Vec<String>, views: usize) -> RecordSource {
        RecordSource {
            scene: "synthetic".into(),
            scene_files: Vec::new(),
            set_names,
            tile: TileSize::T8x8,
            size: [1920, 1080],
            views: (0..views)
                .map(|k| ViewSpec::PathSample {
                    path: "walk".into(),
                    time: k as f32,
                })
                .collect(),
        }
    }

    #[test]
    fn prediction_by_hand() {
        // Signatures {0}: 10, {0, 1}: 4, {1, 2, 3}: 2 over 4 sets.
        let mut h = BTreeMap::new();
        h.insert(vec![0], 10);
        h.insert(vec![0, 1], 4);
        h.insert(vec![1, 2, 3], 2);
        let record =
            CooccurrenceRecord::new(source(names(4), 1), vec![ViewCounts::from_histogram(h)])
                .expect("record");
        let table = DivergenceTable::new(&record, Path::new("r.json"), &names(4)).expect("table");
        assert_eq!(table.covered_tiles(), 16);
        // Baseline: D = 1, 2, 3 → 𝒟 = (0 + 4 + 2·2) / 16.
        let base = table.predict(&[0, 1, 2, 3]);
        assert_eq!(base.divergence, 8.0 / 16.0);
        assert_eq!(base.mean_decoders, 1.5);
        // {0, 1} together, {2, 3} together: D = 1, 1, 2 → 2 / 16.
        assert_eq!(table.predict(&[0, 0, 1, 1]).divergence, 2.0 / 16.0);
        assert_eq!(table.predict(&[0, 0, 0, 0]).divergence, 0.0);

        // The table is re-indexed by name: sets grouped in another order, plus one the
        // record never saw.
        let shuffled: Vec<String> = ["set3", "extra", "set1", "set0", "set2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let table = DivergenceTable::new(&record, Path::new("r.json"), &shuffled).expect("table");
        // set0 and set1 together (labels by the new order: set3, extra, set1, set0, set2).
        assert_eq!(table.predict(&[1, 2, 0, 0, 1]).divergence, 2.0 / 16.0);
        let err = DivergenceTable::new(&record, Path::new("r.json"), &names(3)).unwrap_err();
        assert!(
            err.to_string().contains("r.json") && err.to_string().contains("set3"),
            "{err}"
        );
        // A record built in memory is checked too.
        let mut broken = record.clone();
        broken.views[0].signatures[0].sets = vec![7];
        let err = DivergenceTable::new(&broken, Path::new("r.json"), &names(4)).unwrap_err();
        assert!(err.to_string().contains("set index 7"), "{err}");
    }

    #[test]
    fn incremental_objective_equals_full_recomputation() {
        let mut rng = SplitMix64::new(0x1234_5678_9abc_def1);
        let (n, m) = (14, 4);
        let (emb, table) = random_problem(n, 3, &mut rng);
        for weight in [0.0, 0.3, 1.0] {
            let objective = Objective::new(&table, &emb, weight).expect("objective");
            let labels: Vec<usize> = (0..n).map(|i| i % m).collect();
            let mut state = SearchState::new(&objective, labels, m);
            for step in 0..200 {
                let i = rng.below(n as u64) as usize;
                let b = rng.below(m as u64) as usize;
                let before = state.value();
                let delta = state.move_delta(i, b);
                state.apply_move(i, b);
                let full = objective.evaluate(state.labels(), m);
                let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * (1.0 + b.abs());
                assert!(close(state.value(), full.combined), "step {step}");
                assert!(close(before + delta, full.combined), "step {step}");
                assert_eq!(state.excess, table.excess(state.labels()), "step {step}");
                let sizes_ok = (0..m)
                    .all(|g| state.sizes[g] == state.labels().iter().filter(|&&l| l == g).count());
                assert!(sizes_ok);
            }
        }
    }

    #[test]
    fn search_descends_deterministically_and_keeps_m_groups() {
        let mut rng = SplitMix64::new(0x0bad_cafe_f00d_0001);
        let (n, m) = (20, 5);
        let (emb, table) = random_problem(n, 4, &mut rng);
        let trace = search(&emb, &table, m, 9, 0.5).expect("search");
        assert!(trace.values.len() > 1, "{trace:?}");
        assert!(
            trace.values.windows(2).all(|w| w[1] <= w[0]),
            "{:?}",
            trace.values
        );
        let (first, last) = (trace.values[0], *trace.values.last().unwrap());
        assert!(last < first, "{first} → {last}");
        assert!((first - trace.first.combined).abs() < 1e-9);
        assert!((last - trace.last.combined).abs() < 1e-9);
        assert!(trace.last.divergence < trace.first.divergence);
        assert_eq!(trace.values.len(), 1 + trace.moves + trace.swaps);
        // Every group non-empty, m of them.
        for g in 0..m {
            assert!(
                trace.labels.contains(&g),
                "group {g} empty: {:?}",
                trace.labels
            );
        }
        assert!(trace.labels.iter().all(|&g| g < m));
        assert_eq!(search(&emb, &table, m, 9, 0.5).expect("again"), trace);
        // A local optimum: no single move improves any more.
        let objective = Objective::new(&table, &emb, 0.5).expect("objective");
        let state = SearchState::new(&objective, trace.labels.clone(), m);
        for i in 0..n {
            if state.sizes[state.labels[i]] > 1 {
                for b in 0..m {
                    assert!(state.move_delta(i, b) >= -MIN_IMPROVEMENT);
                }
            }
        }
        // w = 0 is k-means' objective: the k-means start can only get tighter.
        let appearance = search(&emb, &table, m, 9, 0.0).expect("w = 0");
        assert!(appearance.last.spread <= appearance.first.spread);
        assert!(matches!(
            search(&emb, &table, m, 9, 1.5),
            Err(ClusterError::BadWeight { .. })
        ));
    }
}
