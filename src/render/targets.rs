//! The screen-sized textures that passes hand to each other: the G-buffer, the material
//! targets and the HDR colour. Owned by the [`super::Renderer`], recreated on resize.

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
    /// Material ids as depth (reference material pass).
    pub const MATERIAL_DEPTH: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
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
        let texture = device.create_texture(&wgpu::TextureDescriptor {
            label: Some(label),
            size: wgpu::Extent3d {
                width: size.0.max(1),
                height: size.1.max(1),
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::TEXTURE_BINDING
                | wgpu::TextureUsages::COPY_SRC
                | extra_usage,
            view_formats: &[],
        });
        let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
        Self { texture, view }
    }
}

/// Everything the G-buffer pass writes.
#[derive(Debug)]
pub struct GBuffer {
    /// See [`format::NORMAL_TANGENT`].
    pub normal_tangent: Target,
    /// See [`format::UV`].
    pub uv: Target,
    /// See [`format::UV_GRAD`].
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
