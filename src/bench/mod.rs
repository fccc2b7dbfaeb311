//! `neurotex bench`: GPU timings of the render modes side by side in one run — the
//! reference path and every NTC mode, under each decode kernel and tile size — along a
//! camera path, with the divergence of each mode, written as JSON, CSV, Markdown and a
//! PNG chart. Speed claims come from here (and `eval`), measured on one adapter in one
//! process, and are reported as ratios to the baseline of the same kernel and tile.
//!
//! Each configuration renders untimed frames at the path's start until its frame times
//! settle (`warmup`, [`trust`]) and then `frames`
//! frames along the path, each submitted and timed on its own with timestamp queries,
//! once more when their p90/p10 exceeds [`trust::STABLE_RATIO`]; a configuration still
//! unstable is flagged in every output and its medians enter no ratio. The report keeps
//! the median and the 10th/90th percentiles of the material pass (`ntc.decode`, or every
//! `reference*` step of the reference pass), of the whole frame (the sum
//! of every timed pass) and of every pass by its label (the G-buffer's `gbuffer`, or
//! `gbuffer_visibility` and `gbuffer_resolve` in the visibility mode, and the others).
//! Divergence is counted on the path's middle frame. With a trace
//! file every frame of every configuration (warm-up included) is also written as a Chrome
//! trace.
//!
//! `bench decode` ([`decode`]) times the decode kernels alone; `bench kernels`
//! ([`kernels`]) reports what the driver compiled for each kernel (registers, spills).

pub mod decode;
pub mod kernels;
pub mod output;
pub mod trust;

use std::path::Path;

use serde::Serialize;

use crate::charts::{Panel, PlotError, Series, SeriesLabelPosition, write_panels_png};
use crate::cluster::Strategy;
use crate::gpu::profiler::{TraceError, distinct_labels, label_ms};
use crate::gpu::{GpuContext, GpuError, GpuProfiler, PassTiming};
use crate::render::passes::ntc_decode::{NtcDecodePass, NtcKernel};
use crate::render::{
    FrameSettings, GBufferMode, KernelChoice, PassSettings, RenderError, RenderMode, Renderer,
};
use crate::scene::{Camera, Lighting};
use crate::screen::divergence::DivergenceStats;
use crate::screen::tiles::TileSize;
use trust::{Trusted, Warmup};

/// Errors of a benchmark run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Rendering failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A mode or kernel could not be set up.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// The synthetic NTC data or a decode pass could not be made.
    #[error(transparent)]
    Ntc(#[from] crate::render::ntc_gpu::NtcRenderError),
    /// The synthetic package of `bench decode` could not be made.
    #[error("cannot make the synthetic NTC package: {0}")]
    Synthetic(String),
    /// The adapter has no timestamp queries.
    #[error("adapter `{0}` has no timestamp queries; GPU timings cannot be measured")]
    NoTimestamps(String),
    /// Nothing to render.
    #[error("a benchmark needs at least one frame")]
    NoFrames,
    /// Every requested configuration was skipped: there is nothing to report.
    #[error("nothing was measured: every requested configuration was skipped ({0})")]
    NothingMeasured(String),
    /// The chart could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// The trace could not be written.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// An output file or folder could not be written.
    #[error(transparent)]
    Output(#[from] crate::io::OutputError),
}

/// Median and spread of a set of timings, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 90th percentile.
    pub p90: f64,
}

impl Spread {
    /// The spread of `values` (nearest-rank percentiles); zeros when empty.
    pub fn of(values: &[f64]) -> Self {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Self::default();
        }
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        Self {
            median: at(0.5),
            p10: at(0.1),
            p90: at(0.9),
        }
    }
}

/// One configuration's measurements.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    /// The mode.
    pub mode: RenderMode,
    /// The decode kernel (None for the reference).
    pub kernel: Option<NtcKernel>,
    /// The decode tile (None for the reference).
    pub tile: Option<TileSize>,
    /// Decoders in the mode's package.
    pub decoders: Option<usize>,
    /// The material pass (decode, or the reference material passes), per frame.
    pub material_ms: Spread,
    /// Every timed pass of the frame, summed, per frame.
    pub frame_ms: Spread,
    /// Each timed pass per frame, by label, in the order the frame records them.
    pub passes: Vec<PassSpread>,
    /// Divergence on the middle frame.
    pub divergence: DivergenceStats,
    /// Timed frames.
    pub frames: u32,
    /// Whether the first measurement was unstable and the path was timed again.
    pub remeasured: bool,
    /// Whether the kept frames are still unstable (p90/p10 of the frame time above
    /// [`trust::STABLE_RATIO`]): no conclusion uses this row's medians.
    pub unstable: bool,
    /// The material pass over the same kernel and tile's baseline row, when both are
    /// stable ([`BenchReport::with_ratios`] fills it; JSON, CSV and Markdown read it).
    pub material_ratio_to_baseline: Option<f64>,
}

/// One pass's time per frame (the sum of its scopes of that label in the frame).
#[derive(Clone, Debug, Serialize)]
pub struct PassSpread {
    /// The pass's label (its timing row).
    pub label: String,
    /// Its time per frame.
    pub ms: Spread,
}

/// Per label, in first-seen order, the per-frame sums of `frames`' timings (0 in a frame
/// without the label).
fn pass_spreads(frames: &[Vec<PassTiming>]) -> Vec<PassSpread> {
    distinct_labels(frames.iter().map(Vec::as_slice))
        .into_iter()
        .map(|label| {
            let per_frame: Vec<f64> = frames.iter().map(|f| label_ms(f, label)).collect();
            PassSpread {
                label: label.to_owned(),
                ms: Spread::of(&per_frame),
            }
        })
        .collect()
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// `GpuContext::describe()`.
    pub adapter: String,
    /// The scene.
    pub scene: String,
    /// Render size.
    pub size: (u32, u32),
    /// The camera path (or "static").
    pub camera: String,
    /// How the renderer made its G-buffer.
    pub gbuffer: GBufferMode,
    /// The command line.
    pub command: String,
    /// The rows.
    pub rows: Vec<BenchRow>,
    /// Video memory of each mode's material paths ([`crate::render::Renderer::source_memory`]).
    pub memory: Vec<MemoryRow>,
}

/// The video memory of one mode's material paths, in bytes.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct MemoryRow {
    /// The mode.
    pub mode: RenderMode,
    /// The scene's original textures.
    pub textures: u64,
    /// The package on the GPU (per-pixel decode; `None` for the reference).
    pub package: Option<u64>,
    /// Inference on load per path, beside the BCn bundles (`None` for the reference).
    pub on_load: Option<crate::render::memory::OnLoadMemory>,
}

impl From<&crate::render::memory::SourceMemory> for MemoryRow {
    fn from(m: &crate::render::memory::SourceMemory) -> Self {
        Self {
            mode: m.mode,
            textures: m.textures,
            package: m.package,
            on_load: m.on_load,
        }
    }
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Modes, in report order (modes without a package in the renderer are skipped).
    pub modes: Vec<RenderMode>,
    /// Kernels (ones the device cannot run are skipped with a note).
    pub kernels: Vec<NtcKernel>,
    /// Tile sizes.
    pub tiles: Vec<TileSize>,
    /// The warm-up of each configuration.
    pub warmup: Warmup,
    /// Also write the timed frames as a Chrome trace to this file.
    pub trace: Option<std::path::PathBuf>,
}

/// The material pass's time in a frame's timings.
fn material_ms(timings: &[PassTiming]) -> f64 {
    timings
        .iter()
        .filter(|t| NtcDecodePass::is_stage_label(&t.label) || t.label.starts_with("reference"))
        .map(|t| t.ms)
        .sum()
}

/// Measure every configuration of `opts` along `cameras` (one per timed frame).
/// `note` receives progress lines.
pub fn run_bench(
    ctx: &GpuContext,
    renderer: &mut Renderer,
    output: &wgpu::TextureView,
    cameras: &[Camera],
    lighting: Lighting,
    opts: &BenchOptions,
    note: &mut dyn FnMut(&str),
) -> Result<Vec<BenchRow>, BenchError> {
    if !ctx.granted.timestamps {
        return Err(BenchError::NoTimestamps(ctx.describe()));
    }
    let mut profiler = GpuProfiler::new(ctx);
    if opts.trace.is_some() {
        profiler.start_trace();
    }
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for &mode in &opts.modes {
        if !renderer.has_mode(mode) {
            skipped.push(format!("{mode}: no package"));
            note(&format!("{mode}: no package, skipped"));
            continue;
        }
        let configs: Vec<(Option<NtcKernel>, Option<TileSize>)> = if mode == RenderMode::Reference {
            vec![(None, None)]
        } else {
            opts.kernels
                .iter()
                .flat_map(|&k| opts.tiles.iter().map(move |&t| (Some(k), Some(t))))
                .collect()
        };
        for (kernel, tile) in configs {
            if let (Some(k), Some(t)) = (kernel, tile) {
                let set = renderer
                    .set_kernel_choice(
                        ctx,
                        KernelChoice {
                            kernel: Some(k),
                            tile: t,
                        },
                    )
                    .and_then(|()| renderer.prepare(ctx, mode));
                if let Err(e) = set {
                    skipped.push(format!("{mode} {k} {t}: {e}"));
                    note(&format!("{mode} {k} {t}: skipped ({e})"));
                    continue;
                }
            }
            let label = match (kernel, tile) {
                (Some(k), Some(t)) => format!("{mode} {k} {t}"),
                _ => mode.to_string(),
            };
            note(&format!("{label}: measuring"));
            let shots = Shots {
                output,
                cameras,
                lighting,
                opts,
            };
            let row = measure(ctx, &mut profiler, renderer, &shots, mode)?;
            let row = BenchRow {
                kernel: kernel.and(renderer.kernel()),
                tile,
                decoders: renderer.decoder_count(mode),
                ..row
            };
            note(&format!(
                "{label}: material {}, frame {} ms, 𝒟 {:.3}{}",
                trust::spread_cell(&row.material_ms, row.unstable),
                trust::spread_cell(&row.frame_ms, row.unstable),
                row.divergence.score,
                if row.remeasured {
                    " (measured twice)"
                } else {
                    ""
                }
            ));
            rows.push(row);
        }
    }
    if let Some(path) = &opts.trace {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::io::create_dir(dir)?;
        }
        let scopes = profiler.write_trace(path)?;
        note(&format!("wrote {} ({scopes} timed passes)", path.display()));
    }
    if rows.is_empty() {
        return Err(BenchError::NothingMeasured(crate::ntc::shard::capped_list(
            skipped.into_iter(),
            "; ",
            "configurations",
        )));
    }
    Ok(rows)
}

/// What every configuration of a run renders.
struct Shots<'a> {
    output: &'a wgpu::TextureView,
    cameras: &'a [Camera],
    lighting: Lighting,
    opts: &'a BenchOptions,
}

/// Measure `mode` along the shots' cameras with the current kernel choice (every frame
/// goes into `profiler`'s trace when one is recorded).
fn measure(
    ctx: &GpuContext,
    profiler: &mut GpuProfiler,
    renderer: &mut Renderer,
    shots: &Shots<'_>,
    mode: RenderMode,
) -> Result<BenchRow, BenchError> {
    let Shots {
        output,
        cameras,
        lighting,
        opts,
    } = *shots;
    let settings = |camera: &Camera| FrameSettings {
        camera: camera.clone(),
        lighting,
        aov: crate::render::Aov::Final,
        mode,
        passes: PassSettings::default(),
    };
    // Record and submit the frame of `camera` in an encoder labelled `label`.
    let submit = |renderer: &mut Renderer,
                  camera: &Camera,
                  profiler: &mut GpuProfiler,
                  label: &str|
     -> Result<(), GpuError> {
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
        ctx.error_scope(|| {
            renderer.record(ctx, &mut encoder, output, &settings(camera), profiler)
        })?;
        ctx.queue.submit([encoder.finish()]);
        profiler.end_frame(ctx);
        Ok(())
    };
    let frame = |renderer: &mut Renderer,
                 camera: &Camera,
                 profiler: &mut GpuProfiler|
     -> Result<Vec<PassTiming>, GpuError> {
        submit(renderer, camera, profiler, "bench.frame")?;
        Ok(profiler.collect(ctx))
    };
    if cameras.is_empty() {
        return Err(BenchError::NoFrames);
    }
    // Every frame's statistics are read (collecting the timings waited for the GPU), so
    // the readback ring never fills and the middle frame's are its own; the warm-up
    // renders the first camera.
    let Trusted {
        samples,
        remeasured,
        unstable,
    } = trust::run(
        opts.warmup,
        cameras.len(),
        |i| {
            let timings = frame(renderer, &cameras[i], profiler)?;
            let stats = renderer.try_divergence(&ctx.device);
            Ok::<_, BenchError>((timings, stats.filter(|_| i == cameras.len() / 2)))
        },
        |(timings, _)| timings.iter().map(|t| t.ms).sum(),
    )?;
    let divergence = samples.iter().find_map(|(_, d)| d.clone());
    let timed: Vec<Vec<PassTiming>> = samples.into_iter().map(|(t, _)| t).collect();
    let material: Vec<f64> = timed.iter().map(|t| material_ms(t)).collect();
    let total: Vec<f64> = timed.iter().map(|t| t.iter().map(|p| p.ms).sum()).collect();
    let divergence = match divergence {
        Some(d) => d,
        None => {
            let middle = &cameras[cameras.len() / 2];
            submit(renderer, middle, profiler, "bench.divergence")?;
            renderer.divergence_blocking(ctx)?
        }
    };
    Ok(BenchRow {
        mode,
        kernel: None,
        tile: None,
        decoders: None,
        material_ms: Spread::of(&material),
        frame_ms: Spread::of(&total),
        passes: pass_spreads(&timed),
        divergence,
        frames: cameras.len() as u32,
        remeasured,
        unstable,
        material_ratio_to_baseline: None,
    })
}

impl BenchReport {
    /// The baseline row of the same kernel and tile as `row`.
    fn baseline_of(&self, row: &BenchRow) -> Option<&BenchRow> {
        self.rows.iter().find(|r| {
            r.mode == RenderMode::Ntc(Strategy::Baseline)
                && r.kernel == row.kernel
                && r.tile == row.tile
        })
    }

    /// `row`'s material pass over its baseline's, when both are stable (no ratio comes
    /// from a flagged configuration).
    fn ratio_to_baseline(&self, row: &BenchRow) -> Option<f64> {
        self.baseline_of(row)
            .filter(|b| b.material_ms.median > 0.0 && !b.unstable && !row.unstable)
            .map(|b| row.material_ms.median / b.material_ms.median)
    }

    /// The report with every row's [`material_ratio_to_baseline`](BenchRow::material_ratio_to_baseline).
    pub fn with_ratios(mut self) -> Self {
        let ratios: Vec<Option<f64>> = self
            .rows
            .iter()
            .map(|r| self.ratio_to_baseline(r))
            .collect();
        for (row, ratio) in self.rows.iter_mut().zip(ratios) {
            row.material_ratio_to_baseline = ratio;
        }
        self
    }

    /// CSV: one row per configuration.
    pub fn csv(&self) -> String {
        let mut s = String::from(
            "mode,kernel,tile,decoders,material_ms_median,material_ms_p10,material_ms_p90,frame_ms_median,frame_ms_p10,frame_ms_p90,divergence,baseline_divergence,mean_decoders_per_tile,material_ratio_to_baseline,frames,remeasured,unstable\n",
        );
        for r in &self.rows {
            let ratio = r
                .material_ratio_to_baseline
                .map(|x| format!("{x:.4}"))
                .unwrap_or_default();
            s.push_str(&format!(
                "{},{},{},{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.3},{},{},{},{}\n",
                r.mode,
                r.kernel.map(|k| k.to_string()).unwrap_or_default(),
                r.tile.map(|t| t.to_string()).unwrap_or_default(),
                r.decoders.map(|d| d.to_string()).unwrap_or_default(),
                r.material_ms.median,
                r.material_ms.p10,
                r.material_ms.p90,
                r.frame_ms.median,
                r.frame_ms.p10,
                r.frame_ms.p90,
                r.divergence.score,
                r.divergence.baseline_score,
                r.divergence.mean_decoders,
                ratio,
                r.frames,
                r.remeasured,
                r.unstable
            ));
        }
        s
    }

    /// A Markdown table with ratios to the baseline of the same kernel and tile.
    pub fn markdown(&self) -> String {
        let mut s = format!(
            "Adapter: {}  \nScene: {}, {}×{}, camera {}, {} G-buffer  \nCommand: `{}`\n\n",
            self.adapter,
            self.scene,
            self.size.0,
            self.size.1,
            self.camera,
            self.gbuffer,
            self.command
        );
        let flagged = self.rows.iter().filter(|r| r.unstable).count();
        if flagged > 0 {
            s.push_str(&format!(
                "**{flagged} configuration(s) UNSTABLE** (p90/p10 of the frame time above {} after a second measurement): their medians are not results and enter no ratio.\n\n",
                trust::STABLE_RATIO
            ));
        }
        s.push_str("| mode | kernel | tile | decoders | material pass ms (p10–p90) | × baseline | frame ms (p10–p90) | 𝒟 | mean D |\n");
        s.push_str("|---|---|---|---|---|---|---|---|---|\n");
        for r in &self.rows {
            let ratio = r
                .material_ratio_to_baseline
                .map_or("–".into(), |x| format!("{x:.2}"));
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {:.3} | {:.2} |\n",
                r.mode,
                r.kernel.map_or("–".into(), |k| k.to_string()),
                r.tile.map_or("–".into(), |t| t.to_string()),
                r.decoders.map_or("–".into(), |d| d.to_string()),
                trust::spread_cell(&r.material_ms, r.unstable),
                ratio,
                trust::spread_cell(&r.frame_ms, r.unstable),
                r.divergence.score,
                r.divergence.mean_decoders
            ));
        }
        let mut labels: Vec<&str> = Vec::new();
        for p in self.rows.iter().flat_map(|r| &r.passes) {
            if !labels.contains(&p.label.as_str()) {
                labels.push(&p.label);
            }
        }
        if !labels.is_empty() {
            s.push_str("\nGPU passes, ms per frame, median (p10–p90):\n\n| mode | kernel | tile |");
            for l in &labels {
                s.push_str(&format!(" {l} |"));
            }
            s.push_str(&format!("\n|---|---|---|{}\n", "---|".repeat(labels.len())));
            for r in &self.rows {
                s.push_str(&format!(
                    "| {} | {} | {} |",
                    r.mode,
                    r.kernel.map_or("–".into(), |k| k.to_string()),
                    r.tile.map_or("–".into(), |t| t.to_string()),
                ));
                for l in &labels {
                    match r.passes.iter().find(|p| p.label == *l) {
                        Some(p) => {
                            s.push_str(&format!(" {} |", trust::spread_cell(&p.ms, r.unstable)));
                        }
                        None => s.push_str(" – |"),
                    }
                }
                s.push('\n');
            }
        }
        s.push_str(&self.memory_markdown());
        s
    }

    /// The video memory table: per mode, MiB of each material path (inference on load
    /// transcoded beside the BCn bundle of the same sets).
    fn memory_markdown(&self) -> String {
        if self.memory.is_empty() {
            return String::new();
        }
        let mib = |b: u64| format!("{:.2}", b as f64 / 1_048_576.0);
        let opt = |b: Option<u64>| b.map_or("–".to_owned(), mib);
        let mut s = String::from(
            "\nVideo memory, MiB\n\n| mode | original textures | package (per-pixel decode) | RGBA8 on load | BC1 on load (BC1/BC5 bundle) | BC7 on load (BC7/BC5 bundle) |\n|---|---|---|---|---|---|\n",
        );
        for m in &self.memory {
            let o = m.on_load;
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                m.mode,
                mib(m.textures),
                opt(m.package),
                opt(o.map(|o| o.rgba8)),
                o.map_or("–".to_owned(), |o| format!(
                    "{} ({})",
                    mib(o.bc1),
                    mib(o.bundle_bc1_bc5)
                )),
                o.map_or("–".to_owned(), |o| format!(
                    "{} ({})",
                    mib(o.bc7),
                    mib(o.bundle_bc7_bc5)
                )),
            ));
        }
        s
    }

    /// A chart: material-pass time per mode, one line per kernel × tile (configurations
    /// flagged unstable left out).
    pub fn write_png(&self, path: &Path) -> Result<(), BenchError> {
        let modes: Vec<RenderMode> = RenderMode::ALL
            .into_iter()
            .filter(|m| *m != RenderMode::Reference && self.rows.iter().any(|r| r.mode == *m))
            .collect();
        let mut configs: Vec<(Option<NtcKernel>, Option<TileSize>)> = Vec::new();
        for r in &self.rows {
            if r.mode != RenderMode::Reference && !configs.contains(&(r.kernel, r.tile)) {
                configs.push((r.kernel, r.tile));
            }
        }
        let series: Vec<Series> = configs
            .iter()
            .map(|&(k, t)| Series {
                label: format!(
                    "{} {}",
                    k.map_or("?".into(), |k| k.to_string()),
                    t.map_or("?".into(), |t| t.to_string())
                ),
                points: modes
                    .iter()
                    .enumerate()
                    .filter_map(|(i, m)| {
                        self.rows
                            .iter()
                            .find(|r| r.mode == *m && r.kernel == k && r.tile == t)
                            .filter(|r| !r.unstable)
                            .map(|r| (i as f64 + 1.0, r.material_ms.median))
                    })
                    .collect(),
            })
            .collect();
        let reference = self
            .rows
            .iter()
            .find(|r| r.mode == RenderMode::Reference && !r.unstable)
            .map(|r| r.material_ms.median);
        let panel = Panel {
            title: format!(
                "material pass (median ms; unstable configurations left out){}",
                reference.map_or(String::new(), |r| format!(", reference {r:.3} ms"))
            ),
            x_categories: modes.iter().map(|m| m.to_string()).collect(),
            x_label: "mode".into(),
            y_label: "ms".into(),
            series,
            log_x: false,
            log_y: false,
            references: reference
                .map(|r| ("reference".to_string(), r))
                .into_iter()
                .collect(),
            legend: Some(SeriesLabelPosition::UpperLeft),
            markers: true,
        };
        write_panels_png(path, &[panel], 1100, 520)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(label: &str, ms: f64) -> PassTiming {
        PassTiming {
            label: label.into(),
            ms,
        }
    }

    #[test]
    fn pass_spreads_sum_each_label_per_frame_in_first_seen_order() {
        let frames = vec![
            vec![
                timing("gbuffer_visibility", 1.0),
                timing("gbuffer_resolve", 0.5),
                timing("reference", 0.25),
                timing("reference", 0.5),
            ],
            vec![
                timing("gbuffer_visibility", 3.0),
                timing("gbuffer_resolve", 0.5),
            ],
            vec![
                timing("gbuffer_visibility", 2.0),
                timing("gbuffer_resolve", 0.5),
            ],
        ];
        let spreads = pass_spreads(&frames);
        let labels: Vec<&str> = spreads.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            ["gbuffer_visibility", "gbuffer_resolve", "reference"]
        );
        assert_eq!(spreads[0].ms.median, 2.0);
        assert_eq!(spreads[1].ms.median, 0.5);
        // Frames without the label count 0; the two scopes of the first frame add up.
        assert_eq!(spreads[2].ms.median, 0.0);
        assert_eq!(spreads[2].ms.p90, 0.75);
    }

    fn row(mode: RenderMode, material: f64, unstable: bool) -> BenchRow {
        let ms = Spread {
            median: material,
            p10: material * 0.9,
            p90: material * if unstable { 2.0 } else { 1.1 },
        };
        BenchRow {
            mode,
            kernel: Some(NtcKernel::Fma),
            tile: Some(TileSize::T8x8),
            decoders: Some(1),
            material_ms: ms,
            frame_ms: ms,
            passes: vec![PassSpread {
                label: "ntc.decode".into(),
                ms,
            }],
            divergence: DivergenceStats {
                tile: TileSize::T8x8,
                tiles_covered: 1,
                baseline_tiles_covered: 1,
                histogram: vec![0, 1],
                baseline_histogram: vec![0, 1],
                score: 0.0,
                baseline_score: 0.0,
                mean_decoders: 1.0,
                baseline_mean_decoders: 1.0,
            },
            frames: 10,
            remeasured: unstable,
            unstable,
            material_ratio_to_baseline: None,
        }
    }

    fn report(rows: Vec<BenchRow>) -> BenchReport {
        BenchReport {
            adapter: "a".into(),
            scene: "s".into(),
            size: (8, 8),
            camera: "static".into(),
            gbuffer: GBufferMode::Raster,
            command: "c".into(),
            rows,
            memory: Vec::new(),
        }
        .with_ratios()
    }

    #[test]
    fn an_unstable_row_is_flagged_everywhere_and_enters_no_ratio() {
        let stable = report(vec![
            row(RenderMode::Ntc(Strategy::Baseline), 2.0, false),
            row(RenderMode::Ntc(Strategy::Clustered), 1.0, false),
        ]);
        assert!(
            stable
                .csv()
                .lines()
                .nth(2)
                .unwrap()
                .contains(",0.5000,10,false,false")
        );
        let md = stable.markdown();
        assert!(md.contains("| 0.50 |"), "{md}");
        assert!(md.contains("1.000 (0.900–1.100)"), "{md}");
        assert!(!md.contains("UNSTABLE"), "{md}");

        let flagged = report(vec![
            row(RenderMode::Ntc(Strategy::Baseline), 2.0, true),
            row(RenderMode::Ntc(Strategy::Clustered), 1.0, false),
        ]);
        let csv = flagged.csv();
        assert!(
            csv.lines()
                .next()
                .unwrap()
                .ends_with(",remeasured,unstable")
        );
        assert!(csv.lines().nth(1).unwrap().ends_with(",true,true"), "{csv}");
        // The clustered row's ratio to its unstable baseline is left empty.
        assert!(
            csv.lines().nth(2).unwrap().ends_with(",,10,false,false"),
            "{csv}"
        );
        let md = flagged.markdown();
        assert!(md.contains("**1 configuration(s) UNSTABLE**"), "{md}");
        assert!(md.contains("2.000 (1.800–4.000) UNSTABLE"), "{md}");
        assert!(!md.contains("| 0.50 |"), "{md}");
        let json = serde_json::to_value(&flagged).unwrap();
        assert_eq!(json["rows"][0]["unstable"], true);
        assert_eq!(json["rows"][1]["remeasured"], false);
        // The JSON carries the ratio the CSV and Markdown show (none next to an unstable
        // baseline).
        assert!(json["rows"][1]["material_ratio_to_baseline"].is_null());
        let json = serde_json::to_value(&stable).unwrap();
        assert_eq!(json["rows"][1]["material_ratio_to_baseline"], 0.5);
    }
}
