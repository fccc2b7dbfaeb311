// Temporal accumulation of the linear HDR radiance (render::passes::temporal; its CPU
// reference `TemporalReference` computes the same numbers per pixel, in the same order).
//
// Per pixel:
// 1. Reproject: the previous position is this pixel's centre plus the G-buffer motion
//    (screen UV → pixels); the f32 history is read there bilinearly (clamp-to-edge taps)
//    and rejected when that position lies off screen.
// 2. Clip, only where the pixel moved (|motion| > motion_threshold_px) or shows no surface
//    (depth 0: the G-buffer writes no motion there): in YCoCg, the history is pulled
//    towards the current 3×3 neighbourhood's mean until it lies in mean ± clip_gamma·σ.
//    A clip by more than hard_clip_ratio box half-widths discards the history. A static
//    pixel is never clipped, so stochastic noise averages to the exact mean.
// 3. Blend: n is the history's sample count (its alpha; 0 when rejected), the output is
//    mix(history, current, 1 / min(n + 1, max_frames)) with count min(n + 1, max_frames),
//    written to the next history (f32, so a running mean carries no f16 rounding) and to
//    the resolved output (f16).

// Mirrored by `TemporalParams` in src/render/passes/temporal.rs (a test checks the layout).
struct TemporalParams {
    // 1: blend with the history; 0: ignore it (reset, accumulation disabled, new targets).
    use_history: u32,
    // Cap of the sample count n (α never falls below 1 / max_frames); in [1, 2048].
    max_frames: f32,
    // Motion length in pixels above which a pixel counts as moved and its history is clipped.
    motion_threshold_px: f32,
    // Half-width of the clip box in standard deviations of the neighbourhood.
    clip_gamma: f32,
    // History further out than this many box half-widths (per YCoCg axis) is discarded.
    hard_clip_ratio: f32,
    // Smallest box half-width: min_extent_rel · (mean luminance) + min_extent_abs, so in a
    // flat neighbourhood the f16 rounding of the current frame is not taken for a change.
    min_extent_rel: f32,
    min_extent_abs: f32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: TemporalParams;
// This frame's linear HDR radiance.
@group(0) @binding(1) var current_tex: texture_2d<f32>;
// Last frame's accumulation (f32): radiance in rgb, sample count in a.
@group(0) @binding(2) var history_tex: texture_2d<f32>;
// G-buffer motion: screen-UV offset from this pixel to where its surface was last frame,
// two f16 in one word (pack2x16float).
@group(0) @binding(3) var motion_tex: texture_2d<u32>;
// G-buffer depth (reversed-Z: 0 where no surface was drawn).
@group(0) @binding(4) var depth_tex: texture_depth_2d;
// The output the tonemap pass reads: radiance in rgb, sample count in a.
@group(0) @binding(5) var resolved: texture_storage_2d<rgba16float, write>;
// This frame's accumulation, the next frame's history.
@group(0) @binding(6) var history_out: texture_storage_2d<rgba32float, write>;

fn rgb_to_ycocg(c: vec3f) -> vec3f {
    return vec3f(
        0.25 * c.r + 0.5 * c.g + 0.25 * c.b,
        0.5 * c.r - 0.5 * c.b,
        -0.25 * c.r + 0.5 * c.g - 0.25 * c.b,
    );
}

fn ycocg_to_rgb(c: vec3f) -> vec3f {
    return vec3f(c.x + c.y - c.z, c.x + c.z, c.x - c.y - c.z);
}

fn load_history(p: vec2i, size: vec2i) -> vec4f {
    return textureLoad(history_tex, clamp(p, vec2i(0), size - 1), 0);
}

// Bilinear history at `pos`, in pixels with texel centres at integers.
fn history_bilinear(pos: vec2f, size: vec2i) -> vec4f {
    let base = floor(pos);
    let f = pos - base;
    let i = vec2i(base);
    let top = mix(load_history(i, size), load_history(i + vec2i(1, 0), size), f.x);
    let bottom = mix(load_history(i + vec2i(0, 1), size), load_history(i + vec2i(1, 1), size), f.x);
    return mix(top, bottom, f.y);
}

// Clips `history` (RGB) into the current neighbourhood's YCoCg box around `p`; returns
// the clipped colour and the clip ratio (≤ 1: it was inside).
fn clip_history(history: vec3f, p: vec2i, size: vec2i) -> vec4f {
    var sum = vec3f(0.0);
    var sum_sq = vec3f(0.0);
    for (var dy = -1; dy <= 1; dy++) {
        for (var dx = -1; dx <= 1; dx++) {
            let q = clamp(p + vec2i(dx, dy), vec2i(0), size - 1);
            let c = rgb_to_ycocg(textureLoad(current_tex, q, 0).rgb);
            sum += c;
            sum_sq += c * c;
        }
    }
    let mean = sum / 9.0;
    let sigma = sqrt(max(sum_sq / 9.0 - mean * mean, vec3f(0.0)));
    let floor_extent = params.min_extent_rel * max(mean.x, 0.0) + params.min_extent_abs;
    let extent = max(params.clip_gamma * sigma, vec3f(floor_extent));
    let offset = rgb_to_ycocg(history) - mean;
    let axes = abs(offset) / extent;
    let ratio = max(axes.x, max(axes.y, axes.z));
    if ratio <= 1.0 {
        return vec4f(history, ratio);
    }
    return vec4f(ycocg_to_rgb(mean + offset / ratio), ratio);
}

@compute @workgroup_size(8, 8)
fn resolve(@builtin(global_invocation_id) gid: vec3u) {
    let size = vec2i(textureDimensions(current_tex));
    let p = vec2i(gid.xy);
    if any(p >= size) {
        return;
    }
    let current = textureLoad(current_tex, p, 0).rgb;
    var history = current;
    var count = 0.0;
    if params.use_history != 0u {
        let offset_px = unpack2x16float(textureLoad(motion_tex, p, 0).x) * vec2f(size);
        let pos = vec2f(p) + offset_px;
        let centre = pos + 0.5;
        if all(centre >= vec2f(0.0)) && all(centre <= vec2f(size)) {
            let h = history_bilinear(pos, size);
            history = h.rgb;
            count = h.a;
            let surface = textureLoad(depth_tex, p, 0) > 0.0;
            if length(offset_px) > params.motion_threshold_px || !surface {
                let clipped = clip_history(history, p, size);
                history = clipped.rgb;
                if clipped.a > params.hard_clip_ratio {
                    history = current;
                    count = 0.0;
                }
            }
        }
    }
    let n = min(count + 1.0, params.max_frames);
    let accumulated = vec4f(mix(history, current, 1.0 / n), n);
    textureStore(history_out, p, accumulated);
    textureStore(resolved, p, accumulated);
}
