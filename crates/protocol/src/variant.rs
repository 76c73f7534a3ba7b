//! Protocol variants: the correct protocol, and planted bugs modelled on
//! failures real systems shipped. A variant is a small deviation inside the
//! real code paths (`if cfg.variant == ...`), never a second copy.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    Correct,
    UnconditionalClaim,
    ReclaimById,
    ReclaimWithoutEpochBump,
    NoIdempotencyKey,
    ProgressBeforeEffect,
    ReclaimOnlyAtStartup,
    NoSelfFencing,
    WallClockStaleness,
    ReclaimerOwnTtl,
    CompletionWithoutEpochCheck,
    NoStepDeadline,
    SkipDeadOnRestart,
    ScanFirstPageOnly,
    ReusedIdentity,
    ClaimAckLost,
    FailedEffectCountedDone,
    HerdClaims,
}

pub struct VariantInfo {
    pub variant: Variant,
    pub name: &'static str,
    pub description: &'static str,
    pub mirrors: &'static str,
}

const CATALOGUE: &[VariantInfo] = &[
    VariantInfo {
        variant: Variant::Correct,
        name: "correct",
        description: "the protocol as designed: conditional writes everywhere, epochs bumped on claim and re-queue, self-fencing",
        mirrors: "-",
    },
    VariantInfo {
        variant: Variant::UnconditionalClaim,
        name: "unconditional-claim",
        description: "claims a pending task with a blind write instead of a write conditional on its version",
        mirrors: "read-then-write claims without compare-and-set (the reason etcd Txn and k8s resourceVersion exist)",
    },
    VariantInfo {
        variant: Variant::ReclaimById,
        name: "reclaim-by-id",
        description: "re-queues a dead worker's task by id only, without re-checking owner and epoch in the write",
        mirrors: "River #1302: rescue UPDATE by id overwrote jobs completed or re-claimed meanwhile",
    },
    VariantInfo {
        variant: Variant::ReclaimWithoutEpochBump,
        name: "reclaim-without-epoch-bump",
        description: "re-queues tasks without bumping the epoch, so a fencing token repeats",
        mirrors: "fencing tokens that do not increase on every grant (Kleppmann 2016)",
    },
    VariantInfo {
        variant: Variant::NoIdempotencyKey,
        name: "no-idempotency-key",
        description: "calls effects without an idempotency key; a retry after a crash applies the effect twice",
        mirrors: "effect applied, crash before progress recorded, retry charges the card twice",
    },
    VariantInfo {
        variant: Variant::ProgressBeforeEffect,
        name: "progress-before-effect",
        description: "records a step as done before calling its effect; a crash in between skips the step forever",
        mirrors: "progress recorded before the effect: the step is marked done but never happened",
    },
    VariantInfo {
        variant: Variant::ReclaimOnlyAtStartup,
        name: "reclaim-only-at-startup",
        description: "the reclaimer scans once when it starts and never again",
        mirrors: "Sidekiq super_fetch recovers orphans only at process startup (#5540)",
    },
    VariantInfo {
        variant: Variant::NoSelfFencing,
        name: "no-self-fencing",
        description: "a worker keeps working after its heartbeats stopped landing past its lease",
        mirrors: "workers that keep going after losing their lease (Curator CURATOR-206, etcd #11456)",
    },
    VariantInfo {
        variant: Variant::WallClockStaleness,
        name: "wall-clock-staleness",
        description: "the reclaimer judges a worker stale by comparing the wall-clock stamp it wrote with the reclaimer's own wall clock",
        mirrors: "River's rescuer comparing a DB-clock attempted_at with the host clock; clock skew reclaims live workers",
    },
    VariantInfo {
        variant: Variant::ReclaimerOwnTtl,
        name: "reclaimer-own-ttl",
        description: "the reclaimer applies its own default lease timeout instead of the one the holder recorded",
        mirrors: "Kubernetes #47671: the lease duration of the observer, not the holder, decides expiry",
    },
    VariantInfo {
        variant: Variant::CompletionWithoutEpochCheck,
        name: "completion-without-epoch-check",
        description: "completes a task after checking only that it is still running, not that it is still ours at our epoch",
        mirrors: "ABA on `state = running`: a zombie finishes a run that was re-claimed meanwhile",
    },
    VariantInfo {
        variant: Variant::NoStepDeadline,
        name: "no-step-deadline",
        description: "waits for a step's effect forever: the heartbeat stays alive while the task is wedged",
        mirrors: "worker-level heartbeats say alive while the task thread hangs (no per-task deadline)",
    },
    VariantInfo {
        variant: Variant::SkipDeadOnRestart,
        name: "skip-dead-on-restart",
        description: "the reclaimer only re-queues for workers it saw go from alive to dead itself; a reclaimer restarted mid-reclaim ignores documents already marked dead",
        mirrors: "reclaimer dies after marking a worker dead but before re-queueing; on restart it only looks at live-to-dead transitions",
    },
    VariantInfo {
        variant: Variant::ScanFirstPageOnly,
        name: "scan-first-page-only",
        description: "the reclaimer's scan of heartbeat documents stops after its first page and starts over next time",
        mirrors: "River PR #1318: scan pagination that stops early strands everything after the first batch",
    },
    VariantInfo {
        variant: Variant::ReusedIdentity,
        name: "reused-identity",
        description: "a restarted worker takes over its previous incarnation's identity and heartbeat document",
        mirrors: "Oban #862: a worker identity reused across restarts; the new heartbeat hides the old incarnation's tasks",
    },
    VariantInfo {
        variant: Variant::ClaimAckLost,
        name: "claim-ack-lost",
        description: "a claim whose acknowledgement is lost is given up without checking whether it landed",
        mirrors: "ZooKeeper lock recipe: without a GUID in the node name a retry cannot recognise its own earlier claim",
    },
    VariantInfo {
        variant: Variant::FailedEffectCountedDone,
        name: "failed-effect-counted-done",
        description: "treats a failed effect call as done and records the step",
        mirrors: "error handling that logs and moves on: the step is marked done but never happened",
    },
    VariantInfo {
        variant: Variant::HerdClaims,
        name: "herd-claims",
        description: "every idle worker polls the same head of the pending index and claims what it sees there, so at scale most claims lose their race (a cost, not a safety bug)",
        mirrors: "job queues polled with `ORDER BY id LIMIT n` and no SKIP LOCKED: every consumer races for the same first rows (the thundering herd)",
    },
];

impl Variant {
    pub fn catalogue() -> &'static [VariantInfo] {
        CATALOGUE
    }

    pub fn all() -> impl Iterator<Item = Variant> {
        CATALOGUE.iter().map(|i| i.variant)
    }

    pub fn info(self) -> &'static VariantInfo {
        CATALOGUE
            .iter()
            .find(|i| i.variant == self)
            .expect("every variant is catalogued")
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    pub fn from_name(name: &str) -> Option<Variant> {
        CATALOGUE.iter().find(|i| i.name == name).map(|i| i.variant)
    }

    /// A planted bug that costs store requests and breaks no invariant:
    /// only the cost budget catches it, judged against the budget measured
    /// on a scenario's exact text (so a shrunk copy of the scenario, with no
    /// budget of its own, cannot hold it).
    pub fn is_cost(self) -> bool {
        matches!(self, Variant::HerdClaims)
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for v in Variant::all() {
            assert_eq!(Variant::from_name(v.name()), Some(v));
        }
        assert_eq!(Variant::from_name("nope"), None);
    }
}
