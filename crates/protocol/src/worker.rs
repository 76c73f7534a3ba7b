//! The worker: one heartbeat document, claims with compare-and-set, steps run
//! through idempotent effects, progress recorded conditionally, self-fencing.
//! In task heartbeat mode it keeps one lease per running task instead of a
//! heartbeat document (see `task_lease`).

mod claim_spread;
mod task_lease;

use crate::config::{HeartbeatMode, ProtocolConfig};
use crate::coverage::CoveragePoint;
use crate::docs::{DocKey, DocValue, MemberDoc, MemberStatus, Owner, TaskDoc, TaskId, TaskState};
use crate::events::{FenceCause, LeaseEvent};
use crate::outbox::Outbox;
use crate::sorted_vec_map::{SortedVecMap, SortedVecSet};
use crate::variant::Variant;
use crate::{LeaseInput, LeaseOutput};

/// Every this many polls a worker that spreads its claims reads the whole
/// pending index (docs/protocol.md, "Spreading claims", rule 4): what the
/// `work-conserving` oracle's pickup bound counts polls in.
pub const CLAIM_LOOK_AROUND_POLLS: u8 = claim_spread::LOOK_EVERY;
use claim_spread::ClaimSpread;
use leasehold_interface::{
    Document, EffectReply, EffectRequest, Input, Instant, LocalTime, StoreReply, StoreRequest,
    Version,
};
use std::sync::Arc;

/// Pending-task candidates fetched per poll.
const POLL_BATCH: u32 = 16;
/// `Worker::fence_at` when nothing fences us.
const NEVER: Instant = Instant::from_micros(u64::MAX);
/// Claim conflicts in a row before the worker backs off to its poll interval.
const MAX_CLAIM_RETRIES: u8 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Registering,
    Active,
    /// Fenced or exited: ignores every input.
    Stopped,
}

/// What a request is for, kept with it until its reply. Small, since each
/// moves in and out of the outbox: the claim itself stays in `doubtful`, and
/// the documents a claim or a completion writes are rebuilt from what
/// differs (owner and state are known).
#[derive(Clone, Copy, Debug)]
enum Purpose {
    Register {
        sent_at: Instant,
    },
    Heartbeat {
        sent_at: Instant,
        beats: u64,
    },
    Poll,
    /// The claim is `doubtful[task].claimed`.
    Claim {
        task: TaskId,
    },
    ClaimCheck {
        task: TaskId,
    },
    Effect {
        task: TaskId,
        epoch: u64,
        step: u32,
    },
    Progress {
        task: TaskId,
        epoch: u64,
        step: u32,
    },
    /// Planted bug `completion-without-epoch-check`: the read before
    /// completing the run at `epoch` (see `completed_doc`).
    CompletionCheck {
        task: TaskId,
        epoch: u64,
        steps_total: u32,
    },
    // Task heartbeat mode only (see `task_lease`). What else a creation or
    // a renewal needs at its reply is kept with it (`lease_creates`, the
    // lease's `renewal`): 24 bytes a purpose, not 40, moved on every reply.
    LeaseCreate {
        task: TaskId,
    },
    LeaseRenew {
        task: TaskId,
        epoch: u64,
    },
    LeaseRelease,
}

/// A claim's task document without what every claim of ours shares (running,
/// owned by us): see `claimed_doc`.
#[derive(Clone, Copy, Debug)]
struct Claimed {
    epoch: u64,
    steps_done: u32,
    steps_total: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    Effect,
    Progress,
    RetryEffectAt(Instant),
    RetryProgressAt(Instant),
}

impl Wait {
    fn is_retry(self) -> bool {
        matches!(self, Wait::RetryEffectAt(_) | Wait::RetryProgressAt(_))
    }
}

/// A claim we sent and have not settled. While its reply is awaited it holds
/// a slot. If the reply never comes the claim is in doubt: it may still land
/// (a slow network), so it keeps the slot until the task document shows either
/// our claim or a version other than the one our claim expected.
#[derive(Clone, Copy, Debug)]
struct Doubt {
    claimed: TaskDoc,
    expected: Version,
    in_doubt: bool,
    recheck_at: Option<Instant>,
}

#[derive(Clone, Copy, Debug)]
struct Run {
    epoch: u64,
    /// Version of the task document after our last write that landed.
    version: Version,
    steps_total: u32,
    /// The step being executed (0-based).
    step: u32,
    wait: Wait,
}

pub struct Worker {
    cfg: Arc<ProtocolConfig>,
    me: Owner,
    /// Changed only by `set_phase`, which keeps `plain` in step.
    phase: Phase,
    /// Active in worker heartbeat mode (`phase == Active && !task_mode`):
    /// nearly every input and every `poll_timeout` finds the worker so, and
    /// tests this one flag where it tested the phase and the mode.
    plain: bool,
    member_version: Version,
    beats: u64,
    /// The local send time of the newest heartbeat known to have landed
    /// plus `self_fence_after_ms`, once one has: when we stop trusting our
    /// lease. Kept, not derived, since every `poll_timeout` reads it; the
    /// send time itself is not kept (a later send is a later deadline, and
    /// a deadline saturated at the end of time stays there), which makes
    /// room for `fence_at` (see `store_timeout_us`). Zero until one has
    /// (no deadline is zero: `self_fence_after_ms` is positive), not an
    /// `Option`: its word made room for `spread`.
    lease_deadline: Instant,
    /// When the next input fences us: `lease_deadline` once we are active
    /// and self-fencing, else never (`Instant::MAX`-like, `u64::MAX` µs, a
    /// reading no local clock reaches). One compare per input, where the
    /// phase, the variant behind `cfg` and the `Option` were three tests.
    fence_at: Instant,
    /// `cfg.variant`, `cfg.heartbeat_mode == Task` and
    /// `cfg.slots_per_worker`, copied: read on every input and by every
    /// `poll_timeout`, each a load of `cfg` first otherwise. Room for them
    /// (and `fence_at`) in the reclaimer's size: the two poll counters
    /// below are bytes.
    variant: Variant,
    task_mode: bool,
    /// A `u16` (asserted to fit by `new`), as `busy`, so the two compare
    /// as they are and `busy` finds room in the worker.
    slots_per_worker: u16,
    /// `cfg.self_fence_after_ms()`, computed once (a division by a million
    /// and three saturating subtractions per read otherwise).
    self_fence_after_ms: u64,
    /// `cfg.store_timeout_ms` and `cfg.effect_timeout_ms` in microseconds,
    /// computed once: every request's deadline adds one (a multiply with
    /// its overflow check per request otherwise). Room for them was made
    /// in `renewed_at` (since gone) and `first_register_at`: a worker
    /// larger than a reclaimer less its first word turns the host's node
    /// enum around (the worker holds the niche, and every test for a
    /// worker compares twice), which cost more than these save: a worker
    /// as large as a reclaimer grew the host's slot 8 bytes and cost
    /// 0.37 M in `step` and `rearm_timer` for 0.55 M saved here.
    store_timeout_us: u64,
    effect_timeout_us: u64,
    heartbeat_in_flight: bool,
    /// When the next heartbeat is due; the end of time (`NEVER`) while one
    /// is in flight (its reply or timeout sets it again), so the checks
    /// after every input and in every `poll_timeout` are one compare or
    /// one `min`, not a test of `heartbeat_in_flight` too.
    next_heartbeat_at: Instant,
    polling: bool,
    /// When the next poll is due; the end of time (`NEVER`) while one is in
    /// flight (every reply or timeout that ends it sets this again), so the
    /// checks after every input and in every `poll_timeout` need no test of
    /// `polling` too (see `next_poll_at`).
    next_poll_at: Instant,
    /// Below `MAX_CLAIM_RETRIES`.
    claim_retries: u8,
    /// Candidates the last poll saw: how many claims may race at once
    /// before a conflict means "nothing left for us" rather than "try the
    /// next one".
    last_poll_candidates: u8,
    /// Which part of the pending index polls read, and which candidate
    /// they claim (`claim_spread`).
    spread: Box<ClaimSpread>,
    /// The wait after the next empty poll: doubles per empty poll from
    /// `poll_interval_ms` up to `idle_poll_max_ms`.
    idle_poll_ms: u64,
    /// When to retry registering after a lost or refused attempt; the end
    /// of time (`NEVER`) for none, not an `Option`: the tag's word made
    /// room for `due_from`. No clock reads the end of time, and a
    /// retry is never set there (`now`, or `now` plus the backoff).
    retry_register_at: Instant,
    /// Send time of our first registration attempt, once `register_sent`:
    /// if a retry conflicts with an earlier attempt that landed, the lease
    /// counts from here.
    first_register_at: Instant,
    register_sent: bool,
    /// At most `slots_per_worker` entries between them, in task order.
    runs: SortedVecMap<TaskId, Run>,
    /// Runs whose `wait` is a retry: `poll_timeout` and `on_time` walk the
    /// runs for due retries only when there are some (rarely: every input
    /// asks). Kept by `set_wait` and `remove_run`. At most the runs, so at
    /// most `slots_per_worker` (asserted to fit by `new`): a `u16` leaves
    /// room for `plain` within the reclaimer's size.
    retrying: u16,
    /// `runs.len() + doubtful.len()`, kept: a plain worker's busy slots,
    /// asked after every input (in `poll_timeout` and `on_time_plain`),
    /// one load where two lengths were loaded and added.
    busy: u16,
    doubtful: SortedVecMap<TaskId, Doubt>,
    /// No claim in doubt is due for a recheck, and no run for a retry,
    /// before this: at or below every `recheck_at` and every retry's time
    /// (lowered by `recheck_later` and `set_retry`, raised only by
    /// `recheck_and_retry`), the end of time (`NEVER`) when none is set.
    /// A lower bound, not the minimum (a doubt or run removed leaves it
    /// low), so `on_time` walks the doubts and runs only when one may be
    /// due: one compare per input, where "any doubts at all" sent most
    /// walks home empty and "any retries" was a second test.
    due_from: Instant,
    /// Task mode: lease creations on their way. Each holds a slot (see
    /// `busy_slots`): at most `slots_per_worker`.
    lease_creates: SortedVecMap<TaskId, task_lease::LeaseCreation>,
    /// Task heartbeat mode: the lease held on each task being claimed or run.
    /// Each holds a slot (that of its claim or run, or its own; see
    /// `busy_slots`): at most `slots_per_worker`.
    leases: SortedVecMap<TaskId, task_lease::TaskLease>,
    /// Task mode: leases released (task done, or claim settled without a
    /// run) while a renewal was in flight; the renewal's reply deletes them.
    /// A lease given up by `abandon` is never here: its task may still run
    /// under it in the store, so only a reclaimer may settle it. These hold
    /// no slot (the slot is free again): the bound is that each entry has its
    /// one renewal in flight, so at most `MAX_PENDING_REQUESTS`; in practice
    /// the leases released within one `store_timeout_ms`.
    releasing: SortedVecSet<TaskId>,
    out: Outbox<Purpose>,
    /// Wall-clock reading at the current input: stamps documents, nothing more.
    wall_ms: u64,
}

const _: () = assert!(
    std::mem::size_of::<Purpose>() == 24,
    "a purpose is three words"
);

// See `store_timeout_us`: the host's node enum keeps the reclaimer as its
// largest variant, with its tag in the reclaimer's first word (a niche) and
// a worker beside it.
const _: () = assert!(
    std::mem::size_of::<Worker>() + 8 <= std::mem::size_of::<crate::Reclaimer>(),
    "a worker no larger than a reclaimer less a word"
);

impl Worker {
    pub fn new(cfg: Arc<ProtocolConfig>, me: Owner) -> Worker {
        debug_assert!(cfg.validate().is_ok());
        assert!(me.incarnation > 0, "incarnations start at 1");
        assert!(
            cfg.slots_per_worker <= u32::from(u16::MAX),
            "`retrying` counts runs in a u16"
        );
        let poll_interval_ms = cfg.poll_interval_ms;
        let (variant, slots_per_worker) = (cfg.variant, cfg.slots_per_worker as u16);
        let task_mode = cfg.heartbeat_mode == HeartbeatMode::Task;
        let self_fence_after_ms = cfg.self_fence_after_ms();
        // What `Instant::plus_ms` multiplies out, saturating alike.
        let store_timeout_us = cfg.store_timeout_ms.saturating_mul(1_000);
        let effect_timeout_us = cfg.effect_timeout_ms.saturating_mul(1_000);
        let me = if cfg.variant == Variant::ReusedIdentity {
            // Planted bug: every incarnation calls itself the first one.
            Owner {
                incarnation: 1,
                ..me
            }
        } else {
            me
        };
        Worker {
            cfg,
            me,
            phase: Phase::Registering,
            plain: false,
            member_version: 0,
            beats: 0,
            lease_deadline: Instant::ZERO,
            fence_at: NEVER,
            variant,
            task_mode,
            slots_per_worker,
            self_fence_after_ms,
            store_timeout_us,
            effect_timeout_us,
            heartbeat_in_flight: false,
            next_heartbeat_at: Instant::ZERO,
            polling: false,
            next_poll_at: Instant::ZERO,
            claim_retries: 0,
            last_poll_candidates: 0,
            spread: ClaimSpread::new(me),
            idle_poll_ms: poll_interval_ms,
            retry_register_at: NEVER,
            first_register_at: Instant::ZERO,
            register_sent: false,
            runs: SortedVecMap::new(),
            retrying: 0,
            busy: 0,
            doubtful: SortedVecMap::new(),
            due_from: NEVER,
            lease_creates: SortedVecMap::new(),
            leases: SortedVecMap::new(),
            releasing: SortedVecSet::new(),
            out: Outbox::new(),
            wall_ms: 0,
        }
    }

    pub fn owner(&self) -> Owner {
        self.me
    }

    pub fn running_tasks(&self) -> usize {
        self.runs.len()
    }

    pub fn poll_output(&mut self) -> Option<LeaseOutput> {
        self.out.poll()
    }

    /// Every queued output, in order, appended to `out` (what a host does
    /// with `poll_output` in a loop, as one copy).
    pub fn drain_outputs(&mut self, out: &mut Vec<LeaseOutput>) {
        self.out.drain_into(out);
    }

    /// `handle_input`, then `drain_outputs` into `out` (the host's empty
    /// vector: the outputs change hands without a copy).
    pub fn step(&mut self, time: LocalTime, input: &LeaseInput, out: &mut Vec<LeaseOutput>) {
        self.handle_input(time, input);
        self.out.drain_into(out);
    }

    /// Timeouts (a quarter of the inputs) and empty pages (a fifth) apart:
    /// a plain worker's skip the replies' dispatch and their large frame.
    /// Out of line, so the host's step keeps one call.
    #[inline(never)]
    pub fn handle_input(&mut self, time: LocalTime, input: &LeaseInput) {
        if let Input::Timeout = input {
            self.timeout(time);
        } else if let Input::StoreReply {
            reply: StoreReply::Scanned { docs, .. },
            ..
        } = input
            && docs.is_empty()
        {
            self.empty_page(time, input);
        } else {
            self.handle_any(time, input);
        }
    }

    /// `handle_input` for an empty page: nearly always a plain worker's
    /// poll finding nothing pending (a fifth of the inputs), handled in no
    /// frame (`on_poll_reply` for no documents, then `on_time_plain` as a
    /// timeout's). Any other goes to `handle_any` untouched.
    #[inline(never)]
    fn empty_page(&mut self, time: LocalTime, input: &LeaseInput) {
        let Input::StoreReply { request, .. } = *input else {
            unreachable!("handle_input sends store replies only")
        };
        // The poll is the newest request in flight nearly always (a plain
        // worker sends nothing while it waits for the page).
        if !self.plain() || !matches!(self.out.newest(request), Some(Purpose::Poll)) {
            return self.handle_any(time, input);
        }
        self.wall_ms = time.wall_ms;
        let now = time.mono;
        // Self-fencing first, as in `handle_any`.
        if self.self_fenced(now) {
            return;
        }
        let taken = self.out.take_newest(request);
        debug_assert!(matches!(taken, Purpose::Poll));
        // `on_poll_reply` with no documents: no candidates.
        self.last_poll_candidates = 0;
        self.spread.page_read(0, false);
        self.poll_idle(now);
        self.on_time_plain_by_tail_calls(now);
    }

    /// `handle_input` for a timeout, a plain worker's in no frame.
    #[inline(never)]
    fn timeout(&mut self, time: LocalTime) {
        if !self.plain() {
            return self.handle_any(time, &Input::Timeout);
        }
        self.wall_ms = time.wall_ms;
        let now = time.mono;
        // Self-fencing first, as in `handle_any`.
        if self.self_fenced(now) {
            return;
        }
        self.on_time_plain_by_tail_calls(now);
    }

    /// `on_time_plain`, its rarer steps (an expiry, a heartbeat, a recheck
    /// or retry: about one timeout in four) by tail calls, so that its
    /// caller keeps no frame. No clock reads the end of time: each is
    /// `NEVER` when unset.
    #[inline(always)]
    fn on_time_plain_by_tail_calls(&mut self, now: Instant) {
        debug_assert!(self.plain());
        if now >= self.out.earliest_or_never() {
            return self.on_time_plain_out_of_line(now);
        }
        if now >= self.next_heartbeat_at() {
            return self.heartbeat_then_rest(now);
        }
        self.after_heartbeat(now);
    }

    /// `on_time_plain` for a timeout that expires a request (rare).
    #[inline(never)]
    fn on_time_plain_out_of_line(&mut self, now: Instant) {
        self.on_time_plain(now);
    }

    /// `on_time_plain` from the heartbeat on, for a timeout that sends one
    /// (one in five): the send in place when there is room (no frame).
    #[inline(never)]
    fn heartbeat_then_rest(&mut self, now: Instant) {
        if !self.out.sends_in_place() {
            return self.heartbeat_making_room(now);
        }
        self.send_heartbeat_to(now, true);
        self.after_heartbeat(now);
    }

    #[cold]
    #[inline(never)]
    fn heartbeat_making_room(&mut self, now: Instant) {
        self.send_heartbeat(now);
        self.after_heartbeat(now);
    }

    /// `on_time_plain` after its heartbeat: rechecks and retries out of
    /// line (their walks need a frame), else the poll by a tail call.
    #[inline(always)]
    fn after_heartbeat(&mut self, now: Instant) {
        if now >= self.due_from {
            return self.runs_then_poll(now);
        }
        self.poll_if_due(now);
    }

    #[inline(never)]
    fn runs_then_poll(&mut self, now: Instant) {
        self.on_time_runs(now);
        self.poll_if_due(now);
    }

    /// `on_time_plain`'s last step.
    #[inline(always)]
    fn poll_if_due(&mut self, now: Instant) {
        // Worker mode holds no leases and creates none (both only follow
        // `create_task_lease`): the busy slots are the runs and the claims,
        // as in `poll_timeout`, without `busy_slots`' lease terms.
        debug_assert!(self.leases.len() == 0 && self.lease_creates.len() == 0);
        // No clock reads the end of time: no poll is in flight.
        if now >= self.next_poll_at() && self.busy() < self.slots_per_worker {
            self.poll(now);
        }
    }

    /// The only writer of `phase`, so `plain` stays in step with it.
    fn set_phase(&mut self, phase: Phase) {
        self.phase = phase;
        self.plain = phase == Phase::Active && !self.task_mode();
    }

    /// `plain`, asserted in step with the phase and the mode.
    #[inline(always)]
    fn plain(&self) -> bool {
        debug_assert_eq!(self.plain, self.phase == Phase::Active && !self.task_mode());
        self.plain
    }

    fn variant(&self) -> Variant {
        debug_assert_eq!(self.variant, self.cfg.variant);
        self.variant
    }

    fn task_mode(&self) -> bool {
        debug_assert_eq!(
            self.task_mode,
            self.cfg.heartbeat_mode == HeartbeatMode::Task
        );
        self.task_mode
    }

    /// `next_heartbeat_at`, asserted `NEVER` while a heartbeat is in flight.
    #[inline]
    fn next_heartbeat_at(&self) -> Instant {
        debug_assert!(!self.heartbeat_in_flight || self.next_heartbeat_at == NEVER);
        self.next_heartbeat_at
    }

    /// `next_poll_at`, asserted `NEVER` while a poll is in flight.
    #[inline]
    fn next_poll_at(&self) -> Instant {
        debug_assert!(!self.polling || self.next_poll_at == NEVER);
        self.next_poll_at
    }

    fn lease_deadline(&self) -> Option<Instant> {
        let deadline = (self.lease_deadline != Instant::ZERO).then_some(self.lease_deadline);
        debug_assert_eq!(
            self.fence_at,
            match deadline {
                Some(d) if self.variant() != Variant::NoSelfFencing => d,
                _ => NEVER,
            }
        );
        deadline
    }

    /// Asked after every input. The earliest wakeup is a plain minimum over
    /// the candidates, with the end of time (`NEVER`) standing for "none":
    /// two instructions a candidate, where an `Option` per step was five.
    /// A minimum at the end of time is either no wakeup or a deadline there
    /// (an effect that waits forever, a saturated one): rare, and told
    /// apart by `poll_timeout_computed`, which also checks the rest in
    /// debug builds.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let next = if self.plain() {
            // `fence_at` is `NEVER` when nothing fences us, and so is the
            // lease deadline `poll_timeout_computed` considers then. The
            // next heartbeat is `NEVER` while one is in flight.
            let mut next = self
                .out
                .earliest_or_never()
                .min(self.fence_at)
                .min(self.next_heartbeat_at());
            // Worker mode holds no leases and creates none (both only
            // follow `create_task_lease`): the busy slots are the runs and
            // the claims.
            debug_assert!(self.leases.len() == 0 && self.lease_creates.len() == 0);
            // `NEVER` while a poll is in flight, so only the free slot is
            // tested, as a select: the two branches here were the re-arm's
            // most mispredicted (every step asks).
            let poll_at = if self.busy() < self.slots_per_worker {
                self.next_poll_at()
            } else {
                NEVER
            };
            next = next.min(poll_at);
            self.retry_and_recheck_wakeup(next)
        } else if self.phase == Phase::Stopped {
            return None;
        } else {
            self.unplain_wakeup()
        };
        if next == NEVER {
            return self.poll_timeout_at_end_of_time();
        }
        debug_assert_eq!(Some(next), self.poll_timeout_computed());
        Some(next)
    }

    /// `poll_timeout`'s candidates while registering or in task mode,
    /// `NEVER` for none. Out of line, so the common (`plain`) path keeps
    /// its registers.
    #[inline(never)]
    fn unplain_wakeup(&self) -> Instant {
        debug_assert_ne!(self.phase, Phase::Stopped);
        let mut next = self.out.earliest_or_never();
        if self.phase == Phase::Registering {
            return next.min(self.retry_register_at);
        }
        debug_assert!(self.task_mode(), "else `plain`");
        next = next.min(self.fence_at);
        next = self.task_mode_wakeup(next);
        self.retry_and_recheck_wakeup(next)
    }

    /// `next` or the earliest due retry of a run or recheck of a claim in
    /// doubt, if earlier.
    #[inline(always)]
    fn retry_and_recheck_wakeup(&self, mut next: Instant) -> Instant {
        // Neither is set, nearly always: `due_from` is at or below each
        // (and a time at the end of time could not lower `next`). One
        // compare, where the count of retries and the claims were two
        // tests and a loop's setup.
        if self.due_from == NEVER {
            debug_assert!(
                self.doubtful
                    .values()
                    .all(|d| d.recheck_at.is_none_or(|t| t == NEVER))
            );
            debug_assert!(self.runs.values().all(|r| match r.wait {
                Wait::RetryEffectAt(t) | Wait::RetryProgressAt(t) => t == NEVER,
                Wait::Effect | Wait::Progress => true,
            }));
            return next;
        }
        if self.retrying > 0 {
            for run in self.runs.values() {
                if let Wait::RetryEffectAt(t) | Wait::RetryProgressAt(t) = run.wait {
                    next = next.min(t);
                }
            }
        }
        // The early exit (nothing is due before zero) keeps LLVM from
        // unrolling the walk behind a trip-count division, as in
        // `outbox::earliest_of`: claims in doubt are one or two.
        for doubt in self.doubtful.values() {
            if let Some(t) = doubt.recheck_at {
                next = next.min(t);
                if next == Instant::ZERO {
                    break;
                }
            }
        }
        next
    }

    /// `poll_timeout`'s task-mode candidates (lease renewals and fences, the
    /// next poll) folded into `next`: out of line, so the worker-mode path
    /// keeps its registers.
    #[inline(never)]
    fn task_mode_wakeup(&self, mut next: Instant) -> Instant {
        if let Some(t) = self.task_lease_wakeup() {
            next = next.min(t);
        }
        if self.free_slots() > 0 {
            next = next.min(self.next_poll_at()); // `NEVER` while polling
        }
        next
    }

    /// `poll_timeout` when every candidate, if any, is at the end of time.
    #[cold]
    #[inline(never)]
    fn poll_timeout_at_end_of_time(&self) -> Option<Instant> {
        self.poll_timeout_computed()
    }

    /// The earliest wakeup, each candidate an `Option` (what `poll_timeout`
    /// computes faster).
    fn poll_timeout_computed(&self) -> Option<Instant> {
        if self.phase == Phase::Stopped {
            return None;
        }
        let mut next = self.out.earliest_deadline();
        let mut consider = |t: Instant| next = Some(next.map_or(t, |n: Instant| n.min(t)));
        if self.phase == Phase::Registering {
            if self.retry_register_at != NEVER {
                consider(self.retry_register_at);
            }
        } else {
            // A retry is due only while registering: `register` clears it
            // before every attempt, and only a lost or refused attempt (none
            // in flight then) sets it.
            debug_assert_eq!(self.retry_register_at, NEVER);
            // The lease deadline is `fence_at` whenever that is set (one test
            // for the variant and the `Option`); the rest is a deadline
            // saturated at the end of time, or none to fence by.
            if self.fence_at != NEVER {
                consider(self.fence_at);
            } else if self.variant() != Variant::NoSelfFencing
                && let Some(t) = self.lease_deadline()
            {
                consider(t);
            }
            if self.task_mode() {
                if let Some(t) = self.task_lease_wakeup() {
                    consider(t);
                }
            } else if !self.heartbeat_in_flight {
                consider(self.next_heartbeat_at);
            }
            if !self.polling && self.free_slots() > 0 {
                consider(self.next_poll_at);
            }
            debug_assert_eq!(
                self.retrying as usize,
                self.runs.values().filter(|r| r.wait.is_retry()).count()
            );
            if self.retrying > 0 {
                for run in self.runs.values() {
                    if let Wait::RetryEffectAt(t) | Wait::RetryProgressAt(t) = run.wait {
                        consider(t);
                    }
                }
            }
            for doubt in self.doubtful.values() {
                if let Some(t) = doubt.recheck_at {
                    consider(t);
                }
            }
        }
        next
    }

    /// Tasks that hold a slot: running (`runs`); claimed and not settled,
    /// claims on their way and in doubt alike (`doubtful`); and in task mode,
    /// leases being created (`lease_creates`) and any lease held for a task
    /// in neither `runs` nor `doubtful` (a claim's or a run's lease shares
    /// its slot). On the hot path (`poll_timeout` asks every step), so
    /// inlined; the lease walk, over a short vector and never taken in
    /// worker mode, is not.
    #[inline]
    fn busy_slots(&self) -> usize {
        let held = self.runs.len() + self.doubtful.len() + self.lease_creates.len();
        if self.leases.len() == 0 {
            held
        } else {
            held + self.lone_leases()
        }
    }

    #[inline(never)]
    fn lone_leases(&self) -> usize {
        self.leases
            .keys()
            .filter(|t| !self.runs.contains_key(t) && !self.doubtful.contains_key(t))
            .count()
    }

    #[inline]
    fn free_slots(&self) -> usize {
        (self.slots_per_worker as usize).saturating_sub(self.busy_slots())
    }

    /// `handle_input` for any input.
    #[inline(never)]
    fn handle_any(&mut self, time: LocalTime, input: &LeaseInput) {
        self.wall_ms = time.wall_ms;
        let now = time.mono;
        // `plain` first: active in worker mode, one test, not two. The
        // other phases and modes decide out of line.
        if !self.plain() {
            if self.unplain_fences(now) {
                return;
            }
        } else {
            // Self-fencing comes first: a reply that arrives after the lease
            // may have lapsed must not trigger one more effect or write.
            if self.self_fenced(now) {
                return;
            }
        }
        // By frequency (friday-rush: 57 % store replies, 26 % timeouts, 16 %
        // effect replies), tested in turn: a `match` decoded the niche in
        // the reply's tag and took a jump table.
        if let Input::StoreReply { request, reply } = input {
            // The `Option` matched with the purpose: one jump on its tag
            // (`None` is one more value of it), where a test for `None`
            // came first.
            let purpose = self.out.take(*request);
            self.on_store_reply(now, purpose, reply);
        } else if let Input::EffectReply { request, reply } = input {
            if let Some(Purpose::Effect { task, epoch, step }) = self.out.take(*request) {
                self.on_effect_reply(now, task, epoch, step, *reply);
            }
        } else if let Input::Start = input {
            self.register(now);
        }
        // `plain` first, as above: a plain worker is not stopped, so one
        // test where "stopped?" and then "plain?" were two.
        if self.plain() {
            self.on_time_plain(now);
        } else if self.phase != Phase::Stopped {
            self.on_time(now);
        }
    }

    /// `fence_at` is reached exactly when an active, self-fencing worker's
    /// lease deadline is.
    fn debug_assert_fence_at(&self, now: Instant) {
        debug_assert_eq!(
            now >= self.fence_at,
            self.phase == Phase::Active
                && self.variant() != Variant::NoSelfFencing
                && self
                    .lease_deadline()
                    .is_some_and(|deadline| now >= deadline)
        );
    }

    /// Whether the lease lapsed by `now` (the worker then stops itself):
    /// every input's first test, so that nothing more is written or
    /// called once the lease may be gone.
    #[inline(always)]
    fn self_fenced(&mut self, now: Instant) -> bool {
        self.debug_assert_fence_at(now);
        if now >= self.fence_at {
            self.stop(FenceCause::LeaseExpired);
            return true;
        }
        false
    }

    /// `handle_input`'s start unless `plain`: whether the input is ignored
    /// (stopped, or fenced now). Self-fencing first, then in task mode the
    /// leases that may have lapsed.
    #[inline(never)]
    fn unplain_fences(&mut self, now: Instant) -> bool {
        if self.phase == Phase::Stopped {
            return true;
        }
        if self.self_fenced(now) {
            return true;
        }
        if self.task_mode() && self.phase == Phase::Active {
            self.fence_expired_task_leases(now);
        }
        false
    }

    fn member_doc(&self, _now: Instant, beats: u64, status: MemberStatus) -> DocValue {
        DocValue::Member(MemberDoc {
            owner: self.me,
            status,
            beats,
            lease_timeout_ms: self.cfg.lease_timeout_ms,
            written_at_ms: self.wall_ms,
        })
    }

    fn register(&mut self, now: Instant) {
        assert_eq!(self.phase, Phase::Registering);
        if self.task_mode() {
            self.activate_without_member(now);
            return;
        }
        self.retry_register_at = NEVER;
        if !self.register_sent {
            self.register_sent = true;
            self.first_register_at = now;
        } else if self.variant() != Variant::NoSelfFencing
            && now >= self.first_register_at.plus_ms(self.self_fence_after_ms)
        {
            // Any attempt may have landed unheard, and its lease runs from
            // the first attempt's send: past this, a reclaimer may have
            // declared it dead and deleted it, and a retry would write it
            // alive again. Start over as a new incarnation instead.
            self.stop(FenceCause::LeaseExpired);
            return;
        }
        let op = StoreRequest::CreateIfAbsent {
            key: DocKey::Member { owner: self.me },
            value: self.member_doc(now, 0, MemberStatus::Alive),
            index: None,
        };
        let deadline = now.plus_us(self.store_timeout_us);
        self.out
            .store(op, Purpose::Register { sent_at: now }, deadline);
    }

    /// Stop all work for good; the host restarts us as a new incarnation.
    fn stop(&mut self, cause: FenceCause) {
        // A correct worker fences itself before any correct reclaimer can
        // declare it dead (acts-within-lease), so finding itself declared
        // dead is no point the correct protocol reaches.
        if cause == FenceCause::LeaseExpired {
            self.out.cover(CoveragePoint::WorkerSelfFenced);
        }
        self.out.event(LeaseEvent::Fenced {
            owner: self.me,
            lease_lost: true,
            cause,
        });
        self.runs.clear();
        self.retrying = 0;
        self.doubtful.clear();
        self.busy = 0;
        self.lease_creates.clear();
        self.leases.clear();
        self.releasing.clear();
        self.out.clear_pending();
        self.set_phase(Phase::Stopped);
        self.out.exit();
    }

    fn renewed(&mut self, sent_at: Instant, version: Version, beats: u64) {
        self.member_version = version;
        self.beats = beats;
        let deadline = sent_at.plus_ms(self.self_fence_after_ms);
        assert!(deadline > Instant::ZERO, "self_fence_after_ms is positive");
        if deadline > self.lease_deadline {
            self.lease_deadline = deadline;
            if self.variant() != Variant::NoSelfFencing {
                self.fence_at = deadline;
            }
        }
        self.next_heartbeat_at = sent_at.plus_ms(self.cfg.heartbeat_interval_ms);
    }

    /// `on_time` for a `plain` worker (active, worker mode): nearly every
    /// input's.
    #[inline(always)]
    fn on_time_plain(&mut self, now: Instant) {
        debug_assert!(self.plain());
        if now >= self.out.earliest_or_never() {
            self.expire_due(now);
            if self.phase == Phase::Stopped {
                return;
            }
        }
        // No clock reads the end of time: none is in flight.
        if now >= self.next_heartbeat_at() {
            self.send_heartbeat(now);
        }
        self.on_time_runs(now);
        self.poll_if_due(now);
    }

    /// What is due after an input unless `plain` (registering, or active
    /// in task mode). Out of line: a few inputs in a thousand.
    #[inline(never)]
    fn on_time(&mut self, now: Instant) {
        debug_assert!(!self.plain() && self.phase != Phase::Stopped);
        if now >= self.out.earliest_or_never() {
            self.expire_due(now);
            if self.phase == Phase::Stopped {
                return;
            }
        }
        if self.phase == Phase::Registering {
            // No clock reads the end of time: none is set.
            if now >= self.retry_register_at {
                self.register(now);
            }
            return;
        }
        debug_assert!(self.task_mode(), "else `plain`");
        self.renew_task_leases(now);
        self.on_time_runs(now);
        // No clock reads the end of time: no poll is in flight.
        if now >= self.next_poll_at() && self.free_slots() > 0 {
            self.poll(now);
        }
    }

    /// `on_time`'s end for an active worker: rechecks, retries, the poll.
    #[inline(always)]
    fn on_time_runs(&mut self, now: Instant) {
        // Claims in doubt first, then retries, each in task order. Neither
        // adds or removes entries. The rechecks out of line: claims are in
        // doubt on few inputs, and the walk kept a spill on every one.
        if now >= self.due_from {
            self.recheck_and_retry(now);
        }
        debug_assert!(
            self.doubtful
                .values()
                .all(|d| d.recheck_at.is_none_or(|t| now < t))
        );
        debug_assert!(self.runs.values().all(|r| match r.wait {
            Wait::RetryEffectAt(t) | Wait::RetryProgressAt(t) => now < t,
            Wait::Effect | Wait::Progress => true,
        }));
    }

    /// `on_time`'s rechecks of claims in doubt that are due, in task order,
    /// then its retries of runs that are due, in task order; recomputes
    /// `due_from` from those still set. Walking by index is safe (neither
    /// adds or removes entries) and allocates nothing, unlike collecting
    /// the due ones first. Out of line: one input in a dozen gets here.
    #[inline(never)]
    fn recheck_and_retry(&mut self, now: Instant) {
        let mut from = NEVER;
        for (task, doubt) in self.doubtful.iter_mut() {
            match doubt.recheck_at {
                Some(t) if now >= t => {}
                Some(t) => {
                    from = from.min(t);
                    continue;
                }
                None => continue,
            }
            doubt.recheck_at = None;
            let task = *task;
            let deadline = now.plus_us(self.store_timeout_us);
            self.out.store(
                StoreRequest::Get {
                    key: DocKey::Task { task },
                },
                Purpose::ClaimCheck { task },
                deadline,
            );
        }
        if self.retrying > 0 {
            for i in 0..self.runs.len() {
                let (&task, run) = self.runs.entry_at(i);
                match run.wait {
                    Wait::RetryEffectAt(t) if now >= t => self.call_effect(now, task, i),
                    Wait::RetryProgressAt(t) if now >= t => self.write_progress(now, task, i),
                    Wait::RetryEffectAt(t) | Wait::RetryProgressAt(t) => from = from.min(t),
                    Wait::Effect | Wait::Progress => {}
                }
            }
        }
        self.due_from = from;
    }

    /// The requests whose deadlines have passed, given up in turn. Out of
    /// line: on_time asks on every input, and one in fifty finds one due
    /// (friday-rush), so the walk's setup stays out of the input's path.
    #[cold]
    #[inline(never)]
    fn expire_due(&mut self, now: Instant) {
        // Timeouts send nothing, so this loop ends; `stop` clears the rest.
        while let Some(purpose) = self.out.expire_one(now) {
            self.on_timeout(now, purpose);
            if self.phase == Phase::Stopped {
                return;
            }
        }
    }

    fn send_heartbeat(&mut self, now: Instant) {
        self.send_heartbeat_to(now, false);
    }

    /// `send_heartbeat`; `in_place` as in `Outbox::store_in_place`.
    #[inline(always)]
    fn send_heartbeat_to(&mut self, now: Instant, in_place: bool) {
        debug_assert_eq!(self.phase, Phase::Active);
        let beats = self.beats + 1;
        let op = StoreRequest::PutIfVersion {
            key: DocKey::Member { owner: self.me },
            expected: self.member_version,
            value: self.member_doc(now, beats, MemberStatus::Alive),
            index: None,
        };
        self.heartbeat_in_flight = true;
        self.next_heartbeat_at = NEVER;
        let deadline = now.plus_us(self.store_timeout_us);
        let purpose = Purpose::Heartbeat {
            sent_at: now,
            beats,
        };
        if in_place {
            self.out.store_in_place(op, purpose, deadline);
        } else {
            self.out.store(op, purpose, deadline);
        }
    }

    /// Nearly every poll finds room in both of the outbox's vectors and no
    /// spent prefix to reclaim (`Outbox::sends_in_place`): then nothing in
    /// the send calls out, and it keeps no frame (a quarter of a plain
    /// worker's inputs end here, by a tail call from `timeout`). Otherwise
    /// the same send, out of line.
    fn poll(&mut self, now: Instant) {
        if !self.out.sends_in_place() {
            return self.poll_making_room(now);
        }
        self.send_poll(now, true);
    }

    #[cold]
    #[inline(never)]
    fn poll_making_room(&mut self, now: Instant) {
        self.send_poll(now, false);
    }

    #[inline(always)]
    fn send_poll(&mut self, now: Instant, in_place: bool) {
        let arc = self.spread.next_arc();
        let (start, end) = DocKey::pending_spots(arc.start, arc.end);
        self.polling = true;
        self.next_poll_at = NEVER;
        let deadline = now.plus_us(self.store_timeout_us);
        let op = StoreRequest::ScanIndex {
            start,
            end,
            limit: POLL_BATCH,
        };
        if in_place {
            self.out.store_in_place(op, Purpose::Poll, deadline);
        } else {
            self.out.store(op, Purpose::Poll, deadline);
        }
    }

    /// Nothing for us this time (an empty poll, or every race lost): wait,
    /// and wait twice as long next time, up to `idle_poll_max_ms`. Only work
    /// won resets the wait: a task seen but lost to another worker says
    /// nothing about a backlog.
    fn poll_idle(&mut self, now: Instant) {
        assert!(self.idle_poll_ms >= self.cfg.poll_interval_ms);
        assert!(self.idle_poll_ms <= self.cfg.idle_poll_max_ms);
        self.polling = false;
        self.next_poll_at = now.plus_ms(self.idle_poll_ms);
        self.idle_poll_ms = self
            .idle_poll_ms
            .saturating_mul(2)
            .min(self.cfg.idle_poll_max_ms);
    }

    fn poll_later(&mut self, now: Instant) {
        self.polling = false;
        self.next_poll_at = now.plus_ms(self.cfg.poll_interval_ms);
    }

    fn on_timeout(&mut self, now: Instant, purpose: Purpose) {
        match purpose {
            Purpose::Register { .. } => self.retry_register_at = now,
            Purpose::Heartbeat { .. } => {
                // Outcome unknown. Retry at once; if the lost write landed,
                // the retry's conflict shows our own beat and we adopt it.
                self.heartbeat_in_flight = false;
                self.next_heartbeat_at = now;
            }
            Purpose::Poll => self.poll_later(now),
            Purpose::Claim { task, .. } if self.variant() == Variant::ClaimAckLost => {
                // Planted bug: assume a claim without an answer failed.
                self.remove_doubt(task);
                self.poll_later(now);
            }
            Purpose::Claim { task, .. } => {
                // Did our claim land? Ask rather than guess: a lost (or merely
                // slow) claim must not strand a task we own while we live.
                self.out.cover(CoveragePoint::ClaimInDoubt);
                let doubt = self.doubtful.get_mut(&task).expect("claims are tracked");
                doubt.in_doubt = true;
                recheck_later(&mut self.due_from, doubt, now);
                self.polling = false;
                self.next_poll_at = now;
            }
            Purpose::ClaimCheck { task } => {
                if let Some(doubt) = self.doubtful.get_mut(&task) {
                    recheck_later(&mut self.due_from, doubt, now);
                }
            }
            Purpose::Effect { task, epoch, step } => {
                if let Some(run) = self.runs.get_mut(&task)
                    && run.epoch == epoch
                    && run.step == step
                    && run.wait == Wait::Effect
                {
                    set_retry(
                        &mut self.retrying,
                        &mut self.due_from,
                        run,
                        Wait::RetryEffectAt(now),
                    );
                    self.out.cover(CoveragePoint::EffectTimeoutRetried);
                }
            }
            Purpose::CompletionCheck { task, .. } => {
                if let Some(run) = self.runs.get_mut(&task) {
                    set_retry(
                        &mut self.retrying,
                        &mut self.due_from,
                        run,
                        Wait::RetryProgressAt(now),
                    );
                }
            }
            Purpose::Progress { task, epoch, step } => {
                if let Some(run) = self.runs.get_mut(&task)
                    && run.epoch == epoch
                    && run.step == step
                    && run.wait == Wait::Progress
                {
                    set_retry(
                        &mut self.retrying,
                        &mut self.due_from,
                        run,
                        Wait::RetryProgressAt(now),
                    );
                    self.out.cover(CoveragePoint::ProgressTimeoutRetried);
                }
            }
            Purpose::LeaseCreate { .. } | Purpose::LeaseRenew { .. } | Purpose::LeaseRelease => {
                self.on_task_lease_timeout(now, purpose)
            }
        }
    }

    fn on_store_reply(
        &mut self,
        now: Instant,
        purpose: Option<Purpose>,
        reply: &StoreReply<DocKey, DocValue>,
    ) {
        match purpose {
            None => {} // a reply for a request we gave up on
            Some(Purpose::Register { sent_at }) => self.on_register_reply(now, sent_at, reply),
            Some(Purpose::Heartbeat { sent_at, beats }) => {
                self.on_heartbeat_reply(now, sent_at, beats, reply)
            }
            Some(Purpose::Poll) => self.on_poll_reply(now, reply),
            Some(Purpose::Claim { task }) => {
                let doubt = self.remove_doubt(task).expect("claims are tracked");
                assert!(!doubt.in_doubt, "a claim in doubt has no pending request");
                if let StoreReply::Unavailable = reply {
                    // This attempt was refused, but an earlier copy of the
                    // same claim (before a re-send) may still be on its way:
                    // stay in doubt until the task document says.
                    self.out.cover(CoveragePoint::ClaimRefusedInDoubt);
                    let mut doubt = Doubt {
                        in_doubt: true,
                        ..doubt
                    };
                    let at = now.plus_ms(self.cfg.retry_backoff_ms);
                    recheck_later(&mut self.due_from, &mut doubt, at);
                    self.insert_doubt(task, doubt);
                    self.polling = false;
                    self.next_poll_at = now;
                    return;
                }
                self.on_claim_reply(now, task, doubt.claimed, reply);
                self.settle_claim_lease(now, task);
            }
            Some(Purpose::ClaimCheck { task }) => {
                self.on_claim_check(now, task, reply);
                if !self.doubtful.contains_key(&task) {
                    self.settle_claim_lease(now, task);
                }
            }
            Some(Purpose::Progress { task, epoch, step }) => {
                self.on_progress_reply(now, task, epoch, step, reply)
            }
            Some(Purpose::CompletionCheck {
                task,
                epoch,
                steps_total,
            }) => {
                let doc = self.completed_doc(epoch, steps_total);
                self.on_completion_check(now, task, doc, reply)
            }
            Some(Purpose::Effect { .. }) => unreachable!("effects get effect replies"),
            Some(
                purpose @ (Purpose::LeaseCreate { .. }
                | Purpose::LeaseRenew { .. }
                | Purpose::LeaseRelease),
            ) => self.on_task_lease_reply(now, purpose, reply),
        }
    }

    fn on_register_reply(
        &mut self,
        now: Instant,
        sent_at: Instant,
        reply: &StoreReply<DocKey, DocValue>,
    ) {
        let (version, landed_after) = match reply {
            StoreReply::Written { version } => (version, sent_at),
            // Our create landed but its reply was lost, and a retry conflicted
            // with it: the document is ours.
            StoreReply::Conflict {
                current: Some(Document { version, value, .. }),
            } if value.as_member().is_some_and(|m| {
                m.owner == self.me
                    && m.status == MemberStatus::Alive
                    && (m.beats == 0 || self.variant() == Variant::ReusedIdentity)
            }) =>
            {
                // Any earlier attempt may be the one that landed.
                assert!(self.register_sent, "registration was sent");
                self.out.cover(CoveragePoint::RegisterConflictWasOurs);
                (version, self.first_register_at)
            }
            StoreReply::Conflict { .. } => {
                // Someone declared this incarnation dead already.
                self.stop(FenceCause::DeclaredDead);
                return;
            }
            _ => {
                self.retry_register_at = now.plus_ms(self.cfg.retry_backoff_ms);
                return;
            }
        };
        self.set_phase(Phase::Active);
        self.renewed(landed_after, *version, 0);
        self.next_poll_at = now;
        self.out.event(LeaseEvent::Registered { owner: self.me });
    }

    fn on_heartbeat_reply(
        &mut self,
        now: Instant,
        sent_at: Instant,
        beats: u64,
        reply: &StoreReply<DocKey, DocValue>,
    ) {
        self.heartbeat_in_flight = false;
        match reply {
            StoreReply::Written { version } => self.renewed(sent_at, *version, beats),
            StoreReply::Conflict { current } => {
                let member = current.as_ref().and_then(|d| d.value.as_member().copied());
                match member {
                    Some(m) if m.owner == self.me && m.status == MemberStatus::Alive => {
                        // An earlier, timed-out heartbeat of ours landed. We do
                        // not know when it was sent, so do not extend the
                        // lease; adopt the version and renew again now.
                        let doc = current.as_ref().expect("matched");
                        self.out.cover(CoveragePoint::HeartbeatAdoptedOwnBeat);
                        self.member_version = doc.version;
                        self.beats = m.beats;
                        self.next_heartbeat_at = now;
                    }
                    // Declared dead, or deleted after being declared dead.
                    _ => self.stop(FenceCause::DeclaredDead),
                }
            }
            _ => self.next_heartbeat_at = now.plus_ms(self.cfg.retry_backoff_ms),
        }
    }

    fn on_poll_reply(&mut self, now: Instant, reply: &StoreReply<DocKey, DocValue>) {
        let StoreReply::Scanned { docs, .. } = reply else {
            self.poll_later(now);
            return;
        };
        assert!(docs.len() <= POLL_BATCH as usize, "a poll reads one page");
        // Worker mode holds no leases and creates none (both only follow
        // `create_task_lease`): their two searches, ~14 instructions a
        // document, are skipped on a flag tested once per poll.
        let task_mode = self.task_mode();
        debug_assert!(task_mode || (self.leases.len() == 0 && self.lease_creates.len() == 0));
        let is_candidate = |d: &Document<DocKey, DocValue>| {
            matches!(d.key, DocKey::Task { task }
                if !self.runs.contains_key(&task)
                    && !self.doubtful.contains_key(&task)
                    && (!task_mode
                        || (!self.leases.contains_key(&task)
                            && !self.lease_creates.contains_key(&task))))
                && d.value
                    .as_task()
                    .is_some_and(|t| t.state == TaskState::Pending)
        };
        // The candidates' places in the page, found in one pass: no
        // allocation per poll.
        const _: () = assert!(POLL_BATCH as usize <= 256, "a place fits a u8");
        const _: () = assert!(POLL_BATCH <= u8::MAX as u32, "a count fits a u8");
        let mut places = [0u8; POLL_BATCH as usize];
        let mut candidates = 0;
        let mut newest = 0;
        for (i, d) in docs.iter().enumerate() {
            newest = newest.max(d.version);
            if is_candidate(d) && self.spread.may_claim(d.version) {
                places[candidates] = i as u8;
                candidates += 1;
            }
        }
        self.spread.page_read(newest, candidates > 0);
        self.last_poll_candidates = candidates as u8;
        if candidates == 0 {
            self.poll_idle(now);
            return;
        }
        if self.free_slots() == 0 {
            self.poll_later(now);
            return;
        }
        // Spread over the candidates too. `herd-claims` picks by worker id
        // alone and learns nothing from its races, so it reads the whole
        // index every time.
        let pick = if self.variant() == Variant::HerdClaims {
            (self.me.worker as usize + self.claim_retries as usize) % candidates
        } else {
            self.spread.claim_sent();
            self.spread.pick(candidates)
        };
        let doc = &docs[places[pick] as usize];
        let DocKey::Task { task } = doc.key else {
            unreachable!("filtered")
        };
        let current = *doc.value.as_task().expect("filtered");
        let claimed = TaskDoc {
            state: TaskState::Running,
            owner: Some(self.me),
            epoch: current.epoch + 1,
            ..current
        };
        if self.task_mode() {
            // Lease first, claim second: a running task always has a lease.
            self.create_task_lease(now, task, claimed, doc.version);
            return;
        }
        self.send_claim(now, task, claimed, doc.version);
    }

    fn send_claim(&mut self, now: Instant, task: TaskId, claimed: TaskDoc, expected: Version) {
        let key = DocKey::Task { task };
        let index = claimed.index_key(task);
        let op = if self.variant() == Variant::UnconditionalClaim {
            StoreRequest::PutUnconditional {
                key,
                value: DocValue::Task(claimed),
                index,
            }
        } else {
            StoreRequest::PutIfVersion {
                key,
                expected,
                value: DocValue::Task(claimed),
                index,
            }
        };
        let doubt = Doubt {
            claimed,
            expected,
            in_doubt: false,
            recheck_at: None,
        };
        self.insert_doubt(task, doubt);
        let deadline = now.plus_us(self.store_timeout_us);
        self.out.store(op, Purpose::Claim { task }, deadline);
    }

    fn on_claim_check(&mut self, now: Instant, task: TaskId, reply: &StoreReply<DocKey, DocValue>) {
        let Some(doubt) = self.doubtful.get(&task).copied() else {
            return;
        };
        assert!(doubt.in_doubt, "only claims in doubt are checked");
        let StoreReply::Got { doc } = reply else {
            let at = now.plus_ms(self.cfg.retry_backoff_ms);
            let doubt = self.doubtful.get_mut(&task).expect("present");
            recheck_later(&mut self.due_from, doubt, at);
            return;
        };
        let mine = doc.as_ref().and_then(|d| {
            self.my_claim(d, doubt.claimed.epoch)
                .map(|t| (t, d.version))
        });
        match (mine, doc) {
            (Some((claimed, version)), _) => {
                self.out.cover(CoveragePoint::DoubtfulClaimWasOurs);
                self.remove_doubt(task);
                self.start_run(now, task, claimed, version);
            }
            // Untouched since we sent the claim: it may still arrive, or it
            // may be lost for good. Send the very same conditional write
            // again: whichever copy lands first wins and the other conflicts
            // with our own claim, which we recognise. Waiting instead could
            // wait forever (nobody else may be able to move the task).
            (None, Some(d)) if d.version == doubt.expected => {
                self.remove_doubt(task);
                if self.task_mode() && !self.task_lease_alive(now, task, doubt.claimed.epoch) {
                    return; // the lease lapsed: the reclaimer cleans up
                }
                self.out.cover(CoveragePoint::DoubtfulClaimResent);
                self.send_claim(now, task, doubt.claimed, doubt.expected);
            }
            // Someone else moved it: our claim's condition can never hold.
            _ => {
                self.out.cover(CoveragePoint::DoubtfulClaimMovedOn);
                self.remove_doubt(task);
            }
        }
    }

    /// The task document of our claim `c`.
    fn claimed_doc(&self, c: Claimed) -> TaskDoc {
        TaskDoc {
            state: TaskState::Running,
            owner: Some(self.me),
            epoch: c.epoch,
            steps_done: c.steps_done,
            steps_total: c.steps_total,
        }
    }

    /// The task document that completes our run at `epoch`.
    fn completed_doc(&self, epoch: u64, steps_total: u32) -> TaskDoc {
        TaskDoc {
            state: TaskState::Done,
            owner: Some(self.me),
            epoch,
            steps_done: steps_total,
            steps_total,
        }
    }

    /// `Some` if `doc` shows our own claim at `epoch`.
    fn my_claim(&self, doc: &Document<DocKey, DocValue>, epoch: u64) -> Option<TaskDoc> {
        let t = doc.value.as_task()?;
        (t.owner == Some(self.me) && t.epoch == epoch && t.state == TaskState::Running)
            .then_some(*t)
    }

    fn on_claim_reply(
        &mut self,
        now: Instant,
        task: TaskId,
        claimed: TaskDoc,
        reply: &StoreReply<DocKey, DocValue>,
    ) {
        match reply {
            StoreReply::Written { version } => {
                self.claim_retries = 0;
                self.spread.claim_won();
                self.idle_poll_ms = self.cfg.poll_interval_ms;
                self.start_run(now, task, claimed, *version);
                self.polling = false;
                self.next_poll_at = now;
            }
            // Our claim landed earlier but the acknowledgement was lost.
            StoreReply::Conflict { current: Some(doc) }
                if self.my_claim(doc, claimed.epoch).is_some()
                    && self.variant() != Variant::ClaimAckLost =>
            {
                self.out.cover(CoveragePoint::ClaimConflictWasOurs);
                self.claim_retries = 0;
                self.spread.claim_won();
                self.idle_poll_ms = self.cfg.poll_interval_ms;
                let mine = self.my_claim(doc, claimed.epoch).expect("checked");
                self.start_run(now, task, mine, doc.version);
                self.polling = false;
                self.next_poll_at = now;
            }
            StoreReply::Conflict { .. } => self.lost_claim_race(now),
            _ => self.poll_later(now),
        }
    }

    /// Another worker got the task first (its claim, or in task mode its
    /// lease): try the next candidate, or back off.
    fn lost_claim_race(&mut self, now: Instant) {
        self.claim_retries += 1;
        self.spread.claim_lost();
        // Retry at once only while the last poll showed more candidates than
        // we have lost: with one pending task and a large idle fleet, every
        // loser re-polling at once is a thundering herd (each new task drew a
        // cascade of claims).
        if self.claim_retries < MAX_CLAIM_RETRIES && self.claim_retries < self.last_poll_candidates
        {
            self.polling = false;
            self.next_poll_at = now;
        } else {
            self.claim_retries = 0;
            self.poll_idle(now);
        }
    }

    fn start_run(&mut self, now: Instant, task: TaskId, doc: TaskDoc, version: Version) {
        assert_eq!(doc.state, TaskState::Running);
        assert_eq!(doc.owner, Some(self.me));
        assert!(
            doc.steps_done < doc.steps_total,
            "a running task has steps left"
        );
        assert!(
            !self.runs.contains_key(&task),
            "claimed a task we already run"
        );
        assert!(
            self.runs.len() + self.doubtful.len() < self.slots_per_worker as usize,
            "claimed past our slots: {} running, {} claims unsettled, {} slots",
            self.runs.len(),
            self.doubtful.len(),
            self.slots_per_worker
        );
        if self.task_mode() && !self.task_lease_alive(now, task, doc.epoch) {
            // The claim landed but its lease may have lapsed meanwhile: never
            // act on it; the reclaimer re-queues it once the lease expires.
            self.out.cover(CoveragePoint::ClaimLandedLeaseLapsed);
            self.leases.remove(&task);
            return;
        }
        let replaced = self.runs.insert(
            task,
            Run {
                epoch: doc.epoch,
                version,
                steps_total: doc.steps_total,
                step: doc.steps_done,
                wait: Wait::Effect,
            },
        );
        self.busy += replaced.is_none() as u16;
        self.out.event(LeaseEvent::Claimed {
            task,
            epoch: doc.epoch,
        });
        let at = self.runs.index_of(&task).expect("inserted");
        self.begin_step(now, task, at);
    }

    // The steps of a run take the run's place in `runs` (`at`, from
    // `SortedVecMap::index_of`) beside its task: a reply's run is found once,
    // not once per function it passes through. Each asserts that the place
    // still holds the task's run (one compare), so a stale place stops the
    // run instead of stepping another task.

    /// Always inlined: a small dispatch, and as a call it was one more frame
    /// between a reply and the effect it sends.
    #[inline(always)]
    fn begin_step(&mut self, now: Instant, task: TaskId, at: usize) {
        let run = run_at(&mut self.runs, task, at);
        self.out.event(LeaseEvent::StepStarted {
            task,
            epoch: run.epoch,
            step: run.step,
        });
        if self.variant() == Variant::ProgressBeforeEffect {
            self.write_progress(now, task, at);
        } else {
            // The run checked above: the event touched only the outbox.
            self.send_effect(now, task, at);
        }
    }

    /// Always inlined, like `begin_step`: as a call it was one more frame
    /// per step, between a progress reply and the effect it sends.
    #[inline(always)]
    fn call_effect(&mut self, now: Instant, task: TaskId, at: usize) {
        run_at(&mut self.runs, task, at);
        self.send_effect(now, task, at);
    }

    /// `call_effect` for a run its caller has just checked at `at` (each
    /// check a bounds test and a compare after every output pushed, since
    /// the compiler cannot tell the outbox's vectors from the runs').
    #[inline(always)]
    fn send_effect(&mut self, now: Instant, task: TaskId, at: usize) {
        let variant = self.variant();
        let (&found, run) = self.runs.entry_at_mut(at);
        debug_assert_eq!(found, task, "checked by the caller");
        let (call, purpose, deadline) = effect_for(
            &self.cfg,
            variant,
            self.effect_timeout_us,
            &mut self.retrying,
            now,
            task,
            run,
        );
        self.out.effect(call, purpose, deadline);
    }

    /// Record that the current step is done: a write conditional on the
    /// version of our own last write, so it lands only if nobody touched the
    /// task since. The last step's write completes the task.
    #[inline(always)]
    fn write_progress(&mut self, now: Instant, task: TaskId, at: usize) {
        let run = run_at(&mut self.runs, task, at);
        set_wait(&mut self.retrying, run, Wait::Progress);
        let steps_done = run.step + 1;
        let state = if steps_done == run.steps_total {
            TaskState::Done
        } else {
            TaskState::Running
        };
        let doc = TaskDoc {
            state,
            owner: Some(self.me),
            epoch: run.epoch,
            steps_done,
            steps_total: run.steps_total,
        };
        let purpose = Purpose::Progress {
            task,
            epoch: run.epoch,
            step: run.step,
        };
        let deadline = now.plus_us(self.store_timeout_us);
        if state == TaskState::Done && self.variant == Variant::CompletionWithoutEpochCheck {
            // Read the task and complete it if it is still running, whoever
            // runs it now.
            let op = StoreRequest::Get {
                key: DocKey::Task { task },
            };
            let purpose = Purpose::CompletionCheck {
                task,
                epoch: run.epoch,
                steps_total: run.steps_total,
            };
            debug_assert_eq!(self.completed_doc(doc.epoch, doc.steps_total), doc);
            self.out.store(op, purpose, deadline);
            return;
        }
        let op = StoreRequest::PutIfVersion {
            key: DocKey::Task { task },
            expected: run.version,
            value: DocValue::Task(doc),
            index: doc.index_key(task),
        };
        self.out.store(op, purpose, deadline);
    }

    fn on_completion_check(
        &mut self,
        now: Instant,
        task: TaskId,
        doc: TaskDoc,
        reply: &StoreReply<DocKey, DocValue>,
    ) {
        let Some(run) = self.runs.get(&task).copied() else {
            return;
        };
        match reply {
            StoreReply::Got { doc: Some(current) }
                if current
                    .value
                    .as_task()
                    .is_some_and(|t| t.state == TaskState::Running) =>
            {
                // `running` was checked here, by us; the write itself checks
                // nothing (read-check-write, the ABA window).
                let op = StoreRequest::PutUnconditional {
                    key: DocKey::Task { task },
                    value: DocValue::Task(doc),
                    index: doc.index_key(task),
                };
                let purpose = Purpose::Progress {
                    task,
                    epoch: run.epoch,
                    step: run.step,
                };
                self.out
                    .store(op, purpose, now.plus_us(self.store_timeout_us));
            }
            StoreReply::Got { .. } => self.abandon(task),
            _ => {
                let run = self.runs.get_mut(&task).expect("checked");
                let retry_at = now.plus_ms(self.cfg.retry_backoff_ms);
                set_retry(
                    &mut self.retrying,
                    &mut self.due_from,
                    run,
                    Wait::RetryProgressAt(retry_at),
                );
            }
        }
    }

    fn abandon(&mut self, task: TaskId) {
        // Task mode: stop renewing and never delete: the task may still run
        // under this lease in the store; the reclaimer settles both.
        self.leases.remove(&task);
        self.releasing.remove(&task);
        if let Some(run) = self.remove_run(task) {
            self.out.event(LeaseEvent::Abandoned {
                task,
                epoch: run.epoch,
            });
        }
    }

    /// Remove a run, keeping `retrying` in step.
    fn remove_run(&mut self, task: TaskId) -> Option<Run> {
        let run = self.runs.remove(&task)?;
        self.retrying -= run.wait.is_retry() as u16;
        self.busy -= 1;
        Some(run)
    }

    /// A claim tracked, keeping `busy` in step.
    fn insert_doubt(&mut self, task: TaskId, doubt: Doubt) {
        assert!(self.doubtful.insert(task, doubt).is_none(), "claimed twice");
        self.busy += 1;
    }

    /// A claim settled, keeping `busy` in step.
    fn remove_doubt(&mut self, task: TaskId) -> Option<Doubt> {
        let doubt = self.doubtful.remove(&task)?;
        self.busy -= 1;
        Some(doubt)
    }

    /// `busy`, asserted in step with the runs and the claims.
    #[inline(always)]
    fn busy(&self) -> u16 {
        debug_assert_eq!(
            usize::from(self.busy),
            self.runs.len() + self.doubtful.len()
        );
        self.busy
    }

    /// `remove_run` for the run at `at`, asserted to be `task`'s: no search
    /// (a completed run's place is known; the search and the run returned
    /// through memory were ~50 instructions a call).
    #[inline]
    fn remove_run_at(&mut self, task: TaskId, at: usize) {
        let wait = run_at(&mut self.runs, task, at).wait;
        self.runs.remove_at(at);
        self.retrying -= wait.is_retry() as u16;
        self.busy -= 1;
    }

    /// The place in `runs` of the run a reply is for, if it is still
    /// waiting for it.
    fn current_run(&self, task: TaskId, epoch: u64, step: u32, wait: Wait) -> Option<usize> {
        let at = self.runs.index_of(&task)?;
        let r = self.runs.entry_at(at).1;
        (r.epoch == epoch && r.step == step && r.wait == wait).then_some(at)
    }

    fn on_effect_reply(
        &mut self,
        now: Instant,
        task: TaskId,
        epoch: u64,
        step: u32,
        reply: EffectReply,
    ) {
        let Some(at) = self.current_run(task, epoch, step, Wait::Effect) else {
            return; // a reply for work we already gave up
        };
        let reply = match reply {
            EffectReply::Failed if self.variant() == Variant::FailedEffectCountedDone => {
                EffectReply::Applied
            }
            other => other,
        };
        match reply {
            EffectReply::Applied | EffectReply::Deduplicated => {
                if reply == EffectReply::Deduplicated {
                    self.out.cover(CoveragePoint::EffectDeduplicated);
                }
                if self.variant() == Variant::ProgressBeforeEffect {
                    self.next_step(now, task, at);
                } else {
                    self.write_progress(now, task, at);
                }
            }
            // The service has seen a newer epoch: the task moved on.
            EffectReply::RejectedStale => self.abandon(task),
            EffectReply::Failed => {
                self.out.cover(CoveragePoint::EffectFailedRetried);
                let run = self.runs.entry_at_mut(at).1;
                let retry_at = now.plus_ms(self.cfg.retry_backoff_ms);
                set_retry(
                    &mut self.retrying,
                    &mut self.due_from,
                    run,
                    Wait::RetryEffectAt(retry_at),
                );
            }
        }
    }

    /// The run's place is checked once, here: its changes are made before
    /// its outputs are queued (an output touches only the outbox), where
    /// `begin_step` and `send_effect` checked it again after each output
    /// (the compiler cannot tell the outbox's vectors from the runs').
    /// Always inlined into its two callers (an effect's and a progress
    /// write's reply): as a call it was a frame per step.
    #[inline(always)]
    fn next_step(&mut self, now: Instant, task: TaskId, at: usize) {
        let variant = self.variant();
        let run = run_at(&mut self.runs, task, at);
        let epoch = run.epoch;
        let step = run.step;
        let recorded = LeaseEvent::StepRecorded { task, epoch, step };
        if step + 1 == run.steps_total {
            self.remove_run_at(task, at);
            self.out.event(recorded);
            self.out.event(LeaseEvent::Completed { task, epoch });
            self.release_task_lease(now, task);
            // A poll in flight sets it when it ends.
            if !self.polling {
                self.next_poll_at = now;
            }
            return;
        }
        run.step += 1;
        if variant == Variant::ProgressBeforeEffect {
            self.out.event(recorded);
            self.begin_step(now, task, at);
            return;
        }
        // `begin_step` and `send_effect`, the run's changes first.
        let started = LeaseEvent::StepStarted {
            task,
            epoch,
            step: run.step,
        };
        let (call, purpose, deadline) = effect_for(
            &self.cfg,
            variant,
            self.effect_timeout_us,
            &mut self.retrying,
            now,
            task,
            run,
        );
        self.out.event(recorded);
        self.out.event(started);
        self.out.effect(call, purpose, deadline);
    }

    fn on_progress_reply(
        &mut self,
        now: Instant,
        task: TaskId,
        epoch: u64,
        step: u32,
        reply: &StoreReply<DocKey, DocValue>,
    ) {
        let Some(at) = self.current_run(task, epoch, step, Wait::Progress) else {
            return;
        };
        let landed = match reply {
            StoreReply::Written { version } => Some(*version),
            // A retry of ours conflicted with our own earlier write.
            StoreReply::Conflict { current: Some(doc) }
                if doc.value.as_task().is_some_and(|t| {
                    t.owner == Some(self.me) && t.epoch == epoch && t.steps_done == step + 1
                }) =>
            {
                self.out.cover(CoveragePoint::ProgressConflictWasOurs);
                Some(doc.version)
            }
            StoreReply::Conflict { .. } => {
                // Re-queued or re-claimed: it is not ours any more.
                self.abandon(task);
                return;
            }
            _ => {
                let run = self.runs.entry_at_mut(at).1;
                let retry_at = now.plus_ms(self.cfg.retry_backoff_ms);
                set_retry(
                    &mut self.retrying,
                    &mut self.due_from,
                    run,
                    Wait::RetryProgressAt(retry_at),
                );
                return;
            }
        };
        self.runs.entry_at_mut(at).1.version = landed.expect("set above");
        if self.variant() == Variant::ProgressBeforeEffect {
            self.call_effect(now, task, at);
        } else {
            self.next_step(now, task, at);
        }
    }
}

/// The run at `at` in `runs`, asserted to be `task`'s.
#[inline(always)]
fn run_at(runs: &mut SortedVecMap<TaskId, Run>, task: TaskId, at: usize) -> &mut Run {
    let (&found, run) = runs.entry_at_mut(at);
    assert_eq!(found, task, "a run's place in `runs` is stale");
    run
}

/// The effect call for `run`'s current step of `task`, with its purpose and
/// deadline; the run is set waiting for its reply (`retrying` kept in step).
/// Borrows only what it reads, so a caller can hold the run across it.
#[inline(always)]
fn effect_for(
    cfg: &ProtocolConfig,
    variant: Variant,
    effect_timeout_us: u64,
    retrying: &mut u16,
    now: Instant,
    task: TaskId,
    run: &mut Run,
) -> (EffectRequest, Purpose, Instant) {
    set_wait(retrying, run, Wait::Effect);
    let services = &cfg.step_services;
    let call = EffectRequest {
        service: services[run.step as usize % services.len()],
        resource: task.0 as u64,
        step: run.step,
        token: run.epoch,
        idempotency_key: variant != Variant::NoIdempotencyKey,
    };
    let purpose = Purpose::Effect {
        task,
        epoch: run.epoch,
        step: run.step,
    };
    let deadline = if variant == Variant::NoStepDeadline {
        Instant::from_micros(u64::MAX) // wait for the reply forever
    } else {
        now.plus_us(effect_timeout_us)
    };
    (call, purpose, deadline)
}

/// Set a doubt's recheck for `at`, keeping `due_from` at or below it.
fn recheck_later(due_from: &mut Instant, doubt: &mut Doubt, at: Instant) {
    doubt.recheck_at = Some(at);
    *due_from = (*due_from).min(at);
}

/// `set_wait` for a retry at the wait's time, keeping `due_from` at or
/// below it.
fn set_retry(retrying: &mut u16, due_from: &mut Instant, run: &mut Run, wait: Wait) {
    let (Wait::RetryEffectAt(at) | Wait::RetryProgressAt(at)) = wait else {
        unreachable!("a retry")
    };
    *due_from = (*due_from).min(at);
    set_wait(retrying, run, wait);
}

/// Set a run's wait, keeping the count of runs waiting to retry in step.
fn set_wait(retrying: &mut u16, run: &mut Run, wait: Wait) {
    *retrying = *retrying - run.wait.is_retry() as u16 + wait.is_retry() as u16;
    run.wait = wait;
}
