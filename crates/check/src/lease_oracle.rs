//! Lease oracles: each action judged at the moment it is taken, against what
//! the run proves at that moment.
//!
//! The end-result checks in `lease_checker.rs` fire only when a bug's damage
//! happens to show (a reclaim raced a late worker, and a service accepted the
//! late call). These judge the lease itself, from the store's history of
//! lease documents (`Member` in worker heartbeat mode, `TaskLease` in task
//! mode), the time each request was decided, and the scenario's stated
//! bounds:
//!
//! - `acts-within-lease`: a worker decides an owner's action (a task write
//!   the store accepted, an effect call) only while no correct reclaimer can
//!   yet have declared its lease dead, with room for the action's message to
//!   arrive: `decided + max_network_delay < last_landed + expiry`, where
//!   `last_landed` is when the holder's newest renewal that had landed by
//!   then landed, and `expiry = lease_timeout / (1 + max_drift)` is the
//!   least true time a reclaimer's clock can count as the lease timeout.
//! - `no-needless-suspicion`: a reclaimer declares a lease dead (marks it
//!   dead, or deletes it while alive) or re-queues a running task only once
//!   the holder's lease has provably expired (`decided >= last_landed +
//!   expiry`); a worker that no fault touched for a whole renewal window
//!   never fences itself; and, faults or not, a worker whose lease was not
//!   declared dead never gives itself up (fences, stops, quits to register
//!   anew) before the earliest self-fencing deadline its configuration
//!   allows, counted from its boot (`LeaseBounds::earliest_fence_us`).
//! - `no-resurrection`: a lease document declared dead or deleted is never
//!   written alive again by its holder in a request decided after the loss.
//! - `detection-bounded`: in the heal phase, a lease document that stopped
//!   being renewed is declared dead (or deleted) within a bound derived from
//!   the configuration; and, whenever no fault touches the reclaimer that
//!   declared it, the holder or the store, every task still running under a
//!   lease declared dead is re-queued within a few round trips of the
//!   declaration (`LeaseBounds::requeue_us`), not left to a later scan.
//!
//! Every rule is a fact about the run, never about what a node believes.

use crate::invariant::Invariant;
use crate::lease_checker::{NodeRole, Verdicts};
use leasehold_interface::{Document, StoreReply, StoreRequest};
use leasehold_protocol::{
    CLAIM_LOOK_AROUND_POLLS, DocKey, DocValue, HeartbeatMode, MemberStatus, Owner, TaskDoc, TaskId,
    TaskState,
};
use leasehold_sim::{Fault, MessageAction, NodeId};
use serde::Serialize;
use std::collections::BTreeMap;

const PPM: u128 = 1_000_000;

/// The scenario's stated bounds the oracles judge against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LeaseBounds {
    pub heartbeat_mode: HeartbeatMode,
    /// The worst clock rate error any node may have.
    pub max_clock_drift_ppm: u64,
    /// The worst one-way delay of a message no fault touched.
    pub max_network_delay_ms: u64,
    /// The longest a store reply no recorded fault touched takes to come
    /// back once the store applied the request, and the longest a whole
    /// request takes, from the node's sending it to its reply. A simulated
    /// run: one and two network delays. A live run cannot time the legs
    /// apart: both are the host's tolerance, past which it records the
    /// reply as delayed (docs/stores.md).
    pub max_reply_us: u64,
    pub max_trip_us: u64,
    pub heartbeat_interval_ms: u64,
    pub store_timeout_ms: u64,
    pub retry_backoff_ms: u64,
    pub scan_interval_ms: u64,
    pub scan_page_size: u32,
    /// The longest a crashed node stays down.
    pub restart_delay_ms_max: u64,
    /// The latest a reply sent in the fault phase can still arrive after it.
    pub late_reply_ms: u64,
    pub slack_ms: u64,
    /// A worker with room polls this often after finding work.
    pub poll_interval_ms: u64,
    /// The longest an idle worker waits between polls.
    pub idle_poll_max_ms: u64,
    pub slots_per_worker: u32,
}

impl LeaseBounds {
    /// The least true time in which a clock running at most
    /// `max_clock_drift_ppm` fast can count `local_us`, rounded down, less a
    /// microsecond for the clocks' own rounding.
    fn least_true_us(&self, local_us: u64) -> u64 {
        let scaled = u128::from(local_us) * PPM / (PPM + u128::from(self.max_clock_drift_ppm));
        (scaled as u64).saturating_sub(1)
    }

    /// The most true time a clock running at most `max_clock_drift_ppm`
    /// slow can take to count `local_us`, rounded up, plus a microsecond.
    fn most_true_us(&self, local_us: u64) -> u64 {
        let d = u128::from(self.max_clock_drift_ppm);
        assert!(d < PPM, "a drift bound of 100 % or more");
        let scaled = (u128::from(local_us) * PPM).div_ceil(PPM - d);
        u64::try_from(scaled).unwrap_or(u64::MAX).saturating_add(1)
    }

    /// How long after its last disturbance a healthy worker may still fence
    /// itself: a renewal due, timed out once, retried after the back-off,
    /// and its round trip, each counted on a slow clock.
    pub fn renew_window_us(&self) -> u64 {
        let local_ms = self.heartbeat_interval_ms
            + 2 * self.store_timeout_ms
            + self.retry_backoff_ms
            + 2 * self.max_network_delay_ms;
        self.most_true_us(local_ms * 1_000)
    }

    /// How long after a lease stopped being renewed (or the heal phase
    /// began, if later) a correct reclaimer has declared it dead, with
    /// `docs` lease documents in the store: a restart of the reclaimer, a
    /// reply late from the fault phase, a scan to first see the last
    /// version, the lease timeout on a slow clock, a scan to act, every
    /// page of both scans, and the mark's own trip.
    /// The least true time from a worker incarnation's boot before which
    /// it cannot give itself up unless its lease was declared dead: the
    /// configuration rules make every self-fencing deadline exceed a
    /// heartbeat interval, a store timeout and a round trip, no deadline can
    /// be dated before the boot (a lease is dated from an attempt to write
    /// it), and a clock running `max_clock_drift_ppm` fast counts that
    /// span no sooner than this.
    pub fn earliest_fence_us(&self) -> u64 {
        let local_ms =
            self.heartbeat_interval_ms + self.store_timeout_ms + 2 * self.max_network_delay_ms;
        self.least_true_us(local_ms * 1_000)
    }

    /// How long after a lease is declared dead (its mark landed) the
    /// reclaimer that declared it has re-queued every task still running
    /// under it, when no fault touches that reclaimer, the holder or the
    /// store: the mark's reply, then per round a read of what the lease held
    /// (a listing of the owner's tasks in worker mode, the leased task in
    /// task mode) and the re-queue writes, a round trip each. No timer and
    /// no clock is involved: each step follows the reply before it.
    /// `rounds` is 1 in task mode; in worker mode, one per page of the
    /// owner's tasks, plus one listing after a re-queue that lost a race.
    pub fn requeue_us(&self, rounds: u64) -> u64 {
        self.max_reply_us + rounds * 2 * self.max_trip_us
    }

    /// How long a task may stay pending while a worker no fault touches
    /// shows room in the store and decides no claim (`work-conserving`,
    /// docs/protocol.md): the lag of the store's view behind the worker's
    /// (a reply to its last claim decision, or to a release, and in task
    /// mode one more round trip: the lease's delete after a completion, or
    /// the claim after its lease's create), then up to `2 x LOOK_EVERY + 1`
    /// polls, each an idle wait on a slow clock and the poll's round trip:
    /// claim spreading claims a task left pending since the previous look
    /// around at the next (every `LOOK_EVERY`-th poll), and the poll in
    /// flight when the wait began may have read the index before the task
    /// was there.
    pub fn pickup_us(&self) -> u64 {
        let trip_us = self.max_trip_us;
        let lag_us = match self.heartbeat_mode {
            HeartbeatMode::Worker => trip_us,
            HeartbeatMode::Task => 2 * trip_us,
        };
        let wait_ms = self.idle_poll_max_ms.max(self.poll_interval_ms);
        let poll_us = self.most_true_us(wait_ms * 1_000) + trip_us;
        let polls = 2 * u64::from(CLAIM_LOOK_AROUND_POLLS) + 1;
        lag_us + polls * poll_us
    }

    pub fn detect_us(&self, lease_timeout_ms: u64, docs: u64) -> u64 {
        let pages = docs.div_ceil(u64::from(self.scan_page_size.max(1))) + 1;
        let scan_us = self.most_true_us(self.scan_interval_ms * 1_000)
            + pages * (2 * self.max_network_delay_ms + self.store_timeout_ms) * 1_000;
        (self.restart_delay_ms_max + self.late_reply_ms + 2 * self.store_timeout_ms + self.slack_ms)
            * 1_000
            + self.most_true_us(lease_timeout_ms * 1_000)
            + 2 * scan_us
            + self.max_network_delay_ms * 1_000
    }
}

/// What the run proves about one lease: a worker incarnation's heartbeat
/// document, or one claim's lease document on one task.
#[derive(Clone, Copy, Debug)]
struct LeaseTrack {
    holder: Owner,
    /// The epoch the lease is for (task mode); 0 for a heartbeat document.
    epoch: u64,
    lease_timeout_ms: u64,
    /// When the holder's newest alive write landed.
    last_landed_us: u64,
    /// The holder's newest alive writes as (landed, decided), newest first
    /// ((0, 0): none): an action is judged against the newest renewal that
    /// had landed when it was decided (one in flight may have passed it
    /// since), dated from when it was decided: all the holder can prove is
    /// that its renewal landed after it sent it.
    renewals_us: [(u64, u64); 4],
    /// When its first write landed: where a healthy holder's lease began.
    first_landed_us: u64,
    /// When a reclaimer's mark or any delete ended it.
    lost_at_us: Option<u64>,
    /// The reclaimer whose mark ended it: it owes the re-queue of every
    /// task still running under it (`LeaseBounds::requeue_us`).
    declared_by: Option<NodeId>,
    /// Whether the document is in the store now.
    exists: bool,
    /// Judged late once already: reported once per lease.
    reported_late: bool,
}

impl LeaseTrack {
    /// The earliest true time any correct reclaimer can declare it dead.
    fn expires_us(&self, bounds: &LeaseBounds) -> u64 {
        self.expires_after_us(bounds, self.last_landed_us)
    }

    fn expires_after_us(&self, bounds: &LeaseBounds, landed_us: u64) -> u64 {
        landed_us.saturating_add(bounds.least_true_us(self.lease_timeout_ms * 1_000))
    }

    /// When the newest renewal that had landed by `decided_us` was sent;
    /// if every renewal kept landed later, the oldest kept's (which can
    /// only be lenient: the true one was sent earlier still).
    fn renewed_by_us(&self, decided_us: u64) -> u64 {
        let kept = || self.renewals_us.into_iter().filter(|r| *r != (0, 0));
        kept()
            .find(|(landed, _)| *landed <= decided_us)
            .or_else(|| kept().next_back())
            .map_or(0, |(_, sent)| sent)
    }

    fn landed(&mut self, landed_us: u64, sent_us: u64) {
        self.renewals_us.rotate_right(1);
        self.renewals_us[0] = (landed_us, sent_us);
        self.last_landed_us = landed_us;
    }

    fn alive_in_store(&self) -> bool {
        self.exists && self.lost_at_us.is_none()
    }
}

/// Who the record says acted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Actor {
    External,
    Worker(Owner),
    Reclaimer(u32),
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Actor::External => f.write_str("the workload"),
            Actor::Worker(o) => write!(f, "{o}"),
            Actor::Reclaimer(id) => write!(f, "reclaimer-{id}"),
        }
    }
}

fn fmt_s(us: u64) -> String {
    format!("{:.3} s", us as f64 / 1e6)
}

pub(crate) struct LeaseOracle {
    bounds: LeaseBounds,
    /// Worker mode: every incarnation's heartbeat document.
    members: BTreeMap<Owner, LeaseTrack>,
    /// Task mode: every lease per task, newest last (a handful per task).
    task_leases: BTreeMap<TaskId, Vec<LeaseTrack>>,
    /// Lease documents in the store now.
    docs_in_store: u64,
    /// Per node: when the last fault that touched it (its steps, its
    /// messages, its links) stops mattering.
    disturbed_until_us: Vec<u64>,
    /// The same for faults of the store itself (outages), which touch all.
    store_disturbed_until_us: u64,
    /// Per node: `disturbed_until_us`, and crashes, restarts and clock
    /// jumps too (which end a reclaimer's jobs or time its requests out,
    /// but do not make a worker fence itself needlessly).
    touched_until_us: Vec<u64>,
    /// Who each node is, to find a lease holder's node.
    roles: Vec<NodeRole>,
    /// Per node: its newest incarnation recorded booting (a restart), and
    /// when. The first incarnation's boot is not recorded: 0 stands for it.
    booted_us: Vec<(u32, u64)>,
    /// Rounds of re-queues a dead worker-mode lease takes
    /// (`LeaseBounds::requeue_us`): the pages its owner's running tasks
    /// fill, plus one.
    owned_rounds: u64,
    heal_at_us: Option<u64>,
}

impl LeaseOracle {
    /// `max_owned_tasks`: the most tasks one worker can hold running (the
    /// fleet's slots, or every task if fewer).
    pub fn new(bounds: LeaseBounds, roles: &[NodeRole], max_owned_tasks: u64) -> LeaseOracle {
        let nodes = roles.len();
        let owned_rounds = max_owned_tasks.div_ceil(u64::from(bounds.scan_page_size.max(1))) + 1;
        LeaseOracle {
            bounds,
            members: BTreeMap::new(),
            task_leases: BTreeMap::new(),
            docs_in_store: 0,
            disturbed_until_us: vec![0; nodes],
            store_disturbed_until_us: 0,
            touched_until_us: vec![0; nodes],
            roles: roles.to_vec(),
            booted_us: vec![(1, 0); nodes],
            owned_rounds,
            heal_at_us: None,
        }
    }

    fn worker_node(&self, worker: u32) -> Option<NodeId> {
        let i = self
            .roles
            .iter()
            .position(|r| *r == NodeRole::Worker { worker })?;
        Some(NodeId(u32::try_from(i).ok()?))
    }

    fn reclaimer_node(&self, id: u32) -> Option<NodeId> {
        let i = self
            .roles
            .iter()
            .position(|r| *r == NodeRole::Reclaimer { id })?;
        Some(NodeId(u32::try_from(i).ok()?))
    }

    /// The bound on re-queueing a task still running under `lease`, and
    /// from when, if it is owed: the lease was declared dead by a
    /// reclaimer, and no fault touched that reclaimer, the holder or the
    /// store from the declaration on (a fault before it that still mattered
    /// counts). Judged lazily, at the re-queue or at the end, so a fault
    /// after the bound ran out also excuses: lenient, never a false alarm.
    fn requeue_owed(&self, lease: &LeaseTrack) -> Option<(u64, u64)> {
        let declared_us = lease.lost_at_us?;
        let by = lease.declared_by?;
        let holder = self.worker_node(lease.holder.worker);
        let touched = |node: Option<NodeId>| {
            node.is_none_or(|n| {
                self.touched_until_us
                    .get(n.index())
                    .is_none_or(|t| *t >= declared_us)
            })
        };
        if touched(Some(by)) || touched(holder) || self.store_disturbed_until_us >= declared_us {
            return None;
        }
        let rounds = match self.bounds.heartbeat_mode {
            HeartbeatMode::Worker => self.owned_rounds,
            HeartbeatMode::Task => 1,
        };
        Some((declared_us, self.bounds.requeue_us(rounds)))
    }

    fn lease_mut(
        &mut self,
        holder: Owner,
        task: Option<TaskId>,
        epoch: u64,
    ) -> Option<&mut LeaseTrack> {
        match (self.bounds.heartbeat_mode, task) {
            (HeartbeatMode::Worker, _) => self.members.get_mut(&holder),
            (HeartbeatMode::Task, Some(task)) => self
                .task_leases
                .get_mut(&task)?
                .iter_mut()
                .rev()
                .find(|l| l.holder == holder && l.epoch == epoch),
            (HeartbeatMode::Task, None) => None,
        }
    }

    /// A lease document write or delete the store accepted.
    #[allow(clippy::too_many_arguments)]
    pub fn lease_doc(
        &mut self,
        verdicts: &mut Verdicts,
        time_us: u64,
        decided_us: u64,
        actor: Actor,
        op: &StoreRequest<DocKey, DocValue>,
        reply: &StoreReply<DocKey, DocValue>,
        before: Option<&Document<DocKey, DocValue>>,
    ) {
        let (key, value) = match (op, reply) {
            (
                StoreRequest::CreateIfAbsent { key, value, .. }
                | StoreRequest::PutIfVersion { key, value, .. }
                | StoreRequest::PutUnconditional { key, value, .. },
                StoreReply::Written { .. },
            ) => (*key, Some(value)),
            (StoreRequest::DeleteIfVersion { key, .. }, StoreReply::Deleted) => (*key, None),
            _ => return,
        };
        // (holder, epoch, task, lease timeout, alive) of the written document.
        let written = match (key, value) {
            (DocKey::Member { owner }, Some(DocValue::Member(m))) => Some((
                owner,
                0,
                None,
                m.lease_timeout_ms,
                m.status == MemberStatus::Alive,
            )),
            (DocKey::TaskLease { task }, Some(DocValue::TaskLease(l))) => Some((
                l.owner,
                l.epoch,
                Some(task),
                l.lease_timeout_ms,
                l.status == MemberStatus::Alive,
            )),
            (DocKey::Member { .. } | DocKey::TaskLease { .. }, None) => None,
            _ => return,
        };
        // The lease a delete removes is the one the document held.
        let (holder, epoch, task, timeout_ms, alive) = match written {
            Some(w) => w,
            None => match (key, before.map(|d| &d.value)) {
                (DocKey::Member { owner }, Some(DocValue::Member(m))) => {
                    (owner, 0, None, m.lease_timeout_ms, false)
                }
                (DocKey::TaskLease { task }, Some(DocValue::TaskLease(l))) => {
                    (l.owner, l.epoch, Some(task), l.lease_timeout_ms, false)
                }
                _ => return,
            },
        };
        let was_in_store = before.is_some();
        let deleting = value.is_none();
        let bounds = self.bounds.clone();
        if self.lease_mut(holder, task, epoch).is_none() {
            let track = LeaseTrack {
                holder,
                epoch,
                lease_timeout_ms: timeout_ms,
                last_landed_us: time_us,
                renewals_us: [(0, 0); 4],
                first_landed_us: time_us,
                lost_at_us: None,
                declared_by: None,
                exists: false,
                reported_late: false,
            };
            match task {
                None => {
                    self.members.insert(holder, track);
                }
                Some(task) => {
                    let leases = self.task_leases.entry(task).or_default();
                    assert!(leases.len() < 1 << 16, "unbounded leases on one task");
                    leases.push(track);
                }
            }
        }
        let heal_at_us = self.heal_at_us;
        let docs_in_store = self.docs_in_store;
        let declared_by = match actor {
            Actor::Reclaimer(id) => self.reclaimer_node(id),
            _ => None,
        };
        let track = self.lease_mut(holder, task, epoch).expect("tracked above");
        let what = LeaseName(holder, task, epoch);
        // In task mode a create is a new claim attempt: the worker dates
        // the lease from that create and claims under it from scratch, so
        // only a renewal can carry a lost lease on. A heartbeat document is
        // its incarnation's one lease: any alive write after its loss does.
        let carries_on = task.is_none() || !matches!(op, StoreRequest::CreateIfAbsent { .. });
        match actor {
            Actor::Worker(o) if o == holder && alive => {
                if let Some(lost_us) = track.lost_at_us
                    && decided_us > lost_us
                    && carries_on
                {
                    verdicts.report_with(Invariant::NoResurrection, time_us, task, move || {
                        format!(
                            "{what} was declared dead or deleted at {}, and {o} wrote it alive again in a request decided at {}",
                            fmt_s(lost_us),
                            fmt_s(decided_us)
                        )
                    });
                }
                if !carries_on {
                    // A task-mode create that landed begins a new lease.
                    track.lost_at_us = None;
                    track.renewals_us = [(0, 0); 4];
                    track.first_landed_us = time_us;
                    track.reported_late = false;
                }
                track.landed(time_us, decided_us);
                track.lease_timeout_ms = timeout_ms;
                // Otherwise a lost lease stays lost: a late write that brings
                // the document back does not bring the lease back.
            }
            Actor::Reclaimer(_) if track.alive_in_store() && (!alive || deleting) => {
                let expires_us = track.expires_us(&bounds);
                if decided_us < expires_us {
                    let last_us = track.last_landed_us;
                    verdicts.report_with(Invariant::NoNeedlessSuspicion, time_us, task, move || {
                        format!(
                            "{actor} decided at {} that {what} was dead, but its last renewal landed at {} and no correct reclaimer can count its lease out before {}",
                            fmt_s(decided_us),
                            fmt_s(last_us),
                            fmt_s(expires_us)
                        )
                    });
                }
            }
            _ => {}
        }
        if (!alive || deleting) && track.lost_at_us.is_none() {
            track.lost_at_us = Some(time_us);
            track.declared_by = declared_by;
            // Declared in the heal phase: judged against its bound.
            if let Some(heal_us) = heal_at_us
                && !track.reported_late
            {
                let since_us = track.last_landed_us.max(heal_us);
                let bound_us = bounds.detect_us(track.lease_timeout_ms, docs_in_store);
                if time_us > since_us + bound_us {
                    track.reported_late = true;
                    verdicts.report_with(Invariant::DetectionBounded, time_us, task, move || {
                        format!(
                            "{what} stopped being renewed by {} and was declared dead only at {} (bound {})",
                            fmt_s(since_us),
                            fmt_s(time_us),
                            fmt_s(bound_us)
                        )
                    });
                }
            }
        }
        track.exists = !deleting;
        match (was_in_store, deleting) {
            (false, false) => self.docs_in_store += 1,
            (true, true) => self.docs_in_store -= 1,
            _ => {}
        }
    }

    /// A worker's action on `task` at `epoch`, decided at `decided_us`: an
    /// effect call, or a task write the store accepted.
    #[allow(clippy::too_many_arguments)]
    pub fn worker_act(
        &mut self,
        verdicts: &mut Verdicts,
        time_us: u64,
        decided_us: u64,
        owner: Owner,
        task: TaskId,
        epoch: u64,
        action: &'static str,
    ) {
        let bounds = &self.bounds;
        let delay_us = bounds.max_network_delay_ms * 1_000;
        let (lease, what) = match bounds.heartbeat_mode {
            HeartbeatMode::Worker => (self.members.get(&owner), LeaseName(owner, None, 0)),
            HeartbeatMode::Task => (
                self.task_leases.get(&task).and_then(|ls| {
                    ls.iter()
                        .rev()
                        .find(|l| l.holder == owner && l.epoch == epoch)
                }),
                LeaseName(owner, Some(task), epoch),
            ),
        };
        let Some(lease) = lease else {
            verdicts.report_with(Invariant::ActsWithinLease, time_us, Some(task), move || {
                format!(
                    "{owner} decided to {action} for task {} at epoch {epoch} at {}, holding no lease: {what} never landed",
                    task.0,
                    fmt_s(decided_us)
                )
            });
            return;
        };
        // The newest renewal that had landed by the decision: a later one
        // cannot be what the worker knew.
        let landed_us = lease.renewed_by_us(decided_us);
        let expires_us = lease.expires_after_us(bounds, landed_us);
        if decided_us.saturating_add(delay_us) >= expires_us {
            verdicts.report_with(Invariant::ActsWithinLease, time_us, Some(task), move || {
                format!(
                    "{owner} decided to {action} for task {} at epoch {epoch} at {}, but {what} was last renewed by a write sent at {}, which proves it only until {}: the action could arrive after that",
                    task.0,
                    fmt_s(decided_us),
                    fmt_s(landed_us),
                    fmt_s(expires_us)
                )
            });
        }
    }

    /// A task write by a worker the store accepted: a claim, a progress
    /// write or a completion, all decided under the worker's lease.
    #[allow(clippy::too_many_arguments)]
    pub fn worker_task_write(
        &mut self,
        verdicts: &mut Verdicts,
        time_us: u64,
        decided_us: u64,
        owner: Owner,
        task: TaskId,
        before: Option<&TaskDoc>,
        new: &TaskDoc,
    ) {
        let action = match (before.map(|b| b.state), new.state) {
            (Some(TaskState::Pending), TaskState::Running) => "claim it",
            (_, TaskState::Done) => "complete it",
            _ => "record progress",
        };
        self.worker_act(
            verdicts, time_us, decided_us, owner, task, new.epoch, action,
        );
    }

    /// A task write by a reclaimer the store accepted: a re-queue of a
    /// running task must wait for its owner's lease to be provably over.
    #[allow(clippy::too_many_arguments)]
    pub fn reclaimer_task_write(
        &mut self,
        verdicts: &mut Verdicts,
        time_us: u64,
        decided_us: u64,
        id: u32,
        task: TaskId,
        before: Option<&TaskDoc>,
        new: &TaskDoc,
    ) {
        let Some(b) = before else { return };
        let (TaskState::Running, Some(owner)) = (b.state, b.owner) else {
            return;
        };
        if new.state != TaskState::Pending {
            return;
        }
        let bounds = &self.bounds;
        let lease = match bounds.heartbeat_mode {
            HeartbeatMode::Worker => self.members.get(&owner),
            HeartbeatMode::Task => self.task_leases.get(&task).and_then(|ls| {
                ls.iter()
                    .rev()
                    .find(|l| l.holder == owner && l.epoch == b.epoch)
            }),
        };
        // No lease ever landed: the claim is an orphan, re-queued rightly.
        let Some(lease) = lease else { return };
        if let Some((declared_us, bound_us)) = self.requeue_owed(lease)
            && time_us > declared_us + bound_us
        {
            let what = self.lease_name(owner, task, b.epoch);
            verdicts.report_with(Invariant::DetectionBounded, time_us, Some(task), move || {
                format!(
                    "{what} was declared dead at {}, and task {} still running under it was re-queued only at {} (bound {}; no fault touched the reclaimer, the holder or the store)",
                    fmt_s(declared_us),
                    task.0,
                    fmt_s(time_us),
                    fmt_s(bound_us)
                )
            });
        }
        let bounds = &self.bounds;
        let expires_us = lease.expires_us(bounds);
        if lease.lost_at_us.is_none_or(|lost| lost > decided_us) && decided_us < expires_us {
            let (landed_us, epoch) = (lease.last_landed_us, b.epoch);
            verdicts.report_with(Invariant::NoNeedlessSuspicion, time_us, Some(task), move || {
                format!(
                    "reclaimer-{id} decided at {} to re-queue task {} (running under {owner} at epoch {epoch}), but {owner}'s lease was last renewed at {} and cannot be counted out before {}",
                    fmt_s(decided_us),
                    task.0,
                    fmt_s(landed_us),
                    fmt_s(expires_us)
                )
            });
        }
    }

    fn lease_name(&self, holder: Owner, task: TaskId, epoch: u64) -> LeaseName {
        match self.bounds.heartbeat_mode {
            HeartbeatMode::Worker => LeaseName(holder, None, 0),
            HeartbeatMode::Task => LeaseName(holder, Some(task), epoch),
        }
    }

    /// At the end: `task` is still running under `owner` at `epoch`. If its
    /// lease was declared dead and its re-queue was owed, the bound must not
    /// have run out.
    pub fn still_running(
        &self,
        verdicts: &mut Verdicts,
        end_us: u64,
        task: TaskId,
        owner: Owner,
        epoch: u64,
    ) {
        let lease = match self.bounds.heartbeat_mode {
            HeartbeatMode::Worker => self.members.get(&owner),
            HeartbeatMode::Task => self.task_leases.get(&task).and_then(|ls| {
                ls.iter()
                    .rev()
                    .find(|l| l.holder == owner && l.epoch == epoch)
            }),
        };
        let Some(lease) = lease else { return };
        let Some((declared_us, bound_us)) = self.requeue_owed(lease) else {
            return;
        };
        if end_us > declared_us + bound_us {
            let what = self.lease_name(owner, task, epoch);
            verdicts.report_with(Invariant::DetectionBounded, end_us, Some(task), move || {
                format!(
                    "{what} was declared dead at {}, and task {} was still running under it at the end, {} (bound {}; no fault touched the reclaimer, the holder or the store)",
                    fmt_s(declared_us),
                    task.0,
                    fmt_s(end_us),
                    fmt_s(bound_us)
                )
            });
        }
    }

    /// A fault: the nodes it touches are excused from needless fencing
    /// until it stops mattering.
    pub fn fault(&mut self, time_us: u64, fault: &Fault) {
        let store_timeout_us = self.bounds.store_timeout_ms * 1_000;
        let window_us = self.bounds.renew_window_us();
        // Crashes, restarts and clock jumps: a reclaimer's jobs end or its
        // requests time out early; a late reply may follow a restart.
        let struck = match *fault {
            Fault::Crash {
                node,
                restart_after_us,
                ..
            }
            | Fault::CrashAt {
                node,
                restart_after_us,
                ..
            } => Some((node, time_us.saturating_add(restart_after_us))),
            Fault::Restart { node, .. } | Fault::ClockJump { node, .. } => Some((node, time_us)),
            _ => None,
        };
        if let Fault::Restart { node, incarnation } = *fault
            && let Some(b) = self.booted_us.get_mut(node.index())
        {
            *b = (incarnation, time_us);
        }
        if let Some((node, until_us)) = struck {
            if let Some(t) = self.touched_until_us.get_mut(node.index()) {
                *t = (*t).max(until_us.saturating_add(window_us));
            }
            return;
        }
        let (node, until_us) = match *fault {
            Fault::Pause {
                node, duration_us, ..
            }
            | Fault::PauseAt {
                node, duration_us, ..
            } => (node, time_us + duration_us),
            Fault::Message { node, action, .. } => {
                let extra_us = match action {
                    MessageAction::Delay { extra_us } | MessageAction::Duplicate { extra_us } => {
                        extra_us
                    }
                    _ => 0,
                };
                (node, time_us + extra_us + store_timeout_us)
            }
            Fault::Partition {
                at_us,
                node,
                duration_us,
                ..
            } => (node, time_us.max(at_us) + duration_us),
            Fault::StoreOutage {
                at_us, duration_us, ..
            } => {
                let until = time_us.max(at_us) + duration_us + window_us;
                self.store_disturbed_until_us = self.store_disturbed_until_us.max(until);
                return;
            }
            Fault::Resume { node } | Fault::PartitionHealed { node, .. } => (node, time_us),
            _ => return,
        };
        if let Some(d) = self.disturbed_until_us.get_mut(node.index()) {
            *d = (*d).max(until_us.saturating_add(window_us));
        }
        if let Some(t) = self.touched_until_us.get_mut(node.index()) {
            *t = (*t).max(until_us.saturating_add(window_us));
        }
    }

    /// A message of `node` lost: its renewals may have gone unanswered.
    pub fn lost(&mut self, time_us: u64, node: NodeId) {
        let until_us =
            time_us + self.bounds.store_timeout_ms * 1_000 + self.bounds.renew_window_us();
        if let Some(d) = self.disturbed_until_us.get_mut(node.index()) {
            *d = (*d).max(until_us);
        }
        if let Some(t) = self.touched_until_us.get_mut(node.index()) {
            *t = (*t).max(until_us);
        }
    }

    /// A node stopped of its own accord: for a worker in worker heartbeat
    /// mode, it fenced itself (or found its heartbeat taken).
    pub fn exit(
        &mut self,
        verdicts: &mut Verdicts,
        time_us: u64,
        node: NodeId,
        role: NodeRole,
        incarnation: u32,
    ) {
        let NodeRole::Worker { worker } = role else {
            return;
        };
        if self.bounds.heartbeat_mode != HeartbeatMode::Worker {
            return;
        }
        let owner = Owner {
            worker,
            incarnation,
        };
        let Some(lease) = self.members.get(&owner) else {
            return;
        };
        // Declared dead: the exit is the reclaimer's doing, judged there.
        if lease.lost_at_us.is_some() {
            return;
        }
        // Too early for any deadline: whatever it read, a worker whose lease
        // stands gave itself up before it could have run out, faults or not.
        let booted_us = match self.booted_us.get(node.index()) {
            Some(&(i, at_us)) if i == incarnation => at_us,
            _ => 0,
        };
        let earliest_us = booted_us.saturating_add(self.bounds.earliest_fence_us());
        if time_us < earliest_us {
            verdicts.report_with(Invariant::NoNeedlessSuspicion, time_us, None, move || {
                format!(
                    "{owner} gave itself up at {} with its heartbeat alive and never declared dead, but it booted at {} and no self-fencing deadline can fall before {}",
                    fmt_s(time_us),
                    fmt_s(booted_us),
                    fmt_s(earliest_us)
                )
            });
            return;
        }
        let window_us = self.bounds.renew_window_us();
        let quiet_since_us = self
            .disturbed_until_us
            .get(node.index())
            .copied()
            .unwrap_or(u64::MAX)
            .max(self.store_disturbed_until_us);
        // Its registration is where its lease began: it needs a window too.
        let registered_us = lease.first_landed_us;
        if time_us > quiet_since_us && time_us > registered_us + window_us {
            let landed_us = lease.last_landed_us;
            verdicts.report_with(Invariant::NoNeedlessSuspicion, time_us, None, move || {
                format!(
                    "{owner} fenced itself at {} although no fault touched it or the store since {} and its last renewal landed at {}: a healthy worker renews within {}",
                    fmt_s(time_us),
                    fmt_s(quiet_since_us.saturating_sub(window_us)),
                    fmt_s(landed_us),
                    fmt_s(window_us)
                )
            });
        }
    }

    pub fn heal(&mut self, time_us: u64) {
        self.heal_at_us = Some(time_us);
    }

    /// At the end: every lease still alive in the store whose bound passed
    /// was never declared dead.
    pub fn finish(&mut self, verdicts: &mut Verdicts, end_us: u64) {
        let Some(heal_us) = self.heal_at_us else {
            return;
        };
        let docs = self.docs_in_store;
        let bounds = &self.bounds;
        let all = self.members.values().map(|l| (l, None)).chain(
            self.task_leases
                .iter()
                .flat_map(|(t, ls)| ls.iter().map(move |l| (l, Some(*t)))),
        );
        for (lease, task) in all {
            if !lease.alive_in_store() || lease.reported_late {
                continue;
            }
            let since_us = lease.last_landed_us.max(heal_us);
            let bound_us = bounds.detect_us(lease.lease_timeout_ms, docs);
            if end_us > since_us + bound_us {
                let what = LeaseName(lease.holder, task, lease.epoch);
                verdicts.report_with(Invariant::DetectionBounded, end_us, task, move || {
                    format!(
                        "{what} stopped being renewed by {} and was still alive at the end, {} (bound {})",
                        fmt_s(since_us),
                        fmt_s(end_us),
                        fmt_s(bound_us)
                    )
                });
            }
        }
    }
}

impl crate::work_conservation::Health for LeaseOracle {
    fn touched_until_us(&self, node: NodeId) -> u64 {
        self.touched_until_us
            .get(node.index())
            .copied()
            .unwrap_or(u64::MAX)
    }

    fn store_disturbed_until_us(&self) -> u64 {
        self.store_disturbed_until_us
    }

    fn registered_at_us(&self, owner: Owner) -> Option<u64> {
        let lease = self.members.get(&owner)?;
        lease.alive_in_store().then_some(lease.first_landed_us)
    }
}

/// A lease named for messages: a heartbeat document or a task's lease.
#[derive(Clone, Copy)]
struct LeaseName(Owner, Option<TaskId>, u64);

impl std::fmt::Display for LeaseName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            None => write!(f, "{}'s heartbeat", self.0),
            Some(task) => write!(
                f,
                "{}'s lease on task {} (epoch {})",
                self.0, task.0, self.2
            ),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! Each oracle fires on a record stream a broken protocol would make,
    //! and stays silent on the stream of a correct one.
    use crate::lease_checker::{CheckConfig, LeaseChecker, LivenessBound, NodeRole};
    use crate::{Invariant, LeaseBounds};
    use leasehold_interface::{
        Document, EffectReply, EffectRequest, RequestId, ServiceId, StoreReply, StoreRequest,
    };
    use leasehold_protocol::{
        DocKey, DocValue, HeartbeatMode, MemberDoc, MemberStatus, Owner, TaskDoc, TaskId, TaskState,
    };
    use leasehold_sim::{Actor, Fault, NodeId, Observer, Record, RecordKind};

    const S: u64 = 1_000_000;
    const LEASE_MS: u64 = 15_000;
    const WORKER: NodeId = NodeId(0);
    const RECLAIMER: NodeId = NodeId(1);
    const ME: Owner = Owner {
        worker: 0,
        incarnation: 1,
    };

    /// The bounds the oracle tests judge by (the work-conserving tests too).
    pub(crate) fn bounds() -> LeaseBounds {
        LeaseBounds {
            heartbeat_mode: HeartbeatMode::Worker,
            max_clock_drift_ppm: 500,
            max_network_delay_ms: 10,
            max_reply_us: 10_000,
            max_trip_us: 20_000,
            heartbeat_interval_ms: 5_000,
            store_timeout_ms: 1_000,
            retry_backoff_ms: 200,
            scan_interval_ms: 5_000,
            scan_page_size: 100,
            restart_delay_ms_max: 10_000,
            late_reply_ms: 3_000,
            slack_ms: 1_000,
            poll_interval_ms: 1_000,
            idle_poll_max_ms: 1_000,
            slots_per_worker: 1,
        }
    }

    fn checker() -> LeaseChecker {
        checker_with(bounds())
    }

    fn checker_with(bounds: LeaseBounds) -> LeaseChecker {
        LeaseChecker::new(config(bounds, 1))
    }

    /// One worker and one reclaimer, `tasks` one-step tasks, the worker's
    /// capacity all of them.
    pub(crate) fn config(bounds: LeaseBounds, tasks: u32) -> CheckConfig {
        CheckConfig {
            roles: vec![
                NodeRole::Worker { worker: 0 },
                NodeRole::Reclaimer { id: 0 },
            ],
            tasks_total: tasks,
            steps_per_task: 1,
            last_arrival_ms: 0,
            liveness: LivenessBound {
                detect_ms: 60_000,
                per_task_ms: 10_000,
                capacity: tasks,
                slack_ms: 1_000,
            },
            service_names: vec!["payment".into()],
            step_names: vec!["payment".into()],
            grace_ms: 60_000,
            bounds,
        }
    }

    fn member(status: MemberStatus, beats: u64) -> DocValue {
        DocValue::Member(MemberDoc {
            owner: ME,
            status,
            beats,
            lease_timeout_ms: LEASE_MS,
            written_at_ms: 0,
        })
    }

    fn actor(node: NodeId) -> Actor {
        Actor::Node {
            node,
            incarnation: 1,
        }
    }

    /// A write of our heartbeat document by `node`, decided at `decided_us`
    /// and landing at `time_us`, over version `before`.
    fn write(
        c: &mut LeaseChecker,
        node: NodeId,
        time_us: u64,
        decided_us: u64,
        value: DocValue,
        before: Option<u64>,
    ) {
        let key = DocKey::Member { owner: ME };
        let op = match before {
            None => StoreRequest::CreateIfAbsent {
                key,
                value,
                index: None,
            },
            Some(v) => StoreRequest::PutIfVersion {
                key,
                expected: v,
                value,
                index: None,
            },
        };
        let before_doc = before.map(|v| Document {
            key,
            version: v,
            value: member(MemberStatus::Alive, 0),
        });
        let reply = StoreReply::Written { version: time_us };
        c.record(&Record {
            time_us,
            kind: RecordKind::Store {
                actor: actor(node),
                request: RequestId(time_us),
                op: &op,
                reply: &reply,
                before: before_doc.as_ref(),
                decided_us,
            },
        });
    }

    fn effect(c: &mut LeaseChecker, decided_us: u64) {
        c.record(&Record {
            time_us: decided_us + 5_000,
            kind: RecordKind::Effect {
                actor: actor(WORKER),
                request: RequestId(7),
                call: EffectRequest {
                    service: ServiceId(0),
                    resource: 0,
                    step: 0,
                    token: 1,
                    idempotency_key: true,
                },
                outcome: EffectReply::Applied,
                decided_us,
                sent_us: decided_us,
            },
        });
    }

    fn count(c: &LeaseChecker, invariant: Invariant) -> u64 {
        c.violation_count(invariant)
    }

    #[test]
    fn acts_within_lease_fires_past_the_last_renewal_and_not_before() {
        let mut c = checker();
        write(
            &mut c,
            WORKER,
            S + 5_000,
            S,
            member(MemberStatus::Alive, 0),
            None,
        );
        // Within: a lease sent at 1 s is proven until about 16 s, less the
        // drift; an action decided at 10 s arrives in time.
        effect(&mut c, 10 * S);
        assert_eq!(count(&c, Invariant::ActsWithinLease), 0);
        // 15.995 s: the call could arrive after 16 s less 7.5 ms of drift.
        effect(&mut c, 16 * S - 5_000);
        assert_eq!(count(&c, Invariant::ActsWithinLease), 1);
        // A renewal that landed after the decision does not excuse it.
        write(
            &mut c,
            WORKER,
            17 * S,
            16 * S + 990_000,
            member(MemberStatus::Alive, 1),
            Some(S + 5_000),
        );
        effect(&mut c, 16 * S + 995_000);
        assert_eq!(count(&c, Invariant::ActsWithinLease), 2);
        // One that landed before it does.
        effect(&mut c, 17 * S + 1);
        assert_eq!(count(&c, Invariant::ActsWithinLease), 2);
    }

    #[test]
    fn needless_suspicion_fires_on_an_early_declaration_and_not_a_due_one() {
        let mut early = checker();
        write(
            &mut early,
            WORKER,
            S,
            S,
            member(MemberStatus::Alive, 0),
            None,
        );
        write(
            &mut early,
            RECLAIMER,
            10 * S,
            10 * S,
            member(MemberStatus::Dead, 0),
            Some(S),
        );
        assert_eq!(count(&early, Invariant::NoNeedlessSuspicion), 1);
        let mut due = checker();
        write(&mut due, WORKER, S, S, member(MemberStatus::Alive, 0), None);
        write(
            &mut due,
            RECLAIMER,
            16 * S + 10_000,
            16 * S,
            member(MemberStatus::Dead, 0),
            Some(S),
        );
        assert_eq!(count(&due, Invariant::NoNeedlessSuspicion), 0);
    }

    fn exit(c: &mut LeaseChecker, time_us: u64) {
        c.record(&Record {
            time_us,
            kind: RecordKind::Exit {
                node: WORKER,
                incarnation: 1,
            },
        });
    }

    #[test]
    fn needless_suspicion_fires_when_an_untouched_worker_fences_itself() {
        let mut c = checker();
        write(&mut c, WORKER, S, S, member(MemberStatus::Alive, 0), None);
        exit(&mut c, 20 * S);
        assert_eq!(count(&c, Invariant::NoNeedlessSuspicion), 1);
        // A pause that ended at 12 s excuses a fence until a renewal
        // window after it.
        let mut paused = checker();
        write(
            &mut paused,
            WORKER,
            S,
            S,
            member(MemberStatus::Alive, 0),
            None,
        );
        paused.record(&Record {
            time_us: 2 * S,
            kind: RecordKind::Fault(Fault::PauseAt {
                at_us: 2 * S,
                node: WORKER,
                duration_us: 10 * S,
            }),
        });
        exit(&mut paused, 16 * S);
        assert_eq!(count(&paused, Invariant::NoNeedlessSuspicion), 0);
    }

    #[test]
    fn needless_suspicion_fires_when_a_worker_gives_itself_up_before_any_deadline() {
        // A heartbeat interval, a store timeout and a round trip, on a fast
        // clock: 6.02 s less the drift.
        let earliest_us = bounds().earliest_fence_us();
        assert_eq!(earliest_us, 6_016_990);
        // Registered at 1 s and gone at 2 s (a registration retry that met
        // its own document and quit), a fault on it just before (which
        // excuses rule (b), not this): no deadline of a lease dated from its
        // boot can have passed.
        let mut c = checker();
        write(&mut c, WORKER, S, S, member(MemberStatus::Alive, 0), None);
        c.record(&Record {
            time_us: S + 1,
            kind: RecordKind::Fault(Fault::PauseAt {
                at_us: S + 1,
                node: WORKER,
                duration_us: 1,
            }),
        });
        exit(&mut c, 2 * S);
        assert_eq!(count(&c, Invariant::NoNeedlessSuspicion), 1);
        // The same incarnation gone after the earliest deadline, with the
        // fault beside it: excused.
        let mut later = checker();
        write(
            &mut later,
            WORKER,
            S,
            S,
            member(MemberStatus::Alive, 0),
            None,
        );
        later.record(&Record {
            time_us: 5 * S,
            kind: RecordKind::Fault(Fault::PauseAt {
                at_us: 5 * S,
                node: WORKER,
                duration_us: 2 * S,
            }),
        });
        exit(&mut later, earliest_us + 1);
        assert_eq!(count(&later, Invariant::NoNeedlessSuspicion), 0);
        // Dated from its own boot: a second incarnation that booted at 30 s
        // and quit at 32 s fires too.
        let mut second = checker();
        second.record(&Record {
            time_us: 30 * S,
            kind: RecordKind::Fault(Fault::Restart {
                node: WORKER,
                incarnation: 2,
            }),
        });
        let me2 = Owner {
            incarnation: 2,
            ..ME
        };
        let op = StoreRequest::CreateIfAbsent {
            key: DocKey::Member { owner: me2 },
            value: DocValue::Member(MemberDoc {
                owner: me2,
                status: MemberStatus::Alive,
                beats: 0,
                lease_timeout_ms: LEASE_MS,
                written_at_ms: 0,
            }),
            index: None,
        };
        let reply = StoreReply::Written { version: 1 };
        second.record(&Record {
            time_us: 31 * S,
            kind: RecordKind::Store {
                actor: Actor::Node {
                    node: WORKER,
                    incarnation: 2,
                },
                request: RequestId(1),
                op: &op,
                reply: &reply,
                before: None,
                decided_us: 30 * S,
            },
        });
        second.record(&Record {
            time_us: 32 * S,
            kind: RecordKind::Exit {
                node: WORKER,
                incarnation: 2,
            },
        });
        assert_eq!(count(&second, Invariant::NoNeedlessSuspicion), 1);
    }

    #[test]
    fn no_resurrection_fires_on_a_write_decided_after_the_death() {
        let mut c = checker();
        write(&mut c, WORKER, S, S, member(MemberStatus::Alive, 0), None);
        write(
            &mut c,
            RECLAIMER,
            20 * S,
            20 * S,
            member(MemberStatus::Dead, 0),
            Some(S),
        );
        // Decided before the death, landing after: a late message, not a
        // resurrection by decision.
        write(
            &mut c,
            WORKER,
            21 * S,
            19 * S,
            member(MemberStatus::Alive, 1),
            Some(20 * S),
        );
        assert_eq!(count(&c, Invariant::NoResurrection), 0);
        write(
            &mut c,
            WORKER,
            22 * S,
            21 * S + 1,
            member(MemberStatus::Alive, 2),
            Some(21 * S),
        );
        assert_eq!(count(&c, Invariant::NoResurrection), 1);
    }

    #[test]
    fn detection_bounded_fires_on_a_lease_never_declared_and_not_on_one_declared() {
        let heal = |c: &mut LeaseChecker| {
            c.record(&Record {
                time_us: 10 * S,
                kind: RecordKind::HealPhase,
            })
        };
        let bound_us = bounds().detect_us(LEASE_MS, 1);
        let mut never = checker();
        write(
            &mut never,
            WORKER,
            S,
            S,
            member(MemberStatus::Alive, 0),
            None,
        );
        heal(&mut never);
        never.finish(10 * S + bound_us + 1);
        assert_eq!(count(&never, Invariant::DetectionBounded), 1);
        let mut declared = checker();
        write(
            &mut declared,
            WORKER,
            S,
            S,
            member(MemberStatus::Alive, 0),
            None,
        );
        heal(&mut declared);
        write(
            &mut declared,
            RECLAIMER,
            30 * S,
            30 * S,
            member(MemberStatus::Dead, 0),
            Some(S),
        );
        declared.finish(10 * S + bound_us + 1);
        assert_eq!(count(&declared, Invariant::DetectionBounded), 0);
        // Declared, but late: judged when it lands.
        let mut late = checker();
        write(
            &mut late,
            WORKER,
            S,
            S,
            member(MemberStatus::Alive, 0),
            None,
        );
        heal(&mut late);
        let late_us = 10 * S + bound_us + 1;
        write(
            &mut late,
            RECLAIMER,
            late_us,
            late_us,
            member(MemberStatus::Dead, 0),
            Some(S),
        );
        assert_eq!(count(&late, Invariant::DetectionBounded), 1);
    }

    /// Our heartbeat at 1 s, our claim of task 0 at 2 s, and reclaimer-0's
    /// mark at 20 s (past the lease): what every re-queue test starts from.
    fn declared_dead_holding_task_0() -> LeaseChecker {
        declared_dead_holding_task_0_with(bounds())
    }

    fn declared_dead_holding_task_0_with(bounds: LeaseBounds) -> LeaseChecker {
        let mut c = checker_with(bounds);
        write(&mut c, WORKER, S, S, member(MemberStatus::Alive, 0), None);
        let pending = TaskDoc::new_pending(1);
        let running = TaskDoc {
            state: TaskState::Running,
            owner: Some(ME),
            epoch: 1,
            ..pending
        };
        c.task_write(
            2 * S,
            2 * S,
            actor(WORKER),
            TaskId(0),
            Some(&pending),
            &running,
        );
        write(
            &mut c,
            RECLAIMER,
            20 * S,
            20 * S,
            member(MemberStatus::Dead, 0),
            Some(S),
        );
        c
    }

    fn requeue(c: &mut LeaseChecker, time_us: u64) {
        let running = TaskDoc {
            state: TaskState::Running,
            owner: Some(ME),
            epoch: 1,
            ..TaskDoc::new_pending(1)
        };
        let requeued = TaskDoc {
            state: TaskState::Pending,
            owner: None,
            epoch: 2,
            ..running
        };
        c.task_write(
            time_us,
            time_us,
            actor(RECLAIMER),
            TaskId(0),
            Some(&running),
            &requeued,
        );
    }

    #[test]
    fn detection_bounded_fires_on_a_requeue_left_to_a_later_scan() {
        // One page of the owner's tasks and one round for a lost race.
        let bound_us = bounds().requeue_us(2);
        assert_eq!(
            bound_us, 90_000,
            "the mark's reply, two rounds of two trips"
        );
        // A reclaimer that declared the lease dead and left the task to its
        // next scan, a scan interval later.
        let mut late = declared_dead_holding_task_0();
        requeue(&mut late, 25 * S);
        assert_eq!(count(&late, Invariant::DetectionBounded), 1);
        // One that never re-queued it: judged at the end.
        let mut never = declared_dead_holding_task_0();
        never.finish(21 * S);
        assert_eq!(count(&never, Invariant::DetectionBounded), 1);
        // The correct reclaimer: a list and a re-queue after the mark.
        let mut prompt = declared_dead_holding_task_0();
        requeue(&mut prompt, 20 * S + 40_000);
        prompt.finish(21 * S);
        assert_eq!(count(&prompt, Invariant::DetectionBounded), 0);
        // Just inside the bound is still in time.
        let mut edge = declared_dead_holding_task_0();
        requeue(&mut edge, 20 * S + bound_us);
        assert_eq!(count(&edge, Invariant::DetectionBounded), 0);
        // A crash of the reclaimer after its mark ends the job: the next
        // scan, or another reclaimer's, re-queues; no bound is owed.
        let mut crashed = declared_dead_holding_task_0();
        crashed.record(&Record {
            time_us: 20 * S + 1,
            kind: RecordKind::Fault(Fault::CrashAt {
                at_us: 20 * S + 1,
                node: RECLAIMER,
                restart_after_us: S,
            }),
        });
        requeue(&mut crashed, 25 * S);
        assert_eq!(count(&crashed, Invariant::DetectionBounded), 0);
    }

    #[test]
    fn detection_bounded_takes_a_live_hosts_tolerance_as_its_round_trip() {
        // A live host records a reply as delayed only past its tolerance
        // (a quarter of the store timeout here): a chain of replies each
        // within it was untouched by any recorded fault, and in time.
        let live = LeaseBounds {
            max_reply_us: 250_000,
            max_trip_us: 250_000,
            ..bounds()
        };
        assert_eq!(live.requeue_us(2), 1_250_000);
        let mut slow_store = declared_dead_holding_task_0_with(live.clone());
        requeue(&mut slow_store, 20 * S + 290_000);
        slow_store.finish(21 * S);
        assert_eq!(count(&slow_store, Invariant::DetectionBounded), 0);
        // The same records under a simulated run's network bounds are late.
        let mut simulated = declared_dead_holding_task_0();
        requeue(&mut simulated, 20 * S + 290_000);
        assert_eq!(count(&simulated, Invariant::DetectionBounded), 1);
        // And the live bound still catches a re-queue left to a later scan.
        let mut later_scan = declared_dead_holding_task_0_with(live);
        requeue(&mut later_scan, 25 * S);
        assert_eq!(count(&later_scan, Invariant::DetectionBounded), 1);
    }
}
