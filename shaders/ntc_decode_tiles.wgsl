// defines: TILE_W=8, TILE_H=8, NTC_THREADS=64, NTC_LEAKY_SLOPE=0.01, NTC_HIDDEN_2=0, NTC_HIDDEN_3=0, NTC_PE_WAVES=3
// variants: NTC_KERNEL_F32 | NTC_KERNEL_F16, NTC_F16 | NTC_KERNEL_COOP, NTC_F16 | NTC_KERNEL_FMA, NTC_F16, NTC_FMA_PIXELS=1 | NTC_KERNEL_MMA, NTC_F16 | NTC_KERNEL_MMA, NTC_F16, NTC_DECODERS_F16, NTC_COOP_STORAGE | NTC_KERNEL_MMA, NTC_F16, NTC_DECODERS_F16, NTC_COOP_STORAGE, NTC_COOP_CHAIN
// variants: - | NTC_LEAKY_RELU
// variants: - | NTC_STAGE_INPUT | NTC_STAGE_MLP | NTC_STAGE_OUTPUT
// variants: TILE_W=8, TILE_H=8, NTC_THREADS=64 | TILE_W=16, TILE_H=16, NTC_THREADS=256
// variants: NTC_FEATURES=16, NTC_LATENT_BITS=4, NTC_INPUT_WIDTH=48, NTC_LAYERS=3, NTC_HIDDEN_0=64, NTC_HIDDEN_1=64, NTC_PARAMS=8336, NTC_WIDEST=64 | NTC_FEATURES=8, NTC_LATENT_BITS=8, NTC_INPUT_WIDTH=32, NTC_LAYERS=2, NTC_HIDDEN_0=32, NTC_HIDDEN_1=0, NTC_PARAMS=1584, NTC_WIDEST=32
//
// Real-time NTC decode: after the G-buffer, one workgroup per TILE_W × TILE_H screen tile,
// one thread per pixel, writing the same material targets as the reference pass
// (reference.wgsl). Per pixel:
// 1. the mip and texel from the G-buffer's UV derivatives: lod = log2 of the longer
//    screen step in mip-0 texels (+ bias), clamped to [0, mips − 1]; stochastic:
//    mip ⌊lod⌋ + (ξ0 < frac(lod)) and texel ⌊uv · size − ½ + (ξ1, ξ2)⌋ (stochastic
//    trilinear, ξk = blue_noise(…, k)); otherwise mip round(lod) and the nearest texel
//    ⌊uv · size⌋; each as the material's sampling allows, each axis addressed with
//    its wrapping (choose_texel of common/ntc_pixel.wgsl);
// 2. the decoder's input vector for exactly that texel (common/ntc_decode.wgsl);
// 3. the distinct decoders of the tile, smallest index first (common/tile_loop.wgsl, as
//    material_classify.wgsl loops over materials): per decoder, the workgroup copies its
//    weights into workgroup memory (or points at them) and the pixels using it run the MLP;
// 4. outputs clamped to [0, 1], absent channels neutral, then the reference pass's
//    transforms (sRGB decode, factors, tangent-space normal → octahedral world normal,
//    occlusion strength). Materials without an NTC set use the neutral values × factors
//    (the reference path samples the neutral texture set for them); pixels without
//    geometry get 0, as the reference pass's clear (common/ntc_pixel.wgsl).
//
// Kernels (one of):
//   NTC_KERNEL_F32, NTC_KERNEL_F16, NTC_KERNEL_COOP  common/ntc_decode.wgsl's `ntc_evaluate`
//   NTC_KERNEL_FMA  common/ntc_fma.wgsl, one pixel per thread, weights from workgroup
//                   memory
//   NTC_KERNEL_MMA  common/ntc_coop.wgsl: the current decoder's pixels compacted into the
//                   rows of the subgroups' slices (32 per subgroup of 32), f16 staging;
//                   weights in workgroup memory or (NTC_COOP_STORAGE) the decoder buffer.
//                   Needs subgroups of 32 and hidden widths that are multiples of 16.
//                   With NTC_COOP_CHAIN the layers are separated by subgroup barriers
//                   only (one barrier across the workgroup per decoder of the tile).
//
// Bindings: group 0 as common/ntc_pixel.wgsl, group 1 as common/ntc_decode.wgsl.

#import "common/ntc_pixel.wgsl"
#import "common/tile_loop.wgsl"
#ifdef NTC_KERNEL_FMA
#import "common/ntc_fma.wgsl"
#endif
#ifdef NTC_KERNEL_MMA
enable wgpu_cooperative_matrix;
#import "common/ntc_coop.wgsl"
#endif

#ifdef NTC_KERNEL_MMA
var<workgroup> wg_rows: atomic<u32>;
#endif

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
#ifdef NTC_KERNEL_MMA
    coop: NtcCoopIds,
#endif
) {
#ifdef NTC_KERNEL_COOP
    let thread = NtcThread(li, subgroup, subgroups);
#else
    let thread = NtcThread(li, 0u, 1u);
#endif
    let pixel = tile.xy * vec2u(${TILE_W}u, ${TILE_H}u) + vec2u(li % ${TILE_W}u, li / ${TILE_W}u);
    let inside = all(pixel < textureDimensions(gb_material));
    let p = ntc_read_pixel(pixel);
    var outputs: array<vec4f, 4>;
#ifdef NTC_KERNEL_FMA
    var batch: NtcFmaBatch;
    if NTC_DO_INPUT && p.decoder != NTC_NONE {
        batch[0] = ntc_fma_values(ntc_pixel_input(p, pixel));
    }
#else
#ifdef NTC_KERNEL_MMA
    var texel: NtcPixelTexel;
    if NTC_DO_INPUT && p.decoder != NTC_NONE {
        texel = ntc_pixel_texel(p, pixel);
    }
#else
    if NTC_DO_INPUT && p.decoder != NTC_NONE {
        let uv = textureLoad(gb_uv, vec2i(pixel), 0).xy;
        let grad = textureLoad(gb_uv_grad, vec2i(pixel), 0);
        let choice = choose_texel(p.entry, p.sampling, pixel, uv, grad);
        ntc_build_input(ntc_mips[p.entry.mip_base + choice.mip], choice.texel);
    }
#endif
#endif

    // One iteration per distinct decoder of the tile, smallest index first.
    var pending = p.decoder != NTC_NONE;
    loop {
#ifdef NTC_KERNEL_MMA
        if li == 0u {
            atomicStore(&wg_rows, 0u);
        }
#endif
        let current = tile_next(li, pending, p.decoder);
        if current == TILE_LOOP_DONE {
            break;
        }
        let mine = pending && p.decoder == current;
#ifdef NTC_KERNEL_FMA
        ntc_fma_load(current, li, NTC_THREADS);
        workgroupBarrier();
        if mine && NTC_DO_MLP {
            let o = ntc_fma_forward(&batch)[0];
            outputs = array<vec4f, 4>(o[0], o[1], o[2], o[3]);
        } else if mine {
            outputs[0] = ntc_fma_fold(batch[0]);
        }
#else
#ifdef NTC_KERNEL_MMA
        ntc_coop_load(current, li, NTC_THREADS);
        var slot = 0u;
        if mine {
            slot = atomicAdd(&wg_rows, 1u);
            if NTC_DO_INPUT {
                ntc_coop_put_input(slot / NTC_COOP_ROWS, slot % NTC_COOP_ROWS, texel.mip, texel.texel);
            }
        }
        workgroupBarrier();
        if NTC_DO_MLP {
            ntc_coop_forward(coop);
        }
        // A pixel's row may lie in another subgroup's slice (the compaction spans the
        // workgroup), which the chained forward pass syncs only within the subgroup.
        workgroupBarrier();
        if mine {
            let o = ntc_coop_output(slot / NTC_COOP_ROWS, slot % NTC_COOP_ROWS);
            outputs = array<vec4f, 4>(o[0], o[1], o[2], vec4f(0.0));
        }
#else
        ntc_load_decoder(current, li);
        workgroupBarrier();
        if NTC_DO_MLP {
            ntc_evaluate(mine, thread);
        } else if mine {
            ntc_fold_state();
        }
#endif
#endif
        if mine {
            pending = false;
        }
        workgroupBarrier();
    }

    if !inside {
        return;
    }
#ifndef NTC_KERNEL_FMA
#ifndef NTC_KERNEL_MMA
    outputs = array<vec4f, 4>(vec4f(ntc_state.outputs[0]), vec4f(ntc_state.outputs[1]), vec4f(ntc_state.outputs[2]), vec4f(0.0));
#endif
#endif
    ntc_finish_pixel(p, pixel, outputs[0], outputs[1], outputs[2]);
}
