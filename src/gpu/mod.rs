//! GPU plumbing shared by every other module: adapter and device selection (headless and
//! for a window surface), optional-feature negotiation, GPU pass timing (`wgpu-profiler`),
//! texture and buffer readback, WGSL loading with `#import` / `#ifdef` / `${NAME}`, and
//! the building blocks of passes (compute kernels, layouts, cached bind groups).
//!
//! This module owns no rendering and no codec logic; it must not know about scenes,
//! materials or passes. Everything here either works on any adapter or reports cleanly
//! (a [`GpuError`] or [`ShaderError`]) when the adapter lacks something.
//!
//! - [`context`]: [`GpuContext`], [`GrantedFeatures`], [`GpuError`], [`ShaderChecks`], error scopes
//!   ([`allocate`]: out of device memory as an error with the size asked).
//! - [`devices`]: `--devices all|0,2|N`, [`DeviceChoice`] and [`DeviceSet`] (a context
//!   per chosen adapter).
//! - [`profiler`]: [`GpuProfiler`], timestamp scopes keyed by pass label, [`PassTiming`]
//!   rows, Chrome traces.
//! - [`readback`]: [`read_texture`] (or a rectangle of it, [`read_texture_rect`]) / [`read_buffer`] with row-padding handling, [`TextureData`].
//! - [`upload`]: [`upload::write_level`], packed texels into a whole texture level.
//! - [`defines`]: [`Defines`], the names and values a shader is composed with.
//! - [`shader`]: the embedded shader tree, the `#import` composer, naga validation,
//!   [`create_shader_module`].
//! - [`kernel`]: [`ComputeKernel`], a compute pipeline from a compact description, with
//!   its errors caught; the context lists every kernel it built ([`BuiltKernel`]).
//! - [`pipeline_stats`]: the driver's statistics of a kernel's compiled pipeline
//!   (registers, spills) through a second, raw Vulkan device.
//! - [`layout`]: bind-group layout entries and bind groups in one line each, [`layout::Slot`].
//! - [`bind_cache`]: [`CachedBindGroup`], a bind group remade only when its resources change.
//! - [`encoder`]: [`encoder::FrameEncoder`], the encoder, device and profiler a pass
//!   records with.
//! - [`mirror`]: struct layouts and constants of a WGSL module, for the Rust ↔ WGSL mirror
//!   tests.

pub mod bind_cache;
pub mod context;
pub mod defines;
pub mod devices;
pub mod encoder;
pub mod kernel;
pub mod layout;
pub mod mirror;
pub mod pipeline_stats;
pub mod profiler;
pub mod readback;
pub mod shader;
pub mod upload;

pub use bind_cache::CachedBindGroup;
pub use context::{
    BuiltKernel, GpuContext, GpuError, GrantedFeatures, OutOfMemory, ShaderChecks, allocate,
};
pub use defines::Defines;
pub use devices::{DeviceChoice, DeviceSet, DevicesError};
pub use kernel::{ComputeKernel, KernelError};
pub use profiler::{GpuProfiler, PassTiming};
pub use readback::{TextureData, read_buffer, read_texture, read_texture_rect};
pub use shader::{
    CompiledShader, ComposedShader, ShaderError, ShaderLibrary, create_shader_module,
};

/// Result alias for fallible GPU operations.
pub type Result<T, E = GpuError> = std::result::Result<T, E>;
