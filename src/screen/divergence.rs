//! Divergence statistics: how many distinct decoders each screen tile runs, the paper's
//! divergence map `D` and its score 𝒟, for the decoder sharing in use (`current`) next to
//! one decoder per texture set (`baseline`).
//!
//! This module owns the host-side types and the CPU reference ([`count_tiles`],
//! [`DivergenceStats::from_counts`]) that defines every number the GPU pass
//! (`render::passes::divergence`, `shaders/divergence.wgsl`) computes; the tests compare
//! the two exactly. [`tile_decoders`] hands out each tile's distinct-decoder list itself
//! (the co-occurrence record of `cluster` is counted from it). It does not touch the GPU.
//!
//! # Definitions
//!
//! The screen is cut into [`TileSize`] tiles (partial tiles at the right and bottom edges
//! count, holding only their on-screen pixels). A pixel has geometry when its G-buffer
//! material word is not `NO_MATERIAL` (`u32::MAX`); its material id is bits 0..19 of the
//! word. A *decoder map* gives each material id its decoder index; the entry
//! [`NO_DECODER`] (`u32::MAX`) marks a material that decodes nothing (constant factors,
//! no texture set), and ids at or past the map's length count as such materials too. A
//! pixel is *decoded* under a map when it has geometry and its material has a decoder.
//!
//! Per tile, `D` is the number of distinct decoders among the tile's decoded pixels,
//! which is the number of networks a wave covering the tile runs. The score is
//!
//! ```text
//! 𝒟 = mean over tiles with D ≥ 1 of |D − 1|
//! ```
//!
//! Tiles without any decoded pixel (sky, constant materials) are left out: they run no
//! network, so they cannot diverge, but `|0 − 1| = 1` would count each of them as much
//! as a tile running two decoders. Over the remaining tiles `|D − 1| = D − 1`, so
//! 𝒟 = mean `D` − 1, and 𝒟 = 0 exactly when every tile that decodes anything runs one
//! decoder. Each map is scored over its own decoded tiles; the two sets coincide when
//! both maps agree on which materials decode nothing, as one package's maps do.

use crate::screen::material_word::MATERIAL_ID_MASK;
pub use crate::screen::material_word::{NO_DECODER, NO_MATERIAL};
use crate::screen::tiles::TileSize;

/// What one screen tile holds. Stored by the GPU pass as one `Rgba32Uint` texel per tile,
/// in this field order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TileCounts {
    /// Distinct material ids among the tile's pixels with geometry (whether or not they
    /// decode anything).
    pub materials: u32,
    /// Distinct decoders among the tile's decoded pixels under the current map: `D`.
    pub decoders: u32,
    /// Distinct decoders under the baseline map.
    pub baseline_decoders: u32,
    /// Pixels of the tile with geometry.
    pub pixels: u32,
}

/// The decoder of material word `word` under `map`, or `None` when the pixel has no
/// geometry or its material decodes nothing.
fn decoder_of(map: &[u32], word: u32) -> Option<u32> {
    if word == NO_MATERIAL {
        return None;
    }
    map.get((word & MATERIAL_ID_MASK) as usize)
        .copied()
        .filter(|&d| d != NO_DECODER)
}

/// The number of distinct values in `values` (sorted in place).
fn distinct(values: &mut Vec<u32>) -> u32 {
    values.sort_unstable();
    values.dedup();
    values.len() as u32
}

/// Visit the tiles of a `size` image of G-buffer material `words` (row-major, top row
/// first) in row-major order over [`TileSize::grid`], handing `visit` the words of the
/// tile's pixels with geometry. Words missing from a `words` shorter than `size` count
/// as pixels without geometry.
fn for_each_tile(words: &[u32], size: (u32, u32), tile: TileSize, mut visit: impl FnMut(&[u32])) {
    let (tile_w, tile_h) = tile.dims();
    let (grid_w, grid_h) = tile.grid(size);
    let word_at = |x: u32, y: u32| -> u32 {
        *words
            .get(y as usize * size.0 as usize + x as usize)
            .unwrap_or(&NO_MATERIAL)
    };
    let mut geometry = Vec::with_capacity(tile.pixels() as usize);
    for ty in 0..grid_h {
        for tx in 0..grid_w {
            geometry.clear();
            for y in ty * tile_h..((ty + 1) * tile_h).min(size.1) {
                for x in tx * tile_w..((tx + 1) * tile_w).min(size.0) {
                    let word = word_at(x, y);
                    if word != NO_MATERIAL {
                        geometry.push(word);
                    }
                }
            }
            visit(&geometry);
        }
    }
}

/// The decoders of the pixels `geometry` (words with geometry) under `map`, distinct and
/// ascending, into `out`.
fn distinct_decoders(map: &[u32], geometry: &[u32], out: &mut Vec<u32>) {
    out.clear();
    out.extend(geometry.iter().filter_map(|&w| decoder_of(map, w)));
    distinct(out);
}

/// CPU reference of the divergence pass: the counts of every tile of a `size` image of
/// G-buffer material `words` (row-major, top row first), tiles in row-major order over
/// [`TileSize::grid`].
///
/// `current` and `baseline` map material ids to decoders (see the module docs). Words
/// missing from a `words` shorter than `size` count as pixels without geometry.
pub fn count_tiles(
    words: &[u32],
    size: (u32, u32),
    tile: TileSize,
    current: &[u32],
    baseline: &[u32],
) -> Vec<TileCounts> {
    let (grid_w, grid_h) = tile.grid(size);
    let mut materials = Vec::new();
    let mut decoders = Vec::new();
    let mut baseline_decoders = Vec::new();
    let mut counts = Vec::with_capacity(grid_w as usize * grid_h as usize);
    for_each_tile(words, size, tile, |geometry| {
        materials.clear();
        materials.extend(geometry.iter().map(|w| w & MATERIAL_ID_MASK));
        distinct_decoders(current, geometry, &mut decoders);
        distinct_decoders(baseline, geometry, &mut baseline_decoders);
        counts.push(TileCounts {
            materials: distinct(&mut materials),
            decoders: decoders.len() as u32,
            baseline_decoders: baseline_decoders.len() as u32,
            pixels: geometry.len() as u32,
        });
    });
    counts
}

/// The distinct decoders of every tile under `map`, ascending, handed to `visit` tile by
/// tile in the order of [`count_tiles`]; the length of each list is that tile's `D`
/// ([`TileCounts::decoders`] under `map`). With a map from material ids to texture sets
/// the lists are the sets each tile shows (the co-occurrence record is built from them).
pub fn tile_decoders(
    words: &[u32],
    size: (u32, u32),
    tile: TileSize,
    map: &[u32],
    mut visit: impl FnMut(&[u32]),
) {
    let mut decoders = Vec::new();
    for_each_tile(words, size, tile, |geometry| {
        distinct_decoders(map, geometry, &mut decoders);
        visit(&decoders);
    });
}

/// The divergence of one frame under both decoder maps (see the module docs for the
/// definitions). Serialised as is into benchmark reports.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DivergenceStats {
    /// The tile shape the statistics were counted over.
    pub tile: TileSize,
    /// Tiles with at least one decoded pixel under the current map (`D ≥ 1`): the
    /// denominator of [`Self::score`] and [`Self::mean_decoders`].
    pub tiles_covered: u64,
    /// The same under the baseline map.
    pub baseline_tiles_covered: u64,
    /// `histogram[d]` = number of tiles with `D = d` under the current map, every tile of
    /// the screen counted (`histogram[0]`: tiles that decode nothing). Length
    /// `tile.pixels() + 1`, since a tile cannot hold more distinct decoders than pixels.
    pub histogram: Vec<u32>,
    /// The same under the baseline map.
    pub baseline_histogram: Vec<u32>,
    /// 𝒟 under the current map; 0 when no tile decodes anything.
    pub score: f64,
    /// 𝒟 under the baseline map.
    pub baseline_score: f64,
    /// Mean `D` over the covered tiles (= `score + 1`; 0 when none is covered).
    pub mean_decoders: f64,
    /// The same under the baseline map.
    pub baseline_mean_decoders: f64,
}

/// Tiles with `D ≥ 1`, 𝒟 and mean `D` of one histogram, from exact integer sums.
fn score_histogram(histogram: &[u32]) -> (u64, f64, f64) {
    let (mut tiles, mut decoders) = (0u64, 0u64);
    for (d, &n) in histogram.iter().enumerate().skip(1) {
        tiles += u64::from(n);
        decoders += d as u64 * u64::from(n);
    }
    if tiles == 0 {
        return (0, 0.0, 0.0);
    }
    let divergence = (decoders - tiles) as f64 / tiles as f64;
    (tiles, divergence, decoders as f64 / tiles as f64)
}

impl DivergenceStats {
    /// The statistics of per-tile `counts` (as from [`count_tiles`]) counted over `tile`.
    ///
    /// The histograms have `tile.pixels() + 1` bins, more when a count exceeds the tile's
    /// pixels (impossible for real counts), so every count lands in its own bin.
    pub fn from_counts(tile: TileSize, counts: &[TileCounts]) -> Self {
        let largest = counts
            .iter()
            .map(|c| c.decoders.max(c.baseline_decoders))
            .max()
            .unwrap_or(0);
        let bins = tile.pixels().max(largest) as usize + 1;
        let mut histogram = vec![0; bins];
        let mut baseline_histogram = vec![0; bins];
        for c in counts {
            histogram[c.decoders as usize] += 1;
            baseline_histogram[c.baseline_decoders as usize] += 1;
        }
        Self::from_histograms(tile, histogram, baseline_histogram)
    }

    /// The statistics of two `D` histograms (`histogram[d]` = tiles with `d` distinct
    /// decoders), as the GPU pass accumulates them. The scores follow exactly from the
    /// histograms: `𝒟 = Σ_d (d − 1)·h[d] / Σ_{d≥1} h[d]`, with integer sums.
    pub fn from_histograms(
        tile: TileSize,
        histogram: Vec<u32>,
        baseline_histogram: Vec<u32>,
    ) -> Self {
        let (tiles_covered, score, mean_decoders) = score_histogram(&histogram);
        let (baseline_tiles_covered, baseline_score, baseline_mean_decoders) =
            score_histogram(&baseline_histogram);
        Self {
            tile,
            tiles_covered,
            baseline_tiles_covered,
            histogram,
            baseline_histogram,
            score,
            baseline_score,
            mean_decoders,
            baseline_mean_decoders,
        }
    }

    /// Relative reduction of 𝒟 from the baseline to the current map (0.25 = 25 % less
    /// divergence, the paper's Table 4 figure); `None` when the baseline does not diverge.
    pub fn reduction(&self) -> Option<f64> {
        (self.baseline_score > 0.0).then(|| 1.0 - self.score / self.baseline_score)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(decoders: u32, baseline_decoders: u32) -> TileCounts {
        TileCounts {
            materials: baseline_decoders,
            decoders,
            baseline_decoders,
            pixels: 1,
        }
    }

    #[test]
    fn score_by_hand_skips_tiles_without_decoders() {
        // Current D: 0, 1, 2, 4 → covered tiles 1, 2, 4: 𝒟 = (0 + 1 + 3) / 3 = 4/3.
        // Baseline D: 0, 3, 2, 5 → 𝒟 = (2 + 1 + 4) / 3 = 7/3.
        let stats = DivergenceStats::from_counts(
            TileSize::T8x4,
            &[counts(0, 0), counts(1, 3), counts(2, 2), counts(4, 5)],
        );
        assert_eq!(stats.tile, TileSize::T8x4);
        assert_eq!(stats.tiles_covered, 3);
        assert_eq!(stats.baseline_tiles_covered, 3);
        assert_eq!(stats.histogram.len(), 33);
        assert_eq!(&stats.histogram[..6], &[1, 1, 1, 0, 1, 0]);
        assert_eq!(&stats.baseline_histogram[..6], &[1, 0, 1, 1, 0, 1]);
        assert_eq!(stats.histogram.iter().sum::<u32>(), 4);
        assert!((stats.score - 4.0 / 3.0).abs() < 1e-15);
        assert!((stats.baseline_score - 7.0 / 3.0).abs() < 1e-15);
        assert!((stats.mean_decoders - 7.0 / 3.0).abs() < 1e-15);
        assert!((stats.baseline_mean_decoders - 10.0 / 3.0).abs() < 1e-15);
        assert!((stats.reduction().unwrap() - 3.0 / 7.0).abs() < 1e-15);
    }

    #[test]
    fn one_decoder_per_tile_scores_zero_and_nothing_decoded_is_finite() {
        let stats = DivergenceStats::from_counts(TileSize::T8x8, &[counts(1, 1), counts(1, 1)]);
        assert_eq!((stats.score, stats.mean_decoders), (0.0, 1.0));
        assert_eq!(stats.reduction(), None);
        let empty = DivergenceStats::from_counts(TileSize::T16x16, &[counts(0, 0)]);
        assert_eq!(empty.tiles_covered, 0);
        assert_eq!((empty.score, empty.mean_decoders), (0.0, 0.0));
        assert_eq!(empty.histogram.len(), 257);
        assert_eq!(empty.histogram[0], 1);
        let none = DivergenceStats::from_counts(TileSize::T8x8, &[]);
        assert_eq!(none.histogram, vec![0; 65]);
        assert_eq!(none.score, 0.0);
    }

    #[test]
    fn impossible_counts_get_their_own_bins() {
        // 70 decoders in an 8×8 tile cannot happen, but must not panic or be clamped.
        let stats = DivergenceStats::from_counts(TileSize::T8x8, &[counts(70, 1)]);
        assert_eq!(stats.histogram.len(), 71);
        assert_eq!(stats.histogram[70], 1);
        assert_eq!(stats.score, 69.0);
    }

    #[test]
    fn count_tiles_on_a_hand_made_image() {
        // 10×5 image, 8×4 tiles → 2×2 grid; the right column is 2 pixels wide and the
        // bottom row 1 pixel tall. Materials 0 and 1 share decoder 7 now, not in the
        // baseline; material 2 decodes nothing; material 9 is past both maps; bit 31
        // (bitangent sign) must be ignored.
        let current = [7, 7, NO_DECODER];
        let baseline = [0, 1, NO_DECODER];
        let mut words = vec![NO_MATERIAL; 50];
        words[0] = 0;
        words[1] = 1 | 0x8000_0000;
        words[2] = 2;
        words[8] = 9; // (8, 0): top-right tile
        words[9] = 1;
        words[40] = 2; // (0, 4): bottom-left tile, decodes nothing
        let tiles = count_tiles(&words, (10, 5), TileSize::T8x4, &current, &baseline);
        assert_eq!(
            tiles,
            [
                TileCounts {
                    materials: 3,
                    decoders: 1,
                    baseline_decoders: 2,
                    pixels: 3
                },
                TileCounts {
                    materials: 2,
                    decoders: 1,
                    baseline_decoders: 1,
                    pixels: 2
                },
                TileCounts {
                    materials: 1,
                    decoders: 0,
                    baseline_decoders: 0,
                    pixels: 1
                },
                TileCounts::default(),
            ]
        );
        // A short word slice reads as no geometry instead of panicking.
        let short = count_tiles(&words[..3], (10, 5), TileSize::T8x4, &current, &baseline);
        assert_eq!(short[0], tiles[0]);
        assert_eq!(short[1], TileCounts::default());
    }
}
