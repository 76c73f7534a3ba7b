//! Puts the records of a live run's many threads in one order the store
//! could have answered them in, for the judge.
//!
//! Every store reply carries the revision it observed (a write's own, or
//! the last write a read or a refused write saw), and revisions are taken
//! one by one, under the store's write lock. So: writes go out in revision
//! order, and every other record once the writes it depends on are out. A
//! store reply depends on the writes it observed; a node's own record
//! (a step, an event, a call it made, a loss) on every write any reply it
//! had handled by then observed. A thread's records stay in the order it
//! sent them. Times are made non-decreasing as records go out: a record
//! held for an earlier write takes that write's time if it was later.

use leasehold_protocol::{DocKey, DocValue, LeaseEvent};
use leasehold_sim::{OwnedRecord, OwnedRecordKind, Record};
use std::collections::{BTreeMap, VecDeque};

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

/// Past this many records held back, the run's order is broken (a write
/// that never reports): a bug in the host.
const MAX_HELD: usize = 1 << 22;

pub struct Recorder {
    /// Every write up to this revision has gone out.
    out_rev: u64,
    writes: BTreeMap<u64, Entry>,
    held: VecDeque<Entry>,
    last_us: u64,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            out_rev: 0,
            writes: BTreeMap::new(),
            held: VecDeque::new(),
            last_us: 0,
        }
    }

    /// Take `entry`; hand every record that can now go out to `emit`, in
    /// order.
    pub fn push(
        &mut self,
        entry: Entry,
        emit: &mut impl FnMut(&Record<'_, DocKey, DocValue, LeaseEvent>),
    ) {
        match entry.order {
            Order::Write(rev) => {
                assert!(rev > self.out_rev, "revision {rev} written twice");
                let fresh = self.writes.insert(rev, entry).is_none();
                assert!(fresh, "revision {rev} written twice");
            }
            Order::After(rev) if rev <= self.out_rev && self.held.is_empty() => {
                self.emit(entry, emit);
                return;
            }
            Order::After(_) => self.held.push_back(entry),
        }
        self.drain(emit);
        assert!(
            self.held.len() + self.writes.len() <= MAX_HELD,
            "records held for revision {} that never came",
            self.out_rev + 1
        );
    }

    fn drain(&mut self, emit: &mut impl FnMut(&Record<'_, DocKey, DocValue, LeaseEvent>)) {
        // Bounded by the writes held: each round sends one out, or ends.
        loop {
            // Held records in arrival order, each once its writes are out
            // (one thread's are in its own order: their revisions grow), so
            // a reply that saw revision r goes out before write r + 1.
            if self.held.front().is_some() {
                let mut kept = VecDeque::with_capacity(self.held.len());
                while let Some(entry) = self.held.pop_front() {
                    match entry.order {
                        Order::After(rev) if rev <= self.out_rev => self.emit(entry, emit),
                        _ => kept.push_back(entry),
                    }
                }
                self.held = kept;
            }
            let Some(entry) = self.writes.remove(&(self.out_rev + 1)) else {
                return;
            };
            self.out_rev += 1;
            self.emit(entry, emit);
        }
    }

    fn emit(
        &mut self,
        entry: Entry,
        emit: &mut impl FnMut(&Record<'_, DocKey, DocValue, LeaseEvent>),
    ) {
        self.last_us = self.last_us.max(entry.time_us);
        let record = OwnedRecord {
            time_us: self.last_us,
            kind: entry.kind,
        };
        emit(&record.as_record());
    }

    /// The run is over: whatever is held goes out, writes by revision first
    /// where one never came (a commit whose outcome stayed unknown), then
    /// the rest in order. Returns how many revisions were missing.
    pub fn flush(
        &mut self,
        emit: &mut impl FnMut(&Record<'_, DocKey, DocValue, LeaseEvent>),
    ) -> u64 {
        let mut missing = 0;
        // Bounded by the writes held.
        while let Some((&rev, _)) = self.writes.first_key_value() {
            missing += rev - self.out_rev - 1;
            self.out_rev = rev - 1;
            self.drain(emit);
        }
        let held = std::mem::take(&mut self.held);
        for entry in held {
            self.emit(entry, emit);
        }
        missing
    }
}
