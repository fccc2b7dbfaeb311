//! Shards through the real binary: `compress --shard I/N` in separate processes (the
//! index given, or taken from `SLURM_ARRAY_TASK_ID` / `JOB_COMPLETION_INDEX`), one of
//! them killed and resumed, and `merge` of the parts must give the package of the
//! unsharded run byte for byte (deterministic training); merge refuses a missing part, a
//! repeated one, a part of another plan and a damaged one, with one clear error and no
//! output. And the job files of `docs/scaling/`: the Slurm scripts parse (`bash -n`), the
//! Kubernetes manifest has the structure of an Indexed Job and a merge Job, and every
//! option they pass exists.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{DeterministicPlan, failed, outcome, s, succeeded};

/// The scheduler variables, removed from every child so that the test's own environment
/// (a test run inside a Slurm job) cannot change what it checks.
const INDEX_VARIABLES: [&str; 2] = ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"];

/// `neurotex args…` with `env` set, not yet run.
fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_neurotex"));
    c.args(args)
        .env(
            "NEUROTEX_CACHE",
            std::env::temp_dir().join("neurotex-test-cache"),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for v in INDEX_VARIABLES {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    c
}

/// Wait for `child`; its [`outcome`].
fn finish(child: Child) -> (bool, String, String) {
    outcome(child.wait_with_output().expect("wait for neurotex"))
}

/// Run `neurotex args…` with `env` and expect success; its stdout.
fn ok(args: &[&str], env: &[(&str, &str)]) -> String {
    succeeded(args, finish(command(args, env).spawn().expect("spawn")))
}

/// Run `neurotex args…` and expect failure with an `error:` line holding every needle.
fn fails(args: &[&str], env: &[(&str, &str)], needles: &[&str]) {
    failed(
        args,
        finish(command(args, env).spawn().expect("spawn")),
        needles,
    );
}

#[test]
fn shards_in_separate_processes_merge_to_the_unsharded_package() {
    // One decoder per set: the 16² sets weigh 341 texels with their mips, the 8² ones 85,
    // so three shards get groups [1], [3] and [0, 2].
    let plan = DeterministicPlan::new("shards", "150", "3");
    let dir = &plan.dir;
    let whole = dir.join("whole.ntc");
    let part = |i: usize| dir.join(format!("p{i}.ntcpart"));
    let (p0, p1, p2) = (part(0), part(1), part(2));

    // auto/N without an index, or with one out of range: refused before any work.
    fails(
        &plan.args(&p0, &["--shard", "auto/3"]),
        &[],
        &["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"],
    );
    fails(
        &plan.args(&p0, &["--shard", "auto/3"]),
        &[("JOB_COMPLETION_INDEX", "3")],
        &["JOB_COMPLETION_INDEX=3", "0-2"],
    );
    fails(&plan.args(&p0, &["--shard", "3/3"]), &[], &["3/3"]);

    // The unsharded run and shards 0 and 1 at once, as separate processes; shard 1 takes
    // its index from a Kubernetes Indexed Job's variable.
    let whole_run = command(&plan.args(&whole, &[]), &[])
        .spawn()
        .expect("spawn");
    let shard0 = command(&plan.args(&p0, &["--shard", "0/3"]), &[])
        .spawn()
        .expect("spawn");
    let shard1 = command(
        &plan.args(&p1, &["--shard", "auto/3"]),
        &[("JOB_COMPLETION_INDEX", "1")],
    )
    .spawn()
    .expect("spawn");
    for (name, child) in [
        ("whole", whole_run),
        ("shard 0", shard0),
        ("shard 1", shard1),
    ] {
        let (ok, stdout, stderr) = finish(child);
        assert!(ok, "{name}: {stderr}");
        if name == "shard 1" {
            assert!(stdout.contains("shard 1/3: groups [3] of 4"), "{stdout}");
        }
    }

    // Shard 2 (groups 0 and 2, index from a Slurm array task) is killed once its first
    // group is done, then resumed from its own partial folder.
    let slurm = [("SLURM_ARRAY_TASK_ID", "2")];
    let shard2 = plan.args(&p2, &["--shard", "auto/3"]);
    let mut child = command(&shard2, &slurm)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let first_done = dir.join("p2.ntcpart.partial/group0.ntc");
    let started = Instant::now();
    while !first_done.exists() && started.elapsed() < Duration::from_secs(120) {
        if child.try_wait().expect("poll").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let killed = child.try_wait().expect("poll").is_none();
    child.kill().ok();
    child.wait().expect("wait");
    assert!(killed, "shard 2 ended before it could be killed");
    assert!(!p2.exists(), "no part before the shard's groups are done");
    let mut resume = shard2.clone();
    resume.push("--resume");
    let stdout = ok(&resume, &slurm);
    assert!(stdout.contains("shard 2/3: groups [0, 2] of 4"), "{stdout}");
    assert!(!dir.join("p2.ntcpart.partial").exists());

    // Merged in any order: the unsharded package, byte for byte.
    let merged = dir.join("merged.ntc");
    let stdout = ok(&["merge", s(&p2), s(&p0), s(&p1), "--out", s(&merged)], &[]);
    assert!(
        stdout.contains("4 materials, 4 decoders from 3 parts"),
        "{stdout}"
    );
    let expected = std::fs::read(&whole).expect("whole package");
    assert!(
        std::fs::read(&merged).expect("merged package") == expected,
        "the merged package differs from the unsharded one"
    );

    // Refusals: one clear error naming the problem, and no output.
    let out = dir.join("refused.ntc");
    let merge = |parts: &[&PathBuf], needles: &[&str]| {
        let mut args = vec!["merge"];
        args.extend(parts.iter().map(|p| s(p)));
        args.extend(["--out", s(&out)]);
        fails(&args, &[], needles);
        assert!(!out.exists(), "merge wrote {} for {parts:?}", out.display());
    };
    merge(&[&p0, &p2], &["missing", "shard 1/3 (groups 3)"]);
    merge(&[&p0, &p1, &p1, &p2], &["p1.ntcpart", "both shard 1/3"]);
    // A part of another plan: the same command with another seed.
    let other = dir.join("other.ntcpart");
    let mut args = plan.args(&other, &["--shard", "1/3"]);
    let seed = args.iter().position(|a| *a == "--seed").expect("seed") + 1;
    args[seed] = "4";
    ok(&args, &[]);
    merge(
        &[&p0, &other, &p2],
        &["other.ntcpart", "another plan", "p0.ntcpart"],
    );
    // A damaged part.
    let mut bytes = std::fs::read(&p1).expect("part");
    let n = bytes.len();
    bytes[n / 2] ^= 0x10;
    let damaged = dir.join("damaged.ntcpart");
    std::fs::write(&damaged, &bytes).expect("write");
    merge(&[&p0, &damaged, &p2], &["damaged.ntcpart", "checksum"]);
    merge(&[&p0, &whole, &p2], &["whole.ntc", "NTCPART"]);
    // Never over an input.
    fails(
        &["merge", s(&p0), s(&p1), s(&p2), "--out", s(&p1)],
        &[],
        &["p1.ntcpart", "input"],
    );
    std::fs::remove_dir_all(dir).ok();
}

/// The scalar entries of a YAML document in the block style of the job files (maps, lists
/// of maps, plain, quoted and flow scalars on one line, `|` block scalars), as
/// `(path, value)` with path segments joined by `.` and list items as `[i]`. An error for
/// a tab, a line that is none of these, or a block scalar that is not indented.
fn yaml_entries(doc: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    // (indent, segment) of the maps and list items open above the current line.
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut items: std::collections::HashMap<String, usize> = Default::default();
    // An open block scalar: (its key's indent, path, text).
    let mut block: Option<(usize, String, String)> = None;
    let path = |stack: &[(usize, String)], last: &str| {
        let mut p: Vec<&str> = stack.iter().map(|(_, s)| s.as_str()).collect();
        p.push(last);
        p.join(".")
    };
    for (n, raw) in doc.lines().enumerate() {
        let line_no = n + 1;
        if raw.contains('\t') {
            return Err(format!("line {line_no}: a tab"));
        }
        let mut indent = raw.len() - raw.trim_start().len();
        let line = raw.trim();
        if let Some((key_indent, p, text)) = &mut block {
            if line.is_empty() || indent > *key_indent {
                text.push_str(line);
                text.push('\n');
                continue;
            }
            if text.is_empty() {
                return Err(format!("line {line_no}: an empty block scalar"));
            }
            out.push((p.clone(), std::mem::take(text)));
            block = None;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut rest = line;
        if let Some(item) = rest.strip_prefix("- ") {
            while stack.last().is_some_and(|(i, _)| *i >= indent) {
                stack.pop();
            }
            let parent = path(&stack, "");
            let index = items.entry(parent).or_insert(0);
            stack.push((indent, format!("[{index}]")));
            *index += 1;
            indent += 2;
            rest = item.trim_start();
            if rest == "|" {
                block = Some((
                    indent - 2,
                    path(&stack[..stack.len() - 1], &stack[stack.len() - 1].1),
                    String::new(),
                ));
                continue;
            }
        }
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        let (key, value) = rest.split_once(':').ok_or_else(|| {
            format!("line {line_no}: neither `key: value` nor a list item: {raw}")
        })?;
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
        {
            return Err(format!("line {line_no}: bad key `{key}`"));
        }
        if !value.is_empty() && !value.starts_with(' ') {
            return Err(format!("line {line_no}: no space after `{key}:`"));
        }
        match value.trim() {
            "" => stack.push((indent, key.to_string())),
            "|" => block = Some((indent, path(&stack, key), String::new())),
            v => out.push((path(&stack, key), v.trim_matches('"').to_string())),
        }
    }
    if let Some((_, p, text)) = block {
        out.push((p, text));
    }
    Ok(out)
}

/// The `neurotex <sub>` invocation of a script (not of its comments): its first line and
/// the lines it continues onto with a backslash.
fn invocation(text: &str, sub: &str) -> String {
    let calls = [format!("neurotex {sub} "), format!("\"$NEUROTEX\" {sub} ")];
    let mut out = String::new();
    for line in text.lines().skip_while(|l| {
        let t = l.trim_start();
        t.starts_with('#') || !calls.iter().any(|c| t.contains(c.as_str()))
    }) {
        out.push_str(line);
        out.push('\n');
        if !line.trim_end().ends_with('\\') {
            break;
        }
    }
    assert!(!out.is_empty(), "no `neurotex {sub}` in {text}");
    out
}

/// Every `--flag` of `args` is one of `neurotex <sub>`'s options.
fn assert_flags_exist(sub: &str, args: &str) {
    let help = ok(&[sub, "--help"], &[]);
    for flag in args
        .split(|c: char| c.is_whitespace() || c == '"')
        .filter(|w| w.starts_with("--"))
    {
        assert!(
            help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
            "`neurotex {sub}` has no option {flag}"
        );
    }
}

/// One sharded job's files in `docs/scaling/` and what they must hold.
struct JobFiles {
    /// `JOB` of `slurm-submit.sh` and the prefix of its Slurm scripts
    /// (`<prefix>-shard.sbatch`, `<prefix>-merge.sbatch`).
    job: &'static str,
    prefix: &'static str,
    /// The Kubernetes manifest.
    kubernetes: &'static str,
    /// The subcommand a shard runs and the one that merges.
    shard_command: &'static str,
    merge_command: &'static str,
    /// What a Slurm task writes, what the merge loop reads, what a pod writes.
    slurm_output: &'static str,
    slurm_merged: &'static str,
    pod_output: &'static str,
    /// The merge's list of the N shards' outputs, from N - 1.
    merged: fn(u32) -> String,
}

/// Check one job's files (see [`JobFiles`]).
fn check_job_files(job: &JobFiles) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scaling");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).expect(name);
    let shard_file = format!("{}-shard.sbatch", job.prefix);
    let merge_file = format!("{}-merge.sbatch", job.prefix);

    // Slurm: the scripts parse (bash -n); an array of SHARDS tasks with auto/SHARDS,
    // then the merge once every task succeeded.
    for name in ["slurm-submit.sh", &shard_file, &merge_file] {
        let status = Command::new("bash")
            .arg("-n")
            .arg(dir.join(name))
            .status()
            .expect("run bash");
        assert!(status.success(), "{name} does not parse");
    }
    let submit = read("slurm-submit.sh");
    assert!(submit.contains(&format!("    {}) prefix={} ;;", job.job, job.prefix)));
    assert!(submit.contains("--array=0-$((SHARDS - 1)) \"$here/$prefix-shard.sbatch\""));
    assert!(submit.contains("--dependency=afterok:\"$array\" \"$here/$prefix-merge.sbatch\""));
    let shard = read(&shard_file);
    let command = invocation(&shard, job.shard_command);
    assert!(command.contains("--shard \"auto/${SHARDS}\""), "{command}");
    assert!(command.contains("--deterministic") && command.contains("--resume"));
    assert!(shard.contains(job.slurm_output), "{shard_file}");
    assert_flags_exist(job.shard_command, &command);
    let merge = read(&merge_file);
    assert!(merge.contains("i < SHARDS") && merge.contains(job.slurm_merged));
    assert_flags_exist(job.merge_command, &invocation(&merge, job.merge_command));

    // Kubernetes: an Indexed Job of N pods with one GPU each running shard
    // JOB_COMPLETION_INDEX of auto/N, and a merge Job of the N outputs.
    let yaml = read(job.kubernetes);
    let docs: Vec<Vec<(String, String)>> = yaml
        .split("\n---\n")
        .map(|d| yaml_entries(d).unwrap_or_else(|e| panic!("{}: {e}", job.kubernetes)))
        .collect();
    assert_eq!(docs.len(), 2, "the shards and the merge");
    let get = |doc: &[(String, String)], key: &str| -> String {
        doc.iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no `{key}` in {doc:?}"))
    };
    let (shards, merge) = (&docs[0], &docs[1]);
    for doc in &docs {
        assert_eq!(get(doc, "apiVersion"), "batch/v1");
        assert_eq!(get(doc, "kind"), "Job");
        assert_eq!(get(doc, "spec.template.spec.restartPolicy"), "Never");
        assert_eq!(
            get(
                doc,
                "spec.template.spec.volumes.[0].persistentVolumeClaim.claimName"
            ),
            "neurotex-data"
        );
    }
    assert_eq!(get(shards, "spec.completionMode"), "Indexed");
    let n: u32 = get(shards, "spec.completions")
        .parse()
        .expect("completions");
    let parallelism: u32 = get(shards, "spec.parallelism")
        .parse()
        .expect("parallelism");
    assert!((1..=n).contains(&parallelism));
    let pod = "spec.template.spec.containers.[0]";
    assert_eq!(
        get(shards, &format!("{pod}.resources.limits.nvidia.com/gpu")),
        "1"
    );
    let script = get(shards, &format!("{pod}.args.[0]"));
    assert!(script.contains(job.pod_output), "{script}");
    let command = invocation(&script, job.shard_command);
    assert!(command.contains(&format!("--shard auto/{n} ")), "{command}");
    assert_flags_exist(job.shard_command, &command);
    let script = get(merge, &format!("{pod}.args.[0]"));
    let merge_args = invocation(&script, job.merge_command);
    assert!(merge_args.contains(&(job.merged)(n - 1)), "{merge_args}");
    assert_flags_exist(job.merge_command, &merge_args);
    let wait = get(merge, "spec.template.spec.initContainers.[0].args.[0]");
    assert!(wait.contains(&format!("-ge {n} ]]")), "{wait}");
}

#[test]
fn the_scaling_job_files_are_well_formed() {
    check_job_files(&JobFiles {
        job: "compress",
        prefix: "slurm",
        kubernetes: "kubernetes-compress.yaml",
        shard_command: "compress",
        merge_command: "merge",
        slurm_output: "part-${SLURM_ARRAY_TASK_ID}.ntcpart",
        slurm_merged: "part-$i.ntcpart",
        pod_output: "part-${JOB_COMPLETION_INDEX}.ntcpart",
        merged: |last| format!("part-{{0..{last}}}.ntcpart --out"),
    });
    // The evaluation: shard folders, merged by `eval --merge`.
    check_job_files(&JobFiles {
        job: "eval",
        prefix: "slurm-eval",
        kubernetes: "kubernetes-eval.yaml",
        shard_command: "eval",
        merge_command: "eval",
        slurm_output: "shard-${SLURM_ARRAY_TASK_ID}\"",
        slurm_merged: "shard-$i\"",
        pod_output: "shard-${JOB_COMPLETION_INDEX}\n",
        merged: |last| format!("--merge /data/eval/shard-{{0..{last}}} --resume --out"),
    });

    // The reader itself refuses what it does not understand.
    assert!(yaml_entries("a:\n\tb: 1").is_err());
    assert!(yaml_entries("a:\n  just words").is_err());
    assert!(yaml_entries("a:b").is_err());
    assert_eq!(
        yaml_entries("a:\n  - b: 1\n    c: x:y\n  - b: 2\nd: |\n  text\n").unwrap(),
        [
            ("a.[0].b", "1"),
            ("a.[0].c", "x:y"),
            ("a.[1].b", "2"),
            ("d", "text\n"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    );
}
