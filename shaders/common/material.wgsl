// What the material passes (reference and NTC decode) share when they write the
// material targets: the first bindings of their group 0 and the tangent-space normal.

#import "common/math.wgsl"
#import "common/frame.wgsl"

// Group 0, bindings 0–5, of both passes: the frame, the scene's materials and the
// G-buffer (normal + tangent, octahedral, Rgba16Float; UV, Rg32Float; UV derivatives,
// Rgba16Float; material word, R32Uint).
@group(0) @binding(0) var<uniform> frame: Frame;
@group(0) @binding(1) var<storage, read> materials: array<MaterialData>;
@group(0) @binding(2) var gb_normal_tangent: texture_2d<f32>;
@group(0) @binding(3) var gb_uv: texture_2d<f32>;
@group(0) @binding(4) var gb_uv_grad: texture_2d<f32>;
@group(0) @binding(5) var gb_material: texture_2d<u32>;

// A tangent-space normal (OpenGL convention, X/Y in [0,1], scaled by the material's
// normal scale) applied to the G-buffer's normal/tangent frame and bitangent sign.
fn shading_normal(word: u32, normal_tangent: vec4f, xy01: vec2f, scale: f32) -> vec3f {
    let n = oct_decode(normal_tangent.xy);
    let t = oct_decode(normal_tangent.zw);
    let sign = select(1.0, -1.0, (word & BITANGENT_NEGATIVE) != 0u);
    let b = cross(n, t) * sign;
    let xy = (xy01 * 2.0 - 1.0) * scale;
    let z = sqrt(max(1.0 - dot(xy, xy), 0.0));
    return normalize(t * xy.x + b * xy.y + n * z);
}
