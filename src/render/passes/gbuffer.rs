//! G-buffer pass: rasterises every draw once into [`GBuffer`]. Opaque draws run a
//! fragment shader that samples nothing; masked and blended draws run the `ALPHA_TEST`
//! variant, which binds the material's base-colour texture for alpha only.

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::layout;
use crate::gpu::{GpuContext, ShaderError};
use crate::render::passes::scene_draw::{SceneDraw, SceneDrawDesc, SceneInputs};
use crate::render::targets::{GBuffer, format};

/// The G-buffer pass.
#[derive(Debug)]
pub struct GBufferPass {
    draw: SceneDraw,
}

impl GBufferPass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "gbuffer";

    /// Build the pipelines; `material_layout` is the scene's per-material layout.
    pub fn new(
        ctx: &GpuContext,
        material_layout: &wgpu::BindGroupLayout,
    ) -> Result<Self, ShaderError> {
        let targets = [
            layout::target(format::NORMAL_TANGENT),
            layout::target(format::UV),
            layout::target(format::UV_GRAD),
            layout::target(format::MATERIAL),
            layout::target(format::MOTION),
        ];
        let desc = SceneDrawDesc {
            label: Self::LABEL,
            shader: "gbuffer.wgsl",
            targets: &targets,
            // Reversed-Z.
            depth: layout::depth_test(format::DEPTH, true, wgpu::CompareFunction::Greater),
            single_sided_cull: Some(wgpu::Face::Back),
            opaque_fragment: true,
        };
        Ok(Self {
            draw: SceneDraw::new(ctx, &desc, material_layout)?,
        })
    }

    /// Record the pass: clear the material word, motion and depth of `gbuffer` and draw
    /// the scene into it. The targets read only where a material is (normal and tangent,
    /// UV, UV derivatives) are drawn over without a clear: on a GPU whose raster work runs
    /// on a small part of the chip, clears cost as much as the draw's own writes (three
    /// Rgba16Float targets took 3.5 ms at 4K on an H200).
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        inputs: &SceneInputs<'_>,
        gbuffer: &GBuffer,
    ) {
        let bind_group = self.draw.bind_group(frame.device(), inputs);
        let clear = layout::clear_color;
        let none = wgpu::Color::TRANSPARENT;
        let no_material = wgpu::Color {
            r: u32::MAX as f64,
            g: 0.0,
            b: 0.0,
            a: 0.0,
        };
        let colors = [
            layout::load_color(&gbuffer.normal_tangent.view),
            layout::load_color(&gbuffer.uv.view),
            layout::load_color(&gbuffer.uv_grad.view),
            clear(&gbuffer.material.view, no_material),
            clear(&gbuffer.motion.view, none),
        ];
        // Reversed-Z: far is 0.
        let depth = layout::depth_attachment(
            &gbuffer.depth.view,
            wgpu::LoadOp::Clear(0.0),
            wgpu::StoreOp::Store,
        );
        frame.render_pass(Self::LABEL, &colors, depth, |pass| {
            self.draw.draw(pass, &bind_group, inputs)
        });
    }
}
