//! Package tools behind `neurotex inspect` and `neurotex decompress`: a serialisable
//! summary of a `.ntc` package, and decoding it back into textures: PNGs (one per
//! material, channel group and, optionally, mip level), or DDS / KTX2 files holding each
//! group's whole mip chain block-compressed the way a baseline ships it (the decoded
//! texels encoded by `texture::bcn`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::format::NtcPackage;
use super::train::{TrainError, cpu::decode_mip};
use super::{NtcConfig, NtcFormatError};
use crate::texture::ImageGroup;
use crate::texture::bcn::{Baseline, encode_rgba};
use crate::texture::containers::{BlockChain, ContainerKind, write_block_chain};
use crate::texture::metrics::PsnrReport;
use crate::texture::{CHANNELS, Channel, ChannelMask, TextureError, quantize_u8, write_png_rgba8};

/// Errors of the package tools.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The package is invalid.
    #[error(transparent)]
    Format(#[from] NtcFormatError),
    /// Decoding failed.
    #[error(transparent)]
    Decode(#[from] TrainError),
    /// Writing a PNG failed.
    #[error(transparent)]
    Texture(#[from] TextureError),
    /// An output is refused by the output policy.
    #[error(transparent)]
    Output(#[from] crate::outputs::OutputError),
    /// Decoding would need more memory than the budget.
    #[error(transparent)]
    OverBudget(#[from] crate::texture::budget::OverBudget),
    /// The output folder is unusable.
    #[error("cannot create {path}: {source}")]
    Io {
        /// The folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// One material of a package summary.
#[derive(Clone, Debug, Serialize)]
pub struct MaterialSummary {
    /// Material (texture set) name.
    pub name: String,
    /// Decoder index.
    pub decoder: u32,
    /// Present channels.
    pub channels: String,
    /// Size of mip 0.
    pub width: u32,
    /// Size of mip 0.
    pub height: u32,
    /// Colour mips.
    pub mips: usize,
    /// Latent grids (width × height).
    pub grids: Vec<(u32, u32)>,
    /// Latent bits per mip-0 texel (whole pyramid).
    pub bits_per_texel: f64,
    /// Latent bits per mip-0 texel per present channel.
    pub bits_per_texel_per_channel: f64,
    /// PSNR measured at compression (mip 0): pooled over the present channels, and per
    /// channel group.
    pub psnr: PsnrReport,
}

/// A package summary.
#[derive(Clone, Debug, Serialize)]
pub struct PackageSummary {
    /// The file.
    pub file: String,
    /// File size in bytes.
    pub bytes: u64,
    /// Model configuration.
    pub config: NtcConfig,
    /// Decoders.
    pub decoders: usize,
    /// Parameters per decoder.
    pub decoder_params: usize,
    /// Materials.
    pub materials: Vec<MaterialSummary>,
}

/// Summarise `package` (read from `path`).
pub fn summarize(package: &NtcPackage, path: &Path) -> PackageSummary {
    let bits = package.config.latent_bits;
    PackageSummary {
        file: path.display().to_string(),
        bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        config: package.config.clone(),
        decoders: package.decoders.len(),
        decoder_params: package.config.decoder_param_count(),
        materials: package
            .materials
            .iter()
            .map(|m| MaterialSummary {
                name: m.name.clone(),
                decoder: m.decoder,
                channels: m.present.to_string(),
                width: m.layout.width(),
                height: m.layout.height(),
                mips: m.layout.mips(),
                grids: m
                    .layout
                    .grids()
                    .iter()
                    .map(|g| (g.width, g.height))
                    .collect(),
                bits_per_texel: m.layout.bits_per_texel(bits),
                bits_per_texel_per_channel: m
                    .layout
                    .bits_per_texel_per_channel(bits, m.present.count()),
                psnr: m.quality.report(),
            })
            .collect(),
    }
}

impl std::fmt::Display for PackageSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.config;
        writeln!(f, "{}: {} bytes", self.file, self.bytes)?;
        writeln!(
            f,
            "model: {} features/texel at {:?}, preset {:?}, MLP {} → {:?} → 16 ({:?}), {} params/decoder",
            c.features,
            c.latent_bits,
            c.preset,
            c.input_width(),
            c.hidden,
            c.activation,
            self.decoder_params
        )?;
        writeln!(
            f,
            "{} decoders, {} materials",
            self.decoders,
            self.materials.len()
        )?;
        writeln!(
            f,
            "{:<40} {:>3} {:>11} {:>4} {:>7} {:>8}  psnr (dB)",
            "material", "dec", "size", "mips", "bpt", "bpt/ch"
        )?;
        for m in &self.materials {
            writeln!(
                f,
                "{:<40} {:>3} {:>11} {:>4} {:>7.3} {:>8.3}  {}",
                m.name,
                m.decoder,
                format!("{}x{}", m.width, m.height),
                m.mips,
                m.bits_per_texel,
                m.bits_per_texel_per_channel,
                m.psnr.summary()
            )?;
        }
        Ok(())
    }
}

/// A file-system-safe version of a material name.
fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Canonical decoded values (`CHANNELS` per texel, unclamped) → RGBA8 of one group, the
/// channels the set does not have (outside `present`) at their neutral values as the
/// renderer samples them (an opaque alpha, a flat normal), not the decoder's untrained
/// outputs.
fn group_rgba(decoded: &[f32], group: ImageGroup, present: ChannelMask) -> Vec<u8> {
    let q = |v: f32| quantize_u8(v.clamp(0.0, 1.0));
    decoded
        .chunks_exact(CHANNELS)
        .flat_map(|t| {
            let v = |i: usize| match Channel::from_index(i) {
                Some(c) if !present.has(i) => c.neutral(),
                _ => t[i],
            };
            match group {
                ImageGroup::BaseColor => [q(v(0)), q(v(1)), q(v(2)), q(v(3))],
                ImageGroup::Normal => {
                    // Rebuild Z for a viewable normal map.
                    let (x, y) = (v(4) * 2.0 - 1.0, v(5) * 2.0 - 1.0);
                    let z = (1.0 - x * x - y * y).max(0.0).sqrt();
                    [q(v(4)), q(v(5)), q(z * 0.5 + 0.5), 255]
                }
                ImageGroup::Orm => [q(v(6)), q(v(7)), q(v(8)), 255],
                ImageGroup::Emissive => [q(v(9)), q(v(10)), q(v(11)), 255],
            }
        })
        .collect()
}

/// What [`decompress`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// PNGs of mip 0, or of every level when `mips`.
    Png {
        /// Every level, as `_mip<N>` files.
        mips: bool,
    },
    /// One DDS or KTX2 file per image with its whole mip chain, in `baseline`'s formats.
    Blocks {
        /// DDS or KTX2.
        container: ContainerKind,
        /// The block format of each image.
        baseline: Baseline,
    },
}

impl Output {
    /// Whether every mip level is decoded.
    fn all_levels(self) -> bool {
        !matches!(self, Output::Png { mips: false })
    }
}

/// The files [`decompress`] writes: per material (package order) its stem, unique among
/// the package's materials even where names differ only in characters a file name
/// cannot hold or in case (`x y`, `x_y` and `X.y` become `x_y`, `x_y-2`, `X_y-3`).
pub fn output_stems(package: &NtcPackage) -> Vec<String> {
    let mut taken: std::collections::HashSet<String> = std::collections::HashSet::new();
    package
        .materials
        .iter()
        .map(|m| {
            let base = file_stem(&m.name);
            let mut stem = base.clone();
            let mut n = 2;
            while !taken.insert(stem.to_lowercase()) {
                stem = format!("{base}-{n}");
                n += 1;
            }
            stem
        })
        .collect()
}

/// Every file [`decompress`] writes, in order: `(material index, mip level, group, path)`
/// (level 0 for a DDS or KTX2 file, which holds every level).
pub fn output_files(
    package: &NtcPackage,
    out_dir: &Path,
    output: Output,
) -> Vec<(usize, usize, ImageGroup, PathBuf)> {
    let (mips, extension) = match output {
        Output::Png { mips } => (mips, "png"),
        Output::Blocks { container, .. } => (false, container_extension(container)),
    };
    let stems = output_stems(package);
    let mut files = Vec::new();
    for decoder in 0..package.decoders.len() as u32 {
        for (index, m) in package.materials.iter().enumerate() {
            if m.decoder != decoder {
                continue;
            }
            let levels = if mips { m.layout.mips() } else { 1 };
            for level in 0..levels {
                for group in ImageGroup::ALL {
                    if !m.present.intersects(group.mask()) {
                        continue;
                    }
                    let suffix = if mips {
                        format!("_mip{level}")
                    } else {
                        String::new()
                    };
                    let path = out_dir.join(format!(
                        "{}_{}{suffix}.{extension}",
                        stems[index],
                        group.name()
                    ));
                    files.push((index, level, group, path));
                }
            }
        }
    }
    files
}

/// The file extension of `container`'s files.
fn container_extension(container: ContainerKind) -> &'static str {
    match container {
        ContainerKind::Dds => "dds",
        ContainerKind::Ktx2 => "ktx2",
    }
}

/// Decode every material of `package` into `out_dir`: `<material>_<group>.png` for each
/// present channel group (and `_mip<N>` files for every level with `mips`), or one
/// `<material>_<group>.dds` / `.ktx2` per group with every level block-compressed in the
/// baseline's format for that group (base colour and emissive as sRGB formats), with
/// the unique stems of [`output_stems`]. Every file is checked against `policy` and the
/// decode against the memory budget before anything is written. Returns the files
/// written.
pub fn decompress(
    package: &NtcPackage,
    out_dir: &Path,
    output: Output,
    policy: &crate::outputs::OutputPolicy,
) -> Result<Vec<PathBuf>, ToolError> {
    package.check_decode_budget(crate::texture::budget::limit())?;
    policy.check_dir(out_dir)?;
    let files = output_files(package, out_dir, output);
    policy.check_all(files.iter().map(|(_, _, _, p)| p.as_path()))?;
    std::fs::create_dir_all(out_dir).map_err(|source| ToolError::Io {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let mut written = Vec::new();
    for decoder in 0..package.decoders.len() as u32 {
        let (model, indices) = package.group_model(decoder)?;
        for (local, &index) in indices.iter().enumerate() {
            let m = &package.materials[index];
            let levels = if output.all_levels() {
                m.layout.mips()
            } else {
                1
            };
            let mine: Vec<&(usize, usize, ImageGroup, PathBuf)> =
                files.iter().filter(|(i, _, _, _)| *i == index).collect();
            let formats = match output {
                Output::Blocks { baseline, .. } => {
                    Some(baseline.formats(m.present.contains(crate::texture::ChannelMask::ALPHA)))
                }
                Output::Png { .. } => None,
            };
            let mut chains: Vec<BlockChain> = Vec::new();
            for level in 0..levels {
                let Some((w, h)) = m.layout.mip_size(level) else {
                    continue;
                };
                let decoded = decode_mip(&model, local, level)?;
                for (k, (_, file_level, group, path)) in mine.iter().enumerate() {
                    let rgba = group_rgba(&decoded, *group, m.present);
                    match formats {
                        None if *file_level == level => {
                            write_png_rgba8(path, w, h, &rgba)?;
                            written.push(path.clone());
                        }
                        None => {}
                        Some(formats) => {
                            let at = ImageGroup::ALL.iter().position(|g| g == group).unwrap_or(0);
                            if level == 0 {
                                chains.push(BlockChain {
                                    format: formats[at],
                                    srgb: matches!(
                                        group,
                                        ImageGroup::BaseColor | ImageGroup::Emissive
                                    ),
                                    width: w,
                                    height: h,
                                    levels: Vec::with_capacity(levels),
                                });
                            }
                            if let Some(chain) = chains.get_mut(k) {
                                chain.levels.push(encode_rgba(&rgba, w, h, chain.format));
                            }
                        }
                    }
                }
            }
            for ((_, _, _, path), chain) in mine.iter().zip(&chains) {
                write_block_chain(path, chain)?;
                written.push(path.clone());
            }
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_channels_are_written_at_their_neutral_values() {
        // One texel whose every decoded output is 0.2 (what an untrained output may be).
        let decoded = [0.2f32; CHANNELS];
        let q = quantize_u8(0.2);
        // Base colour without alpha: opaque, the colour as decoded.
        let rgb = group_rgba(&decoded, ImageGroup::BaseColor, ChannelMask::BASE_COLOR);
        assert_eq!(rgb, [q, q, q, 255]);
        let rgba = ChannelMask(ChannelMask::BASE_COLOR.0 | ChannelMask::ALPHA.0);
        assert_eq!(
            group_rgba(&decoded, ImageGroup::BaseColor, rgba),
            [q, q, q, q]
        );
        // No normal: flat (0.5, 0.5, 1); roughness only: occlusion and metallic at 1.
        let flat = group_rgba(&decoded, ImageGroup::Normal, ChannelMask::BASE_COLOR);
        assert_eq!(flat, [128, 128, 255, 255]);
        let orm = group_rgba(&decoded, ImageGroup::Orm, ChannelMask::ROUGHNESS);
        assert_eq!(orm, [255, q, 255, 255]);
    }
}
