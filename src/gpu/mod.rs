//! GPU plumbing shared by every other module: adapter and device selection (headless and
//! for a window surface), optional-feature negotiation, timestamp timing scopes, texture and
//! buffer readback, and WGSL loading with `#import` / `#ifdef` / `${NAME}`.
//!
//! This module owns no rendering and no codec logic; it must not know about scenes,
//! materials or passes. Everything here either works on any adapter or reports cleanly
//! (a [`GpuError`] or [`ShaderError`]) when the adapter lacks something.
//!
//! - [`context`]: [`GpuContext`], [`GrantedFeatures`], [`GpuError`], error scopes.
//! - [`timing`]: [`GpuTimer`], timestamp scopes keyed by pass label, [`PassTiming`] rows.
//! - [`readback`]: [`read_texture`] / [`read_buffer`] with row-padding handling, [`TextureData`].
//! - [`shader`]: the embedded shader tree, the `#import` composer, naga validation,
//!   [`create_shader_module`].
//! - [`kernel`]: [`ComputeKernel`], a compute pipeline from a compact description, with
//!   its errors caught.
//! - [`layout`]: bind-group layout and bind-group entries in one line each, [`layout::Slot`].
//! - [`bind_cache`]: [`CachedBindGroup`], a bind group remade only when its resources change.
//! - [`encoder`]: [`encoder::FrameEncoder`], the encoder, device and timer a pass records with.
//! - [`mirror`]: struct layouts and constants of a WGSL module, for the Rust ↔ WGSL mirror
//!   tests.

pub mod bind_cache;
pub mod context;
pub mod encoder;
pub mod kernel;
pub mod layout;
pub mod mirror;
pub mod readback;
pub mod shader;
pub mod timing;

pub use bind_cache::CachedBindGroup;
pub use context::{GpuContext, GpuError, GrantedFeatures};
pub use kernel::{ComputeKernel, KernelError};
pub use readback::{TextureData, read_buffer, read_texture};
pub use shader::{ComposedShader, ShaderError, ShaderLibrary, create_shader_module};
pub use timing::{GpuTimer, PassTiming};

/// Result alias for fallible GPU operations.
pub type Result<T, E = GpuError> = std::result::Result<T, E>;
