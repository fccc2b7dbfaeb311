//! Tonemap pass: exposure + ACES fit for the final image, or an AOV view
//! (`shaders/tonemap.wgsl`), into the output target (a headless texture or the surface).

use crate::gpu::layout;
use crate::gpu::{GpuContext, GpuTimer, ShaderError};
use crate::render::passes::fullscreen::FullscreenPass;
use crate::render::targets::{GBuffer, MaterialTargets, Target};

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

    /// Bind the frame, the HDR image, the material targets and the material ids.
    pub fn bind(
        &mut self,
        device: &wgpu::Device,
        frame: &wgpu::Buffer,
        hdr: &Target,
        materials: &MaterialTargets,
        gbuffer: &GBuffer,
    ) {
        self.pass.bind(
            device,
            &[
                (0, frame.as_entire_binding()),
                (1, wgpu::BindingResource::TextureView(&hdr.view)),
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
                (
                    5,
                    wgpu::BindingResource::TextureView(&gbuffer.material.view),
                ),
            ],
        );
    }

    /// Record the pass into `output`.
    pub fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        output: &wgpu::TextureView,
        timer: &GpuTimer,
    ) {
        self.pass.record(encoder, output, timer);
    }
}
