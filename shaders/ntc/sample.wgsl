// defines: GRAD_SCALE_DECODER=16777216.0, GRAD_SCALE_LATENTS=67108864.0
// variants: - | FIXED_POINT_GRADIENTS
//
// NTC training (f32 trainer), kernel 1: draw the step's batch, one thread per sample
// (draw_sample of common/ntc_train.wgsl; the mixed-precision trainer draws the same
// samples inside train_step).

#import "common/ntc_encoding.wgsl"
#import "common/ntc_train.wgsl"

const SAMPLE_WORKGROUP: u32 = 256u;

@compute @workgroup_size(SAMPLE_WORKGROUP)
fn sample(invocation: TrainInvocation) {
    let index = linear_workgroup(invocation) * SAMPLE_WORKGROUP + invocation.local;
    if index >= step_params.batch_size || step_params.entry_count == 0u {
        return;
    }
    batch[index] = draw_sample(index);
}
