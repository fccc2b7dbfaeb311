//! The render passes, one struct each, with `new` / `resize` (or `bind`) / `record`.
//! Every pass is named by one label (its `LABEL` constant) that names its wgpu objects,
//! its timestamp scope and its timing row.

pub mod bcn_encode;
pub mod divergence;
pub mod fullscreen;
pub mod gbuffer;
pub mod gbuffer_resolve;
pub mod heatmap;
pub mod image_error;
pub mod lighting;
pub mod ntc_bake;
pub mod ntc_decode;
pub mod reference;
pub mod scene_draw;
pub mod shadow;
pub mod split;
pub mod temporal;
pub mod tile_signatures;
pub mod tonemap;

use crate::gpu::GpuContext;
use crate::gpu::kernel::{ComputeKernel, KernelDesc, KernelError};
use crate::gpu::layout::Slot;
use crate::render::targets::format;
use crate::screen::tiles::TileSize;

/// The kernel of a tiled pass at `tile`'s size: `desc` with the tile's defines
/// ([`TileSize::defines`]: the workgroup size) after its own.
pub fn tiled_kernel(
    ctx: &GpuContext,
    tile: TileSize,
    desc: &KernelDesc<'_>,
) -> Result<ComputeKernel, KernelError> {
    let defines = desc.defines.clone().merged(&tile.defines());
    ComputeKernel::new(
        ctx,
        &KernelDesc {
            defines: &defines,
            ..*desc
        },
    )
}

/// Group 0 of both material passes (reference and NTC decode), as
/// `shaders/common/material.wgsl` declares it, with each pass's own bindings 6 and 7:
/// the frame, the scene's materials, the G-buffer's normal + tangent, UV, UV derivatives
/// and material word, `six` and `seven`, then the three material targets.
pub const fn material_pass_slots(six: Slot, seven: Slot) -> [Slot; 11] {
    let target = Slot::WriteTexture(format::MATERIAL_TARGET);
    [
        Slot::Uniform,
        Slot::Storage,
        Slot::FloatTexture,
        Slot::FloatTexture,
        Slot::FloatTexture,
        Slot::UintTexture,
        six,
        seven,
        target,
        target,
        target,
    ]
}
