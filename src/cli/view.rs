//! `neurotex view` (and `neurotex` alone): the interactive viewer.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use neurotex::render::RenderMode;

use super::args::{NtcModeArgs, SceneArg, UploadArgs, parse_frames, parse_image_path, parse_size};
use super::devices::DevicesArg;
use super::{output_policy, scene_files};

/// The arguments of `neurotex view`.
#[derive(Args, Debug)]
pub struct ViewArgs {
    #[command(flatten)]
    scene: SceneArg,
    /// Window size, WIDTHxHEIGHT (physical pixels). Default: 1280x720.
    #[arg(long, value_parser = parse_size)]
    size: Option<(u32, u32)>,
    /// Scripted run: render this many frames once the scene is ready, then exit.
    #[arg(long, value_parser = parse_frames)]
    frames: Option<u32>,
    /// Scripted run: save the last frame, overlay included, to this PNG (needs --frames).
    #[arg(long, requires = "frames", value_parser = parse_image_path)]
    screenshot: Option<PathBuf>,
    /// Play this camera path of the scene description from its start.
    #[arg(long)]
    camera_path: Option<String>,
    /// Start without vsync (mailbox or immediate presentation where supported).
    #[arg(long)]
    no_vsync: bool,
    /// Internal resolution over window resolution, 0.25–1.0.
    #[arg(long, default_value_t = 1.0, value_parser = parse_render_scale)]
    render_scale: f32,
    #[command(flatten)]
    upload: UploadArgs,
    #[command(flatten)]
    ntc: NtcModeArgs,
    /// Start with the heatmap of distinct decoders per tile.
    #[arg(long)]
    heatmap: bool,
    /// Start with the split view: --mode on the left, this material source on the right
    /// (K toggles it, N picks the next source).
    #[arg(long, value_enum)]
    compare: Option<RenderMode>,
    /// The NTC modes to prepare packages for (default: all; fewer saves compression time).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = RenderMode::ALL)]
    modes: Vec<RenderMode>,
    #[command(flatten)]
    devices: DevicesArg,
}

/// Parse `--render-scale`: a number within the viewer's range (NaN, 0 or 5 are errors,
/// not clamped).
fn parse_render_scale(s: &str) -> Result<f32, String> {
    let range = neurotex::ui::RENDER_SCALE_RANGE;
    match s.trim().parse::<f32>() {
        Ok(v) if range.contains(&v) => Ok(v),
        _ => Err(format!(
            "`{s}`: expected a number from {} to {}",
            range.start(),
            range.end()
        )),
    }
}

/// `view` with every option at its default (what `neurotex` without arguments runs).
pub fn default_args() -> Result<ViewArgs> {
    use clap::FromArgMatches;
    let matches = ViewArgs::augment_args(clap::Command::new("view")).get_matches_from(["view"]);
    Ok(ViewArgs::from_arg_matches(&matches)?)
}

/// Run `neurotex view`.
pub fn run(a: ViewArgs) -> Result<()> {
    if a.ntc.package.is_some() {
        anyhow::bail!(
            "view loads a package per mode: give a folder of <strategy>.ntc files with --packages"
        );
    }
    // The screenshot may not replace any file of the scene (opened here for the list;
    // images are only referenced, not decoded). A scene that does not open is the
    // viewer's to report, in its window; the screenshot still may not replace it.
    if let Some(shot) = &a.screenshot {
        let scene = a.scene.scene.as_deref();
        let files = match neurotex::open::open(scene) {
            Ok(opened) => scene_files(&opened, scene),
            Err(_) => scene.map(Path::to_path_buf).into_iter().collect(),
        };
        output_policy(files).check(shot)?;
    }
    let max_texture_size = a.upload.limit.max_texture_size;
    let recipe = a.ntc.recipe.recipe(max_texture_size);
    // Missing packages train on --devices; without it on the viewer's own device.
    let train_devices = if a.devices.given() {
        a.devices.open(&recipe.train_config(), None)?.devices
    } else {
        Vec::new()
    };
    neurotex::app::run(neurotex::app::ViewerOptions {
        scene: a.scene.scene,
        size: a.size,
        frames: a.frames,
        screenshot: a.screenshot,
        camera_path: a.camera_path,
        upload: a.upload.options(),
        recipe,
        packages: a.ntc.packages.clone(),
        settings: neurotex::ui::ViewSettings {
            vsync: !a.no_vsync,
            render_scale: a.render_scale,
            mode: a.ntc.mode,
            ntc: a.ntc.kernel_choice(),
            passes: a.ntc.options(),
            show_heatmap: a.heatmap,
            compare: neurotex::ui::compare::CompareSettings::showing(a.compare),
            ..Default::default()
        },
        modes: a.modes.clone(),
        train_devices,
    })?;
    Ok(())
}
