//! `neurotex bench decode`: the NTC decode kernels alone on synthetic full-screen frames —
//! the NTC paper's Tables 5 (time against resolution, one decoder) and 6 (decoders per
//! wave, shared against non-shared) on our kernels, and the sorted decode beside them —
//! with the adapter's peaks measured in the same run, so every decode is also reported as
//! TFLOP/s and as a fraction of the peak that bounds it.
//!
//! No geometry: a generated G-buffer (material id, UV, UV derivatives, a tangent frame) of
//! each size, every pixel covered. Every 8×8 tile (two 32-wide waves, one 64-wide) holds
//! `k` distinct materials, uniformly mixed; the package has one decoder per material
//! ("separate") or one decoder shared by all materials over the same latents ("shared").
//! The decoders are random-weight decoders of the default layout (`--quick`: a smaller
//! one, [`DecodeBenchOptions::quick`]; He-uniform weights,
//! small hidden biases, output biases near ½; no training: timing does not depend on the
//! values), the latents random codes. Materials are `side`² with a UV footprint of 1.25
//! texels per pixel (stochastic mips 0–1).
//!
//! Each kernel × tile builds its pipelines once, on a thread with a time budget (a driver
//! compile that takes longer is skipped and reported, the run goes on); each case renders
//! untimed frames until its frame times settle (`warmup`, `bench::trust`) and `frames` timed frames, each submitted and timed on
//! its own with timestamp queries (every stage of the sorted kernels separately), timed
//! again once when p90/p10 exceeds 1.25 and flagged unstable in every output if it still
//! does. With stages on, every kernel is also built with one stage of the decode alone
//! (input, MLP, output: [`DecodeStage`]) and timed on the Table 5 cases: each stage's ms,
//! rate against the measured peak, and the stage that bounds the kernel. Sizes whose frame
//! would exceed the memory budget or the device's texture limit are skipped with a note;
//! the whole run stops starting cases after its time budget. With checks on, each
//! measured frame is decoded once more into targets poisoned with NaN and compared with
//! the CPU decoder (`render::ntc_gpu::NtcCpuReference`) on the same package.

use crate::gpu::Defines;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use half::f16;
use serde::Serialize;
use wgpu::util::DeviceExt as _;

use crate::bench::trust::{self, Warmup};
use crate::bench::{BenchError, Spread, pass_spreads};
use crate::charts::{Panel, Series, SeriesLabelPosition, write_panels_png};
use crate::gpu::encoder::FrameEncoder;
use crate::gpu::kernel::{ComputeKernel, KernelDesc};
use crate::gpu::{GpuContext, GpuProfiler, PassTiming, read_buffer, read_texture};
use crate::ntc::format::{NtcMaterial, NtcPackage};
use crate::ntc::model::{
    DecoderWeights, LatentLayout, NtcConfig, Preset, SplitMix64, full_mip_count,
};
use crate::ntc::quant;
use crate::ntc::train::Quality;
use crate::render::blue_noise::{self, BlueNoise};
use crate::render::gpu_types::{FrameUniform, MaterialData};
use crate::render::ntc_gpu::{NtcCpuReference, NtcSceneGpu, PixelInput};
use crate::render::passes::ntc_decode::{
    DecodeInputs, DecodeSettings, DecodeStage, NtcDecodePass, NtcKernel,
};
use crate::render::targets::{GBuffer, MaterialTargets, Target, format};
use crate::scene::Material;
use crate::screen::tiles::TileSize;
use crate::texture::{CHANNELS, ChannelMask};

/// The frame index every decode uses (its blue noise).
const FRAME: u32 = 3;
/// Side of the tiles that hold `k` materials each.
const MIX_TILE: u32 = 8;
/// Bytes per pixel of one case: the G-buffer's four read targets (28), the material
/// targets (24), the sort's slot (4) and the host arrays the G-buffer is written from
/// (28), rounded up.
const BYTES_PER_PIXEL: u64 = 96;
/// Tolerance of the f32 kernel against the CPU decoder, beyond f16 storage
/// (`tests/integration/ntc_render.rs` explains both).
const F32_TOLERANCE: f32 = 1e-4;
/// Tolerance of the f16 kernels.
const F16_TOLERANCE: f32 = 2e-2;

/// What to measure.
#[derive(Clone, Debug)]
pub struct DecodeBenchOptions {
    /// Square frame sides, in pixels.
    pub sizes: Vec<u32>,
    /// Distinct materials per 8×8 tile.
    pub mixes: Vec<u32>,
    /// Kernels (ones the device cannot run are skipped with the reason).
    pub kernels: Vec<NtcKernel>,
    /// Tiles of the per-tile kernels (the sorted kernels run once, with the first).
    pub tiles: Vec<TileSize>,
    /// Untimed frames before each measurement.
    pub warmup: Warmup,
    /// Timed frames per measurement.
    pub frames: u32,
    /// Also time every kernel with one stage of the decode alone (input, MLP, output) on
    /// the Table 5 cases.
    pub stages: bool,
    /// The decoders' layout (random weights).
    pub config: NtcConfig,
    /// Materials (and decoders of the separate package).
    pub materials: u32,
    /// Side of every material in texels.
    pub material_side: u32,
    /// Compare every measured frame with the CPU decoder up to this many pixels per frame
    /// (all pixels of smaller frames; sampled in larger ones); 0: no checks.
    pub check_pixels: usize,
    /// Frames larger than this (pixels) are not checked (their readback costs more than the
    /// timing).
    pub check_max_pixels: u64,
    /// Time allowed to build one kernel's pipelines.
    pub build_budget: Duration,
    /// No case starts after this much time.
    pub time_budget: Duration,
    /// Bytes one case may allocate (host and GPU).
    pub memory_budget: u64,
    /// Iterations of the FMA and matrix peak kernels.
    pub peak_iters: u32,
    /// Workgroups of the peak kernels.
    pub peak_groups: u32,
    /// Bytes copied by the bandwidth peak.
    pub peak_copy_bytes: u64,
}

impl DecodeBenchOptions {
    /// The full run: 512² … 8192², 1/2/5/10/16 materials per tile, 16 materials of 1024².
    pub fn full(kernels: Vec<NtcKernel>) -> Self {
        Self {
            sizes: vec![512, 1024, 2048, 4096, 8192],
            mixes: vec![1, 2, 5, 10, 16],
            kernels,
            tiles: vec![TileSize::T8x8, TileSize::T16x16],
            warmup: Warmup {
                frames: 5,
                time: trust::MIN_WARMUP,
            },
            frames: 20,
            stages: true,
            config: NtcConfig::default(),
            materials: 16,
            material_side: 1024,
            check_pixels: 2000,
            check_max_pixels: 1024 * 1024,
            build_budget: Duration::from_secs(60),
            time_budget: Duration::from_secs(3600),
            memory_budget: crate::texture::budget::limit(),
            peak_iters: 1024,
            peak_groups: 4224,
            peak_copy_bytes: 1 << 30,
        }
    }

    /// `--quick`: tiny frames (24², 40²), 1 and 5 materials per tile, 6 materials of 64²,
    /// 8×8 tiles, few frames, every pixel of every frame checked against the CPU decoder —
    /// with a smaller decoder (8 features, 32→32→32→16, the layout of
    /// `tests/integration/ntc_render.rs`): software rasterisers (lavapipe) take minutes to compile the
    /// default layout's unrolled kernels.
    pub fn quick(kernels: Vec<NtcKernel>) -> Self {
        Self {
            config: NtcConfig {
                features: 8,
                hidden: vec![32, 32],
                ..NtcConfig::default()
            },
            sizes: vec![24, 40],
            mixes: vec![1, 5],
            tiles: vec![TileSize::T8x8],
            warmup: Warmup {
                frames: 1,
                time: Duration::ZERO,
            },
            frames: 2,
            materials: 6,
            material_side: 64,
            check_pixels: usize::MAX,
            check_max_pixels: u64::MAX,
            peak_iters: 16,
            peak_groups: 8,
            peak_copy_bytes: 1 << 20,
            ..Self::full(kernels)
        }
    }
}

/// One measured peak of the adapter.
#[derive(Clone, Debug, Serialize)]
pub struct Peak {
    /// `f32 FMA`, `f16x2 FMA`, `coop f16 acc`, `coop f32 acc` or `copy`.
    pub name: String,
    /// TFLOP/s, or TB/s for the copy.
    pub value: f64,
    /// `TFLOP/s` or `TB/s`.
    pub unit: String,
    /// Median time of one dispatch.
    pub ms: f64,
    /// Whether its output equals the CPU reference (`None`: the matrix peaks, which have
    /// none).
    pub equal: Option<bool>,
}

/// A decoded frame against the CPU decoder.
#[derive(Clone, Debug, Serialize)]
pub struct EqualityCheck {
    /// Pixels compared.
    pub compared: usize,
    /// Pixels skipped: within 2e-3 of a mip or texel decision boundary.
    pub skipped: usize,
    /// Largest |GPU − CPU| − |CPU|/1024 over the compared values (f16 storage allowed).
    pub max_error: f32,
    /// The tolerance of this kernel.
    pub tolerance: f32,
    /// Compared pixels with a value over the tolerance (or not written: NaN).
    pub over_tolerance: usize,
    /// No pixel over the tolerance, and enough compared (≥ 95 % of the samples).
    pub equal: bool,
}

impl EqualityCheck {
    /// `equal`, or why not: pixels over the tolerance, or too few pixels away from a
    /// decision boundary to tell (tiny frames).
    pub fn verdict(&self) -> String {
        match self.state() {
            "NOT EQUAL" => format!(
                "NOT EQUAL: {} pixels over the tolerance",
                self.over_tolerance
            ),
            "not checked" => format!(
                "not checked: only {} of {} pixels away from a mip or texel boundary",
                self.compared,
                self.compared + self.skipped
            ),
            state => state.into(),
        }
    }

    /// `equal`, `NOT EQUAL` or `not checked` ([`verdict`](Self::verdict) without why).
    pub fn state(&self) -> &'static str {
        if self.equal {
            "equal"
        } else if self.over_tolerance > 0 {
            "NOT EQUAL"
        } else {
            "not checked"
        }
    }
}

/// One kernel × tile on one case.
#[derive(Clone, Debug, Serialize)]
pub struct DecodeRow {
    /// Frame width = height.
    pub size: u32,
    /// Distinct materials per 8×8 tile.
    pub mix: u32,
    /// One decoder for every material.
    pub shared: bool,
    /// Decoders in the package.
    pub decoders: usize,
    /// The kernel.
    pub kernel: NtcKernel,
    /// The tile (`None` for the sorted kernels, which sort 8×8 tiles).
    pub tile: Option<TileSize>,
    /// Every stage together, per frame.
    pub ms: Spread,
    /// Whether the first measurement's p90/p10 exceeded 1.25 and it was measured again
    /// (`bench::trust`).
    pub remeasured: bool,
    /// Whether `ms` is still unstable after that (p90/p10 > 1.25): not to be trusted.
    pub unstable: bool,
    /// Median per stage (`ntc.sort.count`, …, `ntc.decode`).
    pub stages: Vec<(String, f64)>,
    /// Decoder arithmetic over the median time.
    pub tflops: f64,
    /// The peak that bounds the kernel's arithmetic (`f32 FMA`, `f16x2 FMA`, `coop …`).
    pub bound_by: String,
    /// `tflops` over that peak (`None` when it was not measured).
    pub fraction_of_peak: Option<f64>,
    /// The frame's G-buffer reads and target writes (a lower bound of its traffic) over
    /// the median time, as a fraction of the copy peak.
    pub fraction_of_bandwidth: Option<f64>,
    /// Timed frames.
    pub frames: u32,
    /// Against the CPU decoder, when checked.
    pub check: Option<EqualityCheck>,
}

/// One stage of a kernel's decode timed alone (the others cut by defines,
/// [`DecodeStage`]).
#[derive(Clone, Debug, Serialize)]
pub struct StageCost {
    /// Input, MLP or output.
    pub stage: DecodeStage,
    /// The decode pass (`ntc.decode`) with only this stage, per frame.
    pub ms: Spread,
    /// Whether `ms` stayed unstable after a second measurement.
    pub unstable: bool,
    /// The stage's work over its median time: TFLOP/s (MLP) or TB/s (input, output:
    /// the bytes it requests, a lower bound of its traffic).
    pub rate: f64,
    /// `TFLOP/s` or `TB/s`.
    pub unit: String,
    /// The measured peak it is set against (the kernel's arithmetic peak, or `copy`).
    pub against: String,
    /// `rate` over that peak (`None` when it was not measured).
    pub fraction_of_peak: Option<f64>,
}

/// A kernel's decode cut into its stages on one case (Table 5's: one material per tile,
/// separate).
#[derive(Clone, Debug, Serialize)]
pub struct StageRow {
    /// Frame width = height.
    pub size: u32,
    /// The kernel.
    pub kernel: NtcKernel,
    /// The tile (`None` for the sorted kernels).
    pub tile: Option<TileSize>,
    /// The whole decode pass (`ntc.decode`, without the sort), per frame.
    pub all: Spread,
    /// Whether `all` stayed unstable.
    pub all_unstable: bool,
    /// Each stage alone.
    pub stages: Vec<StageCost>,
    /// The stage that takes longest alone: the one bounding the kernel.
    pub bound_by: DecodeStage,
}

impl StageRow {
    /// `kernel` or `kernel tile`.
    pub fn variant(&self) -> String {
        self.tile
            .map_or(self.kernel.to_string(), |t| format!("{} {t}", self.kernel))
    }
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct DecodeBenchReport {
    /// `GpuContext::describe()`.
    pub adapter: String,
    /// Granted features.
    pub features: String,
    /// Subgroup sizes the adapter reports (min, max).
    pub subgroup_sizes: (u32, u32),
    /// The command line.
    pub command: String,
    /// The decoder layout: input → hidden… → outputs.
    pub layout: String,
    /// FLOP per decoded pixel.
    pub flops_per_pixel: f64,
    /// Materials, each `material_side`².
    pub materials: u32,
    /// Side of each material.
    pub material_side: u32,
    /// Sizes measured.
    pub sizes: Vec<u32>,
    /// Materials per tile measured.
    pub mixes: Vec<u32>,
    /// The peaks, first.
    pub peaks: Vec<Peak>,
    /// The measurements.
    pub rows: Vec<DecodeRow>,
    /// The stage costs.
    pub stage_rows: Vec<StageRow>,
    /// What was skipped, and why.
    pub skipped: Vec<String>,
    /// Seconds the run took.
    pub seconds: f64,
}

mod peaks;
mod report;
mod synthetic;
mod timing;

pub use peaks::peak_reference;
use peaks::*;
pub use report::{DECODE_REPORT_FILES, write_decode_report};
pub use synthetic::synthetic_pixel;
use synthetic::*;
use timing::*;

/// A short calibration of `kernels` for decoders of shape `config` (what
/// `render::kernel_choice` caches): each on one synthetic 512² frame with 2 materials per
/// 8×8 tile out of 4 of 256² (per-tile kernels with 8×8 tiles), warmed up and timed as a
/// bench case (5 frames). Per kernel its median ms, `None` where it failed to build or
/// run.
pub fn calibrate(
    ctx: &GpuContext,
    config: &NtcConfig,
    kernels: &[NtcKernel],
) -> Vec<(NtcKernel, Option<f64>)> {
    let opts = DecodeBenchOptions {
        config: config.clone(),
        materials: 4,
        material_side: 256,
        sizes: vec![512],
        mixes: vec![2],
        frames: 5,
        warmup: Warmup {
            frames: 3,
            time: trust::MIN_WARMUP,
        },
        stages: false,
        check_pixels: 0,
        ..DecodeBenchOptions::full(kernels.to_vec())
    };
    let content = match Content::new(ctx, &opts) {
        Ok(c) => c,
        Err(e) => {
            log::warn!("decode kernel calibration: {e}");
            return Vec::new();
        }
    };
    let frame = Frame::new(ctx, &opts, opts.sizes[0], opts.mixes[0]);
    let mut timer = Timer {
        ctx,
        profiler: GpuProfiler::new(ctx),
    };
    kernels
        .iter()
        .map(|&kernel| {
            let ms = build_pass(
                ctx,
                config,
                kernel,
                TileSize::T8x8,
                DecodeStage::All,
                opts.build_budget,
            )
            .map_err(|e| log::warn!("decode kernel calibration, {kernel}: {e}"))
            .ok()
            .and_then(|(mut pass, _)| {
                timer
                    .measure(&opts, &mut pass, &content, &content.gpu[0], &frame)
                    .map_err(|e| log::warn!("decode kernel calibration, {kernel}: {e}"))
                    .ok()
            })
            .map(|m| m.totals.median);
            if let Some(ms) = ms {
                log::info!("decode kernel calibration: {kernel} {ms:.3} ms");
            }
            (kernel, ms)
        })
        .collect()
}

/// The peak bounding `kernel`'s arithmetic.
fn bound_of(kernel: NtcKernel) -> &'static str {
    match kernel {
        NtcKernel::F32 => "f32 FMA",
        NtcKernel::CoopMatrix => "coop f32 acc",
        NtcKernel::Mma | NtcKernel::SortedMma | NtcKernel::Chain | NtcKernel::SortedChain => {
            "coop f16 acc"
        }
        NtcKernel::F16 | NtcKernel::Fma | NtcKernel::SortedFma => "f16x2 FMA",
    }
}

/// The cases in measuring order: Table 5 (every size, one material per tile, separate),
/// then Table 6 (1024² or the nearest size: every mix, separate and shared), then the
/// rest of sizes × mixes × sharing.
fn plan(opts: &DecodeBenchOptions) -> Vec<(u32, u32, bool)> {
    let mut cases = Vec::new();
    let mut add = |c: (u32, u32, bool)| {
        if !cases.contains(&c) {
            cases.push(c);
        }
    };
    let first_mix = opts.mixes.first().copied().unwrap_or(1);
    for &s in &opts.sizes {
        add((s, first_mix, false));
    }
    if let Some(&table6) = opts.sizes.iter().min_by_key(|&&s| s.abs_diff(1024)) {
        for &k in &opts.mixes {
            add((table6, k, false));
            add((table6, k, true));
        }
    }
    for &s in &opts.sizes {
        for &k in &opts.mixes {
            add((s, k, false));
            add((s, k, true));
        }
    }
    cases
}

/// Run the whole benchmark: peaks, then every case of `plan` under every kernel × tile
/// that builds. `note` receives progress lines.
pub fn run_decode_bench(
    ctx: &GpuContext,
    opts: &DecodeBenchOptions,
    command: &str,
    note: &mut dyn FnMut(&str),
) -> Result<DecodeBenchReport, BenchError> {
    let start = Instant::now();
    if !ctx.granted.timestamps {
        return Err(BenchError::NoTimestamps(ctx.describe()));
    }
    // An 8×8 tile holds 64 pixels, and the synthetic package has `materials` materials.
    let most = opts.materials.min(64);
    if let Some(&k) = opts.mixes.iter().find(|&&k| k == 0 || k > most) {
        return Err(BenchError::Synthetic(format!(
            "{k} materials per 8×8 tile: the tile has 64 pixels and the package {} materials, \
             so 1..={most}",
            opts.materials
        )));
    }
    let mut skipped = Vec::new();
    let peaks = measure_peaks(ctx, opts, note)?;
    note(&format!(
        "synthetic package: {} materials of {}², decoders {}",
        opts.materials, opts.material_side, opts.materials
    ));
    let content = Content::new(ctx, opts)?;
    let references = [
        NtcCpuReference::new(&content.packages[0], &content.map, &content.materials)?,
        NtcCpuReference::new(&content.packages[1], &content.map, &content.materials)?,
    ];
    // Every kernel × tile once, its pipelines built within the budget; with stages, also
    // a pass per single stage.
    let mut passes: Vec<(NtcKernel, Option<TileSize>, NtcDecodePass)> = Vec::new();
    let mut stage_passes: Vec<Vec<(DecodeStage, NtcDecodePass)>> = Vec::new();
    for &kernel in &opts.kernels {
        let tiles: Vec<Option<TileSize>> = if kernel.is_sorted() {
            vec![None]
        } else {
            opts.tiles.iter().copied().map(Some).collect()
        };
        for tile in tiles {
            let name = tile.map_or(kernel.to_string(), |t| format!("{kernel} {t}"));
            let build_tile = tile.unwrap_or(TileSize::T8x8);
            let build = |stage| {
                build_pass(
                    ctx,
                    &content.config,
                    kernel,
                    build_tile,
                    stage,
                    opts.build_budget,
                )
            };
            match build(DecodeStage::All) {
                Ok((pass, took)) => {
                    note(&format!("{name}: built in {:.1} s", took.as_secs_f64()));
                    passes.push((kernel, tile, pass));
                    let mut cut = Vec::new();
                    for stage in DecodeStage::SINGLE.into_iter().filter(|_| opts.stages) {
                        match build(stage) {
                            Ok((pass, _)) => cut.push((stage, pass)),
                            Err(e) => {
                                note(&format!("{name} {} stage: skipped ({e})", stage.name()));
                                skipped.push(format!("{name} {} stage: {e}", stage.name()));
                            }
                        }
                    }
                    stage_passes.push(cut);
                }
                Err(e) => {
                    note(&format!("{name}: skipped ({e})"));
                    skipped.push(format!("{name}: {e}"));
                }
            }
        }
    }
    let flops_per_pixel = NtcDecodePass::flops_per_pixel(&content.config);
    let peak = |name: &str| peaks.iter().find(|p| p.name == name).map(|p| p.value);
    let max_side = ctx.device.limits().max_texture_dimension_2d;
    let mut timer = Timer {
        ctx,
        profiler: GpuProfiler::new(ctx),
    };
    let mut rows = Vec::new();
    let mut stage_rows = Vec::new();
    let first_mix = opts.mixes.first().copied().unwrap_or(1);
    let mut skipped_sizes = Vec::new();
    for (size, mix, shared) in plan(opts) {
        let pixels = u64::from(size) * u64::from(size);
        let bytes = pixels * BYTES_PER_PIXEL;
        let over = if size > max_side {
            Some(format!(
                "the device's textures are at most {max_side} pixels wide"
            ))
        } else if bytes > opts.memory_budget {
            Some(format!(
                "a frame needs about {bytes} bytes, over the memory budget of {} (set {})",
                opts.memory_budget,
                crate::texture::budget::ENV
            ))
        } else {
            None
        };
        if let Some(why) = over {
            if !skipped_sizes.contains(&size) {
                note(&format!("{size}²: skipped ({why})"));
                skipped.push(format!("{size}²: {why}"));
                skipped_sizes.push(size);
            }
            continue;
        }
        if start.elapsed() > opts.time_budget {
            let why = format!(
                "{size}² k={mix} {}: not started, the run's {:.0} s budget was spent",
                if shared { "shared" } else { "separate" },
                opts.time_budget.as_secs_f64()
            );
            note(&why);
            skipped.push(why);
            continue;
        }
        let frame = Frame::new(ctx, opts, size, mix);
        let p = usize::from(shared);
        let package = &content.gpu[p];
        let check = opts.check_pixels > 0 && pixels <= opts.check_max_pixels;
        for ((kernel, tile, pass), cut) in passes.iter_mut().zip(&mut stage_passes) {
            let name = format!(
                "{size}² k={mix} {} {}",
                if shared { "shared" } else { "separate" },
                tile.map_or(kernel.to_string(), |t| format!("{kernel} {t}"))
            );
            let measured = timer.measure(opts, pass, &content, package, &frame)?;
            let ms = measured.totals;
            let tflops = pixels as f64 * flops_per_pixel / (ms.median * 1e-3) / 1e12;
            let bound_by = bound_of(*kernel);
            // G-buffer reads (28 bytes) and target writes (24) per pixel.
            let bandwidth = pixels as f64 * 52.0 / (ms.median * 1e-3) / 1e12;
            let equality = if check {
                frame.poison(ctx);
                timer.frame(pass, &content, package, &frame)?;
                let tolerance = if *kernel == NtcKernel::F32 {
                    F32_TOLERANCE
                } else {
                    F16_TOLERANCE
                };
                Some(check_frame(
                    ctx,
                    opts,
                    &frame,
                    &content.packages[p],
                    &references[p],
                    tolerance,
                )?)
            } else {
                None
            };
            let row = DecodeRow {
                size,
                mix,
                shared,
                decoders: content.packages[p].decoders.len(),
                kernel: *kernel,
                tile: *tile,
                ms,
                remeasured: measured.remeasured,
                unstable: measured.unstable,
                stages: measured.stages,
                tflops,
                bound_by: bound_by.to_owned(),
                fraction_of_peak: peak(bound_by).map(|p| tflops / p),
                fraction_of_bandwidth: peak("copy").map(|p| bandwidth / p),
                frames: opts.frames,
                check: equality,
            };
            note(&format!(
                "{name}: {} ms, {:.2} TFLOP/s{}{}",
                trust::spread_cell(&ms, row.unstable),
                tflops,
                if row.remeasured { " (re-measured)" } else { "" },
                row.check.as_ref().map_or(String::new(), |c| format!(
                    ", max error {:.1e} ({})",
                    c.max_error,
                    c.verdict()
                ))
            ));
            rows.push(row);
            if mix == first_mix && !shared && !cut.is_empty() {
                let mut stages = Vec::new();
                for (stage, stage_pass) in cut.iter_mut() {
                    let m = timer.measure(opts, stage_pass, &content, package, &frame)?;
                    let seconds = m.decode.median * 1e-3;
                    let (work, unit, against) = match stage {
                        DecodeStage::Mlp => (flops_per_pixel / 1e12, "TFLOP/s", bound_by),
                        DecodeStage::Input => (
                            input_bytes(&content.config, kernel.is_sorted()) / 1e12,
                            "TB/s",
                            "copy",
                        ),
                        _ => (OUTPUT_BYTES / 1e12, "TB/s", "copy"),
                    };
                    let rate = pixels as f64 * work / seconds;
                    note(&format!(
                        "{name} {} stage: {} ms, {rate:.3} {unit}",
                        stage.name(),
                        trust::spread_cell(&m.decode, m.unstable),
                    ));
                    stages.push(StageCost {
                        stage: *stage,
                        ms: m.decode,
                        unstable: m.unstable,
                        rate,
                        unit: unit.to_owned(),
                        against: against.to_owned(),
                        fraction_of_peak: peak(against).map(|p| rate / p),
                    });
                }
                let bound_by = stages
                    .iter()
                    .max_by(|a, b| a.ms.median.total_cmp(&b.ms.median))
                    .map_or(DecodeStage::All, |c| c.stage);
                stage_rows.push(StageRow {
                    size,
                    kernel: *kernel,
                    tile: *tile,
                    all: measured.decode,
                    all_unstable: measured.unstable,
                    stages,
                    bound_by,
                });
            }
        }
    }
    let layout = std::iter::once(content.config.input_width())
        .chain(content.config.hidden.iter().map(|&w| w as usize))
        .chain([crate::ntc::model::OUTPUTS])
        .map(|w| w.to_string())
        .collect::<Vec<_>>()
        .join("→");
    let info = ctx.adapter.get_info();
    Ok(DecodeBenchReport {
        adapter: ctx.describe(),
        features: ctx.granted.to_string(),
        subgroup_sizes: (info.subgroup_min_size, info.subgroup_max_size),
        command: command.to_owned(),
        layout,
        flops_per_pixel,
        materials: opts.materials,
        material_side: opts.material_side,
        sizes: opts.sizes.clone(),
        mixes: opts.mixes.clone(),
        peaks,
        rows,
        stage_rows,
        skipped,
        seconds: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_says_equal_unequal_or_too_few_compared() {
        let check = |compared, skipped, over| EqualityCheck {
            compared,
            skipped,
            max_error: 0.0,
            tolerance: 1e-3,
            over_tolerance: over,
            equal: over == 0 && compared * 20 >= (compared + skipped) * 19,
        };
        assert_eq!(check(100, 2, 0).verdict(), "equal");
        assert_eq!(
            check(100, 2, 3).verdict(),
            "NOT EQUAL: 3 pixels over the tolerance"
        );
        assert_eq!(
            check(3, 1, 0).verdict(),
            "not checked: only 3 of 4 pixels away from a mip or texel boundary"
        );
    }

    #[test]
    fn every_tile_holds_the_asked_number_of_materials() {
        for mix in [1, 2, 5, 10, 16] {
            for (tx, ty) in [(0, 0), (3, 7), (12, 1)] {
                let mut seen = Vec::new();
                for li in 0..64 {
                    let p = synthetic_pixel(tx * 8 + li % 8, ty * 8 + li / 8, mix, 16, 1024);
                    let m = p.word & 0xF_FFFF;
                    if !seen.contains(&m) {
                        seen.push(m);
                    }
                }
                assert_eq!(seen.len(), mix as usize, "tile ({tx}, {ty}), k = {mix}");
            }
        }
    }

    #[test]
    fn the_plan_starts_with_table_5_then_table_6() {
        let opts = DecodeBenchOptions::full(vec![NtcKernel::F32]);
        let cases = plan(&opts);
        assert_eq!(
            &cases[..5],
            &[512, 1024, 2048, 4096, 8192].map(|s| (s, 1, false))
        );
        assert_eq!(cases[5], (1024, 1, true));
        assert_eq!(cases[6], (1024, 2, false));
        // Every size × mix × sharing once.
        assert_eq!(cases.len(), 5 * 5 * 2);
    }

    #[test]
    fn the_f32_peak_reference_follows_the_chain() {
        // seed 0: every chain multiplies by 0.999 and adds nothing.
        let s = peak_reference(0, 2, false);
        let want: f32 = (0..16).map(|k| k as f32 * 0.999 * 0.999).sum();
        assert!((s - want).abs() < 1e-4, "{s} {want}");
        assert!(peak_reference(0, 2, true) > 0.0);
    }
}
