// What every NTC training kernel shares: the per-step parameters, the group's mip table,
// the one bind group all kernels use, batch sampling, gradient accumulation and small
// helpers. Mirrored in src/ntc/train/gpu.rs (StepParams, MipEntry, the binding table); a
// unit test there checks the struct sizes against this file.
//
// Defines:
//   FIXED_POINT_GRADIENTS  (flag) accumulate gradients in atomic<i32> fixed point instead
//                          of atomic<f32> (SHADER_FLOAT32_ATOMIC)
//   GRAD_SCALE_DECODER     fixed-point scale of decoder gradients (f32 literal)
//   GRAD_SCALE_LATENTS     fixed-point scale of latent gradients (f32 literal)
//   NTC_MIXED              (flag) the mixed-precision trainer's bindings 9 and 10 (f16
//                          decoder weights, per-workgroup decoder gradients); the importer
//                          enables f16

#import "common/ntc_encoding.wgsl"

// Per-step parameters; one 256-byte-aligned slot per step, bound with a dynamic offset.
struct StepParams {
    // Global step index (QAT noise and batch sampling hash it).
    step: u32,
    // Samples in the batch.
    batch_size: u32,
    // FLAG_* bits.
    flags: u32,
    // Seed of the QAT noise (cpu::qat_noise's `seed`).
    noise_seed: u32,
    // Seed of the batch sampling hash.
    sample_seed: u32,
    // Entries in `mips`.
    entry_count: u32,
    // Texels of all mips of all materials (the sampling range).
    total_texels: u32,
    // Slot of `losses` that this step's mean loss goes to.
    loss_slot: u32,
    // Workgroups of forward_backward this step (entries of `wg_partials` to reduce).
    loss_groups: u32,
    // Decoder parameters: `params[0 .. decoder_count]`; latents follow.
    decoder_count: u32,
    // Parameters Adam updates this step: `params[0 .. update_count]`.
    update_count: u32,
    // Entry of `mips` that `evaluate` decodes.
    eval_entry: u32,
    // 1 / batch_size.
    inv_batch: f32,
    // Latent quantisation step q (QAT noise is uniform in [-q/2, q/2)).
    quant_step: f32,
    // Adam's β1, β2, 1 − β1, 1 − β2 (rounded from f64, not computed in f32) and ε.
    beta1: f32,
    beta2: f32,
    one_minus_beta1: f32,
    one_minus_beta2: f32,
    epsilon: f32,
    // Decoder block: learning rate (λ included) and the bias corrections 1 − β^t.
    lr_decoder: f32,
    bc1_decoder: f32,
    bc2_decoder: f32,
    // Latent block: learning rate and bias corrections (clamped to [-1, 1] after the step).
    lr_latents: f32,
    bc1_latents: f32,
    bc2_latents: f32,
    // Mixed-precision trainer: chunks of TRAIN_ROWS samples per workgroup of train_step.
    train_chunks: u32,
    // Mixed-precision trainer: workgroups of the step's train_step whose decoder gradients
    // (dw_partials) Adam sums; 0 when there are none to apply.
    partial_count: u32,
    // Side T of the batch's sample tiles (TrainConfig::sample_tile, ≥ 1).
    sample_tile: u32,
}

// Add QAT noise to the latents this step.
const FLAG_QAT: u32 = 1u;
// Scatter latent gradients (off while fine-tuning, when only the decoder learns).
const FLAG_LATENT_GRADIENTS: u32 = 2u;
// Mixed-precision trainer: read the samples from `batch` instead of drawing them.
const FLAG_GIVEN_BATCH: u32 = 4u;

// One colour mip of one material: where its targets and latents are, its grid pair and
// loss weights.
struct MipEntry {
    width: u32,
    height: u32,
    // First texel of the mip in `targets` and in the group's sampling order (entries in
    // order, each row-major): the entry covers [texel_start, texel_start + width · height).
    texel_start: u32,
    material: u32,
    // Index in `params` of the material's first latent value.
    latent_base: u32,
    // Grid pair: offsets in latent values, relative to latent_base.
    grids: NtcGridPair,
    // model::lod_input of this mip.
    lod: f32,
    // Loss weight of every decoder output (LossWeights::per_output of the set's mask).
    loss_weights: array<vec4f, 4>,
}

@group(0) @binding(0) var<uniform> step_params: StepParams;
@group(0) @binding(1) var<storage, read> mips: array<MipEntry>;
// Target texels of all mips of all materials, 12 bytes (3 words) per texel, channel c in
// byte c % 4 of word c / 4.
@group(0) @binding(2) var<storage, read> targets: array<u32>;
// Decoder parameters, then the latents of every material.
@group(0) @binding(3) var<storage, read_write> params: array<f32>;
// Gradients of the mean batch loss, laid out like `params`.
#ifdef FIXED_POINT_GRADIENTS
@group(0) @binding(4) var<storage, read_write> grads: array<atomic<i32>>;
#else
@group(0) @binding(4) var<storage, read_write> grads: array<atomic<f32>>;
#endif
// Adam's (m, v) per parameter.
@group(0) @binding(5) var<storage, read_write> moments: array<vec2f>;
// Samples: (entry of `mips`, x | y << 16).
@group(0) @binding(6) var<storage, read_write> batch: array<vec2u>;
// Per-workgroup partial sums (losses, or per-channel squared errors of `evaluate`).
@group(0) @binding(7) var<storage, read_write> wg_partials: array<f32>;
// Mean batch loss of every step.
@group(0) @binding(8) var<storage, read_write> losses: array<f32>;

#ifdef NTC_MIXED
// The decoder's parameters rounded to f16 (the operands of train_step's products),
// written by Adam after every update.
@group(0) @binding(9) var<storage, read_write> weights16: array<f16>;
// Decoder gradients per workgroup of train_step, laid out like the decoder's parameters
// (workgroup w at w · decoder_count), in units of DELTA_SCALE times the summed per-sample
// gradient; Adam adds the first partial_count of them in order.
@group(0) @binding(10) var<storage, read_write> dw_partials: array<f32>;
#endif
// Lazy latent Adam (adam.wgsl): per latent texel (NTC_FEATURES consecutive latent values
// from params[decoder_count]), the main step its values and moments are current at.
@group(0) @binding(11) var<storage, read_write> latent_steps: array<atomic<u32>>;
// Lazy latent Adam: per main step s, the latent block's (learning rate, 1 − β1^t,
// 1 − β2^t, unused) of that step, as its StepParams held them.
@group(0) @binding(12) var<storage, read> latent_rates: array<vec4f>;

// Target channels 4c .. 4c + 3 of texel `texel` as byte / 255.
fn target_channels(texel: u32, c: u32) -> vec4f {
    let word = targets[3u * texel + c];
    return vec4f((vec4u(word) >> vec4u(0u, 8u, 16u, 24u)) & vec4u(0xffu)) * (1.0 / 255.0);
}

// Adds `value` to gradient `index` (decoder block when index < decoder_count).
fn grad_add(index: u32, value: f32) {
#ifdef FIXED_POINT_GRADIENTS
    let scale = select(${GRAD_SCALE_LATENTS}, ${GRAD_SCALE_DECODER}, index < step_params.decoder_count);
    atomicAdd(&grads[index], i32(round(value * scale)));
#else
    atomicAdd(&grads[index], value);
#endif
}

// Reads gradient `index` and resets it to 0.
fn grad_take(index: u32) -> f32 {
#ifdef FIXED_POINT_GRADIENTS
    let scale = select(${GRAD_SCALE_LATENTS}, ${GRAD_SCALE_DECODER}, index < step_params.decoder_count);
    let value = f32(atomicLoad(&grads[index])) / scale;
    atomicStore(&grads[index], 0);
#else
    let value = atomicLoad(&grads[index]);
    atomicStore(&grads[index], 0.0);
#endif
    return value;
}

// High 32 bits of the 64-bit product a · b, from 16-bit halves (WGSL has no u64).
fn mul_hi(a: u32, b: u32) -> u32 {
    let a_lo = a & 0xffffu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xffffu;
    let b_hi = b >> 16u;
    let lo_hi = a_lo * b_hi;
    let hi_lo = a_hi * b_lo;
    // < 2^16 + 2^16 + (2^16 − 1)^2 < 2^32: no overflow.
    let cross = ((a_lo * b_lo) >> 16u) + (hi_lo & 0xffffu) + lo_hi;
    return a_hi * b_hi + (hi_lo >> 16u) + (cross >> 16u);
}

// Sample `index` of the step's batch as (entry of `mips`, x | y << 16), drawn in tiles of
// T × T texels (T = sample_tile): sample `index` is texel `index % T²` (row by row) of tile
// `index / T²`, whose anchor is a texel uniform over all texels of all colour mips of all
// materials (a material in proportion to the texel count of its mip chain, a mip in
// proportion to its area); the tile covers the T × T texels from the anchor, wrapping at the
// mip's edges, so every sample is uniform too. h = pcg(tile ^ pcg(step ^ pcg(sample_seed)));
// the anchor is the high 32 bits of h · total_texels (every texel gets ⌊2^32 / total⌋ or one
// more of the 2^32 hash values, a bias below total / 2^32). With T = 1 the tile is the sample.
// Needs entry_count > 0.
fn draw_sample(index: u32) -> vec2u {
    let side = max(step_params.sample_tile, 1u);
    let tile = index / (side * side);
    let within = index % (side * side);
    let h = pcg_hash(tile ^ pcg_hash(step_params.step ^ pcg_hash(step_params.sample_seed)));
    let texel = mul_hi(h, step_params.total_texels);
    // Largest entry whose first texel is ≤ texel (texel_start increases with the entry).
    var lo = 0u;
    var hi = step_params.entry_count;
    while hi - lo > 1u {
        let mid = (lo + hi) / 2u;
        if mips[mid].texel_start <= texel {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let entry = mips[lo];
    let anchor = min(texel - entry.texel_start, entry.width * entry.height - 1u);
    let x = (anchor % entry.width + within % side) % entry.width;
    let y = (anchor / entry.width + within / side) % entry.height;
    return vec2u(lo, x | (y << 16u));
}

// A batch row without a sample (past the end of the batch, or no entries).
const NO_ENTRY: u32 = 0xffffffffu;

// Row `index` of the step's batch as (entry of `mips` or NO_ENTRY, x | y << 16): read from
// `batch` with FLAG_GIVEN_BATCH, else drawn (draw_sample).
fn step_row(index: u32) -> vec2u {
    var row = vec2u(NO_ENTRY, 0u);
    if index < step_params.batch_size && step_params.entry_count > 0u {
        if (step_params.flags & FLAG_GIVEN_BATCH) != 0u {
            row = batch[index];
            row.x = min(row.x, step_params.entry_count - 1u);
        } else {
            row = draw_sample(index);
        }
    }
    return row;
}

// The texel of a row's sample, clamped into its mip.
fn row_texel(row: vec2u, entry: MipEntry) -> vec2u {
    return vec2u(min(row.y & 0xffffu, entry.width - 1u), min(row.y >> 16u, entry.height - 1u));
}

// The bilinear taps of the fine (`coarse` false) or coarse grid of a row's sample.
fn grid_taps(entry: MipEntry, texel: vec2u, coarse: bool) -> NtcTaps {
    let u = (f32(texel.x) + 0.5) / f32(entry.width);
    let v = (f32(texel.y) + 0.5) / f32(entry.height);
    if coarse {
        return ntc_bilinear_taps(u, v, entry.grids.coarse_width, entry.grids.coarse_height);
    }
    return ntc_bilinear_taps(u, v, entry.grids.fine_width, entry.grids.fine_height);
}

// The ids every training kernel's entry point takes (its only argument, but for
// train_step's subgroup ids).
struct TrainInvocation {
    @builtin(workgroup_id) workgroup: vec3u,
    @builtin(num_workgroups) workgroups: vec3u,
    @builtin(local_invocation_index) local: u32,
}

// The linear index of the invocation's workgroup in a 2D dispatch (x first), so that more
// than 65535 workgroups fit one dispatch.
fn linear_workgroup(invocation: TrainInvocation) -> u32 {
    return invocation.workgroup.x + invocation.workgroup.y * invocation.workgroups.x;
}
