//! Texture-set manifests (CSV).
//!
//! [`read_manifest`] reads a Bistro-style manifest: one row per texture set with at least
//! the columns `set_id, category, paper_category, basecolor, normal, alpha,
//! roughness_const, metallic_const` (more columns, such as `resolution` or `license`, are
//! allowed and ignored) and optionally the image columns of [`OPTIONAL_IMAGES`]. Each row
//! becomes a [`Material`] with its images (paths relative to the manifest's folder),
//! constant roughness and metallic (factors that multiply a metallic-roughness or ORM
//! image), and an alpha mode. [`write_texture_sets_csv`](crate::inputs::write_texture_sets_csv) writes the report of a scene's distinct sets.

use std::path::Path;

use super::TextureError;
use super::set::TextureSetDesc;
use crate::scene::{AlphaMode, ImageSource, Material, MaterialTextures, TextureRef};

/// One manifest row: the material it describes and its category labels.
#[derive(Clone, Debug, PartialEq)]
pub struct ManifestEntry {
    /// The material: name = `set_id`, base colour and normal textures, constant
    /// roughness/metallic factors, alpha mode.
    pub material: Material,
    /// Descriptive category (`category` column).
    pub category: String,
    /// The closest of the NTC paper's categories (`paper_category` column).
    pub paper_category: String,
}

/// Columns a manifest must have.
pub(crate) const REQUIRED: [&str; 8] = [
    "set_id",
    "category",
    "paper_category",
    "basecolor",
    "normal",
    "alpha",
    "roughness_const",
    "metallic_const",
];

/// Image columns a manifest may have besides `basecolor` and `normal`: `orm` (occlusion,
/// roughness, metallic in R, G, B: an ARM image), `metallic_roughness` (glTF layout:
/// roughness G, metallic B; a gray roughness map reads from G), `occlusion` (R) and
/// `emissive` (sRGB RGB). `orm` and `metallic_roughness` exclude each other; `orm` and
/// `occlusion` too.
pub const OPTIONAL_IMAGES: [&str; 4] = ["orm", "metallic_roughness", "occlusion", "emissive"];

/// Read a Bistro-style manifest CSV.
///
/// Cell rules: `set_id` must not be empty and must be unique; an empty `basecolor` or
/// `normal` means no texture in that slot, but a row needs at least one of them;
/// `alpha` is `0` (opaque, also when empty) or `1` (mask, cutoff 0.5); `roughness_const`
/// and `metallic_const` are numbers in \[0, 1\], and an empty cell means the glTF default
/// 1.0. Errors name the manifest, the row (1-based line, header = row 1) and the column.
pub fn read_manifest(path: &Path) -> Result<Vec<ManifestEntry>, TextureError> {
    let bytes = std::fs::read(path)
        .map_err(|e| TextureError::read(path, &path.display().to_string(), e))?;
    parse_manifest(&bytes, path)
}

/// Parse the bytes of a manifest read from `path` (images resolve against its folder),
/// with the rules of [`read_manifest`].
pub fn parse_manifest(bytes: &[u8], path: &Path) -> Result<Vec<ManifestEntry>, TextureError> {
    let folder = path.parent().unwrap_or(Path::new(""));
    let csv_err = |e: csv::Error| TextureError::Csv {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let headers = reader.headers().map_err(csv_err)?.clone();
    let mut col = [0usize; REQUIRED.len()];
    for (slot, name) in col.iter_mut().zip(REQUIRED) {
        *slot =
            headers
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| TextureError::ManifestColumn {
                    path: path.to_path_buf(),
                    column: name.to_string(),
                })?;
    }
    let [
        c_id,
        c_cat,
        c_paper,
        c_base,
        c_normal,
        c_alpha,
        c_rough,
        c_metal,
    ] = col;
    let [c_orm, c_mr, c_occlusion, c_emissive] =
        OPTIONAL_IMAGES.map(|name| headers.iter().position(|h| h == name));

    let mut entries = Vec::new();
    // Row of every set id so far, to name both rows of a duplicate.
    let mut rows_of_ids: std::collections::HashMap<String, u64> = Default::default();
    for record in reader.records() {
        let record = record.map_err(csv_err)?;
        let row = record.position().map_or(0, |p| p.line());
        let bad = |column: &str, reason: String| TextureError::ManifestRow {
            path: path.to_path_buf(),
            row,
            column: column.to_string(),
            reason,
        };
        let cell = |c: usize| record.get(c).unwrap_or("");
        let optional = |c: Option<usize>| c.map_or("", cell);
        let id = cell(c_id);
        if id.is_empty() {
            return Err(bad("set_id", "empty set id".into()));
        }
        if let Some(first) = rows_of_ids.insert(id.to_string(), row) {
            return Err(bad(
                "set_id",
                format!("`{id}` is also the id of row {first} (set ids must be unique)"),
            ));
        }
        if cell(c_base).is_empty() && cell(c_normal).is_empty() {
            return Err(bad(
                "basecolor",
                "the row names no image (both `basecolor` and `normal` are empty)".into(),
            ));
        }
        let image_at = |rel: &str| {
            (!rel.is_empty()).then(|| TextureRef {
                image: ImageSource::File(folder.join(rel)),
                tex_coord: 0,
            })
        };
        let image = |c: usize| image_at(cell(c));
        let (orm, mr, occlusion) = (optional(c_orm), optional(c_mr), optional(c_occlusion));
        if !orm.is_empty() && !mr.is_empty() {
            return Err(bad(
                "orm",
                "a row names both an `orm` and a `metallic_roughness` image".into(),
            ));
        }
        if !orm.is_empty() && !occlusion.is_empty() {
            return Err(bad(
                "orm",
                "a row names both an `orm` and an `occlusion` image".into(),
            ));
        }
        let factor = |c: usize, column: &str| -> Result<f32, TextureError> {
            let s = cell(c);
            if s.is_empty() {
                return Ok(1.0);
            }
            let v: f32 = s
                .parse()
                .map_err(|_| bad(column, format!("`{s}` is not a number")))?;
            if !(0.0..=1.0).contains(&v) {
                return Err(bad(column, format!("{v} is outside [0, 1]")));
            }
            Ok(v)
        };
        let alpha_mode = match cell(c_alpha) {
            "" | "0" => AlphaMode::Opaque,
            "1" => AlphaMode::Mask { cutoff: 0.5 },
            other => {
                return Err(bad(
                    "alpha",
                    format!("`{other}` is neither 0 (opaque) nor 1 (mask)"),
                ));
            }
        };
        let material = Material {
            name: id.to_string(),
            roughness_factor: factor(c_rough, "roughness_const")?,
            metallic_factor: factor(c_metal, "metallic_const")?,
            alpha_mode,
            textures: MaterialTextures {
                base_color: image(c_base),
                normal: image(c_normal),
                metallic_roughness: image_at(if orm.is_empty() { mr } else { orm }),
                occlusion: image_at(occlusion),
                emissive: image_at(optional(c_emissive)),
            },
            occlusion_from_arm: !orm.is_empty(),
            emissive_factor: if optional(c_emissive).is_empty() {
                Material::default().emissive_factor
            } else {
                [1.0; 3]
            },
            ..Material::default()
        };
        entries.push(ManifestEntry {
            material,
            category: cell(c_cat).to_string(),
            paper_category: cell(c_paper).to_string(),
        });
    }
    Ok(entries)
}

/// The manifest rows of each set of `entries` (the manifest's rows, in order): per
/// distinct set in order of first use, its description and the indices of every row
/// using it. Rows that share their images share one set.
pub fn sets_of_rows(entries: &[ManifestEntry]) -> Vec<(TextureSetDesc, Vec<usize>)> {
    let materials: Vec<Material> = entries.iter().map(|e| e.material.clone()).collect();
    let (sets, material_sets) = super::scene_texture_sets(&materials);
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); sets.len()];
    for (row, set) in material_sets.iter().enumerate() {
        if let Some(s) = *set {
            rows[s].push(row);
        }
    }
    sets.into_iter().zip(rows).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BISTRO: &str = "../shared/assets/bistro_texture_sets/manifest.csv";

    #[test]
    fn reads_the_bistro_manifest() {
        let entries = read_manifest(Path::new(BISTRO)).expect("manifest");
        assert_eq!(entries.len(), 36);
        let first = &entries[0];
        assert_eq!(first.material.name, "bistro/fabric/MASTER_Awning_Beams");
        assert_eq!(first.category, "Fabric");
        assert_eq!(first.paper_category, "Fabric");
        assert_eq!(first.material.roughness_factor, 0.73);
        assert_eq!(first.material.metallic_factor, 0.0);
        assert_eq!(first.material.alpha_mode, AlphaMode::Opaque);
        let base = &first
            .material
            .textures
            .base_color
            .as_ref()
            .expect("base")
            .image;
        assert_eq!(
            base,
            &ImageSource::File(
                Path::new("../shared/assets/bistro_texture_sets")
                    .join("fabric/MASTER_Awning_Beams_basecolor.jpg")
            )
        );
        assert!(first.material.textures.metallic_roughness.is_none());
        let masked = entries
            .iter()
            .filter(|e| e.material.alpha_mode == AlphaMode::Mask { cutoff: 0.5 })
            .count();
        assert_eq!(masked, 2);
        // Empty constants fall back to the glTF default.
        let smooth = entries
            .iter()
            .find(|e| {
                e.material
                    .name
                    .ends_with("MASTER_Concrete_Smooth_BLENDSHADER")
            })
            .expect("row");
        assert_eq!(smooth.material.roughness_factor, 1.0);
        // Every referenced image exists.
        for e in &entries {
            for t in [&e.material.textures.base_color, &e.material.textures.normal] {
                let ImageSource::File(p) = &t.as_ref().expect("texture").image else {
                    panic!("not a file")
                };
                assert!(p.exists(), "{}", p.display());
            }
        }
    }

    #[test]
    fn bad_manifests_name_row_and_column() {
        let dir = crate::io::test_dir("manifest-bad");
        let header = "set_id,category,paper_category,basecolor,normal,resolution,alpha,roughness_const,metallic_const,license";

        let p = dir.join("no_metal.csv");
        std::fs::write(
            &p,
            "set_id,category,paper_category,basecolor,normal,alpha,roughness_const\na,b,c,d.jpg,e.png,0,0.5\n",
        )
        .expect("write");
        let e = read_manifest(&p).unwrap_err();
        assert!(
            matches!(&e, TextureError::ManifestColumn { column, .. } if column == "metallic_const"),
            "{e}"
        );
        assert!(e.to_string().contains("no_metal.csv"));

        let p = dir.join("bad_number.csv");
        std::fs::write(
            &p,
            format!("{header}\nok,b,c,d.jpg,e.png,1024x1024,0,0.5,0,CC0\nbad,b,c,d.jpg,e.png,1024x1024,0,0.5,lots,CC0\n"),
        )
        .expect("write");
        let e = read_manifest(&p).unwrap_err();
        assert!(
            matches!(&e, TextureError::ManifestRow { row: 3, column, .. } if column == "metallic_const"),
            "{e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("bad_number.csv") && msg.contains("row 3") && msg.contains("lots"),
            "{msg}"
        );

        let p = dir.join("bad_alpha.csv");
        std::fs::write(&p, format!("{header}\nx,b,c,d.jpg,e.png,1,2,0.5,0,CC0\n")).expect("write");
        let e = read_manifest(&p).unwrap_err();
        assert!(
            matches!(&e, TextureError::ManifestRow { row: 2, column, .. } if column == "alpha"),
            "{e}"
        );

        let p = dir.join("ragged.csv");
        std::fs::write(&p, format!("{header}\nx,b,c\n")).expect("write");
        let e = read_manifest(&p).unwrap_err();
        assert!(matches!(&e, TextureError::Csv { .. }), "{e}");

        let e = read_manifest(&dir.join("absent.csv")).unwrap_err();
        assert!(matches!(&e, TextureError::Missing { .. }), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn writes_the_texture_sets_report_in_the_loaders_schema() {
        use crate::inputs::{InputSets, InputSource, categories_from_csv, write_texture_sets_csv};
        let inputs = InputSets::open(&[InputSource::Manifest(BISTRO.into())]).expect("inputs");
        let dir = crate::io::test_dir("manifest-report");
        let p = dir.join("texture_sets.csv");
        write_texture_sets_csv(&p, &inputs).expect("write");
        let mut r = csv::Reader::from_path(&p).expect("read back");
        let headers: Vec<String> = r
            .headers()
            .expect("headers")
            .iter()
            .map(String::from)
            .collect();
        assert_eq!(
            headers,
            [
                "set_id",
                "category",
                "paper_category",
                "materials",
                "base_color",
                "normal",
                "metallic_roughness",
                "occlusion",
                "emissive",
                "occlusion_from_arm"
            ]
        );
        let rows: Vec<csv::StringRecord> = r.records().map(|r| r.expect("row")).collect();
        assert_eq!(rows.len(), 36);
        assert_eq!(&rows[0][0], "MASTER_Awning_Beams");
        assert_eq!(&rows[0][2], "Fabric");
        assert_eq!(&rows[0][3], "bistro/fabric/MASTER_Awning_Beams");
        assert!(rows[0][4].ends_with("MASTER_Awning_Beams_basecolor.jpg"));
        // The loader reads the labels back from it.
        let labels = categories_from_csv(&p, "paper_category", &inputs.names).expect("labels");
        assert_eq!(labels, inputs.categories);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn rows_sharing_images_share_a_set_without_shifting_labels() {
        let dir = crate::io::test_dir("manifest-rows");
        let p = dir.join("m.csv");
        let header =
            "set_id,category,paper_category,basecolor,normal,alpha,roughness_const,metallic_const";
        std::fs::write(
            &p,
            format!(
                "{header}\na,Wood,Wood,x.jpg,,0,0.5,0\nb,Metal,Metal,x.jpg,,0,0.9,1\nc,Stone,Stone,y.jpg,,0,1,0\n"
            ),
        )
        .expect("write");
        let entries = read_manifest(&p).expect("manifest");
        let sets = sets_of_rows(&entries);
        assert_eq!(sets.len(), 2);
        assert_eq!(sets[0].1, vec![0, 1]);
        assert_eq!(sets[1].1, vec![2]);
        assert_eq!(entries[sets[1].1[0]].category, "Stone");
        std::fs::remove_dir_all(&dir).ok();
    }
}
