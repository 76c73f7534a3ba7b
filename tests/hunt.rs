//! Bug-finding power, in CI: every planted bug is caught within a small
//! budget and the correct protocol survives it on every scenario, judged as
//! `leasehold hunt` judges (the invariants and the shipped cost budgets).

mod common;
use common::*;
use leasehold::hunt::{HuntOptions, HuntScenario, hunt_with};
use leasehold_protocol::Variant;

#[test]
fn every_planted_bug_is_caught_and_correct_survives() {
    let budget = std::env::var("LEASEHOLD_HUNT_BUDGET").map_or(40, |s| s.parse().unwrap());
    let scenarios: Vec<HuntScenario> = all_scenarios()
        .into_iter()
        .filter(|(_, s)| s.scenario.expected_violations.is_empty())
        .map(|(name, scenario)| HuntScenario {
            file: root().join("scenarios").join(format!("{name}.json")),
            scenario,
        })
        .collect();
    let variants: Vec<Variant> = Variant::all().collect();
    assert!(variants.len() >= 15);
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    // With the shipped cost budgets, as `leasehold hunt` judges by default.
    let checks = shipped_hunt_checks(&scenarios);
    assert!(
        checks.cost_budgets.iter().all(Option::is_some),
        "every hunt scenario has a budget"
    );
    let results = hunt_with(
        &scenarios,
        &variants,
        budget,
        jobs,
        HuntOptions::default(),
        &checks,
    )
    .results;
    assert_eq!(results.len(), variants.len());
    for r in &results {
        println!(
            "{:<32} caught={} seeds={:?} {:?} {:?}",
            r.variant, r.caught, r.seeds_to_detect, r.scenario, r.invariant
        );
    }
    let correct = results.iter().find(|r| r.variant == "correct").unwrap();
    assert!(!correct.caught, "correct failed: {correct:?}");
    assert_eq!(correct.runs, budget * scenarios.len() as u64);
    for r in results.iter().filter(|r| r.variant != "correct") {
        assert!(
            r.caught,
            "planted bug {} escaped {} runs",
            r.variant, r.runs
        );
    }
}
