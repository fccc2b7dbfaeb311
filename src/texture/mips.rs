//! Mip chains for canonical texture sets.
//!
//! Each level halves width and height independently (floor, minimum 1) with a box filter:
//! a destination texel averages the 2×2 source texels under it, and on an odd-sized axis
//! the last destination row/column also takes the leftover source row/column (a 3-wide
//! footprint with equal weights), so every source texel contributes and a constant image
//! stays exactly constant. Channels are averaged according to their meaning:
//! - base colour and emissive (sRGB-encoded) in linear light, then re-encoded;
//! - alpha, occlusion, roughness and metallic linearly;
//! - normals as vectors: X, Y decoded to \[-1, 1\], Z rebuilt, averaged, renormalised and
//!   X, Y re-encoded.

use super::set::SetMip;
use super::srgb::{SrgbEncoder, decode_u8};
use super::{CHANNELS, Channel, quantize_u8};

/// Build the full mip chain from level 0 down to 1×1; the result starts with `mip0`.
///
/// A `mip0` whose texel buffer does not hold `width * height * CHANNELS` bytes (or that
/// has a zero side) cannot be filtered: the chain is then just `[mip0]`.
pub fn build_mip_chain(mip0: SetMip) -> Vec<SetMip> {
    let valid = mip0.width > 0
        && mip0.height > 0
        && (mip0.width as usize)
            .checked_mul(mip0.height as usize)
            .and_then(|n| n.checked_mul(CHANNELS))
            == Some(mip0.texels.len());
    let mut chain = vec![mip0];
    if !valid {
        return chain;
    }
    let lut: [f32; 256] = std::array::from_fn(|v| decode_u8(v as u8));
    let encoder = SrgbEncoder::new();
    while let Some(last) = chain.last() {
        if last.width == 1 && last.height == 1 {
            break;
        }
        let next = downsample(last, &lut, &encoder);
        chain.push(next);
    }
    chain
}

/// The source indices averaged into destination index `i` along an axis of `n` source
/// texels: `2i, 2i+1`, plus `2i+2` for the last one when `n` is odd; `0` alone when `n == 1`.
fn footprint(i: usize, n: usize) -> std::ops::Range<usize> {
    if n == 1 {
        return 0..1;
    }
    let m = n / 2;
    let end = if i + 1 == m && n % 2 == 1 {
        2 * i + 3
    } else {
        2 * i + 2
    };
    2 * i..end
}

/// Decode an 8-bit normal X, Y pair to a unit vector (pairs outside the unit disc are
/// projected onto its rim, Z = 0).
fn decode_normal(x: u8, y: u8) -> [f32; 3] {
    let x = x as f32 / 255.0 * 2.0 - 1.0;
    let y = y as f32 / 255.0 * 2.0 - 1.0;
    let len2 = x * x + y * y;
    if len2 > 1.0 {
        let inv = len2.sqrt().recip();
        [x * inv, y * inv, 0.0]
    } else {
        [x, y, (1.0 - len2).sqrt()]
    }
}

/// One box-filtered level below `src`.
fn downsample(src: &SetMip, lut: &[f32; 256], encoder: &SrgbEncoder) -> SetMip {
    const COLOR: [usize; 6] = [
        Channel::BaseR.index(),
        Channel::BaseG.index(),
        Channel::BaseB.index(),
        Channel::EmissiveR.index(),
        Channel::EmissiveG.index(),
        Channel::EmissiveB.index(),
    ];
    const LINEAR: [usize; 4] = [
        Channel::Alpha.index(),
        Channel::Occlusion.index(),
        Channel::Roughness.index(),
        Channel::Metallic.index(),
    ];
    const NX: usize = Channel::NormalX.index();
    const NY: usize = Channel::NormalY.index();

    let (sw, sh) = (src.width as usize, src.height as usize);
    let dw = (sw / 2).max(1);
    let dh = (sh / 2).max(1);
    let mut texels = vec![0u8; dw * dh * CHANNELS];
    for dy in 0..dh {
        let ys = footprint(dy, sh);
        for dx in 0..dw {
            let xs = footprint(dx, sw);
            let mut color = [0f32; 6];
            let mut linear = [0u32; 4];
            let mut normal = [0f32; 3];
            let mut count = 0u32;
            for sy in ys.clone() {
                for sx in xs.clone() {
                    let t = &src.texels[(sy * sw + sx) * CHANNELS..][..CHANNELS];
                    for (acc, &c) in color.iter_mut().zip(&COLOR) {
                        *acc += lut[t[c] as usize];
                    }
                    for (acc, &c) in linear.iter_mut().zip(&LINEAR) {
                        *acc += t[c] as u32;
                    }
                    let n = decode_normal(t[NX], t[NY]);
                    for k in 0..3 {
                        normal[k] += n[k];
                    }
                    count += 1;
                }
            }
            let inv = 1.0 / count as f32;
            let out = &mut texels[(dy * dw + dx) * CHANNELS..][..CHANNELS];
            for (&acc, &c) in color.iter().zip(&COLOR) {
                out[c] = encoder.encode(acc * inv);
            }
            for (&acc, &c) in linear.iter().zip(&LINEAR) {
                out[c] = quantize_u8(acc as f32 * inv / 255.0);
            }
            let len =
                (normal[0] * normal[0] + normal[1] * normal[1] + normal[2] * normal[2]).sqrt();
            let (nx, ny) = if len > 1e-6 {
                (normal[0] / len, normal[1] / len)
            } else {
                // Opposite normals cancelled out: fall back to flat.
                (0.0, 0.0)
            };
            out[NX] = quantize_u8(nx * 0.5 + 0.5);
            out[NY] = quantize_u8(ny * 0.5 + 0.5);
        }
    }
    SetMip {
        width: dw as u32,
        height: dh as u32,
        texels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mip_from_fn(w: u32, h: u32, f: impl Fn(u32, u32) -> [u8; CHANNELS]) -> SetMip {
        let mut texels = Vec::new();
        for y in 0..h {
            for x in 0..w {
                texels.extend(f(x, y));
            }
        }
        SetMip {
            width: w,
            height: h,
            texels,
        }
    }

    #[test]
    fn chain_sizes_for_5x3() {
        let chain = build_mip_chain(mip_from_fn(5, 3, |_, _| [0; CHANNELS]));
        let sizes: Vec<_> = chain.iter().map(|m| (m.width, m.height)).collect();
        assert_eq!(sizes, vec![(5, 3), (2, 1), (1, 1)]);
        for m in &chain {
            assert_eq!(m.texels.len(), (m.width * m.height) as usize * CHANNELS);
        }
        let sizes: Vec<_> = build_mip_chain(mip_from_fn(1, 6, |_, _| [0; CHANNELS]))
            .iter()
            .map(|m| (m.width, m.height))
            .collect();
        assert_eq!(sizes, vec![(1, 6), (1, 3), (1, 1)]);
    }

    #[test]
    fn footprints_cover_every_texel_once() {
        for n in 1..12 {
            let m = (n / 2).max(1);
            let covered: Vec<usize> = (0..m).flat_map(|i| footprint(i, n)).collect();
            assert_eq!(covered, (0..n).collect::<Vec<_>>(), "n = {n}");
        }
    }

    #[test]
    fn constant_image_is_conserved_exactly() {
        // A valid normal (x ≈ 0.57, y ≈ -0.53) and arbitrary values elsewhere.
        let texel = [13, 200, 77, 140, 200, 60, 33, 250, 1, 255, 128, 0];
        let chain = build_mip_chain(mip_from_fn(7, 5, |_, _| texel));
        assert_eq!(chain.len(), 3); // 7×5, 3×2, 1×1
        for m in &chain {
            for t in m.texels.chunks_exact(CHANNELS) {
                assert_eq!(t, texel);
            }
        }
        // Every byte value survives in every colour and linear channel.
        for v in 0..=255u8 {
            let texel = [v, v, v, v, 128, 128, v, v, v, v, v, v];
            let chain = build_mip_chain(mip_from_fn(3, 2, |_, _| texel));
            assert_eq!(chain[1].texels, texel, "value {v}");
        }
    }

    #[test]
    fn checker_averages_in_linear_light() {
        let chain = build_mip_chain(mip_from_fn(2, 2, |x, y| {
            let v = if (x + y) % 2 == 0 { 0 } else { 255 };
            [v, v, v, v, 128, 128, v, v, v, v, v, v]
        }));
        let t = &chain[1].texels;
        assert_eq!(chain[1].width, 1);
        // sRGB channels: linear 0.5 encodes to 188, not 128.
        for c in [0, 1, 2, 9, 10, 11] {
            assert_eq!(t[c], 188, "channel {c}");
        }
        // Linear channels average to 128.
        for c in [3, 6, 7, 8] {
            assert_eq!(t[c], 128, "channel {c}");
        }
    }

    #[test]
    fn normals_stay_unit() {
        // A bumpy normal map: X, Y varying over the unit disc (and a few outside it).
        let mip0 = mip_from_fn(9, 6, |x, y| {
            let mut t = [255; CHANNELS];
            t[4] = (x * 31 % 256) as u8;
            t[5] = (y * 47 % 256) as u8;
            t
        });
        for m in build_mip_chain(mip0).iter().skip(1) {
            for t in m.texels.chunks_exact(CHANNELS) {
                let x = t[4] as f32 / 255.0 * 2.0 - 1.0;
                let y = t[5] as f32 / 255.0 * 2.0 - 1.0;
                // Inside the unit disc up to 8-bit quantisation, so Z rebuilds to a unit vector.
                assert!(x * x + y * y <= 1.0 + 2.0 * 2.0 / 255.0, "({x}, {y})");
                let n = decode_normal(t[4], t[5]);
                let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
                assert!((len - 1.0).abs() < 1e-4, "{len}");
            }
        }
        // Two opposite normals average to a flat one, not to NaN.
        let chain = build_mip_chain(mip_from_fn(2, 1, |x, _| {
            let mut t = [255; CHANNELS];
            (t[4], t[5]) = if x == 0 { (0, 0) } else { (255, 255) };
            t
        }));
        let t = &chain[1].texels;
        assert_eq!((t[4], t[5]), (128, 128));
    }

    #[test]
    fn invalid_mip0_is_returned_alone() {
        let bad = SetMip {
            width: 4,
            height: 4,
            texels: vec![0; 5],
        };
        assert_eq!(build_mip_chain(bad.clone()), vec![bad]);
    }
}
