//! Training: settings, loss weights, batch sampling and quality measurement shared by
//! every trainer, the schedules ([`schedule`]), the CPU reference trainer ([`cpu`]) and
//! the checkpoints an interrupted run resumes from ([`checkpoint`]).
//!
//! A *group* is `k` texture sets that share one decoder; training a group fits `k`
//! latent pyramids and one decoder together, every batch mixing texels of all `k` sets.
//! The recipe (see [`schedule`]): Adam with separate latent and decoder learning rates
//! and cosine decay, QAT noise on the latents, gradual decoder freezing for shared
//! decoders, then quantised latents and a short decoder fine-tune.

pub mod checkpoint;
pub mod cpu;
pub mod gpu;
pub mod recipe;
pub mod schedule;

use serde::{Deserialize, Serialize};

use crate::ntc::model::{ConfigError, GroupModel, NtcConfig, OUTPUTS, SplitMix64};
use crate::ntc::quant::QuantError;
use crate::texture::metrics::{ErrorAccumulator, Psnr, PsnrReport};
use crate::texture::{ChannelMask, SetMip};

pub use cpu::{AdamParams, train_cpu};
pub use recipe::Recipe;
pub use schedule::{FreezeSchedule, Schedule};

/// Largest accepted batch size.
pub const MAX_BATCH: u32 = 1 << 24;

/// Largest accepted [`TrainConfig::sample_tile`].
pub const MAX_SAMPLE_TILE: u32 = 16;

/// Whether a setting has its default of 1 (which is then left out of the serialised
/// config, so configs written before the setting existed read and hash as before).
fn is_one(v: &u32) -> bool {
    *v == 1
}

/// Errors of training and of evaluating a model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TrainError {
    /// The model configuration is out of range or inconsistent.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Quantisation failed (a decoder weight beyond f16).
    #[error(transparent)]
    Quant(#[from] QuantError),
    /// A training setting is out of range.
    #[error("invalid training setting `{name}`: {reason}")]
    Setting {
        /// The setting's name.
        name: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A group without texture sets.
    #[error("a group needs at least one texture set")]
    EmptyGroup,
    /// A texture set whose mips do not match its size.
    #[error("texture set `{name}`: {reason}")]
    BadSet {
        /// The set's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A sample outside the group's materials, mips or texels.
    #[error("sample {0:?} lies outside the group")]
    SampleOutOfRange(Sample),
    /// Buffers (latents, gradients, optimiser state) whose sizes do not match the model.
    #[error("{what}: expected {expected} values, found {found}")]
    Size {
        /// What was measured.
        what: String,
        /// The size the model implies.
        expected: usize,
        /// The size given.
        found: usize,
    },
}

/// One training texel: a texel of colour mip `mip` of material `material` of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Sample {
    /// Material index within the group.
    pub material: u32,
    /// Colour mip.
    pub mip: u32,
    /// Texel column.
    pub x: u32,
    /// Texel row.
    pub y: u32,
}

/// Per-channel L2 loss weights by channel group. A channel that the set's `present` mask
/// lacks always gets weight 0 (the shader uses the material's constant there).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LossWeights {
    /// Base colour RGB (default 2.0).
    pub base_color: f64,
    /// Alpha (default 1.0).
    pub alpha: f64,
    /// Normal X, Y (default 1.0).
    pub normal: f64,
    /// Occlusion (default 0.35).
    pub occlusion: f64,
    /// Roughness (default 0.35).
    pub roughness: f64,
    /// Metallic (default 0.35).
    pub metallic: f64,
    /// Emissive RGB (default 1.0).
    pub emissive: f64,
}

impl Default for LossWeights {
    fn default() -> Self {
        LossWeights {
            base_color: 2.0,
            alpha: 1.0,
            normal: 1.0,
            occlusion: 0.35,
            roughness: 0.35,
            metallic: 0.35,
            emissive: 1.0,
        }
    }
}

impl LossWeights {
    /// The weight of every decoder output for a set with channels `present`: the group
    /// weight for present channels, 0 for absent ones and for the padding outputs 12–15.
    pub fn per_output(&self, present: ChannelMask) -> [f64; OUTPUTS] {
        let mut w = [0.0; OUTPUTS];
        for ((mask, _), weight) in QUALITY_GROUPS.iter().zip(self.by_group()) {
            for c in (*mask & present).channels() {
                w[c.index()] = weight;
            }
        }
        w
    }

    /// The weights of `w`, in [`QUALITY_GROUPS`] order (the inverse of `by_group`).
    fn from_groups(w: [f64; 7]) -> LossWeights {
        LossWeights {
            base_color: w[0],
            alpha: w[1],
            normal: w[2],
            occlusion: w[3],
            roughness: w[4],
            metallic: w[5],
            emissive: w[6],
        }
    }

    /// The weights in [`QUALITY_GROUPS`] order.
    fn by_group(&self) -> [f64; 7] {
        [
            self.base_color,
            self.alpha,
            self.normal,
            self.occlusion,
            self.roughness,
            self.metallic,
            self.emissive,
        ]
    }

    /// Weights balanced against a reference codec's errors (`--loss-weights balanced`):
    /// `reference` holds per channel group its index in [`QUALITY_GROUPS`], the
    /// reference's MSE and the values it was measured over (several entries of one group,
    /// from the sets of a shared decoder, are pooled). Each group present weighs
    /// `1 / MSE` (the MSE at least [`BALANCE_MSE_FLOOR`], the error of rounding to 8 bits,
    /// so an exact reference does not take every weight), scaled so that the weights
    /// average 1 over the channels present; a group without an entry keeps `self`'s
    /// weight. The loss then counts each group's error relative to the reference's: at
    /// the reference's error every group weighs in alike, whatever its size.
    pub fn balanced(&self, reference: &[(usize, f64, u64)]) -> LossWeights {
        let mut sse = [0.0f64; 7];
        let mut count = [0u64; 7];
        for &(g, mse, n) in reference {
            if g < 7 && mse.is_finite() {
                sse[g] += mse * n as f64;
                count[g] += n;
            }
        }
        let inverse: [Option<f64>; 7] = std::array::from_fn(|g| {
            (count[g] > 0).then(|| 1.0 / (sse[g] / count[g] as f64).max(BALANCE_MSE_FLOOR))
        });
        let (mut sum, mut channels) = (0.0, 0u32);
        for (g, (mask, _)) in QUALITY_GROUPS.iter().enumerate() {
            if let Some(w) = inverse[g] {
                sum += w * f64::from(mask.count());
                channels += mask.count();
            }
        }
        let scale = if sum > 0.0 {
            f64::from(channels) / sum
        } else {
            1.0
        };
        let mut w = self.by_group();
        for (slot, inv) in w.iter_mut().zip(inverse) {
            if let Some(inv) = inv {
                *slot = inv * scale;
            }
        }
        LossWeights::from_groups(w)
    }

    /// All weights, named, for validation.
    fn named(&self) -> [(&'static str, f64); 7] {
        [
            ("loss_weights.base_color", self.base_color),
            ("loss_weights.alpha", self.alpha),
            ("loss_weights.normal", self.normal),
            ("loss_weights.occlusion", self.occlusion),
            ("loss_weights.roughness", self.roughness),
            ("loss_weights.metallic", self.metallic),
            ("loss_weights.emissive", self.emissive),
        ]
    }
}

/// The smallest reference MSE [`LossWeights::balanced`] divides by: `1 / (12 · 255²)`,
/// the mean squared error of rounding uniform values to 8 bits.
pub const BALANCE_MSE_FLOOR: f64 = 1.0 / (12.0 * 255.0 * 255.0);

/// How a compression run weighs the channel groups in the loss (`--loss-weights`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[derive(Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum LossWeighting {
    /// The recipe's fixed weights ([`TrainConfig::loss_weights`]).
    #[default]
    Fixed,
    /// Per group of sets, [`LossWeights::balanced`] against the BC1/BC5 baseline's
    /// per-group MSE at mip 0 of the group's sets.
    Balanced,
}

/// Everything a training run needs besides the data, the step count and the seed.
/// Serialised with serde (unknown keys are errors); defaults below.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    /// The model's shape.
    pub model: NtcConfig,
    /// Initial latent learning rate (default 1e-2, the Metal implementation's).
    pub lr_latents: f64,
    /// Initial decoder learning rate (default 5e-3, the Metal implementation's).
    pub lr_decoder: f64,
    /// Texels per batch (default 32768).
    pub batch_size: u32,
    /// Side `T` of the square tiles the batch is drawn in (default 1: every sample on
    /// its own). Each run of `T²` consecutive samples draws one anchor texel as a lone
    /// sample is drawn (a material and mip in proportion to their texels, the texel
    /// uniform) and covers the `T × T` texels from it, wrapping at the mip's edges, so
    /// every sample is still uniform over all texels; the tile's samples gather and
    /// scatter neighbouring latents. At most [`MAX_SAMPLE_TILE`].
    #[serde(skip_serializing_if = "is_one")]
    pub sample_tile: u32,
    /// Per-channel loss weights.
    pub loss_weights: LossWeights,
    /// Add uniform ±q/2 noise to the latents in the main phase (default true).
    pub qat: bool,
    /// Gradual decoder freezing, used for groups of 2 or more sets.
    pub freeze: FreezeSchedule,
    /// Also freeze the decoder of a single-set group (default false: λ ≡ 1 for k = 1).
    pub freeze_single: bool,
    /// Fine-tuning steps as a fraction of the main steps (default 0.05).
    pub finetune_fraction: f64,
    /// Decoder learning rate while fine-tuning, relative to `lr_decoder` (default 0.1).
    pub finetune_lr_scale: f64,
    /// Adam's hyper-parameters.
    pub adam: AdamParams,
    /// Use only order-independent reductions (default false): gradients accumulate in
    /// fixed-point `atomic<i32>` even where `atomic<f32>` exists, so two runs with the
    /// same seed on the same adapter and driver give bit-identical groups (and packages).
    /// Every other reduction of the trainer already runs in a fixed order. The GPU
    /// trainer then also reports progress at fixed steps (it waits for each report's
    /// losses), so loss curves and final losses repeat too.
    pub deterministic: bool,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            model: NtcConfig::default(),
            lr_latents: 1e-2,
            lr_decoder: 5e-3,
            batch_size: 32768,
            sample_tile: 1,
            loss_weights: LossWeights::default(),
            qat: true,
            freeze: FreezeSchedule::default(),
            freeze_single: false,
            finetune_fraction: 0.05,
            finetune_lr_scale: 0.1,
            adam: AdamParams::default(),
            deterministic: false,
        }
    }
}

impl TrainConfig {
    /// Check every setting.
    pub fn validate(&self) -> Result<(), TrainError> {
        self.model.validate()?;
        let setting = |name, reason: String| Err(TrainError::Setting { name, reason });
        let non_negative = [
            ("lr_latents", self.lr_latents),
            ("lr_decoder", self.lr_decoder),
            ("finetune_lr_scale", self.finetune_lr_scale),
        ];
        for (name, v) in non_negative.into_iter().chain(self.loss_weights.named()) {
            if !(v.is_finite() && v >= 0.0) {
                return setting(name, format!("must be finite and ≥ 0, got {v}"));
            }
        }
        if !(1..=MAX_BATCH).contains(&self.batch_size) {
            return setting(
                "batch_size",
                format!("must be in 1..={MAX_BATCH}, got {}", self.batch_size),
            );
        }
        if !(1..=MAX_SAMPLE_TILE).contains(&self.sample_tile) {
            return setting(
                "sample_tile",
                format!("must be in 1..={MAX_SAMPLE_TILE}, got {}", self.sample_tile),
            );
        }
        if !self.freeze.is_valid() {
            return setting(
                "freeze",
                format!("fractions must be in [0, 1], got {:?}", self.freeze),
            );
        }
        if !(0.0..=1.0).contains(&self.finetune_fraction) {
            return setting(
                "finetune_fraction",
                format!("must be in [0, 1], got {}", self.finetune_fraction),
            );
        }
        let a = &self.adam;
        if !((0.0..1.0).contains(&a.beta1)
            && (0.0..1.0).contains(&a.beta2)
            && a.epsilon.is_finite()
            && a.epsilon > 0.0)
        {
            return setting(
                "adam",
                format!("betas must be in [0, 1) and epsilon > 0, got {a:?}"),
            );
        }
        Ok(())
    }

    /// The schedule of a run of `main_steps` for a group of `group_size` sets: freezing
    /// only when `group_size > 1` or [`freeze_single`](Self::freeze_single).
    pub fn schedule(&self, main_steps: u64, group_size: usize) -> Schedule {
        Schedule {
            main_steps,
            finetune_steps: schedule::finetune_steps(main_steps, self.finetune_fraction),
            lr_latents: self.lr_latents,
            lr_decoder: self.lr_decoder,
            finetune_lr_scale: self.finetune_lr_scale,
            freeze: (group_size > 1 || self.freeze_single).then_some(self.freeze),
        }
    }
}

/// Nominal floating-point operations of one training sample for a decoder of shape
/// `config`: 6 per weight (a multiply-add each in the forward pass, the inputs' δ and the
/// weight gradient). Texels per second times this is the trainer's TFLOP/s figure; the
/// first layer's δ is only needed for the latent inputs, so the kernels do slightly less.
pub fn training_flops_per_sample(config: &NtcConfig) -> f64 {
    let weights: usize = config.layer_shapes().iter().map(|s| s.weight_count()).sum();
    6.0 * weights as f64
}

pub use crate::texture::metrics::QUALITY_GROUPS;

/// Reconstruction quality of one material at mip 0 (values in \[0, 1\], decoded outputs
/// clamped): the PSNR of every [`QUALITY_GROUPS`] entry the set has, in the stored form
/// of [`Psnr::stored`] (dB, capped at 99; `+∞` for an exact match), `None` for groups the
/// set does not have. The `.ntc` package stores these values; [`Quality::report`] turns
/// them into the project's PSNR report (per group and pooled, see
/// [`crate::texture::metrics`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Quality {
    /// PSNR per channel group, stored form.
    pub psnr: [Option<f32>; QUALITY_GROUPS.len()],
}

impl Quality {
    /// Measure `decoded` (`CHANNELS` values per texel, row-major) against `reference`.
    /// A group counts when all its channels are in `present`; `None` everywhere when the
    /// sizes disagree.
    pub fn measure(decoded: &[f32], reference: &SetMip, present: ChannelMask) -> Quality {
        if decoded.len() != reference.texels.len() || decoded.is_empty() {
            return Quality::default();
        }
        let mut errors = ErrorAccumulator::default();
        errors.add(
            reference.texels.iter().map(|&r| f32::from(r) / 255.0),
            decoded.iter().map(|d| d.clamp(0.0, 1.0)),
            present,
        );
        let mut quality = Quality::default();
        for (slot, (mask, _)) in quality.psnr.iter_mut().zip(QUALITY_GROUPS) {
            if present.contains(mask) {
                *slot = errors.mse(mask).map(|(mse, _)| psnr(mse));
            }
        }
        quality
    }

    /// The PSNR report: every measured group, and pooled over all of their channels
    /// (each group's MSE weighted by its channel count, as all are measured over the
    /// same texels). `pooled` is `None` when nothing was measured.
    pub fn report(&self) -> PsnrReport {
        PsnrReport::from_groups(self.psnr.iter().zip(QUALITY_GROUPS).enumerate().filter_map(
            |(g, (p, (mask, _)))| p.map(|p| (g, Psnr::from_stored(p).mse(), mask.count() as u64)),
        ))
    }

    /// The pooled PSNR ([`report`](Self::report)), the number NTC is compared by.
    pub fn pooled(&self) -> Option<Psnr> {
        self.report().pooled
    }
}

/// PSNR of a mean squared error on \[0, 1\] values in the stored form [`Quality`] keeps:
/// `10 · log10(1 / mse)` capped at 99 dB, `+∞` for an exact match.
pub fn psnr(mse: f64) -> f32 {
    Psnr::from_mse(mse).stored()
}

/// One trained material's identity and measured quality.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainedMaterial {
    /// The texture set's name.
    pub name: String,
    /// The set's present channels.
    pub present: ChannelMask,
    /// Quality after quantisation and fine-tuning, decoder rounded to f16.
    pub quality: Quality,
}

/// The result of training a group: the model (latents quantised, decoder rounded to
/// f16, so that it decodes exactly like its `.ntc` package), one entry per material and
/// the loss of every step.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainedGroup {
    /// The trained model.
    pub model: GroupModel,
    /// One entry per material, in group order.
    pub materials: Vec<TrainedMaterial>,
    /// Batch loss of every step, main phase then fine-tuning.
    pub losses: Vec<f64>,
}

/// A batch of `batch_size` samples drawn in tiles of `tile × tile` texels
/// ([`TrainConfig::sample_tile`]): each tile's anchor picks a material uniformly, then a
/// texel uniformly among all texels of all the material's colour mips (so mip `m` is
/// chosen with probability ∝ its area), and its samples are the texels from the anchor
/// row by row, wrapping at the mip's edges (the last tile is cut at `batch_size`). Two
/// [`SplitMix64::below`] draws per tile: material, then the anchor's index in the
/// concatenation of the mips, mip 0 first, each row-major. A `tile` of 0 counts as 1.
pub fn sample_batch(
    model: &GroupModel,
    batch_size: usize,
    tile: u32,
    rng: &mut SplitMix64,
) -> Vec<Sample> {
    let areas: Vec<Vec<(u32, u32)>> = model
        .pyramids()
        .iter()
        .map(|p| {
            let l = p.layout();
            (0..l.mips()).filter_map(|m| l.mip_size(m)).collect()
        })
        .collect();
    let totals: Vec<u64> = areas
        .iter()
        .map(|mips| mips.iter().map(|&(w, h)| u64::from(w) * u64::from(h)).sum())
        .collect();
    let mut batch = Vec::with_capacity(batch_size);
    if areas.is_empty() {
        return batch;
    }
    let tile = tile.max(1);
    for _ in 0..batch_size.div_ceil(tile as usize * tile as usize) {
        let material = rng.below(areas.len() as u64) as usize;
        let (Some(mips), Some(&total)) = (areas.get(material), totals.get(material)) else {
            continue;
        };
        let mut r = rng.below(total);
        for (mip, &(w, h)) in mips.iter().enumerate() {
            let area = u64::from(w) * u64::from(h);
            if r < area {
                let (x, y) = ((r % u64::from(w)) as u32, (r / u64::from(w)) as u32);
                let texels = (0..tile).flat_map(|dy| (0..tile).map(move |dx| (dx, dy)));
                let left = batch_size - batch.len();
                batch.extend(texels.take(left).map(|(dx, dy)| Sample {
                    material: material as u32,
                    mip: mip as u32,
                    x: (x + dx) % w,
                    y: (y + dy) % h,
                }));
                break;
            }
            r -= area;
        }
    }
    batch
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ntc::model::{LatentLayout, Preset};
    use crate::texture::CHANNELS;

    #[test]
    fn absent_channels_weigh_nothing() {
        let w = LossWeights::default().per_output(ChannelMask::BASE_COLOR | ChannelMask::ROUGHNESS);
        assert_eq!(&w[..4], &[2.0, 2.0, 2.0, 0.0]);
        assert_eq!(w[7], 0.35);
        assert_eq!(w[6], 0.0);
        assert!(w[8..].iter().all(|&x| x == 0.0));
        let all = LossWeights::default().per_output(ChannelMask::ALL);
        assert_eq!(
            &all[..12],
            &[
                2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 0.35, 0.35, 0.35, 1.0, 1.0, 1.0
            ]
        );
        assert!(all[12..].iter().all(|&x| x == 0.0));
    }

    /// By hand: base colour (3 channels) at reference MSE 1e-4, normal (2 channels) at
    /// 1e-5. The inverse MSEs are 1e4 and 1e5; over the 5 channels they sum to
    /// 3·1e4 + 2·1e5 = 2.3e5, so the scale is 5 / 2.3e5 and the weights are
    /// 1e4 · 5 / 2.3e5 = 5/23 ≈ 0.2174 and 1e5 · 5 / 2.3e5 = 50/23 ≈ 2.1739: ten times
    /// the normal's, averaging 1 per channel. A shared group pools its sets' entries by
    /// value count; an exact reference counts at the 8-bit floor; absent groups keep
    /// their weights.
    #[test]
    fn balanced_weights_follow_the_reference_errors() {
        let fixed = LossWeights::default();
        let w = fixed.balanced(&[(0, 1e-4, 300), (2, 1e-5, 200)]);
        assert!((w.base_color - 5.0 / 23.0).abs() < 1e-12, "{w:?}");
        assert!((w.normal - 50.0 / 23.0).abs() < 1e-12, "{w:?}");
        assert_eq!((w.alpha, w.roughness), (fixed.alpha, fixed.roughness));
        let per = w.per_output(ChannelMask::BASE_COLOR | ChannelMask::NORMAL);
        assert!((per.iter().sum::<f64>() - 5.0).abs() < 1e-12);
        // Two sets of a shared decoder: normal MSE (1e-5 · 100 + 3e-5 · 100) / 200 = 2e-5.
        let shared = fixed.balanced(&[
            (0, 1e-4, 150),
            (0, 1e-4, 150),
            (2, 1e-5, 100),
            (2, 3e-5, 100),
        ]);
        // Inverses 1e4 and 5e4: scale 5 / (3e4 + 1e5) = 5 / 1.3e5.
        assert!(
            (shared.normal - 5e4 * 5.0 / 1.3e5).abs() < 1e-12,
            "{shared:?}"
        );
        // An exact reference normal: 1 / floor = 12 · 255² = 780 300.
        let exact = fixed.balanced(&[(0, 1e-4, 300), (2, 0.0, 200)]);
        let scale = 5.0 / (3e4 + 2.0 * 780_300.0);
        assert!((exact.normal - 780_300.0 * scale).abs() < 1e-9, "{exact:?}");
        // No reference at all: unchanged.
        assert_eq!(fixed.balanced(&[]), fixed);
        TrainConfig {
            loss_weights: w,
            ..TrainConfig::default()
        }
        .validate()
        .expect("valid");
    }

    #[test]
    fn train_config_validation_and_schedule() {
        let c = TrainConfig::default();
        c.validate().expect("defaults are valid");
        assert!(c.schedule(1000, 1).freeze.is_none());
        assert!(c.schedule(1000, 3).freeze.is_some());
        assert_eq!(c.schedule(1000, 3).finetune_steps, 50);
        let single = TrainConfig {
            freeze_single: true,
            ..c.clone()
        };
        assert!(single.schedule(10, 1).freeze.is_some());
        let bad = TrainConfig {
            lr_latents: -1.0,
            ..c.clone()
        };
        let err = bad.validate().expect_err("negative rate");
        assert!(err.to_string().contains("lr_latents"), "{err}");
        assert!(
            TrainConfig {
                batch_size: 0,
                ..c.clone()
            }
            .validate()
            .is_err()
        );
        let parsed: TrainConfig = toml::from_str(
            "lr_decoder = 4e-4\n[model]\nhidden = [64, 64, 64]\nactivation = \"leaky-relu\"",
        )
        .expect("parse");
        assert_eq!(parsed.model.hidden, [64, 64, 64]);
        assert_eq!(parsed.lr_latents, 1e-2);
        assert_eq!(parsed.sample_tile, 1);
        for (tile, valid) in [(0, false), (1, true), (16, true), (17, false)] {
            let config = TrainConfig {
                sample_tile: tile,
                ..c.clone()
            };
            assert_eq!(config.validate().is_ok(), valid, "sample_tile {tile}");
        }
        // The default tile is left out of the serialised config (older configs hash the
        // same); another is written and read back.
        let text = toml::to_string(&c).expect("serialise");
        assert!(!text.contains("sample_tile"), "{text}");
        let tiled = TrainConfig {
            sample_tile: 8,
            ..c.clone()
        };
        let back: TrainConfig =
            toml::from_str(&toml::to_string(&tiled).expect("serialise")).expect("parse");
        assert_eq!(back, tiled);
    }

    #[test]
    fn batches_mix_materials_and_weight_mips_by_area() {
        let config = NtcConfig::tiny();
        let layouts = vec![
            LatentLayout::new(8, 8, 4, Preset::High, 4).expect("layout"),
            LatentLayout::new(4, 2, 3, Preset::High, 4).expect("layout"),
        ];
        let model = GroupModel::init(&config, layouts, 1).expect("model");
        let mut rng = SplitMix64::new(5);
        let batch = sample_batch(&model, 20000, 1, &mut rng);
        assert_eq!(batch.len(), 20000);
        let mut per_mip = [0usize; 4];
        let mut per_material = [0usize; 2];
        for s in &batch {
            per_material[s.material as usize] += 1;
            let l = model.pyramids()[s.material as usize].layout();
            let (w, h) = l.mip_size(s.mip as usize).expect("mip");
            assert!(s.x < w && s.y < h);
            if s.material == 0 {
                per_mip[s.mip as usize] += 1;
            }
        }
        assert!((9000..11000).contains(&per_material[0]), "{per_material:?}");
        // Areas 64, 16, 4, 1 of 85.
        let n0 = per_material[0] as f64;
        for (m, area) in [64.0, 16.0, 4.0, 1.0].iter().enumerate() {
            let share = per_mip[m] as f64 / n0;
            assert!((share - area / 85.0).abs() < 0.02, "mip {m}: {share}");
        }
        // Deterministic for a seed.
        assert_eq!(
            sample_batch(&model, 50, 1, &mut SplitMix64::new(9)),
            sample_batch(&model, 50, 1, &mut SplitMix64::new(9))
        );
    }

    #[test]
    fn tiled_batches_cover_wrapped_tiles_of_uniform_texels() {
        let layouts = vec![
            LatentLayout::new(8, 8, 4, Preset::High, 4).expect("layout"),
            LatentLayout::new(4, 2, 3, Preset::High, 4).expect("layout"),
        ];
        let model = GroupModel::init(&NtcConfig::tiny(), layouts, 1).expect("model");
        let batch = sample_batch(&model, 16 * 2000 + 5, 4, &mut SplitMix64::new(3));
        assert_eq!(batch.len(), 32005);
        let mut mip0 = [0usize; 64];
        for tile in batch.chunks(16) {
            let a = tile[0];
            let l = model.pyramids()[a.material as usize].layout();
            let (w, h) = l.mip_size(a.mip as usize).expect("mip");
            for (i, s) in tile.iter().enumerate() {
                let (dx, dy) = (i as u32 % 4, i as u32 / 4);
                let expected = ((a.x + dx) % w, (a.y + dy) % h);
                assert_eq!((s.material, s.mip), (a.material, a.mip), "{tile:?}");
                assert_eq!((s.x, s.y), expected, "{tile:?}");
                if s.material == 0 && s.mip == 0 {
                    mip0[(s.y * 8 + s.x) as usize] += 1;
                }
            }
        }
        // Material 0 anchors about 1000 tiles, 64 / 85 of them on mip 0: each texel is in
        // 16 of 64 anchors' tiles, so about 188 samples each.
        assert!(mip0.iter().all(|&c| (120..260).contains(&c)), "{mip0:?}");
        // A side of 1 (or 0) is the untiled draw.
        assert_eq!(
            sample_batch(&model, 50, 1, &mut SplitMix64::new(9)),
            sample_batch(&model, 50, 0, &mut SplitMix64::new(9))
        );
    }

    #[test]
    fn quality_measures_present_groups_only() {
        let reference = SetMip {
            width: 2,
            height: 1,
            texels: vec![255; 2 * CHANNELS],
        };
        let mut decoded = vec![1.0f32; 2 * CHANNELS];
        let q = Quality::measure(&decoded, &reference, ChannelMask::BASE_COLOR);
        assert_eq!(q.psnr[0], Some(f32::INFINITY));
        assert!(q.psnr[1..].iter().all(Option::is_none));
        decoded[0] = 0.9; // one of 6 base colour values off by 0.1
        let q = Quality::measure(
            &decoded,
            &reference,
            ChannelMask::BASE_COLOR | ChannelMask::ALPHA,
        );
        let expected = psnr(0.01 / 6.0);
        assert!((q.psnr[0].expect("base") - expected).abs() < 1e-4);
        assert_eq!(q.psnr[1], Some(f32::INFINITY));
        // Pooled over the 4 channels: (3 · 1/600 + 1 · 0) / 4 = 1/800 → 29.0309 dB; the
        // groups: base colour 27.78 dB, alpha exact (99 dB, marked).
        let r = q.report();
        assert!(
            (r.pooled.unwrap().db - 10.0 * 800f64.log10()).abs() < 1e-4,
            "{r:?}"
        );
        assert!(!r.pooled.unwrap().exact);
        assert_eq!(r.groups.len(), 2);
        assert_eq!(
            r.group("alpha").map(|p| (p.db, p.exact)),
            Some((99.0, true))
        );
        assert_eq!(q.pooled(), r.pooled);
        assert_eq!(Quality::default().pooled(), None);
        // Clamping: values above 1 count as 1.
        decoded[0] = 7.0;
        assert_eq!(
            Quality::measure(&decoded, &reference, ChannelMask::BASE_COLOR).psnr[0],
            Some(f32::INFINITY)
        );
        assert_eq!(
            Quality::measure(&decoded[..3], &reference, ChannelMask::ALL),
            Quality::default()
        );
        assert!((psnr(1e-4) - 40.0).abs() < 1e-4);
    }
}
