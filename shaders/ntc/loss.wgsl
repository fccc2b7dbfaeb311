// defines: GRAD_SCALE_DECODER=16777216.0, GRAD_SCALE_LATENTS=67108864.0
// variants: - | FIXED_POINT_GRADIENTS
//
// NTC training, kernel 4: the step's mean batch loss. One workgroup sums forward_backward's
// per-workgroup loss sums (in a fixed order, so the result is deterministic) and writes
// sum / batch_size to losses[loss_slot]. The host reads `losses` back asynchronously,
// every few hundred steps, never once per step.

#import "common/ntc_train.wgsl"

const LOSS_WORKGROUP: u32 = 256u;

var<workgroup> partial: array<f32, LOSS_WORKGROUP>;

@compute @workgroup_size(LOSS_WORKGROUP)
fn reduce_loss(@builtin(local_invocation_index) local: u32) {
    var sum = 0.0;
    for (var i = local; i < step_params.loss_groups; i += LOSS_WORKGROUP) {
        sum += wg_partials[i];
    }
    partial[local] = sum;
    workgroupBarrier();
    for (var stride = LOSS_WORKGROUP / 2u; stride > 0u; stride /= 2u) {
        if local < stride {
            partial[local] += partial[local + stride];
        }
        workgroupBarrier();
    }
    if local == 0u {
        losses[step_params.loss_slot] = partial[0] * step_params.inv_batch;
    }
}
