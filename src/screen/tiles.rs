//! Screen tiles: the unit of work of the NTC decode pass and of the divergence
//! statistics. One compute workgroup covers one tile; the decode pass runs each distinct
//! decoder in a tile once, so the number of distinct decoders per tile is the divergence
//! the paper measures.

use crate::gpu::Defines;

/// The tile shape of the decode and divergence passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[derive(clap::ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum TileSize {
    /// 8×8 pixels (64 threads, two 32-wide or one 64-wide wave).
    #[default]
    #[value(name = "8x8")]
    #[serde(rename = "8x8")]
    T8x8,
    /// 8×4 pixels (one 32-wide wave).
    #[value(name = "8x4")]
    #[serde(rename = "8x4")]
    T8x4,
    /// 16×16 pixels (256 threads).
    #[value(name = "16x16")]
    #[serde(rename = "16x16")]
    T16x16,
}

impl TileSize {
    /// Every tile size, default first.
    pub const ALL: [TileSize; 3] = [TileSize::T8x8, TileSize::T8x4, TileSize::T16x16];

    /// Width and height in pixels.
    pub fn dims(self) -> (u32, u32) {
        match self {
            TileSize::T8x8 => (8, 8),
            TileSize::T8x4 => (8, 4),
            TileSize::T16x16 => (16, 16),
        }
    }

    /// Pixels per tile (= threads per workgroup).
    pub fn pixels(self) -> u32 {
        let (w, h) = self.dims();
        w * h
    }

    /// Tiles covering a `size` image (partial tiles at the right and bottom edges count).
    pub fn grid(self, size: (u32, u32)) -> (u32, u32) {
        let (w, h) = self.dims();
        (size.0.div_ceil(w), size.1.div_ceil(h))
    }

    /// `8x8`, `8x4` or `16x16`.
    pub fn name(self) -> &'static str {
        match self {
            TileSize::T8x8 => "8x8",
            TileSize::T8x4 => "8x4",
            TileSize::T16x16 => "16x16",
        }
    }

    /// The shader defines `TILE_W` and `TILE_H` (the workgroup size of tiled passes).
    pub fn defines(self) -> Defines {
        let (w, h) = self.dims();
        Defines::new().with("TILE_W", w).with("TILE_H", h)
    }
}

impl std::fmt::Display for TileSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_cover_partial_tiles() {
        assert_eq!(TileSize::T8x8.grid((17, 8)), (3, 1));
        assert_eq!(TileSize::T8x4.grid((8, 9)), (1, 3));
        assert_eq!(TileSize::T16x16.grid((1, 1)), (1, 1));
        assert_eq!(TileSize::T16x16.pixels(), 256);
    }
}
