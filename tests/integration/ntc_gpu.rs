//! The GPU trainer against the CPU reference (`neurotex::ntc::train::cpu`), for every
//! training kernel the adapter runs (`f32`, and the mixed-precision `f16` and
//! `coop-matrix`): gradients of a fixed batch with and without QAT noise, on both
//! gradient-accumulation paths; one Adam step; the fused kernel's batches; short training
//! runs that must land in a PSNR band; checkpoints, determinism and cancellation.
//! Everything is tiny so that the file runs in about a minute on lavapipe.
//!
//! Kernels: lavapipe runs `f32` and `f16`; a kernel the adapter lacks is skipped with a
//! printed line, unless `NEUROTEX_REQUIRE_KERNELS` names it (comma-separated, e.g.
//! `coop-matrix` on a GPU that has cooperative matrices), which makes its absence a
//! failure.
//!
//! Tolerances. The `f32` kernel evaluates in f32 what the CPU evaluates in f64, so every
//! gradient carries f32 rounding from the forward pass (~1e-7 relative per operation, a
//! few dozen operations deep) and from summing up to 170 samples' contributions; with
//! `|g|max` the largest gradient of a block, errors of `1e-5 · |g|max` leave a margin of
//! ×10 or more over what was measured (see each test). The mixed-precision kernels round
//! every product operand to f16 (inputs, weights, activations, act'(z), δ: 2^-11 ≈ 4.9e-4
//! relative each) and sum in f32, so a gradient is off by a few times 1e-3 of the block's
//! largest: [`F16_TOLERANCE`]. The fixed-point path adds at most half a quantum per atomic
//! add: `adds / (2 S)` with one add per workgroup for a decoder parameter (none for the
//! mixed-precision kernels, whose decoder gradients are plain sums) and one per tapping
//! sample for a latent (S = 2^24 and 2^26).

use std::sync::atomic::AtomicBool;

use neurotex::ntc::model::{
    Activation, DecoderWeights, GridShape, GroupModel, LatentLayout, LatentPyramid, MipPair,
    NtcConfig, SplitMix64,
};
use neurotex::ntc::train::checkpoint::Checkpoint;
use neurotex::ntc::train::cpu::{self, AdamState, Gradients};
use neurotex::ntc::train::gpu::{
    GRAD_SCALE_DECODER, GRAD_SCALE_LATENTS, GpuTrainError, GpuTrainer, GpuTrainerOptions,
    GradientAtomics, LatentAdam, MAX_TRAIN_WORKGROUPS, PROFILED_STEPS, QatNoise, RETIMED_PLANS,
    TIMED_STEPS, TRAIN_ROWS, TrainKernel, TrainOptions, TrainWorkgroups, train_gpu,
};
use neurotex::ntc::train::schedule::Phase;
use neurotex::ntc::train::{Sample, TrainConfig, TrainError};
use neurotex::texture::{CHANNELS, ChannelMask, TextureSet};

/// Gradient tolerance of the mixed-precision kernels, relative to a block's largest
/// gradient (see the module docs; measured on lavapipe: decoder within 4.1e-4, latents
/// within 5.2e-4, the loss within 1e-4 relative; each test prints its values).
const F16_TOLERANCE: f64 = 2e-3;

/// The training kernels to test for models of shape `config`: those the adapter runs,
/// with a printed line for each it skips; a kernel named in `NEUROTEX_REQUIRE_KERNELS`
/// that cannot run is a failure.
fn kernels_for(config: &NtcConfig) -> Vec<TrainKernel> {
    let required = std::env::var("NEUROTEX_REQUIRE_KERNELS").unwrap_or_default();
    let ctx = crate::common::ctx();
    TrainKernel::ALL
        .into_iter()
        .filter(|k| match k.unavailable(ctx, config) {
            None => true,
            Some(reason) => {
                assert!(
                    !required.split(',').any(|r| r.trim() == k.name()),
                    "NEUROTEX_REQUIRE_KERNELS names `{k}`, but {}: {reason}",
                    ctx.describe()
                );
                println!("kernel {k} skipped on {}: {reason}", ctx.describe());
                false
            }
        })
        .collect()
}

/// Two sets sharing a decoder: "a" 16² and "b" `b_size`², of patterns with other periods
/// and phases.
fn two_sets(present: ChannelMask, b_size: u32) -> Vec<TextureSet> {
    vec![
        TextureSet::smooth("a", present, (16, 16), 8.0, 0.0),
        TextureSet::smooth("b", present, (b_size, b_size), 4.0, 1.0),
    ]
}

/// The gradient-check group: F = 4, hidden [16], two 8×8 sets (4 mips each) sharing the
/// decoder, with odd grid sizes (3×3, 2×2, 2×1, 1×1) so that wrap addressing matters, and
/// different channel masks so that the loss weights differ per material.
fn tiny_group(activation: Activation, seed: u64) -> (TrainConfig, GroupModel, Vec<TextureSet>) {
    let config = TrainConfig {
        model: NtcConfig {
            features: 4,
            hidden: vec![16],
            activation,
            ..NtcConfig::default()
        },
        batch_size: 256,
        ..TrainConfig::default()
    };
    let sets = vec![
        TextureSet::smooth(
            "a",
            ChannelMask::BASE_COLOR | ChannelMask::NORMAL,
            (8, 8),
            8.0,
            0.3,
        ),
        TextureSet::smooth(
            "b",
            ChannelMask::BASE_COLOR | ChannelMask::ROUGHNESS,
            (8, 8),
            4.0,
            1.7,
        ),
    ];
    let grid = |width, height| GridShape { width, height };
    let pair = |fine, coarse| MipPair { fine, coarse };
    let layout = LatentLayout::from_parts(
        8,
        8,
        4,
        vec![grid(3, 3), grid(2, 2), grid(2, 1), grid(1, 1)],
        vec![pair(0, 1), pair(0, 1), pair(2, 3), pair(2, 3)],
    )
    .expect("layout");
    let mut rng = SplitMix64::new(seed);
    let mut decoder = DecoderWeights::init(&config.model, &mut rng).expect("decoder");
    // Non-zero biases, so that every bias gradient flows through every layer. The padding
    // inputs' weights stay 0.
    let first_layer = config.model.input_width() * 16;
    for (i, p) in decoder.params_mut().iter_mut().enumerate() {
        if *p == 0.0 && (i >= first_layer || i % config.model.input_width() < 21) {
            *p = rng.uniform(-0.2, 0.2) as f32;
        }
    }
    let pyramids = (0..2)
        .map(|_| LatentPyramid::init(layout.clone(), &mut rng))
        .collect();
    let model = GroupModel::from_parts(config.model.clone(), decoder, pyramids).expect("model");
    (config, model, sets)
}

/// Every texel of every mip of every set.
fn all_samples(sets: &[TextureSet]) -> Vec<Sample> {
    let mut batch = Vec::new();
    for (material, set) in sets.iter().enumerate() {
        for (mip, level) in set.mips.iter().enumerate() {
            for y in 0..level.height {
                for x in 0..level.width {
                    batch.push(Sample {
                        material: material as u32,
                        mip: mip as u32,
                        x,
                        y,
                    });
                }
            }
        }
    }
    batch
}

/// A trainer for a given model.
fn trainer(
    config: &TrainConfig,
    model: GroupModel,
    sets: &[TextureSet],
    atomics: GradientAtomics,
    kernel: TrainKernel,
) -> GpuTrainer {
    let options = GpuTrainerOptions {
        atomics,
        kernel: Some(kernel),
        ..GpuTrainerOptions::default()
    };
    let gpu = trainer_with(config, model, sets, 10, &options);
    assert_eq!(gpu.kernel(), kernel);
    gpu
}

/// A trainer for a given model, `main_steps` long, with `options`.
fn trainer_with(
    config: &TrainConfig,
    model: GroupModel,
    sets: &[TextureSet],
    main_steps: u64,
    options: &GpuTrainerOptions,
) -> GpuTrainer {
    let start = Checkpoint::new(config, model, main_steps, 0);
    GpuTrainer::new(crate::common::ctx(), sets, start, options).unwrap_or_else(|e| panic!("{e}"))
}

/// The gradient tolerance of `kernel` (relative to a block's largest gradient).
fn tolerance(kernel: TrainKernel) -> f64 {
    match kernel {
        TrainKernel::F32 => 1e-5,
        TrainKernel::F16 | TrainKernel::CoopMatrix => F16_TOLERANCE,
    }
}

/// Largest |gpu − cpu| and largest |cpu| of a block.
fn block_error(gpu: &[f64], cpu: &[f64]) -> (f64, f64) {
    assert_eq!(gpu.len(), cpu.len());
    gpu.iter()
        .zip(cpu)
        .fold((0.0f64, 0.0f64), |(err, max), (g, c)| {
            (err.max((g - c).abs()), max.max(c.abs()))
        })
}

/// Compare GPU and CPU gradients: every value within `tolerance · |g|max` of its block
/// plus `quantum` (absolute); returns the largest relative error of each block.
fn assert_gradients_close(
    what: &str,
    gpu: &Gradients,
    cpu: &Gradients,
    tolerance: f64,
    quantum: (f64, f64),
) -> (f64, f64) {
    // One block: its gradients must be large enough to test (above `least`) and within
    // the tolerance; its relative error.
    let check = |block: &str, gpu: &[f64], cpu: &[f64], least: f64, quantum: f64| {
        let (err, max) = block_error(gpu, cpu);
        assert!(
            max > least,
            "{what}: {block} gradients too small to test ({max})"
        );
        assert!(
            err <= tolerance * max + quantum,
            "{what}: {block} gradient error {err:e} (largest gradient {max:e})"
        );
        err / max
    };
    let decoder = check("decoder", &gpu.decoder, &cpu.decoder, 1e-3, quantum.0);
    assert_eq!(gpu.latents.len(), cpu.latents.len());
    let latent = gpu
        .latents
        .iter()
        .zip(&cpu.latents)
        .enumerate()
        .map(|(m, (g, c))| check(&format!("material {m} latent"), g, c, 1e-4, quantum.1))
        .fold(0.0f64, f64::max);
    (decoder, latent)
}

#[test]
fn gpu_gradients_match_the_cpu_reference() {
    for activation in [Activation::HardGelu, Activation::LeakyRelu] {
        let (config, model, sets) = tiny_group(activation, 5);
        let batch = all_samples(&sets);
        assert_eq!(batch.len(), 2 * (64 + 16 + 4 + 1));
        let bits = config.model.latent_bits;
        for kernel in kernels_for(&config.model) {
            let mut gpu = trainer(&config, model.clone(), &sets, GradientAtomics::Auto, kernel);
            let tol = tolerance(kernel);
            for noise in [None, Some(QatNoise { seed: 77, step: 3 })] {
                let latents: Vec<Vec<f32>> = model
                    .pyramids()
                    .iter()
                    .enumerate()
                    .map(|(m, p)| match noise {
                        Some(n) => cpu::noisy_latents(p.values(), bits, n.seed, n.step, m as u32),
                        None => p.values().to_vec(),
                    })
                    .collect();
                let (cpu_loss, cpu_grads) =
                    cpu::batch_gradients(&model, &sets, &latents, &batch, &config.loss_weights)
                        .expect("cpu gradients");
                let (gpu_loss, gpu_grads) = gpu.gradients(&batch, noise).expect("gpu gradients");
                let what = format!("{kernel}, {activation:?}, noise {noise:?}");
                // Measured on lavapipe: f32 loss within 2e-7 relative, gradients within
                // 4e-7 of the block's largest gradient; f16 see the printed values.
                assert!(
                    (gpu_loss - cpu_loss).abs() <= tol * cpu_loss,
                    "{what}: loss {gpu_loss} vs {cpu_loss}"
                );
                let (d, l) = assert_gradients_close(&what, &gpu_grads, &cpu_grads, tol, (0.0, 0.0));
                println!(
                    "{what}: loss rel err {:.1e}, decoder {d:.1e}, latents {l:.1e} (of |g|max)",
                    (gpu_loss - cpu_loss).abs() / cpu_loss
                );
            }
            // Noise changes the gradients (so the comparison above tested the noise).
            let (_, plain) = gpu.gradients(&batch, None).expect("gradients");
            let (_, noisy) = gpu
                .gradients(&batch, Some(QatNoise { seed: 77, step: 3 }))
                .expect("gradients");
            assert!(block_error(&plain.decoder, &noisy.decoder).0 > 1e-5);
        }
    }
}

#[test]
fn decoder_gradients_add_up_over_each_workgroups_chunks() {
    // Every sample of the tiny group 200 times: more chunks than MAX_TRAIN_WORKGROUPS
    // workgroups take one each at any chunk size, so the mixed-precision step's workgroups
    // add several chunks' weight and bias gradients to their partials; with at most 7
    // workgroups each adds dozens, the last fewer.
    let (mut config, model, sets) = tiny_group(Activation::HardGelu, 6);
    let batch: Vec<Sample> = std::iter::repeat_n(all_samples(&sets), 200)
        .flatten()
        .collect();
    config.batch_size = batch.len() as u32;
    assert!(batch.len() > (MAX_TRAIN_WORKGROUPS * TRAIN_ROWS[0]) as usize);
    let latents: Vec<Vec<f32>> = model
        .pyramids()
        .iter()
        .map(|p| p.values().to_vec())
        .collect();
    let (cpu_loss, cpu_grads) =
        cpu::batch_gradients(&model, &sets, &latents, &batch, &config.loss_weights)
            .expect("cpu gradients");
    // The decoder's gradients only: the latents' come from atomics, whose fixed-point
    // rounding grows with the adds and is tested above.
    let mixed = kernels_for(&config.model)
        .into_iter()
        .filter(|&k| k != TrainKernel::F32);
    for kernel in mixed {
        for cap in [MAX_TRAIN_WORKGROUPS, 7] {
            let options = GpuTrainerOptions {
                kernel: Some(kernel),
                train_workgroups: TrainWorkgroups::AtMost(cap),
                ..GpuTrainerOptions::default()
            };
            let mut gpu = trainer_with(&config, model.clone(), &sets, 10, &options);
            let (gpu_loss, gpu_grads) = gpu.gradients(&batch, None).expect("gpu gradients");
            let tol = tolerance(kernel);
            assert!(
                (gpu_loss - cpu_loss).abs() <= tol * cpu_loss,
                "{kernel}, ≤ {cap} workgroups: loss {gpu_loss} vs {cpu_loss}"
            );
            let (err, max) = block_error(&gpu_grads.decoder, &cpu_grads.decoder);
            assert!(
                max > 1e-3,
                "{kernel}: decoder gradients too small to test ({max})"
            );
            assert!(
                err <= tol * max,
                "{kernel}, ≤ {cap} workgroups: decoder gradient error {err:e} (largest gradient {max:e})"
            );
            println!(
                "{kernel}, {} samples, ≤ {cap} workgroups: decoder {:.1e} (of |g|max)",
                batch.len(),
                err / max
            );
        }
    }
}

#[test]
fn timed_workgroup_plans_are_steps_of_the_run() {
    // A batch of 8 192 samples is at least 128 chunks at any chunk size, so the timed
    // plans include 128 workgroups of one chunk and 64 of two.
    let (mut config, model, sets) = tiny_group(Activation::HardGelu, 9);
    config.batch_size = 8192;
    for kernel in kernels_for(&config.model) {
        let options = GpuTrainerOptions {
            kernel: Some(kernel),
            ..GpuTrainerOptions::default()
        };
        let new = |main_steps| trainer_with(&config, model.clone(), &sets, main_steps, &options);
        let mut gpu = new(60);
        let timing = gpu.time_workgroup_plans().expect("timing");
        let Some(rows) = gpu.chunk_rows() else {
            // The f32 trainer has no plans to time, and runs no step for it.
            assert_eq!(timing, None, "{kernel}");
            assert_eq!(gpu.current_step(), 0);
            assert_eq!(gpu.train_workgroups(), None);
            continue;
        };
        let timing = timing.unwrap_or_else(|| panic!("{kernel}: no timing"));
        println!("{kernel}: {timing}");
        let plans = &timing.plans;
        assert!(plans.len() >= 2, "{kernel}: {plans:?}");
        for (i, &(groups, chunks, seconds)) in plans.iter().enumerate() {
            let per_plan = chunks * rows;
            assert!(per_plan * groups >= 8192 && per_plan * (groups - 1) < 8192);
            assert!(seconds.is_finite() && seconds > 0.0, "{plans:?}");
            if i > 0 {
                assert!(groups < plans[i - 1].0, "{plans:?}");
            }
        }
        assert!(plans.iter().any(|p| p.0 == timing.chosen), "{timing:?}");
        assert_eq!(gpu.train_workgroups(), Some(timing.chosen));
        // One untimed round, one per plan and one for each of the fastest, all steps of
        // the run.
        let rounds = plans.len() + 1 + plans.len().min(RETIMED_PLANS);
        assert_eq!(gpu.current_step(), rounds as u64 * TIMED_STEPS, "{kernel}");
        gpu.step(4).expect("steps after the timing");
        let group = gpu.finish().expect("finish");
        assert_eq!(group.losses.len() as u64, gpu.current_step(), "{kernel}");
        assert!(group.losses.iter().all(|l| l.is_finite()), "{kernel}");
        // Too few main steps left for every plan: nothing runs.
        let mut short = new(TIMED_STEPS);
        assert_eq!(short.time_workgroup_plans().expect("timing"), None);
        assert_eq!(short.current_step(), 0);
    }
}

#[test]
fn fixed_point_gradients_are_within_their_quantum() {
    let (config, model, sets) = tiny_group(Activation::HardGelu, 9);
    let batch = all_samples(&sets);
    let noise = QatNoise { seed: 1, step: 0 };
    let latents: Vec<Vec<f32>> = model
        .pyramids()
        .iter()
        .enumerate()
        .map(|(m, p)| {
            cpu::noisy_latents(
                p.values(),
                config.model.latent_bits,
                noise.seed,
                noise.step,
                m as u32,
            )
        })
        .collect();
    let (_, cpu_grads) =
        cpu::batch_gradients(&model, &sets, &latents, &batch, &config.loss_weights).expect("cpu");
    for kernel in kernels_for(&config.model) {
        let mut gpu = trainer(
            &config,
            model.clone(),
            &sets,
            GradientAtomics::FixedPoint,
            kernel,
        );
        assert!(gpu.fixed_point());
        let (_, gpu_grads) = gpu.gradients(&batch, Some(noise)).expect("gpu");
        // f32: one add per workgroup for a decoder parameter; the mixed kernels sum the
        // decoder's gradients without atomics. A latent is tapped by at most every sample
        // of the batch, 4 taps each (the 1×1 grid).
        let decoder_adds = match kernel {
            TrainKernel::F32 => batch.len().div_ceil(gpu.workgroup_size() as usize) as f64,
            _ => 0.0,
        };
        let quantum = (
            decoder_adds * 0.5 / f64::from(GRAD_SCALE_DECODER),
            4.0 * batch.len() as f64 * 0.5 / f64::from(GRAD_SCALE_LATENTS),
        );
        let what = format!("{kernel} fixed point");
        let (d, l) =
            assert_gradients_close(&what, &gpu_grads, &cpu_grads, tolerance(kernel), quantum);
        println!("{what}: decoder {d:.1e}, latents {l:.1e} of |g|max; quanta {quantum:?}");
    }
}

/// A trainer of a 16² and an 8² base-colour set sharing a decoder (F = 4, hidden [8]),
/// drawing batches of `batch_size` in tiles of side `sample_tile`, and the sets.
fn big_and_small(batch_size: u32, sample_tile: u32) -> (Vec<TextureSet>, GpuTrainer) {
    let config = TrainConfig {
        model: NtcConfig {
            features: 4,
            hidden: vec![8],
            ..NtcConfig::default()
        },
        batch_size,
        sample_tile,
        ..TrainConfig::default()
    };
    let sets: Vec<_> = [("big", 16), ("small", 8)]
        .into_iter()
        .map(|(name, size)| {
            TextureSet::smooth(name, ChannelMask::BASE_COLOR, (size, size), 8.0, 0.0)
        })
        .collect();
    let start = Checkpoint::fresh(&sets, &config, 10, 3).expect("fresh");
    let options = GpuTrainerOptions::default();
    let gpu = GpuTrainer::new(crate::common::ctx(), &sets, start, &options).expect("trainer");
    (sets, gpu)
}

#[test]
fn gpu_batches_weight_materials_by_texels_and_mips_by_area() {
    let (sets, mut gpu) = big_and_small(20000, 1);
    let batch = gpu.draw_batch(5).expect("batch");
    assert_eq!(batch.len(), 20000);
    assert_eq!(
        batch,
        gpu.draw_batch(5).expect("batch"),
        "deterministic per step"
    );
    assert_ne!(batch, gpu.draw_batch(6).expect("batch"));
    // Mip chains of 341 and 85 texels: 16², 8², 4², 2², 1² and 8², 4², 2², 1².
    let mut per_mip = [[0usize; 5]; 2];
    for s in &batch {
        let level = &sets[s.material as usize].mips[s.mip as usize];
        assert!(s.x < level.width && s.y < level.height, "{s:?}");
        per_mip[s.material as usize][s.mip as usize] += 1;
    }
    let n = batch.len() as f64;
    let big: usize = per_mip[0].iter().sum();
    assert!((big as f64 / n - 341.0 / 426.0).abs() < 0.02, "{per_mip:?}");
    for (m, area) in [256.0, 64.0, 16.0, 4.0, 1.0].iter().enumerate() {
        let share = per_mip[0][m] as f64 / n;
        assert!((share - area / 426.0).abs() < 0.015, "big mip {m}: {share}");
    }
    // Every texel of the small set's mip 0 is drawn about equally often (64 / 426 of
    // the batch over 64 texels: 47 each on average).
    let mut counts = [0usize; 64];
    for s in batch.iter().filter(|s| s.material == 1 && s.mip == 0) {
        counts[(s.y * 8 + s.x) as usize] += 1;
    }
    assert!(counts.iter().all(|&c| (15..90).contains(&c)), "{counts:?}");
}

#[test]
fn gpu_batches_in_tiles_cover_the_wrapped_tiles_of_the_untiled_anchors() {
    // Tile t's anchor is the untiled batch's sample t (the same hash of the same index),
    // and its 16 samples are the 4 × 4 texels from it, wrapping at the mip's edges.
    let batch = |sample_tile| {
        let (sets, mut gpu) = big_and_small(16 * 500 + 3, sample_tile);
        (sets, gpu.draw_batch(5).expect("batch"))
    };
    let ((sets, untiled), (_, tiled)) = (batch(1), batch(4));
    assert_eq!(tiled.len(), 8003);
    for (t, tile) in tiled.chunks(16).enumerate() {
        let anchor = untiled[t];
        let (w, h) = {
            let level = &sets[anchor.material as usize].mips[anchor.mip as usize];
            (level.width, level.height)
        };
        for (i, s) in tile.iter().enumerate() {
            let (dx, dy) = (i as u32 % 4, i as u32 / 4);
            let expected = Sample {
                x: (anchor.x + dx) % w,
                y: (anchor.y + dy) % h,
                ..anchor
            };
            assert_eq!(*s, expected, "tile {t}, sample {i}");
        }
    }
}

#[test]
fn the_fused_step_trains_on_the_sample_kernels_batch() {
    // train_step draws its samples itself; its loss at step 0 must be that of the batch
    // the sample kernel draws for step 0, given explicitly (bit for bit: the same values
    // in the same order).
    let present = ChannelMask::BASE_COLOR | ChannelMask::NORMAL;
    let sets = two_sets(present, 8);
    let seed = 3;
    let untiled = run_config(4, 200);
    let kernels = kernels_for(&untiled.model);
    let tiled = TrainConfig {
        sample_tile: 4,
        ..untiled.clone()
    };
    for (config, kernel) in [untiled, tiled]
        .iter()
        .flat_map(|c| kernels.iter().map(move |&k| (c, k)))
        .filter(|&(_, k)| k != TrainKernel::F32)
    {
        let options = GpuTrainerOptions {
            kernel: Some(kernel),
            atomics: GradientAtomics::FixedPoint,
            ..GpuTrainerOptions::default()
        };
        let fresh = || Checkpoint::fresh(&sets, config, 10, seed).expect("fresh");
        let mut stepped =
            GpuTrainer::new(crate::common::ctx(), &sets, fresh(), &options).expect("trainer");
        stepped.step(1).expect("step");
        let trained = stepped.checkpoint().expect("checkpoint");
        let mut given =
            GpuTrainer::new(crate::common::ctx(), &sets, fresh(), &options).expect("trainer");
        let batch = given.draw_batch(0).expect("batch");
        let noise = QatNoise {
            seed: (seed ^ (seed >> 32)) as u32,
            step: 0,
        };
        let (loss, _) = given.gradients(&batch, Some(noise)).expect("gradients");
        assert_eq!(
            trained.losses,
            vec![loss],
            "{kernel}, tile {}",
            config.sample_tile
        );
    }
}

#[test]
fn one_adam_step_matches_the_cpu() {
    let (config, model, sets) = tiny_group(Activation::HardGelu, 21);
    let batch = all_samples(&sets);
    for kernel in kernels_for(&config.model) {
        let mut gpu = trainer(&config, model.clone(), &sets, GradientAtomics::Auto, kernel);
        let (_, grads) = gpu.gradients(&batch, None).expect("gradients");
        let (lr_latents, lr_decoder) = (0.05, 0.01);
        gpu.apply_adam(Some(lr_latents), lr_decoder).expect("adam");
        // A second step exercises the bias corrections and the stored moments; it
        // reapplies nothing: apply_adam consumed the gradients, so this one sees zeros.
        gpu.apply_adam(Some(lr_latents), lr_decoder).expect("adam");
        let after = gpu.checkpoint().expect("checkpoint");

        let mut expected = model.clone();
        let mut decoder_state = AdamState::new(model.decoder().params().len());
        let zeros = |n: usize| vec![0.0; n];
        for g in [&grads.decoder, &zeros(grads.decoder.len())] {
            cpu::adam_step(
                expected.decoder_mut().params_mut(),
                g,
                &mut decoder_state,
                lr_decoder,
                &config.adam,
                None,
            )
            .expect("cpu adam");
        }
        let mut latent_states = Vec::new();
        for (m, pyramid) in expected.pyramids_mut().iter_mut().enumerate() {
            let mut state = AdamState::new(pyramid.values().len());
            for g in [&grads.latents[m], &zeros(grads.latents[m].len())] {
                cpu::adam_step(
                    pyramid.values_mut(),
                    g,
                    &mut state,
                    lr_latents,
                    &config.adam,
                    Some((-1.0, 1.0)),
                )
                .expect("cpu adam");
            }
            latent_states.push(state);
        }
        // f32 Adam against f64 Adam: the update lr · m̂ / (√v̂ + ε) is ~lr in size and
        // carries a few f32 roundings; measured within 2e-8 of the parameter. (The mixed
        // kernels' Adam sums the decoder's per-workgroup gradients in f32, the readback
        // above in f64; at the first step m̂ / √v̂ = ±1 whatever the gradient's rounding.)
        let close = |a: &[f32], b: &[f32], tol: f32, what: &str| {
            let err = a
                .iter()
                .zip(b)
                .fold(0.0f32, |e, (x, y)| e.max((x - y).abs()));
            assert!(err <= tol, "{kernel} {what}: max error {err:e}");
            err
        };
        let e = close(
            after.model.decoder().params(),
            expected.decoder().params(),
            1e-6,
            "decoder",
        );
        let mut el = 0.0f32;
        for (m, (g, c)) in after
            .model
            .pyramids()
            .iter()
            .zip(expected.pyramids())
            .enumerate()
        {
            el = el.max(close(g.values(), c.values(), 1e-6, &format!("latents {m}")));
            assert!(g.values().iter().all(|v| (-1.0..=1.0).contains(v)));
        }
        close(&after.adam.decoder.m, &decoder_state.m, 1e-7, "decoder m");
        close(&after.adam.decoder.v, &decoder_state.v, 1e-8, "decoder v");
        for (g, c) in after.adam.latents.iter().zip(&latent_states) {
            close(&g.m, &c.m, 1e-7, "latent m");
            close(&g.v, &c.v, 1e-8, "latent v");
            assert_eq!(g.step, c.step);
        }
        assert_eq!(after.adam.decoder.step, 2);
        // The next gradients use the updated decoder (the mixed kernels read Adam's f16
        // copy of it).
        let (_, next) = gpu.gradients(&batch, None).expect("gradients");
        let latents: Vec<Vec<f32>> = after
            .model
            .pyramids()
            .iter()
            .map(|p| p.values().to_vec())
            .collect();
        let (_, cpu_next) =
            cpu::batch_gradients(&after.model, &sets, &latents, &batch, &config.loss_weights)
                .expect("cpu gradients");
        assert_gradients_close(
            &format!("{kernel} after Adam"),
            &next,
            &cpu_next,
            tolerance(kernel),
            (0.0, 0.0),
        );
        println!("{kernel} adam: parameter error decoder {e:.1e}, latents {el:.1e}");
    }
}

/// The training-run settings: a small model with `features` features, `batch_size`
/// texels per batch, fast rates.
fn run_config(features: u32, batch_size: u32) -> TrainConfig {
    TrainConfig {
        model: NtcConfig {
            features,
            hidden: vec![32, 32],
            ..NtcConfig::default()
        },
        lr_latents: 3e-2,
        lr_decoder: 1e-2,
        batch_size,
        ..TrainConfig::default()
    }
}

#[test]
fn training_reaches_the_psnr_band_for_one_and_two_sets() {
    let present = ChannelMask::BASE_COLOR | ChannelMask::NORMAL;
    let one = vec![TextureSet::smooth("one", present, (32, 32), 16.0, 0.0)];
    let two = vec![
        TextureSet::smooth("a", present, (32, 32), 16.0, 0.0),
        TextureSet::smooth("b", present, (32, 32), 8.0, 2.0),
    ];
    let config = run_config(8, 512);
    for kernel in kernels_for(&config.model) {
        for (sets, steps) in [(&one, 300u64), (&two, 300)] {
            let untrained = Checkpoint::fresh(sets, &config, steps, 42)
                .expect("init")
                .model;
            let before =
                cpu::evaluate(&untrained, sets).expect("evaluate")[0].psnr[0].expect("base");
            let mut reports = Vec::new();
            let trained = train_gpu(
                crate::common::ctx(),
                sets,
                &config,
                steps,
                42,
                TrainOptions {
                    log_every: 50,
                    gpu: GpuTrainerOptions {
                        kernel: Some(kernel),
                        ..GpuTrainerOptions::default()
                    },
                    ..TrainOptions::default()
                },
                &mut |p| reports.push(*p),
            )
            .unwrap_or_else(|e| panic!("{e}"));
            let total = config.schedule(steps, sets.len()).total_steps();
            assert_eq!(trained.losses.len() as u64, total);
            let last = reports.last().expect("a final report");
            assert_eq!(
                (last.step, last.total, last.phase),
                (total, total, Phase::FineTune)
            );
            assert!(reports.windows(2).all(|w| w[0].step < w[1].step));
            assert!(
                reports
                    .iter()
                    .all(|r| r.texels_per_second > 0.0 && r.loss.is_finite())
            );
            // Only the mixed-precision trainers share a step out to train_step workgroups.
            assert!(
                reports
                    .iter()
                    .all(|r| r.train_workgroups.is_some() == (kernel != TrainKernel::F32)),
                "{kernel}"
            );
            // The band is checked on the CPU reference's evaluation of the returned model;
            // the quality the GPU measured must agree with it (f32 against f64 decoding:
            // measured within 0.001 dB).
            let cpu_quality = cpu::evaluate(&trained.model, sets).expect("evaluate");
            for (material, quality) in trained.materials.iter().zip(&cpu_quality) {
                for (gpu, cpu) in material.quality.psnr.iter().zip(&quality.psnr) {
                    match (gpu, cpu) {
                        (Some(g), Some(c)) => assert!((g - c).abs() < 0.01, "{g} vs {c}"),
                        (g, c) => assert_eq!(g, c),
                    }
                }
                let base = quality.psnr[0].expect("base colour");
                let normal = quality.psnr[2].expect("normal");
                println!(
                    "{kernel}: {} of {}: {before:.1} dB untrained → base colour {base:.1} dB, \
                     normal {normal:.1} dB",
                    material.name,
                    sets.len()
                );
                // A learnt texture is far above the untrained decoder; 4-bit latents on a
                // 32² pattern after 300 steps cannot be near-lossless, so a value above 45
                // dB would mean the measurement compares the wrong things. (Measured with
                // f32: 27.5 dB for one set, 25.0–25.3 dB for two; the CPU trainer gives
                // 27.2 dB for the first case; f16 within 0.3 dB of f32.)
                assert!(
                    base > before + 10.0,
                    "{kernel} {}: {before} → {base}",
                    material.name
                );
                assert!(
                    (22.0..45.0).contains(&base),
                    "{kernel} {}: base colour {base}",
                    material.name
                );
                assert!(
                    (20.0..45.0).contains(&normal),
                    "{kernel} {}: normal {normal}",
                    material.name
                );
            }
            let first: f64 = trained.losses[..20].iter().sum();
            let last: f64 = trained.losses[steps as usize - 20..steps as usize]
                .iter()
                .sum();
            assert!(last < first * 0.2, "{kernel}: loss {first} → {last}");
        }
    }
}

#[test]
fn checkpoints_resume_bit_for_bit_and_cancel_cleanly() {
    let present = ChannelMask::BASE_COLOR;
    let sets = two_sets(present, 16);
    let config = run_config(4, 128);
    let ctx = crate::common::ctx();
    let steps = 40;
    let fresh = || Checkpoint::fresh(&sets, &config, steps, 7).expect("fresh");
    for kernel in kernels_for(&config.model) {
        // Fixed-point atomics add integers and every other sum runs in a fixed order, so
        // runs are deterministic and a resumed run must equal an uninterrupted one
        // exactly, across the switch to fine-tuning (main steps 40, fine-tuning 2).
        let options = GpuTrainerOptions {
            atomics: GradientAtomics::FixedPoint,
            kernel: Some(kernel),
            ..GpuTrainerOptions::default()
        };
        let mut straight = GpuTrainer::new(ctx, &sets, fresh(), &options).expect("trainer");
        assert_eq!(straight.step(1000).expect("steps"), 42);
        let expected = straight.checkpoint().expect("checkpoint");
        let mut again = GpuTrainer::new(ctx, &sets, fresh(), &options).expect("trainer");
        again.step(1000).expect("steps");
        assert!(
            again.checkpoint().expect("checkpoint") == expected,
            "{kernel}: the same run twice differs"
        );

        let mut first = GpuTrainer::new(ctx, &sets, fresh(), &options).expect("trainer");
        assert_eq!(first.step(25).expect("steps"), 25);
        let saved = first.checkpoint().expect("checkpoint");
        assert_eq!(saved.step, 25);
        let path = crate::common::temp_dir("ntc_checkpoint").join("run.ckpt");
        saved.save(&path).expect("save");
        let loaded = Checkpoint::load(&path).expect("load");
        assert!(loaded == saved, "the saved checkpoint reads back unchanged");
        let mut second = GpuTrainer::new(ctx, &sets, loaded, &options).expect("trainer");
        assert_eq!(second.step(1000).expect("steps"), 17);
        let resumed = second.checkpoint().expect("checkpoint");
        assert_eq!(resumed.step, expected.step);
        assert_eq!(resumed.losses, expected.losses, "{kernel}");
        assert!(
            resumed.adam == expected.adam,
            "{kernel}: Adam moments differ"
        );
        assert!(resumed.model == expected.model, "{kernel}: models differ");
    }

    let saved = {
        let mut gpu =
            GpuTrainer::new(ctx, &sets, fresh(), &GpuTrainerOptions::default()).expect("trainer");
        gpu.step(25).expect("steps");
        gpu.checkpoint().expect("checkpoint")
    };
    // Damaged files are errors, never panics.
    let bytes = saved.to_bytes().expect("bytes");
    for cut in [0, 7, 20, bytes.len() / 2, bytes.len() - 1] {
        assert!(
            Checkpoint::from_bytes(&bytes[..cut]).is_err(),
            "cut at {cut}"
        );
    }
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 1;
    assert!(Checkpoint::from_bytes(&flipped).is_err());

    // A raised cancel flag stops before the first chunk with the run's start.
    let cancel = AtomicBool::new(true);
    let result = train_gpu(
        ctx,
        &sets,
        &config,
        steps,
        7,
        TrainOptions {
            cancel: Some(&cancel),
            ..TrainOptions::default()
        },
        &mut |_| {},
    );
    match result {
        Err(GpuTrainError::Cancelled(checkpoint)) => assert_eq!(checkpoint.step, 0),
        other => panic!("expected a cancellation, got {other:?}"),
    }
    // Resuming needs the same run.
    let result = train_gpu(
        ctx,
        &sets,
        &config,
        steps + 1,
        7,
        TrainOptions {
            resume: Some(saved),
            ..TrainOptions::default()
        },
        &mut |_| {},
    );
    assert!(
        matches!(result, Err(GpuTrainError::Checkpoint(_))),
        "{result:?}"
    );
}

/// The group's package as bytes (model, quality) followed by its losses' bits.
fn group_bits(config: &TrainConfig, group: &neurotex::ntc::train::TrainedGroup) -> Vec<u8> {
    let mut package = neurotex::ntc::NtcPackage::new(config.model.clone()).expect("package");
    package
        .add_group(group, &vec![[1.0; CHANNELS]; group.materials.len()])
        .expect("add group");
    let mut bits = package.to_bytes().expect("bytes");
    bits.extend(group.losses.iter().flat_map(|l| l.to_bits().to_le_bytes()));
    bits
}

#[test]
fn profiled_steps_are_steps_of_the_run() {
    // With each kernel's dispatches in a timed compute pass of its own, a step is the same
    // step: deterministic runs with and without profiled steps end bit-identical.
    let sets = two_sets(ChannelMask::BASE_COLOR, 16);
    let config = run_config(4, 128);
    let ctx = crate::common::ctx();
    let fresh = |steps| Checkpoint::fresh(&sets, &config, steps, 7).expect("fresh");
    for kernel in kernels_for(&config.model) {
        let options = GpuTrainerOptions {
            atomics: GradientAtomics::FixedPoint,
            kernel: Some(kernel),
            ..GpuTrainerOptions::default()
        };
        let mut plain = GpuTrainer::new(ctx, &sets, fresh(20), &options).expect("trainer");
        plain.step(1000).expect("steps");
        let expected = plain.checkpoint().expect("checkpoint");

        let mut profiled = GpuTrainer::new(ctx, &sets, fresh(20), &options).expect("trainer");
        profiled.step(3).expect("steps");
        let times = profiled.profile_kernels().expect("profile");
        if ctx.granted.timestamps {
            let times = times.unwrap_or_else(|| panic!("{kernel}: no kernel times"));
            println!("{kernel}: {times}");
            assert_eq!(profiled.current_step(), 3 + PROFILED_STEPS, "{kernel}");
            let kernels: Vec<&str> = times.kernels.iter().map(|&(k, _)| k).collect();
            let dispatched = match kernel {
                TrainKernel::F32 => vec![
                    "train.sample",
                    "train.forward_backward",
                    "train.reduce_loss",
                    "train.adam",
                ],
                TrainKernel::F16 | TrainKernel::CoopMatrix => {
                    vec!["train.train_step", "train.adam"]
                }
            };
            assert_eq!(kernels, dispatched, "{kernel}");
            // The split: Adam alone, and every other kernel summed.
            let split = times.split();
            let total: f64 = times.kernels.iter().map(|&(_, ms)| ms).sum();
            let adam = times.kernels.last().map_or(0.0, |&(_, ms)| ms);
            assert_eq!(split.adam, adam, "{kernel}");
            assert!((split.gradients + split.adam - total).abs() <= 1e-9 * total.max(1.0));
            assert!(
                times
                    .kernels
                    .iter()
                    .all(|&(_, ms)| ms.is_finite() && ms >= 0.0)
                    && times.kernels.iter().any(|&(_, ms)| ms > 0.0),
                "{kernel}: {times}"
            );
        } else {
            assert_eq!(times, None, "{kernel}: timed without timestamps");
        }
        profiled.step(1000).expect("steps");
        let got = profiled.checkpoint().expect("checkpoint");
        assert_eq!(got.losses, expected.losses, "{kernel}");
        assert!(got.adam == expected.adam, "{kernel}: Adam moments differ");
        assert!(got.model == expected.model, "{kernel}: models differ");

        // Lazy latent Adam's catch-up and replay are kernels of the step, timed as part of
        // Adam.
        let lazy = GpuTrainerOptions {
            latent_adam: LatentAdam::Lazy,
            ..options
        };
        let mut deferred = GpuTrainer::new(ctx, &sets, fresh(20), &lazy).expect("trainer");
        if let Some(times) = deferred.profile_kernels().expect("profile") {
            let kernels: Vec<&str> = times.kernels.iter().map(|&(k, _)| k).collect();
            for lazy_kernel in ["train.adam_catch_up", "train.adam_replay"] {
                assert!(kernels.contains(&lazy_kernel), "{kernel}: {kernels:?}");
            }
            let adam: f64 = times
                .kernels
                .iter()
                .filter(|(k, _)| k.starts_with("train.adam"))
                .map(|&(_, ms)| ms)
                .sum();
            assert_eq!(times.split().adam, adam, "{kernel}");
        }

        // Too few main steps left: nothing runs.
        let mut short =
            GpuTrainer::new(ctx, &sets, fresh(PROFILED_STEPS - 1), &options).expect("trainer");
        assert_eq!(short.profile_kernels().expect("profile"), None, "{kernel}");
        assert_eq!(short.current_step(), 0, "{kernel}");
    }
}

#[test]
fn lazy_latent_adam_trains_the_dense_run_bit_for_bit() {
    // A batch of 4 samples reads at most 32 of the two sets' 111 latent texels per step, so
    // most texels sit out most steps: lazy Adam defers their steps and replays them when
    // a batch next reads them, at a checkpoint and before fine-tuning. A batch of 64 reads
    // most of them, listed by two catch-up workgroups. Its runs must be dense Adam's bit
    // for bit (values, moments, losses), uninterrupted, read back midway and resumed from
    // that checkpoint.
    let sets = two_sets(ChannelMask::BASE_COLOR | ChannelMask::NORMAL, 32);
    let ctx = crate::common::ctx();
    for (kernel, config) in [run_config(4, 4), run_config(4, 64)]
        .into_iter()
        .flat_map(|c| {
            kernels_for(&c.model)
                .into_iter()
                .map(move |k| (k, c.clone()))
        })
    {
        let label = format!("{kernel}, batch {}", config.batch_size);
        let fresh = || Checkpoint::fresh(&sets, &config, 40, 5).expect("fresh");
        let options = |latent_adam| GpuTrainerOptions {
            atomics: GradientAtomics::FixedPoint,
            kernel: Some(kernel),
            latent_adam,
            ..GpuTrainerOptions::default()
        };
        let (dense, lazy) = (options(LatentAdam::Dense), options(LatentAdam::Lazy));
        let mut straight = GpuTrainer::new(ctx, &sets, fresh(), &dense).expect("trainer");
        straight.step(17).expect("steps");
        let midway = straight.checkpoint().expect("checkpoint");
        assert_eq!(straight.step(1000).expect("steps"), 25, "{label}");
        let expected = straight.checkpoint().expect("checkpoint");
        let expected_group = group_bits(&config, &straight.finish().expect("finish"));

        let same = |got: &Checkpoint, want: &Checkpoint, when: &str| {
            assert!(got.model == want.model, "{label}: models differ {when}");
            assert!(got.adam == want.adam, "{label}: Adam moments differ {when}");
            assert_eq!(got.losses, want.losses, "{label}: losses differ {when}");
        };
        let mut deferred = GpuTrainer::new(ctx, &sets, fresh(), &lazy).expect("trainer");
        deferred.step(17).expect("steps");
        same(
            &deferred.checkpoint().expect("checkpoint"),
            &midway,
            "at step 17",
        );
        deferred.step(1000).expect("steps");
        same(
            &deferred.checkpoint().expect("checkpoint"),
            &expected,
            "at the end",
        );
        let group = group_bits(&config, &deferred.finish().expect("finish"));
        assert!(group == expected_group, "{label}: finished groups differ");

        // Resumed lazily from the dense run's midway checkpoint.
        let mut resumed = GpuTrainer::new(ctx, &sets, midway, &lazy).expect("trainer");
        resumed.step(1000).expect("steps");
        same(
            &resumed.checkpoint().expect("checkpoint"),
            &expected,
            "resumed",
        );
    }
}

#[test]
fn auto_latent_adam_follows_the_group_against_its_batch() {
    // The two sets have 111 latent texels (24 + 87). `auto` (the default) steps them lazily where
    // they exceed three times the texels a batch reads (eight per sample): for a batch of
    // 1, not for one of 8; an explicit choice stands.
    let sets = two_sets(ChannelMask::BASE_COLOR | ChannelMask::NORMAL, 32);
    let ctx = crate::common::ctx();
    for kernel in kernels_for(&run_config(4, 1).model) {
        for (batch, choice, want) in [
            (1, LatentAdam::Auto, LatentAdam::Lazy),
            (8, LatentAdam::Auto, LatentAdam::Dense),
            (1, LatentAdam::Dense, LatentAdam::Dense),
            (8, LatentAdam::Lazy, LatentAdam::Lazy),
        ] {
            let config = run_config(4, batch);
            let options = GpuTrainerOptions {
                kernel: Some(kernel),
                latent_adam: choice,
                ..GpuTrainerOptions::default()
            };
            let fresh = Checkpoint::fresh(&sets, &config, 10, 5).expect("fresh");
            let trainer = GpuTrainer::new(ctx, &sets, fresh, &options).expect("trainer");
            assert_eq!(
                trainer.latent_adam(),
                want,
                "{kernel}, batch {batch}, {choice:?}"
            );
        }
    }
}

#[test]
fn deterministic_recipes_train_bit_identical_groups() {
    // Two sets that share a decoder: the decoder gradients of both and the latent
    // scatter are summed by atomics from many workgroups, which is where atomic<f32>
    // depends on the order the adds happen to run in.
    let present = ChannelMask::BASE_COLOR | ChannelMask::NORMAL;
    let sets = two_sets(present, 16);
    let config = TrainConfig {
        deterministic: true,
        ..run_config(4, 256)
    };
    let ctx = crate::common::ctx();
    let train = |gpu: GpuTrainerOptions| {
        let options = TrainOptions {
            gpu,
            ..TrainOptions::default()
        };
        train_gpu(ctx, &sets, &config, 60, 11, options, &mut |_| {})
    };
    let run = |options| group_bits(&config, &train(options).unwrap_or_else(|e| panic!("{e}")));
    let first = run(GpuTrainerOptions::default());
    let second = run(GpuTrainerOptions::default());
    assert!(first == second, "two deterministic runs differ");
    // Deterministic means the fixed-point path: the same bits as asking for it.
    let fixed = run(GpuTrainerOptions {
        atomics: GradientAtomics::FixedPoint,
        ..GpuTrainerOptions::default()
    });
    assert!(
        first == fixed,
        "a deterministic run is not the fixed-point run"
    );
    // atomic<f32> cannot be deterministic: refused before training.
    match train(GpuTrainerOptions {
        atomics: GradientAtomics::Float,
        ..GpuTrainerOptions::default()
    }) {
        Err(e) => assert!(e.to_string().contains("deterministic"), "{e}"),
        Ok(_) => panic!("a deterministic recipe trained with atomic<f32>"),
    }
}

#[test]
fn bad_input_is_an_error() {
    let (config, model, sets) = tiny_group(Activation::HardGelu, 1);
    let kernel = TrainKernel::best(crate::common::ctx(), &config.model);
    let mut gpu = trainer(&config, model.clone(), &sets, GradientAtomics::Auto, kernel);
    let bad = Sample {
        material: 0,
        mip: 1,
        x: 4,
        y: 0,
    };
    assert!(matches!(
        gpu.gradients(&[bad], None),
        Err(GpuTrainError::Train(TrainError::SampleOutOfRange(s))) if s == bad
    ));
    let too_many = vec![
        Sample {
            material: 1,
            mip: 0,
            x: 0,
            y: 0
        };
        300
    ];
    assert!(matches!(
        gpu.gradients(&too_many, None),
        Err(GpuTrainError::BatchTooLarge { .. })
    ));
    let mut broken = sets.clone();
    broken[1].mips[2].texels.pop();
    let start = Checkpoint::new(&config, model.clone(), 10, 0);
    let err = GpuTrainer::new(
        crate::common::ctx(),
        &broken,
        start,
        &GpuTrainerOptions::default(),
    )
    .err()
    .expect("broken set");
    assert!(err.to_string().contains("`b`"), "{err}");
    let start = Checkpoint::new(&config, model, 10, 0);
    assert!(
        GpuTrainer::new(
            crate::common::ctx(),
            &sets[..1],
            start,
            &GpuTrainerOptions::default()
        )
        .is_err()
    );
    // Cooperative matrices need hidden widths that are multiples of 16: asking for them
    // with 8 is an error naming the reason, on every adapter.
    let narrow = TrainConfig {
        model: NtcConfig {
            hidden: vec![8],
            ..config.model.clone()
        },
        ..config.clone()
    };
    let start = Checkpoint::fresh(&sets, &narrow, 10, 0).expect("fresh");
    let options = GpuTrainerOptions {
        kernel: Some(TrainKernel::CoopMatrix),
        ..GpuTrainerOptions::default()
    };
    match GpuTrainer::new(crate::common::ctx(), &sets, start, &options) {
        Err(e @ GpuTrainError::KernelUnavailable { .. }) => {
            assert!(e.to_string().contains("coop-matrix"), "{e}");
        }
        Err(e) => panic!("expected KernelUnavailable, got {e}"),
        Ok(_) => panic!("coop-matrix trained hidden width 8"),
    }
    assert_eq!(crate::common::ctx().uncaptured_error_count(), 0);
}

/// `name` from the environment, or `default`.
fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Training throughput of the default model (F = 16, 48→64→64→16) on one procedural set,
/// for every kernel the adapter runs, each batch size and both gradient paths, in
/// texels per second and TFLOP/s (the decoder's nominal
/// [`training_flops_per_sample`](neurotex::ntc::train::training_flops_per_sample)).
/// Measured on an NVIDIA H200 through Vulkan (1024², 256 steps; texels/s, TFLOP/s, ms per
/// step; f32 and fixed-point atomics within 1 % of each other): batch 32768 — f32 3.2e7,
/// 1.58, 1.02; f16 9.7e6, 0.48, 3.38; coop-matrix 6.8e7, 3.34, 0.48; batch 65536 — f32
/// 3.3e7, 1.64, 1.96; f16 9.7e6, 0.48, 6.72; coop-matrix 7.2e7, 3.53, 0.91; evaluation
/// 1.8e8 texels/s. lavapipe (2 cores, 64², batch 1024): f32 1.7e4, f16 2.7e3. Run in
/// release:
/// `cargo test --release --test integration ntc_gpu -- --ignored --nocapture`; on a big GPU raise the
/// sizes with `NTC_BENCH_SIZE` (texture side, default 256), `NTC_BENCH_BATCHES` (batch
/// sizes, comma-separated, default 32768), `NTC_BENCH_STEPS` (timed steps, default 8) and
/// `NTC_BENCH_WORKGROUP` (largest workgroup of the f32 kernel, default 64).
#[test]
#[ignore = "benchmark; prints texels per second"]
fn throughput_of_the_default_model() {
    let size = env_or("NTC_BENCH_SIZE", 256) as u32;
    let steps = env_or("NTC_BENCH_STEPS", 8);
    let batches: Vec<u32> = std::env::var("NTC_BENCH_BATCHES")
        .unwrap_or_else(|_| "32768".into())
        .split(',')
        .map(|b| {
            b.trim()
                .parse()
                .expect("NTC_BENCH_BATCHES: comma-separated integers")
        })
        .collect();
    let sets = vec![TextureSet::smooth(
        "bench",
        ChannelMask::BASE_COLOR | ChannelMask::NORMAL,
        (size, size),
        32.0,
        0.0,
    )];
    let ctx = crate::common::ctx();
    let flops = neurotex::ntc::train::training_flops_per_sample(&NtcConfig::default());
    for &batch in &batches {
        let config = TrainConfig {
            batch_size: batch,
            ..TrainConfig::default()
        };
        for kernel in kernels_for(&config.model) {
            for atomics in [GradientAtomics::Auto, GradientAtomics::FixedPoint] {
                let start = Checkpoint::fresh(&sets, &config, 10 * steps, 1).expect("fresh");
                let options = GpuTrainerOptions {
                    atomics,
                    max_workgroup: env_or("NTC_BENCH_WORKGROUP", 64) as u32,
                    kernel: Some(kernel),
                    ..GpuTrainerOptions::default()
                };
                let mut gpu = GpuTrainer::new(ctx, &sets, start, &options).expect("trainer");
                gpu.step(32).expect("warm-up");
                ctx.wait_idle().expect("sync");
                let t0 = std::time::Instant::now();
                gpu.step(steps).expect("steps");
                ctx.wait_idle().expect("sync");
                let seconds = t0.elapsed().as_secs_f64();
                let t1 = std::time::Instant::now();
                gpu.evaluate().expect("evaluate");
                let eval_seconds = t1.elapsed().as_secs_f64();
                let rate = steps as f64 * f64::from(batch) / seconds;
                println!(
                    "{}: {size}² set, batch {batch}, kernel {kernel} (rows {:?}, workgroup {}), \
                     {} atomics: {rate:.3e} texels/s, {:.2} TFLOP/s ({:.3} ms per step); \
                     evaluate {:.3e} texels/s",
                    ctx.describe(),
                    gpu.chunk_rows(),
                    gpu.workgroup_size(),
                    if gpu.fixed_point() {
                        "fixed-point"
                    } else {
                        "f32"
                    },
                    rate * flops / 1e12,
                    seconds * 1e3 / steps as f64,
                    f64::from(size * size) / eval_seconds,
                );
            }
        }
    }
}
