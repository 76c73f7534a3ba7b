//! Pending requests and queued outputs, shared by both state machines.

use crate::sorted_vec_map::SortedVecMap;
use crate::{DocKey, DocValue, LeaseEvent, LeaseOutput};
use leasehold_interface::{EffectRequest, Instant, Output, RequestId, StoreRequest};
use std::collections::VecDeque;

/// Bound on requests one node may have outstanding: a worker has a handful
/// per task slot; anything beyond this is a runaway loop.
pub const MAX_PENDING_REQUESTS: usize = 4_096;
/// Bound on queued outputs between two polls.
pub const MAX_QUEUED_OUTPUTS: usize = 4_096;

pub struct Outbox<P> {
    next_request: u64,
    /// By request id, which only grows: a new request is a push.
    pending: SortedVecMap<RequestId, (P, Instant)>,
    queued: VecDeque<LeaseOutput>,
}

impl<P> Outbox<P> {
    pub fn new() -> Outbox<P> {
        Outbox {
            next_request: 0,
            pending: SortedVecMap::new(),
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

    /// Remove and return the oldest request whose deadline has passed.
    /// Called in a loop; requests sent meanwhile have later deadlines.
    pub fn expire_one(&mut self, now: Instant) -> Option<P> {
        self.pending
            .remove_first_where(|_, (_, deadline)| *deadline <= now)
            .map(|(_, (purpose, _))| purpose)
    }

    pub fn clear_pending(&mut self) {
        self.pending.clear();
    }

    pub fn poll(&mut self) -> Option<LeaseOutput> {
        self.queued.pop_front()
    }
}
