//! The overlay's comparison and inspection: the split view's controls (on/off, the
//! right side's source and kernel, the divider, the difference view and its gain), the
//! inspected pixel's figures, the heatmap's scale and the video memory per material
//! source.

use egui::{Color32, RichText, vec2};

use super::keys::{Action, hint};
use super::{
    ACCENT, DIM, OverlayInfo, ViewSettings, format_bytes, kv, mode_name, section, two_column_grid,
};
use crate::render::RenderMode;
use crate::render::inspect::{MaterialTexel, PixelInspection};
use crate::render::memory::SourceMemory;
use crate::render::passes::heatmap::colormap;
use crate::render::split::SplitSettings;
use crate::scene::Scene;

/// Range of the difference view's gain.
pub const GAIN_RANGE: std::ops::RangeInclusive<f32> = 1.0..=64.0;

/// The split comparison as the overlay edits it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompareSettings {
    /// The split view is on.
    pub enabled: bool,
    /// The right side and the divider (the left side is the chosen material source).
    pub split: SplitSettings,
    /// The difference view is on.
    pub difference: bool,
    /// Its gain.
    pub gain: f32,
}

impl CompareSettings {
    /// The split view on, with `right` on the right side, or off for `None`.
    pub fn showing(right: Option<RenderMode>) -> Self {
        let mut c = Self {
            enabled: right.is_some(),
            ..Self::default()
        };
        c.split.right.mode = right.unwrap_or_default();
        c
    }
}

impl Default for CompareSettings {
    /// Off; the reference on the right at 50 %; difference ×8 when turned on.
    fn default() -> Self {
        Self {
            enabled: false,
            split: SplitSettings::default(),
            difference: false,
            gain: 8.0,
        }
    }
}

impl CompareSettings {
    /// The split of the next frame (`None`: off).
    pub fn split(&self) -> Option<SplitSettings> {
        self.enabled.then_some(SplitSettings {
            difference: self.difference.then_some(self.gain),
            ..self.split
        })
    }

    /// The next material source for the right side after the current one: the
    /// reference, then the NTC modes of `modes` in order.
    pub fn next_right(&mut self, modes: &[RenderMode]) {
        let sources: Vec<RenderMode> = std::iter::once(RenderMode::Reference)
            .chain(modes.iter().copied().filter(|m| m.is_ntc()))
            .collect();
        let i = sources.iter().position(|m| *m == self.split.right.mode);
        self.split.right.mode = sources[i.map_or(0, |i| (i + 1) % sources.len())];
    }
}

/// The Compare section of the controls panel.
pub(super) fn compare_section(
    ui: &mut egui::Ui,
    info: &OverlayInfo<'_>,
    settings: &mut ViewSettings,
) {
    let ntc = info.ntc;
    let c = &mut settings.compare;
    section(ui, "Compare", true, |ui| {
        ui.checkbox(
            &mut c.enabled,
            hint(
                "split view: left the material source above",
                Action::ToggleSplit,
            ),
        );
        egui::Grid::new("compare").num_columns(2).show(ui, |ui| {
            ui.label(RichText::new(hint("right side", Action::NextRightMode)).color(DIM));
            egui::ComboBox::from_id_salt("split_right")
                .selected_text(mode_name(c.split.right.mode))
                .show_ui(ui, |ui| {
                    ui.selectable_value(
                        &mut c.split.right.mode,
                        RenderMode::Reference,
                        mode_name(RenderMode::Reference),
                    );
                    for (mode, _, _) in &ntc.modes {
                        ui.selectable_value(&mut c.split.right.mode, *mode, mode_name(*mode));
                    }
                });
            ui.end_row();
            ui.label(RichText::new("right kernel").color(DIM));
            let right = &mut c.split.right;
            egui::ComboBox::from_id_salt("split_kernel")
                .selected_text(
                    right
                        .kernel
                        .map_or("as left".to_string(), |k| k.to_string()),
                )
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut right.kernel, None, "as left");
                    for k in &ntc.kernels {
                        ui.selectable_value(&mut right.kernel, Some(*k), k.to_string());
                    }
                });
            ui.end_row();
            ui.label(RichText::new("divider").color(DIM));
            ui.add(
                egui::Slider::new(&mut c.split.divider, 0.0..=1.0)
                    .fixed_decimals(2)
                    .custom_formatter(|v, _| format!("{:.0} %", v * 100.0)),
            );
            ui.end_row();
        });
        ui.horizontal(|ui| {
            ui.checkbox(
                &mut c.difference,
                hint("difference ×", Action::ToggleDifference),
            );
            ui.add(
                egui::Slider::new(&mut c.gain, GAIN_RANGE)
                    .logarithmic(true)
                    .fixed_decimals(0),
            );
        });
        ui.checkbox(
            &mut settings.inspect,
            hint("inspect the pixel under the cursor", Action::ToggleInspect),
        );
    });
}

/// A pixel under the cursor with the names the overlay shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Inspection {
    /// What the frame's targets held.
    pub pixel: PixelInspection,
    /// The mode whose decoders are named.
    pub mode: RenderMode,
    /// The material's name.
    pub material_name: Option<String>,
}

impl Inspection {
    /// `pixel` of a frame of `scene` in `mode`.
    pub fn new(pixel: PixelInspection, mode: RenderMode, scene: &Scene) -> Self {
        let material_name = pixel
            .material
            .and_then(|m| scene.materials.get(m as usize))
            .map(|m| m.name.clone());
        Self {
            pixel,
            mode,
            material_name,
        }
    }
}

/// Four channels as the inspector prints them.
fn channels(v: [f32; 4]) -> String {
    format!("{:.3} {:.3} {:.3} {:.3}", v[0], v[1], v[2], v[3])
}

/// The inspected pixel in the figures panel.
pub(super) fn inspection_figures(ui: &mut egui::Ui, inspection: &Inspection) {
    let p = &inspection.pixel;
    section(ui, "Inspector", true, |ui| {
        egui::Grid::new("inspect").num_columns(2).show(ui, |ui| {
            kv(ui, "pixel", format!("{} {}", p.pixel.0, p.pixel.1));
            let Some(m) = p.material else {
                kv(ui, "material", "none (background)");
                return;
            };
            let name = inspection.material_name.as_deref().unwrap_or("?");
            kv(ui, "material", format!("#{m} {name}"));
            kv(
                ui,
                "texture set",
                p.texture_set
                    .map_or("none (constants)".to_owned(), |s| format!("#{s}")),
            );
            let what = if inspection.mode == RenderMode::Reference {
                "baseline decoder"
            } else {
                "decoder (group)"
            };
            kv(
                ui,
                what,
                p.decoder.map_or("none".to_owned(), |d| format!("#{d}")),
            );
            let ((x, y), (w, h)) = p.tile;
            let list: Vec<String> = p.tile_decoders.iter().map(|d| format!("#{d}")).collect();
            kv(
                ui,
                &format!("tile {x},{y} {w}×{h}"),
                format!("D = {}: {}", list.len(), list.join(" ")),
            );
            if let Some(e) = p.error {
                kv(ui, "error (sq.)", format!("{e:.6}"));
            }
        });
        if p.material.is_some() {
            texel_table(ui, &p.decoded, p.reference.as_ref());
        }
    });
}

/// The material targets at the pixel beside the reference's.
fn texel_table(ui: &mut egui::Ui, decoded: &MaterialTexel, reference: Option<&MaterialTexel>) {
    let names = ["base colour, α", "normal, r, m", "emissive, ao"];
    let rows = names.into_iter().enumerate().map(|(i, name)| {
        let r = reference.map_or("–".to_owned(), |r| channels(r.targets()[i]));
        let shown = channels(decoded.targets()[i]);
        (
            name,
            [shown, r].map(|c| RichText::new(c).monospace().small()),
        )
    });
    two_column_grid(ui, "texels", ["shown", "reference"], rows);
}

/// Video memory per material source in the figures panel: the originals, the package
/// (per-pixel decode), what inference on load holds as RGBA8 and transcoded to BC1 or BC7
/// (the BC1/BC5 and BC7/BC5 bundles of the same sets beside them), and what is baked now.
pub(super) fn memory_figures(ui: &mut egui::Ui, memory: &[SourceMemory]) {
    if memory.is_empty() {
        return;
    }
    section(ui, "Video memory", false, |ui| {
        egui::Grid::new("memory")
            .num_columns(7)
            .striped(true)
            .show(ui, |ui| {
                for h in [
                    "source",
                    "textures",
                    "package",
                    "RGBA8 on load",
                    "BC1 on load (BC1/BC5)",
                    "BC7 on load (BC7/BC5)",
                    "baked now",
                ] {
                    ui.label(RichText::new(h).color(DIM));
                }
                ui.end_row();
                let opt = |b: Option<u64>| b.map_or("–".to_owned(), format_bytes);
                let pair = |b: Option<(u64, u64)>| {
                    b.map_or("–".to_owned(), |(ours, bundle)| {
                        format!("{} ({})", format_bytes(ours), format_bytes(bundle))
                    })
                };
                for m in memory {
                    let on_load = m.on_load;
                    ui.label(m.mode.name());
                    ui.label(RichText::new(format_bytes(m.textures)).monospace());
                    ui.label(RichText::new(opt(m.package)).monospace());
                    ui.label(RichText::new(opt(on_load.map(|o| o.rgba8))).monospace());
                    ui.label(
                        RichText::new(pair(on_load.map(|o| (o.bc1, o.bundle_bc1_bc5)))).monospace(),
                    );
                    ui.label(
                        RichText::new(pair(on_load.map(|o| (o.bc7, o.bundle_bc7_bc5)))).monospace(),
                    );
                    let baked = m.baked.map_or("–".to_owned(), |(t, bytes)| {
                        format!(
                            "{} {}",
                            t.map_or("RGBA8", |t| t.name()),
                            format_bytes(bytes)
                        )
                    });
                    ui.label(RichText::new(baked).monospace());
                    ui.end_row();
                }
            });
    });
}

/// The heatmap's colour scale from `lo` to `hi` (the renderer's colour map), labelled.
pub(super) fn heatmap_legend(ui: &mut egui::Ui, name: &str, lo: f32, hi: f32) {
    let (rect, _) = ui.allocate_exact_size(
        vec2(ui.available_width().min(300.0), 12.0),
        egui::Sense::hover(),
    );
    let painter = ui.painter_at(rect);
    let steps = 48;
    for i in 0..steps {
        let t = i as f32 / (steps - 1) as f32;
        let [r, g, b] = colormap(t).map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8);
        let x0 = rect.left() + rect.width() * i as f32 / steps as f32;
        let x1 = rect.left() + rect.width() * (i + 1) as f32 / steps as f32;
        painter.rect_filled(
            egui::Rect::from_x_y_ranges(x0..=x1, rect.y_range()),
            0.0,
            Color32::from_rgb(r, g, b),
        );
    }
    let fmt = |v: f32| {
        if hi - lo < 1.0 {
            format!("{v:.3}")
        } else {
            format!("{v:.0}")
        }
    };
    ui.horizontal(|ui| {
        ui.label(RichText::new(fmt(lo)).monospace().small());
        ui.label(RichText::new(name).small().color(ACCENT));
        ui.label(RichText::new(fmt(hi)).monospace().small());
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Strategy;
    use crate::render::split::SideSource;

    #[test]
    fn split_follows_the_toggles_and_the_right_mode_cycles() {
        let mut c = CompareSettings::default();
        assert_eq!(c.split(), None);
        c.enabled = true;
        assert_eq!(c.split().unwrap().difference, None);
        c.difference = true;
        assert_eq!(c.split().unwrap().difference, Some(8.0));
        // The reference always comes first, whether listed or not.
        c.next_right(&[RenderMode::Ntc(Strategy::Baseline)]);
        assert_eq!(c.split.right.mode, RenderMode::Ntc(Strategy::Baseline));
        c.next_right(&[RenderMode::Ntc(Strategy::Baseline)]);
        assert_eq!(c.split.right.mode, RenderMode::Reference);
        c.split.right = SideSource {
            mode: RenderMode::Ntc(Strategy::Single),
            kernel: None,
        };
        c.next_right(&[RenderMode::Reference, RenderMode::Ntc(Strategy::Baseline)]);
        assert_eq!(
            c.split.right.mode,
            RenderMode::Reference,
            "an absent mode starts over"
        );
    }
}
