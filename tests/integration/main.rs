//! The integration tests, one binary: each module is one area of the project (the
//! command line, the renderer against its CPU references and goldens, the trainer, the
//! shaders, robustness, the layering of the modules, the viewer). One binary links the
//! library once and shares one GPU context (lavapipe in CI) between every GPU test.
//! Goldens live in `tests/golden/`.

mod bench_decode;
mod cli;
mod common;
mod compare;
mod containers;
mod cooccurrence;
mod devices;
mod divergence;
mod eval;
mod gbuffer;
mod gpu_context;
mod import;
mod kernel_stats;
mod layers;
mod ntc_golden;
mod ntc_gpu;
mod ntc_render;
mod render;
mod render_types;
mod robustness;
mod shader_checks;
mod shaders;
mod shard;
mod temporal;
mod transcode;
mod viewer;
