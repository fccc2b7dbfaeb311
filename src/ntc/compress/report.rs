//! The report of a run: one line per material (NTC next to its BCn baselines), one per
//! group, the loss curves, and the files they are written to (JSON, Markdown, CSV, chart).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::rate::{RateControl, RateTry};
use super::{CompressError, pretty_json, write_file};
use crate::charts::{Panel, Series, write_panels_png};
use crate::ntc::format::NtcPackage;
use crate::ntc::model::Preset;
use crate::ntc::train::cpu::decode_mip;
use crate::ntc::train::gpu::{LatentAdam, StepKernelMs, TrainKernel};
use crate::ntc::train::{LossWeights, TrainConfig};
use crate::texture::bcn::{BcnResult, PROTOCOL};
use crate::texture::flip::{FlipReport, flip_set_mip};
use crate::texture::metrics::{Psnr, PsnrReport};
use crate::texture::{TextureSet, quantize_u8};

/// One material's line of the report.
#[derive(Clone, Debug, Serialize)]
pub struct MaterialReport {
    /// Texture set name.
    pub name: String,
    /// Group (= decoder index).
    pub group: usize,
    /// Mip-0 size.
    pub width: u32,
    /// Mip-0 size.
    pub height: u32,
    /// Present channels.
    pub channels: String,
    /// Latent bits per mip-0 texel (whole pyramid, all channels).
    pub bits_per_texel: f64,
    /// The preset the set was compressed at.
    pub preset: Preset,
    /// NTC PSNR at mip 0: pooled over the present channels, and per channel group.
    pub psnr: PsnrReport,
    /// Rate control's pooled PSNR target for this set (dB), if any.
    pub target_psnr: Option<f64>,
    /// Rate control's tries, smallest preset first (empty at a fixed preset or when the
    /// group was resumed finished).
    pub rate_tries: Vec<RateTry>,
    /// Rate control reached the target (`None` without a target).
    pub target_reached: Option<bool>,
    /// NTC ꟻLIP at mip 0, when measured.
    pub flip: Option<FlipReport>,
    /// BCn baselines for the same set, measured alike.
    pub bcn: Vec<BcnResult>,
}

impl MaterialReport {
    /// The warning of a missed rate-control target: the set, its best pooled PSNR over
    /// the tries (or the kept result) and the target; `None` when it was reached or there
    /// was none.
    pub fn missed(&self) -> Option<String> {
        let target = self
            .target_psnr
            .filter(|_| self.target_reached == Some(false))?;
        // The full trainings, not the probes.
        let full = self.rate_tries.iter().map(|t| t.steps).max().unwrap_or(0);
        let best = self
            .rate_tries
            .iter()
            .filter(|t| t.steps == full)
            .filter_map(|t| t.psnr_pooled.map(|p| (p.db, t.preset)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .or_else(|| self.psnr.pooled.map(|p| (p.db, self.preset)));
        Some(match best {
            Some((db, preset)) => format!(
                "set `{}` missed its target: best pooled PSNR {db:.2} dB (preset {}) < target {target:.2} dB",
                self.name,
                preset_name(preset)
            ),
            None => format!(
                "set `{}` missed its target: nothing measured < target {target:.2} dB",
                self.name
            ),
        })
    }
}

/// A preset's name as the command line spells it (`very-high`).
pub fn preset_name(preset: Preset) -> String {
    clap::ValueEnum::to_possible_value(&preset)
        .map_or_else(|| format!("{preset:?}"), |v| v.get_name().to_owned())
}

/// One group's training.
#[derive(Clone, Debug, Serialize)]
pub struct GroupReport {
    /// Materials (set indices) in the group.
    pub sets: Vec<usize>,
    /// Main steps of the group ([`group_main_steps`](super::group_main_steps)).
    pub steps: u64,
    /// The preset the group was compressed at.
    pub preset: Preset,
    /// The loss weights it was trained with.
    pub loss_weights: LossWeights,
    /// The training kernels (`None` when the group was resumed finished).
    pub kernel: Option<TrainKernel>,
    /// The device that trained it (index into the run's devices; `None` when it was
    /// resumed finished).
    pub device: Option<usize>,
    /// Wall-clock seconds of training (incl. fine-tuning and evaluation; every try of
    /// rate control); `None` when the group was resumed finished.
    pub seconds: Option<f64>,
    /// Mean training throughput of the kept try (batch texels per second); `None` when
    /// the group was resumed finished or trained too few steps to be timed.
    pub texels_per_second: Option<f64>,
    /// `texels_per_second` times the decoder's
    /// [`training_flops_per_sample`](crate::ntc::train::training_flops_per_sample), in TFLOP/s.
    pub tflops: Option<f64>,
    /// Final reported loss (NaN, written as null, when the group was resumed finished).
    pub final_loss: f64,
    /// Mixed-precision trainer: the `train_step` workgroups per step it trained with
    /// last (timed at the start of a long run); `None` for the f32 trainer or a group
    /// resumed finished.
    pub train_workgroups: Option<u32>,
    /// How Adam stepped the group's latents (`--latent-adam auto` resolved per group);
    /// `None` when the group was resumed finished.
    pub latent_adam: Option<LatentAdam>,
    /// The GPU time of a step of the kept try, Adam apart from the rest, when the run
    /// profiled its kernels (a long run on a device with timestamps).
    pub kernel_ms: Option<StepKernelMs>,
}

/// The report of a run.
#[derive(Clone, Debug, Serialize)]
pub struct CompressReport {
    /// The adapter that trained (with several devices, each distinct adapter in device
    /// order, `; `-separated).
    pub adapter: String,
    /// Inputs (files).
    pub inputs: String,
    /// Main steps per texture set.
    pub steps: u64,
    /// Seed.
    pub seed: u64,
    /// Recipe.
    pub train: TrainConfig,
    /// Rate control.
    pub rate: RateControl,
    /// Per group.
    pub groups: Vec<GroupReport>,
    /// Per material.
    pub materials: Vec<MaterialReport>,
    /// Mean over materials of their pooled PSNR (dB; an exact material counts 99).
    pub mean_psnr: Option<f64>,
    /// Mean bits per texel over materials.
    pub mean_bits_per_texel: f64,
    /// Mean over materials of their NTC ꟻLIP, when measured.
    pub mean_flip: Option<f64>,
    /// Targets rate control missed, one line per set: its name, its best pooled PSNR and
    /// the target.
    pub warnings: Vec<String>,
    /// Total wall-clock seconds.
    pub seconds: f64,
    /// Loss curves: (group, step, loss, psnr estimate).
    #[serde(skip)]
    pub curves: Vec<(usize, u64, f64, f64)>,
}

/// ꟻLIP of every material of `package` at mip 0 (decoded from the package on the CPU,
/// rounded to 8 bits) against `sets[i]`, the set of material `i`; the materials are
/// decoded in parallel.
pub(super) fn ntc_flip(
    package: &NtcPackage,
    sets: &[&TextureSet],
) -> Result<Vec<Option<FlipReport>>, CompressError> {
    let mut models = Vec::with_capacity(package.decoders.len());
    let mut jobs = Vec::new();
    for d in 0..package.decoders.len() {
        let (model, indices) = package.group_model(d as u32)?;
        jobs.extend(
            indices
                .into_iter()
                .enumerate()
                .map(|(local, i)| (d, local, i)),
        );
        models.push(model);
    }
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, jobs.len().max(1));
    let done: Vec<Result<Vec<(usize, FlipReport)>, CompressError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let (models, jobs) = (&models, &jobs);
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for &(d, local, i) in jobs.iter().skip(w).step_by(workers) {
                        let (Some(set), Some(mip0)) =
                            (sets.get(i), sets.get(i).and_then(|s| s.mips.first()))
                        else {
                            continue;
                        };
                        let decoded: Vec<u8> = decode_mip(&models[d], local, 0)?
                            .into_iter()
                            .map(quantize_u8)
                            .collect();
                        let report = flip_set_mip(
                            &mip0.texels,
                            &decoded,
                            mip0.width,
                            mip0.height,
                            set.present,
                        );
                        out.push((i, report));
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut flips = vec![None; package.materials.len()];
    for part in done {
        for (i, report) in part? {
            flips[i] = Some(report);
        }
    }
    Ok(flips)
}

impl CompressReport {
    /// Every file [`write`](Self::write) writes for `path`: the JSON, the Markdown table,
    /// the curves CSV and the chart.
    pub fn files(path: &Path) -> [PathBuf; 4] {
        [
            path.to_path_buf(),
            path.with_extension("md"),
            path.with_extension("curves.csv"),
            path.with_extension("curves.png"),
        ]
    }

    /// Write the report: JSON at `path`, and beside it the Markdown table (`.md`), the
    /// loss curves (`.curves.csv`) and their chart (`.curves.png`, 1200×420).
    pub fn write(&self, path: &Path) -> Result<(), CompressError> {
        write_file(path, pretty_json(self, path)?.as_bytes())?;
        write_file(&path.with_extension("md"), self.markdown().as_bytes())?;
        write_file(
            &path.with_extension("curves.csv"),
            self.curves_csv().as_bytes(),
        )?;
        write_panels_png(
            &path.with_extension("curves.png"),
            &self.curve_panels(),
            1200,
            420,
        )?;
        Ok(())
    }

    /// The loss curves as two charts: loss (log scale) against step on the left, the
    /// PSNR estimate on the right, one line per group.
    pub fn curve_panels(&self) -> [Panel; 2] {
        let groups = self.curves.iter().map(|c| c.0).max().map_or(0, |g| g + 1);
        let series = |value: fn(&(usize, u64, f64, f64)) -> f64| -> Vec<Series> {
            (0..groups)
                .map(|g| Series {
                    label: format!("group {g}"),
                    points: self
                        .curves
                        .iter()
                        .filter(|c| c.0 == g)
                        .map(|c| (c.1 as f64, value(c)))
                        .collect(),
                })
                .collect()
        };
        [
            Panel {
                title: "training loss".into(),
                x_label: "step".into(),
                y_label: "loss".into(),
                log_y: true,
                series: series(|c| c.2),
                ..Panel::default()
            },
            Panel {
                title: "PSNR estimate (dB)".into(),
                x_label: "step".into(),
                y_label: "dB".into(),
                series: series(|c| c.3),
                ..Panel::default()
            },
        ]
    }

    /// The loss curves as CSV: `group,step,loss,psnr_estimate`.
    pub fn curves_csv(&self) -> String {
        let mut s = String::from("group,step,loss,psnr_estimate\n");
        for (g, step, loss, psnr) in &self.curves {
            s.push_str(&format!("{g},{step},{loss},{psnr}\n"));
        }
        s
    }

    /// Markdown: the warnings of missed targets, a table of one row per material, NTC
    /// next to the BCn baselines by pooled PSNR (dB at mip 0, over every present channel)
    /// and mean ꟻLIP, then a table of the PSNR per channel group and, when measured, one
    /// of the ꟻLIP per image. An exact match reads `99.00 (exact)`.
    pub fn markdown(&self) -> String {
        let baselines = ["BC1/BC5", "BC7/BC5", PROTOCOL];
        let mut s = String::new();
        if !self.warnings.is_empty() {
            s.push_str("**Warnings**\n\n");
            for w in &self.warnings {
                s.push_str(&format!("- {w}\n"));
            }
            s.push('\n');
        }
        s.push_str("| material | size | preset | NTC bpt | NTC PSNR | NTC ꟻLIP |");
        for b in baselines {
            s.push_str(&format!(" {b} bpt | {b} PSNR | {b} ꟻLIP |"));
        }
        s.push_str(&format!("\n|{}\n", "---|".repeat(6 + 3 * baselines.len())));
        let f = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.2}"));
        let fl = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.4}"));
        let p = |v: Option<Psnr>| v.map_or("–".to_string(), |v| v.to_string());
        let flip_of = |r: &Option<FlipReport>| r.as_ref().and_then(|r| r.mean);
        for m in &self.materials {
            let bcn = |name: &str| m.bcn.iter().find(|b| b.name == name);
            s.push_str(&format!(
                "| {} | {}×{} | {} | {:.2} | {} | {} |",
                m.name,
                m.width,
                m.height,
                preset_name(m.preset),
                m.bits_per_texel,
                p(m.psnr.pooled),
                fl(flip_of(&m.flip))
            ));
            for b in baselines.map(bcn) {
                s.push_str(&format!(
                    " {} | {} | {} |",
                    f(b.map(|b| b.bits_per_texel)),
                    p(b.and_then(|b| b.psnr_mip0.pooled)),
                    fl(b.and_then(|b| flip_of(&b.flip_mip0)))
                ));
            }
            s.push('\n');
        }
        s.push_str("\nPSNR per channel group (dB, mip 0):\n\n| material | group | NTC |");
        for b in baselines {
            s.push_str(&format!(" {b} |"));
        }
        s.push_str(&format!("\n|{}\n", "---|".repeat(3 + baselines.len())));
        for m in &self.materials {
            for g in &m.psnr.groups {
                s.push_str(&format!("| {} | {} | {} |", m.name, g.group, g.psnr));
                for b in baselines {
                    let bc = m.bcn.iter().find(|r| r.name == b);
                    s.push_str(&format!(
                        " {} |",
                        p(bc.and_then(|r| r.psnr_mip0.group(&g.group)))
                    ));
                }
                s.push('\n');
            }
        }
        if self.materials.iter().any(|m| m.flip.is_some()) {
            s.push_str(
                "\nꟻLIP per image (mean, mip 0; lower is better):\n\n| material | image | NTC |",
            );
            for b in baselines {
                s.push_str(&format!(" {b} |"));
            }
            s.push_str(&format!("\n|{}\n", "---|".repeat(3 + baselines.len())));
            for m in &self.materials {
                for image in m.flip.iter().flat_map(|f| &f.images) {
                    s.push_str(&format!(
                        "| {} | {} | {:.4} |",
                        m.name, image.image, image.mean
                    ));
                    for b in baselines {
                        let bc = m.bcn.iter().find(|r| r.name == b);
                        s.push_str(&format!(
                            " {} |",
                            fl(bc.and_then(|r| r.flip_mip0.as_ref()?.image(&image.image)))
                        ));
                    }
                    s.push('\n');
                }
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(curves: Vec<(usize, u64, f64, f64)>) -> CompressReport {
        CompressReport {
            adapter: "test".into(),
            inputs: "a.csv".into(),
            steps: 20,
            seed: 1,
            train: TrainConfig::default(),
            rate: RateControl::Fixed,
            groups: Vec::new(),
            materials: Vec::new(),
            mean_psnr: None,
            mean_bits_per_texel: 0.0,
            mean_flip: None,
            warnings: Vec::new(),
            seconds: 0.0,
            curves,
        }
    }

    #[test]
    fn report_files_and_curve_panels() {
        let curves: Vec<_> = (0..2)
            .flat_map(|g| {
                (1..=20u64).map(move |s| (g, s * 10, 0.1 / s as f64, 20.0 + s as f64 + g as f64))
            })
            .collect();
        let r = report(curves);
        let [loss, psnr] = r.curve_panels();
        assert!(loss.log_y && !psnr.log_y);
        assert_eq!(loss.series.len(), 2);
        assert_eq!(loss.series[1].label, "group 1");
        assert_eq!(loss.series[1].points[0], (10.0, 0.1));
        assert_eq!(psnr.series[0].points[19], (200.0, 40.0));
        let dir = crate::io::test_dir("report");
        let path = dir.join("r.json");
        r.write(&path).unwrap();
        for ext in ["json", "md", "curves.csv", "curves.png"] {
            assert!(path.with_extension(ext).is_file(), "{ext}");
        }
        let png = image::open(path.with_extension("curves.png")).unwrap();
        assert_eq!((png.width(), png.height()), (1200, 420));
        let csv = std::fs::read_to_string(path.with_extension("curves.csv")).unwrap();
        assert!(
            csv.starts_with("group,step,loss,psnr_estimate\n0,10,0.1,21\n"),
            "{csv}"
        );
        let err = r.write(&dir.join("missing/r.json")).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }

    #[test]
    fn markdown_compares_pooled_psnr_and_lists_groups() {
        let ntc = PsnrReport::from_groups([(0, 1e-3, 300), (2, 0.0, 200)]);
        let bc = PsnrReport::from_groups([(0, 1e-2, 300), (2, 1e-4, 200)]);
        let mut r = report(Vec::new());
        r.materials.push(MaterialReport {
            name: "wood".into(),
            group: 0,
            width: 8,
            height: 8,
            channels: "base_color+normal".into(),
            bits_per_texel: 2.0,
            preset: Preset::High,
            psnr: ntc,
            target_psnr: Some(33.0),
            target_reached: Some(false),
            rate_tries: vec![
                RateTry {
                    preset: Preset::Low,
                    steps: 1,
                    psnr_pooled: Some(Psnr::from_mse(5e-4)),
                },
                RateTry {
                    preset: Preset::Low,
                    steps: 20,
                    psnr_pooled: Some(Psnr::from_mse(1e-3)),
                },
                RateTry {
                    preset: Preset::High,
                    steps: 20,
                    psnr_pooled: Some(Psnr::from_mse(6e-4)),
                },
            ],
            flip: Some(FlipReport {
                mean: Some(0.05),
                images: vec![crate::texture::flip::ImageFlip {
                    image: "base_color".into(),
                    mean: 0.05,
                }],
            }),
            bcn: vec![BcnResult {
                name: "BC1/BC5",
                bytes: 64,
                bits_per_texel: 8.0,
                psnr_mip0: bc.clone(),
                psnr_chain: bc,
                flip_mip0: None,
            }],
        });
        r.warnings = r
            .materials
            .iter()
            .filter_map(MaterialReport::missed)
            .collect();
        let md = r.markdown();
        // Pooled NTC: (300 · 1e-3 + 200 · 0) / 500 = 6e-4 → 32.22 dB; pooled BC1/BC5:
        // (300 · 1e-2 + 200 · 1e-4) / 500 = 6.04e-3 → 22.19 dB.
        assert!(
            md.contains(
                "| wood | 8×8 | high | 2.00 | 32.22 | 0.0500 | 8.00 | 22.19 | – | – | – | – | – | – | – |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| wood | base_color | 30.00 | 20.00 | – | – |"),
            "{md}"
        );
        assert!(
            md.contains("| wood | normal | 99.00 (exact) | 40.00 | – | – |"),
            "{md}"
        );
        assert!(
            md.contains("| wood | base_color | 0.0500 | – | – | – |"),
            "{md}"
        );
        // The missed target names the set, its best full try (32.22 dB at high; not the
        // probe) and the target.
        assert_eq!(
            r.warnings,
            [
                "set `wood` missed its target: best pooled PSNR 32.22 dB (preset high) < target 33.00 dB"
            ]
        );
        assert!(
            md.starts_with("**Warnings**\n\n- set `wood` missed"),
            "{md}"
        );
        r.materials[0].target_reached = Some(true);
        assert_eq!(r.materials[0].missed(), None);
    }
}
