//! ꟻLIP (NVIDIA's perceptual image difference, the LDR variant) beside PSNR: for the
//! images a texture set ships as (base colour, normal, ORM, emissive) and for rendered
//! frames. The metric is the reference implementation's C++ code through the `nv-flip`
//! bindings, at its default 67 pixels per degree.
//!
//! A set's images are compared at mip 0 in their stored encoding, as PSNR is
//! ([`super::metrics`]):
//! - base colour: its sRGB RGB (alpha is not an image ꟻLIP knows; PSNR covers it);
//! - normal: X, Y as stored and Z reconstructed from them (`z = √(1 − x² − y²)` of the
//!   `[−1, 1]` values, stored as `(z + 1) / 2`), the familiar blue image;
//! - ORM and emissive: their three channels as RGB.
//!
//! A channel the set's `present` mask lacks takes the reference's value in both images,
//! so it adds no error. A set's ꟻLIP is the mean of its images' mean ꟻLIP (each image
//! has the set's mip-0 size, so this is the mean over every compared pixel of every
//! image); lower is better, 0 is identical.

use serde::{Deserialize, Serialize};

use super::{CHANNELS, ChannelMask, ImageGroup};

/// Pixels per degree of visual angle: the reference implementation's default (a 0.7 m
/// viewing distance to a 0.7 m wide 3840-pixel monitor).
pub const PIXELS_PER_DEGREE: f32 = nv_flip::DEFAULT_PIXELS_PER_DEGREE;

/// A per-pixel ꟻLIP error map in \[0, 1\], row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct FlipMap {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// One error per pixel.
    pub errors: Vec<f32>,
}

impl FlipMap {
    /// The mean error (0 for an empty map).
    pub fn mean(&self) -> f64 {
        if self.errors.is_empty() {
            return 0.0;
        }
        self.errors.iter().map(|&e| f64::from(e)).sum::<f64>() / self.errors.len() as f64
    }

    /// The map through the reference implementation's magma colour map, as RGB8
    /// (black = no error, yellow-white = the largest).
    pub fn magma_rgb8(&self) -> Vec<u8> {
        let map = nv_flip::FlipImageFloat::with_data(self.width, self.height, &self.errors);
        map.apply_color_lut(&nv_flip::magma_lut()).to_vec()
    }
}

/// ꟻLIP of two sRGB RGB8 images of `width × height` (3 bytes per pixel, row-major);
/// `None` when a buffer does not hold exactly that many pixels or the image is empty.
pub fn flip_rgb8(reference: &[u8], test: &[u8], width: u32, height: u32) -> Option<FlipMap> {
    let len = (width as usize)
        .checked_mul(height as usize)?
        .checked_mul(3)?;
    if len == 0 || reference.len() != len || test.len() != len {
        return None;
    }
    let reference = nv_flip::FlipImageRgb8::with_data(width, height, reference);
    let test = nv_flip::FlipImageRgb8::with_data(width, height, test);
    let map = nv_flip::flip(reference, test, PIXELS_PER_DEGREE);
    Some(FlipMap {
        width,
        height,
        errors: map.to_vec(),
    })
}

/// One image's ꟻLIP in a report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImageFlip {
    /// The image's name ([`ImageGroup::name`]).
    pub image: String,
    /// Its mean ꟻLIP.
    pub mean: f64,
}

/// ꟻLIP of a texture set: per image it has, and their mean.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlipReport {
    /// Mean over the images of their mean ꟻLIP; `None` when nothing was compared.
    pub mean: Option<f64>,
    /// Per image present, in [`ImageGroup::ALL`] order.
    pub images: Vec<ImageFlip>,
}

impl FlipReport {
    /// The mean ꟻLIP of the image named `name`, when present.
    pub fn image(&self, name: &str) -> Option<f64> {
        self.images.iter().find(|i| i.image == name).map(|i| i.mean)
    }
}

/// The RGB8 image `group` of `texels` (12 interleaved channels per texel), with every
/// channel outside `present` taken from `fallback` (the reference).
fn image_rgb8(texels: &[u8], fallback: &[u8], group: ImageGroup, present: ChannelMask) -> Vec<u8> {
    let channel = |t: &[u8], f: &[u8], c: usize| if present.has(c) { t[c] } else { f[c] };
    texels
        .chunks_exact(CHANNELS)
        .zip(fallback.chunks_exact(CHANNELS))
        .flat_map(|(t, f)| match group {
            ImageGroup::BaseColor => [channel(t, f, 0), channel(t, f, 1), channel(t, f, 2)],
            ImageGroup::Normal => {
                let (x, y) = (channel(t, f, 4), channel(t, f, 5));
                let unit = |v: u8| f64::from(v) / 255.0 * 2.0 - 1.0;
                let z = (1.0 - unit(x).powi(2) - unit(y).powi(2)).max(0.0).sqrt();
                [x, y, ((z + 1.0) * 0.5 * 255.0).round() as u8]
            }
            ImageGroup::Orm => [channel(t, f, 6), channel(t, f, 7), channel(t, f, 8)],
            ImageGroup::Emissive => [channel(t, f, 9), channel(t, f, 10), channel(t, f, 11)],
        })
        .collect()
}

/// The colour channels ꟻLIP compares for `group` (alpha is left to PSNR).
fn flip_channels(group: ImageGroup) -> ChannelMask {
    match group {
        ImageGroup::BaseColor => ChannelMask::BASE_COLOR,
        other => other.mask(),
    }
}

/// ꟻLIP of a decoded mip against its reference (both `width × height` texels of 12
/// interleaved `u8` channels), per image with a channel in `present`. An empty report
/// when the sizes disagree.
pub fn flip_set_mip(
    reference: &[u8],
    decoded: &[u8],
    width: u32,
    height: u32,
    present: ChannelMask,
) -> FlipReport {
    let texels = width as usize * height as usize;
    if texels == 0 || reference.len() != texels * CHANNELS || decoded.len() != reference.len() {
        return FlipReport::default();
    }
    let images: Vec<ImageFlip> = ImageGroup::ALL
        .into_iter()
        .filter(|g| present.intersects(flip_channels(*g)))
        .filter_map(|group| {
            let r = image_rgb8(reference, reference, group, present);
            let d = image_rgb8(decoded, reference, group, present);
            let map = flip_rgb8(&r, &d, width, height)?;
            Some(ImageFlip {
                image: group.name().to_string(),
                mean: map.mean(),
            })
        })
        .collect();
    let mean = (!images.is_empty())
        .then(|| images.iter().map(|i| i.mean).sum::<f64>() / images.len() as f64);
    FlipReport { mean, images }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_images_have_no_error_and_channels_left_out_add_none() {
        let (w, h) = (16u32, 8u32);
        let reference: Vec<u8> = (0..w * h * CHANNELS as u32)
            .map(|i| (i * 37 % 251) as u8)
            .collect();
        let present = ChannelMask::BASE_COLOR | ChannelMask::NORMAL;
        let same = flip_set_mip(&reference, &reference, w, h, present);
        assert_eq!(same.mean, Some(0.0));
        let names: Vec<&str> = same.images.iter().map(|i| i.image.as_str()).collect();
        assert_eq!(names, ["base_color", "normal"]);
        // Damage a channel the set does not have (roughness): still no error.
        let mut decoded = reference.clone();
        for t in decoded.chunks_exact_mut(CHANNELS) {
            t[7] = t[7].wrapping_add(90);
        }
        assert_eq!(
            flip_set_mip(&reference, &decoded, w, h, present).mean,
            Some(0.0)
        );
        // Damage the base colour: its image shows an error, the normal does not.
        for t in decoded.chunks_exact_mut(CHANNELS) {
            t[1] = 255 - t[1];
        }
        let r = flip_set_mip(&reference, &decoded, w, h, present);
        assert!(r.image("base_color").unwrap() > 0.05, "{r:?}");
        assert_eq!(r.image("normal"), Some(0.0));
        assert_eq!(r.mean, Some(r.image("base_color").unwrap() / 2.0));
        // Sizes that disagree: nothing compared.
        assert_eq!(
            flip_set_mip(&reference, &decoded[1..], w, h, present),
            FlipReport::default()
        );
        assert!(flip_rgb8(&[0; 3], &[0; 3], 2, 1).is_none());
        // The error map of the damaged base colour: one magma colour per pixel, and the
        // largest error within FLIP's [0, 1].
        let r = image_rgb8(&reference, &reference, ImageGroup::BaseColor, present);
        let d = image_rgb8(&decoded, &reference, ImageGroup::BaseColor, present);
        let map = flip_rgb8(&r, &d, w, h).expect("sizes");
        assert_eq!(map.magma_rgb8().len(), map.errors.len() * 3);
        assert!(map.errors.iter().all(|e| (0.0..=1.0).contains(e)));
        assert!(map.errors.iter().any(|&e| e > 0.1));
    }

    /// A flat normal (128, 128) reconstructs z = 1 (255); a normal along X (255, 128)
    /// reconstructs z ≈ 0 (128).
    #[test]
    fn normals_reconstruct_z() {
        let mut t = [0u8; CHANNELS * 2];
        t[4] = 128;
        t[5] = 128;
        t[CHANNELS + 4] = 255;
        t[CHANNELS + 5] = 128;
        let img = image_rgb8(&t, &t, ImageGroup::Normal, ChannelMask::NORMAL);
        assert_eq!(img, [128, 128, 255, 255, 128, 128]);
    }
}
