//! The scenario's fault model: which kinds of fault a scenario may inject and
//! at what rates, and the per-seed draw of a concrete mix from those ranges
//! (swarm testing, after FoundationDB's BUGGIFY and TigerBeetle's VOPR).

use crate::scenario_error::{ScenarioError, check_duration};
use leasehold_sim::{
    Concern, Direction, Fault, FaultRates, Link, LocalClock, NodeId, OutageMode, RngStreams,
    faults::PPM,
};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// A closed range `[min, max]`, written as a two-element JSON array.
pub type Range<T> = [T; 2];

/// Bound on scheduled faults one seed may draw (partitions, outages, ...).
pub const MAX_SCHEDULED_FAULTS: usize = 100_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultsSection {
    /// Faults are injected during `[0, fault_phase_ms)`; then the heal phase.
    pub fault_phase_ms: u64,
    /// Each seed switches each fault kind on with probability 1/2 (swarm
    /// testing). Off: every kind listed is always on.
    #[serde(default)]
    pub swarm: bool,
    /// How long a crashed or self-fenced node stays down.
    pub restart_delay_ms: Range<u64>,
    #[serde(default)]
    pub crash: Option<CrashFaults>,
    #[serde(default)]
    pub pause: Option<PauseFaults>,
    #[serde(default)]
    pub clock: Option<ClockFaults>,
    #[serde(default)]
    pub network: Option<NetworkFaults>,
    #[serde(default)]
    pub store: Option<StoreFaults>,
    #[serde(default)]
    pub services: Option<ServiceFaults>,
    #[serde(default)]
    pub restarts: Option<RestartFaults>,
    /// Faults at set times on named nodes (`worker-3`, `reclaimer-0`).
    #[serde(default)]
    pub scheduled: Vec<ScheduledFault>,
    /// Faults aimed at lease boundaries rather than at uniform times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edges: Option<EdgeFaults>,
}

/// Edge-seeking faults (BUGGIFY-style): each dimension is switched on for a
/// seed with probability 1/2, on its own stream, so turning one on shifts no
/// other draw. Uniform random faults rarely line up with a lease boundary;
/// these are drawn around the timings that matter to a lease: the lease
/// timeout, the self-fencing deadline, the heartbeat interval and the store
/// timeout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeFaults {
    /// Targeted events per simulated minute of the fault phase, across the
    /// fleet, for each dimension that is on.
    pub per_minute: Range<f64>,
    /// Whether reclaimers are targeted too (pauses, bursts).
    pub reclaimers: bool,
}

/// Which edge dimensions one seed turned on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EdgeSwitches {
    /// Pauses whose length is drawn around the lease timeout, the
    /// self-fencing deadline or the heartbeat interval.
    pub lease_pauses: bool,
    /// Store replies delayed to land just before or just after their
    /// request's timeout.
    pub deadline_replies: bool,
    /// A worker crashes inside a partition that loses only its replies.
    pub restart_partitions: bool,
    /// Two or three faults back to back on one node.
    pub bursts: bool,
    /// Every clock drifts at the stated bound: workers slow, reclaimers
    /// fast (the worst case for a lease).
    pub drift_at_bound: bool,
    /// Arrivals squeezed into a tenth of their window: a backlog, so a
    /// re-queued task waits to be taken.
    pub backlog: bool,
}

/// The lease timings edge faults aim at, from the stated configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTimings {
    pub lease_timeout_ms: u64,
    pub self_fence_after_ms: u64,
    pub heartbeat_interval_ms: u64,
    pub store_timeout_ms: u64,
    pub max_network_delay_ms: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashFaults {
    /// Chance that a node crashes at any one of its steps.
    pub per_step: Range<f64>,
    /// Whether reclaimers crash too (workers always may).
    pub reclaimers: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseFaults {
    /// Chance that a node freezes at any one of its steps (GC, VM migration).
    pub per_step: Range<f64>,
    pub duration_ms: Range<u64>,
    pub reclaimers: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockFaults {
    /// Each node's wall clock is off by up to this much either way.
    pub skew_ms: Range<u64>,
    /// Each node's clocks run fast or slow by up to this much. The upper end
    /// is the drift bound the protocol is told about.
    pub drift_ppm: Range<u64>,
    /// Chance per step of a wall-clock jump of up to `jump_ms_max` either way.
    pub jump_per_step: Range<f64>,
    pub jump_ms_max: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkFaults {
    /// Chance per message of being lost / duplicated / delayed (spike or
    /// reordering), on every link.
    pub loss: Range<f64>,
    pub duplicate: Range<f64>,
    pub delay: Range<f64>,
    pub delay_ms: Range<u64>,
    /// Partitions started per simulated minute across the fleet.
    pub partitions_per_minute: Range<f64>,
    pub partition_ms: Range<u64>,
    /// Share of partitions that are one-way (requests or replies only).
    pub one_way_share: f64,
    /// Whether reclaimers are partitioned too (from the store).
    pub reclaimers: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreFaults {
    pub outages_per_minute: Range<f64>,
    pub outage_ms: Range<u64>,
    /// Share of outages in which requests time out rather than fail fast.
    pub timeout_share: f64,
    /// Chance per request of an `Unavailable` answer.
    pub failure: Range<f64>,
    /// Chance per reply of arriving late.
    pub slow: Range<f64>,
    pub slow_ms: Range<u64>,
    /// Chance per reply of being lost after the request was applied.
    pub ambiguous: Range<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceFaults {
    /// Chance per call of failing without acting.
    pub failure: Range<f64>,
    pub slow: Range<f64>,
    pub slow_ms: Range<u64>,
    /// Chance per call of acting but the reply being lost.
    pub ambiguous: Range<f64>,
    /// Chance per call of hanging: never acting, never answering.
    pub hang: Range<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestartFaults {
    /// A deploy: every worker is restarted, one each `rolling_interval_ms`,
    /// starting at a time drawn from this range.
    #[serde(default)]
    pub rolling_deploy_at_ms: Option<Range<u64>>,
    #[serde(default = "default_rolling_interval_ms")]
    pub rolling_interval_ms: u64,
    /// Half the fleet (or `mass_failure_share`) dies at once at a time drawn
    /// from this range.
    #[serde(default)]
    pub mass_failure_at_ms: Option<Range<u64>>,
    #[serde(default = "default_mass_failure_share")]
    pub mass_failure_share: f64,
}

fn default_rolling_interval_ms() -> u64 {
    5_000
}

fn default_mass_failure_share() -> f64 {
    0.5
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ScheduledFault {
    Crash {
        at_ms: u64,
        node: String,
    },
    Pause {
        at_ms: u64,
        node: String,
        duration_ms: u64,
    },
    Partition {
        at_ms: u64,
        node: String,
        link: Link,
        direction: Direction,
        duration_ms: u64,
    },
    StoreOutage {
        at_ms: u64,
        duration_ms: u64,
        mode: OutageMode,
    },
}

/// The fault mix one seed drew: which kinds are on, at what rates.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FaultMix {
    pub crash_per_step: f64,
    pub pause_per_step: f64,
    pub clock_skew_ms: u64,
    pub clock_drift_ppm: u64,
    pub clock_jump_per_step: f64,
    pub network_loss: f64,
    pub network_duplicate: f64,
    pub network_delay: f64,
    pub partitions_per_minute: f64,
    pub store_outages_per_minute: f64,
    pub store_failure: f64,
    pub store_slow: f64,
    pub store_ambiguous: f64,
    pub service_failure: f64,
    pub service_slow: f64,
    pub service_ambiguous: f64,
    pub service_hang: f64,
    pub rolling_deploy_at_ms: Option<u64>,
    pub mass_failure_at_ms: Option<u64>,
    /// The edge-seeking dimensions this seed turned on.
    pub edges: EdgeSwitches,
}

/// Node layout the fault model needs: workers first, then reclaimers, each
/// with its identity (which names it and picks its random streams).
#[derive(Clone, Debug)]
pub struct Fleet {
    pub workers: u32,
    pub reclaimers: u32,
    pub worker_ids: Vec<u32>,
    pub reclaimer_ids: Vec<u32>,
}

/// Stream ids of reclaimers live above every worker id.
pub const RECLAIMER_STREAM_BASE: u32 = 1 << 20;

impl Fleet {
    /// The node named `name`, in its one canonical spelling (`worker-3`,
    /// `reclaimer-0`: no sign, no leading zeros, no spaces).
    pub fn node_named(&self, name: &str) -> Option<NodeId> {
        // `u32::from_str` also takes `+3` and `03`: accept only the spelling
        // `format!("worker-{id}")` gives back.
        let id_of = |n: &str| {
            let id: u32 = n.parse().ok()?;
            (id.to_string() == n).then_some(id)
        };
        if let Some(n) = name.strip_prefix("worker-") {
            let id = id_of(n)?;
            let i = self.worker_ids.iter().position(|w| *w == id)?;
            Some(NodeId(i as u32))
        } else if let Some(n) = name.strip_prefix("reclaimer-") {
            let id = id_of(n)?;
            let i = self.reclaimer_ids.iter().position(|r| *r == id)?;
            Some(NodeId(self.workers + i as u32))
        } else {
            None
        }
    }

    pub fn is_reclaimer(&self, node: NodeId) -> bool {
        node.0 >= self.workers
    }

    /// The stable random-stream identity of simulator node `node`.
    pub fn stream_id(&self, node: NodeId) -> u32 {
        if node.0 < self.workers {
            self.worker_ids[node.index()]
        } else {
            RECLAIMER_STREAM_BASE + self.reclaimer_ids[(node.0 - self.workers) as usize]
        }
    }

    fn names(&self) -> String {
        let w: Vec<String> = self
            .worker_ids
            .iter()
            .map(|i| format!("worker-{i}"))
            .collect();
        let r: Vec<String> = self
            .reclaimer_ids
            .iter()
            .map(|i| format!("reclaimer-{i}"))
            .collect();
        let mut all = w;
        all.extend(r);
        if all.len() > 8 {
            format!(
                "{} ... {}",
                all[..3].join(", "),
                all[all.len() - 2..].join(", ")
            )
        } else {
            all.join(", ")
        }
    }
}

/// What the simulator gets for one seed.
pub struct DrawnFaults {
    pub mix: FaultMix,
    pub rates: FaultRates,
    pub scheduled: Vec<Fault>,
    /// Per node, in node order.
    pub clocks: Vec<LocalClock>,
    pub crash_reclaimers: bool,
    pub pause_reclaimers: bool,
}

fn err<T>(field: String, message: String) -> Result<T, ScenarioError> {
    Err(ScenarioError { field, message })
}

/// A number from a scenario, for a message: `1e300`, not its 301 digits.
fn shown(p: f64) -> String {
    if p != 0.0 && !(1e-6..1e6).contains(&p.abs()) {
        format!("{p:e}")
    } else {
        p.to_string()
    }
}

fn check_probability(field: &str, r: Range<f64>) -> Result<(), ScenarioError> {
    for p in r {
        if !(0.0..=1.0).contains(&p) || p.is_nan() {
            return err(
                field.into(),
                format!("{} is not a probability between 0 and 1", shown(p)),
            );
        }
    }
    check_range(field, r)
}

fn check_range<T: PartialOrd + std::fmt::Display + Copy>(
    field: &str,
    r: Range<T>,
) -> Result<(), ScenarioError> {
    if r[0] > r[1] {
        return err(
            field.into(),
            format!(
                "[{}, {}] is not a range: the minimum is above the maximum",
                r[0], r[1]
            ),
        );
    }
    Ok(())
}

/// A range of milliseconds: ordered, and its upper end (so both ends) at
/// most [`crate::scenario_error::MAX_DURATION_MS`], named `field[1]` when it is over.
fn check_ms_range(field: &str, r: Range<u64>) -> Result<(), ScenarioError> {
    check_range(field, r)?;
    check_duration(&format!("{field}[1]"), r[1])
}

/// At most one fault strikes a message: the upper ends of the chances that
/// share one roll (see `FaultInjector`'s bands) add up to at most 1. Upper
/// ends, because each seed draws every rate inside its range.
fn check_one_fault(
    field: &str,
    terms: &[(&str, Range<f64>)],
    what: &str,
) -> Result<(), ScenarioError> {
    let sum: f64 = terms.iter().map(|(_, r)| r[1]).sum();
    if sum > 1.0 {
        let names: Vec<&str> = terms.iter().map(|(name, _)| *name).collect();
        return err(
            field.into(),
            format!(
                "{} can exceed 1: at most one fault strikes {what}",
                names.join(" + ")
            ),
        );
    }
    Ok(())
}

/// The widest range of milliseconds a per-step or per-message draw can
/// cover: it is drawn in microseconds from 32 random bits.
pub const MAX_DRAWN_SPAN_MS: u64 = (1 << 32) / 1_000 - 1;

/// A range drawn per step or per message: ordered, and at most
/// [`MAX_DRAWN_SPAN_MS`] wide.
fn check_drawn_range(field: &str, r: Range<u64>) -> Result<(), ScenarioError> {
    check_ms_range(field, r)?;
    if r[1] - r[0] > MAX_DRAWN_SPAN_MS {
        return err(
            field.into(),
            format!(
                "[{}, {}] spans more than {MAX_DRAWN_SPAN_MS} ms (about 71 minutes), the widest \
                 range drawn per step or message",
                r[0], r[1]
            ),
        );
    }
    Ok(())
}

fn check_rate(field: &str, r: Range<f64>) -> Result<(), ScenarioError> {
    for p in r {
        if !(0.0..=600.0).contains(&p) || p.is_nan() {
            return err(
                field.into(),
                format!("{} is not a rate between 0 and 600 per minute", shown(p)),
            );
        }
    }
    check_range(field, r)
}

fn check_share(field: &str, p: f64) -> Result<(), ScenarioError> {
    if !(0.0..=1.0).contains(&p) || p.is_nan() {
        return err(
            field.into(),
            format!("{} is not a share between 0 and 1", shown(p)),
        );
    }
    Ok(())
}

impl FaultsSection {
    /// No faults of any kind (swarm off, nothing scheduled), with the given
    /// phase length and restart delay.
    pub fn none(fault_phase_ms: u64, restart_delay_ms: Range<u64>) -> FaultsSection {
        FaultsSection {
            fault_phase_ms,
            swarm: false,
            restart_delay_ms,
            crash: None,
            pause: None,
            clock: None,
            network: None,
            store: None,
            services: None,
            restarts: None,
            scheduled: Vec::new(),
            edges: None,
        }
    }

    /// The drift bound the protocol must be built for.
    pub fn max_drift_ppm(&self) -> u64 {
        self.clock.as_ref().map_or(0, |c| c.drift_ppm[1])
    }

    pub fn restart_delay_ms_max(&self) -> u64 {
        self.restart_delay_ms[1]
    }

    pub fn validate(&self, fleet: &Fleet, max_sim_time_ms: u64) -> Result<(), ScenarioError> {
        let phase = self.fault_phase_ms;
        check_duration("faults.fault_phase_ms", phase)?;
        if phase >= max_sim_time_ms {
            return err(
                "faults.fault_phase_ms".into(),
                format!("{phase} must end before limits.max_sim_time_ms {max_sim_time_ms}"),
            );
        }
        check_drawn_range("faults.restart_delay_ms", self.restart_delay_ms)?;
        if self.restart_delay_ms[0] == 0 {
            return err(
                "faults.restart_delay_ms".into(),
                "restarts take at least 1 ms".into(),
            );
        }
        if let Some(c) = &self.crash {
            check_probability("faults.crash.per_step", c.per_step)?;
        }
        if let Some(p) = &self.pause {
            check_probability("faults.pause.per_step", p.per_step)?;
            check_drawn_range("faults.pause.duration_ms", p.duration_ms)?;
        }
        if let Some(c) = &self.clock {
            check_ms_range("faults.clock.skew_ms", c.skew_ms)?;
            check_range("faults.clock.drift_ppm", c.drift_ppm)?;
            check_probability("faults.clock.jump_per_step", c.jump_per_step)?;
            // Jumps are drawn from [-max, max].
            if c.jump_ms_max > MAX_DRAWN_SPAN_MS / 2 {
                return err(
                    "faults.clock.jump_ms_max".into(),
                    format!(
                        "{} ms is over {} ms: jumps either way must fit the widest range \
                         drawn per step",
                        c.jump_ms_max,
                        MAX_DRAWN_SPAN_MS / 2
                    ),
                );
            }
            if c.drift_ppm[1] >= 100_000 {
                return err(
                    "faults.clock.drift_ppm".into(),
                    format!("{} ppm is over 10%: no lease can be safe", c.drift_ppm[1]),
                );
            }
        }
        if let Some(n) = &self.network {
            check_probability("faults.network.loss", n.loss)?;
            check_probability("faults.network.duplicate", n.duplicate)?;
            check_probability("faults.network.delay", n.delay)?;
            check_drawn_range("faults.network.delay_ms", n.delay_ms)?;
            check_rate(
                "faults.network.partitions_per_minute",
                n.partitions_per_minute,
            )?;
            check_ms_range("faults.network.partition_ms", n.partition_ms)?;
            check_share("faults.network.one_way_share", n.one_way_share)?;
            check_one_fault(
                "faults.network",
                &[
                    ("loss", n.loss),
                    ("duplicate", n.duplicate),
                    ("delay", n.delay),
                ],
                "a message",
            )?;
        }
        if let Some(s) = &self.store {
            check_rate("faults.store.outages_per_minute", s.outages_per_minute)?;
            check_ms_range("faults.store.outage_ms", s.outage_ms)?;
            check_share("faults.store.timeout_share", s.timeout_share)?;
            check_probability("faults.store.failure", s.failure)?;
            check_probability("faults.store.slow", s.slow)?;
            check_drawn_range("faults.store.slow_ms", s.slow_ms)?;
            check_probability("faults.store.ambiguous", s.ambiguous)?;
            check_one_fault(
                "faults.store",
                &[
                    ("failure", s.failure),
                    ("slow", s.slow),
                    ("ambiguous", s.ambiguous),
                ],
                "a request",
            )?;
        }
        if let Some(s) = &self.services {
            check_probability("faults.services.failure", s.failure)?;
            check_probability("faults.services.slow", s.slow)?;
            check_drawn_range("faults.services.slow_ms", s.slow_ms)?;
            check_probability("faults.services.ambiguous", s.ambiguous)?;
            check_probability("faults.services.hang", s.hang)?;
            check_one_fault(
                "faults.services",
                &[
                    ("failure", s.failure),
                    ("slow", s.slow),
                    ("ambiguous", s.ambiguous),
                    ("hang", s.hang),
                ],
                "a call",
            )?;
        }
        self.check_shared_legs()?;
        if let Some(r) = &self.restarts {
            if let Some(at) = r.rolling_deploy_at_ms {
                check_ms_range("faults.restarts.rolling_deploy_at_ms", at)?;
                if at[1] >= phase {
                    return err(
                        "faults.restarts.rolling_deploy_at_ms".into(),
                        format!(
                            "{} is not inside the fault phase (fault_phase_ms {phase})",
                            at[1]
                        ),
                    );
                }
            }
            if r.rolling_interval_ms == 0 {
                return err(
                    "faults.restarts.rolling_interval_ms".into(),
                    "must be greater than 0".into(),
                );
            }
            check_duration("faults.restarts.rolling_interval_ms", r.rolling_interval_ms)?;
            if let Some(at) = r.mass_failure_at_ms {
                check_ms_range("faults.restarts.mass_failure_at_ms", at)?;
                if at[1] >= phase {
                    return err(
                        "faults.restarts.mass_failure_at_ms".into(),
                        format!(
                            "{} is not inside the fault phase (fault_phase_ms {phase})",
                            at[1]
                        ),
                    );
                }
            }
            if !(r.mass_failure_share > 0.0 && r.mass_failure_share <= 1.0) {
                return err(
                    "faults.restarts.mass_failure_share".into(),
                    format!("{} is not a share in (0, 1]", r.mass_failure_share),
                );
            }
        }
        if let Some(e) = &self.edges {
            check_rate("faults.edges.per_minute", e.per_minute)?;
        }
        for (i, f) in self.scheduled.iter().enumerate() {
            let field = format!("faults.scheduled[{i}]");
            let (at_ms, node, duration_ms) = match f {
                ScheduledFault::Crash { at_ms, node } => (*at_ms, Some(node), None),
                ScheduledFault::Pause {
                    at_ms,
                    node,
                    duration_ms,
                }
                | ScheduledFault::Partition {
                    at_ms,
                    node,
                    duration_ms,
                    ..
                } => (*at_ms, Some(node), Some(*duration_ms)),
                ScheduledFault::StoreOutage {
                    at_ms, duration_ms, ..
                } => (*at_ms, None, Some(*duration_ms)),
            };
            if at_ms >= phase {
                return err(
                    format!("{field}.at_ms"),
                    format!("{at_ms} is not inside the fault phase (fault_phase_ms {phase})"),
                );
            }
            if let Some(d) = duration_ms {
                check_duration(&format!("{field}.duration_ms"), d)?;
            }
            if let Some(node) = node
                && fleet.node_named(node).is_none()
            {
                return err(
                    format!("{field}.node"),
                    format!("{node:?} does not exist: the fleet is {}", fleet.names()),
                );
            }
            if let ScheduledFault::Partition {
                node,
                link: Link::Services,
                ..
            } = f
                && fleet
                    .node_named(node)
                    .is_some_and(|n| fleet.is_reclaimer(n))
            {
                return err(
                    format!("{field}.link"),
                    format!("{node} is a reclaimer and calls no services"),
                );
            }
        }
        Ok(())
    }

    /// Store and service faults share the rolls of the network's message
    /// faults on their legs (store `ambiguous` adds to the lost band of
    /// replies, `slow` to the delayed band, `failure` and `hang` follow them
    /// on requests): on each leg, too, at most one fault strikes a message.
    fn check_shared_legs(&self) -> Result<(), ScenarioError> {
        let Some(n) = &self.network else {
            return Ok(());
        };
        let net = [
            ("network.loss", n.loss),
            ("network.duplicate", n.duplicate),
            ("network.delay", n.delay),
        ];
        let with = |extra: &[(&'static str, Range<f64>)]| {
            let mut terms = net.to_vec();
            terms.extend_from_slice(extra);
            terms
        };
        if let Some(s) = &self.store {
            check_one_fault(
                "faults.store",
                &with(&[("store.failure", s.failure)]),
                "a request to the store",
            )?;
            check_one_fault(
                "faults.store",
                &with(&[("store.slow", s.slow), ("store.ambiguous", s.ambiguous)]),
                "a reply from the store",
            )?;
        }
        if let Some(s) = &self.services {
            check_one_fault(
                "faults.services",
                &with(&[("services.failure", s.failure), ("services.hang", s.hang)]),
                "a call to a service",
            )?;
            check_one_fault(
                "faults.services",
                &with(&[
                    ("services.slow", s.slow),
                    ("services.ambiguous", s.ambiguous),
                ]),
                "a reply from a service",
            )?;
        }
        Ok(())
    }

    /// Draw this seed's faults. Pure function of (section, fleet, seed).
    /// Which edge dimensions `seed` turns on: each with probability 1/2,
    /// from the first draws of the edges' own stream (none without an
    /// `edges` section).
    pub fn edge_switches(&self, seed: u64) -> EdgeSwitches {
        if self.edges.is_none() {
            return EdgeSwitches::default();
        }
        let mut rng = RngStreams::new(seed).stream(Concern::Edges, 0);
        let mut coin = || rng.random_bool(0.5);
        EdgeSwitches {
            lease_pauses: coin(),
            deadline_replies: coin(),
            restart_partitions: coin(),
            bursts: coin(),
            drift_at_bound: coin(),
            backlog: coin(),
        }
    }

    pub fn draw(&self, fleet: &Fleet, seed: u64, timings: &LeaseTimings) -> DrawnFaults {
        let streams = RngStreams::new(seed);
        let mut swarm = streams.stream(Concern::Swarm, 0);
        let mut sched_rng = streams.stream(Concern::Host, 1);
        let phase_us = self.fault_phase_ms * 1_000;
        let swarm_on = self.swarm;
        // Draw in a fixed order, every value every time, so a kind being off
        // never shifts another kind's draw.
        let on = |rng: &mut ChaCha8Rng| {
            let coin = rng.random_bool(0.5);
            !swarm_on || coin
        };
        let pick = |rng: &mut ChaCha8Rng, r: Range<f64>| {
            let x: f64 = rng.random();
            r[0] + (r[1] - r[0]) * x
        };
        let ppm = |p: f64| (p * PPM as f64).round() as u32;
        let mut mix = FaultMix::default();
        let mut rates = FaultRates {
            crash_before_input_ppm: PPM / 4,
            restart_delay_us_min: self.restart_delay_ms[0] * 1_000,
            restart_delay_us_max: self.restart_delay_ms[1] * 1_000,
            ..FaultRates::default()
        };
        if let Some(c) = &self.crash {
            let (o, p) = (on(&mut swarm), pick(&mut swarm, c.per_step));
            if o {
                mix.crash_per_step = p;
                rates.crash_ppm = ppm(p);
            }
        }
        if let Some(c) = &self.pause {
            let (o, p) = (on(&mut swarm), pick(&mut swarm, c.per_step));
            if o {
                mix.pause_per_step = p;
                rates.pause_ppm = ppm(p);
                rates.pause_us_min = c.duration_ms[0] * 1_000;
                rates.pause_us_max = c.duration_ms[1] * 1_000;
            }
        }
        let nodes = (fleet.workers + fleet.reclaimers) as usize;
        let mut clocks = vec![LocalClock::default(); nodes];
        if let Some(c) = &self.clock {
            let o = on(&mut swarm);
            let skew = pick(&mut swarm, [c.skew_ms[0] as f64, c.skew_ms[1] as f64]) as u64;
            let drift = pick(&mut swarm, [c.drift_ppm[0] as f64, c.drift_ppm[1] as f64]) as u64;
            let jump = pick(&mut swarm, c.jump_per_step);
            if o {
                mix.clock_skew_ms = skew;
                mix.clock_drift_ppm = drift;
                mix.clock_jump_per_step = jump;
                rates.clock_jump_ppm = ppm(jump);
                rates.clock_jump_us_max = (c.jump_ms_max * 1_000) as i64;
            }
            for (i, clock) in clocks.iter_mut().enumerate() {
                // Each node's clock from its own stream: stable when others go.
                let mut clock_rng =
                    streams.stream(Concern::Clocks, fleet.stream_id(NodeId(i as u32)));
                let d = clock_rng.random_range(-(drift as i64)..=drift as i64);
                let s = clock_rng.random_range(-((skew * 1_000) as i64)..=(skew * 1_000) as i64);
                if o {
                    *clock = LocalClock::new(0, d);
                    clock.wall_offset_us = s;
                }
            }
        }
        let mut partitions_per_minute = 0.0;
        if let Some(n) = &self.network {
            let o = on(&mut swarm);
            let (loss, dup, delay, parts) = (
                pick(&mut swarm, n.loss),
                pick(&mut swarm, n.duplicate),
                pick(&mut swarm, n.delay),
                pick(&mut swarm, n.partitions_per_minute),
            );
            if o {
                mix.network_loss = loss;
                mix.network_duplicate = dup;
                mix.network_delay = delay;
                mix.partitions_per_minute = parts;
                partitions_per_minute = parts;
                for leg in rates.legs.iter_mut() {
                    leg.drop_ppm = ppm(loss);
                    leg.duplicate_ppm = ppm(dup);
                    leg.delay_ppm = ppm(delay);
                    leg.delay_us_min = n.delay_ms[0] * 1_000;
                    leg.delay_us_max = n.delay_ms[1] * 1_000;
                }
            }
        }
        let mut outages_per_minute = 0.0;
        if let Some(s) = &self.store {
            let o = on(&mut swarm);
            let (outages, failure, slow, ambiguous) = (
                pick(&mut swarm, s.outages_per_minute),
                pick(&mut swarm, s.failure),
                pick(&mut swarm, s.slow),
                pick(&mut swarm, s.ambiguous),
            );
            if o {
                mix.store_outages_per_minute = outages;
                mix.store_failure = failure;
                mix.store_slow = slow;
                mix.store_ambiguous = ambiguous;
                outages_per_minute = outages;
                let to = &mut rates.legs[leg_index(leasehold_sim::Leg::ToStore)];
                to.fail_ppm = ppm(failure);
                let from = &mut rates.legs[leg_index(leasehold_sim::Leg::FromStore)];
                from.drop_ppm += ppm(ambiguous);
                // A slow reply is a delay on the reply leg, with its own range.
                from.delay_ppm += ppm(slow);
                from.delay_us_min = s.slow_ms[0] * 1_000;
                from.delay_us_max = s.slow_ms[1] * 1_000;
            }
        }
        if let Some(s) = &self.services {
            let o = on(&mut swarm);
            let (failure, slow, ambiguous, hang) = (
                pick(&mut swarm, s.failure),
                pick(&mut swarm, s.slow),
                pick(&mut swarm, s.ambiguous),
                pick(&mut swarm, s.hang),
            );
            if o {
                mix.service_failure = failure;
                mix.service_slow = slow;
                mix.service_ambiguous = ambiguous;
                mix.service_hang = hang;
                let to = &mut rates.legs[leg_index(leasehold_sim::Leg::ToService)];
                to.fail_ppm = ppm(failure);
                to.hang_ppm = ppm(hang);
                let from = &mut rates.legs[leg_index(leasehold_sim::Leg::FromService)];
                from.drop_ppm += ppm(ambiguous);
                from.delay_ppm += ppm(slow);
                from.delay_us_min = s.slow_ms[0] * 1_000;
                from.delay_us_max = s.slow_ms[1] * 1_000;
            }
        }
        // Scheduled faults, on their own stream.
        let mut scheduled = Vec::new();
        let restart_us = |rng: &mut ChaCha8Rng| {
            rng.random_range(self.restart_delay_ms[0]..=self.restart_delay_ms[1]) * 1_000
        };
        if let Some(n) = &self.network {
            let candidates: Vec<NodeId> = (0..nodes as u32)
                .map(NodeId)
                .filter(|id| n.reclaimers || !fleet.is_reclaimer(*id))
                .collect();
            for (at_us, duration_us) in poisson_times(
                &mut sched_rng,
                partitions_per_minute,
                n.partition_ms,
                phase_us,
            ) {
                let node = candidates[sched_rng.random_range(0..candidates.len())];
                let link = if fleet.is_reclaimer(node) || sched_rng.random_bool(0.5) {
                    Link::Store
                } else {
                    Link::Services
                };
                let direction = if sched_rng.random_bool(n.one_way_share) {
                    if sched_rng.random_bool(0.5) {
                        Direction::Outbound
                    } else {
                        Direction::Inbound
                    }
                } else {
                    Direction::Both
                };
                scheduled.push(Fault::Partition {
                    at_us,
                    node,
                    link,
                    direction,
                    duration_us,
                });
            }
        }
        if let Some(s) = &self.store {
            for (at_us, duration_us) in
                poisson_times(&mut sched_rng, outages_per_minute, s.outage_ms, phase_us)
            {
                let mode = if sched_rng.random_bool(s.timeout_share) {
                    OutageMode::Timeout
                } else {
                    OutageMode::Fail
                };
                scheduled.push(Fault::StoreOutage {
                    at_us,
                    duration_us,
                    mode,
                });
            }
        }
        if let Some(r) = &self.restarts {
            if let Some(at) = r.rolling_deploy_at_ms {
                let o = on(&mut swarm);
                let start_ms = sched_rng.random_range(at[0]..=at[1]);
                if o {
                    mix.rolling_deploy_at_ms = Some(start_ms);
                    for w in 0..fleet.workers {
                        let at_us = (start_ms + w as u64 * r.rolling_interval_ms) * 1_000;
                        if at_us < phase_us {
                            // Pods of a deploy come back quickly.
                            scheduled.push(Fault::CrashAt {
                                at_us,
                                node: NodeId(w),
                                restart_after_us: self.restart_delay_ms[0] * 1_000,
                            });
                        }
                    }
                }
            }
            if let Some(at) = r.mass_failure_at_ms {
                let o = on(&mut swarm);
                let at_ms = sched_rng.random_range(at[0]..=at[1]);
                let mut workers: Vec<u32> = (0..fleet.workers).collect();
                // Fisher-Yates on our own stream: who dies is part of the seed.
                for i in (1..workers.len()).rev() {
                    let j = sched_rng.random_range(0..=i);
                    workers.swap(i, j);
                }
                let dying = ((fleet.workers as f64 * r.mass_failure_share).ceil() as usize)
                    .min(workers.len());
                if o {
                    mix.mass_failure_at_ms = Some(at_ms);
                    for &w in &workers[..dying] {
                        scheduled.push(Fault::CrashAt {
                            at_us: at_ms * 1_000,
                            node: NodeId(w),
                            restart_after_us: restart_us(&mut sched_rng),
                        });
                    }
                }
            }
        }
        for f in &self.scheduled {
            let named = |node: &str| fleet.node_named(node).expect("validated");
            let clip = |at_ms: u64, duration_ms: u64| {
                duration_ms.min(self.fault_phase_ms - at_ms).max(1) * 1_000
            };
            scheduled.push(match f {
                ScheduledFault::Crash { at_ms, node } => Fault::CrashAt {
                    at_us: at_ms * 1_000,
                    node: named(node),
                    restart_after_us: restart_us(&mut sched_rng),
                },
                ScheduledFault::Pause {
                    at_ms,
                    node,
                    duration_ms,
                } => Fault::PauseAt {
                    at_us: at_ms * 1_000,
                    node: named(node),
                    duration_us: clip(*at_ms, *duration_ms),
                },
                ScheduledFault::Partition {
                    at_ms,
                    node,
                    link,
                    direction,
                    duration_ms,
                } => Fault::Partition {
                    at_us: at_ms * 1_000,
                    node: named(node),
                    link: *link,
                    direction: *direction,
                    duration_us: clip(*at_ms, *duration_ms),
                },
                ScheduledFault::StoreOutage {
                    at_ms,
                    duration_ms,
                    mode,
                } => Fault::StoreOutage {
                    at_us: at_ms * 1_000,
                    duration_us: clip(*at_ms, *duration_ms),
                    mode: *mode,
                },
            });
        }
        if let Some(e) = &self.edges {
            let switches = self.edge_switches(seed);
            mix.edges = switches;
            let clock_bound = self.clock.as_ref().map(|c| c.drift_ppm[1]);
            self.draw_edges(
                e,
                switches,
                fleet,
                seed,
                timings,
                &mut rates,
                &mut scheduled,
            );
            if let (true, Some(bound)) = (switches.drift_at_bound, clock_bound) {
                for (i, clock) in clocks.iter_mut().enumerate() {
                    let fast = fleet.is_reclaimer(NodeId(i as u32));
                    let d = if fast { bound as i64 } else { -(bound as i64) };
                    let wall_offset_us = clock.wall_offset_us;
                    *clock = LocalClock::new(0, d);
                    clock.wall_offset_us = wall_offset_us;
                }
            }
        }
        // A bound, not a crash: absurd rates get the first faults only.
        scheduled.truncate(MAX_SCHEDULED_FAULTS);
        DrawnFaults {
            mix,
            rates,
            scheduled,
            clocks,
            crash_reclaimers: self.crash.as_ref().is_some_and(|c| c.reclaimers),
            pause_reclaimers: self.pause.as_ref().is_some_and(|p| p.reclaimers),
        }
    }
}

impl FaultsSection {
    /// The targeted faults of the edge dimensions `on` turns on, from the
    /// edges' own stream (after its switches), in a fixed order of draws.
    #[allow(clippy::too_many_arguments)]
    fn draw_edges(
        &self,
        e: &EdgeFaults,
        on: EdgeSwitches,
        fleet: &Fleet,
        seed: u64,
        t: &LeaseTimings,
        rates: &mut FaultRates,
        scheduled: &mut Vec<Fault>,
    ) {
        let phase_us = self.fault_phase_ms * 1_000;
        let streams = RngStreams::new(seed);
        // Index 1: index 0 holds the switches.
        let mut rng = streams.stream(Concern::Edges, 1);
        let per_minute = {
            let x: f64 = rng.random();
            e.per_minute[0] + (e.per_minute[1] - e.per_minute[0]) * x
        };
        let delay_ms = t.max_network_delay_ms;
        // Durations a lease cares about: the lease, the self-fencing
        // deadline, the heartbeat interval, the margin between the first
        // two, and the store timeout.
        let edges_ms = [
            t.lease_timeout_ms,
            t.self_fence_after_ms,
            t.heartbeat_interval_ms,
            t.lease_timeout_ms - t.self_fence_after_ms,
            t.store_timeout_ms,
        ];
        // Around an edge: up to a heartbeat before it (a pause starts
        // anywhere between two renewals) to two network delays past it.
        let around = |rng: &mut ChaCha8Rng| {
            let edge = edges_ms[rng.random_range(0..edges_ms.len())];
            let lo = edge.saturating_sub(t.heartbeat_interval_ms).max(1);
            rng.random_range(lo..=edge + 2 * delay_ms + 1) * 1_000
        };
        let workers: Vec<NodeId> = (0..fleet.workers).map(NodeId).collect();
        let targets: Vec<NodeId> = (0..fleet.workers + fleet.reclaimers)
            .map(NodeId)
            .filter(|n| e.reclaimers || !fleet.is_reclaimer(*n))
            .collect();
        let restart_us = |rng: &mut ChaCha8Rng| {
            rng.random_range(self.restart_delay_ms[0]..=self.restart_delay_ms[1]) * 1_000
        };
        let clip = |at_us: u64, d_us: u64| d_us.min(phase_us.saturating_sub(at_us)).max(1);
        // Every dimension draws its events whether or not it is on, so a
        // dimension switched off shifts no other's draws.
        let events = |rng: &mut ChaCha8Rng| poisson_times(rng, per_minute, [1, 1], phase_us);
        // Pauses around lease edges.
        for (at_us, _) in events(&mut rng) {
            let node = targets[rng.random_range(0..targets.len())];
            let d_us = around(&mut rng);
            if on.lease_pauses {
                scheduled.push(Fault::PauseAt {
                    at_us,
                    node,
                    duration_us: clip(at_us, d_us),
                });
            }
        }
        // Store replies that land at their request's deadline, give or take
        // a round trip: a reply just in time, or just too late.
        if on.deadline_replies {
            let from = &mut rates.legs[leg_index(leasehold_sim::Leg::FromStore)];
            let timeout_us = t.store_timeout_ms * 1_000;
            let spread_us = 2 * delay_ms * 1_000 + 1_000;
            from.delay_ppm = from.delay_ppm.max(PPM / 50);
            from.delay_us_min = timeout_us.saturating_sub(spread_us);
            from.delay_us_max = timeout_us + spread_us;
        }
        // A crash inside a partition that drops only the worker's replies:
        // its last writes land, it never hears, and it comes back.
        for (at_us, _) in events(&mut rng) {
            let node = workers[rng.random_range(0..workers.len())];
            let before_us = rng.random_range(0..=t.heartbeat_interval_ms * 2) * 1_000;
            let down_us = restart_us(&mut rng);
            let after_us = around(&mut rng);
            if on.restart_partitions {
                let start_us = at_us.saturating_sub(before_us);
                scheduled.push(Fault::Partition {
                    at_us: start_us,
                    node,
                    link: Link::Store,
                    direction: Direction::Inbound,
                    duration_us: clip(start_us, before_us + down_us + after_us),
                });
                scheduled.push(Fault::CrashAt {
                    at_us,
                    node,
                    restart_after_us: down_us,
                });
            }
        }
        // Bursts: two or three faults on one node, each within a heartbeat
        // of the one before.
        for (at_us, _) in events(&mut rng) {
            let node = targets[rng.random_range(0..targets.len())];
            let count = rng.random_range(2..=3);
            let mut when_us = at_us;
            for _ in 0..count {
                let kind = rng.random_range(0..4u32);
                let d_us = around(&mut rng);
                let gap_us = rng.random_range(0..=t.heartbeat_interval_ms) * 1_000;
                let down_us = restart_us(&mut rng);
                if on.bursts && when_us < phase_us {
                    scheduled.push(match kind {
                        0 => Fault::PauseAt {
                            at_us: when_us,
                            node,
                            duration_us: clip(when_us, d_us),
                        },
                        1 => Fault::CrashAt {
                            at_us: when_us,
                            node,
                            restart_after_us: down_us,
                        },
                        2 => Fault::Partition {
                            at_us: when_us,
                            node,
                            link: Link::Store,
                            direction: Direction::Both,
                            duration_us: clip(when_us, d_us),
                        },
                        _ => Fault::Partition {
                            at_us: when_us,
                            node,
                            link: Link::Store,
                            direction: Direction::Inbound,
                            duration_us: clip(when_us, d_us),
                        },
                    });
                }
                when_us += gap_us + 1;
            }
        }
    }
}

fn leg_index(leg: leasehold_sim::Leg) -> usize {
    leg.index()
}

/// Start times (and durations) of events at `per_minute` on average during
/// `[0, phase_us)`, each clipped to end by the end of the phase.
fn poisson_times(
    rng: &mut ChaCha8Rng,
    per_minute: f64,
    duration_ms: Range<u64>,
    phase_us: u64,
) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if per_minute <= 0.0 {
        return out;
    }
    let mean_gap_us = 60_000_000.0 / per_minute;
    let mut t_us = 0u64;
    while out.len() < MAX_SCHEDULED_FAULTS {
        // Uniform gaps around the mean; no transcendental maths, so the
        // schedule is bit-identical on every platform.
        // Saturating: a rate near 0 makes the gap up to `u64::MAX`.
        t_us = t_us
            .saturating_add(rng.random_range(0..=(2.0 * mean_gap_us) as u64))
            .saturating_add(1);
        if t_us >= phase_us {
            break;
        }
        let d_us = rng.random_range(duration_ms[0]..=duration_ms[1]) * 1_000;
        out.push((t_us, d_us.min(phase_us - t_us).max(1)));
    }
    out
}
