//! `leasehold run`: one seed, its report, and optionally its trace.

use super::{EXIT_OK, EXIT_VIOLATION, RunChecksArgs, bad_input, load_run_inputs};
use leasehold::cost_budget::{self, COST_BUDGET, CostBudget};
use leasehold::measure::{self, Throughput};
use leasehold::replay_command;
use leasehold::trace::{TraceEnd, TraceHeader, TraceWriter};
use leasehold::watchdog::{LeaseRun, LeaseWatch, stuck_outcome, supervise};
use leasehold::{RunOutcome, simulate};
use leasehold_protocol::{DocKey, DocValue, LeaseEvent};
use leasehold_sim::Observer;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Violations printed in full in the human report.
const SHOWN_VIOLATIONS: usize = 8;

/// `leasehold run`'s arguments.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Scenario file (JSON), e.g. scenarios/friday-rush.json
    pub scenario: PathBuf,
    /// The seed; the run is a pure function of scenario, seed and variant.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub seed: u64,
    /// Protocol variant (see `leasehold variants`).
    #[arg(long, default_value = "correct")]
    pub variant: String,
    /// Print one JSON object instead of the human report.
    #[arg(long)]
    pub json: bool,
    /// Write the run as JSON Lines to FILE (replay it with `leasehold replay`).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Run twice and fail on any difference in the trace.
    #[arg(long)]
    pub check_determinism: bool,
    /// Refuse to start a run whose estimated peak memory is over SIZE
    /// (512MiB, 4GiB) [default: half of this machine's memory]
    #[arg(long, value_name = "SIZE")]
    pub max_memory: Option<String>,
    #[command(flatten)]
    pub checks: RunChecksArgs,
}

pub fn run(args: &RunArgs) -> u8 {
    let scenario_path = args.scenario.as_path();
    let (seed, json, check_determinism) = (args.seed, args.json, args.check_determinism);
    let (variant, trace) = (args.variant.as_str(), args.trace.as_deref());
    let (max_memory, checks) = (args.max_memory.as_deref(), &args.checks);
    let run_timeout = match checks.run_timeout() {
        Ok(t) => t,
        Err(code) => return code,
    };
    let (scn, variant) = match load_run_inputs(scenario_path, variant) {
        Ok(inputs) => inputs,
        Err(code) => return code,
    };
    let estimate = leasehold::memory_estimate::run_peak_bytes(&scn);
    let what = leasehold::memory_estimate::describe(&scn);
    if let Err(code) = super::check_memory(max_memory, estimate, &what) {
        return code;
    }
    let cost_budget = match checks.budget_for(scenario_path, &scn) {
        Ok(budget) => budget,
        Err(code) => return code,
    };
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
    // The run (and its second, with --check-determinism) under the
    // watchdog: a step that never returns is reported, not waited on.
    let watch = LeaseWatch::new(run_timeout);
    let this_run = LeaseRun {
        file: scenario_path,
        scenario: &scn,
        seed,
        variant,
    };
    supervise(
        &watch,
        || {
            // Wall time measures the tool (trace writing included, when
            // asked), never the simulation, which has none.
            let started = Instant::now();
            let outcome = watch.watch(this_run, || {
                simulate(
                    &scn,
                    seed,
                    variant,
                    writer
                        .as_mut()
                        .map(|w| w as &mut dyn Observer<DocKey, DocValue, LeaseEvent>),
                )
            });
            let again = || watch.watch(this_run, || simulate(&scn, seed, variant, None));
            report(
                this_run,
                outcome,
                started,
                writer,
                trace,
                check_determinism.then_some(&again as &dyn Fn() -> RunOutcome),
                cost_budget.as_ref(),
                json,
            )
        },
        |stuck, elapsed| {
            let outcome = stuck_outcome(&stuck, elapsed, run_timeout);
            let replay = replay_command(stuck.file, stuck.seed, stuck.variant);
            if json {
                let mut value = outcome.to_json();
                value["replay"] = serde_json::Value::String(replay);
                println!("{value}");
            } else {
                print_report(&outcome, &replay, None);
            }
            EXIT_VIOLATION
        },
    )
}

/// What one run found, printed; its exit code. `again` re-runs it (to check
/// determinism).
#[allow(clippy::too_many_arguments)]
fn report(
    this_run: LeaseRun<'_>,
    outcome: RunOutcome,
    started: Instant,
    writer: Option<TraceWriter<BufWriter<std::fs::File>>>,
    trace: Option<&Path>,
    again: Option<&dyn Fn() -> RunOutcome>,
    cost_budget: Option<&CostBudget>,
    json: bool,
) -> u8 {
    let LeaseRun {
        file: scenario_path,
        scenario: scn,
        seed,
        variant,
    } = this_run;
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
    if let Some(again) = again {
        let again = again();
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
    // Judged after the trace's end line: the trace holds what the run
    // recorded and its checkers found; the budget is a judgement on top.
    let cost = cost_budget.and_then(|b| cost_budget::judge(scn, &outcome, b).map(|v| (b, v)));
    let over_budget = cost.as_ref().and_then(|(_, v)| v.message.clone());
    let replay = replay_command(scenario_path, seed, variant);
    if json {
        let mut value = outcome.to_json();
        value["replay"] = serde_json::Value::String(replay);
        if again.is_some() {
            value["deterministic"] = serde_json::Value::Bool(determinism_error.is_none());
        }
        if let Some((budget, verdict)) = &cost {
            value["cost_budget"] = serde_json::json!({
                "ok": verdict.message.is_none(),
                "message": verdict.message,
                "figures": verdict.figures,
                "over": verdict.over,
                "seeds": budget.seeds,
                "margin": budget.margin,
                "slack_ops": budget.slack_ops,
                "measured": budget.measured,
            });
            if verdict.message.is_some() {
                value["ok"] = serde_json::Value::Bool(false);
                if let Some(list) = value["invariants"].as_array_mut() {
                    list.push(serde_json::Value::String(COST_BUDGET.to_string()));
                }
            }
        }
        value["wall_s"] = serde_json::json!(figures.wall_s);
        value["events_per_sec"] = serde_json::json!(figures.events_per_sec());
        value["time_compression"] = serde_json::json!(figures.time_compression());
        value["peak_rss_bytes"] = serde_json::json!(peak_rss_bytes);
        println!("{value}");
    } else {
        print_report(&outcome, &replay, over_budget.as_deref());
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
    if outcome.ok() && determinism_error.is_none() && over_budget.is_none() {
        EXIT_OK
    } else {
        EXIT_VIOLATION
    }
}

/// The human report of a run; `over_budget`, the cost budget's report when
/// the run went over it.
pub fn print_report(outcome: &RunOutcome, replay: &str, over_budget: Option<&str>) {
    let stats = outcome.stats.as_ref();
    let sim_s = stats.map_or(0.0, |s| s.sim_time_us as f64 / 1e6);
    if outcome.ok() && over_budget.is_none() {
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
    let mut names: Vec<&str> = outcome.invariants.iter().map(|i| i.name()).collect();
    names.extend(over_budget.map(|_| COST_BUDGET));
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
    if let Some(message) = over_budget {
        println!("  {COST_BUDGET} at {sim_s:.3} s: {message}");
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
