//! The names and versions of leasehold's own file formats, and telling one
//! from another: what `replay`, `explain` and `export` were given, and the
//! note about a file another leasehold version wrote.

use crate::strict_json::strip_position;
use leasehold_check::Invariant;
use leasehold_protocol::Variant;
use serde_json::Value;

/// The leasehold version every file records: a run is a pure function of
/// (scenario, seed, variant, leasehold version).
pub const LEASEHOLD_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A trace (`run --trace`): JSON Lines.
pub const TRACE_FORMAT: &str = "leasehold-trace/1";
/// A failure file (`shrink`): one JSON object.
pub const FAILURE_FORMAT: &str = "leasehold-failure/1";
/// A results file (`sweep --out`): JSON Lines, one seed a line.
pub const RESULTS_FORMAT: &str = "leasehold-results/1";

/// A file's (or a line's) `"format"` must be `format`; `what` names the
/// kind of file ("a leasehold trace").
pub fn expect_format(value: &Value, format: &str, what: &str) -> Result<(), String> {
    match value.get("format") {
        Some(Value::String(f)) if f == format => Ok(()),
        Some(f) => Err(format!("format: {f} is not \"{format}\", not {what}")),
        None if value.is_object() => Err(format!(
            "format: missing ({what} has \"format\": \"{format}\")"
        )),
        None => Err(format!("not a JSON object, not {what}")),
    }
}

/// The variant `name` given as `field` (a file's field or a flag); an
/// unknown one names the field and lists the known ones.
pub fn named_variant(field: &str, name: &str) -> Result<Variant, String> {
    Variant::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Variant::all().map(|v| v.name()).collect();
        format!(
            "{field}: unknown variant {name:?}; known: {}",
            known.join(", ")
        )
    })
}

/// An invariant named as `field`; `also` lists names the file may hold
/// besides the checkers' invariants (a results file's `determinism`).
pub fn known_invariant(field: &str, name: &str, also: &[&str]) -> Result<(), String> {
    if Invariant::from_name(name).is_some() || also.contains(&name) {
        return Ok(());
    }
    let known: Vec<&str> = Invariant::ALL
        .iter()
        .map(|i| i.name())
        .chain(also.iter().copied())
        .collect();
    Err(format!(
        "{field}: {name:?} is not an invariant; known: {}",
        known.join(", ")
    ))
}

/// One line on stderr's worth: a file written by another leasehold version.
/// A run is a pure function of (scenario, seed, variant, leasehold version),
/// so another version may legitimately run differently; this is a note, not
/// an error. `None` when the versions agree.
pub fn version_note(file: &str, written_by: &str) -> Option<String> {
    (written_by != LEASEHOLD_VERSION).then(|| {
        format!(
            "note: {file} was written by leasehold {written_by}, this is leasehold {LEASEHOLD_VERSION}; \
             runs may differ between versions"
        )
    })
}

/// What `replay`, `explain` and `export` were given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayInput {
    /// A failure file (`shrink`): one JSON object.
    Failure,
    /// A trace (`run --trace`): JSON Lines.
    Trace,
}

/// Tell a failure file from a trace by its `format`; anything else (a
/// scenario, a results file, another format) is an error saying what was
/// expected and what was found.
pub fn replay_input(text: &str) -> Result<ReplayInput, String> {
    let expected = format!(
        "expected a failure file (\"format\": \"{FAILURE_FORMAT}\", from `leasehold shrink`) \
         or a trace (\"format\": \"{TRACE_FORMAT}\", from `leasehold run --trace`)"
    );
    if text.trim().is_empty() {
        return Err(format!("line 1: the file is empty; {expected}"));
    }
    // A failure file (or a scenario) is one JSON value; a trace's first line
    // is its header.
    let (value, line) = match serde_json::from_str::<Value>(text) {
        Ok(v) => (v, None),
        Err(whole) => {
            let first = text.lines().next().unwrap_or_default();
            match serde_json::from_str::<Value>(first) {
                Ok(v) => (v, Some(1)),
                // Corrupt, but says what it is: its own parser names the spot.
                Err(_) if text.contains(FAILURE_FORMAT) => return Ok(ReplayInput::Failure),
                Err(_) if first.contains(TRACE_FORMAT) => return Ok(ReplayInput::Trace),
                Err(_) => {
                    return Err(format!(
                        "line {} column {}: not JSON ({}); {expected}",
                        whole.line(),
                        whole.column(),
                        strip_position(&whole)
                    ));
                }
            }
        }
    };
    let at = line.map_or(String::new(), |n| format!("line {n}: "));
    let Value::Object(object) = &value else {
        return Err(format!("{at}not a JSON object; {expected}"));
    };
    let format = match object.get("format") {
        Some(Value::String(f)) => f.as_str(),
        Some(other) => return Err(format!("{at}format: {other} is not a string; {expected}")),
        None => {
            let has = |k: &[&str]| k.iter().all(|k| object.contains_key(*k));
            let looks_like = if has(&["plan", "invariant", "scenario"]) {
                " (it has \"plan\", \"invariant\" and \"scenario\": a failure file without its format?)"
            } else if has(&["fleet", "tasks"]) {
                " (it has \"fleet\" and \"tasks\": this is a scenario file; run it with `leasehold run` or `leasehold shrink`)"
            } else if has(&["scenario", "seed", "variant"]) {
                " (it has \"scenario\", \"seed\" and \"variant\": a trace header without its format?)"
            } else if has(&["end"]) {
                " (it has \"end\": a trace's last line, not its first)"
            } else {
                ""
            };
            let found = if looks_like.is_empty() {
                let shown: Vec<&str> = object.keys().map(String::as_str).take(8).collect();
                format!(" (found fields: {})", shown.join(", "))
            } else {
                String::new()
            };
            return Err(format!(
                "{at}format: missing{looks_like}{found}; {expected}"
            ));
        }
    };
    match format {
        FAILURE_FORMAT => Ok(ReplayInput::Failure),
        TRACE_FORMAT => Ok(ReplayInput::Trace),
        RESULTS_FORMAT => Err(format!(
            "{at}format: \"{RESULTS_FORMAT}\" is a results file (from `sweep --out`); {expected} \
             (each result line carries the `replay` command of its seed)"
        )),
        other if other.split('/').next() == FAILURE_FORMAT.split('/').next() => Err(format!(
            "{at}format: {other:?} is not \"{FAILURE_FORMAT}\" (a failure file of another format version)"
        )),
        other if other.split('/').next() == TRACE_FORMAT.split('/').next() => Err(format!(
            "{at}format: {other:?} is not \"{TRACE_FORMAT}\" (a trace of another format version)"
        )),
        other => Err(format!(
            "{at}format: {other:?} is not a format this reads; {expected}"
        )),
    }
}
