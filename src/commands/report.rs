//! Standard output, where every command writes its report.
//!
//! A report is not the verdict: the exit code is. So a reader that leaves
//! early (`leasehold sweep ... | head -1`) ends the report quietly, and the
//! command still finishes and exits 1 if anything failed; a CI script that
//! pipes into `head` cannot turn red into green. Any other write error
//! (`> /dev/full`) means the report is lost: that is bad input, exit 2, at
//! once (a panic with `print!`'s own words, which `panic_capture` turns into
//! one line and exit 2).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// The reader of standard output left (a broken pipe): nothing more is
/// written.
static READER_LEFT: AtomicBool = AtomicBool::new(false);

/// Write `args` (and a newline when `line`) to standard output.
pub fn write(args: std::fmt::Arguments<'_>, line: bool) {
    if READER_LEFT.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| if line { out.write_all(b"\n") } else { Ok(()) });
    settle(written);
}

/// Flush what is buffered (a `print!` without its newline); call once the
/// command is done, before its exit code is returned.
pub fn flush() {
    if READER_LEFT.load(Ordering::Relaxed) {
        return;
    }
    settle(std::io::stdout().lock().flush());
}

fn settle(written: std::io::Result<()>) {
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            READER_LEFT.store(true, Ordering::Relaxed);
        }
        // The words `print!` panics with: `panic_capture` classifies them.
        Err(e) => panic!("failed printing to stdout: {e}"),
    }
}

/// Whether standard output can be written at all, asked before any work:
/// a closed one (`leasehold run ... >&-`) loses the whole report silently
/// (the standard library ignores writes to a closed standard output), and
/// a file opened later would take its place. `Err` says why not.
#[cfg(unix)]
pub fn check_writable() -> Result<(), String> {
    use std::os::fd::AsFd;
    let closed = |e: std::io::Error| format!("it is closed ({e})");
    if reopened_by_the_runtime() {
        return Err("it was closed when leasehold started".into());
    }
    let fd = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(closed)?;
    // A write of nothing: refused on a descriptor not open for writing,
    // harmless on every other.
    std::fs::File::from(fd)
        .write(&[])
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Whether standard output is the `/dev/null` the Rust runtime opens, read
/// and write, in place of a standard descriptor that was closed at start
/// (so a closed one reads as open). A shell's `> /dev/null` opens it for
/// writing only, and stays a quiet, valid output.
#[cfg(target_os = "linux")]
fn reopened_by_the_runtime() -> bool {
    const ACCESS_MODE: u32 = 0o3;
    const READ_WRITE: u32 = 0o2;
    let is_null =
        std::fs::read_link("/proc/self/fd/1").is_ok_and(|t| t == std::path::Path::new("/dev/null"));
    let flags = std::fs::read_to_string("/proc/self/fdinfo/1")
        .ok()
        .and_then(|info| {
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
            u32::from_str_radix(flags.trim(), 8).ok()
        });
    is_null && flags.is_some_and(|f| f & ACCESS_MODE == READ_WRITE)
}

#[cfg(all(unix, not(target_os = "linux")))]
fn reopened_by_the_runtime() -> bool {
    false
}

#[cfg(not(unix))]
pub fn check_writable() -> Result<(), String> {
    Ok(())
}
