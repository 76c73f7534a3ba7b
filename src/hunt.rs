//! `hunt`: how good is leasehold at catching real lease bugs? For each
//! planted variant, sweep the scenarios (round-robin over seeds 1, 2, ...)
//! until one fails; the correct protocol must survive the whole budget on
//! every scenario.

use crate::run::simulate;
use crate::scenario::ValidScenario;
use leasehold_check::Invariant;
use leasehold_protocol::Variant;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Clone, Debug)]
pub struct HuntScenario {
    pub file: PathBuf,
    pub scenario: ValidScenario,
}

#[derive(Clone, Debug, Serialize)]
pub struct HuntResult {
    pub variant: String,
    /// For a planted bug: it was caught. For `correct`: it failed (bad).
    pub caught: bool,
    /// Runs until the first failure (1-based), counting every scenario.
    pub seeds_to_detect: Option<u64>,
    pub scenario: Option<String>,
    #[serde(skip)]
    pub scenario_file: Option<PathBuf>,
    pub invariant: Option<String>,
    /// The heartbeat mode (`worker` or `task`) of the scenario that caught it.
    pub mode: Option<String>,
    pub seed: Option<u64>,
    /// Runs made for this variant.
    pub runs: u64,
}

impl HuntResult {
    /// Whether this row is what we want: planted bugs caught, correct clean.
    pub fn as_expected(&self) -> bool {
        if self.variant == Variant::Correct.name() {
            !self.caught
        } else {
            self.caught
        }
    }
}

enum Job {
    /// Round-robin a planted variant over all scenarios.
    Planted(Variant),
    /// The correct protocol on one scenario, every seed of the budget.
    Correct(usize),
}

/// Run the hunt on `jobs` threads. Results come back in `variants` order and
/// do not depend on `jobs`.
pub fn hunt(
    scenarios: &[HuntScenario],
    variants: &[Variant],
    budget: u64,
    jobs: usize,
) -> Vec<HuntResult> {
    assert!(!scenarios.is_empty() && budget > 0 && jobs > 0);
    let mut work = Vec::new();
    for v in variants {
        if *v == Variant::Correct {
            work.extend((0..scenarios.len()).map(Job::Correct));
        } else {
            work.push(Job::Planted(*v));
        }
    }
    let done = crate::parallel::map_on(jobs, &work, |job| match job {
        Job::Planted(v) => hunt_planted(scenarios, *v, budget),
        Job::Correct(k) => survive(&scenarios[*k], budget),
    });
    let mut results: Vec<HuntResult> = Vec::new();
    for r in done {
        // Fold the per-scenario runs of `correct` into one row: its first
        // failure (in scenario order), or clean with the total runs.
        match results.last_mut() {
            Some(last) if last.variant == r.variant && r.variant == Variant::Correct.name() => {
                let runs = last.runs + r.runs;
                if !last.caught && r.caught {
                    *last = HuntResult {
                        seeds_to_detect: r.seeds_to_detect.map(|n| n + last.runs),
                        runs,
                        ..r
                    };
                } else {
                    last.runs = runs;
                }
            }
            _ => results.push(r),
        }
    }
    results
}

fn row(
    variant: Variant,
    hit: Option<(u64, &HuntScenario, Invariant, u64)>,
    runs: u64,
) -> HuntResult {
    HuntResult {
        variant: variant.name().to_string(),
        caught: hit.is_some(),
        seeds_to_detect: hit.map(|h| h.0),
        scenario: hit.map(|h| h.1.scenario.name().to_string()),
        scenario_file: hit.map(|h| h.1.file.clone()),
        invariant: hit.map(|h| h.2.name().to_string()),
        mode: hit.map(|h| {
            h.1.scenario
                .scenario
                .protocol
                .heartbeat_mode
                .name()
                .to_string()
        }),
        seed: hit.map(|h| h.3),
        runs,
    }
}

/// The first invariant (in the order violations are kept) the run
/// violated that its scenario does not declare in `expected_violations`: a
/// declared one is what the scenario demonstrates (no lease protocol
/// prevents it), neither a catch nor a failure.
fn first_unexpected(outcome: &crate::RunOutcome, scn: &ValidScenario) -> Option<Invariant> {
    let expected = |i: &Invariant| {
        scn.scenario
            .expected_violations
            .iter()
            .any(|e| e == i.name())
    };
    outcome
        .violations
        .iter()
        .map(|v| v.invariant)
        // Violations past those kept in full are only counted.
        .chain(outcome.invariants.iter().copied())
        .find(|i| !expected(i))
}

fn hunt_planted(scenarios: &[HuntScenario], variant: Variant, budget: u64) -> HuntResult {
    let mut runs = 0;
    for seed in 1..=budget {
        for sc in scenarios {
            runs += 1;
            let outcome = simulate(&sc.scenario, seed, variant, None);
            if let Some(v) = first_unexpected(&outcome, &sc.scenario) {
                return row(variant, Some((runs, sc, v, seed)), runs);
            }
        }
    }
    row(variant, None, runs)
}

fn survive(sc: &HuntScenario, budget: u64) -> HuntResult {
    for seed in 1..=budget {
        let outcome = simulate(&sc.scenario, seed, Variant::Correct, None);
        if let Some(v) = first_unexpected(&outcome, &sc.scenario) {
            return row(Variant::Correct, Some((seed, sc, v, seed)), seed);
        }
    }
    row(Variant::Correct, None, budget)
}
