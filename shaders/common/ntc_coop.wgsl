// The decoder MLP on 16×16×16 f16 cooperative matrices, per subgroup of 32 invocations
// over 32 pixels (two 16-row blocks, so every weight tile loaded serves both).
//
// Each subgroup owns its part of `ntc_coop_stage`: two slices (ping-pong) or, with
// NTC_COOP_CHAIN, one, each 32 rows of NTC_COOP_WIDTH f16. Its pixels' input vectors go
// into the rows of slice 0 (ntc_coop_put_input, row stride = input width, written
// straight from the latents: no per-invocation arrays, which the driver keeps in local
// memory), then layer l reads slice l % 2 and writes slice (l + 1) % 2 (with one slice:
// reads it, then overwrites it in place, every A tile being loaded before the first
// store): per input tile k the A tiles of both blocks are loaded once, then per output
// tile n one B tile (Wᵀ read straight from W's rows: column-major with stride n_in)
// multiplied into that tile's accumulator pair (unrolled with `#for`, so no matrix is held
// in an indexed array, which the driver would keep in local memory); the output tiles stored
// in f16 (row stride = n_out); for hidden layers every lane then adds the bias to and
// applies the activation on f16 pairs of the staged tile (in f16, as ntc_fma.wgsl); after
// the last layer, ntc_coop_output reads a row's outputs and adds the bias. Rows no pixel
// filled hold stale values; rows of a matrix product never mix, so they only give stale
// outputs nobody reads.
//
// Accumulators are f16 (products exact, sums rounded to f16 as the f16 kernel does).
//
// Every invocation of the workgroup calls ntc_coop_forward uniformly; each subgroup works
// on its own rows only. The caller makes the inputs visible first (a workgroup barrier
// where other subgroups wrote them, or the weights were just loaded; ntc_coop_sync where
// only the subgroup's own lanes did). Within the forward pass the layers are separated by
// ntc_coop_sync: a workgroup barrier, or with NTC_COOP_CHAIN a subgroup barrier (the
// layer-chained decode: no barrier across the workgroup between layers).
//
// Defines (besides ntc_mlp.wgsl's and ntc_decode.wgsl's; the importer enables f16, the
// cooperative-matrix extension and NTC_DECODERS_F16 where weights come from storage):
//   NTC_THREADS        invocations per workgroup: NTC_THREADS / 32 subgroups of 32
//   NTC_COOP_STORAGE   (flag) B tiles and biases straight from the decoder buffer (needs
//                      NTC_DECODERS_F16); otherwise from a workgroup copy (ntc_coop_load)
//   NTC_COOP_CHAIN     (flag) one slice per subgroup and subgroup barriers between layers
//                      (`wgpu-subgroup-barrier`)

// Rows (pixels) per subgroup, and subgroups per workgroup (subgroups of 32).
const NTC_COOP_ROWS: u32 = 32u;
const NTC_COOP_SUBGROUPS: u32 = NTC_THREADS / NTC_COOP_ROWS;
// Widest layer input or output.
const NTC_COOP_WIDTH: u32 = max(NTC_INPUT_WIDTH, NTC_MAX_HIDDEN);
// f16 values of one slice.
const NTC_COOP_SLICE: u32 = NTC_COOP_ROWS * NTC_COOP_WIDTH;
#ifdef NTC_COOP_CHAIN
const NTC_COOP_SLICES: u32 = 1u;

// Makes what the subgroup's lanes wrote to its slice visible to the whole subgroup.
fn ntc_coop_sync() {
    subgroupBarrier();
}
#else
const NTC_COOP_SLICES: u32 = 2u;

fn ntc_coop_sync() {
    workgroupBarrier();
}
#endif

// Per subgroup, its slices.
var<workgroup> ntc_coop_stage: array<f16, NTC_COOP_SUBGROUPS * NTC_COOP_SLICES * NTC_COOP_SLICE>;
alias NtcCoopAcc = coop_mat16x16<f16, C>;

#ifdef NTC_COOP_STORAGE
var<private> ntc_coop_base: u32;

// Every invocation calls this with the workgroup's decoder.
fn ntc_coop_load(decoder: u32, thread: u32, threads: u32) {
    ntc_coop_base = decoder * NTC_PARAMS;
}

fn ntc_coop_b(at: u32, stride: u32) -> coop_mat16x16<f16, B> {
    return coopLoad<coop_mat16x16<f16, B>>(&ntc_decoders[ntc_coop_base + at], stride);
}

fn ntc_coop_param(at: u32) -> f16 {
    return ntc_decoders[ntc_coop_base + at];
}
#else
var<workgroup> ntc_coop_weights: array<f16, NTC_PARAMS>;

// Every invocation of the workgroup calls this (uniformly) with the workgroup's decoder;
// the caller puts a barrier between this and ntc_coop_forward.
fn ntc_coop_load(decoder: u32, thread: u32, threads: u32) {
    let base = decoder * (NTC_PARAMS / 2u);
    for (var i = thread; i < NTC_PARAMS / 2u; i += threads) {
        let pair = vec2<f16>(unpack2x16float(ntc_decoders[base + i])); // exact
        ntc_coop_weights[2u * i] = pair.x;
        ntc_coop_weights[2u * i + 1u] = pair.y;
    }
}

fn ntc_coop_b(at: u32, stride: u32) -> coop_mat16x16<f16, B> {
    return coopLoad<coop_mat16x16<f16, B>>(&ntc_coop_weights[at], stride);
}

fn ntc_coop_param(at: u32) -> f16 {
    return ntc_coop_weights[at];
}
#endif

// First value of slice `slice` of subgroup `subgroup` (with one slice, slice 0 whatever
// `slice`).
fn ntc_coop_slice(subgroup: u32, slice: u32) -> u32 {
    return (NTC_COOP_SLICES * subgroup + slice % NTC_COOP_SLICES) * NTC_COOP_SLICE;
}

// Four values at `at` of the stage, in f16.
fn ntc_coop_put4(at: u32, v: vec4f) {
    let h = vec4<f16>(v);
    ntc_coop_stage[at] = h.x;
    ntc_coop_stage[at + 1u] = h.y;
    ntc_coop_stage[at + 2u] = h.z;
    ntc_coop_stage[at + 3u] = h.w;
}

// Puts the input vector of texel `texel` of mip `mip` (ntc_input's, piece by piece) into
// row `row` of subgroup `subgroup`'s slice 0.
fn ntc_coop_put_input(subgroup: u32, row: u32, mip: NtcMip, texel: vec2u) {
    let at = ntc_coop_slice(subgroup, 0u) + row * NTC_INPUT_WIDTH;
    let taps = ntc_input_taps(mip, texel);
    for (var g = 0u; g < NTC_FEATURES / 4u; g++) {
        ntc_coop_put4(at + 4u * g, ntc_grid_features(mip.grids.fine_offset, taps.fine, g));
        ntc_coop_put4(at + NTC_FEATURES + 4u * g, ntc_grid_features(mip.grids.coarse_offset, taps.coarse, g));
    }
    var p = ntc_pe_start(mip, texel);
    for (var w = 0u; w < NTC_PE_WAVES; w++) {
        ntc_coop_put4(at + 2u * NTC_FEATURES + 4u * w, ntc_pe_values(mip, p));
        p = ntc_pe_next(mip, p);
    }
    ntc_coop_put4(at + 2u * NTC_FEATURES + 4u * NTC_PE_WAVES, vec4f(mip.lod, 0.0, 0.0, 0.0));
    for (var i = 2u * NTC_FEATURES + 4u * NTC_PE_WAVES + 4u; i < NTC_INPUT_WIDTH; i += 4u) {
        ntc_coop_put4(at + i, vec4f(0.0));
    }
}

// Output `o` of row `row` of the products at `at` plus its bias.
fn ntc_coop_out(at: u32, biases: u32, o: u32) -> f32 {
    return f32(ntc_coop_stage[at + o] + ntc_coop_param(biases + o));
}

// Outputs 0–11 (the canonical channels' three groups) of row `row` of subgroup
// `subgroup`, after ntc_coop_forward.
fn ntc_coop_output(subgroup: u32, row: u32) -> array<vec4f, 3> {
    var params = 0u;
    for (var layer = 0u; layer + 1u < NTC_LAYERS; layer++) {
        params += ntc_layer_inputs(layer) * ntc_layer_outputs(layer) + ntc_layer_outputs(layer);
    }
    let b = params + ntc_layer_inputs(NTC_LAYERS - 1u) * NTC_OUTPUTS;
    let at = ntc_coop_slice(subgroup, NTC_LAYERS % 2u) + row * NTC_OUTPUTS;
    return array<vec4f, 3>(
        vec4f(ntc_coop_out(at, b, 0u), ntc_coop_out(at, b, 1u), ntc_coop_out(at, b, 2u), ntc_coop_out(at, b, 3u)),
        vec4f(ntc_coop_out(at, b, 4u), ntc_coop_out(at, b, 5u), ntc_coop_out(at, b, 6u), ntc_coop_out(at, b, 7u)),
        vec4f(ntc_coop_out(at, b, 8u), ntc_coop_out(at, b, 9u), ntc_coop_out(at, b, 10u), ntc_coop_out(at, b, 11u)),
    );
}

// The subgroup ids of an invocation that ntc_coop_forward needs, an entry-point argument
// of the kernels that use this file: `lane` is the invocation's index in its subgroup,
// `lanes` the subgroup size (32).
struct NtcCoopIds {
    @builtin(subgroup_id) subgroup: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) lanes: u32,
}

// Runs the MLP on the 32 rows of every subgroup (see the file's docs). Cooperative-matrix
// operations need uniform control flow, so every subgroup runs every layer, whether its
// rows hold pixels or not.
fn ntc_coop_forward(ids: NtcCoopIds) {
    var params = 0u;
    for (var layer = 0u; layer < NTC_LAYERS; layer++) {
        let n_in = ntc_layer_inputs(layer);
        let n_out = ntc_layer_outputs(layer);
        let biases = params + n_in * n_out;
        let src = ntc_coop_slice(ids.subgroup, layer % 2u);
        let dst = ntc_coop_slice(ids.subgroup, (layer + 1u) % 2u);
        // Unrolled (`#for`) to the widest layer; tiles past this layer's widths are skipped
        // by single-iteration loops (naga 30's uniformity analysis rejects cooperative-matrix
        // operations under an `if` on these uniform widths, not in a loop): one accumulator
        // pair per output tile, each A tile loaded once, each B tile once for both blocks,
        // and no matrix in an indexed array.
#for N in 0..${NTC_WIDEST}/16
        var c0_${N} = NtcCoopAcc();
        var c1_${N} = NtcCoopAcc();
#endfor
#for K in 0..${NTC_WIDEST}/16
        for (var k = 16u * ${K}u; k < n_in; k = n_in) {
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ntc_coop_stage[src + 16u * ${K}u], n_in);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ntc_coop_stage[src + 16u * n_in + 16u * ${K}u], n_in);
#for N in 0..${NTC_WIDEST}/16
            for (var n = 16u * ${N}u; n < n_out; n = n_out) {
                let b = ntc_coop_b(params + 16u * ${N}u * n_in + 16u * ${K}u, n_in);
                c0_${N} = coopMultiplyAdd(a0, b, c0_${N});
                c1_${N} = coopMultiplyAdd(a1, b, c1_${N});
            }
#endfor
        }
#endfor
#ifdef NTC_COOP_CHAIN
        // Every A tile is loaded: the stores may overwrite the slice.
        ntc_coop_sync();
#endif
#for N in 0..${NTC_WIDEST}/16
        for (var n = 16u * ${N}u; n < n_out; n = n_out) {
            // Operands of coopStore* must be values (see ntc_decode.wgsl's coop kernel).
            let r0 = c0_${N};
            let r1 = c1_${N};
            let at0 = dst + 16u * ${N}u;
            let at1 = at0 + 16u * n_out;
            coopStoreT(r0, &ntc_coop_stage[at0], n_out);
            coopStoreT(r1, &ntc_coop_stage[at1], n_out);
        }
#endfor
        ntc_coop_sync();
        if layer + 1u < NTC_LAYERS {
            // Pair e of the slice: row e / (n_out / 2), columns 2 (e % (n_out / 2)) + {0, 1}.
            for (var e = ids.lane; e < NTC_COOP_ROWS * n_out / 2u; e += ids.lanes) {
                let col = 2u * (e % (n_out / 2u));
                let at = dst + 2u * e;
                let bias = vec2<f16>(ntc_coop_param(biases + col), ntc_coop_param(biases + col + 1u));
                let z = vec2<f16>(ntc_coop_stage[at], ntc_coop_stage[at + 1u]) + bias;
                let a = ntc_activation_pair(z);
                ntc_coop_stage[at] = a.x;
                ntc_coop_stage[at + 1u] = a.y;
            }
        }
        ntc_coop_sync();
        params = biases + n_out;
    }
}
