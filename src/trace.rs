//! Trace files: JSON Lines. Line 1 is a header (format, leasehold version, the
//! scenario's full text, seed, variant); then one record a line; last, an
//! `end` line with the trace hash. `replay` re-runs from the header alone.

use crate::run::LEASEHOLD_VERSION;
use leasehold_protocol::{DocKey, DocValue, LeaseEvent};
use leasehold_sim::{Observer, Record};
use serde::{Deserialize, Serialize};
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
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceEnd {
    pub trace_hash: String,
    pub events: u64,
    pub ok: bool,
    pub invariants: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceFooter {
    pub end: TraceEnd,
}

impl TraceHeader {
    pub fn new(scenario_source: &str, seed: u64, variant: &str) -> TraceHeader {
        TraceHeader {
            format: TRACE_FORMAT.to_string(),
            leasehold_version: LEASEHOLD_VERSION.to_string(),
            scenario: scenario_source.to_string(),
            seed,
            variant: variant.to_string(),
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
        let header: TraceHeader = serde_json::from_str(lines[0])
            .map_err(|e| format!("line 1: not a leasehold trace header ({e})"))?;
        if header.format != TRACE_FORMAT {
            return Err(format!(
                "line 1: trace format \"{}\" is not \"{TRACE_FORMAT}\"",
                header.format
            ));
        }
        let last = lines.len();
        if last < 2 {
            return Err("line 2: the trace ends after its header (no end line)".into());
        }
        let footer: TraceFooter = serde_json::from_str(lines[last - 1]).map_err(|e| {
            format!("line {last}: not the trace's end line ({e}); the file may be truncated")
        })?;
        for (i, line) in lines.iter().enumerate().take(last - 1).skip(1) {
            if serde_json::from_str::<serde_json::Value>(line).is_err() {
                return Err(format!("line {}: not a JSON record", i + 1));
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
