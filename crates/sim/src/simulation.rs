//! The simulation loop: pops events in (time, sequence) order and routes them
//! between nodes, the network, the store and the effect services.

use crate::clock::LocalClock;
use crate::faults::{CrashPoint, Fault, FaultInjector, FaultPolicy};
use crate::node::{Node, NodeId, NodeSpec};
use crate::queue::EventQueue;
use crate::record::{Actor, InputSummary, Observer, Record, RecordKind};
use crate::rng::{Concern, RngStreams};
use crate::services::{EffectService, ServiceSpec};
use crate::store::{StoreStats, VersionedStore};
use crate::trace_hash::TraceHasher;
use leasehold_interface::{EffectRequest, Input, Output, RequestId, StoreRequest};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::hash::Hash;

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
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SimConfig {
    pub network: NetworkSpec,
    pub faults: FaultPolicy,
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
    pub faults: u64,
    pub max_queue_len: usize,
    pub trace_hash: u64,
}

enum Event<K, V> {
    Boot {
        node: NodeId,
    },
    Timer {
        node: NodeId,
        incarnation: u32,
        generation: u64,
    },
    ToNode {
        node: NodeId,
        incarnation: u32,
        input: Input<K, V>,
    },
    ToStore {
        actor: Actor,
        request: RequestId,
        op: StoreRequest<K, V>,
    },
    ToService {
        actor: Actor,
        request: RequestId,
        call: EffectRequest,
        sent_us: u64,
    },
    HealPhase,
}

struct Slot<N> {
    spec: NodeSpec,
    node: Option<N>,
    /// Incremented at every boot; the first boot is incarnation 1.
    incarnation: u32,
    /// Steps over all incarnations: the coordinate fault plans use.
    steps: u64,
    timer_generation: u64,
    timer_at: Option<leasehold_interface::Instant>,
    net_rng: ChaCha8Rng,
}

/// Builds a fresh node for (node, incarnation): a restart loses all memory.
pub type NodeFactory<N> = Box<dyn FnMut(NodeId, u32) -> N>;

pub struct Simulation<N: Node> {
    config: SimConfig,
    now_us: u64,
    queue: EventQueue<Event<N::Key, N::Value>>,
    slots: Vec<Slot<N>>,
    factory: NodeFactory<N>,
    store: VersionedStore<N::Key, N::Value>,
    services: Vec<EffectService>,
    service_rngs: Vec<ChaCha8Rng>,
    external_rng: ChaCha8Rng,
    next_external_request: u64,
    faults: FaultInjector,
    streams: RngStreams,
    hasher: TraceHasher,
    events: u64,
    fault_count: u64,
    max_queue_len: usize,
    out_buf: Vec<Output<N::Key, N::Value, N::Event>>,
}

fn emit<K: Hash, V: Hash, E: Hash, O: Observer<K, V, E>>(
    hasher: &mut TraceHasher,
    observer: &mut O,
    time_us: u64,
    kind: RecordKind<'_, K, V, E>,
) {
    let record = Record { time_us, kind };
    record.hash(hasher);
    observer.record(&record);
}

impl<N: Node> Simulation<N> {
    pub fn new(config: SimConfig, seed: u64, factory: NodeFactory<N>) -> Simulation<N> {
        assert!(config.network.latency_us_min <= config.network.latency_us_max);
        assert!(config.limits.max_queue_len > 0);
        let streams = RngStreams::new(seed);
        Simulation {
            queue: EventQueue::new(config.limits.max_queue_len),
            faults: FaultInjector::new(config.faults.clone(), streams),
            external_rng: streams.stream(Concern::Network, u32::MAX),
            config,
            now_us: 0,
            slots: Vec::new(),
            factory,
            store: VersionedStore::new(),
            services: Vec::new(),
            service_rngs: Vec::new(),
            next_external_request: 0,
            streams,
            hasher: TraceHasher::new(),
            events: 0,
            fault_count: 0,
            max_queue_len: 0,
            out_buf: Vec::with_capacity(16),
        }
    }

    pub fn add_node(&mut self, spec: NodeSpec) -> NodeId {
        let id = NodeId(self.slots.len() as u32);
        self.queue
            .push(spec.boot_at_ms * 1_000, Event::Boot { node: id });
        self.slots.push(Slot {
            spec,
            node: None,
            incarnation: 0,
            steps: 0,
            timer_generation: 0,
            timer_at: None,
            net_rng: self.streams.stream(Concern::Network, id.0),
        });
        id
    }

    pub fn add_service(&mut self, spec: ServiceSpec) -> leasehold_interface::ServiceId {
        let id = leasehold_interface::ServiceId(self.services.len() as u16);
        self.service_rngs
            .push(self.streams.stream(Concern::Services, id.0 as u32));
        self.services.push(EffectService::new(spec));
        id
    }

    /// A write from outside the fleet (a customer placing an order) that
    /// reaches the store at `at_us`.
    pub fn schedule_external(&mut self, at_us: u64, op: StoreRequest<N::Key, N::Value>) {
        let request = RequestId(self.next_external_request);
        self.next_external_request += 1;
        self.queue.push(
            at_us,
            Event::ToStore {
                actor: Actor::External,
                request,
                op,
            },
        );
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

    /// Run to completion. Deterministic: the same seed, nodes and observer
    /// decisions give the same records in the same order.
    pub fn run<O: Observer<N::Key, N::Value, N::Event>>(&mut self, observer: &mut O) -> RunStats {
        // Always announced, even with no fault phase, so observers can start
        // their liveness clocks from one record.
        self.queue
            .push(self.config.faults.fault_phase_end_us, Event::HealPhase);
        let limits = self.config.limits;
        let stop = loop {
            let Some(next_us) = self.queue.peek_time_us() else {
                break StopReason::Quiescent;
            };
            if next_us > limits.max_sim_time_us {
                self.now_us = limits.max_sim_time_us;
                break StopReason::TimeLimit;
            }
            if observer.should_stop(next_us) {
                break StopReason::Observer;
            }
            if self.events >= limits.max_events {
                break StopReason::EventLimit;
            }
            let (time_us, event) = self.queue.pop().expect("peeked");
            assert!(time_us >= self.now_us, "time went backwards");
            self.now_us = time_us;
            self.events += 1;
            self.max_queue_len = self.max_queue_len.max(self.queue.len() + 1);
            self.dispatch(event, observer);
        };
        RunStats {
            events: self.events,
            sim_time_us: self.now_us,
            stop,
            store: *self.store.stats(),
            effect_calls: self.services.iter().map(|s| s.calls()).sum(),
            faults: self.fault_count,
            max_queue_len: self.max_queue_len,
            trace_hash: self.hasher.digest(),
        }
    }

    fn latency_us(&mut self, endpoint: Actor) -> u64 {
        let net = self.config.network;
        let rng = match endpoint {
            Actor::Node { node, .. } => &mut self.slots[node.index()].net_rng,
            Actor::External => &mut self.external_rng,
        };
        rng.random_range(net.latency_us_min..=net.latency_us_max)
    }

    fn dispatch<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        event: Event<N::Key, N::Value>,
        observer: &mut O,
    ) {
        match event {
            Event::Boot { node } => self.boot(node, observer),
            Event::Timer {
                node,
                incarnation,
                generation,
            } => {
                let slot = &mut self.slots[node.index()];
                if slot.incarnation != incarnation
                    || slot.node.is_none()
                    || slot.timer_generation != generation
                {
                    return; // superseded timer: not an event anyone observes
                }
                slot.timer_at = None;
                self.step(node, Input::Timeout, observer);
            }
            Event::ToNode {
                node,
                incarnation,
                input,
            } => {
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
                self.step(node, input, observer);
            }
            Event::ToStore { actor, request, op } => {
                let (reply, before) = self.store.apply(&op);
                emit(
                    &mut self.hasher,
                    observer,
                    self.now_us,
                    RecordKind::Store {
                        actor,
                        request,
                        op: &op,
                        reply: &reply,
                        before: before.as_ref(),
                    },
                );
                if let Actor::Node { node, incarnation } = actor {
                    let at = self.now_us + self.latency_us(actor);
                    self.queue.push(
                        at,
                        Event::ToNode {
                            node,
                            incarnation,
                            input: Input::StoreReply { request, reply },
                        },
                    );
                }
            }
            Event::ToService {
                actor,
                request,
                call,
                sent_us,
            } => {
                // The service acts on a call the moment it arrives (the card is
                // charged now); its reply leaves once its work time has passed.
                let service = call.service.0 as usize;
                assert!(
                    service < self.services.len(),
                    "call to unknown service {service}"
                );
                let outcome = self.services[service].decide(&call);
                emit(
                    &mut self.hasher,
                    observer,
                    self.now_us,
                    RecordKind::Effect {
                        actor,
                        request,
                        call,
                        outcome,
                        sent_us,
                    },
                );
                let spec = &self.services[service].spec;
                let (lo, hi) = (spec.work_ms_min, spec.work_ms_max);
                let work_us = self.service_rngs[service].random_range(lo * 1_000..=hi * 1_000);
                if let Actor::Node { node, incarnation } = actor {
                    let at = self.now_us + work_us + self.latency_us(actor);
                    self.queue.push(
                        at,
                        Event::ToNode {
                            node,
                            incarnation,
                            input: Input::EffectReply {
                                request,
                                reply: outcome,
                            },
                        },
                    );
                }
            }
            Event::HealPhase => {
                emit(
                    &mut self.hasher,
                    observer,
                    self.now_us,
                    RecordKind::HealPhase,
                );
            }
        }
    }

    fn boot<O: Observer<N::Key, N::Value, N::Event>>(&mut self, node: NodeId, observer: &mut O) {
        let slot = &mut self.slots[node.index()];
        assert!(slot.node.is_none(), "boot of a running node");
        slot.incarnation += 1;
        let incarnation = slot.incarnation;
        slot.node = Some((self.factory)(node, incarnation));
        slot.timer_at = None;
        slot.timer_generation += 1;
        if incarnation > 1 {
            self.fault_count += 1;
            emit(
                &mut self.hasher,
                observer,
                self.now_us,
                RecordKind::Fault(Fault::Restart { node, incarnation }),
            );
        }
        self.step(node, Input::Start, observer);
    }

    fn step<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        input: Input<N::Key, N::Value>,
        observer: &mut O,
    ) {
        let now_us = self.now_us;
        let (incarnation, local, node_step, crashable) = {
            let slot = &mut self.slots[node.index()];
            slot.steps += 1;
            (
                slot.incarnation,
                slot.spec.clock.read(now_us),
                slot.steps,
                slot.spec.crashable,
            )
        };
        let crash = if crashable {
            self.faults.roll_crash(node, now_us)
        } else {
            None
        };
        if crash == Some(true) {
            self.crash(node, node_step, CrashPoint::BeforeInput, observer);
            return;
        }
        emit(
            &mut self.hasher,
            observer,
            now_us,
            RecordKind::Step {
                node,
                incarnation,
                local: local.mono,
                input: InputSummary::of(&input),
            },
        );
        let mut out = std::mem::take(&mut self.out_buf);
        debug_assert!(out.is_empty());
        self.slots[node.index()]
            .node
            .as_mut()
            .expect("stepping a live node")
            .step(local, input, &mut out);
        let of = out.len() as u32;
        let emitted = match crash {
            Some(false) => self.faults.outputs_before_crash(node, of),
            _ => of,
        };
        let actor = Actor::Node { node, incarnation };
        let mut exit = false;
        for output in out.drain(..).take(emitted as usize) {
            match output {
                Output::Store { request, op } => {
                    let at = now_us + self.latency_us(actor);
                    self.queue.push(at, Event::ToStore { actor, request, op });
                }
                Output::Effect { request, call } => {
                    let at = now_us + self.latency_us(actor);
                    self.queue.push(
                        at,
                        Event::ToService {
                            actor,
                            request,
                            call,
                            sent_us: now_us,
                        },
                    );
                }
                Output::Event(event) => emit(
                    &mut self.hasher,
                    observer,
                    now_us,
                    RecordKind::Event {
                        node,
                        incarnation,
                        event: &event,
                    },
                ),
                Output::Exit => {
                    exit = true;
                    break;
                }
            }
        }
        out.clear();
        self.out_buf = out;
        if crash == Some(false) {
            self.crash(
                node,
                node_step,
                CrashPoint::BetweenOutputs { emitted, of },
                observer,
            );
            return;
        }
        if exit {
            emit(
                &mut self.hasher,
                observer,
                now_us,
                RecordKind::Exit { node, incarnation },
            );
            self.take_down(node);
            return;
        }
        self.rearm_timer(node);
    }

    fn rearm_timer(&mut self, node: NodeId) {
        let now_us = self.now_us;
        let slot = &mut self.slots[node.index()];
        let wanted = slot.node.as_ref().expect("live").poll_timeout();
        if wanted == slot.timer_at {
            return;
        }
        slot.timer_generation += 1;
        slot.timer_at = wanted;
        if let Some(local) = wanted {
            let at = slot.spec.clock.sim_time_for(local).max(now_us);
            let (incarnation, generation) = (slot.incarnation, slot.timer_generation);
            self.queue.push(
                at,
                Event::Timer {
                    node,
                    incarnation,
                    generation,
                },
            );
        }
    }

    fn crash<O: Observer<N::Key, N::Value, N::Event>>(
        &mut self,
        node: NodeId,
        node_step: u64,
        point: CrashPoint,
        observer: &mut O,
    ) {
        let incarnation = self.slots[node.index()].incarnation;
        self.fault_count += 1;
        emit(
            &mut self.hasher,
            observer,
            self.now_us,
            RecordKind::Fault(Fault::Crash {
                node,
                incarnation,
                node_step,
                point,
            }),
        );
        self.take_down(node);
    }

    /// The node's memory is gone; it boots again as a new incarnation.
    fn take_down(&mut self, node: NodeId) {
        let slot = &mut self.slots[node.index()];
        slot.node = None;
        slot.timer_at = None;
        slot.timer_generation += 1;
        let delay_us = self.faults.restart_delay_us(node);
        self.queue
            .push(self.now_us + delay_us.max(1), Event::Boot { node });
    }

    pub fn clock_of(&self, node: NodeId) -> LocalClock {
        self.slots[node.index()].spec.clock
    }
}
