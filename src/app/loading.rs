//! Loading: a scene is opened, its textures decoded and the renderer built on a
//! background thread, so the window stays responsive; the first
//! load applies `--camera-path` and sets the camera, a reload (F5) keeps the camera, and a
//! failed load (or a panic inside the loader) shows its error and keeps the previous
//! scene.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Instant;

use super::{LoadedScene, Viewer, scaled_size};
use crate::gpu::GpuContext;
use crate::open::{open, select_camera};
use crate::render::Renderer;
use crate::render::scene_gpu::UploadOptions;
use crate::scene::camera_control::{self, CameraState, PathPlayer};
use crate::texture::SceneTextures;
use crate::ui::{self, SceneStats};

/// A load running on a background thread.
pub(super) struct Loading {
    /// What is being loaded (for the overlay's indicator).
    pub(super) what: String,
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
    /// Opens the scene, checks the camera path, decodes the textures and builds the
    /// renderer.
    fn load(self) -> Result<LoadedScene, String> {
        let started = Instant::now();
        let opened = open(self.source.as_deref()).map_err(|e| e.to_string())?;
        if let Some(name) = &self.camera_path
            && opened.description.camera_path(name).is_none()
        {
            let names = opened.description.camera_path_names();
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
        let mut renderer = Renderer::new(
            &self.ctx,
            &opened.scene,
            &textures,
            self.upload.anisotropy,
            self.size,
            self.format,
        )
        .map_err(|e| e.to_string())?;
        if let Some(mode) = self.upload.gbuffer {
            renderer
                .set_gbuffer_mode(&self.ctx, mode)
                .map_err(|e| e.to_string())?;
        }
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
            split: None,
        })
    }
}

/// The name the window title and the overlay give a scene.
pub(super) fn scene_name(source: Option<&Path>) -> String {
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

impl Viewer {
    /// Starts loading the scene in the background (the first load when `initial`); does
    /// nothing while a load runs.
    pub(super) fn start_load(&mut self, initial: bool) {
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

    /// Reports a failed load: the error panel, and the status line on a reload.
    fn fail_load(&mut self, initial: bool, message: String) {
        log::error!("scene failed to load: {message}");
        if initial {
            self.initial_error = Some(message.clone());
        } else if self.scene.is_some() {
            self.status.set("reload failed; kept the previous scene");
        }
        self.scene_error = Some(message);
    }

    /// Installs a finished load, if any.
    pub(super) fn poll_loading(&mut self) {
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
                        self.path_state.selected = loaded
                            .opened
                            .description
                            .camera_paths
                            .iter()
                            .position(|p| &p.name == name);
                        self.path_state.player = PathPlayer {
                            playing: self.path_state.selected.is_some(),
                            ..PathPlayer::default()
                        };
                    } else if !loaded.opened.description.camera_paths.is_empty() {
                        self.path_state.selected = Some(0);
                    }
                } else {
                    self.status.set(format!("reloaded {}", loaded.stats.name));
                }
                self.scene_error = None;
                self.clock.perf.clear();
                self.scene = Some(loaded);
            }
        }
    }
}
