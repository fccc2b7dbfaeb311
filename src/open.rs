//! Opening whatever the user names as a scene: a description file (`.toml`), a glTF or
//! GLB file, or nothing (the built-in toy shop, generated once into a cache folder).
//! Also picks the camera a `--camera` argument names.

use std::path::{Path, PathBuf};

use crate::scene::description::{Builtin, CameraPath, LoadedDescription, SceneDescription};
use crate::scene::gltf_import::{self, UriPolicy};
use crate::scene::{Camera, Scene, SceneError};

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
            let opts = crate::builtin::toyshop::ToyshopOptions {
                texture_size,
                ..Default::default()
            };
            let dir = cache_dir().join(format!(
                "toyshop-v{}-{}px-seed{}",
                crate::builtin::toyshop::GENERATOR_VERSION,
                opts.texture_size,
                opts.seed
            ));
            let gltf = dir.join("toyshop.gltf");
            if gltf.exists() {
                return Ok(gltf);
            }
            log::info!("generating the built-in toy shop into {}", dir.display());
            crate::builtin::toyshop::generate(&dir, &opts).map_err(|e| SceneError::Builtin {
                path: dir.clone(),
                reason: e.to_string(),
            })
        }
    }
}

/// The cameras of a timed sequence of `frames` frames (at least one): evenly spread along
/// the description's camera path `path` ([`CameraPath::frames`]), by default its first
/// path; without any path, the scene's camera ([`select_camera`] without a spec) for
/// every frame. Also returns the path followed (`None`: a static camera).
pub fn path_cameras<'a>(
    opened: &'a OpenedScene,
    path: Option<&str>,
    frames: u32,
) -> Result<(Vec<Camera>, Option<&'a CameraPath>), SceneError> {
    let paths = &opened.description.camera_paths;
    let path =
        match path {
            Some(name) => Some(paths.iter().find(|p| p.name == name).ok_or_else(|| {
                SceneError::NoCameraPath {
                    name: name.to_string(),
                }
            })?),
            None => paths.first(),
        };
    let frames = frames.max(1);
    let cameras = match path {
        Some(p) => p.frames(frames),
        None => vec![select_camera(opened, None)?; frames as usize],
    };
    Ok((cameras, path))
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
    if let Some(p) = opened.description.camera_path(spec)
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
    let mut names = opened.description.camera_path_names();
    names.extend(opened.scene.cameras.iter().map(|c| c.name.as_str()));
    Err(SceneError::NoCamera {
        path: opened.scene.source.clone(),
        name: spec.to_string(),
        available: if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::Aabb;
    use crate::scene::description::CameraKey;
    use glam::Vec3;

    fn opened(paths: &[&str]) -> OpenedScene {
        let camera = Camera {
            name: "file".into(),
            position: Vec3::new(0.0, 1.0, 5.0),
            forward: -Vec3::Z,
            yfov: 1.0,
            znear: 0.1,
        };
        let key = |time, x| CameraKey {
            time,
            position: [x, 0.0, 0.0],
            target: [x, 0.0, -1.0],
            fov_deg: 50.0,
        };
        OpenedScene {
            scene: Scene {
                source: PathBuf::from("s.gltf"),
                meshes: Vec::new(),
                instances: Vec::new(),
                materials: Vec::new(),
                cameras: vec![camera],
                bounds: Aabb::EMPTY,
                warnings: Vec::new(),
                buffers: Vec::new(),
            },
            description: SceneDescription {
                camera_paths: paths
                    .iter()
                    .enumerate()
                    .map(|(i, name)| CameraPath {
                        name: name.to_string(),
                        keys: vec![key(0.0, i as f32), key(1.0, i as f32 + 1.0)],
                    })
                    .collect(),
                ..Default::default()
            },
        }
    }

    #[test]
    fn path_cameras_follow_the_named_or_first_path() {
        let o = opened(&["walk", "sweep"]);
        let (cams, path) = path_cameras(&o, None, 3).unwrap();
        assert_eq!(path.map(|p| p.name.as_str()), Some("walk"));
        let xs: Vec<f32> = cams.iter().map(|c| c.position.x).collect();
        for (x, want) in xs.iter().zip([0.0, 0.5, 1.0]) {
            assert!((x - want).abs() < 1e-6, "{xs:?}");
        }
        assert_eq!(xs.len(), 3);
        let (cams, path) = path_cameras(&o, Some("sweep"), 0).unwrap();
        assert_eq!(path.map(|p| p.name.as_str()), Some("sweep"));
        assert_eq!(cams.len(), 1, "at least one frame");
        assert!((cams[0].position.x - 1.0).abs() < 1e-6);
        let err = path_cameras(&o, Some("nope"), 2).unwrap_err();
        assert_eq!(err.to_string(), "no camera path named `nope` in the scene");
    }

    #[test]
    fn an_unknown_camera_is_named_with_what_there_is() {
        let o = opened(&["walk"]);
        assert_eq!(select_camera(&o, Some("walk")).unwrap().position.x, 0.0);
        let err = select_camera(&o, Some("9")).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, SceneError::NoCamera { .. }), "{msg}");
        assert!(
            msg.contains("no camera path or camera named `9` (available: walk, file)")
                && !msg.contains("scene description"),
            "{msg}"
        );
    }

    #[test]
    fn without_paths_the_camera_stands_still() {
        let o = opened(&[]);
        let (cams, path) = path_cameras(&o, None, 4).unwrap();
        assert!(path.is_none());
        assert_eq!(cams.len(), 4);
        assert!(cams.iter().all(|c| c.name == "file"));
    }
}
