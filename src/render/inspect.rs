//! The inspector: what lies under one pixel of the last submitted frame, read back from
//! that frame's targets — the G-buffer's material words of the pixel's screen tile, the
//! pixel of the material targets it was lit from, of the reference comparison's material
//! targets and of the per-pixel error — and named through the renderer's tables (the
//! material's texture set, its decoder in the mode's package). Nothing is recomputed on
//! the CPU; a readback is one tile and a few pixels, and waits for the GPU.

use crate::gpu::{GpuContext, GpuError, read_texture_rect};

use super::targets::{MaterialTargets, Target};
use super::{RenderMode, Renderer};
use crate::screen::material_word::{MATERIAL_ID_MASK, NO_DECODER, NO_MATERIAL};

/// The three material targets' values at one pixel, as stored (linear base colour and
/// alpha; octahedral normal, roughness, metallic; linear emissive and occlusion).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MaterialTexel {
    /// `base_color` target.
    pub base_color: [f32; 4],
    /// `normal_rm` target.
    pub normal_rm: [f32; 4],
    /// `emissive_ao` target.
    pub emissive_ao: [f32; 4],
}

impl MaterialTexel {
    /// The three targets in order.
    pub fn targets(&self) -> [[f32; 4]; 3] {
        [self.base_color, self.normal_rm, self.emissive_ao]
    }
}

/// Which targets of the last frame a pixel is read from.
#[derive(Clone, Copy, Debug)]
pub struct InspectSource<'a> {
    /// The mode whose package names the decoders (the reference: one decoder per set).
    pub mode: RenderMode,
    /// The material targets shown at the pixel (`None`: the frame's own).
    pub materials: Option<&'a MaterialTargets>,
    /// The reference comparison was rendered this frame (its material targets hold the
    /// reference texels).
    pub compared: bool,
    /// The per-pixel error target against the reference, when one was measured.
    pub error: Option<&'a Target>,
}

/// What lies under one pixel. See the module docs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PixelInspection {
    /// The pixel (internal resolution).
    pub pixel: (u32, u32),
    /// The scene material (`None`: no geometry).
    pub material: Option<u32>,
    /// The material's deduplicated texture set (`None`: constants only).
    pub texture_set: Option<usize>,
    /// The material's decoder (its group) in the mode's package, or its set's in the
    /// baseline for the reference (`None`: it decodes nothing).
    pub decoder: Option<u32>,
    /// The distinct decoders of the pixel's screen tile, ascending.
    pub tile_decoders: Vec<u32>,
    /// The tile's rectangle: origin and size in pixels.
    pub tile: ((u32, u32), (u32, u32)),
    /// The material targets at the pixel.
    pub decoded: MaterialTexel,
    /// The reference path's material targets at the pixel, when compared.
    pub reference: Option<MaterialTexel>,
    /// The per-pixel error against the reference, when measured.
    pub error: Option<f32>,
}

impl Renderer {
    /// Blocking: read what lies under `pixel` in the last submitted frame's targets (see
    /// the module docs); `None` outside the frame.
    pub fn inspect_blocking(
        &self,
        ctx: &GpuContext,
        pixel: (u32, u32),
        source: &InspectSource<'_>,
    ) -> Result<Option<PixelInspection>, GpuError> {
        let (w, h) = self.size();
        if pixel.0 >= w || pixel.1 >= h {
            return Ok(None);
        }
        let t = &self.targets;
        let (tw, th) = self.tile().dims();
        let origin = (pixel.0 / tw * tw, pixel.1 / th * th);
        let extent = ((w - origin.0).min(tw), (h - origin.1).min(th));
        let words =
            read_texture_rect(ctx, &t.gbuffer.material.texture, origin, extent)?.to_u32()?;
        let local = ((pixel.1 - origin.1) * extent.0 + pixel.0 - origin.0) as usize;
        let decoders: Vec<u32> = match self.packages.get(&source.mode) {
            Some(p) => p.gpu.decoder_of_material().to_vec(),
            None => self
                .scene
                .material_sets
                .iter()
                .map(|s| s.map_or(NO_DECODER, |s| s as u32))
                .collect(),
        };
        let decoder_of = |word: u32| {
            (word != NO_MATERIAL)
                .then(|| decoders.get((word & MATERIAL_ID_MASK) as usize).copied())
                .flatten()
                .filter(|&d| d != NO_DECODER)
        };
        let mut tile_decoders: Vec<u32> = words.iter().filter_map(|&w| decoder_of(w)).collect();
        tile_decoders.sort_unstable();
        tile_decoders.dedup();
        let word = words[local];
        let material = (word != NO_MATERIAL).then_some(word & MATERIAL_ID_MASK);
        let texel = |m: &MaterialTargets| -> Result<MaterialTexel, GpuError> {
            let read = |target: &Target| -> Result<[f32; 4], GpuError> {
                let v = read_texture_rect(ctx, &target.texture, pixel, (1, 1))?.to_f32()?;
                Ok([v[0], v[1], v[2], v[3]])
            };
            Ok(MaterialTexel {
                base_color: read(&m.base_color)?,
                normal_rm: read(&m.normal_rm)?,
                emissive_ao: read(&m.emissive_ao)?,
            })
        };
        let decoded = texel(source.materials.unwrap_or(&t.materials))?;
        let reference = match source.compared && material.is_some() {
            true => Some(texel(&t.comparison.materials)?),
            false => None,
        };
        let error = match source.error {
            Some(e) if material.is_some() => {
                Some(read_texture_rect(ctx, &e.texture, pixel, (1, 1))?.to_f32()?[0])
            }
            _ => None,
        };
        Ok(Some(PixelInspection {
            pixel,
            material,
            texture_set: material
                .and_then(|m| self.scene.material_sets.get(m as usize).copied().flatten()),
            decoder: decoder_of(word),
            tile_decoders,
            tile: (origin, extent),
            decoded,
            reference,
            error,
        }))
    }
}
