// The loop over the distinct values held by a workgroup's threads (the materials or the
// decoders of a screen tile), smallest first, shared by material_classify.wgsl,
// ntc_decode_tiles.wgsl, ntc_sort.wgsl and cooccurrence.wgsl: each iteration elects the smallest value of the
// threads still pending with one atomic min in workgroup memory, so the loop runs once per
// distinct value, not once per thread.

// What tile_next returns when no thread is pending (no pending thread holds this value).
const TILE_LOOP_DONE: u32 = 0xFFFFFFFFu;

var<workgroup> wg_candidate: atomic<u32>;
var<workgroup> wg_current: u32;

// Every thread of the workgroup calls this once per iteration, in uniform control flow:
// returns to every thread, as a uniform value, the smallest `value` of the threads whose
// `pending` is true, or TILE_LOOP_DONE. It begins with a barrier, so what thread 0 stored
// to workgroup memory before the call (a per-iteration reset) is seen by every thread
// after it.
fn tile_next(li: u32, pending: bool, value: u32) -> u32 {
    if li == 0u {
        atomicStore(&wg_candidate, TILE_LOOP_DONE);
    }
    workgroupBarrier();
    if pending {
        atomicMin(&wg_candidate, value);
    }
    workgroupBarrier();
    if li == 0u {
        wg_current = atomicLoad(&wg_candidate);
    }
    return workgroupUniformLoad(&wg_current);
}
