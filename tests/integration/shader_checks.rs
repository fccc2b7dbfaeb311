//! Shader modules without wgpu's runtime checks (the default) against
//! `NEUROTEX_SHADER_CHECKS=on` through the real binary: deterministic training with the
//! f32 and f16 trainers writes the checked run's package byte for byte, the f32 and f16
//! decode kernels render the checked run's frame byte for byte (with the whole frame's
//! other passes), the reports name the checked setting, and a value the variable does not
//! take is one clear error.

use std::path::Path;

use crate::common::{checker_quad, ctx, failed, read_json, run_env, s, succeeded};

/// The variable's setting per run: wgpu's checks, then none (the default, the variable
/// unset).
const SETTINGS: [(&str, &[(&str, &str)]); 2] =
    [("on", &[("NEUROTEX_SHADER_CHECKS", "on")]), ("off", &[])];

/// `neurotex args…` with `env`, which must succeed.
fn ok(args: &[&str], env: &[(&str, &str)]) {
    succeeded(args, run_env(args, env));
}

#[test]
fn shaders_without_runtime_checks_give_the_same_packages_and_frames() {
    let (dir, scene) = checker_quad("shader_checks");
    let f16 = ctx().granted.shader_f16;
    let train_kernels: &[&str] = if f16 { &["f32", "f16"] } else { &["f32"] };
    for &kernel in train_kernels {
        let package = |name: &str| dir.join(format!("{kernel}_{name}.ntc"));
        for (name, env) in SETTINGS {
            let (out, report) = (package(name), dir.join(format!("{kernel}_{name}.json")));
            ok(
                &[
                    "compress",
                    "--scene",
                    s(&scene),
                    "--out",
                    s(&out),
                    "--report",
                    s(&report),
                    "--steps",
                    "40",
                    "--batch",
                    "256",
                    "--no-bcn",
                    "--no-flip",
                    "--deterministic",
                    "--train-kernel",
                    kernel,
                ],
                env,
            );
            let adapter = read_json(&report)["adapter"].clone();
            let adapter = adapter.as_str().expect("the report's adapter");
            assert_eq!(
                adapter.contains("shaders with runtime checks"),
                name == "on",
                "{kernel}, checks {name}: the report's adapter is `{adapter}`"
            );
        }
        assert!(
            bytes(&package("on")) == bytes(&package("off")),
            "{kernel}: the package trained without runtime checks differs"
        );
    }

    let package = dir.join("f32_on.ntc");
    // The FMA kernels are left out: lavapipe takes about a minute to compile each of
    // their unrolled variants (`bench decode --quick` checks them against the CPU
    // decoder on a GPU, with either setting).
    let decode_kernels: &[&str] = if f16 { &["f32", "f16"] } else { &["f32"] };
    for &kernel in decode_kernels {
        let frame = |name: &str| dir.join(format!("{kernel}_{name}.png"));
        for (name, env) in SETTINGS {
            ok(
                &[
                    "render",
                    "--scene",
                    s(&scene),
                    "--mode",
                    "baseline",
                    "--package",
                    s(&package),
                    "--kernel",
                    kernel,
                    "--size",
                    "40x24",
                    "--accumulate",
                    "2",
                    "--out",
                    s(&frame(name)),
                ],
                env,
            );
        }
        assert!(
            bytes(&frame("on")) == bytes(&frame("off")),
            "{kernel}: the frame decoded without runtime checks differs"
        );
    }

    // A value the variable does not take: one error naming it, nothing written.
    let out = dir.join("refused.png");
    let args = ["render", "--scene", s(&scene), "--out", s(&out)];
    failed(
        &args,
        run_env(&args, &[("NEUROTEX_SHADER_CHECKS", "of")]),
        &["NEUROTEX_SHADER_CHECKS", "`of`", "`on` or `off`"],
    );
    assert!(!out.exists(), "a refused run wrote {}", out.display());
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
