//! Every shipped scenario: the correct protocol passes it (except the one
//! that demonstrates an impossibility), and every fault kind is drawn.

mod common;
use common::*;
use leasehold_check::Invariant;
use leasehold_protocol::Variant;
use std::collections::BTreeMap;

/// Seeds per scenario: 1,000 by default (the bar); override with
/// LEASEHOLD_TEST_SEEDS for a quicker local loop.
fn seeds() -> u64 {
    std::env::var("LEASEHOLD_TEST_SEEDS").map_or(1000, |s| {
        s.parse().expect("LEASEHOLD_TEST_SEEDS is a number")
    })
}

#[test]
fn correct_protocol_passes_every_scenario_and_every_fault_kind_is_drawn() {
    let n = seeds();
    let mut coverage: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut points = leasehold::coverage::CoverageTally::new();
    let mut checked = 0;
    for (name, scn) in all_scenarios() {
        if !scn.scenario.expected_violations.is_empty() {
            continue;
        }
        let outcomes = run_seeds(&scn, 1..=n, Variant::Correct);
        for o in &outcomes {
            assert!(
                o.ok(),
                "correct failed {name} seed {}: {:?}",
                o.seed,
                o.violations.first()
            );
            assert_eq!(o.tasks_done, o.tasks_total, "{name} seed {}", o.seed);
            for (kind, count) in &o.fault_kinds {
                *coverage.entry(kind).or_insert(0) += count;
            }
            points.add(&o.coverage, scn.scenario.protocol.heartbeat_mode);
        }
        checked += 1;
    }
    assert!(checked >= 13, "only {checked} scenarios checked");
    println!("fault coverage over {n} seeds x {checked} scenarios:");
    for (kind, count) in &coverage {
        println!("  {kind:<24} {count}");
    }
    for kind in [
        "crash",
        "crash_at",
        "restart",
        "pause",
        "resume",
        "clock_jump",
        "store_request_lost",
        "store_request_duplicated",
        "store_request_delayed",
        "partition",
        "partition_one_way",
        "partition_healed",
        "store_outage",
        "store_recovered",
        "store_request_refused",
        "store_reply_delayed",
        "store_reply_lost",
        "service_call_refused",
        "service_reply_delayed",
        "service_reply_lost",
        "service_call_hung",
    ] {
        assert!(
            coverage.get(kind).copied().unwrap_or(0) > 0,
            "fault kind {kind} was never drawn"
        );
    }
    // The shipped scenarios together reach every named coverage point, in
    // both heartbeat modes; issue 42's rare recovery paths with counts.
    for line in points.report_lines(false) {
        println!("{line}");
    }
    assert_eq!(
        points.modes.len(),
        2,
        "both heartbeat modes: {:?}",
        points.modes
    );
    if n >= 1000 {
        let unreached = points.unreached();
        assert!(
            unreached.is_empty(),
            "coverage points no shipped scenario reached in {n} seeds each: {:?}",
            unreached.iter().map(|p| p.name()).collect::<Vec<_>>()
        );
    } else {
        println!("(LEASEHOLD_TEST_SEEDS={n}: every point is required at 1,000 seeds)");
    }
}

#[test]
fn unfenced_service_shows_what_no_lease_protocol_can_prevent() {
    let scn = scenario("unfenced-service");
    assert!(
        scn.scenario
            .expected_violations
            .contains(&"exactly-once-effects".to_string())
    );
    let hit = first_firing(
        &scn,
        1..=20,
        Variant::Correct,
        Invariant::ExactlyOnceEffects,
    )
    .expect("a service that neither deduplicates nor fences must show double effects");
    assert!(
        hit.violations
            .iter()
            .any(|v| v.message.contains("legacy-printer"))
    );
}

#[test]
fn swarm_seeds_draw_different_fault_mixes() {
    let scn = scenario("friday-rush");
    let outcomes = run_seeds(&scn, 1..=40, Variant::Correct);
    let mixes: std::collections::BTreeSet<String> = outcomes
        .iter()
        .map(|o| serde_json::to_string(&o.fault_mix).unwrap())
        .collect();
    assert!(
        mixes.len() >= 39,
        "swarm testing should vary the mix per seed"
    );
    // Some seeds run with crashes off, some with them on.
    let with_crash = outcomes
        .iter()
        .filter(|o| o.fault_mix.as_ref().unwrap().crash_per_step > 0.0)
        .count();
    assert!(
        with_crash > 5 && with_crash < 35,
        "{with_crash}/40 seeds had crashes on"
    );
}
