//! Host mirrors of the WGSL structs in `shaders/common/frame.wgsl`, the materials' alpha
//! modes and their sampling word (the material word's constants are
//! `crate::screen::material_word`'s).
//!
//! `#[repr(C)]` + bytemuck with explicit padding; the same field docs on both sides.
//! `tests/integration/render_types.rs` checks every size against naga's layout of the WGSL struct and
//! every constant against its WGSL twin.

use bytemuck::{Pod, Zeroable};

use crate::scene::{Filter, MipFilter, Sampling, WrapMode};

/// [`MaterialData::alpha_mode`] of an opaque material (WGSL `ALPHA_OPAQUE`).
pub const ALPHA_OPAQUE: u32 = 0;
/// [`MaterialData::alpha_mode`] of an alpha-tested material (WGSL `ALPHA_MASK`).
pub const ALPHA_MASK: u32 = 1;
/// [`MaterialData::alpha_mode`] of a blended material (WGSL `ALPHA_BLEND`).
pub const ALPHA_BLEND: u32 = 2;

/// A wrapping field of [`MaterialData::sampling`] (bits 0–1 along U, 2–3 along V):
/// repeat (WGSL `WRAP_REPEAT`).
pub const WRAP_REPEAT: u32 = 0;
/// The wrapping field's clamp to edge (WGSL `WRAP_CLAMP_TO_EDGE`).
pub const WRAP_CLAMP_TO_EDGE: u32 = 1;
/// The wrapping field's mirrored repeat (WGSL `WRAP_MIRRORED_REPEAT`).
pub const WRAP_MIRRORED_REPEAT: u32 = 2;
/// [`MaterialData::sampling`]'s bit of a nearest magnification filter (WGSL twin).
pub const SAMPLING_MAG_NEAREST: u32 = 1 << 4;
/// [`MaterialData::sampling`]'s bit of a nearest minification filter (WGSL twin).
pub const SAMPLING_MIN_NEAREST: u32 = 1 << 5;
/// The mip filter field of [`MaterialData::sampling`] (bits 6–7): linear (WGSL twin).
pub const SAMPLING_MIPMAP_LINEAR: u32 = 0;
/// The mip filter field's nearest mip (WGSL twin).
pub const SAMPLING_MIPMAP_NEAREST: u32 = 1;
/// The mip filter field's no mipmapping (WGSL twin).
pub const SAMPLING_MIPMAP_NONE: u32 = 2;

/// WGSL `Frame`: constants of one frame (uniform, group 0 binding 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct FrameUniform {
    /// World → clip for this frame (reversed-Z, infinite far plane).
    pub clip_from_world: [[f32; 4]; 4],
    /// Clip → world for this frame.
    pub world_from_clip: [[f32; 4]; 4],
    /// World → clip of the previous frame.
    pub prev_clip_from_world: [[f32; 4]; 4],
    /// World → view.
    pub view_from_world: [[f32; 4]; 4],
    /// World → the sun's orthographic clip space (shadow map).
    pub light_clip_from_world: [[f32; 4]; 4],
    /// Eye position (world, metres); w unused.
    pub camera_position: [f32; 4],
    /// Unit direction towards the sun; w unused.
    pub sun_direction: [f32; 4],
    /// Sun irradiance at normal incidence (linear RGB); w unused.
    pub sun_irradiance: [f32; 4],
    /// Upper-hemisphere ambient radiance (linear RGB); w unused.
    pub sky_radiance: [f32; 4],
    /// Lower-hemisphere ambient radiance (linear RGB); w unused.
    pub ground_radiance: [f32; 4],
    /// Width, height, 1/width, 1/height in pixels.
    pub viewport: [f32; 4],
    /// Enabled (0/1), 1/shadow-map size, normal offset (m), depth bias.
    pub shadow_params: [f32; 4],
    /// Frame counter since the last reset.
    pub frame_index: u32,
    /// [`super::Aov`] as `u32`.
    pub aov: u32,
    /// Exposure multiplier.
    pub exposure: f32,
    /// Reserved, zero.
    pub _pad0: u32,
}

/// WGSL `InstanceData`: one drawn (instance, primitive) pair.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct InstanceData {
    /// Object → world.
    pub world_from_local: [[f32; 4]; 4],
    /// Inverse transpose of the upper 3×3 of `world_from_local`, in a mat4.
    pub normal_from_local: [[f32; 4]; 4],
    /// Index into the material array.
    pub material: u32,
    /// First index of the pair's draw in the shared index buffer (the visibility
    /// G-buffer's resolve finds triangle `p` of the draw at `first_index + 3p`).
    pub first_index: u32,
    /// Added to every index of the draw.
    pub base_vertex: i32,
    /// Padding.
    pub _pad: u32,
}

/// WGSL `MaterialData`: constants of one material.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct MaterialData {
    /// Linear RGBA multiplier of the base colour.
    pub base_color_factor: [f32; 4],
    /// Linear RGB emissive multiplier; w unused.
    pub emissive_factor: [f32; 4],
    /// UV transform columns c0.xy, c1.xy.
    pub uv_c0_c1: [f32; 4],
    /// UV transform column c2.xy, then two unused floats.
    pub uv_c2: [f32; 4],
    /// Metallic multiplier.
    pub metallic_factor: f32,
    /// Roughness multiplier.
    pub roughness_factor: f32,
    /// Normal map scale.
    pub normal_scale: f32,
    /// Occlusion strength.
    pub occlusion_strength: f32,
    /// Cutoff for masked alpha.
    pub alpha_cutoff: f32,
    /// [`ALPHA_OPAQUE`], [`ALPHA_MASK`] or [`ALPHA_BLEND`].
    pub alpha_mode: u32,
    /// How its textures are addressed and filtered: `WRAP_*` along U and V in bits 0–1
    /// and 2–3, [`SAMPLING_MAG_NEAREST`], [`SAMPLING_MIN_NEAREST`], `SAMPLING_MIPMAP_*`
    /// in bits 6–7 ([`MaterialData::sampling`]).
    pub sampling: u32,
    /// Padding.
    pub _pad: u32,
}

impl MaterialData {
    /// The material table of a scene: one entry per material, in order.
    pub fn table(materials: &[crate::scene::Material]) -> Vec<Self> {
        materials.iter().map(Self::from_material).collect()
    }

    /// The GPU constants of a scene material.
    pub fn from_material(m: &crate::scene::Material) -> Self {
        use crate::scene::AlphaMode;
        let [c0, c1, c2] = m.uv_transform.matrix();
        let e = m.emissive_factor;
        let (alpha_mode, alpha_cutoff) = match m.alpha_mode {
            AlphaMode::Opaque => (ALPHA_OPAQUE, 0.0),
            AlphaMode::Mask { cutoff } => (ALPHA_MASK, cutoff),
            AlphaMode::Blend => (ALPHA_BLEND, 0.0),
        };
        Self {
            base_color_factor: m.base_color_factor,
            emissive_factor: [e[0], e[1], e[2], 0.0],
            uv_c0_c1: [c0[0], c0[1], c1[0], c1[1]],
            uv_c2: [c2[0], c2[1], 0.0, 0.0],
            metallic_factor: m.metallic_factor,
            roughness_factor: m.roughness_factor,
            normal_scale: m.normal_scale,
            occlusion_strength: m.occlusion_strength,
            alpha_cutoff,
            alpha_mode,
            sampling: sampling_code(&m.sampling),
            _pad: 0,
        }
    }

    /// The sampling [`MaterialData::sampling`] holds (a field of no known code reads as
    /// the default's).
    pub fn sampling(&self) -> Sampling {
        let code = self.sampling;
        let wrap = |field: u32| match field & 3 {
            WRAP_CLAMP_TO_EDGE => WrapMode::ClampToEdge,
            WRAP_MIRRORED_REPEAT => WrapMode::MirroredRepeat,
            _ => WrapMode::Repeat,
        };
        let filter = |bit: u32| {
            if code & bit != 0 {
                Filter::Nearest
            } else {
                Filter::Linear
            }
        };
        Sampling {
            wrap: [wrap(code), wrap(code >> 2)],
            mag: filter(SAMPLING_MAG_NEAREST),
            min: filter(SAMPLING_MIN_NEAREST),
            mipmap: match code >> 6 & 3 {
                SAMPLING_MIPMAP_NEAREST => MipFilter::Nearest,
                SAMPLING_MIPMAP_NONE => MipFilter::Off,
                _ => MipFilter::Linear,
            },
        }
    }
}

/// [`MaterialData::sampling`] of `s`.
fn sampling_code(s: &Sampling) -> u32 {
    let wrap = |w: WrapMode| match w {
        WrapMode::Repeat => WRAP_REPEAT,
        WrapMode::ClampToEdge => WRAP_CLAMP_TO_EDGE,
        WrapMode::MirroredRepeat => WRAP_MIRRORED_REPEAT,
    };
    let nearest = |f: Filter, bit: u32| if f == Filter::Nearest { bit } else { 0 };
    let mipmap = match s.mipmap {
        MipFilter::Linear => SAMPLING_MIPMAP_LINEAR,
        MipFilter::Nearest => SAMPLING_MIPMAP_NEAREST,
        MipFilter::Off => SAMPLING_MIPMAP_NONE,
    };
    wrap(s.wrap[0])
        | wrap(s.wrap[1]) << 2
        | nearest(s.mag, SAMPLING_MAG_NEAREST)
        | nearest(s.min, SAMPLING_MIN_NEAREST)
        | mipmap << 6
}
