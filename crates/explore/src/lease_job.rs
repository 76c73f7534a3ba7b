//! The [`SeedJob`] that `sweep`, `SweepTest` (and a future `hunt`) run: one
//! scenario under one variant, optionally twice to check determinism, boiled
//! down to a small [`SeedResult`] so that a sweep of a million seeds keeps
//! little in memory.

use crate::cost_budget::{COST_BUDGET, CostBudget};
use crate::sweep_engine::SeedJob;
use crate::watchdog::{LeaseRun, LeaseWatch, simulate_watched};
use leasehold_protocol::Variant;
use leasehold_run::coverage::RunCoverage;
use leasehold_run::run::{CUT_SHORT, RunOutcome, simulate};
use leasehold_scenario::scenario::ValidScenario;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;

// A scenario's fingerprint is the scenario's; re-exported for the jobs' users.
pub use leasehold_scenario::scenario::scenario_hash;

/// The name reported when two runs of one seed differ.
pub const DETERMINISM: &str = "determinism";

/// What one seed of a sweep found. Equal for equal (scenario, seed, variant).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedResult {
    pub seed: u64,
    /// Invariants that fired, in a fixed order, then `determinism` if the
    /// seed was run twice and the runs differed. Empty: the seed passed.
    pub invariants: Vec<String>,
    /// The first violation, as one line: `invariant at T s: message`.
    pub first_violation: Option<String>,
    pub events: u64,
    pub trace_hash: String,
}

impl SeedResult {
    pub fn ok(&self) -> bool {
        self.invariants.is_empty()
    }

    /// A run over its cost budget: `cost-budget` after the invariants, and
    /// the first violation when it is the only one.
    pub fn add_cost_violation(&mut self, message: String, sim_time_us: u64) {
        if self.first_violation.is_none() {
            self.first_violation = Some(format!(
                "{COST_BUDGET} at {:.3} s: {message}",
                sim_time_us as f64 / 1e6
            ));
        }
        self.invariants.push(COST_BUDGET.to_string());
    }

    pub fn from_outcome(outcome: &RunOutcome) -> SeedResult {
        let cut_short = outcome.cut_short.as_ref();
        SeedResult {
            seed: outcome.seed,
            // A run cut short is no pass: named after the invariants.
            invariants: outcome
                .invariants
                .iter()
                .map(|i| i.name().to_string())
                .chain(cut_short.map(|_| CUT_SHORT.to_string()))
                .collect(),
            first_violation: outcome
                .violations
                .first()
                .map(|v| {
                    format!(
                        "{} at {:.3} s: {}",
                        v.invariant,
                        v.time_ms as f64 / 1e3,
                        v.message
                    )
                })
                .or_else(|| {
                    cut_short.map(|c| {
                        format!("{CUT_SHORT} at {:.3} s: {}", c.at_ms as f64 / 1e3, c.line())
                    })
                }),
            events: outcome.events(),
            trace_hash: outcome.trace_hash_hex(),
        }
    }
}

/// A seed's result and the wall time it took (which no comparison uses).
#[derive(Clone, Debug)]
pub struct TimedSeedResult {
    pub result: SeedResult,
    /// Wall time of the run(s), for throughput figures only.
    pub wall_us: u64,
    /// Events simulated, counting the second run of a determinism check.
    pub events_simulated: u64,
    /// Simulated time, likewise counting both runs.
    pub sim_time_us: u64,
    /// The coverage points the (first) run reached.
    pub coverage: RunCoverage,
}

/// Runs one scenario under one variant.
pub struct LeaseJob<'a> {
    pub scenario: &'a ValidScenario,
    pub variant: Variant,
    /// Run each seed twice and report `determinism` on any difference.
    pub check_determinism: bool,
    /// The scenario's file (for the watchdog's report) and the watch every
    /// run is made under, if any.
    pub watch: Option<(&'a Path, &'a LeaseWatch<'a>)>,
    /// Judge each seed's store requests against this budget, and report
    /// `cost-budget` when over.
    pub cost_budget: Option<&'a CostBudget>,
}

impl SeedJob for LeaseJob<'_> {
    type Output = TimedSeedResult;

    fn run(&self, seed: u64) -> TimedSeedResult {
        // Wall time measures the tool, never the simulation (which has none).
        let started = Instant::now();
        let run = |seed| match self.watch {
            Some((file, watch)) => simulate_watched(
                Some(watch),
                LeaseRun {
                    file,
                    scenario: self.scenario,
                    seed,
                    variant: self.variant,
                },
            ),
            None => simulate(self.scenario, seed, self.variant, None),
        };
        let outcome = run(seed);
        let mut result = SeedResult::from_outcome(&outcome);
        let mut events_simulated = outcome.events();
        let mut sim_time_us = outcome.sim_time_us();
        if let Some(budget) = self.cost_budget
            && let Some(message) =
                crate::cost_budget::judge(self.scenario, &outcome, budget).and_then(|v| v.message)
        {
            result.add_cost_violation(message, outcome.sim_time_us());
        }
        if self.check_determinism {
            let again = run(seed);
            events_simulated += again.events();
            sim_time_us += again.sim_time_us();
            if again.trace_hash_hex() != result.trace_hash || again.events() != result.events {
                if result.first_violation.is_none() {
                    result.first_violation = Some(format!(
                        "{DETERMINISM}: first run {} ({} events), second run {} ({} events)",
                        result.trace_hash,
                        result.events,
                        again.trace_hash_hex(),
                        again.events()
                    ));
                }
                result.invariants.push(DETERMINISM.to_string());
            }
        }
        TimedSeedResult {
            result,
            wall_us: u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
            events_simulated,
            sim_time_us,
            coverage: outcome.coverage,
        }
    }

    fn is_failure(&self, output: &TimedSeedResult) -> bool {
        !output.result.ok()
    }
}

/// The one command that reproduces a seed, ready to paste into a shell.
pub fn replay_command(scenario: &Path, seed: u64, variant: Variant) -> String {
    format!(
        "leasehold run {} --seed {seed} --variant {}",
        shell_word(scenario),
        variant.name()
    )
}

/// A path as one shell word: unchanged when it needs no quoting (the usual
/// case), quoted (single quotes, or double when it holds a `'`) when it holds
/// spaces or shell syntax, so printed commands paste as they are. A path
/// that is not UTF-8 is shown lossily (`display`), like every path in
/// leasehold's messages.
pub fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    match shlex::try_quote(&text) {
        Ok(word) => word.into_owned(),
        // Only a NUL byte is refused, and no path holds one.
        Err(_) => text,
    }
}
