//! `leasehold live`: a scenario's fleet run for real against a SQL store, then judged.

use super::{EXIT_OK, EXIT_VIOLATION, bad_input, load_run_inputs};
use leasehold::live::{LiveOptions, LiveReport, MAX_SPEED, live};
use leasehold::trace::{LiveHeader, TraceEnd, TraceHeader, TraceWriter};
use leasehold::{RunOutcome, replay_command, shell_word};
use leasehold_protocol::{DocKey, DocValue, LeaseEvent};
use leasehold_sim::Observer;
use leasehold_store_sql::StoreUrl;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct LiveArgs<'a> {
    pub scenario: &'a Path,
    pub store: &'a str,
    pub seed: u64,
    pub variant: &'a str,
    pub speed: u64,
    pub json: bool,
    pub trace: Option<&'a Path>,
    pub reset: bool,
}

/// Said with every live verdict: what the seed fixes and what it does not.
pub const NOT_DETERMINISTIC: &str = "a live run is not deterministic: the seed fixes the faults' draw, not the threads' interleaving; running it again is another run";

pub fn run(args: &LiveArgs<'_>) -> u8 {
    let (scn, variant) = match load_run_inputs(args.scenario, args.variant) {
        Ok(inputs) => inputs,
        Err(code) => return code,
    };
    if !(1..=MAX_SPEED).contains(&args.speed) {
        return bad_input(format!(
            "--speed: {} is not between 1 and {MAX_SPEED}",
            args.speed
        ));
    }
    let url = match StoreUrl::parse(args.store) {
        Ok(url) => url,
        Err(e) => return bad_input(format!("--store: {e}")),
    };
    if let StoreUrl::Sqlite(path) = &url
        && let Err(code) = super::not_the_input("--store", path, args.scenario)
    {
        return code;
    }
    if let Some(path) = args.trace
        && let Err(code) = super::output_file("--trace", path, &[args.scenario])
    {
        return code;
    }
    let mut writer = match args.trace {
        None => None,
        Some(path) => {
            let file = match std::fs::File::create(path) {
                Ok(f) => f,
                Err(e) => return bad_input(format!("--trace {}: {e}", path.display())),
            };
            let mut header = TraceHeader::new(&scn.source, args.seed, variant.name());
            header.live = Some(LiveHeader {
                store: url.shown(),
                speed: args.speed,
                note: NOT_DETERMINISTIC.to_string(),
            });
            match TraceWriter::new(BufWriter::new(file), &header) {
                Ok(w) => Some(w),
                Err(e) => return bad_input(format!("--trace {}: {e}", path.display())),
            }
        }
    };
    // Ctrl-C: the fleet stops and the verdict so far is printed. A second
    // handler cannot be set (a test process runs several): then none is.
    let interrupt = Arc::new(AtomicBool::new(false));
    {
        let flag = Arc::clone(&interrupt);
        let _ = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed));
    }
    let opts = LiveOptions {
        store: url.clone(),
        seed: args.seed,
        variant,
        speed: args.speed,
        reset: args.reset,
    };
    let result = live(
        &scn,
        &opts,
        writer
            .as_mut()
            .map(|w| w as &mut dyn Observer<DocKey, DocValue, LeaseEvent>),
        &interrupt,
    );
    let (outcome, report) = match result {
        Ok(done) => done,
        Err(e) => return bad_input(format!("--store {e}")),
    };
    if let (Some(w), Some(path)) = (writer, args.trace) {
        let mut end = TraceEnd::of(&outcome);
        end.end_us = Some(outcome.sim_time_us());
        if let Err(e) = w.finish(end) {
            return bad_input(format!("--trace {}: {e}", path.display()));
        }
    }
    let again = live_command(args, &url);
    let simulated = replay_command(args.scenario, args.seed, variant);
    if args.json {
        let mut value = outcome.to_json();
        value["live"] = serde_json::to_value(&report).expect("the report serialises");
        value["deterministic"] = serde_json::Value::Bool(false);
        value["note"] = serde_json::Value::String(NOT_DETERMINISTIC.to_string());
        value["replay"] = serde_json::Value::String(again);
        value["simulate"] = serde_json::Value::String(simulated);
        println!("{value}");
    } else {
        print_report(&outcome, &report, &again, &simulated, args.trace);
    }
    if outcome.ok() {
        EXIT_OK
    } else {
        EXIT_VIOLATION
    }
}

/// The command that runs this live run again (another run, not a replay).
fn live_command(args: &LiveArgs<'_>, url: &StoreUrl) -> String {
    let store = match url {
        StoreUrl::Sqlite(path) => format!("sqlite:{}", shell_word(path)),
        StoreUrl::Postgres(_) => shell_word(Path::new(&url.shown())),
    };
    format!(
        "leasehold live {} --store {store} --seed {} --variant {} --speed {} --reset",
        shell_word(args.scenario),
        args.seed,
        args.variant,
        args.speed
    )
}

fn print_report(
    outcome: &RunOutcome,
    report: &LiveReport,
    again: &str,
    simulated: &str,
    trace: Option<&Path>,
) {
    let stats = outcome.stats.as_ref();
    let secs = stats.map_or(0.0, |s| s.sim_time_us as f64 / 1e6);
    let names: Vec<&str> = outcome.invariants.iter().map(|i| i.name()).collect();
    let head = format!(
        "{} seed {} variant {} on {} at {}x",
        outcome.scenario, outcome.seed, outcome.variant, report.store, report.speed
    );
    if outcome.ok() {
        println!(
            "ok (live): {head}: {}/{} tasks done, {} records, {secs:.1} s of scenario time in {:.1} s, {} faults",
            outcome.tasks_done,
            outcome.tasks_total,
            outcome.events(),
            report.wall_s,
            stats.map_or(0, |s| s.faults)
        );
    } else {
        if names.is_empty() {
            println!("CUT SHORT (live): {head}");
        } else {
            println!("VIOLATION {} (live): {head}", names.join(", "));
        }
        for v in outcome.violations.iter().take(8) {
            println!(
                "  {} at {:.3} s: {}",
                v.invariant,
                v.time_ms as f64 / 1e3,
                v.message
            );
        }
        if outcome.violations.len() > 8 {
            println!("  ... {} more", outcome.violations.len() - 8);
        }
        if let Some(cut) = &outcome.cut_short {
            println!("  cut short: {}", cut.line());
        }
        println!(
            "  ({}/{} tasks done, {} records, {secs:.1} s of scenario time in {:.1} s)",
            outcome.tasks_done,
            outcome.tasks_total,
            outcome.events(),
            report.wall_s
        );
    }
    println!(
        "  store: {} requests, {:.0}/s; {} failed by the store{}; {} reconnects; {} outcomes unknown; {} replies later than the scenario's delays (recorded as delayed); {} host stalls (recorded as pauses)",
        report.store_requests,
        report.store_requests_per_s,
        report.store_errors,
        report
            .first_store_error
            .as_ref()
            .map_or(String::new(), |e| format!(" (first: {e})")),
        report.reconnects,
        report.unknown_outcomes,
        report.late_replies,
        report.host_stalls
    );
    if let Some(s) = stats {
        let st = &s.store;
        println!(
            "  store requests by kind: {} gets, {} scans, {} index scans, {} creates, {} conditional puts, {} unconditional puts, {} deletes; {} conflicts, {} unavailable",
            st.gets,
            st.scans,
            st.index_scans,
            st.creates,
            st.conditional_puts,
            st.unconditional_puts,
            st.deletes,
            st.conflicts,
            st.unavailable
        );
    }
    if report.store_errors > 0 {
        println!(
            "  STORE OUTAGE (real): the store itself failed {} requests; each was answered unavailable, nothing applied, and recorded so (first: {})",
            report.store_errors,
            report.first_store_error.as_deref().unwrap_or("-")
        );
    }
    if report.unknown_outcomes > 0 {
        println!(
            "  {} writes' outcome stayed unknown (the store went away during their commit and never came back to say)",
            report.unknown_outcomes
        );
    }
    println!("  note: {NOT_DETERMINISTIC}");
    match trace {
        Some(path) => println!(
            "  its records: {} (`leasehold replay --check`, `explain`, `export` read it)",
            path.display()
        ),
        None => println!("  keep its records with --trace FILE"),
    }
    if !outcome.ok() {
        println!("live: {again}");
        println!("simulate: {simulated}");
    }
}
