//! Lighting pass: reads depth, the material targets and the sun's shadow map, writes
//! linear HDR radiance (`shaders/lighting.wgsl`: GGX sun with 3×3 PCF shadows, hemisphere
//! ambient with occlusion, emissive, sky). One compute dispatch, a thread per pixel in
//! 8×8 workgroups, storing into the HDR target through a storage view.

use crate::gpu::GpuContext;
use crate::gpu::encoder::FrameEncoder;
use crate::gpu::kernel::{ComputeKernel, KernelDesc, KernelError, workgroups};
use crate::render::targets::{MaterialTargets, Target};

/// Side of the compute workgroup in pixels (`@workgroup_size(8, 8)` in the shader).
pub const WORKGROUP_SIZE: u32 = 8;

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
    kernel: ComputeKernel,
    /// The comparison sampler of the shadow lookup (bilinear PCF).
    shadow_sampler: wgpu::Sampler,
}

impl LightingPass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "lighting";

    /// Build the pipeline.
    pub fn new(ctx: &GpuContext) -> Result<Self, KernelError> {
        let kernel =
            ComputeKernel::new(ctx, &KernelDesc::new(Self::LABEL, "lighting.wgsl", "light"))?;
        Ok(Self {
            kernel,
            shadow_sampler: ctx.device.create_sampler(&wgpu::SamplerDescriptor {
                label: Some("shadow.sampler"),
                mag_filter: wgpu::FilterMode::Linear,
                min_filter: wgpu::FilterMode::Linear,
                compare: Some(wgpu::CompareFunction::LessEqual),
                ..Default::default()
            }),
        })
    }

    /// Record the pass into `hdr` (an [`format::HDR`](crate::render::targets::format::HDR) storage target of the depth's size).
    pub fn record(&self, frame: &mut FrameEncoder<'_>, inputs: &LightingInputs<'_>, hdr: &Target) {
        let view = wgpu::BindingResource::TextureView;
        let m = inputs.materials;
        let resources = &[
            (0, inputs.frame.as_entire_binding()),
            (1, view(&inputs.depth.view)),
            (2, view(&m.base_color.view)),
            (3, view(&m.normal_rm.view)),
            (4, view(&m.emissive_ao.view)),
            (5, view(&inputs.shadow_map.view)),
            (6, wgpu::BindingResource::Sampler(&self.shadow_sampler)),
            (7, view(&hdr.view)),
        ];
        let groups = workgroups(hdr.size(), WORKGROUP_SIZE);
        self.kernel.run(frame, resources, groups);
    }
}
