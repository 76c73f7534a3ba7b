//! Local time as a node sees it.
//!
//! `std::time::Instant` cannot be built from a seed, so nodes get this type:
//! microseconds on the node's own monotonic clock. Durations stay plain `u64`
//! with their unit in the name (`lease_timeout_ms`).

use serde::{Deserialize, Serialize};

/// A reading of a node's local monotonic clock, in microseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Instant {
    micros: u64,
}

impl Instant {
    pub const ZERO: Instant = Instant { micros: 0 };

    pub const fn from_micros(micros: u64) -> Instant {
        Instant { micros }
    }

    pub const fn from_millis(millis: u64) -> Instant {
        Instant {
            micros: millis * 1_000,
        }
    }

    pub const fn as_micros(self) -> u64 {
        self.micros
    }

    pub const fn as_millis(self) -> u64 {
        self.micros / 1_000
    }

    /// `self + ms`; saturates rather than wrapping so a huge timeout means "never".
    pub const fn plus_ms(self, ms: u64) -> Instant {
        Instant {
            micros: self.micros.saturating_add(ms.saturating_mul(1_000)),
        }
    }

    pub const fn plus_us(self, us: u64) -> Instant {
        Instant {
            micros: self.micros.saturating_add(us),
        }
    }

    /// Microseconds elapsed since `earlier`, zero if `earlier` is later.
    pub const fn saturating_us_since(self, earlier: Instant) -> u64 {
        self.micros.saturating_sub(earlier.micros)
    }
}

/// What a node reads from its clocks when it handles one input: a monotonic
/// clock for every timeout and lease, and a wall clock that is only ever used
/// to stamp documents for humans (correct nodes never compare another node's
/// wall-clock stamp with their own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LocalTime {
    pub mono: Instant,
    pub wall_ms: u64,
}

impl std::fmt::Display for Instant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}.{:03}s",
            self.micros / 1_000_000,
            (self.micros / 1_000) % 1_000
        )
    }
}
