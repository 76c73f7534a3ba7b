//! The files `replay`, `explain` and `export` read: a failure file (from
//! `shrink`) or a trace (from `run --trace`), told apart by their `format`,
//! checked, and turned into what re-runs them.

use crate::shrink::FailureFile;
use leasehold_protocol::Variant;
use leasehold_run::run::Rerun;
use leasehold_run::trace::TraceFile;
use leasehold_scenario::file_format::{ReplayInput, replay_input, version_note};
use leasehold_scenario::scenario::Scenario;
use leasehold_scenario::scenario::ValidScenario;
use leasehold_sim::FaultPlan;
use std::sync::Arc;

pub enum RunFile {
    // Boxed: a failure file carries its whole scenario (1 KiB and more),
    // and a trace's header and end line are some 200 bytes.
    Failure(Box<FailureFile>),
    Trace(Box<TraceFile>),
}

/// A run file read and checked: the file, and the scenario and variant that
/// re-run it.
pub struct ReadRun {
    pub file: RunFile,
    pub scn: ValidScenario,
    pub variant: Variant,
}

impl ReadRun {
    /// Read `text`; errors name the field or line, or say what the file is
    /// instead.
    pub fn read(text: &str) -> Result<ReadRun, String> {
        Ok(match replay_input(text)? {
            ReplayInput::Failure => {
                let limit = leasehold_scenario::input_file::MAX_FILE_BYTES;
                if text.len() as u64 > limit {
                    return Err(format!(
                        "larger than {}",
                        leasehold_scenario::input_file::size(limit)
                    ));
                }
                let (f, scn, variant) = FailureFile::parse_checked(text)?;
                ReadRun {
                    scn,
                    variant,
                    file: RunFile::Failure(Box::new(f)),
                }
            }
            ReplayInput::Trace => {
                let t = TraceFile::parse(text)?;
                let scn = Scenario::parse(&t.header.scenario).map_err(|e| {
                    format!("line 1: scenario: the embedded scenario is invalid: {e}")
                })?;
                ReadRun {
                    scn,
                    variant: t.header.variant()?,
                    file: RunFile::Trace(Box::new(t)),
                }
            }
        })
    }

    /// The note for a file another leasehold version wrote, naming it as
    /// `name`; the command prints it once it goes ahead.
    pub fn version_note(&self, name: &str) -> Option<String> {
        let written_by = match &self.file {
            RunFile::Failure(f) => &f.leasehold_version,
            RunFile::Trace(t) => &t.header.leasehold_version,
        };
        version_note(name, written_by)
    }

    pub fn seed(&self) -> u64 {
        match &self.file {
            RunFile::Failure(f) => f.seed,
            RunFile::Trace(t) => t.header.seed,
        }
    }

    /// The failure file's plan; a trace re-runs from its seed's own draw.
    pub fn plan(&self) -> Option<FaultPlan> {
        match &self.file {
            RunFile::Failure(f) => Some(f.plan.clone()),
            RunFile::Trace(_) => None,
        }
    }

    /// Whether this is a live run's trace (`leasehold live`).
    pub fn is_live(&self) -> bool {
        matches!(&self.file, RunFile::Trace(t) if t.header.live.is_some())
    }

    /// How the run is had again: a live run's trace from its records
    /// (re-running it would be another run), anything else re-simulated
    /// from its seed and plan.
    pub fn rerun(&self) -> Rerun {
        match &self.file {
            RunFile::Trace(t) if t.header.live.is_some() => Rerun::Recorded(Arc::new(t.recorded())),
            _ => Rerun::Seed(self.plan()),
        }
    }
}
