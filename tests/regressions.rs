//! The shrunk failures of every planted variant, committed under
//! `scenarios/regressions/`, must keep reproducing their invariant: each one
//! is a minimal, readable test of one bug. (If the simulation changes on
//! purpose, regenerate them with `leasehold shrink`: see docs/shrinking.md.)

mod common;
use common::root;
use leasehold::shrink::FailureFile;
use leasehold_protocol::Variant;

#[test]
fn every_committed_shrunk_failure_replays_to_its_invariant() {
    let dir = root().join("scenarios/regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut variants = std::collections::BTreeSet::new();
    for path in &files {
        let failure = FailureFile::parse(&std::fs::read_to_string(path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let outcome = failure.rerun().unwrap();
        let names: Vec<&str> = outcome.invariants.iter().map(|i| i.name()).collect();
        assert!(
            names.contains(&failure.invariant.as_str()),
            "{}: expected {}, got {names:?}",
            path.display(),
            failure.invariant
        );
        assert!(failure.shrunk.faults <= failure.original.faults);
        variants.insert(failure.variant.clone());
    }
    // One per planted bug.
    let planted: std::collections::BTreeSet<String> = Variant::all()
        .filter(|v| *v != Variant::Correct)
        .map(|v| v.name().to_string())
        .collect();
    assert_eq!(
        variants, planted,
        "every planted variant has a committed shrunk failure"
    );
}

#[test]
fn shrinking_keeps_the_invariant_and_makes_the_run_smaller() {
    let scn = common::scenario("gc-pause-zombie");
    let report =
        leasehold::shrink::shrink(&scn, 1, Variant::NoSelfFencing, Default::default()).unwrap();
    let f = &report.failure;
    assert_eq!(f.invariant, "no-double-ownership");
    assert!(f.shrunk.faults < f.original.faults);
    assert!(f.shrunk.tasks < f.original.tasks);
    assert!(f.shrunk.events < f.original.events);
    // The file round-trips and replays.
    let text = serde_json::to_string(f).unwrap();
    let back = FailureFile::parse(&text).unwrap();
    assert!(
        back.rerun()
            .unwrap()
            .invariants
            .iter()
            .any(|i| i.name() == f.invariant)
    );
    // A passing seed has nothing to shrink.
    assert!(leasehold::shrink::shrink(&scn, 1, Variant::Correct, Default::default()).is_err());
}
