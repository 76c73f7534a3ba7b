//! Invariant checkers.
//!
//! They judge what the run recorded (the store's history of accepted writes,
//! the effect ledger, the heal-phase marker), never what a node believes about
//! itself. They run online, as an [`Observer`](leasehold_sim::Observer), so
//! their memory grows with the number of tasks, not with the run's length.

mod invariant;
mod lease_checker;
mod lease_oracle;
mod work_conservation;

pub use invariant::{Invariant, Violation};
pub use lease_checker::{CheckConfig, LeaseChecker, LivenessBound, NodeRole};
pub use lease_oracle::LeaseBounds;
