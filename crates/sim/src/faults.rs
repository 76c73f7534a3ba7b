//! Seeded fault injection: which node crashes, at which of its steps, and
//! after how many of that step's outputs.

use crate::node::NodeId;
use crate::rng::{Concern, RngStreams};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Probabilities are in parts per million so scenarios stay integer-exact.
pub const PPM: u32 = 1_000_000;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultPolicy {
    /// Faults are injected only before this simulated time; after it the run
    /// is in its heal phase.
    pub fault_phase_end_us: u64,
    /// Chance, per step of a crashable node, that it crashes at that step.
    pub crash_per_step_ppm: u32,
    /// A crashed node comes back as a new incarnation after this long.
    pub restart_delay_ms_min: u64,
    pub restart_delay_ms_max: u64,
}

impl FaultPolicy {
    pub fn none() -> FaultPolicy {
        FaultPolicy {
            fault_phase_end_us: 0,
            crash_per_step_ppm: 0,
            restart_delay_ms_min: 0,
            restart_delay_ms_max: 0,
        }
    }
}

/// Where within a step a crash lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "at", rename_all = "snake_case")]
pub enum CrashPoint {
    /// The node dies before it handles the input; the input is lost.
    BeforeInput,
    /// The node handles the input and dies after `emitted` of its `of` outputs
    /// left (`emitted < of`).
    BetweenOutputs { emitted: u32, of: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum Fault {
    Crash {
        node: NodeId,
        incarnation: u32,
        /// The node's step counter (over all incarnations) when it crashed.
        node_step: u64,
        point: CrashPoint,
    },
    Restart {
        node: NodeId,
        incarnation: u32,
    },
}

pub struct FaultInjector {
    policy: FaultPolicy,
    per_node: Vec<ChaCha8Rng>,
    streams: RngStreams,
}

impl FaultInjector {
    pub fn new(policy: FaultPolicy, streams: RngStreams) -> FaultInjector {
        assert!(policy.crash_per_step_ppm <= PPM);
        assert!(policy.restart_delay_ms_min <= policy.restart_delay_ms_max);
        FaultInjector {
            policy,
            per_node: Vec::new(),
            streams,
        }
    }

    pub fn policy(&self) -> &FaultPolicy {
        &self.policy
    }

    pub fn in_fault_phase(&self, now_us: u64) -> bool {
        now_us < self.policy.fault_phase_end_us
    }

    fn rng(&mut self, node: NodeId) -> &mut ChaCha8Rng {
        while self.per_node.len() <= node.index() {
            let index = self.per_node.len() as u32;
            self.per_node
                .push(self.streams.stream(Concern::Faults, index));
        }
        &mut self.per_node[node.index()]
    }

    /// Decide, before a step, whether this node crashes during it. Returns
    /// `Some(true)` to crash before the input, `Some(false)` to crash after
    /// some of the step's outputs (see [`Self::outputs_before_crash`]).
    pub fn roll_crash(&mut self, node: NodeId, now_us: u64) -> Option<bool> {
        if !self.in_fault_phase(now_us) || self.policy.crash_per_step_ppm == 0 {
            return None;
        }
        let ppm = self.policy.crash_per_step_ppm;
        let rng = self.rng(node);
        if rng.random_range(0..PPM) >= ppm {
            return None;
        }
        Some(rng.random_bool(0.25))
    }

    /// How many of `of` outputs leave before the crash: any of 0..of.
    pub fn outputs_before_crash(&mut self, node: NodeId, of: u32) -> u32 {
        if of == 0 {
            return 0;
        }
        self.rng(node).random_range(0..of)
    }

    pub fn restart_delay_us(&mut self, node: NodeId) -> u64 {
        let (lo, hi) = (
            self.policy.restart_delay_ms_min,
            self.policy.restart_delay_ms_max,
        );
        self.rng(node).random_range(lo..=hi) * 1_000
    }
}
