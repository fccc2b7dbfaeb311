//! `neurotex import`: import a scene or a texture-set manifest and report what it holds.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::scene::open::open;
use neurotex::texture;

use super::args::{SceneArg, TextureLimitArg};
use super::report_scene;

/// The arguments of `neurotex import`.
#[derive(Args, Debug)]
#[command(mut_arg("max_texture_size", |a| a.help(
    "Downscale textures while decoding a manifest"
)))]
pub struct ImportArgs {
    #[command(flatten)]
    scene: SceneArg,
    /// A texture-set manifest (CSV) instead of a scene; every set is decoded.
    #[arg(long, conflicts_with = "scene")]
    manifest: Option<PathBuf>,
    /// Write the distinct texture sets to this CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    #[command(flatten)]
    limit: TextureLimitArg,
}

/// Run `neurotex import`.
pub fn run(a: ImportArgs) -> Result<()> {
    if let Some(manifest) = &a.manifest {
        let entries = texture::manifest::read_manifest(manifest)?;
        let materials: Vec<_> = entries.iter().map(|e| e.material.clone()).collect();
        let (sets, material_sets) = texture::scene_texture_sets(&materials);
        let opts = a.limit.load_options();
        for (desc, entry) in sets.iter().zip(&entries) {
            let loaded = desc.load(&opts)?;
            println!(
                "{:<48} {:<14} {}x{} mips {} channels {}",
                entry.material.name,
                entry.category,
                loaded.set.width,
                loaded.set.height,
                loaded.set.mips.len(),
                loaded.set.present
            );
        }
        println!("{}: {} texture sets", manifest.display(), sets.len());
        if let Some(csv) = &a.csv {
            texture::manifest::write_texture_sets_csv(csv, &sets, &materials, &material_sets)?;
        }
        return Ok(());
    }
    let opened = open(a.scene.scene.as_deref())?;
    report_scene(&opened);
    for w in &opened.scene.warnings {
        println!("warning: {w}");
    }
    if let Some(csv) = &a.csv {
        let (sets, material_sets) = texture::scene_texture_sets(&opened.scene.materials);
        texture::manifest::write_texture_sets_csv(
            csv,
            &sets,
            &opened.scene.materials,
            &material_sets,
        )?;
        println!("wrote {}", csv.display());
    }
    Ok(())
}
