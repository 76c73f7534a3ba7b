//! Heartbeat writes per minute, counted from the store operations the
//! simulator applied, match the analytic expectation within 2%: workers x 60
//! / interval in worker mode, running tasks x 60 / interval in task mode.

use leasehold::charts::chart_load::{LoadPoint, measure_busy};
use leasehold_protocol::HeartbeatMode;

const TOLERANCE: f64 = 0.02;

fn check(p: &LoadPoint) {
    assert!(p.violations.is_empty(), "{:?}", p.violations);
    let capacity = (p.workers * p.tasks_per_worker) as f64;
    // Steady state: every slot busy through the whole window.
    assert!(
        (p.mean_running_tasks - capacity).abs() < 1e-6,
        "{} mode, {} workers x {}: {} tasks running on average, not {capacity}",
        p.mode.name(),
        p.workers,
        p.tasks_per_worker,
        p.mean_running_tasks
    );
    let heartbeating = match p.mode {
        HeartbeatMode::Worker => p.workers as f64,
        HeartbeatMode::Task => p.mean_running_tasks,
    };
    let expected = heartbeating * 60.0 / 5.0;
    assert_eq!(p.expected_per_min, expected);
    assert!(
        p.relative_error().abs() <= TOLERANCE,
        "{} mode, {} workers x {}: measured {:.1} heartbeat writes/min, expected {expected:.1}",
        p.mode.name(),
        p.workers,
        p.tasks_per_worker,
        p.heartbeat_writes_per_min
    );
}

#[test]
fn worker_mode_writes_workers_x_60_over_interval_whatever_the_tasks() {
    for (workers, tasks_per_worker) in [(1, 1), (1, 50), (10, 10), (100, 50), (1_000, 1)] {
        check(&measure_busy(
            workers,
            tasks_per_worker,
            HeartbeatMode::Worker,
            1,
        ));
    }
}

#[test]
fn task_mode_writes_running_tasks_x_60_over_interval() {
    for (workers, tasks_per_worker) in [(1, 1), (1, 50), (10, 10), (30, 50), (1_000, 1)] {
        check(&measure_busy(
            workers,
            tasks_per_worker,
            HeartbeatMode::Task,
            1,
        ));
    }
}

#[test]
fn ten_thousand_workers_in_worker_mode() {
    let p = measure_busy(10_000, 1, HeartbeatMode::Worker, 1);
    check(&p);
    assert_eq!(p.expected_per_min, 120_000.0);
}
