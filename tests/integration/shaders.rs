//! Shader tests that need no GPU: every embedded entry shader is composed and
//! naga-validated in every define set it declares (through the same `#import` resolution
//! the runtime uses), and the preprocessor is tested on in-memory sources.
//!
//! An entry shader declares its define sets in its first comment lines, e.g.
//!
//! ```text
//! // defines: TILE=8, KERNEL_F32
//! // variants: KERNEL_F32 | KERNEL_F16
//! ```
//!
//! (see `neurotex::gpu::shader` for the exact rules).

use neurotex::gpu::Defines;
use neurotex::gpu::shader::{self, ShaderError, ShaderHeader, ShaderLibrary, list_entry_shaders};

/// Composes and validates `path` of `library` in every define set it declares; returns
/// one message per failing set.
fn validate_declared_variants(library: &ShaderLibrary<'_>, path: &str) -> Vec<String> {
    let header = match library.header(path) {
        Ok(header) => header,
        Err(e) => return vec![e.to_string()],
    };
    header
        .define_sets()
        .iter()
        .filter_map(|set| {
            library
                .validate(path, set)
                .err()
                .map(|e| format!("with defines {set:?}:\n{e}"))
        })
        .collect()
}

#[test]
fn every_entry_shader_validates_in_every_declared_variant() {
    let library = ShaderLibrary::embedded();
    let failures: Vec<String> = list_entry_shaders()
        .into_iter()
        .flat_map(|path| validate_declared_variants(&library, path))
        .collect();
    assert!(
        failures.is_empty(),
        "{} shader variant(s) failed naga validation:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn entry_shaders_exclude_common_and_all_paths_resolve() {
    for path in list_entry_shaders() {
        assert!(!path.starts_with("common/"), "{path}");
        assert!(path.ends_with(".wgsl"), "{path}");
        assert!(shader::shader_source(path).is_some(), "{path}");
    }
    assert!(shader::shader_source("common/math.wgsl").is_some());
    assert!(matches!(
        shader::compose("no/such.wgsl", &Defines::new()),
        Err(ShaderError::NotFound { .. })
    ));
}

#[test]
fn common_math_validates_and_exposes_its_functions() {
    let files = [(
        "math_user.wgsl",
        r#"#import "common/math.wgsl"
@compute @workgroup_size(1)
fn main() {
    let n = oct_decode(oct_encode(normalize(vec3f(1.0, -2.0, -3.0))));
    let c = linear_to_srgb(srgb_to_linear(vec3f(0.5)));
    let l = luminance(c) * PI * INV_PI + TAU + n.x;
    _ = l;
}
"#,
    )];
    let embedded = ShaderLibrary::embedded();
    let library = ShaderLibrary::new(|path| {
        files
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, s)| *s)
            .or_else(|| embedded.source(path))
    });
    library
        .validate("math_user.wgsl", &Defines::new())
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn import_includes_each_file_once() {
    // Diamond: main → a, b; a → util; b → util. A duplicate `fn helper` would fail naga.
    let files = [
        (
            "main.wgsl",
            "#import \"common/a.wgsl\"\n#import \"common/b.wgsl\"\n#import \"common/util.wgsl\"\n@compute @workgroup_size(1)\nfn main() { _ = a() + b(); }\n",
        ),
        (
            "common/a.wgsl",
            "#import \"common/util.wgsl\"\nfn a() -> f32 { return helper(); }\n",
        ),
        (
            "common/b.wgsl",
            "#import common/util.wgsl // quotes are optional\nfn b() -> f32 { return helper(); }\n",
        ),
        ("common/util.wgsl", "fn helper() -> f32 { return 1.0; }\n"),
    ];
    let library = ShaderLibrary::from_files(&files);
    let composed = library.compose("main.wgsl", &Defines::new()).unwrap();
    assert_eq!(composed.source.matches("fn helper").count(), 1);
    assert_eq!(
        composed.files,
        [
            "main.wgsl",
            "common/a.wgsl",
            "common/util.wgsl",
            "common/b.wgsl"
        ]
    );
    composed.validate().unwrap_or_else(|e| panic!("{e}"));
    // Line map: `fn b()` is line 2 of common/b.wgsl.
    let line = composed
        .source
        .lines()
        .position(|l| l.starts_with("fn b()"))
        .unwrap() as u32
        + 1;
    let origin = composed.origin(line, 1).unwrap();
    assert_eq!((origin.file.as_str(), origin.line), ("common/b.wgsl", 2));
}

#[test]
fn import_cycles_are_reported_with_file_and_line() {
    let files = [
        ("main.wgsl", "#import \"common/a.wgsl\"\nfn main() {}\n"),
        ("common/a.wgsl", "// a\n#import \"common/b.wgsl\"\n"),
        ("common/b.wgsl", "\n\n#import \"common/a.wgsl\"\n"),
        ("self.wgsl", "#import \"self.wgsl\"\n"),
    ];
    let library = ShaderLibrary::from_files(&files);
    match library.compose("main.wgsl", &Defines::new()) {
        Err(ShaderError::Preprocess {
            file,
            line,
            message,
        }) => {
            assert_eq!((file.as_str(), line), ("common/b.wgsl", 3));
            assert!(
                message.contains("main.wgsl → common/a.wgsl → common/b.wgsl → common/a.wgsl"),
                "{message}"
            );
        }
        other => panic!("expected a cycle error, got {other:?}"),
    }
    let err = library.compose("self.wgsl", &Defines::new()).unwrap_err();
    assert!(
        err.to_string().starts_with("shaders/self.wgsl:1: "),
        "{err}"
    );
}

#[test]
fn missing_import_names_the_importing_file_and_line() {
    let files = [("main.wgsl", "fn f() {}\n\n  #import \"common/nope.wgsl\"\n")];
    let err = ShaderLibrary::from_files(&files)
        .compose("main.wgsl", &Defines::new())
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("shaders/main.wgsl:3: "), "{text}");
    assert!(text.contains("common/nope.wgsl"), "{text}");
}

#[test]
fn ifdef_nesting_else_and_inactive_imports() {
    let source = "\
#ifdef A
a
#ifndef B
a_not_b
#else
a_b
#ifdef C // trailing comments are fine
a_b_c
#endif
#endif
#else
not_a
#ifdef NEVER
#import \"common/missing_but_inactive.wgsl\"
#endif
#ifdef B
not_a_b
#endif
#endif
end
";
    let files = [("main.wgsl", source)];
    let library = ShaderLibrary::from_files(&files);
    let lines = |defines: &[(&str, &str)]| -> Vec<String> {
        library
            .compose("main.wgsl", &defines.iter().copied().collect())
            .unwrap_or_else(|e| panic!("{e}"))
            .source
            .lines()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(lines(&[]), ["not_a", "end"]);
    assert_eq!(lines(&[("B", "")]), ["not_a", "not_a_b", "end"]);
    assert_eq!(lines(&[("A", "1")]), ["a", "a_not_b", "end"]);
    assert_eq!(lines(&[("A", "1"), ("B", "1")]), ["a", "a_b", "end"]);
    assert_eq!(
        lines(&[("A", "1"), ("B", "1"), ("C", "0")]),
        ["a", "a_b", "a_b_c", "end"]
    );
}

#[test]
fn unbalanced_conditionals_and_unknown_directives_are_errors() {
    let cases = [
        ("x\n#ifdef A\ny\n", 2, "never closed"),
        ("#endif\n", 1, "#endif without"),
        ("\n#else\n", 2, "#else without"),
        ("#ifdef A\n#else\n#else\n#endif\n", 3, "second #else"),
        ("#ifdef\n#endif\n", 1, "needs one define name"),
        ("#define X 1\n", 1, "unknown directive"),
    ];
    for (source, line, needle) in cases {
        let files = [("main.wgsl", source)];
        match ShaderLibrary::from_files(&files).compose("main.wgsl", &Defines::new()) {
            Err(ShaderError::Preprocess {
                file,
                line: l,
                message,
            }) => {
                assert_eq!((file.as_str(), l), ("main.wgsl", line), "{source:?}");
                assert!(message.contains(needle), "{source:?}: {message}");
            }
            other => panic!("{source:?}: expected a preprocess error, got {other:?}"),
        }
    }
}

#[test]
fn defines_substitute_into_source() {
    let files = [(
        "main.wgsl",
        "const TILE: u32 = ${TILE}u;\n@compute @workgroup_size(${TILE}, ${ TILE })\nfn main() {}\n",
    )];
    let library = ShaderLibrary::from_files(&files);
    let composed = library
        .compose("main.wgsl", &Defines::from([("TILE", "4"), ("TILE", "8")]))
        .unwrap();
    assert!(
        composed.source.contains("const TILE: u32 = 8u;"),
        "later defines win"
    );
    assert!(composed.source.contains("@workgroup_size(8, 8)"));
    composed.validate().unwrap_or_else(|e| panic!("{e}"));
    let err = library
        .compose("main.wgsl", &Defines::new())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("shaders/main.wgsl:1: "), "{err}");
    assert!(err.contains("${TILE}"), "{err}");
}

#[test]
fn for_loops_unroll_with_constant_indices() {
    // Nested loops, bounds from define expressions, nested substitution, #ifdef inside.
    let source = "\
var<private> a: array<u32, 8>;
fn main() {
#for I in 0..${N}/2
#for J in max(${I}, 1)..min(3, ${N})
    a[${I} * 2 + ${J}] = ${W_${J}}u;
#endfor
#ifdef ODD
    a[${I}] = 1u;
#endif
#endfor
}
";
    let files = [("main.wgsl", source)];
    let library = ShaderLibrary::from_files(&files);
    let defines = Defines::from([("N", "4"), ("W_1", "10"), ("W_2", "20"), ("ODD", "1")]);
    let composed = library.compose("main.wgsl", &defines).unwrap();
    let body: Vec<&str> = composed
        .source
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("a["))
        .collect();
    assert_eq!(
        body,
        [
            "a[0 * 2 + 1] = 10u;",
            "a[0 * 2 + 2] = 20u;",
            "a[0] = 1u;",
            "a[1 * 2 + 1] = 10u;",
            "a[1 * 2 + 2] = 20u;",
            "a[1] = 1u;",
        ]
    );
    // Every unrolled line maps back to its line in the file.
    let line = composed
        .source
        .lines()
        .position(|l| l.trim() == "a[1] = 1u;")
        .unwrap() as u32
        + 1;
    assert_eq!(composed.origin(line, 1).unwrap().line, 8);
    composed.validate().unwrap_or_else(|e| panic!("{e}"));

    for (source, message) in [
        ("#for I in 0..2\n", "never closed by #endfor"),
        ("#endfor\n", "#endfor without #for"),
        ("#for 0..2\n#endfor\n", "#for needs `NAME in START..END`"),
        ("#for I in 0..2/0\n#endfor\n", "division by zero"),
        ("#for I in 0..2\n#ifdef X\n#endfor\n", "does not balance"),
    ] {
        let files = [("bad.wgsl", source)];
        let err = ShaderLibrary::from_files(&files)
            .compose("bad.wgsl", &Defines::from([("X", "1")]))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("shaders/bad.wgsl:"), "{err}");
        assert!(err.contains(message), "{source:?}: {err}");
    }
}

#[test]
fn broken_shader_error_points_to_original_file_and_line() {
    let files = [
        (
            "main.wgsl",
            "#import \"common/helpers.wgsl\"\n@compute @workgroup_size(1)\nfn main() { _ = helper(); }\n",
        ),
        (
            "common/helpers.wgsl",
            "// helpers\n\nfn helper() -> f32 {\n    return 1.0 +;\n}\n",
        ),
        (
            "typed.wgsl",
            "\n#import \"common/typed_helper.wgsl\"\n@compute @workgroup_size(1)\nfn main() { _ = h(); }\n",
        ),
        (
            "common/typed_helper.wgsl",
            "fn h() -> f32 {\n    let x: u32 = 1u;\n    return x;\n}\n",
        ),
    ];
    let library = ShaderLibrary::from_files(&files);

    let err = library.validate("main.wgsl", &Defines::new()).unwrap_err();
    let ShaderError::Parse { path, location, .. } = &err else {
        panic!("expected a parse error, got {err:?}");
    };
    assert_eq!(path, "main.wgsl");
    let location = location.as_ref().expect("naga gives a span");
    assert_eq!(
        (location.file.as_str(), location.line),
        ("common/helpers.wgsl", 4)
    );
    let text = err.to_string();
    assert!(text.contains("shaders/common/helpers.wgsl:4:"), "{text}");
    assert!(text.contains("return 1.0 +;"), "naga's excerpt: {text}");

    let err = library.validate("typed.wgsl", &Defines::new()).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            err,
            ShaderError::Validation { .. } | ShaderError::Parse { .. }
        ),
        "{text}"
    );
    // The shortest span (the returned expression's declaration) is the reported location.
    assert!(
        text.contains("error at shaders/common/typed_helper.wgsl:2:"),
        "{text}"
    );
}

#[test]
fn f16_and_subgroups_are_accepted_and_enables_are_hoisted() {
    let files = [
        (
            "main.wgsl",
            "#import \"common/decl.wgsl\"\n#import \"common/half.wgsl\"\n\
             @compute @workgroup_size(32)\n\
             fn main(@builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) size: u32) {\n\
                 let s = subgroupAdd(f32(lane)) + f32(size) + decl();\n\
                 _ = twice(f16(s));\n\
             }\n",
        ),
        ("common/decl.wgsl", "fn decl() -> f32 { return 1.0; }\n"),
        (
            "common/half.wgsl",
            "enable f16;\nfn twice(x: f16) -> f16 { return x * 2.0h; }\n",
        ),
    ];
    let library = ShaderLibrary::from_files(&files);
    let composed = library.compose("main.wgsl", &Defines::new()).unwrap();
    assert!(
        composed.source.starts_with("enable f16;\n"),
        "{}",
        composed.source
    );
    assert_eq!(composed.origin(1, 1).unwrap().file, "common/half.wgsl");
    composed.validate().unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn declared_variants_are_each_validated() {
    let files = [(
        "kernel.wgsl",
        "// defines: TILE=8, KERNEL_F32\n// variants: KERNEL_F32 | KERNEL_F16\n\
         #ifdef KERNEL_F16\nenable f16;\nalias T = f16;\n#else\nalias T = f32;\n#endif\n\
         #ifdef KERNEL_F32\n#ifdef KERNEL_F16\nBOTH_DEFINED_IS_A_BUG\n#endif\n#endif\n\
         @compute @workgroup_size(${TILE}, ${TILE})\nfn main() { let x = T(1); _ = x; }\n",
    )];
    let library = ShaderLibrary::from_files(&files);
    let header = library.header("kernel.wgsl").unwrap();
    assert_eq!(header.define_sets().len(), 2);
    assert!(validate_declared_variants(&library, "kernel.wgsl").is_empty());
    let composed = library
        .compose("kernel.wgsl", &header.define_sets()[1])
        .unwrap();
    assert!(composed.source.contains("alias T = f16;"));
    assert_eq!(
        ShaderHeader::parse("fn main() {}\n").unwrap(),
        ShaderHeader::default()
    );
}

/// The SPIR-V backend (naga's `spv-out`, as wgpu's Vulkan backend runs it when a shader
/// module is created): every entry shader in every declared variant must compile, because
/// a backend failure only shows on a device — and a backend *panic* kills the process.
///
/// `spv-out` is enabled through wgpu's Vulkan backend (feature unification), which wgpu
/// does not build on Apple targets; there this test is skipped.
#[cfg(not(target_vendor = "apple"))]
mod spirv {
    use std::panic::{AssertUnwindSafe, catch_unwind};

    use naga::back::spv;
    use neurotex::gpu::shader::{ShaderLibrary, list_entry_shaders};

    /// A Vulkan device as wgpu-hal 30 (`vulkan/adapter.rs`, `Adapter::open`) configures
    /// naga's SPIR-V writer for it.
    struct Device {
        name: &'static str,
        lang_version: (u8, u8),
        /// `EXPERIMENTAL_COOPERATIVE_MATRIX` granted (adds `CooperativeMatrixKHR` and
        /// `VulkanMemoryModel`); without it, variants using cooperative matrices are skipped.
        cooperative_matrix: bool,
        /// `robustBufferAccess2` / `robustImageAccess`: buffer and image bounds checks left
        /// to the driver; otherwise naga emits `Restrict` clamps for them too.
        robust: bool,
        /// `VK_KHR_zero_initialize_workgroup_memory`; otherwise naga's polyfill.
        native_zero_init: bool,
    }

    /// A recent discrete GPU with every optional feature neurotex requests (what the
    /// decode pass's coop kernel runs on), and an older device without robustness
    /// extensions (naga's `Restrict` bounds checks and zero-initialisation polyfill
    /// everywhere).
    const DEVICES: [Device; 2] = [
        Device {
            name: "Vulkan 1.3, robust, cooperative matrices",
            lang_version: (1, 6),
            cooperative_matrix: true,
            robust: true,
            native_zero_init: true,
        },
        Device {
            name: "Vulkan 1.1, no robustness extensions",
            lang_version: (1, 3),
            cooperative_matrix: false,
            robust: false,
            native_zero_init: false,
        },
    ];

    impl Device {
        /// wgpu-hal's writer options for this device with neurotex's optional features
        /// (`neurotex::gpu::context::OPTIONAL_FEATURES`: f16, subgroups, f32 atomics,
        /// cooperative matrices, primitive index) granted, as for a checked (`create_shader_module`)
        /// module.
        ///
        /// `debug` mirrors `wgpu::InstanceFlags::DEBUG` (on by default in debug builds):
        /// the `DEBUG` writer flag and the WGSL source as debug info.
        fn options<'a>(&self, debug: Option<&'a str>) -> spv::Options<'a> {
            use naga::proc::BoundsCheckPolicy::{Restrict, Unchecked};
            use spv::Capability as C;
            let mut capabilities = vec![
                C::Shader,
                C::Matrix,
                C::Sampled1D,
                C::Image1D,
                C::ImageQuery,
                C::DerivativeControl,
                C::StorageImageExtendedFormats,
                C::SampledCubeArray,
                C::SampleRateShading,
                // SUBGROUP
                C::GroupNonUniform,
                C::GroupNonUniformVote,
                C::GroupNonUniformArithmetic,
                C::GroupNonUniformBallot,
                C::GroupNonUniformShuffle,
                C::GroupNonUniformShuffleRelative,
                C::GroupNonUniformQuad,
                // SHADER_F16, SHADER_FLOAT32_ATOMIC
                C::Float16,
                C::AtomicFloat32AddEXT,
                // PRIMITIVE_INDEX
                C::Geometry,
            ];
            if self.cooperative_matrix {
                capabilities.extend([C::CooperativeMatrixKHR, C::VulkanMemoryModel]);
            }
            let mut flags = spv::WriterFlags::LABEL_VARYINGS | spv::WriterFlags::FORCE_POINT_SIZE;
            flags.set(spv::WriterFlags::DEBUG, debug.is_some());
            let checked = if self.robust { Unchecked } else { Restrict };
            spv::Options {
                lang_version: self.lang_version,
                flags,
                capabilities: Some(capabilities.into_iter().collect()),
                bounds_check_policies: naga::proc::BoundsCheckPolicies {
                    index: Restrict,
                    buffer: checked,
                    image_load: checked,
                    binding_array: Unchecked,
                },
                zero_initialize_workgroup_memory: if self.native_zero_init {
                    spv::ZeroInitializeWorkgroupMemoryMode::Native
                } else {
                    spv::ZeroInitializeWorkgroupMemoryMode::Polyfill
                },
                force_loop_bounding: true,
                ray_query_initialization_tracking: true,
                use_storage_input_output_16: true,
                fake_missing_bindings: false,
                binding_map: Default::default(),
                debug_info: debug.map(|source_code| spv::DebugInfo {
                    source_code,
                    file_name: "shader",
                    language: spv::SourceLanguage::WGSL,
                }),
                task_dispatch_limits: None,
                mesh_shader_primitive_indices_clamp: true,
                trace_ray_argument_validation: true,
                emit_int_div_checks: true,
            }
        }
    }

    fn uses_cooperative_matrix(module: &naga::Module) -> bool {
        module
            .types
            .iter()
            .any(|(_, ty)| matches!(ty.inner, naga::TypeInner::CooperativeMatrix { .. }))
    }

    /// The panic's message, for the report.
    fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(non-string panic payload)".to_owned())
    }

    /// wgpu-hal's `BindingMap` for a pipeline layout matching the module's bindings
    /// (wgpu-hal renumbers bindings densely per group; the identity keeps the shape).
    fn binding_map(module: &naga::Module) -> spv::BindingMap {
        module
            .global_variables
            .iter()
            .filter_map(|(_, var)| {
                let binding = var.binding?;
                let binding_array_size = match module.types[var.ty].inner {
                    naga::TypeInner::BindingArray {
                        size: naga::ArraySize::Constant(n),
                        ..
                    } => Some(n.get()),
                    _ => None,
                };
                let info = spv::BindingInfo {
                    descriptor_set: binding.group,
                    binding: binding.binding,
                    binding_array_size,
                };
                Some((binding, info))
            })
            .collect()
    }

    /// Compiles every entry point of `module` as wgpu-hal's `Device::compile_stage` does
    /// when a pipeline is created (wgpu-hal always uses its `SEPARATE_ENTRY_POINTS` path):
    /// `process_overrides` for that entry point, then `spv::write_vec` with the pipeline
    /// layout's binding map. An error or a panic is a failure message.
    fn compile_entry_points(
        module: &naga::Module,
        info: &naga::valid::ModuleInfo,
        options: &spv::Options,
    ) -> Result<(), String> {
        let mut options = options.clone();
        options.binding_map = binding_map(module);
        for ep in &module.entry_points {
            let pipeline = spv::PipelineOptions {
                shader_stage: ep.stage,
                entry_point: ep.name.clone(),
            };
            let compiled = catch_unwind(AssertUnwindSafe(|| {
                let (module, info) = naga::back::pipeline_constants::process_overrides(
                    module,
                    info,
                    Some((ep.stage, &ep.name)),
                    &Default::default(),
                )
                .map_err(|e| format!("pipeline constants: {e}"))?;
                spv::write_vec(&module, &info, &options, Some(&pipeline))
                    .map_err(|e| format!("SPIR-V backend error: {e}"))
            }));
            match compiled {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(format!("entry point `{}`: {e}", ep.name)),
                Err(payload) => {
                    return Err(format!(
                        "entry point `{}`: SPIR-V backend PANICKED: {}",
                        ep.name,
                        panic_message(&*payload)
                    ));
                }
            }
        }
        Ok(())
    }

    #[test]
    fn every_entry_shader_compiles_to_spirv_in_every_declared_variant() {
        // The expected panics would each print a backtrace banner; keep the output to the
        // report below.
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let library = ShaderLibrary::embedded();
        let mut failures = Vec::new();
        let mut compiled = 0;
        for path in list_entry_shaders() {
            let header = library.header(path).unwrap_or_else(|e| panic!("{e}"));
            for set in header.define_sets() {
                let composed = library
                    .compose(path, &set)
                    .unwrap_or_else(|e| panic!("{e}"));
                let (module, info) = composed.validate().unwrap_or_else(|e| panic!("{e}"));
                for device in &DEVICES {
                    if uses_cooperative_matrix(&module) && !device.cooperative_matrix {
                        continue;
                    }
                    for debug in [None, Some(composed.source.as_str())] {
                        let options = device.options(debug);
                        if let Err(e) = compile_entry_points(&module, &info, &options) {
                            failures.push(format!(
                                "{path} with defines {set:?}\n  on {} (debug info: {}): {e}",
                                device.name,
                                debug.is_some()
                            ));
                        }
                        compiled += 1;
                    }
                }
            }
        }
        std::panic::set_hook(hook);
        assert!(compiled > 0);
        assert!(
            failures.is_empty(),
            "{} of {compiled} shader variant compilations failed in naga's SPIR-V backend:\n\n{}",
            failures.len(),
            failures.join("\n\n")
        );
    }
}
