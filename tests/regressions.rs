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
        assert!(
            failure.reproduced_by(&outcome),
            "{}: expected {}, got {:?}",
            path.display(),
            failure.invariant,
            outcome
                .invariants
                .iter()
                .map(|i| i.name())
                .collect::<Vec<_>>()
        );
        assert!(failure.shrunk.faults <= failure.original.faults);
        variants.insert(failure.variant.clone());
    }
    // One per planted bug that breaks an invariant. A cost bug
    // (`herd-claims`) is caught by the cost budget of a scenario's exact
    // text, which a shrunk copy has none of: tests/cost_budget.rs holds it.
    let planted: std::collections::BTreeSet<String> = Variant::all()
        .filter(|v| *v != Variant::Correct && !v.is_cost())
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
    let f = leasehold::shrink::shrink(&scn, 1, Variant::NoSelfFencing, Default::default()).unwrap();
    assert_eq!(f.invariant, "acts-within-lease");
    assert!(f.shrunk.faults < f.original.faults);
    assert!(f.shrunk.tasks < f.original.tasks);
    assert!(f.shrunk.events < f.original.events);
    // The file round-trips and replays.
    let text = serde_json::to_string(&f).unwrap();
    let back = FailureFile::parse(&text).unwrap();
    assert!(back.reproduced_by(&back.rerun().unwrap()));
    // A passing seed has nothing to shrink.
    assert!(leasehold::shrink::shrink(&scn, 1, Variant::Correct, Default::default()).is_err());
}

/// A fault that needs a kind of message (here, a worker's blind completion
/// write duplicated, so that its copy lands on the done task) can find it
/// at another time once the faults around it are gone: the shrinker also
/// places each small subset's faults on the first step or message of their
/// node and kind, whenever it comes. Before, this shrink stopped at 7
/// faults.
#[test]
fn a_fault_that_needs_a_kind_of_message_finds_it_at_any_time() {
    shrinks_to_one_fault_and_one_worker("completion-without-epoch-check", 1, "done-is-final", 2);
}

/// A lone fault that needs one particular moment (here, a worker between
/// recording a step's progress and calling its effect) may find it far from
/// where it struck once the faults that led there are gone, and not on the
/// first step of its kind either: the shrinker also tries it on each step of
/// its node and kind, nearest first. Without that, this shrink stops at 2
/// faults.
#[test]
fn a_lone_fault_is_tried_step_by_step() {
    shrinks_to_one_fault_and_one_worker("progress-before-effect", 13, "exactly-once-effects", 1);
}

/// Shrink `variant`'s failure on ambiguous-claim `seed`: it must keep
/// `invariant` and end at one fault, one worker and at most `max_tasks`
/// tasks.
fn shrinks_to_one_fault_and_one_worker(variant: &str, seed: u64, invariant: &str, max_tasks: u32) {
    let scn = common::scenario("ambiguous-claim");
    let variant = Variant::from_name(variant).unwrap();
    let f = leasehold::shrink::shrink(&scn, seed, variant, Default::default()).unwrap();
    assert_eq!(f.invariant, invariant);
    assert_eq!(
        (f.shrunk.faults, f.shrunk.workers),
        (1, 1),
        "{:?}",
        f.shrunk
    );
    assert!(f.shrunk.tasks <= max_tasks, "{:?}", f.shrunk);
}

/// What shrinking relies on when it places faults by time: a plan-driven run
/// reports when each fault struck (and what it struck), and whatever a timed
/// run injects, recorded as an ordinary plan, replays to the same run bit for
/// bit, so a failure file never holds a timed plan.
#[test]
fn faults_placed_by_time_replay_as_ordinary_plans() {
    use leasehold::{simulate, simulate_timed, simulate_with_plan};
    use leasehold_sim::TimedFault;
    let scn = common::scenario("ambiguous-claim");
    for seed in 1..=3 {
        let drawn = simulate(&scn, seed, Variant::Correct, None);
        let exact =
            simulate_with_plan(&scn, seed, Variant::Correct, Some(drawn.plan.clone()), None);
        assert_eq!(exact.trace_hash_hex(), drawn.trace_hash_hex());
        assert_eq!(exact.plan_decided.len(), exact.plan.len());
        // Every other fault, placed by time: a different run, which its own
        // recorded plan reproduces exactly.
        let timed: Vec<TimedFault> = exact
            .plan
            .faults
            .iter()
            .zip(&exact.plan_decided)
            .step_by(2)
            .map(|(fault, (t, tag))| TimedFault {
                fault: *fault,
                from_us: t.saturating_sub(20_000),
                to_us: t + 2_000_000,
                tag: Some(*tag),
            })
            .collect();
        let n = timed.len();
        let moved = simulate_timed(&scn, seed, Variant::Correct, timed, None);
        assert!(moved.plan.len() <= n);
        assert!(!moved.plan.is_empty());
        let again =
            simulate_with_plan(&scn, seed, Variant::Correct, Some(moved.plan.clone()), None);
        assert_eq!(
            again.trace_hash_hex(),
            moved.trace_hash_hex(),
            "seed {seed}"
        );
        assert_eq!(again.plan, moved.plan);
    }
}
