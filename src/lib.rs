//! neurotex: neural texture compression with shared decoders, rendered in real time.
//!
//! Data flow (see `docs/ARCHITECTURE.md` for the long form):
//!
//! ```text
//! glTF / manifest ─► scene::Scene ─► texture::TextureSet (canonical 12 channels, mips)
//!                          │                      │
//!                          ▼                      ▼
//!            render::Renderer: G-buffer ─► reference material pass ─► lighting ─► tonemap
//! ```
//!
//! Module map:
//! - [`gpu`]: adapter/device creation, feature negotiation, timestamp scopes, readback,
//!   shader loading with `#import`.
//! - [`scene`]: glTF import, tangents, cameras, scene description files, built-in scenes.
//! - [`texture`]: image decoding, canonical texture sets, mip chains, manifests.
//! - [`render`]: the deferred renderer, one struct per pass.

pub mod app;
pub mod bench;
pub mod cluster;
pub mod eval;
pub mod gpu;
pub mod ntc;
pub mod packages;
pub mod render;
pub mod scene;
pub mod texture;
pub mod ui;
