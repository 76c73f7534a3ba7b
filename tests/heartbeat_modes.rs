//! Task heartbeat mode (one lease document per running task) keeps every
//! invariant the worker mode keeps, and the checkers still catch planted bugs
//! in it.

mod common;
use common::*;
use leasehold::{Scenario, ValidScenario};
use leasehold_check::Invariant;
use leasehold_protocol::{HeartbeatMode, Variant};

/// friday-rush with worker crashes only: task heartbeat mode is verified
/// under crashes and restarts; the full swarm fault model (message loss,
/// partitions, pauses) is exercised on worker mode.
fn friday_rush_in(mode: HeartbeatMode) -> ValidScenario {
    let mut scenario = scenario("friday-rush").scenario;
    scenario.protocol.heartbeat_mode = mode;
    scenario.faults = leasehold::fault_model::FaultsSection {
        swarm: false,
        crash: Some(leasehold::fault_model::CrashFaults {
            per_step: [0.002, 0.002],
            reclaimers: true,
        }),
        pause: None,
        clock: None,
        network: None,
        store: None,
        services: None,
        restarts: None,
        scheduled: Vec::new(),
        ..scenario.faults
    };
    let source = serde_json::to_string_pretty(&scenario).unwrap();
    scenario.validate(source).expect("still valid")
}

#[test]
fn heartbeat_mode_defaults_to_worker_and_rejects_unknown_modes() {
    assert_eq!(
        scenario("friday-rush").scenario.protocol.heartbeat_mode,
        HeartbeatMode::Worker
    );
    let text = std::fs::read_to_string(root().join("scenarios/friday-rush.json")).unwrap();
    let task = text.replace(
        "\"scan_page_size\": 100",
        "\"scan_page_size\": 100, \"heartbeat_mode\": \"task\"",
    );
    assert_eq!(
        Scenario::parse(&task)
            .unwrap()
            .scenario
            .protocol
            .heartbeat_mode,
        HeartbeatMode::Task
    );
    let bad = text.replace(
        "\"scan_page_size\": 100",
        "\"scan_page_size\": 100, \"heartbeat_mode\": \"pod\"",
    );
    let err = Scenario::parse(&bad).unwrap_err();
    assert!(err.message.contains("unknown variant `pod`"), "{err}");
    assert!(err.message.contains("`worker`"), "{err}");
}

#[test]
fn task_mode_passes_300_friday_rush_seeds() {
    let scn = friday_rush_in(HeartbeatMode::Task);
    let outcomes = run_seeds(&scn, 1..=300, Variant::Correct);
    let failed: Vec<_> = outcomes
        .iter()
        .filter(|o| !o.ok())
        .map(|o| (o.seed, o.violations.first().cloned()))
        .collect();
    assert!(failed.is_empty(), "task mode failed: {failed:?}");
    assert!(outcomes.iter().all(|o| o.tasks_done == o.tasks_total));
    let faults: u64 = outcomes
        .iter()
        .map(|o| o.stats.as_ref().unwrap().faults)
        .sum();
    assert!(faults > 3_000, "only {faults} faults over 300 seeds");
    // Leases were really reclaimed, and no member documents were written.
    let expired: u64 = outcomes.iter().map(|o| o.load.mark_dead_writes).sum();
    let requeued: u64 = outcomes.iter().map(|o| o.load.requeues).sum();
    assert!(expired > 500 && requeued > 500, "{expired} {requeued}");
}

#[test]
fn task_mode_writes_far_more_heartbeats_than_worker_mode() {
    let worker = leasehold::simulate(
        &friday_rush_in(HeartbeatMode::Worker),
        7,
        Variant::Correct,
        None,
    );
    let task = leasehold::simulate(
        &friday_rush_in(HeartbeatMode::Task),
        7,
        Variant::Correct,
        None,
    );
    assert!(worker.ok() && task.ok());
    // 80 busy slots against 20 workers during the rush.
    assert!(
        task.load.heartbeat_writes > 2 * worker.load.heartbeat_writes,
        "task {} worker {}",
        task.load.heartbeat_writes,
        worker.load.heartbeat_writes
    );
}

#[test]
fn checkers_still_fire_in_task_mode() {
    let scn = friday_rush_in(HeartbeatMode::Task);
    for (variant, invariant) in [
        ("reclaim-without-epoch-bump", Invariant::EpochsMonotonic),
        ("no-idempotency-key", Invariant::ExactlyOnceEffects),
        ("progress-before-effect", Invariant::ExactlyOnceEffects),
        ("reclaim-only-at-startup", Invariant::NoLostTask),
    ] {
        let v = Variant::from_name(variant).unwrap();
        assert!(
            first_firing(&scn, 1..=20, v, invariant).is_some(),
            "{invariant} never fired on {variant} in task mode"
        );
    }
}
