//! The viewer's egui overlay, docked ([`layout`]): the controls panel on the left (scene,
//! view, neural textures, compare, lighting, camera, camera paths, device), the figures
//! panel on the right (per-pass GPU timings with a rolling frame-time graph, the split
//! comparison's figures, the divergence of this mode next to the baseline, the heatmap's
//! scale, the inspected pixel, video memory per material source), the status bar with
//! the loading indicator, and the help and scene-error windows inside the image.
//!
//! The overlay reads facts ([`OverlayInfo`]), edits settings in place
//! ([`OverlayControls`]) and returns what the viewer must do ([`UiAction`]); it owns no
//! GPU resources besides the egui renderer in [`painter`] and never loads scenes itself.
//!
//! - [`timings`]: timing history and the per-pass table rows (pure).
//! - [`keys`]: the key table (every shortcut, its help text and action), which the
//!   viewer's input handler and the help panel both read.
//! - [`painter`]: draws egui's output with `egui-wgpu`.
//! - [`layout`]: the docked panels and the central windows.
//! - [`compare`]: the split view's controls, the inspector's and video memory's figures.

pub mod compare;
pub mod keys;
pub mod layout;
pub mod painter;
pub mod timings;

use std::ops::RangeInclusive;

use egui::{Align2, Color32, CornerRadius, FontId, RichText, Stroke, Vec2, pos2, vec2};

use crate::cluster::Strategy;
use crate::gpu::GrantedFeatures;
use crate::render::memory::SourceMemory;
use crate::render::passes::heatmap::HeatmapSource;
use crate::render::passes::ntc_bake::{BakeKernel, Transcode};
use crate::render::passes::ntc_decode::NtcKernel;
use crate::render::{Aov, KernelChoice, PassSettings, RenderMode};
use crate::scene::Lighting;
use crate::scene::Scene;
use crate::scene::camera_control::{
    CameraMode, CameraState, PATH_SPEED_RANGE, PathPlayer, PathRecorder, SPEED_RANGE,
};
use crate::screen::divergence::DivergenceStats;
use crate::screen::tiles::TileSize;
pub use compare::{CompareSettings, Inspection};
use compare::{compare_section, heatmap_legend, inspection_figures, memory_figures};
use keys::{Action, hint, keys_of};
use layout::{Layout, SplitFacts, central_window, split_figures};
use timings::PerfHistory;

/// Allowed render scales: the renderer's internal size over the window size.
pub const RENDER_SCALE_RANGE: RangeInclusive<f32> = 0.25..=1.0;

/// Every AOV with its UI name, in the order the overlay lists them.
pub const AOVS: [(Aov, &str); 8] = [
    (Aov::Final, "Final"),
    (Aov::Albedo, "Albedo"),
    (Aov::Normal, "Normal"),
    (Aov::Roughness, "Roughness"),
    (Aov::Metallic, "Metallic"),
    (Aov::Occlusion, "Occlusion"),
    (Aov::Emissive, "Emissive"),
    (Aov::MaterialId, "Material id"),
];

/// The UI name of `aov`.
pub fn aov_name(aov: Aov) -> &'static str {
    AOVS.iter().find(|(a, _)| *a == aov).map_or("?", |(_, n)| n)
}

/// Sun azimuth and elevation in degrees of a direction towards the sun (+Y up; azimuth 0
/// = +Z, 90 = +X).
pub fn sun_angles(direction: [f32; 3]) -> (f32, f32) {
    let d = glam::Vec3::from(direction).normalize_or(glam::Vec3::Y);
    (
        d.x.atan2(d.z).to_degrees(),
        d.y.clamp(-1.0, 1.0).asin().to_degrees(),
    )
}

/// The unit direction towards a sun at `azimuth_deg`, `elevation_deg` (see [`sun_angles`]).
pub fn sun_direction(azimuth_deg: f32, elevation_deg: f32) -> [f32; 3] {
    let (sa, ca) = azimuth_deg.to_radians().sin_cos();
    let (se, ce) = elevation_deg.to_radians().sin_cos();
    [sa * ce, se, ca * ce]
}

/// What the viewer shows and how; edited by the overlay and by shortcuts.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewSettings {
    /// The image shown.
    pub aov: Aov,
    /// Sun, ambient and exposure.
    pub lighting: Lighting,
    /// Present with vsync (FIFO) or without (mailbox / immediate where supported).
    pub vsync: bool,
    /// Internal resolution over window resolution, within [`RENDER_SCALE_RANGE`].
    pub render_scale: f32,
    /// The overlay is drawn (F1).
    pub show_overlay: bool,
    /// The help panel is drawn (F2).
    pub show_help: bool,
    /// Where material channels come from (M cycles).
    pub mode: RenderMode,
    /// Decode, accumulation, heatmap and comparison settings.
    pub passes: PassSettings,
    /// The heatmap is drawn (H); what it shows is `heatmap_source`.
    pub show_heatmap: bool,
    /// What the heatmap shows.
    pub heatmap_source: HeatmapSource,
    /// Decode kernel and tile size.
    pub ntc: KernelChoice,
    /// The split comparison (K).
    pub compare: CompareSettings,
    /// The pixel under the cursor is inspected (I).
    pub inspect: bool,
}

impl Default for ViewSettings {
    /// The final image of the reference under the default lighting and passes, with the
    /// overlay, vsync and full render scale.
    fn default() -> Self {
        Self {
            aov: Aov::Final,
            lighting: Lighting::default(),
            vsync: true,
            render_scale: 1.0,
            show_overlay: true,
            show_help: false,
            mode: RenderMode::Reference,
            passes: PassSettings::default(),
            show_heatmap: false,
            heatmap_source: HeatmapSource::Decoders,
            ntc: KernelChoice::default(),
            compare: CompareSettings::default(),
            inspect: false,
        }
    }
}

/// The UI name of a heatmap source.
pub fn heatmap_source_name(source: HeatmapSource) -> &'static str {
    match source {
        HeatmapSource::Decoders => "decoders per tile",
        HeatmapSource::BaselineDecoders => "baseline decoders per tile",
        HeatmapSource::Materials => "materials per tile",
        HeatmapSource::Error => "squared error vs reference",
    }
}

/// NTC facts for the overlay.
#[derive(Clone, Debug, Default)]
pub struct NtcInfo {
    /// Every NTC mode with its package status line and whether it can render now.
    pub modes: Vec<(RenderMode, String, bool)>,
    /// The kernel the decode pass runs (None before the first package).
    pub kernel: Option<NtcKernel>,
    /// Kernels this device runs.
    pub kernels: Vec<NtcKernel>,
    /// Decoders of the mode on screen.
    pub decoders: Option<usize>,
    /// FLOP of one decoded pixel (for the decode's effective TFLOP/s).
    pub flops_per_pixel: Option<f64>,
    /// The mode actually rendered (the reference while the chosen one is not ready).
    pub active_mode: RenderMode,
    /// Divergence of a recent frame.
    pub divergence: Option<DivergenceStats>,
    /// The last PSNR measurement against the reference (mode, dB or why not).
    pub psnr: Option<String>,
    /// The heatmap's (lo, hi) values while it is drawn.
    pub heatmap_range: Option<(f32, f32)>,
    /// The split comparison's figures while it is on.
    pub split: Option<SplitFacts>,
    /// The pixel under the cursor while the inspector is on.
    pub inspection: Option<Inspection>,
    /// Video memory per material source.
    pub memory: Vec<SourceMemory>,
}

/// Scene figures for the overlay.
#[derive(Clone, Debug, PartialEq)]
pub struct SceneStats {
    /// What was opened (file name or "built-in toy shop").
    pub name: String,
    /// Meshes.
    pub meshes: usize,
    /// Placed instances.
    pub instances: usize,
    /// Triangles over all instances.
    pub triangles: usize,
    /// Materials.
    pub materials: usize,
    /// Distinct texture sets uploaded.
    pub texture_sets: usize,
    /// Bytes of texture memory uploaded.
    pub texture_bytes: u64,
    /// Images replaced by constants.
    pub missing_textures: usize,
}

impl SceneStats {
    /// Figures of `scene` as uploaded (`texture_sets`, `texture_bytes` and
    /// `missing_textures` come from the renderer's upload).
    pub fn new(
        name: String,
        scene: &Scene,
        texture_sets: usize,
        texture_bytes: u64,
        missing_textures: usize,
    ) -> Self {
        Self {
            name,
            meshes: scene.meshes.len(),
            instances: scene.instances.len(),
            triangles: scene.triangle_count(),
            materials: scene.materials.len(),
            texture_sets,
            texture_bytes,
            missing_textures,
        }
    }
}

/// Read-only facts the overlay shows.
#[derive(Debug)]
pub struct OverlayInfo<'a> {
    /// `GpuContext::describe()`.
    pub adapter: &'a str,
    /// Granted optional features.
    pub features: GrantedFeatures,
    /// The scene on screen, if any.
    pub scene: Option<&'a SceneStats>,
    /// What is being loaded, while a load runs.
    pub loading: Option<&'a str>,
    /// The last scene load error, until dismissed.
    pub error: Option<&'a str>,
    /// Timing history.
    pub perf: &'a PerfHistory,
    /// Names of the scene's camera paths.
    pub path_names: &'a [String],
    /// Duration of the selected path in seconds.
    pub path_duration: f32,
    /// The recording in progress.
    pub recording: Option<&'a PathRecorder>,
    /// A finished recording waits to be saved.
    pub can_save_recording: bool,
    /// The last status message (screenshot written, path saved…).
    pub status: &'a str,
    /// Window (surface) size in pixels.
    pub surface_size: (u32, u32),
    /// Renderer (internal) size in pixels, while a scene is on screen.
    pub render_size: Option<(u32, u32)>,
    /// The present mode in use.
    pub present_mode: wgpu::PresentMode,
    /// Whether the surface offers a present mode without vsync.
    pub vsync_off_supported: bool,
    /// wgpu errors logged by the uncaptured-error handler so far.
    pub gpu_errors: u64,
    /// Neural texture state.
    pub ntc: &'a NtcInfo,
}

/// Settings the overlay edits in place.
#[derive(Debug)]
pub struct OverlayControls<'a> {
    /// View settings.
    pub settings: &'a mut ViewSettings,
    /// The interactive camera (mode, speed).
    pub camera: &'a mut CameraState,
    /// Camera path playback.
    pub player: &'a mut PathPlayer,
    /// Index of the selected camera path.
    pub selected_path: &'a mut Option<usize>,
}

/// Something the viewer must do in response to the overlay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UiAction {
    /// Reload the scene from disk.
    Reload,
    /// Save a screenshot after this frame.
    Screenshot,
    /// Back to the scene's start camera.
    ResetCamera,
    /// Play the selected camera path from its start.
    PlayPath,
    /// Start or stop recording a camera path.
    ToggleRecording,
    /// Save the finished recording into a scene description.
    SaveRecording,
    /// Hide the scene error panel.
    DismissError,
    /// Measure the PSNR of the next frame against the reference.
    MeasurePsnr,
}

const PANEL_FILL: Color32 = Color32::from_rgba_premultiplied(14, 16, 20, 225);
const ACCENT: Color32 = Color32::from_rgb(255, 170, 60);
const DIM: Color32 = Color32::from_rgb(150, 156, 168);
const GPU_COLOR: Color32 = Color32::from_rgb(255, 170, 60);
const FRAME_COLOR: Color32 = Color32::from_rgb(110, 200, 255);

/// Sets the overlay's look once (dark, compact, semi-transparent panels).
pub fn install_style(ctx: &egui::Context) {
    ctx.set_visuals(egui::Visuals::dark());
    ctx.all_styles_mut(|style| {
        style.spacing.item_spacing = vec2(6.0, 4.0);
        style.spacing.slider_width = 130.0;
        style.visuals.window_fill = PANEL_FILL;
        style.visuals.window_stroke = Stroke::new(1.0, Color32::from_gray(60));
        style.visuals.window_corner_radius = CornerRadius::same(6);
        style.visuals.window_shadow = egui::epaint::Shadow::NONE;
    });
}

/// Draws the overlay for one frame into the root `ui` (see [`layout`]) and returns the
/// actions the user asked for, with the layout it made.
pub fn show(
    ui: &mut egui::Ui,
    info: &OverlayInfo<'_>,
    mut c: OverlayControls<'_>,
) -> (Vec<UiAction>, Layout) {
    let mut actions = Vec::new();
    let show_overlay = c.settings.show_overlay;
    let layout = if show_overlay {
        layout::show_panels(ui, info, &mut c, &mut actions)
    } else {
        Layout {
            central: ui.available_rect_before_wrap(),
            controls_fit: None,
        }
    };
    let ctx = ui.ctx().clone();
    if let Some(error) = info.error {
        // The error takes the help window's place: one window in the image at a time.
        error_window(&ctx, error, layout.central, &mut actions);
    } else if c.settings.show_help {
        help_window(&ctx, &mut c.settings.show_help, layout.central);
    }
    if !show_overlay && let Some(what) = info.loading {
        // Without the status bar, the loading indicator sits in the image.
        egui::Area::new(egui::Id::unique("neurotex.loading"))
            .anchor(Align2::CENTER_CENTER, Vec2::ZERO)
            .show(&ctx, |ui| {
                egui::Frame::window(ui.style()).show(ui, |ui| loading_line(ui, what));
            });
    }
    (actions, layout)
}

/// The loading indicator: a spinner and what is being loaded.
fn loading_line(ui: &mut egui::Ui, what: &str) {
    ui.horizontal(|ui| {
        ui.add(egui::Spinner::new());
        ui.label(RichText::new(format!("Loading {what}…")).color(ACCENT));
    });
}

/// The figures panel's contents: what the frame measured.
fn figures(ui: &mut egui::Ui, info: &OverlayInfo<'_>, settings: &ViewSettings) {
    section(ui, "GPU timings", true, |ui| timings_section(ui, info));
    if let Some(split) = &info.ntc.split {
        section(ui, "Split view", true, |ui| split_figures(ui, split));
    }
    if let Some(d) = &info.ntc.divergence {
        section(ui, "Divergence", true, |ui| {
            divergence_section(ui, info.ntc, d)
        });
    }
    if settings.show_heatmap
        && let Some((lo, hi)) = info.ntc.heatmap_range
    {
        section(ui, "Heatmap", true, |ui| {
            heatmap_legend(ui, heatmap_source_name(settings.heatmap_source), lo, hi);
        });
    }
    if let Some(inspection) = &info.ntc.inspection {
        inspection_figures(ui, inspection);
    }
    memory_figures(ui, &info.ntc.memory);
}

fn section(ui: &mut egui::Ui, title: &str, open: bool, body: impl FnOnce(&mut egui::Ui)) {
    egui::CollapsingHeader::new(RichText::new(title).strong().color(ACCENT))
        .default_open(open)
        .show(ui, body);
}

fn kv(ui: &mut egui::Ui, key: &str, value: impl Into<String>) {
    ui.label(RichText::new(key).color(DIM));
    ui.label(RichText::new(value.into()).monospace());
    ui.end_row();
}

/// A striped grid `id` of two value columns under the dim `headers`: a row per
/// `(name, cells)`, its name dim.
fn two_column_grid<'a>(
    ui: &mut egui::Ui,
    id: &str,
    headers: [&str; 2],
    rows: impl IntoIterator<Item = (&'a str, [RichText; 2])>,
) {
    egui::Grid::new(id)
        .num_columns(3)
        .striped(true)
        .show(ui, |ui| {
            ui.label("");
            for header in headers {
                ui.label(RichText::new(header).color(DIM));
            }
            ui.end_row();
            for (name, cells) in rows {
                ui.label(RichText::new(name).color(DIM));
                for cell in cells {
                    ui.label(cell);
                }
                ui.end_row();
            }
        });
}

/// Bytes as KiB / MiB / GiB.
pub fn format_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
    } else if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else {
        format!("{:.1} KiB", b / 1024.0)
    }
}

/// A count with thin-space thousands separators.
fn format_count(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push('\u{2009}');
        }
        out.push(ch);
    }
    out
}

fn scene_section(ui: &mut egui::Ui, info: &OverlayInfo<'_>, actions: &mut Vec<UiAction>) {
    section(ui, "Scene", false, |ui| {
        match info.scene {
            Some(s) => {
                egui::Grid::new("scene_stats")
                    .num_columns(2)
                    .show(ui, |ui| {
                        kv(ui, "scene", s.name.clone());
                        kv(
                            ui,
                            "meshes",
                            format!("{} ({} instances)", s.meshes, s.instances),
                        );
                        kv(ui, "triangles", format_count(s.triangles));
                        kv(ui, "materials", s.materials.to_string());
                        kv(ui, "texture sets", s.texture_sets.to_string());
                        kv(ui, "texture memory", format_bytes(s.texture_bytes));
                        if s.missing_textures > 0 {
                            kv(ui, "missing images", s.missing_textures.to_string());
                        }
                    });
            }
            None => {
                ui.label(RichText::new("no scene loaded").color(DIM));
            }
        }
        ui.horizontal(|ui| {
            if ui
                .add_enabled(
                    info.loading.is_none(),
                    egui::Button::new(hint("Reload", Action::Ui(UiAction::Reload))),
                )
                .clicked()
            {
                actions.push(UiAction::Reload);
            }
            if ui
                .button(hint("Screenshot", Action::Ui(UiAction::Screenshot)))
                .clicked()
            {
                actions.push(UiAction::Screenshot);
            }
        });
    });
}

fn view_section(ui: &mut egui::Ui, info: &OverlayInfo<'_>, settings: &mut ViewSettings) {
    section(ui, "View", true, |ui| {
        egui::Grid::new("view").num_columns(2).show(ui, |ui| {
            ui.label(RichText::new("output").color(DIM));
            egui::ComboBox::from_id_salt("aov")
                .selected_text(aov_name(settings.aov))
                .show_ui(ui, |ui| {
                    for (aov, name) in AOVS {
                        let keys = keys_of(Action::ShowAov(aov));
                        ui.selectable_value(&mut settings.aov, aov, format!("{keys}  {name}"));
                    }
                });
            ui.end_row();
            ui.label(RichText::new("render scale").color(DIM));
            ui.add(
                egui::Slider::new(&mut settings.render_scale, RENDER_SCALE_RANGE)
                    .step_by(0.05)
                    .fixed_decimals(2),
            );
            ui.end_row();
            ui.label(RichText::new("vsync").color(DIM));
            ui.add_enabled(
                info.vsync_off_supported,
                egui::Checkbox::new(&mut settings.vsync, format!("{:?}", info.present_mode)),
            )
            .on_disabled_hover_text("the surface offers only FIFO presentation");
            ui.end_row();
            let (sw, sh) = info.surface_size;
            let resolution = match info.render_size {
                Some((w, h)) => format!("{w}×{h} → {sw}×{sh}"),
                None => format!("{sw}×{sh}"),
            };
            kv(ui, "resolution", resolution);
        });
    });
}

fn ntc_section(
    ui: &mut egui::Ui,
    info: &OverlayInfo<'_>,
    settings: &mut ViewSettings,
    actions: &mut Vec<UiAction>,
) {
    let ntc = info.ntc;
    section(ui, "Neural textures", true, |ui| {
        ui.label(RichText::new(hint("material source", Action::NextMode)).color(DIM));
        ui.radio_value(
            &mut settings.mode,
            RenderMode::Reference,
            "Reference (original textures)",
        );
        for (mode, status, ready) in &ntc.modes {
            ui.horizontal(|ui| {
                ui.radio_value(&mut settings.mode, *mode, mode_name(*mode));
                let color = if *ready { DIM } else { ACCENT };
                ui.label(RichText::new(status).small().color(color));
            });
        }
        if ntc.active_mode != settings.mode {
            ui.label(
                RichText::new(format!(
                    "showing {} until {} is ready",
                    mode_name(ntc.active_mode),
                    mode_name(settings.mode)
                ))
                .color(ACCENT),
            );
        }
        egui::Grid::new("ntc").num_columns(2).show(ui, |ui| {
            ui.label(RichText::new("kernel").color(DIM));
            let auto = ntc
                .kernel
                .map_or("auto".to_string(), |k| format!("auto ({k})"));
            egui::ComboBox::from_id_salt("kernel")
                .selected_text(settings.ntc.kernel.map_or(auto.clone(), |k| k.to_string()))
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut settings.ntc.kernel, None, auto);
                    for k in &ntc.kernels {
                        ui.selectable_value(&mut settings.ntc.kernel, Some(*k), k.to_string());
                    }
                });
            ui.end_row();
            ui.label(RichText::new("tile").color(DIM));
            ui.horizontal(|ui| {
                for t in TileSize::ALL {
                    ui.selectable_value(&mut settings.ntc.tile, t, t.name());
                }
            });
            ui.end_row();
            if let Some(d) = ntc.decoders {
                kv(ui, "decoders", d.to_string());
            }
        });
        ui.checkbox(
            &mut settings.passes.decode.stochastic,
            hint("stochastic trilinear filtering", Action::ToggleStochastic),
        );
        ui.checkbox(
            &mut settings.passes.temporal.enabled,
            hint("temporal accumulation", Action::ToggleTemporal),
        );
        ui.horizontal(|ui| {
            ui.checkbox(
                &mut settings.passes.inference_on_load,
                hint("inference on load", Action::ToggleInferenceOnLoad),
            );
            let name = |t: Option<Transcode>| t.map_or("RGBA8", Transcode::name);
            ui.add_enabled_ui(settings.passes.inference_on_load, |ui| {
                egui::ComboBox::from_id_salt("transcode")
                    .selected_text(name(settings.passes.transcode))
                    .show_ui(ui, |ui| {
                        for t in [None, Some(Transcode::Bc1), Some(Transcode::Bc7)] {
                            ui.selectable_value(&mut settings.passes.transcode, t, name(t));
                        }
                    })
                    .response
                    .on_hover_text("what the decoded textures are kept as in video memory");
                egui::ComboBox::from_id_salt("bake_kernel")
                    .selected_text(settings.passes.bake_kernel.name())
                    .show_ui(ui, |ui| {
                        for k in BakeKernel::ALL {
                            ui.selectable_value(&mut settings.passes.bake_kernel, k, k.name());
                        }
                    })
                    .response
                    .on_hover_text(
                        "how the bake evaluates the decoders: f32 (within one 8-bit step of \
                         the CPU decode, quick to build) or fma (f16, a fraction of the GPU \
                         time, a slower pipeline build)",
                    );
            });
        });
        ui.horizontal(|ui| {
            ui.checkbox(
                &mut settings.show_heatmap,
                hint("heatmap", Action::ToggleHeatmap),
            );
            egui::ComboBox::from_id_salt("heatmap")
                .selected_text(heatmap_source_name(settings.heatmap_source))
                .show_ui(ui, |ui| {
                    for source in [
                        HeatmapSource::Decoders,
                        HeatmapSource::BaselineDecoders,
                        HeatmapSource::Materials,
                        HeatmapSource::Error,
                    ] {
                        ui.selectable_value(
                            &mut settings.heatmap_source,
                            source,
                            heatmap_source_name(source),
                        );
                    }
                });
        });
        ui.horizontal(|ui| {
            if ui
                .add_enabled(
                    settings.compare.enabled
                        || (ntc.active_mode != RenderMode::Reference
                            && !settings.passes.inference_on_load),
                    egui::Button::new(hint("PSNR vs reference", Action::Ui(UiAction::MeasurePsnr))),
                )
                .clicked()
            {
                actions.push(UiAction::MeasurePsnr);
            }
            if let Some(p) = &ntc.psnr {
                ui.label(RichText::new(p).monospace());
            }
        });
    });
}

/// The UI name of a mode.
pub fn mode_name(mode: RenderMode) -> &'static str {
    match mode {
        RenderMode::Reference => "Reference",
        RenderMode::Ntc(Strategy::Baseline) => "Baseline (a decoder per material)",
        RenderMode::Ntc(Strategy::Clustered) => "Clustered (k-means groups)",
        RenderMode::Ntc(Strategy::Single) => "Single (one decoder)",
        RenderMode::Ntc(Strategy::Random) => "Random groups",
        RenderMode::Ntc(Strategy::Category) => "Category groups",
        RenderMode::Ntc(Strategy::DivergenceAware) => "Divergence-aware groups",
    }
}

fn divergence_section(ui: &mut egui::Ui, ntc: &NtcInfo, d: &DivergenceStats) {
    egui::Grid::new("divergence_stats")
        .num_columns(3)
        .show(ui, |ui| {
            ui.label(RichText::new(format!("per {} tile", d.tile)).color(DIM));
            ui.label(RichText::new(ntc.active_mode.name()).color(GPU_COLOR));
            ui.label(RichText::new("baseline").color(FRAME_COLOR));
            ui.end_row();
            ui.label(RichText::new("score mean |D − 1|").color(DIM));
            ui.label(
                RichText::new(format!("{:.3}", d.score))
                    .monospace()
                    .strong(),
            );
            ui.label(RichText::new(format!("{:.3}", d.baseline_score)).monospace());
            ui.end_row();
            ui.label(RichText::new("mean D").color(DIM));
            ui.label(RichText::new(format!("{:.2}", d.mean_decoders)).monospace());
            ui.label(RichText::new(format!("{:.2}", d.baseline_mean_decoders)).monospace());
            ui.end_row();
        });
    if let Some(r) = d.reduction() {
        ui.label(
            RichText::new(format!("{:.1} % less divergence than baseline", 100.0 * r))
                .color(ACCENT),
        );
    }
    histogram(ui, d);
}

/// Tiles per distinct-decoder count, this mode next to the baseline.
fn histogram(ui: &mut egui::Ui, d: &DivergenceStats) {
    let last = d
        .histogram
        .iter()
        .zip(&d.baseline_histogram)
        .rposition(|(a, b)| *a > 0 || *b > 0)
        .unwrap_or(1)
        .max(1);
    let bins = 1..=last;
    let max = bins
        .clone()
        .map(|i| d.histogram[i].max(d.baseline_histogram[i]))
        .max()
        .unwrap_or(1)
        .max(1) as f32;
    let (rect, _) = ui.allocate_exact_size(vec2(260.0, 90.0), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 2.0, Color32::from_gray(24));
    let n = last as f32;
    let slot = rect.width() / n;
    for i in bins {
        let x0 = rect.left() + (i as f32 - 1.0) * slot;
        for (j, (v, color)) in [
            (d.histogram[i], GPU_COLOR),
            (d.baseline_histogram[i], FRAME_COLOR),
        ]
        .into_iter()
        .enumerate()
        {
            let h = (rect.height() - 14.0) * v as f32 / max;
            let left = x0 + slot * (0.1 + 0.4 * j as f32);
            painter.rect_filled(
                egui::Rect::from_min_max(
                    pos2(left, rect.bottom() - 12.0 - h),
                    pos2(left + slot * 0.4, rect.bottom() - 12.0),
                ),
                0.0,
                color,
            );
        }
        if last <= 16 || i % (last / 8).max(1) == 0 {
            painter.text(
                pos2(x0 + slot * 0.5, rect.bottom() - 6.0),
                Align2::CENTER_CENTER,
                i.to_string(),
                FontId::monospace(9.0),
                DIM,
            );
        }
    }
    ui.label(
        RichText::new("tiles by distinct decoders D")
            .small()
            .color(DIM),
    );
}

fn lighting_section(ui: &mut egui::Ui, lighting: &mut Lighting) {
    section(ui, "Lighting", false, |ui| {
        let (mut azimuth, mut elevation) = sun_angles(lighting.sun_direction);
        egui::Grid::new("lighting").num_columns(2).show(ui, |ui| {
            ui.label(RichText::new("sun azimuth").color(DIM));
            let a = ui.add(egui::Slider::new(&mut azimuth, -180.0..=180.0).suffix("°"));
            ui.end_row();
            ui.label(RichText::new("sun elevation").color(DIM));
            let e = ui.add(egui::Slider::new(&mut elevation, -10.0..=90.0).suffix("°"));
            ui.end_row();
            if a.changed() || e.changed() {
                lighting.sun_direction = sun_direction(azimuth, elevation);
            }
            ui.label(RichText::new("sun intensity").color(DIM));
            ui.add(egui::Slider::new(&mut lighting.sun_intensity, 0.0..=20.0).logarithmic(true));
            ui.end_row();
            ui.label(RichText::new("exposure").color(DIM));
            ui.add(egui::Slider::new(&mut lighting.exposure, 0.05..=16.0).logarithmic(true));
            ui.end_row();
        });
    });
}

fn camera_section(ui: &mut egui::Ui, camera: &mut CameraState, actions: &mut Vec<UiAction>) {
    section(ui, "Camera", false, |ui| {
        egui::Grid::new("camera").num_columns(2).show(ui, |ui| {
            ui.label(RichText::new(hint("mode", Action::ToggleCameraMode)).color(DIM));
            ui.horizontal(|ui| {
                ui.selectable_value(&mut camera.mode, CameraMode::Fly, CameraMode::Fly.name());
                ui.selectable_value(
                    &mut camera.mode,
                    CameraMode::Orbit,
                    CameraMode::Orbit.name(),
                );
            });
            ui.end_row();
            ui.label(RichText::new("speed").color(DIM));
            ui.add(
                egui::Slider::new(&mut camera.speed, SPEED_RANGE)
                    .logarithmic(true)
                    .suffix(" m/s")
                    .max_decimals(2),
            );
            ui.end_row();
            let p = camera.position;
            kv(ui, "position", format!("{:.2} {:.2} {:.2}", p.x, p.y, p.z));
            kv(
                ui,
                "yaw / pitch",
                format!(
                    "{:.1}° / {:.1}°",
                    camera.yaw.to_degrees(),
                    camera.pitch.to_degrees()
                ),
            );
        });
        if ui
            .button(hint("Reset camera", Action::Ui(UiAction::ResetCamera)))
            .clicked()
        {
            actions.push(UiAction::ResetCamera);
        }
    });
}

fn paths_section(
    ui: &mut egui::Ui,
    info: &OverlayInfo<'_>,
    player: &mut PathPlayer,
    selected: &mut Option<usize>,
    actions: &mut Vec<UiAction>,
) {
    section(ui, "Camera paths", false, |ui| {
        if info.path_names.is_empty() {
            ui.label(RichText::new("the scene has no camera paths").color(DIM));
        } else {
            let current = selected
                .and_then(|i| info.path_names.get(i))
                .map_or("(none)", String::as_str);
            egui::ComboBox::from_id_salt("path")
                .selected_text(current)
                .show_ui(ui, |ui| {
                    for (i, name) in info.path_names.iter().enumerate() {
                        if ui.selectable_label(*selected == Some(i), name).clicked() {
                            *selected = Some(i);
                            player.time = 0.0;
                        }
                    }
                });
            ui.horizontal(|ui| {
                if ui
                    .button(hint("Play", Action::Ui(UiAction::PlayPath)))
                    .clicked()
                {
                    actions.push(UiAction::PlayPath);
                }
                let label = if player.playing {
                    hint("Pause", Action::PauseResumePath)
                } else {
                    hint("Resume", Action::PauseResumePath)
                };
                if ui
                    .add_enabled(selected.is_some(), egui::Button::new(label))
                    .clicked()
                {
                    player.playing = !player.playing;
                }
                ui.checkbox(&mut player.looping, "loop");
            });
            ui.add(
                egui::Slider::new(&mut player.speed, PATH_SPEED_RANGE)
                    .logarithmic(true)
                    .text("speed")
                    .suffix("×"),
            );
            let duration = info.path_duration.max(0.0);
            ui.add_enabled(
                selected.is_some() && duration > 0.0,
                egui::Slider::new(&mut player.time, 0.0..=duration)
                    .text("time")
                    .suffix(" s")
                    .fixed_decimals(1),
            );
        }
        ui.separator();
        ui.horizontal(|ui| {
            let recording = info.recording.is_some();
            let label = if recording {
                RichText::new(hint(
                    "Stop recording",
                    Action::Ui(UiAction::ToggleRecording),
                ))
                .color(Color32::from_rgb(255, 90, 90))
            } else {
                RichText::new(hint("Record", Action::Ui(UiAction::ToggleRecording)))
                    .color(Color32::from_rgb(255, 120, 120))
            };
            if ui.button(label).clicked() {
                actions.push(UiAction::ToggleRecording);
            }
            if ui
                .add_enabled(
                    info.can_save_recording,
                    egui::Button::new(hint("Save", Action::Ui(UiAction::SaveRecording))),
                )
                .clicked()
            {
                actions.push(UiAction::SaveRecording);
            }
            if let Some(rec) = info.recording {
                ui.label(
                    RichText::new(format!(
                        "REC {:.1} s, {} keys",
                        rec.elapsed(),
                        rec.keys().len()
                    ))
                    .color(Color32::from_rgb(255, 90, 90))
                    .monospace(),
                );
            }
        });
    });
}

fn device_section(ui: &mut egui::Ui, info: &OverlayInfo<'_>) {
    section(ui, "Device", false, |ui| {
        ui.label(RichText::new(info.adapter).monospace());
        ui.horizontal_wrapped(|ui| {
            for (name, on) in info.features.flags() {
                let color = if on {
                    Color32::from_rgb(120, 220, 120)
                } else {
                    Color32::from_gray(90)
                };
                ui.label(RichText::new(name).monospace().small().color(color));
            }
        });
        if info.gpu_errors > 0 {
            ui.label(
                RichText::new(format!("{} wgpu errors logged", info.gpu_errors))
                    .color(Color32::from_rgb(255, 90, 90)),
            );
        }
    });
}

fn timings_section(ui: &mut egui::Ui, info: &OverlayInfo<'_>) {
    let perf = info.perf;
    let frame = perf.frame_median_ms();
    let fps = if frame > 0.0 { 1000.0 / frame } else { 0.0 };
    ui.horizontal(|ui| {
        ui.label(
            RichText::new(format!("{fps:5.1} fps"))
                .size(18.0)
                .strong()
                .monospace(),
        );
        ui.label(
            RichText::new(format!(
                "frame {frame:.2} ms · CPU {:.2} ms",
                perf.cpu_median_ms()
            ))
            .monospace()
            .color(DIM),
        );
    });
    let rows = perf.rows();
    if rows.is_empty() {
        let why = if info.scene.is_none() {
            "no scene on screen"
        } else if info.features.timestamps {
            "waiting for timestamp queries…"
        } else {
            "no timestamp queries on this adapter"
        };
        ui.label(RichText::new(why).color(DIM));
    } else {
        let total = perf.gpu_median_ms();
        egui::Grid::new("timing_rows")
            .num_columns(4)
            .striped(true)
            .spacing(vec2(10.0, 2.0))
            .show(ui, |ui| {
                ui.label(RichText::new("pass").color(DIM));
                ui.label(RichText::new("median").color(DIM));
                ui.label(RichText::new("last").color(DIM));
                ui.label(RichText::new("share").color(DIM));
                ui.end_row();
                for row in &rows {
                    ui.label(RichText::new(&row.label).monospace());
                    ui.label(RichText::new(format!("{:7.3} ms", row.median_ms)).monospace());
                    ui.label(
                        RichText::new(format!("{:7.3}", row.last_ms))
                            .monospace()
                            .color(DIM),
                    );
                    share_bar(
                        ui,
                        if total > 0.0 {
                            row.median_ms / total
                        } else {
                            0.0
                        },
                    );
                    ui.end_row();
                }
                let decode =
                    timings::decode_tflops(&rows, info.render_size, info.ntc.flops_per_pixel);
                if let Some(tflops) = decode {
                    ui.label(RichText::new("decode MLP").monospace().color(DIM));
                    ui.label(
                        RichText::new(format!("{tflops:7.2} TFLOP/s"))
                            .monospace()
                            .color(GPU_COLOR),
                    );
                    ui.label(RichText::new("every pixel").color(DIM));
                    ui.label("");
                    ui.end_row();
                }
                ui.label(RichText::new("GPU total").monospace().strong());
                ui.label(
                    RichText::new(format!("{total:7.3} ms"))
                        .monospace()
                        .strong()
                        .color(GPU_COLOR),
                );
                ui.label("");
                ui.label("");
                ui.end_row();
            });
        ui.label(
            RichText::new(format!(
                "median of the last {} frames",
                timings::TABLE_FRAMES
            ))
            .small()
            .color(DIM),
        );
    }
    frame_graph(ui, perf);
}

fn share_bar(ui: &mut egui::Ui, fraction: f64) {
    let (rect, _) = ui.allocate_exact_size(vec2(70.0, 10.0), egui::Sense::hover());
    let painter = ui.painter();
    painter.rect_filled(rect, CornerRadius::same(2), Color32::from_gray(40));
    let mut filled = rect;
    filled.set_width(rect.width() * fraction.clamp(0.0, 1.0) as f32);
    painter.rect_filled(filled, CornerRadius::same(2), GPU_COLOR.gamma_multiply(0.8));
}

/// Rolling frame-time graph: frame interval and GPU total, with 60 / 30 fps guides.
fn frame_graph(ui: &mut egui::Ui, perf: &PerfHistory) {
    let (rect, _) = ui.allocate_exact_size(vec2(320.0, 90.0), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, CornerRadius::same(3), Color32::from_black_alpha(150));
    let frames = perf.frame_series();
    let gpu = perf.gpu_series();
    let peak = frames.iter().chain(gpu).copied().fold(0.0f64, f64::max);
    let top = if peak <= 20.0 {
        20.0
    } else if peak <= 40.0 {
        40.0
    } else {
        (peak * 1.1 / 50.0).ceil() * 50.0
    };
    let y_of =
        |ms: f64| rect.bottom() - (ms / top).clamp(0.0, 1.0) as f32 * (rect.height() - 4.0) - 2.0;
    let font = FontId::monospace(10.0);
    // Guides: 60 and 30 fps on a fast adapter; the half-scale line on a slow one.
    let guides = if top <= 40.0 {
        vec![
            (1000.0 / 60.0, "60 fps".to_owned()),
            (1000.0 / 30.0, "30 fps".to_owned()),
        ]
    } else {
        vec![(top * 0.5, format!("{:.0} ms", top * 0.5))]
    };
    for (ms, label) in guides {
        let y = y_of(ms);
        painter.hline(rect.x_range(), y, Stroke::new(1.0, Color32::from_gray(70)));
        painter.text(
            pos2(rect.right() - 3.0, y - 1.0),
            Align2::RIGHT_BOTTOM,
            label,
            font.clone(),
            DIM,
        );
    }
    painter.text(
        pos2(rect.left() + 3.0, rect.top() + 2.0),
        Align2::LEFT_TOP,
        format!("{top:.0} ms"),
        font.clone(),
        DIM,
    );
    let n = timings::GRAPH_FRAMES as f32;
    let series = |values: &[f64], color: Color32| {
        if values.len() < 2 {
            return;
        }
        let start = n - values.len() as f32;
        let points: Vec<egui::Pos2> = values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                pos2(
                    rect.left() + (start + i as f32) / (n - 1.0) * rect.width(),
                    y_of(v),
                )
            })
            .collect();
        painter.line(points, Stroke::new(1.5, color));
    };
    series(frames, FRAME_COLOR);
    series(gpu, GPU_COLOR);
    ui.horizontal(|ui| {
        ui.label(RichText::new("frame time").color(FRAME_COLOR).small());
        ui.label(RichText::new("GPU total").color(GPU_COLOR).small());
        ui.label(
            RichText::new(format!("last {} frames", timings::GRAPH_FRAMES))
                .color(DIM)
                .small(),
        );
    });
}

/// The status bar's line: loading, the last status message and the main keys.
fn status_line(ui: &mut egui::Ui, info: &OverlayInfo<'_>) {
    ui.horizontal(|ui| {
        if let Some(what) = info.loading {
            loading_line(ui, what);
            ui.separator();
        }
        if !info.status.is_empty() {
            ui.label(RichText::new(info.status).color(ACCENT));
            ui.separator();
        }
        let keys = format!(
            "{} overlay · {} help · {} screenshot · {} fly/orbit · {} split · {} inspect",
            keys_of(Action::ToggleOverlay),
            keys_of(Action::ToggleHelp),
            keys_of(Action::Ui(UiAction::Screenshot)),
            keys_of(Action::ToggleCameraMode),
            keys_of(Action::ToggleSplit),
            keys_of(Action::ToggleInspect),
        );
        ui.label(RichText::new(keys).color(DIM).small());
    });
}

fn help_window(ctx: &egui::Context, open: &mut bool, central: egui::Rect) {
    central_window(RichText::new("Shortcuts").strong(), "help", central)
        .open(open)
        .show(ctx, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| {
                // The descriptions wrap, so the window fits a narrow central area.
                egui::Grid::new("shortcuts")
                    .num_columns(2)
                    .striped(true)
                    .max_col_width((central.width() - 200.0).max(120.0))
                    .show(ui, |ui| {
                        for shortcut in keys::SHORTCUTS {
                            ui.label(
                                RichText::new(shortcut.keys())
                                    .monospace()
                                    .strong()
                                    .color(ACCENT),
                            );
                            ui.add(egui::Label::new(shortcut.help).wrap());
                            ui.end_row();
                        }
                    });
            });
        });
}

fn error_window(
    ctx: &egui::Context,
    error: &str,
    central: egui::Rect,
    actions: &mut Vec<UiAction>,
) {
    central_window(
        RichText::new("Scene failed to load")
            .strong()
            .color(Color32::WHITE),
        "scene_error",
        central,
    )
    .frame(
        egui::Frame::window(&ctx.global_style())
            .fill(Color32::from_rgba_premultiplied(90, 16, 16, 235))
            .stroke(Stroke::new(1.0, Color32::from_rgb(255, 90, 90))),
    )
    .show(ctx, |ui| {
        ui.set_max_width(560.0);
        ui.label(RichText::new(error).monospace().color(Color32::WHITE));
        ui.horizontal(|ui| {
            if ui
                .button(hint("Reload", Action::Ui(UiAction::Reload)))
                .clicked()
            {
                actions.push(UiAction::Reload);
            }
            if ui.button("Dismiss").clicked() {
                actions.push(UiAction::DismissError);
            }
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sun_angles_round_trip() {
        for (az, el) in [(0.0f32, 45.0f32), (120.0, 10.0), (-60.0, 80.0)] {
            let (a, e) = sun_angles(sun_direction(az, el));
            assert!((a - az).abs() < 1e-3 && (e - el).abs() < 1e-3, "{a} {e}");
        }
    }

    #[test]
    fn bytes_and_counts_read_well() {
        assert_eq!(format_bytes(3 * 1024 * 1024 / 2), "1.5 MiB");
        assert_eq!(format_count(1234567), "1\u{2009}234\u{2009}567");
    }
}
