//! Coverage points: the rare and important situations the protocol can be
//! in, named, in the spirit of FoundationDB's `TEST` macro and Antithesis's
//! "sometimes" assertions. A point says nothing is wrong; it says a run went
//! somewhere worth going (a claim in doubt turned out to be ours, a service
//! fenced a zombie, a re-queue lost a race with a completion). A sweep that
//! never reaches one has not tested what happens there.
//!
//! A node reports a point as an event (`LeaseEvent::Coverage`), so points
//! reach the host through the same record stream as everything else: the
//! simulator counts nothing and knows nothing about leases. Every point sits
//! on a rare path (a conflict, a timeout, a later page), never on a step
//! every input takes, and is emitted out of line (`Outbox::cover`).
//!
//! A point marks a situation the correct protocol can reach. Where the
//! design makes a path unreachable for it (a worker handling a fencing
//! service's `rejected_stale`, or a progress write that lost to a
//! re-queue: self-fencing is tested before any reply is read, and no
//! correct reclaimer moves a task before its holder's deadline), there is
//! no point: the host reads those situations from the records instead
//! (the service or the store refusing a zombie), where they do happen. Nor
//! is a lease renewal that finds its lease expired one (the per-task
//! deadline passes first, for the same reason). Common paths (a lost race
//! for a lease) are not points either: a point is rare by definition.

use crate::config::HeartbeatMode;
use serde::{Deserialize, Serialize};

/// Which heartbeat modes can reach a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Modes {
    Both,
    WorkerOnly,
    TaskOnly,
}

impl Modes {
    pub fn includes(self, mode: HeartbeatMode) -> bool {
        match self {
            Modes::Both => true,
            Modes::WorkerOnly => mode == HeartbeatMode::Worker,
            Modes::TaskOnly => mode == HeartbeatMode::Task,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Modes::Both => "both",
            Modes::WorkerOnly => "worker",
            Modes::TaskOnly => "task",
        }
    }
}

macro_rules! coverage_points {
    ($( $(#[$doc:meta])* $point:ident = $name:literal, $modes:ident, $what:literal; )*) => {
        /// A named coverage point. The discriminant is the point's index in
        /// [`CoveragePoint::ALL`] (and the byte the trace hash writes).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[repr(u8)]
        pub enum CoveragePoint {
            $( $(#[$doc])* #[serde(rename = $name)] $point, )*
        }

        impl CoveragePoint {
            /// Every point, in declaration order (their discriminants).
            pub const ALL: &'static [CoveragePoint] = &[$(CoveragePoint::$point,)*];

            /// The point's name in reports and traces (kebab-case).
            pub fn name(self) -> &'static str {
                match self { $(CoveragePoint::$point => $name,)* }
            }

            /// Which heartbeat modes can reach it.
            pub fn modes(self) -> Modes {
                match self { $(CoveragePoint::$point => Modes::$modes,)* }
            }

            /// One line: the situation the point marks.
            pub fn description(self) -> &'static str {
                match self { $(CoveragePoint::$point => $what,)* }
            }
        }
    };
}

coverage_points! {
    // A worker's claims (both modes).
    ClaimInDoubt = "claim-in-doubt", Both,
        "a claim got no reply in time: it may have landed, so it is kept in doubt and re-read";
    ClaimRefusedInDoubt = "claim-refused-in-doubt", Both,
        "a claim was refused as unavailable but stays in doubt: an earlier copy may still land";
    DoubtfulClaimWasOurs = "doubtful-claim-was-ours", Both,
        "a claim in doubt turned out to have landed: the re-read shows our claim and we run it";
    DoubtfulClaimResent = "doubtful-claim-resent", Both,
        "a claim in doubt found the task untouched and was re-sent (the very same conditional write)";
    DoubtfulClaimMovedOn = "doubtful-claim-moved-on", Both,
        "a claim in doubt found the task moved on by someone else: it can never land, the slot is freed";
    ClaimConflictWasOurs = "claim-conflict-was-ours", Both,
        "a claim's conflict showed our own claim (a lost acknowledgement or a re-sent copy)";
    // A worker's steps (both modes).
    EffectDeduplicated = "effect-deduplicated", Both,
        "a service deduplicated a repeated effect call by its idempotency key";
    EffectFailedRetried = "effect-failed-retried", Both,
        "an effect call failed and is retried after the backoff";
    EffectTimeoutRetried = "effect-timeout-retried", Both,
        "an effect call got no reply within effect_timeout_ms and is retried with the same key";
    ProgressConflictWasOurs = "progress-conflict-was-ours", Both,
        "a progress write's conflict showed our own earlier write of it (its reply was lost)";
    ProgressTimeoutRetried = "progress-timeout-retried", Both,
        "a progress write got no reply in time and is retried";
    // A worker's heartbeat document (worker mode).
    RegisterConflictWasOurs = "register-conflict-was-ours", WorkerOnly,
        "a registration retry conflicted with our own earlier create: the lease runs from the first attempt";
    HeartbeatAdoptedOwnBeat = "heartbeat-adopted-own-beat", WorkerOnly,
        "a heartbeat conflicted with our own newer beat (a timed-out renewal that landed): adopted, lease not extended";
    WorkerSelfFenced = "worker-self-fenced", WorkerOnly,
        "a worker's lease deadline passed with no renewal known to have landed: it fences itself";
    // A worker's task leases (task mode).
    LeaseLandedTooLate = "lease-landed-too-late", TaskOnly,
        "a lease landed too late to claim under it safely: no claim is sent";
    TaskLeaseGivenUp = "task-lease-given-up", TaskOnly,
        "a task's lease may have lapsed: the worker gives that task up (per-task self-fencing)";
    LeaseRenewalAdoptedOwnBeat = "lease-renewal-adopted-own-beat", TaskOnly,
        "a lease renewal conflicted with our own newer beat: adopted, lease not extended";
    RenewalReplyAfterGiveUp = "renewal-reply-after-give-up", TaskOnly,
        "a renewal's reply arrived after the worker gave the lease up: the lease is left to expire";
    RenewalReplyAfterRelease = "renewal-reply-after-release", TaskOnly,
        "a renewal's reply arrived after the lease was released: the worker deletes it";
    ClaimLandedLeaseLapsed = "claim-landed-lease-lapsed", TaskOnly,
        "a claim landed but its lease may have lapsed meanwhile: the worker never acts on it";
    // A reclaimer in worker mode.
    MarkDeadLostRace = "mark-dead-lost-race", WorkerOnly,
        "declaring a worker dead conflicted: it renewed in time, or another reclaimer got there first";
    MemberScanNextPage = "member-scan-next-page", WorkerOnly,
        "a scan of heartbeat documents continued to a later page";
    OwnedListingNextPage = "owned-listing-next-page", WorkerOnly,
        "a dead worker owned more running tasks than one listing page holds";
    OrphanSweepNextPage = "orphan-sweep-next-page", WorkerOnly,
        "the orphan sweep of all running tasks continued to a later page";
    OrphanRequeued = "orphan-requeued", WorkerOnly,
        "orphan recovery: a claim landed after its owner was reclaimed and deleted; the sweep re-queues it";
    ReclaimResumedByFreshIncarnation = "reclaim-resumed-by-fresh-incarnation", WorkerOnly,
        "a restarted reclaimer found a worker already declared dead, not by itself, and resumed the reclaim";
    RequeueLostToCompletion = "requeue-lost-to-completion", WorkerOnly,
        "a re-queue raced the task's completion and lost (the task is done)";
    RequeueLostToProgress = "requeue-lost-to-progress", WorkerOnly,
        "a re-queue raced its owner's progress write and lost (the task moved on under the same claim)";
    // A reclaimer in task mode.
    LeaseScanNextPage = "lease-scan-next-page", TaskOnly,
        "a scan of task lease documents continued to a later page";
    LeaseExpiryLostRace = "lease-expiry-lost-race", TaskOnly,
        "expiring a lease conflicted: its holder renewed in time, or another reclaimer got there first";
    DeadLeaseResumed = "dead-lease-resumed", TaskOnly,
        "a scan found a lease already dead with no reclaim in progress (a crashed or raced reclaim) and resumed it";
    TaskClaimVoided = "task-claim-voided", TaskOnly,
        "a lease died before its claim was seen: the pending task is moved on so the claim can never land";
    DeadLeaseTaskMovedOn = "dead-lease-task-moved-on", TaskOnly,
        "a dead lease's task was done or past its epoch: only the lease is deleted";
    LeasedRequeueLostRace = "leased-requeue-lost-race", TaskOnly,
        "a re-queue (or a void) under a dead lease raced the task moving on and lost";
}

const _: () = assert!(CoveragePoint::ALL.len() >= 20, "at least twenty points");

impl CoveragePoint {
    pub const COUNT: usize = Self::ALL.len();

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn from_name(name: &str) -> Option<CoveragePoint> {
        Self::ALL.iter().copied().find(|p| p.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_the_list_and_names_are_unique() {
        let mut names = std::collections::BTreeSet::new();
        for (i, p) in CoveragePoint::ALL.iter().enumerate() {
            assert_eq!(p.index(), i);
            assert!(names.insert(p.name()), "{} twice", p.name());
            assert_eq!(CoveragePoint::from_name(p.name()), Some(*p));
            let json = serde_json::to_string(p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.name()));
        }
    }

    #[test]
    fn both_modes_have_points_of_their_own() {
        for mode in [HeartbeatMode::Worker, HeartbeatMode::Task] {
            let own = CoveragePoint::ALL
                .iter()
                .filter(|p| p.modes() != Modes::Both && p.modes().includes(mode))
                .count();
            assert!(own >= 5, "{mode:?}: {own}");
        }
    }
}
