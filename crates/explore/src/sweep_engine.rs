//! The sweep engine: runs many seeds on `jobs` threads and reports them in
//! seed order, so the outcome of a sweep is the same whatever `jobs` is.
//!
//! It knows nothing about leases: a [`SeedJob`] says what running one seed
//! means (`sweep` runs a scenario under one variant; a `hunt` can run one
//! variant over a list of scenarios by making its job do so). Each seed runs
//! on one thread from start to end; threads only ever share the queue of
//! seeds to run, so every run stays single-threaded and deterministic.
//!
//! Results reach a [`SweepSink`] twice:
//! - [`SweepSink::finished`] as soon as a seed finishes, in whatever order
//!   threads finish them: write results files there, so a killed sweep loses
//!   nothing already found;
//! - [`SweepSink::committed`] in the order the seeds were given, each seed
//!   exactly once: print and summarise there, and the output is identical
//!   for any number of jobs.
//!
//! Stopping: a time budget stops handing out seeds once it runs out; the
//! seeds already running finish (a run cannot be interrupted), so the
//! committed seeds are always a prefix of the seed list. `stop_after_failures
//! = N` ends the committed stream at the N-th failure in seed order; seeds
//! past it that happened to finish are passed to `finished` but are never
//! committed, which keeps the summary independent of `jobs`.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// More threads than this is a typo.
pub const MAX_JOBS: usize = 1024;

/// A thread may run at most this many seeds ahead of the oldest seed still
/// running (per job), which bounds the reorder buffer.
pub const REORDER_WINDOW_PER_JOB: u64 = 64;

/// What running one seed means.
pub trait SeedJob: Sync {
    type Output: Send;
    /// Run one seed. Called from many threads at once, one seed per call.
    fn run(&self, seed: u64) -> Self::Output;
    /// Whether this output counts towards `stop_after_failures`.
    fn is_failure(&self, output: &Self::Output) -> bool;
}

/// Where results go. Every method is called on the thread that called
/// [`run_sweep`], never concurrently.
pub trait SweepSink<T> {
    /// A seed finished (any order). Called for every seed that ran.
    fn finished(&mut self, _seed: u64, _output: &T, _progress: &Progress) {}
    /// The next seed in seed order. Called once per committed seed.
    fn committed(&mut self, seed: u64, output: T);
    /// Called about every [`SweepOptions::tick_interval`] while waiting.
    fn tick(&mut self, _progress: &Progress) {}
    /// Asked after every call above: true stops handing out seeds (say, the
    /// results file cannot be written). Seeds already running still finish.
    fn should_stop(&self) -> bool {
        false
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Seeds finished so far (in any order).
    pub seeds_done: u64,
    /// Seeds this sweep was asked to run.
    pub seeds_total: u64,
    /// Failures among the finished seeds.
    pub failures: u64,
    pub elapsed: Duration,
}

impl Progress {
    pub fn seeds_per_sec(&self) -> f64 {
        self.seeds_done as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Time left at the rate so far, once there is a rate.
    pub fn eta(&self) -> Option<Duration> {
        let rate = self.seeds_per_sec();
        (self.seeds_done > 0 && rate > 0.0).then(|| {
            Duration::from_secs_f64(self.seeds_total.saturating_sub(self.seeds_done) as f64 / rate)
        })
    }
}

#[derive(Clone, Debug)]
pub struct SweepOptions {
    /// Threads running seeds, each one seed at a time.
    pub jobs: usize,
    /// Stop handing out seeds after this much wall time.
    pub time_budget: Option<Duration>,
    /// End the sweep at the N-th failure in seed order. `Some(0)`: the limit
    /// is reached already (a resumed sweep's earlier failures), nothing runs.
    pub stop_after_failures: Option<u64>,
    /// How often [`SweepSink::tick`] is called while no seed finishes.
    pub tick_interval: Duration,
}

impl SweepOptions {
    pub fn with_jobs(jobs: usize) -> SweepOptions {
        SweepOptions {
            jobs,
            time_budget: None,
            stop_after_failures: None,
            tick_interval: Duration::from_millis(250),
        }
    }
}

/// The number of cores, as the default for `--jobs`.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// Every seed ran.
    Completed,
    /// The time budget ran out first.
    TimeBudget,
    /// `stop_after_failures` failures were found.
    StopAfter,
    /// The sink asked to stop ([`SweepSink::should_stop`]).
    Aborted,
}

#[derive(Clone, Copy, Debug)]
pub struct SweepRun {
    pub stop: StopReason,
    /// Seeds passed to `committed` (a prefix of the seed list).
    pub seeds_committed: u64,
    /// Failures among the committed seeds.
    pub failures_committed: u64,
    /// Seeds that ran (>= committed: some may have finished past a stop-after cut).
    pub seeds_finished: u64,
    pub elapsed: Duration,
}

struct Dispatch<I> {
    seeds: I,
    /// Index (in the seed list) of the next seed to hand out.
    next_index: u64,
    /// Seeds `0..committed` are committed.
    committed: u64,
    stop: bool,
}

/// Run `seeds` (of which there are `seeds_total`) with `job` and send every
/// result to `sink`. Panics only if `job.run` panics (after stopping the
/// other threads cleanly).
pub fn run_sweep<J, I, S>(
    job: &J,
    seeds: I,
    seeds_total: u64,
    options: &SweepOptions,
    sink: &mut S,
) -> SweepRun
where
    J: SeedJob,
    I: Iterator<Item = u64> + Send,
    S: SweepSink<J::Output>,
{
    assert!(
        options.jobs >= 1 && options.jobs <= MAX_JOBS,
        "jobs must be between 1 and {MAX_JOBS}"
    );
    assert!(options.tick_interval > Duration::ZERO);
    let started = Instant::now();
    if options.stop_after_failures == Some(0) {
        return SweepRun {
            stop: StopReason::StopAfter,
            seeds_committed: 0,
            failures_committed: 0,
            seeds_finished: 0,
            elapsed: Duration::ZERO,
        };
    }
    let threads = options
        .jobs
        .min(usize::try_from(seeds_total).unwrap_or(usize::MAX))
        .max(1);
    let window = REORDER_WINDOW_PER_JOB * threads as u64;
    let dispatch = Mutex::new(Dispatch {
        seeds,
        next_index: 0,
        committed: 0,
        stop: false,
    });
    let wake = Condvar::new();
    let stop_all = || {
        let mut d = dispatch.lock().expect("no thread panics holding the lock");
        d.stop = true;
        wake.notify_all();
    };

    let mut pending: BTreeMap<u64, (u64, J::Output)> = BTreeMap::new();
    let mut stop = StopReason::Completed;
    let mut seeds_committed: u64 = 0;
    let mut failures_committed: u64 = 0;
    let mut seeds_finished: u64 = 0;
    let mut failures_finished: u64 = 0;
    let progress = |done: u64, failures: u64| Progress {
        seeds_done: done,
        seeds_total,
        failures,
        elapsed: started.elapsed(),
    };

    std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::channel::<(u64, u64, J::Output)>();
        for _ in 0..threads {
            let sender = sender.clone();
            let (dispatch, wake, stop_all) = (&dispatch, &wake, &stop_all);
            scope.spawn(move || {
                loop {
                    let (index, seed) = {
                        let mut d = dispatch.lock().expect("no thread panics holding the lock");
                        while !d.stop && d.next_index >= d.committed + window {
                            d = wake.wait(d).expect("no thread panics holding the lock");
                        }
                        if d.stop {
                            return;
                        }
                        let Some(seed) = d.seeds.next() else {
                            return;
                        };
                        let index = d.next_index;
                        d.next_index += 1;
                        (index, seed)
                    };
                    match catch_unwind(AssertUnwindSafe(|| job.run(seed))) {
                        Ok(output) => {
                            if sender.send((index, seed, output)).is_err() {
                                return;
                            }
                        }
                        Err(payload) => {
                            // Free the other threads, then let the scope
                            // carry the panic to the caller.
                            stop_all();
                            resume_unwind(payload);
                        }
                    }
                }
            });
        }
        drop(sender);

        let mut last_tick = Instant::now();
        loop {
            let mut wait = options.tick_interval;
            if let Some(budget) = options.time_budget {
                let elapsed = started.elapsed();
                if elapsed >= budget {
                    if stop == StopReason::Completed {
                        stop = StopReason::TimeBudget;
                        stop_all();
                    }
                } else {
                    wait = wait.min(budget - elapsed);
                }
            }
            match receiver.recv_timeout(wait) {
                Ok((index, seed, output)) => {
                    seeds_finished += 1;
                    if job.is_failure(&output) {
                        failures_finished += 1;
                    }
                    sink.finished(seed, &output, &progress(seeds_finished, failures_finished));
                    if stop == StopReason::StopAfter {
                        continue; // past the cut: finished, never committed
                    }
                    assert!(index >= seeds_committed, "seed index {index} arrived twice");
                    assert!(
                        pending.len() as u64 <= window,
                        "reorder buffer over its window"
                    );
                    pending.insert(index, (seed, output));
                    while let Some((seed, output)) = pending.remove(&seeds_committed) {
                        seeds_committed += 1;
                        let failed = job.is_failure(&output);
                        sink.committed(seed, output);
                        if failed {
                            failures_committed += 1;
                            if options.stop_after_failures == Some(failures_committed) {
                                stop = StopReason::StopAfter;
                                pending.clear();
                                break;
                            }
                        }
                    }
                    let mut d = dispatch.lock().expect("no thread panics holding the lock");
                    d.committed = seeds_committed;
                    d.stop |= stop == StopReason::StopAfter;
                    wake.notify_all();
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if last_tick.elapsed() >= options.tick_interval {
                last_tick = Instant::now();
                sink.tick(&progress(seeds_finished, failures_finished));
            }
            if stop == StopReason::Completed && sink.should_stop() {
                stop = StopReason::Aborted;
                stop_all();
            }
        }
    });

    assert!(pending.is_empty() || stop == StopReason::StopAfter);
    let dispatched = dispatch
        .into_inner()
        .expect("no thread panics holding the lock")
        .next_index;
    if stop != StopReason::StopAfter {
        // Every seed handed out finished and was committed: a prefix.
        assert_eq!(seeds_committed, dispatched);
        assert_eq!(seeds_finished, dispatched);
    }
    assert!(seeds_committed <= seeds_total && seeds_finished <= seeds_total);
    if stop == StopReason::Completed {
        assert_eq!(
            seeds_committed, seeds_total,
            "the seed list had fewer seeds than seeds_total"
        );
    }
    SweepRun {
        stop,
        seeds_committed,
        failures_committed,
        seeds_finished,
        elapsed: started.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job whose seeds take uneven time, so threads finish out of order.
    struct Uneven;

    impl SeedJob for Uneven {
        type Output = u64;
        fn run(&self, seed: u64) -> u64 {
            let mut x = seed;
            for _ in 0..(seed % 7) * 20_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            std::hint::black_box(x);
            seed * 10
        }
        fn is_failure(&self, output: &u64) -> bool {
            output.is_multiple_of(30)
        }
    }

    #[derive(Default)]
    struct Collect {
        finished: Vec<u64>,
        committed: Vec<(u64, u64)>,
    }

    impl SweepSink<u64> for Collect {
        fn finished(&mut self, seed: u64, _: &u64, _: &Progress) {
            self.finished.push(seed);
        }
        fn committed(&mut self, seed: u64, output: u64) {
            self.committed.push((seed, output));
        }
    }

    fn sweep(jobs: usize, stop_after: Option<u64>) -> (SweepRun, Collect) {
        let mut sink = Collect::default();
        let mut options = SweepOptions::with_jobs(jobs);
        options.stop_after_failures = stop_after;
        let run = run_sweep(&Uneven, 1..=500u64, 500, &options, &mut sink);
        (run, sink)
    }

    #[test]
    fn commits_in_seed_order_for_any_jobs() {
        for jobs in [1, 2, 3, 8] {
            let (run, sink) = sweep(jobs, None);
            assert_eq!(run.stop, StopReason::Completed);
            assert_eq!(run.seeds_committed, 500);
            assert_eq!(run.failures_committed, 500 / 3);
            let expected: Vec<(u64, u64)> = (1..=500).map(|s| (s, s * 10)).collect();
            assert_eq!(sink.committed, expected, "jobs {jobs}");
            let mut finished = sink.finished.clone();
            finished.sort_unstable();
            assert_eq!(finished, (1..=500).collect::<Vec<_>>());
        }
    }

    #[test]
    fn stop_after_cuts_at_the_nth_failure_in_seed_order() {
        for jobs in [1, 2, 4] {
            let (run, sink) = sweep(jobs, Some(5));
            assert_eq!(run.stop, StopReason::StopAfter);
            assert_eq!(run.failures_committed, 5);
            // Failures are seeds 3, 6, 9, 12, 15.
            assert_eq!(sink.committed.last(), Some(&(15, 150)), "jobs {jobs}");
            assert_eq!(sink.committed.len(), 15);
            assert!(run.seeds_finished >= 15);
        }
    }

    #[test]
    fn a_zero_time_budget_commits_a_prefix() {
        let mut sink = Collect::default();
        let mut options = SweepOptions::with_jobs(2);
        options.time_budget = Some(Duration::ZERO);
        let run = run_sweep(&Uneven, 1..=500u64, 500, &options, &mut sink);
        assert_eq!(run.stop, StopReason::TimeBudget);
        let n = sink.committed.len() as u64;
        assert_eq!(run.seeds_committed, n);
        assert!(n < 500);
        assert_eq!(
            sink.committed,
            (1..=n).map(|s| (s, s * 10)).collect::<Vec<_>>()
        );
    }

    /// How a hunt (each variant over many scenarios, until the first
    /// failure) runs on the engine: the "seed" is a run index mapped to
    /// (scenario, seed) round-robin, and stop-after 1 keeps the first failure
    /// in that order whatever `jobs` is.
    struct RoundRobin {
        scenarios: u64,
    }

    impl SeedJob for RoundRobin {
        type Output = (u64, u64, bool);
        fn run(&self, index: u64) -> (u64, u64, bool) {
            let (scenario, seed) = (index % self.scenarios, index / self.scenarios + 1);
            // Scenario 2 fails from seed 4 on; scenario 1 from seed 6 on.
            let failed = (scenario == 2 && seed >= 4) || (scenario == 1 && seed >= 6);
            (scenario, seed, failed)
        }
        fn is_failure(&self, output: &(u64, u64, bool)) -> bool {
            output.2
        }
    }

    struct First(Option<(u64, u64)>, u64);

    impl SweepSink<(u64, u64, bool)> for First {
        fn committed(&mut self, _: u64, (scenario, seed, failed): (u64, u64, bool)) {
            self.1 += 1;
            if failed {
                self.0 = Some((scenario, seed));
            }
        }
    }

    #[test]
    fn a_hunt_is_a_sweep_over_run_indices_with_stop_after_one() {
        for jobs in [1, 2, 5] {
            let mut options = SweepOptions::with_jobs(jobs);
            options.stop_after_failures = Some(1);
            let mut first = First(None, 0);
            let job = RoundRobin { scenarios: 3 };
            let run = run_sweep(&job, 0..3 * 100, 3 * 100, &options, &mut first);
            assert_eq!(run.stop, StopReason::StopAfter);
            assert_eq!(first.0, Some((2, 4)), "jobs {jobs}");
            assert_eq!(first.1, 12, "runs until detection, jobs {jobs}");
        }
    }

    struct Panics;

    impl SeedJob for Panics {
        type Output = ();
        fn run(&self, seed: u64) {
            assert!(seed != 40, "job panicked on seed 40");
        }
        fn is_failure(&self, _: &()) -> bool {
            false
        }
    }

    struct Ignore;
    impl SweepSink<()> for Ignore {
        fn committed(&mut self, _: u64, _: ()) {}
    }

    #[test]
    fn a_panicking_job_panics_the_caller_instead_of_hanging() {
        let result = catch_unwind(|| {
            run_sweep(
                &Panics,
                1..=10_000u64,
                10_000,
                &SweepOptions::with_jobs(2),
                &mut Ignore,
            )
        });
        assert!(result.is_err());
    }
}
