//! Loss and PSNR curves of a compression run as a PNG (plotters, drawn into memory and
//! written with the project's atomic PNG writer). Text uses the Hack font that egui
//! ships, so no system fonts are needed.

use std::path::Path;

use plotters::prelude::*;

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

/// Plot `curves` — `(group, step, loss, psnr_estimate)` rows — into a `width`×`height`
/// PNG: loss (log scale) on the left, PSNR estimate on the right, one colour per group.
pub fn write_curves_png(
    path: &Path,
    curves: &[(usize, u64, f64, f64)],
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
    let err = |e: &dyn std::fmt::Display| PlotError::Draw {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let mut rgb = vec![0u8; (width * height * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let (left, right) = root.split_horizontally(width / 2);
        let groups = curves.iter().map(|c| c.0).max().map_or(0, |g| g + 1);
        let max_step = curves.iter().map(|c| c.1).max().unwrap_or(1).max(1) as f64;
        let finite = |v: &f64| v.is_finite() && *v > 0.0;
        let losses: Vec<f64> = curves.iter().map(|c| c.2).filter(finite).collect();
        let (lo, hi) = losses.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
        let (lo, hi) = if lo.is_finite() && hi > lo {
            (lo * 0.9, hi * 1.1)
        } else {
            (1e-6, 1.0)
        };
        let psnrs: Vec<f64> = curves
            .iter()
            .map(|c| c.3)
            .filter(|v| v.is_finite())
            .collect();
        let (plo, phi) = psnrs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        let (plo, phi) = if plo.is_finite() && phi > plo {
            (plo - 1.0, phi + 1.0)
        } else {
            (0.0, 50.0)
        };
        let colour = |g: usize| Palette99::pick(g).to_rgba();

        let mut chart = ChartBuilder::on(&left)
            .caption("training loss", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..max_step, (lo..hi).log_scale())
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("step")
            .y_desc("loss")
            .y_label_formatter(&|v| format!("{v:.1e}"))
            .draw()
            .map_err(|e| err(&e))?;
        for g in 0..groups {
            let pts = curves
                .iter()
                .filter(|c| c.0 == g && finite(&c.2))
                .map(|c| (c.1 as f64, c.2));
            chart
                .draw_series(LineSeries::new(pts, colour(g)))
                .map_err(|e| err(&e))?;
        }
        let mut chart = ChartBuilder::on(&right)
            .caption("PSNR estimate (dB)", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..max_step, plo..phi)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("step")
            .y_desc("dB")
            .draw()
            .map_err(|e| err(&e))?;
        for g in 0..groups {
            let pts = curves
                .iter()
                .filter(|c| c.0 == g && c.3.is_finite())
                .map(|c| (c.1 as f64, c.3));
            chart
                .draw_series(LineSeries::new(pts, colour(g)))
                .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    let rgba: Vec<u8> = rgb
        .chunks_exact(3)
        .flat_map(|p| [p[0], p[1], p[2], 255])
        .collect();
    write_png_rgba8(path, width, height, &rgba)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_two_groups() {
        let dir = std::env::temp_dir().join(format!("neurotex-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("curves.png");
        let curves: Vec<_> = (0..2)
            .flat_map(|g| {
                (1..=20u64).map(move |s| (g, s * 10, 0.1 / s as f64, 20.0 + s as f64 + g as f64))
            })
            .collect();
        write_curves_png(&path, &curves, 640, 240).unwrap();
        let img = image::open(&path).unwrap().to_rgba8();
        assert_eq!(img.dimensions(), (640, 240));
        // Something other than the white background was drawn.
        assert!(img.pixels().filter(|p| p.0[0] < 200).count() > 500);
    }
}
