//! Split pass (`shaders/split.wgsl`): composes the two tonemapped frames of a split
//! comparison into the output, the left frame left of a divider column and the right one
//! from it on; or, in the difference view, each side's error against the reference as a
//! grey level amplified by a gain. [`reference_compose`] is the CPU reference that defines
//! every value the shader writes.
//!
//! The two frames are `Rgba8Unorm` textures of sRGB-encoded bytes (what the tonemap
//! pass's compute entry writes); the output is written as stored bytes through its own
//! format's view: a UNORM view takes the loaded bytes unchanged, an sRGB one (the
//! `LINEAR_TARGET` variant) gets them decoded to linear, which its hardware encodes
//! back. Like the tonemap pass, each output pixel reads the internal pixel under it.

use crate::gpu::Defines;
use crate::gpu::encoder::FrameEncoder;
use crate::gpu::{GpuContext, ShaderError};
use crate::render::passes::fullscreen::FullscreenPass;
use crate::render::targets::Target;

/// The pass's uniform, mirroring `Params` in `shaders/split.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[derive(bytemuck::Pod, bytemuck::Zeroable)]
pub struct SplitUniform {
    /// First internal pixel column taken from the right frame.
    pub divider: u32,
    /// Difference-view gain; 0 shows the frames.
    pub gain: f32,
    /// Reserved, zero.
    pub _pad: [u32; 2],
}

/// How the two frames are composed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Composition {
    /// First pixel column of the right frame (internal pixels).
    pub divider: u32,
    /// The difference view's gain (`None`: the frames themselves).
    pub difference: Option<f32>,
}

impl Composition {
    fn uniform(&self) -> SplitUniform {
        SplitUniform {
            divider: self.divider,
            gain: self
                .difference
                .filter(|g| g.is_finite() && *g > 0.0)
                .unwrap_or(0.0),
            _pad: [0; 2],
        }
    }
}

/// The grey level of the difference view for a per-pixel error `e` at `gain`, as an
/// 8-bit code (the shader's `clamp(sqrt(e) · gain, 0, 1)` stored into 8 bits).
pub fn difference_code(e: f32, gain: f32) -> u8 {
    let v = (e.max(0.0).sqrt() * gain).clamp(0.0, 1.0);
    (v * 255.0).round() as u8
}

/// CPU reference of the pass at equal internal and output sizes: the composed RGBA8
/// bytes of frames `left` and `right` (RGBA8, row-major, `width` pixels a row) with their
/// per-pixel errors `left_error` and `right_error` (one value a pixel). Alpha is 255.
pub fn reference_compose(
    left: &[u8],
    right: &[u8],
    left_error: &[f32],
    right_error: &[f32],
    width: u32,
    composition: &Composition,
) -> Vec<u8> {
    let gain = composition.uniform().gain;
    let mut out = Vec::with_capacity(left.len());
    for (i, (l, r)) in left.chunks_exact(4).zip(right.chunks_exact(4)).enumerate() {
        let from_right = (i as u32 % width.max(1)) >= composition.divider;
        if gain > 0.0 {
            let e = if from_right {
                right_error[i]
            } else {
                left_error[i]
            };
            let g = difference_code(e, gain);
            out.extend_from_slice(&[g, g, g, 255]);
        } else {
            let p = if from_right { r } else { l };
            out.extend_from_slice(&[p[0], p[1], p[2], 255]);
        }
    }
    out
}

/// What the split pass reads.
#[derive(Clone, Copy, Debug)]
pub struct SplitInputs<'a> {
    /// The left frame (`Rgba8Unorm`, sRGB-encoded bytes).
    pub left: &'a Target,
    /// The right frame, likewise, of the same size.
    pub right: &'a Target,
    /// The left frame's per-pixel error against the reference (`R32Float`).
    pub left_error: &'a Target,
    /// The right frame's, likewise.
    pub right_error: &'a Target,
}

/// The split pass for one output format.
#[derive(Debug)]
pub struct SplitPass {
    format: wgpu::TextureFormat,
    pass: FullscreenPass,
    uniform: wgpu::Buffer,
}

impl SplitPass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "split";

    /// Build the pipeline writing views of `format` (the output texture's own format:
    /// UNORM bytes pass through, an sRGB format gets linear values).
    pub fn new(ctx: &GpuContext, format: wgpu::TextureFormat) -> Result<Self, ShaderError> {
        let mut defines = Defines::new();
        if format.is_srgb() {
            defines.set("LINEAR_TARGET", 1);
        }
        let pass = FullscreenPass::new(ctx, Self::LABEL, "split.wgsl", &defines, format)?;
        let uniform = crate::gpu::layout::uniform_buffer::<SplitUniform>(&ctx.device, Self::LABEL);
        Ok(Self {
            format,
            pass,
            uniform,
        })
    }

    /// The format of the views it writes.
    pub fn format(&self) -> wgpu::TextureFormat {
        self.format
    }

    /// Record the composition of `inputs` into `output` (a view in [`Self::format`]).
    /// The uniform goes through the queue, so one submission holds at most one split.
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        inputs: &SplitInputs<'_>,
        composition: &Composition,
        output: &wgpu::TextureView,
    ) {
        frame
            .queue()
            .write_buffer(&self.uniform, 0, bytemuck::bytes_of(&composition.uniform()));
        let view = wgpu::BindingResource::TextureView;
        self.pass.record(
            frame,
            &[
                (0, self.uniform.as_entire_binding()),
                (1, view(&inputs.left.view)),
                (2, view(&inputs.right.view)),
                (3, view(&inputs.left_error.view)),
                (4, view(&inputs.right_error.view)),
            ],
            output,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_takes_each_side_and_amplifies_errors() {
        // Two pixels a row, two rows; the divider at column 1.
        let left = [10u8, 20, 30, 0, 11, 21, 31, 0, 12, 22, 32, 0, 13, 23, 33, 0];
        let right = [90u8, 80, 70, 0, 91, 81, 71, 0, 92, 82, 72, 0, 93, 83, 73, 0];
        let errors_l = [0.0f32, 1.0, 0.0, 1.0];
        let errors_r = [0.0f32, 0.0004, 0.25, 0.01];
        let split = Composition {
            divider: 1,
            difference: None,
        };
        let out = reference_compose(&left, &right, &errors_l, &errors_r, 2, &split);
        assert_eq!(
            out,
            [
                10, 20, 30, 255, 91, 81, 71, 255, 12, 22, 32, 255, 93, 83, 73, 255
            ]
        );
        // Difference ×10: sqrt(0.0004) · 10 = 0.2 → 51; sqrt(0.01) · 10 = 1 → 255; the
        // left column's errors 0 → 0.
        let diff = Composition {
            difference: Some(10.0),
            ..split
        };
        let out = reference_compose(&left, &right, &errors_l, &errors_r, 2, &diff);
        let grey: Vec<u8> = out.chunks_exact(4).map(|p| p[0]).collect();
        assert_eq!(grey, [0, 51, 0, 255]);
        // A gain of 0, a negative or a non-finite one shows the frames.
        for gain in [0.0, -2.0, f32::NAN] {
            let c = Composition {
                difference: Some(gain),
                ..split
            };
            assert_eq!(c.uniform().gain, 0.0);
        }
    }
}
