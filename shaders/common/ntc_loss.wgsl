// The training kernels' loss sums: `loss_workgroup_sum`, a workgroup's sum of one value
// per thread (train_step's per-workgroup loss), and `reduce_losses`, the step's mean batch
// loss from the per-workgroup loss sums in `wg_partials`, shared by the f32 trainer's
// reduce_loss and the mixed-precision trainer's Adam, which folds it in. Needs
// common/ntc_train.wgsl and, from the importer, `const LOSS_THREADS: u32`: the size of the
// workgroup that sums (a power of two), and `const LOSS_SCRATCH: u32` (≥ LOSS_THREADS): the
// size of `loss_scratch`, which an importer may also use before the sum (train_step does).

var<workgroup> loss_scratch: array<f32, LOSS_SCRATCH>;

// Every thread of one LOSS_THREADS-wide workgroup calls this with its `value`: returns the
// sum over the workgroup to every thread, added in a fixed order (a tree over the thread
// indices), so the result is deterministic.
fn loss_workgroup_sum(local: u32, value: f32) -> f32 {
    loss_scratch[local] = value;
    workgroupBarrier();
    for (var stride = LOSS_THREADS / 2u; stride > 0u; stride /= 2u) {
        if local < stride {
            loss_scratch[local] += loss_scratch[local + stride];
        }
        workgroupBarrier();
    }
    return loss_scratch[0];
}

// Every thread of one LOSS_THREADS-wide workgroup calls this: sums wg_partials[0 ..
// loss_groups] in a fixed order (so the result is deterministic) and writes
// sum / batch_size to losses[loss_slot].
fn reduce_losses(local: u32) {
    var sum = 0.0;
    for (var i = local; i < step_params.loss_groups; i += LOSS_THREADS) {
        sum += wg_partials[i];
    }
    let total = loss_workgroup_sum(local, sum);
    if local == 0u {
        losses[step_params.loss_slot] = total * step_params.inv_batch;
    }
}
