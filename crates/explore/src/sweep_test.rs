//! Sweeps from a Rust `#[test]`:
//!
//! ```no_run
//! #[test]
//! fn friday_rush_holds() {
//!     leasehold::SweepTest::new("scenarios/friday-rush.json")
//!         .seeds(1..=200)
//!         .variant("correct")
//!         .jobs(2)
//!         .run();
//! }
//! ```
//!
//! `run` panics on the first failing seeds with, for each, the invariants, the
//! first violation and the command that replays it. Environment variables
//! override the builder, as madsim's `MADSIM_TEST_*` do, so one test can be
//! re-aimed from the command line without editing it:
//!
//! | variable | value | effect |
//! | --- | --- | --- |
//! | `LEASEHOLD_SEED` | `17` | run seed 17 only |
//! | `LEASEHOLD_SEEDS` | `5000` or `100..199` | run seeds 1..=5000, or 100..=199 |
//! | `LEASEHOLD_JOBS` | `4` | threads (default: the number of cores) |
//! | `LEASEHOLD_CHECK_DETERMINISM` | `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off` | run each seed twice and fail on any difference |
//!
//! An empty value counts as unset (CI matrices often pass empty strings). Any
//! other bad value panics with a message naming the variable.

use crate::lease_job::{LeaseJob, TimedSeedResult, replay_command};
use crate::seeds::SeedRange;
use crate::sweep_args::parse_jobs;
use crate::sweep_engine::{StopReason, SweepOptions, SweepSink, default_jobs, run_sweep};
use crate::sweep_summary::SweepSummary;
use leasehold_protocol::Variant;
use leasehold_scenario::scenario::{Scenario, ValidScenario};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

pub const ENV_SEED: &str = "LEASEHOLD_SEED";
pub const ENV_SEEDS: &str = "LEASEHOLD_SEEDS";
pub const ENV_JOBS: &str = "LEASEHOLD_JOBS";
pub const ENV_CHECK_DETERMINISM: &str = "LEASEHOLD_CHECK_DETERMINISM";

/// Failing seeds spelled out in the panic message; the rest are counted.
pub const FAILURES_SHOWN: usize = 10;

/// Seeds a `SweepTest` runs when neither the builder nor the environment
/// says: a quick smoke sweep.
pub const DEFAULT_SEEDS: RangeInclusive<u64> = 1..=100;

type EnvLookup = Box<dyn Fn(&str) -> Option<String>>;

enum ScenarioSource {
    File(PathBuf),
    Loaded(Box<ValidScenario>),
}

/// A sweep of one scenario under one variant, for `#[test]`s.
pub struct SweepTest {
    scenario: ScenarioSource,
    seeds: SeedRange,
    variant: String,
    jobs: Option<usize>,
    check_determinism: bool,
    stop_after_failures: Option<u64>,
    env: EnvLookup,
}

/// What a passing sweep ran.
#[derive(Clone, Debug)]
pub struct SweepTestReport {
    pub summary: SweepSummary,
    pub seeds: SeedRange,
    pub jobs: usize,
    pub check_determinism: bool,
    pub seeds_per_sec: f64,
}

/// The environment's say over a sweep, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvOverrides {
    pub seeds: Option<SeedRange>,
    pub jobs: Option<usize>,
    pub check_determinism: Option<bool>,
}

impl EnvOverrides {
    /// Read the `LEASEHOLD_*` variables through `lookup`; errors name the
    /// variable.
    pub fn read(lookup: &dyn Fn(&str) -> Option<String>) -> Result<EnvOverrides, String> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let seed = get(ENV_SEED)
            .map(|v| {
                v.trim()
                    .parse::<u64>()
                    .map(|s| SeedRange { first: s, last: s })
                    .map_err(|_| {
                        format!(
                            "{ENV_SEED}={v:?} is not a seed (a whole number from 0 to {})",
                            u64::MAX
                        )
                    })
            })
            .transpose()?;
        let seeds = get(ENV_SEEDS)
            .map(|v| parse_seed_count_or_range(&v).map_err(|e| format!("{ENV_SEEDS}={v:?}: {e}")))
            .transpose()?;
        if seed.is_some() && seeds.is_some() {
            return Err(format!(
                "{ENV_SEED} and {ENV_SEEDS} are both set; set one (a single seed, or a count or range)"
            ));
        }
        let jobs = get(ENV_JOBS)
            .map(|v| parse_jobs(&v).map_err(|e| format!("{ENV_JOBS}: {e}")))
            .transpose()?;
        let check_determinism = get(ENV_CHECK_DETERMINISM)
            .map(|v| match v.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => Ok(true),
                "0" | "false" | "no" | "off" => Ok(false),
                _ => Err(format!(
                    "{ENV_CHECK_DETERMINISM}={v:?} is not a switch; use 1/true/yes/on or 0/false/no/off"
                )),
            })
            .transpose()?;
        Ok(EnvOverrides {
            seeds: seed.or(seeds),
            jobs,
            check_determinism,
        })
    }
}

/// `N` (seeds 1..=N) or a range `A..B` (both ends included).
pub fn parse_seed_count_or_range(text: &str) -> Result<SeedRange, String> {
    if text.contains("..") {
        return SeedRange::parse(text);
    }
    match text.trim().parse::<u64>() {
        Ok(0) => Err("a count of 0 seeds runs nothing; give at least 1".to_string()),
        Ok(n) => SeedRange::parse(&format!("1..{n}")),
        Err(_) => Err(format!(
            "{text:?} is neither a count of seeds (N, meaning 1..N) nor a range A..B"
        )),
    }
}

impl SweepTest {
    /// Sweep the scenario file at `path` (relative paths are from the
    /// current directory, which `cargo test` sets to the package's root).
    pub fn new(path: impl AsRef<Path>) -> SweepTest {
        SweepTest::with_source(ScenarioSource::File(path.as_ref().to_path_buf()))
    }

    /// Sweep a scenario already in memory (say, one a proptest strategy made).
    pub fn from_scenario(scenario: ValidScenario) -> SweepTest {
        SweepTest::with_source(ScenarioSource::Loaded(Box::new(scenario)))
    }

    fn with_source(scenario: ScenarioSource) -> SweepTest {
        SweepTest {
            scenario,
            seeds: SeedRange {
                first: *DEFAULT_SEEDS.start(),
                last: *DEFAULT_SEEDS.end(),
            },
            variant: Variant::Correct.name().to_string(),
            jobs: None,
            check_determinism: false,
            stop_after_failures: None,
            env: Box::new(|name| std::env::var(name).ok()),
        }
    }

    /// The seeds to run, both ends included.
    pub fn seeds(mut self, seeds: RangeInclusive<u64>) -> SweepTest {
        assert!(
            seeds.start() <= seeds.end(),
            "SweepTest::seeds({}..={}) is empty",
            seeds.start(),
            seeds.end()
        );
        self.seeds = SeedRange {
            first: *seeds.start(),
            last: *seeds.end(),
        };
        self
    }

    /// One seed only.
    pub fn seed(self, seed: u64) -> SweepTest {
        self.seeds(seed..=seed)
    }

    /// The protocol variant by name (see `leasehold variants`).
    pub fn variant(mut self, name: &str) -> SweepTest {
        self.variant = name.to_string();
        self
    }

    /// Threads running seeds (default: the number of cores).
    pub fn jobs(mut self, jobs: usize) -> SweepTest {
        self.jobs = Some(jobs);
        self
    }

    /// Run every seed twice and fail on any difference between the runs.
    pub fn check_determinism(mut self, on: bool) -> SweepTest {
        self.check_determinism = on;
        self
    }

    /// Stop at the N-th failing seed (in seed order) instead of running all.
    pub fn stop_after_failures(mut self, failures: u64) -> SweepTest {
        assert!(failures >= 1, "stop_after_failures needs at least 1");
        self.stop_after_failures = Some(failures);
        self
    }

    /// Where `LEASEHOLD_*` variables are read from (default: the process
    /// environment). Tests of tests use it; so can a harness with its own
    /// configuration.
    pub fn env(mut self, lookup: impl Fn(&str) -> Option<String> + 'static) -> SweepTest {
        self.env = Box::new(lookup);
        self
    }

    /// Run the sweep; panic with every failing seed's invariants, first
    /// violation and replay command if any seed fails.
    #[track_caller]
    pub fn run(self) -> SweepTestReport {
        match self.try_run() {
            Ok(report) => report,
            Err(message) => panic!("{message}"),
        }
    }

    /// Run the sweep; `Err` holds the report of the failing seeds (the
    /// message `run` panics with). Bad configuration still panics.
    #[track_caller]
    pub fn try_run(self) -> Result<SweepTestReport, String> {
        let overrides = match EnvOverrides::read(&*self.env) {
            Ok(o) => o,
            Err(e) => panic!("leasehold::SweepTest: {e}"),
        };
        // A scenario given in memory has no file: replay commands name
        // SCENARIO.json, and the failure message carries its text.
        let (scenario, scenario_path, in_memory) = match self.scenario {
            ScenarioSource::File(path) => match Scenario::load(&path) {
                Ok(s) => (s, path, false),
                Err(e) => panic!("leasehold::SweepTest: scenario {}: {e}", path.display()),
            },
            ScenarioSource::Loaded(s) => (*s, PathBuf::from("SCENARIO.json"), true),
        };
        let variant = leasehold_scenario::file_format::named_variant("variant", &self.variant)
            .unwrap_or_else(|e| panic!("leasehold::SweepTest: {e}"));
        let seeds = overrides.seeds.unwrap_or(self.seeds);
        let jobs = overrides.jobs.or(self.jobs).unwrap_or_else(default_jobs);
        let check_determinism = overrides
            .check_determinism
            .unwrap_or(self.check_determinism);
        let job = LeaseJob {
            scenario: &scenario,
            variant,
            check_determinism,
            watch: None,
            cost_budget: None,
        };
        let mut options = SweepOptions::with_jobs(jobs);
        options.stop_after_failures = self.stop_after_failures;
        let mut sink = SummarySink {
            summary: SweepSummary::new(scenario.name(), variant.name()),
            scenario_path: &scenario_path,
            variant,
        };
        let run = run_sweep(&job, seeds.iter(), seeds.len(), &options, &mut sink);
        let summary = sink.summary;
        if summary.ok() {
            assert_eq!(run.stop, StopReason::Completed);
            return Ok(SweepTestReport {
                summary,
                seeds,
                jobs,
                check_determinism,
                seeds_per_sec: run.seeds_finished as f64 / run.elapsed.as_secs_f64().max(1e-9),
            });
        }
        let mut message = format!(
            "leasehold: {} of {} seeds ({seeds}) of scenario {} failed under variant {}{}:\n",
            summary.failed(),
            summary.seeds,
            summary.scenario,
            summary.variant,
            if check_determinism {
                ", checking determinism"
            } else {
                ""
            }
        );
        for record in summary.failures.values().take(FAILURES_SHOWN) {
            message.push_str(&record.report_lines());
        }
        if summary.failures.len() > FAILURES_SHOWN {
            message.push_str(&format!(
                "... and {} more failing seeds\n",
                summary.failures.len() - FAILURES_SHOWN
            ));
        }
        let first = summary
            .failures
            .keys()
            .next()
            .expect("not ok means a failure");
        message.push_str(&format!(
            "run this test on the first failing seed alone: {ENV_SEED}={first} cargo test <this test>\n"
        ));
        if in_memory {
            message.push_str(&format!(
                "SCENARIO.json (save it to replay):\n{}\n",
                scenario.source
            ));
        }
        Err(message)
    }
}

struct SummarySink<'a> {
    summary: SweepSummary,
    scenario_path: &'a Path,
    variant: Variant,
}

impl SweepSink<TimedSeedResult> for SummarySink<'_> {
    fn committed(&mut self, seed: u64, output: TimedSeedResult) {
        let (path, variant) = (self.scenario_path, self.variant);
        self.summary
            .add(&output.result, || replay_command(path, seed, variant));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + 'static {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn env_overrides_parse() {
        let read = |pairs: &[(&str, &str)]| EnvOverrides::read(&env(pairs));
        assert_eq!(read(&[]), Ok(EnvOverrides::default()));
        assert_eq!(
            read(&[(ENV_SEED, "17")]).unwrap().seeds,
            Some(SeedRange {
                first: 17,
                last: 17
            })
        );
        assert_eq!(
            read(&[(ENV_SEEDS, "50")]).unwrap().seeds,
            Some(SeedRange { first: 1, last: 50 })
        );
        assert_eq!(
            read(&[(ENV_SEEDS, "100..199")]).unwrap().seeds,
            Some(SeedRange {
                first: 100,
                last: 199
            })
        );
        assert_eq!(read(&[(ENV_JOBS, "3")]).unwrap().jobs, Some(3));
        assert_eq!(
            read(&[(ENV_CHECK_DETERMINISM, "yes")])
                .unwrap()
                .check_determinism,
            Some(true)
        );
        assert_eq!(read(&[(ENV_SEED, "")]), Ok(EnvOverrides::default()));
        for (pairs, names) in [
            (vec![(ENV_SEED, "x")], ENV_SEED),
            (vec![(ENV_SEEDS, "0")], ENV_SEEDS),
            (vec![(ENV_SEEDS, "9..1")], ENV_SEEDS),
            (vec![(ENV_SEEDS, "lots")], ENV_SEEDS),
            (vec![(ENV_JOBS, "0")], ENV_JOBS),
            (
                vec![(ENV_CHECK_DETERMINISM, "maybe")],
                ENV_CHECK_DETERMINISM,
            ),
            (vec![(ENV_SEED, "1"), (ENV_SEEDS, "5")], ENV_SEEDS),
        ] {
            let err = read(&pairs).unwrap_err();
            assert!(err.contains(names), "{err} does not name {names}");
        }
    }
}
