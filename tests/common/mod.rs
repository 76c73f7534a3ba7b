#![allow(dead_code)]
use leasehold::{RunOutcome, Scenario, ValidScenario, simulate};
use leasehold_check::Invariant;
use leasehold_protocol::Variant;
use std::path::PathBuf;
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Run the `leasehold` binary in the package root.
pub fn leasehold(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the binary runs")
}

pub fn scenario(name: &str) -> ValidScenario {
    Scenario::load(&root().join("scenarios").join(format!("{name}.json")))
        .expect("shipped scenarios are valid")
}

/// Run `seeds` on all cores; outcomes in seed order.
pub fn run_seeds(
    scn: &ValidScenario,
    seeds: std::ops::RangeInclusive<u64>,
    variant: Variant,
) -> Vec<RunOutcome> {
    let seeds: Vec<u64> = seeds.collect();
    let jobs = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(seeds.len().max(1));
    let chunks: Vec<Vec<u64>> = (0..jobs)
        .map(|j| seeds.iter().copied().skip(j).step_by(jobs).collect())
        .collect();
    let mut out: Vec<RunOutcome> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|&seed| simulate(scn, seed, variant, None))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("no panics escape simulate"))
            .collect()
    });
    out.sort_by_key(|o| o.seed);
    out
}

/// The first seed in `seeds` on which `invariant` fires, if any.
pub fn first_firing(
    scn: &ValidScenario,
    seeds: std::ops::RangeInclusive<u64>,
    variant: Variant,
    invariant: Invariant,
) -> Option<RunOutcome> {
    seeds
        .map(|seed| simulate(scn, seed, variant, None))
        .find(|o| o.invariants.contains(&invariant))
}

/// Every shipped scenario, by name, in file-name order.
pub fn all_scenarios() -> Vec<(String, ValidScenario)> {
    leasehold::catalogue::scenario_files(&root().join("scenarios"))
        .expect("scenarios/ exists")
        .into_iter()
        .map(|p| {
            let s = Scenario::load(&p).expect("shipped scenarios are valid");
            (s.name().to_string(), s)
        })
        .collect()
}
