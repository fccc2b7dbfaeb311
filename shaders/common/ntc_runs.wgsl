// The decoder runs of the sorted NTC decode, shared by the sort (ntc_sort.wgsl) and the
// decode of the runs (ntc_decode_runs.wgsl): every decoded pixel of the frame sits in the
// run of its decoder, runs laid out in decoder order, each starting at a multiple of
// NTC_RUN_ALIGN slots (the decode's pixels per workgroup), so that every workgroup of the
// decode sees one decoder.
//
// Group 2:
//   1 runs: per decoder d, (first slot, pixels); entry N (N = decoders) holds
//     (total slots, 0)
//   2 slots: per slot, the pixel (y << 16 | x); slots past a run's pixels are not written
//   3 (sort) per decoder, its pixel count (the count pass adds, the scan reads and zeroes)
//   4 (sort) per decoder, the next free slot of its run (the scan sets, the scatter adds)
//   5 (sort) the indirect dispatch arguments of the decode of all runs (3 words)
//
// Capacity: slots ≥ pixels + decoders · (NTC_RUN_ALIGN − 1). Dispatch grids are
// NTC_RUN_GRID_X workgroups wide (a workgroup count can exceed the 65 535 a dimension
// allows).

const NTC_RUN_ALIGN: u32 = ${NTC_RUN_ALIGN}u;
const NTC_RUN_GRID_X: u32 = ${NTC_RUN_GRID_X}u;

// A pixel as a slot holds it.
fn ntc_run_pack(pixel: vec2u) -> u32 {
    return (pixel.y << 16u) | pixel.x;
}

fn ntc_run_unpack(slot: u32) -> vec2u {
    return vec2u(slot & 0xFFFFu, slot >> 16u);
}
