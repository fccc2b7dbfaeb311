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
    /// Where to draw a legend of the labels (`None`: no legend).
    pub legend: Option<SeriesLabelPosition>,
    /// Mark every point with a dot (for sparse data such as sweeps).
    pub markers: bool,
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
/// of 5 % of the span, at least 1.
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
    let pad = ((hi - lo) * 0.05).max(1.0);
    lo - pad..hi + pad
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
    let x = axis_range(&xs, panel.log_x, true);
    let y = axis_range(&ys, panel.log_y, false);
    match (panel.log_x, panel.log_y) {
        (false, false) => draw_lines(area, panel, &lines, x, y),
        (false, true) => draw_lines(area, panel, &lines, x, y.log_scale()),
        (true, false) => draw_lines(area, panel, &lines, x.log_scale(), y),
        (true, true) => draw_lines(area, panel, &lines, x.log_scale(), y.log_scale()),
    }
}

/// Draw axes, `lines` (the panel's series, filtered), references and legend.
fn draw_lines<DB, X, Y>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
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
    let compact = |v: &f64| format!("{}", (v * 100.0).round() / 100.0);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(panel.x_label.as_str())
        .y_desc(panel.y_label.as_str())
        .x_label_formatter(&compact);
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
    if let Some(position) = &panel.legend {
        chart
            .configure_series_labels()
            .position(position.clone())
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
        let dir = std::env::temp_dir().join(format!("neurotex-charts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
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
        assert_eq!(axis_range(&[30.0, 32.0], false, false), 29.0..33.0);
        let r = axis_range(&[0.01, 1.0], true, false);
        assert!(r.start < 0.01 && r.end > 1.0 && r.start > 0.0);
        // Log axes drop non-positive values; every axis drops non-finite ones.
        let pts = drawable(&[(1.0, 0.0), (2.0, f64::NAN), (3.0, 0.5)], false, true);
        assert_eq!(pts, vec![(3.0, 0.5)]);
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
}
