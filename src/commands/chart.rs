//! `leasehold chart KIND`: sweep the chart's scenarios, print its table, write CSV and images.

use super::{EXIT_OK, EXIT_VIOLATION, bad_input};
use leasehold::charts::render::SweptChart;
use leasehold::charts::write_images;
use leasehold::charts::{
    ChartKind, Formats, chart_claims, chart_detection, chart_load, chart_store_load, live_points,
};
use std::path::Path;
use std::time::Instant;

pub fn chart(kind: &str, out: &Path, format: &str, live: Option<&Path>) -> u8 {
    let kinds: Vec<ChartKind> = match kind {
        "all" => ChartKind::ALL.to_vec(),
        name => match ChartKind::ALL.into_iter().find(|k| k.name() == name) {
            Some(k) => vec![k],
            None => {
                let known: Vec<&str> = ChartKind::ALL.iter().map(|k| k.name()).collect();
                return bad_input(format!(
                    "KIND: unknown chart \"{name}\"; known: {}, all",
                    known.join(", ")
                ));
            }
        },
    };
    let formats = match Formats::parse(format) {
        Ok(f) => f,
        Err(e) => return bad_input(format!("--format: {e}")),
    };
    // Read before any sweep: a bad points file costs no simulation.
    let live_points = match live {
        None => Vec::new(),
        Some(_) if !kinds.contains(&ChartKind::Load) => {
            return bad_input(format!(
                "--live: only the load chart draws live points, and KIND {kind} has none"
            ));
        }
        Some(path) => match live_points::read(path) {
            Ok(points) => points,
            Err(e) => return bad_input(format!("--live {}: {e}", path.display())),
        },
    };
    if let Err(e) = create_writable_dir(out) {
        return bad_input(format!("--out {}: {e}", out.display()));
    }
    // Wall time measures the tool; simulated time is inside each run.
    let started = Instant::now();
    let mut violations = Vec::new();
    for kind in &kinds {
        let chart_started = Instant::now();
        println!("== {} ==", kind.name());
        let result = match kind {
            ChartKind::Load => emit(&chart_load::sweep(live_points.clone()), out, kind, formats),
            ChartKind::StoreLoad => emit(&chart_store_load::sweep(), out, kind, formats),
            ChartKind::Claims => emit(&chart_claims::sweep(), out, kind, formats),
            ChartKind::Detection => emit(&chart_detection::sweep(), out, kind, formats),
        };
        match result {
            Ok(mut v) => violations.append(&mut v),
            Err(e) => return bad_input(format!("--out {}: {e}", out.display())),
        }
        println!(
            "{} done in {:.1} s",
            kind.name(),
            chart_started.elapsed().as_secs_f64()
        );
    }
    println!(
        "chart {kind}: {} chart(s) in {:.1} s (wall time)",
        kinds.len(),
        started.elapsed().as_secs_f64()
    );
    if violations.is_empty() {
        EXIT_OK
    } else {
        println!("VIOLATIONS in chart runs:");
        for v in &violations {
            println!("  {v}");
        }
        EXIT_VIOLATION
    }
}

/// Print the table, write CSV and images; returns the runs' violations.
fn emit<C: SweptChart>(
    chart: &C,
    out: &Path,
    kind: &ChartKind,
    formats: Formats,
) -> Result<Vec<String>, String> {
    let table = chart.table();
    print!("{}", table.to_text());
    let csv = out.join(format!("{}.csv", kind.name()));
    table
        .write_csv(&csv)
        .map_err(|e| format!("{}: {e}", csv.display()))?;
    let mut written = vec![csv];
    written.extend(write_images(chart, out, kind.name(), formats)?);
    for path in written {
        println!("wrote {}", path.display());
    }
    Ok(chart.violations())
}

/// Create `dir` if needed and prove we can write in it, before any sweep.
fn create_writable_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the directory: {e}"))?;
    super::writable_dir(dir)
}
