//! Video memory per material source, as the renderer holds it: the scene's original
//! textures (what the reference samples, and what every mode keeps resident for the
//! comparison and the alpha tests), each NTC mode's package on the GPU (latent grids,
//! decoder weights and tables), and the textures a package was baked into (inference on
//! load), once baked. Sizes are those of the buffers and textures allocated; what
//! inference on load would hold (RGBA8, or transcoded to BC1 or BC7) and the BCn bundles
//! of the same sets are computed from the package's layouts, baked or not.

use super::passes::ntc_bake::{BakedMaterials, Transcode, package_baked_bytes, texture_bytes};
use super::{RenderMode, Renderer};
use crate::ntc::format::NtcPackage;
use crate::texture::bcn::Baseline;

/// The video memory of one material source, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceMemory {
    /// The source.
    pub mode: RenderMode,
    /// The scene's original textures (every source keeps them).
    pub textures: u64,
    /// The mode's package on the GPU (`None` for the reference).
    pub package: Option<u64>,
    /// What inference on load holds for the package, per path (`None` for the reference).
    pub on_load: Option<OnLoadMemory>,
    /// The textures its package was baked into, and their block compression (`None`:
    /// not baked).
    pub baked: Option<(Option<Transcode>, u64)>,
}

/// Bytes of a package's sets decoded on load, per path, beside the BCn bundles of the
/// same sets (the images each set has, full mip chains).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OnLoadMemory {
    /// One RGBA8 texture per channel group a set has ([`set_formats`](super::passes::ntc_bake::set_formats)).
    pub rgba8: u64,
    /// Transcoded with `--transcode bc1`.
    pub bc1: u64,
    /// Transcoded with `--transcode bc7`.
    pub bc7: u64,
    /// The BC1/BC5 bundle ([`Baseline::Bc1Bc5`]).
    pub bundle_bc1_bc5: u64,
    /// The BC7/BC5 bundle ([`Baseline::Bc7Bc5`]).
    pub bundle_bc7_bc5: u64,
}

impl OnLoadMemory {
    /// The figures of `package`'s materials.
    pub fn of(package: &NtcPackage) -> Self {
        let bundle = |b: Baseline| {
            package
                .materials
                .iter()
                .map(|m| {
                    let size = (m.layout.width(), m.layout.height());
                    b.bytes(m.present, size, m.layout.mips() as u32)
                })
                .sum()
        };
        Self {
            rgba8: package_baked_bytes(package, None),
            bc1: package_baked_bytes(package, Some(Transcode::Bc1)),
            bc7: package_baked_bytes(package, Some(Transcode::Bc7)),
            bundle_bc1_bc5: bundle(Baseline::Bc1Bc5),
            bundle_bc7_bc5: bundle(Baseline::Bc7Bc5),
        }
    }
}

/// Bytes of a baked package's textures (a full mip chain per channel group a set has, in
/// its format; the 1×1 neutral textures of absent groups are not counted, as the scene's
/// own are not).
pub fn baked_bytes(baked: &BakedMaterials) -> u64 {
    baked
        .sets
        .iter()
        .flat_map(|set| set.textures.iter().flatten())
        .map(|t| {
            let size = t.size();
            texture_bytes(t.format(), (size.width, size.height), t.mip_level_count())
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
                    on_load: None,
                    baked: None,
                }),
                None => None,
                Some(p) => Some(SourceMemory {
                    mode,
                    textures,
                    package: Some(p.gpu.gpu_bytes()),
                    on_load: Some(OnLoadMemory::of(&p.package)),
                    baked: p
                        .baked
                        .as_ref()
                        .and_then(|(_, b)| b.as_ref().ok())
                        .map(|b| (b.transcode, baked_bytes(b))),
                }),
            })
            .collect()
    }
}
