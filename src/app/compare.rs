//! Comparing and inspecting: the split frame (two material sources side by side, see
//! `render::split`), its figures for the overlay (each side's source, decode time and
//! PSNR against the reference), the inspected pixel under the cursor (read back from the
//! frame's targets, `render::inspect`) and the video memory per material source.

use super::{LoadedScene, Viewer};
use crate::gpu::{GpuContext, GpuProfiler};
use crate::render::inspect::InspectSource;
use crate::render::split::{SidePlan, SplitSettings, SplitView, side_decode_ms};
use crate::render::{FramePlan, FrameSettings, MaterialPath, RenderMode};
use crate::ui::{Inspection, mode_name};

/// What one frame recorded.
pub(super) struct FrameOutcome {
    /// The frame's plan (the left side's in a split frame).
    pub(super) plan: FramePlan,
    /// The right side's, in a split frame.
    pub(super) right: Option<SidePlan>,
}

/// Record one frame of `scene` into `target` (a view of a texture of `texture_format`):
/// the split comparison when `split` is given (its view built on first use; a view that
/// cannot be built is logged and the ordinary frame drawn), else the ordinary frame.
#[expect(
    clippy::too_many_arguments,
    reason = "the frame's encoder, target and profiler beside the scene and its two settings"
)]
pub(super) fn record_scene(
    scene: &mut LoadedScene,
    ctx: &GpuContext,
    encoder: &mut wgpu::CommandEncoder,
    target: &wgpu::TextureView,
    settings: &FrameSettings,
    split: Option<&SplitSettings>,
    texture_format: wgpu::TextureFormat,
    profiler: &GpuProfiler,
) -> FrameOutcome {
    let renderer = &mut scene.renderer;
    if let Some(split) = split {
        if scene.split.is_none() {
            scene.split = SplitView::new(ctx, renderer.size(), texture_format)
                .inspect_err(|e| log::error!("split view unavailable: {e}"))
                .ok();
        }
        if let Some(view) = &mut scene.split {
            match renderer.record_split(ctx, encoder, target, settings, split, view, profiler) {
                Ok(plan) => {
                    return FrameOutcome {
                        plan: plan.left,
                        right: Some(plan.right),
                    };
                }
                Err(e) => {
                    log::error!("{e}");
                    scene.split = None;
                }
            }
        }
    }
    FrameOutcome {
        plan: renderer.record(ctx, encoder, target, settings, profiler),
        right: None,
    }
}

/// The source of a side as the overlay names it.
fn source_name(material: MaterialPath, kernel: Option<String>) -> String {
    let mode = material.mode();
    match (material, kernel) {
        (MaterialPath::Baked(_), _) => format!("{mode} (baked)"),
        (MaterialPath::Decode(_), Some(k)) => format!("{mode} ({k})"),
        _ => mode.to_string(),
    }
}

/// A PSNR as the overlay shows it.
fn psnr_text(psnr: Option<f64>) -> String {
    psnr.map_or_else(|| "exact".to_owned(), |p| format!("{p:.2} dB"))
}

impl Viewer {
    /// The split of the next frame, when the comparison is on.
    pub(super) fn split_settings(&self) -> Option<SplitSettings> {
        self.settings.compare.split()
    }

    /// After a frame was submitted: the split figures (and, when asked for, both sides'
    /// PSNR), the inspected pixel and the video memory.
    pub(super) fn after_frame(&mut self, outcome: &FrameOutcome) {
        let Some(scene) = &self.scene else {
            self.ntc.split = None;
            self.ntc.inspection = None;
            return;
        };
        self.ntc.memory = scene.renderer.source_memory();
        match (&outcome.right, &scene.split) {
            (Some(right), Some(view)) => {
                let rows = self.clock.perf.rows();
                let ms = side_decode_ms(rows.iter().map(|r| (r.label.as_str(), r.median_ms)));
                let kernel = scene.renderer.kernel().map(|k| k.to_string());
                let left = &outcome.plan;
                let mut facts = self.ntc.split.take().unwrap_or_default();
                let fallback = |requested: RenderMode, got: RenderMode| {
                    (requested != got)
                        .then(|| format!("{} shown until {} is ready", got, mode_name(requested)))
                };
                facts.sides[0].source = source_name(left.material, kernel);
                facts.sides[0].fallback = fallback(left.requested, left.mode());
                facts.sides[1].source =
                    source_name(right.material, right.kernel.map(|k| k.to_string()));
                facts.sides[1].fallback = right.fallback.as_ref().map(|_| {
                    let requested = self.settings.compare.split.right.mode;
                    format!("reference shown until {requested} is ready")
                });
                for (side, ms) in facts.sides.iter_mut().zip(ms) {
                    side.decode_ms = (ms > 0.0).then_some(ms);
                }
                if std::mem::take(&mut self.psnr_request) {
                    match view.psnr_blocking(&self.ctx) {
                        Ok(psnr) => {
                            for (side, p) in facts.sides.iter_mut().zip(psnr) {
                                side.psnr = Some(psnr_text(p));
                            }
                        }
                        Err(e) => self.status.set(format!("PSNR failed: {e}")),
                    }
                }
                self.ntc.split = Some(facts);
            }
            _ => self.ntc.split = None,
        }
        self.inspect(outcome);
    }

    /// The pixel under the cursor, read back from the frame's targets while the inspector
    /// is on and the cursor is over the image (not over a panel).
    fn inspect(&mut self, outcome: &FrameOutcome) {
        let (Some(scene), Some((x, y))) = (&self.scene, self.cursor) else {
            self.ntc.inspection = None;
            return;
        };
        if !self.settings.inspect || self.egui_ctx.is_pointer_over_egui() {
            self.ntc.inspection = None;
            return;
        }
        let renderer = &scene.renderer;
        let (sw, sh) = self.surface_size();
        let (rw, rh) = renderer.size();
        let pixel = (
            (x / f64::from(sw.max(1)) * f64::from(rw)) as u32,
            (y / f64::from(sh.max(1)) * f64::from(rh)) as u32,
        );
        // In a split frame the pixel belongs to one side.
        let split = self.split_settings();
        let right_side = split.is_some_and(|s| pixel.0 >= s.divider_column(rw));
        let view = scene.split.as_ref();
        let (mode, materials, error) = match (right_side, view, &outcome.right) {
            (true, Some(v), Some(right)) => (
                right.material.mode(),
                Some(v.right_materials()),
                Some(&v.errors()[1].error),
            ),
            (false, Some(v), Some(_)) => (outcome.plan.mode(), None, Some(&v.errors()[0].error)),
            _ => (
                outcome.plan.mode(),
                None,
                outcome
                    .plan
                    .compare
                    .then(|| &renderer.targets().comparison.error.error),
            ),
        };
        let compared = outcome.right.is_some() || outcome.plan.compare;
        let source = InspectSource {
            mode,
            materials,
            compared,
            error,
        };
        self.ntc.inspection = match renderer.inspect_blocking(&self.ctx, pixel, &source) {
            Ok(Some(pixel)) => Some(Inspection::new(pixel, mode, &scene.opened.scene)),
            Ok(None) => None,
            Err(e) => {
                self.status.set(format!("inspector: {e}"));
                None
            }
        };
    }
}
