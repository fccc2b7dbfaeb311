//! `neurotex bench kernels`: what the driver compiled for each kernel of the trainer and
//! the decode (`neurotex::bench::kernels`), written as a report folder.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::bench::kernels::{
    KERNELS_REPORT_FILES, build_kernels, kernel_statistics, stats_device, write_kernels_report,
};
use neurotex::gpu::GpuContext;

/// The arguments of `neurotex bench kernels`.
#[derive(Args, Debug)]
pub struct KernelsArgs {
    /// Output folder (kernels.json, kernels.csv, kernels.md).
    #[arg(long)]
    out: PathBuf,
}

/// Run `neurotex bench kernels`.
pub fn run(a: KernelsArgs) -> Result<()> {
    super::check_report_folder(&a.out, &KERNELS_REPORT_FILES)?;
    let ctx = GpuContext::headless()?;
    println!("{}", ctx.describe());
    let device = stats_device(&ctx)?;
    let not_built = build_kernels(&ctx);
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let report = kernel_statistics(&ctx, &device, &command, not_built);
    let md = write_kernels_report(&a.out, &report)?;
    print!("{md}");
    println!("wrote {}/kernels.{{json,csv,md}}", a.out.display());
    Ok(())
}
