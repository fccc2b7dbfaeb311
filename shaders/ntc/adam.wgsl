// defines: GRAD_SCALE_DECODER=16777216.0, GRAD_SCALE_LATENTS=67108864.0, DELTA_SCALE=16.0
// variants: - | FIXED_POINT_GRADIENTS
// variants: - | NTC_MIXED
//
// NTC training, the last kernel of a step: one Adam step over params[0 .. update_count]
// (cpu::adam_step in f32). Parameters below decoder_count form the decoder block (learning
// rate with the freezing factor λ already applied, no clamp), the rest the latent block
// (clamped to the quantisation range [-1, 1]). Each block has its own bias corrections,
// since fine-tuning restarts the decoder's moments. A learning rate of 0 advances the
// moments but leaves the parameter alone.
//
// Gradients: the latents' (and, in the f32 trainer, the decoder's) are read from the
// atomic `grads` and reset to 0 for the next step. With NTC_MIXED (the mixed-precision
// trainer) a decoder gradient is the sum of train_step's per-workgroup partials
// dw_partials[w · decoder_count + i] for w < partial_count, in a fixed order (lane
// j < 8 adds w = j, j + 8, … in turn, then the lanes are added in order; the host's
// GpuTrainer::gradients repeats it), times 1 / (batch_size · DELTA_SCALE); the updated
// decoder is also written to `weights16` in f16, and workgroup 0 first reduces the
// step's loss (common/ntc_loss.wgsl), so a step of that trainer is two dispatches.

#ifdef NTC_MIXED
enable f16;
#endif

#import "common/ntc_train.wgsl"
#ifdef NTC_MIXED
#import "common/ntc_loss.wgsl"
#endif

const ADAM_WORKGROUP: u32 = 256u;

#ifdef NTC_MIXED
// The decoder's parameters come first: each of the first ⌈decoder_count / 32⌉ workgroups
// takes 32 of them, 8 threads per parameter summing every 8th partial (so that many
// partials are read at once), then one thread per parameter adds the 8 lane sums in
// order and updates it. The latents follow, one thread per parameter.
const DECODER_PER_GROUP: u32 = 32u;
const LANES: u32 = ADAM_WORKGROUP / DECODER_PER_GROUP;

var<workgroup> lane_sums: array<f32, ADAM_WORKGROUP>;
// Workgroup 0 reduces the step's loss (common/ntc_loss.wgsl).
const LOSS_THREADS: u32 = ADAM_WORKGROUP;
const LOSS_SCRATCH: u32 = LOSS_THREADS;
#endif

// The Adam step of parameter `index` with gradient `g`.
fn adam_update(index: u32, g: f32) {
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
#ifdef NTC_MIXED
        if decoder {
            weights16[index] = f16(p);
        }
#endif
    }
}

@compute @workgroup_size(ADAM_WORKGROUP)
fn adam(invocation: TrainInvocation) {
    let group = linear_workgroup(invocation);
    let local = invocation.local;
#ifdef NTC_MIXED
    if group == 0u {
        reduce_losses(local);
    }
    let decoder_groups = (step_params.decoder_count + DECODER_PER_GROUP - 1u) / DECODER_PER_GROUP;
    if group < decoder_groups {
        let index = group * DECODER_PER_GROUP + local % DECODER_PER_GROUP;
        let lane = local / DECODER_PER_GROUP;
        let updated = index < step_params.decoder_count && index < step_params.update_count;
        var sum = 0.0;
        if updated {
            for (var w = lane; w < step_params.partial_count; w += LANES) {
                sum += dw_partials[w * step_params.decoder_count + index];
            }
        }
        lane_sums[local] = sum;
        workgroupBarrier();
        if updated && lane == 0u {
            var g = 0.0;
            for (var j = 0u; j < LANES; j++) {
                g += lane_sums[j * DECODER_PER_GROUP + local];
            }
            adam_update(index, g * (step_params.inv_batch / ${DELTA_SCALE}));
        }
        return;
    }
    let index = step_params.decoder_count + (group - decoder_groups) * ADAM_WORKGROUP + local;
#else
    let index = group * ADAM_WORKGROUP + local;
#endif
    if index >= step_params.update_count {
        return;
    }
    adam_update(index, grad_take(index));
}
