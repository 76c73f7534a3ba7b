//! Crash-to-running-again times, judged from the records: the simulator's
//! crash record, then the store write that makes each task the crashed
//! incarnation held run again under another owner. What the protocol
//! believes (its events) plays no part.

use leasehold_interface::{StoreReply, StoreRequest};
use leasehold_protocol::{DocKey, DocValue, LeaseEvent, Owner, TaskId, TaskState};
use leasehold_sim::{Fault, Observer, Record, RecordKind};
use std::collections::BTreeMap;

pub struct DetectionMeter {
    workers: u32,
    /// Owner of every running task, from the store's writes.
    running: BTreeMap<TaskId, Owner>,
    /// Tasks whose owner crashed while running them: (owner, crash time).
    orphaned: BTreeMap<TaskId, (Owner, u64)>,
    /// Microseconds from crash to running again, one per orphaned task.
    pub samples_us: Vec<u64>,
    pub crashes: u64,
    /// The live incarnation of each node, from its steps.
    incarnations: BTreeMap<u32, u32>,
}

impl DetectionMeter {
    pub fn new(workers: u32) -> DetectionMeter {
        DetectionMeter {
            workers,
            running: BTreeMap::new(),
            orphaned: BTreeMap::new(),
            samples_us: Vec::new(),
            crashes: 0,
            incarnations: BTreeMap::new(),
        }
    }

    /// Orphans still waiting when the run ended (a sweep that cut a run too
    /// short would hide slow recoveries; the detection chart reports a
    /// non-zero count as a violation).
    pub fn unresolved(&self) -> usize {
        self.orphaned.len()
    }
}

impl Observer<DocKey, DocValue, LeaseEvent> for DetectionMeter {
    fn record(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        match &record.kind {
            RecordKind::Step {
                node, incarnation, ..
            } => {
                self.incarnations.insert(node.0, *incarnation);
            }
            RecordKind::Fault(Fault::Crash { node, .. } | Fault::CrashAt { node, .. })
                if node.0 < self.workers =>
            {
                self.crashes += 1;
                let owner = Owner {
                    worker: node.0,
                    incarnation: self.incarnations.get(&node.0).copied().unwrap_or(1),
                };
                for (task, _) in self.running.iter().filter(|(_, o)| **o == owner) {
                    self.orphaned.insert(*task, (owner, record.time_us));
                }
            }
            RecordKind::Store {
                op:
                    StoreRequest::CreateIfAbsent { key, value, .. }
                    | StoreRequest::PutIfVersion { key, value, .. }
                    | StoreRequest::PutUnconditional { key, value, .. },
                reply: StoreReply::Written { .. },
                ..
            } => {
                let (DocKey::Task { task }, Some(doc)) = (key, value.as_task()) else {
                    return;
                };
                match (doc.state, doc.owner) {
                    (TaskState::Running, Some(owner)) => {
                        self.running.insert(*task, owner);
                        if let Some((crashed, at_us)) = self.orphaned.get(task).copied()
                            && crashed != owner
                        {
                            self.orphaned.remove(task);
                            self.samples_us.push(record.time_us - at_us);
                        }
                    }
                    _ => {
                        self.running.remove(task);
                    }
                }
            }
            _ => {}
        }
    }
}
