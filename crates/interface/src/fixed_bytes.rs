//! Fixed fields gathered at fixed offsets, for one write instead of one per
//! field. The protocol's hand-written `Hash` impls and the simulator's
//! record hashing both use it to feed the trace hasher the bytes
//! `derive(Hash)` would: integers little-endian at their widths, `bool`s and
//! enum discriminants (below 255) in one byte.

/// `N` bytes, filled in order by the chained writers; [`FixedBytes::bytes`]
/// asserts every one was written.
pub struct FixedBytes<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Default for FixedBytes<N> {
    #[inline(always)]
    fn default() -> Self {
        FixedBytes::new()
    }
}

impl<const N: usize> FixedBytes<N> {
    #[inline(always)]
    pub fn new() -> Self {
        FixedBytes {
            bytes: [0; N],
            len: 0,
        }
    }

    #[inline(always)]
    fn put<const W: usize>(&mut self, b: [u8; W]) -> &mut Self {
        self.bytes[self.len..self.len + W].copy_from_slice(&b);
        self.len += W;
        self
    }

    /// A `u8`, a `bool`, or a derived discriminant (one byte here).
    #[inline(always)]
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.put([v])
    }

    #[inline(always)]
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.put(v.to_le_bytes())
    }

    #[inline(always)]
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.put(v.to_le_bytes())
    }

    #[inline(always)]
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.put(v.to_le_bytes())
    }

    /// Every byte, once all were written.
    #[inline(always)]
    pub fn bytes(&self) -> [u8; N] {
        // Offsets are constants once inlined, so this folds away.
        assert!(self.len == N, "fixed bytes fill exactly their width");
        self.bytes
    }

    /// Every byte, in one `Hasher::write`.
    #[inline(always)]
    pub fn write<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write(&self.bytes());
    }
}
