//! Deterministic procedural texture helpers for the built-in scenes.
//!
//! Owns the small toolbox the scene generators paint their textures with: integer
//! hashing, tileable value and gradient noise, fBm, cellular (Voronoi) noise,
//! a platform-independent `sin`/`cos`, sRGB colour constants (through
//! [`crate::texture::srgb`]) and height-field → normal-map conversion (tangent space, OpenGL convention: +X right, +Y up in the image).
//!
//! Everything here is a pure function of its arguments. Results depend only on IEEE
//! `+ − × ÷ √`, `floor` and integer arithmetic, never on the platform's `libm`
//! (`sin`, `pow`, `exp` are replaced by polynomial or Newton evaluations), so the
//! same seed gives the same bytes on every platform.
//!
//! Noise functions take texture coordinates `(u, v)` and an integer lattice frequency
//! per axis; the result is periodic with period 1 in both `u` and `v`, so textures
//! built from it tile seamlessly.

use crate::texture::srgb::srgb_to_linear;

/// Mixes a 32-bit integer into a well-distributed 32-bit hash (Wellons' `lowbias32`).
pub fn hash_u32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// Hash of a 2D integer lattice point under `seed`.
pub fn hash2(x: i32, y: i32, seed: u32) -> u32 {
    hash_u32((x as u32) ^ hash_u32((y as u32) ^ hash_u32(seed ^ 0x9e37_79b9)))
}

/// Hash of a string (FNV-1a, then mixed), handy for deriving per-item seeds from names.
pub fn hash_str(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    hash_u32(h)
}

/// Derives a 32-bit seed from a 64-bit user seed and a salt (e.g. a material's name hash).
pub fn derive_seed(seed: u64, salt: u32) -> u32 {
    let lo = seed as u32;
    let hi = (seed >> 32) as u32;
    hash_u32(lo ^ hash_u32(hi ^ hash_u32(salt)))
}

/// Maps a hash to a uniformly distributed `f32` in `[0, 1)` (24 bits of precision).
pub fn unit_f32(h: u32) -> f32 {
    (h >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// Linear interpolation `a + (b − a)·t`.
pub fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

/// Component-wise [`lerp`] of two RGB triples.
pub fn lerp3(a: [f32; 3], b: [f32; 3], t: f32) -> [f32; 3] {
    [
        lerp(a[0], b[0], t),
        lerp(a[1], b[1], t),
        lerp(a[2], b[2], t),
    ]
}

/// Scales an RGB triple.
pub fn scale3(a: [f32; 3], s: f32) -> [f32; 3] {
    [a[0] * s, a[1] * s, a[2] * s]
}

/// Hermite smoothstep from `e0` to `e1` (also valid for `e0 > e1`, giving a falling edge).
pub fn smoothstep(e0: f32, e1: f32, x: f32) -> f32 {
    let t = ((x - e0) / (e1 - e0)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// Quintic fade curve `6t⁵ − 15t⁴ + 10t³` used by the lattice noises.
pub fn fade(t: f32) -> f32 {
    t * t * t * (t * (t * 6.0 - 15.0) + 10.0)
}

/// Splits a coordinate into a wrapped lattice cell (mod `freq`) and the fraction in it.
fn lattice(x: f32, freq: u32) -> (i32, f32) {
    let f = x.floor();
    let n = freq.max(1) as i32;
    ((f as i64).rem_euclid(i64::from(n)) as i32, x - f)
}

/// Wraps a lattice index into `[0, freq)`.
fn wrap(i: i32, freq: u32) -> i32 {
    i.rem_euclid(freq.max(1) as i32)
}

/// Tileable value noise in `[0, 1]`: `freq` lattice cells per texture repeat on each axis.
pub fn value_noise(u: f32, v: f32, freq: [u32; 2], seed: u32) -> f32 {
    let (ix, fx) = lattice(u * freq[0] as f32, freq[0]);
    let (iy, fy) = lattice(v * freq[1] as f32, freq[1]);
    let jx = wrap(ix + 1, freq[0]);
    let jy = wrap(iy + 1, freq[1]);
    let a = unit_f32(hash2(ix, iy, seed));
    let b = unit_f32(hash2(jx, iy, seed));
    let c = unit_f32(hash2(ix, jy, seed));
    let d = unit_f32(hash2(jx, jy, seed));
    let sx = fade(fx);
    let sy = fade(fy);
    lerp(lerp(a, b, sx), lerp(c, d, sx), sy)
}

/// The 8 unit gradient directions used by [`gradient_noise`].
const GRADIENTS: [[f32; 2]; 8] = [
    [1.0, 0.0],
    [
        std::f32::consts::FRAC_1_SQRT_2,
        std::f32::consts::FRAC_1_SQRT_2,
    ],
    [0.0, 1.0],
    [
        -std::f32::consts::FRAC_1_SQRT_2,
        std::f32::consts::FRAC_1_SQRT_2,
    ],
    [-1.0, 0.0],
    [
        -std::f32::consts::FRAC_1_SQRT_2,
        -std::f32::consts::FRAC_1_SQRT_2,
    ],
    [0.0, -1.0],
    [
        std::f32::consts::FRAC_1_SQRT_2,
        -std::f32::consts::FRAC_1_SQRT_2,
    ],
];

/// Tileable gradient (Perlin-style) noise, roughly in `[−1, 1]`, zero on lattice points.
pub fn gradient_noise(u: f32, v: f32, freq: [u32; 2], seed: u32) -> f32 {
    let (ix, fx) = lattice(u * freq[0] as f32, freq[0]);
    let (iy, fy) = lattice(v * freq[1] as f32, freq[1]);
    let jx = wrap(ix + 1, freq[0]);
    let jy = wrap(iy + 1, freq[1]);
    let dot = |cx: i32, cy: i32, dx: f32, dy: f32| {
        let g = GRADIENTS[(hash2(cx, cy, seed) >> 29) as usize];
        g[0] * dx + g[1] * dy
    };
    let a = dot(ix, iy, fx, fy);
    let b = dot(jx, iy, fx - 1.0, fy);
    let c = dot(ix, jy, fx, fy - 1.0);
    let d = dot(jx, jy, fx - 1.0, fy - 1.0);
    let sx = fade(fx);
    let sy = fade(fy);
    // The raw range is about ±0.75; stretch it to roughly ±1.
    lerp(lerp(a, b, sx), lerp(c, d, sx), sy) * 1.35
}

/// Tileable fractal Brownian motion of [`gradient_noise`], normalised to roughly `[−1, 1]`.
///
/// Octave `k` uses `freq · 2ᵏ` cells and amplitude `gainᵏ`; each octave has its own seed.
pub fn fbm(u: f32, v: f32, freq: [u32; 2], octaves: u32, gain: f32, seed: u32) -> f32 {
    let mut sum = 0.0;
    let mut norm = 0.0;
    let mut amp = 1.0;
    let mut f = freq;
    for k in 0..octaves.max(1) {
        sum += amp * gradient_noise(u, v, f, hash_u32(seed.wrapping_add(k)));
        norm += amp;
        amp *= gain;
        f = [f[0].saturating_mul(2), f[1].saturating_mul(2)];
    }
    sum / norm
}

/// The result of [`cellular`]: distances to the nearest and second-nearest feature points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cellular {
    /// Distance to the nearest feature point, in cell units.
    pub f1: f32,
    /// Distance to the second-nearest feature point, in cell units.
    pub f2: f32,
    /// A hash identifying the nearest cell (stable across tile repeats).
    pub id: u32,
    /// Vector from the sample to the nearest feature point, in cell units.
    pub to_nearest: [f32; 2],
}

/// Tileable cellular (Worley/Voronoi) noise with `freq` cells per repeat on each axis.
///
/// `jitter` in `[0, 1]` scales how far feature points stray from the cell centres
/// (0 gives a regular grid).
pub fn cellular(u: f32, v: f32, freq: [u32; 2], jitter: f32, seed: u32) -> Cellular {
    let x = u * freq[0] as f32;
    let y = v * freq[1] as f32;
    let fx0 = x.floor();
    let fy0 = y.floor();
    let (ix, iy) = (fx0 as i32, fy0 as i32);
    let (fx, fy) = (x - fx0, y - fy0);
    let mut best = Cellular {
        f1: f32::MAX,
        f2: f32::MAX,
        id: 0,
        to_nearest: [0.0, 0.0],
    };
    for dy in -1..=1 {
        for dx in -1..=1 {
            let cx = wrap(ix + dx, freq[0]);
            let cy = wrap(iy + dy, freq[1]);
            let h = hash2(cx, cy, seed);
            let px = dx as f32 + 0.5 + jitter * (unit_f32(h) - 0.5);
            let py = dy as f32 + 0.5 + jitter * (unit_f32(hash_u32(h)) - 0.5);
            let d = [px - fx, py - fy];
            let dist = (d[0] * d[0] + d[1] * d[1]).sqrt();
            if dist < best.f1 {
                best.f2 = best.f1;
                best.f1 = dist;
                best.id = h;
                best.to_nearest = d;
            } else if dist < best.f2 {
                best.f2 = dist;
            }
        }
    }
    best
}

/// Tileable short straight scratches: at most one random segment per lattice cell
/// (`freq` cells per repeat, a fraction `density` of cells scratched). Returns the
/// scratch coverage in `[0, 1]`; `width` is the half-width in cell units.
pub fn scratches(u: f32, v: f32, freq: u32, density: f32, width: f32, seed: u32) -> f32 {
    let (ix, fx) = lattice(u * freq as f32, freq);
    let (iy, fy) = lattice(v * freq as f32, freq);
    let h = hash2(ix, iy, seed);
    if unit_f32(h) >= density {
        return 0.0;
    }
    let (s, c) = sin_cos_turns(unit_f32(hash_u32(h ^ 0x51)) * 0.5);
    let half_len = 0.15 + 0.3 * unit_f32(hash_u32(h ^ 0xa7));
    let (dx, dy) = (fx - 0.5, fy - 0.5);
    let along = dx * c + dy * s;
    let across = (dy * c - dx * s).abs();
    if along.abs() > half_len {
        return 0.0;
    }
    // Thinner towards the ends.
    let taper = 1.0 - along.abs() / half_len;
    1.0 - smoothstep(0.0, width * (0.3 + 0.7 * taper), across)
}

/// `(sin 2πt, cos 2πt)` for an angle `t` in turns, evaluated with polynomials in `f64`
/// so the result is bit-identical on every platform (absolute error below 1e-7).
pub fn sin_cos_turns(t: f32) -> (f32, f32) {
    let t = f64::from(t);
    let r = t - t.round(); // [-0.5, 0.5]
    let q = (r * 4.0).round(); // quadrant in {-2, …, 2}
    let a = (r - q * 0.25) * std::f64::consts::TAU; // [-π/4, π/4]
    let a2 = a * a;
    let s = a
        * (1.0
            - a2 / 6.0
                * (1.0 - a2 / 20.0 * (1.0 - a2 / 42.0 * (1.0 - a2 / 72.0 * (1.0 - a2 / 110.0)))));
    let c = 1.0
        - a2 / 2.0
            * (1.0
                - a2 / 12.0
                    * (1.0
                        - a2 / 30.0 * (1.0 - a2 / 56.0 * (1.0 - a2 / 90.0 * (1.0 - a2 / 132.0)))));
    let (s, c) = match (q as i64).rem_euclid(4) {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    };
    (s as f32, c as f32)
}

/// Linear RGB of an sRGB colour written as `0xRRGGBB`.
pub fn srgb_hex(rgb: u32) -> [f32; 3] {
    let ch = |shift: u32| srgb_to_linear(((rgb >> shift) & 0xff) as f32 / 255.0);
    [ch(16), ch(8), ch(0)]
}

/// Quantises a value in `[0, 1]` to 8 bits (round to nearest, clamped).
pub fn unorm8(x: f32) -> u8 {
    (x.clamp(0.0, 1.0) * 255.0 + 0.5) as u8
}

/// Converts a tileable height field to a tangent-space normal map (OpenGL convention:
/// +X right, +Y up in the image, +Z out of the surface), encoded as `n · 0.5 + 0.5` in
/// 8-bit RGB.
///
/// `heights` is row-major, `width × height` samples, row 0 at the top of the image.
/// Slopes are taken with wrapped central differences; `strength` converts height
/// units into texture-coordinate units (e.g. `1 / tile_size` for heights in metres on a
/// texture that covers `tile_size` metres).
///
/// # Panics
/// If `heights.len() != width * height`.
pub fn normal_map_from_height(
    heights: &[f32],
    width: usize,
    height: usize,
    strength: f32,
) -> Vec<[u8; 3]> {
    assert_eq!(
        heights.len(),
        width * height,
        "height field size must match its dimensions"
    );
    let mut out = Vec::with_capacity(heights.len());
    let sx = strength * width as f32 * 0.5;
    let sy = strength * height as f32 * 0.5;
    for y in 0..height {
        let up = (y + height - 1) % height;
        let down = (y + 1) % height;
        for x in 0..width {
            let left = (x + width - 1) % width;
            let right = (x + 1) % width;
            // dh/du (u grows to the right) and dh/dv (v grows downwards).
            let dhdu = (heights[y * width + right] - heights[y * width + left]) * sx;
            let dhdv = (heights[down * width + x] - heights[up * width + x]) * sy;
            // "Up" in the image is −v, so the +Y component is +dh/dv.
            let n = [-dhdu, dhdv, 1.0];
            let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
            out.push([
                unorm8(n[0] / len * 0.5 + 0.5),
                unorm8(n[1] / len * 0.5 + 0.5),
                unorm8(n[2] / len * 0.5 + 0.5),
            ]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sin_cos_matches_std() {
        for i in -400..=400 {
            let t = i as f32 / 97.0;
            let (s, c) = sin_cos_turns(t);
            let a = f64::from(t) * std::f64::consts::TAU;
            assert!((f64::from(s) - a.sin()).abs() < 1e-6, "sin at {t}");
            assert!((f64::from(c) - a.cos()).abs() < 1e-6, "cos at {t}");
        }
    }

    #[test]
    fn noise_tiles() {
        for i in 0..50 {
            let v = i as f32 / 50.0;
            for f in [[1, 1], [3, 7], [16, 2]] {
                let a = fbm(0.0, v, f, 4, 0.5, 7);
                let b = fbm(1.0, v, f, 4, 0.5, 7);
                assert!((a - b).abs() < 1e-5);
                let a = value_noise(v, 0.0, f, 3);
                let b = value_noise(v, 1.0, f, 3);
                assert!((a - b).abs() < 1e-5);
                let a = cellular(v, 0.0, f, 0.8, 5).f1;
                let b = cellular(v, 1.0, f, 0.8, 5).f1;
                assert!((a - b).abs() < 1e-4);
            }
        }
    }

    #[test]
    fn normal_map_convention() {
        // A ramp falling towards the top of the image faces up: normals tilt towards +Y.
        let (w, h) = (8, 8);
        let heights: Vec<f32> = (0..h)
            .flat_map(|y| (0..w).map(move |_| y as f32 * 0.01))
            .collect();
        let n = normal_map_from_height(&heights, w, h, 1.0);
        let mid = n[4 * w + 4];
        assert!(mid[1] > 128, "green should point up: {mid:?}");
        assert_eq!(mid[0], 128);
    }
}
