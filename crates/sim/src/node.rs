//! The one trait a node implements to plug into the simulator.

use leasehold_interface::{Input, Instant, KeyClasses, LocalTime, Output};
use serde::Serialize;
use std::fmt::Debug;
use std::hash::Hash;

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A sans-IO state machine hosted by the simulator.
pub trait Node {
    type Key: Ord + Clone + Debug + Hash + Serialize + KeyClasses;
    type Value: Clone + Debug + Hash + Serialize;
    type Event: Clone + Debug + Hash + Serialize;

    /// Handle one input at local time `now`; push every resulting output.
    /// The input is borrowed, and the host drops it after the step: taken
    /// by value (88 bytes with the protocol's keys), the worker moved its
    /// reply out and on down its handlers, and dropped it there; friday-rush
    /// 187.66 M -> 185.37 M instructions by reference.
    fn step(
        &mut self,
        now: LocalTime,
        input: &Input<Self::Key, Self::Value>,
        out: &mut Vec<Output<Self::Key, Self::Value, Self::Event>>,
    );

    /// The local time at which the node wants a `Timeout` input, if any.
    fn poll_timeout(&self) -> Option<Instant>;

    /// Whether `event` is an annotation (a coverage note): it reports
    /// where the run went and is not an output a fault can cut. A step
    /// that a crash or a pause cuts short records its annotations at once
    /// and counts only its other outputs, so a note never moves where a
    /// fault falls (what a step's output count decides). None by default.
    fn is_annotation(_event: &Self::Event) -> bool {
        false
    }
}

/// What the simulator needs to know about a node besides its code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeSpec {
    /// A display name: `worker-3`, `reclaimer-0`.
    pub name: String,
    /// Whether the fault injector may crash it.
    pub crashable: bool,
    /// Whether the fault injector may pause it.
    pub pausable: bool,
    /// Local time offset and drift of its clock.
    pub clock: crate::clock::LocalClock,
    /// When it first boots, in simulated milliseconds.
    pub boot_at_ms: u64,
    /// Which random streams the node draws from. Stable identities make runs
    /// shrinkable: a node keeps its dice when other nodes are removed.
    pub stream_id: u32,
}
