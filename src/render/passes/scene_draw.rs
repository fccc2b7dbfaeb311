//! The shared machinery of passes that rasterise the scene's draws (G-buffer, shadow):
//! their inputs ([`SceneInputs`]), the frame + instances + materials bind group, the
//! pipeline variants (opaque or alpha-tested × culled or double-sided × counter-clockwise
//! or, for mirrored instances, clockwise front faces) and the draw loop.
//! The passes own their render pass setup (targets, clears, timing) and what their shader
//! writes.

use crate::gpu::Defines;
use crate::gpu::layout;
use crate::gpu::{CachedBindGroup, GpuContext, ShaderError, create_shader_module};
use crate::render::scene_gpu::{Draw, SceneGpu};
use crate::scene::Vertex;

/// What the passes that draw the scene read.
#[derive(Clone, Copy, Debug)]
pub struct SceneInputs<'a> {
    /// The frame uniform.
    pub frame: &'a wgpu::Buffer,
    /// Geometry, instances, material constants and the draws.
    pub scene: &'a SceneGpu,
    /// Per material, the bind group of its textures (its set's originals, or the textures
    /// an NTC package was baked into); alpha-tested draws read their alpha from it.
    pub materials: &'a [wgpu::BindGroup],
}

/// What differs between the passes that draw the scene.
pub struct SceneDrawDesc<'a> {
    /// Label of the pass and its wgpu objects.
    pub label: &'static str,
    /// Shader path; the `ALPHA_TEST` define selects the alpha-tested variant.
    pub shader: &'a str,
    /// Defines of both variants.
    pub defines: &'a Defines,
    /// Colour targets of the fragment stage (empty for depth-only passes).
    pub targets: &'a [Option<wgpu::ColorTargetState>],
    /// Depth format, compare function and bias.
    pub depth: wgpu::DepthStencilState,
    /// Culling for single-sided materials (`None` draws both faces everywhere).
    pub single_sided_cull: Option<wgpu::Face>,
    /// Whether opaque draws need a fragment stage at all.
    pub opaque_fragment: bool,
}

/// Pipelines and bind group for drawing the scene.
#[derive(Debug)]
pub struct SceneDraw {
    layout: wgpu::BindGroupLayout,
    /// Indexed by [`variant`].
    pipelines: [wgpu::RenderPipeline; 8],
    bind_group: CachedBindGroup,
}

impl SceneDraw {
    /// Build the four pipeline variants; `material_layout` is the scene's per-material layout.
    pub fn new(
        ctx: &GpuContext,
        desc: &SceneDrawDesc,
        material_layout: &wgpu::BindGroupLayout,
    ) -> Result<Self, ShaderError> {
        let device = &ctx.device;
        let vis = wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::FRAGMENT;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(desc.label),
            entries: &[
                layout::uniform(0, vis),
                layout::storage(1, vis),
                layout::storage(2, vis),
            ],
        });
        let opaque_module = create_shader_module(ctx, desc.shader, desc.defines)?;
        let alpha_defines = desc.defines.clone().flag("ALPHA_TEST");
        let alpha_module = create_shader_module(ctx, desc.shader, &alpha_defines)?;
        let opaque_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(desc.label),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let alpha_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(desc.label),
            bind_group_layouts: &[Some(&layout), Some(material_layout)],
            immediate_size: 0,
        });
        let attributes = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Float32x4, 3 => Float32x2];
        let pipeline = |variant: usize| {
            let (alpha_test, double_sided, mirrored) =
                (variant & 4 != 0, variant & 2 != 0, variant & 1 != 0);
            let (module, pl) = if alpha_test {
                (&alpha_module, &alpha_layout)
            } else {
                (&opaque_module, &opaque_layout)
            };
            let fragment = (alpha_test || desc.opaque_fragment).then(|| wgpu::FragmentState {
                module,
                entry_point: Some("fs_main"),
                compilation_options: Default::default(),
                targets: desc.targets,
            });
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(desc.label),
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
                    front_face: if mirrored {
                        wgpu::FrontFace::Cw
                    } else {
                        wgpu::FrontFace::Ccw
                    },
                    cull_mode: if double_sided {
                        None
                    } else {
                        desc.single_sided_cull
                    },
                    ..Default::default()
                },
                depth_stencil: Some(desc.depth.clone()),
                multisample: Default::default(),
                fragment,
                multiview_mask: None,
                cache: None,
            })
        };
        Ok(Self {
            layout,
            pipelines: std::array::from_fn(pipeline),
            bind_group: CachedBindGroup::new(),
        })
    }

    /// The bind group of the frame uniform and the scene's instance and material arrays
    /// (make it before the render pass begins).
    pub fn bind_group(&self, device: &wgpu::Device, inputs: &SceneInputs<'_>) -> wgpu::BindGroup {
        self.bind_group.get(
            device,
            "scene_draw",
            &self.layout,
            &[
                (0, inputs.frame.as_entire_binding()),
                (1, inputs.scene.instance_buffer.as_entire_binding()),
                (2, inputs.scene.material_buffer.as_entire_binding()),
            ],
        )
    }

    /// Issue every draw of the scene into `pass`, with `bind_group` from
    /// [`Self::bind_group`] for the same inputs.
    pub fn draw(
        &self,
        pass: &mut wgpu::RenderPass<'_>,
        bind_group: &wgpu::BindGroup,
        inputs: &SceneInputs<'_>,
    ) {
        let scene = inputs.scene;
        pass.set_bind_group(0, bind_group, &[]);
        pass.set_vertex_buffer(0, scene.vertex_buffer.slice(..));
        pass.set_index_buffer(scene.index_buffer.slice(..), wgpu::IndexFormat::Uint32);
        let mut current = usize::MAX;
        for d in &scene.draws {
            let variant = variant(d);
            if variant != current {
                pass.set_pipeline(&self.pipelines[variant]);
                current = variant;
            }
            if d.alpha_test {
                pass.set_bind_group(1, &inputs.materials[d.material as usize], &[]);
            }
            pass.draw_indexed(
                d.first_index..d.first_index + d.index_count,
                d.base_vertex,
                d.instance..d.instance + 1,
            );
        }
    }
}

/// The pipeline of draw `d`: alpha-tested (4), double-sided (2), mirrored (1).
fn variant(d: &Draw) -> usize {
    d.alpha_test as usize * 4 + d.double_sided as usize * 2 + d.mirrored as usize
}
