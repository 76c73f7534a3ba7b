//! `leasehold explain`: a failure file or a trace re-run and told as a story.

use super::{EXIT_OK, EXIT_VIOLATION, bad_input};
use leasehold::explain::{Telling, explain_with};
use leasehold::run_file::{ReadRun, RunFile};
use leasehold::trace::replay_trace;
use std::path::Path;

/// `leasehold explain FILE [--task N]... [--all]`: FILE is a failure file
/// (from `shrink`) or a trace.
pub fn run(path: &Path, tasks: &[u32], all: bool, max_memory: Option<&str>) -> u8 {
    let run = match load(path, max_memory) {
        Ok(run) => run,
        Err(code) => return code,
    };
    // Task ids are 0..total: a shrunk scenario numbers the tasks it kept anew.
    let total = run.scn.scenario.tasks.total();
    if let Some(&task) = tasks.iter().find(|&&t| t >= total) {
        return bad_input(format!(
            "--task: task {task} is not in this run (its tasks are 0 to {})",
            total.saturating_sub(1)
        ));
    }
    let telling = Telling {
        tasks: (!tasks.is_empty()).then(|| tasks.iter().copied().collect()),
        all,
    };
    let (lines, outcome) = explain_with(&run.scn, run.seed(), run.variant, &run.rerun(), &telling);
    for line in lines {
        println!("{line}");
    }
    if outcome.ok() {
        EXIT_OK
    } else {
        EXIT_VIOLATION
    }
}

/// Read a failure file or a trace into what re-runs it (for `explain` and
/// `export`). What they tell or draw is the re-run; for a trace whose
/// records are not that run (an edited trace; a corrupt one is refused
/// when read) a note says so.
pub fn load(path: &Path, max_memory: Option<&str>) -> Result<ReadRun, u8> {
    let run = super::read_run(path, max_memory)?;
    if run.is_live() {
        eprintln!(
            "note: {} is a live run's trace: told from its records (a live run is not deterministic)",
            path.display()
        );
        return Ok(run);
    }
    if let RunFile::Trace(trace) = &run.file
        && let Some(line) = replay_trace(trace, &run.scn, run.variant).diverges_at()
    {
        eprintln!(
            "note: {} differs from its re-run from line {line} on (`leasehold replay` shows how); \
             this is the re-run from its header",
            path.display()
        );
    }
    Ok(run)
}
