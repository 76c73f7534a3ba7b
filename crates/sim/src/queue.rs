//! The event queue: a binary heap ordered by (time, insertion sequence).
//!
//! The sequence number breaks ties in insertion order, which is what makes
//! two events at the same microsecond deterministic.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<T> {
    time_us: u64,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.time_us == other.time_us && self.seq == other.seq
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time_us
            .cmp(&self.time_us)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

pub struct EventQueue<T> {
    heap: BinaryHeap<Entry<T>>,
    next_seq: u64,
    capacity_limit: usize,
}

impl<T> EventQueue<T> {
    /// `capacity_limit` bounds the queue: exceeding it is a bug (a node
    /// flooding the network), and we would rather stop than swap.
    pub fn new(capacity_limit: usize) -> EventQueue<T> {
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity_limit.min(1 << 16)),
            next_seq: 0,
            capacity_limit,
        }
    }

    pub fn push(&mut self, time_us: u64, item: T) {
        assert!(
            self.heap.len() < self.capacity_limit,
            "event queue over its limit of {}",
            self.capacity_limit
        );
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { time_us, seq, item });
    }

    pub fn pop(&mut self) -> Option<(u64, T)> {
        self.heap.pop().map(|e| (e.time_us, e.item))
    }

    pub fn peek_time_us(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.time_us)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new(100);
        q.push(5, "c");
        q.push(1, "a");
        q.push(5, "d");
        q.push(1, "b");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(1, "a"), (1, "b"), (5, "c"), (5, "d")]);
    }

    #[test]
    #[should_panic(expected = "over its limit")]
    fn refuses_to_grow_past_its_limit() {
        let mut q = EventQueue::new(2);
        q.push(1, ());
        q.push(1, ());
        q.push(1, ());
    }
}
