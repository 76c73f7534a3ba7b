//! The trace hash: a fingerprint of every record of a run.
//!
//! Records are fed through `std::hash::Hash` into xxh3. Small writes are
//! buffered so the per-record cost stays a few nanoseconds: a record is a
//! few writes (the hot kinds gather their fixed fields into one, giving the
//! same bytes a field-by-field `derive(Hash)` would), each an inlined store
//! into the buffer, and xxh3 sees whole 16 KiB blocks (each flush a few
//! hundred instructions of streaming overhead: 4 KiB cost +0.2 M a
//! friday-rush sweep of five seeds against 8 KiB, and 8 KiB +0.07 M against
//! 16 KiB; still well inside the L1 cache, written and read once). (The
//! digest does not depend on how the byte stream is cut into updates, so the
//! buffer size is free to change.) Lengths and
//! enum discriminants, the `usize`/`isize` writes, take one byte when small.

use crate::faults::{CrashPoint, Fault, MessageAction};
use crate::record::Actor;
use leasehold_interface::{Document, RequestId, StoreReply, StoreRequest};
use std::hash::{Hash, Hasher};
use twox_hash::XxHash3_64;

const BUFFER_BYTES: usize = 16384;
const _: () = assert!(BUFFER_BYTES <= u16::MAX as usize, "the length is a u16");
/// Marks a `usize`/`isize` too large for one byte; its eight bytes follow.
const SMALL_MARKER: u8 = 0xff;
/// Bytes a store record is given room for up front (the protocol's longest
/// store record but a scan's is under 160).
const RECORD_ROOM: usize = 256;

/// A record's fixed fields gathered at fixed offsets, for one
/// [`TraceHasher::put_gathered`]: one bounds check and one copy for the lot
/// instead of one per field.
pub(crate) use leasehold_interface::FixedBytes as Gather;

/// The integer writes of both hashers ([`TraceHasher`] and a record's
/// `Appender`), written once so their encodings cannot drift apart: each
/// type supplies `put` and `put_small`. Little-endian, and `usize` as if 64
/// bits wide, so the hash is the same on every platform. `usize` and
/// `isize` carry lengths and the derived enum discriminants, nearly always
/// small: one byte below 255, else a 255 marker and all eight. The code is
/// prefix-free, so distinct streams stay distinct, and a third of a
/// record's bytes (its discriminants) shrink eightfold.
macro_rules! integer_writes {
    () => {
        #[inline(always)]
        fn write_u8(&mut self, i: u8) {
            self.put([i]);
        }
        #[inline(always)]
        fn write_usize(&mut self, i: usize) {
            self.put_small(i as u64);
        }
        #[inline(always)]
        fn write_isize(&mut self, i: isize) {
            self.put_small(i as i64 as u64);
        }
        #[inline(always)]
        fn write_u64(&mut self, i: u64) {
            self.put(i.to_le_bytes());
        }
        #[inline(always)]
        fn write_u32(&mut self, i: u32) {
            self.put(i.to_le_bytes());
        }
        #[inline(always)]
        fn write_u16(&mut self, i: u16) {
            self.put(i.to_le_bytes());
        }
    };
}

pub struct TraceHasher {
    /// twox-hash's xxh3: it picks AVX2 for the bulk stripes at run time
    /// where the CPU has it (xxhash-rust picked SSE2 at compile time).
    inner: XxHash3_64,
    buf: [u8; BUFFER_BYTES],
    /// Bytes buffered. A `u16`: a length known to be small, so `len + N`
    /// cannot overflow and the buffer's bounds checks fold into the one
    /// test against its size.
    len: u16,
}

impl Default for TraceHasher {
    fn default() -> Self {
        TraceHasher {
            inner: XxHash3_64::with_seed(0),
            buf: [0; BUFFER_BYTES],
            len: 0,
        }
    }
}

impl TraceHasher {
    pub fn new() -> TraceHasher {
        TraceHasher::default()
    }

    #[cold]
    fn flush(&mut self) {
        self.inner.write(&self.buf[..usize::from(self.len)]);
        self.len = 0;
    }

    /// Append a fixed-width value: the hot path of every record.
    #[inline(always)]
    pub(crate) fn put<const N: usize>(&mut self, bytes: [u8; N]) {
        const { assert!(N <= BUFFER_BYTES) };
        let mut len = usize::from(self.len);
        if len + N > BUFFER_BYTES {
            self.flush();
            len = 0;
        }
        // `len` is a local known to fit on both paths, so the bounds check
        // folds away (`self.len` re-read after the call could not be).
        self.buf[len..len + N].copy_from_slice(&bytes);
        self.len = (len + N) as u16;
    }

    /// Bytes gathered by a [`Gather`], in one copy.
    #[inline(always)]
    pub(crate) fn put_gathered<const N: usize>(&mut self, g: &Gather<N>) {
        self.put(g.bytes());
    }

    /// A store record, the bytes `hash_record` documents: after the time, a
    /// tag no derived discriminant writes, the actor and request id; then
    /// the request as `derive(Hash)` feeds this hasher; then the reply and
    /// the document before by version, as `(tag, version)` tuples and an
    /// `Option<u64>` would be hashed. Written here, not through the
    /// request's derived `Hash` (a call, and a write per field), so each
    /// fixed run between the key and value writes is one put: the request's
    /// discriminant with the head, a scan's limit with its reply's header, a
    /// reply with the version before. Inlined into the store arrival: out
    /// of line, its call and frame cost 0.26 M instructions a friday-rush
    /// sweep of five seeds more (once the observer's store took its record
    /// by parts; before that, inlining it grew the simulator's dispatch and
    /// saved only 0.09 M). The shape of the dispatch around it decides this:
    /// measure again when that changes.
    #[inline(always)]
    pub(crate) fn put_store_record<K: Hash, V: Hash>(
        &mut self,
        time_us: u64,
        actor: Actor,
        request: RequestId,
        op: &StoreRequest<K, V>,
        reply: &StoreReply<K, V>,
        before: Option<&Document<K, V>>,
    ) {
        let mut w = Appender {
            len: usize::from(self.len),
            hasher: self,
        };
        w.store_record(time_us, actor, request, op, reply, before);
        w.hasher.len = w.len as u16;
    }

    /// A fault record: the bytes `derive(Hash)` on `Record` feeds this
    /// hasher (the time, `RecordKind::Fault`'s discriminant, the fault's,
    /// then its fields in order, a nested enum as its one-byte discriminant
    /// and its fields), gathered per variant into one put. Through the
    /// derive it was a put per field, ~77 instructions a record. Out of
    /// line: a few records in a thousand. A test checks every variant
    /// against the derive.
    #[inline(never)]
    pub(crate) fn put_fault_record(&mut self, t: u64, fault: &Fault) {
        /// `RecordKind::Fault`'s discriminant.
        const FAULT: u8 = 5;
        #[inline(always)]
        fn head<const N: usize>(t: u64, discriminant: u8) -> Gather<N> {
            let mut g = Gather::new();
            g.u64(t).u8(FAULT).u8(discriminant);
            g
        }
        match *fault {
            Fault::Crash {
                node,
                node_step,
                point: CrashPoint::BeforeInput,
                restart_after_us,
            } => self.put_gathered(
                head::<31>(t, 0)
                    .u32(node.0)
                    .u64(node_step)
                    .u8(0)
                    .u64(restart_after_us),
            ),
            Fault::Crash {
                node,
                node_step,
                point: CrashPoint::BetweenOutputs { emitted },
                restart_after_us,
            } => self.put_gathered(
                head::<35>(t, 0)
                    .u32(node.0)
                    .u64(node_step)
                    .u8(1)
                    .u32(emitted)
                    .u64(restart_after_us),
            ),
            Fault::CrashAt {
                at_us,
                node,
                restart_after_us,
            } => self.put_gathered(
                head::<30>(t, 1)
                    .u64(at_us)
                    .u32(node.0)
                    .u64(restart_after_us),
            ),
            Fault::Restart { node, incarnation } => {
                self.put_gathered(head::<18>(t, 2).u32(node.0).u32(incarnation))
            }
            Fault::Pause {
                node,
                node_step,
                after_outputs,
                duration_us,
            } => self.put_gathered(
                head::<34>(t, 3)
                    .u32(node.0)
                    .u64(node_step)
                    .u32(after_outputs)
                    .u64(duration_us),
            ),
            Fault::PauseAt {
                at_us,
                node,
                duration_us,
            } => self.put_gathered(head::<30>(t, 4).u64(at_us).u32(node.0).u64(duration_us)),
            Fault::Resume { node } => self.put_gathered(head::<14>(t, 5).u32(node.0)),
            Fault::ClockJump {
                node,
                node_step,
                delta_us,
            } => self.put_gathered(
                head::<30>(t, 6)
                    .u32(node.0)
                    .u64(node_step)
                    .u64(delta_us as u64),
            ),
            Fault::Message {
                node,
                msg,
                leg,
                action,
            } => {
                // The action's discriminant, then its delay if it has one.
                let (discriminant, extra_us) = match action {
                    MessageAction::Drop => (0, None),
                    MessageAction::Duplicate { extra_us } => (1, Some(extra_us)),
                    MessageAction::Delay { extra_us } => (2, Some(extra_us)),
                    MessageAction::Fail => (3, None),
                    MessageAction::Hang => (4, None),
                };
                match extra_us {
                    None => self.put_gathered(
                        head::<24>(t, 7)
                            .u32(node.0)
                            .u64(msg)
                            .u8(leg as u8)
                            .u8(discriminant),
                    ),
                    Some(extra_us) => self.put_gathered(
                        head::<32>(t, 7)
                            .u32(node.0)
                            .u64(msg)
                            .u8(leg as u8)
                            .u8(discriminant)
                            .u64(extra_us),
                    ),
                }
            }
            Fault::Partition {
                at_us,
                node,
                link,
                direction,
                duration_us,
            } => self.put_gathered(
                head::<32>(t, 8)
                    .u64(at_us)
                    .u32(node.0)
                    .u8(link as u8)
                    .u8(direction as u8)
                    .u64(duration_us),
            ),
            Fault::PartitionHealed {
                node,
                link,
                direction,
            } => self.put_gathered(
                head::<16>(t, 9)
                    .u32(node.0)
                    .u8(link as u8)
                    .u8(direction as u8),
            ),
            Fault::StoreOutage {
                at_us,
                duration_us,
                mode,
            } => self.put_gathered(head::<27>(t, 10).u64(at_us).u64(duration_us).u8(mode as u8)),
            Fault::StoreRecovered { mode } => self.put_gathered(head::<11>(t, 11).u8(mode as u8)),
        }
    }

    /// A value that is nearly always below 255, in one byte when it is.
    #[inline(always)]
    fn put_small(&mut self, i: u64) {
        if i < SMALL_MARKER as u64 {
            self.put([i as u8]);
        } else {
            self.put_large(i);
        }
    }

    #[cold]
    fn put_large(&mut self, i: u64) {
        self.put([SMALL_MARKER]);
        self.put(i.to_le_bytes());
    }

    /// `write`'s slow path: the bytes do not fit behind what is buffered.
    #[cold]
    fn write_past_buffer(&mut self, bytes: &[u8]) {
        self.flush();
        if bytes.len() > BUFFER_BYTES {
            self.inner.write(bytes);
            return;
        }
        self.buf[..bytes.len()].copy_from_slice(bytes);
        self.len = bytes.len() as u16;
    }

    /// The 64-bit digest, formatted by callers as 16 hex digits.
    pub fn digest(&mut self) -> u64 {
        self.flush();
        self.inner.finish()
    }
}

/// A record's writes with the buffered length in a local: the dozen small
/// writes of a store record keep it in a register and store it once, where
/// each `TraceHasher::put` re-read and re-stored `len` (the buffer's stores
/// could alias it). The same bytes, in the same order.
struct Appender<'a> {
    hasher: &'a mut TraceHasher,
    /// Bytes buffered, at most `BUFFER_BYTES`; `hasher.len` is stale until
    /// the record is done (or a flush).
    len: usize,
}

impl Appender<'_> {
    /// Append a fixed-width value.
    #[inline(always)]
    fn put<const N: usize>(&mut self, bytes: [u8; N]) {
        const { assert!(N <= BUFFER_BYTES) };
        if self.len + N > BUFFER_BYTES {
            self.len = spill(self.hasher, self.len);
        }
        let len = self.len;
        self.hasher.buf[len..len + N].copy_from_slice(&bytes);
        self.len = len + N;
    }

    /// Append the first `used` of `bytes`: variable-length fields (an
    /// `Option`) in one fixed-width copy. The bytes past `used` land in the
    /// buffer's free part and are overwritten by the next write.
    #[inline(always)]
    fn put_prefix<const N: usize>(&mut self, bytes: [u8; N], used: usize) {
        const { assert!(N <= BUFFER_BYTES) };
        assert!(used <= N);
        if self.len + N > BUFFER_BYTES {
            self.len = spill(self.hasher, self.len);
        }
        let len = self.len;
        self.hasher.buf[len..len + N].copy_from_slice(&bytes);
        self.len = len + used;
    }

    #[inline(always)]
    fn put_gathered<const N: usize>(&mut self, g: &Gather<N>) {
        self.put(g.bytes());
    }

    /// A page's versions, eight bytes each, after one room test for the
    /// lot (a test per document was three of the loop's ten instructions).
    #[inline(always)]
    fn put_versions<K, V>(&mut self, docs: &[Document<K, V>]) {
        const VERSION_BYTES: usize = 8;
        // No overflow: a document is wider than its version.
        let n = docs.len() * VERSION_BYTES;
        if self.len + n > BUFFER_BYTES {
            self.len = spill(self.hasher, self.len);
            if n > BUFFER_BYTES {
                // A page longer than the buffer: a put each.
                for d in docs {
                    self.put(d.version.to_le_bytes());
                }
                return;
            }
        }
        let len = self.len;
        let (room, _) = self.hasher.buf[len..len + n].as_chunks_mut::<VERSION_BYTES>();
        for (out, d) in room.iter_mut().zip(docs) {
            *out = d.version.to_le_bytes();
        }
        self.len = len + n;
    }

    /// An `Option<u64>` as its derived `Hash` feeds the hasher.
    #[inline(always)]
    fn put_option_u64(&mut self, v: Option<u64>) {
        let mut b = [0u8; 9];
        let used = match v {
            Some(v) => {
                b[0] = 1;
                b[1..].copy_from_slice(&v.to_le_bytes());
                9
            }
            None => 1,
        };
        self.put_prefix(b, used);
    }

    /// See [`TraceHasher::put_store_record`].
    #[inline(always)]
    fn store_record<K: Hash, V: Hash>(
        &mut self,
        time_us: u64,
        actor: Actor,
        request: RequestId,
        op: &StoreRequest<K, V>,
        reply: &StoreReply<K, V>,
        before: Option<&Document<K, V>>,
    ) {
        // Room for a whole record but a long scan's, tested once: each
        // write's own test then folds away where the offsets are known.
        if self.len > BUFFER_BYTES - RECORD_ROOM {
            self.len = spill(self.hasher, self.len);
        }
        let before = before.map(|d| d.version);
        // One match on the request: each arm writes the head with its
        // request's derived discriminant as a constant (in declaration
        // order; one byte, see `write_isize`), then the request's fields
        // after it, as derived. (A discriminant found by a match of its
        // own decoded the request's tag twice.) A put, the commonest write,
        // is tested first: one compare of the tag, before the match that
        // decodes it for the other kinds.
        if let StoreRequest::PutIfVersion {
            key,
            expected,
            value,
            index,
        } = op
        {
            self.put_store_head(time_us, actor, request, 2);
            key.hash(self);
            self.put(expected.to_le_bytes());
            value.hash(self);
            self.put_option(index);
        } else {
            match op {
                StoreRequest::Get { key } => {
                    self.put_store_head(time_us, actor, request, 0);
                    key.hash(self);
                }
                StoreRequest::CreateIfAbsent { key, value, index } => {
                    self.put_store_head(time_us, actor, request, 1);
                    key.hash(self);
                    value.hash(self);
                    self.put_option(index);
                }
                StoreRequest::PutIfVersion { .. } => unreachable!("a put is hashed above"),
                StoreRequest::ScanIndex { start, end, limit } => {
                    self.put_store_head(time_us, actor, request, 6);
                    if self.put_scan(start, end, *limit, reply, before) {
                        return;
                    }
                }
                StoreRequest::PutUnconditional { key, value, index } => {
                    self.put_store_head(time_us, actor, request, 3);
                    key.hash(self);
                    value.hash(self);
                    self.put_option(index);
                }
                StoreRequest::DeleteIfVersion { key, expected } => {
                    self.put_store_head(time_us, actor, request, 4);
                    key.hash(self);
                    self.put(expected.to_le_bytes());
                }
                StoreRequest::Scan { start, end, limit } => {
                    self.put_store_head(time_us, actor, request, 5);
                    if self.put_scan(start, end, *limit, reply, before) {
                        return;
                    }
                }
            }
        }
        let version = |doc: &Option<Document<K, V>>| doc.as_ref().map(|d| d.version);
        match reply {
            StoreReply::Got { doc } => {
                self.put_reply_before(0, Reply::Option(version(doc)), before)
            }
            StoreReply::Written { version } => {
                self.put_reply_before(1, Reply::Version(*version), before)
            }
            StoreReply::Deleted => self.put_reply_before(2, Reply::Tag, before),
            StoreReply::Conflict { current } => {
                self.put_reply_before(3, Reply::Option(version(current)), before)
            }
            StoreReply::Scanned { docs, more } => {
                (4u8, docs.len(), more).hash(self);
                self.put_versions(docs);
                self.put_option_u64(before);
            }
            StoreReply::Unavailable => self.put_reply_before(5, Reply::Tag, before),
        }
    }

    /// A store record's head: the time, a tag no derived discriminant
    /// writes, the actor and request id, and the request's discriminant.
    #[inline(always)]
    fn put_store_head(&mut self, time_us: u64, actor: Actor, request: RequestId, discriminant: u8) {
        const STORE_TAG: u64 = u64::MAX - 1;
        match actor {
            Actor::Node { node, incarnation } => self.put_gathered(
                Gather::<34>::new()
                    .u64(time_us)
                    .u64(STORE_TAG)
                    .u8(0)
                    .u32(node.0)
                    .u32(incarnation)
                    .u64(request.0)
                    .u8(discriminant),
            ),
            Actor::External => self.put_gathered(
                Gather::<26>::new()
                    .u64(time_us)
                    .u64(STORE_TAG)
                    .u8(1)
                    .u64(request.0)
                    .u8(discriminant),
            ),
        }
    }

    /// A scan's fields after its discriminant, as derived; and when the
    /// reply is a page of under 255 documents, the rest of the record, in
    /// which case it answers `true`. The limit and the reply's `(4u8, len,
    /// more)` go in one put while the length takes one byte.
    #[inline(always)]
    fn put_scan<K: Hash, V: Hash>(
        &mut self,
        start: &K,
        end: &K,
        limit: u32,
        reply: &StoreReply<K, V>,
        before: Option<u64>,
    ) -> bool {
        start.hash(self);
        end.hash(self);
        match reply {
            StoreReply::Scanned { docs, more } if docs.len() < usize::from(SMALL_MARKER) => {
                self.put_gathered(
                    Gather::<7>::new()
                        .u32(limit)
                        .u8(4)
                        .u8(docs.len() as u8)
                        .u8(u8::from(*more)),
                );
                self.put_versions(docs);
                self.put_option_u64(before);
                true
            }
            _ => {
                self.put(limit.to_le_bytes());
                false
            }
        }
    }

    /// An `Option<K>` as derived: its discriminant in one byte, then the key.
    #[inline(always)]
    fn put_option<K: Hash>(&mut self, v: &Option<K>) {
        match v {
            Some(k) => {
                self.put([1]);
                k.hash(self);
            }
            None => self.put([0]),
        }
    }

    /// A store reply's tag and version (as a derived `(u8, ..)` tuple),
    /// then the version before (an `Option<u64>`), in one put.
    #[inline(always)]
    fn put_reply_before(&mut self, tag: u8, reply: Reply, before: Option<u64>) {
        let mut b = [0u8; 19];
        b[0] = tag;
        let mut used = 1;
        match reply {
            Reply::Tag => {}
            Reply::Version(v) => {
                b[1..9].copy_from_slice(&v.to_le_bytes());
                used = 9;
            }
            Reply::Option(None) => used = 2,
            Reply::Option(Some(v)) => {
                b[1] = 1;
                b[2..10].copy_from_slice(&v.to_le_bytes());
                used = 10;
            }
        }
        if let Some(v) = before {
            b[used] = 1;
            b[used + 1..used + 9].copy_from_slice(&v.to_le_bytes());
            used += 9;
        } else {
            used += 1;
        }
        self.put_prefix(b, used);
    }

    /// A value that is nearly always below 255, in one byte when it is.
    #[inline(always)]
    fn put_small(&mut self, i: u64) {
        if i < SMALL_MARKER as u64 {
            self.put([i as u8]);
        } else {
            self.put([SMALL_MARKER]);
            self.put(i.to_le_bytes());
        }
    }
}

/// A full buffer met mid-record: the appender's length handed back to the
/// hasher, the buffer flushed; the new length (0).
#[cold]
#[inline(never)]
fn spill(hasher: &mut TraceHasher, len: usize) -> usize {
    hasher.len = len as u16;
    hasher.flush();
    0
}

impl Hasher for Appender<'_> {
    fn finish(&self) -> u64 {
        unreachable!("an appender only writes a record's bytes")
    }

    // As `TraceHasher::write`: a slice past the buffer's room goes through
    // the hasher's own slow path.
    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) {
        let len = self.len;
        let n = bytes.len();
        if len + n > BUFFER_BYTES {
            self.hasher.len = len as u16;
            self.hasher.write_past_buffer(bytes);
            self.len = usize::from(self.hasher.len);
            return;
        }
        self.hasher.buf[len..len + n].copy_from_slice(bytes);
        self.len = len + n;
    }

    // The same encodings as `TraceHasher`'s, from one definition.
    integer_writes!();
}

/// What a store reply adds after its tag.
#[derive(Clone, Copy)]
enum Reply {
    Tag,
    Version(u64),
    Option(Option<u64>),
}

impl Hasher for TraceHasher {
    fn finish(&self) -> u64 {
        let mut copy = self.inner.clone();
        copy.write(&self.buf[..usize::from(self.len)]);
        copy.finish()
    }

    // Inlined: values that gather their bytes for one write (the protocol's
    // keys and documents) pass a slice of constant length, so the copy is a
    // few fixed stores, as in `put`.
    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) {
        let len = usize::from(self.len);
        let n = bytes.len();
        // No overflow: `len` is below 2^16 and a slice below 2^63 bytes.
        if len + n > BUFFER_BYTES {
            self.write_past_buffer(bytes);
            return;
        }
        self.buf[len..len + n].copy_from_slice(bytes);
        self.len = (len + n) as u16;
    }

    integer_writes!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;

    #[test]
    fn same_input_same_digest_and_buffering_is_invisible() {
        let mut a = TraceHasher::new();
        let mut b = TraceHasher::new();
        for i in 0..1000u64 {
            i.hash(&mut a);
        }
        let mut bytes = Vec::new();
        for i in 0..1000u64 {
            bytes.extend_from_slice(&i.to_le_bytes());
        }
        b.write(&bytes);
        assert_eq!(a.digest(), b.digest());
        // Mixed widths across many buffer boundaries: the same bytes, the
        // same digest, however they were cut.
        let mut d = TraceHasher::new();
        let mut e = TraceHasher::new();
        let mut stream = Vec::new();
        for i in 0..10_000u32 {
            d.write_u8(i as u8);
            d.write_u16(i as u16);
            d.write_u32(i);
            d.write_isize(-(i as isize));
            d.write_usize(i as usize);
            stream.push(i as u8);
            stream.extend_from_slice(&(i as u16).to_le_bytes());
            stream.extend_from_slice(&i.to_le_bytes());
            // Negative: the marker and all eight bytes (zero fits one byte).
            if i == 0 {
                stream.push(0);
            } else {
                stream.push(SMALL_MARKER);
                stream.extend_from_slice(&(-(i as i64)).to_le_bytes());
            }
            // Small sizes take one byte, large ones the marker and eight.
            if i < 255 {
                stream.push(i as u8);
            } else {
                stream.push(SMALL_MARKER);
                stream.extend_from_slice(&(i as u64).to_le_bytes());
            }
        }
        e.write(&stream);
        assert_eq!(d.digest(), e.digest());
        // And it is plain xxh3 of the stream.
        assert_eq!(d.digest(), XxHash3_64::oneshot(&stream));
        // Small slices (a protocol value's gathered bytes) across buffer
        // boundaries: the same stream.
        let mut f = TraceHasher::new();
        let mut small = Vec::new();
        for i in 0..5_000u32 {
            let b = &i.to_le_bytes()[..1 + (i % 4) as usize];
            f.write(b);
            small.extend_from_slice(b);
        }
        assert_eq!(f.digest(), XxHash3_64::oneshot(&small));
        let mut c = TraceHasher::new();
        1u64.hash(&mut c);
        assert_ne!(c.digest(), TraceHasher::new().digest());
    }

    #[test]
    fn a_fault_record_is_the_bytes_the_derive_gives() {
        use crate::faults::{Direction, Leg, Link, OutageMode};
        use crate::node::NodeId;
        use crate::record::{Record, RecordKind};
        const BIG: u64 = 0x0102_0304_0506_0708;
        let node = NodeId(0x0a0b_0c0d);
        let mut faults = Vec::new();
        for point in [
            CrashPoint::BeforeInput,
            CrashPoint::BetweenOutputs { emitted: 7 },
        ] {
            faults.push(Fault::Crash {
                node,
                node_step: BIG,
                point,
                restart_after_us: BIG ^ 1,
            });
        }
        faults.push(Fault::CrashAt {
            at_us: BIG,
            node,
            restart_after_us: BIG ^ 2,
        });
        faults.push(Fault::Restart {
            node,
            incarnation: 3,
        });
        faults.push(Fault::Pause {
            node,
            node_step: BIG,
            after_outputs: 4,
            duration_us: BIG ^ 3,
        });
        faults.push(Fault::PauseAt {
            at_us: BIG,
            node,
            duration_us: BIG ^ 4,
        });
        faults.push(Fault::Resume { node });
        for delta_us in [-5, 5] {
            faults.push(Fault::ClockJump {
                node,
                node_step: BIG,
                delta_us,
            });
        }
        let actions = [
            MessageAction::Drop,
            MessageAction::Duplicate { extra_us: BIG ^ 5 },
            MessageAction::Delay { extra_us: BIG ^ 6 },
            MessageAction::Fail,
            MessageAction::Hang,
        ];
        for leg in Leg::ALL {
            for action in actions {
                faults.push(Fault::Message {
                    node,
                    msg: BIG ^ 7,
                    leg,
                    action,
                });
            }
        }
        for link in [Link::Store, Link::Services] {
            for direction in [Direction::Both, Direction::Outbound, Direction::Inbound] {
                faults.push(Fault::Partition {
                    at_us: BIG,
                    node,
                    link,
                    direction,
                    duration_us: BIG ^ 8,
                });
                faults.push(Fault::PartitionHealed {
                    node,
                    link,
                    direction,
                });
            }
        }
        for mode in [OutageMode::Fail, OutageMode::Timeout] {
            faults.push(Fault::StoreOutage {
                at_us: BIG,
                duration_us: BIG ^ 9,
                mode,
            });
            faults.push(Fault::StoreRecovered { mode });
        }
        // Each alone, and all in one stream past a buffer boundary.
        let (mut all_a, mut all_b) = (TraceHasher::new(), TraceHasher::new());
        for i in 0..BUFFER_BYTES / 8 {
            all_a.write_u64(i as u64);
            all_b.write_u64(i as u64);
        }
        for _ in 0..BUFFER_BYTES / 256 {
            for (i, fault) in faults.iter().enumerate() {
                let t = BIG + i as u64;
                let record: Record<'_, u64, u64, u64> = Record {
                    time_us: t,
                    kind: RecordKind::Fault(*fault),
                };
                let (mut a, mut b) = (TraceHasher::new(), TraceHasher::new());
                a.put_fault_record(t, fault);
                record.hash(&mut b);
                assert_eq!(a.digest(), b.digest(), "{fault:?}");
                all_a.put_fault_record(t, fault);
                record.hash(&mut all_b);
            }
        }
        assert_eq!(all_a.digest(), all_b.digest());
    }

    #[test]
    fn a_page_of_versions_is_the_same_bytes_wherever_the_buffer_ends() {
        use leasehold_interface::RequestId;
        let op = StoreRequest::Scan {
            start: 1u64,
            end: 2u64,
            limit: 5,
        };
        // A short page, one past the one-byte length, and one longer than
        // the whole buffer; each written into an empty buffer, a part-full
        // one and one nearly full.
        for pages in [3u64, 300, 2_100] {
            let docs: Vec<Document<u64, u64>> = (0..pages)
                .map(|version| Document {
                    key: 7,
                    version,
                    value: 9,
                })
                .collect();
            let reply = StoreReply::Scanned { docs, more: true };
            let StoreReply::Scanned { docs, .. } = &reply else {
                unreachable!()
            };
            for filled in [0, 100, BUFFER_BYTES - 3] {
                let (mut a, mut b) = (TraceHasher::new(), TraceHasher::new());
                for i in 0..filled {
                    a.write_u8(i as u8);
                    b.write_u8(i as u8);
                }
                let before = Document {
                    key: 7,
                    version: 11,
                    value: 9,
                };
                a.put_store_record(3, Actor::External, RequestId(4), &op, &reply, Some(&before));
                // The bytes as `put_store_record` documents them.
                b.write_u64(3);
                b.write_u64(u64::MAX - 1);
                Actor::External.hash(&mut b);
                RequestId(4).hash(&mut b);
                op.hash(&mut b);
                (4u8, docs.len(), true).hash(&mut b);
                for d in docs {
                    d.version.hash(&mut b);
                }
                Some(11u64).hash(&mut b);
                assert_eq!(
                    a.digest(),
                    b.digest(),
                    "{pages} versions after {filled} bytes"
                );
            }
        }
    }
}
