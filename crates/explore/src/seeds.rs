//! Seed ranges as users type them: `A..B` (both ends included) or `A..=B`.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedRange {
    pub first: u64,
    pub last: u64,
}

/// Sweeps bigger than this are almost certainly a typo.
pub const MAX_SEEDS_PER_SWEEP: u64 = 1 << 40;

impl SeedRange {
    pub fn parse(text: &str) -> Result<SeedRange, String> {
        let text = text.trim();
        let (a, b) = text
            .split_once("..=")
            .or_else(|| text.split_once(".."))
            .ok_or_else(|| format!("\"{text}\" is not a seed range; write A..B, e.g. 1..1000"))?;
        let first: u64 = a.trim().parse().map_err(|_| {
            format!(
                "\"{a}\" in \"{text}\" is not a seed (a whole number from 0 to {})",
                u64::MAX
            )
        })?;
        let last: u64 = b.trim().parse().map_err(|_| {
            format!(
                "\"{b}\" in \"{text}\" is not a seed (a whole number from 0 to {})",
                u64::MAX
            )
        })?;
        if first > last {
            return Err(format!("\"{text}\" is empty: {first} is after {last}"));
        }
        if last - first >= MAX_SEEDS_PER_SWEEP {
            return Err(format!(
                "\"{text}\" has more than {MAX_SEEDS_PER_SWEEP} seeds"
            ));
        }
        Ok(SeedRange { first, last })
    }

    pub fn len(&self) -> u64 {
        self.last - self.first + 1
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> {
        self.first..=self.last
    }
}

impl std::fmt::Display for SeedRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}..{}", self.first, self.last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_inclusive_ranges() {
        assert_eq!(SeedRange::parse("1..1000").unwrap().len(), 1000);
        assert_eq!(SeedRange::parse("5..=5").unwrap().len(), 1);
        assert!(SeedRange::parse("10..1").unwrap_err().contains("empty"));
        assert!(SeedRange::parse("a..3").unwrap_err().contains("not a seed"));
        assert!(
            SeedRange::parse("7")
                .unwrap_err()
                .contains("not a seed range")
        );
        assert!(SeedRange::parse("1..99999999999999999999").is_err());
    }
}
