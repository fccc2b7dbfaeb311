//! Opening whatever the user names as a scene: a description file (`.toml`), a glTF or
//! GLB file, or nothing (the built-in toy shop, generated once into a cache folder).
//! Also picks the camera a `--camera` argument names.

use std::path::{Path, PathBuf};

use super::description::{Builtin, LoadedDescription, SceneDescription};
use super::gltf_import::{self, UriPolicy};
use super::{Camera, Scene, SceneError};

/// Texture size of the built-in toy shop when the description does not say.
pub const DEFAULT_TOYSHOP_TEXTURE_SIZE: u32 = 512;

/// A scene with the description it came with (an empty one for a bare glTF).
#[derive(Clone, Debug)]
pub struct OpenedScene {
    /// The geometry and materials.
    pub scene: Scene,
    /// Lighting, camera paths and defaults.
    pub description: SceneDescription,
}

/// Open `path` (`.toml`, `.gltf`, `.glb`), or the built-in toy shop when `None`.
pub fn open(path: Option<&Path>) -> Result<OpenedScene, SceneError> {
    let Some(path) = path else {
        let description = SceneDescription {
            builtin: Some(Builtin::Toyshop),
            ..Default::default()
        };
        let scene = Scene::load(&builtin_gltf(
            Builtin::Toyshop,
            DEFAULT_TOYSHOP_TEXTURE_SIZE,
        )?)?;
        return Ok(OpenedScene { scene, description });
    };
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "toml" => {
            let loaded = LoadedDescription::load(path)?;
            let gltf = match (loaded.gltf_path(), loaded.description.builtin) {
                (Some(g), _) => g,
                (None, Some(b)) => builtin_gltf(
                    b,
                    loaded
                        .description
                        .render
                        .builtin_texture_size
                        .unwrap_or(DEFAULT_TOYSHOP_TEXTURE_SIZE),
                )?,
                (None, None) => unreachable!("LoadedDescription::load checks for gltf or builtin"),
            };
            let policy = UriPolicy {
                extra_roots: loaded.asset_folders(),
                anywhere: false,
            };
            Ok(OpenedScene {
                scene: gltf_import::load_with(&gltf, &policy)?,
                description: loaded.description,
            })
        }
        "gltf" | "glb" => Ok(OpenedScene {
            scene: Scene::load(path)?,
            description: SceneDescription::default(),
        }),
        _ => Err(SceneError::Malformed {
            path: path.to_path_buf(),
            reason: "expected a .toml scene description, a .gltf or a .glb file".into(),
        }),
    }
}

/// Where built-in scenes are cached: `$NEUROTEX_CACHE`, else `$XDG_CACHE_HOME/neurotex`,
/// else `~/.cache/neurotex`, else a folder in the system temp dir.
pub fn cache_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("NEUROTEX_CACHE") {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(p).join("neurotex");
    }
    if let Some(home) = std::env::var_os("HOME") {
        return PathBuf::from(home).join(".cache").join("neurotex");
    }
    std::env::temp_dir().join("neurotex-cache")
}

/// The glTF of a built-in scene, generated into the cache on first use.
pub fn builtin_gltf(builtin: Builtin, texture_size: u32) -> Result<PathBuf, SceneError> {
    match builtin {
        Builtin::Toyshop => {
            let opts = super::toyshop::ToyshopOptions {
                texture_size,
                ..Default::default()
            };
            let dir = cache_dir().join(format!(
                "toyshop-v{}-{}px-seed{}",
                super::toyshop::GENERATOR_VERSION,
                opts.texture_size,
                opts.seed
            ));
            let gltf = dir.join("toyshop.gltf");
            if gltf.exists() {
                return Ok(gltf);
            }
            log::info!("generating the built-in toy shop into {}", dir.display());
            super::toyshop::generate(&dir, &opts).map_err(|e| SceneError::Builtin {
                path: dir.clone(),
                reason: e.to_string(),
            })
        }
    }
}

/// The camera that `spec` names: a camera path (its first key), a glTF camera name, or a
/// glTF camera index. Without `spec`: the description's default, else the file's first
/// camera, else [`Camera::auto`].
pub fn select_camera(opened: &OpenedScene, spec: Option<&str>) -> Result<Camera, SceneError> {
    let spec = spec.or(opened.description.render.camera.as_deref());
    let Some(spec) = spec else {
        return Ok(opened
            .scene
            .cameras
            .first()
            .cloned()
            .unwrap_or_else(|| Camera::auto(&opened.scene)));
    };
    if let Some(p) = opened
        .description
        .camera_paths
        .iter()
        .find(|p| p.name == spec)
        && let Some(c) = p.sample(p.keys[0].time)
    {
        return Ok(c);
    }
    if let Some(c) = opened.scene.cameras.iter().find(|c| c.name == spec) {
        return Ok(c.clone());
    }
    if let Ok(i) = spec.parse::<usize>()
        && let Some(c) = opened.scene.cameras.get(i)
    {
        return Ok(c.clone());
    }
    let mut names: Vec<String> = opened
        .description
        .camera_paths
        .iter()
        .map(|p| p.name.clone())
        .collect();
    names.extend(opened.scene.cameras.iter().map(|c| c.name.clone()));
    Err(SceneError::Description {
        path: opened.scene.source.clone(),
        reason: format!(
            "no camera path or camera named `{spec}` (available: {})",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ),
    })
}
