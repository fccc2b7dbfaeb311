//! Scene lighting: the sun and the ambient a scene description sets (`[lighting]` in
//! `scenes/*.toml`) and the renderer lights with.

/// Scene lighting: one directional sun and a two-colour hemisphere ambient.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Lighting {
    /// Direction *towards* the sun (need not be normalised).
    pub sun_direction: [f32; 3],
    /// Sun colour (linear RGB).
    pub sun_color: [f32; 3],
    /// Sun irradiance scale.
    pub sun_intensity: f32,
    /// Ambient radiance from above (linear RGB).
    pub sky_color: [f32; 3],
    /// Ambient radiance from below (linear RGB).
    pub ground_color: [f32; 3],
    /// Exposure multiplier before tonemapping.
    pub exposure: f32,
    /// Sun shadows (a shadow map over the whole scene).
    pub shadows: bool,
}

impl Default for Lighting {
    fn default() -> Self {
        Self {
            sun_direction: [0.35, 0.85, 0.4],
            sun_color: [1.0, 0.95, 0.88],
            sun_intensity: 3.0,
            sky_color: [0.35, 0.42, 0.55],
            ground_color: [0.18, 0.16, 0.14],
            exposure: 1.0,
            shadows: true,
        }
    }
}
