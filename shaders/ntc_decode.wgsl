// defines: TILE_W=8, TILE_H=8, NTC_THREADS=64, NTC_LEAKY_SLOPE=0.01, NTC_HIDDEN_2=0, NTC_HIDDEN_3=0, NTC_PE_WAVES=3
// variants: NTC_KERNEL_F32 | NTC_KERNEL_F16, NTC_F16 | NTC_KERNEL_COOP, NTC_F16
// variants: - | NTC_LEAKY_RELU
// variants: TILE_W=8, TILE_H=8, NTC_THREADS=64 | TILE_W=16, TILE_H=16, NTC_THREADS=256
// variants: NTC_FEATURES=16, NTC_LATENT_BITS=4, NTC_INPUT_WIDTH=48, NTC_LAYERS=3, NTC_HIDDEN_0=64, NTC_HIDDEN_1=64, NTC_PARAMS=8336 | NTC_FEATURES=8, NTC_LATENT_BITS=8, NTC_INPUT_WIDTH=32, NTC_LAYERS=2, NTC_HIDDEN_0=32, NTC_HIDDEN_1=0, NTC_PARAMS=1584
//
// Real-time NTC decode: after the G-buffer, one workgroup per TILE_W × TILE_H screen tile,
// one thread per pixel, writing the same material targets as the reference pass
// (reference.wgsl). Per pixel:
// 1. the mip and texel from the G-buffer's UV derivatives: lod = log2 of the longer
//    screen step in mip-0 texels (+ bias), clamped to [0, mips − 1]; stochastic:
//    mip ⌊lod⌋ + (ξ0 < frac(lod)) and texel ⌊uv · size − ½ + (ξ1, ξ2)⌋ (stochastic
//    trilinear, ξk = blue_noise(…, k)); otherwise mip round(lod) and the nearest texel
//    ⌊uv · size⌋; wrap addressing;
// 2. the decoder's input vector for exactly that texel (common/ntc_decode.wgsl);
// 3. the distinct decoders of the tile, smallest index first (the classify loop of
//    material_classify.wgsl): per decoder, the workgroup copies its weights into
//    workgroup memory and the pixels using it run the MLP;
// 4. outputs clamped to [0, 1], absent channels neutral, then the reference pass's
//    transforms (sRGB decode, factors, tangent-space normal → octahedral world normal,
//    occlusion strength). Materials without an NTC set use the neutral values × factors
//    (the reference path samples the neutral texture set for them); pixels without
//    geometry get 0, as the reference pass's clear.

#import "common/math.wgsl"
#import "common/frame.wgsl"
#import "common/material.wgsl"
#import "common/blue_noise.wgsl"
#import "common/ntc_decode.wgsl"

// The pass's settings (render::passes::ntc_decode::DecodeParams).
struct DecodeParams {
    // DECODE_* flags.
    flags: u32,
    // Added to every pixel's LOD before clamping (mips; negative = sharper).
    lod_bias: f32,
    _pad0: u32,
    _pad1: u32,
}

// Stochastic mip and texel choice (otherwise the nearest mip and texel).
const DECODE_STOCHASTIC: u32 = 1u;

@group(0) @binding(0) var<uniform> frame: Frame;
@group(0) @binding(1) var<storage, read> materials: array<MaterialData>;
@group(0) @binding(2) var gb_normal_tangent: texture_2d<f32>;
@group(0) @binding(3) var gb_uv: texture_2d<f32>;
@group(0) @binding(4) var gb_uv_grad: texture_2d<f32>;
@group(0) @binding(5) var gb_material: texture_2d<u32>;
@group(0) @binding(6) var blue_noise_tex: texture_2d<f32>;
@group(0) @binding(7) var<uniform> params: DecodeParams;
// The material targets (MaterialOut in reference.wgsl).
@group(0) @binding(8) var out_base_color: texture_storage_2d<rgba16float, write>;
@group(0) @binding(9) var out_normal_rm: texture_storage_2d<rgba16float, write>;
@group(0) @binding(10) var out_emissive_ao: texture_storage_2d<rgba16float, write>;

var<workgroup> wg_candidate: atomic<u32>;
var<workgroup> wg_current: u32;

// The mip and texel a pixel decodes (render::ntc_gpu::choose_texel).
struct TexelChoice {
    mip: u32,
    texel: vec2u,
}

fn wrap(c: f32, n: u32) -> u32 {
    let size = i32(n);
    return u32((i32(c) % size + size) % size);
}

fn choose_texel(m: NtcMaterial, pixel: vec2u, uv: vec2f, grad: vec4f) -> TexelChoice {
    let size0 = vec2f(f32(m.width), f32(m.height));
    let footprint = max(length(grad.xy * size0), length(grad.zw * size0));
    let last = f32(m.mips - 1u);
    var lod = log2(footprint) + params.lod_bias;
    // A zero footprint gives −∞ (clamped to 0); NaN derivatives give mip 0.
    lod = select(0.0, clamp(lod, 0.0, last), lod == lod);
    var choice: TexelChoice;
    if (params.flags & DECODE_STOCHASTIC) != 0u {
        let xi = vec3f(
            blue_noise(blue_noise_tex, pixel, frame.frame_index, 0u),
            blue_noise(blue_noise_tex, pixel, frame.frame_index, 1u),
            blue_noise(blue_noise_tex, pixel, frame.frame_index, 2u),
        );
        let base = floor(lod);
        choice.mip = min(u32(base) + select(0u, 1u, xi.x < lod - base), m.mips - 1u);
        let mip = ntc_mips[m.mip_base + choice.mip];
        let c = floor(uv * vec2f(f32(mip.width), f32(mip.height)) - 0.5 + xi.yz);
        choice.texel = vec2u(wrap(c.x, mip.width), wrap(c.y, mip.height));
    } else {
        choice.mip = min(u32(round(lod)), m.mips - 1u);
        let mip = ntc_mips[m.mip_base + choice.mip];
        let c = floor(uv * vec2f(f32(mip.width), f32(mip.height)));
        choice.texel = vec2u(wrap(c.x, mip.width), wrap(c.y, mip.height));
    }
    return choice;
}

// One-dimensional (TILE_W · TILE_H threads, pixel (li % TILE_W, li / TILE_W) of the tile:
// the same order as a (TILE_W, TILE_H) workgroup's local_invocation_index), because naga
// allows `subgroup_id` only in one-dimensional workgroups.
@compute @workgroup_size(${TILE_W} * ${TILE_H})
fn decode(
    @builtin(workgroup_id) tile: vec3u,
    @builtin(local_invocation_index) li: u32,
#ifdef NTC_KERNEL_COOP
    @builtin(subgroup_id) subgroup: u32,
    @builtin(num_subgroups) subgroups: u32,
#endif
) {
#ifdef NTC_KERNEL_COOP
    let thread = NtcThread(li, subgroup, subgroups);
#else
    let thread = NtcThread(li, 0u, 1u);
#endif
    let pixel = tile.xy * vec2u(${TILE_W}u, ${TILE_H}u) + vec2u(li % ${TILE_W}u, li / ${TILE_W}u);
    let size = textureDimensions(gb_material);
    let inside = all(pixel < size);
    var word = NO_MATERIAL;
    if inside {
        word = textureLoad(gb_material, vec2i(pixel), 0).x;
    }
    let id = word & MATERIAL_ID_MASK;
    let has_material = word != NO_MATERIAL && id < arrayLength(&ntc_materials) && id < arrayLength(&materials);
    var entry: NtcMaterial;
    var decoder = NTC_NONE;
    if has_material {
        entry = ntc_materials[id];
        decoder = entry.decoder;
        if decoder != NTC_NONE {
            let uv = textureLoad(gb_uv, vec2i(pixel), 0).xy;
            let grad = textureLoad(gb_uv_grad, vec2i(pixel), 0);
            let choice = choose_texel(entry, pixel, uv, grad);
            ntc_build_input(ntc_mips[entry.mip_base + choice.mip], choice.texel);
        }
    }

    // One iteration per distinct decoder of the tile, smallest index first.
    var pending = decoder != NTC_NONE;
    loop {
        if li == 0u {
            atomicStore(&wg_candidate, NTC_NONE);
        }
        workgroupBarrier();
        if pending {
            atomicMin(&wg_candidate, decoder);
        }
        workgroupBarrier();
        if li == 0u {
            wg_current = atomicLoad(&wg_candidate);
        }
        let current = workgroupUniformLoad(&wg_current);
        if current == NTC_NONE {
            break;
        }
        ntc_load_decoder(current, li);
        workgroupBarrier();
        let mine = pending && decoder == current;
        ntc_evaluate(mine, thread);
        if mine {
            pending = false;
        }
        workgroupBarrier();
    }

    if !inside {
        return;
    }
    if !has_material {
        textureStore(out_base_color, pixel, vec4f(0.0));
        textureStore(out_normal_rm, pixel, vec4f(0.0));
        textureStore(out_emissive_ao, pixel, vec4f(0.0));
        return;
    }
    var c0 = NTC_NEUTRAL[0];
    var c1 = NTC_NEUTRAL[1];
    var c2 = NTC_NEUTRAL[2];
    if decoder != NTC_NONE {
        c0 = ntc_channel_group(0u, entry.present);
        c1 = ntc_channel_group(1u, entry.present);
        c2 = ntc_channel_group(2u, entry.present);
    }
    let m = materials[id];
    let nt = textureLoad(gb_normal_tangent, vec2i(pixel), 0);
    let n = shading_normal(word, nt, c1.xy, m.normal_scale);
    let occlusion = mix(1.0, c1.z, m.occlusion_strength);
    textureStore(out_base_color, pixel, vec4f(srgb_to_linear(c0.rgb), c0.a) * m.base_color_factor);
    textureStore(out_normal_rm, pixel, vec4f(oct_encode(n), c1.w * m.roughness_factor, c2.x * m.metallic_factor));
    textureStore(out_emissive_ao, pixel, vec4f(srgb_to_linear(c2.yzw) * m.emissive_factor.rgb, occlusion));
}
