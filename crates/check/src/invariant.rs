use leasehold_protocol::TaskId;
use serde::Serialize;

/// The invariants, named exactly as they appear in output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Invariant {
    /// No effect and no task write is accepted from a worker whose claim on the
    /// task was already superseded, and no two workers work on one task in the
    /// same epoch.
    NoDoubleOwnership,
    /// When a task is done, each of its steps' effects was applied exactly once.
    ExactlyOnceEffects,
    /// Once the heal phase starts, every task is done within a bound computed
    /// from the configuration.
    NoLostTask,
    /// A task's epoch never goes back; every claim and re-queue bumps it.
    EpochsMonotonic,
    /// A done task never changes again.
    DoneIsFinal,
    /// A worker decides an owner's action (a task write, an effect call)
    /// only while no correct reclaimer can yet have declared its lease dead,
    /// with room for the action to arrive.
    ActsWithinLease,
    /// A reclaimer declares a lease dead, or re-queues a running task, only
    /// once the holder's lease has provably expired; a worker no fault
    /// touched for a renewal window never fences itself; and no worker whose
    /// lease stands gives itself up before any self-fencing deadline can fall.
    NoNeedlessSuspicion,
    /// A lease document declared dead or deleted is never written alive again
    /// by its holder in a request decided after the loss.
    NoResurrection,
    /// In the heal phase, a lease that stopped being renewed is declared dead
    /// within a bound derived from the configuration; and a task running
    /// under a lease declared dead is re-queued within the declaring
    /// reclaimer's round trips while no fault touches it.
    DetectionBounded,
    /// In the heal phase, a task does not stay pending past a bound derived
    /// from the configuration while a worker no fault touches shows room in
    /// the store and decides no claim.
    WorkConserving,
    /// Not a lease invariant: a simulated node panicked (or the run's queue
    /// overflowed). Reported like a violation so it is never lost. (A run
    /// its scenario's limits stop is reported cut short, not as this.)
    SimulationHealthy,
}

impl Invariant {
    pub const ALL: [Invariant; 11] = [
        Invariant::NoDoubleOwnership,
        Invariant::ExactlyOnceEffects,
        Invariant::NoLostTask,
        Invariant::EpochsMonotonic,
        Invariant::DoneIsFinal,
        Invariant::ActsWithinLease,
        Invariant::NoNeedlessSuspicion,
        Invariant::NoResurrection,
        Invariant::DetectionBounded,
        Invariant::WorkConserving,
        Invariant::SimulationHealthy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Invariant::NoDoubleOwnership => "no-double-ownership",
            Invariant::ExactlyOnceEffects => "exactly-once-effects",
            Invariant::NoLostTask => "no-lost-task",
            Invariant::EpochsMonotonic => "epochs-monotonic",
            Invariant::DoneIsFinal => "done-is-final",
            Invariant::ActsWithinLease => "acts-within-lease",
            Invariant::NoNeedlessSuspicion => "no-needless-suspicion",
            Invariant::NoResurrection => "no-resurrection",
            Invariant::DetectionBounded => "detection-bounded",
            Invariant::WorkConserving => "work-conserving",
            Invariant::SimulationHealthy => "simulation-healthy",
        }
    }

    pub fn from_name(name: &str) -> Option<Invariant> {
        Invariant::ALL.into_iter().find(|i| i.name() == name)
    }
}

impl std::fmt::Display for Invariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub invariant: Invariant,
    /// Simulated time at which it was detected.
    pub time_ms: u64,
    pub task: Option<TaskId>,
    pub message: String,
}
