//! GPU tests of the screen co-occurrence: the co-occurrence pass against the record's CPU
//! reference (`ViewCounts::count`) on synthetic material-id images (one adapter: lavapipe
//! in CI).

use neurotex::cluster::ViewCounts;
use neurotex::gpu::encoder::FrameEncoder;
use neurotex::gpu::upload::write_level;
use neurotex::gpu::{GpuContext, GpuProfiler};
use neurotex::render::passes::divergence::DecoderMap;
use neurotex::render::passes::tile_signatures::{
    CooccurrenceInputs, CooccurrencePass, SignatureBuffer,
};
use neurotex::render::targets::Target;
use neurotex::screen::divergence::{NO_DECODER, NO_MATERIAL};
use neurotex::screen::tiles::TileSize;

use crate::common::{ctx, read_json, submit};

/// 53 = 3·16 + 5 = 6·8 + 5 columns, 37 = 2·16 + 5 = 9·4 + 1 rows: partial tiles at both
/// edges for every tile size.
const SIZE: (u32, u32) = (53, 37);

/// Materials in the map; ids from here on are past it.
const MAPPED: u32 = 280;

/// Material `i` → set `7i mod 263` (distinct for distinct `i` below 263), every 11th
/// material without a set.
fn set_map() -> Vec<u32> {
    (0..MAPPED)
        .map(|i| if i % 11 == 5 { NO_DECODER } else { i * 7 % 263 })
        .collect()
}

/// A small hash of `i` (deterministic pseudo-random ids).
fn hash(mut h: u32) -> u32 {
    h = h.wrapping_mul(0x9E37_79B9);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2C1B_3C6D);
    h ^ (h >> 12)
}

/// Random words: no geometry in the top-left 16×16 block (tiles without a set); a 16×16
/// block at (16, 16) of 256 distinct materials (a tile of 16×16
/// pixels that shows as many sets as it has pixels, minus those without one), elsewhere
/// pixels without geometry, ids past the map, ids 0xABCDE and random mapped ids in cells
/// of 3×2 pixels (so tiles hold a few sets, as on screen) but material 23 alone in the
/// bottom 5 rows (tiles of one set), every other pixel with bit 31 set.
fn words(salt: u32) -> Vec<u32> {
    let (w, h) = SIZE;
    let mut out = Vec::with_capacity((w * h) as usize);
    for y in 0..h {
        for x in 0..w {
            let sign = if (x ^ y) & 1 == 1 { 0x8000_0000 } else { 0 };
            let r = hash((x + 1000 * y) ^ salt.wrapping_mul(0x85EB_CA6B));
            let word = if x < 16 && y < 16 {
                NO_MATERIAL
            } else if (16..32).contains(&x) && (16..32).contains(&y) {
                ((y - 16) * 16 + (x - 16)) | sign
            } else {
                match r % 16 {
                    0 | 1 => NO_MATERIAL,
                    2 => (MAPPED + r % 50) | sign,
                    3 => 0xA_BCDE | sign,
                    _ if y >= 32 => 23 | sign,
                    _ => (hash((x / 3) * 31 + (y / 2) * 977 + salt) % 12 * 23) | sign,
                }
            };
            out.push(word);
        }
    }
    out
}

/// An R32Uint texture holding `words`.
fn material_target(ctx: &GpuContext, words: &[u32]) -> Target {
    let target = Target::new(
        &ctx.device,
        "test.material",
        SIZE,
        wgpu::TextureFormat::R32Uint,
        wgpu::TextureUsages::COPY_DST,
    );
    write_level(&ctx.queue, &target.texture, 0, bytemuck::cast_slice(words));
    target
}

#[test]
fn gpu_signatures_equal_the_cpu_count_for_every_tile_size() {
    let ctx = ctx();
    let map = set_map();
    let set_map = DecoderMap::new(&ctx.device, "test.set_map", &map);
    for tile in TileSize::ALL {
        let pass = CooccurrencePass::new(ctx, tile).unwrap_or_else(|e| panic!("{e}"));
        let out = SignatureBuffer::new(ctx, tile, SIZE).expect("signature buffer");
        for salt in [1, 2] {
            let words = words(salt);
            let ids = material_target(ctx, &words);
            let inputs = CooccurrenceInputs {
                material_ids: &ids,
                set_map: &set_map,
            };
            submit(ctx, |frame| pass.record(frame, &inputs, &out)).expect("record");
            let gpu = ViewCounts::from_histogram(out.read_histogram(ctx).expect("read"));
            let cpu = ViewCounts::count(&words, SIZE, tile, &map);
            assert_eq!(gpu, cpu, "{tile}, salt {salt}");
            // The image exercises what it claims to: tiles of one and of several sets,
            // tiles showing no set, and (16×16) one tile of 233 sets.
            let (gw, gh) = tile.grid(SIZE);
            assert!(cpu.covered_tiles() < u64::from(gw * gh), "{tile}");
            assert!(cpu.signatures.iter().any(|s| s.sets.len() == 1), "{tile}");
            assert!(cpu.signatures.iter().any(|s| s.sets.len() >= 3), "{tile}");
            let largest = cpu.signatures.iter().map(|s| s.sets.len()).max();
            if tile == TileSize::T16x16 {
                // 256 materials, 23 of them (i mod 11 = 5) without a set.
                assert_eq!(largest, Some(233), "{tile}");
            }
        }
        // Signatures of another size are refused, not written out of bounds.
        let other = SignatureBuffer::new(ctx, tile, (SIZE.0 + 8, SIZE.1)).expect("buffer");
        let ids = material_target(ctx, &words(1));
        let profiler = GpuProfiler::new(ctx);
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        let inputs = CooccurrenceInputs {
            material_ids: &ids,
            set_map: &set_map,
        };
        let frame = &mut FrameEncoder::new(ctx, &mut encoder, &profiler);
        assert!(pass.record(frame, &inputs, &other).is_err());
    }
    assert_eq!(ctx.uncaptured_error_count(), 0);
}

/// A 16×16 PNG of `rgb` varied by ±8 per channel: white noise of its own per `salt`
/// (`bars` false), or vertical bars 4 texels wide shifted by `salt` texels.
fn write_tinted_png(path: &std::path::Path, rgb: [u8; 3], bars: bool, salt: u32) {
    let mut px = Vec::with_capacity(16 * 16 * 4);
    for i in 0..256u32 {
        let d = if bars {
            if ((i % 16 + salt) / 4).is_multiple_of(2) {
                8
            } else {
                -8
            }
        } else {
            (hash(i ^ salt.wrapping_mul(0x85EB_CA6B)) % 17) as i32 - 8
        };
        for c in rgb {
            px.push((i32::from(c) + d).clamp(0, 255) as u8);
        }
        px.push(255);
    }
    image::save_buffer(path, &px, 16, 16, image::ExtendedColorType::Rgba8).expect("write png");
}

/// A scene seen straight from above over 8 m × 8 m at 64×64 pixels (1 m = one 8×8
/// tile, tile edges on whole metres): `alpha` (red) and `bravo` (blue) in alternating
/// 0.5 m stripes over x ∈ [0, 4), so every tile there shows both; `charlie` (alpha's red
/// and kind of noise) and `delta` (bravo's blue and bars, shifted) in 3 m squares, apart
/// from everything. Its
/// description has one camera path of 1 s (three views at Δt = 0.5 s). Returns the
/// description.
fn two_pairs_scene(dir: &std::path::Path) -> std::path::PathBuf {
    use glam::Vec3;
    use neurotex::builtin::gltf_builder::{
        GltfBuilder, MaterialDesc, NodeTransform, UvMode, plane,
    };
    let mut b = GltfBuilder::new();
    let material = |b: &mut GltfBuilder, name: &str, rgb: [u8; 3], bars: bool, salt: u32| {
        write_tinted_png(&dir.join(format!("{name}.png")), rgb, bars, salt);
        let mut m = MaterialDesc::new(name);
        m.metallic_factor = 0.0;
        m.base_color_texture = Some(format!("{name}.png"));
        b.add_material(m)
    };
    let (red, blue) = ([220, 40, 40], [40, 50, 220]);
    let alpha = material(&mut b, "alpha", red, false, 1);
    let bravo = material(&mut b, "bravo", blue, true, 0);
    let charlie = material(&mut b, "charlie", red, false, 2);
    let delta = material(&mut b, "delta", blue, true, 2);
    for k in 0..8 {
        let mat = if k % 2 == 0 { alpha } else { bravo };
        let name = format!("stripe{k}");
        let mesh = b.add_mesh(&name, plane(0.5, 8.0, UvMode::Unit), mat);
        let x = 0.25 + 0.5 * k as f32;
        b.add_mesh_node(
            &name,
            mesh,
            NodeTransform::translation(Vec3::new(x, 0.0, 0.0)),
        );
    }
    for (name, mat, z) in [("c", charlie, 2.5), ("d", delta, -2.5)] {
        let mesh = b.add_mesh(name, plane(3.0, 3.0, UvMode::Unit), mat);
        b.add_mesh_node(
            name,
            mesh,
            NodeTransform::translation(Vec3::new(-2.5, 0.0, z)),
        );
    }
    b.write(dir, "two_pairs").expect("write glTF");
    let toml = dir.join("two_pairs.toml");
    std::fs::write(
        &toml,
        "gltf = \"two_pairs.gltf\"\n\n[[camera_paths]]\nname = \"above\"\nkeys = [\n  \
         { time = 0.0, position = [0, 4, 0], target = [0, 0, 0], fov_deg = 90 },\n  \
         { time = 1.0, position = [0, 4, 0], target = [0, 0, 0], fov_deg = 90 },\n]\n",
    )
    .expect("write description");
    toml
}

#[test]
fn recorded_views_pull_co_occurring_sets_together_and_are_reused_until_the_scene_changes() {
    use neurotex::cluster::{
        CooccurrenceInput, EmbedderChoice, Plan, PlanInputs, Strategy, TileSignature, embed_sets,
        make_plan_with,
    };
    use neurotex::inputs::{InputSets, InputSource};
    use neurotex::packages::views::{RecordSettings, load_or_record};
    use neurotex::texture::{LoadOptions, SceneTextures};

    let ctx = ctx();
    let dir = crate::common::temp_dir("cooccurrence-scene");
    let scene = two_pairs_scene(&dir);
    let load = LoadOptions {
        allow_missing: false,
        max_size: None,
    };
    let settings = RecordSettings {
        size: (64, 64),
        tile: TileSize::T8x8,
        interval: 0.5,
    };
    let file = dir.join("cache").join("record.json");
    let record_now = || {
        let opened = neurotex::open::open(Some(&scene)).expect("open scene");
        let textures = SceneTextures::load(&opened.scene.materials, &load).expect("textures");
        load_or_record(
            ctx,
            &opened,
            &scene,
            &textures,
            &settings,
            &file,
            &mut |_, _| {},
        )
        .expect("record")
    };
    let first = record_now();
    assert!(!first.reused);
    let record = &first.record;
    assert_eq!(record.views.len(), 3, "{:?}", record.source.views);
    let names = &record.source.set_names;
    let index = |name: &str| {
        names
            .iter()
            .position(|s| s == name)
            .unwrap_or_else(|| panic!("{name} in {names:?}")) as u32
    };
    let (a, b, c, d) = (
        index("alpha"),
        index("bravo"),
        index("charlie"),
        index("delta"),
    );
    // Every view: 32 tiles of alpha and bravo, 9 of charlie, 9 of delta, nothing else.
    let mut want = vec![
        TileSignature {
            sets: {
                let mut ab = vec![a, b];
                ab.sort_unstable();
                ab
            },
            tiles: 32,
        },
        TileSignature {
            sets: vec![c],
            tiles: 9,
        },
        TileSignature {
            sets: vec![d],
            tiles: 9,
        },
    ];
    want.sort_by(|x, y| x.sets.cmp(&y.sets));
    for view in &record.views {
        assert_eq!(view.signatures, want);
    }
    let n = names.len();
    let pairs = record.pair_tiles();
    assert_eq!(pairs[a as usize * n + b as usize], 96);
    assert_eq!(pairs[c as usize * n + d as usize], 0);

    // Appearance groups the two reds and the two blues; the recorded co-occurrence pulls
    // alpha and bravo together. With two appearance pairs the trade is one of fractions:
    // moving alpha to bravo's group costs 2/3 of the worst-case spread and removes all of
    // the divergence, so it pays for w > 0.4; 0.5 is used here.
    let inputs = InputSets::open(&[InputSource::Scene(scene.clone())]).expect("inputs");
    let sets = inputs.load_sets(&load).expect("sets");
    let embeddings = embed_sets(&sets, &EmbedderChoice::Stats).expect("embed");
    let together = |plan: &Plan, x: &str, y: &str| {
        plan.groups
            .iter()
            .any(|g| g.sets.iter().any(|s| s == x) && g.sets.iter().any(|s| s == y))
    };
    let clustered = make_plan_with(
        Strategy::Clustered,
        &embeddings,
        2,
        1,
        &PlanInputs::default(),
    )
    .expect("clustered");
    assert!(together(&clustered, "alpha", "charlie"), "{clustered:?}");
    assert!(together(&clustered, "bravo", "delta"), "{clustered:?}");
    assert!(!together(&clustered, "alpha", "bravo"), "{clustered:?}");
    let inputs = PlanInputs {
        categories: None,
        cooccurrence: Some(CooccurrenceInput {
            record,
            file: &file,
            weight: 0.5,
        }),
    };
    let aware = make_plan_with(Strategy::DivergenceAware, &embeddings, 2, 1, &inputs)
        .expect("divergence-aware");
    assert!(together(&aware, "alpha", "bravo"), "{aware:?}");
    let c = aware.cooccurrence.as_ref().expect("search summary");
    assert!(c.divergence < c.start_divergence, "{c:?}");
    assert_eq!(c.divergence, 0.0, "{c:?}");

    // Unchanged: reused from the file. A changed description: recorded anew (same
    // views, new digests). A damaged file: recorded anew.
    let again = record_now();
    assert!(again.reused);
    assert_eq!(again.record, first.record);
    let text = std::fs::read_to_string(&scene).expect("read description");
    std::fs::write(&scene, format!("{text}# edited\n")).expect("edit description");
    let edited = record_now();
    assert!(!edited.reused);
    assert_ne!(
        edited.record.source.scene_files,
        first.record.source.scene_files
    );
    assert_eq!(edited.record.views, first.record.views);
    assert!(record_now().reused);
    std::fs::write(&file, b"{ not a record").expect("damage");
    assert!(!record_now().reused);
    assert!(record_now().reused);
    assert_eq!(ctx.uncaptured_error_count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cluster_records_the_scene_views_it_needs_and_reuses_them() {
    use crate::common::{expect_error, expect_ok, s};
    let dir = crate::common::temp_dir("cooccurrence-cli");
    let scene = two_pairs_scene(&dir);
    let plan = dir.join("plan.json");
    let cluster = |extra: &[&str]| {
        let mut args = vec![
            "cluster",
            "--scene",
            s(&scene),
            "--m",
            "2",
            "--record-size",
            "64x64",
            "--force",
            "--out",
            s(&plan),
        ];
        args.extend_from_slice(extra);
        expect_ok(&args)
    };
    let aware = [
        "--strategy",
        "divergence-aware",
        "--cooccurrence-weight",
        "0.5",
    ];
    let out = cluster(&aware);
    assert!(out.contains("co-occurrence: recorded 3 views"), "{out}");
    assert!(out.contains("predicted divergence"), "{out}");
    let read = neurotex::cluster::Plan::read(&plan).expect("plan");
    assert!(
        read.groups
            .iter()
            .any(|g| g.sets.contains(&"alpha".to_string()) && g.sets.contains(&"bravo".to_string())),
        "{read:?}"
    );
    let out = cluster(&aware);
    assert!(out.contains("co-occurrence: reusing"), "{out}");

    // An explicit record file, for any strategy.
    let record = dir.join("views.json");
    let out = cluster(&["--record-cooccurrence", s(&record)]);
    assert!(
        out.contains("recorded 3 views") && record.is_file(),
        "{out}"
    );
    let read = neurotex::cluster::CooccurrenceRecord::read(&record).expect("record");
    assert_eq!(read.source.size, [64, 64]);

    // compress groups by the record itself (no plan needed), and refuses one beside a plan.
    let package = dir.join("aware.ntc");
    let compress = crate::common::small_compress(
        ["--scene", s(&scene)],
        &package,
        "2",
        &[
            &aware[..],
            &["--m", "2", "--no-flip", "--cooccurrence", s(&record)],
        ]
        .concat(),
    );
    let out = expect_ok(&compress);
    assert!(out.contains("2 decoders"), "{out}");
    expect_error(
        &[&compress[..], &["--force", "--plan", s(&plan)]].concat(),
        &["--plan", "--cooccurrence"],
    );

    // Recording needs exactly one scene.
    expect_error(
        &[
            "cluster",
            "--scene",
            s(&scene),
            "--scene",
            s(&scene),
            "--strategy",
            "divergence-aware",
            "--out",
            s(&dir.join("two.json")),
        ],
        &["exactly one --scene", "--cooccurrence FILE"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_divergence_aware_package_needs_the_scene_views() {
    use neurotex::cluster::Strategy;
    use neurotex::packages::{PackageError, PackageProgress, PackageRecipe, ScenePackages};
    use neurotex::texture::{LoadOptions, SceneTextures};
    let ctx = ctx();
    let dir = crate::common::temp_dir("cooccurrence-package");
    let scene = two_pairs_scene(&dir);
    let opened = neurotex::open::open(Some(&scene)).expect("open scene");
    let textures = SceneTextures::load(
        &opened.scene.materials,
        &LoadOptions {
            allow_missing: false,
            max_size: None,
        },
    )
    .expect("textures");
    let packages = ScenePackages::open_in(&scene, PackageRecipe::default(), &dir.join("cache"))
        .expect("packages");
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let err = packages
        .load_or_compress(
            std::slice::from_ref(ctx),
            Strategy::DivergenceAware,
            &textures,
            &cancel,
            &mut |_| {},
        )
        .unwrap_err();
    assert!(matches!(err, PackageError::NoViews { .. }), "{err}");
    assert!(err.to_string().contains("two_pairs.toml"), "{err}");
    // With the views, the package's key names the record once it exists, and the record
    // lies beside the packages.
    let packages = packages.with_views(std::sync::Arc::new(opened), scene.clone());
    assert!(!packages.is_fresh(Strategy::DivergenceAware));
    let key = packages.key(Strategy::DivergenceAware);
    assert!(
        key.contains("cooccurrence-two_pairs-8x8-1280x720.json") && key.contains("missing"),
        "{key}"
    );
    assert!(
        !packages
            .key(Strategy::Clustered)
            .contains("cooccurrence-two_pairs")
    );
    // Making the package records the views first and reports each one (training is
    // cancelled before it starts: only the recording is under test here).
    let cancelled = std::sync::atomic::AtomicBool::new(true);
    let mut recorded = Vec::new();
    let _ = packages.load_or_compress(
        std::slice::from_ref(ctx),
        Strategy::DivergenceAware,
        &textures,
        &cancelled,
        &mut |p| {
            if let PackageProgress::Recording { done, views } = p {
                recorded.push((done, views));
            }
        },
    );
    assert_eq!(recorded, [(1, 3), (2, 3), (3, 3)]);
    assert!(
        packages
            .key(Strategy::DivergenceAware)
            .contains("cooccurrence-two_pairs")
    );
    assert!(!packages.key(Strategy::DivergenceAware).contains("missing"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rows of a CSV file (no quoted fields) as header → value maps.
fn csv_rows(path: &std::path::Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), header.len(), "{}: `{l}`", path.display());
            header
                .iter()
                .zip(cells)
                .map(|(h, c)| (h.to_string(), c.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn eval_runs_divergence_aware_beside_clustered_and_random_with_each_plans_predicted_divergence() {
    use crate::common::{expect_error, expect_ok, s};
    let dir = crate::common::temp_dir("cooccurrence-eval");
    let scene = two_pairs_scene(&dir);
    // Tiny training: 4 sets of 16², 16 main steps per set; the sweep's one point (m = 2)
    // is Table 2's runs.
    let args = |out: &std::path::Path, extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "eval",
            "--scene",
            s(&scene),
            "--out",
            s(out),
            "--strategies",
            "clustered,random,divergence-aware",
            "--m",
            "2",
            "--m-sweep",
            "2",
            "--no-ablation",
            "--steps",
            "16",
            "--batch",
            "256",
            "--recipe",
            "default",
            "--log-every",
            "16",
            "--record-size",
            "64x64",
            "--cooccurrence-weight",
            "0.5",
        ]
        .map(String::from)
        .to_vec();
        a.extend(extra.iter().map(|e| e.to_string()));
        a
    };
    let ok = |args: &[String]| expect_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let out = dir.join("out");
    let stdout = ok(&args(&out, &[]));
    assert!(
        stdout.contains("co-occurrence: recorded 3 views"),
        "{stdout}"
    );

    // Table 2: a row per strategy, its predicted 𝒟 beside its PSNR. Every view has 32 tiles
    // of alpha and bravo (which the clusters split) out of 50 that show a set, so the
    // clusters' 𝒟 is 0.64; divergence-aware puts alpha and bravo together.
    let rows = csv_rows(&out.join("table2.csv"));
    let strategies: Vec<&str> = rows.iter().map(|r| r["strategy"].as_str()).collect();
    assert_eq!(strategies, ["clustered", "random", "divergence-aware"]);
    let value = |r: &std::collections::BTreeMap<String, String>, c: &str| -> f64 {
        r[c].parse().unwrap_or_else(|_| panic!("{c}: {r:?}"))
    };
    for r in &rows {
        let psnr = value(r, "mean_psnr_db");
        assert!((8.0..60.0).contains(&psnr), "{r:?}");
        assert!(
            (0.0..=1.0).contains(&value(r, "predicted_divergence")),
            "{r:?}"
        );
    }
    let (clustered, aware) = (
        value(&rows[0], "predicted_divergence"),
        value(&rows[2], "predicted_divergence"),
    );
    assert_eq!(clustered, 0.64, "{rows:?}");
    assert!(aware <= clustered, "{rows:?}");
    assert_eq!(aware, 0.0, "{rows:?}");
    assert_eq!(rows[2]["run"], "divergence-aware-m2");
    let md = std::fs::read_to_string(out.join("table2.md")).expect("table2.md");
    assert!(md.contains("| predicted 𝒟 |"), "{md}");

    // The sweep: divergence-aware beside clustered and random, each with its 𝒟.
    let sweep = csv_rows(&out.join("m_sweep.csv"));
    let points: Vec<(&str, &str)> = sweep
        .iter()
        .map(|r| (r["m"].as_str(), r["strategy"].as_str()))
        .collect();
    assert_eq!(
        points,
        [
            ("2", "clustered"),
            ("2", "random"),
            ("2", "divergence-aware")
        ]
    );
    assert!(sweep.iter().all(|r| !r["predicted_divergence"].is_empty()));

    // summary.json: the record and every run's prediction; the plan and its sheet.
    let summary = read_json(out.join("summary.json"));
    let record_file = summary["cooccurrence"]["file"]
        .as_str()
        .expect("record file")
        .to_string();
    assert!(
        record_file.ends_with("cooccurrence-two_pairs-8x8-64x64.json"),
        "{record_file}"
    );
    assert_eq!(summary["cooccurrence"]["covered_tiles"], 150);
    let runs = summary["runs"].as_array().expect("runs");
    assert!(
        runs.iter()
            .all(|r| r["predicted"]["divergence"].as_f64().is_some()),
        "{runs:?}"
    );
    let plan =
        neurotex::cluster::Plan::read(&out.join("plans/divergence-aware.json")).expect("plan");
    assert_eq!(
        plan.cooccurrence.as_ref().map(|c| c.record.as_str()),
        Some(record_file.as_str())
    );
    image::open(out.join("plans/divergence-aware.png")).expect("contact sheet");

    // Shards of the same evaluation, resumed from its records (nothing retrained), merge
    // into its tables.
    let (s0, s1) = (dir.join("s0"), dir.join("s1"));
    for (shard, index) in [(&s0, "0/2"), (&s1, "1/2")] {
        std::fs::create_dir_all(shard.join("runs")).expect("runs folder");
        for e in std::fs::read_dir(out.join("runs")).expect("runs") {
            let e = e.expect("entry");
            std::fs::copy(e.path(), shard.join("runs").join(e.file_name())).expect("copy");
        }
        let stdout = ok(&args(shard, &["--shard", index, "--resume"]));
        assert!(stdout.contains("co-occurrence: reusing"), "{stdout}");
        assert!(!stdout.contains(": trained"), "{stdout}");
    }
    let merged = dir.join("merged");
    ok(&args(&merged, &["--merge", s(&s0), s(&s1)]));
    for file in ["table2.csv", "m_sweep.csv"] {
        assert_eq!(
            std::fs::read_to_string(merged.join(file)).expect("merged"),
            std::fs::read_to_string(out.join(file)).expect("whole"),
            "{file}"
        );
    }

    // A record whose set ids are not the scene's is refused, naming the file.
    let mut json = read_json(&record_file);
    let names = json["source"]["set_names"]
        .as_array_mut()
        .expect("set names");
    let delta = names.iter().position(|n| n == "delta").expect("delta");
    names[delta] = "echo".into();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, serde_json::to_vec(&json).expect("JSON")).expect("write");
    let refused = dir.join("refused");
    let a = args(&refused, &["--cooccurrence", s(&bad), "--dry-run"]);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    expect_error(&a, &["bad.json", "only in the record: `echo`", "`delta`"]);
    assert!(!refused.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A record's identity covers the base colour images of alpha-tested materials (their
/// alpha decides which material covers a pixel) but not those of opaque ones: editing
/// the cutout's image changes the identity, editing the opaque one's does not.
#[test]
fn record_identity_covers_the_images_whose_alpha_decides_coverage() {
    use neurotex::builtin::gltf_builder::{
        GltfBuilder, MaterialDesc, NodeTransform, UvMode, plane,
    };
    use neurotex::packages::views::scene_files;
    use neurotex::scene::AlphaMode;
    let dir = crate::common::temp_dir("coverage-images");
    let mut b = GltfBuilder::new();
    for (name, alpha_mode, image, x) in [
        ("cut", AlphaMode::Mask { cutoff: 0.5 }, "cut.png", 0.0),
        ("solid", AlphaMode::Opaque, "solid.png", 3.0),
    ] {
        crate::common::write_checker_png(&dir.join(image), 8);
        let mut m = MaterialDesc::new(name);
        m.alpha_mode = alpha_mode;
        m.base_color_texture = Some(image.to_owned());
        let mat = b.add_material(m);
        let mesh = b.add_mesh(name, plane(2.0, 2.0, UvMode::Unit), mat);
        b.add_mesh_node(
            name,
            mesh,
            NodeTransform::translation(glam::Vec3::new(x, 0.0, 0.0)),
        );
    }
    let gltf = b.write(&dir, "scene").expect("write fixture");
    let opened = neurotex::open::open(Some(&gltf)).expect("open");
    let before = scene_files(&opened, &gltf).expect("digests");
    let names: Vec<&str> = before.iter().map(|d| d.file.as_str()).collect();
    assert!(names.iter().any(|n| n.ends_with("cut.png")), "{names:?}");
    assert!(!names.iter().any(|n| n.ends_with("solid.png")), "{names:?}");
    crate::common::write_checker_png(&dir.join("solid.png"), 16);
    assert_eq!(scene_files(&opened, &gltf).expect("digests"), before);
    crate::common::write_checker_png(&dir.join("cut.png"), 16);
    assert_ne!(scene_files(&opened, &gltf).expect("digests"), before);
    let _ = std::fs::remove_dir_all(&dir);
}
