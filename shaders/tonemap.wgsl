// Tonemap pass: exposure and the ACES fit (Narkowicz 2015) for the final image, or one of
// the AOV views. The output may be larger than the internal targets (render scale < 1):
// each output pixel reads the internal pixel under it (nearest). `tonemapped` gives the
// linear value; data AOVs (normal, roughness, metallic, occlusion, material id) are
// pre-linearised so the stored 8-bit value equals the data value. Two entry points over
// it: `fs_main` into an sRGB render target (the hardware encodes), and `encode`, one
// compute thread per output pixel into an Rgba8Unorm storage texture, encoding in the
// shader with the thresholds of texture::srgb::SrgbEncoder (the same codes as the CPU
// encoder, bit for bit).

#import "common/math.wgsl"
#import "common/frame.wgsl"
#import "common/fullscreen.wgsl"

@group(0) @binding(0) var<uniform> frame: Frame;
@group(0) @binding(1) var hdr_tex: texture_2d<f32>;
@group(0) @binding(2) var mat_base_color: texture_2d<f32>;
@group(0) @binding(3) var mat_normal_rm: texture_2d<f32>;
@group(0) @binding(4) var mat_emissive_ao: texture_2d<f32>;
@group(0) @binding(5) var gb_material: texture_2d<u32>;
// The compute entry's output and the encoder's 255 thresholds (`thresholds[i]`: the linear
// value halfway between codes i and i + 1), in 64 vec4s (the last lane unused).
@group(0) @binding(6) var out_tex: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(7) var<uniform> thresholds: array<vec4f, 64>;

@vertex
fn vs_main(@builtin(vertex_index) vi: u32) -> FullscreenOut {
    return fullscreen_vertex(vi, 0.0);
}

fn aces_fitted(x: vec3f) -> vec3f {
    return clamp((x * (2.51 * x + 0.03)) / (x * (2.43 * x + 0.59) + 0.14), vec3f(0.0), vec3f(1.0));
}

// A distinct colour per id: golden-ratio hue steps, full saturation, two brightness levels.
fn id_color(id: u32) -> vec3f {
    let h = fract(f32(id) * 0.6180339887);
    let k = (vec3f(0.0, 2.0, 4.0) / 6.0 + h) * 6.0;
    let rgb = clamp(abs(fract(k / 6.0) * 6.0 - 3.0) - 1.0, vec3f(0.0), vec3f(1.0));
    return rgb * select(1.0, 0.6, (id & 1u) == 1u);
}

// A data value v in [0,1]^3 to store exactly into the sRGB target.
fn data(v: vec3f) -> vec4f {
    return vec4f(srgb_to_linear(clamp(v, vec3f(0.0), vec3f(1.0))), 1.0);
}

// The linear value of the output pixel at screen UV `uv`.
fn tonemapped(uv: vec2f) -> vec4f {
    let p = vec2i(uv * vec2f(textureDimensions(hdr_tex)));
    let word = textureLoad(gb_material, p, 0).x;
    let covered = word != NO_MATERIAL;
    switch frame.aov {
        case AOV_ALBEDO: {
            return vec4f(select(vec3f(0.0), textureLoad(mat_base_color, p, 0).rgb, covered), 1.0);
        }
        case AOV_NORMAL: {
            let n = oct_decode(textureLoad(mat_normal_rm, p, 0).xy);
            return data(select(vec3f(0.0), n * 0.5 + 0.5, covered));
        }
        case AOV_ROUGHNESS: {
            return data(vec3f(select(0.0, textureLoad(mat_normal_rm, p, 0).z, covered)));
        }
        case AOV_METALLIC: {
            return data(vec3f(select(0.0, textureLoad(mat_normal_rm, p, 0).w, covered)));
        }
        case AOV_OCCLUSION: {
            return data(vec3f(select(0.0, textureLoad(mat_emissive_ao, p, 0).w, covered)));
        }
        case AOV_EMISSIVE: {
            return vec4f(select(vec3f(0.0), textureLoad(mat_emissive_ao, p, 0).rgb, covered), 1.0);
        }
        case AOV_MATERIAL_ID: {
            return data(select(vec3f(0.0), id_color(word & MATERIAL_ID_MASK), covered));
        }
        default: {
            let hdr = textureLoad(hdr_tex, p, 0).rgb * frame.exposure;
            return vec4f(aces_fitted(hdr), 1.0);
        }
    }
}

@fragment
fn fs_main(in: FullscreenOut) -> @location(0) vec4f {
    return tonemapped(in.uv);
}

fn threshold(i: u32) -> f32 {
    return thresholds[i / 4u][i % 4u];
}

// The 8-bit sRGB code of `linear`: the number of thresholds below it (binary search; NaN
// is below none).
fn encode_channel(linear: f32) -> f32 {
    var lo = 0u;
    var hi = 255u;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if threshold(mid) < linear {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return f32(lo) / 255.0;
}

@compute @workgroup_size(8, 8)
fn encode(@builtin(global_invocation_id) gid: vec3u) {
    let size = textureDimensions(out_tex);
    if any(gid.xy >= size) {
        return;
    }
    let c = tonemapped((vec2f(gid.xy) + 0.5) / vec2f(size));
    let srgb = vec4f(encode_channel(c.r), encode_channel(c.g), encode_channel(c.b), c.a);
    textureStore(out_tex, vec2i(gid.xy), srgb);
}
