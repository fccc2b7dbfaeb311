// defines: GRAD_SCALE_DECODER=16777216.0, GRAD_SCALE_LATENTS=67108864.0
// variants: - | FIXED_POINT_GRADIENTS
//
// NTC training, kernel 3: one Adam step over params[0 .. update_count] (cpu::adam_step in
// f32). Parameters below decoder_count form the decoder block (learning rate with the
// freezing factor λ already applied, no clamp), the rest the latent block (clamped to the
// quantisation range [-1, 1]). Each block has its own bias corrections, since fine-tuning
// restarts the decoder's moments. The kernel reads each gradient and resets it to 0 for
// the next step. A learning rate of 0 advances the moments but leaves the parameter alone.

#import "common/ntc_train.wgsl"

const ADAM_WORKGROUP: u32 = 256u;

@compute @workgroup_size(ADAM_WORKGROUP)
fn adam(
    @builtin(workgroup_id) workgroup: vec3u,
    @builtin(num_workgroups) workgroups: vec3u,
    @builtin(local_invocation_index) local: u32,
) {
    let index = linear_workgroup(workgroup, workgroups) * ADAM_WORKGROUP + local;
    if index >= step_params.update_count {
        return;
    }
    let g = grad_take(index);
    let decoder = index < step_params.decoder_count;
    var mv = moments[index];
    mv.x = step_params.beta1 * mv.x + step_params.one_minus_beta1 * g;
    mv.y = step_params.beta2 * mv.y + step_params.one_minus_beta2 * g * g;
    moments[index] = mv;
    let lr = select(step_params.lr_latents, step_params.lr_decoder, decoder);
    if lr != 0.0 {
        let bc1 = select(step_params.bc1_latents, step_params.bc1_decoder, decoder);
        let bc2 = select(step_params.bc2_latents, step_params.bc2_decoder, decoder);
        let update = lr * (mv.x / bc1) / (sqrt(mv.y / bc2) + step_params.epsilon);
        var p = params[index] - update;
        if !decoder {
            p = clamp(p, -1.0, 1.0);
        }
        params[index] = p;
    }
}
