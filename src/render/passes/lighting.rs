//! Lighting pass: reads depth, the material targets and the sun's shadow map, writes
//! linear HDR radiance (`shaders/lighting.wgsl`: GGX sun with 3×3 PCF shadows, hemisphere
//! ambient with occlusion, emissive, sky).

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::layout;
use crate::gpu::{GpuContext, ShaderError};
use crate::render::passes::fullscreen::FullscreenPass;
use crate::render::targets::{MaterialTargets, Target, format};

/// What the lighting pass reads.
#[derive(Clone, Copy, Debug)]
pub struct LightingInputs<'a> {
    /// The frame uniform.
    pub frame: &'a wgpu::Buffer,
    /// The G-buffer's depth.
    pub depth: &'a Target,
    /// A material pass's output.
    pub materials: &'a MaterialTargets,
    /// The shadow pass's map.
    pub shadow_map: &'a Target,
}

/// The lighting pass.
#[derive(Debug)]
pub struct LightingPass {
    pass: FullscreenPass,
    /// The comparison sampler of the shadow lookup (bilinear PCF).
    shadow_sampler: wgpu::Sampler,
}

impl LightingPass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "lighting";

    /// Build the pipeline.
    pub fn new(ctx: &GpuContext) -> Result<Self, ShaderError> {
        let entries = [
            layout::uniform(0, wgpu::ShaderStages::FRAGMENT),
            layout::depth_texture(1),
            layout::float_texture(2),
            layout::float_texture(3),
            layout::float_texture(4),
            layout::depth_texture(5),
            layout::comparison_sampler(6),
        ];
        Ok(Self {
            pass: FullscreenPass::new(ctx, Self::LABEL, "lighting.wgsl", &entries, format::HDR)?,
            shadow_sampler: ctx.device.create_sampler(&wgpu::SamplerDescriptor {
                label: Some("shadow.sampler"),
                mag_filter: wgpu::FilterMode::Linear,
                min_filter: wgpu::FilterMode::Linear,
                compare: Some(wgpu::CompareFunction::LessEqual),
                ..Default::default()
            }),
        })
    }

    /// Record the pass into `hdr`.
    pub fn record(&self, frame: &mut FrameEncoder<'_>, inputs: &LightingInputs<'_>, hdr: &Target) {
        let view = wgpu::BindingResource::TextureView;
        let m = inputs.materials;
        self.pass.record(
            frame,
            &[
                (0, inputs.frame.as_entire_binding()),
                (1, view(&inputs.depth.view)),
                (2, view(&m.base_color.view)),
                (3, view(&m.normal_rm.view)),
                (4, view(&m.emissive_ao.view)),
                (5, view(&inputs.shadow_map.view)),
                (6, wgpu::BindingResource::Sampler(&self.shadow_sampler)),
            ],
            &hdr.view,
        );
    }
}
