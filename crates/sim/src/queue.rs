//! The event queue: a 4-ary heap ordered by (time, insertion sequence).
//!
//! The sequence number breaks ties in insertion order, which is what makes
//! two events at the same microsecond deterministic.
//!
//! Layout, for speed: the heap holds only 16-byte keys (time, sequence, slab
//! slot); the events themselves (up to ~180 bytes each) sit still in a slab
//! and are moved exactly twice, in and out. A heap of whole events moves every
//! event `log2(len)` times per pop, which was the single largest cost of a run
//! (a `memcpy` of ~1.3 KiB per event).
//!
//! Sequence numbers can be reserved ahead ([`EventQueue::reserve_seqs`]) and
//! used later ([`EventQueue::push_reserved`]): a workload of a million
//! arrivals then waits outside the queue and enters it one arrival at a time,
//! in exactly the order it would have had if all were pushed up front.

use std::hint::select_unpredictable;

/// Bits of a key's second word that name the slab slot (in the timer heap,
/// the node); the rest hold the sequence number. Sequence numbers are unique, so the slot bits below them
/// never decide an order.
const SLOT_BITS: u32 = 24;
/// Events queued at once, at most (16.7 million).
pub const MAX_QUEUED: usize = 1 << SLOT_BITS;
/// Sequence numbers available (a trillion events and reservations). The
/// one number past them is `NO_KEY`'s, so every real key orders before it.
const MAX_SEQ: u64 = (1 << (64 - SLOT_BITS)) - 1;

/// 16 bytes: four children fill one cache line.
#[derive(Clone, Copy)]
struct Key {
    time_us: u64,
    /// `seq << SLOT_BITS | slot`.
    seq_slot: u64,
}

/// No key: an unused `EventQueue::near` cell, and nothing for the heap from
/// `EventQueue::place_near`. Orders after every real key (its sequence
/// number is `MAX_SEQ`, which no key is given).
const NO_KEY: Key = Key {
    time_us: u64::MAX,
    seq_slot: u64::MAX,
};

/// A queue's first order ([`EventQueue::first_order`],
/// [`TimerQueue::first_order`]) when it is empty: `NO_KEY`'s, after every
/// real key's.
pub(crate) const EMPTY_ORDER: u128 = u128::MAX;

/// The time of a key's `order` (its high word).
#[inline(always)]
pub(crate) fn order_time_us(order: u128) -> u64 {
    (order >> 64) as u64
}

/// The slot (in the timer heap, the node) of a key's `order`.
#[inline(always)]
pub(crate) fn order_slot(order: u128) -> u32 {
    (order as u64 & (MAX_QUEUED as u64 - 1)) as u32
}

/// `order` is `EMPTY_ORDER`: its low word alone tells (a real key's
/// sequence bits are below `MAX_SEQ`), one compare.
#[inline(always)]
pub(crate) fn order_is_empty(order: u128) -> bool {
    order as u64 == NO_KEY.seq_slot
}

/// The sequence number of a key's `order` (`MAX_SEQ` for `EMPTY_ORDER`).
#[inline(always)]
pub(crate) fn order_seq(order: u128) -> u64 {
    order as u64 >> SLOT_BITS
}

impl Key {
    /// Not `NO_KEY` (a real key's sequence bits are below `MAX_SEQ`).
    #[inline(always)]
    fn is_some(&self) -> bool {
        self.seq_slot != NO_KEY.seq_slot
    }

    #[inline(always)]
    fn new(time_us: u64, seq: u64, slot: u32) -> Key {
        debug_assert!(seq < MAX_SEQ && (slot as usize) < MAX_QUEUED);
        Key {
            time_us,
            seq_slot: (seq << SLOT_BITS) | slot as u64,
        }
    }

    /// Time, then sequence: the queue's order as one integer compare.
    #[inline(always)]
    fn order(&self) -> u128 {
        ((self.time_us as u128) << 64) | self.seq_slot as u128
    }

    /// The key whose [`Key::order`] is `order`.
    #[inline(always)]
    fn from_order(order: u128) -> Key {
        Key {
            time_us: (order >> 64) as u64,
            seq_slot: order as u64,
        }
    }

    #[inline(always)]
    fn slot(&self) -> usize {
        (self.seq_slot & (MAX_QUEUED as u64 - 1)) as usize
    }
}

/// Children per heap node, in both heaps. Four halves the depth of a binary
/// heap, and a node's children (4 x 16 bytes) fill one cache line: at 10,000
/// workers the heap holds ~100,000 keys, and each level down is a likely
/// cache miss.
const ARITY: usize = 4;

/// Keys `EventQueue::near` holds at most (a power of two: its indices are
/// masked, with no bounds check).
const NEAR: usize = 4;

/// The smallest of the children that start at `first` (which must exist):
/// `(index, order)`. Shared by both heaps' sift-down.
#[inline(always)]
fn min_child(heap: &[Key], first: usize) -> (usize, u128) {
    let n = heap.len();
    debug_assert!(first < n);
    if first + ARITY <= n {
        // All four children: a branch-light tournament, one bounds check
        // for the lot.
        let kids: &[Key; ARITY] = heap[first..first + ARITY]
            .try_into()
            .expect("four children");
        let (o0, o1) = (kids[0].order(), kids[1].order());
        let (o2, o3) = (kids[2].order(), kids[3].order());
        // Which child is smallest is a coin toss to the branch predictor:
        // selects (conditional moves), not branches. The last one was a
        // branch, mispredicted about every other level of every sift-down.
        let (i01, o01) = select_unpredictable(o1 < o0, (1, o1), (0, o0));
        let (i23, o23) = select_unpredictable(o3 < o2, (3, o3), (2, o2));
        let (i, o) = select_unpredictable(o23 < o01, (i23, o23), (i01, o01));
        (first + i, o)
    } else {
        // The last node's partial family: fewer than `ARITY` children.
        let mut child = first;
        let mut child_order = heap[first].order();
        for (c, key) in heap.iter().enumerate().skip(first + 1) {
            let o = key.order();
            if o < child_order {
                child = c;
                child_order = o;
            }
        }
        (child, child_order)
    }
}

/// Sink `entry` from the hole at `i` to its place: the smallest child moves
/// up into the hole (`moved(key, to)` hears of each move) until `entry`
/// orders before all children, and `entry` is written once, where it lands.
/// Returns that index. Both heaps' sift-down. `BY_INDEX` picks a full
/// family's smallest child by index ([`min_child_by_index`]) instead of by
/// the tournament that carries each child's order along ([`min_child`]):
/// for the event heap's pop in the run loop and the timer re-arm, whose own
/// registers beside the tournament's eight orders spilled to the stack at
/// every level (the pop by index: 162.34 M to 160.73 M instructions).
#[inline(always)]
fn sink<const BY_INDEX: bool>(
    heap: &mut [Key],
    mut i: usize,
    entry: Key,
    mut moved: impl FnMut(Key, usize),
) -> usize {
    let n = heap.len();
    let order = entry.order();
    // Bounded by the depth, log4(len).
    loop {
        let first = ARITY * i + 1;
        if first >= n {
            break;
        }
        let (child, child_order) = if BY_INDEX {
            min_child_by_index(heap, first)
        } else {
            min_child(heap, first)
        };
        if order <= child_order {
            break;
        }
        // The child's key is its order's two words: rebuilt from the
        // registers, not read back from the heap (a load and a bounds
        // check a level).
        let key = Key::from_order(child_order);
        debug_assert_eq!(key.order(), heap[child].order());
        heap[i] = key;
        moved(key, i);
        i = child;
    }
    heap[i] = entry;
    i
}

/// The slab slot of a key just popped ([`EventQueue::pop_slot`]), whose
/// event is still in the slab. Neither `Copy` nor `Clone`: it is taken
/// ([`EventQueue::take`]) or requeued ([`EventQueue::requeue`]) exactly
/// once.
#[must_use = "the popped event stays in the slab until taken"]
pub(crate) struct PoppedSlot(u32);

pub struct EventQueue<T> {
    /// The earliest keys, held out of the heap, latest first: the first
    /// `near_len` order before every key in `heap` and are popped from the
    /// end. A key joins them when it is pushed before the heap's root.
    /// Nearly every event a step sends is due before almost everything
    /// queued (friday-rush: half of the pushes order first of all, a
    /// quarter second, a tenth third; a reply comes back sooner than the
    /// next timer or the next arrival): from here its pop is a read, not a
    /// sift-up towards the root and a sift-down of the heap's last key from
    /// it. Four keys serve a quarter more pops than one did.
    near: [Key; NEAR],
    /// Keys in `near`.
    near_len: usize,
    /// A 4-ary min-heap of keys on `order`.
    heap: Vec<Key>,
    /// Events by slot; `None` for a free slot.
    slab: Vec<Option<T>>,
    /// Free slots, reused last-in first-out (the warmest in cache).
    free: Vec<u32>,
    /// Keys queued, `near`'s and the heap's: kept, not summed, since
    /// the run loop reads it every event and `insert` asserts on it.
    len: usize,
    next_seq: u64,
    capacity_limit: usize,
}

impl<T> EventQueue<T> {
    /// `capacity_limit` bounds the queue: exceeding it is a bug (a node
    /// flooding the network), and we would rather stop than swap.
    pub fn new(capacity_limit: usize) -> EventQueue<T> {
        assert!(capacity_limit > 0);
        assert!(
            capacity_limit <= MAX_QUEUED,
            "{capacity_limit} events is over the queue's limit of {MAX_QUEUED}"
        );
        let initial = capacity_limit.min(1 << 12);
        EventQueue {
            near: [NO_KEY; NEAR],
            near_len: 0,
            heap: Vec::with_capacity(initial),
            slab: Vec::with_capacity(initial),
            free: Vec::with_capacity(initial),
            len: 0,
            next_seq: 0,
            capacity_limit,
        }
    }

    #[inline]
    pub fn push(&mut self, time_us: u64, item: T) {
        self.push_with(time_us, || item);
    }

    /// [`EventQueue::push`] the event `make` builds, built only once its
    /// slab cell is known, so that it is written there directly. (An event
    /// passed in is built on the caller's stack first, since an argument is
    /// evaluated before the call, and copied again into the slab.)
    #[inline(always)]
    pub fn push_with(&mut self, time_us: u64, make: impl FnOnce() -> T) {
        self.push_in_place(time_us, |cell| *cell = Some(make()));
    }

    /// [`EventQueue::push_with`] for a `fill` that writes the event into its
    /// empty slab cell itself (given as an argument, so that a caller's
    /// `#[inline(always)]` function can take the cell as a `&mut` parameter
    /// of its own, known apart from its other places).
    #[inline(always)]
    pub(crate) fn push_in_place(&mut self, time_us: u64, fill: impl FnOnce(&mut Option<T>)) {
        let seq = self.next_seq();
        let cell = self.insert(time_us, seq);
        debug_assert!(cell.is_none(), "free slot in use");
        fill(&mut *cell);
        debug_assert!(cell.is_some(), "a pushed event fills its cell");
    }

    /// Reserve `count` sequence numbers for events pushed later with
    /// [`EventQueue::push_reserved`]; returns the first.
    pub fn reserve_seqs(&mut self, count: u64) -> u64 {
        let first = self.next_seq;
        self.next_seq = first.checked_add(count).expect("sequence overflow");
        assert!(self.next_seq <= MAX_SEQ, "sequence numbers exhausted");
        first
    }

    /// Push with a sequence number reserved earlier: the event orders as if
    /// it had been pushed when the number was reserved.
    pub fn push_reserved(&mut self, time_us: u64, seq: u64, item: T) {
        assert!(seq < self.next_seq, "sequence {seq} was never reserved");
        let cell = self.insert(time_us, seq);
        debug_assert!(cell.is_none(), "free slot in use");
        *cell = Some(item);
    }

    /// Queue the event the caller wrote over the popped one in `slot` (in
    /// [`EventQueue::popped_cell`]) at `time_us`, in that cell: what a
    /// `take` and a push would do (the free list, last-in first-out, hands
    /// the push the slot the take freed), with no trip through the free
    /// list. `insert`'s paths, but for the slot.
    #[inline(never)]
    pub(crate) fn requeue(&mut self, slot: PoppedSlot, time_us: u64) {
        let seq = self.next_seq();
        let PoppedSlot(slot) = slot;
        debug_assert!(
            self.slab[slot as usize].is_some(),
            "a requeued slot holds its new event"
        );
        let key = Key::new(time_us, seq, slot);
        if self.len() >= self.capacity_limit {
            // The assertion out of line as a tail call, as in `insert`: its
            // failing call here, one that never returns, kept a frame.
            return self.requeue_full(key);
        }
        // `insert`'s placement, written again: one always-inlined helper
        // for both returned the cell here too and counted +0.22 M
        // instructions (friday-rush seeds 1..5), a third of what requeue saves.
        if self.near_len != 0 {
            self.insert_near(key);
            return;
        }
        if self
            .heap
            .first()
            .is_some_and(|root| root.order() < key.order())
        {
            self.insert_heap(key);
            return;
        }
        self.near[0] = key;
        self.near_len = 1;
        self.len += 1;
    }

    /// [`EventQueue::requeue`] with the queue full: its assertion fails.
    /// (Placing the key after it, which no run reaches, keeps this a call
    /// that returns, and so `requeue`'s a tail call.)
    #[cold]
    #[inline(never)]
    fn requeue_full(&mut self, key: Key) {
        if self.len() >= self.capacity_limit {
            self.over_limit();
        }
        self.insert_placed(key);
    }

    /// Queue a key for `(time_us, seq)` and return its slab cell, empty, for
    /// the caller to fill. Its own path only for the commonest push (a free
    /// slot, nothing in `near`, due before the heap's root: two pushes in
    /// five), which then makes no call and saves no registers; the rest go
    /// on as tail calls.
    #[inline(never)]
    fn insert(&mut self, time_us: u64, seq: u64) -> &mut Option<T> {
        // The queue full, or no free slot: the assertion and the new slot
        // out of line, as a tail call (the assertion's failing call here, a
        // call that never returns, still kept a stack frame to align).
        if self.len() >= self.capacity_limit || self.free.is_empty() {
            return self.insert_new_slot(time_us, seq);
        }
        let Some(slot) = self.free.pop() else {
            unreachable!("a free slot was found")
        };
        let key = Key::new(time_us, seq, slot);
        if self.near_len != 0 {
            return self.insert_near(key);
        }
        if self
            .heap
            .first()
            .is_some_and(|root| root.order() < key.order())
        {
            return self.insert_heap(key);
        }
        self.near[0] = key;
        self.near_len = 1;
        self.counted_cell(slot as usize)
    }

    /// [`EventQueue::insert`] with the queue full (its assertion fails) or
    /// no free slot: a new one.
    #[cold]
    #[inline(never)]
    fn insert_new_slot(&mut self, time_us: u64, seq: u64) -> &mut Option<T> {
        if self.len() >= self.capacity_limit {
            // The assertion's failure out of line: its message's arguments
            // gave every insert a stack frame (two instructions a push).
            self.over_limit();
        }
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => self.new_slot(),
        };
        self.insert_placed(Key::new(time_us, seq, slot))
    }

    /// [`EventQueue::insert`] past its slot, `key`'s: the key placed (see
    /// [`EventQueue::place`]), its cell returned.
    #[inline(never)]
    fn insert_placed(&mut self, key: Key) -> &mut Option<T> {
        self.place(key);
        self.counted_cell(key.slot())
    }

    /// [`EventQueue::insert_placed`] with keys in `near`: `place_near`
    /// inlined, so that the push makes no call past `insert`'s tail call.
    #[inline(never)]
    fn insert_near(&mut self, key: Key) -> &mut Option<T> {
        let n = self.near_len;
        if self.near_end_takes(key, n) {
            // Before everything queued: the end of `near`, with no frame
            // (the shift loop's registers are saved in `insert_near_shift`).
            self.near[n & (NEAR - 1)] = key;
            self.near_len = n + 1;
            return self.counted_cell(key.slot());
        }
        self.insert_near_shift(key, n)
    }

    /// [`EventQueue::insert_near`] for a key that does not go at the end of
    /// `near`: the rest of `place_near`, then the heap.
    #[inline(never)]
    fn insert_near_shift(&mut self, key: Key, n: usize) -> &mut Option<T> {
        let out = self.place_near_inside(key, n);
        if out.is_some() {
            self.sift_up(out);
        }
        self.counted_cell(key.slot())
    }

    /// [`EventQueue::insert_placed`] for a key that `insert` found goes to
    /// the heap (none in `near`, after the heap's root): not compared again.
    #[inline(never)]
    fn insert_heap(&mut self, key: Key) -> &mut Option<T> {
        if self.heap.len() == self.heap.capacity() {
            // Room first, out of line and as a tail call: the growth call
            // inside `sift_up` made this function keep a frame.
            return self.insert_heap_grow(key);
        }
        self.sift_up(key);
        self.counted_cell(key.slot())
    }

    /// Every insert path's end, its key placed: the key counted and its
    /// slab cell, empty, returned for the caller to fill.
    #[inline(always)]
    fn counted_cell(&mut self, slot: usize) -> &mut Option<T> {
        self.len += 1;
        // Empty but for `requeue`'s: the pushes assert it.
        &mut self.slab[slot]
    }

    /// [`EventQueue::insert`]'s assertion failed: the queue is full.
    #[cold]
    #[inline(never)]
    fn over_limit(&self) -> ! {
        panic!("event queue over its limit of {}", self.capacity_limit);
    }

    /// A new slab slot, when none is free: only while the queue grows to
    /// its deepest. Out of line, so that `insert`'s common path keeps fewer
    /// registers (the 184-byte `None` written here wanted a stack frame).
    #[cold]
    #[inline(never)]
    fn new_slot(&mut self) -> u32 {
        // Bounded by `capacity_limit` (asserted in `insert`, and slots are
        // only created when none is free).
        let slot = self.slab.len() as u32;
        self.slab.push(None);
        slot
    }

    /// Queue `key`: in `near` if it orders before the heap's root, else in
    /// the heap. One `sift_up` site, inlined: with two, the sift was a call
    /// from each.
    #[inline(always)]
    fn place(&mut self, key: Key) {
        let n = self.near_len;
        let to_heap = if n == 0 {
            // Most pushes (the first a step sends, after its event was
            // popped from `near`): one compare with the heap's root.
            if self
                .heap
                .first()
                .is_some_and(|root| root.order() < key.order())
            {
                key
            } else {
                self.near[0] = key;
                self.near_len = 1;
                return;
            }
        } else {
            let out = self.place_near(key, n);
            if !out.is_some() {
                return;
            }
            out
        };
        self.sift_up(to_heap);
    }

    /// [`EventQueue::place`] with `n > 0` keys in `near`: `key` joins them,
    /// in order, if it orders before the heap's root. Returns the key for the
    /// heap (`key`, or the latest of a full `near` that `key` displaced) or
    /// `NO_KEY`. Inlined into [`EventQueue::insert_near`] (a fifth of the
    /// pushes, reached from `insert` by a tail call): inlined into `insert`,
    /// its loop's registers were saved and restored on every push; as a
    /// call of its own, both it and its caller saved them.
    #[inline(always)]
    fn place_near(&mut self, key: Key, n: usize) -> Key {
        if self.near_end_takes(key, n) {
            // Before everything queued: the end of `near`.
            self.near[n & (NEAR - 1)] = key;
            self.near_len = n + 1;
            return NO_KEY;
        }
        self.place_near_inside(key, n)
    }

    /// Whether `key` goes at the end of `near` (`n > 0` keys there): room
    /// left, and before its earliest.
    #[inline(always)]
    fn near_end_takes(&self, key: Key, n: usize) -> bool {
        debug_assert!(n > 0 && n <= NEAR);
        n < NEAR && key.order() < self.near[(n - 1) & (NEAR - 1)].order()
    }

    /// [`EventQueue::place_near`] for a key that does not go at the end of
    /// `near`.
    #[inline(always)]
    fn place_near_inside(&mut self, key: Key, mut n: usize) -> Key {
        debug_assert!(n > 0 && n <= NEAR);
        let order = key.order();
        if self.heap.first().is_some_and(|root| root.order() < order) {
            return key;
        }
        let mut out = NO_KEY;
        if n == NEAR {
            if self.near[0].order() < order {
                // After all of a full `near`, before the heap's root: the
                // heap's new root.
                return key;
            }
            // The latest of `near` makes room, to the heap's root.
            out = self.near[0];
            self.near.copy_within(1.., 0);
            n -= 1;
        }
        // The earlier keys move one place towards the end.
        let live = &mut self.near[..=n];
        let mut i = n;
        while i > 0 && live[i - 1].order() < order {
            live[i] = live[i - 1];
            i -= 1;
        }
        live[i] = key;
        self.near_len = n + 1;
        out
    }

    /// Add `key` at the bottom and move it up to its place.
    #[inline(always)]
    fn sift_up(&mut self, key: Key) {
        if self.heap.len() == self.heap.capacity() {
            // Out of line and as a tail call: with no call on the common
            // path, this function saves no registers.
            return self.grow_and_sift_up(key);
        }
        let order = key.order();
        self.heap.push(key);
        // The hole is the last key of `below`, the heap cut short after it:
        // its index is the slice's own bound, and a parent move cuts the
        // slice after the parent, so each level has one bounds check (the
        // parent's), not one for the parent and one for the hole.
        let mut below: &mut [Key] = &mut self.heap;
        // Bounded by the depth, log4(len).
        loop {
            let i = below.len() - 1;
            if i == 0 {
                break;
            }
            let parent = (i - 1) / ARITY;
            let p = below[parent];
            if p.order() <= order {
                break;
            }
            below[i] = p;
            below = &mut below[..=parent];
        }
        let hole = below.len() - 1;
        below[hole] = key;
    }

    /// [`EventQueue::insert_heap`] when the heap is full: room first.
    #[cold]
    #[inline(never)]
    fn insert_heap_grow(&mut self, key: Key) -> &mut Option<T> {
        self.heap.reserve(1);
        self.insert_heap(key)
    }

    /// [`EventQueue::sift_up`] when the heap is full: room first.
    #[cold]
    #[inline(never)]
    fn grow_and_sift_up(&mut self, key: Key) {
        self.heap.reserve(1);
        self.sift_up(key);
    }

    /// Remove the smallest key, counted out of `len`.
    #[inline]
    fn pop_min(&mut self) -> Option<Key> {
        let key = self.pop_min_key()?;
        self.len -= 1;
        Some(key)
    }

    /// [`EventQueue::pop_min`]'s removal: the end of `near` if it holds a
    /// key, else the heap's root, and the last key sinks from the top to its
    /// place, the child picked by index (beside the run loop's registers,
    /// the tournament's eight orders spilled at every level).
    #[inline(always)]
    fn pop_min_key(&mut self) -> Option<Key> {
        let n = self.near_len;
        if n > 0 {
            let key = self.near[(n - 1) & (NEAR - 1)];
            debug_assert!(self.heap.first().is_none_or(|r| key.order() < r.order()));
            self.near_len = n - 1;
            return Some(key);
        }
        let last = self.heap.pop()?;
        if self.heap.is_empty() {
            return Some(last);
        }
        let min = self.heap[0];
        sink::<true>(&mut self.heap, 0, last, |_, _| {});
        Some(min)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(u64, T)> {
        let (time_us, slot) = self.pop_slot()?;
        Some((time_us, self.take(slot)))
    }

    /// Remove the earliest key: `(time_us, slot)`; its event stays in the
    /// slab until [`EventQueue::take`] consumes the slot.
    #[inline]
    pub(crate) fn pop_slot(&mut self) -> Option<(u64, PoppedSlot)> {
        let key = self.pop_min()?;
        Some((key.time_us, PoppedSlot(key.slot() as u32)))
    }

    /// The event in `slot` (from [`EventQueue::pop_slot`]), read where it
    /// lies in the slab, before [`EventQueue::take`] frees it.
    #[inline(always)]
    pub(crate) fn popped(&self, slot: &PoppedSlot) -> &T {
        self.slab[slot.0 as usize]
            .as_ref()
            .expect("a queued key names a full slot")
    }

    /// The cell of `slot` (from [`EventQueue::pop_slot`]), its event still
    /// there, for the caller to write the next event over it and queue that
    /// with [`EventQueue::requeue`].
    #[inline(always)]
    pub(crate) fn popped_cell(&mut self, slot: &PoppedSlot) -> &mut Option<T> {
        &mut self.slab[slot.0 as usize]
    }

    /// Move the event out of `slot` (from [`EventQueue::pop_slot`]) and free
    /// the slot.
    #[inline]
    pub(crate) fn take(&mut self, slot: PoppedSlot) -> T {
        let PoppedSlot(slot) = slot;
        // The cell found (its bounds check) before the free-list push, whose
        // growth call would have the slab read again after it; the event
        // taken after the push: with nothing between the take and the
        // caller's match, the compiler reads the event's fields straight
        // from the slab instead of copying it to the stack.
        let cell = &mut self.slab[slot as usize];
        self.free.push(slot);
        cell.take().expect("a queued key names a full slot")
    }

    /// The earliest key: the end of `near` if it holds a key, else the
    /// heap's root.
    #[inline(always)]
    fn first(&self) -> Option<&Key> {
        let n = self.near_len;
        if n > 0 {
            Some(&self.near[(n - 1) & (NEAR - 1)])
        } else {
            self.heap.first()
        }
    }

    /// The next event's key as one integer (`Key::order`: time, then
    /// sequence, then slot bits that never decide), `EMPTY_ORDER` when
    /// nothing is queued: the run loop compares it with the timers' in one
    /// compare, with no `Option`s to unpack.
    #[inline(always)]
    pub(crate) fn first_order(&self) -> u128 {
        self.first().map_or(EMPTY_ORDER, Key::order)
    }

    #[inline]
    pub fn peek_time_us(&self) -> Option<u64> {
        self.first().map(|k| k.time_us)
    }

    /// The next event's `(time, sequence)`: its place in the run's order.
    #[inline]
    pub fn peek_order(&self) -> Option<(u64, u64)> {
        self.first().map(|k| (k.time_us, k.seq_slot >> SLOT_BITS))
    }

    /// A sequence number for something ordered with the events but kept
    /// elsewhere (a [`TimerQueue`] entry).
    ///
    /// One test: `seq < MAX_SEQ` is `reserve_seqs(1)`'s
    /// `next_seq <= MAX_SEQ` after the add, and with `next_seq` never past
    /// `MAX_SEQ` the add cannot overflow (its `checked_add` cost a second
    /// test per re-armed timer).
    #[inline(always)]
    pub fn next_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        assert!(seq < MAX_SEQ, "sequence numbers exhausted");
        self.next_seq = seq + 1;
        seq
    }

    #[inline]
    pub fn len(&self) -> usize {
        debug_assert_eq!(
            self.len,
            self.heap.len() + self.near_len,
            "the kept length counts `near` and the heap"
        );
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// No timer: a node's place in `TimerQueue::pos`.
const NOT_ARMED: u32 = u32::MAX;

/// At most one timer per node, ordered by `(time, sequence)` with the same
/// sequence numbers as the events, so timers and events interleave exactly
/// as if timers were events. Unlike an event, a timer moves: re-arming
/// updates its key in place (an indexed 4-ary heap). Nodes re-arm on most
/// steps; as events, every re-arm left a stale timer to pop and skip, a
/// fifth of all events.
///
/// The heap is laid out like the event queue's: 16-byte `Key`s whose slot
/// bits name the node, `ARITY` children per node, one integer compare.
pub struct TimerQueue {
    /// A 4-ary min-heap of keys on `order`; a key's slot is its node.
    heap: Vec<Key>,
    /// Each node's index in `heap`, or `NOT_ARMED`.
    pos: Vec<u32>,
}

impl TimerQueue {
    pub fn new() -> TimerQueue {
        TimerQueue {
            heap: Vec::new(),
            pos: Vec::new(),
        }
    }

    /// Make room for node `node` (nodes are numbered densely from 0).
    pub fn add_node(&mut self, node: u32) {
        assert_eq!(node as usize, self.pos.len(), "nodes are added in order");
        assert!(
            (node as usize) < MAX_QUEUED,
            "node {node} does not fit a timer key's {SLOT_BITS} slot bits"
        );
        self.pos.push(NOT_ARMED);
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    pub fn is_armed(&self, node: u32) -> bool {
        self.pos[node as usize] != NOT_ARMED
    }

    /// Arm `node`'s timer at `(time_us, seq)`, replacing any it had.
    /// Inlined (into the re-arm after a step, and a paused node's timer):
    /// as a call its saves and restores were ~16 instructions a re-arm.
    #[inline(always)]
    pub fn set(&mut self, node: u32, time_us: u64, seq: u64) {
        self.arm::<false>(node, time_us, seq);
    }

    /// [`TimerQueue::set`] for the re-arm after a step (most re-arms), its
    /// later move sunk with the child picked by index. `set` keeps the
    /// event queue's tournament for the rare paths inlined into the run
    /// loop (a paused node's timer): a change there moved the run loop's
    /// register allocation (+0.97 M, the event heap's pop among it).
    #[inline(always)]
    pub(crate) fn rearm(&mut self, node: u32, time_us: u64, seq: u64) {
        self.arm::<true>(node, time_us, seq);
    }

    /// `set` and `rearm`: the same moves, the later one sunk by
    /// [`sink`] with the child picked by index (`SINK_BY_INDEX`) or by the
    /// event queue's tournament.
    #[inline(always)]
    fn arm<const SINK_BY_INDEX: bool>(&mut self, node: u32, time_us: u64, seq: u64) {
        let key = Key::new(time_us, seq, node);
        let at = self.pos[node as usize];
        if at == NOT_ARMED {
            let i = self.heap.len();
            self.heap.push(key);
            self.pos[node as usize] = i as u32;
            self.sift_up(i);
        } else {
            let i = at as usize;
            debug_assert_eq!(self.heap[i].slot(), node as usize);
            if key.order() < self.heap[i].order() {
                self.heap[i] = key;
                self.sift_up(i);
            } else {
                // Later, as most re-arms are: the new key sinks from the
                // old one's place (with the key in hand instead of read
                // back from the heap).
                let pos = &mut self.pos;
                let j = sink::<SINK_BY_INDEX>(&mut self.heap, i, key, |moved, to| {
                    pos[moved.slot()] = to as u32
                });
                self.pos[node as usize] = j as u32;
            }
        }
        debug_assert_eq!(
            self.heap[self.pos[node as usize] as usize].slot(),
            node as usize
        );
    }

    /// Disarm `node`'s timer, if armed.
    pub fn remove(&mut self, node: u32) {
        let at = self.pos[node as usize];
        if at == NOT_ARMED {
            return;
        }
        self.take(at as usize);
    }

    /// The earliest timer's key as one integer (see
    /// [`EventQueue::first_order`]; its slot bits name the node),
    /// `EMPTY_ORDER` when none is armed.
    #[inline(always)]
    pub(crate) fn first_order(&self) -> u128 {
        self.heap.first().map_or(EMPTY_ORDER, Key::order)
    }

    /// The earliest timer: `(time_us, seq, node)`.
    #[inline]
    pub fn peek(&self) -> Option<(u64, u64, u32)> {
        self.heap
            .first()
            .map(|k| (k.time_us, k.seq_slot >> SLOT_BITS, k.slot() as u32))
    }

    /// Remove the earliest timer; returns `(time_us, node)`.
    pub fn pop(&mut self) -> Option<(u64, u32)> {
        let key = *self.heap.first()?;
        self.take(0);
        Some((key.time_us, key.slot() as u32))
    }

    fn take(&mut self, i: usize) {
        let node = self.heap[i].slot();
        let last = self.heap.pop().expect("an armed timer is in the heap");
        self.pos[node] = NOT_ARMED;
        if i < self.heap.len() {
            self.heap[i] = last;
            self.pos[last.slot()] = i as u32;
            // The moved entry may belong above or below `i` (at the root,
            // only below).
            if i > 0 {
                self.sift_up(i);
            }
            let j = self.pos[last.slot()] as usize;
            self.sift_down(j);
        }
    }

    /// Move the entry at `i` up to its place: parents move down into the
    /// hole, the entry is written once.
    fn sift_up(&mut self, mut i: usize) {
        let entry = self.heap[i];
        let order = entry.order();
        // Bounded by the depth, log4(len).
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let p = self.heap[parent];
            if p.order() <= order {
                break;
            }
            self.heap[i] = p;
            self.pos[p.slot()] = i as u32;
            i = parent;
        }
        self.heap[i] = entry;
        self.pos[entry.slot()] = i as u32;
    }

    /// Move the entry at `i` down to its place: the smallest child moves up
    /// into the hole, the entry is written once.
    fn sift_down(&mut self, i: usize) {
        let entry = self.heap[i];
        let pos = &mut self.pos;
        let j = sink::<false>(&mut self.heap, i, entry, |key, to| {
            pos[key.slot()] = to as u32
        });
        self.pos[entry.slot()] = j as u32;
    }
}

/// [`min_child`] for the event heap's pop and the timer re-arm's
/// sift-down: a full family's smallest child picked by index
/// ([`min_of_four`]), its order read once it is known.
#[inline(always)]
fn min_child_by_index(heap: &[Key], first: usize) -> (usize, u128) {
    match heap.get(first..first + ARITY) {
        Some(kids) => {
            let kids: &[Key; ARITY] = kids.try_into().expect("four children");
            let c = min_of_four(kids);
            (first + c, kids[c].order())
        }
        None => min_child(heap, first),
    }
}

/// The index of the smallest of four children: two pairs, then their
/// winners, by selects (which child wins is a coin toss to the branch
/// predictor).
#[inline(always)]
fn min_of_four(kids: &[Key; ARITY]) -> usize {
    let a = select_unpredictable(kids[1].order() < kids[0].order(), 1, 0);
    let b = select_unpredictable(kids[3].order() < kids[2].order(), 3, 2);
    select_unpredictable(kids[b].order() < kids[a].order(), b, a)
}

impl Default for TimerQueue {
    fn default() -> Self {
        TimerQueue::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_order_agrees_with_peeks() {
        let mut q = EventQueue::new(100);
        let mut t = TimerQueue::new();
        t.add_node(0);
        assert!(order_is_empty(q.first_order()) && order_is_empty(t.first_order()));
        assert_eq!(order_seq(q.first_order()), MAX_SEQ);
        for time_us in [7, 3, 3, 9] {
            q.push(time_us, ());
            let (time_us, seq) = q.peek_order().expect("queued");
            let first = q.first_order();
            assert!(!order_is_empty(first));
            assert_eq!((order_time_us(first), order_seq(first)), (time_us, seq));
        }
        let seq = q.next_seq();
        t.set(0, 4, seq);
        let first = t.first_order();
        assert_eq!(
            (order_time_us(first), order_seq(first), order_slot(first)),
            t.peek().expect("armed")
        );
        // The events at 3 order before the timer at 4, in one compare.
        assert!(q.first_order() < first);
    }

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
    fn reserved_sequences_order_as_if_pushed_when_reserved() {
        let mut q = EventQueue::new(100);
        q.push(5, "a");
        let first = q.reserve_seqs(2);
        q.push(5, "d");
        q.push_reserved(5, first + 1, "c");
        q.push_reserved(5, first, "b");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, x)| x).collect();
        assert_eq!(order, vec!["a", "b", "c", "d"]);
    }

    /// `requeue` queues the event written over a popped one where a `take`
    /// and then a push would (the same slot, the same free list, the same
    /// order), at the front, among `near`'s keys, past them into the heap,
    /// and with `near` empty.
    #[test]
    fn requeue_is_a_take_then_a_push() {
        let mut pushed = EventQueue::new(100);
        let mut requeued = EventQueue::new(100);
        for q in [&mut pushed, &mut requeued] {
            for (i, time_us) in [1, 10, 20, 30, 40, 50, 60].into_iter().enumerate() {
                q.push(time_us, i);
            }
        }
        let later = [0, 25, 70, 2, 45, 80, 90, 100, 110, 120, 130, 140];
        for (i, later_us) in later.into_iter().enumerate() {
            let x = 100 + i;
            let (popped_us, slot) = pushed.pop_slot().expect("queued");
            let taken = pushed.take(slot);
            assert!(taken != x, "the popped event taken");
            pushed.push(popped_us.max(later_us), x);
            let (popped_us, slot) = requeued.pop_slot().expect("queued");
            let old = requeued.popped_cell(&slot).replace(x);
            assert!(old.is_some_and(|old| old != x), "the popped event replaced");
            requeued.requeue(slot, popped_us.max(later_us));
            assert_eq!(
                (requeued.near_len, requeued.heap.len(), requeued.len()),
                (pushed.near_len, pushed.heap.len(), pushed.len())
            );
            assert_eq!(
                (&requeued.slab, &requeued.free),
                (&pushed.slab, &pushed.free)
            );
        }
        let drain = |q: &mut EventQueue<usize>| std::iter::from_fn(|| q.pop()).collect::<Vec<_>>();
        assert_eq!(drain(&mut requeued), drain(&mut pushed));
    }

    /// `near`: filled while the heap is empty, a push after all of a full
    /// `near` goes to the heap, one before displaces `near`'s latest, one
    /// tying the root in time goes after it, one between `near`'s keys
    /// joins them in order, and an empty `near` takes a push before the
    /// heap's root.
    #[test]
    fn near_holds_only_the_earliest() {
        let mut q = EventQueue::new(100);
        let held = |q: &EventQueue<&str>| (q.near_len, q.heap.len());
        q.push(10, "c");
        q.push(20, "e");
        q.push(30, "g");
        q.push(40, "h");
        assert_eq!(held(&q), (NEAR, 0));
        q.push(50, "k"); // after a full `near`: the heap
        assert_eq!(held(&q), (NEAR, 1));
        q.push(5, "b"); // before: "h" (40) to the heap
        assert_eq!(held(&q), (NEAR, 2));
        q.push(40, "i"); // ties the root in time, later in sequence: the heap
        assert_eq!(held(&q), (NEAR, 3));
        assert_eq!(q.pop(), Some((5, "b")));
        q.push(25, "f"); // between `near`'s keys
        assert_eq!(held(&q), (NEAR, 3));
        assert_eq!(q.pop(), Some((10, "c")));
        q.push(15, "d"); // between again
        assert_eq!(held(&q), (NEAR, 3));
        for expected in [(15, "d"), (20, "e"), (25, "f"), (30, "g")] {
            assert_eq!(q.pop(), Some(expected));
        }
        assert_eq!(held(&q), (0, 3));
        q.push(1, "a"); // before the root: `near`
        q.push(45, "j"); // after the root: the heap
        assert_eq!(held(&q), (1, 4));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![(1, "a"), (40, "h"), (40, "i"), (45, "j"), (50, "k")]
        );
        assert!(q.is_empty() && held(&q) == (0, 0));
    }

    #[test]
    fn slots_are_reused() {
        let mut q = EventQueue::new(4);
        for round in 0..100u64 {
            q.push(round, round);
            q.push(round, round + 1);
            assert_eq!(q.pop(), Some((round, round)));
            assert_eq!(q.pop(), Some((round, round + 1)));
        }
        assert!(q.slab.len() <= 2);
    }

    /// Against a reference (a sorted vector), under the simulation's pattern:
    /// pop one, push a few at or after it, sometimes at the very same time.
    #[test]
    fn matches_a_reference_under_random_monotone_pushes() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut q = EventQueue::new(1 << 20);
        let mut reference: Vec<(u64, u64)> = Vec::new();
        let mut seq = 0u64;
        for _ in 0..64 {
            let t = next() % 1_000;
            q.push(t, seq);
            reference.push((t, seq));
            seq += 1;
        }
        for _ in 0..200_000 {
            reference.sort_unstable();
            let expected = (!reference.is_empty()).then(|| reference.remove(0));
            assert_eq!(q.peek_time_us(), expected.map(|e| e.0));
            let got = q.pop();
            assert_eq!(got, expected);
            let Some((now, _)) = got else { break };
            for _ in 0..(next() % 3) {
                let delay = match next() % 4 {
                    0 => 0,
                    1 => next() % 16,
                    2 => next() % 10_000,
                    _ => next() % 5_000_000,
                };
                q.push(now + delay, seq);
                reference.push((now + delay, seq));
                seq += 1;
            }
            assert_eq!(q.len(), reference.len());
        }
    }

    #[test]
    #[should_panic(expected = "over its limit")]
    fn refuses_to_grow_past_its_limit() {
        let mut q = EventQueue::new(2);
        q.push(1, ());
        q.push(1, ());
        q.push(1, ());
    }

    #[test]
    #[should_panic(expected = "never reserved")]
    fn refuses_an_unreserved_sequence() {
        let mut q = EventQueue::new(2);
        q.push_reserved(1, 0, ());
    }

    #[test]
    fn timers_move_and_pop_in_order() {
        let mut t = TimerQueue::new();
        for node in 0..5 {
            t.add_node(node);
        }
        t.set(0, 50, 1);
        t.set(1, 10, 2);
        t.set(2, 30, 3);
        t.set(3, 30, 4);
        t.set(1, 60, 5); // moved later
        t.set(2, 5, 6); // moved earlier
        t.remove(3);
        t.remove(4); // never armed: nothing happens
        assert_eq!(t.len(), 3);
        assert!(!t.is_armed(3));
        assert_eq!(t.pop(), Some((5, 2)));
        assert_eq!(t.pop(), Some((50, 0)));
        assert_eq!(t.pop(), Some((60, 1)));
        assert_eq!(t.pop(), None);
    }

    #[test]
    fn timers_match_a_reference_under_random_moves() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let nodes = 50u32;
        let mut t = TimerQueue::new();
        let mut reference: Vec<Option<(u64, u64)>> = vec![None; nodes as usize];
        for node in 0..nodes {
            t.add_node(node);
        }
        let mut seq = 0;
        for _ in 0..20_000 {
            let node = rng.random_range(0..nodes);
            match rng.random_range(0..4) {
                0 => {
                    t.remove(node);
                    reference[node as usize] = None;
                }
                1 => {
                    let expected = reference
                        .iter()
                        .enumerate()
                        .filter_map(|(n, k)| k.map(|(time, s)| (time, s, n as u32)))
                        .min();
                    assert_eq!(t.peek(), expected);
                    if let Some((time, _, n)) = expected {
                        assert_eq!(t.pop(), Some((time, n)));
                        reference[n as usize] = None;
                    }
                }
                _ => {
                    seq += 1;
                    let time = rng.random_range(0..1_000);
                    // Both forms: the rare paths' and the re-arm's.
                    if rng.random_range(0..2) == 0 {
                        t.set(node, time, seq);
                    } else {
                        t.rearm(node, time, seq);
                    }
                    reference[node as usize] = Some((time, seq));
                }
            }
            assert_eq!(t.len(), reference.iter().flatten().count());
        }
    }
}
