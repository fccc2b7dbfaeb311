// defines: NTC_KERNEL_F32, NTC_THREADS=64, NTC_LEAKY_SLOPE=0.01, NTC_HIDDEN_2=0, NTC_HIDDEN_3=0, NTC_PE_WAVES=3
// variants: - | NTC_LEAKY_RELU
// variants: NTC_FEATURES=16, NTC_LATENT_BITS=4, NTC_INPUT_WIDTH=48, NTC_LAYERS=3, NTC_HIDDEN_0=64, NTC_HIDDEN_1=64, NTC_PARAMS=8336 | NTC_FEATURES=8, NTC_LATENT_BITS=2, NTC_INPUT_WIDTH=32, NTC_LAYERS=2, NTC_HIDDEN_0=32, NTC_HIDDEN_1=0, NTC_PARAMS=1584
//
// Inference on load: decodes every texel of one colour mip of one package material into
// the three RGBA8 channel-group textures the reference path samples (scene_gpu's
// layout: group 0 base colour + alpha, sRGB-encoded values written to a linear view of an
// sRGB-viewed texture; group 1 normal X/Y, occlusion, roughness; group 2 metallic,
// emissive sRGB-encoded). One dispatch per (material, mip), 8 × 8 texels per workgroup,
// the same input vector and MLP as the real-time pass (common/ntc_decode.wgsl, f32
// kernel); outputs clamped to [0, 1] and absent channels neutral, as the original set
// holds them. A group none of whose channels the material has is not written: its
// binding is a stand-in, and the set samples a neutral texture instead.

#import "common/ntc_decode.wgsl"

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

@compute @workgroup_size(8, 8)
fn bake_mip(@builtin(global_invocation_id) id: vec3u, @builtin(local_invocation_index) li: u32) {
    let mip = ntc_mips[bake.mip];
    let inside = id.x < mip.width && id.y < mip.height;
    ntc_load_decoder(bake.decoder, li);
    workgroupBarrier();
    if inside {
        ntc_build_input(mip, id.xy);
    }
    ntc_evaluate(inside, NtcThread(li, 0u, 1u));
    if inside {
        if (bake.present & 0xFu) != 0u {
            textureStore(out_group0, id.xy, ntc_channel_group(0u, bake.present));
        }
        if (bake.present & 0xF0u) != 0u {
            textureStore(out_group1, id.xy, ntc_channel_group(1u, bake.present));
        }
        if (bake.present & 0xF00u) != 0u {
            textureStore(out_group2, id.xy, ntc_channel_group(2u, bake.present));
        }
    }
}
