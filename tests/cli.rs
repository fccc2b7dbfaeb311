//! Bad input through the real binary: each case must give one clear error that names the
//! file and the problem, a non-zero exit code, and no panic.

mod common;

use std::path::Path;
use std::process::Command;

use common::{quad_scene, temp_dir, write_checker_png};

/// Run `neurotex` and return (success, stdout, stderr).
fn run(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_neurotex"))
        .args(args)
        .env(
            "NEUROTEX_CACHE",
            std::env::temp_dir().join("neurotex-test-cache"),
        )
        .output()
        .expect("run neurotex");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "neurotex panicked: {stderr}");
    (out.status.success(), stdout, stderr)
}

/// Expect failure with an `error:` line containing every needle.
fn expect_error(args: &[&str], needles: &[&str]) -> String {
    let (ok, stdout, stderr) = run(args);
    assert!(!ok, "expected failure for {args:?}; stdout: {stdout}");
    // The last `error:` line is ours (drivers may log their own lines before it).
    let line = stderr
        .lines()
        .rfind(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("no `error:` line in stderr: {stderr}"))
        .to_string();
    for n in needles {
        assert!(line.contains(n), "error line lacks `{n}`: {line}");
    }
    line
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

#[test]
fn missing_scene_file() {
    let dir = temp_dir("missing");
    let scene = dir.join("nope.gltf");
    expect_error(
        &[
            "render",
            "--scene",
            s(&scene),
            "--out",
            s(&dir.join("o.png")),
        ],
        &["nope.gltf", "cannot read"],
    );
}

#[test]
fn corrupt_gltf_json() {
    let dir = temp_dir("corrupt");
    let scene = dir.join("broken.gltf");
    std::fs::write(
        &scene,
        "{ \"asset\": { \"version\": \"2.0\" }, \"meshes\": [ ",
    )
    .unwrap();
    expect_error(
        &["import", "--scene", s(&scene)],
        &["broken.gltf", "not a valid glTF"],
    );
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
    let (ok, stdout, stderr) = run(&["import", "--scene", s(&good)]);
    assert!(ok, "the intact GLB must import: {stderr}");
    assert!(stdout.contains("1 materials"), "{stdout}");
    let cut = dir.join("cut.glb");
    std::fs::write(&cut, &glb[..glb.len() - bin.len() / 2]).unwrap();
    expect_error(
        &["import", "--scene", s(&cut)],
        &["cut.glb", "not a valid glTF"],
    );
}

#[test]
fn truncated_external_buffer() {
    let dir = temp_dir("shortbin");
    let gltf = quad_scene(&dir, None);
    let bin = dir.join("quad.bin");
    let bytes = std::fs::read(&bin).unwrap();
    std::fs::write(&bin, &bytes[..bytes.len() / 2]).unwrap();
    expect_error(
        &["import", "--scene", s(&gltf)],
        &["quad.gltf", "truncated"],
    );
}

#[test]
fn unsupported_required_extension() {
    let dir = temp_dir("draco");
    let gltf = quad_scene(&dir, None);
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&gltf).unwrap()).unwrap();
    doc["extensionsUsed"] = serde_json::json!(["KHR_draco_mesh_compression"]);
    doc["extensionsRequired"] = serde_json::json!(["KHR_draco_mesh_compression"]);
    std::fs::write(&gltf, serde_json::to_vec(&doc).unwrap()).unwrap();
    expect_error(
        &["import", "--scene", s(&gltf)],
        &["quad.gltf", "KHR_draco_mesh_compression", "unsupported"],
    );
}

#[test]
fn undecodable_image() {
    let dir = temp_dir("badimg");
    let gltf = quad_scene(&dir, Some("bad.png"));
    std::fs::write(dir.join("bad.png"), b"\x89PNG\r\n\x1a\nthis is not a png").unwrap();
    expect_error(
        &[
            "render",
            "--scene",
            s(&gltf),
            "--out",
            s(&dir.join("o.png")),
            "--size",
            "16x16",
        ],
        &["bad.png"],
    );
}

#[test]
fn missing_image_is_an_error_unless_allowed() {
    let dir = temp_dir("noimg");
    let gltf = quad_scene(&dir, Some("gone.png"));
    let out = dir.join("o.png");
    expect_error(
        &[
            "render",
            "--scene",
            s(&gltf),
            "--out",
            s(&out),
            "--size",
            "16x16",
        ],
        &["gone.png"],
    );
    assert!(!out.exists());
    let (ok, stdout, stderr) = run(&[
        "render",
        "--scene",
        s(&gltf),
        "--out",
        s(&out),
        "--size",
        "16x16",
        "--allow-missing-textures",
    ]);
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
    std::fs::write(
        &toml,
        format!("gltf = {:?}\nfov = 3\n", gltf.file_name().unwrap()),
    )
    .unwrap();
    expect_error(
        &["import", "--scene", s(&toml)],
        &["scene.toml", "unknown field", "fov"],
    );
    std::fs::write(
        &toml,
        format!(
            "gltf = {:?}\n[render]\nsize = \"big\"\n",
            gltf.file_name().unwrap()
        ),
    )
    .unwrap();
    expect_error(
        &["import", "--scene", s(&toml)],
        &["scene.toml", "invalid type", "size"],
    );
    std::fs::write(&toml, "gltf = \"elsewhere.gltf\"\n").unwrap();
    expect_error(
        &["import", "--scene", s(&toml)],
        &["elsewhere.gltf", "cannot read"],
    );
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
        &[
            "render",
            "--scene",
            s(&gltf),
            "--out",
            s(&dir.join("o.png")),
            "--camera",
            "nowhere",
        ],
        &["nowhere", "no camera"],
    );
}

#[test]
fn renders_a_textured_quad() {
    let dir = temp_dir("quadpng");
    write_checker_png(&dir.join("checker.png"), 16);
    let gltf = quad_scene(&dir, Some("checker.png"));
    let out = dir.join("quad.png");
    let (ok, stdout, stderr) = run(&[
        "render",
        "--scene",
        s(&gltf),
        "--out",
        s(&out),
        "--size",
        "32x24",
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("1 distinct texture sets"), "{stdout}");
    let img = image::open(&out).unwrap().to_rgba8();
    assert_eq!(img.dimensions(), (32, 24));
}

#[test]
fn compress_inspect_decompress_round_trip() {
    let dir = temp_dir("codec");
    write_checker_png(&dir.join("checker.png"), 16);
    let gltf = quad_scene(&dir, Some("checker.png"));
    let ntc = dir.join("quad.ntc");
    let report = dir.join("report.json");
    let (ok, stdout, stderr) = run(&[
        "compress",
        "--scene",
        s(&gltf),
        "--out",
        s(&ntc),
        "--steps",
        "60",
        "--batch",
        "512",
        "--report",
        s(&report),
        "--log-every",
        "10",
    ]);
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
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(
        json["materials"][0]["bcn"].as_array().map(Vec::len),
        Some(2),
        "BCn baselines in the report"
    );
    let (ok, stdout, stderr) = run(&["inspect", s(&ntc), "--json"]);
    assert!(ok, "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["materials"][0]["name"], "checker");
    assert!(summary["materials"][0]["bits_per_texel"].as_f64().unwrap() > 0.0);
    let out = dir.join("decoded");
    let (ok, _, stderr) = run(&["decompress", s(&ntc), "--out", s(&out), "--mips"]);
    assert!(ok, "{stderr}");
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
fn rate_control_picks_the_smallest_preset_that_reaches_the_target() {
    let dir = temp_dir("rate");
    write_checker_png(&dir.join("checker.png"), 16);
    let gltf = quad_scene(&dir, Some("checker.png"));
    // The report's one material: its preset, target and tries (preset, pooled PSNR).
    let compress = |name: &str, rate: &[&str]| {
        let report = dir.join(format!("{name}.json"));
        let ntc = dir.join(format!("{name}.ntc"));
        let mut args = vec![
            "compress",
            "--scene",
            s(&gltf),
            "--out",
            s(&ntc),
            "--steps",
            "40",
            "--batch",
            "256",
            "--report",
            s(&report),
        ];
        args.extend_from_slice(rate);
        let (ok, _, stderr) = run(&args);
        assert!(ok, "{stderr}");
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        json["materials"][0].clone()
    };
    let tries = |m: &serde_json::Value| -> Vec<(String, f64)> {
        m["rate_tries"]
            .as_array()
            .expect("tries")
            .iter()
            .map(|t| {
                (
                    t["preset"].as_str().expect("preset").to_owned(),
                    t["psnr_pooled"].as_f64().expect("psnr"),
                )
            })
            .collect()
    };
    // Any trained checker beats 10 dB: the smallest preset, one try.
    let easy = compress("easy", &["--target-psnr", "10"]);
    assert_eq!(easy["preset"], "low", "{easy}");
    assert_eq!(tries(&easy).len(), 1, "{easy}");
    // 99 dB is out of reach: every preset in increasing size, the largest kept.
    let hard = compress("hard", &["--target-psnr", "99"]);
    let hard_tries = tries(&hard);
    let presets: Vec<&str> = hard_tries.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(presets, ["low", "medium", "high", "very-high"], "{hard}");
    assert_eq!(hard["preset"], "very-high");
    assert!(hard_tries.iter().all(|(_, p)| *p < 99.0));
    // A target between: every try but the last missed it, the last (kept) reached it or
    // is the largest preset.
    let middle = (hard_tries[0].1 + 1.0).to_string();
    let between = compress("between", &["--target-psnr", &middle]);
    let t = tries(&between);
    let (last, missed) = t.split_last().expect("a try");
    assert!(
        missed.iter().all(|(_, p)| *p < hard_tries[0].1 + 1.0),
        "{between}"
    );
    assert!(
        last.1 >= hard_tries[0].1 + 1.0 || last.0 == "very-high",
        "{between}"
    );
    assert_eq!(between["preset"].as_str(), Some(last.0.as_str()));
    // --match-bcn targets the set's BC1/BC5 pooled PSNR.
    let bcn = compress("bcn", &["--match-bcn", "bc1"]);
    let target = bcn["target_psnr"].as_f64().expect("target");
    let baseline = bcn["bcn"][0]["psnr_mip0"]["all"]
        .as_f64()
        .expect("bc1 psnr");
    assert_eq!(target, baseline, "{bcn}");
    let x = dir.join("x.ntc");
    expect_error(
        &[
            "compress",
            "--scene",
            s(&gltf),
            "--out",
            s(&x),
            "--match-bcn",
            "bc7",
            "--no-bcn",
        ],
        &["--no-bcn"],
    );
}

#[test]
fn cluster_divergence_aware_needs_a_sound_record() {
    let dir = temp_dir("cooc");
    write_checker_png(&dir.join("checker.png"), 16);
    let gltf = quad_scene(&dir, Some("checker.png"));
    let plan = dir.join("plan.json");
    let cluster = |extra: &[&str]| {
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
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let args = cluster(&["--strategy", "divergence-aware"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    expect_error(&args, &["divergence-aware", "--cooccurrence"]);
    let record = dir.join("views.cooc.json");
    std::fs::write(
        &record,
        b"{\"format\": \"neurotex-cooccurrence\", \"version\"",
    )
    .unwrap();
    let args = cluster(&[
        "--strategy",
        "divergence-aware",
        "--cooccurrence",
        s(&record),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    expect_error(&args, &["views.cooc.json", "JSON"]);
    assert!(!plan.exists(), "no plan is written from a bad record");
}
