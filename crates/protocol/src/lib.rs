//! The lease-with-heartbeat protocol, sans-IO.
//!
//! A [`Worker`] writes one heartbeat document for itself, claims pending tasks
//! with conditional writes that bump the task's epoch (the fencing token), runs
//! each task's steps through external effects, and fences itself when it can no
//! longer prove its lease is alive. A [`Reclaimer`] watches heartbeat documents
//! on its own clock and re-queues the tasks of workers that went quiet.
//!
//! In task heartbeat mode ([`HeartbeatMode::Task`]) a worker keeps one lease
//! document per running task instead, created before the claim and renewed
//! every interval, and the reclaimer watches those leases one task at a time.
//!
//! Architecture invariant: this crate never reads a clock, never does IO and
//! never draws randomness. Time arrives with every input; every store request,
//! effect call and event leaves as an output. It does not depend on the
//! simulator.

pub mod config;
pub mod coverage;
pub mod docs;
pub mod events;
mod outbox;
pub mod reclaimer;
mod sorted_vec_map;
pub mod variant;
pub mod worker;

pub use config::{ConfigError, HeartbeatMode, ProtocolConfig};
pub use coverage::CoveragePoint;
pub use docs::{
    DocKey, DocValue, MemberDoc, MemberStatus, Owner, TaskDoc, TaskId, TaskLeaseDoc, TaskState,
    task_write,
};
pub use events::{FenceCause, LeaseEvent};
pub use outbox::MAX_QUEUED_OUTPUTS;
pub use reclaimer::Reclaimer;
pub use variant::Variant;
pub use worker::{CLAIM_LOOK_AROUND_POLLS, Worker};

/// The output type both state machines produce.
pub type LeaseOutput = leasehold_interface::Output<DocKey, DocValue, LeaseEvent>;
/// The input type both state machines take.
pub type LeaseInput = leasehold_interface::Input<DocKey, DocValue>;
