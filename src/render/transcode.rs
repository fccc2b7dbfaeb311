//! The quality of inference on load's transcode: the GPU block encoder against the CPU
//! reference (the ISPC encoder of [`crate::texture::bcn`]) on the same NTC-decoded texels.
//! The package is baked twice, into RGBA8 and transcoded; each transcoded level is read
//! back and decoded (`texture2ddecoder`), the RGBA8 level is encoded with ISPC in the same
//! format and decoded, and both are scored against the RGBA8 texels.

use crate::gpu::{GpuContext, read_texture};
use crate::ntc::format::NtcPackage;
use crate::render::ntc_gpu::{NtcRenderError, NtcSceneGpu};
use crate::render::passes::bcn_encode::GpuBlockFormat;
use crate::render::passes::ntc_bake::{NtcBakePass, Transcode, set_formats};
use crate::texture::bcn::{BlockFormat, decode_blocks, encode_rgba};
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
    let rgba8 = NtcBakePass::new(ctx, &package.config, None)?.bake(ctx, package, ntc, budget)?;
    let blocks =
        NtcBakePass::new(ctx, &package.config, Some(transcode))?.bake(ctx, package, ntc, budget)?;
    let read = |texture: &wgpu::Texture, mip: usize| {
        read_texture(ctx, texture, mip as u32, 0).map_err(|e| NtcRenderError::Gpu {
            what: "reading the baked textures back".into(),
            message: e.to_string(),
        })
    };
    let (mut gpu_sse, mut ispc_sse, mut count) = (0.0f64, 0.0f64, 0u64);
    for ((m, plain), coded) in package.materials.iter().zip(&rgba8.sets).zip(&blocks.sets) {
        let formats = set_formats(m.present, Some(transcode));
        for mip in 0..m.layout.mips() {
            for (g, (_, encoding)) in formats.iter().enumerate() {
                let format = match encoding {
                    Some(GpuBlockFormat::Bc1) => BlockFormat::Bc1,
                    Some(GpuBlockFormat::Bc4 { .. }) => BlockFormat::Bc4,
                    Some(GpuBlockFormat::Bc5) => BlockFormat::Bc5,
                    Some(GpuBlockFormat::Bc7) | None => BlockFormat::Bc7,
                };
                let texels = read(&plain.textures[g], mip)?;
                let (w, h) = (texels.width, texels.height);
                let gpu = decode_blocks(&read(&coded.textures[g], mip)?.bytes, w, h, format);
                let ispc = decode_blocks(&encode_rgba(&texels.bytes, w, h, format), w, h, format);
                for ((t, a), b) in texels.bytes.chunks_exact(4).zip(&gpu).zip(&ispc) {
                    for c in 0..4 {
                        gpu_sse += (f64::from(t[c]) - f64::from(a[c])).powi(2);
                        ispc_sse += (f64::from(t[c]) - f64::from(b[c])).powi(2);
                    }
                    count += 4;
                }
            }
        }
    }
    let db = |sse: f64| psnr_from_mse(sse / (255.0f64.powi(2) * count.max(1) as f64));
    Ok(TranscodeQuality {
        transcode: transcode.name(),
        gpu_db: db(gpu_sse),
        ispc_db: db(ispc_sse),
    })
}
