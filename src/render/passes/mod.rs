//! The render passes, one struct each, with `new` / `resize` (or `bind`) / `record`.
//! Every pass is named by one label (its `LABEL` constant) that names its wgpu objects,
//! its timestamp scope and its timing row.

pub mod divergence;
pub mod fullscreen;
pub mod gbuffer;
pub mod heatmap;
pub mod image_error;
pub mod lighting;
pub mod ntc_bake;
pub mod ntc_decode;
pub mod reference;
pub mod scene_draw;
pub mod shadow;
pub mod temporal;
pub mod tonemap;

/// Helpers shared by the passes' bind-group layouts.
pub(crate) mod layout {
    /// A uniform buffer binding.
    pub fn uniform(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
        wgpu::BindGroupLayoutEntry {
            binding,
            visibility,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }
    }

    /// A read-only storage buffer binding.
    pub fn storage(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
        wgpu::BindGroupLayoutEntry {
            binding,
            visibility,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: true },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }
    }

    /// A 2D texture read with `textureLoad` (no sampler).
    pub fn texture(
        binding: u32,
        sample_type: wgpu::TextureSampleType,
    ) -> wgpu::BindGroupLayoutEntry {
        wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::FRAGMENT | wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Texture {
                sample_type,
                view_dimension: wgpu::TextureViewDimension::D2,
                multisampled: false,
            },
            count: None,
        }
    }

    /// An unfilterable float texture.
    pub fn float_texture(binding: u32) -> wgpu::BindGroupLayoutEntry {
        texture(
            binding,
            wgpu::TextureSampleType::Float { filterable: false },
        )
    }

    /// A `u32` texture.
    pub fn uint_texture(binding: u32) -> wgpu::BindGroupLayoutEntry {
        texture(binding, wgpu::TextureSampleType::Uint)
    }

    /// A comparison sampler.
    pub fn comparison_sampler(binding: u32) -> wgpu::BindGroupLayoutEntry {
        wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::FRAGMENT,
            ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Comparison),
            count: None,
        }
    }

    /// A depth texture.
    pub fn depth_texture(binding: u32) -> wgpu::BindGroupLayoutEntry {
        texture(binding, wgpu::TextureSampleType::Depth)
    }

    /// Bind group entries from `(binding, resource)` pairs.
    pub fn entries<'a>(list: &[(u32, wgpu::BindingResource<'a>)]) -> Vec<wgpu::BindGroupEntry<'a>> {
        list.iter()
            .map(|(binding, resource)| wgpu::BindGroupEntry {
                binding: *binding,
                resource: resource.clone(),
            })
            .collect()
    }

    /// A colour target without blending.
    pub fn target(format: wgpu::TextureFormat) -> Option<wgpu::ColorTargetState> {
        Some(wgpu::ColorTargetState {
            format,
            blend: None,
            write_mask: wgpu::ColorWrites::ALL,
        })
    }

    /// A colour attachment cleared to `color` and stored.
    pub fn clear_color(
        view: &wgpu::TextureView,
        color: wgpu::Color,
    ) -> Option<wgpu::RenderPassColorAttachment<'_>> {
        Some(wgpu::RenderPassColorAttachment {
            view,
            depth_slice: None,
            resolve_target: None,
            ops: wgpu::Operations {
                load: wgpu::LoadOp::Clear(color),
                store: wgpu::StoreOp::Store,
            },
        })
    }
}
