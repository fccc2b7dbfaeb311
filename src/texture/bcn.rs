//! Block-compression baselines for quality reports: each texture set encoded the way a
//! game would ship it, decoded again, and measured with the same PSNR as NTC
//! ([`super::metrics`]: per channel group and pooled over the present channels).
//!
//! Three baselines over the full mip chain, only for the channel groups a set has:
//! - `BC1/BC5` (≈ 4–8 bpp per texture): base colour BC1 (BC3 when it has alpha),
//!   normal X/Y BC5, ORM BC1, emissive BC1;
//! - `BC7/BC5` (8 bpp per texture): base colour BC7, normal BC5, ORM BC7, emissive BC7;
//! - `BC4/BC5/BC7`, RTXNTC's protocol for comparing NTC with BCn: each image by the
//!   channels the set has in it, BC4 for one, BC5 for two, BC7 otherwise (an ORM image of
//!   roughness alone is BC4 at 4 bpp).
//!
//! On request each baseline's mip 0 is also measured with ꟻLIP ([`super::flip`]).
//!
//! Encoding uses Intel's ISPC texture compressor (`intel_tex_2`), decoding a pure-Rust
//! decoder (`texture2ddecoder`); [`encode_rgba`] and [`decode_blocks`] are the two halves,
//! also behind `decompress --format dds|ktx2` and the GPU encoder's tests.

use super::flip::{FlipReport, flip_set_mip};
use super::metrics::{ErrorAccumulator, PsnrReport};
use super::{CHANNELS, ChannelMask, ImageGroup, SetMip, TextureSet};

/// A block format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum BlockFormat {
    /// RGB, 4 bpp.
    Bc1,
    /// RGBA (interpolated alpha), 8 bpp.
    Bc3,
    /// One channel, 4 bpp.
    Bc4,
    /// Two channels, 8 bpp.
    Bc5,
    /// RGBA, 8 bpp, high quality.
    Bc7,
}

impl BlockFormat {
    /// Bytes per 4×4 block.
    pub const fn block_bytes(self) -> usize {
        match self {
            Self::Bc1 | Self::Bc4 => 8,
            _ => 16,
        }
    }
}

/// One baseline's result for one texture set.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BcnResult {
    /// Baseline name (`BC1/BC5`, `BC7/BC5`, `BC4/BC5/BC7`).
    pub name: &'static str,
    /// Compressed bytes over the whole mip chain.
    pub bytes: u64,
    /// Bits per mip-0 texel (whole chain, all textures of the set).
    pub bits_per_texel: f64,
    /// PSNR of mip 0 (NTC's quality is measured there too).
    pub psnr_mip0: PsnrReport,
    /// PSNR over every mip level.
    pub psnr_chain: PsnrReport,
    /// ꟻLIP of mip 0, when asked for.
    pub flip_mip0: Option<FlipReport>,
}

/// A baseline: the block format of each of a set's four images.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Baseline {
    /// Base colour BC1 (BC3 with alpha), normal BC5, ORM BC1, emissive BC1.
    Bc1Bc5,
    /// Base colour BC7, normal BC5, ORM BC7, emissive BC7.
    Bc7Bc5,
}

impl Baseline {
    /// Both, in report order.
    pub const ALL: [Baseline; 2] = [Self::Bc1Bc5, Self::Bc7Bc5];

    /// The name reports use.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Bc1Bc5 => "BC1/BC5",
            Self::Bc7Bc5 => "BC7/BC5",
        }
    }

    /// The format of each image, in [`ImageGroup::ALL`] order.
    pub const fn formats(self, has_alpha: bool) -> [BlockFormat; 4] {
        match self {
            Self::Bc1Bc5 => [
                if has_alpha {
                    BlockFormat::Bc3
                } else {
                    BlockFormat::Bc1
                },
                BlockFormat::Bc5,
                BlockFormat::Bc1,
                BlockFormat::Bc1,
            ],
            Self::Bc7Bc5 => [
                BlockFormat::Bc7,
                BlockFormat::Bc5,
                BlockFormat::Bc7,
                BlockFormat::Bc7,
            ],
        }
    }
}

impl Baseline {
    /// Bytes of the baseline's blocks for a set of `present` channels, `size` texels
    /// and `mips` levels: the images the set has, as [`bcn_baselines`] encodes them.
    pub fn bytes(self, present: ChannelMask, (width, height): (u32, u32), mips: u32) -> u64 {
        let blocks: u64 = (0..mips)
            .map(|l| {
                let (w, h) = ((width >> l).max(1), (height >> l).max(1));
                u64::from(w.div_ceil(4)) * u64::from(h.div_ceil(4))
            })
            .sum();
        ImageGroup::ALL
            .into_iter()
            .zip(self.formats(present.contains(ChannelMask::ALPHA)))
            .filter(|(group, _)| present.intersects(group.mask()))
            .map(|(_, format)| blocks * format.block_bytes() as u64)
            .sum()
    }
}

/// How an image is encoded in a baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    /// In this format, every channel of the image.
    Whole(BlockFormat),
    /// By the channels the set has in the image: BC4 for one, BC5 for two, BC7 otherwise.
    ByChannels,
}

/// The name of RTXNTC's per-texture baseline.
pub const PROTOCOL: &str = "BC4/BC5/BC7";

/// The baselines' encodings per group: (name, [base colour, normal, ORM, emissive]): the
/// two bundles ([`Baseline`]) and RTXNTC's per-texture protocol.
fn baselines(has_alpha: bool) -> [(&'static str, [Encoding; 4]); 3] {
    let whole = |b: Baseline| (b.name(), b.formats(has_alpha).map(Encoding::Whole));
    [
        whole(Baseline::Bc1Bc5),
        whole(Baseline::Bc7Bc5),
        (PROTOCOL, [Encoding::ByChannels; 4]),
    ]
}

/// The channels and format `encoding` gives image `group` of a set with `present`.
fn encode_as(
    group: ImageGroup,
    encoding: Encoding,
    present: ChannelMask,
) -> (Vec<usize>, BlockFormat) {
    let all = group_channels(group);
    match encoding {
        Encoding::Whole(format) => (all.to_vec(), format),
        Encoding::ByChannels => {
            let channels: Vec<usize> = all.iter().copied().filter(|&c| present.has(c)).collect();
            let format = match channels.len() {
                1 => BlockFormat::Bc4,
                2 => BlockFormat::Bc5,
                _ => BlockFormat::Bc7,
            };
            (channels, format)
        }
    }
}

/// Canonical channels of each image, in the order they go into the block texture.
fn group_channels(group: ImageGroup) -> &'static [usize] {
    match group {
        ImageGroup::BaseColor => &[0, 1, 2, 3],
        ImageGroup::Normal => &[4, 5],
        ImageGroup::Orm => &[6, 7, 8],
        ImageGroup::Emissive => &[9, 10, 11],
    }
}

/// Encode an RGBA8 image (`width × height`, rows unpadded) with `format`: the blocks,
/// row by row. Partial edge blocks repeat the last row and column. BC4 encodes red, BC5
/// red and green; BC7 uses ISPC's basic settings, with alpha when any texel is not opaque.
pub fn encode_rgba(rgba: &[u8], width: u32, height: u32, format: BlockFormat) -> Vec<u8> {
    let (w, h) = (width.max(1) as usize, height.max(1) as usize);
    let (pw, ph) = (w.div_ceil(4) * 4, h.div_ceil(4) * 4);
    let mut padded = vec![255u8; pw * ph * 4];
    for y in 0..ph {
        for x in 0..pw {
            let src = (y.min(h - 1) * w + x.min(w - 1)) * 4;
            let dst = (y * pw + x) * 4;
            if let Some(px) = rgba.get(src..src + 4) {
                padded[dst..dst + 4].copy_from_slice(px);
            }
        }
    }
    let surface = intel_tex_2::RgbaSurface {
        data: &padded,
        width: pw as u32,
        height: ph as u32,
        stride: (pw * 4) as u32,
    };
    let channels = |n: usize| -> Vec<u8> {
        padded
            .chunks_exact(4)
            .flat_map(|p| p[..n].to_vec())
            .collect()
    };
    match format {
        BlockFormat::Bc1 => intel_tex_2::bc1::compress_blocks(&surface),
        BlockFormat::Bc3 => intel_tex_2::bc3::compress_blocks(&surface),
        BlockFormat::Bc7 => {
            let settings = if padded.chunks_exact(4).all(|p| p[3] == 255) {
                intel_tex_2::bc7::opaque_basic_settings()
            } else {
                intel_tex_2::bc7::alpha_basic_settings()
            };
            intel_tex_2::bc7::compress_blocks(&settings, &surface)
        }
        BlockFormat::Bc4 => {
            let r = channels(1);
            intel_tex_2::bc4::compress_blocks(&intel_tex_2::RSurface {
                data: &r,
                width: pw as u32,
                height: ph as u32,
                stride: pw as u32,
            })
        }
        BlockFormat::Bc5 => {
            let rg = channels(2);
            intel_tex_2::bc5::compress_blocks(&intel_tex_2::RgSurface {
                data: &rg,
                width: pw as u32,
                height: ph as u32,
                stride: (pw * 2) as u32,
            })
        }
    }
}

/// Decode `format` blocks of a `width × height` image to RGBA8 texels, row-major: BC4
/// into red, BC5 into red and green (blue 0), alpha 255 where the format has none. Blocks
/// missing at the end decode as transparent black.
pub fn decode_blocks(blocks: &[u8], width: u32, height: u32, format: BlockFormat) -> Vec<[u8; 4]> {
    let (w, h) = (width as usize, height as usize);
    let mut packed = vec![0u32; w * h];
    let needed = w.div_ceil(4) * h.div_ceil(4) * format.block_bytes();
    let mut data = blocks.to_vec();
    data.resize(needed.max(data.len()), 0);
    // Err only for short buffers, which the sizes above rule out.
    let _ = match format {
        BlockFormat::Bc1 => texture2ddecoder::decode_bc1(&data, w, h, &mut packed),
        BlockFormat::Bc3 => texture2ddecoder::decode_bc3(&data, w, h, &mut packed),
        BlockFormat::Bc4 => texture2ddecoder::decode_bc4(&data, w, h, &mut packed),
        BlockFormat::Bc5 => texture2ddecoder::decode_bc5(&data, w, h, &mut packed),
        BlockFormat::Bc7 => texture2ddecoder::decode_bc7(&data, w, h, &mut packed),
    };
    packed
        .iter()
        .map(|p| {
            // texture2ddecoder packs pixels as little-endian [b, g, r, a].
            let [b, g, r, a] = p.to_le_bytes();
            [r, g, b, a]
        })
        .collect()
}

/// Encode and decode `channels` of `mip` with `format`; writes the decoded values into
/// `out` (12 interleaved channels per texel). Returns the compressed byte count.
fn round_trip(mip: &SetMip, channels: &[usize], format: BlockFormat, out: &mut [u8]) -> usize {
    let mut rgba = vec![255u8; mip.width as usize * mip.height as usize * 4];
    for (px, texel) in rgba
        .chunks_exact_mut(4)
        .zip(mip.texels.chunks_exact(CHANNELS))
    {
        for (k, &c) in channels.iter().enumerate() {
            px[k] = texel[c];
        }
    }
    let blocks = encode_rgba(&rgba, mip.width, mip.height, format);
    let decoded = decode_blocks(&blocks, mip.width, mip.height, format);
    for (texel, px) in out.chunks_exact_mut(CHANNELS).zip(&decoded) {
        for (k, &c) in channels.iter().enumerate() {
            texel[c] = px[k];
        }
    }
    blocks.len()
}

/// Encode `set` with every baseline and measure them (mip 0 with ꟻLIP too when `flip`).
pub fn bcn_baselines(set: &TextureSet, flip: bool) -> Vec<BcnResult> {
    let present = set.present;
    let has_alpha = present.contains(ChannelMask::ALPHA);
    let texels0 = (set.width as f64) * (set.height as f64);
    baselines(has_alpha)
        .into_iter()
        .map(|(name, encodings)| {
            let mut bytes = 0u64;
            let mut chain = ErrorAccumulator::default();
            let mut mip0 = ErrorAccumulator::default();
            let mut flip_mip0 = None;
            for (level, mip) in set.mips.iter().enumerate() {
                let mut decoded = mip.texels.clone();
                for (group, encoding) in ImageGroup::ALL.into_iter().zip(encodings) {
                    if present.intersects(group.mask()) {
                        let (channels, format) = encode_as(group, encoding, present);
                        bytes += round_trip(mip, &channels, format, &mut decoded) as u64;
                    }
                }
                chain.add_u8(&mip.texels, &decoded, present);
                if level == 0 {
                    mip0.add_u8(&mip.texels, &decoded, present);
                    flip_mip0 = flip.then(|| {
                        flip_set_mip(&mip.texels, &decoded, mip.width, mip.height, present)
                    });
                }
            }
            BcnResult {
                name,
                bytes,
                bits_per_texel: bytes as f64 * 8.0 / texels0.max(1.0),
                psnr_mip0: mip0.report(),
                psnr_chain: chain.report(),
                flip_mip0,
            }
        })
        .collect()
}

/// [`bcn_baselines`] of every set, the sets spread over all cores, in `sets`' order.
pub fn bcn_baselines_all(sets: &[&TextureSet], flip: bool) -> Vec<Vec<BcnResult>> {
    super::set::map_parallel(sets, |set| bcn_baselines(set, flip))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_set(w: u32, h: u32) -> TextureSet {
        let present = ChannelMask(
            ChannelMask::BASE_COLOR.0 | ChannelMask::NORMAL.0 | ChannelMask::ROUGHNESS.0,
        );
        TextureSet::from_fn("gradient", present, (w, h), |x, y| {
            let v = ((x * 255) / w.max(1)) as u8;
            let u = ((y * 255) / h.max(1)) as u8;
            [v, u, 128, 255, 128, 128, 255, u, 0, 255, 255, 255]
        })
    }

    #[test]
    fn baselines_have_expected_rates_and_quality() {
        let set = test_set(64, 64);
        let results = bcn_baselines(&set, true);
        assert_eq!(results.len(), 3);
        // Mip chain of 64²: 1365 texels → 1366 blocks-worth rounded up per level.
        let blocks: u64 = set
            .mips
            .iter()
            .map(|m| (m.width.div_ceil(4) * m.height.div_ceil(4)) as u64)
            .sum();
        let bc1 = &results[0];
        // Base BC1 (8) + normal BC5 (16) + ORM BC1 (8) bytes per block.
        assert_eq!(bc1.bytes, blocks * (8 + 16 + 8));
        let bc7 = &results[1];
        assert_eq!(bc7.bytes, blocks * (16 + 16 + 16));
        // RTXNTC's protocol: base colour (3 channels) BC7, normal BC5, the ORM image
        // holding roughness alone BC4.
        let protocol = &results[2];
        assert_eq!(protocol.name, PROTOCOL);
        assert_eq!(protocol.bytes, blocks * (16 + 16 + 8));
        // Smooth gradients compress well: both above 35 dB, and no emissive group.
        let db = |r: &BcnResult, g: &str| r.psnr_mip0.group(g).map(|p| p.db);
        for r in &results {
            assert!(
                db(r, "base_color").unwrap() > 35.0,
                "{}: {:?}",
                r.name,
                r.psnr_mip0
            );
            assert!(db(r, "normal").unwrap() > 40.0);
            assert!(db(r, "emissive").is_none());
            let names: Vec<&str> = r
                .psnr_mip0
                .groups
                .iter()
                .map(|g| g.group.as_str())
                .collect();
            assert_eq!(names, ["base_color", "normal", "roughness"]);
            // The pooled value lies between the groups'.
            let pooled = r.psnr_mip0.pooled.unwrap().db;
            let (lo, hi) = r
                .psnr_mip0
                .groups
                .iter()
                .fold((f64::MAX, f64::MIN), |(lo, hi), g| {
                    (lo.min(g.psnr.db), hi.max(g.psnr.db))
                });
            assert!(lo <= pooled && pooled <= hi, "{pooled} outside {lo}..{hi}");
        }
        assert!(db(bc7, "base_color") >= db(bc1, "base_color"));
        // BC4 keeps a smooth single channel to within a code or two.
        assert!(
            db(protocol, "roughness").unwrap() > 45.0,
            "{:?}",
            protocol.psnr_mip0
        );
        // ꟻLIP of the images the set has (the ORM image too, for its roughness): small
        // for these smooth gradients, and better for BC7 than for BC1 on base colour.
        let flip = |r: &BcnResult, image: &str| r.flip_mip0.as_ref().unwrap().image(image).unwrap();
        for r in &results {
            let f = r.flip_mip0.as_ref().unwrap();
            assert_eq!(f.images.len(), 3, "{f:?}");
            assert!(f.mean.unwrap() < 0.1, "{}: {f:?}", r.name);
        }
        assert!(flip(bc7, "base_color") <= flip(bc1, "base_color"));
        assert!(
            bcn_baselines(&set, false)
                .iter()
                .all(|r| r.flip_mip0.is_none())
        );
    }

    #[test]
    fn odd_sizes_round_trip() {
        let set = test_set(13, 7);
        let r = bcn_baselines(&set, false);
        assert!(r[1].psnr_chain.pooled.unwrap().db > 30.0);
    }
}
