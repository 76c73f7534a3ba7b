//! The `SweepTest` builder as users' own `#[test]`s call it.

use leasehold::SweepTest;
use leasehold::seeds::SeedRange;

const SCENARIO: &str = "scenarios/ml-batch.json";

/// No LEASEHOLD_* variables: these tests must not follow the caller's.
fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn a_passing_sweep_reports_what_it_ran() {
    let report = SweepTest::new(SCENARIO)
        .seeds(1..=12)
        .variant("correct")
        .jobs(2)
        .env(no_env)
        .run();
    assert_eq!(report.summary.seeds, 12);
    assert!(report.summary.ok());
    assert_eq!(report.jobs, 2);
}

#[test]
#[should_panic(expected = "replay: leasehold run scenarios/ml-batch.json --seed ")]
fn a_failing_sweep_panics_with_seed_invariant_and_replay_command() {
    SweepTest::new(SCENARIO)
        .seeds(1..=12)
        .variant("no-idempotency-key")
        .jobs(2)
        .env(no_env)
        .run();
}

#[test]
fn the_failure_message_names_seed_invariant_and_how_to_rerun_it() {
    let message = SweepTest::new(SCENARIO)
        .seeds(1..=12)
        .variant("no-idempotency-key")
        .env(no_env)
        .try_run()
        .unwrap_err();
    assert!(message.contains("exactly-once-effects"), "{message}");
    assert!(
        message
            .contains("seeds (1..12) of scenario ml-batch failed under variant no-idempotency-key"),
        "{message}"
    );
    assert!(message.contains("LEASEHOLD_SEED="), "{message}");
}

#[test]
fn environment_variables_override_the_builder() {
    let env = |name: &str| match name {
        "LEASEHOLD_SEED" => Some("7".to_string()),
        "LEASEHOLD_JOBS" => Some("1".to_string()),
        "LEASEHOLD_CHECK_DETERMINISM" => Some("true".to_string()),
        _ => None,
    };
    let report = SweepTest::new(SCENARIO)
        .seeds(1..=500)
        .jobs(2)
        .env(env)
        .run();
    assert_eq!(report.seeds, SeedRange { first: 7, last: 7 });
    assert_eq!(report.summary.seeds, 1);
    assert_eq!(report.jobs, 1);
    assert!(report.check_determinism);

    let count = |name: &str| (name == "LEASEHOLD_SEEDS").then(|| "5".to_string());
    let report = SweepTest::new(SCENARIO).env(count).run();
    assert_eq!(report.seeds, SeedRange { first: 1, last: 5 });
}

#[test]
#[should_panic(expected = "LEASEHOLD_JOBS: \"lots\" is not a number of jobs")]
fn a_bad_environment_value_panics_naming_the_variable() {
    SweepTest::new(SCENARIO)
        .env(|name| (name == "LEASEHOLD_JOBS").then(|| "lots".to_string()))
        .run();
}

#[test]
#[should_panic(expected = "unknown variant \"corect\"; known: correct,")]
fn an_unknown_variant_panics_listing_the_known_ones() {
    SweepTest::new(SCENARIO).variant("corect").env(no_env).run();
}

#[test]
#[should_panic(expected = "scenario scenarios/nope.json")]
fn a_missing_scenario_panics_naming_the_file() {
    SweepTest::new("scenarios/nope.json").env(no_env).run();
}
