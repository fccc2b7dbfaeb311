//! The viewer's key table: every keyboard and mouse shortcut, listed once. Each entry
//! names its input (winit key codes, Shift, a mouse drag or the wheel), its help text and
//! what it does ([`Action`]). The viewer's input handler looks keys and mouse buttons up
//! here, the help panel lists the table, the overlay's button hints name their keys
//! through [`hint`], and a test checks that the README's key table is this one.

use winit::event::MouseButton;
use winit::keyboard::KeyCode;

use super::UiAction;
use crate::render::Aov;
use crate::scene::camera_control::InputState;
use Action as A;
use KeyCode as K;

/// What a held key or mouse button sets while it is down: one flag of the camera input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Move forward.
    Forward,
    /// Move back.
    Back,
    /// Move left.
    Left,
    /// Move right.
    Right,
    /// Move down.
    Down,
    /// Move up.
    Up,
    /// Look around (fly), orbit (orbit mode).
    Look,
    /// Orbit around the pivot (orbit mode).
    Orbit,
}

impl Hold {
    /// The flag of `input` this sets while held.
    pub fn flag(self, input: &mut InputState) -> &mut bool {
        match self {
            Hold::Forward => &mut input.forward,
            Hold::Back => &mut input.back,
            Hold::Left => &mut input.left,
            Hold::Right => &mut input.right,
            Hold::Down => &mut input.down,
            Hold::Up => &mut input.up,
            Hold::Look => &mut input.look,
            Hold::Orbit => &mut input.drag,
        }
    }
}

/// What a key does. [`Action::Hold`] keys act while held (press and release); every other
/// action acts once per press, key repeats ignored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// Held movement.
    Hold(Hold),
    /// What the overlay's buttons do too.
    Ui(UiAction),
    /// Quit the viewer.
    Quit,
    /// Show or hide the overlay.
    ToggleOverlay,
    /// Show or hide the help panel.
    ToggleHelp,
    /// Start a Chrome trace of the GPU passes, or save the one being recorded.
    ToggleTrace,
    /// Switch between fly and orbit.
    ToggleCameraMode,
    /// Pause or resume the selected camera path.
    PauseResumePath,
    /// Loop the camera path on or off.
    ToggleLoop,
    /// Multiply the camera path speed by this factor (within its range).
    PathSpeed(f32),
    /// Select the next camera path.
    NextPath,
    /// Add this to the render scale (within its range).
    RenderScale(f32),
    /// Vsync on or off.
    ToggleVsync,
    /// The next material source (render mode).
    NextMode,
    /// The heatmap on or off.
    ToggleHeatmap,
    /// Temporal accumulation on or off.
    ToggleTemporal,
    /// Stochastic trilinear filtering on or off.
    ToggleStochastic,
    /// Inference on load on or off.
    ToggleInferenceOnLoad,
    /// Show this output.
    ShowAov(Aov),
    /// The split comparison on or off.
    ToggleSplit,
    /// The next material source of the split's right side.
    NextRightMode,
    /// The split's difference view on or off.
    ToggleDifference,
    /// The pixel inspector on or off.
    ToggleInspect,
}

/// The input of a shortcut.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Input {
    /// Keys, each with what it does.
    Keys(&'static [(KeyCode, Action)]),
    /// Shift held (winit reports it as a modifier state, not as a key of this table).
    Shift,
    /// A mouse button held (while the pointer moves).
    Drag(MouseButton, Hold),
    /// The mouse wheel.
    Wheel,
}

/// One entry of the key table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shortcut {
    /// What triggers it.
    pub input: Input,
    /// What it does, as the help panel and the README say it.
    pub help: &'static str,
}

impl Shortcut {
    /// The input as the help panel names it: one key by its name, two as `a / b`, three
    /// or more consecutive digits as `1 … 8`, other lists separated by spaces.
    pub fn keys(&self) -> String {
        match self.input {
            Input::Keys(keys) => join_keys(keys.iter().map(|(code, _)| *code)),
            Input::Shift => "Shift".to_owned(),
            Input::Drag(button, _) => format!("{button:?} drag"),
            Input::Wheel => "Wheel".to_owned(),
        }
    }
}

/// Every shortcut of the viewer, in the order the help panel lists them.
pub const SHORTCUTS: &[Shortcut] = &[
    Shortcut {
        input: Input::Keys(&[(K::F1, A::ToggleOverlay)]),
        help: "Show / hide the overlay",
    },
    Shortcut {
        input: Input::Keys(&[(K::F2, A::ToggleHelp)]),
        help: "Show / hide the help panel",
    },
    Shortcut {
        input: Input::Keys(&[(K::F5, A::Ui(UiAction::Reload))]),
        help: "Reload the scene (a failed reload keeps the current one)",
    },
    Shortcut {
        input: Input::Keys(&[(K::F12, A::Ui(UiAction::Screenshot))]),
        help: "Screenshot with the overlay, saved as screenshot-<n>.png in the working directory",
    },
    Shortcut {
        input: Input::Keys(&[(K::F8, A::ToggleTrace)]),
        help: "Start a Chrome trace of the GPU passes; pressed again, save it as trace-<n>.json \
               in the working directory (chrome://tracing, Perfetto)",
    },
    Shortcut {
        input: Input::Keys(&[(K::Escape, A::Quit)]),
        help: "Quit",
    },
    Shortcut {
        input: Input::Keys(&[
            (K::KeyW, A::Hold(Hold::Forward)),
            (K::KeyA, A::Hold(Hold::Left)),
            (K::KeyS, A::Hold(Hold::Back)),
            (K::KeyD, A::Hold(Hold::Right)),
        ]),
        help: "Move forward / left / back / right",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyQ, A::Hold(Hold::Down)), (K::KeyE, A::Hold(Hold::Up))]),
        help: "Move down / up",
    },
    Shortcut {
        input: Input::Shift,
        help: "Move 4× faster",
    },
    Shortcut {
        input: Input::Drag(MouseButton::Right, Hold::Look),
        help: "Look around (fly), orbit (orbit mode)",
    },
    Shortcut {
        input: Input::Drag(MouseButton::Left, Hold::Orbit),
        help: "Orbit around the pivot (orbit mode)",
    },
    Shortcut {
        input: Input::Wheel,
        help: "Fly speed ×1.25 per notch; dolly in orbit mode",
    },
    Shortcut {
        input: Input::Keys(&[(K::Tab, A::ToggleCameraMode)]),
        help: "Switch fly / orbit",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyR, A::Ui(UiAction::ResetCamera))]),
        help: "Reset the camera to the scene's start camera",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyC, A::NextPath)]),
        help: "Select the next camera path",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyP, A::Ui(UiAction::PlayPath))]),
        help: "Play the selected camera path from its start",
    },
    Shortcut {
        input: Input::Keys(&[(K::Space, A::PauseResumePath)]),
        help: "Pause / resume the camera path",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyL, A::ToggleLoop)]),
        help: "Loop the camera path on / off",
    },
    Shortcut {
        input: Input::Keys(&[
            (K::BracketLeft, A::PathSpeed(0.5)),
            (K::BracketRight, A::PathSpeed(2.0)),
        ]),
        help: "Camera path speed ÷2 / ×2 (0.25–4×)",
    },
    Shortcut {
        input: Input::Keys(&[(K::F9, A::Ui(UiAction::ToggleRecording))]),
        help: "Start / stop recording a camera path (a key every 0.5 s)",
    },
    Shortcut {
        input: Input::Keys(&[(K::F10, A::Ui(UiAction::SaveRecording))]),
        help: "Save the recordings into <scene>.recorded.toml next to the scene",
    },
    Shortcut {
        input: Input::Keys(&[
            (K::Digit1, A::ShowAov(Aov::Final)),
            (K::Digit2, A::ShowAov(Aov::Albedo)),
            (K::Digit3, A::ShowAov(Aov::Normal)),
            (K::Digit4, A::ShowAov(Aov::Roughness)),
            (K::Digit5, A::ShowAov(Aov::Metallic)),
            (K::Digit6, A::ShowAov(Aov::Occlusion)),
            (K::Digit7, A::ShowAov(Aov::Emissive)),
            (K::Digit8, A::ShowAov(Aov::MaterialId)),
        ]),
        help: "Output: final, albedo, normal, roughness, metallic, occlusion, emissive, material id",
    },
    Shortcut {
        input: Input::Keys(&[
            (K::Minus, A::RenderScale(-0.25)),
            (K::Equal, A::RenderScale(0.25)),
        ]),
        help: "Render scale −/+ 0.25 (0.25–1.0)",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyV, A::ToggleVsync)]),
        help: "Vsync on / off",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyM, A::NextMode)]),
        help: "Material source: reference → baseline → clustered → single → random → category → divergence-aware",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyH, A::ToggleHeatmap)]),
        help: "Heatmap on / off (source in the Neural textures panel)",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyT, A::ToggleTemporal)]),
        help: "Temporal accumulation on / off",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyF, A::ToggleStochastic)]),
        help: "Stochastic trilinear filtering on / off (off: nearest mip and texel)",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyB, A::ToggleInferenceOnLoad)]),
        help: "Inference on load on / off (decode the package into textures once; the pass \
               settings' combo keeps them as RGBA8, BC1 or BC7)",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyX, A::Ui(UiAction::MeasurePsnr))]),
        help: "Measure the PSNR against the reference (both sides in the split view)",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyK, A::ToggleSplit)]),
        help: "Split view on / off: the material source left, another right, one G-buffer",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyN, A::NextRightMode)]),
        help: "Split view: the right side's next material source",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyJ, A::ToggleDifference)]),
        help: "Split view: each side's error against the reference, amplified (gain in the Compare panel)",
    },
    Shortcut {
        input: Input::Keys(&[(K::KeyI, A::ToggleInspect)]),
        help: "Inspector on / off: material, decoder, decoded and reference texels under the cursor",
    },
];

/// Every key of the table with its action.
fn bound_keys() -> impl Iterator<Item = (KeyCode, Action)> {
    SHORTCUTS
        .iter()
        .flat_map(|s| match s.input {
            Input::Keys(keys) => keys,
            _ => &[],
        })
        .copied()
}

/// What `code` does, if it is in the table.
pub fn key_action(code: KeyCode) -> Option<Action> {
    bound_keys().find(|(k, _)| *k == code).map(|(_, a)| a)
}

/// What holding `button` does, if it is in the table.
pub fn drag_action(button: MouseButton) -> Option<Hold> {
    SHORTCUTS.iter().find_map(|s| match s.input {
        Input::Drag(b, hold) if b == button => Some(hold),
        _ => None,
    })
}

/// The keys bound to `action`, named as in the help panel (empty when none is).
pub fn keys_of(action: Action) -> String {
    join_keys(
        bound_keys()
            .filter(|(_, a)| *a == action)
            .map(|(code, _)| code),
    )
}

/// `text` with the keys of `action` in parentheses (`Reload (F5)`), or `text` alone when
/// no key does it.
pub fn hint(text: &str, action: Action) -> String {
    let keys = keys_of(action);
    if keys.is_empty() {
        text.to_owned()
    } else {
        format!("{text} ({keys})")
    }
}

/// The name of a key as printed on it (`W`, `1`, `F5`, `Esc`, `[`).
pub fn key_name(code: KeyCode) -> String {
    match code {
        K::Escape => "Esc".to_owned(),
        K::BracketLeft => "[".to_owned(),
        K::BracketRight => "]".to_owned(),
        K::Minus => "-".to_owned(),
        K::Equal => "=".to_owned(),
        _ => {
            let debug = format!("{code:?}");
            let name = debug
                .strip_prefix("Key")
                .or_else(|| debug.strip_prefix("Digit"))
                .unwrap_or(&debug);
            name.to_owned()
        }
    }
}

/// The digit of a `Digit0`…`Digit9` key.
fn digit(code: KeyCode) -> Option<u32> {
    let name = format!("{code:?}");
    let d = name.strip_prefix("Digit")?;
    d.parse().ok()
}

/// Keys named as [`Shortcut::keys`] says.
fn join_keys(codes: impl Iterator<Item = KeyCode>) -> String {
    let codes: Vec<KeyCode> = codes.collect();
    let digits: Option<Vec<u32>> = codes.iter().map(|&c| digit(c)).collect();
    if let Some(d) = digits
        && d.len() >= 3
        && d.windows(2).all(|w| w[1] == w[0] + 1)
    {
        return format!("{} … {}", d[0], d[d.len() - 1]);
    }
    let names: Vec<String> = codes.into_iter().map(key_name).collect();
    names.join(if names.len() == 2 { " / " } else { " " })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README's key table as `(keys, action)` rows, code-span backticks removed.
    fn readme_rows() -> Vec<(String, String)> {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
            .expect("read README.md");
        let mut lines = readme
            .lines()
            .skip_while(|l| l.trim() != "| keys | action |");
        assert!(
            lines.next().is_some(),
            "README.md has no `| keys | action |` table"
        );
        lines
            .skip(1)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                let cells: Vec<String> = l
                    .trim()
                    .trim_matches('|')
                    .split('|')
                    .map(|c| c.trim().replace('`', ""))
                    .collect();
                assert_eq!(cells.len(), 2, "README key table row `{l}`");
                (cells[0].clone(), cells[1].clone())
            })
            .collect()
    }

    #[test]
    fn the_readme_key_table_is_the_shortcut_table() {
        let want: Vec<(String, String)> = SHORTCUTS
            .iter()
            .map(|s| (s.keys(), s.help.to_owned()))
            .collect();
        let table: String = want
            .iter()
            .map(|(k, h)| format!("| {k} | {h} |\n"))
            .collect();
        assert_eq!(
            readme_rows(),
            want,
            "README.md's key table must list the viewer's shortcuts (src/ui/keys.rs); \
             file names may be written as code. The table:\n| keys | action |\n|---|---|\n{table}"
        );
    }

    #[test]
    fn every_key_is_bound_once_and_help_fits_a_table_cell() {
        let keys: Vec<KeyCode> = bound_keys().map(|(k, _)| k).collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(!keys[..i].contains(k), "{k:?} is bound twice");
        }
        for s in SHORTCUTS {
            assert!(!s.help.is_empty() && !s.help.contains('|'), "{s:?}");
        }
    }

    #[test]
    fn keys_are_named_as_printed() {
        let names: Vec<String> = SHORTCUTS.iter().map(Shortcut::keys).collect();
        for want in [
            "F12",
            "Esc",
            "W A S D",
            "Q / E",
            "Shift",
            "Right drag",
            "Left drag",
            "Wheel",
            "Space",
            "[ / ]",
            "1 … 8",
            "- / =",
        ] {
            assert!(
                names.iter().any(|n| n == want),
                "{want} missing in {names:?}"
            );
        }
        assert_eq!(
            join_keys([K::Digit1, K::Digit3, K::Digit4].into_iter()),
            "1 3 4"
        );
        assert_eq!(join_keys([K::Digit1, K::Digit2].into_iter()), "1 / 2");
    }

    #[test]
    fn keys_and_buttons_look_up_their_actions() {
        assert_eq!(key_action(K::KeyW), Some(A::Hold(Hold::Forward)));
        assert_eq!(key_action(K::Digit8), Some(A::ShowAov(Aov::MaterialId)));
        assert_eq!(key_action(K::BracketLeft), Some(A::PathSpeed(0.5)));
        assert_eq!(key_action(K::F5), Some(A::Ui(UiAction::Reload)));
        assert_eq!(key_action(K::KeyZ), None);
        assert_eq!(drag_action(MouseButton::Right), Some(Hold::Look));
        assert_eq!(drag_action(MouseButton::Left), Some(Hold::Orbit));
        assert_eq!(drag_action(MouseButton::Middle), None);
        assert_eq!(hint("Reload", A::Ui(UiAction::Reload)), "Reload (F5)");
        assert_eq!(hint("Dismiss", A::Ui(UiAction::DismissError)), "Dismiss");
        assert_eq!(keys_of(A::ToggleCameraMode), "Tab");
    }

    #[test]
    fn each_hold_sets_its_own_flag() {
        let all = [
            Hold::Forward,
            Hold::Back,
            Hold::Left,
            Hold::Right,
            Hold::Down,
            Hold::Up,
            Hold::Look,
            Hold::Orbit,
        ];
        let mut seen = Vec::new();
        for h in all {
            let mut input = InputState::default();
            *h.flag(&mut input) = true;
            let set = [
                input.forward,
                input.back,
                input.left,
                input.right,
                input.down,
                input.up,
                input.look,
                input.drag,
            ];
            assert_eq!(set.iter().filter(|&&b| b).count(), 1, "{h:?}");
            let at = set.iter().position(|&b| b);
            assert!(!seen.contains(&at), "{h:?} shares a flag");
            seen.push(at);
        }
        let mut input = InputState::default();
        *Hold::Forward.flag(&mut input) = true;
        *Hold::Orbit.flag(&mut input) = true;
        assert!(input.forward && input.drag);
    }
}
