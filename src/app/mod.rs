//! The interactive viewer: a winit window with a wgpu surface, input → camera, the frame
//! loop (renderer + egui overlay), screenshots, camera-path playback and recording.
//!
//! ```text
//! window events ─► InputState ─► camera_control::step ─┐   (or PathPlayer along a path)
//!                └► egui-winit ─► ui::show ─► UiAction  │
//!                                                      ▼
//! surface texture ◄─ overlay (egui-wgpu) ◄─ Renderer::record(internal size = window × scale)
//!        │
//!        └─► queue.present  (F12 / --screenshot: read back first, BGRA → RGBA, PNG)
//! ```
//!
//! Scenes load on a background thread (parse, texture decode, upload), so the window
//! stays responsive; a failed load shows an error panel and keeps the previous scene.
//! Surface loss (minimise, resize to zero, `Lost` / `Outdated`) reconfigures and skips the
//! frame (a surface that cannot be recreated three times in a row ends the viewer with
//! an error); a lost GPU device ends it with the reason at the next frame, never a
//! frozen window; a panic inside the loader thread comes back as its message; wgpu validation errors in a frame are caught with an error scope and logged,
//! never panicking. Scripted runs (`--frames N --screenshot out.png`) render N frames
//! after the scene is ready, save the last one including the overlay, and exit.
//!
//! This module owns the window, the surface and the event loop; it does not draw any
//! panel itself (that is `ui`) and contains no camera rules (that is
//! `scene::camera_control`).

pub mod package_jobs;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Instant;

use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::keyboard::{KeyCode, PhysicalKey};
use winit::window::{Window, WindowId};

use crate::gpu::{GpuContext, GpuError, GpuProfiler, read_texture};
use crate::packages::PackageRecipe;
use crate::render::passes::heatmap::{HeatmapSettings, HeatmapSource};
use crate::render::passes::ntc_decode::NtcKernel;
use crate::render::scene_gpu::UploadOptions;
use crate::render::{Aov, FrameSettings, KernelChoice, PassSettings, RenderMode, Renderer};
use crate::scene::camera_control::{
    self, CameraState, InputState, PATH_SPEED_RANGE, PathPlayer, PathRecorder,
};
use crate::scene::description::{CameraPath, SceneDescription};
use crate::scene::open::{OpenedScene, open, select_camera};
use crate::scene::{Aabb, Camera};
use crate::texture::SceneTextures;
use crate::ui::painter::OverlayPainter;
use crate::ui::timings::PerfHistory;
use crate::ui::{
    self, AOVS, NtcInfo, OverlayControls, OverlayInfo, RENDER_SCALE_RANGE, SceneStats, UiAction,
    ViewSettings,
};
use package_jobs::{PackageJobs, PackageStatus};

/// Window size when neither `--size` nor anything else says.
pub const DEFAULT_WINDOW_SIZE: (u32, u32) = (1280, 720);

/// Longest time step (seconds) the interactive controls integrate over in one frame.
const MAX_CONTROL_STEP: f32 = 0.1;

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
    /// Start with vsync (FIFO presentation).
    pub vsync: bool,
    /// Initial render scale, clamped to [`RENDER_SCALE_RANGE`].
    pub render_scale: f32,
    /// Scene upload options (missing textures, texture size cap, anisotropy).
    pub upload: UploadOptions,
    /// The material source to start with.
    pub mode: RenderMode,
    /// How packages missing from the cache are made.
    pub recipe: PackageRecipe,
    /// A folder of `<strategy>.ntc` packages to use instead of the cache where present.
    pub packages: Option<PathBuf>,
    /// Decode kernel and tile size to start with.
    pub ntc: KernelChoice,
    /// Pass settings to start with (filtering, accumulation, inference on load).
    pub passes: PassSettings,
    /// Start with the divergence heatmap on.
    pub heatmap: bool,
    /// The NTC modes whose packages the viewer prepares (the others stay unavailable).
    pub modes: Vec<RenderMode>,
}

impl Default for ViewerOptions {
    fn default() -> Self {
        Self {
            scene: None,
            size: None,
            frames: None,
            screenshot: None,
            camera_path: None,
            vsync: true,
            render_scale: 1.0,
            upload: UploadOptions::default(),
            mode: RenderMode::Reference,
            recipe: PackageRecipe::default(),
            packages: None,
            ntc: KernelChoice::default(),
            passes: PassSettings::default(),
            heatmap: false,
            modes: RenderMode::ALL.to_vec(),
        }
    }
}

/// Failed surface recreations in a row after which the viewer exits with an error.
const MAX_SURFACE_FAILURES: u32 = 3;

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
}

/// A load running on a background thread.
struct Loading {
    what: String,
    rx: mpsc::Receiver<Result<LoadedScene, String>>,
    /// The first load (applies `--camera-path`, sets the camera).
    initial: bool,
}

/// What the background thread needs.
struct LoadRequest {
    ctx: GpuContext,
    source: Option<PathBuf>,
    upload: UploadOptions,
    size: (u32, u32),
    format: wgpu::TextureFormat,
    camera_path: Option<String>,
}

impl LoadRequest {
    fn load(self) -> Result<LoadedScene, String> {
        let started = Instant::now();
        let opened = open(self.source.as_deref()).map_err(|e| e.to_string())?;
        if let Some(name) = &self.camera_path
            && !opened
                .description
                .camera_paths
                .iter()
                .any(|p| &p.name == name)
        {
            let names: Vec<&str> = opened
                .description
                .camera_paths
                .iter()
                .map(|p| p.name.as_str())
                .collect();
            return Err(format!(
                "no camera path named `{name}` in {} (available: {})",
                scene_name(self.source.as_deref()),
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ));
        }
        let start = select_camera(&opened, None).map_err(|e| e.to_string())?;
        let textures = SceneTextures::load(&opened.scene.materials, &self.upload.load_options())
            .map_err(|e| e.to_string())?;
        let renderer = Renderer::new(
            &self.ctx,
            &opened.scene,
            &textures,
            self.upload.anisotropy,
            self.size,
            self.format,
        )
        .map_err(|e| e.to_string())?;
        let stats = SceneStats::new(
            scene_name(self.source.as_deref()),
            &opened.scene,
            renderer.scene.sets.len(),
            renderer.scene.texture_bytes,
            renderer.scene.missing_textures.len(),
        );
        let focus = camera_control::focus_distance(&start, &opened.scene.bounds);
        log::info!(
            "loaded {} in {:.1} s: {} triangles, {} materials, {} texture sets ({})",
            stats.name,
            started.elapsed().as_secs_f32(),
            stats.triangles,
            stats.materials,
            stats.texture_sets,
            ui::format_bytes(stats.texture_bytes)
        );
        Ok(LoadedScene {
            source: self.source,
            opened,
            renderer,
            stats,
            start,
            focus,
            packages: None,
            textures: Some(Arc::new(textures)),
        })
    }
}

fn scene_name(source: Option<&Path>) -> String {
    source.map_or_else(
        || "toy shop (built-in)".to_owned(),
        |p| {
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        },
    )
}

/// The surface and how it is configured.
struct Presenter {
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    formats: SurfaceFormats,
    present_modes: Vec<wgpu::PresentMode>,
    /// Screenshots read the surface texture directly (else render offscreen).
    copy_src: bool,
    /// The window has a zero-sized client area (minimised).
    minimised: bool,
}

impl Presenter {
    fn configure(&mut self, ctx: &GpuContext) {
        if self.config.width == 0 || self.config.height == 0 {
            self.minimised = true;
            return;
        }
        self.minimised = false;
        self.surface.configure(&ctx.device, &self.config);
    }

    fn vsync_off_mode(&self) -> Option<wgpu::PresentMode> {
        [wgpu::PresentMode::Mailbox, wgpu::PresentMode::Immediate]
            .into_iter()
            .find(|m| self.present_modes.contains(m))
    }

    fn set_vsync(&mut self, ctx: &GpuContext, vsync: bool) {
        let mode = if vsync {
            wgpu::PresentMode::Fifo
        } else {
            self.vsync_off_mode().unwrap_or(wgpu::PresentMode::Fifo)
        };
        if mode != self.config.present_mode {
            self.config.present_mode = mode;
            self.configure(ctx);
        }
    }
}

/// The surface format and the two views a frame is drawn through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SurfaceFormats {
    /// The surface's own format.
    pub surface: wgpu::TextureFormat,
    /// sRGB view the renderer's tonemap pass writes linear values into.
    pub render: wgpu::TextureFormat,
    /// View egui draws into: the non-sRGB twin, because egui blends in gamma space (the
    /// same format as `render` when the backend has no surface view formats).
    pub overlay: wgpu::TextureFormat,
}

impl SurfaceFormats {
    /// The view formats the surface (and an offscreen copy of it) must allow.
    pub fn view_formats(&self) -> Vec<wgpu::TextureFormat> {
        let mut v = Vec::new();
        for f in [self.render, self.overlay] {
            if f != self.surface && !v.contains(&f) {
                v.push(f);
            }
        }
        v
    }
}

/// The formats to use among those the surface `offered`: 8-bit BGRA or RGBA, seen as sRGB
/// by the renderer and as plain UNORM by egui. Without `view_formats` (surface view
/// formats unsupported, e.g. GL) only an sRGB surface format works, and egui draws
/// through it too.
pub fn choose_surface_format(
    offered: &[wgpu::TextureFormat],
    view_formats: bool,
) -> Option<SurfaceFormats> {
    use wgpu::TextureFormat as F;
    let candidates: &[F] = if view_formats {
        &[
            F::Bgra8Unorm,
            F::Rgba8Unorm,
            F::Bgra8UnormSrgb,
            F::Rgba8UnormSrgb,
        ]
    } else {
        &[F::Bgra8UnormSrgb, F::Rgba8UnormSrgb]
    };
    let surface = candidates.iter().copied().find(|f| offered.contains(f))?;
    let render = surface.add_srgb_suffix();
    Some(SurfaceFormats {
        surface,
        render,
        overlay: if view_formats {
            surface.remove_srgb_suffix()
        } else {
            render
        },
    })
}

/// Tightly packed pixels of an 8-bit RGBA or BGRA texture as opaque RGBA8 (screenshots);
/// `None` for other formats.
pub fn to_rgba8(format: wgpu::TextureFormat, bytes: &[u8]) -> Option<Vec<u8>> {
    use wgpu::TextureFormat as F;
    let bgra = match format {
        F::Bgra8Unorm | F::Bgra8UnormSrgb => true,
        F::Rgba8Unorm | F::Rgba8UnormSrgb => false,
        _ => return None,
    };
    Some(
        bytes
            .chunks_exact(4)
            .flat_map(|p| {
                if bgra {
                    [p[2], p[1], p[0], 255]
                } else {
                    [p[0], p[1], p[2], 255]
                }
            })
            .collect(),
    )
}

/// The renderer's internal size for a window of `size` at `scale`.
pub fn scaled_size(size: (u32, u32), scale: f32) -> (u32, u32) {
    let s = scale.clamp(*RENDER_SCALE_RANGE.start(), *RENDER_SCALE_RANGE.end());
    let f = |v: u32| ((v as f32 * s).round() as u32).max(1);
    (f(size.0), f(size.1))
}

/// The first `screenshot-<n>.png` in `dir` that does not exist, from `n = start`.
fn next_screenshot_path(dir: &Path, start: &mut u32) -> PathBuf {
    next_free_path(dir, "screenshot", "png", start)
}

/// The first `<stem>-<n>.<ext>` in `dir` that does not exist, counting from `*start`
/// (which is left past it).
fn next_free_path(dir: &Path, stem: &str, ext: &str, start: &mut u32) -> PathBuf {
    loop {
        let p = dir.join(format!("{stem}-{}.{ext}", *start));
        *start += 1;
        if !p.exists() {
            return p;
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
    player: PathPlayer,
    selected_path: Option<usize>,
    recorder: Option<PathRecorder>,
    /// Paths recorded this session (saved together by F10).
    recordings: Vec<CameraPath>,
    unsaved: bool,

    perf: PerfHistory,
    last_frame: Instant,
    /// Time the last frame spent waiting for a surface texture or a screenshot readback.
    waited: std::time::Duration,
    /// Set by wgpu's device-lost callback (reason and message); the next frame exits.
    device_lost: Arc<std::sync::Mutex<Option<String>>>,
    /// Consecutive failures to recreate a lost surface.
    surface_failures: u32,
    status: String,
    screenshot: Option<PathBuf>,
    screenshot_counter: u32,
    trace_counter: u32,
    frames_done: u32,
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
        let caps = surface.get_capabilities(&ctx.adapter);
        let view_formats_ok = ctx
            .adapter
            .get_downlevel_capabilities()
            .flags
            .contains(wgpu::DownlevelFlags::SURFACE_VIEW_FORMATS);
        let formats = choose_surface_format(&caps.formats, view_formats_ok)
            .ok_or_else(|| ViewerError::NoFormat(format!("{:?}", caps.formats)))?;
        let copy_src = caps.usages.contains(wgpu::TextureUsages::COPY_SRC);
        let mut usage = wgpu::TextureUsages::RENDER_ATTACHMENT;
        if copy_src {
            usage |= wgpu::TextureUsages::COPY_SRC;
        } else if caps.usages.contains(wgpu::TextureUsages::COPY_DST) {
            usage |= wgpu::TextureUsages::COPY_DST;
        }
        let size = window.inner_size();
        let config = wgpu::SurfaceConfiguration {
            usage,
            format: formats.surface,
            color_space: wgpu::SurfaceColorSpace::Auto,
            width: size.width,
            height: size.height,
            present_mode: wgpu::PresentMode::Fifo,
            desired_maximum_frame_latency: 2,
            alpha_mode: caps
                .alpha_modes
                .first()
                .copied()
                .unwrap_or(wgpu::CompositeAlphaMode::Auto),
            view_formats: formats.view_formats(),
        };
        let mut presenter = Presenter {
            surface,
            config,
            formats,
            present_modes: caps.present_modes.clone(),
            copy_src,
            minimised: false,
        };
        presenter.configure(&ctx);
        presenter.set_vsync(&ctx, options.vsync);
        log::info!(
            "surface {:?} (renderer view {:?}, overlay view {:?}), {:?}, {}×{}, screenshots {}",
            formats.surface,
            formats.render,
            formats.overlay,
            presenter.config.present_mode,
            size.width,
            size.height,
            if copy_src {
                "from the surface"
            } else {
                "offscreen"
            }
        );

        let egui_ctx = egui::Context::default();
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
        let settings = ViewSettings {
            aov: Aov::Final,
            lighting: Default::default(),
            vsync: options.vsync,
            render_scale: options
                .render_scale
                .clamp(*RENDER_SCALE_RANGE.start(), *RENDER_SCALE_RANGE.end()),
            show_overlay: true,
            show_help: false,
            mode: options.mode,
            passes: options.passes,
            show_heatmap: options.heatmap,
            heatmap_source: HeatmapSource::Decoders,
            ntc: options.ntc,
        };
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
            player: PathPlayer::default(),
            selected_path: None,
            recorder: None,
            recordings: Vec::new(),
            unsaved: false,
            perf: PerfHistory::default(),
            last_frame: Instant::now(),
            waited: std::time::Duration::ZERO,
            device_lost,
            surface_failures: 0,
            status: String::new(),
            screenshot: None,
            screenshot_counter: 1,
            trace_counter: 1,
            frames_done: 0,
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

    /// Whether the chosen mode renders as chosen (or its package failed): scripted runs
    /// count frames only then.
    fn mode_settled(&self) -> bool {
        let Some(scene) = &self.scene else {
            return true;
        };
        let mode = self.settings.mode;
        scene.renderer.has_mode(mode)
            || scene
                .packages
                .as_ref()
                .is_some_and(|p| matches!(p.status(mode), PackageStatus::Failed(_)))
    }

    /// Hands finished packages to the renderer and refreshes the NTC overlay facts.
    fn poll_packages(&mut self) {
        let settings = self.frame_settings();
        let Some(scene) = &mut self.scene else {
            self.ntc = NtcInfo::default();
            return;
        };
        if scene.packages.is_none()
            && self.settings.mode != RenderMode::Reference
            && let Some(textures) = scene.textures.take()
        {
            // The chosen mode first, then the others in order.
            let mut modes = self.options.modes.clone();
            modes.sort_by_key(|m| *m != self.settings.mode);
            scene.packages = Some(PackageJobs::start(
                self.ctx.clone(),
                scene.opened.scene.source.clone(),
                textures,
                PackageRecipe {
                    max_texture_size: self.options.upload.max_texture_size,
                    ..self.options.recipe.clone()
                },
                self.options.packages.clone(),
                &modes,
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
                log::error!("{} package: {e}", ready.mode);
                self.status = format!("{} package failed: {e}", ready.mode);
            }
        }
        if let Err(e) = scene
            .renderer
            .set_kernel_choice(&self.ctx, self.settings.ntc)
        {
            self.status = e.to_string();
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
        self.ntc.color_bar = settings
            .passes
            .heatmap
            .and_then(|h| renderer.color_bar_rect().map(|r| (r, h.lo, h.hi)));
    }

    fn surface_size(&self) -> (u32, u32) {
        (self.presenter.config.width, self.presenter.config.height)
    }

    fn start_load(&mut self, initial: bool) {
        if self.loading.is_some() {
            return;
        }
        let request = LoadRequest {
            ctx: self.ctx.clone(),
            source: self.options.scene.clone(),
            upload: self.options.upload.clone(),
            size: scaled_size(self.surface_size(), self.settings.render_scale),
            format: self.presenter.formats.render,
            camera_path: if initial {
                self.options.camera_path.clone()
            } else {
                None
            },
        };
        let what = scene_name(request.source.as_deref());
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("scene-load".into())
            .spawn(move || {
                // A panic in a library the load calls becomes its error message.
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| request.load()))
                        .unwrap_or_else(|payload| {
                            Err(format!(
                                "loading failed inside a library: {}",
                                crate::scene::gltf_import::panic_message(payload.as_ref())
                            ))
                        });
                // The receiver may be gone when the window closed meanwhile.
                let _ = tx.send(result);
            });
        match spawned {
            Ok(_) => {
                self.loading = Some(Loading { what, rx, initial });
            }
            Err(e) => self.fail_load(initial, format!("cannot start the loader thread: {e}")),
        }
    }

    fn fail_load(&mut self, initial: bool, message: String) {
        log::error!("scene failed to load: {message}");
        if initial {
            self.initial_error = Some(message.clone());
        } else if self.scene.is_some() {
            self.status = "reload failed; kept the previous scene".into();
        }
        self.scene_error = Some(message);
    }

    /// Installs a finished load, if any.
    fn poll_loading(&mut self) {
        let Some(loading) = &self.loading else {
            return;
        };
        let result = match loading.rx.try_recv() {
            Ok(r) => r,
            Err(mpsc::TryRecvError::Empty) => return,
            Err(mpsc::TryRecvError::Disconnected) => {
                Err("the loader thread ended without a result".into())
            }
        };
        let initial = loading.initial;
        self.loading = None;
        match result {
            Err(message) => self.fail_load(initial, message),
            Ok(mut loaded) => {
                loaded.renderer.resize(
                    &self.ctx.device,
                    scaled_size(self.surface_size(), self.settings.render_scale),
                );
                self.settings.lighting = loaded.opened.description.lighting;
                let speed = camera_control::default_speed(&loaded.opened.scene.bounds);
                if initial {
                    self.camera = CameraState::from_camera(&loaded.start, speed, loaded.focus);
                    if let Some(name) = &self.options.camera_path {
                        self.selected_path = loaded
                            .opened
                            .description
                            .camera_paths
                            .iter()
                            .position(|p| &p.name == name);
                        self.player = PathPlayer {
                            playing: self.selected_path.is_some(),
                            ..PathPlayer::default()
                        };
                    } else if !loaded.opened.description.camera_paths.is_empty() {
                        self.selected_path = Some(0);
                    }
                } else {
                    self.status = format!("reloaded {}", loaded.stats.name);
                }
                self.scene_error = None;
                self.perf.clear();
                self.scene = Some(loaded);
            }
        }
    }

    /// The scene's camera paths followed by this session's recordings.
    fn paths(&self) -> Vec<&CameraPath> {
        self.scene
            .iter()
            .flat_map(|s| s.opened.description.camera_paths.iter())
            .chain(self.recordings.iter())
            .collect()
    }

    fn selected(&self) -> Option<&CameraPath> {
        self.selected_path
            .and_then(|i| self.paths().get(i).copied())
    }

    fn follow_path(&mut self) {
        if let Some(cam) = self.selected().and_then(|p| self.player.camera(p)) {
            let mode = self.camera.mode;
            self.camera = CameraState {
                mode,
                ..CameraState::from_camera(&cam, self.camera.speed, self.camera.distance)
            };
        }
    }

    /// Moves the camera for a frame `dt` seconds after the previous one: along the path
    /// in real time, or by the input (with `dt` capped at [`MAX_CONTROL_STEP`] so a hitch
    /// never throws the camera through a wall).
    fn update_camera(&mut self, dt: f32) {
        let duration = self.selected().map(CameraPath::duration);
        match duration {
            Some(duration) if self.player.playing => {
                self.player.advance(duration, dt);
                self.follow_path();
            }
            _ => {
                self.player.playing = false;
                self.camera =
                    camera_control::step(&self.camera, &self.input, dt.min(MAX_CONTROL_STEP));
            }
        }
        self.input.end_frame();
        if let Some(rec) = &mut self.recorder {
            rec.advance(&self.camera.camera(), dt);
        }
    }

    fn apply(&mut self, action: UiAction) {
        match action {
            UiAction::Reload => self.start_load(false),
            UiAction::Screenshot => {
                let dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
                self.screenshot = Some(next_screenshot_path(&dir, &mut self.screenshot_counter));
            }
            UiAction::ResetCamera => {
                if let Some(s) = &mut self.scene {
                    self.player.playing = false;
                    self.camera = self.camera.reset(&s.start, s.focus);
                    self.status = "camera reset".into();
                    // A camera cut: the history would be reprojected from far away.
                    s.renderer.reset_history();
                }
            }
            UiAction::PlayPath => {
                if self.selected_path.is_none() && !self.paths().is_empty() {
                    self.selected_path = Some(0);
                }
                if self.selected_path.is_some() {
                    self.player.time = 0.0;
                    self.player.playing = true;
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
            self.status = "no GPU timestamps on this adapter: nothing to trace".into();
            return;
        }
        if !self.profiler.is_tracing() {
            self.profiler.start_trace();
            self.status = "tracing the GPU passes: F8 saves the trace".into();
            return;
        }
        let dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let path = next_free_path(&dir, "trace", "json", &mut self.trace_counter);
        self.status = match self.profiler.write_trace(&path) {
            Ok(scopes) => {
                log::info!("GPU trace: {} ({scopes} timed passes)", path.display());
                format!("saved {} ({scopes} timed passes)", path.display())
            }
            Err(e) => {
                log::error!("{e}");
                e.to_string()
            }
        };
    }

    fn toggle_recording(&mut self) {
        match self.recorder.take() {
            None => {
                self.player.playing = false;
                self.recorder = Some(PathRecorder::new(&self.camera.camera()));
                self.status = "recording: fly around, F9 stops".into();
            }
            Some(rec) => {
                let seconds = rec.elapsed();
                let taken: Vec<CameraPath> = self.paths().into_iter().cloned().collect();
                let name = camera_control::unique_path_name(&taken, "recorded");
                match rec.finish(name) {
                    Some(path) => {
                        self.status = format!(
                            "recorded `{}`: {} keys, {seconds:.1} s — F10 saves",
                            path.name,
                            path.keys.len()
                        );
                        self.recordings.push(path);
                        self.selected_path = Some(self.paths().len() - 1);
                        self.player = PathPlayer {
                            looping: self.player.looping,
                            speed: self.player.speed,
                            ..PathPlayer::default()
                        };
                        self.unsaved = true;
                    }
                    None => self.status = "recording too short (under 0.5 s); nothing kept".into(),
                }
            }
        }
    }

    fn save_recordings(&mut self) {
        let Some(scene) = &self.scene else {
            return;
        };
        if self.recordings.is_empty() {
            self.status = "nothing recorded yet (F9 records)".into();
            return;
        }
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let description: &SceneDescription = &scene.opened.description;
        match camera_control::save_recording(
            scene.source.as_deref(),
            description,
            self.recordings.clone(),
            &cwd,
        ) {
            Ok(path) => {
                self.status = format!("saved {}", path.display());
                log::info!("saved the recorded camera paths into {}", path.display());
                self.unsaved = false;
            }
            Err(e) => {
                self.status = format!("saving failed: {e}");
                log::error!("saving the recording failed: {e}");
            }
        }
    }

    fn on_key(&mut self, code: KeyCode, pressed: bool, repeat: bool) -> bool {
        let held = match code {
            KeyCode::KeyW => Some(&mut self.input.forward),
            KeyCode::KeyS => Some(&mut self.input.back),
            KeyCode::KeyA => Some(&mut self.input.left),
            KeyCode::KeyD => Some(&mut self.input.right),
            KeyCode::KeyQ => Some(&mut self.input.down),
            KeyCode::KeyE => Some(&mut self.input.up),
            _ => None,
        };
        if let Some(flag) = held {
            *flag = pressed;
            return false;
        }
        if !pressed || repeat {
            return false;
        }
        let s = &mut self.settings;
        match code {
            KeyCode::Escape => return true,
            KeyCode::F1 => s.show_overlay = !s.show_overlay,
            KeyCode::F2 => s.show_help = !s.show_help,
            KeyCode::F5 => self.apply(UiAction::Reload),
            KeyCode::F12 => self.apply(UiAction::Screenshot),
            KeyCode::F8 => self.toggle_trace(),
            KeyCode::F9 => self.apply(UiAction::ToggleRecording),
            KeyCode::F10 => self.apply(UiAction::SaveRecording),
            KeyCode::KeyR => self.apply(UiAction::ResetCamera),
            KeyCode::KeyP => self.apply(UiAction::PlayPath),
            KeyCode::Tab => self.camera.mode = self.camera.mode.toggled(),
            KeyCode::Space => {
                if self.selected_path.is_some() {
                    self.player.playing = !self.player.playing;
                }
            }
            KeyCode::KeyL => self.player.looping = !self.player.looping,
            KeyCode::BracketLeft | KeyCode::BracketRight => {
                let f = if code == KeyCode::BracketLeft {
                    0.5
                } else {
                    2.0
                };
                self.player.speed = (self.player.speed * f)
                    .clamp(*PATH_SPEED_RANGE.start(), *PATH_SPEED_RANGE.end());
                self.status = format!("path speed {}×", self.player.speed);
            }
            KeyCode::KeyC => {
                let n = self.paths().len();
                if n > 0 {
                    self.selected_path = Some(self.selected_path.map_or(0, |i| (i + 1) % n));
                    self.player.time = 0.0;
                    self.follow_path();
                }
            }
            KeyCode::Minus | KeyCode::Equal => {
                let d = if code == KeyCode::Minus { -0.25 } else { 0.25 };
                s.render_scale = (s.render_scale + d)
                    .clamp(*RENDER_SCALE_RANGE.start(), *RENDER_SCALE_RANGE.end());
            }
            KeyCode::KeyV => s.vsync = !s.vsync,
            KeyCode::KeyM => {
                let i = RenderMode::ALL
                    .iter()
                    .position(|m| *m == s.mode)
                    .unwrap_or(0);
                s.mode = RenderMode::ALL[(i + 1) % RenderMode::ALL.len()];
                self.status = format!("mode {}", s.mode);
            }
            KeyCode::KeyH => s.show_heatmap = !s.show_heatmap,
            KeyCode::KeyT => s.passes.temporal.enabled = !s.passes.temporal.enabled,
            KeyCode::KeyF => s.passes.decode.stochastic = !s.passes.decode.stochastic,
            KeyCode::KeyB => s.passes.inference_on_load = !s.passes.inference_on_load,
            KeyCode::KeyX => self.apply(UiAction::MeasurePsnr),
            _ => {
                let digits = [
                    KeyCode::Digit1,
                    KeyCode::Digit2,
                    KeyCode::Digit3,
                    KeyCode::Digit4,
                    KeyCode::Digit5,
                    KeyCode::Digit6,
                    KeyCode::Digit7,
                    KeyCode::Digit8,
                ];
                if let Some(i) = digits.iter().position(|&d| d == code) {
                    s.aov = AOVS[i].0;
                }
            }
        }
        false
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
            WindowEvent::CloseRequested => return Flow::Exit(Ok(())),
            WindowEvent::Resized(size) => self.resize(size),
            WindowEvent::RedrawRequested => return self.redraw(),
            WindowEvent::Focused(false) => self.input.release_all(),
            WindowEvent::ModifiersChanged(m) => self.input.fast = m.state().shift_key(),
            WindowEvent::KeyboardInput { event, .. } => {
                if let PhysicalKey::Code(code) = event.physical_key {
                    let pressed = event.state == ElementState::Pressed;
                    // Releases always count, so that no movement key sticks.
                    if (!pressed || !typing) && self.on_key(code, pressed, event.repeat) {
                        return Flow::Exit(Ok(()));
                    }
                }
            }
            WindowEvent::MouseInput { state, button, .. } => {
                let pressed = state == ElementState::Pressed;
                let free = !pressed || !self.egui_ctx.is_pointer_over_egui();
                match button {
                    MouseButton::Right if free => self.input.look = pressed,
                    MouseButton::Left if free => self.input.drag = pressed,
                    _ => {}
                }
            }
            WindowEvent::CursorMoved { position, .. } => {
                if let Some((x, y)) = self.cursor
                    && (self.input.look || self.input.drag)
                {
                    self.input.mouse_delta +=
                        glam::Vec2::new((position.x - x) as f32, (position.y - y) as f32);
                }
                self.cursor = Some((position.x, position.y));
            }
            WindowEvent::CursorLeft { .. } => self.cursor = None,
            WindowEvent::MouseWheel { delta, .. } if !self.egui_ctx.is_pointer_over_egui() => {
                self.input.wheel += match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => (p.y / 40.0) as f32,
                };
            }
            _ => {}
        }
        Flow::Continue
    }

    fn resize(&mut self, size: PhysicalSize<u32>) {
        self.presenter.config.width = size.width;
        self.presenter.config.height = size.height;
        self.presenter.configure(&self.ctx);
    }

    /// Keeps the renderer's size and the present mode in step with the settings.
    fn sync_settings(&mut self) {
        if self.presenter.minimised {
            return;
        }
        let internal = scaled_size(self.surface_size(), self.settings.render_scale);
        if let Some(scene) = &mut self.scene
            && scene.renderer.size() != internal
        {
            scene.renderer.resize(&self.ctx.device, internal);
        }
        self.presenter.set_vsync(&self.ctx, self.settings.vsync);
        if !self.settings.vsync && self.presenter.vsync_off_mode().is_none() {
            self.settings.vsync = true;
        }
    }

    fn redraw(&mut self) -> Flow {
        if let Some(reason) = self.device_lost.lock().ok().and_then(|l| l.clone()) {
            return Flow::Exit(Err(ViewerError::DeviceLost(reason)));
        }
        let started = Instant::now();
        let frame_ms = (started - self.last_frame).as_secs_f64() * 1e3;
        let dt = (started - self.last_frame).as_secs_f32().min(1.0);
        self.last_frame = started;

        self.poll_loading();
        self.poll_packages();
        self.update_camera(dt);
        if let Some(t) = self.profiler.try_collect(&self.ctx) {
            self.perf.push_gpu(t);
        }

        // The overlay.
        let raw_input = self.egui_state.take_egui_input(&self.window);
        let path_time = self.player.time;
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
                perf: &self.perf,
                path_names: &path_names,
                path_duration,
                recording: self.recorder.as_ref(),
                can_save_recording: self.unsaved,
                status: &self.status,
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
                &mut self.player,
                &mut self.selected_path,
            );
            self.egui_ctx.run_ui(raw_input, |ui| {
                actions = ui::show(
                    ui.ctx(),
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
        if self.player.time != path_time && !self.player.playing {
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
                .is_some_and(|n| self.frames_done + 1 >= n);
        let screenshot = if scripted_last {
            self.options.screenshot.clone()
        } else {
            self.screenshot.take()
        };
        let rendered = self.render(
            output.shapes,
            output.pixels_per_point,
            screenshot.as_deref(),
        );
        self.painter.end_frame();
        let cpu_ms = started.elapsed().saturating_sub(self.waited).as_secs_f64() * 1e3;
        self.perf.push_frame(frame_ms, cpu_ms);

        match rendered {
            Ok(true) => {
                if let Some(path) = &screenshot {
                    self.status = format!("saved {}", path.display());
                    log::info!("screenshot: {}", path.display());
                }
                if ready && self.options.frames.is_some() {
                    self.frames_done += 1;
                }
            }
            Ok(false) => {
                if let Some(path) = screenshot
                    && !scripted_last
                {
                    // Try again on the next presented frame.
                    self.screenshot = Some(path);
                }
            }
            Err(e) => {
                if self.options.frames.is_some()
                    || matches!(e, ViewerError::SurfaceLost(_) | ViewerError::DeviceLost(_))
                {
                    return Flow::Exit(Err(e));
                }
                self.status = e.to_string();
                log::error!("{e}");
            }
        }
        if scripted_last && self.options.frames.is_some_and(|n| self.frames_done >= n) {
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
        if self.presenter.minimised {
            return Ok(false);
        }
        let acquiring = Instant::now();
        let acquired = self.presenter.surface.get_current_texture();
        self.waited = acquiring.elapsed();
        let frame = match acquired {
            wgpu::CurrentSurfaceTexture::Success(t) => t,
            wgpu::CurrentSurfaceTexture::Suboptimal(t) => {
                // Present this one, reconfigure before the next.
                self.presenter.config.width = t.texture.width();
                self.presenter.config.height = t.texture.height();
                t
            }
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => {
                return Ok(false);
            }
            wgpu::CurrentSurfaceTexture::Outdated => {
                let size = self.window.inner_size();
                self.resize(size);
                return Ok(false);
            }
            wgpu::CurrentSurfaceTexture::Lost => {
                log::warn!("surface lost; recreating it");
                match self.ctx.instance.create_surface(self.window.clone()) {
                    Ok(surface) => {
                        self.presenter.surface = surface;
                        self.presenter.configure(&self.ctx);
                        self.surface_failures = 0;
                    }
                    Err(e) => {
                        // A few tries, then a clear exit rather than a window that
                        // never draws again.
                        self.surface_failures += 1;
                        log::error!("recreating the surface failed: {e}");
                        if self.surface_failures >= MAX_SURFACE_FAILURES {
                            return Err(ViewerError::SurfaceLost(e.to_string()));
                        }
                    }
                }
                return Ok(false);
            }
            wgpu::CurrentSurfaceTexture::Validation => {
                log::error!(
                    "acquiring the surface texture raised a validation error; frame skipped"
                );
                return Ok(false);
            }
        };
        let (w, h) = (frame.texture.width(), frame.texture.height());
        let formats = self.presenter.formats;
        let view_formats = formats.view_formats();
        // Screenshots without COPY_SRC on the surface render into an offscreen texture.
        let offscreen = (screenshot.is_some() && !self.presenter.copy_src).then(|| {
            self.ctx.device.create_texture(&wgpu::TextureDescriptor {
                label: Some("viewer.screenshot"),
                size: wgpu::Extent3d {
                    width: w,
                    height: h,
                    depth_or_array_layers: 1,
                },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: formats.surface,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
                view_formats: &view_formats,
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
        let (ctx, profiler, painter) = (&self.ctx, &self.profiler, &mut self.painter);
        let scene = &mut self.scene;
        let recorded = ctx.error_scope(|| {
            let plan = match scene {
                Some(s) => Some(
                    s.renderer
                        .record(ctx, &mut encoder, &target, &settings, profiler),
                ),
                None => {
                    clear(&mut encoder, &target);
                    None
                }
            };
            let extra = painter.paint(ctx, &mut encoder, &overlay_target, &screen, &jobs);
            (plan, extra)
        });
        let (plan, extra) = match recorded {
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
        if settings.passes.compare && self.psnr_request {
            self.psnr_request = false;
            if let (Some(s), Some(plan)) = (&self.scene, &plan) {
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
        self.waited += reading.elapsed();
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

    fn save_screenshot(&self, texture: &wgpu::Texture, path: &Path) -> Result<(), ViewerError> {
        let err = |reason: String| ViewerError::Screenshot {
            path: path.to_path_buf(),
            reason,
        };
        let data = read_texture(&self.ctx, texture, 0, 0).map_err(|e| err(e.to_string()))?;
        let rgba = to_rgba8(data.format, &data.bytes)
            .ok_or_else(|| err(format!("cannot convert {:?} to RGBA8", data.format)))?;
        crate::texture::write_png_rgba8(path, data.width, data.height, &rgba)
            .map_err(|e| err(e.to_string()))
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
    HeatmapSettings {
        source,
        lo,
        hi,
        ..HeatmapSettings::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surface_formats_give_an_srgb_renderer_view_and_a_unorm_overlay_view() {
        use wgpu::TextureFormat as F;
        let both = choose_surface_format(&[F::Bgra8UnormSrgb, F::Bgra8Unorm], true).unwrap();
        assert_eq!(
            (both.surface, both.render, both.overlay),
            (F::Bgra8Unorm, F::Bgra8UnormSrgb, F::Bgra8Unorm)
        );
        assert_eq!(both.view_formats(), [F::Bgra8UnormSrgb]);
        let srgb_only = choose_surface_format(&[F::Rgba8UnormSrgb], true).unwrap();
        assert_eq!(srgb_only.view_formats(), [F::Rgba8Unorm]);
        let no_views = choose_surface_format(&[F::Bgra8UnormSrgb, F::Bgra8Unorm], false).unwrap();
        assert_eq!(
            (no_views.surface, no_views.render, no_views.overlay),
            (F::Bgra8UnormSrgb, F::Bgra8UnormSrgb, F::Bgra8UnormSrgb)
        );
        assert!(no_views.view_formats().is_empty());
        assert_eq!(choose_surface_format(&[F::Bgra8Unorm], false), None);
        assert_eq!(choose_surface_format(&[F::Rgba16Float], true), None);
    }

    #[test]
    fn bgra_screenshots_swizzle_to_opaque_rgba() {
        let px = [10, 20, 30, 0, 1, 2, 3, 4];
        assert_eq!(
            to_rgba8(wgpu::TextureFormat::Bgra8UnormSrgb, &px),
            Some(vec![30, 20, 10, 255, 3, 2, 1, 255])
        );
        assert_eq!(
            to_rgba8(wgpu::TextureFormat::Rgba8Unorm, &px),
            Some(vec![10, 20, 30, 255, 1, 2, 3, 255])
        );
        assert_eq!(to_rgba8(wgpu::TextureFormat::R8Unorm, &px), None);
    }

    #[test]
    fn render_scale_rounds_and_clamps() {
        assert_eq!(scaled_size((1280, 720), 0.5), (640, 360));
        assert_eq!(scaled_size((1280, 720), 0.01), (320, 180));
        assert_eq!(scaled_size((3, 3), 0.25), (1, 1));
        assert_eq!(scaled_size((100, 100), 2.0), (100, 100));
    }
}
