//! The `neurotex` command line: one file per subcommand (its clap arguments and a `run`
//! that calls the library), the argument groups several subcommands share ([`args`], and
//! the co-occurrence record options in [`cooccurrence`]), and the few helpers every
//! subcommand's output goes through. `anyhow` lives only here.

mod args;
mod bench;
mod bench_bcn;
mod bench_decode;
mod bench_kernels;
mod cluster;
mod compress;
mod decompress;
mod devices;
mod eval;
mod gen_scene;
mod import;
mod inspect;
mod merge;
mod record_args;
mod render;
mod view;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use neurotex::gpu::GpuContext;
use neurotex::ntc;
use neurotex::ntc::shard::capped_list;
use neurotex::open::OpenedScene;
use neurotex::outputs::OutputPolicy;
use neurotex::packages::{PackageProgress, PackageRecipe, ScenePackages};
use neurotex::render::passes::ntc_decode::NtcKernel;
use neurotex::render::scene_gpu::UploadOptions;
use neurotex::render::{RenderMode, Renderer};
use neurotex::texture;

/// Neural texture compression with shared decoders, rendered in real time.
#[derive(Parser, Debug)]
#[command(version, about, long_about = None)]
struct Cli {
    /// What to do. Without a subcommand: `view` on the built-in toy shop.
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    global: GlobalArgs,
}

/// Options of every subcommand.
#[derive(Args, Debug, Clone, Copy)]
struct GlobalArgs {
    /// Replace output files that exist (an output that is one of the command's inputs
    /// is refused all the same).
    #[arg(long, global = true)]
    force: bool,
    /// Let a glTF's buffer and image URIs name files outside its folder (and outside a
    /// scene description's `asset_folders`).
    #[arg(long, global = true)]
    allow_outside_uris: bool,
}

/// `--force`, for [`output_policy`].
static FORCE: AtomicBool = AtomicBool::new(false);

/// The output policy of a command reading `inputs`, with `--force`.
fn output_policy<I, P>(inputs: I) -> OutputPolicy
where
    I: IntoIterator<Item = P>,
    P: AsRef<Path>,
{
    OutputPolicy::new(inputs, FORCE.load(Ordering::Relaxed))
}

/// Checks, before any work, that a report folder `out` of a command reading no inputs
/// may be written with its `files` (names inside it), under the output policy.
fn check_report_folder(out: &Path, files: &[&str]) -> Result<()> {
    let policy = output_policy(Vec::<PathBuf>::new());
    policy.check_dir(out)?;
    let paths: Vec<PathBuf> = files.iter().map(|f| out.join(f)).collect();
    policy.check_all(paths.iter().map(|p| p.as_path()))?;
    Ok(())
}

/// The files an opened scene was read from: the argument, the `texture_sets.csv`
/// beside it, the glTF, its buffers and every image file.
fn scene_files(opened: &OpenedScene, arg: Option<&Path>) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = arg.into_iter().map(Path::to_path_buf).collect();
    if let Some(labels) = arg.map(|a| a.with_file_name("texture_sets.csv"))
        && labels.is_file()
    {
        files.push(labels);
    }
    files.extend(opened.scene.files());
    files
}

/// Outputs of one command must differ from each other (`--out x --divergence-map x`).
fn distinct_outputs(paths: &[&Path]) -> Result<()> {
    for (i, a) in paths.iter().enumerate() {
        for b in &paths[i + 1..] {
            if neurotex::outputs::resolve(a) == neurotex::outputs::resolve(b) {
                anyhow::bail!("{} is named for two outputs of this command", a.display());
            }
        }
    }
    Ok(())
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Open the interactive viewer (the default without a subcommand).
    View(view::ViewArgs),
    /// Render one frame headless into a PNG.
    Render(render::RenderArgs),
    /// Write a procedural scene (glTF + textures) into a folder.
    GenScene(gen_scene::GenSceneArgs),
    /// Import a scene or a texture-set manifest and report what it holds.
    Import(import::ImportArgs),
    /// Embed texture sets and group them into shared-decoder groups (a plan).
    Cluster(cluster::ClusterArgs),
    /// Compress texture sets into a .ntc package (trains on the GPU), or one shard of
    /// them into a part file (`--shard I/N`).
    Compress(compress::CompressArgs),
    /// Join the part files of every shard of a `compress --shard` run into one package.
    Merge(merge::MergeArgs),
    /// GPU timings of the render modes, kernels and tile sizes side by side along a camera
    /// path (JSON, CSV, Markdown, PNG).
    Bench(bench::BenchArgs),
    /// Summarise a .ntc package.
    Inspect(inspect::InspectArgs),
    /// Decode a .ntc package back into PNG textures.
    Decompress(decompress::DecompressArgs),
    /// Evaluate grouping strategies, decoder freezing and decoder counts (trains on the GPU).
    Eval(eval::EvalArgs),
    /// List the GPU adapters in the order `--devices` numbers them.
    Devices(devices::DevicesArgs),
}

/// Parse the command line, run the subcommand and report an error as one `error:` line.
pub fn main() -> ExitCode {
    env_logger::Builder::from_env(
        env_logger::Env::default().default_filter_or("warn,neurotex=info"),
    )
    .format_timestamp(None)
    .init();
    let cli = Cli::parse();
    FORCE.store(cli.global.force, Ordering::Relaxed);
    neurotex::scene::gltf_import::allow_outside_uris(cli.global.allow_outside_uris);
    // A memory budget that does not parse is an error, never the default.
    if let Err(e) = texture::budget::from_env() {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    // The renderer picks its default decode kernel by this measurement.
    neurotex::render::kernel_choice::install_calibrator(neurotex::bench::decode::calibrate);
    let result = match cli.command {
        None => view::default_args().and_then(view::run),
        Some(Command::View(a)) => view::run(a),
        Some(Command::Render(a)) => render::run(a),
        Some(Command::Bench(a)) => bench::run(a),
        Some(Command::GenScene(a)) => gen_scene::run(a),
        Some(Command::Import(a)) => import::run(a),
        Some(Command::Cluster(a)) => cluster::run(a),
        Some(Command::Compress(a)) => compress::run(a),
        Some(Command::Merge(a)) => merge::run(a),
        Some(Command::Inspect(a)) => inspect::run(a),
        Some(Command::Decompress(a)) => decompress::run(a),
        Some(Command::Eval(a)) => eval::run(a),
        Some(Command::Devices(a)) => devices::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", error_line(&e));
            ExitCode::FAILURE
        }
    }
}

/// One line: the chain of causes, leaving out a cause whose text the message before it
/// already contains (thiserror messages often embed their source).
fn error_line(e: &anyhow::Error) -> String {
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
    line
}

/// Print what an opened scene holds (one line).
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
    // What `--camera` takes: a path's or camera's name, or a camera's number here (the
    // glTF's perspective cameras in node order; orthographic ones are not kept).
    let paths = &opened.description.camera_paths;
    if !paths.is_empty() {
        let names = paths.iter().map(|p| format!("`{}`", p.name));
        println!("camera paths: {}", capped_list(names, ", ", "paths"));
    }
    if !s.cameras.is_empty() {
        let cameras = s
            .cameras
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{i} `{}`", c.name));
        println!("cameras: {}", capped_list(cameras, ", ", "cameras"));
    }
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
fn read_package(path: &Path) -> Result<ntc::NtcPackage> {
    use anyhow::Context as _;
    ntc::NtcPackage::read(path).with_context(|| path.display().to_string())
}

/// Where a rendering command gets the package of an NTC mode from.
struct PackageSource<'a> {
    /// A package file for the mode (`--package`) instead of the scene's.
    package: Option<&'a Path>,
    /// A folder of `<strategy>.ntc` packages to prefer over the cache (`--packages`).
    packages: Option<&'a Path>,
    /// The scene argument (a description's camera paths are the views the
    /// divergence-aware package's co-occurrence is recorded from; default: the glTF).
    scene: Option<&'a Path>,
    /// How a missing or stale cached package is made.
    recipe: PackageRecipe,
}

/// Give `renderer` the package of `mode`: `source.package`, else the scene's (from
/// `source.packages` or the cache, compressed from the scene's decoded `textures` with a
/// progress bar when missing or stale; divergence-aware after recording the scene's
/// co-occurrence when its record is missing or stale).
fn load_package(
    ctx: &GpuContext,
    renderer: &mut Renderer,
    opened: &OpenedScene,
    textures: &texture::SceneTextures,
    mode: RenderMode,
    source: &PackageSource<'_>,
) -> Result<()> {
    use anyhow::Context as _;
    let strategy = mode
        .strategy()
        .ok_or_else(|| anyhow::anyhow!("the reference mode has no package"))?;
    // The scene as named (a description's `asset_folders` admit its glTF's URIs).
    let scene = source.scene.unwrap_or(&opened.scene.source);
    let mut packages = ScenePackages::open(scene, source.recipe.clone())?
        .with_prebuilt(source.packages.map(Path::to_path_buf));
    if strategy == neurotex::cluster::Strategy::DivergenceAware {
        packages = packages.with_views(std::sync::Arc::new(opened.clone()), scene.to_path_buf());
    }
    let package = match source.package {
        Some(path) => read_package(path)?,
        None => {
            let bar = steps_bar("{prefix} [{bar:32}] {pos}/{len} steps  ETA {eta}")?;
            let cancel = std::sync::atomic::AtomicBool::new(false);
            if !packages.is_fresh(strategy) {
                eprintln!(
                    "compressing the {strategy} package of {} into {}",
                    scene.display(),
                    packages.path(strategy).display()
                );
            }
            let devices = std::slice::from_ref(ctx);
            let package =
                packages.load_or_compress(devices, strategy, textures, &cancel, &mut |p| {
                    let (prefix, done, total) = match p {
                        PackageProgress::Recording { done, views } => {
                            ("recording views".to_string(), done as u64, views as u64)
                        }
                        PackageProgress::Training(p) => (
                            format!("{strategy} group {}/{}", p.group + 1, p.groups),
                            p.train.step,
                            p.train.total,
                        ),
                    };
                    bar.set_prefix(prefix);
                    bar.set_length(total);
                    bar.set_position(done);
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

/// The scene's textures, decoded under `upload`, and a headless renderer of `size` over
/// them.
fn scene_renderer(
    ctx: &GpuContext,
    opened: &OpenedScene,
    upload: &UploadOptions,
    size: (u32, u32),
) -> Result<(texture::SceneTextures, Renderer)> {
    let textures = texture::SceneTextures::load(&opened.scene.materials, &upload.load_options())?;
    let mut renderer = Renderer::new(
        ctx,
        &opened.scene,
        &textures,
        upload.anisotropy,
        size,
        neurotex::render::headless::OUTPUT_FORMAT,
    )?;
    if let Some(mode) = upload.gbuffer {
        renderer.set_gbuffer_mode(ctx, mode)?;
    }
    println!("G-buffer: {}", renderer.gbuffer_mode());
    Ok((textures, renderer))
}

/// The kernels a command was given, or every kernel the adapter runs when none was.
fn kernels_or_supported(chosen: &[NtcKernel], ctx: &GpuContext) -> Vec<NtcKernel> {
    if chosen.is_empty() {
        NtcKernel::ALL
            .into_iter()
            .filter(|k| k.supported(&ctx.granted))
            .collect()
    } else {
        chosen.to_vec()
    }
}
