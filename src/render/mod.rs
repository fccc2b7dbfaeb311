//! The deferred renderer. A frame is resolved into a [`FramePlan`] ([`plan`]) and then
//! recorded as straight-line code in [`Renderer::record`], where every pass is handed
//! what it reads and what it writes (the targets are data: [`targets::FrameTargets`]):
//!
//! ```text
//! scene ─► shadow ─► shadow map ──────────────────────────────┐
//! scene ─► G-buffer ─► gbuffer ─┬► reference (original or baked textures) ─► materials
//!                               └► or NTC decode (package, blue noise)    ─► materials
//!   [visibility] scene ─► G-buffer ─► ids + depth ─► resolve (compute) ─► gbuffer
//! depth + materials + shadow map ─► lighting ─► hdr
//! hdr + motion + depth (+ history) ─► temporal ─► accumulated
//! [compare] reference ─► comparison materials ─► lighting ─► comparison hdr
//!           accumulated + comparison hdr ─► image error ─► error + partials
//! accumulated + materials ─► tonemap ─► output
//! material ids + decoder maps ─► divergence ─► tiles (+ histograms)
//! [heatmap] tiles or error ─► heatmap ─► output
//! ```
//!
//! The G-buffer is made in one of two [`GBufferMode`]s (the default by
//! [`GBufferMode::default_for`] the device, else [`Renderer::set_gbuffer_mode`]): raster
//! (the fragment shader writes every target) or visibility (the raster pass writes depth
//! and (instance, triangle) ids, and `passes::gbuffer_resolve` rebuilds the targets in
//! compute); every pass after it reads the same targets either way.
//!
//! Owns the frame's targets, the frame uniform, the NTC packages of the modes it was
//! given and one struct per pass ([`passes`]). It does not load scenes, decode images or
//! compress: it receives a [`Scene`] with its decoded texture sets (uploaded through
//! [`scene_gpu`]) and packages.

pub mod blue_noise;
pub mod gpu_types;
pub mod headless;
pub mod inspect;
pub mod kernel_choice;
pub mod memory;
pub mod ntc_gpu;
pub mod passes;
pub mod plan;
pub mod scene_gpu;
pub mod split;
pub mod targets;
pub mod transcode;

use std::collections::HashMap;
use std::sync::Arc;

use glam::{Mat4, Vec3};

use crate::cluster::Strategy;
use crate::gpu::encoder::FrameEncoder;
use crate::gpu::{GpuContext, GpuError, GpuProfiler, KernelError, ShaderError};
use crate::ntc::{NtcConfig, NtcPackage};
use crate::scene::{Camera, Lighting, Scene};
use crate::screen::divergence::DivergenceStats;
use crate::screen::material_word::NO_DECODER;
use crate::screen::tiles::TileSize;
use crate::texture::SceneTextures;
use blue_noise::BlueNoise;
use gpu_types::FrameUniform;
use ntc_gpu::{NtcRenderError, NtcSceneGpu};
use passes::{
    divergence::{DecoderMap, DivergenceInputs, DivergencePass},
    gbuffer::GBufferPass,
    gbuffer_resolve::{GBufferResolvePass, ResolveInputs},
    heatmap::{HeatmapInputs, HeatmapPass, HeatmapSettings, PixelRect},
    image_error::{ErrorSpace, ImageErrorInputs, ImageErrorPass},
    lighting::{LightingInputs, LightingPass},
    ntc_bake::{BakeKernel, BakedMaterials, NtcBakePass, Transcode},
    ntc_decode::{DecodeInputs, DecodeSettings, NtcDecodePass, NtcKernel},
    reference::{ReferenceInputs, ReferencePass},
    scene_draw::SceneInputs,
    shadow::ShadowPass,
    temporal::{TemporalInputs, TemporalPass, TemporalSettings},
    tonemap::{TonemapInputs, TonemapPass},
};
pub use plan::{Fallback, FramePlan, MaterialPath, Unusable};
use scene_gpu::{SceneGpu, UploadError};
use targets::{FrameTargets, MaterialTargets};
pub use targets::{GBufferMode, VisibilityUnsupported};

/// Which image the renderer outputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[derive(clap::ValueEnum, serde::Serialize, serde::Deserialize)]
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

/// Where the material channels of a frame come from: the original textures, or the NTC
/// packages of one decoder-sharing strategy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum RenderMode {
    /// The original textures, sampled with hardware filtering.
    #[default]
    Reference,
    /// NTC, the packages made with this strategy.
    Ntc(Strategy),
}

impl RenderMode {
    /// Every mode, in shortcut order.
    pub const ALL: [RenderMode; 7] = [
        RenderMode::Reference,
        RenderMode::Ntc(Strategy::Baseline),
        RenderMode::Ntc(Strategy::Clustered),
        RenderMode::Ntc(Strategy::Single),
        RenderMode::Ntc(Strategy::Random),
        RenderMode::Ntc(Strategy::Category),
        RenderMode::Ntc(Strategy::DivergenceAware),
    ];

    /// Whether the mode renders NTC textures (every mode but the reference).
    pub fn is_ntc(self) -> bool {
        self != RenderMode::Reference
    }

    /// The strategy whose packages the mode renders (`None` for the reference).
    pub fn strategy(self) -> Option<Strategy> {
        match self {
            RenderMode::Reference => None,
            RenderMode::Ntc(strategy) => Some(strategy),
        }
    }

    /// The mode's name, as on the command line: `reference` or the strategy's.
    pub fn name(self) -> &'static str {
        match self {
            RenderMode::Reference => "reference",
            RenderMode::Ntc(strategy) => strategy.name(),
        }
    }
}

impl std::fmt::Display for RenderMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl From<RenderMode> for &'static str {
    fn from(mode: RenderMode) -> Self {
        mode.name()
    }
}

impl TryFrom<String> for RenderMode {
    type Error = String;

    fn try_from(name: String) -> Result<Self, String> {
        RenderMode::ALL
            .into_iter()
            .find(|mode| mode.name() == name)
            .ok_or_else(|| format!("unknown render mode `{name}`"))
    }
}

impl clap::ValueEnum for RenderMode {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(match self {
            RenderMode::Reference => clap::builder::PossibleValue::new("reference")
                .help("The original textures, sampled with hardware filtering"),
            RenderMode::Ntc(strategy) => clap::ValueEnum::to_possible_value(strategy)?,
        })
    }
}

/// The per-frame settings of the passes that are optional or parameterised: the decode
/// pass's filtering, inference on load, temporal accumulation, the heatmap and the
/// comparison against the reference.
///
/// Names: a `…Settings` value is read again every frame and changes nothing but what the
/// next frame does ([`FrameSettings`], `PassSettings`, [`DecodeSettings`],
/// [`TemporalSettings`], [`HeatmapSettings`]); a [`KernelChoice`] builds pipelines and is
/// set once ([`Renderer::set_kernel_choice`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PassSettings {
    /// Stochastic mip and texel choice of the decode pass.
    pub decode: DecodeSettings,
    /// NTC modes decode their package into ordinary mipmapped textures once and render
    /// through the reference path (for GPUs too slow to decode per pixel).
    pub inference_on_load: bool,
    /// With inference on load, block-compress the decoded textures on the GPU
    /// ([`ntc_bake::set_formats`](passes::ntc_bake::set_formats) gives each group's format) instead of keeping RGBA8.
    pub transcode: Option<Transcode>,
    /// With inference on load, how the bake evaluates the decoders.
    pub bake_kernel: BakeKernel,
    /// Temporal accumulation (`reset` is added by the renderer on camera cuts, resizes
    /// and mode switches).
    pub temporal: TemporalSettings,
    /// A heatmap over the output.
    pub heatmap: Option<HeatmapSettings>,
    /// Also render the reference path's radiance and compare (error heatmap, PSNR).
    pub compare: bool,
}

/// What one frame shows (camera, lights, output, material source) and how its passes run.
#[derive(Clone, Debug)]
pub struct FrameSettings {
    /// The camera.
    pub camera: Camera,
    /// The lights.
    pub lighting: Lighting,
    /// The output image.
    pub aov: Aov,
    /// Where the material channels come from; an NTC mode whose package is not loaded
    /// renders the reference ([`FramePlan::fallback`] says so).
    pub mode: RenderMode,
    /// The passes' per-frame settings.
    pub passes: PassSettings,
}

impl FrameSettings {
    /// The reference image of `camera` with default options.
    pub fn new(camera: Camera, lighting: Lighting, aov: Aov) -> Self {
        Self {
            camera,
            lighting,
            aov,
            mode: RenderMode::Reference,
            passes: PassSettings::default(),
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
    /// The visibility G-buffer was asked for on a device that cannot run it.
    #[error(transparent)]
    Visibility(#[from] VisibilityUnsupported),
    /// An NTC mode was asked for before its package was given.
    #[error("no package is loaded for the {0} mode")]
    MissingPackage(RenderMode),
    /// A split view's output is not of the format the view was built for.
    #[error(
        "split view: the output is {output:?} but the view was built for {built:?}; build \
         the split view for the output texture's format"
    )]
    SplitFormat {
        /// The output texture's format.
        output: wgpu::TextureFormat,
        /// The format given to [`split::SplitView::new`].
        built: wgpu::TextureFormat,
    },
    /// A frame size this device cannot render or read back.
    #[error("a {width}x{height} frame is too large for this GPU: {reason}")]
    FrameTooLarge {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
        /// Which device limit it exceeds.
        reason: String,
    },
    /// An NTC mode's path cannot run (the failure the renderer keeps).
    #[error(transparent)]
    Unusable(Arc<Unusable>),
}

/// Why a `size` frame cannot be rendered and read back under `limits`, checked before any
/// target is created: a side past the largest texture side, or the read-back of the
/// output (4 bytes a pixel, rows padded to 256 bytes) past the largest buffer.
pub fn check_frame_size(limits: &wgpu::Limits, size: (u32, u32)) -> Result<(), RenderError> {
    let (width, height) = size;
    let too_large = |reason: String| RenderError::FrameTooLarge {
        width,
        height,
        reason,
    };
    let side = limits.max_texture_dimension_2d;
    if width > side || height > side {
        return Err(too_large(format!(
            "its largest texture side is {side} pixels"
        )));
    }
    let row = u64::from(crate::gpu::readback::padded_bytes_per_row(
        width.saturating_mul(4),
    ));
    let readback = row * u64::from(height);
    if readback > limits.max_buffer_size {
        return Err(too_large(format!(
            "reading it back needs a buffer of {readback} bytes, its largest buffer is {} bytes",
            limits.max_buffer_size
        )));
    }
    Ok(())
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

/// Which pipeline NTC modes decode with: the kernel and the screen tile (changing either
/// builds the decode pass again, and a tile change the divergence pass and its target).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelChoice {
    /// The decode kernel; `None`: the best the device runs ([`NtcKernel::best`]), or
    /// f16, else f32, when that one fails to build for the model or the adapter.
    pub kernel: Option<NtcKernel>,
    /// Screen tile of the decode and divergence passes.
    pub tile: TileSize,
}

/// A package's bake for inference on load: the block compression asked for, and the
/// baked textures or why baking failed.
type Bake = (
    (Option<Transcode>, BakeKernel),
    Result<BakedMaterials, Arc<Unusable>>,
);

/// One NTC mode's package on the GPU.
#[derive(Debug)]
struct LoadedPackage {
    package: NtcPackage,
    gpu: NtcSceneGpu,
    /// Per scene material, its decoder in this package.
    decoders: DecoderMap,
    /// Inference on load: the package baked into textures (with the block compression
    /// asked for) on first use, or why baking failed.
    baked: Option<Bake>,
}

/// The per-pixel decode pass for one decoder shape (the first package's, then whichever
/// was last asked for) and the current [`KernelChoice`], or why it cannot be built.
#[derive(Debug)]
struct DecodePath {
    config: NtcConfig,
    pass: Result<NtcDecodePass, Arc<Unusable>>,
    /// Why the last frame could not record the pass ([`Unusable::Record`]), so that a
    /// failure repeated frame after frame is logged once.
    record_failure: Option<Arc<Unusable>>,
}

impl DecodePath {
    /// Record the decode pass into `out`. A failure to record is kept, logged unless the
    /// last frame failed the same way, and returned, so that the caller draws the
    /// reference and its plan says why.
    fn record(
        &mut self,
        frame: &mut FrameEncoder<'_>,
        inputs: &DecodeInputs<'_>,
        out: &MaterialTargets,
    ) -> Result<(), Arc<Unusable>> {
        let pass = self.pass.as_mut().map_err(|e| Arc::clone(e))?;
        let failure = pass.record(frame, inputs, out).err().map(|e| {
            let failure = Arc::new(Unusable::Record(e));
            let repeated = self
                .record_failure
                .as_ref()
                .is_some_and(|f| f.to_string() == failure.to_string());
            if !repeated {
                log::error!("{failure}");
            }
            failure
        });
        self.record_failure.clone_from(&failure);
        failure.map_or(Ok(()), Err)
    }
}

/// The passes of a frame, one struct each.
#[derive(Debug)]
struct Passes {
    shadow: ShadowPass,
    gbuffer: GBufferPass,
    /// Present in [`GBufferMode::Visibility`].
    gbuffer_resolve: Option<GBufferResolvePass>,
    reference: ReferencePass,
    lighting: LightingPass,
    /// The comparison's own lighting pass (its own bind group over the comparison's
    /// material targets).
    reference_lighting: LightingPass,
    temporal: TemporalPass,
    tonemap: TonemapPass,
    divergence: DivergencePass,
    heatmap: HeatmapPass,
    image_error: ImageErrorPass,
}

/// State a frame carries over to the next: which material path the temporal history was
/// accumulated with, and what the next frame's motion and blue noise continue from.
/// Whether there is a history at all is the temporal pass's to say
/// ([`TemporalPass::has_history`]): it owns the history.
#[derive(Debug, Default)]
struct History {
    /// The material path of the last recorded frame.
    path: Option<MaterialPath>,
    /// The previous frame's camera (motion vectors), `None` after a restart.
    prev_clip_from_world: Option<Mat4>,
    /// Frames since the history restarted (the blue noise's frame offset).
    frame_index: u32,
}

impl History {
    /// Start over: the next frame ignores the history and has no motion.
    fn restart(&mut self) {
        *self = Self::default();
    }
}

/// The deferred renderer for one scene.
#[derive(Debug)]
pub struct Renderer {
    /// The uploaded scene.
    pub scene: SceneGpu,
    targets: FrameTargets,
    frame_buffer: wgpu::Buffer,
    blue_noise: BlueNoise,
    bounds: crate::scene::Aabb,
    /// One decoder per texture set: the baseline decoder map.
    baseline_map: DecoderMap,
    packages: HashMap<RenderMode, LoadedPackage>,
    decode: Option<DecodePath>,
    kernel_choice: KernelChoice,
    passes: Passes,
    history: History,
}

impl Renderer {
    /// Upload `scene` with its decoded texture sets `textures` and build every pass for a
    /// `size` output in `output_format`; `anisotropy` caps the material sampler's (`None`:
    /// [`default_anisotropy`]).
    pub fn new(
        ctx: &GpuContext,
        scene: &Scene,
        textures: &SceneTextures,
        anisotropy: Option<u16>,
        size: (u32, u32),
        output_format: wgpu::TextureFormat,
    ) -> Result<Self, RenderError> {
        let device = &ctx.device;
        check_frame_size(&device.limits(), size)?;
        let anisotropy = if ctx.granted.anisotropic_filtering {
            anisotropy
                .unwrap_or(default_anisotropy(&ctx.info))
                .clamp(1, 16)
        } else {
            1
        };
        let scene_gpu = SceneGpu::upload(device, &ctx.queue, scene, textures, anisotropy)?;
        let frame_buffer = crate::gpu::layout::uniform_buffer::<FrameUniform>(device, "frame");
        let baseline: Vec<u32> = scene_gpu
            .material_sets
            .iter()
            .map(|s| s.map_or(NO_DECODER, |s| s as u32))
            .collect();
        let kernel_choice = KernelChoice::default();
        let gbuffer_mode = GBufferMode::default_for(ctx);
        let layout = &scene_gpu.material_layout;
        let passes = Passes {
            shadow: ShadowPass::new(ctx, layout)?,
            gbuffer: GBufferPass::new(ctx, layout, gbuffer_mode)?,
            gbuffer_resolve: resolve_pass(ctx, gbuffer_mode)?,
            reference: ReferencePass::new(ctx, layout, scene_gpu.material_bind_groups.len())?,
            lighting: LightingPass::new(ctx)?,
            reference_lighting: LightingPass::new(ctx)?,
            temporal: TemporalPass::new(ctx, size)?,
            tonemap: TonemapPass::new(ctx, output_format)?,
            divergence: DivergencePass::new(ctx, kernel_choice.tile)?,
            heatmap: HeatmapPass::new(ctx, output_format)?,
            image_error: ImageErrorPass::new(ctx)?,
        };
        Ok(Self {
            targets: FrameTargets::new(device, size, kernel_choice.tile, gbuffer_mode),
            frame_buffer,
            blue_noise: BlueNoise::new(device, &ctx.queue),
            bounds: scene.bounds,
            baseline_map: DecoderMap::new(device, "divergence.baseline_map", &baseline),
            scene: scene_gpu,
            packages: HashMap::new(),
            decode: None,
            kernel_choice,
            passes,
            history: History::default(),
        })
    }

    /// Current output size in pixels.
    pub fn size(&self) -> (u32, u32) {
        self.targets.size()
    }

    /// The frame's targets (as the last recorded frame left them).
    pub fn targets(&self) -> &FrameTargets {
        &self.targets
    }

    /// The sun's shadow map (the shadow pass's, as the last recorded frame left it).
    pub fn shadow_map(&self) -> &targets::Target {
        self.passes.shadow.map()
    }

    /// Reallocate the frame's targets and the temporal history for `size`; the history
    /// restarts.
    pub fn resize(&mut self, device: &wgpu::Device, size: (u32, u32)) {
        let size = (size.0.max(1), size.1.max(1));
        if size == self.size() {
            return;
        }
        self.targets.resize(device, size);
        self.passes.temporal.resize(device, size);
    }

    /// How the G-buffer is made (by default [`GBufferMode::default_for`] the device).
    pub fn gbuffer_mode(&self) -> GBufferMode {
        self.passes.gbuffer.mode()
    }

    /// Make the G-buffer in `mode` from the next frame on: builds its passes and
    /// reallocates the G-buffer. A mode the device cannot run is an error and changes
    /// nothing.
    pub fn set_gbuffer_mode(
        &mut self,
        ctx: &GpuContext,
        mode: GBufferMode,
    ) -> Result<(), RenderError> {
        if mode == self.gbuffer_mode() {
            return Ok(());
        }
        mode.check(ctx)?;
        let gbuffer = GBufferPass::new(ctx, &self.scene.material_layout, mode)?;
        self.passes.gbuffer_resolve = resolve_pass(ctx, mode)?;
        self.passes.gbuffer = gbuffer;
        self.targets.set_gbuffer_mode(&ctx.device, mode);
        self.reset_history();
        Ok(())
    }

    /// Forget the previous frame (camera cut, lighting edit, mode switch): the next frame
    /// restarts the history, with no motion and the blue noise at its first frame, as a
    /// new renderer's first frame.
    pub fn reset_history(&mut self) {
        self.passes.temporal.reset();
        self.history.restart();
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
        let decoders = DecoderMap::new(
            &ctx.device,
            "divergence.current_map",
            gpu.decoder_of_material(),
        );
        self.packages.insert(
            mode,
            LoadedPackage {
                package,
                gpu,
                decoders,
                baked: None,
            },
        );
        Ok(())
    }

    /// Whether `mode` can render now (the reference always can).
    pub fn has_mode(&self, mode: RenderMode) -> bool {
        mode == RenderMode::Reference || self.packages.contains_key(&mode)
    }

    /// Build the decode pass of `mode` now (for its package's decoders, with the chosen
    /// kernel), so that a package or kernel that cannot be used is an error here instead
    /// of the logged fallback to the reference that [`Self::record`] makes.
    pub fn prepare(&mut self, ctx: &GpuContext, mode: RenderMode) -> Result<(), RenderError> {
        let Some(loaded) = self.packages.get(&mode) else {
            return if mode == RenderMode::Reference {
                Ok(())
            } else {
                Err(RenderError::MissingPackage(mode))
            };
        };
        let config = loaded.gpu.config().clone();
        match &self.decode_path(ctx, &config).pass {
            Ok(_) => Ok(()),
            Err(e) => Err(RenderError::Unusable(Arc::clone(e))),
        }
    }

    /// Bake `mode`'s package for inference on load now (block-compressed and evaluated as
    /// `passes` says), so that a bake that fails is an error here instead of the logged
    /// fallback of [`Self::record`]; returns the bake's GPU milliseconds where measured.
    pub fn prepare_baked(
        &mut self,
        ctx: &GpuContext,
        mode: RenderMode,
        passes: &PassSettings,
    ) -> Result<Option<f64>, RenderError> {
        if self.provide_baked(ctx, mode, passes) {
            self.reset_history();
        }
        match self.packages.get(&mode).and_then(|p| p.baked.as_ref()) {
            Some((_, Ok(baked))) => Ok(baked.gpu_ms),
            Some((_, Err(e))) => Err(RenderError::Unusable(Arc::clone(e))),
            None => Err(RenderError::MissingPackage(mode)),
        }
    }

    /// The GPU encoder's and ISPC's PSNR on `mode`'s package decoded and transcoded
    /// with `transcode` ([`transcode::transcode_quality`]).
    pub fn transcode_quality(
        &self,
        ctx: &GpuContext,
        mode: RenderMode,
        transcode: Transcode,
    ) -> Result<transcode::TranscodeQuality, RenderError> {
        let loaded = self
            .packages
            .get(&mode)
            .ok_or(RenderError::MissingPackage(mode))?;
        transcode::transcode_quality(ctx, &loaded.package, &loaded.gpu, transcode)
            .map_err(|e| RenderError::Unusable(Arc::new(Unusable::Bake(e))))
    }

    /// Decoders of `mode`'s package (None for the reference or a missing package).
    pub fn decoder_count(&self, mode: RenderMode) -> Option<usize> {
        self.packages.get(&mode).map(|p| p.gpu.decoder_count())
    }

    /// Choose the decode kernel and tile size. An unavailable explicitly chosen kernel is
    /// an error and leaves the previous choice (an automatic one falls back, see
    /// [`KernelChoice::kernel`]).
    pub fn set_kernel_choice(
        &mut self,
        ctx: &GpuContext,
        choice: KernelChoice,
    ) -> Result<(), RenderError> {
        if choice == self.kernel_choice {
            return Ok(());
        }
        if let Some(decode) = &self.decode {
            let pass = decode_pass(ctx, &decode.config, &choice)?;
            self.decode = Some(DecodePath {
                config: decode.config.clone(),
                pass: Ok(pass),
                record_failure: None,
            });
        }
        if choice.tile != self.kernel_choice.tile {
            self.passes.divergence = DivergencePass::new(ctx, choice.tile)?;
            self.targets.set_tile(&ctx.device, choice.tile);
        }
        self.kernel_choice = choice;
        Ok(())
    }

    /// The kernel NTC modes decode with (None before the first package or when the
    /// decode pass could not be built).
    pub fn kernel(&self) -> Option<NtcKernel> {
        self.decode
            .as_ref()
            .and_then(|d| d.pass.as_ref().ok())
            .map(NtcDecodePass::kernel)
    }

    /// FLOP of one decoded pixel's MLP for the decode path's decoders (None before the
    /// first package).
    pub fn decode_flops_per_pixel(&self) -> Option<f64> {
        self.decode
            .as_ref()
            .map(|d| NtcDecodePass::flops_per_pixel(&d.config))
    }

    /// The decode and divergence tile size.
    pub fn tile(&self) -> TileSize {
        self.kernel_choice.tile
    }

    /// The divergence statistics of a recent frame, when one is ready (non-blocking).
    pub fn try_divergence(&mut self, device: &wgpu::Device) -> Option<DivergenceStats> {
        self.passes.divergence.try_stats(device)
    }

    /// The divergence statistics of the last submitted frame (waits for the GPU).
    pub fn divergence_blocking(&mut self, ctx: &GpuContext) -> Result<DivergenceStats, GpuError> {
        self.passes.divergence.stats_blocking(ctx)
    }

    /// PSNR of the last submitted frame's accumulated radiance against the reference
    /// path's (both clamped to [0, 1] and sRGB-encoded, pixels with geometry), for a
    /// frame rendered with `compare`; None when identical or nothing was compared.
    pub fn psnr_blocking(&self, ctx: &GpuContext) -> Result<Option<f64>, GpuError> {
        self.targets.comparison.error.psnr_blocking(ctx)
    }

    /// The heatmap colour bar's rectangle on the output (for labels).
    pub fn color_bar_rect(&self) -> Option<PixelRect> {
        HeatmapPass::color_bar_rect(self.size())
    }

    /// The frame uniform for `settings` at the current size and history.
    pub fn frame_uniform(&self, settings: &FrameSettings) -> FrameUniform {
        let (w, h) = (self.size().0 as f32, self.size().1 as f32);
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
                .history
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
            frame_index: self.history.frame_index,
            aov: settings.aov as u32,
            exposure: l.exposure,
            _pad0: 0,
        }
    }

    /// The decode path for decoders of shape `config` with the current kernel choice: the one
    /// built, or a new one (a failure to build is kept, and logged once).
    fn decode_path(&mut self, ctx: &GpuContext, config: &NtcConfig) -> &DecodePath {
        let current = self
            .decode
            .as_ref()
            .is_some_and(|d| same_decoder_shape(&d.config, config));
        if !current {
            let pass = decode_pass(ctx, config, &self.kernel_choice).map_err(|e| {
                let failure = Arc::new(Unusable::DecodePass(e));
                log::error!("{failure}");
                failure
            });
            self.decode = Some(DecodePath {
                config: config.clone(),
                pass,
                record_failure: None,
            });
        }
        self.decode.as_ref().expect("set above")
    }

    /// Build what a frame of `settings` needs and the renderer lacks: the decode pass for
    /// its package's decoders, or (inference on load) its baked textures. Failures are
    /// kept (and logged once); the plan then falls back to the reference.
    fn provide(&mut self, ctx: &GpuContext, settings: &FrameSettings) {
        let mode = settings.mode;
        let Some(loaded) = self.packages.get(&mode) else {
            return;
        };
        if settings.passes.inference_on_load {
            if self.provide_baked(ctx, mode, &settings.passes) {
                // Other textures: frames of the previous bake must not blend in.
                self.reset_history();
            }
        } else {
            let config = loaded.gpu.config().clone();
            // A failure is kept in the decode path; the plan reads it.
            self.decode_path(ctx, &config);
        }
    }

    /// Bake `mode`'s package into textures (block-compressed and evaluated as `passes`
    /// says) unless it was (or failed to be) already; a failure is kept and logged once.
    /// A bake with another transcode or kernel is dropped first, so one baked copy is
    /// resident. Returns whether it baked (the textures changed).
    fn provide_baked(&mut self, ctx: &GpuContext, mode: RenderMode, passes: &PassSettings) -> bool {
        let Some(loaded) = self.packages.get_mut(&mode) else {
            return false;
        };
        let (transcode, kernel) = (passes.transcode, passes.bake_kernel);
        if loaded
            .baked
            .as_ref()
            .is_none_or(|(key, _)| *key != (transcode, kernel))
        {
            loaded.baked = None;
            let baked = NtcBakePass::new(ctx, &loaded.package.config, transcode, kernel)
                .and_then(|bake| {
                    bake.bake_materials(ctx, &loaded.package, &loaded.gpu, &self.scene)
                })
                .map_err(|e| {
                    let failure = Arc::new(Unusable::Bake(e));
                    log::error!("{mode}: {failure}");
                    failure
                });
            if let Ok(b) = &baked
                && let Some(ms) = b.gpu_ms
            {
                log::info!(
                    "{mode}: inference on load ({}, {} kernel) took {ms:.3} ms on the GPU",
                    transcode.map_or("rgba8", Transcode::name),
                    b.evaluation
                );
            }
            loaded.baked = Some(((transcode, kernel), baked));
            return true;
        }
        false
    }

    /// What a frame of `settings` does, given what the renderer holds now (see
    /// [`FramePlan`]). [`Self::record`] builds what the plan needs first, so its plan can
    /// fall back where this one, made before, expected the build to succeed.
    pub fn plan(&self, settings: &FrameSettings) -> FramePlan {
        let mode = settings.mode;
        let passes = &settings.passes;
        let (material, fallback) = self.material_path(mode, passes, self.decode.as_ref());
        let restart_history =
            !self.passes.temporal.has_history() || self.history.path != Some(material);
        FramePlan {
            requested: mode,
            material,
            fallback,
            restart_history,
            temporal: TemporalSettings {
                reset: passes.temporal.reset || restart_history,
                ..passes.temporal
            },
            compare: passes.compare && matches!(material, MaterialPath::Decode(_)),
            heatmap: passes.heatmap,
        }
    }

    /// The material path of `mode` given what the renderer holds and `decode` (the
    /// decode path its package would be decoded with), and why it is not `mode`'s own.
    fn material_path(
        &self,
        mode: RenderMode,
        passes: &PassSettings,
        decode: Option<&DecodePath>,
    ) -> (MaterialPath, Option<Fallback>) {
        match self.packages.get(&mode) {
            None if mode == RenderMode::Reference => (MaterialPath::Reference, None),
            None => (MaterialPath::Reference, Some(Fallback::NoPackage)),
            Some(loaded) if passes.inference_on_load => match &loaded.baked {
                Some((key, Err(e))) if *key == (passes.transcode, passes.bake_kernel) => (
                    MaterialPath::Reference,
                    Some(Fallback::Unusable(Arc::clone(e))),
                ),
                _ => (MaterialPath::Baked(mode), None),
            },
            Some(loaded) => match decode {
                Some(DecodePath {
                    config,
                    pass: Err(e),
                    ..
                }) if same_decoder_shape(config, loaded.gpu.config()) => (
                    MaterialPath::Reference,
                    Some(Fallback::Unusable(Arc::clone(e))),
                ),
                _ => (MaterialPath::Decode(mode), None),
            },
        }
    }

    /// Record only the G-buffer of `camera` (into [`Self::targets`]' `gbuffer`, with the
    /// original textures for alpha testing): what per-tile statistics of a view need, as
    /// the co-occurrence record does. The history is left as it is.
    pub fn record_gbuffer(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        camera: &Camera,
        profiler: &GpuProfiler,
    ) {
        let settings = FrameSettings::new(camera.clone(), Lighting::default(), Aov::Final);
        let uniform = self.frame_uniform(&settings);
        ctx.queue
            .write_buffer(&self.frame_buffer, 0, bytemuck::bytes_of(&uniform));
        let scene = SceneInputs {
            frame: &self.frame_buffer,
            scene: &self.scene,
            materials: &self.scene.material_bind_groups,
        };
        let mut frame = FrameEncoder::new(ctx, encoder, profiler);
        record_gbuffer_passes(&self.passes, &self.targets.gbuffer, &mut frame, &scene);
    }

    /// Record one frame of `settings` into `output` (a view of a texture in the output
    /// format) and return its plan. A package or kernel that cannot be used is logged
    /// once and the frame shows the reference ([`FramePlan::fallback`] says why), also
    /// when the decode pass fails to record this frame ([`Unusable::Record`]).
    pub fn record(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        output: &wgpu::TextureView,
        settings: &FrameSettings,
        profiler: &GpuProfiler,
    ) -> FramePlan {
        self.provide(ctx, settings);
        let mut plan = self.plan(settings);
        if plan.restart_history {
            self.history.restart();
        }
        let uniform = self.frame_uniform(settings);
        ctx.queue
            .write_buffer(&self.frame_buffer, 0, bytemuck::bytes_of(&uniform));

        let t = &self.targets;
        let p = &mut self.passes;
        let package = self.packages.get(&plan.mode());
        let scene = SceneInputs {
            frame: &self.frame_buffer,
            scene: &self.scene,
            materials: material_bind_groups(&self.packages, &self.scene, plan.material),
        };
        let mut frame = FrameEncoder::new(ctx, encoder, profiler);
        let frame = &mut frame;

        // scene ─► shadow map, G-buffer (visibility: ids + depth ─► resolve ─► G-buffer)
        p.shadow.record(
            frame,
            &scene,
            settings.lighting.shadows,
            uniform.light_clip_from_world,
        );
        record_gbuffer_passes(p, &t.gbuffer, frame, &scene);

        // G-buffer (+ package) ─► material targets; a decode that cannot record this
        // frame draws the reference, and the plan says so
        let inputs = MaterialInputs {
            scene,
            gbuffer: &t.gbuffer,
            blue_noise: &self.blue_noise.view,
            settings: &settings.passes.decode,
        };
        if let Err(failure) = record_materials(
            &p.reference,
            frame,
            &inputs,
            plan.material,
            package,
            self.decode.as_mut(),
            &t.materials,
        ) {
            plan.fall_back(Fallback::Unusable(failure));
        }

        // depth + materials + shadow map ─► HDR radiance
        let shadow_map = p.shadow.map();
        let lit = |materials| LightingInputs {
            frame: &self.frame_buffer,
            depth: &t.gbuffer.depth,
            materials,
            shadow_map,
        };
        p.lighting.record(frame, &lit(&t.materials), &t.hdr);

        // HDR + motion + depth (+ history) ─► accumulated radiance
        let temporal = TemporalInputs {
            hdr: &t.hdr,
            motion: &t.gbuffer.motion,
            depth: &t.gbuffer.depth,
            settings: &plan.temporal,
        };
        if let Err(e) = p.temporal.record(frame, &temporal, &t.accumulated) {
            log::error!("{e}");
        }

        // The reference path ─► comparison targets; accumulated vs reference ─► error
        if plan.compare {
            let c = &t.comparison;
            record_reference_comparison(p, t, &scene, frame);
            let compared = ImageErrorInputs {
                a: &t.accumulated,
                b: &c.hdr,
                material_ids: &t.gbuffer.material,
                space: ErrorSpace::SrgbEncoded,
            };
            if let Err(e) = p.image_error.record(frame, &compared, &c.error) {
                log::error!("image comparison unavailable: {e}");
            }
        }

        // accumulated + materials ─► output
        p.tonemap.record(
            frame,
            &TonemapInputs {
                frame: &self.frame_buffer,
                hdr: &t.accumulated,
                materials: &t.materials,
                material_ids: &t.gbuffer.material,
            },
            output,
        );

        // material ids + decoder maps ─► tile counts (+ statistics)
        let current = match plan.material {
            MaterialPath::Reference => &self.baseline_map,
            _ => package.map_or(&self.baseline_map, |p| &p.decoders),
        };
        p.divergence.record(
            frame,
            &DivergenceInputs {
                material_ids: &t.gbuffer.material,
                current,
                baseline: &self.baseline_map,
            },
            &t.tiles,
        );

        // tile counts or error ─► heatmap over the output
        if let Some(heatmap) = &plan.heatmap {
            let inputs = HeatmapInputs {
                material_ids: &t.gbuffer.material,
                tiles: &t.tiles,
                tile: t.tile(),
                error: &t.comparison.error.error,
            };
            p.heatmap.record(frame, &inputs, heatmap, output, t.size());
        }

        self.history = History {
            path: Some(plan.material),
            prev_clip_from_world: Some(Mat4::from_cols_array_2d(&uniform.clip_from_world)),
            frame_index: self.history.frame_index.wrapping_add(1),
        };
        plan
    }
}

/// Record the G-buffer passes of `passes` into `gbuffer`: the raster pass, and in
/// [`GBufferMode::Visibility`] the resolve after it.
fn record_gbuffer_passes(
    passes: &Passes,
    gbuffer: &targets::GBuffer,
    frame: &mut FrameEncoder<'_>,
    scene: &SceneInputs<'_>,
) {
    if let Err(e) = passes.gbuffer.record(frame, scene, gbuffer) {
        log::error!("{e}");
        return;
    }
    if let (Some(resolve), Some(ids)) = (&passes.gbuffer_resolve, &gbuffer.ids) {
        let inputs = ResolveInputs {
            frame: scene.frame,
            scene: scene.scene,
            ids,
            depth: &gbuffer.depth,
        };
        resolve.record(frame, &inputs, gbuffer);
    }
}

/// What the material passes read beside the package and the decode pass.
#[derive(Clone, Copy, Debug)]
struct MaterialInputs<'a> {
    /// The frame uniform, the scene's material constants and the textures the reference
    /// samples.
    scene: SceneInputs<'a>,
    gbuffer: &'a targets::GBuffer,
    blue_noise: &'a wgpu::TextureView,
    settings: &'a DecodeSettings,
}

/// Record the material targets `out` of `material`: the decode pass of `path` over
/// `package` when the path decodes and the pass was built, else, or when it fails to
/// record this frame, the reference pass. Returns why a built decode pass failed to
/// record (the path logs it).
fn record_materials(
    reference: &ReferencePass,
    frame: &mut FrameEncoder<'_>,
    inputs: &MaterialInputs<'_>,
    material: MaterialPath,
    package: Option<&LoadedPackage>,
    path: Option<&mut DecodePath>,
    out: &MaterialTargets,
) -> Result<(), Arc<Unusable>> {
    let mut recorded = Ok(());
    match (material, package, path) {
        (MaterialPath::Decode(_), Some(package), Some(path)) if path.pass.is_ok() => {
            let decode_inputs = DecodeInputs {
                frame: inputs.scene.frame,
                materials: &inputs.scene.scene.material_buffer,
                gbuffer: inputs.gbuffer,
                blue_noise: inputs.blue_noise,
                package: &package.gpu,
                settings: inputs.settings,
            };
            recorded = path.record(frame, &decode_inputs, out);
            if recorded.is_ok() {
                return recorded;
            }
        }
        _ => {}
    }
    let reference_inputs = ReferenceInputs {
        scene: inputs.scene,
        gbuffer: inputs.gbuffer,
    };
    reference.record(frame, &reference_inputs, out);
    recorded
}

/// The scene's textures as `path` samples them: a package's baked textures, or the
/// originals.
fn material_bind_groups<'a>(
    packages: &'a HashMap<RenderMode, LoadedPackage>,
    scene: &'a SceneGpu,
    path: MaterialPath,
) -> &'a [wgpu::BindGroup] {
    let baked = packages.get(&path.mode()).and_then(|p| p.baked.as_ref());
    match (path, baked) {
        (MaterialPath::Baked(_), Some((_, Ok(baked)))) => &baked.bind_groups,
        _ => &scene.material_bind_groups,
    }
}

/// Record the reference path of `scene` over its original textures into the comparison
/// targets of `targets`: its material targets, then their lit radiance.
fn record_reference_comparison(
    passes: &Passes,
    targets: &FrameTargets,
    scene: &SceneInputs<'_>,
    frame: &mut FrameEncoder<'_>,
) {
    let c = &targets.comparison;
    let originals = SceneInputs {
        materials: &scene.scene.material_bind_groups,
        ..*scene
    };
    let inputs = ReferenceInputs {
        scene: originals,
        gbuffer: &targets.gbuffer,
    };
    passes.reference.record(frame, &inputs, &c.materials);
    let lit = LightingInputs {
        frame: scene.frame,
        depth: &targets.gbuffer.depth,
        materials: &c.materials,
        shadow_map: passes.shadow.map(),
    };
    passes.reference_lighting.record(frame, &lit, &c.hdr);
}

/// The decode pass for `config` with `choice`'s kernel and tile. A kernel left to the renderer
/// (`None`) is the fastest measured ([`kernel_choice::best_measured`]); when that one fails to build (the model or the
/// adapter's matrix configurations rule it out, or the shader compiler fails), the failure
/// is logged and the pass falls back to f16 where supported, else f32. An explicitly
/// chosen kernel's failure is the error.
fn decode_pass(
    ctx: &GpuContext,
    config: &NtcConfig,
    choice: &KernelChoice,
) -> Result<NtcDecodePass, NtcRenderError> {
    if let Some(kernel) = choice.kernel {
        return NtcDecodePass::new(ctx, config, kernel, choice.tile);
    }
    let mut kernels = vec![kernel_choice::best_measured(ctx, config)];
    for fallback in [NtcKernel::F16, NtcKernel::F32] {
        if fallback.supported(&ctx.granted) && !kernels.contains(&fallback) {
            kernels.push(fallback);
        }
    }
    let mut result = NtcDecodePass::new(ctx, config, kernels[0], choice.tile);
    for pair in kernels.windows(2) {
        let Err(e) = &result else { break };
        log::warn!("NTC decode: {e}; falling back to the {} kernel", pair[1]);
        result = NtcDecodePass::new(ctx, config, pair[1], choice.tile);
    }
    result
}

/// The resolve pass of `mode` (only [`GBufferMode::Visibility`] has one).
fn resolve_pass(
    ctx: &GpuContext,
    mode: GBufferMode,
) -> Result<Option<GBufferResolvePass>, KernelError> {
    match mode {
        GBufferMode::Raster => Ok(None),
        GBufferMode::Visibility => GBufferResolvePass::new(ctx).map(Some),
    }
}

/// Two configurations whose decoders the same decode pipeline runs (the latent grid
/// scale does not change the shader).
fn same_decoder_shape(a: &NtcConfig, b: &NtcConfig) -> bool {
    let mut a = a.clone();
    a.preset = b.preset;
    &a == b
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum as _;

    #[test]
    fn render_modes_are_the_reference_and_every_strategy_once_under_one_name() {
        let strategies: Vec<Strategy> = RenderMode::ALL
            .iter()
            .filter_map(|m| m.strategy())
            .collect();
        assert_eq!(RenderMode::ALL[0], RenderMode::Reference);
        assert_eq!(strategies.len(), Strategy::value_variants().len());
        for s in Strategy::value_variants() {
            assert!(strategies.contains(s), "{s} has no render mode");
        }
        for mode in RenderMode::ALL {
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{}\"", mode.name()));
            assert_eq!(serde_json::from_str::<RenderMode>(&json).unwrap(), mode);
            assert_eq!(RenderMode::from_str(mode.name(), false).unwrap(), mode);
            assert_eq!(
                mode.strategy().map(Strategy::name).unwrap_or("reference"),
                mode.name()
            );
        }
        assert!(serde_json::from_str::<RenderMode>("\"clusterd\"").is_err());
    }
}
