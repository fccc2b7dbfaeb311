//! The interactive viewer: a winit window with a wgpu surface, input → camera, the frame
//! loop (renderer + egui overlay), screenshots, camera-path playback and recording.
//!
//! ```text
//! window events ─► InputState ─► camera_control::step ─┐   (or PathPlayer along a path)
//!                └► egui-winit ─► ui::show ─► UiAction  │
//!                                                      ▼
//! surface texture ◄─ overlay (egui-wgpu) ◄─ Renderer::record(internal size = window × scale)
//!        │
//!        └─► queue.present  (a screenshot reads the frame back first, BGRA → RGBA, PNG)
//! ```
//!
//! Scenes load on a background thread (parse, texture decode, upload), so the window
//! stays responsive; a failed load shows an error panel and keeps the previous scene.
//! Surface loss (minimise, resize to zero, `Lost` / `Outdated`) reconfigures and skips the
//! frame (a surface that cannot be recreated three times in a row ends the viewer with
//! an error); a lost GPU device ends it with the reason at the next frame, never a
//! frozen window; a panic inside the loader thread comes back as its message; wgpu
//! validation errors in a frame are caught with an error scope and logged, never
//! panicking. Scripted runs (`--frames N --screenshot out.png`) render N frames after the
//! scene is ready, save the last one including the overlay, and exit.
//!
//! This module holds the `Viewer` state, the frame loop and rendering; its children
//! hold one concern each, as `impl Viewer` blocks over the same state:
//! - `present`: the surface (formats, size, vsync), acquiring frames, screenshots;
//! - `loading`: background scene loads, reloads and their failures;
//! - `paths`: camera-path selection and playback, recording and saving;
//! - `input`: keys and mouse through the key table (`ui::keys`), the camera update;
//! - `compare`: the split frame, its figures, the inspected pixel, video memory;
//! - [`persist`]: the overlay's layout remembered between runs;
//! - [`package_jobs`]: the background thread that reads or makes the NTC packages.
//!
//! It does not draw any panel itself (that is `ui`) and contains no camera rules (that is
//! `scene::camera_control`).

mod compare;
mod input;
mod loading;
pub mod package_jobs;
mod paths;
pub mod persist;
mod present;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::WindowEvent;
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::window::{Window, WindowId};

use crate::cluster::Strategy;
use crate::gpu::{GpuContext, GpuError, GpuProfiler};
use crate::open::OpenedScene;
use crate::packages::PackageRecipe;
use crate::render::passes::heatmap::{HeatmapSettings, HeatmapSource};
use crate::render::passes::ntc_decode::NtcKernel;
use crate::render::scene_gpu::UploadOptions;
use crate::render::split::SplitView;
use crate::render::{FrameSettings, KernelChoice, RenderMode, Renderer};
use crate::scene::camera_control::{CameraState, InputState};
use crate::scene::description::CameraPath;
use crate::scene::{Aabb, Camera};
use crate::texture::SceneTextures;
use crate::ui::keys::{Action, keys_of};
use crate::ui::painter::OverlayPainter;
use crate::ui::timings::PerfHistory;
use crate::ui::{
    self, NtcInfo, OverlayControls, OverlayInfo, RENDER_SCALE_RANGE, SceneStats, UiAction,
    ViewSettings,
};
use loading::{Loading, scene_name};
use package_jobs::{PackageJobs, PackageStatus};
use paths::PathState;
use present::{Presenter, next_free_path, next_screenshot_path};
pub use present::{SurfaceFormats, choose_surface_format, scaled_size, to_rgba8};

pub use crate::ui::layout::DEFAULT_WINDOW_SIZE;

/// How the viewer starts.
#[derive(Clone, Debug)]
pub struct ViewerOptions {
    /// Scene: a description (`.toml`), a `.gltf` / `.glb`, or `None` for the toy shop.
    pub scene: Option<PathBuf>,
    /// Window size in physical pixels (default [`DEFAULT_WINDOW_SIZE`]).
    pub size: Option<(u32, u32)>,
    /// Scripted run: render this many frames once the scene is ready, then exit.
    pub frames: Option<u32>,
    /// Scripted run: save the last frame (with the overlay) to this PNG.
    pub screenshot: Option<PathBuf>,
    /// Play this camera path from the start.
    pub camera_path: Option<String>,
    /// Scene upload options (missing textures, texture size cap, anisotropy).
    pub upload: UploadOptions,
    /// How packages missing from the cache are made.
    pub recipe: PackageRecipe,
    /// A folder of `<strategy>.ntc` packages to use instead of the cache where present.
    pub packages: Option<PathBuf>,
    /// What the viewer shows first (material source, kernel, passes, heatmap, split,
    /// vsync, render scale — clamped to [`RENDER_SCALE_RANGE`]); the overlay and the keys
    /// edit a copy.
    pub settings: ViewSettings,
    /// The NTC modes whose packages the viewer prepares (the others stay unavailable).
    pub modes: Vec<RenderMode>,
    /// The devices missing packages are compressed on (`--devices`); empty: the
    /// viewer's own device.
    pub train_devices: Vec<GpuContext>,
}

impl Default for ViewerOptions {
    fn default() -> Self {
        Self {
            scene: None,
            size: None,
            frames: None,
            screenshot: None,
            camera_path: None,
            upload: UploadOptions::default(),
            recipe: PackageRecipe::default(),
            packages: None,
            settings: ViewSettings::default(),
            modes: RenderMode::ALL.to_vec(),
            train_devices: Vec::new(),
        }
    }
}

/// Why the viewer could not run (or a scripted run failed).
#[derive(Debug, thiserror::Error)]
pub enum ViewerError {
    /// No window system to open a window on.
    #[error(
        "cannot open a window: {0}. The viewer needs a display: X11 (DISPLAY) or Wayland \
         (WAYLAND_DISPLAY); without a screen run it under Xvfb (`apt-get install xvfb`, then \
         `Xvfb :99 & DISPLAY=:99 neurotex view`), or use `neurotex render` for headless frames"
    )]
    Display(String),
    /// The window has no wgpu surface.
    #[error(
        "cannot create a wgpu surface for the window: {0}. The viewer needs a Vulkan, Metal \
         or DX12 driver; on Debian/Ubuntu without a GPU install the software Vulkan driver \
         with `apt-get install mesa-vulkan-drivers libvulkan1`"
    )]
    Surface(String),
    /// The surface offers no 8-bit RGBA/BGRA format.
    #[error(
        "the window surface offers no 8-bit RGBA or BGRA format (offered: {0}); the viewer \
         needs one (try another backend with WGPU_BACKEND=vulkan)"
    )]
    NoFormat(String),
    /// Adapter or device creation failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A scripted run's scene failed to load.
    #[error("the scene failed to load: {0}")]
    Scene(String),
    /// The GPU device was lost (driver reset, GPU removed or switched off).
    #[error(
        "the GPU device was lost ({0}); the viewer cannot continue without it — restart it \
         (on a machine with several GPUs, check that the one in use was not switched off)"
    )]
    DeviceLost(String),
    /// The window's surface was lost and could not be recreated.
    #[error("the window surface was lost and could not be recreated: {0}")]
    SurfaceLost(String),
    /// Writing a screenshot failed.
    #[error("screenshot {path}: {reason}")]
    Screenshot {
        /// The PNG.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// Opens the window and runs the viewer until it is closed (or a scripted run ends).
pub fn run(options: ViewerOptions) -> Result<(), ViewerError> {
    let event_loop = EventLoop::new().map_err(|e| ViewerError::Display(e.to_string()))?;
    let mut app = App {
        options,
        viewer: None,
        outcome: Ok(()),
    };
    event_loop
        .run_app(&mut app)
        .map_err(|e| ViewerError::Display(e.to_string()))?;
    app.outcome
}

/// The winit application: creates the [`Viewer`] on `resumed`, forwards events to it.
struct App {
    options: ViewerOptions,
    viewer: Option<Viewer>,
    outcome: Result<(), ViewerError>,
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.viewer.is_some() {
            return;
        }
        match Viewer::new(event_loop, self.options.clone()) {
            Ok(v) => self.viewer = Some(v),
            Err(e) => {
                self.outcome = Err(e);
                event_loop.exit();
            }
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        let Some(viewer) = self.viewer.as_mut() else {
            return;
        };
        match viewer.window_event(event) {
            Flow::Continue => {}
            Flow::Exit(result) => {
                if viewer.options.frames.is_none() {
                    persist::save_ui_state(&viewer.egui_ctx, &persist::ui_state_path());
                }
                self.outcome = result;
                event_loop.exit();
            }
        }
    }

    fn about_to_wait(&mut self, _event_loop: &ActiveEventLoop) {
        if let Some(v) = &self.viewer {
            v.window.request_redraw();
        }
    }
}

/// Whether the event loop goes on.
enum Flow {
    Continue,
    Exit(Result<(), ViewerError>),
}

/// A scene ready to draw.
struct LoadedScene {
    /// The file it came from (`None`: built-in).
    source: Option<PathBuf>,
    opened: OpenedScene,
    renderer: Renderer,
    stats: SceneStats,
    /// The camera `R` returns to.
    start: Camera,
    /// Pivot distance of `start`.
    focus: f32,
    /// The scene's NTC packages being loaded or made: started when an NTC mode is first
    /// chosen, so a session that stays on the reference costs no compression.
    packages: Option<PackageJobs>,
    /// The decoded texture sets, kept until the package jobs start and take them, so that
    /// a package compressed in the background trains on the sets the renderer uploaded
    /// instead of decoding the images again.
    textures: Option<Arc<SceneTextures>>,
    /// The split comparison's targets and passes, built when it is first shown.
    split: Option<SplitView>,
}

/// The overlay's status line: the last event worth a word (a saved file, a failure, a
/// mode switch). [`StatusLine::set`] is its one writer, and also logs it, so that
/// scripted runs keep it.
#[derive(Debug, Default)]
struct StatusLine(String);

impl StatusLine {
    fn set(&mut self, message: impl Into<String>) {
        let message = message.into();
        log::info!("{message}");
        self.0 = message;
    }

    fn as_str(&self) -> &str {
        &self.0
    }
}

/// Frame pacing and the frame-time history.
#[derive(Debug)]
struct FrameClock {
    perf: PerfHistory,
    last_frame: Instant,
    /// Time the last frame spent waiting for a surface texture or a screenshot readback.
    waited: std::time::Duration,
    /// Frames rendered since the scene became ready (scripted runs stop at `--frames`).
    frames_done: u32,
}

impl FrameClock {
    fn new() -> Self {
        Self {
            perf: PerfHistory::default(),
            last_frame: Instant::now(),
            waited: std::time::Duration::ZERO,
            frames_done: 0,
        }
    }
}

/// Screenshots and traces asked for: the next screenshot's path and the numbers of the
/// next files.
#[derive(Debug)]
struct Captures {
    screenshot: Option<PathBuf>,
    screenshot_counter: u32,
    trace_counter: u32,
}

impl Default for Captures {
    fn default() -> Self {
        Self {
            screenshot: None,
            screenshot_counter: 1,
            trace_counter: 1,
        }
    }
}

/// Everything the running viewer holds.
struct Viewer {
    options: ViewerOptions,
    // Field order = drop order: the surface goes before the window it draws into.
    presenter: Presenter,
    ctx: GpuContext,
    window: Arc<Window>,
    egui_ctx: egui::Context,
    egui_state: egui_winit::State,
    painter: OverlayPainter,
    profiler: GpuProfiler,

    scene: Option<LoadedScene>,
    loading: Option<Loading>,
    scene_error: Option<String>,
    initial_error: Option<String>,

    settings: ViewSettings,
    camera: CameraState,
    input: InputState,
    cursor: Option<(f64, f64)>,
    path_state: PathState,
    clock: FrameClock,
    /// Set by wgpu's device-lost callback (reason and message); the next frame exits.
    device_lost: Arc<std::sync::Mutex<Option<String>>>,
    /// Consecutive failures to recreate a lost surface.
    surface_failures: u32,
    status: StatusLine,
    captures: Captures,
    ntc: NtcInfo,
    /// Measure the PSNR of the next frame.
    psnr_request: bool,
    /// The lighting of the last frame: a change restarts the accumulation.
    last_lighting: Option<crate::scene::Lighting>,
}

impl Viewer {
    fn new(event_loop: &ActiveEventLoop, options: ViewerOptions) -> Result<Self, ViewerError> {
        let (w, h) = options.size.unwrap_or(DEFAULT_WINDOW_SIZE);
        let title = format!("neurotex — {}", scene_name(options.scene.as_deref()));
        let window = event_loop
            .create_window(
                Window::default_attributes()
                    .with_title(title)
                    .with_inner_size(PhysicalSize::new(w, h)),
            )
            .map_err(|e| ViewerError::Display(e.to_string()))?;
        let window = Arc::new(window);
        let instance = wgpu::Instance::new(
            GpuContext::instance_descriptor().with_display_handle(Box::new(window.clone())),
        );
        let surface = instance
            .create_surface(window.clone())
            .map_err(|e| ViewerError::Surface(e.to_string()))?;
        let ctx = GpuContext::for_surface(instance, &surface)?;
        let device_lost = Arc::new(std::sync::Mutex::new(None));
        let slot = Arc::clone(&device_lost);
        ctx.device.set_device_lost_callback(move |reason, message| {
            log::error!("GPU device lost ({reason:?}): {message}");
            if let Ok(mut s) = slot.lock() {
                *s = Some(format!("{reason:?}: {message}"));
            }
        });
        let presenter = Presenter::new(surface, &ctx, window.inner_size(), options.settings.vsync)?;
        let formats = presenter.formats;

        let egui_ctx = egui::Context::default();
        // The remembered layout first: its memory carries egui's options, which the
        // overlay's style then replaces. Scripted runs start from the defaults.
        if options.frames.is_none() {
            persist::load_ui_state(&egui_ctx, &persist::ui_state_path());
        }
        ui::install_style(&egui_ctx);
        let max_texture_side = ctx.device.limits().max_texture_dimension_2d as usize;
        let egui_state = egui_winit::State::new(
            egui_ctx.clone(),
            egui::ViewportId::ROOT,
            &window,
            Some(window.scale_factor() as f32),
            window.theme(),
            Some(max_texture_side),
        );
        let painter = OverlayPainter::new(&ctx, formats.overlay);
        let profiler = GpuProfiler::new(&ctx);
        let mut settings = options.settings.clone();
        settings.render_scale = settings
            .render_scale
            .clamp(*RENDER_SCALE_RANGE.start(), *RENDER_SCALE_RANGE.end());
        let placeholder = Camera::framing(&Aabb {
            min: glam::Vec3::splat(-1.0),
            max: glam::Vec3::splat(1.0),
        });
        let mut viewer = Self {
            options,
            presenter,
            ctx,
            window,
            egui_ctx,
            egui_state,
            painter,
            profiler,
            scene: None,
            loading: None,
            scene_error: None,
            initial_error: None,
            settings,
            camera: CameraState::from_camera(&placeholder, 1.0, 2.0),
            input: InputState::default(),
            cursor: None,
            path_state: PathState::default(),
            clock: FrameClock::new(),
            device_lost,
            surface_failures: 0,
            status: StatusLine::default(),
            captures: Captures::default(),
            ntc: NtcInfo::default(),
            psnr_request: false,
            last_lighting: None,
        };
        viewer.start_load(true);
        Ok(viewer)
    }

    /// What the next frame renders.
    fn frame_settings(&self) -> FrameSettings {
        let s = &self.settings;
        let mut passes = s.passes;
        passes.heatmap = s.show_heatmap.then(|| heatmap_settings(s.heatmap_source));
        passes.compare =
            self.psnr_request || (s.show_heatmap && s.heatmap_source == HeatmapSource::Error);
        FrameSettings {
            camera: self.camera.camera(),
            lighting: s.lighting,
            aov: s.aov,
            mode: s.mode,
            passes,
        }
    }

    /// Whether the chosen mode (and the split's right side) renders as chosen (or its
    /// package failed): scripted runs count frames only then.
    fn mode_settled(&self) -> bool {
        let Some(scene) = &self.scene else {
            return true;
        };
        let right = self.settings.compare.split().map(|s| s.right.mode);
        [Some(self.settings.mode), right]
            .into_iter()
            .flatten()
            .all(|mode| {
                scene.renderer.has_mode(mode)
                    || scene
                        .packages
                        .as_ref()
                        .is_some_and(|p| matches!(p.status(mode), PackageStatus::Failed(_)))
            })
    }

    /// Hands finished packages to the renderer and refreshes the NTC overlay facts.
    fn poll_packages(&mut self) {
        let settings = self.frame_settings();
        let Some(scene) = &mut self.scene else {
            self.ntc = NtcInfo::default();
            return;
        };
        let right = self.settings.compare.split().map(|s| s.right.mode);
        if scene.packages.is_none()
            && (self.settings.mode.is_ntc() || right.is_some_and(RenderMode::is_ntc))
            && let Some(textures) = scene.textures.take()
        {
            // The chosen modes first, then the others in order.
            let mut modes = self.options.modes.clone();
            modes.sort_by_key(|m| *m != self.settings.mode && Some(*m) != right);
            let devices = if self.options.train_devices.is_empty() {
                vec![self.ctx.clone()]
            } else {
                self.options.train_devices.clone()
            };
            // The scene as named (a description's `asset_folders` admit its glTF's URIs).
            let arg = scene
                .source
                .clone()
                .unwrap_or_else(|| scene.opened.scene.source.clone());
            scene.packages = Some(PackageJobs::start(
                devices,
                arg.clone(),
                textures,
                PackageRecipe {
                    max_texture_size: self.options.upload.max_texture_size,
                    ..self.options.recipe.clone()
                },
                self.options.packages.clone(),
                &modes,
                modes
                    .contains(&RenderMode::Ntc(Strategy::DivergenceAware))
                    .then(|| (Arc::new(scene.opened.clone()), arg)),
            ));
        }
        let ready = scene
            .packages
            .as_mut()
            .map_or_else(Vec::new, PackageJobs::poll);
        for ready in ready {
            if let Err(e) = scene.renderer.set_package(
                &self.ctx,
                ready.mode,
                ready.package,
                &ready.material_map,
            ) {
                self.status
                    .set(format!("{} package failed: {e}", ready.mode));
            }
        }
        if let Err(e) = scene
            .renderer
            .set_kernel_choice(&self.ctx, self.settings.ntc)
        {
            self.status.set(e.to_string());
            self.settings.ntc = KernelChoice {
                kernel: scene.renderer.kernel(),
                tile: scene.renderer.tile(),
            };
        }
        if let Some(d) = scene.renderer.try_divergence(&self.ctx.device) {
            self.ntc.divergence = Some(d);
        }
        let renderer = &scene.renderer;
        self.ntc.modes = match &scene.packages {
            Some(jobs) => jobs
                .statuses()
                .into_iter()
                .map(|(mode, status)| (mode, status.describe(), renderer.has_mode(mode)))
                .collect(),
            None => self
                .options
                .modes
                .iter()
                .filter(|m| m.is_ntc())
                .map(|&m| (m, "choose to prepare".to_string(), false))
                .collect(),
        };
        self.ntc.kernel = renderer.kernel();
        self.ntc.kernels = NtcKernel::ALL
            .into_iter()
            .filter(|k| k.supported(&self.ctx.granted))
            .collect();
        self.ntc.active_mode = renderer.plan(&settings).mode();
        self.ntc.decoders = renderer.decoder_count(self.ntc.active_mode);
        self.ntc.flops_per_pixel = renderer.decode_flops_per_pixel();
        self.ntc.heatmap_range = settings.passes.heatmap.map(|h| (h.lo, h.hi));
    }

    fn apply(&mut self, action: UiAction) {
        match action {
            UiAction::Reload => self.start_load(false),
            UiAction::Screenshot => {
                let dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
                self.captures.screenshot = Some(next_screenshot_path(
                    &dir,
                    &mut self.captures.screenshot_counter,
                ));
            }
            UiAction::ResetCamera => {
                if let Some(s) = &mut self.scene {
                    self.path_state.player.playing = false;
                    self.camera = self.camera.reset(&s.start, s.focus);
                    self.status.set("camera reset");
                    // A camera cut: the history would be reprojected from far away.
                    s.renderer.reset_history();
                }
            }
            UiAction::PlayPath => {
                if self.path_state.selected.is_none() && !self.paths().is_empty() {
                    self.path_state.selected = Some(0);
                }
                if self.path_state.selected.is_some() {
                    self.path_state.player.time = 0.0;
                    self.path_state.player.playing = true;
                    if let Some(s) = &mut self.scene {
                        s.renderer.reset_history();
                    }
                }
            }
            UiAction::ToggleRecording => self.toggle_recording(),
            UiAction::SaveRecording => self.save_recordings(),
            UiAction::DismissError => self.scene_error = None,
            UiAction::MeasurePsnr => self.psnr_request = true,
        }
    }

    /// F8: start recording a Chrome trace of the GPU passes, or write the one being
    /// recorded to the next free `trace-<n>.json` in the working directory.
    fn toggle_trace(&mut self) {
        if !self.profiler.is_enabled() {
            self.status
                .set("no GPU timestamps on this adapter: nothing to trace");
            return;
        }
        if !self.profiler.is_tracing() {
            self.profiler.start_trace();
            self.status.set(format!(
                "tracing the GPU passes: {} saves the trace",
                keys_of(Action::ToggleTrace)
            ));
            return;
        }
        let dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let path = next_free_path(&dir, "trace", "json", &mut self.captures.trace_counter);
        self.status.set(match self.profiler.write_trace(&path) {
            Ok(scopes) => {
                log::info!("GPU trace: {} ({scopes} timed passes)", path.display());
                format!("saved {} ({scopes} timed passes)", path.display())
            }
            Err(e) => {
                log::error!("{e}");
                e.to_string()
            }
        });
    }

    fn window_event(&mut self, event: WindowEvent) -> Flow {
        // Keys go to egui only while a text field is being edited; otherwise they are
        // shortcuts (egui would move its focus with Tab and click focused buttons with
        // Space, and a focused widget would swallow every later shortcut).
        let typing = self.egui_ctx.text_edit_focused();
        let keyboard = matches!(
            event,
            WindowEvent::KeyboardInput { .. } | WindowEvent::Ime(_)
        );
        if typing || !keyboard {
            let response = self.egui_state.on_window_event(&self.window, &event);
            if response.repaint {
                self.window.request_redraw();
            }
        }
        match event {
            WindowEvent::CloseRequested => Flow::Exit(Ok(())),
            WindowEvent::Resized(size) => {
                self.resize(size);
                Flow::Continue
            }
            WindowEvent::RedrawRequested => self.redraw(),
            other => self.input_event(other, typing),
        }
    }

    fn redraw(&mut self) -> Flow {
        if let Some(reason) = self.device_lost.lock().ok().and_then(|l| l.clone()) {
            return Flow::Exit(Err(ViewerError::DeviceLost(reason)));
        }
        let started = Instant::now();
        let frame_ms = (started - self.clock.last_frame).as_secs_f64() * 1e3;
        let dt = (started - self.clock.last_frame).as_secs_f32().min(1.0);
        self.clock.last_frame = started;

        self.poll_loading();
        self.poll_packages();
        self.update_camera(dt);
        if let Some(t) = self.profiler.try_collect(&self.ctx) {
            self.clock.perf.push_gpu(t);
        }

        // The overlay.
        let raw_input = self.egui_state.take_egui_input(&self.window);
        let path_time = self.path_state.player.time;
        let mut actions = Vec::new();
        let mut output = {
            let path_names: Vec<String> = self.paths().iter().map(|p| p.name.clone()).collect();
            let path_duration = self.selected().map_or(0.0, CameraPath::duration);
            let adapter = self.ctx.describe();
            let info = OverlayInfo {
                adapter: &adapter,
                features: self.ctx.granted,
                scene: self.scene.as_ref().map(|s| &s.stats),
                loading: self.loading.as_ref().map(|l| l.what.as_str()),
                error: self.scene_error.as_deref(),
                perf: &self.clock.perf,
                path_names: &path_names,
                path_duration,
                recording: self.path_state.recorder.as_ref(),
                can_save_recording: self.path_state.unsaved,
                status: self.status.as_str(),
                surface_size: self.surface_size(),
                render_size: self.scene.as_ref().map(|s| s.renderer.size()),
                present_mode: self.presenter.config.present_mode,
                vsync_off_supported: self.presenter.vsync_off_mode().is_some(),
                gpu_errors: self.ctx.uncaptured_error_count(),
                ntc: &self.ntc,
            };
            let (settings, camera, player, selected) = (
                &mut self.settings,
                &mut self.camera,
                &mut self.path_state.player,
                &mut self.path_state.selected,
            );
            self.egui_ctx.run_ui(raw_input, |ui| {
                (actions, _) = ui::show(
                    ui,
                    &info,
                    OverlayControls {
                        settings: &mut *settings,
                        camera: &mut *camera,
                        player: &mut *player,
                        selected_path: &mut *selected,
                    },
                );
            })
        };
        self.egui_state
            .handle_platform_output(&self.window, std::mem::take(&mut output.platform_output));
        self.painter
            .begin_frame(&self.ctx, &mut output.textures_delta);
        for action in actions {
            self.apply(action);
        }
        if self.path_state.player.time != path_time && !self.path_state.player.playing {
            self.follow_path();
        }
        self.sync_settings();
        if self.last_lighting != Some(self.settings.lighting) {
            // Static pixels are never clipped, so old lighting would fade out slowly.
            if let Some(scene) = &mut self.scene {
                scene.renderer.reset_history();
            }
            self.last_lighting = Some(self.settings.lighting);
        }

        // Scripted runs count frames once the first load has finished.
        let ready = self.loading.is_none() && self.mode_settled();
        let scripted_last = ready
            && self
                .options
                .frames
                .is_some_and(|n| self.clock.frames_done + 1 >= n);
        let screenshot = if scripted_last {
            self.options.screenshot.clone()
        } else {
            self.captures.screenshot.take()
        };
        let rendered = self.render(
            output.shapes,
            output.pixels_per_point,
            screenshot.as_deref(),
        );
        self.painter.end_frame();
        let cpu_ms = started
            .elapsed()
            .saturating_sub(self.clock.waited)
            .as_secs_f64()
            * 1e3;
        self.clock.perf.push_frame(frame_ms, cpu_ms);

        match rendered {
            Ok(true) => {
                if let Some(path) = &screenshot {
                    self.status.set(format!("saved {}", path.display()));
                    log::info!("screenshot: {}", path.display());
                }
                if ready && self.options.frames.is_some() {
                    self.clock.frames_done += 1;
                }
            }
            Ok(false) => {
                if let Some(path) = screenshot
                    && !scripted_last
                {
                    // Try again on the next presented frame.
                    self.captures.screenshot = Some(path);
                }
            }
            Err(e) => {
                if self.options.frames.is_some()
                    || matches!(e, ViewerError::SurfaceLost(_) | ViewerError::DeviceLost(_))
                {
                    return Flow::Exit(Err(e));
                }
                self.status.set(e.to_string());
                log::error!("{e}");
            }
        }
        if scripted_last
            && self
                .options
                .frames
                .is_some_and(|n| self.clock.frames_done >= n)
        {
            return Flow::Exit(match &self.initial_error {
                Some(e) => Err(ViewerError::Scene(e.clone())),
                None => Ok(()),
            });
        }
        Flow::Continue
    }

    /// Renders and presents one frame; returns whether a frame was presented (false: the
    /// surface was unavailable and the frame skipped). With `screenshot`, saves the frame
    /// including the overlay to that PNG.
    fn render(
        &mut self,
        shapes: Vec<egui::epaint::ClippedShape>,
        pixels_per_point: f32,
        screenshot: Option<&Path>,
    ) -> Result<bool, ViewerError> {
        let Some(frame) = self.acquire_frame()? else {
            return Ok(false);
        };
        let (w, h) = (frame.texture.width(), frame.texture.height());
        let formats = self.presenter.formats;
        let view_formats = formats.view_formats();
        // Screenshots without COPY_SRC on the surface render into an offscreen texture.
        let offscreen = (screenshot.is_some() && !self.presenter.copy_src).then(|| {
            self.ctx.device.create_texture(&wgpu::TextureDescriptor {
                view_formats: &view_formats,
                ..crate::gpu::layout::texture_2d(
                    "viewer.screenshot",
                    (w, h),
                    1,
                    formats.surface,
                    wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
                )
            })
        });
        let target_texture = offscreen.as_ref().unwrap_or(&frame.texture);
        let view = |format| {
            target_texture.create_view(&wgpu::TextureViewDescriptor {
                format: Some(format),
                ..Default::default()
            })
        };
        let (target, overlay_target) = (view(formats.render), view(formats.overlay));

        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("viewer.frame"),
            });
        let settings = self.frame_settings();
        let jobs = self.egui_ctx.tessellate(shapes, pixels_per_point);
        let screen = egui_wgpu::ScreenDescriptor {
            size_in_pixels: [w, h],
            pixels_per_point,
        };
        let split = self.split_settings();
        let (ctx, profiler, painter) = (&self.ctx, &self.profiler, &mut self.painter);
        let scene = &mut self.scene;
        let recorded = ctx.error_scope(|| {
            let outcome = match scene {
                Some(s) => Some(compare::record_scene(
                    s,
                    ctx,
                    &mut encoder,
                    &target,
                    &settings,
                    split.as_ref(),
                    formats.surface,
                    profiler,
                )),
                None => {
                    clear(&mut encoder, &target);
                    None
                }
            };
            let extra = painter.paint(ctx, &mut encoder, &overlay_target, &screen, &jobs);
            (outcome, extra)
        });
        let (outcome, extra) = match recorded {
            Ok(recorded) => recorded,
            Err(e) => {
                // Dropping the encoder and the unpresented surface texture skips the frame.
                log::error!("frame skipped: {e}");
                return Ok(false);
            }
        };
        if let Some(off) = &offscreen
            && self
                .presenter
                .config
                .usage
                .contains(wgpu::TextureUsages::COPY_DST)
        {
            encoder.copy_texture_to_texture(
                off.as_image_copy(),
                frame.texture.as_image_copy(),
                off.size(),
            );
        }
        self.ctx
            .queue
            .submit(extra.into_iter().chain([encoder.finish()]));
        self.profiler.end_frame(&self.ctx);
        if let Some(outcome) = &outcome {
            self.after_frame(outcome);
        }
        if settings.passes.compare && self.psnr_request {
            self.psnr_request = false;
            if let (Some(s), Some(plan)) = (&self.scene, outcome.as_ref().map(|o| &o.plan)) {
                let mode = plan.mode();
                self.ntc.psnr = Some(match s.renderer.psnr_blocking(&self.ctx) {
                    Ok(Some(p)) => format!("{mode}: {p:.2} dB"),
                    Ok(None) => format!("{mode}: identical"),
                    Err(e) => format!("failed: {e}"),
                });
            }
        }

        let reading = Instant::now();
        let saved = match screenshot {
            Some(path) => self.save_screenshot(target_texture, path),
            None => Ok(()),
        };
        self.clock.waited += reading.elapsed();
        if offscreen.is_some()
            && !self
                .presenter
                .config
                .usage
                .contains(wgpu::TextureUsages::COPY_DST)
        {
            // The surface texture was not drawn this frame: drop it unpresented.
            drop(frame);
        } else {
            self.ctx.queue.present(frame);
        }
        if (w, h) != self.surface_size() {
            self.presenter.configure(&self.ctx);
        }
        saved.map(|()| true)
    }
}

/// Clears `target` to the viewer's background (no scene yet).
fn clear(encoder: &mut wgpu::CommandEncoder, target: &wgpu::TextureView) {
    encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("viewer.clear"),
        color_attachments: &[Some(wgpu::RenderPassColorAttachment {
            view: target,
            depth_slice: None,
            resolve_target: None,
            ops: wgpu::Operations {
                load: wgpu::LoadOp::Clear(wgpu::Color {
                    r: 0.02,
                    g: 0.022,
                    b: 0.026,
                    a: 1.0,
                }),
                store: wgpu::StoreOp::Store,
            },
        })],
        depth_stencil_attachment: None,
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    });
}

/// The heatmap of `source`: distinct counts per tile from 1 to 8, or the squared error
/// of sRGB-encoded radiance from 0 to 0.05.
fn heatmap_settings(source: HeatmapSource) -> HeatmapSettings {
    let (lo, hi) = match source {
        HeatmapSource::Error => (0.0, 0.05),
        _ => (1.0, 8.0),
    };
    // The overlay's figures panel draws the scale (the image's right edge lies under it).
    HeatmapSettings {
        source,
        lo,
        hi,
        color_bar: false,
        ..HeatmapSettings::default()
    }
}
