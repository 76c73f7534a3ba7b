//! leasehold: deterministic simulation testing for the lease-with-heartbeat
//! pattern. This crate wires the protocol (`leasehold-protocol`) into the
//! simulator (`leasehold-sim`), attaches the checkers (`leasehold-check`), and
//! provides the CLI's commands.

pub mod catalogue;
pub mod charts;
pub mod explain;
pub mod export;
pub mod fault_model;
pub mod hunt;
pub mod lease_node;
pub mod measure;
pub mod panic_capture;
pub mod run;
pub mod scaled_scenario;
pub mod scenario;
pub mod seeds;
pub mod shrink;
pub mod store_load;
pub mod swimlane;
pub mod trace;

pub use run::{LEASEHOLD_VERSION, RunOutcome, simulate, simulate_with_plan};
pub use scenario::{Scenario, ScenarioError, ValidScenario};
