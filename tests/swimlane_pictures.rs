//! The swimlane as it is drawn: markers on their lanes, a legend of what
//! happened that covers nothing, every lease bar labelled, every violation
//! drawn. Read from the SVG export (plotters writes one element a shape).

mod common;
use common::{leasehold, stderr};
use std::path::PathBuf;

const MINIMAL: &str = "scenarios/regressions/no-self-fencing.failure.json";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasehold-swim-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Export `file` as SVG; returns its text and the spans count `export`
/// reports.
fn svg_of(file: &str, dir: &std::path::Path) -> (String, usize) {
    let out = dir.join("lanes.svg");
    let o = leasehold(&[
        "export",
        file,
        "--format",
        "svg",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    let spans = said
        .split('(')
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    (std::fs::read_to_string(&out).unwrap(), spans)
}

/// Every element `<name ...>` of the SVG: its attributes, and its text
/// content up to the next tag.
fn elements<'a>(svg: &'a str, name: &str) -> Vec<(&'a str, &'a str)> {
    let open = format!("<{name} ");
    svg.match_indices(&open)
        .map(|(at, _)| {
            let rest = &svg[at..];
            let end = rest.find('>').unwrap();
            let body = &rest[end + 1..];
            let content = body[..body.find('<').unwrap_or(body.len())].trim();
            (&rest[..end], content)
        })
        .collect()
}

fn attr(tag: &str, name: &str) -> Option<f64> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    tag[at..].split('"').next()?.parse().ok()
}

fn attr_text<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    tag[at..].split('"').next()
}

/// The points of a `<polygon>` or `<polyline>`.
fn points(tag: &str) -> Vec<(f64, f64)> {
    attr_text(tag, "points")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| {
            let (x, y) = p.split_once(',')?;
            Some((x.parse().ok()?, y.parse().ok()?))
        })
        .collect()
}

/// Lane labels: (name, y of the lane's centre).
fn lanes(svg: &str) -> Vec<(String, f64)> {
    elements(svg, "text")
        .into_iter()
        .filter(|(tag, content)| {
            attr_text(tag, "text-anchor") == Some("end")
                && (content.starts_with("worker-") || content.starts_with("reclaimer-"))
        })
        .map(|(tag, content)| (content.to_string(), attr(tag, "y").unwrap()))
        .collect()
}

/// The legend's frame: a rectangle drawn black and not filled.
fn legend_box(svg: &str) -> (f64, f64, f64, f64) {
    let (tag, _) = elements(svg, "rect")
        .into_iter()
        .find(|(tag, _)| {
            attr_text(tag, "stroke") == Some("#000000") && attr_text(tag, "fill") == Some("none")
        })
        .expect("a legend frame");
    let (x, y) = (attr(tag, "x").unwrap(), attr(tag, "y").unwrap());
    (
        x,
        y,
        x + attr(tag, "width").unwrap(),
        y + attr(tag, "height").unwrap(),
    )
}

fn legend_entries(svg: &str) -> Vec<String> {
    let (x0, y0, x1, y1) = legend_box(svg);
    elements(svg, "text")
        .into_iter()
        .filter(|(tag, _)| {
            let (x, y) = (attr(tag, "x").unwrap(), attr(tag, "y").unwrap());
            (x0..=x1).contains(&x) && (y0..=y1).contains(&y)
        })
        .map(|(_, content)| content.to_string())
        .collect()
}

#[test]
fn the_legend_lists_only_what_happened() {
    let dir = scratch("legend");
    let (svg, _) = svg_of(MINIMAL, &dir);
    let entries = legend_entries(&svg);
    // The minimal zombie run: a pause, a death declared, a restart; no
    // crash, no partition.
    assert!(entries.iter().any(|e| e == "pause"), "{entries:?}");
    for absent in ["crash", "partition"] {
        assert!(!entries.iter().any(|e| e == absent), "{entries:?}");
    }
}

#[test]
fn declared_dead_markers_sit_on_their_lanes() {
    let dir = scratch("dead");
    let (svg, _) = svg_of(MINIMAL, &dir);
    let lanes = lanes(&svg);
    let (_, ly0, _, ly1) = legend_box(&svg);
    let triangles: Vec<(f64, f64)> = elements(&svg, "polygon")
        .into_iter()
        .filter(|(tag, _)| attr_text(tag, "fill") == Some("#800080"))
        .map(|(tag, _)| {
            let p = points(tag);
            let n = p.len() as f64;
            (
                p.iter().map(|q| q.0).sum::<f64>() / n,
                p.iter().map(|q| q.1).sum::<f64>() / n,
            )
        })
        // Drawn markers, not the legend's sample.
        .filter(|(_, y)| !(ly0..=ly1).contains(y))
        .collect();
    assert!(!triangles.is_empty());
    for (x, y) in triangles {
        let nearest = lanes
            .iter()
            .map(|(_, ly)| (ly - y).abs())
            .fold(f64::INFINITY, f64::min);
        assert!(
            nearest <= 8.0,
            "a marker at ({x}, {y}) is {nearest} px off its lane: {lanes:?}"
        );
    }
}

#[test]
fn every_lease_bar_is_labelled() {
    let dir = scratch("labels");
    let (svg, spans) = svg_of(MINIMAL, &dir);
    let labels = elements(&svg, "text")
        .into_iter()
        .filter(|(_, c)| c.starts_with("task ") && c.contains(" e"))
        .count();
    assert_eq!(labels, spans, "one label per lease bar");
}

#[test]
fn every_violation_is_drawn_and_the_legend_covers_no_lane() {
    let dir = scratch("violations");
    let trace = dir.join("t.jsonl");
    let o = leasehold(&[
        "run",
        "scenarios/gc-pause-zombie.json",
        "--seed",
        "2",
        "--variant",
        "no-idempotency-key",
        "--json",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let times: std::collections::BTreeSet<u64> = v["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["time_ms"].as_u64().unwrap())
        .collect();
    assert!(times.len() > 1, "violations at several times");
    let (svg, _) = svg_of(trace.to_str().unwrap(), &dir);
    let lanes = lanes(&svg);
    let (top, bottom) = lanes
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (_, y)| {
            (a.min(*y), b.max(*y))
        });
    let red_lines = elements(&svg, "polyline")
        .into_iter()
        .filter(|(tag, _)| attr_text(tag, "stroke") == Some("#FF0000"))
        .filter(|(tag, _)| {
            let p = points(tag);
            // Vertical, across every lane.
            p.len() == 2
                && p[0].0 == p[1].0
                && p[0].1.max(p[1].1) >= bottom
                && p[0].1.min(p[1].1) <= top
        })
        .count();
    assert_eq!(red_lines, times.len(), "one line per violation time");
    // The legend stands beside the time axis, not over it.
    let (lx0, _, _, _) = legend_box(&svg);
    let ticks_right = elements(&svg, "text")
        .into_iter()
        .filter(|(tag, c)| {
            attr_text(tag, "text-anchor") == Some("middle") && c.parse::<f64>().is_ok()
        })
        .map(|(tag, _)| attr(tag, "x").unwrap())
        .fold(f64::NEG_INFINITY, f64::max);
    assert!(
        lx0 > ticks_right,
        "the legend at x {lx0} covers the plot (ticks to {ticks_right})"
    );
}
