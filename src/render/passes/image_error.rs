//! Image-error pass (`shaders/image_error.wgsl`): compares two same-size images at every
//! pixel with geometry, e.g. the NTC path's material targets or tonemapped output against
//! the reference path's, into a per-pixel error texture (for the heatmap) and a PSNR.
//!
//! # Definitions
//!
//! Per pixel with geometry, both colours are clamped to [0, 1] and, in
//! [`ErrorSpace::SrgbEncoded`], re-encoded with the sRGB curve; the error is the mean over
//! R, G, B of the squared difference (alpha is ignored). Squared rather than absolute
//! error, so that the mean over pixels is the MSE that PSNR needs and the map shows what
//! the PSNR weighs. PSNR = 10·log10(1 / MSE) over the pixels with geometry, through
//! [`psnr_from_mse`] (capped at 99 dB, like the texture metrics); `None` when the images
//! agree exactly or no pixel has geometry. Pixels without geometry get error 0.
//! [`reference_error`] is the CPU reference.
//!
//! # Precision
//!
//! Each pixel's error is computed in f32 (a few roundings, relative error ≈ 1e-7; the
//! sRGB curve's `pow` adds ≈ 1e-6 absolute per encoded value). Each 16×16 workgroup sums
//! its errors in f32 by a fixed-order tree (relative error ≤ 8 · 2⁻²⁴) and writes one
//! partial sum and pixel count; the host adds the partials in f64. No atomics, so the
//! result is deterministic, and the MSE is good to ≈ 1e-6 relative (≈ 5e-6 dB of PSNR)
//! at any image size. sRGB-format images are decoded to linear by the texture unit,
//! whose precision is the adapter's: lavapipe approximates the curve (≈ 2e-3 off in
//! linear light near black), which moves the PSNR of such images by ≈ 0.01 dB.

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::kernel::{ComputeKernel, KernelDesc, KernelError, workgroups};
use crate::gpu::{GpuContext, GpuError, read_buffer};
use crate::render::targets::Target;
use crate::screen::divergence::NO_MATERIAL;
use crate::texture::metrics::psnr_from_mse;
use crate::texture::srgb::linear_to_srgb;

/// Format of the per-pixel error texture.
pub const ERROR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R32Float;

/// Width and height of a workgroup, in pixels (`GROUP_W` in the shader).
pub const GROUP_W: u32 = 16;

/// Bytes of one workgroup's partial (`Partial` in the shader: f32 sum, u32 pixels).
pub const PARTIAL_BYTES: u64 = 8;

/// In which encoding colours are compared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[derive(clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorSpace {
    /// The values as the shader loads them: data targets (normals, roughness, …).
    #[default]
    Stored,
    /// Linear colour re-encoded with the sRGB curve: base colour or emissive targets, and
    /// sRGB-format images (which load as linear), compared as displayed and stored.
    SrgbEncoded,
}

/// The summed error over the pixels with geometry.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ErrorSummary {
    /// Sum of the per-pixel errors (each a mean over R, G, B of squared differences).
    pub squared_error: f64,
    /// Pixels with geometry.
    pub pixels: u64,
}

impl ErrorSummary {
    /// Mean squared error over the pixels with geometry; `None` without any.
    pub fn mse(&self) -> Option<f64> {
        (self.pixels > 0).then(|| self.squared_error / self.pixels as f64)
    }

    /// PSNR in dB of [0, 1] images; `None` when identical or without pixels.
    pub fn psnr(&self) -> Option<f64> {
        self.mse().filter(|&mse| mse > 0.0).map(psnr_from_mse)
    }
}

/// CPU reference of the pass: the per-pixel errors and their summary for images `a` and
/// `b` (RGBA, four values per pixel, as the shader loads them: sRGB formats decoded to
/// linear) over G-buffer material `words`, all row-major. The pixel count is
/// `words.len()`; pixels missing from a shorter `a` or `b` count as without geometry.
pub fn reference_error(
    a: &[f32],
    b: &[f32],
    words: &[u32],
    space: ErrorSpace,
) -> (Vec<f32>, ErrorSummary) {
    let compared = |v: f32| {
        let v = f64::from(v).clamp(0.0, 1.0);
        match space {
            ErrorSpace::Stored => v,
            ErrorSpace::SrgbEncoded => f64::from(linear_to_srgb(v as f32)),
        }
    };
    let mut summary = ErrorSummary::default();
    let errors = words
        .iter()
        .enumerate()
        .map(|(i, &word)| {
            let (Some(pa), Some(pb)) = (a.get(4 * i..4 * i + 3), b.get(4 * i..4 * i + 3)) else {
                return 0.0;
            };
            if word == NO_MATERIAL {
                return 0.0;
            }
            let error = pa
                .iter()
                .zip(pb)
                .map(|(&x, &y)| (compared(x) - compared(y)).powi(2))
                .sum::<f64>()
                / 3.0;
            summary.squared_error += error;
            summary.pixels += 1;
            error as f32
        })
        .collect();
    (errors, summary)
}

/// The pass's uniform, mirroring `Params` in `shaders/image_error.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[derive(bytemuck::Pod, bytemuck::Zeroable)]
pub struct ImageErrorUniform {
    /// 1 for [`ErrorSpace::SrgbEncoded`], else 0.
    pub srgb_encode: u32,
    /// Reserved, zero.
    pub _pad: [u32; 3],
}

/// Why two images cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The images, the G-buffer and the outputs differ in size.
    #[error(
        "image error: sizes differ (a {a:?}, b {b:?}, G-buffer {gbuffer:?}, outputs {outputs:?}); \
         compare images of the renderer's size into error targets of that size"
    )]
    SizeMismatch {
        /// Size of image `a`.
        a: (u32, u32),
        /// Size of image `b`.
        b: (u32, u32),
        /// Size of the G-buffer.
        gbuffer: (u32, u32),
        /// Size the error targets were made for.
        outputs: (u32, u32),
    },
    /// An image's format does not load as float (e.g. an integer format).
    #[error(
        "image error: {format:?} does not load as float; compare colour or data targets \
         (float, unorm or sRGB formats)"
    )]
    NotFloat {
        /// The offending format.
        format: wgpu::TextureFormat,
    },
}

/// What the image-error pass writes: the per-pixel error (for the heatmap) and one partial
/// sum per workgroup (for the PSNR).
#[derive(Debug)]
pub struct ErrorTargets {
    size: (u32, u32),
    /// Per-pixel error ([`ERROR_FORMAT`]).
    pub error: Target,
    /// One `Partial` ([`PARTIAL_BYTES`]) per 16×16 workgroup.
    pub partials: wgpu::Buffer,
}

impl ErrorTargets {
    /// Allocate for `size` images.
    pub fn new(device: &wgpu::Device, size: (u32, u32)) -> Self {
        let size = (size.0.max(1), size.1.max(1));
        let (w, h) = workgroups(size, GROUP_W);
        Self {
            size,
            error: Target::new(
                device,
                "image_error.error",
                size,
                ERROR_FORMAT,
                wgpu::TextureUsages::STORAGE_BINDING,
            ),
            partials: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("image_error.partials"),
                size: u64::from(w) * u64::from(h) * PARTIAL_BYTES,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
        }
    }

    /// The image size they were made for.
    pub fn size(&self) -> (u32, u32) {
        self.size
    }

    /// Blocking: the summed error of the last submitted comparison into these targets
    /// (reads the partials back in a separate submission and waits for the GPU).
    pub fn summary_blocking(&self, ctx: &GpuContext) -> Result<ErrorSummary, GpuError> {
        let bytes = read_buffer(ctx, &self.partials, 0..self.partials.size())?;
        // (f32 bits, u32) per workgroup.
        let words: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes);
        let mut summary = ErrorSummary::default();
        for partial in words.chunks_exact(2) {
            summary.squared_error += f64::from(f32::from_bits(partial[0]));
            summary.pixels += u64::from(partial[1]);
        }
        Ok(summary)
    }

    /// Blocking: the PSNR of the last submitted comparison ([`ErrorSummary::psnr`]).
    pub fn psnr_blocking(&self, ctx: &GpuContext) -> Result<Option<f64>, GpuError> {
        Ok(self.summary_blocking(ctx)?.psnr())
    }
}

/// What the image-error pass compares.
#[derive(Clone, Copy, Debug)]
pub struct ImageErrorInputs<'a> {
    /// Image `a` (`TEXTURE_BINDING` usage, a float-loadable format).
    pub a: &'a Target,
    /// Image `b`, likewise.
    pub b: &'a Target,
    /// The G-buffer's material words: which pixels count.
    pub material_ids: &'a Target,
    /// How colours are compared.
    pub space: ErrorSpace,
}

/// The image-error pass.
#[derive(Debug)]
pub struct ImageErrorPass {
    kernel: ComputeKernel,
    uniform: wgpu::Buffer,
}

impl ImageErrorPass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "image_error";

    /// Build the pipeline.
    pub fn new(ctx: &GpuContext) -> Result<Self, KernelError> {
        let kernel = ComputeKernel::new(
            ctx,
            &KernelDesc::new(Self::LABEL, "image_error.wgsl", "measure"),
        )?;
        let uniform =
            crate::gpu::layout::uniform_buffer::<ImageErrorUniform>(&ctx.device, Self::LABEL);
        Ok(Self { kernel, uniform })
    }

    /// Record the comparison of `inputs` into `outputs`; all of one size. The space goes
    /// through `queue.write_buffer`, so one submission holds at most one comparison.
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        inputs: &ImageErrorInputs<'_>,
        outputs: &ErrorTargets,
    ) -> Result<(), CompareError> {
        let sizes = [inputs.a, inputs.b, inputs.material_ids].map(Target::size);
        if sizes.iter().any(|&s| s != outputs.size) {
            return Err(CompareError::SizeMismatch {
                a: sizes[0],
                b: sizes[1],
                gbuffer: sizes[2],
                outputs: outputs.size,
            });
        }
        for format in [inputs.a.texture.format(), inputs.b.texture.format()] {
            if !matches!(
                format.sample_type(None, None),
                Some(wgpu::TextureSampleType::Float { .. })
            ) {
                return Err(CompareError::NotFloat { format });
            }
        }
        let view = wgpu::BindingResource::TextureView;
        let resources = &[
            (0, self.uniform.as_entire_binding()),
            (1, view(&inputs.a.view)),
            (2, view(&inputs.b.view)),
            (3, view(&inputs.material_ids.view)),
            (4, view(&outputs.error.view)),
            (5, outputs.partials.as_entire_binding()),
        ];
        let uniform = ImageErrorUniform {
            srgb_encode: u32::from(inputs.space == ErrorSpace::SrgbEncoded),
            _pad: [0; 3],
        };
        frame
            .queue()
            .write_buffer(&self.uniform, 0, bytemuck::bytes_of(&uniform));
        self.kernel
            .run(frame, resources, workgroups(outputs.size, GROUP_W));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_error_by_hand() {
        // Pixel 0: differs by 0.3 in R only → 0.09 / 3 = 0.03. Pixel 1: no geometry.
        // Pixel 2: values past [0, 1] are clamped first → identical.
        let a = [0.5, 0.2, 0.1, 1.0, 0.0, 0.0, 0.0, 1.0, 1.5, -1.0, 0.5, 0.0];
        let b = [0.2, 0.2, 0.1, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.5, 1.0];
        let words = [3, NO_MATERIAL, 0];
        let (errors, summary) = reference_error(&a, &b, &words, ErrorSpace::Stored);
        assert!((errors[0] - 0.03).abs() < 1e-7);
        assert_eq!(&errors[1..], &[0.0, 0.0]);
        assert_eq!(summary.pixels, 2);
        // The inputs are f32, so 0.5 − 0.2 is 0.3 only to ≈ 1e-8.
        assert!((summary.mse().unwrap() - 0.015).abs() < 1e-7);
        let psnr = summary.psnr().unwrap();
        assert!((psnr - 10.0 * (1.0 / 0.015f64).log10()).abs() < 1e-5);
        // In sRGB encoding the same linear difference weighs differently: 0.5 and 0.2
        // encode to 0.7354 and 0.4845.
        let (errors, _) = reference_error(&a, &b, &words, ErrorSpace::SrgbEncoded);
        assert!((errors[0] - (0.735_357_f32 - 0.484_529).powi(2) / 3.0).abs() < 1e-5);
    }

    #[test]
    fn psnr_is_none_when_identical_or_empty() {
        let a = [0.25; 8];
        let (_, same) = reference_error(&a, &a, &[1, 2], ErrorSpace::Stored);
        assert_eq!(same.pixels, 2);
        assert_eq!(same.psnr(), None);
        let (_, empty) = reference_error(&a, &[0.0; 8], &[NO_MATERIAL; 2], ErrorSpace::Stored);
        assert_eq!((empty.mse(), empty.psnr()), (None, None));
        // Short inputs count as without geometry rather than panicking.
        let (errors, short) = reference_error(&a[..4], &[0.0; 8], &[1, 1], ErrorSpace::Stored);
        assert_eq!(short.pixels, 1);
        assert_eq!(errors.len(), 2);
    }
}
