//! Time from a worker's crash to its tasks running again (p50, p99) against
//! heartbeat interval and lease timeout, beside the heartbeat writes those
//! settings cost.

use super::detection_meter::DetectionMeter;
use super::safety_violations;
use super::sweep_scenarios::{CRASHING_FLEET_WORKERS, crashing_fleet};
use leasehold_protocol::Variant;
use leasehold_run::run::simulate;
use std::time::Instant;

/// Heartbeat intervals swept; the scan interval equals the heartbeat
/// interval and the lease timeout is `LEASE_PER_INTERVAL` times it.
pub const HEARTBEAT_INTERVALS_MS: [u64; 6] = [1_000, 2_000, 5_000, 10_000, 20_000, 30_000];
pub const LEASE_PER_INTERVAL: u64 = 3;
/// Seeds per setting: enough crashes for a p99.
pub const SEEDS: u64 = 40;
pub const FAULT_PHASE_MS: u64 = 120_000;
/// About a dozen worker crashes per run.
pub const CRASH_PROBABILITY_PER_STEP: f64 = 0.003;

/// One run of one setting.
#[derive(Clone, Debug)]
pub struct DetectionRun {
    pub samples_us: Vec<u64>,
    pub crashes: u64,
    pub unresolved: usize,
    pub heartbeat_writes: u64,
    pub sim_time_us: u64,
    pub events: u64,
    pub wall_s: f64,
    pub violations: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct DetectionPoint {
    pub heartbeat_interval_ms: u64,
    pub lease_timeout_ms: u64,
    pub samples: usize,
    pub crashes: u64,
    pub p50_s: f64,
    pub p99_s: f64,
    pub analytic_p50_s: f64,
    pub analytic_p99_s: f64,
    pub heartbeat_writes_per_min: f64,
    pub expected_writes_per_min: f64,
    pub unresolved: usize,
    pub events: u64,
    pub wall_s: f64,
    pub violations: Vec<String>,
}

pub fn run_end_ms(heartbeat_interval_ms: u64) -> u64 {
    // Long enough for a crash at the end of the fault phase to be detected
    // (two scans past the lease, a restart) and its tasks claimed again.
    FAULT_PHASE_MS + (LEASE_PER_INTERVAL + 3) * heartbeat_interval_ms + 30_000
}

pub fn measure_run(heartbeat_interval_ms: u64, seed: u64) -> DetectionRun {
    let lease_timeout_ms = LEASE_PER_INTERVAL * heartbeat_interval_ms;
    let scn = crashing_fleet(
        heartbeat_interval_ms,
        lease_timeout_ms,
        FAULT_PHASE_MS,
        CRASH_PROBABILITY_PER_STEP,
        run_end_ms(heartbeat_interval_ms),
    );
    let mut meter = DetectionMeter::new(scn.scenario.fleet.workers);
    let started = Instant::now();
    let outcome = simulate(&scn, seed, Variant::Correct, Some(&mut meter));
    DetectionRun {
        crashes: meter.crashes,
        unresolved: meter.unresolved(),
        samples_us: meter.samples_us,
        heartbeat_writes: outcome.load.heartbeat_writes,
        sim_time_us: outcome.sim_time_us(),
        events: outcome.events(),
        wall_s: started.elapsed().as_secs_f64(),
        violations: safety_violations(&outcome),
    }
}

/// Fold the runs of one setting into a point.
pub fn point(heartbeat_interval_ms: u64, runs: &[DetectionRun]) -> DetectionPoint {
    let lease_timeout_ms = LEASE_PER_INTERVAL * heartbeat_interval_ms;
    let mut samples: Vec<u64> = runs
        .iter()
        .flat_map(|r| r.samples_us.iter().copied())
        .collect();
    samples.sort_unstable();
    let sim_minutes: f64 = runs.iter().map(|r| r.sim_time_us as f64 / 60e6).sum();
    let (a50, a99) = (
        analytic_quantile_ms(heartbeat_interval_ms, lease_timeout_ms, 0.50),
        analytic_quantile_ms(heartbeat_interval_ms, lease_timeout_ms, 0.99),
    );
    DetectionPoint {
        heartbeat_interval_ms,
        lease_timeout_ms,
        samples: samples.len(),
        crashes: runs.iter().map(|r| r.crashes).sum(),
        p50_s: percentile_us(&samples, 0.50) / 1e6,
        p99_s: percentile_us(&samples, 0.99) / 1e6,
        analytic_p50_s: a50 / 1e3,
        analytic_p99_s: a99 / 1e3,
        heartbeat_writes_per_min: runs.iter().map(|r| r.heartbeat_writes).sum::<u64>() as f64
            / sim_minutes,
        expected_writes_per_min: CRASHING_FLEET_WORKERS as f64 * 60_000.0
            / heartbeat_interval_ms as f64,
        unresolved: runs.iter().map(|r| r.unresolved).sum(),
        events: runs.iter().map(|r| r.events).sum(),
        wall_s: runs.iter().map(|r| r.wall_s).sum(),
        violations: runs.iter().flat_map(|r| r.violations.clone()).collect(),
    }
}

/// Nearest-rank percentile of sorted samples; NaN when there are none.
pub fn percentile_us(sorted: &[u64], q: f64) -> f64 {
    assert!((0.0..=1.0).contains(&q));
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}

/// The model, with the scan interval S equal to the heartbeat interval P:
/// a crash comes U(0, P) after the last heartbeat landed; the reclaimer first
/// sees that heartbeat's version U(0, S) after it landed, and declares death
/// at the first scan at least the lease timeout L after that sighting. With L
/// a multiple of S, network jitter decides, half the time each, whether that
/// is the scan L after the sighting or the one after it. So
/// `D = L + U(0,S) - U(0,P) + S * Bernoulli(1/2)`: a half-half mixture of
/// two triangular distributions on `[L - P, L + P]` and `[L, L + 2P]`.
/// Requeue and re-claim take milliseconds and are left out.
pub fn analytic_quantile_ms(heartbeat_interval_ms: u64, lease_timeout_ms: u64, q: f64) -> f64 {
    assert!((0.0..1.0).contains(&q) && heartbeat_interval_ms > 0);
    let p = heartbeat_interval_ms as f64;
    let l = lease_timeout_ms as f64;
    // CDF of the triangular distribution of U(0,P) - U(0,P) on [-P, P].
    let tri = |x: f64| {
        if x <= -p {
            0.0
        } else if x <= 0.0 {
            (x + p) * (x + p) / (2.0 * p * p)
        } else if x < p {
            1.0 - (p - x) * (p - x) / (2.0 * p * p)
        } else {
            1.0
        }
    };
    let cdf = |d: f64| 0.5 * tri(d - l) + 0.5 * tri(d - l - p);
    // Bisection: the CDF is continuous and increasing on [L - P, L + 2P].
    let (mut lo, mut hi) = (l - p, l + 2.0 * p);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if cdf(mid) < q {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

pub struct DetectionChart {
    pub points: Vec<DetectionPoint>,
}

pub fn sweep() -> DetectionChart {
    let runs: Vec<(u64, u64)> = HEARTBEAT_INTERVALS_MS
        .iter()
        .flat_map(|p| (1..=SEEDS).map(move |seed| (*p, seed)))
        .collect();
    // In the order of `runs`: interval by interval, `SEEDS` runs each.
    let measured = leasehold_explore::parallel::map(&runs, |(p, seed)| measure_run(*p, *seed));
    let points = HEARTBEAT_INTERVALS_MS
        .iter()
        .zip(measured.chunks(SEEDS as usize))
        .map(|(p, of_p)| point(*p, of_p))
        .collect();
    DetectionChart { points }
}

impl super::render::SweptChart for DetectionChart {
    fn violations(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .points
            .iter()
            .flat_map(|p| p.violations.clone())
            .collect();
        for p in &self.points {
            if p.unresolved > 0 {
                v.push(format!(
                    "detection, heartbeat every {} ms: {} orphaned tasks never ran again before the run ended",
                    p.heartbeat_interval_ms, p.unresolved
                ));
            }
        }
        v
    }

    fn table(&self) -> super::table::Table {
        let mut t = super::table::Table::new(vec![
            "heartbeat_interval_s",
            "lease_timeout_s",
            "crashes",
            "orphaned_tasks",
            "p50_s",
            "p99_s",
            "analytic_p50_s",
            "analytic_p99_s",
            "heartbeat_writes_per_min",
            "expected_writes_per_min",
            "events",
            "wall_s",
        ]);
        for p in &self.points {
            t.push(vec![
                format!("{}", p.heartbeat_interval_ms as f64 / 1e3),
                format!("{}", p.lease_timeout_ms as f64 / 1e3),
                p.crashes.to_string(),
                p.samples.to_string(),
                format!("{:.2}", p.p50_s),
                format!("{:.2}", p.p99_s),
                format!("{:.2}", p.analytic_p50_s),
                format!("{:.2}", p.analytic_p99_s),
                format!("{:.1}", p.heartbeat_writes_per_min),
                format!("{:.1}", p.expected_writes_per_min),
                p.events.to_string(),
                format!("{:.2}", p.wall_s),
            ]);
        }
        t
    }
}

impl super::render::ChartImage for DetectionChart {
    fn draw<DB: plotters::prelude::DrawingBackend>(
        &self,
        root: &plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        use super::render::*;
        use plotters::prelude::*;
        root.fill(&WHITE).map_err(err)?;
        let x_keys: Vec<f64> = HEARTBEAT_INTERVALS_MS
            .iter()
            .map(|p| *p as f64 / 1e3)
            .collect();
        let (x_lo, x_hi) = (0.8, 40.0);
        let (y_lo, y_hi) = (1.0, 300.0);
        let (w_lo, w_hi) = (10.0, 3_000.0);
        let mut chart = ChartBuilder::on(root)
            .caption(
                "Crash to running again, against heartbeat interval: the price of cheaper heartbeats",
                title_font(),
            )
            .margin(20)
            .margin_bottom(40)
            .x_label_area_size(70)
            .y_label_area_size(90)
            .right_y_label_area_size(100)
            .build_cartesian_2d(
                (x_lo..x_hi).log_scale().with_key_points(x_keys.clone()),
                (y_lo..y_hi)
                    .log_scale()
                    .with_key_points(vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0]),
            )
            .map_err(err)?
            .set_secondary_coord(
                (x_lo..x_hi).log_scale().with_key_points(x_keys),
                (w_lo..w_hi)
                    .log_scale()
                    .with_key_points(vec![10.0, 30.0, 100.0, 300.0, 1_000.0, 3_000.0]),
            );
        chart
            .configure_mesh()
            .x_desc(format!(
                "heartbeat interval, s (log scale); lease timeout = {LEASE_PER_INTERVAL} x interval, scan interval = interval"
            ))
            .y_desc("crash to tasks running again, s (log scale)")
            .x_label_formatter(&|v| {
                format!("{} s / {} s", si_label(*v), si_label(*v * LEASE_PER_INTERVAL as f64))
            })
            .y_label_formatter(&|v| format!("{} s", si_label(*v)))
            .house_mesh()
            .draw()
            .map_err(err)?;
        chart
            .configure_secondary_axes()
            .y_desc(format!(
                "heartbeat writes per minute, {CRASHING_FLEET_WORKERS} workers (log scale)"
            ))
            .y_label_formatter(&|v| si_label(*v))
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()
            .map_err(err)?;
        // (heartbeat interval in s, y) for every point.
        let by_interval = |y: &dyn Fn(&DetectionPoint) -> f64| -> Vec<(f64, f64)> {
            self.points
                .iter()
                .map(|p| (p.heartbeat_interval_ms as f64 / 1e3, y(p)))
                .collect()
        };
        type Pick = fn(&DetectionPoint) -> (f64, f64);
        let quantiles: [(&str, RGBColor, Pick); 2] = [
            ("p50", WORKER_COLOR, |p| (p.p50_s, p.analytic_p50_s)),
            ("p99", TASK_COLORS[2], |p| (p.p99_s, p.analytic_p99_s)),
        ];
        for (name, color, pick) in quantiles {
            let measured: Vec<(f64, f64)> = by_interval(&|p| pick(p).0)
                .into_iter()
                .filter(|(_, y)| y.is_finite())
                .collect();
            let analytic = by_interval(&|p| pick(p).1);
            chart
                .draw_series(LineSeries::new(measured.clone(), color.stroke_width(2)))
                .map_err(err)?;
            chart
                .draw_series(
                    measured
                        .iter()
                        .map(|(x, y)| Circle::new((*x, *y), 6, color.filled())),
                )
                .map_err(err)?
                .label(format!("{name}, measured"))
                .legend(move |(x, y)| {
                    EmptyElement::at((x + 10, y))
                        + Circle::new((0, 0), 5, color.filled())
                        + PathElement::new(vec![(-10, 0), (10, 0)], color.stroke_width(2))
                });
            chart
                .draw_series(DashedLineSeries::new(
                    analytic,
                    10,
                    6,
                    color.mix(0.7).stroke_width(2),
                ))
                .map_err(err)?
                .label(format!("{name}, expected (model in docs/charts.md)"))
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new(vec![(0, 0), (8, 0)], color.stroke_width(2))
                        + PathElement::new(vec![(13, 0), (20, 0)], color.stroke_width(2))
                });
        }
        let writes = by_interval(&|p| p.heartbeat_writes_per_min);
        let expected = by_interval(&|p| p.expected_writes_per_min);
        chart
            .draw_secondary_series(LineSeries::new(writes.clone(), GREY.stroke_width(2)))
            .map_err(err)?;
        chart
            .draw_secondary_series(writes.iter().map(|(x, y)| {
                EmptyElement::at((*x, *y)) + Rectangle::new([(-6, -6), (6, 6)], GREY.filled())
            }))
            .map_err(err)?
            .label("heartbeat writes/min, measured (right axis)")
            .legend(|(x, y)| {
                EmptyElement::at((x + 10, y))
                    + Rectangle::new([(-5, -5), (5, 5)], GREY.filled())
                    + PathElement::new(vec![(-10, 0), (10, 0)], GREY.stroke_width(2))
            });
        chart
            .draw_secondary_series(DashedLineSeries::new(
                expected,
                10,
                6,
                GREY.mix(0.7).stroke_width(2),
            ))
            .map_err(err)?
            .label("heartbeat writes/min, expected: 20 x 60 / interval")
            .legend(|(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (8, 0)], GREY.stroke_width(2))
                    + PathElement::new(vec![(13, 0), (20, 0)], GREY.stroke_width(2))
            });
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font(("sans-serif", 17))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(err)?;
        let samples: usize = self.points.iter().map(|p| p.samples).sum();
        root.draw(&Text::new(
            format!(
                "From each crash record to the store write that claims each orphaned task again: {CRASHING_FLEET_WORKERS} workers x 4 slots, 40 long tasks, 1 reclaimer, {SEEDS} seeds per setting, {samples} tasks."
            ),
            (20, HEIGHT_PX as i32 - 24),
            note_font(),
        ))
        .map_err(err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analytic_median_is_lease_plus_half_an_interval() {
        let p50 = analytic_quantile_ms(5_000, 15_000, 0.5);
        assert!((p50 - 17_500.0).abs() < 1.0, "{p50}");
        let p99 = analytic_quantile_ms(5_000, 15_000, 0.99);
        // L + 2P - P * sqrt(2 * 2 * 0.01) = 15 + 10 - 1 s.
        assert!((p99 - 24_000.0).abs() < 1.0, "{p99}");
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let s: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile_us(&s, 0.5), 50.0);
        assert_eq!(percentile_us(&s, 0.99), 99.0);
        assert!(percentile_us(&[], 0.5).is_nan());
    }
}
