//! Shards of an evaluation (`eval --shard I/N`) and their merge (`eval --merge`).
//!
//! The unit is a run (one strategy / m / freezing training of every group): the runs are
//! split with [`split_by_weight`] over their cost, texels × steps summed over their
//! groups (every mip of every member times main and fine-tuning steps), so every process
//! of a job array computes the same split. A shard evaluates its runs into its own folder
//! exactly as an unsharded `eval` would (`runs/<name>.json`, `plans/`; `--resume` reuses
//! finished runs whose records match) and then writes the part manifest
//! [`PART_FILE`] ([`EvalPart`]): the evaluation's identity ([`eval_identity`]), `I/N`,
//! the whole split, each of its runs with the BLAKE3 of its record, and a checksum of
//! all of it. The manifest is written last, by rename, so a folder with one holds a
//! finished shard.
//!
//! [`merge_parts`] reads every shard's manifest and records and checks them — each
//! manifest's checksum, one identity (the merging command's own inputs and settings),
//! one shard count and split, no shard twice, none missing, every record's checksum and
//! settings — before it writes anything; then it writes exactly what an unsharded `eval`
//! writes (records, plans, tables, charts, summary, report) into its out folder. An
//! interrupted merge is run again (with `--resume`, as its folder is no longer empty).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use super::{
    EvalError, EvalEvent, EvalInputs, EvalOptions, EvalPlan, EvalReport, RunRecord, build_report,
    prepare_outputs, train_runs, write_outputs,
};
use crate::gpu::GpuContext;
use crate::ntc::compress::{PartialManifest, group_main_steps};
use crate::ntc::shard::{
    MAX_SHARDS, Shard, capped_list, group_texels, plan_identity, split_by_weight,
};
use crate::ntc::train::schedule::finetune_steps;

/// The part manifest in a shard's folder.
pub const PART_FILE: &str = "eval-part.json";

/// `format` of an [`EvalPart`].
const PART_FORMAT: &str = "neurotex-eval-part";

/// One run of a shard, as its part manifest lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartRun {
    /// Index into the evaluation's runs.
    pub run: usize,
    /// Its name (`runs/<name>.json`).
    pub name: String,
    /// The shard loaded it from an earlier invocation (`--resume`) rather than training it.
    pub loaded: bool,
    /// BLAKE3 (hex) of the record file.
    pub blake3: String,
}

/// What a shard's folder says about itself ([`PART_FILE`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalPart {
    /// Always `neurotex-eval-part`.
    pub format: String,
    /// Layout version (1).
    pub version: u32,
    /// The evaluation's identity ([`eval_identity`]).
    pub plan: String,
    /// This shard.
    pub shard: Shard,
    /// The runs of every shard (indices into the evaluation's runs).
    pub split: Vec<Vec<usize>>,
    /// This shard's runs, in split order.
    pub runs: Vec<PartRun>,
    /// BLAKE3 (hex) of the manifest with this field empty.
    pub checksum: String,
}

impl EvalPart {
    /// The checksum of every other field.
    fn expected_checksum(&self) -> String {
        let bytes = serde_json::to_vec(&EvalPart {
            checksum: String::new(),
            ..self.clone()
        })
        .unwrap_or_default();
        blake3::hash(&bytes).to_hex().to_string()
    }

    /// Set the checksum to that of every other field.
    pub fn seal(&mut self) {
        self.checksum = self.expected_checksum();
    }

    /// The manifest as the shard writes it (pretty JSON).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// Parse and check a part manifest, in this order: its JSON (unknown keys are
    /// errors), format and version, its checksum, then its shard against its split
    /// (`0 ≤ index < count ≤` [`MAX_SHARDS`], one list of runs per shard, this shard's
    /// runs listed in its order) — every count bounded before anything is sized from it.
    /// The error says what is wrong.
    pub fn from_slice(bytes: &[u8]) -> Result<EvalPart, String> {
        let part: EvalPart = serde_json::from_slice(bytes)
            .map_err(|e| format!("not an evaluation part manifest ({e})"))?;
        if part.format != PART_FORMAT || part.version != 1 {
            return Err(format!(
                "format `{}` version {}, expected `{PART_FORMAT}` version 1",
                part.format, part.version
            ));
        }
        if part.checksum != part.expected_checksum() {
            return Err("the checksum does not match: the manifest is damaged".into());
        }
        let Shard { index, count } = part.shard;
        if !(1..=MAX_SHARDS).contains(&count) || index >= count {
            return Err(format!(
                "shard {index}/{count} is out of range (at most {MAX_SHARDS} shards)"
            ));
        }
        if part.split.len() != count as usize {
            return Err(format!(
                "a split into {} shards for shard {index}/{count}",
                part.split.len()
            ));
        }
        let listed: Vec<usize> = part.runs.iter().map(|r| r.run).collect();
        if listed != part.split[index as usize] {
            return Err(format!(
                "lists runs {}, but its split gives shard {index}/{count} runs {}",
                run_list(&listed),
                run_list(&part.split[index as usize])
            ));
        }
        Ok(part)
    }
}

/// Run indices for a message, at most [`LIST_CAP`](crate::ntc::shard::LIST_CAP).
fn run_list(runs: &[usize]) -> String {
    format!(
        "[{}]",
        capped_list(runs.iter().map(usize::to_string), ", ", "runs")
    )
}

/// The cost of each run of `plan` over `inputs`' sets: texels × (main + fine-tuning)
/// steps, summed over its groups.
pub fn run_weights(plan: &EvalPlan, inputs: &EvalInputs) -> Vec<u64> {
    plan.runs
        .iter()
        .map(|spec| {
            let texels = group_texels(&spec.groups, inputs.sets);
            spec.groups
                .iter()
                .zip(texels)
                .map(|(g, t)| {
                    let main = group_main_steps(plan.steps_per_set, g.len());
                    let steps = main.saturating_add(finetune_steps(main, plan.finetune_fraction));
                    t.saturating_mul(steps)
                })
                .fold(0u64, u64::saturating_add)
        })
        .collect()
}

/// The identity of an evaluation: BLAKE3 (hex) of the decoded sets and their constants
/// (through the compression manifest's [`plan_identity`]), the categories, every run
/// (name, strategy, freezing, groups), which run answers which table cell, the
/// settings (recipe, steps, seed, kernels, loss-curve interval, embedder) and, with a
/// co-occurrence record, what the record is of (views, tile, size, covered tiles), the
/// divergence weight and every run's predicted divergence — so shards and a merge that
/// scored the runs on different records do not merge. Input and record paths are left
/// out: they differ between the machines of a cluster.
pub fn eval_identity(
    inputs: &EvalInputs,
    plan: &EvalPlan,
    opts: &EvalOptions,
) -> Result<String, EvalError> {
    // Resuming does not enter the manifest.
    let compress = opts.compress_options(opts.train.clone());
    let manifest =
        PartialManifest::of_run(inputs.sets, inputs.constants, &[], &compress).map_err(|e| {
            EvalError::Inputs {
                reason: e.to_string(),
            }
        })?;
    let sweep: Vec<(usize, String, usize)> = plan
        .sweep
        .iter()
        .map(|p| (p.m, p.strategy.to_string(), p.run))
        .collect();
    let identity = (
        "neurotex-eval-plan",
        1,
        plan_identity(&manifest),
        inputs.categories,
        &plan.runs,
        &plan.table2,
        &plan.freezing,
        sweep,
        plan.baseline,
        (&plan.embedder, &opts.recipe, opts.kernel, opts.log_every),
    );
    // Without a record the identity is the tuple alone.
    let bytes = match &plan.divergence {
        None => serde_json::to_vec(&identity),
        Some(d) => {
            let v = &d.views;
            let record = (v.views, v.tile, v.size, v.covered_tiles, v.weight, &d.runs);
            serde_json::to_vec(&(identity, record))
        }
    }
    .map_err(|e| EvalError::Inputs {
        reason: format!("the evaluation's identity: {e}"),
    })?;
    Ok(blake3::hash(&bytes).to_hex().to_string())
}

/// Evaluate shard `shard` of `plan` into `out` (see the module docs) and write its part
/// manifest there; `devices`, `cancel` and `progress` as for [`super::evaluate`].
#[expect(
    clippy::too_many_arguments,
    reason = "the evaluation's inputs, plan and options, the shard, its output folder, cancel \
              flag and progress"
)]
pub fn evaluate_shard(
    devices: &[GpuContext],
    inputs: &EvalInputs,
    plan: &EvalPlan,
    opts: &EvalOptions,
    shard: Shard,
    out: &Path,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(&EvalEvent),
) -> Result<EvalPart, EvalError> {
    let identity = eval_identity(inputs, plan, opts)?;
    let split = split_by_weight(&run_weights(plan, inputs), shard.count);
    let selection = split.get(shard.index as usize).cloned().unwrap_or_default();
    let records = train_runs(
        devices, inputs, plan, opts, &selection, out, cancel, progress,
    )?;
    let runs = selection
        .iter()
        .zip(&records)
        .map(|(&run, (record, loaded))| {
            let path = record_path(out, &record.name);
            let bytes = crate::io::read_file(&path, |path, source| EvalError::Io { path, source })?;
            Ok(PartRun {
                run,
                name: record.name.clone(),
                loaded: *loaded,
                blake3: blake3::hash(&bytes).to_hex().to_string(),
            })
        })
        .collect::<Result<Vec<_>, EvalError>>()?;
    let mut part = EvalPart {
        format: PART_FORMAT.into(),
        version: 1,
        plan: identity,
        shard,
        split,
        runs,
        checksum: String::new(),
    };
    part.seal();
    let path = out.join(PART_FILE);
    crate::io::write_atomic(&path, &part.to_bytes())
        .map_err(|source| EvalError::Io { path, source })?;
    Ok(part)
}

/// `runs/<name>.json` of the folder `dir`.
fn record_path(dir: &Path, name: &str) -> PathBuf {
    dir.join("runs").join(format!("{name}.json"))
}

/// Read and check the part manifest of the shard folder `dir` against `identity`.
fn read_part(dir: &Path, identity: &str) -> Result<EvalPart, EvalError> {
    let path = dir.join(PART_FILE);
    let bad = |reason: String| EvalError::Part {
        path: path.clone(),
        reason,
    };
    let bytes = std::fs::read(&path).map_err(|e| EvalError::Part {
        path: dir.to_path_buf(),
        reason: format!(
            "not the folder of a finished `eval --shard` ({PART_FILE}: {e}); run or resume \
             that shard first"
        ),
    })?;
    let part = EvalPart::from_slice(&bytes).map_err(bad)?;
    if part.plan != identity {
        return Err(bad(
            "a shard of another evaluation (other inputs or settings than this command's)".into(),
        ));
    }
    Ok(part)
}

/// Merge the shard folders `parts` of the evaluation `plan` (planned by this command from
/// the same inputs and options as the shards) into `out`, writing exactly what an
/// unsharded evaluation writes. Every check comes before the first write.
pub fn merge_parts(
    inputs: &EvalInputs,
    plan: &EvalPlan,
    opts: &EvalOptions,
    parts: &[PathBuf],
    out: &Path,
) -> Result<EvalReport, EvalError> {
    inputs.check()?;
    let identity = eval_identity(inputs, plan, opts)?;
    let mut read = Vec::with_capacity(parts.len());
    for dir in parts {
        read.push((dir, read_part(dir, &identity)?));
    }
    let Some((first_dir, first)) = read.first() else {
        return Err(EvalError::MissingShards {
            missing: "every shard".into(),
            count: 0,
        });
    };
    let count = first.shard.count;
    let split = split_by_weight(&run_weights(plan, inputs), count);
    let mut by_shard: Vec<Option<&Path>> = vec![None; count as usize];
    for (dir, part) in &read {
        let bad = |reason: String| EvalError::Part {
            path: dir.to_path_buf(),
            reason,
        };
        if part.shard.count != count {
            return Err(bad(format!(
                "shard {}/{} of an evaluation split into {} shards, but {} is of {count}",
                part.shard.index,
                part.shard.count,
                part.shard.count,
                first_dir.display()
            )));
        }
        if part.split != split {
            return Err(bad(
                "another split of the runs than this evaluation's".into()
            ));
        }
        let index = part.shard.index as usize;
        match by_shard.get_mut(index) {
            None => return Err(bad(format!("shard index {index} of {count}"))),
            Some(Some(earlier)) => {
                return Err(bad(format!(
                    "shard {index}/{count} given twice: {} and {}",
                    earlier.display(),
                    dir.display()
                )));
            }
            Some(slot) => *slot = Some(dir),
        }
    }
    let missing: Vec<usize> = (0..by_shard.len())
        .filter(|&i| by_shard[i].is_none())
        .collect();
    if !missing.is_empty() {
        let missing = capped_list(
            missing.iter().map(|&i| {
                let names = capped_list(
                    split[i].iter().map(|&r| plan.runs[r].name.clone()),
                    ", ",
                    "runs",
                );
                format!("shard {i}/{count} (runs {names})")
            }),
            " and ",
            "shards",
        );
        return Err(EvalError::MissingShards { missing, count });
    }
    // Every record: its checksum, then its settings and inputs.
    let digest = inputs.digest();
    let mut records: Vec<Option<(RunRecord, bool, Vec<u8>)>> = vec![None; plan.runs.len()];
    for (dir, part) in &read {
        for r in &part.runs {
            let path = record_path(dir, &r.name);
            let bytes = crate::io::read_file(&path, |path, source| EvalError::Io { path, source })?;
            if blake3::hash(&bytes).to_hex().as_str() != r.blake3 {
                return Err(EvalError::Part {
                    path,
                    reason: "changed since its shard wrote it (the checksum does not match)".into(),
                });
            }
            let record = RunRecord::read(&path)?;
            let spec = &plan.runs[r.run];
            let train = spec.freeze.apply(&opts.train);
            if let Some(reason) = record.mismatch(spec, opts.steps, opts.seed, &train, &digest) {
                return Err(EvalError::RunFile { path, reason });
            }
            records[r.run] = Some((record, r.loaded, bytes));
        }
    }
    let records: Vec<(RunRecord, bool, Vec<u8>)> = records
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.ok_or_else(|| EvalError::MissingShards {
                missing: format!("run {}", plan.runs[i].name),
                count,
            })
        })
        .collect::<Result<_, _>>()?;

    prepare_outputs(inputs, plan, opts, out)?;
    for (record, _, bytes) in &records {
        let path = record_path(out, &record.name);
        crate::io::write_atomic(&path, bytes).map_err(|source| EvalError::Io { path, source })?;
    }
    let records: Vec<(RunRecord, bool)> = records.into_iter().map(|(r, l, _)| (r, l)).collect();
    let mut adapters: Vec<&str> = records.iter().map(|r| r.0.adapter.as_str()).collect();
    adapters.dedup();
    let report = build_report(&adapters.join("; "), inputs, plan, opts, &records);
    write_outputs(out, &report)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_checksums_cover_every_field() {
        let mut part = EvalPart {
            format: PART_FORMAT.into(),
            version: 1,
            plan: "p".into(),
            shard: Shard { index: 1, count: 2 },
            split: vec![vec![0, 2], vec![1]],
            runs: vec![PartRun {
                run: 1,
                name: "single".into(),
                loaded: false,
                blake3: "h".into(),
            }],
            checksum: String::new(),
        };
        part.checksum = part.expected_checksum();
        let sum = part.checksum.clone();
        assert_eq!(part.expected_checksum(), sum);
        part.runs[0].blake3 = "i".into();
        assert_ne!(part.expected_checksum(), sum);
        part.runs[0].blake3 = "h".into();
        part.shard.index = 0;
        assert_ne!(part.expected_checksum(), sum);
    }
}
