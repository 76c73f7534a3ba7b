//! Every fault kind is real and reaches the protocol: for each, a weakened
//! protocol fails on some seed *because of* that fault. Causality is checked
//! by re-running the failing seed from its recorded fault plan with that
//! fault kind removed (or, for clock skew, which is a setting rather than an
//! event, with the clock faults switched off): the failure must go away.
//! The full plan, replayed, must reproduce the run exactly.

mod common;
use common::*;
use leasehold::{simulate, simulate_with_plan};
use leasehold_protocol::Variant;
use leasehold_sim::{Fault, FaultPlan};

fn plan_without(plan: &FaultPlan, kinds: &[&str]) -> FaultPlan {
    FaultPlan {
        faults: plan
            .faults
            .iter()
            .copied()
            .filter(|f: &Fault| !kinds.contains(&f.kind()))
            .collect(),
    }
}

/// Find a failing seed of `variant` on `scenario` whose violation disappears
/// when the faults of `kinds` are taken out of its plan.
fn reaches(scenario_name: &str, variant: &str, kinds: &[&str]) {
    let scn = scenario(scenario_name);
    let variant = Variant::from_name(variant).unwrap();
    let mut failing = 0;
    for seed in 1..=60 {
        let outcome = simulate(&scn, seed, variant, None);
        if outcome.ok() {
            continue;
        }
        failing += 1;
        // The recorded plan reproduces the run bit for bit.
        let replayed = simulate_with_plan(&scn, seed, variant, Some(outcome.plan.clone()), None);
        assert_eq!(
            replayed.trace_hash_hex(),
            outcome.trace_hash_hex(),
            "plan replay of seed {seed} diverged"
        );
        let without = simulate_with_plan(
            &scn,
            seed,
            variant,
            Some(plan_without(&outcome.plan, kinds)),
            None,
        );
        if without.ok() {
            return; // this seed fails because of `kinds`
        }
    }
    panic!("{variant} on {scenario_name}: {failing} failing seeds in 60, none caused by {kinds:?}");
}

#[test]
fn crashes_reach_the_protocol() {
    reaches(
        "reclaimer-crash",
        "no-idempotency-key",
        &["crash", "crash_at"],
    );
}

#[test]
fn pauses_reach_the_protocol() {
    reaches("gc-pause-zombie", "no-self-fencing", &["pause"]);
}

#[test]
fn partitions_reach_the_protocol() {
    reaches(
        "partitioned-worker",
        "claim-ack-lost",
        &["partition", "partition_one_way", "store_request_lost"],
    );
}

#[test]
fn ambiguous_store_writes_reach_the_protocol() {
    reaches(
        "ambiguous-claim",
        "claim-ack-lost",
        &[
            "store_reply_lost",
            "store_request_lost",
            "store_request_delayed",
            "store_reply_delayed",
            "store_request_duplicated",
            "store_outage",
            "store_request_refused",
        ],
    );
}

#[test]
fn service_failures_reach_the_protocol() {
    reaches(
        "hung-step",
        "failed-effect-counted-done",
        &["service_call_refused"],
    );
}

#[test]
fn hung_steps_reach_the_protocol() {
    reaches("hung-step", "no-step-deadline", &["service_call_hung"]);
}

#[test]
fn reclaimer_crashes_reach_the_protocol() {
    reaches(
        "reclaimer-crash",
        "skip-dead-on-restart",
        &["crash", "crash_at"],
    );
}

#[test]
fn rolling_restarts_reach_the_protocol() {
    reaches("rolling-deploy", "reused-identity", &["crash_at", "crash"]);
}

#[test]
fn mass_failure_reaches_the_protocol() {
    reaches(
        "mass-failure",
        "scan-first-page-only",
        &["crash_at", "crash"],
    );
}

#[test]
fn clock_skew_reaches_the_protocol() {
    let mut scn = scenario("clock-skew");
    let variant = Variant::WallClockStaleness;
    let hit = (1..=30)
        .map(|seed| simulate(&scn, seed, variant, None))
        .find(|o| !o.ok())
        .expect("wall-clock staleness fails under skew");
    // The same seed with honest clocks: the planted bug does no harm.
    scn.scenario.faults.clock = None;
    let scn = scn.scenario.clone().validate(scn.source.clone()).unwrap();
    let calm = simulate(&scn, hit.seed, variant, None);
    assert!(
        calm.ok(),
        "without clock faults seed {} still fails: {:?}",
        hit.seed,
        calm.violations.first()
    );
}
