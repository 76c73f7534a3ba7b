//! Heartbeat load measured on real stores, drawn over the load chart beside
//! the simulator's points: the chart's prediction held up against what a
//! SQLite or PostgreSQL store executed. The file is what
//! `scripts/live-vs-sim.py --points-out FILE` writes from `leasehold live`
//! runs; `leasehold chart load --live FILE` reads it.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// A points file is a few dozen lines; anything near this is not one.
const MAX_LIVE_POINTS_FILE_BYTES: u64 = 1 << 20;
/// More points than this would not be legible on the chart.
const MAX_LIVE_POINTS: usize = 64;
/// The fleet sizes the chart's x axis shows.
const WORKERS_MAX: u32 = 10_000;

/// One live run's heartbeat load, and the simulator's for the same fleet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LivePoint {
    /// The store's name as the legend shows it (`SQLite`, `PostgreSQL`).
    pub store: String,
    pub workers: u32,
    /// The live run's `--speed`.
    pub speed: u32,
    /// Heartbeat writes the real store executed, per minute of scenario time.
    pub heartbeat_writes_per_min: f64,
    /// The simulator's count for the same scenario (mean over its seeds).
    pub simulated_heartbeat_writes_per_min: f64,
    /// Every request the real store answered.
    pub store_requests: u64,
    pub simulated_store_requests: u64,
    /// The live run's verdict.
    pub ok: bool,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LivePointsFile {
    points: Vec<LivePoint>,
}

/// Read and check a points file; errors name the field (`points[2].workers`).
pub fn read(path: &Path) -> Result<Vec<LivePoint>, String> {
    let text = leasehold_scenario::input_file::read_bounded(path, MAX_LIVE_POINTS_FILE_BYTES)?;
    let value = leasehold_scenario::strict_json::parse_or(&text, |e| format!("not JSON: {e}"))?;
    let file: LivePointsFile = serde_path_to_error::deserialize(&value)
        .map_err(|e| format!("{}: {}", e.path(), e.inner()))?;
    leasehold_scenario::strict_json::check_shape(&value, &file).map_err(|e| e.to_string())?;
    if file.points.is_empty() {
        return Err("points: empty (the file holds no live run)".to_string());
    }
    if file.points.len() > MAX_LIVE_POINTS {
        return Err(format!(
            "points: {} of them, more than the {MAX_LIVE_POINTS} a chart can show",
            file.points.len()
        ));
    }
    for (i, p) in file.points.iter().enumerate() {
        let at = |field: &str, what: String| format!("points[{i}].{field}: {what}");
        if p.store.trim().is_empty() || p.store.chars().count() > 40 {
            return Err(at("store", "a name of 1 to 40 characters".to_string()));
        }
        if !(1..=WORKERS_MAX).contains(&p.workers) {
            return Err(at(
                "workers",
                format!("{} is not in 1..={WORKERS_MAX}", p.workers),
            ));
        }
        if !(1..=1000).contains(&p.speed) {
            return Err(at("speed", format!("{} is not in 1..=1000", p.speed)));
        }
        for (field, v) in [
            ("heartbeat_writes_per_min", p.heartbeat_writes_per_min),
            (
                "simulated_heartbeat_writes_per_min",
                p.simulated_heartbeat_writes_per_min,
            ),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(at(field, format!("{v} is not a positive rate")));
            }
        }
    }
    Ok(file.points)
}

impl LivePoint {
    /// How far the real store's heartbeat load is from the simulator's.
    pub fn heartbeat_diff_pct(&self) -> f64 {
        100.0 * (self.heartbeat_writes_per_min / self.simulated_heartbeat_writes_per_min - 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> Result<Vec<LivePoint>, String> {
        let dir =
            std::env::temp_dir().join(format!("leasehold-live-points-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{:x}.json", {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            text.hash(&mut h);
            h.finish()
        }));
        std::fs::write(&path, text).unwrap();
        let got = read(&path);
        std::fs::remove_file(&path).unwrap();
        got
    }

    const ONE: &str = r#"{"points":[{"store":"SQLite","workers":20,"speed":20,
        "heartbeat_writes_per_min":240.0,"simulated_heartbeat_writes_per_min":239.5,
        "store_requests":12477,"simulated_store_requests":12192,"ok":true}]}"#;

    #[test]
    fn the_committed_points_read() {
        let points = read(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/charts/live-points.json"
        )))
        .expect("docs/charts/live-points.json reads");
        assert!(points.iter().any(|p| p.store == "SQLite"));
        for p in &points {
            assert!(p.heartbeat_diff_pct().abs() < 10.0, "{p:?}");
        }
    }

    #[test]
    fn a_good_file_reads() {
        let points = read_text(ONE).unwrap();
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].workers, 20);
        assert!((points[0].heartbeat_diff_pct() - 0.2088).abs() < 0.01);
    }

    #[test]
    fn bad_files_are_refused_naming_the_field() {
        let cases = [
            (
                ONE.replace("\"workers\":20", "\"workers\":0"),
                "points[0].workers",
            ),
            (
                ONE.replace("\"speed\":20", "\"speed\":5000"),
                "points[0].speed",
            ),
            (
                ONE.replace(
                    "\"heartbeat_writes_per_min\":240.0",
                    "\"heartbeat_writes_per_min\":-1",
                ),
                "points[0].heartbeat_writes_per_min",
            ),
            (
                ONE.replace("\"store\":\"SQLite\"", "\"store\":\"\""),
                "points[0].store",
            ),
            (
                ONE.replace("\"ok\":true", "\"ok\":true,\"extra\":1"),
                "extra",
            ),
            (
                ONE.replace("\"ok\":true", "\"ok\":true,\"ok\":false"),
                "duplicate",
            ),
            (r#"{"points":[]}"#.to_string(), "points: empty"),
            ("{\"points\":[".to_string(), "not JSON"),
        ];
        for (text, expect) in cases {
            let e = read_text(&text).expect_err(&text);
            assert!(e.contains(expect), "{text}: {e}");
        }
    }
}
