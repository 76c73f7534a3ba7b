//! `leasehold cost-budget`: measure the correct protocol's store requests
//! on scenarios over a range of seeds, and write each scenario's budget
//! (its highest figures, the margin and the slack) into a budget file.

use super::run_checks::RunChecksArgs;
use super::{EXIT_OK, bad_input, load_scenario};
use leasehold::cost_budget::{
    BudgetFile, CostBudget, DEFAULT_MARGIN, DEFAULT_SLACK_OPS, Figures, MAX_MEASURED_SEEDS,
    measure, parse_margin,
};
use leasehold::seeds::SeedRange;
use leasehold::sweep_args::parse_jobs;
use leasehold::sweep_engine::default_jobs;
use leasehold::watchdog::{LeaseWatch, stuck_outcome, supervise};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct CostBudgetArgs {
    /// Scenario files to measure (the correct protocol must pass every seed).
    #[arg(required = true, value_name = "SCENARIO")]
    pub scenarios: Vec<PathBuf>,
    /// Seeds to measure over, both ends included.
    #[arg(long, value_name = "A..B", allow_hyphen_values = true)]
    pub seeds: String,
    /// Each figure's budget is its highest over the seeds times this.
    #[arg(long, default_value_t = DEFAULT_MARGIN.to_string(), allow_hyphen_values = true)]
    pub margin: String,
    /// Store requests allowed on top of every figure's budget.
    #[arg(long, default_value_t = DEFAULT_SLACK_OPS)]
    pub slack_ops: u64,
    /// Write the budgets into FILE, replacing the lines for these scenarios
    /// and keeping the others (e.g. scenarios/cost-budget.jsonl).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Threads (each run stays single-threaded) [default: every core]
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub jobs: Option<String>,
    /// Print the budgets as JSON Lines instead of the human report.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub checks: RunChecksArgs,
}

pub fn run(args: &CostBudgetArgs) -> u8 {
    let seeds = match SeedRange::parse(&args.seeds) {
        Ok(s) if s.len() <= MAX_MEASURED_SEEDS => s,
        Ok(s) => {
            return bad_input(format!(
                "--seeds: {s} has more than {MAX_MEASURED_SEEDS} seeds"
            ));
        }
        Err(e) => return bad_input(format!("--seeds: {e}")),
    };
    let margin = match parse_margin(&args.margin) {
        Ok(m) => m,
        Err(e) => return bad_input(format!("--margin: {e}")),
    };
    let jobs = match args.jobs.as_deref().map(parse_jobs).transpose() {
        Ok(jobs) => jobs.unwrap_or_else(default_jobs),
        Err(e) => return bad_input(format!("--jobs: {e}")),
    };
    let run_timeout = match args.checks.run_timeout() {
        Ok(t) => t,
        Err(code) => return code,
    };
    let mut loaded = Vec::new();
    for path in &args.scenarios {
        match load_scenario(path) {
            Ok(scn) => loaded.push((path.as_path(), scn)),
            Err(code) => return code,
        }
    }
    let mut file = BudgetFile::default();
    if let Some(out) = &args.out {
        let inputs: Vec<&Path> = args.scenarios.iter().map(PathBuf::as_path).collect();
        if let Err(code) = super::output_file("--out", out, &inputs) {
            return code;
        }
        if out.exists() {
            file = match BudgetFile::read(out) {
                Ok(f) => f,
                Err(e) => return bad_input(format!("--out {e}")),
            };
        }
        file.path = out.clone();
    }
    let watch = LeaseWatch::new(run_timeout);
    let measured = supervise(
        &watch,
        || {
            let mut measured = Vec::new();
            for (path, scn) in &loaded {
                match measure(path, scn, seeds, jobs, Some(&watch)) {
                    Ok(m) => measured.push(m),
                    Err(e) => return Err(e),
                }
            }
            Ok(measured)
        },
        |stuck, elapsed| {
            let outcome = stuck_outcome(&stuck, elapsed, run_timeout);
            eprintln!(
                "error: {} seed {}: {}",
                stuck.scenario.name(),
                stuck.seed,
                outcome.violations[0].message
            );
            super::EXIT_VIOLATION
        },
    );
    let measured = match measured {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return super::EXIT_VIOLATION;
        }
    };
    for ((_, scn), m) in loaded.iter().zip(&measured) {
        let budget = CostBudget::new(scn, seeds, margin, args.slack_ops, m.max);
        if args.json {
            println!(
                "{}",
                serde_json::to_string(&budget).expect("a budget serialises")
            );
        } else {
            println!(
                "{} ({} heartbeat mode), seeds {seeds}, margin {margin}, slack {} ops:",
                scn.name(),
                budget.heartbeat_mode.name(),
                args.slack_ops
            );
            println!(
                "  {:<36} {:>10} {:>10} {:>10} {:>10}",
                "figure", "median", "p99.9", "highest", "budget"
            );
            for (i, name) in Figures::NAMES.iter().enumerate() {
                let highest = m.max.to_array()[i];
                println!(
                    "  {name:<36} {:>10.3} {:>10.3} {highest:>10.3} {:>10.3}",
                    m.quantile(i, 0.5),
                    m.quantile(i, 0.999),
                    highest * margin
                );
            }
        }
        file.put(budget);
    }
    if let Some(out) = &args.out
        && let Err(e) = std::fs::write(out, file.text())
    {
        return bad_input(format!("--out {}: {e}", out.display()));
    }
    EXIT_OK
}
