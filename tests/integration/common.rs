//! Helpers shared by the integration tests: one GPU context for the test binary, temporary
//! folders, tiny fixture scenes written by the project's own glTF builder, and golden-image
//! comparison.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use glam::Vec3;
use neurotex::builtin::gltf_builder::{GltfBuilder, MaterialDesc, NodeTransform, UvMode, plane};
use neurotex::gpu::encoder::FrameEncoder;
use neurotex::gpu::{GpuContext, GpuProfiler};
use neurotex::ntc::NtcPackage;
use neurotex::render::Renderer;
use neurotex::render::headless::OUTPUT_FORMAT;
use neurotex::render::scene_gpu::UploadOptions;
use neurotex::scene::Scene;
use neurotex::texture::{ChannelMask, SceneTextures};

/// A temporary path as the `&str` a command line takes.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// The JSON file at `path` (a report, plan or glTF); panics naming the file when it cannot
/// be read or parsed.
pub fn read_json(path: impl AsRef<Path>) -> serde_json::Value {
    let path = path.as_ref();
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()))
}

/// The array `key` of the JSON object `v`; panics naming the key when there is none.
pub fn json_array<'a>(v: &'a serde_json::Value, key: &str) -> &'a [serde_json::Value] {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("no array `{key}` in {v}"))
}

/// The outcome of a finished `neurotex`: (success, stdout, stderr). A panic inside it
/// fails the test.
pub fn outcome(out: std::process::Output) -> (bool, String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "neurotex panicked: {stderr}");
    (out.status.success(), stdout, stderr)
}

/// Run `neurotex` with `args` and extra environment variables, built-in scenes cached in
/// one shared temporary folder; its [`outcome`].
pub fn run_env(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    run_in(Path::new("."), args, env)
}

/// [`run_env`] with the current folder `dir` (relative paths in `args` start there).
pub fn run_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_neurotex"))
        .current_dir(dir)
        .args(args)
        .envs(env.iter().copied())
        .env(
            "NEUROTEX_CACHE",
            std::env::temp_dir().join("neurotex-test-cache"),
        )
        .output()
        .expect("run neurotex");
    outcome(out)
}

/// [`run_env`] without extra variables.
pub fn run(args: &[&str]) -> (bool, String, String) {
    run_env(args, &[])
}

/// The [`outcome`] of `neurotex args…`, which must have succeeded: its stdout.
pub fn succeeded(args: &[&str], (ok, stdout, stderr): (bool, String, String)) -> String {
    assert!(ok, "{args:?} failed:\n{stdout}\n{stderr}");
    stdout
}

/// The [`outcome`] of `neurotex args…`, which must have failed: its last `error:` line
/// (drivers may log their own lines before it), which must contain every needle.
pub fn failed(
    args: &[&str],
    (ok, stdout, stderr): (bool, String, String),
    needles: &[&str],
) -> String {
    assert!(!ok, "expected failure for {args:?}; stdout: {stdout}");
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

/// Run `neurotex`, which must succeed; its stdout.
pub fn expect_ok(args: &[&str]) -> String {
    succeeded(args, run(args))
}

/// Run `neurotex`, which must fail; its [`failed`] error line.
pub fn expect_error(args: &[&str], needles: &[&str]) -> String {
    failed(args, run(args), needles)
}

/// Start `neurotex` with `args` and kill it (no Ctrl-C) as soon as `path` exists; whether
/// it was still running then (false: it ended first, or `path` did not appear in 5 min).
pub fn kill_once_exists(args: &[&str], path: &Path) -> bool {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_neurotex"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn neurotex");
    let started = std::time::Instant::now();
    while !path.exists() && started.elapsed() < std::time::Duration::from_secs(300) {
        if child.try_wait().expect("wait for neurotex").is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let killed = path.exists() && child.try_wait().expect("wait for neurotex").is_none();
    child.kill().ok();
    child.wait().expect("reap neurotex");
    killed
}

/// A fresh [`temp_dir`] `name` holding four texture sets (8², 16², 8², 16² checkers, base
/// colour only) listed in the manifest `sets.csv`: (the folder, the manifest).
pub fn checker_library(name: &str) -> (PathBuf, PathBuf) {
    let dir = temp_dir(name);
    let mut csv = String::from(
        "set_id,category,paper_category,basecolor,normal,alpha,roughness_const,metallic_const\n",
    );
    for (i, size) in [8, 16, 8, 16].into_iter().enumerate() {
        write_checker_png(&dir.join(format!("s{i}.png")), size);
        csv.push_str(&format!("s{i},T,T,s{i}.png,,0,0.5,0\n"));
    }
    let manifest = dir.join("sets.csv");
    std::fs::write(&manifest, csv).expect("manifest");
    (dir, manifest)
}

/// `compress` of `inputs` (`["--manifest", path]`, `["--scene", path]`) into `out` with
/// `steps` per set, batches of 256 and no BCn baselines, then `extra`.
pub fn small_compress<'a>(
    inputs: [&'a str; 2],
    out: &'a Path,
    steps: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "compress",
        inputs[0],
        inputs[1],
        "--out",
        s(out),
        "--steps",
        steps,
        "--batch",
        "256",
        "--no-bcn",
    ];
    args.extend_from_slice(extra);
    args
}

/// A [`checker_library`] and the deterministic `compress` of its manifest
/// ([`small_compress`] with `steps` per set, trained from `seed`).
pub struct DeterministicPlan {
    /// The library's folder.
    pub dir: PathBuf,
    /// The library's manifest.
    pub manifest: PathBuf,
    steps: &'static str,
    seed: &'static str,
}

impl DeterministicPlan {
    /// A fresh [`checker_library`] `name` compressed with `steps` per set from `seed`.
    pub fn new(name: &str, steps: &'static str, seed: &'static str) -> Self {
        let (dir, manifest) = checker_library(name);
        Self {
            dir,
            manifest,
            steps,
            seed,
        }
    }

    /// The compress command line writing `out`, then `extra`.
    pub fn args<'a>(&'a self, out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = small_compress(
            ["--manifest", s(&self.manifest)],
            out,
            self.steps,
            &["--deterministic", "--seed", self.seed],
        );
        args.extend_from_slice(extra);
        args
    }
}

/// The shared adapter (lavapipe in CI). Fails loudly when there is none: GPU tests never
/// pass silently without a GPU.
pub fn ctx() -> &'static GpuContext {
    static CTX: OnceLock<GpuContext> = OnceLock::new();
    CTX.get_or_init(|| {
        GpuContext::headless().unwrap_or_else(|e| {
            panic!("GPU tests need an adapter (CI installs mesa-vulkan-drivers): {e}")
        })
    })
}

/// Records `f` into one encoder (timed as a frame would be) and submits it.
pub fn submit<R>(ctx: &GpuContext, f: impl FnOnce(&mut FrameEncoder<'_>) -> R) -> R {
    let mut profiler = GpuProfiler::new(ctx);
    let mut encoder = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("test.frame"),
        });
    let result = f(&mut FrameEncoder::new(ctx, &mut encoder, &profiler));
    ctx.queue.submit([encoder.finish()]);
    profiler.end_frame(ctx);
    result
}

/// A headless renderer of `scene` at `size`, its texture sets decoded as `upload` says
/// (as the CLI makes one).
pub fn renderer(scene: &Scene, upload: &UploadOptions, size: (u32, u32)) -> Renderer {
    let textures =
        SceneTextures::load(&scene.materials, &upload.load_options()).expect("texture sets");
    let mut renderer = Renderer::new(
        ctx(),
        scene,
        &textures,
        upload.anisotropy,
        size,
        OUTPUT_FORMAT,
    )
    .expect("renderer");
    if let Some(mode) = upload.gbuffer {
        renderer
            .set_gbuffer_mode(ctx(), mode)
            .expect("G-buffer mode");
    }
    renderer
}

/// The G-buffer's motion target read back as (x, y) screen-UV offsets (two f16 per
/// word, x in the low half).
pub fn read_motion(texture: &wgpu::Texture) -> Vec<[f32; 2]> {
    neurotex::gpu::read_texture(ctx(), texture, 0, 0)
        .expect("read motion")
        .to_u32()
        .expect("R32Uint motion")
        .into_iter()
        .map(|w| {
            let half = |bits: u32| half::f16::from_bits(bits as u16).to_f32();
            [half(w & 0xFFFF), half(w >> 16)]
        })
        .collect()
}

/// A fresh, empty temporary folder unique to this test.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neurotex-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// A fresh [`temp_dir`] `name` holding `file` with `contents`: (the folder, the file).
pub fn temp_file(name: &str, file: &str, contents: impl AsRef<[u8]>) -> (PathBuf, PathBuf) {
    let dir = temp_dir(name);
    let path = dir.join(file);
    std::fs::write(&path, contents).expect("write");
    (dir, path)
}

/// A 2×2 m quad facing +Y at the origin with one material whose base colour texture is
/// `base_color` (a URI relative to the glTF, which need not exist). Returns the .gltf path.
pub fn quad_scene(dir: &Path, base_color: Option<&str>) -> PathBuf {
    quad_scene_with(
        dir,
        "quad",
        base_color,
        NodeTransform::translation(Vec3::ZERO),
    )
}

/// [`quad_scene`] as `<name>.gltf` with the quad's node placed by `transform`.
pub fn quad_scene_with(
    dir: &Path,
    name: &str,
    base_color: Option<&str>,
    transform: NodeTransform,
) -> PathBuf {
    let mut b = GltfBuilder::new();
    let mut m = MaterialDesc::new("quad");
    m.metallic_factor = 0.0;
    m.base_color_texture = base_color.map(str::to_owned);
    let mat = b.add_material(m);
    let mesh = b.add_mesh("quad", plane(2.0, 2.0, UvMode::Unit), mat);
    b.add_mesh_node("quad", mesh, transform);
    b.write(dir, name).expect("write fixture")
}

/// A fresh [`temp_dir`] `name` holding a 16² checker `checker.png` and the [`quad_scene`]
/// textured with it: (the folder, the .gltf).
pub fn checker_quad(name: &str) -> (PathBuf, PathBuf) {
    checker_quad_of(name, 16)
}

/// [`checker_quad`] with a `size`² checker.
pub fn checker_quad_of(name: &str, size: u32) -> (PathBuf, PathBuf) {
    let dir = temp_dir(name);
    write_checker_png(&dir.join("checker.png"), size);
    let gltf = quad_scene(&dir, Some("checker.png"));
    (dir, gltf)
}

/// A [`checker_quad`]'s compression into `quad.ntc` (100 000 steps), killed once its
/// partial folder carries the run's marker.
pub struct KilledQuadCompression {
    /// The scene.
    pub gltf: PathBuf,
    /// The package (not written).
    pub ntc: PathBuf,
    /// The partial folder the run left.
    pub partial: PathBuf,
}

impl KilledQuadCompression {
    /// Start the compression in a fresh [`checker_quad`] `name` and kill it; panics when
    /// it ended before it could be killed.
    pub fn new(name: &str) -> Self {
        let (dir, gltf) = checker_quad(name);
        let run = Self {
            gltf,
            ntc: dir.join("quad.ntc"),
            partial: dir.join("quad.ntc.partial"),
        };
        assert!(
            kill_once_exists(&run.args(), &run.partial.join("neurotex-partial.json")),
            "the run ended before it could be killed"
        );
        run
    }

    /// The arguments of the run.
    fn args(&self) -> Vec<&str> {
        vec![
            "compress",
            "--scene",
            s(&self.gltf),
            "--out",
            s(&self.ntc),
            "--steps",
            "100000",
        ]
    }

    /// The arguments that resume the run.
    pub fn resume(&self) -> Vec<&str> {
        let mut args = self.args();
        args.push("--resume");
        args
    }
}

/// Write a small RGBA8 PNG checkerboard.
pub fn write_checker_png(path: &Path, size: u32) {
    let mut px = Vec::with_capacity((size * size * 4) as usize);
    for y in 0..size {
        for x in 0..size {
            let on = ((x / 4) + (y / 4)) % 2 == 0;
            px.extend_from_slice(if on {
                &[220, 60, 40, 255]
            } else {
                &[30, 90, 200, 255]
            });
        }
    }
    image::save_buffer(path, &px, size, size, image::ExtendedColorType::Rgba8).expect("write png");
}

/// The golden comparison's measures of RGBA8 pixels `a` against `b` (alpha ignored):
/// the mean absolute difference per colour channel in 8-bit steps, and the fraction of
/// pixels off by more than 12 steps in any colour channel.
pub fn golden_distance(a: &[u8], b: &[u8]) -> (f64, f64) {
    let mut sum = 0u64;
    let mut bad = 0usize;
    for (a, b) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        let d = [0, 1, 2].map(|c| a[c].abs_diff(b[c]));
        sum += d.iter().map(|&v| u64::from(v)).sum::<u64>();
        bad += usize::from(d.iter().any(|&v| v > 12));
    }
    let pixels = (a.len() / 4).max(1);
    (sum as f64 / (pixels * 3) as f64, bad as f64 / pixels as f64)
}

/// Whether [`golden_distance`]'s measures pass the golden tolerance ([`assert_golden`]):
/// mean |diff| under one 8-bit step and at most 1 % of pixels off by more than 12.
pub fn golden_tolerated((mean, bad): (f64, f64)) -> bool {
    mean < 1.0 && bad <= 0.01
}

/// Whether RGBA8 pixels `a` are `b` within the golden tolerance ([`assert_golden`]).
pub fn within_golden_tolerance(a: &[u8], b: &[u8]) -> bool {
    golden_tolerated(golden_distance(a, b))
}

/// Compare an RGBA8 image with `tests/golden/<name>.png`.
///
/// Tolerance: lavapipe is deterministic for one Mesa build, but LLVM versions differ in
/// FMA contraction and transcendental approximations, which moves shaded values by a
/// few 8-bit steps, and edge pixels can flip coverage when a vertex lands on a pixel
/// centre. So: the mean absolute difference must stay under 1.0/255 per channel and at
/// most 1 % of pixels may differ by more than 12/255 in any channel. A real regression
/// (a wrong channel, a missing material, a shifted camera) exceeds both by far.
///
/// `NEUROTEX_BLESS=1` (re)writes the golden file. On failure the actual image and a
/// diff image are written next to the target folder's `golden-failures/`.
pub fn assert_golden(name: &str, width: u32, height: u32, rgba: &[u8]) {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.png"));
    if std::env::var_os("NEUROTEX_BLESS").is_some() {
        image::save_buffer(
            &golden,
            rgba,
            width,
            height,
            image::ExtendedColorType::Rgba8,
        )
        .expect("bless golden");
        return;
    }
    let expected = image::open(&golden)
        .unwrap_or_else(|e| {
            panic!(
                "golden image {} unreadable ({e}); run with NEUROTEX_BLESS=1 to create it",
                golden.display()
            )
        })
        .to_rgba8();
    assert_eq!(
        (expected.width(), expected.height()),
        (width, height),
        "golden {name}: size differs"
    );
    let diff: Vec<u8> = rgba
        .chunks_exact(4)
        .zip(expected.as_raw().chunks_exact(4))
        .flat_map(|(a, e)| {
            let d = |c: usize| a[c].abs_diff(e[c]).saturating_mul(8);
            [d(0), d(1), d(2), 255]
        })
        .collect();
    let (mean, bad_frac) = golden_distance(rgba, expected.as_raw());
    if !within_golden_tolerance(rgba, expected.as_raw()) {
        let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/golden-failures");
        std::fs::create_dir_all(&out).ok();
        let actual = out.join(format!("{name}.actual.png"));
        let diff_path = out.join(format!("{name}.diff.png"));
        image::save_buffer(
            &actual,
            rgba,
            width,
            height,
            image::ExtendedColorType::Rgba8,
        )
        .ok();
        image::save_buffer(
            &diff_path,
            &diff,
            width,
            height,
            image::ExtendedColorType::Rgba8,
        )
        .ok();
        panic!(
            "golden {name}: mean |diff| {mean:.3}/255, {:.2}% pixels off by > 12/255; see {} and {}",
            bad_frac * 100.0,
            actual.display(),
            diff_path.display()
        );
    }
}

/// `package` with each material's channels cut to those in `keep`.
pub fn keeping(package: &NtcPackage, keep: ChannelMask) -> NtcPackage {
    let mut cut = package.clone();
    for m in &mut cut.materials {
        m.present = m.present & keep;
    }
    cut
}
