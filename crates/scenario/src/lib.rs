//! leasehold-scenario: the files a user hands leasehold, read strictly and
//! validated before anything runs. Scenario files and their fault model,
//! the strict-JSON rules and file-format names every leasehold file shares,
//! bounded reading of input files, and what a scenario's configuration
//! implies (its liveness bound).
//!
//! It knows nothing of runs: it must never depend on the run, explore,
//! report or live crates, nor on the CLI.

pub mod catalogue;
pub mod fault_model;
pub mod file_format;
pub mod input_file;
pub mod scaled_scenario;
pub mod scenario;
pub mod scenario_error;
pub mod strict_json;
