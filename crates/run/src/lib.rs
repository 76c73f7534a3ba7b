//! leasehold-run: one run wired together. [`run::simulate`] hosts the sans-IO
//! protocol's nodes ([`lease_node`]) in the simulator, attaches the checkers
//! and the per-run coverage and store-load counters, and returns the run's
//! outcome; [`trace`] writes a run as a trace file and replays one.
//!
//! A run is a pure function of (scenario, seed, variant, leasehold version).
//! This crate sits on leasehold-scenario and the protocol, simulator and
//! checker crates; it must never depend on the explore, report or live
//! crates, nor on the CLI.

pub mod coverage;
pub mod lease_node;
pub mod measure;
pub mod memory_estimate;
pub mod panic_capture;
pub mod run;
pub mod store_load;
pub mod trace;
