// defines: NTC_PE_WAVES=3, NTC_HIDDEN_2=0, NTC_HIDDEN_3=0, NTC_LEAKY_SLOPE=0.01, GRAD_SCALE_DECODER=16777216.0, GRAD_SCALE_LATENTS=67108864.0, NTC_MIXED, TRAIN_THREADS=512, DELTA_SCALE=16.0
// variants: - | FIXED_POINT_GRADIENTS
// variants: - | NTC_LEAKY_RELU
// variants: - | TRAIN_COOP
// variants: NTC_FEATURES=4, NTC_INPUT_WIDTH=32, NTC_LAYERS=2, NTC_HIDDEN_0=16, NTC_HIDDEN_1=0, TRAIN_ROWS=32 | NTC_FEATURES=16, NTC_INPUT_WIDTH=48, NTC_LAYERS=3, NTC_HIDDEN_0=64, NTC_HIDDEN_1=64, TRAIN_ROWS=64
//
// NTC training, mixed-precision trainer, kernel 1 of 2 (adam.wgsl with NTC_MIXED is the
// other): everything of a step but the update. Each workgroup takes `train_chunks` chunks
// of TRAIN_ROWS consecutive samples of the batch; per chunk:
// 1. the samples: drawn with draw_sample (the f32 trainer's batch, bit for bit), or read
//    from `batch` with FLAG_GIVEN_BATCH;
// 2. the input matrix X (TRAIN_ROWS × NTC_INPUT_WIDTH, f16, one row per sample): both grids
//    of the mip's pair bilinearly sampled in f32 with QAT noise (cpu::forward, cpu::qat_noise),
//    the positional encoding, the LOD input, zero padding;
// 3. forward, layer by layer, every output column at once: Z = A · Wᵀ with f16 operands
//    (`weights16`, Adam's f16 copy of the decoder) and f32 accumulation into `stage`, then
//    per element + bias (f32), activation → next A (f16) and act'(z) (f16);
// 4. at the output: weighted L2 loss against the target (f32) and the output δ, stored in
//    f16 as DELTA_SCALE · 2 w (y − t) — the per-sample gradient, scaled: the batch-mean
//    gradient (÷ 65536 at the usual batch) would fall below f16's normal range;
// 5. backward, last layer first: dW += δᵀ · A into the workgroup's slice of `dw_partials`
//    (f32; the first chunk stores, later ones add), the chunk's Σ δ over its rows into
//    `loss_scratch` (the biases' gradients, added to the slice after the next barrier), and
//    the inputs' δ = (δ · W) ⊙ act'(z) (f16 operands, f32 accumulation, every column at
//    once, stored in place of act'(z)); for the first layer only the 2F latent inputs' δ,
//    scattered to the 4 taps × F features of each grid with one atomic add per value
//    (FLAG_LATENT_GRADIENTS; f32 or fixed point, ntc_train.wgsl), times
//    1 / (batch_size · DELTA_SCALE).
// So a chunk has two workgroup barriers per layer and direction: one after the layer's
// products, one after the per-element phase that reads them. The latent gathers and scatters
// run one thread per (row, grid, 4 features): the taps are computed once and the thread's
// 16 loads (or atomics) are independent, so they are in flight together.
// Each workgroup also writes its summed loss to wg_partials[workgroup]; Adam reduces the
// losses and the decoder partials in a fixed order, so with fixed-point atomics a step is
// deterministic (the products too: the same operands give the same sums).
//
// The matrix products are the only difference between the variants:
// - TRAIN_COOP: 16×16×16 f16 cooperative matrices with f32 accumulators, one subgroup per
//   16×16 tile of the product (forward, δ) or of dW, and the bias sums as δᵀ · 1 (a tile
//   of ones: 16 equal columns per 16 outputs); needs every hidden width a multiple of 16
//   and TRAIN_ROWS a multiple of 16;
// - default ("f16"): the same products with one thread per output element, f16 operands
//   widened to f32 (exact) and summed in f32, and the bias sums one thread per output,
//   for adapters with SHADER_F16 but without cooperative matrices (lavapipe).
//
// Workgroup memory (host: gpu::mixed_workgroup_bytes): `act`, TRAIN_ROWS × (NTC_INPUT_WIDTH
// + 2 · Σ hidden + 16) f16 — X, every hidden layer's A, every hidden layer's act'(z) (then
// its δ), the output δ, each row-major with its width as stride; `stage`, TRAIN_ROWS ×
// STAGE_COLS f32 (a whole layer's product); the rows' samples; `loss_scratch`, the bias
// sums during the chunks and the loss reduction after them; with TRAIN_COOP a 16×16 f16
// tile of ones. The host picks the largest TRAIN_ROWS of 64, 48, 32, 16 that fits the adapter's limit.

enable f16;
#ifdef TRAIN_COOP
enable wgpu_cooperative_matrix;
#endif

#import "common/ntc_encoding.wgsl"
#import "common/ntc_layers.wgsl"
#import "common/ntc_train.wgsl"
#import "common/ntc_loss.wgsl"

const ROWS: u32 = ${TRAIN_ROWS}u;
const THREADS: u32 = ${TRAIN_THREADS}u;
// The workgroup's loss sum (common/ntc_loss.wgsl).
const LOSS_THREADS: u32 = THREADS;
// Floats of `loss_scratch` per output of a layer in a chunk's bias sums: a row of the tile
// δᵀ · 1 with TRAIN_COOP (only its first column is read), else the sum.
#ifdef TRAIN_COOP
const BIAS_STRIDE: u32 = 16u;
#else
const BIAS_STRIDE: u32 = 1u;
#endif
// The bias sums share the loss sum's scratch: a layer's outputs in whole 16-blocks.
const LOSS_SCRATCH: u32 = max(LOSS_THREADS, (max(NTC_MAX_HIDDEN, NTC_OUTPUTS) + 15u) / 16u * 16u * BIAS_STRIDE);
const DELTA_SCALE: f32 = ${DELTA_SCALE};
// Inputs 0 .. LATENT_INPUTS are the two grids' features; the PE follows, then the LOD.
const LATENT_INPUTS: u32 = 2u * NTC_FEATURES;
// Groups of 4 features of a grid texel (NTC_FEATURES is a multiple of 4).
const QUADS: u32 = NTC_FEATURES / 4u;
// Columns of `stage`: the widest product, a layer's outputs (a hidden width or the 16
// outputs) or the latent inputs' δ, each in whole 16-column blocks.
const STAGE_COLS: u32 = max(max((NTC_MAX_HIDDEN + 15u) / 16u * 16u, NTC_OUTPUTS), (LATENT_INPUTS + 15u) / 16u * 16u);
const LOD_INPUT: u32 = LATENT_INPUTS + 4u * NTC_PE_WAVES;
// f16 values per row of `act`.
const ROW_HALVES: u32 = NTC_INPUT_WIDTH + 2u * NTC_HIDDEN_TOTAL + NTC_OUTPUTS;

var<workgroup> act: array<f16, ROWS * ROW_HALVES>;
var<workgroup> stage: array<f32, ROWS * STAGE_COLS>;
// The chunk's samples: (entry of `mips` or NO_ENTRY, x | y << 16).
var<workgroup> rows: array<vec2u, ROWS>;
// 1 while the workgroup works on its first chunk (whose gradients are stored, not added).
var<workgroup> chunk_first: u32;
#ifdef TRAIN_COOP
// The B operand of the bias sums: 16 × 16 ones.
var<workgroup> ones: array<f16, 256>;
#endif

// Which thread of the workgroup this is; the subgroup fields are used by TRAIN_COOP only.
struct Ids {
    thread: u32,
    subgroup: u32,
    subgroups: u32,
}

// Σ of the hidden widths of the layers before `layer`'s input (NTC_WIDTHS[1 .. layer]).
fn hidden_before(layer: u32) -> u32 {
    var sum = 0u;
    for (var l = 1u; l < layer; l++) {
        sum += NTC_WIDTHS[l];
    }
    return sum;
}

// First value in `act` of the input matrix of `layer` (X for layer 0, else the previous
// layer's activations); its row stride is ntc_layer_inputs(layer).
fn input_region(layer: u32) -> u32 {
    if layer == 0u {
        return 0u;
    }
    return ROWS * (NTC_INPUT_WIDTH + hidden_before(layer));
}

// First value in `act` of act'(z) of `layer`'s inputs (layer ≥ 1), later their δ.
fn slope_region(layer: u32) -> u32 {
    return ROWS * (NTC_INPUT_WIDTH + NTC_HIDDEN_TOTAL + hidden_before(layer));
}

// First value in `act` of the δ of `layer`'s outputs (row stride ntc_layer_outputs).
fn delta_region(layer: u32) -> u32 {
    if layer + 1u < NTC_LAYERS {
        return slope_region(layer + 1u);
    }
    return ROWS * (NTC_INPUT_WIDTH + 2u * NTC_HIDDEN_TOTAL);
}

// Whether the current chunk is the workgroup's first, as a uniform value (the
// cooperative-matrix loads that add to the stored sums must be in uniform control flow,
// and naga counts function arguments as non-uniform).
fn first_chunk() -> bool {
    return workgroupUniformLoad(&chunk_first) != 0u;
}

// The samples of the chunk starting at batch index `first`.
fn load_rows(first: u32, thread: u32) {
    for (var r = thread; r < ROWS; r += THREADS) {
        rows[r] = step_row(first + r);
    }
}

// The input matrix X of the chunk's rows (zeros for rows without a sample).
fn build_inputs(thread: u32) {
    // The grids' features, one thread per (row, grid, 4 features).
    for (var e = thread; e < ROWS * 2u * QUADS; e += THREADS) {
        let r = e / (2u * QUADS);
        let coarse = (e / QUADS) % 2u == 1u;
        let first = 4u * (e % QUADS);
        let row = rows[r];
        var value = vec4f(0.0);
        if row.x != NO_ENTRY {
            let entry = mips[row.x];
            let taps = grid_taps(entry, row_texel(row, entry), coarse);
            let base = select(entry.grids.fine_offset, entry.grids.coarse_offset, coarse) + first;
            let key = qat_noise_key(step_params.noise_seed, step_params.step, entry.material);
            for (var t = 0u; t < 4u; t++) {
                for (var j = 0u; j < 4u; j++) {
                    let index = base + taps.texel[t] * NTC_FEATURES + j;
                    var latent = params[entry.latent_base + index];
                    if (step_params.flags & FLAG_QAT) != 0u {
                        latent += qat_noise(key, index, step_params.quant_step);
                    }
                    value[j] += taps.weight[t] * latent;
                }
            }
        }
        let at = r * NTC_INPUT_WIDTH + select(0u, NTC_FEATURES, coarse) + first;
        for (var j = 0u; j < 4u; j++) {
            act[at + j] = f16(value[j]);
        }
    }
    // The positional encoding, the LOD input and the zero padding.
    let rest = NTC_INPUT_WIDTH - LATENT_INPUTS;
    for (var e = thread; e < ROWS * rest; e += THREADS) {
        let r = e / rest;
        let i = LATENT_INPUTS + e % rest;
        let row = rows[r];
        var value = 0.0;
        if row.x != NO_ENTRY {
            let entry = mips[row.x];
            if i < LOD_INPUT {
                let j = i - LATENT_INPUTS;
                let pe = ntc_positional_encoding(
                    row_texel(row, entry),
                    vec2u(entry.width, entry.height),
                    vec2u(entry.grids.coarse_width, entry.grids.coarse_height),
                    j / 4u,
                );
                value = pe[j % 4u];
            } else if i == LOD_INPUT {
                value = entry.lod;
            }
        }
        act[r * NTC_INPUT_WIDTH + i] = f16(value);
    }
}

#ifdef TRAIN_COOP
// stage[.., 0 .. n_cols] (ROWS × n_cols, n_cols a multiple of 16) = M · B, one 16×16 tile
// per subgroup at a time: M (ROWS × k_len) at `m` in `act` (row stride k_len); B (k_len ×
// n_cols) in weights16, the 16 × 16 block at rows k .. k + 16 and columns c .. c + 16 at
// b + k · k_step + c · c_step, of stride n_in, read column-major by product_0 and row-major
// by product_1. The layout is a constant of each copy (#for), because cooperative-matrix
// loads need uniform control flow and naga counts function arguments as non-uniform.
#for ROW_MAJOR in 0..2
fn product_${ROW_MAJOR}(
    m: u32, k_len: u32, n_cols: u32, b: u32, k_step: u32, c_step: u32, n_in: u32, ids: Ids,
) {
    let col_blocks = n_cols / 16u;
    for (var t = ids.subgroup; t < (ROWS / 16u) * col_blocks; t += ids.subgroups) {
        let rb = t / col_blocks;
        let c = 16u * (t % col_blocks);
        var acc = coop_mat16x16<f32, C>();
        for (var k = 0u; k < k_len; k += 16u) {
            let a = coopLoadT<coop_mat16x16<f16, A>>(&act[m + rb * 16u * k_len + k], k_len);
            var w: coop_mat16x16<f16, B>;
            if ${ROW_MAJOR}u == 1u {
                w = coopLoadT<coop_mat16x16<f16, B>>(&weights16[b + k * k_step + c * c_step], n_in);
            } else {
                w = coopLoad<coop_mat16x16<f16, B>>(&weights16[b + k * k_step + c * c_step], n_in);
            }
            acc = coopMultiplyAdd(a, w, acc);
        }
        // coopStore operands must be values (naga 30; see common/ntc_decode.wgsl).
        let result = acc;
        coopStoreT(result, &stage[rb * 16u * STAGE_COLS + c], STAGE_COLS);
    }
}
#endfor

// stage (ROWS × n_out) = A · Wᵀ for a layer: A at `x` in `act` (row stride n_in), W
// (row-major [out][in]) from parameter `w` of weights16. Wᵀ's column n is W's row n: a
// column-major B operand of stride n_in.
fn product_forward(x: u32, n_in: u32, n_out: u32, w: u32, ids: Ids) {
    product_0(x, n_in, n_out, w, 1u, n_in, n_in, ids);
}

// stage (ROWS × n_cols) = δ · W for a layer's first n_cols inputs (a multiple of 16, at
// most n_in): δ at `d` in `act` (row stride n_out), W row-major [out][in] (a row-major B
// operand of stride n_in).
fn product_backward(d: u32, n_in: u32, n_out: u32, n_cols: u32, w: u32, ids: Ids) {
    product_1(d, n_out, n_cols, w, n_in, 1u, n_in, ids);
}

// dw_partials[at ..] (row-major [n_out][n_in]) += δᵀ · A over the chunk's rows, one 16×16
// tile per subgroup at a time: δᵀ is δ (row stride n_out) read column-major, A is read
// row-major. The first chunk starts from zero instead of the stored sums.
fn accumulate_weights(d: u32, x: u32, n_in: u32, n_out: u32, at: u32, ids: Ids) {
    let first = first_chunk();
    let in_blocks = n_in / 16u;
    for (var t = ids.subgroup; t < (n_out / 16u) * in_blocks; t += ids.subgroups) {
        let ob = t / in_blocks;
        let ib = t % in_blocks;
        let tile = at + ob * 16u * n_in + ib * 16u;
        var acc = coop_mat16x16<f32, C>();
        if !first {
            acc = coopLoadT<coop_mat16x16<f32, C>>(&dw_partials[tile], n_in);
        }
        for (var k = 0u; k < ROWS; k += 16u) {
            let a = coopLoad<coop_mat16x16<f16, A>>(&act[d + k * n_out + ob * 16u], n_out);
            let b = coopLoadT<coop_mat16x16<f16, B>>(&act[x + k * n_in + ib * 16u], n_in);
            acc = coopMultiplyAdd(a, b, acc);
        }
        let result = acc;
        coopStoreT(result, &dw_partials[tile], n_in);
    }
}

// loss_scratch[o · BIAS_STRIDE] = Σ over the chunk's rows of δ[row][o] for the n_out
// outputs (δ at `d` in `act`, row stride n_out): δᵀ · 1, one 16-output tile per subgroup,
// the first to the subgroup after the one that took accumulate_weights' last tile of the
// layer (n_in inputs), so that subgroups with one tile fewer take them.
fn sum_biases(d: u32, n_in: u32, n_out: u32, ids: Ids) {
    let dw_tiles = (n_out / 16u) * (n_in / 16u);
    let start = (ids.subgroup + ids.subgroups - dw_tiles % ids.subgroups) % ids.subgroups;
    for (var ob = start; ob < n_out / 16u; ob += ids.subgroups) {
        let b = coopLoad<coop_mat16x16<f16, B>>(&ones[0], 16u);
        var acc = coop_mat16x16<f32, C>();
        for (var k = 0u; k < ROWS; k += 16u) {
            let a = coopLoad<coop_mat16x16<f16, A>>(&act[d + k * n_out + ob * 16u], n_out);
            acc = coopMultiplyAdd(a, b, acc);
        }
        let result = acc;
        coopStoreT(result, &loss_scratch[ob * 16u * BIAS_STRIDE], BIAS_STRIDE);
    }
}
#else
// stage[.., 0 .. n_cols] = M · B, one thread per element: M (ROWS × k_len) at `m` in `act`
// (row stride k_len), B[k][c] = weights16[b + k · k_step + c · c_step]; f16 operands
// widened to f32, summed over k in order.
fn product(m: u32, k_len: u32, n_cols: u32, b: u32, k_step: u32, c_step: u32, ids: Ids) {
    for (var e = ids.thread; e < ROWS * n_cols; e += THREADS) {
        let r = e / n_cols;
        let c = e % n_cols;
        var sum = 0.0;
        for (var k = 0u; k < k_len; k++) {
            sum += f32(act[m + r * k_len + k]) * f32(weights16[b + k * k_step + c * c_step]);
        }
        stage[r * STAGE_COLS + c] = sum;
    }
}

// stage (ROWS × n_out) = A · Wᵀ for a layer: A at `x` in `act` (row stride n_in), W from
// parameter `w` of weights16.
fn product_forward(x: u32, n_in: u32, n_out: u32, w: u32, ids: Ids) {
    product(x, n_in, n_out, w, 1u, n_in, ids);
}

// stage (ROWS × n_cols) = δ · W for a layer's first n_cols inputs: δ at `d` in `act` (row
// stride n_out).
fn product_backward(d: u32, n_in: u32, n_out: u32, n_cols: u32, w: u32, ids: Ids) {
    product(d, n_out, n_cols, w, n_in, 1u, ids);
}

// dw_partials[at ..] (row-major [n_out][n_in]) += δᵀ · A over the chunk's rows, one thread
// per weight. The first chunk starts from zero instead of the stored sums.
fn accumulate_weights(d: u32, x: u32, n_in: u32, n_out: u32, at: u32, ids: Ids) {
    let first = first_chunk();
    for (var e = ids.thread; e < n_out * n_in; e += THREADS) {
        let o = e / n_in;
        let i = e % n_in;
        var sum = 0.0;
        for (var r = 0u; r < ROWS; r++) {
            sum += f32(act[d + r * n_out + o]) * f32(act[x + r * n_in + i]);
        }
        if !first {
            sum += dw_partials[at + e];
        }
        dw_partials[at + e] = sum;
    }
}

// loss_scratch[o · BIAS_STRIDE] = Σ over the chunk's rows of δ[row][o] for the n_out
// outputs (δ at `d` in `act`, row stride n_out), one thread per output.
fn sum_biases(d: u32, n_in: u32, n_out: u32, ids: Ids) {
    for (var o = ids.thread; o < n_out; o += THREADS) {
        var sum = 0.0;
        for (var r = 0u; r < ROWS; r++) {
            sum += f32(act[d + r * n_out + o]);
        }
        loss_scratch[o * BIAS_STRIDE] = sum;
    }
}
#endif

// dw_partials[at + o] += the chunk's bias sums (sum_biases, read after a barrier): the
// biases' gradients. The first chunk stores instead.
fn accumulate_biases(n_out: u32, at: u32, thread: u32) {
    let first = chunk_first != 0u;
    for (var o = thread; o < n_out; o += THREADS) {
        var sum = loss_scratch[o * BIAS_STRIDE];
        if !first {
            sum += dw_partials[at + o];
        }
        dw_partials[at + o] = sum;
    }
}

// After a hidden layer's product: its A and act'(z), from z = stage + bias (biases from
// parameter `b` of the f32 params). Four columns per thread.
fn activate(layer: u32, b: u32, thread: u32) {
    let n = ntc_layer_outputs(layer);
    let a_at = input_region(layer + 1u);
    let s_at = slope_region(layer + 1u);
    for (var e = thread; e < ROWS * (n / 4u); e += THREADS) {
        let r = e / (n / 4u);
        let c = 4u * (e % (n / 4u));
        let s = r * STAGE_COLS + c;
        let z = vec4f(stage[s], stage[s + 1u], stage[s + 2u], stage[s + 3u])
            + vec4f(params[b + c], params[b + c + 1u], params[b + c + 2u], params[b + c + 3u]);
        let a = ntc_activation(z);
        let slope = ntc_activation_slope(z);
        for (var j = 0u; j < 4u; j++) {
            act[a_at + r * n + c + j] = f16(a[j]);
            act[s_at + r * n + c + j] = f16(slope[j]);
        }
    }
}

// After the output layer's product: the loss of this thread's (row, channel quad)
// elements, and the output δ (DELTA_SCALE · 2 w (y − t), 0 for rows without a sample).
fn output_loss(b: u32, thread: u32) -> f32 {
    let d_at = delta_region(NTC_LAYERS - 1u);
    var loss = 0.0;
    for (var e = thread; e < ROWS * (NTC_OUTPUTS / 4u); e += THREADS) {
        let r = e / (NTC_OUTPUTS / 4u);
        let q = e % (NTC_OUTPUTS / 4u);
        let row = rows[r];
        var delta = vec4f(0.0);
        if row.x != NO_ENTRY {
            let entry = mips[row.x];
            let texel = row_texel(row, entry);
            let s = r * STAGE_COLS + 4u * q;
            let c = b + 4u * q;
            let y = vec4f(stage[s], stage[s + 1u], stage[s + 2u], stage[s + 3u])
                + vec4f(params[c], params[c + 1u], params[c + 2u], params[c + 3u]);
            var t = vec4f(0.0);
            if q < 3u {
                t = target_channels(entry.texel_start + texel.y * entry.width + texel.x, q);
            }
            let w = entry.loss_weights[q];
            let err = y - t;
            loss += dot(w * err, err);
            delta = (2.0 * DELTA_SCALE) * w * err;
        }
        for (var j = 0u; j < 4u; j++) {
            act[d_at + r * NTC_OUTPUTS + 4u * q + j] = f16(delta[j]);
        }
    }
    return loss;
}

// After a hidden layer's backward product: the δ of its inputs = stage ⊙ act'(z), stored
// over act'(z).
fn scale_by_slope(layer: u32, thread: u32) {
    let n = ntc_layer_inputs(layer);
    let s_at = slope_region(layer);
    for (var e = thread; e < ROWS * n; e += THREADS) {
        let r = e / n;
        let c = e % n;
        let at = s_at + r * n + c;
        act[at] = f16(stage[r * STAGE_COLS + c] * f32(act[at]));
    }
}

// After the first layer's backward product: the latent inputs' δ (unscaled to the mean
// batch loss's gradient) scattered to the four taps of their grid, one thread per (row,
// grid, 4 features).
fn scatter_latents(thread: u32) {
    let unscale = step_params.inv_batch / DELTA_SCALE;
    for (var e = thread; e < ROWS * 2u * QUADS; e += THREADS) {
        let r = e / (2u * QUADS);
        let coarse = (e / QUADS) % 2u == 1u;
        let first = 4u * (e % QUADS);
        let row = rows[r];
        if row.x != NO_ENTRY {
            let entry = mips[row.x];
            let taps = grid_taps(entry, row_texel(row, entry), coarse);
            let base = entry.latent_base + select(entry.grids.fine_offset, entry.grids.coarse_offset, coarse)
                + first;
            let s = r * STAGE_COLS + select(0u, NTC_FEATURES, coarse) + first;
            let g = vec4f(stage[s], stage[s + 1u], stage[s + 2u], stage[s + 3u]) * unscale;
            for (var t = 0u; t < 4u; t++) {
                for (var j = 0u; j < 4u; j++) {
                    grad_add(base + taps.texel[t] * NTC_FEATURES + j, taps.weight[t] * g[j]);
                }
            }
        }
    }
}

// The forward pass of the chunk (X built); returns this thread's share of its loss.
fn forward(ids: Ids) -> f32 {
    var loss = 0.0;
    for (var layer = 0u; layer < NTC_LAYERS; layer++) {
        let n_in = ntc_layer_inputs(layer);
        let n_out = ntc_layer_outputs(layer);
        let w = ntc_layer_params(layer);
        let b = w + n_in * n_out;
        product_forward(input_region(layer), n_in, n_out, w, ids);
        workgroupBarrier();
        if layer + 1u < NTC_LAYERS {
            activate(layer, b, ids.thread);
        } else {
            loss += output_loss(b, ids.thread);
        }
        workgroupBarrier();
    }
    return loss;
}

// The backward pass of the chunk: parameter gradients into the workgroup's partials at
// `slot`, latent gradients scattered.
fn backward(slot: u32, ids: Ids) {
    let latents = (step_params.flags & FLAG_LATENT_GRADIENTS) != 0u;
    for (var k = 0u; k < NTC_LAYERS; k++) {
        let layer = NTC_LAYERS - 1u - k;
        let n_in = ntc_layer_inputs(layer);
        let n_out = ntc_layer_outputs(layer);
        let w = ntc_layer_params(layer);
        let b = w + n_in * n_out;
        let d = delta_region(layer);
        accumulate_weights(d, input_region(layer), n_in, n_out, slot + w, ids);
        sum_biases(d, n_in, n_out, ids);
        if layer > 0u {
            product_backward(d, n_in, n_out, n_in, w, ids);
        } else if latents {
            // The latent inputs' δ, in whole 16-column blocks (the first 2F ≤ n_in).
            product_backward(d, n_in, n_out, (LATENT_INPUTS + 15u) / 16u * 16u, w, ids);
        }
        workgroupBarrier();
        accumulate_biases(n_out, slot + b, ids.thread);
        if layer > 0u {
            scale_by_slope(layer, ids.thread);
        } else if latents {
            scatter_latents(ids.thread);
        }
        // After the first layer this also ends the chunk: the next chunk's rows, inputs
        // and bias sums overwrite this one's.
        workgroupBarrier();
    }
}

@compute @workgroup_size(THREADS)
fn train_step(
    invocation: TrainInvocation,
#ifdef TRAIN_COOP
    @builtin(subgroup_id) subgroup: u32,
    @builtin(num_subgroups) subgroups: u32,
#endif
) {
    let local = invocation.local;
#ifdef TRAIN_COOP
    let ids = Ids(local, subgroup, subgroups);
#else
    let ids = Ids(local, 0u, 1u);
#endif
#ifdef TRAIN_COOP
    for (var i = local; i < 256u; i += THREADS) {
        ones[i] = f16(1.0);
    }
#endif
    let group = linear_workgroup(invocation);
    let slot = group * step_params.decoder_count;
    let chunks = step_params.train_chunks;
    let total_chunks = (step_params.batch_size + ROWS - 1u) / ROWS;
    var loss = 0.0;
    for (var c = 0u; c < chunks; c++) {
        let chunk = group * chunks + c;
        if chunk >= total_chunks {
            break;
        }
        if local == 0u {
            chunk_first = select(0u, 1u, c == 0u);
        }
        load_rows(chunk * ROWS, local);
        workgroupBarrier();
        build_inputs(local);
        workgroupBarrier();
        loss += forward(ids);
        backward(slot, ids);
    }
    let total = loss_workgroup_sum(local, loss);
    if local == 0u {
        wg_partials[group] = total;
    }
}
