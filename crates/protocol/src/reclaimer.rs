//! The reclaimer: notices workers that went quiet and re-queues their tasks.
//!
//! A worker is dead when its heartbeat document's *version* has not changed for
//! the lease timeout recorded in that document, measured on the reclaimer's own
//! clock from the moment the reclaimer first saw that version. No timestamp
//! written by another node is ever compared with the local clock.
//!
//! Reclaiming is three kinds of conditional write, each safe to repeat and to
//! race with other reclaimers: mark the heartbeat document dead (which also
//! fences the worker: its next renewal fails), re-queue each task still owned
//! by that incarnation (re-checking owner and epoch, bumping the epoch), then
//! delete the dead document once it owns nothing. A reclaimer that crashes
//! between any two of these leaves a `Dead` document behind, which every later
//! scan picks up again.
//!
//! In task heartbeat mode the same scan walks task lease documents instead of
//! heartbeat documents; see `task_lease`.

mod task_lease;

use crate::config::{HeartbeatMode, ProtocolConfig};
use crate::coverage::CoveragePoint;
use crate::docs::{DocKey, DocValue, MemberDoc, MemberStatus, Owner, TaskDoc, TaskId, TaskState};
use crate::events::LeaseEvent;
use crate::outbox::Outbox;
use crate::variant::Variant;
use crate::{LeaseInput, LeaseOutput};
use leasehold_interface::{Document, Input, Instant, LocalTime, StoreReply, StoreRequest, Version};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Listing rounds per dead worker per scan before waiting for the next scan
/// (each round re-queues one page of tasks).
const MAX_LIST_ROUNDS: u32 = 64;

#[derive(Clone, Copy, Debug)]
enum Purpose {
    /// `first`: the scan's first page (a continuation from it is a
    /// coverage point, counted once per scan).
    ScanMembers {
        first: bool,
    },
    MarkDead {
        owner: Owner,
    },
    ListOwned {
        owner: Owner,
    },
    Requeue {
        owner: Owner,
    },
    DeleteMember {
        owner: Owner,
    },
    /// A page of the whole ownership index, looking for orphans.
    SweepOwned {
        first: bool,
    },
    /// Is the owner of a task listed in the ownership index still registered?
    CheckOwner {
        owner: Owner,
        task: TaskId,
        version: Version,
        doc: TaskDoc,
    },
    RequeueOrphan,
    // Task heartbeat mode only (see `task_lease`).
    ExpireLease {
        task: TaskId,
    },
    GetLeasedTask {
        task: TaskId,
    },
    RequeueLeased {
        task: TaskId,
    },
    DeleteLease {
        task: TaskId,
    },
}

/// The version of a document last seen, and since when: how long it has
/// stood still, on this reclaimer's own clock. Both modes detect death by it.
#[derive(Clone, Copy, Debug)]
struct Observation {
    version: Version,
    /// Local time at which this reclaimer first saw `version`.
    since: Instant,
}

impl Observation {
    fn new(version: Version, now: Instant) -> Observation {
        Observation {
            version,
            since: now,
        }
    }

    /// Seeing `version` at `now`: how long the document has stood still, or
    /// `None` if it moved since last seen (the count restarts from `now`).
    fn stood_still_us(&mut self, version: Version, now: Instant) -> Option<u64> {
        if self.version != version {
            *self = Observation::new(version, now);
            return None;
        }
        Some(now.saturating_us_since(self.since))
    }
}

/// An `Observation` of a heartbeat document, and the scan that last saw
/// it: a finished scan forgets owners it did not see.
#[derive(Clone, Copy, Debug)]
struct MemberObservation {
    seen: Observation,
    scan: u64,
}

#[derive(Clone, Copy, Debug)]
struct Job {
    dead_version: Version,
    requeues_in_flight: u32,
    rounds: u32,
}

pub struct Reclaimer {
    cfg: Arc<ProtocolConfig>,
    id: u32,
    incarnation: u32,
    next_scan_at: Option<Instant>,
    scan_started_at: Instant,
    scan_in_flight: bool,
    /// Counts scans started; an observation remembers the last that saw its
    /// document.
    scan: u64,
    /// Owners whose documents were Alive in the last complete scan, in
    /// order (rebuilt whole after each scan; searched by halves).
    alive: Vec<Owner>,
    /// Where in `alive` the sweep found an owner last (see `is_alive`).
    alive_last: usize,
    /// Heartbeat documents' observations, in owner order. A scan walks the
    /// documents in that order, so the next one it looks up is nearly
    /// always at `observed_next` (checked, and searched by halves when not).
    /// A new owner is inserted in place: a shift of the later entries, once
    /// per incarnation.
    observed: Vec<(Owner, MemberObservation)>,
    /// Just past the observation the scan looked up last.
    observed_next: usize,
    marking: BTreeSet<Owner>,
    /// Owners this incarnation declared dead (only the planted bug
    /// `skip-dead-on-restart` looks at it).
    declared_by_me: BTreeSet<Owner>,
    jobs: BTreeMap<Owner, Job>,
    /// Task heartbeat mode: what this reclaimer knows about task leases.
    leases: task_lease::LeaseWatch,
    out: Outbox<Purpose>,
    wall_ms: u64,
}

impl Reclaimer {
    pub fn new(cfg: Arc<ProtocolConfig>, id: u32, incarnation: u32) -> Reclaimer {
        debug_assert!(cfg.validate().is_ok());
        Reclaimer {
            cfg,
            id,
            incarnation,
            next_scan_at: None,
            scan_started_at: Instant::ZERO,
            scan_in_flight: false,
            scan: 0,
            alive: Vec::new(),
            alive_last: 0,
            observed: Vec::new(),
            observed_next: 0,
            marking: BTreeSet::new(),
            declared_by_me: BTreeSet::new(),
            jobs: BTreeMap::new(),
            leases: task_lease::LeaseWatch::default(),
            out: Outbox::new(),
            wall_ms: 0,
        }
    }

    pub fn id(&self) -> (u32, u32) {
        (self.id, self.incarnation)
    }

    pub fn poll_output(&mut self) -> Option<LeaseOutput> {
        self.out.poll()
    }

    /// Every queued output, in order, appended to `out`.
    pub fn drain_outputs(&mut self, out: &mut Vec<LeaseOutput>) {
        self.out.drain_into(out);
    }

    /// `handle_input`, then `drain_outputs` into `out` (the host's empty
    /// vector: the outputs change hands without a copy).
    pub fn step(&mut self, time: LocalTime, input: &LeaseInput, out: &mut Vec<LeaseOutput>) {
        self.handle_input(time, input);
        self.out.drain_into(out);
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        let scan = if self.scan_in_flight {
            None
        } else {
            self.next_scan_at
        };
        match (scan, self.out.earliest_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Out of line, as the worker's: `step` stays a call and a drain.
    #[inline(never)]
    pub fn handle_input(&mut self, time: LocalTime, input: &LeaseInput) {
        self.wall_ms = time.wall_ms;
        let now = time.mono;
        match input {
            Input::Start => self.next_scan_at = Some(now),
            Input::Timeout => {}
            Input::StoreReply { request, reply } => {
                if let Some(purpose) = self.out.take(*request) {
                    self.on_reply(now, purpose, reply);
                }
            }
            Input::EffectReply { .. } => unreachable!("reclaimers call no effects"),
        }
        // Timeouts send only requests with later deadlines (store_timeout_ms
        // is positive), so this loop ends.
        while let Some(purpose) = self.out.expire_one(now) {
            self.on_timeout(now, purpose);
        }
        if !self.scan_in_flight && self.next_scan_at.is_some_and(|t| now >= t) {
            self.scan_started_at = now;
            self.scan += 1;
            self.observed_next = 0;
            self.leases.start_scan();
            self.scan_members(now, self.scan_range().0);
        }
    }

    fn deadline(&self, now: Instant) -> Instant {
        now.plus_ms(self.cfg.store_timeout_ms)
    }

    /// What a scan walks: heartbeat documents, or task lease documents.
    fn scan_range(&self) -> (DocKey, DocKey) {
        match self.cfg.heartbeat_mode {
            HeartbeatMode::Worker => DocKey::member_range(),
            HeartbeatMode::Task => DocKey::task_lease_range(),
        }
    }

    fn scan_members(&mut self, now: Instant, start: DocKey) {
        let first = start == self.scan_range().0;
        self.scan_in_flight = true;
        let op = StoreRequest::Scan {
            start,
            end: self.scan_range().1,
            limit: self.cfg.scan_page_size,
        };
        self.out
            .store(op, Purpose::ScanMembers { first }, self.deadline(now));
    }

    fn finish_scan(&mut self) {
        self.scan_in_flight = false;
        self.next_scan_at = if self.cfg.variant == Variant::ReclaimOnlyAtStartup {
            None
        } else {
            Some(self.scan_started_at.plus_ms(self.cfg.scan_interval_ms))
        };
    }

    fn on_timeout(&mut self, now: Instant, purpose: Purpose) {
        match purpose {
            // Every step is re-derived from the store at the next scan.
            Purpose::ScanMembers { .. } | Purpose::SweepOwned { .. } => self.finish_scan(),
            Purpose::CheckOwner { .. } | Purpose::RequeueOrphan => {}
            Purpose::MarkDead { owner } => {
                self.marking.remove(&owner);
            }
            Purpose::ListOwned { owner } | Purpose::DeleteMember { owner } => {
                self.jobs.remove(&owner);
            }
            Purpose::Requeue { owner } => self.requeue_settled(now, owner),
            Purpose::ExpireLease { .. }
            | Purpose::GetLeasedTask { .. }
            | Purpose::RequeueLeased { .. }
            | Purpose::DeleteLease { .. } => self.on_lease_timeout(purpose),
        }
    }

    fn on_reply(&mut self, now: Instant, purpose: Purpose, reply: &StoreReply<DocKey, DocValue>) {
        match purpose {
            Purpose::ScanMembers { first } => match reply {
                StoreReply::Scanned { docs, more } => {
                    // Planted bug `scan-first-page-only`: never page on.
                    let more = *more && self.cfg.variant != Variant::ScanFirstPageOnly;
                    let last = docs.last().map(|d| d.key);
                    for doc in docs {
                        self.consider_member(now, doc);
                        self.consider_task_lease(now, doc);
                    }
                    match (more, last) {
                        (true, Some(DocKey::Member { owner })) => {
                            if first {
                                self.out.cover(CoveragePoint::MemberScanNextPage);
                            }
                            self.scan_members(
                                now,
                                DocKey::Member {
                                    owner: successor(owner),
                                },
                            )
                        }
                        (true, Some(DocKey::TaskLease { task })) => {
                            if first {
                                self.out.cover(CoveragePoint::LeaseScanNextPage);
                            }
                            self.scan_members(
                                now,
                                DocKey::TaskLease {
                                    task: TaskId(task.0 + 1),
                                },
                            )
                        }
                        _ => {
                            // Forget workers whose documents are gone, so
                            // memory follows the live fleet.
                            let scan = self.scan;
                            self.observed.retain(|(_, o)| o.scan == scan);
                            self.alive.clear();
                            self.alive
                                .extend(self.observed.iter().map(|(owner, _)| *owner));
                            // `is_alive` searches it by halves.
                            debug_assert!(self.alive.is_sorted());
                            self.leases.finish_scan();
                            if self.cfg.heartbeat_mode == HeartbeatMode::Worker {
                                self.sweep_owned(now, DocKey::owned_range(Owner::MIN).0);
                            } else {
                                // Task mode: every running task has a lease
                                // document, and expired leases are the orphans.
                                self.finish_scan();
                            }
                        }
                    }
                }
                _ => self.finish_scan(),
            },
            Purpose::MarkDead { owner } => {
                self.marking.remove(&owner);
                if let StoreReply::Written { version } = reply {
                    self.out.event(LeaseEvent::DeclaredDead { owner });
                    self.declared_by_me.insert(owner);
                    // A scan may have seen the Dead document (and started
                    // the job) before this acknowledgement arrived.
                    if !self.jobs.contains_key(&owner) {
                        self.start_job(now, owner, *version);
                    }
                }
                // A conflict means it renewed or another reclaimer got there
                // first; the next scan sees which.
                if let StoreReply::Conflict { .. } = reply {
                    self.out.cover(CoveragePoint::MarkDeadLostRace);
                }
            }
            Purpose::ListOwned { owner } => match reply {
                StoreReply::Scanned { docs, more } => {
                    // Once per job: its first listing showed more.
                    if *more && self.jobs.get(&owner).is_some_and(|j| j.rounds == 1) {
                        self.out.cover(CoveragePoint::OwnedListingNextPage);
                    }
                    self.requeue_page(now, owner, docs)
                }
                _ => {
                    self.jobs.remove(&owner);
                }
            },
            // Written or refused, the next listing shows what is left.
            Purpose::Requeue { owner } => {
                if let StoreReply::Conflict { current: Some(doc) } = reply {
                    self.cover_requeue_conflict(owner, doc);
                }
                self.requeue_settled(now, owner)
            }
            Purpose::DeleteMember { owner } => {
                self.jobs.remove(&owner);
                if let StoreReply::Deleted = reply {
                    self.out.event(LeaseEvent::ReclaimFinished { owner });
                }
            }
            Purpose::SweepOwned { first } => match reply {
                StoreReply::Scanned { docs, more } => {
                    for doc in docs {
                        self.consider_owned(now, doc);
                    }
                    match (more, docs.last().map(|d| d.key)) {
                        (true, Some(DocKey::Task { task })) => {
                            let owner = docs
                                .last()
                                .and_then(|d| d.value.as_task())
                                .and_then(|t| t.owner)
                                .expect("the ownership index lists owned tasks");
                            let next = DocKey::OwnedIdx {
                                owner,
                                task: TaskId(task.0 + 1),
                            };
                            if first {
                                self.out.cover(CoveragePoint::OrphanSweepNextPage);
                            }
                            self.sweep_owned(now, next);
                        }
                        _ => self.finish_scan(),
                    }
                }
                _ => self.finish_scan(),
            },
            Purpose::CheckOwner {
                owner,
                task,
                version,
                doc,
            } => {
                // Registration happens before any claim, so a claim whose
                // owner has no document left belongs to a reclaimed (deleted)
                // incarnation: its claim landed late, after the reclaim.
                if let StoreReply::Got { doc: None } = reply {
                    self.out.cover(CoveragePoint::OrphanRequeued);
                    self.send_requeue(now, task, version, &doc, owner, Purpose::RequeueOrphan);
                }
            }
            Purpose::RequeueOrphan => {}
            Purpose::ExpireLease { .. }
            | Purpose::GetLeasedTask { .. }
            | Purpose::RequeueLeased { .. }
            | Purpose::DeleteLease { .. } => self.on_lease_reply(now, purpose, reply),
        }
    }

    /// Sweep the whole ownership index (which holds only running tasks, so it
    /// grows with the fleet's capacity, not with the workload) for tasks
    /// whose owner is no longer registered.
    fn sweep_owned(&mut self, now: Instant, start: DocKey) {
        let first = start == DocKey::owned_range(Owner::MIN).0;
        let op = StoreRequest::ScanIndex {
            start,
            end: DocKey::owned_range(Owner {
                worker: u32::MAX,
                incarnation: u32::MAX,
            })
            .1,
            limit: self.cfg.scan_page_size,
        };
        self.out
            .store(op, Purpose::SweepOwned { first }, self.deadline(now));
    }

    fn consider_owned(&mut self, now: Instant, doc: &Document<DocKey, DocValue>) {
        let (DocKey::Task { task }, Some(t)) = (doc.key, doc.value.as_task()) else {
            return;
        };
        let Some(owner) = t.owner else {
            return;
        };
        if t.state != TaskState::Running || self.is_alive(owner) || self.jobs.contains_key(&owner) {
            return;
        }
        let purpose = Purpose::CheckOwner {
            owner,
            task,
            version: doc.version,
            doc: *t,
        };
        self.out.store(
            StoreRequest::Get {
                key: DocKey::Member { owner },
            },
            purpose,
            self.deadline(now),
        );
    }

    /// Whether `owner` was alive in the last complete scan. The sweep lists
    /// tasks in owner order, several per owner, so the owner is nearly
    /// always the one found last or the next; those are tried before a
    /// search by halves.
    fn is_alive(&mut self, owner: Owner) -> bool {
        let last = self.alive_last;
        for i in [last, last + 1] {
            if self.alive.get(i) == Some(&owner) {
                // The shortcut answers as the search would have.
                debug_assert_eq!(self.alive.binary_search(&owner), Ok(i));
                self.alive_last = i;
                return true;
            }
        }
        match self.alive.binary_search(&owner) {
            Ok(i) => {
                self.alive_last = i;
                true
            }
            Err(_) => false,
        }
    }

    /// Put a running task back in the queue: the write re-checks that it is
    /// still exactly as read (`version`) and bumps its epoch. Emits
    /// `Requeued` (from `from`), then sends the write for `purpose`. Both
    /// modes' re-queues, and the orphan sweep's, go through here.
    fn send_requeue(
        &mut self,
        now: Instant,
        task: TaskId,
        version: Version,
        t: &TaskDoc,
        from: Owner,
        purpose: Purpose,
    ) {
        let epoch = if self.cfg.variant == Variant::ReclaimWithoutEpochBump {
            t.epoch // planted bug: the epoch stays
        } else {
            t.epoch + 1
        };
        let requeued = TaskDoc {
            state: TaskState::Pending,
            owner: None,
            epoch,
            ..*t
        };
        let index = requeued.index_key(task);
        let key = DocKey::Task { task };
        let op = if self.cfg.variant == Variant::ReclaimById {
            // Planted bug: by key alone, whatever the task became meanwhile.
            StoreRequest::PutUnconditional {
                key,
                value: DocValue::Task(requeued),
                index,
            }
        } else {
            StoreRequest::PutIfVersion {
                key,
                expected: version,
                value: DocValue::Task(requeued),
                index,
            }
        };
        self.out.event(LeaseEvent::Requeued { task, from, epoch });
        self.out.store(op, purpose, self.deadline(now));
    }

    fn consider_member(&mut self, now: Instant, doc: &Document<DocKey, DocValue>) {
        let (DocKey::Member { owner }, Some(member)) = (doc.key, doc.value.as_member()) else {
            return;
        };
        let scan = self.scan;
        match member.status {
            MemberStatus::Dead => {
                // Seen: its observation (if it was Alive before) is kept.
                if let Ok(i) = self.find_observed(owner) {
                    self.observed[i].1.scan = scan;
                }
                // Planted bug `skip-dead-on-restart`: only act on deaths this
                // incarnation declared itself.
                let skip = self.cfg.variant == Variant::SkipDeadOnRestart
                    && !self.declared_by_me.contains(&owner);
                if !skip && !self.jobs.contains_key(&owner) {
                    if self.incarnation > 1 && !self.declared_by_me.contains(&owner) {
                        self.out
                            .cover(CoveragePoint::ReclaimResumedByFreshIncarnation);
                    }
                    self.start_job(now, owner, doc.version);
                }
            }
            MemberStatus::Alive => {
                let i = self.find_observed(owner).unwrap_or_else(|i| {
                    let seen = Observation::new(doc.version, now);
                    self.observed
                        .insert(i, (owner, MemberObservation { seen, scan }));
                    // Kept in owner order: `find_observed` searches by halves.
                    debug_assert!(i == 0 || self.observed[i - 1].0 < owner);
                    debug_assert!(self.observed.get(i + 1).is_none_or(|(o, _)| owner < *o));
                    self.observed_next = i + 1;
                    i
                });
                let obs = &mut self.observed[i].1;
                obs.scan = scan;
                let Some(quiet_us) = obs.seen.stood_still_us(doc.version, now) else {
                    return;
                };
                let lease_timeout_ms = if self.cfg.variant == Variant::ReclaimerOwnTtl {
                    self.cfg.default_lease_timeout_ms // planted bug: ours, not theirs
                } else {
                    member.lease_timeout_ms
                };
                let expired = if self.cfg.variant == Variant::WallClockStaleness {
                    // Planted bug: another node's wall-clock stamp against ours.
                    self.wall_ms.saturating_sub(member.written_at_ms) >= lease_timeout_ms
                } else {
                    quiet_us >= lease_timeout_ms * 1_000
                };
                if expired && !self.marking.contains(&owner) {
                    self.mark_dead(now, owner, doc.version, *member);
                }
            }
        }
    }

    /// Where `owner`'s observation is in `observed` (`Err`: where it would
    /// go); the next lookup tries just past it first.
    fn find_observed(&mut self, owner: Owner) -> Result<usize, usize> {
        let next = self.observed_next;
        let search = |observed: &[(Owner, MemberObservation)]| {
            observed.binary_search_by_key(&owner, |(o, _)| *o)
        };
        let found = if self.observed.get(next).is_some_and(|(o, _)| *o == owner) {
            // The shortcut answers as the search would have.
            debug_assert_eq!(search(&self.observed), Ok(next));
            Ok(next)
        } else {
            search(&self.observed)
        };
        self.observed_next = match found {
            Ok(i) => i + 1,
            Err(i) => i,
        };
        found
    }

    fn mark_dead(&mut self, now: Instant, owner: Owner, version: Version, member: MemberDoc) {
        self.marking.insert(owner);
        let op = StoreRequest::PutIfVersion {
            key: DocKey::Member { owner },
            expected: version,
            value: DocValue::Member(MemberDoc {
                status: MemberStatus::Dead,
                ..member
            }),
            index: None,
        };
        self.out
            .store(op, Purpose::MarkDead { owner }, self.deadline(now));
    }

    fn start_job(&mut self, now: Instant, owner: Owner, dead_version: Version) {
        assert!(
            !self.jobs.contains_key(&owner),
            "two reclaim jobs for one owner"
        );
        self.jobs.insert(
            owner,
            Job {
                dead_version,
                requeues_in_flight: 0,
                rounds: 0,
            },
        );
        self.list_owned(now, owner);
    }

    fn list_owned(&mut self, now: Instant, owner: Owner) {
        let job = self.jobs.get_mut(&owner).expect("job exists");
        job.rounds += 1;
        if job.rounds > MAX_LIST_ROUNDS {
            // Give the store a rest; the next scan resumes from the Dead doc.
            self.jobs.remove(&owner);
            return;
        }
        let (start, end) = DocKey::owned_range(owner);
        let op = StoreRequest::ScanIndex {
            start,
            end,
            limit: self.cfg.scan_page_size,
        };
        self.out
            .store(op, Purpose::ListOwned { owner }, self.deadline(now));
    }

    fn requeue_page(&mut self, now: Instant, owner: Owner, docs: &[Document<DocKey, DocValue>]) {
        if docs.is_empty() {
            let expected = self.jobs[&owner].dead_version;
            let op = StoreRequest::DeleteIfVersion {
                key: DocKey::Member { owner },
                expected,
            };
            self.out
                .store(op, Purpose::DeleteMember { owner }, self.deadline(now));
            return;
        }
        let mut sent = 0;
        for doc in docs {
            let (DocKey::Task { task }, Some(t)) = (doc.key, doc.value.as_task()) else {
                continue;
            };
            if t.state != TaskState::Running || t.owner != Some(owner) {
                continue;
            }
            self.send_requeue(now, task, doc.version, t, owner, Purpose::Requeue { owner });
            sent += 1;
        }
        let job = self.jobs.get_mut(&owner).expect("job exists");
        job.requeues_in_flight = sent;
        if sent == 0 {
            // The index listed documents that moved on meanwhile; list again.
            self.list_owned(now, owner);
        }
    }

    /// A re-queue of `owner`'s task conflicted with `doc`: which race it
    /// lost, if one worth naming.
    #[cold]
    fn cover_requeue_conflict(&mut self, owner: Owner, doc: &Document<DocKey, DocValue>) {
        let Some(t) = doc.value.as_task() else {
            return;
        };
        if t.state == TaskState::Done {
            self.out.cover(CoveragePoint::RequeueLostToCompletion);
        } else if t.state == TaskState::Running && t.owner == Some(owner) {
            self.out.cover(CoveragePoint::RequeueLostToProgress);
        }
    }

    fn requeue_settled(&mut self, now: Instant, owner: Owner) {
        let Some(job) = self.jobs.get_mut(&owner) else {
            return;
        };
        assert!(
            job.requeues_in_flight > 0,
            "requeue reply without a requeue"
        );
        job.requeues_in_flight -= 1;
        if job.requeues_in_flight == 0 {
            // Re-list: conflicts (a task that moved) and further pages alike.
            self.list_owned(now, owner);
        }
    }
}

/// The smallest owner after `owner`: where the next scan page starts.
fn successor(owner: Owner) -> Owner {
    match owner.incarnation.checked_add(1) {
        Some(incarnation) => Owner {
            incarnation,
            ..owner
        },
        None => Owner {
            worker: owner.worker + 1,
            incarnation: 0,
        },
    }
}
