//! The frame plan: what one frame does, resolved once from the frame's settings and what
//! the renderer holds (packages, the decode pass, baked textures, the temporal history),
//! before anything is recorded. [`super::Renderer::plan`] computes it,
//! [`super::Renderer::record`] follows it and returns it, and the application reads it
//! (which mode is on screen, whether the history restarted) instead of asking the
//! renderer back.

use std::sync::Arc;

use super::RenderMode;
use super::ntc_gpu::NtcRenderError;
use super::passes::heatmap::HeatmapSettings;
use super::passes::temporal::TemporalSettings;

/// Where a frame's material channels come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaterialPath {
    /// The reference pass over the scene's original textures.
    Reference,
    /// The reference pass over the textures this NTC mode's package was baked into
    /// (inference on load).
    Baked(RenderMode),
    /// The decode pass over this NTC mode's package, per pixel.
    Decode(RenderMode),
}

impl MaterialPath {
    /// The mode on screen.
    pub fn mode(self) -> RenderMode {
        match self {
            MaterialPath::Reference => RenderMode::Reference,
            MaterialPath::Baked(mode) | MaterialPath::Decode(mode) => mode,
        }
    }
}

/// Why a frame does not render the mode it asked for.
#[derive(Clone, Debug)]
pub enum Fallback {
    /// The mode's package is not in the renderer (yet).
    NoPackage,
    /// The package is there but its path cannot run (shared: the renderer keeps the
    /// failure, and every plan that falls back on it names the same one).
    Unusable(Arc<Unusable>),
}

/// What failed on an NTC mode's material path.
#[derive(Debug, thiserror::Error)]
pub enum Unusable {
    /// The decode pass for the package's decoders could not be built (kept until the
    /// kernel choice or the decoder shape changes).
    #[error("cannot decode NTC packages of this model: {0}")]
    DecodePass(NtcRenderError),
    /// Inference on load could not bake the package into textures (kept for the
    /// package).
    #[error("inference on load failed: {0}")]
    Bake(NtcRenderError),
    /// The decode pass was built but could not record this frame (e.g. sort buffers
    /// over the device's limits at this size); the frame drew the reference instead.
    #[error("NTC decode: {0}; drawing the reference")]
    Record(NtcRenderError),
}

/// What one frame does. See the module docs.
#[derive(Clone, Debug)]
pub struct FramePlan {
    /// The mode the settings asked for.
    pub requested: RenderMode,
    /// The material path taken: the requested mode's, or the reference.
    pub material: MaterialPath,
    /// Why `material` is not the requested mode's path (`None` when it is).
    pub fallback: Option<Fallback>,
    /// The history starts over this frame (new targets, [`super::Renderer::reset_history`],
    /// or another material path than the history was accumulated with): the temporal
    /// history is ignored, and the frame index and the previous camera restart.
    pub restart_history: bool,
    /// The temporal pass's settings for this frame (`reset` includes `restart_history`).
    pub temporal: TemporalSettings,
    /// The reference path is also rendered and compared (asked for, and the material
    /// path decodes per pixel).
    pub compare: bool,
    /// The heatmap drawn over the output.
    pub heatmap: Option<HeatmapSettings>,
}

impl FramePlan {
    /// The mode on screen.
    pub fn mode(&self) -> RenderMode {
        self.material.mode()
    }

    /// The frame draws the reference after all, for `why` (a failure found while
    /// recording): nothing is compared, and the temporal pass ignores its history, which
    /// was accumulated with another material path.
    pub fn fall_back(&mut self, why: Fallback) {
        self.material = MaterialPath::Reference;
        self.fallback = Some(why);
        self.compare = false;
        self.temporal.reset = true;
    }
}
