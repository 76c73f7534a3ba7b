//! Results files (`sweep --out FILE`): JSON Lines, one line per finished seed,
//! appended as each seed finishes and written with one `write` call, so a
//! sweep killed with SIGKILL loses no result already written. (Lines are not
//! fsync'ed: a power cut may lose the last lines; a kill never does.)
//!
//! Every line stands alone (format, scenario, its hash, variant, seed,
//! verdict), so shard files can be concatenated or merged in any order and one
//! file may hold several scenarios and variants.
//!
//! Reading is strict: a line that is not a result is an error naming the file
//! and the line. One exception: a final line with no newline is what a kill
//! in the middle of a write leaves, so it is reported as truncated and
//! dropped (its seed is simply run again by `--resume`). A complete final line
//! always ends in a newline, because every line is written with its newline.

use crate::lease_job::{DETERMINISM, SeedResult, TimedSeedResult};
use leasehold_protocol::HeartbeatMode;
use leasehold_run::coverage::NamedPoint;
use serde::{Deserialize, Serialize};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

// Defined with the coverage tally and the other formats' names;
// re-exported beside the results line that carries them.
pub use crate::coverage_tally::LineCoverage;
pub use leasehold_scenario::file_format::RESULTS_FORMAT;

/// Lines longer than this are not results (a violation message is short);
/// [`read_results`] refuses them as it reads.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// The largest results file: 1 GiB, far above a million seeds' lines of a
/// few hundred bytes each, and still one a reader can hold in memory.
pub const MAX_FILE_BYTES: u64 = 1 << 30;
/// The most hits of one coverage point a result line may claim: far more
/// than a run reaches, and a merge's sum of a million lines of it stays far
/// inside a `u64`.
pub const MAX_POINT_HITS: u64 = 10_000_000_000_000;
/// The longest wall time a result line may claim: 10^13 µs (about 115
/// days), so a merge's sum of a million of them stays far inside a `u64`.
pub const MAX_WALL_US: u64 = 10_000_000_000_000;

/// One line of a results file. Every field is written, so a reader refuses
/// any other (`deny_unknown_fields`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultLine {
    pub format: String,
    pub leasehold_version: String,
    /// The scenario's name.
    pub scenario: String,
    /// xxh3 of the scenario file's exact text (see `lease_job::scenario_hash`).
    pub scenario_hash: String,
    pub variant: String,
    pub seed: u64,
    pub ok: bool,
    pub invariants: Vec<String>,
    pub first_violation: Option<String>,
    pub events: u64,
    pub trace_hash: String,
    /// Whether the seed ran twice to check determinism.
    pub checked_determinism: bool,
    pub replay: String,
    /// Wall time of the run(s); only for throughput figures.
    pub wall_us: u64,
    /// With `sweep --coverage`: the named coverage points the seed reached.
    /// Absent otherwise (and in files written before coverage existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<LineCoverage>,
}

impl ResultLine {
    pub fn result(&self) -> SeedResult {
        SeedResult {
            seed: self.seed,
            invariants: self.invariants.clone(),
            first_violation: self.first_violation.clone(),
            events: self.events,
            trace_hash: self.trace_hash.clone(),
        }
    }
}

/// What a results line is about, besides the seed's own result.
#[derive(Clone, Debug)]
pub struct ResultContext {
    pub scenario: String,
    pub scenario_hash: String,
    pub variant: String,
    pub checked_determinism: bool,
    /// `sweep --coverage`: the scenario's heartbeat mode, and lines carry
    /// their seed's coverage.
    pub coverage: Option<HeartbeatMode>,
}

impl ResultContext {
    pub fn line(&self, timed: &TimedSeedResult, replay: String) -> ResultLine {
        let r = &timed.result;
        ResultLine {
            format: RESULTS_FORMAT.to_string(),
            leasehold_version: leasehold_scenario::file_format::LEASEHOLD_VERSION.to_string(),
            scenario: self.scenario.clone(),
            scenario_hash: self.scenario_hash.clone(),
            variant: self.variant.clone(),
            seed: r.seed,
            ok: r.ok(),
            invariants: r.invariants.clone(),
            first_violation: r.first_violation.clone(),
            events: r.events,
            trace_hash: r.trace_hash.clone(),
            checked_determinism: self.checked_determinism,
            replay,
            wall_us: timed.wall_us,
            coverage: self
                .coverage
                .map(|mode| LineCoverage::of(&timed.coverage, mode)),
        }
    }
}

/// A results file read back.
#[derive(Debug, Default)]
pub struct ResultsRead {
    /// (1-based line number, line)
    pub lines: Vec<(u64, ResultLine)>,
    /// A final line cut short by a kill: its 1-based number and the byte
    /// offset where it starts (everything before it is complete lines).
    pub truncated_tail: Option<(u64, u64)>,
    /// The first line written by another leasehold version than this one:
    /// (its 1-based number, that version).
    pub other_version: Option<(u64, String)>,
}

/// Parse a results file's text, its lines bounded as [`read_results`]
/// reads them; errors are `line N: ...`.
pub fn parse_results(text: &str) -> Result<ResultsRead, String> {
    let mut read = ResultsRead::default();
    let mut offset: u64 = 0;
    let mut rest = text;
    let mut number: u64 = 0;
    while !rest.is_empty() {
        number += 1;
        let Some(end) = rest.find('\n') else {
            read.truncated_tail = Some((number, offset));
            break;
        };
        let line = &rest[..end];
        let consumed = end + 1;
        let parsed = parse_line(line).map_err(|e| format!("line {number}: {e}"))?;
        if read.other_version.is_none()
            && parsed.leasehold_version != leasehold_scenario::file_format::LEASEHOLD_VERSION
        {
            read.other_version = Some((number, parsed.leasehold_version.clone()));
        }
        read.lines.push((number, parsed));
        offset += consumed as u64;
        rest = &rest[consumed..];
    }
    Ok(read)
}

fn parse_line(line: &str) -> Result<ResultLine, String> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.trim().is_empty() {
        return Err("an empty line, not a leasehold result".into());
    }
    let value = leasehold_scenario::strict_json::parse_or(line, |e| format!("not JSON ({e})"))?;
    leasehold_scenario::file_format::expect_format(&value, RESULTS_FORMAT, "a leasehold result")?;
    let parsed: ResultLine = leasehold_scenario::strict_json::from_value_named(&value)
        .map_err(|e| format!("not a leasehold result ({e})"))?;
    leasehold_scenario::strict_json::check_shape(&value, &parsed).map_err(|e| e.to_string())?;
    // Every field is written, `null` included: one left out is not a line
    // a sweep wrote (serde would read a missing `null` as absent).
    if let (Some(given), Ok(serde_json::Value::Object(written))) =
        (value.as_object(), serde_json::to_value(&parsed))
        && let Some(missing) = written.keys().find(|k| !given.contains_key(*k))
    {
        return Err(format!(
            "{missing}: missing (a sweep writes every field, null included)"
        ));
    }
    if parsed.leasehold_version.trim().is_empty() {
        return Err(
            "leasehold_version: must not be empty (the version that wrote the line)".into(),
        );
    }
    if parsed.scenario.trim().is_empty() {
        return Err("scenario: must not be empty (the scenario's name)".into());
    }
    // One run's events: summing a million lines of these cannot overflow.
    if parsed.events > leasehold_scenario::scenario::MAX_EVENT_LIMIT {
        return Err(format!(
            "events: {} is more than a run processes (limits.max_events is at most {})",
            parsed.events,
            leasehold_scenario::scenario::MAX_EVENT_LIMIT
        ));
    }
    leasehold_scenario::file_format::named_variant("variant", &parsed.variant)?;
    for (i, name) in parsed.invariants.iter().enumerate() {
        leasehold_scenario::file_format::known_invariant(
            &format!("invariants[{i}]"),
            name,
            &[DETERMINISM, leasehold_run::run::CUT_SHORT],
        )?;
    }
    if parsed.ok != parsed.invariants.is_empty() {
        return Err(format!(
            "seed {}: \"ok\" is {} but \"invariants\" is {:?}",
            parsed.seed, parsed.ok, parsed.invariants
        ));
    }
    if parsed.ok == parsed.first_violation.is_some() {
        return Err(format!(
            "first_violation: seed {} is {} but has {} (a failing seed has its first violation, a passing one null)",
            parsed.seed,
            if parsed.ok { "ok" } else { "not ok" },
            if parsed.first_violation.is_some() {
                "one"
            } else {
                "none"
            },
        ));
    }
    check_written_fields(&parsed)?;
    Ok(parsed)
}

/// The fields a sweep writes in one shape: the two hashes as 16 lowercase
/// hex digits (a run that panicked has no trace: `none`), the replay
/// command for this very seed and variant, a wall time a run can take.
fn check_written_fields(line: &ResultLine) -> Result<(), String> {
    let is_hash = |h: &str| {
        h.len() == 16
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !is_hash(&line.scenario_hash) {
        return Err(format!(
            "scenario_hash: {:?} is not 16 lowercase hex digits",
            line.scenario_hash
        ));
    }
    if line.trace_hash != "none" && !is_hash(&line.trace_hash) {
        return Err(format!(
            "trace_hash: {:?} is not 16 lowercase hex digits (or \"none\")",
            line.trace_hash
        ));
    }
    let tail = format!(" --seed {} --variant {}", line.seed, line.variant);
    let replays_this_seed = line.replay.starts_with("leasehold run ")
        && line.replay.ends_with(&tail)
        && !line.replay.contains('\n');
    if !replays_this_seed {
        return Err(format!(
            "replay: {:?} is not the command that replays this seed (leasehold run SCENARIO{tail})",
            line.replay
        ));
    }
    if let Some(coverage) = &line.coverage {
        for (name, hits) in &coverage.points {
            if NamedPoint::from_name(name).is_none() {
                return Err(format!(
                    "coverage.points: \"{name}\" is not a coverage point of this leasehold version"
                ));
            }
            if *hits == 0 || *hits > MAX_POINT_HITS {
                return Err(format!(
                    "coverage.points.{name}: {hits} hits; a line lists the points its run reached (1 to {MAX_POINT_HITS} hits)"
                ));
            }
        }
    }
    if line.wall_us > MAX_WALL_US {
        return Err(format!(
            "wall_us: {} is more than a run's wall time may be ({MAX_WALL_US} µs, about 115 days)",
            line.wall_us
        ));
    }
    Ok(())
}

/// Read and parse a results file; errors name the file and the line.
pub fn read_results(path: &Path) -> Result<ResultsRead, String> {
    // Line by line: a line past the bound ends the read (`/dev/zero`).
    let text = leasehold_scenario::input_file::read_lines_bounded(
        path,
        MAX_LINE_BYTES as u64,
        MAX_FILE_BYTES,
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    parse_results(&text).map_err(|e| format!("{} {e}", path.display()))
}

impl ResultsRead {
    /// The note for a file with lines of another leasehold version (results
    /// of another version may legitimately differ): `merge` and `sweep
    /// --resume` print it once they go ahead, so a refusal stays one line.
    pub fn version_note(&self, path: &Path) -> Option<String> {
        let (line, version) = self.other_version.as_ref()?;
        leasehold_scenario::file_format::version_note(
            &format!("{} line {line}", path.display()),
            version,
        )
    }
}

/// Appends result lines to a file, one `write` per line.
pub struct ResultsWriter {
    file: std::fs::File,
    pub path: PathBuf,
    pub lines_written: u64,
}

impl ResultsWriter {
    /// Open `path` for appending (creating it). A truncated final line left by
    /// a kill is cut off first, so the next line starts on a line of its own;
    /// the returned note says so.
    pub fn open_append(path: &Path) -> Result<(ResultsWriter, Option<String>), String> {
        let name = path.display();
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("{name}: {e}"))?;
        let len = file.metadata().map_err(|e| format!("{name}: {e}"))?.len();
        let mut note = None;
        if len > 0 {
            // The last line starts at most MAX_LINE_BYTES before the end.
            let start = len.saturating_sub(MAX_LINE_BYTES as u64 + 1);
            let mut tail = Vec::new();
            file.seek(SeekFrom::Start(start))
                .and_then(|_| file.read_to_end(&mut tail))
                .map_err(|e| format!("{name}: {e}"))?;
            if tail.last() != Some(&b'\n') {
                let keep = match tail.iter().rposition(|b| *b == b'\n') {
                    Some(i) => start + i as u64 + 1,
                    None if start == 0 => 0,
                    None => {
                        return Err(format!(
                            "{name}: the final line is longer than {MAX_LINE_BYTES} bytes, not a leasehold result"
                        ));
                    }
                };
                file.seek(SeekFrom::Start(0))
                    .map_err(|e| format!("{name}: {e}"))?;
                let mut newlines: u64 = 0;
                let mut buffer = vec![0u8; 1 << 16];
                let mut remaining = keep;
                while remaining > 0 {
                    let want = buffer
                        .len()
                        .min(usize::try_from(remaining).unwrap_or(usize::MAX));
                    let got = file
                        .read(&mut buffer[..want])
                        .map_err(|e| format!("{name}: {e}"))?;
                    assert!(got > 0, "the file shrank while being read");
                    newlines += buffer[..got].iter().filter(|b| **b == b'\n').count() as u64;
                    remaining -= got as u64;
                }
                file.set_len(keep).map_err(|e| format!("{name}: {e}"))?;
                note = Some(format!(
                    "{name} line {}: dropped a truncated final line (left by a killed sweep); its seed runs again",
                    newlines + 1
                ));
            }
        }
        file.seek(SeekFrom::End(0))
            .map_err(|e| format!("{name}: {e}"))?;
        Ok((
            ResultsWriter {
                file,
                path: path.to_path_buf(),
                lines_written: 0,
            },
            note,
        ))
    }

    pub fn append(&mut self, line: &ResultLine) -> std::io::Result<()> {
        let mut text = serde_json::to_string(line).map_err(std::io::Error::from)?;
        text.push('\n');
        // One write of the whole line: a kill leaves whole lines, or a final
        // line without its newline (which readers drop).
        self.file.write_all(text.as_bytes())?;
        self.file.flush()?;
        self.lines_written += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seed: u64, invariants: &[&str]) -> String {
        let r = ResultLine {
            format: RESULTS_FORMAT.into(),
            leasehold_version: leasehold_scenario::file_format::LEASEHOLD_VERSION.into(),
            scenario: "s".into(),
            scenario_hash: "00000000000000aa".into(),
            variant: "correct".into(),
            seed,
            ok: invariants.is_empty(),
            invariants: invariants.iter().map(|s| s.to_string()).collect(),
            first_violation: (!invariants.is_empty())
                .then(|| "no-lost-task at 1.000 s: task 1 is lost".into()),
            events: 10,
            trace_hash: "00000000000000ab".into(),
            checked_determinism: false,
            replay: format!("leasehold run s.json --seed {seed} --variant correct"),
            wall_us: 5,
            coverage: None,
        };
        serde_json::to_string(&r).unwrap()
    }

    #[test]
    fn reads_lines_and_a_truncated_tail() {
        let text = format!(
            "{}\n{}\n{}",
            line(1, &[]),
            line(2, &["no-lost-task"]),
            &line(3, &[])[..20]
        );
        let read = parse_results(&text).unwrap();
        assert_eq!(read.lines.len(), 2);
        assert_eq!(read.lines[1].0, 2);
        assert_eq!(read.lines[1].1.invariants, ["no-lost-task"]);
        let (number, offset) = read.truncated_tail.unwrap();
        assert_eq!(number, 3);
        assert_eq!(&text[offset as usize..], &line(3, &[])[..20]);
    }

    #[test]
    fn names_the_corrupt_line() {
        let good = line(1, &[]);
        for (bad, expect) in [
            ("{not json".to_string(), "not JSON"),
            ("{}".to_string(), "format: missing"),
            (good.replace("leasehold-results/1", "other/9"), "is not"),
            (
                good.replace("\"ok\":true", "\"ok\":false"),
                "\"ok\" is false",
            ),
            (
                good.replace("\"seed\":1", "\"seed\":-1"),
                "not a leasehold result",
            ),
            (String::new(), "empty line"),
        ] {
            let text = format!("{good}\n{good}\n{bad}\n{good}\n");
            let err = parse_results(&text).unwrap_err();
            assert!(err.starts_with("line 3: "), "{err}");
            assert!(err.contains(expect), "{err} lacks {expect}");
        }
    }
}
