//! Protocol configuration, validated before any node runs.

use crate::variant::Variant;
use leasehold_interface::ServiceId;
use serde::{Deserialize, Serialize};

/// What a heartbeat keeps alive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeartbeatMode {
    /// One heartbeat document per worker incarnation: store load follows the
    /// fleet size.
    #[default]
    Worker,
    /// One lease document per running task, as task-level leasing systems
    /// do: store load follows the number of running tasks.
    Task,
}

impl HeartbeatMode {
    pub fn name(self) -> &'static str {
        match self {
            HeartbeatMode::Worker => "worker",
            HeartbeatMode::Task => "task",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProtocolConfig {
    /// A worker renews its heartbeat document this often.
    pub heartbeat_interval_ms: u64,
    /// A reclaimer declares a worker dead once its heartbeat document's version
    /// has not changed for this long on the reclaimer's own clock.
    pub lease_timeout_ms: u64,
    /// The lease a reclaimer would assume if a heartbeat document named none.
    /// Correct reclaimers always use the holder's recorded lease instead.
    pub default_lease_timeout_ms: u64,
    /// A reclaimer scans heartbeat documents this often.
    pub scan_interval_ms: u64,
    /// An idle worker looks for pending tasks this often.
    pub poll_interval_ms: u64,
    /// After each poll that finds nothing, an idle worker doubles its wait,
    /// up to this; work found resets it to `poll_interval_ms`. Equal to
    /// `poll_interval_ms`: no backoff. A large idle fleet polling a shared
    /// store every second is itself a load (and a herd on every new task).
    pub idle_poll_max_ms: u64,
    /// A store request without a reply by then has an unknown outcome.
    pub store_timeout_ms: u64,
    /// An effect call without a reply by then is retried (same key).
    pub effect_timeout_ms: u64,
    /// Wait before retrying a failed call.
    pub retry_backoff_ms: u64,
    /// The network's worst one-way delay; part of the self-fencing margin.
    pub max_network_delay_ms: u64,
    /// The worst rate difference between any node's clock and true time.
    pub max_clock_drift_ppm: u64,
    /// Tasks a worker runs at once.
    pub slots_per_worker: u32,
    /// Step `i` of a task calls service `step_services[i % len]`.
    pub step_services: Vec<ServiceId>,
    /// Documents per scan page.
    pub scan_page_size: u32,
    /// Worker heartbeat documents, or one lease document per running task.
    pub heartbeat_mode: HeartbeatMode,
    pub variant: Variant,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The offending field, as named in scenario files.
    pub field: &'static str,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

fn err(field: &'static str, message: String) -> Result<(), ConfigError> {
    Err(ConfigError { field, message })
}

impl ProtocolConfig {
    /// How long after sending a heartbeat that landed a worker may keep acting.
    ///
    /// A reclaimer declares death no earlier than `lease_timeout` after it saw
    /// the new version, which is after the write landed, which is after it was
    /// sent. The worker stops `max_network_delay` early so its last message
    /// lands in time, and early by twice the drift bound over the lease in
    /// case its clock runs slow while the reclaimer's runs fast.
    pub fn self_fence_after_ms(&self) -> u64 {
        let drift_ms = (self.lease_timeout_ms * 2 * self.max_clock_drift_ppm).div_ceil(1_000_000);
        self.lease_timeout_ms
            .saturating_sub(self.max_network_delay_ms)
            .saturating_sub(drift_ms)
            .saturating_sub(1)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive: [(&'static str, u64); 7] = [
            ("heartbeat_interval_ms", self.heartbeat_interval_ms),
            ("lease_timeout_ms", self.lease_timeout_ms),
            ("scan_interval_ms", self.scan_interval_ms),
            ("poll_interval_ms", self.poll_interval_ms),
            ("store_timeout_ms", self.store_timeout_ms),
            ("effect_timeout_ms", self.effect_timeout_ms),
            ("retry_backoff_ms", self.retry_backoff_ms),
        ];
        for (field, value) in positive {
            if value == 0 {
                return err(field, "must be greater than 0".into());
            }
        }
        if self.idle_poll_max_ms < self.poll_interval_ms {
            return err(
                "idle_poll_max_ms",
                format!(
                    "{} ms is below poll_interval_ms ({} ms); backoff only lengthens the wait",
                    self.idle_poll_max_ms, self.poll_interval_ms
                ),
            );
        }
        if self.max_clock_drift_ppm >= 100_000 {
            return err(
                "max_clock_drift_ppm",
                format!(
                    "{} ppm is over 10%; leases cannot be safe",
                    self.max_clock_drift_ppm
                ),
            );
        }
        // A healthy worker must always be able to renew (one attempt that
        // times out, then a retry) before it would fence itself.
        let renew_ms =
            self.heartbeat_interval_ms + self.store_timeout_ms + 2 * self.max_network_delay_ms;
        let without_drift = ProtocolConfig {
            max_clock_drift_ppm: 0,
            ..self.clone()
        };
        if self.self_fence_after_ms() <= renew_ms && without_drift.self_fence_after_ms() > renew_ms
        {
            return err(
                "max_clock_drift_ppm",
                format!(
                    "a drift bound of {} ppm makes a {} ms lease unsafe: workers must stop {} ms early, leaving {} ms, \
                     less than heartbeat_interval_ms + store_timeout_ms + 2 x max_network_delay_ms = {} ms",
                    self.max_clock_drift_ppm,
                    self.lease_timeout_ms,
                    self.lease_timeout_ms - self.self_fence_after_ms(),
                    self.self_fence_after_ms(),
                    renew_ms
                ),
            );
        }
        if self.self_fence_after_ms() <= renew_ms {
            return err(
                "lease_timeout_ms",
                format!(
                    "{} ms leaves a self-fencing deadline of {} ms, which must exceed heartbeat_interval_ms + store_timeout_ms + 2 x max_network_delay_ms = {} ms (healthy workers would flap dead)",
                    self.lease_timeout_ms,
                    self.self_fence_after_ms(),
                    renew_ms
                ),
            );
        }
        if self.store_timeout_ms <= 2 * self.max_network_delay_ms {
            return err(
                "store_timeout_ms",
                format!(
                    "{} ms must exceed a round trip of 2 x max_network_delay_ms = {} ms",
                    self.store_timeout_ms,
                    2 * self.max_network_delay_ms
                ),
            );
        }
        if self.slots_per_worker == 0 || self.slots_per_worker > 1_024 {
            return err("slots_per_worker", "must be between 1 and 1024".into());
        }
        if self.step_services.is_empty() {
            return err("steps", "a task needs at least one step".into());
        }
        if self.scan_page_size == 0 || self.scan_page_size > 10_000 {
            return err("scan_page_size", "must be between 1 and 10000".into());
        }
        Ok(())
    }
}
