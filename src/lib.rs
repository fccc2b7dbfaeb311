//! neurotex: neural texture compression with shared decoders, rendered in real time.
//!
//! Data flow (see `docs/ARCHITECTURE.md` for the long form):
//!
//! ```text
//! glTF / manifest ─► scene::Scene ─► texture::TextureSet (canonical 12 channels, mips)
//!                                         │ cluster (embed, k-means, strategies)
//!                                         ▼ ntc::compress (GPU trainer) ─► .ntc package
//! render::Renderer (the scene + its decoded texture sets, packages): per frame a
//!     FramePlan, then G-buffer ─► reference material pass | NTC decode pass (per-tile
//!     decoders, stochastic trilinear) ─► lighting ─► temporal ─► tonemap (+ divergence)
//! ```
//!
//! Module map:
//! - [`gpu`]: adapter/device creation, feature negotiation, pass timing (`wgpu-profiler`),
//!   readback, shader loading with `#import`, compute kernels, layouts, cached bind groups,
//!   Rust ↔ WGSL mirror checks.
//! - [`scene`]: glTF import, tangents, cameras, scene description files, opening scenes.
//! - [`builtin`]: the procedural scenes (toy shop, street) and their construction kit.
//! - [`texture`]: image decoding, canonical texture sets, mip chains, manifests, inputs,
//!   sRGB, PSNR (the one convention of every report) and the BCn baselines.
//! - [`cluster`]: texture embeddings, k-means, decoder-sharing strategies and plans.
//! - [`ntc`]: the codec: model, quantisation, `.ntc` format, trainers, compression.
//! - [`packages`]: a scene's package per strategy, compressed on demand and cached.
//! - [`outputs`]: the output policy (never over an input, never over a file without
//!   `--force`).
//! - [`render`]: the deferred renderer: the frame plan, the frame's targets, one struct per
//!   pass with explicit inputs and outputs, NTC decoding and divergence, and the screen
//!   co-occurrence recorded from a scene's views (`render::cooccurrence`).
//! - [`eval`]: the shared-decoder study (`neurotex eval`); [`bench`]: GPU timings,
//!   [`bench_output`]: the benchmark's off-screen target and report folder, and
//!   [`bench_decode`]: the decode kernels alone on synthetic frames against the adapter's
//!   peaks (`neurotex bench decode`).
//! - [`io`]: atomic file output, used by every writer; [`charts`]: the reports' charts.
//!
//! Each module imports only modules below it in the layer order of `docs/ARCHITECTURE.md`
//! (checked by `tests/integration/layers.rs`).
//! - [`app`], [`ui`]: the interactive viewer and its overlay.

pub mod app;
pub mod bench;
pub mod bench_decode;
pub mod bench_output;
pub mod bench_trust;
pub mod builtin;
pub mod charts;
pub mod cluster;
pub mod eval;
pub mod gpu;
pub mod io;
pub mod ntc;
pub mod outputs;
pub mod packages;
pub mod render;
pub mod scene;
pub mod texture;
pub mod ui;
