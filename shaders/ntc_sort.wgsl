// defines: NTC_SORT_TILE=8, NTC_RUN_ALIGN=128, NTC_RUN_GRID_X=1024, NTC_THREADS=64, NTC_LEAKY_SLOPE=0.01, NTC_HIDDEN_2=0, NTC_HIDDEN_3=0, NTC_PE_WAVES=3
// variants: NTC_FEATURES=16, NTC_LATENT_BITS=4, NTC_INPUT_WIDTH=48, NTC_LAYERS=3, NTC_HIDDEN_0=64, NTC_HIDDEN_1=64, NTC_PARAMS=8336 | NTC_FEATURES=8, NTC_LATENT_BITS=8, NTC_INPUT_WIDTH=32, NTC_LAYERS=2, NTC_HIDDEN_0=32, NTC_HIDDEN_1=0, NTC_PARAMS=1584
//
// The sort of the divergence-free NTC decode (common/ntc_runs.wgsl): three dispatches
// put every decoded pixel of the frame into its decoder's run, which ntc_decode_runs.wgsl
// then decodes with one decoder per workgroup.
// 1. `count`, one workgroup per NTC_SORT_TILE² screen tile: pixels without a decoder are
//    finished here (their material targets written: 0 without geometry, neutral channels
//    × factors for materials without an NTC set); per distinct decoder of the tile (the
//    decode pass's loop) one atomic add of its pixel count.
// 2. `scan`, one workgroup: each run's first slot (counts rounded up to NTC_RUN_ALIGN,
//    prefix sum in decoder order), the runs table, the scatter cursors, the decode's
//    indirect dispatch arguments; the counts are reset for the next frame.
// 3. `scatter`, one workgroup per tile again: per distinct decoder of the tile one atomic
//    add reserves a contiguous range of its run, so runs hold whole tiles (screen-coherent
//    latent and G-buffer reads in the decode), and each pixel writes its slot.
//
// Bindings: group 0 as common/ntc_pixel.wgsl, group 1 as common/ntc_decode.wgsl, group 2
// as common/ntc_runs.wgsl (1–5).

#import "common/ntc_pixel.wgsl"
#import "common/ntc_runs.wgsl"
#import "common/tile_loop.wgsl"

@group(2) @binding(1) var<storage, read_write> ntc_runs: array<vec2u>;
@group(2) @binding(2) var<storage, read_write> ntc_slots: array<u32>;
@group(2) @binding(3) var<storage, read_write> ntc_counts: array<atomic<u32>>;
@group(2) @binding(4) var<storage, read_write> ntc_cursors: array<atomic<u32>>;
@group(2) @binding(5) var<storage, read_write> ntc_dispatch: array<u32>;

const NTC_SORT_THREADS: u32 = ${NTC_SORT_TILE}u * ${NTC_SORT_TILE}u;
const NTC_SCAN_THREADS: u32 = 256u;

var<workgroup> wg_members: atomic<u32>;
var<workgroup> wg_base: u32;
var<workgroup> wg_sums: array<u32, NTC_SCAN_THREADS>;

// The tile's pixel `li` and what it decodes.
fn sort_pixel(tile: vec2u, li: u32) -> vec2u {
    return tile * ${NTC_SORT_TILE}u + vec2u(li % ${NTC_SORT_TILE}u, li / ${NTC_SORT_TILE}u);
}

// The decoder loop of the tile (ntc_decode_tiles.wgsl's, common/tile_loop.wgsl): per distinct
// decoder, smallest first, `members` pixels (their ranks in `rank`); `scatter` reserves
// their range and writes the slots, otherwise their count is added.
fn sort_tile(li: u32, decoder: u32, pixel: vec2u, scatter: bool) {
    var pending = decoder != NTC_NONE;
    loop {
        if li == 0u {
            atomicStore(&wg_members, 0u);
        }
        let current = tile_next(li, pending, decoder);
        if current == TILE_LOOP_DONE {
            break;
        }
        let mine = pending && decoder == current;
        var rank = 0u;
        if mine {
            rank = atomicAdd(&wg_members, 1u);
            pending = false;
        }
        workgroupBarrier();
        if li == 0u {
            let members = atomicLoad(&wg_members);
            if scatter {
                wg_base = atomicAdd(&ntc_cursors[current], members);
            } else {
                atomicAdd(&ntc_counts[current], members);
            }
        }
        let base = workgroupUniformLoad(&wg_base);
        if scatter && mine {
            ntc_slots[base + rank] = ntc_run_pack(pixel);
        }
    }
}

@compute @workgroup_size(${NTC_SORT_TILE} * ${NTC_SORT_TILE})
fn count(@builtin(workgroup_id) tile: vec3u, @builtin(local_invocation_index) li: u32) {
    let pixel = sort_pixel(tile.xy, li);
    let p = ntc_read_pixel(pixel);
    if all(pixel < textureDimensions(gb_material)) && p.decoder == NTC_NONE {
        ntc_store_pixel(p, pixel, vec4f(0.0), vec4f(0.0), vec4f(0.0));
    }
    sort_tile(li, p.decoder, pixel, false);
}

@compute @workgroup_size(${NTC_SORT_TILE} * ${NTC_SORT_TILE})
fn scatter(@builtin(workgroup_id) tile: vec3u, @builtin(local_invocation_index) li: u32) {
    let pixel = sort_pixel(tile.xy, li);
    sort_tile(li, ntc_read_pixel(pixel).decoder, pixel, true);
}

// Three indirect-dispatch words for `groups` workgroups at `at`.
fn put_grid(at: u32, groups: u32) {
    ntc_dispatch[at] = min(groups, NTC_RUN_GRID_X);
    ntc_dispatch[at + 1u] = (groups + NTC_RUN_GRID_X - 1u) / NTC_RUN_GRID_X;
    ntc_dispatch[at + 2u] = 1u;
}

fn aligned(count: u32) -> u32 {
    return (count + NTC_RUN_ALIGN - 1u) / NTC_RUN_ALIGN * NTC_RUN_ALIGN;
}

@compute @workgroup_size(256)
fn scan(@builtin(local_invocation_index) li: u32) {
    let n = arrayLength(&ntc_counts);
    let per = (n + NTC_SCAN_THREADS - 1u) / NTC_SCAN_THREADS;
    let lo = min(li * per, n);
    let hi = min(lo + per, n);
    var sum = 0u;
    for (var d = lo; d < hi; d++) {
        sum += aligned(atomicLoad(&ntc_counts[d]));
    }
    // Inclusive prefix sum over the threads (Hillis–Steele).
    wg_sums[li] = sum;
    for (var step = 1u; step < NTC_SCAN_THREADS; step *= 2u) {
        workgroupBarrier();
        var add = 0u;
        if li >= step {
            add = wg_sums[li - step];
        }
        workgroupBarrier();
        wg_sums[li] += add;
    }
    var start = wg_sums[li] - sum;
    for (var d = lo; d < hi; d++) {
        let c = atomicLoad(&ntc_counts[d]);
        atomicStore(&ntc_counts[d], 0u);
        ntc_runs[d] = vec2u(start, c);
        atomicStore(&ntc_cursors[d], start);
        start += aligned(c);
    }
    if li == NTC_SCAN_THREADS - 1u {
        let total = wg_sums[li];
        ntc_runs[n] = vec2u(total, 0u);
        put_grid(0u, total / NTC_RUN_ALIGN);
    }
}
