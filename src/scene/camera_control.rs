//! Interactive camera control as pure functions of input, plus camera-path playback and
//! recording. The viewer (`app`) fills an [`InputState`] from window events and calls
//! [`step`] once per frame; nothing here knows about windows, egui or the GPU, so every
//! rule (speeds, sensitivity, pitch clamp, orbit distance) is unit-tested directly.
//!
//! Conventions: right-handed, +Y up. The view direction is stored as yaw and pitch:
//! `yaw = 0, pitch = 0` looks down −Z, positive yaw turns right (towards +X), positive
//! pitch looks up. Both modes keep a pivot `distance` metres in front of the eye:
//!
//! - **Fly**: WASD move along the view direction and its right vector, Q/E move down/up
//!   along world Y, the mouse turns while the right button is held, Shift multiplies the
//!   speed by [`FAST_MULTIPLIER`], each wheel notch multiplies the speed by
//!   [`WHEEL_SPEED_STEP`].
//! - **Orbit**: dragging with the left (or right) button turns around the pivot at a
//!   constant distance, each wheel notch divides the distance by [`WHEEL_SPEED_STEP`]
//!   (dolly), WASD/QE move eye and pivot together (pan).
//!
//! Recording samples the flown camera every [`RECORD_INTERVAL`] seconds into a
//! [`CameraPath`]; [`save_recording`] writes it into a copy of the scene description,
//! never over the file the scene came from.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use glam::{Vec2, Vec3};

use super::description::{CameraKey, CameraPath, SceneDescription};
use super::{Aabb, Camera, SceneError};

/// Radians the view turns per pixel of mouse motion.
pub const LOOK_SENSITIVITY: f32 = 0.0025;
/// Largest pitch magnitude (radians, 89°): the view never flips over the pole.
pub const MAX_PITCH: f32 = 89.0 * std::f32::consts::PI / 180.0;
/// Speed multiplier while Shift is held.
pub const FAST_MULTIPLIER: f32 = 4.0;
/// Factor per wheel notch: fly speed ×1.25 per notch up; orbit distance ÷1.25 per notch up.
pub const WHEEL_SPEED_STEP: f32 = 1.25;
/// Allowed fly speeds in metres per second.
pub const SPEED_RANGE: RangeInclusive<f32> = 0.01..=1000.0;
/// Smallest orbit distance in metres.
pub const MIN_ORBIT_DISTANCE: f32 = 0.05;
/// Seconds between two recorded camera keys.
pub const RECORD_INTERVAL: f32 = 0.5;
/// Distance (metres) from the eye to the look-at target written into recorded keys. Only
/// the direction matters; a few metres keeps the interpolated direction stable.
pub const RECORD_TARGET_DISTANCE: f32 = 4.0;
/// Allowed playback speeds of a camera path.
pub const PATH_SPEED_RANGE: RangeInclusive<f32> = 0.25..=4.0;

/// How mouse and keys move the camera.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CameraMode {
    /// First-person flight.
    #[default]
    Fly,
    /// Turn around a pivot in front of the camera.
    Orbit,
}

impl CameraMode {
    /// The other mode (the Tab key).
    pub fn toggled(self) -> Self {
        match self {
            CameraMode::Fly => CameraMode::Orbit,
            CameraMode::Orbit => CameraMode::Fly,
        }
    }

    /// Name for the UI.
    pub fn name(self) -> &'static str {
        match self {
            CameraMode::Fly => "Fly",
            CameraMode::Orbit => "Orbit",
        }
    }
}

/// The input of one frame, filled by the viewer from window events.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InputState {
    /// W held.
    pub forward: bool,
    /// S held.
    pub back: bool,
    /// A held.
    pub left: bool,
    /// D held.
    pub right: bool,
    /// Q held.
    pub down: bool,
    /// E held.
    pub up: bool,
    /// Shift held: ×[`FAST_MULTIPLIER`].
    pub fast: bool,
    /// Right mouse button held (look in fly mode, orbit in orbit mode).
    pub look: bool,
    /// Left mouse button held over the 3D view (orbit in orbit mode).
    pub drag: bool,
    /// Cursor motion in physical pixels since the last frame (+x right, +y down).
    pub mouse_delta: Vec2,
    /// Wheel notches since the last frame (+ away from the user).
    pub wheel: f32,
}

impl InputState {
    /// Forgets the per-frame accumulators (mouse motion, wheel); call after [`step`].
    pub fn end_frame(&mut self) {
        self.mouse_delta = Vec2::ZERO;
        self.wheel = 0.0;
    }

    /// Releases every key and button (focus lost: releases would never arrive).
    pub fn release_all(&mut self) {
        *self = Self::default();
    }
}

/// The interactive camera: eye, view direction as yaw/pitch, and the pivot distance.
#[derive(Clone, Debug, PartialEq)]
pub struct CameraState {
    /// Fly or orbit.
    pub mode: CameraMode,
    /// Eye position (world, metres).
    pub position: Vec3,
    /// Heading in radians; 0 looks down −Z, positive turns right.
    pub yaw: f32,
    /// Elevation in radians, within ±[`MAX_PITCH`].
    pub pitch: f32,
    /// Distance from the eye to the orbit pivot along the view direction (metres).
    pub distance: f32,
    /// Fly speed in metres per second (before Shift).
    pub speed: f32,
    /// Vertical field of view in radians.
    pub yfov: f32,
    /// Near plane in metres.
    pub znear: f32,
}

impl CameraState {
    /// The state that reproduces `camera` (pitch clamped), in fly mode, with `speed` m/s
    /// and the pivot `distance` metres ahead.
    pub fn from_camera(camera: &Camera, speed: f32, distance: f32) -> Self {
        let f = camera.forward.normalize_or(-Vec3::Z);
        Self {
            mode: CameraMode::Fly,
            position: camera.position,
            yaw: f.x.atan2(-f.z),
            pitch: f.y.clamp(-1.0, 1.0).asin().clamp(-MAX_PITCH, MAX_PITCH),
            distance: distance.max(MIN_ORBIT_DISTANCE),
            speed: speed.clamp(*SPEED_RANGE.start(), *SPEED_RANGE.end()),
            yfov: camera.yfov,
            znear: camera.znear,
        }
    }

    /// Back to `start` (the R key), keeping the mode and the speed.
    pub fn reset(&self, start: &Camera, distance: f32) -> Self {
        Self {
            mode: self.mode,
            ..Self::from_camera(start, self.speed, distance)
        }
    }

    /// Unit view direction.
    pub fn forward(&self) -> Vec3 {
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.sin_cos();
        Vec3::new(sy * cp, sp, -cy * cp)
    }

    /// Unit right vector (horizontal).
    pub fn right(&self) -> Vec3 {
        let (sy, cy) = self.yaw.sin_cos();
        Vec3::new(cy, 0.0, sy)
    }

    /// The orbit pivot: `distance` metres along the view direction.
    pub fn pivot(&self) -> Vec3 {
        self.position + self.forward() * self.distance
    }

    /// The renderer's camera.
    pub fn camera(&self) -> Camera {
        Camera {
            name: "viewer".into(),
            position: self.position,
            forward: self.forward(),
            yfov: self.yfov,
            znear: self.znear,
        }
    }
}

/// A comfortable fly speed (m/s) for a scene of these bounds: a quarter of its radius per
/// second, within 0.5–50 m/s.
pub fn default_speed(bounds: &Aabb) -> f32 {
    if bounds.is_empty() {
        return 1.0;
    }
    (bounds.radius() * 0.25).clamp(0.5, 50.0)
}

/// Pivot distance for `camera` in a scene of these bounds: how far ahead the scene's
/// centre lies along the view direction, within [0.5 m, scene radius]; half the radius
/// when the centre is behind the camera.
pub fn focus_distance(camera: &Camera, bounds: &Aabb) -> f32 {
    if bounds.is_empty() {
        return 2.0;
    }
    let radius = bounds.radius().max(0.5);
    let ahead = (bounds.center() - camera.position).dot(camera.forward.normalize_or(-Vec3::Z));
    if ahead > 0.0 {
        ahead.clamp(0.5, radius)
    } else {
        (radius * 0.5).max(0.5)
    }
}

/// One frame of camera control: `state` after `input` was applied for `dt` seconds.
pub fn step(state: &CameraState, input: &InputState, dt: f32) -> CameraState {
    let mut s = state.clone();
    let turning = match s.mode {
        CameraMode::Fly => input.look,
        CameraMode::Orbit => input.look || input.drag,
    };
    if turning && input.mouse_delta != Vec2::ZERO {
        let pivot = s.pivot();
        s.yaw = wrap_angle(s.yaw + input.mouse_delta.x * LOOK_SENSITIVITY);
        s.pitch = (s.pitch - input.mouse_delta.y * LOOK_SENSITIVITY).clamp(-MAX_PITCH, MAX_PITCH);
        if s.mode == CameraMode::Orbit {
            s.position = pivot - s.forward() * s.distance;
        }
    }
    if input.wheel != 0.0 {
        let factor = WHEEL_SPEED_STEP.powf(input.wheel);
        match s.mode {
            CameraMode::Fly => {
                s.speed = (s.speed * factor).clamp(*SPEED_RANGE.start(), *SPEED_RANGE.end());
            }
            CameraMode::Orbit => {
                let pivot = s.pivot();
                s.distance = (s.distance / factor).max(MIN_ORBIT_DISTANCE);
                s.position = pivot - s.forward() * s.distance;
            }
        }
    }
    let axis = |plus: bool, minus: bool| f32::from(u8::from(plus)) - f32::from(u8::from(minus));
    let direction = s.forward() * axis(input.forward, input.back)
        + s.right() * axis(input.right, input.left)
        + Vec3::Y * axis(input.up, input.down);
    if direction != Vec3::ZERO {
        let fast = if input.fast { FAST_MULTIPLIER } else { 1.0 };
        s.position += direction.normalize() * s.speed * fast * dt.max(0.0);
    }
    s
}

/// `a` wrapped into (−π, π].
fn wrap_angle(a: f32) -> f32 {
    use std::f32::consts::{PI, TAU};
    let w = (a + PI).rem_euclid(TAU) - PI;
    if w <= -PI { w + TAU } else { w }
}

/// Playback state of one camera path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathPlayer {
    /// Seconds from the path's first key.
    pub time: f32,
    /// Advancing.
    pub playing: bool,
    /// Start over at the end instead of stopping.
    pub looping: bool,
    /// Playback speed, within [`PATH_SPEED_RANGE`].
    pub speed: f32,
}

impl Default for PathPlayer {
    fn default() -> Self {
        Self {
            time: 0.0,
            playing: false,
            looping: true,
            speed: 1.0,
        }
    }
}

impl PathPlayer {
    /// Advances by `dt` wall-clock seconds along a path lasting `duration` seconds: wraps
    /// when looping, otherwise stops at the end.
    pub fn advance(&mut self, duration: f32, dt: f32) {
        if !self.playing {
            return;
        }
        self.time += dt.max(0.0)
            * self
                .speed
                .clamp(*PATH_SPEED_RANGE.start(), *PATH_SPEED_RANGE.end());
        if self.time >= duration {
            if self.looping && duration > 0.0 {
                self.time = self.time.rem_euclid(duration);
            } else {
                self.time = duration.max(0.0);
                self.playing = false;
            }
        }
    }

    /// The camera of `path` at the current time.
    pub fn camera(&self, path: &CameraPath) -> Option<Camera> {
        let start = path.keys.first()?.time;
        path.sample(start + self.time)
    }
}

/// The key that reproduces `camera` at `time`.
pub fn key_from_camera(camera: &Camera, time: f32) -> CameraKey {
    let forward = camera.forward.normalize_or(-Vec3::Z);
    CameraKey {
        time,
        position: camera.position.into(),
        target: (camera.position + forward * RECORD_TARGET_DISTANCE).into(),
        fov_deg: camera.yfov.to_degrees(),
    }
}

/// Samples the flown camera every [`RECORD_INTERVAL`] seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct PathRecorder {
    keys: Vec<CameraKey>,
    elapsed: f32,
}

impl PathRecorder {
    /// Starts recording at `camera` (the key at time 0).
    pub fn new(camera: &Camera) -> Self {
        Self {
            keys: vec![key_from_camera(camera, 0.0)],
            elapsed: 0.0,
        }
    }

    /// `dt` seconds passed and the camera is now `camera`: adds a key when the next
    /// multiple of [`RECORD_INTERVAL`] was reached (one key per call at most, so a long
    /// hitch does not produce a run of identical keys).
    pub fn advance(&mut self, camera: &Camera, dt: f32) {
        self.elapsed += dt.max(0.0);
        // Tolerance for summed frame times (25 × 0.1 s is 2.4999998 s in f32).
        let elapsed = self.elapsed + 1e-4;
        let last = self.keys.last().map_or(0.0, |k| k.time);
        if elapsed >= last + RECORD_INTERVAL {
            let time = (elapsed / RECORD_INTERVAL).floor() * RECORD_INTERVAL;
            self.keys.push(key_from_camera(camera, time));
        }
    }

    /// Seconds recorded so far.
    pub fn elapsed(&self) -> f32 {
        self.elapsed
    }

    /// The keys recorded so far.
    pub fn keys(&self) -> &[CameraKey] {
        &self.keys
    }

    /// The recording as a path named `name`; `None` with fewer than two keys (shorter than
    /// [`RECORD_INTERVAL`]).
    pub fn finish(self, name: String) -> Option<CameraPath> {
        (self.keys.len() >= 2).then_some(CameraPath {
            name,
            keys: self.keys,
        })
    }
}

/// `base`, or `base-2`, `base-3`, … : the first name no path in `paths` has.
pub fn unique_path_name(paths: &[CameraPath], base: &str) -> String {
    let taken = |n: &str| paths.iter().any(|p| p.name == n);
    if !taken(base) {
        return base.to_owned();
    }
    (2..)
        .map(|i| format!("{base}-{i}"))
        .find(|n| !taken(n))
        .unwrap_or_else(|| base.to_owned())
}

/// Where [`save_recording`] writes: `<stem>.recorded.toml` next to the scene file, or
/// `<builtin>.recorded.toml` in `cwd` for a built-in scene (`source` = `None`).
pub fn recorded_description_path(
    source: Option<&Path>,
    description: &SceneDescription,
    cwd: &Path,
) -> PathBuf {
    match source {
        Some(file) => {
            let stem = file
                .file_stem()
                .map_or_else(|| "scene".into(), |s| s.to_string_lossy().into_owned());
            file.with_file_name(format!("{stem}.recorded.toml"))
        }
        None => {
            let name = description.builtin.map_or("scene", |_| "toyshop");
            cwd.join(format!("{name}.recorded.toml"))
        }
    }
}

/// Writes `paths` into a scene description that opens the same scene, and returns the
/// file written (see [`recorded_description_path`]). Never writes over `source`. A path
/// whose name the description already uses is renamed (`recorded-2`, …).
///
/// - `source` a `.toml`: a copy of `description` (as loaded from it) with `paths`
///   appended; relative paths stay valid because the copy lies in the same folder.
/// - `source` a `.gltf` / `.glb`: a new description with `gltf = "<file name>"` and
///   `description`'s lighting and defaults.
/// - `source` `None` (built-in scene): a copy of `description` in `cwd`.
///
/// When the scene's folder is not writable the file goes to `cwd` instead, with the glTF
/// path made absolute so that it still resolves. The text is written to a temporary file
/// and renamed into place, so a crash never leaves half a file.
pub fn save_recording(
    source: Option<&Path>,
    description: &SceneDescription,
    paths: Vec<CameraPath>,
    cwd: &Path,
) -> Result<PathBuf, SceneError> {
    let mut out = description.clone();
    let source_dir = source.and_then(Path::parent).map(Path::to_path_buf);
    if let Some(file) = source
        && !is_toml(file)
    {
        out.gltf = Some(PathBuf::from(file.file_name().unwrap_or(file.as_os_str())));
        out.builtin = None;
    }
    for mut path in paths {
        path.name = unique_path_name(&out.camera_paths, &path.name);
        out.camera_paths.push(path);
    }

    let target = recorded_description_path(source, description, cwd);
    if source.is_some_and(|s| s == target) {
        return Err(SceneError::Description {
            path: target,
            reason: "refusing to write the recording over the scene file it was loaded from".into(),
        });
    }
    match write_description(&target, &out) {
        Err(SceneError::Io { source: e, .. })
            if matches!(
                e.kind(),
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
            ) =>
        {
            if let (Some(dir), Some(gltf)) = (&source_dir, &out.gltf)
                && gltf.is_relative()
            {
                let absolute = dir.join(gltf);
                out.gltf = Some(std::fs::canonicalize(&absolute).unwrap_or(absolute));
            }
            if let Some(dir) = &source_dir {
                for folder in &mut out.asset_folders {
                    if folder.is_relative() {
                        let absolute = dir.join(&*folder);
                        *folder = std::fs::canonicalize(&absolute).unwrap_or(absolute);
                    }
                }
            }
            let fallback = cwd.join(target.file_name().unwrap_or(target.as_os_str()));
            log::warn!(
                "{} is not writable ({e}); writing {} instead",
                target.display(),
                fallback.display()
            );
            write_description(&fallback, &out)?;
            Ok(fallback)
        }
        Err(e) => Err(e),
        Ok(()) => Ok(target),
    }
}

fn is_toml(file: &Path) -> bool {
    file.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

/// Serialises `description` into `target` through a temporary file and a rename.
fn write_description(target: &Path, description: &SceneDescription) -> Result<(), SceneError> {
    let text = toml::to_string(description).map_err(|e| SceneError::Description {
        path: target.to_path_buf(),
        reason: format!("cannot serialise the description: {e}"),
    })?;
    let header =
        "# Written by the neurotex viewer: the scene description with a recorded camera path.\n";
    crate::io::write_atomic(target, format!("{header}{text}").as_bytes()).map_err(|source| {
        SceneError::Io {
            path: target.to_path_buf(),
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> CameraState {
        let cam = Camera {
            name: "start".into(),
            position: Vec3::new(1.0, 2.0, 3.0),
            forward: -Vec3::Z,
            yfov: 1.0,
            znear: 0.1,
        };
        CameraState::from_camera(&cam, 2.0, 5.0)
    }

    #[test]
    fn camera_control_w_moves_forward_by_speed_dt() {
        let s = start();
        let input = InputState {
            forward: true,
            ..Default::default()
        };
        let next = step(&s, &input, 0.5);
        assert!((next.position - (s.position - Vec3::Z * 1.0)).length() < 1e-5);
        let fast = step(
            &s,
            &InputState {
                fast: true,
                ..input
            },
            0.5,
        );
        assert!((fast.position - (s.position - Vec3::Z * 4.0)).length() < 1e-5);
    }

    #[test]
    fn camera_control_forward_and_yaw_agree() {
        let mut s = start();
        for yaw in [-2.0f32, -0.5, 0.0, 0.7, 3.0] {
            s.yaw = yaw;
            s.pitch = 0.3;
            let back = CameraState::from_camera(&s.camera(), 1.0, 1.0);
            assert!((back.yaw - yaw).abs() < 1e-4 && (back.pitch - 0.3).abs() < 1e-4);
            assert!(s.right().dot(s.forward()).abs() < 1e-5);
            assert!((s.forward().cross(Vec3::Y).normalize() - s.right()).length() < 1e-4);
        }
    }

    #[test]
    fn camera_control_wrap_angle_stays_in_range() {
        for a in [-10.0f32, -3.2, 0.0, 3.2, 10.0] {
            let w = wrap_angle(a);
            assert!(w > -std::f32::consts::PI - 1e-6 && w <= std::f32::consts::PI + 1e-6);
            assert!((w.sin() - a.sin()).abs() < 1e-5 && (w.cos() - a.cos()).abs() < 1e-5);
        }
    }

    #[test]
    fn camera_control_recorder_samples_every_interval() {
        let mut s = start();
        let mut rec = PathRecorder::new(&s.camera());
        for _ in 0..20 {
            s.position.x += 0.1;
            rec.advance(&s.camera(), 0.1);
        }
        let times: Vec<f32> = rec.keys().iter().map(|k| k.time).collect();
        assert_eq!(times, [0.0, 0.5, 1.0, 1.5, 2.0]);
        assert!((rec.elapsed() - 2.0).abs() < 1e-5);
        assert!(rec.finish("r".into()).is_some());
        assert!(PathRecorder::new(&s.camera()).finish("r".into()).is_none());
    }

    #[test]
    fn camera_control_unique_names() {
        let p = |n: &str| CameraPath {
            name: n.into(),
            keys: vec![],
        };
        assert_eq!(unique_path_name(&[], "recorded"), "recorded");
        assert_eq!(
            unique_path_name(&[p("recorded"), p("recorded-2")], "recorded"),
            "recorded-3"
        );
    }

    #[test]
    fn camera_control_player_loops_or_stops() {
        let mut p = PathPlayer {
            playing: true,
            ..Default::default()
        };
        p.advance(4.0, 5.0);
        assert!(p.playing && (p.time - 1.0).abs() < 1e-5);
        p.looping = false;
        p.speed = 2.0;
        p.advance(4.0, 2.0);
        assert!(!p.playing && p.time == 4.0);
    }
}
