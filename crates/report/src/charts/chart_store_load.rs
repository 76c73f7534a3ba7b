//! Every store operation per minute against fleet size, by kind (worker
//! heartbeat mode, a steady stream of short tasks, no faults).

use super::load_window::LoadWindow;
use super::safety_violations;
use super::sweep_scenarios::steady_stream;
use leasehold_protocol::Variant;
use leasehold_run::run::{node_roles, simulate};
use leasehold_run::store_load::StoreLoad;
use leasehold_scenario::scenario::ValidScenario;
use std::time::Instant;

/// Each worker is handed a new task this often on average.
pub const TASK_EVERY_MS: u64 = 20_000;
/// Before the window: workers boot, the stream settles.
pub const WARMUP_MS: u64 = 20_000;
/// Four heartbeat intervals, four reclaimer scans.
pub const WINDOW_MS: u64 = 20_000;

/// Counts one kind of operation in a window's load.
pub type KindCount = fn(&StoreLoad) -> u64;

/// One kind of operation: its legend label, its CSV column (per minute) and
/// how to count it.
pub struct Kind {
    pub label: &'static str,
    pub column: &'static str,
    pub count: KindCount,
}

/// The kinds stacked on the chart, bottom to top.
pub const KINDS: [Kind; 8] = [
    Kind {
        label: "heartbeats",
        column: "heartbeats_per_min",
        count: |l| l.heartbeat_writes,
    },
    Kind {
        label: "reclaimer scans",
        column: "reclaimer_scans_per_min",
        count: |l| l.member_scans + l.owned_scans,
    },
    Kind {
        label: "worker polls",
        column: "worker_polls_per_min",
        count: |l| l.pending_scans,
    },
    Kind {
        label: "claims",
        column: "claims_per_min",
        count: |l| l.claims + l.gets,
    },
    Kind {
        label: "progress",
        column: "progress_per_min",
        count: |l| l.progress_writes,
    },
    Kind {
        label: "completions",
        column: "completions_per_min",
        count: |l| l.completions,
    },
    Kind {
        label: "reclaims",
        column: "reclaims_per_min",
        count: |l| l.requeues + l.mark_dead_writes + l.member_deletes + l.lease_deletes,
    },
    Kind {
        label: "new tasks",
        column: "new_tasks_per_min",
        count: |l| l.task_creates,
    },
];

#[derive(Clone, Debug)]
pub struct StoreLoadPoint {
    pub workers: u32,
    /// Operations per minute, one per entry of [`KINDS`].
    pub per_min: Vec<f64>,
    pub total_per_min: f64,
    /// Documents the reclaimers' scans returned, per minute.
    pub scanned_docs_per_min: f64,
    pub analytic: Analytic,
    pub events: u64,
    pub wall_s: f64,
    pub violations: Vec<String>,
}

/// The expectation, kind by kind, from the configuration alone.
#[derive(Clone, Copy, Debug)]
pub struct Analytic {
    pub heartbeats: f64,
    pub reclaimer_scans: f64,
    pub polls: f64,
    pub task_ops: f64,
}

impl Analytic {
    pub fn total(&self) -> f64 {
        self.heartbeats + self.reclaimer_scans + self.polls + self.task_ops
    }
}

/// heartbeats: one per worker per interval; scans: one page per
/// `scan_page_size` members per reclaimer per scan interval; polls: an idle
/// slot makes its worker poll every poll interval, plus one poll right after
/// every claim and every completion; each task: its arrival, a claim, one
/// write per step.
pub fn analytic(scn: &ValidScenario) -> Analytic {
    let s = &scn.scenario;
    let p = &s.protocol;
    let workers = s.fleet.workers;
    let n = workers as f64;
    let per_min = |interval_ms: u64| 60_000.0 / interval_ms as f64;
    let tasks_per_min = n * per_min(TASK_EVERY_MS);
    let steps = s.tasks.steps.len() as f64;
    Analytic {
        heartbeats: n * per_min(p.heartbeat_interval_ms),
        reclaimer_scans: s.fleet.reclaimers as f64
            * per_min(p.scan_interval_ms)
            * (workers as u64).div_ceil(p.scan_page_size as u64) as f64,
        polls: n * per_min(p.poll_interval_ms) + 2.0 * tasks_per_min,
        task_ops: tasks_per_min * (2.0 + steps),
    }
}

pub fn measure(workers: u32, seed: u64) -> StoreLoadPoint {
    let end_ms = WARMUP_MS + WINDOW_MS;
    let scn = steady_stream(workers, TASK_EVERY_MS, end_ms);
    let roles = node_roles(&scn);
    let mut window = LoadWindow::new(&roles, WARMUP_MS * 1_000, end_ms * 1_000);
    let started = Instant::now();
    let outcome = simulate(&scn, seed, Variant::Correct, Some(&mut window));
    let wall_s = started.elapsed().as_secs_f64();
    let load = *window.load();
    let counts: Vec<u64> = KINDS.iter().map(|k| (k.count)(&load)).collect();
    let per_min: Vec<f64> = counts.iter().map(|c| window.per_minute(*c)).collect();
    // Anything the kinds miss would make the stack lie about the total.
    let counted: u64 = counts.iter().sum();
    assert_eq!(counted, window.store_ops, "a store operation of no kind");
    StoreLoadPoint {
        workers,
        total_per_min: window.per_minute(window.store_ops),
        per_min,
        scanned_docs_per_min: window.per_minute(window.scanned_docs),
        analytic: analytic(&scn),
        events: outcome.events(),
        wall_s,
        violations: safety_violations(&outcome),
    }
}

pub const FLEET_SIZES: [u32; 9] = [1, 3, 10, 30, 100, 300, 1_000, 3_000, 10_000];
pub const SEED: u64 = 1;

pub struct StoreLoadChart {
    pub points: Vec<StoreLoadPoint>,
}

pub fn sweep() -> StoreLoadChart {
    let mut sizes = FLEET_SIZES.to_vec();
    sizes.reverse(); // costly first
    let mut points = leasehold_explore::parallel::map(&sizes, |w| measure(*w, SEED));
    points.sort_by_key(|p| p.workers);
    StoreLoadChart { points }
}

impl super::render::SweptChart for StoreLoadChart {
    fn violations(&self) -> Vec<String> {
        self.points
            .iter()
            .flat_map(|p| p.violations.clone())
            .collect()
    }

    fn table(&self) -> super::table::Table {
        let mut headers = vec!["workers"];
        headers.extend(KINDS.iter().map(|k| k.column));
        headers.extend([
            "total_per_min",
            "expected_total_per_min",
            "heartbeat_share_pct",
            "reclaimer_scanned_docs_per_min",
            "events",
            "wall_s",
        ]);
        let mut t = super::table::Table::new(headers);
        for p in &self.points {
            let mut row = vec![p.workers.to_string()];
            row.extend(p.per_min.iter().map(|v| format!("{v:.0}")));
            row.extend([
                format!("{:.0}", p.total_per_min),
                format!("{:.0}", p.analytic.total()),
                format!("{:.1}", 100.0 * p.per_min[0] / p.total_per_min),
                format!("{:.0}", p.scanned_docs_per_min),
                p.events.to_string(),
                format!("{:.2}", p.wall_s),
            ]);
            t.push(row);
        }
        t
    }
}

impl super::render::ChartImage for StoreLoadChart {
    fn draw<DB: plotters::prelude::DrawingBackend>(
        &self,
        root: &plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        use super::render::*;
        use plotters::prelude::*;
        let (left, right) = titled_panels(
            root,
            "Every store operation per minute, by kind, against fleet size (worker mode)",
            WIDTH_PX * 62 / 100,
        )?;
        let xs: Vec<f64> = self.points.iter().map(|p| p.workers as f64).collect();
        let (x_lo, x_hi) = (0.7, 15_000.0);
        // Cumulative tops, band by band.
        let mut tops: Vec<Vec<f64>> = Vec::new();
        for k in 0..KINDS.len() {
            let row: Vec<f64> = self
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| p.per_min[k] + if k == 0 { 0.0 } else { tops[k - 1][i] })
                .collect();
            tops.push(row);
        }
        // Left: absolute, log-log.
        let (y_lo, y_hi) = (10.0, 1e7);
        let mut abs = ChartBuilder::on(&left)
            .margin(15)
            .x_label_area_size(60)
            .y_label_area_size(90)
            .caption("operations per minute, stacked", label_font())
            .build_cartesian_2d(log_decades(x_lo, x_hi), log_decades(y_lo, y_hi))
            .map_err(err)?;
        abs.configure_mesh()
            .x_desc("workers in the fleet (log scale)")
            .y_desc("store operations per minute (log scale)")
            .x_label_formatter(&|v| si_label(*v))
            .y_label_formatter(&|v| si_label(*v))
            .house_mesh()
            .draw()
            .map_err(err)?;
        for (k, kind) in KINDS.iter().enumerate() {
            let color = BANDS[k];
            let lower: Vec<f64> = if k == 0 {
                vec![y_lo; xs.len()]
            } else {
                tops[k - 1].iter().map(|v| v.max(y_lo)).collect()
            };
            let mut outline: Vec<(f64, f64)> = xs
                .iter()
                .zip(&tops[k])
                .map(|(x, y)| (*x, y.max(y_lo)))
                .collect();
            outline.extend(xs.iter().zip(&lower).rev().map(|(x, y)| (*x, *y)));
            abs.draw_series(std::iter::once(Polygon::new(
                outline,
                color.mix(0.85).filled(),
            )))
            .map_err(err)?
            .label(kind.label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 7), (x + 18, y + 7)], color.filled()));
        }
        let expected: Vec<(f64, f64)> = self
            .points
            .iter()
            .map(|p| (p.workers as f64, p.analytic.total()))
            .collect();
        abs.draw_series(DashedLineSeries::new(
            expected,
            10,
            6,
            BLACK.stroke_width(2),
        ))
        .map_err(err)?
        .label("expected total, without contention")
        .legend(|(x, y)| {
            EmptyElement::at((x, y))
                + PathElement::new(vec![(0, 0), (8, 0)], BLACK.stroke_width(2))
                + PathElement::new(vec![(12, 0), (18, 0)], BLACK.stroke_width(2))
        });
        abs.draw_series(
            self.points
                .iter()
                .map(|p| Circle::new((p.workers as f64, p.total_per_min), 4, BLACK.filled())),
        )
        .map_err(err)?
        .label("measured total")
        .legend(|(x, y)| Circle::new((x + 9, y), 4, BLACK.filled()));
        let scanned: Vec<(f64, f64)> = self
            .points
            .iter()
            .map(|p| (p.workers as f64, p.scanned_docs_per_min.max(y_lo)))
            .collect();
        abs.draw_series(LineSeries::new(scanned.clone(), BANDS[1].stroke_width(3)))
            .map_err(err)?
            .label("documents read by reclaimer scans (not stacked)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BANDS[1].stroke_width(3)));
        abs.draw_series(
            scanned
                .iter()
                .map(|(x, y)| TriangleMarker::new((*x, *y), 6, BANDS[1].filled())),
        )
        .map_err(err)?;
        abs.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font(("sans-serif", 16))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(err)?;
        // Right: shares, so the small kinds stay visible.
        let mut share = ChartBuilder::on(&right)
            .margin(15)
            .x_label_area_size(60)
            .y_label_area_size(70)
            .caption("share of all operations", label_font())
            .build_cartesian_2d(log_decades(x_lo, x_hi), 0.0..100.0)
            .map_err(err)?;
        share
            .configure_mesh()
            .x_desc("workers in the fleet (log scale)")
            .y_desc("% of store operations")
            .x_label_formatter(&|v| si_label(*v))
            .y_label_formatter(&|v| format!("{v:.0}%"))
            .house_mesh()
            .draw()
            .map_err(err)?;
        let totals: Vec<f64> = self.points.iter().map(|p| p.total_per_min).collect();
        for k in 0..KINDS.len() {
            let pct = |row: &Vec<f64>| -> Vec<f64> {
                row.iter()
                    .zip(&totals)
                    .map(|(v, t)| 100.0 * v / t)
                    .collect()
            };
            let upper = pct(&tops[k]);
            let lower = if k == 0 {
                vec![0.0; xs.len()]
            } else {
                pct(&tops[k - 1])
            };
            let mut outline: Vec<(f64, f64)> = xs.iter().copied().zip(upper).collect();
            outline.extend(xs.iter().copied().zip(lower).rev());
            share
                .draw_series(std::iter::once(Polygon::new(
                    outline,
                    BANDS[k].mix(0.85).filled(),
                )))
                .map_err(err)?;
        }
        root.draw(&Text::new(
            format!(
                "Measured over {} s after {} s of warm-up; a new 3-step task per worker every {} s, 4 slots each, 2 reclaimers; no faults, so no reclaims.",
                WINDOW_MS / 1_000,
                WARMUP_MS / 1_000,
                TASK_EVERY_MS / 1_000,
            ),
            (20, HEIGHT_PX as i32 - 50),
            note_font(),
        ))
        .map_err(err)?;
        root.draw(&Text::new(
            "Idle polling, not heartbeats, is most of the load; claims spread over the pending index keep the total on the expectation without collisions (dashed).",
            (20, HEIGHT_PX as i32 - 26),
            note_font(),
        ))
        .map_err(err)?;
        Ok(())
    }
}
