// What the material passes (reference and NTC decode) share when they write the
// material targets.

#import "common/math.wgsl"
#import "common/frame.wgsl"

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
