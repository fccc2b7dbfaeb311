//! Headless rendering: one frame into an offscreen sRGB texture, read back to memory.
//! Used by `neurotex render` and by the tests.

use crate::gpu::{GpuContext, GpuError, GpuProfiler, PassTiming, read_texture};

use super::{FramePlan, FrameSettings, Renderer};

/// Format of the headless output.
pub const OUTPUT_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;

/// A rendered frame.
#[derive(Clone, Debug)]
pub struct Frame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Tightly packed sRGB RGBA8 pixels, top row first.
    pub rgba8: Vec<u8>,
    /// GPU time per pass (empty when the adapter has no timestamp queries).
    pub timings: Vec<PassTiming>,
    /// What the last frame did.
    pub plan: FramePlan,
}

/// Render one frame of `settings` with `renderer` and read it back.
pub fn render_frame(
    ctx: &GpuContext,
    renderer: &mut Renderer,
    settings: &FrameSettings,
) -> Result<Frame, GpuError> {
    render_frames(ctx, renderer, settings, 1)
}

/// Render `frames` frames of `settings` (at least one; temporal accumulation converges
/// over them on a static view), reading back only the last, with its pass timings.
pub fn render_frames(
    ctx: &GpuContext,
    renderer: &mut Renderer,
    settings: &FrameSettings,
    frames: u32,
) -> Result<Frame, GpuError> {
    let (width, height) = renderer.size();
    let output = ctx.device.create_texture(&crate::gpu::layout::texture_2d(
        "headless.output",
        (width, height),
        1,
        OUTPUT_FORMAT,
        wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
    ));
    let view = output.create_view(&wgpu::TextureViewDescriptor::default());
    let mut profiler = GpuProfiler::new(ctx);
    let frames = frames.max(1);
    let mut plan = None;
    for i in 0..frames {
        let last = i + 1 == frames;
        if last && i > 0 {
            // Drain the frames in flight, so that the last one's timings are not dropped.
            profiler.collect(ctx);
        }
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("headless.frame"),
            });
        let recorded =
            ctx.error_scope(|| renderer.record(ctx, &mut encoder, &view, settings, &profiler))?;
        plan = Some(recorded);
        ctx.queue.submit([encoder.finish()]);
        profiler.end_frame(ctx);
        if !last && i % 8 == 7 {
            // Keep the queue short on slow adapters.
            ctx.wait_idle()?;
            profiler.try_collect(ctx);
        }
    }
    let timings = profiler.collect(ctx);
    let data = read_texture(ctx, &output, 0, 0)?;
    Ok(Frame {
        width,
        height,
        rgba8: data.bytes,
        timings,
        plan: plan.expect("at least one frame"),
    })
}
