//! What the generators that dress a scene with the texture sets of a manifest share
//! ([`super::street`], [`super::panel`]): reading the manifest, a manifest row as a glTF
//! material whose images are referenced (not copied) by a URI relative to the output
//! folder (absolute when the two share no root), the folders of those images for a scene
//! description's `asset_folders`, and the errors, each naming its file.

use std::path::{Component, Path, PathBuf};

use super::gltf_builder::{GltfWriteError, MaterialDesc};
use crate::scene::gltf_import::UriPolicy;
use crate::scene::{AlphaMode, ImageSource, TextureRef};
use crate::texture::{ManifestEntry, TextureError, decode, read_manifest};

/// Errors of the generators that dress a scene with a manifest's sets ([`super::street`],
/// [`super::panel`]). Every variant names the file involved.
#[derive(Debug, thiserror::Error)]
pub enum ManifestSceneError {
    /// The manifest could not be read or parsed.
    #[error("cannot use the manifest {path}: {source}")]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// The underlying error.
        source: TextureError,
    },
    /// The manifest has a header but no rows.
    #[error("{path}: the manifest lists no texture sets (zero rows)")]
    EmptyManifest {
        /// The manifest.
        path: PathBuf,
    },
    /// The set asked for is not in the manifest, or not one set only.
    #[error("{path}: texture set `{set}`: {reason}")]
    NoSuchSet {
        /// The manifest.
        path: PathBuf,
        /// The set asked for.
        set: String,
        /// Why it names no one set.
        reason: String,
    },
    /// The generator's options are out of range.
    #[error("{0}")]
    Options(String),
    /// An image of the manifest cannot be referenced from the glTF file.
    #[error("{path}: image {image} cannot be referenced from the glTF: {reason}")]
    ImagePath {
        /// The manifest.
        path: PathBuf,
        /// The image.
        image: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A folder or file could not be created or written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The glTF document or its buffer could not be written.
    #[error(transparent)]
    Gltf(#[from] GltfWriteError),
    /// The scene description could not be serialised.
    #[error("cannot write {path}: {reason}")]
    Description {
        /// The description file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// The rows of `manifest`; a manifest that cannot be read or has no rows is an error.
pub(super) fn read_entries(manifest: &Path) -> Result<Vec<ManifestEntry>, ManifestSceneError> {
    let entries = read_manifest(manifest).map_err(|source| ManifestSceneError::Manifest {
        path: manifest.to_path_buf(),
        source,
    })?;
    if entries.is_empty() {
        return Err(ManifestSceneError::EmptyManifest {
            path: manifest.to_path_buf(),
        });
    }
    Ok(entries)
}

/// Maps an I/O error on `path` to [`ManifestSceneError::Io`].
pub(super) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ManifestSceneError + use<> {
    let path = path.to_path_buf();
    move |source| ManifestSceneError::Io { path, source }
}

/// The glTF material of a manifest row; images are referenced relative to `base`.
pub(super) fn material_desc(
    entry: &ManifestEntry,
    base: &Path,
    manifest: &Path,
) -> Result<MaterialDesc, ManifestSceneError> {
    let m = &entry.material;
    let uri = |slot: &Option<TextureRef>| -> Result<Option<String>, ManifestSceneError> {
        match slot.as_ref().map(|t| &t.image) {
            // A glTF naming a file that is not there would only fail later, in every
            // command that opens the generated scene.
            Some(ImageSource::File(image)) if !image.is_file() => {
                Err(ManifestSceneError::ImagePath {
                    path: manifest.to_path_buf(),
                    image: image.clone(),
                    reason: "the manifest names an image that does not exist".into(),
                })
            }
            Some(ImageSource::File(image)) => {
                check_image(image, manifest).map_err(|reason| ManifestSceneError::ImagePath {
                    path: manifest.to_path_buf(),
                    image: image.clone(),
                    reason,
                })?;
                image_uri(image, base)
                    .map(Some)
                    .map_err(|reason| ManifestSceneError::ImagePath {
                        path: manifest.to_path_buf(),
                        image: image.clone(),
                        reason,
                    })
            }
            Some(ImageSource::Embedded { .. }) | None => Ok(None),
        }
    };
    Ok(MaterialDesc {
        base_color_factor: m.base_color_factor,
        metallic_factor: m.metallic_factor,
        roughness_factor: m.roughness_factor,
        emissive_factor: m.emissive_factor,
        alpha_mode: m.alpha_mode,
        // Cut-out sets (letters, labels) are thin decals: show them from both sides.
        double_sided: m.double_sided || m.alpha_mode != AlphaMode::Opaque,
        base_color_texture: uri(&m.textures.base_color)?,
        normal_texture: uri(&m.textures.normal)?,
        metallic_roughness_texture: uri(&m.textures.metallic_roughness)?,
        occlusion_texture: uri(&m.textures.occlusion)?,
        ..MaterialDesc::new(&m.name)
    })
}

/// Why the generated scene may not reference the manifest's image `image`: it lies
/// outside the manifest's folder (the same confinement as a glTF's URIs, lifted by
/// `--allow-outside-uris`), or it is not a complete image of a format the importer reads (decoded once here, so a
/// truncated file or another format never reaches a scene that names it).
fn check_image(image: &Path, manifest: &Path) -> Result<(), String> {
    let folder = manifest.parent().unwrap_or(Path::new(""));
    if !UriPolicy::default().admits(image, folder) {
        return Err(format!(
            "it lies outside the manifest's folder {} (pass --allow-outside-uris to use it)",
            crate::outputs::resolve(folder).display()
        ));
    }
    decode(&ImageSource::File(image.to_path_buf()))
        .map(drop)
        .map_err(|e| format!("not a usable image: {e}"))
}

/// The glTF URI of `image` seen from the canonical folder `base`: a relative path when
/// both share a root, else the absolute path; every name is percent-encoded.
fn image_uri(image: &Path, base: &Path) -> Result<String, String> {
    let target = std::fs::canonicalize(image)
        .or_else(|_| std::path::absolute(image))
        .map_err(|e| e.to_string())?;
    let path = relative_path(base, &target).unwrap_or(target);
    let utf8 = |s: &std::ffi::OsStr| {
        s.to_str()
            .map(str::to_owned)
            .ok_or_else(|| "the path is not valid UTF-8".to_string())
    };
    let mut head = String::new();
    let mut names = Vec::new();
    for c in path.components() {
        match c {
            Component::Prefix(p) => head.push_str(&utf8(p.as_os_str())?.replace('\\', "/")),
            Component::RootDir => head.push('/'),
            Component::CurDir => {}
            Component::ParentDir => names.push("..".to_string()),
            Component::Normal(s) => names.push(percent_encode(&utf8(s)?)),
        }
    }
    Ok(format!("{head}{}", names.join("/")))
}

/// The path of `to` relative to the folder `from_dir` (both absolute and canonical), or
/// `None` when they share no leading component (different drives).
fn relative_path(from_dir: &Path, to: &Path) -> Option<PathBuf> {
    let from: Vec<Component> = from_dir.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return None;
    }
    let mut rel = PathBuf::new();
    for _ in common..from.len() {
        rel.push("..");
    }
    for c in &to[common..] {
        rel.push(c.as_os_str());
    }
    Some(rel)
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The folders of the manifest's images outside `base` (the canonical output folder,
/// whose files the importer accepts anyway), relative to it: the description lists them
/// in `asset_folders`, so the importer accepts the glTF's URIs.
pub(super) fn asset_folders(entries: &[ManifestEntry], base: &Path) -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = Vec::new();
    for e in entries {
        let t = &e.material.textures;
        for r in [&t.base_color, &t.normal].into_iter().flatten() {
            let ImageSource::File(file) = &r.image else {
                continue;
            };
            let Some(dir) = file.parent() else { continue };
            // The empty parent of a bare name is the current folder.
            let dir = crate::outputs::resolve(dir);
            if dir.starts_with(base) {
                continue;
            }
            let rel = relative_path(base, &dir).unwrap_or(dir);
            if !folders.iter().any(|f| rel.starts_with(f)) {
                folders.retain(|f| !f.starts_with(&rel));
                folders.push(rel);
            }
        }
    }
    folders
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_uris() {
        let rel = relative_path(Path::new("/a/b/c"), Path::new("/a/x/y z.png")).expect("rel");
        assert_eq!(rel, Path::new("../../x/y z.png"));
        assert_eq!(percent_encode("y z%.png"), "y%20z%25.png");
        let dir = std::env::temp_dir().join(format!("neurotex-uri-{}", std::process::id()));
        let sub = dir.join("img dir");
        std::fs::create_dir_all(&sub).expect("sub");
        let img = sub.join("a#b.png");
        std::fs::write(&img, b"x").expect("file");
        let base = std::fs::canonicalize(dir.join(".")).expect("canonical");
        assert_eq!(image_uri(&img, &base).expect("uri"), "img%20dir/a%23b.png");
        let _ = std::fs::remove_dir_all(dir);
    }
}
