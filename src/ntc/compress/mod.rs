//! Compression of many texture sets into one package: group by group on the GPU, with
//! progress, interruption and resume, a quality report per material next to BCn
//! baselines, and the loss curves. [`compress_selected`] trains some of the groups only,
//! exactly as a run of all of them would (what a shard of [`super::shard`] does). Both
//! take one or more devices: the groups are handed out to them by [`super::parallel`]
//! and the package is assembled in plan order, whichever device trained a group.
//!
//! Budgets: [`CompressOptions::steps`] is per texture set, so a group of `k` sets trains
//! `k` times as many main steps ([`group_main_steps`]) and every material sees as many
//! samples as under one decoder per set, whatever the grouping.
//!
//! Rate control ([`RateControl`]): at a fixed preset, or the smallest preset (fewest
//! latent bits, [`Preset::ALL`](crate::ntc::model::Preset::ALL) order) at which every set of a group reaches a pooled
//! PSNR target — a fixed one, or its BCn baseline's. Target and result are the one PSNR
//! of [`crate::texture::metrics`]: mip 0, pooled over every present channel, exact
//! matches capped at 99 dB (so an exact BCn baseline asks for an exact NTC result). Under the default one decoder per
//! set that is a preset per set; a shared group takes one preset for all its sets. Short
//! probes (`1/`[`PROBE_DIVISOR`] of the steps, and half that at the smallest preset to
//! measure the gain per doubling of the budget) predict the smallest preset that reaches
//! the target; that preset is trained fully, and the next larger ones only while the
//! full training misses. The report lists every try, probes included. A set that misses
//! its target even at the largest preset is a warning ([`CompressReport::warnings`])
//! naming the set, its best PSNR and the target.
//!
//! Loss weights ([`LossWeighting`]): the recipe's, or per group balanced against the
//! BC1/BC5 baseline's per-group error of its sets ([`LossWeights::balanced`]).
//!
//! ꟻLIP ([`CompressOptions::flip`]): each material's mip 0, decoded from the package on
//! the CPU, and each BCn baseline's are measured with [`crate::texture::flip`] too.
//!
//! Interruption: finished groups are kept in `<out>.partial/group<N>.ntc`, each with a
//! seal `group<N>.seal` (a BLAKE3 of the package keyed by the run's manifest and the
//! group), and an interrupted group's optimiser state in `<out>.partial/group<N>.ckpt`;
//! `resume` continues from there; a finished group that is damaged or whose seal does not
//! match (another run's, edited), or a checkpoint that is damaged, is an error naming it
//! and saying what to delete. The package is written (temp file + rename) only
//! when every group is done, then the partial folder is removed.
//!
//! The partial folder carries a marker, `neurotex-partial.json` ([`PartialManifest`]):
//! the identity of every input file (path, size, modification time, BLAKE3 hash), a hash
//! of every decoded set and of the settings (recipe, step budgets, seed, groups,
//! constants, rate control). A folder is only resumed, or deleted to start afresh, when
//! its manifest matches the run exactly; a folder without the marker (not made by neurotex) or with another run's
//! manifest is an error naming it and what differs, and is never touched.
//!
//! Here: the job, its options and the driver over the groups. Beside it: `group` (one
//! group's training, resumed or sealed), `rate` (rate control's presets, probes and
//! tries), `partial` (the partial folder and its manifest) and `report` (the report and
//! its files).

mod group;
mod partial;
mod rate;
mod report;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use self::group::GroupRun;
use self::partial::prepare_partial;
pub use self::partial::{
    FileIdentity, PARTIAL_MANIFEST, PartialManifest, partial_dir, remove_partial_if_ours,
    set_digest,
};
pub use self::rate::{BcnTarget, PROBE_DIVISOR, RateControl, RateTry};
use self::report::ntc_flip;
pub use self::report::{CompressReport, GroupReport, MaterialReport, preset_name};
use super::format::NtcPackage;
use super::parallel::{GroupProgress, run_on_devices};
use super::train::checkpoint::CheckpointError;
use super::train::gpu::{GpuTrainError, LatentAdam, TrainKernel};
use super::train::{
    LossWeighting, LossWeights, QUALITY_GROUPS, TrainConfig, training_flops_per_sample,
};
use super::{NtcFormatError, TrainError};
use crate::charts::PlotError;
use crate::gpu::GpuContext;
use crate::texture::bcn::{BcnResult, bcn_baselines_all};
use crate::texture::{CHANNELS, TextureSet};

/// Errors of a compression run.
#[derive(Debug, thiserror::Error)]
pub enum CompressError {
    /// Training failed (or was cancelled: the checkpoint is saved and named).
    #[error(transparent)]
    Train(#[from] GpuTrainError),
    /// A group's training failed: the group and its sets named.
    #[error("group {group} ({sets}): {source}")]
    Group {
        /// The group's index.
        group: usize,
        /// Its sets' names.
        sets: String,
        /// What failed.
        source: GpuTrainError,
    },
    /// A checkpoint could not be read, written or resumed.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The training settings are invalid.
    #[error(transparent)]
    Settings(#[from] TrainError),
    /// The package could not be built or written.
    #[error(transparent)]
    Format(#[from] NtcFormatError),
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An input file could not be read for the partial folder's manifest.
    #[error("cannot read input {path}: {source}")]
    Input {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The groups do not cover the sets exactly once.
    #[error("invalid grouping: {0}")]
    Groups(String),
    /// A finished group of an interrupted run cannot be read back.
    #[error(
        "cannot resume from {}: {source}; delete it (or the whole folder {}) to train this \
         group again",
        path.display(),
        path.parent().unwrap_or(path).display()
    )]
    Partial {
        /// The group's package in the partial folder.
        path: PathBuf,
        /// What is wrong with it.
        source: NtcFormatError,
    },
    /// A finished group in the partial folder that this run did not write.
    #[error(
        "cannot resume from {}: {reason}; delete it to train this group again",
        path.display()
    )]
    ForeignGroup {
        /// The group's package in the partial folder.
        path: PathBuf,
        /// Why it does not belong to the run.
        reason: String,
    },
    /// A finished rung of an interrupted `--rd` ladder cannot be kept.
    #[error(
        "cannot keep the finished rung {}: {reason}; delete it to train the rung again",
        path.display()
    )]
    KeptRung {
        /// The rung's points file.
        path: PathBuf,
        /// Why it cannot be kept.
        reason: String,
    },
    /// A partial folder whose marker cannot be read as one.
    #[error(
        "{} is damaged ({reason}); delete {partial} to start afresh",
        partial.join(PARTIAL_MANIFEST).display()
    )]
    PartialDamaged {
        /// The folder.
        partial: PathBuf,
        /// What is wrong with the marker.
        reason: String,
    },
    /// A partial folder without neurotex's marker: it is left alone.
    #[error(
        "{partial} exists but was not made by neurotex compress (no {PARTIAL_MANIFEST}); move it away or choose another --out"
    )]
    PartialNotOurs {
        /// The folder.
        partial: PathBuf,
    },
    /// A partial folder of a run with other inputs or settings: it is left alone.
    #[error(
        "{partial} holds the progress of another run ({difference}); delete it to start afresh, or run with the inputs and settings it was made from"
    )]
    PartialMismatch {
        /// The folder.
        partial: PathBuf,
        /// What differs.
        difference: String,
    },
    /// The loss-curve chart could not be drawn or written.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// Interrupted: progress is saved for `--resume`.
    #[error(
        "interrupted; progress saved in {partial} — run the same command with --resume to continue"
    )]
    Interrupted {
        /// The partial folder.
        partial: PathBuf,
    },
}

/// How to compress.
#[derive(Clone, Debug)]
pub struct CompressOptions {
    /// Model and training recipe.
    pub train: TrainConfig,
    /// Main training steps per texture set: a group of `k` sets trains
    /// [`group_main_steps`]`(steps, k)` (fine-tuning adds its fraction on top).
    pub steps: u64,
    /// Seed of initialisation, batches and noise (group `g` uses `seed + g`).
    pub seed: u64,
    /// Continue from `<out>.partial/`.
    pub resume: bool,
    /// Skip the BCn baselines in the report (not allowed with [`RateControl::MatchBcn`],
    /// which needs them).
    pub skip_bcn: bool,
    /// Progress (and loss-curve) interval in steps.
    pub log_every: u64,
    /// How each group's preset is chosen.
    pub rate: RateControl,
    /// The training kernels; `None` for [`TrainKernel::best`].
    pub kernel: Option<TrainKernel>,
    /// How Adam steps the latents (the same results either way).
    pub latent_adam: LatentAdam,
    /// The files the sets were read from (scenes, manifests, images), recorded in the
    /// partial folder's manifest so that `resume` never continues stale work.
    pub input_files: Vec<PathBuf>,
    /// The recipe's loss weights, or balanced per group against BC1/BC5.
    pub loss_weights: LossWeighting,
    /// Measure ꟻLIP of NTC and (unless skipped) the BCn baselines in the report.
    pub flip: bool,
    /// No group starts training at or after this instant (`--stop-after`): groups in
    /// training finish, and the run then ends [`CompressError::Interrupted`], its finished
    /// groups kept for `resume`. Finished groups are still loaded.
    pub start_by: Option<std::time::Instant>,
}

/// Main training steps of a group of `sets` texture sets for a budget of `steps_per_set`:
/// `steps_per_set · sets` (saturating), so that every material gets the samples it would
/// get with a decoder of its own.
pub fn group_main_steps(steps_per_set: u64, sets: usize) -> u64 {
    steps_per_set.saturating_mul(sets as u64)
}

/// Check that `groups` covers `0..n` exactly once.
pub fn check_groups(groups: &[Vec<usize>], n: usize) -> Result<(), CompressError> {
    let mut seen = vec![false; n];
    for g in groups {
        if g.is_empty() {
            return Err(CompressError::Groups("an empty group".into()));
        }
        for &s in g {
            match seen.get_mut(s) {
                Some(x) if !*x => *x = true,
                Some(_) => return Err(CompressError::Groups(format!("set {s} is in two groups"))),
                None => {
                    return Err(CompressError::Groups(format!(
                        "set {s} does not exist ({n} sets)"
                    )));
                }
            }
        }
    }
    match seen.iter().position(|s| !s) {
        Some(s) => Err(CompressError::Groups(format!("set {s} is in no group"))),
        None => Ok(()),
    }
}

/// [`write_atomic`](crate::io::write_atomic) with an error that names `path`.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CompressError> {
    crate::io::write_atomic(path, bytes).map_err(|source| CompressError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// `value` as pretty JSON for the file `path` (named in the error).
pub(crate) fn pretty_json(
    value: &impl serde::Serialize,
    path: &Path,
) -> Result<String, CompressError> {
    serde_json::to_string_pretty(value).map_err(|e| CompressError::Io {
        path: path.to_path_buf(),
        source: e.into(),
    })
}

/// Append `other`'s decoders and materials to `package`.
pub(crate) fn append(package: &mut NtcPackage, other: NtcPackage) {
    let offset = package.decoders.len() as u32;
    package.decoders.extend(other.decoders);
    package
        .materials
        .extend(other.materials.into_iter().map(|mut m| {
            m.decoder += offset;
            m
        }));
}

/// One compression: what it trains, how, on which devices, and where it writes.
#[derive(Clone, Copy, Debug)]
pub struct CompressJob<'a> {
    /// The devices to train on (one or more; see [`super::parallel`]).
    pub devices: &'a [GpuContext],
    /// The texture sets.
    pub sets: &'a [TextureSet],
    /// Per set, the constants of its materials (the channels without a texture).
    pub constants: &'a [[f32; CHANNELS]],
    /// The groups: indices into `sets`, one decoder each.
    pub groups: &'a [Vec<usize>],
    /// How to compress.
    pub opts: &'a CompressOptions,
    /// How the report names the inputs.
    pub inputs: &'a str,
    /// The package to write (its progress goes to `<out>.partial/`).
    pub out: &'a Path,
    /// Set to stop at the next group or checkpoint ([`CompressError::Interrupted`]).
    pub cancel: &'a AtomicBool,
}

/// Compress `job`'s sets in its groups, writing the package to `job.out`. `progress`
/// hears every group's training progress, naming its device.
pub fn compress(
    job: &CompressJob<'_>,
    progress: &mut dyn FnMut(&GroupProgress),
) -> Result<(NtcPackage, CompressReport), CompressError> {
    let all: Vec<usize> = (0..job.groups.len()).collect();
    compress_selected(job, &all, progress, &mut |package| {
        Ok(package.write(job.out)?)
    })
}

/// [`compress`] of the groups `selection` only (strictly ascending indices into
/// `job.groups`), as a shard does: group `g` is trained exactly as in a run of every
/// group (seed `seed + g`, progress in `<out>.partial/group<g>.*`), on whichever of the
/// devices is free (largest groups first when there are several); the result holds the
/// selected groups' decoders in `selection` order, and `finish` writes it to `out`
/// before the partial folder is removed.
pub fn compress_selected(
    job: &CompressJob<'_>,
    selection: &[usize],
    progress: &mut dyn FnMut(&GroupProgress),
    finish: &mut dyn FnMut(&NtcPackage) -> Result<(), CompressError>,
) -> Result<(NtcPackage, CompressReport), CompressError> {
    let CompressJob {
        devices,
        sets,
        constants,
        groups,
        opts,
        inputs,
        out,
        cancel,
    } = *job;
    opts.train.validate()?;
    check_groups(groups, sets.len())?;
    if devices.is_empty() {
        return Err(CompressError::Groups("no device to train on".into()));
    }
    if let RateControl::TargetPsnr(db) = opts.rate
        && !db.is_finite()
    {
        return Err(TrainError::Setting {
            name: "target_psnr",
            reason: format!("must be a finite number of dB, got {db}"),
        }
        .into());
    }
    if matches!(opts.rate, RateControl::MatchBcn(_)) && opts.skip_bcn {
        return Err(TrainError::Setting {
            name: "match_bcn",
            reason: "needs the BCn baselines, which skip_bcn turns off".into(),
        }
        .into());
    }
    if selection.windows(2).any(|w| w[0] >= w[1])
        || selection.last().is_some_and(|&g| g >= groups.len())
    {
        return Err(CompressError::Groups(format!(
            "the selected groups {selection:?} are not ascending indices below {}",
            groups.len()
        )));
    }
    let start = Instant::now();
    let partial = partial_dir(out);
    let manifest = PartialManifest::of_run(sets, constants, groups, opts)?;
    let resuming = prepare_partial(&partial, &manifest, opts.resume)?;
    let owner = *blake3::hash(
        &serde_json::to_vec(&manifest)
            .map_err(|e| CompressError::Groups(format!("manifest: {e}")))?,
    )
    .as_bytes();
    // BCn baselines: before training when rate control matches them or the loss weights
    // are balanced against them, else for the report.
    let flip_bcn = opts.flip && !opts.skip_bcn;
    let mut bcn: Vec<Option<Vec<BcnResult>>> = vec![None; sets.len()];
    if matches!(opts.rate, RateControl::MatchBcn(_)) || opts.loss_weights == LossWeighting::Balanced
    {
        let all: Vec<&TextureSet> = sets.iter().collect();
        bcn = bcn_baselines_all(&all, flip_bcn)
            .into_iter()
            .map(Some)
            .collect();
    }
    let targets: Vec<Option<f64>> = match opts.rate {
        RateControl::Fixed => vec![None; sets.len()],
        RateControl::TargetPsnr(db) => vec![Some(db); sets.len()],
        RateControl::MatchBcn(target) => bcn
            .iter()
            .map(|results| {
                results
                    .as_ref()
                    .and_then(|r| r.get(target.index()))
                    .and_then(|r| r.psnr_mip0.pooled)
                    .map(|p| p.db)
            })
            .collect(),
    };
    let weights: Vec<LossWeights> = groups
        .iter()
        .map(|members| match opts.loss_weights {
            LossWeighting::Fixed => opts.train.loss_weights,
            LossWeighting::Balanced => opts
                .train
                .loss_weights
                .balanced(&bc1_group_errors(members, sets, &bcn)),
        })
        .collect();
    let run = GroupRun {
        sets,
        constants,
        groups,
        opts,
        partial: &partial,
        resuming,
        owner,
        targets: &targets,
        weights: &weights,
        flops: training_flops_per_sample(&opts.train.model),
    };
    let all_texels = super::shard::group_texels(groups, sets);
    let weights: Vec<u64> = selection.iter().map(|&g| all_texels[g]).collect();
    let results = run_on_devices(
        devices,
        &weights,
        cancel,
        &|device, ctx, item, stop, report| {
            let g = selection[item];
            run.group(device, ctx, g, stop, &mut |p| {
                report(GroupProgress {
                    device,
                    group: g,
                    groups: groups.len(),
                    train: *p,
                })
            })
        },
        progress,
    );
    // A failure outranks an interruption; a group no worker started was interrupted.
    let mut finished = Vec::with_capacity(results.len());
    let mut interrupted = false;
    let mut failure = None;
    for result in results {
        match result {
            Some(Ok(done)) => finished.push(done),
            Some(Err(CompressError::Interrupted { .. })) | None => interrupted = true,
            Some(Err(e)) => {
                failure.get_or_insert(e);
            }
        }
    }
    if let Some(e) = failure {
        return Err(e);
    }
    if interrupted {
        return Err(CompressError::Interrupted { partial });
    }
    let mut package = NtcPackage::new(opts.train.model.clone())?;
    let mut group_reports = Vec::with_capacity(finished.len());
    let mut tries_of: Vec<Vec<RateTry>> = vec![Vec::new(); sets.len()];
    let mut curves = Vec::new();
    for (done, &g) in finished.into_iter().zip(selection) {
        append(&mut package, done.package);
        for (&s, tried) in groups[g].iter().zip(done.tries) {
            tries_of[s] = tried;
        }
        curves.extend(done.curves);
        group_reports.push(done.report);
    }
    finish(&package)?;
    let _ = std::fs::remove_dir_all(&partial);

    // The report: package order is selection order, members in group order.
    let bits = opts.train.model.latent_bits;
    let order: Vec<(usize, usize, usize)> = selection
        .iter()
        .enumerate()
        .flat_map(|(i, &g)| groups[g].iter().map(move |&s| (i, g, s)))
        .collect();
    let mut flips = if opts.flip {
        let in_order: Vec<&TextureSet> = order.iter().map(|&(_, _, s)| &sets[s]).collect();
        ntc_flip(&package, &in_order)?
    } else {
        vec![None; package.materials.len()]
    };
    // The baselines not measured before training, of every reported set at once.
    if !opts.skip_bcn {
        let wanted: Vec<usize> = order
            .iter()
            .map(|&(_, _, s)| s)
            .filter(|&s| bcn[s].is_none())
            .collect();
        let in_order: Vec<&TextureSet> = wanted.iter().map(|&s| &sets[s]).collect();
        for (s, results) in wanted
            .into_iter()
            .zip(bcn_baselines_all(&in_order, flip_bcn))
        {
            bcn[s] = Some(results);
        }
    }
    let materials: Vec<MaterialReport> = order
        .iter()
        .zip(&package.materials)
        .zip(&mut flips)
        .map(|((&(i, g, s), m), flip)| {
            let psnr = m.quality.report();
            let target_reached =
                targets[s].map(|target| psnr.pooled.is_some_and(|p| p.db >= target));
            MaterialReport {
                name: m.name.clone(),
                group: g,
                width: m.layout.width(),
                height: m.layout.height(),
                channels: m.present.to_string(),
                bits_per_texel: m.layout.bits_per_texel(bits),
                preset: group_reports
                    .get(i)
                    .map_or(opts.train.model.preset, |r| r.preset),
                psnr,
                target_psnr: targets[s],
                target_reached,
                rate_tries: std::mem::take(&mut tries_of[s]),
                flip: flip.take(),
                bcn: bcn[s].take().unwrap_or_default(),
            }
        })
        .collect();
    let warnings = materials
        .iter()
        .filter_map(MaterialReport::missed)
        .collect();
    let means: Vec<f64> = materials
        .iter()
        .filter_map(|m| m.psnr.pooled.map(|p| p.db))
        .collect();
    let flip_means: Vec<f64> = materials
        .iter()
        .filter_map(|m| m.flip.as_ref().and_then(|f| f.mean))
        .collect();
    let mut adapters: Vec<String> = devices.iter().map(GpuContext::describe).collect();
    adapters.dedup();
    let report = CompressReport {
        adapter: adapters.join("; "),
        inputs: inputs.to_string(),
        steps: opts.steps,
        seed: opts.seed,
        train: opts.train.clone(),
        rate: opts.rate,
        groups: group_reports,
        mean_psnr: (!means.is_empty()).then(|| means.iter().sum::<f64>() / means.len() as f64),
        // An empty sum of floats is −0: a shard without groups reports 0.
        mean_bits_per_texel: materials.iter().fold(0.0, |sum, m| sum + m.bits_per_texel)
            / materials.len().max(1) as f64,
        mean_flip: (!flip_means.is_empty())
            .then(|| flip_means.iter().sum::<f64>() / flip_means.len() as f64),
        warnings,
        materials,
        seconds: start.elapsed().as_secs_f64(),
        curves,
    };
    Ok((package, report))
}

/// Per channel group, the BC1/BC5 baseline's MSE at mip 0 of every set of `members` and
/// the values it covers (`(group index, MSE, count)`, the input of
/// [`LossWeights::balanced`]); sets without baselines add nothing.
fn bc1_group_errors(
    members: &[usize],
    sets: &[TextureSet],
    bcn: &[Option<Vec<BcnResult>>],
) -> Vec<(usize, f64, u64)> {
    let mut errors = Vec::new();
    for &s in members {
        let Some(bc1) = bcn[s].as_ref().and_then(|r| r.get(BcnTarget::Bc1.index())) else {
            continue;
        };
        let texels = u64::from(sets[s].width) * u64::from(sets[s].height);
        for (g, (mask, name)) in QUALITY_GROUPS.iter().enumerate() {
            if let Some(p) = bc1.psnr_mip0.group(name) {
                errors.push((g, p.mse(), texels * u64::from(mask.count())));
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::group::preset_of;
    use super::*;
    use crate::ntc::model::{LatentLayout, Preset};

    #[test]
    fn groups_must_cover_sets_once() {
        assert!(check_groups(&[vec![0, 2], vec![1]], 3).is_ok());
        assert!(
            check_groups(&[vec![0], vec![0, 1]], 2)
                .unwrap_err()
                .to_string()
                .contains("two groups")
        );
        assert!(
            check_groups(&[vec![0]], 2)
                .unwrap_err()
                .to_string()
                .contains("no group")
        );
        assert!(
            check_groups(&[vec![5]], 2)
                .unwrap_err()
                .to_string()
                .contains("does not exist")
        );
        assert!(check_groups(&[vec![]], 0).is_err());
    }

    #[test]
    fn group_budgets_scale_with_their_sets() {
        assert_eq!(group_main_steps(4000, 1), 4000);
        assert_eq!(group_main_steps(4000, 19), 76_000);
        assert_eq!(group_main_steps(u64::MAX / 2, 3), u64::MAX);
        // Rate control tries presets in increasing size; a fixed rate only its own.
        assert_eq!(
            RateControl::TargetPsnr(40.0).presets(Preset::High),
            vec![
                Preset::Low,
                Preset::Medium,
                Preset::MediumHigh,
                Preset::High,
                Preset::VeryHigh
            ]
        );
        assert_eq!(
            RateControl::Fixed.presets(Preset::Medium),
            vec![Preset::Medium]
        );
        let l = |p| LatentLayout::new(64, 32, 7, p, 16).expect("layout");
        for p in Preset::ALL {
            assert_eq!(preset_of(&l(p), Preset::High), p);
        }
    }
}
