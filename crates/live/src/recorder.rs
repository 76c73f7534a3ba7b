//! Puts the records of a live run's many threads in one order, the order
//! they happened in as far as the host can tell, for the judge.
//!
//! Every record is stamped by the thread that makes it, from one monotonic
//! clock: a store write once it holds the store's write lock (so writes'
//! stamps follow their revisions, and come before anyone sees them), a
//! store read once it returned, anything a node does when it does it. The
//! recorder holds records for a short window (a thread may be preempted
//! between stamping a record and handing it over) and sends them out by
//! stamp, with two rules the stamps already keep but the order must not
//! break: writes go out in revision order, and a record that depends on a
//! write (a reply that observed it, anything a node did after a reply that
//! observed it) goes out after it. Times are made non-decreasing as records
//! go out.

use leasehold_protocol::{DocKey, DocValue, LeaseEvent};
use leasehold_sim::{OwnedRecord, OwnedRecordKind, Record};
use std::collections::BTreeMap;

pub type Kind = OwnedRecordKind<DocKey, DocValue, LeaseEvent>;

/// Where a record goes in the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// The write that took this revision.
    Write(u64),
    /// After every write up to this revision.
    After(u64),
}

pub struct Entry {
    pub time_us: u64,
    pub order: Order,
    pub kind: Kind,
}

/// Past this many records held back, the run's order is broken: a bug in
/// the host.
const MAX_HELD: usize = 1 << 22;

type Emit<'e> = &'e mut dyn FnMut(&Record<'_, DocKey, DocValue, LeaseEvent>);

pub struct Recorder {
    /// Every write up to this revision has gone out (or was given up on).
    out_rev: u64,
    /// Held records by (stamp, arrival).
    pending: BTreeMap<(u64, u64), Entry>,
    arrivals: u64,
    last_us: u64,
    /// Revisions given up on: a write that never reported (its commit's
    /// outcome unknown).
    pub gaps: u64,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            out_rev: 0,
            pending: BTreeMap::new(),
            arrivals: 0,
            last_us: 0,
            gaps: 0,
        }
    }

    pub fn push(&mut self, entry: Entry) {
        self.arrivals += 1;
        self.pending.insert((entry.time_us, self.arrivals), entry);
        assert!(
            self.pending.len() <= MAX_HELD,
            "records held past the bound"
        );
    }

    fn ready(&self, entry: &Entry) -> bool {
        match entry.order {
            // A write after a gap given up on goes out when it comes.
            Order::Write(rev) => rev <= self.out_rev + 1,
            Order::After(rev) => rev <= self.out_rev,
        }
    }

    /// Send out every record stamped at or before `horizon_us` whose writes
    /// are out, by stamp. A record waiting for a write since before
    /// `give_up_us` gives that write up (a gap).
    pub fn release(&mut self, horizon_us: u64, give_up_us: u64, emit: Emit<'_>) {
        let mut blocked: Vec<((u64, u64), Entry)> = Vec::new();
        // Bounded by the records held: each is taken once.
        while let Some(first) = self.pending.first_entry() {
            if first.key().0 > horizon_us {
                break;
            }
            let (key, entry) = first.remove_entry();
            if !self.ready(&entry) {
                blocked.push((key, entry));
                continue;
            }
            self.emit(entry, emit);
            // A write went out: what waited for it may follow, in order.
            while let Some(at) = blocked.iter().position(|(_, e)| self.ready(e)) {
                let (_, entry) = blocked.remove(at);
                self.emit(entry, emit);
            }
        }
        if let Some(((time_us, _), _)) = blocked.first()
            && *time_us <= give_up_us
        {
            self.out_rev += 1;
            self.gaps += 1;
        }
        self.pending.extend(blocked);
    }

    fn emit(&mut self, entry: Entry, emit: Emit<'_>) {
        if let Order::Write(rev) = entry.order {
            self.out_rev = self.out_rev.max(rev);
        }
        self.last_us = self.last_us.max(entry.time_us);
        let record = OwnedRecord {
            time_us: self.last_us,
            kind: entry.kind,
        };
        emit(&record.as_record());
    }

    /// The run is over: every record held goes out, giving up on writes
    /// that never reported.
    pub fn flush(&mut self, emit: Emit<'_>) {
        // Bounded: each round sends a record out or gives a revision up,
        // and the held records wait for revisions below their own.
        while !self.pending.is_empty() {
            self.release(u64::MAX, u64::MAX, emit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_sim::Fault;

    fn entry(time_us: u64, order: Order, tag: u64) -> Entry {
        Entry {
            time_us,
            order,
            // Any record will do; the tag tells them apart.
            kind: Kind::Fault(Fault::Resume {
                node: leasehold_sim::NodeId(tag as u32),
            }),
        }
    }

    fn run(entries: Vec<Entry>) -> Vec<(u64, u64)> {
        let mut r = Recorder::new();
        for e in entries {
            r.push(e);
        }
        let mut out = Vec::new();
        r.flush(&mut |rec| {
            if let leasehold_sim::RecordKind::Fault(Fault::Resume { node }) = rec.kind {
                out.push((u64::from(node.0), rec.time_us));
            }
        });
        out
    }

    /// By stamp, except that a record waiting for a write follows it, and
    /// writes follow their revisions; times never go back.
    #[test]
    fn records_follow_their_stamps_and_their_writes() {
        let out = run(vec![
            entry(30, Order::Write(2), 2),
            entry(10, Order::After(2), 9),
            entry(20, Order::Write(1), 1),
            entry(5, Order::After(0), 0),
            entry(40, Order::After(1), 4),
        ]);
        assert_eq!(out, vec![(0, 5), (1, 20), (2, 30), (9, 30), (4, 40)]);
    }

    /// A write that never reports is given up on, and what waited for it
    /// goes out all the same.
    #[test]
    fn a_write_that_never_reports_is_a_gap() {
        let mut r = Recorder::new();
        r.push(entry(10, Order::After(1), 7));
        r.push(entry(20, Order::Write(2), 2));
        let mut out = Vec::new();
        r.release(100, 0, &mut |rec| out.push(rec.time_us));
        assert!(out.is_empty() && r.gaps == 0, "held, not given up yet");
        r.release(100, 100, &mut |rec| out.push(rec.time_us));
        assert_eq!(r.gaps, 1);
        r.release(100, 100, &mut |rec| out.push(rec.time_us));
        assert_eq!(out, vec![10, 20]);
    }
}
