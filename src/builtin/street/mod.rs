//! The "Bistro street" scene generator: a European café street dressed with the texture
//! sets of a manifest.
//!
//! Owns [`generate`], which reads a Bistro-style texture-set manifest
//! ([`crate::texture::read_manifest`]) and writes into a folder `street.gltf` +
//! `street.bin` (through [`GltfBuilder`]) and `street.toml`, a scene description with a
//! warm late-afternoon sun and two camera paths: `street-walk` (a 20 s walk down the
//! café-side pavement at eye height) and `terrace` (an 8 s sweep over the terrace tables).
//! Images are not copied: materials reference the manifest's files by a path relative to
//! the output folder (absolute when the two share no root).
//!
//! The street is y-up, in metres, running along X for 44 m between two cross streets
//! closed by facades: a road with kerbs and pavements, four- to six-storey buildings on
//! both sides (window openings with glass, frames and shutters, balconies with railings,
//! string courses, dentil cornices, mansard roofs with dormers, chimneys and antennas),
//! shop fronts with fascias, awnings, spotlights and hanging signs, a café terrace with
//! round tables, chairs, bottles and ashtrays under an awning with string lights, glass
//! wind screens and planters, and street furniture (lamps, bollards, a barrier, bins, an
//! electrical cabinet, planters, crates and barrels, street name plates).
//!
//! Materials: one glTF material per manifest row, with its images, roughness/metallic
//! constants and alpha mode. Every scene element asks for a *role* (facade, awning, lamp
//! post, ...), and the role gets the set that fits best: by the set's kind (classified
//! from its category, paper category and name), by keywords in its name, and by how often
//! the set was used already, so similar sets spread over similar elements. Sets that no
//! role took are put on extra wall props (plaques, lanterns, banners, cabinets, flower
//! boxes) and, when the walls run out, on a stack of crates, so every set of any manifest
//! appears at least once. Output is a pure function of the manifest and the seed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use glam::{Mat4, Quat, Vec3};
use serde::Deserialize;

use super::gltf_builder::{GltfBuilder, UvMode, box_mesh, cone, cylinder, plane, torus, uv_sphere};
use super::kit::{Assembly, Mtl, Part, Segments, cuboid, rot, v};
use super::manifest_scene::{
    ManifestSceneError, asset_folders, io_error, material_desc, read_entries,
};
use super::procedural::{derive_seed, hash_str, hash_u32, hash2, sin_cos_turns};
use crate::io::{csv_field, write_atomic};
use crate::scene::Lighting;
use crate::scene::description::{CameraKey, CameraPath, RenderDefaults, SceneDescription};
use crate::texture::ManifestEntry;
use layout::*;

mod layout;

/// Options of [`generate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreetOptions {
    /// The texture-set manifest (CSV with the columns [`crate::texture::read_manifest`]
    /// needs); every row is used at least once.
    pub manifest: PathBuf,
    /// Seed of the layout and of the choice among equally suitable sets.
    pub seed: u64,
}

/// File stem of the glTF document and its buffer.
const NAME: &str = "street";
/// The scene description written next to the glTF.
const DESCRIPTION_FILE: &str = "street.toml";

/// Every file [`generate`] writes into its folder.
pub const OUTPUT_FILES: [&str; 4] = [
    "street.gltf",
    "street.bin",
    DESCRIPTION_FILE,
    "texture_sets.csv",
];

/// Writes the street into `out_dir` (created if missing): `street.gltf`, `street.bin` and
/// `street.toml`, each through a temporary file renamed into place. Returns the path of
/// `street.toml`.
pub fn generate(out_dir: &Path, opts: &StreetOptions) -> Result<PathBuf, ManifestSceneError> {
    let manifest = &opts.manifest;
    let entries = read_entries(manifest)?;
    std::fs::create_dir_all(out_dir).map_err(io_error(out_dir))?;
    let base = std::fs::canonicalize(out_dir).map_err(io_error(out_dir))?;
    let mut builder = GltfBuilder::new();
    for entry in &entries {
        builder.add_material(material_desc(entry, &base, manifest)?);
    }
    let mut street = Street {
        asm: Assembly::new(builder, derive_seed(opts.seed, hash_str("street layout"))),
        pal: Palette::new(&entries, opts.seed),
        slots: Vec::new(),
    };
    street.build();
    let gltf = street.asm.b.write(out_dir, NAME)?;
    let toml_path = out_dir.join(DESCRIPTION_FILE);
    let text = description_text(opts.seed, asset_folders(&entries, &base)).map_err(|reason| {
        ManifestSceneError::Description {
            path: toml_path.clone(),
            reason,
        }
    })?;
    write_atomic(&toml_path, text.as_bytes()).map_err(io_error(&toml_path))?;
    // The manifest's categories, where the offline tools look for a scene's labels (the
    // `category` strategy groups by `paper_category`).
    let csv_path = out_dir.join("texture_sets.csv");
    write_atomic(&csv_path, categories_csv(&entries).as_bytes()).map_err(io_error(&csv_path))?;
    log::info!(
        "street: {} texture sets, {} triangles → {}",
        entries.len(),
        street.asm.b.instanced_triangle_count(),
        gltf.display()
    );
    Ok(toml_path)
}

// ---------------------------------------------------------------------------------------
// Materials and image references
// ---------------------------------------------------------------------------------------

/// `set_id,category,paper_category` for every manifest row (CSV, quoted as needed).
fn categories_csv(entries: &[ManifestEntry]) -> String {
    let mut s = String::from("set_id,category,paper_category\n");
    for e in entries {
        s.push_str(&format!(
            "{},{},{}\n",
            csv_field(&e.material.name),
            csv_field(&e.category),
            csv_field(&e.paper_category)
        ));
    }
    s
}

// ---------------------------------------------------------------------------------------
// Assigning sets to scene elements
// ---------------------------------------------------------------------------------------

/// What a texture set looks like it is, from its category, paper category and name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Stone,
    Wood,
    Metal,
    Glass,
    Fabric,
    Light,
    Roof,
    Plant,
    /// Printed or painted artwork: signs, menus, labels, dials.
    Sign,
    Misc,
}

/// The street's choice table (`roles.toml`): artwork words, the words of each kind and
/// what each role looks for.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Choice {
    /// Name fragments that mark artwork, checked on the set name before anything else.
    sign_words: Vec<String>,
    /// Fragments of category labels and names, per kind, in the order they are tried.
    kind_words: Vec<KindWords>,
    /// Every role's preferences.
    roles: HashMap<Role, Pref>,
}

/// The words of one kind.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KindWords {
    kind: Kind,
    words: Vec<String>,
}

/// Number of roles (the last one's index + 1): the table has one entry for each.
const ROLES: usize = Role::Antenna as usize + 1;

/// The choice table, parsed once (`choice_table_parses_and_has_every_role` checks it).
fn choice() -> &'static Choice {
    static CHOICE: OnceLock<Choice> = OnceLock::new();
    CHOICE.get_or_init(|| {
        parse_choice(include_str!("roles.toml")).unwrap_or_else(|e| panic!("roles.toml: {e}"))
    })
}

/// Parses and checks a choice table: every role once, each with at least one kind.
fn parse_choice(text: &str) -> Result<Choice, String> {
    let choice: Choice = toml::from_str(text).map_err(|e| e.to_string())?;
    if choice.roles.len() != ROLES {
        return Err(format!(
            "{} roles, expected all {ROLES}",
            choice.roles.len()
        ));
    }
    if let Some((role, _)) = choice.roles.iter().find(|(_, p)| p.kinds.is_empty()) {
        return Err(format!("role {role:?} accepts no kind"));
    }
    Ok(choice)
}

/// The kind of a manifest row: artwork words in the name first, then the category, the
/// paper category and the name, else [`Kind::Misc`].
fn classify(entry: &ManifestEntry) -> Kind {
    let choice = choice();
    let name = entry.material.name.to_lowercase();
    if choice.sign_words.iter().any(|w| name.contains(w.as_str())) {
        return Kind::Sign;
    }
    for text in [
        entry.category.to_lowercase(),
        entry.paper_category.to_lowercase(),
        name,
    ] {
        for k in &choice.kind_words {
            if k.words.iter().any(|w| text.contains(w.as_str())) {
                return k.kind;
            }
        }
    }
    Kind::Misc
}

/// A scene element that needs a texture set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Role {
    Road,
    Pavement,
    Kerb,
    Facade,
    Plinth,
    Trim,
    Cornice,
    Balcony,
    Railing,
    Roof,
    Chimney,
    Glass,
    WindowFrame,
    Shutter,
    Door,
    Shopfront,
    Letters,
    CafeSign,
    ShopSign,
    Bracket,
    Chain,
    Spotlight,
    Clock,
    Ornament,
    Awning,
    AwningFrame,
    StringLights,
    TableTop,
    TableFrame,
    ChairFrame,
    ChairSeat,
    Tablecloth,
    Cushion,
    Ashtray,
    BottleLabel,
    BottleCap,
    MenuBoard,
    LampPost,
    LampHead,
    Bollard,
    Barrier,
    TrashCan,
    ElectricBox,
    Planter,
    Flowers,
    Crate,
    Barrel,
    Hoop,
    StreetSign,
    Antenna,
}

/// What a role looks for.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Pref {
    /// Acceptable kinds, best first. Other kinds are used only when none of these exists.
    kinds: Vec<Kind>,
    /// Name fragments that make a set a better fit.
    words: Vec<String>,
    /// Name fragments that make a set a worse fit.
    #[serde(default)]
    avoid: Vec<String>,
    /// Metres per texture repeat; `None`: the whole texture on each face.
    tile: Option<f32>,
}

impl Pref {
    /// The texture layout on the element.
    fn uv(&self) -> UvMode {
        self.tile.map_or(UvMode::Unit, tile)
    }
}

/// UV layout with one texture repeat every `metres`.
fn tile(metres: f32) -> UvMode {
    UvMode::PerMetre(1.0 / metres)
}

/// The manifest's sets with their kinds and how often each was picked.
struct Palette {
    kinds: Vec<Kind>,
    /// Lower-case `set_id` and category, searched for role keywords.
    texts: Vec<String>,
    uses: Vec<u32>,
    seed: u32,
}

impl Palette {
    fn new(entries: &[ManifestEntry], seed: u64) -> Self {
        Self {
            kinds: entries.iter().map(classify).collect(),
            texts: entries
                .iter()
                .map(|e| {
                    // The last part of the set id: folder names such as `bistro/` would
                    // match everything.
                    let name = e.material.name.rsplit('/').next().unwrap_or_default();
                    format!("{name} {}", e.category).to_lowercase()
                })
                .collect(),
            uses: vec![0; entries.len()],
            seed: derive_seed(seed, hash_str("street palette")),
        }
    }

    /// The best set for `role` (counted as used): kind rank first, then name keywords,
    /// minus a penalty per earlier use, with a seeded tie-break.
    fn pick(&mut self, role: Role) -> Mtl {
        let pref = &choice().roles[&role];
        let score = |i: usize| -> i64 {
            let kind = match pref.kinds.iter().position(|&k| k == self.kinds[i]) {
                Some(rank) => 400 - 100 * rank as i64,
                None => -10_000,
            };
            let text = &self.texts[i];
            let hits = |words: &[String]| {
                words.iter().filter(|w| text.contains(w.as_str())).count() as i64
            };
            let words = match hits(&pref.words) {
                0 => 0,
                n => 80 + 40 * n,
            };
            // Capped below the gap between kind ranks, so use never overrides kind.
            let used = (50 * i64::from(self.uses[i])).min(99);
            let tie = i64::from(hash2(i as i32, role as i32, self.seed) % 40);
            kind + words - 150 * hits(&pref.avoid) - used + tie
        };
        let mut best = 0;
        let mut best_score = i64::MIN;
        for i in 0..self.uses.len() {
            let s = score(i);
            if s > best_score {
                best = i;
                best_score = s;
            }
        }
        if let Some(u) = self.uses.get_mut(best) {
            *u += 1;
        }
        Mtl {
            index: best,
            uv: pref.uv(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Scene description
// ---------------------------------------------------------------------------------------

/// The text of `street.toml`.
fn description_text(seed: u64, asset_folders: Vec<PathBuf>) -> Result<String, String> {
    let key = |time: f32, position: [f32; 3], target: [f32; 3], fov_deg: f32| CameraKey {
        time,
        position,
        target,
        fov_deg,
    };
    let walk_z = KERB_Z + 1.2;
    let description = SceneDescription {
        gltf: Some(PathBuf::from(format!("{NAME}.gltf"))),
        builtin: None,
        asset_folders,
        lighting: Lighting {
            // Low sun from the south-east, behind the walker, lighting the café facade.
            sun_direction: [0.5, 0.42, -0.75],
            sun_color: [1.0, 0.76, 0.52],
            sun_intensity: 3.4,
            sky_color: [0.34, 0.4, 0.52],
            ground_color: [0.22, 0.17, 0.13],
            exposure: 1.15,
            shadows: true,
        },
        render: RenderDefaults {
            size: Some([1280, 720]),
            camera: Some("street-walk".into()),
            builtin_texture_size: None,
        },
        camera_paths: vec![
            CameraPath {
                name: "street-walk".into(),
                keys: vec![
                    key(0.0, [18.0, EYE, walk_z], [6.0, 2.4, 6.8], 60.0),
                    key(4.0, [11.0, EYE, walk_z], [0.0, 1.6, 7.2], 60.0),
                    key(8.0, [4.0, EYE, walk_z - 0.05], [-4.0, 1.3, 7.5], 60.0),
                    key(12.0, [-3.0, EYE, walk_z], [-14.0, 2.6, 2.0], 60.0),
                    key(16.0, [-10.0, EYE, walk_z], [-22.0, 3.2, -1.5], 60.0),
                    key(20.0, [-17.0, EYE, walk_z - 0.1], [-30.0, 4.5, 0.0], 60.0),
                ],
            },
            CameraPath {
                name: "terrace".into(),
                keys: vec![
                    key(0.0, [6.2, 1.75, 5.2], [3.6, 0.7, 7.0], 50.0),
                    key(4.0, [1.0, 1.9, 5.0], [-2.0, 0.75, 6.8], 50.0),
                    key(8.0, [-4.2, 1.75, 5.2], [-5.8, 0.7, 7.6], 50.0),
                ],
            },
        ],
    };
    let body = toml::to_string(&description).map_err(|e| e.to_string())?;
    Ok(format!(
        "# A Bistro-style café street generated by neurotex (seed {seed}).\n{body}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::open::open;
    use crate::texture::read_manifest;
    use crate::texture::scene_texture_sets;

    const BISTRO: &str = "../shared/assets/bistro_texture_sets/manifest.csv";

    #[test]
    fn choice_table_parses_and_has_every_role() {
        let table = include_str!("roles.toml");
        let choice = parse_choice(table).unwrap_or_else(|e| panic!("roles.toml: {e}"));
        assert_eq!(choice.roles.len(), ROLES);
        assert_eq!(choice.roles[&Role::Road].uv(), tile(3.0));
        assert_eq!(choice.roles[&Role::Door].uv(), UvMode::Unit);
        // A table without one of the roles, or with a role accepting no kind, is refused.
        let (without, antenna) = table.split_once("[roles.antenna]").expect("the last role");
        assert!(!antenna.contains("[roles."));
        assert!(parse_choice(without).unwrap_err().contains("expected all"));
        let kindless = table.replace(
            "[roles.antenna]\nkinds = [\"metal\"]",
            "[roles.antenna]\nkinds = []",
        );
        assert_ne!(kindless, table);
        assert!(parse_choice(&kindless).unwrap_err().contains("no kind"));
    }

    const HEADER: &str = "set_id,category,paper_category,basecolor,normal,resolution,alpha,roughness_const,metallic_const,license";

    /// A fresh folder for the test `tag`.
    fn temp_dir(tag: &str) -> PathBuf {
        crate::io::test_dir(&format!("street-{tag}"))
    }

    /// Writes a manifest of `rows` synthetic sets (each with its own 4×4 PNGs) into `dir`.
    fn synthetic_manifest(dir: &Path, rows: usize) -> PathBuf {
        const CATEGORIES: [&str; 7] = [
            "Gizmos", "Metal", "Fabric", "Lights", "Nature", "Roofing", "Glass",
        ];
        let mut csv = format!("{HEADER}\n");
        for i in 0..rows {
            let img = image::RgbaImage::from_pixel(4, 4, image::Rgba([i as u8, 90, 160, 255]));
            img.save(dir.join(format!("set{i}_basecolor.png")))
                .expect("png");
            img.save(dir.join(format!("set{i} normal.png")))
                .expect("png");
            csv.push_str(&format!(
                "synthetic/set{i},{},Other,set{i}_basecolor.png,set{i} normal.png,4x4,{},0.5,0.0,CC0\n",
                CATEGORIES[i % CATEGORIES.len()],
                i % 2
            ));
        }
        let path = dir.join("manifest.csv");
        std::fs::write(&path, csv).expect("manifest");
        path
    }

    /// Generates, opens the description and returns the scene and the number of sets.
    fn generate_and_open(out: &Path, manifest: &Path, seed: u64) -> crate::open::OpenedScene {
        let opts = StreetOptions {
            manifest: manifest.to_path_buf(),
            seed,
        };
        let toml_path = generate(out, &opts).expect("generation succeeds");
        assert_eq!(toml_path, out.join("street.toml"));
        assert!(out.join("street.gltf").is_file() && out.join("street.bin").is_file());
        open(Some(&toml_path)).expect("the scene imports")
    }

    #[test]
    fn bistro_street_uses_every_set() {
        let dir = temp_dir("bistro");
        let opened = generate_and_open(&dir, Path::new(BISTRO), 1);
        let scene = &opened.scene;
        let (sets, _) = scene_texture_sets(&scene.materials);
        assert_eq!(sets.len(), 36, "every manifest set appears in the scene");
        let used: std::collections::HashSet<usize> = scene
            .instances
            .iter()
            .flat_map(|i| &scene.meshes[i.mesh].primitives)
            .map(|p| p.material)
            .collect();
        assert_eq!(used.len(), 36, "every material is drawn");
        // The manifest's categories travel with the scene for the `category` strategy.
        let inputs = crate::inputs::InputSets::open(&[crate::inputs::InputSource::Scene(
            dir.join("street.toml"),
        )])
        .expect("inputs open");
        let labelled = inputs.categories.iter().filter(|c| !c.is_empty()).count();
        assert_eq!(labelled, 36, "categories: {:?}", inputs.categories);
        let triangles = scene.triangle_count();
        assert!(
            (20_000..=300_000).contains(&triangles),
            "{triangles} triangles"
        );
        for (name, min_keys) in [("street-walk", 5), ("terrace", 2)] {
            let path = opened
                .description
                .camera_paths
                .iter()
                .find(|p| p.name == name)
                .unwrap_or_else(|| panic!("camera path {name}"));
            assert!(
                path.keys.len() >= min_keys,
                "{name}: {} keys",
                path.keys.len()
            );
        }
        assert_eq!(
            opened.description.render.camera.as_deref(),
            Some("street-walk")
        );
        // Images are referenced relatively and resolve to the manifest's files.
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("street.gltf")).expect("gltf"))
                .expect("json");
        for img in doc["images"].as_array().expect("images") {
            let uri = img["uri"].as_str().expect("uri");
            assert!(uri.starts_with(".."), "{uri}");
            assert!(dir.join(uri).is_file(), "{uri}");
        }
        // Same seed, same bytes; no temporaries left behind; another seed differs.
        let again = temp_dir("bistro-again");
        generate(
            &again,
            &StreetOptions {
                manifest: BISTRO.into(),
                seed: 1,
            },
        )
        .expect("second generation");
        for f in ["street.gltf", "street.bin", "street.toml"] {
            let a = std::fs::read(dir.join(f)).expect("first");
            let b = std::fs::read(again.join(f)).expect("second");
            assert!(a == b, "{f} differs between runs");
        }
        let leftovers = std::fs::read_dir(&dir)
            .expect("dir")
            .filter(|e| {
                e.as_ref()
                    .map(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
                    .unwrap_or(false)
            })
            .count();
        assert_eq!(leftovers, 0);
        let other = temp_dir("bistro-other");
        generate(
            &other,
            &StreetOptions {
                manifest: BISTRO.into(),
                seed: 2,
            },
        )
        .expect("other seed");
        assert_ne!(
            std::fs::read(dir.join("street.bin")).expect("bin"),
            std::fs::read(other.join("street.bin")).expect("bin")
        );
        for d in [dir, again, other] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    #[test]
    fn one_row_manifest_generates() {
        let dir = temp_dir("one");
        let manifest = synthetic_manifest(&dir, 1);
        let out = dir.join("out");
        let opened = generate_and_open(&out, &manifest, 3);
        let (sets, _) = scene_texture_sets(&opened.scene.materials);
        assert_eq!(sets.len(), 1);
        assert!(opened.scene.triangle_count() > 10_000);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn many_sets_of_unknown_kinds_are_all_used() {
        let dir = temp_dir("many");
        let manifest = synthetic_manifest(&dir, 260);
        let opened = generate_and_open(&dir.join("out"), &manifest, 4);
        let (sets, _) = scene_texture_sets(&opened.scene.materials);
        assert_eq!(sets.len(), 260);
        let used: std::collections::HashSet<usize> = opened
            .scene
            .instances
            .iter()
            .flat_map(|i| &opened.scene.meshes[i.mesh].primitives)
            .map(|p| p.material)
            .collect();
        assert_eq!(used.len(), 260);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn empty_or_missing_manifest_is_an_error() {
        let dir = temp_dir("empty");
        let manifest = dir.join("empty.csv");
        std::fs::write(&manifest, format!("{HEADER}\n")).expect("manifest");
        let opts = StreetOptions {
            manifest: manifest.clone(),
            seed: 1,
        };
        let err = generate(&dir.join("out"), &opts).expect_err("no rows");
        assert!(
            matches!(err, ManifestSceneError::EmptyManifest { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("empty.csv"), "{err}");
        let missing = StreetOptions {
            manifest: dir.join("absent.csv"),
            seed: 1,
        };
        let err = generate(&dir.join("out"), &missing).expect_err("missing");
        assert!(matches!(err, ManifestSceneError::Manifest { .. }), "{err}");
        assert!(err.to_string().contains("absent.csv"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn kinds_follow_category_and_name() {
        let entries = read_manifest(Path::new(BISTRO)).expect("manifest");
        let kind = |suffix: &str| {
            entries
                .iter()
                .find(|e| e.material.name.ends_with(suffix))
                .map(classify)
                .expect("row")
        };
        assert_eq!(kind("MASTER_Awning_Fabric_Cyan"), Kind::Fabric);
        assert_eq!(kind("MASTER_Glass_Exterior"), Kind::Glass);
        assert_eq!(kind("Stringlights"), Kind::Light);
        assert_eq!(kind("Sidewalkbarrier"), Kind::Metal);
        assert_eq!(kind("Bistro_Sign_Main"), Kind::Sign);
        assert_eq!(kind("Ashtray"), Kind::Misc);
        assert_eq!(kind("MASTER_Roofing_Shingle_Green"), Kind::Roof);
        assert_eq!(kind("MASTER_Trim_Cornice"), Kind::Stone);
        assert_eq!(kind("Paris_Table_Terrace"), Kind::Wood);
        assert_eq!(kind("Foliage_Paris_Flowers"), Kind::Plant);
    }
}
