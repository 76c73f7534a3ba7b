//! What a sweep (or a merge of shard results) found for one scenario under one
//! variant: how many seeds, how many events, and every failing seed with its
//! replay command. It holds no timing, so two sweeps of the same seeds give
//! equal summaries whatever their `--jobs`; throughput is reported beside it.

use crate::lease_job::SeedResult;
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Failures spelled out in a JUnit failure's text; the rest are counted.
pub const JUNIT_FAILURES_LISTED: usize = 100;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FailureRecord {
    pub seed: u64,
    pub invariants: Vec<String>,
    pub replay: String,
    pub first_violation: Option<String>,
}

impl FailureRecord {
    /// The human report of one failing seed: three lines at most.
    pub fn report_lines(&self) -> String {
        let mut text = format!("seed {}: {}\n", self.seed, self.invariants.join(", "));
        if let Some(v) = &self.first_violation {
            text.push_str(&format!("  {v}\n"));
        }
        text.push_str(&format!("  replay: {}\n", self.replay));
        text
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepSummary {
    pub scenario: String,
    pub variant: String,
    /// Distinct seeds summarised.
    pub seeds: u64,
    /// Events simulated over those seeds (one run each).
    pub events: u64,
    /// Failing seeds, by seed.
    pub failures: BTreeMap<u64, FailureRecord>,
}

impl SweepSummary {
    pub fn new(scenario: &str, variant: &str) -> SweepSummary {
        SweepSummary {
            scenario: scenario.to_string(),
            variant: variant.to_string(),
            seeds: 0,
            events: 0,
            failures: BTreeMap::new(),
        }
    }

    /// Count one seed. Each seed must be added once.
    pub fn add(&mut self, result: &SeedResult, replay: impl FnOnce() -> String) {
        self.seeds += 1;
        self.events += result.events;
        if !result.ok() {
            let record = FailureRecord {
                seed: result.seed,
                invariants: result.invariants.clone(),
                replay: replay(),
                first_violation: result.first_violation.clone(),
            };
            let previous = self.failures.insert(result.seed, record);
            assert!(previous.is_none(), "seed {} summarised twice", result.seed);
        }
    }

    pub fn failed(&self) -> u64 {
        self.failures.len() as u64
    }

    pub fn ok(&self) -> bool {
        self.failures.is_empty()
    }

    /// `{seed, invariants, replay, first_violation}` for each failure, by seed.
    pub fn failures_json(&self) -> Vec<serde_json::Value> {
        self.failures
            .values()
            .map(|f| serde_json::to_value(f).expect("failure records serialise"))
            .collect()
    }

    /// One test case: passed, or failed with every failing seed listed
    /// (up to [`JUNIT_FAILURES_LISTED`]) with its replay command.
    pub fn junit_case(&self, time: Option<Duration>) -> TestCase {
        let status = if self.ok() {
            TestCaseStatus::success()
        } else {
            let first = self
                .failures
                .values()
                .next()
                .expect("not ok means a failure");
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_message(format!(
                "{} of {} seeds failed; first: seed {} ({}); replay: {}",
                self.failed(),
                self.seeds,
                first.seed,
                first.invariants.join(", "),
                first.replay
            ));
            status.set_type(first.invariants.join(", "));
            let mut text: String = self
                .failures
                .values()
                .take(JUNIT_FAILURES_LISTED)
                .map(FailureRecord::report_lines)
                .collect();
            if self.failures.len() > JUNIT_FAILURES_LISTED {
                text.push_str(&format!(
                    "... and {} more failing seeds\n",
                    self.failures.len() - JUNIT_FAILURES_LISTED
                ));
            }
            status.set_description(text);
            status
        };
        let mut case = TestCase::new(format!("{} / {}", self.scenario, self.variant), status);
        case.set_classname(format!("leasehold.{}", self.scenario));
        case.add_property(Property::new("seeds", self.seeds.to_string()));
        case.add_property(Property::new("failed", self.failed().to_string()));
        case.add_property(Property::new("events", self.events.to_string()));
        if let Some(time) = time {
            case.set_time(time);
        }
        case
    }
}

/// Write a JUnit XML report: one test suite holding `cases` (one per
/// scenario and variant, from [`SweepSummary::junit_case`]).
pub fn write_junit(path: &Path, suite_name: &str, cases: Vec<TestCase>) -> Result<(), String> {
    let mut suite = TestSuite::new(suite_name);
    suite.add_test_cases(cases);
    let mut report = Report::new("leasehold");
    report.add_test_suite(suite);
    let xml = report
        .to_string()
        .map_err(|e| format!("--junit {}: {e}", path.display()))?;
    std::fs::write(path, xml).map_err(|e| format!("--junit {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(seed: u64, invariants: &[&str]) -> SeedResult {
        SeedResult {
            seed,
            invariants: invariants.iter().map(|s| s.to_string()).collect(),
            first_violation: (!invariants.is_empty())
                .then(|| "x at 1.000 s: <boom> & \"more\"".into()),
            events: 7,
            trace_hash: "00".into(),
        }
    }

    #[test]
    fn junit_round_trips_through_a_parser() {
        let mut s = SweepSummary::new("friday-rush", "no-idempotency-key");
        s.add(&result(3, &[]), || unreachable!());
        s.add(&result(9, &["exactly-once-effects"]), || {
            "leasehold run f.json --seed 9".into()
        });
        let ok = SweepSummary::new("friday-rush", "correct");
        let dir = std::env::temp_dir().join(format!("leasehold-junit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("junit.xml");
        let cases = vec![
            s.junit_case(None),
            ok.junit_case(Some(Duration::from_millis(1500))),
        ];
        write_junit(&path, "sweep", cases).unwrap();
        let xml = std::fs::read_to_string(&path).unwrap();
        let report = Report::deserialize_from_str(&xml).unwrap();
        assert_eq!(report.tests, 2);
        assert_eq!(report.failures, 1);
        let case = &report.test_suites[0].test_cases[0];
        assert_eq!(case.name.as_str(), "friday-rush / no-idempotency-key");
        match &case.status {
            TestCaseStatus::NonSuccess {
                message,
                description,
                ..
            } => {
                assert!(message.as_ref().unwrap().as_str().contains("seed 9"));
                let text = description.as_ref().unwrap().as_str();
                assert!(
                    text.contains("replay: leasehold run f.json --seed 9"),
                    "{text}"
                );
                assert!(text.contains("<boom> & \"more\""), "{text}");
            }
            other => panic!("expected a failure, got {other:?}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
