//! Reading the files leasehold is given, bounded: a scenario or a failure
//! file is read up to [`MAX_FILE_BYTES`], a line-based file (a trace, a
//! results file) line by line up to a bound per line and one for the whole
//! file, so `/dev/zero`, endless newlines or a runaway file is an error
//! instead of memory grown until the process is killed. Text must be UTF-8
//! without a byte-order mark; errors name the line.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The largest scenario or failure file: far above any real one (the
/// biggest shipped scenario is a few KiB).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The longest line of a trace: its header holds the scenario's whole text
/// (at most [`MAX_FILE_BYTES`]) as a JSON string. JSON escaping writes one
/// byte as at most 6 (`\u00XX`, for a control character; `"` and `\` take
/// 2, other bytes, UTF-8 included, are written as they are), so the string
/// is at most `6 * MAX_FILE_BYTES` plus its quotes; the rest of the header
/// (format, leasehold version, seed, variant, keys and punctuation) is well
/// under a KiB, so 1 MiB more is provably enough.
pub const MAX_TRACE_LINE_BYTES: u64 = 6 * MAX_FILE_BYTES + (1 << 20);

/// The largest trace: 16 GiB. A record line is ~250 bytes (friday-rush
/// seed 1: 10.9 MB for 44,112 lines), so a one-hour run of 1,000 workers
/// writes ~2 GB and stays replayable on a machine with the memory for it
/// (`replay` and `explain` hold the whole trace); this bound is for a
/// runaway file (endless newlines), which would otherwise grow memory
/// without limit, and leaves room for the longest header
/// ([`MAX_TRACE_LINE_BYTES`]) and a long run after it.
pub const MAX_TRACE_BYTES: u64 = 16 << 30;

const _: () = assert!(MAX_TRACE_BYTES > MAX_TRACE_LINE_BYTES + (256 << 20));

/// Read `path` whole, refusing more than `limit` bytes.
pub fn read_bounded(path: &Path, limit: u64) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(cannot_read)?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot_read)?;
    if bytes.len() as u64 > limit {
        return Err(format!("larger than {}", size(limit)));
    }
    text(bytes)
}

/// Read `path` line by line, refusing a line longer than `max_line` bytes
/// (its `\n` or `\r\n` not counted) with `line N: longer than ...`, and a
/// file of more than `max_total` bytes in all with `larger than ... in all`.
pub fn read_lines_bounded(path: &Path, max_line: u64, max_total: u64) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(cannot_read)?;
    let mut reader = BufReader::new(file.take(max_total + 1));
    let mut bytes = Vec::new();
    let mut number: u64 = 0;
    loop {
        number += 1;
        let start = bytes.len();
        let read = (&mut reader)
            .take(max_line + 2)
            .read_until(b'\n', &mut bytes)
            .map_err(cannot_read)?;
        if read == 0 {
            break;
        }
        let line = &bytes[start..];
        let content = line.strip_suffix(b"\n").unwrap_or(line);
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        if content.len() as u64 > max_line {
            return Err(format!("line {number}: longer than {}", size(max_line)));
        }
        if bytes.len() as u64 > max_total {
            return Err(format!(
                "larger than {} in all (line {number} goes past it)",
                size(max_total)
            ));
        }
    }
    text(bytes)
}

/// The first line of `path` (its `\n` or `\r\n` not included), refusing
/// one longer than `max_line` bytes with `line 1: ...`.
pub fn read_first_line(path: &Path, max_line: u64) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(cannot_read)?;
    let mut bytes = Vec::new();
    BufReader::new(file)
        .take(max_line + 2)
        .read_until(b'\n', &mut bytes)
        .map_err(cannot_read)?;
    let content = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let content = content.strip_suffix(b"\r").unwrap_or(content);
    if content.len() as u64 > max_line {
        return Err(format!("line 1: longer than {}", size(max_line)));
    }
    let len = content.len();
    bytes.truncate(len);
    text(bytes)
}

fn cannot_read(e: std::io::Error) -> String {
    format!("cannot read the file: {e}")
}

/// `limit` bytes in words: "1 GiB", "64 MiB", "1000 bytes", for an error
/// that names the bound it hit.
pub fn size(limit: u64) -> String {
    if limit >= 1 << 30 && limit.is_multiple_of(1 << 30) {
        format!("{} GiB", limit >> 30)
    } else if limit >= 1 << 20 && limit.is_multiple_of(1 << 20) {
        format!("{} MiB", limit >> 20)
    } else {
        format!("{limit} bytes")
    }
}

/// `bytes` as UTF-8 text without a byte-order mark.
fn text(bytes: Vec<u8>) -> Result<String, String> {
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
        let column = at
            - bytes[..at]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1)
            + 1;
        format!("line {line} column {column}: not UTF-8 text (byte {at} of the file)")
    })?;
    if text.starts_with('\u{feff}') {
        return Err(
            "line 1: starts with a byte-order mark (U+FEFF); save the file as UTF-8 without one"
                .into(),
        );
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("leasehold-input-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn bounds_the_file_and_each_line() {
        let path = file("bounded", b"12345\n123\r\n");
        assert_eq!(read_bounded(&path, 11).unwrap(), "12345\n123\r\n");
        assert_eq!(read_bounded(&path, 10).unwrap_err(), "larger than 10 bytes");
        assert_eq!(read_lines_bounded(&path, 5, 11).unwrap(), "12345\n123\r\n");
        assert_eq!(
            read_lines_bounded(&path, 4, 11).unwrap_err(),
            "line 1: longer than 4 bytes"
        );
        assert_eq!(
            read_lines_bounded(&path, 5, 10).unwrap_err(),
            "larger than 10 bytes in all (line 2 goes past it)"
        );
        assert_eq!(read_first_line(&path, 5).unwrap(), "12345");
        assert_eq!(
            read_first_line(&path, 4).unwrap_err(),
            "line 1: longer than 4 bytes"
        );
        assert_eq!(size(64 << 20), "64 MiB");
        assert_eq!(size(1 << 30), "1 GiB");
        assert_eq!(size(MAX_TRACE_LINE_BYTES), "385 MiB");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_endless_file_is_an_error() {
        let zero = Path::new("/dev/zero");
        assert_eq!(
            read_bounded(zero, 1 << 20).unwrap_err(),
            "larger than 1 MiB"
        );
        assert_eq!(
            read_lines_bounded(zero, 1 << 20, 4 << 20).unwrap_err(),
            "line 1: longer than 1 MiB"
        );
    }

    #[test]
    fn empty_lines_without_end_meet_the_bound_of_the_whole_file() {
        // Every line is within its bound: only the whole file's ends the read.
        let path = file("newlines", &[b'\n'; 1 << 16]);
        assert_eq!(
            read_lines_bounded(&path, 1, 1000).unwrap_err(),
            "larger than 1000 bytes in all (line 1001 goes past it)"
        );
        assert_eq!(
            read_lines_bounded(&path, 1, 1 << 16).unwrap().len(),
            1 << 16
        );
    }

    #[test]
    fn names_a_byte_order_mark_and_bytes_that_are_not_utf8() {
        let bom = file("bom", "\u{feff}{}".as_bytes());
        assert!(
            read_bounded(&bom, 100)
                .unwrap_err()
                .contains("starts with a byte-order mark")
        );
        let latin1 = file("latin1", b"{\n  \"a\": \"caf\xe9\"\n}");
        assert_eq!(
            read_bounded(&latin1, 100).unwrap_err(),
            "line 2 column 12: not UTF-8 text (byte 13 of the file)"
        );
    }
}
