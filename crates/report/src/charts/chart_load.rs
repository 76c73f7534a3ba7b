//! Heartbeat writes per minute against fleet size, worker mode and task mode.

use super::load_window::LoadWindow;
use super::safety_violations;
use super::sweep_scenarios::{LOAD_HEARTBEAT_INTERVAL_MS, steady_busy, validated};
use leasehold_protocol::{HeartbeatMode, Variant};
use leasehold_run::run::{node_roles, simulate};
use leasehold_scenario::fault_model::FaultsSection;
use leasehold_scenario::scenario::ValidScenario;
use std::time::Instant;

/// Six heartbeat intervals: every heartbeat document is written six times.
pub const WINDOW_MS: u64 = 6 * LOAD_HEARTBEAT_INTERVAL_MS;
/// The window opens this long after the last slot filled up.
pub const SETTLE_MS: u64 = 1_000;
/// A run whose slots are not all busy by then is reported, not waited for.
pub const MAX_WARMUP_MS: u64 = 600_000;

#[derive(Clone, Debug)]
pub struct LoadPoint {
    pub mode: HeartbeatMode,
    pub workers: u32,
    pub tasks_per_worker: u32,
    /// Tasks running, averaged over the window (from the store's writes).
    pub mean_running_tasks: f64,
    /// Simulated seconds until the measurement window opened.
    pub window_from_s: f64,
    /// Measured: worker writes to heartbeat or task lease documents.
    pub heartbeat_writes_per_min: f64,
    /// Of which task lease creations (one per claim attempt, task mode).
    pub lease_creates_per_min: f64,
    /// Workers x 60 / interval in worker mode, running tasks x 60 / interval
    /// in task mode.
    pub expected_per_min: f64,
    /// Every store operation in the window, per minute.
    pub store_ops_per_min: f64,
    pub events: u64,
    /// Wall time of the run (tool speed, not part of the simulation).
    pub wall_s: f64,
    pub violations: Vec<String>,
}

impl LoadPoint {
    /// Measured over expected, minus one.
    pub fn relative_error(&self) -> f64 {
        self.heartbeat_writes_per_min / self.expected_per_min - 1.0
    }
}

/// The expectation the issue states: heartbeating things x 60 / interval.
pub fn expected_per_min(heartbeating: f64, heartbeat_interval_ms: u64) -> f64 {
    heartbeating * 60_000.0 / heartbeat_interval_ms as f64
}

/// One steady-state run: every slot busy with a long task, measured over
/// `WINDOW_MS` from `SETTLE_MS` after the last slot filled up.
pub fn measure_busy(
    workers: u32,
    tasks_per_worker: u32,
    mode: HeartbeatMode,
    seed: u64,
) -> LoadPoint {
    let scn = steady_busy(workers, tasks_per_worker, mode, MAX_WARMUP_MS + WINDOW_MS);
    let roles = node_roles(&scn);
    let window = LoadWindow::once_running(
        &roles,
        workers as u64 * tasks_per_worker as u64,
        SETTLE_MS * 1_000,
        WINDOW_MS * 1_000,
    );
    measure(&scn, seed, window)
}

/// Measure a scenario's heartbeat load over `[from_ms, to_ms)`.
pub fn measure_window(scn: &ValidScenario, seed: u64, from_ms: u64, to_ms: u64) -> LoadPoint {
    let roles = node_roles(scn);
    let window = LoadWindow::new(&roles, from_ms * 1_000, to_ms * 1_000);
    measure(scn, seed, window)
}

/// Every slot counts as a task per worker: the sweeps keep them all busy.
fn measure(scn: &ValidScenario, seed: u64, mut window: LoadWindow<'_>) -> LoadPoint {
    let started = Instant::now();
    let outcome = simulate(scn, seed, Variant::Correct, Some(&mut window));
    let wall_s = started.elapsed().as_secs_f64();
    let s = &scn.scenario;
    let mode = s.protocol.heartbeat_mode;
    let tasks_per_worker = s.fleet.slots_per_worker;
    let mut violations = safety_violations(&outcome);
    let Some((from_us, _)) = window.bounds_us() else {
        violations.push(format!(
            "{}: the slots were not all busy within {} s of simulated time",
            s.name,
            MAX_WARMUP_MS / 1_000
        ));
        return LoadPoint {
            mode,
            workers: s.fleet.workers,
            tasks_per_worker,
            mean_running_tasks: f64::NAN,
            window_from_s: f64::NAN,
            heartbeat_writes_per_min: f64::NAN,
            lease_creates_per_min: f64::NAN,
            expected_per_min: f64::NAN,
            store_ops_per_min: f64::NAN,
            events: outcome.events(),
            wall_s,
            violations,
        };
    };
    let mean_running_tasks = window.mean_running_tasks();
    let window_from_s = from_us as f64 / 1e6;
    let heartbeating = match mode {
        HeartbeatMode::Worker => s.fleet.workers as f64,
        HeartbeatMode::Task => mean_running_tasks,
    };
    LoadPoint {
        mode,
        workers: s.fleet.workers,
        tasks_per_worker,
        mean_running_tasks,
        window_from_s,
        heartbeat_writes_per_min: window.per_minute(window.load().heartbeat_writes),
        lease_creates_per_min: window.per_minute(window.load().lease_creates),
        expected_per_min: expected_per_min(heartbeating, s.protocol.heartbeat_interval_ms),
        store_ops_per_min: window.per_minute(window.store_ops),
        events: outcome.events(),
        wall_s,
        violations,
    }
}

/// Fleet sizes swept, 1 to 10,000 workers.
pub const FLEET_SIZES: [u32; 9] = [1, 3, 10, 30, 100, 300, 1_000, 3_000, 10_000];
/// Tasks per worker (= slots per worker, all busy).
pub const TASKS_PER_WORKER: [u32; 3] = [1, 10, 50];
/// Points with more running tasks than this are not simulated (the dashed
/// expectation still is drawn): claiming them all first is what costs, see
/// docs/charts.md.
pub const MAX_SIMULATED_RUNNING_TASKS: u64 = 30_000;
/// Worker mode is measured at these tasks per worker: its load must not
/// depend on them.
pub const WORKER_MODE_TASKS_PER_WORKER: [u32; 2] = [1, 50];
pub const SEED: u64 = 1;

/// Every (mode, workers, tasks per worker) the sweep simulates, costly first.
pub fn sweep_points() -> Vec<(HeartbeatMode, u32, u32)> {
    let mut points = Vec::new();
    for workers in FLEET_SIZES {
        for tpw in WORKER_MODE_TASKS_PER_WORKER {
            points.push((HeartbeatMode::Worker, workers, tpw));
        }
        for tpw in TASKS_PER_WORKER {
            points.push((HeartbeatMode::Task, workers, tpw));
        }
    }
    points.retain(|(_, w, tpw)| *w as u64 * *tpw as u64 <= MAX_SIMULATED_RUNNING_TASKS);
    points.sort_by_key(|(mode, w, tpw)| {
        let claims_cost = match mode {
            HeartbeatMode::Worker => 1,
            HeartbeatMode::Task => 2,
        };
        std::cmp::Reverse(*w as u64 * *tpw as u64 * claims_cost + *w as u64)
    });
    points
}

/// The seed scenario (20 workers, 1,000 orders in three minutes), faults off,
/// measured while the rush keeps every slot busy.
pub fn friday_rush(mode: HeartbeatMode) -> LoadPoint {
    let mut scenario = leasehold_scenario::scenario::Scenario::parse(
        leasehold_scenario::scaled_scenario::BASE_SCENARIO,
    )
    .expect("the shipped scenario is valid")
    .scenario;
    // Faults off: the chart measures steady-state load.
    let f = &scenario.faults;
    scenario.faults = FaultsSection::none(f.fault_phase_ms, f.restart_delay_ms);
    scenario.protocol.heartbeat_mode = mode;
    measure_window(&validated(scenario), SEED, FRIDAY_FROM_MS, FRIDAY_TO_MS)
}

/// The rush's busy stretch: arrivals outpace the 80 slots from here...
pub const FRIDAY_FROM_MS: u64 = 30_000;
/// ...to the end of the three minutes of arrivals.
pub const FRIDAY_TO_MS: u64 = 180_000;

pub struct LoadChart {
    pub points: Vec<LoadPoint>,
    pub friday_rush: Vec<LoadPoint>,
    /// Heartbeat load measured by live runs on real stores, drawn over the
    /// simulator's points (`chart load --live FILE`); empty without it.
    pub live: Vec<super::live_points::LivePoint>,
}

pub fn sweep(live: Vec<super::live_points::LivePoint>) -> LoadChart {
    let specs = sweep_points();
    let points = leasehold_explore::parallel::map(&specs, |(mode, workers, tpw)| {
        measure_busy(*workers, *tpw, *mode, SEED)
    });
    let friday_rush = [HeartbeatMode::Worker, HeartbeatMode::Task]
        .into_iter()
        .map(friday_rush)
        .collect();
    let mut chart = LoadChart {
        points,
        friday_rush,
        live,
    };
    chart
        .points
        .sort_by_key(|p| (p.mode.name(), p.tasks_per_worker, p.workers));
    chart
}

impl super::render::SweptChart for LoadChart {
    fn violations(&self) -> Vec<String> {
        self.points
            .iter()
            .chain(&self.friday_rush)
            .flat_map(|p| p.violations.clone())
            .collect()
    }

    fn table(&self) -> super::table::Table {
        let mut t = super::table::Table::new(vec![
            "scenario",
            "mode",
            "workers",
            "tasks_per_worker",
            "running_tasks",
            "window_from_s",
            "heartbeat_writes_per_min",
            "of_which_lease_creates_per_min",
            "expected_per_min",
            "error_pct",
            "store_ops_per_min",
            "events",
            "wall_s",
        ]);
        let rows = self
            .points
            .iter()
            .map(|p| ("steady", p))
            .chain(self.friday_rush.iter().map(|p| ("friday-rush", p)));
        for (name, p) in rows {
            // Friday-rush tasks last seconds, not minutes: every claim also
            // writes a lease in task mode, so the steady-state formula does
            // not apply there.
            let error = if name == "steady" {
                format!("{:+.2}", 100.0 * p.relative_error())
            } else {
                "n/a".to_string()
            };
            t.push(vec![
                name.to_string(),
                p.mode.name().to_string(),
                p.workers.to_string(),
                p.tasks_per_worker.to_string(),
                format!("{:.1}", p.mean_running_tasks),
                format!("{:.1}", p.window_from_s),
                format!("{:.0}", p.heartbeat_writes_per_min),
                format!("{:.0}", p.lease_creates_per_min),
                format!("{:.0}", p.expected_per_min),
                error,
                format!("{:.0}", p.store_ops_per_min),
                p.events.to_string(),
                format!("{:.2}", p.wall_s),
            ]);
        }
        t
    }
}

impl super::render::ChartImage for LoadChart {
    fn draw<DB: plotters::prelude::DrawingBackend>(
        &self,
        root: &plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        use super::render::*;
        use plotters::prelude::*;
        root.fill(&WHITE).map_err(err)?;
        let (x_lo, x_hi) = (0.7, 15_000.0);
        let (y_lo, y_hi) = (5.0, 2e7);
        let mut chart = ChartBuilder::on(root)
            .caption(
                "Heartbeat writes per minute against fleet size (heartbeat every 5 s)",
                title_font(),
            )
            .margin(20)
            .margin_bottom(60)
            .x_label_area_size(60)
            .y_label_area_size(90)
            .build_cartesian_2d(log_decades(x_lo, x_hi), log_decades(y_lo, y_hi))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("workers in the fleet (log scale)")
            .y_desc("heartbeat writes per minute (log scale)")
            .x_label_formatter(&|v| si_label(*v))
            .y_label_formatter(&|v| si_label(*v))
            .house_mesh()
            .draw()
            .map_err(err)?;
        let interval_min = LOAD_HEARTBEAT_INTERVAL_MS as f64 / 60_000.0;
        let series: Vec<(HeartbeatMode, u32, RGBColor, String)> = std::iter::once((
            HeartbeatMode::Worker,
            0,
            WORKER_COLOR,
            "worker mode: one document per worker (any tasks per worker)".to_string(),
        ))
        .chain(TASKS_PER_WORKER.iter().zip(TASK_COLORS).map(|(tpw, c)| {
            (
                HeartbeatMode::Task,
                *tpw,
                c,
                format!("task mode: one lease per running task, {tpw} per worker"),
            )
        }))
        .collect();
        for (mode, tpw, color, label) in &series {
            let per_worker = if *mode == HeartbeatMode::Worker {
                1.0
            } else {
                *tpw as f64
            };
            // The expectation, dashed, across the whole range.
            let line: Vec<(f64, f64)> = [1.0, 10_000.0]
                .iter()
                .map(|n| (*n, n * per_worker / interval_min))
                .collect();
            chart
                .draw_series(DashedLineSeries::new(
                    line,
                    10,
                    6,
                    color.mix(0.7).stroke_width(2),
                ))
                .map_err(err)?;
            let measured: Vec<(f64, f64)> = self
                .points
                .iter()
                .filter(|p| {
                    p.mode == *mode
                        && (*mode == HeartbeatMode::Worker || p.tasks_per_worker == *tpw)
                })
                .filter(|p| p.heartbeat_writes_per_min.is_finite())
                .map(|p| (p.workers as f64, p.heartbeat_writes_per_min))
                .collect();
            let c = *color;
            let marker_worker = *mode == HeartbeatMode::Worker;
            chart
                .draw_series(measured.iter().map(move |(x, y)| {
                    if marker_worker {
                        EmptyElement::at((*x, *y)) + Circle::new((0, 0), 7, c.stroke_width(2))
                    } else {
                        EmptyElement::at((*x, *y)) + Circle::new((0, 0), 5, c.filled())
                    }
                }))
                .map_err(err)?
                .label(label.clone())
                .legend(move |(x, y)| {
                    EmptyElement::at((x + 10, y))
                        + Circle::new((0, 0), 5, c.filled())
                        + PathElement::new(vec![(-10, 0), (10, 0)], c.stroke_width(2))
                });
        }
        // One legend entry explains every dashed line.
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(err)?
            .label("dashed: expected = heartbeating documents x 60 / 5 s")
            .legend(|(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (8, 0)], GREY.stroke_width(2))
                    + PathElement::new(vec![(13, 0), (20, 0)], GREY.stroke_width(2))
            });
        // The friday-rush points are told apart by their marker and named in
        // the legend: a label beside them ran into the sweep's points.
        for mode in [HeartbeatMode::Worker, HeartbeatMode::Task] {
            let points: Vec<(f64, f64)> = self
                .friday_rush
                .iter()
                .filter(|p| p.mode == mode && p.heartbeat_writes_per_min.is_finite())
                .map(|p| (p.workers as f64, p.heartbeat_writes_per_min))
                .collect();
            let label = format!(
                "friday-rush, {} mode: 20 workers x 4 slots, 1,000 tasks (faults off)",
                mode.name()
            );
            let series = match mode {
                HeartbeatMode::Worker => chart.draw_series(
                    points
                        .iter()
                        .map(|&p| Cross::new(p, 9, BLACK.stroke_width(3))),
                ),
                HeartbeatMode::Task => chart.draw_series(
                    points
                        .iter()
                        .map(|&p| TriangleMarker::new(p, 9, BLACK.filled())),
                ),
            }
            .map_err(err)?;
            match mode {
                HeartbeatMode::Worker => series
                    .label(label)
                    .legend(|(x, y)| Cross::new((x + 10, y), 6, BLACK.stroke_width(3))),
                HeartbeatMode::Task => series
                    .label(label)
                    .legend(|(x, y)| TriangleMarker::new((x + 10, y), 6, BLACK.filled())),
            };
        }
        // Real stores' counts, one hollow square per live run, sized by
        // store so that two stores' squares at one fleet size both show.
        let mut stores: Vec<&str> = Vec::new();
        for p in &self.live {
            if !stores.contains(&p.store.as_str()) {
                stores.push(&p.store);
            }
        }
        for (i, store) in stores.iter().enumerate() {
            let c = LIVE_COLORS[i % LIVE_COLORS.len()];
            let half = 6 + 4 * i as i32;
            let runs: Vec<&super::live_points::LivePoint> =
                self.live.iter().filter(|p| p.store == *store).collect();
            let mut sizes: Vec<String> = runs.iter().map(|p| p.workers.to_string()).collect();
            sizes.dedup();
            let mut speeds: Vec<u32> = runs.iter().map(|p| p.speed).collect();
            speeds.sort_unstable();
            speeds.dedup();
            let speeds: Vec<String> = speeds.iter().map(|s| format!("{s}x")).collect();
            chart
                .draw_series(runs.iter().map(move |p| {
                    EmptyElement::at((p.workers as f64, p.heartbeat_writes_per_min))
                        + Rectangle::new([(-half, -half), (half, half)], c.stroke_width(2))
                }))
                .map_err(err)?
                .label(format!(
                    "live on {store} (leasehold live at {}): friday-rush, {} workers, faults off",
                    speeds.join(", "),
                    sizes.join(", ")
                ))
                .legend(move |(x, y)| {
                    EmptyElement::at((x + 10, y))
                        + Rectangle::new([(-6, -6), (6, 6)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font(("sans-serif", 17))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(err)?;
        let notes = [
            "Points: counted from the simulator's store operations over 30 s of steady state (every slot busy with a long task), one run each.".to_string(),
            format!(
                "Points stop at {} running tasks; beyond, only the expectation is drawn (claiming that many tasks first takes minutes of simulated contention).",
                si_label(MAX_SIMULATED_RUNNING_TASKS as f64)
            ),
        ];
        for (i, note) in notes.iter().enumerate() {
            root.draw(&Text::new(
                note.as_str(),
                (20, super::render::HEIGHT_PX as i32 - 48 + 22 * i as i32),
                note_font(),
            ))
            .map_err(err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::fonts::register_fonts;
    use crate::charts::render::{ChartImage, HEIGHT_PX, LIVE_COLORS, WIDTH_PX};
    use plotters::prelude::*;

    /// The chart as the docs hold it, rebuilt from docs/charts/load.csv.
    fn chart_of_the_docs() -> LoadChart {
        let csv = include_str!("../../../../docs/charts/load.csv");
        let mut chart = LoadChart {
            points: Vec::new(),
            friday_rush: Vec::new(),
            live: Vec::new(),
        };
        for line in csv.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let num = |i: usize| f[i].parse::<f64>().unwrap_or(f64::NAN);
            let point = LoadPoint {
                mode: if f[1] == "task" {
                    HeartbeatMode::Task
                } else {
                    HeartbeatMode::Worker
                },
                workers: f[2].parse().unwrap(),
                tasks_per_worker: f[3].parse().unwrap(),
                mean_running_tasks: num(4),
                window_from_s: num(5),
                heartbeat_writes_per_min: num(6),
                lease_creates_per_min: num(7),
                expected_per_min: num(8),
                store_ops_per_min: num(10),
                events: 0,
                wall_s: 0.0,
                violations: Vec::new(),
            };
            if f[0] == "friday-rush" {
                chart.friday_rush.push(point);
            } else {
                chart.points.push(point);
            }
        }
        chart
    }

    /// `--live` points are drawn: a square per live run in its store's
    /// colour (and one more in the legend), none without them.
    #[test]
    fn live_points_are_drawn_as_squares() {
        register_fonts();
        let squares = |chart: &LoadChart| {
            let mut svg = String::new();
            {
                let root =
                    SVGBackend::with_string(&mut svg, (WIDTH_PX, HEIGHT_PX)).into_drawing_area();
                chart.draw(&root).unwrap();
                root.present().unwrap();
            }
            let colour = format!(
                "#{:02X}{:02X}{:02X}",
                LIVE_COLORS[0].0, LIVE_COLORS[0].1, LIVE_COLORS[0].2
            );
            svg.match_indices("<rect ")
                .filter(|(at, _)| svg[*at..*at + svg[*at..].find('>').unwrap()].contains(&colour))
                .count()
        };
        let mut chart = chart_of_the_docs();
        assert_eq!(squares(&chart), 0);
        chart.live = crate::charts::live_points::read(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/charts/live-points.json"
        )))
        .unwrap();
        let first_store = chart.live[0].store.clone();
        let runs = chart.live.iter().filter(|p| p.store == first_store).count();
        assert!(runs >= 1);
        assert_eq!(squares(&chart), runs + 1);
    }

    fn attr(tag: &str, name: &str) -> Option<String> {
        let key = format!(" {name}=\"");
        let at = tag.find(&key)? + key.len();
        tag[at..].split('"').next().map(str::to_string)
    }

    /// No text of the chart lies on a measured point: labels are legible and
    /// points visible (the friday-rush labels ran into the 30- and
    /// 100-worker points).
    #[test]
    fn no_label_lies_on_a_point() {
        register_fonts();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (WIDTH_PX, HEIGHT_PX)).into_drawing_area();
            chart_of_the_docs().draw(&root).unwrap();
            root.present().unwrap();
        }
        let num = |tag: &str, name: &str| attr(tag, name).and_then(|v| v.parse::<f64>().ok());
        let circles: Vec<(f64, f64, f64)> = svg
            .match_indices("<circle ")
            .map(|(at, _)| {
                let tag = &svg[at..at + svg[at..].find('>').unwrap()];
                (
                    num(tag, "cx").unwrap(),
                    num(tag, "cy").unwrap(),
                    num(tag, "r").unwrap(),
                )
            })
            .collect();
        assert!(circles.len() > 20, "the points are drawn");
        for (at, _) in svg.match_indices("<text ") {
            let end = at + svg[at..].find('>').unwrap();
            let tag = &svg[at..end];
            let rest = &svg[end + 1..];
            let content = rest[..rest.find('<').unwrap()].trim();
            let (x, y, size) = (
                num(tag, "x").unwrap(),
                num(tag, "y").unwrap(),
                num(tag, "font-size").unwrap(),
            );
            if tag.contains("rotate(") {
                continue; // the y axis's title, outside the plot
            }
            let width = 0.55 * size * content.chars().count() as f64;
            let x0 = match attr(tag, "text-anchor").as_deref() {
                Some("middle") => x - width / 2.0,
                Some("end") => x - width,
                _ => x,
            };
            let y0 = match attr(tag, "dy").as_deref() {
                Some("0.76em") => y,
                Some("0.5ex") => y - size / 2.0,
                Some("-0.5ex") => y - size,
                _ => y - 0.8 * size,
            };
            for &(cx, cy, r) in &circles {
                let clear = cx + r < x0 || cx - r > x0 + width || cy + r < y0 || cy - r > y0 + size;
                assert!(
                    clear,
                    "{content:?} at ({x}, {y}) covers the point at ({cx}, {cy})"
                );
            }
        }
    }
}
