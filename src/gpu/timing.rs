//! GPU pass timing with timestamp queries, keyed by pass label.
//!
//! One label names a pass, its wgpu objects, its timing row and its benchmark key (STYLE
//! pattern 6). A frame looks like:
//!
//! ```text
//! timer.begin_frame();
//! let pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
//!     label: Some("ntc_decode"),
//!     timestamp_writes: timer.compute_pass_writes("ntc_decode"),
//! });
//! …
//! timer.resolve(&mut encoder);       // last command of the frame's encoder
//! queue.submit([encoder.finish()]);
//! let rows = timer.collect(&ctx);     // headless: blocks; viewer: timer.try_collect(&ctx)
//! ```
//!
//! **Why the copy happens in a later submit.** On Vulkan, copying resolved timestamps into
//! a mappable buffer in the same submission that wrote them can read zeros (wgpu issue
//! 6406). So [`GpuTimer::resolve`] only resolves the queries into a GPU-side buffer; the
//! copy into a mappable readback buffer is recorded in a *later* submission: either the
//! next frame's `resolve` (non-blocking viewer path, one frame of latency) or the small
//! extra submission [`GpuTimer::collect`] makes (blocking headless path).
//!
//! Readback buffers form a small ring ([`READBACK_RING`] by default) mapped with
//! `map_buffer_on_submit`, so the viewer never stalls; when every slot is still in flight
//! a frame's timings are dropped rather than waited for.
//!
//! Every `…_pass_writes` result handed out must be used by a pass in the same encoder that
//! is then resolved: resolving queries that were never written stalls Vulkan drivers
//! (wgpu issue 7238). When timestamps are not granted, or more than `max_scopes` scopes
//! are asked for in a frame, the methods return `None` and the pass simply goes untimed.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::GpuContext;

/// Default number of readback buffers in flight.
pub const READBACK_RING: usize = 3;

/// Bytes per resolved timestamp.
const TIMESTAMP_BYTES: u64 = wgpu::QUERY_SIZE as u64;

/// GPU time of one pass in one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct PassTiming {
    /// The pass label, as given to `compute_pass_writes` / `render_pass_writes`.
    pub label: String,
    /// Time from the pass's beginning to its end timestamp, in milliseconds.
    pub ms: f64,
}

/// The CPU-side bookkeeping of one frame's scopes: which label owns which pair of query
/// indices. Pure data, testable without a GPU.
#[derive(Clone, Debug)]
pub struct ScopeBook {
    max_scopes: u32,
    labels: Vec<String>,
    dropped: u32,
}

impl ScopeBook {
    /// An empty book with room for `max_scopes` scopes (two queries each).
    pub fn new(max_scopes: u32) -> Self {
        Self {
            max_scopes,
            labels: Vec::new(),
            dropped: 0,
        }
    }

    /// Reserves the next scope for `label` and returns its (beginning, end) query indices,
    /// or `None` (and counts a drop) when all `max_scopes` are in use this frame.
    pub fn allocate(&mut self, label: &str) -> Option<(u32, u32)> {
        let index = self.labels.len() as u32;
        if index >= self.max_scopes {
            self.dropped += 1;
            return None;
        }
        self.labels.push(label.to_owned());
        Some((2 * index, 2 * index + 1))
    }

    /// Labels of the scopes allocated so far, in query order.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// Number of queries written by the scopes allocated so far (two per scope).
    pub fn query_count(&self) -> u32 {
        2 * self.labels.len() as u32
    }

    /// Scopes refused since the last [`ScopeBook::take`] because the book was full.
    pub fn dropped(&self) -> u32 {
        self.dropped
    }

    /// Ends the frame: returns its labels and empties the book (drop count reset too).
    pub fn take(&mut self) -> Vec<String> {
        self.dropped = 0;
        std::mem::take(&mut self.labels)
    }
}

/// Converts resolved ticks (two per label: beginning, end) into rows. `period_ns` is
/// `queue.get_timestamp_period()`. A pair whose end precedes its beginning (a bogus read)
/// gives 0 ms rather than a huge wrapped value.
pub fn timings_from_ticks(labels: &[String], ticks: &[u64], period_ns: f32) -> Vec<PassTiming> {
    labels
        .iter()
        .zip(ticks.chunks_exact(2))
        .map(|(label, pair)| PassTiming {
            label: label.clone(),
            ms: pair[1].saturating_sub(pair[0]) as f64 * f64::from(period_ns) * 1e-6,
        })
        .collect()
}

/// Map state of a readback slot, written by the map callback.
const MAP_PENDING: u8 = 0;
const MAP_OK: u8 = 1;
const MAP_FAILED: u8 = 2;

/// One mappable buffer of the readback ring.
#[derive(Debug)]
struct ReadbackSlot {
    buffer: wgpu::Buffer,
    in_flight: Option<InFlight>,
}

/// A copy recorded into a slot, waiting for its mapping.
#[derive(Debug)]
struct InFlight {
    labels: Vec<String>,
    frame: u64,
    state: Arc<AtomicU8>,
}

/// The GPU objects; absent when timestamps are not granted.
#[derive(Debug)]
struct TimerGpu {
    query_set: wgpu::QuerySet,
    resolve_buffer: wgpu::Buffer,
    slots: Vec<ReadbackSlot>,
}

/// Timestamp scopes for one frame at a time, keyed by pass label. See the module docs.
#[derive(Debug)]
pub struct GpuTimer {
    gpu: Option<TimerGpu>,
    book: Mutex<ScopeBook>,
    period_ns: f32,
    frame: u64,
    /// Labels of the frame whose queries sit resolved in `resolve_buffer`, not yet copied.
    pending: Option<(u64, Vec<String>)>,
}

impl GpuTimer {
    /// Creates a timer for up to `max_scopes` timed passes per frame (clamped to what one
    /// query set holds) with a ring of [`READBACK_RING`] readback buffers. Without the
    /// `timestamps` feature the timer is inert and every method returns `None`/empty.
    pub fn new(ctx: &GpuContext, max_scopes: u32) -> Self {
        Self::with_ring(ctx, max_scopes, READBACK_RING)
    }

    /// Like [`GpuTimer::new`] with `ring` readback buffers (at least 1).
    pub fn with_ring(ctx: &GpuContext, max_scopes: u32, ring: usize) -> Self {
        let max_scopes = max_scopes.clamp(1, wgpu::QUERY_SET_MAX_QUERIES / 2);
        let gpu = ctx.granted.timestamps.then(|| {
            let bytes = u64::from(2 * max_scopes) * TIMESTAMP_BYTES;
            let query_set = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("gpu_timer queries"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * max_scopes,
            });
            let resolve_buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("gpu_timer resolve"),
                size: bytes,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let slots = (0..ring.max(1))
                .map(|i| ReadbackSlot {
                    buffer: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some(&format!("gpu_timer readback {i}")),
                        size: bytes,
                        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
                        mapped_at_creation: false,
                    }),
                    in_flight: None,
                })
                .collect();
            TimerGpu {
                query_set,
                resolve_buffer,
                slots,
            }
        });
        Self {
            gpu,
            book: Mutex::new(ScopeBook::new(max_scopes)),
            period_ns: ctx.queue.get_timestamp_period(),
            frame: 0,
            pending: None,
        }
    }

    /// Whether timestamps are granted (otherwise the timer records nothing).
    pub fn is_enabled(&self) -> bool {
        self.gpu.is_some()
    }

    /// Nanoseconds per timestamp tick on this queue.
    pub fn period_ns(&self) -> f32 {
        self.period_ns
    }

    /// Starts a frame: forgets scopes allocated but not resolved, advances the frame count.
    pub fn begin_frame(&mut self) {
        self.book().take();
        self.frame += 1;
    }

    /// Timestamp writes for a compute pass named `label`, or `None` when timestamps are
    /// not granted or this frame's scopes are exhausted.
    pub fn compute_pass_writes(&self, label: &str) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let (begin, end) = self.allocate(label)?;
        Some(wgpu::ComputePassTimestampWrites {
            query_set: &self.gpu.as_ref()?.query_set,
            beginning_of_pass_write_index: Some(begin),
            end_of_pass_write_index: Some(end),
        })
    }

    /// Timestamp writes for a render pass named `label`, or `None` when timestamps are not
    /// granted or this frame's scopes are exhausted.
    pub fn render_pass_writes(&self, label: &str) -> Option<wgpu::RenderPassTimestampWrites<'_>> {
        let (begin, end) = self.allocate(label)?;
        Some(wgpu::RenderPassTimestampWrites {
            query_set: &self.gpu.as_ref()?.query_set,
            beginning_of_pass_write_index: Some(begin),
            end_of_pass_write_index: Some(end),
        })
    }

    /// Labels of the scopes handed out so far this frame.
    pub fn labels(&self) -> Vec<String> {
        self.book().labels().to_vec()
    }

    /// Ends the frame's recording. Call once, as the last use of the frame's encoder.
    ///
    /// First copies the previous frame's resolved timestamps (written by an earlier,
    /// already submitted encoder) into a free readback buffer, mapped on submit; then
    /// resolves this frame's queries for the next frame (or [`GpuTimer::collect`]) to copy.
    pub fn resolve(&mut self, encoder: &mut wgpu::CommandEncoder) {
        let labels = self.book().take();
        if self.gpu.is_none() {
            return;
        }
        self.copy_pending(encoder);
        if labels.is_empty() {
            return;
        }
        let gpu = self.gpu.as_ref().expect("checked above");
        encoder.resolve_query_set(
            &gpu.query_set,
            0..2 * labels.len() as u32,
            &gpu.resolve_buffer,
            0,
        );
        self.pending = Some((self.frame, labels));
    }

    /// Blocking: after the frame's encoder was submitted, copies its resolved timestamps
    /// in a separate submission, waits for the GPU and returns the rows of the newest
    /// frame available (empty when timestamps are not granted or nothing was timed).
    pub fn collect(&mut self, ctx: &GpuContext) -> Vec<PassTiming> {
        if self.gpu.is_none() {
            return Vec::new();
        }
        if self.pending.is_some() {
            let mut encoder = ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("gpu_timer copy"),
                });
            self.copy_pending(&mut encoder);
            ctx.queue.submit([encoder.finish()]);
        }
        if let Err(e) = ctx.wait_idle() {
            log::warn!("gpu_timer: {e}");
        }
        self.take_ready().unwrap_or_default()
    }

    /// Non-blocking: polls the device once and returns the rows of the newest frame whose
    /// readback has completed since the last call, if any (typically one to two frames
    /// old).
    pub fn try_collect(&mut self, ctx: &GpuContext) -> Option<Vec<PassTiming>> {
        self.gpu.as_ref()?;
        if let Err(e) = ctx.device.poll(wgpu::PollType::Poll) {
            log::warn!("gpu_timer: device poll failed: {e}");
        }
        self.take_ready()
    }

    fn book(&self) -> MutexGuard<'_, ScopeBook> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn allocate(&self, label: &str) -> Option<(u32, u32)> {
        self.gpu.as_ref()?;
        let mut book = self.book();
        let scope = book.allocate(label);
        if scope.is_none() && book.dropped() == 1 {
            log::warn!(
                "gpu_timer: more than {} timed passes this frame; `{label}` and later passes go untimed",
                book.labels().len()
            );
        }
        scope
    }

    /// Records the copy of the pending resolved frame into a free readback slot, mapped
    /// when the encoder's command buffer is submitted.
    fn copy_pending(&mut self, encoder: &mut wgpu::CommandEncoder) {
        let Some((frame, labels)) = self.pending.take() else {
            return;
        };
        let Some(gpu) = self.gpu.as_mut() else {
            return;
        };
        let Some(slot) = gpu.slots.iter_mut().find(|s| s.in_flight.is_none()) else {
            log::debug!(
                "gpu_timer: every readback buffer in flight; frame {frame} timings dropped"
            );
            return;
        };
        let bytes = 2 * labels.len() as u64 * TIMESTAMP_BYTES;
        encoder.copy_buffer_to_buffer(&gpu.resolve_buffer, 0, &slot.buffer, 0, bytes);
        let state = Arc::new(AtomicU8::new(MAP_PENDING));
        let callback_state = Arc::clone(&state);
        encoder.map_buffer_on_submit(&slot.buffer, wgpu::MapMode::Read, ..bytes, move |result| {
            let value = if result.is_ok() { MAP_OK } else { MAP_FAILED };
            callback_state.store(value, Ordering::Release);
        });
        slot.in_flight = Some(InFlight {
            labels,
            frame,
            state,
        });
    }

    /// Reads every mapped slot, frees it, and returns the newest frame's rows.
    fn take_ready(&mut self) -> Option<Vec<PassTiming>> {
        let gpu = self.gpu.as_mut()?;
        let mut newest: Option<(u64, Vec<PassTiming>)> = None;
        for slot in &mut gpu.slots {
            let Some(flight) = &slot.in_flight else {
                continue;
            };
            match flight.state.load(Ordering::Acquire) {
                MAP_PENDING => continue,
                MAP_FAILED => {
                    log::warn!(
                        "gpu_timer: mapping timestamps of frame {} failed",
                        flight.frame
                    );
                    slot.in_flight = None;
                    continue;
                }
                _ => {}
            }
            let bytes = 2 * flight.labels.len() as u64 * TIMESTAMP_BYTES;
            let ticks: Vec<u64> = match slot.buffer.slice(..bytes).get_mapped_range() {
                Ok(view) => view
                    .chunks_exact(TIMESTAMP_BYTES as usize)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8-byte chunk")))
                    .collect(),
                Err(e) => {
                    log::warn!("gpu_timer: reading mapped timestamps failed: {e}");
                    Vec::new()
                }
            };
            slot.buffer.unmap();
            let flight = slot.in_flight.take().expect("checked above");
            if ticks.is_empty() {
                continue;
            }
            if newest.as_ref().is_none_or(|(f, _)| flight.frame > *f) {
                let rows = timings_from_ticks(&flight.labels, &ticks, self.period_ns);
                newest = Some((flight.frame, rows));
            }
        }
        newest.map(|(_, rows)| rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn book_hands_out_query_pairs_in_order_and_caps() {
        let mut book = ScopeBook::new(2);
        assert_eq!(book.allocate("gbuffer"), Some((0, 1)));
        assert_eq!(book.allocate("lighting"), Some((2, 3)));
        assert_eq!(book.allocate("tonemap"), None);
        assert_eq!(book.dropped(), 1);
        assert_eq!(book.query_count(), 4);
        assert_eq!(book.labels(), ["gbuffer", "lighting"]);
        assert_eq!(book.take(), ["gbuffer", "lighting"]);
        assert_eq!(book.query_count(), 0);
        assert_eq!(book.dropped(), 0);
        assert_eq!(book.allocate("gbuffer"), Some((0, 1)));
    }

    #[test]
    fn ticks_convert_with_period_and_never_go_negative() {
        let labels = vec!["a".to_owned(), "b".to_owned()];
        // 2 ms at 1 ns/tick, then a bogus pair with end < beginning.
        let rows = timings_from_ticks(&labels, &[1_000, 2_001_000, 50, 10], 1.0);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].label, "a");
        assert!((rows[0].ms - 2.0).abs() < 1e-12);
        assert_eq!(rows[1].ms, 0.0);
        // 41.666 ns per tick (a 24 MHz clock): 24 000 ticks = 1 ms.
        let rows = timings_from_ticks(&labels[..1], &[0, 24_000], 1e9 / 24e6);
        assert!((rows[0].ms - 1.0).abs() < 1e-6, "{}", rows[0].ms);
    }
}
