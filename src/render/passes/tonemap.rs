//! Tonemap pass: exposure + ACES fit for the final image, or an AOV view
//! (`shaders/tonemap.wgsl`), into the output (a headless texture or the surface).
//!
//! Compute where the output allows it, raster where it does not: sRGB formats cannot be
//! storage textures, so an output that is an `Rgba8Unorm` texture with
//! `STORAGE_BINDING` (the headless output of `neurotex render`, `bench` and the tests,
//! [`crate::render::headless::output_texture`], seen as `Rgba8UnormSrgb` by the heatmap
//! that draws over it) is written by one compute dispatch that encodes sRGB in the shader
//! with [`SrgbEncoder`]'s thresholds, so its bytes equal the CPU encoder's. Any other
//! output, in practice the viewer's surface (BGRA, which wgpu allows as storage only
//! behind an optional feature, and surfaces rarely offer storage usage at all), is drawn
//! by the full-screen triangle into its sRGB view: a compute write into a copy would add a
//! full-screen copy or blit, which costs about what the raster pass does. Both entry points
//! share the shader's `tonemapped` function, so the two differ only in who encodes.

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::kernel::{ComputeKernel, KernelDesc, workgroups};
use crate::gpu::{Defines, GpuContext};
use crate::render::RenderError;
use crate::render::passes::fullscreen::FullscreenPass;
use crate::render::targets::{MaterialTargets, Target};
use crate::texture::srgb::SrgbEncoder;

/// Side of the compute workgroup in pixels (`@workgroup_size(8, 8)` in the shader).
pub const WORKGROUP_SIZE: u32 = 8;

/// The storage format the compute entry writes.
pub const STORAGE_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

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
    raster: FullscreenPass,
    kernel: ComputeKernel,
    /// [`SrgbEncoder`]'s 255 thresholds as 64 `vec4f`.
    thresholds: wgpu::Buffer,
    /// The storage view of the last output texture written by compute (a cache: made
    /// again for another texture).
    storage_view: Option<(wgpu::Texture, wgpu::TextureView)>,
}

impl TonemapPass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "tonemap";

    /// Build the pipelines for an output viewed as `output_format` (an sRGB format).
    pub fn new(ctx: &GpuContext, output_format: wgpu::TextureFormat) -> Result<Self, RenderError> {
        let defines = Defines::new();
        let raster =
            FullscreenPass::new(ctx, Self::LABEL, "tonemap.wgsl", &defines, output_format)?;
        let kernel =
            ComputeKernel::new(ctx, &KernelDesc::new(Self::LABEL, "tonemap.wgsl", "encode"))?;
        let mut thresholds = SrgbEncoder::new().thresholds().to_vec();
        thresholds.resize(256, 0.0);
        let thresholds = wgpu::util::DeviceExt::create_buffer_init(
            &ctx.device,
            &wgpu::util::BufferInitDescriptor {
                label: Some("tonemap.thresholds"),
                contents: bytemuck::cast_slice(&thresholds),
                usage: wgpu::BufferUsages::UNIFORM,
            },
        );
        Ok(Self {
            raster,
            kernel,
            thresholds,
            storage_view: None,
        })
    }

    /// Whether `texture` is written by the compute entry (see the module docs).
    pub fn computes(texture: &wgpu::Texture) -> bool {
        texture.format() == STORAGE_FORMAT
            && texture
                .usage()
                .contains(wgpu::TextureUsages::STORAGE_BINDING)
    }

    /// Record the pass into `output` (a view in the format given to [`Self::new`]).
    pub fn record(
        &mut self,
        frame: &mut FrameEncoder<'_>,
        inputs: &TonemapInputs<'_>,
        output: &wgpu::TextureView,
    ) {
        let view = wgpu::BindingResource::TextureView;
        let m = inputs.materials;
        let shared = [
            (0, inputs.frame.as_entire_binding()),
            (1, view(&inputs.hdr.view)),
            (2, view(&m.base_color.view)),
            (3, view(&m.normal_rm.view)),
            (4, view(&m.emissive_ao.view)),
            (5, view(&inputs.material_ids.view)),
        ];
        let texture = output.texture();
        if !Self::computes(texture) {
            self.raster.record(frame, &shared, output);
            return;
        }
        let storage = self.storage_view(texture);
        let mut resources = shared.to_vec();
        resources.push((6, view(&storage)));
        resources.push((7, self.thresholds.as_entire_binding()));
        let resources = &resources;
        let groups = workgroups((texture.width(), texture.height()), WORKGROUP_SIZE);
        self.kernel.run(frame, resources, groups);
    }

    /// The [`STORAGE_FORMAT`] view of `texture`, made again only for another texture.
    fn storage_view(&mut self, texture: &wgpu::Texture) -> wgpu::TextureView {
        match &self.storage_view {
            Some((t, v)) if t == texture => v.clone(),
            _ => {
                let v = texture.create_view(&wgpu::TextureViewDescriptor {
                    label: Some("tonemap.storage"),
                    format: Some(STORAGE_FORMAT),
                    usage: Some(wgpu::TextureUsages::STORAGE_BINDING),
                    ..Default::default()
                });
                self.storage_view = Some((texture.clone(), v.clone()));
                v
            }
        }
    }
}
