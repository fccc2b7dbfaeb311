//! The interactive viewer: the real window under Xvfb (scripted screenshot runs of the
//! built-in toy shop, the living room and a broken scene), camera-path interpolation,
//! the record → save → load round trip, the camera controls as pure functions, and the
//! per-pass timing table.
//!
//! The window test needs an X display: it uses `DISPLAY` when set, else starts its own
//! `Xvfb` (and stops it afterwards). Without Xvfb it fails with a message saying so —
//! window tests never pass silently.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use glam::{Vec2, Vec3};
use neurotex::gpu::PassTiming;
use neurotex::scene::Camera;
use neurotex::scene::camera_control::{
    CameraMode, CameraState, FAST_MULTIPLIER, InputState, LOOK_SENSITIVITY, MAX_PITCH, PathPlayer,
    PathRecorder, RECORD_INTERVAL, WHEEL_SPEED_STEP, save_recording, step,
};
use neurotex::scene::description::{CameraKey, CameraPath, LoadedDescription};
use neurotex::ui::timings::{PerfHistory, median, timing_rows};

use crate::common::{checker_quad, quad_scene, s, temp_dir};

// ---------------------------------------------------------------------------------------
// The real window under Xvfb.

/// An X display for child processes: `DISPLAY` if set, else a private Xvfb killed on drop.
struct Display {
    name: String,
    xvfb: Option<Child>,
}

impl Display {
    fn get() -> Display {
        if let Ok(name) = std::env::var("DISPLAY")
            && !name.is_empty()
        {
            return Display { name, xvfb: None };
        }
        let n = (90..400)
            .find(|n| {
                !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
                    && !Path::new(&format!("/tmp/.X{n}-lock")).exists()
            })
            .expect("no free X display number in 90..400");
        let name = format!(":{n}");
        let child = Command::new("Xvfb")
            .args([
                name.as_str(),
                "-screen",
                "0",
                "1024x768x24",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "the viewer test needs an X display: DISPLAY is unset and Xvfb could not be \
                     started ({e}); install it with `apt-get install xvfb` (CI does)"
                )
            });
        let mut display = Display {
            name,
            xvfb: Some(child),
        };
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
        let deadline = Instant::now() + Duration::from_secs(20);
        while !socket.exists() {
            if let Some(Ok(Some(status))) = display.xvfb.as_mut().map(Child::try_wait) {
                panic!("Xvfb {} exited at start-up with {status}", display.name);
            }
            assert!(
                Instant::now() < deadline,
                "Xvfb {} did not start",
                display.name
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        display
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        if let Some(child) = &mut self.xvfb {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

struct Run {
    success: bool,
    stderr: String,
}

/// Runs `neurotex view …` on `display` with a private cache; kills it after 10 minutes.
fn view(display: &Display, cache: &Path, args: &[&str]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_neurotex"))
        .arg("view")
        .args(args)
        .env("DISPLAY", &display.name)
        .env_remove("WAYLAND_DISPLAY")
        .env("NEUROTEX_CACHE", cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run neurotex");
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        match child.try_wait().expect("wait for neurotex") {
            Some(_) => break,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                panic!("neurotex view {args:?} did not finish within 10 minutes");
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    let out = child.wait_with_output().expect("collect output");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !stderr.contains("panicked"),
        "neurotex view {args:?} panicked: {stderr}"
    );
    Run {
        success: out.status.success(),
        stderr,
    }
}

/// Asserts `path` is a `w`×`h` PNG that is not one flat colour; returns the number of
/// distinct colours.
fn assert_screenshot(path: &Path, w: u32, h: u32) -> usize {
    let img = image::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_rgba8();
    assert_eq!(img.dimensions(), (w, h), "{}", path.display());
    let mut colours: Vec<[u8; 4]> = img.pixels().map(|p| p.0).collect();
    colours.sort_unstable();
    colours.dedup();
    assert!(
        colours.len() > 50,
        "{} is nearly flat: {} distinct colours",
        path.display(),
        colours.len()
    );
    colours.len()
}

#[test]
fn viewer_screenshots_under_xvfb() {
    let display = Display::get();
    let dir = temp_dir("viewer");
    let cache = dir.join("cache");

    // The built-in toy shop, with small generated textures to keep lavapipe fast.
    let toyshop = dir.join("toyshop.toml");
    std::fs::write(
        &toyshop,
        "builtin = \"toyshop\"\n[render]\nbuiltin_texture_size = 32\n\n\
         [[camera_paths]]\nname = \"pan\"\nkeys = [\n\
         { time = 0.0, position = [3.0, 1.6, 3.0], target = [0.0, 0.9, 0.0] },\n\
         { time = 2.0, position = [-3.0, 1.6, 3.0], target = [0.0, 0.9, 0.0] },\n]\n",
    )
    .unwrap();
    // A scripted run of `scene`: `frames` frames, then a `w`×`h` screenshot to `shot`.
    let shoot = |scene: &Path, frames: &str, shot: &Path, (w, h): (u32, u32), extra: &[&str]| {
        let size = format!("{w}x{h}");
        let mut args = vec![
            "--scene",
            s(scene),
            "--frames",
            frames,
            "--screenshot",
            s(shot),
            "--size",
            &size,
        ];
        args.extend_from_slice(extra);
        view(&display, &cache, &args)
    };
    let shot = dir.join("shot.png");
    let run = shoot(&toyshop, "30", &shot, (320, 200), &["--camera-path", "pan"]);
    assert!(run.success, "toy shop run failed: {}", run.stderr);
    assert_screenshot(&shot, 320, 200);

    // A real glTF scene, textures capped for speed.
    let room =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/assets/ntc_living_room/scene.gltf");
    assert!(room.exists(), "{} is missing", room.display());
    let room_shot = dir.join("room.png");
    let run = shoot(
        &room,
        "10",
        &room_shot,
        (400, 240),
        &["--max-texture-size", "128"],
    );
    assert!(run.success, "living room run failed: {}", run.stderr);
    assert_screenshot(&room_shot, 400, 240);

    // A scene that fails to load: the window shows the error (the screenshot still
    // comes), the process names the file and exits non-zero, nothing panics.
    let missing = dir.join("nope.gltf");
    let error_shot = dir.join("error.png");
    let run = shoot(&missing, "3", &error_shot, (480, 300), &[]);
    assert!(!run.success, "a missing scene must fail the scripted run");
    let line = run
        .stderr
        .lines()
        .rfind(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("no `error:` line: {}", run.stderr));
    assert!(line.contains("nope.gltf"), "{line}");
    assert_screenshot(&error_shot, 480, 300);
    drop(display);
    std::fs::remove_dir_all(&dir).ok();
}

/// The columns `xs` of rows `ys` of an RGBA8 image `width` pixels wide.
fn strip(rgba: &[u8], width: u32, xs: std::ops::Range<u32>, ys: std::ops::Range<u32>) -> Vec<u8> {
    let mut out = Vec::new();
    for y in ys {
        let row = (y * width) as usize * 4;
        out.extend_from_slice(&rgba[row + xs.start as usize * 4..row + xs.end as usize * 4]);
    }
    out
}

/// A scripted split run (the reference left, the baseline's NTC decode right, divider at
/// 50 %) against `render` of each source: beside the divider, between the panels, each
/// side is its own source's frame within the golden tolerance, and the two differ.
#[test]
fn split_view_shows_each_source_as_render_does() {
    let display = Display::get();
    // One textured quad: its package compresses in seconds on a CPU adapter.
    let (dir, scene) = checker_quad("viewer_split");
    let cache = dir.join("cache");
    let (w, h) = (1400u32, 400u32);
    let size = format!("{w}x{h}");
    let ntc = [
        "--ntc-steps",
        "2",
        "--no-stochastic",
        "--kernel",
        "f32",
        "--modes",
        "baseline",
    ];
    // `render` first: it compresses the baseline package into the shared cache.
    let mut rendered = Vec::new();
    for mode in ["reference", "baseline"] {
        let out = dir.join(format!("{mode}.png"));
        let mut args = vec![
            "render",
            "--scene",
            s(&scene),
            "--mode",
            mode,
            "--size",
            &size,
            "--accumulate",
            "4",
            "--out",
            s(&out),
        ];
        args.extend_from_slice(&ntc[..5]);
        let status = Command::new(env!("CARGO_BIN_EXE_neurotex"))
            .args(&args)
            .env("NEUROTEX_CACHE", &cache)
            .status()
            .expect("run neurotex render");
        assert!(status.success(), "render --mode {mode}");
        rendered.push(image::open(&out).unwrap().to_rgba8().into_raw());
    }
    let shot = dir.join("split.png");
    let mut args = vec![
        "--scene",
        s(&scene),
        "--frames",
        "4",
        "--screenshot",
        s(&shot),
        "--size",
        &size,
        "--mode",
        "reference",
        "--compare",
        "baseline",
    ];
    args.extend_from_slice(&ntc);
    let run = view(&display, &cache, &args);
    assert!(run.success, "split run failed: {}", run.stderr);
    assert_screenshot(&shot, w, h);
    let got = image::open(&shot).unwrap().to_rgba8().into_raw();
    // Beside the divider (x = w/2, drawn over by the overlay), clear of the side panels
    // (the figures panel widens to its timing table: about 500 points here), the
    // divider's labels at the top and the status bar.
    let rows = 48..h - 40;
    let (left, right) = (w / 2 - 120..w / 2 - 6, w / 2 + 6..w / 2 + 120);
    for (side, xs, want) in [("left", left, &rendered[0]), ("right", right, &rendered[1])] {
        let a = strip(&got, w, xs.clone(), rows.clone());
        let b = strip(want, w, xs, rows.clone());
        let (mean, bad) = crate::common::golden_distance(&a, &b);
        assert!(
            crate::common::within_golden_tolerance(&a, &b),
            "{side} side: mean |diff| {mean:.3}/255, {:.2} % pixels off by > 12/255",
            bad * 100.0
        );
    }
    let differ = crate::common::golden_distance(&rendered[0], &rendered[1]).0;
    assert!(
        differ > 0.5,
        "the two sources render alike ({differ:.3}): nothing was compared"
    );
    drop(display);
    std::fs::remove_dir_all(&dir).ok();
}

// ---------------------------------------------------------------------------------------
// Camera paths: interpolation, playback, recording and the save round trip.

fn key(time: f32, position: [f32; 3], target: [f32; 3], fov_deg: f32) -> CameraKey {
    CameraKey {
        time,
        position,
        target,
        fov_deg,
    }
}

#[test]
fn camera_path_interpolates_through_keys_and_plays() {
    let path = CameraPath {
        name: "p".into(),
        keys: vec![
            key(1.0, [0.0, 1.0, 0.0], [0.0, 1.0, -5.0], 40.0),
            key(3.0, [2.0, 1.0, 0.0], [2.0, 1.0, -5.0], 60.0),
            key(5.0, [4.0, 1.0, 0.0], [4.0, 1.0, -5.0], 80.0),
            key(7.0, [6.0, 1.0, 0.0], [6.0, 1.0, -5.0], 80.0),
        ],
    };
    for k in &path.keys {
        let c = path.sample(k.time).unwrap();
        assert!((c.position - Vec3::from(k.position)).length() < 1e-5);
        assert!((c.yfov.to_degrees() - k.fov_deg).abs() < 1e-3);
    }
    // Inside the path, evenly spaced collinear keys make Catmull–Rom linear; the field
    // of view is linear per span.
    let mid = path.sample(4.0).unwrap();
    assert!((mid.position - Vec3::new(3.0, 1.0, 0.0)).length() < 1e-5);
    assert!((mid.yfov.to_degrees() - 70.0).abs() < 1e-3);
    assert!((mid.forward - -Vec3::Z).length() < 1e-5);
    // Clamped outside the keys.
    assert_eq!(path.sample(-3.0), path.sample(1.0));
    assert_eq!(path.sample(99.0), path.sample(7.0));

    // The player counts from the first key, follows the speed and loops.
    let mut player = PathPlayer {
        playing: true,
        speed: 2.0,
        ..Default::default()
    };
    player.advance(path.duration(), 1.5);
    assert_eq!(player.camera(&path), path.sample(4.0));
    player.advance(path.duration(), 1.75); // 3.0 + 3.5 = 6.5 → wraps to 0.5
    assert!(player.playing && (player.time - 0.5).abs() < 1e-5);
    player.looping = false;
    player.advance(path.duration(), 10.0);
    assert!(!player.playing && player.time == path.duration());
}

fn flown_path() -> CameraPath {
    let mut state = CameraState::from_camera(
        &Camera {
            name: "start".into(),
            position: Vec3::new(0.0, 1.6, 3.0),
            forward: -Vec3::Z,
            yfov: 55f32.to_radians(),
            znear: 0.05,
        },
        1.0,
        3.0,
    );
    let mut recorder = PathRecorder::new(&state.camera());
    let input = InputState {
        forward: true,
        look: true,
        mouse_delta: Vec2::new(4.0, 0.0),
        ..Default::default()
    };
    for _ in 0..25 {
        state = step(&state, &input, 0.1);
        recorder.advance(&state.camera(), 0.1);
    }
    let path = recorder.finish("recorded".into()).expect("2.5 s recorded");
    assert_eq!(
        path.keys.len(),
        6,
        "a key every {RECORD_INTERVAL} s from 0 to 2.5 s"
    );
    path
}

#[test]
fn recorded_path_saves_next_to_the_description_and_loads_back() {
    let dir = temp_dir("record");
    let scene = dir.join("shop.toml");
    let original = "builtin = \"toyshop\"\n[render]\nbuiltin_texture_size = 32\n\n\
                    [[camera_paths]]\nname = \"recorded\"\nkeys = [ { time = 0.0, position = [1.0, 1.0, 1.0], target = [0.0, 0.0, 0.0] } ]\n";
    std::fs::write(&scene, original).unwrap();
    let loaded = LoadedDescription::load(&scene).unwrap();
    let path = flown_path();

    let written =
        save_recording(Some(&scene), &loaded.description, vec![path.clone()], &dir).unwrap();
    assert_eq!(written, dir.join("shop.recorded.toml"));
    assert_eq!(
        std::fs::read_to_string(&scene).unwrap(),
        original,
        "input untouched"
    );
    let back = LoadedDescription::load(&written).unwrap();
    assert_eq!(
        back.description.camera_path_names(),
        ["recorded", "recorded-2"],
        "clashing name renamed"
    );
    assert_eq!(back.description.camera_paths[1].keys, path.keys);
    assert_eq!(back.description.render.builtin_texture_size, Some(32));
    assert_eq!(back.description.lighting, loaded.description.lighting);

    // A bare glTF gets a new description that names it relative to the new file.
    let gltf = quad_scene(&dir, None);
    let written =
        save_recording(Some(&gltf), &Default::default(), vec![path.clone()], &dir).unwrap();
    assert_eq!(written, dir.join("quad.recorded.toml"));
    let back = LoadedDescription::load(&written).unwrap();
    assert_eq!(back.gltf_path().unwrap(), gltf);
    assert_eq!(back.description.camera_paths, vec![path]);
    let opened = neurotex::open::open(Some(&written)).unwrap();
    assert_eq!(opened.scene.meshes.len(), 1);
    std::fs::remove_dir_all(&dir).ok();
}

// ---------------------------------------------------------------------------------------
// Camera controls as pure functions.

fn looking_down_minus_z() -> CameraState {
    CameraState::from_camera(
        &Camera {
            name: "c".into(),
            position: Vec3::new(0.0, 1.0, 5.0),
            forward: -Vec3::Z,
            yfov: 1.0,
            znear: 0.05,
        },
        3.0,
        5.0,
    )
}

#[test]
fn camera_controls_move_turn_clamp_and_orbit() {
    let s = looking_down_minus_z();
    let dt = 0.25;

    // W: forward by speed·dt; Shift multiplies; A/D strafe; E up.
    let none = InputState::default();
    let w = InputState {
        forward: true,
        ..none
    };
    for (input, offset) in [
        (w, -Vec3::Z * 3.0 * dt),
        (
            InputState { fast: true, ..w },
            -Vec3::Z * 3.0 * FAST_MULTIPLIER * dt,
        ),
        (
            InputState {
                right: true,
                ..none
            },
            Vec3::X * 0.75,
        ),
        (InputState { up: true, ..none }, Vec3::Y * 0.75),
    ] {
        let moved = step(&s, &input, dt);
        assert!(
            (moved.position - (s.position + offset)).length() < 1e-5,
            "{input:?}"
        );
    }

    // Mouse look only while the right button is held; turns by the sensitivity.
    let delta = Vec2::new(40.0, -20.0);
    let idle = InputState {
        mouse_delta: delta,
        ..none
    };
    assert_eq!(step(&s, &idle, dt), s);
    let look = InputState { look: true, ..idle };
    let turned = step(&s, &look, dt);
    assert!((turned.yaw - 40.0 * LOOK_SENSITIVITY).abs() < 1e-6);
    assert!((turned.pitch - 20.0 * LOOK_SENSITIVITY).abs() < 1e-6);
    assert_eq!(turned.position, s.position, "looking does not move the eye");
    assert!(
        turned.forward().x > 0.0 && turned.forward().y > 0.0,
        "right and up"
    );

    // Pitch clamps short of the poles.
    for (dy, pitch) in [(-1e5, MAX_PITCH), (1e5, -MAX_PITCH)] {
        let input = InputState {
            mouse_delta: Vec2::new(0.0, dy),
            ..look
        };
        assert_eq!(step(&s, &input, dt).pitch, pitch);
    }

    // Wheel: speed ×1.25 per notch in fly mode.
    let faster = step(&s, &InputState { wheel: 2.0, ..none }, dt);
    assert!((faster.speed - 3.0 * WHEEL_SPEED_STEP * WHEEL_SPEED_STEP).abs() < 1e-5);

    // Orbit: dragging keeps the distance to the pivot and the pivot itself.
    let orbit = CameraState {
        mode: CameraMode::Orbit,
        ..s.clone()
    };
    let pivot = orbit.pivot();
    assert!((pivot - Vec3::new(0.0, 1.0, 0.0)).length() < 1e-5);
    let mut o = orbit.clone();
    for _ in 0..10 {
        let drag = InputState {
            drag: true,
            mouse_delta: Vec2::new(37.0, 11.0),
            ..none
        };
        o = step(&o, &drag, dt);
        assert!(((o.position - pivot).length() - 5.0).abs() < 1e-4);
        assert!((o.pivot() - pivot).length() < 1e-4);
    }
    assert!((o.position - orbit.position).length() > 1.0, "it moved");
    // The wheel dollies towards the pivot.
    let closer = step(&orbit, &InputState { wheel: 1.0, ..none }, dt);
    assert!(((closer.position - pivot).length() - 5.0 / WHEEL_SPEED_STEP).abs() < 1e-4);

    // Reset returns to the start camera, keeping mode and speed.
    let start = s.camera();
    let back = faster.reset(&start, 5.0);
    assert_eq!(back.position, start.position);
    assert!((back.forward() - start.forward).length() < 1e-6);
    assert_eq!(back.speed, faster.speed);
}

// ---------------------------------------------------------------------------------------
// Timing rows.

fn frame(ms: &[(&str, f64)]) -> Vec<PassTiming> {
    ms.iter()
        .map(|&(label, ms)| PassTiming {
            label: label.into(),
            ms,
        })
        .collect()
}

#[test]
fn timing_rows_follow_pass_order_with_medians() {
    let order = [
        "gbuffer",
        "reference.classify",
        "reference.dispatch_args",
        "reference",
        "lighting",
        "tonemap",
    ];
    let history: Vec<Vec<PassTiming>> = (0..5)
        .map(|i| {
            let v: Vec<(&str, f64)> = order
                .iter()
                .enumerate()
                .map(|(p, l)| (*l, (p + 1) as f64 * [1.0, 5.0, 2.0, 4.0, 3.0][i]))
                .collect();
            frame(&v)
        })
        .collect();
    let rows = timing_rows(&history);
    let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, order);
    for (p, row) in rows.iter().enumerate() {
        // Median of {1, 5, 2, 4, 3} × (p + 1) is 3 × (p + 1); the last frame's factor is 3.
        assert!(
            (row.median_ms - 3.0 * (p + 1) as f64).abs() < 1e-12,
            "{row:?}"
        );
        assert!((row.last_ms - 3.0 * (p + 1) as f64).abs() < 1e-12);
        assert_eq!(row.samples, 5);
    }
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    assert_eq!(median(&[]), 0.0);

    // A pass only some frames ran counts only those frames and keeps its place.
    let mut with_decode = history.clone();
    with_decode[4].insert(
        3,
        PassTiming {
            label: "ntc_decode".into(),
            ms: 7.0,
        },
    );
    let rows = timing_rows(&with_decode);
    assert_eq!(rows[3].label, "ntc_decode");
    assert_eq!((rows[3].median_ms, rows[3].samples), (7.0, 1));

    // The history keeps the last 60 GPU frames and medians the totals.
    let mut perf = PerfHistory::default();
    for i in 0..100 {
        perf.push_gpu(frame(&[("gbuffer", i as f64), ("tonemap", 1.0)]));
        perf.push_frame(16.0, 2.0);
    }
    let rows = perf.rows();
    assert_eq!(rows[0].samples, 60);
    assert_eq!(rows[0].median_ms, 69.5, "median of 40..=99");
    assert_eq!(perf.gpu_median_ms(), 70.5);
    assert_eq!(perf.frame_median_ms(), 16.0);
}
