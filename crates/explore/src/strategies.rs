//! proptest strategies for scenarios, fault settings, seeds and variants, so
//! a property test explores configurations (not only seeds) and shrinks a
//! failure with proptest's own machinery to a small scenario.
//!
//! Every scenario a strategy makes passes validation by construction: the
//! strategies draw independent knobs ([`ScenarioParams`]) and derive the
//! dependent values from them (a store timeout is "one round trip plus
//! `store_timeout_extra_ms`", a lease timeout is "the renewal margin plus
//! `lease_timeout_extra_ms`"). Each knob shrinks on its own towards the
//! smallest, fastest scenario, so a shrunk counterexample is small.
//!
//! (Users of the `leasehold` package write `leasehold::strategies` and
//! `leasehold::simulate`.)
//!
//! ```no_run
//! use leasehold_explore::strategies::{ScenarioBounds, scenario, seed};
//! use proptest::prelude::*;
//!
//! proptest! {
//!     #[test]
//!     fn correct_protocol_holds(scn in scenario(ScenarioBounds::small()), seed in seed()) {
//!         let outcome = leasehold_run::run::simulate(&scn, seed, leasehold_protocol::Variant::Correct, None);
//!         prop_assert!(outcome.ok(), "{:?}", outcome.violations);
//!     }
//! }
//! ```
//!
//! Faults: [`fault_settings`] draws a scenario's whole `faults` section,
//! every kind of fault optional (crash, pause, clock, network, store,
//! services, restarts) plus a short list of scheduled faults (a fault plan
//! written into the scenario), so shrinking switches off the kinds a failure
//! does not need. A new kind of fault joins in three places: a field in
//! [`FaultParams`], a strategy in [`fault_settings`], and a line in
//! [`FaultParams::section`]; every property test that uses [`scenario`]
//! explores it from then on.

use crate::seeds::SeedRange;
use leasehold_protocol::{HeartbeatMode, Variant};
use leasehold_scenario::fault_model::{
    ClockFaults, CrashFaults, EdgeFaults, FaultsSection, NetworkFaults, PauseFaults, Range,
    RestartFaults, ScheduledFault, ServiceFaults, StoreFaults,
};
use leasehold_scenario::scenario::{
    Fleet, LimitsSection, NetworkSection, ProtocolSection, Scenario, ServiceSection, TasksSection,
    ValidScenario,
};
use leasehold_sim::{Dedup, Direction, Link, OutageMode};
use proptest::prelude::*;

/// How big generated scenarios may get. Keep them small: a property test
/// runs one simulation per case.
#[derive(Clone, Copy, Debug)]
pub struct ScenarioBounds {
    pub max_workers: u32,
    pub max_reclaimers: u32,
    pub max_slots_per_worker: u32,
    pub max_tasks: u32,
    pub max_services: usize,
    pub max_steps: usize,
    pub max_repeat_steps: u32,
    /// Crash chance per node step, in parts per million.
    pub max_crash_ppm: u32,
    /// Chance of every other fault (pause, loss, store failure...) per step
    /// or message, in parts per million.
    pub max_fault_ppm: u32,
    /// Clock drift bound, in parts per million (under 100,000).
    pub max_drift_ppm: u64,
    pub max_scheduled_faults: usize,
    /// Which kinds of fault may be switched on.
    pub fault_kinds: FaultKinds,
    /// Draw the task heartbeat mode (one lease document per running task)
    /// as well as the worker mode.
    pub task_heartbeat_mode: bool,
    /// Allow services that do not deduplicate (`dedup: none`). No protocol
    /// can apply their effects exactly once across a crash, so leave this off
    /// for "the correct protocol holds" properties.
    pub allow_non_idempotent_services: bool,
}

impl ScenarioBounds {
    /// A handful of workers and tens of tasks: milliseconds per run.
    pub fn small() -> ScenarioBounds {
        ScenarioBounds {
            max_workers: 6,
            max_reclaimers: 2,
            max_slots_per_worker: 3,
            max_tasks: 40,
            max_services: 3,
            max_steps: 4,
            max_repeat_steps: 3,
            max_crash_ppm: 20_000,
            max_fault_ppm: 20_000,
            max_drift_ppm: 50_000,
            max_scheduled_faults: 4,
            fault_kinds: FaultKinds::ALL,
            task_heartbeat_mode: true,
            allow_non_idempotent_services: false,
        }
    }
}

/// Which kinds of fault strategies may switch on (each is then on or off
/// per case, and shrinking prefers off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultKinds {
    pub crash: bool,
    pub pause: bool,
    pub clock: bool,
    pub network: bool,
    pub store: bool,
    pub services: bool,
    pub restarts: bool,
    pub scheduled: bool,
}

impl FaultKinds {
    pub const ALL: FaultKinds = FaultKinds {
        crash: true,
        pause: true,
        clock: true,
        network: true,
        store: true,
        services: true,
        restarts: true,
        scheduled: true,
    };
    pub const NONE: FaultKinds = FaultKinds {
        crash: false,
        pause: false,
        clock: false,
        network: false,
        store: false,
        services: false,
        restarts: false,
        scheduled: false,
    };
}

/// `Some` of `strategy` (or `None`, which shrinking prefers) when `allowed`;
/// always `None` otherwise.
fn maybe<S: Strategy + 'static>(allowed: bool, strategy: S) -> BoxedStrategy<Option<S::Value>>
where
    S::Value: Clone + std::fmt::Debug,
{
    if allowed {
        proptest::option::of(strategy).boxed()
    } else {
        Just(None).boxed()
    }
}

/// One effect service's knobs.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceParams {
    pub dedup: Dedup,
    pub fencing: bool,
    pub work_ms_min: u64,
    pub work_ms_spread: u64,
}

/// Where a scheduled fault strikes, as knobs that stay valid whatever the
/// fleet and fault phase: a node index taken modulo the fleet, a time in
/// thousandths of the fault phase.
#[derive(Clone, Debug, PartialEq)]
pub enum ScheduledParams {
    Crash {
        at_permille: u64,
        node: u32,
    },
    Pause {
        at_permille: u64,
        node: u32,
        duration_ms: u64,
    },
    Partition {
        at_permille: u64,
        node: u32,
        /// Reclaimers call no services: for them this becomes the store link.
        link: Link,
        direction: Direction,
        duration_ms: u64,
    },
    StoreOutage {
        at_permille: u64,
        duration_ms: u64,
        mode: OutageMode,
    },
}

/// Restarts as knobs: deploy and mass-failure times in thousandths of the
/// fault phase.
#[derive(Clone, Debug, PartialEq)]
pub struct RestartParams {
    pub rolling_deploy_at_permille: Option<(u64, u64)>,
    pub rolling_interval_ms: u64,
    pub mass_failure_at_permille: Option<(u64, u64)>,
    pub mass_failure_share_percent: u32,
}

/// A scenario's fault knobs: each kind of fault is optional.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultParams {
    pub fault_phase_ms: u64,
    pub swarm: bool,
    pub restart_delay_ms_min: u64,
    pub restart_delay_ms_spread: u64,
    pub crash: Option<CrashFaults>,
    pub pause: Option<PauseFaults>,
    pub clock: Option<ClockFaults>,
    pub network: Option<NetworkFaults>,
    pub store: Option<StoreFaults>,
    pub services: Option<ServiceFaults>,
    pub restarts: Option<RestartParams>,
    pub scheduled: Vec<ScheduledParams>,
    /// Edge-seeking faults, when present (drawn on half the cases).
    pub edges: Option<EdgeFaults>,
}

impl FaultParams {
    /// The `faults` section for a fleet of `workers` and `reclaimers`.
    pub fn section(&self, workers: u32, reclaimers: u32) -> FaultsSection {
        assert!(workers >= 1 && reclaimers >= 1 && self.fault_phase_ms >= 1);
        let phase = self.fault_phase_ms;
        let at = |permille: u64| phase * permille.min(999) / 1000;
        let nodes = workers + reclaimers;
        let node_name = |node: u32| {
            let node = node % nodes;
            if node < workers {
                format!("worker-{node}")
            } else {
                format!("reclaimer-{}", node - workers)
            }
        };
        let window = |(a, b): (u64, u64)| [at(a.min(b)), at(a.max(b))];
        let scheduled = self
            .scheduled
            .iter()
            .map(|f| match f {
                ScheduledParams::Crash { at_permille, node } => ScheduledFault::Crash {
                    at_ms: at(*at_permille),
                    node: node_name(*node),
                },
                ScheduledParams::Pause {
                    at_permille,
                    node,
                    duration_ms,
                } => ScheduledFault::Pause {
                    at_ms: at(*at_permille),
                    node: node_name(*node),
                    duration_ms: *duration_ms,
                },
                ScheduledParams::Partition {
                    at_permille,
                    node,
                    link,
                    direction,
                    duration_ms,
                } => ScheduledFault::Partition {
                    at_ms: at(*at_permille),
                    node: node_name(*node),
                    link: if node % nodes >= workers {
                        Link::Store
                    } else {
                        *link
                    },
                    direction: *direction,
                    duration_ms: *duration_ms,
                },
                ScheduledParams::StoreOutage {
                    at_permille,
                    duration_ms,
                    mode,
                } => ScheduledFault::StoreOutage {
                    at_ms: at(*at_permille),
                    duration_ms: *duration_ms,
                    mode: *mode,
                },
            })
            .collect();
        FaultsSection {
            fault_phase_ms: phase,
            swarm: self.swarm,
            restart_delay_ms: [
                self.restart_delay_ms_min,
                self.restart_delay_ms_min + self.restart_delay_ms_spread,
            ],
            crash: self.crash.clone(),
            pause: self.pause.clone(),
            clock: self.clock.clone(),
            network: self.network.clone(),
            store: self.store.clone(),
            services: self.services.clone(),
            restarts: self.restarts.as_ref().map(|r| RestartFaults {
                rolling_deploy_at_ms: r.rolling_deploy_at_permille.map(window),
                rolling_interval_ms: r.rolling_interval_ms,
                mass_failure_at_ms: r.mass_failure_at_permille.map(window),
                mass_failure_share: f64::from(r.mass_failure_share_percent.clamp(1, 100)) / 100.0,
            }),
            scheduled,
            edges: self.edges.clone(),
        }
    }

    /// The drift bound the protocol is told about.
    pub fn max_drift_ppm(&self) -> u64 {
        self.clock.as_ref().map_or(0, |c| c.drift_ppm[1])
    }
}

/// Independent knobs from which [`ScenarioParams::scenario`] builds a valid
/// scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioParams {
    pub workers: u32,
    pub reclaimers: u32,
    pub slots_per_worker: u32,
    pub heartbeat_interval_ms: u64,
    /// Added to the least lease timeout validation allows.
    pub lease_timeout_extra_ms: u64,
    pub scan_interval_ms: u64,
    pub poll_interval_ms: u64,
    /// Added to one network round trip.
    pub store_timeout_extra_ms: u64,
    /// Added to the slowest service call.
    pub effect_timeout_extra_ms: u64,
    pub retry_backoff_ms: u64,
    pub scan_page_size: u32,
    /// One heartbeat document per worker, or one lease document per task.
    pub heartbeat_mode: HeartbeatMode,
    pub latency_ms_min: u64,
    pub latency_ms_spread: u64,
    pub services: Vec<ServiceParams>,
    pub tasks: u32,
    pub arrival_window_ms: u64,
    /// Each step names service `index % services.len()`; a by_resource
    /// service's repeats are dropped (it serves one step per task).
    pub steps: Vec<usize>,
    /// Times the step list runs per task; 1 when a step's service
    /// deduplicates by resource.
    pub repeat_steps: u32,
    pub faults: FaultParams,
}

impl ScenarioParams {
    /// The scenario these knobs describe; valid by construction.
    pub fn scenario(&self) -> Scenario {
        let latency_ms_max = self.latency_ms_min + self.latency_ms_spread;
        let round_trip_ms = 2 * latency_ms_max;
        let store_timeout_ms = round_trip_ms + 1 + self.store_timeout_extra_ms;
        let slowest_call_ms = self
            .services
            .iter()
            .map(|s| s.work_ms_min + s.work_ms_spread + round_trip_ms)
            .max()
            .unwrap_or(round_trip_ms);
        // Self-fencing must leave room for a renewal that times out once,
        // however far clocks drift (see ProtocolConfig::self_fence_after_ms):
        // lease - latency - drift margin - 1 > heartbeat + store timeout + round trip.
        let renew_ms = self.heartbeat_interval_ms + store_timeout_ms + round_trip_ms;
        let drift_ppm = self.faults.max_drift_ppm();
        assert!(drift_ppm < 100_000, "drift over 10% cannot be safe");
        let fences_after = |lease_ms: u64| {
            let drift_ms = (lease_ms * 2 * drift_ppm).div_ceil(1_000_000);
            lease_ms
                .saturating_sub(latency_ms_max)
                .saturating_sub(drift_ms)
                .saturating_sub(1)
        };
        // The least lease that works: at most 25% over the no-drift bound.
        let mut lease_timeout_ms = renew_ms + latency_ms_max + 2;
        let lease_bound_ms = lease_timeout_ms + lease_timeout_ms / 4 + 2;
        while fences_after(lease_timeout_ms) <= renew_ms {
            lease_timeout_ms += 1;
            assert!(
                lease_timeout_ms <= lease_bound_ms,
                "no lease fits drift {drift_ppm}"
            );
        }
        lease_timeout_ms += self.lease_timeout_extra_ms;
        let services: Vec<ServiceSection> = self
            .services
            .iter()
            .enumerate()
            .map(|(i, s)| ServiceSection {
                name: format!("service-{i}"),
                dedup: s.dedup,
                fencing: s.fencing,
                work_ms_min: s.work_ms_min,
                work_ms_max: s.work_ms_min + s.work_ms_spread,
            })
            .collect();
        // A by_resource service serves one step of a task (validation says
        // why): its later steps are dropped. The first step always stays.
        let mut steps: Vec<String> = Vec::new();
        let mut by_resource_step = false;
        for i in &self.steps {
            let service = &services[i % services.len()];
            let by_resource = service.dedup == Dedup::ByResource;
            if !(by_resource && steps.contains(&service.name)) {
                steps.push(service.name.clone());
                by_resource_step |= by_resource;
            }
        }
        Scenario {
            name: "proptest".to_string(),
            story: "generated by leasehold::strategies".to_string(),
            fleet: Fleet {
                workers: self.workers,
                reclaimers: self.reclaimers,
                slots_per_worker: self.slots_per_worker,
                worker_ids: None,
                reclaimer_ids: None,
            },
            protocol: ProtocolSection {
                heartbeat_interval_ms: self.heartbeat_interval_ms,
                lease_timeout_ms,
                scan_interval_ms: self.scan_interval_ms,
                poll_interval_ms: self.poll_interval_ms,
                idle_poll_max_ms: None,
                store_timeout_ms,
                effect_timeout_ms: slowest_call_ms + 1 + self.effect_timeout_extra_ms,
                retry_backoff_ms: self.retry_backoff_ms,
                scan_page_size: self.scan_page_size,
                // Only the planted bug reclaimer-own-ttl reads it: a lease
                // that differs from the workers' own.
                default_lease_timeout_ms: lease_timeout_ms / 2 + 1,
                heartbeat_mode: self.heartbeat_mode,
            },
            network: NetworkSection {
                latency_ms_min: self.latency_ms_min,
                latency_ms_max,
            },
            services,
            tasks: TasksSection {
                count: self.tasks,
                arrival_window_ms: self.arrival_window_ms,
                steps,
                repeat_steps: if by_resource_step {
                    1
                } else {
                    self.repeat_steps
                },
                only: None,
            },
            faults: self.faults.section(self.workers, self.reclaimers),
            limits: LimitsSection::default(),
            expected_violations: Vec::new(),
        }
    }

    /// The scenario, validated, with its JSON as the source text (so a
    /// failing case prints a file that `leasehold run` accepts).
    pub fn valid_scenario(&self) -> ValidScenario {
        self.scenario()
            .into_valid()
            .unwrap_or_else(|e| panic!("strategies made an invalid scenario ({e}) from {self:?}"))
    }
}

/// One service: deduplicating (by key or by resource) unless the bounds
/// allow non-idempotent services.
pub fn service(bounds: ScenarioBounds) -> impl Strategy<Value = ServiceParams> {
    let dedup = if bounds.allow_non_idempotent_services {
        prop_oneof![
            Just(Dedup::ByKey),
            Just(Dedup::ByResource),
            Just(Dedup::None)
        ]
        .boxed()
    } else {
        prop_oneof![Just(Dedup::ByKey), Just(Dedup::ByResource)].boxed()
    };
    (dedup, any::<bool>(), 0..=50u64, 0..=100u64).prop_map(
        |(dedup, fencing, work_ms_min, work_ms_spread)| ServiceParams {
            dedup,
            fencing,
            work_ms_min,
            work_ms_spread,
        },
    )
}

/// A probability range `[lo, hi]` with `hi <= max_ppm` parts per million.
fn probability_range(max_ppm: u32) -> impl Strategy<Value = Range<f64>> {
    (0..=max_ppm, 0..=max_ppm).prop_map(move |(a, b)| {
        let (lo, hi) = (a.min(b), a.max(b));
        [f64::from(lo) / 1e6, f64::from(hi) / 1e6]
    })
}

/// A range `[lo, hi]` within `min..=max`.
fn u64_range(min: u64, max: u64) -> impl Strategy<Value = Range<u64>> {
    (min..=max, min..=max).prop_map(|(a, b)| [a.min(b), a.max(b)])
}

fn rate_range(max_per_minute: u32) -> impl Strategy<Value = Range<f64>> {
    (0..=max_per_minute * 10, 0..=max_per_minute * 10)
        .prop_map(|(a, b)| [f64::from(a.min(b)) / 10.0, f64::from(a.max(b)) / 10.0])
}

fn share() -> impl Strategy<Value = f64> {
    (0..=100u32).prop_map(|p| f64::from(p) / 100.0)
}

fn link() -> impl Strategy<Value = Link> {
    prop_oneof![Just(Link::Store), Just(Link::Services)]
}

fn direction() -> impl Strategy<Value = Direction> {
    prop_oneof![
        Just(Direction::Both),
        Just(Direction::Outbound),
        Just(Direction::Inbound)
    ]
}

fn outage_mode() -> impl Strategy<Value = OutageMode> {
    prop_oneof![Just(OutageMode::Fail), Just(OutageMode::Timeout)]
}

/// One scheduled fault.
pub fn scheduled_fault() -> impl Strategy<Value = ScheduledParams> {
    prop_oneof![
        (0..1000u64, any::<u32>())
            .prop_map(|(at_permille, node)| ScheduledParams::Crash { at_permille, node }),
        (0..1000u64, any::<u32>(), 1..=5_000u64).prop_map(|(at_permille, node, duration_ms)| {
            ScheduledParams::Pause {
                at_permille,
                node,
                duration_ms,
            }
        }),
        (0..1000u64, any::<u32>(), link(), direction(), 1..=5_000u64).prop_map(
            |(at_permille, node, link, direction, duration_ms)| ScheduledParams::Partition {
                at_permille,
                node,
                link,
                direction,
                duration_ms,
            }
        ),
        (0..1000u64, 1..=5_000u64, outage_mode()).prop_map(|(at_permille, duration_ms, mode)| {
            ScheduledParams::StoreOutage {
                at_permille,
                duration_ms,
                mode,
            }
        }),
    ]
}

/// The whole `faults` section: a fault phase, restart delays, each kind of
/// fault switched on or off, and up to `bounds.max_scheduled_faults`
/// scheduled faults.
pub fn fault_settings(bounds: ScenarioBounds) -> impl Strategy<Value = FaultParams> {
    let p = bounds.max_fault_ppm;
    let k = bounds.fault_kinds;
    let crash = (probability_range(bounds.max_crash_ppm), any::<bool>()).prop_map(
        |(per_step, reclaimers)| CrashFaults {
            per_step,
            reclaimers,
        },
    );
    let pause = (probability_range(p), u64_range(1, 5_000), any::<bool>()).prop_map(
        |(per_step, duration_ms, reclaimers)| PauseFaults {
            per_step,
            duration_ms,
            reclaimers,
        },
    );
    let clock = (
        u64_range(0, 2_000),
        u64_range(0, bounds.max_drift_ppm),
        probability_range(p),
        0..=2_000u64,
    )
        .prop_map(
            |(skew_ms, drift_ppm, jump_per_step, jump_ms_max)| ClockFaults {
                skew_ms,
                drift_ppm,
                jump_per_step,
                jump_ms_max,
            },
        );
    let network = (
        (
            probability_range(p),
            probability_range(p),
            probability_range(p),
        ),
        u64_range(0, 2_000),
        rate_range(6),
        u64_range(1, 5_000),
        share(),
        any::<bool>(),
    )
        .prop_map(
            |(
                (loss, duplicate, delay),
                delay_ms,
                partitions_per_minute,
                partition_ms,
                one_way_share,
                reclaimers,
            )| {
                NetworkFaults {
                    loss,
                    duplicate,
                    delay,
                    delay_ms,
                    partitions_per_minute,
                    partition_ms,
                    one_way_share,
                    reclaimers,
                }
            },
        );
    let store = (
        rate_range(4),
        u64_range(1, 5_000),
        share(),
        (
            probability_range(p),
            probability_range(p),
            probability_range(p),
        ),
        u64_range(0, 2_000),
    )
        .prop_map(
            |(
                outages_per_minute,
                outage_ms,
                timeout_share,
                (failure, slow, ambiguous),
                slow_ms,
            )| {
                StoreFaults {
                    outages_per_minute,
                    outage_ms,
                    timeout_share,
                    failure,
                    slow,
                    slow_ms,
                    ambiguous,
                }
            },
        );
    let services = (
        (probability_range(p), probability_range(p)),
        (probability_range(p), probability_range(p)),
        u64_range(0, 2_000),
    )
        .prop_map(
            |((failure, slow), (ambiguous, hang), slow_ms)| ServiceFaults {
                failure,
                slow,
                slow_ms,
                ambiguous,
                hang,
            },
        );
    let window = (0..1000u64, 0..1000u64);
    let restarts = (
        proptest::option::of(window.clone()),
        1..=5_000u64,
        proptest::option::of(window),
        1..=100u32,
    )
        .prop_map(
            |(
                rolling_deploy_at_permille,
                rolling_interval_ms,
                mass_failure_at_permille,
                mass_failure_share_percent,
            )| {
                RestartParams {
                    rolling_deploy_at_permille,
                    rolling_interval_ms,
                    mass_failure_at_permille,
                    mass_failure_share_percent,
                }
            },
        );
    (
        (1..=20_000u64, any::<bool>(), 1..=2_000u64, 0..=3_000u64),
        (
            maybe(k.crash, crash),
            maybe(k.pause, pause),
            maybe(k.clock, clock),
        ),
        (
            maybe(k.network, network),
            maybe(k.store, store),
            maybe(k.services, services),
            maybe(k.restarts, restarts),
        ),
        prop::collection::vec(
            scheduled_fault(),
            0..=if k.scheduled {
                bounds.max_scheduled_faults
            } else {
                0
            },
        ),
        // Tenths of an event a minute: a float that survives its JSON.
        prop::option::of(
            (0..=60u32, 0..=60u32, any::<bool>()).prop_map(|(a, b, reclaimers)| EdgeFaults {
                per_minute: [f64::from(a.min(b)) / 10.0, f64::from(a.max(b)) / 10.0],
                reclaimers,
            }),
        ),
    )
        .prop_map(
            |(
                (fault_phase_ms, swarm, restart_delay_ms_min, restart_delay_ms_spread),
                (crash, pause, clock),
                (network, store, services, restarts),
                scheduled,
                edges,
            )| FaultParams {
                edges,
                fault_phase_ms,
                swarm,
                restart_delay_ms_min,
                restart_delay_ms_spread,
                crash,
                pause,
                clock,
                network,
                store,
                services,
                restarts,
                scheduled,
            },
        )
}

/// Scenario knobs within `bounds`.
pub fn scenario_params(bounds: ScenarioBounds) -> impl Strategy<Value = ScenarioParams> {
    assert!(bounds.max_workers >= 1 && bounds.max_reclaimers >= 1);
    assert!(bounds.max_slots_per_worker >= 1 && bounds.max_tasks >= 1);
    assert!(bounds.max_services >= 1 && bounds.max_steps >= 1);
    let fleet = (
        1..=bounds.max_workers,
        1..=bounds.max_reclaimers,
        1..=bounds.max_slots_per_worker,
    );
    let timings = (
        20..=1_000u64,
        0..=2_000u64,
        20..=1_000u64,
        10..=500u64,
        0..=200u64,
        0..=500u64,
        1..=100u64,
        1..=50u32,
    );
    let heartbeat_mode = if bounds.task_heartbeat_mode {
        prop_oneof![Just(HeartbeatMode::Worker), Just(HeartbeatMode::Task)].boxed()
    } else {
        Just(HeartbeatMode::Worker).boxed()
    };
    let network = (0..=5u64, 0..=10u64, heartbeat_mode);
    let work = (
        prop::collection::vec(service(bounds), 1..=bounds.max_services),
        1..=bounds.max_tasks,
        0..=3_000u64,
        prop::collection::vec(0..bounds.max_services, 1..=bounds.max_steps),
        1..=bounds.max_repeat_steps,
    );
    (fleet, timings, network, work, fault_settings(bounds)).prop_map(
        |(
            (workers, reclaimers, slots_per_worker),
            (
                heartbeat_interval_ms,
                lease_timeout_extra_ms,
                scan_interval_ms,
                poll_interval_ms,
                store_timeout_extra_ms,
                effect_timeout_extra_ms,
                retry_backoff_ms,
                scan_page_size,
            ),
            (latency_ms_min, latency_ms_spread, heartbeat_mode),
            (services, tasks, arrival_window_ms, steps, repeat_steps),
            faults,
        )| ScenarioParams {
            workers,
            reclaimers,
            slots_per_worker,
            heartbeat_interval_ms,
            lease_timeout_extra_ms,
            scan_interval_ms,
            poll_interval_ms,
            store_timeout_extra_ms,
            effect_timeout_extra_ms,
            retry_backoff_ms,
            scan_page_size,
            heartbeat_mode,
            latency_ms_min,
            latency_ms_spread,
            services,
            tasks,
            arrival_window_ms,
            steps,
            repeat_steps,
            faults,
        },
    )
}

/// Valid scenarios within `bounds`.
pub fn scenario(bounds: ScenarioBounds) -> impl Strategy<Value = ValidScenario> {
    scenario_params(bounds).prop_map(|p| p.valid_scenario())
}

/// Any seed.
pub fn seed() -> impl Strategy<Value = u64> {
    any::<u64>()
}

/// A seed range of 1 to `max_len` seeds.
pub fn seed_range(max_len: u64) -> impl Strategy<Value = SeedRange> {
    assert!(max_len >= 1);
    (0..=u64::MAX - max_len, 1..=max_len).prop_map(|(first, len)| SeedRange {
        first,
        last: first + (len - 1),
    })
}

/// Any variant, the correct protocol included.
pub fn variant() -> impl Strategy<Value = Variant> {
    prop::sample::select(Variant::all().collect::<Vec<_>>())
}

/// Any planted bug (every variant but `correct`).
pub fn planted_bug() -> impl Strategy<Value = Variant> {
    prop::sample::select(
        Variant::all()
            .filter(|v| *v != Variant::Correct)
            .collect::<Vec<_>>(),
    )
}
