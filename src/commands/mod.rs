//! The commands, and what they share: bad-input lines, loading inputs, output paths.

// `print!` and `println!` in every command below write through
// [`report`]: a reader that left (`| head`) ends the report quietly, and the
// command carries on to its verdict, which stays its exit code. (Declared
// before the modules, so these shadow the standard macros in all of them.)
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::commands::report::write(format_args!($($arg)*), false)
    };
}
macro_rules! println {
    () => {
        $crate::commands::report::write(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::commands::report::write(format_args!($($arg)*), true)
    };
}

pub mod chart;
pub mod cost_budget;
pub mod coverage;
pub mod explain;
pub mod export;
pub mod hunt;
pub mod live;
pub mod merge;
pub mod progress;
pub mod replay;
pub mod report;
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

/// Print one clear line about bad input and give its exit code. (One
/// line whatever the message quotes from the input: its control
/// characters are shown escaped.)
pub fn bad_input(message: impl std::fmt::Display) -> u8 {
    eprintln!(
        "error: {}",
        leasehold::trace::one_line(&message.to_string())
    );
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
pub fn read_run(path: &Path, max_memory: Option<&str>) -> Result<leasehold::run_file::ReadRun, u8> {
    let name = path.display().to_string();
    let limit = memory_limit(max_memory)?;
    // Told apart as it is read: what is neither stops the read at once, a
    // trace's lines and whole are bounded, a failure file is held to the
    // bound of a whole scenario or failure file.
    // The text is held, and a trace's lines again as records: half the
    // memory limit at most.
    let max_total = limit.map_or(leasehold::input_file::MAX_TRACE_BYTES, |l| {
        (l.bytes / 2).min(leasehold::input_file::MAX_TRACE_BYTES)
    });
    let text = leasehold::input_file::read_run_text(path, max_total).map_err(|e| {
        let over = limit
            .filter(|_| e.starts_with("larger than"))
            .map_or(String::new(), |l| {
                format!(
                    " (half the memory limit of {})",
                    leasehold::memory_estimate::fmt_limit(l.bytes)
                )
            });
        bad_input(format!("{name}: {e}{over}"))
    })?;
    let run =
        leasehold::run_file::ReadRun::read(&text).map_err(|e| bad_input(format!("{name}: {e}")))?;
    // The re-run, beside the text and the trace's records.
    let estimate =
        leasehold::memory_estimate::run_peak_bytes(&run.scn).saturating_add(2 * text.len() as u64);
    if let Some(limit) = limit {
        let what = format!(
            "re-running {name}: {}",
            leasehold::memory_estimate::describe(&run.scn)
        );
        limit.check(estimate, &what).map_err(bad_input)?;
    }
    if let Some(note) = run.version_note(&name) {
        eprintln!("{note}");
    }
    Ok(run)
}

/// Refuse work whose estimated peak memory (`estimate` bytes, for `what`)
/// is over the limit: `--max-memory` as given (`flag`), or half of the
/// machine's memory. Exit 2 with one line giving the estimate and the limit.
pub fn check_memory(flag: Option<&str>, estimate: u64, what: &str) -> Result<(), u8> {
    match memory_limit(flag)? {
        Some(limit) => limit.check(estimate, what).map_err(bad_input),
        None => Ok(()),
    }
}

/// The limit `--max-memory` sets (or the default); a bad size names the flag.
pub fn memory_limit(
    flag: Option<&str>,
) -> Result<Option<leasehold::memory_estimate::MemoryLimit>, u8> {
    leasehold::memory_estimate::MemoryLimit::from_flag(flag)
        .map_err(|e| bad_input(format!("--max-memory: {e}")))
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
/// written through) before the work that produces it; leaves no file
/// behind that was not there before. A symlink is followed, as the write
/// will follow it: a dangling one is proved by its target.
pub fn writable_file(path: &Path) -> Result<(), String> {
    writable_file_through(path, 0)
}

/// Links followed before a path is refused, as the kernel refuses a longer
/// chain (`ELOOP`).
const MAX_SYMLINKS_FOLLOWED: u32 = 40;

fn writable_file_through(path: &Path, links: u32) -> Result<(), String> {
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
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if path.exists() {
        // Opened without truncating: the old content stays until the write.
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(|e| e.to_string())
    } else if is_link {
        // A dangling symlink: the write will create its target. Removing
        // the path after a probe would remove the link, not the probe.
        if links >= MAX_SYMLINKS_FOLLOWED {
            return Err("too many levels of symbolic links".into());
        }
        let target = std::fs::read_link(path).map_err(|e| e.to_string())?;
        writable_file_through(&parent.join(target), links + 1)
            .map_err(|e| format!("a symlink to a file that does not exist yet: {e}"))
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
