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
    /// A camera path name, a glTF camera name or a glTF camera index.
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
    if a.psnr && a.ntc.inference_on_load {
        anyhow::bail!(
            "--psnr compares per-pixel decoding with the reference; it is not available with --inference-on-load"
        );
    }
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
        match renderer.psnr_blocking(&ctx)? {
            Some(p) => println!("PSNR against the reference: {p:.2} dB"),
            None => println!("PSNR against the reference: identical (or nothing compared)"),
        }
        let reference_settings = FrameSettings {
            mode: RenderMode::Reference,
            passes: PassSettings {
                compare: false,
                ..settings.passes
            },
            ..settings.clone()
        };
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
