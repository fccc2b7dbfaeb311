//! Training checkpoints: a whole training state ([`Checkpoint`]: settings, model, Adam's
//! moments, step, the losses so far) and its file format.
//!
//! File layout (little-endian): magic `NTCCKPT\0`, version `u32`, header length `u32`,
//! the JSON header (settings, step counts, latent layouts), then the
//! arrays — decoder parameters, m, v as f32; per material latents, m, v as f32; the
//! losses as f64 — and a CRC-32 of everything before it. Files are written through
//! [`crate::io::write_atomic`] and read through the package format's bounded reader
//! (`Cursor`): the CRC, the header and the arrays' total length are checked before any
//! array is read. A file that cannot be used is an error naming it and the remedy
//! (delete it, or the whole `<out>.partial/` folder of `neurotex compress`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::cpu::AdamState;
use super::schedule::Schedule;
use super::{TrainConfig, TrainError};
use crate::ntc::format::{Cursor, NtcFormatError};
use crate::ntc::model::{
    DecoderWeights, GridShape, GroupModel, LatentLayout, LatentPyramid, MipPair,
};
use crate::texture::TextureSet;

/// Errors of checkpoints: one that does not fit the run or the data, a damaged file, or
/// a file that cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The settings in a checkpoint are invalid.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// A checkpoint that does not fit the run or the data, or damaged bytes.
    #[error("checkpoint: {0}")]
    Invalid(String),
    /// Reading or writing a checkpoint file failed.
    #[error("checkpoint file {}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A checkpoint file that is damaged, not a checkpoint, or of another run.
    #[error(
        "cannot resume from the checkpoint {}: {reason}; delete it (or the whole folder {}) \
         to train this group from the start",
        path.display(),
        path.parent().unwrap_or(path).display()
    )]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// Adam's moments of a whole group: one block for the decoder, one per material.
#[derive(Clone, Debug, PartialEq)]
pub struct AdamMoments {
    /// The decoder's moments and step count.
    pub decoder: AdamState,
    /// Each material's latent moments and step count, in group order.
    pub latents: Vec<AdamState>,
}

impl AdamMoments {
    /// Zero moments shaped like `model`.
    pub fn zeros(model: &GroupModel) -> Self {
        AdamMoments {
            decoder: AdamState::new(model.decoder().params().len()),
            latents: model
                .pyramids()
                .iter()
                .map(|p| AdamState::new(p.values().len()))
                .collect(),
        }
    }
}

/// A whole training state: enough to continue a run exactly where it stopped.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// The run's settings.
    pub config: TrainConfig,
    /// Main steps of the run (the schedule is `config.schedule(steps, k)`).
    pub steps: u64,
    /// The run's seed (initialisation, batch sampling, QAT noise).
    pub seed: u64,
    /// The next global step to run (0 for a fresh run).
    pub step: u64,
    /// The model as of `step`.
    pub model: GroupModel,
    /// Adam's moments as of `step`.
    pub adam: AdamMoments,
    /// The mean batch loss of every step before `step`.
    pub losses: Vec<f64>,
}

/// Magic bytes of a checkpoint file.
const CHECKPOINT_MAGIC: [u8; 8] = *b"NTCCKPT\0";

/// Version of the checkpoint file layout.
const CHECKPOINT_VERSION: u32 = 1;

/// Largest JSON header of a checkpoint file.
const MAX_CHECKPOINT_META: usize = 1 << 20;

/// The JSON header of a checkpoint file: everything but the arrays.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckpointMeta {
    config: TrainConfig,
    steps: u64,
    seed: u64,
    step: u64,
    decoder_adam_step: u32,
    latent_adam_steps: Vec<u32>,
    layouts: Vec<LayoutMeta>,
    loss_count: u64,
}

/// A latent layout in a checkpoint header.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LayoutMeta {
    width: u32,
    height: u32,
    features: u32,
    grids: Vec<(u32, u32)>,
    pairs: Vec<(u32, u32)>,
}

impl LayoutMeta {
    fn of(layout: &LatentLayout) -> Self {
        LayoutMeta {
            width: layout.width(),
            height: layout.height(),
            features: layout.features(),
            grids: layout.grids().iter().map(|g| (g.width, g.height)).collect(),
            pairs: layout.pairs().iter().map(|p| (p.fine, p.coarse)).collect(),
        }
    }

    fn layout(&self) -> Result<LatentLayout, TrainError> {
        Ok(LatentLayout::from_parts(
            self.width,
            self.height,
            self.features,
            self.grids
                .iter()
                .map(|&(width, height)| GridShape { width, height })
                .collect(),
            self.pairs
                .iter()
                .map(|&(fine, coarse)| MipPair { fine, coarse })
                .collect(),
        )?)
    }
}

impl Checkpoint {
    /// The start of a run from `model`: step 0, zero moments, no losses.
    pub fn new(config: &TrainConfig, model: GroupModel, steps: u64, seed: u64) -> Self {
        Checkpoint {
            config: config.clone(),
            steps,
            seed,
            step: 0,
            adam: AdamMoments::zeros(&model),
            model,
            losses: Vec::new(),
        }
    }

    /// The start of a run initialised exactly as [`train_cpu`](super::train_cpu) does:
    /// the standard layout of every set (its mips checked against it) and
    /// [`GroupModel::init`] with `seed`.
    pub fn fresh(
        sets: &[TextureSet],
        config: &TrainConfig,
        steps: u64,
        seed: u64,
    ) -> Result<Self, TrainError> {
        let model = super::cpu::initial_model(sets, config, seed)?;
        Ok(Self::new(config, model, steps, seed))
    }

    /// The checkpoint as bytes: magic `NTCCKPT\0`, version u32, header length u32, the
    /// JSON header (settings, step counts, latent layouts), then little-endian arrays —
    /// decoder parameters, m, v as f32; per material latents, m, v as f32; the losses as
    /// f64 — and a CRC-32 of everything before it.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CheckpointError> {
        let meta = CheckpointMeta {
            config: self.config.clone(),
            steps: self.steps,
            seed: self.seed,
            step: self.step,
            decoder_adam_step: self.adam.decoder.step,
            latent_adam_steps: self.adam.latents.iter().map(|s| s.step).collect(),
            layouts: self
                .model
                .pyramids()
                .iter()
                .map(|p| LayoutMeta::of(p.layout()))
                .collect(),
            loss_count: self.losses.len() as u64,
        };
        let json = serde_json::to_vec(&meta)
            .map_err(|e| CheckpointError::Invalid(format!("header: {e}")))?;
        let json_len = u32::try_from(json.len())
            .map_err(|_| CheckpointError::Invalid("header too large".into()))?;
        let mut out = Vec::new();
        out.extend_from_slice(&CHECKPOINT_MAGIC);
        out.extend_from_slice(&CHECKPOINT_VERSION.to_le_bytes());
        out.extend_from_slice(&json_len.to_le_bytes());
        out.extend_from_slice(&json);
        let f32s = |out: &mut Vec<u8>, values: &[f32]| {
            out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        };
        f32s(&mut out, self.model.decoder().params());
        f32s(&mut out, &self.adam.decoder.m);
        f32s(&mut out, &self.adam.decoder.v);
        for (pyramid, state) in self.model.pyramids().iter().zip(&self.adam.latents) {
            f32s(&mut out, pyramid.values());
            f32s(&mut out, &state.m);
            f32s(&mut out, &state.v);
        }
        out.extend(self.losses.iter().flat_map(|v| v.to_le_bytes()));
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        Ok(out)
    }

    /// Parse [`to_bytes`](Self::to_bytes) output through the package format's bounded
    /// reader (`Cursor`), checking the magic, version, CRC, every layout and the
    /// arrays' total length against the file length before reading any of them.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CheckpointError> {
        let bad = |reason: &str| CheckpointError::Invalid(reason.to_owned());
        let cursor_error = |e: NtcFormatError| CheckpointError::Invalid(e.to_string());
        let (body, crc) = bytes
            .split_last_chunk::<4>()
            .ok_or_else(|| bad("file too short"))?;
        if body.len() < 16 || body[..8] != CHECKPOINT_MAGIC {
            return Err(bad("not a neurotex checkpoint (bad magic)"));
        }
        if crc32fast::hash(body) != u32::from_le_bytes(*crc) {
            return Err(bad("CRC mismatch: the file is damaged"));
        }
        let mut c = Cursor::new(body, 0, "checkpoint");
        c.array::<8>("magic").map_err(cursor_error)?;
        let version = c.u32("version").map_err(cursor_error)?;
        if version != CHECKPOINT_VERSION {
            return Err(CheckpointError::Invalid(format!(
                "version {version}, this build reads version {CHECKPOINT_VERSION}"
            )));
        }
        let json_len = c.u32("header length").map_err(cursor_error)? as usize;
        if json_len > MAX_CHECKPOINT_META {
            return Err(bad("header too large"));
        }
        let json = c.take(json_len, "header").map_err(cursor_error)?;
        let meta: CheckpointMeta = serde_json::from_slice(json)
            .map_err(|e| CheckpointError::Invalid(format!("header: {e}")))?;
        meta.config.validate()?;
        if meta.layouts.len() != meta.latent_adam_steps.len() || meta.layouts.is_empty() {
            return Err(bad("the header's material lists disagree or are empty"));
        }
        let layouts = meta
            .layouts
            .iter()
            .map(LayoutMeta::layout)
            .collect::<Result<Vec<_>, _>>()?;
        let decoder_len = meta.config.model.decoder_param_count();
        let loss_count = usize::try_from(meta.loss_count).map_err(|_| bad("too many losses"))?;
        let array_bytes = layouts
            .iter()
            .try_fold(3 * decoder_len, |acc, l| {
                l.value_count()
                    .checked_mul(3)
                    .and_then(|n| acc.checked_add(n))
            })
            .and_then(|values| values.checked_mul(4))
            .and_then(|b| loss_count.checked_mul(8)?.checked_add(b))
            .ok_or_else(|| bad("array sizes overflow"))?;
        if c.remaining() != array_bytes {
            return Err(CheckpointError::Invalid(format!(
                "the arrays take {} bytes, the header implies {array_bytes}",
                c.remaining()
            )));
        }
        let mut f32s = |n: usize, what: &str| c.f32s(n, what).map_err(cursor_error);
        let decoder =
            DecoderWeights::from_params(&meta.config.model, f32s(decoder_len, "decoder")?)
                .map_err(TrainError::from)?;
        let decoder_state = AdamState {
            m: f32s(decoder_len, "decoder m")?,
            v: f32s(decoder_len, "decoder v")?,
            step: meta.decoder_adam_step,
        };
        let mut pyramids = Vec::with_capacity(layouts.len());
        let mut latent_states = Vec::with_capacity(layouts.len());
        for (layout, &step) in layouts.into_iter().zip(&meta.latent_adam_steps) {
            let n = layout.value_count();
            let values = f32s(n, "latents")?;
            pyramids.push(LatentPyramid::new(layout, values).map_err(TrainError::from)?);
            latent_states.push(AdamState {
                m: f32s(n, "latent m")?,
                v: f32s(n, "latent v")?,
                step,
            });
        }
        let losses = c.f64s(loss_count, "losses").map_err(cursor_error)?;
        c.finish().map_err(cursor_error)?;
        let model = GroupModel::from_parts(meta.config.model.clone(), decoder, pyramids)
            .map_err(TrainError::from)?;
        let checkpoint = Checkpoint {
            config: meta.config,
            steps: meta.steps,
            seed: meta.seed,
            step: meta.step,
            model,
            adam: AdamMoments {
                decoder: decoder_state,
                latents: latent_states,
            },
            losses,
        };
        checkpoint.check()?;
        Ok(checkpoint)
    }

    /// Write the checkpoint to `path` (atomically: a temporary file, then a rename).
    pub fn save(&self, path: &Path) -> Result<(), CheckpointError> {
        crate::io::write_atomic(path, &self.to_bytes()?).map_err(|e| CheckpointError::Io {
            path: path.to_owned(),
            message: e.to_string(),
        })
    }

    /// Read and validate a checkpoint file. A file that is damaged or not a checkpoint is
    /// [`CheckpointError::File`], which names the file and how to start afresh.
    pub fn load(path: &Path) -> Result<Self, CheckpointError> {
        let bytes = std::fs::read(path).map_err(|e| CheckpointError::Io {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        Self::from_bytes(&bytes).map_err(|e| CheckpointError::File {
            path: path.to_owned(),
            reason: match e {
                CheckpointError::Invalid(reason) => reason,
                other => other.to_string(),
            },
        })
    }

    /// Whether this checkpoint continues a run of `steps` main steps with `seed` and
    /// `config`; the reason when it does not.
    pub fn fits(&self, config: &TrainConfig, steps: u64, seed: u64) -> Result<(), String> {
        if self.steps != steps || self.seed != seed || self.config != *config {
            return Err(format!(
                "it belongs to a run of {} steps with seed {} (and its own settings), \
                 not {steps} steps with seed {seed}",
                self.steps, self.seed
            ));
        }
        Ok(())
    }

    /// The schedule of the run.
    pub fn schedule(&self) -> Schedule {
        self.config
            .schedule(self.steps, self.model.pyramids().len())
    }

    /// Internal consistency: the model has the config's shape, the moments the model's,
    /// the step lies in the run and every step before it has a loss.
    pub(super) fn check(&self) -> Result<(), CheckpointError> {
        let bad = |reason: String| Err(CheckpointError::Invalid(reason));
        self.config.validate()?;
        if *self.model.config() != self.config.model {
            return bad("the model's shape differs from the configuration's".into());
        }
        let decoder_len = self.model.decoder().params().len();
        let state_ok = |s: &AdamState, n: usize| s.m.len() == n && s.v.len() == n;
        if !state_ok(&self.adam.decoder, decoder_len)
            || self.adam.latents.len() != self.model.pyramids().len()
            || !self
                .model
                .pyramids()
                .iter()
                .zip(&self.adam.latents)
                .all(|(p, s)| state_ok(s, p.values().len()))
        {
            return bad("Adam moments do not match the model".into());
        }
        let total = self.schedule().total_steps();
        if self.step > total {
            return bad(format!(
                "step {} is past the run's {total} steps",
                self.step
            ));
        }
        if self.losses.len() as u64 != self.step {
            return bad(format!(
                "{} losses for {} steps taken",
                self.losses.len(),
                self.step
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ntc::NtcConfig;

    fn checkpoint() -> Checkpoint {
        let config = TrainConfig {
            model: NtcConfig::tiny(),
            ..TrainConfig::default()
        };
        let layouts = vec![
            LatentLayout::new(8, 8, 4, config.model.preset, 4).expect("layout"),
            LatentLayout::new(4, 2, 3, config.model.preset, 4).expect("layout"),
        ];
        let model = GroupModel::init(&config.model, layouts, 3).expect("model");
        let mut c = Checkpoint::new(&config, model, 10, 5);
        c.step = 2;
        c.losses = vec![0.5, 0.25];
        c.adam.decoder.m[0] = 1.5;
        c.adam.latents[1].v[2] = 0.125;
        c
    }

    #[test]
    fn round_trip_through_bytes_and_files() {
        let c = checkpoint();
        let bytes = c.to_bytes().unwrap();
        assert_eq!(&bytes[..8], b"NTCCKPT\0");
        assert!(Checkpoint::from_bytes(&bytes).unwrap() == c);
        let dir = crate::io::test_dir("ckpt");
        let path = dir.join("group0.ckpt");
        c.save(&path).unwrap();
        assert!(Checkpoint::load(&path).unwrap() == c);
        assert!(c.fits(&c.config, 10, 5).is_ok());
        let reason = c.fits(&c.config, 11, 5).unwrap_err();
        assert!(reason.contains("10 steps with seed 5"), "{reason}");
    }

    #[test]
    fn damaged_files_name_the_file_and_the_remedy() {
        let c = checkpoint();
        let bytes = c.to_bytes().unwrap();
        // Every truncation and a flipped byte are errors, not panics.
        for cut in [0, 3, 7, 15, 20, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                Checkpoint::from_bytes(&bytes[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        let mut flipped = bytes.clone();
        flipped[bytes.len() / 2] ^= 1;
        let err = Checkpoint::from_bytes(&flipped).unwrap_err().to_string();
        assert!(err.contains("CRC mismatch"), "{err}");
        // A consistent CRC over arrays that are too short: the length check answers.
        let mut short = bytes[..bytes.len() - 12].to_vec();
        let crc = crc32fast::hash(&short);
        short.extend_from_slice(&crc.to_le_bytes());
        let err = Checkpoint::from_bytes(&short).unwrap_err().to_string();
        assert!(err.contains("the header implies"), "{err}");

        let dir = std::env::temp_dir().join(format!("neurotex-ckpt-bad-{}", std::process::id()));
        let partial = dir.join("room.ntc.partial");
        std::fs::create_dir_all(&partial).unwrap();
        let path = partial.join("group1.ckpt");
        std::fs::write(&path, &flipped).unwrap();
        let err = Checkpoint::load(&path).unwrap_err();
        assert!(matches!(err, CheckpointError::File { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("group1.ckpt") && msg.contains("CRC mismatch"),
            "{msg}"
        );
        assert!(
            msg.contains("delete") && msg.contains("room.ntc.partial"),
            "{msg}"
        );
        // A missing file is an i/o error naming it.
        let err = Checkpoint::load(&partial.join("none.ckpt"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("none.ckpt"), "{err}");
    }
}
