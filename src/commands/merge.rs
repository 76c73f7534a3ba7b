//! `leasehold merge A.jsonl B.jsonl ...`: the results files of several sweeps
//! (the shards of one sweep, or a sweep and its resumptions) as one summary
//! per scenario and variant, shaped like `sweep`'s.

use super::{EXIT_OK, EXIT_VIOLATION, bad_input};
use leasehold::coverage::CoverageTally;
use leasehold::lease_job::DETERMINISM;
use leasehold::results_file::{ResultLine, read_results};
use leasehold::seeds::SeedRange;
use leasehold::sweep_summary::{SweepSummary, write_junit};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Results files written by `sweep --out`.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print one JSON object instead of the human report.
    #[arg(long)]
    pub json: bool,
    /// Also check that every seed of A..B is present for each scenario and
    /// variant (all shards reported); a gap exits 1.
    #[arg(long, value_name = "A..B", allow_hyphen_values = true)]
    pub expect_seeds: Option<String>,
    /// Write a JUnit XML report (one test case per scenario and variant).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Exit 1 if a named coverage point stays unreached over every line
    /// (the lines `sweep --coverage --out` writes); files with no coverage
    /// at all are bad input.
    #[arg(long)]
    pub require_coverage: bool,
}

/// Where a line came from, for messages.
#[derive(Clone)]
struct Origin {
    file: usize,
    line: u64,
}

struct Group {
    scenario_hash: String,
    hash_origin: Origin,
    /// seed -> (the line, where it is)
    seeds: BTreeMap<u64, (ResultLine, Origin)>,
    /// Seeds whose lines disagree (different runs of one seed).
    diverged: BTreeMap<u64, String>,
    wall_us: u64,
}

pub fn merge(args: &MergeArgs) -> u8 {
    let expect = match &args.expect_seeds {
        None => None,
        Some(text) => match SeedRange::parse(text) {
            Ok(r) => Some(r),
            Err(e) => return bad_input(format!("--expect-seeds: {e}")),
        },
    };
    if let Some(junit) = &args.junit {
        let inputs: Vec<&Path> = args.files.iter().map(PathBuf::as_path).collect();
        if let Err(code) = super::output_file("--junit", junit, &inputs) {
            return code;
        }
    }
    let name = |o: &Origin| format!("{} line {}", args.files[o.file].display(), o.line);
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    // Printed once the merge is known to go ahead: a refusal is one line.
    let mut notes = Vec::new();
    for (file, path) in args.files.iter().enumerate() {
        let read = match read_results(path) {
            Ok(r) => r,
            Err(e) => return bad_input(e),
        };
        notes.extend(read.version_note(path));
        if let Some((line, _)) = read.truncated_tail {
            notes.push(format!(
                "note: {} line {line}: ignored a truncated final line (left by a killed sweep)",
                path.display()
            ));
        }
        for (line_number, line) in read.lines {
            let origin = Origin {
                file,
                line: line_number,
            };
            let key = (line.scenario.clone(), line.variant.clone());
            let group = groups.entry(key).or_insert_with(|| Group {
                scenario_hash: line.scenario_hash.clone(),
                hash_origin: origin.clone(),
                seeds: BTreeMap::new(),
                diverged: BTreeMap::new(),
                wall_us: 0,
            });
            if line.scenario_hash != group.scenario_hash {
                return bad_input(format!(
                    "{}: scenario \"{}\" has text hash {} here but {} in {}; these results are of different scenarios",
                    name(&origin),
                    line.scenario,
                    line.scenario_hash,
                    group.scenario_hash,
                    name(&group.hash_origin)
                ));
            }
            group.wall_us = group.wall_us.saturating_add(line.wall_us);
            match group.seeds.get(&line.seed) {
                None => {
                    group.seeds.insert(line.seed, (line, origin));
                }
                Some((first, first_origin)) => {
                    if first.result() != line.result() {
                        group.diverged.entry(line.seed).or_insert_with(|| {
                            format!(
                                "{DETERMINISM}: {} has trace {} ({} events, {:?}) but {} has trace {} ({} events, {:?})",
                                name(first_origin),
                                first.trace_hash,
                                first.events,
                                first.invariants,
                                name(&origin),
                                line.trace_hash,
                                line.events,
                                line.invariants
                            )
                        });
                    }
                }
            }
        }
    }

    let mut summaries = Vec::new();
    let mut group_json = Vec::new();
    let mut incomplete = Vec::new();
    if groups.is_empty() {
        let files: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
        match expect {
            // Every expected seed is missing: the gap merge reports anyway.
            Some(range) => incomplete.push(format!(
                "incomplete: no results in {}: all {} seeds of {range} are missing (first missing: {})",
                files.join(", "),
                range.len(),
                range.iter().next().map_or_else(String::new, |s| s.to_string())
            )),
            // Nothing to merge is a broken pipeline (no shard wrote, the
            // wrong glob), never "all passed".
            None => {
                return bad_input(format!(
                    "{}: no results to merge (not one result line in any file); expected the lines `sweep --out` writes",
                    files.join(", ")
                ));
            }
        }
    }
    for note in notes {
        eprintln!("{note}");
    }
    let (mut total_seeds, mut total_events, mut total_wall_us) = (0u64, 0u64, 0u64);
    // Over every seed once (a seed in two shards counts once).
    let mut coverage = CoverageTally::new();
    for ((scenario, variant), group) in &groups {
        let mut summary = SweepSummary::new(scenario, variant);
        for (line, _) in group.seeds.values() {
            if let Some(c) = &line.coverage {
                coverage.add_line(c);
            }
            let mut result = line.result();
            if let Some(message) = group.diverged.get(&line.seed) {
                result.invariants.push(DETERMINISM.to_string());
                result.first_violation = Some(message.clone());
            }
            summary.add(&result, || line.replay.clone());
        }
        let mut missing_json = serde_json::Value::Null;
        if let Some(range) = expect {
            let missing: Vec<u64> = range
                .iter()
                .filter(|s| !group.seeds.contains_key(s))
                .collect();
            if !missing.is_empty() {
                incomplete.push(format!(
                    "incomplete: {scenario}, variant {variant}: {} of the {} seeds of {range} are missing (first missing: {})",
                    missing.len(),
                    range.len(),
                    missing[0]
                ));
            }
            missing_json = serde_json::json!({"count": missing.len(), "first": missing.first()});
        }
        total_seeds += summary.seeds;
        total_events += summary.events;
        total_wall_us = total_wall_us.saturating_add(group.wall_us);
        group_json.push(serde_json::json!({
            "scenario": scenario,
            "variant": variant,
            "seeds": summary.seeds,
            "failed": summary.failed(),
            "events": summary.events,
            "missing_seeds": missing_json,
        }));
        summaries.push((summary, Duration::from_micros(group.wall_us)));
    }
    let failed: u64 = summaries.iter().map(|(s, _)| s.failed()).sum();
    let with_coverage = coverage.runs > 0;
    if args.require_coverage && !with_coverage {
        return bad_input(
            "--require-coverage: no result line carries coverage (sweep with --coverage --out)",
        );
    }
    let unreached = coverage.unreached();
    // Throughput of the runs themselves: seeds per second of one job.
    let run_s = total_wall_us as f64 / 1e6;
    let seeds_per_sec = total_seeds as f64 / run_s.max(1e-9);
    let events_per_sec = total_events as f64 / run_s.max(1e-9);

    if let Some(path) = &args.junit {
        let cases = summaries
            .iter()
            .map(|(s, time)| s.junit_case(Some(*time)))
            .collect();
        if let Err(e) = write_junit(path, "leasehold merge", cases) {
            return bad_input(e);
        }
    }

    if args.json {
        let mut value = serde_json::json!({
            "files": args.files.len(),
            "seeds": total_seeds,
            "failed": failed,
            "failures": summaries.iter().flat_map(|(s, _)| failures_json(s)).collect::<Vec<_>>(),
            "events": total_events,
            "groups": group_json,
            "complete": incomplete.is_empty(),
            "seeds_per_sec": seeds_per_sec,
            "events_per_sec": events_per_sec,
            "run_s": run_s,
            "coverage": with_coverage.then(|| coverage.to_json()),
        });
        if let (Some(range), true) = (expect, groups.is_empty()) {
            value["missing_seeds"] =
                serde_json::json!({"count": range.len(), "first": range.iter().next()});
        }
        if let [(only, _)] = summaries.as_slice() {
            value["scenario"] = only.scenario.clone().into();
            value["variant"] = only.variant.clone().into();
        }
        println!("{value}");
    } else {
        for (summary, _) in &summaries {
            if groups.len() > 1 && !summary.ok() {
                println!("{}, variant {}:", summary.scenario, summary.variant);
            }
            for record in summary.failures.values() {
                print!("{}", record.report_lines());
            }
        }
        for line in &incomplete {
            println!("{line}");
        }
        for (summary, _) in &summaries {
            println!(
                "merged {} seeds of {}, variant {} from {} files: {} failed",
                summary.seeds,
                summary.scenario,
                summary.variant,
                args.files.len(),
                summary.failed()
            );
        }
        if with_coverage {
            println!(
                "coverage of the {} seeds swept with --coverage:",
                coverage.runs
            );
            for line in coverage.report_lines(false) {
                println!("{line}");
            }
        }
        println!(
            "total: {total_seeds} seeds, {failed} failed; {:.1} s of runs, {seeds_per_sec:.1} seeds/s and {:.2} M events/s per job",
            run_s,
            events_per_sec / 1e6
        );
    }
    if args.require_coverage && !unreached.is_empty() {
        eprintln!(
            "UNREACHED: {} coverage point(s) no seed reached: {}",
            unreached.len(),
            unreached
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return EXIT_VIOLATION;
    }
    if failed == 0 && incomplete.is_empty() {
        EXIT_OK
    } else {
        EXIT_VIOLATION
    }
}

/// A group's failures as `merge --json` lists them: each failure record with
/// its scenario and variant.
fn failures_json(summary: &SweepSummary) -> Vec<serde_json::Value> {
    summary
        .failures_json()
        .into_iter()
        .map(|mut value| {
            value["scenario"] = summary.scenario.clone().into();
            value["variant"] = summary.variant.clone().into();
            value
        })
        .collect()
}
