//! Pictures of a run: Chrome trace event JSON (opens in Perfetto) and an SVG
//! swimlane. Both are built from the run's records, never from node beliefs.

use leasehold_check::NodeRole;
use leasehold_interface::StoreReply;
use leasehold_protocol::{DocKey, DocValue, LeaseEvent, Owner, TaskState, Variant};
use leasehold_run::run::{Rerun, RunOutcome, node_roles};
use leasehold_scenario::scenario::ValidScenario;
use leasehold_sim::{Actor, Fault, MessageAction, NodeId, Observer, Record, RecordKind};
use serde_json::{Value, json};
use std::collections::BTreeMap;

// Defined in `explain`, which names nodes too; re-exported for its users.
pub use crate::explain::node_name;

/// One stretch of time during which a worker incarnation held a task.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaseSpan {
    pub node: NodeId,
    pub owner: Owner,
    pub task: u32,
    pub epoch: u64,
    pub start_us: u64,
    pub end_us: u64,
    /// How it ended: "done", "re-queued", "taken over", "still held".
    pub ending: &'static str,
}

/// A point event on a node's lane.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    pub node: NodeId,
    pub time_us: u64,
    /// "crash", "restart", "pause", "partition", "heartbeat",
    /// "declared dead", "fenced", "clock jump", or what a message fault
    /// did: "message lost", "message delivered twice", "message delayed",
    /// "message refused", "call hangs".
    pub kind: &'static str,
    pub detail: String,
    /// For pauses and partitions: how long.
    pub duration_us: u64,
}

/// Everything a picture needs, gathered in one pass over the records.
#[derive(Default)]
pub struct Timeline {
    pub spans: Vec<LeaseSpan>,
    pub marks: Vec<Mark>,
    /// Store writes per whole second of simulated time.
    pub writes_per_s: BTreeMap<u64, u64>,
    pub end_us: u64,
    open: BTreeMap<u32, usize>,
}

struct Collector<'a> {
    roles: &'a [NodeRole],
    tl: Timeline,
}

impl Collector<'_> {
    fn node_of_owner(&self, owner: Owner) -> Option<NodeId> {
        self.roles
            .iter()
            .position(|r| {
                *r == NodeRole::Worker {
                    worker: owner.worker,
                }
            })
            .map(|i| NodeId(i as u32))
    }

    fn close(&mut self, task: u32, at_us: u64, ending: &'static str) {
        if let Some(i) = self.tl.open.remove(&task) {
            self.tl.spans[i].end_us = at_us;
            self.tl.spans[i].ending = ending;
        }
    }

    fn mark(
        &mut self,
        node: NodeId,
        time_us: u64,
        kind: &'static str,
        detail: String,
        duration_us: u64,
    ) {
        self.tl.marks.push(Mark {
            node,
            time_us,
            kind,
            detail,
            duration_us,
        });
    }
}

impl Observer<DocKey, DocValue, LeaseEvent> for Collector<'_> {
    fn record(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        let t = record.time_us;
        self.tl.end_us = t;
        match &record.kind {
            RecordKind::Store {
                actor, op, reply, ..
            } => {
                if !matches!(reply, StoreReply::Written { .. }) {
                    return;
                }
                *self.tl.writes_per_s.entry(t / 1_000_000).or_insert(0) += 1;
                let Some(value) = op.value() else {
                    return;
                };
                match (op.key(), value) {
                    (Some(DocKey::Task { task }), DocValue::Task(doc)) => {
                        let task = task.0;
                        let held = self.tl.open.get(&task).map(|i| self.tl.spans[*i].clone());
                        match doc.state {
                            TaskState::Done => self.close(task, t, "done"),
                            TaskState::Pending => self.close(task, t, "re-queued"),
                            TaskState::Running => {
                                let owner = doc.owner.expect("running tasks have owners");
                                let same = held
                                    .as_ref()
                                    .is_some_and(|h| h.owner == owner && h.epoch == doc.epoch);
                                if !same {
                                    self.close(task, t, "taken over");
                                    if let Some(node) = self.node_of_owner(owner) {
                                        self.tl.open.insert(task, self.tl.spans.len());
                                        self.tl.spans.push(LeaseSpan {
                                            node,
                                            owner,
                                            task,
                                            epoch: doc.epoch,
                                            start_us: t,
                                            end_us: t,
                                            ending: "still held",
                                        });
                                    }
                                }
                            }
                        }
                    }
                    (Some(DocKey::Member { .. }), DocValue::Member(_)) => {
                        if let Actor::Node { node, .. } = actor
                            && matches!(self.roles.get(node.index()), Some(NodeRole::Worker { .. }))
                        {
                            self.mark(*node, t, "heartbeat", String::new(), 0);
                        }
                    }
                    _ => {}
                }
            }
            RecordKind::Fault(f) => {
                // Labelled in the words `explain` tells them in.
                let words = || crate::explain::fault_words(self.roles, f);
                match *f {
                    Fault::Crash { node, .. } | Fault::CrashAt { node, .. } => {
                        self.mark(node, t, "crash", words(), 0)
                    }
                    Fault::Restart { node, .. } => self.mark(node, t, "restart", words(), 0),
                    Fault::Pause {
                        node, duration_us, ..
                    }
                    | Fault::PauseAt {
                        node, duration_us, ..
                    } => self.mark(node, t, "pause", words(), duration_us),
                    Fault::ClockJump { node, .. } => self.mark(node, t, "clock jump", words(), 0),
                    Fault::Partition {
                        node, duration_us, ..
                    } => self.mark(node, t, "partition", words(), duration_us),
                    Fault::Message { node, action, .. } => {
                        let kind = match action {
                            MessageAction::Drop => "message lost",
                            MessageAction::Duplicate { .. } => "message delivered twice",
                            MessageAction::Delay { .. } => "message delayed",
                            MessageAction::Fail => "message refused",
                            MessageAction::Hang => "call hangs",
                        };
                        self.mark(node, t, kind, words(), 0)
                    }
                    _ => {}
                }
            }
            RecordKind::Event { node, event, .. } => match event {
                LeaseEvent::DeclaredDead { owner } => {
                    self.mark(*node, t, "declared dead", owner.to_string(), 0)
                }
                LeaseEvent::Fenced { .. } => self.mark(*node, t, "fenced", String::new(), 0),
                _ => {}
            },
            _ => {}
        }
    }
}

/// Re-run (as `how` says: a live run's trace is judged from its records)
/// and gather the timeline (and the outcome, for the violation).
pub fn timeline(
    scn: &ValidScenario,
    seed: u64,
    variant: Variant,
    how: &Rerun,
) -> (Timeline, RunOutcome) {
    let roles = node_roles(scn);
    let mut c = Collector {
        roles: &roles,
        tl: Timeline::default(),
    };
    let outcome = how.run(scn, seed, variant, Some(&mut c));
    let end = c.tl.end_us;
    for s in c.tl.spans.iter_mut().filter(|s| s.ending == "still held") {
        s.end_us = end;
    }
    (c.tl, outcome)
}

/// The samples of a per-second counter: every busy second, and a 0 at the
/// start and after each busy stretch. A counter holds its last value until
/// the next sample, so without the zeros one write every 5 s draws as 1/s.
pub fn rate_samples(per_s: &BTreeMap<u64, u64>) -> Vec<(u64, u64)> {
    let mut samples = Vec::with_capacity(per_s.len() * 2 + 1);
    if per_s.first_key_value().is_some_and(|(&sec, _)| sec > 0) {
        samples.push((0, 0));
    }
    for (&sec, &n) in per_s {
        samples.push((sec, n));
        if !per_s.contains_key(&(sec + 1)) {
            samples.push((sec + 1, 0));
        }
    }
    samples
}

/// Chrome trace event JSON (the format Perfetto and chrome://tracing open):
/// one process per node, one track per (worker, task) lease so spans nest,
/// instants for faults and reclaims, a counter for store writes per second,
/// and the violation as a global instant.
pub fn perfetto(scn: &ValidScenario, tl: &Timeline, outcome: &RunOutcome) -> Value {
    let roles = node_roles(scn);
    let mut events: Vec<Value> = Vec::new();
    for (i, _) in roles.iter().enumerate() {
        let pid = i as u64 + 1;
        events.push(
            json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
            "args": {"name": node_name(&roles, NodeId(i as u32))}}),
        );
        events.push(json!({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": i}}));
        events.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": 0, "args": {"name": "node"}}));
    }
    let mut named_tracks = std::collections::BTreeSet::new();
    for s in &tl.spans {
        let pid = s.node.0 as u64 + 1;
        let tid = s.task as u64 + 1;
        if named_tracks.insert((pid, tid)) {
            events.push(
                json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                "args": {"name": format!("task {}", s.task)}}),
            );
        }
        events.push(
            json!({"ph": "X", "name": format!("task {} epoch {}", s.task, s.epoch), "cat": "lease",
            "pid": pid, "tid": tid, "ts": s.start_us, "dur": (s.end_us - s.start_us).max(1),
            "args": {"owner": s.owner.to_string(), "epoch": s.epoch, "ending": s.ending}}),
        );
    }
    for m in &tl.marks {
        let pid = m.node.0 as u64 + 1;
        if m.duration_us > 0 {
            events.push(
                json!({"ph": "X", "name": m.kind, "cat": "fault", "pid": pid, "tid": 0,
                "ts": m.time_us, "dur": m.duration_us, "args": {"detail": m.detail}}),
            );
        } else {
            events.push(
                json!({"ph": "i", "s": "t", "name": m.kind, "cat": "event", "pid": pid, "tid": 0,
                "ts": m.time_us, "args": {"detail": m.detail}}),
            );
        }
    }
    for (sec, writes) in rate_samples(&tl.writes_per_s) {
        events.push(
            json!({"ph": "C", "name": "store writes/s", "pid": 0, "tid": 0, "ts": sec * 1_000_000,
            "args": {"writes": writes}}),
        );
    }
    events.push(
        json!({"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "store"}}),
    );
    for v in &outcome.violations {
        events.push(json!({"ph": "i", "s": "g", "name": format!("VIOLATION {}", v.invariant), "cat": "violation",
            "pid": 0, "tid": 0, "ts": v.time_ms * 1_000, "args": {"message": v.message}}));
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms",
        "otherData": {"scenario": scn.name(), "seed": outcome.seed, "variant": outcome.variant.name()}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_samples_fall_to_zero_in_idle_seconds() {
        let per_s: BTreeMap<u64, u64> = [(3, 1), (8, 2), (9, 4)].into_iter().collect();
        assert_eq!(
            rate_samples(&per_s),
            vec![(0, 0), (3, 1), (4, 0), (8, 2), (9, 4), (10, 0)]
        );
        let from_zero: BTreeMap<u64, u64> = [(0, 5)].into_iter().collect();
        assert_eq!(rate_samples(&from_zero), vec![(0, 5), (1, 0)]);
        assert!(rate_samples(&BTreeMap::new()).is_empty());
    }
}
