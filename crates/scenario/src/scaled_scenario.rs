//! Scenarios for measuring speed at scale: friday-rush resized to a fleet of
//! any size running for one simulated hour.
//!
//! Everything but the size comes from `scenarios/friday-rush.json` (protocol
//! timings, services, steps, the fault model and its swarm draw), so the cost
//! per event can be compared across sizes. Two things change with the size:
//!
//! - tasks: 100 per worker, arriving over the first 50 simulated minutes;
//!   faults stop at 50 minutes, and the last task is done near 51 (the run
//!   ends soon after). Its hard stop, [`SIM_TIME_MS`], is 90 minutes: past
//!   the no-lost-task deadline of the worst case (every task pending when
//!   faults stop: 63.5 minutes for 10,000 workers), as validation requires
//!   of every scenario file; the runs never come near it.
//! - idle polling backs off: `idle_poll_max_ms` is [`IDLE_POLL_MAX_MS`].
//!   10,000 idle workers polling every second are 10,000 index scans a
//!   second on one store, and every new task is raced for by every worker
//!   that polled in the few milliseconds it was pending; a fleet that size
//!   would back off, and the work per task should not grow with the fleet.
//! - fault rates: every per-step and per-message rate is divided by
//!   [`FAULT_RATE_DIVISOR`]. At friday-rush's rates a 10,000-worker hour
//!   injects millions of faults, over the simulator's bound of
//!   `MAX_FAULTS_PER_RUN` (a runaway rate is treated as a scenario bug).
//!   Time-based faults (partitions, outages, a rolling deploy, a mass failure
//!   of half the fleet) keep their friday-rush rates and times.

use crate::fault_model::Range;
use crate::scenario::{LimitsSection, Scenario, ScenarioError, ValidScenario};

/// The scenario every scaled one is resized from.
pub const BASE_SCENARIO: &str = include_str!("../../../scenarios/friday-rush.json");

pub const TASKS_PER_WORKER: u32 = 100;
pub const ARRIVAL_WINDOW_MS: u64 = 50 * 60_000;
pub const SIM_TIME_MS: u64 = 90 * 60_000;
pub const FAULT_RATE_DIVISOR: f64 = 20.0;
/// Idle workers wait up to this long between empty polls.
pub const IDLE_POLL_MAX_MS: u64 = 8_000;
/// The default bound of 200 million events is too low for an hour of 10,000
/// workers (about 125 million events with idle backoff, 443 million without).
pub const MAX_EVENTS: u64 = 2_000_000_000;

fn scaled(r: &mut Range<f64>) {
    r[0] /= FAULT_RATE_DIVISOR;
    r[1] /= FAULT_RATE_DIVISOR;
}

/// friday-rush with `workers` workers and `100 x workers` tasks, for one
/// simulated hour.
pub fn one_hour_fleet(workers: u32) -> Result<ValidScenario, ScenarioError> {
    let base = Scenario::parse(BASE_SCENARIO)?;
    let mut s = base.scenario;
    let tasks = workers.checked_mul(TASKS_PER_WORKER).ok_or(ScenarioError {
        field: "fleet.workers".into(),
        message: format!("{workers} workers make too many tasks"),
    })?;
    s.name = format!("fleet-{workers}-workers-{tasks}-tasks-one-hour");
    s.story = format!(
        "Scale: friday-rush with {workers} workers and {tasks} orders over one simulated hour, \
         per-step and per-message fault rates divided by {FAULT_RATE_DIVISOR}."
    );
    s.fleet.workers = workers;
    s.protocol.idle_poll_max_ms = Some(IDLE_POLL_MAX_MS);
    s.tasks.count = tasks;
    s.tasks.arrival_window_ms = ARRIVAL_WINDOW_MS;
    s.faults.fault_phase_ms = ARRIVAL_WINDOW_MS;
    let f = &mut s.faults;
    if let Some(c) = f.crash.as_mut() {
        scaled(&mut c.per_step);
    }
    if let Some(p) = f.pause.as_mut() {
        scaled(&mut p.per_step);
    }
    if let Some(c) = f.clock.as_mut() {
        scaled(&mut c.jump_per_step);
    }
    if let Some(n) = f.network.as_mut() {
        scaled(&mut n.loss);
        scaled(&mut n.duplicate);
        scaled(&mut n.delay);
    }
    if let Some(st) = f.store.as_mut() {
        scaled(&mut st.failure);
        scaled(&mut st.slow);
        scaled(&mut st.ambiguous);
    }
    if let Some(sv) = f.services.as_mut() {
        scaled(&mut sv.failure);
        scaled(&mut sv.slow);
        scaled(&mut sv.ambiguous);
        scaled(&mut sv.hang);
    }
    s.limits = LimitsSection {
        max_sim_time_ms: SIM_TIME_MS,
        max_events: MAX_EVENTS,
        ..LimitsSection::default()
    };
    // Parsed back from its own text, so that the scenario is exactly what the
    // text says (JSON floats need not survive a round trip bit for bit) and a
    // file written from `source` runs the same.
    let source = serde_json::to_string_pretty(&s).expect("a scenario serializes");
    Scenario::parse(&source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ProtocolSection;

    #[test]
    fn sizes_validate_and_keep_the_base_protocol() {
        let base = Scenario::parse(BASE_SCENARIO).unwrap();
        for workers in [10, 100, 1_000, 10_000] {
            let s = one_hour_fleet(workers).unwrap();
            assert_eq!(s.scenario.fleet.workers, workers);
            assert_eq!(s.scenario.tasks.count, workers * TASKS_PER_WORKER);
            assert_eq!(s.scenario.protocol.idle_poll_max_ms, Some(IDLE_POLL_MAX_MS));
            let protocol = ProtocolSection {
                idle_poll_max_ms: None,
                ..s.scenario.protocol.clone()
            };
            assert_eq!(protocol, base.scenario.protocol);
            assert_eq!(s.scenario.services, base.scenario.services);
            // The source is the scenario itself: a trace of it replays.
            assert_eq!(Scenario::parse(&s.source).unwrap().scenario, s.scenario);
        }
    }

    /// The checked-in copy (for `leasehold run`) is what the benches build.
    #[test]
    fn the_checked_in_hour_scenario_is_current() {
        let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("benches/scenarios/fleet-10000-workers-one-hour.json");
        let file = Scenario::load(&path).expect("benches/scenarios holds the hour run");
        assert_eq!(file.scenario, one_hour_fleet(10_000).unwrap().scenario);
    }
}
