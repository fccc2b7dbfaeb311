// defines: NTC_LEAKY_SLOPE=0.01, NTC_HIDDEN_2=0, NTC_HIDDEN_3=0, NTC_PE_WAVES=3
// variants: - | NTC_LEAKY_RELU
// variants: NTC_KERNEL_F32, NTC_BAKE_SIDE=8, NTC_THREADS=64 | NTC_KERNEL_FMA, NTC_F16, NTC_FMA_PIXELS=1, NTC_BAKE_SIDE=16, NTC_THREADS=256
// variants: NTC_FEATURES=16, NTC_LATENT_BITS=4, NTC_INPUT_WIDTH=48, NTC_LAYERS=3, NTC_HIDDEN_0=64, NTC_HIDDEN_1=64, NTC_PARAMS=8336, NTC_WIDEST=64 | NTC_FEATURES=8, NTC_LATENT_BITS=2, NTC_INPUT_WIDTH=32, NTC_LAYERS=2, NTC_HIDDEN_0=32, NTC_HIDDEN_1=0, NTC_PARAMS=1584, NTC_WIDEST=32
//
// Inference on load: decodes every texel of one colour mip of one package material into
// the three RGBA8 channel-group textures the reference path samples (scene_gpu's
// layout: group 0 base colour + alpha, sRGB-encoded values written to a linear view of an
// sRGB-viewed texture; group 1 normal X/Y, occlusion, roughness; group 2 metallic,
// emissive sRGB-encoded). One dispatch per (material, mip), NTC_BAKE_SIDE² texels per
// workgroup, the same input vector as the real-time pass (common/ntc_decode.wgsl);
// outputs clamped to [0, 1] and absent channels neutral, as the original set holds them.
// A group none of whose channels the material has is not written: its binding is a
// stand-in, and the set samples a neutral texture instead.
//
// Kernels (one of):
//   NTC_KERNEL_F32  the f32 evaluation of common/ntc_decode.wgsl (8 × 8 texels): the CPU
//                   decode to within one 8-bit step
//   NTC_KERNEL_FMA  the real-time sorted decode's f16 FMA evaluation
//                   (common/ntc_fma.wgsl, 16 × 16 texels, one texel per thread), whose
//                   error bound it shares; every workgroup has one decoder, as a run does

#import "common/ntc_decode.wgsl"
#ifdef NTC_KERNEL_FMA
#import "common/ntc_fma.wgsl"
#endif

// One dispatch (render::passes::ntc_bake::BakeParams).
struct BakeParams {
    // Entry of `ntc_mips` to decode.
    mip: u32,
    // The material's decoder.
    decoder: u32,
    // The material's channel mask.
    present: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> bake: BakeParams;
@group(0) @binding(1) var out_group0: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(2) var out_group1: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(3) var out_group2: texture_storage_2d<rgba8unorm, write>;

// Writes a decoded texel's channel groups (ntc_finish_group of `outputs`), skipping the
// groups the material has none of.
fn bake_store(texel: vec2u, o0: vec4f, o1: vec4f, o2: vec4f) {
    if (bake.present & 0xFu) != 0u {
        textureStore(out_group0, texel, ntc_finish_group(o0, 0u, bake.present));
    }
    if (bake.present & 0xF0u) != 0u {
        textureStore(out_group1, texel, ntc_finish_group(o1, 1u, bake.present));
    }
    if (bake.present & 0xF00u) != 0u {
        textureStore(out_group2, texel, ntc_finish_group(o2, 2u, bake.present));
    }
}

@compute @workgroup_size(${NTC_BAKE_SIDE}, ${NTC_BAKE_SIDE})
fn bake_mip(@builtin(global_invocation_id) id: vec3u, @builtin(local_invocation_index) li: u32) {
    let mip = ntc_mips[bake.mip];
    let inside = id.x < mip.width && id.y < mip.height;
#ifdef NTC_KERNEL_FMA
    ntc_fma_load(bake.decoder, li, NTC_THREADS);
    var values: NtcFmaBatch;
    if inside {
        let x = ntc_input(mip, id.xy);
        values[0] = ntc_fma_values(x);
    }
    workgroupBarrier();
    let outputs = ntc_fma_forward(&values);
    if inside {
        let o = outputs[0];
        bake_store(id.xy, o[0], o[1], o[2]);
    }
#else
    ntc_load_decoder(bake.decoder, li);
    workgroupBarrier();
    if inside {
        ntc_build_input(mip, id.xy);
    }
    ntc_evaluate(inside, NtcThread(li, 0u, 1u));
    if inside {
        let o = ntc_state.outputs;
        bake_store(id.xy, vec4f(o[0]), vec4f(o[1]), vec4f(o[2]));
    }
#endif
}
