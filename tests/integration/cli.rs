//! Bad input through the real binary: each case must give one clear error that names the
//! file and the problem, a non-zero exit code, and no panic.

use std::path::{Path, PathBuf};

use crate::common::{
    KilledQuadCompression, checker_quad, expect_error, expect_ok, failed, json_array,
    kill_once_exists, quad_scene, read_json, run, run_env, s, temp_dir, temp_file,
    write_checker_png,
};

/// `neurotex cmd --scene scene --out out`, then `extra`.
fn scene_args<'a>(cmd: &'a str, scene: &'a Path, out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![cmd, "--scene", s(scene), "--out", s(out)];
    args.extend_from_slice(extra);
    args
}

/// Write `toml`, a scene description of `gltf` (in its folder), with `rest` after the
/// `gltf` key.
fn write_description(toml: &Path, gltf: &Path, rest: &str) {
    let name = gltf.file_name().unwrap();
    std::fs::write(toml, format!("gltf = {name:?}\n{rest}")).unwrap();
}

/// `neurotex import --scene scene`, which must fail with an `error:` line holding every
/// needle.
fn import_error(scene: &Path, needles: &[&str]) {
    expect_error(&["import", "--scene", s(scene)], needles);
}

#[test]
fn missing_scene_file() {
    let dir = temp_dir("missing");
    let scene = dir.join("nope.gltf");
    expect_error(
        &scene_args("render", &scene, &dir.join("o.png"), &[]),
        &["nope.gltf", "cannot read"],
    );
}

#[test]
fn corrupt_gltf_json() {
    let (_, scene) = temp_file(
        "corrupt",
        "broken.gltf",
        "{ \"asset\": { \"version\": \"2.0\" }, \"meshes\": [ ",
    );
    import_error(&scene, &["broken.gltf", "not a valid glTF"]);
}

#[test]
fn truncated_glb() {
    let dir = temp_dir("glb");
    let gltf = quad_scene(&dir, None);
    let json = std::fs::read(&gltf).unwrap();
    let bin = std::fs::read(dir.join("quad.bin")).unwrap();
    // Re-pack as GLB: the buffer's URI must go, the BIN chunk holds the data instead.
    let mut doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    doc["buffers"][0].as_object_mut().unwrap().remove("uri");
    let mut json = serde_json::to_vec(&doc).unwrap();
    while !json.len().is_multiple_of(4) {
        json.push(b' ');
    }
    let mut bin = bin;
    while !bin.len().is_multiple_of(4) {
        bin.push(0);
    }
    let total = 12 + 8 + json.len() + 8 + bin.len();
    let mut glb = Vec::new();
    glb.extend_from_slice(b"glTF");
    glb.extend_from_slice(&2u32.to_le_bytes());
    glb.extend_from_slice(&(total as u32).to_le_bytes());
    glb.extend_from_slice(&(json.len() as u32).to_le_bytes());
    glb.extend_from_slice(b"JSON");
    glb.extend_from_slice(&json);
    glb.extend_from_slice(&(bin.len() as u32).to_le_bytes());
    glb.extend_from_slice(b"BIN\0");
    glb.extend_from_slice(&bin);
    let good = dir.join("good.glb");
    std::fs::write(&good, &glb).unwrap();
    let stdout = expect_ok(&["import", "--scene", s(&good)]);
    assert!(stdout.contains("1 materials"), "{stdout}");
    let cut = dir.join("cut.glb");
    std::fs::write(&cut, &glb[..glb.len() - bin.len() / 2]).unwrap();
    import_error(&cut, &["cut.glb", "not a valid glTF"]);
}

#[test]
fn truncated_external_buffer() {
    let dir = temp_dir("shortbin");
    let gltf = quad_scene(&dir, None);
    let bin = dir.join("quad.bin");
    let bytes = std::fs::read(&bin).unwrap();
    std::fs::write(&bin, &bytes[..bytes.len() / 2]).unwrap();
    import_error(&gltf, &["quad.gltf", "truncated"]);
}

#[test]
fn unsupported_required_extension() {
    let dir = temp_dir("draco");
    let gltf = quad_scene(&dir, None);
    let mut doc = read_json(&gltf);
    doc["extensionsUsed"] = serde_json::json!(["KHR_draco_mesh_compression"]);
    doc["extensionsRequired"] = serde_json::json!(["KHR_draco_mesh_compression"]);
    std::fs::write(&gltf, serde_json::to_vec(&doc).unwrap()).unwrap();
    import_error(
        &gltf,
        &["quad.gltf", "KHR_draco_mesh_compression", "unsupported"],
    );
}

#[test]
fn undecodable_image() {
    let dir = temp_dir("badimg");
    let gltf = quad_scene(&dir, Some("bad.png"));
    std::fs::write(dir.join("bad.png"), b"\x89PNG\r\n\x1a\nthis is not a png").unwrap();
    expect_error(
        &scene_args("render", &gltf, &dir.join("o.png"), &["--size", "16x16"]),
        &["bad.png"],
    );
}

#[test]
fn missing_image_is_an_error_unless_allowed() {
    let dir = temp_dir("noimg");
    let gltf = quad_scene(&dir, Some("gone.png"));
    let out = dir.join("o.png");
    expect_error(
        &scene_args("render", &gltf, &out, &["--size", "16x16"]),
        &["gone.png"],
    );
    assert!(!out.exists());
    let (ok, stdout, stderr) = run(&scene_args(
        "render",
        &gltf,
        &out,
        &["--size", "16x16", "--allow-missing-textures"],
    ));
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("missing texture") && stdout.contains("gone.png"),
        "{stdout}"
    );
    assert!(out.exists());
}

#[test]
fn scene_description_errors() {
    let dir = temp_dir("toml");
    let gltf = quad_scene(&dir, None);
    let toml = dir.join("scene.toml");
    write_description(&toml, &gltf, "fov = 3\n");
    import_error(&toml, &["scene.toml", "unknown field", "fov"]);
    write_description(&toml, &gltf, "[render]\nsize = \"big\"\n");
    import_error(&toml, &["scene.toml", "invalid type", "size"]);
    std::fs::write(&toml, "gltf = \"elsewhere.gltf\"\n").unwrap();
    import_error(&toml, &["elsewhere.gltf", "cannot read"]);
}

#[test]
fn bad_arguments() {
    let dir = temp_dir("args");
    expect_error(
        &["render", "--out", s(&dir.join("o.png")), "--size", "12by7"],
        &["12by7"],
    );
    let gltf = quad_scene(&dir, None);
    expect_error(
        &scene_args(
            "render",
            &gltf,
            &dir.join("o.png"),
            &["--camera", "nowhere"],
        ),
        &["nowhere", "no camera"],
    );
}

/// `import` lists the cameras `--camera` picks by number, in the order it numbers them.
#[test]
fn import_lists_the_cameras_that_camera_numbers() {
    use glam::Vec3;
    use neurotex::builtin::gltf_builder::{
        GltfBuilder, MaterialDesc, NodeTransform, UvMode, look_rotation, plane,
    };
    let dir = temp_dir("cameras");
    let mut b = GltfBuilder::new();
    let mat = b.add_material(MaterialDesc::new("quad"));
    let mesh = b.add_mesh("quad", plane(2.0, 2.0, UvMode::Unit), mat);
    b.add_mesh_node("quad", mesh, NodeTransform::translation(Vec3::ZERO));
    let down = look_rotation(-Vec3::Y, Vec3::Z);
    b.add_camera("above", Vec3::new(0.0, 3.0, 0.0), down, 0.8, 0.1);
    b.add_camera("higher", Vec3::new(0.0, 6.0, 0.0), down, 0.8, 0.1);
    let gltf = b.write(&dir, "cameras").expect("write");
    let stdout = expect_ok(&["import", "--scene", s(&gltf)]);
    assert!(stdout.contains("2 cameras"), "{stdout}");
    assert!(
        stdout.contains("cameras: 0 `above`, 1 `higher`"),
        "{stdout}"
    );
    let out = dir.join("o.png");
    expect_ok(&scene_args(
        "render",
        &gltf,
        &out,
        &["--camera", "1", "--size", "16x12"],
    ));
    expect_error(
        &scene_args("render", &gltf, &out, &["--camera", "2", "--force"]),
        &["`2`", "above", "higher"],
    );
}

#[test]
fn renders_a_textured_quad() {
    let (dir, gltf) = checker_quad("quadpng");
    let out = dir.join("quad.png");
    let (ok, stdout, stderr) = run(&scene_args("render", &gltf, &out, &["--size", "32x24"]));
    assert!(ok, "{stderr}");
    assert!(stdout.contains("1 distinct texture sets"), "{stdout}");
    let img = image::open(&out).unwrap().to_rgba8();
    assert_eq!(img.dimensions(), (32, 24));
}

/// A texture's sampler is followed: the checker quad with its UVs scaled by 3 renders
/// three tiles with REPEAT and one with the edge held beyond it with CLAMP_TO_EDGE, and
/// nearest filtering without mips differs from trilinear, so each pair of frames differs.
#[test]
fn texture_sampling_follows_the_sampler() {
    let (dir, gltf) = checker_quad("sampling");
    let mut doc = read_json(&gltf);
    doc["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"]["extensions"] =
        serde_json::json!({"KHR_texture_transform": {"scale": [3.0, 3.0]}});
    doc["extensionsUsed"] = serde_json::json!(["KHR_texture_transform"]);
    let mut frame = |name: &str, sampler: serde_json::Value| {
        doc["samplers"] = serde_json::json!([sampler]);
        doc["textures"][0]["sampler"] = 0.into();
        let scene = dir.join(format!("{name}.gltf"));
        std::fs::write(&scene, serde_json::to_vec(&doc).unwrap()).unwrap();
        let out = dir.join(format!("{name}.png"));
        expect_ok(&scene_args(
            "render",
            &scene,
            &out,
            &["--mode", "reference", "--size", "48x36"],
        ));
        image::open(&out).unwrap().to_rgba8().into_raw()
    };
    let repeat = frame(
        "repeat",
        serde_json::json!({ "wrapS": 10497, "wrapT": 10497 }),
    );
    let clamp = frame(
        "clamp",
        serde_json::json!({ "wrapS": 33071, "wrapT": 33071 }),
    );
    let nearest = frame(
        "nearest",
        serde_json::json!({ "magFilter": 9728, "minFilter": 9728 }),
    );
    let differing =
        |a: &[u8], b: &[u8]| a.chunks(4).zip(b.chunks(4)).filter(|(p, q)| p != q).count();
    for (what, other) in [("clamp", &clamp), ("nearest", &nearest)] {
        let n = differing(&repeat, other);
        assert!(
            n > 48 * 36 / 20,
            "{what}: {n} pixels differ from repeat, trilinear"
        );
    }
}

/// A description whose `asset_folders` admit textures outside its glTF's folder works in
/// the NTC modes too: their packages open the scene as named, not its bare glTF.
#[test]
fn asset_folders_reach_the_ntc_packages() {
    let dir = temp_dir("assetfolders");
    let (art, desc) = (dir.join("art"), dir.join("desc"));
    std::fs::create_dir_all(&art).unwrap();
    std::fs::create_dir_all(&desc).unwrap();
    write_checker_png(&art.join("checker.png"), 16);
    quad_scene(&desc, Some("../art/checker.png"));
    let toml = desc.join("scene.toml");
    std::fs::write(
        &toml,
        "gltf = \"quad.gltf\"\nasset_folders = [\"../art\"]\n",
    )
    .unwrap();
    let out = dir.join("baseline.png");
    let (ok, _, stderr) = run(&[
        "render",
        "--scene",
        s(&toml),
        "--mode",
        "baseline",
        "--ntc-steps",
        "2",
        "--size",
        "16x16",
        "--out",
        s(&out),
    ]);
    assert!(ok, "{stderr}");
    assert!(out.is_file());
}

/// `render --psnr` also prints the mean ꟻLIP against the reference and, on request,
/// writes its error map; the reference against itself reads 0 (99 dB).
#[test]
fn render_psnr_measures_flip_and_writes_its_map() {
    let (dir, gltf) = checker_quad("renderflip");
    let render = |mode: &str, map: &Path| {
        expect_ok(&[
            "render",
            "--scene",
            s(&gltf),
            "--mode",
            mode,
            "--ntc-steps",
            "2",
            "--size",
            "24x16",
            "--out",
            s(&dir.join(format!("{mode}.png"))),
            "--psnr",
            "--flip-map",
            s(map),
        ])
    };
    let flip = |stdout: &str| -> f64 {
        let line = stdout
            .lines()
            .find(|l| l.starts_with("ꟻLIP against the reference:"))
            .unwrap_or_else(|| panic!("no ꟻLIP line in {stdout}"));
        line.split_whitespace().nth(4).unwrap().parse().unwrap()
    };
    // The reference against a second rendering of itself, from the same start (blue
    // noise, history): identical.
    let stdout = render("reference", &dir.join("flip_reference.png"));
    let same = flip(&stdout);
    assert_eq!(same, 0.0, "{stdout}");
    assert!(
        stdout.contains("frame PSNR against the reference (8-bit sRGB RGB): 99.00 dB"),
        "{stdout}"
    );
    let map = dir.join("flip.png");
    let stdout = render("baseline", &map);
    // Two training steps leave a visible error.
    assert!(flip(&stdout) > same + 0.01, "{stdout}");
    let png = image::open(&map).unwrap();
    assert_eq!((png.width(), png.height()), (24, 16));
    expect_error(
        &[
            "render",
            "--out",
            s(&dir.join("x.png")),
            "--flip-map",
            s(&dir.join("y.png")),
        ],
        &["required"],
    );
}

/// `--transcode` on an adapter without block-compressed textures: one error naming the
/// feature and the remedy, and no image; with them, the frame renders.
#[test]
fn transcode_needs_block_compressed_textures() {
    let (dir, gltf) = checker_quad("transcode-bc");
    let out = dir.join("t.png");
    let args = [
        "render",
        "--scene",
        s(&gltf),
        "--mode",
        "baseline",
        "--ntc-steps",
        "2",
        "--size",
        "24x16",
        "--inference-on-load",
        "--transcode",
        "bc1",
        "--out",
        s(&out),
    ];
    let without = run_env(&args, &[("NEUROTEX_GPU_DISABLE", "texture_compression_bc")]);
    failed(
        &args,
        without,
        &["TEXTURE_COMPRESSION_BC", "without --transcode"],
    );
    assert!(!out.exists());
    expect_ok(&args);
    assert!(out.exists());
}

#[test]
fn compress_inspect_decompress_round_trip() {
    let (dir, gltf) = checker_quad("codec");
    let ntc = dir.join("quad.ntc");
    let report = dir.join("report.json");
    let (ok, stdout, stderr) = run(&scene_args(
        "compress",
        &gltf,
        &ntc,
        &[
            "--steps",
            "60",
            "--batch",
            "512",
            "--report",
            s(&report),
            "--log-every",
            "10",
        ],
    ));
    assert!(ok, "{stderr}");
    assert!(stdout.contains("1 materials, 1 decoders"), "{stdout}");
    for side in [
        "report.json",
        "report.md",
        "report.curves.csv",
        "report.curves.png",
    ] {
        assert!(dir.join(side).exists(), "{side} missing");
    }
    let json = read_json(&report);
    assert_eq!(
        json["materials"][0]["bcn"].as_array().map(Vec::len),
        Some(3),
        "BCn baselines in the report"
    );
    // ꟻLIP beside PSNR, for NTC (decoded from the package) and every baseline.
    let flip = |v: &serde_json::Value| v["mean"].as_f64().expect("ꟻLIP mean");
    let ntc_flip = flip(&json["materials"][0]["flip"]);
    assert!((0.0..1.0).contains(&ntc_flip), "{json}");
    assert_eq!(json["mean_flip"].as_f64(), Some(ntc_flip));
    for b in json["materials"][0]["bcn"].as_array().unwrap() {
        assert!((0.0..1.0).contains(&flip(&b["flip_mip0"])), "{b}");
    }
    let stdout = expect_ok(&["inspect", s(&ntc), "--json"]);
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["materials"][0]["name"], "checker");
    assert!(summary["materials"][0]["bits_per_texel"].as_f64().unwrap() > 0.0);
    let out = dir.join("decoded");
    expect_ok(&["decompress", s(&ntc), "--out", s(&out), "--mips"]);
    let mip0 = image::open(out.join("checker_base_color_mip0.png")).unwrap();
    assert_eq!((mip0.width(), mip0.height()), (16, 16));

    // A damaged package: one clear error naming the file, never a panic.
    let mut bytes = std::fs::read(&ntc).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x5a;
    let bad = dir.join("bad.ntc");
    std::fs::write(&bad, &bytes).unwrap();
    expect_error(&["inspect", s(&bad)], &["bad.ntc", "checksum"]);
    std::fs::write(&bad, &bytes[..n / 3]).unwrap();
    expect_error(&["inspect", s(&bad)], &["bad.ntc", "truncated"]);
    expect_error(&["inspect", s(&dir.join("missing.ntc"))], &["missing.ntc"]);
}

#[test]
fn outputs_never_replace_inputs() {
    let dir = temp_dir("policy");
    let texture = dir.join("checker.png");
    write_checker_png(&texture, 16);
    let before = std::fs::read(&texture).unwrap();
    let gltf = quad_scene(&dir, Some("checker.png"));
    let scene = s(&gltf);
    // render --out and --divergence-map over the scene's texture (also through `..`).
    let dotted = dir.join("sub/../checker.png");
    for args in [
        scene_args("render", &gltf, &texture, &[]),
        scene_args("render", &gltf, &dotted, &[]),
        scene_args(
            "render",
            &gltf,
            &dir.join("o.png"),
            &["--divergence-map", s(&texture)],
        ),
    ] {
        expect_error(&args, &["refusing to write", "checker.png", "inputs"]);
    }
    // --force never makes an input writable.
    expect_error(
        &scene_args("render", &gltf, &texture, &["--force"]),
        &["refusing to write", "inputs"],
    );
    // compress --out / --report, cluster --out and its derived contact sheet.
    expect_error(
        &scene_args("compress", &gltf, &texture, &[]),
        &["refusing to write", "checker.png"],
    );
    expect_error(
        &scene_args(
            "compress",
            &gltf,
            &dir.join("q.ntc"),
            &["--report", s(&texture)],
        ),
        &["refusing to write", "checker.png"],
    );
    expect_error(
        &scene_args("cluster", &gltf, &dir.join("checker.json"), &["--m", "1"]),
        &["refusing to write", "checker.png"],
    );
    // import --csv over the glTF, gen-scene street over its own manifest.
    expect_error(
        &["import", "--scene", scene, "--csv", scene],
        &["refusing to write", "quad.gltf"],
    );
    let manifest = dir.join("texture_sets.csv");
    std::fs::write(
        &manifest,
        "set_id,category,paper_category,basecolor,normal,alpha,roughness_const,metallic_const\nquad,Test,Test,checker.png,,0,0.5,0\n",
    )
    .unwrap();
    expect_error(
        &[
            "gen-scene",
            "street",
            "--textures",
            s(&manifest),
            "--out",
            s(&dir),
        ],
        &["refusing to write", "texture_sets.csv"],
    );
    assert_eq!(
        std::fs::read(&texture).unwrap(),
        before,
        "the input is intact"
    );
}

#[test]
fn existing_outputs_need_force_and_formats_follow_the_extension() {
    let (dir, gltf) = checker_quad("force");
    let out = dir.join("frame.png");
    std::fs::write(&out, b"precious").unwrap();
    let render = |out: &Path, extra: &[&str]| {
        let mut args = scene_args("render", &gltf, out, &["--size", "16x16"]);
        args.extend_from_slice(extra);
        run(&args)
    };
    let (ok, _, stderr) = render(&out, &[]);
    assert!(!ok && stderr.contains("pass --force"), "{stderr}");
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    let (ok, _, stderr) = render(&out, &["--force"]);
    assert!(ok, "{stderr}");
    assert!(image::open(&out).is_ok());
    // The format comes from the extension: JPEG bytes for .jpg, an error for .webp.
    let jpg = dir.join("frame.jpg");
    let (ok, _, stderr) = render(&jpg, &[]);
    assert!(ok, "{stderr}");
    assert_eq!(
        &std::fs::read(&jpg).unwrap()[..2],
        &[0xFF, 0xD8],
        "JPEG magic"
    );
    expect_error(
        &scene_args("render", &gltf, &dir.join("frame.webp"), &[]),
        &["frame.webp", ".png"],
    );
}

#[test]
fn counts_and_sizes_are_checked_alike_everywhere() {
    let dir = temp_dir("flags");
    let gltf = quad_scene(&dir, None);
    let o = dir.join("o.ntc");
    for args in [
        scene_args("compress", &gltf, &o, &["--steps", "0"]),
        scene_args("eval", &gltf, &dir.join("e"), &["--steps", "0"]),
        scene_args("render", &gltf, &dir.join("a.png"), &["--ntc-steps", "0"]),
        scene_args("render", &gltf, &dir.join("a.png"), &["--ntc-m", "0"]),
        scene_args("bench", &gltf, &dir.join("b"), &["--ntc-m", "0"]),
        scene_args("compress", &gltf, &o, &["--m", "0"]),
        scene_args("cluster", &gltf, &dir.join("p.json"), &["--m", "0"]),
    ] {
        expect_error(&args, &["at least 1"]);
    }
    expect_error(
        &scene_args(
            "render",
            &gltf,
            &dir.join("a.png"),
            &["--max-texture-size", "0"],
        ),
        &["--max-texture-size", "1..=16384"],
    );
    // A description's [render] size passes the --size check.
    let toml = dir.join("scene.toml");
    write_description(&toml, &gltf, "[render]\nsize = [0, 720]\n");
    expect_error(
        &scene_args("render", &toml, &dir.join("a.png"), &[]),
        &["scene.toml", "render.size", "1..=16384"],
    );
}

#[test]
fn import_csv_writes_the_schema_the_loader_reads() {
    let (dir, gltf) = checker_quad("importcsv");
    let csv = dir.join("texture_sets.csv");
    expect_ok(&["import", "--scene", s(&gltf), "--csv", s(&csv)]);
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(
        text.starts_with("set_id,category,paper_category,"),
        "{text}"
    );
    // Every later command on the scene still works (the loader reads this file).
    expect_ok(&["import", "--scene", s(&gltf)]);
    let (ok, _, stderr) = run(&scene_args(
        "cluster",
        &gltf,
        &dir.join("plan.json"),
        &["--m", "1"],
    ));
    assert!(ok, "{stderr}");
    // Writing it again is refused: it is now an input of the scene.
    expect_error(
        &["import", "--scene", s(&gltf), "--csv", s(&csv), "--force"],
        &["refusing to write", "texture_sets.csv"],
    );
}

#[test]
fn hostile_scenes_fail_cleanly_through_the_binary() {
    let dir = temp_dir("hostile");
    let gltf = quad_scene(&dir, None);
    let mut doc = read_json(&gltf);
    doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"] = 99.into();
    let bad = dir.join("bad.gltf");
    std::fs::write(&bad, serde_json::to_vec(&doc).unwrap()).unwrap();
    import_error(
        &bad,
        &[
            "bad.gltf",
            "meshes[0].primitives[0].attributes.POSITION",
            "does not exist",
        ],
    );
    // A buffer outside the folder: refused, allowed with --allow-outside-uris.
    let inner = dir.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    let mut doc = read_json(&gltf);
    let uri = doc["buffers"][0]["uri"].as_str().unwrap().to_string();
    doc["buffers"][0]["uri"] = format!("../{uri}").into();
    let out = inner.join("out.gltf");
    std::fs::write(&out, serde_json::to_vec(&doc).unwrap()).unwrap();
    import_error(
        &out,
        &["out.gltf", "buffers[0].uri", "outside the scene's folder"],
    );
    expect_ok(&["import", "--scene", s(&out), "--allow-outside-uris"]);
    // A description with a NaN key time.
    let toml = dir.join("nan.toml");
    write_description(
        &toml,
        &gltf,
        "[[camera_paths]]\nname = \"p\"\nkeys = [ { time = nan, position = [0, 1, 3], target = [0, 0, 0] } ]\n",
    );
    for cmd in ["render", "bench"] {
        expect_error(
            &scene_args(cmd, &toml, &dir.join("x.png"), &[]),
            &["nan.toml", "time", "not a finite number"],
        );
    }
}

#[test]
fn package_budget_and_name_collisions() {
    use neurotex::ntc::NtcPackage;
    use neurotex::ntc::model::{GroupModel, LatentLayout, full_mip_count};
    use neurotex::ntc::train::{Quality, TrainedGroup, TrainedMaterial};
    let dir = temp_dir("collide");
    let config = neurotex::ntc::NtcConfig {
        features: 4,
        hidden: vec![8],
        ..Default::default()
    };
    let names = ["x y", "x_y", "X.y"];
    let layouts = names
        .iter()
        .map(|_| LatentLayout::new(4, 4, full_mip_count(4, 4), config.preset, 4).unwrap())
        .collect();
    let group = TrainedGroup {
        model: GroupModel::init(&config, layouts, 1).unwrap(),
        materials: names
            .iter()
            .map(|n| TrainedMaterial {
                name: (*n).into(),
                present: neurotex::texture::ChannelMask::BASE_COLOR,
                quality: Quality::default(),
            })
            .collect(),
        losses: Vec::new(),
    };
    let mut package = NtcPackage::new(config).unwrap();
    package
        .add_group(&group, &[[1.0; neurotex::texture::CHANNELS]; 3])
        .unwrap();
    let file = dir.join("names.ntc");
    package.write(&file).unwrap();
    let out = dir.join("decoded");
    let stdout = expect_ok(&["decompress", s(&file), "--out", s(&out)]);
    assert!(stdout.contains("wrote 3 PNGs"), "{stdout}");
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    // Again into the same folder: the files exist.
    expect_error(
        &["decompress", s(&file), "--out", s(&out)],
        &["refusing to replace", "pass --force"],
    );
    // Over the budget: refused before decoding, with the sizes.
    let (ok, _, stderr) = run_env(
        &["decompress", s(&file), "--out", s(&dir.join("d2"))],
        &[("NEUROTEX_MEMORY_BUDGET", "1000")],
    );
    assert!(
        !ok && stderr.contains("limit 1000") && stderr.contains("needs"),
        "{stderr}"
    );
}

#[test]
fn foreign_partial_folders_are_left_alone() {
    let (dir, gltf) = checker_quad("partial");
    let out = dir.join("q.ntc");
    let partial = dir.join("q.ntc.partial");
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::write(partial.join("mine.txt"), b"keep").unwrap();
    expect_error(
        &scene_args("compress", &gltf, &out, &["--steps", "5"]),
        &["q.ntc.partial", "not made by neurotex"],
    );
    assert!(partial.join("mine.txt").exists());
}

#[test]
fn rate_control_picks_the_smallest_preset_that_reaches_the_target() {
    let (dir, gltf) = checker_quad("rate");
    // The report's one material and its warnings, and the console output.
    let compress = |name: &str, rate: &[&str]| {
        let report = dir.join(format!("{name}.json"));
        let ntc = dir.join(format!("{name}.ntc"));
        let mut args = scene_args(
            "compress",
            &gltf,
            &ntc,
            &[
                "--steps",
                "64",
                "--batch",
                "256",
                "--no-flip",
                "--report",
                s(&report),
            ],
        );
        args.extend_from_slice(rate);
        let stdout = expect_ok(&args);
        let json = read_json(&report);
        (
            json["materials"][0].clone(),
            json["warnings"].clone(),
            stdout,
        )
    };
    // The tries (preset, main steps, pooled PSNR): the probes of 64 / 16 = 4 steps, then
    // the full trainings of 64.
    let tries = |m: &serde_json::Value| -> Vec<(String, u64, f64)> {
        json_array(m, "rate_tries")
            .iter()
            .map(|t| {
                (
                    t["preset"].as_str().expect("preset").to_owned(),
                    t["steps"].as_u64().expect("steps"),
                    t["psnr_pooled"]["db"].as_f64().expect("psnr"),
                )
            })
            .collect()
    };
    let full = |t: &[(String, u64, f64)]| -> Vec<(String, f64)> {
        t.iter()
            .filter(|t| t.1 == 64)
            .map(|t| (t.0.clone(), t.2))
            .collect()
    };
    // Even a 4-step probe of the checker beats 5 dB (measured: 9.0 dB): the smallest
    // preset's probe predicts it, one full training follows, no warning.
    let (easy, warnings, _) = compress("easy", &["--target-psnr", "5"]);
    assert_eq!(easy["preset"], "low", "{easy}");
    let easy_tries = tries(&easy);
    assert_eq!(easy_tries[0].1, 4, "{easy}");
    assert_eq!(
        full(&easy_tries),
        [("low".to_owned(), easy_tries[1].2)],
        "{easy}"
    );
    assert_eq!(easy["target_reached"], true, "{easy}");
    assert_eq!(warnings, serde_json::json!([]));
    // 99 dB is out of reach: every preset probed in increasing size, the largest trained
    // fully and kept, and the miss reported in the console, the report and the summary.
    let (hard, warnings, stdout) = compress("hard", &["--target-psnr", "99"]);
    let hard_tries = tries(&hard);
    let probes: Vec<&str> = hard_tries
        .iter()
        .filter(|t| t.1 == 4)
        .map(|t| t.0.as_str())
        .collect();
    assert_eq!(
        probes,
        ["low", "medium", "medium-high", "high", "very-high"],
        "{hard}"
    );
    let hard_full = full(&hard_tries);
    assert_eq!(hard_full.len(), 1, "{hard}");
    assert_eq!(hard["preset"], "very-high");
    assert_eq!(hard["target_reached"], false, "{hard}");
    assert!(hard_tries.iter().all(|t| t.2 < 99.0));
    let warning = format!(
        "set `{}` missed its target: best pooled PSNR {:.2} dB (preset very-high) < target 99.00 dB",
        hard["name"].as_str().expect("name"),
        hard_full[0].1
    );
    assert_eq!(warnings, serde_json::json!([warning]), "{hard}");
    assert!(stdout.contains(&format!("warning: {warning}")), "{stdout}");
    assert!(stdout.contains("1 target(s) missed"), "{stdout}");
    let md = std::fs::read_to_string(dir.join("hard.md")).unwrap();
    assert!(md.contains(&warning), "{md}");
    // A target between: every full training but the last missed it, the last (kept)
    // reached it or is the largest preset.
    let middle = hard_full[0].1 - 1.0;
    let (between, _, _) = compress("between", &["--target-psnr", &middle.to_string()]);
    let t = full(&tries(&between));
    let (last, missed) = t.split_last().expect("a full try");
    assert!(missed.iter().all(|(_, p)| *p < middle), "{between}");
    assert!(last.1 >= middle || last.0 == "very-high", "{between}");
    assert_eq!(between["preset"].as_str(), Some(last.0.as_str()));
    // --match-bcn targets the set's BC1/BC5 pooled PSNR.
    let (bcn, _, _) = compress("bcn", &["--match-bcn", "bc1"]);
    let target = bcn["target_psnr"].as_f64().expect("target");
    // The one PSNR: the same pooled number the report shows for NTC and BCn.
    let baseline = bcn["bcn"][0]["psnr_mip0"]["pooled"]["db"]
        .as_f64()
        .expect("bc1 psnr");
    assert_eq!(target, baseline, "{bcn}");
    assert!(bcn["psnr"]["pooled"]["db"].as_f64().is_some(), "{bcn}");
    let x = dir.join("x.ntc");
    expect_error(
        &scene_args("compress", &gltf, &x, &["--match-bcn", "bc7", "--no-bcn"]),
        &["--no-bcn"],
    );
}

/// `compress --rd` on a tiny set: one package per rung of the ladder, and the curve
/// files: every rung and BCn baseline a CSV row, the matching rates in the Markdown, the
/// chart.
#[test]
fn rate_distortion_curves_of_a_tiny_set() {
    let (dir, gltf) = checker_quad("rd");
    let out = dir.join("rd.ntc");
    let report = dir.join("rd.json");
    let mut args = scene_args(
        "compress",
        &gltf,
        &out,
        &[
            "--steps",
            "16",
            "--batch",
            "256",
            "--rd",
            "--report",
            s(&report),
        ],
    );
    let stdout = expect_ok(&args);
    assert!(stdout.contains("rung high-16x4"), "{stdout}");
    for rung in ["low-24x4", "medium-high-32x4", "high-32x4"] {
        assert!(dir.join(format!("rd.{rung}.ntc")).is_file(), "{rung}");
    }
    let csv = std::fs::read_to_string(dir.join("rd.rd.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], "set,codec,bits_per_texel,psnr,flip");
    // 9 rungs and 3 baselines for the one set.
    assert_eq!(rows.len(), 1 + 9 + 3, "{csv}");
    assert!(rows.iter().any(|r| r.contains(",BC4/BC5/BC7,")), "{csv}");
    // Every NTC row has a PSNR and a ꟻLIP.
    assert!(
        rows[1..10]
            .iter()
            .all(|r| r.split(',').filter(|v| !v.is_empty()).count() == 5),
        "{csv}"
    );
    let json = read_json(dir.join("rd.rd.json"));
    let set = &json["sets"][0];
    assert_eq!(set["ntc"].as_array().unwrap().len(), 9, "{set}");
    assert_eq!(set["matches"].as_array().unwrap().len(), 3, "{set}");
    let md = std::fs::read_to_string(dir.join("rd.rd.md")).unwrap();
    assert!(
        md.contains("| BCn | BCn bpt | BCn PSNR | NTC bpt at that PSNR |"),
        "{md}"
    );
    let png = image::open(dir.join("rd.rd.png")).unwrap();
    assert_eq!((png.width(), png.height()), (1200, 480));

    // An interrupted ladder: the curves not written yet and the last rung unfinished.
    // `--resume` keeps the eight finished rungs (their packages and points) and trains
    // the ninth; the kept rungs' rows are those of the first run.
    for f in [
        "rd.rd.json",
        "rd.rd.csv",
        "rd.rd.md",
        "rd.rd.png",
        "rd.high-32x4.ntc",
    ] {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    expect_error(&args, &["rd.low-24x4.points.json", "exists"]);
    args.push("--resume");
    let stdout = expect_ok(&args);
    assert_eq!(stdout.matches("(kept)").count(), 8, "{stdout}");
    let trained = stdout.lines().find(|l| l.starts_with("rung high-32x4: "));
    assert!(trained.is_some_and(|l| !l.ends_with("(kept)")), "{stdout}");
    let resumed = std::fs::read_to_string(dir.join("rd.rd.csv")).unwrap();
    let kept = |csv: &str| -> Vec<String> {
        csv.lines()
            .filter(|r| !r.contains(",high-32x4,"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(kept(&resumed), kept(&csv));
    // Points of another run are refused, naming the file.
    let points = dir.join("rd.low-24x4.points.json");
    let mut json = read_json(&points);
    json["run"] = "another".into();
    std::fs::write(&points, json.to_string()).unwrap();
    for f in ["rd.rd.json", "rd.rd.csv", "rd.rd.md", "rd.rd.png"] {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    expect_error(
        &args,
        &["rd.low-24x4.points.json", "other inputs or settings"],
    );
}

#[test]
fn cluster_divergence_aware_needs_a_sound_record() {
    let (dir, gltf) = checker_quad("cooc");
    let plan = dir.join("plan.json");
    // `cluster … extra` must fail with every needle in its error.
    let cluster_fails = |extra: &[&str], needles: &[&str]| {
        let mut args = vec![
            "cluster",
            "--scene",
            s(&gltf),
            "--m",
            "1",
            "--out",
            s(&plan),
        ];
        args.extend_from_slice(extra);
        expect_error(&args, needles);
    };
    // Without --cooccurrence the views of the one --scene are recorded; of two scenes
    // there is no one record to make.
    cluster_fails(
        &["--strategy", "divergence-aware", "--scene", s(&gltf)],
        &["exactly one --scene", "--cooccurrence FILE"],
    );
    let record = dir.join("views.cooc.json");
    std::fs::write(
        &record,
        b"{\"format\": \"neurotex-cooccurrence\", \"version\"",
    )
    .unwrap();
    cluster_fails(
        &[
            "--strategy",
            "divergence-aware",
            "--cooccurrence",
            s(&record),
        ],
        &["views.cooc.json", "JSON"],
    );
    assert!(!plan.exists(), "no plan is written from a bad record");
}

#[test]
fn damaged_partial_progress_names_the_file_and_the_remedy() {
    // A real partial folder (with the run's marker): a run killed once it has started.
    let killed = KilledQuadCompression::new("partial");
    let (partial, resume) = (&killed.partial, killed.resume());
    // An interrupted group's checkpoint that is not one.
    std::fs::write(partial.join("group0.ckpt"), b"NTCCKPT\0 not a checkpoint").unwrap();
    expect_error(
        &resume,
        &[
            "group0.ckpt",
            "delete it",
            "quad.ntc.partial",
            "from the start",
        ],
    );
    // A finished group's package that is damaged.
    std::fs::write(partial.join("group0.ntc"), b"NTC\0 truncated").unwrap();
    expect_error(&resume, &["group0.ntc", "delete it", "quad.ntc.partial"]);
}

/// A small `compress` run ([`small_compress`](crate::common::small_compress)) of two
/// checker base-colour sets, 8² and 16², listed in `sets.csv` of a fresh folder for its
/// test, into a package in that folder.
struct CheckerRun {
    dir: PathBuf,
    manifest: PathBuf,
    out: PathBuf,
    steps: &'static str,
}

impl CheckerRun {
    /// The sets in a fresh folder for test `tag`, the package `name` there.
    fn new(tag: &str, name: &str, steps: &'static str) -> Self {
        let dir = temp_dir(tag);
        write_checker_png(&dir.join("a.png"), 8);
        write_checker_png(&dir.join("b.png"), 16);
        let manifest = dir.join("sets.csv");
        std::fs::write(
            &manifest,
            "set_id,category,paper_category,basecolor,normal,alpha,roughness_const,metallic_const\na,T,T,a.png,,0,0.5,0\nb,T,T,b.png,,0,0.5,0\n",
        )
        .unwrap();
        let out = dir.join(name);
        CheckerRun {
            dir,
            manifest,
            out,
            steps,
        }
    }

    /// The run's arguments, then `extra`.
    fn args<'a>(&'a self, extra: &[&'a str]) -> Vec<&'a str> {
        crate::common::small_compress(
            ["--manifest", s(&self.manifest)],
            &self.out,
            self.steps,
            extra,
        )
    }
}

#[test]
fn stop_after_starts_no_group_past_its_time_and_resume_finishes() {
    let run = CheckerRun::new("stop_after", "s.ntc", "40");
    let (dir, out) = (&run.dir, &run.out);
    let compress = |extra: &[&'static str]| run.args(&[&["--no-flip"], extra].concat());
    // Past its time before the first group: nothing is trained, the run stops as an
    // interrupted one, and its progress folder is kept for --resume.
    expect_error(
        &compress(&["--stop-after", "0s"]),
        &["interrupted", "s.ntc.partial", "--resume"],
    );
    assert!(!out.exists(), "no package from a stopped run");
    let partial = dir.join("s.ntc.partial");
    assert!(partial.join("neurotex-partial.json").exists());
    assert!(!partial.join("group0.ntc").exists(), "no group started");
    // A limit not reached changes nothing: the resumed run trains both groups.
    let stdout = expect_ok(&compress(&["--resume", "--stop-after", "1h"]));
    assert!(stdout.contains("2 materials, 2 decoders"), "{stdout}");
    assert!(!partial.exists(), "the partial folder is removed");
    // Malformed limits are refused by the parser.
    expect_error(
        &compress(&["--stop-after", "9 minutes"]),
        &["--stop-after", "9m"],
    );
}

#[test]
fn a_killed_compression_resumes_to_a_valid_package() {
    let run = CheckerRun::new("killed", "k.ntc", "600");
    let (dir, out) = (&run.dir, &run.out);
    let args = run.args(&[]);
    // Kill (no Ctrl-C, no checkpoint) once the first group is finished.
    assert!(
        kill_once_exists(&args, &dir.join("k.ntc.partial/group0.ntc")),
        "the run ended before it could be killed"
    );
    assert!(!out.exists(), "no package before every group is done");
    assert!(dir.join("k.ntc.partial/neurotex-partial.json").exists());
    // A finished group that this run did not write (another package in its place, or
    // one edited) is refused; the group as written resumes.
    let report = dir.join("k.json");
    let mut resume: Vec<&str> = args.to_vec();
    resume.extend(["--resume", "--report", s(&report)]);
    let group0 = dir.join("k.ntc.partial/group0.ntc");
    let written = std::fs::read(&group0).unwrap();
    let mut edited = written.clone();
    edited.push(0);
    std::fs::write(&group0, &edited).unwrap();
    expect_error(
        &resume,
        &[
            "group0.ntc",
            "not group 0 as this run wrote it",
            "delete it",
        ],
    );
    std::fs::write(&group0, &written).unwrap();
    // Resuming reuses group 0 and trains group 1 again from its start; the report times
    // only the group it trained (the reused one's time and throughput are null, not 0).
    let stdout = expect_ok(&resume);
    assert!(stdout.contains("2 materials, 2 decoders"), "{stdout}");
    let groups = read_json(&report)["groups"].clone();
    for field in [
        "seconds",
        "texels_per_second",
        "tflops",
        "final_loss",
        "latent_adam",
    ] {
        assert!(groups[0][field].is_null(), "{field}: {groups}");
    }
    assert!(
        groups[1]["seconds"].as_f64().is_some_and(|t| t > 0.0),
        "{groups}"
    );
    // The trained group names how Adam stepped its latents (`auto` resolved), in the
    // report and on its line of the output.
    let adam = groups[1]["latent_adam"].as_str().unwrap_or_default();
    assert!(["dense", "lazy"].contains(&adam), "{groups}");
    assert!(
        stdout.contains(&format!(", {adam} latent Adam")),
        "{stdout}"
    );
    assert!(
        !dir.join("k.ntc.partial").exists(),
        "the partial folder is removed"
    );
    let stdout = expect_ok(&["inspect", s(out), "--json"]);
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["materials"].as_array().map(Vec::len), Some(2));
}

/// `--gbuffer` reaches the renderer of `render` (it prints the mode it made), defaults to
/// the adapter's best, refuses what the adapter lacks with the clear error, and is shared
/// with `bench` and `view`.
#[test]
fn gbuffer_mode_reaches_the_renderer() {
    use neurotex::render::GBufferMode;
    let dir = temp_dir("gbuffer");
    let gltf = quad_scene(&dir, None);
    let out = dir.join("q.png");
    let render = |mode: Option<&str>| {
        let mut args = scene_args("render", &gltf, &out, &["--size", "16x12", "--force"]);
        args.extend(mode.map(|m| ["--gbuffer", m]).into_iter().flatten());
        run(&args)
    };
    let ctx = crate::common::ctx();
    let (ok, stdout, stderr) = render(None);
    assert!(ok, "{stderr}");
    let default = GBufferMode::default_for(ctx);
    assert!(stdout.contains(&format!("G-buffer: {default}")), "{stdout}");
    let (ok, stdout, stderr) = render(Some("raster"));
    assert!(
        ok && stdout.contains("G-buffer: raster"),
        "{stdout}{stderr}"
    );
    let (ok, stdout, stderr) = render(Some("visibility"));
    match GBufferMode::Visibility.check(ctx) {
        Ok(()) => assert!(
            ok && stdout.contains("G-buffer: visibility"),
            "{stdout}{stderr}"
        ),
        Err(_) => assert!(
            !ok && stderr.contains("the visibility G-buffer needs"),
            "{stderr}"
        ),
    }
    let (ok, _, stderr) = render(Some("bogus"));
    assert!(!ok && stderr.contains("bogus"), "{stderr}");
    for cmd in ["bench", "view"] {
        let help = expect_ok(&[cmd, "--help"]);
        assert!(help.contains("--gbuffer"), "{cmd}: {help}");
    }
}

/// `bench` of the scene `gltf` into `out` at (size, frames, warm-up seconds), then `extra`.
fn bench_args<'a>(
    gltf: &'a Path,
    out: &'a Path,
    (size, frames, warmup): (&'a str, &'a str, &'a str),
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = scene_args(
        "bench",
        gltf,
        out,
        &["--size", size, "--frames", frames, "--warmup", warmup],
    );
    args.extend_from_slice(extra);
    args
}

/// `bench` whose every configuration is skipped (a kernel the adapter lacks) ends with
/// an error naming why, not with empty reports.
#[test]
fn bench_that_measures_nothing_is_an_error() {
    let (dir, gltf) = checker_quad("benchnothing");
    let out = dir.join("report");
    use neurotex::render::passes::ntc_decode::NtcKernel;
    let ctx = crate::common::ctx();
    let Some(kernel) = NtcKernel::ALL
        .into_iter()
        .find(|k| !k.supported(&ctx.granted))
        .map(NtcKernel::name)
    else {
        println!(
            "every decode kernel runs on {}: nothing to skip",
            ctx.describe()
        );
        return;
    };
    let extra = [
        "--modes",
        "baseline",
        "--ntc-steps",
        "2",
        "--kernels",
        kernel,
    ];
    expect_error(
        &bench_args(&gltf, &out, ("16x16", "1", "0"), &extra),
        &["nothing was measured", kernel],
    );
    assert!(!out.join("bench.json").exists());
}

/// `bench` on a tiny scene (lavapipe in CI): every configuration warms up and is measured
/// under the trust rules, and the stability flags and spreads reach JSON, CSV and Markdown.
#[test]
fn scene_bench_reports_stability_and_spread() {
    let (dir, gltf) = checker_quad("benchtrust");
    let out = dir.join("report");
    let started = std::time::Instant::now();
    let (ok, _, stderr) = run(&bench_args(
        &gltf,
        &out,
        ("32x24", "4", "1"),
        &["--modes", "reference"],
    ));
    assert!(ok, "{stderr}");
    // Warmed up for at least 300 ms (the NTC modes follow the same path; their kernels
    // take minutes to compile on lavapipe).
    assert!(started.elapsed() >= std::time::Duration::from_millis(300));
    let json = read_json(out.join("bench.json"));
    let rows = json_array(&json, "rows");
    assert_eq!(rows.len(), 1, "{json}");
    for r in rows {
        assert!(
            r["unstable"].is_boolean() && r["remeasured"].is_boolean(),
            "{r}"
        );
        let ms = &r["material_ms"];
        assert!(
            ms["p10"].as_f64().unwrap() <= ms["median"].as_f64().unwrap(),
            "{r}"
        );
        assert!(
            ms["median"].as_f64().unwrap() <= ms["p90"].as_f64().unwrap(),
            "{r}"
        );
    }
    let csv = std::fs::read_to_string(out.join("bench.csv")).unwrap();
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",remeasured,unstable"),
        "{csv}"
    );
    let md = std::fs::read_to_string(out.join("bench.md")).unwrap();
    assert!(md.contains("frame ms (p10–p90)"), "{md}");
    assert!(md.contains("median (p10–p90)"), "{md}");
    let unstable = rows.iter().any(|r| r["unstable"] == true);
    assert_eq!(md.contains("UNSTABLE"), unstable, "{md}");
}

#[test]
fn a_diverged_training_names_its_group_and_a_fixed_rerun_replaces_its_progress() {
    let run = CheckerRun::new("diverged", "d.ntc", "10");
    let out = &run.out;
    let compress = |extra: &[&'static str]| run.args(&[&["--no-flip"], extra].concat());
    // A decoder rate of 1e30 makes the loss NaN within a step: one error naming the group,
    // its sets and the remedy, and no package.
    expect_error(
        &compress(&["--lr-decoder=1e30"]),
        &["group 0", "training diverged", "--lr-decoder"],
    );
    assert!(!out.exists());
    // Its partial folder holds no finished group: the run with sane settings replaces it.
    expect_ok(&compress(&[]));
    assert!(out.is_file());
}

/// `import` lists the channels `compress` trains: a manifest row's alpha column decides
/// whether an RGBA base colour's alpha is one (0: opaque, left out; 1: mask, kept).
#[test]
fn import_lists_the_channels_compress_trains() {
    let dir = temp_dir("import_alpha");
    image::RgbaImage::from_fn(8, 8, |x, y| {
        image::Rgba([x as u8 * 30, y as u8 * 30, 90, 128])
    })
    .save(dir.join("a.png"))
    .unwrap();
    let manifest = dir.join("sets.csv");
    for (alpha, channels) in [
        ("0", "channels base_color\n"),
        ("1", "channels base_color+alpha\n"),
    ] {
        std::fs::write(
            &manifest,
            format!(
                "set_id,category,paper_category,basecolor,normal,alpha,roughness_const,metallic_const\na,T,T,a.png,,{alpha},0.5,0\n"
            ),
        )
        .unwrap();
        let stdout = expect_ok(&["import", "--manifest", s(&manifest)]);
        assert!(stdout.contains(channels), "alpha {alpha}: {stdout}");
    }
}

/// `cluster --strategy category` on sets without category labels is refused, as `eval`
/// refuses it, instead of writing one group per set.
#[test]
fn category_groups_need_category_labels() {
    let run = CheckerRun::new("category_labels", "unused.ntc", "1");
    let unlabelled = run.dir.join("unlabelled.csv");
    let manifest = std::fs::read_to_string(&run.manifest).unwrap();
    std::fs::write(&unlabelled, manifest.replace(",T,T,", ",,,")).unwrap();
    let plan = run.dir.join("plan.json");
    let args = ["--strategy", "category", "--out", s(&plan)];
    expect_error(
        &[&["cluster", "--manifest", s(&unlabelled)][..], &args].concat(),
        &["category labels", "paper_category"],
    );
    assert!(!plan.exists());
    expect_ok(&[&["cluster", "--manifest", s(&run.manifest)][..], &args].concat());
    assert!(plan.is_file());
}

/// A mirrored instance (a node scale of −1: negative determinant) reverses its
/// triangles' winding, which glTF says to undo: a single-sided quad mirrored onto itself
/// renders exactly as the quad, visible and facing up, in both G-buffer modes.
#[test]
fn mirrored_instances_keep_their_front_faces() {
    use neurotex::builtin::gltf_builder::NodeTransform;
    let dir = temp_dir("mirrored");
    let plain = crate::common::quad_scene(&dir, None);
    let mirror = glam::Vec3::new(-1.0, 1.0, 1.0);
    let mirrored = crate::common::quad_scene_with(
        &dir,
        "mirrored",
        None,
        NodeTransform::trs(glam::Vec3::ZERO, glam::Quat::IDENTITY, mirror),
    );
    let mut modes = vec!["raster"];
    if crate::gbuffer::visibility_available() {
        modes.push("visibility");
    }
    for mode in modes {
        let render = |scene: &Path, aov: &str| {
            let out = dir.join(format!(
                "{mode}-{aov}-{}.png",
                scene.display().to_string().len()
            ));
            expect_ok(&scene_args(
                "render",
                scene,
                &out,
                &["--size", "32x24", "--aov", aov, "--gbuffer", mode],
            ));
            image::open(&out).unwrap().to_rgba8()
        };
        for aov in ["normal", "final"] {
            let want = render(&plain, aov);
            let covered = want.pixels().filter(|p| *p != want.get_pixel(0, 0)).count();
            assert!(
                covered > 32 * 24 / 8,
                "{mode} {aov}: the quad covers {covered} pixels"
            );
            assert!(
                render(&mirrored, aov) == want,
                "{mode} {aov}: the mirrored quad differs"
            );
        }
    }
}
