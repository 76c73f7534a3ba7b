//! leasehold-report: runs turned into words and pictures. `explain` tells a
//! failing run as a story, `export` writes Chrome trace JSON and the swimlane
//! picture, `charts` sweeps simulations and draws them (plotters and the PNG
//! backend live here, and nowhere below).
//!
//! It reads runs through leasehold-run and sweeps through leasehold-explore;
//! it must never depend on the live crate nor on the CLI, and nothing below
//! it may depend on it.

pub mod charts;
pub mod explain;
pub mod export;
pub mod output_file;
pub mod swimlane;
