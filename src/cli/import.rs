//! `neurotex import`: import a scene, a texture-set manifest or a texture folder (whose
//! manifest it writes) and report what it holds.

use std::path::{Path, PathBuf};

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
    /// A texture folder: pair its images into sets by their names (`_BaseColor`,
    /// `_Albedo`, `_Diffuse`, `_Normal`, `_ORM`, `_Roughness`, `_Metallic`, `_AO`,
    /// `_Emissive`, any case), list what cannot be paired, write `manifest.csv` into the
    /// folder and decode every set.
    #[arg(long, conflicts_with_all = ["scene", "manifest"])]
    textures: Option<PathBuf>,
    /// Write the distinct texture sets to this CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    #[command(flatten)]
    limit: TextureLimitArg,
}

/// Run `neurotex import`.
pub fn run(a: ImportArgs) -> Result<()> {
    if let Some(dir) = &a.textures {
        let manifest = write_folder_manifest(dir)?;
        return report_manifest(&manifest, &a);
    }
    if let Some(manifest) = &a.manifest {
        return report_manifest(manifest, &a);
    }
    report_scene_import(&a)
}

/// Pair the images of `dir` into sets, list the images left out and write the manifest
/// `dir/manifest.csv` (never over an existing one without `--force`); returns its path.
fn write_folder_manifest(dir: &Path) -> Result<PathBuf> {
    let scan = texture::folder::scan(dir)?;
    for u in &scan.unpaired {
        println!("not paired: {}: {}", u.path.display(), u.reason);
    }
    if scan.sets.is_empty() {
        anyhow::bail!(
            "{}: no texture set found (image names need a suffix such as _BaseColor or _Normal)",
            dir.display()
        );
    }
    let manifest = dir.join("manifest.csv");
    let images = scan
        .sets
        .iter()
        .flat_map(|s| s.images.values().map(|p| dir.join(p)));
    output_policy(images).check(&manifest)?;
    neurotex::io::write_atomic(&manifest, texture::folder::manifest_text(&scan).as_bytes())
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", manifest.display()))?;
    println!(
        "wrote {} ({} texture sets, {} images not paired)",
        manifest.display(),
        scan.sets.len(),
        scan.unpaired.len()
    );
    Ok(manifest)
}

/// Decode every set of `manifest` and print one line per set (and one per image that was
/// already block-compressed); write `--csv` when asked.
fn report_manifest(manifest: &Path, a: &ImportArgs) -> Result<()> {
    use neurotex::inputs::{InputSets, InputSource};
    let entries = texture::manifest::read_manifest(manifest)?;
    {
        let inputs = InputSets::open(&[InputSource::Manifest(manifest.to_path_buf())])?;
        if let Some(csv) = &a.csv {
            output_policy(inputs.files()).check(csv)?;
        }
        let opts = a.limit.load_options();
        // One line per distinct set with every row that uses it: rows without images
        // are refused by the reader, rows sharing images share a set.
        let sets = texture::manifest::sets_of_rows(&entries);
        // The channels compress trains: those some row using the set needs.
        let relevant = inputs.relevant_channels();
        for (desc, rows) in &sets {
            let mut loaded = desc.load(&opts)?;
            if let Some(i) = inputs.descs.iter().position(|d| d == desc) {
                loaded.set.keep_channels(relevant[i]);
            }
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
            for lossy in &loaded.lossy {
                println!("  {lossy}");
            }
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
        Ok(())
    }
}

/// Open the scene argument, report it and write `--csv` when asked.
fn report_scene_import(a: &ImportArgs) -> Result<()> {
    use neurotex::inputs::{InputSets, InputSource};
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
