//! `leasehold coverage`: which coverage points a range of seeds reaches.
//! It measures, it does not judge: exit 0 whatever the runs found (the
//! seeds that violated an invariant are counted and named), 1 only with
//! `--require-all` and an applicable protocol point that no run reached,
//! 2 for bad input.

use super::{EXIT_OK, EXIT_VIOLATION, bad_input, load_scenario, parse_variant};
use leasehold::coverage::CoverageTally;
use leasehold::lease_job::{LeaseJob, TimedSeedResult};
use leasehold::seeds::SeedRange;
use leasehold::sweep_args::parse_jobs;
use leasehold::sweep_engine::{SweepOptions, SweepSink, default_jobs, run_sweep};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct CoverageArgs {
    /// Scenario files (JSON); the points are summed over all of them.
    #[arg(required = true)]
    pub scenarios: Vec<PathBuf>,
    /// Seed range per scenario, both ends included: 1..1000 is 1,000 seeds.
    #[arg(long, value_name = "A..B", allow_hyphen_values = true)]
    pub seeds: String,
    /// Protocol variant (see `leasehold variants`).
    #[arg(long, default_value = "correct")]
    pub variant: String,
    /// Print one JSON object instead of the human report.
    #[arg(long)]
    pub json: bool,
    /// Threads running seeds (each seed runs on one thread) [default: the number of cores]
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub jobs: Option<String>,
    /// Exit 1 if a protocol point that some scenario's heartbeat mode can
    /// reach stays unreached.
    #[arg(long)]
    pub require_all: bool,
}

struct TallySink<'a> {
    tally: &'a mut CoverageTally,
    mode: leasehold_protocol::HeartbeatMode,
    failed: Vec<u64>,
}

impl SweepSink<TimedSeedResult> for TallySink<'_> {
    fn committed(&mut self, seed: u64, output: TimedSeedResult) {
        self.tally.add(&output.coverage, self.mode);
        if !output.result.ok() {
            self.failed.push(seed);
        }
    }
}

pub fn run(args: &CoverageArgs) -> u8 {
    let range = match SeedRange::parse(&args.seeds) {
        Ok(r) => r,
        Err(e) => return bad_input(format!("--seeds: {e}")),
    };
    let jobs = match args.jobs.as_deref().map(parse_jobs).transpose() {
        Ok(j) => j.unwrap_or_else(default_jobs),
        Err(e) => return bad_input(format!("--jobs: {e}")),
    };
    let variant = match parse_variant("--variant", &args.variant) {
        Ok(v) => v,
        Err(code) => return code,
    };
    // Every scenario read and checked before any seed runs.
    let mut scenarios = Vec::new();
    for path in &args.scenarios {
        match load_scenario(path) {
            Ok(scn) => scenarios.push(scn),
            Err(code) => return code,
        }
    }
    let mut tally = CoverageTally::new();
    let mut failed: Vec<(String, u64)> = Vec::new();
    for scn in &scenarios {
        let job = LeaseJob {
            scenario: scn,
            variant,
            check_determinism: false,
            watch: None,
            cost_budget: None,
        };
        let mut sink = TallySink {
            tally: &mut tally,
            mode: scn.scenario.protocol.heartbeat_mode,
            failed: Vec::new(),
        };
        run_sweep(
            &job,
            range.iter(),
            range.len(),
            &SweepOptions::with_jobs(jobs),
            &mut sink,
        );
        failed.extend(sink.failed.into_iter().map(|s| (scn.name().to_string(), s)));
    }
    let unreached = tally.unreached();
    if args.json {
        let mut json = tally.to_json();
        json["seed_range"] = range.to_string().into();
        json["variant"] = variant.name().into();
        json["scenarios"] = scenarios
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .into();
        json["failed_seeds"] = failed
            .iter()
            .map(|(s, seed)| serde_json::json!({"scenario": s, "seed": seed}))
            .collect::<Vec<_>>()
            .into();
        println!("{json}");
    } else {
        let names: Vec<&str> = scenarios.iter().map(|s| s.name()).collect();
        println!(
            "coverage of {} (seeds {range}, variant {})",
            names.join(", "),
            variant.name()
        );
        for line in tally.report_lines(true) {
            println!("{line}");
        }
        if !failed.is_empty() {
            let shown: Vec<String> = failed
                .iter()
                .take(10)
                .map(|(s, seed)| format!("{s} seed {seed}"))
                .collect();
            println!(
                "{} runs violated an invariant (counted all the same; `leasehold run` tells why): {}{}",
                failed.len(),
                shown.join(", "),
                if failed.len() > shown.len() {
                    ", ..."
                } else {
                    ""
                }
            );
        }
    }
    if args.require_all && !unreached.is_empty() {
        eprintln!(
            "UNREACHED: {} coverage point(s) no run reached: {}",
            unreached.len(),
            unreached
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return EXIT_VIOLATION;
    }
    EXIT_OK
}
