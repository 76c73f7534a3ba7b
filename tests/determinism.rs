//! Same scenario + seed + variant: the same trace hash, every time, in debug
//! and in release (the golden file pins the hashes across build profiles).

mod common;
use common::*;
use leasehold_protocol::Variant;

/// Every fault kind switched on at once (no swarm): 500 seeds, run twice.
#[test]
fn five_hundred_seeds_with_every_fault_on_twice_give_identical_hashes() {
    let mut scn = scenario("friday-rush");
    scn.scenario.faults.swarm = false;
    let scn = scn.scenario.clone().validate(scn.source.clone()).unwrap();
    let first = run_seeds(&scn, 1..=500, Variant::Correct);
    let second = run_seeds(&scn, 1..=500, Variant::Correct);
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a.seed, b.seed);
        assert_eq!(
            a.trace_hash_hex(),
            b.trace_hash_hex(),
            "seed {} differs",
            a.seed
        );
        assert_eq!(a.events(), b.events());
    }
    let distinct: std::collections::BTreeSet<_> =
        first.iter().map(|o| o.trace_hash_hex()).collect();
    assert_eq!(
        distinct.len(),
        500,
        "different seeds must give different runs"
    );
    let failed = first
        .iter()
        .find(|o| !o.ok())
        .map(|o| (o.seed, o.violations.first().cloned()));
    assert!(
        failed.is_none(),
        "every fault on, correct protocol failed: {failed:?}"
    );
}

/// `cargo test` builds with debug assertions, `cargo test --release` without;
/// both must reproduce these hashes. Regenerate (only on purpose, when the
/// simulation changes) with LEASEHOLD_BLESS=1.
#[test]
fn hashes_match_the_golden_file() {
    let scn = scenario("friday-rush");
    let path = root().join("tests/golden/friday-rush-correct.txt");
    let outcomes = run_seeds(&scn, 1..=20, Variant::Correct);
    let actual: String = outcomes
        .iter()
        .map(|o| format!("{} {} {}\n", o.seed, o.trace_hash_hex(), o.events()))
        .collect();
    if std::env::var_os("LEASEHOLD_BLESS").is_some() {
        std::fs::write(&path, &actual).unwrap();
    }
    let expected =
        std::fs::read_to_string(&path).expect("golden file (LEASEHOLD_BLESS=1 to create)");
    assert_eq!(
        actual, expected,
        "trace hashes changed: if the simulation changed on purpose, bless with LEASEHOLD_BLESS=1"
    );
}
