//! A scene on the GPU: one vertex and one index buffer for all primitives, the instance
//! and material arrays, every texture set as three mipmapped RGBA8 textures (the three
//! canonical channel groups), and one bind group per material (the three textures, what
//! their samples lack, [`SampleFill`], and the sampler).
//!
//! The texture sets come decoded ([`SceneTextures`], loaded by the caller, who can hand
//! the same sets to the package compressor). The scene does not change after upload: other textures for some sets (NTC-decoded ones
//! from `passes::ntc_bake`) come as another list of material bind groups
//! ([`SceneGpu::material_bind_groups_with`]), which the renderer hands to the passes in
//! place of [`SceneGpu::material_bind_groups`].

use wgpu::util::DeviceExt as _;

use super::gpu_types::{InstanceData, MaterialData};
use super::targets::GBufferMode;
use crate::scene::{AlphaMode, Scene, Vertex};
use crate::screen::material_word::MAX_MATERIALS;
use crate::texture::{Channel, LoadOptions, SceneTextures, TextureSet, TextureSetDesc};

/// One indexed draw of the G-buffer pass.
#[derive(Clone, Copy, Debug)]
pub struct Draw {
    /// Range in the shared index buffer.
    pub first_index: u32,
    /// Number of indices.
    pub index_count: u32,
    /// Added to every index.
    pub base_vertex: i32,
    /// Slot in the instance array (passed as `first_instance`).
    pub instance: u32,
    /// Material index.
    pub material: u32,
    /// Needs the alpha-testing pipeline.
    pub alpha_test: bool,
    /// Drawn without back-face culling.
    pub double_sided: bool,
    /// Its instance's transform mirrors (negative determinant), which reverses the
    /// triangles' winding: drawn with clockwise front faces, as glTF asks.
    pub mirrored: bool,
}

/// How a scene is loaded and uploaded: its texture sets' [`LoadOptions`] (for
/// [`SceneTextures::load`]), the renderer's sampler anisotropy and its G-buffer mode.
#[derive(Clone, Debug, Default)]
pub struct UploadOptions {
    /// Render with material constants where an image is missing or undecodable.
    pub allow_missing_textures: bool,
    /// Downscale texture sets so that their largest side is at most this (tests, previews).
    pub max_texture_size: Option<u32>,
    /// Maximum anisotropy of the material sampler (1–16); `None`: [`super::default_anisotropy`].
    pub anisotropy: Option<u16>,
    /// How the renderer makes its G-buffer; `None`: [`GBufferMode::default_for`] the device.
    pub gbuffer: Option<GBufferMode>,
}

impl UploadOptions {
    /// How the texture sets are decoded.
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            allow_missing: self.allow_missing_textures,
            max_size: self.max_texture_size,
        }
    }
}

/// The scene's GPU resources.
#[derive(Debug)]
pub struct SceneGpu {
    /// Every primitive's vertices, concatenated.
    pub vertex_buffer: wgpu::Buffer,
    /// Every primitive's indices, concatenated (`u32`).
    pub index_buffer: wgpu::Buffer,
    /// `array<InstanceData>`.
    pub instance_buffer: wgpu::Buffer,
    /// `array<MaterialData>`.
    pub material_buffer: wgpu::Buffer,
    /// Per material: its texture set's three channel-group textures + sampler (group 1 of
    /// the reference pass, alpha-tested draws).
    pub material_bind_groups: Vec<wgpu::BindGroup>,
    /// Layout of [`Self::material_bind_groups`].
    pub material_layout: wgpu::BindGroupLayout,
    /// The G-buffer draws.
    pub draws: Vec<Draw>,
    /// Distinct texture sets (identity).
    pub sets: Vec<TextureSetDesc>,
    /// Per material, the index into [`Self::sets`] (None: constants only).
    pub material_sets: Vec<Option<usize>>,
    /// Images that were missing and replaced by constants (loaded with `allow_missing`).
    pub missing_textures: Vec<String>,
    /// Bytes of texture memory uploaded.
    pub texture_bytes: u64,
    /// Per material, the sampler of its [`Sampling`](crate::scene::Sampling) (one per
    /// distinct sampling, shared by the materials that sample alike).
    samplers: Vec<wgpu::Sampler>,
    /// Views of the neutral set (materials without textures).
    neutral_views: [wgpu::TextureView; 3],
    /// A zero [`SampleFill`]: the uploaded sets' RGBA8 textures store every channel.
    no_fill: wgpu::Buffer,
    /// Per set, the views of its uploaded textures.
    set_views: Vec<[wgpu::TextureView; 3]>,
}

/// Errors while uploading a scene.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// The decoded texture sets are not the scene's.
    #[error(
        "{path}: the texture sets were decoded for {got} materials but the scene has {expected}; \
         load them from this scene's materials"
    )]
    TexturesMismatch {
        /// Scene file.
        path: std::path::PathBuf,
        /// The scene's materials.
        expected: usize,
        /// Materials the texture sets were decoded for.
        got: usize,
    },
    /// A texture-set index past the scene's sets.
    #[error("texture set {set} does not exist: the scene has {count} sets")]
    UnknownSet {
        /// The index given.
        set: usize,
        /// Sets in the scene.
        count: usize,
    },
    /// The scene has more materials than the G-buffer's id field can hold.
    #[error("{path}: {count} materials exceed the renderer's limit of {limit}")]
    TooManyMaterials {
        /// Scene file.
        path: std::path::PathBuf,
        /// Material count.
        count: usize,
        /// Limit.
        limit: usize,
    },
    /// The device ran out of memory for the scene's textures or buffers.
    #[error(transparent)]
    OutOfMemory(#[from] crate::gpu::OutOfMemory),
}

/// The scene's geometry as the GPU holds it: every primitive's vertices and indices
/// concatenated, one [`InstanceData`] per drawn (instance, primitive) pair, and the
/// draws (sorted by pipeline and material). What [`SceneGpu::upload`] uploads, and what
/// CPU references (the visibility G-buffer's resolve) index as the GPU does.
#[derive(Clone, Debug)]
pub struct SceneGeometry {
    /// Every primitive's vertices, concatenated.
    pub vertices: Vec<Vertex>,
    /// Every primitive's indices, concatenated (relative to the primitive's first vertex).
    pub indices: Vec<u32>,
    /// One per drawn (instance, primitive) pair, indexed by [`Draw::instance`].
    pub instances: Vec<InstanceData>,
    /// The G-buffer draws.
    pub draws: Vec<Draw>,
}

impl SceneGeometry {
    /// The geometry of `scene`.
    pub fn build(scene: &Scene) -> Self {
        let mut vertices: Vec<Vertex> = Vec::new();
        let mut indices: Vec<u32> = Vec::new();
        let mut ranges = Vec::new();
        for mesh in &scene.meshes {
            let mut r = Vec::new();
            for p in &mesh.primitives {
                r.push((
                    indices.len() as u32,
                    p.indices.len() as u32,
                    vertices.len() as i32,
                ));
                vertices.extend_from_slice(&p.vertices);
                indices.extend_from_slice(&p.indices);
            }
            ranges.push(r);
        }
        let mut instances = Vec::new();
        let mut draws = Vec::new();
        for inst in &scene.instances {
            let normal = crate::scene::gltf_import::normal_matrix(&inst.world_from_local);
            let mirrored = glam::Mat3::from_mat4(inst.world_from_local).determinant() < 0.0;
            let normal4 = glam::Mat4::from_mat3(normal);
            for (p, &(first_index, index_count, base_vertex)) in scene.meshes[inst.mesh]
                .primitives
                .iter()
                .zip(&ranges[inst.mesh])
            {
                let m = &scene.materials[p.material];
                draws.push(Draw {
                    first_index,
                    index_count,
                    base_vertex,
                    instance: instances.len() as u32,
                    material: p.material as u32,
                    alpha_test: m.alpha_mode != AlphaMode::Opaque,
                    double_sided: m.double_sided,
                    mirrored,
                });
                instances.push(InstanceData {
                    world_from_local: inst.world_from_local.to_cols_array_2d(),
                    normal_from_local: normal4.to_cols_array_2d(),
                    material: p.material as u32,
                    first_index,
                    base_vertex,
                    _pad: 0,
                });
            }
        }
        // Sorting by pipeline and material keeps state changes down.
        draws.sort_by_key(|d| (d.alpha_test, d.double_sided, d.mirrored, d.material));
        Self {
            vertices,
            indices,
            instances,
            draws,
        }
    }

    /// The three vertices of triangle `primitive` of the draw of instance slot
    /// `instance`, as the resolve fetches them; `None` past the instances or the indices.
    pub fn triangle(&self, instance: u32, primitive: u32) -> Option<[&Vertex; 3]> {
        let inst = self.instances.get(instance as usize)?;
        let first = inst.first_index as usize + 3 * primitive as usize;
        let corner = |k: usize| {
            let index = *self.indices.get(first + k)? as i64 + inst.base_vertex as i64;
            self.vertices.get(usize::try_from(index).ok()?)
        };
        Some([corner(0)?, corner(1)?, corner(2)?])
    }
}

impl SceneGpu {
    /// Upload `scene` with its decoded texture sets `textures` (loaded from its materials).
    pub fn upload(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        scene: &Scene,
        textures: &SceneTextures,
        anisotropy: u16,
    ) -> Result<Self, UploadError> {
        if scene.materials.len() >= MAX_MATERIALS {
            return Err(UploadError::TooManyMaterials {
                path: scene.source.clone(),
                count: scene.materials.len(),
                limit: MAX_MATERIALS - 1,
            });
        }
        if textures.material_sets.len() != scene.materials.len() {
            return Err(UploadError::TexturesMismatch {
                path: scene.source.clone(),
                expected: scene.materials.len(),
                got: textures.material_sets.len(),
            });
        }
        let sets = textures.descs.clone();
        let material_sets = textures.material_sets.clone();
        let missing_textures = textures.missing.clone();
        let (set_textures, texture_bytes) =
            crate::gpu::allocate(device, "the scene's texture sets", || {
                let mut bytes = 0u64;
                let mut views = Vec::with_capacity(textures.sets.len());
                for set in &textures.sets {
                    let (v, b) = upload_set(device, queue, set);
                    bytes += b;
                    views.push(v);
                }
                ((views, bytes), bytes)
            })?;
        let neutral = neutral_set_views(device, queue);

        let samplers = material_samplers(device, &scene.materials, anisotropy.max(1));
        let material_layout = material_bind_group_layout(device);
        let no_fill = SampleFill::default().buffer(device);
        let material_bind_groups = material_sets
            .iter()
            .zip(&samplers)
            .map(|(set, sampler)| {
                let views = set.map_or(&neutral, |s| &set_textures[s]);
                material_bind_group(device, &material_layout, views, &no_fill, sampler)
            })
            .collect();

        let SceneGeometry {
            vertices,
            indices,
            instances,
            draws,
        } = SceneGeometry::build(scene);
        let materials = MaterialData::table(&scene.materials);
        let buffer = |label: &str, contents: &[u8], usage| {
            // wgpu rejects zero-sized storage bindings: keep at least one element's worth.
            let mut bytes = contents.to_vec();
            if bytes.is_empty() {
                bytes.resize(256, 0);
            }
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: &bytes,
                usage,
            })
        };
        let geometry_bytes = std::mem::size_of_val(vertices.as_slice())
            + std::mem::size_of_val(indices.as_slice())
            + std::mem::size_of_val(instances.as_slice())
            + std::mem::size_of_val(materials.as_slice());
        let (vertex_buffer, index_buffer, instance_buffer, material_buffer) =
            crate::gpu::allocate(device, "the scene's geometry buffers", || {
                let buffers = (
                    // Storage too: the visibility G-buffer's resolve fetches triangles.
                    buffer(
                        "scene.vertices",
                        bytemuck::cast_slice(&vertices),
                        wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::STORAGE,
                    ),
                    buffer(
                        "scene.indices",
                        bytemuck::cast_slice(&indices),
                        wgpu::BufferUsages::INDEX | wgpu::BufferUsages::STORAGE,
                    ),
                    buffer(
                        "scene.instances",
                        bytemuck::cast_slice(&instances),
                        wgpu::BufferUsages::STORAGE,
                    ),
                    buffer(
                        "scene.materials",
                        bytemuck::cast_slice(&materials),
                        wgpu::BufferUsages::STORAGE,
                    ),
                );
                (buffers, geometry_bytes as u64)
            })?;
        Ok(Self {
            vertex_buffer,
            index_buffer,
            instance_buffer,
            material_buffer,
            material_bind_groups,
            material_layout,
            draws,
            sets,
            material_sets,
            missing_textures,
            texture_bytes,
            samplers,
            neutral_views: neutral,
            no_fill,
            set_views: set_textures,
        })
    }

    /// Per material, a bind group like [`Self::material_bind_groups`] except that the
    /// materials of each set in `replacements` (an index into [`Self::sets`], three
    /// sampled views with mip chains, group 0 sRGB, and the [`SampleFill`] of their
    /// formats) sample those views.
    pub fn material_bind_groups_with(
        &self,
        device: &wgpu::Device,
        replacements: &[(usize, [wgpu::TextureView; 3], SampleFill)],
    ) -> Result<Vec<wgpu::BindGroup>, UploadError> {
        let count = self.set_views.len();
        if let Some(&(set, ..)) = replacements.iter().find(|(set, ..)| *set >= count) {
            return Err(UploadError::UnknownSet { set, count });
        }
        let fills: Vec<Option<wgpu::Buffer>> = replacements
            .iter()
            .map(|(_, _, fill)| (*fill != SampleFill::default()).then(|| fill.buffer(device)))
            .collect();
        Ok(self
            .material_sets
            .iter()
            .zip(&self.samplers)
            .map(|(material_set, sampler)| {
                let replaced =
                    material_set.and_then(|s| replacements.iter().position(|(set, ..)| *set == s));
                let (views, fill) = match (replaced, material_set) {
                    (Some(r), _) => (
                        &replacements[r].1,
                        fills[r].as_ref().unwrap_or(&self.no_fill),
                    ),
                    (None, Some(s)) => (&self.set_views[*s], &self.no_fill),
                    (None, None) => (&self.neutral_views, &self.no_fill),
                };
                material_bind_group(device, &self.material_layout, views, fill, sampler)
            })
            .collect())
    }
}

/// Per material of `materials`, the sampler of its [`Sampling`](crate::scene::Sampling),
/// anisotropic up to `anisotropy` where it filters linearly throughout (wgpu allows
/// anisotropy only then): one sampler per distinct sampling, cloned for each material.
fn material_samplers(
    device: &wgpu::Device,
    materials: &[crate::scene::Material],
    anisotropy: u16,
) -> Vec<wgpu::Sampler> {
    use crate::scene::{Filter, MipFilter, Sampling, WrapMode};
    let address = |w: WrapMode| match w {
        WrapMode::Repeat => wgpu::AddressMode::Repeat,
        WrapMode::ClampToEdge => wgpu::AddressMode::ClampToEdge,
        WrapMode::MirroredRepeat => wgpu::AddressMode::MirrorRepeat,
    };
    let filter = |f: Filter| match f {
        Filter::Nearest => wgpu::FilterMode::Nearest,
        Filter::Linear => wgpu::FilterMode::Linear,
    };
    let make = |s: &Sampling| {
        let linear =
            s.mag == Filter::Linear && s.min == Filter::Linear && s.mipmap == MipFilter::Linear;
        device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("material.sampler"),
            address_mode_u: address(s.wrap[0]),
            address_mode_v: address(s.wrap[1]),
            address_mode_w: wgpu::AddressMode::Repeat,
            mag_filter: filter(s.mag),
            min_filter: filter(s.min),
            mipmap_filter: match s.mipmap {
                MipFilter::Linear => wgpu::MipmapFilterMode::Linear,
                MipFilter::Nearest | MipFilter::Off => wgpu::MipmapFilterMode::Nearest,
            },
            // Without mipmapping only mip 0 is read.
            lod_max_clamp: if s.mipmap == MipFilter::Off {
                0.0
            } else {
                32.0
            },
            anisotropy_clamp: if linear { anisotropy } else { 1 },
            ..Default::default()
        })
    };
    let mut made: Vec<(Sampling, wgpu::Sampler)> = Vec::new();
    materials
        .iter()
        .map(|m| {
            if let Some((_, sampler)) = made.iter().find(|(s, _)| *s == m.sampling) {
                return sampler.clone();
            }
            let sampler = make(&m.sampling);
            made.push((m.sampling, sampler.clone()));
            sampler
        })
        .collect()
}

/// WGSL `SampleFill` (common/material_textures.wgsl): per channel group, what a
/// material's reads add to its texture's samples. A channel the texture's format does
/// not store (a BC5 normal group keeps X and Y only) samples as 0 (red, green, blue) or 1
/// (alpha); its fill is its neutral value ([`Channel::neutral`]) less that, so it reads
/// as the set's absent channel would. Zero where the format stores the channel.
#[repr(C)]
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    bytemuck::Pod,
    bytemuck::Zeroable
)]
pub struct SampleFill {
    /// Per group, per RGBA component.
    pub groups: [[f32; 4]; 3],
}

impl SampleFill {
    /// The fill of three channel-group textures in `formats`.
    pub fn of(formats: [wgpu::TextureFormat; 3]) -> Self {
        Self {
            groups: std::array::from_fn(|g| {
                let stored = usize::from(formats[g].components());
                std::array::from_fn(|c| {
                    if c < stored {
                        return 0.0;
                    }
                    let sampled = if c == 3 { 1.0 } else { 0.0 };
                    Channel::ALL[4 * g + c].neutral() - sampled
                })
            }),
        }
    }

    /// A uniform buffer holding it.
    fn buffer(&self, device: &wgpu::Device) -> wgpu::Buffer {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("material.fill"),
            contents: bytemuck::bytes_of(self),
            usage: wgpu::BufferUsages::UNIFORM,
        })
    }
}

/// A material's bind group: its set's three channel-group views, their fill and the
/// sampler.
fn material_bind_group(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    views: &[wgpu::TextureView; 3],
    fill: &wgpu::Buffer,
    sampler: &wgpu::Sampler,
) -> wgpu::BindGroup {
    let view = wgpu::BindingResource::TextureView;
    crate::gpu::layout::bind_group(
        device,
        "material",
        layout,
        &[
            (0, view(&views[0])),
            (1, view(&views[1])),
            (2, view(&views[2])),
            (3, wgpu::BindingResource::Sampler(sampler)),
            (4, fill.as_entire_binding()),
        ],
    )
}

/// Layout of a material's bind group: three channel-group textures, a sampler and their
/// [`SampleFill`], visible to the fragment stage (G-buffer and shadow alpha tests) and
/// compute (reference pass); `shaders/common/material_textures.wgsl` declares it.
pub fn material_bind_group_layout(device: &wgpu::Device) -> wgpu::BindGroupLayout {
    let tex = |binding| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT | wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Texture {
            sample_type: wgpu::TextureSampleType::Float { filterable: true },
            view_dimension: wgpu::TextureViewDimension::D2,
            multisampled: false,
        },
        count: None,
    };
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("material"),
        entries: &[
            tex(0),
            tex(1),
            tex(2),
            wgpu::BindGroupLayoutEntry {
                binding: 3,
                visibility: wgpu::ShaderStages::FRAGMENT | wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                count: None,
            },
            crate::gpu::layout::uniform(
                4,
                wgpu::ShaderStages::FRAGMENT | wgpu::ShaderStages::COMPUTE,
            ),
        ],
    })
}

/// Formats of the three channel-group textures of a set.
pub const SET_FORMATS: [wgpu::TextureFormat; 3] = [
    wgpu::TextureFormat::Rgba8UnormSrgb,
    wgpu::TextureFormat::Rgba8Unorm,
    wgpu::TextureFormat::Rgba8Unorm,
];

/// Views of [`TextureSet::neutral`] uploaded (three 1×1 textures in [`SET_FORMATS`]): what
/// a material samples for channel groups it has no texture of.
pub fn neutral_set_views(device: &wgpu::Device, queue: &wgpu::Queue) -> [wgpu::TextureView; 3] {
    upload_set(device, queue, &TextureSet::neutral()).0
}

/// Upload one set as three mipmapped textures; returns their views and the byte count.
fn upload_set(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    set: &TextureSet,
) -> ([wgpu::TextureView; 3], u64) {
    let mut bytes = 0u64;
    let views = std::array::from_fn(|g| {
        let texture = device.create_texture(&crate::gpu::layout::texture_2d(
            &format!("set.{}.group{g}", set.name),
            (set.width, set.height),
            set.mips.len() as u32,
            SET_FORMATS[g],
            wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
        ));
        for (level, mip) in set.mips.iter().enumerate() {
            let plane = mip.group(g);
            bytes += plane.len() as u64;
            crate::gpu::upload::write_level(queue, &texture, level as u32, &plane);
        }
        texture.create_view(&wgpu::TextureViewDescriptor::default())
    });
    (views, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Formats that store every channel add nothing; BC5's missing blue (occlusion in
    /// group 1) reads 0 and gets its neutral 1, its missing alpha (roughness) reads 1,
    /// the neutral, and gets 0; BC4 in group 2 stores metallic only: emissive R and G
    /// (green, blue) read 0 and get 1, emissive B (alpha) reads 1 and gets 0.
    #[test]
    fn sample_fill_restores_the_neutral_value_of_channels_a_format_drops() {
        use wgpu::TextureFormat as F;
        assert_eq!(SampleFill::of(SET_FORMATS), SampleFill::default());
        let block = [F::Bc1RgbaUnormSrgb, F::Bc7RgbaUnorm, F::Bc1RgbaUnorm];
        assert_eq!(SampleFill::of(block), SampleFill::default());
        let fill = SampleFill::of([F::Bc7RgbaUnormSrgb, F::Bc5RgUnorm, F::Bc4RUnorm]);
        assert_eq!(
            fill.groups,
            [[0.0; 4], [0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0],]
        );
    }
}
