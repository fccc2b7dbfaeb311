//! GPU pass timing with timestamp queries, through `wgpu-profiler`, keyed by pass label.
//!
//! One label names a pass, its wgpu objects, its timestamp scope, its timing row and its
//! benchmark key (STYLE pattern 6). Passes open their scopes through
//! [`super::encoder::FrameEncoder`]; a frame looks like:
//!
//! ```text
//! let mut frame = FrameEncoder::new(&ctx, &mut encoder, &profiler);
//! frame.compute_pass("ntc.decode", |pass| { … });    // timed as `ntc.decode`
//! queue.submit([encoder.finish()]);
//! profiler.end_frame(&ctx);                           // after the frame's submission
//! let rows = profiler.collect(&ctx);  // headless: blocks; viewer: profiler.try_collect(&ctx)
//! ```
//!
//! **Why the queries are resolved in a later submission.** On Vulkan, timestamps resolved
//! and copied in the submission that wrote them can read zeros (wgpu issue 6406). So
//! [`GpuProfiler::end_frame`] resolves the frame's queries (and copies them into the
//! profiler's mappable buffers) in a small submission of its own, made after the frame's:
//! the queries are always written by an earlier submission than the one that reads them.
//!
//! `wgpu-profiler` keeps a few frames in flight and hands back each finished one without
//! stalling ([`GpuProfiler::try_collect`]); when too many are pending it drops the newest
//! rather than wait. It grows its query pools as needed, so no pass goes untimed. Without
//! the `timestamps` feature the profiler records nothing and every collect is empty.
//!
//! Finished frames can also be kept for a Chrome trace ([`GpuProfiler::start_trace`],
//! [`GpuProfiler::write_trace`]: `chrome://tracing` or Perfetto), and with the `tracy`
//! cargo feature every scope streams to a running Tracy profiler.

use std::path::Path;

use super::GpuContext;

/// Frames the profiler keeps in flight before it drops new ones.
pub const PENDING_FRAMES: usize = 4;

/// GPU time of one pass in one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct PassTiming {
    /// The pass label, as given to the frame encoder's `compute_pass` / `render_pass`.
    pub label: String,
    /// Time from the pass's beginning to its end timestamp, in milliseconds.
    pub ms: f64,
}

/// The distinct labels of `frames`' timings, in the order first seen.
pub fn distinct_labels<'a>(frames: impl IntoIterator<Item = &'a [PassTiming]>) -> Vec<&'a str> {
    let mut labels: Vec<&str> = Vec::new();
    for t in frames.into_iter().flatten() {
        if !labels.contains(&t.label.as_str()) {
            labels.push(&t.label);
        }
    }
    labels
}

/// The time of the passes labelled `label` in one frame's timings (0 when none is).
pub fn label_ms(frame: &[PassTiming], label: &str) -> f64 {
    frame
        .iter()
        .filter(|t| t.label == label)
        .map(|t| t.ms)
        .sum()
}

/// The rows of one finished frame: every timed scope, depth first, in the order recorded.
/// A scope whose end precedes its beginning (a bogus read) gives 0 ms.
pub fn timings_from_results(results: &[wgpu_profiler::GpuTimerQueryResult]) -> Vec<PassTiming> {
    let mut rows = Vec::new();
    for r in results {
        if let Some(time) = &r.time {
            rows.push(PassTiming {
                label: r.label.clone(),
                ms: (time.end - time.start).max(0.0) * 1e3,
            });
        }
        rows.extend(timings_from_results(&r.nested_queries));
    }
    rows
}

/// Errors of writing a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// No trace was started.
    #[error("no GPU trace is being recorded; start one first")]
    NotStarted,
    /// The file could not be written.
    #[error("cannot write the GPU trace {}: {source}", path.display())]
    Io {
        /// The trace file.
        path: std::path::PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// Timestamp scopes of the passes of each frame. See the module docs.
pub struct GpuProfiler {
    inner: wgpu_profiler::GpuProfiler,
    enabled: bool,
    /// Finished frames kept for a Chrome trace, while one is recorded.
    trace: Option<Vec<wgpu_profiler::GpuTimerQueryResult>>,
}

impl std::fmt::Debug for GpuProfiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuProfiler")
            .field("enabled", &self.enabled)
            .field("tracing", &self.trace.is_some())
            .finish_non_exhaustive()
    }
}

impl GpuProfiler {
    /// A profiler for `ctx`'s device; inert when timestamps are not granted.
    pub fn new(ctx: &GpuContext) -> Self {
        let enabled = ctx.granted.timestamps;
        let settings = wgpu_profiler::GpuProfilerSettings {
            enable_timer_queries: enabled,
            enable_debug_groups: false,
            max_num_pending_frames: PENDING_FRAMES,
        };
        #[cfg(feature = "tracy")]
        let inner = wgpu_profiler::GpuProfiler::new_with_tracy_client(
            settings.clone(),
            ctx.info.backend,
            &ctx.device,
            &ctx.queue,
        )
        .or_else(|e| {
            log::warn!("gpu profiler: no Tracy client ({e}); timing without it");
            wgpu_profiler::GpuProfiler::new(&ctx.device, settings)
        });
        #[cfg(not(feature = "tracy"))]
        let inner = wgpu_profiler::GpuProfiler::new(&ctx.device, settings);
        Self {
            // The settings above are valid (at least one pending frame).
            inner: inner.expect("valid profiler settings"),
            enabled,
            trace: None,
        }
    }

    /// Whether timestamps are granted (otherwise nothing is timed).
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The profiler passes open their scopes on.
    pub(crate) fn scopes(&self) -> &wgpu_profiler::GpuProfiler {
        &self.inner
    }

    /// Ends the frame whose encoders were just submitted: resolves its queries in a
    /// separate, later submission (see the module docs) and hands the frame to the
    /// profiler's readback.
    pub fn end_frame(&mut self, ctx: &GpuContext) {
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("gpu_profiler.resolve"),
            });
        self.inner.resolve_queries(&mut encoder);
        ctx.queue.submit([encoder.finish()]);
        if let Err(e) = self.inner.end_frame() {
            log::warn!("gpu profiler: {e}");
        }
    }

    /// Non-blocking: polls the device once and returns the rows of the newest frame
    /// finished since the last call, if any.
    pub fn try_collect(&mut self, ctx: &GpuContext) -> Option<Vec<PassTiming>> {
        if !self.enabled {
            return None;
        }
        if let Err(e) = ctx.device.poll(wgpu::PollType::Poll) {
            log::warn!("gpu profiler: device poll failed: {e}");
        }
        self.take_finished(ctx)
    }

    /// Blocking: waits for the GPU and returns the rows of the newest finished frame
    /// (empty when timestamps are not granted or nothing was timed).
    pub fn collect(&mut self, ctx: &GpuContext) -> Vec<PassTiming> {
        if !self.enabled {
            return Vec::new();
        }
        if let Err(e) = ctx.wait_idle() {
            log::warn!("gpu profiler: {e}");
        }
        self.take_finished(ctx).unwrap_or_default()
    }

    /// Every finished frame (kept for the trace while one is recorded); the newest's rows.
    fn take_finished(&mut self, ctx: &GpuContext) -> Option<Vec<PassTiming>> {
        let period = ctx.queue.get_timestamp_period();
        let mut newest = None;
        while let Some(results) = self.inner.process_finished_frame(period) {
            newest = Some(timings_from_results(&results));
            if let Some(trace) = &mut self.trace {
                trace.extend(results);
            }
        }
        newest
    }

    /// Keep every frame collected from now on for a Chrome trace (restarts a trace
    /// already being recorded).
    pub fn start_trace(&mut self) {
        self.trace = Some(Vec::new());
    }

    /// Whether a trace is being recorded.
    pub fn is_tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// Write the frames kept since [`Self::start_trace`] to `path` as a Chrome trace
    /// (through a temporary file and a rename) and stop recording; returns how many
    /// scopes it holds.
    pub fn write_trace(&mut self, path: &Path) -> Result<usize, TraceError> {
        let trace = self.trace.take().ok_or(TraceError::NotStarted)?;
        let io = |source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        };
        crate::io::write_atomic_with(path, |tmp| {
            wgpu_profiler::chrometrace::write_chrometrace(tmp, &trace)
        })
        .map_err(io)?;
        Ok(count_scopes(&trace))
    }
}

/// Scopes in `results`, nested ones included.
fn count_scopes(results: &[wgpu_profiler::GpuTimerQueryResult]) -> usize {
    results
        .iter()
        .map(|r| 1 + count_scopes(&r.nested_queries))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(
        label: &str,
        time: Option<std::ops::Range<f64>>,
    ) -> wgpu_profiler::GpuTimerQueryResult {
        wgpu_profiler::GpuTimerQueryResult {
            label: label.into(),
            pid: 0,
            tid: std::thread::current().id(),
            time,
            nested_queries: Vec::new(),
        }
    }

    #[test]
    fn results_become_rows_in_milliseconds_and_never_go_negative() {
        let mut outer = result("a", Some(1.0..1.002));
        outer
            .nested_queries
            .push(result("a.inner", Some(1.0005..1.001)));
        let results = [outer, result("untimed", None), result("b", Some(2.0..1.5))];
        let rows = timings_from_results(&results);
        let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["a", "a.inner", "b"]);
        assert!((rows[0].ms - 2.0).abs() < 1e-9, "{}", rows[0].ms);
        assert!((rows[1].ms - 0.5).abs() < 1e-9, "{}", rows[1].ms);
        assert_eq!(rows[2].ms, 0.0);
        assert_eq!(count_scopes(&results), 4);
    }
}
