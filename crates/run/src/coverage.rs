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
//! [`RunCoverage`] is one run's; leasehold-explore's `CoverageTally` sums
//! runs for `coverage`, `sweep --coverage`, `hunt --coverage` and guided
//! hunting.

use leasehold_check::NodeRole;
use leasehold_interface::{EffectReply, StoreReply};
use leasehold_protocol::coverage::Modes;
use leasehold_protocol::{CoveragePoint, DocKey, DocValue, LeaseEvent, TaskDoc};
use leasehold_sim::{Fault, NodeId};
use serde::Serialize;

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
