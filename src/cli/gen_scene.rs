//! `neurotex gen-scene`: write a procedural scene (glTF + textures) into a folder.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};

use neurotex::builtin::{panel, street, toyshop};

use super::output_policy;

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Generator {
    /// The toy shop: ≥ 24 procedural PBR materials.
    Toyshop,
    /// A Bistro-style street using every set of a texture-set manifest (`--textures`).
    Street,
    /// One set of a manifest (`--textures`, `--set`) on two triangles that fill a 16:9
    /// view: the full-screen, one-material frame for `bench`.
    Panel,
}

/// The street's seed without `--seed`.
const DEFAULT_SEED: u64 = 1;
/// The panel's repeats without `--repeat`.
const DEFAULT_REPEAT: [f32; 2] = [6.0, 4.0];

/// The arguments of `neurotex gen-scene`.
#[derive(Args, Debug)]
pub struct GenSceneArgs {
    /// Which scene.
    #[arg(value_enum)]
    kind: Generator,
    /// Output folder.
    #[arg(long)]
    out: PathBuf,
    /// Side of every generated texture (a power of two in 4..=4096; toy shop; default
    /// 512).
    #[arg(long, value_parser = parse_power_of_two)]
    texture_size: Option<u32>,
    /// Texture-set manifest (CSV) whose sets the street (all) or the panel (one) uses.
    #[arg(long, required_if_eq_any([("kind", "street"), ("kind", "panel")]))]
    textures: Option<PathBuf>,
    /// The panel's set: its set_id, or the last `/`-separated part of one (default: the
    /// manifest's first row).
    #[arg(long)]
    set: Option<String>,
    /// How many times the panel's set repeats across and down, ACROSSxDOWN (default 6x4).
    #[arg(long, value_parser = parse_repeat)]
    repeat: Option<[f32; 2]>,
    /// Seed of the procedural content (toy shop and street; default 1).
    #[arg(long)]
    seed: Option<u64>,
}

impl GenSceneArgs {
    /// The options given that `kind` has no use for, by flag.
    fn unused_options(&self) -> Vec<&'static str> {
        let given = [
            ("--texture-size", self.texture_size.is_some()),
            ("--textures", self.textures.is_some()),
            ("--set", self.set.is_some()),
            ("--repeat", self.repeat.is_some()),
            ("--seed", self.seed.is_some()),
        ];
        let takes: &[&str] = match self.kind {
            Generator::Toyshop => &["--texture-size", "--seed"],
            Generator::Street => &["--textures", "--seed"],
            Generator::Panel => &["--textures", "--set", "--repeat"],
        };
        given
            .into_iter()
            .filter(|&(flag, set)| set && !takes.contains(&flag))
            .map(|(flag, _)| flag)
            .collect()
    }
}

/// A toy-shop texture side: a power of two in [`toyshop::TEXTURE_SIZES`].
fn parse_power_of_two(s: &str) -> Result<u32, String> {
    let n = super::args::parse_texture_side(s)?;
    if toyshop::valid_texture_size(n) {
        Ok(n)
    } else {
        let sizes = toyshop::TEXTURE_SIZES;
        Err(format!(
            "`{s}`: expected a power of two in {}..={}",
            sizes.start(),
            sizes.end()
        ))
    }
}

/// A repeat count pair `AxB` of positive numbers.
fn parse_repeat(s: &str) -> Result<[f32; 2], String> {
    let parse = |v: &str| {
        v.trim()
            .parse::<f32>()
            .ok()
            .filter(|r| r.is_finite() && *r > 0.0)
            .ok_or_else(|| format!("`{s}`: expected ACROSSxDOWN, two positive numbers (e.g. 6x4)"))
    };
    match s.split_once(['x', 'X']) {
        Some((a, b)) => Ok([parse(a)?, parse(b)?]),
        None => Err(format!("`{s}`: expected ACROSSxDOWN (e.g. 6x4)")),
    }
}

/// Run `neurotex gen-scene`.
pub fn run(a: GenSceneArgs) -> Result<()> {
    let kind = a
        .kind
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_owned());
    let unused = a.unused_options();
    if !unused.is_empty() {
        anyhow::bail!(
            "gen-scene {kind} does not use {} (the toy shop takes --texture-size and --seed, \
             the street --textures and --seed, the panel --textures, --set and --repeat)",
            unused.join(", ")
        );
    }
    // Every file the generator writes is checked first: none may replace an input (the
    // street's manifest and images) or, without --force, an existing file.
    let (inputs, outputs): (Vec<PathBuf>, Vec<&str>) = match (&a.kind, &a.textures) {
        (Generator::Street | Generator::Panel, Some(manifest)) => {
            let mut inputs = vec![manifest.clone()];
            for e in neurotex::texture::read_manifest(manifest)? {
                let t = &e.material.textures;
                for r in [&t.base_color, &t.normal].into_iter().flatten() {
                    if let neurotex::scene::ImageSource::File(p) = &r.image {
                        inputs.push(p.clone());
                    }
                }
            }
            let outputs = match a.kind {
                Generator::Panel => panel::OUTPUT_FILES.to_vec(),
                _ => street::OUTPUT_FILES.to_vec(),
            };
            (inputs, outputs)
        }
        _ => (Vec::new(), vec!["toyshop.gltf", "toyshop.bin"]),
    };
    let policy = output_policy(&inputs);
    policy.check_dir(&a.out)?;
    let files: Vec<PathBuf> = outputs.iter().map(|f| a.out.join(f)).collect();
    policy.check_all(files.iter().map(|p| p.as_path()))?;
    match a.kind {
        Generator::Toyshop => {
            let defaults = toyshop::ToyshopOptions::default();
            let opts = toyshop::ToyshopOptions {
                texture_size: a.texture_size.unwrap_or(defaults.texture_size),
                seed: a.seed.unwrap_or(defaults.seed),
            };
            let path = toyshop::generate(&a.out, &opts)?;
            println!("wrote {}", path.display());
        }
        Generator::Street | Generator::Panel => {
            let manifest = a.textures.ok_or_else(|| {
                anyhow::anyhow!("gen-scene {kind} needs --textures <manifest.csv>")
            })?;
            let path = if a.kind == Generator::Street {
                let opts = street::StreetOptions {
                    manifest,
                    seed: a.seed.unwrap_or(DEFAULT_SEED),
                };
                street::generate(&a.out, &opts)?
            } else {
                let opts = panel::PanelOptions {
                    manifest,
                    set: a.set,
                    repeat: a.repeat.unwrap_or(DEFAULT_REPEAT),
                };
                panel::generate(&a.out, &opts)?
            };
            println!("wrote {} (and {kind}.gltf beside it)", path.display());
        }
    }
    Ok(())
}
