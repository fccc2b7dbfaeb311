//! Input: keys and mouse buttons looked up in the key table (`ui::keys`), cursor motion
//! and the wheel into the camera input, and the camera's update each frame (along the
//! selected path while it plays, else by `scene::camera_control`'s rules). Held keys act on
//! press and release; every other key acts once per press, repeats ignored.

use winit::event::{ElementState, MouseScrollDelta, WindowEvent};
use winit::keyboard::{KeyCode, PhysicalKey};

use super::{Flow, Viewer};
use crate::render::RenderMode;
use crate::scene::camera_control::{self, PATH_SPEED_RANGE};
use crate::scene::description::CameraPath;
use crate::ui::RENDER_SCALE_RANGE;
use crate::ui::keys::{self, Action};

/// Longest time step (seconds) the interactive controls integrate over in one frame.
const MAX_CONTROL_STEP: f32 = 0.1;

impl Viewer {
    /// Moves the camera for a frame `dt` seconds after the previous one: along the path
    /// in real time, or by the input (with `dt` capped at [`MAX_CONTROL_STEP`] so a hitch
    /// never throws the camera through a wall).
    pub(super) fn update_camera(&mut self, dt: f32) {
        let duration = self.selected().map(CameraPath::duration);
        match duration {
            Some(duration) if self.path_state.player.playing => {
                self.path_state.player.advance(duration, dt);
                self.follow_path();
            }
            _ => {
                self.path_state.player.playing = false;
                self.camera =
                    camera_control::step(&self.camera, &self.input, dt.min(MAX_CONTROL_STEP));
            }
        }
        self.input.end_frame();
        if let Some(rec) = &mut self.path_state.recorder {
            rec.advance(&self.camera.camera(), dt);
        }
    }

    /// Acts on a key (`pressed` or released; `repeat`: an auto-repeated press); returns
    /// whether the viewer quits.
    fn on_key(&mut self, code: KeyCode, pressed: bool, repeat: bool) -> bool {
        let Some(action) = keys::key_action(code) else {
            return false;
        };
        let s = &mut self.settings;
        match action {
            Action::Hold(hold) => *hold.flag(&mut self.input) = pressed,
            _ if !pressed || repeat => {}
            Action::Quit => return true,
            Action::ToggleOverlay => s.show_overlay = !s.show_overlay,
            Action::ToggleHelp => s.show_help = !s.show_help,
            Action::Ui(ui_action) => self.apply(ui_action),
            Action::ToggleTrace => self.toggle_trace(),
            Action::ToggleCameraMode => self.camera.mode = self.camera.mode.toggled(),
            Action::PauseResumePath => {
                if self.path_state.selected.is_some() {
                    self.path_state.player.playing = !self.path_state.player.playing;
                }
            }
            Action::ToggleLoop => self.path_state.player.looping = !self.path_state.player.looping,
            Action::PathSpeed(f) => {
                self.path_state.player.speed = (self.path_state.player.speed * f)
                    .clamp(*PATH_SPEED_RANGE.start(), *PATH_SPEED_RANGE.end());
                self.status
                    .set(format!("path speed {}×", self.path_state.player.speed));
            }
            Action::NextPath => {
                let n = self.paths().len();
                if n > 0 {
                    self.path_state.selected =
                        Some(self.path_state.selected.map_or(0, |i| (i + 1) % n));
                    self.path_state.player.time = 0.0;
                    self.follow_path();
                }
            }
            Action::RenderScale(d) => {
                s.render_scale = (s.render_scale + d)
                    .clamp(*RENDER_SCALE_RANGE.start(), *RENDER_SCALE_RANGE.end());
            }
            Action::ToggleVsync => s.vsync = !s.vsync,
            Action::NextMode => {
                let i = RenderMode::ALL
                    .iter()
                    .position(|m| *m == s.mode)
                    .unwrap_or(0);
                s.mode = RenderMode::ALL[(i + 1) % RenderMode::ALL.len()];
                self.status.set(format!("mode {}", s.mode));
            }
            Action::ToggleHeatmap => s.show_heatmap = !s.show_heatmap,
            Action::ToggleTemporal => s.passes.temporal.enabled = !s.passes.temporal.enabled,
            Action::ToggleStochastic => s.passes.decode.stochastic = !s.passes.decode.stochastic,
            Action::ToggleInferenceOnLoad => {
                s.passes.inference_on_load = !s.passes.inference_on_load;
            }
            Action::ShowAov(aov) => s.aov = aov,
            Action::ToggleSplit => {
                s.compare.enabled = !s.compare.enabled;
                // Both sides' PSNR comes with the first split frame.
                self.psnr_request |= s.compare.enabled;
            }
            Action::NextRightMode => {
                s.compare.next_right(&self.options.modes);
                self.status
                    .set(format!("right side {}", s.compare.split.right.mode));
                self.psnr_request = true;
            }
            Action::ToggleDifference => s.compare.difference = !s.compare.difference,
            Action::ToggleInspect => s.inspect = !s.inspect,
        }
        false
    }

    /// Acts on a keyboard, mouse or focus event (`typing`: a text field of the overlay
    /// has the keyboard).
    pub(super) fn input_event(&mut self, event: WindowEvent, typing: bool) -> Flow {
        match event {
            WindowEvent::Focused(false) => self.input.release_all(),
            WindowEvent::ModifiersChanged(m) => self.input.fast = m.state().shift_key(),
            WindowEvent::KeyboardInput { event, .. } => {
                if let PhysicalKey::Code(code) = event.physical_key {
                    let pressed = event.state == ElementState::Pressed;
                    // Releases always count, so that no movement key sticks.
                    if (!pressed || !typing) && self.on_key(code, pressed, event.repeat) {
                        return Flow::Exit(Ok(()));
                    }
                }
            }
            WindowEvent::MouseInput { state, button, .. } => {
                let pressed = state == ElementState::Pressed;
                let free = !pressed || !self.egui_ctx.is_pointer_over_egui();
                if let Some(hold) = keys::drag_action(button)
                    && free
                {
                    *hold.flag(&mut self.input) = pressed;
                }
            }
            WindowEvent::CursorMoved { position, .. } => {
                if let Some((x, y)) = self.cursor
                    && (self.input.look || self.input.drag)
                {
                    self.input.mouse_delta +=
                        glam::Vec2::new((position.x - x) as f32, (position.y - y) as f32);
                }
                self.cursor = Some((position.x, position.y));
            }
            WindowEvent::CursorLeft { .. } => self.cursor = None,
            WindowEvent::MouseWheel { delta, .. } if !self.egui_ctx.is_pointer_over_egui() => {
                self.input.wheel += match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => (p.y / 40.0) as f32,
                };
            }
            _ => {}
        }
        Flow::Continue
    }
}
