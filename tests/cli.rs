//! The command line as other tools see it: exit codes, JSON fields, and one
//! clear message (never a panic) for every kind of bad input.

mod common;
use common::{assert_bad_input, leasehold, root, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Output;

fn temp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasehold-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// friday-rush with one edit applied to its JSON.
fn edited(name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let text = std::fs::read_to_string(root().join("scenarios/friday-rush.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(&mut v);
    temp(name, &serde_json::to_string_pretty(&v).unwrap())
}

fn run_path(p: &Path) -> Output {
    leasehold(&["run", p.to_str().unwrap(), "--seed", "1"])
}

#[test]
fn run_json_has_the_contract_fields() {
    let o = leasehold(&["run", "scenarios/friday-rush.json", "--seed", "3", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    for field in [
        "scenario",
        "seed",
        "variant",
        "ok",
        "violations",
        "trace_hash",
        "events",
        "sim_time_ms",
        "store_reads",
        "store_writes",
        "heartbeat_writes",
        "tasks_total",
        "tasks_done",
        "faults",
        "fault_mix",
    ] {
        assert!(v.get(field).is_some(), "missing {field}");
    }
    assert_eq!(v["ok"], true);
    assert_eq!(v["variant"], "correct");
    assert_eq!(v["tasks_done"], v["tasks_total"]);
}

#[test]
fn a_violation_exits_1_with_invariant_seed_and_replay_command() {
    let o = leasehold(&[
        "run",
        "scenarios/reclaimer-crash.json",
        "--seed",
        "1",
        "--variant",
        "no-idempotency-key",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("VIOLATION exactly-once-effects"), "{out}");
    assert!(out.contains("seed 1"), "{out}");
    assert!(
        out.contains("replay: leasehold run scenarios/reclaimer-crash.json --seed 1 --variant no-idempotency-key"),
        "{out}"
    );
    let j = leasehold(&[
        "run",
        "scenarios/reclaimer-crash.json",
        "--seed",
        "1",
        "--variant",
        "no-idempotency-key",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(stdout(&j).trim()).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["violations"][0]["invariant"], "exactly-once-effects");
}

#[test]
fn sweep_reports_failing_seeds_and_summary() {
    let o = leasehold(&[
        "sweep",
        "scenarios/reclaimer-crash.json",
        "--seeds",
        "1..3",
        "--variant",
        "no-idempotency-key",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap();
    assert_eq!(v["seeds"], 3);
    assert!(v["failed"].as_u64().unwrap() >= 1);
    assert!(v["failures"][0]["seed"].is_u64());
    assert!(v["failures"][0]["invariants"].is_array());
    assert!(v["seeds_per_sec"].as_f64().unwrap() > 0.0);
    // The throughput figures docs/performance.md documents for sweeps.
    assert!(v["events_per_sec"].as_f64().unwrap() > 0.0);
    assert!(v["sim_time_s"].as_f64().unwrap() > 0.0);
    assert!(v["time_compression"].as_f64().unwrap() > 0.0);
    assert!(
        v.get("peak_rss_bytes").is_some(),
        "peak_rss_bytes: a number, or null off Linux"
    );
    let ok = leasehold(&["sweep", "scenarios/email-campaign.json", "--seeds", "1..5"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    assert!(stdout(&ok).contains("seeds/s"));
    assert!(stdout(&ok).contains("x time compression, peak memory"));
}

#[test]
fn trace_replays_identically_and_a_tampered_one_diverges() {
    let path = std::env::temp_dir().join(format!("leasehold-trace-{}.jsonl", std::process::id()));
    let p = path.to_str().unwrap();
    let o = leasehold(&[
        "run",
        "scenarios/ml-batch.json",
        "--seed",
        "4",
        "--trace",
        p,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = leasehold(&["replay", p]);
    assert_eq!(r.status.code(), Some(0), "{}{}", stdout(&r), stderr(&r));
    assert!(stdout(&r).contains("identical"));
    // Change one event: replay names the line.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let victim = lines
        .iter()
        .position(|l| l.contains("\"kind\":\"store\""))
        .unwrap();
    lines[victim] = lines[victim].replacen("\"time_us\":", "\"time_us\":1", 1);
    let tampered = temp("tampered.jsonl", &(lines.join("\n") + "\n"));
    let r = leasehold(&["replay", tampered.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        stdout(&r).contains(&format!("line {}", victim + 1)),
        "{}",
        stdout(&r)
    );
    // Not a trace at all.
    let junk = temp("junk.jsonl", "hello\n");
    assert_bad_input(&leasehold(&["replay", junk.to_str().unwrap()]), &["line 1"]);
    let mut cut = text.lines().collect::<Vec<_>>();
    cut.pop();
    let truncated = temp("truncated.jsonl", &cut.join("\n"));
    assert_bad_input(
        &leasehold(&["replay", truncated.to_str().unwrap()]),
        &["truncated"],
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn check_determinism_passes() {
    let o = leasehold(&[
        "run",
        "scenarios/friday-rush.json",
        "--seed",
        "9",
        "--check-determinism",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["deterministic"], true);
}

#[test]
fn malformed_scenarios_name_the_field() {
    assert_bad_input(&run_path(&temp("not-json.json", "{ nope")), &["line 1"]);
    assert_bad_input(
        &run_path(&edited("missing.json", |v| {
            v["fleet"].as_object_mut().unwrap().remove("workers");
        })),
        &["workers"],
    );
    assert_bad_input(
        &run_path(&edited("unknown.json", |v| v["fleet"]["wokers"] = 3.into())),
        &["wokers"],
    );
    assert_bad_input(
        &run_path(&edited("zero.json", |v| v["fleet"]["workers"] = 0.into())),
        &["fleet.workers"],
    );
    assert_bad_input(
        &run_path(&edited("range.json", |v| {
            v["faults"]["pause"]["duration_ms"] = serde_json::json!([9000, 10])
        })),
        &["faults.pause.duration_ms"],
    );
    assert_bad_input(
        &run_path(&edited("prob.json", |v| {
            v["faults"]["crash"]["per_step"] = serde_json::json!([0.1, 1.5])
        })),
        &["faults.crash.per_step"],
    );
    assert_bad_input(
        &run_path(&edited("lease.json", |v| {
            v["protocol"]["lease_timeout_ms"] = 5000.into()
        })),
        &["protocol.lease_timeout_ms"],
    );
    // A drift bound so large the self-fencing margin eats the lease.
    assert_bad_input(
        &run_path(&edited("drift.json", |v| {
            v["protocol"]["lease_timeout_ms"] = 7000.into();
            v["faults"]["clock"]["drift_ppm"] = serde_json::json!([0, 90000]);
        })),
        &["faults.clock.drift_ppm"],
    );
    assert_bad_input(
        &run_path(&edited("idle.json", |v| {
            v["protocol"]["idle_poll_max_ms"] = 500.into()
        })),
        &["protocol.idle_poll_max_ms"],
    );
    // Drawn per step in microseconds from 32 bits: at most ~71 minutes wide.
    assert_bad_input(
        &run_path(&edited("wide.json", |v| {
            v["faults"]["pause"]["duration_ms"] = serde_json::json!([1000, 5000000])
        })),
        &["faults.pause.duration_ms"],
    );
    assert_bad_input(
        &run_path(&edited("jump.json", |v| {
            v["faults"]["clock"]["jump_ms_max"] = 3000000.into()
        })),
        &["faults.clock.jump_ms_max"],
    );
    assert_bad_input(
        &run_path(&edited("ghost.json", |v| {
            v["faults"]["scheduled"] =
                serde_json::json!([{"kind": "crash", "at_ms": 1000, "node": "worker-99"}]);
        })),
        &["faults.scheduled[0].node"],
    );
    assert_bad_input(
        &run_path(&edited("late.json", |v| {
            v["faults"]["scheduled"] =
                serde_json::json!([{"kind": "crash", "at_ms": 999999999, "node": "worker-1"}]);
        })),
        &["faults.scheduled[0].at_ms"],
    );
    assert_bad_input(
        &run_path(&edited("step.json", |v| {
            v["tasks"]["steps"] = serde_json::json!(["payment", "teleport"])
        })),
        &["tasks.steps[1]"],
    );
    assert_bad_input(
        &leasehold(&["run", "/nonexistent/x.json"]),
        &["/nonexistent/x.json"],
    );
}

#[test]
fn bad_flags_exit_2() {
    assert_bad_input(
        &leasehold(&["run", "scenarios/friday-rush.json", "--variant", "nope"]),
        &["unknown variant \"nope\""],
    );
    assert_bad_input(
        &leasehold(&["sweep", "scenarios/friday-rush.json", "--seeds", "9..1"]),
        &["--seeds"],
    );
    assert_bad_input(
        &leasehold(&["sweep", "scenarios/friday-rush.json", "--seeds", "x"]),
        &["--seeds"],
    );
    let o = leasehold(&["run", "scenarios/friday-rush.json", "--seed", "-4"]);
    assert_eq!(o.status.code(), Some(2));
    assert_bad_input(
        &leasehold(&["hunt", "--scenarios", "atlantis"]),
        &["atlantis"],
    );
    assert_bad_input(&leasehold(&["hunt", "--budget", "0"]), &["--budget"]);
}

#[test]
fn lists_variants_and_scenarios() {
    let o = leasehold(&["variants", "--json"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let variants = v["variants"].as_array().unwrap();
    assert!(
        variants.len() >= 15,
        "correct plus at least 14 planted bugs"
    );
    assert!(
        variants
            .iter()
            .all(|x| x["description"].is_string() && x["mirrors"].is_string())
    );
    let s = leasehold(&["scenarios"]);
    assert_eq!(s.status.code(), Some(0));
    for name in [
        "friday-rush",
        "ride-share",
        "payments",
        "ml-batch",
        "email-campaign",
        "gc-pause-zombie",
        "clock-skew",
        "partitioned-worker",
        "ambiguous-claim",
        "reclaimer-crash",
        "hung-step",
        "rolling-deploy",
        "mass-failure",
    ] {
        assert!(stdout(&s).contains(name), "{name} missing");
    }
}

#[test]
fn sweep_shrink_into_a_missing_directory_is_bad_input_before_anything_runs() {
    let missing = std::env::temp_dir().join(format!(
        "leasehold-no-such-dir-{}/failures",
        std::process::id()
    ));
    let o = leasehold(&[
        "sweep",
        "scenarios/gc-pause-zombie.json",
        "--seeds",
        "1..2",
        "--variant",
        "no-self-fencing",
        "--shrink",
        "--shrink-dir",
        missing.to_str().unwrap(),
        "--progress",
        "off",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--shrink-dir"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "nothing swept: {}", stdout(&o));
}

#[test]
fn sweep_shrink_writes_a_failure_file_per_failing_seed_that_replays() {
    let dir = std::env::temp_dir().join(format!("leasehold-sweep-shrink-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = leasehold(&[
        "sweep",
        "scenarios/gc-pause-zombie.json",
        "--seeds",
        "1..2",
        "--variant",
        "no-self-fencing",
        "--shrink",
        "--shrink-dir",
        dir.to_str().unwrap(),
        "--progress",
        "off",
    ]);
    assert_eq!(o.status.code(), Some(1));
    for seed in [1, 2] {
        let file = dir.join(format!(
            "gc-pause-zombie-seed{seed}-no-self-fencing.failure.json"
        ));
        assert!(file.exists(), "{}", stderr(&o));
        let r = leasehold(&["replay", file.to_str().unwrap()]);
        assert_eq!(r.status.code(), Some(1), "{}", stdout(&r));
        assert!(
            stdout(&r).starts_with("reproduced: acts-within-lease"),
            "{}",
            stdout(&r)
        );
    }
}

/// Output paths are proved writable before the work that fills them.
#[test]
fn output_paths_in_missing_directories_are_bad_input_before_any_work() {
    let missing = std::env::temp_dir().join(format!("leasehold-missing-{}", std::process::id()));
    let svg = missing.join("timeline.svg");
    let o = leasehold(&[
        "export",
        "scenarios/regressions/reused-identity.failure.json",
        "--format",
        "svg",
        "--out",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("error: --out ") && stderr(&o).contains("does not exist"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));

    let md = missing.join("kills.md");
    let o = leasehold(&["hunt", "--budget", "1", "--markdown", md.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("error: --markdown "),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty(), "no hunt ran: {}", stdout(&o));
}

#[test]
fn flags_that_do_nothing_alone_or_take_negative_numbers_are_named() {
    // --shrink-dir without --shrink would be ignored: refuse it.
    let o = leasehold(&[
        "sweep",
        "scenarios/gc-pause-zombie.json",
        "--seeds",
        "1..2",
        "--shrink-dir",
        ".",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--shrink"), "{}", stderr(&o));

    for args in [
        &["run", "scenarios/gc-pause-zombie.json", "--seed", "-1"][..],
        &["hunt", "--budget", "-1"],
        &["hunt", "--jobs", "-1"],
        &[
            "sweep",
            "scenarios/gc-pause-zombie.json",
            "--seeds",
            "1..2",
            "--jobs",
            "-1",
        ],
    ] {
        let o = leasehold(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let flag = args[args.len() - 2];
        assert!(stderr(&o).contains(flag), "{args:?}: {}", stderr(&o));
    }

    let o = leasehold(&["hunt", "--variants", "correct,nope"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("error: --variants: unknown variant \"nope\""),
        "{}",
        stderr(&o)
    );
}

#[cfg(target_os = "linux")]
#[test]
fn an_unwritable_stdout_is_one_clear_line_not_a_silent_panic() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full exists on Linux");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .arg("variants")
        .current_dir(root())
        .stdout(full)
        .output()
        .expect("the binary runs");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o).trim(),
        "error: cannot write to standard output: No space left on device (os error 28)"
    );
}

#[test]
fn argument_errors_are_one_line_naming_the_flag() {
    for (args, needle) in [
        (&["sweep", "scenarios/gc-pause-zombie.json"][..], "--seeds"),
        (
            &[
                "sweep",
                "scenarios/gc-pause-zombie.json",
                "--seeds",
                "-1..2",
            ],
            "--seeds",
        ),
        (
            &[
                "sweep",
                "scenarios/gc-pause-zombie.json",
                "--seeds",
                "1..2",
                "--progress",
                "nope",
            ],
            "--progress",
        ),
        (
            &["run", "scenarios/gc-pause-zombie.json", "--seed", "abc"],
            "--seed",
        ),
        (&["variants", "--bogus"], "--bogus"),
    ] {
        let o = leasehold(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("error: "),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn an_output_that_is_the_input_is_refused_and_the_input_kept() {
    let dir = std::env::temp_dir().join(format!("leasehold-out-is-in-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("zombie.json");
    let original = std::fs::read(root().join("scenarios/gc-pause-zombie.json")).unwrap();
    std::fs::write(&scenario, &original).unwrap();
    let scn = scenario.to_str().unwrap();
    for args in [
        &["run", scn, "--trace", scn][..],
        &["shrink", scn, "--seed", "1", "--out", scn],
        &["sweep", scn, "--seeds", "1..2", "--out", scn],
        &["sweep", scn, "--seeds", "1..2", "--junit", scn],
        // hunt reads every scenario of --dir.
        &[
            "hunt",
            "--dir",
            dir.to_str().unwrap(),
            "--budget",
            "1",
            "--markdown",
            scn,
        ],
    ] {
        let o = leasehold(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("is the input file"), "{}", stderr(&o));
        assert_eq!(std::fs::read(&scenario).unwrap(), original, "{args:?}");
    }
    // A results file is an input too: of merge, and of a sweep's --resume.
    let results = dir.join("results.jsonl");
    let res = results.to_str().unwrap();
    let o = leasehold(&[
        "sweep", scn, "--seeds", "1..2", "--out", res, "--junit", res,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!results.exists(), "nothing written");
    let o = leasehold(&["sweep", scn, "--seeds", "1..2", "--out", res]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let written = std::fs::read(&results).unwrap();
    let o = leasehold(&["merge", res, "--junit", res]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is the input file"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&results).unwrap(), written);
}

#[cfg(target_os = "linux")]
#[test]
fn help_to_an_unwritable_stdout_is_an_error() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full exists on Linux");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .arg("--help")
        .stdout(full)
        .output()
        .expect("the binary runs");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("error: cannot write to standard output"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn hunt_json_is_one_json_document_even_when_a_bug_escapes() {
    // One seed of friday-rush: `no-self-fencing` survives it (a planted bug
    // that escapes), so hunt exits 1 and has an ESCAPED line to say.
    let o = leasehold(&[
        "hunt",
        "--scenarios",
        "friday-rush",
        "--variants",
        "correct,no-self-fencing",
        "--budget",
        "1",
        "--jobs",
        "1",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", stdout(&o)));
    assert_eq!(v["variants"][1]["variant"], "no-self-fencing");
    assert_eq!(v["variants"][1]["caught"], false);
    assert!(
        stderr(&o).contains("ESCAPED: planted bug no-self-fencing survived 1 runs"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_printed_replay_command_pastes_into_a_shell_even_with_a_space_in_the_path() {
    let text = std::fs::read_to_string(root().join("scenarios/gc-pause-zombie.json")).unwrap();
    let path = temp("with space.json", &text);
    let o = leasehold(&[
        "run",
        path.to_str().unwrap(),
        "--seed",
        "1",
        "--variant",
        "no-self-fencing",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let quoted = format!("'{}'", path.display());
    assert!(
        stdout(&o).contains(&format!(
            "replay: leasehold run {quoted} --seed 1 --variant no-self-fencing"
        )),
        "{}",
        stdout(&o)
    );
}

/// Every argument and flag of every command says what it is in `--help`.
#[test]
fn every_argument_has_help_text() {
    let o = leasehold(&["--help"]);
    let top = stdout(&o);
    let commands: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 10, "{top}");
    for command in &commands {
        let o = leasehold(&[command, "--help"]);
        let help = stdout(&o);
        let lines: Vec<&str> = help.lines().collect();
        let indent = |l: &str| l.len() - l.trim_start().len();
        for (i, line) in lines.iter().enumerate() {
            let item = line.trim_start();
            // Items sit at most 6 columns in; deeper lines are their text.
            let is_item =
                (item.starts_with("--") || item.starts_with('<') || item.starts_with("-h"))
                    && (2..=6).contains(&indent(line));
            // Its text follows after two spaces, or (clap's long layout) on
            // the next line, indented deeper.
            let inline = item.trim_end().contains("  ");
            let below = lines.get(i + 1).is_some_and(|next| {
                let text = next.trim_start();
                indent(next) > indent(line)
                    && !text.is_empty()
                    && !text.starts_with('-')
                    && !text.starts_with('<')
            });
            if is_item && !inline && !below {
                panic!("{command}: no help for `{item}`:\n{help}");
            }
        }
    }
}

/// A scratch directory of this test process, emptied first.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasehold-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The lines of the file `flag` writes when the buggy variant runs on
/// gc-pause-zombie with `args` (it fails: exit 1).
fn written_lines(path: &Path, args: &[&str], flag: &str) -> Vec<String> {
    let mut all = args.to_vec();
    all.extend([
        "scenarios/gc-pause-zombie.json",
        "--variant",
        "no-self-fencing",
        flag,
        path.to_str().unwrap(),
    ]);
    let o = leasehold(&all);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(str::to_string).collect()
}

/// `line` with its (compact) `"key":value` given twice, the second time
/// as `again`.
fn twice(line: &str, key: &str, again: &str) -> String {
    let start = line.find(&format!("\"{key}\":")).unwrap();
    line.replacen(
        &line[start..start + key.len() + 3],
        &format!("\"{key}\":{again},\"{key}\":"),
        1,
    )
}

#[test]
fn a_key_given_twice_is_refused_in_failure_trace_and_results_files() {
    let dir = scratch("duplicate-keys");
    let failure =
        std::fs::read_to_string(root().join("scenarios/regressions/no-self-fencing.failure.json"))
            .unwrap();
    let dup = dir.join("dup.failure.json");
    std::fs::write(
        &dup,
        failure.replace(
            "\"variant\": \"no-self-fencing\"",
            "\"variant\": \"no-self-fencing\", \"variant\": \"correct\"",
        ),
    )
    .unwrap();
    assert_bad_input(
        &leasehold(&["replay", dup.to_str().unwrap()]),
        &["line ", "duplicate field \"variant\""],
    );

    let trace = dir.join("run.jsonl");
    let lines = written_lines(&trace, &["run", "--seed", "1"], "--trace");
    let end = lines.len();
    for (at, key, again) in [(1, "variant", "\"correct\""), (end, "ok", "true")] {
        let mut edited = lines.clone();
        edited[at - 1] = twice(&edited[at - 1], key, again);
        std::fs::write(&trace, edited.join("\n") + "\n").unwrap();
        for command in ["replay", "explain"] {
            assert_bad_input(
                &leasehold(&[command, trace.to_str().unwrap()]),
                &[&format!("line {at}: duplicate field \"{key}\"")],
            );
        }
    }

    let results = dir.join("results.jsonl");
    let mut lines = written_lines(
        &results,
        &["sweep", "--seeds", "1..2", "--progress", "off"],
        "--out",
    );
    lines[1] = twice(&lines[1], "ok", "true");
    std::fs::write(&results, lines.join("\n") + "\n").unwrap();
    assert_bad_input(
        &leasehold(&["merge", results.to_str().unwrap()]),
        &["line 2: duplicate field \"ok\""],
    );
}

#[test]
fn an_array_for_an_object_or_a_number_for_a_tag_is_refused_not_read_by_position() {
    // Each object as the array serde's derive reads by position.
    let positional = |v: &serde_json::Value, keys: &[&str]| -> serde_json::Value {
        keys.iter().map(|k| v[k].clone()).collect()
    };
    let restarts = [
        "rolling_deploy_at_ms",
        "rolling_interval_ms",
        "mass_failure_at_ms",
        "mass_failure_share",
    ];
    let fleet = ["workers", "reclaimers", "slots_per_worker"];
    for field in ["fleet", "limits", "faults.restarts"] {
        let path = edited(&format!("array-{field}.json"), |v| match field {
            "fleet" => v["fleet"] = positional(&v["fleet"], &fleet),
            // Read as max_sim_time_ms and max_events: 5 events.
            "limits" => v["limits"] = serde_json::json!([21600000, 5]),
            _ => v["faults"]["restarts"] = positional(&v["faults"]["restarts"], &restarts),
        });
        assert_bad_input(
            &run_path(&path),
            &[&format!("{field}: expected an object, found an array")],
        );
    }
    let path = temp("array-top.json", "[\"x\", \"y\"]");
    assert_bad_input(
        &run_path(&path),
        &["expected a JSON object (a scenario), found an array"],
    );
    let text =
        std::fs::read_to_string(root().join("scenarios/regressions/reclaim-by-id.failure.json"))
            .unwrap();
    let failure: serde_json::Value = serde_json::from_str(&text).unwrap();
    type Edit = fn(&mut serde_json::Value);
    let edits: [(Edit, &str); 4] = [
        (
            |v| v["plan"][0]["action"]["action"] = 0.into(),
            "plan[0].action.action: expected a string",
        ),
        (
            |v| v["plan"][1]["point"]["at"] = 1.into(),
            "plan[1].point.at: expected a string",
        ),
        (
            |v| v["plan"][0]["leg"] = 1.into(),
            "plan[0].leg: invalid type: integer",
        ),
        (
            |v| {
                let keys = ["workers", "reclaimers", "slots_per_worker", "worker_ids"];
                let fleet = &v["scenario"]["fleet"];
                v["scenario"]["fleet"] = keys.iter().map(|k| fleet[k].clone()).collect();
            },
            "scenario.fleet: expected an object, found an array",
        ),
    ];
    for (edit, needle) in edits {
        let mut v = failure.clone();
        edit(&mut v);
        let path = temp(
            "edited.failure.json",
            &serde_json::to_string_pretty(&v).unwrap(),
        );
        assert_bad_input(&leasehold(&["replay", path.to_str().unwrap()]), &[needle]);
    }
}

#[test]
fn hunt_jobs_has_the_same_bound_and_message_as_sweep() {
    for jobs in ["0", "1025", "4294967296"] {
        let sweep = leasehold(&[
            "sweep",
            "scenarios/gc-pause-zombie.json",
            "--seeds",
            "1..2",
            "--jobs",
            jobs,
        ]);
        let hunt = leasehold(&["hunt", "--budget", "1", "--jobs", jobs]);
        assert_bad_input(
            &hunt,
            &[&format!("--jobs: {jobs} is not between 1 and 1024")],
        );
        assert_eq!(stderr(&hunt), stderr(&sweep));
    }
}

#[test]
fn an_output_hard_linked_to_the_input_is_refused_and_the_input_kept() {
    let dir = scratch("hard-link");
    let input = dir.join("in.json");
    let original = std::fs::read(root().join("scenarios/gc-pause-zombie.json")).unwrap();
    std::fs::write(&input, &original).unwrap();
    let link = dir.join("link.json");
    std::fs::hard_link(&input, &link).unwrap();
    let (scn, out) = (input.to_str().unwrap(), link.to_str().unwrap());
    for args in [
        &["run", scn, "--seed", "1", "--trace", out][..],
        &["sweep", scn, "--seeds", "1..2", "--out", out],
    ] {
        assert_bad_input(&leasehold(args), &["is the input file"]);
        assert_eq!(std::fs::read(&input).unwrap(), original, "{args:?}");
    }
}

#[test]
fn a_scenario_name_that_is_not_a_plain_file_name_still_names_a_file_in_its_directory() {
    // A name is free text (it reads in reports), but shrink names its
    // default output after it: that file must land in the working
    // directory, whatever the name holds.
    let text = std::fs::read_to_string(root().join("scenarios/gc-pause-zombie.json")).unwrap();
    let mut scenario: serde_json::Value = serde_json::from_str(&text).unwrap();
    for (i, (name, part)) in [
        ("../escaped", "_.-escaped"),
        ("a/b", "a-b"),
        (".", "_"),
        ("..", "_."),
        (".hidden", "_hidden"),
        ("-rf", "_rf"),
        ("two words", "two-words"),
        ("a\\b", "a-b"),
    ]
    .into_iter()
    .enumerate()
    {
        let dir = scratch(&format!("names-{i}"));
        scenario["name"] = name.into();
        let written = shrink_in(&dir, &scenario);
        assert_eq!(
            written,
            [format!("{part}-seed1-no-self-fencing.failure.json")],
            "{name}"
        );
        assert!(
            !dir.parent()
                .unwrap()
                .join("escaped-seed1-no-self-fencing.failure.json")
                .exists(),
            "{name}: written outside its directory"
        );
    }
    scenario["name"] = "x".repeat(300).into();
    let written = shrink_in(&scratch("names-long"), &scenario);
    assert_eq!(
        written,
        [format!(
            "{}-seed1-no-self-fencing.failure.json",
            "x".repeat(100)
        )]
    );
}

/// Shrink seed 1 of `scenario` under no-self-fencing (it fails) with `dir`
/// as the working directory; the names of the files it wrote there.
fn shrink_in(dir: &Path, scenario: &serde_json::Value) -> Vec<String> {
    let path = temp(
        "named.json",
        &serde_json::to_string_pretty(scenario).unwrap(),
    );
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(["shrink", path.to_str().unwrap(), "--seed", "1"])
        .args(["--variant", "no-self-fencing"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}: {}",
        scenario["name"],
        stderr(&o)
    );
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn an_endless_input_is_refused_with_its_bound_not_read_until_killed() {
    // A NUL is no text: the read stops at the first byte.
    let nul = "/dev/zero: line 1 column 1: a control character (byte 0x00)";
    for (args, needle) in [
        (&["run", "/dev/zero", "--seed", "1"][..], nul),
        (&["replay", "/dev/zero"], nul),
        (&["explain", "/dev/zero"], nul),
        (&["merge", "/dev/zero"], nul),
    ] {
        assert_bad_input(&leasehold(args), &[needle]);
    }
    // A failure file is held to the whole-file bound once told apart from a
    // trace: one of 65 MiB in short lines is refused.
    let dir = scratch("big-failure");
    let failure =
        std::fs::read_to_string(root().join("scenarios/regressions/no-self-fencing.failure.json"))
            .unwrap();
    let padding = " \n".repeat(33 << 20);
    let big = dir.join("big.failure.json");
    std::fs::write(&big, failure.replacen('{', &format!("{{{padding}"), 1)).unwrap();
    assert_bad_input(
        &leasehold(&["replay", big.to_str().unwrap()]),
        &["big.failure.json: larger than 64 MiB"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_byte_order_mark_or_bytes_that_are_not_utf8_are_named() {
    let text = std::fs::read_to_string(root().join("scenarios/gc-pause-zombie.json")).unwrap();
    let bom = temp("bom.json", &format!("\u{feff}{text}"));
    assert_bad_input(&run_path(&bom), &["line 1: starts with a byte-order mark"]);
    let latin1 = temp("latin1.json", "");
    let mut bytes = text.into_bytes();
    let at = bytes.windows(7).position(|w| w == b"\"story\"").unwrap() + 10;
    bytes[at] = 0xe9;
    std::fs::write(&latin1, &bytes).unwrap();
    assert_bad_input(
        &run_path(&latin1),
        &[
            &format!("not UTF-8 text (byte {at} of the file)"),
            "line 3 column",
        ],
    );
}

#[test]
fn a_huge_or_tiny_number_is_shown_short_in_a_message() {
    for (value, shown) in [(1e300, "1e300"), (-1e-300, "-1e-300"), (2.5, "2.5")] {
        let path = edited("huge.json", |v| {
            v["faults"]["crash"]["per_step"] = serde_json::json!([0, value]);
        });
        let o = run_path(&path);
        assert_bad_input(
            &o,
            &[&format!(
                "faults.crash.per_step: {shown} is not a probability"
            )],
        );
        assert!(stderr(&o).len() < 200, "{}", stderr(&o));
    }
}

#[test]
fn sweep_out_in_a_missing_directory_or_shared_with_junit_is_named_before_any_work() {
    let o = leasehold(&[
        "sweep",
        "scenarios/friday-rush.json",
        "--seeds",
        "1..2",
        "--out",
        "/nonexistent-leasehold-dir/results.jsonl",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o).trim(),
        "error: --out /nonexistent-leasehold-dir/results.jsonl: the directory /nonexistent-leasehold-dir does not exist"
    );
    assert!(stdout(&o).is_empty(), "no sweep ran: {}", stdout(&o));

    let same = scratch("both").join("report");
    let o = leasehold(&[
        "sweep",
        "scenarios/friday-rush.json",
        "--seeds",
        "1..2",
        "--out",
        same.to_str().unwrap(),
        "--junit",
        same.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is also the --out file"),
        "{}",
        stderr(&o)
    );
    assert!(!same.exists(), "nothing written");
}

#[test]
fn a_failure_file_or_trace_given_as_a_scenario_is_named_as_such() {
    let failure = "scenarios/regressions/claim-ack-lost.failure.json";
    for args in [
        vec!["run", failure, "--seed", "1"],
        vec!["sweep", failure, "--seeds", "1..2"],
        vec!["shrink", failure, "--seed", "1"],
    ] {
        let o = leasehold(&args);
        assert_bad_input(&o, &["this is a failure file", "leasehold replay"]);
    }
    // Told by its `format` whatever the spacing or key order: re-serialised
    // compactly on one line, with its keys sorted (`format` no longer first).
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join(failure)).unwrap()).unwrap();
    let mut sorted: Vec<_> = value.as_object().unwrap().iter().collect();
    sorted.sort_by_key(|(k, _)| *k);
    let compact: serde_json::Map<_, _> = sorted
        .into_iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let compact = serde_json::to_string(&compact).unwrap();
    assert!(compact.contains("\"format\":\"leasehold-failure/1\""));
    assert!(!compact.starts_with("{\"format\""), "{}", &compact[..40]);
    let compact = temp("compact.failure.json", &compact);
    let o = leasehold(&["run", compact.to_str().unwrap(), "--seed", "1"]);
    assert_bad_input(&o, &["this is a failure file", "leasehold replay"]);
    let trace = scratch("kind").join("t.jsonl");
    let o = leasehold(&[
        "run",
        "scenarios/friday-rush.json",
        "--seed",
        "1",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = leasehold(&["run", trace.to_str().unwrap(), "--seed", "1"]);
    assert_bad_input(&o, &["this is a trace", "leasehold explain"]);
}

#[test]
fn a_wrong_type_in_a_scenario_names_its_field() {
    // serde_json's text reader says only "expected value" for a number
    // where a name belongs, and a scheduled fault's error points past it.
    let dedup = edited("dedup-number.json", |v| {
        v["services"][0]["dedup"] = 1.into()
    });
    assert_bad_input(&run_path(&dedup), &["services[0].dedup", "integer `1`"]);
    let at = edited("scheduled-at-string.json", |v| {
        v["faults"]["scheduled"] = serde_json::json!([
            {"kind": "pause", "at_ms": "5000", "node": "worker-0", "duration_ms": 1000}
        ])
    });
    assert_bad_input(&run_path(&at), &["faults.scheduled[0].at_ms", "\"5000\""]);
}
