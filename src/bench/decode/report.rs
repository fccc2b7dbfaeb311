//! `bench decode`'s report: CSV, Markdown (Tables 5 and 6, stage costs, the
//! divergence-free decode against per-tile grouping, peaks) and the chart.

use super::*;

/// The files [`write_decode_report`] writes into its folder.
pub const DECODE_REPORT_FILES: [&str; 4] = ["decode.json", "decode.csv", "decode.md", "decode.png"];

impl DecodeRow {
    /// `kernel` or `kernel tile`.
    pub fn variant(&self) -> String {
        self.tile
            .map_or(self.kernel.to_string(), |t| format!("{} {t}", self.kernel))
    }
}

impl DecodeBenchReport {
    /// The row of `variant` on a case, if measured.
    fn row(&self, variant: &str, size: u32, mix: u32, shared: bool) -> Option<&DecodeRow> {
        self.rows
            .iter()
            .find(|r| r.variant() == variant && (r.size, r.mix, r.shared) == (size, mix, shared))
    }

    /// The median of `variant` on a case, if measured.
    fn median(&self, variant: &str, size: u32, mix: u32, shared: bool) -> Option<f64> {
        self.row(variant, size, mix, shared).map(|r| r.ms.median)
    }

    /// Variants in measuring order.
    fn variants(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for r in &self.rows {
            if !v.contains(&r.variant()) {
                v.push(r.variant());
            }
        }
        v
    }

    /// The size of Table 6 (the one with every mix measured, nearest 1024²).
    fn table6_size(&self) -> Option<u32> {
        self.sizes
            .iter()
            .copied()
            .filter(|&s| self.rows.iter().any(|r| r.size == s && r.shared))
            .min_by_key(|s| s.abs_diff(1024))
    }

    /// Every row as CSV.
    pub fn csv(&self) -> String {
        let mut out = String::from(
            "size,mix,shared,decoders,kernel,tile,median_ms,p10_ms,p90_ms,remeasured,unstable,\
             stages,tflops,bound_by,fraction_of_peak,fraction_of_bandwidth,frames,max_error,equal\n",
        );
        for r in &self.rows {
            let stages: Vec<String> = r
                .stages
                .iter()
                .map(|(l, ms)| format!("{l}={ms:.4}"))
                .collect();
            out.push_str(&format!(
                "{},{},{},{},{},{},{:.4},{:.4},{:.4},{},{},{},{:.3},{},{},{},{},{},{}\n",
                r.size,
                r.mix,
                r.shared,
                r.decoders,
                r.kernel,
                r.tile.map_or(String::new(), |t| t.to_string()),
                r.ms.median,
                r.ms.p10,
                r.ms.p90,
                r.remeasured,
                r.unstable,
                stages.join(" "),
                r.tflops,
                r.bound_by,
                r.fraction_of_peak
                    .map_or(String::new(), |f| format!("{f:.4}")),
                r.fraction_of_bandwidth
                    .map_or(String::new(), |f| format!("{f:.4}")),
                r.frames,
                r.check
                    .as_ref()
                    .map_or(String::new(), |c| format!("{:.3e}", c.max_error)),
                r.check
                    .as_ref()
                    .map_or(String::new(), |c| c.equal.to_string()),
            ));
        }
        out
    }

    /// Adapter facts, peaks, Table 5, Table 6 and every row, as Markdown.
    pub fn markdown(&self) -> String {
        let mut md = format!(
            "Adapter: {} (subgroups {}–{}); features: {}\n\nCommand: `{}`\n\nDecoder \
             {} ({:.0} FLOP per pixel), {} materials of {}²; {:.0} s.\n\n## Peaks\n\n\
             | peak | value | ms | equals CPU |\n|---|---|---|---|\n",
            self.adapter,
            self.subgroup_sizes.0,
            self.subgroup_sizes.1,
            self.features,
            self.command,
            self.layout,
            self.flops_per_pixel,
            self.materials,
            self.material_side,
            self.seconds
        );
        for p in &self.peaks {
            md.push_str(&format!(
                "| {} | {:.2} {} | {:.3} | {} |\n",
                p.name,
                p.value,
                p.unit,
                p.ms,
                p.equal.map_or("–".to_owned(), |e| e.to_string())
            ));
        }
        let variants = self.variants();
        let first_mix = self.mixes.first().copied().unwrap_or(1);
        let table = |md: &mut String,
                     title: String,
                     heads: Vec<String>,
                     cell: &dyn Fn(&str, usize) -> String| {
            md.push_str(&format!("\n## {title}\n\n| kernel |"));
            for h in &heads {
                md.push_str(&format!(" {h} |"));
            }
            md.push_str(&format!("\n|---|{}\n", "---|".repeat(heads.len())));
            for v in &variants {
                md.push_str(&format!("| {v} |"));
                for c in 0..heads.len() {
                    md.push_str(&cell(v, c));
                }
                md.push('\n');
            }
        };
        table(
            &mut md,
            format!("Table 5: ms against resolution ({first_mix} material per tile, separate)"),
            self.sizes.iter().map(|s| format!("{s}²")).collect(),
            &|v, c| match self.row(v, self.sizes[c], first_mix, false) {
                Some(r) => format!(" {} |", trust::spread_cell(&r.ms, r.unstable)),
                None => " – |".to_owned(),
            },
        );
        if let Some(s) = self.table6_size() {
            table(
                &mut md,
                format!(
                    "Table 6: ms at {s}² against materials per 8×8 tile, separate / shared (ratio)"
                ),
                self.mixes.iter().map(|k| format!("k={k}")).collect(),
                &|v, c| {
                    let k = self.mixes[c];
                    match (self.row(v, s, k, false), self.row(v, s, k, true)) {
                        (Some(a), Some(b)) => format!(
                            " {} / {} ({:.2}×) |",
                            trust::spread_cell(&a.ms, a.unstable),
                            trust::spread_cell(&b.ms, b.unstable),
                            a.ms.median / b.ms.median
                        ),
                        _ => " – |".to_owned(),
                    }
                },
            );
        }
        let pct = |f: Option<f64>| f.map_or("–".to_owned(), |f| format!("{:.1} %", 100.0 * f));
        if !self.stage_rows.is_empty() {
            md.push_str(
                "\n## Stage costs (ntc.decode with one stage alone; ms (p10–p90), rate, of \
                 peak)\n\n| size | kernel | whole decode | input | MLP | output | bound by |\n\
                 |---|---|---|---|---|---|---|\n",
            );
            for r in &self.stage_rows {
                md.push_str(&format!(
                    "| {}² | {} | {} |",
                    r.size,
                    r.variant(),
                    trust::spread_cell(&r.all, r.all_unstable)
                ));
                for stage in DecodeStage::SINGLE {
                    match r.stages.iter().find(|c| c.stage == stage) {
                        Some(c) => md.push_str(&format!(
                            " {}, {:.3} {} ({} of {}) |",
                            trust::spread_cell(&c.ms, c.unstable),
                            c.rate,
                            c.unit,
                            pct(c.fraction_of_peak),
                            c.against
                        )),
                        None => md.push_str(" – |"),
                    }
                }
                md.push_str(&format!(" {} |\n", r.bound_by.name()));
            }
        }
        md.push_str(
            "\n## Every measurement\n\n| size | k | decoders | variant | ms median | p10 | p90 | \
             unstable | stages | TFLOP/s | of peak | of bandwidth | max error | equal |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for r in &self.rows {
            let stages: Vec<String> = r
                .stages
                .iter()
                .map(|(l, ms)| format!("{} {ms:.3}", l.trim_start_matches("ntc.")))
                .collect();
            md.push_str(&format!(
                "| {}² | {}{} | {} | {} | {:.3} | {:.3} | {:.3} | {} | {} | {:.2} | {} ({}) | {} | {} | {} |\n",
                r.size,
                r.mix,
                if r.shared { " shared" } else { "" },
                r.decoders,
                r.variant(),
                r.ms.median,
                r.ms.p10,
                r.ms.p90,
                match (r.unstable, r.remeasured) {
                    (true, _) => "UNSTABLE",
                    (false, true) => "re-measured",
                    _ => "",
                },
                stages.join(", "),
                r.tflops,
                pct(r.fraction_of_peak),
                r.bound_by,
                pct(r.fraction_of_bandwidth),
                r.check.as_ref().map_or("–".to_owned(), |c| format!("{:.2e}", c.max_error)),
                r.check.as_ref().map_or("–".to_owned(), |c| c.state().to_owned()),
            ));
        }
        if !self.skipped.is_empty() {
            md.push_str("\nSkipped:\n\n");
            for s in &self.skipped {
                md.push_str(&format!("- {s}\n"));
            }
        }
        md
    }

    /// Two panels: ms against resolution (Table 5) and the speed-up of the shared decoder
    /// against materials per tile (Table 6).
    pub fn write_png(&self, path: &std::path::Path) -> Result<(), BenchError> {
        let variants = self.variants();
        let first_mix = self.mixes.first().copied().unwrap_or(1);
        let time = Panel {
            title: format!("decode time, {first_mix} material per tile"),
            x_label: "frame side (pixels)".into(),
            y_label: "ms".into(),
            log_x: true,
            log_y: true,
            series: variants
                .iter()
                .map(|v| Series {
                    label: v.clone(),
                    points: self
                        .sizes
                        .iter()
                        .filter_map(|&s| {
                            self.median(v, s, first_mix, false)
                                .map(|ms| (f64::from(s), ms))
                        })
                        .collect(),
                })
                .collect(),
            legend: Some(SeriesLabelPosition::UpperLeft),
            markers: true,
            ..Default::default()
        };
        let s6 = self.table6_size();
        let speedup = Panel {
            title: format!(
                "separate / shared at {}²",
                s6.map_or("–".to_owned(), |s| s.to_string())
            ),
            x_label: "materials per 8×8 tile".into(),
            y_label: "speed-up of the shared decoder".into(),
            series: variants
                .iter()
                .map(|v| Series {
                    label: v.clone(),
                    points: s6.map_or_else(Vec::new, |s| {
                        self.mixes
                            .iter()
                            .filter_map(|&k| {
                                Some((
                                    f64::from(k),
                                    self.median(v, s, k, false)? / self.median(v, s, k, true)?,
                                ))
                            })
                            .collect()
                    }),
                })
                .collect(),
            references: vec![("1×".into(), 1.0)],
            legend: Some(SeriesLabelPosition::UpperLeft),
            markers: true,
            ..Default::default()
        };
        write_panels_png(path, &[time, speedup], 1600, 700)?;
        Ok(())
    }
}

/// Write `report` into `dir` (created when missing): `decode.json`, `decode.csv`,
/// `decode.md`, `decode.png`. Returns the Markdown.
pub fn write_decode_report(
    dir: &std::path::Path,
    report: &DecodeBenchReport,
) -> Result<String, BenchError> {
    crate::bench::output::write_report_files(
        dir,
        "decode",
        report,
        report.csv(),
        report.markdown(),
        |path| report.write_png(path),
    )
}
