//! neurotex: neural texture compression with shared decoders, rendered in real time.
//!
//! Data flow (see `docs/ARCHITECTURE.md` for the long form):
//!
//! ```text
//! glTF / manifest ─► scene::Scene ─► texture::TextureSet (canonical 12 channels, mips)
//!                                         │ cluster (embed, k-means, strategies)
//!                                         ▼ ntc::compress (GPU trainer) ─► .ntc package
//! render::Renderer: G-buffer ─► reference material pass | NTC decode pass (per-tile
//!     decoders, stochastic trilinear) ─► lighting ─► temporal ─► tonemap (+ divergence)
//! ```
//!
//! Module map:
//! - [`gpu`]: adapter/device creation, feature negotiation, timestamp scopes, readback,
//!   shader loading with `#import`.
//! - [`scene`]: glTF import, tangents, cameras, scene description files, opening scenes.
//! - [`builtin`]: the procedural scenes (toy shop, street) and their construction kit.
//! - [`texture`]: image decoding, canonical texture sets, mip chains, manifests, inputs.
//! - [`cluster`]: texture embeddings, k-means, decoder-sharing strategies and plans.
//! - [`ntc`]: the codec: model, quantisation, `.ntc` format, trainers, compression.
//! - [`packages`]: a scene's package per strategy, compressed on demand and cached.
//! - [`render`]: the deferred renderer, one struct per pass, NTC decoding and divergence.
//! - [`eval`]: the shared-decoder study (`neurotex eval`); [`bench`]: GPU timings, and
//!   [`bench_output`]: the benchmark's off-screen target and report folder.
//! - [`io`]: atomic file output, used by every writer.
//! - [`app`], [`ui`]: the interactive viewer and its overlay.

pub mod app;
pub mod bench;
pub mod bench_output;
pub mod builtin;
pub mod cluster;
pub mod eval;
pub mod gpu;
pub mod io;
pub mod ntc;
pub mod packages;
pub mod render;
pub mod scene;
pub mod texture;
pub mod ui;
