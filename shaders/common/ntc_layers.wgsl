// The NTC decoder's shape and activation, shared by every evaluation of it: the per-thread
// MLP (ntc_mlp.wgsl, used by the decode pass and the f32 trainer) and the batched
// mixed-precision trainer (ntc/train_step.wgsl). Parameters are in DecoderWeights::params
// order: per layer the row-major [out][in] weights, then the biases.
//
// Defines (set from NtcConfig by the host):
//   NTC_FEATURES     features per grid texel F (the input's first 2F values: both grids)
//   NTC_PE_WAVES     positional-encoding waves W (the next 4W)
//   NTC_INPUT_WIDTH  input vector width (2F + 4W + 1 rounded up to a multiple of 16)
//   NTC_LAYERS       number of layers (hidden layers + the linear output layer)
//   NTC_HIDDEN_0..3  hidden widths, 0 for the layers the config does not have
//   NTC_WIDEST       the widest of the input and hidden layers: where the decode kernels'
//                    unrolled (#for) layer loops end (set by the decode's host only)
//   NTC_LEAKY_SLOPE  model::LEAKY_SLOPE
//   NTC_LEAKY_RELU   (flag) LeakyReLU instead of the default hard-GELU
//   NTC_F16          (flag) `NtcScalar = f16` and ntc_activation_pair (the importer enables
//                    f16); the default is f32

#ifdef NTC_F16
alias NtcScalar = f16;
#else
alias NtcScalar = f32;
#endif
// Four values of the evaluation's scalar type.
alias NtcVec4 = vec4<NtcScalar>;

const NTC_FEATURES: u32 = ${NTC_FEATURES}u;
const NTC_PE_WAVES: u32 = ${NTC_PE_WAVES}u;
const NTC_OUTPUTS: u32 = 16u;
const NTC_INPUT_WIDTH: u32 = ${NTC_INPUT_WIDTH}u;
const NTC_LAYERS: u32 = ${NTC_LAYERS}u;
const NTC_HIDDEN_TOTAL: u32 = ${NTC_HIDDEN_0}u + ${NTC_HIDDEN_1}u + ${NTC_HIDDEN_2}u + ${NTC_HIDDEN_3}u;
const NTC_MAX_HIDDEN: u32 = max(max(${NTC_HIDDEN_0}u, ${NTC_HIDDEN_1}u), max(${NTC_HIDDEN_2}u, ${NTC_HIDDEN_3}u));
// Widths of the input and the hidden layers; layer l reads width l and writes width l + 1,
// except the last layer, which writes NTC_OUTPUTS.
const NTC_WIDTHS = array<u32, 5>(
    NTC_INPUT_WIDTH, ${NTC_HIDDEN_0}u, ${NTC_HIDDEN_1}u, ${NTC_HIDDEN_2}u, ${NTC_HIDDEN_3}u,
);

fn ntc_layer_inputs(layer: u32) -> u32 {
    return NTC_WIDTHS[layer];
}

fn ntc_layer_outputs(layer: u32) -> u32 {
    return select(NTC_WIDTHS[layer + 1u], NTC_OUTPUTS, layer + 1u == NTC_LAYERS);
}

// Index of the first parameter (weight [0][0]) of `layer`; its biases follow its
// ntc_layer_inputs · ntc_layer_outputs weights.
fn ntc_layer_params(layer: u32) -> u32 {
    var offset = 0u;
    for (var l = 0u; l < layer; l++) {
        offset += (ntc_layer_inputs(l) + 1u) * ntc_layer_outputs(l);
    }
    return offset;
}

// model::Activation::apply.
fn ntc_activation(x: NtcVec4) -> NtcVec4 {
#ifdef NTC_LEAKY_RELU
    return select(${NTC_LEAKY_SLOPE} * x, x, x > NtcVec4(0.0));
#else
    return x * clamp((x + 1.5) / 3.0, NtcVec4(0.0), NtcVec4(1.0));
#endif
}

// model::Activation::derivative (at a kink, the slope of the piece `ntc_activation` uses).
fn ntc_activation_slope(x: NtcVec4) -> NtcVec4 {
#ifdef NTC_LEAKY_RELU
    return select(NtcVec4(${NTC_LEAKY_SLOPE}), NtcVec4(1.0), x > NtcVec4(0.0));
#else
    let middle = select((2.0 * x + 1.5) / 3.0, NtcVec4(1.0), x > NtcVec4(1.5));
    return select(middle, NtcVec4(0.0), x < NtcVec4(-1.5));
#endif
}

#ifdef NTC_F16
// model::Activation::apply on an f16 pair, as the register kernels (common/ntc_fma.wgsl,
// common/ntc_coop.wgsl) evaluate it: (x + 1.5) / 3 as x · ⅓ + ½.
fn ntc_activation_pair(x: vec2<f16>) -> vec2<f16> {
#ifdef NTC_LEAKY_RELU
    return select(${NTC_LEAKY_SLOPE} * x, x, x > vec2<f16>(0.0));
#else
    return x * clamp(fma(x, vec2<f16>(1.0 / 3.0), vec2<f16>(0.5)), vec2<f16>(0.0), vec2<f16>(1.0));
#endif
}
#endif
