//! The shared machinery of the render passes whose vertex shaders make their own vertices
//! (no vertex buffers): [`ScreenPipeline`] owns such a pipeline, the layout of its group 0
//! (the bindings its two entry points use, as the shader declares them) and the cached
//! bind group of the resources it was last handed. It serves the
//! full-screen passes ([`FullscreenPass`]: tonemap, split) and the heatmap overlay (which
//! blends into its target).

use crate::gpu::Defines;
use crate::gpu::encoder::FrameEncoder;
use crate::gpu::layout;
use crate::gpu::{CachedBindGroup, GpuContext, ShaderError, ShaderLibrary};

/// What a [`ScreenPipeline`] is built from.
#[derive(Clone, Debug)]
pub struct ScreenPipelineDesc<'a> {
    /// Label of the pipeline, its layouts and its bind group.
    pub label: &'static str,
    /// The shader (entry points `vs_main` / `fs_main`).
    pub shader: &'a str,
    /// The shader's defines.
    pub defines: &'a Defines,
    /// The colour targets.
    pub targets: &'a [Option<wgpu::ColorTargetState>],
}

/// A render pipeline without vertex buffers or depth, with its one bind group's layout and
/// bind group.
#[derive(Debug)]
pub struct ScreenPipeline {
    label: &'static str,
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::RenderPipeline,
    bind_group: CachedBindGroup,
}

impl ScreenPipeline {
    /// Build the pipeline of `desc`.
    pub fn new(ctx: &GpuContext, desc: &ScreenPipelineDesc<'_>) -> Result<Self, ShaderError> {
        let device = &ctx.device;
        let label = desc.label;
        let shader = ShaderLibrary::embedded().compile(ctx, desc.shader, desc.defines)?;
        let slots = shader
            .declared_slots(0, &["vs_main", "fs_main"])
            .map_err(|message| ShaderError::Device {
                path: desc.shader.to_owned(),
                message,
            })?;
        let stages = wgpu::ShaderStages::VERTEX_FRAGMENT;
        let layout = layout::slots_layout(device, label, slots, stages);
        let module = shader.module;
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(label),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some(label),
            layout: Some(&pipeline_layout),
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
                targets: desc.targets,
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

    /// Group 0 over `resources` (`(binding, resource)` pairs), rebuilt only when they
    /// change.
    pub fn bind_group(
        &self,
        device: &wgpu::Device,
        resources: &[(u32, wgpu::BindingResource<'_>)],
    ) -> wgpu::BindGroup {
        self.bind_group
            .get(device, self.label, &self.layout, resources)
    }

    /// Set the pipeline and `bind_group` (from [`Self::bind_group`]) as group 0.
    pub fn set(&self, pass: &mut wgpu::RenderPass<'_>, bind_group: &wgpu::BindGroup) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind_group, &[]);
    }
}

/// A full-screen triangle with one bind group, drawn into one cleared colour target.
#[derive(Debug)]
pub struct FullscreenPass {
    label: &'static str,
    pipeline: ScreenPipeline,
}

impl FullscreenPass {
    /// Build the pipeline of `shader` (entry points `vs_main` / `fs_main`) with
    /// `defines`, writing `target`.
    pub fn new(
        ctx: &GpuContext,
        label: &'static str,
        shader: &str,
        defines: &Defines,
        target: wgpu::TextureFormat,
    ) -> Result<Self, ShaderError> {
        let desc = ScreenPipelineDesc {
            label,
            shader,
            defines,
            targets: &[layout::target(target)],
        };
        Ok(Self {
            label,
            pipeline: ScreenPipeline::new(ctx, &desc)?,
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
        let bind_group = self.pipeline.bind_group(frame.device(), resources);
        let colors = [layout::clear_color(view, wgpu::Color::BLACK)];
        frame.render_pass(self.label, &colors, None, |pass| {
            self.pipeline.set(pass, &bind_group);
            pass.draw(0..3, 0..1);
        });
    }
}
