//! Manifests from texture folders: images paired into texture sets by common naming
//! conventions (`neurotex import --textures DIR`).
//!
//! Every image file under the folder (`.png`, `.jpg`, `.jpeg`, `.dds`, `.ktx2`; sub-folders
//! too, in sorted order) has a *stem* and a *role*: the role is the stem's last
//! `_`/`-`/`.`/space-separated suffix in [`ROLE_SUFFIXES`] (case-insensitive, after a
//! resolution token such as `_2k` or `_1024`), the stem is the rest. Images of one folder
//! with the same stem (case-insensitive) form one set, named by its folder and stem
//! (`wood/Oak`). What becomes of the roles:
//!
//! | role | manifest column |
//! |---|---|
//! | base colour (`_BaseColor`, `_Albedo`, `_Diffuse`, …) | `basecolor` |
//! | normal (`_Normal`, `_nor_gl`, …) | `normal` |
//! | ORM / ARM (occlusion R, roughness G, metallic B) | `orm` |
//! | roughness alone (no metallic map) | `metallic_roughness` (read from G), metallic 0 |
//! | ambient occlusion (`_AO`, `_Occlusion`) | `occlusion` |
//! | emissive | `emissive` |
//!
//! What cannot be paired is listed with the reason ([`Unpaired`]): files without a known
//! suffix, a second image in the same role, a metallic map without an ORM (separate
//! roughness and metallic images cannot be one glTF metallic-roughness image; pack them
//! into an ORM), roughness/metallic/AO maps beside an ORM that already holds them, and
//! sets with neither base colour nor normal (a manifest row needs one of them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::TextureError;
use super::manifest::{OPTIONAL_IMAGES, REQUIRED};

/// What an image holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Base colour (sRGB RGB, alpha).
    BaseColor,
    /// Tangent-space normal map.
    Normal,
    /// Occlusion, roughness, metallic packed in R, G, B.
    Orm,
    /// Roughness (gray).
    Roughness,
    /// Metallic (gray).
    Metallic,
    /// Ambient occlusion (gray).
    Occlusion,
    /// Emissive colour.
    Emissive,
}

impl Role {
    /// The role's name in listings.
    pub const fn name(self) -> &'static str {
        match self {
            Self::BaseColor => "base colour",
            Self::Normal => "normal",
            Self::Orm => "ORM",
            Self::Roughness => "roughness",
            Self::Metallic => "metallic",
            Self::Occlusion => "ambient occlusion",
            Self::Emissive => "emissive",
        }
    }
}

/// The suffixes (lowercase, without the separator) that name each role.
pub const ROLE_SUFFIXES: &[(&str, Role)] = &[
    ("basecolor", Role::BaseColor),
    ("base_color", Role::BaseColor),
    ("albedo", Role::BaseColor),
    ("diffuse", Role::BaseColor),
    ("diff", Role::BaseColor),
    ("color", Role::BaseColor),
    ("normal", Role::Normal),
    ("normal_gl", Role::Normal),
    ("nor_gl", Role::Normal),
    ("nrm", Role::Normal),
    ("orm", Role::Orm),
    ("arm", Role::Orm),
    ("roughness", Role::Roughness),
    ("rough", Role::Roughness),
    ("metallic", Role::Metallic),
    ("metalness", Role::Metallic),
    ("ao", Role::Occlusion),
    ("occlusion", Role::Occlusion),
    ("ambientocclusion", Role::Occlusion),
    ("emissive", Role::Emissive),
    ("emission", Role::Emissive),
];

/// File extensions read as images.
pub const IMAGE_EXTENSIONS: [&str; 7] = ["png", "jpg", "jpeg", "tga", "webp", "dds", "ktx2"];

/// Sub-folder depth scanned below the folder.
pub const MAX_DEPTH: usize = 8;

/// One texture set found: its name and its images (paths relative to the folder).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FolderSet {
    /// `folder/stem`, `/`-separated, the stem as first seen.
    pub name: String,
    /// The first folder component, or `Other` for images at the top.
    pub category: String,
    /// Image per role.
    pub images: BTreeMap<Role, PathBuf>,
}

/// An image that is in no set, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unpaired {
    /// The image, relative to the folder.
    pub path: PathBuf,
    /// Why it is not in the manifest.
    pub reason: String,
}

/// The result of [`scan`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FolderScan {
    /// Sets in name order.
    pub sets: Vec<FolderSet>,
    /// Images left out, in path order.
    pub unpaired: Vec<Unpaired>,
}

/// The role and stem of a file stem (`Oak_BaseColor_2k` → (`Oak`, base colour)).
pub fn role_of(stem: &str) -> Option<(String, Role)> {
    let lower = stem.to_ascii_lowercase();
    let is_sep = |c: char| matches!(c, '_' | '-' | '.' | ' ');
    // Drop one resolution token: `1k`…`16k` or a power-of-two side.
    let mut end = lower.len();
    if let Some(cut) = lower.rfind(is_sep) {
        let token = &lower[cut + 1..];
        let resolution = token.strip_suffix('k').is_some_and(|n| {
            !n.is_empty() && n.len() <= 2 && n.bytes().all(|b| b.is_ascii_digit())
        }) || token
            .parse::<u32>()
            .is_ok_and(|n| n >= 64 && n.is_power_of_two());
        if resolution {
            end = cut;
        }
    }
    let body = &lower[..end];
    ROLE_SUFFIXES
        .iter()
        .filter_map(|&(suffix, role)| {
            let rest = body.strip_suffix(suffix)?;
            let rest = rest.strip_suffix(is_sep)?;
            (!rest.is_empty()).then_some((rest.len(), suffix.len(), role))
        })
        .max_by_key(|&(_, len, _)| len)
        .map(|(stem_len, _, role)| (stem[..stem_len].to_string(), role))
}

/// Scan `dir` for images and pair them into sets.
pub fn scan(dir: &Path) -> Result<FolderScan, TextureError> {
    let mut files = Vec::new();
    list_images(dir, Path::new(""), 0, &mut files)?;
    files.sort();
    let mut result = FolderScan::default();
    // (folder, lowercase stem) → set.
    let mut sets: BTreeMap<(PathBuf, String), FolderSet> = BTreeMap::new();
    for rel in files {
        let stem = rel
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some((set_stem, role)) = role_of(&stem) else {
            result.unpaired.push(Unpaired {
                path: rel,
                reason: "its name ends in no known texture suffix (_BaseColor, _Normal, _ORM, _Roughness, _Metallic, _AO, _Emissive, …)".into(),
            });
            continue;
        };
        let folder = rel.parent().unwrap_or(Path::new("")).to_path_buf();
        let key = (folder.clone(), set_stem.to_lowercase());
        let set = sets.entry(key).or_insert_with(|| {
            let mut name: Vec<String> = folder
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let category = name.first().cloned().unwrap_or_else(|| "Other".into());
            name.push(set_stem.clone());
            FolderSet {
                name: name.join("/"),
                category,
                images: BTreeMap::new(),
            }
        });
        if let Some(first) = set.images.get(&role) {
            result.unpaired.push(Unpaired {
                reason: format!(
                    "a second {} image of set `{}` (kept {})",
                    role.name(),
                    set.name,
                    first.display()
                ),
                path: rel,
            });
            continue;
        }
        set.images.insert(role, rel);
    }
    for (_, mut set) in sets {
        let leave = |role: Role, reason: &str, set: &mut FolderSet, out: &mut Vec<Unpaired>| {
            if let Some(path) = set.images.remove(&role) {
                out.push(Unpaired {
                    path,
                    reason: format!("{reason} (set `{}`)", set.name),
                });
            }
        };
        if set.images.contains_key(&Role::Orm) {
            for role in [Role::Roughness, Role::Metallic, Role::Occlusion] {
                leave(
                    role,
                    "the set's ORM image already holds this channel",
                    &mut set,
                    &mut result.unpaired,
                );
            }
        } else if set.images.contains_key(&Role::Metallic) {
            leave(
                Role::Metallic,
                "a separate metallic map cannot share the metallic-roughness slot with a roughness map; pack them into an _ORM image",
                &mut set,
                &mut result.unpaired,
            );
        }
        if !set.images.contains_key(&Role::BaseColor) && !set.images.contains_key(&Role::Normal) {
            for role in set.images.keys().copied().collect::<Vec<_>>() {
                leave(
                    role,
                    "the set has neither a base colour nor a normal map",
                    &mut set,
                    &mut result.unpaired,
                );
            }
            continue;
        }
        result.sets.push(set);
    }
    result.unpaired.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(result)
}

/// Collect image files below `dir` (relative to the scan root) into `out`.
fn list_images(
    root: &Path,
    rel: &Path,
    depth: usize,
    out: &mut Vec<PathBuf>,
) -> Result<(), TextureError> {
    let dir = root.join(rel);
    let io = |source| TextureError::Io {
        path: dir.clone(),
        source,
    };
    for entry in std::fs::read_dir(&dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = PathBuf::from(entry.file_name());
        let kind = entry.file_type().map_err(io)?;
        if kind.is_dir() {
            if depth < MAX_DEPTH {
                list_images(root, &rel.join(&name), depth + 1, out)?;
            }
        } else if name
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.as_str()))
        {
            out.push(rel.join(name));
        }
    }
    Ok(())
}

/// The manifest of `scan` as CSV text, in [`super::manifest::read_manifest`]'s schema with
/// its optional image columns; image paths relative to the folder, `/`-separated (write
/// the manifest into the folder scanned).
pub fn manifest_text(scan: &FolderScan) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let path = |set: &FolderSet, role: Role| {
        set.images
            .get(&role)
            .map(|p| {
                p.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default()
    };
    // Writing CSV into a Vec cannot fail.
    let _ = w.write_record(REQUIRED.iter().chain(&OPTIONAL_IMAGES));
    for set in &scan.sets {
        // A set without a metallic image is a dielectric: metallic 0, not glTF's default 1.
        let metal = if set.images.contains_key(&Role::Orm) {
            ""
        } else {
            "0"
        };
        // In the header's order: the required columns, then the optional images.
        let _ = w.write_record([
            set.name.as_str(),
            set.category.as_str(),
            "Other",
            &path(set, Role::BaseColor),
            &path(set, Role::Normal),
            "0",
            "",
            metal,
            &path(set, Role::Orm),
            &path(set, Role::Roughness),
            &path(set, Role::Occlusion),
            &path(set, Role::Emissive),
        ]);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_name_roles_case_insensitively() {
        let cases = [
            ("Oak_BaseColor", Some(("Oak", Role::BaseColor))),
            ("oak_albedo_2k", Some(("oak", Role::BaseColor))),
            ("Brick-Wall_DIFFUSE", Some(("Brick-Wall", Role::BaseColor))),
            (
                "rosewood_veneer1_nor_gl_1k",
                Some(("rosewood_veneer1", Role::Normal)),
            ),
            ("Metal_ORM_1024", Some(("Metal", Role::Orm))),
            ("tile_Roughness", Some(("tile", Role::Roughness))),
            ("tile_ao", Some(("tile", Role::Occlusion))),
            ("sign_Emissive", Some(("sign", Role::Emissive))),
            ("basecolor", None),
            ("photo", None),
            ("Oak_Height", None),
        ];
        for (stem, want) in cases {
            let got = role_of(stem);
            assert_eq!(got.as_ref().map(|(s, r)| (s.as_str(), *r)), want, "{stem}");
        }
    }
}
