//! Shared by the bench binaries: what a batch of runs did, the bench/test
//! mode switch, and criterion's medians read back for the summaries.

#![allow(dead_code)]

use leasehold::{ValidScenario, simulate};
use leasehold_protocol::Variant;
use std::path::PathBuf;

/// `cargo bench` passes `--bench`; `cargo test --benches` does not, and then
/// every benchmark must be a quick smoke test (CI runs it, never timed).
pub fn bench_mode() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test")
}

/// What a batch of seeds did, learned from one untimed pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct Batch {
    pub seeds: u64,
    pub events: u64,
    pub sim_time_us: u64,
    /// Sum over events of the queue length: over `events`, the mean depth.
    pub queue_len_total: u64,
    /// Largest heap high-water mark of one run in the batch, in bytes.
    pub peak_heap_bytes: usize,
}

impl Batch {
    pub fn mean_queue_len(&self) -> usize {
        (self.queue_len_total / self.events.max(1)).max(1) as usize
    }

    /// Run `seeds` once each, measuring each run's heap peak with `peak_of`.
    pub fn learn(
        scn: &ValidScenario,
        seeds: impl Iterator<Item = u64>,
        peak_of: impl Fn(&mut dyn FnMut()) -> usize,
    ) -> Batch {
        let mut batch = Batch::default();
        for seed in seeds {
            let mut outcome = None;
            let peak = peak_of(&mut || outcome = Some(simulate(scn, seed, Variant::Correct, None)));
            let outcome = outcome.expect("ran");
            assert!(
                outcome.ok(),
                "{} seed {seed} failed: {:?}",
                scn.name(),
                outcome.violations.first()
            );
            let stats = outcome.stats.as_ref().expect("a healthy run has stats");
            batch.seeds += 1;
            batch.events += stats.events;
            batch.sim_time_us += stats.sim_time_us;
            batch.queue_len_total += stats.queue_len_total;
            batch.peak_heap_bytes = batch.peak_heap_bytes.max(peak);
        }
        batch
    }
}

/// The median time per iteration criterion measured for `group/function`,
/// in seconds, read from the `estimates.json` it writes under
/// `target/criterion` (or `$CRITERION_HOME`). `None` in test mode, where
/// criterion measures nothing.
pub fn criterion_median_s(group: &str, function: &str) -> Option<f64> {
    // Where criterion writes: `CRITERION_HOME`, else the cargo target
    // directory's `criterion` (a `CARGO_TARGET_DIR` moves it).
    let home = std::env::var_os("CRITERION_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| PathBuf::from("target"), PathBuf::from)
                .join("criterion")
        });
    let path = home
        .join(group)
        .join(function)
        .join("new")
        .join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let ns = v["median"]["point_estimate"].as_f64()?;
    Some(ns / 1e9)
}

/// The machine the figures come from, for the summaries.
pub fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or("unknown CPU".to_string(), |m| m.trim().to_string());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse().ok())
        .unwrap_or(0);
    format!(
        "{model}, {cores} cores, {}",
        leasehold::measure::fmt_bytes(mem_kib * 1024)
    )
}

/// Criterion as both benches run it. No plots: criterion draws them with
/// system fonts, and a machine without any (CI images, this one) would fail
/// the bench after timing it.
pub fn criterion_config() -> criterion::Criterion {
    criterion::Criterion::default().without_plots()
}
