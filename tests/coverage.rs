//! Coverage points through the record stream: the rare recovery paths the
//! CI sweeps must reach, the fault pairs and record points the run layer
//! derives, and the `coverage` command's contract.

mod common;
use common::*;
use leasehold::coverage::{CoverageTally, NamedPoint, Phase, RecordPoint};
use leasehold_protocol::{CoveragePoint, Variant};

fn tally(name: &str, seeds: std::ops::RangeInclusive<u64>) -> CoverageTally {
    let scn = scenario(name);
    let mut tally = CoverageTally::new();
    for o in run_seeds(&scn, seeds, Variant::Correct) {
        assert!(o.ok(), "{name} seed {}: {:?}", o.seed, o.violations.first());
        tally.add(&o.coverage, scn.scenario.protocol.heartbeat_mode);
    }
    tally
}

/// Issue 42: orphan recovery (a claim landing after its owner was
/// reclaimed) and reclaimer scans of more running tasks than one page once
/// happened about once in 31,000 runs, and never. `deep-backlog` makes both
/// routine: its first hundred seeds reach each many times, so every shard
/// of a CI sweep that runs a hundred seeds of it does.
#[test]
fn ci_sweeps_reach_orphan_recovery_and_multi_page_scans() {
    let t = tally("deep-backlog", 1..=100);
    let points = [
        CoveragePoint::OrphanRequeued,
        CoveragePoint::OwnedListingNextPage,
        CoveragePoint::OrphanSweepNextPage,
    ];
    for p in points {
        let (hits, runs) = t.points[NamedPoint::Protocol(p).index()];
        println!("{:<28} {hits:>7} hits in {runs:>3} of 100 runs", p.name());
        assert!(runs >= 5, "{} reached in only {runs} of 100 runs", p.name());
    }
}

#[test]
fn faults_are_paired_with_what_their_node_was_doing() {
    let t = tally("gc-pause-zombie", 1..=20);
    // Pauses strike workers at work (the zombie story) and idle ones.
    assert!(t.pairs.contains_key(&("pause", Phase::WorkerRunning)));
    assert!(t.pairs.contains_key(&("pause", Phase::WorkerIdle)));
    // Reclaimers are never paused or crashed in this scenario.
    assert!(
        !t.pairs.keys().any(|(_, phase)| matches!(
            phase,
            Phase::ReclaimerWatching | Phase::ReclaimerReclaiming
        )),
        "{:?}",
        t.pairs.keys()
    );
    // A planned fault only: restarts and resumptions are consequences.
    assert!(!t.pairs.keys().any(|(kind, _)| *kind == "resume"));
}

#[test]
fn record_points_come_from_the_ledger_and_the_store() {
    // The zombies of gc-pause-zombie are refused by the fencing service and
    // by the store's version check; the worker never hears of it.
    let t = tally("gc-pause-zombie", 1..=40);
    for r in RecordPoint::ALL {
        assert!(t.hits(NamedPoint::Record(r)) > 0, "{}", r.name());
    }
    // With no fencing service, nothing is fenced at the resource.
    let t = tally("email-campaign", 1..=20);
    assert_eq!(
        t.hits(NamedPoint::Record(RecordPoint::ServiceFencedZombie)),
        0
    );
}

#[test]
fn the_same_seed_reaches_the_same_points() {
    let scn = scenario("deep-backlog");
    let a = leasehold::simulate(&scn, 3, Variant::Correct, None);
    let b = leasehold::simulate(&scn, 3, Variant::Correct, None);
    assert_eq!(a.coverage, b.coverage);
    assert!(a.coverage.reached().count() > 10);
}

#[test]
fn coverage_prints_every_point_as_json() {
    let o = leasehold(&[
        "coverage",
        "scenarios/deep-backlog.json",
        "--seeds",
        "1..30",
        "--json",
        "--jobs",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let points = v["points"].as_array().unwrap();
    let named: Vec<&str> = points
        .iter()
        .filter(|p| p["kind"] != "fault-pair")
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    // Every named point, reached or not, each with its hits.
    assert_eq!(named.len(), NamedPoint::all().count());
    for p in points {
        assert!(p["name"].is_string() && p["hits"].is_u64(), "{p}");
    }
    assert!(points.iter().any(|p| p["kind"] == "fault-pair"
        && p["name"].as_str().unwrap().starts_with("fault:")
        && p["hits"].as_u64().unwrap() > 0));
    // A worker-mode scenario cannot reach task-mode points: not applicable,
    // never "unreached".
    let claim_voided = points
        .iter()
        .find(|p| p["name"] == "task-claim-voided")
        .unwrap();
    assert_eq!(claim_voided["applicable"], false);
    assert!(
        !v["unreached"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "task-claim-voided")
    );
    assert_eq!(v["runs"], 30);
}

#[test]
fn require_all_fails_on_an_unreached_point_and_passes_when_all_are_reached() {
    // Three seeds of a quiet story leave points unreached: exit 1, named.
    let o = leasehold(&[
        "coverage",
        "scenarios/email-campaign.json",
        "--seeds",
        "1..3",
        "--require-all",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("UNREACHED"), "{}", stderr(&o));
    assert!(stdout(&o).contains("UNREACHED"));
    // Without the flag the same run exits 0: coverage measures.
    let o = leasehold(&[
        "coverage",
        "scenarios/email-campaign.json",
        "--seeds",
        "1..3",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The two backlog stories reach every point of their modes.
    let o = leasehold(&[
        "coverage",
        "scenarios/deep-backlog.json",
        "scenarios/task-lease-backlog.json",
        "--seeds",
        "1..150",
        "--require-all",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn coverage_refuses_bad_input() {
    assert_bad_input(
        &leasehold(&["coverage", "scenarios/friday-rush.json", "--seeds", "9..1"]),
        &["--seeds"],
    );
    assert_bad_input(
        &leasehold(&[
            "coverage",
            "scenarios/friday-rush.json",
            "--seeds",
            "1..2",
            "--variant",
            "nope",
        ]),
        &["--variant", "nope"],
    );
    assert_bad_input(
        &leasehold(&["coverage", "no-such.json", "--seeds", "1..2"]),
        &["no-such.json"],
    );
    assert_bad_input(
        &leasehold(&[
            "coverage",
            "scenarios/friday-rush.json",
            "--seeds",
            "1..2",
            "--jobs",
            "0",
        ]),
        &["--jobs"],
    );
}

#[test]
fn sweep_reports_coverage_and_merge_requires_it() {
    let dir = std::env::temp_dir().join(format!("leasehold-coverage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("r.jsonl");
    let out_s = out.to_str().unwrap();
    let o = leasehold(&[
        "sweep",
        "scenarios/deep-backlog.json",
        "--seeds",
        "1..20",
        "--coverage",
        "--out",
        out_s,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["coverage"]["runs"], 20);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.lines()
            .all(|l| l.contains("\"coverage\":{\"mode\":\"worker\""))
    );
    // Merge sums the lines' points; twenty seeds leave some unreached.
    let o = leasehold(&["merge", out_s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("orphan-sweep-next-page"));
    let o = leasehold(&["merge", out_s, "--require-coverage"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("UNREACHED"));
    // Lines without coverage cannot show it: bad input, said so.
    let plain = dir.join("plain.jsonl");
    let o = leasehold(&[
        "sweep",
        "scenarios/deep-backlog.json",
        "--seeds",
        "1..2",
        "--out",
        plain.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_bad_input(
        &leasehold(&["merge", plain.to_str().unwrap(), "--require-coverage"]),
        &["--require-coverage"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
