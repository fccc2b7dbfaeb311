// defines: GRAD_SCALE_DECODER=16777216.0, GRAD_SCALE_LATENTS=67108864.0, DELTA_SCALE=16.0, NTC_FEATURES=16
// variants: - | FIXED_POINT_GRADIENTS
// variants: - | NTC_MIXED
// variants: - | LAZY_LATENTS
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
//
// Lazy latents (LAZY_LATENTS; GpuTrainer's LatentAdam::Lazy): the same optimiser, with the
// work of the latents no sample reads deferred. A latent whose gradient is 0 in a step
// only has its moments decay (m ← β1 m, v ← β2 v) and, where the rate is not 0, its value
// move by the step's update computed from those moments; that depends on nothing but the
// step's rates, so it can run later, step by step, with the same arithmetic (adam_values
// with g = 0). Each latent texel (NTC_FEATURES values) records in latent_steps the main
// step it is current at, shifted left by one, with bit LISTED set once the current step's
// list holds it. Before the step's gradients, `catch_up` lists each texel the step's batch
// reads once (one thread per sample, grid and tap; atomicMax elects one thread per texel,
// which appends the texel and the step it was current at to the step's list, in a range
// its workgroup reserves with one atomic), and `replay` brings the listed texels up to the
// step (one thread per value); `adam` then updates them (one thread per value) and marks
// them current at the next step; `catch_up_all` brings every texel to step_params.step
// before the latents are read or snapped. The results are dense Adam's, bit for bit; a
// step costs in proportion to its batch, not to the group. After the texels' states,
// latent_steps holds two list lengths and two lists of LIST_TAPS · batch_size entries of
// LIST_ENTRY words, by the step's parity: `adam` of step s empties the list of step s + 1,
// whose `catch_up` fills it.

#ifdef NTC_MIXED
enable f16;
#endif

#import "common/ntc_train.wgsl"
#ifdef NTC_MIXED
#import "common/ntc_loss.wgsl"
#endif

const ADAM_WORKGROUP: u32 = 256u;
// Values per latent texel (features of a grid texel).
const LATENT_FEATURES: u32 = ${NTC_FEATURES}u;

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

// A parameter after one Adam step.
struct AdamValues {
    value: f32,
    // (m, v).
    moments: vec2f,
}

// One Adam step of a parameter of value `p` and moments `mv` with gradient `g`, rate `lr`
// and bias corrections `bc1`, `bc2` (a latent is clamped to [-1, 1]); a rate of 0 leaves
// the value alone.
fn adam_values(p: f32, mv: vec2f, g: f32, lr: f32, bc1: f32, bc2: f32, latent: bool) -> AdamValues {
    var out = AdamValues(p, mv);
    out.moments.x = step_params.beta1 * mv.x + step_params.one_minus_beta1 * g;
    out.moments.y = step_params.beta2 * mv.y + step_params.one_minus_beta2 * g * g;
    if lr != 0.0 {
        let update = lr * (out.moments.x / bc1) / (sqrt(out.moments.y / bc2) + step_params.epsilon);
        out.value = p - update;
        if latent {
            out.value = clamp(out.value, -1.0, 1.0);
        }
    }
    return out;
}

// The Adam step of parameter `index` with gradient `g`.
fn adam_update(index: u32, g: f32) {
    let decoder = index < step_params.decoder_count;
    let lr = select(step_params.lr_latents, step_params.lr_decoder, decoder);
    let bc1 = select(step_params.bc1_latents, step_params.bc1_decoder, decoder);
    let bc2 = select(step_params.bc2_latents, step_params.bc2_decoder, decoder);
    let out = adam_values(params[index], moments[index], g, lr, bc1, bc2, !decoder);
    moments[index] = out.moments;
    if lr != 0.0 {
        params[index] = out.value;
#ifdef NTC_MIXED
        if decoder {
            weights16[index] = f16(out.value);
        }
#endif
    }
}

// The latent texels: LATENT_FEATURES values each, from params[decoder_count].
fn latent_texel_count() -> u32 {
    return (step_params.update_count - min(step_params.update_count, step_params.decoder_count)) / LATENT_FEATURES;
}

// Lazy latents: a texel's state in latent_steps is its current step << 1 | LISTED.
const LISTED: u32 = 1u;
// Latent texels a sample reads (4 taps in each of 2 grids): a step's list holds at most
// LIST_TAPS · batch_size texels.
const LIST_TAPS: u32 = 8u;
// Words of a list entry: the texel, and the step it was current at when listed.
const LIST_ENTRY: u32 = 2u;

// Lazy latents: where in latent_steps the length of step `step`'s list is (during a main
// step, when update_count covers every latent).
fn list_length_at(step: u32) -> u32 {
    return latent_texel_count() + (step & 1u);
}

// Lazy latents: where in latent_steps entry `entry` of step `step`'s list is.
fn list_entry_at(step: u32, entry: u32) -> u32 {
    return latent_texel_count() + 2u + ((step & 1u) * LIST_TAPS * step_params.batch_size + entry) * LIST_ENTRY;
}

// Latent value `index` of params and its moments taken from main step `first_step` to
// `last_step` (excluded) with zero gradients, one step at a time with each step's rates
// (latent_rates).
fn replay_value(index: u32, first_step: u32, last_step: u32) {
    var out = AdamValues(params[index], moments[index]);
    for (var s = first_step; s < last_step; s++) {
        let rates = latent_rates[s];
        out = adam_values(out.value, out.moments, 0.0, rates.x, rates.y, rates.z, true);
    }
    params[index] = out.value;
    moments[index] = out.moments;
}

// Lazy latents: the latent texel that thread `e` of `catch_up` reads (sample e / 8, grid,
// tap), with the first thread of the step to read it elected to list it: (texel, 1, the
// step the texel is current at) for that thread; (texel, 0, 0) for the others; (0, 0, 0)
// for a thread without a sample.
fn catch_up_tap(e: u32) -> vec3u {
    if e >= LIST_TAPS * step_params.batch_size {
        return vec3u(0u);
    }
    let row = step_row(e / LIST_TAPS);
    if row.x == NO_ENTRY {
        return vec3u(0u);
    }
    let entry = mips[row.x];
    let coarse = (e / 4u) % 2u == 1u;
    let taps = grid_taps(entry, row_texel(row, entry), coarse);
    let grid = entry.latent_base - step_params.decoder_count
        + select(entry.grids.fine_offset, entry.grids.coarse_offset, coarse);
    let texel = grid / LATENT_FEATURES + taps.texel[e % 4u];
    let listed = (step_params.step << 1u) | LISTED;
    let state = atomicMax(&latent_steps[texel], listed);
    if state >= listed {
        return vec3u(texel, 0u, 0u);
    }
    return vec3u(texel, 1u, state >> 1u);
}

// Lazy latents, `catch_up`: the workgroup's texels to list, and where in the step's list
// they start.
var<workgroup> listing: atomic<u32>;
var<workgroup> listing_base: u32;

// Lazy latents: list each latent texel step `step_params.step`'s batch reads once, with
// the step it is current at, one thread per (sample, grid, tap) (catch_up_tap). A
// workgroup's texels take consecutive entries of the list, reserved with one atomic on its
// length.
@compute @workgroup_size(ADAM_WORKGROUP)
fn catch_up(invocation: TrainInvocation) {
    let local = invocation.local;
    let tap = catch_up_tap(linear_workgroup(invocation) * ADAM_WORKGROUP + local);
    var slot = 0u;
    if tap.y == 1u {
        slot = atomicAdd(&listing, 1u);
    }
    workgroupBarrier();
    if local == 0u {
        listing_base = atomicAdd(&latent_steps[list_length_at(step_params.step)], atomicLoad(&listing));
    }
    let base = workgroupUniformLoad(&listing_base);
    if tap.y == 1u {
        let at = list_entry_at(step_params.step, base + slot);
        atomicStore(&latent_steps[at], tap.x);
        atomicStore(&latent_steps[at + 1u], tap.z);
    }
}

// Lazy latents: bring the texels `catch_up` listed up to step `step_params.step`, one
// thread per value (LATENT_FEATURES per texel), so that a texel's values are replayed side
// by side.
@compute @workgroup_size(ADAM_WORKGROUP)
fn replay(invocation: TrainInvocation) {
    let thread = linear_workgroup(invocation) * ADAM_WORKGROUP + invocation.local;
    let entry = thread / LATENT_FEATURES;
    if entry >= atomicLoad(&latent_steps[list_length_at(step_params.step)]) {
        return;
    }
    let at = list_entry_at(step_params.step, entry);
    let texel = atomicLoad(&latent_steps[at]);
    let current = atomicLoad(&latent_steps[at + 1u]);
    if current < step_params.step {
        let index = step_params.decoder_count + texel * LATENT_FEATURES + thread % LATENT_FEATURES;
        replay_value(index, current, step_params.step);
    }
}

// Lazy latents: bring every latent texel up to main step `step_params.step`, one thread
// per texel.
@compute @workgroup_size(ADAM_WORKGROUP)
fn catch_up_all(invocation: TrainInvocation) {
    let texel = linear_workgroup(invocation) * ADAM_WORKGROUP + invocation.local;
    if texel >= latent_texel_count() {
        return;
    }
    let current = atomicLoad(&latent_steps[texel]) >> 1u;
    if current < step_params.step {
        let first = step_params.decoder_count + texel * LATENT_FEATURES;
        for (var j = 0u; j < LATENT_FEATURES; j++) {
            replay_value(first + j, current, step_params.step);
        }
        atomicStore(&latent_steps[texel], step_params.step << 1u);
    }
}

#ifdef LAZY_LATENTS
// Lazy latents: value `thread` of the step's listed texels (LATENT_FEATURES per texel) takes
// its Adam step, and the texel is current at the next step. Thread 0 empties the next
// step's list.
fn adam_listed(thread: u32) {
    let step = step_params.step;
    if thread == 0u {
        atomicStore(&latent_steps[list_length_at(step + 1u)], 0u);
    }
    let entry = thread / LATENT_FEATURES;
    if entry >= atomicLoad(&latent_steps[list_length_at(step)]) {
        return;
    }
    let texel = atomicLoad(&latent_steps[list_entry_at(step, entry)]);
    let index = step_params.decoder_count + texel * LATENT_FEATURES + thread % LATENT_FEATURES;
    adam_update(index, grad_take(index));
    if thread % LATENT_FEATURES == 0u {
        atomicStore(&latent_steps[texel], (step + 1u) << 1u);
    }
}
#endif

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
#else
    // The decoder's parameters, one per thread.
    let decoder_groups = (step_params.decoder_count + ADAM_WORKGROUP - 1u) / ADAM_WORKGROUP;
    if group < decoder_groups {
        let index = group * ADAM_WORKGROUP + local;
        if index < min(step_params.decoder_count, step_params.update_count) {
            adam_update(index, grad_take(index));
        }
        return;
    }
#endif
    // The latents: one value per thread, with LAZY_LATENTS of the listed texels only.
    let thread = (group - decoder_groups) * ADAM_WORKGROUP + local;
#ifdef LAZY_LATENTS
    if step_params.update_count > step_params.decoder_count {
        adam_listed(thread);
    }
#else
    let index = step_params.decoder_count + thread;
    if index < step_params.update_count {
        adam_update(index, grad_take(index));
    }
#endif
}
