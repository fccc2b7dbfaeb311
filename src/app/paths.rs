//! Camera paths and recording: the scene's paths and this session's recordings (selected,
//! followed by the camera), recording a path and saving the recordings into a scene
//! description next to the scene. The rules of playback, recording and saving are
//! `scene::camera_control`'s; this module holds the viewer's side of them.

use std::path::PathBuf;

use super::Viewer;
use crate::scene::camera_control::{self, CameraState, PathPlayer, PathRecorder};
use crate::scene::description::{CameraPath, SceneDescription};
use crate::ui::UiAction;
use crate::ui::keys::{Action, keys_of};

/// The viewer's side of the camera paths: playback, the selected path, a recording in
/// progress and this session's recordings.
#[derive(Debug, Default)]
pub(super) struct PathState {
    pub(super) player: PathPlayer,
    /// Index into [`Viewer::paths`].
    pub(super) selected: Option<usize>,
    pub(super) recorder: Option<PathRecorder>,
    /// Paths recorded this session (saved together by F10).
    pub(super) recordings: Vec<CameraPath>,
    /// Recordings not saved yet.
    pub(super) unsaved: bool,
}

impl Viewer {
    /// The scene's camera paths followed by this session's recordings.
    pub(super) fn paths(&self) -> Vec<&CameraPath> {
        self.scene
            .iter()
            .flat_map(|s| s.opened.description.camera_paths.iter())
            .chain(self.path_state.recordings.iter())
            .collect()
    }

    /// The selected camera path, if any.
    pub(super) fn selected(&self) -> Option<&CameraPath> {
        self.path_state
            .selected
            .and_then(|i| self.paths().get(i).copied())
    }

    /// Puts the camera where the player is on the selected path (keeping fly or orbit).
    pub(super) fn follow_path(&mut self) {
        if let Some(cam) = self
            .selected()
            .and_then(|p| self.path_state.player.camera(p))
        {
            let mode = self.camera.mode;
            self.camera = CameraState {
                mode,
                ..CameraState::from_camera(&cam, self.camera.speed, self.camera.distance)
            };
        }
    }

    /// Starts recording a camera path, or finishes the one being recorded.
    pub(super) fn toggle_recording(&mut self) {
        match self.path_state.recorder.take() {
            None => {
                self.path_state.player.playing = false;
                self.path_state.recorder = Some(PathRecorder::new(&self.camera.camera()));
                self.status.set(format!(
                    "recording: fly around, {} stops",
                    keys_of(Action::Ui(UiAction::ToggleRecording))
                ));
            }
            Some(rec) => {
                let seconds = rec.elapsed();
                let taken: Vec<CameraPath> = self.paths().into_iter().cloned().collect();
                let name = camera_control::unique_path_name(&taken, "recorded");
                match rec.finish(name) {
                    Some(path) => {
                        self.status.set(format!(
                            "recorded `{}`: {} keys, {seconds:.1} s — {} saves",
                            path.name,
                            path.keys.len(),
                            keys_of(Action::Ui(UiAction::SaveRecording))
                        ));
                        self.path_state.recordings.push(path);
                        self.path_state.selected = Some(self.paths().len() - 1);
                        self.path_state.player = PathPlayer {
                            looping: self.path_state.player.looping,
                            speed: self.path_state.player.speed,
                            ..PathPlayer::default()
                        };
                        self.path_state.unsaved = true;
                    }
                    None => self
                        .status
                        .set("recording too short (under 0.5 s); nothing kept"),
                }
            }
        }
    }

    /// Saves this session's recordings into a scene description next to the scene.
    pub(super) fn save_recordings(&mut self) {
        let Some(scene) = &self.scene else {
            return;
        };
        if self.path_state.recordings.is_empty() {
            self.status.set(format!(
                "nothing recorded yet ({} records)",
                keys_of(Action::Ui(UiAction::ToggleRecording))
            ));
            return;
        }
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let description: &SceneDescription = &scene.opened.description;
        match camera_control::save_recording(
            scene.source.as_deref(),
            description,
            self.path_state.recordings.clone(),
            &cwd,
        ) {
            Ok(path) => {
                self.status.set(format!("saved {}", path.display()));
                log::info!("saved the recorded camera paths into {}", path.display());
                self.path_state.unsaved = false;
            }
            Err(e) => {
                self.status.set(format!("saving failed: {e}"));
                log::error!("saving the recording failed: {e}");
            }
        }
    }
}
