//! Pending requests and queued outputs, shared by both state machines.

use crate::{DocKey, DocValue, LeaseEvent, LeaseOutput};
use leasehold_interface::{EffectRequest, Instant, Output, RequestId, StoreRequest};

/// Bound on requests one node may have outstanding: a worker has a handful
/// per task slot; anything beyond this is a runaway loop.
pub const MAX_PENDING_REQUESTS: usize = 4_096;
/// Bound on queued outputs between two polls.
pub const MAX_QUEUED_OUTPUTS: usize = 4_096;
/// `Outbox::earliest` when nothing is in flight: the end of time.
pub const NEVER: Instant = Instant::from_micros(u64::MAX);
/// The id of a spent entry (before `head`): no request has it (ids count up
/// from zero), so `take` may test the vector's last entry without `head`.
const SPENT: RequestId = RequestId(u64::MAX);

pub struct Outbox<P> {
    next_request: u64,
    /// `pending[head..]` are the requests in flight, in request-id order
    /// (ids only grow: a new request is a push at the back); entries before
    /// `head` are spent, their ids `SPENT`. Replies come back roughly in the order requests
    /// left, so a removal is near the front: the entries before it move up
    /// one place and `head` steps past the gap (a removal nearer the back
    /// shifts the back instead). A plain sorted `Vec` shifted every later
    /// entry per reply, a 60 KiB `memmove` for a reclaimer with a thousand
    /// requeues in flight; a `VecDeque` did the same work with a ring's
    /// index arithmetic on every access and scan.
    pending: Vec<(RequestId, P, Instant)>,
    head: usize,
    /// The earliest deadline in `pending[head..]`, or the end of time
    /// (`NEVER`) when nothing is in flight: kept, because the host asks for
    /// it after every input and every input checks for expiries; recomputed
    /// only when the request holding it leaves. A plain `Instant`, not an
    /// `Option`: a send folds it in with one `min`, an expiry check and a
    /// reply's "was it this one" are one compare each (the `Option`'s tag
    /// was a test and a store more). Whether it is a deadline at the end
    /// of time or none is told by whether anything is in flight
    /// (`earliest_deadline`).
    earliest: Instant,
    /// What the `Option` above took besides its `Instant`: a node's size
    /// moves the host's slot (an outbox 8 bytes smaller cost the simulator
    /// 0.37 M instructions in the sixteenth round, more than it saved).
    _room: u64,
    /// A `Vec`, not a ring: the host drains it whole after every input, and
    /// `append` moves the lot in one copy.
    queued: Vec<LeaseOutput>,
}

impl<P: Copy> Outbox<P> {
    pub fn new() -> Outbox<P> {
        Outbox {
            next_request: 0,
            pending: Vec::new(),
            head: 0,
            earliest: NEVER,
            _room: 0,
            queued: Vec::new(),
        }
    }

    fn push(&mut self, output: LeaseOutput) {
        self.push_to(output, false);
    }

    /// `push`; `in_place` (a constant where inlined) when the caller has
    /// checked `sends_in_place`: the room is asserted, so the vector's own
    /// test for it folds away and no growth is called.
    #[inline(always)]
    fn push_to(&mut self, output: LeaseOutput, in_place: bool) {
        assert!(
            self.queued.len() < MAX_QUEUED_OUTPUTS,
            "output queue overflow"
        );
        if in_place {
            assert!(self.queued.len() < self.queued.capacity(), "checked");
        }
        self.queued.push(output);
    }

    #[inline]
    fn next_id(&mut self, purpose: P, deadline: Instant) -> RequestId {
        self.next_id_to(purpose, deadline, false)
    }

    /// `next_id`; `in_place` as in `push_to`.
    #[inline(always)]
    fn next_id_to(&mut self, purpose: P, deadline: Instant, in_place: bool) -> RequestId {
        let id = RequestId(self.next_request);
        self.next_request += 1;
        // Reclaim the spent prefix: for free when nothing is in flight,
        // else once it is at least eight entries and half the vector (so the
        // vector stays within twice the requests in flight, plus eight).
        // The second test out of line: a worker's prefix is below eight
        // entries nearly always, and the two tests together were seven
        // instructions a request (the compiler evaluated both).
        // The bound is tested only with something in flight: after the
        // clear, nothing is (and the count in flight is worked out once).
        let live = self.pending.len() - self.head;
        if live == 0 {
            self.pending.clear();
            self.head = 0;
        } else {
            assert!(live < MAX_PENDING_REQUESTS, "too many pending requests");
            if self.head >= 8 {
                self.reclaim_spent_if_half();
            }
        }
        debug_assert!(
            self.pending[..self.head]
                .iter()
                .all(|(id, _, _)| *id == SPENT)
        );
        debug_assert!(
            self.pending[self.head..]
                .last()
                .is_none_or(|(last, _, _)| *last < id)
        );
        if in_place {
            assert!(self.pending.len() < self.pending.capacity(), "checked");
        }
        self.pending.push((id, purpose, deadline));
        // `NEVER` when nothing else is in flight: the minimum is `deadline`.
        self.earliest = self.earliest.min(deadline);
        id
    }

    /// Whether a send now needs no call: room in both vectors, and no spent
    /// prefix that `next_id` might reclaim. A caller that tests it first
    /// and sends out of line when it fails keeps no frame for those calls.
    #[inline(always)]
    pub fn sends_in_place(&self) -> bool {
        (self.head < 8)
            & (self.pending.len() < self.pending.capacity())
            & (self.queued.len() < self.queued.capacity())
    }

    /// `next_id`'s reclaim of a spent prefix of eight entries or more, once
    /// it is half the vector.
    #[inline(never)]
    fn reclaim_spent_if_half(&mut self) {
        if self.head * 2 >= self.pending.len() {
            self.pending.drain(..self.head);
            self.head = 0;
        }
    }

    pub fn store(&mut self, op: StoreRequest<DocKey, DocValue>, purpose: P, deadline: Instant) {
        let request = self.next_id(purpose, deadline);
        self.push(Output::Store { request, op });
    }

    /// `store` after `sends_in_place` held: no call in it.
    #[inline(always)]
    pub fn store_in_place(
        &mut self,
        op: StoreRequest<DocKey, DocValue>,
        purpose: P,
        deadline: Instant,
    ) {
        debug_assert!(self.sends_in_place());
        let request = self.next_id_to(purpose, deadline, true);
        self.push_to(Output::Store { request, op }, true);
    }

    pub fn effect(&mut self, call: EffectRequest, purpose: P, deadline: Instant) {
        let request = self.next_id(purpose, deadline);
        self.push(Output::Effect { request, call });
    }

    pub fn event(&mut self, event: LeaseEvent) {
        self.push(Output::Event(event));
    }

    /// Report a coverage point. Out of line and cold: every point sits on
    /// a rare path, and its call site keeps no more than a call.
    #[cold]
    #[inline(never)]
    pub fn cover(&mut self, point: crate::CoveragePoint) {
        self.push(Output::Event(LeaseEvent::Coverage { point }));
    }

    pub fn exit(&mut self) {
        self.push(Output::Exit);
    }

    /// The purpose of a reply's request; `None` for a reply we gave up on.
    /// Always inlined: as a call, the purpose came back through memory and
    /// was copied once more, and the call cost a frame per reply.
    #[inline(always)]
    pub fn take(&mut self, request: RequestId) -> Option<P> {
        debug_assert_ne!(request, SPENT);
        // Nearly every reply is for the newest request in flight (a store
        // request answered before the effects sent earlier) or the oldest:
        // both are taken here, with no walk and no shift. Any other is
        // removed where it is, out of line (`take_inside`).
        //
        // The vector's last entry, read without `head`: a spent entry's id
        // is `SPENT`, which no reply carries, so a match is in flight. (The
        // live slice `[head..]` cost a bounds check and its end's address
        // was worked out twice.)
        if let Some(&(id, purpose, deadline)) = self.pending.last()
            && id == request
        {
            self.pending.truncate(self.pending.len() - 1);
            if deadline == self.earliest {
                self.earliest = earliest_of(&self.pending[self.head..]);
            }
            return Some(purpose);
        }
        if let Some((id, purpose, deadline)) = self.pending.get_mut(self.head)
            && *id == request
        {
            *id = SPENT;
            let (purpose, deadline) = (*purpose, *deadline);
            self.head += 1;
            if deadline == self.earliest {
                self.earliest = earliest_of(&self.pending[self.head..]);
            }
            return Some(purpose);
        }
        self.take_inside(request)
    }

    /// The purpose of the newest request in flight if it is `request`
    /// (what `take` would find first), leaving it in flight.
    #[inline(always)]
    pub fn newest(&self, request: RequestId) -> Option<P> {
        debug_assert_ne!(request, SPENT);
        // A spent entry's id is `SPENT`, which no reply carries (see `take`).
        match self.pending.last() {
            Some(&(id, purpose, _)) if id == request => Some(purpose),
            _ => None,
        }
    }

    /// `take` for the newest request in flight, known to be `request`
    /// (`newest` said so): asserted, with no search and no call.
    #[inline(always)]
    pub fn take_newest(&mut self, request: RequestId) -> P {
        let Some(&(id, purpose, deadline)) = self.pending.last() else {
            unreachable!("a request in flight")
        };
        assert!(id == request, "the newest request in flight");
        self.pending.truncate(self.pending.len() - 1);
        if deadline == self.earliest {
            self.earliest = earliest_of(&self.pending[self.head..]);
        }
        purpose
    }

    /// For `take`: a request neither the newest nor the oldest in flight,
    /// removed where it is (`remove`: the fewer entries move, the others
    /// keep their order); `None` when it is not in flight. One search and
    /// one shift, where moving it to an end first and taking it there went
    /// round `take` twice.
    #[inline(never)]
    fn take_inside(&mut self, request: RequestId) -> Option<P> {
        // Replies mostly come back in the order their requests left, so the
        // request is near the front: a short walk finds it, and only a long
        // list (a reclaimer's requeues) is searched by halves.
        const WALK: usize = 8;
        let head = self.head;
        let live = &self.pending[head..];
        let i = match live.iter().take(WALK).position(|(id, _, _)| *id >= request) {
            Some(i) if live[i].0 == request => i,
            Some(_) => return None,
            None if live.len() <= WALK => return None,
            None => live.binary_search_by_key(&request, |(id, _, _)| *id).ok()?,
        };
        let at = head + i;
        let (_, purpose, deadline) = self.pending[at];
        if i < self.pending.len() - at {
            // Nearer the front (nearly always one or two places in): the
            // earlier requests move up one place, one by one (no `memmove`
            // call for so few), and `head` steps past the gap.
            for j in (head..at).rev() {
                self.pending[j + 1] = self.pending[j];
            }
            self.pending[head].0 = SPENT;
            self.head = head + 1;
        } else {
            self.pending.remove(at);
        }
        if deadline == self.earliest {
            self.earliest = earliest_of(&self.pending[self.head..]);
        }
        Some(purpose)
    }

    /// Remove the `i`-th request in flight; its purpose.
    fn remove(&mut self, i: usize) -> P {
        let at = self.head + i;
        let (_, purpose, deadline) = self.pending[at];
        if i == 0 {
            self.pending[at].0 = SPENT;
            self.head += 1;
        } else if at + 1 == self.pending.len() {
            self.pending.pop();
        } else if i < self.pending.len() - at {
            // Nearer the front: the earlier requests move up one place.
            self.pending.copy_within(self.head..at, self.head + 1);
            self.pending[self.head].0 = SPENT;
            self.head += 1;
        } else {
            self.pending.remove(at);
        }
        if deadline == self.earliest {
            self.earliest = earliest_of(&self.pending[self.head..]);
        }
        purpose
    }

    /// The earliest deadline in flight, computed.
    fn scan_earliest(&self) -> Option<Instant> {
        let live = &self.pending[self.head..];
        live.iter().map(|(_, _, d)| *d).min()
    }

    /// The earliest deadline of the requests in flight; `None` when none is.
    pub fn earliest_deadline(&self) -> Option<Instant> {
        let earliest = (self.head != self.pending.len()).then_some(self.earliest);
        debug_assert_eq!(earliest, self.scan_earliest());
        earliest
    }

    /// `earliest_deadline`, with the end of time (`NEVER`) for none: one
    /// load, where the host asks after every input and every input checks
    /// for expiries. No clock reads the end of time, so `now >= ` it is
    /// false as "none" must be (and were it true, `expire_one` would find
    /// nothing to expire).
    #[inline]
    pub fn earliest_or_never(&self) -> Instant {
        debug_assert_eq!(self.earliest, self.earliest_deadline().unwrap_or(NEVER));
        self.earliest
    }

    /// Remove and return the oldest request whose deadline has passed.
    /// Called in a loop; requests sent meanwhile have later deadlines.
    pub fn expire_one(&mut self, now: Instant) -> Option<P> {
        if now < self.earliest_or_never() {
            return None;
        }
        let i = self.pending[self.head..]
            .iter()
            .position(|(_, _, d)| *d <= now)?;
        Some(self.remove(i))
    }

    pub fn clear_pending(&mut self) {
        self.pending.clear();
        self.head = 0;
        self.earliest = NEVER;
    }

    pub fn poll(&mut self) -> Option<LeaseOutput> {
        // Outputs are few (a step queues a handful), so the shift is cheap.
        (!self.queued.is_empty()).then(|| self.queued.remove(0))
    }

    /// Every queued output, in order, appended to `out`. An empty `out`
    /// (the host's case after every input) and the queue change places
    /// instead: the outputs are handed over without a copy, in one swap
    /// (lending `out` to the queue for the input and taking it back cost
    /// two).
    pub fn drain_into(&mut self, out: &mut Vec<LeaseOutput>) {
        if out.is_empty() {
            std::mem::swap(&mut self.queued, out);
        } else {
            out.append(&mut self.queued);
        }
    }
}

/// The earliest deadline among `live` requests; `NEVER` for none.
fn earliest_of<P>(live: &[(RequestId, P, Instant)]) -> Instant {
    let mut live = live.iter();
    let Some(&(_, _, mut earliest)) = live.next() else {
        return NEVER;
    };
    // A plain loop: one to three requests are in flight nearly always.
    // The early exit (nothing is due before zero) keeps LLVM from
    // unrolling it behind a trip-count division, which cost more than
    // the walk (`Iterator::min` did).
    for (_, _, deadline) in live {
        earliest = earliest.min(*deadline);
        if earliest == Instant::ZERO {
            break;
        }
    }
    earliest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TaskId;
    use std::collections::BTreeMap;

    fn claimed(task: u32) -> LeaseOutput {
        Output::Event(LeaseEvent::Claimed {
            task: TaskId(task),
            epoch: 1,
        })
    }

    /// A drain appends to what the host holds, and hands over the queue
    /// whole when the host holds nothing; either way the queue is left empty.
    #[test]
    fn a_drain_appends_or_hands_over() {
        let mut ours: Outbox<u64> = Outbox::new();
        ours.push(claimed(1));
        let mut out = vec![claimed(0)];
        ours.drain_into(&mut out);
        assert_eq!(out, (0..2).map(claimed).collect::<Vec<_>>());
        assert!(ours.queued.is_empty());
        let mut out = Vec::with_capacity(3);
        ours.push(claimed(2));
        ours.push(claimed(3));
        ours.drain_into(&mut out);
        assert_eq!(out, (2..4).map(claimed).collect::<Vec<_>>());
        assert!(ours.queued.is_empty());
        assert_eq!(ours.queued.capacity(), 3, "the host's vector, in exchange");
    }

    /// The same answers as a map from request id to (purpose, deadline),
    /// for any mix of sends, replies (in and out of order, duplicated, for
    /// requests given up), expiries and clears, with few and many requests
    /// in flight.
    #[test]
    fn pending_requests_behave_like_a_map_by_id() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for in_flight in [2u64, 8, 40, 1_000] {
            let mut ours: Outbox<u64> = Outbox::new();
            let mut theirs: BTreeMap<u64, (u64, Instant)> = BTreeMap::new();
            let mut sent = 0u64;
            let mut now = 0u64;
            for _ in 0..20_000 {
                match next() % 8 {
                    0..=2 if (theirs.len() as u64) < in_flight => {
                        let purpose = next();
                        let deadline = Instant::from_micros(now + 1 + next() % 50);
                        assert_eq!(ours.next_id(purpose, deadline), RequestId(sent));
                        theirs.insert(sent, (purpose, deadline));
                        sent += 1;
                        // Spent entries are reclaimed as requests are sent.
                        assert!(ours.pending.len() <= 2 * theirs.len() + 8);
                    }
                    0..=4 => {
                        // Mostly an early request, sometimes any id at all.
                        let id = match theirs.keys().nth((next() % 3) as usize) {
                            Some(&id) if next() % 4 != 0 => id,
                            _ => next() % (sent + 1),
                        };
                        let want = theirs.remove(&id).map(|(p, _)| p);
                        assert_eq!(ours.take(RequestId(id)), want);
                    }
                    5 | 6 => {
                        now += next() % 10;
                        let due = theirs
                            .iter()
                            .find(|(_, (_, d))| *d <= Instant::from_micros(now))
                            .map(|(&id, &(p, _))| (id, p));
                        if let Some((id, _)) = due {
                            theirs.remove(&id);
                        }
                        assert_eq!(
                            ours.expire_one(Instant::from_micros(now)),
                            due.map(|(_, p)| p)
                        );
                    }
                    _ if next() % 64 == 0 => {
                        ours.clear_pending();
                        theirs.clear();
                    }
                    _ => {}
                }
                assert_eq!(
                    ours.earliest_deadline(),
                    theirs.values().map(|(_, d)| *d).min()
                );
            }
        }
    }
}
