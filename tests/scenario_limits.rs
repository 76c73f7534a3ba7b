//! Hostile scenario values: every one is bad input (exit 2, one line naming
//! the field), never a panic, a wrapped sum or a silent default. Each case is
//! gc-pause-zombie with one edit, run by the debug binary.

mod common;
use common::{assert_bad_input, leasehold, stderr};
use serde_json::{Value, json};
use std::path::PathBuf;

const MAX: u64 = u64::MAX;

/// gc-pause-zombie with `edit` applied, written to a temp dir.
fn edited(name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let text = std::fs::read_to_string(common::root().join("scenarios/gc-pause-zombie.json"))
        .expect("scenario readable");
    let mut v: Value = serde_json::from_str(&text).unwrap();
    edit(&mut v);
    let dir = std::env::temp_dir().join(format!("leasehold-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    path
}

/// Run the edited scenario: exit 2, `field: ...` named, no panic, one line.
fn assert_rejected(name: &str, field: &str, edit: impl FnOnce(&mut Value)) {
    let path = edited(name, edit);
    let o = leasehold(&["run", path.to_str().unwrap(), "--seed", "1"]);
    assert_bad_input(&o, &[&format!("{field}: ")]);
    assert!(!stderr(&o).contains("overflow"), "{}", stderr(&o));
}

fn clock(skew_ms: Value) -> Value {
    json!({ "skew_ms": skew_ms, "drift_ppm": [0, 0], "jump_per_step": [0.0, 0.0], "jump_ms_max": 0 })
}

fn network(delay_ms: Value, partition_ms: Value) -> Value {
    json!({
        "loss": [0.0, 0.01], "duplicate": [0.0, 0.01], "delay": [0.0, 0.01],
        "delay_ms": delay_ms,
        "partitions_per_minute": [1.0, 2.0], "partition_ms": partition_ms,
        "one_way_share": 0.5, "reclaimers": false
    })
}

fn store(outage_ms: Value, slow_ms: Value, p: [f64; 3]) -> Value {
    json!({
        "outages_per_minute": [1.0, 2.0], "outage_ms": outage_ms, "timeout_share": 0.5,
        "failure": [0.0, p[0]], "slow": [0.0, p[1]], "slow_ms": slow_ms, "ambiguous": [0.0, p[2]]
    })
}

fn services(slow_ms: Value, p: [f64; 4]) -> Value {
    json!({
        "failure": [0.0, p[0]], "slow": [0.0, p[1]], "slow_ms": slow_ms,
        "ambiguous": [0.0, p[2]], "hang": [0.0, p[3]]
    })
}

macro_rules! rejected {
    ($($test:ident, $field:expr, |$v:ident| $edit:expr;)*) => {$(
        #[test]
        fn $test() {
            assert_rejected(stringify!($test), $field, |$v: &mut Value| {
                $edit;
            });
        }
    )*};
}

rejected! {
    // Huge times: each used to panic in the run (a false simulation-healthy
    // violation), panic the tool, or wrap into a pass.
    restart_delay_huge_narrow_range, "faults.restart_delay_ms[1]",
        |v| v["faults"]["restart_delay_ms"] = json!([MAX - 615, MAX]);
    pause_duration_huge, "faults.pause.duration_ms[1]",
        |v| v["faults"]["pause"]["duration_ms"] = json!([MAX - 10, MAX]);
    clock_skew_full_range, "faults.clock.skew_ms[1]",
        |v| v["faults"]["clock"] = clock(json!([0, MAX]));
    clock_skew_huge_narrow, "faults.clock.skew_ms[1]",
        |v| v["faults"]["clock"] = clock(json!([MAX - 1, MAX]));
    network_delay_huge, "faults.network.delay_ms[1]",
        |v| v["faults"]["network"] = network(json!([MAX - 10, MAX]), json!([1, 2]));
    network_partition_huge, "faults.network.partition_ms[1]",
        |v| v["faults"]["network"] = network(json!([1, 2]), json!([MAX - 10, MAX]));
    store_slow_huge, "faults.store.slow_ms[1]",
        |v| v["faults"]["store"] = store(json!([1, 2]), json!([MAX - 10, MAX]), [0.01; 3]);
    store_outage_huge, "faults.store.outage_ms[1]",
        |v| v["faults"]["store"] = store(json!([MAX - 10, MAX]), json!([1, 2]), [0.01; 3]);
    services_slow_huge, "faults.services.slow_ms[1]",
        |v| v["faults"]["services"] = services(json!([MAX - 10, MAX]), [0.01; 4]);
    rolling_interval_huge, "faults.restarts.rolling_interval_ms",
        |v| v["faults"]["restarts"] = json!({
            "rolling_deploy_at_ms": [1000, 2000], "rolling_interval_ms": MAX
        });
    scheduled_duration_huge, "faults.scheduled[0].duration_ms",
        |v| v["faults"]["scheduled"] = json!([
            { "kind": "pause", "at_ms": 1000, "node": "worker-1", "duration_ms": MAX }
        ]);
    heartbeat_interval_huge, "protocol.heartbeat_interval_ms",
        |v| v["protocol"]["heartbeat_interval_ms"] = json!(MAX);
    lease_timeout_huge, "protocol.lease_timeout_ms",
        |v| v["protocol"]["lease_timeout_ms"] = json!(MAX);
    scan_interval_huge, "protocol.scan_interval_ms",
        |v| v["protocol"]["scan_interval_ms"] = json!(MAX);
    poll_interval_huge, "protocol.poll_interval_ms",
        |v| v["protocol"]["poll_interval_ms"] = json!(MAX);
    idle_poll_max_huge, "protocol.idle_poll_max_ms",
        |v| v["protocol"]["idle_poll_max_ms"] = json!(MAX);
    store_timeout_huge, "protocol.store_timeout_ms",
        |v| v["protocol"]["store_timeout_ms"] = json!(MAX);
    effect_timeout_huge, "protocol.effect_timeout_ms",
        |v| v["protocol"]["effect_timeout_ms"] = json!(MAX);
    retry_backoff_huge, "protocol.retry_backoff_ms",
        |v| v["protocol"]["retry_backoff_ms"] = json!(MAX);
    default_lease_timeout_huge, "protocol.default_lease_timeout_ms",
        |v| v["protocol"]["default_lease_timeout_ms"] = json!(MAX);
    latency_huge_narrow, "network.latency_ms_min",
        |v| v["network"] = json!({ "latency_ms_min": MAX - 10, "latency_ms_max": MAX - 5 });
    work_ms_max_huge, "services[0].work_ms_max",
        |v| v["services"][0]["work_ms_max"] = json!(MAX);
    arrival_window_huge, "tasks.arrival_window_ms",
        |v| v["tasks"]["arrival_window_ms"] = json!(MAX);
    max_sim_time_huge, "limits.max_sim_time_ms",
        |v| v["limits"] = json!({ "max_sim_time_ms": MAX });
    liveness_slack_huge, "limits.liveness_slack_ms",
        |v| v["limits"] = json!({ "liveness_slack_ms": MAX });

    // Counts.
    max_events_huge, "limits.max_events",
        |v| v["limits"] = json!({ "max_events": MAX });
    repeat_steps_wraps, "tasks.repeat_steps",
        |v| {
            v["tasks"]["steps"] = json!(["payment", "dispatch"]);
            v["tasks"]["repeat_steps"] = json!(1u64 << 31);
        };
    // Each field within its limit, but 101 rounds of 100,000 steps with
    // 10^9 ms timeouts: the no-lost-task deadline would not fit in u64 µs.
    liveness_deadline_too_far, "tasks.count",
        |v| {
            v["fleet"]["workers"] = json!(1);
            v["fleet"]["slots_per_worker"] = json!(1);
            v["tasks"]["count"] = json!(100);
            v["tasks"]["steps"] = json!(["payment", "dispatch"]);
            v["tasks"]["repeat_steps"] = json!(50_000);
            v["protocol"]["effect_timeout_ms"] = json!(1_000_000_000);
            v["protocol"]["retry_backoff_ms"] = json!(1_000_000_000);
        };

    // Each field within its limit, but the run would stop before even the
    // earliest no-lost-task deadline: a correct protocol would "lose" tasks.
    arrival_after_the_run_stops, "limits.max_sim_time_ms",
        |v| v["tasks"]["arrival_window_ms"] = json!(1_000_000_000);
    lease_longer_than_the_run, "limits.max_sim_time_ms",
        |v| v["protocol"]["lease_timeout_ms"] = json!(1_000_000_000);

    // Lenient spellings and probabilities.
    node_leading_zero, "faults.scheduled[0].node",
        |v| v["faults"]["scheduled"] = json!([{ "kind": "crash", "at_ms": 1000, "node": "worker-01" }]);
    node_plus_sign, "faults.scheduled[0].node",
        |v| v["faults"]["scheduled"] = json!([{ "kind": "crash", "at_ms": 1000, "node": "worker-+1" }]);
    reclaimer_leading_zero, "faults.scheduled[0].node",
        |v| v["faults"]["scheduled"] = json!([{ "kind": "crash", "at_ms": 1000, "node": "reclaimer-00" }]);
    services_probabilities_over_one, "faults.services",
        |v| v["faults"]["services"] = services(json!([1, 2]), [0.5; 4]);
    store_probabilities_over_one, "faults.store",
        |v| v["faults"]["store"] = store(json!([1, 2]), json!([1, 2]), [0.4; 3]);
    store_and_network_share_a_leg, "faults.store",
        |v| {
            v["faults"]["network"] = json!({
                "loss": [0.0, 0.6], "duplicate": [0.0, 0.0], "delay": [0.0, 0.0],
                "delay_ms": [1, 2], "partitions_per_minute": [0.0, 0.0],
                "partition_ms": [1, 2], "one_way_share": 0.0, "reclaimers": false
            });
            v["faults"]["store"] = store(json!([1, 2]), json!([1, 2]), [0.0, 0.0, 0.6]);
        };
}

#[test]
fn limits_themselves_are_accepted() {
    // The largest allowed values still validate (and nothing overflows).
    // (A restart delay at the limit would put the earliest no-lost-task
    // deadline past a run of at most the limit: refused, see below.)
    let path = edited("at_the_limits", |v| {
        v["faults"]["restart_delay_ms"] = json!([999_000, 1_000_000]);
        v["faults"]["scheduled"] = json!([
            { "kind": "pause", "at_ms": 1000, "node": "worker-1", "duration_ms": 1_000_000_000u64 },
            { "kind": "crash", "at_ms": 1000, "node": "reclaimer-1" }
        ]);
        v["limits"] = json!({ "max_sim_time_ms": 1_000_000_000u64, "max_events": 1_000_000 });
    });
    let o = leasehold(&["run", path.to_str().unwrap(), "--seed", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!String::from_utf8_lossy(&o.stdout).contains("panicked"));
}
