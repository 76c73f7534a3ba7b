//! Guided hunting: deterministic in its own seed whatever the job count,
//! catches the planted catalogue (with the correct protocol surviving its
//! mutated plans), and keeps only inputs that reached new coverage.

mod common;
use common::*;
use leasehold::guided::{Guide, Input};
use leasehold::hunt::{HuntChecks, HuntOptions, HuntScenario, hunt_with};
use leasehold_protocol::Variant;

fn hunt_scenarios(names: &[&str]) -> Vec<HuntScenario> {
    all_scenarios()
        .into_iter()
        .filter(|(name, s)| {
            s.scenario.expected_violations.is_empty()
                && (names.is_empty() || names.contains(&name.as_str()))
        })
        .map(|(name, scenario)| HuntScenario {
            file: root().join("scenarios").join(format!("{name}.json")),
            scenario,
        })
        .collect()
}

/// A hunt's rows and coverage as one comparable text.
fn fingerprint(report: &leasehold::hunt::HuntReport) -> String {
    format!(
        "{}\n{}\n{}",
        serde_json::to_string(&report.results).unwrap(),
        report.coverage.to_json(),
        report.corpus_added
    )
}

#[test]
fn a_guided_hunt_is_a_function_of_its_seed_whatever_the_jobs() {
    let scenarios = hunt_scenarios(&["gc-pause-zombie", "ml-batch", "deep-backlog"]);
    let variants = [
        Variant::Correct,
        Variant::ReclaimerOwnTtl,
        Variant::NoSelfFencing,
    ];
    let guided = |seed, jobs| {
        let options = HuntOptions { guided: Some(seed) };
        fingerprint(&hunt_with(
            &scenarios,
            &variants,
            12,
            jobs,
            options,
            &HuntChecks::default(),
        ))
    };
    let one = guided(7, 1);
    assert_eq!(one, guided(7, 3), "the job count changed the hunt");
    assert_eq!(one, guided(7, 1), "the same seed hunted differently");
    // Another guided seed mutates differently (the correct rows' runs are
    // all the budget either way, but what they reached is not).
    assert_ne!(one, guided(8, 1));
    // And a plain hunt is not a guided one.
    let plain = hunt_with(
        &scenarios,
        &variants,
        12,
        1,
        HuntOptions::default(),
        &HuntChecks::default(),
    );
    assert_eq!(plain.corpus_added, 0);
    assert_ne!(one, fingerprint(&plain));
}

#[test]
fn a_guided_hunt_catches_every_planted_bug_and_correct_survives() {
    let budget = std::env::var("LEASEHOLD_HUNT_BUDGET").map_or(40, |s| s.parse().unwrap());
    let scenarios = hunt_scenarios(&[]);
    let variants: Vec<Variant> = Variant::all().collect();
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let options = HuntOptions {
        guided: Some(leasehold::guided::DEFAULT_GUIDED_SEED),
    };
    let report = hunt_with(
        &scenarios,
        &variants,
        budget,
        jobs,
        options,
        &shipped_hunt_checks(&scenarios),
    );
    for r in &report.results {
        println!(
            "{:<32} caught={} runs={:?} mutated={} {:?}",
            r.variant, r.caught, r.seeds_to_detect, r.mutated, r.scenario
        );
    }
    let correct = report
        .results
        .iter()
        .find(|r| r.variant == "correct")
        .unwrap();
    assert!(
        !correct.caught,
        "correct failed a guided input: {correct:?}"
    );
    assert_eq!(correct.runs, budget * scenarios.len() as u64);
    for r in report.results.iter().filter(|r| r.variant != "correct") {
        assert!(
            r.caught,
            "planted bug {} escaped {} runs",
            r.variant, r.runs
        );
        // A failure found by a mutated plan comes with a file replaying it.
        if r.mutated {
            let f = r.failure.as_ref().expect("a mutated catch keeps its run");
            let again = f.rerun().unwrap();
            assert!(f.reproduced_by(&again), "{}", r.variant);
        }
    }
    assert!(report.corpus_added > 0);
}

#[test]
fn the_corpus_grows_on_new_coverage_only() {
    let scn = scenario("deep-backlog");
    let mut guide = Guide::new(vec![&scn], Variant::Correct, 1, 0);
    let seed_one = Input {
        scenario: 0,
        seed: 1,
        faults: None,
    };
    guide.run(seed_one.clone(), false);
    assert_eq!((guide.added, guide.corpus_len()), (1, 1));
    // The very same run again reaches nothing new: not kept.
    guide.run(seed_one, false);
    assert_eq!((guide.added, guide.corpus_len()), (1, 1));
    // Its mutations and further seeds do reach new points and buckets
    // (a fault pair, a higher hit count), and join.
    for _ in 0..20 {
        let (input, mutated) = guide.next_input();
        guide.run(input, mutated);
    }
    assert!(guide.corpus_len() > 1, "{}", guide.corpus_len());
    assert!(guide.corpus_len() <= leasehold::guided::CORPUS_CAP);
    assert_eq!(guide.tally.runs, 22);
}

#[test]
fn hunt_guided_on_the_command_line() {
    let dir = std::env::temp_dir().join(format!("leasehold-guided-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let args = [
        "hunt",
        "--variants",
        "correct,no-self-fencing",
        "--scenarios",
        "gc-pause-zombie,deep-backlog",
        "--budget",
        "6",
        "--guided",
        "--guided-seed",
        "3",
        "--coverage",
        "--json",
    ];
    let o = leasehold(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["guided"]["seed"], 3);
    assert!(v["coverage"]["points"].as_array().unwrap().len() > 30);
    // --failures-dir needs a guided hunt, and an existing directory.
    assert_bad_input(
        &leasehold(&[
            "hunt",
            "--budget",
            "1",
            "--failures-dir",
            dir.to_str().unwrap(),
        ]),
        &["--failures-dir", "--guided"],
    );
    assert_bad_input(
        &leasehold(&[
            "hunt",
            "--budget",
            "1",
            "--guided",
            "--failures-dir",
            "no/such/dir",
        ]),
        &["--failures-dir"],
    );
    // --guided-seed alone is refused: it only means something guided.
    let o = leasehold(&["hunt", "--budget", "1", "--guided-seed", "4"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--guided"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A failure found by a mutated plan is kept as a failure file that
/// replays it (no seed alone does).
#[test]
fn a_mutated_failure_replays_from_its_file() {
    let scn = scenario("friday-rush");
    let variant = Variant::NoSelfFencing;
    let mut guide = Guide::new(vec![&scn], variant, 1, 0);
    let mut checked = 0;
    for _ in 0..200 {
        let (input, mutated) = guide.next_input();
        let run = guide.run(input, mutated);
        if !mutated || run.outcome.ok() {
            continue;
        }
        let f = leasehold::shrink::FailureFile::of_run(&scn, variant, &run.outcome).unwrap();
        let text = serde_json::to_string(&f).unwrap();
        let (read, valid, v) = leasehold::shrink::FailureFile::parse_checked(&text).unwrap();
        let again = read.rerun_with(&valid, v);
        assert!(read.reproduced_by(&again), "{}", f.invariant);
        // The very run the hunt made, record for record.
        assert_eq!(again.trace_hash_hex(), run.outcome.trace_hash_hex());
        checked += 1;
        if checked == 3 {
            return;
        }
    }
    panic!("only {checked} mutated failures in 200 runs");
}
