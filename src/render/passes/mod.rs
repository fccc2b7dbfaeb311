//! The render passes, one struct each, with `new` / `resize` (or `bind`) / `record`.
//! Every pass is named by one label (its `LABEL` constant) that names its wgpu objects,
//! its timestamp scope and its timing row.

pub mod cooccurrence;
pub mod divergence;
pub mod fullscreen;
pub mod gbuffer;
pub mod heatmap;
pub mod image_error;
pub mod lighting;
pub mod ntc_bake;
pub mod ntc_decode;
pub mod reference;
pub mod scene_draw;
pub mod shadow;
pub mod temporal;
pub mod tonemap;
