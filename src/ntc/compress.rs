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
//! latent bits, [`Preset::ALL`] order) at which every set of a group reaches a pooled
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

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::format::NtcPackage;
use super::model::{LatentLayout, Preset};
use super::parallel::{GroupProgress, run_on_devices};
use super::train::checkpoint::{Checkpoint, CheckpointError};
use super::train::cpu::decode_mip;
use super::train::gpu::{
    GpuTrainError, GpuTrainerOptions, TrainKernel, TrainOptions, TrainProgress, train_gpu,
};
use super::train::{
    LossWeighting, LossWeights, QUALITY_GROUPS, TrainConfig, TrainedGroup,
    training_flops_per_sample,
};
use super::{NtcFormatError, TrainError};
use crate::charts::{Panel, PlotError, Series, write_panels_png};
use crate::gpu::GpuContext;
use crate::texture::bcn::{BcnResult, PROTOCOL, bcn_baselines};
use crate::texture::flip::{FlipReport, flip_set_mip};
use crate::texture::metrics::{Psnr, PsnrReport};
use crate::texture::{CHANNELS, TextureSet, quantize_u8};

/// Errors of a compression run.
#[derive(Debug, thiserror::Error)]
pub enum CompressError {
    /// Training failed (or was cancelled: the checkpoint is saved and named).
    #[error(transparent)]
    Train(#[from] GpuTrainError),
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
    /// The files the sets were read from (scenes, manifests, images), recorded in the
    /// partial folder's manifest so that `resume` never continues stale work.
    pub input_files: Vec<PathBuf>,
    /// The recipe's loss weights, or balanced per group against BC1/BC5.
    pub loss_weights: LossWeighting,
    /// Measure ꟻLIP of NTC and (unless skipped) the BCn baselines in the report.
    pub flip: bool,
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

/// One try of rate control for one set: the preset, the main steps (a probe's fraction
/// or the full budget) and the pooled PSNR it reached.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RateTry {
    /// The preset tried.
    pub preset: Preset,
    /// Its main steps.
    pub steps: u64,
    /// Pooled PSNR of mip 0 at that preset (dB; `None` when nothing was measured).
    pub psnr_pooled: Option<Psnr>,
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
    /// NTC PSNR at mip 0: pooled over the present channels, and per channel group.
    pub psnr: PsnrReport,
    /// Rate control's pooled PSNR target for this set (dB), if any.
    pub target_psnr: Option<f64>,
    /// Rate control's tries, smallest preset first (empty at a fixed preset or when the
    /// group was resumed finished).
    pub rate_tries: Vec<RateTry>,
    /// Rate control reached the target (`None` without a target).
    pub target_reached: Option<bool>,
    /// NTC ꟻLIP at mip 0, when measured.
    pub flip: Option<FlipReport>,
    /// BCn baselines for the same set, measured alike.
    pub bcn: Vec<BcnResult>,
}

impl MaterialReport {
    /// The warning of a missed rate-control target: the set, its best pooled PSNR over
    /// the tries (or the kept result) and the target; `None` when it was reached or there
    /// was none.
    pub fn missed(&self) -> Option<String> {
        let target = self
            .target_psnr
            .filter(|_| self.target_reached == Some(false))?;
        // The full trainings, not the probes.
        let full = self.rate_tries.iter().map(|t| t.steps).max().unwrap_or(0);
        let best = self
            .rate_tries
            .iter()
            .filter(|t| t.steps == full)
            .filter_map(|t| t.psnr_pooled.map(|p| (p.db, t.preset)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .or_else(|| self.psnr.pooled.map(|p| (p.db, self.preset)));
        Some(match best {
            Some((db, preset)) => format!(
                "set `{}` missed its target: best pooled PSNR {db:.2} dB (preset {}) < target {target:.2} dB",
                self.name,
                preset_name(preset)
            ),
            None => format!(
                "set `{}` missed its target: nothing measured < target {target:.2} dB",
                self.name
            ),
        })
    }
}

/// A preset's name as the command line spells it (`very-high`).
pub fn preset_name(preset: Preset) -> String {
    clap::ValueEnum::to_possible_value(&preset)
        .map_or_else(|| format!("{preset:?}"), |v| v.get_name().to_owned())
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
    /// The loss weights it was trained with.
    pub loss_weights: LossWeights,
    /// The training kernels (`None` when the group was resumed finished).
    pub kernel: Option<TrainKernel>,
    /// The device that trained it (index into the run's devices; `None` when it was
    /// resumed finished).
    pub device: Option<usize>,
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
    /// The adapter that trained (with several devices, each distinct adapter in device
    /// order, `; `-separated).
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
    /// Mean over materials of their pooled PSNR (dB; an exact material counts 99).
    pub mean_psnr: Option<f64>,
    /// Mean bits per texel over materials.
    pub mean_bits_per_texel: f64,
    /// Mean over materials of their NTC ꟻLIP, when measured.
    pub mean_flip: Option<f64>,
    /// Targets rate control missed, one line per set: its name, its best pooled PSNR and
    /// the target.
    pub warnings: Vec<String>,
    /// Total wall-clock seconds.
    pub seconds: f64,
    /// Loss curves: (group, step, loss, psnr estimate).
    #[serde(skip)]
    pub curves: Vec<(usize, u64, f64, f64)>,
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

/// The partial folder of a run writing `out`.
pub fn partial_dir(out: &Path) -> PathBuf {
    let mut name = out
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".partial");
    out.with_file_name(name)
}

/// The marker and manifest file of a partial folder.
pub const PARTIAL_MANIFEST: &str = "neurotex-partial.json";

/// `format` of a [`PartialManifest`].
const PARTIAL_FORMAT: &str = "neurotex-compress-partial";

/// One input file as a partial folder's manifest records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileIdentity {
    /// The path as given.
    pub path: PathBuf,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch (0 when unknown).
    pub modified_ns: u64,
    /// BLAKE3 of the content, hex.
    pub blake3: String,
}

impl FileIdentity {
    /// Read `path`'s identity.
    pub fn of(path: &Path) -> Result<Self, std::io::Error> {
        let meta = std::fs::metadata(path)?;
        let modified_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let mut hasher = blake3::Hasher::new();
        hasher.update_reader(std::fs::File::open(path)?)?;
        Ok(Self {
            path: path.to_path_buf(),
            size: meta.len(),
            modified_ns,
            blake3: hasher.finalize().to_hex().to_string(),
        })
    }
}

/// BLAKE3 (hex) of a decoded set's size, channels and every mip's texels: what training
/// sees of it (its name aside).
pub fn set_digest(set: &TextureSet) -> String {
    let mut h = blake3::Hasher::new();
    h.update(&set.width.to_le_bytes());
    h.update(&set.height.to_le_bytes());
    h.update(&set.present.0.to_le_bytes());
    for mip in &set.mips {
        h.update(&mip.width.to_le_bytes());
        h.update(&mip.height.to_le_bytes());
        h.update(&mip.texels);
    }
    h.finalize().to_hex().to_string()
}

/// What a partial folder was made from (`<out>.partial/neurotex-partial.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartialManifest {
    /// Always `neurotex-compress-partial`.
    pub format: String,
    /// Layout version (1).
    pub version: u32,
    /// Every input file.
    pub files: Vec<FileIdentity>,
    /// Per set: its name and the BLAKE3 (hex) of its size, channels and every mip's texels.
    pub sets: Vec<(String, String)>,
    /// BLAKE3 (hex) of the settings: training recipe, steps per set and per group, seed,
    /// groups, constants, rate control, loss weighting (not the training kernels, which
    /// only change speed and rounding).
    pub settings: String,
}

impl PartialManifest {
    /// The manifest of a run.
    pub fn of_run(
        sets: &[TextureSet],
        constants: &[[f32; CHANNELS]],
        groups: &[Vec<usize>],
        opts: &CompressOptions,
    ) -> Result<Self, CompressError> {
        let files = opts
            .input_files
            .iter()
            .map(|p| {
                FileIdentity::of(p).map_err(|source| CompressError::Input {
                    path: p.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let sets = sets
            .iter()
            .map(|set| (set.name.clone(), set_digest(set)))
            .collect();
        // The budgets enter both per set and per group, so a resume under another
        // budget rule is refused too.
        let budgets: Vec<u64> = groups
            .iter()
            .map(|g| group_main_steps(opts.steps, g.len()))
            .collect();
        let settings = serde_json::to_vec(&(
            &opts.train,
            opts.steps,
            &budgets,
            opts.seed,
            groups,
            constants,
            opts.rate,
            opts.loss_weights,
        ))
        .map_err(|e| CompressError::Groups(format!("settings: {e}")))?;
        Ok(Self {
            format: PARTIAL_FORMAT.into(),
            version: 1,
            files,
            sets,
            settings: blake3::hash(&settings).to_hex().to_string(),
        })
    }

    /// What differs between `self` (found) and `run` (wanted), in words.
    fn difference(&self, run: &PartialManifest) -> String {
        for want in &run.files {
            match self.files.iter().find(|f| f.path == want.path) {
                None => return format!("{} was not among its inputs", want.path.display()),
                Some(f) if f.size != want.size => {
                    return format!(
                        "{} changed size ({} → {} bytes)",
                        want.path.display(),
                        f.size,
                        want.size
                    );
                }
                Some(f) if f.blake3 != want.blake3 => {
                    return format!("{} changed content", want.path.display());
                }
                Some(f) if f.modified_ns != want.modified_ns => {
                    return format!("{} was modified", want.path.display());
                }
                Some(_) => {}
            }
        }
        if let Some(f) = self
            .files
            .iter()
            .find(|f| !run.files.iter().any(|w| w.path == f.path))
        {
            return format!("it also read {}", f.path.display());
        }
        if self.sets.len() != run.sets.len() {
            return format!(
                "{} texture sets, this run has {}",
                self.sets.len(),
                run.sets.len()
            );
        }
        if let Some((a, b)) = self.sets.iter().zip(&run.sets).find(|(a, b)| a != b) {
            return if a.0 == b.0 {
                format!("the texels of set `{}` differ", a.0)
            } else {
                format!("set `{}` where this run has `{}`", a.0, b.0)
            };
        }
        if self.settings != run.settings {
            return "other settings (recipe, step budgets, seed, groups, rate control, loss \
                    weights or constants)"
                .into();
        }
        format!("format `{}` version {}", self.format, self.version)
    }
}

/// Make `partial` ready for a run with `manifest`: a folder with a matching manifest is
/// kept (`resume`) or emptied; a missing one is created; anything else is an error and
/// stays untouched. Returns whether earlier progress may be reused.
fn prepare_partial(
    partial: &Path,
    manifest: &PartialManifest,
    resume: bool,
) -> Result<bool, CompressError> {
    let io = |source| CompressError::Io {
        path: partial.to_path_buf(),
        source,
    };
    let marker = partial.join(PARTIAL_MANIFEST);
    let mut resuming = false;
    if partial.exists() {
        let bytes = match std::fs::read(&marker) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CompressError::PartialNotOurs {
                    partial: partial.to_path_buf(),
                });
            }
            Err(source) => {
                return Err(CompressError::Io {
                    path: marker,
                    source,
                });
            }
        };
        let found: PartialManifest =
            serde_json::from_slice(&bytes).map_err(|e| CompressError::PartialDamaged {
                partial: partial.to_path_buf(),
                reason: e.to_string(),
            })?;
        if found != *manifest {
            return Err(CompressError::PartialMismatch {
                partial: partial.to_path_buf(),
                difference: found.difference(manifest),
            });
        }
        if resume {
            resuming = true;
        } else {
            std::fs::remove_dir_all(partial).map_err(io)?;
        }
    }
    if !resuming {
        // Made complete under a temporary name, then renamed: a kill at any moment
        // leaves either no folder or one with its marker.
        let json = serde_json::to_vec_pretty(manifest)
            .map_err(|e| CompressError::Groups(format!("manifest: {e}")))?;
        let mut name = partial.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".{}.tmp", std::process::id()));
        let staging = partial.with_file_name(name);
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging).map_err(io)?;
        crate::io::write_atomic(&staging.join(PARTIAL_MANIFEST), &json).map_err(io)?;
        std::fs::rename(&staging, partial).map_err(io)?;
    }
    Ok(resuming)
}

/// The seal of finished group `g` of the run whose partial manifest hashes to `owner`:
/// the BLAKE3 of the package bytes keyed with `owner` and `g` (hex). A group package from
/// another run, another group or edited in place does not match it. It guards against
/// mix-ups, not forgery: whoever can read the folder's manifest can compute it.
fn group_seal(owner: &[u8; 32], g: usize, package: &[u8]) -> String {
    let mut h = blake3::Hasher::new_keyed(owner);
    h.update(&(g as u64).to_le_bytes());
    h.update(package);
    h.finalize().to_hex().to_string()
}

/// Delete `<out>.partial/` if neurotex made it (it holds the marker), whatever run it
/// belongs to; a folder without the marker is left alone. For owners of an output folder
/// (the package cache) that know the partial progress is stale. Returns whether a folder
/// was deleted.
pub fn remove_partial_if_ours(out: &Path) -> Result<bool, CompressError> {
    let partial = partial_dir(out);
    if !partial.join(PARTIAL_MANIFEST).is_file() {
        return Ok(false);
    }
    std::fs::remove_dir_all(&partial).map_err(|source| CompressError::Io {
        path: partial,
        source,
    })?;
    Ok(true)
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

/// One finished group: its package (one decoder), its report line, the rate-control
/// tries of each member (in member order) and its loss curve.
struct GroupDone {
    package: NtcPackage,
    report: GroupReport,
    tries: Vec<Vec<RateTry>>,
    curves: Vec<(usize, u64, f64, f64)>,
}

/// What every group's training shares: the run's inputs, settings and partial folder.
struct GroupRun<'a> {
    sets: &'a [TextureSet],
    constants: &'a [[f32; CHANNELS]],
    groups: &'a [Vec<usize>],
    opts: &'a CompressOptions,
    partial: &'a Path,
    resuming: bool,
    /// BLAKE3 of the partial folder's manifest: the key of every finished group's seal
    /// ([`group_seal`]).
    owner: [u8; 32],
    /// Rate control's pooled PSNR target per set.
    targets: &'a [Option<f64>],
    /// The loss weights of each group.
    weights: &'a [LossWeights],
    /// Training FLOPs per sample of the recipe's decoder.
    flops: f64,
}

impl GroupRun<'_> {
    /// Group `g` on `device` (`ctx`): read back finished from the partial folder, or
    /// trained (continuing its checkpoint when resuming) and saved there. `stop` ends the
    /// training at its next chunk with the checkpoint saved.
    fn group(
        &self,
        device: usize,
        ctx: &GpuContext,
        g: usize,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(&TrainProgress),
    ) -> Result<GroupDone, CompressError> {
        let opts = self.opts;
        let members = &self.groups[g];
        let done = self.partial.join(format!("group{g}.ntc"));
        let ckpt = self.partial.join(format!("group{g}.ckpt"));
        let steps = group_main_steps(opts.steps, members.len());
        let seal = self.partial.join(format!("group{g}.seal"));
        // The seal is written before the package, so a finished group always has one
        // (a kill in between leaves a seal alone, and the group is trained again).
        if self.resuming && done.exists() {
            let io = |path: &Path| {
                let path = path.to_path_buf();
                move |source| CompressError::Io { path, source }
            };
            let bytes = std::fs::read(&done).map_err(io(&done))?;
            let sealed = match std::fs::read_to_string(&seal) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => return Err(io(&seal)(e)),
            };
            if sealed.trim() != group_seal(&self.owner, g, &bytes) {
                return Err(CompressError::ForeignGroup {
                    path: done,
                    reason: format!(
                        "it is not group {g} as this run wrote it ({} is missing or does not \
                         match)",
                        seal.display()
                    ),
                });
            }
            let finished =
                NtcPackage::from_bytes(&bytes).map_err(|source| CompressError::Partial {
                    path: done.clone(),
                    source,
                })?;
            if finished.decoders.len() != 1 || finished.materials.len() != members.len() {
                return Err(CompressError::ForeignGroup {
                    path: done,
                    reason: format!(
                        "{} decoders and {} materials for a group of {} sets",
                        finished.decoders.len(),
                        finished.materials.len(),
                        members.len()
                    ),
                });
            }
            let preset = finished
                .materials
                .first()
                .map_or(opts.train.model.preset, |m| {
                    preset_of(&m.layout, opts.train.model.preset)
                });
            return Ok(GroupDone {
                package: finished,
                report: GroupReport {
                    sets: members.clone(),
                    steps,
                    preset,
                    loss_weights: self.weights[g],
                    kernel: None,
                    device: None,
                    seconds: 0.0,
                    texels_per_second: 0.0,
                    tflops: 0.0,
                    final_loss: f64::NAN,
                },
                tries: vec![Vec::new(); members.len()],
                curves: Vec::new(),
            });
        }
        let group_sets: Vec<TextureSet> = members.iter().map(|&i| self.sets[i].clone()).collect();
        let seed = opts.seed.wrapping_add(g as u64);
        let mut presets = opts.rate.presets(opts.train.model.preset);
        let mut resume = if self.resuming && ckpt.exists() {
            let checkpoint = Checkpoint::load(&ckpt)?;
            // An interrupted try resumes where rate control was: its smaller presets had
            // missed the target.
            let at = presets
                .iter()
                .position(|&p| p == checkpoint.config.model.preset)
                .ok_or_else(|| CheckpointError::File {
                    path: ckpt.clone(),
                    reason: format!(
                        "it was trained at preset {:?}, which this run does not try",
                        checkpoint.config.model.preset
                    ),
                })?;
            let mut train = opts.train.clone();
            train.model.preset = presets[at];
            train.loss_weights = self.weights[g];
            checkpoint
                .fits(&train, steps, seed)
                .map_err(|reason| CheckpointError::File {
                    path: ckpt.clone(),
                    reason,
                })?;
            presets.drain(..at);
            Some(checkpoint)
        } else {
            None
        };
        let t0 = Instant::now();
        let targets: Vec<Option<f64>> = members.iter().map(|&s| self.targets[s]).collect();
        let mut tries = vec![Vec::new(); members.len()];
        // Rate control: short probes predict the smallest preset that reaches the
        // targets, so that usually one full training follows (a resumed full try skips
        // them).
        if presets.len() > 1 && resume.is_none() {
            let at = self.probe(
                ctx,
                &group_sets,
                g,
                &presets,
                steps,
                seed,
                stop,
                &targets,
                &mut tries,
            )?;
            presets.drain(..at);
        }
        let mut kept = None;
        for (i, &preset) in presets.iter().enumerate() {
            let mut rates = Vec::new();
            let mut last = None;
            let mut try_curves = Vec::new();
            let result = self.train(
                ctx,
                &group_sets,
                g,
                preset,
                steps,
                seed,
                TrainOptions {
                    log_every: opts.log_every,
                    cancel: Some(stop),
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
                    progress(p);
                },
            );
            let trained = match result {
                Ok(t) => t,
                Err(GpuTrainError::Cancelled(checkpoint)) => {
                    checkpoint.save(&ckpt)?;
                    return Err(CompressError::Interrupted {
                        partial: self.partial.to_path_buf(),
                    });
                }
                Err(e) => return Err(e.into()),
            };
            let reached = record_tries(&trained, preset, steps, opts.rate, &targets, &mut tries)
                .iter()
                .all(|r| *r >= 0.0);
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
        train.loss_weights = self.weights[g];
        let mut one = NtcPackage::new(train.model.clone())?;
        let group_constants: Vec<[f32; CHANNELS]> =
            members.iter().map(|&i| self.constants[i]).collect();
        one.add_group(&kept.trained, &group_constants)?;
        let bytes = one.to_bytes()?;
        let write = |path: &Path, bytes: &[u8]| {
            crate::io::write_atomic(path, bytes).map_err(|source| CompressError::Io {
                path: path.to_path_buf(),
                source,
            })
        };
        write(&seal, group_seal(&self.owner, g, &bytes).as_bytes())?;
        write(&done, &bytes)?;
        let _ = std::fs::remove_file(&ckpt);
        let texels_per_second = if kept.rates.is_empty() {
            0.0
        } else {
            kept.rates.iter().sum::<f64>() / kept.rates.len() as f64
        };
        Ok(GroupDone {
            package: one,
            report: GroupReport {
                sets: members.clone(),
                steps,
                preset: kept.preset,
                loss_weights: self.weights[g],
                kernel: Some(
                    opts.kernel
                        .unwrap_or_else(|| TrainKernel::best(ctx, &train.model)),
                ),
                device: Some(device),
                seconds: t0.elapsed().as_secs_f64(),
                texels_per_second,
                tflops: texels_per_second * self.flops / 1e12,
                final_loss: kept.last.map_or(f64::NAN, |p| p.loss),
            },
            tries,
            curves: kept.curves,
        })
    }
}

impl GroupRun<'_> {
    /// Train group `g` (`sets`) at `preset` for `steps` main steps with the run's recipe
    /// and the group's loss weights.
    #[expect(
        clippy::too_many_arguments,
        reason = "the trainer's own arguments plus the group, preset and budget it trains at"
    )]
    fn train(
        &self,
        ctx: &GpuContext,
        sets: &[TextureSet],
        g: usize,
        preset: Preset,
        steps: u64,
        seed: u64,
        options: TrainOptions,
        progress: &mut dyn FnMut(&TrainProgress),
    ) -> Result<TrainedGroup, GpuTrainError> {
        let mut train = self.opts.train.clone();
        train.model.preset = preset;
        train.loss_weights = self.weights[g];
        train_gpu(ctx, sets, &train, steps, seed, options, progress)
    }

    /// Rate control's prediction: each preset in turn (smallest first) trains a probe of
    /// `steps / PROBE_DIVISOR` main steps; the smallest preset also one of half that, and
    /// the PSNR gained by that doubling, per member, extends the probe's PSNR over the
    /// doublings left to `steps` (PSNR grows about linearly in the logarithm of the
    /// budget). Returns the index of the first preset at which every member's predicted
    /// PSNR reaches its target (the last when none does); probing stops there. An
    /// interrupted probe is not kept: a resumed run probes again.
    #[expect(
        clippy::too_many_arguments,
        reason = "one probe's group, presets, budget and targets, each a separate input"
    )]
    fn probe(
        &self,
        ctx: &GpuContext,
        sets: &[TextureSet],
        g: usize,
        presets: &[Preset],
        steps: u64,
        seed: u64,
        stop: &AtomicBool,
        targets: &[Option<f64>],
        tries: &mut [Vec<RateTry>],
    ) -> Result<usize, CompressError> {
        let short = (steps / PROBE_DIVISOR).max(2);
        let doublings = (steps as f64 / short as f64).log2().max(0.0);
        let run = |preset, probe_steps| {
            let options = TrainOptions {
                log_every: self.opts.log_every,
                cancel: Some(stop),
                resume: None,
                gpu: GpuTrainerOptions {
                    kernel: self.opts.kernel,
                    ..GpuTrainerOptions::default()
                },
            };
            match self.train(
                ctx,
                sets,
                g,
                preset,
                probe_steps,
                seed,
                options,
                &mut |_| {},
            ) {
                Ok(t) => Ok(t),
                Err(GpuTrainError::Cancelled(_)) => Err(CompressError::Interrupted {
                    partial: self.partial.to_path_buf(),
                }),
                Err(e) => Err(e.into()),
            }
        };
        let mut gains: Option<Vec<f64>> = None;
        for (i, &preset) in presets.iter().enumerate() {
            let trained = run(preset, short)?;
            let margins = record_tries(&trained, preset, short, self.opts.rate, targets, tries);
            if gains.is_none() {
                let half = run(preset, (short / 2).max(1))?;
                gains = Some(
                    trained
                        .materials
                        .iter()
                        .zip(&half.materials)
                        .map(|(a, b)| match (a.quality.pooled(), b.quality.pooled()) {
                            (Some(a), Some(b)) => (a.db - b.db).max(0.0),
                            _ => 0.0,
                        })
                        .collect(),
                );
            }
            let predicted_reach = margins
                .iter()
                .zip(gains.iter().flatten())
                .all(|(margin, gain)| margin + gain * doublings >= 0.0);
            if predicted_reach {
                return Ok(i);
            }
        }
        Ok(presets.len().saturating_sub(1))
    }
}

/// Rate control's probes train `1 / PROBE_DIVISOR` of the main steps.
pub const PROBE_DIVISOR: u64 = 16;

/// Record one try of `trained` (at `preset`, `steps` main steps) in each member's
/// `tries` (under rate control), and return each member's margin to its target in dB
/// (pooled PSNR − target; +∞ without a target, −∞ when nothing was measured).
fn record_tries(
    trained: &TrainedGroup,
    preset: Preset,
    steps: u64,
    rate: RateControl,
    targets: &[Option<f64>],
    tries: &mut [Vec<RateTry>],
) -> Vec<f64> {
    trained
        .materials
        .iter()
        .zip(targets)
        .zip(tries.iter_mut())
        .map(|((m, target), tried)| {
            let pooled = m.quality.pooled();
            if rate != RateControl::Fixed {
                tried.push(RateTry {
                    preset,
                    steps,
                    psnr_pooled: pooled,
                });
            }
            match (target, pooled) {
                (None, _) => f64::INFINITY,
                (Some(t), Some(p)) => p.db - t,
                (Some(_), None) => f64::NEG_INFINITY,
            }
        })
        .collect()
}

/// Compress `sets` in `groups` (indices into `sets`) on `devices` (one or more; see
/// [`super::parallel`]), writing the package to `out`. `progress` hears every group's
/// training progress, naming its device.
#[expect(
    clippy::too_many_arguments,
    reason = "what a compression trains, how, on which devices, where it writes, its cancel \
              flag and progress"
)]
pub fn compress(
    devices: &[GpuContext],
    sets: &[TextureSet],
    constants: &[[f32; CHANNELS]],
    groups: &[Vec<usize>],
    opts: &CompressOptions,
    inputs: &str,
    out: &Path,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(&GroupProgress),
) -> Result<(NtcPackage, CompressReport), CompressError> {
    let all: Vec<usize> = (0..groups.len()).collect();
    compress_selected(
        devices,
        sets,
        constants,
        groups,
        &all,
        opts,
        inputs,
        out,
        cancel,
        progress,
        &mut |package| Ok(package.write(out)?),
    )
}

/// [`compress`] of the groups `selection` only (strictly ascending indices into
/// `groups`), as a shard does: group `g` is trained exactly as in a run of every group
/// (seed `seed + g`, progress in `<out>.partial/group<g>.*`), on whichever of `devices`
/// is free (largest groups first when there are several); the result holds the selected
/// groups' decoders in `selection` order, and `finish` writes it to `out` before the
/// partial folder is removed.
#[expect(
    clippy::too_many_arguments,
    reason = "`compress`'s arguments plus the selection and how the result is written"
)]
pub fn compress_selected(
    devices: &[GpuContext],
    sets: &[TextureSet],
    constants: &[[f32; CHANNELS]],
    groups: &[Vec<usize>],
    selection: &[usize],
    opts: &CompressOptions,
    inputs: &str,
    out: &Path,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(&GroupProgress),
    finish: &mut dyn FnMut(&NtcPackage) -> Result<(), CompressError>,
) -> Result<(NtcPackage, CompressReport), CompressError> {
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
        for (set, slot) in sets.iter().zip(&mut bcn) {
            *slot = Some(bcn_baselines(set, flip_bcn));
        }
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
                bcn: if opts.skip_bcn {
                    Vec::new()
                } else {
                    bcn[s]
                        .take()
                        .unwrap_or_else(|| bcn_baselines(&sets[s], flip_bcn))
                },
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
        mean_bits_per_texel: materials.iter().map(|m| m.bits_per_texel).sum::<f64>()
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

/// ꟻLIP of every material of `package` at mip 0 (decoded from the package on the CPU,
/// rounded to 8 bits) against `sets[i]`, the set of material `i`; the materials are
/// decoded in parallel.
fn ntc_flip(
    package: &NtcPackage,
    sets: &[&TextureSet],
) -> Result<Vec<Option<FlipReport>>, CompressError> {
    let mut models = Vec::with_capacity(package.decoders.len());
    let mut jobs = Vec::new();
    for d in 0..package.decoders.len() {
        let (model, indices) = package.group_model(d as u32)?;
        jobs.extend(
            indices
                .into_iter()
                .enumerate()
                .map(|(local, i)| (d, local, i)),
        );
        models.push(model);
    }
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, jobs.len().max(1));
    let done: Vec<Result<Vec<(usize, FlipReport)>, CompressError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let (models, jobs) = (&models, &jobs);
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for &(d, local, i) in jobs.iter().skip(w).step_by(workers) {
                        let (Some(set), Some(mip0)) =
                            (sets.get(i), sets.get(i).and_then(|s| s.mips.first()))
                        else {
                            continue;
                        };
                        let decoded: Vec<u8> = decode_mip(&models[d], local, 0)?
                            .into_iter()
                            .map(quantize_u8)
                            .collect();
                        let report = flip_set_mip(
                            &mip0.texels,
                            &decoded,
                            mip0.width,
                            mip0.height,
                            set.present,
                        );
                        out.push((i, report));
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut flips = vec![None; package.materials.len()];
    for part in done {
        for (i, report) in part? {
            flips[i] = Some(report);
        }
    }
    Ok(flips)
}

impl CompressReport {
    /// Every file [`write`](Self::write) writes for `path`: the JSON, the Markdown table,
    /// the curves CSV and the chart.
    pub fn files(path: &Path) -> [PathBuf; 4] {
        [
            path.to_path_buf(),
            path.with_extension("md"),
            path.with_extension("curves.csv"),
            path.with_extension("curves.png"),
        ]
    }

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
        write_panels_png(
            &path.with_extension("curves.png"),
            &self.curve_panels(),
            1200,
            420,
        )?;
        Ok(())
    }

    /// The loss curves as two charts: loss (log scale) against step on the left, the
    /// PSNR estimate on the right, one line per group.
    pub fn curve_panels(&self) -> [Panel; 2] {
        let groups = self.curves.iter().map(|c| c.0).max().map_or(0, |g| g + 1);
        let series = |value: fn(&(usize, u64, f64, f64)) -> f64| -> Vec<Series> {
            (0..groups)
                .map(|g| Series {
                    label: format!("group {g}"),
                    points: self
                        .curves
                        .iter()
                        .filter(|c| c.0 == g)
                        .map(|c| (c.1 as f64, value(c)))
                        .collect(),
                })
                .collect()
        };
        [
            Panel {
                title: "training loss".into(),
                x_label: "step".into(),
                y_label: "loss".into(),
                log_y: true,
                series: series(|c| c.2),
                ..Panel::default()
            },
            Panel {
                title: "PSNR estimate (dB)".into(),
                x_label: "step".into(),
                y_label: "dB".into(),
                series: series(|c| c.3),
                ..Panel::default()
            },
        ]
    }

    /// The loss curves as CSV: `group,step,loss,psnr_estimate`.
    pub fn curves_csv(&self) -> String {
        let mut s = String::from("group,step,loss,psnr_estimate\n");
        for (g, step, loss, psnr) in &self.curves {
            s.push_str(&format!("{g},{step},{loss},{psnr}\n"));
        }
        s
    }

    /// Markdown: the warnings of missed targets, a table of one row per material, NTC
    /// next to the BCn baselines by pooled PSNR (dB at mip 0, over every present channel)
    /// and mean ꟻLIP, then a table of the PSNR per channel group and, when measured, one
    /// of the ꟻLIP per image. An exact match reads `99.00 (exact)`.
    pub fn markdown(&self) -> String {
        let baselines = ["BC1/BC5", "BC7/BC5", PROTOCOL];
        let mut s = String::new();
        if !self.warnings.is_empty() {
            s.push_str("**Warnings**\n\n");
            for w in &self.warnings {
                s.push_str(&format!("- {w}\n"));
            }
            s.push('\n');
        }
        s.push_str("| material | size | preset | NTC bpt | NTC PSNR | NTC ꟻLIP |");
        for b in baselines {
            s.push_str(&format!(" {b} bpt | {b} PSNR | {b} ꟻLIP |"));
        }
        s.push_str(&format!("\n|{}\n", "---|".repeat(6 + 3 * baselines.len())));
        let f = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.2}"));
        let fl = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.4}"));
        let p = |v: Option<Psnr>| v.map_or("–".to_string(), |v| v.to_string());
        let flip_of = |r: &Option<FlipReport>| r.as_ref().and_then(|r| r.mean);
        for m in &self.materials {
            let bcn = |name: &str| m.bcn.iter().find(|b| b.name == name);
            s.push_str(&format!(
                "| {} | {}×{} | {} | {:.2} | {} | {} |",
                m.name,
                m.width,
                m.height,
                preset_name(m.preset),
                m.bits_per_texel,
                p(m.psnr.pooled),
                fl(flip_of(&m.flip))
            ));
            for b in baselines.map(bcn) {
                s.push_str(&format!(
                    " {} | {} | {} |",
                    f(b.map(|b| b.bits_per_texel)),
                    p(b.and_then(|b| b.psnr_mip0.pooled)),
                    fl(b.and_then(|b| flip_of(&b.flip_mip0)))
                ));
            }
            s.push('\n');
        }
        s.push_str("\nPSNR per channel group (dB, mip 0):\n\n| material | group | NTC |");
        for b in baselines {
            s.push_str(&format!(" {b} |"));
        }
        s.push_str(&format!("\n|{}\n", "---|".repeat(3 + baselines.len())));
        for m in &self.materials {
            for g in &m.psnr.groups {
                s.push_str(&format!("| {} | {} | {} |", m.name, g.group, g.psnr));
                for b in baselines {
                    let bc = m.bcn.iter().find(|r| r.name == b);
                    s.push_str(&format!(
                        " {} |",
                        p(bc.and_then(|r| r.psnr_mip0.group(&g.group)))
                    ));
                }
                s.push('\n');
            }
        }
        if self.materials.iter().any(|m| m.flip.is_some()) {
            s.push_str(
                "\nꟻLIP per image (mean, mip 0; lower is better):\n\n| material | image | NTC |",
            );
            for b in baselines {
                s.push_str(&format!(" {b} |"));
            }
            s.push_str(&format!("\n|{}\n", "---|".repeat(3 + baselines.len())));
            for m in &self.materials {
                for image in m.flip.iter().flat_map(|f| &f.images) {
                    s.push_str(&format!(
                        "| {} | {} | {:.4} |",
                        m.name, image.image, image.mean
                    ));
                    for b in baselines {
                        let bc = m.bcn.iter().find(|r| r.name == b);
                        s.push_str(&format!(
                            " {} |",
                            fl(bc.and_then(|r| r.flip_mip0.as_ref()?.image(&image.image)))
                        ));
                    }
                    s.push('\n');
                }
            }
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

    fn report(curves: Vec<(usize, u64, f64, f64)>) -> CompressReport {
        CompressReport {
            adapter: "test".into(),
            inputs: "a.csv".into(),
            steps: 20,
            seed: 1,
            train: TrainConfig::default(),
            rate: RateControl::Fixed,
            groups: Vec::new(),
            materials: Vec::new(),
            mean_psnr: None,
            mean_bits_per_texel: 0.0,
            mean_flip: None,
            warnings: Vec::new(),
            seconds: 0.0,
            curves,
        }
    }

    #[test]
    fn report_files_and_curve_panels() {
        let curves: Vec<_> = (0..2)
            .flat_map(|g| {
                (1..=20u64).map(move |s| (g, s * 10, 0.1 / s as f64, 20.0 + s as f64 + g as f64))
            })
            .collect();
        let r = report(curves);
        let [loss, psnr] = r.curve_panels();
        assert!(loss.log_y && !psnr.log_y);
        assert_eq!(loss.series.len(), 2);
        assert_eq!(loss.series[1].label, "group 1");
        assert_eq!(loss.series[1].points[0], (10.0, 0.1));
        assert_eq!(psnr.series[0].points[19], (200.0, 40.0));
        let dir = std::env::temp_dir().join(format!("neurotex-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        r.write(&path).unwrap();
        for ext in ["json", "md", "curves.csv", "curves.png"] {
            assert!(path.with_extension(ext).is_file(), "{ext}");
        }
        let png = image::open(path.with_extension("curves.png")).unwrap();
        assert_eq!((png.width(), png.height()), (1200, 420));
        let csv = std::fs::read_to_string(path.with_extension("curves.csv")).unwrap();
        assert!(
            csv.starts_with("group,step,loss,psnr_estimate\n0,10,0.1,21\n"),
            "{csv}"
        );
        let err = r.write(&dir.join("missing/r.json")).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }

    #[test]
    fn markdown_compares_pooled_psnr_and_lists_groups() {
        let ntc = PsnrReport::from_groups([(0, 1e-3, 300), (2, 0.0, 200)]);
        let bc = PsnrReport::from_groups([(0, 1e-2, 300), (2, 1e-4, 200)]);
        let mut r = report(Vec::new());
        r.materials.push(MaterialReport {
            name: "wood".into(),
            group: 0,
            width: 8,
            height: 8,
            channels: "base_color+normal".into(),
            bits_per_texel: 2.0,
            preset: Preset::High,
            psnr: ntc,
            target_psnr: Some(33.0),
            target_reached: Some(false),
            rate_tries: vec![
                RateTry {
                    preset: Preset::Low,
                    steps: 1,
                    psnr_pooled: Some(Psnr::from_mse(5e-4)),
                },
                RateTry {
                    preset: Preset::Low,
                    steps: 20,
                    psnr_pooled: Some(Psnr::from_mse(1e-3)),
                },
                RateTry {
                    preset: Preset::High,
                    steps: 20,
                    psnr_pooled: Some(Psnr::from_mse(6e-4)),
                },
            ],
            flip: Some(FlipReport {
                mean: Some(0.05),
                images: vec![crate::texture::flip::ImageFlip {
                    image: "base_color".into(),
                    mean: 0.05,
                }],
            }),
            bcn: vec![BcnResult {
                name: "BC1/BC5",
                bytes: 64,
                bits_per_texel: 8.0,
                psnr_mip0: bc.clone(),
                psnr_chain: bc,
                flip_mip0: None,
            }],
        });
        r.warnings = r
            .materials
            .iter()
            .filter_map(MaterialReport::missed)
            .collect();
        let md = r.markdown();
        // Pooled NTC: (300 · 1e-3 + 200 · 0) / 500 = 6e-4 → 32.22 dB; pooled BC1/BC5:
        // (300 · 1e-2 + 200 · 1e-4) / 500 = 6.04e-3 → 22.19 dB.
        assert!(
            md.contains(
                "| wood | 8×8 | high | 2.00 | 32.22 | 0.0500 | 8.00 | 22.19 | – | – | – | – | – | – | – |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| wood | base_color | 30.00 | 20.00 | – | – |"),
            "{md}"
        );
        assert!(
            md.contains("| wood | normal | 99.00 (exact) | 40.00 | – | – |"),
            "{md}"
        );
        assert!(
            md.contains("| wood | base_color | 0.0500 | – | – | – |"),
            "{md}"
        );
        // The missed target names the set, its best full try (32.22 dB at high; not the
        // probe) and the target.
        assert_eq!(
            r.warnings,
            [
                "set `wood` missed its target: best pooled PSNR 32.22 dB (preset high) < target 33.00 dB"
            ]
        );
        assert!(
            md.starts_with("**Warnings**\n\n- set `wood` missed"),
            "{md}"
        );
        r.materials[0].target_reached = Some(true);
        assert_eq!(r.materials[0].missed(), None);
    }

    /// A one-set run over the file `input`.
    fn run_manifest(input: &Path, steps: u64) -> PartialManifest {
        rate_manifest(input, steps, RateControl::Fixed)
    }

    /// A one-set run over the file `input` under rate control `rate`.
    fn rate_manifest(input: &Path, steps: u64, rate: RateControl) -> PartialManifest {
        let set = TextureSet::neutral();
        let opts = CompressOptions {
            train: TrainConfig::default(),
            steps,
            seed: 1,
            resume: false,
            skip_bcn: false,
            log_every: 100,
            rate,
            kernel: None,
            input_files: vec![input.to_path_buf()],
            loss_weights: LossWeighting::Fixed,
            flip: false,
        };
        PartialManifest::of_run(&[set], &[[1.0; CHANNELS]], &[vec![0]], &opts).expect("manifest")
    }

    #[test]
    fn partial_folders_are_only_reused_or_deleted_when_they_match() {
        let dir = std::env::temp_dir().join(format!("neurotex-partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let input = dir.join("albedo.png");
        std::fs::write(&input, b"first").expect("write");
        let partial = dir.join("out.ntc.partial");

        // Someone else's folder: refused and left alone.
        std::fs::create_dir_all(&partial).expect("dir");
        std::fs::write(partial.join("precious.txt"), b"keep").expect("write");
        let e = prepare_partial(&partial, &run_manifest(&input, 10), false).unwrap_err();
        assert!(matches!(e, CompressError::PartialNotOurs { .. }), "{e}");
        assert!(partial.join("precious.txt").exists());
        // A damaged marker is reported as damaged, not as missing.
        std::fs::write(
            partial.join(PARTIAL_MANIFEST),
            b"{\"format\": \"neurotex-com",
        )
        .expect("w");
        let e = prepare_partial(&partial, &run_manifest(&input, 10), true).unwrap_err();
        assert!(matches!(e, CompressError::PartialDamaged { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("is damaged") && msg.contains(PARTIAL_MANIFEST),
            "{msg}"
        );
        assert!(partial.join("precious.txt").exists());
        std::fs::remove_dir_all(&partial).expect("clean");

        // Ours: created with the marker, resumed when it matches.
        let m = run_manifest(&input, 10);
        assert!(!prepare_partial(&partial, &m, true).expect("fresh"));
        std::fs::write(partial.join("group0.ntc"), b"done").expect("write");
        assert!(prepare_partial(&partial, &m, true).expect("resume"));
        assert!(partial.join("group0.ntc").exists());

        // Other settings (the steps per set, rate control): refused, untouched.
        let e = prepare_partial(&partial, &run_manifest(&input, 11), false).unwrap_err();
        assert!(e.to_string().contains("other settings"), "{e}");
        for rate in [
            RateControl::TargetPsnr(40.0),
            RateControl::MatchBcn(BcnTarget::Bc1),
        ] {
            let e = prepare_partial(&partial, &rate_manifest(&input, 10, rate), true).unwrap_err();
            assert!(e.to_string().contains("other settings"), "{e}");
        }
        assert!(partial.join("group0.ntc").exists());
        // An input that changed: refused, named, untouched.
        std::fs::write(&input, b"second!").expect("write");
        let e = prepare_partial(&partial, &run_manifest(&input, 10), true).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("albedo.png") && msg.contains("changed size"),
            "{msg}"
        );
        assert!(partial.join("group0.ntc").exists());

        // Matching without resume: emptied for a fresh start.
        std::fs::remove_dir_all(&partial).expect("clean");
        let m = run_manifest(&input, 10);
        assert!(!prepare_partial(&partial, &m, false).expect("fresh"));
        std::fs::write(partial.join("group0.ntc"), b"done").expect("write");
        assert!(!prepare_partial(&partial, &m, false).expect("restart"));
        assert!(!partial.join("group0.ntc").exists());

        // The cache's clean-up deletes only folders with the marker.
        assert!(remove_partial_if_ours(&dir.join("out.ntc")).expect("ours"));
        std::fs::create_dir_all(&partial).expect("dir");
        assert!(!remove_partial_if_ours(&dir.join("out.ntc")).expect("not ours"));
        assert!(partial.exists());
        std::fs::remove_dir_all(&dir).ok();
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

    #[test]
    fn partial_dir_sits_next_to_the_output() {
        assert_eq!(
            partial_dir(Path::new("/a/b/room.ntc")),
            Path::new("/a/b/room.ntc.partial")
        );
    }
}
