//! A run's peak memory, estimated from its scenario before it runs, so that
//! a command can refuse a run the machine cannot hold instead of being
//! killed by it (or slowing every other program to a crawl) minutes later.
//!
//! The estimate is a sum of terms, each a count the scenario fixes times
//! bytes measured per unit (docs/performance.md, "Memory", gives the
//! formula, the measurements behind each coefficient and the command that
//! repeats them; `tests/memory_estimate.rs` holds it to measured peaks at
//! three sizes):
//!
//! ```text
//! peak = BASE
//!      + tasks            x PER_TASK            (store documents and index, checker, workload)
//!      + tasks x steps    x PER_TASK_STEP       (the checker's ledger of applied steps)
//!      + nodes            x PER_NODE            (node state, heartbeat documents, queued events)
//!      + fault bound      x PER_FAULT           (the plan a run records, at most MAX_FAULTS_PER_RUN)
//! ```
//!
//! It is an upper estimate: a run's real peak is below it, by less than
//! half for large runs. Nothing here is an input to a run.

use leasehold_scenario::scenario::ValidScenario;

/// The tool itself: binary, allocator arenas, buffers, one small run.
pub const BASE_BYTES: u64 = 24 << 20;
/// Per task.
pub const PER_TASK_BYTES: u64 = 800;
/// Per step of a task.
pub const PER_TASK_STEP_BYTES: u64 = 8;
/// Per node (worker or reclaimer).
pub const PER_NODE_BYTES: u64 = 6 << 10;
/// Per fault a run may record in its plan.
pub const PER_FAULT_BYTES: u64 = 48;

/// The estimated peak memory, in bytes, of one run of `scn`.
pub fn run_peak_bytes(scn: &ValidScenario) -> u64 {
    let s = &scn.scenario;
    let tasks = u64::from(s.tasks.total());
    let steps = u64::from(s.tasks.steps_per_task());
    let nodes = u64::from(s.fleet.workers) + u64::from(s.fleet.reclaimers);
    // A run records every fault it injects; the injector stops at the bound.
    let faults = faults_bound(scn);
    BASE_BYTES
        .saturating_add(tasks.saturating_mul(PER_TASK_BYTES))
        .saturating_add(
            tasks
                .saturating_mul(steps)
                .saturating_mul(PER_TASK_STEP_BYTES),
        )
        .saturating_add(nodes.saturating_mul(PER_NODE_BYTES))
        .saturating_add(faults.saturating_mul(PER_FAULT_BYTES))
}

/// The most faults a run of `scn` can record: none when its scenario
/// injects none, else the simulator's bound.
fn faults_bound(scn: &ValidScenario) -> u64 {
    let f = &scn.scenario.faults;
    let injects = f.crash.is_some()
        || f.pause.is_some()
        || f.clock.is_some()
        || f.network.is_some()
        || f.store.is_some()
        || f.services.is_some()
        || f.restarts.is_some()
        || !f.scheduled.is_empty();
    if injects {
        leasehold_sim::faults::MAX_FAULTS_PER_RUN as u64
    } else {
        0
    }
}

/// The memory a command may use unless told otherwise: half of the
/// machine's (`MemTotal`), leaving the rest to everything else running.
/// `None` where the machine's memory cannot be read.
pub fn default_limit_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    mem_total_bytes(&meminfo).map(|total| total / 2)
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
pub fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib = line["MemTotal:".len()..]
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse::<u64>()
        .ok()?;
    kib.checked_mul(1024)
}

/// A size as `--max-memory` takes it: a number and a unit, `512MiB`,
/// `2 GiB`, `1.5GiB`, `800MB`, `4G` (G, M, K: binary), or bytes alone.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (&t[..split], t[split..].trim());
    let bad =
        || format!("\"{text}\" is not a size: a number and a unit, such as 512MiB, 2GiB or 800MB");
    let value: f64 = number.parse().map_err(|_| bad())?;
    let scale: f64 = match unit {
        "" | "B" => 1.0,
        "K" | "KiB" => 1024.0,
        "M" | "MiB" => 1024.0 * 1024.0,
        "G" | "GiB" => 1024.0 * 1024.0 * 1024.0,
        "T" | "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        _ => return Err(bad()),
    };
    let bytes = value * scale;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 / 2.0 {
        return Err(format!("\"{text}\" is not a size between 1 byte and 8 EiB"));
    }
    Ok(bytes as u64)
}

/// `bytes` as a limit is shown: exact units when it is a whole number of
/// them (`1 MiB`), else to a tenth (`11.7 GiB`).
pub fn fmt_limit(bytes: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift {
            return if bytes.is_multiple_of(1 << shift) {
                format!("{} {unit}", bytes >> shift)
            } else {
                crate::measure::fmt_bytes(bytes)
            };
        }
    }
    format!("{bytes} bytes")
}

/// The memory limit a command runs under: `--max-memory` as given, or the
/// default. Errors name the flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryLimit {
    pub bytes: u64,
    /// Given with `--max-memory`, not the default.
    pub given: bool,
}

impl MemoryLimit {
    /// From `--max-memory`'s text, if given; the default otherwise (none
    /// where the machine's memory cannot be read).
    pub fn from_flag(text: Option<&str>) -> Result<Option<MemoryLimit>, String> {
        match text {
            Some(t) => parse_size(t).map(|bytes| Some(MemoryLimit { bytes, given: true })),
            None => Ok(default_limit_bytes().map(|bytes| MemoryLimit {
                bytes,
                given: false,
            })),
        }
    }

    /// Refuse `estimate` bytes for `what` when over the limit: one line
    /// giving the estimate and the limit.
    pub fn check(&self, estimate: u64, what: &str) -> Result<(), String> {
        if estimate <= self.bytes {
            return Ok(());
        }
        let limit = if self.given {
            format!("--max-memory {}", fmt_limit(self.bytes))
        } else {
            format!(
                "{}, half of this machine's memory; --max-memory raises it",
                fmt_limit(self.bytes)
            )
        };
        Err(format!(
            "estimated peak memory {} for {what} is over the limit ({limit}); use fewer tasks, workers or --jobs, or a larger limit",
            crate::measure::fmt_bytes(estimate)
        ))
    }
}

/// What a run of `scn` is, for the refusal: "a run of friday-rush (1000
/// tasks of 3 steps, 22 nodes)".
pub fn describe(scn: &ValidScenario) -> String {
    let s = &scn.scenario;
    format!(
        "a run of {} ({} tasks of {} steps, {} nodes)",
        s.name,
        s.tasks.total(),
        s.tasks.steps_per_task(),
        u64::from(s.fleet.workers) + u64::from(s.fleet.reclaimers)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_their_units() {
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("2 GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size("800MB").unwrap(), 800_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        for bad in ["lots", "", "1 parsec", "-1GiB", "0", "1e400"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(fmt_limit(1 << 20), "1 MiB");
        assert_eq!(fmt_limit(3 << 29), "1.5 GiB");
        assert_eq!(fmt_limit(12 << 30), "12 GiB");
    }

    #[test]
    fn the_default_limit_is_half_the_machines_memory() {
        let meminfo = "MemTotal:       24684084 kB\nMemFree:         1000 kB\n";
        assert_eq!(mem_total_bytes(meminfo), Some(24_684_084 * 1024));
        assert_eq!(mem_total_bytes("MemFree: 1 kB\n"), None);
        let limit = MemoryLimit {
            bytes: 1 << 20,
            given: true,
        };
        let e = limit.check(2 << 20, "a run").unwrap_err();
        assert_eq!(
            e,
            "estimated peak memory 2.0 MiB for a run is over the limit (--max-memory 1 MiB); use fewer tasks, workers or --jobs, or a larger limit"
        );
        assert!(limit.check(1 << 20, "a run").is_ok());
    }
}
