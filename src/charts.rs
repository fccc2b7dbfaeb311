//! Line charts as PNGs for every report (plotters, drawn into memory and written with
//! the project's atomic PNG writer): side-by-side [`Panel`]s of labelled lines, log or
//! linear axes, dashed reference lines and a legend ([`write_panels_png`]). The reports
//! build their panels: the compression run's loss curves (`ntc::compress`), the
//! evaluation's freezing curves and decoder-count sweep (`eval`), the benchmark's
//! material-pass times (`bench`). Text uses the Hack font that egui ships, so no system
//! fonts are needed.
//!
//! Knows nothing about what it plots.

use std::ops::Range;
use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

pub use plotters::chart::SeriesLabelPosition;

use crate::texture::{TextureError, write_png_rgba8};

/// Errors while plotting.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Drawing failed.
    #[error("cannot draw the plot {path}: {message}")]
    Draw {
        /// The output.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// Writing failed.
    #[error(transparent)]
    Write(#[from] TextureError),
}

/// One line of a panel.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Its legend entry.
    pub label: String,
    /// `(x, y)` points in drawing order; non-finite points, and non-positive values on a
    /// log axis, are left out.
    pub points: Vec<(f64, f64)>,
}

/// One chart: axes, lines and horizontal reference lines. Axis ranges follow the data
/// (a linear x axis starts at 0 or below).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Panel {
    /// Caption above the chart.
    pub title: String,
    /// Description of the x axis.
    pub x_label: String,
    /// Description of the y axis.
    pub y_label: String,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// The lines, coloured by index.
    pub series: Vec<Series>,
    /// Horizontal dashed reference lines: `(label, y)`.
    pub references: Vec<(String, f64)>,
    /// Where to draw a legend of the labels (`None`: no legend): this corner unless the
    /// lines pass through it, else the corner they cross least.
    pub legend: Option<SeriesLabelPosition>,
    /// Mark every point with a dot (for sparse data such as sweeps).
    pub markers: bool,
    /// Names of the x positions 1, 2, …, n: a categorical x axis from 0.5 to n + 0.5 with
    /// one labelled tick per name, its points marked and not joined (a category without a
    /// point leaves a gap, not a line across it); empty for a numeric x axis.
    pub x_categories: Vec<String>,
}

/// Draw `panels` side by side into a `width`×`height` PNG at `path`.
pub fn write_panels_png(
    path: &Path,
    panels: &[Panel],
    width: u32,
    height: u32,
) -> Result<(), PlotError> {
    static FONT: std::sync::Once = std::sync::Once::new();
    FONT.call_once(|| {
        // The font is a valid TrueType file compiled into egui; failure only means no text.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            epaint_default_fonts::HACK_REGULAR,
        );
    });
    let err = |message: String| PlotError::Draw {
        path: path.display().to_string(),
        message,
    };
    let mut rgb = vec![0u8; (width as usize) * (height as usize) * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let areas = root.split_evenly((1, panels.len().max(1)));
        for (area, panel) in areas.iter().zip(panels) {
            draw_panel(area, panel).map_err(err)?;
        }
        root.present().map_err(|e| err(e.to_string()))?;
    }
    let rgba: Vec<u8> = rgb
        .chunks_exact(3)
        .flat_map(|p| [p[0], p[1], p[2], 255])
        .collect();
    write_png_rgba8(path, width, height, &rgba)?;
    Ok(())
}

/// The points of a series that a panel with these axes can show.
fn drawable(points: &[(f64, f64)], log_x: bool, log_y: bool) -> Vec<(f64, f64)> {
    let ok = |v: f64, log: bool| v.is_finite() && (!log || v > 0.0);
    points
        .iter()
        .copied()
        .filter(|&(x, y)| ok(x, log_x) && ok(y, log_y))
        .collect()
}

/// The range of an axis over `values` (already drawable). Log axes get a 10 % margin
/// on both sides; a linear x axis starts at 0 (or below), a linear y axis gets a margin
/// of 5 % of the span, at least 3 % of the largest magnitude (1 when every value is 0),
/// and does not go below 0 when no value does (timings of a few µs stay on a positive
/// axis).
fn axis_range(values: &[f64], log: bool, is_x: bool) -> Range<f64> {
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return if log { 1e-6..1.0 } else { 0.0..1.0 };
    }
    if log {
        return lo / 1.1..hi * 1.1;
    }
    if is_x {
        let start = lo.min(0.0);
        return start..hi.max(start + 1.0);
    }
    let magnitude = lo.abs().max(hi.abs());
    let pad = ((hi - lo) * 0.05).max(magnitude * 0.03);
    let pad = if pad > 0.0 { pad } else { 1.0 };
    let start = if lo >= 0.0 {
        (lo - pad).max(0.0)
    } else {
        lo - pad
    };
    start..hi + pad
}

/// The label of position `v` of a categorical axis: the name of category `v` (1-based)
/// at whole numbers, nothing between them or outside.
fn category_label(names: &[String], v: f64) -> String {
    let i = v.round();
    if (v - i).abs() > 1e-6 || i < 1.0 {
        return String::new();
    }
    names.get(i as usize - 1).cloned().unwrap_or_default()
}

/// Draw one panel into `area`, dispatching on its axis kinds.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
) -> Result<(), String> {
    let lines: Vec<Vec<(f64, f64)>> = panel
        .series
        .iter()
        .map(|s| drawable(&s.points, panel.log_x, panel.log_y))
        .collect();
    let xs: Vec<f64> = lines.iter().flatten().map(|p| p.0).collect();
    let mut ys: Vec<f64> = lines.iter().flatten().map(|p| p.1).collect();
    ys.extend(
        panel
            .references
            .iter()
            .map(|r| r.1)
            .filter(|&y| y.is_finite() && (!panel.log_y || y > 0.0)),
    );
    let categories = panel.x_categories.len();
    let x = if categories > 0 {
        0.5..categories as f64 + 0.5
    } else {
        axis_range(&xs, panel.log_x, true)
    };
    let y = axis_range(&ys, panel.log_y, false);
    let legend = panel
        .legend
        .as_ref()
        .map(|preferred| legend_corner(preferred, &lines, (&x, panel.log_x), (&y, panel.log_y)));
    // Log axes get their ticks from `log_ticks` (plotters' own repeat labels, such as
    // two `10`s on an axis from 0.9 to 69).
    let log = |r: Range<f64>| {
        let (bold, light) = log_ticks(&r);
        r.log_scale().with_key_points(bold).with_light_points(light)
    };
    match (panel.log_x && categories == 0, panel.log_y) {
        (false, false) => draw_lines(area, panel, legend, &lines, x, y),
        (false, true) => draw_lines(area, panel, legend, &lines, x, log(y)),
        (true, false) => draw_lines(area, panel, legend, &lines, log(x), y),
        (true, true) => draw_lines(area, panel, legend, &lines, log(x), log(y)),
    }
}

/// Ticks of a log axis over `range`: labelled ones (1, 2 and 5 times each power of ten;
/// every integer multiple when the range spans less than a decade, only the powers when it
/// spans more than five) and grid lines at every integer multiple of each power of ten.
fn log_ticks(range: &Range<f64>) -> (Vec<f64>, Vec<f64>) {
    let (lo, hi) = (range.start.min(range.end), range.start.max(range.end));
    if !(lo > 0.0 && hi.is_finite()) {
        return (Vec::new(), Vec::new());
    }
    let decades = hi.log10() - lo.log10();
    let labelled: &[u32] = if decades < 1.0 {
        &[1, 2, 3, 4, 5, 6, 7, 8, 9]
    } else if decades <= 5.0 {
        &[1, 2, 5]
    } else {
        &[1]
    };
    let (mut bold, mut light) = (Vec::new(), Vec::new());
    for exponent in lo.log10().floor() as i32..=hi.log10().ceil() as i32 {
        for k in 1..=9u32 {
            // k × 10^e correctly rounded: a division by an exact power of ten for negative
            // exponents, so 9 × 10⁻³ is 0.009, not 0.009000000000000001.
            let v = if exponent < 0 {
                f64::from(k) / 10f64.powi(-exponent)
            } else {
                f64::from(k) * 10f64.powi(exponent)
            };
            if (lo..=hi).contains(&v) {
                light.push(v);
                if labelled.contains(&k) {
                    bold.push(v);
                }
            }
        }
    }
    (bold, light)
}

/// The corner for a legend: `preferred` unless the lines pass through it, else the one they
/// pass through least (ties in the order preferred, upper right, upper left, lower right,
/// lower left). A corner is the outer third of both axes; lines are sampled along their
/// segments in the axes' own (log or linear) scale.
fn legend_corner(
    preferred: &SeriesLabelPosition,
    lines: &[Vec<(f64, f64)>],
    x: (&Range<f64>, bool),
    y: (&Range<f64>, bool),
) -> SeriesLabelPosition {
    use SeriesLabelPosition::{LowerLeft, LowerRight, UpperLeft, UpperRight};
    let unit = |v: f64, (r, log): (&Range<f64>, bool)| {
        let f = |v: f64| if log { v.ln() } else { v };
        let span = f(r.end) - f(r.start);
        if span == 0.0 {
            0.5
        } else {
            (f(v) - f(r.start)) / span
        }
    };
    let mut samples = Vec::new();
    for line in lines {
        let pts: Vec<(f64, f64)> = line
            .iter()
            .map(|&(a, b)| (unit(a, x), unit(b, y)))
            .collect();
        samples.extend(pts.first().copied());
        for w in pts.windows(2) {
            for i in 1..=16 {
                let t = f64::from(i) / 16.0;
                samples.push((
                    w[0].0 + (w[1].0 - w[0].0) * t,
                    w[0].1 + (w[1].1 - w[0].1) * t,
                ));
            }
        }
    }
    let crossings = |corner: &SeriesLabelPosition| {
        let (right, upper) = match corner {
            UpperRight => (true, true),
            UpperLeft => (false, true),
            LowerRight => (true, false),
            LowerLeft => (false, false),
            _ => return usize::MAX,
        };
        samples
            .iter()
            .filter(|&&(u, v)| {
                (if right { u > 2.0 / 3.0 } else { u < 1.0 / 3.0 })
                    && (if upper { v > 2.0 / 3.0 } else { v < 1.0 / 3.0 })
            })
            .count()
    };
    let mut best = (crossings(preferred), preferred.clone());
    for corner in [UpperRight, UpperLeft, LowerRight, LowerLeft] {
        let n = crossings(&corner);
        if n < best.0 {
            best = (n, corner);
        }
    }
    best.1
}

/// Draw axes, `lines` (the panel's series, filtered), references and legend.
fn draw_lines<DB, X, Y>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
    legend: Option<SeriesLabelPosition>,
    lines: &[Vec<(f64, f64)>],
    x: X,
    y: Y,
) -> Result<(), String>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(x, y)
        .map_err(|x| e(&x))?;
    let scientific = |v: &f64| format!("{v:.1e}");
    // Steps and counts: `10`, not `10.0`; `1.5` where a label falls between integers.
    // A categorical axis names its positions.
    let compact = |v: &f64| match panel.x_categories.len() {
        0 => format!("{}", (v * 100.0).round() / 100.0),
        _ => category_label(&panel.x_categories, *v),
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(panel.x_label.as_str())
        .y_desc(panel.y_label.as_str())
        .x_label_formatter(&compact);
    if !panel.x_categories.is_empty() {
        // Whole numbers in 0.5 … n + 0.5: one tick per category.
        mesh.x_labels(panel.x_categories.len() + 1);
    }
    if panel.log_y {
        mesh.y_label_formatter(&scientific);
    }
    mesh.draw().map_err(|x| e(&x))?;
    let (x0, x1) = {
        let r = chart.x_range();
        (r.start, r.end)
    };
    for (i, (series, points)) in panel.series.iter().zip(lines).enumerate() {
        let colour = Palette99::pick(i).to_rgba();
        if !panel.x_categories.is_empty() {
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 4, colour.filled())))
                .map_err(|x| e(&x))?
                .label(series.label.as_str())
                .legend(move |(x, y)| Circle::new((x + 8, y), 4, colour.filled()));
            continue;
        }
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                colour.stroke_width(2),
            ))
            .map_err(|x| e(&x))?
            .label(series.label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2)));
        if panel.markers {
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                .map_err(|x| e(&x))?;
        }
    }
    for (label, value) in &panel.references {
        let grey = RGBColor(60, 60, 60);
        chart
            .draw_series(DashedLineSeries::new(
                [(x0, *value), (x1, *value)],
                8,
                5,
                grey.stroke_width(2),
            ))
            .map_err(|x| e(&x))?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], grey.stroke_width(2)));
    }
    if let Some(position) = legend {
        chart
            .configure_series_labels()
            .position(position)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(|x| e(&x))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        crate::io::test_dir("charts").join(name)
    }

    /// Pixels darker than the white background and the light grid.
    fn dark_pixels(path: &Path) -> usize {
        let img = image::open(path).unwrap().to_rgba8();
        img.pixels().filter(|p| p.0[0] < 200).count()
    }

    #[test]
    fn axis_ranges_cover_the_data() {
        assert_eq!(axis_range(&[], true, false), 1e-6..1.0);
        assert_eq!(axis_range(&[], false, true), 0.0..1.0);
        assert_eq!(axis_range(&[3.0, 7.0], false, true), 0.0..7.0);
        let r = axis_range(&[30.0, 32.0], false, false);
        assert!(
            (r.start - 29.04).abs() < 1e-9 && (r.end - 32.96).abs() < 1e-9,
            "{r:?}"
        );
        // Small positive timings: a positive axis around them.
        let r = axis_range(&[0.02, 0.05], false, false);
        assert!(
            r.start > 0.015 && r.start < 0.02 && r.end > 0.05 && r.end < 0.06,
            "{r:?}"
        );
        assert_eq!(axis_range(&[0.0, 0.0], false, false), 0.0..1.0);
        let r = axis_range(&[-2.0, -1.0], false, false);
        assert!(r.start < -2.0 && r.end > -1.0, "{r:?}");
        let r = axis_range(&[0.01, 1.0], true, false);
        assert!(r.start < 0.01 && r.end > 1.0 && r.start > 0.0);
        // Log axes drop non-positive values; every axis drops non-finite ones.
        let pts = drawable(&[(1.0, 0.0), (2.0, f64::NAN), (3.0, 0.5)], false, true);
        assert_eq!(pts, vec![(3.0, 0.5)]);
    }

    #[test]
    fn log_ticks_label_each_value_once() {
        // The sweep's axis (m from 1 to 63 with the 10 % margins).
        let (bold, light) = log_ticks(&(1.0 / 1.1..63.0 * 1.1));
        assert_eq!(bold, vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0]);
        assert_eq!(light.len(), 9 + 6, "1–9 and 10–60: {light:?}");
        assert!(light.windows(2).all(|w| w[0] < w[1]), "{light:?}");
        // Loss values: less than a decade labels every multiple; exact decimals.
        let (bold, _) = log_ticks(&(2.5e-3..9.5e-3));
        assert_eq!(bold, vec![3e-3, 4e-3, 5e-3, 6e-3, 7e-3, 8e-3, 9e-3]);
        // Many decades: the powers only.
        let (bold, _) = log_ticks(&(1e-6..1.0));
        assert_eq!(bold, vec![1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]);
        assert_eq!(log_ticks(&(0.0..1.0)), (Vec::new(), Vec::new()));
    }

    #[test]
    fn the_legend_moves_off_the_lines() {
        use SeriesLabelPosition::{LowerRight, UpperLeft, UpperRight};
        let (x, y) = (0.0..10.0, 0.0..10.0);
        // A falling line crosses the upper left and the lower right.
        let falling = vec![vec![(0.0, 10.0), (10.0, 0.0)]];
        let at = |p: &SeriesLabelPosition, lines: &[Vec<(f64, f64)>]| {
            legend_corner(p, lines, (&x, false), (&y, false))
        };
        assert_eq!(at(&LowerRight, &falling), UpperRight);
        assert_eq!(at(&UpperRight, &falling), UpperRight);
        // A rising one leaves the upper left and lower right free: the preference holds.
        let rising = vec![vec![(0.0, 0.0), (10.0, 10.0)]];
        assert_eq!(at(&LowerRight, &rising), LowerRight);
        assert_eq!(at(&UpperRight, &rising), UpperLeft);
        // On a log x axis the corner is in log units: x = 5 of 1..10 is past two thirds
        // of the log scale (0.70), not of the linear one (0.44).
        let log_x = 1.0..10.0;
        let mid = vec![vec![(5.0, 9.0), (5.0, 9.5)]];
        assert_eq!(
            legend_corner(&UpperRight, &mid, (&log_x, true), (&y, false)),
            UpperLeft
        );
        assert_eq!(
            legend_corner(&UpperRight, &mid, (&log_x, false), (&y, false)),
            UpperRight
        );
    }

    #[test]
    fn panels_with_log_axes_references_and_legend() {
        let path = temp("panels.png");
        let series = |label: &str, shift: f64| Series {
            label: label.into(),
            points: [1.0f64, 2.0, 4.0, 8.0]
                .iter()
                .map(|&m| (m, 30.0 + shift + m.log2()))
                .collect(),
        };
        let sweep = Panel {
            title: "sweep".into(),
            x_label: "decoders".into(),
            y_label: "dB".into(),
            log_x: true,
            series: vec![series("a", 0.0), series("b", -0.5)],
            references: vec![("reference".into(), 34.0)],
            legend: Some(SeriesLabelPosition::LowerRight),
            markers: true,
            ..Panel::default()
        };
        write_panels_png(&path, std::slice::from_ref(&sweep), 480, 320).unwrap();
        let one = dark_pixels(&path);
        assert!(one > 300, "{one}");
        // Without lines the same axes draw clearly less.
        let empty = Panel {
            series: Vec::new(),
            references: Vec::new(),
            legend: None,
            ..sweep.clone()
        };
        write_panels_png(&path, &[empty], 480, 320).unwrap();
        assert!(dark_pixels(&path) < one, "lines add pixels");
        // Both axes logarithmic, two panels.
        let loglog = Panel {
            log_y: true,
            ..sweep
        };
        write_panels_png(&path, &[loglog.clone(), loglog], 800, 300).unwrap();
        assert_eq!(image::open(&path).unwrap().width(), 800);
    }

    #[test]
    fn categorical_axes_name_whole_positions_and_draw_points() {
        let names: Vec<String> = ["baseline", "clustered", "single"].map(String::from).into();
        assert_eq!(category_label(&names, 1.0), "baseline");
        assert_eq!(category_label(&names, 3.0), "single");
        for v in [0.0, 0.5, 1.5, 4.0, -1.0] {
            assert_eq!(category_label(&names, v), "", "{v}");
        }
        // A series without its second category: drawn as points, no line across the gap
        // (the same points on a numeric axis are joined by a line).
        let path = std::env::temp_dir().join(format!("neurotex-cat-{}.png", std::process::id()));
        let coloured = |panel: Panel| {
            write_panels_png(&path, &[panel], 480, 320).unwrap();
            let img = image::open(&path).unwrap().to_rgba8();
            img.pixels()
                .filter(|p| p.0[..3].iter().max().unwrap() - p.0[..3].iter().min().unwrap() > 60)
                .count()
        };
        let panel = |points: Vec<(f64, f64)>, categorical: bool| Panel {
            title: "t".into(),
            x_categories: if categorical {
                names.clone()
            } else {
                Vec::new()
            },
            series: vec![Series {
                label: "f32 8x8".into(),
                points,
            }],
            ..Panel::default()
        };
        let two = vec![(1.0, 0.02), (3.0, 0.05)];
        let three = vec![(1.0, 0.02), (2.0, 0.035), (3.0, 0.05)];
        let (two_points, three_points) = (
            coloured(panel(two.clone(), true)),
            coloured(panel(three, true)),
        );
        let line = coloured(panel(two, false));
        assert!(
            two_points > 0 && two_points < three_points,
            "{two_points} {three_points}"
        );
        assert!(line > 2 * two_points, "{line} {two_points}");
        std::fs::remove_file(&path).ok();
    }
}
