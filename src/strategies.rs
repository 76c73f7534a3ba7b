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
//! ```no_run
//! use leasehold::strategies::{ScenarioBounds, scenario, seed};
//! use proptest::prelude::*;
//!
//! proptest! {
//!     #[test]
//!     fn correct_protocol_holds(scn in scenario(ScenarioBounds::small()), seed in seed()) {
//!         let outcome = leasehold::simulate(&scn, seed, leasehold_protocol::Variant::Correct, None);
//!         prop_assert!(outcome.ok(), "{:?}", outcome.violations);
//!     }
//! }
//! ```
//!
//! Extension point for fault plans: faults today are the scenario's
//! `faults` section ([`FaultParams`], [`fault_settings`]). When scenario files
//! gain fault plans, add a `FaultPlanParams` strategy here, a field for it in
//! [`FaultParams`], and build it in [`FaultParams::section`]; every property
//! test that uses [`scenario`] then explores fault plans too.

use crate::scenario::{
    FaultsSection, Fleet, LimitsSection, NetworkSection, ProtocolSection, Scenario, ServiceSection,
    TasksSection, ValidScenario,
};
use crate::seeds::SeedRange;
use leasehold_protocol::Variant;
use leasehold_sim::Dedup;
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
    /// Crash chance per node step, in parts per million.
    pub max_crash_ppm: u32,
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
            max_crash_ppm: 20_000,
            allow_non_idempotent_services: false,
        }
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

/// The fault knobs a scenario has today (see the module's extension note).
#[derive(Clone, Debug, PartialEq)]
pub struct FaultParams {
    pub fault_phase_ms: u64,
    pub crash_ppm: u32,
    pub restart_delay_ms_min: u64,
    pub restart_delay_ms_spread: u64,
    pub crash_reclaimers: bool,
}

impl FaultParams {
    pub fn section(&self) -> FaultsSection {
        FaultsSection {
            fault_phase_ms: self.fault_phase_ms,
            crash_probability_per_step: f64::from(self.crash_ppm) / 1e6,
            restart_delay_ms_min: self.restart_delay_ms_min,
            restart_delay_ms_max: self.restart_delay_ms_min + self.restart_delay_ms_spread,
            crash_reclaimers: self.crash_reclaimers,
        }
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
    pub latency_ms_min: u64,
    pub latency_ms_spread: u64,
    pub services: Vec<ServiceParams>,
    pub tasks: u32,
    pub arrival_window_ms: u64,
    /// Each step names service `index % services.len()`; a by_resource
    /// service's repeats are dropped (it serves one step per task).
    pub steps: Vec<usize>,
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
        // Self-fencing must leave room for a renewal that times out once:
        // lease - latency - 1 > heartbeat + store timeout + round trip.
        let lease_timeout_ms = self.heartbeat_interval_ms
            + store_timeout_ms
            + round_trip_ms
            + latency_ms_max
            + 2
            + self.lease_timeout_extra_ms;
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
        for i in &self.steps {
            let service = &services[i % services.len()];
            let repeated = steps.contains(&service.name);
            if !(repeated && service.dedup == Dedup::ByResource) {
                steps.push(service.name.clone());
            }
        }
        Scenario {
            name: "proptest".to_string(),
            story: "generated by leasehold::strategies".to_string(),
            fleet: Fleet {
                workers: self.workers,
                reclaimers: self.reclaimers,
                slots_per_worker: self.slots_per_worker,
            },
            protocol: ProtocolSection {
                heartbeat_interval_ms: self.heartbeat_interval_ms,
                lease_timeout_ms,
                scan_interval_ms: self.scan_interval_ms,
                poll_interval_ms: self.poll_interval_ms,
                store_timeout_ms,
                effect_timeout_ms: slowest_call_ms + 1 + self.effect_timeout_extra_ms,
                retry_backoff_ms: self.retry_backoff_ms,
                scan_page_size: self.scan_page_size,
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
            },
            faults: self.faults.section(),
            limits: LimitsSection::default(),
        }
    }

    /// The scenario, validated, with its JSON as the source text (so a
    /// failing case prints a file that `leasehold run` accepts).
    pub fn valid_scenario(&self) -> ValidScenario {
        let scenario = self.scenario();
        let source = serde_json::to_string_pretty(&scenario).expect("scenarios always serialise");
        scenario
            .validate(source)
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

/// Fault settings: a fault phase, a crash chance and restart delays.
pub fn fault_settings(bounds: ScenarioBounds) -> impl Strategy<Value = FaultParams> {
    (
        0..=20_000u64,
        0..=bounds.max_crash_ppm,
        1..=2_000u64,
        0..=3_000u64,
        any::<bool>(),
    )
        .prop_map(
            |(
                fault_phase_ms,
                crash_ppm,
                restart_delay_ms_min,
                restart_delay_ms_spread,
                crash_reclaimers,
            )| {
                FaultParams {
                    fault_phase_ms,
                    crash_ppm,
                    restart_delay_ms_min,
                    restart_delay_ms_spread,
                    crash_reclaimers,
                }
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
    let network = (0..=5u64, 0..=10u64);
    let work = (
        prop::collection::vec(service(bounds), 1..=bounds.max_services),
        1..=bounds.max_tasks,
        0..=3_000u64,
        prop::collection::vec(0..bounds.max_services, 1..=bounds.max_steps),
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
            (latency_ms_min, latency_ms_spread),
            (services, tasks, arrival_window_ms, steps),
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
            latency_ms_min,
            latency_ms_spread,
            services,
            tasks,
            arrival_window_ms,
            steps,
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
