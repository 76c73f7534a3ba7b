//! The run watchdog: a wall-clock limit on every run, checked from outside
//! the thread that runs it.
//!
//! A run takes milliseconds; one that takes a minute is nearly always a
//! node's step that never returns (the simulator's event limit cannot stop
//! a loop inside one step, and its bound on a step's outputs,
//! `limits.max_outputs_per_step`, only acts once the step returns). Rust
//! cannot stop a thread, so a command that finds a run past its limit
//! reports it as a `simulation-healthy` violation, with its seed and replay
//! command, and exits the process: the stuck thread dies with it. Waiting
//! for the rest of the work would mean waiting on a scope that never ends,
//! with one core spinning for good.
//!
//! Which step hung is found without any cost to runs that finish: the run is
//! a pure function of (scenario, seed, variant), so the watchdog runs it
//! again on a thread of its own with an observer that keeps the last `Step`
//! record, and waits until the records stop. That step is the one that never
//! returned.
//!
//! The limit is never an input to a run: it is not in the trace, the hash or
//! the replay command, and a run that finishes in time is untouched. It only
//! decides whether the tool waits for a run at all.

use leasehold_check::{Invariant, NodeRole, Violation};
use leasehold_protocol::Variant;
use leasehold_run::run::{RunOutcome, node_roles, simulate};
use leasehold_scenario::scenario::ValidScenario;
use leasehold_sim::{InputSummary, NodeId, Observer, Record, RecordKind};
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Generous: the slowest shipped scenario runs in well under a second, so
/// no machine that can run leasehold at all comes near it.
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// The monitor looks at the runs in progress this often (or four times per
/// limit, for a short one).
const POLL_MAX: Duration = Duration::from_millis(100);

/// A re-run with no new record for this long is stuck inside one step: a
/// step takes microseconds, and records follow one another as fast.
pub const SETTLE: Duration = Duration::from_secs(1);

/// How often a diagnosis looks at its re-run.
const DIAGNOSIS_POLL: Duration = Duration::from_millis(20);

/// More runs in progress at once than this is a leak (one per thread, and
/// `--jobs` is at most [`crate::sweep_engine::MAX_JOBS`]).
pub const MAX_WATCHED_RUNS: usize = 4 * crate::sweep_engine::MAX_JOBS;

/// The runs in progress, each with its start, shared by the threads that run
/// them and the monitor. `R` says what a run is (for the report).
pub struct RunWatch<R> {
    limit: Duration,
    runs: Mutex<Watched<R>>,
}

struct Watched<R> {
    next_token: u64,
    running: Vec<(u64, Instant, R)>,
}

impl<R: Copy> RunWatch<R> {
    pub fn new(limit: Duration) -> RunWatch<R> {
        assert!(!limit.is_zero(), "a run timeout of zero");
        RunWatch {
            limit,
            runs: Mutex::new(Watched {
                next_token: 0,
                running: Vec::new(),
            }),
        }
    }

    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// Run `f`, which is the run `run`, under the watch: two short locks, one
    /// before and one after.
    pub fn watch<T>(&self, run: R, f: impl FnOnce() -> T) -> T {
        struct Leave<'w, R> {
            watch: &'w RunWatch<R>,
            token: u64,
        }
        impl<R> Drop for Leave<'_, R> {
            // Also when `f` panics: a panicking run is its caller's to
            // report, not a stuck one.
            fn drop(&mut self) {
                let mut runs = self.watch.runs.lock().unwrap_or_else(|e| e.into_inner());
                let at = runs.running.iter().position(|(t, _, _)| *t == self.token);
                runs.running
                    .swap_remove(at.expect("a watched run leaves once"));
            }
        }
        let token = {
            let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
            assert!(
                runs.running.len() < MAX_WATCHED_RUNS,
                "more runs in progress than threads could run"
            );
            let token = runs.next_token;
            runs.next_token += 1;
            runs.running.push((token, Instant::now(), run));
            token
        };
        let _leave = Leave { watch: self, token };
        f()
    }

    /// The run in progress the longest, if it has passed the limit, and how
    /// long it has run.
    pub fn overdue(&self) -> Option<(R, Duration)> {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        runs.running
            .iter()
            .map(|(_, started, run)| (*run, now.saturating_duration_since(*started)))
            .max_by_key(|(_, elapsed)| *elapsed)
            .filter(|(_, elapsed)| *elapsed > self.limit)
    }
}

/// Run `work` on this thread while a monitor thread watches `watch`. If a
/// run passes the limit, `on_stuck` reports it (given the run and how long
/// it has run) and returns an exit code, and the process exits with it: a
/// stuck thread can be neither stopped nor joined. Otherwise `work`'s result.
pub fn supervise<R: Copy + Send, T>(
    watch: &RunWatch<R>,
    work: impl FnOnce() -> T,
    on_stuck: impl FnOnce(R, Duration) -> u8 + Send,
) -> T {
    supervise_then(watch, work, on_stuck, |code| {
        // Nothing below returns: what was printed must be out first.
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        std::process::exit(i32::from(code))
    })
}

/// [`supervise`] with what happens after `on_stuck` given: the process
/// exits, or (tests) the monitor thread waits for good.
pub fn supervise_then<R: Copy + Send, T>(
    watch: &RunWatch<R>,
    work: impl FnOnce() -> T,
    on_stuck: impl FnOnce(R, Duration) -> u8 + Send,
    end: impl FnOnce(u8) + Send,
) -> T {
    let done = AtomicBool::new(false);
    let poll = (watch.limit / 4).clamp(Duration::from_millis(1), POLL_MAX);
    std::thread::scope(|scope| {
        let monitor = scope.spawn(|| {
            while !done.load(Ordering::Acquire) {
                std::thread::park_timeout(poll);
                if let Some((run, elapsed)) = watch.overdue() {
                    end(on_stuck(run, elapsed));
                    // `end` did not end the process (a test): hold the
                    // scope open, as the stuck run does.
                    loop {
                        std::thread::park();
                    }
                }
            }
        });
        // The monitor stops when `work` ends, by return or by panic.
        struct Stop<'a>(&'a AtomicBool, &'a std::thread::Thread);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
                self.1.unpark();
            }
        }
        let _stop = Stop(&done, monitor.thread());
        work()
    })
}

/// The last step a run took, as its `Step` record gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastStep {
    pub time_us: u64,
    pub node: NodeId,
    pub incarnation: u32,
    pub input: InputSummary,
}

#[derive(Default)]
struct ProbeState {
    records: AtomicU64,
    last_step: Mutex<Option<LastStep>>,
    finished: AtomicBool,
}

/// An observer that keeps a run's last `Step` record and counts records,
/// for a thread that looks on.
pub struct StepProbe(Arc<ProbeState>);

impl<K, V, E> Observer<K, V, E> for StepProbe {
    fn record(&mut self, record: &Record<'_, K, V, E>) {
        self.0.records.fetch_add(1, Ordering::Relaxed);
        if let RecordKind::Step {
            node,
            incarnation,
            input,
            ..
        } = record.kind
        {
            *self.0.last_step.lock().unwrap_or_else(|e| e.into_inner()) = Some(LastStep {
                time_us: record.time_us,
                node,
                incarnation,
                input,
            });
        }
    }
}

/// What the re-run of a run past its limit showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Diagnosis {
    /// It stopped recording for [`SETTLE`]: stuck inside the step after its
    /// last `Step` record (`None`: before its first step).
    Stuck { last_step: Option<LastStep> },
    /// It finished, in this long: a slow run, not a stuck one.
    Finished { wall: Duration },
    /// It was still recording when its own limit ran out.
    Running {
        last_step: Option<LastStep>,
        records: u64,
    },
}

/// Re-run a run (`rerun`, handed an observer) on a thread of its own, left
/// to die with the process if it sticks like the run it repeats, and watch
/// its records for up to `limit`.
pub fn diagnose(rerun: impl FnOnce(&mut StepProbe) + Send + 'static, limit: Duration) -> Diagnosis {
    let state = Arc::new(ProbeState::default());
    let mut probe = StepProbe(Arc::clone(&state));
    let started = Instant::now();
    let spawned = std::thread::Builder::new()
        .name("leasehold-watchdog-rerun".to_string())
        .spawn(move || {
            // A panic ends the re-run as finishing does: it is not stuck.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| rerun(&mut probe)));
            probe.0.finished.store(true, Ordering::Release);
        });
    let last_step = || *state.last_step.lock().unwrap_or_else(|e| e.into_inner());
    if spawned.is_err() {
        // No thread for the re-run: the step is not known.
        return Diagnosis::Stuck { last_step: None };
    }
    let (mut seen, mut quiet_since) = (u64::MAX, Instant::now());
    loop {
        std::thread::sleep(DIAGNOSIS_POLL);
        if state.finished.load(Ordering::Acquire) {
            return Diagnosis::Finished {
                wall: started.elapsed(),
            };
        }
        let records = state.records.load(Ordering::Relaxed);
        if records != seen {
            (seen, quiet_since) = (records, Instant::now());
        } else if quiet_since.elapsed() >= SETTLE {
            return Diagnosis::Stuck {
                last_step: last_step(),
            };
        }
        if started.elapsed() >= limit.max(SETTLE * 2) {
            return Diagnosis::Running {
                last_step: last_step(),
                records,
            };
        }
    }
}

/// The `simulation-healthy` violation for a run with no verdict after
/// `elapsed` of wall clock (limit `limit`), named from its re-run; `name`
/// names a node.
pub fn stuck_violation(
    diagnosis: &Diagnosis,
    elapsed: Duration,
    limit: Duration,
    name: impl Fn(NodeId) -> String,
) -> Violation {
    let head = format!(
        "no verdict after {:.1} s of wall clock (--run-timeout {})",
        elapsed.as_secs_f64(),
        humantime::format_duration(limit)
    );
    let step = |s: &LastStep| {
        format!(
            "the step of {} (incarnation {}) at {:.3} s on {}",
            name(s.node),
            s.incarnation,
            s.time_us as f64 / 1e6,
            s.input
        )
    };
    let (time_us, message) = match diagnosis {
        Diagnosis::Stuck { last_step: Some(s) } => (
            s.time_us,
            format!(
                "{head}: {} never returned (run again alone, it recorded nothing for {} s after that step)",
                step(s),
                SETTLE.as_secs()
            ),
        ),
        Diagnosis::Stuck { last_step: None } => (
            0,
            format!("{head}: run again alone, it stuck before its first step"),
        ),
        Diagnosis::Finished { wall } => (
            0,
            format!(
                "{head}; run again alone, it finished in {:.1} s: slow, not stuck (raise --run-timeout)",
                wall.as_secs_f64()
            ),
        ),
        Diagnosis::Running { last_step, records } => (
            last_step.map_or(0, |s| s.time_us),
            format!(
                "{head}; run again alone, it was still running after {} ({records} records{}): busy, not stuck in one step",
                humantime::format_duration(limit),
                last_step.map_or_else(String::new, |s| format!(", the last {}", step(&s)))
            ),
        ),
    };
    Violation {
        invariant: Invariant::SimulationHealthy,
        time_ms: time_us / 1_000,
        task: None,
        message,
    }
}

/// One lease run, as the watchdog names and repeats it.
#[derive(Clone, Copy, Debug)]
pub struct LeaseRun<'a> {
    /// The scenario's file, for the replay command.
    pub file: &'a Path,
    pub scenario: &'a ValidScenario,
    pub seed: u64,
    pub variant: Variant,
}

pub type LeaseWatch<'a> = RunWatch<LeaseRun<'a>>;

/// [`simulate`] of `run`, under `watch` when there is one.
pub fn simulate_watched<'a>(watch: Option<&LeaseWatch<'a>>, run: LeaseRun<'a>) -> RunOutcome {
    let go = || simulate(run.scenario, run.seed, run.variant, None);
    match watch {
        Some(w) => w.watch(run, go),
        None => go(),
    }
}

/// What a lease run past its limit becomes: a `simulation-healthy`
/// violation naming the step that never returned, found by running it again.
pub fn stuck_outcome(run: &LeaseRun<'_>, elapsed: Duration, limit: Duration) -> RunOutcome {
    let (scn, seed, variant) = (run.scenario.clone(), run.seed, run.variant);
    let diagnosis = diagnose(
        move |probe| {
            simulate(&scn, seed, variant, Some(probe));
        },
        limit,
    );
    let roles = node_roles(run.scenario);
    let name = |node: NodeId| match roles.get(node.index()) {
        Some(NodeRole::Worker { worker }) => format!("worker-{worker}"),
        Some(NodeRole::Reclaimer { id }) => format!("reclaimer-{id}"),
        None => format!("node {}", node.0),
    };
    let violation = stuck_violation(&diagnosis, elapsed, limit, name);
    RunOutcome::unfinished(&run.scenario.scenario, seed, variant, violation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_overdue_only_past_the_limit_and_only_while_it_runs() {
        let watch: RunWatch<u64> = RunWatch::new(Duration::from_millis(30));
        assert_eq!(watch.overdue(), None);
        watch.watch(7, || {
            assert_eq!(watch.overdue(), None, "not yet past the limit");
            std::thread::sleep(Duration::from_millis(60));
            let (run, elapsed) = watch.overdue().expect("past the limit");
            assert_eq!(run, 7);
            assert!(elapsed > Duration::from_millis(30));
        });
        assert_eq!(watch.overdue(), None, "a finished run is not watched");
    }

    #[test]
    fn a_run_that_panics_leaves_the_watch() {
        let watch: RunWatch<u64> = RunWatch::new(Duration::from_millis(1));
        let result =
            std::panic::catch_unwind(AssertUnwindSafe(|| watch.watch(3, || panic!("boom"))));
        assert!(result.is_err());
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(watch.overdue(), None);
    }

    #[test]
    fn a_run_that_finishes_is_not_reported_and_its_result_returns() {
        let watch: RunWatch<u64> = RunWatch::new(DEFAULT_RUN_TIMEOUT);
        let result = supervise_then(
            &watch,
            || watch.watch(1, || 41 + 1),
            |_, _| unreachable!("no run is stuck"),
            |_| unreachable!("no run is stuck"),
        );
        assert_eq!(result, 42);
    }
}
