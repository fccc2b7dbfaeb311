//! Import facts on the real data in ../shared/assets (no GPU needed).

use std::path::Path;

use neurotex::scene::{AlphaMode, Scene};
use neurotex::texture::{self, ChannelMask, LoadOptions};

const LIVING_ROOM: &str = "../shared/assets/ntc_living_room/scene.gltf";
const BISTRO: &str = "../shared/assets/bistro_texture_sets/manifest.csv";

#[test]
fn living_room_import_facts() {
    let scene = Scene::load(Path::new(LIVING_ROOM)).expect("living room imports");
    assert_eq!(scene.materials.len(), 37);
    let (sets, material_sets) = texture::scene_texture_sets(&scene.materials);
    assert_eq!(sets.len(), 27, "distinct texture sets");
    assert_eq!(
        material_sets.iter().filter(|s| s.is_some()).count(),
        29,
        "textured materials"
    );
    let tris = scene.triangle_count();
    assert!(
        (900_000..960_000).contains(&tris),
        "≈ 930 k triangles, got {tris}"
    );
    let blend = scene
        .materials
        .iter()
        .filter(|m| m.alpha_mode == AlphaMode::Blend)
        .count();
    assert_eq!(blend, 3, "sofa fringe, plastic_crate_02, helmet lenses");
    // Poly Haven ARM packing: occlusion comes from the metallic-roughness image.
    let cabinet = scene
        .materials
        .iter()
        .find(|m| {
            m.name.contains("painted_wooden_cabinet") && m.textures.metallic_roughness.is_some()
        })
        .expect("cabinet material");
    assert!(cabinet.occlusion_from_arm);
    // The file has no TANGENT attributes: every normal-mapped primitive got MikkTSpace ones.
    let mut checked = 0;
    for mesh in &scene.meshes {
        for p in &mesh.primitives {
            if scene.materials[p.material].textures.normal.is_none() {
                continue;
            }
            checked += 1;
            for v in &p.vertices {
                let t = glam::Vec3::from_slice(&v.tangent[..3]);
                let n = glam::Vec3::from(v.normal);
                assert!((t.length() - 1.0).abs() < 1e-3, "unit tangent");
                assert!(t.dot(n).abs() < 1e-3, "tangent ⟂ normal in {}", mesh.name);
                assert!(v.tangent[3] == 1.0 || v.tangent[3] == -1.0);
            }
        }
    }
    assert!(checked >= 30, "normal-mapped primitives: {checked}");
    // The CSV lists every set.
    let dir = std::env::temp_dir().join(format!("neurotex-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("texture_sets.csv");
    let inputs = neurotex::inputs::InputSets::open(&[neurotex::inputs::InputSource::Scene(
        LIVING_ROOM.into(),
    )])
    .unwrap();
    neurotex::inputs::write_texture_sets_csv(&csv, &inputs).unwrap();
    let rows = std::fs::read_to_string(&csv).unwrap().lines().count();
    assert_eq!(rows, 28, "header + 27 sets");
}

#[test]
fn bistro_manifest_loads_as_texture_sets() {
    let entries = texture::read_manifest(Path::new(BISTRO)).expect("manifest");
    assert_eq!(entries.len(), 36);
    let materials: Vec<_> = entries.iter().map(|e| e.material.clone()).collect();
    let (sets, _) = texture::scene_texture_sets(&materials);
    assert_eq!(sets.len(), 36);
    // Decode a few, small: base colour + normal present, ORM from the manifest constants.
    let opts = LoadOptions {
        allow_missing: false,
        max_size: Some(32),
    };
    for (desc, entry) in sets.iter().zip(&entries).step_by(12) {
        let loaded = desc.load(&opts).expect("set decodes");
        let set = &loaded.set;
        assert_eq!((set.width, set.height), (32, 32));
        assert_eq!(set.mips.len(), 6);
        assert!(
            set.present.contains(ChannelMask::BASE_COLOR)
                && set.present.contains(ChannelMask::NORMAL)
        );
        assert!(!set.present.contains(ChannelMask::ROUGHNESS));
        assert!(entry.material.roughness_factor > 0.0);
    }
}

#[test]
fn gen_scene_panel_writes_a_one_set_full_screen_scene() {
    use crate::common::{expect_error, expect_ok, s};
    let dir = crate::common::temp_dir("gen-panel");
    let out = dir.join("panel");
    let args = |set: &'static str, repeat: &'static str| {
        vec![
            "gen-scene",
            "panel",
            "--textures",
            BISTRO,
            "--set",
            set,
            "--repeat",
            repeat,
            "--out",
            s(&out),
        ]
    };
    let printed = expect_ok(&args("MASTER_Concrete1", "6x4"));
    assert!(printed.contains("panel.toml"), "{printed}");
    let toml = out.join("panel.toml");
    let report = expect_ok(&["import", "--scene", s(&toml)]);
    assert!(
        report.contains("2 triangles") && report.contains("1 distinct texture sets"),
        "{report}"
    );
    // An existing scene is kept without --force; bad sets and repeats are errors that
    // name the problem.
    expect_error(&args("MASTER_Concrete1", "6x4"), &["--force"]);
    expect_error(
        &[&args("no_such_set", "6x4")[..], &["--force"]].concat(),
        &["manifest.csv", "no_such_set"],
    );
    expect_error(&args("MASTER_Concrete1", "0x4"), &["0x4"]);
    expect_error(&["gen-scene", "panel", "--out", s(&out)], &["required"]);
    // An option the kind has no use for is refused by name, not ignored.
    expect_error(
        &[&args("MASTER_Concrete1", "6x4")[..], &["--seed", "3"]].concat(),
        &["gen-scene panel does not use --seed"],
    );
    expect_error(
        &[
            "gen-scene",
            "toyshop",
            "--out",
            s(&out),
            "--repeat",
            "2x2",
            "--textures",
            BISTRO,
        ],
        &["gen-scene toyshop does not use --textures, --repeat"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}
