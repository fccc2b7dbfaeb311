//! Every keyboard and mouse shortcut of the viewer, listed once: the help panel shows
//! this table and the README documents the same list.

/// `(keys, what they do)` for every shortcut, in the order the help panel lists them.
pub const SHORTCUTS: &[(&str, &str)] = &[
    ("F1", "Show / hide the overlay"),
    ("F2", "Show / hide this help"),
    (
        "F5",
        "Reload the scene (a failed reload keeps the current one)",
    ),
    (
        "F12",
        "Screenshot with the overlay, saved as screenshot-<n>.png",
    ),
    (
        "F8",
        "Start / save a Chrome trace of the GPU passes (trace-<n>.json)",
    ),
    ("Esc", "Quit"),
    ("W A S D", "Move forward / left / back / right"),
    ("Q / E", "Move down / up"),
    ("Shift", "Move 4× faster"),
    ("Right drag", "Look around (fly), orbit (orbit mode)"),
    ("Left drag", "Orbit around the pivot (orbit mode)"),
    ("Wheel", "Fly speed ×1.25 per notch; dolly in orbit mode"),
    ("Tab", "Switch fly / orbit"),
    ("R", "Reset the camera to the scene's start camera"),
    ("C", "Select the next camera path"),
    ("P", "Play the selected camera path from its start"),
    ("Space", "Pause / resume the camera path"),
    ("L", "Loop the camera path on / off"),
    ("[ / ]", "Camera path speed ÷2 / ×2 (0.25–4×)"),
    (
        "F9",
        "Start / stop recording a camera path (a key every 0.5 s)",
    ),
    ("F10", "Save the recording into <scene>.recorded.toml"),
    (
        "1 … 8",
        "Output: final, albedo, normal, roughness, metallic, occlusion, emissive, material id",
    ),
    ("- / =", "Render scale −/+ 0.25 (0.25–1.0)"),
    ("V", "Vsync on / off"),
    (
        "M",
        "Material source: reference → baseline → clustered → single → random → category",
    ),
    (
        "H",
        "Heatmap on / off (source in the Neural textures panel)",
    ),
    ("T", "Temporal accumulation on / off"),
    (
        "F",
        "Stochastic trilinear filtering on / off (off: nearest mip and texel)",
    ),
    (
        "B",
        "Inference on load on / off (decode the package into textures once)",
    ),
    ("X", "Measure the PSNR against the reference"),
];
