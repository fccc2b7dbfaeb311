//! Runs: one training of the evaluation (a grouping of the sets and a freezing setting),
//! their names, how the requests of the three sections share runs, and the record of a
//! finished run (`runs/<name>.json`) that `--resume` loads instead of retraining.
//!
//! Two requests share a run when they train the same groups with the same freezing
//! setting; freezing does not matter when every group holds one set (a decoder of its
//! own is never frozen unless `freeze_single` is set), so `baseline` under any freezing
//! setting is one run. The first request names the run.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::EvalError;
use crate::cluster::Strategy;
use crate::ntc::TrainConfig;
use crate::ntc::compress::{CompressReport, group_main_steps};
use crate::ntc::train::gpu::StepKernelMs;
use crate::ntc::train::schedule::finetune_steps;

/// Gradual decoder freezing of a run, as given to `--freeze`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Freeze {
    /// No freezing: the decoder learns at the full rate for the whole main phase
    /// (`freeze.start_fraction = 1`).
    Off,
    /// Freezing starts at this fraction of the main steps, in \[0, 1).
    At(f64),
}

impl Freeze {
    /// The setting of a training configuration.
    pub fn of(train: &TrainConfig) -> Freeze {
        let start = train.freeze.start_fraction;
        if start >= 1.0 {
            Freeze::Off
        } else {
            Freeze::At(start)
        }
    }

    /// `train` with this setting (only `freeze.start_fraction` changes).
    pub fn apply(self, train: &TrainConfig) -> TrainConfig {
        let mut t = train.clone();
        t.freeze.start_fraction = match self {
            Freeze::Off => 1.0,
            Freeze::At(f) => f,
        };
        t
    }
}

impl std::fmt::Display for Freeze {
    /// `none`, or the start fraction (`0.25`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Freeze::Off => f.write_str("none"),
            Freeze::At(x) => write!(f, "{x}"),
        }
    }
}

impl std::str::FromStr for Freeze {
    type Err = String;

    /// `none` (or `off`), or a start fraction in \[0, 1\]; 1 means that freezing never
    /// starts, i.e. `none`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("none") || s.eq_ignore_ascii_case("off") {
            return Ok(Freeze::Off);
        }
        match s.parse::<f64>() {
            Ok(1.0) => Ok(Freeze::Off),
            Ok(f) if (0.0..1.0).contains(&f) => Ok(Freeze::At(f)),
            _ => Err(format!(
                "`{s}`: expected `none` or a fraction of the main steps in [0, 1], e.g. 0.5"
            )),
        }
    }
}

impl From<Freeze> for String {
    fn from(f: Freeze) -> String {
        f.to_string()
    }
}

impl TryFrom<String> for Freeze {
    type Error = String;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// A run's file name stem: `<strategy>`, with `-m<m>` for `clustered`, `random` and
/// `divergence-aware`, and `-freeze-<setting>` when the freezing setting is not the
/// recipe's (`clustered-m10`, `clustered-m10-freeze-none`, `random-m4`,
/// `divergence-aware-m10`).
pub fn run_name(strategy: Strategy, m: usize, freeze: Freeze, default_freeze: Freeze) -> String {
    let mut name = strategy.name().to_string();
    if matches!(
        strategy,
        Strategy::Clustered | Strategy::Random | Strategy::DivergenceAware
    ) {
        name.push_str(&format!("-m{m}"));
    }
    if freeze != default_freeze {
        name.push_str(&format!("-freeze-{freeze}"));
    }
    name
}

/// One training of the evaluation: a `compress` call over all sets.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSpec {
    /// File name stem (see [`run_name`]); unique within an evaluation.
    pub name: String,
    /// The strategy of the first request.
    pub strategy: Strategy,
    /// Freezing setting.
    pub freeze: Freeze,
    /// Set indices per group (= decoder).
    pub groups: Vec<Vec<usize>>,
}

impl RunSpec {
    /// Number of decoders.
    pub fn decoders(&self) -> usize {
        self.groups.len()
    }

    /// Whether freezing changes anything: some group shares its decoder, or
    /// `freeze_single` freezes lone decoders too.
    fn freeze_matters(groups: &[Vec<usize>], freeze_single: bool) -> bool {
        freeze_single || groups.iter().any(|g| g.len() > 1)
    }
}

/// The distinct runs of an evaluation, in the order first requested.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunList {
    /// The runs.
    pub runs: Vec<RunSpec>,
    /// `TrainConfig::freeze_single` of the evaluation.
    freeze_single: bool,
}

impl RunList {
    /// An empty list for training settings with this `freeze_single`.
    pub fn new(freeze_single: bool) -> RunList {
        RunList {
            runs: Vec::new(),
            freeze_single,
        }
    }

    /// The index of the run that trains `groups` with `freeze`, added under `name` and
    /// `strategy` when no earlier request trains the same.
    pub fn request(
        &mut self,
        name: String,
        strategy: Strategy,
        groups: Vec<Vec<usize>>,
        freeze: Freeze,
    ) -> usize {
        let matters = RunSpec::freeze_matters(&groups, self.freeze_single);
        if let Some(i) = self
            .runs
            .iter()
            .position(|r| r.groups == groups && (!matters || r.freeze == freeze))
        {
            return i;
        }
        self.runs.push(RunSpec {
            name,
            strategy,
            freeze,
            groups,
        });
        self.runs.len() - 1
    }
}

/// The default decoder counts of the sweep: the powers of two below `n`, `m` and `n`
/// (ascending, each once; `m` only when it is in 1..=n).
pub fn default_sweep(n: usize, m: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |&k| k.checked_mul(2))
        .take_while(|&k| k < n)
        .collect();
    if (1..=n).contains(&m) {
        v.push(m);
    }
    v.push(n);
    v.sort_unstable();
    v.dedup();
    v
}

/// Serde for metrics that may be infinite or NaN (a diverged loss, a record written before
/// PSNR was capped): finite values as JSON numbers, the others as the strings `inf`, `-inf`,
/// `NaN`, absent values as `null`.
mod metric {
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(x) if x.is_finite() => s.serialize_some(x),
            Some(x) => s.serialize_some(&x.to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Number(f64),
            Text(String),
        }
        match Option::<Repr>::deserialize(d)? {
            None => Ok(None),
            Some(Repr::Number(x)) => Ok(Some(x)),
            Some(Repr::Text(t)) => t
                .parse()
                .map(Some)
                .map_err(|_| D::Error::custom(format!("`{t}` is not a number"))),
        }
    }
}

/// The PSNR convention of run records: per set the PSNR pooled over every present
/// channel at mip 0, capped at 99 dB ([`crate::texture::metrics`]).
pub const PSNR_CONVENTION: &str = "pooled";

/// One material's result in a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MaterialResult {
    /// Index of the set in the evaluation's input.
    pub set: usize,
    /// The set's name.
    pub name: String,
    /// Its group (= decoder index).
    pub group: usize,
    /// Its PSNR at mip 0, pooled over every present channel (dB, capped at 99).
    #[serde(with = "metric")]
    pub psnr: Option<f64>,
    /// The set was reproduced exactly (`psnr` reads the 99 dB cap).
    #[serde(default)]
    pub psnr_exact: bool,
    /// Latent bits per mip-0 texel.
    pub bits_per_texel: f64,
    /// Its mean ꟻLIP at mip 0, when measured (`eval --flip`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flip: Option<f64>,
}

/// One group's training in a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupResult {
    /// Sets in the group.
    pub sets: usize,
    /// Wall-clock seconds of its training (0 when it was resumed from a finished part).
    pub seconds: f64,
    /// Its last reported batch loss (fine-tuning phase).
    #[serde(with = "metric")]
    pub final_loss: Option<f64>,
    /// A step's GPU time, Adam apart from the rest, when its training profiled the
    /// kernels ([`GroupReport::kernel_ms`](crate::ntc::compress::GroupReport::kernel_ms)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_ms: Option<StepKernelMs>,
}

/// One point of a group's loss curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The group.
    pub group: usize,
    /// Global step (main phase, then fine-tuning).
    pub step: u64,
    /// Mean batch loss since the previous point.
    pub loss: f64,
}

/// What a finished run leaves in `runs/<name>.json`: its settings (checked on resume)
/// and its results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run's name.
    pub name: String,
    /// The strategy of its first request.
    pub strategy: Strategy,
    /// Freezing setting.
    pub freeze: Freeze,
    /// Set indices per group.
    pub groups: Vec<Vec<usize>>,
    /// Main steps per texture set (a group of `k` sets trained `k` times as many;
    /// stored as `steps_per_set`, so that records of the per-group budget of earlier
    /// versions are refused rather than mistaken for it).
    #[serde(rename = "steps_per_set")]
    pub steps: u64,
    /// Seed (group `g` trains with `seed + g`).
    pub seed: u64,
    /// The complete training settings, freezing applied.
    pub train: TrainConfig,
    /// The adapter that trained.
    pub adapter: String,
    /// Per material, in set order.
    pub materials: Vec<MaterialResult>,
    /// Per group, in group order.
    pub group_results: Vec<GroupResult>,
    /// Mean over materials of their pooled PSNR (dB).
    #[serde(with = "metric")]
    pub mean_psnr: Option<f64>,
    /// The PSNR convention of the numbers (`PSNR_CONVENTION`; empty in records written
    /// before it was recorded, which averaged the channel groups' PSNRs).
    #[serde(default)]
    pub psnr_convention: String,
    /// Mean latent bits per texel over materials.
    pub mean_bits_per_texel: f64,
    /// Wall-clock seconds of the whole `compress` call.
    pub seconds: f64,
    /// Loss curves of every group (finite points only).
    pub curves: Vec<CurvePoint>,
    /// What it was trained on: [`EvalInputs::digest`](super::EvalInputs::digest) of the
    /// decoded sets and their constants (empty in records written before it was
    /// recorded, which are therefore never reused).
    #[serde(default)]
    pub inputs: String,
}

impl RunRecord {
    /// The record of `spec` trained with `train` into `report` (whose materials come in
    /// group order, members in group order).
    /// `inputs` is the evaluation's [`EvalInputs::digest`](super::EvalInputs::digest).
    pub fn new(
        spec: &RunSpec,
        train: &TrainConfig,
        report: &CompressReport,
        inputs: &str,
    ) -> RunRecord {
        let order = spec
            .groups
            .iter()
            .enumerate()
            .flat_map(|(g, members)| members.iter().map(move |&s| (g, s)));
        let mut materials: Vec<MaterialResult> = order
            .zip(&report.materials)
            .map(|((group, set), m)| MaterialResult {
                set,
                name: m.name.clone(),
                group,
                psnr: m.psnr.pooled.map(|p| p.db),
                psnr_exact: m.psnr.pooled.is_some_and(|p| p.exact),
                bits_per_texel: m.bits_per_texel,
                flip: m.flip.as_ref().and_then(|f| f.mean),
            })
            .collect();
        materials.sort_by_key(|m| m.set);
        RunRecord {
            name: spec.name.clone(),
            strategy: spec.strategy,
            freeze: spec.freeze,
            groups: spec.groups.clone(),
            steps: report.steps,
            seed: report.seed,
            train: train.clone(),
            adapter: report.adapter.clone(),
            materials,
            group_results: report
                .groups
                .iter()
                .map(|g| GroupResult {
                    sets: g.sets.len(),
                    seconds: g.seconds.unwrap_or(0.0),
                    final_loss: Some(g.final_loss).filter(|l| l.is_finite()),
                    kernel_ms: g.kernel_ms,
                })
                .collect(),
            mean_psnr: report.mean_psnr,
            psnr_convention: PSNR_CONVENTION.into(),
            mean_bits_per_texel: report.mean_bits_per_texel,
            seconds: report.seconds,
            curves: report
                .curves
                .iter()
                .filter(|c| c.2.is_finite())
                .map(|&(group, step, loss, _)| CurvePoint { group, step, loss })
                .collect(),
            inputs: inputs.to_string(),
        }
    }

    /// Mean over groups of the final loss (`None` when no group has one).
    pub fn final_loss(&self) -> Option<f64> {
        let losses: Vec<f64> = self
            .group_results
            .iter()
            .filter_map(|g| g.final_loss)
            .collect();
        (!losses.is_empty()).then(|| losses.iter().sum::<f64>() / losses.len() as f64)
    }

    /// Optimiser steps per decoder (its group's main steps and fine-tuning), fewest and
    /// most over the groups.
    pub fn decoder_steps(&self) -> [u64; 2] {
        let steps = self.groups.iter().map(|g| {
            let main = group_main_steps(self.steps, g.len());
            main + finetune_steps(main, self.train.finetune_fraction)
        });
        [steps.clone().min().unwrap_or(0), steps.max().unwrap_or(0)]
    }

    /// Why this record cannot stand for `spec` trained for `steps` with `seed` and
    /// `train` on the inputs of digest `inputs`; `None` when it can.
    pub fn mismatch(
        &self,
        spec: &RunSpec,
        steps: u64,
        seed: u64,
        train: &TrainConfig,
        inputs: &str,
    ) -> Option<String> {
        if self.inputs != inputs {
            Some(
                "it was trained on other images (the decoded texture sets or their constants \
                 differ from this evaluation's)"
                    .into(),
            )
        } else if self.groups != spec.groups {
            Some(format!(
                "it groups the sets differently ({} groups, this evaluation: {})",
                self.groups.len(),
                spec.groups.len()
            ))
        } else if self.steps != steps {
            Some(format!(
                "it was trained for {} steps per set (this evaluation: {steps})",
                self.steps
            ))
        } else if self.seed != seed {
            Some(format!(
                "it was trained with seed {} (this evaluation: {seed})",
                self.seed
            ))
        } else if self.train != *train {
            Some("its training settings (preset, recipe, batch, freezing) differ".into())
        } else if self.psnr_convention != PSNR_CONVENTION {
            Some(
                "its PSNR follows an older convention (the mean of the channel groups' PSNRs, \
                 not the pooled PSNR)"
                    .into(),
            )
        } else if self.materials.len() != spec.groups.iter().map(Vec::len).sum::<usize>() {
            Some("its material list does not match its groups".into())
        } else {
            None
        }
    }

    /// Read a record; errors name the file.
    pub fn read(path: &Path) -> Result<RunRecord, EvalError> {
        let bytes = crate::io::read_file(path, |path, source| EvalError::Io { path, source })?;
        serde_json::from_slice(&bytes).map_err(|e| EvalError::RunFile {
            path: path.to_path_buf(),
            reason: format!("not a run record ({e})"),
        })
    }

    /// Write the record as pretty JSON (temporary file + rename).
    pub fn write(&self, path: &Path) -> Result<(), EvalError> {
        let json = serde_json::to_string_pretty(self).map_err(|e| EvalError::RunFile {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        super::write_text(path, &json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freeze_parses_prints_and_applies() {
        assert_eq!("none".parse(), Ok(Freeze::Off));
        assert_eq!(" Off ".parse(), Ok(Freeze::Off));
        assert_eq!("1".parse(), Ok(Freeze::Off));
        assert_eq!("0.25".parse(), Ok(Freeze::At(0.25)));
        assert_eq!("0".parse(), Ok(Freeze::At(0.0)));
        for bad in ["1.5", "-0.1", "half", "NaN", ""] {
            let e = bad.parse::<Freeze>().unwrap_err();
            assert!(e.contains("none") && e.contains(bad.trim()), "{e}");
        }
        assert_eq!(Freeze::Off.to_string(), "none");
        assert_eq!(Freeze::At(0.5).to_string(), "0.5");
        let train = TrainConfig::default();
        for f in [Freeze::Off, Freeze::At(0.0), Freeze::At(0.75)] {
            assert_eq!(Freeze::of(&f.apply(&train)), f);
            assert_eq!(f.to_string().parse(), Ok(f));
        }
        // Off means λ = 1 over the whole main phase.
        let off = Freeze::Off.apply(&train).freeze;
        assert!((0..1000).all(|s| off.lambda(s, 1000) == 1.0));
        assert_eq!(Freeze::At(0.5).apply(&train).freeze.lambda(900, 1000), 0.0);
        assert_eq!(
            serde_json::to_string(&Freeze::At(0.25)).unwrap(),
            "\"0.25\""
        );
        assert!(serde_json::from_str::<Freeze>("\"2\"").is_err());
    }

    #[test]
    fn run_names() {
        let d = Freeze::At(0.5);
        assert_eq!(run_name(Strategy::Baseline, 10, d, d), "baseline");
        assert_eq!(run_name(Strategy::Clustered, 10, d, d), "clustered-m10");
        assert_eq!(run_name(Strategy::Random, 4, d, d), "random-m4");
        assert_eq!(
            run_name(Strategy::DivergenceAware, 10, d, d),
            "divergence-aware-m10"
        );
        assert_eq!(
            run_name(Strategy::Clustered, 10, Freeze::Off, d),
            "clustered-m10-freeze-none"
        );
        assert_eq!(
            run_name(Strategy::Clustered, 2, Freeze::At(0.25), d),
            "clustered-m2-freeze-0.25"
        );
        assert_eq!(
            run_name(Strategy::Category, 3, Freeze::Off, d),
            "category-freeze-none"
        );
    }

    #[test]
    fn sweep_defaults() {
        assert_eq!(default_sweep(6, 2), vec![1, 2, 4, 6]);
        assert_eq!(default_sweep(63, 10), vec![1, 2, 4, 8, 10, 16, 32, 63]);
        assert_eq!(default_sweep(8, 3), vec![1, 2, 3, 4, 8]);
        assert_eq!(default_sweep(1, 1), vec![1]);
        assert_eq!(default_sweep(5, 9), vec![1, 2, 4, 5]);
    }

    #[test]
    fn requests_share_identical_trainings() {
        let mut list = RunList::new(false);
        let d = Freeze::At(0.5);
        let pairs = vec![vec![0, 1], vec![2, 3]];
        let singles = vec![vec![0], vec![1], vec![2], vec![3]];
        let a = list.request("clustered-m2".into(), Strategy::Clustered, pairs.clone(), d);
        let b = list.request("baseline".into(), Strategy::Baseline, singles.clone(), d);
        // Same groups and freezing: the same run, keeping the first name.
        assert_eq!(
            list.request("category".into(), Strategy::Category, pairs.clone(), d),
            a
        );
        // Other freezing on shared decoders: a new run.
        let c = list.request(
            "x-none".into(),
            Strategy::Clustered,
            pairs.clone(),
            Freeze::Off,
        );
        assert_ne!(c, a);
        // Freezing cannot change lone decoders.
        assert_eq!(
            list.request(
                "b2".into(),
                Strategy::Clustered,
                singles.clone(),
                Freeze::Off
            ),
            b
        );
        assert_eq!(list.runs.len(), 3);
        assert_eq!(list.runs[a].name, "clustered-m2");
        assert_eq!(list.runs[a].decoders(), 2);
        // Unless lone decoders freeze too.
        let mut single = RunList::new(true);
        let b = single.request("b".into(), Strategy::Baseline, singles.clone(), d);
        assert_ne!(
            single.request("b2".into(), Strategy::Baseline, singles, Freeze::Off),
            b
        );
    }

    fn record() -> RunRecord {
        RunRecord {
            name: "clustered-m2".into(),
            strategy: Strategy::Clustered,
            freeze: Freeze::At(0.5),
            groups: vec![vec![0, 2], vec![1]],
            steps: 100,
            seed: 1,
            train: TrainConfig::default(),
            adapter: "test".into(),
            materials: (0..3)
                .map(|set| MaterialResult {
                    set,
                    name: format!("s{set}"),
                    group: usize::from(set == 1),
                    psnr: Some(if set == 2 { 99.0 } else { 30.0 }),
                    psnr_exact: set == 2,
                    bits_per_texel: 2.0,
                    flip: None,
                })
                .collect(),
            group_results: vec![
                GroupResult {
                    sets: 2,
                    seconds: 1.5,
                    final_loss: Some(0.002),
                    kernel_ms: Some(StepKernelMs {
                        gradients: 0.49,
                        adam: 0.65,
                    }),
                },
                GroupResult {
                    sets: 1,
                    seconds: 0.0,
                    final_loss: Some(f64::INFINITY),
                    kernel_ms: None,
                },
            ],
            mean_psnr: Some(53.0),
            psnr_convention: PSNR_CONVENTION.into(),
            mean_bits_per_texel: 2.0,
            seconds: 1.7,
            curves: vec![CurvePoint {
                group: 0,
                step: 10,
                loss: 0.01,
            }],
            inputs: "digest".into(),
        }
    }

    #[test]
    fn records_round_trip_and_check_their_settings() {
        let dir = crate::io::test_dir("eval-runs");
        let path = dir.join("r.json");
        let r = record();
        r.write(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("\"inf\""),
            "an infinite loss survives as text"
        );
        assert!(text.contains("\"psnr_exact\": true"), "{text}");
        assert_eq!(RunRecord::read(&path).unwrap(), r);
        assert_eq!(r.final_loss(), Some(f64::INFINITY));

        let spec = RunSpec {
            name: r.name.clone(),
            strategy: r.strategy,
            freeze: r.freeze,
            groups: r.groups.clone(),
        };
        let train = TrainConfig::default();
        assert_eq!(r.mismatch(&spec, 100, 1, &train, "digest"), None);
        assert!(
            r.mismatch(&spec, 100, 1, &train, "changed")
                .unwrap()
                .contains("other images")
        );
        assert!(
            r.mismatch(&spec, 200, 1, &train, "digest")
                .unwrap()
                .contains("100 steps")
        );
        assert!(
            r.mismatch(&spec, 100, 2, &train, "digest")
                .unwrap()
                .contains("seed 1")
        );
        let other = Freeze::Off.apply(&train);
        assert!(
            r.mismatch(&spec, 100, 1, &other, "digest")
                .unwrap()
                .contains("settings")
        );
        let regrouped = RunSpec {
            groups: vec![vec![0], vec![1, 2]],
            ..spec.clone()
        };
        assert!(
            r.mismatch(&regrouped, 100, 1, &train, "digest")
                .unwrap()
                .contains("groups")
        );
        // A record of the older convention (no `psnr_convention`) is not reused.
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        json.as_object_mut().unwrap().remove("psnr_convention");
        std::fs::write(&path, json.to_string()).unwrap();
        let old = RunRecord::read(&path).unwrap();
        assert!(
            old.mismatch(&spec, 100, 1, &train, "digest")
                .unwrap()
                .contains("older convention")
        );
        // A record written before kernel profiling reads with no kernel times.
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let group = json["group_results"][0].as_object_mut().unwrap();
        assert!(group.remove("kernel_ms").is_some(), "{text}");
        std::fs::write(&path, json.to_string()).unwrap();
        let old = RunRecord::read(&path).unwrap();
        assert_eq!(old.group_results[0].kernel_ms, None);
        assert_eq!(old.group_results[1], r.group_results[1]);

        std::fs::write(&path, "{ \"name\": ").unwrap();
        let e = RunRecord::read(&path).unwrap_err().to_string();
        assert!(
            e.contains("r.json") && e.contains("not a run record"),
            "{e}"
        );
    }
}
