//! Tonemap pass: exposure + ACES fit for the final image, or an AOV view
//! (`shaders/tonemap.wgsl`), into the output target (a headless texture or the surface).

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::layout;
use crate::gpu::{GpuContext, ShaderError};
use crate::render::passes::fullscreen::FullscreenPass;
use crate::render::targets::{MaterialTargets, Target};

/// What the tonemap pass reads.
#[derive(Clone, Copy, Debug)]
pub struct TonemapInputs<'a> {
    /// The frame uniform (exposure, AOV).
    pub frame: &'a wgpu::Buffer,
    /// The radiance shown (the accumulated radiance).
    pub hdr: &'a Target,
    /// The material targets the AOVs show.
    pub materials: &'a MaterialTargets,
    /// The G-buffer's material ids (material-id AOV).
    pub material_ids: &'a Target,
}

/// The tonemap pass.
#[derive(Debug)]
pub struct TonemapPass {
    pass: FullscreenPass,
}

impl TonemapPass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "tonemap";

    /// Build the pipeline for an output of `output_format` (an sRGB format).
    pub fn new(ctx: &GpuContext, output_format: wgpu::TextureFormat) -> Result<Self, ShaderError> {
        let entries = [
            layout::uniform(0, wgpu::ShaderStages::FRAGMENT),
            layout::float_texture(1),
            layout::float_texture(2),
            layout::float_texture(3),
            layout::float_texture(4),
            layout::uint_texture(5),
        ];
        Ok(Self {
            pass: FullscreenPass::new(ctx, Self::LABEL, "tonemap.wgsl", &entries, output_format)?,
        })
    }

    /// Record the pass into `output` (a view in the format given to [`Self::new`]).
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        inputs: &TonemapInputs<'_>,
        output: &wgpu::TextureView,
    ) {
        let view = wgpu::BindingResource::TextureView;
        let m = inputs.materials;
        self.pass.record(
            frame,
            &[
                (0, inputs.frame.as_entire_binding()),
                (1, view(&inputs.hdr.view)),
                (2, view(&m.base_color.view)),
                (3, view(&m.normal_rm.view)),
                (4, view(&m.emissive_ao.view)),
                (5, view(&inputs.material_ids.view)),
            ],
            output,
        );
    }
}
