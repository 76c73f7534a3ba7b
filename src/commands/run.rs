use super::{EXIT_OK, EXIT_VIOLATION, bad_input, load_run_inputs};
use leasehold::measure::{self, Throughput};
use leasehold::replay_command;
use leasehold::trace::{TraceEnd, TraceHeader, TraceWriter};
use leasehold::{RunOutcome, simulate};
use leasehold_protocol::{DocKey, DocValue, LeaseEvent};
use leasehold_sim::Observer;
use std::io::BufWriter;
use std::path::Path;
use std::time::Instant;

/// Violations printed in full in the human report.
const SHOWN_VIOLATIONS: usize = 8;

pub fn run(
    scenario_path: &Path,
    seed: u64,
    variant: &str,
    json: bool,
    trace: Option<&Path>,
    check_determinism: bool,
    max_memory: Option<&str>,
) -> u8 {
    let (scn, variant) = match load_run_inputs(scenario_path, variant) {
        Ok(inputs) => inputs,
        Err(code) => return code,
    };
    let estimate = leasehold::memory_estimate::run_peak_bytes(&scn);
    let what = leasehold::memory_estimate::describe(&scn);
    if let Err(code) = super::check_memory(max_memory, estimate, &what) {
        return code;
    }
    if let Some(path) = trace
        && let Err(code) = super::not_the_input("--trace", path, scenario_path)
    {
        return code;
    }
    let mut writer = match trace {
        None => None,
        Some(path) => {
            let file = match std::fs::File::create(path) {
                Ok(f) => f,
                Err(e) => return bad_input(format!("--trace {}: {e}", path.display())),
            };
            let header = TraceHeader::new(&scn.source, seed, variant.name());
            match TraceWriter::new(BufWriter::new(file), &header) {
                Ok(w) => Some(w),
                Err(e) => return bad_input(format!("--trace {}: {e}", path.display())),
            }
        }
    };
    // Wall time measures the tool (trace writing included, when asked),
    // never the simulation, which has none.
    let started = Instant::now();
    let outcome = simulate(
        &scn,
        seed,
        variant,
        writer
            .as_mut()
            .map(|w| w as &mut dyn Observer<DocKey, DocValue, LeaseEvent>),
    );
    let mut figures = Throughput {
        wall_s: started.elapsed().as_secs_f64(),
        ..Throughput::default()
    };
    figures.add_run(outcome.events(), outcome.sim_time_us());
    let peak_rss_bytes = measure::peak_rss_bytes();
    if let (Some(w), Some(path)) = (writer, trace)
        && let Err(e) = w.finish(TraceEnd::of(&outcome))
    {
        return bad_input(format!("--trace {}: {e}", path.display()));
    }
    let mut determinism_error = None;
    if check_determinism {
        let again = simulate(&scn, seed, variant, None);
        if again.trace_hash_hex() != outcome.trace_hash_hex() || again.events() != outcome.events()
        {
            determinism_error = Some(format!(
                "NONDETERMINISM seed {seed}: first run {} ({} events), second run {} ({} events)",
                outcome.trace_hash_hex(),
                outcome.events(),
                again.trace_hash_hex(),
                again.events()
            ));
        }
    }
    let replay = replay_command(scenario_path, seed, variant);
    if json {
        let mut value = outcome.to_json();
        value["replay"] = serde_json::Value::String(replay);
        if check_determinism {
            value["deterministic"] = serde_json::Value::Bool(determinism_error.is_none());
        }
        value["wall_s"] = serde_json::json!(figures.wall_s);
        value["events_per_sec"] = serde_json::json!(figures.events_per_sec());
        value["time_compression"] = serde_json::json!(figures.time_compression());
        value["peak_rss_bytes"] = serde_json::json!(peak_rss_bytes);
        println!("{value}");
    } else {
        print_report(&outcome, &replay);
        println!(
            "  {:.3} s wall, {:.2} M events/s{}",
            figures.wall_s,
            figures.events_per_sec() / 1e6,
            measure::fmt_compression_and_memory(figures.time_compression(), peak_rss_bytes)
        );
        if let Some(e) = &determinism_error {
            println!("{e}");
        }
    }
    if outcome.ok() && determinism_error.is_none() {
        EXIT_OK
    } else {
        EXIT_VIOLATION
    }
}

pub fn print_report(outcome: &RunOutcome, replay: &str) {
    let stats = outcome.stats.as_ref();
    let sim_s = stats.map_or(0.0, |s| s.sim_time_us as f64 / 1e6);
    if outcome.ok() {
        println!(
            "ok: {} seed {} variant {}: {}/{} tasks done, {} events, {:.1} s simulated, {} faults, trace {}",
            outcome.scenario,
            outcome.seed,
            outcome.variant,
            outcome.tasks_done,
            outcome.tasks_total,
            outcome.events(),
            sim_s,
            stats.map_or(0, |s| s.faults),
            outcome.trace_hash_hex()
        );
        return;
    }
    let names: Vec<&str> = outcome.invariants.iter().map(|i| i.name()).collect();
    if names.is_empty() {
        println!(
            "CUT SHORT: {} seed {} variant {}",
            outcome.scenario, outcome.seed, outcome.variant
        );
    } else {
        println!(
            "VIOLATION {}: {} seed {} variant {}",
            names.join(", "),
            outcome.scenario,
            outcome.seed,
            outcome.variant
        );
    }
    for v in outcome.violations.iter().take(SHOWN_VIOLATIONS) {
        println!(
            "  {} at {:.3} s: {}",
            v.invariant,
            v.time_ms as f64 / 1e3,
            v.message
        );
    }
    if outcome.violations.len() > SHOWN_VIOLATIONS {
        println!("  ... {} more", outcome.violations.len() - SHOWN_VIOLATIONS);
    }
    if let Some(cut) = &outcome.cut_short {
        println!("  cut short: {}", cut.line());
    }
    println!(
        "  ({}/{} tasks done, {} events, {:.1} s simulated, trace {})",
        outcome.tasks_done,
        outcome.tasks_total,
        outcome.events(),
        sim_s,
        outcome.trace_hash_hex()
    );
    println!("replay: {replay}");
}
