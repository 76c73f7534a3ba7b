//! One independent random stream per concern (and per node within a concern),
//! all derived from the run's seed.
//!
//! Separate streams are what make runs shrinkable: removing a crash from one
//! node must not shift the network latencies another node sees.
//!
//! Every stream starts as ChaCha8, keyed by the seed, on a stream number
//! made of the concern and the index. The streams a node draws from on
//! every step and message (latencies, work times, message and step fault
//! dice, restart delays) then continue as xoshiro256++ seeded from that
//! ChaCha8 stream ([`RngStreams::node_stream`]). The reason is size, not
//! speed. A ChaCha8 generator keeps a 256-byte block of output, so a node's
//! five streams held ~1.5 KiB and friday-rush's 22 nodes ~33 KiB, the whole
//! L1 data cache. xoshiro256++ keeps 32 bytes. Its output is not
//! cryptographic and need not be: the simulation needs independent,
//! well-mixed numbers, and a reproducible sequence.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The generator of a node's per-step and per-message streams.
pub type NodeRng = rand_xoshiro::Xoshiro256PlusPlus;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Concern {
    /// Message latency; indexed by the sending endpoint.
    Network = 1,
    /// Crash decisions and restart delays; indexed by node.
    Faults = 2,
    /// Effect service processing times; indexed by service.
    Services = 3,
    /// Task arrivals and shapes; the host uses it.
    Workload = 4,
    /// Per-seed choice of which fault kinds are on (swarm testing).
    Swarm = 5,
    /// Anything the host needs beyond the above (clock skew draws, ...).
    Host = 6,
    /// Per-message fault dice; indexed by the sending node.
    MessageFaults = 7,
    /// Restart delays after a node stops itself; indexed by node.
    Restarts = 8,
    /// Boot times; indexed by node stream id.
    Boot = 9,
    /// Clock skew and drift; indexed by node stream id.
    Clocks = 10,
    /// Which edge-seeking fault dimensions a seed turns on, and their
    /// targeted faults (the host's fault model).
    Edges = 11,
}

/// A value in `lo..=hi` from 32 random bits, by multiply-shift: one
/// multiply where `random_range` loops to reject. The bias is at most
/// span / 2^32 (under 1% for the widest span used, two minutes in
/// microseconds), far below anything a run can tell apart.
#[inline]
pub fn in_range(bits: u32, lo: u64, hi: u64) -> u64 {
    DrawRange::new(lo, hi).draw(bits)
}

/// A range `lo..=hi` checked once, when made, for what [`in_range`] needs
/// (nonempty, at most 2^32 values): a range drawn from on every message
/// pays for its checks once, not per draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrawRange {
    lo: u64,
    /// `hi - lo + 1`, in `1..=2^32` (private: only `new` makes one).
    span: u64,
}

impl DrawRange {
    pub fn new(lo: u64, hi: u64) -> DrawRange {
        assert!(lo <= hi, "empty range {lo}..={hi}");
        let span = hi - lo + 1;
        assert!(span <= 1 << 32, "span {span} is wider than 32 bits");
        DrawRange { lo, span }
    }

    /// [`in_range`] on this range.
    #[inline]
    pub fn draw(self, bits: u32) -> u64 {
        self.lo + ((bits as u64 * self.span) >> 32)
    }
}

/// [`in_range`] for a signed range.
#[inline]
pub fn in_range_i64(bits: u32, lo: i64, hi: i64) -> i64 {
    assert!(lo <= hi, "empty range {lo}..={hi}");
    let span = hi.abs_diff(lo);
    lo + in_range(bits, 0, span) as i64
}

/// A roll in parts per million (`0..1_000_000`) from 32 random bits.
#[inline]
pub fn ppm_roll(bits: u32) -> u32 {
    ((bits as u64 * 1_000_000) >> 32) as u32
}

/// The 32-bit draws whose [`ppm_roll`] is at least `ppm` are exactly those
/// at or past this: `floor(bits * 10^6 / 2^32) >= ppm` holds when
/// `bits * 10^6 >= ppm * 2^32`, that is `bits >= ceil(ppm * 2^32 / 10^6)`
/// (past every draw for `ppm >= 10^6`). Worked out once, it lets the common
/// "no fault" test compare the raw bits, without the roll's multiply and
/// shift.
pub fn ppm_roll_threshold(ppm: u32) -> u64 {
    ((ppm as u64) << 32).div_ceil(1_000_000)
}

/// The two 32-bit halves of one 64-bit draw: two independent values for one
/// call into the generator.
#[inline]
pub fn halves(raw: u64) -> (u32, u32) {
    (raw as u32, (raw >> 32) as u32)
}

#[derive(Clone, Copy, Debug)]
pub struct RngStreams {
    seed: u64,
}

impl RngStreams {
    pub fn new(seed: u64) -> RngStreams {
        RngStreams { seed }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The stream for `(concern, index)`: ChaCha8 keyed by the seed, on its
    /// own stream number.
    pub fn stream(&self, concern: Concern, index: u32) -> ChaCha8Rng {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(((concern as u64) << 32) | index as u64);
        rng
    }

    /// The stream for `(concern, index)` as a node draws from it on every
    /// step: xoshiro256++, its 256-bit state the first words of
    /// [`RngStreams::stream`]'s (see the module's note).
    pub fn node_stream(&self, concern: Concern, index: u32) -> NodeRng {
        NodeRng::from_rng(&mut self.stream(concern, index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ppm_roll_threshold` splits the draws exactly where `ppm_roll` does.
    #[test]
    fn roll_thresholds_agree_with_the_rolls() {
        for ppm in [
            0,
            1,
            7,
            999,
            1_000,
            123_457,
            500_000,
            999_999,
            1_000_000,
            1_000_001,
            u32::MAX,
        ] {
            let t = ppm_roll_threshold(ppm);
            let mut bits = vec![0, 1, u32::MAX - 1, u32::MAX];
            for d in 0..3u64 {
                bits.extend(t.checked_sub(d).and_then(|b| u32::try_from(b).ok()));
                bits.extend(u32::try_from(t + d).ok());
            }
            for b in bits {
                assert_eq!(b as u64 >= t, ppm_roll(b) >= ppm, "ppm {ppm} bits {b}");
            }
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let (b, ppm) = (state as u32, ((state >> 32) % 1_100_000) as u32);
            assert_eq!(b as u64 >= ppm_roll_threshold(ppm), ppm_roll(b) >= ppm);
        }
    }
    use rand::RngExt;

    #[test]
    fn streams_are_independent_and_reproducible() {
        let s = RngStreams::new(42);
        let a: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(s.stream(Concern::Network, 0), |r, _: u64| {
                Some(r.random::<u64>())
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(s.stream(Concern::Network, 0), |r, _: u64| {
                Some(r.random::<u64>())
            })
            .collect();
        let c: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(s.stream(Concern::Network, 1), |r, _: u64| {
                Some(r.random::<u64>())
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn node_streams_are_independent_and_reproducible() {
        let draws = |concern, index, seed| {
            let mut rng = RngStreams::new(seed).node_stream(concern, index);
            (0..4).map(|_| rng.random::<u64>()).collect::<Vec<_>>()
        };
        let a = draws(Concern::Network, 0, 42);
        assert_eq!(a, draws(Concern::Network, 0, 42));
        assert_ne!(a, draws(Concern::Network, 1, 42));
        assert_ne!(a, draws(Concern::Faults, 0, 42));
        assert_ne!(a, draws(Concern::Network, 0, 43));
        // Pinned: these numbers are part of every run's trace, so a change
        // of generator or seeding must show here, not only in golden hashes.
        assert_eq!(draws(Concern::Network, 0, 1)[0], 17_549_681_289_010_150_704);
    }

    #[test]
    fn ranges_cover_their_ends_and_nothing_else() {
        assert_eq!(in_range(0, 5, 9), 5);
        assert_eq!(in_range(u32::MAX, 5, 9), 9);
        assert_eq!(in_range(u32::MAX, 0, u32::MAX as u64), u32::MAX as u64);
        assert_eq!(in_range(123, 7, 7), 7);
        assert_eq!(in_range_i64(0, -60, 60), -60);
        assert_eq!(in_range_i64(u32::MAX, -60, 60), 60);
        assert_eq!(ppm_roll(0), 0);
        assert_eq!(ppm_roll(u32::MAX), 999_999);
        // Uniform enough: each of 10 buckets gets its share of 2^32 inputs.
        let step = 1u32 << 20;
        let mut buckets = [0u32; 10];
        for i in 0..4096u32 {
            buckets[in_range(i * step, 0, 9) as usize] += 1;
        }
        assert!(
            buckets.iter().all(|&n| (409..=410).contains(&n)),
            "{buckets:?}"
        );
    }

    #[test]
    #[should_panic(expected = "wider than 32 bits")]
    fn refuses_a_span_it_cannot_cover() {
        in_range(0, 0, 1 << 32);
    }
}
