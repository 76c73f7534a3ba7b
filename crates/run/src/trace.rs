//! Trace files: JSON Lines. Line 1 is a header (format, leasehold version, the
//! scenario's full text, seed, variant); then one record a line; last, an
//! `end` line with the trace hash, the event count and the verdict. Reading
//! checks every line ([`check_record`]; record lines only in a trace this
//! version wrote); `replay` then re-runs from the header alone and compares
//! every record and the end line.
//!
//! What the file formats share (telling files apart, errors that name the
//! field) lives in `file_format` and `strict_json`; it is re-exported here,
//! where readers of traces have always found it.

use crate::run::{LEASEHOLD_VERSION, RunOutcome};
use leasehold_protocol::{DocKey, DocValue, LeaseEvent, Variant};
use leasehold_sim::{Observer, OwnedRecord, Record};
use serde::{Deserialize, Serialize};
use std::io::Write;

// What every file format shares is defined with the input files;
// re-exported where readers of traces have always found it.
pub use leasehold_scenario::file_format::{
    ReplayInput, TRACE_FORMAT, expect_format, known_invariant, named_variant, replay_input,
    version_note,
};
pub use leasehold_scenario::strict_json::{from_value_named, one_line, strip_position};

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
        let first = leasehold_scenario::strict_json::parse_or(lines[0], |e| {
            format!("not a leasehold trace header (not JSON: {e})")
        })
        .map_err(|e| format!("line 1: {e}"))?;
        expect_format(&first, TRACE_FORMAT, "a leasehold trace's header")
            .map_err(|e| format!("line 1: {e}"))?;
        let header: TraceHeader = from_value_named(&first)
            .map_err(|e| format!("line 1: not a leasehold trace header: {e}"))?;
        leasehold_scenario::strict_json::check_shape(&first, &header)
            .map_err(|e| format!("line 1: {e}"))?;
        let last = lines.len();
        if last < 2 {
            return Err("line 2: the trace ends after its header (no end line)".into());
        }
        let end = leasehold_scenario::strict_json::parse_or(lines[last - 1], |e| {
            format!("not the trace's end line ({e}); the file may be truncated")
        })
        .map_err(|e| format!("line {last}: {e}"))?;
        let footer: TraceFooter = from_value_named(&end)
            .map_err(|e| format!("line {last}: not the trace's end line: {e}"))?;
        leasehold_scenario::strict_json::check_shape(&end, &footer)
            .map_err(|e| format!("line {last}: {e}"))?;
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
    let value = leasehold_scenario::strict_json::parse_or(line, |e| {
        format!(
            "not a JSON record (column {}: {})",
            e.column(),
            strip_position(e)
        )
    })?;
    let record: OwnedRecord<DocKey, DocValue, LeaseEvent> =
        from_value_named(&value).map_err(|e| format!("not a trace record: {e}"))?;
    let written = serde_json::to_value(record.as_record()).expect("records always serialise");
    leasehold_scenario::strict_json::check_exact(&value, &written)
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
    scn: &leasehold_scenario::scenario::ValidScenario,
    variant: Variant,
) -> TraceReplay {
    let mut comparer = TraceComparer::new(&trace.records);
    let outcome = crate::run::simulate(scn, trace.header.seed, variant, Some(&mut comparer));
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
            len < leasehold_scenario::input_file::MAX_RECORD_LINE_BYTES / 2,
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
