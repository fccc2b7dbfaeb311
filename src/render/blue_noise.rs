//! Blue noise for the stochastic passes: a 64×64 tileable dither array generated here with
//! Ulichney's void-and-cluster method, and its GPU texture.
//!
//! The array is a ranking of the 64² texels, stored as `(rank + ½) / 64²`, so every value
//! in (0, 1) occurs once per tile and texels that are close on the torus hold values that
//! are far apart: the pattern's power sits at high spatial frequencies. Shaders sample it
//! through `blue_noise()` in `shaders/common/blue_noise.wgsl` (toroidal offsets per
//! channel, R3-sequence offsets per frame and channel).
//!
//! # Method (Ulichney 1993, "The void-and-cluster method for dither array generation")
//!
//! Energy is a toroidal Gaussian (σ = [`SIGMA`] texels) summed over the texels that are
//! set; a "tightest cluster" is the set texel of highest energy, a "largest void" the
//! unset texel of lowest energy. The energy table is updated incrementally: setting or
//! clearing one texel adds or subtracts one shifted copy of the kernel.
//!
//! 1. *Initial pattern*: [`INITIAL_ONES`] texels drawn from a seeded generator, refined by
//!    moving the tightest cluster into the largest void until the move would put the texel
//!    back where it came from.
//! 2. *Phase 1*: from the initial pattern, remove tightest clusters; each gets the rank
//!    of the count that remains.
//! 3. *Phases 2 and 3*: from the initial pattern, fill largest voids up to all 64² texels;
//!    each gets the count before it was set. Ulichney's phase 3 (beyond half) looks for
//!    the tightest cluster of *unset* texels instead; their energy is `K − E` with `K` the
//!    kernel's sum over the torus (the same for every texel), so that texel is exactly the
//!    largest void and one loop serves both phases.
//!
//! Ties are broken by the lowest texel index, and the seed is fixed, so the array is
//! deterministic. It is computed once per process ([`values`]); the GPU texture is made
//! by [`BlueNoise::new`]. This module knows nothing of the passes that consume it.

use std::sync::OnceLock;

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use wgpu::util::DeviceExt;

use crate::gpu::layout;

/// Side of the tile in texels; equals `BLUE_NOISE_SIZE` in `shaders/common/blue_noise.wgsl`.
pub const BLUE_NOISE_SIZE: u32 = 64;

/// Side of the tile as an index.
const SIDE: usize = BLUE_NOISE_SIZE as usize;

/// Texels in the tile.
const TEXELS: usize = SIDE * SIDE;

/// Standard deviation of the Gaussian energy kernel, in texels (Ulichney's 1.5).
pub const SIGMA: f64 = 1.5;

/// Texels set in the initial pattern: 10 % of the tile, the minority density Ulichney
/// starts from.
pub const INITIAL_ONES: usize = TEXELS / 10;

/// Seed of the initial pattern's generator.
const SEED: u64 = 0x6e65_7572_6f74_6578;

/// The tile, row-major, `(rank + ½) / 64²` per texel, generated on first use.
pub fn values() -> &'static [f32] {
    static VALUES: OnceLock<Vec<f32>> = OnceLock::new();
    VALUES.get_or_init(|| {
        ranks()
            .iter()
            .map(|&rank| (rank as f32 + 0.5) / TEXELS as f32)
            .collect()
    })
}

/// `blue_noise(tex, pixel, frame, channel)` of `shaders/common/blue_noise.wgsl` on the CPU
/// (the tile of [`values`]): the tile shifted by `channel · (49, 37)`, plus
/// `frame · α_c` modulo 1 in 24-bit fixed point.
pub fn sample(pixel: (u32, u32), frame: u32, channel: u32) -> f32 {
    const WEYL: [u32; 3] = [3_518_319_155, 2_882_110_345, 2_360_945_575];
    let px = pixel.0.wrapping_add(channel.wrapping_mul(49)) % BLUE_NOISE_SIZE;
    let py = pixel.1.wrapping_add(channel.wrapping_mul(37)) % BLUE_NOISE_SIZE;
    let v = values()[(py * BLUE_NOISE_SIZE + px) as usize];
    let weyl =
        (frame.wrapping_mul(WEYL[(channel % 3) as usize]) >> 8) as f32 * (1.0 / 16_777_216.0);
    let s = v + weyl;
    s - s.floor()
}

/// The blue-noise tile on the GPU: `BLUE_NOISE_SIZE`² texels of `R32Float`, read with
/// `textureLoad` (bind it as an unfilterable float texture).
#[derive(Debug)]
pub struct BlueNoise {
    /// The texture (`TEXTURE_BINDING | COPY_DST | COPY_SRC`, the last for readback).
    pub texture: wgpu::Texture,
    /// Its full view.
    pub view: wgpu::TextureView,
}

impl BlueNoise {
    /// Label of the texture.
    pub const LABEL: &'static str = "blue_noise";

    /// Generates the tile (once per process) and uploads it.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Self {
        let texture = device.create_texture_with_data(
            queue,
            &layout::texture_2d(
                Self::LABEL,
                (BLUE_NOISE_SIZE, BLUE_NOISE_SIZE),
                1,
                wgpu::TextureFormat::R32Float,
                wgpu::TextureUsages::TEXTURE_BINDING
                    | wgpu::TextureUsages::COPY_DST
                    | wgpu::TextureUsages::COPY_SRC,
            ),
            wgpu::util::TextureDataOrder::LayerMajor,
            bytemuck::cast_slice(values()),
        );
        let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
        Self { texture, view }
    }
}

/// The Gaussian energy of every texel of the torus, updated incrementally.
#[derive(Clone)]
struct EnergyField {
    /// `kernel[dy * SIDE + dx]`: the Gaussian of the toroidal distance (dx, dy).
    kernel: Vec<f64>,
    /// Energy of each texel: the kernel summed over the set texels.
    energy: Vec<f64>,
    /// Which texels are set.
    set: Vec<bool>,
}

impl EnergyField {
    /// No texel set.
    fn new() -> Self {
        let wrap = |d: usize| d.min(SIDE - d) as f64;
        let kernel = (0..TEXELS)
            .map(|i| {
                let (dx, dy) = (wrap(i % SIDE), wrap(i / SIDE));
                (-(dx * dx + dy * dy) / (2.0 * SIGMA * SIGMA)).exp()
            })
            .collect();
        Self {
            kernel,
            energy: vec![0.0; TEXELS],
            set: vec![false; TEXELS],
        }
    }

    /// Sets (`sign` = 1) or clears (`sign` = −1) texel `p`, updating the energy.
    fn splat(&mut self, p: usize, sign: f64) {
        self.set[p] = sign > 0.0;
        let (px, py) = (p % SIDE, p / SIDE);
        for y in 0..SIDE {
            let kernel_row = &self.kernel[((y + SIDE - py) % SIDE) * SIDE..][..SIDE];
            let row = &mut self.energy[y * SIDE..][..SIDE];
            // Texel x takes kernel[(x − px) mod SIDE]: two contiguous runs.
            let (left, right) = row.split_at_mut(px);
            for (e, k) in right.iter_mut().zip(&kernel_row[..SIDE - px]) {
                *e += sign * k;
            }
            for (e, k) in left.iter_mut().zip(&kernel_row[SIDE - px..]) {
                *e += sign * k;
            }
        }
    }

    /// The set texel of highest energy (lowest index on ties).
    fn tightest_cluster(&self) -> usize {
        self.extreme(true, |candidate, best| candidate > best)
    }

    /// The unset texel of lowest energy (lowest index on ties).
    fn largest_void(&self) -> usize {
        self.extreme(false, |candidate, best| candidate < best)
    }

    /// Index of the texel with `set == state` that `better` prefers. Callers only ask
    /// while such a texel exists; otherwise index 0 comes back.
    fn extreme(&self, state: bool, better: impl Fn(f64, f64) -> bool) -> usize {
        let mut best: Option<(usize, f64)> = None;
        for (i, (&e, &s)) in self.energy.iter().zip(&self.set).enumerate() {
            if s == state && best.is_none_or(|(_, b)| better(e, b)) {
                best = Some((i, e));
            }
        }
        best.map_or(0, |(i, _)| i)
    }
}

/// The void-and-cluster ranking of the tile (see the module docs).
fn ranks() -> Vec<u32> {
    let mut field = EnergyField::new();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(SEED);
    let mut count = 0;
    while count < INITIAL_ONES {
        // TEXELS is a power of two, so the modulo is unbiased.
        let p = (rng.next_u64() % TEXELS as u64) as usize;
        if !field.set[p] {
            field.splat(p, 1.0);
            count += 1;
        }
    }
    // Each move strictly lowers the total energy in exact arithmetic; the bound only
    // guards against rounding making two moves undo each other forever.
    for _ in 0..TEXELS {
        let cluster = field.tightest_cluster();
        field.splat(cluster, -1.0);
        let void = field.largest_void();
        field.splat(void, 1.0);
        if void == cluster {
            break;
        }
    }
    let initial = field.clone();

    let mut ranks = vec![0u32; TEXELS];
    for rank in (0..INITIAL_ONES).rev() {
        let cluster = field.tightest_cluster();
        field.splat(cluster, -1.0);
        ranks[cluster] = rank as u32;
    }
    let mut field = initial;
    for rank in INITIAL_ONES..TEXELS {
        let void = field.largest_void();
        field.splat(void, 1.0);
        ranks[void] = rank as u32;
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader::ShaderLibrary;

    /// Power of the mean-removed tile at each frequency (u, v), by separable DFT.
    fn power_spectrum(tile: &[f32]) -> Vec<f64> {
        let mean = tile.iter().map(|&v| f64::from(v)).sum::<f64>() / TEXELS as f64;
        let twiddle = |k: usize| {
            let angle = -std::f64::consts::TAU * k as f64 / SIDE as f64;
            (angle.cos(), angle.sin())
        };
        let twiddles: Vec<(f64, f64)> = (0..SIDE).map(twiddle).collect();
        // Rows: re/im per (y, u).
        let mut rows = vec![(0.0, 0.0); TEXELS];
        for y in 0..SIDE {
            for u in 0..SIDE {
                let mut acc = (0.0, 0.0);
                for x in 0..SIDE {
                    let v = f64::from(tile[y * SIDE + x]) - mean;
                    let (c, s) = twiddles[(u * x) % SIDE];
                    acc = (acc.0 + v * c, acc.1 + v * s);
                }
                rows[y * SIDE + u] = acc;
            }
        }
        let mut power = vec![0.0; TEXELS];
        for u in 0..SIDE {
            for v in 0..SIDE {
                let mut acc = (0.0, 0.0);
                for y in 0..SIDE {
                    let (re, im) = rows[y * SIDE + u];
                    let (c, s) = twiddles[(v * y) % SIDE];
                    acc = (acc.0 + re * c - im * s, acc.1 + re * s + im * c);
                }
                power[v * SIDE + u] = acc.0 * acc.0 + acc.1 * acc.1;
            }
        }
        power
    }

    /// Radially averaged power: mean power per integer ring of |frequency| (cycles per
    /// tile), rings 0..=SIDE/2.
    fn radial_power(tile: &[f32]) -> Vec<f64> {
        let power = power_spectrum(tile);
        let mut sum = vec![0.0; SIDE / 2 + 1];
        let mut count = vec![0usize; SIDE / 2 + 1];
        let signed = |k: usize| {
            if k < SIDE / 2 {
                k as f64
            } else {
                k as f64 - SIDE as f64
            }
        };
        for v in 0..SIDE {
            for u in 0..SIDE {
                let ring = signed(u).hypot(signed(v)).round() as usize;
                if ring <= SIDE / 2 {
                    sum[ring] += power[v * SIDE + u];
                    count[ring] += 1;
                }
            }
        }
        sum.iter().zip(&count).map(|(s, &c)| s / c as f64).collect()
    }

    /// Mean power of rings 1..=8 (the lowest quarter of the band) relative to the mean
    /// power of all rings 1..=32. White noise is flat, so about 1.
    fn low_frequency_share(tile: &[f32]) -> f64 {
        let rings = radial_power(tile);
        let low = rings[1..=8].iter().sum::<f64>() / 8.0;
        let all = rings[1..].iter().sum::<f64>() / (rings.len() - 1) as f64;
        low / all
    }

    /// The same values as the blue-noise tile, shuffled with the same seed: white noise.
    fn white_noise() -> Vec<f32> {
        let mut tile = values().to_vec();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(SEED);
        for i in (1..TEXELS).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            tile.swap(i, j);
        }
        tile
    }

    /// Pearson correlation of the value pairs.
    fn correlation(pairs: &[(f32, f32)]) -> f64 {
        let n = pairs.len() as f64;
        let (ma, mb) = pairs.iter().fold((0.0, 0.0), |(a, b), &(x, y)| {
            (a + f64::from(x) / n, b + f64::from(y) / n)
        });
        let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
        for &(x, y) in pairs {
            let (dx, dy) = (f64::from(x) - ma, f64::from(y) - mb);
            cov += dx * dy;
            va += dx * dx;
            vb += dy * dy;
        }
        cov / (va * vb).sqrt()
    }

    /// Correlation of 4-neighbour pairs that cross the tile's edges (wrapping), and of
    /// those inside it.
    fn seam_and_interior_correlation(tile: &[f32]) -> (f64, f64) {
        let at = |x: usize, y: usize| tile[(y % SIDE) * SIDE + x % SIDE];
        let (mut seam, mut interior) = (Vec::new(), Vec::new());
        for a in 0..SIDE {
            for b in 0..SIDE {
                let pairs = [(at(a, b), at(a + 1, b)), (at(b, a), at(b, a + 1))];
                if a + 1 == SIDE {
                    seam.extend(pairs);
                } else {
                    interior.extend(pairs);
                }
            }
        }
        (correlation(&seam), correlation(&interior))
    }

    #[test]
    fn values_are_a_permutation_of_the_ranks() {
        let mut ranks: Vec<u32> = values()
            .iter()
            .map(|&v| {
                let rank = v * TEXELS as f32 - 0.5;
                assert_eq!(rank, rank.round(), "{v} is not (rank + ½) / {TEXELS}");
                rank as u32
            })
            .collect();
        ranks.sort_unstable();
        assert!(ranks.iter().copied().eq(0..TEXELS as u32));
    }

    #[test]
    fn spectrum_is_blue_and_white_noise_is_not() {
        let blue = low_frequency_share(values());
        let white = low_frequency_share(&white_noise());
        // Void-and-cluster with σ = 1.5 leaves almost no power below a quarter of the
        // band; white noise of the same values spreads it evenly (share ≈ 1).
        assert!(blue < 0.05, "blue noise low-frequency share {blue:.4}");
        assert!(white > 0.6, "white noise low-frequency share {white:.3}");
        let rings = radial_power(values());
        assert!(
            rings[1..=4].iter().all(|&low| low < rings[24] / 10.0),
            "the lowest rings must carry a tenth of the high-frequency power: {rings:?}"
        );
    }

    #[test]
    fn tile_wraps_without_a_seam() {
        let (seam, interior) = seam_and_interior_correlation(values());
        // Blue noise makes neighbours anti-correlated; a kernel that did not wrap would
        // leave pairs across the edge uncorrelated (≈ 0), well above the interior value.
        assert!(
            interior < -0.2,
            "interior neighbour correlation {interior:.3}"
        );
        assert!(
            seam <= interior + 0.1,
            "seam correlation {seam:.3} vs interior {interior:.3}"
        );
        // The check fails for a tile that does not wrap: mirror the left half so that
        // the first column repeats the last one.
        let mut mirrored = values().to_vec();
        for y in 0..SIDE {
            for x in 0..SIDE / 2 {
                mirrored[y * SIDE + x] = values()[y * SIDE + SIDE - 1 - x];
            }
        }
        let (seam, interior) = seam_and_interior_correlation(&mirrored);
        assert!(seam > interior + 0.1, "{seam:.3} vs {interior:.3}");
    }

    #[test]
    fn generation_is_deterministic() {
        let again: Vec<f32> = ranks()
            .iter()
            .map(|&rank| (rank as f32 + 0.5) / TEXELS as f32)
            .collect();
        assert_eq!(again, values());
    }

    #[test]
    fn shader_size_matches_and_the_sampler_validates() {
        let user = "#import \"common/blue_noise.wgsl\"\n\
            @group(0) @binding(0) var noise: texture_2d<f32>;\n\
            @compute @workgroup_size(1)\n\
            fn main() { _ = blue_noise(noise, vec2u(3u, 5u), 7u, 2u); }\n";
        let embedded = ShaderLibrary::embedded();
        let library = ShaderLibrary::new(|path| {
            if path == "blue_noise_user.wgsl" {
                Some(user)
            } else {
                embedded.source(path)
            }
        });
        let module = library
            .validate("blue_noise_user.wgsl", &crate::gpu::Defines::new())
            .unwrap_or_else(|e| panic!("{e}"));
        crate::gpu::mirror::assert_const(&module, "BLUE_NOISE_SIZE", BLUE_NOISE_SIZE);
    }
}
