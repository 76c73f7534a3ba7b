//! Coverage summed over many runs: the tally `sweep --coverage`, `merge`,
//! `coverage`, `hunt` and guided search keep, the coverage a results line
//! carries, and the hit-count buckets guided search counts as new.

use leasehold_protocol::HeartbeatMode;
use leasehold_run::coverage::{FaultPair, NAMED_POINTS, NamedPoint, RunCoverage, pair_name};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Logarithmic buckets of a hit count (as AFL buckets its edge counts):
/// guided hunting counts a run as new when it reaches a point, or a bucket
/// of it, no run before it did.
pub fn hit_bucket(hits: u64) -> u8 {
    match hits {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => 3,
        4..=7 => 4,
        8..=15 => 5,
        16..=31 => 6,
        32..=127 => 7,
        _ => 8,
    }
}

/// Points summed over many runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoverageTally {
    pub runs: u64,
    /// Hits and runs reaching it, per named point (`NamedPoint::index`).
    pub points: Vec<(u64, u64)>,
    /// Hits and runs reaching it, per fault pair.
    pub pairs: BTreeMap<FaultPair, (u64, u64)>,
    /// The heartbeat modes of the runs counted: a point no mode counted can
    /// reach is not applicable (never "unreached").
    pub modes: Vec<HeartbeatMode>,
}

impl CoverageTally {
    pub fn new() -> CoverageTally {
        CoverageTally {
            points: vec![(0, 0); NAMED_POINTS],
            ..CoverageTally::default()
        }
    }

    fn ensure_points(&mut self) {
        if self.points.is_empty() {
            self.points = vec![(0, 0); NAMED_POINTS];
        }
    }

    /// Note that runs in `mode` are counted (even if none reached a point).
    pub fn add_mode(&mut self, mode: HeartbeatMode) {
        if !self.modes.contains(&mode) {
            self.modes.push(mode);
            self.modes.sort_by_key(|m| m.name());
        }
    }

    pub fn add(&mut self, run: &RunCoverage, mode: HeartbeatMode) {
        self.ensure_points();
        self.add_mode(mode);
        self.runs += 1;
        for (i, &hits) in run.points.iter().enumerate() {
            if hits > 0 {
                self.points[i].0 += hits;
                self.points[i].1 += 1;
            }
        }
        for &(pair, hits) in &run.pairs {
            let e = self.pairs.entry(pair).or_insert((0, 0));
            e.0 += hits;
            e.1 += 1;
        }
    }

    /// A results line's coverage (named points only: lines carry no pairs).
    pub fn add_line(&mut self, line: &LineCoverage) {
        self.ensure_points();
        self.add_mode(line.mode);
        self.runs += 1;
        for (name, &hits) in &line.points {
            let point = NamedPoint::from_name(name).expect("results lines are checked when read");
            self.points[point.index()].0 += hits;
            self.points[point.index()].1 += 1;
        }
    }

    pub fn merge(&mut self, other: &CoverageTally) {
        self.ensure_points();
        self.runs += other.runs;
        for (i, &(hits, runs)) in other.points.iter().enumerate() {
            self.points[i].0 += hits;
            self.points[i].1 += runs;
        }
        for (pair, &(hits, runs)) in &other.pairs {
            let e = self.pairs.entry(*pair).or_insert((0, 0));
            e.0 += hits;
            e.1 += runs;
        }
        for &m in &other.modes {
            self.add_mode(m);
        }
    }

    pub fn hits(&self, point: NamedPoint) -> u64 {
        self.points.get(point.index()).map_or(0, |p| p.0)
    }

    /// Whether some mode counted can reach `point`.
    pub fn applicable(&self, point: NamedPoint) -> bool {
        self.modes.iter().any(|m| point.modes().includes(*m))
    }

    /// Applicable named points no run reached, in list order.
    pub fn unreached(&self) -> Vec<NamedPoint> {
        NamedPoint::all()
            .filter(|p| self.applicable(*p) && self.hits(*p) == 0)
            .collect()
    }

    /// Distinct points reached, both kinds.
    pub fn reached_count(&self) -> usize {
        self.points.iter().filter(|p| p.0 > 0).count() + self.pairs.len()
    }

    /// `{"points":[{"name","hits",...}], ...}`: every named point (with 0
    /// hits too), then every pair reached.
    pub fn to_json(&self) -> serde_json::Value {
        let mut points: Vec<serde_json::Value> = NamedPoint::all()
            .map(|p| {
                let (hits, runs) = self.points.get(p.index()).copied().unwrap_or((0, 0));
                serde_json::json!({
                    "name": p.name(),
                    "hits": hits,
                    "runs": runs,
                    "kind": p.kind(),
                    "modes": p.modes().name(),
                    "applicable": self.applicable(p),
                    "reached": hits > 0,
                })
            })
            .collect();
        points.extend(self.pairs.iter().map(|(pair, (hits, runs))| {
            serde_json::json!({
                "name": pair_name(*pair),
                "hits": hits,
                "runs": runs,
                "kind": "fault-pair",
                "reached": true,
            })
        }));
        serde_json::json!({
            "points": points,
            "runs": self.runs,
            "modes": self.modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
            "unreached": self.unreached().iter().map(|p| p.name()).collect::<Vec<_>>(),
            "reached": self.reached_count(),
        })
    }

    /// The human report: every named point with its hits (unreached ones
    /// flagged), then (`with_pairs`) the fault pairs reached.
    pub fn report_lines(&self, with_pairs: bool) -> Vec<String> {
        let mut lines = Vec::new();
        lines.push(format!(
            "{:<40} {:>10} {:>8}  modes",
            "named point", "hits", "runs"
        ));
        for p in NamedPoint::all() {
            let (hits, runs) = self.points.get(p.index()).copied().unwrap_or((0, 0));
            let flag = if !self.applicable(p) {
                "  (not applicable: no run in its heartbeat mode)"
            } else if hits == 0 {
                "  UNREACHED"
            } else {
                ""
            };
            lines.push(format!(
                "{:<40} {:>10} {:>8}  {}{flag}",
                p.name(),
                hits,
                runs,
                p.modes().name()
            ));
        }
        if with_pairs {
            lines.push(format!(
                "{:<40} {:>10} {:>8}",
                "fault pair (kind@phase)", "hits", "runs"
            ));
            for (pair, (hits, runs)) in &self.pairs {
                lines.push(format!("{:<40} {:>10} {:>8}", pair_name(*pair), hits, runs));
            }
        }
        let applicable = NamedPoint::all().filter(|p| self.applicable(*p)).count();
        let unreached = self.unreached();
        // Results lines carry no pairs: say nothing of them then.
        let pairs = if self.pairs.is_empty() {
            String::new()
        } else {
            format!("; {} fault pairs reached", self.pairs.len())
        };
        lines.push(format!(
            "{} runs: {} of {applicable} applicable named points reached{}{pairs}",
            self.runs,
            applicable - unreached.len(),
            if unreached.is_empty() {
                String::new()
            } else {
                format!(
                    " (unreached: {})",
                    unreached
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
        ));
        lines
    }
}

/// The coverage of one seed in a results line: the heartbeat mode it ran in
/// (which points it could reach) and the hits of each named point reached
/// (fault pairs are left out: they would make every line long).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineCoverage {
    pub mode: HeartbeatMode,
    pub points: BTreeMap<String, u64>,
}

impl LineCoverage {
    pub fn of(coverage: &RunCoverage, mode: HeartbeatMode) -> LineCoverage {
        LineCoverage {
            mode,
            points: NamedPoint::all()
                .map(|p| (p.name().to_string(), coverage.hits(p)))
                .filter(|(_, hits)| *hits > 0)
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_protocol::CoveragePoint;
    use leasehold_run::coverage::{Phase, RecordPoint};

    #[test]
    fn buckets_grow_with_the_count() {
        let mut last = 0;
        for n in 0..1_000 {
            let b = hit_bucket(n);
            assert!(b >= last);
            last = b;
        }
        assert_eq!(hit_bucket(0), 0);
        assert_eq!(hit_bucket(1), 1);
        assert_eq!(hit_bucket(u64::MAX), 8);
    }

    #[test]
    fn a_tally_sums_runs_and_flags_what_no_run_reached() {
        let orphan = NamedPoint::Protocol(CoveragePoint::OrphanRequeued);
        let mut points = vec![0; NAMED_POINTS];
        points[orphan.index()] = 2;
        let run = RunCoverage {
            points,
            pairs: vec![(("crash", Phase::WorkerRunning), 1)],
        };
        let mut t = CoverageTally::new();
        t.add(&run, HeartbeatMode::Worker);
        t.add(&RunCoverage::default(), HeartbeatMode::Worker);
        assert_eq!(t.runs, 2);
        assert_eq!(t.points[orphan.index()], (2, 1));
        assert_eq!(t.pairs[&("crash", Phase::WorkerRunning)], (1, 1));
        let unreached = t.unreached();
        assert!(!unreached.contains(&orphan));
        assert!(unreached.contains(&NamedPoint::Protocol(CoveragePoint::WorkerSelfFenced)));
        assert!(unreached.contains(&NamedPoint::Record(RecordPoint::ServiceFencedZombie)));
        // Task-mode points are not applicable to worker-mode runs.
        assert!(!unreached.contains(&NamedPoint::Protocol(CoveragePoint::TaskClaimVoided)));
        let json = t.to_json();
        let names: Vec<&str> = json["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"fault:crash@worker-running"));
        assert_eq!(
            names.len(),
            NAMED_POINTS + 1,
            "every protocol point, and the pair reached"
        );
    }
}
