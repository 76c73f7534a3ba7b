//! Plugs the protocol's sans-IO state machines into the simulator's `Node`
//! trait. The only place where protocol and simulator meet.

use leasehold_interface::{Instant, LocalTime, Output};
use leasehold_protocol::{DocKey, DocValue, LeaseEvent, LeaseInput, Reclaimer, Worker};
use leasehold_sim::Node;

pub enum LeaseNode {
    Worker(Worker),
    Reclaimer(Reclaimer),
}

impl Node for LeaseNode {
    type Key = DocKey;
    type Value = DocValue;
    type Event = LeaseEvent;

    fn step(
        &mut self,
        now: LocalTime,
        input: &LeaseInput,
        out: &mut Vec<Output<DocKey, DocValue, LeaseEvent>>,
    ) {
        match self {
            LeaseNode::Worker(w) => w.step(now, input, out),
            LeaseNode::Reclaimer(r) => r.step(now, input, out),
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            LeaseNode::Worker(w) => w.poll_timeout(),
            LeaseNode::Reclaimer(r) => r.poll_timeout(),
        }
    }

    /// Coverage points are notes: a fault cutting a step short never
    /// counts them among its outputs.
    fn is_annotation(event: &LeaseEvent) -> bool {
        event.is_coverage()
    }
}
