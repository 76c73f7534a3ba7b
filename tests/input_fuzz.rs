//! Fuzzing every kind of input leasehold reads: scenario, failure, trace and
//! results files, and the values of its flags. 10,000 inputs, mutated from
//! real ones by a seeded generator (the same every run), each handed to the
//! reader the command line uses; each must be read or refused with one line
//! naming what is wrong (what the CLI prints after `error: `, with exit 2),
//! never panic, and stay within a memory bound (the heap it holds at once,
//! counted by `measure::CountingAllocator`, never timed) and a hang bound.
//!
//! How it fits CI's budget (the whole `cargo test` on 2 cores): the 10,000
//! are read in-process, through the library functions the commands call
//! (`Scenario::load`, `input_file::read_run_text` then `ReadRun::read`,
//! `results_file::read_results`, the flag parsers), a few milliseconds
//! each, no process spawned. A sample of 1 in 50 (200 inputs) is also given
//! to the `leasehold` binary itself, to hold the exit code and the one line
//! of stderr to the contract; `--max-memory 1` makes every command stop
//! with exit 2 before any run even when a mutation left a valid file, so no
//! sampled input starts a simulation.

use leasehold::measure::CountingAllocator;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

#[global_allocator]
static HEAP: CountingAllocator = CountingAllocator::new();

const INPUTS: usize = 10_000;
/// Every CLI_SAMPLE-th input also goes to the binary.
const CLI_SAMPLE: usize = 50;
/// A read that takes this long hangs (they take milliseconds): not a speed
/// measure, a bound on endless reads and loops.
const HANG: Duration = Duration::from_secs(20);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Scenario,
    Failure,
    Trace,
    Results,
    Flag,
}

/// The unmutated inputs of each kind.
struct Corpus {
    scenarios: Vec<Vec<u8>>,
    failure: Vec<u8>,
    trace: Vec<u8>,
    results: Vec<u8>,
}

fn corpus() -> Corpus {
    let scenarios = leasehold::catalogue::scenario_files(&root().join("scenarios"))
        .unwrap()
        .into_iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let failure_path = root().join("scenarios/regressions/no-self-fencing.failure.json");
    let failure = std::fs::read(&failure_path).unwrap();
    // A trace of the failure file's (shrunk, short) run, written as `run
    // --trace` writes it.
    let run = leasehold::run_file::ReadRun::read(std::str::from_utf8(&failure).unwrap()).unwrap();
    let mut trace = Vec::new();
    {
        use leasehold::trace::{TraceEnd, TraceHeader, TraceWriter};
        let header = TraceHeader::new(&run.scn.source, run.seed(), run.variant.name());
        let mut writer = TraceWriter::new(&mut trace, &header).unwrap();
        let outcome = leasehold::simulate(&run.scn, run.seed(), run.variant, Some(&mut writer));
        writer.finish(TraceEnd::of(&outcome)).unwrap();
    }
    // A results file: two seeds of gc-pause-zombie, one failing.
    let scn = leasehold::Scenario::load(&root().join("scenarios/gc-pause-zombie.json")).unwrap();
    let context = leasehold::results_file::ResultContext {
        scenario: scn.name().to_string(),
        scenario_hash: leasehold::lease_job::scenario_hash(&scn),
        variant: "no-self-fencing".into(),
        checked_determinism: false,
        coverage: None,
    };
    let mut results = Vec::new();
    for seed in [1, 2] {
        let variant = leasehold_protocol::Variant::from_name("no-self-fencing").unwrap();
        let outcome = leasehold::simulate(&scn, seed, variant, None);
        let timed = leasehold::lease_job::TimedSeedResult {
            result: leasehold::SeedResult::from_outcome(&outcome),
            wall_us: 10,
            events_simulated: outcome.events(),
            sim_time_us: outcome.sim_time_us(),
            coverage: outcome.coverage.clone(),
        };
        let replay =
            leasehold::replay_command(Path::new("scenarios/gc-pause-zombie.json"), seed, variant);
        results.extend(serde_json::to_vec(&context.line(&timed, replay)).unwrap());
        results.push(b'\n');
    }
    Corpus {
        scenarios,
        failure,
        trace,
        results,
    }
}

/// Values a mutation plants: of every JSON type, out of every range.
const PLANTED: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "-0",
    "18446744073709551616",
    "4294967296",
    "1.5",
    "null",
    "true",
    "\"\"",
    "\"x\"",
    "[]",
    "{}",
    "[1,2]",
    "\"worker-99\"",
    "\"\\u0000\"",
    "9999999999",
    "\"no-lost-task\"",
    "\"leasehold-trace/1\"",
    "\"leasehold-failure/1\"",
    "{\"a\":1}",
];

/// `input` changed by a few random edits, at bytes or at JSON values.
fn mutate(input: &[u8], rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut out = input.to_vec();
    let edits = rng.random_range(1..=3);
    for _ in 0..edits {
        let len = out.len().max(1);
        match rng.random_range(0..12) {
            // A byte flipped, any value (NUL, control, non-UTF-8 included).
            0 => {
                let at = rng.random_range(0..len);
                if at < out.len() {
                    out[at] = rng.random::<u8>();
                }
            }
            // Cut short.
            1 => out.truncate(rng.random_range(0..len)),
            // A span deleted.
            2 => {
                let a = rng.random_range(0..len);
                let b = (a + rng.random_range(0..64)).min(out.len());
                if a < b {
                    out.drain(a..b);
                }
            }
            // A span repeated (a key given twice, a line twice).
            3 => {
                let a = rng.random_range(0..len);
                let b = (a + rng.random_range(0..200)).min(out.len());
                if a < b {
                    let span = out[a..b].to_vec();
                    out.splice(b..b, span);
                }
            }
            // A number replaced by a planted value.
            4 | 5 => {
                let digits: Vec<usize> = (0..out.len())
                    .filter(|&i| out[i].is_ascii_digit())
                    .collect();
                if !digits.is_empty() {
                    let start = digits[rng.random_range(0..digits.len())];
                    let end = (start..out.len())
                        .find(|&i| !out[i].is_ascii_digit())
                        .unwrap_or(out.len());
                    let planted = PLANTED[rng.random_range(0..PLANTED.len())].as_bytes();
                    out.splice(start..end, planted.iter().copied());
                }
            }
            // A string's content replaced.
            6 => {
                let quotes: Vec<usize> = (0..out.len()).filter(|&i| out[i] == b'"').collect();
                if quotes.len() >= 2 {
                    let q = rng.random_range(0..quotes.len() - 1);
                    let (a, b) = (quotes[q] + 1, quotes[q + 1]);
                    let planted = [
                        "",
                        "x",
                        "correct",
                        "no-self-fencing",
                        "worker-3",
                        "\u{feff}",
                        "caf\u{e9}",
                        "a\\nb",
                    ];
                    let p = planted[rng.random_range(0..planted.len())].as_bytes();
                    out.splice(a..b, p.iter().copied());
                }
            }
            // Two lines swapped.
            7 => {
                let text = String::from_utf8_lossy(&out).into_owned();
                let mut lines: Vec<&str> = text.split('\n').collect();
                if lines.len() > 2 {
                    let (a, b) = (
                        rng.random_range(0..lines.len()),
                        rng.random_range(0..lines.len()),
                    );
                    lines.swap(a, b);
                    out = lines.join("\n").into_bytes();
                }
            }
            // Junk spliced in: a byte-order mark, NULs, endless-looking text.
            8 => {
                let junk: &[&[u8]] = &[
                    b"\xef\xbb\xbf",
                    b"\0\0\0",
                    b"\xff\xfe",
                    b"\n\n\n",
                    b"y\ny\ny\n",
                    b"\r",
                    b"{{{{",
                    b"]]]",
                ];
                let at = rng.random_range(0..=out.len());
                let j = junk[rng.random_range(0..junk.len())];
                out.splice(at..at, j.iter().copied());
            }
            // A JSON value of one line replaced, when the line parses.
            _ => {
                let text = String::from_utf8_lossy(&out).into_owned();
                let lines: Vec<&str> = text.split('\n').collect();
                let l = rng.random_range(0..lines.len());
                if let Ok(mut v) = serde_json::from_str::<serde_json::Value>(lines[l]) {
                    plant(&mut v, rng);
                    let mut new: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
                    new[l] = v.to_string();
                    out = new.join("\n").into_bytes();
                } else if let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&out) {
                    plant(&mut v, rng);
                    out = serde_json::to_vec_pretty(&v).unwrap();
                }
            }
        }
    }
    out
}

/// Replace (or remove) one value somewhere in `v`.
fn plant(v: &mut serde_json::Value, rng: &mut ChaCha8Rng) {
    // A JSON pointer to a random value, walked down from the top.
    let mut pointer = String::new();
    let mut at: &serde_json::Value = v;
    for _ in 0..rng.random_range(0..6) {
        let step = match at {
            serde_json::Value::Object(m) if !m.is_empty() => {
                let k = m.keys().nth(rng.random_range(0..m.len())).unwrap().clone();
                Some(k)
            }
            serde_json::Value::Array(a) if !a.is_empty() => {
                Some(rng.random_range(0..a.len()).to_string())
            }
            _ => None,
        };
        let Some(step) = step else { break };
        at = match at {
            serde_json::Value::Object(m) => &m[&step],
            serde_json::Value::Array(a) => &a[step.parse::<usize>().unwrap()],
            _ => unreachable!(),
        };
        pointer.push('/');
        pointer.push_str(&step.replace('~', "~0").replace('/', "~1"));
    }
    let target = v.pointer_mut(&pointer).unwrap();
    if let serde_json::Value::Object(m) = target
        && !m.is_empty()
        && rng.random_range(0..3) == 0
    {
        let k = m.keys().nth(rng.random_range(0..m.len())).unwrap().clone();
        m.remove(&k);
        return;
    }
    *target = serde_json::from_str(PLANTED[rng.random_range(0..PLANTED.len())]).unwrap();
}

/// A flag's value, mutated or made up.
fn flag_value(rng: &mut ChaCha8Rng) -> String {
    let seeds = [
        "1..10",
        "5",
        "0..0",
        "10..1",
        "-1..2",
        "1..18446744073709551615",
        "a..b",
        "1...2",
        " 1..2",
        "1..2 ",
        "",
        "1..",
        "..2",
    ];
    let pick = seeds[rng.random_range(0..seeds.len())];
    let mut bytes = pick.as_bytes().to_vec();
    if rng.random_range(0..2) == 0 && !bytes.is_empty() {
        let at = rng.random_range(0..bytes.len());
        bytes[at] = rng.random_range(0x20..0x7f);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// What one input did when read: refused (with the message), or read.
fn read(kind: Kind, path: &Path, flag: &str) -> Result<(), String> {
    use leasehold::input_file::{MAX_TRACE_BYTES, read_run_text};
    match kind {
        Kind::Scenario => leasehold::Scenario::load(path)
            .map(drop)
            .map_err(|e| e.to_string()),
        Kind::Failure | Kind::Trace => {
            let text = read_run_text(path, MAX_TRACE_BYTES)?;
            leasehold::run_file::ReadRun::read(&text).map(drop)
        }
        Kind::Results => leasehold::results_file::read_results(path).map(drop),
        Kind::Flag => {
            use leasehold::sweep_args::{parse_duration, parse_jobs, parse_positive};
            // Every flag parser, on the same text: each refuses or reads.
            let results = [
                leasehold::seeds::SeedRange::parse(flag).map(drop),
                leasehold::shard::Shard::parse(flag, |_| None).map(drop),
                parse_duration(flag).map(drop),
                parse_jobs(flag).map(drop),
                parse_positive(flag).map(drop),
                leasehold::memory_estimate::parse_size(flag).map(drop),
                leasehold::trace::named_variant("--variant", flag).map(drop),
            ];
            results.into_iter().find(Result::is_err).unwrap_or(Ok(()))
        }
    }
}

#[test]
fn ten_thousand_bad_inputs_are_refused_with_one_line_no_panic_and_bounded_memory() {
    let corpus = corpus();
    let dir = std::env::temp_dir().join(format!("leasehold-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(38);
    let kinds = [
        Kind::Scenario,
        Kind::Failure,
        Kind::Trace,
        Kind::Results,
        Kind::Flag,
    ];
    let mut refused = [0usize; 5];
    let mut read_ok = [0usize; 5];
    let mut sampled = 0;
    let mut worst_heap_per_byte = 0.0f64;
    for n in 0..INPUTS {
        let k = n % kinds.len();
        let kind = kinds[k];
        let input = match kind {
            Kind::Scenario => {
                let s = &corpus.scenarios[rng.random_range(0..corpus.scenarios.len())];
                mutate(s, &mut rng)
            }
            Kind::Failure => mutate(&corpus.failure, &mut rng),
            Kind::Trace => mutate(&corpus.trace, &mut rng),
            Kind::Results => mutate(&corpus.results, &mut rng),
            Kind::Flag => Vec::new(),
        };
        let flag = if kind == Kind::Flag {
            flag_value(&mut rng)
        } else {
            String::new()
        };
        let path = dir.join(format!("input-{}", n % 8));
        std::fs::write(&path, &input).unwrap();
        let started = Instant::now();
        let (outcome, heap) =
            HEAP.peak_of(|| std::panic::catch_unwind(|| read(kind, &path, &flag)));
        let elapsed = started.elapsed();
        let outcome = outcome.unwrap_or_else(|_| {
            panic!(
                "input {n} ({kind:?}) panicked: {}",
                String::from_utf8_lossy(&input)
                    .chars()
                    .take(400)
                    .collect::<String>()
            )
        });
        assert!(elapsed < HANG, "input {n} ({kind:?}) hung for {elapsed:?}");
        // The heap a read holds at once: the text, what it parses into, a
        // copy of the lines: bounded by the input's size.
        let bound = 64 * input.len().max(flag.len()) + (8 << 20);
        assert!(
            heap <= bound,
            "input {n} ({kind:?}) of {} bytes held {heap} bytes of heap",
            input.len()
        );
        worst_heap_per_byte = worst_heap_per_byte.max(heap as f64 / input.len().max(1) as f64);
        match &outcome {
            Err(message) => {
                refused[k] += 1;
                assert!(
                    !message.trim().is_empty(),
                    "input {n} ({kind:?}): an empty message"
                );
                assert!(
                    !message.contains('\n'),
                    "input {n} ({kind:?}): a message of more than one line: {message}"
                );
            }
            Ok(()) => read_ok[k] += 1,
        }
        if n % CLI_SAMPLE == 0 {
            sampled += 1;
            check_cli(kind, &path, &flag, outcome.is_err());
        }
    }
    eprintln!(
        "fuzzed {INPUTS} inputs ({sampled} also through the binary); refused / read, by kind: {}; worst heap {worst_heap_per_byte:.1} bytes per input byte",
        kinds
            .iter()
            .enumerate()
            .map(|(k, kind)| format!("{kind:?} {}/{}", refused[k], read_ok[k]))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Most mutations break their input: the refusals are what is tested.
    for (k, kind) in kinds.iter().enumerate() {
        assert!(
            refused[k] * 2 > refused[k] + read_ok[k],
            "{kind:?}: only {} of {} refused",
            refused[k],
            refused[k] + read_ok[k]
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The binary on the same input: refused inputs exit 2 with one line on
/// stderr starting `error: `; `--max-memory 1` stops a valid scenario,
/// failure file or trace with exit 2 too, before it runs.
fn check_cli(kind: Kind, path: &Path, flag: &str, refused: bool) {
    let p = path.to_str().unwrap();
    let args: Vec<&str> = match kind {
        Kind::Scenario => vec!["run", p, "--max-memory", "1"],
        Kind::Failure | Kind::Trace => vec!["replay", p, "--max-memory", "1"],
        Kind::Results => vec!["merge", p],
        Kind::Flag => vec![
            "sweep",
            "scenarios/gc-pause-zombie.json",
            "--seeds",
            flag,
            "--max-memory",
            "1",
        ],
    };
    let o = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(&args)
        .current_dir(root())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let code = o.status.code();
    if refused || kind != Kind::Results {
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    } else {
        assert!(matches!(code, Some(0 | 1)), "{args:?}: {err}");
    }
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}
