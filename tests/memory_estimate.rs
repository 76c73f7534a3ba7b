//! The peak-memory estimate that `run`, `sweep`, `hunt`, `shrink`,
//! `replay`, `explain` and `export` refuse over-large runs by, held to the
//! peaks runs really reach: at three sizes, the estimate is above the
//! measured peak and not far above it. Measured, never timed: each size is
//! one `leasehold run --json`, whose `peak_rss_bytes` is the process's
//! peak resident set (`VmHWM`), the tool itself included.

mod common;
use common::{leasehold, root, stderr, stdout};
use leasehold::memory_estimate::run_peak_bytes;

/// friday-rush with `tasks` tasks, all arriving in its three minutes (the
/// backlog a fleet of 20 works through is the most memory per task), and
/// limits wide enough to finish them.
fn friday_rush_with(tasks: u32) -> (std::path::PathBuf, leasehold::ValidScenario) {
    let text = std::fs::read_to_string(root().join("scenarios/friday-rush.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["tasks"]["count"] = tasks.into();
    v["limits"] = serde_json::json!({ "max_sim_time_ms": 1_000_000_000u64 });
    let dir = std::env::temp_dir().join(format!("leasehold-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("friday-rush-{tasks}.json"));
    let text = serde_json::to_string_pretty(&v).unwrap();
    std::fs::write(&path, &text).unwrap();
    (path, leasehold::Scenario::parse(&text).unwrap())
}

#[cfg(target_os = "linux")]
#[test]
fn the_estimate_is_above_the_measured_peak_and_near_it_at_three_sizes() {
    const MIB: f64 = (1 << 20) as f64;
    for tasks in [10_000, 100_000, 300_000] {
        let (path, scn) = friday_rush_with(tasks);
        let o = leasehold(&["run", path.to_str().unwrap(), "--seed", "1", "--json"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        let measured = v["peak_rss_bytes"].as_u64().expect("peak RSS on Linux") as f64;
        let estimate = run_peak_bytes(&scn) as f64;
        eprintln!(
            "{tasks} tasks: measured {:.1} MiB, estimated {:.1} MiB",
            measured / MIB,
            estimate / MIB
        );
        assert!(
            estimate >= measured,
            "{tasks} tasks: estimated {:.1} MiB is below the measured {:.1} MiB",
            estimate / MIB,
            measured / MIB
        );
        // Above by at most half, plus the fixed terms (the tool, and the
        // bound on the faults a run records, which a short fault phase
        // does not reach).
        let slack = 1.5 * measured + 64.0 * MIB;
        assert!(
            estimate <= slack,
            "{tasks} tasks: estimated {:.1} MiB is far above the measured {:.1} MiB",
            estimate / MIB,
            measured / MIB
        );
    }
}

/// The refusal counts the runs a sweep holds at once.
#[test]
fn a_sweep_is_estimated_for_its_jobs() {
    let (path, scn) = friday_rush_with(1_000);
    let one = run_peak_bytes(&scn);
    let limit = format!("{}", one + one / 2);
    let p = path.to_str().unwrap();
    // One job fits; two at once do not.
    let o = leasehold(&[
        "sweep",
        p,
        "--seeds",
        "1..2",
        "--jobs",
        "2",
        "--max-memory",
        &limit,
    ]);
    common::assert_bad_input(&o, &["estimated peak memory", "2 runs at once"]);
    let o = leasehold(&["run", p, "--seed", "1", "--max-memory", &limit]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
