//! The overlay's layout: docked panels that never cover each other.
//!
//! ```text
//! ┌──────────┬───────────────────────────┬──────────┐
//! │ controls │   the image (central)     │ figures  │
//! │ (left)   │   split divider, help,    │ (right)  │
//! │          │   errors, loading         │          │
//! ├──────────┴───────────────────────────┴──────────┤
//! │ status bar (bottom)                             │
//! └─────────────────────────────────────────────────┘
//! ```
//!
//! The left panel holds every control, the right one what the frame measured (GPU
//! timings, the split comparison's figures, the divergence, the heatmap's scale, the
//! inspected pixel, video memory per material source). Each side panel folds to a narrow
//! strip with one button and is resizable; whether it is open and its width are egui
//! state, saved with the rest of egui's memory by the viewer (`app::persist`). Windows that
//! come and go (help, the scene error, the loading indicator) stay inside the central
//! rectangle the panels leave, so no panel is ever covered.

use egui::{Align2, Color32, RichText, Stroke, pos2};

use super::keys::{Action, hint};
use super::{ACCENT, DIM, OverlayControls, OverlayInfo, UiAction, two_column_grid};

/// One row of the split figures: its label and how a side's facts read in it.
type SideRow = (&'static str, fn(&SideFacts) -> String);

/// The viewer's window size when nothing else says (physical pixels): wide enough for
/// both side panels and the image between them, tall enough for the whole controls panel.
pub const DEFAULT_WINDOW_SIZE: (u32, u32) = (1600, 900);

/// Default width of the controls panel, in points.
pub const CONTROLS_WIDTH: f32 = 330.0;
/// Default width of the figures panel, in points.
pub const FIGURES_WIDTH: f32 = 350.0;
/// Width of a folded side panel's strip, in points.
pub const FOLDED_WIDTH: f32 = 26.0;

/// The panels of the overlay, by their egui id salt (their [`egui::PanelState`] is
/// stored under `root.with(salt)`).
pub const PANELS: [&str; 3] = ["controls", "figures", "status"];

/// What the layout left for the image and learned this frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Layout {
    /// The rectangle between the panels, in points.
    pub central: egui::Rect,
    /// The whole controls panel fits without scrolling (`None`: folded).
    pub controls_fit: Option<bool>,
}

/// The persisted open/folded flag of panel `name`.
fn open_flag(ctx: &egui::Context, name: &str) -> (egui::Id, bool) {
    let id = egui::Id::unique(("neurotex.panel_open", name));
    (id, ctx.data_mut(|d| *d.get_persisted_mut_or(id, true)))
}

/// A side panel `name` on `side` with `body`, or its folded strip; returns the body's
/// result when open.
fn side_panel<R>(
    ui: &mut egui::Ui,
    name: &'static str,
    left: bool,
    width: f32,
    title: &str,
    body: impl FnOnce(&mut egui::Ui) -> R,
) -> Option<R> {
    let (id, mut open) = open_flag(ui.ctx(), name);
    let (fold, unfold) = if left { ("«", "»") } else { ("»", "«") };
    let result = if open {
        let panel = if left {
            egui::Panel::left(name)
        } else {
            egui::Panel::right(name)
        };
        let inner = panel
            .default_size(width)
            .size_range(240.0..=640.0)
            .frame(panel_frame(ui))
            .show(ui, |ui| {
                ui.horizontal(|ui| {
                    ui.label(RichText::new(title).strong());
                    ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                        if ui
                            .small_button(fold)
                            .on_hover_text("fold the panel")
                            .clicked()
                        {
                            open = false;
                        }
                    });
                });
                ui.separator();
                body(ui)
            });
        Some(inner.inner)
    } else {
        let strip = if left {
            egui::Panel::left((name, "folded"))
        } else {
            egui::Panel::right((name, "folded"))
        };
        strip
            .exact_size(FOLDED_WIDTH)
            .resizable(false)
            // A narrow margin: the unfold button fits the strip, so the strip keeps
            // its width at the window's edge.
            .frame(panel_frame(ui).inner_margin(egui::Margin::symmetric(2, 8)))
            .show(ui, |ui| {
                if ui
                    .small_button(unfold)
                    .on_hover_text(format!("show {title}"))
                    .clicked()
                {
                    open = true;
                }
            });
        None
    };
    ui.ctx().data_mut(|d| d.insert_persisted(id, open));
    result
}

fn panel_frame(ui: &egui::Ui) -> egui::Frame {
    egui::Frame::side_top_panel(ui.style())
        .fill(super::PANEL_FILL)
        .inner_margin(egui::Margin::same(8))
}

/// Lays out and draws the overlay's panels for one frame, pushing what the user asked
/// for to `actions`.
pub fn show_panels(
    ui: &mut egui::Ui,
    info: &OverlayInfo<'_>,
    c: &mut OverlayControls<'_>,
    actions: &mut Vec<UiAction>,
) -> Layout {
    egui::Panel::bottom("status")
        .resizable(false)
        .frame(panel_frame(ui).inner_margin(egui::Margin::symmetric(8, 3)))
        .show(ui, |ui| super::status_line(ui, info));
    let controls_fit = side_panel(ui, "controls", true, CONTROLS_WIDTH, "neurotex", |ui| {
        let out = egui::ScrollArea::vertical().show(ui, |ui| {
            super::scene_section(ui, info, actions);
            super::view_section(ui, info, c.settings);
            super::ntc_section(ui, info, c.settings, actions);
            super::compare_section(ui, info, c.settings);
            super::lighting_section(ui, &mut c.settings.lighting);
            super::camera_section(ui, c.camera, actions);
            super::paths_section(ui, info, c.player, c.selected_path, actions);
            super::device_section(ui, info);
        });
        out.content_size.y <= out.inner_rect.height() + 0.5
    });
    side_panel(ui, "figures", false, FIGURES_WIDTH, "Figures", |ui| {
        egui::ScrollArea::vertical().show(ui, |ui| {
            super::figures(ui, info, c.settings);
        });
    });
    let central = ui.available_rect_before_wrap();
    if c.settings.compare.enabled {
        divider(ui, central, &mut c.settings.compare.split.divider, info);
    }
    Layout {
        central,
        controls_fit,
    }
}

/// The split's divider: a line over the image at `divider` × the window width, dragged
/// sideways (within the central rectangle), with each side's source named beside it.
fn divider(ui: &mut egui::Ui, central: egui::Rect, divider: &mut f32, info: &OverlayInfo<'_>) {
    let screen = ui.ctx().content_rect();
    let x = screen.left() + divider.clamp(0.0, 1.0) * screen.width();
    if x < central.left() || x > central.right() {
        // Under a panel: nothing to grab; the compare section's slider still moves it.
        return;
    }
    let handle = egui::Rect::from_x_y_ranges(x - 5.0..=x + 5.0, central.y_range());
    let response = ui
        .interact(
            handle,
            egui::Id::unique("neurotex.split_divider"),
            egui::Sense::drag(),
        )
        .on_hover_cursor(egui::CursorIcon::ResizeHorizontal);
    if response.dragged()
        && let Some(p) = response.interact_pointer_pos()
    {
        let clamped = p.x.clamp(central.left(), central.right());
        *divider = (clamped - screen.left()) / screen.width().max(1.0);
    }
    let painter = ui.painter_at(central);
    let stroke = if response.hovered() || response.dragged() {
        Stroke::new(3.0, ACCENT)
    } else {
        Stroke::new(2.0, Color32::from_white_alpha(200))
    };
    painter.vline(x, central.y_range(), stroke);
    if let Some(split) = &info.ntc.split {
        let font = egui::FontId::proportional(13.0);
        let y = central.top() + 8.0;
        for (side, align, dx) in [
            (&split.sides[0], Align2::RIGHT_TOP, -8.0),
            (&split.sides[1], Align2::LEFT_TOP, 8.0),
        ] {
            let galley = painter.layout_no_wrap(side.headline(), font.clone(), ACCENT);
            let rect = align.anchor_size(pos2(x + dx, y), galley.size());
            painter.rect_filled(rect.expand(3.0), 3.0, Color32::from_black_alpha(160));
            painter.galley(rect.min, galley, ACCENT);
        }
    }
}

/// One side of the split comparison as the overlay shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SideFacts {
    /// The material source rendered (mode, and the kernel it decoded with).
    pub source: String,
    /// Why it is not the asked-for source, when it is not.
    pub fallback: Option<String>,
    /// Median GPU time of its decode pass (ms), when it decodes per pixel.
    pub decode_ms: Option<f64>,
    /// Its PSNR against the reference, as measured last (dB, `exact`, or why not).
    pub psnr: Option<String>,
}

impl SideFacts {
    /// The one-line label drawn beside the divider.
    pub fn headline(&self) -> String {
        let mut s = self.source.clone();
        if let Some(ms) = self.decode_ms {
            s.push_str(&format!(" · {ms:.2} ms"));
        }
        if let Some(p) = &self.psnr {
            s.push_str(&format!(" · {p}"));
        }
        s
    }
}

/// The split comparison's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SplitFacts {
    /// Left and right.
    pub sides: [SideFacts; 2],
}

/// The split comparison's figures in the figures panel.
pub fn split_figures(ui: &mut egui::Ui, split: &SplitFacts) {
    let rows: [SideRow; 3] = [
        ("source", |s| s.source.clone()),
        ("decode", |s| {
            s.decode_ms
                .map_or_else(|| "–".to_owned(), |ms| format!("{ms:.3} ms"))
        }),
        ("PSNR", |s| s.psnr.clone().unwrap_or_else(|| "–".to_owned())),
    ];
    let rows = rows.map(|(name, value)| {
        (
            name,
            split
                .sides
                .each_ref()
                .map(|side| RichText::new(value(side)).monospace()),
        )
    });
    two_column_grid(ui, "split_figures", ["left", "right"], rows);
    for side in &split.sides {
        if let Some(why) = &side.fallback {
            ui.label(RichText::new(why).small().color(ACCENT));
        }
    }
    ui.label(
        RichText::new(hint(
            "PSNR: measured on request",
            Action::Ui(UiAction::MeasurePsnr),
        ))
        .small()
        .color(DIM),
    );
}

/// The pairs of `rects` that overlap by more than a rounding error (touching edges do
/// not), by name.
pub fn overlaps<'a>(rects: &[(&'a str, egui::Rect)]) -> Vec<(&'a str, &'a str)> {
    let mut out = Vec::new();
    for (i, (a, ra)) in rects.iter().enumerate() {
        for (b, rb) in &rects[i + 1..] {
            let common = ra.intersect(*rb);
            if common.width() > 0.5 && common.height() > 0.5 {
                out.push((*a, *b));
            }
        }
    }
    out
}

/// A window of the central area: centred in `central`, never leaving it.
pub fn central_window(title: RichText, id: &str, central: egui::Rect) -> egui::Window<'static> {
    egui::Window::new(title)
        .id(window_id(id))
        .pivot(Align2::CENTER_CENTER)
        .default_pos(central.center())
        .constrain_to(central)
        .max_width((central.width() - 16.0).max(120.0))
        .max_height((central.height() - 16.0).max(80.0))
        .resizable(false)
        .collapsible(false)
}

/// The rectangles of the panels and windows the overlay showed last, by name, from
/// egui's memory: each panel's stored state (`root` is the id of the `Ui` the panels
/// were shown in) and each window's area. Folded panels report their strip.
pub fn shown_rects(ctx: &egui::Context, root: egui::Id) -> Vec<(&'static str, egui::Rect)> {
    let mut rects = Vec::new();
    for name in PANELS {
        let (_, open) = open_flag(ctx, name);
        let id = if open || name == "status" {
            root.with(name)
        } else {
            root.with((name, "folded"))
        };
        if let Some(state) = egui::PanelState::load(ctx, id) {
            rects.push((name, state.outer_rect));
        }
    }
    for name in WINDOWS {
        let id = window_id(name);
        let shown = ctx.memory(|m| {
            m.areas()
                .is_visible(&egui::LayerId::new(egui::Order::Middle, id))
        });
        if shown && let Some(rect) = ctx.memory(|m| m.area_rect(id)) {
            rects.push((name, rect));
        }
    }
    rects
}

/// The windows of the central area, by name.
pub const WINDOWS: [&str; 2] = ["help", "scene_error"];

/// The egui id of central window `name`.
pub fn window_id(name: &str) -> egui::Id {
    egui::Id::unique(("neurotex.window", name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Strategy;
    use crate::render::passes::heatmap::HeatmapSource;
    use crate::render::{Aov, RenderMode};
    use crate::scene::camera_control::{CameraState, PathPlayer};
    use crate::scene::{Aabb, Camera};
    use crate::screen::divergence::DivergenceStats;
    use crate::screen::tiles::TileSize;
    use crate::ui::timings::PerfHistory;
    use crate::ui::{
        CompareSettings, NtcInfo, OverlayControls, OverlayInfo, SceneStats, ViewSettings,
    };

    /// What a busy session shows: a scene, every NTC mode, timings, the divergence, the
    /// split figures; with `error` a failed reload too.
    struct Session {
        ntc: NtcInfo,
        perf: PerfHistory,
        stats: SceneStats,
        settings: ViewSettings,
        camera: CameraState,
        player: PathPlayer,
        selected: Option<usize>,
    }

    fn session() -> Session {
        let mut perf = PerfHistory::default();
        for _ in 0..10 {
            perf.push_frame(16.0, 2.0);
            perf.push_gpu(
                [
                    "shadow",
                    "gbuffer",
                    "ntc.decode",
                    "lighting",
                    "temporal",
                    "tonemap",
                ]
                .map(|label| crate::gpu::PassTiming {
                    label: label.into(),
                    ms: 1.0,
                })
                .to_vec(),
            );
        }
        let ntc = NtcInfo {
            modes: RenderMode::ALL[1..]
                .iter()
                .map(|&m| (m, "ready".to_owned(), true))
                .collect(),
            divergence: Some(DivergenceStats::from_histograms(
                TileSize::default(),
                vec![0, 40, 20, 10, 5],
                vec![0, 30, 20, 15, 10],
            )),
            split: Some(SplitFacts::default()),
            ..NtcInfo::default()
        };
        let settings = ViewSettings {
            aov: Aov::Final,
            lighting: Default::default(),
            vsync: true,
            render_scale: 1.0,
            show_overlay: true,
            show_help: false,
            mode: RenderMode::Ntc(Strategy::Clustered),
            passes: Default::default(),
            show_heatmap: true,
            heatmap_source: HeatmapSource::Decoders,
            ntc: Default::default(),
            compare: CompareSettings {
                enabled: true,
                ..Default::default()
            },
            inspect: false,
        };
        Session {
            ntc,
            perf,
            stats: SceneStats {
                name: "street.toml".into(),
                meshes: 28,
                instances: 123,
                triangles: 180_710,
                materials: 36,
                texture_sets: 36,
                texture_bytes: 150 << 20,
                missing_textures: 0,
            },
            settings,
            camera: CameraState::from_camera(
                &Camera::framing(&Aabb {
                    min: glam::Vec3::splat(-1.0),
                    max: glam::Vec3::splat(1.0),
                }),
                1.0,
                2.0,
            ),
            player: PathPlayer::default(),
            selected: None,
        }
    }

    /// Runs the overlay for a few frames of a `size` screen; returns the rects shown and
    /// the last layout.
    fn run(
        ctx: &egui::Context,
        s: &mut Session,
        size: (f32, f32),
        error: Option<&str>,
    ) -> (Vec<(&'static str, egui::Rect)>, Layout) {
        let names = ["overview".to_owned()];
        let mut root = egui::Id::NULL;
        let mut layout = None;
        for _ in 0..4 {
            let info = OverlayInfo {
                adapter: "llvmpipe (LLVM 19, 256 bits) · Vulkan",
                features: Default::default(),
                scene: Some(&s.stats),
                loading: None,
                error,
                perf: &s.perf,
                path_names: &names,
                path_duration: 4.0,
                recording: None,
                can_save_recording: false,
                status: "saved screenshot-1.png",
                surface_size: (size.0 as u32, size.1 as u32),
                render_size: Some((size.0 as u32, size.1 as u32)),
                present_mode: wgpu::PresentMode::Fifo,
                vsync_off_supported: true,
                gpu_errors: 0,
                ntc: &s.ntc,
            };
            let input = egui::RawInput {
                screen_rect: Some(egui::Rect::from_min_size(
                    egui::Pos2::ZERO,
                    egui::vec2(size.0, size.1),
                )),
                ..Default::default()
            };
            let mut output = ctx.run_ui(input, |ui| {
                root = ui.scope_id();
                let controls = OverlayControls {
                    settings: &mut s.settings,
                    camera: &mut s.camera,
                    player: &mut s.player,
                    selected_path: &mut s.selected,
                };
                layout = Some(crate::ui::show(ui, &info, controls).1);
            });
            // No painter here: the font atlas's upload is dropped on purpose.
            output.textures_delta.clear();
        }
        (shown_rects(ctx, root), layout.expect("ran"))
    }

    fn assert_apart(rects: &[(&str, egui::Rect)], size: (f32, f32)) {
        let screen = egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(size.0, size.1));
        for (name, r) in rects {
            assert!(
                screen.expand(0.5).contains_rect(*r),
                "{name} {r:?} leaves {size:?}"
            );
        }
        assert!(
            overlaps(rects).is_empty(),
            "{:?} overlap: {rects:?}",
            overlaps(rects)
        );
    }

    #[test]
    fn panels_and_windows_never_overlap() {
        for size in [(1280.0, 720.0), (1920.0, 1080.0)] {
            let ctx = egui::Context::default();
            crate::ui::install_style(&ctx);
            let mut s = session();
            s.settings.show_help = true;
            let (rects, layout) = run(&ctx, &mut s, size, None);
            let names: Vec<&str> = rects.iter().map(|(n, _)| *n).collect();
            assert_eq!(names, ["controls", "figures", "status", "help"], "{size:?}");
            assert_apart(&rects, size);
            assert!(layout.central.width() > 0.0 && layout.central.height() > 0.0);
            // A scene error takes the help window's place.
            let (rects, _) = run(&ctx, &mut s, size, Some("street.toml: no such file"));
            let names: Vec<&str> = rects.iter().map(|(n, _)| *n).collect();
            assert_eq!(
                names,
                ["controls", "figures", "status", "scene_error"],
                "{size:?}"
            );
            assert_apart(&rects, size);
            // Folded panels leave strips that cover nothing either.
            for name in ["controls", "figures"] {
                ctx.data_mut(|d| {
                    d.insert_persisted(egui::Id::unique(("neurotex.panel_open", name)), false)
                });
            }
            let (rects, layout) = run(&ctx, &mut s, size, None);
            assert_apart(&rects, size);
            assert_eq!(layout.controls_fit, None);
            assert!(layout.central.width() >= size.0 - 2.0 * FOLDED_WIDTH - 1.0);
        }
    }

    #[test]
    fn the_default_window_shows_the_whole_controls_panel() {
        let ctx = egui::Context::default();
        crate::ui::install_style(&ctx);
        let mut s = session();
        let (w, h) = DEFAULT_WINDOW_SIZE;
        let (_, layout) = run(&ctx, &mut s, (w as f32, h as f32), None);
        assert_eq!(layout.controls_fit, Some(true));
    }

    #[test]
    fn touching_rects_do_not_overlap() {
        let r = |x0: f32, x1: f32| egui::Rect::from_x_y_ranges(x0..=x1, 0.0..=10.0);
        assert!(overlaps(&[("a", r(0.0, 10.0)), ("b", r(10.0, 20.0))]).is_empty());
        assert_eq!(
            overlaps(&[("a", r(0.0, 10.0)), ("b", r(9.0, 20.0))]),
            [("a", "b")]
        );
    }
}
