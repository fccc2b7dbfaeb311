//! The `stats` embedder: low-level texture statistics, no weights, no download.
//!
//! The paper clusters CLIP features and names low-level features ("texture frequency or
//! edge content") as future work; this embedder is that. It reads one mip level per set,
//! the one whose texel count is closest to [`STATS_ANALYSIS_SIZE`]² (ties go to the
//! larger level), and computes [`STATS_DIM`] = 34 features in four blocks
//! ([`STATS_BLOCKS`]):
//!
//! | block | dims | content |
//! |---|---|---|
//! | `oklab_moments` | 9 | mean, standard deviation and skewness of Oklab L, a, b of the base colour (sRGB decoded to linear first) |
//! | `gabor_energy` | 16 | log mean energy of complex Gabor filters (wavelength 4 texels, σ = 2, zero DC) on Oklab L at 4 scales (a Gaussian pyramid, factor 2) × 4 orientations (0°, 45°, 90°, 135°) |
//! | `radial_spectrum` | 5 | log₁₀ of the fraction of L's power (DC excluded) in the radial bands \[1, 2), \[2, 4), \[4, 8), \[8, 16), \[16, ∞) cycles per texture, from a 64×64 DFT of L resampled to 64×64 |
//! | `normal_stats` | 4 | standard deviation of the normal's X and Y, mean tilt √(x² + y²) and RMS gradient of (x, y); a flat normal (none present) gives zeros |
//!
//! Filters and differences wrap around the edges (textures tile). Alpha is ignored.
//!
//! **Normalisation.** Each dimension is z-normalised across the input sets (mean 0,
//! standard deviation 1; a dimension that is constant across the sets, σ < 1e-5, becomes
//! 0), then each block is scaled by 1/√(block dims), so that every block contributes the
//! same expected squared distance and none dominates because it has more dimensions.
//! The vectors therefore depend on the whole input: embed the sets that are clustered
//! together in one call.

use super::embed::EmbeddingBlock;
use crate::texture::{CHANNELS, SetMip, TextureSet, srgb_to_linear};

/// Version of the `stats` embedder; bumped whenever its vectors change.
pub const STATS_VERSION: &str = "1";

/// The side of the mip level the statistics are computed on: the level whose texel count
/// is closest to this squared.
pub const STATS_ANALYSIS_SIZE: u32 = 128;

/// The blocks of the `stats` embedding: name and number of dimensions, in order.
pub const STATS_BLOCKS: [(&str, usize); 4] = [
    ("oklab_moments", 9),
    ("gabor_energy", GABOR_SCALES * GABOR_ORIENTATIONS),
    ("radial_spectrum", SPECTRUM_BANDS),
    ("normal_stats", 4),
];

/// Number of dimensions of the `stats` embedding.
pub const STATS_DIM: usize = 9 + GABOR_SCALES * GABOR_ORIENTATIONS + SPECTRUM_BANDS + 4;

/// Pyramid levels the Gabor filters run on.
const GABOR_SCALES: usize = 4;
/// Gabor orientations, evenly spaced over 180°.
const GABOR_ORIENTATIONS: usize = 4;
/// Gabor carrier wavelength in texels (at each pyramid level).
const GABOR_WAVELENGTH: f32 = 4.0;
/// Gabor envelope standard deviation in texels.
const GABOR_SIGMA: f32 = 2.0;
/// Gabor kernel radius in texels (2σ).
const GABOR_RADIUS: isize = 4;
/// Side of the square the power spectrum is computed on.
const SPECTRUM_SIZE: usize = 64;
/// Number of radial (octave) bands of the power spectrum.
const SPECTRUM_BANDS: usize = 5;
/// Standard deviation below which a dimension counts as constant across sets.
const CONSTANT_SIGMA: f32 = 1e-5;

/// The blocks as [`EmbeddingBlock`]s with their offsets.
pub(super) fn blocks() -> Vec<EmbeddingBlock> {
    let mut start = 0;
    STATS_BLOCKS
        .iter()
        .map(|&(name, len)| {
            let b = EmbeddingBlock {
                name: name.into(),
                start,
                len,
            };
            start += len;
            b
        })
        .collect()
}

/// The settings recorded with `stats` embeddings.
pub(super) fn detail() -> String {
    format!(
        "mip closest to {STATS_ANALYSIS_SIZE}²; per-dimension z-score across the input sets, \
         each block scaled by 1/sqrt(dims)"
    )
}

/// Normalised `stats` vectors of `sets` (already checked by `embed::check_set`).
pub(super) fn embed(sets: &[TextureSet]) -> Vec<Vec<f32>> {
    let mut vectors: Vec<Vec<f32>> = sets.iter().map(raw_features).collect();
    normalise(&mut vectors);
    vectors
}

/// Z-score every dimension across the vectors, then scale each block by 1/√len.
fn normalise(vectors: &mut [Vec<f32>]) {
    let n = vectors.len() as f64;
    if n == 0.0 {
        return;
    }
    for block in blocks() {
        let scale = 1.0 / (block.len as f64).sqrt();
        for d in block.start..block.start + block.len {
            let mean = vectors.iter().map(|v| v[d] as f64).sum::<f64>() / n;
            let var = vectors
                .iter()
                .map(|v| (v[d] as f64 - mean).powi(2))
                .sum::<f64>()
                / n;
            let sigma = var.sqrt();
            for v in vectors.iter_mut() {
                v[d] = if sigma < CONSTANT_SIGMA as f64 {
                    0.0
                } else {
                    ((v[d] as f64 - mean) / sigma * scale) as f32
                };
            }
        }
    }
}

/// The mip level whose texel count is closest to `STATS_ANALYSIS_SIZE²` (log scale).
fn analysis_mip(set: &TextureSet) -> &SetMip {
    let target = 2.0 * (STATS_ANALYSIS_SIZE as f64).log2();
    let mut best = &set.mips[0];
    let mut best_d = f64::INFINITY;
    for mip in &set.mips {
        let d = ((mip.width as f64 * mip.height as f64).log2() - target).abs();
        if d < best_d {
            best = mip;
            best_d = d;
        }
    }
    best
}

/// A single-channel image with wrap-around addressing.
#[derive(Clone)]
struct Plane {
    w: usize,
    h: usize,
    v: Vec<f32>,
}

impl Plane {
    /// The value at `(x, y)`, wrapping around both edges.
    fn at(&self, x: isize, y: isize) -> f32 {
        let xi = x.rem_euclid(self.w as isize) as usize;
        let yi = y.rem_euclid(self.h as isize) as usize;
        self.v[yi * self.w + xi]
    }

    /// Blur with the binomial \[1, 2, 1\]/4 kernel on both axes, then keep every second
    /// texel (sizes round up, never below 1).
    fn downsample(&self) -> Plane {
        let (nw, nh) = (self.w.div_ceil(2), self.h.div_ceil(2));
        let mut v = Vec::with_capacity(nw * nh);
        for y in 0..nh {
            for x in 0..nw {
                let (cx, cy) = (2 * x as isize, 2 * y as isize);
                let mut acc = 0.0;
                for (dy, wy) in [(-1, 1.0), (0, 2.0), (1, 1.0)] {
                    for (dx, wx) in [(-1, 1.0), (0, 2.0), (1, 1.0)] {
                        acc += wx * wy * self.at(cx + dx, cy + dy);
                    }
                }
                v.push(acc / 16.0);
            }
        }
        Plane { w: nw, h: nh, v }
    }
}

/// Unnormalised features of one set (see the module docs for the layout).
fn raw_features(set: &TextureSet) -> Vec<f32> {
    let mip = analysis_mip(set);
    let (w, h) = (mip.width as usize, mip.height as usize);
    let lut: Vec<f32> = (0..=255u8)
        .map(|b| srgb_to_linear(b as f32 / 255.0))
        .collect();
    let mut lab = [
        Vec::with_capacity(w * h),
        Vec::with_capacity(w * h),
        Vec::with_capacity(w * h),
    ];
    let mut nx = Vec::with_capacity(w * h);
    let mut ny = Vec::with_capacity(w * h);
    for t in mip.texels.chunks_exact(CHANNELS) {
        let [l, a, b] = oklab(lut[t[0] as usize], lut[t[1] as usize], lut[t[2] as usize]);
        lab[0].push(l);
        lab[1].push(a);
        lab[2].push(b);
        nx.push(t[4] as f32 / 255.0 * 2.0 - 1.0);
        ny.push(t[5] as f32 / 255.0 * 2.0 - 1.0);
    }
    let mut out = Vec::with_capacity(STATS_DIM);
    for c in &lab {
        out.extend(moments(c));
    }
    let [l, _, _] = lab;
    let luminance = Plane { w, h, v: l };
    out.extend(gabor_energies(&luminance));
    out.extend(radial_spectrum(&luminance));
    let nx = Plane { w, h, v: nx };
    let ny = Plane { w, h, v: ny };
    out.extend(normal_stats(&nx, &ny));
    out
}

/// Linear sRGB → Oklab (Björn Ottosson's matrices).
fn oklab(r: f32, g: f32, b: f32) -> [f32; 3] {
    let l = 0.412_221_47 * r + 0.536_332_55 * g + 0.051_445_995 * b;
    let m = 0.211_903_5 * r + 0.680_699_5 * g + 0.107_396_96 * b;
    let s = 0.088_302_46 * r + 0.281_718_85 * g + 0.629_978_7 * b;
    let (l, m, s) = (l.cbrt(), m.cbrt(), s.cbrt());
    [
        0.210_454_26 * l + 0.793_617_8 * m - 0.004_072_047 * s,
        1.977_998_5 * l - 2.428_592_2 * m + 0.450_593_7 * s,
        0.025_904_037 * l + 0.782_771_77 * m - 0.808_675_77 * s,
    ]
}

/// Mean, standard deviation and skewness (0 for a constant signal, clamped to ±10).
fn moments(v: &[f32]) -> [f32; 3] {
    let n = v.len().max(1) as f64;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
    let (mut m2, mut m3) = (0.0, 0.0);
    for &x in v {
        let d = x as f64 - mean;
        m2 += d * d;
        m3 += d * d * d;
    }
    let sd = (m2 / n).sqrt();
    let skew = if sd > 1e-6 {
        (m3 / n / sd.powi(3)).clamp(-10.0, 10.0)
    } else {
        0.0
    };
    [mean as f32, sd as f32, skew as f32]
}

/// `ln(1e-9 + mean |Gabor response|²)` per scale (outer) and orientation (inner).
fn gabor_energies(luminance: &Plane) -> Vec<f32> {
    let kernels: Vec<(Vec<f32>, Vec<f32>)> = (0..GABOR_ORIENTATIONS)
        .map(|k| gabor_kernel(k as f32 * std::f32::consts::PI / GABOR_ORIENTATIONS as f32))
        .collect();
    let side = (2 * GABOR_RADIUS + 1) as usize;
    let mut out = Vec::with_capacity(GABOR_SCALES * GABOR_ORIENTATIONS);
    let mut level = luminance.clone();
    for scale in 0..GABOR_SCALES {
        if scale > 0 {
            level = level.downsample();
        }
        for (re, im) in &kernels {
            let mut energy = 0.0f64;
            for y in 0..level.h as isize {
                for x in 0..level.w as isize {
                    let (mut sr, mut si) = (0.0f32, 0.0f32);
                    for ky in -GABOR_RADIUS..=GABOR_RADIUS {
                        let row = (ky + GABOR_RADIUS) as usize * side;
                        for kx in -GABOR_RADIUS..=GABOR_RADIUS {
                            let p = level.at(x + kx, y + ky);
                            let i = row + (kx + GABOR_RADIUS) as usize;
                            sr += re[i] * p;
                            si += im[i] * p;
                        }
                    }
                    energy += (sr * sr + si * si) as f64;
                }
            }
            let mean = energy / (level.w * level.h) as f64;
            out.push((1e-9 + mean).ln() as f32);
        }
    }
    out
}

/// Real and imaginary taps of a Gabor filter at orientation `theta`, the real part made
/// DC-free (a flat image gives no response).
fn gabor_kernel(theta: f32) -> (Vec<f32>, Vec<f32>) {
    let (s, c) = theta.sin_cos();
    let mut gauss = Vec::new();
    let mut re = Vec::new();
    let mut im = Vec::new();
    for y in -GABOR_RADIUS..=GABOR_RADIUS {
        for x in -GABOR_RADIUS..=GABOR_RADIUS {
            let (xf, yf) = (x as f32, y as f32);
            let g = (-(xf * xf + yf * yf) / (2.0 * GABOR_SIGMA * GABOR_SIGMA)).exp();
            let phase = 2.0 * std::f32::consts::PI * (xf * c + yf * s) / GABOR_WAVELENGTH;
            gauss.push(g);
            re.push(g * phase.cos());
            im.push(g * phase.sin());
        }
    }
    let norm: f32 = gauss.iter().sum();
    let dc = re.iter().sum::<f32>() / norm;
    for (r, g) in re.iter_mut().zip(&gauss) {
        *r = (*r - dc * g) / norm;
    }
    for i in im.iter_mut() {
        *i /= norm;
    }
    (re, im)
}

/// Resample a line of `len` samples to `n` samples: box average when shrinking, linear interpolation with wrap when enlarging.
fn resample_axis(src: &[f32], len: usize, n: usize) -> Vec<f32> {
    if len >= n {
        (0..n)
            .map(|i| {
                let a = i * len / n;
                let b = ((i + 1) * len / n).max(a + 1);
                src[a..b].iter().sum::<f32>() / (b - a) as f32
            })
            .collect()
    } else {
        (0..n)
            .map(|i| {
                let pos = (i as f32 + 0.5) * len as f32 / n as f32 - 0.5;
                let f = pos.floor();
                let t = pos - f;
                let i0 = (f as isize).rem_euclid(len as isize) as usize;
                let i1 = (i0 + 1) % len;
                src[i0] * (1.0 - t) + src[i1] * t
            })
            .collect()
    }
}

/// Band fractions of L's power spectrum (see the module docs), as log₁₀(fraction + 1e-6).
fn radial_spectrum(luminance: &Plane) -> Vec<f32> {
    const N: usize = SPECTRUM_SIZE;
    // Resample rows, then columns, to N × N.
    let mut rows = Vec::with_capacity(N * luminance.h);
    for y in 0..luminance.h {
        rows.extend(resample_axis(
            &luminance.v[y * luminance.w..(y + 1) * luminance.w],
            luminance.w,
            N,
        ));
    }
    let mut img = vec![0f32; N * N];
    let mut column = vec![0f32; luminance.h];
    for x in 0..N {
        for (y, c) in column.iter_mut().enumerate() {
            *c = rows[y * N + x];
        }
        for (y, v) in resample_axis(&column, luminance.h, N)
            .into_iter()
            .enumerate()
        {
            img[y * N + x] = v;
        }
    }
    let mean = img.iter().sum::<f32>() / (N * N) as f32;
    for v in &mut img {
        *v -= mean;
    }
    // Separable DFT: rows (real → complex), then columns.
    let (cos, sin): (Vec<f32>, Vec<f32>) = (0..N)
        .map(|k| {
            let a = 2.0 * std::f32::consts::PI * k as f32 / N as f32;
            (a.cos(), a.sin())
        })
        .unzip();
    let mut re = vec![0f32; N * N];
    let mut im = vec![0f32; N * N];
    for y in 0..N {
        for u in 0..N {
            let (mut sr, mut si) = (0.0, 0.0);
            for x in 0..N {
                let k = (u * x) % N;
                let p = img[y * N + x];
                sr += p * cos[k];
                si -= p * sin[k];
            }
            re[y * N + u] = sr;
            im[y * N + u] = si;
        }
    }
    let mut bands = [0f64; SPECTRUM_BANDS];
    let mut total = 0f64;
    for u in 0..N {
        for v in 0..N {
            let (mut sr, mut si) = (0.0f32, 0.0f32);
            for y in 0..N {
                let k = (v * y) % N;
                let (a, b) = (re[y * N + u], im[y * N + u]);
                // (a + ib)(cos − i sin)
                sr += a * cos[k] + b * sin[k];
                si += b * cos[k] - a * sin[k];
            }
            let fu = if u <= N / 2 { u } else { N - u } as f32;
            let fv = if v <= N / 2 { v } else { N - v } as f32;
            let r = (fu * fu + fv * fv).sqrt();
            if r < 1.0 {
                continue; // DC
            }
            let power = (sr * sr + si * si) as f64;
            let band = (r.log2().floor() as usize).min(SPECTRUM_BANDS - 1);
            bands[band] += power;
            total += power;
        }
    }
    bands
        .iter()
        .map(|&p| {
            let frac = if total > 0.0 { p / total } else { 0.0 };
            (frac + 1e-6).log10() as f32
        })
        .collect()
}

/// Standard deviation of X and Y, mean tilt and RMS wrapped gradient of the normal.
fn normal_stats(nx: &Plane, ny: &Plane) -> [f32; 4] {
    let [_, sx, _] = moments(&nx.v);
    let [_, sy, _] = moments(&ny.v);
    let n = nx.v.len().max(1) as f64;
    let tilt =
        nx.v.iter()
            .zip(&ny.v)
            .map(|(&x, &y)| ((x * x + y * y) as f64).sqrt())
            .sum::<f64>()
            / n;
    let mut grad = 0.0f64;
    for y in 0..nx.h as isize {
        for x in 0..nx.w as isize {
            for p in [nx, ny] {
                let dx = p.at(x + 1, y) - p.at(x, y);
                let dy = p.at(x, y + 1) - p.at(x, y);
                grad += (dx * dx + dy * dy) as f64;
            }
        }
    }
    [sx, sy, tilt as f32, (grad / n).sqrt() as f32]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_the_dimensions() {
        let b = blocks();
        assert_eq!(b.iter().map(|b| b.len).sum::<usize>(), STATS_DIM);
        assert_eq!(b.last().map(|b| b.start + b.len), Some(STATS_DIM));
    }

    #[test]
    fn oklab_of_white_and_black() {
        let [l, a, b] = oklab(1.0, 1.0, 1.0);
        assert!((l - 1.0).abs() < 1e-3 && a.abs() < 1e-3 && b.abs() < 1e-3);
        assert_eq!(oklab(0.0, 0.0, 0.0), [0.0, 0.0, 0.0]);
    }

    #[test]
    fn gabor_sees_orientation_and_ignores_dc() {
        let (w, h) = (32, 32);
        // Vertical stripes (vary along x) with a 4-texel period.
        let stripes = Plane {
            w,
            h,
            v: (0..w * h)
                .map(|i| if (i % w) % 4 < 2 { 0.8 } else { 0.2 })
                .collect(),
        };
        let e = gabor_energies(&stripes);
        // Scale 0: orientation 0° (carrier along x) dominates 90°.
        assert!(e[0] > e[2] + 5.0, "{e:?}");
        let flat = Plane {
            w,
            h,
            v: vec![0.5; w * h],
        };
        assert!(gabor_energies(&flat).iter().all(|&x| x < -15.0));
    }

    #[test]
    fn spectrum_finds_the_stripe_frequency() {
        let n = 64;
        // 8 cycles per texture → band [8, 16).
        let plane = Plane {
            w: n,
            h: n,
            v: (0..n * n)
                .map(|i| (2.0 * std::f32::consts::PI * 8.0 * (i % n) as f32 / n as f32).sin())
                .collect(),
        };
        let s = radial_spectrum(&plane);
        assert!(s[3] > -0.01, "{s:?}");
        assert!(s[0] < -3.0 && s[4] < -3.0, "{s:?}");
    }

    #[test]
    fn constant_dimensions_normalise_to_zero() {
        let mut v = vec![vec![1.0; STATS_DIM], vec![1.0; STATS_DIM]];
        v[1][0] = 3.0;
        normalise(&mut v);
        let s = 1.0 / 3.0; // oklab_moments has 9 dims
        assert!((v[0][0] + s).abs() < 1e-6 && (v[1][0] - s).abs() < 1e-6);
        assert!(v.iter().all(|x| x[1..].iter().all(|&d| d == 0.0)));
    }
}
