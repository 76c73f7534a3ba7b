//! The simulation loop: pops events in (time, sequence) order and routes them
//! between nodes, the network, the store and the effect services, injecting
//! faults on the way.
//!
//! Randomness discipline: every draw for a message (latencies of both legs,
//! the service's work time, fault dice for both legs) is made from the
//! sender's own streams at the moment it sends, whether or not a fault fires.
//! So removing one fault from a plan never shifts another message's dice.

use crate::clock::LocalClock;
use crate::faults::{
    CrashPoint, Direction, Fault, FaultInjector, FaultPlan, FaultSource, FaultTargets, Leg, Link,
    MAX_FAULTS_PER_RUN, MessageAction, OutageMode, StepFault,
};
use crate::node::{Node, NodeId, NodeSpec};
use crate::queue::{
    EventQueue, PoppedSlot, TimerQueue, order_is_empty, order_seq, order_slot, order_time_us,
};
use crate::record::{Actor, InputSummary, LossReason, Observer, Record, RecordKind};
use crate::rng::{Concern, DrawRange, NodeRng, RngStreams, halves};
use crate::services::{EffectService, ServiceSpec};
use crate::store::{StoreStats, VersionedStore};
use crate::trace_hash::{Gather, TraceHasher};
use leasehold_interface::{
    EffectReply, EffectRequest, Input, Output, RequestId, StoreReply, StoreRequest,
};
use rand::RngExt;
use serde::Serialize;
use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};
use std::mem::ManuallyDrop;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct NetworkSpec {
    /// One-way latency of every message, drawn uniformly per message.
    pub latency_us_min: u64,
    pub latency_us_max: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RunLimits {
    /// Hard stop in simulated time, whatever the observer says.
    pub max_sim_time_us: u64,
    /// Bound on processed events: a run past it is reported, not looped on.
    pub max_events: u64,
    /// Bound on the event queue's length.
    pub max_queue_len: usize,
    /// Bound on the outputs of one step. A node's step cannot be stopped
    /// from outside while it runs, but its outputs are counted as soon as
    /// it returns: a runaway loop that returns ends the run here, naming
    /// the node and the step, before any of them is sent.
    pub max_outputs_per_step: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimConfig {
    pub network: NetworkSpec,
    /// Faults are injected before this time; the heal phase follows.
    pub fault_phase_end_us: u64,
    pub faults: FaultSource,
    /// A node that stops itself (`Output::Exit`) boots again after this long.
    pub exit_restart_us_min: u64,
    pub exit_restart_us_max: u64,
    pub limits: RunLimits,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Nothing left to happen.
    Quiescent,
    /// The observer ended the run.
    Observer,
    /// `max_sim_time_us` reached.
    TimeLimit,
    /// `max_events` reached.
    EventLimit,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunStats {
    pub events: u64,
    pub sim_time_us: u64,
    pub stop: StopReason,
    pub store: StoreStats,
    pub effect_calls: u64,
    /// Planned faults injected (crashes, pauses, lost messages, ...).
    pub faults: u64,
    pub max_queue_len: usize,
    /// Queue length summed over events: over `events`, the mean depth (what
    /// the event-queue floor is measured at).
    pub queue_len_total: u64,
    pub trace_hash: u64,
    /// Every planned fault injected, in order: replaying this plan reproduces
    /// the run.
    #[serde(skip)]
    pub plan: FaultPlan,
    /// For a run driven by a plan (exact or timed): when each fault of
    /// `plan` was decided and the tag of what it struck (see
    /// `FaultInjector::decided`). Empty otherwise.
    #[serde(skip)]
    pub plan_decided: Vec<(u64, u64)>,
}

/// Everything decided about a request when it was sent.
#[derive(Clone, Copy, Debug)]
struct Envelope {
    actor: Actor,
    request: RequestId,
    /// The sender's message counter (fault-plan coordinate).
    msg: u64,
    decided_us: u64,
    sent_us: u64,
    reply_latency_us: u64,
    reply_fault: Option<MessageAction>,
    /// A `Fail` or `Hang` decided for the request leg.
    refuse: Option<MessageAction>,
    work_us: u64,
}

impl Envelope {
    /// A duplicate's envelope: a copy with no faults of its own.
    fn copy(self) -> Envelope {
        Envelope {
            reply_fault: None,
            refuse: None,
            ..self
        }
    }
}

/// A request on its way ([`Simulation::launch`]): its envelope (work time
/// still zero), the raw draw for an effect's work time, and when it and its
/// duplicate (if it has one) arrive.
struct Sent {
    env: Envelope,
    work_raw: u64,
    first_at: u64,
    copy_at: Option<u64>,
}

enum Event<K, V> {
    Boot {
        node: NodeId,
    },
    ToNode {
        node: NodeId,
        incarnation: u32,
        input: Input<K, V>,
    },
    ToStore {
        env: Envelope,
        op: StoreRequest<K, V>,
    },
    ToService {
        env: Envelope,
        call: EffectRequest,
    },
    Resume {
        node: NodeId,
        incarnation: u32,
    },
    Scheduled(Fault),
    PartitionEnd {
        node: NodeId,
        link: Link,
        direction: Direction,
    },
    OutageEnd {
        mode: OutageMode,
    },
    HealPhase,
}

/// A step's outputs, written by the node.
type Outputs<N> = Vec<Output<<N as Node>::Key, <N as Node>::Value, <N as Node>::Event>>;

/// An output a paused node produced, and the time it decided it.
type HeldOutput<N> = (
    Output<<N as Node>::Key, <N as Node>::Value, <N as Node>::Event>,
    u64,
);

struct Slot<N: Node> {
    spec: NodeSpec,
    node: Option<N>,
    /// Incremented at every boot; the first boot is incarnation 1.
    incarnation: u32,
    /// Steps over all incarnations: the coordinate step faults use.
    steps: u64,
    /// Messages sent over all incarnations: the coordinate message faults use.
    msgs: u64,
    /// When the node wants to wake (its `poll_timeout`, on its own clock);
    /// armed in `Simulation::timers` at the matching simulated time.
    timer_at: Option<leasehold_interface::Instant>,
    paused_until_us: Option<u64>,
    /// Outputs produced before a pause struck, with the time they were decided.
    held: Vec<HeldOutput<N>>,
    /// Active partitions per (link, direction) as counters (they may overlap).
    cut: [u32; 6],
    /// Active partitions cutting each leg (by `Leg::index`), kept with `cut`
    /// so that a message's test is one read, not two found through tables.
    leg_cut: [u32; 4],
    net_rng: NodeRng,
    fault_rng: NodeRng,
    work_rng: NodeRng,
    restart_rng: NodeRng,
}

fn cut_index(link: Link, direction: Direction) -> usize {
    (link as usize) * 3 + direction as usize
}

/// The link a message on `leg` takes, and the one-way partition that cuts
/// it (a partition of `Direction::Both` cuts it too).
fn leg_route(leg: Leg) -> (Link, Direction) {
    match leg {
        Leg::ToStore => (Link::Store, Direction::Outbound),
        Leg::FromStore => (Link::Store, Direction::Inbound),
        Leg::ToService => (Link::Services, Direction::Outbound),
        Leg::FromService => (Link::Services, Direction::Inbound),
    }
}

impl<N: Node> Slot<N> {
    /// Whether a message on `leg` to or from this node is cut off.
    #[inline(always)]
    fn is_cut(&self, leg: Leg) -> bool {
        self.leg_cut[leg.index()] > 0
    }

    /// A partition of `link` in `direction` starts (or, with `starts`
    /// false, heals): counted in `cut` and in every leg it cuts.
    fn partition(&mut self, link: Link, direction: Direction, starts: bool) {
        let i = cut_index(link, direction);
        if starts {
            self.cut[i] += 1;
        } else {
            assert!(self.cut[i] > 0, "healing a partition that is not there");
            self.cut[i] -= 1;
        }
        for leg in Leg::ALL {
            let (leg_link, one_way) = leg_route(leg);
            if leg_link == link && (direction == Direction::Both || direction == one_way) {
                let n = &mut self.leg_cut[leg.index()];
                *n = if starts { *n + 1 } else { *n - 1 };
            }
            // A leg is cut exactly when a partition of its link cuts both
            // ways or its own way.
            debug_assert_eq!(
                self.is_cut(leg),
                self.cut[cut_index(leg_link, Direction::Both)] > 0
                    || self.cut[cut_index(leg_link, one_way)] > 0
            );
        }
    }
}

/// Builds a fresh node for (node, incarnation): a restart loses all memory.
pub type NodeFactory<N> = Box<dyn FnMut(NodeId, u32) -> N>;

/// The `i`-th write of the workload: when it reaches the store, and what it is.
pub type WorkloadFn<K, V> = Box<dyn FnMut(u64) -> (u64, StoreRequest<K, V>)>;

/// The most documents [`Simulation::set_workload`] makes room for in the
/// store up front (a million tasks' worth).
const WORKLOAD_DOCUMENTS_RESERVED: u64 = 1 << 20;

struct Workload<K, V> {
    count: u64,
    /// Index of the next arrival to queue.
    next: u64,
    /// Sequence number reserved for arrival 0; arrival `i` has `first_seq + i`.
    first_seq: u64,
    last_at_us: u64,
    arrival: WorkloadFn<K, V>,
}

pub struct Simulation<N: Node> {
    config: SimConfig,
    /// `config.network`'s latencies, checked once for every message's draws.
    latency_us: DrawRange,
    now_us: u64,
    queue: EventQueue<Event<N::Key, N::Value>>,
    slots: Vec<Slot<N>>,
    /// The `stream_id` of every slot: no two nodes share random streams.
    stream_ids: BTreeSet<u32>,
    factory: NodeFactory<N>,
    store: VersionedStore<N::Key, N::Value>,
    store_outages: [u32; 2],
    services: Vec<EffectService>,
    workload: Option<Workload<N::Key, N::Value>>,
    faults: FaultInjector,
    streams: RngStreams,
    hasher: TraceHasher,
    /// Node wake-ups, ordered with the events by the same sequence numbers.
    timers: TimerQueue,
    events: u64,
    plan: FaultPlan,
    max_queue_len: usize,
    queue_len_total: u64,
}

// Inlined into each call site, where the kind is known: the hashing of that
// kind alone is left, with no dispatch on the kind.
#[inline(always)]
fn emit<K: Hash, V: Hash, E: Hash, O: Observer<K, V, E>>(
    hasher: &mut TraceHasher,
    observer: &mut O,
    time_us: u64,
    kind: RecordKind<'_, K, V, E>,
) {
    hash_record(&Record { time_us, kind }, hasher);
    // By parts: a record the observer skips is never built in memory.
    observer.record_parts(time_us, kind);
}

/// Feed one record to the trace hash. Everything a run decides is hashed in
/// full; what the store hands back is hashed by version only. Versions are
/// global revisions, unique per write, and every write is hashed with its
/// value, so a version names one document exactly: the digest tells runs
/// apart as well as hashing whole documents would, at a fraction of the
/// bytes (a poll's reply is sixteen documents).
///
/// The common kinds are written by hand, their fixed fields gathered into one
/// copy: the bytes are exactly those `derive(Hash)` on [`Record`] feeds the
/// hasher (the time, the kind's discriminant, the fields in order), which a
/// test checks. Faults are gathered per variant too
/// ([`TraceHasher::put_fault_record`]); the heal phase goes through the derive
/// itself.
#[inline(always)]
fn hash_record<K: Hash, V: Hash, E: Hash>(record: &Record<'_, K, V, E>, hasher: &mut TraceHasher) {
    let t = record.time_us;
    match &record.kind {
        &RecordKind::Step {
            node,
            incarnation,
            local,
            input,
        } => {
            // `RecordKind::Step` is discriminant 0; then the input's.
            #[inline(always)]
            fn head<const N: usize>(
                t: u64,
                node: NodeId,
                incarnation: u32,
                local: u64,
            ) -> Gather<N> {
                let mut g = Gather::new();
                g.u64(t).u8(0).u32(node.0).u32(incarnation).u64(local);
                g
            }
            let local = local.as_micros();
            match input {
                InputSummary::Start => {
                    hasher.put_gathered(head::<26>(t, node, incarnation, local).u8(0));
                }
                InputSummary::Timeout => {
                    hasher.put_gathered(head::<26>(t, node, incarnation, local).u8(1));
                }
                InputSummary::StoreReply { request } => hasher
                    .put_gathered(head::<34>(t, node, incarnation, local).u8(2).u64(request.0)),
                InputSummary::EffectReply { request, reply } => hasher.put_gathered(
                    head::<35>(t, node, incarnation, local)
                        .u8(3)
                        .u64(request.0)
                        .u8(reply as u8),
                ),
            }
        }
        &RecordKind::Lost {
            node,
            incarnation,
            request,
            leg,
            reason,
        } => hasher.put_gathered(
            Gather::<27>::new()
                .u64(t)
                .u8(3)
                .u32(node.0)
                .u32(incarnation)
                .u64(request.0)
                .u8(leg as u8)
                .u8(reason as u8),
        ),
        &RecordKind::Event {
            node,
            incarnation,
            event,
        } => {
            hasher.put_gathered(
                Gather::<17>::new()
                    .u64(t)
                    .u8(4)
                    .u32(node.0)
                    .u32(incarnation),
            );
            event.hash(hasher);
        }
        &RecordKind::Store {
            actor,
            request,
            op,
            reply,
            before,
            decided_us: _,
        } => hasher.put_store_record(t, actor, request, op, reply, before),
        &RecordKind::Effect {
            actor,
            request,
            call,
            outcome,
            decided_us,
            sent_us,
        } => {
            // The actor, then the fields after it, as derived.
            #[inline(always)]
            fn tail<const N: usize>(
                mut g: Gather<N>,
                request: RequestId,
                call: EffectRequest,
                outcome: EffectReply,
                decided_us: u64,
                sent_us: u64,
            ) -> Gather<N> {
                g.u64(request.0)
                    .u16(call.service.0)
                    .u64(call.resource)
                    .u32(call.step)
                    .u64(call.token)
                    .u8(call.idempotency_key as u8)
                    .u8(outcome as u8)
                    .u64(decided_us)
                    .u64(sent_us);
                g
            }
            match actor {
                Actor::Node { node, incarnation } => {
                    let mut g = Gather::<66>::new();
                    g.u64(t).u8(2).u8(0).u32(node.0).u32(incarnation);
                    hasher.put_gathered(&tail(g, request, call, outcome, decided_us, sent_us));
                }
                Actor::External => {
                    let mut g = Gather::<58>::new();
                    g.u64(t).u8(2).u8(1);
                    hasher.put_gathered(&tail(g, request, call, outcome, decided_us, sent_us));
                }
            }
        }
        &RecordKind::Exit { node, incarnation } => hasher.put_gathered(
            Gather::<17>::new()
                .u64(t)
                .u8(6)
                .u32(node.0)
                .u32(incarnation),
        ),
        &RecordKind::Dropped { node, incarnation } => hasher.put_gathered(
            Gather::<17>::new()
                .u64(t)
                .u8(7)
                .u32(node.0)
                .u32(incarnation),
        ),
        RecordKind::Fault(fault) => hasher.put_fault_record(t, fault),
        RecordKind::HealPhase => record.hash(hasher),
    }
}

impl<N: Node> Simulation<N> {
    pub fn new(config: SimConfig, seed: u64, factory: NodeFactory<N>) -> Simulation<N> {
        // Asserts the range nonempty and at most 2^32 wide, once for the run.
        let latency_us =
            DrawRange::new(config.network.latency_us_min, config.network.latency_us_max);
        assert!(config.exit_restart_us_min <= config.exit_restart_us_max);
        assert!(config.limits.max_queue_len > 0);
        let streams = RngStreams::new(seed);
        Simulation {
            queue: EventQueue::new(config.limits.max_queue_len),
            faults: FaultInjector::new(config.faults.clone(), config.fault_phase_end_us, streams),
            config,
            latency_us,
            now_us: 0,
            slots: Vec::new(),
            stream_ids: BTreeSet::new(),
            factory,
            store: VersionedStore::new(),
            store_outages: [0; 2],
            services: Vec::new(),
            workload: None,
            streams,
            hasher: TraceHasher::new(),
            timers: TimerQueue::new(),
            events: 0,
            plan: FaultPlan::default(),
            max_queue_len: 0,
            queue_len_total: 0,
        }
    }

    pub fn add_node(&mut self, spec: NodeSpec) -> NodeId {
        let id = NodeId(self.slots.len() as u32);
        self.timers.add_node(id.0);
        assert!(
            self.stream_ids.insert(spec.stream_id),
            "two nodes share random streams"
        );
        self.faults.register_node(id, spec.stream_id);
        self.queue
            .push(spec.boot_at_ms * 1_000, Event::Boot { node: id });
        let stream_id = spec.stream_id;
        self.slots.push(Slot {
            spec,
            node: None,
            incarnation: 0,
            steps: 0,
            msgs: 0,
            timer_at: None,
            paused_until_us: None,
            held: Vec::new(),
            cut: [0; 6],
            leg_cut: [0; 4],
            net_rng: self.streams.node_stream(Concern::Network, stream_id),
            fault_rng: self.streams.node_stream(Concern::MessageFaults, stream_id),
            work_rng: self.streams.node_stream(Concern::Services, stream_id),
            restart_rng: self.streams.node_stream(Concern::Restarts, stream_id),
        });
        id
    }

    pub fn add_service(&mut self, spec: ServiceSpec) -> leasehold_interface::ServiceId {
        let id = leasehold_interface::ServiceId(self.services.len() as u16);
        self.services.push(EffectService::new(spec));
        id
    }

    /// The writes from outside the fleet (customers placing orders): `count`
    /// of them, the `i`-th given by `arrival(i)` as (time it reaches the
    /// store, request), in nondecreasing time. Call once, after the nodes
    /// are added.
    ///
    /// They are pulled lazily, one at a time, but order exactly as if all had
    /// been queued now (their sequence numbers are reserved here): a million
    /// arrivals cost one queued event, not a million.
    pub fn set_workload(&mut self, count: u64, arrival: WorkloadFn<N::Key, N::Value>) {
        assert!(self.workload.is_none(), "the workload is set once");
        let first_seq = self.queue.reserve_seqs(count);
        // Each arrival is a write, most often one creating its document:
        // room for them up front (up to a bound, for a workload that
        // rewrites a few documents many times).
        self.store.reserve(
            usize::try_from(count.min(WORKLOAD_DOCUMENTS_RESERVED)).expect("2^20 fits a usize"),
        );
        self.workload = Some(Workload {
            count,
            next: 0,
            first_seq,
            last_at_us: 0,
            arrival,
        });
        self.feed_workload();
    }

    /// Queue the next arrival of the workload, if any is left.
    fn feed_workload(&mut self) {
        let Some(w) = self.workload.as_mut() else {
            return;
        };
        if w.next == w.count {
            return;
        }
        let index = w.next;
        let (at_us, op) = (w.arrival)(index);
        assert!(at_us >= w.last_at_us, "workload arrivals out of order");
        w.last_at_us = at_us;
        w.next += 1;
        let seq = w.first_seq + index;
        let env = Envelope {
            actor: Actor::External,
            request: RequestId(index),
            msg: index,
            decided_us: at_us,
            sent_us: at_us,
            reply_latency_us: 0,
            reply_fault: None,
            refuse: None,
            work_us: 0,
        };
        self.queue
            .push_reserved(at_us, seq, Event::ToStore { env, op });
    }

    pub fn store(&self) -> &VersionedStore<N::Key, N::Value> {
        &self.store
    }

    pub fn node_specs(&self) -> impl Iterator<Item = &NodeSpec> {
        self.slots.iter().map(|s| &s.spec)
    }

    pub fn now_us(&self) -> u64 {
        self.now_us
    }

    pub fn clock_of(&self, node: NodeId) -> LocalClock {
        self.slots[node.index()].spec.clock
    }

    /// Run to completion. Deterministic: the same seed, nodes, fault source
    /// and observer decisions give the same records in the same order.
    pub fn run<O: Observer<N::Key, N::Value, N::Event>>(&mut self, observer: &mut O) -> RunStats {
        for fault in self.faults.take_scheduled() {
            let at_us = match fault {
                Fault::CrashAt { at_us, .. }
                | Fault::PauseAt { at_us, .. }
                | Fault::Partition { at_us, .. }
                | Fault::StoreOutage { at_us, .. } => at_us,
                other => unreachable!("not a scheduled fault: {other:?}"),
            };
            self.queue.push(at_us, Event::Scheduled(fault));
        }
        // Always announced, even with no fault phase, so observers can start
        // their liveness clocks from one record.
        self.queue
            .push(self.config.fault_phase_end_us, Event::HealPhase);
        let limits = self.config.limits;
        // The buffer every step writes its outputs into (empty between
        // steps), owned here and lent down: as a field of the simulator, each
        // step took it out and put it back (~15 instructions a step) to
        // send its outputs with the simulator borrowed.
        let mut out: Outputs<N> = Vec::with_capacity(16);
        let stop = loop {
            // The next of the events and the timers, by (time, sequence):
            // each queue's first key as one integer (`EMPTY_ORDER` when
            // empty, after every real key), one compare, no `Option`s.
            let next_event = self.queue.first_order();
            let next_timer = self.timers.first_order();
            // The two cases apart from here, each with its own copy of the
            // checks below (`admit`): one branch on which comes first, where
            // a flag was tested three times.
            if next_timer < next_event {
                // A timer first is a real one, so the two sequence numbers
                // differ (an empty queue's is `MAX_SEQ`, no key's). Not
                // `assert_ne!`: its operands, kept for its message, were
                // stored to the stack before every compare.
                assert!(
                    order_seq(next_event) != order_seq(next_timer),
                    "sequence numbers are unique"
                );
                let next_us = order_time_us(next_timer);
                if let Some(stop) = self.admit(next_us, &limits, observer) {
                    break stop;
                }
                // The timer stays armed while it fires (see `fire_timer`).
                assert!(next_us >= self.now_us, "time went backwards");
                self.now_us = next_us;
                self.fire_timer(NodeId(order_slot(next_timer)), &mut out, observer);
                continue;
            }
            // Else the event decides, and is empty only when both are.
            if order_is_empty(next_event) {
                break StopReason::Quiescent;
            }
            assert!(
                order_seq(next_event) != order_seq(next_timer),
                "sequence numbers are unique"
            );
            if let Some(stop) = self.admit(order_time_us(next_event), &limits, observer) {
                break stop;
            }
            let (time_us, slot) = self.queue.pop_slot().expect("peeked");
            assert!(time_us >= self.now_us, "time went backwards");
            self.now_us = time_us;
            self.dispatch(slot, &mut out, observer);
        };
        RunStats {
            events: self.events,
            sim_time_us: self.now_us,
            stop,
            store: *self.store.stats(),
            effect_calls: self.services.iter().map(|s| s.calls()).sum(),
            faults: self.plan.len() as u64,
            max_queue_len: self.max_queue_len,
            queue_len_total: self.queue_len_total,
            trace_hash: self.hasher.digest(),
            plan_decided: if self.faults.follows_plan() {
                // Every fault of a planned run was decided by the plan.
                self.plan
                    .faults
                    .iter()
                    .map(|f| {
                        self.faults
                            .decided(f)
                            .expect("a planned run records when each fault was decided")
                    })
                    .collect()
            } else {
                Vec::new()
            },
            plan: std::mem::take(&mut self.plan),
        }
    }

    /// Whether the run stops before the next event or timer, due at
    /// `next_us` (then why), else the event counted. Inlined into both of
    /// the run loop's cases.
    #[inline(always)]
    fn admit<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        next_us: u64,
        limits: &RunLimits,
        observer: &mut O,
    ) -> Option<StopReason> {
        if next_us > limits.max_sim_time_us {
            self.now_us = limits.max_sim_time_us;
            return Some(StopReason::TimeLimit);
        }
        if observer.should_stop(next_us) {
            return Some(StopReason::Observer);
        }
        if self.events >= limits.max_events {
            return Some(StopReason::EventLimit);
        }
        let queued = self.queue.len() + self.timers.len();
        // A new deepest queue is rare: a branch, not a store every event.
        if queued > self.max_queue_len {
            self.max_queue_len = queued;
        }
        self.queue_len_total += queued as u64;
        self.events += 1;
        None
    }

    fn fault<O: Observer<N::Key, N::Value, N::Event>>(&mut self, fault: Fault, observer: &mut O) {
        if fault.is_planned() {
            assert!(
                self.plan.faults.len() < MAX_FAULTS_PER_RUN,
                "fault limit reached"
            );
            self.plan.faults.push(fault);
        }
        emit(
            &mut self.hasher,
            observer,
            self.now_us,
            RecordKind::Fault(fault),
        );
    }

    /// Handle the event in the queue's slab `slot` (just popped). The event
    /// is taken out here and matched at once: popping it into a local and
    /// passing it in moved its 184 bytes three times (~80 instructions an
    /// event). Inlined into the run loop, its one caller: the call's saves
    /// and restores were ~17 instructions an event.
    #[inline(always)]
    fn dispatch<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        slot: PoppedSlot,
        out: &mut Outputs<N>,
        observer: &mut O,
    ) {
        if let Event::ToStore { .. } = self.queue.popped(&slot) {
            // Read where it lies: moved out, the request and its envelope
            // (~150 bytes) were copied to the stack first, since the
            // workload's next arrival may be pushed before they are read.
            return self.store_arrive(slot, observer);
        }
        // Each kind taken out under its own test, known before the take:
        // one compare after it, where a `match` on the taken event worked
        // its kind out again.
        if let Event::ToNode { .. } = self.queue.popped(&slot) {
            let Event::ToNode {
                node,
                incarnation,
                input,
            } = self.queue.take(slot)
            else {
                unreachable!("a message to a node's slot")
            };
            let slot = &self.slots[node.index()];
            if slot.incarnation != incarnation
                || slot.node.is_none()
                || slot.paused_until_us.is_some()
            {
                return self.defer_or_drop(node, incarnation, input, observer);
            }
            return self.step(node, input, out, observer);
        }
        if !matches!(self.queue.popped(&slot), Event::ToService { .. }) {
            return self.dispatch_rare(slot, out, observer);
        }
        let Event::ToService { env, call } = self.queue.take(slot) else {
            unreachable!("a call to a service's slot")
        };
        self.service_arrive(env, call, observer)
    }

    /// A reply for a node that is gone (a later incarnation, or down) or
    /// frozen. Rare, so out of line: the run loop's hot code stays dense.
    #[cold]
    #[inline(never)]
    fn defer_or_drop<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        incarnation: u32,
        input: Input<N::Key, N::Value>,
        observer: &mut O,
    ) {
        let slot = &self.slots[node.index()];
        if slot.incarnation != incarnation || slot.node.is_none() {
            emit(
                &mut self.hasher,
                observer,
                self.now_us,
                RecordKind::Dropped { node, incarnation },
            );
            return;
        }
        let until = slot
            .paused_until_us
            .expect("a live node's message is held only while it is paused");
        // The message waits in the socket buffer of a frozen process.
        self.queue.push(
            until,
            Event::ToNode {
                node,
                incarnation,
                input,
            },
        );
    }

    /// The events that are not messages: boots, resumes, faults and their
    /// ends. A few per thousand events, so out of line and cold: inlined
    /// into the run loop they spread its hot code over more cache lines.
    #[cold]
    #[inline(never)]
    fn dispatch_rare<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        slot: PoppedSlot,
        out: &mut Outputs<N>,
        observer: &mut O,
    ) {
        match self.queue.take(slot) {
            Event::Boot { node } => self.boot(node, out, observer),
            Event::Resume { node, incarnation } => self.resume(node, incarnation, observer),
            Event::Scheduled(fault) => self.scheduled(fault, observer),
            Event::PartitionEnd {
                node,
                link,
                direction,
            } => {
                self.slots[node.index()].partition(link, direction, false);
                self.fault(
                    Fault::PartitionHealed {
                        node,
                        link,
                        direction,
                    },
                    observer,
                );
            }
            Event::OutageEnd { mode } => {
                assert!(self.store_outages[mode as usize] > 0);
                self.store_outages[mode as usize] -= 1;
                self.fault(Fault::StoreRecovered { mode }, observer);
            }
            Event::HealPhase => {
                emit(
                    &mut self.hasher,
                    observer,
                    self.now_us,
                    RecordKind::HealPhase,
                );
            }
            Event::ToNode { .. } | Event::ToService { .. } | Event::ToStore { .. } => {
                unreachable!("messages are dispatched on the hot path")
            }
        }
    }

    fn scheduled<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        fault: Fault,
        observer: &mut O,
    ) {
        match fault {
            Fault::CrashAt {
                node,
                restart_after_us,
                ..
            } => {
                if self.slots[node.index()].node.is_none() {
                    return; // already down: a deploy does not kill a dead pod twice
                }
                self.fault(fault, observer);
                self.take_down(node, restart_after_us);
            }
            Fault::PauseAt {
                node, duration_us, ..
            } => {
                let slot = &mut self.slots[node.index()];
                if slot.node.is_none() || slot.paused_until_us.is_some() {
                    return; // nothing to freeze
                }
                let until = self.now_us + duration_us;
                slot.paused_until_us = Some(until);
                let incarnation = slot.incarnation;
                self.fault(fault, observer);
                self.queue.push(until, Event::Resume { node, incarnation });
            }
            Fault::Partition {
                node,
                link,
                direction,
                duration_us,
                ..
            } => {
                self.slots[node.index()].partition(link, direction, true);
                self.fault(fault, observer);
                self.queue.push(
                    self.now_us + duration_us,
                    Event::PartitionEnd {
                        node,
                        link,
                        direction,
                    },
                );
            }
            Fault::StoreOutage {
                duration_us, mode, ..
            } => {
                self.store_outages[mode as usize] += 1;
                self.fault(fault, observer);
                self.queue
                    .push(self.now_us + duration_us, Event::OutageEnd { mode });
            }
            other => unreachable!("not a scheduled fault: {other:?}"),
        }
    }

    /// A node's wake-up time has come: its timer is the earliest in
    /// `timers`. It stays there while the node steps, and leaves after: a
    /// node re-arms on most steps, and moving its timer in place is one sift
    /// where removing it and adding it again were two.
    fn fire_timer<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        out: &mut Outputs<N>,
        observer: &mut O,
    ) {
        let slot = &self.slots[node.index()];
        // Disarmed whenever a node goes down: a timer is always the live
        // incarnation's.
        assert!(slot.node.is_some(), "timer of a node that is down");
        assert!(slot.timer_at.is_some(), "timer without a wake-up");
        if let Some(until) = slot.paused_until_us {
            // Frozen: it wakes up when the pause ends.
            let seq = self.queue.next_seq();
            self.timers.set(node.0, until, seq);
            return;
        }
        // From here the fired timer stays armed while `timer_at` says no
        // wake-up, until the step re-arms it or the test below removes it:
        // the one window where the two disagree.
        self.slots[node.index()].timer_at = None;
        self.step(node, Input::Timeout, out, observer);
        if self.slots[node.index()].timer_at.is_none() {
            // Not re-armed (no wake-up wanted, or paused, or down): the fired
            // timer goes.
            self.timers.remove(node.0);
        }
        // The window is closed: armed exactly when a wake-up is wanted
        // (a node that went down has neither).
        debug_assert_eq!(
            self.timers.is_armed(node.0),
            self.slots[node.index()].timer_at.is_some()
        );
    }

    fn boot<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        out: &mut Outputs<N>,
        observer: &mut O,
    ) {
        let slot = &mut self.slots[node.index()];
        assert!(slot.node.is_none(), "boot of a running node");
        slot.incarnation += 1;
        let incarnation = slot.incarnation;
        slot.node = Some((self.factory)(node, incarnation));
        slot.timer_at = None;
        debug_assert!(!self.timers.is_armed(node.0), "disarmed when it went down");
        if incarnation > 1 {
            self.fault(Fault::Restart { node, incarnation }, observer);
        }
        self.step(node, Input::Start, out, observer);
    }

    fn resume<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        incarnation: u32,
        observer: &mut O,
    ) {
        let slot = &mut self.slots[node.index()];
        if slot.incarnation != incarnation || slot.node.is_none() {
            return; // crashed while paused
        }
        assert!(
            slot.paused_until_us == Some(self.now_us),
            "resume at the wrong time"
        );
        slot.paused_until_us = None;
        let held = std::mem::take(&mut slot.held);
        self.fault(Fault::Resume { node }, observer);
        for (mut output, decided_us) in held {
            if self.send(node, incarnation, &mut output, decided_us, observer) {
                self.exit(node, incarnation, observer);
                return;
            }
        }
        self.rearm_timer(node);
    }

    /// Step `node` on `input`; `out` (empty) receives its outputs, and is
    /// left empty. A scan's page the input carries goes back to the store
    /// once the step is done with it, for a later scan to fill: an
    /// allocation per scan that finds documents, otherwise.
    fn step<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        input: Input<N::Key, N::Value>,
        out: &mut Outputs<N>,
        observer: &mut O,
    ) {
        self.step_on(node, &input, out, observer);
        if let Input::StoreReply {
            reply: StoreReply::Scanned { docs, .. },
            ..
        } = input
        {
            self.store.recycle(docs);
        }
    }

    /// [`Self::step`], up to its input's drop.
    #[inline(always)]
    fn step_on<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        input: &Input<N::Key, N::Value>,
        out: &mut Outputs<N>,
        observer: &mut O,
    ) {
        let now_us = self.now_us;
        // The node's slot, looked up once for the step's head: the fault
        // roll, the clock and the node itself. Only the rare branches that
        // need all of `self` end the borrow (and look it up again).
        let mut slot = &mut self.slots[node.index()];
        assert!(slot.paused_until_us.is_none(), "stepping a paused node");
        slot.steps += 1;
        let targets = FaultTargets {
            crashable: slot.spec.crashable,
            pausable: slot.spec.pausable,
        };
        let (incarnation, node_step) = (slot.incarnation, slot.steps);
        let tag = || input_tag(input);
        let fault = self
            .faults
            .step_fault(node, node_step, now_us, targets, &tag);
        match fault {
            Some(StepFault::CrashBeforeInput { restart_after_us }) => {
                self.fault(
                    Fault::Crash {
                        node,
                        node_step,
                        point: CrashPoint::BeforeInput,
                        restart_after_us,
                    },
                    observer,
                );
                self.take_down(node, restart_after_us);
                return;
            }
            Some(StepFault::ClockJump { delta_us }) => {
                slot.spec.clock.wall_offset_us += delta_us;
                self.fault(
                    Fault::ClockJump {
                        node,
                        node_step,
                        delta_us,
                    },
                    observer,
                );
                slot = &mut self.slots[node.index()];
            }
            _ => {}
        }
        let local = slot.spec.clock.read(now_us);
        emit(
            &mut self.hasher,
            observer,
            now_us,
            RecordKind::Step {
                node,
                incarnation,
                local: local.mono,
                input: InputSummary::of(input),
            },
        );
        debug_assert!(out.is_empty());
        slot.node
            .as_mut()
            .expect("stepping a live node")
            .step(local, input, out);
        // One compare a step; the message is built out of line.
        if out.len() > self.config.limits.max_outputs_per_step {
            self.runaway_step(node, incarnation, input, out.len());
        }
        if let Some(cut @ (StepFault::CrashBetweenOutputs { .. } | StepFault::Pause { .. })) = fault
        {
            return self.step_cut_short(node, incarnation, node_step, cut, out, observer);
        }
        // No fault between outputs (nearly every step): every output sent,
        // then straight to the step's end. Each is sent from its place (a
        // request moved out, an `Exit` left behind): cheaper than a `Drain`
        // and its tail bookkeeping, and than a copy of each output on the
        // stack.
        let mut exit = false;
        for place in out.iter_mut() {
            if self.send(node, incarnation, place, now_us, observer) {
                exit = true;
                break;
            }
        }
        out.clear();
        if exit {
            self.exit(node, incarnation, observer);
        } else {
            self.rearm_timer(node);
        }
    }

    /// A step that returned more outputs than `limits.max_outputs_per_step`:
    /// the run ends with an assertion naming the step, as the record before
    /// it (`Step`) does: the node, its incarnation, the time and the input.
    #[cold]
    #[inline(never)]
    fn runaway_step(
        &self,
        node: NodeId,
        incarnation: u32,
        input: &Input<N::Key, N::Value>,
        outputs: usize,
    ) -> ! {
        panic!(
            "a step returned {outputs} outputs, past limits.max_outputs_per_step ({}): {} (incarnation {incarnation}) at {:.3} s on {}",
            self.config.limits.max_outputs_per_step,
            self.slots[node.index()].spec.name,
            self.now_us as f64 / 1e6,
            InputSummary::of(input),
        )
    }

    /// A step whose outputs a fault cuts short (a crash between them, or a
    /// pause after some of them): the outputs before the cut sent, then
    /// the fault. A step in a few hundred, so out of line and cold, away
    /// from the hot step's sends (which then keep no count of the outputs
    /// to leave and test no fault after them).
    #[cold]
    #[inline(never)]
    fn step_cut_short<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        incarnation: u32,
        node_step: u64,
        fault: StepFault,
        out: &mut Outputs<N>,
        observer: &mut O,
    ) {
        let now_us = self.now_us;
        if out
            .iter()
            .any(|o| matches!(o, Output::Event(e) if N::is_annotation(e)))
        {
            self.record_annotations(node, incarnation, out, observer);
        }
        let of = out.len() as u32;
        let (leave, after) = match fault {
            StepFault::CrashBetweenOutputs {
                emitted,
                restart_after_us,
            } => {
                let emitted = emitted
                    .unwrap_or_else(|| self.faults.outputs_before(node, of, false))
                    .min(of);
                (emitted as usize, Err((emitted, restart_after_us)))
            }
            StepFault::Pause {
                after_outputs,
                duration_us,
            } => {
                let k = after_outputs
                    .unwrap_or_else(|| self.faults.outputs_before(node, of, true))
                    .min(of);
                (k as usize, Ok((k, duration_us)))
            }
            other => unreachable!("not a fault between outputs: {other:?}"),
        };
        let mut exit = false;
        for place in &mut out[..leave] {
            if self.send(node, incarnation, place, now_us, observer) {
                exit = true;
                break;
            }
        }
        self.step_fault_end(
            node,
            incarnation,
            node_step,
            leave,
            after,
            exit,
            out,
            observer,
        );
    }

    /// A cut step's annotations, recorded now and taken out of its outputs
    /// (see `Node::is_annotation`): the cut counts only the others.
    #[cold]
    #[inline(never)]
    fn record_annotations<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        incarnation: u32,
        out: &mut Outputs<N>,
        observer: &mut O,
    ) {
        for output in out.iter() {
            if let Output::Event(event) = output
                && N::is_annotation(event)
            {
                emit(
                    &mut self.hasher,
                    observer,
                    self.now_us,
                    RecordKind::Event {
                        node,
                        incarnation,
                        event,
                    },
                );
            }
        }
        out.retain(|o| !matches!(o, Output::Event(e) if N::is_annotation(e)));
    }

    /// The end of a step that a fault cut short: a crash between its
    /// outputs, or a pause after some of them. A step in a few hundred, so
    /// out of line and cold, away from the hot step's code.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn step_fault_end<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        incarnation: u32,
        node_step: u64,
        leave: usize,
        after: Result<(u32, u64), (u32, u64)>,
        exit: bool,
        out: &mut Outputs<N>,
        observer: &mut O,
    ) {
        let now_us = self.now_us;
        // Only a pause keeps the outputs left over (they leave when it
        // ends); after a crash or an exit they are dropped with the clear.
        let rest: Vec<_> = if after.is_ok() && !exit {
            out.drain(leave..).collect()
        } else {
            Vec::new()
        };
        out.clear();
        match after {
            Err((emitted, restart_after_us)) => {
                self.fault(
                    Fault::Crash {
                        node,
                        node_step,
                        point: CrashPoint::BetweenOutputs { emitted },
                        restart_after_us,
                    },
                    observer,
                );
                self.take_down(node, restart_after_us);
            }
            Ok((after_outputs, duration_us)) if !exit => {
                self.fault(
                    Fault::Pause {
                        node,
                        node_step,
                        after_outputs,
                        duration_us,
                    },
                    observer,
                );
                let until = now_us + duration_us;
                let slot = &mut self.slots[node.index()];
                slot.paused_until_us = Some(until);
                slot.held = rest.into_iter().map(|o| (o, now_us)).collect();
                self.queue.push(until, Event::Resume { node, incarnation });
            }
            Ok(_) => self.exit(node, incarnation, observer),
        }
    }

    fn exit<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        incarnation: u32,
        observer: &mut O,
    ) {
        emit(
            &mut self.hasher,
            observer,
            self.now_us,
            RecordKind::Exit { node, incarnation },
        );
        let (lo, hi) = (
            self.config.exit_restart_us_min,
            self.config.exit_restart_us_max,
        );
        let delay_us = self.slots[node.index()].restart_rng.random_range(lo..=hi);
        self.take_down(node, delay_us);
    }

    /// Send one output of `node`, read where it lies: a request is moved
    /// out (straight into its event's slab cell), leaving `Exit` behind.
    /// Returns `true` if it was `Exit`.
    ///
    /// Inlined into its two callers (a step's outputs, a pause's held
    /// ones): a third of the outputs are records (`Output::Event`), for which
    /// the call itself cost more than the work.
    #[inline(always)]
    fn send<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        incarnation: u32,
        output: &mut Output<N::Key, N::Value, N::Event>,
        decided_us: u64,
        observer: &mut O,
    ) -> bool {
        // The output's kind tested once: each kind of request has its own
        // copy of `launch`, with its legs as constants.
        match *output {
            Output::Store { request, .. } => {
                let tag = || message_tag(&*output);
                let Some(sent) = self.launch(
                    node,
                    incarnation,
                    request,
                    (Leg::ToStore, Leg::FromStore),
                    &tag,
                    decided_us,
                    observer,
                ) else {
                    return false;
                };
                let (first_at, env) = (sent.first_at, sent.env);
                match sent.copy_at {
                    // The common case: the request moves from the output's
                    // place into its cell, no clone.
                    None => self
                        .queue
                        .push_in_place(first_at, |cell| move_store_request(output, cell, env)),
                    // A duplicated message (rare): two clones; the output is
                    // dropped with the buffer.
                    Some(copy_at) => {
                        let Output::Store { op, .. } = &*output else {
                            unreachable!("a store request is sent")
                        };
                        self.push_store_twice(op, (first_at, env), (copy_at, env.copy()));
                    }
                }
            }
            // The call read where it lies, at each use: bound by value, it
            // was copied to the stack first.
            Output::Effect { request, ref call } => {
                let tag = || message_tag(&*output);
                let Some(Sent {
                    mut env,
                    work_raw,
                    first_at,
                    copy_at,
                }) = self.launch(
                    node,
                    incarnation,
                    request,
                    (Leg::ToService, Leg::FromService),
                    &tag,
                    decided_us,
                    observer,
                )
                else {
                    return false;
                };
                let spec = &self.services[call.service.0 as usize].spec;
                let span_us = (spec.work_ms_max - spec.work_ms_min) * 1_000 + 1;
                env.work_us = spec.work_ms_min * 1_000 + work_raw % span_us;
                self.queue
                    .push_with(first_at, || Event::ToService { env, call: *call });
                if let Some(copy_at) = copy_at {
                    self.queue.push(
                        copy_at,
                        Event::ToService {
                            env: env.copy(),
                            call: *call,
                        },
                    );
                }
            }
            Output::Event(ref event) => emit(
                &mut self.hasher,
                observer,
                self.now_us,
                RecordKind::Event {
                    node,
                    incarnation,
                    event,
                },
            ),
            Output::Exit => return true,
        }
        false
    }

    /// A request of `node` leaves on `legs` (the request's, the reply's):
    /// every draw for it, its fault, a loss recorded. `None` if it is lost,
    /// else its envelope (with no work time yet), the work time's raw draw
    /// and when it (and its duplicate, if any) arrives. Inlined into `send`
    /// once per kind of request, with its legs as constants there.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn launch<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        incarnation: u32,
        request: RequestId,
        (leg, reply_leg): (Leg, Leg),
        tag: &dyn Fn() -> u64,
        decided_us: u64,
        observer: &mut O,
    ) -> Option<Sent> {
        // Every draw for this message, made now, whatever happens to it: the
        // latencies and the work time always, the fault dice for legs that
        // can fault at all. What a message draws never depends on what
        // an earlier message drew, so plans replay on the same numbers.
        let slot = &mut self.slots[node.index()];
        slot.msgs += 1;
        let msg = slot.msgs;
        // Both latencies, as 32 bits each, scaled where they are used.
        let (there, back) = halves(slot.net_rng.random::<u64>());
        // Drawn for store requests too, so that a call's work time depends
        // only on how many messages the node sent before it.
        let work_raw = slot.work_rng.random::<u64>();
        let now_us = self.now_us;
        let (fault, reply_fault) =
            self.faults
                .message_faults(node, msg, leg, reply_leg, now_us, &mut slot.fault_rng, tag);
        let cut = slot.is_cut(leg);
        let actor = Actor::Node { node, incarnation };
        let mut env = Envelope {
            actor,
            request,
            msg,
            decided_us,
            sent_us: now_us,
            reply_latency_us: self.latency_us.draw(back),
            reply_fault,
            refuse: None,
            work_us: 0,
        };
        if let Some(action) = fault {
            self.fault(
                Fault::Message {
                    node,
                    msg,
                    leg,
                    action,
                },
                observer,
            );
        }
        if cut {
            self.lost(
                node,
                incarnation,
                request,
                leg,
                LossReason::Partition,
                observer,
            );
            return None;
        }
        // When the message arrives, and its duplicate if it has one.
        let mut first_at = now_us + self.latency_us.draw(there);
        let mut copy_at = None;
        match fault {
            Some(MessageAction::Drop) => {
                self.lost(
                    node,
                    incarnation,
                    request,
                    leg,
                    LossReason::Dropped,
                    observer,
                );
                return None;
            }
            Some(MessageAction::Duplicate { extra_us }) => copy_at = Some(first_at + extra_us),
            Some(MessageAction::Delay { extra_us }) => first_at += extra_us,
            Some(action @ (MessageAction::Fail | MessageAction::Hang)) => env.refuse = Some(action),
            None => {}
        }
        Some(Sent {
            env,
            work_raw,
            first_at,
            copy_at,
        })
    }

    /// A duplicated store request: two clones in two events. Rare, so out
    /// of line, away from the one push of every other request.
    #[cold]
    #[inline(never)]
    fn push_store_twice(
        &mut self,
        op: &StoreRequest<N::Key, N::Value>,
        (first_at, env): (u64, Envelope),
        (copy_at, copy_env): (u64, Envelope),
    ) {
        self.queue.push(
            first_at,
            Event::ToStore {
                env,
                op: op.clone(),
            },
        );
        self.queue.push(
            copy_at,
            Event::ToStore {
                env: copy_env,
                op: op.clone(),
            },
        );
    }

    /// A duplicated reply: the input cloned into a second event. Rare, so
    /// out of line.
    #[cold]
    #[inline(never)]
    fn push_reply_twice(
        &mut self,
        node: NodeId,
        incarnation: u32,
        input: Input<N::Key, N::Value>,
        at: u64,
        extra_us: u64,
    ) {
        self.queue.push(
            at,
            Event::ToNode {
                node,
                incarnation,
                input: input.clone(),
            },
        );
        self.queue.push(
            at + extra_us,
            Event::ToNode {
                node,
                incarnation,
                input,
            },
        );
    }

    fn lost<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        incarnation: u32,
        request: RequestId,
        leg: Leg,
        reason: LossReason,
        observer: &mut O,
    ) {
        emit(
            &mut self.hasher,
            observer,
            self.now_us,
            RecordKind::Lost {
                node,
                incarnation,
                request,
                leg,
                reason,
            },
        );
    }

    /// Carry a reply back to the node that sent `env`, through the faults
    /// decided when it sent the request.
    fn reply<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        env: Envelope,
        leg: Leg,
        extra_delay_us: u64,
        input: Input<N::Key, N::Value>,
        observer: &mut O,
    ) {
        self.reply_inline(env, leg, extra_delay_us, input, observer)
    }

    /// [`Self::reply`], inlined into the store's arrival (itself out of
    /// line): the reply's input goes from where the store wrote it into its
    /// event's cell, with no call and no copy to a temporary between
    /// (172.42 M to 171.36 M instructions for friday-rush seeds 1..5). The
    /// service path calls `reply`, which the compiler inlines there too
    /// (0.16 M fewer than keeping it out of line; `reply_inline` forced on
    /// both paths cost 0.14 M more).
    #[inline(always)]
    fn reply_inline<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        env: Envelope,
        leg: Leg,
        extra_delay_us: u64,
        input: Input<N::Key, N::Value>,
        observer: &mut O,
    ) {
        let Actor::Node { node, incarnation } = env.actor else {
            return; // the workload does not listen for replies
        };
        if self.slots[node.index()].is_cut(leg) {
            self.lost(
                node,
                incarnation,
                env.request,
                leg,
                LossReason::Partition,
                observer,
            );
            return;
        }
        if let Some(action) = env.reply_fault {
            self.fault(
                Fault::Message {
                    node,
                    msg: env.msg,
                    leg,
                    action,
                },
                observer,
            );
        }
        let at = self.now_us + extra_delay_us + env.reply_latency_us;
        match env.reply_fault {
            Some(MessageAction::Drop) => self.lost(
                node,
                incarnation,
                env.request,
                leg,
                LossReason::Dropped,
                observer,
            ),
            Some(MessageAction::Delay { extra_us }) => self.queue.push(
                at + extra_us,
                Event::ToNode {
                    node,
                    incarnation,
                    input,
                },
            ),
            Some(MessageAction::Duplicate { extra_us }) => {
                self.push_reply_twice(node, incarnation, input, at, extra_us)
            }
            Some(MessageAction::Fail | MessageAction::Hang) | None => {
                // A panic in the push (a full queue) leaks the input rather
                // than dropping it: with no drop to run while unwinding, the
                // input's fields are not loaded ahead of the push for a
                // landing pad (three loads a reply).
                let input = ManuallyDrop::new(input);
                self.queue.push_in_place(at, |cell| {
                    fill_empty(
                        cell,
                        Event::ToNode {
                            node,
                            incarnation,
                            input: ManuallyDrop::into_inner(input),
                        },
                    )
                })
            }
        }
    }

    /// A store request (the event in `slot`, just popped) reaches the
    /// store. It is read in its slab cell and, once the record is written,
    /// replaced there by its reply (or dropped with it, before the reply
    /// takes a cell).
    ///
    /// Out of line: the store's `apply`, the record and the reply's
    /// arguments get registers of their own instead of sharing the run
    /// loop's (174.13 M to 173.85 M instructions for friday-rush seeds 1..5).
    #[inline(never)]
    fn store_arrive<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        slot: PoppedSlot,
        observer: &mut O,
    ) {
        let Event::ToStore { env, .. } = self.queue.popped(&slot) else {
            unreachable!("a store request's slot");
        };
        let env = *env;
        if matches!(env.actor, Actor::External) {
            // Only the workload sends as `External`: its next arrival
            // enters the queue as this one leaves it.
            self.feed_workload();
        }
        let is_node = matches!(env.actor, Actor::Node { .. });
        if is_node && self.store_outages[OutageMode::Timeout as usize] > 0 {
            if let Actor::Node { node, incarnation } = env.actor {
                self.lost(
                    node,
                    incarnation,
                    env.request,
                    Leg::ToStore,
                    LossReason::StoreOutage,
                    observer,
                );
            }
            drop(self.queue.take(slot));
            return;
        }
        let refused =
            is_node && (self.store_outages[OutageMode::Fail as usize] > 0 || env.refuse.is_some());
        let Event::ToStore { op, .. } = self.queue.popped(&slot) else {
            unreachable!("a store request's slot");
        };
        let request = env.request;
        // Answered in place: each kind of request writes its reply into the
        // input the reply event carries (`Start`, nothing to drop, until
        // then: held in `ManuallyDrop`, so that the writes test no old input
        // for a drop).
        let mut input = ManuallyDrop::new(Input::Start);
        let mut before = None;
        if refused {
            self.store.count_unavailable();
            input = ManuallyDrop::new(Input::StoreReply {
                request,
                reply: StoreReply::Unavailable,
            });
        } else {
            self.store.answer(op, &mut before, |reply| {
                input = ManuallyDrop::new(Input::StoreReply { request, reply })
            });
        }
        let Input::StoreReply { reply, .. } = &*input else {
            unreachable!("a store request is answered");
        };
        emit(
            &mut self.hasher,
            observer,
            self.now_us,
            RecordKind::Store {
                actor: env.actor,
                request: env.request,
                op,
                reply,
                before: before.as_ref(),
                decided_us: env.decided_us,
            },
        );
        // A node's reply neither cut nor faulted (nearly every one) is
        // `reply_inline`'s plain push: written over the request in its cell
        // and queued there, where the take below and the push put it too
        // (the push takes the slot the take frees), with no trip through
        // the free list and no test of the cell for a drop or an empty slot.
        if let Actor::Node { node, incarnation } = env.actor
            && env.reply_fault.is_none()
            && !self.slots[node.index()].is_cut(Leg::FromStore)
        {
            let request = self.queue.popped_cell(&slot).replace(Event::ToNode {
                node,
                incarnation,
                input: ManuallyDrop::into_inner(input),
            });
            // The request was asserted one on arrival (`popped` above, in
            // release too) and the cell left alone since: only its drop is
            // left, which a request of keys and values with no glue (the
            // protocol's) does without, and so without reading it.
            debug_assert!(
                matches!(request, Some(Event::ToStore { .. })),
                "a store request's slot"
            );
            if std::mem::needs_drop::<StoreRequest<N::Key, N::Value>>() {
                drop(request);
            } else {
                std::mem::forget(request);
            }
            self.queue.requeue(slot, self.now_us + env.reply_latency_us);
            return;
        }
        drop(self.queue.take(slot));
        let input = ManuallyDrop::into_inner(input);
        self.reply_inline(env, Leg::FromStore, 0, input, observer);
    }

    fn service_arrive<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        env: Envelope,
        call: EffectRequest,
        observer: &mut O,
    ) {
        let service = call.service.0 as usize;
        assert!(
            service < self.services.len(),
            "call to unknown service {service}"
        );
        if env.refuse == Some(MessageAction::Hang) {
            if let Actor::Node { node, incarnation } = env.actor {
                self.lost(
                    node,
                    incarnation,
                    env.request,
                    Leg::ToService,
                    LossReason::Hung,
                    observer,
                );
            }
            return;
        }
        // The service acts the moment the call arrives (the card is charged
        // now); its reply leaves once its work time has passed.
        let outcome = if env.refuse == Some(MessageAction::Fail) {
            EffectReply::Failed
        } else {
            self.services[service].decide(&call)
        };
        emit(
            &mut self.hasher,
            observer,
            self.now_us,
            RecordKind::Effect {
                actor: env.actor,
                request: env.request,
                call,
                outcome,
                decided_us: env.decided_us,
                sent_us: env.sent_us,
            },
        );
        let request = env.request;
        let work_us = env.work_us;
        self.reply(
            env,
            Leg::FromService,
            work_us,
            Input::EffectReply {
                request,
                reply: outcome,
            },
            observer,
        );
    }

    fn rearm_timer(&mut self, node: NodeId) {
        let now_us = self.now_us;
        let slot = &mut self.slots[node.index()];
        let wanted = slot.node.as_ref().expect("live").poll_timeout();
        if wanted == slot.timer_at {
            return;
        }
        slot.timer_at = wanted;
        match wanted {
            Some(local) => {
                let at = slot.spec.clock.sim_time_for(local).max(now_us);
                // A fresh sequence number: the timer orders as if it had been
                // pushed as an event now.
                let seq = self.queue.next_seq();
                self.timers.rearm(node.0, at, seq);
            }
            None => self.timers.remove(node.0),
        }
    }

    /// The node's memory is gone; it boots again as a new incarnation.
    fn take_down(&mut self, node: NodeId, restart_after_us: u64) {
        let slot = &mut self.slots[node.index()];
        slot.node = None;
        slot.timer_at = None;
        self.timers.remove(node.0);
        slot.paused_until_us = None;
        slot.held.clear();
        self.queue
            .push(self.now_us + restart_after_us.max(1), Event::Boot { node });
    }
}

/// The event-queue floor: `events` events pushed and popped through the
/// simulator's own queue, carrying its own event type, with `depth` events
/// queued throughout (a hold model: pop the earliest, push it back a
/// pseudo-random 0-1 s later), and nothing else done. A run's events cost at
/// least this much each; `events / floor time` is the ceiling on events/s.
/// Returns a checksum so the work cannot be optimised away.
pub fn queue_floor<K, V>(events: u64, depth: usize, seed: u64) -> u64 {
    assert!(depth > 0, "a floor needs something queued");
    let mut queue: EventQueue<Event<K, V>> = EventQueue::new(depth);
    // xorshift64: a few instructions per draw, next to nothing beside a pop.
    let mut state = seed | 1;
    let mut next_delay_us = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % 1_000_000
    };
    for i in 0..depth {
        let node = NodeId(i as u32);
        queue.push(next_delay_us(), Event::Boot { node });
    }
    let mut checksum = 0u64;
    for _ in 0..events {
        let (now_us, event) = queue.pop().expect("the floor holds `depth` events");
        if let Event::Boot { node } = &event {
            checksum = checksum.wrapping_add(node.0 as u64 ^ now_us);
        }
        queue.push(now_us + next_delay_us(), event);
    }
    checksum
}

/// Move the store request at `output` (leaving `Exit`) into its event's
/// empty slab `cell`. A function of its own for its two `&mut` parameters:
/// the compiler then knows the two places apart. It was written so the
/// request would be copied once, place to cell; the twenty-third round's
/// profile shows today's build still copies it through the stack (output
/// to stack, stack to cell, ~12 instructions a send), and out of line it
/// costs more (`memcpy` calls).
#[inline(always)]
fn move_store_request<K, V, E>(
    output: &mut Output<K, V, E>,
    cell: &mut Option<Event<K, V>>,
    env: Envelope,
) {
    let Output::Store { op, .. } = std::mem::replace(output, Output::Exit) else {
        unreachable!("matched a store request")
    };
    fill_empty(cell, Event::ToStore { env, op });
}

/// Write `event` into its slab `cell`, empty (the queue hands out free
/// cells only), with no drop glue for what it held: an assignment tests the
/// old value and keeps a call to the glue beside the write.
#[inline(always)]
fn fill_empty<K, V>(cell: &mut Option<Event<K, V>>, event: Event<K, V>) {
    let old = cell.replace(event);
    debug_assert!(old.is_none(), "a pushed event's cell is empty");
    std::mem::forget(old);
}

/// What a step handles, for faults placed by time (`FaultSource::Timed`).
fn input_tag<K, V>(input: &Input<K, V>) -> u64 {
    let store_reply = match input {
        Input::StoreReply { reply, .. } => Some(reply),
        _ => None,
    };
    InputSummary::of(input).fault_tag(store_reply)
}

/// What a message asks, for faults placed by time: the kind of store request
/// and its key, or the service, resource and step of an effect call.
fn message_tag<K: Hash, V, E>(output: &Output<K, V, E>) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    match output {
        Output::Store { op, .. } => {
            let (kind, key) = match op {
                StoreRequest::Get { key } => (0u8, key),
                StoreRequest::CreateIfAbsent { key, .. } => (1, key),
                StoreRequest::PutIfVersion { key, .. } => (2, key),
                StoreRequest::PutUnconditional { key, .. } => (3, key),
                StoreRequest::DeleteIfVersion { key, .. } => (4, key),
                StoreRequest::Scan { start, .. } => (5, start),
                StoreRequest::ScanIndex { start, .. } => (6, start),
            };
            (kind, key).hash(&mut h);
        }
        Output::Effect { call, .. } => (7u8, call.service.0, call.resource, call.step).hash(&mut h),
        Output::Event(_) | Output::Exit => {}
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_interface::{Document, Instant, ServiceId};

    type R<'a> = Record<'a, u64, u64, u64>;

    /// The record hashing `hash_record` replaced: the derive, except for
    /// store records, hashed field by field.
    fn reference(record: &R<'_>, hasher: &mut TraceHasher) {
        let RecordKind::Store {
            actor,
            request,
            op,
            reply,
            before,
            decided_us: _,
        } = &record.kind
        else {
            record.hash(hasher);
            return;
        };
        hasher.write_u64(record.time_us);
        hasher.write_u64(u64::MAX - 1);
        actor.hash(hasher);
        request.hash(hasher);
        op.hash(hasher);
        let version = |doc: &Option<Document<u64, u64>>| doc.as_ref().map(|d| d.version);
        match reply {
            StoreReply::Got { doc } => (0u8, version(doc)).hash(hasher),
            StoreReply::Written { version } => (1u8, version).hash(hasher),
            StoreReply::Deleted => 2u8.hash(hasher),
            StoreReply::Conflict { current } => (3u8, version(current)).hash(hasher),
            StoreReply::Scanned { docs, more } => {
                (4u8, docs.len(), more).hash(hasher);
                for d in docs {
                    d.version.hash(hasher);
                }
            }
            StoreReply::Unavailable => 5u8.hash(hasher),
        }
        before.map(|d| d.version).hash(hasher);
    }

    #[test]
    fn hand_written_record_hashing_writes_the_reference_bytes() {
        const BIG: u64 = 0x0123_4567_89ab_cdef;
        let doc = |version| Document {
            key: 7u64,
            version,
            value: 9u64,
        };
        // Every request kind (each hashed by hand since the derived
        // request hash was replaced), with and without an index key.
        let ops = [
            StoreRequest::Get { key: BIG },
            StoreRequest::CreateIfAbsent {
                key: 1,
                value: BIG,
                index: None,
            },
            StoreRequest::CreateIfAbsent {
                key: 1,
                value: 3,
                index: Some(BIG),
            },
            StoreRequest::PutIfVersion {
                key: 1,
                expected: BIG,
                value: 3,
                index: Some(4),
            },
            StoreRequest::PutIfVersion {
                key: BIG,
                expected: 2,
                value: 3,
                index: None,
            },
            StoreRequest::PutUnconditional {
                key: 1,
                value: 3,
                index: Some(4),
            },
            StoreRequest::PutUnconditional {
                key: 1,
                value: 3,
                index: None,
            },
            StoreRequest::DeleteIfVersion {
                key: 6,
                expected: BIG,
            },
            StoreRequest::Scan {
                start: 2,
                end: BIG,
                limit: u32::MAX,
            },
            StoreRequest::ScanIndex {
                start: 0,
                end: u64::MAX,
                limit: 16,
            },
        ];
        let replies = [
            StoreReply::Got { doc: None },
            StoreReply::Got {
                doc: Some(doc(BIG)),
            },
            StoreReply::Written { version: BIG },
            StoreReply::Deleted,
            StoreReply::Conflict { current: None },
            StoreReply::Conflict {
                current: Some(doc(3)),
            },
            StoreReply::Scanned {
                docs: Vec::new(),
                more: false,
            },
            StoreReply::Scanned {
                docs: (0..3).map(doc).collect(),
                more: true,
            },
            StoreReply::Scanned {
                docs: (0..300).map(doc).collect(),
                more: false,
            },
            StoreReply::Unavailable,
        ];
        let befores = [None, Some(doc(5)), Some(doc(BIG))];
        let actors = [
            Actor::External,
            Actor::Node {
                node: NodeId(3),
                incarnation: u32::MAX,
            },
        ];
        let event = 42u64;
        let mut kinds = Vec::new();
        for actor in actors {
            for op in &ops {
                for reply in &replies {
                    for before in &befores {
                        kinds.push(RecordKind::Store {
                            actor,
                            request: RequestId(BIG),
                            op,
                            reply,
                            before: before.as_ref(),
                            decided_us: BIG,
                        });
                    }
                }
            }
        }
        let replies = [
            EffectReply::Applied,
            EffectReply::Deduplicated,
            EffectReply::RejectedStale,
            EffectReply::Failed,
        ];
        let mut inputs = vec![
            InputSummary::Start,
            InputSummary::Timeout,
            InputSummary::StoreReply {
                request: RequestId(BIG),
            },
        ];
        for reply in replies {
            inputs.push(InputSummary::EffectReply {
                request: RequestId(5),
                reply,
            });
        }
        for input in inputs {
            kinds.push(RecordKind::Step {
                node: NodeId(0x0102_0304),
                incarnation: 7,
                local: Instant::from_micros(BIG),
                input,
            });
        }
        let reasons = [
            LossReason::Dropped,
            LossReason::Partition,
            LossReason::StoreOutage,
            LossReason::Hung,
        ];
        for leg in Leg::ALL {
            for reason in reasons {
                kinds.push(RecordKind::Lost {
                    node: NodeId(9),
                    incarnation: 1,
                    request: RequestId(BIG),
                    leg,
                    reason,
                });
            }
        }
        kinds.push(RecordKind::Event {
            node: NodeId(2),
            incarnation: 300,
            event: &event,
        });
        for (i, actor) in actors.into_iter().enumerate() {
            for outcome in replies {
                kinds.push(RecordKind::Effect {
                    actor,
                    request: RequestId(1),
                    call: EffectRequest {
                        service: ServiceId(0x0102 + i as u16),
                        resource: BIG,
                        step: 3,
                        token: BIG ^ 4,
                        idempotency_key: i == 0,
                    },
                    outcome,
                    decided_us: 5,
                    sent_us: BIG,
                });
            }
        }
        kinds.push(RecordKind::Fault(Fault::Restart {
            node: NodeId(1),
            incarnation: 2,
        }));
        kinds.push(RecordKind::Exit {
            node: NodeId(1),
            incarnation: 2,
        });
        kinds.push(RecordKind::Dropped {
            node: NodeId(1),
            incarnation: 2,
        });
        kinds.push(RecordKind::HealPhase);
        // Record by record, and all of them in one stream (across buffer
        // boundaries: the scans of 300 documents alone fill several).
        let (mut all_a, mut all_b) = (TraceHasher::new(), TraceHasher::new());
        for (i, kind) in kinds.into_iter().enumerate() {
            let record = Record {
                time_us: BIG + i as u64,
                kind,
            };
            let (mut a, mut b) = (TraceHasher::new(), TraceHasher::new());
            hash_record(&record, &mut a);
            reference(&record, &mut b);
            assert_eq!(a.digest(), b.digest(), "{record:?}");
            hash_record(&record, &mut all_a);
            reference(&record, &mut all_b);
        }
        assert_eq!(all_a.digest(), all_b.digest());
    }

    /// A node that, on its first step, asks the store for keys 1 to 4,
    /// each request after an event (`Some(offset)`: the event is `offset`
    /// plus the key) or none (`None`).
    struct Asker {
        events: Option<u64>,
    }

    /// Events at or above this are annotations.
    const NOTE: u64 = 1_000;

    impl Node for Asker {
        type Key = u32;
        type Value = u64;
        type Event = u64;

        fn step(
            &mut self,
            _now: leasehold_interface::LocalTime,
            input: &leasehold_interface::Input<u32, u64>,
            out: &mut Outputs<Self>,
        ) {
            if let leasehold_interface::Input::Start = input {
                for key in 1..=4u32 {
                    if let Some(offset) = self.events {
                        out.push(Output::Event(offset + u64::from(key)));
                    }
                    out.push(Output::Store {
                        request: RequestId(u64::from(key)),
                        op: StoreRequest::Get { key },
                    });
                }
            }
        }

        fn poll_timeout(&self) -> Option<Instant> {
            None
        }

        fn is_annotation(event: &u64) -> bool {
            *event >= NOTE
        }
    }

    /// The keys the store was asked for before the first restart, and the
    /// annotations recorded.
    #[derive(Default)]
    struct Asked {
        keys: Vec<u32>,
        notes: Vec<u64>,
        restarted: bool,
    }

    impl Observer<u32, u64, u64> for Asked {
        fn record(&mut self, record: &Record<'_, u32, u64, u64>) {
            match record.kind {
                RecordKind::Store {
                    op: StoreRequest::Get { key },
                    ..
                } if !self.restarted => self.keys.push(*key),
                RecordKind::Event { event, .. } if *event >= NOTE => self.notes.push(*event),
                RecordKind::Fault(Fault::Restart { .. }) => self.restarted = true,
                _ => {}
            }
        }
    }

    fn asked(events: Option<u64>, fault: Fault) -> Asked {
        let config = SimConfig {
            network: NetworkSpec {
                latency_us_min: 1_000,
                latency_us_max: 1_000,
            },
            fault_phase_end_us: 1_000_000,
            faults: FaultSource::Plan(FaultPlan {
                faults: vec![fault],
            }),
            exit_restart_us_min: 1_000,
            exit_restart_us_max: 1_000,
            limits: RunLimits {
                max_sim_time_us: 10_000_000,
                max_events: 1_000,
                max_queue_len: 1_000,
                max_outputs_per_step: 1_000,
            },
        };
        let mut sim: Simulation<Asker> =
            Simulation::new(config, 1, Box::new(move |_, _| Asker { events }));
        sim.add_node(NodeSpec {
            name: "asker".into(),
            crashable: true,
            pausable: true,
            clock: LocalClock::default(),
            boot_at_ms: 0,
            stream_id: 0,
        });
        let mut seen = Asked::default();
        sim.run(&mut seen);
        seen
    }

    /// An annotation is no output a fault can cut: a crash or a pause
    /// between outputs lets the same requests leave as from a node that
    /// made no annotation (what the step's output count decides would
    /// otherwise move), and every annotation of the step is recorded.
    #[test]
    fn annotations_never_move_where_a_fault_cuts_a_step() {
        for emitted in 0..4u32 {
            let crash = Fault::Crash {
                node: NodeId(0),
                node_step: 1,
                point: CrashPoint::BetweenOutputs { emitted },
                restart_after_us: 5_000_000,
            };
            let pause = Fault::Pause {
                node: NodeId(0),
                node_step: 1,
                after_outputs: emitted,
                duration_us: 100_000,
            };
            for fault in [crash, pause] {
                let bare = asked(None, fault);
                let noted = asked(Some(NOTE), fault);
                assert_eq!(bare.keys, noted.keys, "{fault:?}");
                assert!(bare.notes.is_empty());
                assert_eq!(noted.notes[..4], [1_001, 1_002, 1_003, 1_004], "{fault:?}");
            }
            // Events that are not annotations count: the crash leaves after
            // `emitted` outputs, half of them events (so a change that
            // counted annotations would show above).
            let bare = asked(None, crash);
            let evented = asked(Some(0), crash);
            assert_eq!(bare.keys, (1..=emitted).collect::<Vec<_>>());
            assert_eq!(evented.keys, (1..=emitted / 2).collect::<Vec<_>>());
        }
    }
}
