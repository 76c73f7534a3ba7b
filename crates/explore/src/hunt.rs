//! `hunt`: how good is leasehold at catching real lease bugs? For each
//! planted variant, sweep the scenarios (round-robin over seeds 1, 2, ...)
//! until one fails; the correct protocol must survive the whole budget on
//! every scenario. A guided hunt (`HuntOptions::guided`) spends half its
//! runs on mutations of the fault plans that reached new coverage (see
//! `guided`).

use crate::cost_budget::{COST_BUDGET, CostBudget};
use crate::coverage_tally::CoverageTally;
use crate::guided::{Guide, Input};
use crate::shrink::FailureFile;
use crate::watchdog::{LeaseRun, LeaseWatch, simulate_watched};
use leasehold_check::Invariant;
use leasehold_protocol::Variant;
use leasehold_run::run::RunOutcome;
use leasehold_scenario::scenario::ValidScenario;
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
    /// Guided hunts: the failing run's input was a mutated fault plan (not
    /// a plain seed), so `seed` alone does not replay it: `failure` does
    /// (its faults as they struck, unshrunk).
    pub mutated: bool,
    #[serde(skip)]
    pub failure: Option<Box<FailureFile>>,
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

/// How to hunt.
#[derive(Clone, Copy, Debug, Default)]
pub struct HuntOptions {
    /// Guided hunting with this seed; `None`: plain seeds only.
    pub guided: Option<u64>,
}

/// A hunt's rows, and the coverage of all its runs.
#[derive(Clone, Debug)]
pub struct HuntReport {
    pub results: Vec<HuntResult>,
    pub coverage: CoverageTally,
    /// Guided hunts: inputs that joined a corpus, over every job.
    pub corpus_added: u64,
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
    /// Run seed `seed` of scenario `k` under `variant`, under the watch.
    fn run(
        &self,
        scenarios: &'a [HuntScenario],
        k: usize,
        seed: u64,
        variant: Variant,
    ) -> RunOutcome {
        let sc = &scenarios[k];
        let run = LeaseRun {
            file: &sc.file,
            scenario: &sc.scenario,
            seed,
            variant,
        };
        simulate_watched(self.watch, run)
    }

    /// The name of what a run of scenario `k` failed first (an invariant
    /// its scenario does not expect, or `cost-budget`), if it failed.
    fn verdict(
        &self,
        scenarios: &[HuntScenario],
        k: usize,
        outcome: &RunOutcome,
    ) -> Option<&'static str> {
        let sc = &scenarios[k];
        if let Some(v) = first_unexpected(outcome, &sc.scenario) {
            return Some(v.name());
        }
        let budget = self.cost_budgets.get(k)?.as_ref()?;
        crate::cost_budget::judge(&sc.scenario, outcome, budget)
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
    hunt_with(
        scenarios,
        variants,
        budget,
        jobs,
        HuntOptions::default(),
        &HuntChecks::default(),
    )
    .results
}

/// [`hunt`], with options, each run also judged by `checks`; the rows and
/// the coverage of its runs.
pub fn hunt_with<'a>(
    scenarios: &'a [HuntScenario],
    variants: &[Variant],
    budget: u64,
    jobs: usize,
    options: HuntOptions,
    checks: &HuntChecks<'a>,
) -> HuntReport {
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
    let all: Vec<usize> = (0..scenarios.len()).collect();
    let done = crate::parallel::map_on(jobs, &work, |job| match (job, options.guided) {
        (Job::Planted(v), None) => hunt_planted(scenarios, *v, budget, checks),
        (Job::Correct(k), None) => survive(scenarios, *k, budget, checks),
        // Each job its own guide, on a stream of its own: the variant's
        // place in the catalogue, or past them the scenario's.
        (Job::Planted(v), Some(seed)) => {
            let stream = Variant::all().position(|x| x == *v).unwrap_or(0) as u64;
            let runs = budget * all.len() as u64;
            guided(scenarios, &all, *v, runs, (seed, stream), checks)
        }
        (Job::Correct(k), Some(seed)) => {
            let stream = (Variant::all().count() + k) as u64;
            guided(
                scenarios,
                &[*k],
                Variant::Correct,
                budget,
                (seed, stream),
                checks,
            )
        }
    });
    let mut coverage = CoverageTally::new();
    let mut corpus_added = 0;
    let mut results: Vec<HuntResult> = Vec::new();
    for (r, tally, added) in done {
        coverage.merge(&tally);
        corpus_added += added;
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
    HuntReport {
        results,
        coverage,
        corpus_added,
    }
}

/// A job's row, the coverage of its runs, and (guided) its corpus
/// additions.
type JobDone = (HuntResult, CoverageTally, u64);

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
        mutated: false,
        failure: None,
    }
}

/// The first invariant (in the order violations are kept) the run
/// violated that its scenario does not declare in `expected_violations`: a
/// declared one is what the scenario demonstrates (no lease protocol
/// prevents it), neither a catch nor a failure.
fn first_unexpected(outcome: &RunOutcome, scn: &ValidScenario) -> Option<Invariant> {
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

fn tally_run(tally: &mut CoverageTally, sc: &HuntScenario, outcome: &RunOutcome) {
    tally.add(
        &outcome.coverage,
        sc.scenario.scenario.protocol.heartbeat_mode,
    );
}

fn hunt_planted<'a>(
    scenarios: &'a [HuntScenario],
    variant: Variant,
    budget: u64,
    checks: &HuntChecks<'a>,
) -> JobDone {
    let mut runs = 0;
    let mut tally = CoverageTally::new();
    for seed in 1..=budget {
        for (k, sc) in scenarios.iter().enumerate() {
            runs += 1;
            let outcome = checks.run(scenarios, k, seed, variant);
            tally_run(&mut tally, sc, &outcome);
            if let Some(name) = checks.verdict(scenarios, k, &outcome) {
                return (row(variant, Some((runs, sc, name, seed)), runs), tally, 0);
            }
        }
    }
    (row(variant, None, runs), tally, 0)
}

fn survive<'a>(
    scenarios: &'a [HuntScenario],
    k: usize,
    budget: u64,
    checks: &HuntChecks<'a>,
) -> JobDone {
    let sc = &scenarios[k];
    let mut tally = CoverageTally::new();
    for seed in 1..=budget {
        let outcome = checks.run(scenarios, k, seed, Variant::Correct);
        tally_run(&mut tally, sc, &outcome);
        if let Some(name) = checks.verdict(scenarios, k, &outcome) {
            return (
                row(Variant::Correct, Some((seed, sc, name, seed)), seed),
                tally,
                0,
            );
        }
    }
    (row(Variant::Correct, None, budget), tally, 0)
}

/// `runs` guided runs of `variant` over the scenarios `picked` (indices
/// into `scenarios`), until one fails; `(seed, stream)` seeds the guide.
fn guided<'a>(
    scenarios: &'a [HuntScenario],
    picked: &[usize],
    variant: Variant,
    runs: u64,
    (seed, stream): (u64, u64),
    checks: &HuntChecks<'a>,
) -> JobDone {
    let mut guide = Guide::new(
        picked.iter().map(|&k| &scenarios[k].scenario).collect(),
        variant,
        seed,
        stream,
    );
    for n in 1..=runs {
        let (input, mutated) = guide.next_input();
        let k = picked[input.scenario];
        let sc = &scenarios[k];
        let watched = LeaseRun {
            file: &sc.file,
            scenario: &sc.scenario,
            seed: input.seed,
            variant,
        };
        let run = match checks.watch {
            Some(w) => w.watch(watched, || guide.run(input, mutated)),
            None => guide.run(input, mutated),
        };
        let Input { seed, .. } = run.input;
        if let Some(name) = checks.verdict(scenarios, k, &run.outcome) {
            let mut r = row(variant, Some((n, sc, name, seed)), n);
            r.mutated = run.mutated;
            if run.mutated {
                r.failure = FailureFile::of_run(&sc.scenario, variant, &run.outcome).map(Box::new);
            }
            return (r, guide.tally, guide.added);
        }
    }
    (row(variant, None, runs), guide.tally, guide.added)
}
