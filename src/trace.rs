//! Trace files: JSON Lines. Line 1 is a header (format, leasehold version, the
//! scenario's full text, seed, variant); then one record a line; last, an
//! `end` line with the trace hash, the event count and the verdict. Reading
//! checks every line ([`check_record`]; record lines only in a trace this
//! version wrote); `replay` then re-runs from the header alone and compares
//! every record and the end line.
//!
//! Also what the file formats share: telling which kind of file a reader was
//! given ([`replay_input`]), errors that name the field they are about
//! ([`from_value_named`]), and the note about a file another leasehold
//! version wrote ([`version_note`]).

use crate::run::{LEASEHOLD_VERSION, RunOutcome};
use leasehold_check::Invariant;
use leasehold_protocol::{DocKey, DocValue, LeaseEvent, Variant};
use leasehold_sim::{Observer, OwnedRecord, Record};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Write;

pub const TRACE_FORMAT: &str = "leasehold-trace/1";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceHeader {
    pub format: String,
    pub leasehold_version: String,
    pub scenario: String,
    pub seed: u64,
    pub variant: String,
    /// A live run's trace (`leasehold live`): its records cannot be had
    /// again by re-running; readers judge and tell the records themselves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveHeader>,
}

/// What a live run's trace says about the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveHeader {
    /// The store, without its password.
    pub store: String,
    pub speed: u64,
    pub note: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceEnd {
    pub trace_hash: String,
    pub events: u64,
    pub ok: bool,
    pub invariants: Vec<String>,
    /// A live run's end, in scenario µs (a simulated run's is its last
    /// event's): what its records are judged at again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_us: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceFooter {
    pub end: TraceEnd,
}

impl TraceEnd {
    /// The end line a run writes.
    pub fn of(outcome: &RunOutcome) -> TraceEnd {
        TraceEnd {
            trace_hash: outcome.trace_hash_hex(),
            events: outcome.events(),
            ok: outcome.ok(),
            invariants: outcome
                .invariants
                .iter()
                .map(|i| i.name().to_string())
                .chain(
                    outcome
                        .cut_short
                        .as_ref()
                        .map(|_| crate::run::CUT_SHORT.to_string()),
                )
                .collect(),
            end_us: None,
        }
    }

    /// The first field in which `actual` (a re-run's end) differs from this
    /// one (the file's): (field, in the file, in the re-run).
    pub fn first_difference(&self, actual: &TraceEnd) -> Option<(&'static str, String, String)> {
        if self.events != actual.events {
            return Some(("events", self.events.to_string(), actual.events.to_string()));
        }
        if self.ok != actual.ok {
            return Some(("ok", self.ok.to_string(), actual.ok.to_string()));
        }
        if self.invariants != actual.invariants {
            return Some((
                "invariants",
                format!("{:?}", self.invariants),
                format!("{:?}", actual.invariants),
            ));
        }
        if self.trace_hash != actual.trace_hash {
            return Some((
                "trace_hash",
                self.trace_hash.clone(),
                actual.trace_hash.clone(),
            ));
        }
        None
    }
}

impl TraceHeader {
    /// The header's variant; an unknown one names the field and the known ones.
    pub fn variant(&self) -> Result<Variant, String> {
        named_variant("variant", &self.variant).map_err(|e| format!("line 1: {e}"))
    }

    pub fn new(scenario_source: &str, seed: u64, variant: &str) -> TraceHeader {
        TraceHeader {
            format: TRACE_FORMAT.to_string(),
            leasehold_version: LEASEHOLD_VERSION.to_string(),
            scenario: scenario_source.to_string(),
            seed,
            variant: variant.to_string(),
            live: None,
        }
    }
}

/// Serialises one record exactly as trace files hold it.
pub fn record_line(record: &Record<'_, DocKey, DocValue, LeaseEvent>) -> String {
    serde_json::to_string(record).expect("records always serialise")
}

/// Writes every record as it happens. IO errors are kept, not panicked on,
/// and reported once the run is over.
pub struct TraceWriter<W: Write> {
    out: W,
    pub lines: u64,
    pub error: Option<std::io::Error>,
}

impl<W: Write> TraceWriter<W> {
    pub fn new(mut out: W, header: &TraceHeader) -> std::io::Result<TraceWriter<W>> {
        serde_json::to_writer(&mut out, header)?;
        out.write_all(b"\n")?;
        Ok(TraceWriter {
            out,
            lines: 1,
            error: None,
        })
    }

    pub fn finish(mut self, end: TraceEnd) -> std::io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        serde_json::to_writer(&mut self.out, &TraceFooter { end })?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }
}

impl<W: Write> Observer<DocKey, DocValue, LeaseEvent> for TraceWriter<W> {
    fn record(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        if self.error.is_some() {
            return;
        }
        let result = serde_json::to_writer(&mut self.out, record).map_err(std::io::Error::from);
        if let Err(e) = result.and_then(|_| self.out.write_all(b"\n")) {
            self.error = Some(e);
        }
        self.lines += 1;
    }
}

/// A trace file read back: the header, the record lines, the footer.
pub struct TraceFile {
    pub header: TraceHeader,
    pub records: Vec<String>,
    pub footer: TraceFooter,
}

impl TraceFile {
    /// Errors name the line (1-based) that is not what a trace holds.
    pub fn parse(text: &str) -> Result<TraceFile, String> {
        let mut lines: Vec<&str> = text.lines().collect();
        if lines.is_empty() {
            return Err("line 1: the file is empty, not a leasehold trace".into());
        }
        let first = crate::strict_json::parse_or(lines[0], |e| {
            format!("not a leasehold trace header (not JSON: {e})")
        })
        .map_err(|e| format!("line 1: {e}"))?;
        expect_format(&first, TRACE_FORMAT, "a leasehold trace's header")
            .map_err(|e| format!("line 1: {e}"))?;
        let header: TraceHeader = from_value_named(&first)
            .map_err(|e| format!("line 1: not a leasehold trace header: {e}"))?;
        crate::strict_json::check_shape(&first, &header).map_err(|e| format!("line 1: {e}"))?;
        let last = lines.len();
        if last < 2 {
            return Err("line 2: the trace ends after its header (no end line)".into());
        }
        let end = crate::strict_json::parse_or(lines[last - 1], |e| {
            format!("not the trace's end line ({e}); the file may be truncated")
        })
        .map_err(|e| format!("line {last}: {e}"))?;
        let footer: TraceFooter = from_value_named(&end)
            .map_err(|e| format!("line {last}: not the trace's end line: {e}"))?;
        crate::strict_json::check_shape(&end, &footer).map_err(|e| format!("line {last}: {e}"))?;
        // Before any comparison with a re-run: a line that is not a record is
        // a corrupt file, not a simulator that changed. Only for a trace
        // this version wrote: another version may write records this one
        // does not know, and its differences are divergences the version
        // note already warns of, not corruption.
        if header.leasehold_version == LEASEHOLD_VERSION || header.live.is_some() {
            for (i, line) in lines.iter().enumerate().take(last - 1).skip(1) {
                check_record(line).map_err(|e| format!("line {}: {e}", i + 1))?;
            }
        }
        lines.truncate(last - 1);
        let records = lines.drain(1..).map(str::to_string).collect();
        Ok(TraceFile {
            header,
            records,
            footer,
        })
    }
}

impl TraceFile {
    /// The records as a recorded run, to be judged again (`replay
    /// --check`, and every reader of a live run's trace).
    pub fn recorded(&self) -> crate::run::RecordedRun {
        crate::run::RecordedRun {
            records: self.records.clone(),
            end_us: self.footer.end.end_us,
            cut_short: self
                .footer
                .end
                .invariants
                .iter()
                .any(|i| i == crate::run::CUT_SHORT),
        }
    }
}

/// Check that `line` is a record as a run writes it: JSON with no key twice,
/// that reads as a record (known kind, fields of the right types, none
/// unknown) and writes back as the same JSON. Errors name the field.
pub fn check_record(line: &str) -> Result<(), String> {
    let value = crate::strict_json::parse_or(line, |e| {
        format!(
            "not a JSON record (column {}: {})",
            e.column(),
            strip_position(e)
        )
    })?;
    let record: OwnedRecord<DocKey, DocValue, LeaseEvent> =
        from_value_named(&value).map_err(|e| format!("not a trace record: {e}"))?;
    let written = serde_json::to_value(record.as_record()).expect("records always serialise");
    crate::strict_json::check_exact(&value, &written)
        .map_err(|e| format!("not a trace record as leasehold writes it: {e}"))
}

/// Compares a re-run's records, one by one, with a trace file's.
pub struct TraceComparer<'a> {
    expected: &'a [String],
    pub compared: usize,
    /// (1-based line in the file, expected, actual)
    pub first_divergence: Option<(usize, String, String)>,
}

impl<'a> TraceComparer<'a> {
    pub fn new(expected: &'a [String]) -> TraceComparer<'a> {
        TraceComparer {
            expected,
            compared: 0,
            first_divergence: None,
        }
    }

    /// Call after the run: a re-run that produced fewer records diverges too.
    pub fn finish(&mut self) {
        if self.first_divergence.is_none() && self.compared < self.expected.len() {
            self.first_divergence = Some((
                self.compared + 2,
                self.expected[self.compared].clone(),
                "(the re-run ended here)".into(),
            ));
        }
    }
}

impl Observer<DocKey, DocValue, LeaseEvent> for TraceComparer<'_> {
    fn record(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        if self.first_divergence.is_some() {
            return;
        }
        let actual = record_line(record);
        match self.expected.get(self.compared) {
            Some(expected) if *expected == actual => {}
            Some(expected) => {
                self.first_divergence = Some((self.compared + 2, expected.clone(), actual));
            }
            None => {
                self.first_divergence =
                    Some((self.compared + 2, "(the trace ended here)".into(), actual));
            }
        }
        self.compared += 1;
    }
}

/// A trace re-run from its header and held against the file.
pub struct TraceReplay {
    pub outcome: RunOutcome,
    /// Records compared before the first difference (or all of them).
    pub compared: usize,
    /// (1-based line in the file, expected, actual)
    pub first_divergence: Option<(usize, String, String)>,
    /// When every record matched: the first end-line field that does not
    /// (field, in the file, in the re-run).
    pub end_difference: Option<(&'static str, String, String)>,
    /// The end line's number in the file.
    pub end_line: usize,
}

impl TraceReplay {
    pub fn identical(&self) -> bool {
        self.first_divergence.is_none() && self.end_difference.is_none()
    }

    /// The line of the file where it and its re-run part ways.
    pub fn diverges_at(&self) -> Option<usize> {
        match (&self.first_divergence, &self.end_difference) {
            (Some((line, _, _)), _) => Some(*line),
            (None, Some(_)) => Some(self.end_line),
            (None, None) => None,
        }
    }
}

/// Re-run `trace` (its header's `scn` and `variant`) and compare every
/// record, then the end line (events, verdict, hash).
pub fn replay_trace(
    trace: &TraceFile,
    scn: &crate::ValidScenario,
    variant: Variant,
) -> TraceReplay {
    let mut comparer = TraceComparer::new(&trace.records);
    let outcome = crate::simulate(scn, trace.header.seed, variant, Some(&mut comparer));
    comparer.finish();
    let end_difference = if comparer.first_divergence.is_none() {
        trace.footer.end.first_difference(&TraceEnd::of(&outcome))
    } else {
        None
    };
    TraceReplay {
        outcome,
        compared: comparer.compared,
        first_divergence: comparer.first_divergence,
        end_difference,
        end_line: trace.records.len() + 2,
    }
}

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
            "{field}: unknown variant \"{name}\"; known: {}",
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
        "{field}: \"{name}\" is not an invariant; known: {}",
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
    use crate::results_file::RESULTS_FORMAT;
    use crate::shrink::FAILURE_FORMAT;
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
            "{at}format: \"{other}\" is not \"{FAILURE_FORMAT}\" (a failure file of another format version)"
        )),
        other if other.split('/').next() == TRACE_FORMAT.split('/').next() => Err(format!(
            "{at}format: \"{other}\" is not \"{TRACE_FORMAT}\" (a trace of another format version)"
        )),
        other => Err(format!(
            "{at}format: \"{other}\" is not a format this reads; {expected}"
        )),
    }
}

/// A serde_json error's message without its " at line L column C", on
/// one line.
pub fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    one_line(text.strip_suffix(&suffix).unwrap_or(&text))
}

/// `text` on one line: a control character it quotes from the input (a key
/// or a string holding a newline) is shown escaped, as JSON writes it, so
/// a message about bad input stays the one line the contract promises.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Deserialize `value` as a `T` with an error that names the field it is
/// about (`plan[2].node: invalid type: ...`), by `serde_path_to_error`.
/// An internally tagged enum is read whole, so the path stops at it; the
/// field inside is then the one whose value the message quotes.
pub fn from_value_named<T: DeserializeOwned>(value: &Value) -> Result<T, String> {
    let e = match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(t) => return Ok(t),
        Err(e) => e,
    };
    let message = e.inner().to_string();
    let mut name = e.path().to_string();
    if name == "." {
        name.clear();
    }
    let mut at = value;
    for segment in e.path().iter() {
        at = match segment {
            serde_path_to_error::Segment::Seq { index } => &at[*index],
            serde_path_to_error::Segment::Map { key } => &at[key.as_str()],
            _ => break,
        };
    }
    // Inside an internally tagged enum (or a flattened struct) serde reads
    // from a buffer and the path ends there: the one field whose value the
    // message quotes, at any depth below, is the one it is about.
    let mut quoted = Vec::new();
    quoting(&message, at, &mut String::new(), &mut quoted);
    if let [key] = &quoted[..] {
        if !name.is_empty() && !key.starts_with('[') {
            name.push('.');
        }
        name.push_str(key);
    }
    Err(one_line(&if name.is_empty() {
        message
    } else {
        format!("{name}: {message}")
    }))
}

/// The paths below `value` (objects' fields and arrays' items), at every
/// depth, whose value `message` quotes. The caller names a field only when
/// exactly one does: two fields holding the quoted value (an `incarnation`
/// of 1 beside a `lease_lost` of 1) could be either, and a wrong name
/// misleads more than none.
fn quoting(message: &str, value: &Value, path: &mut String, found: &mut Vec<String>) {
    let children: Vec<(String, &Value)> = match value {
        Value::Object(object) => object.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("[{i}]"), v))
            .collect(),
        _ => return,
    };
    let join = |path: &str, key: &str| {
        if path.is_empty() || key.starts_with('[') {
            format!("{path}{key}")
        } else {
            format!("{path}.{key}")
        }
    };
    for (key, child) in children {
        if mentions(message, child) {
            found.push(join(path, &key));
        }
        let len = path.len();
        *path = join(path, &key);
        quoting(message, child, path, found);
        path.truncate(len);
    }
}

/// Whether a serde error message shows `value` as what it did not expect.
fn mentions(message: &str, value: &Value) -> bool {
    match value {
        Value::String(s) => {
            message.contains(&format!("string {s:?}"))
                || message.contains(&format!("variant `{s}`"))
        }
        Value::Number(n) => {
            message.contains(&format!("integer `{n}`"))
                || message.contains(&format!("floating point `{n}`"))
        }
        Value::Bool(b) => message.contains(&format!("boolean `{b}`")),
        Value::Null => message.contains("invalid type: null") || message.contains("unit"),
        Value::Object(_) => message.contains("invalid type: map"),
        Value::Array(_) => message.contains("invalid type: sequence"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)] // read only to see where reading fails
    struct Flagged {
        flag: bool,
    }

    #[derive(Debug, Deserialize)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Tagged {
        Entry { count: u32, inner: Flagged },
    }

    /// The largest record a run can write, a scan's page of the most
    /// documents `protocol.scan_page_size` allows, each of the longest kind
    /// with every number at its widest, fits the bound a trace's record
    /// lines are read with.
    #[test]
    fn the_largest_record_fits_the_bound_on_record_lines() {
        use leasehold_interface::{Document, RequestId, StoreReply, StoreRequest};
        use leasehold_protocol::{MemberDoc, MemberStatus, Owner, TaskId, TaskLeaseDoc};
        use leasehold_sim::{Actor, NodeId, RecordKind};
        let owner = Owner {
            worker: u32::MAX,
            incarnation: u32::MAX,
        };
        let key = DocKey::OwnedIdx {
            owner,
            task: TaskId(u32::MAX),
        };
        let values = [
            DocValue::Member(MemberDoc {
                owner,
                status: MemberStatus::Alive,
                beats: u64::MAX,
                lease_timeout_ms: u64::MAX,
                written_at_ms: u64::MAX,
            }),
            DocValue::TaskLease(TaskLeaseDoc {
                owner,
                epoch: u64::MAX,
                status: MemberStatus::Alive,
                beats: u64::MAX,
                lease_timeout_ms: u64::MAX,
                written_at_ms: u64::MAX,
            }),
        ];
        let longest = values
            .into_iter()
            .max_by_key(|v| serde_json::to_string(v).unwrap().len())
            .unwrap();
        let doc = Document {
            key,
            version: u64::MAX,
            value: longest,
        };
        let op = StoreRequest::ScanIndex {
            start: key,
            end: key,
            limit: u32::MAX,
        };
        let reply = StoreReply::Scanned {
            docs: vec![doc.clone(); 10_000],
            more: true,
        };
        let record = Record {
            time_us: u64::MAX,
            kind: RecordKind::Store {
                actor: Actor::Node {
                    node: NodeId(u32::MAX),
                    incarnation: u32::MAX,
                },
                request: RequestId(u64::MAX),
                op: &op,
                reply: &reply,
                before: Some(&doc),
                decided_us: u64::MAX,
            },
        };
        let len = record_line(&record).len() as u64;
        assert!(
            len < crate::input_file::MAX_RECORD_LINE_BYTES / 2,
            "{len} bytes"
        );
    }

    #[test]
    fn a_field_is_named_only_when_one_holds_the_quoted_value() {
        // Inside a tagged enum serde loses the path; the quoted value finds
        // the field, but two fields hold a 1 here and either could be it.
        let two = serde_json::json!({"kind": "entry", "count": 1, "inner": {"flag": 1}});
        let e = from_value_named::<Tagged>(&two).unwrap_err();
        assert!(e.starts_with("invalid type: integer `1`"), "{e}");
        let one = serde_json::json!({"kind": "entry", "count": 2, "inner": {"flag": 1}});
        let e = from_value_named::<Tagged>(&one).unwrap_err();
        assert!(
            e.starts_with("inner.flag: invalid type: integer `1`"),
            "{e}"
        );
    }
}
