//! The split comparison: two material sources of one view side by side in one frame,
//! from one G-buffer, each measured against the reference.
//!
//! ```text
//! Renderer::record (the left source: the frame's mode and the renderer's kernel)
//!   ─► left frame (Rgba8Unorm, compute tonemap) ; gbuffer, reference comparison hdr
//! gbuffer ─► the right source's material pass (reference, baked or its own decode pass
//!            with its own kernel) ─► right materials ─► lighting ─► hdr ─► temporal
//!            (its own history) ─► accumulated ─► tonemap ─► right frame
//! left accumulated, right accumulated vs comparison hdr ─► image error ×2 ─► errors
//! left frame + right frame (+ errors) ─► SplitPass ─► output
//! ```
//!
//! [`SplitView`] holds what the right side needs besides the renderer (targets, its own
//! lighting, temporal, tonemap, image-error and decode passes) and both sides' frames and
//! errors; the caller keeps it between frames (its temporal history lives there). The
//! right side's passes are timed under labels prefixed with [`RIGHT_PREFIX`], so the
//! overlay tells the two decode times apart ([`side_decode_ms`]). The heatmap is not drawn
//! in a split frame.

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::{GpuContext, GpuError, GpuProfiler};
use crate::ntc::NtcConfig;

use super::passes::image_error::{ErrorSpace, ErrorTargets, ImageErrorInputs, ImageErrorPass};
use super::passes::lighting::{LightingInputs, LightingPass};
use super::passes::ntc_decode::{NtcDecodePass, NtcKernel};
use super::passes::scene_draw::SceneInputs;
use super::passes::split::{Composition, SplitInputs, SplitPass};
use super::passes::temporal::{TemporalInputs, TemporalPass};
use super::passes::tonemap::{self, TonemapInputs, TonemapPass};
use super::plan::Unusable;
use super::targets::{MaterialTargets, Target, format};
use super::{
    DecodePath, Fallback, FramePlan, FrameSettings, KernelChoice, MaterialInputs, MaterialPath,
    RenderError, RenderMode, Renderer, decode_pass, headless, material_bind_groups,
    record_materials, record_reference_comparison,
};
use std::sync::Arc;

/// Prefix of the timing labels of the right side's passes.
pub const RIGHT_PREFIX: &str = "split.";

/// One side's material source: a render mode, and for an NTC mode the kernel it decodes
/// with (`None`: the renderer's kernel choice).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SideSource {
    /// Where the side's material channels come from.
    pub mode: RenderMode,
    /// The decode kernel of an NTC mode (`None`: the renderer's).
    pub kernel: Option<NtcKernel>,
}

/// What a split frame shows beside the frame's own settings (whose mode is the left
/// side's source).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SplitSettings {
    /// The right side's source.
    pub right: SideSource,
    /// The divider's place as a fraction of the width from the left, in [0, 1].
    pub divider: f32,
    /// Difference view: each side's error against the reference amplified by this gain
    /// (`None`: the images).
    pub difference: Option<f32>,
}

impl Default for SplitSettings {
    /// The reference on the right, the divider in the middle, no difference view.
    fn default() -> Self {
        Self {
            right: SideSource::default(),
            divider: 0.5,
            difference: None,
        }
    }
}

impl SplitSettings {
    /// The first pixel column of the right side on a `width`-pixel frame.
    pub fn divider_column(&self, width: u32) -> u32 {
        let f = if self.divider.is_finite() {
            self.divider.clamp(0.0, 1.0)
        } else {
            0.5
        };
        ((f * width as f32).round() as u32).min(width)
    }
}

/// What the right side of a split frame did (the left side's is the frame's
/// [`FramePlan`]).
#[derive(Clone, Debug)]
pub struct SidePlan {
    /// The material path taken: the side's mode, or the reference.
    pub material: MaterialPath,
    /// Why `material` is not the asked-for mode's path.
    pub fallback: Option<Fallback>,
    /// The kernel it decoded with (per-pixel decoding only).
    pub kernel: Option<NtcKernel>,
}

/// What a split frame did.
#[derive(Clone, Debug)]
pub struct SplitPlan {
    /// The left side (the frame's plan).
    pub left: FramePlan,
    /// The right side.
    pub right: SidePlan,
}

/// The decode times in `timings` (label, ms) of a split frame, left and right (ms; 0 for
/// a side that did not decode): the decode pass's stages unprefixed, and under
/// [`RIGHT_PREFIX`].
pub fn side_decode_ms<'a>(timings: impl IntoIterator<Item = (&'a str, f64)>) -> [f64; 2] {
    let mut ms = [0.0; 2];
    for (label, t) in timings {
        let (side, label) = match label.strip_prefix(RIGHT_PREFIX) {
            Some(label) => (1, label),
            None => (0, label),
        };
        if NtcDecodePass::is_stage_label(label) {
            ms[side] += t;
        }
    }
    ms
}

/// The right side's decode pass: built for one decoder shape and kernel choice.
#[derive(Debug)]
struct RightDecode {
    choice: KernelChoice,
    path: DecodePath,
}

/// The targets and passes of a split comparison. See the module docs.
#[derive(Debug)]
pub struct SplitView {
    size: (u32, u32),
    /// The left and right frames (`Rgba8Unorm`, sRGB-encoded bytes).
    frames: [Target; 2],
    /// Each side's error against the reference.
    errors: [ErrorTargets; 2],
    materials: MaterialTargets,
    hdr: Target,
    accumulated: Target,
    lighting: LightingPass,
    temporal: TemporalPass,
    tonemap: TonemapPass,
    image_error: [ImageErrorPass; 2],
    compose: SplitPass,
    decode: Option<RightDecode>,
    /// The material path the right history holds frames of (`None`: none).
    history: Option<MaterialPath>,
}

impl SplitView {
    /// Build for frames of `size` composed into outputs whose texture format is
    /// `output_format` (the texture's own format, see [`SplitPass`]).
    pub fn new(
        ctx: &GpuContext,
        size: (u32, u32),
        output_format: wgpu::TextureFormat,
    ) -> Result<Self, RenderError> {
        let size = (size.0.max(1), size.1.max(1));
        let device = &ctx.device;
        Ok(Self {
            size,
            frames: Self::frame_targets(device, size),
            errors: [
                ErrorTargets::new(device, size),
                ErrorTargets::new(device, size),
            ],
            materials: MaterialTargets::new(device, size),
            hdr: storage_target(device, "split.hdr", size, format::HDR),
            accumulated: storage_target(device, "split.accumulated", size, format::ACCUMULATED),
            lighting: LightingPass::new(ctx)?,
            temporal: TemporalPass::new(ctx, size)?,
            tonemap: TonemapPass::new(ctx, headless::OUTPUT_FORMAT)?,
            image_error: [ImageErrorPass::new(ctx)?, ImageErrorPass::new(ctx)?],
            compose: SplitPass::new(ctx, output_format)?,
            decode: None,
            history: None,
        })
    }

    fn frame_targets(device: &wgpu::Device, size: (u32, u32)) -> [Target; 2] {
        ["split.left", "split.right"]
            .map(|label| storage_target(device, label, size, tonemap::STORAGE_FORMAT))
    }

    /// Reallocate for `size` (the right history restarts).
    fn resize(&mut self, device: &wgpu::Device, size: (u32, u32)) {
        if size == self.size {
            return;
        }
        self.size = size;
        self.frames = Self::frame_targets(device, size);
        self.errors = [
            ErrorTargets::new(device, size),
            ErrorTargets::new(device, size),
        ];
        self.materials = MaterialTargets::new(device, size);
        self.hdr = storage_target(device, "split.hdr", size, format::HDR);
        self.accumulated = storage_target(device, "split.accumulated", size, format::ACCUMULATED);
        self.temporal.resize(device, size);
        self.history = None;
    }

    /// The left and right frames of the last split frame (`Rgba8Unorm`, sRGB-encoded).
    pub fn frames(&self) -> &[Target; 2] {
        &self.frames
    }

    /// The left and right sides' errors against the reference in the last split frame.
    pub fn errors(&self) -> &[ErrorTargets; 2] {
        &self.errors
    }

    /// The right side's material targets in the last split frame.
    pub fn right_materials(&self) -> &MaterialTargets {
        &self.materials
    }

    /// Blocking: each side's PSNR against the reference in the last submitted split
    /// frame (`None`: identical, or no pixel with geometry).
    pub fn psnr_blocking(&self, ctx: &GpuContext) -> Result<[Option<f64>; 2], GpuError> {
        Ok([
            self.errors[0].psnr_blocking(ctx)?,
            self.errors[1].psnr_blocking(ctx)?,
        ])
    }

    /// The right side's decode pass for decoders of `config` under `choice`: the one
    /// built, or a new one (a failure to build is kept and logged once).
    fn decode_path(
        &mut self,
        ctx: &GpuContext,
        config: &NtcConfig,
        choice: KernelChoice,
    ) -> &DecodePath {
        let current = self.decode.as_ref().is_some_and(|d| {
            d.choice == choice && super::same_decoder_shape(&d.path.config, config)
        });
        if !current {
            let pass = decode_pass(ctx, config, &choice).map_err(|e| {
                let failure = Arc::new(Unusable::DecodePass(e));
                log::error!("split view: {failure}");
                failure
            });
            self.decode = Some(RightDecode {
                choice,
                path: DecodePath {
                    config: config.clone(),
                    pass,
                    record_failure: None,
                },
            });
        }
        &self.decode.as_ref().expect("set above").path
    }
}

/// A storage-capable screen target.
fn storage_target(
    device: &wgpu::Device,
    label: &str,
    size: (u32, u32),
    format: wgpu::TextureFormat,
) -> Target {
    Target::new(
        device,
        label,
        size,
        format,
        wgpu::TextureUsages::STORAGE_BINDING,
    )
}

impl Renderer {
    /// Record a split frame into `output`: the left side is the frame of `settings`
    /// (its mode, the renderer's kernel; no heatmap), the right side `split.right` from
    /// the same G-buffer, composed at `split.divider` (or as the difference view); each
    /// side is compared with the reference. `output`'s texture must have the format
    /// `view` was built for.
    #[expect(
        clippy::too_many_arguments,
        reason = "Renderer::record's arguments plus the split settings and the view it keeps"
    )]
    pub fn record_split(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        output: &wgpu::TextureView,
        settings: &FrameSettings,
        split: &SplitSettings,
        view: &mut SplitView,
        profiler: &GpuProfiler,
    ) -> Result<SplitPlan, RenderError> {
        let texture = output.texture();
        if texture.format() != view.compose.format() {
            return Err(RenderError::SplitFormat {
                output: texture.format(),
                built: view.compose.format(),
            });
        }
        view.resize(&ctx.device, self.size());
        let mut left_settings = settings.clone();
        left_settings.passes.heatmap = None;
        left_settings.passes.compare = false;
        let left_frame = view.frames[0].view.clone();
        let left = self.record(ctx, encoder, &left_frame, &left_settings, profiler);

        // The right side's material path and what it needs built.
        let right_mode = split.right.mode;
        let choice = KernelChoice {
            kernel: split.right.kernel.or(self.kernel_choice.kernel),
            tile: self.kernel_choice.tile,
        };
        let config = self
            .packages
            .get(&right_mode)
            .map(|l| l.gpu.config().clone());
        let mut rebaked = false;
        match config {
            Some(_) if settings.passes.inference_on_load => {
                rebaked = self.provide_baked(ctx, right_mode, &settings.passes);
            }
            Some(config) => {
                view.decode_path(ctx, &config, choice);
            }
            None => {}
        }
        let decode = view.decode.as_ref().map(|d| &d.path);
        let (material, fallback) = self.material_path(right_mode, &settings.passes, decode);
        let restart = left.restart_history || rebaked || view.history != Some(material);
        let kernel = match (material, decode) {
            (MaterialPath::Decode(_), Some(DecodePath { pass: Ok(pass), .. })) => {
                Some(pass.kernel())
            }
            _ => None,
        };

        let t = &self.targets;
        let scene = SceneInputs {
            frame: &self.frame_buffer,
            scene: &self.scene,
            materials: material_bind_groups(&self.packages, &self.scene, material),
        };
        let mut frame = FrameEncoder::new(ctx, encoder, profiler);
        // The reference the two sides are measured against.
        record_reference_comparison(&self.passes, t, &scene, &mut frame);
        let mut right = frame.with_prefix(RIGHT_PREFIX);
        let package = self.packages.get(&right_mode);
        let inputs = MaterialInputs {
            scene,
            gbuffer: &t.gbuffer,
            blue_noise: &self.blue_noise.view,
            settings: &settings.passes.decode,
        };
        let path = view.decode.as_mut().map(|d| &mut d.path);
        // A failure to record is logged by the path; the right side shows the reference.
        let _ = record_materials(
            &self.passes.reference,
            &mut right,
            &inputs,
            material,
            package,
            path,
            &view.materials,
        );
        view.lighting.record(
            &mut right,
            &LightingInputs {
                frame: &self.frame_buffer,
                depth: &t.gbuffer.depth,
                materials: &view.materials,
                shadow_map: self.passes.shadow.map(),
            },
            &view.hdr,
        );
        let mut temporal = settings.passes.temporal;
        temporal.reset |= restart;
        let accumulated = TemporalInputs {
            hdr: &view.hdr,
            motion: &t.gbuffer.motion,
            depth: &t.gbuffer.depth,
            settings: &temporal,
        };
        if let Err(e) = view
            .temporal
            .record(&mut right, &accumulated, &view.accumulated)
        {
            log::error!("split view: {e}");
        }
        view.tonemap.record(
            &mut right,
            &TonemapInputs {
                frame: &self.frame_buffer,
                hdr: &view.accumulated,
                materials: &view.materials,
                material_ids: &t.gbuffer.material,
            },
            &view.frames[1].view,
        );

        // Each side against the reference.
        for (i, side) in [&t.accumulated, &view.accumulated].into_iter().enumerate() {
            let compared = ImageErrorInputs {
                a: side,
                b: &t.comparison.hdr,
                material_ids: &t.gbuffer.material,
                space: ErrorSpace::SrgbEncoded,
            };
            if let Err(e) = view.image_error[i].record(&mut frame, &compared, &view.errors[i]) {
                log::error!("split view: {e}");
            }
        }

        // Both frames ─► output.
        let target = texture.create_view(&wgpu::TextureViewDescriptor {
            label: Some("split.output"),
            format: Some(texture.format()),
            ..Default::default()
        });
        let (w, _) = self.size();
        view.compose.record(
            &mut frame,
            &SplitInputs {
                left: &view.frames[0],
                right: &view.frames[1],
                left_error: &view.errors[0].error,
                right_error: &view.errors[1].error,
            },
            &Composition {
                divider: split.divider_column(w),
                difference: split.difference,
            },
            &target,
        );
        view.history = Some(material);
        Ok(SplitPlan {
            left,
            right: SidePlan {
                material,
                fallback,
                kernel,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_times_are_told_apart_by_prefix() {
        let timings = [
            ("gbuffer", 1.0),
            ("ntc.sort.count", 0.25),
            ("ntc.decode", 2.0),
            ("split.ntc.decode", 3.0),
            ("split.lighting", 0.5),
            ("lighting", 0.5),
        ];
        assert_eq!(side_decode_ms(timings), [2.25, 3.0]);
        assert_eq!(side_decode_ms([]), [0.0, 0.0]);
    }

    #[test]
    fn the_divider_column_is_clamped_and_rounded() {
        let at = |divider| {
            SplitSettings {
                divider,
                ..Default::default()
            }
            .divider_column(101)
        };
        assert_eq!(at(0.5), 51);
        assert_eq!(at(-1.0), 0);
        assert_eq!(at(2.0), 101);
        assert_eq!(at(f32::NAN), 51);
    }
}
