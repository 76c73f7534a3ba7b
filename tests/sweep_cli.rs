//! `leasehold sweep` and `leasehold merge` end to end: shards, --jobs,
//! results files killed and resumed, bad input, corrupt files, JUnit.
//!
//! Seed counts stay in the tens and nothing depends on how fast the machine
//! is: a kill that comes after the sweep finished only makes the resume
//! trivial, never wrong.

use quick_junit::{Report, TestCaseStatus};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_leasehold");
/// Fast (hundreds of seeds a second) and, under no-idempotency-key, failing
/// on some seeds and passing on others.
const SCENARIO: &str = "scenarios/ml-batch.json";
const BUGGY: &str = "no-idempotency-key";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("sweep_cli-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn leasehold(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(root())
        .env_remove("JOB_COMPLETION_INDEX")
        .output()
        .expect("the binary runs")
}

/// `leasehold sweep SCENARIO --seeds SEEDS FLAGS...`
fn sweep(seeds: &str, flags: &[&str]) -> Output {
    let mut args = vec!["sweep", SCENARIO, "--seeds", seeds];
    args.extend_from_slice(flags);
    leasehold(&args)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&output.stdout)))
}

/// The summary without its timing fields.
fn untimed(mut value: Value) -> Value {
    let object = value.as_object_mut().unwrap();
    for key in [
        "seeds_per_sec",
        "events_per_sec",
        "elapsed_s",
        "resumed_seeds",
        // Counted over the seeds this invocation ran (not resumed ones).
        "sim_time_s",
        "time_compression",
        // The whole process's peak: differs from machine to machine.
        "peak_rss_bytes",
    ] {
        object.remove(key);
    }
    value
}

fn seeds_in(path: &Path) -> Vec<u64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["seed"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn shards_are_disjoint_and_their_union_is_the_range() {
    let dir = scratch("shards");
    let mut all = Vec::new();
    let files: Vec<PathBuf> = (1..=3)
        .map(|k| dir.join(format!("shard-{k}.jsonl")))
        .collect();
    for (k, file) in (1..=3).zip(&files) {
        let shard = format!("{k}/3");
        let out = sweep("1..31", &["--shard", &shard, "--out", s(file)]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let seeds = seeds_in(file);
        assert!(!seeds.is_empty());
        all.extend(seeds);
    }
    let distinct: BTreeSet<u64> = all.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        all.len(),
        "a seed ran in two shards: {all:?}"
    );
    assert_eq!(distinct, (1..=31).collect::<BTreeSet<u64>>());

    // merge sees the whole range; without one shard it reports the gap.
    let mut args = vec!["merge", "--json", "--expect-seeds", "1..31"];
    args.extend(files.iter().map(|f| s(f)));
    let merged = leasehold(&args);
    assert_eq!(merged.status.code(), Some(0), "{}", text(&merged.stdout));
    let summary = json(&merged);
    assert_eq!(summary["seeds"], 31);
    assert_eq!(summary["complete"], true);
    let partial = leasehold(&[
        "merge",
        "--expect-seeds",
        "1..31",
        s(&files[0]),
        s(&files[2]),
    ]);
    assert_eq!(partial.status.code(), Some(1));
    assert!(
        text(&partial.stdout).contains("incomplete:"),
        "{}",
        text(&partial.stdout)
    );
}

#[test]
fn shard_auto_reads_job_completion_index() {
    let out = Command::new(BIN)
        .args([
            "sweep", SCENARIO, "--seeds", "1..9", "--shard", "auto/3", "--json",
        ])
        .current_dir(root())
        .env("JOB_COMPLETION_INDEX", "2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary = json(&out);
    assert_eq!(summary["shard"], "3/3");
    assert_eq!(summary["seeds"], 3);
}

#[test]
fn results_are_identical_whatever_jobs_is() {
    let run = |jobs: &str, json_flag: bool| {
        let mut flags = vec!["--variant", BUGGY, "--jobs", jobs];
        if json_flag {
            flags.push("--json");
        }
        let out = sweep("1..40", &flags);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        out
    };
    let one = untimed(json(&run("1", true)));
    let two = untimed(json(&run("2", true)));
    assert_eq!(one, two);
    let failed = one["failed"].as_u64().unwrap();
    assert!(
        failed > 0 && failed < 40,
        "want a mix of passing and failing seeds: {failed}"
    );
    let seeds: Vec<u64> = one["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["seed"].as_u64().unwrap())
        .collect();
    assert!(
        seeds.windows(2).all(|w| w[0] < w[1]),
        "failures in seed order"
    );

    // The human report streams failures in seed order too: identical but
    // for the summary line's timings.
    let human = |jobs| {
        let out = text(&run(jobs, false).stdout);
        let mut lines: Vec<String> = out.lines().map(str::to_string).collect();
        let last = lines.pop().unwrap();
        assert!(last.starts_with("swept 40 seeds"), "{last}");
        lines
    };
    assert_eq!(human("1"), human("2"));
}

#[test]
fn stop_after_keeps_the_first_failures_in_seed_order_for_any_jobs() {
    let run = |jobs| {
        let out = sweep(
            "1..40",
            &[
                "--variant",
                BUGGY,
                "--stop-after",
                "2",
                "--jobs",
                jobs,
                "--json",
            ],
        );
        assert_eq!(out.status.code(), Some(1));
        untimed(json(&out))
    };
    let one = run("1");
    assert_eq!(one, run("2"));
    assert_eq!(one["failed"], 2);
    assert_eq!(one["stopped"], "stop-after");
}

#[test]
fn a_time_budget_stops_cleanly_and_says_how_many_seeds_ran() {
    let out = sweep("1..100000", &["--time-budget", "1ms"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("stopped: the time budget (1ms) ran out after"),
        "{stdout}"
    );
    assert!(stdout.contains("of 100000 seeds"), "{stdout}");
}

#[test]
fn a_killed_sweep_resumed_finds_the_same_failures_as_an_uninterrupted_one() {
    let dir = scratch("kill");
    let full = sweep("1..150", &["--variant", BUGGY, "--json"]);
    let full = untimed(json(&full));
    assert!(full["failed"].as_u64().unwrap() > 0);

    let partial = dir.join("partial.jsonl");
    let mut child = Command::new(BIN)
        .args([
            "sweep",
            SCENARIO,
            "--seeds",
            "1..150",
            "--variant",
            BUGGY,
            "--jobs",
            "1",
            "--out",
            s(&partial),
            "--progress",
            "off",
        ])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for a few results, then SIGKILL (Child::kill sends SIGKILL on Unix).
    let started = Instant::now();
    loop {
        let lines = std::fs::read_to_string(&partial).map_or(0, |t| t.lines().count());
        if lines >= 5 || child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no results appeared"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    child.wait().unwrap();
    let before = std::fs::read_to_string(&partial).unwrap();

    let resumed = sweep(
        "1..150",
        &[
            "--variant",
            BUGGY,
            "--resume",
            "--out",
            s(&partial),
            "--json",
        ],
    );
    assert_eq!(resumed.status.code(), Some(1), "{}", text(&resumed.stderr));
    let resumed_json = json(&resumed);
    let complete_lines = before.lines().count() - usize::from(!before.ends_with('\n'));
    eprintln!(
        "killed after {complete_lines} complete lines; resumed {}",
        resumed_json["resumed_seeds"]
    );
    assert_eq!(resumed_json["resumed_seeds"], complete_lines);
    assert_eq!(untimed(resumed_json), full);
    // Every seed is in the file exactly once now.
    let mut seeds = seeds_in(&partial);
    seeds.sort_unstable();
    assert_eq!(seeds, (1..=150).collect::<Vec<u64>>());
}

#[test]
fn resume_drops_a_truncated_final_line_and_reruns_its_seed() {
    let dir = scratch("truncated");
    let file = dir.join("results.jsonl");
    let out = sweep("1..12", &["--variant", BUGGY, "--out", s(&file)]);
    assert_eq!(out.status.code(), Some(1));
    let full = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    // What a kill in the middle of a write leaves: whole lines, then half a line.
    let cut = format!(
        "{}\n{}\n{}",
        lines[0],
        lines[1],
        &lines[2][..lines[2].len() / 2]
    );
    std::fs::write(&file, cut).unwrap();
    let resumed = sweep(
        "1..12",
        &["--variant", BUGGY, "--resume", "--out", s(&file), "--json"],
    );
    assert_eq!(resumed.status.code(), Some(1), "{}", text(&resumed.stderr));
    let stderr = text(&resumed.stderr);
    assert!(
        stderr.contains("line 3: dropped a truncated final line"),
        "{stderr}"
    );
    assert_eq!(json(&resumed)["resumed_seeds"], 2);
    assert_eq!(seeds_in(&file).len(), 12);
}

#[test]
fn malformed_flags_exit_2_with_one_clear_line() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--seeds", "100"],
            "error: --seeds: \"100\" is not a seed range",
        ),
        (&["--seeds", "9..1"], "error: --seeds: \"9..1\" is empty"),
        (
            &["--seeds", "1..x"],
            "error: --seeds: \"x\" in \"1..x\" is not a seed",
        ),
        (
            &["--seeds", "1..9", "--shard", "4/3"],
            "error: --shard: \"4/3\": shard 4 is not between 1 and 3",
        ),
        (&["--seeds", "1..9", "--shard", "0/3"], "error: --shard:"),
        (
            &["--seeds", "1..9", "--shard", "two"],
            "error: --shard: \"two\" is not a shard",
        ),
        (
            &["--seeds", "1..9", "--shard", "auto/3"],
            "error: --shard: \"auto/3\" takes the shard from JOB_COMPLETION_INDEX, which is not set",
        ),
        (
            &["--seeds", "1..9", "--time-budget", "10"],
            "error: --time-budget: \"10\" is not a duration",
        ),
        (
            &["--seeds", "1..9", "--time-budget", "soon"],
            "error: --time-budget: \"soon\" is not a duration",
        ),
        (
            &["--seeds", "1..9", "--time-budget", "0s"],
            "error: --time-budget: \"0s\" is zero",
        ),
        (
            &["--seeds", "1..9", "--jobs", "0"],
            "error: --jobs: 0 is not between 1",
        ),
        (
            &["--seeds", "1..9", "--stop-after", "none"],
            "error: --stop-after:",
        ),
        (
            &["--seeds", "1..9", "--resume"],
            "error: --resume needs --out FILE",
        ),
        (
            &["--seeds", "1..9", "--variant", "nope"],
            "error: --variant: unknown variant \"nope\"",
        ),
    ];
    for (flags, expected) in cases {
        let mut args = vec!["sweep", SCENARIO];
        args.extend_from_slice(flags);
        let out = leasehold(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.starts_with(expected), "{flags:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{flags:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{flags:?}");
    }
}

#[test]
fn a_corrupt_results_file_is_reported_with_its_line_number() {
    let dir = scratch("corrupt");
    let file = dir.join("results.jsonl");
    let out = sweep("1..3", &["--out", s(&file)]);
    assert_eq!(out.status.code(), Some(0));
    let good = std::fs::read_to_string(&file).unwrap();
    for (corrupt, expect) in [
        ("{\"seed\": 4, oops\n", "line 4: not JSON"),
        (
            "{\"format\":\"leasehold-results/1\",\"seed\":4}\n",
            "line 4: not a leasehold result",
        ),
        ("\n", "line 4: an empty line"),
    ] {
        std::fs::write(
            &file,
            format!("{good}{corrupt}{}", good.lines().next().unwrap()),
        )
        .unwrap();
        let name = file.display().to_string();
        let resumed = sweep("1..5", &["--resume", "--out", s(&file)]);
        let merged = leasehold(&["merge", s(&file)]);
        for (what, out) in [("sweep --resume", resumed), ("merge", merged)] {
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
            assert!(
                stderr.starts_with(&format!("error: {name} {expect}")),
                "{what}: {stderr}"
            );
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
    }
}

#[test]
fn resume_refuses_results_of_another_scenario_text() {
    let dir = scratch("other-text");
    let file = dir.join("results.jsonl");
    let scenario = dir.join("ml-batch.json");
    let original = std::fs::read_to_string(root().join(SCENARIO)).unwrap();
    std::fs::write(&scenario, &original).unwrap();
    let out = leasehold(&["sweep", s(&scenario), "--seeds", "1..3", "--out", s(&file)]);
    assert_eq!(out.status.code(), Some(0));
    // Same name, different text.
    std::fs::write(
        &scenario,
        original.replacen("\"count\": 24", "\"count\": 23", 1),
    )
    .unwrap();
    let resumed = leasehold(&[
        "sweep",
        s(&scenario),
        "--seeds",
        "1..5",
        "--resume",
        "--out",
        s(&file),
    ]);
    let stderr = text(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("line 1: written for another text of scenario"),
        "{stderr}"
    );
}

#[test]
fn junit_report_is_well_formed_and_carries_seed_and_replay() {
    let dir = scratch("junit");
    let xml = dir.join("junit.xml");
    let out = sweep("1..20", &["--variant", BUGGY, "--junit", s(&xml)]);
    assert_eq!(out.status.code(), Some(1));
    let report = Report::deserialize_from_str(&std::fs::read_to_string(&xml).unwrap())
        .expect("well-formed JUnit XML");
    assert_eq!(report.tests, 1);
    assert_eq!(report.failures, 1);
    let case = &report.test_suites[0].test_cases[0];
    assert_eq!(case.name.as_str(), format!("ml-batch / {BUGGY}"));
    let TestCaseStatus::NonSuccess {
        message,
        description,
        ..
    } = &case.status
    else {
        panic!("expected a failure: {:?}", case.status);
    };
    let message = message.as_ref().unwrap().as_str();
    assert!(message.contains("seeds failed; first: seed "), "{message}");
    let description = description.as_ref().unwrap().as_str();
    assert!(
        description.contains(&format!("replay: leasehold run {SCENARIO} --seed ")),
        "{description}"
    );

    // A passing sweep, and merge's report: one test case per scenario and variant.
    let ok_xml = dir.join("ok.xml");
    let results = dir.join("results.jsonl");
    let ok = sweep("1..5", &["--junit", s(&ok_xml), "--out", s(&results)]);
    assert_eq!(ok.status.code(), Some(0));
    let report = Report::deserialize_from_str(&std::fs::read_to_string(&ok_xml).unwrap()).unwrap();
    assert_eq!((report.tests, report.failures), (1, 0));
    let buggy = sweep("1..5", &["--variant", BUGGY, "--out", s(&results)]);
    assert_eq!(buggy.status.code(), Some(1));
    let merged_xml = dir.join("merged.xml");
    let merged = leasehold(&["merge", s(&results), "--junit", s(&merged_xml)]);
    assert_eq!(merged.status.code(), Some(1));
    let report =
        Report::deserialize_from_str(&std::fs::read_to_string(&merged_xml).unwrap()).unwrap();
    assert_eq!((report.tests, report.failures), (2, 1));
}

#[test]
fn merge_flags_seeds_whose_runs_disagree() {
    let dir = scratch("disagree");
    let file = dir.join("results.jsonl");
    let out = sweep("1..2", &["--out", s(&file)]);
    assert_eq!(out.status.code(), Some(0));
    let text_before = std::fs::read_to_string(&file).unwrap();
    let first = text_before.lines().next().unwrap();
    let mut line: Value = serde_json::from_str(first).unwrap();
    line["trace_hash"] = "0000000000000000".into();
    std::fs::write(&file, format!("{text_before}{line}\n")).unwrap();
    let merged = leasehold(&["merge", s(&file), "--json"]);
    assert_eq!(merged.status.code(), Some(1));
    let summary = json(&merged);
    assert_eq!(summary["seeds"], 2);
    assert_eq!(
        summary["failures"][0]["invariants"],
        serde_json::json!(["determinism"])
    );
}
