//! Turns a panic inside a simulated run into a message, with its location,
//! instead of a crash of the tool.

use std::cell::RefCell;

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Replace the default hook (which prints to stderr) with one that remembers
/// the message and location for the thread's next `message` call.
pub fn install_quiet_hook() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let text = payload_text(info.payload());
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{text}{location}")));
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
