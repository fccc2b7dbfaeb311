//! Bind-group layout entries, bind groups and colour targets in one line each, for
//! every render pass and compute kernel (the renderer's passes and the NTC trainer), and
//! [`Slot`], the compact binding description a [`super::ComputeKernel`] builds its
//! layouts from ([`declared_slots`] reads them from a shader's WGSL declarations).

/// A uniform buffer binding.
pub fn uniform(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
    buffer(binding, visibility, wgpu::BufferBindingType::Uniform, false)
}

/// A read-only storage buffer binding.
pub fn storage(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
    let ty = wgpu::BufferBindingType::Storage { read_only: true };
    buffer(binding, visibility, ty, false)
}

/// A read-write storage buffer binding.
pub fn storage_rw(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
    let ty = wgpu::BufferBindingType::Storage { read_only: false };
    buffer(binding, visibility, ty, false)
}

/// A buffer binding of `ty`, with a dynamic offset when `dynamic`.
pub fn buffer(
    binding: u32,
    visibility: wgpu::ShaderStages,
    ty: wgpu::BufferBindingType,
    dynamic: bool,
) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility,
        ty: wgpu::BindingType::Buffer {
            ty,
            has_dynamic_offset: dynamic,
            min_binding_size: None,
        },
        count: None,
    }
}

/// A 2D texture read with `textureLoad` (no sampler), visible to fragment and compute.
pub fn texture(binding: u32, sample_type: wgpu::TextureSampleType) -> wgpu::BindGroupLayoutEntry {
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

/// A depth texture.
pub fn depth_texture(binding: u32) -> wgpu::BindGroupLayoutEntry {
    texture(binding, wgpu::TextureSampleType::Depth)
}

/// A write-only 2D storage texture of `format`, visible to compute.
pub fn write_texture(binding: u32, format: wgpu::TextureFormat) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::StorageTexture {
            access: wgpu::StorageTextureAccess::WriteOnly,
            format,
            view_dimension: wgpu::TextureViewDimension::D2,
        },
        count: None,
    }
}

/// A comparison sampler, visible to fragment.
pub fn comparison_sampler(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT,
        ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Comparison),
        count: None,
    }
}

/// A uniform buffer holding one `T`, written with `queue.write_buffer` before each use.
pub fn uniform_buffer<T>(device: &wgpu::Device, label: &str) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: std::mem::size_of::<T>() as u64,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// A bind group of `layout` over `(binding, resource)` pairs.
pub fn bind_group(
    device: &wgpu::Device,
    label: &str,
    layout: &wgpu::BindGroupLayout,
    resources: &[(u32, wgpu::BindingResource<'_>)],
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry<'_>> = resources
        .iter()
        .map(|(binding, resource)| wgpu::BindGroupEntry {
            binding: *binding,
            resource: resource.clone(),
        })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout,
        entries: &entries,
    })
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
    color_attachment(view, wgpu::LoadOp::Clear(color))
}

/// A colour attachment drawn over (its contents kept) and stored.
pub fn load_color(view: &wgpu::TextureView) -> Option<wgpu::RenderPassColorAttachment<'_>> {
    color_attachment(view, wgpu::LoadOp::Load)
}

/// A 2D texture of `size` (width, height) with `mips` levels, one sample and no other
/// view formats.
pub fn texture_2d(
    label: &str,
    size: (u32, u32),
    mips: u32,
    format: wgpu::TextureFormat,
    usage: wgpu::TextureUsages,
) -> wgpu::TextureDescriptor<'_> {
    wgpu::TextureDescriptor {
        label: Some(label),
        size: wgpu::Extent3d {
            width: size.0,
            height: size.1,
            depth_or_array_layers: 1,
        },
        mip_level_count: mips,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage,
        view_formats: &[],
    }
}

/// A depth attachment of `view` (no stencil), loaded with `load` and stored per `store`.
pub fn depth_attachment(
    view: &wgpu::TextureView,
    load: wgpu::LoadOp<f32>,
    store: wgpu::StoreOp,
) -> Option<wgpu::RenderPassDepthStencilAttachment<'_>> {
    Some(wgpu::RenderPassDepthStencilAttachment {
        view,
        depth_ops: Some(wgpu::Operations { load, store }),
        stencil_ops: None,
    })
}

/// A depth test of `format` comparing with `compare`, writing depth when `write`; no
/// stencil, no bias.
pub fn depth_test(
    format: wgpu::TextureFormat,
    write: bool,
    compare: wgpu::CompareFunction,
) -> wgpu::DepthStencilState {
    wgpu::DepthStencilState {
        format,
        depth_write_enabled: Some(write),
        depth_compare: Some(compare),
        stencil: Default::default(),
        bias: Default::default(),
    }
}

fn color_attachment(
    view: &wgpu::TextureView,
    load: wgpu::LoadOp<wgpu::Color>,
) -> Option<wgpu::RenderPassColorAttachment<'_>> {
    Some(wgpu::RenderPassColorAttachment {
        view,
        depth_slice: None,
        resolve_target: None,
        ops: wgpu::Operations {
            load,
            store: wgpu::StoreOp::Store,
        },
    })
}

/// One binding of a compute kernel's bind group, as the WGSL declares it. In a group
/// described by a list of slots, slot `i` is `@binding(i)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// `var<uniform>`.
    Uniform,
    /// `var<uniform>` bound with a dynamic offset.
    DynamicUniform,
    /// `var<storage, read>`.
    Storage,
    /// `var<storage, read_write>`.
    StorageRw,
    /// `texture_2d<f32>` read with `textureLoad`.
    FloatTexture,
    /// `texture_2d<u32>`.
    UintTexture,
    /// `texture_depth_2d`.
    DepthTexture,
    /// `texture_storage_2d<format, write>`.
    WriteTexture(wgpu::TextureFormat),
    /// `sampler_comparison`.
    ComparisonSampler,
}

impl Slot {
    /// The layout entry of this slot at `binding`, visible to compute.
    pub fn entry(self, binding: u32) -> wgpu::BindGroupLayoutEntry {
        self.entry_visible(binding, wgpu::ShaderStages::COMPUTE)
    }

    /// The layout entry of this slot at `binding`, visible to `visibility`.
    pub fn entry_visible(
        self,
        binding: u32,
        visibility: wgpu::ShaderStages,
    ) -> wgpu::BindGroupLayoutEntry {
        let compute = wgpu::ShaderStages::COMPUTE;
        let mut entry = match self {
            Slot::Uniform => uniform(binding, compute),
            Slot::DynamicUniform => {
                buffer(binding, compute, wgpu::BufferBindingType::Uniform, true)
            }
            Slot::Storage => storage(binding, compute),
            Slot::StorageRw => storage_rw(binding, compute),
            Slot::FloatTexture => float_texture(binding),
            Slot::UintTexture => uint_texture(binding),
            Slot::DepthTexture => depth_texture(binding),
            Slot::WriteTexture(format) => write_texture(binding, format),
            Slot::ComparisonSampler => comparison_sampler(binding),
        };
        entry.visibility = visibility;
        entry
    }
}

/// The bind-group layout of `slots` (slot `i` at binding `i`).
pub fn group_layout(device: &wgpu::Device, label: &str, slots: &[Slot]) -> wgpu::BindGroupLayout {
    let compute = wgpu::ShaderStages::COMPUTE;
    slots_layout(device, label, (0..).zip(slots.iter().copied()), compute)
}

/// The bindings of group `group` as `module` declares them, in binding order, of the
/// globals `keep` accepts: each one's [`Slot`] read from its WGSL type. `Err` names a
/// binding no slot describes (arrays of bindings, sampled or multisampled textures other
/// than 2-D `textureLoad` ones, read-write storage textures, filtering samplers).
pub fn declared_slots(
    module: &naga::Module,
    group: u32,
    keep: impl Fn(naga::Handle<naga::GlobalVariable>) -> bool,
) -> Result<Vec<(u32, Slot)>, String> {
    use naga::{AddressSpace, ImageClass, ImageDimension, ScalarKind, StorageAccess, TypeInner};
    let mut slots = Vec::new();
    for (handle, var) in module.global_variables.iter() {
        let Some(binding) = var
            .binding
            .as_ref()
            .filter(|b| b.group == group && keep(handle))
        else {
            continue;
        };
        let inner = &module.types[var.ty].inner;
        let slot = match (var.space, inner) {
            (AddressSpace::Uniform, _) => Some(Slot::Uniform),
            (AddressSpace::Storage { access }, _) => {
                Some(if access.contains(StorageAccess::STORE) {
                    Slot::StorageRw
                } else {
                    Slot::Storage
                })
            }
            (
                AddressSpace::Handle,
                &TypeInner::Image {
                    dim: ImageDimension::D2,
                    arrayed: false,
                    class,
                },
            ) => match class {
                ImageClass::Sampled {
                    kind: ScalarKind::Float,
                    multi: false,
                } => Some(Slot::FloatTexture),
                ImageClass::Sampled {
                    kind: ScalarKind::Uint,
                    multi: false,
                } => Some(Slot::UintTexture),
                ImageClass::Depth { multi: false } => Some(Slot::DepthTexture),
                ImageClass::Storage { format, access } if access == StorageAccess::STORE => {
                    storage_format(format).map(Slot::WriteTexture)
                }
                _ => None,
            },
            (AddressSpace::Handle, &TypeInner::Sampler { comparison: true }) => {
                Some(Slot::ComparisonSampler)
            }
            _ => None,
        };
        let slot = slot.ok_or_else(|| {
            let name = var.name.as_deref().unwrap_or("?");
            format!(
                "@group({group}) @binding({}) `{name}`: no binding slot describes its type {inner:?}",
                binding.binding
            )
        })?;
        slots.push((binding.binding, slot));
    }
    slots.sort_by_key(|&(binding, _)| binding);
    Ok(slots)
}

/// The texture format of a WGSL storage-texture format, for the formats wgpu can write
/// from a compute shader without extra features.
fn storage_format(format: naga::StorageFormat) -> Option<wgpu::TextureFormat> {
    use naga::StorageFormat as N;
    use wgpu::TextureFormat as T;
    Some(match format {
        N::R32Float => T::R32Float,
        N::R32Uint => T::R32Uint,
        N::R32Sint => T::R32Sint,
        N::Rg32Float => T::Rg32Float,
        N::Rg32Uint => T::Rg32Uint,
        N::Rgba8Unorm => T::Rgba8Unorm,
        N::Rgba8Snorm => T::Rgba8Snorm,
        N::Rgba8Uint => T::Rgba8Uint,
        N::Rgba16Float => T::Rgba16Float,
        N::Rgba16Uint => T::Rgba16Uint,
        N::Rgba32Float => T::Rgba32Float,
        N::Rgba32Uint => T::Rgba32Uint,
        _ => return None,
    })
}

/// A bind-group layout of `(binding, slot)` pairs visible to `visibility`, labelled
/// `label`.
pub fn slots_layout(
    device: &wgpu::Device,
    label: &str,
    slots: impl IntoIterator<Item = (u32, Slot)>,
    visibility: wgpu::ShaderStages,
) -> wgpu::BindGroupLayout {
    let entries: Vec<wgpu::BindGroupLayoutEntry> = slots
        .into_iter()
        .map(|(binding, slot)| slot.entry_visible(binding, visibility))
        .collect();
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(label),
        entries: &entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_slots_read_each_binding_type() {
        let module = naga::front::wgsl::parse_str(
            "enable wgpu_binding_array;
             @group(0) @binding(3) var<storage, read_write> out: array<u32>;
             @group(0) @binding(0) var<uniform> params: vec4u;
             @group(0) @binding(1) var colour: texture_2d<f32>;
             @group(0) @binding(2) var word: texture_2d<u32>;
             @group(0) @binding(4) var<storage, read> input: array<f32>;
             @group(0) @binding(5) var depth: texture_depth_2d;
             @group(0) @binding(6) var output: texture_storage_2d<rgba16float, write>;
             @group(0) @binding(7) var shadow: sampler_comparison;
             @group(1) @binding(0) var<uniform> other: vec4f;
             @group(2) @binding(0) var filtered: sampler;
             @group(3) @binding(0) var many: binding_array<texture_2d<f32>, 4>;
             @group(4) @binding(0) var cube: texture_cube<f32>;",
        )
        .unwrap();
        let group0 = declared_slots(&module, 0, |_| true).unwrap();
        assert_eq!(
            group0,
            [
                (0, Slot::Uniform),
                (1, Slot::FloatTexture),
                (2, Slot::UintTexture),
                (3, Slot::StorageRw),
                (4, Slot::Storage),
                (5, Slot::DepthTexture),
                (6, Slot::WriteTexture(wgpu::TextureFormat::Rgba16Float)),
                (7, Slot::ComparisonSampler),
            ]
        );
        assert_eq!(
            declared_slots(&module, 1, |_| true).unwrap(),
            [(0, Slot::Uniform)]
        );
        assert_eq!(declared_slots(&module, 9, |_| true).unwrap(), []);
        for (group, name) in [(2, "filtered"), (3, "many"), (4, "cube")] {
            let err = declared_slots(&module, group, |_| true).unwrap_err();
            assert!(
                err.contains(&format!("@group({group}) @binding(0) `{name}`")),
                "{err}"
            );
        }
    }

    #[test]
    fn slots_number_their_bindings_and_are_compute_only() {
        let slots = [
            Slot::Uniform,
            Slot::StorageRw,
            Slot::WriteTexture(wgpu::TextureFormat::R32Float),
        ];
        let entries: Vec<_> = slots
            .iter()
            .enumerate()
            .map(|(i, s)| s.entry(i as u32))
            .collect();
        assert_eq!(entries[2].binding, 2);
        assert!(
            entries
                .iter()
                .all(|e| e.visibility == wgpu::ShaderStages::COMPUTE)
        );
        assert!(matches!(
            entries[1].ty,
            wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: false },
                ..
            }
        ));
        assert!(matches!(
            Slot::DynamicUniform.entry(0).ty,
            wgpu::BindingType::Buffer {
                has_dynamic_offset: true,
                ..
            }
        ));
    }
}
