//! DDS and KTX2 texture containers: one 2D image with its mip chain, read into
//! [`DecodedImage`]s, and block-compressed mip chains written for other tools.
//!
//! **Reading** ([`Container::parse`]): the container is parsed by a maintained crate
//! (`ddsfile`, `ktx2`), then every size is checked before anything is allocated: each side
//! in 1..=[`MAX_IMAGE_SIDE`](super::MAX_IMAGE_SIDE), at most a full mip chain of levels, every level's bytes
//! present in the file, and each decode within the memory budget. Cubemaps, texture
//! arrays, volume and 1D textures are refused with an error naming the file; so are
//! supercompressed KTX2 (BasisLZ/ETC1S, Zstandard) and pixel formats outside
//! [`Encoding`]'s list. Block formats are decoded by `texture2ddecoder`, BC6H by
//! `bcdec_rs` (see `decode_bc6h`):
//!
//! | format | decoded channels |
//! |---|---|
//! | BC1 | RGB, or RGBA when a block uses its transparent texel |
//! | BC2, BC3, BC7 | RGBA |
//! | BC4 | one (gray) |
//! | BC5 | RGB: R, G and the normal's Z rebuilt from them |
//! | BC6H | RGB, clamped to \[0, 1\] |
//!
//! Two-channel uncompressed formats (`R8G8`, `R16G16`) read like BC5. sRGB and UNORM
//! variants hold the same encoded values (the canonical set keeps them as stored).
//!
//! Basis Universal **UASTC** KTX2 (no Vulkan format, the UASTC colour model) is read with
//! the `basis` feature: Binomial's transcoder (`basis-universal`) turns each level's
//! blocks into BC7, decoded as above, and the descriptor's channel id picks the channels
//! kept (RGB, RGBA, R, R + A, or R, G read like BC5). Without the feature, and for BasisLZ/ETC1S (whose
//! transcoder that binding does not expose for KTX2), the file is refused by name.
//!
//! **Writing** ([`write_block_chain`], over [`dds_bytes`] and [`ktx2_bytes`]): a chain of
//! BC1, BC3, BC5 or BC7 levels (from [`super::bcn::encode_rgba`]), as a DDS with the DX10
//! header or a KTX2 with its basic data format descriptor, through a temporary file and a
//! rename.

use super::{DecodedImage, Samples, TextureError, budget};

/// The first bytes of a KTX2 file.
pub const KTX2_MAGIC: [u8; 12] = [
    0xAB, 0x4B, 0x54, 0x58, 0x20, 0x32, 0x30, 0xBB, 0x0D, 0x0A, 0x1A, 0x0A,
];

/// The first bytes of a DDS file.
pub const DDS_MAGIC: [u8; 4] = *b"DDS ";

/// A container kind, told by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContainerKind {
    /// DirectDraw Surface.
    Dds,
    /// Khronos KTX 2.0.
    Ktx2,
}

impl ContainerKind {
    /// The kind of a file starting with `head`, if it is a container at all.
    pub fn sniff(head: &[u8]) -> Option<ContainerKind> {
        if head.starts_with(&DDS_MAGIC) {
            Some(Self::Dds)
        } else if head.starts_with(&KTX2_MAGIC) {
            Some(Self::Ktx2)
        } else {
            None
        }
    }

    /// `DDS` or `KTX2`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Dds => "DDS",
            Self::Ktx2 => "KTX2",
        }
    }
}

/// A block-compressed format (4×4 texel blocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// RGB with 1-bit alpha, 8 bytes per block.
    Bc1,
    /// RGB + explicit 4-bit alpha, 16 bytes.
    Bc2,
    /// RGB + interpolated alpha, 16 bytes.
    Bc3,
    /// One channel, 8 bytes.
    Bc4,
    /// Two channels, 16 bytes.
    Bc5,
    /// Unsigned half-float RGB, 16 bytes.
    Bc6hUfloat,
    /// Signed half-float RGB, 16 bytes.
    Bc6hSfloat,
    /// RGBA, 16 bytes.
    Bc7,
}

impl BlockKind {
    /// Bytes per 4×4 block.
    pub const fn block_bytes(self) -> u64 {
        match self {
            Self::Bc1 | Self::Bc4 => 8,
            _ => 16,
        }
    }

    /// The name reports use (`BC1` … `BC7`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Bc1 => "BC1",
            Self::Bc2 => "BC2",
            Self::Bc3 => "BC3",
            Self::Bc4 => "BC4",
            Self::Bc5 => "BC5",
            Self::Bc6hUfloat | Self::Bc6hSfloat => "BC6H",
            Self::Bc7 => "BC7",
        }
    }
}

/// An uncompressed layout: `pixel_bytes` per pixel, samples of `sample_bytes` (1 or 2,
/// little-endian), output channel `k` read from sample `order[k]`; `rg` rebuilds a third
/// channel as the normal's Z from the first two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plain {
    /// Bytes per pixel.
    pub pixel_bytes: u8,
    /// Bytes per sample (1 or 2).
    pub sample_bytes: u8,
    /// The sample each output channel reads.
    pub order: &'static [u8],
    /// Two channels read as a normal's X and Y, Z rebuilt as the third.
    pub rg: bool,
}

impl Plain {
    const RGBA8: Plain = Plain::new(4, 1, &[0, 1, 2, 3]);
    const RGBX8: Plain = Plain::new(4, 1, &[0, 1, 2]);
    const BGRA8: Plain = Plain::new(4, 1, &[2, 1, 0, 3]);
    const BGRX8: Plain = Plain::new(4, 1, &[2, 1, 0]);
    const RGB8: Plain = Plain::new(3, 1, &[0, 1, 2]);
    const BGR8: Plain = Plain::new(3, 1, &[2, 1, 0]);
    const R8: Plain = Plain::new(1, 1, &[0]);
    const LA8: Plain = Plain::new(2, 1, &[0, 1]);
    const RG8: Plain = Plain {
        rg: true,
        ..Plain::new(2, 1, &[0, 1])
    };
    const R16: Plain = Plain::new(2, 2, &[0]);
    const RG16: Plain = Plain {
        rg: true,
        ..Plain::new(4, 2, &[0, 1])
    };
    const RGBA16: Plain = Plain::new(8, 2, &[0, 1, 2, 3]);

    const fn new(pixel_bytes: u8, sample_bytes: u8, order: &'static [u8]) -> Plain {
        Plain {
            pixel_bytes,
            sample_bytes,
            order,
            rg: false,
        }
    }

    /// Channels of the decoded image.
    fn channels(&self) -> u8 {
        if self.rg { 3 } else { self.order.len() as u8 }
    }
}

/// How a level's bytes hold its texels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// 4×4 blocks.
    Block(BlockKind),
    /// One pixel after another, rows unpadded.
    Plain(Plain),
    /// Basis Universal UASTC 4×4 blocks (16 bytes each), transcoded to RGBA8 pixels that
    /// are then read with this layout.
    Uastc(Plain),
}

/// Bytes of a UASTC block.
const UASTC_BLOCK_BYTES: u64 = 16;

impl Encoding {
    /// Bytes of a `width × height` level.
    pub fn level_bytes(self, width: u32, height: u32) -> u64 {
        match self {
            Self::Block(b) => budget::product(&[
                u64::from(width.div_ceil(4)),
                u64::from(height.div_ceil(4)),
                b.block_bytes(),
            ]),
            Self::Uastc(_) => budget::product(&[
                u64::from(width.div_ceil(4)),
                u64::from(height.div_ceil(4)),
                UASTC_BLOCK_BYTES,
            ]),
            Self::Plain(p) => budget::product(&[
                u64::from(width),
                u64::from(height),
                u64::from(p.pixel_bytes),
            ]),
        }
    }

    /// The name of the block format (`BC1` … `BC7`, `UASTC`), when the source was already
    /// lossily compressed.
    pub fn lossy(self) -> Option<&'static str> {
        match self {
            Self::Block(b) => Some(b.name()),
            Self::Uastc(_) => Some("UASTC"),
            Self::Plain(_) => None,
        }
    }
}

/// A parsed container: one 2D image, its format and its levels' bytes (level 0 first),
/// every size already checked.
#[derive(Clone, Debug)]
pub struct Container<'a> {
    /// DDS or KTX2.
    pub kind: ContainerKind,
    /// The file's own name of its pixel format (`BC1_UNorm_sRGB`, `BC7_SRGB_BLOCK`, …).
    pub format_name: String,
    /// How the levels are encoded.
    pub encoding: Encoding,
    /// Width of level 0.
    pub width: u32,
    /// Height of level 0.
    pub height: u32,
    /// The bytes of each level, level 0 first.
    pub levels: Vec<&'a [u8]>,
}

/// Most levels a `width × height` image can have (down to 1×1).
pub fn full_chain(width: u32, height: u32) -> u32 {
    32 - width.max(height).max(1).leading_zeros()
}

impl<'a> Container<'a> {
    /// Parse `bytes` (a whole DDS or KTX2 file named `file`).
    pub fn parse(bytes: &'a [u8], file: &str) -> Result<Container<'a>, TextureError> {
        match ContainerKind::sniff(bytes) {
            Some(ContainerKind::Dds) => parse_dds(bytes, file),
            Some(ContainerKind::Ktx2) => parse_ktx2(bytes, file),
            None => Err(invalid(file, "neither a DDS nor a KTX2 file".into())),
        }
    }

    /// Size of level `level`.
    pub fn level_size(&self, level: usize) -> (u32, u32) {
        let l = level.min(31) as u32;
        ((self.width >> l).max(1), (self.height >> l).max(1))
    }

    /// Channels the decoded image has, before looking at pixels (BC1 may still drop to
    /// RGB when no block is transparent).
    pub fn channels(&self) -> u8 {
        match self.encoding {
            Encoding::Plain(p) | Encoding::Uastc(p) => p.channels(),
            Encoding::Block(BlockKind::Bc4) => 1,
            Encoding::Block(BlockKind::Bc5 | BlockKind::Bc6hUfloat | BlockKind::Bc6hSfloat) => 3,
            Encoding::Block(_) => 4,
        }
    }

    /// Bytes per decoded sample.
    pub fn sample_bytes(&self) -> u8 {
        match self.encoding {
            Encoding::Plain(p) | Encoding::Uastc(p) => p.sample_bytes,
            Encoding::Block(_) => 1,
        }
    }

    /// Bytes decoding level `level` holds at once (the decoder's buffer and the samples).
    pub fn decode_bytes(&self, level: usize) -> u64 {
        let (w, h) = self.level_size(level);
        let texels = u64::from(w) * u64::from(h);
        let samples = texels * u64::from(self.channels()) * u64::from(self.sample_bytes());
        match self.encoding {
            Encoding::Block(_) | Encoding::Uastc(_) => samples + texels * 4,
            Encoding::Plain(_) => samples,
        }
    }

    /// Decode level `level` (checked against the memory budget first).
    pub fn decode_level(&self, level: usize, file: &str) -> Result<DecodedImage, TextureError> {
        let data = *self
            .levels
            .get(level)
            .ok_or_else(|| invalid(file, format!("has no mip level {level}")))?;
        let (width, height) = self.level_size(level);
        budget::check(
            || format!("decoding {file} level {level} ({width}×{height})"),
            self.decode_bytes(level),
            budget::limit(),
        )?;
        let texels = width as usize * height as usize;
        match self.encoding {
            Encoding::Plain(p) => Ok(decode_plain(p, data, width, height)),
            Encoding::Uastc(p) => {
                let fail = |message: String| TextureError::Decode {
                    file: file.to_string(),
                    message: format!("UASTC level {level}: {message}"),
                };
                let bc7 = transcode_uastc(data, width, height).map_err(fail)?;
                let mut packed = vec![0u32; texels];
                texture2ddecoder::decode_bc7(&bc7, width as usize, height as usize, &mut packed)
                    .map_err(|m| fail(format!("its BC7 blocks: {m}")))?;
                let rgba: Vec<u8> = packed.iter().flat_map(|p| bgra_to_rgba(*p)).collect();
                Ok(decode_plain(p, &rgba, width, height))
            }
            Encoding::Block(kind) => {
                let mut packed = vec![0u32; texels];
                let (w, h) = (width as usize, height as usize);
                use texture2ddecoder as t;
                match kind {
                    BlockKind::Bc1 => t::decode_bc1a(data, w, h, &mut packed),
                    BlockKind::Bc2 => t::decode_bc2(data, w, h, &mut packed),
                    BlockKind::Bc3 => t::decode_bc3(data, w, h, &mut packed),
                    BlockKind::Bc4 => t::decode_bc4(data, w, h, &mut packed),
                    BlockKind::Bc5 => t::decode_bc5(data, w, h, &mut packed),
                    BlockKind::Bc6hUfloat | BlockKind::Bc6hSfloat => {
                        let signed = kind == BlockKind::Bc6hSfloat;
                        decode_bc6h(data, w, h, signed, &mut packed);
                        Ok(())
                    }
                    BlockKind::Bc7 => t::decode_bc7(data, w, h, &mut packed),
                }
                .map_err(|m| TextureError::Decode {
                    file: file.to_string(),
                    message: format!("{} level {level}: {m}", kind.name()),
                })?;
                Ok(unpack_blocks(kind, &packed, width, height))
            }
        }
    }
}

/// BC7 blocks of a `width × height` level of UASTC blocks (`data` holds exactly its
/// blocks, checked by the parser), by Binomial's transcoder. UASTC → BC7 is the format's
/// designed near-lossless path; the binding's RGBA32 output is not used, as it sizes its
/// buffer in 4×4 blocks rather than pixels.
#[cfg(feature = "basis")]
fn transcode_uastc(data: &[u8], width: u32, height: u32) -> Result<Vec<u8>, String> {
    use basis_universal::{
        DecodeFlags, LowLevelUastcTranscoder, SliceParametersUastc, TranscoderBlockFormat,
    };
    let blocks = LowLevelUastcTranscoder::new()
        .transcode_slice(
            data,
            SliceParametersUastc {
                num_blocks_x: width.div_ceil(4),
                num_blocks_y: height.div_ceil(4),
                has_alpha: true,
                original_width: width,
                original_height: height,
            },
            DecodeFlags::HIGH_QUALITY,
            TranscoderBlockFormat::BC7,
        )
        .map_err(|e| format!("the transcoder failed ({e:?})"))?;
    if blocks.len() != data.len() {
        return Err(format!(
            "the transcoder returned {} bytes of BC7 blocks for {} of UASTC",
            blocks.len(),
            data.len()
        ));
    }
    Ok(blocks)
}

/// Without the `basis` feature no UASTC container parses, so no level reaches here.
#[cfg(not(feature = "basis"))]
fn transcode_uastc(_: &[u8], _: u32, _: u32) -> Result<Vec<u8>, String> {
    Err("this build cannot transcode Basis Universal (build with `--features basis`)".into())
}

/// The layout of a UASTC texture's transcoded RGBA8 pixels, by the data format
/// descriptor's channel id (KTX2 spec, "Basis Universal UASTC": RGB 0, RGBA 3, RRR 4,
/// RRRG 5, RG 6).
fn uastc_layout(channel_id: u8) -> Option<Plain> {
    Some(match channel_id {
        0 => Plain::RGBX8,
        3 => Plain::RGBA8,
        4 => Plain::new(4, 1, &[0]),
        5 => Plain::new(4, 1, &[0, 3]),
        6 => Plain {
            rg: true,
            ..Plain::new(4, 1, &[0, 1])
        },
        _ => return None,
    })
}

/// BC6H blocks (exactly `width × height`'s, checked by the parser) into texels packed as
/// `texture2ddecoder` packs them, each channel clamped to \[0, 1\]. By `bcdec_rs`:
/// `texture2ddecoder` 0.1 builds mode 15's endpoint mask (16-bit endpoints) with a `u16`
/// shift by 16, a panic with overflow checks and a zero mask without (found by the
/// `ktx2` fuzz target).
fn decode_bc6h(data: &[u8], width: usize, height: usize, signed: bool, out: &mut [u32]) {
    let blocks_x = width.div_ceil(4);
    let mut rgb = [0f32; 4 * 4 * 3];
    let unorm = |v: f32| (v * 255.0).clamp(0.0, 255.0) as u8;
    for (i, block) in data.chunks_exact(16).enumerate() {
        bcdec_rs::bc6h_float(block, &mut rgb, 4 * 3, signed);
        let (x0, y0) = ((i % blocks_x) * 4, (i / blocks_x) * 4);
        for (y, row) in rgb.chunks_exact(4 * 3).enumerate() {
            for (x, p) in row.chunks_exact(3).enumerate() {
                if x0 + x < width && y0 + y < height {
                    out[(y0 + y) * width + x0 + x] =
                        u32::from_le_bytes([unorm(p[2]), unorm(p[1]), unorm(p[0]), 255]);
                }
            }
        }
    }
}

/// A texel as `texture2ddecoder` packs it (`[b, g, r, a]` little-endian) in RGBA order.
fn bgra_to_rgba(packed: u32) -> [u8; 4] {
    let [b, g, r, a] = packed.to_le_bytes();
    [r, g, b, a]
}

/// The decoded texels of a block format (`texture2ddecoder` packs `[b, g, r, a]`
/// little-endian) with the channels of the module's table.
fn unpack_blocks(kind: BlockKind, packed: &[u32], width: u32, height: u32) -> DecodedImage {
    let rgba = packed.iter().map(|p| bgra_to_rgba(*p));
    let samples: Vec<u8> = match kind {
        BlockKind::Bc4 => rgba.map(|p| p[0]).collect(),
        BlockKind::Bc5 => rgba
            .flat_map(|[r, g, _, _]| [r, g, rebuilt_z(r.into(), g.into(), 255.0) as u8])
            .collect(),
        BlockKind::Bc6hUfloat | BlockKind::Bc6hSfloat => {
            rgba.flat_map(|[r, g, b, _]| [r, g, b]).collect()
        }
        BlockKind::Bc1 if packed.iter().all(|p| p >> 24 == 0xFF) => {
            rgba.flat_map(|[r, g, b, _]| [r, g, b]).collect()
        }
        _ => rgba.flatten().collect(),
    };
    let channels = (samples.len() / packed.len().max(1)) as u8;
    DecodedImage {
        width,
        height,
        channels,
        samples: Samples::U8(samples),
    }
}

/// The \[0, max\] encoding of the unit normal's Z whose X and Y are encoded as `x`, `y`.
fn rebuilt_z(x: f32, y: f32, max: f32) -> f32 {
    let (nx, ny) = (x / max * 2.0 - 1.0, y / max * 2.0 - 1.0);
    let z = (1.0 - nx * nx - ny * ny).max(0.0).sqrt();
    ((z + 1.0) * 0.5 * max).round()
}

fn decode_plain(p: Plain, data: &[u8], width: u32, height: u32) -> DecodedImage {
    let pixels = data
        .chunks_exact(p.pixel_bytes as usize)
        .take(width as usize * height as usize);
    let samples = if p.sample_bytes == 1 {
        let mut out = Vec::with_capacity(width as usize * height as usize * p.channels() as usize);
        for px in pixels {
            out.extend(p.order.iter().map(|&k| px[k as usize]));
            if p.rg {
                out.push(rebuilt_z(px[0].into(), px[1].into(), 255.0) as u8);
            }
        }
        Samples::U8(out)
    } else {
        let mut out = Vec::with_capacity(width as usize * height as usize * p.channels() as usize);
        let at =
            |px: &[u8], k: u8| u16::from_le_bytes([px[2 * k as usize], px[2 * k as usize + 1]]);
        for px in pixels {
            out.extend(p.order.iter().map(|&k| at(px, k)));
            if p.rg {
                out.push(rebuilt_z(at(px, 0).into(), at(px, 1).into(), 65535.0) as u16);
            }
        }
        Samples::U16(out)
    };
    DecodedImage {
        width,
        height,
        channels: p.channels(),
        samples,
    }
}

fn invalid(file: &str, reason: String) -> TextureError {
    TextureError::InvalidInput {
        file: file.to_string(),
        reason,
    }
}

fn unsupported(file: &str, format: String) -> TextureError {
    TextureError::UnsupportedFormat {
        file: file.to_string(),
        format,
    }
}

/// Check the size and level count, then cut `data` into `levels` levels.
fn cut_levels<'a>(
    file: &str,
    encoding: Encoding,
    (width, height): (u32, u32),
    levels: u32,
    mut level_data: impl FnMut(usize, u64) -> Result<&'a [u8], TextureError>,
) -> Result<Vec<&'a [u8]>, TextureError> {
    TextureError::check_size(file, width, height)?;
    let most = full_chain(width, height);
    if levels > most {
        return Err(invalid(
            file,
            format!("{levels} mip levels, but a {width}×{height} image has at most {most}"),
        ));
    }
    (0..levels.max(1) as usize)
        .map(|l| {
            let (w, h) = ((width >> l).max(1), (height >> l).max(1));
            level_data(l, encoding.level_bytes(w, h))
        })
        .collect()
}

fn parse_dds<'a>(bytes: &'a [u8], file: &str) -> Result<Container<'a>, TextureError> {
    use ddsfile::{Caps2, D3D10ResourceDimension, DxgiFormat as D, FourCC, Header, Header10};
    let bad = |e: ddsfile::Error| invalid(file, format!("DDS header: {e}"));
    let mut reader = bytes.get(4..).unwrap_or_default();
    let header = Header::read(&mut reader).map_err(bad)?;
    let dx10 = header
        .spf
        .fourcc
        .as_ref()
        .is_some_and(|f| f.0 == FourCC::DX10);
    let header10 = if dx10 {
        Some(Header10::read(&mut reader).map_err(bad)?)
    } else {
        None
    };
    let data = reader;
    if header.caps2.contains(Caps2::CUBEMAP)
        || header10
            .as_ref()
            .is_some_and(|h| h.misc_flag.contains(ddsfile::MiscFlag::TEXTURECUBE))
    {
        return Err(unsupported(
            file,
            "DDS cubemap (only 2D textures are read)".into(),
        ));
    }
    if header.caps2.contains(Caps2::VOLUME)
        || header.depth.is_some_and(|d| d > 1)
        || header10
            .as_ref()
            .is_some_and(|h| h.resource_dimension == D3D10ResourceDimension::Texture3D)
    {
        return Err(unsupported(
            file,
            "DDS volume texture (only 2D textures are read)".into(),
        ));
    }
    let (encoding, format_name) = if let Some(h10) = &header10 {
        if h10.resource_dimension != D3D10ResourceDimension::Texture2D {
            return Err(unsupported(
                file,
                format!(
                    "DDS {:?} resource (only 2D textures are read)",
                    h10.resource_dimension
                ),
            ));
        }
        if h10.array_size != 1 {
            return Err(unsupported(
                file,
                format!(
                    "DDS texture array of {} layers (only single 2D textures are read)",
                    h10.array_size
                ),
            ));
        }
        let f = h10.dxgi_format;
        let encoding = match f {
            D::BC1_Typeless | D::BC1_UNorm | D::BC1_UNorm_sRGB => Encoding::Block(BlockKind::Bc1),
            D::BC2_Typeless | D::BC2_UNorm | D::BC2_UNorm_sRGB => Encoding::Block(BlockKind::Bc2),
            D::BC3_Typeless | D::BC3_UNorm | D::BC3_UNorm_sRGB => Encoding::Block(BlockKind::Bc3),
            D::BC4_Typeless | D::BC4_UNorm => Encoding::Block(BlockKind::Bc4),
            D::BC5_Typeless | D::BC5_UNorm => Encoding::Block(BlockKind::Bc5),
            D::BC6H_Typeless | D::BC6H_UF16 => Encoding::Block(BlockKind::Bc6hUfloat),
            D::BC6H_SF16 => Encoding::Block(BlockKind::Bc6hSfloat),
            D::BC7_Typeless | D::BC7_UNorm | D::BC7_UNorm_sRGB => Encoding::Block(BlockKind::Bc7),
            D::R8G8B8A8_Typeless | D::R8G8B8A8_UNorm | D::R8G8B8A8_UNorm_sRGB => {
                Encoding::Plain(Plain::RGBA8)
            }
            D::B8G8R8A8_Typeless | D::B8G8R8A8_UNorm | D::B8G8R8A8_UNorm_sRGB => {
                Encoding::Plain(Plain::BGRA8)
            }
            D::B8G8R8X8_Typeless | D::B8G8R8X8_UNorm | D::B8G8R8X8_UNorm_sRGB => {
                Encoding::Plain(Plain::BGRX8)
            }
            D::R8_UNorm => Encoding::Plain(Plain::R8),
            D::R8G8_UNorm => Encoding::Plain(Plain::RG8),
            D::R16_UNorm => Encoding::Plain(Plain::R16),
            D::R16G16_UNorm => Encoding::Plain(Plain::RG16),
            D::R16G16B16A16_UNorm => Encoding::Plain(Plain::RGBA16),
            other => return Err(unsupported(file, format!("DDS DXGI format {other:?}"))),
        };
        (encoding, format!("{f:?}"))
    } else {
        legacy_dds_format(&header.spf, file)?
    };
    let levels = header.mip_map_count.unwrap_or(1).max(1);
    let mut offset = 0u64;
    let levels = cut_levels(
        file,
        encoding,
        (header.width, header.height),
        levels,
        |l, n| {
            let end = offset.saturating_add(n);
            let slice = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(a, b)| data.get(a..b))
            .ok_or_else(|| {
                invalid(
                    file,
                    format!(
                        "mip level {l} needs bytes {offset}..{end} of the data, which holds {} (truncated?)",
                        data.len()
                    ),
                )
            })?;
            offset = end;
            Ok(slice)
        },
    )?;
    Ok(Container {
        kind: ContainerKind::Dds,
        format_name,
        encoding,
        width: header.width,
        height: header.height,
        levels,
    })
}

/// The encoding of a DDS without the DX10 header: four-character codes for block formats,
/// bit masks for uncompressed ones.
fn legacy_dds_format(
    spf: &ddsfile::PixelFormat,
    file: &str,
) -> Result<(Encoding, String), TextureError> {
    use ddsfile::{FourCC, PixelFormatFlags as F};
    if let Some(code) = &spf.fourcc {
        let encoding = match code.0 {
            FourCC::DXT1 => Encoding::Block(BlockKind::Bc1),
            FourCC::DXT2 | FourCC::DXT3 => Encoding::Block(BlockKind::Bc2),
            FourCC::DXT4 | FourCC::DXT5 => Encoding::Block(BlockKind::Bc3),
            FourCC::ATI1 | FourCC::BC4_UNORM => Encoding::Block(BlockKind::Bc4),
            FourCC::ATI2 => Encoding::Block(BlockKind::Bc5),
            FourCC::A16B16G16R16 => Encoding::Plain(Plain::RGBA16),
            _ => {
                return Err(unsupported(
                    file,
                    format!("DDS four-character code {}", fourcc_text(code.0)),
                ));
            }
        };
        return Ok((encoding, fourcc_text(code.0)));
    }
    let bits = spf.rgb_bit_count.unwrap_or(0);
    let alpha = spf.flags.contains(F::ALPHA_PIXELS);
    let masks = (
        spf.r_bit_mask.unwrap_or(0),
        spf.g_bit_mask.unwrap_or(0),
        spf.b_bit_mask.unwrap_or(0),
        if alpha {
            spf.a_bit_mask.unwrap_or(0)
        } else {
            0
        },
    );
    let plain = if spf.flags.contains(F::LUMINANCE) {
        match (bits, alpha) {
            (8, false) => Some((Plain::R8, "L8")),
            (16, true) => Some((Plain::LA8, "A8L8")),
            (16, false) => Some((Plain::R16, "L16")),
            _ => None,
        }
    } else if spf.flags.contains(F::RGB) {
        match (bits, masks) {
            (32, (0xff, 0xff00, 0xff_0000, 0xff00_0000)) => Some((Plain::RGBA8, "A8B8G8R8")),
            (32, (0xff, 0xff00, 0xff_0000, 0)) => Some((Plain::RGBX8, "X8B8G8R8")),
            (32, (0xff_0000, 0xff00, 0xff, 0xff00_0000)) => Some((Plain::BGRA8, "A8R8G8B8")),
            (32, (0xff_0000, 0xff00, 0xff, 0)) => Some((Plain::BGRX8, "X8R8G8B8")),
            (24, (0xff_0000, 0xff00, 0xff, 0)) => Some((Plain::BGR8, "R8G8B8")),
            (24, (0xff, 0xff00, 0xff_0000, 0)) => Some((Plain::RGB8, "B8G8R8")),
            (32, (0xffff, 0xffff_0000, 0, 0)) => Some((Plain::RG16, "G16R16")),
            (16, (0xff, 0xff00, 0, 0)) => Some((Plain::RG8, "G8R8")),
            _ => None,
        }
    } else {
        None
    };
    let (p, name) = plain.ok_or_else(|| {
        unsupported(
            file,
            format!(
                "DDS pixel format of {bits} bits with masks R {:#x} G {:#x} B {:#x} A {:#x}",
                masks.0, masks.1, masks.2, masks.3
            ),
        )
    })?;
    Ok((Encoding::Plain(p), name.to_string()))
}

/// A four-character code as text (`DXT1`), or its number when not printable.
fn fourcc_text(code: u32) -> String {
    let b = code.to_le_bytes();
    if b.iter().all(|c| c.is_ascii_graphic() || *c == b' ') {
        String::from_utf8_lossy(&b).into_owned()
    } else {
        format!("{code:#x}")
    }
}

/// Why `ktx2` 0.5's reader would panic on `bytes`, if it would: it reads a basic data
/// format descriptor block's texel block dimensions as `byte + 1` in a `u8`, so a
/// dimension byte of 255 overflows (found by the `ktx2` fuzz target). The walk over the
/// descriptor's blocks is the crate's own; what it refuses itself is left to it.
fn ktx2_reader_panic(bytes: &[u8]) -> Option<String> {
    let word = |at: usize| Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    let (offset, length) = (word(48)? as usize, word(52)? as usize);
    let mut blocks = bytes.get(offset.checked_add(4)?..offset.checked_add(length)?)?;
    while let Some(header) = blocks.get(..8) {
        let size = usize::from(u16::from_le_bytes([header[6], header[7]]));
        let block = blocks.get(..size).filter(|_| size >= 8)?;
        // The basic block: vendor 0, type 0, version 2; dimensions after 4 bytes of data.
        let basic = header[..6] == [0, 0, 0, 0, 2, 0];
        if basic && block.get(12..16).is_some_and(|d| d.contains(&255)) {
            return Some("a texel block dimension of 256 in the data format descriptor".into());
        }
        blocks = &blocks[size..];
    }
    None
}

fn parse_ktx2<'a>(bytes: &'a [u8], file: &str) -> Result<Container<'a>, TextureError> {
    use ktx2::Format as K;
    if let Some(reason) = ktx2_reader_panic(bytes) {
        return Err(invalid(file, format!("KTX2: {reason}")));
    }
    let reader = ktx2::Reader::new(bytes).map_err(|e| invalid(file, format!("KTX2: {e}")))?;
    let h = reader.header();
    if let Some(scheme) = h.supercompression_scheme {
        let what = if scheme == ktx2::SupercompressionScheme::BasisLZ {
            "Basis Universal BasisLZ/ETC1S KTX2, which is not transcoded (re-encode it as \
             UASTC)"
                .to_string()
        } else {
            format!("KTX2 supercompressed with {scheme:?}")
        };
        return Err(unsupported(file, what));
    }
    if h.face_count != 1 {
        return Err(unsupported(
            file,
            format!(
                "KTX2 cubemap ({} faces; only 2D textures are read)",
                h.face_count
            ),
        ));
    }
    if h.layer_count > 1 {
        return Err(unsupported(
            file,
            format!(
                "KTX2 texture array of {} layers (only single 2D textures are read)",
                h.layer_count
            ),
        ));
    }
    if h.pixel_depth > 0 {
        return Err(unsupported(
            file,
            "KTX2 volume texture (only 2D textures are read)".into(),
        ));
    }
    if h.pixel_height == 0 {
        return Err(unsupported(
            file,
            "KTX2 1D texture (only 2D textures are read)".into(),
        ));
    }
    let Some(format) = h.format else {
        return parse_uastc(bytes, &reader, file);
    };
    let encoding = match format {
        K::BC1_RGB_UNORM_BLOCK
        | K::BC1_RGB_SRGB_BLOCK
        | K::BC1_RGBA_UNORM_BLOCK
        | K::BC1_RGBA_SRGB_BLOCK => Encoding::Block(BlockKind::Bc1),
        K::BC2_UNORM_BLOCK | K::BC2_SRGB_BLOCK => Encoding::Block(BlockKind::Bc2),
        K::BC3_UNORM_BLOCK | K::BC3_SRGB_BLOCK => Encoding::Block(BlockKind::Bc3),
        K::BC4_UNORM_BLOCK => Encoding::Block(BlockKind::Bc4),
        K::BC5_UNORM_BLOCK => Encoding::Block(BlockKind::Bc5),
        K::BC6H_UFLOAT_BLOCK => Encoding::Block(BlockKind::Bc6hUfloat),
        K::BC6H_SFLOAT_BLOCK => Encoding::Block(BlockKind::Bc6hSfloat),
        K::BC7_UNORM_BLOCK | K::BC7_SRGB_BLOCK => Encoding::Block(BlockKind::Bc7),
        K::R8G8B8A8_UNORM | K::R8G8B8A8_SRGB => Encoding::Plain(Plain::RGBA8),
        K::B8G8R8A8_UNORM | K::B8G8R8A8_SRGB => Encoding::Plain(Plain::BGRA8),
        K::R8G8B8_UNORM | K::R8G8B8_SRGB => Encoding::Plain(Plain::RGB8),
        K::B8G8R8_UNORM | K::B8G8R8_SRGB => Encoding::Plain(Plain::BGR8),
        K::R8_UNORM | K::R8_SRGB => Encoding::Plain(Plain::R8),
        K::R8G8_UNORM => Encoding::Plain(Plain::RG8),
        K::R16_UNORM => Encoding::Plain(Plain::R16),
        K::R16G16_UNORM => Encoding::Plain(Plain::RG16),
        K::R16G16B16A16_UNORM => Encoding::Plain(Plain::RGBA16),
        other => return Err(unsupported(file, format!("KTX2 format {other:?}"))),
    };
    ktx2_levels(bytes, &reader, file, format!("{format:?}"), encoding)
}

/// A KTX2 file of UASTC blocks (no Vulkan format): read with the `basis` feature, its
/// channels from the descriptor; refused otherwise.
fn parse_uastc<'a>(
    bytes: &'a [u8],
    reader: &ktx2::Reader<&'a [u8]>,
    file: &str,
) -> Result<Container<'a>, TextureError> {
    let basic = reader
        .basic_dfd()
        .filter(|b| b.color_model == Some(ktx2::ColorModel::UASTC));
    let Some(basic) = basic else {
        return Err(unsupported(
            file,
            "KTX2 without a Vulkan format that is not UASTC".into(),
        ));
    };
    if !cfg!(feature = "basis") {
        return Err(unsupported(
            file,
            "Basis Universal UASTC KTX2, which this build cannot transcode (build with \
             `--features basis`)"
                .into(),
        ));
    }
    let channel = basic.sample_information.first().map(|s| s.channel_type);
    let layout = channel.and_then(uastc_layout).ok_or_else(|| {
        invalid(
            file,
            format!("UASTC KTX2 with the unknown channel id {channel:?} in its descriptor"),
        )
    })?;
    ktx2_levels(bytes, reader, file, "UASTC".into(), Encoding::Uastc(layout))
}

/// The container of a parsed KTX2 `reader` over `bytes`: every level cut and its size
/// checked against `encoding`.
fn ktx2_levels<'a>(
    bytes: &'a [u8],
    reader: &ktx2::Reader<&'a [u8]>,
    file: &str,
    format_name: String,
    encoding: Encoding,
) -> Result<Container<'a>, TextureError> {
    let h = reader.header();
    // The levels as slices of `bytes` itself (the reader's borrow ends here).
    let base = bytes.as_ptr() as usize;
    let stored: Vec<&'a [u8]> = reader
        .levels()
        .filter_map(|l| {
            let start = (l.data.as_ptr() as usize).checked_sub(base)?;
            bytes.get(start..start + l.data.len())
        })
        .collect();
    let levels = cut_levels(
        file,
        encoding,
        (h.pixel_width, h.pixel_height),
        h.level_count,
        |l, n| {
            let data = stored
                .get(l)
                .ok_or_else(|| invalid(file, format!("KTX2 level index lacks level {l}")))?;
            if data.len() as u64 != n {
                return Err(invalid(
                    file,
                    format!(
                        "KTX2 level {l} holds {} bytes, its size needs {n}",
                        data.len()
                    ),
                ));
            }
            Ok(*data)
        },
    )?;
    Ok(Container {
        kind: ContainerKind::Ktx2,
        format_name,
        encoding,
        width: h.pixel_width,
        height: h.pixel_height,
        levels,
    })
}

/// A block-compressed mip chain to write: level 0 first, each level the blocks of
/// `(width >> l).max(1) × (height >> l).max(1)` texels.
#[derive(Clone, Debug)]
pub struct BlockChain {
    /// The block format.
    pub format: BlockFormat,
    /// Whether the texels are sRGB-encoded colour (the `_SRGB` format variant).
    pub srgb: bool,
    /// Width of level 0.
    pub width: u32,
    /// Height of level 0.
    pub height: u32,
    /// Each level's blocks, level 0 first.
    pub levels: Vec<Vec<u8>>,
}

use super::bcn::BlockFormat;

impl BlockChain {
    /// Check that every level holds exactly its blocks and that there are at most a full
    /// chain of levels; `file` names the output in the error.
    fn check(&self, file: &str) -> Result<(), TextureError> {
        let encoding = Encoding::Block(self.format.kind());
        let levels = self.levels.len() as u32;
        let mut at = self.levels.iter();
        cut_levels(file, encoding, (self.width, self.height), levels, |l, n| {
            let level = at.next().map_or(&[][..], Vec::as_slice);
            if level.len() as u64 == n {
                Ok(level)
            } else {
                Err(invalid(
                    file,
                    format!(
                        "level {l} holds {} bytes of blocks, its size needs {n}",
                        level.len()
                    ),
                ))
            }
        })
        .map(|_| ())
    }
}

impl BlockFormat {
    /// The container's block kind.
    pub const fn kind(self) -> BlockKind {
        match self {
            Self::Bc1 => BlockKind::Bc1,
            Self::Bc3 => BlockKind::Bc3,
            Self::Bc4 => BlockKind::Bc4,
            Self::Bc5 => BlockKind::Bc5,
            Self::Bc7 => BlockKind::Bc7,
        }
    }
}

/// The bytes of a DDS file (DX10 header) holding `chain`.
pub fn dds_bytes(chain: &BlockChain, file: &str) -> Result<Vec<u8>, TextureError> {
    chain.check(file)?;
    let dxgi: u32 = match (chain.format, chain.srgb) {
        (BlockFormat::Bc1, false) => 71,
        (BlockFormat::Bc1, true) => 72,
        (BlockFormat::Bc3, false) => 77,
        (BlockFormat::Bc3, true) => 78,
        (BlockFormat::Bc4, _) => 80,
        (BlockFormat::Bc5, _) => 83,
        (BlockFormat::Bc7, false) => 98,
        (BlockFormat::Bc7, true) => 99,
    };
    let mips = chain.levels.len() as u32;
    // DDSD_CAPS | HEIGHT | WIDTH | PIXELFORMAT | MIPMAPCOUNT | LINEARSIZE.
    let flags = 0x1 | 0x2 | 0x4 | 0x1000 | 0x2_0000 | 0x8_0000;
    // DDSCAPS_TEXTURE, with COMPLEX | MIPMAP for a chain.
    let caps = if mips > 1 {
        0x1000 | 0x8 | 0x40_0000
    } else {
        0x1000
    };
    let mut words: Vec<u32> = vec![124, flags, chain.height, chain.width];
    words.push(chain.levels.first().map_or(0, |l| l.len() as u32));
    words.extend([0, mips]);
    words.extend([0; 11]);
    // DDS_PIXELFORMAT: size, DDPF_FOURCC, "DX10", no masks.
    words.extend([32, 0x4, u32::from_le_bytes(*b"DX10"), 0, 0, 0, 0, 0]);
    words.extend([caps, 0, 0, 0, 0]);
    // DDS_HEADER_DXT10: format, TEXTURE2D, no flags, one layer, alpha mode unknown.
    words.extend([dxgi, 3, 0, 1, 0]);
    let mut out = DDS_MAGIC.to_vec();
    out.extend(words.iter().flat_map(|w| w.to_le_bytes()));
    for level in &chain.levels {
        out.extend_from_slice(level);
    }
    Ok(out)
}

/// The bytes of a KTX2 file holding `chain` (no supercompression, a basic data format
/// descriptor, no key/value data; levels stored smallest first, each aligned to its
/// block size).
pub fn ktx2_bytes(chain: &BlockChain, file: &str) -> Result<Vec<u8>, TextureError> {
    chain.check(file)?;
    let srgb = chain.srgb && !matches!(chain.format, BlockFormat::Bc4 | BlockFormat::Bc5);
    // (VkFormat, DFD colour model, samples as (channel id, bit offset, bit length)).
    let (vk, model, samples): (u32, u32, &[(u32, u32, u32)]) = match chain.format {
        BlockFormat::Bc1 => (if srgb { 132 } else { 131 }, 128, &[(0, 0, 64)]),
        BlockFormat::Bc3 => (
            if srgb { 138 } else { 137 },
            130,
            &[(15, 0, 64), (0, 64, 64)],
        ),
        BlockFormat::Bc4 => (139, 131, &[(0, 0, 64)]),
        BlockFormat::Bc5 => (141, 132, &[(0, 0, 64), (1, 64, 64)]),
        BlockFormat::Bc7 => (if srgb { 146 } else { 145 }, 134, &[(0, 0, 128)]),
    };
    let block = chain.format.block_bytes() as u32;
    let block_size = 24 + 16 * samples.len() as u32;
    let mut dfd: Vec<u32> = vec![4 + block_size, 0, 2 | (block_size << 16)];
    // Colour model, BT.709 primaries, sRGB (2) or linear (1) transfer, straight alpha.
    dfd.push(model | (1 << 8) | (if srgb { 2 } else { 1 } << 16));
    dfd.extend([3 | (3 << 8), block, 0]);
    for &(channel, offset, length) in samples {
        dfd.extend([
            offset | ((length - 1) << 16) | (channel << 24),
            0,
            0,
            u32::MAX,
        ]);
    }
    Ok(ktx2_container(
        vk,
        &dfd,
        block as usize,
        (chain.width, chain.height),
        &chain.levels,
    ))
}

/// A KTX2 file of one 2D image: format `vk` (type size 1), the data format descriptor
/// `dfd` (its words, total size first), levels (level 0 first) stored smallest first,
/// each at a multiple of `align` bytes.
fn ktx2_container(
    vk: u32,
    dfd: &[u32],
    align: usize,
    (width, height): (u32, u32),
    levels: &[Vec<u8>],
) -> Vec<u8> {
    let dfd_offset = 80 + 24 * levels.len();
    let dfd_len = dfd.len() * 4;
    let mut placed = vec![(0u64, 0u64); levels.len()];
    let mut end = dfd_offset + dfd_len;
    for l in (0..levels.len()).rev() {
        end = end.next_multiple_of(align);
        placed[l] = (end as u64, levels[l].len() as u64);
        end += levels[l].len();
    }
    let mut out = Vec::with_capacity(end);
    out.extend_from_slice(&KTX2_MAGIC);
    for w in [vk, 1, width, height, 0, 0, 1, levels.len() as u32, 0] {
        out.extend(w.to_le_bytes());
    }
    for w in [dfd_offset as u32, dfd_len as u32, 0, 0] {
        out.extend(w.to_le_bytes());
    }
    out.extend([0u8; 16]);
    for &(offset, len) in &placed {
        for w in [offset, len, len] {
            out.extend(w.to_le_bytes());
        }
    }
    out.extend(dfd.iter().flat_map(|w| w.to_le_bytes()));
    for l in (0..levels.len()).rev() {
        out.resize(placed[l].0 as usize, 0);
        out.extend_from_slice(&levels[l]);
    }
    out
}

/// Write `chain` to `path` as a DDS (`.dds`) or KTX2 (`.ktx2`) file, by its extension,
/// through a temporary file and a rename.
pub fn write_block_chain(path: &std::path::Path, chain: &BlockChain) -> Result<(), TextureError> {
    let file = path.display().to_string();
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let bytes = match ext.as_str() {
        "dds" => dds_bytes(chain, &file)?,
        "ktx2" => ktx2_bytes(chain, &file)?,
        _ => {
            return Err(invalid(
                &file,
                format!("cannot tell the container from the extension `{ext}` (use .dds or .ktx2)"),
            ));
        }
    };
    super::write_file_atomic(path, &bytes)
}

#[cfg(test)]
mod tests;
