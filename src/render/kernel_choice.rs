//! Which decode kernel [`NtcKernel::best`] means on this adapter: the fastest by
//! measurement. On first use per adapter, driver, decoder shape and build, a short
//! calibration times every candidate kernel the adapter runs on a synthetic frame and the
//! fastest is cached in `<cache dir>/decode-kernels.json` (written atomically); later runs
//! read it. The calibration itself is `bench::decode::calibrate`, a layer above this one:
//! the binary installs it ([`install_calibrator`]). Without one (the library's own
//! tests), on software adapters (lavapipe: their times say nothing about a GPU and their
//! pipeline builds take minutes) and when a calibration fails, the choice is
//! [`NtcKernel::best`]'s fixed order. A kernel chosen explicitly (`--kernel`) never comes
//! here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::gpu::{GpuContext, ShaderChecks};
use crate::ntc::model::NtcConfig;
use crate::render::passes::ntc_decode::NtcKernel;

/// A calibration: each of the given kernels' median ms on a synthetic frame of decoders of
/// the given shape (`None` where it failed).
pub type Calibrator = fn(&GpuContext, &NtcConfig, &[NtcKernel]) -> Vec<(NtcKernel, Option<f64>)>;

static CALIBRATOR: OnceLock<Calibrator> = OnceLock::new();

/// Install the calibration [`best_measured`] runs (once per process; later calls are
/// ignored).
pub fn install_calibrator(calibrator: Calibrator) {
    let _ = CALIBRATOR.set(calibrator);
}

/// The cache file's name in the cache directory.
pub const CACHE_FILE: &str = "decode-kernels.json";

/// One calibration's result, as cached.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The fastest kernel.
    pub kernel: NtcKernel,
    /// Every candidate's median ms on the calibration frame (`None`: it failed to build
    /// or run).
    pub timings: Vec<(NtcKernel, Option<f64>)>,
}

/// The cache: calibrations by [`calibration_key`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelCache {
    /// Key → calibration.
    pub entries: BTreeMap<String, Calibration>,
}

impl KernelCache {
    /// The cache at `path`; empty when the file is missing or unreadable (a broken cache
    /// is recalibrated and overwritten, with a warning).
    pub fn load(path: &Path) -> Self {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                log::warn!(
                    "{}: unreadable kernel cache ({e}); recalibrating",
                    path.display()
                );
                Self::default()
            }),
            Err(_) => Self::default(),
        }
    }

    /// Write the cache to `path` (temporary file + rename; the folder is created).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        crate::io::write_atomic(path, &json)
    }
}

/// What a calibration depends on: the adapter (name, vendor and device ids, backend), its
/// driver and driver version, whether the shaders have wgpu's runtime checks, the
/// decoder's shape and this build's version.
pub fn calibration_key(
    info: &wgpu::AdapterInfo,
    shader_checks: ShaderChecks,
    config: &NtcConfig,
) -> String {
    format!(
        "{} [{:04x}:{:04x} {:?}] {} {} | shader checks {:?} | {}-{}-{:?}-{:?} | neurotex {}",
        info.name,
        info.vendor,
        info.device,
        info.backend,
        info.driver,
        info.driver_info,
        shader_checks,
        config.features,
        config.latent_bits.bits(),
        config.hidden,
        config.pe_waves,
        env!("CARGO_PKG_VERSION"),
    )
}

/// The fastest kernel of `timings` (ties: the earlier one); `None` when none ran.
pub fn fastest(timings: &[(NtcKernel, Option<f64>)]) -> Option<NtcKernel> {
    timings
        .iter()
        .filter_map(|&(k, ms)| {
            ms.filter(|ms| ms.is_finite() && *ms > 0.0)
                .map(|ms| (k, ms))
        })
        .fold(None, |best: Option<(NtcKernel, f64)>, (k, ms)| match best {
            Some((_, b)) if b <= ms => best,
            _ => Some((k, ms)),
        })
        .map(|(k, _)| k)
}

/// The kernel for `key` from the cache at `path`, or from `calibrate` (whose result is
/// then cached; a calibration where nothing ran gives `fallback` and is not cached).
pub fn cached_or_calibrate(
    path: &Path,
    key: &str,
    fallback: NtcKernel,
    calibrate: impl FnOnce() -> Vec<(NtcKernel, Option<f64>)>,
) -> NtcKernel {
    let mut cache = KernelCache::load(path);
    if let Some(c) = cache.entries.get(key) {
        return c.kernel;
    }
    let timings = calibrate();
    let Some(kernel) = fastest(&timings) else {
        return fallback;
    };
    cache
        .entries
        .insert(key.to_owned(), Calibration { kernel, timings });
    if let Err(e) = cache.save(path) {
        log::warn!("{}: could not write the kernel cache: {e}", path.display());
    }
    kernel
}

/// Where the cache lives.
pub fn cache_path() -> PathBuf {
    crate::open::cache_dir().join(CACHE_FILE)
}

/// The kernel [`NtcKernel::best`] means for decoders of shape `config` on `ctx`'s adapter:
/// cached or calibrated on hardware adapters, the fixed order on software ones or
/// without an installed calibration.
pub fn best_measured(ctx: &GpuContext, config: &NtcConfig) -> NtcKernel {
    let fallback = NtcKernel::best(&ctx.granted);
    let info = ctx.adapter.get_info();
    let Some(calibrate) = CALIBRATOR.get() else {
        return fallback;
    };
    if info.device_type == wgpu::DeviceType::Cpu || !ctx.granted.timestamps {
        return fallback;
    }
    let key = calibration_key(&info, ctx.shader_checks, config);
    cached_or_calibrate(&cache_path(), &key, fallback, || {
        let candidates: Vec<NtcKernel> = NtcKernel::CANDIDATES
            .into_iter()
            .filter(|k| k.supported(&ctx.granted))
            .collect();
        log::info!(
            "calibrating the NTC decode kernels ({}) on {}",
            candidates
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", "),
            ctx.describe()
        );
        calibrate(ctx, config, &candidates)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fastest_kernel_that_ran_is_chosen() {
        let t = [
            (NtcKernel::SortedFma, Some(1.0)),
            (NtcKernel::SortedChain, Some(0.4)),
            (NtcKernel::SortedMma, None),
            (NtcKernel::Fma, Some(f64::NAN)),
        ];
        assert_eq!(fastest(&t), Some(NtcKernel::SortedChain));
        assert_eq!(fastest(&t[..1]), Some(NtcKernel::SortedFma));
        // Ties keep the earlier kernel.
        let tie = [
            (NtcKernel::SortedFma, Some(1.0)),
            (NtcKernel::Fma, Some(1.0)),
        ];
        assert_eq!(fastest(&tie), Some(NtcKernel::SortedFma));
        assert_eq!(fastest(&[(NtcKernel::SortedMma, None)]), None);
        assert_eq!(fastest(&[]), None);
    }

    #[test]
    fn a_calibration_is_cached_per_key_and_reused() {
        let dir =
            std::env::temp_dir().join(format!("neurotex-kernel-cache-{}", std::process::id()));
        let path = dir.join("sub").join(CACHE_FILE);
        let _ = std::fs::remove_dir_all(&dir);
        let calls = std::cell::Cell::new(0);
        let calibrate = |ms: f64| {
            calls.set(calls.get() + 1);
            vec![
                (NtcKernel::SortedFma, Some(1.0)),
                (NtcKernel::SortedChain, Some(ms)),
            ]
        };
        let a = cached_or_calibrate(&path, "gpu a", NtcKernel::F32, || calibrate(0.5));
        assert_eq!(a, NtcKernel::SortedChain);
        // Cached: no second calibration for the same key, whatever it would measure.
        let again = cached_or_calibrate(&path, "gpu a", NtcKernel::F32, || calibrate(9.0));
        assert_eq!(again, NtcKernel::SortedChain);
        // Another key (another driver) calibrates anew.
        let b = cached_or_calibrate(&path, "gpu b", NtcKernel::F32, || calibrate(9.0));
        assert_eq!(b, NtcKernel::SortedFma);
        assert_eq!(calls.get(), 2);
        let cache = KernelCache::load(&path);
        assert_eq!(cache.entries.len(), 2);
        assert_eq!(
            cache.entries["gpu a"].timings[1],
            (NtcKernel::SortedChain, Some(0.5))
        );
        // Nothing ran: the fallback, not cached.
        let none = cached_or_calibrate(&path, "gpu c", NtcKernel::F16, Vec::new);
        assert_eq!(none, NtcKernel::F16);
        assert!(!KernelCache::load(&path).entries.contains_key("gpu c"));
        // A broken cache file is replaced.
        std::fs::write(&path, b"{ not json").expect("write");
        let c = cached_or_calibrate(&path, "gpu a", NtcKernel::F32, || calibrate(0.1));
        assert_eq!(c, NtcKernel::SortedChain);
        assert_eq!(KernelCache::load(&path).entries.len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_key_names_adapter_driver_shader_checks_and_decoder_shape() {
        let info = wgpu::AdapterInfo {
            name: "GPU".into(),
            vendor: 0x10de,
            device: 0x2335,
            driver: "NVIDIA".into(),
            driver_info: "580.1".into(),
            ..wgpu::AdapterInfo::new(wgpu::DeviceType::DiscreteGpu, wgpu::Backend::Vulkan)
        };
        let config = NtcConfig::default();
        let key = calibration_key(&info, ShaderChecks::On, &config);
        assert!(
            key.contains("GPU") && key.contains("580.1") && key.contains("10de"),
            "{key}"
        );
        let newer = wgpu::AdapterInfo {
            driver_info: "581.0".into(),
            ..info.clone()
        };
        assert_ne!(calibration_key(&newer, ShaderChecks::On, &config), key);
        assert_ne!(calibration_key(&info, ShaderChecks::Off, &config), key);
        let small = NtcConfig {
            hidden: vec![32, 32],
            ..NtcConfig::default()
        };
        assert_ne!(calibration_key(&info, ShaderChecks::On, &small), key);
    }
}
