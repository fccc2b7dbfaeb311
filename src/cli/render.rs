//! `neurotex render`: one frame (or N accumulated frames) headless into a PNG, with the
//! divergence map and the PSNR and ꟻLIP against the reference on request.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::gpu::GpuContext;
use neurotex::open::{open, select_camera};
use neurotex::render::headless::render_frames;
use neurotex::render::passes::heatmap::HeatmapSettings;
use neurotex::render::{Aov, FrameSettings, PassSettings, RenderMode};
use neurotex::texture;

use super::args::{NtcModeArgs, SceneArg, UploadArgs, parse_image_path, parse_size};
use super::{
    PackageSource, distinct_outputs, load_package, output_policy, report_scene, scene_files,
    scene_renderer,
};

/// The arguments of `neurotex render`.
#[derive(Args, Debug)]
#[command(mut_arg("allow_missing_textures", |a| a.help(
    "Render with material constants where an image is missing, and list what was missing"
)))]
#[command(mut_arg("max_texture_size", |a| a.help(
    "Downscale textures so that no side exceeds this many texels (previews, tests)"
)))]
pub struct RenderArgs {
    #[command(flatten)]
    scene: SceneArg,
    /// Output image (.png, or .jpg / .jpeg).
    #[arg(long, value_parser = parse_image_path)]
    out: PathBuf,
    /// Image size, WIDTHxHEIGHT. Default: the scene's, else 1280x720.
    #[arg(long, value_parser = parse_size)]
    size: Option<(u32, u32)>,
    /// A camera path's name, a camera's name, or a camera's number as `neurotex import`
    /// lists them (the glTF's perspective cameras in node order).
    #[arg(long)]
    camera: Option<String>,
    /// What to output.
    #[arg(long, value_enum, default_value_t = Aov::Final)]
    aov: Aov,
    #[command(flatten)]
    upload: UploadArgs,
    #[command(flatten)]
    ntc: NtcModeArgs,
    /// Render this many frames of the static view and output the last (temporal
    /// accumulation resolves the stochastic NTC filtering).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    accumulate: u32,
    /// Also write the image with the heatmap of distinct decoders per tile, and print the
    /// divergence score 𝒟 of this mode next to the baseline's (.png, .jpg, .jpeg).
    #[arg(long, value_parser = parse_image_path)]
    divergence_map: Option<PathBuf>,
    /// Also render the reference and print the PSNR of the (accumulated) image against it
    /// (HDR, before tonemapping) and its mean ꟻLIP (the output image against the
    /// reference's, accumulated alike).
    #[arg(long)]
    psnr: bool,
    /// With --psnr, also write the ꟻLIP error map (magma colours: black no error,
    /// yellow-white the largest) (.png, .jpg, .jpeg).
    #[arg(long, requires = "psnr", value_parser = parse_image_path)]
    flip_map: Option<PathBuf>,
}

/// Run `neurotex render`.
pub fn run(a: RenderArgs) -> Result<()> {
    a.ntc.check()?;
    let opened = open(a.scene.scene.as_deref())?;
    report_scene(&opened);
    // Every output is checked before the first frame: never over an input, never over
    // a file without --force.
    let mut policy = output_policy(scene_files(&opened, a.scene.scene.as_deref()));
    policy.protect(a.ntc.package.iter());
    let outputs: Vec<&std::path::Path> = std::iter::once(a.out.as_path())
        .chain(a.divergence_map.as_deref())
        .chain(a.flip_map.as_deref())
        .collect();
    distinct_outputs(&outputs)?;
    policy.check_all(outputs.iter().copied())?;
    let camera = select_camera(&opened, a.camera.as_deref())?;
    let size = a
        .size
        .or(opened.description.render.size.map(|[w, h]| (w, h)))
        .unwrap_or((1280, 720));
    let started = std::time::Instant::now();
    let ctx = GpuContext::headless()?;
    // Logged under the binary's target, as before the command line had modules.
    log::info!(target: "neurotex", "{}", ctx.describe());
    let max_texture_size = a.upload.limit.max_texture_size;
    let upload = a.upload.options();
    let (textures, mut renderer) = scene_renderer(&ctx, &opened, &upload, size)?;
    for m in &renderer.scene.missing_textures {
        println!("missing texture (constants used): {m}");
    }
    let mode = a.ntc.mode;
    let scene_loaded = started.elapsed();
    if mode != RenderMode::Reference {
        let source = PackageSource {
            package: a.ntc.package.as_deref(),
            packages: a.ntc.packages.as_deref(),
            scene: a.scene.scene.as_deref(),
            recipe: a.ntc.recipe.recipe(max_texture_size),
        };
        load_package(&ctx, &mut renderer, &opened, &textures, mode, &source)?;
        renderer.set_kernel_choice(&ctx, a.ntc.kernel_choice())?;
        renderer.prepare(&ctx, mode)?;
        let package_loaded = started.elapsed();
        if a.ntc.inference_on_load {
            let gpu_ms = renderer.prepare_baked(&ctx, mode, &a.ntc.options())?;
            ctx.wait_idle()?;
            let baked = started.elapsed();
            println!(
                "load: scene and textures {:.3} s, package {:.3} s, inference on load ({}) {:.1} ms{}; {:.3} s in all",
                scene_loaded.as_secs_f64(),
                (package_loaded - scene_loaded).as_secs_f64(),
                a.ntc.transcode.map_or("rgba8", |t| t.name()),
                (baked - package_loaded).as_secs_f64() * 1e3,
                gpu_ms.map_or(String::new(), |ms| format!(" (GPU {ms:.3} ms)")),
                baked.as_secs_f64()
            );
        }
        print_memory(&renderer, mode);
    }
    let mut settings = FrameSettings {
        camera,
        lighting: opened.description.lighting,
        aov: a.aov,
        mode,
        passes: PassSettings {
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
        if !a.ntc.inference_on_load {
            match renderer.psnr_blocking(&ctx)? {
                Some(p) => println!("PSNR against the reference: {p:.2} dB"),
                None => println!("PSNR against the reference: identical (or nothing compared)"),
            }
        }
        let reference_settings = FrameSettings {
            mode: RenderMode::Reference,
            passes: PassSettings {
                compare: false,
                ..settings.passes
            },
            ..settings.clone()
        };
        // From the state the frame was rendered from: the same blue-noise frames.
        renderer.reset_history();
        let reference = render_frames(&ctx, &mut renderer, &reference_settings, a.accumulate)?;
        let rgb = |rgba: &[u8]| -> Vec<u8> {
            rgba.chunks_exact(4)
                .flat_map(|p| [p[0], p[1], p[2]])
                .collect()
        };
        let map = texture::flip::flip_rgb8(
            &rgb(&reference.rgba8),
            &rgb(&frame.rgba8),
            frame.width,
            frame.height,
        )
        .ok_or_else(|| anyhow::anyhow!("the reference frame has another size than the output"))?;
        println!(
            "frame PSNR against the reference (8-bit sRGB RGB): {:.2} dB",
            rgb8_psnr(&rgb(&reference.rgba8), &rgb(&frame.rgba8))
        );
        if let Some(t) = a.ntc.transcode.filter(|_| mode != RenderMode::Reference) {
            let q = renderer.transcode_quality(&ctx, mode, t)?;
            println!(
                "transcode {t} of the decoded texels: GPU encoder {:.2} dB, ISPC {:.2} dB ({:+.2} dB)",
                q.gpu_db,
                q.ispc_db,
                q.gpu_db - q.ispc_db
            );
        }
        println!("ꟻLIP against the reference: {:.4} (mean)", map.mean());
        if let Some(path) = &a.flip_map {
            let rgba: Vec<u8> = map
                .magma_rgb8()
                .chunks_exact(3)
                .flat_map(|p| [p[0], p[1], p[2], 255])
                .collect();
            texture::write_image_rgba8(path, map.width, map.height, &rgba)?;
            println!("wrote {} (ꟻLIP error map)", path.display());
        }
    }
    texture::write_image_rgba8(&a.out, frame.width, frame.height, &frame.rgba8)?;
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
        settings.passes.heatmap = Some(heatmap);
        let map = render_frames(&ctx, &mut renderer, &settings, 1)?;
        let stats = renderer.divergence_blocking(&ctx)?;
        texture::write_image_rgba8(path, map.width, map.height, &map.rgba8)?;
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

/// Print the video memory of `mode`'s material paths: the originals, the package
/// (per-pixel decode), inference on load as RGBA8 and transcoded (beside the BCn bundles
/// of the same sets), and what is baked now.
fn print_memory(renderer: &neurotex::render::Renderer, mode: RenderMode) {
    let mib = |b: u64| format!("{:.2} MiB", b as f64 / 1048576.0);
    for m in renderer.source_memory().iter().filter(|m| m.mode == mode) {
        println!(
            "video memory of {mode}: original textures {}",
            mib(m.textures)
        );
        if let Some(p) = m.package {
            println!("  per-pixel decode: package {}", mib(p));
        }
        if let Some(o) = m.on_load {
            println!(
                "  inference on load: RGBA8 {}, BC1 {} (BC1/BC5 bundle {}), BC7 {} (BC7/BC5 bundle {})",
                mib(o.rgba8),
                mib(o.bc1),
                mib(o.bundle_bc1_bc5),
                mib(o.bc7),
                mib(o.bundle_bc7_bc5)
            );
        }
        if let Some((t, bytes)) = m.baked {
            println!(
                "  baked now: {} {}",
                t.map_or("rgba8", |t| t.name()),
                mib(bytes)
            );
        }
    }
}

/// PSNR in dB of two 8-bit images of the same size (the project's convention,
/// [`texture::metrics::psnr_from_mse`]).
fn rgb8_psnr(a: &[u8], b: &[u8]) -> f64 {
    let sse: f64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| (f64::from(x) - f64::from(y)).powi(2))
        .sum();
    texture::metrics::psnr_from_mse(sse / (255.0f64.powi(2) * a.len().max(1) as f64))
}
