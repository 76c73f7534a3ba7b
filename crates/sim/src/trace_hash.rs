//! The trace hash: a fingerprint of every record of a run.
//!
//! Records are fed through `std::hash::Hash` into xxh3. Small writes are
//! buffered so the per-record cost stays a few nanoseconds.

use std::hash::Hasher;
use xxhash_rust::xxh3::Xxh3Default;

const BUFFER_BYTES: usize = 256;

pub struct TraceHasher {
    inner: Xxh3Default,
    buf: [u8; BUFFER_BYTES],
    len: usize,
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

    fn flush(&mut self) {
        self.inner.update(&self.buf[..self.len]);
        self.len = 0;
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
        copy.update(&self.buf[..self.len]);
        copy.digest()
    }

    fn write(&mut self, bytes: &[u8]) {
        if bytes.len() > BUFFER_BYTES {
            self.flush();
            self.inner.update(bytes);
            return;
        }
        if self.len + bytes.len() > BUFFER_BYTES {
            self.flush();
        }
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    // Fixed-width little-endian so the hash is the same on every platform.
    fn write_usize(&mut self, i: usize) {
        self.write(&(i as u64).to_le_bytes());
    }
    fn write_isize(&mut self, i: isize) {
        self.write(&(i as i64).to_le_bytes());
    }
    fn write_u64(&mut self, i: u64) {
        self.write(&i.to_le_bytes());
    }
    fn write_u32(&mut self, i: u32) {
        self.write(&i.to_le_bytes());
    }
    fn write_u16(&mut self, i: u16) {
        self.write(&i.to_le_bytes());
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
        let mut c = TraceHasher::new();
        1u64.hash(&mut c);
        assert_ne!(c.digest(), TraceHasher::new().digest());
    }
}
