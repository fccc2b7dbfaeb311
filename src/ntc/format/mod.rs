//! The `.ntc` package: every material of a scene (latents, layout, constants, measured
//! quality) and every decoder, plus the material → decoder table, in one versioned
//! binary file.
//!
//! # Layout (version 1, all integers and floats little-endian)
//!
//! ```text
//! header (60 bytes)
//!   0  magic            [u8; 4] = "NTC\0"
//!   4  version          u32 = 1
//!   8  material_count   u32   (≤ 65536)
//!  12  decoder_count    u32   (≤ 65536)
//!  16  section_count    u32 = 4
//!  20  flags            u32 = 0
//!  24  section lengths  u64 × 4: config, materials, decoders, latents
//!  56  header_crc       u32   CRC-32 (IEEE, crc32fast) of bytes 0..56
//! sections, in this order, each:
//!       tag [u8; 4], length u64 (= the header's), crc u32 (CRC-32 of the payload),
//!       payload [length]
//!   "CONF" config:    features, latent_bits, preset (0 low … 3 very-high, 4 medium-high; the one
//!                     requested: each material's grids below are its own, so groups
//!                     compressed at other presets by rate control share the package),
//!                     activation (0 hard-gelu, 1 leaky-relu), pe_waves,
//!                     hidden_count: u32 each; then hidden widths: u32 × hidden_count
//!   "MATL" materials: per material
//!                     name_len u32 (≤ 1024), name [u8; name_len] (UTF-8),
//!                     present u32 (channel mask, bits 0–11), width u32, height u32,
//!                     mips u32 (≤ 32), grid_count u32 (≤ 64), decoder u32,
//!                     constants f32 × 12, psnr f32 × 7 (NaN = not measured),
//!                     grids (width u32, height u32) × grid_count,
//!                     pairs (fine u32, coarse u32) × mips
//!   "DECO" decoders:  per decoder, its parameters as f16 in
//!                     `DecoderWeights::params` order (per layer: row-major
//!                     [out][in] weights, then biases)
//!   "LATN" latents:   per material, in table order, its packed latent words u32
//!                     (`quant` module docs), `layout.packed_words(latent_bits)` of them
//! ```
//!
//! The header's section lengths fix the file size exactly: anything shorter is
//! truncated, anything longer has trailing bytes; both are errors.
//!
//! # Reading untrusted files
//!
//! [`NtcPackage::from_bytes`] checks every count and size against the bytes that remain
//! *before* allocating for it: counts are capped ([`MAX_MATERIALS`], [`MAX_DECODERS`],
//! [`MAX_NAME_BYTES`], grid and mip caps), a table of `n` records is only read when the
//! section can hold `n` records of the minimum size, and the decoder and latent sections
//! must have exactly the length that the config and the layouts imply. Every failure is
//! an [`NtcFormatError`] naming what is wrong and where; nothing panics.
//!
//! This module holds the package in memory and its checks; `read` parses files, `write`
//! writes them.

use std::path::{Path, PathBuf};

use half::f16;

use crate::ntc::model::{
    Activation, ConfigError, DecoderWeights, GridShape, GroupModel, LatentBits, LatentLayout,
    LatentPyramid, MAX_GRIDS, MAX_HIDDEN_LAYERS, MAX_MIPS, MipPair, NtcConfig, Preset,
};
use crate::ntc::quant;
use crate::ntc::train::{QUALITY_GROUPS, Quality, TrainedGroup};
use crate::texture::{CHANNELS, ChannelMask};

mod read;
#[cfg(test)]
mod tests;
mod write;

pub(crate) use read::Cursor;

/// The first four bytes of every package.
pub const MAGIC: [u8; 4] = *b"NTC\0";

/// The format version this build reads and writes.
pub const VERSION: u32 = 1;

/// Most materials one package may hold.
pub const MAX_MATERIALS: usize = 65536;

/// Most decoders one package may hold.
pub const MAX_DECODERS: usize = 65536;

/// Longest material name in bytes.
pub const MAX_NAME_BYTES: usize = 1024;

/// Size of the fixed header.
pub const HEADER_LEN: usize = 60;

/// Size of a section's tag, length and checksum.
const SECTION_HEADER_LEN: usize = 16;

/// Bytes covered by the header checksum (everything before it).
const HEADER_CRC_SPAN: usize = HEADER_LEN - 4;

/// Smallest material record: no name, one grid, one mip.
const MIN_MATERIAL_LEN: usize = 4 + 6 * 4 + CHANNELS * 4 + QUALITY_GROUPS.len() * 4 + 8 + 8;

/// The four sections, in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// The shared [`NtcConfig`].
    Config,
    /// The material table.
    Materials,
    /// The decoders' f16 weights.
    Decoders,
    /// The packed latents.
    Latents,
}

impl Section {
    /// All sections in file order.
    pub const ALL: [Section; 4] = [
        Section::Config,
        Section::Materials,
        Section::Decoders,
        Section::Latents,
    ];

    /// The section's four-byte tag.
    pub const fn tag(self) -> [u8; 4] {
        match self {
            Section::Config => *b"CONF",
            Section::Materials => *b"MATL",
            Section::Decoders => *b"DECO",
            Section::Latents => *b"LATN",
        }
    }

    /// The section's name in messages.
    pub const fn name(self) -> &'static str {
        match self {
            Section::Config => "config",
            Section::Materials => "materials",
            Section::Decoders => "decoders",
            Section::Latents => "latents",
        }
    }
}

impl std::fmt::Display for Section {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "section `{}`", self.name())
    }
}

/// Why a package could not be read or written. Messages say what is wrong and where.
#[derive(Debug, thiserror::Error)]
pub enum NtcFormatError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Writing would replace the file the package was read from.
    #[error("refusing to write {path}: it is the package this one was read from")]
    OverwritesInput {
        /// The file.
        path: PathBuf,
    },
    /// The file does not start with `NTC\0`.
    #[error(
        "not an .ntc package: the file starts with {found:02x?}, expected \"NTC\\0\"{}",
        if found == b"NTCP" {
            " (it is a `compress --shard` part file: join the parts with `neurotex merge`)"
        } else {
            ""
        }
    )]
    BadMagic {
        /// The first four bytes.
        found: [u8; 4],
    },
    /// A version this build cannot read.
    #[error("unsupported .ntc version {found} (this build reads version {VERSION})")]
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
    },
    /// The bytes end before something that must be there.
    #[error("truncated {what} at byte {offset}: needs {needed} bytes, {available} left")]
    Truncated {
        /// What was being read.
        what: String,
        /// File offset where it starts.
        offset: u64,
        /// Bytes it needs.
        needed: u64,
        /// Bytes that remain.
        available: u64,
    },
    /// Bytes after the last section.
    #[error("{count} trailing bytes after the last section")]
    TrailingBytes {
        /// How many.
        count: u64,
    },
    /// A stored checksum does not match the bytes.
    #[error("{what} checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum {
        /// `header` or ``section `latents` ``.
        what: String,
        /// The checksum in the file.
        stored: u32,
        /// The checksum of the bytes read.
        computed: u32,
    },
    /// A section that is not the one expected at its place.
    #[error("{expected}: found tag {found:?} where \"{}\" belongs", String::from_utf8_lossy(&expected.tag()))]
    SectionTag {
        /// The section expected.
        expected: Section,
        /// The tag found (lossy UTF-8).
        found: String,
    },
    /// A section whose length differs from the header's.
    #[error("{section} is {found} bytes long, the header says {expected}")]
    SectionLength {
        /// The section.
        section: Section,
        /// The header's length.
        expected: u64,
        /// The section's own length field.
        found: u64,
    },
    /// A count beyond its cap.
    #[error("{what}: {count} exceeds the limit of {max}")]
    TooMany {
        /// What was counted, and where.
        what: String,
        /// The count found.
        count: u64,
        /// The cap.
        max: u64,
    },
    /// A value that is out of range or inconsistent with the rest of the package.
    #[error("{what}: {reason}")]
    Invalid {
        /// Where (`header`, ``section `materials`, material 3``, ...).
        what: String,
        /// What is wrong.
        reason: String,
    },
}

/// One material of a package.
#[derive(Clone, Debug, PartialEq)]
pub struct NtcMaterial {
    /// The texture set's name (≤ [`MAX_NAME_BYTES`] bytes of UTF-8).
    pub name: String,
    /// Channels that come from textures; the shader uses `constants` for the others.
    pub present: ChannelMask,
    /// The latent pyramid's layout (texture size, mips, grids, mip → pair table).
    pub layout: LatentLayout,
    /// Index of the decoder this material's latents are decoded with.
    pub decoder: u32,
    /// The material's constant factor per canonical channel (the glTF factors: base
    /// colour RGBA, normal X/Y scale, occlusion strength, roughness, metallic, emissive
    /// RGB), which the shader multiplies in and uses alone for absent channels.
    pub constants: [f32; CHANNELS],
    /// The quality measured at compression.
    pub quality: Quality,
    /// Packed latent codes, `layout.packed_words(config.latent_bits)` words.
    pub latents: Vec<u32>,
}

/// A whole package: one configuration shared by every decoder, the materials and the
/// decoders (f16, [`DecoderWeights::params`] order). Packages compare equal when their
/// contents are, wherever they were read from.
#[derive(Clone, Debug)]
pub struct NtcPackage {
    /// The model shape of every decoder in the package.
    pub config: NtcConfig,
    /// The materials.
    pub materials: Vec<NtcMaterial>,
    /// The decoders' parameters.
    pub decoders: Vec<Vec<f16>>,
    /// The file this package was read from, if any.
    source: Option<PathBuf>,
}

impl PartialEq for NtcPackage {
    fn eq(&self, other: &Self) -> bool {
        self.config == other.config
            && self.materials == other.materials
            && self.decoders == other.decoders
    }
}

impl NtcPackage {
    /// An empty package for decoders of shape `config`.
    pub fn new(config: NtcConfig) -> Result<Self, NtcFormatError> {
        config.validate().map_err(|e| invalid("config", e))?;
        Ok(NtcPackage {
            config,
            materials: Vec::new(),
            decoders: Vec::new(),
            source: None,
        })
    }

    /// The file this package was read from ([`read`](Self::read)), if any.
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// Add a trained group: its decoder (converted to f16) becomes a new decoder and its
    /// materials (latents packed) point at it. `constants[i]` are material `i`'s constant
    /// factors. Returns the new decoder's index.
    pub fn add_group(
        &mut self,
        group: &TrainedGroup,
        constants: &[[f32; CHANNELS]],
    ) -> Result<u32, NtcFormatError> {
        let model = &group.model;
        // The decoder's shape must be the package's; the preset may differ (each
        // material's grids are stored, so groups can have their own latent resolution).
        let shape = NtcConfig {
            preset: self.config.preset,
            ..model.config().clone()
        };
        if shape != self.config {
            return Err(invalid(
                "group",
                "its model configuration differs from the package's",
            ));
        }
        if constants.len() != group.materials.len()
            || model.pyramids().len() != group.materials.len()
        {
            return Err(invalid(
                "group",
                format!(
                    "{} materials, {} pyramids and {} constant sets",
                    group.materials.len(),
                    model.pyramids().len(),
                    constants.len()
                ),
            ));
        }
        check_count(
            "package decoders",
            self.decoders.len() as u64 + 1,
            MAX_DECODERS,
        )?;
        check_count(
            "package materials",
            (self.materials.len() + group.materials.len()) as u64,
            MAX_MATERIALS,
        )?;
        let decoder = self.decoders.len() as u32;
        let weights = quant::decoder_to_f16(model.decoder().params())
            .map_err(|e| invalid(format!("decoder {decoder}"), e))?;
        let bits = self.config.latent_bits;
        let mut added = Vec::with_capacity(group.materials.len());
        for ((material, pyramid), constants) in
            group.materials.iter().zip(model.pyramids()).zip(constants)
        {
            let latents = quant::pack_latents(pyramid.values(), self.config.features, bits)
                .map_err(|e| invalid(format!("material `{}`", material.name), e))?;
            added.push(NtcMaterial {
                name: material.name.clone(),
                present: material.present,
                layout: pyramid.layout().clone(),
                decoder,
                constants: *constants,
                quality: material.quality,
                latents,
            });
        }
        self.decoders.push(weights);
        self.materials.extend(added);
        Ok(decoder)
    }

    /// The f32 model of decoder `decoder` and the indices of the materials that use it
    /// (their latents dequantised), in table order.
    pub fn group_model(&self, decoder: u32) -> Result<(GroupModel, Vec<usize>), NtcFormatError> {
        let params = self
            .decoders
            .get(decoder as usize)
            .ok_or_else(|| invalid("package", format!("there is no decoder {decoder}")))?;
        let weights = DecoderWeights::from_params(&self.config, quant::decoder_from_f16(params))
            .map_err(|e| invalid(format!("decoder {decoder}"), e))?;
        let mut indices = Vec::new();
        let mut pyramids = Vec::new();
        for (i, m) in self.materials.iter().enumerate() {
            if m.decoder != decoder {
                continue;
            }
            let what = || format!("material {i} (`{}`)", m.name);
            let values =
                quant::unpack_latents(&m.latents, self.config.features, self.config.latent_bits)
                    .map_err(|e| invalid(what(), e))?;
            pyramids.push(
                LatentPyramid::new(m.layout.clone(), values).map_err(|e| invalid(what(), e))?,
            );
            indices.push(i);
        }
        let model = GroupModel::from_parts(self.config.clone(), weights, pyramids)
            .map_err(|e| invalid(format!("decoder {decoder}"), e))?;
        Ok((model, indices))
    }

    /// Check everything the format requires: the config, the caps, name lengths, channel
    /// masks, finite constants, decoder indices and sizes, and latent word counts.
    pub fn validate(&self) -> Result<(), NtcFormatError> {
        self.config.validate().map_err(|e| invalid("config", e))?;
        check_count("materials", self.materials.len() as u64, MAX_MATERIALS)?;
        check_count("decoders", self.decoders.len() as u64, MAX_DECODERS)?;
        let params = self.config.decoder_param_count();
        for (d, weights) in self.decoders.iter().enumerate() {
            if weights.len() != params {
                return Err(invalid(
                    format!("decoder {d}"),
                    format!("{} parameters, the config implies {params}", weights.len()),
                ));
            }
            if let Some(i) = weights.iter().position(|w| !w.is_finite()) {
                return Err(invalid(
                    format!("decoder {d}"),
                    format!("parameter {i} is not finite"),
                ));
            }
        }
        for (i, m) in self.materials.iter().enumerate() {
            let what = format!("material {i}");
            check_count(
                &format!("{what} name bytes"),
                m.name.len() as u64,
                MAX_NAME_BYTES,
            )?;
            if !ChannelMask::ALL.contains(m.present) {
                return Err(invalid(
                    what,
                    format!("channel mask {:#x} has bits beyond channel 11", m.present.0),
                ));
            }
            if m.decoder as usize >= self.decoders.len() {
                return Err(invalid(
                    what,
                    format!("decoder {} of {}", m.decoder, self.decoders.len()),
                ));
            }
            if m.constants.iter().any(|c| !c.is_finite()) {
                return Err(invalid(what, "a constant factor is not finite"));
            }
            if m.layout.features() != self.config.features {
                return Err(invalid(
                    what,
                    format!(
                        "{} features per texel, the config {}",
                        m.layout.features(),
                        self.config.features
                    ),
                ));
            }
            // Every size the table implies must follow from the texture size: the
            // standard pyramid of a preset (so a 16384² material cannot hide behind
            // 4×4 latents), whose latent words the file then has to hold. Any preset:
            // rate control gives each group its own, the header names the requested one.
            let standard = |preset| {
                LatentLayout::new(
                    m.layout.width(),
                    m.layout.height(),
                    m.layout.mips(),
                    preset,
                    self.config.features,
                )
            };
            let header = standard(self.config.preset).map_err(|e| invalid(what.clone(), e))?;
            if header != m.layout
                && !Preset::ALL
                    .into_iter()
                    .any(|p| standard(p).is_ok_and(|l| l == m.layout))
            {
                return Err(invalid(
                    what,
                    format!(
                        "its latent grids and mip pairs are not those of a {}×{} texture with {} mips at any preset",
                        m.layout.width(),
                        m.layout.height(),
                        m.layout.mips(),
                    ),
                ));
            }
            let words = m.layout.packed_words(self.config.latent_bits);
            if m.latents.len() != words {
                return Err(invalid(
                    what,
                    format!(
                        "{} latent words, the layout implies {words}",
                        m.latents.len()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Bytes that decoding the package on the CPU (`neurotex decompress`, one decoder's
    /// materials at a time) needs at its peak: the decoder's latents as f32 plus the
    /// largest decoded mip (f32 per channel) and its RGBA8 image and PNG.
    pub fn decode_bytes(&self) -> u64 {
        use crate::texture::budget::product;
        let mut peak = 0u64;
        for d in 0..self.decoders.len() as u32 {
            let mut latents = 0u64;
            let mut largest = 0u64;
            for m in self.materials.iter().filter(|m| m.decoder == d) {
                latents = latents.saturating_add(product(&[m.layout.value_count() as u64, 4]));
                let texels = product(&[m.layout.width().into(), m.layout.height().into()]);
                largest = largest.max(texels);
            }
            let mip = product(&[largest, CHANNELS as u64 * 4 + 8]);
            peak = peak.max(latents.saturating_add(mip));
        }
        peak
    }

    /// Refuse a package whose CPU decode ([`decode_bytes`](Self::decode_bytes)) needs
    /// more than `limit` bytes, before anything is decoded.
    pub fn check_decode_budget(
        &self,
        limit: u64,
    ) -> Result<(), crate::texture::budget::OverBudget> {
        crate::texture::budget::check(|| self.describe("decoding"), self.decode_bytes(), limit)
    }

    /// Bytes a renderer allocates for the package: the latent words, the f16 decoders
    /// and the per-material and per-mip tables; with `inference_on_load` also every
    /// material's baked textures (three RGBA8 groups with their mip chains).
    pub fn upload_bytes(&self, inference_on_load: bool) -> u64 {
        use crate::texture::budget::product;
        let mut total = 0u64;
        for m in &self.materials {
            total = total
                .saturating_add(product(&[m.latents.len() as u64, 4]))
                .saturating_add(product(&[m.layout.mips() as u64, 64]))
                .saturating_add(64);
            if inference_on_load {
                let texels = product(&[m.layout.width().into(), m.layout.height().into()]);
                total = total.saturating_add(product(&[texels, 3 * 4 * 4]) / 3);
            }
        }
        let params = self.config.decoder_param_count() as u64;
        total.saturating_add(product(&[self.decoders.len() as u64, params, 2]))
    }

    /// Refuse a package whose upload ([`upload_bytes`](Self::upload_bytes)) needs more
    /// than `limit` bytes, before anything is allocated on the device.
    pub fn check_upload_budget(
        &self,
        inference_on_load: bool,
        limit: u64,
    ) -> Result<(), crate::texture::budget::OverBudget> {
        crate::texture::budget::check(
            || {
                self.describe(if inference_on_load {
                    "uploading and baking"
                } else {
                    "uploading"
                })
            },
            self.upload_bytes(inference_on_load),
            limit,
        )
    }

    /// "<verb> <file or `the package`> (N materials, largest W×H)", for budget messages.
    fn describe(&self, verb: &str) -> String {
        let largest = self
            .materials
            .iter()
            .max_by_key(|m| u64::from(m.layout.width()) * u64::from(m.layout.height()));
        format!(
            "{verb} {} ({} materials{})",
            self.source
                .as_ref()
                .map_or("the package".to_string(), |p| p.display().to_string()),
            self.materials.len(),
            largest.map_or(String::new(), |m| format!(
                ", largest `{}` {}×{}",
                m.name,
                m.layout.width(),
                m.layout.height()
            ))
        )
    }
}

/// An [`NtcFormatError::Invalid`] for `what`.
fn invalid(what: impl Into<String>, reason: impl ToString) -> NtcFormatError {
    NtcFormatError::Invalid {
        what: what.into(),
        reason: reason.to_string(),
    }
}

/// An [`NtcFormatError::TooMany`] when `count > max`.
fn check_count(what: &str, count: u64, max: usize) -> Result<(), NtcFormatError> {
    if count > max as u64 {
        Err(NtcFormatError::TooMany {
            what: what.to_string(),
            count,
            max: max as u64,
        })
    } else {
        Ok(())
    }
}
