//! Scenarios the chart sweeps build in code (never from files), each
//! validated by [`Scenario::validate`] like any scenario a user writes.

use leasehold_protocol::HeartbeatMode;
use leasehold_scenario::fault_model::{CrashFaults, FaultsSection, RestartFaults};
use leasehold_scenario::scenario::{
    Fleet, LimitsSection, NetworkSection, ProtocolSection, Scenario, ServiceSection, TasksSection,
    ValidScenario,
};
use leasehold_sim::Dedup;

/// Heartbeat interval of the load sweeps, as in the friday-rush scenario.
pub const LOAD_HEARTBEAT_INTERVAL_MS: u64 = 5_000;
/// Steps of a long task: with 20-40 s per step a task outlives any window.
pub const LONG_TASK_STEPS: usize = 20;

/// The protocol knobs of friday-rush, with a heartbeat interval and lease
/// timeout to choose.
pub fn protocol(
    heartbeat_interval_ms: u64,
    lease_timeout_ms: u64,
    scan_interval_ms: u64,
    effect_timeout_ms: u64,
    mode: HeartbeatMode,
) -> ProtocolSection {
    ProtocolSection {
        heartbeat_interval_ms,
        lease_timeout_ms,
        scan_interval_ms,
        poll_interval_ms: 1_000,
        idle_poll_max_ms: None,
        store_timeout_ms: 1_000,
        effect_timeout_ms,
        retry_backoff_ms: 200,
        scan_page_size: 100,
        default_lease_timeout_ms: 15_000,
        heartbeat_mode: mode,
    }
}

fn no_faults() -> FaultsSection {
    crash_faults(0, 0.0)
}

/// Worker crashes only, at a fixed rate (no swarm: every seed has them).
fn crash_faults(fault_phase_ms: u64, crash_probability_per_step: f64) -> FaultsSection {
    FaultsSection {
        crash: (crash_probability_per_step > 0.0).then_some(CrashFaults {
            per_step: [crash_probability_per_step, crash_probability_per_step],
            reclaimers: false,
        }),
        ..FaultsSection::none(fault_phase_ms, [1_000, 20_000])
    }
}

/// Tasks that keep every slot busy for the whole run: `slots_per_worker`
/// long tasks per worker, all there at time zero, each step 20-40 s.
pub fn steady_busy(
    workers: u32,
    slots_per_worker: u32,
    mode: HeartbeatMode,
    end_ms: u64,
) -> ValidScenario {
    validated(steady_busy_scenario(
        workers,
        slots_per_worker,
        mode,
        end_ms,
    ))
}

/// [`steady_busy`] before validation, for scenarios built from it.
fn steady_busy_scenario(
    workers: u32,
    slots_per_worker: u32,
    mode: HeartbeatMode,
    end_ms: u64,
) -> Scenario {
    assert!(workers > 0 && slots_per_worker > 0);
    Scenario {
        name: format!("busy-{workers}x{slots_per_worker}-{}", mode.name()),
        story: "Every slot busy with a long task: heartbeat load in steady state.".into(),
        fleet: Fleet {
            workers,
            reclaimers: 2,
            slots_per_worker,
            worker_ids: None,
            reclaimer_ids: None,
        },
        protocol: protocol(LOAD_HEARTBEAT_INTERVAL_MS, 15_000, 5_000, 45_000, mode),
        network: NetworkSection {
            latency_ms_min: 1,
            latency_ms_max: 10,
        },
        services: vec![ServiceSection {
            name: "work".into(),
            dedup: Dedup::ByKey,
            fencing: true,
            work_ms_min: 20_000,
            work_ms_max: 40_000,
        }],
        tasks: TasksSection {
            count: workers * slots_per_worker,
            arrival_window_ms: 0,
            steps: vec!["work".into(); LONG_TASK_STEPS],
            repeat_steps: 1,
            only: None,
        },
        faults: no_faults(),
        limits: LimitsSection {
            max_sim_time_ms: end_ms,
            ..LimitsSection::default()
        },
        expected_violations: Vec::new(),
    }
}

/// A fleet serving a steady stream of short tasks (three 1-3 s steps, as in
/// friday-rush), one task per worker every `task_every_ms` on average.
pub fn steady_stream(workers: u32, task_every_ms: u64, end_ms: u64) -> ValidScenario {
    validated(steady_stream_scenario(workers, task_every_ms, end_ms))
}

/// [`steady_stream`] before validation, for scenarios built from it.
fn steady_stream_scenario(workers: u32, task_every_ms: u64, end_ms: u64) -> Scenario {
    assert!(workers > 0 && task_every_ms > 0);
    let count = (workers as u64 * end_ms).div_ceil(task_every_ms).max(1);
    Scenario {
        name: format!("stream-{workers}"),
        story: "A steady stream of short tasks: every kind of store operation.".into(),
        fleet: Fleet {
            workers,
            reclaimers: 2,
            slots_per_worker: 4,
            worker_ids: None,
            reclaimer_ids: None,
        },
        protocol: protocol(
            LOAD_HEARTBEAT_INTERVAL_MS,
            15_000,
            5_000,
            5_000,
            HeartbeatMode::Worker,
        ),
        network: NetworkSection {
            latency_ms_min: 1,
            latency_ms_max: 10,
        },
        services: ["payment", "kitchen", "dispatch"]
            .iter()
            .map(|name| ServiceSection {
                name: (*name).into(),
                dedup: Dedup::ByKey,
                fencing: true,
                work_ms_min: 1_000,
                work_ms_max: 3_000,
            })
            .collect(),
        tasks: TasksSection {
            count: u32::try_from(count).expect("bounded by the sweep"),
            arrival_window_ms: end_ms,
            steps: vec!["payment".into(), "kitchen".into(), "dispatch".into()],
            repeat_steps: 1,
            only: None,
        },
        faults: no_faults(),
        limits: LimitsSection {
            max_sim_time_ms: end_ms,
            ..LimitsSection::default()
        },
        expected_violations: Vec::new(),
    }
}

/// Workers of [`crashing_fleet`], 4 slots each.
pub const CRASHING_FLEET_WORKERS: u32 = 20;

/// Twenty workers half busy with long tasks, crashing now and then during a
/// fault phase: the detection sweep's scenario. The scan interval follows
/// the heartbeat interval; one reclaimer, which never crashes.
pub fn crashing_fleet(
    heartbeat_interval_ms: u64,
    lease_timeout_ms: u64,
    fault_phase_ms: u64,
    crash_probability_per_step: f64,
    end_ms: u64,
) -> ValidScenario {
    let mut scenario =
        steady_busy_scenario(CRASHING_FLEET_WORKERS, 4, HeartbeatMode::Worker, end_ms);
    scenario.name = format!("crashing-{heartbeat_interval_ms}-{lease_timeout_ms}");
    scenario.story = "Workers crash now and then: how long until their tasks run again.".into();
    scenario.fleet.reclaimers = 1;
    scenario.tasks.count = 40;
    scenario.protocol = protocol(
        heartbeat_interval_ms,
        lease_timeout_ms,
        heartbeat_interval_ms,
        45_000,
        HeartbeatMode::Worker,
    );
    scenario.faults = crash_faults(fault_phase_ms, crash_probability_per_step);
    validated(scenario)
}

/// Tasks per worker in [`fleet_rush`].
pub const RUSH_TASKS_PER_WORKER: u32 = 50;
/// Share of the fleet that dies at once in [`fleet_rush`].
pub const RUSH_CRASH_SHARE: f64 = 0.1;
/// Idle workers in [`fleet_rush`] wait up to this long between empty polls,
/// as the scaled one-hour scenarios do (`scaled_scenario::IDLE_POLL_MAX_MS`).
pub const RUSH_IDLE_POLL_MAX_MS: u64 = 8_000;

/// friday-rush's shape at any fleet size: 4 slots a worker, 50 three-step
/// tasks per worker (1-3 s a step) arriving over three minutes, idle
/// polling backing off to 8 s, and a tenth of the fleet dying at once
/// at a time drawn between 20 s and 200 s (restarting after 1-20 s), no
/// other faults: the claims chart's scenario, run to the end.
pub fn fleet_rush(workers: u32) -> ValidScenario {
    assert!(workers > 0);
    let end_ms = 100 * 60_000;
    let mut scenario = steady_stream_scenario(workers, end_ms, end_ms);
    scenario.name = format!("rush-{workers}");
    scenario.story = "friday-rush at any fleet size: how claims scale.".into();
    scenario.protocol.idle_poll_max_ms = Some(RUSH_IDLE_POLL_MAX_MS);
    scenario.tasks.count = workers
        .checked_mul(RUSH_TASKS_PER_WORKER)
        .expect("bounded by the sweep");
    scenario.tasks.arrival_window_ms = 180_000;
    scenario.faults = FaultsSection {
        restarts: Some(RestartFaults {
            rolling_deploy_at_ms: None,
            rolling_interval_ms: 5_000,
            mass_failure_at_ms: Some([20_000, 200_000]),
            mass_failure_share: RUSH_CRASH_SHARE,
        }),
        ..FaultsSection::none(240_000, [1_000, 20_000])
    };
    scenario.limits = LimitsSection {
        max_sim_time_ms: end_ms,
        max_events: 2_000_000_000,
        ..LimitsSection::default()
    };
    validated(scenario)
}

pub(super) fn validated(scenario: Scenario) -> ValidScenario {
    scenario
        .into_valid()
        .unwrap_or_else(|e| panic!("a chart scenario is invalid: {e}"))
}
