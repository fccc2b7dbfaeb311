// variants: - | LINEAR_TARGET
//
// Split composition (render::passes::split; the CPU reference is
// render::passes::split::reference_compose, which defines every value written here).
//
// Two tonemapped frames of one view, `left` and `right` (Rgba8Unorm, holding sRGB-encoded
// bytes), are composed into the output: internal pixels left of column `divider` come from
// `left`, the others from `right`. With a `gain` above 0 the difference view replaces each
// side's colour by its error against the reference, amplified: the grey level
// clamp(sqrt(e) · gain, 0, 1), where e is that side's per-pixel image error (the mean over
// R, G, B of squared differences of sRGB-encoded values, render::passes::image_error), so
// sqrt(e) is the RMS difference in 8-bit steps / 255.
//
// Like the tonemap pass, each output pixel reads the internal pixel under it (nearest), so
// the output may be larger than the internal targets. The target is written as stored
// bytes: into a UNORM view the loaded bytes pass through exactly; with LINEAR_TARGET (an
// sRGB target, whose hardware encodes) the value is decoded to linear first.

#import "common/math.wgsl"
#import "common/fullscreen.wgsl"

// Mirrored by render::passes::split::SplitUniform.
struct Params {
    // First internal pixel column taken from `right`.
    divider: u32,
    // Difference view gain; 0 shows the images.
    gain: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var left: texture_2d<f32>;
@group(0) @binding(2) var right: texture_2d<f32>;
@group(0) @binding(3) var left_error: texture_2d<f32>;
@group(0) @binding(4) var right_error: texture_2d<f32>;

@vertex
fn vs_main(@builtin(vertex_index) vi: u32) -> FullscreenOut {
    return fullscreen_vertex(vi, 0.0);
}

@fragment
fn fs_main(in: FullscreenOut) -> @location(0) vec4f {
    let p = vec2i(in.uv * vec2f(textureDimensions(left)));
    let from_right = u32(p.x) >= params.divider;
    var c: vec3f;
    if params.gain > 0.0 {
        let e = select(textureLoad(left_error, p, 0).r, textureLoad(right_error, p, 0).r, from_right);
        c = vec3f(clamp(sqrt(max(e, 0.0)) * params.gain, 0.0, 1.0));
    } else {
        c = select(textureLoad(left, p, 0).rgb, textureLoad(right, p, 0).rgb, from_right);
    }
#ifdef LINEAR_TARGET
    c = srgb_to_linear(c);
#endif
    return vec4f(c, 1.0);
}
