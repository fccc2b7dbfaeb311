//! `neurotex import`: import a scene or a texture-set manifest and report what it holds.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use neurotex::open::open;
use neurotex::texture;

use super::args::{SceneArg, TextureLimitArg};
use super::{output_policy, report_scene, scene_files};

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
    use neurotex::inputs::{InputSets, InputSource};
    if let Some(manifest) = &a.manifest {
        let entries = texture::manifest::read_manifest(manifest)?;
        let inputs = InputSets::open(&[InputSource::Manifest(manifest.clone())])?;
        if let Some(csv) = &a.csv {
            output_policy(inputs.files()).check(csv)?;
        }
        let opts = a.limit.load_options();
        // One line per distinct set with every row that uses it: rows without images
        // are refused by the reader, rows sharing images share a set.
        let sets = texture::manifest::sets_of_rows(&entries);
        for (desc, rows) in &sets {
            let loaded = desc.load(&opts)?;
            let ids: Vec<&str> = rows
                .iter()
                .map(|&r| entries[r].material.name.as_str())
                .collect();
            println!(
                "{:<48} {:<14} {}x{} mips {} channels {}",
                ids.join(" + "),
                entries[rows[0]].category,
                loaded.set.width,
                loaded.set.height,
                loaded.set.mips.len(),
                loaded.set.present
            );
        }
        if sets.len() == entries.len() {
            println!("{}: {} texture sets", manifest.display(), sets.len());
        } else {
            println!(
                "{}: {} rows, {} texture sets",
                manifest.display(),
                entries.len(),
                sets.len()
            );
        }
        if let Some(csv) = &a.csv {
            neurotex::inputs::write_texture_sets_csv(csv, &inputs)?;
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
        // The report has the schema of the `texture_sets.csv` the loader reads beside a
        // scene, and may not replace that file (an input) or any file without --force.
        let scene = a.scene.scene.clone().unwrap_or(opened.scene.source.clone());
        let inputs = InputSets::open(&[InputSource::Scene(scene)])?;
        let mut files = inputs.files();
        files.extend(scene_files(&opened, a.scene.scene.as_deref()));
        output_policy(files).check(csv)?;
        neurotex::inputs::write_texture_sets_csv(csv, &inputs)?;
        println!("wrote {}", csv.display());
    }
    Ok(())
}
