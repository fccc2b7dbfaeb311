//! Presenting: the window surface and its configuration (formats, size, vsync), acquiring
//! a surface texture (skipping frames while the surface is minimised, outdated or lost,
//! and recreating a lost one), the renderer's internal size, and screenshots (where they
//! are saved, reading the frame back as RGBA8 PNG).

use std::path::{Path, PathBuf};
use std::time::Instant;

use winit::dpi::PhysicalSize;

use super::{Viewer, ViewerError};
use crate::gpu::{GpuContext, read_texture};
use crate::ui::RENDER_SCALE_RANGE;

/// Failed surface recreations in a row after which the viewer exits with an error.
const MAX_SURFACE_FAILURES: u32 = 3;

/// The surface and how it is configured.
pub(super) struct Presenter {
    pub(super) surface: wgpu::Surface<'static>,
    pub(super) config: wgpu::SurfaceConfiguration,
    pub(super) formats: SurfaceFormats,
    present_modes: Vec<wgpu::PresentMode>,
    /// Screenshots read the surface texture directly (else render offscreen).
    pub(super) copy_src: bool,
    /// The window has a zero-sized client area (minimised).
    pub(super) minimised: bool,
}

impl Presenter {
    /// Configures `surface` for a window of `size`: the formats it offers, copies for
    /// screenshots where it allows them, the first alpha mode, FIFO unless `vsync` is off
    /// and another mode is offered.
    pub(super) fn new(
        surface: wgpu::Surface<'static>,
        ctx: &GpuContext,
        size: PhysicalSize<u32>,
        vsync: bool,
    ) -> Result<Self, ViewerError> {
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
        presenter.configure(ctx);
        presenter.set_vsync(ctx, vsync);
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
        Ok(presenter)
    }

    /// Applies the configuration (a zero-sized window only marks the surface minimised).
    pub(super) fn configure(&mut self, ctx: &GpuContext) {
        if self.config.width == 0 || self.config.height == 0 {
            self.minimised = true;
            return;
        }
        self.minimised = false;
        self.surface.configure(&ctx.device, &self.config);
    }

    /// The present mode without vsync the surface offers, if any.
    pub(super) fn vsync_off_mode(&self) -> Option<wgpu::PresentMode> {
        [wgpu::PresentMode::Mailbox, wgpu::PresentMode::Immediate]
            .into_iter()
            .find(|m| self.present_modes.contains(m))
    }

    /// FIFO with `vsync`, else a mode without it where offered.
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
pub(super) fn next_screenshot_path(dir: &Path, start: &mut u32) -> PathBuf {
    next_free_path(dir, "screenshot", "png", start)
}

/// The first `<stem>-<n>.<ext>` in `dir` that does not exist, counting from `*start`
/// (which is left past it).
pub(super) fn next_free_path(dir: &Path, stem: &str, ext: &str, start: &mut u32) -> PathBuf {
    loop {
        let p = dir.join(format!("{stem}-{}.{ext}", *start));
        *start += 1;
        if !p.exists() {
            return p;
        }
    }
}

impl Viewer {
    /// The surface's size in pixels.
    pub(super) fn surface_size(&self) -> (u32, u32) {
        (self.presenter.config.width, self.presenter.config.height)
    }

    /// The window was resized: reconfigures the surface.
    pub(super) fn resize(&mut self, size: PhysicalSize<u32>) {
        self.presenter.config.width = size.width;
        self.presenter.config.height = size.height;
        self.presenter.configure(&self.ctx);
    }

    /// Keeps the renderer's size and the present mode in step with the settings.
    pub(super) fn sync_settings(&mut self) {
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

    /// The next surface texture to draw into, or `None` when this frame is skipped: the
    /// window is minimised, the surface timed out, is occluded or outdated (reconfigured
    /// for the next frame), was lost (recreated; [`MAX_SURFACE_FAILURES`] failed
    /// recreations in a row are an error) or raised a validation error.
    pub(super) fn acquire_frame(&mut self) -> Result<Option<wgpu::SurfaceTexture>, ViewerError> {
        if self.presenter.minimised {
            return Ok(None);
        }
        let acquiring = Instant::now();
        let acquired = self.presenter.surface.get_current_texture();
        self.clock.waited = acquiring.elapsed();
        let frame = match acquired {
            wgpu::CurrentSurfaceTexture::Success(t) => t,
            wgpu::CurrentSurfaceTexture::Suboptimal(t) => {
                // Present this one, reconfigure before the next.
                self.presenter.config.width = t.texture.width();
                self.presenter.config.height = t.texture.height();
                t
            }
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => {
                return Ok(None);
            }
            wgpu::CurrentSurfaceTexture::Outdated => {
                let size = self.window.inner_size();
                self.resize(size);
                return Ok(None);
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
                return Ok(None);
            }
            wgpu::CurrentSurfaceTexture::Validation => {
                log::error!(
                    "acquiring the surface texture raised a validation error; frame skipped"
                );
                return Ok(None);
            }
        };
        Ok(Some(frame))
    }

    /// Reads `texture` back and saves it to `path` as an RGBA8 PNG.
    pub(super) fn save_screenshot(
        &self,
        texture: &wgpu::Texture,
        path: &Path,
    ) -> Result<(), ViewerError> {
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
