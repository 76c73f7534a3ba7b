//! Shrinking a failing run to a minimal one that fails the same way.
//!
//! Every candidate is an ordinary deterministic run: the seed stays, the fault
//! plan is explicit (so faults can be removed one by one without the rest of
//! the randomness shifting), and the scenario shrinks (tasks, workers,
//! reclaimers, steps, fault phase). A candidate is kept if it still violates
//! the same invariant. Delta debugging (Zeller's ddmin) over the plan.
//!
//! Step and message faults are addressed by a node's step and message
//! counters, and those move when anything before them changes (a removed
//! lost reply means one retry fewer; a removed worker or task means fewer
//! claims). So a candidate whose exact coordinates no longer reproduce is
//! tried once more with its faults placed by time (`TimedFault`): each at
//! the first step, or message of the same kind and key, near the time it
//! struck in the run it came from. Whatever a candidate's run injected is
//! what is kept, re-recorded in ordinary coordinates, so failure files hold
//! ordinary plans. Small subsets of the plan are also tried with each fault
//! on the first step or message of its kind at any time, and a lone step
//! fault on each step of its node and kind, nearest first.

use leasehold_check::Invariant;
use leasehold_protocol::Variant;
use leasehold_run::run::{RunOutcome, simulate, simulate_timed, simulate_with_plan};
use leasehold_scenario::scenario::{Scenario, ValidScenario};
use leasehold_sim::{Fault, FaultPlan, NodeId, TimedFault};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

// Every format's name lives with the input files (`replay_input` tells
// them apart); re-exported beside the failure file it names.
pub use leasehold_scenario::file_format::FAILURE_FORMAT;

/// How big a run is, before and after shrinking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSize {
    pub faults: u64,
    pub workers: u32,
    pub reclaimers: u32,
    pub tasks: u32,
    pub steps: u32,
    pub events: u64,
}

impl RunSize {
    /// Every field by name, in order.
    fn fields(&self) -> impl Iterator<Item = (&'static str, u64)> {
        [
            ("faults", self.faults),
            ("workers", self.workers.into()),
            ("reclaimers", self.reclaimers.into()),
            ("tasks", self.tasks.into()),
            ("steps", self.steps.into()),
            ("events", self.events),
        ]
        .into_iter()
    }
}

/// A minimal failing run, as written by `shrink` and read by `replay`,
/// `explain` and `export`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureFile {
    pub format: String,
    pub leasehold_version: String,
    pub scenario: Scenario,
    pub seed: u64,
    pub variant: String,
    pub invariant: String,
    /// The violation's message when it was shrunk, for humans.
    pub message: String,
    pub plan: FaultPlan,
    pub original: RunSize,
    pub shrunk: RunSize,
    pub shrink_ms: u64,
    pub candidates_run: u64,
}

/// How long any duration in a plan may be (a pause, a partition, an outage,
/// a delay, a time to restart, a clock jump either way): 30 simulated days.
/// Far beyond any run's limits, and small enough that no microsecond
/// arithmetic on it can overflow (a million faults of it still fit an i64).
pub const MAX_PLAN_DURATION_US: u64 = 30 * 24 * 3_600 * 1_000_000;

/// The most messages one node sends in one step (the protocol's outbox holds
/// at most this many outputs): with `limits.max_events`, it bounds the
/// message numbers a plan can name.
pub const MAX_MESSAGES_PER_STEP: u64 = leasehold_protocol::MAX_QUEUED_OUTPUTS as u64;

impl FailureFile {
    /// Read and check a failure file. Errors name the field
    /// (`plan[0].node: ...`, `variant: ...`, `format: ...`); the plan is
    /// checked against the embedded scenario.
    pub fn parse(text: &str) -> Result<FailureFile, String> {
        FailureFile::parse_checked(text).map(|(f, _, _)| f)
    }

    /// [`FailureFile::parse`], keeping the validated scenario and the
    /// variant the checks built, for a caller that re-runs the file.
    pub fn parse_checked(text: &str) -> Result<(FailureFile, ValidScenario, Variant), String> {
        let value = leasehold_scenario::strict_json::parse(text).map_err(|e| {
            let what = leasehold_scenario::strict_json::strip_position(&e);
            if leasehold_scenario::strict_json::is_duplicate(&e) {
                format!("line {} column {}: {what}", e.line(), e.column())
            } else {
                format!(
                    "line {} column {}: not a leasehold failure file (not JSON: {what})",
                    e.line(),
                    e.column(),
                )
            }
        })?;
        leasehold_scenario::file_format::expect_format(
            &value,
            FAILURE_FORMAT,
            "a leasehold failure file",
        )?;
        let f: FailureFile = leasehold_scenario::strict_json::from_value_named(&value)?;
        leasehold_scenario::strict_json::check_shape(&value, &f).map_err(|e| e.to_string())?;
        let scn = f.valid_scenario()?;
        let variant = f.variant()?;
        leasehold_scenario::file_format::known_invariant("invariant", &f.invariant, &[])?;
        check_plan(&f.plan, &scn)?;
        f.check_sizes()?;
        Ok((f, scn, variant))
    }

    /// `shrunk` describes the run this file holds (its scenario and plan),
    /// and `original` is no smaller: shrinking never grows a run.
    fn check_sizes(&self) -> Result<(), String> {
        // Events are not a size the file's scenario and plan determine (only
        // a re-run counts them): `held` takes `shrunk`'s, so that field
        // always matches and only `original.events >= shrunk.events` and the
        // bound below check it.
        let held = size_of(&self.scenario, &self.plan, self.shrunk.events);
        let fields = self
            .original
            .fields()
            .zip(self.shrunk.fields())
            .zip(held.fields());
        for (((name, original), (_, shrunk)), (_, held)) in fields {
            if shrunk != held {
                return Err(format!(
                    "shrunk.{name}: {shrunk}, but the file's run has {held}"
                ));
            }
            if original < shrunk {
                return Err(format!(
                    "original.{name}: {original} is less than shrunk.{name} ({shrunk}): shrinking never grows a run"
                ));
            }
        }
        if self.original.events > leasehold_scenario::scenario::MAX_EVENT_LIMIT {
            return Err(format!(
                "original.events: {} is more than a run processes (at most {})",
                self.original.events,
                leasehold_scenario::scenario::MAX_EVENT_LIMIT
            ));
        }
        Ok(())
    }

    /// The embedded scenario, validated (its source is its own JSON text).
    pub fn valid_scenario(&self) -> Result<ValidScenario, String> {
        self.scenario
            .clone()
            .into_valid()
            .map_err(|e| format!("scenario.{}: {}", e.field, e.message))
    }

    pub fn variant(&self) -> Result<Variant, String> {
        leasehold_scenario::file_format::named_variant("variant", &self.variant)
    }

    /// Whether a re-run still fails this file's invariant.
    pub fn reproduced_by(&self, outcome: &RunOutcome) -> bool {
        outcome
            .invariants
            .iter()
            .any(|i| i.name() == self.invariant)
    }

    /// A failing run as it is, unshrunk: its scenario, seed and variant,
    /// and the faults it injected (which replay it). For a failure found by
    /// a guided hunt's mutated plan, which no seed alone reproduces.
    pub fn of_run(scn: &ValidScenario, variant: Variant, outcome: &RunOutcome) -> Option<Self> {
        let first = outcome.violations.first()?;
        let size = size_of(&scn.scenario, &outcome.plan, outcome.events());
        Some(FailureFile {
            format: FAILURE_FORMAT.to_string(),
            leasehold_version: leasehold_scenario::file_format::LEASEHOLD_VERSION.to_string(),
            scenario: scn.scenario.clone(),
            seed: outcome.seed,
            variant: variant.name().to_string(),
            invariant: first.invariant.name().to_string(),
            message: first.message.clone(),
            plan: outcome.plan.clone(),
            original: size,
            shrunk: size,
            shrink_ms: 0,
            candidates_run: 0,
        })
    }

    /// Re-run the minimal failure.
    pub fn rerun(&self) -> Result<RunOutcome, String> {
        Ok(self.rerun_with(&self.valid_scenario()?, self.variant()?))
    }

    /// Re-run the minimal failure with its scenario and variant already
    /// checked (by [`FailureFile::parse_checked`]).
    pub fn rerun_with(&self, scn: &ValidScenario, variant: Variant) -> RunOutcome {
        simulate_with_plan(scn, self.seed, variant, Some(self.plan.clone()), None)
    }
}

/// Check a failure file's plan against its scenario, so that every fault can
/// strike in some run of it and no time arithmetic overflows: nodes of the
/// fleet, causes only (never a consequence such as a restart), step and
/// message numbers a run can reach, times within `limits.max_sim_time_ms`,
/// durations at most [`MAX_PLAN_DURATION_US`], message actions on the legs
/// they apply to. Errors name `plan[N].field`.
pub fn check_plan(plan: &FaultPlan, scn: &ValidScenario) -> Result<(), String> {
    use leasehold_sim::{Leg, MessageAction};
    let s = &scn.scenario;
    if plan.len() > leasehold_sim::faults::MAX_FAULTS_PER_RUN {
        return Err(format!(
            "plan: {} faults, more than one run injects (at most {})",
            plan.len(),
            leasehold_sim::faults::MAX_FAULTS_PER_RUN
        ));
    }
    let nodes = s.fleet.workers + s.fleet.reclaimers;
    let max_events = s.limits.max_events;
    let max_time_us = s.limits.max_sim_time_ms.saturating_mul(1_000);
    for (i, fault) in plan.faults.iter().enumerate() {
        let field = |name: &str| format!("plan[{i}].{name}");
        if !fault.is_planned() {
            return Err(format!(
                "{}: \"{}\" is a consequence of another fault, never part of a plan",
                field("fault"),
                fault.kind()
            ));
        }
        if let Some(node) = fault.node().map(|n| n.0)
            && node >= nodes
        {
            return Err(format!(
                "{}: {node} is not a node of the scenario's fleet ({} workers and {} reclaimers: nodes 0 to {})",
                field("node"),
                s.fleet.workers,
                s.fleet.reclaimers,
                nodes - 1
            ));
        }
        let mut durations: Vec<(&str, u64)> = Vec::new();
        let mut at = None;
        let mut step = None;
        match *fault {
            Fault::Crash {
                node_step,
                restart_after_us,
                ..
            } => {
                step = Some(node_step);
                durations.push(("restart_after_us", restart_after_us));
            }
            Fault::CrashAt {
                at_us,
                restart_after_us,
                ..
            } => {
                at = Some(at_us);
                durations.push(("restart_after_us", restart_after_us));
            }
            Fault::Pause {
                node_step,
                duration_us,
                ..
            } => {
                step = Some(node_step);
                durations.push(("duration_us", duration_us));
            }
            Fault::PauseAt {
                at_us, duration_us, ..
            }
            | Fault::Partition {
                at_us, duration_us, ..
            }
            | Fault::StoreOutage {
                at_us, duration_us, ..
            } => {
                at = Some(at_us);
                durations.push(("duration_us", duration_us));
            }
            Fault::ClockJump {
                node_step,
                delta_us,
                ..
            } => {
                step = Some(node_step);
                durations.push(("delta_us", delta_us.unsigned_abs()));
            }
            Fault::Message {
                msg, leg, action, ..
            } => {
                let max_msg = max_events.saturating_mul(MAX_MESSAGES_PER_STEP);
                if msg == 0 || msg > max_msg {
                    return Err(format!(
                        "{}: {msg} is not a message number a run of this scenario reaches \
                         (messages are numbered from 1; at most {MAX_MESSAGES_PER_STEP} a step \
                         and limits.max_events {max_events} events: {max_msg})",
                        field("msg")
                    ));
                }
                match action {
                    MessageAction::Duplicate { extra_us } | MessageAction::Delay { extra_us } => {
                        durations.push(("action.extra_us", extra_us));
                    }
                    MessageAction::Fail if matches!(leg, Leg::FromStore | Leg::FromService) => {
                        return Err(format!(
                            "{}: \"fail\" is for requests (legs to_store, to_service), not the reply leg {}",
                            field("action"),
                            leg_name(leg)
                        ));
                    }
                    MessageAction::Hang if leg != Leg::ToService => {
                        return Err(format!(
                            "{}: \"hang\" is for calls to a service (leg to_service), not {}",
                            field("action"),
                            leg_name(leg)
                        ));
                    }
                    _ => {}
                }
            }
            Fault::Restart { .. }
            | Fault::Resume { .. }
            | Fault::PartitionHealed { .. }
            | Fault::StoreRecovered { .. } => {}
        }
        if let Some(step) = step
            && (step == 0 || step > max_events)
        {
            return Err(format!(
                "{}: {step} is not a step a node of this scenario reaches (steps are numbered \
                 from 1, one an event at most, and limits.max_events is {max_events})",
                field("node_step")
            ));
        }
        if let Some(at_us) = at
            && at_us > max_time_us
        {
            return Err(format!(
                "{}: {at_us} µs is past limits.max_sim_time_ms ({} ms): the fault could never strike",
                field("at_us"),
                s.limits.max_sim_time_ms
            ));
        }
        for (name, us) in durations {
            if us > MAX_PLAN_DURATION_US {
                return Err(format!(
                    "{}: {us} µs is longer than a plan's durations may be \
                     (MAX_PLAN_DURATION_US: {MAX_PLAN_DURATION_US} µs, 30 days)",
                    field(name)
                ));
            }
        }
    }
    Ok(())
}

fn leg_name(leg: leasehold_sim::Leg) -> String {
    serde_json::to_value(leg)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{leg:?}"))
}

#[derive(Clone, Copy, Debug)]
pub struct ShrinkLimits {
    /// At most this many candidate runs.
    pub max_candidates: u64,
    /// Stop improving after this long; what we have is still a valid failure.
    pub time_budget: Duration,
}

impl Default for ShrinkLimits {
    fn default() -> Self {
        ShrinkLimits {
            max_candidates: 5_000,
            time_budget: Duration::from_secs(120),
        }
    }
}

struct Shrinker {
    seed: u64,
    variant: Variant,
    invariant: Invariant,
    scenario: Scenario,
    /// The smallest failing run so far. Its `plan` is the current plan (the
    /// faults as they struck), and its `plan_decided` says when each struck
    /// and the tag of the step or message it struck, for timed candidates.
    best: RunOutcome,
    /// The original run's events: no candidate may have more (see `keep`).
    original_events: u64,
    candidates: u64,
    limits: ShrinkLimits,
    started: Instant,
}

fn size_of(s: &Scenario, plan: &FaultPlan, events: u64) -> RunSize {
    RunSize {
        faults: plan.len() as u64,
        workers: s.fleet.workers,
        reclaimers: s.fleet.reclaimers,
        tasks: s.tasks.total(),
        steps: s.tasks.steps_per_task(),
        events,
    }
}

/// Move plan faults to a smaller fleet: worker positions move by
/// `worker_map` (`None`: gone, with their faults), reclaimer positions by
/// `reclaimer_map`; reclaimers always follow the workers.
fn remap_plan(
    plan: &[(Fault, (u64, u64))],
    workers: u32,
    new_workers: u32,
    worker_map: &dyn Fn(u32) -> Option<u32>,
    reclaimer_map: &dyn Fn(u32) -> Option<u32>,
) -> Faults {
    plan.iter()
        .filter_map(|(f, t)| {
            let mut f = *f;
            if let Some(node) = f.node_mut() {
                *node = if node.0 < workers {
                    NodeId(worker_map(node.0)?)
                } else {
                    NodeId(new_workers + reclaimer_map(node.0 - workers)?)
                };
            }
            Some((f, *t))
        })
        .collect()
}

/// A candidate's faults, each with the time it struck in the run it came
/// from and the tag of the step or message it struck.
type Faults = Vec<(Fault, (u64, u64))>;

/// How far from the time a fault struck a timed candidate may place it,
/// before and after, in microseconds.
const TIMED_WINDOW_US: (u64, u64) = (20_000, 2_000_000);
/// A window no fault's time leaves: placed by its node and kind alone.
const ANY_TIME: (u64, u64) = (u64::MAX, u64::MAX);
/// A lone step fault is tried on at most this many other steps of its node
/// and kind (see [`Shrinker::place_lone_fault`]), nearest to its time first.
const PLACES_PER_LONE_FAULT: usize = 24;
/// Lone faults are placed step by step only in plans of at most this many.
const LONE_PLACEMENT_MAX_PLAN: usize = 40;

impl Shrinker {
    fn out_of_budget(&self) -> bool {
        self.candidates >= self.limits.max_candidates
            || self.started.elapsed() >= self.limits.time_budget
    }

    /// The current plan: the faults of the smallest failing run so far.
    fn plan(&self) -> &FaultPlan {
        &self.best.plan
    }

    /// The current plan with the times its faults struck.
    fn faults(&self) -> Faults {
        self.best
            .plan
            .faults
            .iter()
            .copied()
            .zip(self.best.plan_decided.iter().copied())
            .collect()
    }

    fn keep(&mut self, scenario: Scenario, outcome: RunOutcome) -> bool {
        if !outcome.invariants.contains(&self.invariant) {
            return false;
        }
        // A failure file says shrinking never grows a run, in events too
        // (`FailureFile::check_sizes`), but fewer faults or tasks can run
        // longer (a crash that no longer happens leaves a worker busy). Such
        // a candidate is not kept, or the file written would be refused.
        if outcome.events() > self.original_events {
            return false;
        }
        // The faults as they struck: a fault that never found its step or
        // message is gone, and every fault carries its ordinary coordinates.
        debug_assert_eq!(outcome.plan.len(), outcome.plan_decided.len());
        self.scenario = scenario;
        self.best = outcome;
        true
    }

    /// Run a candidate; keep it if it still fails the same invariant. The
    /// faults are tried at their exact coordinates first, then placed by the
    /// time they struck (removing a fault, a worker or a task shifts a node's
    /// later step and message counters, so exact coordinates land elsewhere).
    fn try_candidate(&mut self, scenario: Scenario, faults: Faults) -> bool {
        if self.out_of_budget() {
            return false;
        }
        let Some(valid) = validate(scenario) else {
            return false;
        };
        self.try_valid(&valid, &faults)
    }

    /// [`Shrinker::try_candidate`] on a scenario already validated.
    fn try_valid(&mut self, valid: &ValidScenario, faults: &Faults) -> bool {
        if self.out_of_budget() {
            return false;
        }
        self.candidates += 1;
        let plan = FaultPlan {
            faults: faults.iter().map(|(f, _)| *f).collect(),
        };
        let outcome = simulate_with_plan(valid, self.seed, self.variant, Some(plan), None);
        if self.keep(valid.scenario.clone(), outcome) {
            return true;
        }
        if faults.is_empty() {
            return false;
        }
        // Placed by time, asking for the same kind of step or message.
        self.try_timed(valid, faults, TIMED_WINDOW_US)
    }

    /// Run `faults` placed by time: each on the first step or message of
    /// its node and kind within `(before, after)` of the time it struck
    /// (`ANY_TIME`: whenever); keep the run if it still fails.
    fn try_timed(&mut self, valid: &ValidScenario, faults: &Faults, window: (u64, u64)) -> bool {
        if self.out_of_budget() {
            return false;
        }
        self.candidates += 1;
        let (before, after) = window;
        let timed = faults
            .iter()
            .map(|(fault, (t, tag))| TimedFault {
                fault: *fault,
                from_us: t.saturating_sub(before),
                to_us: t.saturating_add(after),
                tag: Some(*tag),
            })
            .collect();
        let outcome = simulate_timed(valid, self.seed, self.variant, timed, None);
        self.keep(valid.scenario.clone(), outcome)
    }

    /// Every step of the run of `valid` without faults: its node, time and
    /// tag (`InputSummary::fault_tag`), in the order run (as many as the
    /// run's events allow). The run counts as a candidate, against the
    /// budget.
    fn steps_without_faults(&mut self, valid: &ValidScenario) -> Vec<(NodeId, u64, u64)> {
        use leasehold_protocol::{DocKey, DocValue, LeaseEvent};
        use leasehold_sim::{Actor, InputSummary, Observer, Record, RecordKind};
        use std::collections::{BTreeMap, btree_map::Entry};
        type Request = (NodeId, u32, leasehold_interface::RequestId);
        #[derive(Default)]
        struct Steps {
            steps: Vec<(NodeId, u64, u64)>,
            /// The tags of store replies on their way, by request: a step's
            /// record names its reply's request, the store's record the reply.
            /// A duplicated request is answered twice, first reply first.
            replies: BTreeMap<Request, Vec<u64>>,
        }
        impl Observer<DocKey, DocValue, LeaseEvent> for Steps {
            fn record(&mut self, r: &Record<'_, DocKey, DocValue, LeaseEvent>) {
                match &r.kind {
                    RecordKind::Store {
                        actor: Actor::Node { node, incarnation },
                        request,
                        reply,
                        ..
                    } => {
                        let summary = InputSummary::StoreReply { request: *request };
                        let tag = summary.fault_tag(Some(*reply));
                        let key = (*node, *incarnation, *request);
                        self.replies.entry(key).or_default().push(tag);
                    }
                    RecordKind::Step {
                        node,
                        incarnation,
                        input,
                        ..
                    } => {
                        let tag = match input {
                            InputSummary::StoreReply { request } => {
                                let key = (*node, *incarnation, *request);
                                match self.replies.entry(key) {
                                    Entry::Occupied(mut tags) => {
                                        // Present only while a reply is on its way.
                                        let tag = tags.get_mut().remove(0);
                                        if tags.get().is_empty() {
                                            tags.remove();
                                        }
                                        tag
                                    }
                                    Entry::Vacant(_) => input.fault_tag::<DocKey, DocValue>(None),
                                }
                            }
                            _ => input.fault_tag::<DocKey, DocValue>(None),
                        };
                        self.steps.push((*node, r.time_us, tag));
                    }
                    _ => {}
                }
            }
        }
        self.candidates += 1;
        let mut steps = Steps::default();
        let plan = FaultPlan { faults: Vec::new() };
        simulate_with_plan(valid, self.seed, self.variant, Some(plan), Some(&mut steps));
        steps.steps
    }

    /// A lone step fault (crash, pause, clock jump) that failed at its
    /// coordinates, in its window and on the first step of its kind: tried on
    /// each other step of its node and kind in the run without it (`steps`),
    /// nearest to the time it struck first. Without the faults that brought
    /// the run there, the moment it needs (a worker between two outputs of
    /// one task's step, say) can come at any time.
    fn place_lone_fault(
        &mut self,
        valid: &ValidScenario,
        (fault, (struck_us, tag)): (Fault, (u64, u64)),
        steps: &[(NodeId, u64, u64)],
    ) -> bool {
        if !fault.is_step_fault() {
            return false;
        }
        let node = fault.node().expect("a step fault names its node");
        let mut places: Vec<u64> = steps
            .iter()
            .filter(|(n, _, t)| *n == node && *t == tag)
            .map(|(_, time_us, _)| *time_us)
            .collect();
        places.sort_by_key(|time_us| (time_us.abs_diff(struck_us), *time_us));
        places.dedup();
        for time_us in places.into_iter().take(PLACES_PER_LONE_FAULT) {
            if self.out_of_budget() {
                return false;
            }
            // A window of one instant: this step, or another of its kind at
            // the same time.
            if self.try_timed(valid, &vec![(fault, (time_us, tag))], (0, 0)) {
                return true;
            }
        }
        false
    }

    fn ddmin_plan(&mut self) {
        if !self.plan().is_empty() && self.try_candidate(self.scenario.clone(), Vec::new()) {
            return;
        }
        self.ddmin_positions(
            |sh| sh.plan().len(),
            |sh, keep| {
                let faults = sh.faults();
                (
                    sh.scenario.clone(),
                    keep.iter().map(|k| faults[*k]).collect(),
                )
            },
        );
        // One more pass: each remaining fault alone.
        let mut i = 0;
        while i < self.plan().len() && self.plan().len() > 1 && !self.out_of_budget() {
            let mut faults = self.faults();
            faults.remove(i);
            if !self.try_candidate(self.scenario.clone(), faults) {
                i += 1;
            }
        }
    }

    /// Replace the plan by one of its faults, or two, or three: delta
    /// debugging only removes, and a failure that needs one fault at the
    /// right moment is often kept alive by several others that merely keep
    /// the counters aligned. Subsets of size `k` only while the plan has at
    /// most `SUBSET_LIMITS[k - 1]` faults (pairs are quadratic, triples cubic).
    fn small_subsets(&mut self) {
        const SUBSET_LIMITS: [usize; 3] = [usize::MAX, 40, 12];
        // Only the plan changes here: the scenario is validated once.
        let Some(valid) = validate(self.scenario.clone()) else {
            return;
        };
        let all = self.faults();
        let len = all.len();
        // The steps of the run without faults, for lone faults placed step by
        // step (asked for once, when first needed).
        let mut steps = None;
        for (k, limit) in (1..).zip(SUBSET_LIMITS) {
            if k >= len || len > limit {
                return;
            }
            let mut pick: Vec<usize> = (0..k).collect();
            loop {
                if self.out_of_budget() {
                    return;
                }
                let subset: Faults = pick.iter().map(|i| all[*i]).collect();
                if self.try_valid(&valid, &subset) {
                    return;
                }
                // Without the others, the run can take another course and
                // reach the step or message a fault needs at another time,
                // outside the timed window: placed on the first of its kind,
                // whenever it comes.
                if self.try_timed(&valid, &subset, ANY_TIME) {
                    return;
                }
                if k == 1 && len <= LONE_PLACEMENT_MAX_PLAN && !self.out_of_budget() {
                    if steps.is_none() {
                        steps = Some(self.steps_without_faults(&valid));
                    }
                    let steps = steps.as_deref().expect("just set");
                    if self.place_lone_fault(&valid, subset[0], steps) {
                        return;
                    }
                }
                // The next k-subset of 0..len in lexicographic order.
                let Some(i) = (0..k).rev().find(|i| pick[*i] < len - k + i) else {
                    break;
                };
                pick[i] += 1;
                for j in i + 1..k {
                    pick[j] = pick[j - 1] + 1;
                }
            }
        }
    }

    /// Shrink one numeric dimension: halve while it fails, then step down.
    fn shrink_dimension(
        &mut self,
        get: fn(&Scenario) -> u32,
        min: u32,
        apply: &dyn Fn(&Self, u32) -> (Scenario, Faults),
    ) {
        loop {
            let current = get(&self.scenario);
            if current <= min || self.out_of_budget() {
                return;
            }
            let half = (current / 2).max(min);
            let (s, p) = apply(self, half);
            if self.try_candidate(s, p) {
                continue;
            }
            let (s, p) = apply(self, current - 1);
            if !self.try_candidate(s, p) {
                return;
            }
        }
    }

    fn with_subset(&self, keep: &[usize], reclaimers: bool) -> (Scenario, Faults) {
        subset_fleet(&self.scenario, &self.faults(), keep, reclaimers)
    }

    /// Positions of the workers that read or wrote the documents of the
    /// tasks at positions `tasks` in the current run.
    fn touching_workers(&self, tasks: &[usize]) -> Vec<usize> {
        use leasehold_protocol::{DocKey, DocValue, LeaseEvent, TaskId};
        use leasehold_sim::{Actor, Observer, Record, RecordKind};
        struct Touching<'a> {
            tasks: &'a [usize],
            workers: u32,
            nodes: std::collections::BTreeSet<usize>,
        }
        impl Observer<DocKey, DocValue, LeaseEvent> for Touching<'_> {
            fn record(&mut self, r: &Record<'_, DocKey, DocValue, LeaseEvent>) {
                if let RecordKind::Store {
                    actor: Actor::Node { node, .. },
                    op,
                    ..
                } = &r.kind
                    && node.0 < self.workers
                    && let Some(DocKey::Task { task: TaskId(t) }) = op.key()
                    && self.tasks.contains(&(*t as usize))
                {
                    self.nodes.insert(node.index());
                }
            }
        }
        let Some(valid) = validate(self.scenario.clone()) else {
            return Vec::new();
        };
        let mut touching = Touching {
            tasks,
            workers: self.scenario.fleet.workers,
            nodes: Default::default(),
        };
        simulate_with_plan(
            &valid,
            self.seed,
            self.variant,
            Some(self.plan().clone()),
            Some(&mut touching),
        );
        touching.nodes.into_iter().collect()
    }

    fn with_task_subset(&self, keep: &[usize]) -> (Scenario, Faults) {
        let mut s = self.scenario.clone();
        let current: Vec<u32> = s
            .tasks
            .only
            .clone()
            .unwrap_or_else(|| (0..s.tasks.count).collect());
        s.tasks.only = Some(keep.iter().map(|k| current[*k]).collect());
        (s, self.faults())
    }

    /// Delta debugging over which of `len` things (tasks, workers,
    /// reclaimers, plan faults) to keep; `make` builds the candidate keeping positions.
    fn ddmin_positions(
        &mut self,
        len_of: fn(&Self) -> usize,
        make: fn(&Self, &[usize]) -> (Scenario, Faults),
    ) {
        let mut n = 2usize;
        while len_of(self) >= 2 && !self.out_of_budget() {
            let len = len_of(self);
            let chunk = len.div_ceil(n);
            let mut reduced = false;
            for i in 0..len.div_ceil(chunk) {
                let keep: Vec<usize> = (0..len).filter(|p| *p / chunk != i).collect();
                if keep.is_empty() {
                    continue;
                }
                let (s, p) = make(self, &keep);
                if self.try_candidate(s, p) {
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
            if !reduced {
                if n >= len {
                    break;
                }
                n = (2 * n).min(len);
            }
        }
    }

    fn ddmin_tasks(&mut self) {
        // Quick win first: only the tasks the violations name.
        let named: Vec<usize> = self
            .best
            .violations
            .iter()
            .filter(|v| v.invariant == self.invariant)
            .filter_map(|v| v.task.map(|t| t.0 as usize))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if named.is_empty() {
            return self.ddmin_positions(
                |sh| sh.scenario.tasks.total() as usize,
                |sh, keep| sh.with_task_subset(keep),
            );
        }
        // Quicker still: those tasks and only the workers that touched them
        // (removing workers one by one rarely works while many tasks keep
        // the rest busy, and removing tasks rarely works while many workers
        // share them).
        let mut focus: Vec<Vec<usize>> = vec![named.clone()];
        if named.len() > 1 {
            focus.extend(named.iter().take(4).map(|t| vec![*t]));
        }
        for tasks in focus {
            let workers = self.touching_workers(&tasks);
            if !workers.is_empty() && workers.len() < self.scenario.fleet.workers as usize {
                let (s, p) = self.with_task_subset(&tasks);
                let (s, p) = subset_fleet(&s, &p, &workers, false);
                if self.try_candidate(s, p) {
                    break;
                }
            }
        }
        if named.len() < self.scenario.tasks.total() as usize {
            let (s, p) = self.with_task_subset(&named);
            self.try_candidate(s, p);
        }
        self.ddmin_positions(
            |sh| sh.scenario.tasks.total() as usize,
            |sh, keep| sh.with_task_subset(keep),
        );
    }

    fn ddmin_workers(&mut self) {
        self.ddmin_positions(
            |sh| sh.scenario.fleet.workers as usize,
            |sh, keep| sh.with_subset(keep, false),
        );
    }

    fn ddmin_reclaimers(&mut self) {
        self.ddmin_positions(
            |sh| sh.scenario.fleet.reclaimers as usize,
            |sh, keep| sh.with_subset(keep, true),
        );
    }

    fn with_page_size(&self, page: u32) -> (Scenario, Faults) {
        let mut s = self.scenario.clone();
        s.protocol.scan_page_size = page;
        (s, self.faults())
    }

    fn with_steps(&self, steps: u32) -> (Scenario, Faults) {
        let mut s = self.scenario.clone();
        let per_round = s.tasks.steps.len() as u32;
        if s.tasks.repeat_steps > 1 {
            s.tasks.repeat_steps = steps.div_ceil(per_round).max(1);
        } else {
            s.tasks.steps.truncate(steps.max(1) as usize);
        }
        (s, self.faults())
    }

    fn shorten_fault_phase(&mut self) {
        // The plan's last fault bounds how long the fault phase must be.
        let last_fault_ms =
            last_fault_time_ms(&self.scenario, self.seed, self.variant, self.plan());
        let mut s = self.scenario.clone();
        let phase = (last_fault_ms + 1_000).min(s.faults.fault_phase_ms);
        if phase < s.faults.fault_phase_ms {
            s.faults.fault_phase_ms = phase;
            self.try_candidate(s, self.faults());
        }
    }
}

/// Keep only the workers (or reclaimers) at positions `keep`, with their
/// identities, so each keeps its own random streams and behaviour; their
/// faults follow them, the others' go.
fn subset_fleet(
    scenario: &Scenario,
    faults: &[(Fault, (u64, u64))],
    keep: &[usize],
    reclaimers: bool,
) -> (Scenario, Faults) {
    let mut s = scenario.clone();
    let workers = s.fleet.workers;
    let position = |x: u32| keep.iter().position(|k| *k == x as usize).map(|i| i as u32);
    let same = |x: u32| Some(x);
    let plan = if reclaimers {
        let ids = s.fleet.reclaimer_ids();
        s.fleet.reclaimers = keep.len() as u32;
        s.fleet.reclaimer_ids = Some(keep.iter().map(|k| ids[*k]).collect());
        remap_plan(faults, workers, workers, &same, &position)
    } else {
        let ids = s.fleet.worker_ids();
        s.fleet.workers = keep.len() as u32;
        s.fleet.worker_ids = Some(keep.iter().map(|k| ids[*k]).collect());
        remap_plan(faults, workers, keep.len() as u32, &position, &same)
    };
    (s, plan)
}

/// Validate a reduced scenario; scheduled faults naming nodes that are gone,
/// or times past the (shorter) fault phase, are dropped: the plan carries the
/// faults that matter.
fn validate(mut s: Scenario) -> Option<ValidScenario> {
    let fleet = leasehold_scenario::fault_model::Fleet::of(&s.fleet);
    let phase = s.faults.fault_phase_ms;
    s.faults.scheduled.retain(|f| {
        use leasehold_scenario::fault_model::ScheduledFault::*;
        match f {
            Crash { at_ms, node } | Pause { at_ms, node, .. } | Partition { at_ms, node, .. } => {
                *at_ms < phase && fleet.node_named(node).is_some()
            }
            StoreOutage { at_ms, .. } => *at_ms < phase,
        }
    });
    if let Some(r) = &mut s.faults.restarts {
        for at in [&mut r.rolling_deploy_at_ms, &mut r.mass_failure_at_ms] {
            if at.is_some_and(|a| a[1] >= phase) {
                *at = None;
            }
        }
    }
    s.into_valid().ok()
}

fn last_fault_time_ms(s: &Scenario, seed: u64, variant: Variant, plan: &FaultPlan) -> u64 {
    struct LastFault(u64);
    impl
        leasehold_sim::Observer<
            leasehold_protocol::DocKey,
            leasehold_protocol::DocValue,
            leasehold_protocol::LeaseEvent,
        > for LastFault
    {
        fn record(
            &mut self,
            r: &leasehold_sim::Record<
                '_,
                leasehold_protocol::DocKey,
                leasehold_protocol::DocValue,
                leasehold_protocol::LeaseEvent,
            >,
        ) {
            if let leasehold_sim::RecordKind::Fault(f) = &r.kind
                && f.is_planned()
            {
                self.0 = self.0.max(r.time_us / 1_000);
            }
        }
    }
    let Some(valid) = validate(s.clone()) else {
        return s.faults.fault_phase_ms;
    };
    let mut last = LastFault(0);
    simulate_with_plan(&valid, seed, variant, Some(plan.clone()), Some(&mut last));
    last.0
}

/// Why `shrink` wrote no failure file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShrinkError {
    /// The run passes: there is nothing to shrink (not an error of the tool).
    Passes(String),
    /// The run fails, but replaying its own fault plan does not: the tool
    /// (the simulator) is broken, and no failure file can be written.
    NotReproducible(String),
}

impl std::fmt::Display for ShrinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShrinkError::Passes(m) | ShrinkError::NotReproducible(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ShrinkError {}

/// Shrink the failing run (scenario, seed, variant) to a failure file.
/// `Err(Passes)` if it does not fail; `Err(NotReproducible)` if its own
/// fault plan does not reproduce the failure (a simulator bug).
pub fn shrink(
    scn: &ValidScenario,
    seed: u64,
    variant: Variant,
    limits: ShrinkLimits,
) -> Result<FailureFile, ShrinkError> {
    let started = Instant::now();
    let outcome = simulate(scn, seed, variant, None);
    let Some(first) = outcome.violations.first().cloned() else {
        return Err(ShrinkError::Passes(format!(
            "{} seed {seed} variant {} does not fail: nothing to shrink",
            scn.name(),
            variant.name()
        )));
    };
    let invariant = first.invariant;
    let original = size_of(&scn.scenario, &outcome.plan, outcome.events());
    // Replay the drawn faults as a plan once: the same run, now with the
    // time each fault struck.
    let replayed = simulate_with_plan(scn, seed, variant, Some(outcome.plan), None);
    if !replayed.invariants.contains(&invariant) {
        return Err(ShrinkError::NotReproducible(format!(
            "{} seed {seed} variant {} fails {} ({}), but replaying its own fault plan does not \
             reproduce it (a simulator bug; please report it), so it cannot be shrunk: no failure \
             file written",
            scn.name(),
            variant.name(),
            invariant.name(),
            first.message
        )));
    }
    let mut sh = Shrinker {
        seed,
        variant,
        invariant,
        scenario: scn.scenario.clone(),
        best: replayed,
        original_events: original.events,
        candidates: 1,
        limits,
        started,
    };
    // Rounds until nothing shrinks any more (bounded). Fewer tasks first: it
    // makes every later candidate cheaper.
    loop {
        let before = (
            sh.plan().len(),
            sh.scenario.tasks.total(),
            sh.scenario.fleet.workers,
            sh.scenario.fleet.reclaimers,
        );
        sh.ddmin_tasks();
        sh.ddmin_plan();
        sh.small_subsets();
        sh.ddmin_workers();
        sh.ddmin_reclaimers();
        sh.shrink_dimension(|s| s.protocol.scan_page_size, 1, &|sh, n| {
            sh.with_page_size(n)
        });
        sh.shrink_dimension(|s| s.tasks.steps_per_task(), 1, &|sh, n| sh.with_steps(n));
        let after = (
            sh.plan().len(),
            sh.scenario.tasks.total(),
            sh.scenario.fleet.workers,
            sh.scenario.fleet.reclaimers,
        );
        if after == before || sh.out_of_budget() {
            break;
        }
    }
    sh.shorten_fault_phase();
    let message = sh
        .best
        .violations
        .iter()
        .find(|v| v.invariant == invariant)
        .map(|v| v.message.clone())
        .unwrap_or_default();
    let shrunk = size_of(&sh.scenario, sh.plan(), sh.best.events());
    let failure = FailureFile {
        format: FAILURE_FORMAT.to_string(),
        leasehold_version: leasehold_scenario::file_format::LEASEHOLD_VERSION.to_string(),
        scenario: sh.scenario,
        seed,
        variant: variant.name().to_string(),
        invariant: invariant.name().to_string(),
        message,
        plan: sh.best.plan,
        original,
        shrunk,
        shrink_ms: started.elapsed().as_millis() as u64,
        candidates_run: sh.candidates,
    };
    Ok(failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fewer faults or tasks can make a failing run longer, but a failure
    /// file says shrinking never grows a run, in events too: a candidate
    /// longer than the original is not kept (or the file written would be
    /// refused by its own reader, as one once was: 3,221 events against
    /// 3,058).
    #[test]
    fn a_candidate_longer_than_the_original_is_not_kept() {
        let scn = Scenario::parse(include_str!("../../../scenarios/gc-pause-zombie.json"))
            .expect("a shipped scenario");
        let variant = Variant::NoSelfFencing;
        // As `shrink` starts: the drawn faults replayed as a plan.
        let drawn = leasehold_run::run::simulate(&scn, 1, variant, None);
        let outcome = simulate_with_plan(&scn, 1, variant, Some(drawn.plan), None);
        let invariant = outcome.violations[0].invariant;
        let shrinker = |original_events| Shrinker {
            seed: 1,
            variant,
            invariant,
            scenario: scn.scenario.clone(),
            best: outcome.clone(),
            original_events,
            candidates: 0,
            limits: ShrinkLimits::default(),
            started: Instant::now(),
        };
        let events = outcome.events();
        assert!(!shrinker(events - 1).keep(scn.scenario.clone(), outcome.clone()));
        assert!(shrinker(events).keep(scn.scenario.clone(), outcome.clone()));
    }
}
