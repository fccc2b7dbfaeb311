//! The offline study end to end through the real binary, on the shared adapter (lavapipe
//! in CI): six tiny texture sets in two visually distinct families, listed in a manifest
//! with a category per set, go through `cluster` → `compress --plan` → `inspect`, and
//! through one small `eval` whose outputs, run sharing and `--resume` are checked.
//!
//! Step counts and batches are tiny (a few training chunks of 32 steps) so that the file
//! runs in well under a minute and a half on two CPU cores; the PSNR bands are therefore
//! wide, and only the structure of the results is asserted exactly.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::{expect_error, expect_ok, json_array, read_json, s, small_compress, temp_dir};

/// A deterministic byte stream (xorshift).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u8 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 56) as u8
    }
}

/// The family of set `i`: even sets are warm, noisy "brick", odd sets cool, striped
/// "fabric".
fn family(i: usize) -> &'static str {
    if i.is_multiple_of(2) {
        "Brick"
    } else {
        "Fabric"
    }
}

/// A fresh [`temp_dir`] `name` holding six base-colour PNGs (32², 32², 24², 24², 16², 16²)
/// and a manifest whose `paper_category` is the family, or empty without `labelled`:
/// (the folder, the manifest).
fn fixture(name: &str, labelled: bool) -> (PathBuf, PathBuf) {
    let dir = temp_dir(name);
    let mut csv = String::from(
        "set_id,category,paper_category,basecolor,normal,alpha,roughness_const,metallic_const\n",
    );
    for i in 0..6 {
        let size = [32u32, 24, 16][i / 2];
        let mut noise = Noise(0x9e37_79b9_7f4a_7c15 ^ (i as u64 + 1));
        let mut px = Vec::new();
        for _ in 0..size {
            for x in 0..size {
                let v = noise.next() / 3;
                let rgb = if i.is_multiple_of(2) {
                    [150 + v, 30 + v / 2, 25 + v / 3]
                } else {
                    let on = (x + i as u32) % 6 < 3;
                    [30, 60, if on { 220 } else { 120 } - v / 4]
                };
                px.extend([rgb[0], rgb[1], rgb[2], 255]);
            }
        }
        let file = format!("set{i}_basecolor.png");
        image::save_buffer(
            dir.join(&file),
            &px,
            size,
            size,
            image::ExtendedColorType::Rgba8,
        )
        .expect("write png");
        let category = if labelled { family(i) } else { "" };
        csv.push_str(&format!(
            "tiny/set{i},{},{category},{file},,0,0.6,0\n",
            family(i).to_lowercase()
        ));
    }
    let manifest = dir.join("manifest.csv");
    std::fs::write(&manifest, csv).expect("write manifest");
    (dir, manifest)
}

/// The set index of a set name (`set3` → 3).
fn index_of(name: &str) -> usize {
    name.trim_start_matches("set").parse().expect("set name")
}

/// Rows of a CSV file as header → value maps, and the header.
fn read_csv(path: &Path) -> (Vec<String>, Vec<BTreeMap<String, String>>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("header")
        .split(',')
        .map(String::from)
        .collect();
    let rows = lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), header.len(), "{}: row `{l}`", path.display());
            header
                .iter()
                .cloned()
                .zip(cells.into_iter().map(String::from))
                .collect()
        })
        .collect();
    (header, rows)
}

fn psnr(row: &BTreeMap<String, String>, column: &str) -> f64 {
    let v: f64 = row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{column}: {row:?}"));
    // A few dozen steps on 16²–32² sets reach roughly 15–30 dB.
    assert!((8.0..60.0).contains(&v), "{column} = {v} dB: {row:?}");
    v
}

/// `eval` of `manifest` into `out` with the tests' small settings (m = 2, 32 steps per
/// set, batch 256, the default recipe, a loss point every 32 steps), then `extra`.
fn study_args<'a>(manifest: &'a Path, out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "eval",
        "--manifest",
        s(manifest),
        "--out",
        s(out),
        "--m",
        "2",
        "--steps",
        "32",
        "--batch",
        "256",
        "--recipe",
        "default",
        "--log-every",
        "32",
    ];
    args.extend_from_slice(extra);
    args
}

/// A [`fixture`] and the folder `out` in it that its study writes.
struct Study {
    /// The fixture's folder.
    dir: PathBuf,
    /// Its manifest.
    manifest: PathBuf,
    /// The study's output folder.
    out: PathBuf,
}

impl Study {
    /// A fresh [`fixture`] `name`.
    fn new(name: &str, labelled: bool) -> Self {
        let (dir, manifest) = fixture(name, labelled);
        let out = dir.join("out");
        Self { dir, manifest, out }
    }

    /// [`study_args`] of the fixture into `out`, then `extra`.
    fn args<'a>(&'a self, extra: &[&'a str]) -> Vec<&'a str> {
        study_args(&self.manifest, &self.out, extra)
    }
}

#[test]
fn cluster_compress_inspect_share_decoders_by_family() {
    let (dir, manifest) = fixture("eval-cluster", true);
    let plan = dir.join("plan.json");
    expect_ok(&[
        "cluster",
        "--manifest",
        s(&manifest),
        "--m",
        "2",
        "--out",
        s(&plan),
    ]);
    let json = read_json(&plan);
    let groups = json_array(&json, "groups");
    assert_eq!(groups.len(), 2, "{json}");
    for g in groups {
        let members: Vec<usize> = json_array(g, "sets")
            .iter()
            .map(|n| index_of(n.as_str().expect("name")))
            .collect();
        assert_eq!(members.len(), 3, "{g}");
        assert!(
            members.iter().all(|&i| family(i) == family(members[0])),
            "a group mixes families: {g}"
        );
    }
    let sheet = image::open(dir.join("plan.png")).expect("contact sheet PNG");
    assert!(sheet.width() > 0 && sheet.height() > 0);

    let ntc = dir.join("tiny.ntc");
    let report = dir.join("report.json");
    expect_ok(&small_compress(
        ["--manifest", s(&manifest)],
        &ntc,
        "32",
        &["--plan", s(&plan), "--report", s(&report)],
    ));
    // Budgets are per set: each group of 3 sets trains 3 × 32 main steps.
    let report = read_json(report);
    let budgets: Vec<(usize, u64)> = json_array(&report, "groups")
        .iter()
        .map(|g| {
            (
                json_array(g, "sets").len(),
                g["steps"].as_u64().expect("steps"),
            )
        })
        .collect();
    assert_eq!(budgets, vec![(3, 96), (3, 96)], "{report}");
    let summary: serde_json::Value =
        serde_json::from_str(&expect_ok(&["inspect", s(&ntc), "--json"])).expect("inspect JSON");
    assert_eq!(summary["decoders"], 2, "{summary}");
    let materials = json_array(&summary, "materials");
    assert_eq!(materials.len(), 6);
    let mut decoder_of = BTreeMap::new();
    for m in materials {
        let set = index_of(m["name"].as_str().expect("name"));
        let decoder = m["decoder"].as_u64().expect("decoder");
        assert!(decoder < 2, "{m}");
        decoder_of.insert(set, decoder);
    }
    // Both decoders are used, each by exactly one family.
    for i in 0..6 {
        assert_eq!(
            decoder_of[&i] == decoder_of[&0],
            family(i) == family(0),
            "{decoder_of:?}"
        );
    }
}

#[test]
fn eval_writes_every_section_shares_runs_and_resumes() {
    let study = Study::new("eval-study", true);
    let out = &study.out;
    let args = study.args(&["--m-sweep", "1,2", "--freeze", "none,0.5"]);
    let started = std::time::Instant::now();
    let stdout = expect_ok(&args);
    eprintln!("eval: {:.1} s", started.elapsed().as_secs_f64());
    // Five distinct trainings: the category plan is the clustered one (the families), the
    // ablation's 0.5 is Table 2's clustered run, the sweep's points are Table 2's runs.
    let trained: Vec<&str> = stdout.lines().filter(|l| l.contains(": trained")).collect();
    assert_eq!(trained.len(), 5, "{stdout}");

    let plans = [
        "plans/baseline.json",
        "plans/single.json",
        "plans/clustered.json",
        "plans/random.json",
        "plans/category.json",
        "plans/clustered.png",
    ];
    for file in plans.into_iter().chain(neurotex::eval::OUTPUT_FILES) {
        assert!(out.join(file).is_file(), "{file} missing");
    }
    for png in ["plans/clustered.png", "freezing_curves.png", "m_sweep.png"] {
        image::open(out.join(png)).unwrap_or_else(|e| panic!("{png}: {e}"));
    }
    let mut runs: Vec<String> = std::fs::read_dir(out.join("runs"))
        .expect("runs")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    runs.sort();
    assert_eq!(
        runs,
        [
            "baseline.json",
            "clustered-m2-freeze-none.json",
            "clustered-m2.json",
            "random-m2.json",
            "single.json"
        ],
        "one record per run, packages deleted"
    );

    // Table 2: one row per strategy, a PSNR column per category.
    let (header, rows) = read_csv(&out.join("table2.csv"));
    assert_eq!(
        header,
        [
            "strategy",
            "decoders",
            "mean_psnr_db",
            "psnr_db_Brick",
            "psnr_db_Fabric",
            "bits_per_texel",
            "train_seconds",
            "run"
        ]
    );
    let strategies: Vec<&str> = rows.iter().map(|r| r["strategy"].as_str()).collect();
    assert_eq!(
        strategies,
        ["baseline", "single", "clustered", "random", "category"]
    );
    let decoders: Vec<&str> = rows.iter().map(|r| r["decoders"].as_str()).collect();
    assert_eq!(decoders, ["6", "1", "2", "2", "2"]);
    for r in &rows {
        let mean = psnr(r, "mean_psnr_db");
        let (brick, fabric) = (psnr(r, "psnr_db_Brick"), psnr(r, "psnr_db_Fabric"));
        // Three sets of each family: the mean over all is the mean of the two.
        assert!((mean - (brick + fabric) / 2.0).abs() < 1e-3, "{r:?}");
        assert!(r["bits_per_texel"].parse::<f64>().expect("bits") > 0.0);
    }
    assert_eq!(
        rows[4]["run"], rows[2]["run"],
        "category shares the clustered run"
    );

    // The ablation: one row per setting, curves with several points each.
    let (header, rows) = read_csv(&out.join("freezing.csv"));
    assert_eq!(header, ["freeze", "mean_psnr_db", "final_loss", "run"]);
    let settings: Vec<&str> = rows.iter().map(|r| r["freeze"].as_str()).collect();
    assert_eq!(settings, ["none", "0.5"]);
    assert_eq!(rows[1]["run"], "clustered-m2");
    for r in &rows {
        psnr(r, "mean_psnr_db");
        assert!(r["final_loss"].parse::<f64>().expect("loss") > 0.0);
    }
    let (header, rows) = read_csv(&out.join("freezing_curves.csv"));
    assert_eq!(header, ["freeze", "step", "loss"]);
    for setting in ["none", "0.5"] {
        let points = rows.iter().filter(|r| r["freeze"] == setting).count();
        assert!(points >= 2, "{setting}: {points} points");
    }

    // The sweep: clustered and random at each m.
    let (header, rows) = read_csv(&out.join("m_sweep.csv"));
    assert_eq!(
        header,
        [
            "m",
            "strategy",
            "decoders",
            "mean_psnr_db",
            "train_seconds",
            "run"
        ]
    );
    let points: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["m"].as_str(),
                r["strategy"].as_str(),
                r["decoders"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        points,
        [
            ("1", "clustered", "1"),
            ("1", "random", "1"),
            ("2", "clustered", "2"),
            ("2", "random", "2")
        ]
    );
    assert_eq!(rows[0]["run"], "single");

    let summary = read_json(out.join("summary.json"));
    assert_eq!(summary["runs"].as_array().map(Vec::len), Some(5));
    assert_eq!(summary["steps"], 32);
    assert!(
        summary["command_line"]
            .as_str()
            .is_some_and(|c| c.contains("eval") && c.contains("--m-sweep 1,2")),
        "{}",
        summary["command_line"]
    );
    assert!(summary["adapter"].as_str().is_some_and(|a| !a.is_empty()));
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    for heading in ["## Table 2", "## Decoder freezing", "## Number of decoders"] {
        assert!(report.contains(heading), "{heading}");
    }

    // A non-empty out folder needs --resume.
    let line = expect_error(&args, &[]);
    assert!(line.contains(s(out)) && line.contains("--resume"), "{line}");

    // Resume after losing one record: only that run trains again.
    let record = |name: &str| out.join("runs").join(format!("{name}.json"));
    let modified = |name: &str| {
        std::fs::metadata(record(name))
            .and_then(|m| m.modified())
            .expect("mtime")
    };
    let kept = [
        "baseline",
        "single",
        "clustered-m2",
        "clustered-m2-freeze-none",
    ];
    let before: Vec<_> = kept.iter().map(|n| modified(n)).collect();
    std::fs::remove_file(record("random-m2")).expect("delete a record");
    // Past --stop-after, finished runs still load but no group starts training: the
    // evaluation stops as an interrupted one, for --resume.
    expect_error(
        &[&args[..], &["--resume", "--stop-after", "0"]].concat(),
        &["interrupted", "--resume"],
    );
    assert!(
        !record("random-m2").exists(),
        "no run trained past its time"
    );
    let resumed = expect_ok(&[&args[..], &["--resume"]].concat());
    let trained: Vec<&str> = resumed
        .lines()
        .filter(|l| l.contains(": trained"))
        .collect();
    assert_eq!(trained.len(), 1, "{resumed}");
    assert!(trained[0].contains("random-m2"), "{resumed}");
    assert_eq!(
        resumed.lines().filter(|l| l.contains(": loaded")).count(),
        4,
        "{resumed}"
    );
    assert!(record("random-m2").is_file());
    let after: Vec<_> = kept.iter().map(|n| modified(n)).collect();
    assert_eq!(before, after, "loaded records are not rewritten");
    let (_, rows) = read_csv(&out.join("table2.csv"));
    assert_eq!(rows.len(), 5);
    psnr(&rows[3], "mean_psnr_db");
}

#[test]
fn eval_without_categories_leaves_category_out_or_fails_when_asked() {
    let study = Study::new("eval-nocat", false);
    let base = study.args(&["--dry-run"]);
    // From the default list: left out, with a note.
    let stdout = expect_ok(&base);
    assert!(
        stdout.contains("note:") && stdout.contains("`category` left out"),
        "{stdout}"
    );
    assert!(!stdout.contains("Table 2 category"), "{stdout}");
    assert!(stdout.contains("Table 2 baseline"), "{stdout}");
    // Asked for: an error naming the input.
    let line = expect_error(
        &[&base[..], &["--strategies", "baseline,category"]].concat(),
        &[],
    );
    assert!(
        line.contains("manifest.csv") && line.contains("category"),
        "{line}"
    );
    // divergence-aware from manifests alone (no views) without a record: one error
    // naming the inputs and the way out.
    expect_error(
        &[&base[..], &["--strategies", "clustered,divergence-aware"]].concat(),
        &["`divergence-aware`", "manifest.csv", "--cooccurrence FILE"],
    );
    // Out-of-range decoder counts name the option.
    let line = expect_error(&[&base[..], &["--m-sweep", "1,7"]].concat(), &[]);
    assert!(
        line.contains("m = 7") && line.contains("6 texture sets"),
        "{line}"
    );
    assert!(!study.out.exists(), "a dry run writes nothing");
}

/// A run record (or any report JSON) without what may differ between two trainings of
/// the same numbers: wall-clock times and the adapter's description.
fn without_timings(mut v: serde_json::Value) -> serde_json::Value {
    match &mut v {
        serde_json::Value::Object(map) => {
            map.retain(|k, _| !k.contains("seconds") && k != "adapter");
            for value in map.values_mut() {
                *value = without_timings(value.take());
            }
        }
        serde_json::Value::Array(items) => {
            for value in items.iter_mut() {
                *value = without_timings(value.take());
            }
        }
        _ => {}
    }
    v
}

/// The settings of the sharded study: three runs (nine group trainings), trained
/// deterministically.
const SHARDED_STUDY: [&str; 5] = [
    "--strategies",
    "baseline,single,clustered",
    "--no-ablation",
    "--no-sweep",
    "--deterministic",
];

#[test]
fn eval_shards_merge_to_the_numbers_of_the_unsharded_eval() {
    let (dir, manifest) = fixture("eval-shards", true);
    let args = |out, extra| {
        let mut a = study_args(&manifest, out, &SHARDED_STUDY);
        a.extend_from_slice(extra);
        a
    };
    let run_ok = |args: &[&str], env: &[(&str, &str)]| {
        let (success, stdout, stderr) = crate::common::run_env(args, env);
        assert!(success, "{args:?} failed:\n{stdout}\n{stderr}");
        stdout
    };
    let whole = dir.join("whole");
    run_ok(&args(&whole, &[]), &[]);
    // Two shards: the index given, and from a Kubernetes Indexed Job's variable.
    let (s0, s1) = (dir.join("s0"), dir.join("s1"));
    let out0 = run_ok(&args(&s0, &["--shard", "0/2"]), &[]);
    let out1 = run_ok(
        &args(&s1, &["--shard", "auto/2"]),
        &[("JOB_COMPLETION_INDEX", "1")],
    );
    assert!(out0.contains("shard 0/2: runs ["), "{out0}");
    assert!(out1.contains("shard 1/2: runs ["), "{out1}");
    // A shard run again resumes: its finished runs are loaded, not retrained.
    let again = run_ok(&args(&s0, &["--shard", "0/2", "--resume"]), &[]);
    assert!(
        again.contains(": loaded") && !again.contains(": trained"),
        "{again}"
    );
    for shard in [&s0, &s1] {
        assert!(shard.join("eval-part.json").is_file());
        assert!(
            !shard.join("table2.csv").exists(),
            "a shard writes no tables"
        );
    }

    // Refusals, before anything is written: a missing shard, a repeated one.
    let refused = dir.join("refused");
    let refuse = |parts: &[&Path], needles: &[&str]| {
        let mut a = args(&refused, &["--merge"]);
        a.extend(parts.iter().map(|p| s(p)));
        expect_error(&a, needles);
        assert!(
            !refused.exists(),
            "{parts:?}: {} written",
            refused.display()
        );
    };
    refuse(&[&s0], &["missing", "shard 1/2 (runs "]);
    refuse(&[&s0, &s1, &s0], &["given twice", "s0"]);
    refuse(&[&s0, &dir], &["eval-part.json", "--shard"]);

    let merged = dir.join("merged");
    let mut merge = args(&merged, &["--merge"]);
    merge.extend([s(&s0), s(&s1)]);
    let stdout = run_ok(&merge, &[]);
    assert!(stdout.contains("merged 2 shards"), "{stdout}");

    // The same files as the unsharded evaluation, with the same numbers.
    let files = |root: &Path| {
        let mut v = Vec::new();
        for sub in ["", "runs", "plans"] {
            for e in std::fs::read_dir(root.join(sub)).expect("folder") {
                let e = e.expect("entry");
                if e.path().is_file() {
                    v.push(format!("{sub}/{}", e.file_name().to_string_lossy()));
                }
            }
        }
        v.sort();
        v
    };
    assert_eq!(files(&merged), files(&whole));
    let json = |p: PathBuf| -> serde_json::Value { without_timings(read_json(&p)) };
    for name in files(&whole).iter().filter(|f| f.starts_with("runs/")) {
        let name = name.trim_start_matches('/');
        assert_eq!(
            json(merged.join(name)),
            json(whole.join(name)),
            "{name} differs"
        );
    }
    let table = |root: &Path| {
        let (header, mut rows) = read_csv(&root.join("table2.csv"));
        for row in &mut rows {
            row.remove("train_seconds");
        }
        (header, rows)
    };
    assert_eq!(table(&merged), table(&whole));
    let summary = |root: &Path| json(root.join("summary.json"))["table2"].clone();
    assert_eq!(summary(&merged), summary(&whole));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn eval_over_seeds_writes_each_seed_and_the_spread_of_every_cell() {
    let study = Study::new("eval-seeds", true);
    let out = &study.out;
    let args = study.args(&[
        "--strategies",
        "baseline,single,clustered,random",
        "--no-ablation",
        "--m-sweep",
        "2",
        "--seeds",
        "3,5,3",
    ]);
    let stdout = expect_ok(&args);
    assert!(
        stdout.contains("seed 3:") && stdout.contains("seed 5:"),
        "{stdout}"
    );
    // Each seed is a whole evaluation of its own, with its own seed in its runs.
    let mut per_seed = Vec::new();
    for seed in [3u64, 5] {
        let sub = out.join(format!("seed-{seed}"));
        let (_, rows) = read_csv(&sub.join("table2.csv"));
        let baseline = rows
            .iter()
            .find(|r| r["strategy"] == "baseline")
            .expect("baseline row");
        per_seed.push(psnr(baseline, "mean_psnr_db"));
        let record: serde_json::Value = serde_json::from_slice(
            &std::fs::read(sub.join("runs").join("baseline.json")).expect("run record"),
        )
        .expect("json");
        assert_eq!(record["seed"], seed, "{record}");
    }
    assert!(!out.join("seed-1").exists(), "only the listed seeds run");
    // The aggregate: every strategy, its spread over the two seeds and each seed's value.
    let (header, rows) = read_csv(&out.join("table2.csv"));
    for column in [
        "mean_psnr_db",
        "sd_db",
        "min_db",
        "max_db",
        "minus_baseline_db",
        "psnr_db_seed_3",
        "psnr_db_seed_5",
    ] {
        assert!(header.iter().any(|h| h == column), "{column}: {header:?}");
    }
    assert_eq!(rows.len(), 4, "{rows:?}");
    let baseline = rows
        .iter()
        .find(|r| r["strategy"] == "baseline")
        .expect("row");
    let cell = |c: &str| -> f64 { baseline[c].parse().expect(c) };
    assert!((cell("psnr_db_seed_3") - per_seed[0]).abs() < 1e-3);
    assert!((cell("psnr_db_seed_5") - per_seed[1]).abs() < 1e-3);
    assert!((cell("mean_psnr_db") - (per_seed[0] + per_seed[1]) / 2.0).abs() < 1e-3);
    assert!((cell("min_db") - per_seed[0].min(per_seed[1])).abs() < 1e-3);
    let single = rows
        .iter()
        .find(|r| r["strategy"] == "single")
        .expect("row");
    let d: f64 = single["minus_baseline_db"].parse().expect("difference");
    let s3: f64 = single["psnr_db_seed_3"].parse().expect("seed 3");
    let s5: f64 = single["psnr_db_seed_5"].parse().expect("seed 5");
    assert!((d - ((s3 - per_seed[0]) + (s5 - per_seed[1])) / 2.0).abs() < 1e-3);
    let (_, sweep) = read_csv(&out.join("m_sweep.csv"));
    assert!(
        sweep
            .iter()
            .any(|r| r["m"] == "2" && r["strategy"] == "random"),
        "{sweep:?}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(
        report.contains("over 2 seeds") && report.contains("held in"),
        "{report}"
    );
    // Resuming loads every run of both seeds; a non-empty folder without it is refused.
    let resumed = expect_ok(&[&args[..], &["--resume"]].concat());
    assert!(!resumed.contains("trained,"), "{resumed}");
    expect_error(&args, &["not empty", "--resume"]);
    // Stopped in a seed (here --stop-after 0 before seed 5's single run, whose record is
    // gone): the study over what finished is still written, and the command fails.
    std::fs::remove_file(out.join("seed-5/runs/single.json")).expect("remove a run");
    expect_error(
        &[&args[..], &["--resume", "--stop-after", "0"]].concat(),
        &["interrupted", "--resume"],
    );
    let (_, rows) = read_csv(&out.join("table2.csv"));
    assert_eq!(rows.len(), 4, "{rows:?}");
    for r in &rows {
        assert!(!r["psnr_db_seed_3"].is_empty(), "{r:?}");
        assert_eq!(
            r["psnr_db_seed_5"].is_empty(),
            r["strategy"] == "single",
            "{r:?}"
        );
    }
    let md = std::fs::read_to_string(out.join("table2.md")).expect("table2.md");
    assert!(
        md.contains("stopped in seed 5, where single did not run") && md.contains(" of 1 seeds"),
        "{md}"
    );
    // --seeds excludes --seed and --shard.
    expect_error(&[&args[..], &["--seed", "2"]].concat(), &["--seed"]);
}

#[test]
fn eval_over_budgets_writes_each_budget_the_curves_and_reuses_finished_runs() {
    let study = Study::new("eval-budgets", true);
    let out = &study.out;
    // study_args without its --steps: the budgets give the steps.
    let args = |extra: &[&'static str]| -> Vec<String> {
        let mut v: Vec<String> = study.args(extra).into_iter().map(String::from).collect();
        let at = v.iter().position(|a| a == "--steps").expect("--steps");
        v.drain(at..at + 2);
        v
    };
    let run = |extra: &[&'static str]| {
        let v = args(extra);
        expect_ok(&v.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let common = [
        "--strategies",
        "baseline,single",
        "--no-ablation",
        "--no-sweep",
    ];
    // --epochs: the six sets hold (2·32² + 2·24² + 2·16²) / 6 = 618.7 mip-0 texels on
    // average, so 2 epochs at batch 256 are ⌈4.83⌉ = 5 steps per set.
    let planned = run(&[&common[..], &["--epochs", "2", "--dry-run"]].concat());
    assert!(planned.contains("5 main steps per set"), "{planned}");
    let stdout = run(&[&common[..], &["--budgets", "64,32,64"]].concat());
    assert!(
        stdout.contains("13.2 epochs") && stdout.contains("26.5 epochs"),
        "{stdout}"
    );
    // Each budget is an evaluation of its own, at its own steps.
    for budget in [32u64, 64] {
        let sub = out.join(format!("budget-{budget}"));
        let summary = read_json(sub.join("summary.json"));
        assert_eq!(summary["steps"], budget, "{summary}");
        assert_eq!(summary["budget"]["samples_per_material"], budget * 256);
        let report = std::fs::read_to_string(sub.join("report.md")).expect("report");
        assert!(
            report.contains("epochs") && report.contains("decoder_steps"),
            "{report}"
        );
    }
    // The curves: one row per budget and strategy, the single decoder taking all six
    // sets' steps (6 · 32 main steps and its fine-tuning) against 32 for each baseline
    // decoder.
    let (_, rows) = read_csv(&out.join("budgets.csv"));
    assert_eq!(rows.len(), 4, "{rows:?}");
    for r in &rows {
        psnr(r, "mean_psnr_db");
        assert_eq!(r["loaded"], "no", "{r:?}");
        let budget: u64 = r["steps_per_set"].parse().expect("budget");
        let steps: u64 = r["decoder_steps_min"].parse().expect("steps");
        let main = if r["strategy"] == "single" {
            6 * budget
        } else {
            budget
        };
        assert!((main..main + main / 2).contains(&steps), "{r:?}");
    }
    let md = std::fs::read_to_string(out.join("budgets.md")).expect("budgets.md");
    for needle in ["Convergence", "Crossover", "single:", "Reuse:"] {
        assert!(md.contains(needle), "{needle}: {md}");
    }
    let png = std::fs::read(out.join("budgets.png")).expect("budgets.png");
    assert!(png.starts_with(b"\x89PNG"), "budgets.png is a PNG");
    // Reuse: extending the budgets trains only the new one; every earlier run is loaded.
    let extended = run(&[&common[..], &["--budgets", "16,32,64", "--resume"]].concat());
    let trained = extended.matches("trained,").count();
    assert_eq!(trained, 2, "only budget 16's two runs train: {extended}");
    let (_, rows) = read_csv(&out.join("budgets.csv"));
    assert_eq!(rows.len(), 6, "{rows:?}");
    for r in &rows {
        let fresh = r["steps_per_set"] == "16";
        assert_eq!(r["loaded"], if fresh { "no" } else { "yes" }, "{r:?}");
    }
    // A sweep that stops in a budget (here --stop-after 0 before budget 64's single run,
    // whose record is gone) still writes the study over what finished, and fails.
    std::fs::remove_file(out.join("budget-64/runs/single.json")).expect("remove a run");
    let v = args(
        &[
            &common[..],
            &["--budgets", "16,32,64", "--resume", "--stop-after", "0"],
        ]
        .concat(),
    );
    expect_error(
        &v.iter().map(String::as_str).collect::<Vec<_>>(),
        &["interrupted", "--resume"],
    );
    let (_, rows) = read_csv(&out.join("budgets.csv"));
    assert_eq!(rows.len(), 6, "{rows:?}");
    for r in &rows {
        let missing = r["steps_per_set"] == "64" && r["strategy"] == "single";
        assert_eq!(r["mean_psnr_db"].is_empty(), missing, "{r:?}");
        assert_eq!(r["loaded"], if missing { "no" } else { "yes" }, "{r:?}");
    }
    let md = std::fs::read_to_string(out.join("budgets.md")).expect("budgets.md");
    assert!(
        md.contains("stopped in budget 64 steps per set, where single did not run"),
        "{md}"
    );
    // --budgets excludes --steps and --seeds.
    let with_steps: Vec<String> = [&args(&common)[..], &["--steps".into(), "8".into()]]
        .concat()
        .into_iter()
        .chain(["--budgets".into(), "8".into()])
        .collect();
    expect_error(
        &with_steps.iter().map(String::as_str).collect::<Vec<_>>(),
        &["--steps"],
    );
    std::fs::remove_dir_all(&study.dir).ok();
}

/// `eval --rd` on two tiny sets: beside the study, the curves in `out/rd/` from the
/// ladder `compress --rd` trains: one package per rung, per set every rung and BCn
/// baseline a CSV row, the matching rates in the JSON and Markdown, the chart; and
/// `--rd` with `--resume` keeps every finished rung (and run) and writes the same curves.
#[test]
fn eval_rd_writes_the_curves_of_every_set() {
    let (dir, six) = fixture("eval-rd", true);
    let six = std::fs::read_to_string(six).expect("manifest");
    let manifest = dir.join("two.csv");
    let two: String = six.lines().take(3).map(|l| format!("{l}\n")).collect();
    std::fs::write(&manifest, two).expect("write manifest");
    let out = dir.join("out");
    let extra = [
        "--strategies",
        "baseline",
        "--no-ablation",
        "--no-sweep",
        "--rd",
    ];
    let stdout = expect_ok(&study_args(&manifest, &out, &extra));
    assert!(stdout.contains("rd rung high-16x4"), "{stdout}");
    assert!(
        out.join("summary.json").is_file(),
        "the study is written too"
    );
    let rungs = [
        "low-24x4",
        "medium-16x4",
        "medium-24x4",
        "medium-32x4",
        "high-16x4",
        "medium-high-32x4",
        "high-24x4",
        "very-high-16x4",
        "high-32x4",
    ];
    for rung in rungs {
        assert!(
            out.join("rd").join(format!("{rung}.ntc")).is_file(),
            "{rung}"
        );
    }
    let (header, rows) = read_csv(&out.join("rd").join("curves.rd.csv"));
    assert_eq!(header, ["set", "codec", "bits_per_texel", "psnr", "flip"]);
    // Per set: 9 rungs, then the 3 baselines, each with a PSNR.
    assert_eq!(rows.len(), 2 * (9 + 3), "{rows:?}");
    for (i, set) in rows.chunks(12).enumerate() {
        assert!(set.iter().all(|r| r["set"] == format!("set{i}")), "{set:?}");
        // The rungs sorted by rate (on sets this small the ladder's order can differ).
        let mut codecs: Vec<&str> = set[..9].iter().map(|r| r["codec"].as_str()).collect();
        let bits: Vec<f64> = set[..9]
            .iter()
            .map(|r| r["bits_per_texel"].parse().expect("bpt"))
            .collect();
        assert!(bits.windows(2).all(|w| w[0] <= w[1]), "{bits:?}");
        codecs.sort_unstable();
        let mut ladder = rungs;
        ladder.sort_unstable();
        assert_eq!(codecs, ladder);
        for r in set {
            psnr(r, "psnr");
        }
    }
    let json = read_json(out.join("rd").join("curves.rd.json"));
    let sets = json_array(&json, "sets");
    assert_eq!(sets.len(), 2, "{json}");
    assert!(
        sets.iter()
            .all(|s| s["matches"].as_array().map(Vec::len) == Some(3)),
        "{json}"
    );
    let md = std::fs::read_to_string(out.join("rd").join("curves.rd.md")).unwrap();
    assert!(
        md.contains("| BCn | BCn bpt | BCn PSNR | NTC bpt at that PSNR |"),
        "{md}"
    );
    let png = image::open(out.join("rd").join("curves.rd.png")).unwrap();
    assert_eq!((png.width(), png.height()), (1200, 480));
    let first = std::fs::read_to_string(out.join("rd").join("curves.rd.csv")).unwrap();
    let mut resumed = extra.to_vec();
    resumed.push("--resume");
    let stdout = expect_ok(&study_args(&manifest, &out, &resumed));
    let kept = stdout
        .lines()
        .filter(|l| l.starts_with("rd rung ") && l.ends_with(" (kept)"));
    assert_eq!(kept.count(), 9, "{stdout}");
    let again = std::fs::read_to_string(out.join("rd").join("curves.rd.csv")).unwrap();
    assert_eq!(again, first);
}
