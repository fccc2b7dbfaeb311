//! [`FrameEncoder`]: what a pass records one frame with — the device and queue (bind
//! groups, uniform writes), the command encoder, and the profiler that times each compute
//! or render pass under its label (STYLE pattern 6: one label names the wgpu objects, the
//! timestamp scope, the timing row and the benchmark key). A prefixed encoder
//! ([`FrameEncoder::with_prefix`]) times the same passes under `prefix + label`, for a
//! second instance of a pass in one frame (the split comparison's right side).

use std::borrow::Cow;

use super::{GpuContext, GpuProfiler};

/// The encoder of one frame and what passes need beside it. See the module docs.
pub struct FrameEncoder<'a> {
    ctx: &'a GpuContext,
    encoder: &'a mut wgpu::CommandEncoder,
    profiler: &'a GpuProfiler,
    prefix: &'static str,
}

impl<'a> FrameEncoder<'a> {
    /// Record into `encoder` on `ctx`'s device, timing passes with `profiler`.
    pub fn new(
        ctx: &'a GpuContext,
        encoder: &'a mut wgpu::CommandEncoder,
        profiler: &'a GpuProfiler,
    ) -> Self {
        Self {
            ctx,
            encoder,
            profiler,
            prefix: "",
        }
    }

    /// This encoder, timing and labelling its passes as `prefix` + their label.
    pub fn with_prefix(&mut self, prefix: &'static str) -> FrameEncoder<'_> {
        FrameEncoder {
            ctx: self.ctx,
            encoder: self.encoder,
            profiler: self.profiler,
            prefix,
        }
    }

    /// `label` under this encoder's prefix.
    fn label<'l>(&self, label: &'l str) -> Cow<'l, str> {
        if self.prefix.is_empty() {
            Cow::Borrowed(label)
        } else {
            Cow::Owned(format!("{}{label}", self.prefix))
        }
    }

    /// The device (bind groups, buffers).
    pub fn device(&self) -> &wgpu::Device {
        &self.ctx.device
    }

    /// The queue (uniform writes, which land before the frame's submission runs).
    pub fn queue(&self) -> &wgpu::Queue {
        &self.ctx.queue
    }

    /// The command encoder itself, for buffer clears and copies between passes.
    pub fn encoder(&mut self) -> &mut wgpu::CommandEncoder {
        self.encoder
    }

    /// A compute pass labelled and timed as `label`, recorded by `f`.
    pub fn compute_pass<R>(
        &mut self,
        label: &str,
        f: impl FnOnce(&mut wgpu::ComputePass<'_>) -> R,
    ) -> R {
        self.timed(label, |encoder, label, query| {
            f(
                &mut encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(label),
                    timestamp_writes: query.compute_pass_timestamp_writes(),
                }),
            )
        })
    }

    /// A render pass into `colors` and `depth` (see [`layout::clear_color`],
    /// [`layout::depth_attachment`]), labelled and timed as `label`, recorded by `f`.
    ///
    /// [`layout::clear_color`]: crate::gpu::layout::clear_color
    /// [`layout::depth_attachment`]: crate::gpu::layout::depth_attachment
    pub fn render_pass<R>(
        &mut self,
        label: &str,
        colors: &[Option<wgpu::RenderPassColorAttachment<'_>>],
        depth: Option<wgpu::RenderPassDepthStencilAttachment<'_>>,
        f: impl FnOnce(&mut wgpu::RenderPass<'_>) -> R,
    ) -> R {
        self.timed(label, |encoder, label, query| {
            f(&mut encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some(label),
                color_attachments: colors,
                depth_stencil_attachment: depth,
                timestamp_writes: query.render_pass_timestamp_writes(),
                occlusion_query_set: None,
                multiview_mask: None,
            }))
        })
    }

    /// Whatever `record` records into the encoder (given the prefixed label and the
    /// pass's timestamp query), timed as `label`.
    fn timed<R>(
        &mut self,
        label: &str,
        record: impl FnOnce(&mut wgpu::CommandEncoder, &str, &wgpu_profiler::GpuProfilerQuery) -> R,
    ) -> R {
        let label = self.label(label);
        let label = label.as_ref();
        let scopes = self.profiler.scopes();
        let query = scopes.begin_pass_query(label, self.encoder);
        let result = record(self.encoder, label, &query);
        scopes.end_query(self.encoder, query);
        result
    }
}
