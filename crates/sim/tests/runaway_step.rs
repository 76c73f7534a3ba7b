//! A step that returns more outputs than `limits.max_outputs_per_step` ends
//! the run with a message naming the node and the step; a step at the bound
//! runs as usual. The node here is a test-only one: it emits `burst` events
//! on its first timeout and nothing else.

use leasehold_interface::{Input, Instant, LocalTime, Output};
use leasehold_sim::{
    FaultPlan, FaultSource, LocalClock, NetworkSpec, Node, NodeSpec, NullObserver, RunLimits,
    SimConfig, Simulation, StopReason,
};

const BOUND: usize = 64;

struct Burst {
    burst: u32,
    fired: bool,
}

impl Node for Burst {
    type Key = u32;
    type Value = u32;
    type Event = u32;

    fn step(
        &mut self,
        _now: LocalTime,
        input: &Input<u32, u32>,
        out: &mut Vec<Output<u32, u32, u32>>,
    ) {
        if let Input::Timeout = input {
            self.fired = true;
            out.extend((0..self.burst).map(Output::Event));
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        (!self.fired).then_some(Instant::from_micros(2_500_000))
    }
}

fn run(burst: u32) -> StopReason {
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
            max_outputs_per_step: BOUND,
        },
    };
    let factory = Box::new(move |_, _| Burst {
        burst,
        fired: false,
    });
    let mut sim: Simulation<Burst> = Simulation::new(config, 7, factory);
    sim.add_node(NodeSpec {
        name: "flooder-0".to_string(),
        crashable: false,
        pausable: false,
        clock: LocalClock::new(0, 0),
        boot_at_ms: 1_000,
        stream_id: 0,
    });
    sim.run(&mut NullObserver).stop
}

#[test]
fn a_step_at_the_bound_runs() {
    assert_eq!(run(BOUND as u32), StopReason::Quiescent);
}

#[test]
fn a_step_past_the_bound_ends_the_run_naming_the_node_and_the_step() {
    let result = std::panic::catch_unwind(|| run(BOUND as u32 + 1));
    let payload = result.expect_err("a step past the bound must end the run");
    let message = payload
        .downcast_ref::<String>()
        .expect("a formatted message");
    assert!(
        message.contains("65 outputs")
            && message.contains("max_outputs_per_step (64)")
            && message.contains("flooder-0 (incarnation 1)")
            && message.contains("at 2.500 s on timeout"),
        "{message}"
    );
}
