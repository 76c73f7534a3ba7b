//! leasehold: deterministic simulation testing for the lease-with-heartbeat
//! pattern. This crate wires the protocol (`leasehold-protocol`) into the
//! simulator (`leasehold-sim`), attaches the checkers (`leasehold-check`), and
//! provides the CLI's commands.
//!
//! Sweeps of many seeds: [`sweep_engine`] runs seeds on many threads with
//! results in seed order; [`SweepTest`] does it from a `#[test]`;
//! [`strategies`] gives proptest strategies for scenarios and seeds.

pub mod catalogue;
pub mod charts;
pub mod cost_budget;
pub mod coverage;
pub mod explain;
pub mod export;
pub mod fault_model;
pub mod file_format;
pub mod guided;
pub mod hunt;
pub mod input_file;
pub mod lease_job;
pub mod lease_node;
pub mod live;
pub mod measure;
pub mod memory_estimate;
pub mod output_file;
pub mod panic_capture;
pub mod parallel;
pub mod results_file;
pub mod run;
pub mod run_file;
pub mod scaled_scenario;
pub mod scenario;
pub mod scenario_error;
pub mod seeds;
pub mod shard;
pub mod shrink;
pub mod store_load;
#[cfg(feature = "proptest")]
pub mod strategies;
pub mod strict_json;
pub mod sweep_args;
pub mod sweep_engine;
pub mod sweep_summary;
pub mod sweep_test;
pub mod swimlane;
pub mod trace;
pub mod watchdog;

pub use lease_job::{LeaseJob, SeedResult, replay_command, shell_word};
pub use run::{
    CUT_SHORT, CutShort, LEASEHOLD_VERSION, RunOutcome, simulate, simulate_timed,
    simulate_with_plan,
};
pub use scenario::{Scenario, ScenarioError, ValidScenario};
pub use sweep_test::SweepTest;
