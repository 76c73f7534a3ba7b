//! Every checker fires on a deliberately broken protocol and stays silent on
//! the correct one.

mod common;
use common::*;
use leasehold_check::Invariant;
use leasehold_protocol::Variant;

fn fires(variant: &str, invariant: Invariant) {
    fires_on("friday-rush", variant, invariant)
}

fn fires_on(scenario_name: &str, variant: &str, invariant: Invariant) {
    let scn = scenario(scenario_name);
    let variant = Variant::from_name(variant).unwrap();
    let hit = first_firing(&scn, 1..=60, variant, invariant)
        .unwrap_or_else(|| panic!("{invariant} never fired on {variant} in 60 seeds"));
    let v = hit
        .violations
        .iter()
        .find(|v| v.invariant == invariant)
        .unwrap();
    assert!(!v.message.is_empty());
    // The same seed on the correct protocol is clean.
    let correct = leasehold::simulate(&scn, hit.seed, Variant::Correct, None);
    assert!(
        correct.ok(),
        "correct failed seed {}: {:?}",
        hit.seed,
        correct.violations
    );
}

#[test]
fn no_double_ownership_fires_on_unconditional_claim() {
    fires("unconditional-claim", Invariant::NoDoubleOwnership);
}

#[test]
fn epochs_monotonic_fires_on_reclaim_without_epoch_bump() {
    fires("reclaim-without-epoch-bump", Invariant::EpochsMonotonic);
}

#[test]
fn exactly_once_fires_on_missing_idempotency_key() {
    fires("no-idempotency-key", Invariant::ExactlyOnceEffects);
}

#[test]
fn exactly_once_fires_when_progress_is_recorded_before_the_effect() {
    fires("progress-before-effect", Invariant::ExactlyOnceEffects);
}

#[test]
fn no_lost_task_fires_when_reclaim_runs_only_at_startup() {
    fires("reclaim-only-at-startup", Invariant::NoLostTask);
}

#[test]
fn lost_task_report_names_state_owner_and_epoch() {
    let scn = scenario("friday-rush");
    let hit = first_firing(
        &scn,
        1..=20,
        Variant::ReclaimOnlyAtStartup,
        Invariant::NoLostTask,
    )
    .unwrap();
    let v = hit
        .violations
        .iter()
        .find(|v| v.invariant == Invariant::NoLostTask && v.task.is_some())
        .unwrap();
    assert!(v.message.contains("owner"), "{}", v.message);
    assert!(v.message.contains("epoch"), "{}", v.message);
    assert!(v.message.contains("bound"), "{}", v.message);
}

#[test]
fn done_is_final_fires_when_completion_checks_state_but_not_epoch() {
    fires_on(
        "ambiguous-claim",
        "completion-without-epoch-check",
        Invariant::DoneIsFinal,
    );
}

#[test]
fn no_double_ownership_fires_when_a_zombie_keeps_working() {
    fires_on(
        "gc-pause-zombie",
        "no-self-fencing",
        Invariant::NoDoubleOwnership,
    );
}

#[test]
fn no_double_ownership_fires_when_live_workers_are_reclaimed_by_wall_clock() {
    fires_on(
        "ml-batch",
        "reclaimer-own-ttl",
        Invariant::NoDoubleOwnership,
    );
}

// The lease oracles: each judged when the action is taken, so each fires on
// a planted bug whether or not its damage showed, and the same seed on the
// correct protocol is clean (in `fires_on`).

#[test]
fn acts_within_lease_fires_when_a_worker_acts_past_its_lease() {
    fires_on(
        "gc-pause-zombie",
        "no-self-fencing",
        Invariant::ActsWithinLease,
    );
}

#[test]
fn no_needless_suspicion_fires_when_a_reclaimer_uses_its_own_lease_timeout() {
    fires_on(
        "ml-batch",
        "reclaimer-own-ttl",
        Invariant::NoNeedlessSuspicion,
    );
}

#[test]
fn no_needless_suspicion_fires_when_staleness_is_judged_by_wall_clocks() {
    fires_on(
        "clock-skew",
        "wall-clock-staleness",
        Invariant::NoNeedlessSuspicion,
    );
}

#[test]
fn no_resurrection_fires_when_a_declared_death_is_written_over() {
    fires_on(
        "lease-edge",
        "wall-clock-staleness",
        Invariant::NoResurrection,
    );
}

#[test]
fn detection_bounded_fires_when_a_scan_stops_after_its_first_page() {
    fires_on(
        "mass-failure",
        "scan-first-page-only",
        Invariant::DetectionBounded,
    );
}

#[test]
fn detection_bounded_fires_when_reclaim_runs_only_at_startup() {
    fires("reclaim-only-at-startup", Invariant::DetectionBounded);
}
