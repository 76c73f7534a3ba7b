//! Counts store operations by what they are for (heartbeat, claim, scan...),
//! judged from the records, for `run --json` and the load charts.

use leasehold_check::NodeRole;
use leasehold_interface::{Document, StoreRequest};
use leasehold_protocol::{DocKey, DocValue, LeaseEvent, TaskDoc, TaskState};
use leasehold_sim::{Actor, Observer, Record, RecordKind};
use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreLoad {
    /// Writes by workers to their own heartbeat document (registration
    /// included); in task heartbeat mode, to their task lease documents
    /// (creation included).
    pub heartbeat_writes: u64,
    /// Reclaimer scans of heartbeat documents (pages); of task lease
    /// documents in task heartbeat mode.
    pub member_scans: u64,
    /// Worker scans for pending tasks.
    pub pending_scans: u64,
    /// Reclaimer listings of a dead worker's tasks.
    pub owned_scans: u64,
    pub gets: u64,
    pub claims: u64,
    pub progress_writes: u64,
    pub completions: u64,
    pub requeues: u64,
    /// Reclaimers marking a heartbeat document (or a task lease) dead.
    pub mark_dead_writes: u64,
    pub member_deletes: u64,
    pub task_creates: u64,
    /// Task heartbeat mode: task lease documents deleted, by the worker that
    /// finished the task or by a reclaimer.
    pub lease_deletes: u64,
    /// Task heartbeat mode: lease documents created by workers, one per claim
    /// attempt (already counted in `heartbeat_writes`).
    pub lease_creates: u64,
    /// Of `gets`, those a reclaimer sent (the rest are workers').
    pub reclaimer_gets: u64,
    /// Of `lease_deletes`, those a reclaimer sent (the rest are workers').
    pub reclaimer_lease_deletes: u64,
}

/// Store requests by the kind of node that sent them (the workload's task
/// creates are neither's): what the cost budget judges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RoleOps {
    pub worker_reads: u64,
    pub worker_writes: u64,
    pub reclaimer_reads: u64,
    pub reclaimer_writes: u64,
}

impl StoreLoad {
    /// The counts by sender. Each kind of request has one sender in this
    /// protocol (a poll's scan and a claim are a worker's, a scan of
    /// heartbeat documents or of a dead owner's tasks and a re-queue a
    /// reclaimer's); gets and lease deletes, sent by both, are counted
    /// apart.
    pub fn by_role(&self) -> RoleOps {
        RoleOps {
            worker_reads: self.pending_scans + (self.gets - self.reclaimer_gets),
            worker_writes: self.heartbeat_writes
                + self.claims
                + self.progress_writes
                + self.completions
                + (self.lease_deletes - self.reclaimer_lease_deletes),
            reclaimer_reads: self.member_scans + self.owned_scans + self.reclaimer_gets,
            reclaimer_writes: self.mark_dead_writes
                + self.member_deletes
                + self.requeues
                + self.reclaimer_lease_deletes,
        }
    }
}

pub struct StoreLoadCounter<'a> {
    roles: &'a [NodeRole],
    pub load: StoreLoad,
}

impl<'a> StoreLoadCounter<'a> {
    pub fn new(roles: &'a [NodeRole]) -> Self {
        StoreLoadCounter {
            roles,
            load: StoreLoad::default(),
        }
    }
}

impl Observer<DocKey, DocValue, LeaseEvent> for StoreLoadCounter<'_> {
    #[inline]
    fn record(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        if let RecordKind::Store {
            actor, op, before, ..
        } = record.kind
        {
            self.store(actor, op, before);
        }
    }
}

impl StoreLoadCounter<'_> {
    /// An index scan from `start`: what [`StoreLoadCounter::store`] does
    /// with one.
    #[inline(always)]
    pub fn index_scan(&mut self, start: &DocKey) {
        match start {
            DocKey::PendingIdx { .. } => self.load.pending_scans += 1,
            _ => self.load.owned_scans += 1,
        }
    }

    /// A store record: what [`Observer::record`] does with one, for a host
    /// that already knows the record's kind. Inlined: a few counts, less
    /// than the call's own cost on every store write.
    #[inline(always)]
    pub fn store(
        &mut self,
        actor: Actor,
        op: &StoreRequest<DocKey, DocValue>,
        before: Option<&Document<DocKey, DocValue>>,
    ) {
        // Asked only by the writes that depend on it.
        let roles = self.roles;
        let worker = || match actor {
            Actor::Node { node, .. } => matches!(roles[node.index()], NodeRole::Worker { .. }),
            Actor::External => false,
        };
        let reclaimer = || match actor {
            Actor::Node { node, .. } => matches!(roles[node.index()], NodeRole::Reclaimer { .. }),
            Actor::External => false,
        };
        let l = &mut self.load;
        match op {
            StoreRequest::Get { .. } => {
                l.gets += 1;
                l.reclaimer_gets += u64::from(reclaimer());
            }
            StoreRequest::Scan { .. } => l.member_scans += 1,
            StoreRequest::ScanIndex { start, .. } => self.index_scan(start),
            StoreRequest::DeleteIfVersion {
                key: DocKey::TaskLease { .. },
                ..
            } => {
                l.lease_deletes += 1;
                l.reclaimer_lease_deletes += u64::from(reclaimer());
            }
            StoreRequest::DeleteIfVersion { .. } => l.member_deletes += 1,
            StoreRequest::CreateIfAbsent {
                key: DocKey::TaskLease { .. },
                ..
            } if worker() => {
                l.heartbeat_writes += 1;
                l.lease_creates += 1;
            }
            StoreRequest::CreateIfAbsent { key, value, .. }
            | StoreRequest::PutIfVersion { key, value, .. }
            | StoreRequest::PutUnconditional { key, value, .. } => match (key, value) {
                (DocKey::Member { .. } | DocKey::TaskLease { .. }, _) if worker() => {
                    l.heartbeat_writes += 1
                }
                (DocKey::Member { .. } | DocKey::TaskLease { .. }, _) => l.mark_dead_writes += 1,
                (DocKey::Task { .. }, DocValue::Task(t)) => {
                    self.task_write(actor, t, before.and_then(|b| b.value.as_task()))
                }
                _ => {}
            },
        }
    }

    /// A write of task document `t` over `before`, landed or not: what
    /// [`StoreLoadCounter::store`] does with one.
    #[inline(always)]
    pub fn task_write(&mut self, actor: Actor, t: &TaskDoc, before: Option<&TaskDoc>) {
        let l = &mut self.load;
        match (actor, t.state) {
            (Actor::External, _) => l.task_creates += 1,
            (_, TaskState::Pending) => l.requeues += 1,
            (_, TaskState::Done) => l.completions += 1,
            // Progress always records one more step than the document
            // held; a claim (landed or not) never does.
            (_, TaskState::Running) if before.is_some_and(|b| t.steps_done > b.steps_done) => {
                l.progress_writes += 1
            }
            (_, TaskState::Running) => l.claims += 1,
        }
    }
}
