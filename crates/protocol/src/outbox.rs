//! Pending requests and queued outputs, shared by both state machines.

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
    /// In request-id order (ids only grow: a new request is a push at the
    /// back). A ring buffer because replies come back roughly in the order
    /// requests left, so removals are near the front; a `Vec` shifted every
    /// later entry per reply, a 60 KiB `memmove` for a reclaimer with a
    /// thousand requeues in flight.
    pending: VecDeque<(RequestId, P, Instant)>,
    /// A `Vec`, not a ring: the host drains it whole after every input, and
    /// `append` moves the lot in one copy.
    queued: Vec<LeaseOutput>,
}

impl<P> Outbox<P> {
    pub fn new() -> Outbox<P> {
        Outbox {
            next_request: 0,
            pending: VecDeque::new(),
            queued: Vec::new(),
        }
    }

    fn push(&mut self, output: LeaseOutput) {
        assert!(
            self.queued.len() < MAX_QUEUED_OUTPUTS,
            "output queue overflow"
        );
        self.queued.push(output);
    }

    fn next_id(&mut self, purpose: P, deadline: Instant) -> RequestId {
        assert!(
            self.pending.len() < MAX_PENDING_REQUESTS,
            "too many pending requests"
        );
        let id = RequestId(self.next_request);
        self.next_request += 1;
        debug_assert!(self.pending.back().is_none_or(|(last, _, _)| *last < id));
        self.pending.push_back((id, purpose, deadline));
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
        // Replies mostly come back in the order their requests left, so the
        // request is at or near the front: a short walk finds it, and only
        // a long list (a reclaimer's requeues) is searched by halves.
        const WALK: usize = 8;
        let i = match self
            .pending
            .iter()
            .take(WALK)
            .position(|(id, _, _)| *id >= request)
        {
            Some(i) if self.pending[i].0 == request => i,
            Some(_) => return None,
            None if self.pending.len() <= WALK => return None,
            None => self
                .pending
                .binary_search_by_key(&request, |(id, _, _)| *id)
                .ok()?,
        };
        if i == 0 {
            return self.pending.pop_front().map(|(_, purpose, _)| purpose);
        }
        self.pending.remove(i).map(|(_, purpose, _)| purpose)
    }

    pub fn earliest_deadline(&self) -> Option<Instant> {
        self.pending.iter().map(|(_, _, d)| *d).min()
    }

    /// Remove and return the oldest request whose deadline has passed.
    /// Called in a loop; requests sent meanwhile have later deadlines.
    pub fn expire_one(&mut self, now: Instant) -> Option<P> {
        let i = self.pending.iter().position(|(_, _, d)| *d <= now)?;
        self.pending.remove(i).map(|(_, purpose, _)| purpose)
    }

    pub fn clear_pending(&mut self) {
        self.pending.clear();
    }

    pub fn poll(&mut self) -> Option<LeaseOutput> {
        // Outputs are few (a step queues a handful), so the shift is cheap.
        (!self.queued.is_empty()).then(|| self.queued.remove(0))
    }

    pub fn drain_into(&mut self, out: &mut Vec<LeaseOutput>) {
        out.append(&mut self.queued);
    }
}
