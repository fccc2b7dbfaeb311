//! G-buffer pass: rasterises every draw once into [`GBuffer`]. Opaque draws run a
//! fragment shader that samples nothing; masked and blended draws run the `ALPHA_TEST`
//! variant, which binds the material's base-colour texture for alpha only.
//!
//! In [`GBufferMode::Raster`] it writes every target. In [`GBufferMode::Visibility`] it
//! runs the `VISIBILITY` variant, which writes only depth and the (instance slot,
//! triangle) ids, 12 bytes per pixel instead of 36; the resolve
//! ([`super::gbuffer_resolve`]) then rebuilds the other targets in compute.

use crate::gpu::Defines;
use crate::gpu::encoder::FrameEncoder;
use crate::gpu::layout;
use crate::gpu::{GpuContext, ShaderError};
use crate::render::passes::scene_draw::{SceneDraw, SceneDrawDesc, SceneInputs};
use crate::render::targets::{GBuffer, GBufferMode, format};

/// Errors while recording the G-buffer pass.
#[derive(Debug, thiserror::Error)]
#[error("the {pass} G-buffer pass was handed a {targets} G-buffer")]
pub struct GBufferModeMismatch {
    /// The pass's mode.
    pub pass: GBufferMode,
    /// The targets' mode.
    pub targets: GBufferMode,
}

/// The G-buffer pass.
#[derive(Debug)]
pub struct GBufferPass {
    mode: GBufferMode,
    draw: SceneDraw,
}

impl GBufferPass {
    /// Label of the pass in [`GBufferMode::Raster`], its timing row and its wgpu objects.
    pub const LABEL: &'static str = "gbuffer";
    /// Label of the pass in [`GBufferMode::Visibility`].
    pub const VISIBILITY_LABEL: &'static str = "gbuffer_visibility";

    /// Build the pipelines of `mode`; `material_layout` is the scene's per-material layout.
    pub fn new(
        ctx: &GpuContext,
        material_layout: &wgpu::BindGroupLayout,
        mode: GBufferMode,
    ) -> Result<Self, ShaderError> {
        let raster_targets = [
            layout::target(format::NORMAL_TANGENT),
            layout::target(format::UV),
            layout::target(format::UV_GRAD),
            layout::target(format::MATERIAL),
            layout::target(format::MOTION),
        ];
        let visibility_targets = [layout::target(format::VISIBILITY_IDS)];
        let (targets, defines): (&[_], _) = match mode {
            GBufferMode::Raster => (&raster_targets[..], Defines::new()),
            GBufferMode::Visibility => (&visibility_targets[..], Defines::new().flag("VISIBILITY")),
        };
        let desc = SceneDrawDesc {
            label: Self::label(mode),
            shader: "gbuffer.wgsl",
            defines: &defines,
            targets,
            // Reversed-Z.
            depth: layout::depth_test(format::DEPTH, true, wgpu::CompareFunction::Greater),
            single_sided_cull: Some(wgpu::Face::Back),
            opaque_fragment: true,
        };
        Ok(Self {
            mode,
            draw: SceneDraw::new(ctx, &desc, material_layout)?,
        })
    }

    /// The label (and timing row) of the pass in `mode`.
    pub fn label(mode: GBufferMode) -> &'static str {
        match mode {
            GBufferMode::Raster => Self::LABEL,
            GBufferMode::Visibility => Self::VISIBILITY_LABEL,
        }
    }

    /// The mode the pass was built for.
    pub fn mode(&self) -> GBufferMode {
        self.mode
    }

    /// Record the pass into `gbuffer` (allocated for the pass's mode, else an error and
    /// nothing recorded). Raster: clear the material word, motion and depth and draw the
    /// scene. The targets read only where a material is (normal and tangent, UV, UV
    /// derivatives) are drawn over without a clear: on a GPU whose raster work runs on a
    /// small part of the chip, clears cost as much as the draw's own writes (three
    /// Rgba16Float targets took 3.5 ms at 4K on an H200). Visibility: clear depth only
    /// and draw the ids, which the resolve reads only where depth was written.
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        inputs: &SceneInputs<'_>,
        gbuffer: &GBuffer,
    ) -> Result<(), GBufferModeMismatch> {
        let mismatch = GBufferModeMismatch {
            pass: self.mode,
            targets: gbuffer.mode(),
        };
        let colors = match (self.mode, &gbuffer.ids) {
            (GBufferMode::Raster, None) => {
                let clear = layout::clear_color;
                let none = wgpu::Color::TRANSPARENT;
                let no_material = wgpu::Color {
                    r: u32::MAX as f64,
                    g: 0.0,
                    b: 0.0,
                    a: 0.0,
                };
                vec![
                    layout::load_color(&gbuffer.normal_tangent.view),
                    layout::load_color(&gbuffer.uv.view),
                    layout::load_color(&gbuffer.uv_grad.view),
                    clear(&gbuffer.material.view, no_material),
                    clear(&gbuffer.motion.view, none),
                ]
            }
            (GBufferMode::Visibility, Some(ids)) => vec![layout::load_color(&ids.view)],
            _ => return Err(mismatch),
        };
        let bind_group = self.draw.bind_group(frame.device(), inputs);
        // Reversed-Z: far is 0.
        let depth = layout::depth_attachment(
            &gbuffer.depth.view,
            wgpu::LoadOp::Clear(0.0),
            wgpu::StoreOp::Store,
        );
        frame.render_pass(Self::label(self.mode), &colors, depth, |pass| {
            self.draw.draw(pass, &bind_group, inputs)
        });
        Ok(())
    }
}
