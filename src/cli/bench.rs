//! `neurotex bench`: GPU timings of the render modes, kernels and tile sizes along a
//! camera path, written as a report folder.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use neurotex::bench::output::{offscreen_target, write_report};
use neurotex::bench::trust::{MIN_WARMUP, Warmup};
use neurotex::bench::{BenchOptions, BenchReport, run_bench};
use neurotex::gpu::GpuContext;
use neurotex::open::{open, path_cameras};
use neurotex::render::RenderMode;
use neurotex::render::passes::ntc_decode::NtcKernel;
use neurotex::render::scene_gpu::UploadOptions;
use neurotex::screen::tiles::TileSize;

use super::args::{
    GBufferArg, PackageRecipeArgs, SceneArg, TextureLimitArg, parse_frames, parse_size,
};
use super::bench_bcn::BcnArgs;
use super::bench_decode::DecodeArgs;
use super::bench_kernels::KernelsArgs;
use super::{
    PackageSource, distinct_outputs, kernels_or_supported, load_package, output_policy,
    report_scene, scene_files, scene_renderer,
};

/// The arguments of `neurotex bench`.
#[derive(Args, Debug)]
#[command(mut_arg("max_texture_size", |a| a.help(
    "Downscale textures (and packages made here) so that no side exceeds this"
)))]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    #[command(flatten)]
    scene: SceneArg,
    /// Output folder (bench.json, bench.csv, bench.md, bench.png).
    #[arg(long, required = true)]
    out: Option<PathBuf>,
    /// Image size, WIDTHxHEIGHT.
    #[arg(long, value_parser = parse_size, default_value = "1920x1080")]
    size: (u32, u32),
    /// Follow this camera path of the scene description (default: its first path, else
    /// the scene's camera, static).
    #[arg(long)]
    camera_path: Option<String>,
    /// Timed frames per configuration.
    #[arg(long, default_value_t = 60, value_parser = parse_frames)]
    frames: u32,
    /// Least untimed frames before each configuration (which also warms up for at least
    /// 300 ms and until its frame times settle).
    #[arg(long, default_value_t = 10)]
    warmup: u32,
    /// Also write every frame's GPU passes as a Chrome trace (chrome://tracing, Perfetto).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Modes to measure.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = RenderMode::ALL)]
    modes: Vec<RenderMode>,
    /// Kernels to measure (default: every kernel the GPU runs).
    #[arg(long, visible_alias = "kernel", value_enum, value_delimiter = ',')]
    kernels: Vec<NtcKernel>,
    /// Tile sizes to measure.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [TileSize::T8x8])]
    tiles: Vec<TileSize>,
    #[command(flatten)]
    limit: TextureLimitArg,
    #[command(flatten)]
    gbuffer: GBufferArg,
    /// A folder of `<strategy>.ntc` packages to use instead of the cache where present.
    #[arg(long)]
    packages: Option<PathBuf>,
    #[command(flatten)]
    recipe: PackageRecipeArgs,
}

/// `neurotex bench`'s subcommands.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// The decode kernels alone on synthetic full-screen frames (no geometry), against
    /// the adapter's peaks: the NTC paper's Tables 5 and 6 on our kernels.
    Decode(DecodeArgs),
    /// The GPU block encoder against ISPC on texture sets' channel groups (the blocks
    /// inference on load's `--transcode` makes).
    Bcn(BcnArgs),
    /// What the driver compiled for each kernel of the trainer and the decode: registers
    /// per thread, spills and the other statistics it reports, beside each kernel's
    /// workgroup size and workgroup memory.
    Kernels(KernelsArgs),
}

/// Run `neurotex bench`.
pub fn run(a: BenchArgs) -> Result<()> {
    match a.command {
        Some(BenchCommand::Decode(decode)) => return super::bench_decode::run(decode),
        Some(BenchCommand::Bcn(bcn)) => return super::bench_bcn::run(bcn),
        Some(BenchCommand::Kernels(kernels)) => return super::bench_kernels::run(kernels),
        None => {}
    }
    let out = a
        .out
        .clone()
        .ok_or_else(|| anyhow::anyhow!("neurotex bench needs --out FOLDER"))?;
    let opened = open(a.scene.scene.as_deref())?;
    report_scene(&opened);
    let policy = output_policy(scene_files(&opened, a.scene.scene.as_deref()));
    policy.check_dir(&out)?;
    let mut outputs: Vec<PathBuf> = neurotex::bench::output::REPORT_FILES
        .iter()
        .map(|f| out.join(f))
        .collect();
    outputs.extend(a.trace.iter().cloned());
    distinct_outputs(&outputs.iter().map(PathBuf::as_path).collect::<Vec<_>>())?;
    policy.check_all(outputs.iter().map(PathBuf::as_path))?;
    let ctx = GpuContext::headless()?;
    println!("{}", ctx.describe());
    let max_texture_size = a.limit.max_texture_size;
    let upload = UploadOptions {
        max_texture_size,
        gbuffer: a.gbuffer.gbuffer,
        ..UploadOptions::default()
    };
    let (textures, mut renderer) = scene_renderer(&ctx, &opened, &upload, a.size)?;
    let source = PackageSource {
        package: None,
        packages: a.packages.as_deref(),
        scene: a.scene.scene.as_deref(),
        recipe: a.recipe.recipe(max_texture_size),
    };
    for &mode in a.modes.iter().filter(|m| m.is_ntc()) {
        load_package(&ctx, &mut renderer, &opened, &textures, mode, &source)?;
    }
    let (cameras, path) = path_cameras(&opened, a.camera_path.as_deref(), a.frames)?;
    let kernels = kernels_or_supported(&a.kernels, &ctx);
    let output = offscreen_target(&ctx, a.size);
    let view = neurotex::render::headless::output_view(&output);
    let options = BenchOptions {
        modes: a.modes.clone(),
        kernels,
        tiles: a.tiles.clone(),
        warmup: Warmup {
            frames: a.warmup,
            time: MIN_WARMUP,
        },
        trace: a.trace.clone(),
    };
    let rows = run_bench(
        &ctx,
        &mut renderer,
        &view,
        &cameras,
        opened.description.lighting,
        &options,
        &mut |line| eprintln!("{line}"),
    )?;
    let report = BenchReport {
        adapter: ctx.describe(),
        scene: opened.scene.source.display().to_string(),
        size: a.size,
        camera: path.map_or("static".into(), |p| p.name.clone()),
        gbuffer: renderer.gbuffer_mode(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        rows,
        memory: renderer.source_memory().iter().map(Into::into).collect(),
    }
    .with_ratios();
    let md = write_report(&out, &report)?;
    print!("{md}");
    println!("wrote {}/bench.{{json,csv,md,png}}", out.display());
    Ok(())
}
