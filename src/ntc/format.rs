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

use std::path::{Path, PathBuf};

use half::f16;

use crate::ntc::model::{
    Activation, ConfigError, DecoderWeights, GridShape, GroupModel, LatentBits, LatentLayout,
    LatentPyramid, MAX_GRIDS, MAX_HIDDEN_LAYERS, MAX_MIPS, MipPair, NtcConfig, Preset,
};
use crate::ntc::quant;
use crate::ntc::train::{QUALITY_GROUPS, Quality, TrainedGroup};
use crate::texture::{CHANNELS, ChannelMask};

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
    #[error("not an .ntc package: the file starts with {found:02x?}, expected \"NTC\\0\"")]
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

    /// The package as bytes (after [`validate`](Self::validate)).
    pub fn to_bytes(&self) -> Result<Vec<u8>, NtcFormatError> {
        self.validate()?;
        let payloads = [
            self.config_bytes(),
            self.material_bytes(),
            self.decoder_bytes(),
            self.latent_bytes(),
        ];
        let mut out = Vec::with_capacity(
            HEADER_LEN
                + payloads
                    .iter()
                    .map(|p| p.len() + SECTION_HEADER_LEN)
                    .sum::<usize>(),
        );
        out.extend_from_slice(&MAGIC);
        put_u32(&mut out, VERSION);
        put_u32(&mut out, self.materials.len() as u32);
        put_u32(&mut out, self.decoders.len() as u32);
        put_u32(&mut out, Section::ALL.len() as u32);
        put_u32(&mut out, 0);
        for p in &payloads {
            out.extend_from_slice(&(p.len() as u64).to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        put_u32(&mut out, crc);
        for (section, payload) in Section::ALL.iter().zip(&payloads) {
            out.extend_from_slice(&section.tag());
            out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
            put_u32(&mut out, crc32fast::hash(payload));
            out.extend_from_slice(payload);
        }
        Ok(out)
    }

    /// Write the package to `path` through a temporary file in the same folder and a
    /// rename. Refuses to write over the file the package was read from.
    pub fn write(&self, path: &Path) -> Result<(), NtcFormatError> {
        if let Some(source) = &self.source
            && same_file(source, path)
        {
            return Err(NtcFormatError::OverwritesInput {
                path: path.to_path_buf(),
            });
        }
        let bytes = self.to_bytes()?;
        crate::io::write_atomic(path, &bytes).map_err(|source| NtcFormatError::Write {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Read and validate the package at `path`.
    pub fn read(path: &Path) -> Result<Self, NtcFormatError> {
        let bytes = std::fs::read(path).map_err(|source| NtcFormatError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut package = Self::from_bytes(&bytes)?;
        package.source = Some(path.to_path_buf());
        Ok(package)
    }

    /// Parse and validate a package from bytes (see the module docs for the checks).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, NtcFormatError> {
        let mut header = Cursor::new(bytes, 0, "header");
        let magic = header.array::<4>("magic")?;
        if magic != MAGIC {
            return Err(NtcFormatError::BadMagic { found: magic });
        }
        let version = header.u32("version")?;
        if version != VERSION {
            return Err(NtcFormatError::UnsupportedVersion { found: version });
        }
        let material_count = header.u32("material count")?;
        let decoder_count = header.u32("decoder count")?;
        let section_count = header.u32("section count")?;
        let flags = header.u32("flags")?;
        let mut lengths = [0u64; 4];
        for len in &mut lengths {
            *len = header.u64("section length")?;
        }
        let stored = header.u32("header checksum")?;
        let computed = crc32fast::hash(bytes.get(..HEADER_CRC_SPAN).unwrap_or(&[]));
        if stored != computed {
            return Err(NtcFormatError::Checksum {
                what: "header".into(),
                stored,
                computed,
            });
        }
        if section_count != Section::ALL.len() as u32 {
            return Err(invalid(
                "header",
                format!("{section_count} sections, version 1 has 4"),
            ));
        }
        if flags != 0 {
            return Err(invalid("header", format!("unknown flags {flags:#x}")));
        }
        check_count(
            "header material count",
            material_count.into(),
            MAX_MATERIALS,
        )?;
        check_count("header decoder count", decoder_count.into(), MAX_DECODERS)?;
        let announced = lengths.iter().try_fold(HEADER_LEN as u64, |acc, &len| {
            acc.checked_add(SECTION_HEADER_LEN as u64)?.checked_add(len)
        });
        let actual = bytes.len() as u64;
        match announced {
            Some(total) if total > actual => {
                return Err(NtcFormatError::Truncated {
                    what: "package (the header's section lengths)".into(),
                    offset: 0,
                    needed: total,
                    available: actual,
                });
            }
            Some(total) if total < actual => {
                return Err(NtcFormatError::TrailingBytes {
                    count: actual - total,
                });
            }
            Some(_) => {}
            None => return Err(invalid("header", "section lengths overflow")),
        }

        let mut payloads: [&[u8]; 4] = [&[]; 4];
        let mut pos = HEADER_LEN;
        for ((slot, section), &expected) in payloads.iter_mut().zip(Section::ALL).zip(&lengths) {
            let rest = bytes.get(pos..).unwrap_or(&[]);
            let mut c = Cursor::new(rest, pos as u64, section.name());
            let tag = c.array::<4>("tag")?;
            if tag != section.tag() {
                return Err(NtcFormatError::SectionTag {
                    expected: section,
                    found: String::from_utf8_lossy(&tag).into_owned(),
                });
            }
            let found = c.u64("length")?;
            if found != expected {
                return Err(NtcFormatError::SectionLength {
                    section,
                    expected,
                    found,
                });
            }
            let stored = c.u32("checksum")?;
            let payload = c.take(usize::try_from(found).unwrap_or(usize::MAX), "payload")?;
            let computed = crc32fast::hash(payload);
            if stored != computed {
                return Err(NtcFormatError::Checksum {
                    what: section.to_string(),
                    stored,
                    computed,
                });
            }
            *slot = payload;
            pos += SECTION_HEADER_LEN + payload.len();
        }
        let [config_bytes, material_bytes, decoder_bytes, latent_bytes] = payloads;
        let config = parse_config(config_bytes)?;
        let mut materials = parse_materials(material_bytes, material_count as usize, &config)?;
        let decoders = parse_decoders(decoder_bytes, decoder_count as usize, &config)?;
        parse_latents(latent_bytes, &mut materials, &config)?;
        let package = NtcPackage {
            config,
            materials,
            decoders,
            source: None,
        };
        package.validate()?;
        Ok(package)
    }

    /// The config section's payload.
    fn config_bytes(&self) -> Vec<u8> {
        let c = &self.config;
        let mut out = Vec::new();
        for v in [
            c.features,
            c.latent_bits.bits(),
            c.preset.code(),
            c.activation.code(),
            c.pe_waves,
            c.hidden.len() as u32,
        ] {
            put_u32(&mut out, v);
        }
        for &w in &c.hidden {
            put_u32(&mut out, w);
        }
        out
    }

    /// The materials section's payload.
    fn material_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for m in &self.materials {
            put_u32(&mut out, m.name.len() as u32);
            out.extend_from_slice(m.name.as_bytes());
            let l = &m.layout;
            for v in [
                u32::from(m.present.0),
                l.width(),
                l.height(),
                l.mips() as u32,
                l.grids().len() as u32,
                m.decoder,
            ] {
                put_u32(&mut out, v);
            }
            for c in m.constants {
                out.extend_from_slice(&c.to_le_bytes());
            }
            for p in m.quality.psnr {
                out.extend_from_slice(&p.unwrap_or(f32::NAN).to_le_bytes());
            }
            for g in l.grids() {
                put_u32(&mut out, g.width);
                put_u32(&mut out, g.height);
            }
            for p in l.pairs() {
                put_u32(&mut out, p.fine);
                put_u32(&mut out, p.coarse);
            }
        }
        out
    }

    /// The decoders section's payload.
    fn decoder_bytes(&self) -> Vec<u8> {
        self.decoders
            .iter()
            .flatten()
            .flat_map(|h| h.to_bits().to_le_bytes())
            .collect()
    }

    /// The latents section's payload.
    fn latent_bytes(&self) -> Vec<u8> {
        self.materials
            .iter()
            .flat_map(|m| &m.latents)
            .flat_map(|w| w.to_le_bytes())
            .collect()
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

/// Append a little-endian u32.
fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// True when both paths name the same existing file (or are equal as written).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// A bounds-checked little-endian reader over one part of a file: every read checks the
/// bytes left first and fails with [`NtcFormatError::Truncated`] (naming the part, what
/// was read and the file offset) instead of panicking or allocating. Packages and
/// training checkpoints ([`Checkpoint`](crate::ntc::train::checkpoint::Checkpoint)) are
/// read through it.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// File offset of `bytes[0]`.
    base: u64,
    /// The part being read, for messages.
    part: &'static str,
}

impl<'a> Cursor<'a> {
    /// A reader over `bytes`, which start at file offset `base`; messages name `part`.
    pub(crate) fn new(bytes: &'a [u8], base: u64, part: &'static str) -> Self {
        Cursor {
            bytes,
            pos: 0,
            base,
            part,
        }
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos.min(self.bytes.len())
    }

    /// The next `n` bytes, or a [`NtcFormatError::Truncated`] naming `what`.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], NtcFormatError> {
        let slice = self
            .pos
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.pos..end))
            .ok_or_else(|| NtcFormatError::Truncated {
                what: format!("{} {what}", self.part),
                offset: self.base + self.pos as u64,
                needed: n as u64,
                available: self.remaining() as u64,
            })?;
        self.pos += n;
        Ok(slice)
    }

    /// The next `N` bytes.
    pub(crate) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], NtcFormatError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    /// The next little-endian `u32`.
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, NtcFormatError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    /// The next little-endian `u64`.
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, NtcFormatError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// The next little-endian `f32`.
    pub(crate) fn f32(&mut self, what: &str) -> Result<f32, NtcFormatError> {
        Ok(f32::from_le_bytes(self.array(what)?))
    }

    /// The next `n` little-endian `f32`s (the bytes are checked before allocating).
    pub(crate) fn f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>, NtcFormatError> {
        let bytes = self.take(self.byte_len(n, 4, what)?, what)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// The next `n` little-endian `f64`s (the bytes are checked before allocating).
    pub(crate) fn f64s(&mut self, n: usize, what: &str) -> Result<Vec<f64>, NtcFormatError> {
        let bytes = self.take(self.byte_len(n, 8, what)?, what)?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }

    /// `n · size` bytes, or a truncation error when that does not even fit a `usize`.
    fn byte_len(&self, n: usize, size: usize, what: &str) -> Result<usize, NtcFormatError> {
        n.checked_mul(size)
            .ok_or_else(|| NtcFormatError::Truncated {
                what: format!("{} {what}", self.part),
                offset: self.base + self.pos as u64,
                needed: u64::MAX,
                available: self.remaining() as u64,
            })
    }

    /// An error unless every byte was read.
    pub(crate) fn finish(&self) -> Result<(), NtcFormatError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(invalid(
                format!("section `{}`", self.part),
                format!("{n} unread bytes at its end"),
            )),
        }
    }
}

/// The config section.
fn parse_config(bytes: &[u8]) -> Result<NtcConfig, NtcFormatError> {
    let what = Section::Config.to_string();
    let mut c = Cursor::new(bytes, 0, Section::Config.name());
    let features = c.u32("features")?;
    let bits = c.u32("latent bits")?;
    let preset = c.u32("preset")?;
    let activation = c.u32("activation")?;
    let pe_waves = c.u32("positional-encoding waves")?;
    let hidden_count = c.u32("hidden layer count")?;
    check_count(
        &format!("{what} hidden layers"),
        hidden_count.into(),
        MAX_HIDDEN_LAYERS,
    )?;
    let hidden = (0..hidden_count)
        .map(|_| c.u32("hidden width"))
        .collect::<Result<Vec<_>, _>>()?;
    c.finish()?;
    let config = NtcConfig {
        features,
        latent_bits: LatentBits::try_from(bits).map_err(|e: ConfigError| invalid(&what, e))?,
        preset: Preset::from_code(preset)
            .ok_or_else(|| invalid(&what, format!("unknown preset code {preset}")))?,
        pe_waves,
        hidden,
        activation: Activation::from_code(activation)
            .ok_or_else(|| invalid(&what, format!("unknown activation code {activation}")))?,
    };
    config.validate().map_err(|e| invalid(&what, e))?;
    Ok(config)
}

/// The material table (latents still empty).
fn parse_materials(
    bytes: &[u8],
    count: usize,
    config: &NtcConfig,
) -> Result<Vec<NtcMaterial>, NtcFormatError> {
    let mut c = Cursor::new(bytes, 0, Section::Materials.name());
    let needed = count.saturating_mul(MIN_MATERIAL_LEN);
    if needed > bytes.len() {
        return Err(NtcFormatError::Truncated {
            what: format!("section `materials` ({count} materials)"),
            offset: 0,
            needed: needed as u64,
            available: bytes.len() as u64,
        });
    }
    let mut materials = Vec::with_capacity(count);
    for i in 0..count {
        let what = format!("section `materials`, material {i}");
        let name_len = c.u32("name length")?;
        check_count(
            &format!("{what} name bytes"),
            name_len.into(),
            MAX_NAME_BYTES,
        )?;
        let name = std::str::from_utf8(c.take(name_len as usize, "name")?)
            .map_err(|e| invalid(&what, format!("name is not UTF-8: {e}")))?
            .to_string();
        let present = c.u32("channel mask")?;
        let width = c.u32("width")?;
        let height = c.u32("height")?;
        let mips = c.u32("mip count")?;
        let grid_count = c.u32("grid count")?;
        let decoder = c.u32("decoder index")?;
        check_count(&format!("{what} mips"), mips.into(), MAX_MIPS)?;
        check_count(&format!("{what} grids"), grid_count.into(), MAX_GRIDS)?;
        let mut constants = [0f32; CHANNELS];
        for v in &mut constants {
            *v = c.f32("constants")?;
        }
        let mut quality = Quality::default();
        for p in &mut quality.psnr {
            let v = c.f32("quality")?;
            *p = (!v.is_nan()).then_some(v);
        }
        let grids = (0..grid_count)
            .map(|_| {
                Ok(GridShape {
                    width: c.u32("grid width")?,
                    height: c.u32("grid height")?,
                })
            })
            .collect::<Result<Vec<_>, NtcFormatError>>()?;
        let pairs = (0..mips)
            .map(|_| {
                Ok(MipPair {
                    fine: c.u32("fine grid")?,
                    coarse: c.u32("coarse grid")?,
                })
            })
            .collect::<Result<Vec<_>, NtcFormatError>>()?;
        let present = u16::try_from(present)
            .ok()
            .map(ChannelMask)
            .filter(|m| ChannelMask::ALL.contains(*m))
            .ok_or_else(|| {
                invalid(
                    &what,
                    format!("channel mask {present:#x} has bits beyond channel 11"),
                )
            })?;
        let layout = LatentLayout::from_parts(width, height, config.features, grids, pairs)
            .map_err(|e| invalid(&what, e))?;
        materials.push(NtcMaterial {
            name,
            present,
            layout,
            decoder,
            constants,
            quality,
            latents: Vec::new(),
        });
    }
    c.finish()?;
    Ok(materials)
}

/// The decoders section.
fn parse_decoders(
    bytes: &[u8],
    count: usize,
    config: &NtcConfig,
) -> Result<Vec<Vec<f16>>, NtcFormatError> {
    let params = config.decoder_param_count();
    let expected = count.checked_mul(params).and_then(|n| n.checked_mul(2));
    if expected != Some(bytes.len()) {
        return Err(invalid(
            Section::Decoders.to_string(),
            format!(
                "holds {} bytes, {count} decoders of {params} f16 parameters need {}",
                bytes.len(),
                expected.map_or_else(|| "more".to_string(), |n| n.to_string())
            ),
        ));
    }
    let mut decoders = Vec::with_capacity(count);
    for (d, chunk) in bytes.chunks_exact(params * 2).enumerate().take(count) {
        let weights: Vec<f16> = chunk
            .chunks_exact(2)
            .map(|b| f16::from_bits(u16::from_le_bytes([b[0], b[1]])))
            .collect();
        if let Some(i) = weights.iter().position(|w| !w.is_finite()) {
            return Err(invalid(
                format!("section `decoders`, decoder {d}"),
                format!("parameter {i} is not finite"),
            ));
        }
        decoders.push(weights);
    }
    Ok(decoders)
}

/// The latents section, split among `materials` by their layouts.
fn parse_latents(
    bytes: &[u8],
    materials: &mut [NtcMaterial],
    config: &NtcConfig,
) -> Result<(), NtcFormatError> {
    let what = Section::Latents.to_string();
    let total = materials.iter().try_fold(0usize, |acc, m| {
        m.layout
            .packed_words(config.latent_bits)
            .checked_mul(4)
            .and_then(|n| acc.checked_add(n))
    });
    if total != Some(bytes.len()) {
        return Err(invalid(
            what,
            format!(
                "holds {} bytes, the material layouts need {}",
                bytes.len(),
                total.map_or_else(|| "more".to_string(), |n| n.to_string())
            ),
        ));
    }
    let mut c = Cursor::new(bytes, 0, Section::Latents.name());
    for m in materials {
        let words = m.layout.packed_words(config.latent_bits);
        m.latents = c
            .take(words * 4, "material latents")?
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
    }
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ntc::model::SplitMix64;
    use crate::ntc::train::{TrainConfig, TrainedMaterial, train_cpu};
    use crate::texture::{SetMip, TextureSet};

    fn small_config() -> NtcConfig {
        NtcConfig {
            features: 4,
            hidden: vec![8],
            activation: Activation::LeakyRelu,
            preset: Preset::Medium,
            ..NtcConfig::default()
        }
    }

    /// A group of untrained materials of the given sizes.
    fn group(config: &NtcConfig, sizes: &[(&str, u32, u32)], seed: u64) -> TrainedGroup {
        let layouts = sizes
            .iter()
            .map(|&(_, w, h)| {
                let mips = crate::ntc::model::full_mip_count(w, h);
                LatentLayout::new(w, h, mips, config.preset, config.features).expect("layout")
            })
            .collect();
        let model = GroupModel::init(config, layouts, seed).expect("model");
        let mut quality = Quality::default();
        quality.psnr[0] = Some(31.5);
        quality.psnr[2] = Some(f32::INFINITY);
        TrainedGroup {
            model,
            materials: sizes
                .iter()
                .map(|&(name, _, _)| TrainedMaterial {
                    name: name.into(),
                    present: ChannelMask::BASE_COLOR | ChannelMask::NORMAL,
                    quality,
                })
                .collect(),
            losses: Vec::new(),
        }
    }

    /// Two decoders, three materials (one non-square, one with a non-ASCII name).
    fn small_package() -> NtcPackage {
        let config = small_config();
        let mut package = NtcPackage::new(config.clone()).expect("package");
        let a = group(&config, &[("brick", 16, 16), ("Ziegel·Wand", 16, 4)], 1);
        let b = group(&config, &[("wood", 8, 8)], 2);
        let constants = |k: f32| std::array::from_fn(|c| k + c as f32 * 0.125);
        assert_eq!(
            package
                .add_group(&a, &[constants(1.0), constants(0.5)])
                .expect("a"),
            0
        );
        assert_eq!(package.add_group(&b, &[constants(0.25)]).expect("b"), 1);
        package
    }

    /// Assemble a file from header fields and section payloads with valid checksums.
    /// The sections of `package` (3 materials, 2 decoders) written as a file, past the
    /// writer's checks.
    fn sections_of(package: &NtcPackage) -> Vec<u8> {
        assemble(
            3,
            2,
            [
                &package.config_bytes(),
                &package.material_bytes(),
                &package.decoder_bytes(),
                &package.latent_bytes(),
            ],
        )
    }

    fn assemble(materials: u32, decoders: u32, payloads: [&[u8]; 4]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        for v in [VERSION, materials, decoders, 4, 0] {
            put_u32(&mut out, v);
        }
        for p in payloads {
            out.extend_from_slice(&(p.len() as u64).to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        put_u32(&mut out, crc);
        for (s, p) in Section::ALL.iter().zip(payloads) {
            out.extend_from_slice(&s.tag());
            out.extend_from_slice(&(p.len() as u64).to_le_bytes());
            put_u32(&mut out, crc32fast::hash(p));
            out.extend_from_slice(p);
        }
        out
    }

    /// Offset of a section's payload in `bytes` of `package`.
    fn payload_offset(package: &NtcPackage, section: Section) -> usize {
        let lens = [
            package.config_bytes().len(),
            package.material_bytes().len(),
            package.decoder_bytes().len(),
            package.latent_bytes().len(),
        ];
        let index = Section::ALL
            .iter()
            .position(|&s| s == section)
            .expect("section");
        HEADER_LEN
            + lens[..index]
                .iter()
                .map(|l| l + SECTION_HEADER_LEN)
                .sum::<usize>()
            + SECTION_HEADER_LEN
    }

    #[test]
    fn round_trip_through_bytes_and_files() {
        let package = small_package();
        let bytes = package.to_bytes().expect("bytes");
        let back = NtcPackage::from_bytes(&bytes).expect("parse");
        assert_eq!(back, package);
        assert_eq!(back.materials[1].name, "Ziegel·Wand");
        assert_eq!(back.materials[2].decoder, 1);
        assert_eq!(back.materials[0].quality.psnr[2], Some(f32::INFINITY));
        assert_eq!(back.materials[0].quality.psnr[1], None);
        assert_eq!(
            back.materials[1].layout.grids()[0],
            GridShape {
                width: 2,
                height: 1
            }
        );

        let dir = std::env::temp_dir().join(format!("neurotex_ntc_{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("scene.ntc");
        package.write(&path).expect("write");
        let read = NtcPackage::read(&path).expect("read");
        assert_eq!(read.source(), Some(path.as_path()));
        assert_eq!(read, package);
        assert_eq!(read.to_bytes().expect("bytes"), bytes);
        // Never over the input, also when spelled differently.
        let err = read
            .write(&dir.join(".").join("scene.ntc"))
            .expect_err("overwrite");
        assert!(
            matches!(err, NtcFormatError::OverwritesInput { .. }),
            "{err}"
        );
        read.write(&dir.join("copy.ntc")).expect("write elsewhere");
        assert_eq!(std::fs::read(dir.join("copy.ntc")).expect("copy"), bytes);
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .expect("list")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
        let missing = NtcPackage::read(&dir.join("missing.ntc")).expect_err("missing");
        assert!(missing.to_string().contains("missing.ntc"), "{missing}");
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn groups_may_have_their_own_preset() {
        // Rate control gives each group its own latent resolution; the header names the
        // requested preset (Medium here).
        let mut package = small_package();
        let high = NtcConfig {
            preset: Preset::High,
            ..small_config()
        };
        package
            .add_group(&group(&high, &[("tile", 16, 16)], 3), &[[1.0; CHANNELS]])
            .expect("a group at another preset");
        assert_ne!(package.materials[3].layout, package.materials[0].layout);
        let back = NtcPackage::from_bytes(&package.to_bytes().expect("bytes")).expect("parse");
        assert_eq!(back, package);
    }

    #[test]
    fn trained_group_decodes_identically_after_packaging() {
        let texels = (0..64u32)
            .flat_map(|i| {
                let v = (i * 4) as u8;
                [v, 255 - v, 128, 255, 128, 128, 255, 255, 255, 255, 255, 255]
            })
            .collect();
        let set = TextureSet::from_mip0(
            "ramp",
            ChannelMask::BASE_COLOR,
            SetMip {
                width: 8,
                height: 8,
                texels,
            },
        );
        let config = TrainConfig {
            model: small_config(),
            batch_size: 16,
            ..TrainConfig::default()
        };
        let trained = train_cpu(&[set], &config, 10, 5).expect("train");
        let mut package = NtcPackage::new(config.model.clone()).expect("package");
        package
            .add_group(&trained, &[[1.0; CHANNELS]])
            .expect("add");
        let back = NtcPackage::from_bytes(&package.to_bytes().expect("bytes")).expect("parse");
        let (model, materials) = back.group_model(0).expect("model");
        assert_eq!(materials, [0]);
        assert_eq!(model, trained.model);
        assert_eq!(back.materials[0].quality, trained.materials[0].quality);
        assert!(back.group_model(1).is_err());
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = small_package().to_bytes().expect("bytes");
        for n in 0..bytes.len() {
            let err = NtcPackage::from_bytes(&bytes[..n]).expect_err("truncated");
            assert!(
                matches!(err, NtcFormatError::Truncated { .. }),
                "length {n}: {err}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            NtcPackage::from_bytes(&longer),
            Err(NtcFormatError::TrailingBytes { count: 1 })
        ));
    }

    #[test]
    fn flipped_bytes_are_caught() {
        let package = small_package();
        let bytes = package.to_bytes().expect("bytes");
        // Every single flipped byte anywhere is an error.
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(NtcPackage::from_bytes(&bad).is_err(), "byte {i}");
        }
        // In a payload it is that section's checksum.
        for section in Section::ALL {
            let mut bad = bytes.clone();
            bad[payload_offset(&package, section)] ^= 1;
            let err = NtcPackage::from_bytes(&bad).expect_err("flipped");
            assert_eq!(
                err.to_string().split(" (").next(),
                Some(format!("section `{}` checksum mismatch", section.name()).as_str())
            );
        }
        let mut bad = bytes.clone();
        bad[9] ^= 1; // material count
        let err = NtcPackage::from_bytes(&bad).expect_err("header");
        assert!(
            err.to_string().starts_with("header checksum mismatch"),
            "{err}"
        );
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(matches!(
            NtcPackage::from_bytes(&bad),
            Err(NtcFormatError::BadMagic { .. })
        ));
        let mut bad = bytes;
        bad[HEADER_LEN] = b'X'; // the config section's tag
        let err = NtcPackage::from_bytes(&bad).expect_err("tag");
        assert!(
            matches!(
                err,
                NtcFormatError::SectionTag {
                    expected: Section::Config,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn wrong_version_is_named() {
        let mut bytes = small_package().to_bytes().expect("bytes");
        bytes[4..8].copy_from_slice(&2u32.to_le_bytes());
        let err = NtcPackage::from_bytes(&bytes).expect_err("version");
        assert!(matches!(
            err,
            NtcFormatError::UnsupportedVersion { found: 2 }
        ));
        assert_eq!(
            err.to_string(),
            "unsupported .ntc version 2 (this build reads version 1)"
        );
    }

    #[test]
    fn absurd_counts_and_sizes_do_not_allocate() {
        let package = small_package();
        let config = package.config_bytes();
        // 2^31 materials announced in a 100-byte file (valid checksums throughout).
        let mut bytes = assemble(1 << 31, 0, [&config, &[], &[], &[]]);
        bytes.resize(100, 0);
        let err = NtcPackage::from_bytes(&bytes).expect_err("absurd");
        assert!(
            matches!(
                err,
                NtcFormatError::TooMany {
                    count: 2_147_483_648,
                    ..
                }
            ),
            "{err}"
        );
        let exact = assemble(1 << 31, 0, [&config, &[], &[], &[]]);
        assert!(matches!(
            NtcPackage::from_bytes(&exact),
            Err(NtcFormatError::TooMany { .. })
        ));
        // Under the cap but far more than the section holds: refused before any table.
        let bytes = assemble(60_000, 0, [&config, &[0; 8], &[], &[]]);
        let err = NtcPackage::from_bytes(&bytes).expect_err("short table");
        assert!(err.to_string().contains("60000 materials"), "{err}");
        // A section length of 2^62 bytes.
        let mut bytes = assemble(0, 0, [&config, &[], &[], &[]]);
        bytes[32..40].copy_from_slice(&(1u64 << 62).to_le_bytes());
        let crc = crc32fast::hash(&bytes[..HEADER_CRC_SPAN]);
        bytes[HEADER_CRC_SPAN..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            NtcPackage::from_bytes(&bytes),
            Err(NtcFormatError::Truncated { .. })
        ));
        // u64 overflow of the total.
        bytes[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        let crc = crc32fast::hash(&bytes[..HEADER_CRC_SPAN]);
        bytes[HEADER_CRC_SPAN..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        assert!(NtcPackage::from_bytes(&bytes).is_err());
        // A name longer than the cap.
        let mut table = Vec::new();
        put_u32(&mut table, 5000);
        table.resize(6000, 0);
        let err = NtcPackage::from_bytes(&assemble(1, 0, [&config, &table, &[], &[]]))
            .expect_err("long name");
        assert!(err.to_string().contains("name bytes"), "{err}");
        // A decoder count the section cannot hold.
        let err = NtcPackage::from_bytes(&assemble(0, 65_536, [&config, &[], &[0; 10], &[]]))
            .expect_err("decoders");
        assert!(err.to_string().starts_with("section `decoders`"), "{err}");
    }

    #[test]
    fn inconsistent_packages_are_refused_both_ways() {
        let package = small_package();
        let mut bad = package.clone();
        bad.materials[0].decoder = 7;
        let err = bad.to_bytes().expect_err("decoder index");
        assert!(err.to_string().contains("decoder 7 of 2"), "{err}");
        // The same table written around the writer's checks is refused by the reader.
        let bytes = sections_of(&bad);
        let err = NtcPackage::from_bytes(&bytes).expect_err("decoder index");
        assert!(err.to_string().contains("decoder 7 of 2"), "{err}");

        let mut bad = package.clone();
        bad.materials[1].latents.pop();
        assert!(bad.to_bytes().is_err());
        let bytes = sections_of(&bad);
        let err = NtcPackage::from_bytes(&bytes).expect_err("latent words");
        assert!(err.to_string().starts_with("section `latents`"), "{err}");

        let mut bad = package.clone();
        bad.decoders[1][3] = f16::NAN;
        assert!(bad.to_bytes().is_err());
        let mut bad = package.clone();
        bad.materials[0].name = "x".repeat(MAX_NAME_BYTES + 1);
        assert!(matches!(
            bad.to_bytes(),
            Err(NtcFormatError::TooMany { .. })
        ));
        let mut bad = package;
        bad.materials[0].present = ChannelMask(1 << 14);
        assert!(bad.to_bytes().is_err());
        let other = NtcConfig {
            features: 8,
            ..small_config()
        };
        let mut p = NtcPackage::new(other).expect("package");
        let g = group(&small_config(), &[("a", 4, 4)], 1);
        assert!(p.add_group(&g, &[[1.0; CHANNELS]]).is_err());
        assert!(
            p.add_group(&group(&p.config.clone(), &[("a", 4, 4)], 1), &[])
                .is_err()
        );
    }

    #[test]
    fn random_corruption_never_panics() {
        let bytes = small_package().to_bytes().expect("bytes");
        let mut rng = SplitMix64::new(99);
        for _ in 0..2000 {
            let mut bad = bytes.clone();
            for _ in 0..=rng.below(4) {
                let i = rng.below(bad.len() as u64) as usize;
                bad[i] = rng.next_u64() as u8;
            }
            let cut = rng.below(bad.len() as u64 + 1) as usize;
            let _ = NtcPackage::from_bytes(&bad[..cut]);
        }
        // Pure noise, with and without a valid magic.
        for len in [0, 3, 60, 61, 200] {
            let mut noise: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            let _ = NtcPackage::from_bytes(&noise);
            if len >= 4 {
                noise[..4].copy_from_slice(&MAGIC);
                assert!(NtcPackage::from_bytes(&noise).is_err());
            }
        }
    }
}
