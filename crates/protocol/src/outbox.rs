//! Pending requests and queued outputs, shared by both state machines.

use crate::{DocKey, DocValue, LeaseEvent, LeaseOutput};
use leasehold_interface::{EffectRequest, Instant, Output, RequestId, StoreRequest};
use std::collections::{BTreeMap, VecDeque};

/// Bound on requests one node may have outstanding: a worker has a handful
/// per task slot; anything beyond this is a runaway loop.
pub const MAX_PENDING_REQUESTS: usize = 4_096;
/// Bound on queued outputs between two polls.
pub const MAX_QUEUED_OUTPUTS: usize = 4_096;

pub struct Outbox<P> {
    next_request: u64,
    pending: BTreeMap<RequestId, (P, Instant)>,
    queued: VecDeque<LeaseOutput>,
}

impl<P> Outbox<P> {
    pub fn new() -> Outbox<P> {
        Outbox {
            next_request: 0,
            pending: BTreeMap::new(),
            queued: VecDeque::new(),
        }
    }

    fn push(&mut self, output: LeaseOutput) {
        assert!(
            self.queued.len() < MAX_QUEUED_OUTPUTS,
            "output queue overflow"
        );
        self.queued.push_back(output);
    }

    fn next_id(&mut self, purpose: P, deadline: Instant) -> RequestId {
        assert!(
            self.pending.len() < MAX_PENDING_REQUESTS,
            "too many pending requests"
        );
        let id = RequestId(self.next_request);
        self.next_request += 1;
        self.pending.insert(id, (purpose, deadline));
        id
    }

    pub fn store(&mut self, op: StoreRequest<DocKey, DocValue>, purpose: P, deadline: Instant) {
        let request = self.next_id(purpose, deadline);
        self.push(Output::Store { request, op });
    }

    pub fn effect(&mut self, call: EffectRequest, purpose: P, deadline: Instant) {
        let request = self.next_id(purpose, deadline);
        self.push(Output::Effect { request, call });
    }

    pub fn event(&mut self, event: LeaseEvent) {
        self.push(Output::Event(event));
    }

    pub fn exit(&mut self) {
        self.push(Output::Exit);
    }

    /// The purpose of a reply's request; `None` for a reply we gave up on.
    pub fn take(&mut self, request: RequestId) -> Option<P> {
        self.pending.remove(&request).map(|(p, _)| p)
    }

    pub fn earliest_deadline(&self) -> Option<Instant> {
        self.pending.values().map(|(_, d)| *d).min()
    }

    /// Remove and return every request whose deadline has passed.
    pub fn expire(&mut self, now: Instant) -> Vec<P> {
        let due: Vec<RequestId> = self
            .pending
            .iter()
            .filter(|(_, (_, d))| *d <= now)
            .map(|(id, _)| *id)
            .collect();
        due.into_iter()
            .map(|id| self.pending.remove(&id).expect("listed").0)
            .collect()
    }

    pub fn clear_pending(&mut self) {
        self.pending.clear();
    }

    pub fn poll(&mut self) -> Option<LeaseOutput> {
        self.queued.pop_front()
    }
}
