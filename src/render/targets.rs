//! The textures the passes of a frame hand to each other, all in one [`FrameTargets`]:
//! the G-buffer, the material targets, HDR radiance, the
//! accumulated radiance, the divergence tile counts and the reference comparison's
//! targets. Owned by the [`super::Renderer`]; reallocated on resize, the tile counts also
//! when the tile size changes.
//!
//! What outlives a frame is not here: the temporal history (a ping-pong pair) is state of
//! the temporal pass, owned, swapped and reset by it (STYLE pattern 2), and the sun's
//! shadow map is the shadow pass's, redrawn only when its inputs change. Everything here
//! is written before it is read within one frame, so no frame depends on what an earlier
//! one left in these textures.

use crate::gpu::layout;
use crate::render::passes::divergence::DivergencePass;
use crate::render::passes::image_error::ErrorTargets;
use crate::screen::tiles::TileSize;

/// G-buffer formats. Together 32 bytes per sample, wgpu's default
/// `max_color_attachment_bytes_per_sample`, so every adapter can bind them at once.
/// Every G-buffer colour format is also a core storage format, so the visibility
/// G-buffer's resolve can write them from compute.
pub mod format {
    /// Octahedral normal (xy) + octahedral tangent (zw).
    pub const NORMAL_TANGENT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;
    /// Material UV (f32: tiling UVs need the precision).
    pub const UV: wgpu::TextureFormat = wgpu::TextureFormat::Rg32Float;
    /// d(uv)/dx, d(uv)/dy.
    pub const UV_GRAD: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;
    /// Material id | bitangent sign.
    pub const MATERIAL: wgpu::TextureFormat = wgpu::TextureFormat::R32Uint;
    /// Screen-UV motion to the previous frame: two f16 packed into one word
    /// (`pack2x16float`, x in the low half), since `Rg16Float` is no storage format.
    pub const MOTION: wgpu::TextureFormat = wgpu::TextureFormat::R32Uint;
    /// Visibility G-buffer: the (instance slot, triangle of its draw) of each pixel.
    pub const VISIBILITY_IDS: wgpu::TextureFormat = wgpu::TextureFormat::Rg32Uint;
    /// Scene depth (reversed-Z).
    pub const DEPTH: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
    /// Material targets: base colour, normal+roughness+metallic, emissive+occlusion.
    pub const MATERIAL_TARGET: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;
    /// Linear HDR radiance.
    pub const HDR: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;
    /// Sun shadow map.
    pub const SHADOW: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
    /// Accumulated radiance (rgb) and sample count (a): the temporal pass's output.
    pub const ACCUMULATED: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;
}

/// One screen-sized texture and its default view.
#[derive(Debug)]
pub struct Target {
    /// The texture.
    pub texture: wgpu::Texture,
    /// Its full view.
    pub view: wgpu::TextureView,
}

impl Target {
    /// A render-attachment + sampled (+ storage/copy) texture of `size`.
    pub fn new(
        device: &wgpu::Device,
        label: &str,
        size: (u32, u32),
        format: wgpu::TextureFormat,
        extra_usage: wgpu::TextureUsages,
    ) -> Self {
        let texture = device.create_texture(&layout::texture_2d(
            label,
            (size.0.max(1), size.1.max(1)),
            1,
            format,
            wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::TEXTURE_BINDING
                | wgpu::TextureUsages::COPY_SRC
                | extra_usage,
        ));
        let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
        Self { texture, view }
    }

    /// Width and height in pixels.
    pub fn size(&self) -> (u32, u32) {
        (self.texture.width(), self.texture.height())
    }
}

/// How the G-buffer is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[derive(clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GBufferMode {
    /// The raster pass writes every G-buffer target.
    Raster,
    /// The raster pass writes depth and (instance, triangle) ids only; a compute pass
    /// (`passes::gbuffer_resolve`) rebuilds the other targets from them.
    Visibility,
}

/// Why the visibility G-buffer cannot run on a device.
#[derive(Debug, thiserror::Error)]
#[error(
    "the visibility G-buffer needs {missing}, which adapter `{adapter}` does not offer; \
     use the raster G-buffer (--gbuffer raster)"
)]
pub struct VisibilityUnsupported {
    /// What is missing.
    pub missing: String,
    /// The adapter's name.
    pub adapter: String,
}

/// Storage textures the resolve writes at once (every G-buffer target but depth).
pub const RESOLVE_STORAGE_TEXTURES: u32 = 5;

impl GBufferMode {
    /// Both modes.
    pub const ALL: [GBufferMode; 2] = [GBufferMode::Raster, GBufferMode::Visibility];

    /// The mode's name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            GBufferMode::Raster => "raster",
            GBufferMode::Visibility => "visibility",
        }
    }

    /// Whether `ctx`'s device runs the mode: the visibility G-buffer needs the
    /// `PRIMITIVE_INDEX` feature, storage binding of every G-buffer colour format and
    /// [`RESOLVE_STORAGE_TEXTURES`] storage textures per stage.
    pub fn check(self, ctx: &crate::gpu::GpuContext) -> Result<(), VisibilityUnsupported> {
        if self == GBufferMode::Raster {
            return Ok(());
        }
        let unsupported = |missing: String| VisibilityUnsupported {
            missing,
            adapter: ctx.info.name.clone(),
        };
        if !ctx.granted.primitive_index {
            return Err(unsupported("the PRIMITIVE_INDEX feature".into()));
        }
        let storage_formats = [
            format::NORMAL_TANGENT,
            format::UV,
            format::UV_GRAD,
            format::MATERIAL,
            format::MOTION,
        ];
        for f in storage_formats {
            let features = ctx.adapter.get_texture_format_features(f);
            if !features
                .allowed_usages
                .contains(wgpu::TextureUsages::STORAGE_BINDING)
                || !features
                    .flags
                    .contains(wgpu::TextureFormatFeatureFlags::STORAGE_WRITE_ONLY)
            {
                return Err(unsupported(format!("{f:?} storage textures")));
            }
        }
        let limit = ctx.device.limits().max_storage_textures_per_shader_stage;
        if limit < RESOLVE_STORAGE_TEXTURES {
            return Err(unsupported(format!(
                "{RESOLVE_STORAGE_TEXTURES} storage textures per shader stage (it has {limit})"
            )));
        }
        Ok(())
    }

    /// The default on `ctx`'s device: visibility where it runs, else raster.
    pub fn default_for(ctx: &crate::gpu::GpuContext) -> Self {
        match GBufferMode::Visibility.check(ctx) {
            Ok(()) => GBufferMode::Visibility,
            Err(_) => GBufferMode::Raster,
        }
    }
}

impl std::fmt::Display for GBufferMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything the G-buffer passes write. `normal_tangent`, `uv` and `uv_grad` are defined
/// only where `material` names a material (elsewhere they hold whatever an earlier frame
/// left): the passes do not clear them, and every reader looks at the material word first.
///
/// In [`GBufferMode::Visibility`] the raster pass writes `depth` and `ids`, and the
/// resolve writes the rest through storage views; in [`GBufferMode::Raster`] there are no
/// ids and no target has storage usage.
#[derive(Debug)]
pub struct GBuffer {
    /// See [`format::NORMAL_TANGENT`]; defined where `material` names a material.
    pub normal_tangent: Target,
    /// See [`format::UV`]; defined where `material` names a material.
    pub uv: Target,
    /// See [`format::UV_GRAD`]; defined where `material` names a material.
    pub uv_grad: Target,
    /// See [`format::MATERIAL`].
    pub material: Target,
    /// See [`format::MOTION`].
    pub motion: Target,
    /// See [`format::DEPTH`].
    pub depth: Target,
    /// See [`format::VISIBILITY_IDS`]; only in [`GBufferMode::Visibility`], defined where
    /// depth is not 0 (the far plane).
    pub ids: Option<Target>,
}

impl GBuffer {
    /// Allocate for `size` pixels and `mode`.
    pub fn new(device: &wgpu::Device, size: (u32, u32), mode: GBufferMode) -> Self {
        let none = wgpu::TextureUsages::empty();
        let resolved = match mode {
            GBufferMode::Raster => none,
            GBufferMode::Visibility => wgpu::TextureUsages::STORAGE_BINDING,
        };
        let target = |label, format| Target::new(device, label, size, format, resolved);
        Self {
            normal_tangent: target("gbuffer.normal_tangent", format::NORMAL_TANGENT),
            uv: target("gbuffer.uv", format::UV),
            uv_grad: target("gbuffer.uv_grad", format::UV_GRAD),
            material: target("gbuffer.material", format::MATERIAL),
            motion: target("gbuffer.motion", format::MOTION),
            depth: Target::new(device, "gbuffer.depth", size, format::DEPTH, none),
            ids: (mode == GBufferMode::Visibility)
                .then(|| Target::new(device, "gbuffer.ids", size, format::VISIBILITY_IDS, none)),
        }
    }

    /// The mode the G-buffer was allocated for.
    pub fn mode(&self) -> GBufferMode {
        if self.ids.is_some() {
            GBufferMode::Visibility
        } else {
            GBufferMode::Raster
        }
    }
}

/// The decoded material channels per pixel: written by a material pass (reference or
/// NTC decode), read by lighting and the AOV views.
#[derive(Debug)]
pub struct MaterialTargets {
    /// Linear base colour + alpha.
    pub base_color: Target,
    /// Octahedral shading normal, roughness, metallic.
    pub normal_rm: Target,
    /// Linear emissive + occlusion.
    pub emissive_ao: Target,
}

impl MaterialTargets {
    /// Allocate for `size` pixels; storage-capable so a compute decode can write them.
    pub fn new(device: &wgpu::Device, size: (u32, u32)) -> Self {
        let storage = wgpu::TextureUsages::STORAGE_BINDING;
        Self {
            base_color: Target::new(
                device,
                "material.base_color",
                size,
                format::MATERIAL_TARGET,
                storage,
            ),
            normal_rm: Target::new(
                device,
                "material.normal_rm",
                size,
                format::MATERIAL_TARGET,
                storage,
            ),
            emissive_ao: Target::new(
                device,
                "material.emissive_ao",
                size,
                format::MATERIAL_TARGET,
                storage,
            ),
        }
    }
}

/// The reference path's targets when a frame is compared against it.
#[derive(Debug)]
pub struct ComparisonTargets {
    /// The reference material pass's output.
    pub materials: MaterialTargets,
    /// Its lit radiance.
    pub hdr: Target,
    /// The per-pixel error and the partial sums of the image-error pass.
    pub error: ErrorTargets,
}

/// Every texture a frame's passes write and read. See the module docs.
#[derive(Debug)]
pub struct FrameTargets {
    size: (u32, u32),
    tile: TileSize,
    mode: GBufferMode,
    /// G-buffer passes → material passes, lighting, temporal, tonemap, divergence.
    pub gbuffer: GBuffer,
    /// Material pass → lighting, tonemap (AOVs).
    pub materials: MaterialTargets,
    /// Lighting → temporal.
    pub hdr: Target,
    /// Temporal → tonemap, image error.
    pub accumulated: Target,
    /// Divergence → heatmap: one texel of tile counts per tile.
    pub tiles: Target,
    /// The reference path's targets and the comparison's results.
    pub comparison: ComparisonTargets,
}

impl FrameTargets {
    /// Allocate for a `size` screen cut into `tile` tiles, with a G-buffer of `mode`.
    pub fn new(device: &wgpu::Device, size: (u32, u32), tile: TileSize, mode: GBufferMode) -> Self {
        let size = (size.0.max(1), size.1.max(1));
        Self {
            size,
            tile,
            mode,
            gbuffer: GBuffer::new(device, size, mode),
            materials: MaterialTargets::new(device, size),
            hdr: hdr_target(device, "hdr", size),
            accumulated: accumulated(device, size),
            tiles: DivergencePass::tile_target(device, tile, size),
            comparison: ComparisonTargets {
                materials: MaterialTargets::new(device, size),
                hdr: hdr_target(device, "reference.hdr", size),
                error: ErrorTargets::new(device, size),
            },
        }
    }

    /// Reallocate for a `size` screen.
    pub fn resize(&mut self, device: &wgpu::Device, size: (u32, u32)) {
        *self = Self::new(device, size, self.tile, self.mode);
    }

    /// Reallocate the G-buffer for `mode`.
    pub fn set_gbuffer_mode(&mut self, device: &wgpu::Device, mode: GBufferMode) {
        self.mode = mode;
        self.gbuffer = GBuffer::new(device, self.size, mode);
    }

    /// Reallocate the tile counts for `tile` tiles.
    pub fn set_tile(&mut self, device: &wgpu::Device, tile: TileSize) {
        self.tile = tile;
        self.tiles = DivergencePass::tile_target(device, tile, self.size);
    }

    /// Screen size in pixels.
    pub fn size(&self) -> (u32, u32) {
        self.size
    }

    /// The tile size of [`Self::tiles`].
    pub fn tile(&self) -> TileSize {
        self.tile
    }
}

/// A linear HDR radiance target, written by the lighting compute pass.
fn hdr_target(device: &wgpu::Device, label: &str, size: (u32, u32)) -> Target {
    Target::new(
        device,
        label,
        size,
        format::HDR,
        wgpu::TextureUsages::STORAGE_BINDING,
    )
}

/// The accumulated radiance, written by the temporal compute pass.
fn accumulated(device: &wgpu::Device, size: (u32, u32)) -> Target {
    Target::new(
        device,
        "temporal.resolved",
        size,
        format::ACCUMULATED,
        wgpu::TextureUsages::STORAGE_BINDING,
    )
}
