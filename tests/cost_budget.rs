//! The cost budget: silent on the correct protocol, firing on a protocol
//! that asks the store for many times what it needs (here configured so: a
//! reclaimer scanning fifty times as often, as a mutant's did; workers
//! polling ten times as often; and the planted `herd-claims`), in the
//! library and through the CLI.

mod common;
use common::*;
use leasehold::cost_budget::{BudgetFile, CostBudget, judge};
use leasehold::{Scenario, ValidScenario, simulate};
use leasehold_protocol::Variant;

fn shipped_budgets() -> BudgetFile {
    BudgetFile::read(&BudgetFile::default_path(&root().join("scenarios")))
        .expect("the shipped budget file reads")
}

fn shipped_budget(scn: &ValidScenario) -> CostBudget {
    leasehold::cost_budget::budget_for(&shipped_budgets(), scn)
        .expect("every shipped hunt scenario has a current budget")
        .clone()
}

/// `name`'s scenario text with one protocol field set to `value`.
fn configured(name: &str, field: &str, value: u64) -> String {
    let text = std::fs::read_to_string(root().join("scenarios").join(format!("{name}.json")))
        .expect("a shipped scenario");
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("json");
    json["protocol"][field] = serde_json::json!(value);
    serde_json::to_string_pretty(&json).expect("json")
}

#[test]
fn every_hunt_scenario_has_a_budget_and_correct_stays_within_it() {
    for (name, scn) in all_scenarios() {
        if !scn.scenario.expected_violations.is_empty() {
            continue;
        }
        let budget = shipped_budget(&scn);
        for outcome in run_seeds(&scn, 1..=6, Variant::Correct) {
            let verdict = judge(&scn, &outcome, &budget).expect("a run with counts");
            assert!(
                verdict.over.is_empty(),
                "{name} seed {}: {:?}",
                outcome.seed,
                verdict.message
            );
        }
    }
}

#[test]
fn a_reclaimer_reading_fifty_times_as_often_is_over_budget() {
    let budget = shipped_budget(&scenario("friday-rush"));
    // The scan interval cut fifty-fold: the same protocol, its reclaimers
    // reading every page fifty times as often.
    let costly = Scenario::parse(&configured("friday-rush", "scan_interval_ms", 100))
        .expect("a valid scenario");
    let outcome = simulate(&costly, 1, Variant::Correct, None);
    assert!(outcome.ok(), "still correct: {:?}", outcome.violations);
    let verdict = judge(&costly, &outcome, &budget).expect("a run with counts");
    let over: Vec<&str> = verdict.over.iter().map(|o| o.figure).collect();
    assert_eq!(
        over,
        [
            "reclaimer_reads_per_task",
            "reclaimer_reads_per_worker_minute"
        ],
        "{:?}",
        verdict.message
    );
    let message = verdict.message.expect("a report");
    assert!(
        message.starts_with("store requests over budget: reclaimer reads per task ")
            && message.contains("over seeds 1..10000 x 2 + 50 ops"),
        "{message}"
    );
}

/// The planted cost bug: every idle worker reading the same head of the
/// pending index, on the scenario where a crowd polls for a trickle of work.
/// Every invariant holds; the claims each task draws put the workers'
/// writes over budget. The correct protocol's spread claims, on the same
/// seeds, stay within it.
#[test]
fn herd_claims_are_over_budget_on_an_idle_fleet_and_spread_claims_are_not() {
    let scn = scenario("idle-fleet");
    let budget = shipped_budget(&scn);
    for seed in 1..=3 {
        let herd = simulate(&scn, seed, Variant::HerdClaims, None);
        assert!(herd.ok(), "a cost, not a safety bug: {:?}", herd.violations);
        let verdict = judge(&scn, &herd, &budget).expect("a run with counts");
        let over: Vec<&str> = verdict.over.iter().map(|o| o.figure).collect();
        assert!(
            over.contains(&"worker_writes_per_task"),
            "seed {seed}: {:?}",
            verdict.message
        );
        let spread = simulate(&scn, seed, Variant::Correct, None);
        let verdict = judge(&scn, &spread, &budget).expect("a run with counts");
        assert!(
            verdict.over.is_empty(),
            "seed {seed}: {:?}",
            verdict.message
        );
    }
}

#[test]
fn workers_polling_ten_times_as_often_are_over_budget() {
    let budget = shipped_budget(&scenario("payments"));
    let text = configured("payments", "poll_interval_ms", 100);
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("json");
    json["protocol"]["idle_poll_max_ms"] = serde_json::json!(100);
    let costly = Scenario::parse(&json.to_string()).expect("a valid scenario");
    let outcome = simulate(&costly, 2, Variant::Correct, None);
    let verdict = judge(&costly, &outcome, &budget).expect("a run with counts");
    assert!(
        verdict
            .over
            .iter()
            .any(|o| o.figure == "worker_reads_per_worker_minute"),
        "{:?}",
        verdict.message
    );
}

/// The CLI, as CI uses it: a budget file beside the scenario, measured on
/// the protocol before a change; the change (here, the configuration)
/// multiplies what the reclaimer reads.
#[test]
fn sweep_and_run_report_a_run_over_budget_and_the_flag_turns_it_off() {
    let dir = std::env::temp_dir().join(format!("leasehold-cost-budget-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let file = dir.join("friday-rush.json");
    let text = configured("friday-rush", "scan_interval_ms", 100);
    std::fs::write(&file, &text).expect("written");
    let costly = Scenario::parse(&text).expect("valid");
    let mut before = shipped_budget(&scenario("friday-rush"));
    before.scenario_hash = leasehold::lease_job::scenario_hash(&costly);
    let mut budgets = BudgetFile::default();
    budgets.put(before);
    std::fs::write(dir.join("cost-budget.jsonl"), budgets.text()).expect("written");
    let path = file.to_str().expect("utf-8");

    let o = leasehold(&["sweep", path, "--seeds", "1..2", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["failed"], 2);
    let first = &v["failures"][0];
    assert_eq!(first["invariants"], serde_json::json!(["cost-budget"]));
    assert!(
        first["first_violation"]
            .as_str()
            .is_some_and(|s| s.contains("reclaimer reads per task")),
        "{first}"
    );

    let o = leasehold(&["run", path, "--seed", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("VIOLATION cost-budget: friday-rush seed 1"),
        "{out}"
    );
    assert!(out.contains("cost-budget at "), "{out}");

    for args in [
        vec!["sweep", path, "--seeds", "1..2", "--no-cost-budget"],
        vec!["run", path, "--seed", "1", "--no-cost-budget"],
    ] {
        let o = leasehold(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stdout(&o));
    }
    std::fs::remove_dir_all(&dir).expect("cleaned up");
}

#[test]
fn a_budget_for_another_text_of_the_scenario_is_not_used_and_a_bad_file_is_refused() {
    let dir = std::env::temp_dir().join(format!("leasehold-cost-stale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let file = dir.join("friday-rush.json");
    std::fs::write(&file, configured("friday-rush", "scan_interval_ms", 100)).expect("written");
    let mut budgets = BudgetFile::default();
    budgets.put(shipped_budget(&scenario("friday-rush")));
    let budget_path = dir.join("cost-budget.jsonl");
    std::fs::write(&budget_path, budgets.text()).expect("written");
    let path = file.to_str().expect("utf-8");
    let o = leasehold(&["run", path, "--seed", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("no cost budget for friday-rush (worker heartbeat mode)")
            && stderr(&o).contains("another text of it"),
        "{}",
        stderr(&o)
    );

    std::fs::write(&budget_path, "{\"format\": 3}\n").expect("written");
    assert_bad_input(
        &leasehold(&["run", path, "--seed", "1"]),
        &["--cost-budget", "cost-budget.jsonl line 1"],
    );
    let missing = dir.join("missing.jsonl");
    assert_bad_input(
        &leasehold(&[
            "run",
            path,
            "--cost-budget",
            missing.to_str().expect("utf-8"),
        ]),
        &["--cost-budget", "missing.jsonl"],
    );
    assert_bad_input(
        &leasehold(&[
            "sweep",
            path,
            "--seeds",
            "1..2",
            "--cost-budget",
            "x",
            "--no-cost-budget",
        ]),
        &["--no-cost-budget"],
    );
    std::fs::remove_dir_all(&dir).expect("cleaned up");
}
