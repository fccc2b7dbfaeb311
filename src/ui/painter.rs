//! Draws egui's output over a frame with `egui-wgpu`: applies the texture changes egui
//! asks for (every frame, even when the frame itself is skipped, so egui's font atlas
//! never goes stale) and records one render pass that loads the target and blends the
//! tessellated overlay on top.

use crate::gpu::GpuContext;

/// The egui renderer for one output format.
pub struct OverlayPainter {
    renderer: egui_wgpu::Renderer,
    pending_free: Vec<egui::TextureId>,
}

impl std::fmt::Debug for OverlayPainter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OverlayPainter")
            .field("pending_free", &self.pending_free)
            .finish_non_exhaustive()
    }
}

impl OverlayPainter {
    /// A painter for targets (views) of `format`.
    pub fn new(ctx: &GpuContext, format: wgpu::TextureFormat) -> Self {
        Self {
            renderer: egui_wgpu::Renderer::new(
                &ctx.device,
                format,
                egui_wgpu::RendererOptions::default(),
            ),
            pending_free: Vec::new(),
        }
    }

    /// Applies (and drains) `delta`: uploads new or changed textures now; textures to
    /// free are freed by [`OverlayPainter::end_frame`], after the frame's paint.
    pub fn begin_frame(&mut self, ctx: &GpuContext, delta: &mut egui::TexturesDelta) {
        for (id, images) in std::mem::take(&mut delta.set) {
            for image in &images {
                self.renderer
                    .update_texture(&ctx.device, &ctx.queue, id, image);
            }
        }
        self.pending_free.extend(std::mem::take(&mut delta.free));
    }

    /// Records `jobs` (egui's tessellated output) into `target` (loaded, not cleared);
    /// returns command buffers that must be submitted before the encoder's.
    pub fn paint(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        screen: &egui_wgpu::ScreenDescriptor,
        jobs: &[egui::ClippedPrimitive],
    ) -> Vec<wgpu::CommandBuffer> {
        let extra = self
            .renderer
            .update_buffers(&ctx.device, &ctx.queue, encoder, jobs, screen);
        let mut pass = encoder
            .begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("overlay"),
                color_attachments: &[crate::gpu::layout::load_color(target)],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            })
            .forget_lifetime();
        self.renderer.render(&mut pass, jobs, screen);
        drop(pass);
        extra
    }

    /// Frees the textures egui released this frame.
    pub fn end_frame(&mut self) {
        for id in self.pending_free.drain(..) {
            self.renderer.free_texture(&id);
        }
    }
}
