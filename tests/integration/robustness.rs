//! Hostile inputs, one class at a time (no GPU needed): each must give one error that
//! names the file and the problem, never a panic, never an allocation from an unchecked
//! size; plus property tests of the round trips (quantisation, packages, checkpoints,
//! camera paths).

use std::path::Path;
use std::sync::Arc;

use crate::common::{
    expect_error, expect_ok, failed, read_json, run_in, s, succeeded, temp_dir, temp_file,
};
use base64::Engine as _;
use neurotex::ntc::NtcPackage;
use neurotex::scene::description::{CameraKey, CameraPath, LoadedDescription, SceneDescription};
use neurotex::scene::gltf_import::{self, UriPolicy};
use neurotex::scene::{ImageSource, Scene, SceneError};
use neurotex::texture::set::{LoadOptions, TextureSetDesc};
use neurotex::texture::{self, TextureError};

// ---------------------------------------------------------------------------------------
// glTF
// ---------------------------------------------------------------------------------------

/// Three vertices (POSITION, TEXCOORD_0), three u16 indices, as little-endian bytes.
fn triangle_bytes(positions: [f32; 9]) -> Vec<u8> {
    let mut buf = Vec::new();
    for v in positions {
        buf.extend(v.to_le_bytes());
    }
    for v in [0.0f32, 0.0, 1.0, 0.0, 0.0, 1.0] {
        buf.extend(v.to_le_bytes());
    }
    for i in [0u16, 1, 2, 0] {
        buf.extend(i.to_le_bytes());
    }
    buf
}

/// A valid one-triangle glTF (data-URI buffer, one textured material) as JSON, for
/// tests to break one field at a time.
fn triangle_gltf() -> serde_json::Value {
    let buf = triangle_bytes([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&buf);
    serde_json::json!({
        "asset": {"version": "2.0"},
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{
            "attributes": {"POSITION": 0, "TEXCOORD_0": 1}, "indices": 2, "material": 0}]}],
        "materials": [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}],
        "textures": [{"source": 0}],
        "images": [{"uri": "base.png"}],
        "buffers": [{"byteLength": buf.len(),
                     "uri": format!("data:application/octet-stream;base64,{b64}")}],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 36},
            {"buffer": 0, "byteOffset": 36, "byteLength": 24},
            {"buffer": 0, "byteOffset": 60, "byteLength": 6}],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
             "min": [0, 0, 0], "max": [1, 1, 0]},
            {"bufferView": 1, "componentType": 5126, "count": 3, "type": "VEC2"},
            {"bufferView": 2, "componentType": 5123, "count": 3, "type": "SCALAR"}]
    })
}

/// Import `doc` written to `<dir>/<name>.gltf`.
fn import(dir: &Path, name: &str, doc: &serde_json::Value) -> Result<Scene, SceneError> {
    let path = dir.join(format!("{name}.gltf"));
    std::fs::write(&path, serde_json::to_vec(doc).expect("json")).expect("write");
    Scene::load(&path)
}

/// [`import`], which must fail: its error as text.
fn import_error(dir: &Path, name: &str, doc: &serde_json::Value) -> String {
    import(dir, name, doc).expect_err(name).to_string()
}

/// Import `doc` after `edit`; expect an error naming the file and every needle.
fn expect_gltf_error(name: &str, edit: impl FnOnce(&mut serde_json::Value), needles: &[&str]) {
    let dir = temp_dir(&format!("gltf-{name}"));
    let mut doc = triangle_gltf();
    edit(&mut doc);
    let e = import_error(&dir, name, &doc);
    assert!(e.contains(&format!("{name}.gltf")), "{name}: {e}");
    for n in needles {
        assert!(e.contains(n), "{name}: `{n}` missing from: {e}");
    }
    assert!(
        !e.contains("the glTF reader failed"),
        "{name}: caught a panic: {e}"
    );
}

/// The field of `doc` at the JSON pointer `pointer` (`/meshes/0/indices`), created as
/// indexing creates it (`doc["meshes"][0]["indices"]`).
fn field_mut<'a>(doc: &'a mut serde_json::Value, pointer: &str) -> &'a mut serde_json::Value {
    pointer
        .split('/')
        .skip(1)
        .fold(doc, |v, key| match key.parse::<usize>() {
            Ok(i) => &mut v[i],
            Err(_) => &mut v[key],
        })
}

/// [`expect_gltf_error`] for each case (name, field, value, needles): the field at the
/// JSON pointer `field` ([`field_mut`]) set to `value`.
fn expect_field_errors(cases: &[(&str, &str, serde_json::Value, &[&str])]) {
    for (name, field, value, needles) in cases {
        expect_gltf_error(name, |d| *field_mut(d, field) = value.clone(), needles);
    }
}

#[test]
fn valid_triangle_imports() {
    let dir = temp_dir("gltf-ok");
    let scene = import(&dir, "ok", &triangle_gltf()).expect("imports");
    assert_eq!(scene.meshes[0].primitives[0].indices, vec![0, 1, 2]);
}

#[test]
fn accessor_indices_that_do_not_exist() {
    expect_field_errors(&[
        (
            "attribute_index",
            "/meshes/0/primitives/0/attributes/POSITION",
            9.into(),
            &[
                "meshes[0].primitives[0].attributes.POSITION",
                "accessor 9 does not exist",
            ],
        ),
        (
            "normal_index",
            "/meshes/0/primitives/0/attributes/NORMAL",
            3.into(),
            &["attributes.NORMAL", "accessor 3 does not exist"],
        ),
        (
            "indices_index",
            "/meshes/0/primitives/0/indices",
            7.into(),
            &["meshes[0].primitives[0].indices", "index out of bounds"],
        ),
        (
            "view_index",
            "/accessors/1/bufferView",
            5.into(),
            &["accessors[1].bufferView", "index out of bounds"],
        ),
        (
            "texture_source",
            "/textures/0/source",
            4.into(),
            &["textures[0].source", "index out of bounds"],
        ),
    ]);
}

#[test]
fn component_types_per_semantic() {
    expect_gltf_error(
        "indices_float",
        |d| {
            d["accessors"][2]["componentType"] = 5126.into();
            d["accessors"][2]["bufferView"] = 0.into();
        },
        &["meshes[0].primitives[0].indices", "UNSIGNED_INT"],
    );
    expect_field_errors(&[
        (
            "texcoord_uint",
            "/accessors/1/componentType",
            5125.into(),
            &["attributes.TEXCOORD_0", "TEXCOORD_0 must be Vec2"],
        ),
        (
            "texcoord_not_normalized",
            "/accessors/1/componentType",
            5121.into(),
            &["attributes.TEXCOORD_0", "not normalized"],
        ),
        (
            "position_vec2",
            "/accessors/0/type",
            "VEC2".into(),
            &["attributes.POSITION", "POSITION must be Vec3"],
        ),
        (
            "indices_vec2",
            "/accessors/2/type",
            "VEC2".into(),
            &["primitives[0].indices", "SCALAR"],
        ),
    ]);
}

/// `doc` with a TEXCOORD_1 attribute: the positions' view read as VEC2 ((0, 0), (0, 1),
/// (0, 0)).
fn with_texcoord1(doc: &mut serde_json::Value) {
    doc["accessors"]
        .as_array_mut()
        .expect("accessors")
        .push(serde_json::json!(
            {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC2"}));
    doc["meshes"][0]["primitives"][0]["attributes"]["TEXCOORD_1"] = 3.into();
}

#[test]
fn a_material_samples_the_uv_set_of_its_first_texture() {
    // Base colour on TEXCOORD_1, occlusion on TEXCOORD_0: the set samples TEXCOORD_1 (the
    // positions' view read as VEC2: (0, 0), (0, 1), (0, 0)) and the occlusion is left out.
    let dir = temp_dir("gltf-uv-sets");
    let mut doc = triangle_gltf();
    with_texcoord1(&mut doc);
    doc["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"]["texCoord"] = 1.into();
    doc["materials"][0]["occlusionTexture"] = serde_json::json!({"index": 0});
    let scene = import(&dir, "uv_sets", &doc).expect("imports");
    let textures = &scene.materials[0].textures;
    assert_eq!(textures.uv_set(), 1);
    assert!(textures.base_color.is_some() && textures.occlusion.is_none());
    assert!(
        scene
            .warnings
            .iter()
            .any(|w| w.contains("occlusion texture samples TEXCOORD_0")),
        "{:?}",
        scene.warnings
    );
    let uvs: Vec<[f32; 2]> = scene.meshes[0].primitives[0]
        .vertices
        .iter()
        .map(|v| v.uv)
        .collect();
    assert_eq!(uvs, [[0.0, 0.0], [0.0, 1.0], [0.0, 0.0]]);
}

/// What a mesh carries that the renderer does not use is said: a textured material
/// without its UV set, vertex colours, morph targets; KHR_texture_transform's `texCoord`
/// replaces the slot's.
#[test]
fn unused_mesh_data_is_named_and_transform_uv_sets_apply() {
    let dir = temp_dir("gltf-unused");
    let mut doc = triangle_gltf();
    let prim = &mut doc["meshes"][0]["primitives"][0];
    prim["attributes"]["COLOR_0"] = 0.into();
    prim["targets"] = serde_json::json!([{"POSITION": 0}]);
    prim["attributes"]
        .as_object_mut()
        .expect("attributes")
        .remove("TEXCOORD_0");
    let scene = import(&dir, "unused", &doc).expect("imports");
    for needle in [
        "COLOR_0",
        "morph targets",
        "TEXCOORD_0, which it does not have",
    ] {
        assert!(
            scene.warnings.iter().any(|w| w.contains(needle)),
            "{needle}: {:?}",
            scene.warnings
        );
    }
    // texCoord 1 through the transform: the set samples TEXCOORD_1 (here the positions'
    // view read as VEC2).
    let mut doc = triangle_gltf();
    with_texcoord1(&mut doc);
    doc["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"]["extensions"] =
        serde_json::json!({"KHR_texture_transform": {"texCoord": 1}});
    doc["extensionsUsed"] = serde_json::json!(["KHR_texture_transform"]);
    let scene = import(&dir, "transform_uv", &doc).expect("imports");
    assert_eq!(scene.materials[0].textures.uv_set(), 1);
    assert!(scene.warnings.is_empty(), "{:?}", scene.warnings);
}

/// A one-triangle glTF whose attributes are stored as `KHR_mesh_quantization` allows:
/// POSITION i16 (stride 8), NORMAL normalised i8 (stride 4), TANGENT normalised i16,
/// TEXCOORD_0 u16, all integers as they are but the normalised ones.
fn quantized_triangle_gltf() -> serde_json::Value {
    let mut buf = Vec::new();
    for p in [[0i16, 0, 0], [1000, 0, 0], [0, -1000, 0]] {
        p.iter()
            .chain(&[0])
            .for_each(|c| buf.extend(c.to_le_bytes()));
    }
    for n in [[0i8, 0, 127], [0, 127, 0], [0, 0, -128]] {
        n.iter()
            .chain(&[0])
            .for_each(|c| buf.extend(c.to_le_bytes()));
    }
    for _ in 0..3 {
        [32767i16, 0, 0, -32767]
            .iter()
            .for_each(|c| buf.extend(c.to_le_bytes()));
    }
    for uv in [[0u16, 0], [2, 0], [0, 3]] {
        uv.iter().for_each(|c| buf.extend(c.to_le_bytes()));
    }
    for i in [0u16, 1, 2, 0] {
        buf.extend(i.to_le_bytes());
    }
    let b64 = base64::engine::general_purpose::STANDARD.encode(&buf);
    serde_json::json!({
        "asset": {"version": "2.0"},
        "extensionsUsed": ["KHR_mesh_quantization"],
        "extensionsRequired": ["KHR_mesh_quantization"],
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{
            "attributes": {"POSITION": 0, "NORMAL": 1, "TANGENT": 2, "TEXCOORD_0": 3},
            "indices": 4}]}],
        "buffers": [{"byteLength": buf.len(),
                     "uri": format!("data:application/octet-stream;base64,{b64}")}],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 24, "byteStride": 8},
            {"buffer": 0, "byteOffset": 24, "byteLength": 12, "byteStride": 4},
            {"buffer": 0, "byteOffset": 36, "byteLength": 24},
            {"buffer": 0, "byteOffset": 60, "byteLength": 12},
            {"buffer": 0, "byteOffset": 72, "byteLength": 6}],
        "accessors": [
            {"bufferView": 0, "componentType": 5122, "count": 3, "type": "VEC3",
             "min": [0, -1000, 0], "max": [1000, 0, 0]},
            {"bufferView": 1, "componentType": 5120, "normalized": true, "count": 3,
             "type": "VEC3"},
            {"bufferView": 2, "componentType": 5122, "normalized": true, "count": 3,
             "type": "VEC4"},
            {"bufferView": 3, "componentType": 5123, "count": 3, "type": "VEC2"},
            {"bufferView": 4, "componentType": 5123, "count": 3, "type": "SCALAR"}]
    })
}

#[test]
fn quantized_attributes_import_as_their_values() {
    let dir = temp_dir("gltf-quantized");
    let scene = import(&dir, "quantized", &quantized_triangle_gltf()).expect("imports");
    let vertices = &scene.meshes[0].primitives[0].vertices;
    let got: Vec<_> = vertices
        .iter()
        .map(|v| (v.position, v.normal, v.tangent, v.uv))
        .collect();
    assert_eq!(
        got,
        [
            (
                [0.0, 0.0, 0.0],
                [0.0, 0.0, 1.0],
                [1.0, 0.0, 0.0, -1.0],
                [0.0, 0.0]
            ),
            (
                [1000.0, 0.0, 0.0],
                [0.0, 1.0, 0.0],
                [1.0, 0.0, 0.0, -1.0],
                [2.0, 0.0]
            ),
            // −128 of a normalised i8 is −1, as −127.
            (
                [0.0, -1000.0, 0.0],
                [0.0, 0.0, -1.0],
                [1.0, 0.0, 0.0, -1.0],
                [0.0, 3.0]
            ),
        ]
    );
    // The same attributes without the extension are refused, naming it.
    expect_gltf_error(
        "quantized_without_extension",
        |d| {
            *d = quantized_triangle_gltf();
            d.as_object_mut().expect("object").remove("extensionsUsed");
            d.as_object_mut()
                .expect("object")
                .remove("extensionsRequired");
        },
        &[
            "attributes.POSITION",
            "Vec3 of F32",
            "KHR_mesh_quantization",
        ],
    );
    // Normals must be normalised even with it.
    expect_gltf_error(
        "quantized_normal_not_normalized",
        |d| {
            *d = quantized_triangle_gltf();
            d["accessors"][1]["normalized"] = false.into();
        },
        &["attributes.NORMAL", "not normalized"],
    );
}

#[test]
fn strides_and_bounds() {
    expect_field_errors(&[
        (
            "stride_short",
            "/bufferViews/0/byteStride",
            4.into(),
            &[
                "accessors[0]",
                "byteStride 4 is shorter than the 12-byte element",
            ],
        ),
        // Longer than its buffer: was silently dropped (a quad imported as one triangle).
        (
            "indices_long",
            "/accessors/2/count",
            6.into(),
            &["accessors[2]", "run past the end of its buffer view"],
        ),
        // Other overruns read as "has no POSITION attribute".
        (
            "position_offset",
            "/accessors/0/byteOffset",
            12.into(),
            &["accessors[0]", "run past the end"],
        ),
        (
            "view_past_buffer",
            "/bufferViews/1/byteLength",
            400.into(),
            &["bufferViews[1]", "outside buffer 0"],
        ),
        (
            "count_zero",
            "/accessors/1/count",
            0.into(),
            &["accessors[1].count", "must be at least 1"],
        ),
        (
            "partial_triangle",
            "/accessors/2/count",
            2.into(),
            &["primitives[0].indices", "multiple of 3"],
        ),
        (
            "counts_differ",
            "/accessors/1/count",
            2.into(),
            &["attributes", "has 2 elements but"],
        ),
        // A count past its data is named as such, not as the mismatch it makes.
        (
            "position_long",
            "/accessors/0/count",
            4.into(),
            &["accessors[0]", "run past the end of its buffer view"],
        ),
    ]);
    expect_gltf_error(
        "no_view",
        |d| {
            d["accessors"][1]
                .as_object_mut()
                .expect("object")
                .remove("bufferView");
        },
        &["accessors[1].bufferView", "required value missing"],
    );
}

#[test]
fn image_sources() {
    expect_field_errors(&[
        (
            "image_none",
            "/images/0",
            serde_json::json!({}),
            &["images[0]", "neither uri nor bufferView"],
        ),
        (
            "image_no_mime",
            "/images/0",
            serde_json::json!({"bufferView": 0}),
            &["images[0]", "needs a mimeType"],
        ),
        (
            "image_both",
            "/images/0",
            serde_json::json!({"bufferView": 0, "uri": "a.png", "mimeType": "image/png"}),
            &["images[0]", "both uri and bufferView"],
        ),
    ]);
}

#[test]
fn non_finite_numbers_name_their_place() {
    expect_field_errors(&[
        (
            "factor_inf",
            "/materials/0/pbrMetallicRoughness/baseColorFactor",
            serde_json::json!([1e39, 1, 1, 1]),
            &[
                "materials[0].pbrMetallicRoughness.baseColorFactor[0]",
                "not a finite number",
            ],
        ),
        (
            "roughness_inf",
            "/materials/0/pbrMetallicRoughness/roughnessFactor",
            serde_json::json!(1e39),
            &["roughnessFactor", "not a finite number"],
        ),
        (
            "node_inf",
            "/nodes/0/translation",
            serde_json::json!([0, -1e39, 0]),
            &["nodes[0].translation[1]"],
        ),
    ]);
    let nan = triangle_bytes([0.0, 0.0, 0.0, f32::NAN, 0.0, 0.0, 0.0, 1.0, 0.0]);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&nan);
    expect_gltf_error(
        "position_nan",
        |d| d["buffers"][0]["uri"] = format!("data:application/octet-stream;base64,{b64}").into(),
        &["accessors[0]", "POSITION", "element 1", "not finite"],
    );
    expect_gltf_error(
        "camera_fov",
        |d| {
            d["cameras"] = serde_json::json!([{"type": "perspective", "perspective": {"yfov": 0, "znear": 0.1}}]);
            d["nodes"][0]["camera"] = 0.into();
        },
        &["cameras[0].perspective.yfov"],
    );
}

#[test]
fn uris_stay_in_the_scene_folder() {
    let root = temp_dir("uris");
    let scene_dir = root.join("scene");
    let outside = root.join("elsewhere");
    std::fs::create_dir_all(&scene_dir).expect("dir");
    std::fs::create_dir_all(&outside).expect("dir");
    let buf = triangle_bytes([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    std::fs::write(outside.join("data.bin"), &buf).expect("write");
    let mut doc = triangle_gltf();
    doc["buffers"][0]["uri"] = "../elsewhere/data.bin".into();
    let e = import_error(&scene_dir, "outside", &doc);
    assert!(
        e.contains("outside.gltf")
            && e.contains("buffers[0].uri")
            && e.contains("outside the scene's folder"),
        "{e}"
    );
    // An absolute path and a file: URI are refused too.
    doc["buffers"][0]["uri"] = s(&outside.join("data.bin")).into();
    let e = import_error(&scene_dir, "absolute", &doc);
    assert!(e.contains("outside the scene's folder"), "{e}");
    doc["buffers"][0]["uri"] = "file:///etc/passwd".into();
    let e = import_error(&scene_dir, "scheme", &doc);
    assert!(e.contains("scheme `file:`"), "{e}");
    // A link inside the folder that leads out of it is resolved before the check.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.join("data.bin"), scene_dir.join("link.bin"))
            .expect("symlink");
        doc["buffers"][0]["uri"] = "link.bin".into();
        let e = import_error(&scene_dir, "link", &doc);
        assert!(e.contains("outside the scene's folder"), "{e}");
    }
    // Image URIs too.
    let mut doc = triangle_gltf();
    doc["images"][0]["uri"] = "../../../etc/passwd".into();
    let e = import_error(&scene_dir, "image_out", &doc);
    assert!(e.contains("images[0].uri"), "{e}");

    // The policy's extra folders, and a description's `asset_folders`, allow them.
    let mut doc = triangle_gltf();
    doc["buffers"][0]["uri"] = "../elsewhere/data.bin".into();
    let path = scene_dir.join("allowed.gltf");
    std::fs::write(&path, serde_json::to_vec(&doc).expect("json")).expect("write");
    let policy = UriPolicy {
        extra_roots: vec![outside.clone()],
        anywhere: false,
    };
    gltf_import::load_with(&path, &policy).expect("allowed folder");
    let toml = scene_dir.join("allowed.toml");
    std::fs::write(
        &toml,
        "gltf = \"allowed.gltf\"\nasset_folders = [\"../elsewhere\"]\n",
    )
    .expect("write");
    neurotex::open::open(Some(&toml)).expect("asset_folders allows it");
}

#[test]
fn garbage_and_truncated_glb_are_errors() {
    let dir = temp_dir("glb");
    // A GLB whose declared length is below the header's 12 bytes (found by fuzzing: the
    // gltf crate subtracted unchecked).
    let short: &[u8] = b"glTF\x02lTF\x02\0\0\0io\0\0\0ion\"? \"2.}";
    for (name, bytes) in [
        ("empty.glb", Vec::new()),
        ("magic.glb", b"glTF\x02\0\0\0\xff\xff\xff\xff".to_vec()),
        ("text.gltf", b"{\"asset\":".to_vec()),
        ("short.glb", short.to_vec()),
        (
            "length.glb",
            b"glTF\x02\0\0\0\x04\0\0\0\0\0\0\0JSON".to_vec(),
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, &bytes).expect("write");
        let e = Scene::load(&path).expect_err(name).to_string();
        assert!(e.contains(name), "{e}");
    }
}

// ---------------------------------------------------------------------------------------
// Scene descriptions
// ---------------------------------------------------------------------------------------

fn description_error(name: &str, text: &str, needles: &[&str]) {
    let (_, path) = temp_file(&format!("toml-{name}"), &format!("{name}.toml"), text);
    let e = LoadedDescription::load(&path).expect_err(name).to_string();
    assert!(e.contains(&format!("{name}.toml")), "{e}");
    for n in needles {
        assert!(e.contains(n), "{name}: `{n}` missing from: {e}");
    }
}

#[test]
fn description_numbers_must_be_finite() {
    let key = |t: &str| format!("{{ time = {t}, position = [0, 1, 2], target = [0, 0, 0] }}");
    description_error(
        "time_nan",
        &format!(
            "builtin = \"toyshop\"\n[[camera_paths]]\nname = \"p\"\nkeys = [{}, {}]\n",
            key("nan"),
            key("1.0")
        ),
        &["camera path `p` key 0 time", "not a finite number"],
    );
    description_error(
        "exposure",
        "builtin = \"toyshop\"\n[lighting]\nexposure = inf\n",
        &["lighting.exposure"],
    );
    description_error(
        "sun",
        "builtin = \"toyshop\"\n[lighting]\nsun_direction = [0, nan, 1]\n",
        &["lighting.sun_direction[1]"],
    );
    description_error(
        "sky",
        "builtin = \"toyshop\"\n[lighting]\nsky_color = [0, 0, -inf]\n",
        &["lighting.sky_color[2]"],
    );
    description_error(
        "target",
        "builtin = \"toyshop\"\n[[camera_paths]]\nname = \"q\"\nkeys = [{ time = 0.0, position = [0, 1, 2], target = [0, nan, 0] }]\n",
        &["camera path `q` key 0 target[1]"],
    );
    description_error(
        "fov",
        "builtin = \"toyshop\"\n[[camera_paths]]\nname = \"r\"\nkeys = [{ time = 0.0, position = [0, 1, 2], target = [0, 0, 0], fov_deg = 0 }]\n",
        &["fov_deg", "outside (0, 180)"],
    );
}

#[test]
fn description_size_uses_the_size_check() {
    for (name, size) in [("zero", "[0, 720]"), ("huge", "[100000, 10]")] {
        description_error(
            name,
            &format!("builtin = \"toyshop\"\n[render]\nsize = {size}\n"),
            &["render.size", "1..=16384"],
        );
    }
    description_error(
        "texsize",
        "builtin = \"toyshop\"\n[render]\nbuiltin_texture_size = 0\n",
        &["builtin_texture_size"],
    );
}

#[test]
fn sampling_a_path_never_panics() {
    let key = |time: f32, x: f32| CameraKey {
        time,
        position: [x, 1.0, 2.0],
        target: [0.0, 0.0, 0.0],
        fov_deg: 50.0,
    };
    // Built in code (not loaded), so unchecked: NaN times and decreasing keys.
    let path = CameraPath {
        name: "p".into(),
        keys: vec![key(f32::NAN, 0.0), key(2.0, 1.0), key(1.0, 2.0)],
    };
    for t in [f32::NAN, f32::INFINITY, -1.0, 0.5, 3.0] {
        let _ = path.sample(t);
    }
    let ok = CameraPath {
        name: "q".into(),
        keys: vec![key(0.0, 0.0), key(1.0, 1.0)],
    };
    let c = ok.sample(f32::NAN).expect("camera");
    assert!(c.position.is_finite());
}

// ---------------------------------------------------------------------------------------
// Images and texture sets
// ---------------------------------------------------------------------------------------

/// An 8-bit gray PNG of `w × h`.
fn gray_png(w: u32, h: u32) -> Vec<u8> {
    use image::ImageEncoder as _;
    let mut out = Vec::new();
    let img = image::GrayImage::from_fn(w, h, |x, y| image::Luma([((x * 7 + y * 3) % 256) as u8]));
    image::codecs::png::PngEncoder::new_with_quality(
        &mut out,
        image::codecs::png::CompressionType::Best,
        image::codecs::png::FilterType::NoFilter,
    )
    .write_image(img.as_raw(), w, h, image::ExtendedColorType::L8)
    .expect("encode");
    out
}

fn embedded(name: &str, bytes: Vec<u8>) -> ImageSource {
    ImageSource::Embedded {
        name: name.into(),
        bytes: Arc::from(bytes),
    }
}

fn set_of(base: ImageSource, mr: ImageSource) -> TextureSetDesc {
    TextureSetDesc {
        base_color: Some(base),
        normal: None,
        metallic_roughness: Some(mr),
        occlusion: None,
        emissive: None,
        occlusion_from_arm: false,
    }
}

#[test]
fn disagreeing_image_sizes_are_refused_before_decoding() {
    // 16384×1 and 1×16384: a few hundred bytes of PNG that used to become a 16384²
    // 12-channel set (3 GiB) and abort render, cluster, compress and view.
    let a = gray_png(16384, 1);
    let b = gray_png(1, 16384);
    assert!(a.len() + b.len() < 4000, "{} + {} bytes", a.len(), b.len());
    let set = set_of(embedded("wide.png", a), embedded("tall.png", b));
    let e = set.load(&LoadOptions::default()).expect_err("mismatch");
    assert!(matches!(e, TextureError::SizeMismatch { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("wide.png") && msg.contains("tall.png") && msg.contains("16384×16384"),
        "{msg}"
    );
    // Within the bounded factor they are resampled to the larger size.
    let set = set_of(
        embedded("a.png", gray_png(64, 64)),
        embedded("b.png", gray_png(8, 8)),
    );
    let loaded = set.load(&LoadOptions::default()).expect("8× is resampled");
    assert_eq!((loaded.set.width, loaded.set.height), (64, 64));
}

#[test]
fn image_headers_are_checked_against_the_data_and_the_budget() {
    // A 16384² header in front of a few bytes of data: refused from the header.
    let mut png = gray_png(1, 1);
    png[16..20].copy_from_slice(&16384u32.to_be_bytes());
    png[20..24].copy_from_slice(&16384u32.to_be_bytes());
    let crc = crc32fast::hash(&png[12..29]);
    png[29..33].copy_from_slice(&crc.to_be_bytes());
    let e = texture::decode(&embedded("bomb.png", png)).expect_err("bomb");
    let msg = e.to_string();
    assert!(
        msg.contains("bomb.png") && msg.contains("16384×16384"),
        "{msg}"
    );
}

// ---------------------------------------------------------------------------------------
// Manifests
// ---------------------------------------------------------------------------------------

const MANIFEST_HEADER: &str = "set_id,category,paper_category,basecolor,normal,resolution,alpha,roughness_const,metallic_const,license\n";

#[test]
fn manifest_rows_must_be_unique_and_name_an_image() {
    let (dir, path) = temp_file(
        "manifest",
        "dup.csv",
        format!("{MANIFEST_HEADER}a,W,W,x.jpg,,1,0,0.5,0,CC0\na,W,W,y.jpg,,1,0,0.5,0,CC0\n"),
    );
    let e = texture::read_manifest(&path).expect_err("dup").to_string();
    assert!(
        e.contains("dup.csv") && e.contains("row 3") && e.contains("row 2") && e.contains("set_id"),
        "{e}"
    );
    let path = dir.join("empty_row.csv");
    std::fs::write(&path, format!("{MANIFEST_HEADER}a,W,W,,,1,0,0.5,0,CC0\n")).expect("write");
    let e = texture::read_manifest(&path)
        .expect_err("empty")
        .to_string();
    assert!(
        e.contains("empty_row.csv") && e.contains("names no image"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------
// Packages
// ---------------------------------------------------------------------------------------

/// A valid one-material package (16² texture, untrained decoder) as bytes.
fn small_package_bytes() -> Vec<u8> {
    use neurotex::ntc::NtcConfig;
    use neurotex::ntc::model::{GroupModel, LatentLayout, full_mip_count};
    use neurotex::ntc::train::{Quality, TrainedGroup, TrainedMaterial};
    let config = NtcConfig {
        features: 4,
        hidden: vec![8],
        ..NtcConfig::default()
    };
    let layout = LatentLayout::new(
        16,
        16,
        full_mip_count(16, 16),
        config.preset,
        config.features,
    )
    .expect("layout");
    let model = GroupModel::init(&config, vec![layout], 1).expect("model");
    let group = TrainedGroup {
        model,
        materials: vec![TrainedMaterial {
            name: "brick".into(),
            present: texture::ChannelMask::BASE_COLOR,
            quality: Quality::default(),
        }],
        losses: Vec::new(),
    };
    let mut package = NtcPackage::new(config).expect("package");
    package
        .add_group(&group, &[[1.0; texture::CHANNELS]])
        .expect("group");
    package.to_bytes().expect("bytes")
}

/// Recompute the header and section checksums of a package file.
fn fix_checksums(bytes: &mut [u8]) {
    use neurotex::ntc::format::HEADER_LEN;
    let crc = crc32fast::hash(&bytes[..HEADER_LEN - 4]);
    bytes[HEADER_LEN - 4..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    let mut pos = HEADER_LEN;
    for _ in 0..4 {
        let len = u64::from_le_bytes(bytes[pos + 4..pos + 12].try_into().expect("8")) as usize;
        let crc = crc32fast::hash(&bytes[pos + 16..pos + 16 + len]);
        bytes[pos + 12..pos + 16].copy_from_slice(&crc.to_le_bytes());
        pos += 16 + len;
    }
}

#[test]
fn package_sizes_must_follow_from_its_data() {
    // The 17 KB package that declared a 16384² material over 4×4 latents: its width and
    // height patched after the name, checksums repaired.
    let mut bytes = small_package_bytes();
    let at = bytes
        .windows(5)
        .position(|w| w == b"brick")
        .expect("name in the table")
        + 5
        + 4;
    bytes[at..at + 4].copy_from_slice(&16384u32.to_le_bytes());
    bytes[at + 4..at + 8].copy_from_slice(&16384u32.to_le_bytes());
    fix_checksums(&mut bytes);
    let e = NtcPackage::from_bytes(&bytes)
        .expect_err("16384² over 4×4 latents")
        .to_string();
    assert!(e.contains("material 0"), "{e}");
}

#[test]
fn package_decode_and_upload_have_a_budget() {
    let package = NtcPackage::from_bytes(&small_package_bytes()).expect("valid");
    let needed = package.decode_bytes();
    assert!(needed > 16 * 16 * 48, "{needed}");
    package.check_decode_budget(needed).expect("fits exactly");
    let e = package.check_decode_budget(needed - 1).expect_err("over");
    assert!(
        e.to_string()
            .contains(&format!("needs {needed} bytes, limit {}", needed - 1))
    );
    let baked = package.upload_bytes(true);
    assert!(baked > package.upload_bytes(false));
    let e = package
        .check_upload_budget(true, 1000)
        .expect_err("over")
        .to_string();
    assert!(e.contains("baking") && e.contains("limit 1000"), "{e}");
}

// ---------------------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------------------

mod properties {
    use super::*;
    use neurotex::ntc::model::LatentBits;
    use neurotex::ntc::quant;
    use proptest::prelude::*;

    fn bits() -> impl Strategy<Value = LatentBits> {
        prop_oneof![
            Just(LatentBits::Two),
            Just(LatentBits::Four),
            Just(LatentBits::Eight)
        ]
    }

    /// `value` written by `to_bytes` reads back by `from_bytes` as itself, which writes the
    /// same bytes.
    fn round_trips<T: PartialEq + std::fmt::Debug, E: std::fmt::Debug, F: std::fmt::Debug>(
        value: &T,
        to_bytes: impl Fn(&T) -> Result<Vec<u8>, E>,
        from_bytes: impl Fn(&[u8]) -> Result<T, F>,
    ) -> Result<(), TestCaseError> {
        let bytes = to_bytes(value).expect("bytes");
        let back = from_bytes(&bytes).expect("reads back");
        prop_assert_eq!(&back, value);
        prop_assert_eq!(to_bytes(&back).expect("bytes"), bytes);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// A quantised value dequantises to the nearest level: within half a step of the
        /// clamped value, and quantising the level gives the same code.
        #[test]
        fn quantise_dequantise(v in -2.0f32..2.0, b in bits()) {
            let code = quant::quantize(v, b);
            prop_assert!(code <= quant::levels(b));
            let level = quant::dequantize(code, b);
            prop_assert!((level - v.clamp(-1.0, 1.0)).abs() <= quant::step(b) * 0.5 + 1e-6);
            prop_assert_eq!(quant::quantize(level, b), code);
        }

        /// Packing and unpacking latents gives the snapped values back, for any feature
        /// count the format allows.
        #[test]
        fn latents_pack_round_trip(
            texels in 1usize..8,
            features in prop_oneof![Just(4u32), Just(8), Just(12), Just(16)],
            b in bits(),
            seed in any::<u64>(),
        ) {
            let mut rng = neurotex::ntc::model::SplitMix64::new(seed);
            let values: Vec<f32> = (0..texels * features as usize)
                .map(|_| rng.uniform(-1.2, 1.2) as f32)
                .collect();
            let words = quant::pack_latents(&values, features, b).expect("pack");
            let back = quant::unpack_latents(&words, features, b).expect("unpack");
            let mut snapped = values.clone();
            quant::snap(&mut snapped, b);
            prop_assert_eq!(back, snapped);
        }

        /// A package of random materials writes and reads back unchanged.
        #[test]
        fn package_round_trip(
            sizes in proptest::collection::vec((1u32..40, 1u32..40), 1..4),
            seed in any::<u64>(),
        ) {
            use neurotex::ntc::model::{GroupModel, LatentLayout, full_mip_count};
            use neurotex::ntc::train::{Quality, TrainedGroup, TrainedMaterial};
            use neurotex::ntc::NtcConfig;
            let config = NtcConfig { features: 4, hidden: vec![8], ..NtcConfig::default() };
            let layouts = sizes
                .iter()
                .map(|&(w, h)| LatentLayout::new(w, h, full_mip_count(w, h), config.preset, 4).expect("layout"))
                .collect();
            let model = GroupModel::init(&config, layouts, seed).expect("model");
            let group = TrainedGroup {
                model,
                materials: sizes
                    .iter()
                    .enumerate()
                    .map(|(i, _)| TrainedMaterial {
                        name: format!("m{i}"),
                        present: texture::ChannelMask::ALL,
                        quality: Quality::default(),
                    })
                    .collect(),
                losses: Vec::new(),
            };
            let mut package = NtcPackage::new(config).expect("package");
            package
                .add_group(&group, &vec![[0.5; texture::CHANNELS]; sizes.len()])
                .expect("group");
            round_trips(&package, NtcPackage::to_bytes, NtcPackage::from_bytes)?;
        }

        /// A checkpoint (model, moments, losses) writes and reads back to the same bytes.
        #[test]
        fn checkpoint_round_trip(
            side in 1u32..24,
            step in 0u64..5,
            seed in any::<u64>(),
        ) {
            use neurotex::ntc::train::TrainConfig;
            use neurotex::ntc::train::checkpoint::Checkpoint;
            use neurotex::texture::{SetMip, TextureSet};
            let mut config = TrainConfig::default();
            config.model.features = 4;
            config.model.hidden = vec![8];
            let texels = vec![128u8; (side * side) as usize * texture::CHANNELS];
            let set = TextureSet::from_mip0("s", texture::ChannelMask::ALL, SetMip { width: side, height: side, texels });
            let mut c = Checkpoint::fresh(&[set], &config, 8, seed).expect("fresh");
            c.step = step;
            c.losses = (0..step).map(|i| 1.0 / (i + 1) as f64).collect();
            round_trips(&c, Checkpoint::to_bytes, Checkpoint::from_bytes)?;
        }

        /// Camera paths survive a description's TOML serialisation exactly, and every
        /// loaded path samples to finite cameras.
        #[test]
        fn camera_paths_serialise(
            keys in proptest::collection::vec(
                (0.0f32..10.0, prop::array::uniform3(-50.0f32..50.0), prop::array::uniform3(-50.0f32..50.0), 1.0f32..170.0),
                1..6),
            name in "[a-z][a-z0-9-]{0,11}",
        ) {
            let mut times: Vec<f32> = keys.iter().map(|k| k.0).collect();
            times.sort_by(f32::total_cmp);
            let path = CameraPath {
                name,
                keys: keys
                    .iter()
                    .zip(times)
                    .map(|(&(_, position, mut target, fov_deg), time)| {
                        if position == target {
                            target[0] += 1.0;
                        }
                        CameraKey { time, position, target, fov_deg }
                    })
                    .collect(),
            };
            let description = SceneDescription {
                builtin: Some(neurotex::scene::description::Builtin::Toyshop),
                camera_paths: vec![path.clone()],
                ..SceneDescription::default()
            };
            let text = toml::to_string(&description).expect("toml");
            let loaded = LoadedDescription::parse(&text, Path::new("p.toml")).expect("parses");
            prop_assert_eq!(&loaded.description.camera_paths[0], &path);
            for t in [0.0, path.duration() * 0.3, 1e9, -1e9] {
                let c = path.sample(t).expect("camera");
                prop_assert!(c.position.is_finite() && c.forward.is_finite());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------

/// Every normal-mapped primitive of a generated glTF carries TANGENT.
fn assert_tangents(gltf: &Path) {
    let doc = read_json(gltf);
    let materials = doc["materials"].as_array().expect("materials");
    let mut mapped = 0;
    for mesh in doc["meshes"].as_array().expect("meshes") {
        for p in mesh["primitives"].as_array().expect("primitives") {
            let m = p["material"].as_u64().expect("material") as usize;
            if materials[m].get("normalTexture").is_some() {
                mapped += 1;
                assert!(
                    p["attributes"].get("TANGENT").is_some(),
                    "{}: {p}",
                    gltf.display()
                );
            }
        }
    }
    assert!(
        mapped > 0,
        "no normal-mapped primitive in {}",
        gltf.display()
    );
}

#[test]
fn generated_scenes_carry_their_tangents() {
    let dir = temp_dir("gen-toyshop");
    let opts = neurotex::builtin::toyshop::ToyshopOptions {
        texture_size: 8,
        seed: 1,
    };
    let gltf = neurotex::builtin::toyshop::generate(&dir, &opts).expect("toy shop");
    assert_tangents(&gltf);
    Scene::load(&gltf).expect("the toy shop imports, validation included");

    let dir = temp_dir("gen-street");
    let opts = neurotex::builtin::street::StreetOptions {
        manifest: "../shared/assets/bistro_texture_sets/manifest.csv".into(),
        seed: 1,
    };
    let toml = neurotex::builtin::street::generate(&dir, &opts).expect("street");
    assert_tangents(&dir.join("street.gltf"));
    // Its images lie in the manifest's folder, which the description lists.
    neurotex::open::open(Some(&toml)).expect("the street imports");
}

#[test]
fn the_street_refuses_manifests_naming_missing_images() {
    let (dir, manifest) = temp_file(
        "gen-missing",
        "m.csv",
        format!("{MANIFEST_HEADER}a,W,W,gone_basecolor.jpg,,1,0,0.5,0,CC0\n"),
    );
    let opts = neurotex::builtin::street::StreetOptions { manifest, seed: 1 };
    let e = neurotex::builtin::street::generate(&dir.join("out"), &opts)
        .expect_err("missing image")
        .to_string();
    assert!(
        e.contains("m.csv") && e.contains("gone_basecolor.jpg") && e.contains("does not exist"),
        "{e}"
    );
    assert!(!dir.join("out/street.gltf").exists());
}

// ---------------------------------------------------------------------------------------
// Second round: every way of naming a scene, counts, inputs, stale work, silent
// acceptance, messages
// ---------------------------------------------------------------------------------------

/// A folder `scene/` holding `b.gltf` (its buffer `../elsewhere/data.bin`, a real buffer
/// outside the folder), `link.gltf` (its buffer `link.bin`, a link out of the folder),
/// `ok.gltf` (its buffer `ok.bin` beside it) and `plain.toml` (naming `b.gltf`).
fn scene_folder_with_escapes(name: &str) -> std::path::PathBuf {
    let root = temp_dir(name);
    let (scene, outside) = (root.join("scene"), root.join("elsewhere"));
    std::fs::create_dir_all(&scene).expect("dir");
    std::fs::create_dir_all(&outside).expect("dir");
    let buf = triangle_bytes([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    std::fs::write(outside.join("data.bin"), &buf).expect("write");
    std::fs::write(scene.join("ok.bin"), &buf).expect("write");
    let write = |file: &str, uri: &str| {
        let mut doc = triangle_gltf();
        doc["buffers"][0]["uri"] = uri.into();
        doc["images"] = serde_json::json!([]);
        doc["textures"] = serde_json::json!([]);
        doc["materials"] = serde_json::json!([{}]);
        std::fs::write(scene.join(file), serde_json::to_vec(&doc).expect("json")).expect("w");
    };
    write("b.gltf", "../elsewhere/data.bin");
    write("ok.gltf", "ok.bin");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.join("data.bin"), scene.join("link.bin"))
            .expect("symlink");
        write("link.gltf", "link.bin");
    }
    std::fs::write(scene.join("plain.toml"), "gltf = \"b.gltf\"\n").expect("write");
    scene
}

#[test]
fn uris_stay_in_the_folder_of_a_scene_named_without_one() {
    let scene = scene_folder_with_escapes("uris-bare");
    // Named without a folder, from the scene's folder: the current folder is the root.
    for name in ["b.gltf", "./b.gltf", "plain.toml", "link.gltf"] {
        if name == "link.gltf" && !cfg!(unix) {
            continue;
        }
        let args = ["import", "--scene", name];
        let line = failed(
            &args,
            run_in(&scene, &args, &[]),
            &["buffers[0].uri", "outside the scene's folder"],
        );
        assert!(line.contains(".gltf"), "{name}: {line}");
    }
    let args = ["import", "--scene", "ok.gltf"];
    succeeded(&args, run_in(&scene, &args, &[]));
    // `--allow-outside-uris` is the one way out.
    let args = ["import", "--allow-outside-uris", "--scene", "b.gltf"];
    succeeded(&args, run_in(&scene, &args, &[]));
    // In the library: a bare file name resolves against the current folder, so a URI
    // climbing to /etc/passwd is refused before anything is read.
    let mut doc = triangle_gltf();
    doc["buffers"][0]["uri"] = "../../../../../../../../../../etc/passwd".into();
    let bytes = serde_json::to_vec(&doc).expect("json");
    let e = gltf_import::from_slice(&bytes, Path::new("b.gltf"), &UriPolicy::default())
        .expect_err("passwd")
        .to_string();
    assert!(
        e.contains("b.gltf") && e.contains("outside the scene's folder"),
        "{e}"
    );
    // The parent of a bare name is the current folder, for the output policy too.
    assert_eq!(
        neurotex::outputs::resolve(Path::new("")),
        neurotex::outputs::resolve(Path::new("."))
    );
}

/// A manifest `m.csv` in `dir` with one row per image (`set_id` `s<i>`).
fn manifest_of(dir: &Path, images: &[&str]) -> std::path::PathBuf {
    let mut csv = MANIFEST_HEADER.to_string();
    for (i, image) in images.iter().enumerate() {
        csv.push_str(&format!("s{i},W,W,{image},,1,0,0.5,0,CC0\n"));
    }
    let path = dir.join("m.csv");
    std::fs::write(&path, csv).expect("manifest");
    path
}

#[test]
fn gen_scene_confines_and_checks_a_manifests_images() {
    // Images in the output folder itself: no `asset_folders = [""]`, and the street
    // renders from there under a bare name.
    let dir = temp_dir("gen-own-folder");
    crate::common::write_checker_png(&dir.join("a.png"), 8);
    manifest_of(&dir, &["a.png"]);
    for kind in ["street", "panel"] {
        let args = [
            "gen-scene",
            kind,
            "--out",
            ".",
            "--textures",
            "m.csv",
            "--force",
        ];
        succeeded(&args, run_in(&dir, &args, &[]));
        let toml = std::fs::read_to_string(dir.join(format!("{kind}.toml"))).expect("toml");
        assert!(!toml.contains("\"\""), "{kind}: {toml}");
        let args = ["import", "--scene", &format!("{kind}.toml")];
        succeeded(&args, run_in(&dir, &args, &[]));
    }

    // An image outside the manifest's folder is refused (its folder is not whitelisted).
    let root = temp_dir("gen-escape");
    let lib = root.join("lib");
    std::fs::create_dir_all(&lib).expect("dir");
    crate::common::write_checker_png(&root.join("outside.png"), 8);
    let m = manifest_of(&lib, &["../outside.png"]);
    let out = root.join("out");
    expect_error(
        &["gen-scene", "street", "--out", s(&out), "--textures", s(&m)],
        &["outside.png", "outside the manifest's folder"],
    );
    let m = manifest_of(&lib, &["../../../../../../../../../../etc/passwd"]);
    expect_error(
        &["gen-scene", "street", "--out", s(&out), "--textures", s(&m)],
        &["passwd", "outside the manifest's folder"],
    );
    assert!(!out.join("street.gltf").exists());

    // Files that are no PNG or JPEG: text, a GIF named .png, a truncated PNG.
    let mut png = Vec::new();
    crate::common::write_checker_png(&lib.join("whole.png"), 64);
    png.extend(std::fs::read(lib.join("whole.png")).expect("png"));
    std::fs::write(lib.join("cut.png"), &png[..png.len() / 2]).expect("write");
    std::fs::write(lib.join("text.png"), b"root:x:0:0:root:/root:/bin/bash\n").expect("w");
    std::fs::write(lib.join("gif.png"), b"GIF89a\x01\x00\x01\x00\x00\x00\x00;").expect("w");
    for bad in ["text.png", "gif.png", "cut.png"] {
        let m = manifest_of(&lib, &[bad]);
        for kind in ["street", "panel"] {
            expect_error(
                &["gen-scene", kind, "--out", s(&out), "--textures", s(&m)],
                &[bad, "not a usable image"],
            );
        }
    }
    assert!(!out.join("street.gltf").exists() && !out.join("panel.gltf").exists());
}

#[test]
fn counts_from_flags_are_bounded_before_anything_is_sized() {
    let (dir, manifest) = crate::common::checker_library("devices-huge");
    let out = dir.join("o.ntc");
    let eval_out = dir.join("eval");
    for devices in ["--devices=18446744073709551615", "--devices=1099511627776"] {
        for args in [
            vec![
                "compress",
                "--manifest",
                s(&manifest),
                "--out",
                s(&out),
                devices,
            ],
            vec![
                "eval",
                "--manifest",
                s(&manifest),
                "--m",
                "2",
                "--out",
                s(&eval_out),
                devices,
            ],
            vec!["view", devices],
        ] {
            expect_error(&args, &["--devices", "at most 256 devices"]);
        }
    }
    // Frame counts size the cameras of a sequence.
    for args in [
        vec!["bench", "--out", s(&dir), "--frames", "4294967295"],
        vec!["view", "--frames", "4294967295"],
    ] {
        expect_error(&args, &["--frames", "more than 100000"]);
    }
    assert!(!out.exists());
}

#[test]
fn every_file_a_command_reads_is_an_input() {
    let dir = temp_dir("inputs-protected");
    let buf = triangle_bytes([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    std::fs::write(dir.join("b.bin"), &buf).expect("write");
    crate::common::write_checker_png(&dir.join("base.png"), 8);
    let mut doc = triangle_gltf();
    doc["buffers"][0]["uri"] = "b.bin".into();
    let gltf = dir.join("b.gltf");
    std::fs::write(&gltf, serde_json::to_vec(&doc).expect("json")).expect("write");
    let toml = dir.join("plain.toml");
    std::fs::write(&toml, "gltf = \"b.gltf\"\n").expect("write");
    let before = |p: &Path| std::fs::read(p).expect("read");
    let (bin, gltf_bytes, png) = (
        before(&dir.join("b.bin")),
        before(&gltf),
        before(&dir.join("base.png")),
    );
    let bin_path = dir.join("b.bin");
    let png_path = dir.join("base.png");
    for scene in [&gltf, &toml] {
        let sc = s(scene);
        // Even with --force: the buffer, the glTF behind a description, an image.
        for args in [
            vec!["compress", "--force", "--scene", sc, "--out", s(&bin_path)],
            vec!["compress", "--force", "--scene", sc, "--out", s(&gltf)],
            vec!["cluster", "--force", "--scene", sc, "--out", s(&bin_path)],
            vec!["import", "--force", "--scene", sc, "--csv", s(&bin_path)],
            vec!["import", "--force", "--scene", sc, "--csv", s(&gltf)],
            vec![
                "view",
                "--force",
                "--scene",
                sc,
                "--frames",
                "1",
                "--screenshot",
                s(&png_path),
            ],
        ] {
            expect_error(&args, &["refusing to write", "inputs"]);
        }
    }
    // bench --trace: over an input even with --force, over any existing file without it,
    // over one of bench's own files.
    let report = dir.join("report");
    let existing = dir.join("trace.json");
    std::fs::write(&existing, b"keep").expect("write");
    let own = report.join("bench.json");
    for (force, trace, why) in [
        (true, &png_path, "inputs"),
        (false, &existing, "--force"),
        (false, &own, "two outputs"),
    ] {
        let mut args = vec![
            "bench",
            "--scene",
            s(&gltf),
            "--out",
            s(&report),
            "--trace",
            s(trace),
        ];
        if force {
            args.push("--force");
        }
        expect_error(&args, &[why]);
    }
    assert_eq!(before(&bin_path), bin);
    assert_eq!(before(&gltf), gltf_bytes);
    assert_eq!(before(&png_path), png);
    assert_eq!(before(&existing), b"keep");
}

#[test]
fn traces_are_written_through_a_unique_temporary_file() {
    let dir = temp_dir("trace-tmp");
    let path = dir.join("t.json");
    // A leftover of the old fixed temporary name is neither read nor clobbered.
    std::fs::write(dir.join("t.json.tmp"), b"someone else's").expect("write");
    neurotex::io::write_atomic_with(&path, |tmp| {
        assert_ne!(tmp, dir.join("t.json.tmp"));
        std::fs::write(tmp, b"{}")
    })
    .expect("write");
    assert_eq!(std::fs::read(&path).expect("read"), b"{}");
    assert_eq!(
        std::fs::read(dir.join("t.json.tmp")).expect("read"),
        b"someone else's"
    );
    // A failing writer leaves no temporary behind and the old file in place.
    let err = neurotex::io::write_atomic_with(&path, |tmp| {
        std::fs::write(tmp, b"half")?;
        Err(std::io::Error::other("disk full"))
    });
    assert!(err.is_err());
    assert_eq!(std::fs::read(&path).expect("read"), b"{}");
    assert_eq!(std::fs::read_dir(&dir).expect("ls").count(), 2);
}

#[test]
fn unusable_values_are_refused_not_replaced() {
    let (dir, manifest) = crate::common::checker_library("silent");
    // NEUROTEX_MEMORY_BUDGET that does not parse: an error for every command.
    for bad in ["8GB", "0", "-1", "lots"] {
        let args = ["import", "--manifest", s(&manifest)];
        failed(
            &args,
            crate::common::run_env(&args, &[("NEUROTEX_MEMORY_BUDGET", bad)]),
            &["NEUROTEX_MEMORY_BUDGET", bad],
        );
    }
    let args = ["import", "--manifest", s(&manifest)];
    succeeded(
        &args,
        crate::common::run_env(&args, &[("NEUROTEX_MEMORY_BUDGET", "512M")]),
    );
    // --target-psnr outside (0, 100) dB.
    let out = dir.join("o.ntc");
    for db in ["-5", "0", "1000", "NaN"] {
        let psnr = format!("--target-psnr={db}");
        expect_error(
            &[
                "compress",
                "--manifest",
                s(&manifest),
                "--out",
                s(&out),
                &psnr,
            ],
            &["--target-psnr", "between 0 and 100"],
        );
    }
    // --render-scale outside the viewer's range.
    for scale in ["NaN", "0", "5"] {
        let arg = format!("--render-scale={scale}");
        expect_error(&["view", &arg], &["--render-scale", "0.25 to 1"]);
    }
    // Toy-shop texture sides the generator cannot make: refused by the argument parser
    // with the range the generator takes.
    for side in ["1", "2", "6", "8192"] {
        expect_error(
            &[
                "gen-scene",
                "toyshop",
                "--out",
                s(&dir.join("toy")),
                "--texture-size",
                side,
            ],
            &["--texture-size", "4..=4096"],
        );
    }
    // render --package without an NTC mode would ignore the package.
    let package = dir.join("p.ntc");
    std::fs::write(&package, b"not read").expect("write");
    let rendered = dir.join("r.png");
    for extra in [&[][..], &["--mode", "reference"][..]] {
        let mut args = vec!["render", "--package", s(&package), "--out", s(&rendered)];
        args.extend_from_slice(extra);
        expect_error(&args, &["--package", "--mode"]);
    }
    assert!(!out.exists() && !rendered.exists());
}

#[test]
fn absurd_material_factors_matrices_and_versions() {
    expect_field_errors(&[
        (
            "base_color_huge",
            "/materials/0/pbrMetallicRoughness/baseColorFactor",
            serde_json::json!([1.0e30, 0.5, 0.5, 1.0]),
            &["baseColorFactor[0]", "outside 0..=1"],
        ),
        (
            "metallic_negative",
            "/materials/0/pbrMetallicRoughness/metallicFactor",
            (-3.0).into(),
            &["metallicFactor", "outside 0..=1"],
        ),
        (
            "roughness_big",
            "/materials/0/pbrMetallicRoughness/roughnessFactor",
            7.0.into(),
            &["roughnessFactor", "outside 0..=1"],
        ),
        (
            "emissive_big",
            "/materials/0/emissiveFactor",
            serde_json::json!([0.0, 1.0e20, 0.0]),
            &["emissiveFactor[1]", "outside 0..=1"],
        ),
        (
            "occlusion_strength",
            "/materials/0/occlusionTexture",
            serde_json::json!({"index": 0, "strength": 1.0e9}),
            &["occlusionTexture.strength", "outside 0..=1"],
        ),
        (
            "alpha_cutoff",
            "/materials/0/alphaCutoff",
            (-1.0).into(),
            &["alphaCutoff", "outside"],
        ),
        (
            "zero_matrix",
            "/nodes/0/matrix",
            serde_json::Value::from(vec![0.0; 16]),
            &["nodes[0].matrix", "not an affine transform"],
        ),
        (
            "version_one",
            "/asset/version",
            "1.0".into(),
            &["asset.version", "`1.0`"],
        ),
        (
            "version_three",
            "/asset/version",
            "3.0".into(),
            &["asset.version"],
        ),
        (
            "min_version",
            "/asset/minVersion",
            "1.0".into(),
            &["asset.minVersion"],
        ),
        // A file that needs a later glTF 2 than the reader's 2.0 says so.
        (
            "min_version_later",
            "/asset/minVersion",
            "2.1".into(),
            &["asset.minVersion", "`2.1`", "2.0"],
        ),
    ]);
    // What glTF allows still imports: the limits, a scaled and translated matrix.
    let dir = temp_dir("gltf-limits");
    let mut doc = triangle_gltf();
    doc["materials"][0]["pbrMetallicRoughness"]["baseColorFactor"] =
        serde_json::json!([1.0, 0.0, 1.0, 0.0]);
    doc["materials"][0]["alphaCutoff"] = 0.0.into();
    doc["asset"]["version"] = "2.1".into();
    doc["asset"]["minVersion"] = "2.0".into();
    doc["nodes"][0]["matrix"] = serde_json::json!([
        2.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 1.0, 2.0, 3.0, 1.0
    ]);
    import(&dir, "limits", &doc).expect("within glTF's ranges");
}

#[test]
fn long_lists_in_messages_are_capped() {
    use neurotex::ntc::shard::{LIST_CAP, ShardError, capped_list};
    let missing: Vec<(u32, Vec<usize>)> = (1..65536).map(|s| (s, vec![s as usize; 3])).collect();
    let e = ShardError::Missing {
        missing,
        count: 65536,
    }
    .to_string();
    assert!(e.len() < 600, "{} bytes: {}", e.len(), &e[..200]);
    assert!(
        e.contains("shard 1/65536") && e.contains("and 65527 more shards"),
        "{e}"
    );
    let many = capped_list((0..100).map(|i| i.to_string()), ", ", "groups");
    assert_eq!(many.matches(", ").count(), LIST_CAP - 1);
    assert!(many.ends_with("… and 92 more groups"), "{many}");
    assert_eq!(capped_list(["a".to_string()].into_iter(), ", ", "x"), "a");
}

#[test]
fn stale_cache_progress_never_blocks_a_render() {
    let (dir, gltf) = crate::common::checker_quad_of("cache-stale", 8);
    let cache = dir.join("cache");
    let out = dir.join("r.png");
    let render = || {
        let args = [
            "render",
            "--scene",
            s(&gltf),
            "--mode",
            "single",
            "--ntc-steps",
            "4",
            "--size",
            "16x12",
            "--out",
            s(&out),
            "--force",
        ];
        crate::common::run_env(&args, &[("NEUROTEX_CACHE", s(&cache))])
    };
    let (ok, _, stderr) = render();
    assert!(ok, "{stderr}");
    let package = stderr
        .lines()
        .find_map(|l| {
            l.split_once(" into ")
                .map(|(_, p)| std::path::PathBuf::from(p.trim()))
        })
        .unwrap_or_else(|| panic!("no package path in: {stderr}"));
    // A compression killed after an edit: the package gone, its progress of the scene as
    // it was (here a damaged marker) left behind.
    std::fs::remove_file(&package).expect("remove");
    let mut partial = package.clone().into_os_string();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    std::fs::create_dir_all(&partial).expect("dir");
    std::fs::write(
        partial.join("neurotex-partial.json"),
        b"{\"format\": \"neuro",
    )
    .expect("w");
    let (ok, _, stderr) = render();
    assert!(ok, "a stale partial folder blocked the render: {stderr}");
    assert!(package.is_file() && !partial.exists());
    // An edit of the glTF alone (a material factor) makes the package stale.
    let mut doc = read_json(&gltf);
    doc["materials"][0]["pbrMetallicRoughness"]["metallicFactor"] = 0.5.into();
    std::fs::write(&gltf, serde_json::to_vec(&doc).expect("json")).expect("edit");
    let (ok, _, stderr) = render();
    assert!(
        ok && stderr.contains("compressing the single package"),
        "{stderr}"
    );
}

#[test]
fn eval_parts_bound_their_counts_before_sizing_anything() {
    use neurotex::eval::study_shards::{EvalPart, PART_FILE, PartRun};
    use neurotex::ntc::shard::Shard;
    let part = |index: u32, count: u32, split: Vec<Vec<usize>>, runs: &[usize]| {
        let mut p = EvalPart {
            format: "neurotex-eval-part".into(),
            version: 1,
            plan: "p".into(),
            shard: Shard { index, count },
            split,
            runs: runs
                .iter()
                .map(|&run| PartRun {
                    run,
                    name: format!("run{run}"),
                    loaded: false,
                    blake3: "00".into(),
                })
                .collect(),
            checksum: String::new(),
        };
        p.seal();
        p
    };
    // Checksums that hold, counts that do not: refused before anything is sized.
    for (p, why) in [
        (part(0, u32::MAX, vec![vec![0]], &[0]), "out of range"),
        (part(0, 0, vec![], &[]), "out of range"),
        (part(3, 2, vec![vec![0], vec![1]], &[]), "out of range"),
        (part(0, 2, vec![vec![0]], &[0]), "a split into 1 shards"),
        (part(0, 2, vec![vec![0], vec![1]], &[1]), "lists runs [1]"),
    ] {
        let e = EvalPart::from_slice(&p.to_bytes()).unwrap_err();
        assert!(e.contains(why), "{why}: {e}");
    }
    let ok = part(1, 2, vec![vec![0, 2], vec![1]], &[1]);
    assert_eq!(EvalPart::from_slice(&ok.to_bytes()).expect("valid"), ok);
    // Unknown keys are errors, inside the shard too (the checksum, which covers only the
    // fields read, would hold).
    let mut extra: serde_json::Value = serde_json::from_slice(&ok.to_bytes()).expect("json");
    extra["shard"]["weight"] = 1.into();
    let e = EvalPart::from_slice(extra.to_string().as_bytes()).unwrap_err();
    assert!(e.contains("unknown field `weight`"), "{e}");
    // Through `eval --merge`: the file is named, nothing is written.
    let (dir, manifest) = crate::common::checker_library("eval-merge-huge");
    let shard = dir.join("shard0");
    std::fs::create_dir_all(&shard).expect("dir");
    std::fs::write(
        shard.join(PART_FILE),
        part(0, u32::MAX, vec![vec![0]], &[0]).to_bytes(),
    )
    .expect("write");
    let merged = dir.join("merged");
    expect_error(
        &[
            "eval",
            "--manifest",
            s(&manifest),
            "--m",
            "2",
            "--merge",
            s(&shard),
            "--out",
            s(&merged),
        ],
        &[PART_FILE, "out of range"],
    );
    assert!(!merged.exists());
}

#[test]
fn eval_never_writes_where_its_inputs_are_nor_reuses_runs_of_other_images() {
    let (dir, manifest) = crate::common::checker_library("eval-into-inputs");
    let before = std::fs::read(&manifest).expect("read");
    // The inputs' folder (or one above it), even with --resume and --force.
    for out in [dir.clone(), dir.join("..")] {
        expect_error(
            &[
                "eval",
                "--force",
                "--resume",
                "--manifest",
                s(&manifest),
                "--out",
                s(&out),
            ],
            &["refusing to write into", "sets.csv"],
        );
    }
    assert_eq!(std::fs::read(&manifest).expect("read"), before);
    // A run record names the images it was trained on: changed texels, another digest.
    let sets = vec![
        texture::TextureSet::neutral(),
        texture::TextureSet::neutral(),
    ];
    let digest = |sets: &[texture::TextureSet]| {
        neurotex::eval::EvalInputs {
            sets,
            categories: &[String::new(), String::new()],
            constants: &[[1.0; texture::CHANNELS]; 2],
            description: "",
            cooccurrence: None,
        }
        .digest()
    };
    let mut changed = sets.clone();
    changed[1].mips[0].texels[0] ^= 1;
    assert_eq!(digest(&sets), digest(&sets.clone()));
    assert_ne!(digest(&sets), digest(&changed));
}

#[test]
fn a_record_of_another_scene_is_refused() {
    let (dir, gltf) = crate::common::checker_quad_of("cooc-stale", 8);
    // A record whose digest of the glTF is not the glTF's (it was edited since).
    let record = dir.join("views.cooc.json");
    std::fs::write(
        &record,
        r#"{"format":"neurotex-cooccurrence","version":1,"source":{"scene":"quad.gltf","scene_files":[{"file":"quad.gltf","bytes":1,"crc32":0}],"set_names":["a"],"tile":"8x8","size":[16,16],"views":[{"kind":"path-sample","path":"p","time":0.0}]},"views":[{"signatures":[[[0],1]]}]}"#,
    )
    .expect("write");
    let plan = dir.join("plan.json");
    let eval_out = dir.join("eval");
    for command in ["cluster", "eval"] {
        let mut args = vec![
            command,
            "--scene",
            s(&gltf),
            "--cooccurrence",
            s(&record),
            "--strategies",
            "divergence-aware",
            "--out",
            s(&plan),
        ];
        if command == "cluster" {
            args[5] = "--strategy";
        } else {
            args[8] = s(&eval_out);
        }
        expect_error(&args, &["views.cooc.json", "quad.gltf", "record it anew"]);
    }
    assert!(!plan.exists());
}

#[test]
fn frame_sizes_are_checked_against_the_device_before_allocating() {
    use neurotex::render::check_frame_size;
    // Why a 16384² frame is refused.
    let refused = |limits: &wgpu::Limits| {
        check_frame_size(limits, (16384, 16384))
            .unwrap_err()
            .to_string()
    };
    let small = wgpu::Limits {
        max_texture_dimension_2d: 8192,
        ..wgpu::Limits::default()
    };
    let e = refused(&small);
    assert!(
        e.contains("16384x16384") && e.contains("largest texture side is 8192"),
        "{e}"
    );
    let short_buffers = wgpu::Limits {
        max_texture_dimension_2d: 16384,
        max_buffer_size: 256 << 20,
        ..wgpu::Limits::default()
    };
    let e = refused(&short_buffers);
    assert!(
        e.contains("1073741824 bytes") && e.contains("268435456"),
        "{e}"
    );
    assert!(check_frame_size(&short_buffers, (1920, 1080)).is_ok());
    // The shared adapter renders what it can hold, and says so before allocating what
    // it cannot.
    let limits = crate::common::ctx().device.limits();
    assert!(check_frame_size(&limits, (64, 48)).is_ok());
    let side = limits.max_texture_dimension_2d.saturating_add(1);
    assert!(check_frame_size(&limits, (side, 1)).is_err());
}

#[test]
fn a_plan_made_for_other_inputs_names_the_plan() {
    let (dir, manifest) = crate::common::checker_library("plan-other-inputs");
    let plan = dir.join("made-for-four.json");
    expect_ok(&[
        "cluster",
        "--manifest",
        s(&manifest),
        "--out",
        s(&plan),
        "--m",
        "2",
    ]);
    // Four other sets, and one set fewer.
    let text = std::fs::read_to_string(&manifest).expect("read");
    for i in 0..4 {
        crate::common::write_checker_png(&dir.join(format!("t{i}.png")), 8);
    }
    let other_sets = dir.join("other.csv");
    std::fs::write(&other_sets, text.replace("\ns", "\nt").replace(",s", ",t")).expect("write");
    let fewer = dir.join("fewer.csv");
    std::fs::write(&fewer, text.trim_end().rsplit_once('\n').expect("rows").0).expect("write");
    let out = dir.join("o.ntc");
    for (other, why) in [
        (&other_sets, "the plan says `s"),
        (&fewer, "made for 4 texture sets, given 3"),
    ] {
        expect_error(
            &[
                "compress",
                "--manifest",
                s(other),
                "--plan",
                s(&plan),
                "--out",
                s(&out),
                "--steps",
                "8",
            ],
            &["invalid plan", "made-for-four.json", why],
        );
    }
    assert!(!out.exists());
}

#[test]
fn a_finished_group_of_another_run_is_refused_on_resume() {
    let killed = crate::common::KilledQuadCompression::new("foreign-group");
    let (partial, resume) = (&killed.partial, killed.resume());
    // A well-formed package put in the place of group 0, without a seal and then with a
    // seal that is not this run's (the hash of the package alone).
    let package = small_package_bytes();
    std::fs::write(partial.join("group0.ntc"), &package).expect("write");
    expect_error(&resume, &["group0.ntc", "not group 0 as this run wrote it"]);
    std::fs::write(
        partial.join("group0.seal"),
        blake3::hash(&package).to_hex().as_bytes(),
    )
    .expect("write");
    expect_error(&resume, &["group0.ntc", "group0.seal", "does not match"]);
    assert!(!killed.ntc.exists());
}
