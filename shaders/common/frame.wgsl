// Per-frame, per-instance and per-material data shared by the render passes.
// Mirrored on the host by `render::gpu_types` (`FrameUniform`, `InstanceData`,
// `MaterialData`); `tests/gpu_types.rs` asserts that the sizes agree.

// Constants of one frame (group 0, binding 0 in every render pass).
struct Frame {
    // World → clip for this frame (reversed-Z, infinite far plane).
    clip_from_world: mat4x4f,
    // Clip → world for this frame (depth reconstruction).
    world_from_clip: mat4x4f,
    // World → clip of the previous frame (motion vectors).
    prev_clip_from_world: mat4x4f,
    // World → view (right-handed, −Z forward).
    view_from_world: mat4x4f,
    // World → the sun's orthographic clip space (shadow map; depth 0 near the sun).
    light_clip_from_world: mat4x4f,
    // Eye position (world, metres); w unused.
    camera_position: vec4f,
    // Unit direction towards the sun (world); w unused.
    sun_direction: vec4f,
    // Sun irradiance at normal incidence (linear RGB); w unused.
    sun_irradiance: vec4f,
    // Ambient radiance from the upper hemisphere (linear RGB); w unused.
    sky_radiance: vec4f,
    // Ambient radiance from the lower hemisphere (linear RGB); w unused.
    ground_radiance: vec4f,
    // Render target size: width, height, 1/width, 1/height (pixels).
    viewport: vec4f,
    // Shadows: (enabled 0/1, 1/shadow-map size, normal offset in metres, depth bias).
    shadow_params: vec4f,
    // Frame counter since the last reset.
    frame_index: u32,
    // Which image the tonemap pass shows (`AOV_*` below).
    aov: u32,
    // Exposure multiplier applied before tonemapping.
    exposure: f32,
    // Reserved, zero.
    _pad0: u32,
}

// Values of `Frame.aov`; `render::Aov` on the host.
const AOV_FINAL: u32 = 0u;
const AOV_ALBEDO: u32 = 1u;
const AOV_NORMAL: u32 = 2u;
const AOV_ROUGHNESS: u32 = 3u;
const AOV_METALLIC: u32 = 4u;
const AOV_OCCLUSION: u32 = 5u;
const AOV_EMISSIVE: u32 = 6u;
const AOV_MATERIAL_ID: u32 = 7u;

// One drawn (instance, primitive) pair, indexed by `instance_index` in the G-buffer pass.
struct InstanceData {
    // Object → world.
    world_from_local: mat4x4f,
    // Inverse transpose of the upper 3×3 of `world_from_local`, in a mat4 for alignment.
    normal_from_local: mat4x4f,
    // Index into the material array.
    material: u32,
    // First index of the pair's draw in the shared index buffer (the visibility
    // G-buffer's resolve finds triangle p of the draw at first_index + 3p).
    first_index: u32,
    // Added to every index of the draw.
    base_vertex: i32,
    _pad0: u32,
}

// Values of `MaterialData.alpha_mode`.
const ALPHA_OPAQUE: u32 = 0u;
const ALPHA_MASK: u32 = 1u;
const ALPHA_BLEND: u32 = 2u;

// Constants of one material (glTF metallic-roughness semantics: factors multiply textures).
struct MaterialData {
    // Linear RGBA multiplier of the base colour.
    base_color_factor: vec4f,
    // Linear RGB emissive multiplier (strength folded in); w unused.
    emissive_factor: vec4f,
    // UV transform columns: uv' = c0 * u + c1 * v + c2, packed as (c0.xy, c1.xy).
    uv_c0_c1: vec4f,
    // (c2.xy, unused, unused).
    uv_c2: vec4f,
    metallic_factor: f32,
    roughness_factor: f32,
    normal_scale: f32,
    occlusion_strength: f32,
    // Alpha cutoff for ALPHA_MASK.
    alpha_cutoff: f32,
    // ALPHA_OPAQUE | ALPHA_MASK | ALPHA_BLEND.
    alpha_mode: u32,
    // How its textures are addressed and filtered (render::gpu_types): WRAP_* along U
    // in bits 0–1 and along V in bits 2–3, SAMPLING_MAG_NEAREST, SAMPLING_MIN_NEAREST,
    // SAMPLING_MIPMAP_* in bits 6–7.
    sampling: u32,
    _pad0: u32,
}

const SAMPLING_MAG_NEAREST: u32 = 16u;
const SAMPLING_MIN_NEAREST: u32 = 32u;
const SAMPLING_MIPMAP_LINEAR: u32 = 0u;
const SAMPLING_MIPMAP_NEAREST: u32 = 1u;
const SAMPLING_MIPMAP_NONE: u32 = 2u;

// Values of the two wrap fields of `MaterialData.sampling`.
const WRAP_REPEAT: u32 = 0u;
const WRAP_CLAMP_TO_EDGE: u32 = 1u;
const WRAP_MIRRORED_REPEAT: u32 = 2u;

// Texel `c` (an integer as f32) of an axis of `n` texels, addressed with `mode` (WRAP_*):
// scene::WrapMode::texel.
fn wrap_texel(c: f32, n: u32, mode: u32) -> u32 {
    let size = i32(n);
    let i = i32(c);
    if mode == WRAP_CLAMP_TO_EDGE {
        return u32(clamp(i, 0, size - 1));
    }
    if mode == WRAP_MIRRORED_REPEAT {
        let m = (i % (2 * size) + 2 * size) % (2 * size);
        return u32(select(2 * size - 1 - m, m, m < size));
    }
    return u32((i % size + size) % size);
}

fn material_uv(m: MaterialData, uv: vec2f) -> vec2f {
    return m.uv_c0_c1.xy * uv.x + m.uv_c0_c1.zw * uv.y + m.uv_c2.xy;
}

// The G-buffer's material word: bits 0..19 material id, bit 31 bitangent sign (1 = negative).
const MATERIAL_ID_MASK: u32 = 0xFFFFFu;
const BITANGENT_NEGATIVE: u32 = 0x80000000u;
// Value of the material word where no geometry was drawn.
const NO_MATERIAL: u32 = 0xFFFFFFFFu;
