//! What a sans-IO node takes in and gives out.
//!
//! Shape borrowed from quinn-proto and str0m: the host calls
//! `handle_input(now, input)`, then drains outputs, then asks for the next
//! wake-up time. Time is always an argument.

use crate::effect::{EffectReply, EffectRequest};
use crate::store::{StoreReply, StoreRequest};
use serde::{Deserialize, Serialize};

/// Correlates a reply with the request a node sent. Unique per node
/// incarnation; the host never interprets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(pub u64);

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "snake_case")]
// An explicit one-byte tag: without it the variant was a niche deep inside
// the store reply's document, and every test of which input this is (the
// node's dispatch, the step's record and fault tag, the drop after the step)
// decoded it (-0.98 M instructions for friday-rush seeds 1..5).
#[repr(u8)]
pub enum Input<K, V> {
    /// First input of every incarnation.
    Start,
    /// The wake-up time the node asked for has come.
    Timeout,
    StoreReply {
        request: RequestId,
        reply: StoreReply<K, V>,
    },
    EffectReply {
        request: RequestId,
        reply: EffectReply,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "output", rename_all = "snake_case")]
// An explicit one-byte tag, as `Input`'s: the step sends each output by
// its kind (-0.79 M instructions for friday-rush seeds 1..5).
#[repr(u8)]
pub enum Output<K, V, E> {
    Store {
        request: RequestId,
        op: StoreRequest<K, V>,
    },
    Effect {
        request: RequestId,
        call: EffectRequest,
    },
    /// Something the node did that observers may want to see on a timeline.
    Event(E),
    /// The node stops itself (for instance it fenced itself after losing its
    /// lease); the host restarts it later as a new incarnation.
    Exit,
}
