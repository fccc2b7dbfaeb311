//! `neurotex gen-scene`: write a procedural scene (glTF + textures) into a folder.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};

use neurotex::builtin::{street, toyshop};

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Generator {
    /// The toy shop: ≥ 24 procedural PBR materials.
    Toyshop,
    /// A Bistro-style street using every set of a texture-set manifest (`--textures`).
    Street,
}

/// The arguments of `neurotex gen-scene`.
#[derive(Args, Debug)]
pub struct GenSceneArgs {
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

/// Run `neurotex gen-scene`.
pub fn run(a: GenSceneArgs) -> Result<()> {
    match a.kind {
        Generator::Toyshop => {
            let opts = toyshop::ToyshopOptions {
                texture_size: a.texture_size,
                seed: a.seed,
            };
            let path = toyshop::generate(&a.out, &opts)?;
            println!("wrote {}", path.display());
        }
        Generator::Street => {
            let manifest = a.textures.ok_or_else(|| {
                anyhow::anyhow!("gen-scene street needs --textures <manifest.csv>")
            })?;
            let opts = street::StreetOptions {
                manifest,
                seed: a.seed,
            };
            let path = street::generate(&a.out, &opts)?;
            println!("wrote {} (and street.gltf beside it)", path.display());
        }
    }
    Ok(())
}
