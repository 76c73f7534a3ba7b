//! What the simulator tells observers. Checkers, trace writers and the trace
//! hash all see the same stream of records, in the same order.

use crate::faults::{Fault, Leg};
use crate::node::NodeId;
use leasehold_interface::{
    Document, EffectReply, EffectRequest, Input, Instant, RequestId, StoreReply, StoreRequest,
};
use serde::Serialize;

/// Who sent a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "actor", rename_all = "snake_case")]
pub enum Actor {
    Node {
        node: NodeId,
        incarnation: u32,
    },
    /// The workload: writes scheduled by the host (new orders arriving).
    External,
}

/// A node's input with the bulky payloads left out (the store record already
/// carries them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "input", rename_all = "snake_case")]
pub enum InputSummary {
    Start,
    Timeout,
    StoreReply {
        request: RequestId,
    },
    EffectReply {
        request: RequestId,
        reply: EffectReply,
    },
}

impl InputSummary {
    pub fn of<K, V>(input: &Input<K, V>) -> InputSummary {
        match input {
            Input::Start => InputSummary::Start,
            Input::Timeout => InputSummary::Timeout,
            Input::StoreReply { request, .. } => InputSummary::StoreReply { request: *request },
            Input::EffectReply { request, reply } => InputSummary::EffectReply {
                request: *request,
                reply: *reply,
            },
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LossReason {
    /// A planned message fault dropped it.
    Dropped,
    Partition,
    StoreOutage,
    /// A hung service swallowed the call.
    Hung,
}

#[derive(Debug, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecordKind<'a, K, V, E> {
    /// A node handled an input at its local time `local`.
    Step {
        node: NodeId,
        incarnation: u32,
        local: Instant,
        input: InputSummary,
    },
    /// The store applied a request (or refused it while unavailable).
    Store {
        actor: Actor,
        request: RequestId,
        op: &'a StoreRequest<K, V>,
        reply: &'a StoreReply<K, V>,
        /// For writes: the document as it was just before.
        before: Option<&'a Document<K, V>>,
    },
    /// An effect service acted on a call: one line of the effect ledger.
    Effect {
        actor: Actor,
        request: RequestId,
        call: EffectRequest,
        outcome: EffectReply,
        /// When the node produced the call (the step that decided it); a
        /// paused node sends it later than it decided it.
        decided_us: u64,
        sent_us: u64,
    },
    /// A message that never arrived, and why.
    Lost {
        node: NodeId,
        incarnation: u32,
        request: RequestId,
        leg: Leg,
        reason: LossReason,
    },
    /// Something a node reported about itself.
    Event {
        node: NodeId,
        incarnation: u32,
        event: &'a E,
    },
    Fault(Fault),
    /// The node asked to stop (it fenced itself); it restarts later.
    Exit {
        node: NodeId,
        incarnation: u32,
    },
    /// A reply reached a node incarnation that no longer exists.
    Dropped {
        node: NodeId,
        incarnation: u32,
    },
    /// Faults stop here; liveness is judged from here on.
    HealPhase,
}

#[derive(Debug, Hash, Serialize)]
pub struct Record<'a, K, V, E> {
    pub time_us: u64,
    #[serde(flatten)]
    pub kind: RecordKind<'a, K, V, E>,
}

pub trait Observer<K, V, E> {
    fn record(&mut self, record: &Record<'_, K, V, E>);

    /// Asked before every event; `true` ends the run early (for instance once
    /// every task is done, or the liveness deadline has passed).
    fn should_stop(&self, _now_us: u64) -> bool {
        false
    }
}

/// An observer that ignores everything.
pub struct NullObserver;

impl<K, V, E> Observer<K, V, E> for NullObserver {
    fn record(&mut self, _record: &Record<'_, K, V, E>) {}
}
