//! Claims spread at fleet scale (docs/protocol.md, "Spreading claims"): on
//! friday-rush's shape resized (the claims chart's scenario, run to the
//! end), the correct protocol's lost claim races and store operations per
//! task stay flat from 20 to 1,000 workers, and the planted `herd-claims`
//! (every idle worker reading the same head of the pending index, the
//! claiming before the spread) fails both bounds. Counts from the records,
//! never timed.

use leasehold::charts::chart_claims::{ClaimsPoint, measure};
use leasehold_protocol::Variant;

const SMALL: u32 = 20;
const LARGE: u32 = 1_000;
const SEED: u64 = 1;
/// The targets (stated there at 2,000 workers).
const MAX_CONFLICTS_PER_TASK: f64 = 0.2;
const MAX_OPS_RATIO: f64 = 1.3;

/// The bounds `variant` breaks from `SMALL` to `LARGE` workers.
fn broken_bounds(variant: Variant) -> Vec<String> {
    let [small, large]: [ClaimsPoint; 2] = [SMALL, LARGE].map(|w| measure(w, variant, SEED));
    for p in [&small, &large] {
        assert!(p.violations.is_empty(), "{:?}", p.violations);
    }
    let mut broken = Vec::new();
    for p in [&small, &large] {
        if p.conflicts_per_task > MAX_CONFLICTS_PER_TASK {
            broken.push(format!(
                "{} workers: {:.3} conflicts per task",
                p.workers, p.conflicts_per_task
            ));
        }
    }
    let ratio = large.store_ops_per_task / small.store_ops_per_task;
    if ratio > MAX_OPS_RATIO {
        broken.push(format!(
            "store operations per task {:.2} at {LARGE} workers, {ratio:.2} x {:.2} at {SMALL}",
            large.store_ops_per_task, small.store_ops_per_task
        ));
    }
    broken
}

#[test]
fn spread_claims_stay_flat_as_the_fleet_grows() {
    let broken = broken_bounds(Variant::Correct);
    assert!(broken.is_empty(), "{broken:#?}");
}

#[test]
fn herd_claims_break_both_bounds() {
    let broken = broken_bounds(Variant::HerdClaims);
    assert!(
        broken.iter().any(|b| b.contains("conflicts per task")),
        "{broken:#?}"
    );
    assert!(
        broken.iter().any(|b| b.contains("store operations")),
        "{broken:#?}"
    );
}
