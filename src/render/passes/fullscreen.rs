//! The shared machinery of full-screen passes (lighting, tonemap): one bind group of
//! `textureLoad` inputs, one full-screen triangle, one colour target. The passes that use
//! it own their inputs and labels; this struct owns the pipeline and the bind group of the
//! inputs it was last handed.

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::layout;
use crate::gpu::{CachedBindGroup, GpuContext, ShaderError, create_shader_module};

/// A full-screen-triangle pipeline with one bind group and one colour target.
#[derive(Debug)]
pub struct FullscreenPass {
    label: &'static str,
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::RenderPipeline,
    bind_group: CachedBindGroup,
}

impl FullscreenPass {
    /// Build the pipeline of `shader` (entry points `vs_main` / `fs_main`) with the bind
    /// group layout `entries`, writing `target`.
    pub fn new(
        ctx: &GpuContext,
        label: &'static str,
        shader: &str,
        entries: &[wgpu::BindGroupLayoutEntry],
        target: wgpu::TextureFormat,
    ) -> Result<Self, ShaderError> {
        let device = &ctx.device;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(label),
            entries,
        });
        let module = create_shader_module(ctx, shader, &[])?;
        let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(label),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some(label),
            layout: Some(&pl),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_main"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: Default::default(),
            depth_stencil: None,
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs_main"),
                compilation_options: Default::default(),
                targets: &[layout::target(target)],
            }),
            multiview_mask: None,
            cache: None,
        });
        Ok(Self {
            label,
            layout,
            pipeline,
            bind_group: CachedBindGroup::new(),
        })
    }

    /// Draw the triangle into `view` (cleared first), binding `resources` as
    /// `(binding, resource)` pairs.
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        resources: &[(u32, wgpu::BindingResource<'_>)],
        view: &wgpu::TextureView,
    ) {
        let bind_group = self
            .bind_group
            .get(frame.device(), self.label, &self.layout, resources);
        let desc = wgpu::RenderPassDescriptor {
            label: Some(self.label),
            color_attachments: &[layout::clear_color(view, wgpu::Color::BLACK)],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        };
        frame.render_pass(self.label, &desc, |pass| {
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.draw(0..3, 0..1);
        });
    }
}
