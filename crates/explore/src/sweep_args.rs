//! Parsing of the values that sweeps take from flags and environment
//! variables. Errors say what is wrong with the value; the caller names the
//! flag (`--jobs`) or variable (`LEASEHOLD_JOBS`).

use crate::sweep_engine::MAX_JOBS;
use std::time::Duration;

/// Longer than this is not a budget, it is a typo (a year).
pub const MAX_TIME_BUDGET: Duration = Duration::from_secs(366 * 24 * 3600);

/// `--jobs N`: threads, 1 to [`MAX_JOBS`].
pub fn parse_jobs(text: &str) -> Result<usize, String> {
    let jobs: usize = text.trim().parse().map_err(|_| {
        format!("\"{text}\" is not a number of jobs (a whole number from 1 to {MAX_JOBS})")
    })?;
    if jobs == 0 || jobs > MAX_JOBS {
        return Err(format!("{jobs} is not between 1 and {MAX_JOBS}"));
    }
    Ok(jobs)
}

/// A duration as humantime writes it: `30s`, `10m`, `1h`, `1h 30m`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let duration = humantime::parse_duration(text.trim()).map_err(|e| {
        format!("\"{text}\" is not a duration ({e}); write e.g. 30s, 10m, 1h or 1h30m")
    })?;
    if duration.is_zero() {
        return Err(format!(
            "\"{text}\" is zero; give a positive duration, e.g. 30s"
        ));
    }
    if duration > MAX_TIME_BUDGET {
        return Err(format!("\"{text}\" is longer than a year"));
    }
    Ok(duration)
}

/// A count of at least 1 (`--stop-after N`).
pub fn parse_positive(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("\"{text}\" is not a whole number of at least 1")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        for bad in ["", "10", "ten minutes", "10x", "0s", "-5s", "2years"] {
            assert!(parse_duration(bad).is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn jobs_and_counts() {
        assert_eq!(parse_jobs("2"), Ok(2));
        assert!(parse_jobs("0").is_err());
        assert!(parse_jobs("many").is_err());
        assert!(parse_jobs("100000").is_err());
        assert_eq!(parse_positive("3"), Ok(3));
        assert!(parse_positive("0").is_err());
        assert!(parse_positive("-1").is_err());
    }
}
