//! Adapter and device creation with optional-feature negotiation.
//!
//! [`GpuContext`] owns the wgpu instance, adapter, device and queue. Both constructors —
//! [`GpuContext::headless`] for tests, benchmarks and offline tools, and
//! [`GpuContext::for_surface`] for the windowed viewer — go through one negotiation:
//!
//! - Backends: Vulkan, Metal or DX12 ([`wgpu::Backends::PRIMARY`]); `WGPU_BACKEND` overrides.
//!   The GL backend is not used (it lacks surface view formats).
//! - Adapter: the high-performance one, or the first whose name contains the
//!   `WGPU_ADAPTER_NAME` substring (case-insensitive); [`GpuContext::from_adapter`]
//!   negotiates on a given adapter (`--devices`, [`crate::gpu::devices`]).
//! - Features: each optional feature in [`OPTIONAL_FEATURES`] is requested only when the
//!   adapter offers it; what was granted is summarised in [`GrantedFeatures`]. The
//!   experimental cooperative-matrix feature is opted into only when offered. Setting
//!   `NEUROTEX_GPU_DISABLE=shader_f16,subgroup,…` (names as in [`GrantedFeatures`]) withholds
//!   features, to exercise fallback paths on a capable GPU.
//! - Limits: exactly the adapter's limits, so every limit (colour attachment bytes per
//!   sample, workgroup storage, buffer sizes) is as large as the adapter allows.
//! - Shader runtime checks: none by default (the project's own shaders, as a native
//!   engine compiles them); `NEUROTEX_SHADER_CHECKS=on` ([`ShaderChecks`]) turns on
//!   wgpu's (bounds checks, loop bounding), which [`GpuContext::describe`] then names, so
//!   that every report records it.
//!
//! Validation errors never panic: an uncaptured-error handler logs them (and counts them,
//! see [`GpuContext::uncaptured_error_count`]); code that wants the error as a value wraps
//! the work in [`GpuContext::error_scope`].
//!
//! This module must not create any resources beyond the device itself.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Environment variable that picks an adapter by (case-insensitive) name substring.
pub const ADAPTER_NAME_ENV: &str = "WGPU_ADAPTER_NAME";

/// Environment variable listing [`GrantedFeatures`] field names to withhold even when the
/// adapter offers them, comma-separated (e.g. `shader_f16,cooperative_matrix`).
pub const DISABLE_FEATURES_ENV: &str = "NEUROTEX_GPU_DISABLE";

/// Environment variable that compiles every shader module a context creates without
/// wgpu's runtime checks (`off`, the default) or with them (`on`): see [`ShaderChecks`].
pub const SHADER_CHECKS_ENV: &str = "NEUROTEX_SHADER_CHECKS";

/// Whether a context's shader modules are compiled with wgpu's runtime checks.
///
/// With them (wgpu's default, made for shaders it cannot trust), naga clamps every
/// array, buffer and image index, guards every integer division against a zero divisor,
/// and gives every loop a counter that ends it after 2⁶⁴ iterations, which also gives
/// the driver loops with two exits. Without them (this project's default) the modules are
/// its own shaders as composed and naga-validated, compiled as a native engine compiles
/// its shaders: every loop is bounded by its own condition, and an index out of range,
/// which the checks would clamp, is undefined behaviour instead. What keeps the indices
/// in range is the host: every input a kernel indexes with (packages, scenes, textures,
/// batches) is checked before upload (docs/ROBUSTNESS.md). Tests compress and render with
/// both and require the same bytes. The unchecked modules train 1.19× and decode up to
/// 2.8× faster on an H100 (docs/RESULTS.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShaderChecks {
    /// wgpu's runtime checks (bounds checks, loop bounding; `NEUROTEX_SHADER_CHECKS=on`).
    On,
    /// No runtime checks (the default).
    #[default]
    Off,
}

impl ShaderChecks {
    /// The setting of [`SHADER_CHECKS_ENV`]: `off` or unset gives [`ShaderChecks::Off`],
    /// `on` [`ShaderChecks::On`]; another value is an error naming the variable.
    pub fn from_env() -> Result<Self, GpuError> {
        match std::env::var(SHADER_CHECKS_ENV) {
            Err(std::env::VarError::NotPresent) => Ok(Self::Off),
            Ok(value) => Self::parse(&value),
            Err(std::env::VarError::NotUnicode(value)) => Self::parse(&value.to_string_lossy()),
        }
    }

    fn parse(value: &str) -> Result<Self, GpuError> {
        match value.trim() {
            "on" => Ok(Self::On),
            "off" => Ok(Self::Off),
            other => Err(GpuError::Environment {
                variable: SHADER_CHECKS_ENV,
                value: other.to_owned(),
                expected: "`on` or `off`",
            }),
        }
    }

    /// wgpu's runtime checks for this setting.
    pub fn runtime_checks(self) -> wgpu::ShaderRuntimeChecks {
        match self {
            Self::On => wgpu::ShaderRuntimeChecks::checked(),
            Self::Off => wgpu::ShaderRuntimeChecks::unchecked(),
        }
    }
}

/// A compute kernel a context built ([`crate::gpu::ComputeKernel`]): what `bench
/// kernels` composes again to read the driver's statistics of its pipeline.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct BuiltKernel {
    /// The pipeline's label.
    pub label: String,
    /// The entry shader, relative to `shaders/`.
    pub shader: String,
    /// Its defines.
    pub defines: super::Defines,
    /// The `@compute` entry point.
    pub entry: String,
}

/// Every optional feature this crate can use. Each is requested only when the adapter
/// offers it; none is required.
pub const OPTIONAL_FEATURES: wgpu::Features = wgpu::Features::TIMESTAMP_QUERY
    .union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS)
    .union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES)
    .union(wgpu::Features::SHADER_F16)
    .union(wgpu::Features::SUBGROUP)
    .union(wgpu::Features::SUBGROUP_BARRIER)
    .union(wgpu::Features::SHADER_FLOAT32_ATOMIC)
    .union(wgpu::Features::FLOAT32_FILTERABLE)
    .union(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
    .union(wgpu::Features::PRIMITIVE_INDEX)
    .union(wgpu::Features::TEXTURE_COMPRESSION_BC);

/// Errors from adapter/device creation and from GPU work checked with error scopes.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No adapter matched; `reason` says why (wgpu's message or the `WGPU_ADAPTER_NAME` miss).
    #[error(
        "no usable GPU adapter: {reason}. neurotex needs a Vulkan, Metal or DX12 driver; \
         on Debian/Ubuntu without a GPU install the software Vulkan driver with \
         `apt-get install mesa-vulkan-drivers libvulkan1` (lavapipe)"
    )]
    NoAdapter {
        /// Why no adapter was found.
        reason: String,
    },
    /// The adapter refused to create a device.
    #[error("requesting a device failed: {0}")]
    RequestDevice(String),
    /// An environment variable that configures the context has a value it does not take.
    #[error("the environment variable {variable} is `{value}`; it takes {expected}")]
    Environment {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
        /// The values it takes.
        expected: &'static str,
    },
    /// A feature the caller requires was not granted on this adapter.
    #[error(
        "the GPU feature {feature} is required but adapter `{adapter}` does not offer it; \
         pick another adapter with WGPU_ADAPTER_NAME or use the fallback path"
    )]
    MissingFeature {
        /// The missing wgpu feature(s), as wgpu names them.
        feature: String,
        /// [`GpuContext::describe`] of the adapter.
        adapter: String,
    },
    /// A wgpu validation error captured by [`GpuContext::error_scope`].
    #[error("wgpu validation error: {0}")]
    Validation(String),
    /// Mapping or copying data back to the CPU failed.
    #[error("GPU readback failed: {0}")]
    Readback(String),
}

/// Which optional capabilities the device was created with.
///
/// Code picks its fast path from these flags (e.g. the f16 decode kernel only when
/// `shader_f16`), never from the adapter name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GrantedFeatures {
    /// `TIMESTAMP_QUERY`: pass-level timestamp writes (see `gpu::timing`).
    pub timestamps: bool,
    /// `TIMESTAMP_QUERY_INSIDE_ENCODERS`: `CommandEncoder::write_timestamp`.
    pub timestamps_inside_encoders: bool,
    /// `TIMESTAMP_QUERY_INSIDE_PASSES`: timestamps between draws/dispatches of one pass.
    pub timestamps_inside_passes: bool,
    /// `SHADER_F16`: `enable f16;` in WGSL.
    pub shader_f16: bool,
    /// `SUBGROUP`: subgroup builtins and operations in compute and fragment shaders.
    pub subgroup: bool,
    /// `SUBGROUP_BARRIER`: `subgroupBarrier()` in compute shaders.
    pub subgroup_barrier: bool,
    /// `SHADER_FLOAT32_ATOMIC`: `atomic<f32>` add/exchange in storage buffers.
    pub float32_atomic: bool,
    /// `FLOAT32_FILTERABLE`: linear filtering of `R32Float`/`Rg32Float`/`Rgba32Float`.
    pub float32_filterable: bool,
    /// `EXPERIMENTAL_COOPERATIVE_MATRIX`: WGSL cooperative matrices (experimental in wgpu 30).
    pub cooperative_matrix: bool,
    /// `PRIMITIVE_INDEX`: `@builtin(primitive_index)` in fragment shaders (the visibility
    /// G-buffer).
    pub primitive_index: bool,
    /// Downlevel flag `ANISOTROPIC_FILTERING`: samplers may use `anisotropy_clamp > 1`.
    pub anisotropic_filtering: bool,
    /// `TEXTURE_COMPRESSION_BC`: BC1–BC7 textures (inference on load's transcode).
    pub texture_compression_bc: bool,
}

impl GrantedFeatures {
    /// Reads the flags off a device's features and the adapter's downlevel flags.
    pub fn from_features(features: wgpu::Features, downlevel: wgpu::DownlevelFlags) -> Self {
        use wgpu::Features as F;
        Self {
            timestamps: features.contains(F::TIMESTAMP_QUERY),
            timestamps_inside_encoders: features.contains(F::TIMESTAMP_QUERY_INSIDE_ENCODERS),
            timestamps_inside_passes: features.contains(F::TIMESTAMP_QUERY_INSIDE_PASSES),
            shader_f16: features.contains(F::SHADER_F16),
            subgroup: features.contains(F::SUBGROUP),
            subgroup_barrier: features.contains(F::SUBGROUP_BARRIER),
            float32_atomic: features.contains(F::SHADER_FLOAT32_ATOMIC),
            float32_filterable: features.contains(F::FLOAT32_FILTERABLE),
            cooperative_matrix: features.contains(F::EXPERIMENTAL_COOPERATIVE_MATRIX),
            primitive_index: features.contains(F::PRIMITIVE_INDEX),
            anisotropic_filtering: downlevel.contains(wgpu::DownlevelFlags::ANISOTROPIC_FILTERING),
            texture_compression_bc: features.contains(F::TEXTURE_COMPRESSION_BC),
        }
    }

    /// Every flag with its name (the field name), in declaration order.
    pub fn flags(&self) -> [(&'static str, bool); 12] {
        [
            ("timestamps", self.timestamps),
            (
                "timestamps_inside_encoders",
                self.timestamps_inside_encoders,
            ),
            ("timestamps_inside_passes", self.timestamps_inside_passes),
            ("shader_f16", self.shader_f16),
            ("subgroup", self.subgroup),
            ("subgroup_barrier", self.subgroup_barrier),
            ("float32_atomic", self.float32_atomic),
            ("float32_filterable", self.float32_filterable),
            ("cooperative_matrix", self.cooperative_matrix),
            ("primitive_index", self.primitive_index),
            ("anisotropic_filtering", self.anisotropic_filtering),
            ("texture_compression_bc", self.texture_compression_bc),
        ]
    }
}

impl fmt::Display for GrantedFeatures {
    /// `timestamps, shader_f16, … (missing: cooperative_matrix, …)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flags = self.flags();
        let granted: Vec<&str> = flags
            .iter()
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect();
        let missing: Vec<&str> = flags
            .iter()
            .filter(|(_, on)| !*on)
            .map(|(n, _)| *n)
            .collect();
        if granted.is_empty() {
            f.write_str("none")?;
        } else {
            f.write_str(&granted.join(", "))?;
        }
        if !missing.is_empty() {
            write!(f, " (missing: {})", missing.join(", "))?;
        }
        Ok(())
    }
}

/// The wgpu instance, adapter, device and queue, plus what was negotiated.
///
/// Cheap to clone (wgpu handles are reference-counted).
#[derive(Clone, Debug)]
pub struct GpuContext {
    /// The instance the adapter came from (needed to create surfaces).
    pub instance: wgpu::Instance,
    /// The chosen adapter.
    pub adapter: wgpu::Adapter,
    /// The device, created with every offered optional feature and the adapter's limits.
    pub device: wgpu::Device,
    /// The device's queue.
    pub queue: wgpu::Queue,
    /// Name, backend, driver and device type of the adapter.
    pub info: wgpu::AdapterInfo,
    /// Which optional capabilities the device has.
    pub granted: GrantedFeatures,
    /// Whether shader modules are compiled with wgpu's runtime checks
    /// ([`SHADER_CHECKS_ENV`]).
    pub shader_checks: ShaderChecks,
    uncaptured_errors: Arc<AtomicU64>,
    /// Every distinct kernel built on the device, in the order first built (shared by
    /// clones).
    built_kernels: Arc<std::sync::Mutex<Vec<BuiltKernel>>>,
}

/// What the negotiation asks of the adapter.
struct DeviceRequest {
    features: wgpu::Features,
    limits: wgpu::Limits,
}

impl GpuContext {
    /// The instance descriptor every context uses: Vulkan/Metal/DX12, then `WGPU_BACKEND`,
    /// `WGPU_DEBUG`, `WGPU_VALIDATION` environment overrides. The viewer adds its display
    /// handle with `.with_display_handle(…)` before `wgpu::Instance::new`.
    pub fn instance_descriptor() -> wgpu::InstanceDescriptor {
        wgpu::InstanceDescriptor {
            backends: wgpu::Backends::PRIMARY,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        }
        .with_env()
    }

    /// Creates a context with no surface (tests, benchmarks, offline compression).
    /// Blocks on adapter and device creation.
    pub fn headless() -> Result<Self, GpuError> {
        let instance = wgpu::Instance::new(Self::instance_descriptor());
        pollster::block_on(Self::new_async(instance, None))
    }

    /// Creates a context whose adapter can present to `surface` (the windowed viewer).
    /// `surface` must come from `instance`. Blocks on adapter and device creation.
    pub fn for_surface(
        instance: wgpu::Instance,
        surface: &wgpu::Surface<'_>,
    ) -> Result<Self, GpuError> {
        pollster::block_on(Self::new_async(instance, Some(surface)))
    }

    /// The one negotiation both constructors share: choose an adapter (compatible with
    /// `surface` when given), request every offered optional feature and the adapter's
    /// limits, install the logging uncaptured-error handler.
    pub async fn new_async(
        instance: wgpu::Instance,
        surface: Option<&wgpu::Surface<'_>>,
    ) -> Result<Self, GpuError> {
        let adapter = select_adapter(&instance, surface).await?;
        Self::from_adapter(instance, adapter).await
    }

    /// The negotiation on a given `adapter` of `instance` (see [`crate::gpu::devices`] for
    /// choosing adapters by index): request every offered optional feature and the
    /// adapter's limits, install the logging uncaptured-error handler. An adapter may
    /// open several devices.
    pub async fn from_adapter(
        instance: wgpu::Instance,
        adapter: wgpu::Adapter,
    ) -> Result<Self, GpuError> {
        let info = adapter.get_info();
        let shader_checks = ShaderChecks::from_env()?;
        let request = negotiate(&adapter, &disabled_from_env());

        let experimental_features = if request
            .features
            .contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
        {
            #[expect(unsafe_code, reason = "wgpu's opt-in token for experimental features")]
            // SAFETY: wgpu requires this opt-in token for any EXPERIMENTAL_* feature; it
            // is only taken when the adapter reports cooperative-matrix support, and the
            // only experimental feature requested is cooperative matrix, which shaders
            // use only when `GrantedFeatures::cooperative_matrix` is set. We accept
            // wgpu's caveat that bugs in that experimental path may be undefined
            // behaviour.
            unsafe {
                wgpu::ExperimentalFeatures::enabled()
            }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };

        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("neurotex device"),
                required_features: request.features,
                required_limits: request.limits,
                experimental_features,
                ..Default::default()
            })
            .await
            .map_err(|e| {
                GpuError::RequestDevice(format!("{} on {}: {e}", info.name, info.backend))
            })?;

        let uncaptured_errors = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&uncaptured_errors);
        device.on_uncaptured_error(Arc::new(move |error: wgpu::Error| {
            counter.fetch_add(1, Ordering::Relaxed);
            log::error!("uncaptured wgpu error: {error}");
        }));

        let granted = GrantedFeatures::from_features(
            device.features(),
            adapter.get_downlevel_capabilities().flags,
        );
        let context = Self {
            instance,
            adapter,
            device,
            queue,
            info,
            granted,
            shader_checks,
            uncaptured_errors,
            built_kernels: Default::default(),
        };
        log::info!("GPU: {} — {}", context.describe(), context.granted);
        Ok(context)
    }

    /// Notes that `kernel` was built (once per distinct kernel).
    pub(crate) fn record_kernel(&self, kernel: BuiltKernel) {
        let mut built = self
            .built_kernels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !built.contains(&kernel) {
            built.push(kernel);
        }
    }

    /// Every distinct kernel built on this context's device so far, in the order first
    /// built.
    pub fn built_kernels(&self) -> Vec<BuiltKernel> {
        self.built_kernels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// One line: `adapter name (backend, driver driver-info, device type)`, followed by
    /// `, shaders with runtime checks` where [`ShaderChecks::On`].
    pub fn describe(&self) -> String {
        let adapter = describe_adapter(&self.info);
        match self.shader_checks {
            ShaderChecks::On => format!("{adapter}, shaders with runtime checks"),
            ShaderChecks::Off => adapter,
        }
    }

    /// Succeeds when the device has every feature in `features`, otherwise names the
    /// missing ones and the adapter.
    pub fn require(&self, features: wgpu::Features) -> Result<(), GpuError> {
        let missing = features - self.device.features();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(GpuError::MissingFeature {
                feature: format!("{missing:?}"),
                adapter: self.describe(),
            })
        }
    }

    /// Runs `f` inside a validation error scope; a validation error raised by the wgpu
    /// calls in `f` comes back as [`GpuError::Validation`] instead of reaching the
    /// uncaptured-error handler. Scopes are per thread and nest.
    pub fn error_scope<T>(&self, f: impl FnOnce() -> T) -> Result<T, GpuError> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        match pollster::block_on(scope.pop()) {
            None => Ok(value),
            Some(error) => Err(GpuError::Validation(error.to_string())),
        }
    }

    /// How many errors reached the uncaptured-error handler (and were logged) since the
    /// device was created. Tests assert this stays 0.
    pub fn uncaptured_error_count(&self) -> u64 {
        self.uncaptured_errors.load(Ordering::Relaxed)
    }

    /// Blocks until all submitted work has finished and map callbacks have run.
    pub fn wait_idle(&self) -> Result<(), GpuError> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| GpuError::Readback(format!("device poll failed: {e}")))
    }
}

/// One line for an adapter: `name (backend, driver driver-info, device type)`.
pub fn describe_adapter(info: &wgpu::AdapterInfo) -> String {
    let driver = [info.driver.as_str(), info.driver_info.as_str()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let driver = if driver.is_empty() {
        "unknown driver"
    } else {
        driver.as_str()
    };
    format!(
        "{} ({}, {}, {:?})",
        info.name, info.backend, driver, info.device_type
    )
}

/// The device could not satisfy an allocation.
#[derive(Debug, thiserror::Error)]
#[error("out of GPU memory allocating {what} ({bytes} bytes): {message}")]
pub struct OutOfMemory {
    /// What was allocated.
    pub what: String,
    /// Bytes asked for.
    pub bytes: u64,
    /// wgpu's message.
    pub message: String,
}

/// Run `allocate` (which creates buffers or textures on `device` and returns them with the
/// bytes it asked for) inside an out-of-memory error scope: an allocation the device cannot
/// satisfy becomes [`OutOfMemory`] naming `what` and the size, not a lost device later.
pub fn allocate<T>(
    device: &wgpu::Device,
    what: &str,
    allocate: impl FnOnce() -> (T, u64),
) -> Result<T, OutOfMemory> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let (value, bytes) = allocate();
    match pollster::block_on(scope.pop()) {
        Some(error) => Err(OutOfMemory {
            what: what.to_owned(),
            bytes,
            message: error.to_string(),
        }),
        None => Ok(value),
    }
}

/// Picks the adapter: by `WGPU_ADAPTER_NAME` substring when set, else wgpu's
/// high-performance choice.
async fn select_adapter(
    instance: &wgpu::Instance,
    surface: Option<&wgpu::Surface<'_>>,
) -> Result<wgpu::Adapter, GpuError> {
    if let Ok(wanted) = std::env::var(ADAPTER_NAME_ENV)
        && !wanted.trim().is_empty()
    {
        let wanted_lower = wanted.trim().to_lowercase();
        let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
        let names: Vec<String> = adapters
            .iter()
            .map(|a| {
                let info = a.get_info();
                format!("{} ({})", info.name, info.backend)
            })
            .collect();
        return adapters
            .into_iter()
            .find(|a| {
                a.get_info().name.to_lowercase().contains(&wanted_lower)
                    && surface.is_none_or(|s| a.is_surface_supported(s))
            })
            .ok_or_else(|| GpuError::NoAdapter {
                reason: format!(
                    "{ADAPTER_NAME_ENV}={wanted:?} matches no adapter{}; available: [{}]",
                    if surface.is_some() {
                        " that can present to the window"
                    } else {
                        ""
                    },
                    names.join(", ")
                ),
            });
    }
    instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: surface,
            apply_limit_buckets: false,
        })
        .await
        .map_err(|e| GpuError::NoAdapter {
            reason: e.to_string(),
        })
}

/// Parses `NEUROTEX_GPU_DISABLE` into the wgpu features to withhold.
fn disabled_from_env() -> wgpu::Features {
    std::env::var(DISABLE_FEATURES_ENV)
        .map(|list| features_named(&list))
        .unwrap_or_else(|_| wgpu::Features::empty())
}

/// Maps comma-separated [`GrantedFeatures`] field names to wgpu features; unknown names
/// are logged and ignored.
fn features_named(list: &str) -> wgpu::Features {
    use wgpu::Features as F;
    let mut features = F::empty();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        features |= match name {
            "timestamps" => {
                F::TIMESTAMP_QUERY
                    | F::TIMESTAMP_QUERY_INSIDE_ENCODERS
                    | F::TIMESTAMP_QUERY_INSIDE_PASSES
            }
            "timestamps_inside_encoders" => F::TIMESTAMP_QUERY_INSIDE_ENCODERS,
            "timestamps_inside_passes" => F::TIMESTAMP_QUERY_INSIDE_PASSES,
            "shader_f16" => F::SHADER_F16,
            "subgroup" => F::SUBGROUP,
            "subgroup_barrier" => F::SUBGROUP_BARRIER,
            "float32_atomic" => F::SHADER_FLOAT32_ATOMIC,
            "float32_filterable" => F::FLOAT32_FILTERABLE,
            "cooperative_matrix" => F::EXPERIMENTAL_COOPERATIVE_MATRIX,
            "primitive_index" => F::PRIMITIVE_INDEX,
            "texture_compression_bc" => F::TEXTURE_COMPRESSION_BC,
            other => {
                log::warn!("{DISABLE_FEATURES_ENV}: unknown feature name {other:?} ignored");
                F::empty()
            }
        };
    }
    features
}

/// Intersects [`OPTIONAL_FEATURES`] with what the adapter offers (minus `withheld`) and
/// asks for the adapter's own limits.
fn negotiate(adapter: &wgpu::Adapter, withheld: &wgpu::Features) -> DeviceRequest {
    let offered = adapter.features();
    let features = (OPTIONAL_FEATURES & offered) - *withheld;
    let limits = adapter.limits();
    let defaults = wgpu::Limits::default();
    // Requesting more than the adapter offers would fail, so a limit below the default is
    // only reported; code that needs it checks `device.limits()`.
    defaults.check_limits_with_fail_fn(&limits, false, |name, default, adapter_value| {
        log::warn!(
            "adapter limit {name} = {adapter_value} is worse than the wgpu default {default}"
        );
    });
    DeviceRequest { features, limits }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shader_checks_take_on_and_off_only() {
        assert_eq!(ShaderChecks::default(), ShaderChecks::Off);
        assert_eq!(ShaderChecks::parse("on").unwrap(), ShaderChecks::On);
        assert_eq!(ShaderChecks::parse(" off\n").unwrap(), ShaderChecks::Off);
        for bad in ["", "OFF", "0", "false"] {
            let message = ShaderChecks::parse(bad).unwrap_err().to_string();
            assert!(
                message.contains(SHADER_CHECKS_ENV) && message.contains("`on` or `off`"),
                "{bad:?}: {message}"
            );
        }
        for (setting, all) in [(ShaderChecks::On, true), (ShaderChecks::Off, false)] {
            let checks = setting.runtime_checks();
            assert_eq!(
                [
                    checks.bounds_checks,
                    checks.force_loop_bounding,
                    checks.int_div_checks
                ],
                [all; 3],
                "{setting:?}"
            );
        }
    }

    #[test]
    fn display_lists_granted_and_missing() {
        let g = GrantedFeatures {
            timestamps: true,
            shader_f16: true,
            ..Default::default()
        };
        let s = g.to_string();
        assert!(s.starts_with("timestamps, shader_f16 (missing: "), "{s}");
        assert!(s.contains("cooperative_matrix"), "{s}");
        assert_eq!(
            GrantedFeatures::default().to_string().split(' ').next(),
            Some("none")
        );
    }

    #[test]
    fn feature_names_round_trip() {
        let all = features_named(
            "timestamps, shader_f16,subgroup,subgroup_barrier,float32_atomic,float32_filterable,\
             cooperative_matrix,primitive_index,texture_compression_bc",
        );
        assert_eq!(all, OPTIONAL_FEATURES);
        assert_eq!(features_named("bogus"), wgpu::Features::empty());
        let granted = GrantedFeatures::from_features(all, wgpu::DownlevelFlags::empty());
        assert!(granted.flags().iter().take(10).all(|(_, on)| *on));
        assert!(!granted.anisotropic_filtering);
        assert!(granted.texture_compression_bc);
    }
}
