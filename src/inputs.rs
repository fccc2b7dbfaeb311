//! What the offline tools (compress, cluster, eval) read: the distinct texture sets of
//! one or more inputs — scenes (`.toml`, `.gltf`, `.glb`) and texture-set manifests
//! (`.csv`) — concatenated in order, with a category label per set where one is known
//! (a manifest's `paper_category`, or the `texture_sets.csv` beside a scene).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::scene::{ImageSource, Material};
use crate::texture::set::{Slot, load_parallel, unique_names};
use crate::texture::{
    ChannelMask, LoadOptions, LoadedSet, TextureError, TextureSet, TextureSetDesc,
};

/// One input of an offline run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputSource {
    /// A scene: description, glTF or GLB.
    Scene(PathBuf),
    /// A texture-set manifest (CSV).
    Manifest(PathBuf),
}

impl InputSource {
    /// The file.
    pub fn path(&self) -> &Path {
        match self {
            Self::Scene(p) | Self::Manifest(p) => p,
        }
    }
}

/// Errors while opening inputs.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A scene failed to load.
    #[error(transparent)]
    Scene(#[from] crate::scene::SceneError),
    /// A manifest or image failed to load.
    #[error(transparent)]
    Texture(#[from] TextureError),
    /// Nothing to compress.
    #[error("{inputs}: no textured material found")]
    Empty {
        /// The inputs, joined.
        inputs: String,
    },
}

/// The distinct texture sets of the inputs (not yet decoded).
#[derive(Clone, Debug)]
pub struct InputSets {
    /// The inputs, for reports.
    pub sources: Vec<InputSource>,
    /// Per set: its identity (image sources).
    pub descs: Vec<TextureSetDesc>,
    /// Per set: a unique, readable name.
    pub names: Vec<String>,
    /// Per set: a category label ("" when unknown).
    pub categories: Vec<String>,
    /// Every material of every input, in order.
    pub materials: Vec<Material>,
    /// Per material: its set (None for constant-only materials).
    pub material_sets: Vec<Option<usize>>,
    /// The files the scenes were read from besides the arguments: glTF, buffers,
    /// images ([`Scene::files`](crate::scene::Scene::files)).
    pub scene_files: Vec<PathBuf>,
}

impl InputSets {
    /// Open every input and deduplicate texture sets within and across inputs.
    pub fn open(sources: &[InputSource]) -> Result<Self, InputError> {
        let mut materials = Vec::new();
        let mut labels: Vec<String> = Vec::new();
        let mut scene_files = Vec::new();
        for src in sources {
            match src {
                InputSource::Scene(path) => {
                    let opened = crate::open::open(Some(path))?;
                    let csv = path.with_file_name("texture_sets.csv");
                    scene_files.extend(opened.scene.files());
                    let (descs, _) = crate::texture::scene_texture_sets(&opened.scene.materials);
                    let names: Vec<String> = descs.iter().map(TextureSetDesc::name).collect();
                    // Rows name a set or, failing that, a material using it (a generated
                    // street names its materials by the manifest's set ids).
                    let material_names: Vec<String> = opened
                        .scene
                        .materials
                        .iter()
                        .map(|m| m.name.clone())
                        .collect();
                    let (cats, material_cats) = if csv.exists() {
                        (
                            categories_from_csv(&csv, "paper_category", &names)?,
                            categories_from_csv(&csv, "paper_category", &material_names)?,
                        )
                    } else {
                        (
                            vec![String::new(); names.len()],
                            vec![String::new(); material_names.len()],
                        )
                    };
                    for (m, by_material) in opened.scene.materials.iter().zip(material_cats) {
                        let label = TextureSetDesc::from_material(m)
                            .and_then(|d| descs.iter().position(|x| *x == d))
                            .map(|i| cats[i].clone())
                            .filter(|c| !c.is_empty())
                            .unwrap_or(by_material);
                        materials.push(m.clone());
                        labels.push(label);
                    }
                }
                InputSource::Manifest(path) => {
                    for e in crate::texture::read_manifest(path)? {
                        materials.push(e.material);
                        labels.push(e.paper_category);
                    }
                }
            }
        }
        let (descs, material_sets) = crate::texture::scene_texture_sets(&materials);
        if descs.is_empty() {
            return Err(InputError::Empty {
                inputs: sources
                    .iter()
                    .map(|s| s.path().display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let mut categories = vec![String::new(); descs.len()];
        for (m, set) in material_sets.iter().enumerate() {
            if let Some(s) = *set
                && categories[s].is_empty()
            {
                categories[s] = labels[m].clone();
            }
        }
        Ok(Self {
            sources: sources.to_vec(),
            names: unique_names(&descs),
            descs,
            categories,
            materials,
            material_sets,
            scene_files,
        })
    }

    /// Per set, the channels some material using it needs: the union of
    /// [`relevant_channels`](crate::texture::set::relevant_channels) over those materials (a channel
    /// that every one of them zeroes by its constants is irrelevant to the set).
    pub fn relevant_channels(&self) -> Vec<ChannelMask> {
        crate::texture::set::set_relevant_channels(
            &self.materials,
            &self.material_sets,
            self.descs.len(),
        )
    }

    /// Every file the sets come from: the inputs themselves, the `texture_sets.csv`
    /// beside a scene, each scene's glTF and buffers, and every image file, each once, in
    /// order of first use.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = Vec::new();
        for s in &self.sources {
            files.push(s.path().to_path_buf());
            let labels = s.path().with_file_name("texture_sets.csv");
            if matches!(s, InputSource::Scene(_)) && labels.is_file() {
                files.push(labels);
            }
        }
        let images = self
            .descs
            .iter()
            .flat_map(|d| d.sources())
            .filter_map(|(_, src)| match src {
                crate::scene::ImageSource::File(p) => Some(p),
                crate::scene::ImageSource::Embedded { .. } => None,
            });
        for p in self.scene_files.iter().chain(images) {
            if !files.contains(p) {
                files.push(p.clone());
            }
        }
        files
    }

    /// Decode every set (in parallel), downscaled to `opts.max_size` when given; sets get
    /// their unique names, and the channels that no material using a set needs are left
    /// out of its `present` mask ([`relevant_channels`](Self::relevant_channels),
    /// [`TextureSet::keep_channels`]).
    pub fn load(&self, opts: &LoadOptions) -> Result<Vec<LoadedSet>, TextureError> {
        let mut loaded = load_parallel(&self.descs, opts)?;
        for ((l, name), relevant) in loaded
            .iter_mut()
            .zip(&self.names)
            .zip(self.relevant_channels())
        {
            l.set.name = name.clone();
            l.set.keep_channels(relevant);
        }
        Ok(loaded)
    }

    /// Decode every set and keep only the texture data.
    pub fn load_sets(&self, opts: &LoadOptions) -> Result<Vec<TextureSet>, TextureError> {
        Ok(self.load(opts)?.into_iter().map(|l| l.set).collect())
    }
}

/// Where category labels come from, as messages say it.
pub const CATEGORY_LABEL_SOURCES: &str =
    "labels come from a manifest's `paper_category` column, or a `texture_sets.csv` beside a scene";

/// Whether any of `categories` (one per set) is a label (not blank): what the `category`
/// strategy needs.
pub fn has_category_labels(categories: &[String]) -> bool {
    categories.iter().any(|c| !c.trim().is_empty())
}

/// One category label per set name from a CSV with a `set_id` column and `column`
/// (`category` or `paper_category` in the Bistro manifest and the living room's
/// `texture_sets.csv`).
///
/// A set matches the first row whose `set_id` equals its name or, failing that, the
/// first whose `set_id` ends in `/name` (Bistro ids are `bistro/fabric/MASTER_Awning_Beams`,
/// the loaded set is `MASTER_Awning_Beams`). Sets without a row get an empty label (a
/// group of their own under the `category` strategy).
pub fn categories_from_csv(
    path: &Path,
    column: &str,
    set_names: &[String],
) -> Result<Vec<String>, TextureError> {
    let bad = |message: String| TextureError::Csv {
        path: path.to_path_buf(),
        message,
    };
    let bytes = crate::io::read_file(path, |path, source| TextureError::Io { path, source })?;
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(&bytes[..]);
    let headers = reader
        .headers()
        .map_err(|e| bad(format!("invalid CSV: {e}")))?
        .clone();
    let col = |name: &str| {
        headers.iter().position(|h| h == name).ok_or_else(|| {
            bad(format!(
                "required column `{name}` is missing from the header"
            ))
        })
    };
    let (c_id, c_cat) = (col("set_id")?, col(column)?);
    let mut by_id: HashMap<String, String> = HashMap::new();
    let mut by_last: HashMap<String, String> = HashMap::new();
    for record in reader.records() {
        let record = record.map_err(|e| bad(format!("invalid CSV: {e}")))?;
        let id = record.get(c_id).unwrap_or("");
        let cat = record.get(c_cat).unwrap_or("");
        by_id
            .entry(id.to_string())
            .or_insert_with(|| cat.to_string());
        if let Some((_, last)) = id.rsplit_once('/') {
            by_last
                .entry(last.to_string())
                .or_insert_with(|| cat.to_string());
        }
    }
    Ok(set_names
        .iter()
        .map(|n| {
            by_id
                .get(n)
                .or_else(|| by_last.get(n))
                .cloned()
                .unwrap_or_default()
        })
        .collect())
}

/// Write the report of the distinct texture sets of `inputs` as CSV (temporary file +
/// rename), in the schema the loader reads beside a scene (`texture_sets.csv`), so the
/// report can serve as one.
///
/// Columns: `set_id` (the set's unique name), `category` and `paper_category` (the set's
/// label, empty when unknown), `materials` (names of the materials using the set,
/// `;`-joined), one column per slot (`base_color, normal, metallic_roughness,
/// occlusion, emissive`: the image's display name, empty when absent) and
/// `occlusion_from_arm`.
pub fn write_texture_sets_csv(path: &Path, inputs: &InputSets) -> Result<(), TextureError> {
    let invalid = |reason: String| TextureError::InvalidInput {
        file: path.display().to_string(),
        reason,
    };
    let sets = &inputs.descs;
    if inputs.materials.len() != inputs.material_sets.len()
        || inputs.names.len() != sets.len()
        || inputs.categories.len() != sets.len()
    {
        return Err(invalid(format!(
            "{} materials, {} material→set entries, {} sets, {} names, {} labels",
            inputs.materials.len(),
            inputs.material_sets.len(),
            sets.len(),
            inputs.names.len(),
            inputs.categories.len()
        )));
    }
    let mut users: Vec<Vec<&str>> = vec![Vec::new(); sets.len()];
    for (m, s) in inputs.materials.iter().zip(&inputs.material_sets) {
        if let Some(s) = *s {
            users
                .get_mut(s)
                .ok_or_else(|| {
                    invalid(format!(
                        "material `{}` uses set {s}, but there are only {} sets",
                        m.name,
                        sets.len()
                    ))
                })?
                .push(&m.name);
        }
    }
    let csv_err = |e: csv::Error| TextureError::Csv {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["set_id", "category", "paper_category", "materials"];
    header.extend(Slot::ALL.iter().map(|s| s.name()));
    header.push("occlusion_from_arm");
    w.write_record(&header).map_err(csv_err)?;
    for (i, set) in sets.iter().enumerate() {
        let label = inputs.categories[i].clone();
        let mut record = vec![
            inputs.names[i].clone(),
            label.clone(),
            label,
            users[i].join(";"),
        ];
        record.extend(Slot::ALL.iter().map(|&s| {
            set.source(s)
                .map(ImageSource::display_name)
                .unwrap_or_default()
        }));
        record.push(set.occlusion_from_arm.to_string());
        w.write_record(&record).map_err(csv_err)?;
    }
    let bytes = w.into_inner().map_err(|e| TextureError::Csv {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    crate::io::write_atomic(path, &bytes).map_err(|source| TextureError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn living_room_and_bistro_combine() {
        let sources = [
            InputSource::Scene("../shared/assets/ntc_living_room/scene.gltf".into()),
            InputSource::Manifest("../shared/assets/bistro_texture_sets/manifest.csv".into()),
        ];
        let inputs = InputSets::open(&sources).unwrap();
        assert_eq!(inputs.descs.len(), 27 + 36);
        assert_eq!(inputs.names.len(), inputs.descs.len());
        let mut sorted = inputs.names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), inputs.names.len(), "names are unique");
        // Every Bistro set has a paper category; the living room's come from texture_sets.csv.
        let labelled = inputs.categories.iter().filter(|c| !c.is_empty()).count();
        assert!(labelled >= 36 + 20, "labelled sets: {labelled}");
    }

    #[test]
    fn channels_every_user_zeroes_are_left_out() {
        let dir = crate::io::test_dir("relevant");
        // One ARM image (occlusion, roughness, metallic) shared by two materials, and a
        // second one used only by a material whose metallic factor is 0.
        let arm = |name: &str| {
            let path = dir.join(name);
            image::save_buffer(
                &path,
                &[200, 100, 50].repeat(16),
                4,
                4,
                image::ColorType::Rgb8,
            )
            .unwrap();
            crate::scene::TextureRef {
                image: crate::scene::ImageSource::File(path),
                tex_coord: 0,
            }
        };
        let material = |name: &str, image: &crate::scene::TextureRef, metallic: f32| Material {
            name: name.into(),
            metallic_factor: metallic,
            occlusion_from_arm: true,
            textures: crate::scene::MaterialTextures {
                metallic_roughness: Some(image.clone()),
                ..Default::default()
            },
            ..Material::default()
        };
        let (shared, dielectric) = (arm("shared_arm.png"), arm("dielectric_arm.png"));
        let materials = vec![
            material("metal", &shared, 1.0),
            material("painted", &shared, 0.0),
            material("plastic", &dielectric, 0.0),
        ];
        let (descs, material_sets) = crate::texture::scene_texture_sets(&materials);
        let inputs = InputSets {
            sources: Vec::new(),
            names: vec!["shared".into(), "dielectric".into()],
            categories: vec![String::new(); 2],
            descs,
            materials,
            material_sets,
            scene_files: Vec::new(),
        };
        let orm = ChannelMask::OCCLUSION | ChannelMask::ROUGHNESS | ChannelMask::METALLIC;
        let sets = inputs.load_sets(&LoadOptions::default()).unwrap();
        assert_eq!(
            sets[0].present, orm,
            "metal still needs the shared set's metallic"
        );
        assert_eq!(sets[1].present, orm & ChannelMask(!ChannelMask::METALLIC.0));
        let metallic = crate::texture::Channel::Metallic;
        assert!(
            sets[1].mips[0]
                .texels
                .chunks_exact(crate::texture::CHANNELS)
                .all(|t| t[metallic.index()] == metallic.neutral_u8())
        );
        // Training gives the left-out channel no weight.
        let weights = crate::ntc::train::LossWeights::default().per_output(sets[1].present);
        assert_eq!(weights[metallic.index()], 0.0);
        assert!(weights[crate::texture::Channel::Roughness.index()] > 0.0);
    }

    #[test]
    fn empty_input_is_an_error() {
        let dir = crate::io::test_dir("inputs");
        let m = dir.join("empty.csv");
        std::fs::write(&m, "set_id,category,paper_category,basecolor,normal,alpha,roughness_const,metallic_const\n").unwrap();
        let e = InputSets::open(&[InputSource::Manifest(m)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("empty.csv") && e.contains("no textured material"),
            "{e}"
        );
    }
}
