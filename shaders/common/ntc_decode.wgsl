// NTC decoding shared by the real-time decode pass (ntc_decode_tiles.wgsl, ntc_decode_runs.wgsl) and the bake on load
// (ntc_bake.wgsl): the scene's NTC data (group 1), latent fetch and dequantisation, the
// decoder's input vector for texel (x, y) of a mip (cpu::forward's, texel centre), the
// decoder weights in workgroup memory, and the MLP evaluation of the chosen kernel. The
// kernels differ only in `ntc_evaluate`. Mirrored on the host by render::ntc_gpu
// (NtcMaterialGpu, NtcMipGpu, the binding table) and render::passes::ntc_decode (defines).
//
// Defines (set by the host from NtcConfig, see ntc_mlp.wgsl for the MLP's):
//   NTC_FEATURES      features per grid texel F
//   NTC_LATENT_BITS   bits per stored latent value (2, 4 or 8)
//   NTC_PE_WAVES      positional-encoding waves W
//   NTC_PARAMS        decoder parameters (a multiple of 4)
//   NTC_THREADS       threads per workgroup (they copy the weights together)
//   NTC_KERNEL_F32    f16 weights kept packed in workgroup memory, unpacked to f32, f32 FMA
//   NTC_KERNEL_F16    (with NTC_F16) f16 weights, f16 products and sums
//   NTC_KERNEL_COOP   (with NTC_F16) 16×16 f16 cooperative matrices, f32 accumulators
//   NTC_DECODERS_F16  binding 1 viewed as f16 (ntc_coop.wgsl's weights from storage);
//                     leaves out ntc_load_decoder of the kernels above (it reads the
//                     u32 view)
//
// `ntc_input` builds the input vector as a value (the register kernels of ntc_fma.wgsl and
// ntc_coop.wgsl); `ntc_build_input` puts it into `ntc_state` for the kernels above.

#ifdef NTC_F16
enable f16;
#endif
#ifdef NTC_KERNEL_COOP
enable wgpu_cooperative_matrix;
#endif

#import "common/ntc_encoding.wgsl"
#import "common/ntc_mlp.wgsl"

const NTC_PARAMS: u32 = ${NTC_PARAMS}u;
const NTC_THREADS: u32 = ${NTC_THREADS}u;
const NTC_LATENT_BITS: u32 = ${NTC_LATENT_BITS}u;
// The largest latent code L = 2^bits − 1 (also the mask of one code).
const NTC_LATENT_LEVELS: u32 = (1u << NTC_LATENT_BITS) - 1u;
// u32 words per grid texel: ⌈F · bits / 32⌉ (quant::words_per_texel).
const NTC_WORDS_PER_TEXEL: u32 = (NTC_FEATURES * NTC_LATENT_BITS + 31u) / 32u;
// A decoder index meaning "no NTC texture set: constants only".
const NTC_NONE: u32 = 0xFFFFFFFFu;
// Canonical channels (texture::CHANNELS) in three groups of four.
const NTC_CHANNEL_GROUPS: u32 = 3u;
// Neutral values of the canonical channels as the reference path samples them from
// TextureSet::neutral (Channel::neutral_u8 / 255): 128/255 for normal X/Y, 1 elsewhere.
const NTC_NEUTRAL = array<vec4f, 3>(
    vec4f(1.0),
    vec4f(128.0 / 255.0, 128.0 / 255.0, 1.0, 1.0),
    vec4f(1.0),
);

// One scene material (render::ntc_gpu::NtcMaterialGpu).
struct NtcMaterial {
    // Index of its decoder, or NTC_NONE (untextured, or a set not in the package).
    decoder: u32,
    // First word of its latents in `ntc_latents`.
    latent_offset: u32,
    // Channel mask of the set (bit c = canonical channel c comes from the decoder).
    present: u32,
    // Colour mips.
    mips: u32,
    // Its mip 0 entry in `ntc_mips`; mip m is entry mip_base + m.
    mip_base: u32,
    // Size of mip 0 in texels.
    width: u32,
    height: u32,
    _pad0: u32,
}

// One colour mip of one package material (render::ntc_gpu::NtcMipGpu).
struct NtcMip {
    // Size of the mip in texels.
    width: u32,
    height: u32,
    // The mip's grid pair; each grid starts at a word of `ntc_latents`.
    grids: NtcGridPair,
    // model::lod_input of this mip.
    lod: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// Every package material's latents, packed as in the package (quant module docs).
@group(1) @binding(0) var<storage, read> ntc_latents: array<u32>;
// Every decoder's parameters as f16 pairs (parameter 2i in the low half of word i),
// decoder d at word d · NTC_PARAMS / 2 (the same buffer in every view).
#ifdef NTC_DECODERS_F16
@group(1) @binding(1) var<storage, read> ntc_decoders: array<f16>;
#else
@group(1) @binding(1) var<storage, read> ntc_decoders: array<u32>;
#endif
// One entry per scene material.
@group(1) @binding(2) var<storage, read> ntc_materials: array<NtcMaterial>;
// One entry per colour mip of every package material.
@group(1) @binding(3) var<storage, read> ntc_mips: array<NtcMip>;

// The decoder being evaluated, in workgroup memory (the kernels of this file).
#ifdef NTC_F16
var<workgroup> ntc_wg_weights: array<f16, NTC_PARAMS>;

fn ntc_weight(index: u32) -> f16 {
    return ntc_wg_weights[index];
}
#else
// Kept as the package's f16 pairs: half the memory of f32 (the default 8,336-parameter
// decoder fits 32 KiB of workgroup storage), and unpacking is exact.
var<workgroup> ntc_wg_weights: array<u32, NTC_PARAMS / 2u>;

fn ntc_weight(index: u32) -> f32 {
    return unpack2x16float(ntc_wg_weights[index >> 1u])[index & 1u];
}
#endif

#ifndef NTC_DECODERS_F16
// Every thread of the workgroup calls this (uniformly): copies decoder `decoder` into
// workgroup memory. The caller puts a barrier between this and the first `ntc_weight`.
fn ntc_load_decoder(decoder: u32, thread: u32) {
    let base = decoder * (NTC_PARAMS / 2u);
    for (var i = thread; i < NTC_PARAMS / 2u; i += NTC_THREADS) {
        let word = ntc_decoders[base + i];
#ifdef NTC_F16
        let pair = vec2<f16>(unpack2x16float(word)); // exact: every f16 is an f32
        ntc_wg_weights[2u * i] = pair.x;
        ntc_wg_weights[2u * i + 1u] = pair.y;
#else
        ntc_wg_weights[i] = word;
#endif
    }
}

#endif

// Features 4g .. 4g + 3 of the bilinear sample at `taps` of the grid whose first word is
// `grid`, dequantised: Σ wₜ ((nₜ / L) · 2 − 1) = (2 / L) Σ wₜ nₜ − Σ wₜ in f32 (codes are
// exact). The four codes of a group lie in one word (≤ 8 bits each), one load per tap.
// Straight-line code with no arrays (the driver keeps indexed arrays in local memory).
fn ntc_grid_features(grid: u32, taps: NtcTaps, g: u32) -> vec4f {
    let bit = 4u * g * NTC_LATENT_BITS;
    let at = grid + bit / 32u;
    let shift = vec4u(bit % 32u) + vec4u(0u, 1u, 2u, 3u) * NTC_LATENT_BITS;
    let mask = vec4u(NTC_LATENT_LEVELS);
    let c0 = vec4f((vec4u(ntc_latents[at + taps.texel.x * NTC_WORDS_PER_TEXEL]) >> shift) & mask);
    let c1 = vec4f((vec4u(ntc_latents[at + taps.texel.y * NTC_WORDS_PER_TEXEL]) >> shift) & mask);
    let c2 = vec4f((vec4u(ntc_latents[at + taps.texel.z * NTC_WORDS_PER_TEXEL]) >> shift) & mask);
    let c3 = vec4f((vec4u(ntc_latents[at + taps.texel.w * NTC_WORDS_PER_TEXEL]) >> shift) & mask);
    let w = taps.weight;
    let sum = w.x * c0 + w.y * c1 + w.z * c2 + w.w * c3;
    return sum * (2.0 / f32(NTC_LATENT_LEVELS)) - (w.x + w.y + w.z + w.w);
}

// The two grids' taps of texel `texel` of mip `mip` (texel centre u = (x + ½) / width, as
// cpu::forward).
struct NtcInputTaps {
    fine: NtcTaps,
    coarse: NtcTaps,
}

fn ntc_input_taps(mip: NtcMip, texel: vec2u) -> NtcInputTaps {
    let u = (f32(texel.x) + 0.5) / f32(mip.width);
    let v = (f32(texel.y) + 0.5) / f32(mip.height);
    return NtcInputTaps(
        ntc_bilinear_taps(u, v, mip.grids.fine_width, mip.grids.fine_height),
        ntc_bilinear_taps(u, v, mip.grids.coarse_width, mip.grids.coarse_height),
    );
}

// The positional encoding's phase numerators of wave 0 along x and y (ntc_pe_phase); the
// denominators are 4 · the mip's sides.
fn ntc_pe_start(mip: NtcMip, texel: vec2u) -> vec2u {
    return vec2u(
        ntc_pe_phase(texel.x, mip.width, mip.grids.coarse_width, 0u).x,
        ntc_pe_phase(texel.y, mip.height, mip.grids.coarse_height, 0u).x,
    );
}

// The four encoding values of the wave whose phases are `p` (ntc_positional_encoding's
// order: tri(px), tri(py), tri(px + ¼), tri(py + ¼)); the quarter offset is added modulo
// the denominator.
fn ntc_pe_values(mip: NtcMip, p: vec2u) -> vec4f {
    let side = vec2u(mip.width, mip.height);
    let den = 4u * side;
    let q = p + side;
    let quarter = select(q, q - den, q >= den);
    let inv = 1.0 / vec2f(den);
    return abs(4.0 * (vec4f(vec2f(p), vec2f(quarter)) * vec4f(inv, inv)) - 2.0) - 1.0;
}

// The next wave's phases: doubled modulo the denominator (exact).
fn ntc_pe_next(mip: NtcMip, p: vec2u) -> vec2u {
    let den = 4u * vec2u(mip.width, mip.height);
    let d = 2u * p;
    return select(d, d - den, d >= den);
}

// The decoder's input vector for texel `texel` of mip `mip`, as cpu::forward: both grids
// bilinearly sampled (wrap) from the dequantised latents (ntc_grid_features), the
// positional encoding (exact integer phases: wave 0's from ntc_pe_phase, each next wave's
// doubled), the LOD input, zeros after. In f32; agrees with the CPU's f64 to about 1e-6.
// Unrolled (`#for`), so every index is a constant. Kernels that stage inputs in workgroup memory build the same vector piece by piece from
// these helpers (ntc_coop.wgsl).
fn ntc_input(mip: NtcMip, texel: vec2u) -> array<vec4f, NTC_INPUT_WIDTH / 4u> {
    var x: array<vec4f, NTC_INPUT_WIDTH / 4u>;
    let taps = ntc_input_taps(mip, texel);
#for G in 0..${NTC_FEATURES}/4
    x[${G}] = ntc_grid_features(mip.grids.fine_offset, taps.fine, ${G}u);
    x[${NTC_FEATURES}/4 + ${G}] = ntc_grid_features(mip.grids.coarse_offset, taps.coarse, ${G}u);
#endfor
    var p = ntc_pe_start(mip, texel);
#for W in 0..${NTC_PE_WAVES}
    x[${NTC_FEATURES}/2 + ${W}] = ntc_pe_values(mip, p);
    p = ntc_pe_next(mip, p);
#endfor
    x[${NTC_FEATURES}/2 + ${NTC_PE_WAVES}] = vec4f(mip.lod, 0.0, 0.0, 0.0);
    return x;
}

// Fills `ntc_state.values` with `ntc_input` of texel `texel` of mip `mip`.
fn ntc_build_input(mip: NtcMip, texel: vec2u) {
    let x = ntc_input(mip, texel);
#for I in 0..${NTC_INPUT_WIDTH}/4
    ntc_state.values[${I}] = NtcVec4(x[${I}]);
#endfor
}

// Hands the sum of `ntc_state.values`' inputs on as outputs (what a cut MLP does,
// ntc_pixel.wgsl).
fn ntc_fold_state() {
    var sum = NtcVec4(0.0);
    for (var i = 0u; i < NTC_INPUT_WIDTH / 4u; i++) {
        sum += ntc_state.values[i];
    }
    ntc_state.outputs[0] = sum;
}

// Channel group `group` (0–2) of decoded outputs `outputs` (that group's four): clamped to
// [0, 1], channels not in `present` replaced by their neutral values (NTC_NEUTRAL, chosen
// with `select`: indexing a constant array with a variable makes a local-memory copy).
fn ntc_finish_group(outputs: vec4f, group: u32, present: u32) -> vec4f {
    let bits = (vec4u(present) >> (4u * group + vec4u(0u, 1u, 2u, 3u))) & vec4u(1u);
    let neutral = select(NTC_NEUTRAL[0], NTC_NEUTRAL[1], group == 1u);
    return select(neutral, clamp(outputs, vec4f(0.0), vec4f(1.0)), bits == vec4u(1u));
}

// Which thread of the workgroup this is.
struct NtcThread {
    // local_invocation_index.
    index: u32,
    // Subgroup of the thread and subgroups of the workgroup (cooperative-matrix kernel
    // only; 0 and 1 otherwise).
    subgroup: u32,
    subgroups: u32,
}

#ifdef NTC_KERNEL_COOP
// Rows (pixels) of one cooperative batch: the tile, at most 64 (16 × 16 tiles run in
// batches), always a multiple of 16.
const NTC_COOP_ROWS: u32 = min(NTC_THREADS, 64u);
// Widest layer input or output.
const NTC_COOP_WIDTH: u32 = max(NTC_INPUT_WIDTH, NTC_MAX_HIDDEN);
// The current layer's inputs, one row per compacted pixel, row stride = the layer's
// input width.
var<workgroup> ntc_coop_x: array<f16, NTC_COOP_ROWS * NTC_COOP_WIDTH>;
// The current layer's products (before bias), row stride = the layer's output width.
var<workgroup> ntc_coop_y: array<f32, NTC_COOP_ROWS * NTC_COOP_WIDTH>;
var<workgroup> ntc_coop_count: atomic<u32>;
var<workgroup> ntc_coop_rows: u32;

// Y = X · Wᵀ for layer inputs `n_in`, outputs `n_out`, weights from parameter `params`,
// on `blocks` blocks of 16 rows: each subgroup takes 16 × 16 output tiles in turn.
// W is row-major [out][in], so Wᵀ's column n is W's row n: a column-major B operand of
// stride n_in.
fn ntc_coop_layer(thread: NtcThread, blocks: u32, params: u32, n_in: u32, n_out: u32) {
    let col_blocks = n_out / 16u;
    for (var t = thread.subgroup; t < blocks * col_blocks; t += thread.subgroups) {
        let rb = t / col_blocks;
        let cb = t % col_blocks;
        var acc = coop_mat16x16<f32, C>();
        for (var k = 0u; k < n_in; k += 16u) {
            let a = coopLoadT<coop_mat16x16<f16, A>>(&ntc_coop_x[rb * 16u * n_in + k], n_in);
            let b = coopLoad<coop_mat16x16<f16, B>>(&ntc_wg_weights[params + cb * 16u * n_in + k], n_in);
            acc = coopMultiplyAdd(a, b, acc);
        }
        // Every operand of coopStore* must already be a value (a `let`, an argument): naga
        // 30's WGSL front end pushes the store statement before emitting the expressions
        // computed in its arguments, and the SPIR-V backend then panics ("Expression [n]
        // is not cached!") on the index of `&ntc_coop_y[…]`. tests/shaders.rs compiles
        // every variant to SPIR-V to catch this.
        let result = acc;
        let at = rb * 16u * n_out + cb * 16u;
        coopStoreT(result, &ntc_coop_y[at], n_out);
    }
}

// Every thread calls this uniformly; threads with `selected` get their decoder outputs in
// `ntc_state.outputs`. The active pixels are compacted into rows of `ntc_coop_x` (in
// batches of NTC_COOP_ROWS), each layer is a sequence of 16 × 16 × 16 f16 matrix
// multiply-adds with f32 accumulators; bias and activation are applied per element
// (rounded to f16 for the next layer's inputs).
fn ntc_evaluate(selected: bool, thread: NtcThread) {
    if thread.index == 0u {
        atomicStore(&ntc_coop_count, 0u);
    }
    workgroupBarrier();
    var slot = 0u;
    if selected {
        slot = atomicAdd(&ntc_coop_count, 1u);
    }
    workgroupBarrier();
    if thread.index == 0u {
        ntc_coop_rows = atomicLoad(&ntc_coop_count);
    }
    let rows = workgroupUniformLoad(&ntc_coop_rows);
    for (var first = 0u; first < rows; first += NTC_COOP_ROWS) {
        let blocks = (min(rows - first, NTC_COOP_ROWS) + 15u) / 16u;
        let mine = selected && slot >= first && slot < first + NTC_COOP_ROWS;
        let row = slot - first;
        if mine {
            for (var i = 0u; i < NTC_INPUT_WIDTH / 4u; i++) {
                let x = ntc_state.values[i];
                for (var j = 0u; j < 4u; j++) {
                    ntc_coop_x[row * NTC_INPUT_WIDTH + 4u * i + j] = x[j];
                }
            }
        }
        workgroupBarrier();
        var params = 0u;
        for (var layer = 0u; layer < NTC_LAYERS; layer++) {
            let n_in = ntc_layer_inputs(layer);
            let n_out = ntc_layer_outputs(layer);
            let biases = params + n_in * n_out;
            ntc_coop_layer(thread, blocks, params, n_in, n_out);
            workgroupBarrier();
            if layer + 1u < NTC_LAYERS {
                for (var e = 4u * thread.index; e < blocks * 16u * n_out; e += 4u * NTC_THREADS) {
                    let o = e % n_out;
                    let z = vec4f(ntc_coop_y[e], ntc_coop_y[e + 1u], ntc_coop_y[e + 2u], ntc_coop_y[e + 3u]);
                    let a = ntc_activation(NtcVec4(z + vec4f(ntc_weights4(biases + o))));
                    for (var j = 0u; j < 4u; j++) {
                        ntc_coop_x[e + j] = a[j];
                    }
                }
            } else if mine {
                for (var o = 0u; o < NTC_OUTPUTS; o += 4u) {
                    let at = row * NTC_OUTPUTS + o;
                    let z = vec4f(ntc_coop_y[at], ntc_coop_y[at + 1u], ntc_coop_y[at + 2u], ntc_coop_y[at + 3u]);
                    ntc_state.outputs[o / 4u] = NtcVec4(z + vec4f(ntc_weights4(biases + o)));
                }
            }
            workgroupBarrier();
            params = biases + n_out;
        }
    }
}
#else
// Every thread calls this uniformly; threads with `selected` get their decoder outputs in
// `ntc_state.outputs` (one MLP evaluation per thread, ntc_mlp.wgsl).
fn ntc_evaluate(selected: bool, thread: NtcThread) {
    if selected {
        ntc_forward();
    }
}
#endif
