//! Hostile inputs, one class at a time (no GPU needed): each must give one error that
//! names the file and the problem, never a panic, never an allocation from an unchecked
//! size; plus property tests of the round trips (quantisation, packages, checkpoints,
//! camera paths).

use std::path::Path;
use std::sync::Arc;

use crate::common::{s, temp_dir};
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

/// Import `doc` after `edit`; expect an error naming the file and every needle.
fn expect_gltf_error(name: &str, edit: impl FnOnce(&mut serde_json::Value), needles: &[&str]) {
    let dir = temp_dir(&format!("gltf-{name}"));
    let mut doc = triangle_gltf();
    edit(&mut doc);
    let e = import(&dir, name, &doc).expect_err(name).to_string();
    assert!(e.contains(&format!("{name}.gltf")), "{name}: {e}");
    for n in needles {
        assert!(e.contains(n), "{name}: `{n}` missing from: {e}");
    }
    assert!(
        !e.contains("the glTF reader failed"),
        "{name}: caught a panic: {e}"
    );
}

#[test]
fn valid_triangle_imports() {
    let dir = temp_dir("gltf-ok");
    let scene = import(&dir, "ok", &triangle_gltf()).expect("imports");
    assert_eq!(scene.meshes[0].primitives[0].indices, vec![0, 1, 2]);
}

#[test]
fn accessor_indices_that_do_not_exist() {
    expect_gltf_error(
        "attribute_index",
        |d| d["meshes"][0]["primitives"][0]["attributes"]["POSITION"] = 9.into(),
        &[
            "meshes[0].primitives[0].attributes.POSITION",
            "accessor 9 does not exist",
        ],
    );
    expect_gltf_error(
        "normal_index",
        |d| d["meshes"][0]["primitives"][0]["attributes"]["NORMAL"] = 3.into(),
        &["attributes.NORMAL", "accessor 3 does not exist"],
    );
    expect_gltf_error(
        "indices_index",
        |d| d["meshes"][0]["primitives"][0]["indices"] = 7.into(),
        &["meshes[0].primitives[0].indices", "index out of bounds"],
    );
    expect_gltf_error(
        "view_index",
        |d| d["accessors"][1]["bufferView"] = 5.into(),
        &["accessors[1].bufferView", "index out of bounds"],
    );
    expect_gltf_error(
        "texture_source",
        |d| d["textures"][0]["source"] = 4.into(),
        &["textures[0].source", "index out of bounds"],
    );
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
    expect_gltf_error(
        "texcoord_uint",
        |d| d["accessors"][1]["componentType"] = 5125.into(),
        &["attributes.TEXCOORD_0", "TEXCOORD_0 must be Vec2"],
    );
    expect_gltf_error(
        "texcoord_not_normalized",
        |d| d["accessors"][1]["componentType"] = 5121.into(),
        &["attributes.TEXCOORD_0", "not normalized"],
    );
    expect_gltf_error(
        "position_vec2",
        |d| d["accessors"][0]["type"] = "VEC2".into(),
        &["attributes.POSITION", "POSITION must be Vec3"],
    );
    expect_gltf_error(
        "indices_vec2",
        |d| d["accessors"][2]["type"] = "VEC2".into(),
        &["primitives[0].indices", "SCALAR"],
    );
}

#[test]
fn strides_and_bounds() {
    expect_gltf_error(
        "stride_short",
        |d| d["bufferViews"][0]["byteStride"] = 4.into(),
        &[
            "accessors[0]",
            "byteStride 4 is shorter than the 12-byte element",
        ],
    );
    // Longer than its buffer: was silently dropped (a quad imported as one triangle).
    expect_gltf_error(
        "indices_long",
        |d| d["accessors"][2]["count"] = 6.into(),
        &["accessors[2]", "run past the end of its buffer view"],
    );
    // Other overruns read as "has no POSITION attribute".
    expect_gltf_error(
        "position_offset",
        |d| d["accessors"][0]["byteOffset"] = 12.into(),
        &["accessors[0]", "run past the end"],
    );
    expect_gltf_error(
        "view_past_buffer",
        |d| d["bufferViews"][1]["byteLength"] = 400.into(),
        &["bufferViews[1]", "outside buffer 0"],
    );
    expect_gltf_error(
        "count_zero",
        |d| d["accessors"][1]["count"] = 0.into(),
        &["accessor 1 has 0 elements"],
    );
    expect_gltf_error(
        "partial_triangle",
        |d| d["accessors"][2]["count"] = 2.into(),
        &["primitives[0].indices", "multiple of 3"],
    );
    expect_gltf_error(
        "counts_differ",
        |d| d["accessors"][1]["count"] = 2.into(),
        &["attributes", "has 2 elements but"],
    );
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
    expect_gltf_error(
        "image_none",
        |d| d["images"][0] = serde_json::json!({}),
        &["images[0]", "neither uri nor bufferView"],
    );
    expect_gltf_error(
        "image_no_mime",
        |d| d["images"][0] = serde_json::json!({"bufferView": 0}),
        &["images[0]", "needs a mimeType"],
    );
    expect_gltf_error(
        "image_both",
        |d| {
            d["images"][0] =
                serde_json::json!({"bufferView": 0, "uri": "a.png", "mimeType": "image/png"})
        },
        &["images[0]", "both uri and bufferView"],
    );
}

#[test]
fn non_finite_numbers_name_their_place() {
    expect_gltf_error(
        "factor_inf",
        |d| {
            d["materials"][0]["pbrMetallicRoughness"]["baseColorFactor"] =
                serde_json::json!([1e39, 1, 1, 1])
        },
        &[
            "materials[0].pbrMetallicRoughness.baseColorFactor[0]",
            "not a finite number",
        ],
    );
    expect_gltf_error(
        "roughness_inf",
        |d| d["materials"][0]["pbrMetallicRoughness"]["roughnessFactor"] = serde_json::json!(1e39),
        &["roughnessFactor", "not a finite number"],
    );
    expect_gltf_error(
        "node_inf",
        |d| d["nodes"][0]["translation"] = serde_json::json!([0, -1e39, 0]),
        &["nodes[0].translation[1]"],
    );
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
    let e = import(&scene_dir, "outside", &doc)
        .expect_err("outside")
        .to_string();
    assert!(
        e.contains("outside.gltf")
            && e.contains("buffers[0].uri")
            && e.contains("outside the scene's folder"),
        "{e}"
    );
    // An absolute path and a file: URI are refused too.
    doc["buffers"][0]["uri"] = s(&outside.join("data.bin")).into();
    let e = import(&scene_dir, "absolute", &doc)
        .expect_err("absolute")
        .to_string();
    assert!(e.contains("outside the scene's folder"), "{e}");
    doc["buffers"][0]["uri"] = "file:///etc/passwd".into();
    let e = import(&scene_dir, "scheme", &doc)
        .expect_err("scheme")
        .to_string();
    assert!(e.contains("scheme `file:`"), "{e}");
    // A link inside the folder that leads out of it is resolved before the check.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.join("data.bin"), scene_dir.join("link.bin"))
            .expect("symlink");
        doc["buffers"][0]["uri"] = "link.bin".into();
        let e = import(&scene_dir, "link", &doc)
            .expect_err("link")
            .to_string();
        assert!(e.contains("outside the scene's folder"), "{e}");
    }
    // Image URIs too.
    let mut doc = triangle_gltf();
    doc["images"][0]["uri"] = "../../../etc/passwd".into();
    let e = import(&scene_dir, "image_out", &doc)
        .expect_err("image")
        .to_string();
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
    let dir = temp_dir(&format!("toml-{name}"));
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("write");
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
    let dir = temp_dir("manifest");
    let path = dir.join("dup.csv");
    std::fs::write(
        &path,
        format!("{MANIFEST_HEADER}a,W,W,x.jpg,,1,0,0.5,0,CC0\na,W,W,y.jpg,,1,0,0.5,0,CC0\n"),
    )
    .expect("write");
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
            let bytes = package.to_bytes().expect("bytes");
            let back = NtcPackage::from_bytes(&bytes).expect("reads back");
            prop_assert_eq!(&back, &package);
            prop_assert_eq!(back.to_bytes().expect("bytes"), bytes);
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
            let bytes = c.to_bytes().expect("bytes");
            let back = Checkpoint::from_bytes(&bytes).expect("reads back");
            prop_assert_eq!(&back, &c);
            prop_assert_eq!(back.to_bytes().expect("bytes"), bytes);
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
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(gltf).expect("read")).expect("json");
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
    let dir = temp_dir("gen-missing");
    let manifest = dir.join("m.csv");
    std::fs::write(
        &manifest,
        format!("{MANIFEST_HEADER}a,W,W,gone_basecolor.jpg,,1,0,0.5,0,CC0\n"),
    )
    .expect("write");
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
