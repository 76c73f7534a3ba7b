//! The report and the pictures: `explain` tells the story of a failure,
//! `export` writes Chrome trace JSON that Perfetto opens and an SVG swimlane.

mod common;
use common::leasehold;

const MINIMAL: &str = "scenarios/regressions/no-self-fencing.failure.json";

#[test]
fn explain_tells_the_story_and_ends_in_the_violation() {
    let o = leasehold(&["explain", MINIMAL]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("claims task"), "{out}");
    assert!(out.contains("PAUSE"), "{out}");
    assert!(out.contains("declares"), "{out}");
    let last = out.lines().last().unwrap();
    assert!(last.starts_with("VIOLATION no-double-ownership"), "{last}");
    assert!(
        out.lines().count() < 60,
        "a minimal run reads short:\n{out}"
    );
}

#[test]
fn explain_tells_why_a_worker_stopped() {
    // Under no-self-fencing the worker never fences itself: it stops when its
    // heartbeat conflicts because a reclaimer declared it dead.
    let o = leasehold(&["explain", MINIMAL]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("worker-9#1 learns it was declared dead (a write to its member document conflicts) and stops all work"),
        "{out}"
    );
    assert!(!out.contains("cannot prove its lease"), "{out}");
    // The correct protocol, same run: the worker fences itself when its
    // lease deadline passes, before anyone declares it dead.
    let run =
        leasehold::run_file::ReadRun::read(&std::fs::read_to_string(MINIMAL).unwrap()).unwrap();
    let (lines, _) = leasehold::explain::explain(
        &run.scn,
        run.seed(),
        leasehold_protocol::Variant::Correct,
        run.plan(),
    );
    let story = lines.join("\n");
    assert!(
        story.contains("cannot prove its lease and fences itself"),
        "{story}"
    );
    assert!(
        !story.contains("a write to its member document conflicts"),
        "{story}"
    );
}

/// Export the minimal failure in `format`; returns the file's text.
fn export_minimal(format: &str, file_name: &str) -> String {
    let path = std::env::temp_dir().join(format!("leasehold-{}-{file_name}", std::process::id()));
    let o = leasehold(&[
        "export",
        MINIMAL,
        "--format",
        format,
        "--out",
        path.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    text
}

#[test]
fn perfetto_export_is_chrome_trace_json() {
    let v: serde_json::Value =
        serde_json::from_str(&export_minimal("perfetto", "perfetto.json")).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let spans: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "lease")
        .collect();
    assert!(!spans.is_empty());
    for s in &spans {
        assert!(
            s["ts"].is_u64()
                && s["dur"].as_u64().unwrap() > 0
                && s["pid"].is_u64()
                && s["tid"].is_u64()
        );
    }
    assert!(
        events
            .iter()
            .any(|e| e["ph"] == "M" && e["name"] == "process_name")
    );
    assert!(events.iter().any(|e| e["cat"] == "violation"));
    assert!(events.iter().any(|e| e["ph"] == "C"));
    // The write rate falls to 0 in the first idle second after a busy one
    // (a counter holds its value until the next sample).
    let counter: Vec<(u64, u64)> = events
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| {
            (
                e["ts"].as_u64().unwrap(),
                e["args"]["writes"].as_u64().unwrap(),
            )
        })
        .collect();
    for (ts, writes) in &counter {
        if *writes > 0 {
            let next = counter.iter().find(|(t, _)| *t > *ts);
            assert!(
                next.is_some_and(|(t, w)| *t == ts + 1_000_000 || *w == 0),
                "no sample in the second after {ts}: {counter:?}"
            );
        }
    }
    assert!(counter.iter().any(|(_, w)| *w == 0), "{counter:?}");
    // Spans on one track never overlap (Perfetto requires nesting).
    let mut by_track: std::collections::BTreeMap<(u64, u64), Vec<(u64, u64)>> = Default::default();
    for s in &spans {
        let (ts, dur) = (s["ts"].as_u64().unwrap(), s["dur"].as_u64().unwrap());
        by_track
            .entry((s["pid"].as_u64().unwrap(), s["tid"].as_u64().unwrap()))
            .or_default()
            .push((ts, ts + dur));
    }
    for spans in by_track.values_mut() {
        spans.sort();
        assert!(
            spans.windows(2).all(|w| w[0].1 <= w[1].0),
            "overlapping spans on one track: {spans:?}"
        );
    }
}

#[test]
fn svg_export_draws_lanes_and_the_violation() {
    let svg = export_minimal("svg", "swimlane.svg");
    assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
    // A lane for the worker the shrunk run kept.
    let failure: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(MINIMAL).unwrap()).unwrap();
    let worker = &failure["scenario"]["fleet"]["worker_ids"][0];
    assert!(svg.contains(&format!("worker-{worker}")), "worker-{worker}");
    assert!(svg.contains("VIOLATION acts-within-lease"));
    // The restart dot is in the legend.
    assert!(
        svg.contains(">restart<") || svg.contains("restart\n"),
        "no restart legend"
    );
    assert!(svg.contains("simulated time (s)"));
    let bad = leasehold(&["export", MINIMAL, "--format", "gif", "--out", "/tmp/x"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn export_writes_png_and_refuses_an_extension_of_another_format() {
    let dir = std::env::temp_dir().join(format!("leasehold-png-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let export = |format: &str, name: &str| {
        let out = dir.join(name);
        let o = leasehold(&[
            "export",
            MINIMAL,
            "--format",
            format,
            "--out",
            out.to_str().unwrap(),
        ]);
        (o, out)
    };
    const PNG_MAGIC: &[u8] = b"\x89PNG";
    // `png` is a format; `svg` into a .png wrote PNG before it existed, and still does.
    for (format, name) in [("png", "a.png"), ("png", "a"), ("svg", "b.png")] {
        let (o, out) = export(format, name);
        assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
        assert!(
            std::fs::read(&out).unwrap().starts_with(PNG_MAGIC),
            "{name}"
        );
    }
    // Same input, same picture: the three renders are byte-identical.
    let a = std::fs::read(dir.join("a.png")).unwrap();
    assert_eq!(a, std::fs::read(dir.join("a")).unwrap());
    assert_eq!(a, std::fs::read(dir.join("b.png")).unwrap());
    for (format, name, fits) in [
        ("perfetto", "p.png", ".json"),
        ("perfetto", "p.svg", ".json"),
        ("png", "q.svg", ".png"),
        ("png", "q.json", ".png"),
        ("svg", "r.json", ".svg"),
        ("svg", "r.JSON", ".svg"),
    ] {
        let (o, out) = export(format, name);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{format} {name}: {err}");
        assert!(
            err.starts_with(&format!("error: --out {}", out.display())) && err.contains(fits),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!out.exists(), "{name} was written");
    }
    let help = leasehold(&["export", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--out <OUT>"), "{help}");
    assert!(help.contains("png"), "{help}");
    assert!(help.contains("Failure file"), "{help}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explain_of_a_passing_run_says_so_and_tells_chosen_tasks_in_full() {
    let trace = std::env::temp_dir().join(format!("leasehold-pass-{}.jsonl", std::process::id()));
    let t = trace.to_str().unwrap();
    // A seed whose story of faults and stops is longer than the cut (93
    // lines against 80), so that the cut shows, and whose story of tasks 3
    // and 5 keeps both arrivals outside its cut.
    let o = leasehold(&[
        "run",
        "scenarios/gc-pause-zombie.json",
        "--seed",
        "12",
        "--trace",
        t,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let explain = |extra: &[&str]| {
        let mut args = vec!["explain", t];
        args.extend_from_slice(extra);
        let o = leasehold(&args);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let (code, out) = explain(&[]);
    assert_eq!(code, Some(0));
    let header = out.lines().next().unwrap();
    assert!(
        header.contains("no invariant was violated, so no task is followed"),
        "{header}"
    );
    assert!(!header.trim_end().ends_with("tasks"), "{header}");
    assert!(out.contains("more lines ..."), "a long story is cut: {out}");
    let (_, all) = explain(&["--all"]);
    assert!(!all.contains("more lines ..."), "{all}");
    assert!(all.lines().count() > out.lines().count());
    for args in [&["--task", "3,5"][..], &["--task", "3", "--task", "5"]] {
        let (code, told) = explain(args);
        assert_eq!(code, Some(0));
        let header = told.lines().next().unwrap();
        assert!(header.ends_with("the story of tasks 3, 5"), "{header}");
        assert!(
            told.contains("task 3 arrives") && told.contains("task 5 arrives"),
            "{told}"
        );
    }
    let o = leasehold(&["explain", t, "--task", "400"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        common::stderr(&o).trim_end(),
        "error: --task: task 400 is not in this run (its tasks are 0 to 399)"
    );
    let _ = std::fs::remove_file(&trace);
}

#[test]
fn concurrent_lease_bars_get_rows_of_their_own() {
    let scn = common::scenario("friday-rush");
    let variant = leasehold_protocol::Variant::from_name("no-idempotency-key").unwrap();
    let (tl, _) = leasehold::export::timeline(&scn, 3, variant, &leasehold::run::Rerun::Seed(None));
    let min_len_us = tl.end_us / 2000;
    let rows = leasehold::swimlane::bar_rows(&tl.spans, min_len_us);
    assert_eq!(rows, leasehold::swimlane::bar_rows(&tl.spans, min_len_us));
    let end = |s: &leasehold::export::LeaseSpan| s.end_us.max(s.start_us + min_len_us);
    let mut overlapping = 0;
    for (i, a) in tl.spans.iter().enumerate() {
        for (j, b) in tl.spans.iter().enumerate().skip(i + 1) {
            if a.node != b.node || end(a) <= b.start_us || end(b) <= a.start_us {
                continue;
            }
            overlapping += 1;
            assert_ne!(rows[i].0, rows[j].0, "{a:?} and {b:?} share a row");
        }
    }
    assert!(overlapping > 0, "the run has concurrent leases on a worker");
    assert!(rows.iter().all(|&(row, of)| row < of));
}
