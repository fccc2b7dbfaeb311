//! Grouping strategies and plans.
//!
//! The five strategies of the paper (Table 2): `baseline` (one group, so one decoder, per
//! set), `single` (one group for all sets), `clustered` (k-means on the embeddings, `m`
//! groups), `random` (as many groups as `clustered`, of the same sizes, filled by a
//! seeded shuffle) and `category` (one group per category label; a set without a label
//! forms a group of its own); and `divergence-aware` (`m` groups from a local search on
//! screen co-occurrence and appearance, started from the `clustered` groups; see the
//! `divergence_aware` module), which needs a co-occurrence record ([`PlanInputs`]).
//!
//! A [`Plan`] is the result: the input description, the embedder, `m`, the seed, the
//! strategy and the groups (set names and indices). [`Plan::validate`] checks that it
//! names every set exactly once; [`Plan::write`] stores it as JSON through a temporary
//! file and a rename. [`plan_summary`] gives group sizes and the within-group spread.

use std::collections::HashMap;
use std::path::Path;

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

use super::cooccurrence::CooccurrenceRecord;
use super::divergence_aware::{self, DivergenceTable};
use super::embed::Embeddings;
use super::{ClusterError, kmeans};
use crate::texture::TextureSet;

/// The `format` tag of plan files.
const PLAN_FORMAT: &str = "neurotex-cluster-plan";

/// The version of the plan file layout.
const PLAN_VERSION: u32 = 1;

/// Mixed into the seed of `random`'s shuffle so that it does not replay k-means' stream.
const SHUFFLE_SALT: u64 = 0x5eed_5417_f1e5_0001;

/// How texture sets are grouped onto shared decoders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[derive(clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// One group (decoder) per texture set.
    Baseline,
    /// One group for all texture sets.
    Single,
    /// k-means on the embeddings into `m` groups.
    Clustered,
    /// `m` groups with the sizes of the clustered plan, filled at random (seeded).
    Random,
    /// One group per category label; unlabelled sets form their own groups.
    Category,
    /// `m` groups that cut the distinct decoders per screen tile on recorded views while
    /// staying similar in appearance (needs a co-occurrence record).
    #[serde(rename = "divergence-aware")]
    DivergenceAware,
}

impl Strategy {
    /// The strategy's lowercase name, as on the command line and in plan files.
    pub const fn name(self) -> &'static str {
        match self {
            Strategy::Baseline => "baseline",
            Strategy::Single => "single",
            Strategy::Clustered => "clustered",
            Strategy::Random => "random",
            Strategy::Category => "category",
            Strategy::DivergenceAware => "divergence-aware",
        }
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One group of a plan: the sets that share one decoder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanGroup {
    /// The sets' names, in the order of `indices`.
    pub sets: Vec<String>,
    /// The sets' indices in the input, ascending.
    pub indices: Vec<usize>,
}

/// A grouping of texture sets onto decoders, as stored in a plan file (JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Always `neurotex-cluster-plan`.
    pub format: String,
    /// Plan file layout version (1).
    pub version: u32,
    /// What the sets came from (scene or manifest path); `make_plan` writes
    /// "`N` texture sets" and the caller may replace it.
    pub input: String,
    /// Number of texture sets in the input.
    pub n_sets: usize,
    /// Name of the embedder of the embeddings the plan was made from.
    pub embedder: String,
    /// That embedder's version.
    pub embedder_version: String,
    /// The strategy.
    pub strategy: Strategy,
    /// Number of groups (for `baseline`, `single` and `category` the count that results;
    /// for `clustered`, `random` and `divergence-aware` the requested `m`).
    pub m: usize,
    /// The seed of k-means, of the random shuffle and of the divergence-aware search.
    pub seed: u64,
    /// The groups, each non-empty; group `g` is decoder `g`.
    pub groups: Vec<PlanGroup>,
    /// For `divergence-aware`: the co-occurrence record, the weight and what the search
    /// changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooccurrence: Option<PlanCooccurrence>,
}

/// How a `divergence-aware` plan used its co-occurrence record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanCooccurrence {
    /// The record file.
    pub record: String,
    /// The weight of the divergence term.
    pub weight: f64,
    /// Predicted 𝒟 of the k-means clusters the search started from.
    pub start_divergence: f64,
    /// Predicted 𝒟 of the plan's groups.
    pub divergence: f64,
    /// The sets the search moved away from their k-means cluster (pulled into another
    /// group by co-occurrence), in input order.
    pub moved: Vec<String>,
}

/// What strategies need besides the embeddings.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlanInputs<'a> {
    /// One category label per set (for `category`).
    pub categories: Option<&'a [String]>,
    /// The co-occurrence record (for `divergence-aware`).
    pub cooccurrence: Option<CooccurrenceInput<'a>>,
}

/// A co-occurrence record as a strategy input.
#[derive(Clone, Copy, Debug)]
pub struct CooccurrenceInput<'a> {
    /// The record.
    pub record: &'a CooccurrenceRecord,
    /// The file it was read from (named in errors and in the plan).
    pub file: &'a Path,
    /// The weight of the divergence term, 0 ≤ w ≤ 1 (default
    /// [`crate::cluster::DEFAULT_COOCCURRENCE_WEIGHT`]).
    pub weight: f64,
}

impl Plan {
    /// Check that the plan refers to `sets`: every group non-empty, every index in range
    /// with the set's name, every set in exactly one group, `m` and `n_sets` consistent.
    pub fn validate(&self, sets: &[TextureSet]) -> Result<(), ClusterError> {
        let names: Vec<&str> = sets.iter().map(|s| s.name.as_str()).collect();
        self.check(&names).map(|_| ())
    }

    /// The group of each set (by input index), after the checks of [`Plan::validate`].
    pub fn group_of_sets(&self, sets: &[TextureSet]) -> Result<Vec<usize>, ClusterError> {
        let names: Vec<&str> = sets.iter().map(|s| s.name.as_str()).collect();
        self.check(&names)
    }

    /// Validate against the set names; return the group of each set.
    pub(super) fn check(&self, names: &[&str]) -> Result<Vec<usize>, ClusterError> {
        let invalid = |reason: String| ClusterError::InvalidPlan { file: None, reason };
        if self.format != PLAN_FORMAT || self.version != PLAN_VERSION {
            return Err(invalid(format!(
                "format `{}` version {} (expected `{PLAN_FORMAT}` version {PLAN_VERSION})",
                self.format, self.version
            )));
        }
        if self.n_sets != names.len() {
            return Err(invalid(format!(
                "made for {} texture sets, given {}",
                self.n_sets,
                names.len()
            )));
        }
        if self.m != self.groups.len() {
            return Err(invalid(format!(
                "m = {} but {} groups",
                self.m,
                self.groups.len()
            )));
        }
        let mut group_of: Vec<Option<usize>> = vec![None; names.len()];
        for (g, group) in self.groups.iter().enumerate() {
            if group.indices.is_empty() {
                return Err(invalid(format!("group {g} is empty")));
            }
            if group.indices.len() != group.sets.len() {
                return Err(invalid(format!(
                    "group {g} has {} indices but {} set names",
                    group.indices.len(),
                    group.sets.len()
                )));
            }
            for (&i, name) in group.indices.iter().zip(&group.sets) {
                let Some(&actual) = names.get(i) else {
                    return Err(invalid(format!(
                        "group {g} names set {i} (`{name}`), but there are only {} sets",
                        names.len()
                    )));
                };
                if actual != name {
                    return Err(invalid(format!(
                        "group {g}: set {i} is `{actual}`, the plan says `{name}`"
                    )));
                }
                if let Some(other) = group_of[i].replace(g) {
                    return Err(invalid(format!(
                        "set {i} (`{name}`) is in group {other} and group {g}"
                    )));
                }
            }
        }
        if let Some(i) = group_of.iter().position(Option::is_none) {
            return Err(invalid(format!(
                "set {i} (`{}`) is in no group",
                names.get(i).copied().unwrap_or_default()
            )));
        }
        Ok(group_of.into_iter().flatten().collect())
    }

    /// Write the plan as pretty JSON through a temporary file and a rename.
    pub fn write(&self, path: &Path) -> Result<(), ClusterError> {
        let mut json = serde_json::to_vec_pretty(self).map_err(|e| ClusterError::Json {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        json.push(b'\n');
        crate::io::write_atomic(path, &json).map_err(|source| ClusterError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Read a plan file (check it against the sets with [`Plan::validate`]).
    pub fn read(path: &Path) -> Result<Plan, ClusterError> {
        let bytes = crate::io::read_file(path, |path, source| ClusterError::Io { path, source })?;
        Self::from_slice(&bytes, path)
    }

    /// Parse the bytes of a plan file read from `path` (named in errors).
    pub fn from_slice(bytes: &[u8], path: &Path) -> Result<Plan, ClusterError> {
        let plan: Plan = serde_json::from_slice(bytes).map_err(|e| ClusterError::Json {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        if plan.format != PLAN_FORMAT {
            return Err(ClusterError::InvalidPlan {
                file: Some(path.to_path_buf()),
                reason: format!("format `{}` is not `{PLAN_FORMAT}`", plan.format),
            });
        }
        Ok(plan)
    }
}

/// Build a plan with `strategy` for the sets of `embeddings`.
///
/// `m` and `seed` are used by `clustered`, `random` and `divergence-aware` (1 ≤ m ≤
/// number of sets, else an error); the other strategies ignore them and record the group
/// count that results. `categories` (one label per set, in input order) is required by
/// `category`; an empty (or all-blank) label puts the set in a group of its own.
/// `divergence-aware` needs a co-occurrence record: use [`make_plan_with`]. Groups come
/// in order of their first set; indices within a group ascend.
pub fn make_plan(
    strategy: Strategy,
    embeddings: &Embeddings,
    m: usize,
    seed: u64,
    categories: Option<&[String]>,
) -> Result<Plan, ClusterError> {
    let inputs = PlanInputs {
        categories,
        cooccurrence: None,
    };
    make_plan_with(strategy, embeddings, m, seed, &inputs)
}

/// [`make_plan`] with every strategy input, including the co-occurrence record of
/// `divergence-aware`.
pub fn make_plan_with(
    strategy: Strategy,
    embeddings: &Embeddings,
    m: usize,
    seed: u64,
    inputs: &PlanInputs<'_>,
) -> Result<Plan, ClusterError> {
    let n = embeddings.len();
    if n == 0 {
        return Err(ClusterError::NoSets { what: "group" });
    }
    embeddings.check()?;
    let mut cooccurrence = None;
    let labels: Vec<usize> = match strategy {
        Strategy::Baseline => (0..n).collect(),
        Strategy::Single => vec![0; n],
        Strategy::Clustered | Strategy::Random | Strategy::DivergenceAware => {
            if m == 0 || m > n {
                return Err(ClusterError::BadGroupCount {
                    strategy: strategy.name(),
                    m,
                    n,
                });
            }
            match strategy {
                Strategy::Random => random_same_sizes(
                    &kmeans::kmeans_assign(&embeddings.vectors, m, seed)?,
                    m,
                    seed,
                ),
                Strategy::DivergenceAware => {
                    let input = inputs.cooccurrence.ok_or(ClusterError::NoCooccurrence)?;
                    let table =
                        DivergenceTable::new(input.record, input.file, &embeddings.set_names)?;
                    let trace =
                        divergence_aware::search(embeddings, &table, m, seed, input.weight)?;
                    cooccurrence = Some(PlanCooccurrence {
                        record: input.file.display().to_string(),
                        weight: input.weight,
                        start_divergence: trace.first.divergence,
                        divergence: trace.last.divergence,
                        moved: (0..n)
                            .filter(|&i| trace.labels[i] != trace.start[i])
                            .map(|i| embeddings.set_names[i].clone())
                            .collect(),
                    });
                    trace.labels
                }
                _ => kmeans::kmeans_assign(&embeddings.vectors, m, seed)?,
            }
        }
        Strategy::Category => {
            let cats = inputs.categories.ok_or_else(|| ClusterError::Categories {
                reason: "no categories given (one label per texture set is needed)".into(),
            })?;
            if cats.len() != n {
                return Err(ClusterError::Categories {
                    reason: format!("{} labels for {n} texture sets", cats.len()),
                });
            }
            category_labels(cats)
        }
    };
    let groups = groups_from_labels(&labels, &embeddings.set_names);
    let plan = Plan {
        format: PLAN_FORMAT.into(),
        version: PLAN_VERSION,
        input: format!("{n} texture sets"),
        n_sets: n,
        embedder: embeddings.embedder.clone(),
        embedder_version: embeddings.embedder_version.clone(),
        strategy,
        m: groups.len(),
        seed,
        groups,
        cooccurrence,
    };
    let names: Vec<&str> = embeddings.set_names.iter().map(String::as_str).collect();
    plan.check(&names)?;
    Ok(plan)
}

/// Labels with the group sizes of `clustered` (group `g` keeps size |g|), the sets drawn
/// by a seeded Fisher–Yates shuffle.
fn random_same_sizes(clustered: &[usize], m: usize, seed: u64) -> Vec<usize> {
    let n = clustered.len();
    let mut sizes = vec![0usize; m];
    for &l in clustered {
        sizes[l] += 1;
    }
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ SHUFFLE_SALT);
    for i in (1..n).rev() {
        let j = below(&mut rng, i as u64 + 1) as usize;
        order.swap(i, j);
    }
    let mut labels = vec![0usize; n];
    let mut pos = 0;
    for (g, &size) in sizes.iter().enumerate() {
        for &set in &order[pos..pos + size] {
            labels[set] = g;
        }
        pos += size;
    }
    labels
}

/// A uniform integer in `0..bound` (`bound ≥ 1`), by rejection (no modulo bias).
pub(super) fn below(rng: &mut impl RngCore, bound: u64) -> u64 {
    let limit = u64::MAX - u64::MAX % bound;
    loop {
        let x = rng.next_u64();
        if x < limit {
            return x % bound;
        }
    }
}

/// One label per distinct (trimmed) category; blank categories get labels of their own.
fn category_labels(categories: &[String]) -> Vec<usize> {
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let mut labels = Vec::with_capacity(categories.len());
    let mut next = 0;
    for c in categories {
        let c = c.trim();
        let label = match ids.get(c) {
            Some(&id) if !c.is_empty() => id,
            _ => {
                if !c.is_empty() {
                    ids.insert(c, next);
                }
                next += 1;
                next - 1
            }
        };
        labels.push(label);
    }
    labels
}

/// Groups from per-set labels, ordered by first member.
fn groups_from_labels(labels: &[usize], names: &[String]) -> Vec<PlanGroup> {
    let mut slot: HashMap<usize, usize> = HashMap::new();
    let mut groups: Vec<PlanGroup> = Vec::new();
    for (i, (&l, name)) in labels.iter().zip(names).enumerate() {
        let g = *slot.entry(l).or_insert_with(|| {
            groups.push(PlanGroup {
                sets: Vec::new(),
                indices: Vec::new(),
            });
            groups.len() - 1
        });
        groups[g].sets.push(name.clone());
        groups[g].indices.push(i);
    }
    groups
}

/// Size and spread of one group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    /// Number of sets.
    pub size: usize,
    /// Root-mean-square distance of the members to the group's centroid (embedding space).
    pub rms_spread: f32,
    /// Largest member-to-centroid distance.
    pub max_distance: f32,
    /// The member farthest from the centroid.
    pub farthest: String,
}

/// Group sizes and within-group spread of a plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanSummary {
    /// The plan's strategy.
    pub strategy: Strategy,
    /// The embedder the spread is measured in.
    pub embedder: String,
    /// Number of sets.
    pub n_sets: usize,
    /// One entry per group, in plan order.
    pub groups: Vec<GroupSummary>,
    /// Smallest group size.
    pub min_size: usize,
    /// Largest group size.
    pub max_size: usize,
    /// Mean squared member-to-centroid distance over all sets (k-means' inertia / n).
    pub mean_sq_spread: f32,
}

impl std::fmt::Display for PlanSummary {
    /// A short multi-line report: header, then `group g: size, rms spread, farthest`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} plan, {} sets in {} groups (sizes {}–{}), embedder {}, mean squared spread {:.4}",
            self.strategy,
            self.n_sets,
            self.groups.len(),
            self.min_size,
            self.max_size,
            self.embedder,
            self.mean_sq_spread
        )?;
        for (g, s) in self.groups.iter().enumerate() {
            writeln!(
                f,
                "  group {g:>3}: {:>4} sets, rms spread {:.4}, farthest {} ({:.4})",
                s.size, s.rms_spread, s.farthest, s.max_distance
            )?;
        }
        Ok(())
    }
}

/// Sizes and within-group spread of `plan`, measured on `embeddings` (which must be
/// those of the plan's sets, in the same order).
pub fn plan_summary(plan: &Plan, embeddings: &Embeddings) -> Result<PlanSummary, ClusterError> {
    embeddings.check()?;
    let names: Vec<&str> = embeddings.set_names.iter().map(String::as_str).collect();
    plan.check(&names)?;
    let dim = embeddings.dim();
    let mut groups = Vec::with_capacity(plan.groups.len());
    let mut total_sq = 0f64;
    for group in &plan.groups {
        let k = group.indices.len() as f64;
        let mut centroid = vec![0f64; dim];
        for &i in &group.indices {
            for (c, &x) in centroid.iter_mut().zip(&embeddings.vectors[i]) {
                *c += x as f64 / k;
            }
        }
        let mut sum_sq = 0f64;
        let mut far: Option<(f64, usize)> = None;
        for &i in &group.indices {
            let d2: f64 = centroid
                .iter()
                .zip(&embeddings.vectors[i])
                .map(|(c, &x)| (x as f64 - c).powi(2))
                .sum();
            sum_sq += d2;
            if far.is_none_or(|(fd, _)| d2 > fd) {
                far = Some((d2, i));
            }
        }
        // Groups are non-empty (checked above).
        let (far_d2, far_i) = far.unwrap_or((0.0, group.indices.first().copied().unwrap_or(0)));
        total_sq += sum_sq;
        groups.push(GroupSummary {
            size: group.indices.len(),
            rms_spread: (sum_sq / k).sqrt() as f32,
            max_distance: far_d2.sqrt() as f32,
            farthest: embeddings.set_names.get(far_i).cloned().unwrap_or_default(),
        });
    }
    Ok(PlanSummary {
        strategy: plan.strategy,
        embedder: format!("{} v{}", embeddings.embedder, embeddings.embedder_version),
        n_sets: plan.n_sets,
        min_size: groups.iter().map(|g| g.size).min().unwrap_or(0),
        max_size: groups.iter().map(|g| g.size).max().unwrap_or(0),
        mean_sq_spread: (total_sq / plan.n_sets.max(1) as f64) as f32,
        groups,
    })
}
