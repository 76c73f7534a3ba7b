#![allow(dead_code)]
use leasehold::{RunOutcome, Scenario, ValidScenario, simulate};
use leasehold_check::Invariant;
use leasehold_protocol::Variant;
use std::path::PathBuf;
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Run the `leasehold` binary in the package root.
pub fn leasehold(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the binary runs")
}

pub fn scenario(name: &str) -> ValidScenario {
    Scenario::load(&root().join("scenarios").join(format!("{name}.json")))
        .expect("shipped scenarios are valid")
}

/// Run `seeds` on all cores; outcomes in seed order.
pub fn run_seeds(
    scn: &ValidScenario,
    seeds: std::ops::RangeInclusive<u64>,
    variant: Variant,
) -> Vec<RunOutcome> {
    let seeds: Vec<u64> = seeds.collect();
    leasehold::parallel::map(&seeds, |&seed| simulate(scn, seed, variant, None))
}

/// The first seed in `seeds` on which `invariant` fires, if any.
pub fn first_firing(
    scn: &ValidScenario,
    seeds: std::ops::RangeInclusive<u64>,
    variant: Variant,
    invariant: Invariant,
) -> Option<RunOutcome> {
    seeds
        .map(|seed| simulate(scn, seed, variant, None))
        .find(|o| o.invariants.contains(&invariant))
}

/// Every shipped scenario, by name, in file-name order.
pub fn all_scenarios() -> Vec<(String, ValidScenario)> {
    leasehold::catalogue::scenario_files(&root().join("scenarios"))
        .expect("scenarios/ exists")
        .into_iter()
        .map(|p| {
            let s = Scenario::load(&p).expect("shipped scenarios are valid");
            (s.name().to_string(), s)
        })
        .collect()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The bad-input contract: exit 2, one line on stderr that contains every
/// needle, no panic.
pub fn assert_bad_input(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "stdout: {} stderr: {err}",
        stdout(o)
    );
    for needle in needles {
        assert!(err.contains(needle), "stderr should name {needle:?}: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.lines().count(), 1, "one clear line: {err}");
}

/// The checks `leasehold hunt` makes by default: each scenario's cost
/// budget from the shipped `scenarios/cost-budget.jsonl` (a planted cost
/// bug, `herd-claims`, is caught only so).
pub fn shipped_hunt_checks<'a>(
    scenarios: &[leasehold::hunt::HuntScenario],
) -> leasehold::hunt::HuntChecks<'a> {
    use leasehold::cost_budget::{BudgetFile, budget_for};
    let file = BudgetFile::read(&BudgetFile::default_path(&root().join("scenarios")))
        .expect("the shipped budget file reads");
    leasehold::hunt::HuntChecks {
        watch: None,
        cost_budgets: scenarios
            .iter()
            .map(|s| budget_for(&file, &s.scenario).ok().cloned())
            .collect(),
    }
}
