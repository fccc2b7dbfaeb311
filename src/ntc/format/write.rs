//! Writing a package: the header, the four sections and their checksums, through a
//! temporary file and a rename.

use std::path::Path;

use super::*;

impl NtcPackage {
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

    /// The config section's payload.
    pub(super) fn config_bytes(&self) -> Vec<u8> {
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
    pub(super) fn material_bytes(&self) -> Vec<u8> {
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
    pub(super) fn decoder_bytes(&self) -> Vec<u8> {
        self.decoders
            .iter()
            .flatten()
            .flat_map(|h| h.to_bits().to_le_bytes())
            .collect()
    }

    /// The latents section's payload.
    pub(super) fn latent_bytes(&self) -> Vec<u8> {
        self.materials
            .iter()
            .flat_map(|m| &m.latents)
            .flat_map(|w| w.to_le_bytes())
            .collect()
    }
}

/// Append a little-endian u32.
pub(super) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// True when both paths name the same existing file (or are equal as written).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
