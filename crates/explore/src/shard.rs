//! `--shard K/N`: a disjoint, deterministic part of a seed range, so that N
//! machines (a CI matrix, a Kubernetes indexed Job) share one sweep.
//!
//! Shards are 1-based, as `cargo nextest --partition count:K/N` numbers them.
//! Seeds are dealt round-robin: seed `s` of `A..B` belongs to shard
//! `(s - A) % N + 1`. Every seed is in exactly one shard, so the union of
//! shards 1..=N is the range and no two shards overlap; round-robin keeps the
//! shards within one seed of each other in size, and each shard spans the
//! whole range (a time-budgeted shard still samples high and low seeds).
//!
//! `--shard auto/N` takes K from `JOB_COMPLETION_INDEX`, the 0-based index
//! that a Kubernetes indexed Job gives each pod: index `i` is shard `i + 1`.

use crate::seeds::SeedRange;

/// The environment variable a Kubernetes indexed Job sets in each pod.
pub const JOB_COMPLETION_INDEX: &str = "JOB_COMPLETION_INDEX";

/// More shards than this is a typo, not a fleet.
pub const MAX_SHARDS: u64 = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// 1-based: 1..=count.
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// The whole range as one shard.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Parse `K/N` (1 <= K <= N) or `auto/N`; `env` looks up environment
    /// variables (pass `|name| std::env::var(name).ok()`).
    pub fn parse(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Shard, String> {
        let text = text.trim();
        let (k, n) = text.split_once('/').ok_or_else(|| {
            format!("\"{text}\" is not a shard; write K/N with 1 <= K <= N, e.g. 2/4, or auto/N")
        })?;
        let count: u64 = n.trim().parse().map_err(|_| {
            format!(
                "\"{n}\" in \"{text}\" is not a shard count (a whole number from 1 to {MAX_SHARDS})"
            )
        })?;
        if count == 0 || count > MAX_SHARDS {
            return Err(format!(
                "\"{text}\": the shard count {count} is not between 1 and {MAX_SHARDS}"
            ));
        }
        let index = if k.trim() == "auto" {
            let value = env(JOB_COMPLETION_INDEX).ok_or_else(|| {
                format!("\"{text}\" takes the shard from {JOB_COMPLETION_INDEX}, which is not set")
            })?;
            let zero_based: u64 = value
                .trim()
                .parse()
                .map_err(|_| format!("{JOB_COMPLETION_INDEX}=\"{value}\" is not a whole number"))?;
            if zero_based >= count {
                return Err(format!(
                    "{JOB_COMPLETION_INDEX}={zero_based} is out of range for {count} shards (0 to {})",
                    count - 1
                ));
            }
            zero_based + 1
        } else {
            let index: u64 = k.trim().parse().map_err(|_| {
                format!("\"{k}\" in \"{text}\" is not a shard number (1 to {count}) or \"auto\"")
            })?;
            if index == 0 || index > count {
                return Err(format!(
                    "\"{text}\": shard {index} is not between 1 and {count} (shards are numbered from 1)"
                ));
            }
            index
        };
        Ok(Shard { index, count })
    }

    /// Whether `seed` of `range` belongs to this shard.
    pub fn contains(&self, range: &SeedRange, seed: u64) -> bool {
        assert!(self.index >= 1 && self.index <= self.count);
        seed >= range.first
            && seed <= range.last
            && (seed - range.first) % self.count == self.index - 1
    }

    /// This shard's seeds of `range`, ascending.
    pub fn seeds(&self, range: &SeedRange) -> impl Iterator<Item = u64> + Send + use<> {
        assert!(self.index >= 1 && self.index <= self.count);
        let start = range.first.checked_add(self.index - 1);
        let last = range.last;
        let step = usize::try_from(self.count).expect("MAX_SHARDS fits in usize");
        start
            .filter(|s| *s <= last)
            .map(|s| (s..=last).step_by(step))
            .into_iter()
            .flatten()
    }

    /// How many seeds of `range` this shard holds.
    pub fn len(&self, range: &SeedRange) -> u64 {
        let offset = self.index - 1;
        if offset >= range.len() {
            0
        } else {
            (range.len() - offset).div_ceil(self.count)
        }
    }

    pub fn is_empty(&self, range: &SeedRange) -> bool {
        self.len(range) == 0
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn shards_partition_the_range() {
        for (first, last) in [
            (1, 1),
            (1, 10),
            (0, 0),
            (5, 104),
            (7, 8),
            (u64::MAX - 5, u64::MAX),
        ] {
            let range = SeedRange { first, last };
            for count in 1..=12 {
                let mut seen = Vec::new();
                for index in 1..=count {
                    let shard = Shard { index, count };
                    let seeds: Vec<u64> = shard.seeds(&range).collect();
                    assert_eq!(seeds.len() as u64, shard.len(&range), "{shard} of {range}");
                    assert!(seeds.iter().all(|s| shard.contains(&range, *s)));
                    assert!(seeds.windows(2).all(|w| w[0] < w[1]));
                    seen.extend(seeds);
                }
                seen.sort_unstable();
                let all: Vec<u64> = range.iter().collect();
                assert_eq!(seen, all, "union of {count} shards of {range}");
            }
        }
    }

    #[test]
    fn shard_sizes_differ_by_at_most_one() {
        let range = SeedRange {
            first: 1,
            last: 1000,
        };
        let sizes: Vec<u64> = (1..=7)
            .map(|index| Shard { index, count: 7 }.len(&range))
            .collect();
        assert_eq!(sizes.iter().sum::<u64>(), 1000);
        assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
    }

    #[test]
    fn parses_and_rejects() {
        assert_eq!(
            Shard::parse("2/4", no_env),
            Ok(Shard { index: 2, count: 4 })
        );
        assert_eq!(Shard::parse("1/1", no_env), Ok(Shard::ALL));
        for bad in ["0/4", "5/4", "2", "a/4", "2/x", "2/0", "/", "-1/4", "1/4/5"] {
            assert!(Shard::parse(bad, no_env).is_err(), "{bad} parsed");
        }
        let env = |value: &'static str| {
            move |name: &str| (name == JOB_COMPLETION_INDEX).then(|| value.to_string())
        };
        assert_eq!(
            Shard::parse("auto/4", env("0")),
            Ok(Shard { index: 1, count: 4 })
        );
        assert_eq!(
            Shard::parse("auto/4", env("3")),
            Ok(Shard { index: 4, count: 4 })
        );
        assert!(
            Shard::parse("auto/4", env("4"))
                .unwrap_err()
                .contains("out of range")
        );
        assert!(
            Shard::parse("auto/4", env("x"))
                .unwrap_err()
                .contains(JOB_COMPLETION_INDEX)
        );
        assert!(
            Shard::parse("auto/4", no_env)
                .unwrap_err()
                .contains("not set")
        );
    }
}
