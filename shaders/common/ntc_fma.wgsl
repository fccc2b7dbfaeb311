// The decoder MLP in f16 FMA with every value in registers: per thread NTC_FMA_PIXELS
// pixels, each layer's values as f16 pairs in function-local arrays indexed only by
// loop counters of constant trip counts (the driver unrolls them, so nothing lives in
// local memory), weights read eight at a time (one mat4x2<f16>: four f16 pairs, 16 bytes,
// uniform across the workgroup) and applied as packed pairs (no conversion): each
// output's sum runs as two interleaved partial sums over even and odd inputs (two HFMA2
// lanes), added with the bias at the end. f16 products and sums, as the f16 kernel of// ntc_decode_tiles.wgsl; the activation as ntc_mlp.wgsl's in f16 (ntc_activation_pair).
//
// Needs every layer width a multiple of 8 (so every layer's weights start at a multiple
// of 8 parameters); the host checks.
//
// The weights are the workgroup's decoder copied into workgroup memory (ntc_fma_load),
// 16.3 KiB for the default model.
//
// Defines (besides ntc_mlp.wgsl's and ntc_decode.wgsl's; the importer sets NTC_F16):
//   NTC_FMA_PIXELS   pixels per thread (1 or 2): each weight load serves all of them

const NTC_FMA_PIXELS: u32 = ${NTC_FMA_PIXELS}u;
// Widest layer input or output.
const NTC_FMA_WIDTH: u32 = max(NTC_INPUT_WIDTH, NTC_MAX_HIDDEN);

// One pixel's values of one layer as f16 pairs (entries past the layer's width unused).
alias NtcFmaValues = array<vec2<f16>, NTC_FMA_WIDTH / 2u>;
// The values of this thread's pixels.
alias NtcFmaBatch = array<NtcFmaValues, NTC_FMA_PIXELS>;
// The decoder outputs of this thread's pixels, four channels per vec4 (entries 0–3; sized
// like a layer so that the unrolled code indexes it in bounds).
alias NtcFmaOutputs = array<array<vec4f, NTC_FMA_WIDTH / 4u>, NTC_FMA_PIXELS>;

var<workgroup> ntc_fma_weights: array<mat4x2<f16>, NTC_PARAMS / 8u>;

// Every thread of the workgroup calls this (uniformly) with the workgroup's decoder; the
// caller puts a barrier between this and ntc_fma_forward.
fn ntc_fma_load(decoder: u32, thread: u32, threads: u32) {
    let base = decoder * (NTC_PARAMS / 8u);
    for (var i = thread; i < NTC_PARAMS / 8u; i += threads) {
        let at = 4u * (base + i);
        // Exact: every f16 is an f32.
        ntc_fma_weights[i] = mat4x2<f16>(
            vec2<f16>(unpack2x16float(ntc_decoders[at])),
            vec2<f16>(unpack2x16float(ntc_decoders[at + 1u])),
            vec2<f16>(unpack2x16float(ntc_decoders[at + 2u])),
            vec2<f16>(unpack2x16float(ntc_decoders[at + 3u])),
        );
    }
}

fn ntc_fma_w8(k: u32) -> mat4x2<f16> {
    return ntc_fma_weights[k];
}
// Parameters 2j, 2j + 1 as an f16 pair.
fn ntc_fma_pair(j: u32) -> vec2<f16> {
    return ntc_fma_w8(j / 4u)[j % 4u];
}

// A pixel's input vector (ntc_input) as f16 pairs (entries past the input width 0).
fn ntc_fma_values(x: array<vec4f, NTC_INPUT_WIDTH / 4u>) -> NtcFmaValues {
    var v: NtcFmaValues;
#for I in 0..${NTC_INPUT_WIDTH}/4
    v[2 * ${I}] = vec2<f16>(x[${I}].xy);
    v[2 * ${I} + 1] = vec2<f16>(x[${I}].zw);
#endfor
    return v;
}

// The sum of a pixel's values, as four values (what a cut MLP hands on, ntc_pixel.wgsl).
fn ntc_fma_fold(v: NtcFmaValues) -> vec4f {
    var sum = vec2<f16>(0.0);
#for I in 0..${NTC_WIDEST}/2
    sum += v[${I}];
#endfor
    return vec4f(vec2f(sum), 0.0, 0.0);
}

// Runs the MLP on the inputs in `batch` (overwritten by the layers' values); returns the
// outputs. Every thread of a workgroup reads the same weights at the same time. The
// layers are a loop; within a layer, outputs, inputs and pixels are unrolled (`#for`) to
// the widest layer, with uniform branches past the layer's widths, so every value has a
// constant index and stays in registers.
fn ntc_fma_forward(batch: ptr<function, NtcFmaBatch>) -> NtcFmaOutputs {
    var out: NtcFmaOutputs;
    var params = 0u;
    for (var layer = 0u; layer < NTC_LAYERS; layer++) {
        let n_in = ntc_layer_inputs(layer);
        let n_out = ntc_layer_outputs(layer);
        let biases = params + n_in * n_out;
        let last = layer + 1u == NTC_LAYERS;
        var next: NtcFmaBatch;
#for O in 0..${NTC_WIDEST}/2
        if 2u * ${O}u < n_out {
            let rows = params + 2u * ${O}u * n_in;
#for P in 0..${NTC_FMA_PIXELS}
            var even_${P} = vec2<f16>(0.0);
            var odd_${P} = vec2<f16>(0.0);
#endfor
#for I in 0..${NTC_WIDEST}/8
            if 8u * ${I}u < n_in {
                let w0 = ntc_fma_w8((rows + 8u * ${I}u) / 8u);
                let w1 = ntc_fma_w8((rows + n_in + 8u * ${I}u) / 8u);
#for P in 0..${NTC_FMA_PIXELS}
#for K in 0..4
                even_${P} = fma(w0[${K}], (*batch)[${P}][4 * ${I} + ${K}], even_${P});
                odd_${P} = fma(w1[${K}], (*batch)[${P}][4 * ${I} + ${K}], odd_${P});
#endfor
#endfor
            }
#endfor
            let bias = ntc_fma_pair((biases + 2u * ${O}u) / 2u);
#for P in 0..${NTC_FMA_PIXELS}
            let z_${P} = vec2<f16>(even_${P}.x + even_${P}.y, odd_${P}.x + odd_${P}.y) + bias;
            if last {
                out[${P}][${O} / 2][(2 * ${O}) % 4] = f32(z_${P}.x);
                out[${P}][${O} / 2][(2 * ${O}) % 4 + 1] = f32(z_${P}.y);
            } else {
                next[${P}][${O}] = ntc_activation_pair(z_${P});
            }
#endfor
        }
#endfor
        *batch = next;
        params = biases + n_out;
    }
    return out;
}
