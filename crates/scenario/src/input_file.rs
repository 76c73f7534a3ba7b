//! Reading the files leasehold is given, bounded: a scenario or a failure
//! file is read up to [`MAX_FILE_BYTES`], a line-based file (a trace, a
//! results file) line by line up to a bound per line and one for the whole
//! file, so `/dev/zero`, endless newlines or a runaway file is an error
//! instead of memory grown until the process is killed. Text must be UTF-8
//! without a byte-order mark; errors name the line.

use std::io::{BufRead, BufReader};
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

/// The longest record line of a trace: the largest record is a store scan
/// whose reply carries a page of up to 10,000 documents (the most
/// `protocol.scan_page_size` allows) of at most a few hundred bytes each
/// (every document field is a fixed-size number or name); `trace.rs`'s
/// tests write the largest one leasehold can and check it fits.
pub const MAX_RECORD_LINE_BYTES: u64 = 16 << 20;

/// Read `path` whole, refusing more than `limit` bytes.
pub fn read_bounded(path: &Path, limit: u64) -> Result<String, String> {
    read_checked(path, Bounds::whole(limit), |_, _, _| Ok(()))
}

/// Read `path` line by line, refusing a line longer than `max_line` bytes
/// (its `\n` or `\r\n` not counted) with `line N: longer than ...`, and a
/// file of more than `max_total` bytes in all with `larger than ... in all`.
pub fn read_lines_bounded(path: &Path, max_line: u64, max_total: u64) -> Result<String, String> {
    read_checked(
        path,
        Bounds {
            max_line,
            max_total,
            object_first: false,
        },
        |_, _, _| Ok(()),
    )
}

/// The first line of `path` (its `\n` or `\r\n` not included), refusing
/// one longer than `max_line` bytes with `line 1: ...`.
pub fn read_first_line(path: &Path, max_line: u64) -> Result<String, String> {
    let mut first = None;
    let read = read_checked(
        path,
        Bounds {
            max_line,
            max_total: u64::MAX,
            object_first: false,
        },
        |_, line, _| {
            first = Some(line.to_string());
            // Stop here: the rest of the file is not read.
            Err(String::new())
        },
    );
    match (first, read) {
        (Some(line), _) => Ok(line),
        (None, Ok(text)) => Ok(text.strip_suffix('\r').unwrap_or(&text).to_string()),
        (None, Err(e)) => Err(e),
    }
}

/// What `replay`, `explain` and `export` read: a failure file or a trace,
/// read as it is told apart, so that what is neither stops the read at once
/// (`yes | leasehold replay /dev/stdin` at its first line). Both start with
/// a JSON object. A first line that is a trace's header makes a trace:
/// every later line must be a JSON object of at most
/// [`MAX_RECORD_LINE_BYTES`], and the whole at most `max_total` bytes.
/// Otherwise it is a failure file, at most [`MAX_FILE_BYTES`]; one whose
/// first line is already a whole JSON value (a compact failure file, or
/// another kind of file) may be followed by blank lines only.
pub fn read_run_text(path: &Path, max_total: u64) -> Result<String, String> {
    use crate::file_format::{TRACE_FORMAT, replay_input};
    #[derive(PartialEq)]
    enum Kind {
        Trace,
        Failure,
        /// Line 1 was a whole JSON value: this is its text.
        OneLine(String),
    }
    let mut kind = Kind::Failure;
    read_checked(
        path,
        Bounds {
            max_line: MAX_TRACE_LINE_BYTES,
            max_total,
            object_first: true,
        },
        |number, line, bounds| {
            if number == 1 {
                let value = serde_json::from_str::<serde_json::Value>(line).ok();
                kind = match &value {
                    Some(v) if v.get("format").and_then(|f| f.as_str()) == Some(TRACE_FORMAT) => {
                        bounds.max_line = MAX_RECORD_LINE_BYTES;
                        Kind::Trace
                    }
                    Some(_) => Kind::OneLine(line.to_string()),
                    None => Kind::Failure,
                };
                if kind != Kind::Trace {
                    bounds.max_total = bounds.max_total.min(MAX_FILE_BYTES);
                    bounds.max_line = bounds.max_total;
                }
                return Ok(());
            }
            match &kind {
                Kind::Trace if !(line.starts_with('{') && line.ends_with('}')) => Err(format!(
                    "line {number}: not a JSON record (a trace holds one JSON object a line, as `leasehold run --trace` writes)"
                )),
                // Line 1 says what the file is, if it is not what this reads.
                Kind::OneLine(first) if !line.trim().is_empty() => Err(match replay_input(first) {
                    Err(e) if e.starts_with("line ") => e,
                    Err(e) => format!("line 1: {e}"),
                    Ok(_) => format!("line {number}: more text after the JSON object of line 1"),
                }),
                _ => Ok(()),
            }
        },
    )
}

/// What a read holds a file to; a line hook may change it as the file
/// tells what it is.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// The longest line, its `\n` or `\r\n` not counted.
    pub max_line: u64,
    /// The whole file.
    pub max_total: u64,
    /// The first byte that is not white space must open a JSON object.
    pub object_first: bool,
}

impl Bounds {
    /// A file read whole: no bound on its lines but the file's own.
    fn whole(limit: u64) -> Bounds {
        Bounds {
            max_line: u64::MAX,
            max_total: limit,
            object_first: false,
        }
    }

    fn larger(&self, number: u64) -> String {
        if self.max_line == u64::MAX {
            format!("larger than {}", size(self.max_total))
        } else {
            format!(
                "larger than {} in all (line {number} goes past it)",
                size(self.max_total)
            )
        }
    }
}

/// Whether `b` may appear raw in the text of a file leasehold reads. Every
/// one is JSON or JSON Lines, which hold no control character outside
/// white space (in strings they are escaped): a NUL or another control
/// byte means the file is not text at all (`/dev/zero`, `/dev/urandom`, a
/// binary), and the read stops there.
fn allowed_control(b: u8) -> bool {
    matches!(b, b'\t' | b'\r')
}

/// Read `path` as text, checking as it reads: each line's length, the
/// total, control bytes, UTF-8 (line by line), a byte-order mark. Each
/// complete line goes to `line_done(number, text, bounds)`, which may
/// change the bounds or end the read with an error.
fn read_checked(
    path: &Path,
    mut bounds: Bounds,
    mut line_done: impl FnMut(u64, &str, &mut Bounds) -> Result<(), String>,
) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(cannot_read)?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut bytes: Vec<u8> = Vec::new();
    let mut line_start = 0usize;
    let mut number: u64 = 1;
    let mut opened = !bounds.object_first;
    loop {
        let chunk = reader.fill_buf().map_err(cannot_read)?;
        if chunk.is_empty() {
            break;
        }
        let len = chunk.len();
        let mut from = 0;
        while from < len {
            let special = chunk[from..]
                .iter()
                .position(|&b| b < 0x20 && !allowed_control(b));
            let end = special.map_or(len, |at| from + at);
            let segment = &chunk[from..end];
            if !opened && let Some(&b) = segment.iter().find(|b| !b.is_ascii_whitespace()) {
                if b != b'{' {
                    let shown = if b.is_ascii_graphic() {
                        format!("\"{}\"", b as char)
                    } else {
                        format!("byte 0x{b:02x}")
                    };
                    return Err(format!(
                        "line {number}: starts with {shown}, not a JSON object: not a failure file or a trace"
                    ));
                }
                opened = true;
            }
            bytes.extend_from_slice(segment);
            let line_len = (bytes.len() - line_start) as u64;
            // A `\r` before the newline is not counted: allow it here.
            if line_len > bounds.max_line.saturating_add(1) {
                return Err(longer(number, bounds.max_line));
            }
            if bytes.len() as u64 > bounds.max_total {
                return Err(bounds.larger(number));
            }
            if bytes.len() >= 3 && line_start == 0 && bytes.starts_with(b"\xEF\xBB\xBF") {
                return Err(BOM.into());
            }
            let Some(_) = special else {
                break;
            };
            let b = chunk[end];
            if b != b'\n' {
                let column = bytes.len() - line_start + 1;
                return Err(format!(
                    "line {number} column {column}: a control character (byte 0x{b:02x}), not text: leasehold reads JSON"
                ));
            }
            let content = &bytes[line_start..];
            let content = content.strip_suffix(b"\r").unwrap_or(content);
            if content.len() as u64 > bounds.max_line {
                return Err(longer(number, bounds.max_line));
            }
            let text = std::str::from_utf8(content)
                .map_err(|e| not_utf8(&bytes, line_start + e.valid_up_to()))?;
            line_done(number, text, &mut bounds)?;
            bytes.push(b'\n');
            if bytes.len() as u64 > bounds.max_total {
                return Err(bounds.larger(number));
            }
            number += 1;
            line_start = bytes.len();
            from = end + 1;
        }
        reader.consume(len);
    }
    text(bytes)
}

fn longer(number: u64, max_line: u64) -> String {
    format!("line {number}: longer than {}", size(max_line))
}

const BOM: &str =
    "line 1: starts with a byte-order mark (U+FEFF); save the file as UTF-8 without one";

/// The error for bytes that are not UTF-8 from byte `at` of the file.
fn not_utf8(bytes: &[u8], at: usize) -> String {
    let line = bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
    let column = at
        - bytes[..at]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1)
        + 1;
    format!("line {line} column {column}: not UTF-8 text (byte {at} of the file)")
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
        not_utf8(e.as_bytes(), at)
    })?;
    if text.starts_with('\u{feff}') {
        return Err(BOM.into());
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
    fn bytes_that_are_not_text_end_the_read_at_once() {
        for path in ["/dev/zero", "/dev/urandom"] {
            let path = Path::new(path);
            for read in [
                read_bounded(path, 1 << 20),
                read_lines_bounded(path, 1 << 20, 4 << 20),
                read_run_text(path, 1 << 30),
            ] {
                let e = read.unwrap_err();
                assert!(
                    e.contains("a control character")
                        || e.contains("not UTF-8")
                        || e.contains("not a JSON object"),
                    "{path:?}: {e}"
                );
            }
        }
        assert_eq!(
            read_bounded(Path::new("/dev/zero"), 1 << 20).unwrap_err(),
            "line 1 column 1: a control character (byte 0x00), not text: leasehold reads JSON"
        );
    }

    #[test]
    fn a_run_file_is_told_apart_as_it_is_read() {
        // `yes`: endless short lines that open no JSON object.
        let yes = file("yes", &b"y\n".repeat(1 << 16));
        assert_eq!(
            read_run_text(&yes, 1 << 30).unwrap_err(),
            "line 1: starts with \"y\", not a JSON object: not a failure file or a trace"
        );
        // A trace's header, then lines that are not records.
        let header = format!("{{\"format\":\"{}\"}}\n", crate::file_format::TRACE_FORMAT);
        let garbage = file("garbage", format!("{header}{{}}\nnope\n").as_bytes());
        assert_eq!(
            read_run_text(&garbage, 1 << 30).unwrap_err(),
            "line 3: not a JSON record (a trace holds one JSON object a line, as `leasehold run --trace` writes)"
        );
        // One whole JSON value on line 1, then more: not one file.
        let twice = file("twice", b"{\"format\":\"leasehold-failure/1\"}\n\n{}\n");
        assert_eq!(
            read_run_text(&twice, 1 << 30).unwrap_err(),
            "line 3: more text after the JSON object of line 1"
        );
        // A failure file (not a trace) is held to the whole-file bound.
        let pretty = file("pretty", b"{\n  \"a\": 1\n}\n");
        assert_eq!(
            read_run_text(&pretty, 1 << 30).unwrap(),
            "{\n  \"a\": 1\n}\n"
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
