use super::{EXIT_OK, EXIT_VIOLATION, bad_input, load_scenario, parse_variant, replay_command};
use leasehold::measure;
use leasehold::seeds::SeedRange;
use leasehold::simulate;
use std::path::Path;
use std::time::Instant;

pub fn sweep(
    scenario_path: &Path,
    seeds: &str,
    variant: &str,
    json: bool,
    check_determinism: bool,
) -> u8 {
    let range = match SeedRange::parse(seeds) {
        Ok(r) => r,
        Err(e) => return bad_input(format!("--seeds: {e}")),
    };
    let scn = match load_scenario(scenario_path) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let variant = match parse_variant(variant) {
        Ok(v) => v,
        Err(code) => return code,
    };
    // Wall time here measures the tool, never the simulation (which has none).
    let started = Instant::now();
    let mut failures = Vec::new();
    let mut events: u64 = 0;
    let mut sim_time_us: u64 = 0;
    for seed in range.iter() {
        let outcome = simulate(&scn, seed, variant, None);
        events += outcome.events();
        sim_time_us += outcome.sim_time_us();
        let mut invariants: Vec<String> = outcome
            .invariants
            .iter()
            .map(|i| i.name().to_string())
            .collect();
        if check_determinism {
            let again = simulate(&scn, seed, variant, None);
            events += again.events();
            sim_time_us += again.sim_time_us();
            if again.trace_hash_hex() != outcome.trace_hash_hex()
                || again.events() != outcome.events()
            {
                invariants.push("determinism".to_string());
            }
        }
        if !invariants.is_empty() {
            let replay = replay_command(scenario_path, seed, variant);
            if !json {
                println!("seed {seed}: {}", invariants.join(", "));
                if let Some(v) = outcome.violations.first() {
                    println!(
                        "  {} at {:.3} s: {}",
                        v.invariant,
                        v.time_ms as f64 / 1e3,
                        v.message
                    );
                }
                println!("  replay: {replay}");
            }
            failures.push(
                serde_json::json!({"seed": seed, "invariants": invariants, "replay": replay}),
            );
        }
    }
    let elapsed_s = started.elapsed().as_secs_f64().max(1e-9);
    let seeds_per_sec = range.len() as f64 / elapsed_s;
    let events_per_sec = events as f64 / elapsed_s;
    let time_compression = sim_time_us as f64 / 1e6 / elapsed_s;
    let peak_rss_bytes = measure::peak_rss_bytes();
    if json {
        println!(
            "{}",
            serde_json::json!({
                "scenario": scn.name(),
                "variant": variant.name(),
                "seeds": range.len(),
                "failed": failures.len(),
                "failures": failures,
                "seeds_per_sec": seeds_per_sec,
                "events_per_sec": events_per_sec,
                "events": events,
                "elapsed_s": elapsed_s,
                "sim_time_s": sim_time_us as f64 / 1e6,
                "time_compression": time_compression,
                "peak_rss_bytes": peak_rss_bytes,
            })
        );
    } else {
        println!(
            "swept {} seeds ({range}) of {}, variant {}: {} failed; {:.1} s, {:.1} seeds/s, {:.2} M events/s{}",
            range.len(),
            scn.name(),
            variant.name(),
            failures.len(),
            elapsed_s,
            seeds_per_sec,
            events_per_sec / 1e6,
            measure::fmt_compression_and_memory(time_compression, peak_rss_bytes)
        );
    }
    if failures.is_empty() {
        EXIT_OK
    } else {
        EXIT_VIOLATION
    }
}
