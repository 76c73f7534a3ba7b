//! Issue 38: outputs that never replace what is not theirs, limits that
//! refuse, verdicts nothing can hide, reports that tell the truth. Each test
//! here failed on the code before the fix it names.

mod common;
use common::{assert_bad_input, leasehold, root, stderr, stdout};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A scratch directory of this test process, emptied first.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasehold-rel-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A scenario file in `dir`: the shipped `name` with `edit` applied.
fn edited(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let text = std::fs::read_to_string(root().join(format!("scenarios/{name}.json"))).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(&mut v);
    let path = dir.join(format!("{name}-edited.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    path
}

#[cfg(unix)]
fn is_symlink(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// A character device node of our own in `dir` (the null device: writes
/// vanish), when this process may make one (root); never a node in /dev,
/// which a bug under test could replace.
#[cfg(target_os = "linux")]
fn own_device_node(dir: &Path, name: &str, minor: u32) -> Option<PathBuf> {
    let path = dir.join(name);
    let made = Command::new("mknod")
        .args([s(&path), "c", "1", &minor.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|st| st.success());
    made.then_some(path)
}

#[cfg(target_os = "linux")]
fn is_char_device(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_char_device())
}

/// A failure file of gc-pause-zombie seed 1 under no-self-fencing, shrunk
/// into `dir` (what export and explain read).
fn failure_file(dir: &Path) -> PathBuf {
    let path = dir.join("zombie.failure.json");
    std::fs::copy(
        root().join("scenarios/regressions/no-self-fencing.failure.json"),
        &path,
    )
    .unwrap();
    path
}

// ---------------------------------------------------------------- data safety

/// Every output of every command, pointed at a symlink, writes through it:
/// the link stays a link and its target holds the output.
#[cfg(unix)]
#[test]
fn every_output_writes_through_a_symlink_and_never_replaces_it() {
    let dir = scratch("symlinks");
    let failure = failure_file(&dir);
    let scenario = dir.join("zombie.json");
    std::fs::copy(root().join("scenarios/gc-pause-zombie.json"), &scenario).unwrap();
    let hunt_dir = dir.join("hunt-scenarios");
    std::fs::create_dir_all(&hunt_dir).unwrap();
    std::fs::copy(
        root().join("scenarios/gc-pause-zombie.json"),
        hunt_dir.join("gc-pause-zombie.json"),
    )
    .unwrap();
    let results = dir.join("results.jsonl");
    let o = leasehold(&[
        "sweep",
        s(&scenario),
        "--seeds",
        "1..3",
        "--variant",
        "no-self-fencing",
        "--out",
        s(&results),
        "--progress",
        "off",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let (f, sc, res) = (s(&failure), s(&scenario), s(&results));
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        ("img", vec!["export", f, "--format", "png", "--out"], ""),
        ("a.png", vec!["export", f, "--format", "png", "--out"], ""),
        ("a.svg", vec!["export", f, "--format", "svg", "--out"], ""),
        (
            "p.json",
            vec!["export", f, "--format", "perfetto", "--out"],
            "",
        ),
        ("t.jsonl", vec!["run", sc, "--seed", "1", "--trace"], ""),
        ("o.jsonl", vec!["sweep", sc, "--seeds", "1..2", "--out"], ""),
        ("j.xml", vec!["sweep", sc, "--seeds", "1..2", "--junit"], ""),
        ("m.xml", vec!["merge", res, "--junit"], ""),
        (
            "s.failure.json",
            vec![
                "shrink",
                sc,
                "--seed",
                "1",
                "--variant",
                "no-self-fencing",
                "--out",
            ],
            "",
        ),
        (
            "h.md",
            vec![
                "hunt",
                "--dir",
                s(&hunt_dir),
                "--variants",
                "correct",
                "--budget",
                "1",
                "--markdown",
            ],
            "",
        ),
    ];
    for (name, args, _) in cases {
        let target = dir.join(format!("target-{name}"));
        std::fs::write(&target, b"old").unwrap();
        let link = dir.join(name);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let mut all = args.clone();
        all.push(s(&link));
        let o = leasehold(&all);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{all:?}: {}",
            stderr(&o)
        );
        assert!(is_symlink(&link), "{all:?} replaced the symlink {name}");
        let written = std::fs::read(&target).unwrap();
        assert!(
            written.len() > 3 && written != b"old",
            "{all:?} did not write through {name}"
        );
    }
    // Directories of outputs: a symlinked --shrink-dir and chart --out, and
    // a symlink inside them where the command writes its file.
    let real = dir.join("real-shrink-dir");
    std::fs::create_dir_all(&real).unwrap();
    let linked_dir = dir.join("shrink-dir");
    std::os::unix::fs::symlink(&real, &linked_dir).unwrap();
    let o = leasehold(&[
        "sweep",
        sc,
        "--seeds",
        "1..1",
        "--variant",
        "no-self-fencing",
        "--shrink",
        "--shrink-dir",
        s(&linked_dir),
        "--progress",
        "off",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(is_symlink(&linked_dir));
    let written: Vec<_> = std::fs::read_dir(&real).unwrap().collect();
    assert_eq!(written.len(), 1, "one failure file in the linked directory");
}

/// An export to a device node writes through it (or refuses); it never
/// turns the node into a regular file, as the rename of a PNG drawn beside
/// it did. Needs root to make a node of its own; skipped otherwise.
#[cfg(target_os = "linux")]
#[test]
fn an_export_never_replaces_a_device_node() {
    let dir = scratch("device");
    let failure = failure_file(&dir);
    let Some(null) = own_device_node(&dir, "null-node", 3) else {
        eprintln!("not root: no device node of our own to test with");
        return;
    };
    for format in ["png", "svg", "perfetto"] {
        let o = leasehold(&["export", s(&failure), "--format", format, "--out", s(&null)]);
        assert_eq!(o.status.code(), Some(0), "{format}: {}", stderr(&o));
        assert!(is_char_device(&null), "{format} replaced the device node");
    }
}

/// A PNG that cannot be written is one human line naming the file, never a
/// Rust debug dump of the encoder's error.
#[cfg(target_os = "linux")]
#[test]
fn a_png_write_error_is_one_human_line() {
    let dir = scratch("png-error");
    let failure = failure_file(&dir);
    // The full device (writes fail with "No space left on device"): our
    // own node under root, /dev/full otherwise (which a non-root process
    // cannot replace, whatever the code under test does).
    let root_user = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    let full = match own_device_node(&dir, "full.png", 7) {
        Some(node) => node,
        None if !root_user => PathBuf::from("/dev/full"),
        None => {
            // Root without the right to make a node: /dev/full is not
            // ours to risk (a regression could replace it).
            eprintln!("root without mknod: no full device of our own to test with");
            return;
        }
    };
    let o = leasehold(&["export", s(&failure), "--format", "png", "--out", s(&full)]);
    assert_bad_input(&o, &[s(&full), "No space left on device"]);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    for noise in ["ImageError", "IoError", "Custom {", "kind:"] {
        assert!(!err.contains(noise), "a debug dump: {err}");
    }
}

/// A dangling symlink as an output: written through (its target created)
/// or refused; the link itself is never removed.
#[cfg(unix)]
#[test]
fn a_dangling_symlink_output_is_written_through_or_refused() {
    let dir = scratch("dangling");
    let failure = failure_file(&dir);
    let f = s(&failure);
    for (name, args) in [
        (
            "t.jsonl",
            vec![
                "run",
                "scenarios/gc-pause-zombie.json",
                "--seed",
                "1",
                "--trace",
            ],
        ),
        (
            "j.xml",
            vec![
                "sweep",
                "scenarios/gc-pause-zombie.json",
                "--seeds",
                "1..2",
                "--junit",
            ],
        ),
        ("e.svg", vec!["export", f, "--format", "svg", "--out"]),
    ] {
        let target = dir.join(format!("not-yet-{name}"));
        let link = dir.join(name);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let mut all = args.clone();
        all.push(s(&link));
        let o = leasehold(&all);
        assert!(
            is_symlink(&link),
            "{all:?} removed the symlink: {}",
            stderr(&o)
        );
        match o.status.code() {
            Some(0) => assert!(std::fs::metadata(&target).unwrap().len() > 0, "{all:?}"),
            Some(2) => assert!(!target.exists(), "{all:?}"),
            other => panic!("{all:?}: exit {other:?}: {}", stderr(&o)),
        }
    }
}

// ------------------------------------------------------ verdicts nothing can hide

/// Run `args`, read the first line of its standard output, then close the
/// pipe (as `| head -1` does) and wait for its exit code.
fn exit_after_first_line(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(args)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    {
        let mut out = BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut first).unwrap();
        // Dropped here: the reader leaves.
    }
    let output = child.wait_with_output().unwrap();
    (output.status.code(), first)
}

#[test]
fn a_sweep_piped_into_head_still_exits_1_when_seeds_failed() {
    // 300 failing seeds print ~90 KB: more than a pipe holds, so the sweep
    // writes after the reader left.
    let (code, first) = exit_after_first_line(&[
        "sweep",
        "scenarios/gc-pause-zombie.json",
        "--variant",
        "no-self-fencing",
        "--seeds",
        "1..300",
        "--progress",
        "off",
    ]);
    assert!(first.starts_with("seed "), "{first}");
    assert_eq!(code, Some(1), "a closed pipe hid the failures");
}

#[test]
fn a_merge_piped_into_head_still_exits_1_when_seeds_failed() {
    let dir = scratch("merge-head");
    let results = dir.join("r.jsonl");
    let o = leasehold(&[
        "sweep",
        "scenarios/gc-pause-zombie.json",
        "--variant",
        "no-self-fencing",
        "--seeds",
        "1..400",
        "--out",
        s(&results),
        "--progress",
        "off",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).len() > 1 << 16, "enough to fill a pipe");
    let (code, first) = exit_after_first_line(&["merge", s(&results)]);
    assert!(first.starts_with("seed "), "{first}");
    assert_eq!(code, Some(1), "a closed pipe hid the failures");
}

/// `run ... >&-`: standard output closed is an unwritable one: exit 2 and
/// one line, not 0 with the report lost.
#[cfg(unix)]
#[test]
fn a_closed_stdout_is_bad_input() {
    let o = Command::new("sh")
        .args([
            "-c",
            "exec \"$0\" run scenarios/gc-pause-zombie.json --seed 1 >&-",
            env!("CARGO_BIN_EXE_leasehold"),
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("standard output"), "{err}");
}

/// A run stopped by its own `limits.max_events` is cut short: inconclusive,
/// naming the limit; its unfinished tasks are not reported lost.
#[test]
fn a_run_cut_short_by_its_limits_is_inconclusive_not_a_lost_task() {
    let dir = scratch("cut-short");
    let path = edited(&dir, "gc-pause-zombie", |v| {
        v["limits"]["max_events"] = 3_000.into();
    });
    let o = leasehold(&["run", s(&path), "--seed", "1"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(out.contains("CUT SHORT"), "{out}");
    assert!(out.contains("limits.max_events (3000)"), "{out}");
    assert!(out.contains("inconclusive"), "{out}");
    for invariant in ["no-lost-task", "simulation-healthy"] {
        assert!(!out.contains(invariant), "{invariant} reported: {out}");
    }
    let o = leasehold(&["run", s(&path), "--seed", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["invariants"], serde_json::json!([]));
    assert_eq!(v["cut_short"]["limit"], "limits.max_events");
    // A sweep counts it as not passing, named as what it is.
    let o = leasehold(&["sweep", s(&path), "--seeds", "1..2", "--progress", "off"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("cut-short"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("no-lost-task"), "{}", stdout(&o));
}

/// The false alarm of the issue: a clock-skew copy with 400,000 tasks
/// cannot finish them inside its own `max_sim_time_ms`; validation says so
/// before it runs instead of reporting every unfinished task lost.
#[test]
fn a_scenario_whose_heal_bound_cannot_fit_its_limits_is_refused() {
    let dir = scratch("heal-bound");
    let path = edited(&dir, "clock-skew", |v| {
        v["tasks"]["count"] = 400_000.into();
    });
    let o = leasehold(&["run", s(&path), "--seed", "1"]);
    assert_bad_input(&o, &["limits.max_sim_time_ms", "no-lost-task deadline"]);
    assert_eq!(stderr(&o).lines().count(), 1);
}

#[test]
fn hunting_a_scenario_with_expected_violations_is_not_a_failure() {
    let o = leasehold(&[
        "hunt",
        "--scenarios",
        "unfenced-service",
        "--variants",
        "correct",
        "--budget",
        "3",
        "--jobs",
        "1",
    ]);
    let out = stdout(&o);
    assert!(!out.contains("FAILED"), "{out}");
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
}

// ---------------------------------------------------- reports that tell the truth

/// `fault_kinds` names each fault after what struck which message; no
/// count carries the name of a `fault_mix` rate that drew zero.
#[test]
fn fault_kinds_never_borrow_the_name_of_a_section_that_drew_nothing() {
    let o = leasehold(&["run", "scenarios/friday-rush.json", "--seed", "7", "--json"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let mix = v["fault_mix"].as_object().unwrap();
    let kinds = v["fault_kinds"].as_object().unwrap();
    assert!(
        mix["network_delay"].as_f64().unwrap() > 0.0 && mix["store_slow"] == 0.0,
        "seed 7 draws network faults and no store faults: {mix:?}"
    );
    for kind in kinds.keys() {
        for (rate, value) in mix {
            let zero = value.as_f64() == Some(0.0);
            assert!(
                !(zero && kind.starts_with(rate.as_str())),
                "fault_kinds.{kind} is named after fault_mix.{rate}, which is 0"
            );
        }
    }
    assert!(
        kinds.keys().any(|k| k.starts_with("store_reply_")),
        "network faults on store replies are named so: {kinds:?}"
    );
}

/// The Perfetto export says what a message fault did in explain's words: no
/// "lost" for a delay or a duplicate, no Rust debug strings.
#[test]
fn perfetto_labels_message_faults_in_human_words() {
    let dir = scratch("perfetto");
    let trace = dir.join("t.jsonl");
    let o = leasehold(&[
        "run",
        "scenarios/friday-rush.json",
        "--seed",
        "7",
        "--trace",
        s(&trace),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = dir.join("p.json");
    let o = leasehold(&[
        "export",
        s(&trace),
        "--format",
        "perfetto",
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let mut delays = 0;
    for e in v["traceEvents"].as_array().unwrap() {
        let name = e["name"].as_str().unwrap_or_default();
        let detail = e["args"]["detail"].as_str().unwrap_or_default();
        for text in [name, detail] {
            for debug in [
                "ToStore",
                "FromStore",
                "ToService",
                "FromService",
                "{",
                "Duplicate",
                "Delay",
            ] {
                assert!(!text.contains(debug), "a debug string: {e}");
            }
        }
        if detail.contains("is delayed") || detail.contains("is delivered twice") {
            assert!(
                !name.contains("lost"),
                "a delay or duplicate named lost: {e}"
            );
            delays += 1;
        }
    }
    assert!(delays > 0, "seed 7 delays and duplicates messages");
}

/// The story of one task (`explain --task N --all`): every line is about
/// task N, or a fault that touched one of its owners, or the run's frame
/// (heading, heal phase, verdict), and nothing else.
#[test]
fn explain_task_tells_only_that_tasks_story() {
    let dir = scratch("explain-task");
    let trace = dir.join("t.jsonl");
    let o = leasehold(&[
        "run",
        "scenarios/friday-rush.json",
        "--seed",
        "7",
        "--variant",
        "claim-ack-lost",
        "--trace",
        s(&trace),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = leasehold(&["explain", s(&trace), "--task", "5", "--all"]);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    // Owners: whoever claimed task 5.
    let owners: Vec<String> = lines
        .iter()
        .filter(|l| l.contains(" claims task 5 "))
        .map(|l| {
            let who = l.split_whitespace().nth(2).unwrap();
            who.split('#').next().unwrap().to_string()
        })
        .collect();
    assert!(!owners.is_empty(), "task 5 was claimed: {out}");
    let about_task = |l: &str| {
        l.contains("task 5 ")
            || l.contains("task 5:")
            || l.ends_with("task 5")
            || l.contains("task 5,")
    };
    let touches_owner = |l: &str| {
        owners.iter().any(|o| {
            l.contains(&format!(" {o}'s"))
                || l.contains(&format!(" {o} "))
                || l.contains(&format!(" {o}#"))
        })
    };
    let frame = |l: &str| {
        l.starts_with("friday-rush (seed")
            || l.contains("heal phase begins")
            || l.starts_with("VIOLATION")
            || l.contains("STORE OUTAGE")
            || l.contains("the store answers again")
    };
    let stray: Vec<&&str> = lines
        .iter()
        .filter(|l| !about_task(l) && !touches_owner(l) && !frame(l))
        .collect();
    assert!(
        stray.is_empty(),
        "{} of {} lines are not task 5's story, e.g. {:?}",
        stray.len(),
        lines.len(),
        &stray[..stray.len().min(5)]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The default cut of a long story keeps the lines about the violation's
/// tasks (claims, steps, re-queues) and leaves out network noise first.
#[test]
fn explains_default_cut_keeps_the_lines_about_the_violation() {
    let dir = scratch("explain-cut");
    let trace = dir.join("t.jsonl");
    let o = leasehold(&[
        "run",
        "scenarios/friday-rush.json",
        "--seed",
        "4",
        "--variant",
        "claim-ack-lost",
        "--trace",
        s(&trace),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let full = stdout(&leasehold(&["explain", s(&trace), "--all"]));
    let cut = stdout(&leasehold(&["explain", s(&trace)]));
    let heading = full.lines().next().unwrap();
    let followed: Vec<String> = heading
        .rsplit("the story of task")
        .next()
        .unwrap()
        .trim_start_matches('s')
        .split(',')
        .map(|t| format!("task {} ", t.trim()))
        .collect();
    let task_lines: Vec<&str> = full
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("VIOLATION") && !l.contains("NETWORK"))
        .filter(|l| followed.iter().any(|t| l.contains(t.as_str())))
        .collect();
    assert!(full.lines().count() > 100, "a long story");
    assert!(task_lines.len() < 60, "{} task lines", task_lines.len());
    for line in task_lines {
        assert!(cut.contains(line), "the default cut dropped {line:?}");
    }
    assert!(cut.lines().count() <= 90, "{}", cut.lines().count());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `variants`: the description column starts at one place on every line.
#[test]
fn the_variants_list_is_aligned() {
    let out = stdout(&leasehold(&["variants"]));
    let columns: std::collections::BTreeSet<usize> = out
        .lines()
        .map(|l| {
            let name_end = l.find(' ').unwrap_or(0);
            name_end + l[name_end..].len() - l[name_end..].trim_start().len()
        })
        .collect();
    assert_eq!(columns.len(), 1, "{out}");
}

/// Plain `leasehold`: the help on standard output with exit 0.
#[test]
fn no_arguments_print_the_help_on_stdout() {
    let o = leasehold(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("Usage:"), "{}", stdout(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

/// The README's install command pins the locked versions.
#[test]
fn the_readme_installs_with_locked_versions() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for line in readme.lines().filter(|l| l.contains("cargo install")) {
        assert!(line.contains("--locked"), "{line}");
    }
    assert!(readme.contains("cargo install --path . --locked"));
}

/// The fuzz workflow: dispatch inputs reach the shell only through `env:`,
/// no check publishing from forks, no double run for a pull request's push,
/// and the dispatched budget is capped below the job's timeout.
#[test]
fn the_fuzz_workflow_is_safe_to_dispatch_and_to_run_on_forks() {
    let text = std::fs::read_to_string(root().join(".github/workflows/fuzz.yml")).unwrap();
    // Inputs appear only as values of env entries, never inside `run:`.
    for (i, line) in text.lines().enumerate() {
        if line.contains("github.event.inputs") || line.contains("inputs.") {
            let key = line.trim_start();
            assert!(
                key.starts_with("INPUT_")
                    || key.starts_with("description")
                    || key.starts_with("default"),
                "line {}: an input outside env: {line}",
                i + 1
            );
        }
    }
    assert!(
        text.contains("github.event.pull_request.head.repo.full_name == github.repository"),
        "the JUnit check is published only for pull requests from this repository"
    );
    assert!(text.contains("branches: [main]"), "push runs on main only");
    assert!(
        text.contains("MAX_BUDGET_MINUTES"),
        "the dispatched budget is capped"
    );
}

/// Results files are read as strictly as docs/ci.md says: a line missing
/// `first_violation`, or with an empty `leasehold_version`, is refused.
#[test]
fn merge_refuses_a_result_line_missing_a_field_or_with_an_empty_version() {
    let dir = scratch("strict-results");
    let results = dir.join("r.jsonl");
    let o = leasehold(&[
        "sweep",
        "scenarios/gc-pause-zombie.json",
        "--seeds",
        "1..2",
        "--out",
        s(&results),
        "--progress",
        "off",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&results).unwrap();
    let first = text.lines().next().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(first).unwrap();
    v.as_object_mut().unwrap().remove("first_violation");
    let missing = dir.join("missing.jsonl");
    std::fs::write(&missing, format!("{v}\n")).unwrap();
    assert_bad_input(
        &leasehold(&["merge", s(&missing)]),
        &["line 1", "first_violation"],
    );
    let mut v: serde_json::Value = serde_json::from_str(first).unwrap();
    v["leasehold_version"] = "".into();
    let empty = dir.join("empty-version.jsonl");
    std::fs::write(&empty, format!("{v}\n")).unwrap();
    assert_bad_input(
        &leasehold(&["merge", s(&empty)]),
        &["line 1", "leasehold_version"],
    );
}

/// `sweep --out` onto an old file of an edited scenario, without
/// `--resume`, is refused before it appends what `merge` would refuse.
#[test]
fn sweep_out_onto_results_of_an_edited_scenario_is_refused_up_front() {
    let dir = scratch("edited-out");
    let results = dir.join("r.jsonl");
    let scenario = dir.join("gc-pause-zombie.json");
    std::fs::copy(root().join("scenarios/gc-pause-zombie.json"), &scenario).unwrap();
    let sweep = |path: &Path| {
        leasehold(&[
            "sweep",
            s(path),
            "--seeds",
            "1..2",
            "--out",
            s(&results),
            "--progress",
            "off",
        ])
    };
    assert_eq!(sweep(&scenario).status.code(), Some(0));
    let before = std::fs::read(&results).unwrap();
    let text = std::fs::read_to_string(&scenario).unwrap();
    std::fs::write(
        &scenario,
        text.replace("\"retry_backoff_ms\": 200", "\"retry_backoff_ms\": 300"),
    )
    .unwrap();
    assert_ne!(std::fs::read_to_string(&scenario).unwrap(), text, "edited");
    let o = sweep(&scenario);
    assert_bad_input(&o, &["--out", "another text of scenario"]);
    assert_eq!(std::fs::read(&results).unwrap(), before, "nothing appended");
}

// ------------------------------------------------------------------- limits

/// A run whose estimated peak memory is over `--max-memory` is refused
/// before it starts, with one line giving the estimate and the limit.
#[test]
fn a_run_over_the_memory_limit_is_refused_with_estimate_and_limit() {
    for command in [
        &["run", "scenarios/friday-rush.json", "--seed", "1"][..],
        &["sweep", "scenarios/friday-rush.json", "--seeds", "1..4"],
        &["shrink", "scenarios/friday-rush.json", "--seed", "1"],
        &["hunt", "--scenarios", "friday-rush", "--budget", "1"],
    ] {
        let mut args = command.to_vec();
        args.extend(["--max-memory", "1MiB"]);
        let o = leasehold(&args);
        assert_bad_input(&o, &["estimated peak memory", "--max-memory 1 MiB"]);
        assert_eq!(stderr(&o).lines().count(), 1, "{args:?}");
    }
    let o = leasehold(&["run", "scenarios/friday-rush.json", "--max-memory", "lots"]);
    assert_bad_input(&o, &["--max-memory"]);
}

/// Endless input to `replay`, `explain` and `export` fails at once, well
/// inside a small memory bound, naming what is wrong.
#[cfg(target_os = "linux")]
#[test]
fn endless_input_to_replay_explain_and_export_fails_at_once() {
    let dir = scratch("endless");
    let out = dir.join("x.json");
    for file in ["/dev/zero", "/dev/urandom"] {
        for args in [
            vec!["replay", file],
            vec!["explain", file],
            vec!["export", file, "--format", "perfetto", "--out", s(&out)],
        ] {
            let o = bounded(&args);
            assert_bad_input(&o, &[file]);
            assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
        }
    }
    // `yes | leasehold replay /dev/stdin`: endless short lines that are not
    // a trace.
    let o = Command::new("sh")
        .args([
            "-c",
            "ulimit -v 262144; yes | \"$0\" replay /dev/stdin",
            env!("CARGO_BIN_EXE_leasehold"),
        ])
        .output()
        .unwrap();
    assert_bad_input(&o, &["/dev/stdin", "line 1"]);
}

/// Run `args` under a 256 MiB address-space limit (`ulimit -v`): a command
/// that reads toward a bound of gigabytes fails to allocate and aborts, and
/// the test sees it.
fn bounded(args: &[&str]) -> Output {
    let mut script = String::from("ulimit -v 262144; exec \"$0\"");
    for i in 1..=args.len() {
        script.push_str(&format!(" \"${{{i}}}\""));
    }
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_leasehold"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}
