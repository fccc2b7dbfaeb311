//! Scene description files (`scenes/*.toml`): which glTF (or built-in scene), the
//! lighting, named camera paths and renderer defaults. Relative paths are resolved
//! against the description file's folder. Unknown keys and wrong types are errors that
//! name the file.
//!
//! ```toml
//! gltf = "../../shared/assets/ntc_living_room/scene.gltf"   # or: builtin = "toyshop"
//! asset_folders = ["../textures"]   # optional: folders besides the glTF's own that its
//!                                   # buffer and image URIs may name
//!
//! [lighting]                  # all optional, see scene::Lighting
//! sun_direction = [0.3, 0.9, 0.2]
//! exposure = 1.2
//!
//! [render]                    # all optional
//! size = [1280, 720]
//! camera = "overview"         # a camera path name, a glTF camera name or index
//!
//! [[camera_paths]]
//! name = "overview"
//! keys = [ { time = 0.0, position = [1, 1.6, 3], target = [0, 1, 0] },
//!          { time = 4.0, position = [2, 1.6, 2], target = [0, 1, 0], fov_deg = 55 } ]
//! ```
//!
//! Every number must be finite (a NaN exposure or key time is an error naming the key),
//! `[render] size` passes the same check as `--size` ([`check_size`]), key times must
//! not decrease and fields of view lie in (0, 180) degrees.

use std::path::{Path, PathBuf};

use glam::Vec3;

use super::{Camera, SceneError};
use crate::scene::Lighting;

/// A parsed scene description.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneDescription {
    /// The glTF/GLB file (relative to the description file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gltf: Option<PathBuf>,
    /// A built-in procedural scene instead of a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builtin: Option<Builtin>,
    /// Folders (relative to the description file) besides the glTF's own that its buffer
    /// and image URIs may name; any other place is refused unless the command line says
    /// `--allow-outside-uris`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asset_folders: Vec<PathBuf>,
    /// Lights and exposure.
    #[serde(default)]
    pub lighting: Lighting,
    /// Renderer defaults.
    #[serde(default)]
    pub render: RenderDefaults,
    /// Named camera paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub camera_paths: Vec<CameraPath>,
}

/// Built-in scenes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Builtin {
    /// The procedural toy shop (`neurotex gen-scene toyshop`).
    Toyshop,
}

/// Renderer defaults of a scene.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenderDefaults {
    /// Output size in pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<[u32; 2]>,
    /// Default camera: a camera path name, a glTF camera name, or a glTF camera index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera: Option<String>,
    /// Texture size used for the built-in scene.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builtin_texture_size: Option<u32>,
}

/// One camera key.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraKey {
    /// Time in seconds from the path's start.
    pub time: f32,
    /// Eye position (world, metres).
    pub position: [f32; 3],
    /// Point looked at (world, metres).
    pub target: [f32; 3],
    /// Vertical field of view in degrees.
    #[serde(default = "default_fov")]
    pub fov_deg: f32,
}

fn default_fov() -> f32 {
    50.0
}

/// A named, timed camera path.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraPath {
    /// Name used by `--camera`.
    pub name: String,
    /// Keys in increasing time.
    pub keys: Vec<CameraKey>,
}

impl CameraPath {
    /// The camera at `time` (clamped to the path): Catmull–Rom through the positions and
    /// targets, linear field of view.
    pub fn sample(&self, time: f32) -> Option<Camera> {
        let keys = &self.keys;
        let first = keys.first()?;
        let last = keys.last()?;
        // `max`/`min` rather than `clamp`: neither panics on NaN or on unordered keys
        // (loaded paths are checked, but paths can be built in code).
        let t = if time.is_nan() { first.time } else { time };
        let t = t.min(last.time).max(first.time);
        let i = keys
            .windows(2)
            .position(|w| t <= w[1].time)
            .unwrap_or(0)
            .min(keys.len().saturating_sub(2));
        let (k1, k2) = (&keys[i], keys.get(i + 1).unwrap_or(&keys[i]));
        let k0 = if i > 0 { &keys[i - 1] } else { k1 };
        let k3 = keys.get(i + 2).unwrap_or(k2);
        let span = k2.time - k1.time;
        let s = if span > 0.0 {
            (t - k1.time) / span
        } else {
            0.0
        };
        let cr = |a: [f32; 3], b: [f32; 3], c: [f32; 3], d: [f32; 3]| {
            let (a, b, c, d) = (Vec3::from(a), Vec3::from(b), Vec3::from(c), Vec3::from(d));
            let s2 = s * s;
            let s3 = s2 * s;
            0.5 * (2.0 * b
                + (c - a) * s
                + (2.0 * a - 5.0 * b + 4.0 * c - d) * s2
                + (3.0 * b - a - 3.0 * c + d) * s3)
        };
        let position = cr(k0.position, k1.position, k2.position, k3.position);
        let target = cr(k0.target, k1.target, k2.target, k3.target);
        let fov = k1.fov_deg + (k2.fov_deg - k1.fov_deg) * s;
        Some(Camera {
            name: self.name.clone(),
            position,
            forward: (target - position).normalize_or(-Vec3::Z),
            yfov: fov.to_radians(),
            znear: 0.05,
        })
    }

    /// Duration in seconds.
    pub fn duration(&self) -> f32 {
        match (self.keys.first(), self.keys.last()) {
            (Some(a), Some(b)) => b.time - a.time,
            _ => 0.0,
        }
    }

    /// The cameras of `frames` frames spread evenly over the path's duration, the first
    /// at time 0 and the last (for two or more frames) at the duration, as
    /// [`sample`](Self::sample) clamps them; empty for a path without keys.
    pub fn frames(&self, frames: u32) -> Vec<Camera> {
        (0..frames)
            .filter_map(|i| self.sample(self.duration() * i as f32 / (frames.max(2) - 1) as f32))
            .collect()
    }
}

/// Largest side of a rendered image or window, in pixels.
pub const MAX_SIZE_SIDE: u32 = 16384;

/// The check every image or window size passes, from `--size` or `[render] size`: both
/// sides in 1..=[`MAX_SIZE_SIDE`].
pub fn check_size(width: u32, height: u32) -> Result<(), String> {
    let ok = |v: u32| (1..=MAX_SIZE_SIDE).contains(&v);
    if ok(width) && ok(height) {
        Ok(())
    } else {
        Err(format!(
            "{width}x{height}: each side must be an integer in 1..={MAX_SIZE_SIDE}"
        ))
    }
}

/// `values` are finite, else a message naming `what` (and the component).
fn finite(what: &str, values: &[f32]) -> Result<(), String> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) if values.len() == 1 => {
            Err(format!("{what} = {} is not a finite number", values[i]))
        }
        Some(i) => Err(format!(
            "{what}[{i}] = {} is not a finite number",
            values[i]
        )),
    }
}

impl SceneDescription {
    /// The camera path named `name`.
    pub fn camera_path(&self, name: &str) -> Option<&CameraPath> {
        self.camera_paths.iter().find(|p| p.name == name)
    }

    /// The names of the camera paths, in order.
    pub fn camera_path_names(&self) -> Vec<&str> {
        self.camera_paths.iter().map(|p| p.name.as_str()).collect()
    }

    /// Check every value a parser cannot: finite lighting and camera numbers, the size,
    /// the built-in texture size, non-empty paths with non-decreasing key times and
    /// fields of view in (0, 180) degrees. The message names the key.
    pub fn check(&self) -> Result<(), String> {
        match (&self.gltf, &self.builtin) {
            (None, None) => return Err("needs `gltf = \"file\"` or `builtin = \"toyshop\"`".into()),
            (Some(_), Some(_)) => return Err("give either `gltf` or `builtin`, not both".into()),
            _ => {}
        }
        let l = &self.lighting;
        finite("lighting.sun_direction", &l.sun_direction)?;
        finite("lighting.sun_color", &l.sun_color)?;
        finite("lighting.sun_intensity", &[l.sun_intensity])?;
        finite("lighting.sky_color", &l.sky_color)?;
        finite("lighting.ground_color", &l.ground_color)?;
        finite("lighting.exposure", &[l.exposure])?;
        if l.sun_direction.iter().all(|&v| v == 0.0) {
            return Err("lighting.sun_direction must not be zero".into());
        }
        if let Some([w, h]) = self.render.size {
            check_size(w, h).map_err(|e| format!("render.size: {e}"))?;
        }
        if let Some(s) = self.render.builtin_texture_size
            && !(s.is_power_of_two() && (1..=super::MAX_IMAGE_SIDE).contains(&s))
        {
            return Err(format!(
                "render.builtin_texture_size = {s}: expected a power of two in 1..={}",
                super::MAX_IMAGE_SIDE
            ));
        }
        for p in &self.camera_paths {
            if p.keys.is_empty() {
                return Err(format!("camera path `{}` has no keys", p.name));
            }
            for (k, key) in p.keys.iter().enumerate() {
                let at = |field: &str| format!("camera path `{}` key {k} {field}", p.name);
                finite(&at("time"), &[key.time])?;
                finite(&at("position"), &key.position)?;
                finite(&at("target"), &key.target)?;
                finite(&at("fov_deg"), &[key.fov_deg])?;
                if !(key.fov_deg > 0.0 && key.fov_deg < 180.0) {
                    return Err(format!(
                        "{} = {} is outside (0, 180)",
                        at("fov_deg"),
                        key.fov_deg
                    ));
                }
                if key.position == key.target {
                    return Err(format!(
                        "{}: position and target are the same point",
                        at("target")
                    ));
                }
            }
            if p.keys.windows(2).any(|w| w[1].time < w[0].time) {
                return Err(format!(
                    "camera path `{}`: key times must not decrease",
                    p.name
                ));
            }
        }
        Ok(())
    }
}

/// A description file and where it lives.
#[derive(Clone, Debug)]
pub struct LoadedDescription {
    /// The file.
    pub path: PathBuf,
    /// Its contents.
    pub description: SceneDescription,
}

impl LoadedDescription {
    /// Read and check a description file.
    pub fn load(path: &Path) -> Result<Self, SceneError> {
        let text = std::fs::read_to_string(path).map_err(|source| SceneError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parse and check the text of a description file that lives at `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Self, SceneError> {
        let bad = |reason: String| SceneError::Description {
            path: path.to_path_buf(),
            reason,
        };
        let description: SceneDescription = toml::from_str(text).map_err(|e| {
            // One line: "line L, column C: message" (toml's Display spans several lines).
            let at = e.span().map(|span| {
                let mut start = span.start.min(text.len());
                while !text.is_char_boundary(start) {
                    start -= 1;
                }
                let before = &text[..start];
                let line = before.matches('\n').count() + 1;
                let line_start = before.rfind('\n').map_or(0, |i| i + 1);
                let column = before.len() - line_start + 1;
                let source_line = text[line_start..].lines().next().unwrap_or("").trim();
                format!("line {line}, column {column} (`{source_line}`): ")
            });
            bad(format!(
                "{}{}",
                at.unwrap_or_default(),
                e.message().trim_end()
            ))
        })?;
        description.check().map_err(bad)?;
        Ok(Self {
            path: path.to_path_buf(),
            description,
        })
    }

    /// The glTF file, resolved against the description's folder.
    pub fn gltf_path(&self) -> Option<PathBuf> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        self.description.gltf.as_ref().map(|g| dir.join(g))
    }

    /// `asset_folders`, resolved against the description's folder.
    pub fn asset_folders(&self) -> Vec<PathBuf> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        self.description
            .asset_folders
            .iter()
            .map(|f| dir.join(f))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(keys: &[(f32, [f32; 3])]) -> CameraPath {
        CameraPath {
            name: "p".into(),
            keys: keys
                .iter()
                .map(|&(time, position)| CameraKey {
                    time,
                    position,
                    target: [0.0, 0.0, -10.0],
                    fov_deg: 50.0,
                })
                .collect(),
        }
    }

    #[test]
    fn frames_span_the_path() {
        let p = path(&[(0.0, [0.0; 3]), (2.0, [4.0, 0.0, 0.0])]);
        let xs: Vec<f32> = p.frames(5).iter().map(|c| c.position.x).collect();
        assert_eq!(xs.len(), 5);
        assert!(
            (xs[0] - 0.0).abs() < 1e-5 && (xs[4] - 4.0).abs() < 1e-5,
            "{xs:?}"
        );
        assert!(xs.windows(2).all(|w| w[1] > w[0]), "{xs:?}");
        assert_eq!(p.frames(1).len(), 1);
        assert!((p.frames(1)[0].position.x).abs() < 1e-5);
        assert!(p.frames(0).is_empty());
        assert!(path(&[]).frames(3).is_empty());
    }

    #[test]
    fn path_passes_through_keys_and_clamps() {
        let p = path(&[
            (0.0, [0.0; 3]),
            (1.0, [1.0, 0.0, 0.0]),
            (3.0, [1.0, 2.0, 0.0]),
        ]);
        for (t, want) in [
            (0.0, [0.0; 3]),
            (1.0, [1.0, 0.0, 0.0]),
            (3.0, [1.0, 2.0, 0.0]),
            (9.0, [1.0, 2.0, 0.0]),
            (-1.0, [0.0; 3]),
        ] {
            let c = p.sample(t).unwrap();
            assert!(
                (c.position - Vec3::from(want)).length() < 1e-5,
                "t={t}: {:?}",
                c.position
            );
        }
        // Collinear, evenly timed keys: Catmull–Rom reduces to linear motion.
        let line = path(&[
            (0.0, [0.0; 3]),
            (1.0, [1.0, 0.0, 0.0]),
            (2.0, [2.0, 0.0, 0.0]),
            (3.0, [3.0, 0.0, 0.0]),
        ]);
        let c = line.sample(1.5).unwrap();
        assert!((c.position - Vec3::new(1.5, 0.0, 0.0)).length() < 1e-5);
        assert_eq!(line.duration(), 3.0);
    }

    #[test]
    fn unknown_key_and_wrong_type_name_the_problem() {
        let dir = crate::io::test_dir("desc");
        let f = dir.join("bad.toml");
        std::fs::write(&f, "gltf = \"x.gltf\"\nsunn = 3\n").unwrap();
        let e = LoadedDescription::load(&f).unwrap_err().to_string();
        assert!(e.contains("bad.toml") && e.contains("sunn"), "{e}");
        std::fs::write(&f, "gltf = \"x.gltf\"\n[lighting]\nexposure = \"bright\"\n").unwrap();
        let e = LoadedDescription::load(&f).unwrap_err().to_string();
        assert!(
            e.contains("bad.toml") && e.contains("exposure") && e.contains("invalid type"),
            "{e}"
        );
        std::fs::write(&f, "[lighting]\nexposure = 1.0\n").unwrap();
        let e = LoadedDescription::load(&f).unwrap_err().to_string();
        assert!(e.contains("needs `gltf"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
