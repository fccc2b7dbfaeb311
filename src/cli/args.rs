//! Argument groups that several subcommands share: offline inputs ([`InputsArg`]), the
//! scene ([`SceneArg`]), the texture-size limit ([`TextureLimitArg`]), the training time
//! limit ([`StopAfterArg`]), texture upload ([`UploadArgs`]), the G-buffer mode
//! ([`GBufferArg`]), the NTC mode and where its package comes from ([`NtcModeArgs`]), the
//! package recipe ([`PackageRecipeArgs`]) and the `WIDTHxHEIGHT` and duration parsers.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::packages::PackageRecipe;
use neurotex::render::passes::ntc_bake::{BakeKernel, Transcode};
use neurotex::render::passes::ntc_decode::NtcKernel;
use neurotex::render::scene_gpu::UploadOptions;
use neurotex::render::{GBufferMode, KernelChoice, PassSettings, RenderMode};
use neurotex::screen::tiles::TileSize;
use neurotex::texture;

/// Scenes and manifests whose texture sets an offline command reads (at least one).
#[derive(Args, Debug)]
pub struct InputsArg {
    /// A scene (.toml, .gltf, .glb); repeatable.
    #[arg(long = "scene")]
    pub scenes: Vec<PathBuf>,
    /// A texture-set manifest (.csv); repeatable.
    #[arg(long = "manifest")]
    pub manifests: Vec<PathBuf>,
    #[command(flatten)]
    pub limit: TextureLimitArg,
}

impl InputsArg {
    /// The inputs in order: scenes, then manifests; an error when there are none.
    pub fn sources(&self) -> Result<Vec<neurotex::inputs::InputSource>> {
        use neurotex::inputs::InputSource;
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

    /// How to decode the inputs' images: every image must exist.
    pub fn load_options(&self) -> texture::LoadOptions {
        self.limit.load_options()
    }
}

/// The inputs' files joined with ` + `, as reports name them.
pub fn describe_sources(sources: &[neurotex::inputs::InputSource]) -> String {
    sources
        .iter()
        .map(|s| s.path().display().to_string())
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The largest texture side a command decodes (`--max-texture-size`). Subcommands that
/// say more about it override the help text with `mut_arg`.
#[derive(Args, Debug, Clone, Copy)]
pub struct TextureLimitArg {
    /// Downscale textures so that no side exceeds this many texels.
    #[arg(long, value_parser = parse_texture_side)]
    pub max_texture_size: Option<u32>,
}

impl TextureLimitArg {
    /// Decoding options with this limit; every image must exist.
    pub fn load_options(&self) -> texture::LoadOptions {
        texture::LoadOptions {
            allow_missing: false,
            max_size: self.max_texture_size,
        }
    }
}

/// The time limit of a training command (`--stop-after`).
#[derive(Args, Debug, Clone, Copy)]
pub struct StopAfterArg {
    /// Start no group's training after this long (e.g. `540`, `9m`, `1.5h`; from the
    /// command's start): groups in training finish, then the command stops as if
    /// interrupted, everything finished kept for --resume (a time-limited job loses no
    /// partly trained group)
    #[arg(long, value_parser = parse_duration)]
    pub stop_after: Option<std::time::Duration>,
}

impl StopAfterArg {
    /// The instant after which no group starts training, counted from now (call it when
    /// the command starts).
    pub fn deadline(&self) -> Option<std::time::Instant> {
        let now = std::time::Instant::now();
        self.stop_after.map(|d| now + d)
    }
}

/// How a rendering command uploads the scene's textures. `render` says more about
/// `--allow-missing-textures` and `--max-texture-size` (`mut_arg`).
#[derive(Args, Debug, Clone, Copy)]
pub struct UploadArgs {
    /// Render with material constants where an image is missing.
    #[arg(long)]
    pub allow_missing_textures: bool,
    #[command(flatten)]
    pub limit: TextureLimitArg,
    /// Maximum anisotropic filtering, 1–16. Default: 16 on GPUs, 1 on CPU adapters.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub anisotropy: Option<u16>,
    #[command(flatten)]
    pub gbuffer: GBufferArg,
}

/// How a rendering command makes its G-buffer (`--gbuffer`).
#[derive(Args, Debug, Clone, Copy)]
pub struct GBufferArg {
    /// G-buffer: `raster` writes every target from the fragment shader; `visibility`
    /// rasterises depth and triangle ids only and rebuilds the targets in compute.
    /// Default: visibility where the GPU supports it, else raster.
    #[arg(long, value_enum)]
    pub gbuffer: Option<GBufferMode>,
}

impl UploadArgs {
    /// The renderer's upload options.
    pub fn options(&self) -> UploadOptions {
        UploadOptions {
            allow_missing_textures: self.allow_missing_textures,
            max_texture_size: self.limit.max_texture_size,
            anisotropy: self.anisotropy,
            gbuffer: self.gbuffer.gbuffer,
        }
    }
}

/// The scene of a rendering command.
#[derive(Args, Debug)]
pub struct SceneArg {
    /// Scene: a description (.toml), a .gltf or a .glb. Default: the built-in toy shop.
    #[arg(long)]
    pub scene: Option<PathBuf>,
}

/// The NTC mode a rendering command shows, where its package comes from, and how it is
/// decoded.
#[derive(Args, Debug, Clone)]
pub struct NtcModeArgs {
    /// Where material channels come from: the original textures or NTC packages of a
    /// decoder-sharing strategy.
    #[arg(long, value_enum, default_value_t = RenderMode::Reference)]
    pub mode: RenderMode,
    /// Render the mode with this package (e.g. from `neurotex compress --strategy …`)
    /// instead of the scene's cached one.
    #[arg(long)]
    pub package: Option<PathBuf>,
    /// A folder of `<strategy>.ntc` packages to use instead of the cache where present.
    #[arg(long)]
    pub packages: Option<PathBuf>,
    /// Decode kernel (default: sorted-fma where the GPU has f16, else f32).
    #[arg(long, visible_alias = "ntc-kernel", value_enum)]
    pub kernel: Option<NtcKernel>,
    /// Screen tile of the decode pass.
    #[arg(long, value_enum, default_value_t = TileSize::T8x8)]
    pub tile: TileSize,
    /// Nearest mip and texel instead of stochastic trilinear filtering.
    #[arg(long)]
    pub no_stochastic: bool,
    /// Decode the package into mipmapped textures at load and render those.
    #[arg(long)]
    pub inference_on_load: bool,
    /// With --inference-on-load, block-compress the decoded textures on the GPU: `bc1`
    /// (BC1, BC7 for groups of four channels) or `bc7` (BC7); either way a group holding
    /// only the normal is BC5 and one holding only metallic BC4.
    #[arg(long, value_enum, requires = "inference_on_load")]
    pub transcode: Option<Transcode>,
    /// With --inference-on-load, how the bake evaluates the decoders: `f32` (within one
    /// 8-bit step of the CPU decode, quick to build) or `fma` (the real-time f16 FMA
    /// evaluation: a fraction of the GPU time, a slower pipeline build; needs SHADER_F16).
    #[arg(long, value_enum, default_value_t, requires = "inference_on_load")]
    pub bake_kernel: BakeKernel,
    #[command(flatten)]
    pub recipe: PackageRecipeArgs,
}

impl NtcModeArgs {
    /// `--package` names the package of an NTC mode: without one (`--mode` left at
    /// `reference`) it would be ignored, so it is refused.
    pub fn check(&self) -> Result<()> {
        if let Some(package) = &self.package
            && self.mode == RenderMode::Reference
        {
            anyhow::bail!(
                "--package {} is the package of an NTC mode: give --mode too (one of the NTC modes), \
                 the reference mode renders the original textures",
                package.display()
            );
        }
        Ok(())
    }

    /// Frame options with the stochastic-filtering and inference-on-load choices.
    pub fn options(&self) -> PassSettings {
        let mut o = PassSettings::default();
        o.decode.stochastic = !self.no_stochastic;
        o.inference_on_load = self.inference_on_load;
        o.transcode = self.transcode;
        o.bake_kernel = self.bake_kernel;
        o
    }

    /// The decode kernel and tile.
    pub fn kernel_choice(&self) -> KernelChoice {
        KernelChoice {
            kernel: self.kernel,
            tile: self.tile,
        }
    }
}

/// How a rendering command makes a scene's package that the cache lacks.
#[derive(Args, Debug, Clone, Copy)]
pub struct PackageRecipeArgs {
    /// Main training steps per texture set when a cached package has to be made (a
    /// group of k sets trains k times as many).
    #[arg(long, default_value_t = neurotex::ntc::Recipe::Default.values().steps, value_parser = parse_positive)]
    pub ntc_steps: u64,
    /// Groups of the clustered and random strategies when a package has to be made.
    #[arg(long, default_value_t = 10, value_parser = parse_positive_usize)]
    pub ntc_m: usize,
}

impl PackageRecipeArgs {
    /// The package recipe, for textures limited to `max_texture_size`.
    pub fn recipe(&self, max_texture_size: Option<u32>) -> PackageRecipe {
        PackageRecipe {
            steps: self.ntc_steps,
            m: self.ntc_m,
            max_texture_size,
            ..PackageRecipe::default()
        }
    }
}

/// Parse `WIDTHxHEIGHT`, each side checked as a description's `[render] size` is
/// ([`neurotex::scene::description::check_size`]: 1..=16384).
pub fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("`{s}`: expected WIDTHxHEIGHT, e.g. 1280x720"))?;
    let max = neurotex::scene::description::MAX_SIZE_SIDE;
    let parse = |v: &str| {
        v.trim()
            .parse::<u32>()
            .map_err(|_| format!("`{s}`: each side must be an integer in 1..={max}"))
    };
    let (w, h) = (parse(w)?, parse(h)?);
    neurotex::scene::description::check_size(w, h).map_err(|e| format!("`{s}`: {e}"))?;
    Ok((w, h))
}

/// Parse a count that must be at least 1 (training steps, decoder groups, frames): the
/// same check for every subcommand, so `--steps 0` or `--m 0` is refused everywhere.
pub fn parse_positive(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{s}` is not a whole number")),
    }
}

/// [`parse_positive`] for `usize` counts.
pub fn parse_positive_usize(s: &str) -> Result<usize, String> {
    parse_positive(s).and_then(|n| usize::try_from(n).map_err(|_| format!("{n} is too large")))
}

/// [`parse_positive`] for `u32` counts.
pub fn parse_positive_u32(s: &str) -> Result<u32, String> {
    parse_positive(s).and_then(|n| u32::try_from(n).map_err(|_| format!("{n} is too large")))
}

/// Most frames one command renders or times (`--frames`): the cameras of a sequence are
/// made up front, so the count is bounded before it sizes them.
pub const MAX_FRAMES: u32 = 100_000;

/// Parse a frame count (`--frames`): 1..=[`MAX_FRAMES`].
pub fn parse_frames(s: &str) -> Result<u32, String> {
    match parse_positive_u32(s)? {
        n if n <= MAX_FRAMES => Ok(n),
        n => Err(format!("{n} frames is more than {MAX_FRAMES}")),
    }
}

/// Parse a texture side limit (`--max-texture-size`, `--texture-size`): 1..=16384.
pub fn parse_texture_side(s: &str) -> Result<u32, String> {
    let max = neurotex::texture::MAX_IMAGE_SIDE;
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("`{s}`: expected a whole number in 1..={max}")),
    }
}

/// Parse a duration (`--stop-after`): a number of seconds, or of minutes or hours with the
/// suffix `m` or `h` (`s` for seconds is allowed), e.g. `540`, `9m`, `1.5h`.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let (number, unit) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        _ => (t, 1.0),
    };
    let bad = || format!("`{s}`: expected a duration such as 540, 540s, 9m or 1.5h");
    let value: f64 = number.trim().parse().map_err(|_| bad())?;
    if !value.is_finite() || value < 0.0 {
        return Err(bad());
    }
    std::time::Duration::try_from_secs_f64(value * unit).map_err(|_| bad())
}

/// An output image path: the format comes from its extension (`.png`, `.jpg`, `.jpeg`).
pub fn parse_image_path(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    neurotex::texture::output_format(&p).map_err(|e| e.to_string())?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_their_units_and_reject_the_rest() {
        use std::time::Duration;
        assert_eq!(parse_duration("540"), Ok(Duration::from_secs(540)));
        assert_eq!(parse_duration(" 90s "), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("9m"), Ok(Duration::from_secs(540)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "m", "-1s", "NaNs", "inf", "9 minutes", "1e300h", "5d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_parse_and_reject() {
        assert_eq!(parse_size("1280x720"), Ok((1280, 720)));
        assert_eq!(parse_size(" 64X 32"), Ok((64, 32)));
        assert!(
            parse_size("1280")
                .unwrap_err()
                .contains("expected WIDTHxHEIGHT")
        );
        assert!(parse_size("0x5").unwrap_err().contains("1..=16384"));
        assert!(parse_size("16385x1").is_err());
        assert!(parse_size("axb").unwrap_err().contains("integer"));
    }

    #[test]
    fn counts_limits_and_image_paths() {
        assert_eq!(parse_positive("7"), Ok(7));
        assert!(parse_positive("0").unwrap_err().contains("at least 1"));
        assert!(parse_positive("-3").is_err());
        assert_eq!(parse_positive_usize("10"), Ok(10));
        assert_eq!(parse_frames("60"), Ok(60));
        assert!(parse_frames("4294967295").unwrap_err().contains("100000"));
        assert!(parse_frames("0").is_err());
        assert_eq!(parse_texture_side("512"), Ok(512));
        assert!(parse_texture_side("0").is_err());
        assert!(parse_texture_side("20000").is_err());
        assert!(parse_image_path("a/b.PNG").is_ok());
        assert!(parse_image_path("o.jpeg").is_ok());
        let e = parse_image_path("o.webp").unwrap_err();
        assert!(e.contains("o.webp") && e.contains(".png"), "{e}");
        assert!(parse_image_path("noext").is_err());
    }
}
