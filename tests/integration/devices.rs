//! `--devices` through the real binary, on the one adapter CI has: `all`, `0` and two
//! workers on it (`0,0`) give the package of a run without the flag byte for byte
//! (deterministic training); a run on two workers interrupted with Ctrl-C keeps its
//! finished groups and resumes on one device to the same bytes; bad values are one clear
//! error listing the adapters, with no output.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{DeterministicPlan, expect_error, expect_ok};

#[test]
fn devices_give_the_package_of_one_device() {
    let plan = DeterministicPlan::new("devices", "64", "5");
    let dir = &plan.dir;
    let whole = dir.join("whole.ntc");
    expect_ok(&plan.args(&whole, &[]));
    let expected = std::fs::read(&whole).expect("package");

    let listed = expect_ok(&["devices"]);
    assert!(
        listed.starts_with("[0] ") && listed.contains("can train"),
        "{listed}"
    );

    for choice in ["all", "0", "0,0"] {
        let out = dir.join(format!("d{}.ntc", choice.replace(',', "-")));
        let stdout = expect_ok(&plan.args(&out, &["--devices", choice]));
        assert!(
            std::fs::read(&out).expect("package") == expected,
            "--devices {choice}: the package differs from the one-device run"
        );
        if choice == "0,0" {
            // Two workers on the one adapter, both of which trained groups.
            for d in ["on device 0", "on device 1"] {
                assert!(stdout.contains(d), "{stdout}");
            }
        }
    }

    // Bad values: one error listing the adapters, nothing written.
    let out = dir.join("refused.ntc");
    for (choice, needle) in [
        ("5", "there is no adapter 1"),
        ("0,5", "there is no adapter 5"),
        ("x", "`x` is not an adapter index"),
        ("", "empty"),
        ("0,", "empty"),
    ] {
        expect_error(
            &plan.args(&out, &["--devices", choice]),
            &[needle, "adapters present: [0] "],
        );
        assert!(
            !out.exists(),
            "--devices {choice:?} wrote {}",
            out.display()
        );
        assert!(
            !dir.join("refused.ntc.partial").exists(),
            "--devices {choice:?}"
        );
    }

    // Ctrl-C during a run on two workers: both stop, finished groups stay, and the run
    // resumes on one device to the same package.
    let resumed = dir.join("resumed.ntc");
    let args = plan.args(&resumed, &["--devices", "0,0"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_neurotex"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let partial = dir.join("resumed.ntc.partial");
    let finished = |p: &Path| {
        std::fs::read_dir(p).map_or(0, |d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".ntc"))
                .count()
        })
    };
    let started = Instant::now();
    while finished(&partial) == 0 && started.elapsed() < Duration::from_secs(120) {
        if child.try_wait().expect("poll").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        child.try_wait().expect("poll").is_none(),
        "the run ended before it could be interrupted"
    );
    let pid = child.id().to_string();
    let killed = Command::new("kill").args(["-INT", &pid]).status();
    assert!(killed.is_ok_and(|s| s.success()), "kill -INT {pid}");
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("interrupted") && stderr.contains("--resume"),
        "{stderr}"
    );
    assert!(!resumed.exists());
    assert!(finished(&partial) >= 1 && finished(&partial) < 4);
    expect_ok(&plan.args(&resumed, &["--devices", "0", "--resume"]));
    assert!(
        std::fs::read(&resumed).expect("package") == expected,
        "the resumed package differs from the one-device run"
    );
    assert!(!partial.exists());
    std::fs::remove_dir_all(dir).ok();
}
