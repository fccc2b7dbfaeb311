//! Inference on load (`shaders/ntc_bake.wgsl`): decode every texel of every mip of every
//! package material on the GPU into the three RGBA8 channel-group textures the reference
//! path samples, so that the reference pass renders NTC-decoded textures (trilinear and
//! anisotropic filtering by the hardware, no per-frame decode cost).
//!
//! The input vector and the MLP are the real-time pass's (`shaders/common/ntc_decode.wgsl`,
//! f32 kernel); outputs are clamped to \[0, 1\] and absent channels are neutral, as the
//! original texture sets hold them. One dispatch per (material, mip), 8 × 8 texels per
//! workgroup. Group 0 is written through a linear `Rgba8Unorm` view (storage) of a texture
//! sampled as `Rgba8UnormSrgb`, so the sRGB-encoded values decode in the sampler like the
//! originals.

use crate::gpu::Defines;
use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::kernel::{ComputeKernel, Group, KernelDesc};
use crate::gpu::layout::{self, Slot};
use crate::ntc::format::NtcPackage;
use crate::ntc::model::NtcConfig;
use crate::render::ntc_gpu::{NtcRenderError, NtcSceneGpu, model_defines};
use crate::render::scene_gpu::{SET_FORMATS, SceneGpu};

/// Texels per workgroup side (`@workgroup_size(8, 8)` in `ntc_bake.wgsl`).
pub const WORKGROUP_SIDE: u32 = 8;

/// WGSL `BakeParams`: one dispatch.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct BakeParams {
    /// Entry of the mip table to decode.
    pub mip: u32,
    /// The material's decoder.
    pub decoder: u32,
    /// The material's channel mask.
    pub present: u32,
    /// Padding.
    pub _pad0: u32,
}

/// One package material decoded into textures.
#[derive(Debug)]
pub struct BakedSet {
    /// The package material's (texture set's) name.
    pub name: String,
    /// The three channel-group textures (`Rgba8Unorm`, full mip chains; group 0 is viewed
    /// as sRGB). Usable as storage, sampled and copy source.
    pub textures: [wgpu::Texture; 3],
    /// Sampled views in [`SET_FORMATS`], for [`SceneGpu::material_bind_groups_with`].
    pub views: [wgpu::TextureView; 3],
}

/// The bake pipeline.
#[derive(Debug)]
pub struct NtcBakePass {
    kernel: ComputeKernel,
}

impl NtcBakePass {
    /// Label of the pass and its wgpu objects.
    pub const LABEL: &'static str = "ntc.bake";

    /// Build the pipeline for decoders of shape `config`.
    pub fn new(ctx: &GpuContext, config: &NtcConfig) -> Result<Self, NtcRenderError> {
        let device = &ctx.device;
        let needed = config.decoder_param_count() as u64 * 2;
        let limit = u64::from(device.limits().max_compute_workgroup_storage_size);
        if needed > limit {
            return Err(NtcRenderError::TooLarge {
                what: "the decoder in workgroup memory".into(),
                bytes: needed,
                limit,
            });
        }
        let target = Slot::WriteTexture(wgpu::TextureFormat::Rgba8Unorm);
        let kernel = ComputeKernel::new(
            ctx,
            &KernelDesc {
                label: Self::LABEL,
                shader: "ntc_bake.wgsl",
                defines: &Self::defines(config),
                entry: "bake_mip",
                groups: &[
                    Group::Slots(&[Slot::Uniform, target, target, target]),
                    Group::Slots(&NtcSceneGpu::GROUP),
                ],
            },
        )?;
        Ok(Self { kernel })
    }

    /// The defines `ntc_bake.wgsl` is composed with for decoders of shape `config`.
    pub fn defines(config: &NtcConfig) -> Defines {
        model_defines(config, WORKGROUP_SIDE * WORKGROUP_SIDE).flag("NTC_KERNEL_F32")
    }

    /// Decode every package material of `package` (uploaded as `ntc`) into textures, in
    /// package order; the work is submitted before this returns. The upload and the baked
    /// textures together must fit `budget` bytes
    /// ([`NtcPackage::check_upload_budget`]), checked before anything is allocated.
    pub fn bake(
        &self,
        ctx: &GpuContext,
        package: &NtcPackage,
        ntc: &NtcSceneGpu,
        budget: u64,
    ) -> Result<Vec<BakedSet>, NtcRenderError> {
        package.check_upload_budget(true, budget)?;
        let device = &ctx.device;
        let max_side = device.limits().max_texture_dimension_2d;
        let align = u64::from(device.limits().min_uniform_buffer_offset_alignment)
            .max(std::mem::size_of::<BakeParams>() as u64);
        let mut params = Vec::new();
        let mut sets = Vec::with_capacity(package.materials.len());
        for (index, m) in package.materials.iter().enumerate() {
            let (width, height) = (m.layout.width(), m.layout.height());
            if width.max(height) > max_side {
                return Err(NtcRenderError::TooLarge {
                    what: format!("texture set `{}` ({width}×{height} texels)", m.name),
                    bytes: u64::from(width) * u64::from(height) * 4,
                    limit: u64::from(max_side) * u64::from(max_side) * 4,
                });
            }
            for mip in 0..m.layout.mips() {
                let entry = ntc
                    .mip_entry(index, mip)
                    .ok_or_else(|| NtcRenderError::Gpu {
                        what: format!("baking `{}`", m.name),
                        message: format!("no mip-table entry for mip {mip}"),
                    })?;
                params.push(BakeParams {
                    mip: entry,
                    decoder: m.decoder,
                    present: u32::from(m.present.0),
                    _pad0: 0,
                });
            }
            let mips = m.layout.mips() as u32;
            // Three RGBA8 textures with their mip chains.
            let bytes: u64 = (0..mips)
                .map(|l| u64::from((width >> l).max(1)) * u64::from((height >> l).max(1)) * 12)
                .sum();
            let what = format!("the baked textures of `{}`", m.name);
            sets.push(crate::gpu::allocate(device, &what, || {
                (baked_set(device, &m.name, width, height, mips), bytes)
            })?);
        }
        let mut bytes = vec![0u8; (params.len() as u64 * align) as usize];
        for (i, p) in params.iter().enumerate() {
            let at = i * align as usize;
            bytes[at..at + std::mem::size_of::<BakeParams>()]
                .copy_from_slice(bytemuck::bytes_of(p));
        }
        if bytes.is_empty() {
            return Ok(sets);
        }
        let params_buffer = wgpu::util::DeviceExt::create_buffer_init(
            device,
            &wgpu::util::BufferInitDescriptor {
                label: Some(Self::LABEL),
                contents: &bytes,
                usage: wgpu::BufferUsages::UNIFORM,
            },
        );
        let ntc_bind_group = ntc.bind_group(device, self.kernel.layout(1));
        ctx.error_scope(|| {
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some(Self::LABEL),
            });
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(Self::LABEL),
                    timestamp_writes: None,
                });
                pass.set_pipeline(self.kernel.pipeline());
                pass.set_bind_group(1, &ntc_bind_group, &[]);
                let mut slot = 0u64;
                for (set, m) in sets.iter().zip(&package.materials) {
                    for mip in 0..m.layout.mips() {
                        let (w, h) = m.layout.mip_size(mip).unwrap_or((1, 1));
                        let storage: Vec<wgpu::TextureView> = set
                            .textures
                            .iter()
                            .map(|t| {
                                t.create_view(&wgpu::TextureViewDescriptor {
                                    format: Some(wgpu::TextureFormat::Rgba8Unorm),
                                    usage: Some(wgpu::TextureUsages::STORAGE_BINDING),
                                    base_mip_level: mip as u32,
                                    mip_level_count: Some(1),
                                    ..Default::default()
                                })
                            })
                            .collect();
                        let bind_group = self.kernel.bind_group(
                            device,
                            0,
                            &[
                                (
                                    0,
                                    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                        buffer: &params_buffer,
                                        offset: slot * align,
                                        size: wgpu::BufferSize::new(
                                            std::mem::size_of::<BakeParams>() as u64,
                                        ),
                                    }),
                                ),
                                (1, wgpu::BindingResource::TextureView(&storage[0])),
                                (2, wgpu::BindingResource::TextureView(&storage[1])),
                                (3, wgpu::BindingResource::TextureView(&storage[2])),
                            ],
                        );
                        pass.set_bind_group(0, &bind_group, &[]);
                        pass.dispatch_workgroups(
                            w.div_ceil(WORKGROUP_SIDE),
                            h.div_ceil(WORKGROUP_SIDE),
                            1,
                        );
                        slot += 1;
                    }
                }
            }
            ctx.queue.submit([encoder.finish()]);
        })
        .map_err(|e| NtcRenderError::Gpu {
            what: "baking the NTC package".into(),
            message: e.to_string(),
        })?;
        Ok(sets)
    }

    /// Bake `package` into textures and make the material bind groups of `scene` with
    /// every texture set the package holds (by name) sampling its baked textures.
    pub fn bake_materials(
        &self,
        ctx: &GpuContext,
        package: &NtcPackage,
        ntc: &NtcSceneGpu,
        scene: &SceneGpu,
    ) -> Result<BakedMaterials, NtcRenderError> {
        let sets = self.bake(ctx, package, ntc, crate::texture::budget::limit())?;
        let replacements: Vec<(usize, [wgpu::TextureView; 3])> = scene
            .sets
            .iter()
            .enumerate()
            .filter_map(|(set, desc)| {
                let name = desc.name();
                sets.iter()
                    .find(|b| b.name == name)
                    .map(|b| (set, b.views.clone()))
            })
            .collect();
        let bind_groups = scene
            .material_bind_groups_with(&ctx.device, &replacements)
            .map_err(|e| NtcRenderError::Gpu {
                what: "using the baked textures".into(),
                message: e.to_string(),
            })?;
        Ok(BakedMaterials {
            replaced: replacements.len(),
            sets,
            bind_groups,
        })
    }
}

/// A package baked for one scene: the textures, and the scene's material bind groups with
/// the sets the package holds sampling them.
#[derive(Debug)]
pub struct BakedMaterials {
    /// The baked textures, in package order.
    pub sets: Vec<BakedSet>,
    /// Per scene material, its bind group (baked textures where the package holds its set,
    /// the originals elsewhere).
    pub bind_groups: Vec<wgpu::BindGroup>,
    /// How many of the scene's texture sets sample baked textures.
    pub replaced: usize,
}

/// The three textures of one baked set and their sampled views.
fn baked_set(device: &wgpu::Device, name: &str, width: u32, height: u32, mips: u32) -> BakedSet {
    let textures: [wgpu::Texture; 3] = std::array::from_fn(|g| {
        let srgb_view = [SET_FORMATS[g]];
        let label = format!("ntc.baked.{name}.group{g}");
        device.create_texture(&wgpu::TextureDescriptor {
            view_formats: if SET_FORMATS[g] == wgpu::TextureFormat::Rgba8Unorm {
                &[]
            } else {
                &srgb_view
            },
            ..layout::texture_2d(
                &label,
                (width, height),
                mips,
                wgpu::TextureFormat::Rgba8Unorm,
                wgpu::TextureUsages::STORAGE_BINDING
                    | wgpu::TextureUsages::TEXTURE_BINDING
                    | wgpu::TextureUsages::COPY_SRC,
            )
        })
    });
    let views = std::array::from_fn(|g| {
        textures[g].create_view(&wgpu::TextureViewDescriptor {
            format: Some(SET_FORMATS[g]),
            // An sRGB view cannot be a storage binding: this one is only sampled.
            usage: Some(wgpu::TextureUsages::TEXTURE_BINDING),
            ..Default::default()
        })
    });
    BakedSet {
        name: name.to_owned(),
        textures,
        views,
    }
}
