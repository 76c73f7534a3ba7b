//! The trace hash: a fingerprint of every record of a run.
//!
//! Records are fed through `std::hash::Hash` into xxh3. Small writes are
//! buffered so the per-record cost stays a few nanoseconds: a record is a
//! few writes (the hot kinds gather their fixed fields into one, giving the
//! same bytes a field-by-field `derive(Hash)` would), each an inlined store
//! into the buffer, and xxh3 sees whole 4 KiB blocks. (The digest does not depend on how the byte stream
//! is cut into updates, so the buffer size is free to change.) Lengths and
//! enum discriminants, the `usize`/`isize` writes, take one byte when small.

use std::hash::Hasher;
use xxhash_rust::xxh3::Xxh3Default;

const BUFFER_BYTES: usize = 4096;
const _: () = assert!(BUFFER_BYTES <= u16::MAX as usize, "the length is a u16");
/// Marks a `usize`/`isize` too large for one byte; its eight bytes follow.
const SMALL_MARKER: u8 = 0xff;

/// A record's fixed fields gathered at fixed offsets, for one
/// [`TraceHasher::put_gathered`]: one bounds check and one copy for the lot
/// instead of one per field.
pub(crate) use leasehold_interface::FixedBytes as Gather;

pub struct TraceHasher {
    inner: Xxh3Default,
    buf: [u8; BUFFER_BYTES],
    /// Bytes buffered. A `u16`: a length known to be small, so `len + N`
    /// cannot overflow and the buffer's bounds checks fold into the one
    /// test against its size.
    len: u16,
}

impl Default for TraceHasher {
    fn default() -> Self {
        TraceHasher {
            inner: Xxh3Default::new(),
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
        self.inner.update(&self.buf[..usize::from(self.len)]);
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

    /// Append the first `used` of `bytes`: variable-length fields (an
    /// `Option`) in one fixed-width copy. The bytes past `used` land in the
    /// buffer's free part and are overwritten by the next write.
    #[inline(always)]
    fn put_prefix<const N: usize>(&mut self, bytes: [u8; N], used: usize) {
        const { assert!(N <= BUFFER_BYTES) };
        assert!(used <= N);
        let mut len = usize::from(self.len);
        if len + N > BUFFER_BYTES {
            self.flush();
            len = 0;
        }
        self.buf[len..len + N].copy_from_slice(&bytes);
        self.len = (len + used) as u16;
    }

    /// Bytes gathered by a [`Gather`], in one copy.
    #[inline(always)]
    pub(crate) fn put_gathered<const N: usize>(&mut self, g: &Gather<N>) {
        self.put(g.bytes());
    }

    /// `lead`, then an `Option<u64>` as its derived `Hash` feeds this
    /// hasher: the discriminant in one byte, then the value if there is one.
    #[inline(always)]
    pub(crate) fn put_u8_option_u64(&mut self, lead: u8, v: Option<u64>) {
        let mut b = [0u8; 10];
        b[0] = lead;
        let used = match v {
            Some(v) => {
                b[1] = 1;
                b[2..].copy_from_slice(&v.to_le_bytes());
                10
            }
            None => 2,
        };
        self.put_prefix(b, used);
    }

    /// An `Option<u64>` as its derived `Hash` feeds this hasher.
    #[inline(always)]
    pub(crate) fn put_option_u64(&mut self, v: Option<u64>) {
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
            self.inner.update(bytes);
            return;
        }
        self.buf[..bytes.len()].copy_from_slice(bytes);
        self.len = bytes.len() as u16;
    }

    /// The 64-bit digest, formatted by callers as 16 hex digits.
    pub fn digest(&mut self) -> u64 {
        self.flush();
        self.inner.digest()
    }
}

impl Hasher for TraceHasher {
    fn finish(&self) -> u64 {
        let mut copy = self.inner.clone();
        copy.update(&self.buf[..usize::from(self.len)]);
        copy.digest()
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

    // Little-endian, and `usize` as if 64 bits wide, so the hash is the same
    // on every platform.
    #[inline(always)]
    fn write_u8(&mut self, i: u8) {
        self.put([i]);
    }
    // `usize` and `isize` carry lengths and the derived enum discriminants,
    // nearly always small: one byte below 255, else a 255 marker and all
    // eight. The code is prefix-free, so distinct streams stay distinct, and
    // a third of a record's bytes (its discriminants) shrink eightfold.
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
        assert_eq!(d.digest(), xxhash_rust::xxh3::xxh3_64(&stream));
        // Small slices (a protocol value's gathered bytes) across buffer
        // boundaries: the same stream.
        let mut f = TraceHasher::new();
        let mut small = Vec::new();
        for i in 0..5_000u32 {
            let b = &i.to_le_bytes()[..1 + (i % 4) as usize];
            f.write(b);
            small.extend_from_slice(b);
        }
        assert_eq!(f.digest(), xxhash_rust::xxh3::xxh3_64(&small));
        let mut c = TraceHasher::new();
        1u64.hash(&mut c);
        assert_ne!(c.digest(), TraceHasher::new().digest());
    }
}
