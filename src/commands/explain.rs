use super::{EXIT_OK, EXIT_VIOLATION, bad_input};
use leasehold::Scenario;
use leasehold::explain::explain;
use leasehold::shrink::FailureFile;
use leasehold::trace::{ReplayInput, TraceFile, replay_input, replay_trace, version_note};
use leasehold_protocol::Variant;
use std::path::Path;

/// `leasehold explain FILE`: FILE is a failure file (from `shrink`) or a trace.
pub fn run(path: &Path) -> u8 {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return bad_input(format!("{}: {e}", path.display())),
    };
    let (scn, seed, variant, plan) = match load_run_at(&text, Some(path)) {
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

/// Read a failure file or a trace file into what re-runs it (for `explain`
/// and `export`); a file another leasehold version wrote gets a note on
/// stderr. Errors say which field is wrong, or what the file is instead.
pub fn load_run(text: &str) -> Result<RunInputs, String> {
    load_run_at(text, None)
}

type RunInputs = (
    leasehold::ValidScenario,
    u64,
    Variant,
    Option<leasehold_sim::FaultPlan>,
);

/// [`load_run`], naming `path` in the version note.
pub fn load_run_at(text: &str, path: Option<&Path>) -> Result<RunInputs, String> {
    let note = |version: &str| {
        let name = path.map_or_else(|| "the file".to_string(), |p| p.display().to_string());
        if let Some(note) = version_note(&name, version) {
            eprintln!("{note}");
        }
    };
    if replay_input(text)? == ReplayInput::Failure {
        let f = FailureFile::parse(text)?;
        note(&f.leasehold_version);
        return Ok((f.valid_scenario()?, f.seed, f.variant()?, Some(f.plan)));
    }
    let trace = TraceFile::parse(text)?;
    let scn = Scenario::parse(&trace.header.scenario)
        .map_err(|e| format!("line 1: scenario: the embedded scenario is invalid: {e}"))?;
    let variant = trace.header.variant()?;
    note(&trace.header.leasehold_version);
    // What is told or drawn is the re-run from the header; say so when the
    // file's records are not that run (an edited or corrupt trace).
    if let Some(line) = replay_trace(&trace, &scn, variant).diverges_at() {
        let name = path.map_or_else(|| "the file".to_string(), |p| p.display().to_string());
        eprintln!(
            "note: {name} differs from its re-run from line {line} on (`leasehold replay` shows how); \
             this is the re-run from its header"
        );
    }
    Ok((scn, trace.header.seed, variant, None))
}
