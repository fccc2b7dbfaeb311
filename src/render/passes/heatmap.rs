//! Heatmap pass (`shaders/heatmap.wgsl`): a scalar field drawn over the already tonemapped
//! output with alpha blending (`LoadOp::Load`), through the viridis colour map, plus a
//! vertical colour bar in the bottom-right corner.
//!
//! The scalar is one count of the divergence pass's tile texture (decoders, baseline
//! decoders or materials per tile) or the image-error pass's per-pixel error
//! ([`HeatmapInputs`]). Pixels without geometry stay untinted; the colour bar is drawn
//! over everything. The viewer places its text labels beside
//! [`HeatmapPass::color_bar_rect`]: `hi` at the rectangle's top edge, `lo` at its bottom
//! edge, linear in between.
//!
//! The pass owns two pipelines of one shader (the `SOURCE_ERROR` variant reads a float
//! texture, the default one the `u32` tile texture) for one output format; it works for
//! sRGB outputs (the headless `Rgba8UnormSrgb`, sRGB surfaces: it writes linear colour and
//! blends in linear light) and for non-sRGB surfaces (it writes the encoded colour). Its
//! pipelines are [`ScreenPipeline`]s that blend (a [`super::fullscreen::FullscreenPass`]
//! clears its target).

use crate::gpu::Defines;
use crate::gpu::encoder::FrameEncoder;
use crate::gpu::layout;
use crate::gpu::{GpuContext, ShaderError};
use crate::render::passes::fullscreen::{ScreenPipeline, ScreenPipelineDesc};
use crate::render::targets::Target;
use crate::screen::tiles::TileSize;

/// Margin between the colour bar and the output's right and bottom edges, in pixels.
pub const COLOR_BAR_MARGIN: u32 = 16;
/// Width of the colour bar in pixels (its frame included).
pub const COLOR_BAR_WIDTH: u32 = 16;
/// Smallest colour bar height drawn, in pixels; outputs too small for it get no bar.
pub const COLOR_BAR_MIN_HEIGHT: u32 = 16;

/// Which scalar the heatmap shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[derive(clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeatmapSource {
    /// Distinct decoders per tile under the current map (the paper's `D`).
    #[default]
    Decoders,
    /// Distinct decoders per tile under the baseline map.
    BaselineDecoders,
    /// Distinct materials per tile.
    Materials,
    /// The image-error pass's per-pixel error.
    Error,
}

impl HeatmapSource {
    /// The tile texture channel of a tile count; `None` for [`Self::Error`].
    fn tile_channel(self) -> Option<u32> {
        match self {
            Self::Materials => Some(0),
            Self::Decoders => Some(1),
            Self::BaselineDecoders => Some(2),
            Self::Error => None,
        }
    }
}

/// What one heatmap draw shows.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HeatmapSettings {
    /// The scalar shown.
    pub source: HeatmapSource,
    /// Value shown with the first colour of the map. Non-finite values read as 0.
    pub lo: f32,
    /// Value shown with the last colour; values outside `[lo, hi]` are clamped. A `hi`
    /// that is not finite or not above `lo` reads as `lo + 1`.
    pub hi: f32,
    /// Alpha of the tint, clamped to [0, 1] (NaN reads as 0).
    pub opacity: f32,
    /// Draw the colour bar.
    pub color_bar: bool,
}

impl Default for HeatmapSettings {
    /// Decoders per tile from 1 (no divergence) to 8, at 60 % opacity, with the bar.
    fn default() -> Self {
        Self {
            source: HeatmapSource::Decoders,
            lo: 1.0,
            hi: 8.0,
            opacity: 0.6,
            color_bar: true,
        }
    }
}

impl HeatmapSettings {
    /// These settings with the range and opacity made usable: a non-finite `lo` becomes
    /// 0, a `hi` that is not finite or not above `lo` becomes `lo + 1`, the opacity is
    /// clamped to [0, 1] (NaN becomes 0).
    pub fn sanitized(&self) -> Self {
        let lo = if self.lo.is_finite() { self.lo } else { 0.0 };
        let hi = if self.hi.is_finite() && self.hi > lo {
            self.hi
        } else {
            lo + 1.0
        };
        let opacity = if self.opacity.is_nan() {
            0.0
        } else {
            self.opacity.clamp(0.0, 1.0)
        };
        Self {
            lo,
            hi,
            opacity,
            ..*self
        }
    }
}

/// A rectangle in output pixels, top-left origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PixelRect {
    /// Left edge.
    pub x: u32,
    /// Top edge.
    pub y: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

/// The heatmap's uniform, mirroring `Heatmap` in `shaders/heatmap.wgsl` (see there for
/// each field).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[derive(bytemuck::Pod, bytemuck::Zeroable)]
pub struct HeatmapUniform {
    /// Value shown with the first colour.
    pub lo: f32,
    /// 1 / (hi − lo).
    pub inv_range: f32,
    /// Alpha of the tint.
    pub opacity: f32,
    /// 1 for sRGB outputs, else 0.
    pub srgb_output: u32,
    /// Colour bar x, y, width, height in output pixels (width 0 = none).
    pub bar: [u32; 4],
    /// Tile width and height in pixels (1 × 1 for the error source).
    pub tile_size: [u32; 2],
    /// Tile texture channel (tile sources).
    pub channel: u32,
    /// Reserved, zero.
    pub _pad0: u32,
}

/// Viridis at `t` (clamped to [0, 1]) as sRGB-encoded colour: the polynomial fit the
/// shader evaluates, for legends drawn on the host and for tests.
pub fn colormap(t: f32) -> [f32; 3] {
    const C: [[f64; 3]; 7] = [
        [0.2777273272234177, 0.005407344544966578, 0.3340998053353061],
        [0.1050930431085774, 1.404613529898575, 1.384590162594685],
        [-0.3308618287255563, 0.214847559468213, 0.09509516302823659],
        [-4.634230498983486, -5.799100973351585, -19.33244095627987],
        [6.228269936347081, 14.17993336680509, 56.69055260068105],
        [4.776384997670288, -13.74514537774601, -65.35303263337234],
        [-5.435455855934631, 4.645852612178535, 26.3124352495832],
    ];
    let t = f64::from(if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) });
    std::array::from_fn(|c| {
        let value = C.iter().rev().fold(0.0, |acc, coef| acc * t + coef[c]);
        value.clamp(0.0, 1.0) as f32
    })
}

/// What the heatmap reads: both sources (it shows the one its settings name).
#[derive(Clone, Copy, Debug)]
pub struct HeatmapInputs<'a> {
    /// The G-buffer's material words: which pixels have geometry.
    pub material_ids: &'a Target,
    /// The divergence pass's tile counts.
    pub tiles: &'a Target,
    /// Their tile size.
    pub tile: TileSize,
    /// The image-error pass's per-pixel error.
    pub error: &'a Target,
}

/// The pipeline of `heatmap.wgsl` under `defines` (which choose binding 2's texture),
/// blending into an output of `output_format`.
fn variant(
    ctx: &GpuContext,
    label: &'static str,
    defines: &Defines,
    output_format: wgpu::TextureFormat,
) -> Result<ScreenPipeline, ShaderError> {
    let blend = wgpu::BlendState {
        color: wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::SrcAlpha,
            dst_factor: wgpu::BlendFactor::OneMinusSrcAlpha,
            operation: wgpu::BlendOperation::Add,
        },
        // The output's alpha (surface compositing) is kept.
        alpha: wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::Zero,
            dst_factor: wgpu::BlendFactor::One,
            operation: wgpu::BlendOperation::Add,
        },
    };
    let target = wgpu::ColorTargetState {
        format: output_format,
        blend: Some(blend),
        write_mask: wgpu::ColorWrites::ALL,
    };
    let desc = ScreenPipelineDesc {
        label,
        shader: "heatmap.wgsl",
        defines,
        targets: &[Some(target)],
    };
    ScreenPipeline::new(ctx, &desc)
}

/// The heatmap pass for one output format.
#[derive(Debug)]
pub struct HeatmapPass {
    srgb_output: bool,
    uniform: wgpu::Buffer,
    /// Reads the divergence tile texture.
    tiles: ScreenPipeline,
    /// Reads the image-error texture (`SOURCE_ERROR`).
    error: ScreenPipeline,
}

impl HeatmapPass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "heatmap";

    /// Build the pipelines for an output of `output_format` (the surface's format or the
    /// headless `Rgba8UnormSrgb`).
    pub fn new(ctx: &GpuContext, output_format: wgpu::TextureFormat) -> Result<Self, ShaderError> {
        let tiles = variant(ctx, "heatmap.tiles", &Defines::new(), output_format)?;
        let source_error = Defines::new().flag("SOURCE_ERROR");
        let error = variant(ctx, "heatmap.error", &source_error, output_format)?;
        let uniform =
            crate::gpu::layout::uniform_buffer::<HeatmapUniform>(&ctx.device, Self::LABEL);
        Ok(Self {
            srgb_output: output_format.is_srgb(),
            uniform,
            tiles,
            error,
        })
    }

    /// The colour bar's rectangle on an `output_size` output, in output pixels (`None`
    /// when the output is too small for one): [`COLOR_BAR_WIDTH`] wide, 40 % of the
    /// output height tall (at most 320), [`COLOR_BAR_MARGIN`] from the right and bottom
    /// edges. Its 1-pixel frame is black; `hi` is shown at the top, `lo` at the bottom.
    pub fn color_bar_rect(output_size: (u32, u32)) -> Option<PixelRect> {
        let (w, h) = output_size;
        let height = (h.saturating_mul(2) / 5).min(320);
        let fits = w >= COLOR_BAR_WIDTH + 2 * COLOR_BAR_MARGIN
            && height >= COLOR_BAR_MIN_HEIGHT
            && h >= height + 2 * COLOR_BAR_MARGIN;
        fits.then(|| PixelRect {
            x: w - COLOR_BAR_MARGIN - COLOR_BAR_WIDTH,
            y: h - COLOR_BAR_MARGIN - height,
            width: COLOR_BAR_WIDTH,
            height,
        })
    }

    /// The uniform for `settings` on an `output_size` output over `tile` tiles.
    fn uniform(
        &self,
        settings: &HeatmapSettings,
        output_size: (u32, u32),
        tile: TileSize,
    ) -> HeatmapUniform {
        let settings = settings.sanitized();
        let range = settings.hi - settings.lo;
        // `lo + 1` rounds back to `lo` for huge `lo`; keep the scale finite.
        let inv_range = if range > 0.0 { 1.0 / range } else { 0.0 };
        let bar = settings
            .color_bar
            .then(|| Self::color_bar_rect(output_size))
            .flatten()
            .map_or([0; 4], |r| [r.x, r.y, r.width, r.height]);
        let (tile_size, channel) = match settings.source.tile_channel() {
            Some(channel) => {
                let (w, h) = tile.dims();
                ([w, h], channel)
            }
            None => ([1, 1], 0),
        };
        HeatmapUniform {
            lo: settings.lo,
            inv_range,
            opacity: settings.opacity,
            srgb_output: u32::from(self.srgb_output),
            bar,
            tile_size,
            channel,
            _pad0: 0,
        }
    }

    /// Record the overlay of `settings` into `output` (of `output_size` pixels, in the
    /// format given to [`Self::new`]), blending over its contents. The uniform is written
    /// through the queue, so one submission holds at most one heatmap draw.
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        inputs: &HeatmapInputs<'_>,
        settings: &HeatmapSettings,
        output: &wgpu::TextureView,
        output_size: (u32, u32),
    ) {
        let (variant, source) = match settings.source {
            HeatmapSource::Error => (&self.error, inputs.error),
            _ => (&self.tiles, inputs.tiles),
        };
        let bind_group = variant.bind_group(
            frame.device(),
            &[
                (0, self.uniform.as_entire_binding()),
                (
                    1,
                    wgpu::BindingResource::TextureView(&inputs.material_ids.view),
                ),
                (2, wgpu::BindingResource::TextureView(&source.view)),
            ],
        );
        let uniform = self.uniform(settings, output_size, inputs.tile);
        frame
            .queue()
            .write_buffer(&self.uniform, 0, bytemuck::bytes_of(&uniform));
        let colors = [layout::load_color(output)];
        frame.render_pass(Self::LABEL, &colors, None, |pass| {
            variant.set(pass, &bind_group);
            pass.draw(0..3, 0..1);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colormap_endpoints_are_viridis() {
        // matplotlib's viridis: (0.267, 0.005, 0.329) at 0, (0.993, 0.906, 0.144) at 1;
        // the fit is within 0.02 of both.
        let close = |a: [f32; 3], b: [f32; 3]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 0.02);
        assert!(
            close(colormap(0.0), [0.267, 0.005, 0.329]),
            "{:?}",
            colormap(0.0)
        );
        assert!(
            close(colormap(1.0), [0.993, 0.906, 0.144]),
            "{:?}",
            colormap(1.0)
        );
        assert_eq!(colormap(-3.0), colormap(0.0));
        assert_eq!(colormap(f32::NAN), colormap(0.0));
        assert_eq!(colormap(7.0), colormap(1.0));
    }

    #[test]
    fn settings_are_sanitized() {
        let odd = HeatmapSettings {
            lo: f32::NAN,
            hi: -2.0,
            opacity: 3.0,
            ..Default::default()
        };
        let s = odd.sanitized();
        assert_eq!((s.lo, s.hi, s.opacity), (0.0, 1.0, 1.0));
        let s = HeatmapSettings {
            lo: 2.0,
            hi: f32::INFINITY,
            opacity: f32::NAN,
            ..Default::default()
        }
        .sanitized();
        assert_eq!((s.lo, s.hi, s.opacity), (2.0, 3.0, 0.0));
        let fine = HeatmapSettings::default();
        assert_eq!(fine.sanitized(), fine);
    }

    #[test]
    fn color_bar_sits_in_the_bottom_right_corner_or_nowhere() {
        let r = HeatmapPass::color_bar_rect((1920, 1080)).unwrap();
        assert_eq!(
            r,
            PixelRect {
                x: 1888,
                y: 744,
                width: 16,
                height: 320
            }
        );
        let r = HeatmapPass::color_bar_rect((128, 96)).unwrap();
        assert_eq!(
            r,
            PixelRect {
                x: 96,
                y: 42,
                width: 16,
                height: 38
            }
        );
        assert_eq!(HeatmapPass::color_bar_rect((64, 48)), None);
        assert_eq!(HeatmapPass::color_bar_rect((0, 0)), None);
        assert_eq!(HeatmapPass::color_bar_rect((40, 4000)), None);
    }
}
