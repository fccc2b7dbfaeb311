//! Rate–distortion: NTC's pooled PSNR (and ꟻLIP) against bits per texel, per set, over a
//! ladder of latent shapes ([`LADDER`]: grid scale, features per texel, bits per
//! feature), beside the BCn points of the same sets, and per set the NTC rate at which
//! it matches each BCn point ([`match_rate`]), as RTXNTC's NTC-against-BCn protocol
//! reports it.
//!
//! [`compress_ladder`] trains every rung (for `compress --rd` and `eval --rd`), keeping
//! what the curves need of each finished rung beside its package ([`RungPoints`], so that
//! `--resume` keeps finished rungs), and the curves are built from those
//! ([`RdReport::from_rungs`]);
//! every PSNR is the report's pooled one at mip 0 ([`crate::texture::metrics`]), for NTC
//! and BCn alike. Files: JSON, CSV (one row per set and point), Markdown (per set the
//! matching rates and the NTC points) and a chart (mean over the sets, and every set).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::compress::{
    CompressError, CompressJob, CompressOptions, CompressReport, PartialManifest, compress,
    pretty_json, write_file,
};
use super::model::{LatentBits, LatentLayout, Preset, full_mip_count};
use super::parallel::GroupProgress;
use super::train::TrainConfig;
use crate::charts::{Panel, Series, SeriesLabelPosition, write_panels_png};

/// One rate of the ladder: a latent shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Rung {
    /// Grid scale.
    pub preset: Preset,
    /// Features per grid texel.
    pub features: u32,
    /// Bits per stored feature.
    pub bits: LatentBits,
}

/// The ladder `--rd` trains, fewest bits first: from 2.0 to 10.7 bits per texel in steps
/// of at most 1.5 (for a 1024² set with a full mip chain: 2.00, 2.35, 3.52, 4.70, 5.33,
/// 6.77, 8.00, 9.44, 10.67).
pub const LADDER: [Rung; 9] = [
    Rung::new(Preset::Low, 24),
    Rung::new(Preset::Medium, 16),
    Rung::new(Preset::Medium, 24),
    Rung::new(Preset::Medium, 32),
    Rung::new(Preset::High, 16),
    Rung::new(Preset::MediumHigh, 32),
    Rung::new(Preset::High, 24),
    Rung::new(Preset::VeryHigh, 16),
    Rung::new(Preset::High, 32),
];

impl Rung {
    /// A rung at 4 bits per feature.
    pub const fn new(preset: Preset, features: u32) -> Rung {
        Rung {
            preset,
            features,
            bits: LatentBits::Four,
        }
    }

    /// `high-16x4`: preset, features × bits.
    pub fn label(self) -> String {
        let preset = clap::ValueEnum::to_possible_value(&self.preset)
            .map_or_else(|| format!("{:?}", self.preset), |v| v.get_name().to_owned());
        format!("{preset}-{}x{}", self.features, self.bits.bits())
    }

    /// `train` with this rung's latent shape.
    pub fn config(self, train: &TrainConfig) -> TrainConfig {
        let mut t = train.clone();
        t.model.preset = self.preset;
        t.model.features = self.features;
        t.model.latent_bits = self.bits;
        t
    }

    /// Latent bits per mip-0 texel of a `width × height` set with a full mip chain.
    pub fn bits_per_texel(self, width: u32, height: u32) -> Option<f64> {
        LatentLayout::new(
            width,
            height,
            full_mip_count(width, height),
            self.preset,
            self.features,
        )
        .ok()
        .map(|l| l.bits_per_texel(self.bits))
    }
}

/// One point of a curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RdPoint {
    /// The codec: an NTC rung's label or a BCn baseline's name.
    pub codec: String,
    /// Bits per mip-0 texel.
    pub bits_per_texel: f64,
    /// Pooled PSNR at mip 0 (dB; `None` when nothing was measured).
    pub psnr: Option<f64>,
    /// Mean ꟻLIP at mip 0, when measured.
    pub flip: Option<f64>,
}

/// Where NTC matches one BCn point of a set.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RdMatch {
    /// The BCn baseline.
    pub bcn: String,
    /// Its bits per texel.
    pub bcn_bits_per_texel: f64,
    /// Its pooled PSNR.
    pub bcn_psnr: Option<f64>,
    /// NTC's bits per texel at that PSNR ([`match_rate`]); `None` when no rung reaches it.
    pub ntc_bits_per_texel: Option<f64>,
    /// The lowest rung already reaches it: the rate is at most `ntc_bits_per_texel`.
    pub at_most: bool,
}

/// One set's curves.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SetCurve {
    /// Texture set name.
    pub name: String,
    /// NTC, one point per rung, fewest bits first.
    pub ntc: Vec<RdPoint>,
    /// The BCn baselines.
    pub bcn: Vec<RdPoint>,
    /// Per BCn baseline, NTC's matching rate.
    pub matches: Vec<RdMatch>,
}

/// The rate–distortion report of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RdReport {
    /// Per set, in the reports' material order.
    pub sets: Vec<SetCurve>,
}

/// NTC's bits per texel at which `curve` (points in any order) reaches `psnr`: the first
/// crossing of the curve sorted by rate, linear in bits between the two rungs around it;
/// `(rate, true)` when the lowest rung already reaches it (the rate is at most that);
/// `None` when no rung does.
pub fn match_rate(curve: &[RdPoint], psnr: f64) -> Option<(f64, bool)> {
    let mut points: Vec<(f64, f64)> = curve
        .iter()
        .filter_map(|p| Some((p.bits_per_texel, p.psnr?)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (first_bits, first_psnr) = *points.first()?;
    if first_psnr >= psnr {
        return Some((first_bits, true));
    }
    points.windows(2).find_map(|w| {
        let ((b0, p0), (b1, p1)) = (w[0], w[1]);
        (p0 < psnr && p1 >= psnr).then(|| (b0 + (b1 - b0) * (psnr - p0) / (p1 - p0), false))
    })
}

/// What the curves keep of one rung's compression, written beside its package
/// ([`points_path`]): per set its NTC point and (from the rung that measured them) its BCn
/// points, the rung's means, and the run it belongs to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RungPoints {
    /// BLAKE3 (hex) of the rung's run: the ladder's partial-folder manifest (inputs, sets,
    /// settings) with the rung's training settings and the BCn and ꟻLIP switches; a kept
    /// rung must match.
    pub run: String,
    /// Per set, in the report's material order.
    pub sets: Vec<SetPoints>,
    /// Mean bits per texel over the sets.
    pub mean_bits_per_texel: f64,
    /// Mean PSNR over the sets (dB).
    pub mean_psnr: Option<f64>,
    /// Seconds the rung's compression took.
    pub seconds: f64,
}

/// One set's points of a rung.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetPoints {
    /// Texture set name.
    pub name: String,
    /// NTC at this rung.
    pub ntc: RdPoint,
    /// The BCn baselines (empty where the rung did not measure them).
    pub bcn: Vec<RdPoint>,
}

impl RungPoints {
    /// The points of `rung`'s `report`, for the run `run`.
    pub fn of(rung: Rung, report: &CompressReport, run: String) -> RungPoints {
        let sets = report
            .materials
            .iter()
            .map(|m| SetPoints {
                name: m.name.clone(),
                ntc: RdPoint {
                    codec: rung.label(),
                    bits_per_texel: m.bits_per_texel,
                    psnr: m.psnr.pooled.map(|p| p.db),
                    flip: m.flip.as_ref().and_then(|f| f.mean),
                },
                bcn: m
                    .bcn
                    .iter()
                    .map(|b| RdPoint {
                        codec: b.name.to_string(),
                        bits_per_texel: b.bits_per_texel,
                        psnr: b.psnr_mip0.pooled.map(|p| p.db),
                        flip: b.flip_mip0.as_ref().and_then(|f| f.mean),
                    })
                    .collect(),
            })
            .collect();
        RungPoints {
            run,
            sets,
            mean_bits_per_texel: report.mean_bits_per_texel,
            mean_psnr: report.mean_psnr,
            seconds: report.seconds,
        }
    }

    /// The points kept at `path` for the run `run`: `None` when there are none; an error
    /// naming the file when they cannot be read or belong to another run.
    fn kept(path: &Path, run: &str) -> Result<Option<RungPoints>, CompressError> {
        let refuse = |reason: String| CompressError::KeptRung {
            path: path.to_path_buf(),
            reason,
        };
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(refuse(e.to_string())),
        };
        let points: RungPoints = serde_json::from_slice(&bytes)
            .map_err(|e| refuse(format!("not a rung's points ({e})")))?;
        if points.run != run {
            return Err(refuse(
                "it holds the points of a run with other inputs or settings".into(),
            ));
        }
        Ok(Some(points))
    }
}

/// The file that keeps a rung's points beside its package: `x.ntc` → `x.points.json`.
pub fn points_path(package: &Path) -> PathBuf {
    package.with_extension("points.json")
}

/// The key of a rung's run ([`RungPoints::run`]): the ladder's manifest `ladder` (inputs,
/// set digests, settings, made once for every rung) with what the rung's `opts` change,
/// its training settings and whether it measures the BCn baselines, and the ꟻLIP switch.
fn run_key(ladder: &PartialManifest, opts: &CompressOptions) -> Result<String, CompressError> {
    let json = serde_json::to_vec(&(ladder, &opts.train, opts.skip_bcn, opts.flip))
        .map_err(|e| CompressError::Groups(format!("rung manifest: {e}")))?;
    Ok(blake3::hash(&json).to_hex().to_string())
}

/// Compress `job` once per rung of [`LADDER`], fewest bits first, each with the rung's
/// latent shape on top of `job`'s training settings into the package `package(rung)`
/// (instead of `job.out`), and build the curves. The BCn baselines do not depend on the
/// rung: the first rung measures them (unless `job` skips them), the others do not. Each
/// finished rung's points go to [`points_path`] beside its package; with `job`'s
/// `resume`, a rung whose package and points (of the same run) exist is kept, not
/// trained again. `on_rung` hears each rung's points as it finishes or is kept (`true`).
pub fn compress_ladder(
    job: &CompressJob<'_>,
    package: &dyn Fn(Rung) -> PathBuf,
    progress: &mut dyn FnMut(&GroupProgress),
    on_rung: &mut dyn FnMut(Rung, &RungPoints, bool),
) -> Result<RdReport, CompressError> {
    let ladder = PartialManifest::of_run(job.sets, job.constants, job.groups, job.opts)?;
    let mut rungs = Vec::with_capacity(LADDER.len());
    for (i, rung) in LADDER.into_iter().enumerate() {
        let out = package(rung);
        let options = CompressOptions {
            train: rung.config(&job.opts.train),
            skip_bcn: job.opts.skip_bcn || i > 0,
            ..job.opts.clone()
        };
        let rung_job = CompressJob {
            opts: &options,
            out: &out,
            ..*job
        };
        let run = run_key(&ladder, &options)?;
        let kept_at = points_path(&out);
        let kept = if job.opts.resume && out.is_file() {
            RungPoints::kept(&kept_at, &run)?
        } else {
            None
        };
        let points = match kept {
            Some(points) => {
                on_rung(rung, &points, true);
                points
            }
            None => {
                let (_, report) = compress(&rung_job, progress)?;
                let points = RungPoints::of(rung, &report, run);
                write_file(&kept_at, pretty_json(&points, &kept_at)?.as_bytes())?;
                on_rung(rung, &points, false);
                points
            }
        };
        rungs.push(points);
    }
    Ok(RdReport::from_rungs(&rungs))
}

/// One line on a finished rung: `rung high-16x4: 5.33 bits/texel, mean PSNR 41.20 dB,
/// 61.0 s` (`(kept)` after a rung a resumed run did not train again).
pub fn rung_summary(rung: Rung, points: &RungPoints, kept: bool) -> String {
    format!(
        "rung {}: {:.2} bits/texel, mean PSNR {}, {:.1} s{}",
        rung.label(),
        points.mean_bits_per_texel,
        points
            .mean_psnr
            .map_or("–".into(), |p| format!("{p:.2} dB")),
        points.seconds,
        if kept { " (kept)" } else { "" }
    )
}

impl RdReport {
    /// The curves of one [`RungPoints`] per rung (rungs in any order); the BCn points come
    /// from the first rung that measured them for a set.
    pub fn from_rungs(rungs: &[RungPoints]) -> RdReport {
        let Some(first) = rungs.first() else {
            return RdReport { sets: Vec::new() };
        };
        let sets = first
            .sets
            .iter()
            .map(|set| {
                let of_set = || {
                    rungs
                        .iter()
                        .filter_map(|r| r.sets.iter().find(|s| s.name == set.name))
                };
                let mut ntc: Vec<RdPoint> = of_set().map(|s| s.ntc.clone()).collect();
                ntc.sort_by(|a, b| a.bits_per_texel.total_cmp(&b.bits_per_texel));
                let bcn: Vec<RdPoint> = of_set()
                    .map(|s| &s.bcn)
                    .find(|b| !b.is_empty())
                    .cloned()
                    .unwrap_or_default();
                let matches = bcn
                    .iter()
                    .map(|b| {
                        let found = b.psnr.and_then(|p| match_rate(&ntc, p));
                        RdMatch {
                            bcn: b.codec.clone(),
                            bcn_bits_per_texel: b.bits_per_texel,
                            bcn_psnr: b.psnr,
                            ntc_bits_per_texel: found.map(|f| f.0),
                            at_most: found.is_some_and(|f| f.1),
                        }
                    })
                    .collect();
                SetCurve {
                    name: set.name.clone(),
                    ntc,
                    bcn,
                    matches,
                }
            })
            .collect();
        RdReport { sets }
    }

    /// Every file [`write`](Self::write) writes for `path` (`x.json`): `x.rd.json`,
    /// `x.rd.csv`, `x.rd.md`, `x.rd.png`.
    pub fn files(path: &Path) -> [PathBuf; 4] {
        ["rd.json", "rd.csv", "rd.md", "rd.png"].map(|ext| path.with_extension(ext))
    }

    /// One row per set and point: `set,codec,bits_per_texel,psnr,flip` (empty when not
    /// measured), NTC rungs first.
    pub fn csv(&self) -> String {
        let mut s = String::from("set,codec,bits_per_texel,psnr,flip\n");
        for cells in self.point_cells(4, "") {
            s.push_str(&cells.join(","));
            s.push('\n');
        }
        s
    }

    /// Markdown: per set and BCn baseline the NTC rate that matches it, then every
    /// point.
    pub fn markdown(&self) -> String {
        let f = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.2}"));
        let mut s = String::from(
            "NTC bits per texel at the pooled PSNR (dB, mip 0) of each BCn baseline \
             (`≤`: the lowest rung already reaches it; `–`: no rung does):\n\n",
        );
        s.push_str("| set | BCn | BCn bpt | BCn PSNR | NTC bpt at that PSNR |\n");
        s.push_str("|---|---|---|---|---|\n");
        for set in &self.sets {
            for m in &set.matches {
                let ntc = match (m.ntc_bits_per_texel, m.at_most) {
                    (Some(b), true) => format!("≤ {b:.2}"),
                    (b, _) => f(b),
                };
                s.push_str(&format!(
                    "| {} | {} | {:.2} | {} | {} |\n",
                    set.name,
                    m.bcn,
                    m.bcn_bits_per_texel,
                    f(m.bcn_psnr),
                    ntc
                ));
            }
        }
        s.push_str("\nEvery point (pooled PSNR in dB and mean ꟻLIP at mip 0):\n\n");
        s.push_str("| set | codec | bpt | PSNR | ꟻLIP |\n|---|---|---|---|---|\n");
        for cells in self.point_cells(2, "–") {
            s.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        s
    }

    /// Every point's cells, NTC rungs first: set, codec, bits per texel and PSNR at
    /// `digits` decimals, ꟻLIP at 4; `missing` where a measure was not taken.
    fn point_cells(&self, digits: usize, missing: &str) -> Vec<[String; 5]> {
        let opt = |v: Option<f64>, digits: usize| {
            v.map_or(missing.to_string(), |v| format!("{v:.digits$}"))
        };
        self.sets
            .iter()
            .flat_map(|set| set.ntc.iter().chain(&set.bcn).map(move |p| (set, p)))
            .map(|(set, p)| {
                [
                    set.name.clone(),
                    p.codec.clone(),
                    format!("{:.digits$}", p.bits_per_texel),
                    opt(p.psnr, digits),
                    opt(p.flip, 4),
                ]
            })
            .collect()
    }

    /// Two charts of PSNR against bits per texel: the mean over the sets (NTC's ladder
    /// as a line, each BCn baseline as one marked point), and every set's NTC curve.
    pub fn panels(&self) -> [Panel; 2] {
        let mean = |points: Vec<Vec<&RdPoint>>| -> Vec<(f64, f64)> {
            points
                .iter()
                .filter(|p| !p.is_empty() && p.iter().all(|p| p.psnr.is_some()))
                .map(|p| {
                    let n = p.len() as f64;
                    (
                        p.iter().map(|p| p.bits_per_texel).sum::<f64>() / n,
                        p.iter().filter_map(|p| p.psnr).sum::<f64>() / n,
                    )
                })
                .collect()
        };
        let rungs = self.sets.iter().map(|s| s.ntc.len()).max().unwrap_or(0);
        let ntc_mean = mean(
            (0..rungs)
                .map(|i| self.sets.iter().filter_map(|s| s.ntc.get(i)).collect())
                .collect(),
        );
        let mut overview = vec![Series {
            label: "NTC".into(),
            points: ntc_mean,
        }];
        let bcn_names: Vec<String> = self
            .sets
            .first()
            .map(|s| s.bcn.iter().map(|b| b.codec.clone()).collect())
            .unwrap_or_default();
        for name in bcn_names {
            let points = self
                .sets
                .iter()
                .filter_map(|s| s.bcn.iter().find(|b| b.codec == name))
                .collect();
            overview.push(Series {
                label: name,
                points: mean(vec![points]),
            });
        }
        let per_set = self
            .sets
            .iter()
            .map(|s| Series {
                label: s.name.clone(),
                points: s
                    .ntc
                    .iter()
                    .filter_map(|p| Some((p.bits_per_texel, p.psnr?)))
                    .collect(),
            })
            .collect();
        [
            Panel {
                title: format!("mean over {} sets", self.sets.len()),
                x_label: "bits per texel".into(),
                y_label: "PSNR (dB, pooled, mip 0)".into(),
                series: overview,
                legend: Some(SeriesLabelPosition::LowerRight),
                markers: true,
                ..Panel::default()
            },
            Panel {
                title: "NTC per set".into(),
                x_label: "bits per texel".into(),
                y_label: "PSNR (dB, pooled, mip 0)".into(),
                series: per_set,
                legend: (self.sets.len() <= 8).then_some(SeriesLabelPosition::LowerRight),
                markers: true,
                ..Panel::default()
            },
        ]
    }

    /// Write [`files`](Self::files) for `path`.
    pub fn write(&self, path: &Path) -> Result<(), CompressError> {
        let [json, csv, md, png] = Self::files(path);
        write_file(&json, pretty_json(self, &json)?.as_bytes())?;
        write_file(&csv, self.csv().as_bytes())?;
        write_file(&md, self.markdown().as_bytes())?;
        write_panels_png(&png, &self.panels(), 1200, 480)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(bits: f64, psnr: f64) -> RdPoint {
        RdPoint {
            codec: format!("{bits}"),
            bits_per_texel: bits,
            psnr: Some(psnr),
            flip: None,
        }
    }

    #[test]
    fn the_ladder_steps_by_at_most_one_and_a_half_bits_from_2_to_10() {
        let bits: Vec<f64> = LADDER
            .iter()
            .map(|r| r.bits_per_texel(1024, 1024).expect("layout"))
            .collect();
        assert!(bits.windows(2).all(|w| w[0] < w[1]), "{bits:?}");
        assert!(bits[0] < 2.01 && *bits.last().unwrap() > 10.0, "{bits:?}");
        assert!(
            bits.windows(2).all(|w| w[1] - w[0] <= 1.5 + 1e-9),
            "{bits:?}"
        );
        // Preset high at 16 × 4 bits is the default 5.33.
        assert!((bits[4] - 16.0 / 3.0).abs() < 0.01, "{bits:?}");
        assert_eq!(LADDER[4].label(), "high-16x4");
        for r in LADDER {
            r.config(&TrainConfig::default()).validate().expect("valid");
        }
    }

    /// The CSV and the Markdown list every point, NTC rungs first, each at its precision
    /// and with its mark for what was not measured.
    #[test]
    fn points_are_listed_in_both_tables() {
        let report = RdReport {
            sets: vec![SetCurve {
                name: "a".into(),
                ntc: vec![RdPoint {
                    codec: "low".into(),
                    bits_per_texel: 2.5,
                    psnr: Some(31.23456),
                    flip: Some(0.123456),
                }],
                bcn: vec![RdPoint {
                    codec: "BC1".into(),
                    bits_per_texel: 4.0,
                    psnr: None,
                    flip: None,
                }],
                matches: Vec::new(),
            }],
        };
        assert_eq!(
            report.csv(),
            "set,codec,bits_per_texel,psnr,flip\na,low,2.5000,31.2346,0.1235\na,BC1,4.0000,,\n"
        );
        let md = report.markdown();
        assert!(
            md.ends_with("| a | low | 2.50 | 31.23 | 0.1235 |\n| a | BC1 | 4.00 | – | – |\n"),
            "{md}"
        );
    }

    /// By hand: the curve (2, 30), (4, 34), (8, 40) reaches 37 dB halfway between 4 and 8
    /// bits (6.0), 30 dB at its lowest rung (at most 2), and never 41 dB.
    #[test]
    fn matching_rates_interpolate_between_rungs() {
        let curve = [point(8.0, 40.0), point(2.0, 30.0), point(4.0, 34.0)];
        assert_eq!(match_rate(&curve, 37.0), Some((6.0, false)));
        assert_eq!(match_rate(&curve, 34.0), Some((4.0, false)));
        assert_eq!(match_rate(&curve, 29.0), Some((2.0, true)));
        assert_eq!(match_rate(&curve, 41.0), None);
        assert_eq!(match_rate(&[], 30.0), None);
    }
}
