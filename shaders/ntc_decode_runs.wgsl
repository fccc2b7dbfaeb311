// defines: NTC_RUN_GRID_X=1024, NTC_LEAKY_SLOPE=0.01, NTC_HIDDEN_2=0, NTC_HIDDEN_3=0, NTC_PE_WAVES=3, NTC_F16
// variants: NTC_KERNEL_FMA, NTC_FMA_PIXELS=1, NTC_THREADS=256, NTC_RUN_ALIGN=256 | NTC_KERNEL_FMA, NTC_FMA_PIXELS=2, NTC_THREADS=64, NTC_RUN_ALIGN=128 | NTC_KERNEL_MMA, NTC_THREADS=128, NTC_RUN_ALIGN=128 | NTC_KERNEL_MMA, NTC_DECODERS_F16, NTC_COOP_STORAGE, NTC_THREADS=128, NTC_RUN_ALIGN=128 | NTC_KERNEL_MMA, NTC_COOP_CHAIN, NTC_THREADS=192, NTC_RUN_ALIGN=1536
// variants: - | NTC_STAGE_INPUT | NTC_STAGE_MLP | NTC_STAGE_OUTPUT
// variants: NTC_FEATURES=16, NTC_LATENT_BITS=4, NTC_INPUT_WIDTH=48, NTC_LAYERS=3, NTC_HIDDEN_0=64, NTC_HIDDEN_1=64, NTC_PARAMS=8336, NTC_WIDEST=64 | NTC_FEATURES=8, NTC_LATENT_BITS=8, NTC_INPUT_WIDTH=32, NTC_LAYERS=2, NTC_HIDDEN_0=32, NTC_HIDDEN_1=0, NTC_PARAMS=1584, NTC_WIDEST=32
//
// The decode of the sorted NTC decode's runs (common/ntc_runs.wgsl, made by
// ntc_sort.wgsl): every workgroup takes NTC_RUN_ALIGN consecutive slots, all of one
// decoder's run, so it loads one decoder and runs it on all of its pixels with no
// divergence; each pixel's input, decoding and outputs are the decode pass's (texel choice,
// input vector, clamping, neutral channels, transforms: common/ntc_pixel.wgsl), written
// to the material targets at the pixel. Slots past the run's pixels are padding (their
// invocations compute and write nothing).
//
// Kernels (one of):
//   NTC_KERNEL_FMA  common/ntc_fma.wgsl: NTC_FMA_PIXELS slots per invocation
//                   (NTC_RUN_ALIGN = NTC_THREADS · NTC_FMA_PIXELS), weights in
//                   workgroup memory
//   NTC_KERNEL_MMA  common/ntc_coop.wgsl: tiles of 32 slots per subgroup of 32, the
//                   workgroup's NTC_RUN_ALIGN slots (a multiple of NTC_THREADS) in rounds
//                   of one tile per subgroup against weights loaded once (with
//                   NTC_COOP_CHAIN: layers and rounds separated by subgroup barriers
//                   only); needs hidden widths that are multiples of 16 and subgroups of 32
// Dispatch: one indirect dispatch for all runs (arguments from the scan); a workgroup
// finds its decoder by binary search over the runs.
//
// Bindings: group 0 as common/ntc_pixel.wgsl, group 1 as common/ntc_decode.wgsl, group 2
// as common/ntc_runs.wgsl (1–2).

#import "common/ntc_pixel.wgsl"
#import "common/ntc_runs.wgsl"
#ifdef NTC_KERNEL_FMA
#import "common/ntc_fma.wgsl"
#endif
#ifdef NTC_KERNEL_MMA
enable wgpu_cooperative_matrix;
#import "common/ntc_coop.wgsl"
#endif

@group(2) @binding(1) var<storage, read> ntc_runs: array<vec2u>;
@group(2) @binding(2) var<storage, read> ntc_slots: array<u32>;

// The workgroup's decoder, first slot and end of its run's pixels.
struct RunBatch {
    decoder: u32,
    first: u32,
    end: u32,
}

var<workgroup> wg_batch: RunBatch;

// The batch of workgroup `w` (first ≥ end: nothing to decode).
fn run_batch(w: u32) -> RunBatch {
    var b: RunBatch;
    let n = arrayLength(&ntc_runs) - 1u;
    b.first = w * NTC_RUN_ALIGN;
    b.decoder = 0u;
    if b.first >= ntc_runs[n].x {
        b.end = 0u;
        return b;
    }
    // The last run starting at or before `first` (empty runs start where the next does).
    var lo = 0u;
    var hi = n;
    while hi - lo > 1u {
        let mid = (lo + hi) / 2u;
        if ntc_runs[mid].x <= b.first {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    b.decoder = lo;
    let run = ntc_runs[lo];
    b.end = run.x + run.y;
    return b;
}

@compute @workgroup_size(${NTC_THREADS})
fn decode_runs(
    @builtin(workgroup_id) group: vec3u,
    @builtin(local_invocation_index) li: u32,
#ifdef NTC_KERNEL_MMA
    coop: NtcCoopIds,
#endif
) {
    if li == 0u {
        wg_batch = run_batch(group.y * NTC_RUN_GRID_X + group.x);
    }
    let batch = workgroupUniformLoad(&wg_batch);
    if batch.first >= batch.end {
        return;
    }
#ifdef NTC_KERNEL_FMA
    ntc_fma_load(batch.decoder, li, NTC_THREADS);
    var values: NtcFmaBatch;
    var pixels: array<vec2u, NTC_FMA_PIXELS>;
    var entries: array<NtcPixel, NTC_FMA_PIXELS>;
    // Unrolled (`#for`): constant indices keep the pixels' values in registers.
#for P in 0..${NTC_FMA_PIXELS}
    // Every call operand is bound to a `let` first: naga 30's SPIR-V writer panics on
    // some call arguments computed in place ("Expression [n] is not cached").
    let slot_${P} = batch.first + ${P}u * NTC_THREADS + li;
    if slot_${P} < batch.end {
        let packed_${P} = ntc_slots[slot_${P}];
        let pixel_${P} = ntc_run_unpack(packed_${P});
        pixels[${P}] = pixel_${P};
        let entry_${P} = ntc_read_pixel(pixel_${P});
        entries[${P}] = entry_${P};
        if NTC_DO_INPUT {
            let x_${P} = ntc_pixel_input(entry_${P}, pixel_${P});
            values[${P}] = ntc_fma_values(x_${P});
        }
    }
#endfor
    workgroupBarrier();
    var outputs: NtcFmaOutputs;
    if NTC_DO_MLP {
        outputs = ntc_fma_forward(&values);
    } else {
#for P in 0..${NTC_FMA_PIXELS}
        outputs[${P}][0] = ntc_fma_fold(values[${P}]);
#endfor
    }
#for P in 0..${NTC_FMA_PIXELS}
    if slot_${P} < batch.end {
        let entry_${P} = entries[${P}];
        let pixel_${P} = pixels[${P}];
        let out_${P} = outputs[${P}];
        let o0_${P} = out_${P}[0];
        let o1_${P} = out_${P}[1];
        let o2_${P} = out_${P}[2];
        ntc_finish_pixel(entry_${P}, pixel_${P}, o0_${P}, o1_${P}, o2_${P});
    }
#endfor
#endif
#ifdef NTC_KERNEL_MMA
    ntc_coop_load(batch.decoder, li, NTC_THREADS);
    workgroupBarrier();
    // Rounds of one tile of 32 slots per subgroup, every subgroup running every round
    // (uniform control flow for the matrix operations; a subgroup past the batch's tiles
    // computes rows nobody reads).
    let end = min(batch.end, batch.first + NTC_RUN_ALIGN);
    let tiles = (end - batch.first + NTC_COOP_ROWS - 1u) / NTC_COOP_ROWS;
    let rounds = (tiles + NTC_COOP_SUBGROUPS - 1u) / NTC_COOP_SUBGROUPS;
    for (var tile_round = 0u; tile_round < rounds; tile_round++) {
        let tile = tile_round * NTC_COOP_SUBGROUPS + coop.subgroup;
        let slot = batch.first + tile * NTC_COOP_ROWS + coop.lane;
        let valid = slot < end;
        var pixel = vec2u(0u);
        var entry: NtcPixel;
        if valid {
            pixel = ntc_run_unpack(ntc_slots[slot]);
            entry = ntc_read_pixel(pixel);
            if NTC_DO_INPUT {
                let t = ntc_pixel_texel(entry, pixel);
                ntc_coop_put_input(coop.subgroup, coop.lane, t.mip, t.texel);
            }
        }
        ntc_coop_sync();
        if NTC_DO_MLP {
            ntc_coop_forward(coop);
        }
        if valid {
            let o = ntc_coop_output(coop.subgroup, coop.lane);
            ntc_finish_pixel(entry, pixel, o[0], o[1], o[2]);
        }
        // Every row read before the next round's inputs overwrite the slice.
        ntc_coop_sync();
    }
#endif
}
