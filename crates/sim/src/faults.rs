//! Fault injection: what can go wrong, when, and to whom.
//!
//! Every fault the simulator injects is one [`Fault`] value, recorded as it
//! happens. The injected faults of a run, in order, form its [`FaultPlan`]. A
//! run can draw its faults from seeded rates ([`FaultRates`], generate mode) or
//! take them from an explicit plan (plan mode, for replaying and shrinking):
//! the same plan gives the same run, because fault decisions are the only
//! thing a plan replaces and every other random draw comes from its own
//! stream whether or not a fault fires.
//!
//! Coordinates are chosen to survive small edits of a plan: step faults are
//! keyed by (node, the node's step counter), message faults by (node, the
//! node's message counter, leg), scheduled faults by simulated time.

use crate::node::NodeId;
use crate::rng::{
    Concern, NodeRng, RngStreams, halves, in_range, in_range_i64, ppm_roll, ppm_roll_threshold,
};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Probabilities are in parts per million so plans and rates stay integers.
pub const PPM: u32 = 1_000_000;
/// Bound on the faults one run may inject (a runaway rate is a scenario bug).
pub const MAX_FAULTS_PER_RUN: usize = 1_000_000;

/// Where within a step a crash lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "at", rename_all = "snake_case", deny_unknown_fields)]
pub enum CrashPoint {
    /// The node dies before it handles the input; the input is lost.
    BeforeInput,
    /// The node handles the input and dies after `emitted` of its outputs
    /// left (fewer than it produced).
    BetweenOutputs { emitted: u32 },
}

/// One hop of a request/reply exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Leg {
    ToStore,
    FromStore,
    ToService,
    FromService,
}

impl Leg {
    pub const ALL: [Leg; 4] = [
        Leg::ToStore,
        Leg::FromStore,
        Leg::ToService,
        Leg::FromService,
    ];

    pub fn index(self) -> usize {
        self as usize
    }
}

/// What happens to one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum MessageAction {
    /// Lost. On a reply leg this is an ambiguous outcome: the request was
    /// applied, the caller never hears.
    Drop,
    /// Delivered twice; the copy arrives `extra_us` after the original.
    Duplicate { extra_us: u64 },
    /// Delivered `extra_us` late (a latency spike, reordering, a slow reply).
    Delay { extra_us: u64 },
    /// The receiver refuses it: the store answers `Unavailable`, a service
    /// answers `Failed`; nothing is applied. Request legs only.
    Fail,
    /// The service takes the call and never answers nor acts (a hung step).
    /// `ToService` only.
    Hang,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Link {
    /// The node's link to the document store.
    Store,
    /// The node's links to every effect service.
    Services,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Nothing passes either way.
    Both,
    /// The node's requests are lost; replies would pass.
    Outbound,
    /// Requests arrive and are applied; replies to the node are lost.
    Inbound,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutageMode {
    /// Requests are refused with `Unavailable`.
    Fail,
    /// Requests vanish; callers time out.
    Timeout,
}

/// Everything the simulator can do to a run. Variants marked "consequence"
/// are recorded for readers but are never part of a plan: they follow from
/// the planned fault before them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    Crash {
        node: NodeId,
        node_step: u64,
        point: CrashPoint,
        restart_after_us: u64,
    },
    /// A crash at a set time (a deploy, a mass failure), not at a step.
    CrashAt {
        at_us: u64,
        node: NodeId,
        restart_after_us: u64,
    },
    /// Consequence: the node boots again as a new incarnation.
    Restart { node: NodeId, incarnation: u32 },
    /// The node freezes after `after_outputs` of this step's outputs left
    /// (a GC or VM pause); the rest leave when it wakes, memory intact.
    Pause {
        node: NodeId,
        node_step: u64,
        after_outputs: u32,
        duration_us: u64,
    },
    /// A pause at a set time, between two steps.
    PauseAt {
        at_us: u64,
        node: NodeId,
        duration_us: u64,
    },
    /// Consequence: a paused node wakes.
    Resume { node: NodeId },
    /// The node's wall clock jumps by `delta_us` (NTP step, operator).
    ClockJump {
        node: NodeId,
        node_step: u64,
        delta_us: i64,
    },
    Message {
        node: NodeId,
        msg: u64,
        leg: Leg,
        action: MessageAction,
    },
    Partition {
        at_us: u64,
        node: NodeId,
        link: Link,
        direction: Direction,
        duration_us: u64,
    },
    /// Consequence: a partition heals.
    PartitionHealed {
        node: NodeId,
        link: Link,
        direction: Direction,
    },
    StoreOutage {
        at_us: u64,
        duration_us: u64,
        mode: OutageMode,
    },
    /// Consequence: the store answers again.
    StoreRecovered { mode: OutageMode },
}

impl Fault {
    /// Whether this fault belongs in a plan (it is a cause, not an effect).
    pub fn is_planned(&self) -> bool {
        !matches!(
            self,
            Fault::Restart { .. }
                | Fault::Resume { .. }
                | Fault::PartitionHealed { .. }
                | Fault::StoreRecovered { .. }
        )
    }

    /// Whether this fault strikes one of a node's steps (a crash, a pause or
    /// a clock jump at a step counter), read through the one list of them
    /// the injector uses.
    pub fn is_step_fault(&self) -> bool {
        step_fault_of(self).is_some()
    }

    /// The node this fault strikes, if it strikes one node.
    pub fn node(&self) -> Option<NodeId> {
        // `Fault` is `Copy`: read through the one list of node-bearing kinds.
        let mut copy = *self;
        copy.node_mut().copied()
    }

    /// The node this fault strikes, to move it (a shrunk fleet).
    pub fn node_mut(&mut self) -> Option<&mut NodeId> {
        match self {
            Fault::Crash { node, .. }
            | Fault::CrashAt { node, .. }
            | Fault::Restart { node, .. }
            | Fault::Pause { node, .. }
            | Fault::PauseAt { node, .. }
            | Fault::Resume { node }
            | Fault::ClockJump { node, .. }
            | Fault::Message { node, .. }
            | Fault::Partition { node, .. }
            | Fault::PartitionHealed { node, .. } => Some(node),
            Fault::StoreOutage { .. } | Fault::StoreRecovered { .. } => None,
        }
    }

    /// A short kind name, for coverage reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Crash { .. } => "crash",
            Fault::CrashAt { .. } => "crash_at",
            Fault::Restart { .. } => "restart",
            Fault::Pause { .. } => "pause",
            Fault::PauseAt { .. } => "pause",
            Fault::Resume { .. } => "resume",
            Fault::ClockJump { .. } => "clock_jump",
            // Named by what struck which message, never by the section of
            // the scenario whose rate drew it: a store reply's delay may be
            // a `network` delay or a `store` slow reply, and is the same
            // fault to the protocol.
            Fault::Message { leg, action, .. } => match (leg, action) {
                (Leg::ToStore, MessageAction::Drop) => "store_request_lost",
                (Leg::ToStore, MessageAction::Duplicate { .. }) => "store_request_duplicated",
                (Leg::ToStore, MessageAction::Delay { .. }) => "store_request_delayed",
                (Leg::ToStore, MessageAction::Fail) => "store_request_refused",
                (Leg::FromStore, MessageAction::Drop) => "store_reply_lost",
                (Leg::FromStore, MessageAction::Duplicate { .. }) => "store_reply_duplicated",
                (Leg::FromStore, MessageAction::Delay { .. }) => "store_reply_delayed",
                (Leg::ToService, MessageAction::Drop) => "service_call_lost",
                (Leg::ToService, MessageAction::Duplicate { .. }) => "service_call_duplicated",
                (Leg::ToService, MessageAction::Delay { .. }) => "service_call_delayed",
                (Leg::ToService, MessageAction::Fail) => "service_call_refused",
                (Leg::FromService, MessageAction::Drop) => "service_reply_lost",
                (Leg::FromService, MessageAction::Duplicate { .. }) => "service_reply_duplicated",
                (Leg::FromService, MessageAction::Delay { .. }) => "service_reply_delayed",
                (_, MessageAction::Hang) => "service_call_hung",
                // A reply leg is never refused (plans are checked for it).
                (_, MessageAction::Fail) => "reply_refused",
            },
            Fault::Partition { direction, .. } => match direction {
                Direction::Both => "partition",
                Direction::Outbound | Direction::Inbound => "partition_one_way",
            },
            Fault::PartitionHealed { .. } => "partition_healed",
            Fault::StoreOutage { .. } => "store_outage",
            Fault::StoreRecovered { .. } => "store_recovered",
        }
    }
}

/// An explicit list of faults that a run injects instead of drawing them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FaultPlan {
    pub faults: Vec<Fault>,
}

impl FaultPlan {
    pub fn len(&self) -> usize {
        self.faults.len()
    }

    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }
}

/// Per-leg message fault rates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegRates {
    pub drop_ppm: u32,
    pub duplicate_ppm: u32,
    pub delay_ppm: u32,
    pub delay_us_min: u64,
    pub delay_us_max: u64,
    pub fail_ppm: u32,
    pub hang_ppm: u32,
}

impl LegRates {
    /// No fault can strike a message on this leg.
    pub fn is_quiet(&self) -> bool {
        self.drop_ppm == 0
            && self.duplicate_ppm == 0
            && self.delay_ppm == 0
            && self.fail_ppm == 0
            && self.hang_ppm == 0
    }

    /// The end of the last band a message on `leg` can roll into: a roll at
    /// or past it is no fault. The bands of `FaultInjector::message_faults`,
    /// summed the same way (saturating), those `leg` cannot suffer left out.
    fn hit_end_ppm(&self, leg: Leg) -> u32 {
        let mut end = self
            .drop_ppm
            .saturating_add(self.duplicate_ppm)
            .saturating_add(self.delay_ppm);
        if matches!(leg, Leg::ToStore | Leg::ToService) {
            end = end.saturating_add(self.fail_ppm);
        }
        if leg == Leg::ToService {
            end = end.saturating_add(self.hang_ppm);
        }
        end
    }
}

/// What a rate-driven run asks of every message on one leg, worked out once
/// from its [`LegRates`]: most messages are settled by this one word (8
/// bytes, so that the four legs' are found by a scaled index).
#[derive(Clone, Copy, Debug)]
struct LegDice {
    /// [`ppm_roll_threshold`] of `LegRates::hit_end_ppm`: a raw draw at or
    /// past it is no fault. `QUIET_LEG` for a leg with no dice at all
    /// (`LegRates::is_quiet`).
    hit_end_raw: u64,
}

/// `LegDice::hit_end_raw` of a quiet leg: no threshold is this large (the
/// largest is `ppm_roll_threshold(u32::MAX)`, under 2^45).
const QUIET_LEG: u64 = u64::MAX;

impl LegDice {
    fn new(r: &LegRates, leg: Leg) -> LegDice {
        let hit_end_raw = if r.is_quiet() {
            QUIET_LEG
        } else {
            ppm_roll_threshold(r.hit_end_ppm(leg))
        };
        LegDice { hit_end_raw }
    }

    #[inline(always)]
    fn quiet(self) -> bool {
        self.hit_end_raw == QUIET_LEG
    }
}

/// Seeded rates for the faults drawn as the run goes (generate mode).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRates {
    /// Chance, per step of a crashable node, that it crashes in that step.
    pub crash_ppm: u32,
    /// Of those crashes, the share that strike before the input is handled.
    pub crash_before_input_ppm: u32,
    pub restart_delay_us_min: u64,
    pub restart_delay_us_max: u64,
    pub pause_ppm: u32,
    pub pause_us_min: u64,
    pub pause_us_max: u64,
    pub clock_jump_ppm: u32,
    /// Jumps are drawn uniformly from `[-max, max]` microseconds.
    pub clock_jump_us_max: i64,
    /// Indexed by [`Leg::index`].
    pub legs: [LegRates; 4],
}

/// Per-node capabilities the injector respects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultTargets {
    pub crashable: bool,
    pub pausable: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FaultSource {
    /// Draw step and message faults from rates; `scheduled` holds the
    /// time-based ones (partitions, outages, crashes at set times).
    Generate {
        rates: Box<FaultRates>,
        scheduled: Vec<Fault>,
    },
    /// Inject exactly these faults and nothing else.
    Plan(FaultPlan),
    /// Inject these faults, each placed by time instead of by counter: see
    /// [`TimedFault`]. For shrinking, where removing one fault (or a node, or
    /// a task) shifts every later step and message counter of a node.
    Timed(Vec<TimedFault>),
}

/// A planned fault placed by simulated time: a step fault (crash, pause,
/// clock jump) fires at the node's first step in `[from_us, to_us]`, a
/// message fault at the node's first message on its leg sent in that window;
/// the counters the fault carries are ignored. With a `tag`, only a step or
/// message with that tag matches (see [`FaultInjector::decided`]: for a
/// step, the kind of input and, for a reply, of reply
/// (`InputSummary::fault_tag`); for a message, the kind of request and its
/// key, or the service, resource and step of an effect call). Time-based faults
/// (crashes and pauses at set times, partitions, outages) keep their own
/// time. A fault whose window passes without a match is not injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimedFault {
    pub fault: Fault,
    pub from_us: u64,
    pub to_us: u64,
    pub tag: Option<u64>,
}

/// A timed fault waiting for its step or message: `(from_us, to_us, tag, what)`.
type Timed<T> = (u64, u64, Option<u64>, T);

/// What the injector decided for one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepFault {
    CrashBeforeInput {
        restart_after_us: u64,
    },
    /// `emitted` is `None` in generate mode until the outputs are known.
    CrashBetweenOutputs {
        emitted: Option<u32>,
        restart_after_us: u64,
    },
    Pause {
        after_outputs: Option<u32>,
        duration_us: u64,
    },
    ClockJump {
        delta_us: i64,
    },
}

/// What only a rate-driven run needs beside its hot fields (which live in
/// [`FaultInjector`] itself): read when a die hits, and as nodes register.
enum Mode {
    Generate {
        rates: FaultRates,
        /// The end of the step-fault bands (crash, pause, clock jump): a
        /// roll at or past it is no fault.
        step_hit_end_ppm: u32,
        streams: RngStreams,
    },
    Plan {
        steps: BTreeMap<(NodeId, u64), StepFault>,
        messages: BTreeMap<(NodeId, u64, Leg), MessageAction>,
        /// Faults placed by time, by `from_us`.
        timed_steps: BTreeMap<NodeId, Vec<Timed<StepFault>>>,
        timed_messages: BTreeMap<(NodeId, Leg), Vec<Timed<MessageAction>>>,
        /// When each injected step or message fault was decided, and the tag
        /// of what it struck, by its coordinates (`None` leg: a step fault).
        decided: BTreeMap<(NodeId, u64, Option<Leg>), (u64, u64)>,
    },
}

/// A planned fault that is neither a step nor a message fault: a time-based
/// one goes on the schedule; anything else is a consequence the simulator
/// records, never one a plan may ask for.
fn schedule(fault: Fault, scheduled: &mut Vec<Fault>) {
    match fault {
        Fault::CrashAt { .. }
        | Fault::PauseAt { .. }
        | Fault::Partition { .. }
        | Fault::StoreOutage { .. } => scheduled.push(fault),
        f => assert!(!f.is_planned(), "unhandled planned fault {f:?}"),
    }
}

/// The step fault a planned [`Fault`] describes, if it is one.
fn step_fault_of(fault: &Fault) -> Option<(NodeId, u64, StepFault)> {
    match *fault {
        Fault::Crash {
            node,
            node_step,
            point,
            restart_after_us,
        } => Some((
            node,
            node_step,
            match point {
                CrashPoint::BeforeInput => StepFault::CrashBeforeInput { restart_after_us },
                CrashPoint::BetweenOutputs { emitted } => StepFault::CrashBetweenOutputs {
                    emitted: Some(emitted),
                    restart_after_us,
                },
            },
        )),
        Fault::Pause {
            node,
            node_step,
            after_outputs,
            duration_us,
        } => Some((
            node,
            node_step,
            StepFault::Pause {
                after_outputs: Some(after_outputs),
                duration_us,
            },
        )),
        Fault::ClockJump {
            node,
            node_step,
            delta_us,
        } => Some((node, node_step, StepFault::ClockJump { delta_us })),
        _ => None,
    }
}

/// Take the first timed fault whose window holds `now_us` and whose tag (if
/// any) is `tag`, dropping those whose window has passed.
fn take_timed<T: Copy>(
    list: Option<&mut Vec<Timed<T>>>,
    now_us: u64,
    tag: &dyn Fn() -> u64,
) -> Option<T> {
    // At most `MAX_FAULTS_PER_RUN` entries (asserted in `FaultInjector::new`).
    let list = list?;
    list.retain(|(_, to, _, _)| *to >= now_us);
    let mut this_tag = None;
    let i = list.iter().position(|(from, _, want, _)| {
        *from <= now_us && want.is_none_or(|w| w == *this_tag.get_or_insert_with(tag))
    })?;
    Some(list.remove(i).3)
}

pub struct FaultInjector {
    /// Until when steps and messages roll dice: the end of the fault phase
    /// in generate mode, zero when faults come from a plan. One compare
    /// tells a rate-driven run's step or message in its fault phase (nearly
    /// every one) from the rest, where a test of the mode and one of the
    /// phase were two.
    dice_until_us: u64,
    /// Generate mode's dice, beside that compare rather than inside `mode`
    /// (a field of an enum's variant is read after a test of the variant):
    /// indexed by [`Leg::index`], every leg quiet in a plan's run.
    dice: [LegDice; 4],
    /// [`ppm_roll_threshold`] of the step-fault bands' end
    /// (`Mode::Generate::step_hit_end_ppm`); unused in a plan's run.
    step_hit_end_raw: u64,
    /// Each node's step-fault stream (generate mode; empty for a plan).
    per_node: Vec<NodeRng>,
    mode: Mode,
    fault_phase_end_us: u64,
    scheduled: Vec<Fault>,
}

impl FaultInjector {
    pub fn new(source: FaultSource, fault_phase_end_us: u64, streams: RngStreams) -> FaultInjector {
        match source {
            FaultSource::Generate { rates, scheduled } => {
                let rates = *rates;
                assert!(rates.restart_delay_us_min <= rates.restart_delay_us_max);
                assert!(rates.pause_us_min <= rates.pause_us_max);
                assert!(rates.clock_jump_us_max >= 0);
                for leg in &rates.legs {
                    assert!(leg.delay_us_min <= leg.delay_us_max);
                    // `in_range`'s bound on the extra delay, checked once
                    // here: a leg that can fault draws one for every message.
                    assert!(
                        leg.is_quiet() || leg.delay_us_max - leg.delay_us_min < 1 << 32,
                        "delay span wider than 32 bits"
                    );
                }
                let dice = Leg::ALL.map(|leg| LegDice::new(&rates.legs[leg.index()], leg));
                let step_hit_end_ppm = rates
                    .crash_ppm
                    .saturating_add(rates.pause_ppm)
                    .saturating_add(rates.clock_jump_ppm);
                FaultInjector {
                    dice_until_us: fault_phase_end_us,
                    dice,
                    step_hit_end_raw: ppm_roll_threshold(step_hit_end_ppm),
                    per_node: Vec::new(),
                    mode: Mode::Generate {
                        rates,
                        step_hit_end_ppm,
                        streams,
                    },
                    fault_phase_end_us,
                    scheduled,
                }
            }
            FaultSource::Plan(plan) => {
                // A plan is what one run injected, so it keeps that bound.
                assert!(plan.faults.len() <= MAX_FAULTS_PER_RUN, "plan too long");
                let mut steps = BTreeMap::new();
                let mut messages = BTreeMap::new();
                let mut scheduled = Vec::new();
                for fault in plan.faults {
                    if let Some((node, node_step, f)) = step_fault_of(&fault) {
                        steps.insert((node, node_step), f);
                        continue;
                    }
                    match fault {
                        Fault::Message {
                            node,
                            msg,
                            leg,
                            action,
                        } => {
                            messages.insert((node, msg, leg), action);
                        }
                        f => schedule(f, &mut scheduled),
                    }
                }
                FaultInjector::without_dice(
                    Mode::Plan {
                        steps,
                        messages,
                        timed_steps: BTreeMap::new(),
                        timed_messages: BTreeMap::new(),
                        decided: BTreeMap::new(),
                    },
                    fault_phase_end_us,
                    scheduled,
                )
            }
            FaultSource::Timed(mut faults) => {
                // Bounds every `take_timed` list.
                assert!(faults.len() <= MAX_FAULTS_PER_RUN, "plan too long");
                faults.sort_by_key(|t| t.from_us);
                let mut timed_steps: BTreeMap<NodeId, Vec<_>> = BTreeMap::new();
                let mut timed_messages: BTreeMap<(NodeId, Leg), Vec<_>> = BTreeMap::new();
                let mut scheduled = Vec::new();
                for TimedFault {
                    fault,
                    from_us,
                    to_us,
                    tag,
                } in faults
                {
                    if let Some((node, _, f)) = step_fault_of(&fault) {
                        timed_steps
                            .entry(node)
                            .or_default()
                            .push((from_us, to_us, tag, f));
                        continue;
                    }
                    match fault {
                        Fault::Message {
                            node, leg, action, ..
                        } => timed_messages
                            .entry((node, leg))
                            .or_default()
                            .push((from_us, to_us, tag, action)),
                        f => schedule(f, &mut scheduled),
                    }
                }
                FaultInjector::without_dice(
                    Mode::Plan {
                        steps: BTreeMap::new(),
                        messages: BTreeMap::new(),
                        timed_steps,
                        timed_messages,
                        decided: BTreeMap::new(),
                    },
                    fault_phase_end_us,
                    scheduled,
                )
            }
        }
    }

    /// A plan's or timed faults' injector: no dice (`dice_until_us` zero,
    /// so no step or message rolls), every leg quiet, no per-node streams.
    fn without_dice(mode: Mode, fault_phase_end_us: u64, scheduled: Vec<Fault>) -> FaultInjector {
        debug_assert!(matches!(mode, Mode::Plan { .. }));
        FaultInjector {
            dice_until_us: 0,
            dice: [LegDice {
                hit_end_raw: QUIET_LEG,
            }; 4],
            step_hit_end_raw: 0,
            per_node: Vec::new(),
            mode,
            fault_phase_end_us,
            scheduled,
        }
    }

    /// When an injected fault was decided (plan and timed modes): the step
    /// or the sending of the message it struck (for a reply, when the
    /// request left), or its set time; and the tag of that step or message
    /// (0 for a fault at a set time). `None` in generate mode.
    pub fn decided(&self, fault: &Fault) -> Option<(u64, u64)> {
        let Mode::Plan { decided, .. } = &self.mode else {
            return None;
        };
        match *fault {
            Fault::CrashAt { at_us, .. }
            | Fault::PauseAt { at_us, .. }
            | Fault::Partition { at_us, .. }
            | Fault::StoreOutage { at_us, .. } => Some((at_us, 0)),
            Fault::Message { node, msg, leg, .. } => decided.get(&(node, msg, Some(leg))).copied(),
            ref f => {
                let (node, node_step, _) = step_fault_of(f)?;
                decided.get(&(node, node_step, None)).copied()
            }
        }
    }

    /// Whether faults come from a plan (exact or timed), not from rates:
    /// then [`FaultInjector::decided`] answers for every injected fault.
    pub fn follows_plan(&self) -> bool {
        matches!(self.mode, Mode::Plan { .. })
    }

    pub fn fault_phase_end_us(&self) -> u64 {
        self.fault_phase_end_us
    }

    /// The time-based faults, to be put on the event queue at the start.
    pub fn take_scheduled(&mut self) -> Vec<Fault> {
        std::mem::take(&mut self.scheduled)
    }

    /// Give `node` its own step-fault stream, keyed by its stable stream id.
    pub fn register_node(&mut self, node: NodeId, stream_id: u32) {
        if let Mode::Generate { streams, .. } = &self.mode {
            assert_eq!(self.per_node.len(), node.index(), "nodes register in order");
            self.per_node
                .push(streams.node_stream(Concern::Faults, stream_id));
        }
    }

    fn rng(per_node: &[NodeRng], node: NodeId) -> usize {
        assert!(
            node.index() < per_node.len(),
            "unregistered node {}",
            node.0
        );
        node.index()
    }

    /// The fault (if any) for this node's `node_step`-th step at `now_us`.
    /// `tag` names the step's input (plan modes only ask for it).
    pub fn step_fault(
        &mut self,
        node: NodeId,
        node_step: u64,
        now_us: u64,
        targets: FaultTargets,
        tag: &dyn Fn() -> u64,
    ) -> Option<StepFault> {
        if now_us < self.dice_until_us {
            // Generate mode, in the fault phase.
            let i = Self::rng(&self.per_node, node);
            // One draw per step: a roll split into bands (at most one
            // fault per step) and 32 bits for the fault's size. A hit
            // draws once more, whatever the targets, so this roll uses
            // the stream alike on every node. Not the whole step: a
            // crash between outputs or a pause that fires (so only on a
            // crashable or pausable node) draws again from this stream
            // in `outputs_before`, over a range set by the step's output
            // count.
            let (bits, size) = halves(self.per_node[i].random::<u64>());
            // Past the last band (crash, pause, clock jump): most steps.
            // Told from the raw bits (the same verdict as the roll's).
            debug_assert!(match &self.mode {
                Mode::Generate {
                    step_hit_end_ppm, ..
                } =>
                    (bits as u64 >= self.step_hit_end_raw) == (ppm_roll(bits) >= *step_hit_end_ppm),
                Mode::Plan { .. } => false,
            });
            if bits as u64 >= self.step_hit_end_raw {
                return None;
            }
            return self.step_fault_hit(i, now_us, targets, bits, size);
        }
        match &mut self.mode {
            Mode::Plan {
                steps,
                timed_steps,
                decided,
                ..
            } => {
                let f = steps
                    .remove(&(node, node_step))
                    .or_else(|| take_timed(timed_steps.get_mut(&node), now_us, tag));
                if f.is_some() {
                    decided.insert((node, node_step, None), (now_us, tag()));
                }
                f
            }
            // Past the fault phase.
            Mode::Generate { .. } => None,
        }
    }

    /// The fault a step's roll `bits` under the bands' end strikes
    /// (generate mode), `size` its size; draws once more from node `i`'s
    /// stream. A step in a thousand, so out of line.
    #[cold]
    #[inline(never)]
    fn step_fault_hit(
        &mut self,
        i: usize,
        now_us: u64,
        targets: FaultTargets,
        bits: u32,
        size: u32,
    ) -> Option<StepFault> {
        let Mode::Generate {
            rates,
            step_hit_end_ppm,
            ..
        } = &self.mode
        else {
            unreachable!("a step's dice rolled in a plan's run");
        };
        let roll = ppm_roll(bits);
        let crash_end = rates.crash_ppm;
        let pause_end = crash_end.saturating_add(rates.pause_ppm);
        debug_assert_eq!(
            pause_end.saturating_add(rates.clock_jump_ppm),
            *step_hit_end_ppm
        );
        let (extra, _) = halves(self.per_node[i].random::<u64>());
        if roll < crash_end {
            if !targets.crashable {
                return None;
            }
            let restart_after_us =
                in_range(size, rates.restart_delay_us_min, rates.restart_delay_us_max);
            Some(if ppm_roll(extra) < rates.crash_before_input_ppm {
                StepFault::CrashBeforeInput { restart_after_us }
            } else {
                StepFault::CrashBetweenOutputs {
                    emitted: None,
                    restart_after_us,
                }
            })
        } else if roll < pause_end {
            if !targets.pausable {
                return None;
            }
            let pause_us = in_range(size, rates.pause_us_min, rates.pause_us_max);
            // A pause never outlives the fault phase: nodes wake by the heal.
            let duration_us = pause_us.min(self.fault_phase_end_us - now_us).max(1);
            Some(StepFault::Pause {
                after_outputs: None,
                duration_us,
            })
        } else {
            let jump_us = in_range_i64(size, -rates.clock_jump_us_max, rates.clock_jump_us_max);
            (jump_us != 0).then_some(StepFault::ClockJump { delta_us: jump_us })
        }
    }

    /// How many of `of` outputs leave before a crash or pause drawn without
    /// that number (generate mode): any of `0..of` for a crash, `0..=of` for
    /// a pause.
    pub fn outputs_before(&mut self, node: NodeId, of: u32, inclusive: bool) -> u32 {
        match &mut self.mode {
            Mode::Plan { .. } => unreachable!("plans carry the count"),
            Mode::Generate { .. } => {
                let i = Self::rng(&self.per_node, node);
                let hi = if inclusive { of } else { of.saturating_sub(1) };
                self.per_node[i].random_range(0..=hi)
            }
        }
    }

    /// The faults (if any) for message `msg` of `node` on its two legs, the
    /// request's then the reply's, in that order. `rng` is the node's own
    /// message-fault stream, drawn from the same amount every time. `tag`
    /// names the message (plan modes only ask for it).
    ///
    /// Inlined: every message asks, and generate mode is a few compares and
    /// a draw per leg; a plan's lookups stay out of line. Both legs in one
    /// call, so that generate mode tests its mode and the phase once.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn message_faults(
        &mut self,
        node: NodeId,
        msg: u64,
        leg: Leg,
        reply_leg: Leg,
        now_us: u64,
        rng: &mut NodeRng,
        tag: &dyn Fn() -> u64,
    ) -> (Option<MessageAction>, Option<MessageAction>) {
        if now_us < self.dice_until_us {
            // Generate mode, in the fault phase.
            return (
                Self::generated_message_fault(&self.mode, &self.dice, leg, rng),
                Self::generated_message_fault(&self.mode, &self.dice, reply_leg, rng),
            );
        }
        match &self.mode {
            Mode::Plan { .. } => (
                self.planned_message_fault(node, msg, leg, now_us, tag),
                self.planned_message_fault(node, msg, reply_leg, now_us, tag),
            ),
            // Past the fault phase.
            Mode::Generate { .. } => (None, None),
        }
    }

    /// [`FaultInjector::message_faults`] for one leg, in the fault phase of
    /// generate mode.
    #[inline(always)]
    fn generated_message_fault(
        mode: &Mode,
        dice: &[LegDice; 4],
        leg: Leg,
        rng: &mut NodeRng,
    ) -> Option<MessageAction> {
        let d = dice[leg.index()];
        if d.quiet() {
            // No fault this leg can suffer all run (the scenario or the
            // swarm draw left every kind off): skip the dice, as every
            // message of the run will.
            return None;
        }
        // One draw per message and leg: the roll and the extra delay.
        let (bits, extra) = halves(rng.random::<u64>());
        // Past the last band this leg has: no fault (most messages). Told
        // from the raw bits, the same verdict as the roll's: the roll's
        // multiply and shift only for a hit (with the step's roll, 188.27 M
        // to 188.21 M instructions, friday-rush seeds 1..5).
        debug_assert!(match mode {
            Mode::Generate { rates, .. } => {
                (bits as u64 >= d.hit_end_raw)
                    == (ppm_roll(bits) >= rates.legs[leg.index()].hit_end_ppm(leg))
            }
            Mode::Plan { .. } => false,
        });
        if bits as u64 >= d.hit_end_raw {
            return None;
        }
        Self::generated_message_action(mode, leg, ppm_roll(bits), extra)
    }

    /// [`FaultInjector::message_action`] of a rate-driven run's leg `leg`.
    #[inline(never)]
    fn generated_message_action(
        mode: &Mode,
        leg: Leg,
        roll: u32,
        extra: u32,
    ) -> Option<MessageAction> {
        let Mode::Generate { rates, .. } = mode else {
            unreachable!("a message's dice rolled in a plan's run");
        };
        Self::message_action(&rates.legs[leg.index()], leg, roll, extra)
    }

    /// The fault a roll below its leg's `hit_end_ppm` strikes (generate
    /// mode); `extra` sizes a delay or a duplicate's lag.
    #[inline(always)]
    fn message_action(r: &LegRates, leg: Leg, roll: u32, extra: u32) -> Option<MessageAction> {
        let extra_us = in_range(extra, r.delay_us_min, r.delay_us_max);
        // One roll, split into bands: at most one fault per message.
        let mut band = 0u32;
        let mut hit = |ppm: u32| {
            let lo = band;
            band = band.saturating_add(ppm);
            roll >= lo && roll < band
        };
        Some(if hit(r.drop_ppm) {
            MessageAction::Drop
        } else if hit(r.duplicate_ppm) {
            MessageAction::Duplicate { extra_us }
        } else if hit(r.delay_ppm) {
            MessageAction::Delay { extra_us }
        } else if matches!(leg, Leg::ToStore | Leg::ToService) && hit(r.fail_ppm) {
            MessageAction::Fail
        } else if leg == Leg::ToService && hit(r.hang_ppm) {
            MessageAction::Hang
        } else {
            unreachable!("roll {roll} is under the leg's last band but in none")
        })
    }

    /// [`FaultInjector::message_faults`] for one leg, for a run driven by a
    /// plan.
    #[inline(never)]
    fn planned_message_fault(
        &mut self,
        node: NodeId,
        msg: u64,
        leg: Leg,
        now_us: u64,
        tag: &dyn Fn() -> u64,
    ) -> Option<MessageAction> {
        let Mode::Plan {
            messages,
            timed_messages,
            decided,
            ..
        } = &mut self.mode
        else {
            unreachable!("a plan's fault asked of a generated run");
        };
        let f = messages
            .remove(&(node, msg, leg))
            .or_else(|| take_timed(timed_messages.get_mut(&(node, leg)), now_us, tag));
        if f.is_some() {
            decided.insert((node, msg, Some(leg)), (now_us, tag()));
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every roll under a leg's `hit_end_ppm` lands in one of its bands, and
    /// every roll at or past it in none (the bands written out, as before
    /// the threshold).
    #[test]
    fn hit_end_is_where_the_bands_end() {
        let rates = [
            LegRates::default(),
            LegRates {
                drop_ppm: 1_000,
                duplicate_ppm: 2_000,
                delay_ppm: 3_000,
                delay_us_min: 5,
                delay_us_max: 9,
                fail_ppm: 4_000,
                hang_ppm: 5_000,
            },
            LegRates {
                fail_ppm: 7,
                hang_ppm: 11,
                ..LegRates::default()
            },
            LegRates {
                drop_ppm: u32::MAX - 3,
                delay_ppm: 600_000,
                ..LegRates::default()
            },
        ];
        for r in &rates {
            for leg in Leg::ALL {
                let end = r.hit_end_ppm(leg);
                for roll in (0..PPM).step_by(7).chain([end.saturating_sub(1), end]) {
                    if roll >= PPM {
                        continue;
                    }
                    let mut band = 0u32;
                    let mut hit = |ppm: u32| {
                        let lo = band;
                        band = band.saturating_add(ppm);
                        roll >= lo && roll < band
                    };
                    let in_a_band = hit(r.drop_ppm)
                        || hit(r.duplicate_ppm)
                        || hit(r.delay_ppm)
                        || (matches!(leg, Leg::ToStore | Leg::ToService) && hit(r.fail_ppm))
                        || (leg == Leg::ToService && hit(r.hang_ppm));
                    assert_eq!(in_a_band, roll < end, "{r:?} {leg:?} roll {roll}");
                    if roll < end {
                        assert!(FaultInjector::message_action(r, leg, roll, 0).is_some());
                    }
                }
            }
        }
    }
}
