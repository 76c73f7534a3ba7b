use super::{EXIT_OK, EXIT_VIOLATION, bad_input};
use leasehold::Scenario;
use leasehold::explain::explain;
use leasehold::shrink::FailureFile;
use leasehold::trace::TraceFile;
use leasehold_protocol::Variant;
use std::path::Path;

/// `leasehold explain FILE`: FILE is a failure file (from `shrink`) or a trace.
pub fn run(path: &Path) -> u8 {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return bad_input(format!("{}: {e}", path.display())),
    };
    let (scn, seed, variant, plan) = match load_run(&text) {
        Ok(x) => x,
        Err(e) => return bad_input(format!("{}: {e}", path.display())),
    };
    let (lines, outcome) = explain(&scn, seed, variant, plan);
    for line in lines {
        println!("{line}");
    }
    if outcome.ok() {
        EXIT_OK
    } else {
        EXIT_VIOLATION
    }
}

/// Read a failure file or a trace file into what re-runs it.
pub fn load_run(
    text: &str,
) -> Result<
    (
        leasehold::ValidScenario,
        u64,
        Variant,
        Option<leasehold_sim::FaultPlan>,
    ),
    String,
> {
    if leasehold::shrink::is_failure_file(text) {
        let f = FailureFile::parse(text)?;
        return Ok((f.valid_scenario()?, f.seed, f.variant()?, Some(f.plan)));
    }
    let trace = TraceFile::parse(text)?;
    let scn = Scenario::parse(&trace.header.scenario)
        .map_err(|e| format!("line 1: the embedded scenario is invalid: {e}"))?;
    let variant = Variant::from_name(&trace.header.variant)
        .ok_or_else(|| format!("line 1: unknown variant \"{}\"", trace.header.variant))?;
    Ok((scn, trace.header.seed, variant, None))
}
