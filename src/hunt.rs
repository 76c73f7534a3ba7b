//! `hunt`: how good is leasehold at catching real lease bugs? For each
//! planted variant, sweep the scenarios (round-robin over seeds 1, 2, ...)
//! until one fails; the correct protocol must survive the whole budget on
//! every scenario.

use crate::cost_budget::{COST_BUDGET, CostBudget};
use crate::scenario::ValidScenario;
use crate::watchdog::{LeaseRun, LeaseWatch, simulate_watched};
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

/// What judges a hunt's runs besides the invariants.
#[derive(Default)]
pub struct HuntChecks<'a> {
    /// Every run is made under this watch (see [`crate::watchdog`]).
    pub watch: Option<&'a LeaseWatch<'a>>,
    /// Each scenario's cost budget, in the order of the hunt's scenarios
    /// (empty: none). A run over it fails as `cost-budget`.
    pub cost_budgets: Vec<Option<CostBudget>>,
}

impl<'a> HuntChecks<'a> {
    /// Run seed `seed` of scenario `k` under `variant`: the name of what it
    /// failed first (an invariant, or `cost-budget`), if it failed.
    fn failed(
        &self,
        scenarios: &'a [HuntScenario],
        k: usize,
        seed: u64,
        variant: Variant,
    ) -> Option<&'static str> {
        let sc = &scenarios[k];
        let run = LeaseRun {
            file: &sc.file,
            scenario: &sc.scenario,
            seed,
            variant,
        };
        let outcome = simulate_watched(self.watch, run);
        if let Some(v) = outcome.violations.first() {
            return Some(v.invariant.name());
        }
        let budget = self.cost_budgets.get(k)?.as_ref()?;
        crate::cost_budget::judge(&sc.scenario, &outcome, budget)
            .and_then(|v| v.message)
            .map(|_| COST_BUDGET)
    }
}

/// Run the hunt on `jobs` threads. Results come back in `variants` order and
/// do not depend on `jobs`.
pub fn hunt(
    scenarios: &[HuntScenario],
    variants: &[Variant],
    budget: u64,
    jobs: usize,
) -> Vec<HuntResult> {
    hunt_with(scenarios, variants, budget, jobs, &HuntChecks::default())
}

/// [`hunt`], each run also judged by `checks`.
pub fn hunt_with<'a>(
    scenarios: &'a [HuntScenario],
    variants: &[Variant],
    budget: u64,
    jobs: usize,
    checks: &HuntChecks<'a>,
) -> Vec<HuntResult> {
    assert!(!scenarios.is_empty() && budget > 0 && jobs > 0);
    assert!(
        checks.cost_budgets.is_empty() || checks.cost_budgets.len() == scenarios.len(),
        "a cost budget (or none) per scenario"
    );
    let mut work = Vec::new();
    for v in variants {
        if *v == Variant::Correct {
            work.extend((0..scenarios.len()).map(Job::Correct));
        } else {
            work.push(Job::Planted(*v));
        }
    }
    let done = crate::parallel::map_on(jobs, &work, |job| match job {
        Job::Planted(v) => hunt_planted(scenarios, *v, budget, checks),
        Job::Correct(k) => survive(scenarios, *k, budget, checks),
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
    hit: Option<(u64, &HuntScenario, &'static str, u64)>,
    runs: u64,
) -> HuntResult {
    HuntResult {
        variant: variant.name().to_string(),
        caught: hit.is_some(),
        seeds_to_detect: hit.map(|h| h.0),
        scenario: hit.map(|h| h.1.scenario.name().to_string()),
        scenario_file: hit.map(|h| h.1.file.clone()),
        invariant: hit.map(|h| h.2.to_string()),
        seed: hit.map(|h| h.3),
        runs,
    }
}

fn hunt_planted<'a>(
    scenarios: &'a [HuntScenario],
    variant: Variant,
    budget: u64,
    checks: &HuntChecks<'a>,
) -> HuntResult {
    let mut runs = 0;
    for seed in 1..=budget {
        for (k, sc) in scenarios.iter().enumerate() {
            runs += 1;
            if let Some(name) = checks.failed(scenarios, k, seed, variant) {
                return row(variant, Some((runs, sc, name, seed)), runs);
            }
        }
    }
    row(variant, None, runs)
}

fn survive<'a>(
    scenarios: &'a [HuntScenario],
    k: usize,
    budget: u64,
    checks: &HuntChecks<'a>,
) -> HuntResult {
    let sc = &scenarios[k];
    for seed in 1..=budget {
        if let Some(name) = checks.failed(scenarios, k, seed, Variant::Correct) {
            return row(Variant::Correct, Some((seed, sc, name, seed)), seed);
        }
    }
    row(Variant::Correct, None, budget)
}
