// The per-pixel ends of the real-time NTC decode, shared by the per-tile decode
// (ntc_decode_tiles.wgsl) and the sorted decode (ntc_sort.wgsl, ntc_decode_runs.wgsl): the
// pass's group-0 bindings (render::passes::ntc_decode), what a pixel decodes (material,
// decoder), its mip and texel (render::ntc_gpu::choose_texel) and the material-target
// values written from its decoded channels (render::ntc_gpu::material_outputs).
//
// Group 0 (0–5 declared by common/material.wgsl, as in the reference pass):
//   0 frame uniform (common/frame.wgsl Frame: frame_index drives the blue noise)
//   1 the scene's MaterialData (factors)
//   2 G-buffer normal + tangent (Rgba16Float, octahedral), 3 UV (Rg32Float),
//   4 UV derivatives (Rgba16Float), 5 material word (R32Uint)
//   6 blue noise (64² R32Float, render::blue_noise)
//   7 DecodeParams uniform
//   8–10 the material targets (Rgba16Float storage, write): base colour, normal +
//        roughness + metallic, emissive + occlusion (MaterialOut in reference.wgsl)
//
// Stage cuts (`bench decode`'s stage costs; at most one, none in rendering): the decode
// kernels run a pixel's three stages only where NTC_DO_INPUT, NTC_DO_MLP, NTC_DO_OUTPUT
// say so. Every cut keeps the pixels' addressing (run slot, material word) and the
// decoder loop; a cut input leaves the inputs at zero or stale, a cut MLP hands the
// inputs' sum on as outputs (so the input stage is not optimised away), a cut output
// stage stores nothing unless the outputs hold NTC_NEVER (ntc_finish_pixel).
//   NTC_STAGE_INPUT   only texel choice, latent fetch, dequantisation, positional
//                     encoding and the features stored
//   NTC_STAGE_MLP     only the MLP
//   NTC_STAGE_OUTPUT  only the output stage (clamping, neutral channels, transforms,
//                     G-buffer reads and target writes)

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

#ifdef NTC_STAGE_INPUT
const NTC_DO_INPUT: bool = true;
const NTC_DO_MLP: bool = false;
const NTC_DO_OUTPUT: bool = false;
#else
#ifdef NTC_STAGE_MLP
const NTC_DO_INPUT: bool = false;
const NTC_DO_MLP: bool = true;
const NTC_DO_OUTPUT: bool = false;
#else
#ifdef NTC_STAGE_OUTPUT
const NTC_DO_INPUT: bool = false;
const NTC_DO_MLP: bool = false;
const NTC_DO_OUTPUT: bool = true;
#else
const NTC_DO_INPUT: bool = true;
const NTC_DO_MLP: bool = true;
const NTC_DO_OUTPUT: bool = true;
#endif
#endif
#endif
// A value no decoder output holds in practice: with the output stage cut, a pixel whose
// outputs equal it is still stored, so the compiler keeps what computed them.
const NTC_NEVER: f32 = -12345.678;

@group(0) @binding(6) var blue_noise_tex: texture_2d<f32>;
@group(0) @binding(7) var<uniform> params: DecodeParams;

// The mip and texel a pixel decodes (render::ntc_gpu::choose_texel).
struct TexelChoice {
    mip: u32,
    texel: vec2u,
}

// `sampling`: the material's MaterialData.sampling (render::ntc_gpu::choose_texel says
// what it changes).
fn choose_texel(m: NtcMaterial, sampling: u32, pixel: vec2u, uv: vec2f, grad: vec4f) -> TexelChoice {
    let size0 = vec2f(f32(m.width), f32(m.height));
    let footprint = max(length(grad.xy * size0), length(grad.zw * size0));
    let last = f32(m.mips - 1u);
    var lod = log2(footprint) + params.lod_bias;
    let magnified = !(lod > 0.0);
    let mipmap = (sampling >> 6u) & 3u;
    // A zero footprint gives −∞ (clamped to 0); NaN derivatives give mip 0.
    lod = select(0.0, clamp(lod, 0.0, last), lod == lod && mipmap != SAMPLING_MIPMAP_NONE);
    let nearest = select(SAMPLING_MIN_NEAREST, SAMPLING_MAG_NEAREST, magnified);
    let stochastic = (params.flags & DECODE_STOCHASTIC) != 0u;
    var xi = vec3f(0.0);
    if stochastic {
        xi = vec3f(
            blue_noise(blue_noise_tex, pixel, frame.frame_index, 0u),
            blue_noise(blue_noise_tex, pixel, frame.frame_index, 1u),
            blue_noise(blue_noise_tex, pixel, frame.frame_index, 2u),
        );
    }
    var choice: TexelChoice;
    if stochastic && mipmap == SAMPLING_MIPMAP_LINEAR {
        let base = floor(lod);
        choice.mip = min(u32(base) + select(0u, 1u, xi.x < lod - base), m.mips - 1u);
    } else {
        choice.mip = min(u32(round(lod)), m.mips - 1u);
    }
    let mip = ntc_mips[m.mip_base + choice.mip];
    var c = floor(uv * vec2f(f32(mip.width), f32(mip.height)));
    if stochastic && (sampling & nearest) == 0u {
        c = floor(uv * vec2f(f32(mip.width), f32(mip.height)) - 0.5 + xi.yz);
    }
    choice.texel = vec2u(
        wrap_texel(c.x, mip.width, sampling & 3u),
        wrap_texel(c.y, mip.height, (sampling >> 2u) & 3u),
    );
    return choice;
}

// What one pixel decodes.
struct NtcPixel {
    // The G-buffer's material word (NO_MATERIAL without geometry).
    word: u32,
    // Whether the word names a material of both tables.
    has_material: bool,
    // Its NTC entry (valid when has_material).
    entry: NtcMaterial,
    // Its decoder, or NTC_NONE (no material, or one without an NTC set).
    decoder: u32,
    // Its MaterialData.sampling (valid when has_material).
    sampling: u32,
}

// The material word and decoder of `pixel` (NO_MATERIAL outside the screen).
fn ntc_read_pixel(pixel: vec2u) -> NtcPixel {
    var p: NtcPixel;
    p.word = NO_MATERIAL;
    if all(pixel < textureDimensions(gb_material)) {
        p.word = textureLoad(gb_material, vec2i(pixel), 0).x;
    }
    let id = p.word & MATERIAL_ID_MASK;
    p.has_material = p.word != NO_MATERIAL && id < arrayLength(&ntc_materials) && id < arrayLength(&materials);
    p.decoder = NTC_NONE;
    if p.has_material {
        p.entry = ntc_materials[id];
        p.decoder = p.entry.decoder;
        p.sampling = materials[id].sampling;
    }
    return p;
}

// The mip (its table entry) and texel a pixel with a decoder decodes.
struct NtcPixelTexel {
    mip: NtcMip,
    texel: vec2u,
}

fn ntc_pixel_texel(p: NtcPixel, pixel: vec2u) -> NtcPixelTexel {
    let uv = textureLoad(gb_uv, vec2i(pixel), 0).xy;
    let grad = textureLoad(gb_uv_grad, vec2i(pixel), 0);
    let choice = choose_texel(p.entry, p.sampling, pixel, uv, grad);
    return NtcPixelTexel(ntc_mips[p.entry.mip_base + choice.mip], choice.texel);
}

// The decoder input of a pixel with a decoder: its mip and texel, then ntc_input.
fn ntc_pixel_input(p: NtcPixel, pixel: vec2u) -> array<vec4f, NTC_INPUT_WIDTH / 4u> {
    let t = ntc_pixel_texel(p, pixel);
    return ntc_input(t.mip, t.texel);
}

// Writes the material targets of an on-screen pixel from its decoder outputs `o0`..`o2`
// (channel groups 0–2; ignored for pixels without a decoder): outputs clamped, absent
// channels neutral (materials without an NTC set: all neutral) × factors, the reference
// pass's transforms; pixels without geometry get 0, as the reference pass's clear.
fn ntc_store_pixel(p: NtcPixel, pixel: vec2u, o0: vec4f, o1: vec4f, o2: vec4f) {
    if !p.has_material {
        textureStore(out_base_color, pixel, vec4f(0.0));
        textureStore(out_normal_rm, pixel, vec4f(0.0));
        textureStore(out_emissive_ao, pixel, vec4f(0.0));
        return;
    }
    var c0 = NTC_NEUTRAL[0];
    var c1 = NTC_NEUTRAL[1];
    var c2 = NTC_NEUTRAL[2];
    if p.decoder != NTC_NONE {
        c0 = ntc_finish_group(o0, 0u, p.entry.present);
        c1 = ntc_finish_group(o1, 1u, p.entry.present);
        c2 = ntc_finish_group(o2, 2u, p.entry.present);
    }
    let m = materials[p.word & MATERIAL_ID_MASK];
    let nt = textureLoad(gb_normal_tangent, vec2i(pixel), 0);
    let n = shading_normal(p.word, nt, c1.xy, m.normal_scale);
    let occlusion = mix(1.0, c1.z, m.occlusion_strength);
    textureStore(out_base_color, pixel, vec4f(srgb_to_linear(c0.rgb), c0.a) * m.base_color_factor);
    textureStore(out_normal_rm, pixel, vec4f(oct_encode(n), c1.w * m.roughness_factor, c2.x * m.metallic_factor));
    textureStore(out_emissive_ao, pixel, vec4f(srgb_to_linear(c2.yzw) * m.emissive_factor.rgb, occlusion));
}

// The output stage of a pixel (ntc_store_pixel), or with the stage cut a store only if
// the outputs hold NTC_NEVER.
fn ntc_finish_pixel(p: NtcPixel, pixel: vec2u, o0: vec4f, o1: vec4f, o2: vec4f) {
    if NTC_DO_OUTPUT {
        ntc_store_pixel(p, pixel, o0, o1, o2);
    } else if o0.x + o1.x + o2.x == NTC_NEVER {
        textureStore(out_base_color, pixel, o0 + o1 + o2);
    }
}
