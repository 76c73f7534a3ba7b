//! Scenario files: JSON, strictly parsed (unknown fields are errors), then
//! validated so that every impossible value is named before anything runs.

use crate::fault_model::{FaultsSection, Fleet as FaultFleet};
use crate::scenario_error::bad;
use leasehold_check::LivenessBound;
use leasehold_interface::ServiceId;
use leasehold_protocol::{HeartbeatMode, ProtocolConfig, Variant};
use leasehold_sim::{Dedup, ServiceSpec};
use serde::{Deserialize, Serialize};
use std::path::Path;

// Shared with the fault model; re-exported where scenario users look.
pub use crate::scenario_error::{MAX_DURATION_MS, ScenarioError, check_duration};

/// Bounds that keep one run within memory and time on a laptop.
pub const MAX_WORKERS: u32 = 100_000;
pub const MAX_RECLAIMERS: u32 = 64;
pub const MAX_TASKS: u32 = 10_000_000;
pub const MAX_STEPS: u32 = 100_000;
pub const MAX_SERVICES: usize = 64;

/// The largest `limits.max_events`: 10^10. The simulator numbers its events
/// and timers from a 2^40 (about 1.1 x 10^12) sequence space; a run stopped
/// at 10^10 events stays a hundred times below it.
pub const MAX_EVENT_LIMIT: u64 = 10_000_000_000;

/// The largest no-lost-task deadline (`max(fault_phase_ms, arrival_window_ms)`
/// plus the bound of `run::liveness_bound`): 10^14 ms, about 3,170 years. The
/// checker works it out in microseconds in `u64`, 10^17 at most this way.
pub const MAX_LIVENESS_DEADLINE_MS: u64 = 100_000_000_000_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// One line: the story this scenario tells.
    pub story: String,
    pub fleet: Fleet,
    pub protocol: ProtocolSection,
    pub network: NetworkSection,
    pub services: Vec<ServiceSection>,
    pub tasks: TasksSection,
    pub faults: FaultsSection,
    #[serde(default)]
    pub limits: LimitsSection,
    /// Invariants this scenario is *expected* to violate even with the correct
    /// protocol: it demonstrates a guarantee no lease protocol can give.
    #[serde(default)]
    pub expected_violations: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fleet {
    pub workers: u32,
    pub reclaimers: u32,
    pub slots_per_worker: u32,
    /// Identities of the workers (default `0..workers`). A worker's identity
    /// names it (`worker-7`) and picks its random streams, so a shrunk run
    /// that keeps workers 2 and 6 of ten still behaves like them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_ids: Option<Vec<u32>>,
    /// Identities of the reclaimers (default `0..reclaimers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaimer_ids: Option<Vec<u32>>,
}

impl Fleet {
    pub fn worker_ids(&self) -> Vec<u32> {
        self.worker_ids
            .clone()
            .unwrap_or_else(|| (0..self.workers).collect())
    }

    pub fn reclaimer_ids(&self) -> Vec<u32> {
        self.reclaimer_ids
            .clone()
            .unwrap_or_else(|| (0..self.reclaimers).collect())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolSection {
    pub heartbeat_interval_ms: u64,
    pub lease_timeout_ms: u64,
    pub scan_interval_ms: u64,
    pub poll_interval_ms: u64,
    /// The longest wait between polls of an idle worker that keeps finding
    /// nothing (doubling from `poll_interval_ms`). Default: no backoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_poll_max_ms: Option<u64>,
    pub store_timeout_ms: u64,
    pub effect_timeout_ms: u64,
    pub retry_backoff_ms: u64,
    pub scan_page_size: u32,
    /// The lease a reclaimer assumes for a document that names none (only a
    /// planted bug ever uses it). Default 15000.
    #[serde(default = "default_lease_timeout_ms")]
    pub default_lease_timeout_ms: u64,
    /// `"worker"` (one heartbeat document per worker, the default) or
    /// `"task"` (one lease document per running task).
    #[serde(default)]
    pub heartbeat_mode: HeartbeatMode,
}

impl ProtocolSection {
    /// The idle-poll cap in effect: `poll_interval_ms` unless set.
    pub fn idle_poll_max_ms(&self) -> u64 {
        self.idle_poll_max_ms.unwrap_or(self.poll_interval_ms)
    }
}

fn default_lease_timeout_ms() -> u64 {
    15_000
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    pub latency_ms_min: u64,
    pub latency_ms_max: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSection {
    pub name: String,
    pub dedup: Dedup,
    pub fencing: bool,
    pub work_ms_min: u64,
    pub work_ms_max: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksSection {
    pub count: u32,
    /// Tasks arrive uniformly at random over `[0, arrival_window_ms]`.
    pub arrival_window_ms: u64,
    /// Service name of each step, in order.
    pub steps: Vec<String>,
    /// The step list runs this many times per task (an email campaign is 50
    /// batches through one mailer). Default 1.
    #[serde(default = "one")]
    pub repeat_steps: u32,
    /// Keep only these tasks of the workload that `count` describes (indices
    /// in `0..count`, increasing); each keeps its arrival time. Written by
    /// `shrink`; absent means every task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Vec<u32>>,
}

fn one() -> u32 {
    1
}

impl TasksSection {
    /// Tasks that actually run.
    pub fn total(&self) -> u32 {
        self.only.as_ref().map_or(self.count, |o| o.len() as u32)
    }

    /// Steps per task, repeats included (saturating: validation keeps it at
    /// most [`MAX_STEPS`]).
    pub fn steps_per_task(&self) -> u32 {
        u32::try_from(self.steps.len())
            .unwrap_or(u32::MAX)
            .saturating_mul(self.repeat_steps)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsSection {
    /// Hard stop in simulated time.
    pub max_sim_time_ms: u64,
    /// Hard stop in processed events.
    pub max_events: u64,
    /// Extra time granted to the liveness bound.
    pub liveness_slack_ms: u64,
}

impl Default for LimitsSection {
    fn default() -> Self {
        LimitsSection {
            max_sim_time_ms: 6 * 3_600_000,
            max_events: 200_000_000,
            liveness_slack_ms: 10_000,
        }
    }
}

/// A scenario that passed validation, with everything derived from it.
#[derive(Clone, Debug)]
pub struct ValidScenario {
    pub scenario: Scenario,
    /// The file's exact text: traces embed it so a replay needs nothing else.
    pub source: String,
    pub step_services: Vec<ServiceId>,
    pub services: Vec<ServiceSpec>,
}

impl Scenario {
    pub fn load(path: &Path) -> Result<ValidScenario, ScenarioError> {
        // Callers put the path in front of every error.
        let text = crate::input_file::read_bounded(path, crate::input_file::MAX_FILE_BYTES)
            .map_err(|message| ScenarioError {
                field: String::new(),
                message,
            })?;
        Scenario::parse(&text)
    }

    pub fn parse(text: &str) -> Result<ValidScenario, ScenarioError> {
        // serde_json ends its text with the position, named once in front.
        let json_error = |e: serde_json::Error| ScenarioError {
            field: format!("line {} column {}", e.line(), e.column()),
            message: crate::strict_json::strip_position(&e),
        };
        let value: serde_json::Value = serde_json::from_str(text).map_err(json_error)?;
        if !value.is_object() {
            return bad(
                "",
                format!(
                    "expected a JSON object (a scenario), found {}",
                    crate::strict_json::kind(&value)
                ),
            );
        }
        let scenario: Scenario = match serde_json::from_str(text) {
            Ok(scenario) => scenario,
            Err(e) => {
                let located = json_error(e);
                // Read again from the parsed value to name the field: the
                // text reader knows the line, not the path, and says only
                // "expected value" for a number where a name belongs. (A key
                // given twice reads from the value, which kept the last: the
                // text reader's error then stands alone.)
                return Err(
                    match crate::strict_json::from_value_named::<Scenario>(&value) {
                        Err(named) => ScenarioError {
                            field: located.field,
                            message: named,
                        },
                        Ok(_) => located,
                    },
                );
            }
        };
        // serde's derive also reads an array by position and an enum tag by
        // its index: refuse what this file format never holds.
        crate::strict_json::check_shape(&value, &scenario).map_err(|e| ScenarioError {
            field: e.path,
            message: e.message,
        })?;
        let valid = scenario.validate(text.to_string())?;
        valid.scenario.check_stops_after_earliest_deadline()?;
        Ok(valid)
    }

    /// The scenario validated, with its own pretty JSON as the source text
    /// (for scenarios built in code).
    pub fn into_valid(self) -> Result<ValidScenario, ScenarioError> {
        let source = serde_json::to_string_pretty(&self).expect("scenarios serialise");
        self.validate(source)
    }

    pub fn validate(self, source: String) -> Result<ValidScenario, ScenarioError> {
        let s = &self;
        if s.name.trim().is_empty() {
            return bad("name", "must not be empty");
        }
        s.check_durations()?;
        if s.fleet.workers == 0 || s.fleet.workers > MAX_WORKERS {
            return bad(
                "fleet.workers",
                format!("{} is not between 1 and {MAX_WORKERS}", s.fleet.workers),
            );
        }
        if s.fleet.reclaimers == 0 || s.fleet.reclaimers > MAX_RECLAIMERS {
            return bad(
                "fleet.reclaimers",
                format!(
                    "{} is not between 1 and {MAX_RECLAIMERS}",
                    s.fleet.reclaimers
                ),
            );
        }
        for (field, ids, count) in [
            ("fleet.worker_ids", &s.fleet.worker_ids, s.fleet.workers),
            (
                "fleet.reclaimer_ids",
                &s.fleet.reclaimer_ids,
                s.fleet.reclaimers,
            ),
        ] {
            if let Some(ids) = ids {
                if ids.len() != count as usize {
                    return bad(field, format!("lists {} ids for {count} nodes", ids.len()));
                }
                if ids.windows(2).any(|w| w[0] >= w[1]) {
                    return bad(field, "ids must be strictly increasing");
                }
                if ids
                    .iter()
                    .any(|id| *id >= crate::fault_model::RECLAIMER_STREAM_BASE)
                {
                    return bad(field, "ids must be below 1048576");
                }
            }
        }
        if s.network.latency_ms_min > s.network.latency_ms_max {
            return bad(
                "network.latency_ms_min",
                format!(
                    "{} is above network.latency_ms_max {}",
                    s.network.latency_ms_min, s.network.latency_ms_max
                ),
            );
        }
        if s.network.latency_ms_max - s.network.latency_ms_min
            > crate::fault_model::MAX_DRAWN_SPAN_MS
        {
            return bad(
                "network.latency_ms_max",
                format!(
                    "latencies span more than {} ms, the widest range drawn per message",
                    crate::fault_model::MAX_DRAWN_SPAN_MS
                ),
            );
        }
        if s.services.is_empty() || s.services.len() > MAX_SERVICES {
            return bad(
                "services",
                format!("needs between 1 and {MAX_SERVICES} services"),
            );
        }
        let mut services = Vec::new();
        for (i, svc) in s.services.iter().enumerate() {
            let field = format!("services[{i}]");
            if svc.name.trim().is_empty() {
                return bad(format!("{field}.name"), "must not be empty");
            }
            if s.services[..i].iter().any(|o| o.name == svc.name) {
                return bad(
                    format!("{field}.name"),
                    format!("{:?} is defined twice", svc.name),
                );
            }
            if svc.work_ms_min > svc.work_ms_max {
                return bad(
                    format!("{field}.work_ms_min"),
                    format!(
                        "{} is above work_ms_max {}",
                        svc.work_ms_min, svc.work_ms_max
                    ),
                );
            }
            // u128: the rule must not wrap, whatever the fields hold.
            let round_trip_ms =
                u128::from(svc.work_ms_max) + 2 * u128::from(s.network.latency_ms_max);
            if u128::from(s.protocol.effect_timeout_ms) <= round_trip_ms {
                return bad(
                    "protocol.effect_timeout_ms",
                    format!(
                        "{} ms must exceed the slowest call to {} ({} ms work + 2 x {} ms network = {round_trip_ms} ms)",
                        s.protocol.effect_timeout_ms,
                        svc.name,
                        svc.work_ms_max,
                        s.network.latency_ms_max
                    ),
                );
            }
            services.push(ServiceSpec {
                name: svc.name.clone(),
                dedup: svc.dedup,
                fencing: svc.fencing,
                work_ms_min: svc.work_ms_min,
                work_ms_max: svc.work_ms_max,
            });
        }
        if s.tasks.count == 0 || s.tasks.count > MAX_TASKS {
            return bad(
                "tasks.count",
                format!("{} is not between 1 and {MAX_TASKS}", s.tasks.count),
            );
        }
        if s.tasks.steps.is_empty() || s.tasks.steps.len() > MAX_STEPS as usize {
            return bad(
                "tasks.steps",
                format!("needs between 1 and {MAX_STEPS} steps"),
            );
        }
        if let Some(only) = &s.tasks.only {
            if only.is_empty() {
                return bad("tasks.only", "must keep at least one task");
            }
            if only.windows(2).any(|w| w[0] >= w[1])
                || only.last().is_some_and(|l| *l >= s.tasks.count)
            {
                return bad(
                    "tasks.only",
                    format!(
                        "must be increasing indices below tasks.count {}",
                        s.tasks.count
                    ),
                );
            }
        }
        // u64: steps x repeats must not wrap into a small number.
        if s.tasks.repeat_steps == 0
            || s.tasks.steps.len() as u64 * u64::from(s.tasks.repeat_steps) > u64::from(MAX_STEPS)
        {
            return bad(
                "tasks.repeat_steps",
                format!("must be at least 1, with at most {MAX_STEPS} steps per task in all"),
            );
        }
        for (i, name) in s.expected_violations.iter().enumerate() {
            if leasehold_check::Invariant::from_name(name).is_none() {
                return bad(
                    format!("expected_violations[{i}]"),
                    format!("{name:?} is not an invariant"),
                );
            }
        }
        let mut step_services = Vec::new();
        for (i, name) in s.tasks.steps.iter().enumerate() {
            match s.services.iter().position(|svc| &svc.name == name) {
                Some(id) => step_services.push(ServiceId(id as u16)),
                None => {
                    return bad(
                        format!("tasks.steps[{i}]"),
                        format!("names service {name:?}, which is not in services"),
                    );
                }
            }
        }
        s.faults
            .validate(&FaultFleet::of(&s.fleet), s.limits.max_sim_time_ms)?;
        if s.limits.max_events == 0 {
            return bad("limits.max_events", "must be greater than 0");
        }
        if s.limits.max_events > MAX_EVENT_LIMIT {
            return bad(
                "limits.max_events",
                format!(
                    "{} is above the limit of {MAX_EVENT_LIMIT} events",
                    s.limits.max_events
                ),
            );
        }
        let cfg = self.protocol_config_with(step_services.clone(), Variant::Correct);
        if let Err(e) = cfg.validate() {
            let field = match e.field {
                "steps" => "tasks.steps".to_string(),
                "slots_per_worker" => "fleet.slots_per_worker".to_string(),
                "max_clock_drift_ppm" => "faults.clock.drift_ppm".to_string(),
                other => format!("protocol.{other}"),
            };
            return bad(field, e.message);
        }
        s.check_liveness_deadline()?;
        for (id, svc) in s.services.iter().enumerate() {
            let uses = step_services.iter().filter(|x| x.0 as usize == id).count() as u32
                * s.tasks.repeat_steps;
            if svc.dedup == Dedup::ByResource && uses > 1 {
                return bad(
                    format!("services[{id}].dedup"),
                    format!(
                        "\"by_resource\" deduplicates on the task alone, but {} is used by {uses} steps of each task: every step after the first would be swallowed (use \"by_key\")",
                        svc.name
                    ),
                );
            }
        }
        let one_round = step_services.clone();
        for _ in 1..s.tasks.repeat_steps {
            step_services.extend_from_slice(&one_round);
        }
        Ok(ValidScenario {
            scenario: self,
            source,
            step_services,
            services,
        })
    }

    /// Every time field outside `faults` (those are checked in
    /// [`FaultsSection::validate`]) against [`MAX_DURATION_MS`].
    fn check_durations(&self) -> Result<(), ScenarioError> {
        let p = &self.protocol;
        let mut fields: Vec<(String, u64)> = vec![
            (
                "protocol.heartbeat_interval_ms".into(),
                p.heartbeat_interval_ms,
            ),
            ("protocol.lease_timeout_ms".into(), p.lease_timeout_ms),
            ("protocol.scan_interval_ms".into(), p.scan_interval_ms),
            ("protocol.poll_interval_ms".into(), p.poll_interval_ms),
            (
                "protocol.idle_poll_max_ms".into(),
                p.idle_poll_max_ms.unwrap_or(0),
            ),
            ("protocol.store_timeout_ms".into(), p.store_timeout_ms),
            ("protocol.effect_timeout_ms".into(), p.effect_timeout_ms),
            ("protocol.retry_backoff_ms".into(), p.retry_backoff_ms),
            (
                "protocol.default_lease_timeout_ms".into(),
                p.default_lease_timeout_ms,
            ),
            ("network.latency_ms_min".into(), self.network.latency_ms_min),
            ("network.latency_ms_max".into(), self.network.latency_ms_max),
        ];
        for (i, svc) in self.services.iter().enumerate() {
            fields.push((format!("services[{i}].work_ms_min"), svc.work_ms_min));
            fields.push((format!("services[{i}].work_ms_max"), svc.work_ms_max));
        }
        fields.extend([
            (
                "tasks.arrival_window_ms".to_string(),
                self.tasks.arrival_window_ms,
            ),
            (
                "limits.max_sim_time_ms".to_string(),
                self.limits.max_sim_time_ms,
            ),
            (
                "limits.liveness_slack_ms".to_string(),
                self.limits.liveness_slack_ms,
            ),
        ]);
        for (field, value) in fields {
            check_duration(&field, value)?;
        }
        Ok(())
    }

    /// The no-lost-task deadline the checker will set (the bound of
    /// `run::liveness_bound`, from the later of the heal and the last
    /// arrival) must stay below [`MAX_LIVENESS_DEADLINE_MS`]. Every term is a
    /// bounded time field; only the number of rounds (tasks per slot) times
    /// the steps can make it large. Call after the time fields and the
    /// protocol rules are checked: the bound's own sums rely on them.
    fn check_liveness_deadline(&self) -> Result<(), ScenarioError> {
        let tasks = self.tasks.total();
        let (bound, deadline_us) = self.liveness_deadline_us(tasks);
        if deadline_us.is_none_or(|d| d > MAX_LIVENESS_DEADLINE_MS * 1_000) {
            return bad(
                "tasks.count",
                format!(
                    "{tasks} tasks on a capacity of {} (workers x slots_per_worker), at up to \
                     {} ms each, give a no-lost-task deadline above the limit of \
                     {MAX_LIVENESS_DEADLINE_MS} ms: use fewer tasks or steps, more slots, or \
                     shorter protocol timeouts",
                    bound.capacity, bound.per_task_ms
                ),
            );
        }
        Ok(())
    }

    /// The no-lost-task deadline of the worst case (every task still
    /// pending at the heal) must fall inside `limits.max_sim_time_ms`:
    /// otherwise the run may stop for its limit's sake while tasks are
    /// inside their bound, and prove nothing (a run that hits a limit anyway
    /// is reported cut short, never as a lost task). Checked for scenario
    /// files only: the charts build measurement windows in code that stop
    /// early on purpose.
    fn check_stops_after_earliest_deadline(&self) -> Result<(), ScenarioError> {
        let tasks = self.tasks.total();
        let (bound, worst_us) = self.liveness_deadline_us(tasks);
        let worst_us = worst_us.expect("below the worst case, checked in validation");
        if worst_us >= self.limits.max_sim_time_ms * 1_000 {
            return bad(
                "limits.max_sim_time_ms",
                format!(
                    "{} ms stops the run before its no-lost-task deadline ({} ms, for {tasks} \
                     tasks on {} slots at up to {} ms each, all pending when faults stop): \
                     raise it to at least {} ms, or use fewer tasks, more workers or slots, \
                     or shorter timeouts",
                    self.limits.max_sim_time_ms,
                    worst_us.div_ceil(1_000),
                    bound.capacity,
                    bound.per_task_ms,
                    worst_us.div_ceil(1_000) + 1
                ),
            );
        }
        Ok(())
    }

    /// The bound of `run::liveness_bound` and the no-lost-task deadline it
    /// gives the checker with `unfinished` tasks at the heal (counted from
    /// the later of the heal and the arrival window); `None` past `u64` µs.
    fn liveness_deadline_us(&self, unfinished: u32) -> (LivenessBound, Option<u64>) {
        let bound = liveness_bound(self);
        let start_ms = self.faults.fault_phase_ms.max(self.tasks.arrival_window_ms);
        (bound, bound.deadline_us(start_ms * 1_000, unfinished))
    }

    fn protocol_config_with(
        &self,
        step_services: Vec<ServiceId>,
        variant: Variant,
    ) -> ProtocolConfig {
        let p = &self.protocol;
        ProtocolConfig {
            heartbeat_interval_ms: p.heartbeat_interval_ms,
            lease_timeout_ms: p.lease_timeout_ms,
            default_lease_timeout_ms: p.default_lease_timeout_ms,
            scan_interval_ms: p.scan_interval_ms,
            poll_interval_ms: p.poll_interval_ms,
            idle_poll_max_ms: p.idle_poll_max_ms(),
            store_timeout_ms: p.store_timeout_ms,
            effect_timeout_ms: p.effect_timeout_ms,
            retry_backoff_ms: p.retry_backoff_ms,
            max_network_delay_ms: self.network.latency_ms_max,
            max_clock_drift_ppm: self.faults.max_drift_ppm(),
            slots_per_worker: self.fleet.slots_per_worker,
            step_services,
            scan_page_size: p.scan_page_size,
            heartbeat_mode: p.heartbeat_mode,
            variant,
        }
    }
}

impl ValidScenario {
    pub fn name(&self) -> &str {
        &self.scenario.name
    }

    pub fn fleet(&self) -> FaultFleet {
        FaultFleet::of(&self.scenario.fleet)
    }

    pub fn protocol_config(&self, variant: Variant) -> ProtocolConfig {
        self.scenario
            .protocol_config_with(self.step_services.clone(), variant)
    }
}

// The fault model's fleet is drawn from the scenario's: built here, so that
// the fault model needs nothing from this module.
impl FaultFleet {
    pub fn of(f: &Fleet) -> FaultFleet {
        FaultFleet {
            workers: f.workers,
            reclaimers: f.reclaimers,
            worker_ids: f.worker_ids(),
            reclaimer_ids: f.reclaimer_ids(),
        }
    }
}

/// The liveness bound, derived from the configuration (see docs/protocol.md).
/// Validation calls it too, on a scenario whose time fields it has bounded
/// (so these sums cannot wrap), to refuse a deadline past
/// [`MAX_LIVENESS_DEADLINE_MS`].
pub fn liveness_bound(s: &Scenario) -> LivenessBound {
    let p = &s.protocol;
    let steps = s.tasks.steps_per_task() as u64;
    LivenessBound {
        detect_ms: p.heartbeat_interval_ms
            + p.lease_timeout_ms
            + 2 * p.scan_interval_ms
            + s.faults.restart_delay_ms_max()
            + late_reply_ms(s)
            + 2 * p.store_timeout_ms,
        per_task_ms: p.idle_poll_max_ms()
            + 2 * p.store_timeout_ms
            + steps * (p.effect_timeout_ms + p.store_timeout_ms + p.retry_backoff_ms),
        capacity: s.fleet.workers * s.fleet.slots_per_worker,
        slack_ms: s.limits.liveness_slack_ms,
    }
}

/// The latest a reply sent in the fault phase can still arrive after it.
pub fn late_reply_ms(s: &Scenario) -> u64 {
    let f = &s.faults;
    [
        f.network.as_ref().map_or(0, |n| n.delay_ms[1]),
        f.store.as_ref().map_or(0, |x| x.slow_ms[1]),
        f.services.as_ref().map_or(0, |x| x.slow_ms[1]),
    ]
    .into_iter()
    .max()
    .unwrap_or(0)
}

/// A short fingerprint of a scenario file's exact text: results files carry
/// it so that `--resume` never mixes results of two different scenarios.
pub fn scenario_hash(scenario: &ValidScenario) -> String {
    format!(
        "{:016x}",
        twox_hash::XxHash3_64::oneshot(scenario.source.as_bytes())
    )
}
