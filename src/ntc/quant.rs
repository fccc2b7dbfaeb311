//! Latent quantisation and packing, and the f16 conversion of decoder weights.
//!
//! # Latent codes
//!
//! Latents live in the fixed, symmetric range \[−1, 1\] (training clamps them there), so
//! no per-grid range needs storing. With `b` bits (2, 4 or 8) and `L = 2^b − 1` levels
//! above zero, a code `n ∈ 0..=L` stands for
//!
//! ```text
//! value(n) = (f32(n) / f32(L)) * 2.0 − 1.0        // evaluated in f32, in this order
//! ```
//!
//! so the levels are evenly spaced with step `q = 2 / L` and include both −1 and 1 (and,
//! `L` being odd, not 0). Quantising is `n = round((clamp(v, −1, 1) + 1) / 2 · L)`
//! (round half away from zero; NaN becomes code 0). Training adds uniform noise of
//! `±q/2` to simulate exactly this rounding.
//!
//! # Packing
//!
//! Each grid texel's `F` codes are packed into `⌈F·b / 32⌉` little-endian `u32` words:
//! feature `i` occupies bits `i·b .. (i+1)·b` of the texel's bit string, word
//! `⌊i·b / 32⌋`, shift `(i·b) mod 32`. Since `b` divides 32 a code never straddles two
//! words. For the default 16 features at 4 bits a texel is one `vec2<u32>` with feature
//! `i` in nibble `i`, the lowest nibble of the first word first; at 8 bits a texel of 16
//! features is a `vec4<u32>`, at 2 bits a single `u32`. Unused high bits of a texel's
//! last word (when `F·b` is not a multiple of 32) are zero. Texels follow each other in
//! [`LatentLayout`](crate::ntc::model::LatentLayout) order.
//!
//! # Decoder weights
//!
//! Decoder parameters are stored as IEEE binary16 (`half::f16`, round to nearest even).
//! Non-finite values and values beyond ±65504 are refused rather than turned into
//! infinities.

use half::f16;

use crate::ntc::model::LatentBits;

/// Values that cannot be quantised or packed as asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QuantError {
    /// A latent array that is not a whole number of texels.
    #[error("a latent array of {values} values is not a whole number of {features}-feature texels")]
    FeatureCount {
        /// Number of values given.
        values: usize,
        /// Features per texel.
        features: u32,
    },
    /// A packed array that is not a whole number of texels.
    #[error(
        "a packed latent array of {words} words is not a whole number of {words_per_texel}-word texels"
    )]
    WordCount {
        /// Number of words given.
        words: usize,
        /// Words per texel.
        words_per_texel: usize,
    },
    /// A decoder parameter that binary16 cannot hold.
    #[error("decoder parameter {index} = {value} is not representable in f16")]
    NotF16 {
        /// Index in the flat parameter array.
        index: usize,
        /// The value.
        value: f32,
    },
}

/// The largest code, `L = 2^bits − 1`.
pub const fn levels(bits: LatentBits) -> u32 {
    (1 << bits.bits()) - 1
}

/// The quantisation step `q = 2 / L` (the distance between neighbouring levels).
pub fn step(bits: LatentBits) -> f32 {
    2.0 / levels(bits) as f32
}

/// The code of `value`: `round((clamp(value, −1, 1) + 1) / 2 · L)`; NaN gives 0.
pub fn quantize(value: f32, bits: LatentBits) -> u32 {
    let l = levels(bits) as f32;
    // `as` maps NaN to 0 and saturates.
    ((value.clamp(-1.0, 1.0) + 1.0) * 0.5 * l).round() as u32
}

/// The value of code `code` (codes above `L` read as `L`): `(n / L) · 2 − 1` in f32.
pub fn dequantize(code: u32, bits: LatentBits) -> f32 {
    let l = levels(bits);
    (code.min(l) as f32 / l as f32) * 2.0 - 1.0
}

/// Replace every value by the level it quantises to.
pub fn snap(values: &mut [f32], bits: LatentBits) {
    for v in values {
        *v = dequantize(quantize(*v, bits), bits);
    }
}

/// `u32` words per grid texel: `⌈features · bits / 32⌉`.
pub fn words_per_texel(features: u32, bits: LatentBits) -> usize {
    (features as usize * bits.bits() as usize).div_ceil(32)
}

/// Quantise and pack latent values (texel-major, `features` per texel) as documented in
/// the module docs.
pub fn pack_latents(
    values: &[f32],
    features: u32,
    bits: LatentBits,
) -> Result<Vec<u32>, QuantError> {
    let f = features as usize;
    if f == 0 || !values.len().is_multiple_of(f) {
        return Err(QuantError::FeatureCount {
            values: values.len(),
            features,
        });
    }
    let wpt = words_per_texel(features, bits);
    let b = bits.bits() as usize;
    let mut words = vec![0u32; values.len() / f * wpt];
    for (chunk, out) in values.chunks_exact(f).zip(words.chunks_exact_mut(wpt)) {
        for (i, &v) in chunk.iter().enumerate() {
            let bit = i * b;
            if let Some(w) = out.get_mut(bit / 32) {
                *w |= quantize(v, bits) << (bit % 32);
            }
        }
    }
    Ok(words)
}

/// Unpack and dequantise latent values packed by [`pack_latents`].
pub fn unpack_latents(
    words: &[u32],
    features: u32,
    bits: LatentBits,
) -> Result<Vec<f32>, QuantError> {
    let wpt = words_per_texel(features, bits);
    if wpt == 0 || !words.len().is_multiple_of(wpt) {
        return Err(QuantError::WordCount {
            words: words.len(),
            words_per_texel: wpt,
        });
    }
    let b = bits.bits() as usize;
    let mask = levels(bits);
    let mut values = Vec::with_capacity(words.len() / wpt * features as usize);
    for texel in words.chunks_exact(wpt) {
        for i in 0..features as usize {
            let bit = i * b;
            let word = texel.get(bit / 32).copied().unwrap_or(0);
            values.push(dequantize((word >> (bit % 32)) & mask, bits));
        }
    }
    Ok(values)
}

/// Decoder parameters as f16; non-finite values or values beyond ±65504 are an error.
pub fn decoder_to_f16(params: &[f32]) -> Result<Vec<f16>, QuantError> {
    params
        .iter()
        .enumerate()
        .map(|(index, &value)| {
            let h = f16::from_f32(value);
            if h.is_finite() {
                Ok(h)
            } else {
                Err(QuantError::NotF16 { index, value })
            }
        })
        .collect()
}

/// Decoder parameters back from f16 (exact).
pub fn decoder_from_f16(params: &[f16]) -> Vec<f32> {
    params.iter().map(|h| h.to_f32()).collect()
}

/// Round every parameter to the nearest f16 value in place, so that a model evaluates
/// exactly as it will after [`decoder_to_f16`] / [`decoder_from_f16`].
pub fn round_through_f16(params: &mut [f32]) -> Result<(), QuantError> {
    let halves = decoder_to_f16(params)?;
    for (p, h) in params.iter_mut().zip(halves) {
        *p = h.to_f32();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_BITS: [LatentBits; 3] = [LatentBits::Two, LatentBits::Four, LatentBits::Eight];

    #[test]
    fn codes_round_trip_and_cover_the_range() {
        for bits in ALL_BITS {
            let l = levels(bits);
            assert_eq!(dequantize(0, bits), -1.0);
            assert_eq!(dequantize(l, bits), 1.0);
            assert_eq!(dequantize(l + 5, bits), 1.0);
            for n in 0..=l {
                let v = dequantize(n, bits);
                assert_eq!(quantize(v, bits), n, "{bits:?} {n}");
                // The GPU formula, written out.
                assert_eq!(v, (n as f32 / l as f32) * 2.0 - 1.0);
            }
            assert_eq!(quantize(-7.0, bits), 0);
            assert_eq!(quantize(7.0, bits), l);
            assert_eq!(quantize(f32::NAN, bits), 0);
            // Rounding error is at most q/2.
            let q = step(bits);
            for i in 0..=1000 {
                let v = -1.0 + 2.0 * i as f32 / 1000.0;
                let err = (dequantize(quantize(v, bits), bits) - v).abs();
                assert!(err <= q / 2.0 + 1e-6, "{bits:?} {v}: {err}");
            }
        }
        assert_eq!(step(LatentBits::Four), 2.0 / 15.0);
        // The Metal write-up's example: 0.1372 at 4 bits → code 9 → 0.2.
        assert_eq!(quantize(0.1372, LatentBits::Four), 9);
        assert!((dequantize(9, LatentBits::Four) - 0.2).abs() < 1e-6);
    }

    #[test]
    fn snap_is_idempotent() {
        for bits in ALL_BITS {
            let mut v: Vec<f32> = (0..100).map(|i| (i as f32 * 0.37).sin()).collect();
            snap(&mut v, bits);
            let once = v.clone();
            snap(&mut v, bits);
            assert_eq!(v, once);
        }
    }

    #[test]
    fn nibble_layout_is_little_end_first() {
        let values: Vec<f32> = (0..16).map(|n| dequantize(n, LatentBits::Four)).collect();
        let words = pack_latents(&values, 16, LatentBits::Four).expect("pack");
        assert_eq!(words, [0x7654_3210, 0xFEDC_BA98]);
        // One word each: four bytes; four crumbs in its low 8 bits, the rest zero.
        for (codes, bits, word) in [
            ([1u32, 2, 3, 250], LatentBits::Eight, 0xFA03_0201),
            ([3, 0, 1, 2], LatentBits::Two, 0b10_01_00_11),
        ] {
            let values: Vec<f32> = codes.iter().map(|&n| dequantize(n, bits)).collect();
            assert_eq!(pack_latents(&values, 4, bits).expect("pack"), [word]);
        }
    }

    #[test]
    fn pack_round_trips_every_width() {
        for bits in ALL_BITS {
            for features in [4u32, 8, 12, 16, 20, 32] {
                let texels = 5;
                let values: Vec<f32> = (0..texels * features as usize)
                    .map(|i| dequantize((i as u32 * 7) % (levels(bits) + 1), bits))
                    .collect();
                let words = pack_latents(&values, features, bits).expect("pack");
                assert_eq!(words.len(), texels * words_per_texel(features, bits));
                let back = unpack_latents(&words, features, bits).expect("unpack");
                assert_eq!(back, values, "{bits:?} F={features}");
            }
        }
        assert!(pack_latents(&[0.0; 5], 4, LatentBits::Four).is_err());
        assert!(unpack_latents(&[0; 3], 16, LatentBits::Four).is_err());
        assert_eq!(words_per_texel(16, LatentBits::Four), 2);
        assert_eq!(words_per_texel(4, LatentBits::Four), 1);
        assert_eq!(words_per_texel(16, LatentBits::Eight), 4);
    }

    #[test]
    fn f16_round_trip_and_refusals() {
        let params = [0.0f32, 1.0, -0.333, 1e-3, 65504.0, -2.5e-6];
        let h = decoder_to_f16(&params).expect("f16");
        let back = decoder_from_f16(&h);
        for (a, b) in params.iter().zip(&back) {
            assert!((a - b).abs() <= a.abs() * 1e-3 + 1e-7, "{a} {b}");
        }
        let mut rounded = params;
        round_through_f16(&mut rounded).expect("round");
        assert_eq!(rounded.to_vec(), back);
        assert_eq!(
            decoder_to_f16(&[0.0, 1e6]),
            Err(QuantError::NotF16 {
                index: 1,
                value: 1e6
            })
        );
        assert!(decoder_to_f16(&[f32::NAN]).is_err());
    }
}
