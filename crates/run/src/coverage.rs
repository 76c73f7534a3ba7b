//! Coverage: which rare situations a run reached.
//!
//! Three kinds of point. *Protocol points* are named inside the protocol
//! (`leasehold_protocol::CoveragePoint`) and reported by the nodes as
//! events. *Record points* ([`RecordPoint`]) are what the world did to a
//! node that the node itself never learns (a fencing service refusing a
//! zombie's call: the zombie has fenced itself by the time the refusal
//! comes back), read from the effect ledger and the store's records. *Fault
//! pairs* are derived from each planned fault and what the node it struck
//! was doing then (its phase, followed from the records:
//! `fault:crash@worker-running`). None needs the simulator to know
//! anything about leases. Protocol and record points together are the
//! *named* points: every one is listed in reports, and one that no run
//! reached is flagged.
//!
//! [`RunCoverage`] is one run's; [`CoverageTally`] sums runs for `coverage`,
//! `sweep --coverage`, `hunt --coverage` and guided hunting.

use leasehold_check::NodeRole;
use leasehold_interface::{EffectReply, StoreReply};
use leasehold_protocol::coverage::Modes;
use leasehold_protocol::{CoveragePoint, DocKey, DocValue, HeartbeatMode, LeaseEvent, TaskDoc};
use leasehold_sim::{Fault, NodeId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A point read from the records rather than reported by a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum RecordPoint {
    /// A fencing service refused a call whose token was lower than one it
    /// had accepted: a zombie's late call, stopped at the resource.
    ServiceFencedZombie,
    /// The store refused a worker's task write made at an epoch the task
    /// had already left (a zombie's progress or completion, or a claim two
    /// moves late): the version check fenced it.
    StoreRefusedStaleEpoch,
}

impl RecordPoint {
    pub const ALL: [RecordPoint; 2] = [
        RecordPoint::ServiceFencedZombie,
        RecordPoint::StoreRefusedStaleEpoch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RecordPoint::ServiceFencedZombie => "service-fenced-zombie",
            RecordPoint::StoreRefusedStaleEpoch => "store-refused-stale-epoch",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            RecordPoint::ServiceFencedZombie => {
                "a fencing service refused a call with a stale token (rejected_stale): a zombie stopped at the resource"
            }
            RecordPoint::StoreRefusedStaleEpoch => {
                "the store refused a worker's task write at an epoch the task had already left: a zombie's write fenced"
            }
        }
    }
}

/// A named point: reported by the protocol, or read from the records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NamedPoint {
    Protocol(CoveragePoint),
    Record(RecordPoint),
}

/// Protocol points, then record points.
pub const NAMED_POINTS: usize = CoveragePoint::COUNT + RecordPoint::ALL.len();

impl NamedPoint {
    /// Every named point, protocol points first, each in list order.
    pub fn all() -> impl Iterator<Item = NamedPoint> {
        CoveragePoint::ALL
            .iter()
            .map(|p| NamedPoint::Protocol(*p))
            .chain(RecordPoint::ALL.iter().map(|p| NamedPoint::Record(*p)))
    }

    /// Its place in [`NamedPoint::all`].
    pub fn index(self) -> usize {
        match self {
            NamedPoint::Protocol(p) => p.index(),
            NamedPoint::Record(r) => CoveragePoint::COUNT + r as usize,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            NamedPoint::Protocol(p) => p.name(),
            NamedPoint::Record(r) => r.name(),
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            NamedPoint::Protocol(p) => p.description(),
            NamedPoint::Record(r) => r.description(),
        }
    }

    /// Which heartbeat modes can reach it (a record point, either).
    pub fn modes(self) -> Modes {
        match self {
            NamedPoint::Protocol(p) => p.modes(),
            NamedPoint::Record(_) => Modes::Both,
        }
    }

    /// `protocol` or `record`.
    pub fn kind(self) -> &'static str {
        match self {
            NamedPoint::Protocol(_) => "protocol",
            NamedPoint::Record(_) => "record",
        }
    }

    pub fn from_name(name: &str) -> Option<NamedPoint> {
        NamedPoint::all().find(|p| p.name() == name)
    }
}

/// What a node was doing when a fault struck it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Phase {
    /// Started (or restarted), not yet registered.
    WorkerBooting,
    /// Registered, running no task.
    WorkerIdle,
    /// Running at least one task (claimed, neither completed nor given up).
    WorkerRunning,
    /// Crashed or fenced, not yet restarted.
    WorkerDown,
    /// Scanning, with no reclaim under way since its last one finished.
    ReclaimerWatching,
    /// Its latest event was a death it declared, a lease it expired, a
    /// re-queue or a voided claim, and no reclaim has finished since.
    ReclaimerReclaiming,
    ReclaimerDown,
    /// A fault that strikes no one node (a store outage).
    Store,
}

impl Phase {
    pub const ALL: [Phase; 8] = [
        Phase::WorkerBooting,
        Phase::WorkerIdle,
        Phase::WorkerRunning,
        Phase::WorkerDown,
        Phase::ReclaimerWatching,
        Phase::ReclaimerReclaiming,
        Phase::ReclaimerDown,
        Phase::Store,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Phase::WorkerBooting => "worker-booting",
            Phase::WorkerIdle => "worker-idle",
            Phase::WorkerRunning => "worker-running",
            Phase::WorkerDown => "worker-down",
            Phase::ReclaimerWatching => "reclaimer-watching",
            Phase::ReclaimerReclaiming => "reclaimer-reclaiming",
            Phase::ReclaimerDown => "reclaimer-down",
            Phase::Store => "store",
        }
    }
}

/// A (fault kind, phase) pair: the fault's `Fault::kind` and the phase of
/// the node it struck.
pub type FaultPair = (&'static str, Phase);

/// The name a pair is reported under: `fault:KIND@PHASE`.
pub fn pair_name((kind, phase): FaultPair) -> String {
    format!("fault:{kind}@{}", phase.name())
}

/// One node's state, as far as the phase needs it.
#[derive(Clone, Copy, Debug)]
struct NodeState {
    worker: bool,
    down: bool,
    registered: bool,
    /// Tasks claimed and not yet completed or given up (workers).
    running: u32,
    /// A reclaim under way (reclaimers).
    reclaiming: bool,
}

impl NodeState {
    fn new(worker: bool) -> NodeState {
        NodeState {
            worker,
            down: false,
            registered: false,
            running: 0,
            reclaiming: false,
        }
    }

    fn phase(&self) -> Phase {
        match (self.worker, self.down) {
            (true, true) => Phase::WorkerDown,
            (true, false) if !self.registered => Phase::WorkerBooting,
            (true, false) if self.running > 0 => Phase::WorkerRunning,
            (true, false) => Phase::WorkerIdle,
            (false, true) => Phase::ReclaimerDown,
            (false, false) if self.reclaiming => Phase::ReclaimerReclaiming,
            (false, false) => Phase::ReclaimerWatching,
        }
    }
}

/// What one run reached: hits per named point, and per fault pair.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunCoverage {
    /// Indexed by `NamedPoint::index`; empty until the first hit.
    pub points: Vec<u64>,
    /// Pairs hit, in the order first seen (a handful per run).
    pub pairs: Vec<(FaultPair, u64)>,
}

impl RunCoverage {
    pub fn hits(&self, point: NamedPoint) -> u64 {
        self.points.get(point.index()).copied().unwrap_or(0)
    }

    fn hit(&mut self, point: NamedPoint) {
        if self.points.is_empty() {
            self.points = vec![0; NAMED_POINTS];
        }
        self.points[point.index()] += 1;
    }

    fn hit_pair(&mut self, pair: FaultPair) {
        // Kinds are string constants: found by address nearly always, by
        // content otherwise (as the fault tally in `run` finds them).
        match self
            .pairs
            .iter()
            .position(|((k, p), _)| std::ptr::eq(*k, pair.0) && *p == pair.1)
            .or_else(|| self.pairs.iter().position(|(q, _)| *q == pair))
        {
            Some(i) => self.pairs[i].1 += 1,
            None => self.pairs.push((pair, 1)),
        }
    }

    /// Every point this run reached, named points first, with its hits.
    pub fn reached(&self) -> impl Iterator<Item = (Feature, u64)> + '_ {
        let points = NamedPoint::all()
            .map(|p| (Feature::Point(p), self.hits(p)))
            .filter(|(_, n)| *n > 0);
        let pairs = self
            .pairs
            .iter()
            .map(|(pair, n)| (Feature::Pair(*pair), *n));
        points.chain(pairs)
    }
}

/// A point of either kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feature {
    Point(NamedPoint),
    Pair(FaultPair),
}

impl Feature {
    pub fn name(&self) -> String {
        match self {
            Feature::Point(p) => p.name().to_string(),
            Feature::Pair(pair) => pair_name(*pair),
        }
    }
}

/// Follows the run's records into a [`RunCoverage`] (part of the run's
/// observer).
pub struct CoverageTracker {
    nodes: Vec<NodeState>,
    pub coverage: RunCoverage,
}

impl CoverageTracker {
    pub fn new(roles: &[NodeRole]) -> CoverageTracker {
        CoverageTracker {
            nodes: roles
                .iter()
                .map(|r| NodeState::new(matches!(r, NodeRole::Worker { .. })))
                .collect(),
            coverage: RunCoverage::default(),
        }
    }

    /// A node's event. Inlined at the observer's record site: the commonest
    /// events (a step started, a step recorded) are dismissed with one
    /// compare of the tag, the rest handled out of line.
    #[inline(always)]
    pub fn event(&mut self, node: NodeId, event: &LeaseEvent) {
        if let LeaseEvent::StepStarted { .. } | LeaseEvent::StepRecorded { .. } = event {
            return;
        }
        self.rare_event(node, event);
    }

    #[inline(never)]
    fn rare_event(&mut self, node: NodeId, event: &LeaseEvent) {
        let state = &mut self.nodes[node.index()];
        match *event {
            LeaseEvent::Coverage { point } => self.coverage.hit(NamedPoint::Protocol(point)),
            LeaseEvent::Registered { .. } => {
                state.registered = true;
                state.running = 0;
            }
            LeaseEvent::Claimed { .. } => state.running += 1,
            LeaseEvent::Completed { .. } | LeaseEvent::Abandoned { .. } => {
                state.running = state.running.saturating_sub(1)
            }
            // The node exits right after.
            LeaseEvent::Fenced { .. } => state.down = true,
            LeaseEvent::DeclaredDead { .. }
            | LeaseEvent::Requeued { .. }
            | LeaseEvent::TaskLeaseExpired { .. }
            | LeaseEvent::ClaimVoided { .. } => state.reclaiming = true,
            LeaseEvent::ReclaimFinished { .. } => state.reclaiming = false,
            LeaseEvent::StepStarted { .. } | LeaseEvent::StepRecorded { .. } => {}
        }
    }

    /// An effect ledger line's outcome.
    #[inline(always)]
    pub fn effect(&mut self, outcome: EffectReply) {
        if outcome == EffectReply::RejectedStale {
            self.coverage
                .hit(NamedPoint::Record(RecordPoint::ServiceFencedZombie));
        }
    }

    /// A worker's write of a task document (`new`, with an owner) the
    /// store refused: a stale epoch fenced, when the task had moved past it.
    #[cold]
    pub fn task_write_refused(&mut self, new: &TaskDoc, reply: &StoreReply<DocKey, DocValue>) {
        if let StoreReply::Conflict { current: Some(doc) } = reply
            && new.owner.is_some()
            && doc.value.as_task().is_some_and(|t| t.epoch > new.epoch)
        {
            self.coverage
                .hit(NamedPoint::Record(RecordPoint::StoreRefusedStaleEpoch));
        }
    }

    /// A fault record: a planned fault counts as a pair with the phase of
    /// the node it struck, before the fault changes it; a restart boots the
    /// node afresh.
    pub fn fault(&mut self, fault: &Fault) {
        let phase = match fault.node() {
            Some(node) => self.nodes[node.index()].phase(),
            None => Phase::Store,
        };
        if fault.is_planned() {
            self.coverage.hit_pair((fault.kind(), phase));
        }
        match *fault {
            Fault::Crash { node, .. } | Fault::CrashAt { node, .. } => {
                self.nodes[node.index()].down = true;
            }
            Fault::Restart { node, .. } => {
                let worker = self.nodes[node.index()].worker;
                self.nodes[node.index()] = NodeState::new(worker);
            }
            _ => {}
        }
    }
}

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
        let mut run = RunCoverage::default();
        let orphan = NamedPoint::Protocol(CoveragePoint::OrphanRequeued);
        run.hit(orphan);
        run.hit(orphan);
        run.hit_pair(("crash", Phase::WorkerRunning));
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
