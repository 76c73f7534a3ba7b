//! A deterministic, single-threaded discrete-event simulator.
//!
//! It hosts sans-IO [`Node`]s and gives them virtual time on per-node local
//! clocks, a network with seeded latency, a linearizable versioned document
//! store ([`VersionedStore`]) and external effect services that keep an
//! [`EffectLedger`]-style record of every call. A seeded [`FaultInjector`]
//! crashes nodes between any two of their steps. Everything that happens is
//! handed to an [`Observer`] as a [`Record`] and folded into a trace hash.
//!
//! Architecture invariant: nothing in this crate knows what a lease, a worker
//! or a task is. Keys, values and node events are type parameters.

pub mod clock;
pub mod faults;
pub mod node;
pub mod queue;
pub mod record;
pub mod rng;
pub mod services;
pub mod simulation;
pub mod store;
pub mod trace_hash;

pub use clock::LocalClock;
pub use faults::{
    CrashPoint, Direction, Fault, FaultInjector, FaultPlan, FaultRates, FaultSource, FaultTargets,
    Leg, LegRates, Link, MessageAction, OutageMode, TimedFault,
};
pub use node::{Node, NodeId, NodeSpec};
pub use queue::{EventQueue, TimerQueue};
pub use record::{
    Actor, InputSummary, LossReason, NullObserver, Observer, OwnedRecord, OwnedRecordKind, Record,
    RecordKind,
};
pub use rng::{Concern, RngStreams};
pub use services::{Dedup, EffectService, ServiceSpec};
pub use simulation::{
    NetworkSpec, RunLimits, RunStats, SimConfig, Simulation, StopReason, WorkloadFn, queue_floor,
};
pub use store::{StoreStats, VersionedStore};
pub use trace_hash::TraceHasher;
