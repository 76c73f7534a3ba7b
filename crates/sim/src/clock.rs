//! Per-node local clocks: an offset and a drift rate over virtual time.

use leasehold_interface::Instant;
use serde::{Deserialize, Serialize};

const PPM: i128 = 1_000_000;
/// Drift beyond 10% is not a clock, it is a bug in the scenario.
pub const MAX_DRIFT_PPM: i64 = 100_000;

/// Monotonic: `local = sim + offset + sim * drift_ppm / 1e6`, never below
/// zero. Wall: the same rate, shifted by `wall_offset_us` (skew, plus any
/// jumps so far).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LocalClock {
    pub offset_us: i64,
    pub drift_ppm: i64,
    pub wall_offset_us: i64,
}

impl LocalClock {
    pub fn new(offset_us: i64, drift_ppm: i64) -> LocalClock {
        assert!(
            drift_ppm.abs() <= MAX_DRIFT_PPM,
            "drift {drift_ppm} ppm out of range"
        );
        LocalClock {
            offset_us,
            drift_ppm,
            wall_offset_us: 0,
        }
    }

    /// Both readings at simulated time `sim_us`.
    #[inline]
    pub fn read(&self, sim_us: u64) -> leasehold_interface::LocalTime {
        // i64 whenever nothing overflows (always, below ~290 years), else
        // the exact i128 form: the same value either way.
        let (mono, wall_fast) = if self.offset_us | self.drift_ppm == 0 {
            // The identity clock (see `sim_time_for`): the time itself, and
            // no offset to take off it for the wall clock.
            let wall = i64::try_from(sim_us)
                .ok()
                .and_then(|m| m.checked_add(self.wall_offset_us));
            (Instant::from_micros(sim_us), wall)
        } else {
            let mono = self.local(sim_us);
            let wall = i64::try_from(mono.as_micros())
                .ok()
                .and_then(|m| m.checked_sub(self.offset_us))
                .and_then(|d| d.checked_add(self.wall_offset_us));
            (mono, wall)
        };
        let wall_us = wall_fast.map_or_else(
            || {
                let drifted = mono.as_micros() as i128 - self.offset_us as i128;
                (drifted + self.wall_offset_us as i128).clamp(0, u64::MAX as i128) as u64
            },
            |w| w.max(0) as u64,
        );
        leasehold_interface::LocalTime {
            mono,
            wall_ms: wall_us / 1_000,
        }
    }

    #[inline]
    pub fn local(&self, sim_us: u64) -> Instant {
        // Fast path in i64 (a 128-bit division is a library call, and this
        // runs several times per event); exact whenever nothing overflows.
        let fast = i64::try_from(sim_us).ok().and_then(|sim| {
            let scaled = sim.checked_mul(self.drift_ppm)? / PPM as i64;
            sim.checked_add(self.offset_us)?.checked_add(scaled)
        });
        match fast {
            Some(local) => Instant::from_micros(local.max(0) as u64),
            None => self.local_exact(sim_us),
        }
    }

    fn local_exact(&self, sim_us: u64) -> Instant {
        let sim = sim_us as i128;
        let local = sim + self.offset_us as i128 + sim * self.drift_ppm as i128 / PPM;
        Instant::from_micros(local.clamp(0, u64::MAX as i128) as u64)
    }

    /// The earliest simulated time at which this clock reads at least `local`.
    #[inline]
    pub fn sim_time_for(&self, local: Instant) -> u64 {
        if self.offset_us | self.drift_ppm == 0 {
            // The identity clock (no offset, no drift: every clock of a
            // run without clock faults, and the monotonic clock of most
            // that have them, which skew the wall clock only): `local`
            // itself, one test instead of the i128 form's ~15 instructions.
            return local.as_micros();
        }
        if self.drift_ppm == 0 {
            // An offset and no drift: `local(sim) = max(sim + offset, 0)`,
            // inverted directly (zero is read from the start).
            let target = local.as_micros() as i128 - self.offset_us as i128;
            return if local == Instant::ZERO {
                0
            } else {
                target.clamp(0, u64::MAX as i128) as u64
            };
        }
        // Exactly, in closed form (a settling loop here read the clock three
        // times per call). For `sim >= 0`, `local(sim) - offset` is
        // `sim + trunc(sim * drift / PPM)`, that is `floor(sim * rate / PPM)`
        // when drift >= 0 and `ceil(sim * rate / PPM)` when it is negative
        // (truncation rounds towards zero), with `rate = PPM + drift > 0`.
        // So the earliest `sim` reading at least `target` (>= 1 here) is
        // `ceil(target * PPM / rate)`, or `floor((target - 1) * PPM / rate) + 1`.
        // In i64 when nothing overflows (see `local`): the same value as
        // the i128 form below, in fewer instructions (it runs at every
        // re-arm of a drifting node's timer).
        if let Some(target) = i64::try_from(local.as_micros())
            .ok()
            .and_then(|l| l.checked_sub(self.offset_us))
        {
            // `local(0)` reads `max(offset, 0)`: with `target > 0` (`local`
            // past the offset) that is at least `local` only for a zero
            // `local`. So this is the test below, `self.local(0) >= local`.
            if target <= 0 || local == Instant::ZERO {
                return 0;
            }
            let rate = PPM as i64 + self.drift_ppm;
            let (numerator, add) = if self.drift_ppm >= 0 {
                (target, rate - 1)
            } else {
                (target - 1, rate)
            };
            if let Some(t) = numerator
                .checked_mul(PPM as i64)
                .and_then(|t| t.checked_add(add))
            {
                // Both operands positive: the unsigned quotient is the
                // signed one, and fits a `u64`.
                return self.checked_inverse(t as u64 / rate as u64, local);
            }
        }
        // Computed here, not above: the drifting clocks' i64 form above
        // has no use for it.
        let target = local.as_micros() as i128 - self.offset_us as i128;
        if target <= 0 || self.local(0) >= local {
            return 0;
        }
        // The same in i128, for values past the i64 form's.
        let rate = PPM + self.drift_ppm as i128;
        let (numerator, add) = if self.drift_ppm >= 0 {
            (target, rate - 1)
        } else {
            (target - 1, rate)
        };
        let sim = (numerator * PPM + add) / rate;
        self.checked_inverse(sim.clamp(0, u64::MAX as i128) as u64, local)
    }

    /// `sim`, checked to be the earliest simulated time reading at least
    /// `local` ([`LocalClock::sim_time_for`] of a drifting clock).
    #[inline(always)]
    fn checked_inverse(&self, sim: u64, local: Instant) -> u64 {
        assert!(self.local(sim) >= local, "clock inversion is not exact");
        debug_assert!(
            sim == 0 || self.local(sim - 1) < local,
            "clock inversion is not the earliest"
        );
        sim
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_clock_round_trips() {
        let c = LocalClock::default();
        assert_eq!(c.local(1234).as_micros(), 1234);
        assert_eq!(c.sim_time_for(Instant::from_micros(1234)), 1234);
    }

    /// The i64 fast paths give exactly what the i128 forms give.
    #[test]
    fn fast_paths_match_the_exact_forms() {
        let sims = [
            0u64,
            1,
            999_999,
            21_600_000_000,
            1 << 40,
            (1 << 62) + 12_345,
            i64::MAX as u64,
            i64::MAX as u64 + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        for drift in [-MAX_DRIFT_PPM, -777, 0, 3, MAX_DRIFT_PPM] {
            for offset in [i64::MIN / 2, -30_000_000, 0, 5, i64::MAX / 2] {
                let mut c = LocalClock::new(offset, drift);
                for wall in [i64::MIN / 4, -1, 0, 60_000_000, i64::MAX / 4] {
                    c.wall_offset_us = wall;
                    for sim in sims {
                        assert_eq!(c.local(sim), c.local_exact(sim), "{c:?} at {sim}");
                        let mono = c.local_exact(sim);
                        let drifted = mono.as_micros() as i128 - offset as i128;
                        let wall_us = (drifted + wall as i128).clamp(0, u64::MAX as i128) as u64;
                        assert_eq!(c.read(sim).wall_ms, wall_us / 1_000, "{c:?} at {sim}");
                    }
                }
            }
        }
    }

    /// The closed-form inverse against the clock itself, microsecond by
    /// microsecond, across the rounding of every drift sign.
    #[test]
    fn inverse_is_exact_over_a_dense_range() {
        for drift in [
            -MAX_DRIFT_PPM,
            -99_999,
            -3_333,
            -1,
            1,
            7,
            12_345,
            MAX_DRIFT_PPM,
        ] {
            for offset in [-2_000, 0, 1_500] {
                let c = LocalClock::new(offset, drift);
                for local in 0u64..5_000 {
                    let l = Instant::from_micros(local);
                    let t = c.sim_time_for(l);
                    assert!(c.local(t) >= l, "{drift} {offset} {local}");
                    assert!(t == 0 || c.local(t - 1) < l, "{drift} {offset} {local}");
                }
                // The i64 form, then the i128 form (a product past i64, then a
                // reading past it).
                for local in [
                    1u64 << 40,
                    (1 << 50) + 999_999,
                    i64::MAX as u64 / 2,
                    i64::MAX as u64 + 12_345,
                ] {
                    let l = Instant::from_micros(local);
                    let t = c.sim_time_for(l);
                    assert!(c.local(t) >= l && c.local(t - 1) < l, "{drift} {local}");
                }
            }
        }
    }

    #[test]
    fn drifting_clock_inverts_to_the_earliest_time() {
        for drift in [-50_000, -200, 0, 150, 99_000] {
            for offset in [-5_000_000, 0, 7_000] {
                let c = LocalClock::new(offset, drift);
                for local in [0u64, 1, 999, 5_000_000, 123_456_789] {
                    let l = Instant::from_micros(local);
                    let t = c.sim_time_for(l);
                    assert!(c.local(t) >= l);
                    if t > 0 {
                        assert!(c.local(t - 1) < l, "not earliest: {drift} {offset} {local}");
                    }
                }
            }
        }
    }
}
