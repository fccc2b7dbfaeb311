//! `neurotex bench decode --quick` through the real binary (on lavapipe in CI): its JSON
//! report is checked for structure and sanity — peaks measured and equal to their CPU
//! references, every case × variant present once, times positive and ordered, the
//! sorted kernels' four stages timed, every kernel's decoded frames equal to the CPU
//! decoder, the stability flags on every row, and every variant's decode cut into its
//! input, MLP and output stages on the Table 5 cases. Never for speed.

use std::collections::BTreeSet;

use serde_json::Value;

#[test]
fn quick_decode_bench_reports_every_kernel_equal_to_the_cpu_decoder() {
    let dir = crate::common::temp_dir("bench-decode-quick");
    let out = dir.join("report");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_neurotex"))
        .args(["bench", "decode", "--quick", "--out"])
        .arg(&out)
        .output()
        .expect("run neurotex");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "bench decode --quick failed: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    for file in ["decode.json", "decode.csv", "decode.md", "decode.png"] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
    let report = crate::common::read_json(out.join("decode.json"));

    let peaks = report["peaks"].as_array().expect("peaks");
    let names: Vec<&str> = peaks.iter().filter_map(|p| p["name"].as_str()).collect();
    for name in ["f32 FMA", "copy"] {
        assert!(names.contains(&name), "peak {name} missing: {names:?}");
    }
    for p in peaks {
        assert!(p["ms"].as_f64().expect("ms") > 0.0, "{p}");
        assert!(p["value"].as_f64().expect("value") > 0.0, "{p}");
        assert_ne!(
            p["equal"],
            Value::Bool(false),
            "peak differs from its CPU reference: {p}"
        );
    }

    let sizes = report["sizes"].as_array().expect("sizes").len();
    let mixes = report["mixes"].as_array().expect("mixes").len();
    let materials = report["materials"].as_u64().expect("materials");
    let rows = report["rows"].as_array().expect("rows");
    let variant = |r: &Value| format!("{} {}", r["kernel"], r["tile"]);
    let variants: BTreeSet<String> = rows.iter().map(variant).collect();
    // Every kernel lavapipe runs: f32, f16 (shader_f16), fma, sorted-fma at least.
    let kernels: BTreeSet<&str> = rows.iter().filter_map(|r| r["kernel"].as_str()).collect();
    for k in ["f32", "f16", "fma", "sorted-fma"] {
        assert!(kernels.contains(k), "kernel {k} missing: {kernels:?}");
    }
    assert_eq!(
        rows.len(),
        variants.len() * sizes * mixes * 2,
        "one row per case and variant"
    );
    let cases: BTreeSet<String> = rows
        .iter()
        .map(|r| format!("{} {} {} {}", r["size"], r["mix"], r["shared"], variant(r)))
        .collect();
    assert_eq!(cases.len(), rows.len(), "a case measured twice");
    for r in rows {
        let ms = &r["ms"];
        let (p10, median, p90) = (
            ms["p10"].as_f64().expect("p10"),
            ms["median"].as_f64().expect("median"),
            ms["p90"].as_f64().expect("p90"),
        );
        assert!(p10 > 0.0 && p10 <= median && median <= p90, "{r}");
        assert!(
            r["unstable"].is_boolean() && r["remeasured"].is_boolean(),
            "{r}"
        );
        assert!(r["tflops"].as_f64().expect("tflops") > 0.0, "{r}");
        let shared = r["shared"].as_bool().expect("shared");
        let decoders = r["decoders"].as_u64().expect("decoders");
        assert_eq!(decoders, if shared { 1 } else { materials }, "{r}");
        let stages: Vec<&str> = r["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .filter_map(|s| s[0].as_str())
            .collect();
        let expected: &[&str] = if r["kernel"]
            .as_str()
            .is_some_and(|k| k.starts_with("sorted"))
        {
            &[
                "ntc.sort.count",
                "ntc.sort.scan",
                "ntc.sort.scatter",
                "ntc.decode",
            ]
        } else {
            &["ntc.decode"]
        };
        assert_eq!(stages, expected, "{r}");
        let check = &r["check"];
        let pixels = r["size"].as_u64().expect("size").pow(2) as usize;
        let compared = check["compared"].as_u64().expect("compared") as usize;
        let skipped = check["skipped"].as_u64().expect("skipped") as usize;
        assert_eq!(compared + skipped, pixels, "every pixel checked: {r}");
        assert!(skipped * 20 < pixels, "{r}");
        assert_eq!(check["over_tolerance"], 0, "{r}");
        assert_eq!(check["equal"], true, "{r}");
    }
    // Stage costs: every variant on every size (the first mix, separate), each stage
    // timed alone, the bounding stage the slowest.
    let stage_rows = report["stage_rows"].as_array().expect("stage_rows");
    assert_eq!(stage_rows.len(), variants.len() * sizes, "{stage_rows:?}");
    for r in stage_rows {
        let stages = r["stages"].as_array().expect("stages");
        let names: Vec<&str> = stages.iter().filter_map(|c| c["stage"].as_str()).collect();
        assert_eq!(names, ["input", "mlp", "output"], "{r}");
        let mut slowest = ("", 0.0);
        for c in stages {
            let ms = c["ms"]["median"].as_f64().expect("median");
            assert!(ms > 0.0 && c["rate"].as_f64().expect("rate") > 0.0, "{c}");
            assert!(c["unstable"].is_boolean(), "{c}");
            let unit = if c["stage"] == "mlp" {
                "TFLOP/s"
            } else {
                "TB/s"
            };
            assert_eq!(c["unit"], unit, "{c}");
            if ms > slowest.1 {
                slowest = (c["stage"].as_str().expect("stage"), ms);
            }
        }
        assert_eq!(r["bound_by"], slowest.0, "{r}");
        assert!(r["all"]["median"].as_f64().expect("all") > 0.0, "{r}");
    }
    let md = std::fs::read_to_string(out.join("decode.md")).expect("md");
    assert!(md.contains("## Stage costs"), "{md}");
    assert_eq!(
        report["skipped"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Materials per tile that neither an 8×8 tile nor the synthetic package can hold are
/// refused before anything is measured.
#[test]
fn impossible_mixes_are_refused() {
    let dir = crate::common::temp_dir("bench-decode-mixes");
    for mixes in ["65", "7"] {
        let out = dir.join(format!("m{mixes}"));
        crate::common::expect_error(
            &[
                "bench",
                "decode",
                "--quick",
                "--mixes",
                mixes,
                "--out",
                crate::common::s(&out),
            ],
            &["materials per 8×8 tile", "1..="],
        );
        assert!(!out.join("decode.json").exists());
    }
}
