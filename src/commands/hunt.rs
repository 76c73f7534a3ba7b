//! `leasehold hunt`: the hunt scenarios swept under every variant, seeds until each planted bug is caught.

use super::run_checks::one_budget;
use super::{EXIT_OK, EXIT_VIOLATION, RunChecksArgs, bad_input, parse_variant};
use leasehold::Scenario;
use leasehold::hunt::{HuntChecks, HuntOptions, HuntResult, HuntScenario, hunt_with};
use leasehold::replay_command;
use leasehold::sweep_args::parse_jobs;
use leasehold::sweep_engine::default_jobs;
use leasehold::watchdog::{LeaseRun, LeaseWatch, stuck_outcome, supervise};
use leasehold_protocol::Variant;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct HuntArgs<'a> {
    pub variants: &'a str,
    pub scenarios: &'a str,
    pub dir: &'a Path,
    pub budget: u64,
    /// `--jobs` as given: checked like `sweep`'s; default every core.
    pub jobs: Option<&'a str>,
    pub json: bool,
    pub markdown: Option<&'a Path>,
    pub max_memory: Option<&'a str>,
    /// Guided hunting with this seed (`--guided`, `--guided-seed`).
    pub guided: Option<u64>,
    /// Report the coverage points the hunt's runs reached.
    pub coverage: bool,
    /// Where a guided hunt writes a failure file for each failure found
    /// by a mutated plan (which no seed alone replays).
    pub failures_dir: Option<&'a Path>,
    pub checks: &'a RunChecksArgs,
}

pub fn run(args: HuntArgs<'_>) -> u8 {
    if args.budget == 0 {
        return bad_input("--budget: must be at least 1 seed");
    }
    let jobs = match args.jobs.map(parse_jobs).transpose() {
        Ok(jobs) => jobs.unwrap_or_else(default_jobs),
        Err(e) => return bad_input(format!("--jobs: {e}")),
    };
    let run_timeout = match args.checks.run_timeout() {
        Ok(t) => t,
        Err(code) => return code,
    };
    let variants: Vec<Variant> = if args.variants == "all" {
        Variant::all().collect()
    } else {
        let mut list = Vec::new();
        for name in args.variants.split(',') {
            match parse_variant("--variants", name.trim()) {
                Ok(v) => list.push(v),
                Err(code) => return code,
            }
        }
        list
    };
    let files = match leasehold::catalogue::scenario_files(args.dir) {
        Ok(f) => f,
        Err(e) => return bad_input(e),
    };
    let all_files = files.clone();
    let mut all = Vec::new();
    for file in files {
        match Scenario::load(&file) {
            Ok(scenario) => all.push(HuntScenario { file, scenario }),
            Err(e) => return bad_input(format!("scenario {}: {e}", file.display())),
        }
    }
    let scenarios: Vec<HuntScenario> = if args.scenarios == "all" {
        // Scenarios that demonstrate an impossibility fail by design: they
        // would "catch" every variant and prove nothing.
        all.into_iter()
            .filter(|s| s.scenario.scenario.expected_violations.is_empty())
            .collect()
    } else {
        let mut picked = Vec::new();
        for name in args.scenarios.split(',').map(str::trim) {
            match all.iter().find(|s| s.scenario.name() == name) {
                Some(s) => picked.push(s.clone()),
                None => {
                    let known: Vec<&str> = all.iter().map(|s| s.scenario.name()).collect();
                    return bad_input(format!(
                        "--scenarios: unknown scenario \"{name}\"; known: {}",
                        known.join(", ")
                    ));
                }
            }
        }
        picked
    };
    if scenarios.is_empty() {
        return bad_input("--scenarios: no scenario left to hunt with");
    }
    if let Err(code) = check_hunt_memory(&scenarios, jobs, args.max_memory) {
        return code;
    }
    if let Some(dir) = args.failures_dir {
        if args.guided.is_none() {
            return bad_input(
                "--failures-dir: only a guided hunt (--guided) finds failures no seed replays",
            );
        }
        if let Err(e) = super::writable_dir(dir) {
            return bad_input(format!("--failures-dir {}: {e}", dir.display()));
        }
    }
    // Checked before the hunt, which may take minutes, not after it.
    // The scenario files are inputs too: the table must not overwrite one.
    if let Some(path) = args.markdown {
        let inputs: Vec<&Path> = all_files.iter().map(PathBuf::as_path).collect();
        if let Err(code) = super::output_file("--markdown", path, &inputs) {
            return code;
        }
    }
    let budget_file = match args.checks.budget_file(args.dir) {
        Ok(file) => file,
        Err(code) => return code,
    };
    let cost_budgets = match &budget_file {
        Some(file) => scenarios
            .iter()
            .map(|s| one_budget(file, &s.scenario))
            .collect(),
        None => Vec::new(),
    };
    let watch = LeaseWatch::new(run_timeout);
    let checks = HuntChecks {
        watch: Some(&watch),
        cost_budgets,
    };
    let started = Instant::now();
    let options = HuntOptions {
        guided: args.guided,
    };
    let report = supervise(
        &watch,
        || hunt_with(&scenarios, &variants, args.budget, jobs, options, &checks),
        |stuck, elapsed| report_stuck(&stuck, elapsed, run_timeout, args.json),
    );
    let results = report.results;
    let elapsed_s = started.elapsed().as_secs_f64();
    let runs: u64 = results.iter().map(|r| r.runs).sum();
    // Failures found by mutated plans, kept as files that replay them.
    let mut written: Vec<Option<PathBuf>> = vec![None; results.len()];
    if let Some(dir) = args.failures_dir {
        for (r, slot) in results.iter().zip(written.iter_mut()) {
            let (Some(f), Some(seed)) = (&r.failure, r.seed) else {
                continue;
            };
            let scenario = r.scenario.as_deref().unwrap_or("scenario");
            let path = dir.join(format!(
                "{}-seed{seed}-{}-guided.failure.json",
                scenario.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"),
                r.variant
            ));
            if let Err(e) = super::shrink::write_failure_file(&path, f) {
                return bad_input(format!("--failures-dir {}: {e}", path.display()));
            }
            *slot = Some(path);
        }
    }
    if args.json {
        let mut value = serde_json::json!({ "variants": results, "budget": args.budget, "runs": runs, "elapsed_s": elapsed_s });
        if let Some(seed) = args.guided {
            value["guided"] = serde_json::json!({
                "seed": seed,
                "corpus_added": report.corpus_added,
            });
        }
        if args.coverage {
            value["coverage"] = report.coverage.to_json();
        }
        println!("{value}");
    } else {
        print_table(&results, &written);
        if args.coverage {
            for line in report.coverage.report_lines(false) {
                println!("{line}");
            }
        }
        if let Some(seed) = args.guided {
            println!(
                "guided (seed {seed}): {} inputs joined a corpus for new coverage",
                report.corpus_added
            );
        }
        println!(
            "{} runs in {elapsed_s:.1} s ({:.1} runs/s), budget {} seeds per scenario, {} scenarios",
            runs,
            runs as f64 / elapsed_s.max(1e-9),
            args.budget,
            scenarios.len()
        );
    }
    if let Some(path) = args.markdown
        && let Err(e) = std::fs::write(path, markdown(&results, args.budget, scenarios.len()))
    {
        return bad_input(format!("--markdown {}: {e}", path.display()));
    }
    if results.iter().all(HuntResult::as_expected) {
        EXIT_OK
    } else {
        for r in results.iter().filter(|r| !r.as_expected()) {
            let line = if r.caught {
                format!(
                    "FAILED: the correct protocol violated {} on {} seed {}",
                    r.invariant.as_deref().unwrap_or("?"),
                    r.scenario.as_deref().unwrap_or("?"),
                    r.seed.unwrap_or(0)
                )
            } else {
                format!(
                    "ESCAPED: planted bug {} survived {} runs",
                    r.variant, r.runs
                )
            };
            // With --json, stdout is one JSON document and nothing else (the
            // same facts are in it: `caught`, `variant`, `runs`).
            if args.json {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
        }
        EXIT_VIOLATION
    }
}

/// `jobs` runs at once, each of any scenario: the largest's estimate times
/// the jobs.
fn check_hunt_memory(
    scenarios: &[HuntScenario],
    jobs: usize,
    flag: Option<&str>,
) -> Result<(), u8> {
    use leasehold::memory_estimate::{describe, run_peak_bytes};
    let Some(largest) = scenarios.iter().max_by_key(|s| run_peak_bytes(&s.scenario)) else {
        return Ok(());
    };
    let estimate = run_peak_bytes(&largest.scenario).saturating_mul(jobs as u64);
    let what = format!(
        "{jobs} runs at once (--jobs), the largest {}",
        describe(&largest.scenario)
    );
    super::check_memory(flag, estimate, &what)
}

fn replay_of(r: &HuntResult, written: Option<&Path>) -> String {
    if r.mutated {
        return match written {
            Some(path) => format!("leasehold replay {}", leasehold::shell_word(path)),
            None => "(a mutated plan: --failures-dir DIR keeps a file that replays it)".into(),
        };
    }
    match (&r.scenario_file, r.seed, Variant::from_name(&r.variant)) {
        (Some(file), Some(seed), Some(v)) => replay_command(file, seed, v),
        _ => "-".to_string(),
    }
}

fn print_table(results: &[HuntResult], written: &[Option<PathBuf>]) {
    println!(
        "{:<32} {:<7} {:>6}  {:<22} {:<6} {:<22} replay",
        "variant", "caught", "seeds", "scenario", "mode", "invariant"
    );
    for (r, written) in results.iter().zip(written) {
        let caught = match (r.variant == Variant::Correct.name(), r.caught) {
            (true, false) => "clean",
            (true, true) => "FAILED",
            (false, true) => "yes",
            (false, false) => "NO",
        };
        println!(
            "{:<32} {:<7} {:>6}  {:<22} {:<6} {:<22} {}",
            r.variant,
            caught,
            r.seeds_to_detect
                .map_or_else(|| r.runs.to_string(), |n| n.to_string()),
            r.scenario.as_deref().unwrap_or("-"),
            r.mode.as_deref().unwrap_or("-"),
            r.invariant.as_deref().unwrap_or("-"),
            if r.caught {
                replay_of(r, written.as_deref())
            } else {
                "-".into()
            }
        );
    }
}

fn markdown(results: &[HuntResult], budget: u64, scenarios: usize) -> String {
    let mut out = String::new();
    out.push_str("# Planted bugs and how fast leasehold catches them\n\n");
    out.push_str(&format!(
        "Generated by `leasehold hunt --budget {budget} --markdown docs/variants.md` over {scenarios} scenarios \
         (round-robin: seed 1 on every scenario, then seed 2, ...). *Seeds* is the number of runs until the \
         first failure. The `correct` row must stay clean for the whole budget on every scenario.\n\n"
    ));
    out.push_str(
        "| variant | caught | seeds | scenario | mode | invariant | seed |\n|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            r.variant,
            if r.variant == Variant::Correct.name() {
                if r.caught { "FAILED" } else { "clean" }
            } else if r.caught {
                "yes"
            } else {
                "**no**"
            },
            r.seeds_to_detect
                .map_or_else(|| format!("{} (all)", r.runs), |n| n.to_string()),
            r.scenario.as_deref().unwrap_or("-"),
            r.mode.as_deref().unwrap_or("-"),
            r.invariant
                .as_deref()
                .map_or("-".to_string(), |i| format!("`{i}`")),
            r.seed.map_or("-".to_string(), |s| s.to_string()),
        ));
    }
    let mut detected: Vec<u64> = results
        .iter()
        .filter(|r| r.variant != Variant::Correct.name())
        .filter_map(|r| r.seeds_to_detect)
        .collect();
    detected.sort_unstable();
    if !detected.is_empty() {
        out.push_str(&format!(
            "\nMedian seeds to detection: {}; worst: {}.\n",
            detected[(detected.len() - 1) / 2],
            detected.last().expect("non-empty")
        ));
    }
    out.push_str("\n## What each variant teaches\n\n");
    for info in Variant::catalogue() {
        out.push_str(&format!(
            "- **`{}`**: {}. Mirrors: {}.\n",
            info.name, info.description, info.mirrors
        ));
    }
    out
}

/// A run past `--run-timeout`: the hunt ends with it, reported as a
/// `simulation-healthy` failure of its variant with its replay command (a
/// planted variant that hangs is caught, `correct` failed), since a run
/// stuck in a step cannot be stopped.
fn report_stuck(run: &LeaseRun<'_>, elapsed: Duration, limit: Duration, json: bool) -> u8 {
    let outcome = stuck_outcome(run, elapsed, limit);
    let replay = replay_command(run.file, run.seed, run.variant);
    let violation = &outcome.violations[0];
    if json {
        println!(
            "{}",
            serde_json::json!({
                "stuck": {
                    "variant": run.variant.name(),
                    "scenario": run.scenario.name(),
                    "seed": run.seed,
                    "invariant": violation.invariant.name(),
                    "message": violation.message,
                    "replay": replay,
                },
            })
        );
    } else {
        println!(
            "STUCK: variant {} on {} seed {}: {} at {:.3} s: {}",
            run.variant,
            run.scenario.name(),
            run.seed,
            violation.invariant,
            violation.time_ms as f64 / 1e3,
            violation.message
        );
        println!("replay: {replay}");
        println!("stopped: the hunt ends here, since a run stuck in a step cannot be stopped");
    }
    EXIT_VIOLATION
}
