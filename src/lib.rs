//! leasehold: deterministic simulation testing for the lease-with-heartbeat
//! pattern. This package is the CLI (`src/main.rs`, `src/commands/`) and this
//! thin library, which re-exports the layered crates under the paths users
//! know (`leasehold::SweepTest`, `leasehold::strategies`,
//! `leasehold::simulate`, `leasehold::scenario::Scenario`, ...):
//!
//! - `leasehold-scenario`: scenario and fault-model files, read strictly;
//! - `leasehold-run`: one run wired together, traces;
//! - `leasehold-explore`: sweeps, results files, hunt, shrink, `SweepTest`;
//! - `leasehold-report`: explain, export, swimlanes, charts;
//! - `leasehold-live`: the protocol against a real SQL store.
//!
//! Nothing here holds logic of its own.

#[cfg(feature = "proptest")]
pub use leasehold_explore::strategies;
pub use leasehold_explore::{
    cost_budget, guided, hunt, lease_job, parallel, results_file, run_file, seeds, shard, shrink,
    sweep_args, sweep_engine, sweep_summary, sweep_test, watchdog,
};
pub use leasehold_live as live;
pub use leasehold_report::{charts, explain, export, output_file, swimlane};
pub use leasehold_run::{
    lease_node, measure, memory_estimate, panic_capture, run, store_load, trace,
};
pub use leasehold_scenario::{
    catalogue, fault_model, file_format, input_file, scaled_scenario, scenario, scenario_error,
    strict_json,
};

/// Coverage under the one path users know: what one run reached
/// (`leasehold-run`) and the tally over many runs (`leasehold-explore`).
pub mod coverage {
    pub use leasehold_explore::coverage_tally::*;
    pub use leasehold_run::coverage::*;
}

pub use lease_job::{LeaseJob, SeedResult, replay_command, shell_word};
pub use run::{
    CUT_SHORT, CutShort, LEASEHOLD_VERSION, RunOutcome, simulate, simulate_timed,
    simulate_with_plan,
};
pub use scenario::{Scenario, ScenarioError, ValidScenario};
pub use sweep_test::SweepTest;
