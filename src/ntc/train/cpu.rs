//! The CPU reference trainer: forward pass, loss, backward pass, QAT noise and Adam,
//! each exposed separately so that the WGSL trainer can be tested piece by piece
//! against it. It is written to be exact and readable, not fast: all arithmetic is in
//! f64 over f32 parameters (which is what the GPU stores), one sample at a time.
//!
//! Pieces, in the order a training step uses them:
//! 1. [`sample_batch`] picks the batch's texels.
//! 2. [`noisy_latents`] adds the QAT noise ([`qat_noise`], a stateless hash of seed,
//!    step, material and latent index, so the GPU can reproduce it bit for bit).
//! 3. [`forward`] samples both grids of the mip's pair ([`bilinear_taps`]), builds the
//!    input vector (see [`crate::ntc::model`]) and runs the MLP, keeping a
//!    [`ForwardCache`].
//! 4. [`loss`] is the weighted L2 error of one sample and its output gradient.
//! 5. [`backward`] adds the sample's gradients for every decoder parameter and for the
//!    latent texels its taps touched into a [`Gradients`].
//! 6. [`adam_step`] updates a parameter block (latents clamped to \[−1, 1\]).
//!
//! [`batch_gradients`] runs 3–5 over a batch (loss and gradients are means over the
//! batch) and [`train_cpu`] is the whole recipe for tiny textures.

use serde::{Deserialize, Serialize};

use super::schedule::Phase;
use super::{
    LossWeights, Quality, Sample, TrainConfig, TrainError, TrainedGroup, TrainedMaterial,
    sample_batch,
};
use crate::ntc::model::{
    GroupModel, LatentBits, LatentLayout, OUTPUTS, SplitMix64, lod_input, positional_encoding,
};
use crate::ntc::quant;
use crate::texture::{CHANNELS, TextureSet};

/// Salt that separates the batch-sampling stream of [`train_cpu`] from the
/// initialisation stream of the same seed.
pub const BATCH_STREAM: u64 = 0xBA7C_5EED_0000_0001;

/// One bilinear tap: the index of the texel's first feature in the material's flat
/// latent array and the tap's weight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tap {
    /// Index of feature 0 of the tapped texel.
    pub index: usize,
    /// Bilinear weight (the four taps of a sample sum to 1).
    pub weight: f64,
}

/// What [`backward`] needs from a [`forward`] call.
#[derive(Clone, Debug, PartialEq)]
pub struct ForwardCache {
    /// The sample's material.
    pub material: usize,
    /// Bilinear taps of the fine (`[0]`) and coarse (`[1]`) grid.
    pub taps: [[Tap; 4]; 2],
    /// The input of every layer: the padded input vector for layer 0, the previous
    /// layer's activations after that.
    pub layer_inputs: Vec<Vec<f64>>,
    /// The pre-activations of every layer; the last one is the output.
    pub pre_activations: Vec<Vec<f64>>,
}

/// Gradients of the mean batch loss: one value per decoder parameter (in
/// [`DecoderWeights::params`](crate::ntc::model::DecoderWeights::params) order) and
/// one per latent value of every material.
#[derive(Clone, Debug, PartialEq)]
pub struct Gradients {
    /// Decoder parameter gradients.
    pub decoder: Vec<f64>,
    /// Latent gradients, one array per material.
    pub latents: Vec<Vec<f64>>,
}

impl Gradients {
    /// All-zero gradients shaped like `model`.
    pub fn zeros(model: &GroupModel) -> Self {
        Gradients {
            decoder: vec![0.0; model.decoder().params().len()],
            latents: model
                .pyramids()
                .iter()
                .map(|p| vec![0.0; p.values().len()])
                .collect(),
        }
    }
}

/// The four bilinear taps of grid `grid` at normalised coordinates `(u, v)` with wrap
/// addressing: the continuous texel coordinate is `u · width − ½` (texel centres at
/// half-integers), taps at its floor and floor + 1, both wrapped into the grid. Order:
/// (x0, y0), (x1, y0), (x0, y1), (x1, y1).
pub fn bilinear_taps(layout: &LatentLayout, grid: u32, u: f64, v: f64) -> Option<[Tap; 4]> {
    let shape = layout.grid(grid)?;
    let base = layout.grid_offset(grid)?;
    let features = layout.features() as usize;
    let axis = |t: f64, n: u32| {
        let c = t * f64::from(n) - 0.5;
        let lo = c.floor();
        let wrap = |i: f64| (i as i64).rem_euclid(i64::from(n)) as usize;
        (wrap(lo), wrap(lo + 1.0), c - lo)
    };
    let (x0, x1, fx) = axis(u, shape.width);
    let (y0, y1, fy) = axis(v, shape.height);
    let w = shape.width as usize;
    let tap = |x: usize, y: usize, weight: f64| Tap {
        index: base + (y * w + x) * features,
        weight,
    };
    Some([
        tap(x0, y0, (1.0 - fx) * (1.0 - fy)),
        tap(x1, y0, fx * (1.0 - fy)),
        tap(x0, y1, (1.0 - fx) * fy),
        tap(x1, y1, fx * fy),
    ])
}

/// The decoder's outputs for `sample`, reading latents from `latents` (the material's
/// values, possibly with QAT noise added, in layout order), and the cache for
/// [`backward`].
pub fn forward(
    model: &GroupModel,
    latents: &[f32],
    sample: Sample,
) -> Result<(Vec<f64>, ForwardCache), TrainError> {
    let out_of_range = || TrainError::SampleOutOfRange(sample);
    let material = sample.material as usize;
    let mip = sample.mip as usize;
    let layout = model
        .pyramids()
        .get(material)
        .ok_or_else(out_of_range)?
        .layout();
    if latents.len() != layout.value_count() {
        return Err(TrainError::Size {
            what: format!("latents of material {material}"),
            expected: layout.value_count(),
            found: latents.len(),
        });
    }
    let (mw, mh) = layout.mip_size(mip).ok_or_else(out_of_range)?;
    let pair = layout.pair(mip).ok_or_else(out_of_range)?;
    if sample.x >= mw || sample.y >= mh {
        return Err(out_of_range());
    }
    let u = (f64::from(sample.x) + 0.5) / f64::from(mw);
    let v = (f64::from(sample.y) + 0.5) / f64::from(mh);
    let fine = bilinear_taps(layout, pair.fine, u, v).ok_or_else(out_of_range)?;
    let coarse = bilinear_taps(layout, pair.coarse, u, v).ok_or_else(out_of_range)?;
    let coarse_shape = layout.grid(pair.coarse).ok_or_else(out_of_range)?;

    let config = model.config();
    let mut input = Vec::with_capacity(config.input_width());
    for taps in [&fine, &coarse] {
        for f in 0..layout.features() as usize {
            input.push(
                taps.iter()
                    .map(|t| t.weight * f64::from(latents.get(t.index + f).copied().unwrap_or(0.0)))
                    .sum(),
            );
        }
    }
    input.extend(positional_encoding(config.pe_waves, coarse_shape, u, v));
    input.push(lod_input(mip, layout.mips()));
    input.resize(config.input_width(), 0.0);

    let layers = model.decoder().layers().len();
    let mut cache = ForwardCache {
        material,
        taps: [fine, coarse],
        layer_inputs: Vec::with_capacity(layers),
        pre_activations: Vec::with_capacity(layers),
    };
    let mut a = input;
    for (l, view) in model.decoder().layer_views().enumerate() {
        let z: Vec<f64> = view
            .weights
            .chunks_exact(view.shape.inputs)
            .zip(view.biases)
            .map(|(row, &b)| {
                f64::from(b)
                    + row
                        .iter()
                        .zip(&a)
                        .map(|(&w, &x)| f64::from(w) * x)
                        .sum::<f64>()
            })
            .collect();
        let next = if l + 1 < layers {
            z.iter().map(|&x| config.activation.apply(x)).collect()
        } else {
            z.clone()
        };
        cache.layer_inputs.push(std::mem::replace(&mut a, next));
        cache.pre_activations.push(z);
    }
    Ok((a, cache))
}

/// The target of `sample`: the texel's canonical channels as `byte / 255`.
pub fn target(sets: &[TextureSet], sample: Sample) -> Option<[f64; CHANNELS]> {
    let texel = sets
        .get(sample.material as usize)?
        .mips
        .get(sample.mip as usize)?
        .texel(sample.x, sample.y)?;
    let mut t = [0.0; CHANNELS];
    for (dst, &b) in t.iter_mut().zip(texel) {
        *dst = f64::from(b) / 255.0;
    }
    Some(t)
}

/// One sample's loss `Σ_c w_c (y_c − t_c)²` over the outputs (targets of the padding
/// outputs are 0, their weights too) and its gradient `2 w_c (y_c − t_c)`.
pub fn loss(
    outputs: &[f64],
    target: &[f64; CHANNELS],
    weights: &[f64; OUTPUTS],
) -> (f64, [f64; OUTPUTS]) {
    let mut total = 0.0;
    let mut grad = [0.0; OUTPUTS];
    for (c, (&y, &w)) in outputs.iter().zip(weights).enumerate() {
        let e = y - target.get(c).copied().unwrap_or(0.0);
        total += w * e * e;
        if let Some(g) = grad.get_mut(c) {
            *g = 2.0 * w * e;
        }
    }
    (total, grad)
}

/// Add the gradients of one sample, given the loss gradient `d_outputs` at its outputs,
/// into `grads`: `dW[o][i] += δ_o · a_i` and `db[o] += δ_o` for every layer (δ flowing
/// back through the transposed weights and the activation's derivative at the cached
/// pre-activation), then `dlatent[tap.index + f] += tap.weight · δ_input[f]` for the four
/// taps of each grid (fine features are inputs `0..F`, coarse ones `F..2F`).
pub fn backward(
    model: &GroupModel,
    cache: &ForwardCache,
    d_outputs: &[f64],
    grads: &mut Gradients,
) -> Result<(), TrainError> {
    let mismatch = |what: &str, expected: usize, found: usize| TrainError::Size {
        what: what.to_string(),
        expected,
        found,
    };
    let activation = model.config().activation;
    let views: Vec<_> = model.decoder().layer_views().collect();
    if grads.decoder.len() != model.decoder().params().len() {
        return Err(mismatch(
            "decoder gradients",
            model.decoder().params().len(),
            grads.decoder.len(),
        ));
    }
    if cache.layer_inputs.len() != views.len() || cache.pre_activations.len() != views.len() {
        return Err(mismatch(
            "cached layers",
            views.len(),
            cache.layer_inputs.len(),
        ));
    }
    let mut delta = d_outputs.to_vec();
    for (l, view) in views.iter().enumerate().rev() {
        let shape = view.shape;
        let inputs = &cache.layer_inputs[l];
        if delta.len() != shape.outputs || inputs.len() != shape.inputs {
            return Err(mismatch("layer width", shape.outputs, delta.len()));
        }
        let block = &mut grads.decoder[view.offset..view.offset + shape.param_count()];
        let (gw, gb) = block.split_at_mut(shape.weight_count());
        for ((row, gb), &d) in gw.chunks_exact_mut(shape.inputs).zip(gb).zip(&delta) {
            *gb += d;
            for (g, &a) in row.iter_mut().zip(inputs) {
                *g += d * a;
            }
        }
        let mut d_in = vec![0.0; shape.inputs];
        for (row, &d) in view.weights.chunks_exact(shape.inputs).zip(&delta) {
            for (di, &w) in d_in.iter_mut().zip(row) {
                *di += f64::from(w) * d;
            }
        }
        if l > 0 {
            for (di, &z) in d_in.iter_mut().zip(&cache.pre_activations[l - 1]) {
                *di *= activation.derivative(z);
            }
        }
        delta = d_in;
    }
    let features = model.config().features as usize;
    let latents = grads
        .latents
        .get_mut(cache.material)
        .ok_or_else(|| mismatch("latent gradient arrays", cache.material + 1, 0))?;
    for (k, taps) in cache.taps.iter().enumerate() {
        let d_features = delta.get(k * features..(k + 1) * features).unwrap_or(&[]);
        for tap in taps {
            let Some(dst) = latents.get_mut(tap.index..tap.index + features) else {
                return Err(mismatch(
                    "latent gradients",
                    tap.index + features,
                    latents.len(),
                ));
            };
            for (g, &d) in dst.iter_mut().zip(d_features) {
                *g += tap.weight * d;
            }
        }
    }
    Ok(())
}

/// Mean loss and gradients of a batch: forward, [`loss`] and [`backward`] for every
/// sample, with `latents[m]` the values material `m` is read from (noisy in training)
/// and the loss weights of each set's `present` mask; loss and gradients are divided by
/// the batch size.
pub fn batch_gradients(
    model: &GroupModel,
    sets: &[TextureSet],
    latents: &[Vec<f32>],
    batch: &[Sample],
    weights: &LossWeights,
) -> Result<(f64, Gradients), TrainError> {
    let mut grads = Gradients::zeros(model);
    let mut total = 0.0;
    let scale = 1.0 / batch.len().max(1) as f64;
    for &sample in batch {
        let m = sample.material as usize;
        let (Some(values), Some(set), Some(t)) =
            (latents.get(m), sets.get(m), target(sets, sample))
        else {
            return Err(TrainError::SampleOutOfRange(sample));
        };
        let (outputs, cache) = forward(model, values, sample)?;
        let (l, mut d) = loss(&outputs, &t, &weights.per_output(set.present));
        total += l;
        for g in &mut d {
            *g *= scale;
        }
        backward(model, &cache, &d, &mut grads)?;
    }
    Ok((total * scale, grads))
}

/// A 32-bit integer hash (PCG-RXS-M-XS, from Jarzynski & Olano, "Hash Functions for GPU
/// Rendering"), written with wrapping u32 arithmetic only so that WGSL computes the same.
pub fn pcg_hash(x: u32) -> u32 {
    let state = x.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277_803_737);
    (word >> 22) ^ word
}

/// The QAT noise of one latent value at one step, uniform in \[−q/2, q/2) for the step
/// `q` of `bits`:
///
/// ```text
/// h = pcg(index ^ pcg(material ^ pcg(step ^ pcg(seed))))
/// noise = (f32(h >> 8) * 2^-24 − 0.5) * q          // f32 arithmetic, in this order
/// ```
///
/// Every batch of a step sees the same noisy latents.
pub fn qat_noise(seed: u32, step: u32, material: u32, index: u32, bits: LatentBits) -> f32 {
    let h = pcg_hash(index ^ pcg_hash(material ^ pcg_hash(step ^ pcg_hash(seed))));
    ((h >> 8) as f32 * (1.0 / 16_777_216.0) - 0.5) * quant::step(bits)
}

/// `values` plus [`qat_noise`] for each value (indices wrap at 2^32).
pub fn noisy_latents(
    values: &[f32],
    bits: LatentBits,
    seed: u32,
    step: u32,
    material: u32,
) -> Vec<f32> {
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| v + qat_noise(seed, step, material, i as u32, bits))
        .collect()
}

/// Adam's hyper-parameters (defaults β1 = 0.9, β2 = 0.999, ε = 1e-8).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdamParams {
    /// First-moment decay.
    pub beta1: f64,
    /// Second-moment decay.
    pub beta2: f64,
    /// Denominator guard.
    pub epsilon: f64,
}

impl Default for AdamParams {
    fn default() -> Self {
        AdamParams {
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
        }
    }
}

/// Adam's moments for one parameter block, stored in f32 as on the GPU.
#[derive(Clone, Debug, PartialEq)]
pub struct AdamState {
    /// First moments.
    pub m: Vec<f32>,
    /// Second moments.
    pub v: Vec<f32>,
    /// Steps taken so far (for bias correction).
    pub step: u32,
}

impl AdamState {
    /// Zero moments for `len` parameters.
    pub fn new(len: usize) -> Self {
        AdamState {
            m: vec![0.0; len],
            v: vec![0.0; len],
            step: 0,
        }
    }
}

/// One Adam step over a parameter block, in f64 over the stored f32 values, with
/// `t = state.step + 1`:
///
/// ```text
/// m ← β1·m + (1 − β1)·g          v ← β2·v + (1 − β2)·g²
/// p ← p − lr · (m / (1 − β1^t)) / (√(v / (1 − β2^t)) + ε)
/// ```
///
/// then `p` is clamped to `clamp` when given (the latents' \[−1, 1\]). Every parameter is
/// updated, also those whose gradient is 0 this step (their momentum carries on). A
/// learning rate of 0 leaves `params` untouched but still advances the moments.
pub fn adam_step(
    params: &mut [f32],
    grads: &[f64],
    state: &mut AdamState,
    lr: f64,
    hyper: &AdamParams,
    clamp: Option<(f32, f32)>,
) -> Result<(), TrainError> {
    if grads.len() != params.len() || state.m.len() != params.len() || state.v.len() != params.len()
    {
        return Err(TrainError::Size {
            what: "Adam parameters, gradients and moments".into(),
            expected: params.len(),
            found: grads.len().min(state.m.len()).min(state.v.len()),
        });
    }
    state.step = state.step.saturating_add(1);
    let t = state.step as i32;
    let bc1 = 1.0 - hyper.beta1.powi(t);
    let bc2 = 1.0 - hyper.beta2.powi(t);
    for (((p, &g), m), v) in params
        .iter_mut()
        .zip(grads)
        .zip(&mut state.m)
        .zip(&mut state.v)
    {
        let m_new = hyper.beta1 * f64::from(*m) + (1.0 - hyper.beta1) * g;
        let v_new = hyper.beta2 * f64::from(*v) + (1.0 - hyper.beta2) * g * g;
        *m = m_new as f32;
        *v = v_new as f32;
        if lr != 0.0 {
            let update = lr * (m_new / bc1) / ((v_new / bc2).sqrt() + hyper.epsilon);
            let mut next = (f64::from(*p) - update) as f32;
            if let Some((lo, hi)) = clamp {
                next = next.clamp(lo, hi);
            }
            *p = next;
        }
    }
    Ok(())
}

/// Decode a whole colour mip of one material: [`CHANNELS`] values per texel,
/// row-major, unclamped.
pub fn decode_mip(model: &GroupModel, material: usize, mip: usize) -> Result<Vec<f32>, TrainError> {
    let at = |x, y| Sample {
        material: material as u32,
        mip: mip as u32,
        x,
        y,
    };
    let pyramid = model
        .pyramids()
        .get(material)
        .ok_or(TrainError::SampleOutOfRange(at(0, 0)))?;
    let (w, h) = pyramid
        .layout()
        .mip_size(mip)
        .ok_or(TrainError::SampleOutOfRange(at(0, 0)))?;
    let mut out = Vec::with_capacity(w as usize * h as usize * CHANNELS);
    for y in 0..h {
        for x in 0..w {
            let (outputs, _) = forward(model, pyramid.values(), at(x, y))?;
            out.extend(outputs.iter().take(CHANNELS).map(|&o| o as f32));
        }
    }
    Ok(out)
}

/// The quality of every material of `model` against its set's mip 0.
pub fn evaluate(model: &GroupModel, sets: &[TextureSet]) -> Result<Vec<Quality>, TrainError> {
    sets.iter()
        .enumerate()
        .map(|(i, set)| {
            let decoded = decode_mip(model, i, 0)?;
            Ok(set
                .mips
                .first()
                .map(|mip0| Quality::measure(&decoded, mip0, set.present))
                .unwrap_or_default())
        })
        .collect()
}

/// The standard layout of `set` and a check that its mips have the sizes and byte counts
/// that layout implies.
fn set_layout(set: &TextureSet, config: &TrainConfig) -> Result<LatentLayout, TrainError> {
    let bad = |reason: String| TrainError::BadSet {
        name: set.name.clone(),
        reason,
    };
    let layout = LatentLayout::new(
        set.width,
        set.height,
        set.mips.len(),
        config.model.preset,
        config.model.features,
    )
    .map_err(|e| bad(e.to_string()))?;
    for (m, mip) in set.mips.iter().enumerate() {
        let expected = layout.mip_size(m);
        if expected != Some((mip.width, mip.height)) {
            return Err(bad(format!(
                "mip {m} is {}×{}, expected {expected:?}",
                mip.width, mip.height
            )));
        }
        if mip.texels.len() != mip.width as usize * mip.height as usize * CHANNELS {
            return Err(bad(format!(
                "mip {m} holds {} bytes, expected {}",
                mip.texels.len(),
                mip.width as usize * mip.height as usize * CHANNELS
            )));
        }
    }
    Ok(layout)
}

/// The model a run over `sets` starts from: `config` validated, the standard layout of
/// every set (its mips checked against it) and [`GroupModel::init`] with `seed`.
pub(super) fn initial_model(
    sets: &[TextureSet],
    config: &TrainConfig,
    seed: u64,
) -> Result<GroupModel, TrainError> {
    config.validate()?;
    if sets.is_empty() {
        return Err(TrainError::EmptyGroup);
    }
    let layouts = sets
        .iter()
        .map(|s| set_layout(s, config))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(GroupModel::init(&config.model, layouts, seed)?)
}

/// Train one group on the CPU: `steps` main steps then the fine-tuning steps of
/// [`TrainConfig::schedule`], all deterministic for `seed`. Meant for tests on tiny
/// textures (≤ 16²); the GPU trainer follows the same recipe:
///
/// 1. [`GroupModel::init`] with `seed`; batches from a [`SplitMix64`] seeded with
///    `seed ^ BATCH_STREAM`; QAT noise seeded with `(seed ^ seed >> 32) as u32`.
/// 2. Main phase: noisy latents (when [`TrainConfig::qat`]), [`batch_gradients`], Adam on
///    every pyramid (clamped to \[−1, 1\]) and on the decoder (rate scaled by λ).
/// 3. Latents snapped to their quantisation levels; fresh Adam moments for the decoder;
///    fine-tuning phase on the exact quantised latents, decoder only.
/// 4. Decoder rounded to f16, quality measured on mip 0.
pub fn train_cpu(
    sets: &[TextureSet],
    config: &TrainConfig,
    steps: u64,
    seed: u64,
) -> Result<TrainedGroup, TrainError> {
    let mut model = initial_model(sets, config, seed)?;
    let schedule = config.schedule(steps, sets.len());
    let bits = config.model.latent_bits;
    let noise_seed = (seed ^ (seed >> 32)) as u32;
    let mut rng = SplitMix64::new(seed ^ BATCH_STREAM);
    let mut latent_states: Vec<AdamState> = model
        .pyramids()
        .iter()
        .map(|p| AdamState::new(p.values().len()))
        .collect();
    let mut decoder_state = AdamState::new(model.decoder().params().len());
    let mut losses = Vec::new();
    for step in 0..schedule.total_steps() {
        let Some(plan) = schedule.plan(step) else {
            break;
        };
        let main = plan.phase == Phase::Main;
        if !main && plan.phase_step == 0 {
            quantize_latents(&mut model, bits);
            decoder_state = AdamState::new(model.decoder().params().len());
        }
        let batch = sample_batch(
            &model,
            config.batch_size as usize,
            config.sample_tile,
            &mut rng,
        );
        let latents: Vec<Vec<f32>> = model
            .pyramids()
            .iter()
            .enumerate()
            .map(|(m, p)| {
                if main && config.qat {
                    noisy_latents(p.values(), bits, noise_seed, step as u32, m as u32)
                } else {
                    p.values().to_vec()
                }
            })
            .collect();
        let (batch_loss, grads) =
            batch_gradients(&model, sets, &latents, &batch, &config.loss_weights)?;
        losses.push(batch_loss);
        if main {
            for ((pyramid, g), state) in model
                .pyramids_mut()
                .iter_mut()
                .zip(&grads.latents)
                .zip(&mut latent_states)
            {
                adam_step(
                    pyramid.values_mut(),
                    g,
                    state,
                    plan.lr_latents,
                    &config.adam,
                    Some((-1.0, 1.0)),
                )?;
            }
        }
        adam_step(
            model.decoder_mut().params_mut(),
            &grads.decoder,
            &mut decoder_state,
            plan.lr_decoder,
            &config.adam,
            None,
        )?;
    }
    // Without fine-tuning steps the latents are snapped here; otherwise this is a no-op.
    quantize_latents(&mut model, bits);
    quant::round_through_f16(model.decoder_mut().params_mut())?;
    let quality = evaluate(&model, sets)?;
    let materials = sets
        .iter()
        .zip(quality)
        .map(|(set, quality)| TrainedMaterial {
            name: set.name.clone(),
            present: set.present,
            quality,
        })
        .collect();
    Ok(TrainedGroup {
        model,
        materials,
        losses,
    })
}

/// Snap every latent of `model` to its quantisation level (idempotent).
fn quantize_latents(model: &mut GroupModel, bits: LatentBits) {
    for p in model.pyramids_mut() {
        quant::snap(p.values_mut(), bits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ntc::model::{
        Activation, DecoderWeights, GridShape, LatentPyramid, MipPair, NtcConfig,
    };
    use crate::texture::ChannelMask;

    /// The gradient-check model: F = 4, hidden [8], a 4×4 texture with 2 mips reading
    /// a 3×3 and a 2×2 grid (odd sizes exercise wrap addressing).
    fn tiny_model(activation: Activation, seed: u64) -> (GroupModel, Vec<TextureSet>) {
        let config = NtcConfig {
            activation,
            ..NtcConfig::tiny()
        };
        let mut set = TextureSet::smooth(
            "tiny",
            ChannelMask::BASE_COLOR | ChannelMask::NORMAL,
            (4, 4),
            8.0,
            0.3,
        );
        set.mips.truncate(2);
        let layout = LatentLayout::from_parts(
            4,
            4,
            4,
            vec![
                GridShape {
                    width: 3,
                    height: 3,
                },
                GridShape {
                    width: 2,
                    height: 2,
                },
            ],
            vec![MipPair { fine: 0, coarse: 1 }; 2],
        )
        .expect("layout");
        let mut rng = SplitMix64::new(seed);
        let mut decoder = DecoderWeights::init(&config, &mut rng).expect("decoder");
        // Non-zero biases, so that their gradients are exercised through every layer.
        for p in decoder.params_mut().iter_mut().filter(|p| **p == 0.0) {
            *p = rng.uniform(-0.2, 0.2) as f32;
        }
        let pyramid = LatentPyramid::init(layout, &mut rng);
        let model = GroupModel::from_parts(config, decoder, vec![pyramid]).expect("model");
        (model, vec![set])
    }

    fn all_samples(model: &GroupModel) -> Vec<Sample> {
        let l = model.pyramids()[0].layout();
        (0..l.mips())
            .flat_map(|mip| {
                let (w, h) = l.mip_size(mip).expect("mip");
                (0..h).flat_map(move |y| {
                    (0..w).map(move |x| Sample {
                        material: 0,
                        mip: mip as u32,
                        x,
                        y,
                    })
                })
            })
            .collect()
    }

    fn batch_loss(model: &GroupModel, sets: &[TextureSet], batch: &[Sample]) -> f64 {
        let latents = vec![model.pyramids()[0].values().to_vec()];
        batch_gradients(model, sets, &latents, batch, &LossWeights::default())
            .expect("loss")
            .0
    }

    /// Central difference of the batch loss along one f32 parameter, divided by the
    /// actual (f32-rounded) step.
    fn central_difference(
        model: &GroupModel,
        sets: &[TextureSet],
        batch: &[Sample],
        param: impl Fn(&mut GroupModel) -> &mut f32,
    ) -> f64 {
        let h = 1e-3f32;
        let mut plus = model.clone();
        let mut minus = model.clone();
        let p = param(&mut plus);
        *p += h;
        let hi = f64::from(*p);
        let p = param(&mut minus);
        *p -= h;
        let lo = f64::from(*p);
        (batch_loss(&plus, sets, batch) - batch_loss(&minus, sets, batch)) / (hi - lo)
    }

    fn assert_close(analytic: f64, numeric: f64, what: &str) {
        let scale = analytic.abs().max(numeric.abs());
        assert!(
            scale > 1e-7,
            "{what}: gradient too small to check ({analytic})"
        );
        let rel = (analytic - numeric).abs() / scale;
        assert!(
            rel < 1e-3,
            "{what}: analytic {analytic}, numeric {numeric}, rel {rel}"
        );
    }

    #[test]
    fn backward_matches_finite_differences() {
        for activation in [Activation::HardGelu, Activation::LeakyRelu] {
            let (model, sets) = tiny_model(activation, 11);
            let batch = all_samples(&model);
            assert_eq!(batch.len(), 16 + 4);
            let latents = vec![model.pyramids()[0].values().to_vec()];
            let (_, grads) =
                batch_gradients(&model, &sets, &latents, &batch, &LossWeights::default())
                    .expect("grads");
            let views: Vec<_> = model
                .decoder()
                .layer_views()
                .map(|v| (v.offset, v.shape))
                .collect();
            let (off0, s0) = views[0];
            let (off1, s1) = views[1];
            // Hidden units that some sample activates (a unit below the hard-GELU's
            // flat part for every sample has zero gradients, which checks nothing).
            let live: Vec<usize> = (0..s0.outputs)
                .filter(|&o| grads.decoder[off0 + s0.weight_count() + o].abs() > 1e-6)
                .collect();
            assert!(live.len() >= 3, "{activation:?}: live units {live:?}");
            let mut decoder_params = Vec::new();
            for &o in &live[..3] {
                let row = off0 + o * s0.inputs;
                // Fine feature 0, coarse feature 1, a positional encoding, the LOD input.
                decoder_params.extend([row, row + 5, row + 9, row + 20]);
                decoder_params.push(off0 + s0.weight_count() + o);
            }
            decoder_params.extend([
                off1 + 2 * s1.inputs + live[0], // layer 1: base colour B from a live unit
                off1 + 5 * s1.inputs + live[1], // normal Y from another
                off1 + s1.weight_count(),       // bias of base colour R
            ]);
            for &i in &decoder_params {
                let numeric = central_difference(&model, &sets, &batch, |m| {
                    &mut m.decoder_mut().params_mut()[i]
                });
                assert_close(
                    grads.decoder[i],
                    numeric,
                    &format!("{activation:?} decoder param {i}"),
                );
            }
            // Latents of both grids: grid 0 holds 9 texels × 4, grid 1 starts at 36.
            for &i in &[0usize, 7, 17, 34, 36, 42, 51] {
                let numeric = central_difference(&model, &sets, &batch, |m| {
                    &mut m.pyramids_mut()[0].values_mut()[i]
                });
                assert_close(
                    grads.latents[0][i],
                    numeric,
                    &format!("{activation:?} latent {i}"),
                );
            }
            // Padding inputs and padding outputs get exactly zero gradient.
            assert_eq!(grads.decoder[off0 + 30], 0.0);
            assert_eq!(grads.decoder[off1 + s1.weight_count() + 13], 0.0);
        }
    }

    #[test]
    fn taps_wrap_and_sum_to_one() {
        let layout = LatentLayout::from_parts(
            4,
            4,
            4,
            vec![GridShape {
                width: 3,
                height: 2,
            }],
            vec![MipPair { fine: 0, coarse: 0 }],
        )
        .expect("layout");
        // u = 0.05: continuous x = -0.35 → taps at columns 2 (wrapped) and 0.
        let taps = bilinear_taps(&layout, 0, 0.05, 0.5).expect("taps");
        let sum: f64 = taps.iter().map(|t| t.weight).sum();
        assert!((sum - 1.0).abs() < 1e-12);
        assert_eq!(taps[0].index, (2 * 4)); // (x 2, y 0)
        assert_eq!(taps[1].index, 0); // (x 0, y 0)
        assert!((taps[0].weight - 0.35 * 0.5).abs() < 1e-12);
        // v = 0.5 on a 2-high grid: y = 0.5 → rows 0 and 1, half each.
        assert_eq!(taps[2].index, (3 + 2) * 4);
        // At a texel centre all weight sits on one tap.
        let taps = bilinear_taps(&layout, 0, 0.5, 0.25).expect("taps");
        assert!((taps[0].weight - 1.0).abs() < 1e-12);
        assert_eq!(taps[0].index, 4);
        assert!(bilinear_taps(&layout, 1, 0.5, 0.5).is_none());
    }

    #[test]
    fn forward_rejects_bad_samples_and_latents() {
        let (model, _) = tiny_model(Activation::HardGelu, 3);
        let values = model.pyramids()[0].values();
        let ok = Sample {
            material: 0,
            mip: 1,
            x: 1,
            y: 1,
        };
        let (out, cache) = forward(&model, values, ok).expect("forward");
        assert_eq!(out.len(), OUTPUTS);
        assert_eq!(cache.layer_inputs[0].len(), 32);
        // LOD input of the last of 2 mips is 1; the padding after it is 0.
        assert_eq!(cache.layer_inputs[0][20], 1.0);
        assert!(cache.layer_inputs[0][21..].iter().all(|&x| x == 0.0));
        for bad in [
            Sample { x: 2, ..ok },
            Sample { mip: 2, ..ok },
            Sample { material: 1, ..ok },
        ] {
            assert_eq!(
                forward(&model, values, bad).expect_err("bad"),
                TrainError::SampleOutOfRange(bad)
            );
        }
        assert!(matches!(
            forward(&model, &values[1..], ok),
            Err(TrainError::Size { .. })
        ));
    }

    #[test]
    fn qat_noise_is_deterministic_and_bounded() {
        let bits = LatentBits::Four;
        let q = quant::step(bits);
        let a = noisy_latents(&[0.0; 1000], bits, 7, 3, 1);
        assert_eq!(a, noisy_latents(&[0.0; 1000], bits, 7, 3, 1));
        assert_ne!(a, noisy_latents(&[0.0; 1000], bits, 7, 4, 1));
        assert_ne!(a, noisy_latents(&[0.0; 1000], bits, 7, 3, 2));
        assert!(a.iter().all(|&n| (-q / 2.0..q / 2.0).contains(&n)));
        let mean: f32 = a.iter().sum::<f32>() / a.len() as f32;
        assert!(mean.abs() < q * 0.05, "{mean}");
        let spread = a.iter().fold(0.0f32, |m, &n| m.max(n.abs()));
        assert!(spread > q * 0.45);
        // Fixed values for the GPU port to compare with.
        assert_eq!(pcg_hash(0), 129_708_002);
        assert_eq!(pcg_hash(1), 2_831_084_092);
    }

    #[test]
    fn adam_step_matches_hand_computation() {
        let hyper = AdamParams::default();
        let mut p = [0.5f32, 0.99];
        let mut state = AdamState::new(2);
        adam_step(
            &mut p,
            &[0.2, -4.0],
            &mut state,
            0.1,
            &hyper,
            Some((-1.0, 1.0)),
        )
        .expect("step");
        // First step: m̂ = g, v̂ = g², so the update is lr · g / (|g| + ε) ≈ ±lr.
        assert!((p[0] - 0.4).abs() < 1e-6, "{}", p[0]);
        assert_eq!(p[1], 1.0, "clamped");
        assert!((state.m[0] - 0.02).abs() < 1e-8);
        assert!((state.v[0] - 0.001 * 0.04).abs() < 1e-10);
        adam_step(&mut p, &[0.0, 0.0], &mut state, 0.1, &hyper, None).expect("step");
        // Zero gradient: momentum still moves the parameter.
        let m = 0.9 * 0.02;
        let v = 0.999 * 0.001 * 0.04;
        let expected =
            0.4 - 0.1 * (m / (1.0 - 0.81)) / ((v / (1.0 - 0.999f64.powi(2))).sqrt() + 1e-8);
        assert!(
            (f64::from(p[0]) - expected).abs() < 1e-6,
            "{} vs {expected}",
            p[0]
        );
        let before = p;
        adam_step(&mut p, &[1.0, 1.0], &mut state, 0.0, &hyper, None).expect("step");
        assert_eq!(p, before);
        assert_eq!(state.step, 3);
        assert!(adam_step(&mut p, &[1.0], &mut state, 0.1, &hyper, None).is_err());
    }

    fn tiny_train_config() -> TrainConfig {
        TrainConfig {
            model: NtcConfig {
                features: 8,
                hidden: vec![32, 32],
                ..NtcConfig::default()
            },
            lr_latents: 3e-2,
            lr_decoder: 1e-2,
            batch_size: 64,
            ..TrainConfig::default()
        }
    }

    #[test]
    fn tiny_training_run_reaches_the_psnr_band() {
        let present = ChannelMask::BASE_COLOR | ChannelMask::NORMAL;
        let sets = vec![TextureSet::smooth("tiny", present, (8, 8), 8.0, 0.0)];
        let config = tiny_train_config();
        let untrained = GroupModel::init(
            &config.model,
            vec![set_layout(&sets[0], &config).expect("layout")],
            42,
        )
        .expect("model");
        let before = evaluate(&untrained, &sets).expect("eval")[0].psnr[0].expect("base colour");
        let trained = train_cpu(&sets, &config, 400, 42).expect("train");
        let quality = trained.materials[0].quality;
        let base = quality.psnr[0].expect("base colour");
        let normal = quality.psnr[2].expect("normal");
        assert!(quality.psnr[1].is_none() && quality.psnr[3].is_none());
        assert!(base > before + 5.0, "before {before}, after {base}");
        // Measured: 6.0 dB untrained, base colour 36.8 dB and normal 34.9 dB after.
        assert!((31.0..42.0).contains(&base), "base colour PSNR {base}");
        assert!((29.0..41.0).contains(&normal), "normal PSNR {normal}");
        assert_eq!(trained.losses.len(), 400 + 20);
        // Latents are quantised, the decoder holds f16 values.
        let bits = config.model.latent_bits;
        let mut snapped = trained.model.pyramids()[0].values().to_vec();
        quant::snap(&mut snapped, bits);
        assert_eq!(snapped, trained.model.pyramids()[0].values());
        let mut rounded = trained.model.decoder().params().to_vec();
        quant::round_through_f16(&mut rounded).expect("f16");
        assert_eq!(rounded, trained.model.decoder().params());
        // Deterministic for a seed.
        let again = train_cpu(&sets, &config, 400, 42).expect("train");
        assert_eq!(again, trained);
    }

    #[test]
    fn shared_decoder_trains_two_sets() {
        let present = ChannelMask::BASE_COLOR;
        let sets = vec![
            TextureSet::smooth("a", present, (8, 8), 8.0, 0.0),
            TextureSet::smooth("b", present, (8, 8), 8.0, 2.0),
        ];
        let trained = train_cpu(&sets, &tiny_train_config(), 200, 3).expect("train");
        assert_eq!(trained.model.pyramids().len(), 2);
        assert_eq!(trained.materials[1].name, "b");
        for m in &trained.materials {
            let base = m.quality.psnr[0].expect("base colour");
            assert!(base > 18.0, "{}: {base}", m.name);
        }
        let first: f64 = trained.losses[..20].iter().sum();
        let last: f64 = trained.losses[180..200].iter().sum();
        assert!(last < first * 0.5, "{first} → {last}");
    }

    #[test]
    fn train_cpu_rejects_bad_input() {
        let config = tiny_train_config();
        assert_eq!(train_cpu(&[], &config, 1, 0), Err(TrainError::EmptyGroup));
        let mut set = TextureSet::smooth("broken", ChannelMask::BASE_COLOR, (4, 4), 8.0, 0.0);
        set.mips[1].texels.pop();
        let err = train_cpu(&[set], &config, 1, 0).expect_err("broken set");
        assert!(err.to_string().contains("`broken`"), "{err}");
    }
}
