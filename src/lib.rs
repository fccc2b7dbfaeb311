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
//! Module map, in layer order (lowest first; `docs/ARCHITECTURE.md` "Layers", checked by
//! `tests/integration/layers.rs`: a module imports only modules on its own line or below):
//! - [`io`]: atomic file output; [`outputs`]: the output policy (never over an input,
//!   never over a file without `--force`).
//! - [`gpu`]: adapter/device creation, feature negotiation, pass timing (`wgpu-profiler`),
//!   readback, shader loading with `#import`, compute kernels, layouts, cached bind groups,
//!   Rust ↔ WGSL mirror checks.
//! - [`scene`]: glTF import, tangents, cameras, scene description files.
//! - [`texture`]: image decoding, canonical texture sets, mip chains, manifests, sRGB,
//!   PSNR (the one convention of every report) and the BCn baselines.
//! - [`screen`]: the CPU facts that clustering and rendering both count by: screen tiles,
//!   the divergence definitions and the G-buffer's material word.
//! - [`charts`]: the reports' charts.
//! - [`builtin`]: the procedural scenes (toy shop, street, panel) and their kit.
//! - [`open`]: any scene argument opened (files, descriptions, built-ins in the cache).
//! - [`inputs`]: the offline tools' texture sets across scenes and manifests.
//! - [`ntc`]: the codec: model, quantisation, `.ntc` format, trainers, compression.
//! - [`cluster`]: texture embeddings, k-means, decoder-sharing strategies and plans, the
//!   screen co-occurrence record.
//! - [`render`]: the deferred renderer: the frame plan, the frame's targets, one struct per
//!   pass with explicit inputs and outputs, NTC decoding and divergence.
//! - [`packages`]: a scene's package per strategy, compressed on demand and cached, and
//!   the scene's views recorded for the co-occurrence record (`packages::views`).
//! - [`eval`]: the shared-decoder study (`neurotex eval`); [`bench`](mod@bench): GPU timings of the
//!   frame (`neurotex bench`), its report folder (`bench::output`) and the decode kernels
//!   alone against the adapter's peaks (`bench::decode`, `neurotex bench decode`).
//! - [`ui`], [`app`]: the interactive viewer's overlay and the viewer.

pub mod app;
pub mod bench;
pub mod builtin;
pub mod charts;
pub mod cluster;
pub mod eval;
pub mod gpu;
pub mod inputs;
pub mod io;
pub mod ntc;
pub mod open;
pub mod outputs;
pub mod packages;
pub mod render;
pub mod scene;
pub mod screen;
pub mod texture;
pub mod ui;
