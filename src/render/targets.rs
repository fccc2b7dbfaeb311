//! The textures the passes of a frame hand to each other, all in one [`FrameTargets`]:
//! the sun's shadow map, the G-buffer, the material targets, HDR radiance, the
//! accumulated radiance, the divergence tile counts and the reference comparison's
//! targets. Owned by the [`super::Renderer`]; reallocated on resize, the tile counts also
//! when the tile size changes.
//!
//! The temporal history (a ping-pong pair that outlives a frame) is not here: it is state
//! of the temporal pass, owned, swapped and reset by it (STYLE pattern 2). Everything here
//! is written before it is read within one frame, so no frame depends on what an earlier
//! one left in these textures.

use crate::gpu::layout;
use crate::render::passes::divergence::DivergencePass;
use crate::render::passes::image_error::ErrorTargets;
use crate::render::passes::shadow::SHADOW_MAP_SIZE;
use crate::render::tiles::TileSize;

/// G-buffer formats. Together 32 bytes per sample, wgpu's default
/// `max_color_attachment_bytes_per_sample`, so every adapter can bind them at once.
pub mod format {
    /// Octahedral normal (xy) + octahedral tangent (zw).
    pub const NORMAL_TANGENT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;
    /// Material UV (f32: tiling UVs need the precision).
    pub const UV: wgpu::TextureFormat = wgpu::TextureFormat::Rg32Float;
    /// d(uv)/dx, d(uv)/dy.
    pub const UV_GRAD: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;
    /// Material id | bitangent sign.
    pub const MATERIAL: wgpu::TextureFormat = wgpu::TextureFormat::R32Uint;
    /// Screen-UV motion to the previous frame.
    pub const MOTION: wgpu::TextureFormat = wgpu::TextureFormat::Rg16Float;
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
}

/// Everything the G-buffer pass writes. `normal_tangent`, `uv` and `uv_grad` are defined
/// only where `material` names a material (elsewhere they hold whatever an earlier frame
/// left): the pass does not clear them, and every reader looks at the material word first.
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
}

impl GBuffer {
    /// Allocate for `size` pixels.
    pub fn new(device: &wgpu::Device, size: (u32, u32)) -> Self {
        let none = wgpu::TextureUsages::empty();
        Self {
            normal_tangent: Target::new(
                device,
                "gbuffer.normal_tangent",
                size,
                format::NORMAL_TANGENT,
                none,
            ),
            uv: Target::new(device, "gbuffer.uv", size, format::UV, none),
            uv_grad: Target::new(device, "gbuffer.uv_grad", size, format::UV_GRAD, none),
            material: Target::new(device, "gbuffer.material", size, format::MATERIAL, none),
            motion: Target::new(device, "gbuffer.motion", size, format::MOTION, none),
            depth: Target::new(device, "gbuffer.depth", size, format::DEPTH, none),
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
    /// The sun's shadow map ([`SHADOW_MAP_SIZE`]²): shadow → lighting.
    pub shadow_map: Target,
    /// G-buffer pass → material passes, lighting, temporal, tonemap, divergence.
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
    /// Allocate for a `size` screen cut into `tile` tiles.
    pub fn new(device: &wgpu::Device, size: (u32, u32), tile: TileSize) -> Self {
        let size = (size.0.max(1), size.1.max(1));
        Self {
            size,
            tile,
            shadow_map: Target::new(
                device,
                "shadow.map",
                (SHADOW_MAP_SIZE, SHADOW_MAP_SIZE),
                format::SHADOW,
                wgpu::TextureUsages::empty(),
            ),
            gbuffer: GBuffer::new(device, size),
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
        *self = Self::new(device, size, self.tile);
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
