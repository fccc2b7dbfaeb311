//! GPU tests of the temporal accumulation pass (one binary, one adapter: lavapipe in CI) on
//! tiny targets written with `queue.write_texture`: the GPU against the CPU reference under
//! motion, convergence of a static view, reset, clipping under motion, pass-through; and the
//! blue-noise texture upload.

use half::f16;
use neurotex::gpu::encoder::FrameEncoder;
use neurotex::gpu::upload::write_level;
use neurotex::gpu::{GpuProfiler, read_texture};
use neurotex::render::blue_noise::{self, BLUE_NOISE_SIZE, BlueNoise};
use neurotex::render::passes::temporal::{
    ReferenceFrame, TemporalError, TemporalInputs, TemporalPass, TemporalReference,
    TemporalSettings,
};
use neurotex::render::targets::{FrameTargets, GBuffer, GBufferMode, Target, format};
use neurotex::screen::tiles::TileSize;
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};

use crate::common::ctx;

type Rgba = [f32; 4];

/// A temporal pass with input targets the test writes and the output it reads.
struct Harness {
    size: (u32, u32),
    pass: TemporalPass,
    hdr: Target,
    gbuffer: GBuffer,
    output: Target,
    timer: GpuProfiler,
}

impl Harness {
    fn new(size: (u32, u32)) -> Self {
        let ctx = ctx();
        let pass = TemporalPass::new(ctx, size).unwrap_or_else(|e| panic!("{e}"));
        Self {
            size,
            pass,
            hdr: hdr_target(size),
            gbuffer: gbuffer(size),
            output: FrameTargets::new(&ctx.device, size, TileSize::T8x8, GBufferMode::Raster)
                .accumulated,
            timer: GpuProfiler::new(ctx),
        }
    }

    /// Reallocates pass, inputs and output for `size`.
    fn resize(&mut self, size: (u32, u32)) {
        self.size = size;
        self.pass.resize(&ctx().device, size);
        self.hdr = hdr_target(size);
        self.gbuffer = gbuffer(size);
        self.output =
            FrameTargets::new(&ctx().device, size, TileSize::T8x8, GBufferMode::Raster).accumulated;
    }

    /// Records one frame of the pass into `encoder`.
    fn record(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        settings: &TemporalSettings,
    ) -> Result<(), TemporalError> {
        let inputs = TemporalInputs {
            hdr: &self.hdr,
            motion: &self.gbuffer.motion,
            depth: &self.gbuffer.depth,
            settings,
        };
        let mut frame = FrameEncoder::new(ctx(), encoder, &self.timer);
        self.pass.record(&mut frame, &inputs, &self.output)
    }

    /// Uploads one frame's inputs (depth constant: 0 = no surface), records the pass and
    /// returns its output.
    fn frame(
        &mut self,
        current: &[Rgba],
        motion: &[[f32; 2]],
        depth: f32,
        settings: &TemporalSettings,
    ) -> Vec<Rgba> {
        let ctx = ctx();
        write_f16(&self.hdr, current.as_flattened());
        // Little-endian f16 pairs are the motion target's packed words (x in the low half).
        write_f16(&self.gbuffer.motion, motion.as_flattened());
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("test.temporal"),
            });
        encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("test.depth"),
            color_attachments: &[],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &self.gbuffer.depth.view,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(depth),
                    store: wgpu::StoreOp::Store,
                }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        self.record(&mut encoder, settings).unwrap();
        ctx.queue.submit([encoder.finish()]);
        self.timer.end_frame(ctx);
        self.output()
    }

    fn output(&self) -> Vec<Rgba> {
        let data = read_texture(ctx(), &self.output.texture, 0, 0).unwrap();
        rgba(&data.to_f32().unwrap())
    }
}

fn hdr_target(size: (u32, u32)) -> Target {
    Target::new(
        &ctx().device,
        "test.hdr",
        size,
        format::HDR,
        wgpu::TextureUsages::COPY_DST,
    )
}

/// A G-buffer whose motion the test can write.
fn gbuffer(size: (u32, u32)) -> GBuffer {
    let device = &ctx().device;
    let mut gbuffer = GBuffer::new(device, size, GBufferMode::Raster);
    gbuffer.motion = Target::new(
        device,
        "test.motion",
        size,
        format::MOTION,
        wgpu::TextureUsages::COPY_DST,
    );
    gbuffer
}

/// Writes `values` (row-major, all channels) into a 16-bit float `target`.
fn write_f16(target: &Target, values: &[f32]) {
    let bits: Vec<u16> = values.iter().map(|&v| f16::from_f32(v).to_bits()).collect();
    write_level(
        &ctx().queue,
        &target.texture,
        0,
        bytemuck::cast_slice(&bits),
    );
}

fn rgba(values: &[f32]) -> Vec<Rgba> {
    values
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect()
}

/// `v` rounded to f16, as the GPU targets hold it.
fn q(v: f32) -> f32 {
    f16::from_f32(v).to_f32()
}

/// Spacing of f16 values around `v` (normal range).
fn f16_ulp(v: f32) -> f32 {
    2f32.powi(v.abs().max(f32::MIN_POSITIVE).log2().floor() as i32 - 10)
}

/// Uniform in [0, 1).
fn uniform(rng: &mut Xoshiro256PlusPlus) -> f32 {
    (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32
}

/// A [`Harness`] of `size` and a test's random numbers, seeded with `seed`.
fn seeded_harness(size: (u32, u32), seed: u64) -> (Harness, Xoshiro256PlusPlus) {
    (Harness::new(size), Xoshiro256PlusPlus::seed_from_u64(seed))
}

/// The default settings with the sample count capped at `max_frames`.
fn capped(max_frames: u32) -> TemporalSettings {
    TemporalSettings {
        max_frames,
        ..Default::default()
    }
}

/// f16 radiance: `mean` plus uniform noise of half-width `spread`, per channel.
fn noisy(rng: &mut Xoshiro256PlusPlus, mean: &[[f32; 3]], spread: f32) -> Vec<Rgba> {
    mean.iter()
        .map(|m| {
            let mut c = [0.0, 0.0, 0.0, 1.0];
            for (out, m) in c.iter_mut().zip(m) {
                *out = q(m + spread * (2.0 * uniform(rng) - 1.0));
            }
            c
        })
        .collect()
}

fn pixels(size: (u32, u32)) -> impl Iterator<Item = (u32, u32)> {
    (0..size.1).flat_map(move |y| (0..size.0).map(move |x| (x, y)))
}

fn still(size: (u32, u32)) -> Vec<[f32; 2]> {
    vec![[0.0; 2]; (size.0 * size.1) as usize]
}

/// Motion moving every pixel by `(dx, dy)` pixels.
fn shift(size: (u32, u32), dx: f32, dy: f32) -> Vec<[f32; 2]> {
    vec![[q(dx / size.0 as f32), q(dy / size.1 as f32)]; (size.0 * size.1) as usize]
}

/// One frame of the CPU reference.
fn reference(
    reference: &mut TemporalReference,
    current: &[Rgba],
    motion: &[[f32; 2]],
    depth: f32,
    settings: &TemporalSettings,
) -> Vec<Rgba> {
    let depth = vec![depth; current.len()];
    let frame = ReferenceFrame {
        current,
        motion,
        depth: &depth,
    };
    reference
        .record(&frame, settings)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `out` is `current` alone: the same colour and a sample count of one (`when` names the
/// case in the failure).
fn assert_only_current(out: &[Rgba], current: &[Rgba], when: &str) {
    for (o, c) in out.iter().zip(current) {
        assert_eq!(o[..3], c[..3], "{when}: output equals the current frame");
        assert_eq!(o[3], 1.0, "{when}: one sample");
    }
}

#[test]
fn gpu_matches_cpu_reference_under_motion() {
    // Not a multiple of the 8×8 workgroup, so the edge guard is exercised too.
    let size = (44, 30);
    let (mut harness, mut rng) = seeded_harness(size, 1);
    // max_frames 3: the cap is reached within the run.
    let settings = capped(3);
    let mut cpu_pass = TemporalReference::new(size);
    let mut counts = [0usize; 4];
    for frame in 0..6 {
        let t = frame as f32;
        // A smooth colourful pattern drifting over frames, with noise and rare outliers.
        let base: Vec<[f32; 3]> = pixels(size)
            .map(|(x, y)| {
                let (x, y) = (x as f32, y as f32);
                let s = (0.35 * x + 0.2 * y + 0.4 * t).sin();
                [
                    1.0 + 0.6 * s,
                    0.6 + 0.3 * (0.3 * y - 0.2 * t).cos(),
                    0.4 + 0.2 * s,
                ]
            })
            .collect();
        let mut current = noisy(&mut rng, &base, 0.15);
        for c in current.iter_mut() {
            if uniform(&mut rng) < 0.02 {
                c[0] = q(c[0] * 12.0);
            }
        }
        // Left third static (with a band just under the motion threshold), the rest a
        // rotation about the centre plus a translation, pushing some pixels off screen.
        let motion: Vec<[f32; 2]> = pixels(size)
            .map(|(x, y)| {
                if x < 12 {
                    return [0.0; 2];
                }
                if x < 15 {
                    return [q(0.004 / size.0 as f32), 0.0];
                }
                let (cx, cy) = (x as f32 - 22.0, y as f32 - 15.0);
                let angle = 0.03 * (t + 1.0);
                let dx = cx * angle.cos() - cy * angle.sin() - cx + 1.3;
                let dy = cx * angle.sin() + cy * angle.cos() - cy - 0.6;
                [q(dx / size.0 as f32), q(dy / size.1 as f32)]
            })
            .collect();
        // Frame 4 shows no surface: every pixel is clipped there, static ones included.
        let depth = if frame == 4 { 0.0 } else { 0.5 };
        let gpu = harness.frame(&current, &motion, depth, &settings);
        let cpu = reference(&mut cpu_pass, &current, &motion, depth, &settings);
        for ((x, y), (g, c)) in pixels(size).zip(gpu.iter().zip(&cpu)) {
            for channel in 0..4 {
                let (g, c) = (g[channel], c[channel]);
                // Same f16 inputs, same f32 arithmetic, each side chaining its own f32
                // history. f32 results may differ in the last bits (FMA contraction, sqrt),
                // and the f16 store may truncate where the reference rounds to nearest:
                // one f16 step. 1e-4 absolute covers f32 cancellation in the YCoCg round
                // trip of values up to ~16.
                let tolerance = f16_ulp(g.abs().max(c.abs())) + 1e-4;
                assert!(
                    (g - c).abs() <= tolerance,
                    "frame {frame}, pixel ({x}, {y}), channel {channel}: GPU {g} vs CPU {c}"
                );
            }
            if frame >= 2 {
                counts[c[3] as usize] += 1;
            }
        }
    }
    // From frame 2 on, every count occurred: histories rejected off screen or discarded
    // by a hard clip (1), restarted a frame earlier (2), capped (3).
    assert!(counts[1..].iter().all(|&n| n > 0), "counts {counts:?}");
}

#[test]
fn static_noise_converges_to_the_mean() {
    let size = (32, 24);
    let (mut harness, mut rng) = seeded_harness(size, 2);
    let settings = capped(64);
    let truth: Vec<[f32; 3]> = pixels(size)
        .map(|_| [0.0; 3].map(|_: f32| 0.5 + 0.5 * uniform(&mut rng)))
        .collect();
    let spread = 0.25;
    let sigma = spread / 3f32.sqrt();
    let mut sums = vec![[0f64; 3]; truth.len()];
    let motion = still(size);
    let mut rms_scaled = Vec::new();
    for n in 1..=64usize {
        let current = noisy(&mut rng, &truth, spread);
        for (sum, c) in sums.iter_mut().zip(&current) {
            for k in 0..3 {
                sum[k] += f64::from(c[k]);
            }
        }
        let out = harness.frame(&current, &motion, 0.5, &settings);
        if ![4, 16, 64].contains(&n) {
            continue;
        }
        let mut squared = 0.0;
        for (i, (o, sum)) in out.iter().zip(&sums).enumerate() {
            assert_eq!(o[3], n as f32, "pixel {i}: count after {n} frames");
            for k in 0..3 {
                let mean = (sum[k] / n as f64) as f32;
                // The running mean is f32 (error ~n·2⁻²⁴); only the output is rounded to
                // f16, once: within one f16 step whether the store rounds or truncates.
                let bound = f16_ulp(mean) + 1e-6;
                assert!(
                    (o[k] - mean).abs() <= bound,
                    "pixel {i}, channel {k}, {n} frames: {} vs mean {mean} (bound {bound})",
                    o[k]
                );
                squared += f64::from(o[k] - truth[i][k]).powi(2);
            }
        }
        let rms = (squared / (3 * out.len()) as f64).sqrt() as f32;
        rms_scaled.push(rms * (n as f32).sqrt() / sigma);
    }
    // Error against the true mean falls like σ/√N: the scaled error stays near 1. With
    // 2304 samples per checkpoint its estimate is within ±2 % (1σ), so ±15 % is safe and
    // still rejects a history that is ignored (√N) or never refreshed (≫ 1).
    for (n, scaled) in [4, 16, 64].iter().zip(&rms_scaled) {
        assert!(
            (0.85..1.15).contains(scaled),
            "after {n} frames: rms·√N/σ = {scaled:.3} (all: {rms_scaled:?})"
        );
    }
}

#[test]
fn reset_restarts_from_the_current_frame() {
    let size = (16, 12);
    let (mut harness, mut rng) = seeded_harness(size, 3);
    let truth = vec![[1.0, 0.5, 0.25]; (size.0 * size.1) as usize];
    let motion = still(size);
    let on = TemporalSettings::default();
    for _ in 0..5 {
        harness.frame(&noisy(&mut rng, &truth, 0.2), &motion, 0.5, &on);
    }
    let reset = TemporalSettings { reset: true, ..on };
    let current = noisy(&mut rng, &truth, 0.2);
    let out = harness.frame(&current, &motion, 0.5, &reset);
    assert_only_current(&out, &current, "reset");
    let next = noisy(&mut rng, &truth, 0.2);
    let out = harness.frame(&next, &motion, 0.5, &on);
    for ((o, a), b) in out.iter().zip(&current).zip(&next) {
        for k in 0..3 {
            let mean = (a[k] + b[k]) / 2.0;
            assert!(
                (o[k] - mean).abs() <= f16_ulp(mean),
                "{o:?} vs {a:?}, {b:?}"
            );
        }
        assert_eq!(o[3], 2.0);
    }
    // New targets start a new history by themselves, even without `reset`.
    let size = (20, 10);
    harness.resize(size);
    let truth = vec![[0.2, 0.4, 0.8]; (size.0 * size.1) as usize];
    let current = noisy(&mut rng, &truth, 0.2);
    let out = harness.frame(&current, &still(size), 0.5, &on);
    assert_only_current(&out, &current, "after resize");
    // So does `TemporalPass::reset`, which the renderer's camera cuts call; the history
    // it tells the renderer about is gone until the next frame.
    assert!(harness.pass.has_history());
    harness.pass.reset();
    assert!(!harness.pass.has_history());
    let current = noisy(&mut rng, &truth, 0.2);
    let out = harness.frame(&current, &still(size), 0.5, &on);
    assert!(harness.pass.has_history());
    assert_only_current(&out, &current, "after reset");
}

#[test]
fn moving_view_clips_a_history_outlier() {
    let size = (24, 16);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let truth = vec![[1.0, 1.0, 1.0]; (size.0 * size.1) as usize];
    let outlier = (10 + 8 * size.0) as usize;
    let mut first = noisy(&mut rng, &truth, 0.05);
    first[outlier] = [50.0, 50.0, 50.0, 1.0];
    let second = noisy(&mut rng, &truth, 0.05);
    let on = TemporalSettings::default();
    // Moved one pixel right since last frame: pixel (9, 8) was at (10, 8), the outlier.
    // With motion just under the threshold (a static view) the same history is kept.
    let cases = [(1.0, true), (0.005, false)];
    for (dx, moved) in cases {
        let mut harness = Harness::new(size);
        harness.frame(&first, &still(size), 0.5, &on);
        let out = harness.frame(&second, &shift(size, dx, 0.0), 0.5, &on);
        let reader = if moved { outlier - 1 } else { outlier };
        let o = out[reader];
        if moved {
            // Far outside the neighbourhood's box: discarded, count restarted.
            assert_eq!(o[..3], second[reader][..3], "{o:?}");
            assert_eq!(o[3], 1.0);
            // Elsewhere the history is one more noisy sample of the same surface and is
            // kept (a sample beyond 2.5 σ of its neighbourhood on some YCoCg axis, a few
            // per cent, is discarded too)…
            let kept = pixels(size)
                .zip(&out)
                .filter(|((x, _), o)| *x + 1 < size.0 && o[3] == 2.0)
                .count();
            let inside = ((size.0 - 1) * size.1) as usize;
            assert!(kept * 10 > inside * 9, "{kept} of {inside} kept");
            // …except off the right edge, where there is none.
            assert!((0..size.1).all(|y| out[(y * size.0 + size.0 - 1) as usize][3] == 1.0));
        } else {
            // Not clipped: the outlier is averaged in, as stochastic noise must be.
            assert!(o[0] > 20.0, "{o:?}");
            assert_eq!(o[3], 2.0);
        }
    }
}

#[test]
fn disabled_passes_the_current_frame_through() {
    let size = (16, 12);
    let (mut harness, mut rng) = seeded_harness(size, 5);
    let truth = vec![[0.3, 0.6, 0.9]; (size.0 * size.1) as usize];
    let on = TemporalSettings::default();
    for _ in 0..3 {
        harness.frame(&noisy(&mut rng, &truth, 0.2), &still(size), 0.5, &on);
    }
    let off = TemporalSettings {
        enabled: false,
        ..on
    };
    let current = noisy(&mut rng, &truth, 0.2);
    let out = harness.frame(&current, &shift(size, 0.5, -0.25), 0.5, &off);
    assert_only_current(&out, &current, "disabled");
    // Enabled again, accumulation continues from that single sample.
    let out = harness.frame(&noisy(&mut rng, &truth, 0.2), &still(size), 0.5, &on);
    assert!(out.iter().all(|o| o[3] == 2.0));
}

#[test]
fn record_refuses_inputs_of_another_size_and_times_the_pass() {
    let size = (16, 8);
    let (mut harness, mut rng) = seeded_harness(size, 6);
    let truth = vec![[1.0, 2.0, 3.0]; (size.0 * size.1) as usize];
    let current = noisy(&mut rng, &truth, 0.0);
    let out = harness.frame(&current, &still(size), 0.5, &TemporalSettings::default());
    assert_eq!(out[0][..3], current[0][..3]);
    let timings = harness.timer.collect(ctx());
    if harness.timer.is_enabled() {
        assert!(
            timings.iter().any(|t| t.label == TemporalPass::LABEL),
            "{timings:?}"
        );
    }
    // Inputs of another size are an error: recording changes nothing.
    harness.hdr = hdr_target((8, 8));
    let before = harness.output();
    let mut encoder = ctx()
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
    let err = harness
        .record(&mut encoder, &TemporalSettings::default())
        .expect_err("an 8×8 input to a 16×8 pass");
    assert!(
        matches!(err, TemporalError::SizeMismatch { input: "hdr", .. }),
        "{err}"
    );
    ctx().queue.submit([encoder.finish()]);
    assert_eq!(harness.output(), before);
    assert_eq!(ctx().uncaptured_error_count(), 0);
}

#[test]
fn blue_noise_texture_holds_the_tile() {
    let noise = BlueNoise::new(&ctx().device, &ctx().queue);
    let data = read_texture(ctx(), &noise.texture, 0, 0).unwrap();
    assert_eq!(
        (data.width, data.height),
        (BLUE_NOISE_SIZE, BLUE_NOISE_SIZE)
    );
    assert_eq!(data.to_f32().unwrap(), blue_noise::values());
}
