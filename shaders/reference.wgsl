// Reference material pass: the original textures, mipmapped, trilinear (anisotropic where
// the adapter allows), sampled with the G-buffer's UV derivatives. One quad per material,
// covering that material's screen rectangle (from material_classify.wgsl) at that
// material's depth; the EQUAL depth test against the material-depth buffer keeps only
// its pixels. Writes the material targets that the
// lighting pass reads (the NTC decode pass writes the same targets).

#import "common/math.wgsl"
#import "common/frame.wgsl"
#import "common/material.wgsl"

// Group 0 after common/material.wgsl's bindings 0–5.
// Per material: (size − min x, size − min y, max x + 1, max y + 1); all zero = not on screen.
@group(0) @binding(6) var<storage, read> rects: array<vec4u>;

// Canonical channel groups of the material's texture set (see texture::CHANNELS):
// 0 = base colour (sRGB) + alpha, 1 = normal X,Y + occlusion + roughness,
// 2 = metallic + emissive (sRGB-encoded, decoded here).
@group(1) @binding(0) var tex_group0: texture_2d<f32>;
@group(1) @binding(1) var tex_group1: texture_2d<f32>;
@group(1) @binding(2) var tex_group2: texture_2d<f32>;
@group(1) @binding(3) var material_sampler: sampler;

struct VertexOut {
    // Invariant: the EQUAL test compares this depth with the material-depth buffer.
    @builtin(position) @invariant position: vec4f,
    @location(0) @interpolate(flat) material: u32,
}

// Two triangles (6 vertices) covering the material's rectangle; degenerate when empty.
@vertex
fn vs_main(@builtin(vertex_index) vi: u32, @builtin(instance_index) material: u32) -> VertexOut {
    let r = rects[material];
    let size = vec2f(frame.viewport.xy);
    let lo = vec2f(size - vec2f(r.xy));
    let hi = vec2f(r.zw);
    let corner = array<vec2f, 6>(vec2f(0.0, 0.0), vec2f(1.0, 0.0), vec2f(1.0, 1.0), vec2f(0.0, 0.0), vec2f(1.0, 1.0), vec2f(0.0, 1.0))[vi];
    var pixel = mix(lo, hi, corner);
    if r.z == 0u {
        pixel = vec2f(0.0);
    }
    let ndc = vec2f(pixel.x / size.x * 2.0 - 1.0, 1.0 - pixel.y / size.y * 2.0);
    var out: VertexOut;
    out.position = vec4f(ndc, material_depth(material), 1.0);
    out.material = material;
    return out;
}

// The material targets. Lighting and the AOV views read these.
struct MaterialOut {
    // Linear base colour, alpha.
    @location(0) base_color: vec4f,
    // Octahedral shading normal (world), roughness, metallic.
    @location(1) normal_rm: vec4f,
    // Linear emissive radiance, occlusion.
    @location(2) emissive_ao: vec4f,
}

@fragment
fn fs_main(in: VertexOut) -> MaterialOut {
    let p = vec2i(in.position.xy);
    let word = textureLoad(gb_material, p, 0).x;
    let nt = textureLoad(gb_normal_tangent, p, 0);
    let uv = textureLoad(gb_uv, p, 0).xy;
    let g = textureLoad(gb_uv_grad, p, 0);
    let m = materials[in.material];
    let c0 = textureSampleGrad(tex_group0, material_sampler, uv, g.xy, g.zw);
    let c1 = textureSampleGrad(tex_group1, material_sampler, uv, g.xy, g.zw);
    let c2 = textureSampleGrad(tex_group2, material_sampler, uv, g.xy, g.zw);
    let n = shading_normal(word, nt, c1.xy, m.normal_scale);
    let occlusion = mix(1.0, c1.z, m.occlusion_strength);
    var out: MaterialOut;
    out.base_color = c0 * m.base_color_factor;
    out.normal_rm = vec4f(oct_encode(n), c1.w * m.roughness_factor, c2.x * m.metallic_factor);
    out.emissive_ao = vec4f(srgb_to_linear(c2.yzw) * m.emissive_factor.rgb, occlusion);
    return out;
}
