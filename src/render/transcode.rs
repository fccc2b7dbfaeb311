//! The quality of inference on load's transcode: the GPU block encoder against the CPU
//! reference (the ISPC encoder of [`crate::texture::bcn`]) on the same texels.
//!
//! [`transcode_quality`] measures it on NTC-decoded texels: the package is baked twice,
//! into RGBA8 and transcoded; each transcoded level is read back and decoded
//! (`texture2ddecoder`), the RGBA8 level is encoded with ISPC in the same format and
//! decoded, and both are scored against the RGBA8 texels. [`encoder_quality`] measures
//! it on texture sets' own channel groups (`neurotex bench bcn`), each group's mip chain encoded by
//! [`BcnEncodePass::encode_chain`].

use crate::gpu::{GpuContext, read_texture};
use crate::ntc::format::NtcPackage;
use crate::render::ntc_gpu::{NtcRenderError, NtcSceneGpu};
use crate::render::passes::bcn_encode::{BcnEncodePass, GpuBlockFormat};
use crate::render::passes::ntc_bake::{
    BakeKernel, NtcBakePass, Transcode, set_formats, set_transcode,
};
use crate::texture::TextureSet;
use crate::texture::bcn::{decode_blocks, encode_rgba};
use crate::texture::metrics::psnr_from_mse;

/// PSNR (dB, [`psnr_from_mse`] of 8-bit values, all four channels of every texel of every level of every group) of
/// the transcoded textures against the RGBA8-decoded ones, for the GPU encoder and for
/// ISPC in the same formats.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct TranscodeQuality {
    /// The transcode measured.
    pub transcode: &'static str,
    /// The GPU encoder's blocks.
    pub gpu_db: f64,
    /// ISPC's blocks of the same texels.
    pub ispc_db: f64,
}

/// Measure `transcode` on `package` (uploaded as `ntc`): see the module documentation.
pub fn transcode_quality(
    ctx: &GpuContext,
    package: &NtcPackage,
    ntc: &NtcSceneGpu,
    transcode: Transcode,
) -> Result<TranscodeQuality, NtcRenderError> {
    let budget = crate::texture::budget::limit();
    let pass = |t| NtcBakePass::new(ctx, &package.config, t, BakeKernel::F32);
    let rgba8 = pass(None)?.bake(ctx, package, ntc, budget)?;
    let blocks = pass(Some(transcode))?.bake(ctx, package, ntc, budget)?;
    let read = |texture: &wgpu::Texture, mip: usize| {
        read_texture(ctx, texture, mip as u32, 0).map_err(|e| NtcRenderError::Gpu {
            what: "reading the baked textures back".into(),
            message: e.to_string(),
        })
    };
    let mut sums = ErrorSums::default();
    for ((m, plain), coded) in package.materials.iter().zip(&rgba8.sets).zip(&blocks.sets) {
        // A set not of whole 4×4 blocks is baked uncompressed by both.
        let Some(transcode) = set_transcode((m.layout.width(), m.layout.height()), Some(transcode))
        else {
            continue;
        };
        let formats = set_formats(m.present, Some(transcode));
        for mip in 0..m.layout.mips() {
            let groups = formats.iter().zip(&plain.textures).zip(&coded.textures);
            for ((format, plain), coded) in groups {
                // Groups the set lacks have no texture, in either bake.
                let (Some((_, encoding)), Some(plain), Some(coded)) = (format, plain, coded) else {
                    continue;
                };
                let format = encoding.unwrap_or(GpuBlockFormat::Bc7);
                let texels = read(plain, mip)?;
                let gpu = read(coded, mip)?;
                sums.add_level(
                    &texels.bytes,
                    (texels.width, texels.height),
                    &gpu.bytes,
                    format,
                );
            }
        }
    }
    Ok(sums.quality(transcode))
}

/// Squared errors (8-bit values) of the GPU encoder's and of ISPC's blocks against the
/// texels both encode, the values summed, and how many BC7 blocks of each used each mode.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ErrorSums {
    /// The GPU encoder's.
    pub gpu: f64,
    /// ISPC's.
    pub ispc: f64,
    /// Values compared (texels × the format's channels: one for BC4, two for BC5, four
    /// otherwise).
    pub values: u64,
    /// The GPU encoder's BC7 blocks per mode (0–7).
    pub gpu_modes: [u64; 8],
    /// ISPC's BC7 blocks per mode.
    pub ispc_modes: [u64; 8],
}

/// Adds the mode of each BC7 block of `blocks` (the number of zero bits before the first
/// one; the reserved all-zero byte counts nowhere) to `modes`.
fn count_modes(blocks: &[u8], modes: &mut [u64; 8]) {
    for block in blocks.chunks_exact(16) {
        if let Some(m) = modes.get_mut(block[0].trailing_zeros() as usize) {
            *m += 1;
        }
    }
}

impl ErrorSums {
    /// Add a level: `gpu_blocks` are the GPU encoder's `format` blocks of the RGBA8
    /// `texels` (`width × height`); ISPC encodes the same texels in the same format.
    pub fn add_level(
        &mut self,
        texels: &[u8],
        (width, height): (u32, u32),
        gpu_blocks: &[u8],
        format: GpuBlockFormat,
    ) {
        let reference = format.reference_format();
        let gpu = decode_blocks(gpu_blocks, width, height, reference);
        let ispc_blocks = encode_rgba(texels, width, height, reference);
        if format == GpuBlockFormat::Bc7 {
            count_modes(gpu_blocks, &mut self.gpu_modes);
            count_modes(&ispc_blocks, &mut self.ispc_modes);
        }
        let ispc = decode_blocks(&ispc_blocks, width, height, reference);
        // BC4 carries red only (the transcode encodes it from channel 0, as ISPC does),
        // BC5 red and green; the other formats every channel.
        let channels = match format {
            GpuBlockFormat::Bc4 { .. } => 1,
            GpuBlockFormat::Bc5 => 2,
            GpuBlockFormat::Bc1 | GpuBlockFormat::Bc7 => 4,
        };
        for ((t, a), b) in texels.chunks_exact(4).zip(&gpu).zip(&ispc) {
            for c in 0..channels {
                self.gpu += (f64::from(t[c]) - f64::from(a[c])).powi(2);
                self.ispc += (f64::from(t[c]) - f64::from(b[c])).powi(2);
            }
            self.values += channels as u64;
        }
    }

    /// Both sums of `self` and `other`.
    pub fn merged(self, other: ErrorSums) -> ErrorSums {
        ErrorSums {
            gpu: self.gpu + other.gpu,
            ispc: self.ispc + other.ispc,
            values: self.values + other.values,
            gpu_modes: std::array::from_fn(|m| self.gpu_modes[m] + other.gpu_modes[m]),
            ispc_modes: std::array::from_fn(|m| self.ispc_modes[m] + other.ispc_modes[m]),
        }
    }

    /// The PSNRs of the sums ([`psnr_from_mse`]), named after `transcode`.
    pub fn quality(self, transcode: Transcode) -> TranscodeQuality {
        let db = |sse: f64| psnr_from_mse(sse / (255.0f64.powi(2) * self.values.max(1) as f64));
        TranscodeQuality {
            transcode: transcode.name(),
            gpu_db: db(self.gpu),
            ispc_db: db(self.ispc),
        }
    }
}

/// The GPU encoder against ISPC on every level of each of `sets`' three channel groups
/// ([`crate::texture::SetMip::group`], the planes the bake writes), each group in the
/// format `transcode` gives it ([`set_formats`]): one [`ErrorSums`] per set and group
/// (empty for a group the set has no channel of).
pub fn encoder_quality(
    ctx: &GpuContext,
    sets: &[TextureSet],
    transcode: Transcode,
) -> Result<Vec<[ErrorSums; 3]>, NtcRenderError> {
    let pass = BcnEncodePass::new(ctx)?;
    let mut out = Vec::with_capacity(sets.len());
    for set in sets {
        let formats = set_formats(set.present, Some(transcode));
        let mut sums = [ErrorSums::default(); 3];
        for (g, format) in formats.iter().enumerate() {
            let Some((_, encoding)) = format else {
                continue;
            };
            let format = encoding.unwrap_or(GpuBlockFormat::Bc7);
            let texels: Vec<Vec<u8>> = set.mips.iter().map(|mip| mip.group(g)).collect();
            let chain: Vec<(&[u8], (u32, u32))> = texels
                .iter()
                .zip(&set.mips)
                .map(|(texels, mip)| (texels.as_slice(), (mip.width, mip.height)))
                .collect();
            let blocks =
                pass.encode_chain(ctx, &chain, format)
                    .map_err(|e| NtcRenderError::Gpu {
                        what: format!("encoding `{}` with the GPU encoder", set.name),
                        message: e.to_string(),
                    })?;
            for ((texels, size), blocks) in chain.iter().zip(&blocks) {
                sums[g].add_level(texels, *size, blocks, format);
            }
        }
        out.push(sums);
    }
    Ok(out)
}
