// Shared math for every shader: constants, sRGB transfer functions, octahedral normals.
// Import with `#import "common/math.wgsl"`; it declares no bindings and no entry points.

// π.
const PI: f32 = 3.141592653589793;
// 2π.
const TAU: f32 = 6.283185307179586;
// 1/π (Lambert normalisation).
const INV_PI: f32 = 0.3183098861837907;

// Relative luminance of a linear Rec.709 / sRGB colour.
fn luminance(c: vec3f) -> f32 {
    return dot(c, vec3f(0.2126, 0.7152, 0.0722));
}

// sRGB-encoded [0,1] → linear, the exact piecewise IEC 61966-2-1 curve, per channel.
fn srgb_to_linear(c: vec3f) -> vec3f {
    let lo = c / 12.92;
    let hi = pow((c + 0.055) / 1.055, vec3f(2.4));
    return select(hi, lo, c <= vec3f(0.04045));
}

// Linear [0,1] → sRGB-encoded, the exact piecewise IEC 61966-2-1 curve, per channel.
// Negative inputs are clamped to 0.
fn linear_to_srgb(c: vec3f) -> vec3f {
    let x = max(c, vec3f(0.0));
    let lo = x * 12.92;
    let hi = 1.055 * pow(x, vec3f(1.0 / 2.4)) - 0.055;
    return select(hi, lo, x <= vec3f(0.0031308));
}

// Sign that maps 0 to +1 (WGSL's `sign` maps 0 to 0, which breaks the octahedral fold).
fn sign_not_zero(v: vec2f) -> vec2f {
    return select(vec2f(-1.0), vec2f(1.0), v >= vec2f(0.0));
}

// Octahedral encoding of a unit vector `n` into [-1,1]² (Cigolle et al. 2014).
// Store as `e * 0.5 + 0.5` in unorm targets.
fn oct_encode(n: vec3f) -> vec2f {
    let p = n.xy / (abs(n.x) + abs(n.y) + abs(n.z));
    if n.z >= 0.0 {
        return p;
    }
    return (vec2f(1.0) - abs(p.yx)) * sign_not_zero(p);
}

// Inverse of `oct_encode`: [-1,1]² → unit vector.
fn oct_decode(e: vec2f) -> vec3f {
    var n = vec3f(e.x, e.y, 1.0 - abs(e.x) - abs(e.y));
    let t = max(-n.z, 0.0);
    n.x += select(t, -t, n.x >= 0.0);
    n.y += select(t, -t, n.y >= 0.0);
    return normalize(n);
}
