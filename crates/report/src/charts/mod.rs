//! `leasehold chart`: sweeps of real simulations, drawn with the analytic
//! expectation beside the measured points, written as PNG, SVG and CSV.
//!
//! Every number on a chart comes from the simulator's records (the store
//! operations it applied, its crash records); formulas only draw the dashed
//! expectation lines. The one exception is marked as such: the load chart
//! can overlay heartbeat load measured on real stores (`live_points`).

pub mod chart_claims;
pub mod chart_detection;
pub mod chart_load;
pub mod chart_store_load;
pub mod detection_meter;
pub mod fonts;
pub mod live_points;
pub mod load_window;
pub mod png;
pub mod render;
pub mod sweep_scenarios;
pub mod table;

use fonts::register_fonts;
use leasehold_check::Invariant;
use leasehold_run::run::RunOutcome;
use png::write_png;
use render::{ChartImage, HEIGHT_PX, WIDTH_PX, write_svg};
use std::path::{Path, PathBuf};

/// Chart runs are cut off at the end of their measurement window, so tasks
/// are left unfinished on purpose: every invariant but `no-lost-task` must
/// still hold.
pub fn safety_violations(outcome: &RunOutcome) -> Vec<String> {
    outcome
        .violations
        .iter()
        .filter(|v| v.invariant != Invariant::NoLostTask)
        .map(|v| {
            format!(
                "{} seed {}: {}: {}",
                outcome.scenario, outcome.seed, v.invariant, v.message
            )
        })
        .collect()
}

/// The kinds of chart, in the order `all` draws them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChartKind {
    Load,
    StoreLoad,
    Claims,
    Detection,
}

impl ChartKind {
    pub const ALL: [ChartKind; 4] = [
        ChartKind::Load,
        ChartKind::StoreLoad,
        ChartKind::Claims,
        ChartKind::Detection,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ChartKind::Load => "load",
            ChartKind::StoreLoad => "store-load",
            ChartKind::Claims => "claims",
            ChartKind::Detection => "detection",
        }
    }
}

/// Output formats for images; CSV is always written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Formats {
    pub png: bool,
    pub svg: bool,
}

impl Formats {
    /// `png,svg`, `png` or `svg`.
    pub fn parse(text: &str) -> Result<Formats, String> {
        let mut formats = Formats {
            png: false,
            svg: false,
        };
        for part in text.split(',').map(str::trim) {
            match part {
                "png" => formats.png = true,
                "svg" => formats.svg = true,
                other => {
                    return Err(format!(
                        "\"{other}\" is not an image format; use png, svg or png,svg"
                    ));
                }
            }
        }
        Ok(formats)
    }
}

/// Write `stem.png` and/or `stem.svg` into `dir`; returns the paths written.
pub fn write_images<C: ChartImage>(
    chart: &C,
    dir: &Path,
    stem: &str,
    formats: Formats,
) -> Result<Vec<PathBuf>, String> {
    register_fonts();
    let mut written = Vec::new();
    if formats.png {
        let path = dir.join(format!("{stem}.png"));
        write_png(chart, (WIDTH_PX, HEIGHT_PX), &path)?;
        written.push(path);
    }
    if formats.svg {
        let path = dir.join(format!("{stem}.svg"));
        write_svg(chart, (WIDTH_PX, HEIGHT_PX), &path)?;
        written.push(path);
    }
    Ok(written)
}
