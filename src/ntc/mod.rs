//! Neural texture compression with decoders shared across materials: the codec core.
//!
//! - [`model`]: configuration ([`NtcConfig`]), latent pyramids and the mip → grid-pair
//!   layout ([`LatentLayout`]), decoder weights, and the input-vector pieces every
//!   implementation must compute alike.
//! - [`quant`]: latent quantisation and packing, f16 decoder weights.
//! - [`train`]: training settings and named recipes ([`Recipe`]), batch sampling, quality, the schedules (gradual
//!   decoder freezing, cosine decay, fine-tuning) and the CPU reference trainer that the
//!   GPU trainer is tested against.
//! - [`format`](mod@format): the `.ntc` package (materials, decoders, latents, checksums).
//! - [`compress`]: many sets → one package, group by group on the GPU, with the report.
//! - [`parallel`]: a run's groups trained on several devices at once, largest first.
//! - [`shard`]: a run split into shards balanced by texels, their part files and the
//!   merge of every shard's part into the package.
//! - [`rd`]: rate–distortion curves over a ladder of latent shapes beside the BCn
//!   points, and the NTC rate that matches each.
//! - [`tools`]: package summaries (`inspect`) and decoding back to PNGs (`decompress`).
//!
//! A *group* is a set of materials sharing one decoder: its model ([`GroupModel`]) is one
//! latent pyramid per material plus one decoder. A package holds any number of groups.

pub mod compress;
pub mod format;
pub mod model;
pub mod parallel;
pub mod quant;
pub mod rd;
pub mod shard;
pub mod tools;
pub mod train;

pub use format::{NtcFormatError, NtcMaterial, NtcPackage};
pub use model::{
    Activation, ConfigError, DecoderWeights, GroupModel, LatentBits, LatentLayout, LatentPyramid,
    NtcConfig, Preset,
};
pub use train::{Quality, Recipe, TrainConfig, TrainError, TrainedGroup, train_cpu};
