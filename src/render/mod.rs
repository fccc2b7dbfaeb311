//! The deferred renderer. The frame is straight-line code in [`Renderer::record`]:
//!
//! ```text
//! shadow ─┐
//! G-buffer ─► reference material pass (original or baked textures)
//!          └► or NTC decode pass (per-tile decoders, stochastic trilinear)
//!               ─► lighting ─► temporal accumulation ─► tonemap (final image or an AOV)
//!          (+ divergence counts per tile, optional heatmap, optional reference comparison)
//! ```
//!
//! Owns the screen-sized targets, the frame uniform, the NTC packages of the modes it was
//! given and one struct per pass ([`passes`]). It does not load scenes, decode images or
//! compress: it receives a [`Scene`] (uploaded through [`scene_gpu`]) and packages.

pub mod blue_noise;
pub mod divergence;
pub mod gpu_types;
pub mod headless;
pub mod ntc_gpu;
pub mod passes;
pub mod scene_gpu;
pub mod targets;
pub mod tiles;

use std::collections::HashMap;

use glam::{Mat4, Vec3};

use crate::gpu::{GpuContext, GpuError, GpuTimer, KernelError, ShaderError};
use crate::ntc::{NtcConfig, NtcPackage};
use crate::scene::{Camera, Scene};
use blue_noise::BlueNoise;
use divergence::DivergenceStats;
use gpu_types::FrameUniform;
use ntc_gpu::{NO_DECODER, NtcRenderError, NtcSceneGpu};
use passes::{
    divergence::DivergencePass,
    gbuffer::GBufferPass,
    heatmap::{HeatmapPass, HeatmapSettings, PixelRect},
    image_error::{ErrorSpace, ImageErrorPass},
    lighting::LightingPass,
    ntc_bake::{BakedSet, NtcBakePass},
    ntc_decode::{DecodeSettings, NtcDecodePass, NtcKernel},
    reference::ReferencePass,
    shadow::ShadowPass,
    temporal::{TemporalPass, TemporalSettings},
    tonemap::TonemapPass,
};
use scene_gpu::{SceneGpu, UploadError, UploadOptions};
use targets::{GBuffer, MaterialTargets, Target, format};
use tiles::TileSize;

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

/// Where the material channels of a frame come from: the original textures, or NTC
/// packages made with one of the decoder-sharing strategies.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum RenderMode {
    /// The original textures, sampled with hardware filtering.
    #[default]
    Reference,
    /// NTC, one decoder per texture set.
    Baseline,
    /// NTC, one decoder per k-means cluster of texture sets.
    Clustered,
    /// NTC, one decoder for every texture set.
    Single,
    /// NTC, random groups with the clustered group sizes.
    Random,
    /// NTC, one decoder per texture category.
    Category,
}

impl RenderMode {
    /// Every mode, in shortcut order.
    pub const ALL: [RenderMode; 6] = [
        RenderMode::Reference,
        RenderMode::Baseline,
        RenderMode::Clustered,
        RenderMode::Single,
        RenderMode::Random,
        RenderMode::Category,
    ];

    /// The sharing strategy of an NTC mode (None for the reference).
    pub fn strategy(self) -> Option<crate::cluster::Strategy> {
        use crate::cluster::Strategy;
        match self {
            RenderMode::Reference => None,
            RenderMode::Baseline => Some(Strategy::Baseline),
            RenderMode::Clustered => Some(Strategy::Clustered),
            RenderMode::Single => Some(Strategy::Single),
            RenderMode::Random => Some(Strategy::Random),
            RenderMode::Category => Some(Strategy::Category),
        }
    }

    /// The mode's name, as on the command line.
    pub fn name(self) -> &'static str {
        self.strategy().map_or("reference", |s| s.name())
    }
}

impl std::fmt::Display for RenderMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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

/// How a frame is made besides what it shows: the NTC decode settings, temporal
/// accumulation, the heatmap overlay and the comparison against the reference.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameOptions {
    /// Stochastic mip and texel choice of the decode pass.
    pub decode: DecodeSettings,
    /// NTC modes decode their package into ordinary mipmapped textures once and render
    /// through the reference path (for GPUs too slow to decode per pixel).
    pub inference_on_load: bool,
    /// Temporal accumulation (`reset` is added by the renderer on camera cuts, resizes
    /// and mode switches).
    pub temporal: TemporalSettings,
    /// A heatmap over the output.
    pub heatmap: Option<HeatmapSettings>,
    /// Also render the reference path's radiance and compare (error heatmap, PSNR).
    pub compare: bool,
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
    /// Where the material channels come from; an NTC mode whose package is not loaded
    /// renders the reference (see [`Renderer::active_mode`]).
    pub mode: RenderMode,
    /// How.
    pub options: FrameOptions,
}

impl FrameSettings {
    /// The reference image of `camera` with default options.
    pub fn new(camera: Camera, lighting: Lighting, aov: Aov) -> Self {
        Self {
            camera,
            lighting,
            aov,
            mode: RenderMode::Reference,
            options: FrameOptions::default(),
        }
    }
}

/// Errors while creating the renderer.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A shader failed to compose or validate.
    #[error(transparent)]
    Shader(#[from] ShaderError),
    /// A compute kernel could not be built.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// The scene failed to upload.
    #[error(transparent)]
    Upload(#[from] UploadError),
    /// An NTC package or kernel could not be used.
    #[error(transparent)]
    Ntc(#[from] NtcRenderError),
    /// An NTC mode was asked for before its package was given.
    #[error("no package is loaded for the {0} mode")]
    MissingPackage(RenderMode),
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

/// How NTC modes are decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NtcOptions {
    /// The decode kernel; `None`: the best the device runs ([`NtcKernel::best`]), or
    /// f16, else f32, when that one fails to build for the model or the adapter.
    pub kernel: Option<NtcKernel>,
    /// Screen tile of the decode and divergence passes.
    pub tile: TileSize,
}

/// One NTC mode's package on the GPU.
#[derive(Debug)]
struct LoadedPackage {
    package: NtcPackage,
    gpu: NtcSceneGpu,
    /// Textures decoded at load (inference on load), made on first use.
    baked: Option<Vec<BakedSet>>,
}

/// The per-pixel NTC path: the decode pass (built for the first package's model).
#[derive(Debug)]
struct DecodePath {
    pass: NtcDecodePass,
    config: NtcConfig,
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
    /// Linear HDR radiance of this frame (before accumulation).
    pub hdr: Target,
    /// The reference path's material targets and radiance when comparing.
    reference_materials: MaterialTargets,
    reference_hdr: Target,
    bounds: crate::scene::Aabb,
    shadow_pass: ShadowPass,
    gbuffer_pass: GBufferPass,
    reference_pass: ReferencePass,
    lighting_pass: LightingPass,
    reference_lighting_pass: LightingPass,
    temporal_pass: TemporalPass,
    tonemap_pass: TonemapPass,
    divergence_pass: DivergencePass,
    heatmap_pass: HeatmapPass,
    image_error_pass: ImageErrorPass,
    blue_noise: BlueNoise,
    packages: HashMap<RenderMode, LoadedPackage>,
    decode: Option<DecodePath>,
    ntc_options: NtcOptions,
    /// Per material, its texture set: the baseline decoder map.
    baseline_map: Vec<u32>,
    /// What the last frame rendered (mode, inference on load), to reset on switches.
    last_path: Option<(RenderMode, bool)>,
    /// The mode whose package the decode pass and divergence maps are bound to.
    bound_mode: Option<RenderMode>,
    /// The mode whose baked textures the scene's sets currently sample.
    baked_mode: Option<RenderMode>,
    history_reset: bool,
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
        let baseline_map = scene_gpu
            .material_sets
            .iter()
            .map(|s| s.map_or(NO_DECODER, |s| s as u32))
            .collect();
        let ntc_options = NtcOptions::default();
        let mut renderer = Self {
            size,
            gbuffer: GBuffer::new(device, size),
            materials: MaterialTargets::new(device, size),
            hdr: hdr_target(device, "hdr", size),
            reference_materials: MaterialTargets::new(device, size),
            reference_hdr: hdr_target(device, "reference.hdr", size),
            frame_buffer,
            bounds: scene.bounds,
            shadow_pass: ShadowPass::new(ctx, &scene_gpu.material_layout)?,
            gbuffer_pass: GBufferPass::new(ctx, &scene_gpu.material_layout)?,
            reference_pass: ReferencePass::new(ctx, &scene_gpu.material_layout, size)?,
            lighting_pass: LightingPass::new(ctx)?,
            reference_lighting_pass: LightingPass::new(ctx)?,
            temporal_pass: TemporalPass::new(ctx, size)?,
            tonemap_pass: TonemapPass::new(ctx, output_format)?,
            divergence_pass: DivergencePass::new(ctx, ntc_options.tile, size)?,
            heatmap_pass: HeatmapPass::new(ctx, output_format)?,
            image_error_pass: ImageErrorPass::new(ctx, size)?,
            blue_noise: BlueNoise::new(device, &ctx.queue),
            scene: scene_gpu,
            packages: HashMap::new(),
            decode: None,
            ntc_options,
            baseline_map,
            last_path: None,
            bound_mode: None,
            baked_mode: None,
            history_reset: true,
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
        self.hdr = hdr_target(device, "hdr", size);
        self.reference_materials = MaterialTargets::new(device, size);
        self.reference_hdr = hdr_target(device, "reference.hdr", size);
        self.reference_pass.resize(device, size);
        self.temporal_pass.resize(device, size);
        self.divergence_pass.resize(device, size);
        self.image_error_pass.resize(device, size);
        self.bind_all(device);
        self.reset_history();
    }

    /// Forget the previous frame (camera cut, resize, mode switch).
    pub fn reset_history(&mut self) {
        self.prev_clip_from_world = None;
        self.frame_index = 0;
        self.history_reset = true;
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
        self.reference_lighting_pass.bind(
            device,
            &self.frame_buffer,
            &self.gbuffer,
            &self.reference_materials,
            &self.shadow_pass,
        );
        self.temporal_pass.bind(device, &self.hdr, &self.gbuffer);
        self.tonemap_pass.bind(
            device,
            &self.frame_buffer,
            self.temporal_pass.output(),
            &self.materials,
            &self.gbuffer,
        );
        self.divergence_pass.bind(device, &self.gbuffer);
        // Sizes match by construction; a mismatch would leave the comparison unbound.
        if let Err(e) = self.image_error_pass.bind(
            device,
            &self.temporal_pass.output().texture,
            &self.reference_hdr.texture,
            &self.gbuffer,
            ErrorSpace::SrgbEncoded,
        ) {
            log::error!("image comparison unavailable: {e}");
        }
        self.heatmap_pass.bind(
            device,
            &self.gbuffer,
            Some(&self.divergence_pass),
            Some(&self.image_error_pass),
        );
        self.bound_mode = None;
    }

    /// Make `package` the material source of `mode` (an NTC mode); scene material `i`
    /// uses package material `material_map[i]`.
    pub fn set_package(
        &mut self,
        ctx: &GpuContext,
        mode: RenderMode,
        package: NtcPackage,
        material_map: &[Option<u32>],
    ) -> Result<(), RenderError> {
        let gpu = NtcSceneGpu::upload(ctx, &package, material_map)?;
        if self.baked_mode == Some(mode) {
            self.scene.restore_set_textures(&ctx.device);
            self.baked_mode = None;
        }
        self.packages.insert(
            mode,
            LoadedPackage {
                package,
                gpu,
                baked: None,
            },
        );
        if self.bound_mode == Some(mode) {
            self.bound_mode = None;
        }
        Ok(())
    }

    /// Whether `mode` can render now (the reference always can).
    pub fn has_mode(&self, mode: RenderMode) -> bool {
        mode == RenderMode::Reference || self.packages.contains_key(&mode)
    }

    /// The mode a frame of `settings` renders: its mode, or the reference while that
    /// mode's package is not loaded.
    pub fn active_mode(&self, settings: &FrameSettings) -> RenderMode {
        if self.has_mode(settings.mode) {
            settings.mode
        } else {
            RenderMode::Reference
        }
    }

    /// Bind `mode` now (its package, and the decode pass with the chosen kernel), so that
    /// a package or kernel that cannot be used is an error here instead of the logged
    /// fallback to the reference that [`Self::record`] makes.
    pub fn prepare(&mut self, ctx: &GpuContext, mode: RenderMode) -> Result<(), RenderError> {
        if !self.has_mode(mode) {
            return Err(RenderError::MissingPackage(mode));
        }
        self.bind_mode(ctx, mode)
    }

    /// Decoders of `mode`'s package (None for the reference or a missing package).
    pub fn decoder_count(&self, mode: RenderMode) -> Option<usize> {
        self.packages.get(&mode).map(|p| p.gpu.decoder_count())
    }

    /// Choose the decode kernel and tile size. An unavailable explicitly chosen kernel is
    /// an error and leaves the previous choice (an automatic one falls back, see
    /// [`NtcOptions::kernel`]).
    pub fn set_ntc_options(
        &mut self,
        ctx: &GpuContext,
        options: NtcOptions,
    ) -> Result<(), RenderError> {
        if options == self.ntc_options {
            return Ok(());
        }
        if let Some(decode) = &self.decode {
            let pass = decode_pass(ctx, &decode.config, &options)?;
            self.decode = Some(DecodePath {
                pass,
                config: decode.config.clone(),
            });
        }
        if options.tile != self.ntc_options.tile {
            self.divergence_pass = DivergencePass::new(ctx, options.tile, self.size)?;
        }
        self.ntc_options = options;
        self.bind_all(&ctx.device);
        Ok(())
    }

    /// The kernel NTC modes decode with (None before the first package).
    pub fn kernel(&self) -> Option<NtcKernel> {
        self.decode.as_ref().map(|d| d.pass.kernel())
    }

    /// The decode and divergence tile size.
    pub fn tile(&self) -> TileSize {
        self.ntc_options.tile
    }

    /// The divergence statistics of a recent frame, when one is ready (non-blocking).
    pub fn try_divergence(&mut self, device: &wgpu::Device) -> Option<DivergenceStats> {
        self.divergence_pass.try_stats(device)
    }

    /// The divergence statistics of the last submitted frame (waits for the GPU).
    pub fn divergence_blocking(&mut self, ctx: &GpuContext) -> Result<DivergenceStats, GpuError> {
        self.divergence_pass.stats_blocking(ctx)
    }

    /// PSNR of the last submitted frame's accumulated radiance against the reference
    /// path's (both clamped to [0, 1] and sRGB-encoded, pixels with geometry), for a
    /// frame rendered with `compare`; None when identical or nothing was compared.
    pub fn psnr_blocking(&self, ctx: &GpuContext) -> Result<Option<f64>, GpuError> {
        self.image_error_pass.psnr_blocking(ctx)
    }

    /// The heatmap colour bar's rectangle on the output (for labels).
    pub fn color_bar_rect(&self) -> Option<PixelRect> {
        HeatmapPass::color_bar_rect(self.size)
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

    /// Bind the decode pass and the divergence maps to `mode` (an NTC mode with a
    /// package, or the reference).
    fn bind_mode(&mut self, ctx: &GpuContext, mode: RenderMode) -> Result<(), RenderError> {
        if self.bound_mode == Some(mode) {
            return Ok(());
        }
        let current = match self.packages.get(&mode) {
            Some(loaded) => {
                let config = loaded.gpu.config();
                let rebuild = self
                    .decode
                    .as_ref()
                    .is_none_or(|d| !same_decoder_shape(&d.config, config));
                if rebuild {
                    self.decode = Some(DecodePath {
                        pass: decode_pass(ctx, config, &self.ntc_options)?,
                        config: config.clone(),
                    });
                }
                if let Some(decode) = &mut self.decode {
                    decode.pass.bind(
                        &ctx.device,
                        &self.frame_buffer,
                        &self.scene,
                        &self.gbuffer,
                        &self.blue_noise.view,
                        &loaded.gpu,
                        &self.materials,
                    );
                }
                loaded.gpu.decoder_of_material().to_vec()
            }
            None => self.baseline_map.clone(),
        };
        self.divergence_pass
            .set_maps(&ctx.device, &current, &self.baseline_map);
        self.bound_mode = Some(mode);
        Ok(())
    }

    /// Make the scene's texture sets sample `mode`'s baked textures (baking them on first
    /// use), or the original textures for `None`.
    fn use_baked(&mut self, ctx: &GpuContext, mode: Option<RenderMode>) -> Result<(), RenderError> {
        if self.baked_mode == mode {
            return Ok(());
        }
        self.scene.restore_set_textures(&ctx.device);
        self.baked_mode = None;
        let Some(mode) = mode else { return Ok(()) };
        let Some(loaded) = self.packages.get_mut(&mode) else {
            return Ok(());
        };
        if loaded.baked.is_none() {
            let bake = NtcBakePass::new(ctx, &loaded.package.config)?;
            loaded.baked = Some(bake.bake(ctx, &loaded.package, &loaded.gpu)?);
        }
        for baked in loaded.baked.iter().flatten() {
            if let Some(set) = self.scene.sets.iter().position(|d| d.name() == baked.name) {
                self.scene
                    .replace_set_textures(&ctx.device, set, baked.views.clone())?;
            }
        }
        self.baked_mode = Some(mode);
        Ok(())
    }

    /// Record one frame into `output` (a view of a texture in the output format).
    /// A package or kernel that fails to bind is logged and the frame shows the
    /// reference.
    pub fn record(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        output: &wgpu::TextureView,
        settings: &FrameSettings,
        timer: &GpuTimer,
    ) {
        let options = &settings.options;
        let mut mode = self.active_mode(settings);
        let baked = options.inference_on_load && mode != RenderMode::Reference;
        if let Err(e) = self.use_baked(ctx, baked.then_some(mode)) {
            log::error!("inference on load failed for {mode}: {e}");
            mode = RenderMode::Reference;
        }
        if let Err(e) = self.bind_mode(ctx, mode) {
            log::error!("cannot decode {mode}: {e}");
            mode = RenderMode::Reference;
            let _ = self.bind_mode(ctx, mode);
        }
        let path = (mode, baked);
        if self.last_path != Some(path) {
            self.last_path = Some(path);
            self.reset_history();
        }
        let decode = (mode != RenderMode::Reference && !baked)
            .then_some(self.decode.as_ref())
            .flatten();

        let uniform = self.frame_uniform(settings);
        ctx.queue
            .write_buffer(&self.frame_buffer, 0, bytemuck::bytes_of(&uniform));
        self.shadow_pass
            .record(encoder, &self.scene, settings.lighting.shadows, timer);
        self.gbuffer_pass
            .record(encoder, &self.gbuffer, &self.scene, timer);
        match decode {
            Some(d) => d
                .pass
                .record(&ctx.queue, encoder, self.size, &options.decode, timer),
            None => self
                .reference_pass
                .record(encoder, &self.scene, &self.materials, timer),
        }
        self.lighting_pass.record(encoder, &self.hdr, timer);
        let temporal = TemporalSettings {
            reset: options.temporal.reset || self.history_reset,
            ..options.temporal
        };
        self.temporal_pass
            .record(&ctx.queue, encoder, &temporal, timer);
        self.history_reset = false;
        if options.compare && decode.is_some() {
            self.reference_pass
                .record(encoder, &self.scene, &self.reference_materials, timer);
            self.reference_lighting_pass
                .record(encoder, &self.reference_hdr, timer);
            self.image_error_pass.record(encoder, timer);
        }
        self.tonemap_pass.record(encoder, output, timer);
        self.divergence_pass.record(encoder, timer);
        if let Some(heatmap) = &options.heatmap {
            self.heatmap_pass
                .record(&ctx.queue, encoder, output, self.size, heatmap, timer);
        }
        self.prev_clip_from_world = Some(Mat4::from_cols_array_2d(&uniform.clip_from_world));
        self.frame_index = self.frame_index.wrapping_add(1);
    }
}

/// The decode pass for `config` with `options`' kernel. A kernel left to the renderer
/// (`None`) is [`NtcKernel::best`]; when that one fails to build (the model or the
/// adapter's matrix configurations rule it out, or the shader compiler fails), the failure
/// is logged and the pass falls back to f16 where supported, else f32. An explicitly
/// chosen kernel's failure is the error.
fn decode_pass(
    ctx: &GpuContext,
    config: &NtcConfig,
    options: &NtcOptions,
) -> Result<NtcDecodePass, NtcRenderError> {
    if let Some(kernel) = options.kernel {
        return NtcDecodePass::new(ctx, config, kernel, options.tile);
    }
    let mut kernels = vec![NtcKernel::best(&ctx.granted)];
    for fallback in [NtcKernel::F16, NtcKernel::F32] {
        if fallback.supported(&ctx.granted) && !kernels.contains(&fallback) {
            kernels.push(fallback);
        }
    }
    let mut result = NtcDecodePass::new(ctx, config, kernels[0], options.tile);
    for pair in kernels.windows(2) {
        let Err(e) = &result else { break };
        log::warn!("NTC decode: {e}; falling back to the {} kernel", pair[1]);
        result = NtcDecodePass::new(ctx, config, pair[1], options.tile);
    }
    result
}

/// Two configurations whose decoders the same decode pipeline runs (the latent grid
/// scale does not change the shader).
fn same_decoder_shape(a: &NtcConfig, b: &NtcConfig) -> bool {
    let mut a = a.clone();
    a.preset = b.preset;
    &a == b
}

/// A linear HDR radiance target.
fn hdr_target(device: &wgpu::Device, label: &str, size: (u32, u32)) -> Target {
    Target::new(
        device,
        label,
        size,
        format::HDR,
        wgpu::TextureUsages::empty(),
    )
}
