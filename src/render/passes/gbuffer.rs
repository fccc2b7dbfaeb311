//! G-buffer pass: rasterises every draw once into [`GBuffer`]. Opaque draws run a
//! fragment shader that samples nothing; masked and blended draws run the `ALPHA_TEST`
//! variant, which binds the material's base-colour texture for alpha only.

use crate::gpu::{GpuContext, GpuTimer, ShaderError, create_shader_module};
use crate::render::passes::layout;
use crate::render::scene_gpu::SceneGpu;
use crate::render::targets::{GBuffer, format};
use crate::scene::Vertex;

/// The G-buffer pass.
#[derive(Debug)]
pub struct GBufferPass {
    layout: wgpu::BindGroupLayout,
    /// Indexed by `alpha_test as usize * 2 + double_sided as usize`.
    pipelines: [wgpu::RenderPipeline; 4],
    bind_group: Option<wgpu::BindGroup>,
}

impl GBufferPass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "gbuffer";

    /// Build the pipelines; `material_layout` is the scene's per-material layout.
    pub fn new(
        ctx: &GpuContext,
        material_layout: &wgpu::BindGroupLayout,
    ) -> Result<Self, ShaderError> {
        let device = &ctx.device;
        let vis = wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::FRAGMENT;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(Self::LABEL),
            entries: &[
                layout::uniform(0, vis),
                layout::storage(1, vis),
                layout::storage(2, vis),
            ],
        });
        let opaque_module = create_shader_module(ctx, "gbuffer.wgsl", &[])?;
        let alpha_module = create_shader_module(ctx, "gbuffer.wgsl", &[("ALPHA_TEST", "1")])?;
        let opaque_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(Self::LABEL),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let alpha_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(Self::LABEL),
            bind_group_layouts: &[Some(&layout), Some(material_layout)],
            immediate_size: 0,
        });
        let attributes = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Float32x4, 3 => Float32x2];
        let pipeline = |alpha_test: bool, double_sided: bool| {
            let (module, pl) = if alpha_test {
                (&alpha_module, &alpha_layout)
            } else {
                (&opaque_module, &opaque_layout)
            };
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(Self::LABEL),
                layout: Some(pl),
                vertex: wgpu::VertexState {
                    module,
                    entry_point: Some("vs_main"),
                    compilation_options: Default::default(),
                    buffers: &[Some(wgpu::VertexBufferLayout {
                        array_stride: std::mem::size_of::<Vertex>() as u64,
                        step_mode: wgpu::VertexStepMode::Vertex,
                        attributes: &attributes,
                    })],
                },
                primitive: wgpu::PrimitiveState {
                    topology: wgpu::PrimitiveTopology::TriangleList,
                    front_face: wgpu::FrontFace::Ccw,
                    cull_mode: if double_sided {
                        None
                    } else {
                        Some(wgpu::Face::Back)
                    },
                    ..Default::default()
                },
                depth_stencil: Some(wgpu::DepthStencilState {
                    format: format::DEPTH,
                    depth_write_enabled: Some(true),
                    depth_compare: Some(wgpu::CompareFunction::Greater),
                    stencil: Default::default(),
                    bias: Default::default(),
                }),
                multisample: Default::default(),
                fragment: Some(wgpu::FragmentState {
                    module,
                    entry_point: Some("fs_main"),
                    compilation_options: Default::default(),
                    targets: &[
                        layout::target(format::NORMAL_TANGENT),
                        layout::target(format::UV),
                        layout::target(format::UV_GRAD),
                        layout::target(format::MATERIAL),
                        layout::target(format::MOTION),
                    ],
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let pipelines = [
            pipeline(false, false),
            pipeline(false, true),
            pipeline(true, false),
            pipeline(true, true),
        ];
        Ok(Self {
            layout,
            pipelines,
            bind_group: None,
        })
    }

    /// Bind the frame uniform and the scene's instance and material arrays.
    pub fn bind(&mut self, device: &wgpu::Device, frame: &wgpu::Buffer, scene: &SceneGpu) {
        self.bind_group = Some(device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(Self::LABEL),
            layout: &self.layout,
            entries: &layout::entries(&[
                (0, frame.as_entire_binding()),
                (1, scene.instance_buffer.as_entire_binding()),
                (2, scene.material_buffer.as_entire_binding()),
            ]),
        }));
    }

    /// Record the pass: clear the G-buffer and draw the scene.
    pub fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        gbuffer: &GBuffer,
        scene: &SceneGpu,
        timer: &GpuTimer,
    ) {
        let Some(bind_group) = &self.bind_group else {
            return;
        };
        let clear = layout::clear_color;
        let none = wgpu::Color::TRANSPARENT;
        let no_material = wgpu::Color {
            r: u32::MAX as f64,
            g: 0.0,
            b: 0.0,
            a: 0.0,
        };
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some(Self::LABEL),
            color_attachments: &[
                clear(&gbuffer.normal_tangent.view, none),
                clear(&gbuffer.uv.view, none),
                clear(&gbuffer.uv_grad.view, none),
                clear(&gbuffer.material.view, no_material),
                clear(&gbuffer.motion.view, none),
            ],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &gbuffer.depth.view,
                depth_ops: Some(wgpu::Operations {
                    // Reversed-Z: far is 0.
                    load: wgpu::LoadOp::Clear(0.0),
                    store: wgpu::StoreOp::Store,
                }),
                stencil_ops: None,
            }),
            timestamp_writes: timer.render_pass_writes(Self::LABEL),
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_bind_group(0, bind_group, &[]);
        pass.set_vertex_buffer(0, scene.vertex_buffer.slice(..));
        pass.set_index_buffer(scene.index_buffer.slice(..), wgpu::IndexFormat::Uint32);
        let mut current = usize::MAX;
        for d in &scene.draws {
            let variant = d.alpha_test as usize * 2 + d.double_sided as usize;
            if variant != current {
                pass.set_pipeline(&self.pipelines[variant]);
                current = variant;
            }
            if d.alpha_test {
                pass.set_bind_group(1, &scene.material_bind_groups[d.material as usize], &[]);
            }
            pass.draw_indexed(
                d.first_index..d.first_index + d.index_count,
                d.base_vertex,
                d.instance..d.instance + 1,
            );
        }
    }
}
