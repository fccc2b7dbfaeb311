//! `neurotex bench decode`: the decode kernels alone on synthetic frames against the
//! adapter's peaks (`neurotex::bench::decode`), written as a report folder.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

use neurotex::bench::decode::{
    DECODE_REPORT_FILES, DecodeBenchOptions, run_decode_bench, write_decode_report,
};
use neurotex::gpu::GpuContext;
use neurotex::render::passes::ntc_decode::NtcKernel;
use neurotex::screen::tiles::TileSize;

use super::args::{parse_frames, parse_positive_u32};

/// The arguments of `neurotex bench decode`.
#[derive(Args, Debug)]
pub struct DecodeArgs {
    /// Output folder (decode.json, decode.csv, decode.md, decode.png).
    #[arg(long)]
    out: PathBuf,
    /// Tiny frames, few timings, every pixel of every frame checked against the CPU decoder.
    #[arg(long)]
    quick: bool,
    /// Kernels to measure (default: every kernel the GPU runs).
    #[arg(long, value_enum, value_delimiter = ',')]
    kernels: Vec<NtcKernel>,
    /// Tiles of the per-tile kernels (default 8x8,16x16; --quick: 8x8).
    #[arg(long, value_enum, value_delimiter = ',')]
    tiles: Vec<TileSize>,
    /// Square frame sides (default 512,1024,2048,4096,8192; --quick: 24,40).
    #[arg(long, value_delimiter = ',', value_parser = parse_positive_u32)]
    sizes: Vec<u32>,
    /// Distinct materials per 8×8 tile (default 1,2,5,10,16; --quick: 1,5).
    #[arg(long, value_delimiter = ',', value_parser = parse_positive_u32)]
    mixes: Vec<u32>,
    /// Timed frames per measurement (default 20; --quick: 2).
    #[arg(long, value_parser = parse_frames)]
    frames: Option<u32>,
    /// Untimed frames before each measurement (default 5; --quick: 1).
    #[arg(long)]
    warmup: Option<u32>,
    /// Leave out the stage costs (every kernel with the input, the MLP and the output stage
    /// alone, on the Table 5 cases).
    #[arg(long)]
    no_stages: bool,
    /// Seconds allowed to build one kernel's pipelines; slower ones are skipped.
    #[arg(long, default_value_t = 60.0)]
    build_budget: f64,
    /// Seconds after which no further case starts.
    #[arg(long, default_value_t = 3600.0)]
    time_budget: f64,
}

/// Run `neurotex bench decode`.
pub fn run(a: DecodeArgs) -> Result<()> {
    super::check_report_folder(&a.out, &DECODE_REPORT_FILES)?;
    for (name, seconds) in [
        ("--build-budget", a.build_budget),
        ("--time-budget", a.time_budget),
    ] {
        anyhow::ensure!(
            seconds.is_finite() && seconds > 0.0,
            "{name} must be a positive number of seconds, got {seconds}"
        );
    }
    let ctx = GpuContext::headless()?;
    println!("{}", ctx.describe());
    let kernels = super::kernels_or_supported(&a.kernels, &ctx);
    let mut opts = if a.quick {
        DecodeBenchOptions::quick(kernels)
    } else {
        DecodeBenchOptions::full(kernels)
    };
    if !a.tiles.is_empty() {
        opts.tiles = a.tiles.clone();
    }
    if !a.sizes.is_empty() {
        opts.sizes = a.sizes.clone();
    }
    if !a.mixes.is_empty() {
        opts.mixes = a.mixes.clone();
    }
    opts.frames = a.frames.unwrap_or(opts.frames);
    opts.warmup.frames = a.warmup.unwrap_or(opts.warmup.frames);
    opts.stages = !a.no_stages;
    opts.build_budget = Duration::from_secs_f64(a.build_budget);
    opts.time_budget = Duration::from_secs_f64(a.time_budget);
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let report = run_decode_bench(&ctx, &opts, &command, &mut |line| eprintln!("{line}"))?;
    let md = write_decode_report(&a.out, &report)?;
    print!("{md}");
    println!("wrote {}/decode.{{json,csv,md,png}}", a.out.display());
    Ok(())
}
