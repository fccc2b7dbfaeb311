//! The evaluation's charts as [`Panel`]s for [`write_panels_png`]: loss against step per
//! freezing setting (the paper's Figures 5–6) and mean PSNR against the number of
//! decoders per strategy, with the baseline as a reference line.
//!
//! [`write_panels_png`]: crate::charts::write_panels_png

use super::runs::Freeze;
use super::tables::{FreezingTable, SweepTable};
use crate::charts::{Panel, Series, SeriesLabelPosition};
use crate::cluster::Strategy;

/// Size of both charts in pixels.
pub const CHART_SIZE: (u32, u32) = (900, 560);

/// The legend entry of a freezing setting.
fn freeze_label(f: Freeze) -> String {
    match f {
        Freeze::Off => "no freezing".into(),
        Freeze::At(x) => format!("freezing from {:.0} %", x * 100.0),
    }
}

/// Loss (log scale) against step, one line per freezing setting.
pub fn freezing_panel(table: &FreezingTable) -> Panel {
    Panel {
        title: format!(
            "training loss, clustered ({} decoders), mean over groups",
            table.m
        ),
        x_label: "step".into(),
        y_label: "loss".into(),
        log_y: true,
        series: table
            .rows
            .iter()
            .map(|r| Series {
                label: freeze_label(r.freeze),
                points: r.curve.iter().map(|&(s, l)| (s as f64, l)).collect(),
            })
            .collect(),
        legend: Some(SeriesLabelPosition::UpperRight),
        ..Panel::default()
    }
}

/// Mean PSNR against decoders (log scale), one line per strategy, the baseline dashed.
pub fn sweep_panel(table: &SweepTable) -> Panel {
    Panel {
        references: table
            .baseline
            .map(|b| ("baseline".to_string(), b))
            .into_iter()
            .collect(),
        ..psnr_panel(
            "mean PSNR against the number of decoders",
            "decoders",
            table.strategies(),
            &table.rows,
            |r| (r.strategy, r.figures.decoders as f64, r.figures.mean_psnr),
        )
    }
}

/// Mean PSNR against `x_label` (log scale), one line per strategy of `strategies`: the
/// `(x, mean PSNR)` points of its rows, where `point` gives a row's strategy, x and mean
/// PSNR (rows without a PSNR are left out).
pub(super) fn psnr_panel<R>(
    title: &str,
    x_label: &str,
    strategies: Vec<Strategy>,
    rows: &[R],
    point: impl Fn(&R) -> (Strategy, f64, Option<f64>),
) -> Panel {
    Panel {
        title: title.into(),
        x_label: x_label.into(),
        y_label: "PSNR (dB)".into(),
        log_x: true,
        series: strategies
            .into_iter()
            .map(|st| Series {
                label: st.to_string(),
                points: rows
                    .iter()
                    .map(&point)
                    .filter(|&(s, _, _)| s == st)
                    .filter_map(|(_, x, psnr)| Some((x, psnr?)))
                    .collect(),
            })
            .collect(),
        legend: Some(SeriesLabelPosition::LowerRight),
        markers: true,
        ..Panel::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Strategy;
    use crate::eval::tables::{FreezingRow, RunFigures, SweepRow};

    #[test]
    fn freezing_lines_per_setting() {
        let row = |freeze, k: f64| FreezingRow {
            freeze,
            run: String::new(),
            mean_psnr: None,
            final_loss: None,
            curve: vec![(10, 0.1 * k), (20, 0.05 * k)],
        };
        let t = FreezingTable {
            m: 3,
            rows: vec![row(Freeze::Off, 1.0), row(Freeze::At(0.25), 0.5)],
        };
        let p = freezing_panel(&t);
        assert!(p.log_y && !p.log_x);
        assert_eq!(p.series.len(), 2);
        assert_eq!(p.series[0].label, "no freezing");
        assert_eq!(p.series[1].label, "freezing from 25 %");
        assert_eq!(p.series[1].points, vec![(10.0, 0.05), (20.0, 0.025)]);
    }

    #[test]
    fn sweep_lines_per_strategy_with_baseline() {
        let row = |m, strategy, psnr| SweepRow {
            m,
            strategy,
            run: String::new(),
            figures: RunFigures {
                decoders: m,
                mean_psnr: psnr,
                predicted: None,
                seconds: 0.0,
            },
        };
        let t = SweepTable {
            rows: vec![
                row(1, Strategy::Clustered, Some(30.0)),
                row(1, Strategy::Random, Some(30.0)),
                row(4, Strategy::Clustered, Some(33.0)),
                row(4, Strategy::Random, None),
            ],
            baseline: Some(35.0),
        };
        let p = sweep_panel(&t);
        assert_eq!(p.series.len(), 2);
        assert_eq!(p.series[0].points, vec![(1.0, 30.0), (4.0, 33.0)]);
        assert_eq!(p.series[1].points, vec![(1.0, 30.0)]);
        assert_eq!(p.references, vec![("baseline".to_string(), 35.0)]);
        let none = sweep_panel(&SweepTable {
            baseline: None,
            ..t
        });
        assert!(none.references.is_empty());
    }
}
