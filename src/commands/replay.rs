//! `leasehold replay`: a failure file or a trace run again (or its records judged again).

use super::{EXIT_OK, EXIT_VIOLATION};
use leasehold::ValidScenario;
use leasehold::run_file::{ReadRun, RunFile};
use leasehold::shrink::FailureFile;
use leasehold::trace::{TraceReplay, replay_trace};
use leasehold_protocol::Variant;
use std::path::Path;

pub fn replay(path: &Path, json: bool, check: bool, max_memory: Option<&str>) -> u8 {
    let ReadRun { file, scn, variant } = match super::read_run(path, max_memory) {
        Ok(run) => run,
        Err(code) => return code,
    };
    let trace = match file {
        RunFile::Failure(_) if check => {
            return super::bad_input(format!(
                "--check: {} is a failure file, which holds no records to judge; replay it without --check",
                path.display()
            ));
        }
        RunFile::Failure(failure) => return replay_failure(&failure, &scn, variant, json),
        RunFile::Trace(trace) => trace,
    };
    if check || trace.header.live.is_some() {
        return check_trace(path, &trace, &scn, variant, json);
    }
    let replayed = replay_trace(&trace, &scn, variant);
    let identical = replayed.identical();
    let TraceReplay {
        outcome,
        compared,
        first_divergence,
        end_difference,
        end_line,
    } = replayed;
    let hash = outcome.trace_hash_hex();
    if json {
        let divergence = first_divergence
            .as_ref()
            .map(|(line, expected, actual)| serde_json::json!({"line": line, "expected": expected, "actual": actual}))
            .or_else(|| {
                end_difference.as_ref().map(|(field, expected, actual)| {
                    serde_json::json!({
                        "line": end_line,
                        "field": format!("end.{field}"),
                        "expected": expected,
                        "actual": actual,
                    })
                })
            });
        println!(
            "{}",
            serde_json::json!({
                "identical": identical,
                "seed": trace.header.seed,
                "variant": variant.name(),
                "events_compared": compared,
                "trace_hash": hash,
                "expected_trace_hash": trace.footer.end.trace_hash,
                "first_divergence": divergence,
                "ok": outcome.ok(),
                "leasehold_version": trace.header.leasehold_version,
            })
        );
    } else if identical {
        println!(
            "identical: {} records, the end line and trace hash {} match (seed {}, variant {}, leasehold {} wrote it)",
            compared,
            hash,
            trace.header.seed,
            variant.name(),
            trace.header.leasehold_version
        );
    } else if let Some((line, expected, actual)) = &first_divergence {
        println!("DIVERGED at line {line} of {}:", path.display());
        println!("  trace:  {expected}");
        println!("  re-run: {actual}");
        if trace.header.leasehold_version != leasehold::LEASEHOLD_VERSION {
            println!(
                "  (the trace was written by leasehold {}, this is {})",
                trace.header.leasehold_version,
                leasehold::LEASEHOLD_VERSION
            );
        }
    } else if let Some((field, expected, actual)) = &end_difference {
        println!(
            "DIVERGED at the end line (line {end_line}) of {}: every record matches but end.{field} differs",
            path.display()
        );
        println!("  trace:  {expected}");
        println!("  re-run: {actual}");
    }
    if identical { EXIT_OK } else { EXIT_VIOLATION }
}

/// Replay a shrunk failure: exit 1 if it still fails the same invariant, 0 if
/// it no longer reproduces (a fixed bug shows as fixed).
fn replay_failure(failure: &FailureFile, scn: &ValidScenario, variant: Variant, json: bool) -> u8 {
    let outcome = failure.rerun_with(scn, variant);
    let names: Vec<&str> = outcome.invariants.iter().map(|i| i.name()).collect();
    let reproduced = failure.reproduced_by(&outcome);
    if json {
        println!(
            "{}",
            serde_json::json!({
                "reproduced": reproduced,
                "invariant": failure.invariant,
                "invariants": names,
                "seed": failure.seed,
                "variant": failure.variant,
                "violations": outcome.violations,
                "leasehold_version": failure.leasehold_version,
            })
        );
    } else if reproduced {
        let v = outcome
            .violations
            .iter()
            .find(|v| v.invariant.name() == failure.invariant);
        println!(
            "reproduced: {} on {} seed {} variant {} ({} faults in the plan)",
            failure.invariant,
            failure.scenario.name,
            failure.seed,
            failure.variant,
            failure.plan.len()
        );
        if let Some(v) = v {
            println!(
                "  {} at {:.3} s: {}",
                v.invariant,
                v.time_ms as f64 / 1e3,
                v.message
            );
        }
    } else if names.is_empty() {
        println!(
            "no longer reproduces: {} on {} seed {} variant {} now passes (fixed?)",
            failure.invariant, failure.scenario.name, failure.seed, failure.variant
        );
    } else {
        println!(
            "fails differently: expected {}, got {}",
            failure.invariant,
            names.join(", ")
        );
    }
    if names.is_empty() {
        EXIT_OK
    } else {
        EXIT_VIOLATION
    }
}

/// `replay --check` (and `replay` of a live run's trace, which cannot be
/// re-run): judge the trace's records again, without re-running, and hold
/// the verdict to its end line. A live trace's hash is its records' own,
/// and is compared too; a simulated trace's is the simulator's, which only
/// a re-run (plain `replay`) reproduces.
fn check_trace(
    path: &Path,
    trace: &leasehold::trace::TraceFile,
    scn: &ValidScenario,
    variant: Variant,
    json: bool,
) -> u8 {
    let live = trace.header.live.is_some();
    let outcome = match leasehold::run::judge_recorded(
        scn,
        trace.header.seed,
        variant,
        &trace.recorded(),
        if live {
            leasehold::run::RecordHost::Live
        } else {
            leasehold::run::RecordHost::Simulator
        },
        None,
    ) {
        Ok(outcome) => outcome,
        Err(e) => return super::bad_input(format!("{}: {e}", path.display())),
    };
    let mut end = leasehold::trace::TraceEnd::of(&outcome);
    end.end_us = trace.footer.end.end_us;
    if !live {
        // A simulated run's event count and hash are the simulator's (its
        // events, its hashing): only a re-run, plain `replay`, has them.
        end.events = trace.footer.end.events;
        end.trace_hash = trace.footer.end.trace_hash.clone();
    }
    let difference = trace.footer.end.first_difference(&end);
    let agrees = difference.is_none();
    let names: Vec<&str> = outcome.invariants.iter().map(|i| i.name()).collect();
    if json {
        println!(
            "{}",
            serde_json::json!({
                "checked": true,
                "live": live,
                "agrees": agrees,
                "seed": trace.header.seed,
                "variant": variant.name(),
                "records": trace.records.len(),
                "ok": outcome.ok(),
                "invariants": names,
                "violations": outcome.violations,
                "trace_hash": end.trace_hash,
                "difference": difference.as_ref().map(|(field, expected, actual)| serde_json::json!({
                    "field": format!("end.{field}"),
                    "expected": expected,
                    "actual": actual,
                })),
                "leasehold_version": trace.header.leasehold_version,
            })
        );
        return if agrees { EXIT_OK } else { EXIT_VIOLATION };
    }
    let what = if live {
        "a live run's trace, not re-run (a live run is not deterministic): its records judged again"
    } else {
        "its records judged again, not re-run"
    };
    match &difference {
        None => println!(
            "agrees: {} records of {} judged {} as its end line says ({what})",
            trace.records.len(),
            path.display(),
            if names.is_empty() {
                "ok".to_string()
            } else {
                names.join(", ")
            }
        ),
        Some((field, expected, actual)) => {
            println!(
                "DISAGREES: the records of {} judged again give another end.{field} ({what})",
                path.display()
            );
            println!("  trace:  {expected}");
            println!("  judged: {actual}");
        }
    }
    for v in outcome.violations.iter().take(8) {
        println!(
            "  {} at {:.3} s: {}",
            v.invariant,
            v.time_ms as f64 / 1e3,
            v.message
        );
    }
    if agrees { EXIT_OK } else { EXIT_VIOLATION }
}
