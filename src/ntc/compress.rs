//! Compression of many texture sets into one package: group by group on the GPU, with
//! progress, interruption and resume, a quality report per material next to BCn
//! baselines, and the loss curves.
//!
//! Budgets: [`CompressOptions::steps`] is per texture set, so a group of `k` sets trains
//! `k` times as many main steps ([`group_main_steps`]) and every material sees as many
//! samples as under one decoder per set, whatever the grouping.
//!
//! Rate control ([`RateControl`]): at a fixed preset, or the smallest preset (fewest
//! latent bits, [`Preset::ALL`] order) at which every set of a group reaches a pooled
//! PSNR target — a fixed one, or its BCn baseline's. Under the default one decoder per
//! set that is a preset per set; a shared group takes one preset for all its sets. Each
//! try is a full training; the report lists every try.
//!
//! Interruption: finished groups are kept in `<out>.partial/group<N>.ntc` and an
//! interrupted group's optimiser state in `<out>.partial/group<N>.ckpt`; `resume`
//! continues from there. The package is written (temp file + rename) only when every
//! group is done, then the partial folder is removed.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use serde::Serialize;

use super::format::NtcPackage;
use super::model::{LatentLayout, Preset};
use super::train::gpu::{
    Checkpoint, GpuTrainError, GpuTrainerOptions, TrainKernel, TrainOptions, TrainProgress,
    train_gpu,
};
use super::train::{QUALITY_GROUPS, TrainConfig, TrainedGroup, training_flops_per_sample};
use super::{NtcFormatError, TrainError};
use crate::gpu::GpuContext;
use crate::scene::Material;
use crate::texture::bcn::{BcnResult, bcn_baselines};
use crate::texture::{CHANNELS, TextureSet};

/// Errors of a compression run.
#[derive(Debug, thiserror::Error)]
pub enum CompressError {
    /// Training failed (or was cancelled: the checkpoint is saved and named).
    #[error(transparent)]
    Train(#[from] GpuTrainError),
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
    /// The groups do not cover the sets exactly once.
    #[error("invalid grouping: {0}")]
    Groups(String),
    /// The loss-curve chart could not be drawn or written.
    #[error(transparent)]
    Plot(#[from] super::plot::PlotError),
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
}

/// Main training steps of a group of `sets` texture sets for a budget of `steps_per_set`:
/// `steps_per_set · sets` (saturating), so that every material gets the samples it would
/// get with a decoder of its own.
pub fn group_main_steps(steps_per_set: u64, sets: usize) -> u64 {
    steps_per_set.saturating_mul(sets as u64)
}

/// A BCn baseline to match ([`RateControl::MatchBcn`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum BcnTarget {
    /// BC1 colour (BC3 with alpha), BC5 normals, BC1 ORM and emissive (4–8 bpt per
    /// texture).
    Bc1,
    /// BC7 colour, BC5 normals, BC7 ORM and emissive (8 bpt per texture).
    Bc7,
}

impl BcnTarget {
    /// Index of this baseline in [`bcn_baselines`]' list.
    fn index(self) -> usize {
        match self {
            BcnTarget::Bc1 => 0,
            BcnTarget::Bc7 => 1,
        }
    }
}

/// How a group's latent resolution (preset) is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RateControl {
    /// The recipe's preset ([`TrainConfig::model`]) for every group.
    Fixed,
    /// The smallest preset at which every set of the group reaches this pooled PSNR (dB,
    /// mip 0, all present channels); the largest preset when none does.
    TargetPsnr(f64),
    /// The smallest preset at which every set of the group reaches the pooled PSNR of its
    /// own BCn baseline; the largest when none does.
    MatchBcn(BcnTarget),
}

impl RateControl {
    /// The presets to try, in order.
    fn presets(self, fixed: Preset) -> Vec<Preset> {
        match self {
            RateControl::Fixed => vec![fixed],
            RateControl::TargetPsnr(_) | RateControl::MatchBcn(_) => Preset::ALL.to_vec(),
        }
    }
}

/// One try of rate control for one set: the preset and the pooled PSNR it reached.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RateTry {
    /// The preset tried.
    pub preset: Preset,
    /// Pooled PSNR of mip 0 at that preset (dB; `None` when nothing was measured).
    pub psnr_pooled: Option<f32>,
}

/// One material's line of the report.
#[derive(Clone, Debug, Serialize)]
pub struct MaterialReport {
    /// Texture set name.
    pub name: String,
    /// Group (= decoder index).
    pub group: usize,
    /// Mip-0 size.
    pub width: u32,
    /// Mip-0 size.
    pub height: u32,
    /// Present channels.
    pub channels: String,
    /// Latent bits per mip-0 texel (whole pyramid, all channels).
    pub bits_per_texel: f64,
    /// The preset the set was compressed at.
    pub preset: Preset,
    /// NTC PSNR per quality group at mip 0 (dB).
    pub psnr: Vec<(String, f32)>,
    /// Mean of `psnr`.
    pub psnr_mean: Option<f32>,
    /// NTC PSNR pooled over every present channel at mip 0 (dB).
    pub psnr_pooled: Option<f32>,
    /// Rate control's pooled PSNR target for this set (dB), if any.
    pub target_psnr: Option<f64>,
    /// Rate control's tries, smallest preset first (empty at a fixed preset or when the
    /// group was resumed finished).
    pub rate_tries: Vec<RateTry>,
    /// BCn baselines for the same set.
    pub bcn: Vec<BcnResult>,
}

/// One group's training.
#[derive(Clone, Debug, Serialize)]
pub struct GroupReport {
    /// Materials (set indices) in the group.
    pub sets: Vec<usize>,
    /// Main steps of the group ([`group_main_steps`]).
    pub steps: u64,
    /// The preset the group was compressed at.
    pub preset: Preset,
    /// The training kernels (`None` when the group was resumed finished).
    pub kernel: Option<TrainKernel>,
    /// Wall-clock seconds of training (incl. fine-tuning and evaluation; every try of
    /// rate control).
    pub seconds: f64,
    /// Mean training throughput of the kept try (batch texels per second).
    pub texels_per_second: f64,
    /// `texels_per_second` times the decoder's
    /// [`training_flops_per_sample`], in TFLOP/s.
    pub tflops: f64,
    /// Final reported loss.
    pub final_loss: f64,
}

/// The report of a run.
#[derive(Clone, Debug, Serialize)]
pub struct CompressReport {
    /// The adapter that trained.
    pub adapter: String,
    /// Inputs (files).
    pub inputs: String,
    /// Main steps per texture set.
    pub steps: u64,
    /// Seed.
    pub seed: u64,
    /// Recipe.
    pub train: TrainConfig,
    /// Rate control.
    pub rate: RateControl,
    /// Per group.
    pub groups: Vec<GroupReport>,
    /// Per material.
    pub materials: Vec<MaterialReport>,
    /// Mean over materials of the mean PSNR.
    pub mean_psnr: Option<f64>,
    /// Mean bits per texel over materials.
    pub mean_bits_per_texel: f64,
    /// Total wall-clock seconds.
    pub seconds: f64,
    /// Loss curves: (group, step, loss, psnr estimate).
    #[serde(skip)]
    pub curves: Vec<(usize, u64, f64, f64)>,
}

/// The constants a package stores per set: the factors of the first material using it
/// (glTF semantics; the shader uses them for absent channels and multiplies otherwise).
pub fn set_constants(
    materials: &[Material],
    material_sets: &[Option<usize>],
    sets: usize,
) -> Vec<[f32; CHANNELS]> {
    let mut out = vec![[1.0; CHANNELS]; sets];
    let mut seen = vec![false; sets];
    for (m, s) in materials.iter().zip(material_sets) {
        let Some(s) = *s else { continue };
        if seen[s] {
            continue;
        }
        seen[s] = true;
        let b = m.base_color_factor;
        let e = m.emissive_factor;
        out[s] = [
            b[0],
            b[1],
            b[2],
            b[3],
            m.normal_scale,
            m.normal_scale,
            m.occlusion_strength,
            m.roughness_factor,
            m.metallic_factor,
            e[0],
            e[1],
            e[2],
        ];
    }
    out
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

/// Append `other`'s decoders and materials to `package`.
fn append(package: &mut NtcPackage, other: NtcPackage) {
    let offset = package.decoders.len() as u32;
    package.decoders.extend(other.decoders);
    package
        .materials
        .extend(other.materials.into_iter().map(|mut m| {
            m.decoder += offset;
            m
        }));
}

/// The partial folder of a run writing `out`.
pub fn partial_dir(out: &Path) -> PathBuf {
    let mut name = out
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".partial");
    out.with_file_name(name)
}

/// The preset whose standard layouts `layout` has (for groups resumed finished), else
/// `fallback`.
fn preset_of(layout: &LatentLayout, fallback: Preset) -> Preset {
    Preset::ALL
        .into_iter()
        .find(|&p| {
            LatentLayout::new(
                layout.width(),
                layout.height(),
                layout.mips(),
                p,
                layout.features(),
            )
            .is_ok_and(|l| l == *layout)
        })
        .unwrap_or(fallback)
}

/// A finished training try of one group.
struct GroupTry {
    trained: TrainedGroup,
    preset: Preset,
    rates: Vec<f64>,
    last: Option<TrainProgress>,
    curves: Vec<(usize, u64, f64, f64)>,
}

/// Compress `sets` in `groups` (indices into `sets`), writing the package to `out`.
/// `progress(group, groups, &TrainProgress)` is called as training advances.
#[allow(clippy::too_many_arguments)]
pub fn compress(
    ctx: &GpuContext,
    sets: &[TextureSet],
    constants: &[[f32; CHANNELS]],
    groups: &[Vec<usize>],
    opts: &CompressOptions,
    inputs: &str,
    out: &Path,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(usize, usize, &TrainProgress),
) -> Result<(NtcPackage, CompressReport), CompressError> {
    opts.train.validate()?;
    check_groups(groups, sets.len())?;
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
    let start = Instant::now();
    let partial = partial_dir(out);
    if !opts.resume && partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(|source| CompressError::Io {
            path: partial.clone(),
            source,
        })?;
    }
    std::fs::create_dir_all(&partial).map_err(|source| CompressError::Io {
        path: partial.clone(),
        source,
    })?;
    // BCn baselines: before training when rate control matches them, else for the report.
    let mut bcn: Vec<Option<Vec<BcnResult>>> = vec![None; sets.len()];
    let targets: Vec<Option<f64>> = match opts.rate {
        RateControl::Fixed => vec![None; sets.len()],
        RateControl::TargetPsnr(db) => vec![Some(db); sets.len()],
        RateControl::MatchBcn(target) => sets
            .iter()
            .zip(&mut bcn)
            .map(|(set, slot)| {
                let results = slot.insert(bcn_baselines(set));
                results.get(target.index()).and_then(|r| r.psnr_mip0.all)
            })
            .collect(),
    };
    let flops = training_flops_per_sample(&opts.train.model);
    let mut package = NtcPackage::new(opts.train.model.clone())?;
    let mut group_reports = Vec::new();
    let mut tries_of: Vec<Vec<RateTry>> = vec![Vec::new(); sets.len()];
    let mut curves = Vec::new();
    for (g, members) in groups.iter().enumerate() {
        let done = partial.join(format!("group{g}.ntc"));
        let ckpt = partial.join(format!("group{g}.ckpt"));
        let steps = group_main_steps(opts.steps, members.len());
        if opts.resume && done.exists() {
            let finished = NtcPackage::read(&done)?;
            let preset = finished
                .materials
                .first()
                .map_or(opts.train.model.preset, |m| {
                    preset_of(&m.layout, opts.train.model.preset)
                });
            append(&mut package, finished);
            group_reports.push(GroupReport {
                sets: members.clone(),
                steps,
                preset,
                kernel: None,
                seconds: 0.0,
                texels_per_second: 0.0,
                tflops: 0.0,
                final_loss: f64::NAN,
            });
            continue;
        }
        let group_sets: Vec<TextureSet> = members.iter().map(|&i| sets[i].clone()).collect();
        let mut resume = if opts.resume && ckpt.exists() {
            Some(Checkpoint::load(&ckpt)?)
        } else {
            None
        };
        let mut presets = opts.rate.presets(opts.train.model.preset);
        // An interrupted try resumes where rate control was: its smaller presets had
        // missed the target.
        if let Some(at) = resume
            .as_ref()
            .and_then(|c| presets.iter().position(|&p| p == c.config.model.preset))
        {
            presets.drain(..at);
        }
        let t0 = Instant::now();
        let mut kept = None;
        for (i, &preset) in presets.iter().enumerate() {
            let mut train = opts.train.clone();
            train.model.preset = preset;
            let mut rates = Vec::new();
            let mut last = None;
            let mut try_curves = Vec::new();
            let result = train_gpu(
                ctx,
                &group_sets,
                &train,
                steps,
                opts.seed.wrapping_add(g as u64),
                TrainOptions {
                    log_every: opts.log_every,
                    cancel: Some(cancel),
                    resume: resume.take(),
                    gpu: GpuTrainerOptions {
                        kernel: opts.kernel,
                        ..GpuTrainerOptions::default()
                    },
                },
                &mut |p| {
                    try_curves.push((g, p.step, p.loss, p.psnr_estimate));
                    if p.texels_per_second.is_finite() && p.texels_per_second > 0.0 {
                        rates.push(p.texels_per_second);
                    }
                    last = Some(*p);
                    progress(g, groups.len(), p);
                },
            );
            let trained = match result {
                Ok(t) => t,
                Err(GpuTrainError::Cancelled(checkpoint)) => {
                    checkpoint.save(&ckpt)?;
                    return Err(CompressError::Interrupted { partial });
                }
                Err(e) => return Err(e.into()),
            };
            let mut reached = true;
            for (&s, m) in members.iter().zip(&trained.materials) {
                let pooled = m.quality.pooled();
                if opts.rate != RateControl::Fixed {
                    tries_of[s].push(RateTry {
                        preset,
                        psnr_pooled: pooled,
                    });
                }
                if let Some(target) = targets[s] {
                    reached &= pooled.is_some_and(|p| f64::from(p) >= target);
                }
            }
            if reached || i + 1 == presets.len() {
                kept = Some(GroupTry {
                    trained,
                    preset,
                    rates,
                    last,
                    curves: try_curves,
                });
                break;
            }
        }
        let Some(kept) = kept else {
            return Err(CompressError::Groups(format!(
                "group {g}: rate control has no preset to try"
            )));
        };
        let mut train = opts.train.clone();
        train.model.preset = kept.preset;
        let mut one = NtcPackage::new(train.model.clone())?;
        let group_constants: Vec<[f32; CHANNELS]> = members.iter().map(|&i| constants[i]).collect();
        one.add_group(&kept.trained, &group_constants)?;
        one.write(&done)?;
        let _ = std::fs::remove_file(&ckpt);
        append(&mut package, one);
        curves.extend(kept.curves);
        let texels_per_second = if kept.rates.is_empty() {
            0.0
        } else {
            kept.rates.iter().sum::<f64>() / kept.rates.len() as f64
        };
        group_reports.push(GroupReport {
            sets: members.clone(),
            steps,
            preset: kept.preset,
            kernel: Some(
                opts.kernel
                    .unwrap_or_else(|| TrainKernel::best(ctx, &train.model)),
            ),
            seconds: t0.elapsed().as_secs_f64(),
            texels_per_second,
            tflops: texels_per_second * flops / 1e12,
            final_loss: kept.last.map_or(f64::NAN, |p| p.loss),
        });
    }
    package.write(out)?;
    let _ = std::fs::remove_dir_all(&partial);

    // The report: package order is group order, members in group order.
    let bits = opts.train.model.latent_bits;
    let order: Vec<(usize, usize)> = groups
        .iter()
        .enumerate()
        .flat_map(|(g, members)| members.iter().map(move |&s| (g, s)))
        .collect();
    let materials: Vec<MaterialReport> = order
        .iter()
        .zip(&package.materials)
        .map(|(&(g, s), m)| {
            let psnr: Vec<(String, f32)> = QUALITY_GROUPS
                .iter()
                .zip(m.quality.psnr)
                .filter_map(|((_, name), p)| p.map(|p| (name.to_string(), p)))
                .collect();
            MaterialReport {
                name: m.name.clone(),
                group: g,
                width: m.layout.width(),
                height: m.layout.height(),
                channels: m.present.to_string(),
                bits_per_texel: m.layout.bits_per_texel(bits),
                preset: group_reports
                    .get(g)
                    .map_or(opts.train.model.preset, |r| r.preset),
                psnr_mean: m.quality.mean(),
                psnr_pooled: m.quality.pooled(),
                psnr,
                target_psnr: targets[s],
                rate_tries: std::mem::take(&mut tries_of[s]),
                bcn: if opts.skip_bcn {
                    Vec::new()
                } else {
                    bcn[s].take().unwrap_or_else(|| bcn_baselines(&sets[s]))
                },
            }
        })
        .collect();
    let means: Vec<f64> = materials
        .iter()
        .filter_map(|m| m.psnr_mean.map(f64::from))
        .collect();
    let report = CompressReport {
        adapter: ctx.describe(),
        inputs: inputs.to_string(),
        steps: opts.steps,
        seed: opts.seed,
        train: opts.train.clone(),
        rate: opts.rate,
        groups: group_reports,
        mean_psnr: (!means.is_empty()).then(|| means.iter().sum::<f64>() / means.len() as f64),
        mean_bits_per_texel: materials.iter().map(|m| m.bits_per_texel).sum::<f64>()
            / materials.len().max(1) as f64,
        materials,
        seconds: start.elapsed().as_secs_f64(),
        curves,
    };
    Ok((package, report))
}

impl CompressReport {
    /// Write the report: JSON at `path`, and beside it the Markdown table (`.md`), the
    /// loss curves (`.curves.csv`) and their chart (`.curves.png`, 1200×420).
    pub fn write(&self, path: &Path) -> Result<(), CompressError> {
        let write = |p: &Path, bytes: &[u8]| {
            crate::io::write_atomic(p, bytes).map_err(|source| CompressError::Io {
                path: p.to_path_buf(),
                source,
            })
        };
        let json = serde_json::to_string_pretty(self).map_err(|e| CompressError::Io {
            path: path.to_path_buf(),
            source: e.into(),
        })?;
        write(path, json.as_bytes())?;
        write(&path.with_extension("md"), self.markdown().as_bytes())?;
        write(
            &path.with_extension("curves.csv"),
            self.curves_csv().as_bytes(),
        )?;
        super::plot::write_curves_png(&path.with_extension("curves.png"), &self.curves, 1200, 420)?;
        Ok(())
    }

    /// The loss curves as CSV: `group,step,loss,psnr_estimate`.
    pub fn curves_csv(&self) -> String {
        let mut s = String::from("group,step,loss,psnr_estimate\n");
        for (g, step, loss, psnr) in &self.curves {
            s.push_str(&format!("{g},{step},{loss},{psnr}\n"));
        }
        s
    }

    /// A Markdown table: one row per material, NTC next to the BCn baselines.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        s.push_str("| material | size | preset | NTC bpt | NTC PSNR | BC1/BC5 bpt | BC1/BC5 PSNR | BC7/BC5 bpt | BC7/BC5 PSNR |\n");
        s.push_str("|---|---|---|---|---|---|---|---|---|\n");
        let f = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.2}"));
        for m in &self.materials {
            let bc = |i: usize| {
                m.bcn
                    .get(i)
                    .map(|b| (Some(b.bits_per_texel), b.psnr_mip0.all))
                    .unwrap_or((None, None))
            };
            let (b1, p1) = bc(0);
            let (b7, p7) = bc(1);
            s.push_str(&format!(
                "| {} | {}×{} | {} | {:.2} | {} | {} | {} | {} | {} |\n",
                m.name,
                m.width,
                m.height,
                clap::ValueEnum::to_possible_value(&m.preset)
                    .map_or_else(|| format!("{:?}", m.preset), |v| v.get_name().to_owned()),
                m.bits_per_texel,
                f(m.psnr_mean.map(f64::from)),
                f(b1),
                f(p1),
                f(b7),
                f(p7)
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            vec![Preset::Low, Preset::Medium, Preset::High, Preset::VeryHigh]
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

    #[test]
    fn partial_dir_sits_next_to_the_output() {
        assert_eq!(
            partial_dir(Path::new("/a/b/room.ntc")),
            Path::new("/a/b/room.ntc.partial")
        );
    }
}
