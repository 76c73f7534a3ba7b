//! Task heartbeat mode, reclaimer side: the scan walks task lease documents.
//!
//! A lease is dead when its version has not changed for the lease timeout
//! recorded in it, measured on this reclaimer's own clock from the moment it
//! first saw that version; no timestamp written by another node is compared
//! with the local clock. Reclaiming mirrors worker mode, one task at a time:
//! mark the lease `Dead` (which also fences its holder: the next renewal
//! fails), re-queue the task if it still runs under that lease (a write
//! conditional on the version just read, after re-checking owner and epoch,
//! bumping the epoch), then delete the lease. A reclaimer that crashes between
//! any two steps leaves a `Dead` lease behind, which every later scan resumes.

use super::{Observation, Purpose, Reclaimer};
use crate::coverage::CoveragePoint;
use crate::docs::{DocKey, DocValue, MemberStatus, TaskDoc, TaskId, TaskLeaseDoc, TaskState};
use crate::events::LeaseEvent;
use leasehold_interface::{Document, Instant, StoreReply, StoreRequest, Version};
use std::collections::BTreeMap;

/// An `Observation` of a lease, and the scan that last saw it.
#[derive(Clone, Copy, Debug)]
struct LeaseObservation {
    seen: Observation,
    /// The scan that last saw the lease; older entries are forgotten.
    scan: u64,
}

#[derive(Clone, Copy, Debug)]
struct LeaseJob {
    lease: TaskLeaseDoc,
    /// Version of the lease document once marked dead.
    dead_version: Version,
}

/// What one reclaimer knows about task leases. Empty in worker mode.
#[derive(Default)]
pub(super) struct LeaseWatch {
    scan: u64,
    observed: BTreeMap<TaskId, LeaseObservation>,
    /// Leases being marked dead, as they were when the mark was sent. Each
    /// entry has its one mark in flight: at most `MAX_PENDING_REQUESTS`.
    marking: BTreeMap<TaskId, TaskLeaseDoc>,
    /// Each entry has exactly one request in flight (read, re-queue or void,
    /// delete): at most `MAX_PENDING_REQUESTS`.
    jobs: BTreeMap<TaskId, LeaseJob>,
}

impl LeaseWatch {
    pub(super) fn start_scan(&mut self) {
        self.scan += 1;
    }

    /// Forget leases the finished scan did not see, so memory follows the
    /// live leases.
    pub(super) fn finish_scan(&mut self) {
        let scan = self.scan;
        self.observed.retain(|_, o| o.scan == scan);
    }
}

impl Reclaimer {
    pub(super) fn consider_task_lease(&mut self, now: Instant, doc: &Document<DocKey, DocValue>) {
        let (DocKey::TaskLease { task }, Some(lease)) = (doc.key, doc.value.as_task_lease()) else {
            return;
        };
        match lease.status {
            MemberStatus::Dead => {
                if !self.leases.jobs.contains_key(&task) {
                    self.out.cover(CoveragePoint::DeadLeaseResumed);
                    self.start_lease_job(now, task, *lease, doc.version);
                }
            }
            MemberStatus::Alive => {
                let scan = self.leases.scan;
                let obs = self
                    .leases
                    .observed
                    .entry(task)
                    .or_insert(LeaseObservation {
                        seen: Observation::new(doc.version, now),
                        scan,
                    });
                obs.scan = scan;
                let Some(quiet_us) = obs.seen.stood_still_us(doc.version, now) else {
                    return;
                };
                if quiet_us >= lease.lease_timeout_ms * 1_000
                    && !self.leases.marking.contains_key(&task)
                {
                    self.expire_lease(now, task, doc.version, *lease);
                }
            }
        }
    }

    fn expire_lease(&mut self, now: Instant, task: TaskId, version: Version, lease: TaskLeaseDoc) {
        self.leases.marking.insert(task, lease);
        let op = StoreRequest::PutIfVersion {
            key: DocKey::TaskLease { task },
            expected: version,
            value: DocValue::TaskLease(TaskLeaseDoc {
                status: MemberStatus::Dead,
                ..lease
            }),
            index: None,
        };
        self.out
            .store(op, Purpose::ExpireLease { task }, self.deadline(now));
    }

    fn start_lease_job(&mut self, now: Instant, task: TaskId, lease: TaskLeaseDoc, dead: Version) {
        assert!(
            !self.leases.jobs.contains_key(&task),
            "two reclaim jobs for one lease"
        );
        self.leases.jobs.insert(
            task,
            LeaseJob {
                lease,
                dead_version: dead,
            },
        );
        let op = StoreRequest::Get {
            key: DocKey::Task { task },
        };
        self.out
            .store(op, Purpose::GetLeasedTask { task }, self.deadline(now));
    }

    fn requeue_leased(&mut self, now: Instant, task: TaskId, doc: &Document<DocKey, DocValue>) {
        let from = self.leases.jobs[&task].lease.owner;
        let t = doc.value.as_task().expect("checked by the caller");
        let purpose = Purpose::RequeueLeased { task };
        self.send_requeue(now, task, doc.version, t, from, purpose);
    }

    /// Re-write a pending task at a new epoch, conditional on the version
    /// read: any claim still in flight under a dead lease expects an older
    /// version, so it conflicts wherever it lands. Same reply handling as a
    /// re-queue: on success the lease is deleted, on conflict the next scan
    /// re-reads the task.
    fn void_claim(
        &mut self,
        now: Instant,
        task: TaskId,
        doc: &Document<DocKey, DocValue>,
        t: TaskDoc,
    ) {
        let lease = self.leases.jobs[&task].lease;
        assert!(
            t.state == TaskState::Pending && t.epoch < lease.epoch,
            "only a claim that has not landed is voided"
        );
        let voided = TaskDoc {
            epoch: t.epoch + 1,
            ..t
        };
        let op = StoreRequest::PutIfVersion {
            key: doc.key,
            expected: doc.version,
            value: DocValue::Task(voided),
            index: voided.index_key(task),
        };
        self.out.cover(CoveragePoint::TaskClaimVoided);
        self.out.event(LeaseEvent::ClaimVoided {
            task,
            owner: lease.owner,
            epoch: voided.epoch,
        });
        self.out
            .store(op, Purpose::RequeueLeased { task }, self.deadline(now));
    }

    fn delete_lease(&mut self, now: Instant, task: TaskId) {
        let expected = self.leases.jobs[&task].dead_version;
        let op = StoreRequest::DeleteIfVersion {
            key: DocKey::TaskLease { task },
            expected,
        };
        self.out
            .store(op, Purpose::DeleteLease { task }, self.deadline(now));
    }

    /// Every step is re-derived from the store at the next scan.
    pub(super) fn on_lease_timeout(&mut self, purpose: Purpose) {
        match purpose {
            Purpose::ExpireLease { task } => {
                self.leases.marking.remove(&task);
            }
            Purpose::GetLeasedTask { task }
            | Purpose::RequeueLeased { task }
            | Purpose::DeleteLease { task } => {
                self.leases.jobs.remove(&task);
            }
            _ => unreachable!("not a task lease purpose"),
        }
    }

    pub(super) fn on_lease_reply(
        &mut self,
        now: Instant,
        purpose: Purpose,
        reply: &StoreReply<DocKey, DocValue>,
    ) {
        match purpose {
            Purpose::ExpireLease { task } => {
                let lease = self.leases.marking.remove(&task).expect("marked");
                // A conflict means it renewed or another reclaimer got there
                // first; the next scan sees which.
                if let StoreReply::Conflict { .. } = reply {
                    self.out.cover(CoveragePoint::LeaseExpiryLostRace);
                }
                if let StoreReply::Written { version } = reply
                    && !self.leases.jobs.contains_key(&task)
                {
                    self.out.event(LeaseEvent::TaskLeaseExpired {
                        task,
                        owner: lease.owner,
                        epoch: lease.epoch,
                    });
                    self.start_lease_job(now, task, lease, *version);
                }
            }
            Purpose::GetLeasedTask { task } => {
                let StoreReply::Got { doc } = reply else {
                    self.leases.jobs.remove(&task);
                    return;
                };
                let lease = self.leases.jobs[&task].lease;
                let current = doc.as_ref().and_then(|d| d.value.as_task().copied());
                match (doc, current) {
                    (Some(doc), Some(t))
                        if t.state == TaskState::Running
                            && t.owner == Some(lease.owner)
                            && t.epoch == lease.epoch =>
                    {
                        self.requeue_leased(now, task, doc)
                    }
                    // Not claimed under this lease yet, but a claim sent
                    // while the lease was alive may still be on its way (a
                    // paused sender holds it, the network delays it): move
                    // the task to a new version first, so that claim's
                    // condition can never hold, and only then let the lease
                    // go. Deleting the lease now would leave a claim that
                    // lands later running with no lease for anyone to find.
                    (Some(doc), Some(t))
                        if t.state == TaskState::Pending && t.epoch < lease.epoch =>
                    {
                        self.void_claim(now, task, doc, t)
                    }
                    // Done, or moved past this lease's epoch (re-queued,
                    // re-claimed, voided): no claim under this lease can land
                    // any more; nothing left but the lease itself.
                    _ => {
                        self.out.cover(CoveragePoint::DeadLeaseTaskMovedOn);
                        self.delete_lease(now, task)
                    }
                }
            }
            // A re-queue or a voided claim.
            Purpose::RequeueLeased { task } => match reply {
                StoreReply::Written { .. } => self.delete_lease(now, task),
                // The task moved meanwhile: the next scan re-reads it.
                _ => {
                    if let StoreReply::Conflict { .. } = reply {
                        self.out.cover(CoveragePoint::LeasedRequeueLostRace);
                    }
                    self.leases.jobs.remove(&task);
                }
            },
            Purpose::DeleteLease { task } => {
                self.leases.jobs.remove(&task);
                self.leases.observed.remove(&task);
            }
            _ => unreachable!("not a task lease purpose"),
        }
    }
}
