// defines: GRAD_SCALE_DECODER=16777216.0, GRAD_SCALE_LATENTS=67108864.0
// variants: - | FIXED_POINT_GRADIENTS
//
// NTC training (f32 trainer), kernel 4: the step's mean batch loss. One workgroup sums
// forward_backward's per-workgroup loss sums (common/ntc_loss.wgsl, in a fixed order, so
// the result is deterministic) and writes sum / batch_size to losses[loss_slot]. The host
// reads `losses` back asynchronously, every few hundred steps, never once per step.

#import "common/ntc_train.wgsl"
#import "common/ntc_loss.wgsl"

const LOSS_THREADS: u32 = 256u;
const LOSS_SCRATCH: u32 = LOSS_THREADS;

@compute @workgroup_size(LOSS_THREADS)
fn reduce_loss(@builtin(local_invocation_index) local: u32) {
    reduce_losses(local);
}
