//! An `.ntc` package on the GPU for rendering, and the CPU reference of what the NTC
//! passes compute.
//!
//! [`NtcSceneGpu`] owns four storage buffers, bound as group 1 of the decode and bake
//! shaders (`shaders/common/ntc_decode.wgsl`):
//!
//! | binding | content |
//! |---|---|
//! | 0 | every package material's latents, concatenated `u32` words packed as in the package |
//! | 1 | every decoder's parameters as f16 pairs (`params[2i]` in the low half of word `i`) |
//! | 2 | one [`NtcMaterialGpu`] per *scene* material (decoder or [`NO_DECODER`], latents, mips) |
//! | 3 | one [`NtcMipGpu`] per colour mip of every *package* material (size, grid pair, LOD input) |
//!
//! Scene materials reach package materials through a material map
//! ([`map_scene_materials`]: by texture-set name, the name `compress --scene` stores).
//!
//! [`NtcCpuReference`] is the per-pixel decode on the CPU: the mip and texel choice
//! ([`choose_texel`]), `ntc::train::cpu::forward` with the package's f16 weights and
//! dequantised latents, and the reference pass's output transforms
//! ([`material_outputs`]). The GPU tests compare the passes against it.
//!
//! This module uploads and describes data; the passes live in `render::passes`.

use crate::gpu::Defines;
use bytemuck::{Pod, Zeroable};
use glam::{Vec2, Vec3};
use wgpu::util::DeviceExt as _;

use crate::gpu::ShaderError;
use crate::gpu::kernel::KernelError;
use crate::gpu::layout::Slot;
use crate::ntc::format::NtcPackage;
use crate::ntc::model::{GridPairGpu, GroupModel, LEAKY_SLOPE, LatentLayout, NtcConfig, lod_input};
use crate::ntc::quant;
use crate::ntc::train::{Sample, cpu};
use crate::ntc::{Activation, NtcFormatError, TrainError};
use crate::render::gpu_types::MaterialData;
use crate::render::passes::ntc_decode::DecodeSettings;
use crate::scene::Scene;
use crate::scene::{Filter, MipFilter, Sampling};
use crate::texture::srgb::srgb_to_linear;
use crate::texture::{self, CHANNELS, Channel, ChannelMask, quantize_u8};

pub use crate::screen::material_word::NO_DECODER;
use crate::screen::material_word::{BITANGENT_NEGATIVE, MATERIAL_ID_MASK, NO_MATERIAL};

/// Why NTC data cannot be uploaded or a pass cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum NtcRenderError {
    /// The package is inconsistent.
    #[error(transparent)]
    Package(#[from] NtcFormatError),
    /// The device ran out of memory for the package or a pass's buffers.
    #[error(transparent)]
    OutOfMemory(#[from] crate::gpu::OutOfMemory),
    /// The package needs more memory than the budget allows.
    #[error(transparent)]
    OverBudget(#[from] crate::texture::budget::OverBudget),
    /// A textured scene material whose texture set the package does not hold.
    #[error(
        "scene material {material} (`{name}`) uses texture set `{set}`, which package {package} \
         does not contain; compress the scene into it with `neurotex compress --scene`"
    )]
    MissingSet {
        /// Scene material index.
        material: usize,
        /// Scene material name.
        name: String,
        /// The texture set's name.
        set: String,
        /// The package file (or `(in memory)`).
        package: String,
    },
    /// A material map entry pointing past the package's materials.
    #[error(
        "scene material {material} maps to package material {index}, but the package has {count}"
    )]
    BadMaterialMap {
        /// Scene material index.
        material: usize,
        /// The package index given.
        index: u32,
        /// Materials in the package.
        count: usize,
    },
    /// Data too large for one GPU buffer or for 32-bit offsets.
    #[error(
        "{what} needs {bytes} bytes, more than the GPU allows ({limit}); use fewer or smaller materials"
    )]
    TooLarge {
        /// What was measured.
        what: String,
        /// Bytes needed.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// A decode kernel that this device or model cannot run.
    #[error(
        "NTC decode kernel `{kernel}` is unavailable: {reason}; choose another kernel (NtcKernel::best picks one the device runs)"
    )]
    KernelUnavailable {
        /// The kernel's name.
        kernel: String,
        /// Why.
        reason: String,
    },
    /// A frame larger than a kernel can address.
    #[error(
        "the NTC decode kernel `{kernel}` cannot decode a {width}×{height} frame: it packs \
         pixels into 16 bits per axis (at most {limit}); choose a per-tile kernel"
    )]
    FrameTooLarge {
        /// The kernel's name.
        kernel: String,
        /// Frame width.
        width: u32,
        /// Frame height.
        height: u32,
        /// Largest width or height.
        limit: u32,
    },
    /// A shader failed to compose or validate.
    #[error(transparent)]
    Shader(#[from] ShaderError),
    /// A kernel's pipeline could not be built.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// wgpu rejected a pipeline or a dispatch.
    #[error("{what}: {message}")]
    Gpu {
        /// What was being created or run.
        what: String,
        /// wgpu's message.
        message: String,
    },
    /// The CPU reference failed to decode.
    #[error(transparent)]
    Decode(#[from] TrainError),
}

/// WGSL `NtcMaterial`: one scene material's NTC data.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct NtcMaterialGpu {
    /// Index of its decoder, or [`NO_DECODER`] (untextured, or a set not in the package).
    pub decoder: u32,
    /// First word of its latents in the latent buffer.
    pub latent_offset: u32,
    /// Channel mask of the set (bit c = canonical channel c comes from the decoder).
    pub present: u32,
    /// Colour mips.
    pub mips: u32,
    /// Its mip-0 entry in the mip table; mip m is entry `mip_base + m`.
    pub mip_base: u32,
    /// Width of mip 0 in texels.
    pub width: u32,
    /// Height of mip 0 in texels.
    pub height: u32,
    /// Padding.
    pub _pad0: u32,
}

/// WGSL `NtcMip`: one colour mip of one package material.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct NtcMipGpu {
    /// Width of the mip in texels.
    pub width: u32,
    /// Height of the mip in texels.
    pub height: u32,
    /// The mip's grid pair; each grid starts at a word of the latent buffer.
    pub grids: GridPairGpu,
    /// `model::lod_input` of this mip.
    pub lod: f32,
    /// Padding.
    pub _pad: [u32; 3],
}

/// The package's data on the GPU for one scene (see the module docs).
#[derive(Debug)]
pub struct NtcSceneGpu {
    config: NtcConfig,
    latents: wgpu::Buffer,
    decoders: wgpu::Buffer,
    materials: wgpu::Buffer,
    mips: wgpu::Buffer,
    decoder_of_material: Vec<u32>,
    decoder_count: usize,
    /// Per package material, its mip-0 entry in the mip table.
    package_mip_base: Vec<u32>,
}

/// Bytes of `count` items of `size` bytes, checked against `limit`.
fn checked_bytes(what: &str, count: usize, size: usize, limit: u64) -> Result<u64, NtcRenderError> {
    let bytes = (count as u64).saturating_mul(size as u64);
    if bytes > limit {
        return Err(NtcRenderError::TooLarge {
            what: what.into(),
            bytes,
            limit,
        });
    }
    Ok(bytes)
}

/// A `u32` offset, or an error naming what overflowed.
fn offset_u32(what: &str, value: usize) -> Result<u32, NtcRenderError> {
    u32::try_from(value).map_err(|_| NtcRenderError::TooLarge {
        what: what.into(),
        bytes: value as u64 * 4,
        limit: u64::from(u32::MAX) * 4,
    })
}

impl NtcSceneGpu {
    /// Upload `package` for a scene whose material `i` uses package material
    /// `material_map[i]` (`None`: constants only). Checks the package, the map and every
    /// size against the device's limits before allocating.
    pub fn upload(
        ctx: &crate::gpu::GpuContext,
        package: &NtcPackage,
        material_map: &[Option<u32>],
    ) -> Result<Self, NtcRenderError> {
        package.validate()?;
        package.check_upload_budget(false, crate::texture::budget::limit())?;
        let limits = ctx.device.limits();
        let limit = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let config = &package.config;
        let words_per_texel = quant::words_per_texel(config.features, config.latent_bits);

        let latent_words: usize = package.materials.iter().map(|m| m.latents.len()).sum();
        checked_bytes("the NTC latents", latent_words, 4, limit)?;
        let params = config.decoder_param_count();
        checked_bytes(
            "the NTC decoders",
            package.decoders.len() * params / 2,
            4,
            limit,
        )?;
        let mip_count: usize = package.materials.iter().map(|m| m.layout.mips()).sum();
        checked_bytes(
            "the NTC mip table",
            mip_count,
            std::mem::size_of::<NtcMipGpu>(),
            limit,
        )?;
        checked_bytes(
            "the NTC material table",
            material_map.len(),
            std::mem::size_of::<NtcMaterialGpu>(),
            limit,
        )?;

        let mut latents = Vec::with_capacity(latent_words);
        let mut mips = Vec::with_capacity(mip_count);
        let mut package_entries = Vec::with_capacity(package.materials.len());
        let mut package_mip_base = Vec::with_capacity(package.materials.len());
        for m in &package.materials {
            let base = latents.len();
            let layout = &m.layout;
            let grid_word = |value: usize| {
                offset_u32(
                    "the NTC latents",
                    base + value / config.features as usize * words_per_texel,
                )
            };
            let mip_base = offset_u32("the NTC mip table", mips.len())?;
            for mip in 0..layout.mips() {
                let (width, height) = layout.mip_size(mip).unwrap_or((1, 1));
                let Some(grids) = layout.gpu_pair(mip, grid_word)? else {
                    continue;
                };
                mips.push(NtcMipGpu {
                    width,
                    height,
                    grids,
                    lod: lod_input(mip, layout.mips()) as f32,
                    _pad: [0; 3],
                });
            }
            package_entries.push(NtcMaterialGpu {
                decoder: m.decoder,
                latent_offset: offset_u32("the NTC latents", base)?,
                present: u32::from(m.present.0),
                mips: layout.mips() as u32,
                mip_base,
                width: layout.width(),
                height: layout.height(),
                _pad0: 0,
            });
            package_mip_base.push(mip_base);
            latents.extend_from_slice(&m.latents);
        }

        let mut materials = Vec::with_capacity(material_map.len());
        for (material, entry) in material_map.iter().enumerate() {
            materials.push(match *entry {
                None => NtcMaterialGpu {
                    decoder: NO_DECODER,
                    ..Default::default()
                },
                Some(index) => {
                    *package_entries
                        .get(index as usize)
                        .ok_or(NtcRenderError::BadMaterialMap {
                            material,
                            index,
                            count: package.materials.len(),
                        })?
                }
            });
        }
        let decoder_of_material = materials.iter().map(|m| m.decoder).collect();

        let decoder_words: Vec<u32> = package
            .decoders
            .iter()
            .flat_map(|d| {
                d.chunks_exact(2)
                    .map(|p| u32::from(p[0].to_bits()) | (u32::from(p[1].to_bits()) << 16))
            })
            .collect();

        let device = &ctx.device;
        // wgpu rejects zero-sized storage bindings: every buffer holds at least one item.
        let storage = |label: &str, bytes: &[u8], item: usize| {
            let mut contents = bytes.to_vec();
            if contents.is_empty() {
                contents.resize(item, 0);
            }
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: &contents,
                usage: wgpu::BufferUsages::STORAGE,
            })
        };
        let none = [NtcMaterialGpu {
            decoder: NO_DECODER,
            ..Default::default()
        }];
        let material_bytes: &[u8] = if materials.is_empty() {
            bytemuck::cast_slice(&none)
        } else {
            bytemuck::cast_slice(&materials)
        };
        // Out of device memory is an error with the size asked, not a lost device later.
        let asked = (latents.len() + decoder_words.len()) as u64 * 4
            + material_bytes.len() as u64
            + (mips.len() * std::mem::size_of::<NtcMipGpu>()) as u64;
        let (latent_buffer, decoder_buffer, material_buffer, mip_buffer) =
            crate::gpu::allocate(device, "the NTC package's buffers", || {
                let buffers = (
                    storage("ntc.latents", bytemuck::cast_slice(&latents), 4),
                    storage("ntc.decoders", bytemuck::cast_slice(&decoder_words), 4),
                    storage("ntc.materials", material_bytes, 0),
                    storage(
                        "ntc.mips",
                        bytemuck::cast_slice(&mips),
                        std::mem::size_of::<NtcMipGpu>(),
                    ),
                );
                (buffers, asked)
            })?;
        Ok(Self {
            config: config.clone(),
            latents: latent_buffer,
            decoders: decoder_buffer,
            materials: material_buffer,
            mips: mip_buffer,
            decoder_of_material,
            decoder_count: package.decoders.len(),
            package_mip_base,
        })
    }

    /// Per scene material, its decoder index ([`NO_DECODER`] = constants only).
    pub fn decoder_of_material(&self) -> &[u32] {
        &self.decoder_of_material
    }

    /// Bytes of the package's GPU buffers (latents, decoder weights, material and mip
    /// tables): its video memory.
    pub fn gpu_bytes(&self) -> u64 {
        [&self.latents, &self.decoders, &self.materials, &self.mips]
            .iter()
            .map(|b| b.size())
            .sum()
    }

    /// Number of decoders in the package.
    pub fn decoder_count(&self) -> usize {
        self.decoder_count
    }

    /// The package's model configuration.
    pub fn config(&self) -> &NtcConfig {
        &self.config
    }

    /// Mip-table entry of mip `mip` of package material `material`.
    pub fn mip_entry(&self, material: usize, mip: usize) -> Option<u32> {
        let base = *self.package_mip_base.get(material)?;
        base.checked_add(u32::try_from(mip).ok()?)
    }

    /// The group-1 bindings (module docs): four read-only storage buffers.
    pub const GROUP: [Slot; 4] = [Slot::Storage; 4];

    /// The group-1 resources, `(binding, buffer)` in binding order.
    pub fn resources(&self) -> [(u32, wgpu::BindingResource<'_>); 4] {
        [
            (0, self.latents.as_entire_binding()),
            (1, self.decoders.as_entire_binding()),
            (2, self.materials.as_entire_binding()),
            (3, self.mips.as_entire_binding()),
        ]
    }

    /// The group-1 bind group for `layout` (made from [`Self::GROUP`]).
    pub fn bind_group(
        &self,
        device: &wgpu::Device,
        layout: &wgpu::BindGroupLayout,
    ) -> wgpu::BindGroup {
        crate::gpu::layout::bind_group(device, "ntc", layout, &self.resources())
    }
}

/// The package material of every scene material of `scene`, by the names
/// [`texture::TextureSetDesc::name`] gives its texture sets (see [`map_materials`]).
pub fn map_scene_materials(
    package: &NtcPackage,
    scene: &Scene,
) -> Result<Vec<Option<u32>>, NtcRenderError> {
    let (sets, material_sets) = texture::scene_texture_sets(&scene.materials);
    let set_names: Vec<String> = sets.iter().map(texture::TextureSetDesc::name).collect();
    let material_names: Vec<String> = scene.materials.iter().map(|m| m.name.clone()).collect();
    map_materials(package, &material_sets, &set_names, &material_names)
}

/// The package material of every material: `Some(index)` for a textured material (whose
/// set `material_sets[i]` is called `set_names[set]`) that the package holds under that
/// name, `None` for an untextured one; a textured material whose set is missing is an
/// error naming the material (`material_names[i]`), the set and the package file.
pub fn map_materials(
    package: &NtcPackage,
    material_sets: &[Option<usize>],
    set_names: &[String],
    material_names: &[String],
) -> Result<Vec<Option<u32>>, NtcRenderError> {
    material_sets
        .iter()
        .enumerate()
        .map(|(material, set)| {
            let Some(name) = set.and_then(|s| set_names.get(s)) else {
                return Ok(None);
            };
            package
                .materials
                .iter()
                .position(|m| &m.name == name)
                .map(|i| Some(i as u32))
                .ok_or_else(|| NtcRenderError::MissingSet {
                    material,
                    name: material_names.get(material).cloned().unwrap_or_default(),
                    set: name.clone(),
                    package: package
                        .source()
                        .map_or_else(|| "(in memory)".to_owned(), |p| p.display().to_string()),
                })
        })
        .collect()
}

/// The model defines of the NTC shaders (`common/ntc_mlp.wgsl`, `common/ntc_decode.wgsl`)
/// for `config`, with `threads` threads per workgroup. `NTC_WIDEST` is the widest layer
/// the matrix loops unroll to (the input or a hidden layer).
pub(crate) fn model_defines(config: &NtcConfig, threads: u32) -> Defines {
    let mut defines = Defines::new()
        .with("NTC_FEATURES", config.features)
        .with("NTC_LATENT_BITS", config.latent_bits.bits())
        .with("NTC_PE_WAVES", config.pe_waves)
        .with("NTC_INPUT_WIDTH", config.input_width())
        .with("NTC_LAYERS", config.hidden.len() + 1)
        .with("NTC_PARAMS", config.decoder_param_count())
        .with("NTC_THREADS", threads)
        .with("NTC_LEAKY_SLOPE", format!("{LEAKY_SLOPE:?}"));
    for layer in 0..crate::ntc::model::MAX_HIDDEN_LAYERS {
        let width = config.hidden.get(layer).copied().unwrap_or(0);
        defines.set(&format!("NTC_HIDDEN_{layer}"), width);
    }
    let widest = config
        .hidden
        .iter()
        .map(|&w| w as usize)
        .fold(config.input_width(), usize::max);
    defines.set("NTC_WIDEST", widest);
    if config.activation == Activation::LeakyRelu {
        defines.set("NTC_LEAKY_RELU", 1);
    }
    defines
}

/// The mip and texel one pixel decodes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TexelChoice {
    /// Colour mip.
    pub mip: usize,
    /// Texel column in the mip (wrapped).
    pub x: u32,
    /// Texel row in the mip (wrapped).
    pub y: u32,
    /// Distance of the nearest decision boundary (ξ0 against frac(lod), a texel
    /// coordinate against an integer, or lod against a rounding point), for tests that
    /// skip pixels where f32 rounding on the GPU could tip the choice.
    pub margin: f32,
}

/// The decode pass's mip and texel choice (`choose_texel` of `shaders/common/ntc_pixel.wgsl`,
/// in f32) for a material sampled as `sampling`: `lod = log2(max(|dx · size0|,
/// |dy · size0|)) + lod_bias` (`uv_grad` = (dx.u, dx.v, dy.u, dy.v)), magnified where it
/// is not above 0, then clamped to `[0, mips − 1]` (0 without mipmapping). Stochastic
/// (`settings`): with linear mipmapping mip `⌊lod⌋ + (ξ0 < frac(lod))`, else
/// `round(lod)` (ties to even, as WGSL's `round`); with a linear filter (`mag` where
/// magnified, else `min`) texel `⌊uv · size − ½ + (ξ1, ξ2)⌋`, else `⌊uv · size⌋`. Not
/// stochastic: mip `round(lod)` and texel `⌊uv · size⌋`. Each axis is addressed with the
/// sampling's wrapping.
pub fn choose_texel(
    layout: &LatentLayout,
    sampling: &Sampling,
    uv: [f32; 2],
    uv_grad: [f32; 4],
    settings: &DecodeSettings,
    xi: [f32; 3],
) -> TexelChoice {
    let size0 = Vec2::new(layout.width() as f32, layout.height() as f32);
    let dx = Vec2::new(uv_grad[0], uv_grad[1]) * size0;
    let dy = Vec2::new(uv_grad[2], uv_grad[3]) * size0;
    let last = layout.mips().saturating_sub(1);
    let raw = dx.length().max(dy.length()).log2() + settings.lod_bias;
    // Not minified where the LOD is 0 or below, or NaN.
    let magnified = raw.is_nan() || raw <= 0.0;
    let lod = if raw.is_nan() || sampling.mipmap == MipFilter::Off {
        0.0
    } else {
        raw.clamp(0.0, last as f32)
    };
    let frac_distance = |t: f32| {
        let f = t - t.floor();
        f.min(1.0 - f)
    };
    // Where the magnification and minification filters differ, a pixel near lod 0 could
    // take either.
    let filter = if magnified {
        sampling.mag
    } else {
        sampling.min
    };
    let filter_margin = if sampling.mag != sampling.min {
        raw.abs()
    } else {
        f32::INFINITY
    };
    let stochastic_mip = settings.stochastic && sampling.mipmap == MipFilter::Linear;
    let (mip, mip_margin) = if stochastic_mip {
        let base = lod.floor();
        let frac = lod - base;
        let mip = (base as usize + usize::from(xi[0] < frac)).min(last);
        let margin = if (base as usize) < last {
            (xi[0] - frac).abs()
        } else {
            f32::INFINITY
        };
        (mip, margin)
    } else {
        let margin = if sampling.mipmap == MipFilter::Off {
            f32::INFINITY
        } else {
            frac_distance(lod + 0.5)
        };
        ((lod.round_ties_even() as usize).min(last), margin)
    };
    let (w, h) = layout.mip_size(mip).unwrap_or((1, 1));
    let scaled = Vec2::from(uv) * Vec2::new(w as f32, h as f32);
    let c = if settings.stochastic && filter == Filter::Linear {
        scaled - 0.5 + Vec2::new(xi[1], xi[2])
    } else {
        scaled
    };
    TexelChoice {
        mip,
        x: sampling.wrap[0].texel(c.x.floor() as i64, w),
        y: sampling.wrap[1].texel(c.y.floor() as i64, h),
        margin: mip_margin
            .min(filter_margin)
            .min(frac_distance(c.x))
            .min(frac_distance(c.y)),
    }
}

/// Neutral values of the canonical channels as the GPU reads them from
/// `TextureSet::neutral` (`Channel::neutral_u8 / 255`).
pub fn neutral_channels() -> [f32; CHANNELS] {
    std::array::from_fn(|c| f32::from(Channel::ALL[c].neutral_u8()) / 255.0)
}

/// Decoded channels clamped to \[0, 1\], with the channels not in `present` neutral.
fn finish_channels(decoded: &[f64], present: ChannelMask) -> [f32; CHANNELS] {
    let neutral = neutral_channels();
    std::array::from_fn(|c| {
        if present.0 & (1 << c) != 0 {
            decoded.get(c).map_or(0.0, |&v| v.clamp(0.0, 1.0) as f32)
        } else {
            neutral[c]
        }
    })
}

fn oct_decode(e: Vec2) -> Vec3 {
    let mut n = Vec3::new(e.x, e.y, 1.0 - e.x.abs() - e.y.abs());
    let t = (-n.z).max(0.0);
    n.x += if n.x >= 0.0 { -t } else { t };
    n.y += if n.y >= 0.0 { -t } else { t };
    n.normalize()
}

fn oct_encode(n: Vec3) -> Vec2 {
    let p = Vec2::new(n.x, n.y) / (n.x.abs() + n.y.abs() + n.z.abs());
    if n.z >= 0.0 {
        return p;
    }
    let sign = Vec2::new(
        if p.x >= 0.0 { 1.0 } else { -1.0 },
        if p.y >= 0.0 { 1.0 } else { -1.0 },
    );
    (Vec2::ONE - Vec2::new(p.y.abs(), p.x.abs())) * sign
}

/// The material targets of one pixel from its canonical channels `c` (in \[0, 1\], base
/// colour and emissive sRGB-encoded), as `shaders/reference.wgsl` writes them: linear
/// base colour × factor; octahedral shading normal (tangent-space normal × scale on the
/// G-buffer frame `normal_tangent`, bitangent sign from `word`), roughness, metallic;
/// linear emissive × factor, occlusion mixed by its strength.
pub fn material_outputs(
    c: &[f32; CHANNELS],
    m: &MaterialData,
    normal_tangent: [f32; 4],
    word: u32,
) -> [[f32; 4]; 3] {
    let n = oct_decode(Vec2::new(normal_tangent[0], normal_tangent[1]));
    let t = oct_decode(Vec2::new(normal_tangent[2], normal_tangent[3]));
    let sign = if word & BITANGENT_NEGATIVE != 0 {
        -1.0
    } else {
        1.0
    };
    let b = n.cross(t) * sign;
    let xy = (Vec2::new(c[4], c[5]) * 2.0 - 1.0) * m.normal_scale;
    let z = (1.0 - xy.dot(xy)).max(0.0).sqrt();
    let shading = (t * xy.x + b * xy.y + n * z).normalize();
    let oct = oct_encode(shading);
    let f = m.base_color_factor;
    let e = m.emissive_factor;
    [
        [
            srgb_to_linear(c[0]) * f[0],
            srgb_to_linear(c[1]) * f[1],
            srgb_to_linear(c[2]) * f[2],
            c[3] * f[3],
        ],
        [
            oct.x,
            oct.y,
            c[7] * m.roughness_factor,
            c[8] * m.metallic_factor,
        ],
        [
            srgb_to_linear(c[9]) * e[0],
            srgb_to_linear(c[10]) * e[1],
            srgb_to_linear(c[11]) * e[2],
            1.0 + (c[6] - 1.0) * m.occlusion_strength,
        ],
    ]
}

/// One pixel of the G-buffer as the decode pass reads it, plus its noise samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PixelInput {
    /// Material word (id | bitangent sign, or `u32::MAX` for no geometry).
    pub word: u32,
    /// Material UV.
    pub uv: [f32; 2],
    /// d(uv)/dx, d(uv)/dy.
    pub uv_grad: [f32; 4],
    /// Octahedral normal (xy) and tangent (zw).
    pub normal_tangent: [f32; 4],
    /// ξ0, ξ1, ξ2 (used when stochastic).
    pub xi: [f32; 3],
}

/// The CPU reference of the NTC passes for one package and scene.
#[derive(Debug)]
pub struct NtcCpuReference<'p> {
    package: &'p NtcPackage,
    /// Per decoder: its f32 model (f16 weights, dequantised latents).
    models: Vec<GroupModel>,
    /// Per package material: (decoder, index within the decoder's model).
    local: Vec<(usize, usize)>,
    material_map: Vec<Option<u32>>,
    materials: Vec<MaterialData>,
}

impl<'p> NtcCpuReference<'p> {
    /// The reference for `package` and scene materials `materials` mapped by
    /// `material_map` (as for [`NtcSceneGpu::upload`]).
    pub fn new(
        package: &'p NtcPackage,
        material_map: &[Option<u32>],
        materials: &[MaterialData],
    ) -> Result<Self, NtcRenderError> {
        let mut models = Vec::with_capacity(package.decoders.len());
        let mut local = vec![(0, 0); package.materials.len()];
        for d in 0..package.decoders.len() {
            let (model, indices) = package.group_model(d as u32)?;
            for (l, &i) in indices.iter().enumerate() {
                local[i] = (d, l);
            }
            models.push(model);
        }
        Ok(Self {
            package,
            models,
            local,
            material_map: material_map.to_vec(),
            materials: materials.to_vec(),
        })
    }

    /// Texel `(x, y)` of mip `mip` of package material `material`: `cpu::forward`,
    /// clamped to \[0, 1\], absent channels neutral.
    pub fn decode_texel(
        &self,
        material: usize,
        mip: usize,
        x: u32,
        y: u32,
    ) -> Result<[f32; CHANNELS], NtcRenderError> {
        let (decoder, local) = self.local.get(material).copied().unwrap_or((0, usize::MAX));
        let sample = Sample {
            material: local as u32,
            mip: mip as u32,
            x,
            y,
        };
        let model = self
            .models
            .get(decoder)
            .ok_or(TrainError::SampleOutOfRange(sample))?;
        let values = model
            .pyramids()
            .get(local)
            .ok_or(TrainError::SampleOutOfRange(sample))?
            .values();
        let (outputs, _) = cpu::forward(model, values, sample)?;
        Ok(finish_channels(
            &outputs,
            self.package.materials[material].present,
        ))
    }

    /// The decode pass's three material-target values for one pixel.
    pub fn pixel(
        &self,
        input: &PixelInput,
        settings: &DecodeSettings,
    ) -> Result<[[f32; 4]; 3], NtcRenderError> {
        let id = (input.word & MATERIAL_ID_MASK) as usize;
        let Some(m) = self.materials.get(id).filter(|_| input.word != NO_MATERIAL) else {
            return Ok([[0.0; 4]; 3]);
        };
        let channels = match self.material_map.get(id).copied().flatten() {
            None => neutral_channels(),
            Some(p) => {
                let layout = &self.package.materials[p as usize].layout;
                let sampling = m.sampling();
                let c = choose_texel(
                    layout,
                    &sampling,
                    input.uv,
                    input.uv_grad,
                    settings,
                    input.xi,
                );
                self.decode_texel(p as usize, c.mip, c.x, c.y)?
            }
        };
        Ok(material_outputs(
            &channels,
            m,
            input.normal_tangent,
            input.word,
        ))
    }

    /// What the bake writes for mip `mip` of package material `material`: the three
    /// channel groups as RGBA8 rows (`quantize_u8` of the clamped values, absent channels
    /// neutral).
    pub fn bake_mip(&self, material: usize, mip: usize) -> Result<[Vec<u8>; 3], NtcRenderError> {
        let (decoder, local) = self.local.get(material).copied().unwrap_or((0, usize::MAX));
        let model = self
            .models
            .get(decoder)
            .ok_or(TrainError::SampleOutOfRange(Sample {
                material: material as u32,
                mip: mip as u32,
                x: 0,
                y: 0,
            }))?;
        let decoded = cpu::decode_mip(model, local, mip)?;
        let present = self.package.materials[material].present;
        let mut groups: [Vec<u8>; 3] = Default::default();
        for texel in decoded.chunks_exact(CHANNELS) {
            let values: Vec<f64> = texel.iter().map(|&v| f64::from(v)).collect();
            let c = finish_channels(&values, present);
            for (g, group) in groups.iter_mut().enumerate() {
                group.extend(c[4 * g..4 * g + 4].iter().map(|&v| quantize_u8(v)));
            }
        }
        Ok(groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ntc::format::NtcMaterial;
    use crate::ntc::model::Preset;
    use crate::ntc::train::Quality;
    use crate::scene::WrapMode;
    use crate::scene::{ImageSource, Material, MaterialTextures, TextureRef};
    use std::path::PathBuf;

    fn textured(name: &str, image: &str) -> Material {
        Material {
            name: name.into(),
            textures: MaterialTextures {
                base_color: Some(TextureRef {
                    image: ImageSource::File(PathBuf::from(format!("/textures/{image}.png"))),
                    tex_coord: 0,
                }),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn package_with(names: &[&str]) -> NtcPackage {
        let config = NtcConfig {
            features: 4,
            hidden: vec![4],
            ..NtcConfig::default()
        };
        let mut package = NtcPackage::new(config.clone()).expect("package");
        package
            .decoders
            .push(vec![half::f16::ZERO; config.decoder_param_count()]);
        for name in names {
            let layout = LatentLayout::new(8, 8, 1, Preset::High, 4).expect("layout");
            let words = layout.packed_words(config.latent_bits);
            package.materials.push(NtcMaterial {
                name: (*name).into(),
                present: ChannelMask::ALL,
                layout,
                decoder: 0,
                constants: [1.0; CHANNELS],
                quality: Quality::default(),
                latents: vec![0; words],
            });
        }
        package
    }

    fn scene_with(materials: Vec<Material>) -> Scene {
        Scene {
            source: PathBuf::from("test.gltf"),
            meshes: vec![],
            instances: vec![],
            materials,
            cameras: vec![],
            bounds: crate::scene::Aabb {
                min: Vec3::ZERO,
                max: Vec3::ZERO,
            },
            warnings: vec![],
            buffers: vec![],
        }
    }

    #[test]
    fn materials_map_by_set_name() {
        let package = package_with(&["wood", "brick"]);
        let scene = scene_with(vec![
            textured("a", "brick_basecolor"),
            Material::default(),
            textured("b", "wood"),
        ]);
        let map = map_scene_materials(&package, &scene).expect("map");
        assert_eq!(map, vec![Some(1), None, Some(0)]);
    }

    #[test]
    fn a_missing_set_names_the_set_and_the_package() {
        let package = package_with(&["wood"]);
        let scene = scene_with(vec![textured("floor", "marble")]);
        let err = map_scene_materials(&package, &scene).expect_err("missing");
        let message = err.to_string();
        assert!(message.contains("`marble`"), "{message}");
        assert!(message.contains("(in memory)"), "{message}");
        assert!(message.contains("`floor`"), "{message}");
    }

    #[test]
    fn nearest_and_stochastic_choices() {
        let layout = LatentLayout::new(16, 8, 5, Preset::High, 4).expect("layout");
        let nearest = DecodeSettings {
            stochastic: false,
            lod_bias: 0.0,
        };
        let repeat = Sampling::default();
        // Footprint of 2 texels → lod 1 (8 × 4 mip); uv 0.3 → texel ⌊2.4⌋, ⌊1.2⌋.
        let c = choose_texel(
            &layout,
            &repeat,
            [0.3, 0.3],
            [2.0 / 16.0, 0.0, 0.0, 0.0],
            &nearest,
            [0.0; 3],
        );
        assert_eq!((c.mip, c.x, c.y), (1, 2, 1));
        // Negative uv wraps; a huge footprint clamps to the last mip.
        let c = choose_texel(
            &layout,
            &repeat,
            [-0.01, 0.5],
            [100.0, 0.0, 0.0, 0.0],
            &nearest,
            [0.0; 3],
        );
        assert_eq!((c.mip, c.x, c.y), (4, 0, 0));
        // Mip 0 (16 × 8), uv (−0.1, 1.3) → texel (⌊−1.6⌋, ⌊10.4⌋) = (−2, 10): repeat
        // tiles to (14, 2), clamp holds the edge (0, 7), mirror reflects to (1, 5).
        let fine = [1.0 / 16.0, 0.0, 0.0, 0.0];
        let at = |wrap| {
            let sampling = Sampling {
                wrap,
                ..Sampling::default()
            };
            let c = choose_texel(&layout, &sampling, [-0.1, 1.3], fine, &nearest, [0.0; 3]);
            (c.mip, c.x, c.y)
        };
        assert_eq!(at([WrapMode::Repeat; 2]), (0, 14, 2));
        assert_eq!(at([WrapMode::ClampToEdge; 2]), (0, 0, 7));
        assert_eq!(at([WrapMode::MirroredRepeat; 2]), (0, 1, 5));
        assert_eq!(at([WrapMode::ClampToEdge, WrapMode::Repeat]), (0, 0, 2));
        let stochastic = DecodeSettings::default();
        // lod 1.5: ξ0 = 0.2 < 0.5 picks mip 2 (4 × 2); c = 0.3·4 − ½ + 0.9 = 1.6.
        let grad = [2f32.powf(1.5) / 16.0, 0.0, 0.0, 0.0];
        let pick = |sampling: &Sampling, xi| {
            let c = choose_texel(&layout, sampling, [0.3, 0.3], grad, &stochastic, xi);
            (c.mip, c.x, c.y)
        };
        assert_eq!(pick(&repeat, [0.2, 0.9, 0.0]), (2, 1, 0));
        assert_eq!(pick(&repeat, [0.7, 0.0, 0.0]).0, 1);
        // A nearest minification filter takes texel ⌊0.3 · 4⌋ = 1 whatever ξ1 (linear:
        // ⌊1.2 − ½ + 0.2⌋ = 0); a nearest mip is the same whatever ξ0 (a linear one is
        // not); without mipmapping mip 0 (16 × 8): ⌊4.8 − ½ + 0.9⌋ = 5, ⌊2.4 − ½⌋ = 1.
        let min_nearest = Sampling {
            min: Filter::Nearest,
            ..repeat
        };
        assert_eq!(pick(&min_nearest, [0.2, 0.2, 0.0]), (2, 1, 0));
        assert_eq!(pick(&repeat, [0.2, 0.2, 0.0]), (2, 0, 0));
        let mip_nearest = Sampling {
            mipmap: MipFilter::Nearest,
            ..repeat
        };
        let (low, high) = ([0.1, 0.9, 0.0], [0.9, 0.9, 0.0]);
        assert_eq!(pick(&mip_nearest, low), pick(&mip_nearest, high));
        assert_ne!(pick(&repeat, low).0, pick(&repeat, high).0);
        let no_mips = Sampling {
            mipmap: MipFilter::Off,
            ..repeat
        };
        assert_eq!(pick(&no_mips, [0.2, 0.9, 0.0]), (0, 5, 1));
        // A zero footprint is mip 0 (magnified: the mag filter, linear here).
        let c = choose_texel(
            &layout,
            &repeat,
            [0.5, 0.5],
            [0.0; 4],
            &stochastic,
            [0.5; 3],
        );
        assert_eq!(c.mip, 0);
    }
}
