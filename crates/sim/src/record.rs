//! What the simulator tells observers. Checkers, trace writers and the trace
//! hash all see the same stream of records, in the same order. Trace readers
//! read them back as [`OwnedRecord`]s.

use crate::faults::{Fault, Leg};
use crate::node::NodeId;
use leasehold_interface::{
    Document, EffectReply, EffectRequest, Input, Instant, RequestId, StoreReply, StoreRequest,
};
use serde::{Deserialize, Serialize};

/// Who sent a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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

    /// How a timed fault's tag names a step (see `TimedFault`): the kind of
    /// input in the low byte and, for a reply, the kind of reply in the next
    /// (a reclaimer's step on the store's "written" is not its step on a
    /// scan's page). `store_reply` is the reply when the input is a store's:
    /// a `Step` record leaves it out, and a shrinker looking for the steps a
    /// fault could be placed on finds it in the `Store` record of the same
    /// request; without it the tag matches no step.
    pub fn fault_tag<K, V>(&self, store_reply: Option<&StoreReply<K, V>>) -> u64 {
        let (kind, reply) = match (self, store_reply) {
            (InputSummary::Start, _) => (0, 0),
            (InputSummary::Timeout, _) => (1, 0),
            (InputSummary::StoreReply { .. }, None) => (2, 0),
            (InputSummary::StoreReply { .. }, Some(reply)) => (
                2,
                match reply {
                    StoreReply::Got { .. } => 1,
                    StoreReply::Written { .. } => 2,
                    StoreReply::Deleted => 3,
                    StoreReply::Conflict { .. } => 4,
                    StoreReply::Scanned { .. } => 5,
                    StoreReply::Unavailable => 6,
                },
            ),
            (InputSummary::EffectReply { reply, .. }, _) => (3, 1 + *reply as u64),
        };
        kind | reply << 8
    }
}

/// As a step is named in messages: `start`, `timeout`, `store reply to
/// request 7`, `effect reply (applied) to request 9`.
impl std::fmt::Display for InputSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputSummary::Start => f.write_str("start"),
            InputSummary::Timeout => f.write_str("timeout"),
            InputSummary::StoreReply { request } => {
                write!(f, "store reply to request {}", request.0)
            }
            InputSummary::EffectReply { request, reply } => {
                write!(f, "effect reply ({reply:?}) to request {}", request.0)
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossReason {
    /// A planned message fault dropped it.
    Dropped,
    Partition,
    StoreOutage,
    /// A hung service swallowed the call.
    Hung,
}

// An explicit tag, not a niche in the effect record's actor: a record
// site's kind is then a constant the simulator's matches on it fold away
// (through the niche, the effect site decoded the actor's tag to find the
// kind it had just built). Its derived `Hash` writes the tag as a `u8`
// where a niche enum's writes an `isize`: the trace hasher writes both as
// the same one byte.
#[derive(Debug, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[repr(u8)]
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
        /// When the node produced the request (the step that decided it; a
        /// paused node sends it later). The workload's writes are decided
        /// when they apply. Not hashed: the steps that decide requests are.
        decided_us: u64,
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

// Every field is a copy or a borrow: a record's parts pass by value, with
// no bounds on `K`, `V`, `E` (which `derive` would add).
impl<K, V, E> Clone for RecordKind<'_, K, V, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K, V, E> Copy for RecordKind<'_, K, V, E> {}

#[derive(Debug, Hash, Serialize)]
pub struct Record<'a, K, V, E> {
    pub time_us: u64,
    #[serde(flatten)]
    pub kind: RecordKind<'a, K, V, E>,
}

/// A [`Record`] read back from its JSON (a trace file's line): owned, where
/// a `Record` borrows from the running simulation. For reading only: it is
/// written again through [`OwnedRecord::as_record`], so how a record looks
/// in JSON has one definition, `Record`'s.
#[derive(Debug, Deserialize)]
pub struct OwnedRecord<K, V, E> {
    pub time_us: u64,
    #[serde(flatten)]
    pub kind: OwnedRecordKind<K, V, E>,
}

/// [`RecordKind`], owned; the same tags and fields. A mirror, not a second
/// definition: `as_record` builds every field of each `RecordKind` from it
/// (a field added there does not compile until added here), and a kind
/// added there without one here makes every trace holding it unreadable,
/// which the replay tests of fresh traces show.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum OwnedRecordKind<K, V, E> {
    Step {
        node: NodeId,
        incarnation: u32,
        local: Instant,
        input: InputSummary,
    },
    Store {
        actor: Actor,
        request: RequestId,
        op: StoreRequest<K, V>,
        reply: StoreReply<K, V>,
        before: Option<Document<K, V>>,
        decided_us: u64,
    },
    Effect {
        actor: Actor,
        request: RequestId,
        call: EffectRequest,
        outcome: EffectReply,
        decided_us: u64,
        sent_us: u64,
    },
    Lost {
        node: NodeId,
        incarnation: u32,
        request: RequestId,
        leg: Leg,
        reason: LossReason,
    },
    Event {
        node: NodeId,
        incarnation: u32,
        event: E,
    },
    Fault(Fault),
    Exit {
        node: NodeId,
        incarnation: u32,
    },
    Dropped {
        node: NodeId,
        incarnation: u32,
    },
    HealPhase,
}

impl<K, V, E> OwnedRecord<K, V, E> {
    /// The record this was read from, to be written (or compared) again.
    pub fn as_record(&self) -> Record<'_, K, V, E> {
        use OwnedRecordKind as O;
        use RecordKind as R;
        let kind = match &self.kind {
            &O::Step {
                node,
                incarnation,
                local,
                input,
            } => R::Step {
                node,
                incarnation,
                local,
                input,
            },
            O::Store {
                actor,
                request,
                op,
                reply,
                before,
                decided_us,
            } => R::Store {
                actor: *actor,
                request: *request,
                op,
                reply,
                before: before.as_ref(),
                decided_us: *decided_us,
            },
            &O::Effect {
                actor,
                request,
                call,
                outcome,
                decided_us,
                sent_us,
            } => R::Effect {
                actor,
                request,
                call,
                outcome,
                decided_us,
                sent_us,
            },
            &O::Lost {
                node,
                incarnation,
                request,
                leg,
                reason,
            } => R::Lost {
                node,
                incarnation,
                request,
                leg,
                reason,
            },
            O::Event {
                node,
                incarnation,
                event,
            } => R::Event {
                node: *node,
                incarnation: *incarnation,
                event,
            },
            O::Fault(fault) => R::Fault(*fault),
            &O::Exit { node, incarnation } => R::Exit { node, incarnation },
            &O::Dropped { node, incarnation } => R::Dropped { node, incarnation },
            O::HealPhase => R::HealPhase,
        };
        Record {
            time_us: self.time_us,
            kind,
        }
    }
}

pub trait Observer<K, V, E> {
    fn record(&mut self, record: &Record<'_, K, V, E>);

    /// `record`, given the record's parts: how the simulator hands over
    /// each record, inlined at a site where the kind is a constant. An
    /// observer that skips some kinds overrides it to decide before the
    /// record is built: a record lent to `record` is stored to memory, ~8
    /// stores a record that a skipped kind need not pay.
    #[inline(always)]
    fn record_parts(&mut self, time_us: u64, kind: RecordKind<'_, K, V, E>) {
        self.record(&Record { time_us, kind });
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A timed fault's tag tells inputs apart by kind and, for replies, by
    /// kind of reply; a store reply whose reply is unknown matches none.
    #[test]
    fn fault_tags_name_the_kind_of_input_and_of_reply() {
        let reply = InputSummary::StoreReply {
            request: RequestId(7),
        };
        let written: StoreReply<u64, u64> = StoreReply::Written { version: 3 };
        let scanned: StoreReply<u64, u64> = StoreReply::Scanned {
            docs: Vec::new(),
            more: false,
        };
        let effect = |reply| InputSummary::EffectReply {
            request: RequestId(7),
            reply,
        };
        let tags = [
            InputSummary::Start.fault_tag::<u64, u64>(None),
            InputSummary::Timeout.fault_tag::<u64, u64>(None),
            reply.fault_tag(Some(&written)),
            reply.fault_tag(Some(&scanned)),
            reply.fault_tag::<u64, u64>(None),
            effect(EffectReply::Applied).fault_tag::<u64, u64>(None),
            effect(EffectReply::Failed).fault_tag::<u64, u64>(None),
        ];
        for (i, a) in tags.iter().enumerate() {
            for b in &tags[i + 1..] {
                assert_ne!(a, b, "{tags:?}");
            }
        }
        // The low byte is the kind of input alone.
        assert_eq!(tags[2] & 0xff, tags[3] & 0xff);
        assert_eq!(tags[5] & 0xff, 3);
    }
}
