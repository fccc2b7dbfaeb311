//! The `neurotex` command line: subcommands over the library. `anyhow` lives only here.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand, ValueEnum};

use neurotex::gpu::GpuContext;
use neurotex::packages::{PackageRecipe, ScenePackages};
use neurotex::render::headless::render_frames;
use neurotex::render::passes::heatmap::HeatmapSettings;
use neurotex::render::passes::ntc_decode::NtcKernel;
use neurotex::render::scene_gpu::UploadOptions;
use neurotex::render::tiles::TileSize;
use neurotex::render::{Aov, FrameOptions, FrameSettings, NtcOptions, RenderMode, Renderer};
use neurotex::scene::open::{OpenedScene, open, select_camera};
use neurotex::{cluster, ntc, texture};

/// Neural texture compression with shared decoders, rendered in real time.
#[derive(Parser, Debug)]
#[command(version, about, long_about = None)]
struct Cli {
    /// What to do. Without a subcommand: `view` on the built-in toy shop.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Open the interactive viewer (the default without a subcommand).
    View(ViewArgs),
    /// Render one frame headless into a PNG.
    Render(RenderArgs),
    /// Write a procedural scene (glTF + textures) into a folder.
    GenScene(GenSceneArgs),
    /// Import a scene or a texture-set manifest and report what it holds.
    Import(ImportArgs),
    /// Embed texture sets and group them into shared-decoder groups (a plan).
    Cluster(ClusterArgs),
    /// Compress texture sets into a .ntc package (trains on the GPU).
    Compress(CompressArgs),
    /// GPU timings of the render modes, kernels and tile sizes side by side along a camera
    /// path (JSON, CSV, Markdown, PNG).
    Bench(BenchArgs),
    /// Summarise a .ntc package.
    Inspect(InspectArgs),
    /// Decode a .ntc package back into PNG textures.
    Decompress(DecompressArgs),
    /// Evaluate grouping strategies, decoder freezing and decoder counts (trains on the GPU).
    Eval(EvalArgs),
}

/// Scenes and manifests whose texture sets an offline command reads (at least one).
#[derive(Args, Debug)]
struct InputsArg {
    /// A scene (.toml, .gltf, .glb); repeatable.
    #[arg(long = "scene")]
    scenes: Vec<PathBuf>,
    /// A texture-set manifest (.csv); repeatable.
    #[arg(long = "manifest")]
    manifests: Vec<PathBuf>,
    /// Downscale textures so that no side exceeds this many texels.
    #[arg(long)]
    max_texture_size: Option<u32>,
}

impl InputsArg {
    fn sources(&self) -> Result<Vec<texture::inputs::InputSource>> {
        use texture::inputs::InputSource;
        let mut v: Vec<InputSource> = self
            .scenes
            .iter()
            .cloned()
            .map(InputSource::Scene)
            .collect();
        v.extend(self.manifests.iter().cloned().map(InputSource::Manifest));
        if v.is_empty() {
            anyhow::bail!("give at least one --scene or --manifest");
        }
        Ok(v)
    }

    fn load_options(&self) -> texture::LoadOptions {
        texture::LoadOptions {
            allow_missing: false,
            max_size: self.max_texture_size,
        }
    }
}

#[derive(Args, Debug)]
struct ClusterArgs {
    #[command(flatten)]
    inputs: InputsArg,
    /// Number of groups (clustered, random).
    #[arg(long, default_value_t = 10)]
    m: usize,
    /// Grouping strategy.
    #[arg(long, value_enum, default_value_t = cluster::Strategy::Clustered)]
    strategy: cluster::Strategy,
    /// Texture embedder.
    #[arg(long, value_enum, default_value_t = cluster::EmbedderKind::Stats)]
    embedder: cluster::EmbedderKind,
    /// CLIP ViT-B/32 weights (safetensors) for `--embedder clip`.
    #[arg(long)]
    clip_weights: Option<PathBuf>,
    /// Seed of k-means and of the random strategy.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output plan (JSON).
    #[arg(long)]
    out: PathBuf,
    /// Contact sheet PNG (default: next to the plan, `<plan>.png`).
    #[arg(long)]
    contact_sheet: Option<PathBuf>,
}

/// Training recipes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Recipe {
    /// The defaults of `ntc::TrainConfig` (latents 1e-2, decoder 5e-3, batch 32K).
    Default,
    /// The paper's: encoder lr 4e-3, decoder lr 4e-4, batch 32K, freezing from 50 %.
    Paper,
}

#[derive(Args, Debug)]
struct CompressArgs {
    #[command(flatten)]
    inputs: InputsArg,
    /// Output package.
    #[arg(long)]
    out: PathBuf,
    /// Quality preset (latent grid scale source/8, /6, /4, /3).
    #[arg(long, value_enum, default_value_t = ntc::Preset::High)]
    preset: ntc::Preset,
    /// Main training steps per group.
    #[arg(long, default_value_t = 4000)]
    steps: u64,
    /// Texels per training batch.
    #[arg(long)]
    batch: Option<u32>,
    /// Training recipe.
    #[arg(long, value_enum, default_value_t = Recipe::Default)]
    recipe: Recipe,
    /// How materials share decoders.
    #[arg(long, value_enum, default_value_t = cluster::Strategy::Baseline)]
    strategy: cluster::Strategy,
    /// Groups for clustered / random.
    #[arg(long, default_value_t = 10)]
    m: usize,
    /// Use the groups of a plan from `neurotex cluster` instead of --strategy.
    #[arg(long)]
    plan: Option<PathBuf>,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Quality report (JSON; a Markdown table and the loss curves CSV go beside it).
    #[arg(long)]
    report: Option<PathBuf>,
    /// Continue an interrupted run (from `<out>.partial/`).
    #[arg(long)]
    resume: bool,
    /// Skip the BCn baselines in the report.
    #[arg(long)]
    no_bcn: bool,
    /// Report progress (and record the loss curve) about every this many steps.
    #[arg(long, default_value_t = 100)]
    log_every: u64,
}

#[derive(Args, Debug)]
struct EvalArgs {
    #[command(flatten)]
    inputs: InputsArg,
    /// Output folder: tables, charts, plans, runs/, summary.json, report.md.
    #[arg(long)]
    out: PathBuf,
    /// Strategies of Table 2, comma-separated. Default: all five (`category` only when
    /// the inputs have category labels).
    #[arg(long, value_enum, value_delimiter = ',')]
    strategies: Option<Vec<cluster::Strategy>>,
    /// Groups of `clustered` and `random` (Table 2 and the freezing ablation).
    #[arg(long, default_value_t = 10)]
    m: usize,
    /// Texture embedder of the clustered plans.
    #[arg(long, value_enum, default_value_t = cluster::EmbedderKind::Stats)]
    embedder: cluster::EmbedderKind,
    /// CLIP ViT-B/32 weights (safetensors) for `--embedder clip`.
    #[arg(long)]
    clip_weights: Option<PathBuf>,
    /// Main training steps per group.
    #[arg(long, default_value_t = 4000)]
    steps: u64,
    /// Quality preset (latent grid scale source/8, /6, /4, /3).
    #[arg(long, value_enum, default_value_t = ntc::Preset::High)]
    preset: ntc::Preset,
    /// Training recipe (its freezing start is the default freezing setting).
    #[arg(long, value_enum, default_value_t = Recipe::Paper)]
    recipe: Recipe,
    /// Texels per training batch.
    #[arg(long)]
    batch: Option<u32>,
    /// Seed of k-means, the random grouping and training.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Freezing settings of the ablation, comma-separated: `none` or the start as a
    /// fraction of the main steps.
    #[arg(long, value_delimiter = ',', default_value = "none,0.25,0.5,0.75")]
    freeze: Vec<neurotex::eval::Freeze>,
    /// Decoder counts of the sweep, comma-separated. Default: 1, 2, 4, … below the
    /// number of sets, --m, and the number of sets.
    #[arg(long, value_delimiter = ',')]
    m_sweep: Option<Vec<usize>>,
    /// Skip the freezing ablation.
    #[arg(long)]
    no_ablation: bool,
    /// Skip the decoder-count sweep.
    #[arg(long)]
    no_sweep: bool,
    /// Continue in a non-empty output folder: finished runs are loaded, not retrained.
    #[arg(long)]
    resume: bool,
    /// Keep each run's .ntc package in runs/.
    #[arg(long)]
    keep_packages: bool,
    /// Print the runs the evaluation would train, then stop.
    #[arg(long)]
    dry_run: bool,
    /// Report progress (and record the loss curves) about every this many steps.
    #[arg(long, default_value_t = 100)]
    log_every: u64,
}

#[derive(Args, Debug)]
struct InspectArgs {
    /// The package.
    package: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct DecompressArgs {
    /// The package.
    package: PathBuf,
    /// Output folder.
    #[arg(long)]
    out: PathBuf,
    /// Write every mip level, not just mip 0.
    #[arg(long)]
    mips: bool,
}

#[derive(Args, Debug)]
struct SceneArg {
    /// Scene: a description (.toml), a .gltf or a .glb. Default: the built-in toy shop.
    #[arg(long)]
    scene: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct ViewArgs {
    #[command(flatten)]
    scene: SceneArg,
    /// Window size, WIDTHxHEIGHT (physical pixels). Default: 1280x720.
    #[arg(long, value_parser = parse_size)]
    size: Option<(u32, u32)>,
    /// Scripted run: render this many frames once the scene is ready, then exit.
    #[arg(long)]
    frames: Option<u32>,
    /// Scripted run: save the last frame, overlay included, to this PNG (needs --frames).
    #[arg(long, requires = "frames")]
    screenshot: Option<PathBuf>,
    /// Play this camera path of the scene description from its start.
    #[arg(long)]
    camera_path: Option<String>,
    /// Start without vsync (mailbox or immediate presentation where supported).
    #[arg(long)]
    no_vsync: bool,
    /// Internal resolution over window resolution, 0.25–1.0.
    #[arg(long, default_value_t = 1.0)]
    render_scale: f32,
    /// Render with material constants where an image is missing.
    #[arg(long)]
    allow_missing_textures: bool,
    /// Downscale textures so that no side exceeds this many texels.
    #[arg(long)]
    max_texture_size: Option<u32>,
    /// Maximum anisotropic filtering, 1–16. Default: 16 on GPUs, 1 on CPU adapters.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=16))]
    anisotropy: Option<u16>,
    #[command(flatten)]
    ntc: NtcArgs,
    /// Start with the heatmap of distinct decoders per tile.
    #[arg(long)]
    heatmap: bool,
    /// The NTC modes to prepare packages for (default: all; fewer saves compression time).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = RenderMode::ALL)]
    modes: Vec<RenderMode>,
}

#[derive(Args, Debug)]
struct RenderArgs {
    #[command(flatten)]
    scene: SceneArg,
    /// Output PNG.
    #[arg(long)]
    out: PathBuf,
    /// Image size, WIDTHxHEIGHT. Default: the scene's, else 1280x720.
    #[arg(long, value_parser = parse_size)]
    size: Option<(u32, u32)>,
    /// A camera path name, a glTF camera name or a glTF camera index.
    #[arg(long)]
    camera: Option<String>,
    /// What to output.
    #[arg(long, value_enum, default_value_t = Aov::Final)]
    aov: Aov,
    /// Render with material constants where an image is missing, and list what was missing.
    #[arg(long)]
    allow_missing_textures: bool,
    /// Downscale textures so that no side exceeds this many texels (previews, tests).
    #[arg(long)]
    max_texture_size: Option<u32>,
    /// Maximum anisotropic filtering, 1–16. Default: 16 on GPUs, 1 on CPU adapters.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=16))]
    anisotropy: Option<u16>,
    #[command(flatten)]
    ntc: NtcArgs,
    /// Render this many frames of the static view and output the last (temporal
    /// accumulation resolves the stochastic NTC filtering).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    accumulate: u32,
    /// Also write the image with the heatmap of distinct decoders per tile, and print the
    /// divergence score 𝒟 of this mode next to the baseline's.
    #[arg(long)]
    divergence_map: Option<PathBuf>,
    /// Also render the reference and print the PSNR of the (accumulated) image against it.
    #[arg(long)]
    psnr: bool,
}

#[derive(Args, Debug)]
struct BenchArgs {
    #[command(flatten)]
    scene: SceneArg,
    /// Output folder (bench.json, bench.csv, bench.md, bench.png).
    #[arg(long)]
    out: PathBuf,
    /// Image size, WIDTHxHEIGHT.
    #[arg(long, value_parser = parse_size, default_value = "1920x1080")]
    size: (u32, u32),
    /// Follow this camera path of the scene description (default: its first path, else
    /// the scene's camera, static).
    #[arg(long)]
    camera_path: Option<String>,
    /// Timed frames per configuration.
    #[arg(long, default_value_t = 60)]
    frames: u32,
    /// Untimed frames before each configuration.
    #[arg(long, default_value_t = 10)]
    warmup: u32,
    /// Modes to measure.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = RenderMode::ALL)]
    modes: Vec<RenderMode>,
    /// Kernels to measure (default: every kernel the GPU runs).
    #[arg(long, value_enum, value_delimiter = ',')]
    kernels: Vec<NtcKernel>,
    /// Tile sizes to measure.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [TileSize::T8x8])]
    tiles: Vec<TileSize>,
    /// Downscale textures (and packages made here) so that no side exceeds this.
    #[arg(long)]
    max_texture_size: Option<u32>,
    /// A folder of `<strategy>.ntc` packages to use instead of the cache where present.
    #[arg(long)]
    packages: Option<PathBuf>,
    /// Training steps per group when a cached package has to be made.
    #[arg(long, default_value_t = 4000)]
    ntc_steps: u64,
    /// Groups of the clustered and random strategies when a package has to be made.
    #[arg(long, default_value_t = 10)]
    ntc_m: usize,
}

/// How NTC modes get their packages and decode them.
#[derive(Args, Debug, Clone)]
struct NtcArgs {
    /// Where material channels come from: the original textures or NTC packages of a
    /// decoder-sharing strategy.
    #[arg(long, value_enum, default_value_t = RenderMode::Reference)]
    mode: RenderMode,
    /// Render the mode with this package (e.g. from `neurotex compress --strategy …`)
    /// instead of the scene's cached one.
    #[arg(long)]
    package: Option<PathBuf>,
    /// A folder of `<strategy>.ntc` packages to use instead of the cache where present.
    #[arg(long)]
    packages: Option<PathBuf>,
    /// Decode kernel (default: f16 where the GPU has it, else f32).
    #[arg(long, value_enum)]
    kernel: Option<NtcKernel>,
    /// Screen tile of the decode pass.
    #[arg(long, value_enum, default_value_t = TileSize::T8x8)]
    tile: TileSize,
    /// Nearest mip and texel instead of stochastic trilinear filtering.
    #[arg(long)]
    no_stochastic: bool,
    /// Decode the package into mipmapped textures at load and render those.
    #[arg(long)]
    inference_on_load: bool,
    /// Training steps per group when a cached package has to be made.
    #[arg(long, default_value_t = 4000)]
    ntc_steps: u64,
    /// Groups of the clustered and random strategies when a package has to be made.
    #[arg(long, default_value_t = 10)]
    ntc_m: usize,
}

impl NtcArgs {
    fn recipe(&self, max_texture_size: Option<u32>) -> PackageRecipe {
        PackageRecipe {
            steps: self.ntc_steps,
            m: self.ntc_m,
            max_texture_size,
            ..PackageRecipe::default()
        }
    }

    fn options(&self) -> FrameOptions {
        let mut o = FrameOptions::default();
        o.decode.stochastic = !self.no_stochastic;
        o.inference_on_load = self.inference_on_load;
        o
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Generator {
    /// The toy shop: ≥ 24 procedural PBR materials.
    Toyshop,
    /// A Bistro-style street using every set of a texture-set manifest (`--textures`).
    Street,
}

#[derive(Args, Debug)]
struct GenSceneArgs {
    /// Which scene.
    #[arg(value_enum)]
    kind: Generator,
    /// Output folder.
    #[arg(long)]
    out: PathBuf,
    /// Side of every generated texture (a power of two; toy shop).
    #[arg(long, default_value_t = 512)]
    texture_size: u32,
    /// Texture-set manifest (CSV) whose sets the street uses (street).
    #[arg(long, required_if_eq("kind", "street"))]
    textures: Option<PathBuf>,
    /// Seed of the procedural content.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args, Debug)]
struct ImportArgs {
    #[command(flatten)]
    scene: SceneArg,
    /// A texture-set manifest (CSV) instead of a scene; every set is decoded.
    #[arg(long, conflicts_with = "scene")]
    manifest: Option<PathBuf>,
    /// Write the distinct texture sets to this CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Downscale textures while decoding a manifest.
    #[arg(long)]
    max_texture_size: Option<u32>,
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("`{s}`: expected WIDTHxHEIGHT, e.g. 1280x720"))?;
    let parse = |v: &str| {
        v.trim()
            .parse::<u32>()
            .ok()
            .filter(|&n| (1..=16384).contains(&n))
            .ok_or_else(|| format!("`{s}`: each side must be an integer in 1..=16384"))
    };
    Ok((parse(w)?, parse(h)?))
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(
        env_logger::Env::default().default_filter_or("warn,neurotex=info"),
    )
    .format_timestamp(None)
    .init();
    let cli = Cli::parse();
    let result = match cli.command {
        None => default_view_args().and_then(view),
        Some(Command::View(a)) => view(a),
        Some(Command::Render(a)) => render(a),
        Some(Command::Bench(a)) => bench(a),
        Some(Command::GenScene(a)) => gen_scene(a),
        Some(Command::Import(a)) => import(a),
        Some(Command::Cluster(a)) => cluster_cmd(a),
        Some(Command::Compress(a)) => compress(a),
        Some(Command::Inspect(a)) => inspect(a),
        Some(Command::Decompress(a)) => decompress(a),
        Some(Command::Eval(a)) => eval_cmd(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: the chain of causes, leaving out a cause whose text the message
            // before it already contains (thiserror messages often embed their source).
            let mut line = String::new();
            for cause in e.chain() {
                let text = cause.to_string();
                if !line.contains(&text) {
                    if !line.is_empty() {
                        line.push_str(": ");
                    }
                    line.push_str(&text);
                }
            }
            eprintln!("error: {line}");
            ExitCode::FAILURE
        }
    }
}

fn report_scene(opened: &OpenedScene) {
    let s = &opened.scene;
    let (sets, material_sets) = texture::scene_texture_sets(&s.materials);
    let textured = material_sets.iter().filter(|m| m.is_some()).count();
    println!(
        "{}: {} meshes, {} instances, {} triangles, {} materials ({} textured), {} distinct texture sets, {} cameras",
        s.source.display(),
        s.meshes.len(),
        s.instances.len(),
        s.triangle_count(),
        s.materials.len(),
        textured,
        sets.len(),
        s.cameras.len()
    );
}

/// `view` with every option at its default (what `neurotex` without arguments runs).
fn default_view_args() -> Result<ViewArgs> {
    use clap::FromArgMatches;
    let matches = ViewArgs::augment_args(clap::Command::new("view")).get_matches_from(["view"]);
    Ok(ViewArgs::from_arg_matches(&matches)?)
}

fn view(a: ViewArgs) -> Result<()> {
    if a.ntc.package.is_some() {
        anyhow::bail!(
            "view loads a package per mode: give a folder of <strategy>.ntc files with --packages"
        );
    }
    neurotex::app::run(neurotex::app::ViewerOptions {
        scene: a.scene.scene,
        size: a.size,
        frames: a.frames,
        screenshot: a.screenshot,
        camera_path: a.camera_path,
        vsync: !a.no_vsync,
        render_scale: a.render_scale,
        upload: UploadOptions {
            allow_missing_textures: a.allow_missing_textures,
            max_texture_size: a.max_texture_size,
            anisotropy: a.anisotropy,
        },
        mode: a.ntc.mode,
        recipe: a.ntc.recipe(a.max_texture_size),
        packages: a.ntc.packages.clone(),
        ntc: NtcOptions {
            kernel: a.ntc.kernel,
            tile: a.ntc.tile,
        },
        options: a.ntc.options(),
        heatmap: a.heatmap,
        modes: a.modes.clone(),
    })?;
    Ok(())
}

fn render(a: RenderArgs) -> Result<()> {
    let opened = open(a.scene.scene.as_deref())?;
    report_scene(&opened);
    let camera = select_camera(&opened, a.camera.as_deref())?;
    let size = a
        .size
        .or(opened.description.render.size.map(|[w, h]| (w, h)))
        .unwrap_or((1280, 720));
    let ctx = GpuContext::headless()?;
    log::info!("{}", ctx.describe());
    let upload = UploadOptions {
        allow_missing_textures: a.allow_missing_textures,
        max_texture_size: a.max_texture_size,
        anisotropy: a.anisotropy,
    };
    let mut renderer = Renderer::new(
        &ctx,
        &opened.scene,
        &upload,
        size,
        neurotex::render::headless::OUTPUT_FORMAT,
    )?;
    for m in &renderer.scene.missing_textures {
        println!("missing texture (constants used): {m}");
    }
    let mode = a.ntc.mode;
    if a.psnr && a.ntc.inference_on_load {
        anyhow::bail!(
            "--psnr compares per-pixel decoding with the reference; it is not available with --inference-on-load"
        );
    }
    if mode != RenderMode::Reference {
        load_package(&ctx, &mut renderer, &opened, &a.ntc, a.max_texture_size)?;
        renderer.set_ntc_options(
            &ctx,
            NtcOptions {
                kernel: a.ntc.kernel,
                tile: a.ntc.tile,
            },
        )?;
        renderer.prepare(&ctx, mode)?;
    }
    let mut settings = FrameSettings {
        camera,
        lighting: opened.description.lighting,
        aov: a.aov,
        mode,
        options: FrameOptions {
            compare: a.psnr,
            ..a.ntc.options()
        },
    };
    let frame = render_frames(&ctx, &mut renderer, &settings, a.accumulate)?;
    for t in &frame.timings {
        println!("  {:<28} {:8.3} ms", t.label, t.ms);
    }
    if let Some(kernel) = renderer.kernel().filter(|_| mode != RenderMode::Reference) {
        println!("mode {mode}, kernel {kernel}, tile {}", renderer.tile());
    }
    if a.psnr {
        match renderer.psnr_blocking(&ctx)? {
            Some(p) => println!("PSNR against the reference: {p:.2} dB"),
            None => println!("PSNR against the reference: identical (or nothing compared)"),
        }
    }
    texture::write_png_rgba8(&a.out, frame.width, frame.height, &frame.rgba8)?;
    println!(
        "wrote {} ({}x{}, {:?}, {} frame(s))",
        a.out.display(),
        frame.width,
        frame.height,
        a.aov,
        a.accumulate
    );
    if let Some(path) = &a.divergence_map {
        let heatmap = HeatmapSettings::default();
        settings.options.heatmap = Some(heatmap);
        let map = render_frames(&ctx, &mut renderer, &settings, 1)?;
        let stats = renderer.divergence_blocking(&ctx)?;
        texture::write_png_rgba8(path, map.width, map.height, &map.rgba8)?;
        println!(
            "wrote {} (distinct decoders per {} tile, colour bar {} … {})",
            path.display(),
            stats.tile,
            heatmap.lo,
            heatmap.hi
        );
        println!(
            "divergence 𝒟: {mode} {:.3} (mean {:.2} decoders per covered tile), baseline {:.3} (mean {:.2}){}",
            stats.score,
            stats.mean_decoders,
            stats.baseline_score,
            stats.baseline_mean_decoders,
            stats
                .reduction()
                .map(|r| format!(", {:.1} % less", 100.0 * r))
                .unwrap_or_default()
        );
    }
    Ok(())
}

fn bench(a: BenchArgs) -> Result<()> {
    use neurotex::bench::{BenchOptions, BenchReport, run_bench};
    let opened = open(a.scene.scene.as_deref())?;
    report_scene(&opened);
    let ctx = GpuContext::headless()?;
    println!("{}", ctx.describe());
    let upload = UploadOptions {
        max_texture_size: a.max_texture_size,
        ..UploadOptions::default()
    };
    let mut renderer = Renderer::new(
        &ctx,
        &opened.scene,
        &upload,
        a.size,
        neurotex::render::headless::OUTPUT_FORMAT,
    )?;
    for &mode in a.modes.iter().filter(|m| m.strategy().is_some()) {
        let args = NtcArgs {
            mode,
            package: None,
            packages: a.packages.clone(),
            kernel: None,
            tile: TileSize::T8x8,
            no_stochastic: false,
            inference_on_load: false,
            ntc_steps: a.ntc_steps,
            ntc_m: a.ntc_m,
        };
        load_package(&ctx, &mut renderer, &opened, &args, a.max_texture_size)?;
    }
    let paths = &opened.description.camera_paths;
    let path = match &a.camera_path {
        Some(name) => Some(
            paths
                .iter()
                .find(|p| &p.name == name)
                .ok_or_else(|| anyhow::anyhow!("no camera path named `{name}` in the scene"))?,
        ),
        None => paths.first(),
    };
    let frames = a.frames.max(1);
    let cameras: Vec<neurotex::scene::Camera> = match path {
        Some(p) => (0..frames)
            .filter_map(|i| p.sample(p.duration() * i as f32 / (frames.max(2) - 1) as f32))
            .collect(),
        None => vec![select_camera(&opened, None)?; frames as usize],
    };
    let kernels: Vec<NtcKernel> = if a.kernels.is_empty() {
        NtcKernel::ALL
            .into_iter()
            .filter(|k| k.supported(&ctx.granted))
            .collect()
    } else {
        a.kernels.clone()
    };
    let output = ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("bench.output"),
        size: wgpu::Extent3d {
            width: a.size.0,
            height: a.size.1,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: neurotex::render::headless::OUTPUT_FORMAT,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
        view_formats: &[],
    });
    let view = output.create_view(&wgpu::TextureViewDescriptor::default());
    let options = BenchOptions {
        modes: a.modes.clone(),
        kernels,
        tiles: a.tiles.clone(),
        warmup: a.warmup,
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
        command: std::env::args().collect::<Vec<_>>().join(" "),
        rows,
    };
    std::fs::create_dir_all(&a.out)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", a.out.display()))?;
    let write = |name: &str, bytes: &[u8]| {
        let p = a.out.join(name);
        neurotex::scene::gltf_builder::write_atomic(&p, bytes)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))
    };
    write(
        "bench.json",
        serde_json::to_string_pretty(&report)?.as_bytes(),
    )?;
    write("bench.csv", report.csv().as_bytes())?;
    let md = report.markdown();
    write("bench.md", md.as_bytes())?;
    report.write_png(&a.out.join("bench.png"))?;
    print!("{md}");
    println!("wrote {}/bench.{{json,csv,md,png}}", a.out.display());
    Ok(())
}

/// Give `renderer` the package of `args.mode`: `--package`, else the scene's (from
/// `--packages` or the cache, compressed with a progress bar when missing or stale).
fn load_package(
    ctx: &GpuContext,
    renderer: &mut Renderer,
    opened: &OpenedScene,
    args: &NtcArgs,
    max_texture_size: Option<u32>,
) -> Result<()> {
    use anyhow::Context as _;
    let mode = args.mode;
    let strategy = mode
        .strategy()
        .ok_or_else(|| anyhow::anyhow!("the reference mode has no package"))?;
    let packages = ScenePackages::open(&opened.scene.source, args.recipe(max_texture_size))?
        .with_prebuilt(args.packages.clone());
    let package = match &args.package {
        Some(path) => read_package(path)?,
        None => {
            let bar = steps_bar("{prefix} [{bar:32}] {pos}/{len} steps  ETA {eta}")?;
            let cancel = std::sync::atomic::AtomicBool::new(false);
            if !packages.is_fresh(strategy) {
                eprintln!(
                    "compressing the {strategy} package of {} into {}",
                    opened.scene.source.display(),
                    packages.path(strategy).display()
                );
            }
            let package = packages.load_or_compress(ctx, strategy, &cancel, &mut |g, n, p| {
                bar.set_prefix(format!("{strategy} group {}/{n}", g + 1));
                bar.set_length(p.total);
                bar.set_position(p.step);
            })?;
            bar.finish_and_clear();
            package
        }
    };
    let map = packages
        .material_map(&package)
        .with_context(|| format!("mode {mode}"))?;
    renderer.set_package(ctx, mode, package, &map)?;
    Ok(())
}

fn gen_scene(a: GenSceneArgs) -> Result<()> {
    match a.kind {
        Generator::Toyshop => {
            let opts = neurotex::scene::toyshop::ToyshopOptions {
                texture_size: a.texture_size,
                seed: a.seed,
            };
            let path = neurotex::scene::toyshop::generate(&a.out, &opts)?;
            println!("wrote {}", path.display());
        }
        Generator::Street => {
            let manifest = a.textures.ok_or_else(|| {
                anyhow::anyhow!("gen-scene street needs --textures <manifest.csv>")
            })?;
            let opts = neurotex::scene::street::StreetOptions {
                manifest,
                seed: a.seed,
            };
            let path = neurotex::scene::street::generate(&a.out, &opts)?;
            println!("wrote {} (and street.gltf beside it)", path.display());
        }
    }
    Ok(())
}

fn import(a: ImportArgs) -> Result<()> {
    use texture::inputs::{InputSets, InputSource};
    if let Some(manifest) = &a.manifest {
        let entries = texture::manifest::read_manifest(manifest)?;
        let opts = texture::LoadOptions {
            allow_missing: false,
            max_size: a.max_texture_size,
        };
        let sets = texture::manifest::sets_of_rows(&entries);
        for (desc, rows) in &sets {
            let loaded = desc.load(&opts)?;
            let first = &entries[rows[0]];
            let ids: Vec<&str> = rows
                .iter()
                .map(|&r| entries[r].material.name.as_str())
                .collect();
            println!(
                "{:<48} {:<14} {}x{} mips {} channels {}",
                ids.join(" + "),
                first.category,
                loaded.set.width,
                loaded.set.height,
                loaded.set.mips.len(),
                loaded.set.present
            );
        }
        println!(
            "{}: {} rows, {} texture sets",
            manifest.display(),
            entries.len(),
            sets.len()
        );
        if let Some(csv) = &a.csv {
            let inputs = InputSets::open(&[InputSource::Manifest(manifest.clone())])?;
            texture::manifest::write_texture_sets_csv(csv, &inputs)?;
            println!("wrote {}", csv.display());
        }
        return Ok(());
    }
    let opened = open(a.scene.scene.as_deref())?;
    report_scene(&opened);
    for w in &opened.scene.warnings {
        println!("warning: {w}");
    }
    if let Some(csv) = &a.csv {
        let scene = a.scene.scene.clone().unwrap_or(opened.scene.source.clone());
        let inputs = InputSets::open(&[InputSource::Scene(scene)])?;
        texture::manifest::write_texture_sets_csv(csv, &inputs)?;
        println!("wrote {}", csv.display());
    }
    Ok(())
}

fn cluster_cmd(a: ClusterArgs) -> Result<()> {
    let sources = a.inputs.sources()?;
    let inputs = texture::inputs::InputSets::open(&sources)?;
    let sets = inputs.load_sets(&a.inputs.load_options())?;
    let embedder = cluster::EmbedderChoice::new(a.embedder, a.clip_weights.as_deref())?;
    let embeddings = cluster::embed_sets(&sets, &embedder)?;
    let categories =
        (a.strategy == cluster::Strategy::Category).then_some(inputs.categories.as_slice());
    let mut plan = cluster::make_plan(a.strategy, &embeddings, a.m, a.seed, categories)?;
    plan.input = sources
        .iter()
        .map(|s| s.path().display().to_string())
        .collect::<Vec<_>>()
        .join(" + ");
    plan.write(&a.out)?;
    let sheet = a
        .contact_sheet
        .unwrap_or_else(|| a.out.with_extension("png"));
    cluster::write_contact_sheet(&sheet, &sets, &plan)?;
    println!("{}", cluster::plan_summary(&plan, &embeddings)?);
    println!("wrote {} and {}", a.out.display(), sheet.display());
    Ok(())
}

/// A flag that Ctrl-C sets: long runs stop at their next progress report and keep what
/// they finished for `--resume`.
fn cancel_on_ctrl_c() -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))?;
    Ok(cancel)
}

/// A progress bar of training steps with `template` (indicatif syntax).
fn steps_bar(template: &str) -> Result<indicatif::ProgressBar> {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(indicatif::ProgressStyle::with_template(template)?.progress_chars("=> "));
    Ok(bar)
}

/// Read a package; errors name the file.
fn read_package(path: &std::path::Path) -> Result<ntc::NtcPackage> {
    use anyhow::Context as _;
    ntc::NtcPackage::read(path).with_context(|| path.display().to_string())
}

fn inspect(a: InspectArgs) -> Result<()> {
    let package = read_package(&a.package)?;
    let summary = ntc::tools::summarize(&package, &a.package);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{summary}");
    }
    Ok(())
}

fn decompress(a: DecompressArgs) -> Result<()> {
    let package = read_package(&a.package)?;
    let policy = neurotex::outputs::OutputPolicy::new([&a.package], false);
    let files = ntc::tools::decompress(&package, &a.out, a.mips, &policy)?;
    println!("wrote {} PNGs into {}", files.len(), a.out.display());
    Ok(())
}

fn compress(a: CompressArgs) -> Result<()> {
    let sources = a.inputs.sources()?;
    let inputs = texture::inputs::InputSets::open(&sources)?;
    let sets = inputs.load_sets(&a.inputs.load_options())?;
    let train = recipe_train_config(a.recipe, a.preset, a.batch)?;
    let plan = match &a.plan {
        Some(plan_path) => {
            let plan = cluster::Plan::read(plan_path)?;
            plan.validate(&sets)?;
            plan
        }
        None => {
            let embeddings = cluster::embed_sets(&sets, &cluster::EmbedderChoice::Stats)?;
            cluster::make_plan(
                a.strategy,
                &embeddings,
                a.m,
                a.seed,
                Some(&inputs.categories),
            )?
        }
    };
    let groups: Vec<Vec<usize>> = plan.groups.iter().map(|g| g.indices.clone()).collect();
    let constants =
        ntc::compress::set_constants(&inputs.materials, &inputs.material_sets, sets.len());
    let ctx = GpuContext::headless()?;
    eprintln!("{}", ctx.describe());
    let cancel = cancel_on_ctrl_c()?;
    let bar = steps_bar("{prefix} [{bar:32}] {pos}/{len} steps  {msg}  ETA {eta}")?;
    let options = ntc::compress::CompressOptions {
        train,
        steps: a.steps,
        seed: a.seed,
        resume: a.resume,
        skip_bcn: a.no_bcn,
        log_every: a.log_every,
        input_files: inputs.files(),
    };
    let input_names = sources
        .iter()
        .map(|s| s.path().display().to_string())
        .collect::<Vec<_>>()
        .join(" + ");
    let (package, report) = ntc::compress::compress(
        &ctx,
        &sets,
        &constants,
        &groups,
        &options,
        &input_names,
        &a.out,
        &cancel,
        &mut |g, n, p| {
            bar.set_prefix(format!("group {}/{n}", g + 1));
            bar.set_length(p.total);
            bar.set_position(p.step);
            bar.set_message(format!(
                "loss {:.5}  ≈{:.2} dB  {:.1} Mtexel/s",
                p.loss,
                p.psnr_estimate,
                p.texels_per_second / 1e6
            ));
        },
    )?;
    bar.finish_and_clear();
    println!(
        "wrote {}: {} materials, {} decoders, mean PSNR {}, mean {:.3} bits/texel, {:.1} s",
        a.out.display(),
        package.materials.len(),
        package.decoders.len(),
        report
            .mean_psnr
            .map_or("–".into(), |p| format!("{p:.2} dB")),
        report.mean_bits_per_texel,
        report.seconds
    );
    if let Some(path) = &a.report {
        let write = |p: &std::path::Path, bytes: &[u8]| {
            neurotex::scene::gltf_builder::write_atomic(p, bytes)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))
        };
        write(path, serde_json::to_string_pretty(&report)?.as_bytes())?;
        write(&path.with_extension("md"), report.markdown().as_bytes())?;
        write(
            &path.with_extension("curves.csv"),
            report.curves_csv().as_bytes(),
        )?;
        ntc::plot::write_curves_png(
            &path.with_extension("curves.png"),
            &report.curves,
            1200,
            420,
        )?;
        println!("wrote {} (+ .md, .curves.csv, .curves.png)", path.display());
    }
    Ok(())
}

/// The training settings of `recipe` with `preset` and an optional batch size.
fn recipe_train_config(
    recipe: Recipe,
    preset: ntc::Preset,
    batch: Option<u32>,
) -> Result<ntc::TrainConfig> {
    let mut train = ntc::TrainConfig::default();
    train.model.preset = preset;
    if recipe == Recipe::Paper {
        train.lr_latents = 4e-3;
        train.lr_decoder = 4e-4;
        train.batch_size = 32768;
        train.freeze.start_fraction = 0.5;
    }
    if let Some(b) = batch {
        train.batch_size = b;
    }
    train.validate()?;
    Ok(train)
}

fn eval_cmd(a: EvalArgs) -> Result<()> {
    use neurotex::eval::{self, EvalEvent};

    let command_line = std::env::args()
        .map(|arg| {
            if arg.is_empty() || arg.contains(|c: char| c.is_whitespace() || "'\"$\\".contains(c)) {
                format!("'{}'", arg.replace('\'', "'\\''"))
            } else {
                arg
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    let sources = a.inputs.sources()?;
    let inputs = texture::inputs::InputSets::open(&sources)?;
    let sets = inputs.load_sets(&a.inputs.load_options())?;
    let constants =
        ntc::compress::set_constants(&inputs.materials, &inputs.material_sets, sets.len());
    let description = sources
        .iter()
        .map(|s| s.path().display().to_string())
        .collect::<Vec<_>>()
        .join(" + ");
    let eval_inputs = eval::EvalInputs {
        sets: &sets,
        categories: &inputs.categories,
        constants: &constants,
        description: &description,
    };
    let options = eval::EvalOptions {
        strategies: a.strategies,
        m: a.m,
        embedder: cluster::EmbedderChoice::new(a.embedder, a.clip_weights.as_deref())?,
        train: recipe_train_config(a.recipe, a.preset, a.batch)?,
        recipe: a
            .recipe
            .to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_string()),
        steps: a.steps,
        seed: a.seed,
        log_every: a.log_every,
        freeze: a.freeze,
        m_sweep: a.m_sweep,
        ablation: !a.no_ablation,
        sweep: !a.no_sweep,
        resume: a.resume,
        keep_packages: a.keep_packages,
        command_line,
    };
    let plan = eval::plan_eval(&eval_inputs, &options)?;
    print!("{plan}");
    for note in &plan.notes {
        println!("note: {note}");
    }
    if a.dry_run {
        return Ok(());
    }
    let ctx = GpuContext::headless()?;
    eprintln!("{}", ctx.describe());
    let cancel = cancel_on_ctrl_c()?;
    let bar = steps_bar("{prefix} [{bar:32}] {pos}/{len} steps  {msg}  ETA {eta}")?;
    let report = eval::evaluate(
        &ctx,
        &eval_inputs,
        &plan,
        &options,
        &a.out,
        &cancel,
        &mut |event| match event {
            EvalEvent::RunStarted { run, runs, spec } => bar.suspend(|| {
                let n = spec.decoders();
                let groups = if n == 1 { "group" } else { "groups" };
                println!("[{}/{runs}] {}: training {n} {groups}", run + 1, spec.name)
            }),
            EvalEvent::Training {
                run,
                runs,
                spec,
                group,
                groups,
                progress: p,
            } => {
                bar.set_prefix(format!(
                    "run {}/{runs} {} group {}/{groups}",
                    run + 1,
                    spec.name,
                    group + 1
                ));
                bar.set_length(p.total);
                bar.set_position(p.step);
                bar.set_message(format!("loss {:.5}  ≈{:.2} dB", p.loss, p.psnr_estimate));
                // Without a terminal the bar is hidden: one line per finished group.
                if bar.is_hidden() && p.step == p.total {
                    println!(
                        "  group {}/{groups}: loss {:.5} after {} steps",
                        group + 1,
                        p.loss,
                        p.total
                    );
                }
            }
            EvalEvent::RunFinished {
                run,
                runs,
                record,
                path,
                loaded,
            } => bar.suspend(|| {
                let psnr = record
                    .mean_psnr
                    .map_or("–".into(), |p| format!("{p:.2} dB"));
                if *loaded {
                    println!(
                        "[{}/{runs}] {}: loaded {} (mean PSNR {psnr})",
                        run + 1,
                        record.name,
                        path.display()
                    );
                } else {
                    println!(
                        "[{}/{runs}] {}: trained, mean PSNR {psnr}, {:.1} s",
                        run + 1,
                        record.name,
                        record.seconds
                    );
                }
            }),
        },
    )?;
    bar.finish_and_clear();
    print!("{}", report.table2.markdown());
    println!("wrote the evaluation into {}", a.out.display());
    Ok(())
}
