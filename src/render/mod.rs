//! The deferred renderer. The frame is straight-line code in [`Renderer::record`]:
//!
//! ```text
//! shadow ─┐
//! G-buffer ─► reference material pass ─► lighting ─► tonemap (final image or an AOV)
//! ```
//!
//! Owns the screen-sized targets, the frame uniform and one struct per pass
//! ([`passes`]). It does not load scenes or decode images: it receives a [`Scene`] and
//! uploads it through [`scene_gpu`].

pub mod gpu_types;
pub mod headless;
pub mod passes;
pub mod scene_gpu;
pub mod targets;

use glam::{Mat4, Vec3};

use crate::gpu::{GpuContext, GpuTimer, ShaderError};
use crate::scene::{Camera, Scene};
use gpu_types::FrameUniform;
use passes::{
    gbuffer::GBufferPass, lighting::LightingPass, reference::ReferencePass, shadow::ShadowPass,
    tonemap::TonemapPass,
};
use scene_gpu::{SceneGpu, UploadError, UploadOptions};
use targets::{GBuffer, MaterialTargets, Target, format};

/// Which image the renderer outputs.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Aov {
    /// The lit, tonemapped image.
    #[default]
    Final = 0,
    /// Base colour (linear, stored sRGB-encoded).
    Albedo = 1,
    /// World-space shading normal, `n * 0.5 + 0.5`.
    Normal = 2,
    /// Roughness.
    Roughness = 3,
    /// Metallic.
    Metallic = 4,
    /// Ambient occlusion.
    Occlusion = 5,
    /// Emissive radiance.
    Emissive = 6,
    /// Material id as a false colour.
    MaterialId = 7,
}

/// Scene lighting: one directional sun and a two-colour hemisphere ambient.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Lighting {
    /// Direction *towards* the sun (need not be normalised).
    pub sun_direction: [f32; 3],
    /// Sun colour (linear RGB).
    pub sun_color: [f32; 3],
    /// Sun irradiance scale.
    pub sun_intensity: f32,
    /// Ambient radiance from above (linear RGB).
    pub sky_color: [f32; 3],
    /// Ambient radiance from below (linear RGB).
    pub ground_color: [f32; 3],
    /// Exposure multiplier before tonemapping.
    pub exposure: f32,
    /// Sun shadows (a shadow map over the whole scene).
    pub shadows: bool,
}

impl Default for Lighting {
    fn default() -> Self {
        Self {
            sun_direction: [0.35, 0.85, 0.4],
            sun_color: [1.0, 0.95, 0.88],
            sun_intensity: 3.0,
            sky_color: [0.35, 0.42, 0.55],
            ground_color: [0.18, 0.16, 0.14],
            exposure: 1.0,
            shadows: true,
        }
    }
}

/// What one frame shows.
#[derive(Clone, Debug)]
pub struct FrameSettings {
    /// The camera.
    pub camera: Camera,
    /// The lights.
    pub lighting: Lighting,
    /// The output image.
    pub aov: Aov,
}

/// Errors while creating the renderer.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A shader failed to compose or validate.
    #[error(transparent)]
    Shader(#[from] ShaderError),
    /// The scene failed to upload.
    #[error(transparent)]
    Upload(#[from] UploadError),
}

/// Default anisotropy: 16× on hardware; 1× (trilinear) on CPU adapters, where software
/// anisotropic filtering costs more than an order of magnitude (measured on lavapipe).
pub fn default_anisotropy(info: &wgpu::AdapterInfo) -> u16 {
    if info.device_type == wgpu::DeviceType::Cpu {
        1
    } else {
        16
    }
}

/// The deferred renderer for one scene.
#[derive(Debug)]
pub struct Renderer {
    size: (u32, u32),
    frame_buffer: wgpu::Buffer,
    /// The uploaded scene.
    pub scene: SceneGpu,
    /// The G-buffer.
    pub gbuffer: GBuffer,
    /// The material targets.
    pub materials: MaterialTargets,
    /// Linear HDR radiance.
    pub hdr: Target,
    bounds: crate::scene::Aabb,
    shadow_pass: ShadowPass,
    gbuffer_pass: GBufferPass,
    reference_pass: ReferencePass,
    lighting_pass: LightingPass,
    tonemap_pass: TonemapPass,
    prev_clip_from_world: Option<Mat4>,
    frame_index: u32,
}

impl Renderer {
    /// Upload `scene` and build every pass for a `size` output in `output_format`.
    pub fn new(
        ctx: &GpuContext,
        scene: &Scene,
        upload: &UploadOptions,
        size: (u32, u32),
        output_format: wgpu::TextureFormat,
    ) -> Result<Self, RenderError> {
        let device = &ctx.device;
        let anisotropy = if ctx.granted.anisotropic_filtering {
            upload
                .anisotropy
                .unwrap_or(default_anisotropy(&ctx.info))
                .clamp(1, 16)
        } else {
            1
        };
        let scene_gpu = SceneGpu::upload(device, &ctx.queue, scene, upload, anisotropy)?;
        let frame_buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("frame"),
            size: std::mem::size_of::<FrameUniform>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let shadow_pass = ShadowPass::new(ctx, &scene_gpu.material_layout)?;
        let gbuffer_pass = GBufferPass::new(ctx, &scene_gpu.material_layout)?;
        let reference_pass = ReferencePass::new(ctx, &scene_gpu.material_layout, size)?;
        let lighting_pass = LightingPass::new(ctx)?;
        let tonemap_pass = TonemapPass::new(ctx, output_format)?;
        let mut renderer = Self {
            size,
            gbuffer: GBuffer::new(device, size),
            materials: MaterialTargets::new(device, size),
            hdr: Target::new(
                device,
                "hdr",
                size,
                format::HDR,
                wgpu::TextureUsages::empty(),
            ),
            frame_buffer,
            scene: scene_gpu,
            bounds: scene.bounds,
            shadow_pass,
            gbuffer_pass,
            reference_pass,
            lighting_pass,
            tonemap_pass,
            prev_clip_from_world: None,
            frame_index: 0,
        };
        renderer.bind_all(device);
        Ok(renderer)
    }

    /// Current output size in pixels.
    pub fn size(&self) -> (u32, u32) {
        self.size
    }

    /// Reallocate the screen-sized targets.
    pub fn resize(&mut self, device: &wgpu::Device, size: (u32, u32)) {
        let size = (size.0.max(1), size.1.max(1));
        if size == self.size {
            return;
        }
        self.size = size;
        self.gbuffer = GBuffer::new(device, size);
        self.materials = MaterialTargets::new(device, size);
        self.hdr = Target::new(
            device,
            "hdr",
            size,
            format::HDR,
            wgpu::TextureUsages::empty(),
        );
        self.reference_pass.resize(device, size);
        self.bind_all(device);
        self.reset_history();
    }

    /// Forget the previous frame (camera cut, resize, mode switch).
    pub fn reset_history(&mut self) {
        self.prev_clip_from_world = None;
        self.frame_index = 0;
    }

    fn bind_all(&mut self, device: &wgpu::Device) {
        self.shadow_pass
            .bind(device, &self.frame_buffer, &self.scene);
        self.gbuffer_pass
            .bind(device, &self.frame_buffer, &self.scene);
        self.reference_pass
            .bind(device, &self.frame_buffer, &self.scene, &self.gbuffer);
        self.lighting_pass.bind(
            device,
            &self.frame_buffer,
            &self.gbuffer,
            &self.materials,
            &self.shadow_pass,
        );
        self.tonemap_pass.bind(
            device,
            &self.frame_buffer,
            &self.hdr,
            &self.materials,
            &self.gbuffer,
        );
    }

    /// The frame uniform for `settings` at the current size.
    pub fn frame_uniform(&self, settings: &FrameSettings) -> FrameUniform {
        let (w, h) = (self.size.0 as f32, self.size.1 as f32);
        let view = settings.camera.view_from_world();
        let clip_from_world = settings.camera.clip_from_view(w / h) * view;
        let l = &settings.lighting;
        let sun = Vec3::from(l.sun_direction).normalize_or(Vec3::Y);
        let irr = Vec3::from(l.sun_color) * l.sun_intensity;
        let v4 = |v: [f32; 3]| [v[0], v[1], v[2], 0.0];
        FrameUniform {
            clip_from_world: clip_from_world.to_cols_array_2d(),
            world_from_clip: clip_from_world.inverse().to_cols_array_2d(),
            prev_clip_from_world: self
                .prev_clip_from_world
                .unwrap_or(clip_from_world)
                .to_cols_array_2d(),
            view_from_world: view.to_cols_array_2d(),
            light_clip_from_world: passes::shadow::light_clip_from_world(&self.bounds, sun)
                .to_cols_array_2d(),
            camera_position: settings.camera.position.extend(1.0).into(),
            sun_direction: sun.extend(0.0).into(),
            sun_irradiance: irr.extend(0.0).into(),
            sky_radiance: v4(l.sky_color),
            ground_radiance: v4(l.ground_color),
            viewport: [w, h, 1.0 / w, 1.0 / h],
            shadow_params: passes::shadow::shadow_params(&self.bounds, l.shadows),
            frame_index: self.frame_index,
            aov: settings.aov as u32,
            exposure: l.exposure,
            _pad0: 0,
        }
    }

    /// Record one frame into `output` (a view of a texture in the output format).
    pub fn record(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        output: &wgpu::TextureView,
        settings: &FrameSettings,
        timer: &GpuTimer,
    ) {
        let uniform = self.frame_uniform(settings);
        ctx.queue
            .write_buffer(&self.frame_buffer, 0, bytemuck::bytes_of(&uniform));
        self.shadow_pass
            .record(encoder, &self.scene, settings.lighting.shadows, timer);
        self.gbuffer_pass
            .record(encoder, &self.gbuffer, &self.scene, timer);
        self.reference_pass
            .record(encoder, &self.scene, &self.materials, timer);
        self.lighting_pass.record(encoder, &self.hdr, timer);
        self.tonemap_pass.record(encoder, output, timer);
        self.prev_clip_from_world = Some(Mat4::from_cols_array_2d(&uniform.clip_from_world));
        self.frame_index = self.frame_index.wrapping_add(1);
    }
}
