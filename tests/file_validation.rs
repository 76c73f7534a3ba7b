//! Corrupt failure files, traces and results files: exit 2 and one line on
//! stderr naming the field or line (never a panic, never a silent default);
//! a file of another leasehold version gets a note; a trace's end line is
//! compared on replay; an empty merge is not a pass.

mod common;
use common::{assert_bad_input, leasehold, root, stderr, stdout};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;

const SCENARIO: &str = "scenarios/gc-pause-zombie.json";
const BUGGY: &str = "no-self-fencing";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "leasehold-file-validation-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The committed shrunk failure of `no-self-fencing` (one pause of worker 6,
/// a fleet of one worker and one reclaimer), as JSON.
fn failure() -> Value {
    let text =
        std::fs::read_to_string(root().join("scenarios/regressions/no-self-fencing.failure.json"))
            .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Write `value` as a failure file and replay it.
fn replay_failure(dir: &Path, value: &Value) -> Output {
    let path = dir.join("f.json");
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    leasehold(&["replay", s(&path)])
}

fn with(edit: impl FnOnce(&mut Value)) -> Value {
    let mut v = failure();
    edit(&mut v);
    v
}

#[test]
fn the_committed_failure_files_still_replay_with_no_note() {
    let dir = root().join("scenarios/regressions");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let o = leasehold(&["replay", s(&path)]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}: {}",
            path.display(),
            stderr(&o)
        );
        assert!(stderr(&o).is_empty(), "{}: {}", path.display(), stderr(&o));
    }
}

#[test]
fn a_plan_entry_must_name_a_node_of_the_fleet() {
    let dir = scratch("node");
    let o = replay_failure(&dir, &with(|v| v["plan"][0]["node"] = json!(99)));
    assert_bad_input(&o, &["plan[0].node", "99", "1 workers and 1 reclaimers"]);
}

#[test]
fn a_plan_entry_must_name_a_step_a_run_reaches() {
    let dir = scratch("step");
    let o = replay_failure(&dir, &with(|v| v["plan"][0]["node_step"] = json!(u64::MAX)));
    assert_bad_input(&o, &["plan[0].node_step", "limits.max_events"]);
    let o = replay_failure(&dir, &with(|v| v["plan"][0]["node_step"] = json!(0)));
    assert_bad_input(&o, &["plan[0].node_step"]);
}

#[test]
fn plan_durations_and_times_are_bounded() {
    let dir = scratch("durations");
    let o = replay_failure(
        &dir,
        &with(|v| v["plan"][0]["duration_us"] = json!(u64::MAX)),
    );
    assert_bad_input(&o, &["plan[0].duration_us", "MAX_PLAN_DURATION_US"]);
    let outage =
        json!({"fault": "store_outage", "at_us": u64::MAX, "duration_us": 5, "mode": "fail"});
    let o = replay_failure(
        &dir,
        &with(|v| v["plan"].as_array_mut().unwrap().push(outage)),
    );
    assert_bad_input(&o, &["plan[1].at_us", "limits.max_sim_time_ms"]);
    let jump = json!({"fault": "clock_jump", "node": 0, "node_step": 3, "delta_us": i64::MIN});
    let o = replay_failure(
        &dir,
        &with(|v| v["plan"].as_array_mut().unwrap().push(jump)),
    );
    assert_bad_input(&o, &["plan[1].delta_us"]);
    let delay = json!({"fault": "message", "node": 0, "msg": 3, "leg": "to_store",
        "action": {"action": "delay", "extra_us": u64::MAX}});
    let o = replay_failure(
        &dir,
        &with(|v| v["plan"].as_array_mut().unwrap().push(delay)),
    );
    assert_bad_input(&o, &["plan[1].action.extra_us"]);
}

#[test]
fn a_plan_holds_causes_on_the_legs_they_apply_to() {
    let dir = scratch("causes");
    let restart = json!({"fault": "restart", "node": 0, "incarnation": 2});
    let o = replay_failure(
        &dir,
        &with(|v| v["plan"].as_array_mut().unwrap().push(restart)),
    );
    assert_bad_input(&o, &["plan[1].fault", "consequence"]);
    let hang = json!({"fault": "message", "node": 0, "msg": 3, "leg": "from_store",
        "action": {"action": "hang"}});
    let o = replay_failure(
        &dir,
        &with(|v| v["plan"].as_array_mut().unwrap().push(hang)),
    );
    assert_bad_input(&o, &["plan[1].action", "to_service"]);
}

#[test]
fn a_failure_file_sizes_describe_its_run_and_never_grow() {
    let dir = scratch("sizes");
    let o = replay_failure(&dir, &with(|v| v["shrunk"]["workers"] = json!(1_000_000)));
    assert_bad_input(&o, &["shrunk.workers: 1000000, but the file's run has"]);
    let o = replay_failure(&dir, &with(|v| v["original"]["faults"] = json!(0)));
    assert_bad_input(&o, &["original.faults: 0 is less than shrunk.faults"]);
    let o = replay_failure(&dir, &with(|v| v["original"]["events"] = json!(u64::MAX)));
    assert_bad_input(
        &o,
        &["original.events: 18446744073709551615 is more than a run"],
    );
}

#[test]
fn plan_entries_refuse_unknown_fields_and_name_bad_ones() {
    let dir = scratch("plan-fields");
    let o = replay_failure(&dir, &with(|v| v["plan"][0]["bogus"] = json!(1)));
    assert_bad_input(&o, &["plan[0]: unknown field `bogus`"]);
    let o = replay_failure(&dir, &with(|v| v["plan"][0]["node"] = json!("zero")));
    assert_bad_input(&o, &["plan[0].node:", "invalid type"]);
    let o = replay_failure(&dir, &with(|v| v["original"]["bogus"] = json!(1)));
    assert_bad_input(&o, &["original.bogus", "unknown field"]);
}

#[test]
fn an_unknown_invariant_or_variant_names_the_field_and_the_known_ones() {
    let dir = scratch("names");
    let o = replay_failure(&dir, &with(|v| v["invariant"] = json!("nope")));
    assert_bad_input(
        &o,
        &["f.json: invariant: \"nope\"", "known: ", "no-lost-task"],
    );
    let o = replay_failure(&dir, &with(|v| v["variant"] = json!("nope")));
    assert_bad_input(
        &o,
        &[
            "f.json: variant: unknown variant \"nope\"",
            "known: correct",
        ],
    );
    let o = leasehold(&["explain", s(&dir.join("f.json"))]);
    assert_bad_input(&o, &["f.json: variant: unknown variant \"nope\""]);
}

#[test]
fn a_wrong_or_missing_format_is_named() {
    let dir = scratch("format");
    let o = replay_failure(&dir, &with(|v| v["format"] = json!("leasehold-failure/9")));
    assert_bad_input(
        &o,
        &["format: \"leasehold-failure/9\"", "leasehold-failure/1"],
    );
    let o = replay_failure(
        &dir,
        &with(|v| {
            v.as_object_mut().unwrap().remove("format");
        }),
    );
    assert_bad_input(&o, &["format: missing", "leasehold-failure/1"]);
    assert!(!stderr(&o).contains("trace header"), "{}", stderr(&o));
}

#[test]
fn a_scenario_or_results_file_given_to_replay_says_what_it_is() {
    for command in ["replay", "explain"] {
        let o = leasehold(&[command, SCENARIO]);
        assert_bad_input(&o, &["format: missing", "scenario file"]);
    }
    let dir = scratch("what");
    let o = leasehold(&[
        "export",
        SCENARIO,
        "--format",
        "svg",
        "--out",
        s(&dir.join("x.svg")),
    ]);
    assert_bad_input(&o, &["format: missing", "scenario file"]);
    let results = dir.join("results.jsonl");
    let swept = leasehold(&[
        "sweep",
        SCENARIO,
        "--seeds",
        "1..2",
        "--out",
        s(&results),
        "--progress",
        "off",
    ]);
    assert_eq!(swept.status.code(), Some(0), "{}", stderr(&swept));
    let o = leasehold(&["replay", s(&results)]);
    assert_bad_input(
        &o,
        &["line 1: format: \"leasehold-results/1\"", "results file"],
    );
}

#[test]
fn a_failure_file_of_another_version_replays_with_a_note() {
    let dir = scratch("version-failure");
    let o = replay_failure(&dir, &with(|v| v["leasehold_version"] = json!("0.0.1")));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.starts_with("note: "), "{err}");
    assert!(err.contains("leasehold 0.0.1"), "{err}");
    assert!(
        err.contains(&format!("leasehold {}", leasehold::LEASEHOLD_VERSION)),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Run the buggy variant on gc-pause-zombie (it fails: exit 1) with
/// `flag FILE` writing `file` in `dir`; the file's lines.
fn written_by(dir: &Path, file: &str, args: &[&str], flag: &str) -> (PathBuf, Vec<String>) {
    let path = dir.join(file);
    let mut all = args.to_vec();
    all.extend(["--variant", BUGGY, flag, s(&path)]);
    let o = leasehold(&all);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let lines = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    (path, lines)
}

/// A trace of seed 1 of gc-pause-zombie under the buggy variant.
fn trace(dir: &Path) -> (PathBuf, Vec<String>) {
    written_by(
        dir,
        "run.trace.jsonl",
        &["run", SCENARIO, "--seed", "1"],
        "--trace",
    )
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn explain_and_export_of_an_edited_trace_say_it_is_not_the_re_run() {
    let dir = scratch("edited-trace");
    let (path, lines) = trace(&dir);
    let svg = dir.join("timeline.svg");
    let o = leasehold(&["explain", s(&path)]);
    assert!(stderr(&o).is_empty(), "an intact trace: {}", stderr(&o));
    let mut edited = lines.clone();
    edited.remove(5);
    write_lines(&path, &edited);
    // The re-run is told and drawn as before: explain exits 1 for its
    // violation, export 0 for the image it wrote.
    for (o, code) in [
        (leasehold(&["explain", s(&path)]), 1),
        (
            leasehold(&["export", s(&path), "--format", "svg", "--out", s(&svg)]),
            0,
        ),
    ] {
        assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.starts_with("note: ") && err.contains("differs from its re-run from line 6 on"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// `line` with the first `from` replaced by `to`; `from` must be there.
fn edit(line: &str, from: &str, to: &str) -> String {
    assert!(line.contains(from), "{from} in {line}");
    line.replacen(from, to, 1)
}

#[test]
fn a_trace_record_that_is_not_a_record_is_bad_input_for_replay_explain_and_export() {
    let dir = scratch("corrupt-record");
    let (path, lines) = trace(&dir);
    let svg = dir.join("timeline.svg");
    let first = |kind: &str| {
        lines
            .iter()
            .position(|l| l.contains(&format!("\"kind\":\"{kind}\"")))
            .unwrap()
    };
    let (step, store, event) = (first("step"), first("store"), first("event"));
    type Edit = (usize, fn(&str) -> String, &'static str);
    let cases: [Edit; 8] = [
        (
            step,
            |l| edit(l, "\"time_us\":0,", "\"time_us\":\"x\","),
            "time_us: invalid type: string \"x\"",
        ),
        (
            step,
            |l| edit(l, "\"kind\":\"step\"", "\"kind\":\"zzz\""),
            "kind: unknown variant `zzz`",
        ),
        (
            step,
            |l| edit(l, "\"kind\":", "\"zzz\":1,\"kind\":"),
            "unknown field `zzz`",
        ),
        (
            step,
            |l| edit(l, "\"kind\":", "\"node\":0,\"kind\":"),
            "duplicate field \"node\"",
        ),
        (
            step,
            |_| "{\"time_us\": 0, \"kind\"".into(),
            "not a JSON record",
        ),
        // Nested: a tag as the number serde reads by position, a field the
        // event type would skip, an optional field left out.
        (
            step,
            |l| edit(l, "{\"input\":\"start\"}", "{\"input\":0}"),
            "input.input: expected a string, found a number",
        ),
        (
            event,
            |l| edit(l, "{\"event\":", "{\"zzz\":1,\"event\":"),
            "event.zzz: not a field leasehold writes here",
        ),
        (
            store,
            |l| edit(l, ",\"before\":null", ""),
            "before: missing",
        ),
    ];
    for (at, corrupt, field) in cases {
        let mut edited = lines.clone();
        edited[at] = corrupt(&edited[at]);
        write_lines(&path, &edited);
        let line = format!("{}: line {}: ", path.display(), at + 1);
        for args in [
            &["replay", s(&path)][..],
            &["explain", s(&path)],
            &["export", s(&path), "--format", "svg", "--out", s(&svg)],
        ] {
            let o = leasehold(args);
            assert_bad_input(&o, &[&line, field]);
            assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
        }
        assert!(!svg.exists(), "export wrote {}", svg.display());
    }

    // A well-formed record that is not what the run did is a divergence.
    let mut edited = lines.clone();
    edited[step] = edit(&lines[step], "\"incarnation\":1", "\"incarnation\":2");
    write_lines(&path, &edited);
    let o = leasehold(&["replay", s(&path)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("DIVERGED at line {}", step + 1)),
        "{}",
        stdout(&o)
    );
    let o = leasehold(&["explain", s(&path)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "differs from its re-run from line {} on",
            step + 1
        )),
        "{}",
        stderr(&o)
    );

    // Another version may write records this one does not know: a record
    // kind unknown here is then a divergence the version note explains, not
    // a corrupt file.
    let mut edited = lines.clone();
    edited[0] = edit(
        &lines[0],
        &format!("\"leasehold_version\":\"{}\"", env!("CARGO_PKG_VERSION")),
        "\"leasehold_version\":\"0.0.1-other\"",
    );
    edited[step] = edit(&lines[step], "\"kind\":\"step\"", "\"kind\":\"zzz\"");
    write_lines(&path, &edited);
    let o = leasehold(&["replay", s(&path)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("DIVERGED at line {}", step + 1)),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("0.0.1-other"), "{}", stderr(&o));
}

#[test]
fn a_trace_end_line_is_compared_on_replay() {
    let dir = scratch("end-line");
    let (path, lines) = trace(&dir);
    let o = leasehold(&["replay", s(&path)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let end_line = lines.len();
    for (field, value) in [
        ("events", json!(1)),
        ("ok", json!(true)),
        ("invariants", json!([])),
    ] {
        let mut edited = lines.clone();
        let mut end: Value = serde_json::from_str(&edited[end_line - 1]).unwrap();
        end["end"][field] = value;
        edited[end_line - 1] = end.to_string();
        write_lines(&path, &edited);
        let o = leasehold(&["replay", s(&path)]);
        assert_eq!(o.status.code(), Some(1), "{field}: {}", stdout(&o));
        let out = stdout(&o);
        assert!(out.contains("DIVERGED"), "{out}");
        assert!(out.contains(&format!("line {end_line}")), "{out}");
        assert!(out.contains(&format!("end.{field}")), "{out}");
        let o = leasehold(&["replay", s(&path), "--json"]);
        assert_eq!(o.status.code(), Some(1));
        let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(v["identical"], false);
        assert_eq!(v["first_divergence"]["field"], format!("end.{field}"));
    }
}

#[test]
fn a_trace_of_another_version_replays_with_a_note_and_bad_headers_are_named() {
    let dir = scratch("trace-header");
    let (path, lines) = trace(&dir);
    let mut header: Value = serde_json::from_str(&lines[0]).unwrap();
    header["leasehold_version"] = json!("0.0.1");
    let mut edited = lines.clone();
    edited[0] = header.to_string();
    write_lines(&path, &edited);
    let o = leasehold(&["replay", s(&path)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.starts_with("note: ") && err.contains("leasehold 0.0.1"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    for (field, value, needles) in [
        (
            "variant",
            json!("nope"),
            vec!["line 1: variant: unknown variant \"nope\""],
        ),
        ("seed", json!("one"), vec!["line 1", "seed: invalid type"]),
        (
            "format",
            json!("leasehold-trace/2"),
            vec!["line 1: format: \"leasehold-trace/2\""],
        ),
        ("bogus", json!(1), vec!["line 1", "bogus: unknown field"]),
    ] {
        let mut header: Value = serde_json::from_str(&lines[0]).unwrap();
        header[field] = value;
        let mut edited = lines.clone();
        edited[0] = header.to_string();
        write_lines(&path, &edited);
        assert_bad_input(&leasehold(&["replay", s(&path)]), &needles);
    }
}

/// Results of seeds 1 and 2 of gc-pause-zombie under the buggy variant.
fn results(dir: &Path) -> (PathBuf, Vec<String>) {
    written_by(
        dir,
        "results.jsonl",
        &["sweep", SCENARIO, "--seeds", "1..2", "--progress", "off"],
        "--out",
    )
}

fn resume(path: &Path) -> Output {
    leasehold(&[
        "sweep",
        SCENARIO,
        "--seeds",
        "1..3",
        "--variant",
        BUGGY,
        "--out",
        s(path),
        "--resume",
        "--progress",
        "off",
    ])
}

#[test]
fn results_lines_with_unknown_values_or_fields_are_refused_by_merge_and_resume() {
    let dir = scratch("results-values");
    let (path, lines) = results(&dir);
    for (field, value, needle) in [
        (
            "variant",
            json!("nope"),
            "line 2: variant: unknown variant \"nope\"",
        ),
        (
            "invariants",
            json!(["nope"]),
            "line 2: invariants[0]: \"nope\"",
        ),
        (
            "bogus",
            json!(1),
            "line 2: not a leasehold result (bogus: unknown field",
        ),
        ("scenario", json!(""), "line 2: scenario: must not be empty"),
        (
            "events",
            json!(u64::MAX),
            "line 2: events: 18446744073709551615 is more than a run processes",
        ),
        (
            "wall_us",
            json!(u64::MAX),
            "line 2: wall_us: 18446744073709551615 is more than",
        ),
        (
            "trace_hash",
            json!("zzzzzzzzzzzzzzzz"),
            "line 2: trace_hash: \"zzzzzzzzzzzzzzzz\" is not 16 lowercase hex digits",
        ),
        (
            "scenario_hash",
            json!(""),
            "line 2: scenario_hash: \"\" is not 16 lowercase hex digits",
        ),
        (
            "replay",
            json!("leasehold run x.json --seed 99 --variant no-self-fencing"),
            "line 2: replay: \"leasehold run x.json --seed 99",
        ),
        (
            "replay",
            json!("rm -rf /\nleasehold run x --seed 1 --variant no-self-fencing"),
            "line 2: replay: \"rm -rf /\\nleasehold run",
        ),
        (
            "events",
            json!("many"),
            "line 2: not a leasehold result (events: invalid type",
        ),
    ] {
        let mut line: Value = serde_json::from_str(&lines[1]).unwrap();
        line[field] = value;
        let edited = vec![lines[0].clone(), line.to_string()];
        write_lines(&path, &edited);
        assert_bad_input(&leasehold(&["merge", s(&path)]), &[needle]);
        assert_bad_input(&resume(&path), &[needle]);
    }
}

#[test]
fn results_of_another_version_get_a_note_in_merge_and_resume() {
    let dir = scratch("results-version");
    let (path, lines) = results(&dir);
    let mut line: Value = serde_json::from_str(&lines[1]).unwrap();
    line["leasehold_version"] = json!("0.0.1");
    write_lines(&path, &[lines[0].clone(), line.to_string()]);
    for o in [leasehold(&["merge", s(&path)]), resume(&path)] {
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let err = stderr(&o);
        let notes: Vec<&str> = err.lines().filter(|l| l.contains("0.0.1")).collect();
        assert_eq!(notes.len(), 1, "{err}");
        assert!(
            notes[0].starts_with("note: ") && notes[0].contains("line 2"),
            "{err}"
        );
    }
}

#[test]
fn an_empty_merge_is_a_gap_or_bad_input_never_a_pass() {
    let dir = scratch("empty-merge");
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let o = leasehold(&["merge", s(&empty), "--expect-seeds", "1..4"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("incomplete:"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("all 4 seeds of 1..4 are missing"),
        "{}",
        stdout(&o)
    );
    let o = leasehold(&["merge", s(&empty), "--expect-seeds", "1..4", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["complete"], false);
    assert_eq!(v["missing_seeds"]["count"], 4);
    for files in [
        vec![s(&empty)],
        vec!["/dev/null"],
        vec![s(&empty), "/dev/null"],
    ] {
        let mut args = vec!["merge"];
        args.extend(&files);
        assert_bad_input(&leasehold(&args), &[files[0], "no results to merge"]);
    }
    // One empty shard among others is fine (a shard may hold no seed).
    let (full, _) = results(&dir);
    let o = leasehold(&["merge", s(&empty), s(&full)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn shrinking_a_passing_seed_exits_0_and_keeps_json_json() {
    let dir = scratch("shrink-pass");
    let out = dir.join("none.failure.json");
    let o = leasehold(&[
        "shrink",
        SCENARIO,
        "--seed",
        "1",
        "--out",
        s(&out),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["out"], Value::Null);
    assert!(v["message"].as_str().unwrap().contains("nothing to shrink"));
    assert!(!out.exists());
}
