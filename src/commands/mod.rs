pub mod chart;
pub mod cost_budget;
pub mod explain;
pub mod export;
pub mod hunt;
pub mod merge;
pub mod progress;
pub mod replay;
pub mod run;
pub mod run_checks;
pub mod scenarios;
pub mod shrink;
pub mod sweep;
pub mod variants;

pub use run_checks::RunChecksArgs;

use leasehold::{Scenario, ValidScenario};
use leasehold_protocol::Variant;
use std::path::Path;

pub const EXIT_OK: u8 = 0;
pub const EXIT_VIOLATION: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;

/// Print one clear line about bad input and give its exit code.
pub fn bad_input(message: impl std::fmt::Display) -> u8 {
    eprintln!("error: {message}");
    EXIT_BAD_INPUT
}

pub fn load_scenario(path: &Path) -> Result<ValidScenario, u8> {
    Scenario::load(path).map_err(|e| match run_file_kind(path) {
        // The usual mix-up: a file `shrink` or `run --trace` wrote, handed
        // to a command that wants the scenario; say so instead of listing
        // the scenario's fields.
        Some(kind) => bad_input(format!(
            "scenario {}: this is a {kind}, not a scenario; replay it with `leasehold replay {}` or read it with `leasehold explain {}`",
            path.display(),
            leasehold::shell_word(path),
            leasehold::shell_word(path)
        )),
        None => bad_input(format!("scenario {}: {e}", path.display())),
    })
}

/// Whether `path` is a failure file or a trace, told apart by its
/// `format` exactly as `replay`, `explain` and `export` tell them
/// ([`leasehold::trace::replay_input`]), whatever its spacing or key order.
fn run_file_kind(path: &Path) -> Option<&'static str> {
    use leasehold::input_file::{
        MAX_FILE_BYTES, MAX_TRACE_LINE_BYTES, read_bounded, read_first_line,
    };
    use leasehold::trace::{ReplayInput, replay_input};
    // A failure file is one JSON value within the whole-file bound; a trace
    // may be longer, but its first line, the header, says what it is.
    let kind = match read_bounded(path, MAX_FILE_BYTES) {
        Ok(text) => replay_input(&text),
        Err(_) => replay_input(&read_first_line(path, MAX_TRACE_LINE_BYTES).ok()?),
    };
    match kind.ok()? {
        ReplayInput::Failure => Some("failure file (from `leasehold shrink`)"),
        ReplayInput::Trace => Some("trace (from `leasehold run --trace`)"),
    }
}

/// A failure file or a trace, for `replay`, `explain` and `export`: read,
/// checked (bad input names the file and the field or line), and, if
/// another leasehold version wrote it, noted on stderr.
pub fn read_run(path: &Path) -> Result<leasehold::run_file::ReadRun, u8> {
    let name = path.display().to_string();
    // A trace may be large (one line per event): its lines and its whole
    // are bounded, and a failure file is held to the bound of a whole
    // scenario or failure file once told apart.
    let text = leasehold::input_file::read_lines_bounded(
        path,
        leasehold::input_file::MAX_TRACE_LINE_BYTES,
        leasehold::input_file::MAX_TRACE_BYTES,
    )
    .map_err(|e| bad_input(format!("{name}: {e}")))?;
    let run =
        leasehold::run_file::ReadRun::read(&text).map_err(|e| bad_input(format!("{name}: {e}")))?;
    if let Some(note) = run.version_note(&name) {
        eprintln!("{note}");
    }
    Ok(run)
}

/// The scenario file and the variant a command runs, checked in that order.
pub fn load_run_inputs(path: &Path, variant: &str) -> Result<(ValidScenario, Variant), u8> {
    Ok((load_scenario(path)?, parse_variant("--variant", variant)?))
}

/// A variant name given to `flag`; an unknown one names the flag and lists
/// the known names.
pub fn parse_variant(flag: &str, name: &str) -> Result<Variant, u8> {
    leasehold::trace::named_variant(flag, name).map_err(bad_input)
}

/// Prove `dir` is an existing directory we can write in, before any work
/// whose results would go there is done.
pub fn writable_dir(dir: &Path) -> Result<(), String> {
    if !dir.is_dir() {
        return Err("not an existing directory (create it first)".into());
    }
    let probe = dir.join(format!(".leasehold-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| format!("cannot write in the directory: {e}"))?;
    std::fs::remove_file(&probe).map_err(|e| format!("cannot write in the directory: {e}"))?;
    Ok(())
}

/// Prove the file `path` can be written (created, or an existing one
/// replaced) before the work that produces it; leaves no file behind that
/// was not there before.
pub fn writable_file(path: &Path) -> Result<(), String> {
    if path.is_dir() {
        return Err("is a directory".into());
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(format!("the directory {} does not exist", parent.display()));
    }
    if path.exists() {
        // Opened without truncating: the old content stays until the write.
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(|e| e.to_string())
    } else {
        std::fs::File::create(path).map_err(|e| e.to_string())?;
        std::fs::remove_file(path).map_err(|e| e.to_string())
    }
}

/// Check an output file before the work that fills it: not one of the
/// command's `inputs`, and writable. Bad input otherwise, naming `flag`.
pub fn output_file(flag: &str, out: &Path, inputs: &[&Path]) -> Result<(), u8> {
    for input in inputs {
        not_the_input(flag, out, input)?;
    }
    writable_file(out).map_err(|e| bad_input(format!("{flag} {}: {e}", out.display())))
}

/// Refuse an output path that is the command's own input: writing it would
/// destroy what the command reads (`run S --trace S` truncated the scenario).
pub fn not_the_input(flag: &str, out: &Path, input: &Path) -> Result<(), u8> {
    if names_one_file(out, input) {
        return Err(bad_input(format!(
            "{flag} {}: is the input file {}; write the output elsewhere",
            out.display(),
            input.display()
        )));
    }
    Ok(())
}

/// Whether two paths name one file, whether or not it exists yet: the same
/// path spelt differently (`./x`, `..`, a symlink) or a hard link.
pub fn names_one_file(a: &Path, b: &Path) -> bool {
    // A file not written yet is named by its directory's canonical path.
    let canonical = |p: &Path| {
        p.canonicalize().ok().or_else(|| {
            let dir = match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            Some(dir.canonicalize().ok()?.join(p.file_name()?))
        })
    };
    let same_path = matches!((canonical(a), canonical(b)), (Some(x), Some(y)) if x == y);
    // A hard link has a path of its own: only the file's identity tells.
    same_path || same_file::is_same_file(a, b).unwrap_or(false)
}
