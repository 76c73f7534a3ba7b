//! `leasehold sweep`: every seed of a range (or of one shard of it) on all
//! cores, failures reported in seed order with their replay commands.

use super::progress::{ProgressMode, ProgressReporter};
use super::shrink::{failure_file_name, write_failure_file};
use super::{EXIT_OK, EXIT_VIOLATION, RunChecksArgs, bad_input, load_run_inputs};
use leasehold::SeedResult;
use leasehold::coverage::CoverageTally;
use leasehold::lease_job::{LeaseJob, TimedSeedResult, replay_command, scenario_hash};
use leasehold::measure::{self, Throughput};
use leasehold::results_file::{
    ResultContext, ResultLine, ResultsRead, ResultsWriter, read_results,
};
use leasehold::seeds::SeedRange;
use leasehold::shard::Shard;
use leasehold::shrink::ShrinkLimits;
use leasehold::sweep_args::{parse_duration, parse_jobs, parse_positive};
use leasehold::sweep_engine::{
    Progress, StopReason, SweepOptions, SweepSink, default_jobs, run_sweep,
};
use leasehold::sweep_summary::{SweepSummary, write_junit};
use leasehold::watchdog::{LeaseRun, LeaseWatch, stuck_outcome, supervise};
use leasehold_protocol::Variant;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// Scenario file (JSON), e.g. scenarios/friday-rush.json
    pub scenario: PathBuf,
    /// Seed range, both ends included: 1..1000 is 1,000 seeds.
    #[arg(long, value_name = "A..B", allow_hyphen_values = true)]
    pub seeds: String,
    /// Protocol variant (see `leasehold variants`).
    #[arg(long, default_value = "correct")]
    pub variant: String,
    /// Print one JSON object instead of the human report.
    #[arg(long)]
    pub json: bool,
    /// Run every seed twice and fail on any difference.
    #[arg(long)]
    pub check_determinism: bool,
    /// Threads running seeds (each seed runs on one thread) [default: the number of cores]
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub jobs: Option<String>,
    /// Sweep only part K of N of the range (seeds dealt round-robin, K from 1);
    /// auto/N takes K from JOB_COMPLETION_INDEX (0-based) as Kubernetes sets it.
    #[arg(long, value_name = "K/N", allow_hyphen_values = true)]
    pub shard: Option<String>,
    /// Append one JSON line per finished seed to FILE, as each finishes.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Skip the seeds already in the --out file (same scenario and variant).
    #[arg(long)]
    pub resume: bool,
    /// Stop handing out seeds after this long (30s, 10m, 1h); running seeds finish.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub time_budget: Option<String>,
    /// Stop after N failing seeds (the first N in seed order).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub stop_after: Option<String>,
    /// Write a JUnit XML report to FILE (one test case: this scenario and variant).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Progress display on stderr.
    #[arg(long, value_enum, default_value = "auto", value_name = "MODE")]
    pub progress: ProgressMode,
    /// How often plain progress lines are printed.
    #[arg(
        long,
        default_value = "10s",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub progress_every: String,
    /// Shrink every failing seed to a minimal run and write its failure file
    /// (NAME-seedN-VARIANT.failure.json) into --shrink-dir.
    #[arg(long)]
    pub shrink: bool,
    /// Where --shrink writes failure files (an existing directory).
    #[arg(long, default_value = ".", value_name = "DIR", requires = "shrink")]
    pub shrink_dir: PathBuf,
    /// Refuse to start when the estimated peak memory of --jobs runs at
    /// once is over SIZE (512MiB, 4GiB) [default: half of this machine's
    /// memory]
    #[arg(long, value_name = "SIZE")]
    pub max_memory: Option<String>,
    /// Report the coverage points the seeds reached (and the named ones no
    /// seed reached); with --out, each line carries its seed's points, so
    /// `merge` can sum them over shards.
    #[arg(long)]
    pub coverage: bool,
    #[command(flatten)]
    pub checks: RunChecksArgs,
}

/// Every input, checked before anything runs.
struct SweepPlan {
    range: SeedRange,
    shard: Shard,
    jobs: usize,
    time_budget: Option<Duration>,
    stop_after: Option<u64>,
    progress_every: Duration,
    run_timeout: Duration,
}

fn plan(args: &SweepArgs) -> Result<SweepPlan, u8> {
    if args.resume && args.out.is_none() {
        return Err(bad_input(
            "--resume needs --out FILE: the results file whose seeds to skip",
        ));
    }
    let range = SeedRange::parse(&args.seeds).map_err(|e| bad_input(format!("--seeds: {e}")))?;
    let shard = optional("--shard", &args.shard, |text| {
        Shard::parse(text, |name| std::env::var(name).ok())
    })?
    .unwrap_or(Shard::ALL);
    let jobs = optional("--jobs", &args.jobs, parse_jobs)?.unwrap_or_else(default_jobs);
    let time_budget = optional("--time-budget", &args.time_budget, parse_duration)?;
    let stop_after = optional("--stop-after", &args.stop_after, parse_positive)?;
    let progress_every = parse_duration(&args.progress_every)
        .map_err(|e| bad_input(format!("--progress-every: {e}")))?;
    let run_timeout = args.checks.run_timeout()?;
    // Checked before the sweep, not after it: a typo here must not cost the
    // sweep's minutes and then lose the failure files it was run for.
    if args.shrink
        && let Err(e) = super::writable_dir(&args.shrink_dir)
    {
        return Err(bad_input(format!(
            "--shrink-dir {}: {e}",
            args.shrink_dir.display()
        )));
    }
    Ok(SweepPlan {
        range,
        shard,
        jobs,
        time_budget,
        stop_after,
        progress_every,
        run_timeout,
    })
}

/// An optional flag's value, parsed; a bad one exits 2 naming the flag.
fn optional<T>(
    flag: &str,
    text: &Option<String>,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<Option<T>, u8> {
    text.as_deref()
        .map(parse)
        .transpose()
        .map_err(|e| bad_input(format!("{flag}: {e}")))
}

/// The results already in the --out file, read strictly: a file `merge`
/// would refuse is refused before anything is appended to it, and so is
/// one holding results of this scenario name and variant for another text
/// of the scenario (an edited file), with or without `--resume`.
fn existing_results(path: &Path, context: &ResultContext) -> Result<ResultsRead, u8> {
    let read = read_results(path).map_err(bad_input)?;
    for (number, line) in &read.lines {
        let same_run = line.scenario == context.scenario && line.variant == context.variant;
        if same_run && line.scenario_hash != context.scenario_hash {
            return Err(bad_input(format!(
                "--out {} line {number}: written for another text of scenario \"{}\" (hash {}, the file given now has {}); sweep into a new --out file",
                path.display(),
                line.scenario,
                line.scenario_hash,
                context.scenario_hash
            )));
        }
    }
    Ok(read)
}

/// Results of this shard already in the --out file, by seed.
fn resumed_lines(
    path: &Path,
    context: &ResultContext,
    plan: &SweepPlan,
) -> Result<BTreeMap<u64, ResultLine>, u8> {
    if !path.exists() {
        return Ok(BTreeMap::new());
    }
    let read = existing_results(path, context)?;
    let note = read.version_note(path);
    let mut done = BTreeMap::new();
    for (_, line) in read.lines {
        if line.scenario != context.scenario || line.variant != context.variant {
            continue;
        }
        let in_shard = plan.shard.contains(&plan.range, line.seed);
        // A seed not yet checked for determinism is not done when it must be.
        let checked_enough = line.checked_determinism || !context.checked_determinism;
        if in_shard && checked_enough {
            done.entry(line.seed).or_insert(line);
        }
    }
    if let Some(note) = note {
        eprintln!("{note}");
    }
    Ok(done)
}

struct CliSink<'a> {
    scenario_path: &'a Path,
    variant: Variant,
    context: ResultContext,
    writer: Option<ResultsWriter>,
    write_error: Option<String>,
    summary: SweepSummary,
    /// Seeds, events and simulated time of this invocation (both runs of a
    /// seed when checking determinism); resumed seeds are not counted.
    throughput: Throughput,
    json: bool,
    progress: ProgressReporter,
    /// `--coverage`: the points of the committed (and resumed) seeds.
    coverage: Option<CoverageTally>,
    mode: leasehold_protocol::HeartbeatMode,
}

impl SweepSink<TimedSeedResult> for CliSink<'_> {
    fn finished(&mut self, seed: u64, output: &TimedSeedResult, progress: &Progress) {
        self.throughput
            .add_run(output.events_simulated, output.sim_time_us);
        if let (Some(writer), None) = (&mut self.writer, &self.write_error) {
            let replay = replay_command(self.scenario_path, seed, self.variant);
            if let Err(e) = writer.append(&self.context.line(output, replay)) {
                self.write_error = Some(format!("--out {}: {e}", writer.path.display()));
            }
        }
        self.progress.update(progress);
    }

    fn committed(&mut self, seed: u64, output: TimedSeedResult) {
        if let Some(tally) = &mut self.coverage {
            tally.add(&output.coverage, self.mode);
        }
        self.summary.add(&output.result, || {
            replay_command(self.scenario_path, seed, self.variant)
        });
        if !self.json && !output.result.ok() {
            let record = &self.summary.failures[&seed];
            self.progress.print(&record.report_lines());
        }
    }

    fn tick(&mut self, progress: &Progress) {
        self.progress.tick(progress);
    }

    fn should_stop(&self) -> bool {
        self.write_error.is_some()
    }
}

pub fn sweep(args: &SweepArgs) -> u8 {
    let plan = match plan(args) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (scn, variant) = match load_run_inputs(&args.scenario, &args.variant) {
        Ok(inputs) => inputs,
        Err(code) => return code,
    };
    // Each job runs one seed at a time: the runs at once are the jobs, or
    // the seeds when there are fewer.
    let at_once = (plan.jobs as u64).min(plan.shard.len(&plan.range)).max(1);
    let estimate = leasehold::memory_estimate::run_peak_bytes(&scn).saturating_mul(at_once);
    let what = format!(
        "{at_once} runs at once (--jobs), each {}",
        leasehold::memory_estimate::describe(&scn)
    );
    if let Err(code) = super::check_memory(args.max_memory.as_deref(), estimate, &what) {
        return code;
    }
    // --out is opened at once (and read first with --resume); --junit is
    // written at the end, so it is proved writable now. The results file is
    // an input too.
    if let Some(out) = &args.out
        && let Err(code) = super::output_file("--out", out, &[&args.scenario])
    {
        return code;
    }
    if let Some(junit) = &args.junit {
        if let Some(out) = &args.out
            && super::names_one_file(junit, out)
        {
            return bad_input(format!(
                "--junit {}: is also the --out file; the results and the JUnit report need a file each",
                junit.display()
            ));
        }
        if let Err(code) = super::output_file("--junit", junit, &[&args.scenario]) {
            return code;
        }
    }
    let context = ResultContext {
        scenario: scn.name().to_string(),
        scenario_hash: scenario_hash(&scn),
        variant: variant.name().to_string(),
        checked_determinism: args.check_determinism,
        coverage: args
            .coverage
            .then_some(scn.scenario.protocol.heartbeat_mode),
    };
    let mut summary = SweepSummary::new(scn.name(), variant.name());
    let mut resumed: BTreeMap<u64, ResultLine> = BTreeMap::new();
    let mut writer = None;
    if let Some(out) = &args.out {
        // Read what is there first (a truncated final line is skipped), so
        // a corrupt file is reported before anything is written to it.
        if args.resume {
            resumed = match resumed_lines(out, &context, &plan) {
                Ok(r) => r,
                Err(code) => return code,
            };
        } else if out.exists()
            && let Err(code) = existing_results(out, &context)
        {
            return code;
        }
        // Cut a final line left by a kill, so appends start on a new line.
        match ResultsWriter::open_append(out) {
            Ok((w, note)) => {
                if let Some(note) = note {
                    eprintln!("note: {note}");
                }
                writer = Some(w);
            }
            Err(e) => return bad_input(format!("--out {e}")),
        }
    }
    let mut coverage = args.coverage.then(CoverageTally::new);
    let mut resumed_without_coverage = 0u64;
    for line in resumed.values() {
        summary.add(&line.result(), || {
            replay_command(&args.scenario, line.seed, variant)
        });
        if let Some(tally) = &mut coverage {
            match &line.coverage {
                Some(c) => tally.add_line(c),
                None => resumed_without_coverage += 1,
            }
        }
    }
    if resumed_without_coverage > 0 && !args.json {
        println!(
            "note: {resumed_without_coverage} resumed seeds were swept without --coverage: their points are not counted"
        );
    }
    let shard_len = plan.shard.len(&plan.range);
    if shard_len == 0 {
        eprintln!(
            "note: shard {} of {} holds no seed (more shards than seeds)",
            plan.shard, plan.range
        );
    }
    let resumed_seeds = resumed.len() as u64;
    let seeds_to_run = shard_len - resumed_seeds;
    if !args.json && resumed_seeds > 0 {
        let out = args.out.as_deref().expect("--resume requires --out");
        println!(
            "resumed: {resumed_seeds} of {} seeds already in {} ({} failed); running the other {seeds_to_run}",
            shard_len,
            out.display(),
            summary.failed()
        );
        for record in summary.failures.values() {
            print!("{}", record.report_lines());
        }
    }
    // The resumed lines are summarised: keep only their seeds, not a whole
    // line each for the length of the sweep.
    let done: HashSet<u64> = resumed.into_keys().collect();
    let seeds = plan
        .shard
        .seeds(&plan.range)
        .filter(move |s| !done.contains(s));

    let cost_budget = match args.checks.budget_for(&args.scenario, &scn) {
        Ok(budget) => budget,
        Err(code) => return code,
    };
    let watch = LeaseWatch::new(plan.run_timeout);
    let job = LeaseJob {
        scenario: &scn,
        variant,
        check_determinism: args.check_determinism,
        watch: Some((&args.scenario, &watch)),
        cost_budget: cost_budget.as_ref(),
    };
    let stuck_context = context.clone();
    let mut options = SweepOptions::with_jobs(plan.jobs);
    options.time_budget = plan.time_budget;
    options.stop_after_failures = plan.stop_after.map(|n| n.saturating_sub(summary.failed()));
    let mut sink = CliSink {
        scenario_path: &args.scenario,
        variant,
        context,
        writer,
        write_error: None,
        summary,
        throughput: Throughput::default(),
        json: args.json,
        progress: ProgressReporter::new(args.progress, seeds_to_run, plan.progress_every),
        coverage,
        mode: scn.scenario.protocol.heartbeat_mode,
    };
    let run = supervise(
        &watch,
        || run_sweep(&job, seeds, seeds_to_run, &options, &mut sink),
        |stuck, elapsed| report_stuck(args, &plan, &stuck_context, &stuck, elapsed),
    );
    sink.progress.finish();
    let CliSink {
        summary,
        write_error,
        mut throughput,
        coverage,
        ..
    } = sink;
    if let Some(e) = write_error {
        return bad_input(e);
    }
    assert_eq!(throughput.seeds, run.seeds_finished);
    let (stop, elapsed) = (run.stop, run.elapsed);
    throughput.wall_s = elapsed.as_secs_f64();
    let elapsed_s = elapsed.as_secs_f64().max(1e-9);
    let peak_rss_bytes = measure::peak_rss_bytes();
    let not_swept = shard_len - summary.seeds;
    let stop_note = match stop {
        StopReason::Completed => None,
        StopReason::TimeBudget => Some(format!(
            "stopped: the time budget ({}) ran out after {} of {} seeds; {not_swept} not swept{}",
            args.time_budget.as_deref().unwrap_or_default(),
            summary.seeds,
            shard_len,
            continue_hint(args, false)
        )),
        StopReason::StopAfter => Some(format!(
            "stopped: {} failures found (--stop-after) after {} of {} seeds in seed order; {not_swept} not swept{}",
            summary.failed(),
            summary.seeds,
            shard_len,
            continue_hint(args, true)
        )),
        StopReason::Aborted => unreachable!("only a write error aborts, handled above"),
    };

    if let Some(path) = &args.junit {
        let mut case = summary.junit_case(Some(elapsed));
        case.add_property(quick_junit::Property::new(
            "seed_range",
            plan.range.to_string(),
        ));
        case.add_property(quick_junit::Property::new("shard", plan.shard.to_string()));
        if let Some(note) = &stop_note {
            case.set_system_out(note.clone());
        }
        if let Err(e) = write_junit(path, "leasehold sweep", vec![case]) {
            return bad_input(e);
        }
    }

    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "scenario": summary.scenario,
                "variant": summary.variant,
                "seed_range": plan.range.to_string(),
                "shard": plan.shard.to_string(),
                "seeds_planned": shard_len,
                "seeds": summary.seeds,
                "failed": summary.failed(),
                "failures": summary.failures_json(),
                "events": summary.events,
                "stopped": stop,
                "resumed_seeds": resumed_seeds,
                "seeds_per_sec": throughput.seeds_per_sec(),
                "events_per_sec": throughput.events_per_sec(),
                "elapsed_s": elapsed_s,
                "sim_time_s": throughput.sim_time_us as f64 / 1e6,
                "time_compression": throughput.time_compression(),
                "peak_rss_bytes": peak_rss_bytes,
                "coverage": coverage.as_ref().map(CoverageTally::to_json),
            })
        );
    } else {
        if let Some(note) = &stop_note {
            println!("{note}");
        }
        let shard_text = if plan.shard == Shard::ALL {
            String::new()
        } else {
            format!(", shard {}", plan.shard)
        };
        let resumed_text = if resumed_seeds == 0 {
            String::new()
        } else {
            format!(", {resumed_seeds} resumed")
        };
        println!(
            "swept {} seeds ({}{shard_text}{resumed_text}) of {}, variant {}: {} failed; {:.1} s on {} jobs, {:.1} seeds/s, {:.2} M events/s{}",
            summary.seeds,
            plan.range,
            summary.scenario,
            summary.variant,
            summary.failed(),
            elapsed_s,
            plan.jobs,
            throughput.seeds_per_sec(),
            throughput.events_per_sec() / 1e6,
            measure::fmt_compression_and_memory(throughput.time_compression(), peak_rss_bytes)
        );
        if let Some(tally) = &coverage {
            for line in tally.report_lines(true) {
                println!("{line}");
            }
        }
    }
    if args.shrink && !summary.ok() {
        shrink_failures(&args.shrink_dir, &scn, variant, summary.failures.keys());
    }
    if summary.ok() {
        EXIT_OK
    } else {
        EXIT_VIOLATION
    }
}

/// `--shrink`: each failing seed, cut down to a minimal failing run.
fn shrink_failures<'a>(
    shrink_dir: &Path,
    scn: &leasehold::ValidScenario,
    variant: Variant,
    seeds: impl Iterator<Item = &'a u64>,
) {
    for &seed in seeds {
        match leasehold::shrink::shrink(scn, seed, variant, ShrinkLimits::default()) {
            Ok(f) => {
                let path = shrink_dir.join(failure_file_name(scn, seed, variant));
                match write_failure_file(&path, &f) {
                    Ok(()) => eprintln!(
                        "shrunk seed {seed} ({}): faults {} -> {}, workers {} -> {}, tasks {} -> {}, events {} -> {} in {:.1} s; wrote {}",
                        f.invariant,
                        f.original.faults,
                        f.shrunk.faults,
                        f.original.workers,
                        f.shrunk.workers,
                        f.original.tasks,
                        f.shrunk.tasks,
                        f.original.events,
                        f.shrunk.events,
                        f.shrink_ms as f64 / 1e3,
                        path.display()
                    ),
                    Err(e) => eprintln!("error: --shrink-dir {}: {e}", path.display()),
                }
            }
            Err(e) => eprintln!("seed {seed}: {e}"),
        }
    }
}

fn continue_hint(args: &SweepArgs, raise_stop_after: bool) -> String {
    let raise = if raise_stop_after {
        "raise --stop-after and "
    } else {
        ""
    };
    match &args.out {
        Some(out) => format!(
            " ({raise}run again with --resume --out {} to continue)",
            out.display()
        ),
        None => format!(" ({raise}use --out FILE and --resume to continue later)"),
    }
}

/// A seed past `--run-timeout`: it is reported as every failing seed is (on
/// stdout, in `--out` and `--junit`), as the one failure of a sweep that
/// ends here; the process then exits, the stuck run with it.
fn report_stuck(
    args: &SweepArgs,
    plan: &SweepPlan,
    context: &ResultContext,
    run: &LeaseRun<'_>,
    elapsed: Duration,
) -> u8 {
    let outcome = stuck_outcome(run, elapsed, plan.run_timeout);
    let replay = replay_command(&args.scenario, run.seed, run.variant);
    let timed = TimedSeedResult {
        result: SeedResult::from_outcome(&outcome),
        wall_us: u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        events_simulated: 0,
        sim_time_us: 0,
        coverage: outcome.coverage.clone(),
    };
    if let Some(out) = &args.out {
        // A handle of its own, appending one whole line as the sweep's
        // writer does (whose thread may be writing too).
        let line = context.line(&timed, replay.clone());
        let text = serde_json::to_string(&line).expect("a result line serialises") + "\n";
        let written = std::fs::OpenOptions::new()
            .append(true)
            .open(out)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
        if let Err(e) = written {
            eprintln!("error: --out {}: {e}", out.display());
        }
    }
    let mut summary = SweepSummary::new(&context.scenario, &context.variant);
    summary.add(&timed.result, || replay.clone());
    let note = format!(
        "stopped: seed {} ran past --run-timeout ({}); the sweep ends here, since a run stuck in a step cannot be stopped",
        run.seed,
        humantime::format_duration(plan.run_timeout)
    );
    if let Some(path) = &args.junit {
        let mut case = summary.junit_case(Some(elapsed));
        case.set_system_out(note.clone());
        if let Err(e) = write_junit(path, "leasehold sweep", vec![case]) {
            eprintln!("error: {e}");
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "scenario": summary.scenario,
                "variant": summary.variant,
                "seed_range": plan.range.to_string(),
                "shard": plan.shard.to_string(),
                "failed": summary.failed(),
                "failures": summary.failures_json(),
                "stopped": "run-timeout",
            })
        );
    } else {
        print!("{}", summary.failures[&run.seed].report_lines());
        println!("{note}");
    }
    EXIT_VIOLATION
}
