// variants: - | SOURCE_ERROR
//
// Heatmap overlay (render::passes::heatmap), drawn over the already tonemapped output
// with alpha blending: every pixel with geometry is tinted by a scalar through the viridis
// colour map over [lo, hi] at `opacity`; pixels without geometry are left untouched. A
// vertical colour bar (hi at the top, lo at the bottom, 1-pixel black frame) is drawn
// opaque inside `bar`, over everything.
//
// The scalar is, by default, one count of the divergence pass's tile texture (channel
// 0 materials, 1 decoders, 2 baseline decoders) of the tile under the pixel; with
// SOURCE_ERROR it is the image-error pass's per-pixel R32Float error.
//
// Like the tonemap pass, each output pixel reads the internal pixel under it (nearest),
// so the output may be larger than the internal targets.

#import "common/math.wgsl"
#import "common/frame.wgsl"
#import "common/fullscreen.wgsl"

// Mirrored by render::passes::heatmap::HeatmapUniform.
struct Heatmap {
    // Value shown with the first colour of the map.
    lo: f32,
    // 1 / (hi − lo): hi gets the last colour; values outside [lo, hi] are clamped.
    inv_range: f32,
    // Alpha of the tint over the image (0 = invisible, 1 = opaque).
    opacity: f32,
    // 1 when the output is an sRGB format (write linear, the hardware encodes), else 0.
    srgb_output: u32,
    // Colour bar rectangle in output pixels: x, y (top-left), width, height; width 0 = none.
    bar: vec4u,
    // Tile width and height in pixels (tile sources; 1 otherwise).
    tile_size: vec2u,
    // Channel of the tile texture shown (tile sources).
    channel: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> heatmap: Heatmap;
@group(0) @binding(1) var material_word: texture_2d<u32>;
#ifdef SOURCE_ERROR
@group(0) @binding(2) var source: texture_2d<f32>;
#else
@group(0) @binding(2) var source: texture_2d<u32>;
#endif

@vertex
fn vs_main(@builtin(vertex_index) vi: u32) -> FullscreenOut {
    return fullscreen_vertex(vi, 0.0);
}

// The scalar at internal pixel `p`.
fn value_at(p: vec2i) -> f32 {
#ifdef SOURCE_ERROR
    return textureLoad(source, p, 0).x;
#else
    let counts = textureLoad(source, p / vec2i(heatmap.tile_size), 0);
    return f32(counts[min(heatmap.channel, 3u)]);
#endif
}

// Viridis, t in [0, 1] → sRGB-encoded colour: the degree-6 polynomial fit of
// matplotlib's map by Matt Zucker (shadertoy WlfXRN); the host's `colormap` mirrors it.
fn viridis(t: f32) -> vec3f {
    let c0 = vec3f(0.2777273272234177, 0.005407344544966578, 0.3340998053353061);
    let c1 = vec3f(0.1050930431085774, 1.404613529898575, 1.384590162594685);
    let c2 = vec3f(-0.3308618287255563, 0.214847559468213, 0.09509516302823659);
    let c3 = vec3f(-4.634230498983486, -5.799100973351585, -19.33244095627987);
    let c4 = vec3f(6.228269936347081, 14.17993336680509, 56.69055260068105);
    let c5 = vec3f(4.776384997670288, -13.74514537774601, -65.35303263337234);
    let c6 = vec3f(-5.435455855934631, 4.645852612178535, 26.3124352495832);
    let c = c0 + t * (c1 + t * (c2 + t * (c3 + t * (c4 + t * (c5 + t * c6)))));
    return clamp(c, vec3f(0.0), vec3f(1.0));
}

// An sRGB-encoded colour as the output expects it.
fn output_color(encoded: vec3f) -> vec3f {
    return select(encoded, srgb_to_linear(encoded), heatmap.srgb_output != 0u);
}

@fragment
fn fs_main(in: FullscreenOut) -> @location(0) vec4f {
    let q = in.position.xy;
    let bar_min = vec2f(heatmap.bar.xy);
    let bar_max = vec2f(heatmap.bar.xy + heatmap.bar.zw);
    if all(q >= bar_min) && all(q < bar_max) {
        let inner_min = bar_min + 1.0;
        let inner_max = bar_max - 1.0;
        if any(q < inner_min) || any(q >= inner_max) {
            return vec4f(0.0, 0.0, 0.0, 1.0);
        }
        let t = (inner_max.y - q.y) / (inner_max.y - inner_min.y);
        return vec4f(output_color(viridis(t)), 1.0);
    }
    let p = vec2i(in.uv * vec2f(textureDimensions(material_word)));
    if textureLoad(material_word, p, 0).x == NO_MATERIAL {
        discard;
    }
    let t = clamp((value_at(p) - heatmap.lo) * heatmap.inv_range, 0.0, 1.0);
    return vec4f(output_color(viridis(t)), heatmap.opacity);
}
