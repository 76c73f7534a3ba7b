//! `work-conserving`: in the heal phase, pending work is picked up while a
//! healthy worker has room for it.
//!
//! The other checks judge safety and end results; a bug that only slows
//! pickup (a worker that miscounts its busy slots, one that stops polling
//! after an empty page, a poll skipped when due) passes them, because the
//! no-lost-task deadline allows every task its worst case. This oracle
//! judges the wait itself, from the store's history only:
//!
//! A task must not stay pending longer than `LeaseBounds::pickup_us` while
//! a worker that no fault touches (alive, registered in worker mode, past
//! its fault windows) shows, in the store, fewer running tasks than its
//! slots and decides no claim. The wait is measured from the latest of: the
//! heal phase, the task becoming pending, the worker's room appearing in the
//! store, its last claim decision (a claim, or in task mode a lease create,
//! landed or refused), the end of the faults that touched it, and the end
//! of the store's outages. See docs/protocol.md for the bound's derivation.
//!
//! It is judged at the first instant the bound runs out: the state it reads
//! changes only at records the checker sees, so each record first judges
//! the state that held up to it.

use crate::invariant::Invariant;
use crate::lease_checker::{NodeRole, Verdicts};
use crate::lease_oracle::LeaseBounds;
use leasehold_protocol::{HeartbeatMode, Owner, TaskDoc, TaskId, TaskState};
use leasehold_sim::NodeId;
use std::collections::BTreeSet;

/// Not pending (or already reported).
const NOT_PENDING: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
struct WorkerPickup {
    node: NodeId,
    worker: u32,
    /// The node's incarnation now (its newest boot).
    incarnation: u32,
    /// Up, not exited since its boot.
    alive: bool,
    /// Tasks the store shows running under this incarnation.
    running: u32,
    /// When the store last began showing it below its slots.
    room_since_us: u64,
    /// When its newest claim decision reached the store.
    last_claim_us: u64,
    /// Its key in `idle` while it is in it.
    key_us: Option<u64>,
}

pub(crate) struct WorkConservation {
    pickup_us: u64,
    slots: u32,
    mode: HeartbeatMode,
    /// When each task became pending, `NOT_PENDING` if it is not.
    pending_since_us: Vec<u64>,
    /// `(pending since, task)` for every pending task not yet reported.
    pending: BTreeSet<(u64, u32)>,
    /// Per worker id.
    workers: Vec<Option<WorkerPickup>>,
    /// Per node: its worker id, if a worker.
    node_workers: Vec<Option<u32>>,
    /// `(from when it counts, worker id)` for each worker the rule applies
    /// to now (heal phase only): healthy and showing room in the store.
    idle: BTreeSet<(u64, u32)>,
    heal_at_us: Option<u64>,
}

fn fmt_s(us: u64) -> String {
    format!("{:.3} s", us as f64 / 1e6)
}

/// What the rest of the checker knows about a worker's health.
pub(crate) trait Health {
    /// When the last fault that touched `node` (or a crash, restart or clock
    /// jump of it) stops mattering.
    fn touched_until_us(&self, node: NodeId) -> u64;
    /// When the store's last outage stops mattering.
    fn store_disturbed_until_us(&self) -> u64;
    /// Worker mode: when `owner`'s heartbeat document first landed, if it is
    /// alive in the store and not declared dead.
    fn registered_at_us(&self, owner: Owner) -> Option<u64>;
}

impl WorkConservation {
    pub fn new(bounds: &LeaseBounds, roles: &[NodeRole], tasks_total: u32) -> WorkConservation {
        assert!(bounds.slots_per_worker > 0, "a worker with no slots");
        let max_worker = roles
            .iter()
            .filter_map(|r| match r {
                NodeRole::Worker { worker } => Some(*worker as usize + 1),
                NodeRole::Reclaimer { .. } => None,
            })
            .max()
            .unwrap_or(0);
        assert!(max_worker <= 1 << 24, "worker ids are dense and few");
        let mut workers = vec![None; max_worker];
        for (i, r) in roles.iter().enumerate() {
            if let NodeRole::Worker { worker } = *r {
                workers[worker as usize] = Some(WorkerPickup {
                    node: NodeId(u32::try_from(i).expect("node ids fit u32")),
                    worker,
                    incarnation: 1,
                    alive: true,
                    running: 0,
                    room_since_us: 0,
                    last_claim_us: 0,
                    key_us: None,
                });
            }
        }
        let node_workers = roles
            .iter()
            .map(|r| match r {
                NodeRole::Worker { worker } => Some(*worker),
                NodeRole::Reclaimer { .. } => None,
            })
            .collect();
        WorkConservation {
            node_workers,
            pickup_us: bounds.pickup_us(),
            slots: bounds.slots_per_worker,
            mode: bounds.heartbeat_mode,
            pending_since_us: vec![NOT_PENDING; tasks_total as usize],
            pending: BTreeSet::new(),
            workers,
            idle: BTreeSet::new(),
            heal_at_us: None,
        }
    }

    /// Judge the state that held up to `now_us`: report every pending task
    /// whose bound ran out beside an idle worker, at the instant it did.
    #[inline(always)]
    pub fn judge(&mut self, verdicts: &mut Verdicts, health: &impl Health, now_us: u64) {
        if let Some(heal_us) = self.heal_at_us {
            self.judge_healing(verdicts, health, now_us, heal_us);
        }
    }

    #[inline(never)]
    fn judge_healing(
        &mut self,
        verdicts: &mut Verdicts,
        health: &impl Health,
        now_us: u64,
        heal_us: u64,
    ) {
        // Bounded: each report takes one task out of `pending`.
        for _ in 0..self.pending_since_us.len() {
            let Some(&(pending_us, task)) = self.pending.first() else {
                return;
            };
            let Some(&(idle_us, worker)) = self.idle.first() else {
                return;
            };
            let from_us = pending_us
                .max(idle_us)
                .max(heal_us)
                .max(health.store_disturbed_until_us());
            let due_us = from_us.saturating_add(self.pickup_us);
            if now_us <= due_us {
                return;
            }
            self.pending.remove(&(pending_us, task));
            let w = self.workers[worker as usize].expect("idle workers are known");
            let owner = Owner {
                worker,
                incarnation: w.incarnation,
            };
            let (slots, bound_us) = (self.slots, self.pickup_us);
            verdicts.report_with(
                Invariant::WorkConserving,
                due_us,
                Some(TaskId(task)),
                move || {
                    format!(
                        "task {task} was pending from {} and still at {}, while {owner}, untouched by faults, showed {} of {slots} slots running in the store and decided no claim from {} (bound {} from {})",
                        fmt_s(pending_us),
                        fmt_s(due_us),
                        w.running,
                        fmt_s(w.room_since_us.max(w.last_claim_us)),
                        fmt_s(bound_us),
                        fmt_s(from_us)
                    )
                },
            );
        }
    }

    /// Whether the rule applies to `w` now, and from when.
    fn key_of(&self, w: &WorkerPickup, health: &impl Health) -> Option<u64> {
        self.heal_at_us?;
        if !w.alive || w.running >= self.slots {
            return None;
        }
        let owner = Owner {
            worker: w.worker,
            incarnation: w.incarnation,
        };
        let registered_us = match self.mode {
            HeartbeatMode::Worker => health.registered_at_us(owner)?,
            HeartbeatMode::Task => 0,
        };
        Some(
            w.room_since_us
                .max(w.last_claim_us)
                .max(registered_us)
                .max(health.touched_until_us(w.node)),
        )
    }

    /// Recompute worker `worker`'s place in `idle`.
    fn refresh(&mut self, worker: u32, health: &impl Health) {
        let Some(w) = self.workers.get(worker as usize).copied().flatten() else {
            return;
        };
        let key = self.key_of(&w, health);
        if key == w.key_us {
            return;
        }
        if let Some(old) = w.key_us {
            let removed = self.idle.remove(&(old, worker));
            assert!(removed, "an idle worker's key is in the set");
        }
        if let Some(new) = key {
            self.idle.insert((new, worker));
        }
        self.workers[worker as usize]
            .as_mut()
            .expect("known")
            .key_us = key;
    }

    fn worker_of_node(&self, node: NodeId) -> Option<u32> {
        self.node_workers.get(node.index()).copied().flatten()
    }

    pub fn heal(&mut self, health: &impl Health, time_us: u64) {
        assert!(self.heal_at_us.is_none(), "two heal phases");
        self.heal_at_us = Some(time_us);
        assert!(self.pending.is_empty(), "kept in the heal phase only");
        for (task, since) in self.pending_since_us.iter().enumerate() {
            if *since != NOT_PENDING {
                self.pending.insert((*since, task as u32));
            }
        }
        for worker in 0..self.workers.len() as u32 {
            self.refresh(worker, health);
        }
    }

    /// An accepted task write by `writer` (a worker's owner, if a worker).
    #[inline]
    pub fn task_write(
        &mut self,
        health: &impl Health,
        time_us: u64,
        task: TaskId,
        writer: Option<Owner>,
        before: Option<&TaskDoc>,
        new: &TaskDoc,
    ) {
        let Some(since) = self.pending_since_us.get_mut(task.0 as usize) else {
            return;
        };
        let was_pending = before.is_some_and(|b| b.state == TaskState::Pending);
        // The ordered set is kept in the heal phase only (built at its
        // start): before it, nothing is judged, and two set operations per
        // claim were 3 % of a friday-rush run.
        let judging = self.heal_at_us.is_some();
        match (was_pending, new.state == TaskState::Pending) {
            (false, true) => {
                *since = time_us;
                if judging {
                    self.pending.insert((time_us, task.0));
                }
            }
            (true, false) => {
                // Absent if already reported.
                if judging {
                    self.pending.remove(&(*since, task.0));
                }
                *since = NOT_PENDING;
            }
            _ => {}
        }
        let ran = before.and_then(|b| (b.state == TaskState::Running).then_some(b.owner?));
        let runs = (new.state == TaskState::Running)
            .then_some(new.owner)
            .flatten();
        if ran == runs {
            return;
        }
        if let Some(o) = ran {
            self.running_changed(health, time_us, o, false);
        }
        if let Some(o) = runs {
            self.running_changed(health, time_us, o, true);
        }
        if let Some(o) = writer
            && runs == Some(o)
            && was_pending
        {
            self.claim_decided(health, time_us, o);
        }
    }

    fn running_changed(&mut self, health: &impl Health, time_us: u64, owner: Owner, up: bool) {
        let slots = self.slots;
        let Some(Some(w)) = self.workers.get_mut(owner.worker as usize) else {
            return;
        };
        // A task of an earlier incarnation counts for that one, not this.
        if w.incarnation != owner.incarnation {
            return;
        }
        if up {
            w.running += 1;
        } else {
            assert!(w.running > 0, "a running task the store never showed");
            w.running -= 1;
            if w.running + 1 == slots {
                w.room_since_us = time_us;
            }
        }
        if self.heal_at_us.is_some() {
            self.refresh(owner.worker, health);
        }
    }

    /// `owner` decided a claim that reached the store (landed or refused):
    /// a claim of a task, or in task mode the create of its lease.
    pub fn claim_decided(&mut self, health: &impl Health, time_us: u64, owner: Owner) {
        let Some(Some(w)) = self.workers.get_mut(owner.worker as usize) else {
            return;
        };
        if w.incarnation != owner.incarnation {
            return;
        }
        w.last_claim_us = w.last_claim_us.max(time_us);
        if self.heal_at_us.is_some() {
            self.refresh(owner.worker, health);
        }
    }

    /// `node` booted as `incarnation` (a restart): a fresh owner, no task
    /// running under it.
    pub fn restart(&mut self, health: &impl Health, time_us: u64, node: NodeId, incarnation: u32) {
        let Some(worker) = self.worker_of_node(node) else {
            return;
        };
        let w = self.workers[worker as usize].as_mut().expect("known");
        w.incarnation = incarnation;
        w.alive = true;
        w.running = 0;
        w.room_since_us = time_us;
        w.last_claim_us = time_us;
        self.refresh(worker, health);
    }

    /// `node` went down (a crash) or stopped of its own accord (an exit).
    pub fn down(&mut self, health: &impl Health, node: NodeId) {
        let Some(worker) = self.worker_of_node(node) else {
            return;
        };
        self.workers[worker as usize].as_mut().expect("known").alive = false;
        self.refresh(worker, health);
    }

    /// A fault or a loss touched `node`: its health may have moved.
    pub fn touched(&mut self, health: &impl Health, node: NodeId) {
        if self.heal_at_us.is_none() {
            return;
        }
        if let Some(worker) = self.worker_of_node(node) {
            self.refresh(worker, health);
        }
    }

    /// A lease document of `owner` changed (worker mode: its registration
    /// may have landed or been declared dead).
    pub fn lease_changed(&mut self, health: &impl Health, owner: Owner) {
        if self.heal_at_us.is_some() {
            self.refresh(owner.worker, health);
        }
    }
}

#[cfg(test)]
mod tests {
    //! `work-conserving` fires on the record streams of workers that leave a
    //! task pending beside a free slot (the `lone_leases` mutant's: a
    //! task-mode worker that counts each run twice and so runs half its
    //! slots; and a worker that stops polling after an empty page), and
    //! stays silent on a worker that claims within the bound, one that is
    //! full, and one a fault touched.
    use crate::lease_checker::LeaseChecker;
    use crate::lease_oracle::tests as oracle_tests;
    use crate::{Invariant, LeaseBounds};
    use leasehold_interface::{Document, RequestId, StoreReply, StoreRequest};
    use leasehold_protocol::{
        DocKey, DocValue, HeartbeatMode, MemberDoc, MemberStatus, Owner, TaskDoc, TaskId,
        TaskLeaseDoc, TaskState,
    };
    use leasehold_sim::{Actor, Fault, NodeId, Observer, Record, RecordKind};

    const S: u64 = 1_000_000;
    const WORKER: NodeId = NodeId(0);
    const ME: Owner = Owner {
        worker: 0,
        incarnation: 1,
    };

    fn bounds(mode: HeartbeatMode) -> LeaseBounds {
        LeaseBounds {
            heartbeat_mode: mode,
            slots_per_worker: 2,
            ..oracle_tests::bounds()
        }
    }

    fn checker(mode: HeartbeatMode) -> LeaseChecker {
        LeaseChecker::new(oracle_tests::config(bounds(mode), 2))
    }

    fn store(
        c: &mut LeaseChecker,
        time_us: u64,
        actor: Actor,
        op: StoreRequest<DocKey, DocValue>,
        before: Option<Document<DocKey, DocValue>>,
    ) {
        let reply = StoreReply::Written { version: time_us };
        c.record(&Record {
            time_us,
            kind: RecordKind::Store {
                actor,
                request: RequestId(time_us),
                op: &op,
                reply: &reply,
                before: before.as_ref(),
                decided_us: time_us.saturating_sub(5_000),
            },
        });
    }

    fn worker() -> Actor {
        Actor::Node {
            node: WORKER,
            incarnation: 1,
        }
    }

    fn task(state: TaskState, owner: Option<Owner>, epoch: u64) -> TaskDoc {
        TaskDoc {
            state,
            owner,
            epoch,
            steps_done: 0,
            steps_total: 1,
        }
    }

    /// The workload creates `task` pending at `time_us`.
    fn create(c: &mut LeaseChecker, time_us: u64, t: u32) {
        let doc = task(TaskState::Pending, None, 0);
        let op = StoreRequest::CreateIfAbsent {
            key: DocKey::Task { task: TaskId(t) },
            value: DocValue::Task(doc),
            index: doc.index_key(TaskId(t)),
        };
        store(c, time_us, Actor::External, op, None);
    }

    /// Our worker claims pending `task` at `time_us` (in task mode, its
    /// lease first).
    fn claim(c: &mut LeaseChecker, time_us: u64, t: u32, mode: HeartbeatMode) {
        if mode == HeartbeatMode::Task {
            let op = StoreRequest::CreateIfAbsent {
                key: DocKey::TaskLease { task: TaskId(t) },
                value: DocValue::TaskLease(TaskLeaseDoc {
                    owner: ME,
                    epoch: 1,
                    status: MemberStatus::Alive,
                    beats: 0,
                    lease_timeout_ms: 15_000,
                    written_at_ms: 0,
                }),
                index: None,
            };
            store(c, time_us - 20_000, worker(), op, None);
        }
        let key = DocKey::Task { task: TaskId(t) };
        let before = task(TaskState::Pending, None, 0);
        let new = task(TaskState::Running, Some(ME), 1);
        let op = StoreRequest::PutIfVersion {
            key,
            expected: 1,
            value: DocValue::Task(new),
            index: new.index_key(TaskId(t)),
        };
        let before = Document {
            key,
            version: 1,
            value: DocValue::Task(before),
        };
        store(c, time_us, worker(), op, Some(before));
    }

    /// Worker mode: our worker registers at `time_us`.
    fn register(c: &mut LeaseChecker, time_us: u64) {
        let op = StoreRequest::CreateIfAbsent {
            key: DocKey::Member { owner: ME },
            value: DocValue::Member(MemberDoc {
                owner: ME,
                status: MemberStatus::Alive,
                beats: 0,
                lease_timeout_ms: 15_000,
                written_at_ms: 0,
            }),
            index: None,
        };
        store(c, time_us, worker(), op, None);
    }

    fn heal(c: &mut LeaseChecker, time_us: u64) {
        c.record(&Record {
            time_us,
            kind: RecordKind::HealPhase,
        });
    }

    fn count(c: &LeaseChecker) -> u64 {
        c.violation_count(Invariant::WorkConserving)
    }

    fn pickup_us(mode: HeartbeatMode) -> u64 {
        bounds(mode).pickup_us()
    }

    /// The `lone_leases` mutant's record stream: a task-mode worker with two
    /// slots runs one task (it counts the run's lease as a second busy
    /// slot) and claims nothing more while task 1 waits.
    fn half_full_task_mode_worker(claim_second_at_us: Option<u64>) -> LeaseChecker {
        let mode = HeartbeatMode::Task;
        let mut c = checker(mode);
        create(&mut c, S, 0);
        create(&mut c, S, 1);
        claim(&mut c, S + 100_000, 0, mode);
        heal(&mut c, 2 * S);
        if let Some(at_us) = claim_second_at_us {
            claim(&mut c, at_us, 1, mode);
        }
        c.finish(2 * S + pickup_us(mode) + 5 * S);
        c
    }

    #[test]
    fn fires_on_a_worker_that_runs_half_its_slots_while_a_task_waits() {
        let c = half_full_task_mode_worker(None);
        assert_eq!(count(&c), 1, "{:?}", c.violations());
        let v = &c.violations()[0];
        assert_eq!(v.task, Some(TaskId(1)));
        // Flagged at the first instant: the heal phase plus the bound.
        assert_eq!(v.time_ms, (2 * S + pickup_us(HeartbeatMode::Task)) / 1_000);
        assert!(v.message.contains("1 of 2 slots"), "{}", v.message);
    }

    #[test]
    fn silent_on_a_worker_that_claims_within_the_bound() {
        let at_us = 2 * S + pickup_us(HeartbeatMode::Task) - 1_000;
        let c = half_full_task_mode_worker(Some(at_us));
        assert_eq!(count(&c), 0, "{:?}", c.violations());
        // One microsecond late is late.
        let late_us = 2 * S + pickup_us(HeartbeatMode::Task) + 1;
        let c = half_full_task_mode_worker(Some(late_us + 20_000));
        assert_eq!(count(&c), 1, "{:?}", c.violations());
    }

    /// A worker-mode worker that stopped polling after an empty page: it
    /// is registered and runs nothing, and a task arriving in the heal
    /// phase waits.
    fn idle_worker(touched: bool) -> LeaseChecker {
        let mode = HeartbeatMode::Worker;
        let mut c = checker(mode);
        register(&mut c, 100_000);
        create(&mut c, S, 0);
        claim(&mut c, S + 50_000, 0, mode);
        heal(&mut c, 2 * S);
        if touched {
            // A partition of the worker in the heal phase's first instant
            // (a fault record the run would not make there, but the rule
            // is the same at any time): it is excused for its window.
            c.record(&Record {
                time_us: 2 * S,
                kind: RecordKind::Fault(Fault::Partition {
                    at_us: 2 * S,
                    node: WORKER,
                    link: leasehold_sim::Link::Store,
                    direction: leasehold_sim::Direction::Both,
                    duration_us: 30 * S,
                }),
            });
        }
        create(&mut c, 3 * S, 1);
        c.finish(3 * S + pickup_us(mode) + 1);
        c
    }

    #[test]
    fn fires_on_a_worker_that_stops_polling_and_not_on_one_a_fault_touched() {
        let c = idle_worker(false);
        assert_eq!(count(&c), 1, "{:?}", c.violations());
        assert_eq!(
            c.violations()[0].time_ms,
            (3 * S + pickup_us(HeartbeatMode::Worker)) / 1_000
        );
        let c = idle_worker(true);
        assert_eq!(count(&c), 0, "{:?}", c.violations());
    }

    #[test]
    fn silent_while_the_worker_is_full() {
        let mode = HeartbeatMode::Task;
        let mut c = checker(mode);
        create(&mut c, S, 0);
        create(&mut c, S, 1);
        claim(&mut c, S + 100_000, 0, mode);
        claim(&mut c, S + 200_000, 1, mode);
        heal(&mut c, 2 * S);
        c.finish(2 * S + 10 * pickup_us(mode));
        assert_eq!(count(&c), 0, "{:?}", c.violations());
    }

    #[test]
    fn the_bound_counts_two_looks_around_of_idle_polls() {
        // 25 polls of (1 s on a clock 500 ppm slow, rounded up and a
        // microsecond more for the clock's rounding, + a 20 ms round trip),
        // after a round trip (worker mode) or two (task mode) of lag.
        let poll_us = 1_000_502 + 20_000;
        assert_eq!(pickup_us(HeartbeatMode::Worker), 20_000 + 25 * poll_us);
        assert_eq!(pickup_us(HeartbeatMode::Task), 40_000 + 25 * poll_us);
    }
}
