//! Video memory per material source, as the renderer holds it: the scene's original
//! textures (what the reference samples, and what every mode keeps resident for the
//! comparison and the alpha tests), each NTC mode's package on the GPU (latent grids,
//! decoder weights and tables), and the textures a package was baked into (inference on
//! load), once baked. Sizes are those of the buffers and textures allocated.

use super::passes::ntc_bake::BakedMaterials;
use super::{RenderMode, Renderer};

/// The video memory of one material source, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceMemory {
    /// The source.
    pub mode: RenderMode,
    /// The scene's original textures (every source keeps them).
    pub textures: u64,
    /// The mode's package on the GPU (`None` for the reference).
    pub package: Option<u64>,
    /// The textures its package was baked into (`None`: not baked).
    pub baked: Option<u64>,
}

/// Bytes of a baked package's textures: three `Rgba8Unorm` full mip chains a set.
pub fn baked_bytes(baked: &BakedMaterials) -> u64 {
    baked
        .sets
        .iter()
        .flat_map(|set| &set.textures)
        .map(|t| {
            (0..t.mip_level_count())
                .map(|m| {
                    let s = t.size().mip_level_size(m, t.dimension());
                    u64::from(s.width) * u64::from(s.height) * 4
                })
                .sum::<u64>()
        })
        .sum()
}

impl Renderer {
    /// The video memory of the reference and of every NTC mode whose package is loaded,
    /// in [`RenderMode::ALL`] order.
    pub fn source_memory(&self) -> Vec<SourceMemory> {
        let textures = self.scene.texture_bytes;
        RenderMode::ALL
            .into_iter()
            .filter_map(|mode| match self.packages.get(&mode) {
                None if mode == RenderMode::Reference => Some(SourceMemory {
                    mode,
                    textures,
                    package: None,
                    baked: None,
                }),
                None => None,
                Some(p) => Some(SourceMemory {
                    mode,
                    textures,
                    package: Some(p.gpu.gpu_bytes()),
                    baked: p
                        .baked
                        .as_ref()
                        .and_then(|b| b.as_ref().ok())
                        .map(baked_bytes),
                }),
            })
            .collect()
    }
}
