// Image error (render::passes::image_error; the CPU reference is
// render::passes::image_error::reference_error, which defines every number written here).
//
// Compares images `a` and `b` (same size) at every pixel with geometry (G-buffer material
// word ≠ NO_MATERIAL):
//   e = mean over R, G, B of (a − b)², both clamped to [0, 1] first,
// after re-encoding both with the sRGB curve when `params.srgb_encode` is 1 (linear colour
// compared in display encoding, as texture::metrics does). Pixels without geometry get
// e = 0 and do not count.
//
// Writes e to `error_out` (R32Float, for the heatmap) and, per 16×16 workgroup, the f32
// sum of e (a tree reduction in workgroup memory, fixed order) and the number of pixels
// counted to `partials[workgroup]`; the host sums the partials in f64.

#import "common/math.wgsl"
#import "common/frame.wgsl"

const GROUP_W: u32 = 16u;
const GROUP_PIXELS: u32 = 256u;

// Mirrored by render::passes::image_error::ImageErrorUniform.
struct Params {
    // 1: compare sRGB-encoded values of linear inputs; 0: compare values as loaded.
    srgb_encode: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// One workgroup's share (render::passes::image_error reads these).
struct Partial {
    // Sum of e over the workgroup's pixels with geometry.
    squared_error: f32,
    // Number of those pixels.
    pixels: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var image_a: texture_2d<f32>;
@group(0) @binding(2) var image_b: texture_2d<f32>;
@group(0) @binding(3) var material_word: texture_2d<u32>;
@group(0) @binding(4) var error_out: texture_storage_2d<r32float, write>;
@group(0) @binding(5) var<storage, read_write> partials: array<Partial>;

var<workgroup> wg_error: array<f32, GROUP_PIXELS>;
var<workgroup> wg_pixels: array<u32, GROUP_PIXELS>;

// The compared colour of a loaded texel.
fn compared(texel: vec4f) -> vec3f {
    let c = clamp(texel.rgb, vec3f(0.0), vec3f(1.0));
    return select(c, linear_to_srgb(c), params.srgb_encode != 0u);
}

@compute @workgroup_size(GROUP_W, GROUP_W)
fn measure(
    @builtin(global_invocation_id) gid: vec3u,
    @builtin(workgroup_id) group: vec3u,
    @builtin(num_workgroups) groups: vec3u,
    @builtin(local_invocation_index) li: u32,
) {
    var error = 0.0;
    var counted = 0u;
    if all(gid.xy < textureDimensions(image_a)) {
        let p = vec2i(gid.xy);
        if textureLoad(material_word, p, 0).x != NO_MATERIAL {
            let d = compared(textureLoad(image_a, p, 0)) - compared(textureLoad(image_b, p, 0));
            error = dot(d, d) / 3.0;
            counted = 1u;
        }
        textureStore(error_out, p, vec4f(error, 0.0, 0.0, 1.0));
    }
    wg_error[li] = error;
    wg_pixels[li] = counted;
    workgroupBarrier();
    for (var stride = GROUP_PIXELS / 2u; stride > 0u; stride /= 2u) {
        if li < stride {
            wg_error[li] += wg_error[li + stride];
            wg_pixels[li] += wg_pixels[li + stride];
        }
        workgroupBarrier();
    }
    if li == 0u {
        partials[group.y * groups.x + group.x] = Partial(wg_error[0], wg_pixels[0]);
    }
}
