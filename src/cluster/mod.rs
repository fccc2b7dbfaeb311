//! Grouping texture sets so that each group shares one decoder MLP (design notes §5).
//!
//! The pipeline follows the paper's Algorithm 2 (feature extraction, k-means into `m`
//! groups), with a weight-free default embedder:
//!
//! ```text
//! &[TextureSet] ──embed_sets──► Embeddings ──make_plan(strategy, m, seed)──► Plan ──► JSON
//!                 (stats | clip)  (one vector      (baseline | single |          └──► contact sheet PNG
//!                                  per set)         clustered | random | category |
//!                                                   divergence-aware ◄── CooccurrenceRecord)
//! ```
//!
//! - [`embed_sets`] turns every set into one vector with the chosen embedder
//!   ([`EmbedderChoice`]): `stats` (low-level texture statistics, no weights, the default)
//!   or `clip` (CLIP ViT-B/32 image features from a local safetensors file, cargo feature
//!   `clip`). The embedder's name and version travel with the vectors and into every plan.
//! - [`make_plan`] builds a [`Plan`] with one of the five [`Strategy`]s of the paper;
//!   `clustered` runs seeded k-means++ with restarts (linfa-clustering), `random` draws
//!   groups of the same sizes with a seeded shuffle. [`make_plan_with`] adds the inputs of
//!   `divergence-aware`: a [`CooccurrenceRecord`] (which texture sets meet in one screen
//!   tile over recorded views) and the weight between predicted divergence and
//!   appearance; the search starts from the `clustered` groups.
//! - [`DivergenceTable`] predicts the divergence 𝒟 of any plan on a record's views,
//!   exactly; [`PlanScore`] puts it next to the appearance spread.
//! - [`plan_summary`] reports group sizes and the within-group spread in embedding space.
//! - [`write_contact_sheet`] draws one row of base-colour thumbnails per group.
//!
//! Sub-modules: `embed` (embeddings and the embedder choice), `stats` (the statistics
//! embedder), `clip` (CLIP preprocessing, and the model behind the `clip` feature),
//! `kmeans` (seeded k-means), `strategy` (strategies, plans, summaries, categories),
//! `cooccurrence` (the co-occurrence record, its file and its CPU reference),
//! `divergence_aware` (the objective and the search) and `contact_sheet`.

mod clip;
mod contact_sheet;
mod cooccurrence;
mod divergence_aware;
mod embed;
mod kmeans;
mod stats;
mod strategy;

use std::path::PathBuf;

use crate::texture::TextureError;

pub use crate::inputs::categories_from_csv;
pub use clip::{CLIP_MEAN, CLIP_STD, ClipArch, ClipOptions, clip_pixels};
pub use contact_sheet::{ContactSheet, render_contact_sheet, write_contact_sheet};
pub use cooccurrence::{
    COOCCURRENCE_FORMAT, COOCCURRENCE_VERSION, CooccurrenceRecord, FileDigest, MAX_RECORD_BYTES,
    RecordSource, TileSignature, ViewCounts, ViewSpec,
};
pub use divergence_aware::{
    DEFAULT_COOCCURRENCE_WEIGHT, DivergencePrediction, DivergenceTable, PlanScore, score_strategies,
};
pub use embed::{EmbedderChoice, EmbedderKind, EmbeddingBlock, Embeddings, embed_sets};
pub use kmeans::{KMEANS_RESTARTS, kmeans_assign};
pub use stats::{STATS_ANALYSIS_SIZE, STATS_BLOCKS, STATS_DIM, STATS_VERSION};
pub use strategy::{
    CooccurrenceInput, GroupSummary, Plan, PlanCooccurrence, PlanGroup, PlanInputs, PlanSummary,
    Strategy, make_plan, make_plan_with, plan_summary,
};

/// Errors of embedding, clustering, plan handling and contact sheets. Each message names
/// the file or texture set involved and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// There is nothing to embed or group.
    #[error("no texture sets to {what}")]
    NoSets {
        /// The operation (`embed`, `group`, ...).
        what: &'static str,
    },
    /// The requested number of groups does not fit the number of sets.
    #[error("strategy `{strategy}`: m = {m} groups is invalid for {n} texture sets (1 ≤ m ≤ {n})")]
    BadGroupCount {
        /// The strategy's name.
        strategy: &'static str,
        /// The requested number of groups.
        m: usize,
        /// The number of sets.
        n: usize,
    },
    /// A texture set cannot be used (no mip levels, texel buffer of the wrong length, ...).
    #[error("texture set `{set}`: {reason}")]
    BadSet {
        /// The set's name.
        set: String,
        /// What is wrong.
        reason: String,
    },
    /// An embedding holds NaN or infinity, or vectors of unequal length.
    #[error("embedding of texture set `{set}`: {reason}")]
    BadEmbedding {
        /// The set's name.
        set: String,
        /// What is wrong.
        reason: String,
    },
    /// The `category` strategy was given no categories, or not one per set.
    #[error("strategy `category`: {reason}")]
    Categories {
        /// What is wrong.
        reason: String,
    },
    /// linfa-clustering refused the parameters or failed.
    #[error("k-means with m = {m} on {n} embeddings failed: {message}")]
    KMeans {
        /// Number of clusters.
        m: usize,
        /// Number of embeddings.
        n: usize,
        /// linfa's message.
        message: String,
    },
    /// A plan does not cover the texture sets exactly once, or is inconsistent.
    #[error("invalid plan{}: {reason}", source_suffix(.file))]
    InvalidPlan {
        /// The plan file, when the plan came from one.
        file: Option<PathBuf>,
        /// What is wrong (names the set or group).
        reason: String,
    },
    /// A file could not be read or written.
    #[error("i/o error on {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A JSON file could not be parsed or produced.
    #[error("{path}: invalid JSON: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// serde_json's message (with line and column).
        message: String,
    },
    /// Reading or writing a texture file failed.
    #[error(transparent)]
    Texture(#[from] TextureError),
    /// The `clip` embedder was chosen but this build lacks the `clip` cargo feature.
    #[error("the `clip` embedder needs neurotex built with `--features clip` (weights: {weights})")]
    ClipDisabled {
        /// The weights file that was given.
        weights: PathBuf,
    },
    /// The `clip` embedder was chosen without a weights file.
    #[error(
        "the `clip` embedder needs a local CLIP ViT-B/32 safetensors file (--clip-weights FILE); no package registry ships the weights"
    )]
    ClipWeightsMissing,
    /// A tensor of the CLIP weights file is missing or has the wrong shape or type.
    #[error("{file}: tensor `{tensor}`: {problem}")]
    ClipTensor {
        /// The weights file.
        file: PathBuf,
        /// The tensor's name.
        tensor: String,
        /// What is wrong.
        problem: String,
    },
    /// The CLIP weights file could not be read, or the model failed to run.
    #[error("CLIP model from {file}: {message}")]
    Clip {
        /// The weights file.
        file: PathBuf,
        /// What failed.
        message: String,
    },
    /// A co-occurrence record is malformed (or is not one).
    #[error("{file}: invalid co-occurrence record: {reason}")]
    InvalidCooccurrence {
        /// The record file (or `<memory>`).
        file: PathBuf,
        /// What is wrong (names the view and signature).
        reason: String,
    },
    /// A co-occurrence record was made from another scene, set list, tile, size or views.
    #[error(
        "{file}: the co-occurrence record was made for other {what} (recorded: {recorded}; now: {expected}); record it again"
    )]
    CooccurrenceMismatch {
        /// The record file.
        file: PathBuf,
        /// The field that differs.
        what: String,
        /// The record's value.
        recorded: String,
        /// The value it should have.
        expected: String,
    },
    /// A record names a texture set that is not among the sets being grouped.
    #[error(
        "{file}: the co-occurrence record's texture set `{set}` is not among the {n} sets being grouped"
    )]
    CooccurrenceSet {
        /// The record file.
        file: PathBuf,
        /// The set's name.
        set: String,
        /// Number of sets being grouped.
        n: usize,
    },
    /// `divergence-aware` was asked for without a co-occurrence record.
    #[error(
        "strategy `divergence-aware` needs a co-occurrence record of the scene's views: give \
         one --scene (its views are recorded) or --cooccurrence FILE (a record that \
         `neurotex cluster --record-cooccurrence FILE` wrote)"
    )]
    NoCooccurrence,
    /// The weight between the divergence and the appearance terms is not in [0, 1].
    #[error("co-occurrence weight {weight} is outside 0..=1")]
    BadWeight {
        /// The weight given.
        weight: f64,
    },
    /// The contact sheet would be larger than a PNG this crate writes.
    #[error("{file}: contact sheet of {width}×{height} pixels is too large")]
    SheetTooLarge {
        /// The output file (or `<memory>`).
        file: String,
        /// Width in pixels.
        width: u64,
        /// Height in pixels.
        height: u64,
    },
}

/// ` (FILE)` when a file is known, nothing otherwise.
fn source_suffix(file: &Option<PathBuf>) -> String {
    file.as_ref()
        .map(|f| format!(" ({})", f.display()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ntc::model::SplitMix64;
    use crate::texture::{ChannelMask, LoadOptions, TextureSet, read_manifest, scene_texture_sets};
    use std::path::Path;

    const BISTRO: &str = "../shared/assets/bistro_texture_sets/manifest.csv";

    /// A random byte.
    fn byte(rng: &mut SplitMix64) -> u8 {
        rng.below(256) as u8
    }

    /// A 32² set with a full mip chain; `f(x, y, noise)` gives base colour and normal XY.
    fn synthetic(
        name: &str,
        f: impl Fn(u32, u32, &mut SplitMix64) -> [u8; 5],
        seed: u64,
    ) -> TextureSet {
        let mut noise = SplitMix64::new(seed);
        let present = ChannelMask::BASE_COLOR | ChannelMask::NORMAL;
        TextureSet::from_fn(name, present, (32, 32), |x, y| {
            let [r, g, b, nx, ny] = f(x, y, &mut noise);
            [r, g, b, 255, nx, ny, 255, 255, 255, 255, 255, 255]
        })
    }

    /// 8 sets: 0, 2, 4, 6 red-ish noisy; 1, 3, 5, 7 blue-ish striped (interleaved so that
    /// the families are not simply the first and second half).
    fn two_families() -> Vec<TextureSet> {
        (0..8u64)
            .map(|i| {
                let k = (i / 2) as u8;
                if i % 2 == 0 {
                    synthetic(
                        &format!("red_noise_{k}"),
                        move |_, _, n| {
                            let v = byte(n) / 3;
                            [150 + v + 4 * k, 30 + v / 2, 25 + v / 3, byte(n), byte(n)]
                        },
                        i,
                    )
                } else {
                    synthetic(
                        &format!("blue_stripes_{k}"),
                        move |x, _, n| {
                            let on = (x + k as u32) % 6 < 3;
                            let b = if on { 220 } else { 120 } - byte(n) / 16;
                            [30 + 5 * k, 60, b, 128, 128]
                        },
                        i,
                    )
                }
            })
            .collect()
    }

    fn family_of(name: &str) -> bool {
        name.starts_with("red")
    }

    #[test]
    fn stats_separates_two_families_and_kmeans_recovers_them() {
        let sets = two_families();
        let emb = embed_sets(&sets, &EmbedderChoice::Stats).expect("embed");
        assert_eq!(emb.len(), 8);
        assert_eq!(emb.dim(), STATS_DIM);
        assert_eq!(emb.embedder, "stats");
        assert_eq!(emb.embedder_version, STATS_VERSION);
        assert_eq!(emb.blocks.len(), STATS_BLOCKS.len());
        // Every within-family distance is smaller than every cross-family distance.
        let d = |a: &[f32], b: &[f32]| -> f32 {
            a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f32>()
        };
        let (mut within, mut across) = (0f32, f32::INFINITY);
        for i in 0..8 {
            for j in i + 1..8 {
                let dij = d(&emb.vectors[i], &emb.vectors[j]);
                if family_of(&sets[i].name) == family_of(&sets[j].name) {
                    within = within.max(dij);
                } else {
                    across = across.min(dij);
                }
            }
        }
        assert!(within < across, "within {within} ≥ across {across}");

        let plan = make_plan(Strategy::Clustered, &emb, 2, 7, None).expect("plan");
        plan.validate(&sets).expect("valid");
        assert_eq!((plan.m, plan.groups.len()), (2, 2));
        for group in &plan.groups {
            assert_eq!(group.indices.len(), 4);
            let fam = family_of(&group.sets[0]);
            assert!(group.sets.iter().all(|s| family_of(s) == fam), "{group:?}");
        }
        assert_eq!(plan.groups[0].indices, vec![0, 2, 4, 6]);
        assert_eq!(plan.embedder, "stats");
    }

    #[test]
    fn kmeans_is_reproducible_for_a_seed() {
        let sets = two_families();
        let emb = embed_sets(&sets, &EmbedderChoice::Stats).expect("embed");
        for m in [2, 3, 5] {
            let a = make_plan(Strategy::Clustered, &emb, m, 42, None).expect("a");
            let b = make_plan(Strategy::Clustered, &emb, m, 42, None).expect("b");
            assert_eq!(a, b);
            assert_eq!(a.groups.len(), m);
            let a = make_plan(Strategy::Random, &emb, m, 42, None).expect("a");
            let b = make_plan(Strategy::Random, &emb, m, 42, None).expect("b");
            assert_eq!(a, b);
        }
        // Embedding is deterministic too.
        assert_eq!(
            embed_sets(&sets, &EmbedderChoice::Stats).expect("again"),
            emb
        );
    }

    fn sizes(plan: &Plan) -> Vec<usize> {
        plan.groups.iter().map(|g| g.indices.len()).collect()
    }

    #[test]
    fn random_keeps_the_clustered_sizes() {
        let sets = two_families();
        let emb = embed_sets(&sets, &EmbedderChoice::Stats).expect("embed");
        for (m, seed) in [(2, 1), (3, 2), (4, 3), (8, 4)] {
            let clustered = make_plan(Strategy::Clustered, &emb, m, seed, None).expect("c");
            let random = make_plan(Strategy::Random, &emb, m, seed, None).expect("r");
            random.validate(&sets).expect("valid");
            let (mut a, mut b) = (sizes(&clustered), sizes(&random));
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "m = {m}");
            assert_eq!(random.strategy, Strategy::Random);
        }
        // Different seeds shuffle differently (for at least one of a few seeds).
        let base = make_plan(Strategy::Random, &emb, 2, 10, None).expect("r");
        assert!((11..15).any(|s| {
            make_plan(Strategy::Random, &emb, 2, s, None)
                .expect("r")
                .groups
                != base.groups
        }));
    }

    #[test]
    fn baseline_single_and_category() {
        let sets = two_families();
        let emb = embed_sets(&sets, &EmbedderChoice::Stats).expect("embed");
        let baseline = make_plan(Strategy::Baseline, &emb, 3, 0, None).expect("baseline");
        assert_eq!(baseline.m, 8);
        assert!(baseline.groups.iter().all(|g| g.indices.len() == 1));
        let single = make_plan(Strategy::Single, &emb, 3, 0, None).expect("single");
        assert_eq!(single.m, 1);
        assert_eq!(single.groups[0].indices, (0..8).collect::<Vec<_>>());

        let cats: Vec<String> = ["wood", "metal", "wood", "", "metal", " ", "fabric", "wood"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let plan = make_plan(Strategy::Category, &emb, 0, 0, Some(&cats)).expect("category");
        let groups: Vec<Vec<usize>> = plan.groups.iter().map(|g| g.indices.clone()).collect();
        assert_eq!(
            groups,
            vec![vec![0, 2, 7], vec![1, 4], vec![3], vec![5], vec![6]]
        );
        assert_eq!(plan.m, 5);
        for p in [&baseline, &single, &plan] {
            p.validate(&sets).expect("valid");
        }
        assert!(matches!(
            make_plan(Strategy::Category, &emb, 1, 0, None),
            Err(ClusterError::Categories { .. })
        ));
        assert!(make_plan(Strategy::Category, &emb, 1, 0, Some(&cats[..3])).is_err());
    }

    #[test]
    fn bad_m_and_empty_input_are_errors() {
        let sets = two_families();
        let emb = embed_sets(&sets, &EmbedderChoice::Stats).expect("embed");
        for strategy in [Strategy::Clustered, Strategy::Random] {
            for m in [0, 9] {
                let err = make_plan(strategy, &emb, m, 0, None).unwrap_err();
                assert!(matches!(err, ClusterError::BadGroupCount { .. }), "{err}");
                let msg = err.to_string();
                assert!(
                    msg.contains(&format!("m = {m}")) && msg.contains("8"),
                    "{msg}"
                );
            }
        }
        assert!(matches!(
            embed_sets(&[], &EmbedderChoice::Stats),
            Err(ClusterError::NoSets { .. })
        ));
        let mut broken = sets[0].clone();
        broken.mips[0].texels.pop();
        let err = embed_sets(&[broken], &EmbedderChoice::Stats).unwrap_err();
        assert!(err.to_string().contains("red_noise_0"), "{err}");
        let mut bad = emb.clone();
        bad.vectors[3][1] = f32::NAN;
        let err = make_plan(Strategy::Single, &bad, 1, 0, None).unwrap_err();
        assert!(
            err.to_string().contains("red_noise_1") || err.to_string().contains("blue_stripes_1"),
            "{err}"
        );
    }

    #[test]
    fn plans_cover_every_set_once_and_validation_catches_mistakes() {
        let sets = two_families();
        let emb = embed_sets(&sets, &EmbedderChoice::Stats).expect("embed");
        let plan = make_plan(Strategy::Clustered, &emb, 3, 5, None).expect("plan");
        let group_of = plan.group_of_sets(&sets).expect("groups");
        assert_eq!(group_of.len(), 8);
        let mut count = vec![0; 8];
        for g in &plan.groups {
            for &i in &g.indices {
                count[i] += 1;
            }
        }
        assert_eq!(count, vec![1; 8]);

        let mut dup = plan.clone();
        let i = dup.groups[0].indices[0];
        dup.groups[1].indices.push(i);
        dup.groups[1].sets.push(sets[i].name.clone());
        assert!(
            dup.validate(&sets)
                .unwrap_err()
                .to_string()
                .contains("group")
        );
        let mut gone = plan.clone();
        let last = gone.groups.len() - 1;
        gone.groups[last].indices.pop();
        gone.groups[last].sets.pop();
        let err = gone.validate(&sets).unwrap_err();
        assert!(
            err.to_string().contains("in no group") || err.to_string().contains("empty"),
            "{err}"
        );
        let mut renamed = plan.clone();
        renamed.groups[0].sets[0] = "ghost".into();
        assert!(
            renamed
                .validate(&sets)
                .unwrap_err()
                .to_string()
                .contains("ghost")
        );
        assert!(plan.validate(&sets[..7]).is_err());
    }

    #[test]
    fn plan_json_round_trip_and_summary() {
        let sets = two_families();
        let emb = embed_sets(&sets, &EmbedderChoice::Stats).expect("embed");
        let mut plan = make_plan(Strategy::Clustered, &emb, 2, 3, None).expect("plan");
        plan.input = "synthetic families".into();
        let dir = crate::io::test_dir("cluster");
        let path = dir.join("plan.json");
        plan.write(&path).expect("write");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(
            text.contains("\"strategy\": \"clustered\"")
                && text.contains("\"embedder\": \"stats\"")
        );
        let back = Plan::read(&path).expect("read plan");
        assert_eq!(back, plan);
        back.validate(&sets).expect("valid");
        std::fs::write(dir.join("bad.json"), b"{\"format\": 3").expect("write");
        let err = Plan::read(&dir.join("bad.json")).unwrap_err();
        assert!(err.to_string().contains("bad.json"), "{err}");

        let summary = plan_summary(&plan, &emb).expect("summary");
        assert_eq!((summary.min_size, summary.max_size), (4, 4));
        assert_eq!(summary.groups.len(), 2);
        let single = make_plan(Strategy::Single, &emb, 1, 0, None).expect("single");
        let one = plan_summary(&single, &emb).expect("summary");
        assert!(summary.mean_sq_spread < one.mean_sq_spread / 4.0);
        assert!(summary.to_string().contains("group   1"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn contact_sheet_has_the_expected_size() {
        let sets = two_families();
        let emb = embed_sets(&sets, &EmbedderChoice::Stats).expect("embed");
        let plan = make_plan(Strategy::Clustered, &emb, 2, 3, None).expect("plan");
        let sheet = render_contact_sheet(&sets, &plan).expect("sheet");
        // Label 2·4 + 1 digit · 4 · 3 = 20; 4 thumbnails of 64 + 4 gaps; bands 64 + 8.
        assert_eq!((sheet.width, sheet.height), (20 + 4 * 68 + 4, 2 * 72));
        assert_eq!(sheet.rgba.len(), (sheet.width * sheet.height * 4) as usize);
        // The first thumbnail of group 0 (a red set) is red-dominated.
        let p = ((4 * sheet.width + 20 + 4 + 32) * 4) as usize;
        assert!(
            sheet.rgba[p] > 2 * sheet.rgba[p + 2],
            "{:?}",
            &sheet.rgba[p..p + 4]
        );

        let baseline = make_plan(Strategy::Baseline, &emb, 0, 0, None).expect("baseline");
        let sheet = render_contact_sheet(&sets, &baseline).expect("sheet");
        assert_eq!((sheet.width, sheet.height), (20 + 68 + 4, 8 * 72));

        let dir = crate::io::test_dir("sheet");
        let path = dir.join("sheet.png");
        write_contact_sheet(&path, &sets, &plan).expect("write");
        let img = image::open(&path).expect("png");
        assert_eq!((img.width(), img.height()), (296, 144));
        assert!(write_contact_sheet(&path, &sets[..7], &plan).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn categories_come_from_csv_columns() {
        let names: Vec<String> = ["MASTER_Awning_Beams", "MASTER_Glass_Exterior", "ghost"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let cats = categories_from_csv(Path::new(BISTRO), "paper_category", &names).expect("csv");
        assert_eq!(cats, vec!["Fabric", "Other", ""]);
        let err = categories_from_csv(Path::new(BISTRO), "nope", &names).unwrap_err();
        assert!(err.to_string().contains("nope") && err.to_string().contains("manifest.csv"));
        let lr = Path::new("../shared/assets/ntc_living_room/texture_sets.csv");
        let cats = categories_from_csv(lr, "category", &["curtain".to_string()]).expect("csv");
        assert_eq!(cats, vec!["Fabric"]);
    }

    #[test]
    fn bistro_sets_cluster_into_a_valid_plan() {
        let entries = read_manifest(Path::new(BISTRO)).expect("manifest");
        let materials: Vec<_> = entries.iter().map(|e| e.material.clone()).collect();
        let (descs, _) = scene_texture_sets(&materials);
        // Six sets spread over the manifest.
        let sets: Vec<TextureSet> = descs
            .iter()
            .step_by(6)
            .take(6)
            .map(|d| {
                d.load(&LoadOptions {
                    allow_missing: false,
                    max_size: Some(64),
                })
                .expect("load")
                .set
            })
            .collect();
        assert_eq!(sets.len(), 6);
        let emb = embed_sets(&sets, &EmbedderChoice::Stats).expect("embed");
        assert_eq!((emb.len(), emb.dim()), (6, STATS_DIM));
        let plan = make_plan(Strategy::Clustered, &emb, 3, 1, None).expect("plan");
        plan.validate(&sets).expect("valid");
        assert_eq!(plan.groups.len(), 3);
        let names: Vec<String> = sets.iter().map(|s| s.name.clone()).collect();
        let cats = categories_from_csv(Path::new(BISTRO), "paper_category", &names).expect("cats");
        assert!(cats.iter().all(|c| !c.is_empty()), "{names:?} → {cats:?}");
        let by_cat = make_plan(Strategy::Category, &emb, 0, 0, Some(&cats)).expect("category");
        by_cat.validate(&sets).expect("valid");
        let summary = plan_summary(&plan, &emb).expect("summary");
        assert_eq!(summary.groups.iter().map(|g| g.size).sum::<usize>(), 6);
    }

    /// A record over `names` where sets 0 (`red_noise_0`) and 1 (`blue_stripes_0`) share
    /// 500 tiles and every set is also seen alone on 100.
    fn shared_tiles_record(names: &[String]) -> CooccurrenceRecord {
        let mut histogram = std::collections::BTreeMap::new();
        histogram.insert(vec![0, 1], 500);
        for i in 0..names.len() as u32 {
            histogram.insert(vec![i], 100);
        }
        let source = RecordSource {
            scene: "synthetic".into(),
            scene_files: Vec::new(),
            set_names: names.to_vec(),
            tile: crate::screen::tiles::TileSize::T8x8,
            size: [1920, 1080],
            views: vec![ViewSpec::PathSample {
                path: "walk".into(),
                time: 0.0,
            }],
        };
        CooccurrenceRecord::new(source, vec![ViewCounts::from_histogram(histogram)])
            .expect("record")
    }

    #[test]
    fn divergence_aware_groups_dissimilar_sets_that_share_tiles() {
        let sets = two_families();
        let emb = embed_sets(&sets, &EmbedderChoice::Stats).expect("embed");
        let record = shared_tiles_record(&emb.set_names);
        let file = Path::new("street.cooc.json");
        let with = |weight: f64| PlanInputs {
            categories: None,
            cooccurrence: Some(CooccurrenceInput {
                record: &record,
                file,
                weight,
            }),
        };
        let group_of = |plan: &Plan, i: usize| {
            plan.groups
                .iter()
                .position(|g| g.indices.contains(&i))
                .expect("grouped")
        };
        // Appearance alone separates the red and the blue set.
        let clustered = make_plan(Strategy::Clustered, &emb, 2, 7, None).expect("clustered");
        assert_ne!(group_of(&clustered, 0), group_of(&clustered, 1));
        let table = DivergenceTable::new(&record, file, &emb.set_names).expect("table");
        let predicted = table.predict_plan(&clustered).expect("predict");
        assert_eq!(predicted.divergence, 500.0 / 1300.0);
        assert_eq!(predicted.covered_tiles, 1300);

        // Divergence and appearance weighed equally: the two families are far apart, so
        // the default weight (0.2) keeps them apart; 0.5 pulls the pair together.
        let plan = make_plan_with(Strategy::DivergenceAware, &emb, 2, 7, &with(0.5))
            .expect("divergence-aware");
        plan.validate(&sets).expect("valid");
        assert_eq!((plan.m, plan.groups.len()), (2, 2));
        assert_eq!(plan.strategy, Strategy::DivergenceAware);
        assert_eq!(group_of(&plan, 0), group_of(&plan, 1), "{plan:?}");
        assert_eq!(table.predict_plan(&plan).expect("predict").divergence, 0.0);
        let c = plan.cooccurrence.clone().expect("cooccurrence");
        assert_eq!((c.start_divergence, c.divergence), (500.0 / 1300.0, 0.0));
        assert_eq!(c.record, "street.cooc.json");
        assert_eq!(c.moved.len(), 1);
        assert!(
            c.moved[0] == sets[0].name || c.moved[0] == sets[1].name,
            "{c:?}"
        );
        // The rest of each family stays together.
        for i in 2..8 {
            assert_eq!(
                group_of(&plan, i) == group_of(&plan, 2),
                i % 2 == 0,
                "{plan:?}"
            );
        }
        // Weight 0 is appearance alone: the k-means clusters stay.
        let appearance =
            make_plan_with(Strategy::DivergenceAware, &emb, 2, 7, &with(0.0)).expect("w = 0");
        assert_eq!(appearance.groups, clustered.groups);
        assert!(appearance.cooccurrence.expect("c").moved.is_empty());

        // The plan file keeps what the search did; the sheet marks the moved set.
        let dir = crate::io::test_dir("da");
        plan.write(&dir.join("plan.json")).expect("write");
        assert_eq!(Plan::read(&dir.join("plan.json")).expect("read"), plan);
        let _ = std::fs::remove_dir_all(&dir);
        let sheet = render_contact_sheet(&sets, &plan).expect("sheet");
        let moved = sets
            .iter()
            .position(|s| s.name == c.moved[0])
            .expect("moved");
        let pixel = |set: usize, dx: u32, dy: u32| {
            let g = group_of(&plan, set);
            let k = plan.groups[g]
                .indices
                .iter()
                .position(|&i| i == set)
                .expect("k") as u32;
            // Label strip 20, gap 4, thumbnails of 64 + 4; bands of 72 (see above).
            let (x, y) = (20 + 4 + k * 68 + dx, g as u32 * 72 + 4 + dy);
            let p = ((y * sheet.width + x) * 4) as usize;
            sheet.rgba[p..p + 4].to_vec()
        };
        assert_eq!(pixel(moved, 2, 2), vec![255, 255, 255, 255]);
        for i in (0..8).filter(|&i| i != moved) {
            assert_ne!(pixel(i, 2, 2), vec![255, 255, 255, 255], "set {i}");
        }

        // Without a record, or with a weight outside [0, 1], it is an error.
        let err = make_plan(Strategy::DivergenceAware, &emb, 2, 7, None).unwrap_err();
        assert!(matches!(err, ClusterError::NoCooccurrence), "{err}");
        assert!(err.to_string().contains("--cooccurrence"));
        let err = make_plan_with(Strategy::DivergenceAware, &emb, 2, 7, &with(-0.1)).unwrap_err();
        assert!(matches!(err, ClusterError::BadWeight { .. }), "{err}");
        for m in [0, 9] {
            let err =
                make_plan_with(Strategy::DivergenceAware, &emb, m, 7, &with(0.5)).unwrap_err();
            assert!(matches!(err, ClusterError::BadGroupCount { .. }), "{err}");
        }
        // One name on the command line, in plan files and in reports.
        use clap::ValueEnum as _;
        assert_eq!(
            Strategy::from_str("divergence-aware", false),
            Ok(Strategy::DivergenceAware)
        );
        assert_eq!(
            serde_json::to_string(&Strategy::DivergenceAware).expect("json"),
            "\"divergence-aware\""
        );
        assert_eq!(Strategy::DivergenceAware.to_string(), "divergence-aware");
    }

    #[test]
    fn embedder_choice_from_kind() {
        assert_eq!(
            EmbedderChoice::new(EmbedderKind::Stats, None).expect("stats"),
            EmbedderChoice::Stats
        );
        assert!(matches!(
            EmbedderChoice::new(EmbedderKind::Clip, None),
            Err(ClusterError::ClipWeightsMissing)
        ));
        let clip = EmbedderChoice::new(EmbedderKind::Clip, Some(Path::new("m.safetensors")))
            .expect("clip");
        assert_eq!(clip.name(), "clip-vit-b32");
    }
}
