//! Writing what a command produces: through the path it was given.
//!
//! An output path may name a regular file, a symlink, a device (`/dev/null`)
//! or nothing yet. Every writer opens the path itself and writes into it,
//! so a symlink's target receives the output and a device node stays a
//! device node: nothing is drawn beside the path and renamed over it, which
//! would replace whatever was there. A write that fails is bad input, one
//! line naming the file and the system's words for the error.

use std::path::Path;

/// Write `bytes` to `path` (created, or truncated and written through).
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| failed(path, &e))
}

/// Open `path` for writing, through it as [`write`] does.
pub fn create(path: &Path) -> Result<std::fs::File, String> {
    std::fs::File::create(path).map_err(|e| failed(path, &e))
}

/// `path: error`, the line a failed write is reported as.
pub fn failed(path: &Path, e: &std::io::Error) -> String {
    format!("{}: {e}", path.display())
}
