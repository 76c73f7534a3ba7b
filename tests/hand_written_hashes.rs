//! The protocol's hand-written `Hash` impls (`DocKey`, `DocValue`,
//! `LeaseEvent`) gather the bytes `derive(Hash)` gave the trace hasher and
//! write them at once. These tests compare digests of the real
//! `leasehold_sim::TraceHasher` against mirror types that derive `Hash` over
//! the same fields (the types as they were before the impls were written by
//! hand). They live here, not in the protocol crate, because only here is
//! the real hasher in reach.

use leasehold_protocol::{
    CoveragePoint, DocKey, DocValue, FenceCause, LeaseEvent, MemberDoc, MemberStatus, Owner,
    TaskDoc, TaskId, TaskLeaseDoc, TaskState,
};
use leasehold_sim::TraceHasher;
use std::hash::Hash;

#[derive(Hash)]
enum Key {
    Member { owner: Owner },
    Task { task: TaskId },
    PendingIdx { spot: u32, task: TaskId },
    OwnedIdx { owner: Owner, task: TaskId },
    TaskLease { task: TaskId },
}

#[derive(Hash)]
enum Value {
    Member(MemberDoc),
    Task(TaskDoc),
    TaskLease(TaskLeaseDoc),
}

#[derive(Hash)]
enum Event {
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
    Abandoned {
        task: TaskId,
        epoch: u64,
    },
    // `FenceCause` hashes nothing (on purpose): as derived, with it.
    Fenced {
        owner: Owner,
        lease_lost: bool,
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
    TaskLeaseExpired {
        task: TaskId,
        owner: Owner,
        epoch: u64,
    },
    ClaimVoided {
        task: TaskId,
        owner: Owner,
        epoch: u64,
    },
    Coverage {
        point: CoveragePoint,
    },
}

fn key_mirror(k: DocKey) -> Key {
    match k {
        DocKey::Member { owner } => Key::Member { owner },
        DocKey::Task { task } => Key::Task { task },
        DocKey::PendingIdx { spot, task } => Key::PendingIdx { spot, task },
        DocKey::OwnedIdx { owner, task } => Key::OwnedIdx { owner, task },
        DocKey::TaskLease { task } => Key::TaskLease { task },
    }
}

fn value_mirror(v: DocValue) -> Value {
    match v {
        DocValue::Member(m) => Value::Member(m),
        DocValue::Task(t) => Value::Task(t),
        DocValue::TaskLease(l) => Value::TaskLease(l),
    }
}

fn event_mirror(e: LeaseEvent) -> Event {
    use LeaseEvent as E;
    match e {
        E::Registered { owner } => Event::Registered { owner },
        E::Claimed { task, epoch } => Event::Claimed { task, epoch },
        E::StepStarted { task, epoch, step } => Event::StepStarted { task, epoch, step },
        E::StepRecorded { task, epoch, step } => Event::StepRecorded { task, epoch, step },
        E::Completed { task, epoch } => Event::Completed { task, epoch },
        E::Abandoned { task, epoch } => Event::Abandoned { task, epoch },
        E::Fenced {
            owner,
            lease_lost,
            cause,
        } => Event::Fenced {
            owner,
            lease_lost,
            cause,
        },
        E::DeclaredDead { owner } => Event::DeclaredDead { owner },
        E::Requeued { task, from, epoch } => Event::Requeued { task, from, epoch },
        E::ReclaimFinished { owner } => Event::ReclaimFinished { owner },
        E::TaskLeaseExpired { task, owner, epoch } => {
            Event::TaskLeaseExpired { task, owner, epoch }
        }
        E::ClaimVoided { task, owner, epoch } => Event::ClaimVoided { task, owner, epoch },
        E::Coverage { point } => Event::Coverage { point },
    }
}

// Field values at the edges of their widths and of the hasher's one-byte
// `usize` encoding (254, 255).
const U32S: [u32; 5] = [0, 1, 254, 0x1234_5678, u32::MAX];
const U64S: [u64; 4] = [0, 255, 0x0123_4567_89ab_cdef, u64::MAX];

fn owners() -> Vec<Owner> {
    U32S.iter()
        .flat_map(|&worker| {
            U32S.iter().map(move |&incarnation| Owner {
                worker,
                incarnation,
            })
        })
        .collect()
}

fn keys() -> Vec<DocKey> {
    let mut keys = Vec::new();
    for owner in owners() {
        keys.push(DocKey::Member { owner });
        keys.extend(U32S.map(|t| DocKey::OwnedIdx {
            owner,
            task: TaskId(t),
        }));
    }
    for t in U32S {
        let task = TaskId(t);
        keys.extend([
            DocKey::Task { task },
            DocKey::pending(task),
            DocKey::TaskLease { task },
        ]);
    }
    keys
}

fn values() -> Vec<DocValue> {
    let mut values = Vec::new();
    let statuses = [MemberStatus::Alive, MemberStatus::Dead];
    for (i, owner) in owners().into_iter().enumerate() {
        let u = U64S[i % U64S.len()];
        let w = U64S[(i / U64S.len()) % U64S.len()];
        let status = statuses[i % 2];
        values.push(DocValue::Member(MemberDoc {
            owner,
            status,
            beats: u,
            lease_timeout_ms: w,
            written_at_ms: u ^ w,
        }));
        values.push(DocValue::TaskLease(TaskLeaseDoc {
            owner,
            epoch: w,
            status,
            beats: u,
            lease_timeout_ms: u.wrapping_add(w),
            written_at_ms: w ^ 7,
        }));
        for state in [TaskState::Pending, TaskState::Running, TaskState::Done] {
            for owner in [None, Some(owner)] {
                values.push(DocValue::Task(TaskDoc {
                    state,
                    owner,
                    epoch: u,
                    steps_done: U32S[i % U32S.len()],
                    steps_total: U32S[(i + 2) % U32S.len()],
                }));
            }
        }
    }
    values
}

fn events() -> Vec<LeaseEvent> {
    let mut events = Vec::new();
    for (i, &a) in U32S.iter().enumerate() {
        for (j, &epoch) in U64S.iter().enumerate() {
            let b = U32S[(i + j + 1) % U32S.len()];
            let owner = Owner {
                worker: a,
                incarnation: b,
            };
            let task = TaskId(b);
            let step = a ^ b;
            events.extend([
                LeaseEvent::Registered { owner },
                LeaseEvent::Claimed { task, epoch },
                LeaseEvent::StepStarted { task, epoch, step },
                LeaseEvent::StepRecorded { task, epoch, step },
                LeaseEvent::Completed { task, epoch },
                LeaseEvent::Abandoned { task, epoch },
                LeaseEvent::DeclaredDead { owner },
                LeaseEvent::Requeued {
                    task,
                    from: owner,
                    epoch,
                },
                LeaseEvent::ReclaimFinished { owner },
                LeaseEvent::TaskLeaseExpired { task, owner, epoch },
                LeaseEvent::ClaimVoided { task, owner, epoch },
            ]);
            for lease_lost in [false, true] {
                for cause in [FenceCause::LeaseExpired, FenceCause::DeclaredDead] {
                    events.push(LeaseEvent::Fenced {
                        owner,
                        lease_lost,
                        cause,
                    });
                }
            }
        }
    }
    events.extend(
        CoveragePoint::ALL
            .iter()
            .map(|&point| LeaseEvent::Coverage { point }),
    );
    events
}

fn digest<T: Hash>(value: &T) -> u64 {
    let mut h = TraceHasher::new();
    value.hash(&mut h);
    h.digest()
}

/// Each value alone, then all of them in one stream (which crosses the
/// hasher's buffer several times): the same digests as the mirrors'.
fn assert_same_digests<T: Hash + std::fmt::Debug + Copy, M: Hash>(
    values: &[T],
    mirror: impl Fn(T) -> M,
) {
    let mut ours = TraceHasher::new();
    let mut theirs = TraceHasher::new();
    for &v in values {
        let m = mirror(v);
        assert_eq!(digest(&v), digest(&m), "{v:?}");
        v.hash(&mut ours);
        m.hash(&mut theirs);
    }
    assert_eq!(ours.digest(), theirs.digest(), "the stream of all values");
}

#[test]
fn doc_keys_hash_as_derived() {
    assert_same_digests(&keys(), key_mirror);
}

#[test]
fn doc_values_hash_as_derived() {
    assert_same_digests(&values(), value_mirror);
}

#[test]
fn lease_events_hash_as_derived() {
    assert_same_digests(&events(), event_mirror);
}
