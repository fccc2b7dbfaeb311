//! Textures: image decoding, canonical texture sets, mip chains and manifests.
//!
//! Every material's textures become one *texture set* with a fixed, canonical layout of
//! [`CHANNELS`] = 12 channels, so that a decoder shared by several materials finds the
//! same meaning in the same output channel:
//!
//! | channel | content | encoding |
//! |---|---|---|
//! | 0–2 | base colour RGB | sRGB-encoded |
//! | 3 | alpha / mask | linear |
//! | 4–5 | tangent-space normal X, Y (Z rebuilt) | \[-1, 1\] → \[0, 1\] |
//! | 6 | occlusion | linear |
//! | 7 | roughness | linear |
//! | 8 | metallic | linear |
//! | 9–11 | emissive RGB | sRGB-encoded |
//!
//! The channels are stored as [`GROUPS`] = 3 RGBA groups that map 1:1 to three GPU
//! textures: group 0 = channels 0–3 (`Rgba8UnormSrgb`), group 1 = channels 4–7
//! (`Rgba8Unorm`), group 2 = channels 8–11 (`Rgba8Unorm`; the shader decodes the sRGB
//! emissive itself).
//!
//! Sub-modules:
//! - [`image_io`]: PNG/JPEG decoding (8 and 16 bit), DDS/KTX2 through [`containers`], and
//!   atomic PNG writing.
//! - [`containers`]: DDS and KTX2 (uncompressed and BC1–BC7) read, block-compressed mip
//!   chains written.
//! - [`folder`]: manifests from texture folders by naming convention.
//! - [`set`]: texture set identities ([`TextureSetDesc`]), deduplication over a scene's
//!   materials and loading into canonical texels.
//! - [`mips`]: mip chains (linear-light colour, renormalised normals).
//! - [`srgb`]: the sRGB transfer function (exact, platform-independent) and its tables.
//! - [`manifest`]: Bistro-style manifest CSVs and the `texture_sets.csv` report.
//! - [`metrics`]: PSNR, the one convention of every report (per channel group and
//!   pooled, exact matches capped at 99 dB and marked).
//! - [`bcn`]: BCn baselines measured with it.
//! - [`flip`]: ꟻLIP beside PSNR, per shipped image of a set and for rendered frames.

pub mod bcn;
pub mod budget;
pub mod containers;
pub mod flip;
pub mod folder;
pub mod image_io;
pub mod manifest;
pub mod metrics;
pub mod mips;
pub mod set;
pub mod srgb;

use std::path::{Path, PathBuf};

pub use image_io::{
    DecodedImage, OutputFormat, Samples, decode, output_format, write_image_rgba8, write_png_rgba8,
};
pub use manifest::{ManifestEntry, read_manifest};
pub use mips::build_mip_chain;
pub use set::{
    LoadOptions, LoadedSet, SceneTextures, SetMip, Slot, TextureSet, TextureSetDesc,
    relevant_channels, scene_texture_sets, set_constants,
};
pub use srgb::{linear_to_srgb, srgb_to_linear};

/// Number of canonical channels per texel.
pub const CHANNELS: usize = 12;

/// The named channel groups of the canonical layout, in channel order; together they
/// cover every channel once.
pub const CHANNEL_GROUPS: [(ChannelMask, &str); 7] = [
    (ChannelMask::BASE_COLOR, "base_color"),
    (ChannelMask::ALPHA, "alpha"),
    (ChannelMask::NORMAL, "normal"),
    (ChannelMask::OCCLUSION, "occlusion"),
    (ChannelMask::ROUGHNESS, "roughness"),
    (ChannelMask::METALLIC, "metallic"),
    (ChannelMask::EMISSIVE, "emissive"),
];

/// The four images a material's channels ship in: the textures of the BCn baselines and
/// of `decompress`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageGroup {
    /// Base colour RGB and alpha (channels 0–3).
    BaseColor,
    /// Normal X, Y (4–5).
    Normal,
    /// Occlusion, roughness, metallic (6–8).
    Orm,
    /// Emissive RGB (9–11).
    Emissive,
}

impl ImageGroup {
    /// Every image, in channel order.
    pub const ALL: [ImageGroup; 4] = [Self::BaseColor, Self::Normal, Self::Orm, Self::Emissive];

    /// The image's channels.
    pub const fn mask(self) -> ChannelMask {
        match self {
            Self::BaseColor => ChannelMask(ChannelMask::BASE_COLOR.0 | ChannelMask::ALPHA.0),
            Self::Normal => ChannelMask::NORMAL,
            Self::Orm => ChannelMask(
                ChannelMask::OCCLUSION.0 | ChannelMask::ROUGHNESS.0 | ChannelMask::METALLIC.0,
            ),
            Self::Emissive => ChannelMask::EMISSIVE,
        }
    }

    /// Name used in file names.
    pub const fn name(self) -> &'static str {
        match self {
            Self::BaseColor => "base_color",
            Self::Normal => "normal",
            Self::Orm => "orm",
            Self::Emissive => "emissive",
        }
    }
}

/// Number of RGBA groups (GPU textures) the channels are stored in.
pub const GROUPS: usize = 3;

/// Whether each group is uploaded as an sRGB texture (`Rgba8UnormSrgb`) rather than
/// `Rgba8Unorm`. Only group 0 (base colour + alpha) is.
pub const GROUP_IS_SRGB: [bool; GROUPS] = [true, false, false];

/// Largest accepted image side in pixels; larger images are refused before decoding.
/// Defined with the scene types, whose built-in texture size it also bounds.
pub use crate::scene::MAX_IMAGE_SIDE;

/// Errors raised while reading, converting or writing textures. Every variant names the
/// file (or embedded image) involved.
#[derive(Debug, thiserror::Error)]
pub enum TextureError {
    /// An image or manifest file does not exist.
    #[error("missing file {file}")]
    Missing {
        /// The file (or embedded image name).
        file: String,
    },
    /// A file exists but could not be read or written.
    #[error("i/o error on {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The image crate could not decode an image.
    #[error("cannot decode {file}: {message}")]
    Decode {
        /// The file (or embedded image name).
        file: String,
        /// The image crate's message.
        message: String,
    },
    /// The image crate could not encode an image.
    #[error("cannot encode {file}: {message}")]
    Encode {
        /// The file being written.
        file: String,
        /// The image crate's message.
        message: String,
    },
    /// The image decoded, but its pixel format or container format is not supported.
    #[error(
        "{file}: unsupported pixel format {format} (expected 8- or 16-bit gray, gray+alpha, RGB or RGBA PNG, JPEG, TGA or WebP, or a 2D DDS or KTX2 texture, uncompressed or BC1–BC7)"
    )]
    UnsupportedFormat {
        /// The file (or embedded image name).
        file: String,
        /// The format found, as the image crate names it.
        format: String,
    },
    /// The image is larger than [`MAX_IMAGE_SIDE`] on a side (or has a zero side).
    #[error("{file}: image of {width}×{height} is outside the accepted size (1..={max} per side)")]
    TooLarge {
        /// The file (or embedded image name).
        file: String,
        /// Width from the image header.
        width: u32,
        /// Height from the image header.
        height: u32,
        /// The largest accepted side.
        max: u32,
    },
    /// A manifest lacks a required column.
    #[error("{path}: required column `{column}` is missing from the header")]
    ManifestColumn {
        /// The manifest file.
        path: PathBuf,
        /// The column name.
        column: String,
    },
    /// A manifest row holds a bad value.
    #[error("{path}: row {row}, column `{column}`: {reason}")]
    ManifestRow {
        /// The manifest file.
        path: PathBuf,
        /// 1-based line number of the row in the file (the header is row 1).
        row: u64,
        /// The column name.
        column: String,
        /// What is wrong.
        reason: String,
    },
    /// A CSV file is structurally invalid (unequal field counts, bad UTF-8, ...).
    #[error("{path}: invalid CSV: {message}")]
    Csv {
        /// The CSV file.
        path: PathBuf,
        /// The csv crate's message (it includes the line).
        message: String,
    },
    /// Decoding would need more memory than the budget allows.
    #[error(transparent)]
    OverBudget(#[from] budget::OverBudget),
    /// Images of one set whose sizes are too far apart to resample into one.
    #[error("{set}: {reason}")]
    SizeMismatch {
        /// The set (its images' names).
        set: String,
        /// What disagrees, and by how much.
        reason: String,
    },
    /// Arguments that do not fit together (buffer length, table lengths, ...).
    #[error("{file}: invalid input: {reason}")]
    InvalidInput {
        /// The file being produced or read.
        file: String,
        /// What is wrong.
        reason: String,
    },
}

impl TextureError {
    /// A failed read of `path` (named `file` in the message): [`TextureError::Missing`]
    /// when it does not exist, else [`TextureError::Io`].
    pub(crate) fn read(path: &Path, file: &str, e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::NotFound {
            TextureError::Missing {
                file: file.to_string(),
            }
        } else {
            TextureError::Io {
                path: path.to_path_buf(),
                source: e,
            }
        }
    }

    /// [`TextureError::TooLarge`] unless `width`×`height` is within
    /// `1..=`[`MAX_IMAGE_SIDE`] per side.
    pub(crate) fn check_size(file: &str, width: u32, height: u32) -> Result<(), Self> {
        if width == 0 || height == 0 || width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE {
            return Err(TextureError::TooLarge {
                file: file.to_string(),
                width,
                height,
                max: MAX_IMAGE_SIDE,
            });
        }
        Ok(())
    }
}

/// One canonical channel. `Channel as usize` is its index in a texel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Channel {
    /// Base colour red (sRGB-encoded).
    BaseR = 0,
    /// Base colour green (sRGB-encoded).
    BaseG = 1,
    /// Base colour blue (sRGB-encoded).
    BaseB = 2,
    /// Alpha / mask (linear).
    Alpha = 3,
    /// Tangent-space normal X, \[-1, 1\] → \[0, 1\].
    NormalX = 4,
    /// Tangent-space normal Y, \[-1, 1\] → \[0, 1\] (OpenGL convention, +Y up).
    NormalY = 5,
    /// Ambient occlusion (linear).
    Occlusion = 6,
    /// Perceptual roughness (linear).
    Roughness = 7,
    /// Metallic (linear).
    Metallic = 8,
    /// Emissive red (sRGB-encoded).
    EmissiveR = 9,
    /// Emissive green (sRGB-encoded).
    EmissiveG = 10,
    /// Emissive blue (sRGB-encoded).
    EmissiveB = 11,
}

impl Channel {
    /// All channels in index order.
    pub const ALL: [Channel; CHANNELS] = [
        Channel::BaseR,
        Channel::BaseG,
        Channel::BaseB,
        Channel::Alpha,
        Channel::NormalX,
        Channel::NormalY,
        Channel::Occlusion,
        Channel::Roughness,
        Channel::Metallic,
        Channel::EmissiveR,
        Channel::EmissiveG,
        Channel::EmissiveB,
    ];

    /// The channel's index in a texel (0–11).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The channel with index `i`, if `i < CHANNELS`.
    pub fn from_index(i: usize) -> Option<Channel> {
        Channel::ALL.get(i).copied()
    }

    /// A short lowercase name (`base_r`, `normal_x`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Channel::BaseR => "base_r",
            Channel::BaseG => "base_g",
            Channel::BaseB => "base_b",
            Channel::Alpha => "alpha",
            Channel::NormalX => "normal_x",
            Channel::NormalY => "normal_y",
            Channel::Occlusion => "occlusion",
            Channel::Roughness => "roughness",
            Channel::Metallic => "metallic",
            Channel::EmissiveR => "emissive_r",
            Channel::EmissiveG => "emissive_g",
            Channel::EmissiveB => "emissive_b",
        }
    }

    /// True for the sRGB-encoded colour channels (base colour and emissive RGB).
    pub const fn is_srgb(self) -> bool {
        matches!(
            self,
            Channel::BaseR
                | Channel::BaseG
                | Channel::BaseB
                | Channel::EmissiveR
                | Channel::EmissiveG
                | Channel::EmissiveB
        )
    }

    /// The value (in \[0, 1\]) a channel takes when the material has no texture for it:
    /// 0.5 for the normal's X and Y (a flat normal), 1.0 otherwise (the material's
    /// constant factor then multiplies in, as in glTF).
    pub const fn neutral(self) -> f32 {
        match self {
            Channel::NormalX | Channel::NormalY => 0.5,
            _ => 1.0,
        }
    }

    /// The neutral value quantised to 8 bits (128 for normal X/Y, 255 otherwise).
    pub const fn neutral_u8(self) -> u8 {
        match self {
            Channel::NormalX | Channel::NormalY => 128,
            _ => 255,
        }
    }

    /// The GPU texture group (0–2) holding this channel.
    pub const fn group(self) -> usize {
        self.index() / 4
    }
}

/// A set of canonical channels, one bit per channel index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ChannelMask(pub u16);

impl ChannelMask {
    /// No channel.
    pub const NONE: ChannelMask = ChannelMask(0);
    /// Base colour RGB (channels 0–2).
    pub const BASE_COLOR: ChannelMask = ChannelMask(0b111);
    /// Alpha (channel 3).
    pub const ALPHA: ChannelMask = ChannelMask(1 << 3);
    /// Normal X, Y (channels 4–5).
    pub const NORMAL: ChannelMask = ChannelMask(0b11 << 4);
    /// Occlusion (channel 6).
    pub const OCCLUSION: ChannelMask = ChannelMask(1 << 6);
    /// Roughness (channel 7).
    pub const ROUGHNESS: ChannelMask = ChannelMask(1 << 7);
    /// Metallic (channel 8).
    pub const METALLIC: ChannelMask = ChannelMask(1 << 8);
    /// Emissive RGB (channels 9–11).
    pub const EMISSIVE: ChannelMask = ChannelMask(0b111 << 9);
    /// All 12 channels.
    pub const ALL: ChannelMask = ChannelMask((1 << CHANNELS) - 1);

    /// The four channels of GPU texture group `group` (0–2, [`Channel::group`]): base
    /// colour + alpha, normal + occlusion + roughness, metallic + emissive.
    pub const fn texture_group(group: usize) -> ChannelMask {
        ChannelMask((0xF << (4 * group)) & ChannelMask::ALL.0)
    }

    /// The mask holding only `channel`.
    pub const fn of(channel: Channel) -> ChannelMask {
        ChannelMask(1 << channel.index())
    }

    /// True when channel index `i` is in the mask (false for `i >= CHANNELS`).
    pub const fn has(self, i: usize) -> bool {
        i < CHANNELS && self.0 & (1 << i) != 0
    }

    /// True when every channel of `other` is in the mask.
    pub const fn contains(self, other: ChannelMask) -> bool {
        self.0 & other.0 == other.0
    }

    /// True when the masks share at least one channel.
    pub const fn intersects(self, other: ChannelMask) -> bool {
        self.0 & other.0 != 0
    }

    /// True when no channel is set.
    pub const fn is_empty(self) -> bool {
        self.0 & ChannelMask::ALL.0 == 0
    }

    /// Number of channels set.
    pub const fn count(self) -> u32 {
        (self.0 & ChannelMask::ALL.0).count_ones()
    }

    /// The channels in the mask, in index order.
    pub fn channels(self) -> impl Iterator<Item = Channel> {
        Channel::ALL
            .into_iter()
            .filter(move |c| self.has(c.index()))
    }
}

impl std::fmt::Display for ChannelMask {
    /// Named groups joined by `+` (`base_color+alpha+normal`), single channel names for
    /// partial groups, `none` when empty.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<&str> = Vec::new();
        for (group, name) in CHANNEL_GROUPS {
            if self.contains(group) {
                parts.push(name);
            } else {
                parts.extend((*self & group).channels().map(Channel::name));
            }
        }
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join("+"))
        }
    }
}

impl std::ops::BitOr for ChannelMask {
    type Output = ChannelMask;
    fn bitor(self, rhs: ChannelMask) -> ChannelMask {
        ChannelMask(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for ChannelMask {
    fn bitor_assign(&mut self, rhs: ChannelMask) {
        self.0 |= rhs.0;
    }
}

impl std::ops::BitAnd for ChannelMask {
    type Output = ChannelMask;
    fn bitand(self, rhs: ChannelMask) -> ChannelMask {
        ChannelMask(self.0 & rhs.0)
    }
}

/// Quantise a value in \[0, 1\] to 8 bits (round to nearest, clamped; NaN → 0).
pub fn quantize_u8(v: f32) -> u8 {
    // `as` saturates and maps NaN to 0.
    (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u8
}

/// Write `bytes` to `path` through a temporary file in the same folder and a rename, so
/// readers never see a half-written file.
pub(crate) fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<(), TextureError> {
    // Errors name the destination, never the hidden temporary file.
    crate::io::write_atomic(path, bytes).map_err(|source| TextureError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_cover_all_channels_once() {
        let groups = [
            ChannelMask::BASE_COLOR,
            ChannelMask::ALPHA,
            ChannelMask::NORMAL,
            ChannelMask::OCCLUSION,
            ChannelMask::ROUGHNESS,
            ChannelMask::METALLIC,
            ChannelMask::EMISSIVE,
        ];
        let mut all = ChannelMask::NONE;
        for g in groups {
            assert!(!all.intersects(g));
            all |= g;
        }
        assert_eq!(all, ChannelMask::ALL);
        assert_eq!(all.count(), CHANNELS as u32);
        assert_eq!(
            ChannelMask::NORMAL.channels().collect::<Vec<_>>(),
            vec![Channel::NormalX, Channel::NormalY]
        );
        assert!(ChannelMask::of(Channel::Metallic) == ChannelMask::METALLIC);
        assert!(!ChannelMask::ALL.has(CHANNELS));
        assert_eq!(
            (ChannelMask::BASE_COLOR | ChannelMask::NORMAL).to_string(),
            "base_color+normal"
        );
        assert_eq!(
            (ChannelMask::of(Channel::BaseG) | ChannelMask::METALLIC).to_string(),
            "base_g+metallic"
        );
        assert_eq!(ChannelMask::NONE.to_string(), "none");
    }

    #[test]
    fn channel_indices_and_groups() {
        for (i, c) in Channel::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(Channel::from_index(i), Some(*c));
        }
        assert_eq!(Channel::from_index(12), None);
        assert_eq!(Channel::Alpha.group(), 0);
        assert_eq!(Channel::Roughness.group(), 1);
        assert_eq!(Channel::Metallic.group(), 2);
        assert_eq!(Channel::EmissiveB.group(), 2);
        for g in 0..3 {
            let group = ChannelMask::texture_group(g);
            assert_eq!(group.count(), 4);
            assert!(group.channels().all(|c| c.group() == g));
        }
        assert_eq!(
            ChannelMask::texture_group(2),
            ChannelMask::METALLIC | ChannelMask::EMISSIVE
        );
        assert_eq!(ChannelMask::texture_group(3), ChannelMask::NONE);
    }
}
