//! leasehold-explore: many runs. The sweep engine runs seeds on many threads
//! with results in seed order ([`sweep_engine`]); around it sit results
//! files and shards, the watchdog and cost budget, coverage-guided search
//! and the hunt, shrinking a failure to a failure file, [`sweep_test::SweepTest`]
//! for `#[test]`s and, with the `proptest` feature, proptest strategies.
//!
//! It builds on leasehold-run and leasehold-scenario; it must never depend
//! on the report or live crates, nor on the CLI (no argument parsing beyond
//! the values a `SweepTest` shares with it, no progress bars).

pub mod cost_budget;
pub mod coverage_tally;
pub mod guided;
pub mod hunt;
pub mod lease_job;
pub mod parallel;
pub mod results_file;
pub mod run_file;
pub mod seeds;
pub mod shard;
pub mod shrink;
#[cfg(feature = "proptest")]
pub mod strategies;
pub mod sweep_args;
pub mod sweep_engine;
pub mod sweep_summary;
pub mod sweep_test;
pub mod watchdog;
