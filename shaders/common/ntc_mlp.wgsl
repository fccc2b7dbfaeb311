// The NTC decoder MLP's forward pass, one evaluation per thread, shared by the decode pass
// and the f32 trainer. The decoder's shape and activation are ntc_layers.wgsl's.
//
// The importer defines `fn ntc_weight(index: u32) -> NtcScalar`, the decoder parameter at
// `index` in DecoderWeights::params order (per layer: row-major [out][in] weights, then
// the biases), so the weights may live in any buffer and format. The evaluation's values
// live in the per-thread `ntc_state` (address space `private`: on llvmpipe, function-local
// arrays indexed by loop counters run several times slower; GPUs treat both alike).
// Every layer width is a multiple of 4, and so is every layer's first parameter.
//
// Defines (besides ntc_layers.wgsl's):
//   NTC_TRAINING     (flag) also record act'(z) of every hidden unit for the backward pass
//   NTC_F16          (flag) evaluate in f16 (`NtcScalar = f16`; the importer enables f16):
//                    weights, activations, products and sums; the default is f32

#import "common/ntc_layers.wgsl"

// Per-thread values of one decoder evaluation, four per vec4 (every width is a multiple
// of 4), so that the inner loops load four inputs at once and keep four independent sums.
struct NtcState {
    // The input vector (entries past the used ones stay 0), then every hidden layer's
    // activations, first hidden layer first.
    values: array<NtcVec4, (NTC_INPUT_WIDTH + NTC_HIDDEN_TOTAL) / 4u>,
#ifdef NTC_TRAINING
    // act'(z) of every hidden unit, in the order of the hidden activations.
    slopes: array<NtcVec4, NTC_HIDDEN_TOTAL / 4u>,
#endif
    // The decoder's outputs (the last layer is linear).
    outputs: array<NtcVec4, NTC_OUTPUTS / 4u>,
}

// This thread's decoder evaluation. Entries of `values` past the used inputs must stay 0.
var<private> ntc_state: NtcState;

// Index in NtcState::values (in vec4s) of the first input of `layer`.
fn ntc_layer_input_offset(layer: u32) -> u32 {
    var offset = 0u;
    for (var l = 0u; l < layer; l++) {
        offset += NTC_WIDTHS[l] / 4u;
    }
    return offset;
}

// Decoder parameters index .. index + 3.
fn ntc_weights4(index: u32) -> NtcVec4 {
    return NtcVec4(ntc_weight(index), ntc_weight(index + 1u), ntc_weight(index + 2u), ntc_weight(index + 3u));
}

// Runs the MLP on `ntc_state.values` (the input vector), filling the hidden activations
// (and, when training, their slopes) and `ntc_state.outputs`. Four outputs at a time:
// each vec4 of inputs is loaded once for four rows of weights.
fn ntc_forward() {
    var params = 0u;
    var input = 0u;
    for (var layer = 0u; layer < NTC_LAYERS; layer++) {
        let n_in = ntc_layer_inputs(layer);
        let n_out = ntc_layer_outputs(layer);
        let biases = params + n_in * n_out;
        let output = input + n_in / 4u;
        let last = layer + 1u == NTC_LAYERS;
        for (var o = 0u; o < n_out; o += 4u) {
            let rows = params + o * n_in;
            var z = NtcVec4(0.0);
            for (var i = 0u; i < n_in / 4u; i++) {
                let x = ntc_state.values[input + i];
                let at = rows + 4u * i;
                z += NtcVec4(
                    dot(ntc_weights4(at), x),
                    dot(ntc_weights4(at + n_in), x),
                    dot(ntc_weights4(at + 2u * n_in), x),
                    dot(ntc_weights4(at + 3u * n_in), x),
                );
            }
            z += ntc_weights4(biases + o);
            if last {
                ntc_state.outputs[o / 4u] = z;
            } else {
                ntc_state.values[output + o / 4u] = ntc_activation(z);
#ifdef NTC_TRAINING
                ntc_state.slopes[output - NTC_INPUT_WIDTH / 4u + o / 4u] = ntc_activation_slope(z);
#endif
            }
        }
        params = biases + n_out;
        input = output;
    }
}
