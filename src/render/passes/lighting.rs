//! Lighting pass: reads depth and the material targets, writes linear HDR radiance
//! (`shaders/lighting.wgsl`: GGX sun shadowed by the [`ShadowPass`] map, hemisphere
//! ambient with occlusion, emissive, sky).

use crate::gpu::layout;
use crate::gpu::{GpuContext, GpuTimer, ShaderError};
use crate::render::passes::fullscreen::FullscreenPass;
use crate::render::passes::shadow::ShadowPass;
use crate::render::targets::{GBuffer, MaterialTargets, Target, format};

/// The lighting pass.
#[derive(Debug)]
pub struct LightingPass {
    pass: FullscreenPass,
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
        })
    }

    /// Bind the frame, depth and material targets.
    pub fn bind(
        &mut self,
        device: &wgpu::Device,
        frame: &wgpu::Buffer,
        gbuffer: &GBuffer,
        materials: &MaterialTargets,
        shadow: &ShadowPass,
    ) {
        self.pass.bind(
            device,
            &[
                (0, frame.as_entire_binding()),
                (1, wgpu::BindingResource::TextureView(&gbuffer.depth.view)),
                (
                    2,
                    wgpu::BindingResource::TextureView(&materials.base_color.view),
                ),
                (
                    3,
                    wgpu::BindingResource::TextureView(&materials.normal_rm.view),
                ),
                (
                    4,
                    wgpu::BindingResource::TextureView(&materials.emissive_ao.view),
                ),
                (5, wgpu::BindingResource::TextureView(&shadow.map.view)),
                (6, wgpu::BindingResource::Sampler(&shadow.sampler)),
            ],
        );
    }

    /// Record the pass into `hdr`.
    pub fn record(&self, encoder: &mut wgpu::CommandEncoder, hdr: &Target, timer: &GpuTimer) {
        self.pass.record(encoder, &hdr.view, timer);
    }
}
