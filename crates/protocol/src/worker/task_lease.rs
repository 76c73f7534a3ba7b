//! Task heartbeat mode, worker side: one lease document per task, renewed
//! every heartbeat interval, instead of one heartbeat document per worker.
//!
//! The lease is created *before* the claim and the claim is sent only while
//! the lease is provably alive, so a task never runs without a lease that a
//! reclaimer can find. Self-fencing is per task: once a task's lease can no
//! longer be proven alive, the worker stops acting on that task (and only
//! that task). Everything else (claims, effects, progress writes) is the
//! worker-mode code path, unchanged.

use super::{Claimed, Phase, Purpose, Worker};
use crate::coverage::CoveragePoint;
use crate::docs::{DocKey, DocValue, MemberStatus, TaskDoc, TaskId, TaskLeaseDoc};
use crate::events::LeaseEvent;
use crate::variant::Variant;
use leasehold_interface::{Instant, StoreReply, StoreRequest, Version};

/// What a worker knows about one lease it holds.
#[derive(Clone, Copy, Debug)]
pub(super) struct TaskLease {
    epoch: u64,
    /// Version of the lease document after our last write that landed.
    version: Version,
    beats: u64,
    /// Local send time of the newest write known to have landed.
    renewed_at: Instant,
    renew_in_flight: bool,
    next_renew_at: Instant,
    /// The renewal in flight (`renew_in_flight`), for its reply: the beat
    /// it writes and its local send time. One at a time per lease, and a
    /// lease's epoch is its own (a later claim of the task is a later
    /// epoch), so the reply's `Purpose::LeaseRenew` (task and epoch) finds
    /// it here.
    renewal_beats: u64,
    renewal_sent_at: Instant,
}

/// A lease creation in flight, for its reply (see `Purpose::LeaseCreate`).
#[derive(Clone, Copy, Debug)]
pub(super) struct LeaseCreation {
    claimed: Claimed,
    task_version: Version,
    sent_at: Instant,
}

impl Worker {
    /// Task mode has no member document: the worker is active at once.
    pub(super) fn activate_without_member(&mut self, now: Instant) {
        debug_assert!(self.task_mode());
        self.set_phase(Phase::Active);
        self.next_poll_at = now;
        self.out.event(LeaseEvent::Registered { owner: self.me });
    }

    fn lease_doc(&self, epoch: u64, beats: u64) -> DocValue {
        DocValue::TaskLease(TaskLeaseDoc {
            owner: self.me,
            epoch,
            status: MemberStatus::Alive,
            beats,
            lease_timeout_ms: self.cfg.lease_timeout_ms,
            written_at_ms: self.wall_ms,
        })
    }

    fn task_lease_deadline(&self, lease: &TaskLease) -> Instant {
        lease.renewed_at.plus_ms(self.self_fence_after_ms)
    }

    /// Whether we may act on `task` at `epoch` now: its lease is ours, for
    /// that epoch, and was renewed recently enough.
    pub(super) fn task_lease_alive(&self, now: Instant, task: TaskId, epoch: u64) -> bool {
        self.leases.get(&task).is_some_and(|lease| {
            lease.epoch == epoch
                && (self.variant() == Variant::NoSelfFencing
                    || now < self.task_lease_deadline(lease))
        })
    }

    /// Step 1 of a task-mode claim: create the lease; the claim follows once
    /// the lease has landed (see `on_task_lease_reply`).
    pub(super) fn create_task_lease(
        &mut self,
        now: Instant,
        task: TaskId,
        claimed: TaskDoc,
        task_version: Version,
    ) {
        debug_assert!(!self.leases.contains_key(&task));
        let op = StoreRequest::CreateIfAbsent {
            key: DocKey::TaskLease { task },
            value: self.lease_doc(claimed.epoch, 0),
            index: None,
        };
        let compact = Claimed {
            epoch: claimed.epoch,
            steps_done: claimed.steps_done,
            steps_total: claimed.steps_total,
        };
        debug_assert_eq!(self.claimed_doc(compact), claimed);
        let purpose = Purpose::LeaseCreate { task };
        let creation = LeaseCreation {
            claimed: compact,
            task_version,
            sent_at: now,
        };
        let deadline = now.plus_us(self.store_timeout_us);
        assert!(
            self.lease_creates.insert(task, creation).is_none(),
            "two lease creations for one task"
        );
        self.out.store(op, purpose, deadline);
    }

    /// After a claim attempt settles: a lease whose claim did not start a run
    /// is released, so it neither blocks the task nor gets renewed forever.
    /// Inlined: in worker mode, one test (a call per claim reply otherwise).
    #[inline]
    pub(super) fn settle_claim_lease(&mut self, now: Instant, task: TaskId) {
        if self.task_mode() && !self.runs.contains_key(&task) {
            self.release_task_lease(now, task);
        }
    }

    /// Stop renewing and delete the lease (best effort: if the delete does not
    /// land, the reclaimer expires and deletes it later).
    /// The test for none inline: worker mode holds no leases, and a call to
    /// find that out was a frame per completed task.
    #[inline(always)]
    pub(super) fn release_task_lease(&mut self, now: Instant, task: TaskId) {
        if self.leases.len() == 0 {
            return;
        }
        self.release_held_task_lease(now, task);
    }

    #[inline(never)]
    fn release_held_task_lease(&mut self, now: Instant, task: TaskId) {
        let Some(lease) = self.leases.remove(&task) else {
            return;
        };
        if lease.renew_in_flight {
            // The version is about to change; the renewal's reply releases it.
            self.releasing.insert(task);
            return;
        }
        self.delete_task_lease(now, task, lease.version);
    }

    fn delete_task_lease(&mut self, now: Instant, task: TaskId, expected: Version) {
        let op = StoreRequest::DeleteIfVersion {
            key: DocKey::TaskLease { task },
            expected,
        };
        let deadline = now.plus_us(self.store_timeout_us);
        self.out.store(op, Purpose::LeaseRelease, deadline);
    }

    /// Per-task self-fencing: give up every task whose lease may have lapsed.
    pub(super) fn fence_expired_task_leases(&mut self, now: Instant) {
        if self.variant() == Variant::NoSelfFencing {
            return;
        }
        let expired: Vec<TaskId> = self
            .leases
            .iter()
            .filter(|(_, lease)| now >= self.task_lease_deadline(lease))
            .map(|(task, _)| *task)
            .collect();
        for task in expired {
            self.out.cover(CoveragePoint::TaskLeaseGivenUp);
            self.abandon(task);
        }
    }

    pub(super) fn renew_task_leases(&mut self, now: Instant) {
        let due: Vec<TaskId> = self
            .leases
            .iter()
            .filter(|(_, lease)| !lease.renew_in_flight && now >= lease.next_renew_at)
            .map(|(task, _)| *task)
            .collect();
        for task in due {
            let lease = self.leases.get_mut(&task).expect("listed");
            lease.renew_in_flight = true;
            let (epoch, beats, expected) = (lease.epoch, lease.beats + 1, lease.version);
            lease.renewal_beats = beats;
            lease.renewal_sent_at = now;
            let op = StoreRequest::PutIfVersion {
                key: DocKey::TaskLease { task },
                expected,
                value: self.lease_doc(epoch, beats),
                index: None,
            };
            let purpose = Purpose::LeaseRenew { task, epoch };
            let deadline = now.plus_us(self.store_timeout_us);
            self.out.store(op, purpose, deadline);
        }
    }

    /// The earliest renewal or fencing deadline among our leases.
    pub(super) fn task_lease_wakeup(&self) -> Option<Instant> {
        let fencing = self.variant() != Variant::NoSelfFencing;
        self.leases
            .values()
            .flat_map(|lease| {
                let renew = (!lease.renew_in_flight).then_some(lease.next_renew_at);
                let fence = fencing.then(|| self.task_lease_deadline(lease));
                renew.into_iter().chain(fence)
            })
            .min()
    }

    pub(super) fn on_task_lease_timeout(&mut self, now: Instant, purpose: Purpose) {
        match purpose {
            // Outcome unknown: do not claim. If the lease landed, nobody
            // renews it and the reclaimer expires and deletes it.
            Purpose::LeaseCreate { task } => {
                self.lease_creates.remove(&task);
                self.poll_later(now)
            }
            Purpose::LeaseRenew { task, epoch } => {
                // A released lease whose last renewal is lost stays behind;
                // the reclaimer expires it and finds nothing left to do.
                self.releasing.remove(&task);
                if let Some(lease) = self.leases.get_mut(&task)
                    && lease.epoch == epoch
                {
                    // Retry at once; if the lost write landed, the retry's
                    // conflict shows our own beat and we adopt it.
                    lease.renew_in_flight = false;
                    lease.next_renew_at = now;
                }
            }
            Purpose::LeaseRelease => {}
            _ => unreachable!("not a task lease purpose"),
        }
    }

    pub(super) fn on_task_lease_reply(
        &mut self,
        now: Instant,
        purpose: Purpose,
        reply: &StoreReply<DocKey, DocValue>,
    ) {
        match purpose {
            Purpose::LeaseCreate { task } => {
                let LeaseCreation {
                    claimed,
                    task_version,
                    sent_at,
                } = self
                    .lease_creates
                    .remove(&task)
                    .expect("lease creations in flight are tracked");
                match reply {
                    StoreReply::Written { version } => {
                        let lease = TaskLease {
                            epoch: claimed.epoch,
                            version: *version,
                            beats: 0,
                            renewed_at: sent_at,
                            renew_in_flight: false,
                            next_renew_at: sent_at.plus_ms(self.cfg.heartbeat_interval_ms),
                            renewal_beats: 0,
                            renewal_sent_at: Instant::ZERO,
                        };
                        self.leases.insert(task, lease);
                        if self.task_lease_alive(now, task, claimed.epoch) {
                            let claimed = self.claimed_doc(claimed);
                            self.send_claim(now, task, claimed, task_version);
                        } else {
                            // Too late to claim safely; the reclaimer cleans up.
                            self.out.cover(CoveragePoint::LeaseLandedTooLate);
                            self.leases.remove(&task);
                            self.poll_later(now);
                        }
                    }
                    // Someone else holds (or held) a lease on this task: treat it
                    // like a lost claim race.
                    StoreReply::Conflict { .. } => self.lost_claim_race(now),
                    _ => self.poll_later(now),
                }
            }
            Purpose::LeaseRenew { task, epoch } => {
                let Some(lease) = self.leases.get_mut(&task).filter(|l| l.epoch == epoch) else {
                    // Released or given up while this renewal was in flight.
                    // Only a released lease may be deleted: a lease given up
                    // (self-fenced) may still cover a task running under us
                    // in the store, and deleting it would hide that task
                    // from every reclaimer for good.
                    let released = self.releasing.remove(&task);
                    self.out.cover(if released {
                        CoveragePoint::RenewalReplyAfterRelease
                    } else {
                        CoveragePoint::RenewalReplyAfterGiveUp
                    });
                    if released
                        && let StoreReply::Written { version } = reply
                        && !self.leases.contains_key(&task)
                        && !self.runs.contains_key(&task)
                    {
                        self.delete_task_lease(now, task, *version);
                    }
                    return;
                };
                assert!(lease.renew_in_flight, "a renewal's reply, one in flight");
                lease.renew_in_flight = false;
                let (beats, sent_at) = (lease.renewal_beats, lease.renewal_sent_at);
                match reply {
                    StoreReply::Written { version } => {
                        lease.version = *version;
                        lease.beats = beats;
                        if sent_at > lease.renewed_at {
                            lease.renewed_at = sent_at;
                        }
                        lease.next_renew_at = sent_at.plus_ms(self.cfg.heartbeat_interval_ms);
                    }
                    StoreReply::Conflict { current } => {
                        let me = self.me;
                        match current
                            .as_ref()
                            .and_then(|d| d.value.as_task_lease().map(|l| (d.version, *l)))
                        {
                            Some((version, l))
                                if l.owner == me
                                    && l.epoch == epoch
                                    && l.status == MemberStatus::Alive =>
                            {
                                // An earlier, timed-out renewal of ours landed.
                                // Its send time is unknown: adopt the version,
                                // do not extend the lease, renew again now.
                                self.out.cover(CoveragePoint::LeaseRenewalAdoptedOwnBeat);
                                lease.version = version;
                                lease.beats = l.beats;
                                lease.next_renew_at = now;
                            }
                            // Expired by a reclaimer, or gone: not ours any more.
                            _ => self.abandon(task),
                        }
                    }
                    _ => lease.next_renew_at = now.plus_ms(self.cfg.retry_backoff_ms),
                }
            }
            Purpose::LeaseRelease => {}
            _ => unreachable!("not a task lease purpose"),
        }
    }
}
