//! `leasehold live`: a scenario's fleet run for real against a SQL store.
//!
//! The host, not the protocol, does the IO and reads the clock. Each worker
//! and reclaimer is a thread stepping the same sans-IO state machine the
//! simulator hosts ([`LeaseNode`]), with a second thread that owns its own
//! connection to the store and answers its store requests in order. Time is
//! the real monotonic clock, run `speed` times fast: a node reading its
//! clock gets `speed x` the real time since the run began (through its
//! scenario clock's skew and drift), so every protocol timing lasts
//! `1 / speed` of its stated value. A wire thread delays every message by
//! the scenario's drawn latency, runs the effect services in process (the
//! simulator's `EffectService`: the same dedup and fencing rules), fires
//! the scheduled faults and writes the workload's tasks.
//!
//! Faults come from the scenario's fault model, drawn from the seed as a
//! simulated run draws them: crashes and pauses at a step or at set times,
//! message loss, delays and refusals on each leg (a lost store reply is an
//! ambiguous write: the write committed, the reply never came), hung
//! service calls, partitions, clock skew, drift and jumps, and store
//! outages (every client's connection is dropped and reopened after it;
//! requests in between fail or vanish). Duplicated messages are not
//! injected.
//!
//! Everything that happens is recorded as a simulated run records it, and
//! judged by the same observer ([`RecordJudge`]). Records are put in one
//! order the store could have answered them in ([`recorder`]): writes by
//! the store's revision, every other record after the writes its producer
//! had seen. A live run is not deterministic: the seed fixes the fault
//! model's draw, not the interleaving.
//!
//! This crate (leasehold-live) sits on leasehold-run and leasehold-store-sql;
//! it must never depend on the explore or report crates, nor on the CLI,
//! and nothing but the CLI may depend on it.

pub mod codec;
mod host;
mod recorder;

use codec::LeaseCodec;
use leasehold_protocol::{DocKey, DocValue, Variant};
use leasehold_run::run::{ExtraObserver, RecordHost, RecordJudge, RunOutcome, node_roles};
use leasehold_scenario::scenario::ValidScenario;
use leasehold_store_sql::{Setup, SqlStore, StoreUrl};
use std::sync::atomic::AtomicBool;

/// The fastest a live run may go: past it, a millisecond of the host's
/// scheduling is most of a scenario's network latency bound.
pub const MAX_SPEED: u64 = 1_000;

/// A store connection of the live host.
pub type LiveStore = SqlStore<DocKey, DocValue, LeaseCodec>;

pub struct LiveOptions {
    pub store: StoreUrl,
    pub seed: u64,
    pub variant: Variant,
    /// Time runs this many times fast (1..=MAX_SPEED).
    pub speed: u64,
    /// Empty a store that holds documents instead of refusing it.
    pub reset: bool,
}

/// What a live run did, beside its verdict.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LiveReport {
    pub store: String,
    pub speed: u64,
    pub wall_s: f64,
    /// Store requests the real store executed.
    pub store_requests: u64,
    pub store_requests_per_s: f64,
    /// Requests the real store failed (nothing applied: answered
    /// `unavailable`), and the first error.
    pub store_errors: u64,
    pub first_store_error: Option<String>,
    /// Writes whose commit went unanswered and could not be looked up
    /// before the run ended: applied or not, unknown.
    pub unknown_outcomes: u64,
    /// Connections reopened (after an injected outage, or a real failure).
    pub reconnects: u64,
    /// Store replies later than the scenario's delays allow (its latency
    /// bound, or a quarter of the store timeout if more), in scenario time:
    /// the store or the host was slow at this `--speed`. Each is recorded
    /// as a delayed reply.
    pub late_replies: u64,
    /// Node wake-ups the host delivered late past the scenario's delays
    /// (each recorded as a pause of that node).
    pub host_stalls: u64,
    /// The run was stopped by Ctrl-C.
    pub interrupted: bool,
}

/// Open the store for a run: set it up (refusing one that holds documents
/// unless `reset`), then one connection per node and one for the workload.
/// Errors are one line naming the store without its password.
pub fn open_stores(url: &StoreUrl, reset: bool, clients: usize) -> Result<Vec<LiveStore>, String> {
    let setup = if reset { Setup::Reset } else { Setup::Fresh };
    let first = LiveStore::open(url, setup, LeaseCodec).map_err(|e| e.0)?;
    let mut stores = vec![first];
    for _ in 1..clients {
        stores.push(LiveStore::open(url, Setup::Existing, LeaseCodec).map_err(|e| e.0)?);
    }
    Ok(stores)
}

/// Run `scn`'s fleet for real against `opts.store`; `extra` (a trace
/// writer) sees every record. `interrupt` stops the run early (Ctrl-C): the
/// verdict so far is judged with liveness left out. Bad input (a store
/// that cannot be opened or is not empty) is an `Err` of one line.
pub fn live(
    scn: &ValidScenario,
    opts: &LiveOptions,
    extra: Option<ExtraObserver<'_>>,
    interrupt: &AtomicBool,
) -> Result<(RunOutcome, LiveReport), String> {
    assert!(
        (1..=MAX_SPEED).contains(&opts.speed),
        "speed checked by the caller"
    );
    let roles = node_roles(scn);
    // One connection per node, one for the workload.
    let stores = open_stores(&opts.store, opts.reset, roles.len() + 1)?;
    let judge = RecordJudge::new(
        scn,
        opts.seed,
        opts.variant,
        &roles,
        RecordHost::Live,
        extra,
    );
    Ok(host::run(scn, opts, &roles, stores, judge, interrupt))
}
