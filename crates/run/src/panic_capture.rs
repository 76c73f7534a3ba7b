//! Turns a panic inside a simulated run into a message, with its location,
//! instead of a crash of the tool; and a panic anywhere else into one clear
//! line on stderr (or, for a closed stdout pipe, a quiet exit).

use std::cell::RefCell;
use std::sync::Mutex;

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The latest panic on any thread: what a panic that crossed a thread scope
/// (which re-panics with a message of its own) was really about.
static LAST_PANIC_ANY_THREAD: Mutex<Option<String>> = Mutex::new(None);

/// What `std::thread::scope` panics with when one of its threads panicked.
const SCOPE_PANIC: &str = "a scoped thread panicked";

/// Replace the default hook (which prints to stderr) with one that remembers
/// the message and location for the thread's next `message` call.
pub fn install_quiet_hook() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let text = format!("{}{location}", payload_text(info.payload()));
        // The scope's own re-panic must not hide the panic it carries.
        if !text.starts_with(SCOPE_PANIC)
            && let Ok(mut any) = LAST_PANIC_ANY_THREAD.lock()
        {
            *any = Some(text.clone());
        }
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(text));
    }));
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-text panic payload)".to_string()
    }
}

/// The message of the panic whose payload this is, with its location when the
/// quiet hook is installed.
pub fn message(payload: &(dyn std::any::Any + Send)) -> String {
    LAST_PANIC
        .with(|p| p.borrow_mut().take())
        .unwrap_or_else(|| payload_text(payload))
}

/// What a panic that reached the top of the tool means for its exit.
#[derive(Debug, PartialEq, Eq)]
pub enum TopLevelPanic {
    /// Stdout is a pipe whose reader left (`leasehold explain F | head`):
    /// the reader has what it wanted; exit quietly, as `cat` would.
    StdoutClosed,
    /// Stdout cannot be written (`> /dev/full`): the output is lost.
    StdoutFailed(String),
    /// A bug in leasehold itself.
    Bug(String),
}

impl TopLevelPanic {
    pub fn classify(message: &str) -> TopLevelPanic {
        // `print!` panics with this text; it is the only way its error shows.
        const PRINT_FAILED: &str = "failed printing to stdout: ";
        match message.find(PRINT_FAILED) {
            Some(at) => {
                let error = &message[at + PRINT_FAILED.len()..];
                let error = error.split(" at ").next().unwrap_or(error);
                if error.contains("Broken pipe") {
                    TopLevelPanic::StdoutClosed
                } else {
                    TopLevelPanic::StdoutFailed(error.to_string())
                }
            }
            None => TopLevelPanic::Bug(message.to_string()),
        }
    }
}

/// Run a command; a panic that escapes it becomes an exit code and at most
/// one line on stderr, never a silent 101. Unwinding first drops what the
/// command held, so buffered files it was writing are flushed.
pub fn exit_code_of(command: impl FnOnce() -> u8) -> u8 {
    let payload = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(command)) {
        Ok(code) => return code,
        Err(payload) => payload,
    };
    let here = message(payload.as_ref());
    let text = match LAST_PANIC_ANY_THREAD.lock().ok().and_then(|mut m| m.take()) {
        // A thread scope re-panics with its own words; the thread's are better.
        Some(any) if here.starts_with(SCOPE_PANIC) => any,
        _ => here,
    };
    match TopLevelPanic::classify(&text) {
        TopLevelPanic::StdoutClosed => 0,
        TopLevelPanic::StdoutFailed(error) => {
            let _ = writeln_stderr(&format!("error: cannot write to standard output: {error}"));
            2
        }
        TopLevelPanic::Bug(text) => {
            let _ = writeln_stderr(&format!(
                "error: leasehold panicked, a bug in the tool (please report it with the command line): {text}"
            ));
            101
        }
    }
}

fn writeln_stderr(line: &str) -> std::io::Result<()> {
    use std::io::Write;
    writeln!(std::io::stderr().lock(), "{line}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_failures_are_told_apart_from_bugs() {
        assert_eq!(
            TopLevelPanic::classify(
                "failed printing to stdout: Broken pipe (os error 32) at library/std/src/io/stdio.rs:1165"
            ),
            TopLevelPanic::StdoutClosed
        );
        assert_eq!(
            TopLevelPanic::classify(
                "failed printing to stdout: No space left on device (os error 28) at library/std/src/io/stdio.rs:1165"
            ),
            TopLevelPanic::StdoutFailed("No space left on device (os error 28)".to_string())
        );
        assert_eq!(
            TopLevelPanic::classify("index out of bounds at src/x.rs:1"),
            TopLevelPanic::Bug("index out of bounds at src/x.rs:1".to_string())
        );
    }
}
