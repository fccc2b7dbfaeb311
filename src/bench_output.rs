//! Where `neurotex bench` puts its results: the off-screen target that
//! [`run_bench`](crate::bench::run_bench) renders into, and the report folder
//! (`bench.json`, `bench.csv`, `bench.md`, `bench.png`). The measuring itself is
//! [`crate::bench`]; the cameras along a path come from
//! [`crate::scene::open::path_cameras`].

use std::path::Path;

use crate::bench::{BenchError, BenchReport};
use crate::gpu::GpuContext;
use crate::io::{OutputError, create_dir, write_output};

/// Errors of writing a benchmark report.
#[derive(Debug, thiserror::Error)]
pub enum BenchOutputError {
    /// A file or the folder could not be written.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// The chart could not be drawn or written.
    #[error(transparent)]
    Bench(#[from] BenchError),
}

/// The texture a benchmark renders into: `size` pixels of the headless output format,
/// only ever a render attachment (nothing reads it back).
pub fn offscreen_target(ctx: &GpuContext, size: (u32, u32)) -> wgpu::Texture {
    ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("bench.output"),
        size: wgpu::Extent3d {
            width: size.0,
            height: size.1,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: crate::render::headless::OUTPUT_FORMAT,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
        view_formats: &[],
    })
}

/// The files [`write_report`] writes into its folder.
pub const REPORT_FILES: [&str; 4] = ["bench.json", "bench.csv", "bench.md", "bench.png"];

/// Write `report` into the folder `dir` (created when missing): `bench.json`,
/// `bench.csv`, `bench.md` and the chart `bench.png`. Returns the Markdown table.
pub fn write_report(dir: &Path, report: &BenchReport) -> Result<String, BenchOutputError> {
    create_dir(dir)?;
    let json_path = dir.join("bench.json");
    let json = serde_json::to_string_pretty(report).map_err(|e| OutputError::Write {
        path: json_path.clone(),
        source: e.into(),
    })?;
    write_output(&json_path, json.as_bytes())?;
    write_output(&dir.join("bench.csv"), report.csv().as_bytes())?;
    let md = report.markdown();
    write_output(&dir.join("bench.md"), md.as_bytes())?;
    report.write_png(&dir.join("bench.png"))?;
    Ok(md)
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
            command: "neurotex bench".into(),
            rows: Vec::new(),
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
