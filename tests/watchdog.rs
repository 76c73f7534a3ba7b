//! The run watchdog: a run whose node loops inside its step is reported,
//! within seconds of its limit, as a `simulation-healthy` violation naming
//! its seed, the node and the step; runs that finish are untouched.
//!
//! The looping node is a test-only one (`Spinner`), hosted by the simulator
//! like any node: no protocol variant loops.

mod common;
use common::*;
use leasehold::watchdog::{
    Diagnosis, LastStep, LeaseRun, LeaseWatch, RunWatch, diagnose, simulate_watched, stuck_outcome,
    stuck_violation, supervise_then,
};
use leasehold::{simulate, watchdog};
use leasehold_check::Invariant;
use leasehold_interface::{Input, Instant, LocalTime, Output};
use leasehold_protocol::Variant;
use leasehold_sim::{
    FaultPlan, FaultSource, InputSummary, LocalClock, NetworkSpec, Node, NodeId, NodeSpec,
    NullObserver, Observer, RunLimits, SimConfig, Simulation,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// Lets every spinning step return, once the test has its report.
static RELEASE: AtomicBool = AtomicBool::new(false);

/// Wakes every second; its third step (the timeout at 2 s) does not return
/// until [`RELEASE`]. It sleeps while it waits, to spare the shared cores:
/// to the watchdog that is the same as a loop that never ends.
struct Spinner {
    steps: u32,
    now: Instant,
}

impl Node for Spinner {
    type Key = u32;
    type Value = u32;
    type Event = u32;

    fn step(
        &mut self,
        now: LocalTime,
        _input: &Input<u32, u32>,
        out: &mut Vec<Output<u32, u32, u32>>,
    ) {
        self.steps += 1;
        self.now = now.mono;
        if self.steps == 3 {
            while !RELEASE.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        out.push(Output::Event(self.steps));
    }

    fn poll_timeout(&self) -> Option<Instant> {
        (self.steps < 5).then(|| Instant::from_micros(self.now.as_micros() + 1_000_000))
    }
}

fn run_spinner(seed: u64, observer: &mut dyn Observer<u32, u32, u32>) {
    let config = SimConfig {
        network: NetworkSpec {
            latency_us_min: 1_000,
            latency_us_max: 2_000,
        },
        fault_phase_end_us: 0,
        faults: FaultSource::Plan(FaultPlan::default()),
        exit_restart_us_min: 0,
        exit_restart_us_max: 0,
        limits: RunLimits {
            max_sim_time_us: 60_000_000,
            max_events: 1_000,
            max_queue_len: 1_024,
            max_outputs_per_step: 16,
        },
    };
    let factory = Box::new(|_, _| Spinner {
        steps: 0,
        now: Instant::ZERO,
    });
    let mut sim: Simulation<Spinner> = Simulation::new(config, seed, factory);
    sim.add_node(NodeSpec {
        name: "spinner-0".to_string(),
        crashable: false,
        pausable: false,
        clock: LocalClock::new(0, 0),
        boot_at_ms: 0,
        stream_id: 0,
    });
    sim.run(&mut ObserverRef(observer));
}

/// `&mut dyn Observer` as an `Observer` (the simulator takes one by type).
struct ObserverRef<'a>(&'a mut dyn Observer<u32, u32, u32>);

impl Observer<u32, u32, u32> for ObserverRef<'_> {
    fn record(&mut self, record: &leasehold_sim::Record<'_, u32, u32, u32>) {
        self.0.record(record);
    }
}

#[test]
fn a_step_that_never_returns_is_reported_with_its_seed_node_and_step() {
    const SEED: u64 = 17;
    let limit = Duration::from_secs(1);
    let (report, reported) = mpsc::channel();
    // The supervised work never ends (until released), so it runs on a
    // thread of its own; what the command would print and exit with is
    // sent here instead.
    std::thread::spawn(move || {
        let watch: RunWatch<u64> = RunWatch::new(limit);
        supervise_then(
            &watch,
            || watch.watch(SEED, || run_spinner(SEED, &mut NullObserver)),
            |seed, elapsed| {
                let diagnosis = diagnose(move |probe| run_spinner(seed, probe), limit);
                let violation =
                    stuck_violation(&diagnosis, elapsed, limit, |n| format!("spinner-{}", n.0));
                report
                    .send((seed, elapsed, diagnosis, violation))
                    .expect("the test waits");
                1
            },
            |_| {},
        );
    });
    // A bound, not a timing: the report comes at about twice the limit.
    let got = reported.recv_timeout(Duration::from_secs(120));
    RELEASE.store(true, Ordering::Release);
    let (seed, elapsed, diagnosis, violation) = got.expect("the stuck run is reported");
    assert_eq!(seed, SEED);
    assert!(elapsed > limit);
    assert_eq!(
        diagnosis,
        Diagnosis::Stuck {
            last_step: Some(LastStep {
                time_us: 2_000_000,
                node: NodeId(0),
                incarnation: 1,
                input: InputSummary::Timeout,
            })
        }
    );
    assert_eq!(violation.invariant, Invariant::SimulationHealthy);
    assert_eq!(violation.time_ms, 2_000);
    assert!(
        violation
            .message
            .contains("the step of spinner-0 (incarnation 1) at 2.000 s on timeout never returned"),
        "{}",
        violation.message
    );
    assert!(
        violation.message.contains("--run-timeout 1s"),
        "{}",
        violation.message
    );
}

#[test]
fn a_slow_lease_run_is_reported_as_slow_not_stuck_with_its_seed() {
    let scn = scenario("payments");
    let file = root().join("scenarios/payments.json");
    let run = LeaseRun {
        file: &file,
        scenario: &scn,
        seed: 4,
        variant: Variant::Correct,
    };
    // As if the run had taken a minute and a half: its re-run finishes.
    let limit = watchdog::DEFAULT_RUN_TIMEOUT;
    let outcome = stuck_outcome(&run, Duration::from_secs(90), limit);
    assert_eq!(outcome.seed, 4);
    assert_eq!(outcome.scenario, "payments");
    assert_eq!(outcome.invariants, vec![Invariant::SimulationHealthy]);
    let message = &outcome.violations[0].message;
    assert!(
        message.starts_with("no verdict after 90.0 s of wall clock (--run-timeout 1m)")
            && message.contains("slow, not stuck"),
        "{message}"
    );
}

#[test]
fn the_watch_never_changes_a_run_that_finishes() {
    let scn = scenario("friday-rush");
    let file = root().join("scenarios/friday-rush.json");
    let watch: LeaseWatch<'_> = RunWatch::new(Duration::from_secs(3_600));
    for seed in 1..=3 {
        let run = LeaseRun {
            file: &file,
            scenario: &scn,
            seed,
            variant: Variant::Correct,
        };
        let watched = supervise_then(
            &watch,
            || simulate_watched(Some(&watch), run),
            |_, _| unreachable!("no run is stuck"),
            |_| {},
        );
        let plain = simulate(&scn, seed, Variant::Correct, None);
        assert_eq!(
            watched.trace_hash_hex(),
            plain.trace_hash_hex(),
            "seed {seed}"
        );
        assert_eq!(watched.events(), plain.events());
    }
}

#[test]
fn the_run_timeout_flag_is_checked_and_changes_no_run() {
    let hash = |args: &[&str]| {
        let mut all = vec![
            "run",
            "scenarios/gc-pause-zombie.json",
            "--seed",
            "3",
            "--json",
        ];
        all.extend_from_slice(args);
        let o = leasehold(&all);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        v["trace_hash"].as_str().expect("a hash").to_string()
    };
    assert_eq!(hash(&[]), hash(&["--run-timeout", "1h"]));
    for bad in ["0s", "soon", "-5s"] {
        for command in [
            vec!["run", "scenarios/gc-pause-zombie.json"],
            vec!["sweep", "scenarios/gc-pause-zombie.json", "--seeds", "1..2"],
            vec!["hunt", "--budget", "1"],
            vec!["shrink", "scenarios/gc-pause-zombie.json", "--seed", "1"],
        ] {
            let mut args = command.clone();
            args.extend(["--run-timeout", bad]);
            assert_bad_input(&leasehold(&args), &["--run-timeout", bad]);
        }
    }
}
