//! `bench kernels` (`neurotex::bench::kernels`, `neurotex::gpu::pipeline_stats`): the
//! kernels a context builds are listed, each written to SPIR-V with and without the
//! runtime checks as wgpu's Vulkan backend writes them, laid out in descriptor sets,
//! and sized in workgroup memory as the trainer's host code sizes `train_step`; the
//! command reports what the driver compiled, or names a device whose driver cannot say.

use neurotex::bench::kernels::build_kernels;
use neurotex::gpu::pipeline_stats::{descriptor_sets, kernel_spirv, workgroup_bytes};
use neurotex::gpu::{GpuContext, ShaderChecks, ShaderLibrary};
use neurotex::ntc::model::NtcConfig;
use neurotex::ntc::train::gpu::{TrainKernel, mixed_workgroup_bytes};

use crate::common::{failed, read_json, run, s, temp_dir};

/// SPIR-V's magic number, the first word of every module.
const SPIRV_MAGIC: u32 = 0x0723_0203;

#[test]
fn built_kernels_are_written_to_spirv_laid_out_and_sized() {
    // A context of its own, so that its list holds only what `build_kernels` builds.
    let ctx = GpuContext::headless().expect("adapter");
    let not_built = build_kernels(&ctx);
    let built = ctx.built_kernels();
    let has =
        |shader: &str, entry: &str| built.iter().any(|k| k.shader == shader && k.entry == entry);
    // The f32 trainer, Adam (dense and lazy: its replay), and the f32 decode run anywhere.
    for (shader, entry) in [
        ("ntc/forward_backward.wgsl", "forward_backward"),
        ("ntc/adam.wgsl", "adam"),
        ("ntc/adam.wgsl", "replay"),
        ("ntc_decode_tiles.wgsl", "decode"),
    ] {
        assert!(
            has(shader, entry),
            "{shader} {entry} not built: {not_built:?}"
        );
    }
    let library = ShaderLibrary::embedded();
    let mut train_steps = 0;
    for k in &built {
        let what = format!("{} ({} {})", k.label, k.shader, k.entry);
        let (module, info) = library
            .compose(&k.shader, &k.defines)
            .and_then(|c| c.validate())
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let on = kernel_spirv(&module, &info, &k.entry, ShaderChecks::On, false)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let off = kernel_spirv(&module, &info, &k.entry, ShaderChecks::Off, false)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!((on[0], off[0]), (SPIRV_MAGIC, SPIRV_MAGIC), "{what}");
        let sets =
            descriptor_sets(&module, &info, &k.entry).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(
            sets.iter().flatten().count() > 0,
            "{what}: a kernel with no bindings"
        );
        if k.entry == "train_step" {
            // Loops bounded and indices clamped with the checks: more code.
            assert!(on.len() > off.len(), "{what}: the checks add nothing");
            let number = |name: &str| -> u32 {
                k.defines
                    .get(name)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("{what}: no {name}"))
            };
            let kernel = if k.defines.contains("TRAIN_COOP") {
                TrainKernel::CoopMatrix
            } else {
                TrainKernel::F16
            };
            assert_eq!(
                workgroup_bytes(&module, &info, &k.entry).expect("bytes"),
                u64::from(mixed_workgroup_bytes(
                    &NtcConfig::default(),
                    kernel,
                    number("TRAIN_ROWS"),
                    number("TRAIN_THREADS"),
                )),
                "{what}: naga's workgroup memory against the host's"
            );
            train_steps += 1;
        }
    }
    if ctx.granted.shader_f16 {
        assert!(train_steps > 0, "no train_step built: {not_built:?}");
    }
}

#[test]
fn bench_kernels_reports_the_driver_or_names_the_device() {
    let dir = temp_dir("bench-kernels");
    let out = dir.join("k");
    let args = ["bench", "kernels", "--out", s(&out)];
    let outcome = run(&args);
    if outcome.0 {
        // A driver with pipeline statistics: every kernel has an executable with some.
        let stdout = &outcome.1;
        let report = read_json(out.join("kernels.json"));
        let kernels = report["kernels"].as_array().expect("kernels");
        assert!(!kernels.is_empty(), "{stdout}");
        for k in kernels {
            let executables = k["executables"].as_array().expect("executables");
            assert!(
                executables
                    .iter()
                    .any(|e| !e["statistics"].as_array().expect("statistics").is_empty()),
                "{k}"
            );
        }
        for file in ["kernels.csv", "kernels.md"] {
            assert!(out.join(file).exists(), "{file} missing");
        }
    } else {
        failed(
            &args,
            outcome,
            &["VK_KHR_pipeline_executable_properties", "Vulkan device"],
        );
        assert!(!out.exists(), "a refused run wrote {}", out.display());
    }
}
