//! `leasehold shrink`: a failing seed reduced to a failure file.

use super::{EXIT_OK, EXIT_VIOLATION, bad_input, load_run_inputs};
use leasehold::ValidScenario;
use leasehold::shrink::{FailureFile, RunSize, ShrinkError, ShrinkLimits, shrink};
use leasehold::sweep_args::parse_duration;
use leasehold::watchdog::{LeaseRun, LeaseWatch, simulate_watched, stuck_outcome, supervise};
use leasehold_protocol::Variant;
use std::path::{Path, PathBuf};

/// `NAME-seedN-VARIANT.failure.json`: where `shrink` and `sweep --shrink`
/// write a failure file unless told otherwise.
pub fn failure_file_name(scn: &ValidScenario, seed: u64, variant: Variant) -> String {
    format!(
        "{}-seed{seed}-{}.failure.json",
        file_name_part(scn.name()),
        variant.name()
    )
}

/// The longest scenario-name part of a default file name: with a seed and a
/// variant after it, well inside the usual 255-byte limit.
const MAX_NAME_PART_BYTES: usize = 100;

/// A scenario name as one plain file-name part: a name is free text, but a
/// default output file must land in its directory, so anything but ASCII
/// letters, digits, `-`, `_` and `.` becomes `-` (`../x` cannot climb, `a/b`
/// cannot descend), a leading `.` or `-` (a hidden file, a flag) becomes
/// `_`, and it is cut to [`MAX_NAME_PART_BYTES`].
fn file_name_part(name: &str) -> String {
    let mut part: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(MAX_NAME_PART_BYTES)
        .collect();
    if part.starts_with(['.', '-']) {
        part.replace_range(..1, "_");
    }
    assert!(!part.contains('/') && part.len() <= MAX_NAME_PART_BYTES);
    part
}

/// A failure file as `replay` reads it: pretty JSON and a final newline.
pub fn write_failure_file(path: &Path, failure: &FailureFile) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(failure).expect("failure files serialise");
    std::fs::write(path, text + "\n")
}

pub fn run(
    scenario_path: &Path,
    seed: u64,
    variant: &str,
    out: Option<&Path>,
    json: bool,
    max_memory: Option<&str>,
    run_timeout: &str,
) -> u8 {
    let run_timeout = match parse_duration(run_timeout) {
        Ok(t) => t,
        Err(e) => return bad_input(format!("--run-timeout: {e}")),
    };
    let (scn, variant) = match load_run_inputs(scenario_path, variant) {
        Ok(inputs) => inputs,
        Err(code) => return code,
    };
    // One run at a time, and the failing run's outcome beside it.
    let estimate = 2 * leasehold::memory_estimate::run_peak_bytes(&scn);
    let what = format!("shrinking {}", leasehold::memory_estimate::describe(&scn));
    if let Err(code) = super::check_memory(max_memory, estimate, &what) {
        return code;
    }
    let out_path = out.map_or_else(
        || PathBuf::from(failure_file_name(&scn, seed, variant)),
        Path::to_path_buf,
    );
    // Checked before the shrink, which may take two minutes.
    if let Err(code) = super::output_file("--out", &out_path, &[scenario_path]) {
        return code;
    }
    // The seed's own run first, under the watchdog: a run stuck in a step
    // is reported, not shrunk (every candidate would stick as well).
    let watch = LeaseWatch::new(run_timeout);
    let this_run = LeaseRun {
        file: scenario_path,
        scenario: &scn,
        seed,
        variant,
    };
    supervise(
        &watch,
        || simulate_watched(Some(&watch), this_run),
        |stuck, elapsed| {
            // As for any seed the tool cannot shrink: no failure file, so
            // not exit 1 (which means "written").
            let outcome = stuck_outcome(&stuck, elapsed, run_timeout);
            let v = &outcome.violations[0];
            bad_input(format!(
                "cannot shrink seed {seed}: {}: {} (replay: {})",
                v.invariant,
                v.message,
                leasehold::replay_command(stuck.file, stuck.seed, stuck.variant)
            ))
        },
    );
    let f = match shrink(&scn, seed, variant, ShrinkLimits::default()) {
        Ok(r) => r,
        Err(ShrinkError::Passes(message)) => {
            // Not an error: the run passes, so there is nothing to do.
            if json {
                println!(
                    "{}",
                    serde_json::json!({
                        "invariant": null,
                        "seed": seed,
                        "variant": variant.name(),
                        "message": message,
                        "out": null,
                    })
                );
            } else {
                println!("{message}");
            }
            return EXIT_OK;
        }
        // The seed fails but the tool cannot shrink it: no failure file, so
        // not a success, and not exit 1 (which means "written").
        Err(ShrinkError::NotReproducible(message)) => return bad_input(message),
    };
    if let Err(e) = write_failure_file(&out_path, &f) {
        return bad_input(format!("--out {}: {e}", out_path.display()));
    }
    if json {
        println!(
            "{}",
            serde_json::json!({
                "invariant": f.invariant,
                "seed": seed,
                "variant": f.variant,
                "original": f.original,
                "shrunk": f.shrunk,
                "shrink_ms": f.shrink_ms,
                "candidates_run": f.candidates_run,
                "out": out_path.display().to_string(),
            })
        );
    } else {
        print_sizes(&f);
        println!(
            "wrote {} (replay it: leasehold replay {})",
            out_path.display(),
            leasehold::shell_word(&out_path)
        );
        println!();
        print_story(&f);
    }
    EXIT_VIOLATION
}

fn print_sizes(f: &FailureFile) {
    let row = |label: &str, s: &RunSize| {
        format!(
            "{label:<9} {:>6} faults {:>6} workers {:>3} reclaimers {:>7} tasks {:>4} steps {:>9} events",
            s.faults, s.workers, s.reclaimers, s.tasks, s.steps, s.events
        )
    };
    println!(
        "shrunk {} on {} seed {} variant {} in {:.1} s ({} candidate runs)",
        f.invariant,
        f.scenario.name,
        f.seed,
        f.variant,
        f.shrink_ms as f64 / 1e3,
        f.candidates_run
    );
    println!("  {}", row("before:", &f.original));
    println!("  {}", row("after:", &f.shrunk));
}

fn print_story(f: &FailureFile) {
    match (f.valid_scenario(), f.variant()) {
        (Ok(scn), Ok(variant)) => {
            let (lines, _) =
                leasehold::explain::explain(&scn, f.seed, variant, Some(f.plan.clone()));
            for line in lines {
                println!("{line}");
            }
        }
        (Err(e), _) | (_, Err(e)) => println!("cannot tell the story: {e}"),
    }
}
