//! Where `neurotex bench` puts its results: the off-screen target that
//! [`run_bench`](crate::bench::run_bench) renders into, and the report folder
//! (`bench.json`, `bench.csv`, `bench.md`, `bench.png`; `bench decode` writes its report
//! through the same [`write_report_files`]). The measuring itself is
//! [`crate::bench`]; the cameras along a path come from
//! [`crate::open::path_cameras`].

use std::path::Path;

use serde::Serialize;

use crate::bench::{BenchError, BenchReport};
use crate::gpu::GpuContext;
use crate::io::{OutputError, create_dir, write_output};

/// The texture a benchmark renders into: `size` pixels of the headless output
/// ([`crate::render::headless::output_texture`]; nothing reads it back). Render through
/// [`crate::render::headless::output_view`].
pub fn offscreen_target(ctx: &GpuContext, size: (u32, u32)) -> wgpu::Texture {
    crate::render::headless::output_texture(
        &ctx.device,
        "bench.output",
        size,
        wgpu::TextureUsages::empty(),
    )
}

/// The files [`write_report`] writes into its folder.
pub const REPORT_FILES: [&str; 4] = ["bench.json", "bench.csv", "bench.md", "bench.png"];

/// Write `report` into the folder `dir` (created when missing): `bench.json`,
/// `bench.csv`, `bench.md` and the chart `bench.png`. Returns the Markdown table.
pub fn write_report(dir: &Path, report: &BenchReport) -> Result<String, BenchError> {
    write_report_files(
        dir,
        "bench",
        report,
        report.csv(),
        report.markdown(),
        |path| report.write_png(path),
    )
}

/// Write a report's files into the folder `dir` (created when missing): `<stem>.json`
/// (`report` as serde writes it), `<stem>.csv`, `<stem>.md` and the chart `<stem>.png`
/// that `png` draws. Returns the Markdown.
pub fn write_report_files(
    dir: &Path,
    stem: &str,
    report: &impl Serialize,
    csv: String,
    markdown: String,
    png: impl FnOnce(&Path) -> Result<(), BenchError>,
) -> Result<String, BenchError> {
    let markdown = write_report_tables(dir, stem, report, csv, markdown)?;
    png(&dir.join(format!("{stem}.png")))?;
    Ok(markdown)
}

/// [`write_report_files`] without a chart: `<stem>.json`, `<stem>.csv` and `<stem>.md`
/// in `dir` (created when missing). Returns the Markdown.
pub fn write_report_tables(
    dir: &Path,
    stem: &str,
    report: &impl Serialize,
    csv: String,
    markdown: String,
) -> Result<String, OutputError> {
    create_dir(dir)?;
    let json_path = dir.join(format!("{stem}.json"));
    let json = serde_json::to_string_pretty(report).map_err(|e| OutputError::Write {
        path: json_path.clone(),
        source: e.into(),
    })?;
    write_output(&json_path, json.as_bytes())?;
    write_output(&dir.join(format!("{stem}.csv")), csv.as_bytes())?;
    write_output(&dir.join(format!("{stem}.md")), markdown.as_bytes())?;
    Ok(markdown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_file_of_an_empty_report() {
        let dir = std::env::temp_dir().join(format!("neurotex-bench-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let report = BenchReport {
            adapter: "test adapter".into(),
            scene: "s.gltf".into(),
            size: (64, 32),
            camera: "static".into(),
            gbuffer: crate::render::GBufferMode::Raster,
            command: "neurotex bench".into(),
            rows: Vec::new(),
            memory: Vec::new(),
        };
        let md = write_report(&dir.join("nested"), &report).unwrap();
        assert!(md.starts_with("Adapter: test adapter"), "{md}");
        for name in ["bench.json", "bench.csv", "bench.md", "bench.png"] {
            assert!(dir.join("nested").join(name).is_file(), "{name}");
        }
        let json = std::fs::read_to_string(dir.join("nested/bench.json")).unwrap();
        assert!(json.contains("\"adapter\": \"test adapter\""), "{json}");
        // A file where the folder should be: the error names it.
        std::fs::write(dir.join("file"), b"x").unwrap();
        let err = write_report(&dir.join("file"), &report).unwrap_err();
        assert!(err.to_string().starts_with("cannot create "), "{err}");
        assert!(err.to_string().contains("file"), "{err}");
    }
}
