//! Reference material pass: the original textures, mipmapped and trilinear (anisotropic
//! where the adapter allows), written into the [`MaterialTargets`].
//!
//! Deferred texturing without bindless, all in compute:
//! 1. `reference.classify` ([`MaterialClassify`]): each material's screen rectangle,
//!    reduced per 8×8 tile in workgroup memory (`shaders/material_classify.wgsl`;
//!    [`classify_reference`] is its CPU reference), and zero written into the material
//!    targets at every pixel no material shades (as the NTC decode writes them), so no
//!    clear is needed.
//! 2. `reference.dispatch_args`: from each rectangle, the workgroup counts of that
//!    material's indirect dispatch ([`dispatch_args_reference`] is its CPU reference);
//!    a material off screen gets (0, 0, 0).
//! 3. `reference` (`shaders/reference.wgsl`): per material, one indirect dispatch over its
//!    rectangle with its texture bind group, sampling with `textureSampleGrad` from the
//!    G-buffer's UV derivatives; each thread writes the material targets only where the
//!    G-buffer's material word is that material.
//!
//! This needs no binding arrays, which software adapters lack.

use crate::gpu::Defines;
use bytemuck::{Pod, Zeroable};

use crate::gpu::encoder::FrameEncoder;
use crate::gpu::kernel::{ComputeKernel, Group, KernelDesc, KernelError, workgroups};
use crate::gpu::layout::Slot;
use crate::gpu::{CachedBindGroup, GpuContext};
use crate::render::passes::scene_draw::SceneInputs;
use crate::render::targets::{GBuffer, MaterialTargets, Target};
use crate::screen::material_word::{MATERIAL_ID_MASK, NO_MATERIAL};

/// Side of the classify pass's square tile in pixels (`@workgroup_size(8, 8)` in
/// `shaders/material_classify.wgsl`).
pub const CLASSIFY_TILE: u32 = 8;

/// Side of the reference shading kernel's square workgroup in pixels
/// (`@workgroup_size(8, 8)` in `shaders/reference.wgsl`, `SHADE_TILE` in
/// `shaders/material_classify.wgsl`).
pub const SHADE_TILE: u32 = 8;

/// Workgroups of the `dispatch_args` kernel (`@workgroup_size(64)`): one thread per
/// material.
const ARGS_WORKGROUP: u32 = 64;

/// Bytes of one material's indirect dispatch arguments (x, y, z workgroup counts).
const DISPATCH_ARGS_BYTES: u64 = 12;

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

/// CPU reference of the `dispatch_args` kernel: per material rectangle of a `size` screen
/// (as [`classify_reference`] makes them), the workgroup counts (x, y, z) of its shading
/// dispatch in [`SHADE_TILE`]² workgroups; (0, 0, 0) for a material with no pixel.
pub fn dispatch_args_reference(rects: &[MaterialRect], size: (u32, u32)) -> Vec<[u32; 3]> {
    rects
        .iter()
        .map(|r| {
            if r.max_x == 0 {
                return [0; 3];
            }
            let lo = (size.0 - r.min_x_inv, size.1 - r.min_y_inv);
            [
                (r.max_x - lo.0).div_ceil(SHADE_TILE),
                (r.max_y - lo.1).div_ceil(SHADE_TILE),
                1,
            ]
        })
        .collect()
}

/// The classify kernel and its sibling: each material's screen rectangle into a rect
/// buffer, and from it each material's indirect dispatch arguments.
#[derive(Debug)]
pub struct MaterialClassify {
    kernel: ComputeKernel,
    args_kernel: ComputeKernel,
    bind_group: CachedBindGroup,
}

impl MaterialClassify {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "reference.classify";
    /// Label of the dispatch-argument step and its timing row.
    pub const ARGS_LABEL: &'static str = "reference.dispatch_args";

    /// Build the pipelines.
    pub fn new(ctx: &GpuContext) -> Result<Self, KernelError> {
        let kernel = ComputeKernel::new(
            ctx,
            &KernelDesc::new(Self::LABEL, "material_classify.wgsl", "classify"),
        )?;
        Ok(Self {
            args_kernel: kernel.sibling(ctx, Self::ARGS_LABEL, "dispatch_args")?,
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

    /// An indirect-dispatch buffer for `materials` materials: three `u32` workgroup
    /// counts each (at least one entry), storage, indirect and copyable.
    pub fn args_buffer(device: &wgpu::Device, materials: usize) -> wgpu::Buffer {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("reference.dispatch_args"),
            size: materials.max(1) as u64 * DISPATCH_ARGS_BYTES,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::INDIRECT
                | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        })
    }

    /// Record the clear of `rects`, the classification of `material_ids` (the G-buffer's
    /// material words) into it, with zero written into `materials` wherever no material
    /// of `rects` is, and the dispatch arguments of every material into `args` (from
    /// [`Self::args_buffer`], one entry per entry of `rects`).
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        material_ids: &Target,
        materials: &MaterialTargets,
        rects: &wgpu::Buffer,
        args: &wgpu::Buffer,
    ) {
        let view = wgpu::BindingResource::TextureView;
        let bind_group = self.bind_group.get(
            frame.device(),
            Self::LABEL,
            self.kernel.layout(0),
            &[
                (0, view(&material_ids.view)),
                (1, rects.as_entire_binding()),
                (2, args.as_entire_binding()),
                (3, view(&materials.base_color.view)),
                (4, view(&materials.normal_rm.view)),
                (5, view(&materials.emissive_ao.view)),
            ],
        );
        frame.encoder().clear_buffer(rects, 0, None);
        let groups = workgroups(material_ids.size(), CLASSIFY_TILE);
        self.kernel.dispatch(frame, &[&bind_group], groups);
        let materials = (rects.size() / std::mem::size_of::<MaterialRect>() as u64) as u32;
        let groups = (materials.div_ceil(ARGS_WORKGROUP), 1);
        self.args_kernel.dispatch(frame, &[&bind_group], groups);
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

/// WGSL `ShadeMaterial` (`shaders/reference.wgsl`): the material one dispatch shades.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct ShadeMaterial {
    id: u32,
    _pad: [u32; 3],
}

/// The reference material pass.
#[derive(Debug)]
pub struct ReferencePass {
    classify: MaterialClassify,
    /// One [`MaterialRect`] per scene material: classify → dispatch arguments, shading.
    rects: wgpu::Buffer,
    /// One indirect dispatch per scene material: dispatch arguments → shading.
    args: wgpu::Buffer,
    /// Material `m`'s [`ShadeMaterial`] at `m × stride`, bound at a dynamic offset.
    shaded: wgpu::Buffer,
    stride: u64,
    materials: usize,
    kernel: ComputeKernel,
    bind_group: CachedBindGroup,
}

impl ReferencePass {
    /// Label of the pass, its timing row and its wgpu objects.
    pub const LABEL: &'static str = "reference";

    /// Build the pipelines for a scene of `materials` materials whose texture bind groups
    /// have `material_layout` (visible to compute).
    pub fn new(
        ctx: &GpuContext,
        material_layout: &wgpu::BindGroupLayout,
        materials: usize,
    ) -> Result<Self, KernelError> {
        let device = &ctx.device;
        let slots = super::material_pass_slots(Slot::Storage, Slot::DynamicUniform);
        let kernel = ComputeKernel::new(
            ctx,
            &KernelDesc {
                label: Self::LABEL,
                shader: "reference.wgsl",
                defines: &Defines::new(),
                entry: "shade",
                groups: &[Group::Slots(&slots), Group::Layout(material_layout)],
            },
        )?;
        let stride = u64::from(device.limits().min_uniform_buffer_offset_alignment)
            .max(std::mem::size_of::<ShadeMaterial>() as u64);
        let mut bytes = vec![0u8; materials.max(1) * stride as usize];
        for m in 0..materials {
            let at = m * stride as usize;
            let shaded = ShadeMaterial {
                id: m as u32,
                ..Default::default()
            };
            bytes[at..at + std::mem::size_of::<ShadeMaterial>()]
                .copy_from_slice(bytemuck::bytes_of(&shaded));
        }
        let shaded = wgpu::util::DeviceExt::create_buffer_init(
            device,
            &wgpu::util::BufferInitDescriptor {
                label: Some("reference.shaded"),
                contents: &bytes,
                usage: wgpu::BufferUsages::UNIFORM,
            },
        );
        Ok(Self {
            classify: MaterialClassify::new(ctx)?,
            rects: MaterialClassify::rects_buffer(device, materials),
            args: MaterialClassify::args_buffer(device, materials),
            shaded,
            stride,
            materials,
            kernel,
            bind_group: CachedBindGroup::new(),
        })
    }

    /// Record the classification (which zeroes `materials` where no material is), the
    /// dispatch arguments and the per-material dispatches into `materials`.
    pub fn record(
        &self,
        frame: &mut FrameEncoder<'_>,
        inputs: &ReferenceInputs<'_>,
        materials: &MaterialTargets,
    ) {
        let g = inputs.gbuffer;
        let view = wgpu::BindingResource::TextureView;
        self.classify
            .record(frame, &g.material, materials, &self.rects, &self.args);
        let shaded = wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.shaded,
            offset: 0,
            size: wgpu::BufferSize::new(std::mem::size_of::<ShadeMaterial>() as u64),
        });
        let bind_group = self.bind_group.get(
            frame.device(),
            Self::LABEL,
            self.kernel.layout(0),
            &[
                (0, inputs.scene.frame.as_entire_binding()),
                (1, inputs.scene.scene.material_buffer.as_entire_binding()),
                (2, view(&g.normal_tangent.view)),
                (3, view(&g.uv.view)),
                (4, view(&g.uv_grad.view)),
                (5, view(&g.material.view)),
                (6, self.rects.as_entire_binding()),
                (7, shaded),
                (8, view(&materials.base_color.view)),
                (9, view(&materials.normal_rm.view)),
                (10, view(&materials.emissive_ao.view)),
            ],
        );
        frame.compute_pass(Self::LABEL, |pass| {
            pass.set_pipeline(self.kernel.pipeline());
            let scene_materials = inputs.scene.materials.iter().take(self.materials);
            for (m, material_bg) in scene_materials.enumerate() {
                let offset = (m as u64 * self.stride) as u32;
                pass.set_bind_group(0, &bind_group, &[offset]);
                pass.set_bind_group(1, material_bg, &[]);
                pass.dispatch_workgroups_indirect(&self.args, m as u64 * DISPATCH_ARGS_BYTES);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_args_cover_each_rectangle_in_whole_workgroups() {
        let size = (40, 24);
        // Material 0: pixels (3, 2) and (20, 9): x 3..21 (18 wide), y 2..10 (8 high).
        // Material 1: one pixel at the bottom-right corner. Material 2: none.
        let mut words = vec![NO_MATERIAL; 40 * 24];
        words[2 * 40 + 3] = 0;
        words[9 * 40 + 20] = 0x8000_0000;
        words[23 * 40 + 39] = 1;
        let rects = classify_reference(&words, size, 3);
        assert_eq!(
            dispatch_args_reference(&rects, size),
            vec![[3, 1, 1], [1, 1, 1], [0, 0, 0]]
        );
        let full = classify_reference(&vec![0; 40 * 24], size, 1);
        assert_eq!(dispatch_args_reference(&full, size), vec![[5, 3, 1]]);
    }
}
