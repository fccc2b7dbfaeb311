//! Reference material pass: the original textures, mipmapped and trilinear (anisotropic
//! where the adapter allows), written into the [`MaterialTargets`].
//!
//! Deferred texturing without bindless, in three steps:
//! 1. `reference.classify` (compute, [`MaterialClassify`]): each material's screen
//!    rectangle, reduced per 8×8 tile in workgroup memory
//!    (`shaders/material_classify.wgsl`; [`classify_reference`] is its CPU reference).
//! 2. `reference.material_depth`: every pixel's material id written as depth.
//! 3. `reference`: one quad per material over its rectangle, at that material's depth,
//!    with an EQUAL test, so the depth test (with early-Z) routes each pixel to exactly
//!    one material's shader and bind group; off-screen materials draw nothing.
//!
//! This needs no binding arrays, which software adapters lack.

use bytemuck::{Pod, Zeroable};

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::kernel::{ComputeKernel, Group, KernelDesc, KernelError};
use crate::gpu::layout::{self, Slot};
use crate::gpu::{CachedBindGroup, GpuContext};
use crate::render::gpu_types::{MATERIAL_ID_MASK, NO_MATERIAL};
use crate::render::passes::fullscreen::{ScreenPipeline, ScreenPipelineDesc};
use crate::render::passes::scene_draw::SceneInputs;
use crate::render::targets::{GBuffer, MaterialTargets, Target, format};

/// Side of the classify pass's square tile in pixels (`@workgroup_size(8, 8)` in
/// `shaders/material_classify.wgsl`).
pub const CLASSIFY_TILE: u32 = 8;

/// WGSL `MaterialRect` (`shaders/material_classify.wgsl`): one material's pixel bounds,
/// stored so that all zeros means "not on screen" and every field only grows.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct MaterialRect {
    /// Screen width − the leftmost pixel's x.
    pub min_x_inv: u32,
    /// Screen height − the topmost pixel's y.
    pub min_y_inv: u32,
    /// The rightmost pixel's x + 1.
    pub max_x: u32,
    /// The bottom pixel's y + 1.
    pub max_y: u32,
}

/// CPU reference of the classify kernel: per material (`materials` of them), the bounds
/// of its pixels in the G-buffer material `words` of a `size` screen (row-major). Pixels
/// without geometry and ids at or past `materials` count for no material, as on the GPU.
/// Words missing from a short `words` count as pixels without geometry.
pub fn classify_reference(words: &[u32], size: (u32, u32), materials: usize) -> Vec<MaterialRect> {
    let mut rects = vec![MaterialRect::default(); materials];
    for y in 0..size.1 {
        for x in 0..size.0 {
            let Some(&word) = words.get(y as usize * size.0 as usize + x as usize) else {
                continue;
            };
            let id = (word & MATERIAL_ID_MASK) as usize;
            if word == NO_MATERIAL || id >= materials {
                continue;
            }
            let r = &mut rects[id];
            r.min_x_inv = r.min_x_inv.max(size.0 - x);
            r.min_y_inv = r.min_y_inv.max(size.1 - y);
            r.max_x = r.max_x.max(x + 1);
            r.max_y = r.max_y.max(y + 1);
        }
    }
    rects
}

/// The classify kernel: each material's screen rectangle into a rect buffer.
#[derive(Debug)]
pub struct MaterialClassify {
    kernel: ComputeKernel,
    bind_group: CachedBindGroup,
}

impl MaterialClassify {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "reference.classify";

    /// Build the pipeline.
    pub fn new(ctx: &GpuContext) -> Result<Self, KernelError> {
        let kernel = ComputeKernel::new(
            ctx,
            &KernelDesc {
                label: Self::LABEL,
                shader: "material_classify.wgsl",
                defines: &[],
                entry: "classify",
                groups: &[Group::Slots(&[Slot::UintTexture, Slot::StorageRw])],
            },
        )?;
        Ok(Self {
            kernel,
            bind_group: CachedBindGroup::new(),
        })
    }

    /// A rect buffer for `materials` materials: one [`MaterialRect`] each (at least one
    /// entry; bindings cannot be empty), storage, clearable and copyable.
    pub fn rects_buffer(device: &wgpu::Device, materials: usize) -> wgpu::Buffer {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("reference.rects"),
            size: (materials.max(1) * std::mem::size_of::<MaterialRect>()) as u64,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        })
    }

    /// Record the clear of `rects` and the classification of `material_ids` (the
    /// G-buffer's material words) into it.
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        material_ids: &Target,
        rects: &wgpu::Buffer,
    ) {
        let bind_group = self.bind_group.get(
            frame.device(),
            Self::LABEL,
            self.kernel.layout(0),
            &[
                (0, wgpu::BindingResource::TextureView(&material_ids.view)),
                (1, rects.as_entire_binding()),
            ],
        );
        frame.encoder().clear_buffer(rects, 0, None);
        let (w, h) = (material_ids.texture.width(), material_ids.texture.height());
        frame.compute_pass(Self::LABEL, |pass| {
            pass.set_pipeline(self.kernel.pipeline());
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(w.div_ceil(CLASSIFY_TILE), h.div_ceil(CLASSIFY_TILE), 1);
        });
    }
}

/// What the reference pass reads.
#[derive(Clone, Copy, Debug)]
pub struct ReferenceInputs<'a> {
    /// The frame uniform, the scene's material constants and per-material textures.
    pub scene: SceneInputs<'a>,
    /// The G-buffer.
    pub gbuffer: &'a GBuffer,
}

/// What the reference pass writes.
#[derive(Clone, Copy, Debug)]
pub struct ReferenceOutputs<'a> {
    /// The material channels.
    pub materials: &'a MaterialTargets,
    /// Scratch: the material ids as depth (overwritten).
    pub material_depth: &'a Target,
}

/// The reference material pass.
#[derive(Debug)]
pub struct ReferencePass {
    classify: MaterialClassify,
    /// One [`MaterialRect`] per scene material: classify → the material draws.
    rects: wgpu::Buffer,
    material_depth: ScreenPipeline,
    draws: ScreenPipeline,
}

impl ReferencePass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "reference";
    /// Label of the material-depth step.
    const DEPTH_LABEL: &'static str = "reference.material_depth";

    /// Build the pipelines for a scene of `materials` materials whose texture bind groups
    /// have `material_layout`.
    pub fn new(
        ctx: &GpuContext,
        material_layout: &wgpu::BindGroupLayout,
        materials: usize,
    ) -> Result<Self, KernelError> {
        use wgpu::CompareFunction::{Always, Equal};
        let material_depth = ScreenPipeline::new(
            ctx,
            &ScreenPipelineDesc {
                label: Self::DEPTH_LABEL,
                shader: "material_depth.wgsl",
                defines: &[],
                entries: &[layout::uint_texture(0)],
                more_groups: &[],
                depth: Some(layout::depth_test(format::MATERIAL_DEPTH, true, Always)),
                targets: &[],
            },
        )?;
        let stages = wgpu::ShaderStages::FRAGMENT | wgpu::ShaderStages::VERTEX;
        let material_target = || layout::target(format::MATERIAL_TARGET);
        let draws = ScreenPipeline::new(
            ctx,
            &ScreenPipelineDesc {
                label: Self::LABEL,
                shader: "reference.wgsl",
                defines: &[],
                entries: &[
                    layout::uniform(0, stages),
                    layout::storage(1, stages),
                    layout::float_texture(2),
                    layout::float_texture(3),
                    layout::float_texture(4),
                    layout::uint_texture(5),
                    layout::storage(6, wgpu::ShaderStages::VERTEX),
                ],
                more_groups: &[material_layout],
                depth: Some(layout::depth_test(format::MATERIAL_DEPTH, false, Equal)),
                targets: &[material_target(), material_target(), material_target()],
            },
        )?;
        Ok(Self {
            classify: MaterialClassify::new(ctx)?,
            rects: MaterialClassify::rects_buffer(&ctx.device, materials),
            material_depth,
            draws,
        })
    }

    /// Record the classification, the material-depth step and the per-material draws.
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        inputs: &ReferenceInputs<'_>,
        outputs: &ReferenceOutputs<'_>,
    ) {
        let g = inputs.gbuffer;
        let view = wgpu::BindingResource::TextureView;
        self.classify.record(frame, &g.material, &self.rects);
        let depth_bind_group = self
            .material_depth
            .bind_group(frame.device(), &[(0, view(&g.material.view))]);
        let bind_group = self.draws.bind_group(
            frame.device(),
            &[
                (0, inputs.scene.frame.as_entire_binding()),
                (1, inputs.scene.scene.material_buffer.as_entire_binding()),
                (2, view(&g.normal_tangent.view)),
                (3, view(&g.uv.view)),
                (4, view(&g.uv_grad.view)),
                (5, view(&g.material.view)),
                (6, self.rects.as_entire_binding()),
            ],
        );
        let depth = layout::depth_attachment(
            &outputs.material_depth.view,
            wgpu::LoadOp::Clear(1.0),
            wgpu::StoreOp::Store,
        );
        frame.render_pass(Self::DEPTH_LABEL, &[], depth, |pass| {
            self.material_depth.set(pass, &depth_bind_group);
            pass.draw(0..3, 0..1);
        });
        let clear = |view| layout::clear_color(view, wgpu::Color::TRANSPARENT);
        let targets = outputs.materials;
        let colors = [
            clear(&targets.base_color.view),
            clear(&targets.normal_rm.view),
            clear(&targets.emissive_ao.view),
        ];
        // The material ids as depth route the draws; they are not needed afterwards.
        let depth = layout::depth_attachment(
            &outputs.material_depth.view,
            wgpu::LoadOp::Load,
            wgpu::StoreOp::Discard,
        );
        frame.render_pass(Self::LABEL, &colors, depth, |pass| {
            self.draws.set(pass, &bind_group);
            for (m, material_bg) in inputs.scene.materials.iter().enumerate() {
                let m = m as u32;
                pass.set_bind_group(1, material_bg, &[]);
                pass.draw(0..6, m..m + 1);
            }
        });
    }
}
