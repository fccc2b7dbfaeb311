//! PSNR: the one convention every quality number of the project follows (RTXNTC's), for
//! NTC packages (`ntc::train::Quality`), the BCn baselines ([`super::bcn`]), the
//! compression report, `inspect`, the evaluation and `render --psnr`:
//!
//! - values are compared in their stored encoding (sRGB-encoded colour, \[0, 1\]-mapped
//!   normal X/Y, linear ORM), all in \[0, 1\]: PSNR = 10·log10(1 / MSE);
//! - reported per channel group ([`QUALITY_GROUPS`]: base colour, alpha, normal,
//!   occlusion, roughness, metallic, emissive) **and pooled**: one MSE over every present
//!   channel of every texel, which is the number NTC is compared with BCn by;
//! - an exact match (MSE 0) reads [`PSNR_CAP_DB`] = 99 dB and is marked exact
//!   ([`Psnr::exact`]), so tables and JSON stay finite and still say what happened; any
//!   other PSNR is capped at 99 dB too.
//!
//! [`ErrorAccumulator`] sums squared errors per channel; [`PsnrReport`] is the pooled
//! value with the per-group ones.

use super::{CHANNELS, ChannelMask};

/// The largest PSNR reported (dB); an exact match reads this.
pub const PSNR_CAP_DB: f64 = 99.0;

/// The channel groups PSNR is reported for, in report (and package) order: every named
/// group of the canonical layout.
pub const QUALITY_GROUPS: [(ChannelMask, &str); 7] = super::CHANNEL_GROUPS;

/// PSNR in dB of a mean squared error of values in \[0, 1\]: `10 · log10(1 / mse)`,
/// capped at [`PSNR_CAP_DB`] (an MSE of 0 reads the cap); NaN stays NaN.
pub fn psnr_from_mse(mse: f64) -> f64 {
    if mse.is_nan() {
        f64::NAN
    } else if mse <= 0.0 {
        PSNR_CAP_DB
    } else {
        (-10.0 * mse.log10()).min(PSNR_CAP_DB)
    }
}

/// A PSNR value: dB (capped) and whether the match was exact.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Psnr {
    /// PSNR in dB, at most [`PSNR_CAP_DB`].
    pub db: f64,
    /// The MSE was 0: every compared value matched exactly (`db` is the cap).
    pub exact: bool,
}

impl Psnr {
    /// The PSNR of a mean squared error.
    pub fn from_mse(mse: f64) -> Psnr {
        Psnr {
            db: psnr_from_mse(mse),
            exact: mse == 0.0,
        }
    }

    /// The PSNR of a stored value (the `.ntc` package's f32 per group): dB, `+∞` for an
    /// exact match.
    pub fn from_stored(value: f32) -> Psnr {
        if value == f32::INFINITY {
            Psnr::from_mse(0.0)
        } else {
            Psnr {
                db: f64::from(value).min(PSNR_CAP_DB),
                exact: false,
            }
        }
    }

    /// The value as packages store it: dB, `+∞` for an exact match.
    pub fn stored(self) -> f32 {
        if self.exact {
            f32::INFINITY
        } else {
            self.db as f32
        }
    }

    /// The mean squared error this PSNR stands for (0 when exact).
    pub fn mse(self) -> f64 {
        if self.exact {
            0.0
        } else {
            10f64.powf(-self.db / 10.0)
        }
    }
}

impl std::fmt::Display for Psnr {
    /// `34.56`, or `99.00 (exact)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.2}", self.db)?;
        if self.exact {
            write!(f, " (exact)")?;
        }
        Ok(())
    }
}

/// One channel group's PSNR in a report.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GroupPsnr {
    /// The group's name ([`QUALITY_GROUPS`]).
    pub group: String,
    /// Its PSNR.
    #[serde(flatten)]
    pub psnr: Psnr,
}

/// The PSNR of one comparison: pooled over every present channel, and per channel group
/// present (in [`QUALITY_GROUPS`] order).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PsnrReport {
    /// One MSE over every present channel of every texel; `None` when nothing was
    /// compared.
    pub pooled: Option<Psnr>,
    /// Per channel group present.
    pub groups: Vec<GroupPsnr>,
}

impl PsnrReport {
    /// The report of per-group results `(group index in QUALITY_GROUPS, MSE, values
    /// compared)`: the pooled MSE is the groups' MSEs weighted by their value counts.
    pub fn from_groups(groups: impl IntoIterator<Item = (usize, f64, u64)>) -> PsnrReport {
        let mut report = PsnrReport::default();
        let (mut sse, mut count) = (0.0f64, 0u64);
        for (g, mse, n) in groups {
            let Some((_, name)) = QUALITY_GROUPS.get(g) else {
                continue;
            };
            report.groups.push(GroupPsnr {
                group: name.to_string(),
                psnr: Psnr::from_mse(mse),
            });
            sse += mse * n as f64;
            count += n;
        }
        report.pooled = (count > 0).then(|| Psnr::from_mse(sse / count as f64));
        report
    }

    /// The PSNR of the group named `name`, when present.
    pub fn group(&self, name: &str) -> Option<Psnr> {
        self.groups.iter().find(|g| g.group == name).map(|g| g.psnr)
    }

    /// `pooled 31.20, base_color 30.11, normal 32.52` (`–` when nothing was compared).
    pub fn summary(&self) -> String {
        let Some(pooled) = self.pooled else {
            return "–".into();
        };
        std::iter::once(format!("pooled {pooled}"))
            .chain(
                self.groups
                    .iter()
                    .map(|g| format!("{} {}", g.group, g.psnr)),
            )
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Sum of squared errors and value count per canonical channel.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorAccumulator {
    sse: [f64; CHANNELS],
    count: [u64; CHANNELS],
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

    /// MSE over the channels of `mask` and the values it covers, when every channel of
    /// `mask` was seen.
    pub fn mse(&self, mask: ChannelMask) -> Option<(f64, u64)> {
        let mut channels = mask.channels().map(|c| c.index()).peekable();
        channels.peek()?;
        let (mut sse, mut n) = (0.0, 0u64);
        for c in channels {
            if self.count[c] == 0 {
                return None;
            }
            sse += self.sse[c];
            n += self.count[c];
        }
        Some((sse / n as f64, n))
    }

    /// PSNR per channel group seen, and pooled over them.
    pub fn report(&self) -> PsnrReport {
        PsnrReport::from_groups(
            QUALITY_GROUPS
                .iter()
                .enumerate()
                .filter_map(|(g, (mask, _))| self.mse(*mask).map(|(mse, n)| (g, mse, n))),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two texels by hand: base colour (3 values each) off by 0.25 in one value, normal
    /// (2 values) off by 0.5 in one, alpha exact (every value exact in binary).
    ///
    /// base colour: SSE 0.0625 over 6 values → MSE 1/96 → 19.8227 dB;
    /// normal: SSE 0.25 over 4 values → MSE 1/16 → 12.0412 dB; alpha: exact → 99 dB
    /// (exact); pooled: SSE 0.3125 over 12 values → MSE 5/192 → 15.8433 dB. (The mean of
    /// the group values, the convention before, would be infinite: alpha matches exactly.)
    #[test]
    fn hand_computed_groups_and_pool() {
        let present = ChannelMask::BASE_COLOR | ChannelMask::ALPHA | ChannelMask::NORMAL;
        let reference = [0.5f32; 2 * CHANNELS];
        let mut decoded = reference;
        decoded[0] = 0.75;
        decoded[CHANNELS + 4] = 0.0;
        let mut acc = ErrorAccumulator::default();
        acc.add(reference, decoded, present);
        let r = acc.report();
        let names: Vec<&str> = r.groups.iter().map(|g| g.group.as_str()).collect();
        assert_eq!(names, ["base_color", "alpha", "normal"]);
        let base = r.group("base_color").unwrap();
        assert!((base.db - 10.0 * 96f64.log10()).abs() < 1e-12, "{base:?}");
        assert!((base.db - 19.8227).abs() < 1e-4);
        assert!(!base.exact);
        assert_eq!(
            r.group("alpha"),
            Some(Psnr {
                db: 99.0,
                exact: true
            })
        );
        assert!((r.group("normal").unwrap().db - 12.0412).abs() < 1e-4);
        let pooled = r.pooled.unwrap();
        assert!(
            (pooled.db - 10.0 * (192.0f64 / 5.0).log10()).abs() < 1e-12,
            "{pooled:?}"
        );
        assert!((pooled.db - 15.8433).abs() < 1e-4);
        assert_eq!(r.group("emissive"), None);
        assert_eq!(
            r.summary(),
            "pooled 15.84, base_color 19.82, alpha 99.00 (exact), normal 12.04"
        );
    }

    #[test]
    fn exact_matches_are_capped_and_marked() {
        let mut acc = ErrorAccumulator::default();
        let r = vec![7u8; CHANNELS * 2];
        acc.add_u8(&r, &r, ChannelMask::ALL);
        let report = acc.report();
        assert_eq!(report.groups.len(), QUALITY_GROUPS.len());
        assert_eq!(
            report.pooled,
            Some(Psnr {
                db: 99.0,
                exact: true
            })
        );
        assert_eq!(report.pooled.unwrap().to_string(), "99.00 (exact)");
        // Tiny but non-zero errors are capped, not exact.
        assert_eq!(
            Psnr::from_mse(1e-12),
            Psnr {
                db: 99.0,
                exact: false
            }
        );
        assert!(psnr_from_mse(f64::NAN).is_nan());
        assert!((psnr_from_mse(1e-4) - 40.0).abs() < 1e-9);
        // Nothing compared: no PSNR at all.
        assert_eq!(ErrorAccumulator::default().report(), PsnrReport::default());
        assert_eq!(PsnrReport::default().summary(), "–");
        // The groups cover every channel once.
        let union = QUALITY_GROUPS.iter().fold(0u16, |m, (g, _)| m | g.0);
        assert_eq!(union, ChannelMask::ALL.0);
        assert_eq!(
            QUALITY_GROUPS.iter().map(|(g, _)| g.count()).sum::<u32>(),
            CHANNELS as u32
        );
    }

    #[test]
    fn stored_values_round_trip() {
        let exact = Psnr::from_mse(0.0);
        assert_eq!(exact.stored(), f32::INFINITY);
        assert_eq!(Psnr::from_stored(f32::INFINITY), exact);
        let p = Psnr::from_mse(0.001);
        assert!((Psnr::from_stored(p.stored()).db - 30.0).abs() < 1e-5);
        assert!((p.mse() - 0.001).abs() < 1e-12);
        assert_eq!(exact.mse(), 0.0);
        // Pooling from group MSEs weighs them by their value counts.
        let r = PsnrReport::from_groups([(0, 0.01, 300), (2, 0.0, 100)]);
        assert!((r.pooled.unwrap().mse() - 0.0075).abs() < 1e-12);
        assert_eq!(r.groups[1].group, "normal");
        assert!(r.groups[1].psnr.exact);
        let json = serde_json::to_string(&r).unwrap();
        assert!(
            json.contains("\"group\":\"normal\",\"db\":99.0,\"exact\":true"),
            "{json}"
        );
    }
}
