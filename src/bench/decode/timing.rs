//! Timing one pass on one case under the trust rules (`bench::trust`), the bytes each
//! decode stage requests, and the equality check of a decoded frame against the CPU
//! decoder.

use super::*;

/// Records frames of one pass on one case and reads their timings.
pub(super) struct Timer<'a> {
    pub(super) ctx: &'a GpuContext,
    pub(super) profiler: GpuProfiler,
}

impl<'a> Timer<'a> {
    /// One frame of `pass` over `frame` with `package`: the timings of its stages.
    pub(super) fn frame(
        &mut self,
        pass: &mut NtcDecodePass,
        content: &Content,
        package: &NtcSceneGpu,
        frame: &Frame,
    ) -> Result<Vec<PassTiming>, BenchError> {
        let ctx = self.ctx;
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("bench.decode"),
            });
        let settings = DecodeSettings::default();
        let inputs = DecodeInputs {
            frame: &content.frame,
            materials: &content.material_buffer,
            gbuffer: &frame.gbuffer,
            blue_noise: &content.noise.view,
            package,
            settings: &settings,
        };
        ctx.error_scope(|| {
            pass.record(
                &mut FrameEncoder::new(ctx, &mut encoder, &self.profiler),
                &inputs,
                &frame.targets,
            )
        })??;
        ctx.queue.submit([encoder.finish()]);
        self.profiler.end_frame(ctx);
        Ok(self
            .profiler
            .collect(ctx)
            .into_iter()
            .filter(|t| NtcDecodePass::is_stage_label(&t.label))
            .collect())
    }
}

/// One configuration measured under the trust rules (`bench::trust`).
pub(super) struct Measured {
    /// Every stage together, per frame.
    pub(super) totals: Spread,
    /// The decode pass alone (`ntc.decode`), per frame.
    pub(super) decode: Spread,
    /// Median per stage label.
    pub(super) stages: Vec<(String, f64)>,
    pub(super) remeasured: bool,
    pub(super) unstable: bool,
}

impl Timer<'_> {
    /// Warm `pass` up on `frame` until its frame times settle (`opts.warmup`), then time
    /// `opts.frames` frames, once more when they are unstable.
    pub(super) fn measure(
        &mut self,
        opts: &DecodeBenchOptions,
        pass: &mut NtcDecodePass,
        content: &Content,
        package: &NtcSceneGpu,
        frame: &Frame,
    ) -> Result<Measured, BenchError> {
        let total = |stages: &Vec<PassTiming>| stages.iter().map(|s| s.ms).sum::<f64>();
        let trusted = trust::run(
            opts.warmup,
            opts.frames as usize,
            |_| self.frame(pass, content, package, frame),
            total,
        )?;
        let per_stage = pass_spreads(&trusted.samples);
        let decode = per_stage
            .iter()
            .find(|s| s.label == NtcDecodePass::LABEL)
            .map_or_else(Spread::default, |s| s.ms);
        Ok(Measured {
            totals: Spread::of(&trusted.samples.iter().map(total).collect::<Vec<_>>()),
            decode,
            stages: per_stage
                .into_iter()
                .map(|s| (s.label, s.ms.median))
                .collect(),
            remeasured: trusted.remeasured,
            unstable: trusted.unstable,
        })
    }
}

/// Bytes one pixel's input stage requests: its G-buffer UV, derivatives and material word
/// (20), its run slot (sorted kernels, 4) and the latents of four taps in each of two
/// grids.
pub(super) fn input_bytes(config: &NtcConfig, sorted: bool) -> f64 {
    let words_per_texel = (config.features * config.latent_bits.bits()).div_ceil(32);
    20.0 + if sorted { 4.0 } else { 0.0 } + f64::from(2 * 4 * 4 * words_per_texel)
}

/// Bytes one pixel's output stage requests: its G-buffer normal and tangent (8) and
/// material word (4), and the three targets it writes (24).
pub(super) const OUTPUT_BYTES: f64 = 36.0;

/// Compare the targets of `frame` (just decoded from `package`) with the CPU decoder on up
/// to `samples` pixels (all when the frame has no more).
pub(super) fn check_frame(
    ctx: &GpuContext,
    opts: &DecodeBenchOptions,
    frame: &Frame,
    package: &NtcPackage,
    reference: &NtcCpuReference<'_>,
    tolerance: f32,
) -> Result<EqualityCheck, BenchError> {
    let out: Vec<Vec<f32>> = frame
        .target_list()
        .iter()
        .map(|t| read_texture(ctx, &t.texture, 0, 0).and_then(|d| d.to_f32()))
        .collect::<Result<_, _>>()?;
    let n = (frame.size * frame.size) as usize;
    let all = n <= opts.check_pixels;
    let count = if all { n } else { opts.check_pixels };
    let mut rng = SplitMix64::new(99);
    let settings = DecodeSettings::default();
    let (mut compared, mut skipped, mut over, mut worst) = (0, 0, 0, 0.0f32);
    for s in 0..count {
        let i = if all { s } else { rng.below(n as u64) as usize };
        let (x, y) = (i as u32 % frame.size, i as u32 / frame.size);
        let input = synthetic_pixel(x, y, frame.mix, opts.materials, opts.material_side);
        let m = (input.word & 0xF_FFFF) as usize;
        let layout = &package.materials[m].layout;
        // Only the margin is read, which the wrapping does not change.
        let choice = crate::render::ntc_gpu::choose_texel(
            layout,
            &Default::default(),
            input.uv,
            input.uv_grad,
            &settings,
            input.xi,
        );
        if choice.margin < 2e-3 {
            skipped += 1;
            continue;
        }
        let expected = reference.pixel(&input, &settings)?;
        compared += 1;
        let mut bad = false;
        for (t, values) in expected.iter().enumerate() {
            for (k, &e) in values.iter().enumerate() {
                let got = out[t][4 * i + k];
                let err = if got.is_finite() {
                    (got - e).abs() - e.abs() / 1024.0
                } else {
                    f32::INFINITY
                };
                worst = worst.max(err);
                bad |= err > tolerance;
            }
        }
        over += usize::from(bad);
    }
    Ok(EqualityCheck {
        compared,
        skipped,
        max_error: worst,
        tolerance,
        over_tolerance: over,
        equal: over == 0 && compared * 20 >= count * 19,
    })
}
