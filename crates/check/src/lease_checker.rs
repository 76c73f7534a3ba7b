//! The lease invariants, judged online from the records of one run.

use crate::invariant::{Invariant, Violation};
use crate::lease_oracle::{self, LeaseBounds, LeaseOracle};
use crate::work_conservation::WorkConservation;
use leasehold_interface::{Document, EffectReply, EffectRequest, StoreReply, StoreRequest};
use leasehold_protocol::{
    DocKey, DocValue, LeaseEvent, Owner, TaskDoc, TaskId, TaskState, task_write,
};
use leasehold_sim::{Actor, Fault, NodeId, Observer, Record, RecordKind};
use serde::Serialize;

/// Violations kept in full; beyond this they are only counted.
const MAX_KEPT_VIOLATIONS: usize = 64;
/// Lost tasks named one by one in the report; the rest are counted.
const MAX_NAMED_LOST_TASKS: usize = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum NodeRole {
    Worker { worker: u32 },
    Reclaimer { id: u32 },
}

/// How long after the heal phase starts every task must be done.
///
/// `deadline = max(heal start, last arrival) + detect_ms
///             + (ceil(unfinished / capacity) + 1) * per_task_ms + slack_ms`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LivenessBound {
    /// Worst time to notice a silent worker and re-queue its tasks: a
    /// heartbeat interval, the lease timeout, two scan intervals and a restart.
    pub detect_ms: u64,
    /// Worst time one task takes once claimed (all its steps, with retries).
    pub per_task_ms: u64,
    /// Tasks the fleet runs at once (workers x slots).
    pub capacity: u32,
    pub slack_ms: u64,
}

impl LivenessBound {
    /// The no-lost-task deadline in µs for `unfinished` tasks from
    /// `start_us`; `None` if it does not fit in a `u64` (scenario validation
    /// refuses such bounds).
    pub fn deadline_us(&self, start_us: u64, unfinished: u32) -> Option<u64> {
        assert!(self.capacity > 0, "a fleet with no slots");
        let rounds = u64::from(unfinished.div_ceil(self.capacity)) + 1;
        let span_ms = rounds
            .checked_mul(self.per_task_ms)?
            .checked_add(self.detect_ms)?
            .checked_add(self.slack_ms)?;
        span_ms.checked_mul(1_000)?.checked_add(start_us)
    }
}

impl CheckConfig {
    /// A service's name, for violation messages only.
    fn service_name(&self, service: u16) -> String {
        self.service_names
            .get(service as usize)
            .cloned()
            .unwrap_or_else(|| format!("service-{service}"))
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckConfig {
    /// Role of each simulated node, indexed by node id.
    pub roles: Vec<NodeRole>,
    pub tasks_total: u32,
    pub steps_per_task: u32,
    pub last_arrival_ms: u64,
    pub liveness: LivenessBound,
    /// Service names, indexed by service id, for messages.
    pub service_names: Vec<String>,
    /// Service name of each step, for messages.
    pub step_names: Vec<String>,
    /// Keep watching this long after the last task is done, so a late write
    /// to a done task (a zombie, a blind re-queue) is still caught.
    pub grace_ms: u64,
    /// The stated bounds the lease oracles judge each action against.
    pub bounds: LeaseBounds,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Writer {
    External,
    Worker(Owner),
    Reclaimer(u32),
}

/// A list that is nearly always short, its first `N` entries kept in place
/// and the rest on the heap. Each task has three (a few epochs, a few
/// services): as `Vec`s they cost three allocations per task, a fifth of
/// the checker's work.
#[derive(Clone, Debug)]
struct ShortList<T, const N: usize> {
    len: usize,
    /// The first `min(len, N)` entries; the rest are filler.
    first: [T; N],
    rest: Vec<T>,
}

impl<T: Copy, const N: usize> ShortList<T, N> {
    /// An empty list; `filler` only fills the unused places.
    fn new(filler: T) -> Self {
        ShortList {
            len: 0,
            first: [filler; N],
            rest: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    /// The first entry `pred` accepts. The inline entries are searched on
    /// their own and the heap only when the list outgrew them: a `chain`
    /// iterator tests which half it is in at every step, and each effect
    /// line searches three lists.
    #[inline(always)]
    fn find(&self, mut pred: impl FnMut(&T) -> bool) -> Option<&T> {
        let inline = &self.first[..self.len.min(N)];
        match inline.iter().position(&mut pred) {
            Some(i) => Some(&inline[i]),
            None if self.len > N => self.rest.iter().find(|x| pred(x)),
            None => None,
        }
    }

    /// Like [`ShortList::find`], mutably.
    #[inline(always)]
    fn find_mut(&mut self, mut pred: impl FnMut(&T) -> bool) -> Option<&mut T> {
        let inline = &mut self.first[..self.len.min(N)];
        match inline.iter().position(&mut pred) {
            Some(i) => Some(&mut inline[i]),
            None if self.len > N => self.rest.iter_mut().find(|x| pred(x)),
            None => None,
        }
    }

    fn push(&mut self, value: T) {
        if self.len < N {
            self.first[self.len] = value;
        } else {
            self.rest.push(value);
        }
        self.len += 1;
    }
}

#[derive(Clone, Debug)]
struct TaskTrack {
    doc: Option<TaskDoc>,
    /// Which owner held each epoch it was running in.
    epoch_owners: ShortList<(u64, Owner), 2>,
    /// (time, new epoch) for every accepted write that changed the epoch,
    /// but to 0 (a creation's).
    epoch_changes: ShortList<(u64, u64), 3>,
    /// Highest epoch each service accepted for this task.
    service_tokens: ShortList<(u16, u64), 3>,
}

impl TaskTrack {
    /// Record that `owner` works on `task` in `epoch`; two owners in one epoch
    /// is double ownership whatever else happened.
    #[inline(always)]
    fn claim_epoch(
        &mut self,
        verdicts: &mut Verdicts,
        time_us: u64,
        task: TaskId,
        epoch: u64,
        owner: Owner,
    ) {
        let holder = self.epoch_owners.find(|(e, _)| *e == epoch);
        match holder.map(|&(_, o)| o) {
            Some(other) if other != owner => {
                verdicts.report_with(
                    Invariant::NoDoubleOwnership,
                    time_us,
                    Some(task),
                    move || {
                        format!(
                            "two workers worked on task {} in epoch {}: {} and {}",
                            task.0, epoch, other, owner
                        )
                    },
                );
            }
            Some(_) => {}
            None => {
                assert!(self.epoch_owners.len() < 1 << 20, "unbounded epochs");
                self.epoch_owners.push((epoch, owner));
            }
        }
    }
}

/// The parts of an effect ledger line the checker judges.
struct EffectLine {
    call: EffectRequest,
    outcome: EffectReply,
    decided_us: u64,
}

/// The violations found: a field of its own, so a judging path can report
/// while it holds its task's track.
pub(crate) struct Verdicts {
    kept: Vec<Violation>,
    counts: [u64; Invariant::ALL.len()],
}

impl Verdicts {
    fn violate(
        &mut self,
        invariant: Invariant,
        time_us: u64,
        task: Option<TaskId>,
        message: String,
    ) {
        self.counts[invariant as usize] += 1;
        if self.kept.len() < MAX_KEPT_VIOLATIONS {
            self.kept.push(Violation {
                invariant,
                time_ms: time_us / 1_000,
                task,
                message,
            });
        }
    }

    /// [`Self::violate`] for the judging paths: out of line and cold, so
    /// the message's formatting takes no registers or stack from the
    /// records that pass (nearly all of them).
    #[cold]
    #[inline(never)]
    fn report(
        &mut self,
        invariant: Invariant,
        time_us: u64,
        task: Option<TaskId>,
        message: std::fmt::Arguments<'_>,
    ) {
        self.violate(invariant, time_us, task, message.to_string());
    }

    /// [`Self::report`] with the message made by `message`: a `move`
    /// closure takes its values where the report is made, so the records
    /// that pass keep none of them on the stack for it (`format_args!`
    /// borrows them, and they were stored on every record).
    #[cold]
    #[inline(never)]
    pub(crate) fn report_with(
        &mut self,
        invariant: Invariant,
        time_us: u64,
        task: Option<TaskId>,
        message: impl FnOnce() -> String,
    ) {
        self.violate(invariant, time_us, task, message());
    }
}

pub struct LeaseChecker {
    cfg: CheckConfig,
    tasks: Vec<TaskTrack>,
    /// Effect applications per task and step: task `t`'s steps are
    /// `applied[t * steps_per_task..][..steps_per_task]`.
    applied: Vec<u32>,
    verdicts: Verdicts,
    oracle: LeaseOracle,
    /// `work-conserving`: pickup judged against workers with room.
    pickup: WorkConservation,
    done: u32,
    all_done_at_us: Option<u64>,
    heal_at_us: Option<u64>,
    deadline_us: Option<u64>,
    /// `stop_after_us`'s answer, kept by `keep_stop_after` whenever
    /// `all_done_at_us` or `deadline_us` moves: the run's observer copies
    /// it after every task write.
    stop_after_us: u64,
    finished: bool,
}

/// Who wrote, formatted only when a message needs it.
#[derive(Clone, Copy)]
struct WriterName(Writer);

impl std::fmt::Display for WriterName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Writer::External => f.write_str("the workload"),
            Writer::Worker(o) => write!(f, "{o}"),
            Writer::Reclaimer(id) => write!(f, "reclaimer-{id}"),
        }
    }
}

fn fmt_owner(owner: Option<Owner>) -> String {
    owner.map_or_else(|| "nobody".to_string(), |o| o.to_string())
}

fn fmt_state(state: TaskState) -> &'static str {
    match state {
        TaskState::Pending => "pending",
        TaskState::Running => "running",
        TaskState::Done => "done",
    }
}

fn fmt_s(us: u64) -> String {
    format!("{:.3} s", us as f64 / 1e6)
}

impl LeaseChecker {
    pub fn new(cfg: CheckConfig) -> LeaseChecker {
        assert!(cfg.liveness.capacity > 0);
        let tasks = vec![
            TaskTrack {
                doc: None,
                epoch_owners: ShortList::new((0, Owner::MIN)),
                epoch_changes: ShortList::new((0, 0)),
                service_tokens: ShortList::new((0, 0)),
            };
            cfg.tasks_total as usize
        ];
        let applied = vec![0; cfg.tasks_total as usize * cfg.steps_per_task as usize];
        let max_owned_tasks = cfg.liveness.capacity.min(cfg.tasks_total);
        let oracle = LeaseOracle::new(cfg.bounds.clone(), &cfg.roles, u64::from(max_owned_tasks));
        let pickup = WorkConservation::new(&cfg.bounds, &cfg.roles, cfg.tasks_total);
        LeaseChecker {
            oracle,
            pickup,
            cfg,
            tasks,
            applied,
            verdicts: Verdicts {
                kept: Vec::new(),
                counts: [0; Invariant::ALL.len()],
            },
            done: 0,
            all_done_at_us: None,
            heal_at_us: None,
            deadline_us: None,
            stop_after_us: u64::MAX,
            finished: false,
        }
    }

    pub fn tasks_done(&self) -> u32 {
        self.done
    }

    pub fn deadline_us(&self) -> Option<u64> {
        self.deadline_us
    }

    /// No stop is due at or before this time: the run stops once past the
    /// grace after all tasks were done, or past the liveness deadline,
    /// whichever comes first (`u64::MAX` while neither is set). It moves
    /// only when the tasks become all done (or stop being so) and when the
    /// heal phase sets the deadline.
    #[inline]
    pub fn stop_after_us(&self) -> u64 {
        self.stop_after_us
    }

    fn keep_stop_after(&mut self) {
        let grace_over_after = self
            .all_done_at_us
            .map_or(u64::MAX, |t| t + self.cfg.grace_ms * 1_000);
        self.stop_after_us = grace_over_after.min(self.deadline_us.unwrap_or(u64::MAX));
    }

    /// Counts of every violation found, including those not kept in full.
    pub fn violation_count(&self, invariant: Invariant) -> u64 {
        self.verdicts.counts[invariant as usize]
    }

    pub fn violations(&self) -> &[Violation] {
        &self.verdicts.kept
    }

    pub fn violate(
        &mut self,
        invariant: Invariant,
        time_us: u64,
        task: Option<TaskId>,
        message: String,
    ) {
        self.verdicts.violate(invariant, time_us, task, message);
    }

    fn writer(&self, actor: Actor) -> Writer {
        match actor {
            Actor::External => Writer::External,
            Actor::Node { node, incarnation } => match self.role(node) {
                NodeRole::Worker { worker } => Writer::Worker(Owner {
                    worker,
                    incarnation,
                }),
                NodeRole::Reclaimer { id } => Writer::Reclaimer(id),
            },
        }
    }

    fn oracle_actor(&self, actor: Actor) -> lease_oracle::Actor {
        match self.writer(actor) {
            Writer::External => lease_oracle::Actor::External,
            Writer::Worker(o) => lease_oracle::Actor::Worker(o),
            Writer::Reclaimer(id) => lease_oracle::Actor::Reclaimer(id),
        }
    }

    fn role(&self, node: NodeId) -> NodeRole {
        *self
            .cfg
            .roles
            .get(node.index())
            .unwrap_or_else(|| panic!("record from unknown node {}", node.0))
    }

    // Inlined into `store`: the run's observer hands the checker store
    // records only once it has counted the index scans itself, so what
    // reaches `store` is mostly task writes, and the call cost more than
    // it saved. Answers whether `stop_after_us` may have moved (the count
    // of tasks done crossed the total).
    #[inline(always)]
    fn on_task_write(
        &mut self,
        time_us: u64,
        decided_us: u64,
        task: TaskId,
        writer: Writer,
        // Borrowed from the record: two 32-byte copies per write otherwise.
        before: Option<&TaskDoc>,
        new: &TaskDoc,
    ) -> bool {
        // Pickup first: it judges the state that held up to this write.
        self.pickup.judge(&mut self.verdicts, &self.oracle, time_us);
        let owner = match writer {
            Writer::Worker(o) => Some(o),
            _ => None,
        };
        self.pickup
            .task_write(&self.oracle, time_us, task, owner, before, new);
        // The task's track is found once and held to the end (reports go
        // to `verdicts`, a field apart): a lookup per use was a bounds
        // check each.
        let Some(track) = self.tasks.get_mut(task.0 as usize) else {
            self.verdicts
                .report_with(Invariant::NoLostTask, time_us, Some(task), move || {
                    format!(
                        "a document was written for task {} which the workload never created",
                        task.0
                    )
                });
            return false;
        };
        let verdicts = &mut self.verdicts;
        // Only formatted when a violation is reported: every task write
        // passes here, and formatting a name per write was a tenth of a run.
        let who = WriterName(writer);
        if let Some(b) = before {
            if b.state == TaskState::Done {
                verdicts.report_with(Invariant::DoneIsFinal, time_us, Some(task), move || {
                    format!(
                        "task {} was done (epoch {}, by {}) and {} overwrote it to {} at epoch {}",
                        task.0,
                        b.epoch,
                        fmt_owner(b.owner),
                        who,
                        fmt_state(new.state),
                        new.epoch
                    )
                });
            }
            let ownership_changes = matches!(new.state, TaskState::Pending | TaskState::Running)
                && (b.state != new.state || b.owner != new.owner);
            if new.epoch < b.epoch {
                verdicts.report_with(Invariant::EpochsMonotonic, time_us, Some(task), move || {
                    format!(
                        "task {} went from epoch {} back to {} (write by {})",
                        task.0, b.epoch, new.epoch, who
                    )
                });
            } else if ownership_changes && new.epoch == b.epoch {
                verdicts.report_with(
                    Invariant::EpochsMonotonic,
                    time_us,
                    Some(task),
                    move || format!(
                        "task {} changed hands ({} {} -> {} {}) without an epoch bump: epoch stayed {} (write by {})",
                        task.0,
                        fmt_state(b.state),
                        fmt_owner(b.owner),
                        fmt_state(new.state),
                        fmt_owner(new.owner),
                        b.epoch,
                        who
                    ),
                );
            }
            if new.steps_done < b.steps_done {
                verdicts.report_with(
                    Invariant::ExactlyOnceEffects,
                    time_us,
                    Some(task),
                    move || format!(
                        "task {} went from {} steps done back to {} (write by {}): done steps would run again",
                        task.0, b.steps_done, new.steps_done, who
                    ),
                );
            }
            if let Writer::Worker(o) = writer {
                let claim = b.state == TaskState::Pending && new.owner == Some(o);
                let own_progress =
                    b.state == TaskState::Running && b.owner == Some(o) && b.epoch == new.epoch;
                if b.state == TaskState::Running && !own_progress {
                    verdicts.report_with(
                        Invariant::NoDoubleOwnership,
                        time_us,
                        Some(task),
                        move || format!(
                            "the store accepted a write to task {} from {} while {} held it at epoch {} (write: {} at epoch {})",
                            task.0,
                            o,
                            fmt_owner(b.owner),
                            b.epoch,
                            fmt_state(new.state),
                            new.epoch
                        ),
                    );
                } else if b.state == TaskState::Pending && !claim {
                    verdicts.report_with(
                        Invariant::NoDoubleOwnership,
                        time_us,
                        Some(task),
                        move || format!(
                            "{} wrote task {} while it was pending and not claimed by it (write: {} owner {} epoch {})",
                            o,
                            task.0,
                            fmt_state(new.state),
                            fmt_owner(new.owner),
                            new.epoch
                        ),
                    );
                }
            }
        }
        if new.state == TaskState::Running
            && let Some(owner) = new.owner
        {
            track.claim_epoch(verdicts, time_us, task, new.epoch, owner);
        }
        match writer {
            Writer::Worker(o) => self
                .oracle
                .worker_task_write(verdicts, time_us, decided_us, o, task, before, new),
            Writer::Reclaimer(id) => self
                .oracle
                .reclaimer_task_write(verdicts, time_us, decided_us, id, task, before, new),
            Writer::External => {}
        }
        // `on_effect` looks for the first change to an epoch above a token:
        // never to epoch 0, the creation's, which is left out. So a task
        // claimed, re-queued and claimed again still fits in place (it grew
        // a heap list before).
        if track.doc.is_none_or(|d| d.epoch != new.epoch) && new.epoch != 0 {
            assert!(
                track.epoch_changes.len() < 1 << 20,
                "unbounded epoch history"
            );
            track.epoch_changes.push((time_us, new.epoch));
        }
        track.doc = Some(*new);
        // Last: it needs the whole checker, and judges nothing.
        let was_done = before.is_some_and(|b| b.state == TaskState::Done);
        if new.state == TaskState::Done && !was_done {
            self.done += 1;
            if self.done == self.cfg.tasks_total {
                self.all_done_at_us = Some(time_us);
                self.keep_stop_after();
                return true;
            }
        } else if was_done && new.state != TaskState::Done {
            self.done -= 1;
            self.all_done_at_us = None;
            self.keep_stop_after();
            return true;
        }
        false
    }

    /// Judge one line of the effect ledger.
    ///
    /// What fencing can and cannot promise decides the rules here. A pause
    /// between a worker's last lease check and its call going out is invisible
    /// to the worker, so "no call lands after the claim was superseded" is not
    /// achievable. What is: (1) a worker never *decides* a call after its claim
    /// was superseded (self-fencing), (2) a service never applies a lower epoch
    /// after it accepted a higher one for the task (fencing at the resource),
    /// (3) no two workers share an epoch, (4) each step applied exactly once.
    // Inlined into `effect`: one call per ledger line instead of two.
    #[inline(always)]
    fn on_effect(&mut self, time_us: u64, writer: Writer, effect: &EffectLine) {
        let call = &effect.call;
        let task = TaskId(u32::try_from(call.resource).unwrap_or(u32::MAX));
        let (step, token, service) = (call.step, call.token, call.service.0);
        let Some(track) = self.tasks.get_mut(task.0 as usize) else {
            let service_name = self.cfg.service_name(service);
            self.verdicts.report(
                Invariant::ExactlyOnceEffects,
                time_us,
                Some(task),
                format_args!(
                    "{service_name} was called for task {} which does not exist",
                    task.0
                ),
            );
            return;
        };
        let accepted = matches!(
            effect.outcome,
            EffectReply::Applied | EffectReply::Deduplicated
        );
        // Every call a worker decided is judged against its lease, refused
        // or failed ones too: they did no harm, but were still decided.
        if let Writer::Worker(owner) = writer {
            self.oracle.worker_act(
                &mut self.verdicts,
                time_us,
                effect.decided_us,
                owner,
                task,
                token,
                "call a service",
            );
        }
        if !accepted {
            return;
        }
        let superseded_at_us = track
            .epoch_changes
            .find(|(_, e)| *e > token)
            .map(|(t, e)| (*t, *e));
        let highest = track.service_tokens.find_mut(|(s, _)| *s == service);
        let lower_than_accepted = match highest {
            Some((_, h)) => {
                let was = *h;
                *h = was.max(token);
                (token < was).then_some(was)
            }
            None => {
                track.service_tokens.push((service, token));
                None
            }
        };
        let applied = if effect.outcome == EffectReply::Applied {
            let steps = self.cfg.steps_per_task as usize;
            let in_range = (step as usize) < steps;
            match in_range.then(|| &mut self.applied[task.0 as usize * steps + step as usize]) {
                Some(n) => {
                    *n += 1;
                    Some(*n)
                }
                None => {
                    let cfg = &self.cfg;
                    self.verdicts.report_with(Invariant::ExactlyOnceEffects, time_us, Some(task), move || {
                        let (steps, service_name) = (cfg.steps_per_task, cfg.service_name(service));
                        format!(
                            "{service_name} applied step {step} of task {} which has only {steps} steps",
                            task.0
                        )
                    });
                    return;
                }
            }
        } else {
            None
        };
        let Writer::Worker(owner) = writer else {
            return;
        };
        let cfg = &self.cfg;
        if let Some(n) = applied.filter(|n| *n > 1) {
            self.verdicts.report_with(Invariant::ExactlyOnceEffects, time_us, Some(task), move || {
                let service_name = cfg.service_name(service);
                format!(
                    "{service_name} applied step {step} of task {} a {} time (this one from {owner} at epoch {token})",
                    task.0,
                    ordinal(n)
                )
            });
        }
        if let Some((at_us, newer)) = superseded_at_us
            && effect.decided_us > at_us
        {
            let (decided_us, outcome) = (effect.decided_us, effect.outcome);
            self.verdicts.report_with(Invariant::NoDoubleOwnership, time_us, Some(task), move || {
                let service_name = cfg.service_name(service);
                format!(
                    "{owner} decided to call {service_name} for step {step} of task {} at epoch {token} at {}, after the task had moved to epoch {newer} at {}; the service accepted it ({})",
                    task.0,
                    fmt_s(decided_us),
                    fmt_s(at_us),
                    if outcome == EffectReply::Applied { "applied" } else { "deduplicated" },
                )
            });
        }
        if let (Some(was), Some(_)) = (lower_than_accepted, applied) {
            self.verdicts.report_with(Invariant::NoDoubleOwnership, time_us, Some(task), move || {
                let service_name = cfg.service_name(service);
                format!(
                    "{service_name} applied step {step} of task {} from {owner} at epoch {token} after it had already accepted epoch {was} for that task",
                    task.0
                )
            });
        }
        track.claim_epoch(&mut self.verdicts, time_us, task, token, owner);
    }

    fn on_fault(&mut self, time_us: u64, fault: &Fault) {
        self.pickup.judge(&mut self.verdicts, &self.oracle, time_us);
        self.oracle.fault(time_us, fault);
        match *fault {
            Fault::Crash { node, .. } | Fault::CrashAt { node, .. } => {
                self.pickup.down(&self.oracle, node)
            }
            Fault::Restart { node, incarnation } => {
                self.pickup
                    .restart(&self.oracle, time_us, node, incarnation)
            }
            Fault::StoreOutage { .. } | Fault::StoreRecovered { .. } => {}
            Fault::Pause { node, .. }
            | Fault::PauseAt { node, .. }
            | Fault::Resume { node }
            | Fault::ClockJump { node, .. }
            | Fault::Message { node, .. }
            | Fault::Partition { node, .. }
            | Fault::PartitionHealed { node, .. } => self.pickup.touched(&self.oracle, node),
        }
    }

    fn on_heal(&mut self, time_us: u64) {
        assert!(self.heal_at_us.is_none(), "two heal phases");
        self.oracle.heal(time_us);
        self.pickup.heal(&self.oracle, time_us);
        self.heal_at_us = Some(time_us);
        let unfinished = self.cfg.tasks_total - self.done;
        let start_us = time_us.max(self.cfg.last_arrival_ms * 1_000);
        let deadline_us = self.cfg.liveness.deadline_us(start_us, unfinished);
        self.deadline_us = Some(deadline_us.expect("liveness deadline past u64 µs"));
        self.keep_stop_after();
    }

    /// Judge what can only be judged at the end. Call once, after the run.
    pub fn finish(&mut self, end_us: u64) {
        self.finish_judging(end_us, true);
    }

    /// [`Self::finish`] for a run its own limits stopped before the
    /// no-lost-task deadline: a task not done by then is still inside its
    /// bound, so none is judged lost (the host reports the run cut short).
    pub fn finish_cut_short(&mut self, end_us: u64) {
        self.finish_judging(end_us, false);
    }

    fn finish_judging(&mut self, end_us: u64, judge_lost: bool) {
        assert!(!self.finished, "finish called twice");
        self.finished = true;
        self.pickup.judge(&mut self.verdicts, &self.oracle, end_us);
        self.oracle.finish(&mut self.verdicts, end_us);
        for (i, track) in self.tasks.iter().enumerate() {
            if let Some(doc) = track.doc
                && doc.state == TaskState::Running
                && let Some(owner) = doc.owner
            {
                self.oracle.still_running(
                    &mut self.verdicts,
                    end_us,
                    TaskId(i as u32),
                    owner,
                    doc.epoch,
                );
            }
        }
        let mut lost = Vec::new();
        let mut unapplied = Vec::new();
        let steps = self.cfg.steps_per_task as usize;
        for (i, track) in self.tasks.iter().enumerate() {
            match track.doc {
                Some(doc) if doc.state == TaskState::Done => {
                    for (step, n) in self.applied[i * steps..][..steps].iter().enumerate() {
                        if *n == 0 {
                            unapplied.push((TaskId(i as u32), step, doc));
                        }
                    }
                }
                doc => lost.push((TaskId(i as u32), doc)),
            }
        }
        for (task, step, doc) in unapplied {
            let service = self.cfg.step_names.get(step).cloned().unwrap_or_default();
            self.verdicts.report(
                Invariant::ExactlyOnceEffects,
                end_us,
                Some(task),
                format_args!(
                    "task {} is done (epoch {}, by {}) but step {step} ({service}) was never applied",
                    task.0,
                    doc.epoch,
                    fmt_owner(doc.owner)
                ),
            );
        }
        if !judge_lost {
            return;
        }
        let heal_us = self.heal_at_us.unwrap_or(0);
        let bound = self.deadline_us.map_or(0, |d| d.saturating_sub(heal_us));
        let total_lost = lost.len();
        for (n, (task, doc)) in lost.into_iter().enumerate() {
            if n == MAX_NAMED_LOST_TASKS {
                self.verdicts.report(
                    Invariant::NoLostTask,
                    end_us,
                    None,
                    format_args!(
                        "... and {} more tasks not done",
                        total_lost - MAX_NAMED_LOST_TASKS
                    ),
                );
                break;
            }
            let what = match doc {
                None => "was never created".to_string(),
                Some(d) => format!(
                    "is {} (owner {}, epoch {}, {}/{} steps done)",
                    fmt_state(d.state),
                    fmt_owner(d.owner),
                    d.epoch,
                    d.steps_done,
                    d.steps_total
                ),
            };
            self.verdicts.report(
                Invariant::NoLostTask,
                end_us,
                Some(task),
                format_args!(
                    "task {} {what}; not done {} after the heal phase began (bound {})",
                    task.0,
                    fmt_s(end_us.saturating_sub(heal_us)),
                    fmt_s(bound)
                ),
            );
        }
    }
}

fn ordinal(n: u32) -> String {
    match n {
        2 => "second".into(),
        3 => "third".into(),
        n => format!("{n}th"),
    }
}

fn task_of_key(key: &DocKey) -> Option<TaskId> {
    match key {
        DocKey::Task { task } => Some(*task),
        _ => None,
    }
}

impl LeaseChecker {
    /// Whether the checker reads records of this kind at all: store writes,
    /// effect ledger lines and the heal phase. The rest (steps, losses,
    /// the nodes' own events, exits) it ignores, so a host may skip them.
    pub fn judges<K, V, E>(kind: &RecordKind<'_, K, V, E>) -> bool {
        matches!(
            kind,
            RecordKind::Store { .. }
                | RecordKind::Effect { .. }
                | RecordKind::HealPhase
                | RecordKind::Fault(_)
                | RecordKind::Lost { .. }
                | RecordKind::Exit { .. }
        )
    }

    /// Whether the checker reads this store record: writes (accepted or
    /// refused: a refused write was still decided) and deletes. The rest
    /// (reads, scans) [`Self::store`] turns away, so a host may skip them.
    pub fn judges_store<K, V>(op: &StoreRequest<K, V>, reply: &StoreReply<K, V>) -> bool {
        matches!(
            (op, reply),
            (_, StoreReply::Written { .. } | StoreReply::Conflict { .. })
                | (StoreRequest::DeleteIfVersion { .. }, StoreReply::Deleted)
        ) || matches!(
            (op, reply),
            (
                StoreRequest::CreateIfAbsent { .. }
                    | StoreRequest::PutIfVersion { .. }
                    | StoreRequest::PutUnconditional { .. },
                StoreReply::Unavailable
            )
        )
    }

    /// A store record ([`RecordKind::Store`]): what [`Observer::record`]
    /// does with one, for a host that already knows the record's kind.
    #[inline]
    pub fn store(
        &mut self,
        time_us: u64,
        actor: Actor,
        op: &StoreRequest<DocKey, DocValue>,
        reply: &StoreReply<DocKey, DocValue>,
        before: Option<&Document<DocKey, DocValue>>,
        decided_us: u64,
    ) {
        // The reply first: it turns most records (reads, scans) away in
        // one test.
        let lease_doc = match (op, reply) {
            (_, StoreReply::Written { .. }) => match task_write(op) {
                Some((task, new)) => {
                    let before = before.and_then(|d| d.value.as_task());
                    // The stop time is the host's to read.
                    let _ = self.task_write(time_us, decided_us, actor, task, before, new);
                    false
                }
                None => true,
            },
            (_, StoreReply::Conflict { .. } | StoreReply::Unavailable) => {
                if let Some((task, new)) = task_write(op) {
                    self.refused_task_write(time_us, decided_us, actor, task, new);
                } else {
                    self.lease_create_decided(time_us, actor, op);
                }
                false
            }
            (StoreRequest::DeleteIfVersion { key, .. }, StoreReply::Deleted) => {
                let Some(task) = task_of_key(key) else {
                    return self.lease_doc(time_us, decided_us, actor, op, reply, before);
                };
                let writer = self.writer(actor);
                self.verdicts.report(
                    Invariant::NoLostTask,
                    time_us,
                    Some(task),
                    format_args!("task {} was deleted by {:?}", task.0, writer),
                );
                false
            }
            _ => false,
        };
        if lease_doc {
            self.lease_doc(time_us, decided_us, actor, op, reply, before);
        }
    }

    /// A write or delete of a document that is not a task's: the lease
    /// oracles judge those of heartbeat and task lease documents.
    fn lease_doc(
        &mut self,
        time_us: u64,
        decided_us: u64,
        actor: Actor,
        op: &StoreRequest<DocKey, DocValue>,
        reply: &StoreReply<DocKey, DocValue>,
        before: Option<&Document<DocKey, DocValue>>,
    ) {
        self.pickup.judge(&mut self.verdicts, &self.oracle, time_us);
        let who = self.oracle_actor(actor);
        self.oracle.lease_doc(
            &mut self.verdicts,
            time_us,
            decided_us,
            who,
            op,
            reply,
            before,
        );
        if let Some(&DocKey::Member { owner }) = op.key() {
            self.pickup.lease_changed(&self.oracle, owner);
        }
        self.lease_create_decided(time_us, actor, op);
    }

    /// A task lease's create by a worker reached the store (landed or not):
    /// in task mode, the first half of a claim decision.
    fn lease_create_decided(
        &mut self,
        time_us: u64,
        actor: Actor,
        op: &StoreRequest<DocKey, DocValue>,
    ) {
        if let StoreRequest::CreateIfAbsent {
            key: DocKey::TaskLease { .. },
            ..
        } = op
            && let Writer::Worker(owner) = self.writer(actor)
        {
            self.pickup.judge(&mut self.verdicts, &self.oracle, time_us);
            self.pickup.claim_decided(&self.oracle, time_us, owner);
        }
    }

    /// An accepted write of task document `new` over `before`: what
    /// [`Self::store`] does with one, for a host that already took the
    /// record apart (the run's observer, which counts the same write).
    /// Answers whether [`Self::stop_after_us`] may have moved: only when
    /// the count of tasks done reaches or leaves the total, so a host that
    /// keeps a copy re-reads it then alone.
    #[inline(always)]
    pub fn task_write(
        &mut self,
        time_us: u64,
        decided_us: u64,
        actor: Actor,
        task: TaskId,
        before: Option<&TaskDoc>,
        new: &TaskDoc,
    ) -> bool {
        let writer = self.writer(actor);
        self.on_task_write(time_us, decided_us, task, writer, before, new)
    }

    /// A task write the store refused (a conflict, or unavailable): it
    /// changed nothing, but a worker still decided it, and it must have
    /// decided it within its lease.
    #[cold]
    pub fn refused_task_write(
        &mut self,
        time_us: u64,
        decided_us: u64,
        actor: Actor,
        task: TaskId,
        new: &TaskDoc,
    ) {
        if let Writer::Worker(owner) = self.writer(actor) {
            if new.state == TaskState::Running && new.owner == Some(owner) {
                self.pickup.judge(&mut self.verdicts, &self.oracle, time_us);
                self.pickup.claim_decided(&self.oracle, time_us, owner);
            }
            self.oracle.worker_task_write(
                &mut self.verdicts,
                time_us,
                decided_us,
                owner,
                task,
                None,
                new,
            );
        }
    }

    /// An effect ledger line ([`RecordKind::Effect`]): what
    /// [`Observer::record`] does with one, for a host that already knows the
    /// record's kind.
    #[inline]
    pub fn effect(
        &mut self,
        time_us: u64,
        actor: Actor,
        call: EffectRequest,
        outcome: EffectReply,
        decided_us: u64,
    ) {
        let writer = self.writer(actor);
        let line = EffectLine {
            call,
            outcome,
            decided_us,
        };
        self.on_effect(time_us, writer, &line);
    }
}

impl Observer<DocKey, DocValue, LeaseEvent> for LeaseChecker {
    fn record(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        match record.kind {
            RecordKind::Store {
                actor,
                op,
                reply,
                before,
                decided_us,
                ..
            } => self.store(record.time_us, actor, op, reply, before, decided_us),
            RecordKind::Effect {
                actor,
                call,
                outcome,
                decided_us,
                ..
            } => self.effect(record.time_us, actor, call, outcome, decided_us),
            RecordKind::HealPhase => self.on_heal(record.time_us),
            RecordKind::Fault(fault) => self.on_fault(record.time_us, &fault),
            RecordKind::Lost { node, .. } => {
                self.pickup
                    .judge(&mut self.verdicts, &self.oracle, record.time_us);
                self.oracle.lost(record.time_us, node);
                self.pickup.touched(&self.oracle, node);
            }
            RecordKind::Exit { node, incarnation } => {
                self.pickup
                    .judge(&mut self.verdicts, &self.oracle, record.time_us);
                let role = self.role(node);
                self.oracle
                    .exit(&mut self.verdicts, record.time_us, node, role, incarnation);
                self.pickup.down(&self.oracle, node);
            }
            ref kind => debug_assert!(!Self::judges(kind), "a kind judged but not handled"),
        }
    }

    fn should_stop(&self, now_us: u64) -> bool {
        now_us > self.stop_after_us()
    }
}
