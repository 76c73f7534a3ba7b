//! `leasehold chart`: bad input exits 2 with one line naming the flag, and a
//! real chart renders PNG and SVG with the bundled font.

mod common;
use common::{assert_bad_input, leasehold};
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasehold-chart-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn unknown_kind_exits_2_naming_kind() {
    let dir = scratch("kind");
    let out = leasehold(&["chart", "latency", "--out", dir.to_str().unwrap()]);
    assert_bad_input(&out, &["KIND"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("store-load"));
}

#[test]
fn bad_format_exits_2_naming_format() {
    let dir = scratch("format");
    let out = leasehold(&[
        "chart",
        "load",
        "--out",
        dir.to_str().unwrap(),
        "--format",
        "png,gif",
    ]);
    assert_bad_input(&out, &["--format"]);
}

#[test]
fn unwritable_out_exits_2_naming_out() {
    // A path below a regular file can never be a directory.
    let file = scratch("file");
    std::fs::write(&file, b"not a directory").unwrap();
    let out = leasehold(&[
        "chart",
        "load",
        "--out",
        file.join("charts").to_str().unwrap(),
    ]);
    assert_bad_input(&out, &["--out"]);
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn missing_out_exits_2() {
    let out = leasehold(&["chart", "load"]);
    assert_bad_input(&out, &["--out"]);
}

#[test]
fn detection_chart_renders_png_svg_and_csv() {
    let dir = scratch("detection");
    let out = leasehold(&["chart", "detection", "--out", dir.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("p99_s"), "no table printed: {stdout}");
    assert!(stdout.contains("(wall time)"), "no time printed: {stdout}");
    let png = std::fs::read(dir.join("detection.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let svg = std::fs::read_to_string(dir.join("detection.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("heartbeat interval"));
    let csv = std::fs::read_to_string(dir.join("detection.csv")).unwrap();
    assert!(csv.starts_with("heartbeat_interval_s,lease_timeout_s,"));
    assert_eq!(csv.lines().count(), 1 + 6);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_live_points_exit_2_naming_the_field() {
    let dir = scratch("live-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let points = dir.join("points.json");
    let good = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/charts/live-points.json"
    ))
    .unwrap();
    std::fs::write(
        &points,
        good.replacen("\"workers\": 10", "\"workers\": 0", 1),
    )
    .unwrap();
    let out = leasehold(&[
        "chart",
        "load",
        "--out",
        dir.join("charts").to_str().unwrap(),
        "--live",
        points.to_str().unwrap(),
    ]);
    assert_bad_input(&out, &["--live", "points[0].workers"]);
    // Refused before any chart is drawn.
    assert!(!dir.join("charts").join("load.csv").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn live_points_on_a_chart_without_them_exit_2() {
    let dir = scratch("live-kind");
    let out = leasehold(&[
        "chart",
        "detection",
        "--out",
        dir.to_str().unwrap(),
        "--live",
        concat!(env!("CARGO_MANIFEST_DIR"), "/docs/charts/live-points.json"),
    ]);
    assert_bad_input(&out, &["--live", "load chart"]);
}
