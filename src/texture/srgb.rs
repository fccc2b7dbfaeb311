//! The sRGB transfer function, the one implementation every part of the project uses
//! (texture loading and mip chains, embeddings and contact sheets, the procedural scenes'
//! colours and textures).
//!
//! [`srgb_to_linear`] and [`linear_to_srgb`] evaluate the exact piecewise curve in f64
//! with IEEE `+ − × ÷` only (the power `2.4` as `(x¹²)^(1/5)`, `1/2.4` as `(x⁵)^(1/12)`,
//! roots by Newton iteration), never the platform's `libm`, so every platform gets the
//! same bits. Bulk conversions go through tables built from them: [`decode_u8`] (8-bit
//! code → linear) and [`SrgbEncoder`] (linear → 8-bit code by the midpoints between
//! codes, the same code as rounding [`linear_to_srgb`]).

use std::sync::OnceLock;

/// `x^(1/n)` for `x ≥ 0` and `n ≥ 1` by Newton iteration (pure IEEE arithmetic).
///
/// The start value divides the exponent bits by `n` (within a few percent of the root);
/// after the first step Newton's iterates of the convex `yⁿ − x` approach the root from
/// above, so iteration stops as soon as they stop decreasing.
fn root(x: f64, n: u32) -> f64 {
    if x <= 0.0 || n <= 1 {
        return x.max(0.0);
    }
    let one = 1.0f64.to_bits() as i64;
    let guess = f64::from_bits((one + (x.to_bits() as i64 - one) / i64::from(n)) as u64);
    let step = |y: f64| {
        let mut p = 1.0;
        for _ in 1..n {
            p *= y;
        }
        (f64::from(n - 1) * y + x / p) / f64::from(n)
    };
    let mut y = step(guess);
    for _ in 0..100 {
        let next = step(y);
        if next >= y {
            break;
        }
        y = next;
    }
    y
}

/// `x^k` for a small non-negative integer `k` by repeated multiplication.
fn pow_int(x: f64, k: u32) -> f64 {
    let mut p = 1.0;
    for _ in 0..k {
        p *= x;
    }
    p
}

/// Decodes an sRGB-encoded value in `[0, 1]` to linear light.
pub fn srgb_to_linear(c: f32) -> f32 {
    let c = f64::from(c.clamp(0.0, 1.0));
    let l = if c <= 0.04045 {
        c / 12.92
    } else {
        // ((c + 0.055) / 1.055)^2.4 = (x^12)^(1/5)
        root(pow_int((c + 0.055) / 1.055, 12), 5)
    };
    l as f32
}

/// Encodes a linear value in `[0, 1]` with the sRGB transfer function.
pub fn linear_to_srgb(l: f32) -> f32 {
    let l = f64::from(l.clamp(0.0, 1.0));
    let c = if l <= 0.003_130_8 {
        l * 12.92
    } else {
        // 1.055 · l^(1/2.4) − 0.055, with l^(5/12) = (l^5)^(1/12)
        1.055 * root(pow_int(l, 5), 12) - 0.055
    };
    c as f32
}

/// Fast, exact linear → 8-bit sRGB encoder built on a 255-entry threshold table.
///
/// Returns the same code as rounding [`linear_to_srgb`] to 8 bits at the midpoints
/// of the sRGB code values, with no transcendental function per call; a value exactly on
/// a midpoint (the mean of two neighbouring codes in the curve's linear segment can be)
/// takes the lower code.
#[derive(Clone, Debug)]
pub struct SrgbEncoder {
    /// `thresholds[i]`: the linear value halfway (in sRGB) between codes `i` and `i + 1`.
    thresholds: Vec<f32>,
    /// `start[b]`: the code of the linear value `b / BUCKETS` (the search starts there).
    start: Vec<u8>,
}

impl Default for SrgbEncoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SrgbEncoder {
    /// Buckets of the start table over \[0, 1\): fine enough that the darkest codes, a
    /// few 1e-4 apart in linear light, take about one step each.
    const BUCKETS: usize = 4096;

    /// Builds the threshold table.
    pub fn new() -> Self {
        let thresholds: Vec<f32> = (0..255)
            .map(|i| srgb_to_linear((i as f32 + 0.5) / 255.0))
            .collect();
        let start = (0..Self::BUCKETS)
            .map(|b| {
                let x = b as f32 / Self::BUCKETS as f32;
                thresholds.partition_point(|&t| t < x) as u8
            })
            .collect();
        Self { thresholds, start }
    }

    /// The 255 thresholds: entry `i` is the linear value halfway (in sRGB) between codes
    /// `i` and `i + 1`; a value's code is the number of thresholds below it (the tonemap
    /// pass's compute entry encodes with the same table).
    pub fn thresholds(&self) -> &[f32] {
        &self.thresholds
    }

    /// Encodes one linear channel to an 8-bit sRGB code: the number of thresholds below
    /// `linear`, found from the bucket's start code in a step or two.
    pub fn encode(&self, linear: f32) -> u8 {
        if linear.is_nan() {
            // No threshold lies below NaN.
            return 0;
        }
        let t = &self.thresholds;
        let bucket = (linear * Self::BUCKETS as f32).clamp(0.0, (Self::BUCKETS - 1) as f32);
        let mut code = self.start[bucket as usize] as usize;
        while code > 0 && t[code - 1] >= linear {
            code -= 1;
        }
        while code < t.len() && t[code] < linear {
            code += 1;
        }
        code as u8
    }
}

/// The linear value of an 8-bit sRGB code (a table of [`srgb_to_linear`]).
pub fn decode_u8(code: u8) -> f32 {
    static TABLE: OnceLock<[f32; 256]> = OnceLock::new();
    TABLE.get_or_init(|| std::array::from_fn(|v| srgb_to_linear(v as f32 / 255.0)))[code as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_code() {
        let enc = SrgbEncoder::new();
        for i in 0..=255u32 {
            let c = i as f32 / 255.0;
            let l = srgb_to_linear(c);
            let reference = ((f64::from(c) + 0.055) / 1.055).powf(2.4);
            if c > 0.04045 {
                assert!((f64::from(l) - reference).abs() < 1e-6);
            }
            assert_eq!(enc.encode(l), i as u8);
            assert_eq!(decode_u8(i as u8), l);
            assert!((linear_to_srgb(l) - c).abs() < 1e-5);
        }
    }

    #[test]
    fn the_start_table_finds_what_a_full_search_finds() {
        let enc = SrgbEncoder::new();
        let full = |x: f32| enc.thresholds.partition_point(|&t| t < x) as u8;
        let mut values: Vec<f32> = (0..=200_000).map(|i| i as f32 / 200_000.0).collect();
        // Every threshold, and its neighbouring floats.
        for &t in &enc.thresholds {
            values.extend([
                t,
                f32::from_bits(t.to_bits() - 1),
                f32::from_bits(t.to_bits() + 1),
            ]);
        }
        values.extend([
            -1.0,
            0.0,
            1.0,
            2.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ]);
        for x in values {
            assert_eq!(enc.encode(x), full(x), "{x:e}");
        }
    }

    #[test]
    fn hand_computed_values_and_range() {
        // 0.5 encoded: ((0.5 + 0.055) / 1.055)^2.4 = 0.21404114…; the linear segment below.
        assert!((srgb_to_linear(0.5) - 0.214_041_14).abs() < 1e-7);
        assert!((srgb_to_linear(0.04) - 0.04 / 12.92).abs() < 1e-9);
        assert!((linear_to_srgb(0.214_041_14) - 0.5).abs() < 1e-6);
        assert!((linear_to_srgb(0.002) - 0.002 * 12.92).abs() < 1e-9);
        // Clamped to [0, 1] on both sides.
        assert_eq!(srgb_to_linear(-1.0), 0.0);
        assert_eq!(linear_to_srgb(2.0), 1.0);
        let enc = SrgbEncoder::new();
        assert_eq!((enc.encode(-0.5), enc.encode(1.5)), (0, 255));
        // The encoder's midpoints: just below and above the one between codes 127 and 128.
        let mid = srgb_to_linear(127.5 / 255.0);
        assert_eq!(
            (enc.encode(mid * 0.9999), enc.encode(mid * 1.0001)),
            (127, 128)
        );
    }
}
