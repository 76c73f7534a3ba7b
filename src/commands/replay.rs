use super::{EXIT_OK, EXIT_VIOLATION};
use leasehold::ValidScenario;
use leasehold::run_file::{ReadRun, RunFile};
use leasehold::shrink::FailureFile;
use leasehold::trace::{TraceReplay, replay_trace};
use leasehold_protocol::Variant;
use std::path::Path;

pub fn replay(path: &Path, json: bool, max_memory: Option<&str>) -> u8 {
    let ReadRun { file, scn, variant } = match super::read_run(path, max_memory) {
        Ok(run) => run,
        Err(code) => return code,
    };
    let trace = match file {
        RunFile::Failure(failure) => return replay_failure(&failure, &scn, variant, json),
        RunFile::Trace(trace) => trace,
    };
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
