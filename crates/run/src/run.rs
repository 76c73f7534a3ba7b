//! One simulated run: scenario + seed + variant in, outcome out.
//!
//! This is the wiring: it turns a scenario into simulator nodes, services and
//! workload, attaches the checkers, and runs. A run is a pure function of
//! (scenario, seed, variant, leasehold version).

use crate::coverage::{CoverageTracker, RunCoverage};
use crate::lease_node::LeaseNode;
use crate::store_load::{StoreLoad, StoreLoadCounter};
use leasehold_check::{CheckConfig, Invariant, LeaseBounds, LeaseChecker, NodeRole, Violation};
use leasehold_interface::{Document, EffectReply, EffectRequest, StoreReply, StoreRequest};
use leasehold_protocol::{
    DocKey, DocValue, LeaseEvent, Owner, Reclaimer, TaskDoc, TaskId, Variant, Worker, task_write,
};
use leasehold_scenario::fault_model::FaultMix;
use leasehold_scenario::scenario::ValidScenario;
use leasehold_sim::{
    Actor, Concern, FaultPlan, FaultSource, NetworkSpec, NodeId, NodeSpec, Observer, Record,
    RecordKind, RngStreams, RunLimits, RunStats, SimConfig, Simulation, StopReason, TimedFault,
};
use rand::RngExt;
use serde::Serialize;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

// Defined with the scenario and its files (validation needs the bound);
// re-exported where runs and their users have always found them.
pub use leasehold_scenario::file_format::LEASEHOLD_VERSION;
pub use leasehold_scenario::scenario::liveness_bound;

/// Observers beyond the checkers (a trace writer, a trace comparer).
pub type ExtraObserver<'a> = &'a mut dyn Observer<DocKey, DocValue, LeaseEvent>;

#[derive(Clone, Debug, Serialize)]
pub struct RunOutcome {
    pub scenario: String,
    pub seed: u64,
    pub variant: Variant,
    pub violations: Vec<Violation>,
    /// Distinct invariants that fired, in a fixed order.
    pub invariants: Vec<Invariant>,
    pub stats: Option<RunStats>,
    pub load: StoreLoad,
    pub tasks_total: u32,
    pub tasks_done: u32,
    /// The fault mix this seed drew (`None` when a plan replaced the draw).
    pub fault_mix: Option<FaultMix>,
    /// Fault records by kind, consequences included.
    pub fault_kinds: BTreeMap<&'static str, u64>,
    /// The coverage points the run reached (see `coverage`).
    #[serde(skip)]
    pub coverage: RunCoverage,
    /// The planned faults the run injected: replaying it reproduces the run.
    #[serde(skip)]
    pub plan: FaultPlan,
    /// When each fault of `plan` was recorded (guided hunting places a
    /// drawn plan's faults by these times).
    #[serde(skip)]
    pub fault_times_us: Vec<u64>,
    /// For a plan-driven run: when each fault of `plan` was decided, and
    /// the tag of the step or message it struck (see `TimedFault`).
    #[serde(skip)]
    pub plan_decided: Vec<(u64, u64)>,
    /// The scenario's own limit stopped the run before its no-lost-task
    /// deadline: liveness was not judged, and the run proves nothing.
    pub cut_short: Option<CutShort>,
}

/// A run its scenario's `limits` stopped before the no-lost-task deadline:
/// its unfinished tasks are inside their bound, so it is inconclusive, not
/// a violation of liveness (what it violated before the stop still is one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CutShort {
    /// The scenario field whose limit it hit.
    pub limit: &'static str,
    /// That field's value.
    pub value: u64,
    /// When the run stopped, in simulated milliseconds.
    pub at_ms: u64,
    pub tasks_not_done: u32,
}

/// The name a run cut short is reported under beside the invariants (in
/// results files, sweep reports and trace end lines).
pub const CUT_SHORT: &str = "cut-short";

impl CutShort {
    /// One line: what stopped the run, and what that means.
    pub fn line(&self) -> String {
        format!(
            "the run hit {} ({}) at {:.3} s; inconclusive: {} tasks not done, liveness not judged",
            self.limit,
            self.value,
            self.at_ms as f64 / 1e3,
            self.tasks_not_done
        )
    }
}

impl RunOutcome {
    /// A run that never finished (it panicked, or a watchdog stopped it):
    /// its one `simulation-healthy` violation and nothing measured. No
    /// fault mix is drawn again here: the draw itself may be what failed.
    pub fn unfinished(
        s: &leasehold_scenario::scenario::Scenario,
        seed: u64,
        variant: Variant,
        violation: Violation,
    ) -> RunOutcome {
        assert_eq!(violation.invariant, Invariant::SimulationHealthy);
        RunOutcome {
            scenario: s.name.clone(),
            seed,
            variant,
            violations: vec![violation],
            invariants: vec![Invariant::SimulationHealthy],
            stats: None,
            load: StoreLoad::default(),
            tasks_total: s.tasks.total(),
            tasks_done: 0,
            fault_mix: None,
            fault_kinds: BTreeMap::new(),
            coverage: RunCoverage::default(),
            plan: FaultPlan::default(),
            fault_times_us: Vec::new(),
            plan_decided: Vec::new(),
            cut_short: None,
        }
    }

    /// Every invariant held and the run was not cut short.
    pub fn ok(&self) -> bool {
        self.invariants.is_empty() && self.cut_short.is_none()
    }

    pub fn trace_hash_hex(&self) -> String {
        self.stats
            .as_ref()
            .map_or_else(|| "none".to_string(), |s| format!("{:016x}", s.trace_hash))
    }

    pub fn events(&self) -> u64 {
        self.stats.as_ref().map_or(0, |s| s.events)
    }

    pub fn sim_time_us(&self) -> u64 {
        self.stats.as_ref().map_or(0, |s| s.sim_time_us)
    }

    pub fn to_json(&self) -> serde_json::Value {
        let stats = self.stats.as_ref();
        serde_json::json!({
            "scenario": self.scenario,
            "seed": self.seed,
            "variant": self.variant.name(),
            "ok": self.ok(),
            "violations": self.violations,
            "invariants": self.invariants,
            "trace_hash": self.trace_hash_hex(),
            "events": self.events(),
            "sim_time_ms": stats.map_or(0, |s| s.sim_time_us / 1_000),
            "store_reads": stats.map_or(0, |s| s.store.reads()),
            "store_writes": stats.map_or(0, |s| s.store.writes()),
            "heartbeat_writes": self.load.heartbeat_writes,
            "tasks_total": self.tasks_total,
            "tasks_done": self.tasks_done,
            "faults": stats.map_or(0, |s| s.faults),
            "effect_calls": stats.map_or(0, |s| s.effect_calls),
            "stop": stats.map(|s| s.stop),
            "store": stats.map(|s| s.store),
            "store_load": self.load,
            "fault_mix": self.fault_mix,
            "fault_kinds": self.fault_kinds,
            "cut_short": self.cut_short,
        })
    }
}

/// An [`Actor`] as one number, for a call out of line: the enum itself
/// (twelve bytes) is passed by reference, stored to the caller's stack and
/// read back, and an actor is handed over with every store record and
/// effect line. A node's id in the low half, its incarnation in the high;
/// all ones for the workload (no node's id is `u32::MAX`: ids index the
/// simulator's nodes). One number, not two: with two, `store`'s last
/// argument went on the stack, and `effect` gained nothing.
#[derive(Clone, Copy)]
struct ActorArg(u64);

impl ActorArg {
    const EXTERNAL: u64 = u64::MAX;

    #[inline(always)]
    fn new(actor: Actor) -> ActorArg {
        match actor {
            Actor::Node { node, incarnation } => {
                debug_assert!(node.0 != u32::MAX, "a node id no actor may have");
                ActorArg(u64::from(node.0) | u64::from(incarnation) << 32)
            }
            Actor::External => ActorArg(Self::EXTERNAL),
        }
    }

    #[inline(always)]
    fn actor(self) -> Actor {
        if self.0 == Self::EXTERNAL {
            Actor::External
        } else {
            Actor::Node {
                node: NodeId(self.0 as u32),
                incarnation: (self.0 >> 32) as u32,
            }
        }
    }
}

struct RunObserver<'a, 'b> {
    checker: LeaseChecker,
    load: StoreLoadCounter<'a>,
    /// Faults seen, by kind: the coverage report, sorted into a map at the
    /// end. A handful of kinds, in the order first seen.
    fault_kinds: Vec<(&'static str, u64)>,
    /// Coverage points and the phases faults struck in.
    coverage: CoverageTracker,
    /// When each planned fault was recorded, in order.
    fault_times_us: Vec<u64>,
    extra: Option<ExtraObserver<'b>>,
    /// No stop is due at or before this time: the simulator asks before
    /// every event, and one compare answers most asks. The checker's
    /// `stop_after_us`, copied by `refresh_stop_after` after each record
    /// that can move it; 0 (ask in full) with an extra observer.
    stop_after_us: u64,
}

impl<'a, 'b> RunObserver<'a, 'b> {
    /// An observer before any record: its stop check already read from the
    /// checker's first state.
    fn new(
        config: CheckConfig,
        roles: &'a [NodeRole],
        extra: Option<ExtraObserver<'b>>,
    ) -> RunObserver<'a, 'b> {
        let mut observer = RunObserver {
            checker: LeaseChecker::new(config),
            load: StoreLoadCounter::new(roles),
            fault_kinds: Vec::new(),
            coverage: CoverageTracker::new(roles),
            fault_times_us: Vec::new(),
            extra,
            stop_after_us: 0,
        };
        observer.refresh_stop_after();
        observer
    }
}

impl RunObserver<'_, '_> {
    // One entry per kind this observer reads, each called from the record
    // sites of its kind alone: the checker and the load counter are handed
    // the record's fields without matching its kind again.

    /// A store record, by parts: none is built in memory for the call.
    #[inline(never)]
    fn store(
        &mut self,
        time_us: u64,
        actor: ActorArg,
        op: &StoreRequest<DocKey, DocValue>,
        reply: &StoreReply<DocKey, DocValue>,
        before: Option<&Document<DocKey, DocValue>>,
        decided_us: u64,
    ) {
        let actor = actor.actor();
        // A put of a task document, the commonest record here, is tested
        // first: one compare of the request's tag, before the match that
        // decodes it for the other kinds. It repeats one arm of
        // `task_write` on purpose: the same test inside `task_write`, which
        // the checker's own path shares, cost +0.20 M instructions
        // (friday-rush seeds 1..5, 156.12 M -> 156.32 M).
        let write = if let StoreRequest::PutIfVersion {
            key: DocKey::Task { task },
            value: DocValue::Task(new),
            ..
        } = op
        {
            Some((*task, new))
        } else {
            task_write(op)
        };
        match write {
            // A task document written: both parts read the same fields,
            // taken apart once.
            Some((task, new)) => {
                let before = before.and_then(|d| d.value.as_task());
                self.load.task_write(actor, new, before);
                // The checker judges the writes the store accepted; of the
                // rest, only whether a worker decided them within its lease.
                if !matches!(reply, StoreReply::Written { .. }) {
                    self.checker
                        .refused_task_write(time_us, decided_us, actor, task, new);
                    self.coverage.task_write_refused(new, reply);
                } else {
                    // Of the store records, only a task write moves the
                    // count of tasks done, and so the stop time; and only
                    // the rare one that the checker says moved it is
                    // copied (each write's copy was ~0.1 M instructions a
                    // friday-rush sweep of five seeds).
                    if self
                        .checker
                        .task_write(time_us, decided_us, actor, task, before, new)
                    {
                        self.refresh_stop_after();
                    }
                }
                debug_assert!(
                    self.extra.is_some() || self.stop_after_us == self.checker.stop_after_us(),
                    "the stop time moved by a task write the checker did not flag"
                );
            }
            None => {
                self.checker
                    .store(time_us, actor, op, reply, before, decided_us);
                self.load.store(actor, op, before);
                debug_assert!(
                    self.extra.is_some() || self.stop_after_us == self.checker.stop_after_us(),
                    "the stop time moved by a store record other than a task write"
                );
            }
        }
    }

    /// A store record with an extra observer, which is handed it whole.
    #[inline(never)]
    fn store_and_extra(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        let RecordKind::Store {
            actor,
            op,
            reply,
            before,
            decided_us,
            ..
        } = record.kind
        else {
            unreachable!("a store record")
        };
        self.store(
            record.time_us,
            ActorArg::new(actor),
            op,
            reply,
            before,
            decided_us,
        );
        self.extra(record);
    }

    /// An effect ledger line, by parts: none is built in memory for the
    /// call.
    #[inline(never)]
    fn effect(
        &mut self,
        time_us: u64,
        actor: ActorArg,
        call: EffectRequest,
        outcome: EffectReply,
        decided_us: u64,
    ) {
        self.coverage.effect(outcome);
        self.checker
            .effect(time_us, actor.actor(), call, outcome, decided_us);
    }

    /// An effect ledger line with an extra observer, which is handed it
    /// whole.
    #[inline(never)]
    fn effect_and_extra(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        let RecordKind::Effect {
            actor,
            call,
            outcome,
            decided_us,
            ..
        } = record.kind
        else {
            unreachable!("an effect record")
        };
        self.effect(
            record.time_us,
            ActorArg::new(actor),
            call,
            outcome,
            decided_us,
        );
        self.extra(record);
    }

    /// Faults, the heal phase, and with an extra observer every other kind.
    #[inline(never)]
    fn other(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        self.checker.record(record);
        // The heal phase sets the checker's liveness deadline.
        self.refresh_stop_after();
        if let RecordKind::Fault(fault) = &record.kind {
            // Names are string constants, nearly always found by address;
            // by content otherwise, so each kind has one entry however the
            // compiler laid its name out. (A map's string comparisons were
            // three hundred instructions per fault.)
            self.coverage.fault(fault);
            if fault.is_planned() {
                self.fault_times_us.push(record.time_us);
            }
            let kind = fault.kind();
            let tally = &mut self.fault_kinds;
            match tally
                .iter()
                .position(|(k, _)| std::ptr::eq(*k, kind))
                .or_else(|| tally.iter().position(|(k, _)| *k == kind))
            {
                Some(i) => tally[i].1 += 1,
                None => tally.push((kind, 1)),
            }
        }
        self.extra(record);
    }

    /// Bring `stop_after_us` up to date after the checker saw a record.
    #[inline(always)]
    fn refresh_stop_after(&mut self) {
        // An extra observer may end the run at any time: always ask.
        self.stop_after_us = if self.extra.is_some() {
            0
        } else {
            self.checker.stop_after_us()
        };
    }

    /// What `should_stop` answers, asked of every part of the observer.
    fn should_stop_in_full(&self, now_us: u64) -> bool {
        // An extra observer may end the run too (a chart's measurement
        // window); trace writers and comparers never do.
        self.checker.should_stop(now_us)
            || self.extra.as_ref().is_some_and(|e| e.should_stop(now_us))
    }

    #[inline(always)]
    fn extra(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        if let Some(extra) = self.extra.as_mut() {
            extra.record(record);
        }
    }
}

impl Observer<DocKey, DocValue, LeaseEvent> for RunObserver<'_, '_> {
    // Inlined into the simulator's record sites, where each site's kind is a
    // constant: the match folds away, leaving at most one call. Most records
    // (steps, losses, the nodes' events) matter to no part of this observer
    // but `extra`: they are skipped here without a call.
    #[inline]
    fn record(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        self.record_parts(record.time_us, record.kind);
    }

    // By parts, so the kinds skipped are skipped before the record is built.
    #[inline(always)]
    fn record_parts(&mut self, time_us: u64, kind: RecordKind<'_, DocKey, DocValue, LeaseEvent>) {
        let record = |kind| Record { time_us, kind };
        match kind {
            // Without an extra observer no store record is built. A poll's
            // scan, the commonest: only the load counter reads it (the
            // checker judges writes), counted here without a call. The rest
            // go to `store` by parts (the record built for the call cost
            // 0.64 M instructions a friday-rush sweep of five seeds).
            RecordKind::Store {
                actor,
                op,
                reply,
                before,
                decided_us,
                ..
            } if self.extra.is_none() => {
                if let StoreRequest::ScanIndex { start, .. } = op {
                    debug_assert!(
                        !LeaseChecker::judges_store(op, reply),
                        "a scan judged but not handled"
                    );
                    self.load.index_scan(start);
                } else {
                    self.store(time_us, ActorArg::new(actor), op, reply, before, decided_us);
                }
            }
            RecordKind::Store { .. } => self.store_and_extra(&record(kind)),
            RecordKind::Effect {
                actor,
                call,
                outcome,
                decided_us,
                ..
            } if self.extra.is_none() => {
                self.effect(time_us, ActorArg::new(actor), call, outcome, decided_us)
            }
            RecordKind::Effect { .. } => self.effect_and_extra(&record(kind)),
            RecordKind::Fault(_) | RecordKind::HealPhase => self.other(&record(kind)),
            // Rare: losses and exits excuse or judge a worker's fencing.
            RecordKind::Lost { .. } | RecordKind::Exit { .. } => self.other(&record(kind)),
            // Nodes' events: only coverage reads them (the checker judges
            // none).
            RecordKind::Event { node, event, .. } => {
                debug_assert!(
                    !LeaseChecker::judges(&kind),
                    "a kind judged but not handled"
                );
                self.coverage.event(node, event);
                if self.extra.is_some() {
                    self.other(&record(kind));
                }
            }
            ref kind => {
                debug_assert!(!LeaseChecker::judges(kind), "a kind judged but not handled");
                if self.extra.is_some() {
                    self.other(&record(*kind));
                }
            }
        }
    }

    // Asked before every event: one compare while no stop is due (~10
    // instructions an event fewer than asking every part).
    #[inline(always)]
    fn should_stop(&self, now_us: u64) -> bool {
        if now_us <= self.stop_after_us {
            debug_assert!(
                !self.should_stop_in_full(now_us),
                "a stop before stop_after_us"
            );
            return false;
        }
        self.should_stop_in_full(now_us)
    }
}

/// The scenario's stated bounds, as the lease oracles judge each action
/// against them (see docs/protocol.md). Taken from the scenario, never from
/// a variant's configuration: a planted bug may misread them, the oracle
/// may not.
pub fn lease_bounds(s: &leasehold_scenario::scenario::Scenario) -> LeaseBounds {
    let p = &s.protocol;
    LeaseBounds {
        heartbeat_mode: p.heartbeat_mode,
        max_clock_drift_ppm: s.faults.max_drift_ppm(),
        max_network_delay_ms: s.network.latency_ms_max,
        max_reply_us: s.network.latency_ms_max * 1_000,
        max_trip_us: 2 * s.network.latency_ms_max * 1_000,
        heartbeat_interval_ms: p.heartbeat_interval_ms,
        store_timeout_ms: p.store_timeout_ms,
        retry_backoff_ms: p.retry_backoff_ms,
        scan_interval_ms: p.scan_interval_ms,
        scan_page_size: p.scan_page_size,
        restart_delay_ms_max: s.faults.restart_delay_ms_max(),
        late_reply_ms: leasehold_scenario::scenario::late_reply_ms(s),
        slack_ms: s.limits.liveness_slack_ms,
        poll_interval_ms: p.poll_interval_ms,
        idle_poll_max_ms: p.idle_poll_max_ms(),
        slots_per_worker: s.fleet.slots_per_worker,
    }
}

/// How late past its sending a live run's store reply may come before the
/// host records it as delayed: the scenario's latency bound, or a quarter
/// of the store timeout if more, so a real store's ordinary jitter at a
/// high `--speed` is not reported as a fault. The oracles of a live run
/// take it as the longest untouched round trip (`LeaseBounds::max_trip_us`).
pub fn live_reply_tolerance_us(s: &leasehold_scenario::scenario::Scenario) -> u64 {
    (s.network.latency_ms_max * 1_000).max(s.protocol.store_timeout_ms * 1_000 / 4)
}

/// The timings edge-seeking faults aim at: the stated configuration's,
/// whatever the variant does with them.
pub fn lease_timings(scn: &ValidScenario) -> leasehold_scenario::fault_model::LeaseTimings {
    let cfg = scn.protocol_config(Variant::Correct);
    leasehold_scenario::fault_model::LeaseTimings {
        lease_timeout_ms: cfg.lease_timeout_ms,
        self_fence_after_ms: cfg.self_fence_after_ms(),
        heartbeat_interval_ms: cfg.heartbeat_interval_ms,
        store_timeout_ms: cfg.store_timeout_ms,
        max_network_delay_ms: cfg.max_network_delay_ms,
    }
}

pub fn node_roles(scn: &ValidScenario) -> Vec<NodeRole> {
    let f = &scn.scenario.fleet;
    f.worker_ids()
        .into_iter()
        .map(|worker| NodeRole::Worker { worker })
        .chain(
            f.reclaimer_ids()
                .into_iter()
                .map(|id| NodeRole::Reclaimer { id }),
        )
        .collect()
}

/// What the checker is told about a run of `scn` whose last task arrives
/// at `last_arrival_ms`.
fn check_config(scn: &ValidScenario, roles: &[NodeRole], last_arrival_ms: u64) -> CheckConfig {
    let s = &scn.scenario;
    let bound = liveness_bound(s);
    CheckConfig {
        roles: roles.to_vec(),
        tasks_total: s.tasks.total(),
        steps_per_task: s.tasks.steps_per_task(),
        last_arrival_ms,
        liveness: bound,
        service_names: scn.services.iter().map(|svc| svc.name.clone()).collect(),
        step_names: scn
            .step_services
            .iter()
            .map(|id| scn.services[id.0 as usize].name.clone())
            .collect(),
        grace_ms: bound.detect_ms,
        bounds: lease_bounds(s),
    }
}

/// Arrival time of every task, in task-id order (ids follow arrival order).
pub fn arrivals_ms(scn: &ValidScenario, seed: u64) -> Vec<u64> {
    let t = &scn.scenario.tasks;
    let mut rng = RngStreams::new(seed).stream(Concern::Workload, 0);
    // Not sorted: task i keeps its arrival time when later tasks are cut
    // (shrinking), because it is always the i-th draw.
    // The backlog edge squeezes the same draws into a tenth of the window.
    let squeeze = if scn.scenario.faults.edge_switches(seed).backlog {
        10
    } else {
        1
    };
    let all: Vec<u64> = (0..t.count)
        .map(|_| rng.random_range(0..=t.arrival_window_ms) / squeeze)
        .collect();
    match &t.only {
        Some(only) => only.iter().map(|i| all[*i as usize]).collect(),
        None => all,
    }
}

/// Run one seed. Never panics: a panic inside a simulated node (or the
/// simulator) becomes a `simulation-healthy` violation carrying its message.
pub fn simulate(
    scn: &ValidScenario,
    seed: u64,
    variant: Variant,
    extra: Option<ExtraObserver<'_>>,
) -> RunOutcome {
    simulate_with_plan(scn, seed, variant, None, extra)
}

/// Like [`simulate`], but with exactly the faults of `plan` (when given)
/// instead of those the seed would draw. Everything else still comes from the
/// seed.
pub fn simulate_with_plan(
    scn: &ValidScenario,
    seed: u64,
    variant: Variant,
    plan: Option<FaultPlan>,
    extra: Option<ExtraObserver<'_>>,
) -> RunOutcome {
    simulate_with_source(scn, seed, variant, plan.map(FaultSource::Plan), extra)
}

/// Like [`simulate_with_plan`], with faults placed by time instead of by
/// step and message counters (shrinking: see [`TimedFault`]). The outcome's
/// `plan` holds the faults as they struck, in ordinary coordinates.
pub fn simulate_timed(
    scn: &ValidScenario,
    seed: u64,
    variant: Variant,
    faults: Vec<TimedFault>,
    extra: Option<ExtraObserver<'_>>,
) -> RunOutcome {
    simulate_with_source(scn, seed, variant, Some(FaultSource::Timed(faults)), extra)
}

/// `source`: `None` draws the faults from the seed; otherwise a plan
/// (exact or timed) replaces the draw.
fn simulate_with_source(
    scn: &ValidScenario,
    seed: u64,
    variant: Variant,
    plan: Option<FaultSource>,
    extra: Option<ExtraObserver<'_>>,
) -> RunOutcome {
    let roles = node_roles(scn);
    let s = &scn.scenario;
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
        simulate_inner(scn, seed, variant, &roles, plan, extra)
    }));
    match result {
        Ok(outcome) => outcome,
        Err(payload) => {
            let message = crate::panic_capture::message(payload.as_ref());
            let violation = Violation {
                invariant: Invariant::SimulationHealthy,
                time_ms: 0,
                task: None,
                message: format!("the simulation panicked: {message}"),
            };
            RunOutcome::unfinished(s, seed, variant, violation)
        }
    }
}

fn simulate_inner(
    scn: &ValidScenario,
    seed: u64,
    variant: Variant,
    roles: &[NodeRole],
    plan: Option<FaultSource>,
    extra: Option<ExtraObserver<'_>>,
) -> RunOutcome {
    let plan_driven = plan.is_some();
    let s = &scn.scenario;
    let cfg = Arc::new(scn.protocol_config(variant));

    let nodes = roles.len();
    let fleet = scn.fleet();
    let mut drawn = s.faults.draw(&fleet, seed, &lease_timings(scn));
    let faults = match plan {
        Some(source) => source,
        // Moved out: below, only `drawn`'s per-node parts are read.
        None => FaultSource::Generate {
            rates: Box::new(std::mem::take(&mut drawn.rates)),
            scheduled: std::mem::take(&mut drawn.scheduled),
        },
    };
    let sim_config = SimConfig {
        network: NetworkSpec {
            latency_us_min: s.network.latency_ms_min * 1_000,
            latency_us_max: s.network.latency_ms_max * 1_000,
        },
        fault_phase_end_us: s.faults.fault_phase_ms * 1_000,
        faults,
        exit_restart_us_min: s.faults.restart_delay_ms[0] * 1_000,
        exit_restart_us_max: s.faults.restart_delay_ms[1] * 1_000,
        limits: RunLimits {
            max_sim_time_us: s.limits.max_sim_time_ms * 1_000,
            max_events: s.limits.max_events,
            // In flight at once: a few hundred per node at worst (the workload
            // waits outside the queue, one arrival at a time).
            max_queue_len: (nodes * 1_024 + (1 << 20)).min(leasehold_sim::queue::MAX_QUEUED),
            // The protocol's own bound on what it queues between two
            // drains, enforced again from outside: a node whose own check
            // is broken (a mutant) still cannot flood the run.
            max_outputs_per_step: leasehold_protocol::MAX_QUEUED_OUTPUTS,
        },
    };
    let factory_cfg = Arc::clone(&cfg);
    let factory_roles = roles.to_vec();
    let factory =
        Box::new(move |node: leasehold_sim::NodeId, incarnation: u32| {
            match factory_roles[node.index()] {
                NodeRole::Worker { worker } => LeaseNode::Worker(Worker::new(
                    Arc::clone(&factory_cfg),
                    Owner {
                        worker,
                        incarnation,
                    },
                )),
                NodeRole::Reclaimer { id } => {
                    LeaseNode::Reclaimer(Reclaimer::new(Arc::clone(&factory_cfg), id, incarnation))
                }
            }
        });
    let mut sim: Simulation<LeaseNode> = Simulation::new(sim_config, seed, factory);
    for svc in &scn.services {
        sim.add_service(svc.clone());
    }
    // Workers boot spread over one heartbeat interval, as a real fleet would.
    for (i, role) in roles.iter().enumerate() {
        let stream_id = fleet.stream_id(leasehold_sim::NodeId(i as u32));
        let mut boot_rng = RngStreams::new(seed).stream(Concern::Boot, stream_id);
        let (name, crashable, pausable, boot_at_ms) = match role {
            NodeRole::Worker { worker } => (
                format!("worker-{worker}"),
                true,
                true,
                boot_rng.random_range(0..s.protocol.heartbeat_interval_ms),
            ),
            NodeRole::Reclaimer { id } => (
                format!("reclaimer-{id}"),
                drawn.crash_reclaimers,
                drawn.pause_reclaimers,
                0,
            ),
        };
        sim.add_node(NodeSpec {
            name,
            crashable,
            pausable,
            clock: drawn.clocks[i],
            boot_at_ms,
            stream_id,
        });
    }
    // Task ids keep their draw order (stable under shrinking); the workload
    // is fed to the simulator in time order, ties by id. Each arrival is
    // packed as `time_ms << 32 | id`, so the sort compares one integer (a
    // `(time, id)` pair sorted at twice the cost) and the list is rewritten
    // in place, half the size.
    assert!(
        s.tasks.arrival_window_ms <= u64::from(u32::MAX),
        "an arrival time too large to pack (validation bounds it)"
    );
    let mut by_time = arrivals_ms(scn, seed);
    assert!(by_time.len() <= u32::MAX as usize, "task ids past u32");
    for (id, at) in by_time.iter_mut().enumerate() {
        *at = *at << 32 | id as u64;
    }
    by_time.sort_unstable();
    let last_arrival_ms = by_time.last().map_or(0, |key| key >> 32);
    let steps_total = s.tasks.steps_per_task();
    sim.set_workload(
        by_time.len() as u64,
        Box::new(move |i: u64| {
            let key = by_time[i as usize];
            let (at_ms, task) = (key >> 32, TaskId(key as u32));
            let doc = TaskDoc::new_pending(steps_total);
            let op = StoreRequest::CreateIfAbsent {
                key: DocKey::Task { task },
                value: DocValue::Task(doc),
                index: doc.index_key(task),
            };
            (at_ms * 1_000, op)
        }),
    );
    let mut observer = RunObserver::new(check_config(scn, roles, last_arrival_ms), roles, extra);
    let mut stats = sim.run(&mut observer);
    let fault_plan = std::mem::take(&mut stats.plan);
    let plan_decided = std::mem::take(&mut stats.plan_decided);
    let mut checker = observer.checker;
    let limit = match stats.stop {
        StopReason::EventLimit => Some(("limits.max_events", s.limits.max_events)),
        StopReason::TimeLimit => Some(("limits.max_sim_time_ms", s.limits.max_sim_time_ms)),
        StopReason::Quiescent | StopReason::Observer => None,
    };
    let before_deadline = checker.deadline_us().is_none_or(|d| d > stats.sim_time_us);
    let cut_short = limit
        .filter(|_| before_deadline)
        .map(|(limit, value)| CutShort {
            limit,
            value,
            at_ms: stats.sim_time_us / 1_000,
            tasks_not_done: s.tasks.total() - checker.tasks_done(),
        });
    if cut_short.is_some() {
        checker.finish_cut_short(stats.sim_time_us);
    } else {
        checker.finish(stats.sim_time_us);
    }
    let violations = checker.violations().to_vec();
    let invariants = Invariant::ALL
        .into_iter()
        .filter(|i| checker.violation_count(*i) > 0)
        .collect();
    RunOutcome {
        scenario: s.name.clone(),
        seed,
        variant,
        violations,
        invariants,
        load: observer.load.load,
        tasks_total: s.tasks.total(),
        tasks_done: checker.tasks_done(),
        stats: Some(stats),
        fault_mix: (!plan_driven).then_some(drawn.mix),
        fault_kinds: observer.fault_kinds.into_iter().collect(),
        coverage: observer.coverage.coverage,
        plan: fault_plan,
        fault_times_us: observer.fault_times_us,
        plan_decided,
        cut_short,
    }
}

/// Which host made the records a [`RecordJudge`] judges. A live host
/// times a store request whole and records it as delayed only past
/// [`live_reply_tolerance_us`], so its oracles take that as the longest
/// round trip no fault touched; a simulated run's records keep the
/// scenario's own network bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordHost {
    Simulator,
    Live,
}

/// A run's records judged as they come from a host other than the
/// simulator: a live run (the `leasehold-live` crate), or a trace's records read back
/// (`replay --check`). The same observer a simulated run has (checker,
/// load counter, coverage, fault tally) and the same outcome; the trace
/// hash is the records' own (`derive(Hash)`, every field).
pub struct RecordJudge<'a, 'b> {
    observer: RunObserver<'a, 'b>,
    scn: &'a ValidScenario,
    seed: u64,
    variant: Variant,
    hasher: leasehold_sim::TraceHasher,
    events: u64,
    last_us: u64,
    store: leasehold_sim::StoreStats,
    effect_calls: u64,
    faults: u64,
}

impl<'a, 'b> RecordJudge<'a, 'b> {
    /// `roles`: [`node_roles`] of `scn`; `extra` sees every record too (a
    /// trace writer).
    pub fn new(
        scn: &'a ValidScenario,
        seed: u64,
        variant: Variant,
        roles: &'a [NodeRole],
        host: RecordHost,
        extra: Option<ExtraObserver<'b>>,
    ) -> RecordJudge<'a, 'b> {
        let last_arrival_ms = arrivals_ms(scn, seed).into_iter().max().unwrap_or(0);
        let mut config = check_config(scn, roles, last_arrival_ms);
        if host == RecordHost::Live {
            let tolerance_us = live_reply_tolerance_us(&scn.scenario);
            assert!(tolerance_us >= config.bounds.max_trip_us);
            config.bounds.max_reply_us = tolerance_us;
            config.bounds.max_trip_us = tolerance_us;
        }
        let observer = RunObserver::new(config, roles, extra);
        RecordJudge {
            observer,
            scn,
            seed,
            variant,
            hasher: leasehold_sim::TraceHasher::new(),
            events: 0,
            last_us: 0,
            store: leasehold_sim::StoreStats::default(),
            effect_calls: 0,
            faults: 0,
        }
    }

    /// Judge one record. Records come in time order.
    pub fn record(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        use std::hash::Hash;
        assert!(record.time_us >= self.last_us, "records out of time order");
        self.last_us = record.time_us;
        self.events += 1;
        record.hash(&mut self.hasher);
        match &record.kind {
            RecordKind::Store { op, reply, .. } => self.count_store(op, reply),
            RecordKind::Effect { .. } => self.effect_calls += 1,
            RecordKind::Fault(fault) if fault.is_planned() => self.faults += 1,
            _ => {}
        }
        self.observer.record(record);
    }

    fn count_store(
        &mut self,
        op: &StoreRequest<DocKey, DocValue>,
        reply: &StoreReply<DocKey, DocValue>,
    ) {
        let s = &mut self.store;
        match reply {
            StoreReply::Unavailable => {
                s.unavailable += 1;
                return;
            }
            StoreReply::Conflict { .. } => s.conflicts += 1,
            StoreReply::Scanned { docs, .. } => s.docs_returned_by_scans += docs.len() as u64,
            _ => {}
        }
        match op {
            StoreRequest::Get { .. } => s.gets += 1,
            StoreRequest::CreateIfAbsent { .. } => s.creates += 1,
            StoreRequest::PutIfVersion { .. } => s.conditional_puts += 1,
            StoreRequest::PutUnconditional { .. } => s.unconditional_puts += 1,
            StoreRequest::DeleteIfVersion { .. } => s.deletes += 1,
            StoreRequest::Scan { .. } => s.scans += 1,
            StoreRequest::ScanIndex { .. } => s.index_scans += 1,
        }
    }

    /// Whether the run is over at `now_us`: all tasks done and the grace
    /// after it passed, or the no-lost-task deadline passed.
    pub fn should_stop(&self, now_us: u64) -> bool {
        self.observer.should_stop(now_us)
    }

    pub fn tasks_done(&self) -> u32 {
        self.observer.checker.tasks_done()
    }

    /// The verdict, the run having ended at `end_us` for `stop`; `cut`
    /// names what stopped it before its no-lost-task deadline, if anything
    /// did (a time limit, an interruption): then liveness is not judged.
    pub fn finish(
        mut self,
        end_us: u64,
        stop: StopReason,
        cut: Option<(&'static str, u64)>,
    ) -> RunOutcome {
        let s = &self.scn.scenario;
        let end_us = end_us.max(self.last_us);
        let mut checker = self.observer.checker;
        let before_deadline = checker.deadline_us().is_none_or(|d| d > end_us);
        let cut_short = cut
            .filter(|_| before_deadline)
            .map(|(limit, value)| CutShort {
                limit,
                value,
                at_ms: end_us / 1_000,
                tasks_not_done: s.tasks.total() - checker.tasks_done(),
            });
        if cut_short.is_some() {
            checker.finish_cut_short(end_us);
        } else {
            checker.finish(end_us);
        }
        let violations = checker.violations().to_vec();
        let invariants = Invariant::ALL
            .into_iter()
            .filter(|i| checker.violation_count(*i) > 0)
            .collect();
        let stats = RunStats {
            events: self.events,
            sim_time_us: end_us,
            stop,
            store: self.store,
            effect_calls: self.effect_calls,
            faults: self.faults,
            max_queue_len: 0,
            queue_len_total: 0,
            trace_hash: self.hasher.digest(),
            plan: FaultPlan::default(),
            plan_decided: Vec::new(),
        };
        RunOutcome {
            scenario: s.name.clone(),
            seed: self.seed,
            variant: self.variant,
            violations,
            invariants,
            load: self.observer.load.load,
            tasks_total: s.tasks.total(),
            tasks_done: checker.tasks_done(),
            stats: Some(stats),
            fault_mix: None,
            fault_kinds: self.observer.fault_kinds.into_iter().collect(),
            coverage: self.observer.coverage.coverage,
            plan: FaultPlan::default(),
            fault_times_us: self.observer.fault_times_us,
            plan_decided: Vec::new(),
            cut_short,
        }
    }
}

/// A run's records as a trace file holds them (one JSON line each), for a
/// run that cannot be had again by re-running: a live run's.
#[derive(Clone, Debug)]
pub struct RecordedRun {
    pub records: Vec<String>,
    /// When the run ended (the trace's `end.end_us`; else its last record).
    pub end_us: Option<u64>,
    /// The run was stopped before its no-lost-task deadline (its end line
    /// says `cut-short`): liveness is not judged.
    pub cut_short: bool,
}

/// How a run is had again: re-simulated from its seed (and plan, if given),
/// or judged from its records.
#[derive(Clone, Debug)]
pub enum Rerun {
    Seed(Option<FaultPlan>),
    Recorded(Arc<RecordedRun>),
}

impl Rerun {
    /// The run again, every record handed to `extra` too.
    pub fn run(
        &self,
        scn: &ValidScenario,
        seed: u64,
        variant: Variant,
        extra: Option<ExtraObserver<'_>>,
    ) -> RunOutcome {
        match self {
            Rerun::Seed(plan) => simulate_with_plan(scn, seed, variant, plan.clone(), extra),
            Rerun::Recorded(recorded) => {
                judge_recorded(scn, seed, variant, recorded, RecordHost::Live, extra)
                    .unwrap_or_else(|e| panic!("records checked when the trace was read: {e}"))
            }
        }
    }
}

/// Judge `recorded`'s records (each a trace line) as a run of `scn`: the
/// checker and the rest of a run's observer, and `extra`, see each in
/// turn. Errors name the record (1-based, as the trace's line 2 is the
/// first record) that does not read.
pub fn judge_recorded(
    scn: &ValidScenario,
    seed: u64,
    variant: Variant,
    recorded: &RecordedRun,
    host: RecordHost,
    extra: Option<ExtraObserver<'_>>,
) -> Result<RunOutcome, String> {
    let roles = node_roles(scn);
    let mut judge = RecordJudge::new(scn, seed, variant, &roles, host, extra);
    let mut last_us = 0;
    for (i, line) in recorded.records.iter().enumerate() {
        let record: leasehold_sim::OwnedRecord<DocKey, DocValue, LeaseEvent> =
            serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 2))?;
        if record.time_us < last_us {
            return Err(format!(
                "line {}: time_us {} is before the record above ({last_us})",
                i + 2,
                record.time_us
            ));
        }
        last_us = record.time_us;
        judge.record(&record.as_record());
    }
    let cut = recorded
        .cut_short
        .then_some(("its trace's end line (cut short)", 0));
    Ok(judge.finish(
        recorded.end_us.unwrap_or(last_us),
        StopReason::Observer,
        cut,
    ))
}
