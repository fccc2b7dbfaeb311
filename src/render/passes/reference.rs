//! Reference material pass: the original textures, mipmapped and trilinear (anisotropic
//! where the adapter allows), written into the [`MaterialTargets`].
//!
//! Deferred texturing without bindless, in three steps:
//! 1. `reference.classify` (compute): each material's screen rectangle, reduced per 8×8
//!    tile in workgroup memory (`shaders/material_classify.wgsl`).
//! 2. `reference.material_depth`: every pixel's material id written as depth.
//! 3. `reference`: one quad per material over its rectangle, at that material's depth,
//!    with an EQUAL test, so the depth test (with early-Z) routes each pixel to exactly
//!    one material's shader and bind group; off-screen materials draw nothing.
//!
//! This needs no binding arrays, which software adapters lack.

use crate::gpu::kernel::{ComputeKernel, Group, KernelDesc, KernelError};
use crate::gpu::layout::{self, Slot};
use crate::gpu::{GpuContext, GpuTimer, create_shader_module};
use crate::render::scene_gpu::SceneGpu;
use crate::render::targets::{GBuffer, MaterialTargets, Target, format};

/// Side of the classify pass's square tile in pixels (`@workgroup_size(8, 8)` in
/// `shaders/material_classify.wgsl`).
pub const CLASSIFY_TILE: u32 = 8;

/// The reference material pass.
#[derive(Debug)]
pub struct ReferencePass {
    classify: ComputeKernel,
    classify_bind_group: Option<wgpu::BindGroup>,
    /// One `MaterialRect` (4 × u32) per material.
    rects: Option<wgpu::Buffer>,
    depth_layout: wgpu::BindGroupLayout,
    depth_pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::RenderPipeline,
    material_depth: Target,
    depth_bind_group: Option<wgpu::BindGroup>,
    bind_group: Option<wgpu::BindGroup>,
}

impl ReferencePass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "reference";

    /// Build the pipelines for a `size` screen.
    pub fn new(
        ctx: &GpuContext,
        material_layout: &wgpu::BindGroupLayout,
        size: (u32, u32),
    ) -> Result<Self, KernelError> {
        let device = &ctx.device;
        let classify = ComputeKernel::new(
            ctx,
            &KernelDesc {
                label: "reference.classify",
                shader: "material_classify.wgsl",
                defines: &[],
                entry: "classify",
                groups: &[Group::Slots(&[Slot::UintTexture, Slot::StorageRw])],
            },
        )?;
        let depth_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("reference.material_depth"),
            entries: &[layout::uint_texture(0)],
        });
        let depth_module = create_shader_module(ctx, "material_depth.wgsl", &[])?;
        let depth_pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("reference.material_depth"),
            bind_group_layouts: &[Some(&depth_layout)],
            immediate_size: 0,
        });
        let depth_pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("reference.material_depth"),
            layout: Some(&depth_pl),
            vertex: wgpu::VertexState {
                module: &depth_module,
                entry_point: Some("vs_main"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: Default::default(),
            depth_stencil: Some(wgpu::DepthStencilState {
                format: format::MATERIAL_DEPTH,
                depth_write_enabled: Some(true),
                depth_compare: Some(wgpu::CompareFunction::Always),
                stencil: Default::default(),
                bias: Default::default(),
            }),
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &depth_module,
                entry_point: Some("fs_main"),
                compilation_options: Default::default(),
                targets: &[],
            }),
            multiview_mask: None,
            cache: None,
        });

        let frag = wgpu::ShaderStages::FRAGMENT | wgpu::ShaderStages::VERTEX;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(Self::LABEL),
            entries: &[
                layout::uniform(0, frag),
                layout::storage(1, frag | wgpu::ShaderStages::VERTEX),
                layout::float_texture(2),
                layout::float_texture(3),
                layout::float_texture(4),
                layout::uint_texture(5),
                layout::storage(6, wgpu::ShaderStages::VERTEX),
            ],
        });
        let module = create_shader_module(ctx, "reference.wgsl", &[])?;
        let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(Self::LABEL),
            bind_group_layouts: &[Some(&layout), Some(material_layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some(Self::LABEL),
            layout: Some(&pl),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_main"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: Default::default(),
            depth_stencil: Some(wgpu::DepthStencilState {
                format: format::MATERIAL_DEPTH,
                depth_write_enabled: Some(false),
                depth_compare: Some(wgpu::CompareFunction::Equal),
                stencil: Default::default(),
                bias: Default::default(),
            }),
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs_main"),
                compilation_options: Default::default(),
                targets: &[
                    layout::target(format::MATERIAL_TARGET),
                    layout::target(format::MATERIAL_TARGET),
                    layout::target(format::MATERIAL_TARGET),
                ],
            }),
            multiview_mask: None,
            cache: None,
        });
        Ok(Self {
            classify,
            classify_bind_group: None,
            rects: None,
            depth_layout,
            depth_pipeline,
            layout,
            pipeline,
            material_depth: Self::depth_target(device, size),
            depth_bind_group: None,
            bind_group: None,
        })
    }

    fn depth_target(device: &wgpu::Device, size: (u32, u32)) -> Target {
        Target::new(
            device,
            "reference.material_depth",
            size,
            format::MATERIAL_DEPTH,
            wgpu::TextureUsages::empty(),
        )
    }

    /// Reallocate the material-depth buffer for a new screen size (call [`Self::bind`] after).
    pub fn resize(&mut self, device: &wgpu::Device, size: (u32, u32)) {
        self.material_depth = Self::depth_target(device, size);
    }

    /// Bind the frame, the scene's materials and the G-buffer.
    pub fn bind(
        &mut self,
        device: &wgpu::Device,
        frame: &wgpu::Buffer,
        scene: &SceneGpu,
        gbuffer: &GBuffer,
    ) {
        let rects = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("reference.rects"),
            size: (scene.material_bind_groups.len().max(1) * 16) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.classify_bind_group = Some(self.classify.bind_group(
            device,
            0,
            &[
                (
                    0,
                    wgpu::BindingResource::TextureView(&gbuffer.material.view),
                ),
                (1, rects.as_entire_binding()),
            ],
        ));
        self.depth_bind_group = Some(device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("reference.material_depth"),
            layout: &self.depth_layout,
            entries: &layout::entries(&[(
                0,
                wgpu::BindingResource::TextureView(&gbuffer.material.view),
            )]),
        }));
        self.bind_group = Some(device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(Self::LABEL),
            layout: &self.layout,
            entries: &layout::entries(&[
                (0, frame.as_entire_binding()),
                (1, scene.material_buffer.as_entire_binding()),
                (
                    2,
                    wgpu::BindingResource::TextureView(&gbuffer.normal_tangent.view),
                ),
                (3, wgpu::BindingResource::TextureView(&gbuffer.uv.view)),
                (4, wgpu::BindingResource::TextureView(&gbuffer.uv_grad.view)),
                (
                    5,
                    wgpu::BindingResource::TextureView(&gbuffer.material.view),
                ),
                (6, rects.as_entire_binding()),
            ]),
        }));
        self.rects = Some(rects);
    }

    /// Record the material-depth step and the per-material draws.
    pub fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        scene: &SceneGpu,
        targets: &MaterialTargets,
        timer: &GpuTimer,
    ) {
        let (Some(classify_bg), Some(rects), Some(depth_bg), Some(bg)) = (
            &self.classify_bind_group,
            &self.rects,
            &self.depth_bind_group,
            &self.bind_group,
        ) else {
            return;
        };
        encoder.clear_buffer(rects, 0, None);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("reference.classify"),
                timestamp_writes: timer.compute_pass_writes("reference.classify"),
            });
            pass.set_pipeline(self.classify.pipeline());
            pass.set_bind_group(0, classify_bg, &[]);
            let (w, h) = (
                self.material_depth.texture.width(),
                self.material_depth.texture.height(),
            );
            pass.dispatch_workgroups(w.div_ceil(CLASSIFY_TILE), h.div_ceil(CLASSIFY_TILE), 1);
        }
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("reference.material_depth"),
                color_attachments: &[],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &self.material_depth.view,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(1.0),
                        store: wgpu::StoreOp::Store,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: timer.render_pass_writes("reference.material_depth"),
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_pipeline(&self.depth_pipeline);
            pass.set_bind_group(0, depth_bg, &[]);
            pass.draw(0..3, 0..1);
        }
        let clear = |view| layout::clear_color(view, wgpu::Color::TRANSPARENT);
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some(Self::LABEL),
            color_attachments: &[
                clear(&targets.base_color.view),
                clear(&targets.normal_rm.view),
                clear(&targets.emissive_ao.view),
            ],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &self.material_depth.view,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Load,
                    store: wgpu::StoreOp::Discard,
                }),
                stencil_ops: None,
            }),
            timestamp_writes: timer.render_pass_writes(Self::LABEL),
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bg, &[]);
        for (m, material_bg) in scene.material_bind_groups.iter().enumerate() {
            let m = m as u32;
            pass.set_bind_group(1, material_bg, &[]);
            pass.draw(0..6, m..m + 1);
        }
    }
}
