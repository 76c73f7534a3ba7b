//! What the protocol reports about itself, for timelines and reports.
//! Checkers do not trust these: they judge the store history and the ledger.

use crate::docs::{Owner, TaskId};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// The worker could not prove its lease and stopped all work.
    Fenced {
        owner: Owner,
        lease_lost: bool,
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
}
