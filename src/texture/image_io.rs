//! Image decoding and writing.
//!
//! [`decode`] reads 8- and 16-bit PNG (gray, gray+alpha, RGB, RGBA; palette images are
//! expanded), JPEG, TGA (told by its extension) and WebP into a [`DecodedImage`] that keeps the file's sample width, so
//! 16-bit precision survives until the final 8-bit quantisation. The image size is read
//! from the header and checked against [`MAX_IMAGE_SIDE`](super::MAX_IMAGE_SIDE) before any pixel buffer is
//! allocated. DDS and KTX2 files (told by their first bytes) go through
//! [`super::containers`]: level 0 is decoded, every level's size checked, and
//! [`ImageInfo::block_format`] names a block-compressed (already lossy) source.
//! [`write_png_rgba8`] writes an RGBA8 PNG atomically (temporary file in the same folder,
//! then rename).

use std::io::{BufRead, Cursor, Seek};
use std::path::Path;

use image::{DynamicImage, ImageDecoder, ImageEncoder, ImageReader, Limits};

use super::TextureError;
use super::containers::{Container, ContainerKind};
use crate::scene::ImageSource;

/// The samples of a decoded image, interleaved, at the file's bit depth.
#[derive(Clone, Debug, PartialEq)]
pub enum Samples {
    /// 8-bit samples (0–255).
    U8(Vec<u8>),
    /// 16-bit samples (0–65535).
    U16(Vec<u16>),
}

/// A decoded image: `width × height` pixels of `channels` interleaved samples.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedImage {
    /// Width in pixels (≥ 1).
    pub width: u32,
    /// Height in pixels (≥ 1).
    pub height: u32,
    /// Samples per pixel as in the file: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA.
    pub channels: u8,
    /// The samples, row-major, `width * height * channels` of them.
    pub samples: Samples,
}

impl DecodedImage {
    /// Bits per sample: 8 or 16.
    pub fn bit_depth(&self) -> u8 {
        match self.samples {
            Samples::U8(_) => 8,
            Samples::U16(_) => 16,
        }
    }

    /// True when the file has an alpha channel (gray+alpha or RGBA).
    pub fn has_alpha(&self) -> bool {
        self.channels == 2 || self.channels == 4
    }

    /// Sample number `i` of the interleaved data, normalised to \[0, 1\]; 0.0 when out of range.
    pub fn sample(&self, i: usize) -> f32 {
        match &self.samples {
            Samples::U8(v) => v.get(i).map_or(0.0, |&s| s as f32 / 255.0),
            Samples::U16(v) => v.get(i).map_or(0.0, |&s| s as f32 / 65535.0),
        }
    }

    /// Pixel `(x, y)` as normalised RGBA: gray reads as R = G = B = gray, and alpha is 1.0
    /// when the file has none. Out-of-range coordinates read as transparent black.
    pub fn rgba(&self, x: u32, y: u32) -> [f32; 4] {
        if x >= self.width || y >= self.height {
            return [0.0; 4];
        }
        let c = self.channels as usize;
        let base = (y as usize * self.width as usize + x as usize) * c;
        let s = |k: usize| self.sample(base + k);
        match c {
            1 => {
                let g = s(0);
                [g, g, g, 1.0]
            }
            2 => {
                let g = s(0);
                [g, g, g, s(1)]
            }
            3 => [s(0), s(1), s(2), 1.0],
            _ => [s(0), s(1), s(2), s(3)],
        }
    }
}

/// What an image's header says, read without decoding any pixel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageInfo {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Samples per pixel after decoding (1, 2, 3 or 4).
    pub channels: u8,
    /// Bytes per sample after decoding (1 or 2).
    pub bytes_per_sample: u8,
    /// Size of the encoded data in bytes.
    pub encoded_len: u64,
    /// The block format (`BC1` … `BC7`) of a DDS or KTX2 source: its texels were already
    /// lossily compressed.
    pub block_format: Option<&'static str>,
}

impl ImageInfo {
    /// Bytes of the decoded samples.
    pub fn decoded_bytes(&self) -> u64 {
        super::budget::product(&[
            self.width.into(),
            self.height.into(),
            self.channels.into(),
            self.bytes_per_sample.into(),
        ])
    }
}

/// Largest ratio of decoded to encoded bytes a real image reaches: PNG's deflate stops
/// at 1032:1, and 1-bit palette images expand 32-fold on top; a JPEG needs at least one
/// bit per 8×8 block. A header announcing more than this (plus [`EXPANSION_SLACK`]) over
/// the bytes that follow it describes pixels the file cannot hold.
pub const MAX_EXPANSION: u64 = 65536;

/// Decoded bytes any image may announce regardless of its encoded size (64 MiB).
pub const EXPANSION_SLACK: u64 = 64 << 20;

/// Decode an image (PNG, JPEG, TGA, WebP, DDS or KTX2) from a file or embedded bytes.
///
/// Before any pixel buffer is allocated, the header's size is checked: each side in
/// 1..=[`MAX_IMAGE_SIDE`](super::MAX_IMAGE_SIDE) ([`TextureError::TooLarge`]), the decoded bytes no more than
/// [`MAX_EXPANSION`] times the encoded ones plus [`EXPANSION_SLACK`] (a header whose
/// pixels the data cannot hold, [`TextureError::InvalidInput`]) and within the memory
/// budget ([`super::budget`]). Other errors: [`TextureError::Missing`] when the file does
/// not exist, [`TextureError::UnsupportedFormat`] for containers or pixel formats other
/// than 8/16-bit gray/gray+alpha/RGB/RGBA PNG, JPEG, TGA and WebP, and [`TextureError::Decode`]
/// with the image crate's message.
pub fn decode(source: &ImageSource) -> Result<DecodedImage, TextureError> {
    let file = source.display_name();
    if let Some(bytes) = container_bytes(source, &file)? {
        let container = Container::parse(&bytes, &file)?;
        return container.decode_level(0, &file);
    }
    match source {
        ImageSource::File(path) => {
            let (reader, len) = open_file(path, &file)?;
            decode_reader(reader, &file, len, true)?.1
        }
        ImageSource::Embedded { bytes, .. } => {
            decode_reader(
                ImageReader::new(Cursor::new(&bytes[..])),
                &file,
                bytes.len() as u64,
                true,
            )?
            .1
        }
    }
    .ok_or_else(|| TextureError::Decode {
        file,
        message: "no pixels decoded".into(),
    })
}

/// Read only the header of an image: its size and pixel format, checked as [`decode`]
/// checks them (side limits, plausibility, budget) but without decoding.
pub fn probe(source: &ImageSource) -> Result<ImageInfo, TextureError> {
    let file = source.display_name();
    if let Some(bytes) = container_bytes(source, &file)? {
        let c = Container::parse(&bytes, &file)?;
        let info = ImageInfo {
            width: c.width,
            height: c.height,
            channels: c.channels(),
            bytes_per_sample: c.sample_bytes(),
            encoded_len: bytes.len() as u64,
            block_format: c.encoding.lossy(),
        };
        super::budget::check(
            || format!("decoding {file} ({}×{})", c.width, c.height),
            c.decode_bytes(0),
            super::budget::limit(),
        )?;
        return Ok(info);
    }
    match source {
        ImageSource::File(path) => {
            let (reader, len) = open_file(path, &file)?;
            decode_reader(reader, &file, len, false).map(|(info, _)| info)
        }
        ImageSource::Embedded { bytes, .. } => decode_reader(
            ImageReader::new(Cursor::new(&bytes[..])),
            &file,
            bytes.len() as u64,
            false,
        )
        .map(|(info, _)| info),
    }
}

/// The whole file or embedded bytes of `source` when it is a DDS or KTX2 container (told
/// by its first bytes), `None` for anything else. A file is read only after its length
/// passed the memory budget.
fn container_bytes<'a>(
    source: &'a ImageSource,
    file: &str,
) -> Result<Option<std::borrow::Cow<'a, [u8]>>, TextureError> {
    let io = |path: &Path, e| TextureError::read(path, file, e);
    match source {
        ImageSource::Embedded { bytes, .. } => {
            Ok(ContainerKind::sniff(bytes).map(|_| std::borrow::Cow::Borrowed(&bytes[..])))
        }
        ImageSource::File(path) => {
            use std::io::Read;
            let mut f = std::fs::File::open(path).map_err(|e| io(path, e))?;
            let mut head = [0u8; 12];
            let mut got = 0;
            while got < head.len() {
                match f.read(&mut head[got..]).map_err(|e| io(path, e))? {
                    0 => break,
                    n => got += n,
                }
            }
            if ContainerKind::sniff(&head[..got]).is_none() {
                return Ok(None);
            }
            let len = f.metadata().map_err(|e| io(path, e))?.len();
            super::budget::check(|| format!("reading {file}"), len, super::budget::limit())?;
            let mut bytes = Vec::with_capacity(len as usize);
            bytes.extend_from_slice(&head[..got]);
            f.read_to_end(&mut bytes).map_err(|e| io(path, e))?;
            Ok(Some(std::borrow::Cow::Owned(bytes)))
        }
    }
}

/// Open an image file and its length.
fn open_file(
    path: &Path,
    file: &str,
) -> Result<(ImageReader<std::io::BufReader<std::fs::File>>, u64), TextureError> {
    let reader = ImageReader::open(path).map_err(|e| TextureError::read(path, file, e))?;
    let len = std::fs::metadata(path)
        .map_err(|e| TextureError::Io {
            path: path.to_path_buf(),
            source: e,
        })?
        .len();
    Ok((reader, len))
}

/// Shared path: guess the format from the content, read the header, check the size and
/// pixel format, then decode (when `pixels`).
fn decode_reader<R: BufRead + Seek>(
    reader: ImageReader<R>,
    file: &str,
    encoded_len: u64,
    pixels: bool,
) -> Result<(ImageInfo, Option<DecodedImage>), TextureError> {
    let decode_err = |e: image::ImageError| match e {
        image::ImageError::Unsupported(u) => TextureError::UnsupportedFormat {
            file: file.to_string(),
            format: u.to_string(),
        },
        other => TextureError::Decode {
            file: file.to_string(),
            message: other.to_string(),
        },
    };
    let mut reader = reader
        .with_guessed_format()
        .map_err(|e| TextureError::Decode {
            file: file.to_string(),
            message: e.to_string(),
        })?;
    use image::ImageFormat::{Jpeg, Png, Tga, WebP};
    // TGA has no signature: it is told by the file name's extension.
    if reader.format().is_none() && image::ImageFormat::from_path(file).ok() == Some(Tga) {
        reader.set_format(Tga);
    }
    match reader.format() {
        Some(Png | Jpeg | Tga | WebP) => {}
        Some(other) => {
            return Err(TextureError::UnsupportedFormat {
                file: file.to_string(),
                format: format!("{other:?} container"),
            });
        }
        None => {
            return Err(TextureError::UnsupportedFormat {
                file: file.to_string(),
                format: "unknown container (not PNG, JPEG, TGA, WebP, DDS or KTX2)".into(),
            });
        }
    }
    // The checks below bound every buffer; the allocation limit only guards the
    // decoders' own bookkeeping (the default of 512 MiB would refuse a legal 16K² RGBA8).
    let mut limits = Limits::no_limits();
    limits.max_alloc = Some(4 << 30);
    reader.limits(limits);

    let decoder = reader.into_decoder().map_err(decode_err)?;
    let (width, height) = decoder.dimensions();
    TextureError::check_size(file, width, height)?;
    let color = decoder.color_type();
    use image::ColorType as C;
    let (channels, bytes_per_sample) = match color {
        C::L8 => (1, 1),
        C::La8 => (2, 1),
        C::Rgb8 => (3, 1),
        C::Rgba8 => (4, 1),
        C::L16 => (1, 2),
        C::La16 => (2, 2),
        C::Rgb16 => (3, 2),
        C::Rgba16 => (4, 2),
        _ => {
            return Err(TextureError::UnsupportedFormat {
                file: file.to_string(),
                format: format!("{color:?}"),
            });
        }
    };
    let info = ImageInfo {
        width,
        height,
        channels,
        bytes_per_sample,
        encoded_len,
        block_format: None,
    };
    let decoded = info.decoded_bytes();
    let plausible = encoded_len
        .saturating_mul(MAX_EXPANSION)
        .saturating_add(EXPANSION_SLACK);
    if decoded > plausible {
        return Err(TextureError::InvalidInput {
            file: file.to_string(),
            reason: format!(
                "the header announces {width}×{height} pixels ({decoded} bytes decoded), more than {encoded_len} bytes of image data can hold"
            ),
        });
    }
    super::budget::check(
        || format!("decoding {file} ({width}×{height})"),
        decoded,
        super::budget::limit(),
    )?;
    if !pixels {
        return Ok((info, None));
    }
    let image = DynamicImage::from_decoder(decoder).map_err(decode_err)?;
    let samples = match image {
        DynamicImage::ImageLuma8(i) => Samples::U8(i.into_raw()),
        DynamicImage::ImageLumaA8(i) => Samples::U8(i.into_raw()),
        DynamicImage::ImageRgb8(i) => Samples::U8(i.into_raw()),
        DynamicImage::ImageRgba8(i) => Samples::U8(i.into_raw()),
        DynamicImage::ImageLuma16(i) => Samples::U16(i.into_raw()),
        DynamicImage::ImageLumaA16(i) => Samples::U16(i.into_raw()),
        DynamicImage::ImageRgb16(i) => Samples::U16(i.into_raw()),
        DynamicImage::ImageRgba16(i) => Samples::U16(i.into_raw()),
        other => {
            return Err(TextureError::UnsupportedFormat {
                file: file.to_string(),
                format: format!("{:?}", other.color()),
            });
        }
    };
    Ok((
        info,
        Some(DecodedImage {
            width,
            height,
            channels,
            samples,
        }),
    ))
}

/// The image formats outputs are written in, chosen by the file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// `.png`: lossless RGBA8.
    Png,
    /// `.jpg` / `.jpeg`: RGB (alpha dropped), quality 95.
    Jpeg,
}

/// The format of an output image from its extension (`.png`, `.jpg`, `.jpeg`, any case);
/// any other extension, or none, is an error naming the file.
pub fn output_format(path: &Path) -> Result<OutputFormat, TextureError> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => Ok(OutputFormat::Png),
        "jpg" | "jpeg" => Ok(OutputFormat::Jpeg),
        _ => Err(TextureError::InvalidInput {
            file: path.display().to_string(),
            reason: format!(
                "cannot tell the image format from the extension `{ext}` (use .png, .jpg or .jpeg)"
            ),
        }),
    }
}

/// Write an RGBA8 image in the format its extension names ([`output_format`]), through a
/// temporary file in the same folder and a rename.
pub fn write_image_rgba8(
    path: &Path,
    width: u32,
    height: u32,
    rgba: &[u8],
) -> Result<(), TextureError> {
    match output_format(path)? {
        OutputFormat::Png => write_png_rgba8(path, width, height, rgba),
        OutputFormat::Jpeg => {
            let file = path.display().to_string();
            if Some(rgba.len())
                != (width as usize)
                    .checked_mul(height as usize)
                    .and_then(|n| n.checked_mul(4))
                || width == 0
                || height == 0
            {
                return Err(TextureError::InvalidInput {
                    file,
                    reason: format!(
                        "{} bytes do not make a {width}×{height} RGBA8 image",
                        rgba.len()
                    ),
                });
            }
            let rgb: Vec<u8> = rgba
                .chunks_exact(4)
                .flat_map(|p| [p[0], p[1], p[2]])
                .collect();
            let mut jpeg = Vec::new();
            image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 95)
                .write_image(&rgb, width, height, image::ExtendedColorType::Rgb8)
                .map_err(|e| TextureError::Encode {
                    file,
                    message: e.to_string(),
                })?;
            super::write_file_atomic(path, &jpeg)
        }
    }
}

/// Write an RGBA8 image (`width * height * 4` bytes, row-major) as a PNG file, through a
/// temporary file in the same folder and a rename.
pub fn write_png_rgba8(
    path: &Path,
    width: u32,
    height: u32,
    rgba: &[u8],
) -> Result<(), TextureError> {
    let file = path.display().to_string();
    let expected = (width as usize)
        .checked_mul(height as usize)
        .and_then(|n| n.checked_mul(4));
    if width == 0 || height == 0 || expected != Some(rgba.len()) {
        return Err(TextureError::InvalidInput {
            file,
            reason: format!(
                "{} bytes do not make a {width}×{height} RGBA8 image",
                rgba.len()
            ),
        });
    }
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(rgba, width, height, image::ExtendedColorType::Rgba8)
        .map_err(|e| TextureError::Encode {
            file,
            message: e.to_string(),
        })?;
    crate::io::write_atomic(path, &png).map_err(|source| TextureError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::Arc;

    const LIVING: &str = "../shared/assets/ntc_living_room";

    /// The living room's image `path`, decoded.
    fn living(path: &str) -> DecodedImage {
        let src = ImageSource::File(Path::new(LIVING).join(path));
        decode(&src).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn png_bytes(img: DynamicImage) -> Arc<[u8]> {
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png)
            .expect("encode");
        out.into_inner().into()
    }

    #[test]
    fn sixteen_bit_png_keeps_precision() {
        let mut img = image::ImageBuffer::<image::Rgb<u16>, Vec<u16>>::new(3, 2);
        for (i, p) in img.pixels_mut().enumerate() {
            *p = image::Rgb([i as u16 * 1000 + 1, 65535, 257]);
        }
        let src = ImageSource::Embedded {
            name: "tiny16.png".into(),
            bytes: png_bytes(DynamicImage::ImageRgb16(img)),
        };
        let d = decode(&src).expect("decode");
        assert_eq!(
            (d.width, d.height, d.channels, d.bit_depth()),
            (3, 2, 3, 16)
        );
        assert_eq!(d.samples, {
            let mut v = Vec::new();
            for i in 0..6u16 {
                v.extend([i * 1000 + 1, 65535, 257]);
            }
            Samples::U16(v)
        });
        let px = d.rgba(1, 0);
        assert!((px[0] - 1001.0 / 65535.0).abs() < 1e-7);
        assert_eq!(px[3], 1.0);
    }

    #[test]
    fn real_sixteen_bit_png_decodes() {
        let d = living("living_room/textures/rosewood_veneer1_nor_gl_1k.png");
        assert_eq!(
            (d.width, d.height, d.channels, d.bit_depth()),
            (1024, 1024, 3, 16)
        );
    }

    #[test]
    fn grayscale_reads_as_rgb() {
        // A true 1-channel PNG with alpha.
        let img =
            image::GrayAlphaImage::from_fn(4, 4, |x, y| image::LumaA([(x * 60 + y) as u8, 200]));
        let src = ImageSource::Embedded {
            name: "gray.png".into(),
            bytes: png_bytes(DynamicImage::ImageLumaA8(img)),
        };
        let d = decode(&src).expect("decode");
        assert_eq!(d.channels, 2);
        assert!(d.has_alpha());
        let [r, g, b, a] = d.rgba(3, 1);
        assert_eq!((r, g, b), (181.0 / 255.0, 181.0 / 255.0, 181.0 / 255.0));
        assert_eq!(a, 200.0 / 255.0);

        // A real 1-channel roughness map (Poly Haven JPEG): gray reads as R = G = B.
        let d = living("polyhaven_props/asphalt_02/textures/asphalt_02_rough_1k.jpg");
        assert_eq!((d.width, d.height, d.channels), (1024, 1024, 1));
        for (x, y) in [(0, 0), (17, 900), (512, 511), (1023, 1023)] {
            let [r, g, b, a] = d.rgba(x, y);
            assert!(r == g && g == b && a == 1.0, "({x}, {y})");
        }

        // The room's "grayscale" roughness PNG is in fact stored in glTF layout:
        // RGB with R = B = 1 and the roughness in G (metallicFactor 0 zeroes B).
        let d = living("living_room/textures/wood_table_worn_rough_1k.png");
        assert_eq!(
            (d.width, d.height, d.channels, d.bit_depth()),
            (1024, 1024, 3, 8)
        );
        let [r, g, b, a] = d.rgba(0, 0);
        assert_eq!((r, b, a), (1.0, 1.0, 1.0));
        assert!(g < 1.0);
    }

    /// CRC-32 (ISO-HDLC), as PNG chunks use.
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = 0xFFFF_FFFFu32;
        for &b in bytes {
            crc ^= b as u32;
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn tga_and_webp_decode_to_their_pixels() {
        let rgba = image::RgbaImage::from_fn(5, 3, |x, y| {
            image::Rgba([(x * 50) as u8, (y * 80) as u8, 7, 255 - (x + y) as u8])
        });
        let encoded = |format| {
            let mut out = Cursor::new(Vec::new());
            DynamicImage::ImageRgba8(rgba.clone())
                .write_to(&mut out, format)
                .expect("encode");
            out.into_inner()
        };
        let dir = crate::io::test_dir("image-io-tga-webp");
        for (name, format) in [
            ("t.tga", image::ImageFormat::Tga),
            ("t.webp", image::ImageFormat::WebP),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, encoded(format)).expect("write");
            let embedded = ImageSource::Embedded {
                name: name.into(),
                bytes: encoded(format).into(),
            };
            for src in [ImageSource::File(path), embedded] {
                let d = decode(&src).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!((d.width, d.height, d.channels), (5, 3, 4), "{name}");
                assert_eq!(d.samples, Samples::U8(rgba.as_raw().clone()), "{name}");
                let info = probe(&src).expect("probe");
                assert_eq!((info.width, info.height), (5, 3), "{name}");
            }
        }
    }

    #[test]
    fn missing_and_bad_inputs_name_the_file() {
        let src = ImageSource::File(PathBuf::from("no/such/dir/ghost_diff_1k.jpg"));
        let e = decode(&src).unwrap_err();
        assert!(matches!(e, TextureError::Missing { .. }), "{e}");
        assert!(e.to_string().contains("ghost_diff_1k.jpg"));

        let src = ImageSource::Embedded {
            name: "garbage#image0".into(),
            bytes: Arc::from(&b"definitely not an image"[..]),
        };
        let e = decode(&src).unwrap_err();
        assert!(e.to_string().contains("garbage#image0"), "{e}");

        // A PNG header that announces 20000×1 pixels: refused before decoding.
        let mut png = png_bytes(DynamicImage::ImageLuma8(image::GrayImage::new(1, 1))).to_vec();
        png[16..20].copy_from_slice(&20000u32.to_be_bytes());
        let crc = crc32(&png[12..29]);
        png[29..33].copy_from_slice(&crc.to_be_bytes());
        let src = ImageSource::Embedded {
            name: "huge.png".into(),
            bytes: png.into(),
        };
        let e = decode(&src).unwrap_err();
        assert!(
            matches!(e, TextureError::TooLarge { width: 20000, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("huge.png"));
    }

    #[test]
    fn png_write_round_trips() {
        let dir = crate::io::test_dir("image-io-write");
        let path = dir.join("out.png");
        let rgba: Vec<u8> = (0..2 * 3 * 4).map(|i| (i * 10) as u8).collect();
        write_png_rgba8(&path, 2, 3, &rgba).expect("write");
        let d = decode(&ImageSource::File(path.clone())).expect("read back");
        assert_eq!((d.width, d.height, d.channels), (2, 3, 4));
        assert_eq!(d.samples, Samples::U8(rgba));
        assert!(write_png_rgba8(&path, 2, 2, &[0; 3]).is_err());
        // Only the final file remains.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.png")]);
        std::fs::remove_dir_all(&dir).ok();
    }
}
