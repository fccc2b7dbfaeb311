//! Reading a package from untrusted bytes: every count and size is checked against the
//! bytes that remain before anything is allocated (see the parent module's docs).

use std::path::Path;

use super::*;

impl NtcPackage {
    /// Read and validate the package at `path`.
    pub fn read(path: &Path) -> Result<Self, NtcFormatError> {
        let bytes =
            crate::io::read_file(path, |path, source| NtcFormatError::Read { path, source })?;
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
