//! `neurotex bench kernels`: what the driver compiled for each compute kernel of the
//! trainer and the decode — registers per thread, spills, instruction counts, whatever
//! it reports through `VK_KHR_pipeline_executable_properties`
//! ([`crate::gpu::pipeline_stats`]) — beside each kernel's workgroup size and workgroup
//! memory, the numbers that say how many workgroups a compute unit can hold.
//!
//! [`build_kernels`] builds the kernels as the programs do (a trainer per training kernel
//! and latent optimiser the adapter has, for the default model on a small texture set;
//! a decode pass per decode kernel and tile), [`kernel_statistics`] composes every kernel
//! the context built again and reads its pipeline's statistics on a second Vulkan device
//! ([`stats_device`], opened first so that a driver without statistics fails at once),
//! with the context's shader checks ([`crate::gpu::ShaderChecks`]).

use std::path::Path;

use serde::Serialize;

use crate::gpu::pipeline_stats::{Executable, StatsDevice, StatsError, workgroup_bytes};
use crate::gpu::{GpuContext, ShaderChecks, ShaderLibrary};
use crate::io::{OutputError, csv_field};
use crate::ntc::model::NtcConfig;
use crate::ntc::train::TrainConfig;
use crate::ntc::train::checkpoint::Checkpoint;
use crate::ntc::train::gpu::{GpuTrainer, GpuTrainerOptions, LatentAdam, TrainKernel};
use crate::render::passes::ntc_decode::{NtcDecodePass, NtcKernel};
use crate::screen::tiles::TileSize;
use crate::texture::{ChannelMask, TextureSet};

/// The statistics of every kernel a context built.
#[derive(Clone, Debug, Serialize)]
pub struct KernelsReport {
    /// The command line.
    pub command: String,
    /// [`GpuContext::describe`] of the context that built the kernels.
    pub adapter: String,
    /// The Vulkan device the statistics come from.
    pub device: String,
    /// Whether the kernels were written with wgpu's runtime checks.
    pub shader_checks: String,
    /// Kernels that could not be built on the adapter, and why.
    pub not_built: Vec<String>,
    /// One row per kernel, in the order built.
    pub kernels: Vec<KernelRow>,
}

/// One kernel's statistics.
#[derive(Clone, Debug, Serialize)]
pub struct KernelRow {
    /// The pipeline's label.
    pub label: String,
    /// The entry shader.
    pub shader: String,
    /// The entry point.
    pub entry: String,
    /// Its defines (name, value), as the kernel was composed.
    pub defines: Vec<(String, String)>,
    /// Threads per workgroup in x, y, z.
    pub workgroup_size: [u32; 3],
    /// Bytes of workgroup memory.
    pub workgroup_bytes: u64,
    /// The driver's executables and statistics (empty with an error).
    pub executables: Vec<Executable>,
    /// Why the statistics could not be read.
    pub error: Option<String>,
}

/// Builds the trainer's and the decode's kernels on `ctx` as the programs build them:
/// a [`GpuTrainer`] per training kernel the adapter has and per latent optimiser, for
/// the default model on a 64² texture set, and an [`NtcDecodePass`] per decode kernel the
/// adapter has and tile (8×8 for the sorted kernels). Returns what could not be built.
pub fn build_kernels(ctx: &GpuContext) -> Vec<String> {
    let mut not_built = Vec::new();
    let config = TrainConfig::default();
    let sets = [TextureSet::smooth(
        "probe",
        ChannelMask::BASE_COLOR | ChannelMask::NORMAL,
        (64, 64),
        8.0,
        0.0,
    )];
    for kernel in [TrainKernel::F32, TrainKernel::F16, TrainKernel::CoopMatrix] {
        if let Some(why) = kernel.unavailable(ctx, &config.model) {
            not_built.push(format!("training kernel {kernel}: {why}"));
            continue;
        }
        for latent_adam in [LatentAdam::Dense, LatentAdam::Lazy] {
            let options = GpuTrainerOptions {
                kernel: Some(kernel),
                latent_adam,
                ..GpuTrainerOptions::default()
            };
            let built = Checkpoint::fresh(&sets, &config, 1, 1)
                .map_err(|e| e.to_string())
                .and_then(|start| {
                    GpuTrainer::new(ctx, &sets, start, &options).map_err(|e| e.to_string())
                });
            if let Err(why) = built {
                not_built.push(format!(
                    "trainer {kernel}, {latent_adam:?} latent Adam: {why}"
                ));
            }
        }
    }
    let model = NtcConfig::default();
    for kernel in NtcKernel::ALL {
        if !kernel.supported(&ctx.granted) {
            not_built.push(format!(
                "decode kernel {kernel}: the adapter lacks {}",
                kernel.missing(&ctx.granted).join(", ")
            ));
            continue;
        }
        let tiles: &[TileSize] = if kernel.is_sorted() {
            &[TileSize::T8x8]
        } else {
            &TileSize::ALL
        };
        for &tile in tiles {
            if let Err(why) = NtcDecodePass::new(ctx, &model, kernel, tile) {
                not_built.push(format!("decode kernel {kernel} {tile}: {why}"));
            }
        }
    }
    not_built
}

/// The Vulkan device of `ctx`'s adapter that keeps pipeline statistics; an error where
/// its driver reports none.
pub fn stats_device(ctx: &GpuContext) -> Result<StatsDevice, StatsError> {
    StatsDevice::open(&ctx.info.name)
}

/// The statistics of every kernel `ctx` built (see [`GpuContext::built_kernels`]),
/// read on `device` ([`stats_device`]). A kernel whose statistics cannot be read gets
/// its error in its row.
pub fn kernel_statistics(
    ctx: &GpuContext,
    device: &StatsDevice,
    command: &str,
    not_built: Vec<String>,
) -> KernelsReport {
    let library = ShaderLibrary::embedded();
    let kernels = ctx
        .built_kernels()
        .into_iter()
        .map(|k| {
            let mut row = KernelRow {
                label: k.label,
                shader: k.shader,
                entry: k.entry,
                defines: k
                    .defines
                    .iter()
                    .map(|(n, v)| (n.to_owned(), v.to_owned()))
                    .collect(),
                workgroup_size: [0; 3],
                workgroup_bytes: 0,
                executables: Vec::new(),
                error: None,
            };
            let measured = library
                .compose(&row.shader, &k.defines)
                .and_then(|c| c.validate())
                .map_err(|e| e.to_string())
                .and_then(|(module, info)| {
                    let entry = module
                        .entry_points
                        .iter()
                        .find(|e| e.name == row.entry)
                        .ok_or_else(|| format!("no entry point `{}`", row.entry))?;
                    row.workgroup_size = entry.workgroup_size;
                    row.workgroup_bytes =
                        workgroup_bytes(&module, &info, &row.entry).map_err(|e| e.to_string())?;
                    device
                        .kernel(&module, &info, &row.entry, ctx.shader_checks)
                        .map_err(|e| e.to_string())
                });
            match measured {
                Ok(executables) => row.executables = executables,
                Err(e) => row.error = Some(e),
            }
            row
        })
        .collect();
    KernelsReport {
        command: command.to_owned(),
        adapter: ctx.describe(),
        device: device.name().to_owned(),
        shader_checks: match ctx.shader_checks {
            ShaderChecks::On => "on".into(),
            ShaderChecks::Off => "off".into(),
        },
        not_built,
        kernels,
    }
}

/// Every statistic's name, in the order first seen.
fn statistic_names(report: &KernelsReport) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for e in report.kernels.iter().flat_map(|k| &k.executables) {
        for s in &e.statistics {
            if !names.contains(&s.name) {
                names.push(s.name.clone());
            }
        }
    }
    names
}

/// The defines of `row` that not every kernel of its shader and entry point shares
/// (what tells its variants apart), as `NAME=value` joined with spaces.
fn variant(report: &KernelsReport, row: &KernelRow) -> String {
    let siblings: Vec<&KernelRow> = report
        .kernels
        .iter()
        .filter(|k| k.shader == row.shader && k.entry == row.entry)
        .collect();
    row.defines
        .iter()
        .filter(|d| !siblings.iter().all(|k| k.defines.contains(d)))
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One row per kernel and executable: label, shader, entry, variant ([`variant`]),
/// workgroup, workgroup bytes, subgroup size, then one column per statistic
/// (`statistic_names`), then the error.
fn rows(report: &KernelsReport) -> (Vec<String>, Vec<Vec<String>>) {
    let names = statistic_names(report);
    let mut header: Vec<String> = [
        "kernel",
        "shader",
        "entry",
        "variant",
        "workgroup",
        "workgroup_bytes",
        "executable",
        "subgroup",
    ]
    .map(String::from)
    .to_vec();
    header.extend(names.iter().cloned());
    header.push("error".into());
    let mut out = Vec::new();
    for k in &report.kernels {
        let [x, y, z] = k.workgroup_size;
        let head = [
            k.label.clone(),
            k.shader.clone(),
            k.entry.clone(),
            variant(report, k),
            format!("{x}x{y}x{z}"),
            k.workgroup_bytes.to_string(),
        ];
        if k.executables.is_empty() {
            let mut row = head.to_vec();
            row.extend(std::iter::repeat_n(String::new(), 2 + names.len()));
            row.push(k.error.clone().unwrap_or_default());
            out.push(row);
        }
        for e in &k.executables {
            let mut row = head.to_vec();
            row.push(e.name.clone());
            row.push(e.subgroup_size.to_string());
            row.extend(names.iter().map(|n| {
                e.statistics
                    .iter()
                    .find(|s| &s.name == n)
                    .map(|s| s.value.to_string())
                    .unwrap_or_default()
            }));
            row.push(String::new());
            out.push(row);
        }
    }
    (header, out)
}

/// The report as CSV (one row per kernel and executable; fields with commas quoted).
pub fn csv(report: &KernelsReport) -> String {
    let (header, rows) = rows(report);
    std::iter::once(header)
        .chain(rows)
        .map(|r| r.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(",") + "\n")
        .collect()
}

/// The report as Markdown: the adapter, the setting, the table, what was not built.
pub fn markdown(report: &KernelsReport) -> String {
    let (header, rows) = rows(report);
    let cell = |f: &String| f.replace('|', "\\|").replace('\n', " ");
    let mut md = format!(
        "# Compiled kernels\n\n- command: `{}`\n- adapter: {}\n- statistics from the Vulkan \
         device `{}`, shader checks {}\n\n",
        report.command, report.adapter, report.device, report.shader_checks
    );
    md += &format!(
        "| {} |\n",
        header.iter().map(cell).collect::<Vec<_>>().join(" | ")
    );
    md += &format!("|{}\n", " --- |".repeat(header.len()));
    for r in &rows {
        md += &format!(
            "| {} |\n",
            r.iter().map(cell).collect::<Vec<_>>().join(" | ")
        );
    }
    if !report.not_built.is_empty() {
        md += "\nNot built on this adapter:\n\n";
        for n in &report.not_built {
            md += &format!("- {n}\n");
        }
    }
    md
}

/// The files [`write_kernels_report`] writes into its folder.
pub const KERNELS_REPORT_FILES: [&str; 3] = ["kernels.json", "kernels.csv", "kernels.md"];

/// Writes `kernels.json`, `kernels.csv` and `kernels.md` into `dir` (created when
/// missing); returns the Markdown.
pub fn write_kernels_report(dir: &Path, report: &KernelsReport) -> Result<String, OutputError> {
    crate::bench::output::write_report_tables(dir, "kernels", report, csv(report), markdown(report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::pipeline_stats::{Statistic, StatisticValue};

    fn stat(name: &str, value: StatisticValue) -> Statistic {
        Statistic {
            name: name.into(),
            description: String::new(),
            value,
        }
    }

    #[test]
    fn tables_have_a_column_per_statistic_and_a_row_per_executable() {
        let row = |label: &str, executables: Vec<Executable>, error: Option<&str>| KernelRow {
            label: label.into(),
            shader: "ntc/train_step.wgsl".into(),
            entry: "train_step".into(),
            defines: [("TRAIN_ROWS", "48"), ("TRAIN_COOP", label)]
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .to_vec(),
            workgroup_size: [512, 1, 1],
            workgroup_bytes: 48_004,
            executables,
            error: error.map(String::from),
        };
        let report = KernelsReport {
            command: "neurotex bench kernels --out k".into(),
            adapter: "GPU (vulkan)".into(),
            device: "GPU".into(),
            shader_checks: "on".into(),
            not_built: vec!["decode kernel mma: the adapter lacks cooperative_matrix".into()],
            kernels: vec![
                row(
                    "a",
                    vec![Executable {
                        name: "Compute Shader".into(),
                        subgroup_size: 32,
                        statistics: vec![
                            stat("Register Count", StatisticValue::UInt(96)),
                            stat("Spills", StatisticValue::Bool(false)),
                        ],
                    }],
                    None,
                ),
                row(
                    "b, with a comma",
                    Vec::new(),
                    Some("vkCreateComputePipelines failed"),
                ),
            ],
        };
        let csv = csv(&report);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "kernel,shader,entry,variant,workgroup,workgroup_bytes,executable,subgroup,Register Count,Spills,error"
        );
        // The variant: the defines the two kernels of train_step do not share.
        assert_eq!(
            lines[1],
            "a,ntc/train_step.wgsl,train_step,TRAIN_COOP=a,512x1x1,48004,Compute Shader,32,96,false,"
        );
        assert_eq!(
            lines[2],
            "\"b, with a comma\",ntc/train_step.wgsl,train_step,\"TRAIN_COOP=b, with a comma\",512x1x1,48004,,,,,vkCreateComputePipelines failed"
        );
        assert_eq!(lines.len(), 3);
        let md = markdown(&report);
        assert!(md.contains("| a | ntc/train_step.wgsl | train_step | TRAIN_COOP=a | 512x1x1 | 48004 | Compute Shader | 32 | 96 | false |  |"), "{md}");
        assert!(
            md.contains("shader checks on") && md.contains("- decode kernel mma"),
            "{md}"
        );
    }
}
