// Reference material pass: the original textures, mipmapped, trilinear (anisotropic where
// the adapter allows), sampled with textureSampleGrad from the G-buffer's UV derivatives
// (the inputs the NTC decode reads). One indirect dispatch per material over that
// material's screen rectangle (material_classify.wgsl: `classify` finds the rectangles,
// `dispatch_args` turns them into these dispatches), with the material's texture bind
// group as group 1 and its index at a dynamic offset; each thread writes the material
// targets only where the G-buffer's material word is that material. The lighting pass
// reads the targets (the NTC decode pass writes the same ones).

#import "common/math.wgsl"
#import "common/frame.wgsl"
#import "common/material.wgsl"
#import "common/material_textures.wgsl"

// Group 0 between common/material.wgsl's bindings 0–5 and 8–10.
// Per material: (size − min x, size − min y, max x + 1, max y + 1); all zero = not on screen.
@group(0) @binding(6) var<storage, read> rects: array<vec4u>;
// The material this dispatch shades (bound at a dynamic offset per material).
struct ShadeMaterial {
    id: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
@group(0) @binding(7) var<uniform> shaded: ShadeMaterial;

// Workgroup side; equals SHADE_TILE in material_classify.wgsl, which sizes the dispatches.
@compute @workgroup_size(8, 8)
fn shade(@builtin(global_invocation_id) gid: vec3u) {
    let material = shaded.id;
    let r = rects[material];
    let size = textureDimensions(gb_material);
    let pixel = size - r.xy + gid.xy;
    if any(pixel >= r.zw) {
        return;
    }
    let p = vec2i(pixel);
    let word = textureLoad(gb_material, p, 0).x;
    if word == NO_MATERIAL || (word & MATERIAL_ID_MASK) != material {
        return;
    }
    let nt = textureLoad(gb_normal_tangent, p, 0);
    let uv = textureLoad(gb_uv, p, 0).xy;
    let g = textureLoad(gb_uv_grad, p, 0);
    let m = materials[material];
    let c0 = textureSampleGrad(tex_group0, material_sampler, uv, g.xy, g.zw) + sample_fill.groups[0];
    let c1 = textureSampleGrad(tex_group1, material_sampler, uv, g.xy, g.zw) + sample_fill.groups[1];
    let c2 = textureSampleGrad(tex_group2, material_sampler, uv, g.xy, g.zw) + sample_fill.groups[2];
    let n = shading_normal(word, nt, c1.xy, m.normal_scale);
    let occlusion = mix(1.0, c1.z, m.occlusion_strength);
    let roughness = c1.w * m.roughness_factor;
    let metallic = c2.x * m.metallic_factor;
    let emissive = srgb_to_linear(c2.yzw) * m.emissive_factor.rgb;
    textureStore(out_base_color, p, c0 * m.base_color_factor);
    textureStore(out_normal_rm, p, vec4f(oct_encode(n), roughness, metallic));
    textureStore(out_emissive_ao, p, vec4f(emissive, occlusion));
}
