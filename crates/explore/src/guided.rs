//! Guided hunting: a corpus of inputs that reached new coverage, and
//! mutations of their fault plans.
//!
//! An input is (scenario, seed, faults placed by time): the seed still
//! draws everything but the faults (latencies, the workload, clocks), and
//! the faults are injected where the input says, each at its node's first
//! step (or message on its leg) in a short window from its time
//! (`TimedFault`). A plain run of a seed is an input too: its faults are
//! the ones it drew, at the times they struck.
//!
//! A run is new when it reaches a coverage point, or a bucket of a point's
//! hit count ([`hit_bucket`]), that no run before it reached; its input
//! then joins the corpus (at most [`CORPUS_CAP`] inputs; a full corpus
//! replaces one at random). A parent is drawn with a weight that grows with
//! the rarity of the points its run reached. Children are made by one to
//! [`MAX_MUTATIONS`] mutations of its faults: add, add a burst (two or
//! three faults close together on one node), remove, shift in time, retime
//! (a new duration or delay), retarget (another node), and splice two plans
//! at a time; a quarter of children also move to another seed.
//!
//! Every mutation stays inside the scenario's fault model, so a failure of
//! the correct protocol is a real one: kinds the scenario enables, nodes it
//! lets the kind strike, sizes from its ranges (half of them drawn near the
//! lease's edges: the heartbeat interval, the self-fencing deadline, the
//! lease timeout), and every fault within the fault phase (a pause ends by
//! its end, as drawn pauses do).
//!
//! Everything is a deterministic function of the guided seed, the variant
//! and the scenarios: a hunt's jobs each drive their own guide, so results
//! do not depend on `--jobs`.

use crate::coverage_tally::{CoverageTally, hit_bucket};
use leasehold_protocol::Variant;
use leasehold_run::coverage::Feature;
use leasehold_run::run::{RunOutcome, simulate, simulate_timed};
use leasehold_scenario::scenario::ValidScenario;
use leasehold_sim::{
    CrashPoint, Direction, Fault, Leg, Link, MessageAction, NodeId, OutageMode, TimedFault,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};

/// The guided seed when none is given.
pub const DEFAULT_GUIDED_SEED: u64 = 1;
/// Inputs kept at most.
pub const CORPUS_CAP: usize = 256;
/// Mutations applied to make one child, at most.
pub const MAX_MUTATIONS: u32 = 8;
/// How often a child moves its plan to another seed.
pub const RESEED_CHANCE: f64 = 0.25;
/// Seeds a child moves to are drawn from here on: far above any seed a
/// hunt's budget reaches, so they are not its plain seeds again.
pub const RESEED_FROM: u64 = 1_000_000_000;
/// Faults one input may hold: a child that would grow past it is cut.
pub const MAX_INPUT_FAULTS: usize = 4_096;

/// A corpus entry: an input and the points its run reached (which weigh
/// it when a parent is picked).
#[derive(Clone, Debug)]
struct Entry {
    input: Input,
    reached: Vec<Feature>,
}

/// A run's input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// Index into the hunt's scenarios.
    pub scenario: usize,
    pub seed: u64,
    /// `None`: the seed's own faults (a plain run).
    pub faults: Option<Vec<TimedFault>>,
}

/// What a scenario's fault model lets a mutation inject.
#[derive(Clone, Debug)]
struct FaultSpace {
    phase_end_us: u64,
    /// How long after its time a fault may still find its step or message.
    window_us: u64,
    /// The largest shift in time.
    shift_us: u64,
    /// Durations near which faults are most telling (microseconds).
    edges_us: [u64; 3],
    workers: u32,
    reclaimers: u32,
    restart_us: (u64, u64),
    /// Crashes: whether reclaimers crash too.
    crash: Option<bool>,
    /// Pauses: durations, and whether reclaimers pause too.
    pause: Option<((u64, u64), bool)>,
    clock_jump_us: Option<i64>,
    /// Message faults: leg, action, and the extra delay's range.
    messages: Vec<(Leg, ActionKind, (u64, u64))>,
    /// Partitions: durations, whether reclaimers are partitioned, and the
    /// share that is one-way.
    partition: Option<((u64, u64), bool)>,
    outage: Option<(u64, u64)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ActionKind {
    Drop,
    Duplicate,
    Delay,
    Fail,
    Hang,
}

/// What an added fault is.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Crash,
    Pause,
    ClockJump,
    Message(usize),
    Partition,
    Outage,
}

fn ms_range(r: [u64; 2]) -> (u64, u64) {
    (r[0] * 1_000, r[1] * 1_000)
}

impl FaultSpace {
    fn of(scn: &ValidScenario) -> FaultSpace {
        let s = &scn.scenario;
        let f = &s.faults;
        let p = &s.protocol;
        let mut messages = Vec::new();
        if let Some(n) = &f.network {
            for leg in Leg::ALL {
                let delay = ms_range(n.delay_ms);
                if n.loss[1] > 0.0 {
                    messages.push((leg, ActionKind::Drop, delay));
                }
                if n.duplicate[1] > 0.0 {
                    messages.push((leg, ActionKind::Duplicate, delay));
                }
                if n.delay[1] > 0.0 {
                    messages.push((leg, ActionKind::Delay, delay));
                }
            }
        }
        if let Some(st) = &f.store {
            let slow = ms_range(st.slow_ms);
            if st.failure[1] > 0.0 {
                messages.push((Leg::ToStore, ActionKind::Fail, slow));
            }
            if st.ambiguous[1] > 0.0 {
                messages.push((Leg::FromStore, ActionKind::Drop, slow));
            }
            if st.slow[1] > 0.0 {
                messages.push((Leg::FromStore, ActionKind::Delay, slow));
            }
        }
        if let Some(sv) = &f.services {
            let slow = ms_range(sv.slow_ms);
            if sv.failure[1] > 0.0 {
                messages.push((Leg::ToService, ActionKind::Fail, slow));
            }
            if sv.hang[1] > 0.0 {
                messages.push((Leg::ToService, ActionKind::Hang, slow));
            }
            if sv.ambiguous[1] > 0.0 {
                messages.push((Leg::FromService, ActionKind::Drop, slow));
            }
            if sv.slow[1] > 0.0 {
                messages.push((Leg::FromService, ActionKind::Delay, slow));
            }
        }
        let cfg = scn.protocol_config(Variant::Correct);
        FaultSpace {
            phase_end_us: f.fault_phase_ms * 1_000,
            window_us: p.heartbeat_interval_ms * 1_000,
            shift_us: 2 * p.lease_timeout_ms * 1_000,
            edges_us: [
                p.heartbeat_interval_ms * 1_000,
                cfg.self_fence_after_ms() * 1_000,
                p.lease_timeout_ms * 1_000,
            ],
            workers: s.fleet.workers,
            reclaimers: s.fleet.reclaimers,
            restart_us: ms_range(f.restart_delay_ms),
            crash: f
                .crash
                .as_ref()
                .filter(|c| c.per_step[1] > 0.0)
                .map(|c| c.reclaimers),
            pause: f
                .pause
                .as_ref()
                .filter(|c| c.per_step[1] > 0.0)
                .map(|c| (ms_range(c.duration_ms), c.reclaimers)),
            clock_jump_us: f
                .clock
                .as_ref()
                .filter(|c| c.jump_per_step[1] > 0.0 && c.jump_ms_max > 0)
                .map(|c| (c.jump_ms_max * 1_000) as i64),
            messages,
            partition: f
                .network
                .as_ref()
                .filter(|n| n.partitions_per_minute[1] > 0.0)
                .map(|n| (ms_range(n.partition_ms), n.reclaimers)),
            outage: f
                .store
                .as_ref()
                .filter(|st| st.outages_per_minute[1] > 0.0)
                .map(|st| ms_range(st.outage_ms)),
        }
    }

    fn kinds(&self) -> Vec<Kind> {
        let mut kinds = Vec::new();
        if self.crash.is_some() {
            kinds.push(Kind::Crash);
        }
        if self.pause.is_some() {
            kinds.push(Kind::Pause);
        }
        if self.clock_jump_us.is_some() {
            kinds.push(Kind::ClockJump);
        }
        kinds.extend((0..self.messages.len()).map(Kind::Message));
        if self.partition.is_some() {
            kinds.push(Kind::Partition);
        }
        if self.outage.is_some() {
            kinds.push(Kind::Outage);
        }
        kinds
    }

    /// The nodes a fault of this kind may strike.
    fn targets(&self, fault: &Fault) -> Vec<NodeId> {
        let workers = (0..self.workers).map(NodeId);
        let all = (0..self.workers + self.reclaimers).map(NodeId);
        match fault {
            Fault::Crash { .. } if self.crash == Some(true) => all.collect(),
            Fault::Pause { .. } if self.pause.is_some_and(|p| p.1) => all.collect(),
            Fault::PauseAt { .. } if self.pause.is_some_and(|p| p.1) => all.collect(),
            Fault::Partition { link, .. } if self.partition.is_some_and(|p| p.1) => {
                // Reclaimers have no service links.
                match link {
                    Link::Store => all.collect(),
                    Link::Services => workers.collect(),
                }
            }
            Fault::Message {
                leg: Leg::ToStore | Leg::FromStore,
                ..
            } => all.collect(),
            // Crashes at set times strike whom the scenario names; any
            // worker is a fair stand-in (deploys and mass failures).
            _ => workers.collect(),
        }
    }

    /// A duration in `range`: half the time uniform, half near one of the
    /// lease's edges (when it falls in the range).
    fn duration(&self, rng: &mut ChaCha8Rng, (lo, hi): (u64, u64)) -> u64 {
        assert!(lo <= hi);
        if rng.random_bool(0.5) {
            let edge = self.edges_us[rng.random_range(0..self.edges_us.len())];
            let jitter = edge / 10;
            let near = rng.random_range(edge.saturating_sub(jitter)..=edge + jitter);
            if (lo..=hi).contains(&near) {
                return near;
            }
        }
        rng.random_range(lo..=hi)
    }

    fn time(&self, rng: &mut ChaCha8Rng) -> u64 {
        rng.random_range(0..self.phase_end_us)
    }

    /// A new fault of a kind the scenario enables, at a random time.
    fn new_fault(&self, rng: &mut ChaCha8Rng) -> Option<TimedFault> {
        let kinds = self.kinds();
        if kinds.is_empty() {
            return None;
        }
        let at_us = self.time(rng);
        let worker = NodeId(rng.random_range(0..self.workers));
        let fault = match kinds[rng.random_range(0..kinds.len())] {
            Kind::Crash => Fault::Crash {
                node: worker,
                node_step: 0,
                point: if rng.random_bool(0.25) {
                    CrashPoint::BeforeInput
                } else {
                    CrashPoint::BetweenOutputs {
                        emitted: rng.random_range(0..4),
                    }
                },
                restart_after_us: self.duration(rng, self.restart_us),
            },
            Kind::Pause => Fault::Pause {
                node: worker,
                node_step: 0,
                after_outputs: rng.random_range(0..4),
                duration_us: self.duration(rng, self.pause.expect("enabled").0),
            },
            Kind::ClockJump => {
                let max = self.clock_jump_us.expect("enabled");
                Fault::ClockJump {
                    node: worker,
                    node_step: 0,
                    delta_us: rng.random_range(-max..=max),
                }
            }
            Kind::Message(i) => {
                let (leg, action, delay) = self.messages[i];
                Fault::Message {
                    node: worker,
                    msg: 0,
                    leg,
                    action: self.action(rng, action, delay),
                }
            }
            Kind::Partition => {
                let (durations, _) = self.partition.expect("enabled");
                Fault::Partition {
                    at_us,
                    node: worker,
                    link: if rng.random_bool(0.5) {
                        Link::Store
                    } else {
                        Link::Services
                    },
                    direction: [Direction::Both, Direction::Outbound, Direction::Inbound]
                        [rng.random_range(0..3)],
                    duration_us: self.duration(rng, durations),
                }
            }
            Kind::Outage => Fault::StoreOutage {
                at_us,
                duration_us: self.duration(rng, self.outage.expect("enabled")),
                mode: if rng.random_bool(0.5) {
                    OutageMode::Fail
                } else {
                    OutageMode::Timeout
                },
            },
        };
        let mut fault = fault;
        // Any node the kind may strike, not only workers.
        let targets = self.targets(&fault);
        if let Some(node) = fault.node_mut() {
            *node = targets[rng.random_range(0..targets.len())];
        }
        Some(self.placed(fault, at_us, None))
    }

    fn action(&self, rng: &mut ChaCha8Rng, kind: ActionKind, delay: (u64, u64)) -> MessageAction {
        match kind {
            ActionKind::Drop => MessageAction::Drop,
            ActionKind::Duplicate => MessageAction::Duplicate {
                extra_us: self.duration(rng, delay),
            },
            ActionKind::Delay => MessageAction::Delay {
                extra_us: self.duration(rng, delay),
            },
            ActionKind::Fail => MessageAction::Fail,
            ActionKind::Hang => MessageAction::Hang,
        }
    }

    /// `fault` at `at_us`, kept inside the fault phase: its window ends
    /// before the phase does (a pause's early enough to wake by then), a
    /// fault at a set time starts in it and ends by its end.
    fn placed(&self, mut fault: Fault, at_us: u64, tag: Option<u64>) -> TimedFault {
        let end = self.phase_end_us;
        let at_us = at_us.min(end - 1);
        let fit = |d: u64| d.min(end - at_us).max(1);
        match &mut fault {
            Fault::CrashAt { at_us: a, .. } => *a = at_us,
            Fault::PauseAt {
                at_us: a,
                duration_us,
                ..
            }
            | Fault::Partition {
                at_us: a,
                duration_us,
                ..
            }
            | Fault::StoreOutage {
                at_us: a,
                duration_us,
                ..
            } => {
                *a = at_us;
                *duration_us = fit(*duration_us);
            }
            Fault::Pause { duration_us, .. } => *duration_us = fit(*duration_us),
            _ => {}
        }
        // A pause decided at the end of its window still wakes by the end.
        let last = match fault {
            Fault::Pause { duration_us, .. } => end - duration_us,
            _ => end - 1,
        }
        .max(at_us);
        TimedFault {
            fault,
            from_us: at_us,
            to_us: (at_us + self.window_us).min(last),
            tag,
        }
    }

    /// The fault's size drawn again (its duration, delay, jump or cut).
    fn retimed(&self, rng: &mut ChaCha8Rng, fault: Fault) -> Fault {
        let mut f = fault;
        match &mut f {
            Fault::Crash {
                restart_after_us,
                point,
                ..
            } => {
                *restart_after_us = self.duration(rng, self.restart_us);
                if let CrashPoint::BetweenOutputs { emitted } = point {
                    *emitted = rng.random_range(0..4);
                }
            }
            Fault::CrashAt {
                restart_after_us, ..
            } => *restart_after_us = self.duration(rng, self.restart_us),
            Fault::Pause {
                duration_us,
                after_outputs,
                ..
            } => {
                if let Some((range, _)) = self.pause {
                    *duration_us = self.duration(rng, range);
                }
                *after_outputs = rng.random_range(0..4);
            }
            Fault::PauseAt { duration_us, .. } => {
                if let Some((range, _)) = self.pause {
                    *duration_us = self.duration(rng, range);
                }
            }
            Fault::ClockJump { delta_us, .. } => {
                if let Some(max) = self.clock_jump_us {
                    *delta_us = rng.random_range(-max..=max);
                }
            }
            Fault::Message { leg, action, .. } => {
                let range = self
                    .messages
                    .iter()
                    .find(|(l, k, _)| {
                        l == leg
                            && matches!(
                                (k, &*action),
                                (ActionKind::Delay, MessageAction::Delay { .. })
                                    | (ActionKind::Duplicate, MessageAction::Duplicate { .. })
                            )
                    })
                    .map(|m| m.2);
                match (action, range) {
                    (MessageAction::Delay { extra_us }, Some(r))
                    | (MessageAction::Duplicate { extra_us }, Some(r)) => {
                        *extra_us = self.duration(rng, r)
                    }
                    _ => {}
                }
            }
            Fault::Partition { duration_us, .. } => {
                if let Some((range, _)) = self.partition {
                    *duration_us = self.duration(rng, range);
                }
            }
            Fault::StoreOutage { duration_us, .. } => {
                if let Some(range) = self.outage {
                    *duration_us = self.duration(rng, range);
                }
            }
            _ => {}
        }
        f
    }
}

/// The time a timed fault is placed at: a fault at a set time keeps its
/// own, a step or message fault the start of its window.
fn time_of(t: &TimedFault) -> u64 {
    match t.fault {
        Fault::CrashAt { at_us, .. }
        | Fault::PauseAt { at_us, .. }
        | Fault::Partition { at_us, .. }
        | Fault::StoreOutage { at_us, .. } => at_us,
        _ => t.from_us,
    }
}

/// The faults a run injected, placed by the times they struck (with the
/// tag of the step or message each struck, for a plan-driven run).
fn struck_faults(space: &FaultSpace, outcome: &RunOutcome) -> Vec<TimedFault> {
    let plan = &outcome.plan.faults;
    let mut faults: Vec<TimedFault> = if outcome.plan_decided.len() == plan.len() {
        plan.iter()
            .zip(&outcome.plan_decided)
            .map(|(f, (at, tag))| space.placed(*f, *at, (*tag != 0).then_some(*tag)))
            .collect()
    } else {
        debug_assert_eq!(outcome.fault_times_us.len(), plan.len());
        plan.iter()
            .zip(&outcome.fault_times_us)
            .map(|(f, at)| space.placed(*f, *at, None))
            .collect()
    };
    faults.truncate(MAX_INPUT_FAULTS);
    faults
}

/// How a hunt run went: its input and outcome.
pub struct Run {
    pub input: Input,
    /// Whether the input was a mutation (not a plain seed).
    pub mutated: bool,
    pub outcome: RunOutcome,
}

/// A corpus and the coverage it has seen, for one hunt job.
pub struct Guide<'a> {
    scenarios: Vec<&'a ValidScenario>,
    spaces: Vec<FaultSpace>,
    variant: Variant,
    rng: ChaCha8Rng,
    corpus: Vec<Entry>,
    seen: BTreeSet<(Feature, u8)>,
    /// Runs that reached each point so far: how rare it is.
    reached_by: BTreeMap<Feature, u64>,
    /// Plain seeds handed out so far (round-robin over the scenarios).
    plain: u64,
    runs: u64,
    /// Every run's coverage.
    pub tally: CoverageTally,
    /// Inputs that joined the corpus, all told (a full corpus replaces).
    pub added: u64,
}

impl<'a> Guide<'a> {
    /// `stream` tells jobs of one hunt apart (each its own guide).
    pub fn new(
        scenarios: Vec<&'a ValidScenario>,
        variant: Variant,
        guided_seed: u64,
        stream: u64,
    ) -> Guide<'a> {
        assert!(!scenarios.is_empty());
        let spaces = scenarios.iter().map(|s| FaultSpace::of(s)).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(guided_seed);
        rng.set_stream(stream);
        Guide {
            scenarios,
            spaces,
            variant,
            rng,
            corpus: Vec::new(),
            seen: BTreeSet::new(),
            reached_by: BTreeMap::new(),
            plain: 0,
            runs: 0,
            tally: CoverageTally::new(),
            added: 0,
        }
    }

    pub fn corpus_len(&self) -> usize {
        self.corpus.len()
    }

    /// The next input: the first round of plain seeds (seed 1 on every
    /// scenario), then plain seeds and mutations in turn.
    pub fn next_input(&mut self) -> (Input, bool) {
        let first_round = self.runs < self.scenarios.len() as u64;
        if first_round || self.corpus.is_empty() || self.runs.is_multiple_of(2) {
            let n = self.scenarios.len() as u64;
            let input = Input {
                scenario: (self.plain % n) as usize,
                seed: self.plain / n + 1,
                faults: None,
            };
            self.plain += 1;
            return (input, false);
        }
        (self.mutate(), true)
    }

    /// Run `input`, learn from it, and hand it back with its outcome.
    pub fn run(&mut self, input: Input, mutated: bool) -> Run {
        let scn = self.scenarios[input.scenario];
        let outcome = match &input.faults {
            None => simulate(scn, input.seed, self.variant, None),
            Some(faults) => simulate_timed(scn, input.seed, self.variant, faults.clone(), None),
        };
        self.runs += 1;
        self.learn(&input, &outcome);
        Run {
            input,
            mutated,
            outcome,
        }
    }

    /// Count the run's coverage; keep its input if it reached anything new.
    fn learn(&mut self, input: &Input, outcome: &RunOutcome) {
        let scn = self.scenarios[input.scenario];
        self.tally
            .add(&outcome.coverage, scn.scenario.protocol.heartbeat_mode);
        let mut new = false;
        let mut reached = Vec::new();
        for (feature, hits) in outcome.coverage.reached() {
            new |= self.seen.insert((feature, hit_bucket(hits)));
            *self.reached_by.entry(feature).or_insert(0) += 1;
            reached.push(feature);
        }
        if !new {
            return;
        }
        let kept = Entry {
            input: Input {
                faults: Some(struck_faults(&self.spaces[input.scenario], outcome)),
                ..input.clone()
            },
            reached,
        };
        self.added += 1;
        if self.corpus.len() < CORPUS_CAP {
            self.corpus.push(kept);
        } else {
            let i = self.rng.random_range(0..self.corpus.len());
            self.corpus[i] = kept;
        }
    }

    /// A parent for the next child: an entry drawn with a weight that
    /// grows with the rarity of the points its run reached (the sum, over
    /// them, of one over the runs that reached each), so the inputs that
    /// got somewhere few runs get are mutated most.
    fn pick_parent(&mut self) -> usize {
        let weights: Vec<f64> = self
            .corpus
            .iter()
            .map(|e| {
                e.reached
                    .iter()
                    .map(|f| 1.0 / self.reached_by.get(f).copied().unwrap_or(1).max(1) as f64)
                    .sum::<f64>()
                    + 1e-3
            })
            .collect();
        let total: f64 = weights.iter().sum();
        let mut x = self.rng.random::<f64>() * total;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }

    /// A child of a corpus input: one to `MAX_MUTATIONS` mutations.
    fn mutate(&mut self) -> Input {
        let at = self.pick_parent();
        let parent = self.corpus[at].input.clone();
        let space = self.spaces[parent.scenario].clone();
        let mut faults = parent.faults.clone().expect("corpus inputs carry faults");
        let mutations = self.rng.random_range(1..=MAX_MUTATIONS);
        for _ in 0..mutations {
            self.mutate_once(&space, parent.scenario, &mut faults);
        }
        faults.truncate(MAX_INPUT_FAULTS);
        // Now and then the plan on another seed: the same faults over other
        // latencies, clocks and arrivals.
        let seed = if self.rng.random_bool(RESEED_CHANCE) {
            self.rng.random_range(RESEED_FROM..=u64::from(u32::MAX))
        } else {
            parent.seed
        };
        Input {
            faults: Some(faults),
            seed,
            ..parent
        }
    }

    fn mutate_once(&mut self, space: &FaultSpace, scenario: usize, faults: &mut Vec<TimedFault>) {
        let rng = &mut self.rng;
        // Without faults only adding (or splicing in) makes a difference.
        let op = if faults.is_empty() {
            [0, 5, 6][rng.random_range(0..3)]
        } else {
            rng.random_range(0..7)
        };
        match op {
            // Add.
            0 => {
                if let Some(f) = space.new_fault(rng) {
                    faults.push(f);
                }
            }
            // A burst: two or three new faults on one node, close together
            // (a restart inside a partition, a pause on top of a slow reply).
            6 => {
                let Some(first) = space.new_fault(rng) else {
                    return;
                };
                let at = time_of(&first);
                faults.push(first);
                for _ in 0..rng.random_range(1..=2) {
                    let Some(next) = space.new_fault(rng) else {
                        return;
                    };
                    let mut fault = next.fault;
                    if let (Some(node), Some(to)) = (first.fault.node(), fault.node_mut())
                        && space.targets(&next.fault).contains(&node)
                    {
                        *to = node;
                    }
                    let close = at + rng.random_range(0..=space.window_us);
                    faults.push(space.placed(fault, close, None));
                }
            }
            // Remove.
            1 => {
                let i = rng.random_range(0..faults.len());
                faults.remove(i);
            }
            // Shift in time.
            2 => {
                let i = rng.random_range(0..faults.len());
                let t = faults[i];
                let by = rng.random_range(0..=space.shift_us);
                let at = if rng.random_bool(0.5) {
                    time_of(&t).saturating_sub(by)
                } else {
                    time_of(&t).saturating_add(by)
                };
                faults[i] = space.placed(t.fault, at, t.tag);
            }
            // Retime: a new size.
            3 => {
                let i = rng.random_range(0..faults.len());
                let t = faults[i];
                faults[i] = space.placed(space.retimed(rng, t.fault), time_of(&t), t.tag);
            }
            // Retarget: another node the kind may strike (the tag named a
            // step or message of the old node's: dropped).
            4 => {
                let i = rng.random_range(0..faults.len());
                let t = faults[i];
                let mut fault = t.fault;
                let targets = space.targets(&fault);
                if let Some(node) = fault.node_mut() {
                    *node = targets[rng.random_range(0..targets.len())];
                }
                faults[i] = space.placed(fault, time_of(&t), None);
            }
            // Splice: this plan before a time, another's of the same
            // scenario from it.
            _ => {
                let others: Vec<usize> = (0..self.corpus.len())
                    .filter(|&i| self.corpus[i].input.scenario == scenario)
                    .collect();
                if others.is_empty() {
                    return;
                }
                let other = &self.corpus[others[rng.random_range(0..others.len())]].input;
                let cut = space.time(rng);
                faults.retain(|t| time_of(t) < cut);
                faults.extend(
                    other
                        .faults
                        .iter()
                        .flatten()
                        .filter(|t| time_of(t) >= cut)
                        .copied(),
                );
                faults.sort_by_key(time_of);
            }
        }
        debug_assert!(
            faults
                .iter()
                .all(|t| t.from_us <= t.to_us && t.to_us < space.phase_end_us)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scn(name: &str) -> ValidScenario {
        leasehold_scenario::scenario::Scenario::parse(
            &std::fs::read_to_string(format!(
                "{}/../../scenarios/{name}.json",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap(),
        )
        .unwrap()
    }

    /// Every fault a mutation makes is one the scenario's model allows,
    /// inside the fault phase.
    #[test]
    fn mutations_stay_inside_the_fault_model() {
        for name in ["friday-rush", "gc-pause-zombie", "deep-backlog"] {
            let s = scn(name);
            let space = FaultSpace::of(&s);
            let mut rng = ChaCha8Rng::seed_from_u64(7);
            for _ in 0..2_000 {
                let t = space.new_fault(&mut rng).expect("the model has kinds");
                let t = space.placed(space.retimed(&mut rng, t.fault), t.from_us, None);
                assert!(
                    t.from_us <= t.to_us && t.to_us < space.phase_end_us,
                    "{t:?}"
                );
                if let Some(node) = t.fault.node() {
                    assert!(space.targets(&t.fault).contains(&node), "{t:?}");
                }
                match t.fault {
                    Fault::Pause { duration_us, .. } => {
                        let (lo, hi) = space.pause.unwrap().0;
                        assert!(duration_us <= hi && duration_us >= 1);
                        assert!(duration_us >= lo || t.to_us + duration_us <= space.phase_end_us);
                        assert!(t.to_us + duration_us <= space.phase_end_us, "{t:?}");
                    }
                    Fault::Crash {
                        restart_after_us, ..
                    } => {
                        assert!(
                            (space.restart_us.0..=space.restart_us.1).contains(&restart_after_us)
                        )
                    }
                    Fault::Partition {
                        at_us, duration_us, ..
                    }
                    | Fault::StoreOutage {
                        at_us, duration_us, ..
                    } => assert!(at_us + duration_us <= space.phase_end_us),
                    _ => {}
                }
            }
        }
    }
}
