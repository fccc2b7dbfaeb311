//! The adapter's measured peaks (f32 and packed-f16 FMA chains, cooperative-matrix
//! multiply-adds, copy), each FMA peak checked against its CPU reference.

use super::*;

/// The CPU reference of the FMA peak kernels (`shaders/bench_peaks.wgsl`): invocation
/// `index`'s output for `seed_word` = `src[index % 16].x` (a `vec4<u32>` array), `iters`
/// steps, f32 or f16.
pub fn peak_reference(seed_word: u32, iters: u32, half_precision: bool) -> f32 {
    if half_precision {
        let h = |v: f32| f16::from_f32(v);
        let seed = h((seed_word & 255) as f32 * 0.003_906_25);
        let m = h(h(0.999).to_f32() + h(seed.to_f32() * h(0.0001).to_f32()).to_f32());
        let a = h(seed.to_f32() * h(0.001).to_f32());
        let mut s = h(0.0);
        for k in 0..16 {
            let mut acc = h(seed.to_f32() + k as f32);
            for _ in 0..iters {
                acc = h(acc.to_f32().mul_add(m.to_f32(), a.to_f32()));
            }
            s = h(s.to_f32() + acc.to_f32());
        }
        s.to_f32()
    } else {
        let seed = (seed_word & 255) as f32 * (1.0 / 256.0);
        let m = 0.999 + seed * 1e-6;
        let a = 1e-3 * seed;
        let mut s = 0.0f32;
        for k in 0..16 {
            let mut acc = seed + k as f32;
            for _ in 0..iters {
                acc = acc.mul_add(m, a);
            }
            s += acc;
        }
        s
    }
}

/// A peak kernel: name, defines, work (FLOP or bytes), unit, dispatch grid.
pub(super) type PeakSpec<'a> = (&'a str, &'a [&'a str], f64, &'a str, (u32, u32));

/// Measure the adapter's peaks (`shaders/bench_peaks.wgsl`) and check the FMA chains and
/// the copy against their CPU references.
pub(super) fn measure_peaks(
    ctx: &GpuContext,
    opts: &DecodeBenchOptions,
    note: &mut dyn FnMut(&str),
) -> Result<Vec<Peak>, BenchError> {
    let device = &ctx.device;
    let words = opts.peak_copy_bytes / 4;
    let src_words: Vec<u32> = (0..words)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761))
        .collect();
    let src = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("bench.peak.src"),
        contents: bytemuck::cast_slice(&src_words),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let invocations = u64::from(opts.peak_groups) * 256;
    let dst = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("bench.peak.dst"),
        size: opts.peak_copy_bytes.max(invocations * 16),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let it = f64::from(opts.peak_iters);
    let inv = invocations as f64;
    let copy_groups = (words / 4).div_ceil(256);
    let copy_grid = (
        copy_groups.min(65_535) as u32,
        copy_groups.div_ceil(65_535) as u32,
    );
    let mut list: Vec<PeakSpec<'_>> = vec![
        (
            "f32 FMA",
            &["PEAK_F32"],
            inv * it * 32.0,
            "TFLOP/s",
            (opts.peak_groups, 1),
        ),
        (
            "f16x2 FMA",
            &["PEAK_F16", "F16"],
            inv * it * 64.0,
            "TFLOP/s",
            (opts.peak_groups, 1),
        ),
        (
            "copy",
            &["PEAK_COPY"],
            2.0 * opts.peak_copy_bytes as f64,
            "TB/s",
            copy_grid,
        ),
    ];
    let has_f16 = ctx.granted.shader_f16;
    if !has_f16 {
        list.retain(|p| p.0 != "f16x2 FMA");
        note("peak f16x2 FMA: skipped (no shader_f16)");
    }
    if ctx.granted.cooperative_matrix && has_f16 {
        // Four 16×16×16 multiply-adds per subgroup of 32 (eight per workgroup) and step.
        let work = f64::from(opts.peak_groups) * 8.0 * it * 4.0 * 8192.0;
        list.push((
            "coop f16 acc",
            &["PEAK_COOP", "F16", "COOP"],
            work,
            "TFLOP/s",
            (opts.peak_groups, 1),
        ));
        list.push((
            "coop f32 acc",
            &["PEAK_COOP", "F16", "COOP", "PEAK_COOP_F32"],
            work,
            "TFLOP/s",
            (opts.peak_groups, 1),
        ));
    }
    let mut profiler = GpuProfiler::new(ctx);
    let mut peaks = Vec::new();
    for (name, flags, work, unit, grid) in list {
        let defines = flags
            .iter()
            .fold(Defines::new(), |d, flag| d.flag(flag))
            .with("PEAK_ITERS", opts.peak_iters);
        let label = format!("bench.peak.{}", name.replace(' ', "_"));
        let kernel = match ComputeKernel::new(
            ctx,
            &KernelDesc::new(&label, "bench_peaks.wgsl", "main").with_defines(&defines),
        ) {
            Ok(k) => k,
            Err(e) => {
                note(&format!("peak {name}: skipped ({e})"));
                continue;
            }
        };
        let group = kernel.bind_group(
            device,
            0,
            &[(0, src.as_entire_binding()), (1, dst.as_entire_binding())],
        );
        let mut times = Vec::new();
        for i in 0..(opts.warmup.frames.min(3) + opts.frames) {
            let mut encoder = device.create_command_encoder(&Default::default());
            kernel.dispatch(
                &mut FrameEncoder::new(ctx, &mut encoder, &profiler),
                &[&group],
                grid,
            );
            ctx.queue.submit([encoder.finish()]);
            profiler.end_frame(ctx);
            let ms: f64 = profiler.collect(ctx).iter().map(|t| t.ms).sum();
            if i >= opts.warmup.frames.min(3) {
                times.push(ms);
            }
        }
        let ms = Spread::of(&times).median;
        let value = work / (ms * 1e-3) / 1e12;
        let equal = peak_equal(ctx, name, &dst, &src_words, opts)?;
        note(&format!("peak {name}: {value:.2} {unit} ({ms:.3} ms)"));
        peaks.push(Peak {
            name: name.to_owned(),
            value,
            unit: unit.to_owned(),
            ms,
            equal,
        });
    }
    Ok(peaks)
}

/// Whether the last peak's output in `dst` equals its CPU reference (the first 1 MiB of
/// the copy; the first 64 invocations' sums, relative error ≤ 1e-5 in f32 and 1e-2 in f16).
pub(super) fn peak_equal(
    ctx: &GpuContext,
    name: &str,
    dst: &wgpu::Buffer,
    src: &[u32],
    opts: &DecodeBenchOptions,
) -> Result<Option<bool>, BenchError> {
    match name {
        "copy" => {
            let bytes = (opts.peak_copy_bytes).min(1 << 20);
            let got: Vec<u32> = bytemuck::pod_collect_to_vec(&read_buffer(ctx, dst, 0..bytes)?);
            Ok(Some(got[..] == src[..got.len()]))
        }
        "f32 FMA" | "f16x2 FMA" => {
            let got: Vec<u32> = bytemuck::pod_collect_to_vec(&read_buffer(ctx, dst, 0..64 * 16)?);
            let half_precision = name == "f16x2 FMA";
            let tolerance = if half_precision { 1e-2 } else { 1e-5 };
            Ok(Some((0..64).all(|i| {
                // `src` is read as vec4<u32>: element i % 16's x.
                let want = peak_reference(src[4 * (i % 16)], opts.peak_iters, half_precision);
                let value = f32::from_bits(got[4 * i]);
                (value - want).abs() <= tolerance * want.abs().max(1.0)
            })))
        }
        _ => Ok(None),
    }
}
