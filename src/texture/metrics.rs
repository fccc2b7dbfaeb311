//! Image quality metrics over canonical texture sets: PSNR per channel group (base
//! colour, normal, ORM, emissive) over the channels a set actually has.
//!
//! Values are compared in the stored encoding (sRGB-encoded colour, [0,1]-mapped normal
//! X/Y), all in [0, 1]: PSNR = 10·log10(1 / MSE), the convention NTC papers report.

use super::{CHANNELS, ChannelMask};

/// A channel group of the canonical layout, as reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelGroup {
    /// Base colour RGB and alpha (channels 0–3).
    BaseColor,
    /// Normal X, Y (4–5).
    Normal,
    /// Occlusion, roughness, metallic (6–8).
    Orm,
    /// Emissive RGB (9–11).
    Emissive,
}

impl ChannelGroup {
    /// Every group, in report order.
    pub const ALL: [ChannelGroup; 4] = [Self::BaseColor, Self::Normal, Self::Orm, Self::Emissive];

    /// The channels of the group.
    pub const fn mask(self) -> ChannelMask {
        match self {
            Self::BaseColor => ChannelMask(ChannelMask::BASE_COLOR.0 | ChannelMask::ALPHA.0),
            Self::Normal => ChannelMask::NORMAL,
            Self::Orm => ChannelMask(
                ChannelMask::OCCLUSION.0 | ChannelMask::ROUGHNESS.0 | ChannelMask::METALLIC.0,
            ),
            Self::Emissive => ChannelMask::EMISSIVE,
        }
    }

    /// Name used in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Self::BaseColor => "base_color",
            Self::Normal => "normal",
            Self::Orm => "orm",
            Self::Emissive => "emissive",
        }
    }
}

/// Sum of squared errors and sample count per channel, to be turned into PSNR.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorAccumulator {
    sse: [f64; CHANNELS],
    count: [u64; CHANNELS],
}

/// PSNR in dB; `None` for a group the set does not have. A perfect match reports 99 dB
/// rather than infinity, so tables and JSON stay finite.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GroupPsnr {
    /// Base colour + alpha.
    pub base_color: Option<f64>,
    /// Normal X, Y.
    pub normal: Option<f64>,
    /// Occlusion, roughness, metallic.
    pub orm: Option<f64>,
    /// Emissive.
    pub emissive: Option<f64>,
    /// All present channels together.
    pub all: Option<f64>,
}

/// PSNR of a mean squared error of values in [0, 1], capped at 99 dB.
pub fn psnr_from_mse(mse: f64) -> f64 {
    if mse <= 1e-10 {
        99.0
    } else {
        (10.0 * (1.0 / mse).log10()).min(99.0)
    }
}

impl ErrorAccumulator {
    /// Add texels: `reference` and `decoded` hold `CHANNELS` interleaved values in [0, 1]
    /// per texel; only channels in `present` count.
    pub fn add(
        &mut self,
        reference: impl IntoIterator<Item = f32>,
        decoded: impl IntoIterator<Item = f32>,
        present: ChannelMask,
    ) {
        for (i, (r, d)) in reference.into_iter().zip(decoded).enumerate() {
            let c = i % CHANNELS;
            if present.has(c) {
                let e = f64::from(r) - f64::from(d);
                self.sse[c] += e * e;
                self.count[c] += 1;
            }
        }
    }

    /// Add two `u8` texel arrays (12 interleaved channels each).
    pub fn add_u8(&mut self, reference: &[u8], decoded: &[u8], present: ChannelMask) {
        let f = |v: &u8| f32::from(*v) / 255.0;
        self.add(reference.iter().map(f), decoded.iter().map(f), present);
    }

    /// PSNR of the channels in `mask`, or `None` when none of them was seen.
    pub fn psnr(&self, mask: ChannelMask) -> Option<f64> {
        let (sse, n) = (0..CHANNELS)
            .filter(|&c| mask.has(c))
            .fold((0.0, 0u64), |(s, n), c| {
                (s + self.sse[c], n + self.count[c])
            });
        (n > 0).then(|| psnr_from_mse(sse / n as f64))
    }

    /// PSNR per group and overall.
    pub fn group_psnr(&self) -> GroupPsnr {
        GroupPsnr {
            base_color: self.psnr(ChannelGroup::BaseColor.mask()),
            normal: self.psnr(ChannelGroup::Normal.mask()),
            orm: self.psnr(ChannelGroup::Orm.mask()),
            emissive: self.psnr(ChannelGroup::Emissive.mask()),
            all: self.psnr(ChannelMask::ALL),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psnr_of_known_error() {
        // Every present value off by 0.1 → MSE 0.01 → 20 dB.
        let mut acc = ErrorAccumulator::default();
        let r = [0.5f32; CHANNELS * 4];
        let d: Vec<f32> = r.iter().map(|v| v + 0.1).collect();
        acc.add(
            r.iter().copied(),
            d.iter().copied(),
            ChannelMask::BASE_COLOR,
        );
        let p = acc.group_psnr();
        assert!((p.base_color.unwrap() - 20.0).abs() < 1e-4);
        assert!(p.normal.is_none() && p.orm.is_none() && p.emissive.is_none());
        assert!((p.all.unwrap() - 20.0).abs() < 1e-4);
    }

    #[test]
    fn identical_is_capped_and_groups_cover_all() {
        let mut acc = ErrorAccumulator::default();
        let r = vec![7u8; CHANNELS * 2];
        acc.add_u8(&r, &r, ChannelMask::ALL);
        assert_eq!(acc.psnr(ChannelMask::ALL), Some(99.0));
        let union = ChannelGroup::ALL.iter().fold(0u16, |m, g| m | g.mask().0);
        assert_eq!(union, ChannelMask::ALL.0);
    }
}
