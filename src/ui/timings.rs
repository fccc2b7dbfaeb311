//! Frame and pass timing history for the overlay: the last [`TABLE_FRAMES`] frames of GPU
//! pass timings (from timestamp queries, a frame or two late) and the last
//! [`GRAPH_FRAMES`] CPU frame times and GPU totals. The table rows are a pure function of
//! the history ([`timing_rows`]), so ordering and medians are unit-tested without a GPU.

use crate::gpu::PassTiming;
use crate::gpu::profiler::{distinct_labels, label_ms};

/// Frames over which the per-pass medians are taken.
pub const TABLE_FRAMES: usize = 60;
/// Frames shown in the rolling frame-time graph.
pub const GRAPH_FRAMES: usize = 240;

/// One row of the GPU timing table.
#[derive(Clone, Debug, PartialEq)]
pub struct TimingRow {
    /// The pass label (one label per pass: wgpu objects, timestamp scope, this row).
    pub label: String,
    /// Median over the frames of the history that timed this pass, in milliseconds.
    pub median_ms: f64,
    /// The newest value, in milliseconds.
    pub last_ms: f64,
    /// How many frames of the history timed this pass.
    pub samples: usize,
}

/// The median of `values` (mean of the middle two for an even count); 0 when empty.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// The table rows of `history` (oldest frame first): one row per label, in the order the
/// passes ran in the newest frame, then labels only older frames have (newest first); a
/// label timed twice in one frame counts once with the sum of both.
pub fn timing_rows(history: &[Vec<PassTiming>]) -> Vec<TimingRow> {
    distinct_labels(history.iter().rev().map(Vec::as_slice))
        .into_iter()
        .map(|label| {
            let per_frame: Vec<f64> = history
                .iter()
                .filter(|f| f.iter().any(|t| t.label == label))
                .map(|f| label_ms(f, label))
                .collect();
            TimingRow {
                label: label.to_owned(),
                median_ms: median(&per_frame),
                last_ms: per_frame.last().copied().unwrap_or(0.0),
                samples: per_frame.len(),
            }
        })
        .collect()
}

/// Median over `history` of each frame's summed pass times (the GPU frame time).
pub fn median_total(history: &[Vec<PassTiming>]) -> f64 {
    let totals: Vec<f64> = history
        .iter()
        .filter(|f| !f.is_empty())
        .map(|f| f.iter().map(|t| t.ms).sum())
        .collect();
    median(&totals)
}

/// Rolling history of CPU frame times and GPU pass timings.
#[derive(Clone, Debug, Default)]
pub struct PerfHistory {
    gpu: Vec<Vec<PassTiming>>,
    gpu_totals: Vec<f64>,
    frame_ms: Vec<f64>,
    cpu_ms: Vec<f64>,
}

impl PerfHistory {
    /// Records one frame: `frame_ms` from the previous frame's start to this one's,
    /// `cpu_ms` spent building and submitting it.
    pub fn push_frame(&mut self, frame_ms: f64, cpu_ms: f64) {
        push_capped(&mut self.frame_ms, frame_ms, GRAPH_FRAMES);
        push_capped(&mut self.cpu_ms, cpu_ms, GRAPH_FRAMES);
    }

    /// Records the pass timings of one GPU frame (they arrive a frame or two late).
    pub fn push_gpu(&mut self, timings: Vec<PassTiming>) {
        if timings.is_empty() {
            return;
        }
        push_capped(
            &mut self.gpu_totals,
            timings.iter().map(|t| t.ms).sum(),
            GRAPH_FRAMES,
        );
        push_capped(&mut self.gpu, timings, TABLE_FRAMES);
    }

    /// Forgets everything (new scene, changed resolution).
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// The per-pass table over the last [`TABLE_FRAMES`] GPU frames.
    pub fn rows(&self) -> Vec<TimingRow> {
        timing_rows(&self.gpu)
    }

    /// Median GPU frame time over the last [`TABLE_FRAMES`] GPU frames (ms).
    pub fn gpu_median_ms(&self) -> f64 {
        median_total(&self.gpu)
    }

    /// Median frame interval over the graph window (ms).
    pub fn frame_median_ms(&self) -> f64 {
        median(&self.frame_ms)
    }

    /// Median CPU time per frame over the graph window (ms).
    pub fn cpu_median_ms(&self) -> f64 {
        median(&self.cpu_ms)
    }

    /// Frame intervals, oldest first (ms).
    pub fn frame_series(&self) -> &[f64] {
        &self.frame_ms
    }

    /// GPU totals, oldest first (ms).
    pub fn gpu_series(&self) -> &[f64] {
        &self.gpu_totals
    }
}

/// Appends `value`, dropping the oldest entries beyond `cap`.
fn push_capped<T>(v: &mut Vec<T>, value: T, cap: usize) {
    v.push(value);
    if v.len() > cap {
        let excess = v.len() - cap;
        v.drain(..excess);
    }
}

/// The decode's effective TFLOP/s: `pixels` (the render size) × `flops_per_pixel` over
/// the median of the decode's timing rows (`ntc.decode` and the sorted kernels'
/// `ntc.sort.*` stages) — every pixel counted as decoded, so an upper bound on screens
/// with sky or untextured materials. `None` without a decode row, a size or a model.
pub fn decode_tflops(
    rows: &[TimingRow],
    render_size: Option<(u32, u32)>,
    flops_per_pixel: Option<f64>,
) -> Option<f64> {
    let (w, h) = render_size?;
    let stages: Vec<f64> = rows
        .iter()
        .filter(|r| crate::render::passes::ntc_decode::NtcDecodePass::is_stage_label(&r.label))
        .map(|r| r.median_ms)
        .collect();
    let ms: f64 = stages.iter().sum();
    if stages.is_empty() || ms <= 0.0 {
        return None;
    }
    Some(f64::from(w) * f64::from(h) * flops_per_pixel? / (ms * 1e-3) / 1e12)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, median_ms: f64) -> TimingRow {
        TimingRow {
            label: label.into(),
            median_ms,
            last_ms: median_ms,
            samples: 1,
        }
    }

    #[test]
    fn decode_tflops_sums_the_decode_stages() {
        // 1000 × 1000 pixels × 1e6 FLOP in 1 ms (0.5 sort + 0.5 decode) = 1000 TFLOP/s.
        let rows = [
            row("gbuffer", 5.0),
            row("ntc.sort.count", 0.25),
            row("ntc.sort.scatter", 0.25),
            row("ntc.decode", 0.5),
        ];
        let t = decode_tflops(&rows, Some((1000, 1000)), Some(1e6)).expect("tflops");
        assert!((t - 1000.0).abs() < 1e-9, "{t}");
        assert_eq!(
            decode_tflops(&rows[..1], Some((1000, 1000)), Some(1e6)),
            None
        );
        assert_eq!(decode_tflops(&rows, None, Some(1e6)), None);
        assert_eq!(decode_tflops(&rows, Some((1, 1)), None), None);
    }
}
