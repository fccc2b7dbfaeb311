// defines: WORKGROUP_SIZE=32, NTC_PE_WAVES=3, NTC_HIDDEN_2=0, NTC_HIDDEN_3=0, NTC_LEAKY_SLOPE=0.01, NTC_TRAINING, GRAD_SCALE_DECODER=16777216.0, GRAD_SCALE_LATENTS=67108864.0
// variants: - | FIXED_POINT_GRADIENTS
// variants: - | NTC_LEAKY_RELU
// variants: NTC_FEATURES=4, NTC_INPUT_WIDTH=32, NTC_LAYERS=2, NTC_HIDDEN_0=8, NTC_HIDDEN_1=0 | NTC_FEATURES=16, NTC_INPUT_WIDTH=48, NTC_LAYERS=3, NTC_HIDDEN_0=64, NTC_HIDDEN_1=64
//
// NTC training, kernel 2: forward and backward pass, one thread per sample, plus
// `evaluate`, which decodes whole mips for quality measurement with the same forward pass.
//
// forward_backward, per sample (cpu::forward, cpu::loss, cpu::backward):
// 1. the input vector: both grids of the mip's pair bilinearly sampled (with QAT noise
//    when FLAG_QAT, exactly cpu::qat_noise), positional encoding, LOD input;
// 2. the MLP forward pass (common/ntc_mlp.wgsl), keeping activations and act'(z);
// 3. weighted L2 loss against the target texel and δ = 2 w (y − t) / batch_size;
// 4. backward, one layer at a time, last first: each thread puts its δ (layer outputs)
//    and its layer inputs into workgroup memory; the workgroup then computes
//    dW = Σ_samples δ ⊗ a and db = Σ_samples δ cooperatively (thread t owns the 4 × 4
//    weight blocks t, t + WORKGROUP_SIZE, …) and adds each sum to the gradient buffer with
//    one atomic per weight per workgroup; each thread then propagates its own δ through
//    Wᵀ and the activation slopes;
// 5. the δ of the 2F latent inputs is scattered to the 4 taps × F features of each grid
//    with one atomic add per value (when FLAG_LATENT_GRADIENTS).
// Each workgroup also writes its summed loss to wg_partials[workgroup] for reduce_loss.
//
// Workgroup memory: WORKGROUP_SIZE × (TILE_IN + 1 + TILE_OUT + 1) floats; the host picks
// the largest WORKGROUP_SIZE (≤ 64) that fits the adapter's limit.

#import "common/ntc_encoding.wgsl"
#import "common/ntc_mlp.wgsl"
#import "common/ntc_train.wgsl"

const WORKGROUP_SIZE: u32 = ${WORKGROUP_SIZE}u;
// Widest layer input and output.
const TILE_IN: u32 = max(NTC_INPUT_WIDTH, NTC_MAX_HIDDEN);
const TILE_OUT: u32 = max(NTC_MAX_HIDDEN, NTC_OUTPUTS);
// Row strides of the two workgroup tiles, one row per sample: one more than the row so
// that the threads of a warp writing "their" rows hit different memory banks, while the
// cooperative dW loop reads along rows (consecutive threads, consecutive columns).
const IN_STRIDE: u32 = TILE_IN + 1u;
const OUT_STRIDE: u32 = TILE_OUT + 1u;
// Channels measured by `evaluate` (texture::CHANNELS).
const CHANNELS: u32 = 12u;

// δ of the current layer's outputs, one row per sample of the workgroup.
var<workgroup> delta_tile: array<f32, WORKGROUP_SIZE * OUT_STRIDE>;
// The current layer's inputs, one row per sample; also the scratch of the loss and
// squared-error reductions.
var<workgroup> input_tile: array<f32, WORKGROUP_SIZE * IN_STRIDE>;

// This thread's δ of the current layer's outputs, and of its inputs while propagating.
var<private> delta: array<vec4f, TILE_IN / 4u>;
var<private> delta_in: array<vec4f, TILE_IN / 4u>;

fn ntc_weight(index: u32) -> f32 {
    return params[index];
}

// A sample's place in the latents: the two grids' taps and their first values.
struct Lookup {
    fine: NtcTaps,
    coarse: NtcTaps,
    // Latent value index (relative to the material) of feature 0 of each tap.
    fine_base: vec4u,
    coarse_base: vec4u,
}

// Latent values index .. index + 3 of the mip's material, with QAT noise when FLAG_QAT.
fn latent_values(entry: MipEntry, index: u32, noise_key: u32) -> vec4f {
    let at = entry.latent_base + index;
    var value = vec4f(params[at], params[at + 1u], params[at + 2u], params[at + 3u]);
    if (step_params.flags & FLAG_QAT) != 0u {
        let q = step_params.quant_step;
        value += vec4f(
            qat_noise(noise_key, index, q),
            qat_noise(noise_key, index + 1u, q),
            qat_noise(noise_key, index + 2u, q),
            qat_noise(noise_key, index + 3u, q),
        );
    }
    return value;
}

// Fills the input vector of texel `texel` of mip `entry` (cpu::forward's `input`) and
// returns where its latents are.
fn build_input(entry: MipEntry, texel: vec2u) -> Lookup {
    let u = (f32(texel.x) + 0.5) / f32(entry.width);
    let v = (f32(texel.y) + 0.5) / f32(entry.height);
    var lookup: Lookup;
    lookup.fine = ntc_bilinear_taps(u, v, entry.grids.fine_width, entry.grids.fine_height);
    lookup.coarse = ntc_bilinear_taps(u, v, entry.grids.coarse_width, entry.grids.coarse_height);
    lookup.fine_base = entry.grids.fine_offset + lookup.fine.texel * NTC_FEATURES;
    lookup.coarse_base = entry.grids.coarse_offset + lookup.coarse.texel * NTC_FEATURES;
    let noise_key = qat_noise_key(step_params.noise_seed, step_params.step, entry.material);
    for (var f = 0u; f < NTC_FEATURES / 4u; f++) {
        var fine = vec4f(0.0);
        var coarse = vec4f(0.0);
        for (var t = 0u; t < 4u; t++) {
            fine += lookup.fine.weight[t] * latent_values(entry, lookup.fine_base[t] + 4u * f, noise_key);
            coarse += lookup.coarse.weight[t] * latent_values(entry, lookup.coarse_base[t] + 4u * f, noise_key);
        }
        ntc_state.values[f] = fine;
        ntc_state.values[NTC_FEATURES / 4u + f] = coarse;
    }
    let mip_size = vec2u(entry.width, entry.height);
    let coarse_size = vec2u(entry.grids.coarse_width, entry.grids.coarse_height);
    for (var w = 0u; w < NTC_PE_WAVES; w++) {
        ntc_state.values[NTC_FEATURES / 2u + w] = ntc_positional_encoding(texel, mip_size, coarse_size, w);
    }
    ntc_state.values[NTC_FEATURES / 2u + NTC_PE_WAVES] = vec4f(entry.lod, 0.0, 0.0, 0.0);
    return lookup;
}

// Sum of input_tile[j · stride + offset] over the workgroup's rows (thread 0 only).
fn sum_rows(stride: u32, offset: u32) -> f32 {
    var sum = 0.0;
    for (var j = 0u; j < WORKGROUP_SIZE; j++) {
        sum += input_tile[j * stride + offset];
    }
    return sum;
}

// Adds v to gradients at, at + stride, at + 2 stride, at + 3 stride.
fn grad_add4(at: u32, stride: u32, v: vec4f) {
    grad_add(at, v.x);
    grad_add(at + stride, v.y);
    grad_add(at + 2u * stride, v.z);
    grad_add(at + 3u * stride, v.w);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn forward_backward(invocation: TrainInvocation) {
    let group = linear_workgroup(invocation);
    let local = invocation.local;
    let index = group * WORKGROUP_SIZE + local;
    let valid = index < step_params.batch_size;
    var lookup: Lookup;
    var entry: MipEntry;
    var loss = 0.0;
    if valid {
        let sample = batch[index];
        let entry_index = min(sample.x, arrayLength(&mips) - 1u);
        entry = mips[entry_index];
        let texel = vec2u(min(sample.y & 0xffffu, entry.width - 1u), min(sample.y >> 16u, entry.height - 1u));
        lookup = build_input(entry, texel);
        ntc_forward();
        let target_texel = entry.texel_start + texel.y * entry.width + texel.x;
        for (var c = 0u; c < NTC_OUTPUTS / 4u; c++) {
            var t = vec4f(0.0);
            if c < CHANNELS / 4u {
                t = target_channels(target_texel, c);
            }
            let w = mips[entry_index].loss_weights[c];
            let e = ntc_state.outputs[c] - t;
            loss += dot(w * e, e);
            delta[c] = 2.0 * w * e * step_params.inv_batch;
        }
    }

    input_tile[local] = loss;
    workgroupBarrier();
    if local == 0u && group < step_params.loss_groups {
        wg_partials[group] = sum_rows(1u, 0u);
    }
    workgroupBarrier();

    var params_end = step_params.decoder_count;
    for (var k = 0u; k < NTC_LAYERS; k++) {
        let layer = NTC_LAYERS - 1u - k;
        let n_in = ntc_layer_inputs(layer);
        let n_out = ntc_layer_outputs(layer);
        let in4 = n_in / 4u;
        let biases = params_end - n_out;
        let weights = biases - n_in * n_out;
        params_end = weights;
        let input = ntc_layer_input_offset(layer);
        for (var o = 0u; o < n_out / 4u; o++) {
            let d = delta[o];
            let at = local * OUT_STRIDE + 4u * o;
            delta_tile[at] = d.x;
            delta_tile[at + 1u] = d.y;
            delta_tile[at + 2u] = d.z;
            delta_tile[at + 3u] = d.w;
        }
        for (var i = 0u; i < in4; i++) {
            let a = ntc_state.values[input + i];
            let at = local * IN_STRIDE + 4u * i;
            input_tile[at] = a.x;
            input_tile[at + 1u] = a.y;
            input_tile[at + 2u] = a.z;
            input_tile[at + 3u] = a.w;
        }
        workgroupBarrier();

        // dW in 4 × 4 blocks: outputs 4·ob .. 4·ob + 3 and inputs ib + m · in4 (m < 4), so
        // that neighbouring threads read neighbouring columns of the input tile.
        for (var b = local; b < n_out * in4 / 4u; b += WORKGROUP_SIZE) {
            let ob = b / in4;
            let ib = b - ob * in4;
            var g0 = vec4f(0.0);
            var g1 = vec4f(0.0);
            var g2 = vec4f(0.0);
            var g3 = vec4f(0.0);
            for (var j = 0u; j < WORKGROUP_SIZE; j++) {
                let d_at = j * OUT_STRIDE + 4u * ob;
                let a_at = j * IN_STRIDE + ib;
                let a = vec4f(input_tile[a_at], input_tile[a_at + in4], input_tile[a_at + 2u * in4], input_tile[a_at + 3u * in4]);
                g0 += delta_tile[d_at] * a;
                g1 += delta_tile[d_at + 1u] * a;
                g2 += delta_tile[d_at + 2u] * a;
                g3 += delta_tile[d_at + 3u] * a;
            }
            let row = weights + 4u * ob * n_in + ib;
            grad_add4(row, in4, g0);
            grad_add4(row + n_in, in4, g1);
            grad_add4(row + 2u * n_in, in4, g2);
            grad_add4(row + 3u * n_in, in4, g3);
        }
        for (var o = local; o < n_out; o += WORKGROUP_SIZE) {
            var sum = 0.0;
            for (var j = 0u; j < WORKGROUP_SIZE; j++) {
                sum += delta_tile[j * OUT_STRIDE + o];
            }
            grad_add(biases + o, sum);
        }

        // δ of this layer's inputs: all of them for a hidden layer, the 2F latent
        // features for the first layer (the others feed no parameter).
        let n_prop = select(in4, NTC_FEATURES / 2u, layer == 0u);
        for (var i = 0u; i < n_prop; i++) {
            var sum = vec4f(0.0);
            for (var o = 0u; o < n_out / 4u; o++) {
                let d = delta[o];
                let at = weights + 4u * o * n_in + 4u * i;
                sum += ntc_weights4(at) * d.x + ntc_weights4(at + n_in) * d.y
                    + ntc_weights4(at + 2u * n_in) * d.z + ntc_weights4(at + 3u * n_in) * d.w;
            }
            if layer > 0u {
                sum *= ntc_state.slopes[input - NTC_INPUT_WIDTH / 4u + i];
            }
            delta_in[i] = sum;
        }
        for (var i = 0u; i < n_prop; i++) {
            delta[i] = delta_in[i];
        }
        workgroupBarrier();
    }

    if valid && (step_params.flags & FLAG_LATENT_GRADIENTS) != 0u {
        for (var t = 0u; t < 4u; t++) {
            let fine = entry.latent_base + lookup.fine_base[t];
            let coarse = entry.latent_base + lookup.coarse_base[t];
            for (var f = 0u; f < NTC_FEATURES / 4u; f++) {
                grad_add4(fine + 4u * f, 1u, lookup.fine.weight[t] * delta[f]);
                grad_add4(coarse + 4u * f, 1u, lookup.coarse.weight[t] * delta[NTC_FEATURES / 4u + f]);
            }
        }
    }
}

// Squared errors of a whole mip (entry step_params.eval_entry) against its targets, outputs
// clamped to [0, 1] as in Quality::measure, without QAT noise. Each thread loops over
// texels with the grid's stride; each workgroup writes its per-channel sums to
// wg_partials[workgroup · CHANNELS + c].
@compute @workgroup_size(WORKGROUP_SIZE)
fn evaluate(invocation: TrainInvocation) {
    let group = linear_workgroup(invocation);
    let local = invocation.local;
    let threads = invocation.workgroups.x * invocation.workgroups.y * WORKGROUP_SIZE;
    let entry = mips[min(step_params.eval_entry, arrayLength(&mips) - 1u)];
    let texels = entry.width * entry.height;
    var sums: array<vec4f, CHANNELS / 4u>;
    for (var i = group * WORKGROUP_SIZE + local; i < texels; i += threads) {
        _ = build_input(entry, vec2u(i % entry.width, i / entry.width));
        ntc_forward();
        for (var c = 0u; c < CHANNELS / 4u; c++) {
            let e = clamp(ntc_state.outputs[c], vec4f(0.0), vec4f(1.0)) - target_channels(entry.texel_start + i, c);
            sums[c] += e * e;
        }
    }
    for (var c = 0u; c < CHANNELS; c++) {
        input_tile[local * CHANNELS + c] = sums[c / 4u][c % 4u];
    }
    workgroupBarrier();
    for (var c = local; c < CHANNELS; c += WORKGROUP_SIZE) {
        wg_partials[group * CHANNELS + c] = sum_rows(CHANNELS, c);
    }
}
