//! The test each mutant of the protocol must fail (scripts/mutation-score.sh
//! runs it under cargo-mutants): the correct protocol, as mutated, hunted on
//! every hunt scenario at the budget CI's hunt uses (tests/hunt.rs), with
//! everything that judges a hunt on: the invariants, the cost budget beside
//! the scenarios, and the watchdog (a mutant whose step never returns is
//! reported here as `simulation-healthy` and the process exits 1).
//!
//! On the unmutated protocol it passes: `correct` survives the hunt.

mod common;
use common::*;
use leasehold::cost_budget::{BudgetFile, budget_for};
use leasehold::hunt::{HuntChecks, HuntOptions, HuntScenario, hunt_with};
use leasehold::watchdog::{LeaseWatch, RunWatch, stuck_outcome, supervise};
use leasehold_protocol::Variant;
use std::io::Write;
use std::time::Duration;

/// Runs take milliseconds; a mutant's run that takes this long is stuck.
const RUN_TIMEOUT: Duration = Duration::from_secs(20);

#[test]
fn the_correct_protocol_survives_the_ci_hunt() {
    let budget = std::env::var("LEASEHOLD_HUNT_BUDGET").map_or(40, |s| s.parse().unwrap());
    let scenarios: Vec<HuntScenario> = all_scenarios()
        .into_iter()
        .filter(|(_, s)| s.scenario.expected_violations.is_empty())
        .map(|(name, scenario)| HuntScenario {
            file: root().join("scenarios").join(format!("{name}.json")),
            scenario,
        })
        .collect();
    let budgets = BudgetFile::read(&BudgetFile::default_path(&root().join("scenarios")))
        .expect("the shipped budget file reads");
    let cost_budgets = scenarios
        .iter()
        .map(|s| match budget_for(&budgets, &s.scenario) {
            Ok(b) => Some(b.clone()),
            Err(note) => {
                eprintln!("{note}");
                None
            }
        })
        .collect();
    let watch: LeaseWatch<'_> = RunWatch::new(RUN_TIMEOUT);
    let checks = HuntChecks {
        watch: Some(&watch),
        cost_budgets,
    };
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let results = supervise(
        &watch,
        || {
            let options = HuntOptions::default();
            hunt_with(
                &scenarios,
                &[Variant::Correct],
                budget,
                jobs,
                options,
                &checks,
            )
            .results
        },
        |stuck, elapsed| {
            let outcome = stuck_outcome(&stuck, elapsed, RUN_TIMEOUT);
            // Straight to stderr, past the test harness's capture: the
            // process exits before the harness would print it.
            let _ = writeln!(
                std::io::stderr(),
                "CAUGHT: correct on {} seed {}: {}",
                stuck.scenario.name(),
                stuck.seed,
                outcome.violations[0].message
            );
            1
        },
    );
    let correct = &results[0];
    assert!(
        !correct.caught,
        "CAUGHT: correct failed {} on {} seed {} (run {} of the hunt)",
        correct.invariant.as_deref().unwrap_or("?"),
        correct.scenario.as_deref().unwrap_or("?"),
        correct.seed.unwrap_or(0),
        correct.seeds_to_detect.unwrap_or(0)
    );
    assert_eq!(correct.runs, budget * scenarios.len() as u64);
}
