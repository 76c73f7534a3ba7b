//! What the protocol reports about itself, for timelines and reports.
//! Checkers do not trust these: they judge the store history and the ledger.

use crate::coverage::CoveragePoint;
use crate::docs::{Owner, Pack, PackIds, TaskId};
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

/// `Hash` is written by hand (below): the trace hash's bytes, in one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum LeaseEvent {
    Registered {
        owner: Owner,
    },
    Claimed {
        task: TaskId,
        epoch: u64,
    },
    StepStarted {
        task: TaskId,
        epoch: u64,
        step: u32,
    },
    StepRecorded {
        task: TaskId,
        epoch: u64,
        step: u32,
    },
    Completed {
        task: TaskId,
        epoch: u64,
    },
    /// The worker stopped working on a task because it moved on.
    Abandoned {
        task: TaskId,
        epoch: u64,
    },
    /// The worker stopped all work: it could not prove its lease, or it
    /// learnt it had been declared dead (`cause` says which).
    Fenced {
        owner: Owner,
        /// Always `true` since `cause` exists (both causes lose the lease);
        /// kept because traces and their hashes carry it.
        lease_lost: bool,
        /// For the story `explain` tells, which watches the run itself. Not
        /// written into traces and not hashed, so a trace records exactly
        /// what it recorded before the field existed, and replays of older
        /// traces still match record for record.
        #[serde(skip)]
        cause: FenceCause,
    },
    DeclaredDead {
        owner: Owner,
    },
    Requeued {
        task: TaskId,
        from: Owner,
        epoch: u64,
    },
    ReclaimFinished {
        owner: Owner,
    },
    /// Task heartbeat mode: a reclaimer marked the lease on `task` dead.
    TaskLeaseExpired {
        task: TaskId,
        owner: Owner,
        epoch: u64,
    },
    /// Task heartbeat mode: the lease on `task` died before its claim was
    /// seen; a reclaimer moved the pending task to `epoch` so that claim, if
    /// still in flight, can never land.
    ClaimVoided {
        task: TaskId,
        owner: Owner,
        epoch: u64,
    },
    /// The node reached a coverage point (see `coverage`). An annotation:
    /// it reports where the run went and changes nothing the node does.
    Coverage {
        point: CoveragePoint,
    },
}

impl LeaseEvent {
    /// Whether this event is a coverage annotation (see
    /// `leasehold_sim::Node::is_annotation`).
    #[inline(always)]
    pub fn is_coverage(&self) -> bool {
        matches!(self, LeaseEvent::Coverage { .. })
    }
}

/// Why a worker stopped all work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FenceCause {
    /// Its own lease deadline passed (self-fencing).
    #[default]
    LeaseExpired,
    /// A write to its member document conflicted: a reclaimer had declared
    /// it dead (or deleted it after that).
    DeclaredDead,
}

/// Deliberately empty, so that `LeaseEvent`'s `Hash` (the trace hash;
/// it was derived, and writes the derive's bytes) leaves the cause out: it
/// follows from the run's hashed inputs, and leaving it out keeps every trace
/// hash (tests/golden) what it was before the field. Never use a
/// `FenceCause` as a hash key: every value collides.
impl Hash for FenceCause {
    fn hash<H: Hasher>(&self, _state: &mut H) {}
}

/// The bytes `derive(Hash)` gave the trace hasher, in one write (see
/// [`Pack`]): the discriminant, then the fields in order; `Fenced`'s cause
/// writes nothing.
impl Hash for LeaseEvent {
    #[inline(always)]
    fn hash<H: Hasher>(&self, state: &mut H) {
        match *self {
            LeaseEvent::Registered { owner } => Pack::<9>::new().u8(0).owner(owner).write(state),
            LeaseEvent::Claimed { task, epoch } => {
                Pack::<13>::new().u8(1).task(task).u64(epoch).write(state)
            }
            LeaseEvent::StepStarted { task, epoch, step } => Pack::<17>::new()
                .u8(2)
                .task(task)
                .u64(epoch)
                .u32(step)
                .write(state),
            LeaseEvent::StepRecorded { task, epoch, step } => Pack::<17>::new()
                .u8(3)
                .task(task)
                .u64(epoch)
                .u32(step)
                .write(state),
            LeaseEvent::Completed { task, epoch } => {
                Pack::<13>::new().u8(4).task(task).u64(epoch).write(state)
            }
            LeaseEvent::Abandoned { task, epoch } => {
                Pack::<13>::new().u8(5).task(task).u64(epoch).write(state)
            }
            LeaseEvent::Fenced {
                owner,
                lease_lost,
                cause: _,
            } => Pack::<10>::new()
                .u8(6)
                .owner(owner)
                .u8(lease_lost as u8)
                .write(state),
            LeaseEvent::DeclaredDead { owner } => Pack::<9>::new().u8(7).owner(owner).write(state),
            LeaseEvent::Requeued { task, from, epoch } => Pack::<21>::new()
                .u8(8)
                .task(task)
                .owner(from)
                .u64(epoch)
                .write(state),
            LeaseEvent::ReclaimFinished { owner } => {
                Pack::<9>::new().u8(9).owner(owner).write(state)
            }
            LeaseEvent::TaskLeaseExpired { task, owner, epoch } => Pack::<21>::new()
                .u8(10)
                .task(task)
                .owner(owner)
                .u64(epoch)
                .write(state),
            LeaseEvent::ClaimVoided { task, owner, epoch } => Pack::<21>::new()
                .u8(11)
                .task(task)
                .owner(owner)
                .u64(epoch)
                .write(state),
            LeaseEvent::Coverage { point } => Pack::<2>::new().u8(12).u8(point as u8).write(state),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_reads_and_writes_as_before_whatever_its_cause() {
        let old = r#"{"event":"fenced","owner":{"worker":6,"incarnation":1},"lease_lost":true}"#;
        let e: LeaseEvent = serde_json::from_str(old).unwrap();
        assert!(matches!(
            e,
            LeaseEvent::Fenced {
                cause: FenceCause::LeaseExpired,
                ..
            }
        ));
        assert_eq!(serde_json::to_string(&e).unwrap(), old);
        let dead = LeaseEvent::Fenced {
            owner: Owner {
                worker: 6,
                incarnation: 1,
            },
            lease_lost: true,
            cause: FenceCause::DeclaredDead,
        };
        // The cause is for the live story only: a trace line is the same.
        assert_eq!(serde_json::to_string(&dead).unwrap(), old);
        let hash = |e: &LeaseEvent| {
            let mut h = std::hash::DefaultHasher::new();
            std::hash::Hash::hash(e, &mut h);
            std::hash::Hasher::finish(&h)
        };
        assert_eq!(hash(&dead), hash(&e), "the cause is not hashed");
    }
}
