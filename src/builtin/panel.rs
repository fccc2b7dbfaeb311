//! The "panel" scene generator: one texture set of a manifest on two triangles that fill a
//! 16:9 view, the full-screen, one-material frame in which `bench` measures a decoder
//! alone (every pixel one material, no divergence, no overdraw).
//!
//! Owns [`generate`], which writes into a folder `panel.gltf` + `panel.bin` (through
//! [`GltfBuilder`]) and `panel.toml`, a scene description whose default camera is the
//! glTF camera `front` and whose `asset_folders` admit the manifest's image folders (the
//! images are referenced, not copied, as by [`super::street`]). The panel is
//! [`PANEL_SIZE`] metres, [`PANEL_DISTANCE`] in front of a camera with a [`YFOV`] vertical
//! field of view: a 16:9 view sees 18.05 × 10.15 m there, so every pixel of a 16:9 (or
//! narrower) image shows the panel. Its UVs repeat the set `repeat` times across and down.

use std::path::{Path, PathBuf};

use glam::{Quat, Vec3};

use super::gltf_builder::{GltfBuilder, MeshData, NodeTransform};
use super::manifest_scene::{
    ManifestSceneError, asset_folders, io_error, material_desc, read_entries,
};
use crate::io::write_atomic;
use crate::scene::Lighting;
use crate::scene::description::{RenderDefaults, SceneDescription};
use crate::texture::ManifestEntry;

/// Width and height of the panel in metres.
pub const PANEL_SIZE: [f32; 2] = [18.4, 10.4];
/// Distance of the panel in front of the camera in metres.
pub const PANEL_DISTANCE: f32 = 12.0;
/// Vertical field of view of the camera in radians.
pub const YFOV: f32 = 0.8;
/// Name of the glTF camera (the description's default camera).
pub const CAMERA: &str = "front";

/// Every file [`generate`] writes into its folder.
pub const OUTPUT_FILES: [&str; 3] = ["panel.gltf", "panel.bin", "panel.toml"];

/// Options of [`generate`].
#[derive(Clone, Debug, PartialEq)]
pub struct PanelOptions {
    /// The texture-set manifest (CSV with the columns [`crate::texture::read_manifest`]
    /// needs).
    pub manifest: PathBuf,
    /// The set to show: its `set_id`, or the last `/`-separated part of it when that
    /// names one set only. `None`: the manifest's first row.
    pub set: Option<String>,
    /// How many times the set repeats across and down the panel (each > 0).
    pub repeat: [f32; 2],
}

/// The manifest row `set` names (see [`PanelOptions::set`]), or the first row.
fn pick<'a>(
    entries: &'a [ManifestEntry],
    set: Option<&str>,
    manifest: &Path,
) -> Result<&'a ManifestEntry, ManifestSceneError> {
    let Some(set) = set else {
        return Ok(&entries[0]);
    };
    if let Some(e) = entries.iter().find(|e| e.material.name == set) {
        return Ok(e);
    }
    let tail = |e: &&ManifestEntry| e.material.name.rsplit('/').next() == Some(set);
    let matches: Vec<&ManifestEntry> = entries.iter().filter(tail).collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(ManifestSceneError::NoSuchSet {
            path: manifest.to_path_buf(),
            set: set.to_string(),
            reason: "no set_id is or ends in it".into(),
        }),
        many => Err(ManifestSceneError::NoSuchSet {
            path: manifest.to_path_buf(),
            set: set.to_string(),
            reason: format!(
                "{} set_ids end in it ({}); give the whole set_id",
                many.len(),
                many.iter()
                    .map(|e| e.material.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// The panel's two triangles, facing +Z at z = −[`PANEL_DISTANCE`], centred on the −Z
/// axis, UVs (origin top-left, v down) repeating `repeat` times.
fn panel_mesh(repeat: [f32; 2]) -> MeshData {
    let [w, h] = PANEL_SIZE.map(|s| s * 0.5);
    let z = -PANEL_DISTANCE;
    let [ru, rv] = repeat;
    MeshData {
        positions: vec![[-w, -h, z], [w, -h, z], [w, h, z], [-w, h, z]],
        normals: vec![[0.0, 0.0, 1.0]; 4],
        uvs: vec![[0.0, rv], [ru, rv], [ru, 0.0], [0.0, 0.0]],
        indices: vec![0, 1, 2, 0, 2, 3],
    }
}

/// Writes the panel into `out_dir` (created if missing): `panel.gltf`, `panel.bin` and
/// `panel.toml`, each through a temporary file renamed into place. Returns the path of
/// `panel.toml`.
pub fn generate(out_dir: &Path, opts: &PanelOptions) -> Result<PathBuf, ManifestSceneError> {
    let manifest = &opts.manifest;
    if !opts.repeat.iter().all(|r| r.is_finite() && *r > 0.0) {
        return Err(ManifestSceneError::Options(format!(
            "the repeat counts must be positive numbers (got {} × {})",
            opts.repeat[0], opts.repeat[1]
        )));
    }
    let entries = read_entries(manifest)?;
    let entry = pick(&entries, opts.set.as_deref(), manifest)?;
    std::fs::create_dir_all(out_dir).map_err(io_error(out_dir))?;
    let base = std::fs::canonicalize(out_dir).map_err(io_error(out_dir))?;
    let mut builder = GltfBuilder::new();
    let material = builder.add_material(material_desc(entry, &base, manifest)?);
    let mesh = builder.add_mesh("panel", panel_mesh(opts.repeat), material);
    builder.add_mesh_node("panel", mesh, NodeTransform::IDENTITY);
    // A glTF camera looks down −Z with +Y up: the identity rotation faces the panel.
    builder.add_camera(CAMERA, Vec3::ZERO, Quat::IDENTITY, YFOV, 0.1);
    let gltf = builder.write(out_dir, "panel")?;
    let toml_path = out_dir.join("panel.toml");
    let description = SceneDescription {
        gltf: Some(PathBuf::from("panel.gltf")),
        builtin: None,
        asset_folders: asset_folders(std::slice::from_ref(entry), &base),
        // The default sun lights the panel at 66° from its normal, as it lights a bare
        // glTF of the same two triangles.
        lighting: Lighting::default(),
        render: RenderDefaults {
            size: Some([1920, 1080]),
            camera: Some(CAMERA.into()),
            builtin_texture_size: None,
        },
        camera_paths: Vec::new(),
    };
    let body = toml::to_string(&description).map_err(|e| ManifestSceneError::Description {
        path: toml_path.clone(),
        reason: e.to_string(),
    })?;
    let text = format!(
        "# A full-screen panel of the set {} generated by neurotex.\n{body}",
        entry.material.name
    );
    write_atomic(&toml_path, text.as_bytes()).map_err(io_error(&toml_path))?;
    log::info!(
        "panel: {} repeated {} × {} → {}",
        entry.material.name,
        opts.repeat[0],
        opts.repeat[1],
        gltf.display()
    );
    Ok(toml_path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::open::open;

    const BISTRO: &str = "../shared/assets/bistro_texture_sets/manifest.csv";

    fn options(set: Option<&str>) -> PanelOptions {
        PanelOptions {
            manifest: PathBuf::from(BISTRO),
            set: set.map(str::to_string),
            repeat: [6.0, 4.0],
        }
    }

    #[test]
    fn the_panel_fills_a_16_9_view_with_one_set() {
        let dir = std::env::temp_dir().join(format!("neurotex-panel-{}", std::process::id()));
        let toml = generate(&dir, &options(Some("MASTER_Concrete1"))).expect("generate");
        let opened = open(Some(&toml)).expect("the panel opens");
        let scene = &opened.scene;
        assert_eq!(scene.triangle_count(), 2);
        assert_eq!(scene.materials.len(), 1);
        assert_eq!(scene.materials[0].name, "bistro/stone/MASTER_Concrete1");
        assert_eq!(opened.description.render.camera.as_deref(), Some(CAMERA));
        let camera = scene
            .cameras
            .iter()
            .find(|c| c.name == CAMERA)
            .expect("the camera");
        // Every corner of the panel lies outside the camera's 16:9 frustum: the panel
        // covers the whole view.
        let tan_y = (camera.yfov * 0.5).tan();
        let tan_x = tan_y * 16.0 / 9.0;
        let depth = (scene.bounds.min - camera.position).dot(camera.forward);
        assert!(depth > 1.0, "the panel is in front of the camera ({depth})");
        let (min, max) = (scene.bounds.min, scene.bounds.max);
        for x in [min.x, max.x] {
            assert!(x.abs() / depth > tan_x, "x {x} within the view");
        }
        for y in [min.y, max.y] {
            assert!(y.abs() / depth > tan_y, "y {y} within the view");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn sets_are_named_whole_or_by_their_last_part() {
        let entries = read_entries(Path::new(BISTRO)).expect("manifest");
        let manifest = Path::new(BISTRO);
        assert_eq!(
            pick(&entries, None, manifest).expect("first").material.name,
            entries[0].material.name
        );
        let whole = pick(&entries, Some("bistro/stone/MASTER_Concrete1"), manifest);
        assert_eq!(
            whole.expect("whole").material.name,
            "bistro/stone/MASTER_Concrete1"
        );
        let err = pick(&entries, Some("no_such_set"), manifest).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("manifest.csv") && text.contains("no_such_set"),
            "{text}"
        );
        let err = generate(
            &std::env::temp_dir().join("neurotex-panel-never-written"),
            &PanelOptions {
                repeat: [0.0, 4.0],
                ..options(None)
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("repeat"), "{err}");
    }
}
