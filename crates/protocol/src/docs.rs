//! The documents the protocol keeps in the store, and their keys.
//!
//! Key order matters: scans are key ranges. All heartbeat documents sort
//! before all task documents; index keys live in their own ranges.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskId(pub u32);

impl TaskId {
    /// Never used for a real task: the exclusive end of task ranges.
    pub const END: TaskId = TaskId(u32::MAX);
}

/// One incarnation of one worker: the identity that owns tasks. A restarted
/// worker is a new owner, so its heartbeat cannot hide the old one's tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Owner {
    pub worker: u32,
    pub incarnation: u32,
}

impl Owner {
    pub const MIN: Owner = Owner {
        worker: 0,
        incarnation: 0,
    };
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "worker-{}#{}", self.worker, self.incarnation)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "doc", rename_all = "snake_case")]
pub enum DocKey {
    /// A worker incarnation's heartbeat document.
    Member {
        owner: Owner,
    },
    Task {
        task: TaskId,
    },
    /// Index: the task is pending. Unique per task.
    PendingIdx {
        task: TaskId,
    },
    /// Index: the task is running under `owner`. Unique per task.
    OwnedIdx {
        owner: Owner,
        task: TaskId,
    },
    /// Task heartbeat mode only: the lease on one task, renewed by its
    /// claimant. Declared last so every other key range keeps its place.
    TaskLease {
        task: TaskId,
    },
}

impl DocKey {
    pub fn member_range() -> (DocKey, DocKey) {
        (
            DocKey::Member { owner: Owner::MIN },
            DocKey::Task { task: TaskId(0) },
        )
    }

    pub fn pending_range() -> (DocKey, DocKey) {
        (
            DocKey::PendingIdx { task: TaskId(0) },
            DocKey::PendingIdx { task: TaskId::END },
        )
    }

    pub fn task_lease_range() -> (DocKey, DocKey) {
        (
            DocKey::TaskLease { task: TaskId(0) },
            DocKey::TaskLease { task: TaskId::END },
        )
    }

    pub fn owned_range(owner: Owner) -> (DocKey, DocKey) {
        (
            DocKey::OwnedIdx {
                owner,
                task: TaskId(0),
            },
            DocKey::OwnedIdx {
                owner,
                task: TaskId::END,
            },
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberStatus {
    Alive,
    /// A reclaimer declared it dead; its tasks are being (or were) re-queued.
    Dead,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MemberDoc {
    pub owner: Owner,
    pub status: MemberStatus,
    /// Heartbeats written so far; every renewal changes it, and so the version.
    pub beats: u64,
    /// The lease this worker runs under: reclaimers use the holder's own value.
    pub lease_timeout_ms: u64,
    /// Local time of the writer when it wrote. Informational: no correct
    /// reclaimer compares it with its own clock.
    pub written_at_ms: u64,
}

/// Task heartbeat mode: the lease one claimant holds on one task. Created
/// before the claim (so a running task always has one), renewed every
/// heartbeat interval, marked `Dead` by a reclaimer that saw its version
/// stand still for `lease_timeout_ms`, deleted once the task is settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskLeaseDoc {
    pub owner: Owner,
    /// The epoch the claim under this lease gives the task.
    pub epoch: u64,
    pub status: MemberStatus,
    /// Renewals so far; every renewal changes it, and so the version.
    pub beats: u64,
    /// The lease this claimant runs under: reclaimers use the holder's value.
    pub lease_timeout_ms: u64,
    /// Informational wall-clock stamp; never compared with another clock.
    pub written_at_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Pending,
    Running,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskDoc {
    pub state: TaskState,
    /// The claimant while running; the finisher once done.
    pub owner: Option<Owner>,
    /// The fencing token: bumped by every claim and every re-queue.
    pub epoch: u64,
    pub steps_done: u32,
    pub steps_total: u32,
}

impl TaskDoc {
    pub fn new_pending(steps_total: u32) -> TaskDoc {
        assert!(steps_total > 0);
        TaskDoc {
            state: TaskState::Pending,
            owner: None,
            epoch: 0,
            steps_done: 0,
            steps_total,
        }
    }

    /// The index key a task document is filed under in this state.
    pub fn index_key(&self, task: TaskId) -> Option<DocKey> {
        match self.state {
            TaskState::Pending => Some(DocKey::PendingIdx { task }),
            TaskState::Running => Some(DocKey::OwnedIdx {
                owner: self.owner.expect("a running task has an owner"),
                task,
            }),
            TaskState::Done => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DocValue {
    Member(MemberDoc),
    Task(TaskDoc),
    TaskLease(TaskLeaseDoc),
}

impl DocValue {
    pub fn as_task(&self) -> Option<&TaskDoc> {
        match self {
            DocValue::Task(t) => Some(t),
            _ => None,
        }
    }

    pub fn as_member(&self) -> Option<&MemberDoc> {
        match self {
            DocValue::Member(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_task_lease(&self) -> Option<&TaskLeaseDoc> {
        match self {
            DocValue::TaskLease(l) => Some(l),
            _ => None,
        }
    }
}
