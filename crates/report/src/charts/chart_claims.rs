//! Claims at fleet scale: store operations and lost claim races per task
//! against fleet size, for the correct protocol's spread claims and for the
//! planted `herd-claims` (every idle worker reading the same head of the
//! pending index), on friday-rush's shape resized ([`fleet_rush`]).

use super::sweep_scenarios::{RUSH_CRASH_SHARE, RUSH_TASKS_PER_WORKER, fleet_rush};
use leasehold_interface::StoreReply;
use leasehold_protocol::{DocKey, DocValue, LeaseEvent, TaskState, Variant};
use leasehold_run::run::simulate;
use leasehold_sim::{Observer, Record, RecordKind};
use std::time::Instant;

pub const FLEET_SIZES: [u32; 8] = [10, 20, 100, 300, 1_000, 2_000, 3_000, 10_000];
/// The two ways of claiming, drawn in this order.
pub const VARIANTS: [Variant; 2] = [Variant::Correct, Variant::HerdClaims];
pub const SEED: u64 = 1;
/// The targets, drawn as guides: conflicts per task at most this
/// at 2,000 workers...
pub const TARGET_CONFLICTS_PER_TASK: f64 = 0.2;
/// ...and store operations per task within this factor of 20 workers'.
pub const TARGET_OPS_RATIO: f64 = 1.3;

#[derive(Clone, Debug)]
pub struct ClaimsPoint {
    pub workers: u32,
    pub variant: Variant,
    pub tasks: u32,
    /// Every store request (reads and writes), per task.
    pub store_ops_per_task: f64,
    /// Conditional writes refused, per task: nearly all lost claim races.
    pub conflicts_per_task: f64,
    /// Claim attempts, won or lost, per task.
    pub claims_per_task: f64,
    pub events_per_task: f64,
    /// From a task becoming pending (created or re-queued) to the claim
    /// that took it landing, in milliseconds: the median and the 99th
    /// percentile.
    pub pickup_p50_ms: f64,
    pub pickup_p99_ms: f64,
    pub events: u64,
    pub wall_s: f64,
    pub violations: Vec<String>,
}

/// How long pending tasks wait to be claimed, judged from the store's
/// records: when each task's document was last written pending, and when a
/// claim moved it on.
pub struct PickupMeter {
    /// By task id: when it last became pending, in simulated
    /// microseconds; `u64::MAX` while it is not pending.
    pending_since_us: Vec<u64>,
    /// Every pickup, in microseconds.
    pub waits_us: Vec<u64>,
}

impl PickupMeter {
    pub fn new(tasks: u32) -> PickupMeter {
        PickupMeter {
            pending_since_us: vec![u64::MAX; tasks as usize],
            waits_us: Vec::with_capacity(tasks as usize),
        }
    }

    /// The `q` quantile of the waits, in milliseconds (0 for none).
    pub fn quantile_ms(&mut self, q: f64) -> f64 {
        assert!((0.0..=1.0).contains(&q));
        if self.waits_us.is_empty() {
            return 0.0;
        }
        self.waits_us.sort_unstable();
        let at = ((self.waits_us.len() - 1) as f64 * q).round() as usize;
        self.waits_us[at] as f64 / 1e3
    }
}

impl Observer<DocKey, DocValue, LeaseEvent> for PickupMeter {
    fn record(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        let RecordKind::Store { op, reply, .. } = &record.kind else {
            return;
        };
        let (Some(DocKey::Task { task }), Some(value), StoreReply::Written { .. }) =
            (op.key(), op.value(), reply)
        else {
            return;
        };
        let Some(doc) = value.as_task() else {
            return;
        };
        let since = &mut self.pending_since_us[task.0 as usize];
        match doc.state {
            // A pending task written pending again (a claim voided in task
            // mode) has waited since it first became pending.
            TaskState::Pending if *since == u64::MAX => *since = record.time_us,
            TaskState::Pending => {}
            _ if *since != u64::MAX => {
                self.waits_us.push(record.time_us - *since);
                *since = u64::MAX;
            }
            _ => {}
        }
    }
}

pub fn measure(workers: u32, variant: Variant, seed: u64) -> ClaimsPoint {
    let scn = fleet_rush(workers);
    let mut pickup = PickupMeter::new(scn.scenario.tasks.count);
    let started = Instant::now();
    let outcome = simulate(&scn, seed, variant, Some(&mut pickup));
    let wall_s = started.elapsed().as_secs_f64();
    // These runs go to the end: every invariant must hold, and every task
    // must be done, or the figures per task mean nothing.
    let mut violations: Vec<String> = outcome
        .violations
        .iter()
        .map(|v| {
            format!(
                "{} seed {seed} variant {variant}: {}: {}",
                outcome.scenario, v.invariant, v.message
            )
        })
        .collect();
    if outcome.tasks_done != outcome.tasks_total || outcome.cut_short.is_some() {
        violations.push(format!(
            "{} seed {seed} variant {variant}: {} of {} tasks done",
            outcome.scenario, outcome.tasks_done, outcome.tasks_total
        ));
    }
    let tasks = outcome.tasks_total;
    let per_task = |n: u64| n as f64 / f64::from(tasks.max(1));
    let (ops, conflicts) = outcome.stats.as_ref().map_or((0, 0), |s| {
        (s.store.reads() + s.store.writes(), s.store.conflicts)
    });
    ClaimsPoint {
        workers,
        variant,
        tasks,
        store_ops_per_task: per_task(ops),
        conflicts_per_task: per_task(conflicts),
        claims_per_task: per_task(outcome.load.claims),
        events_per_task: per_task(outcome.events()),
        pickup_p50_ms: pickup.quantile_ms(0.5),
        pickup_p99_ms: pickup.quantile_ms(0.99),
        events: outcome.events(),
        wall_s,
        violations,
    }
}

pub struct ClaimsChart {
    /// By variant (as in [`VARIANTS`]), then by fleet size.
    pub points: Vec<ClaimsPoint>,
}

impl ClaimsChart {
    fn series(&self, variant: Variant) -> impl Iterator<Item = &ClaimsPoint> {
        self.points.iter().filter(move |p| p.variant == variant)
    }

    /// The correct protocol's store operations per task at 20 workers, if
    /// measured: what the target ratio is taken against.
    fn ops_at_20(&self) -> Option<f64> {
        self.series(Variant::Correct)
            .find(|p| p.workers == 20)
            .map(|p| p.store_ops_per_task)
    }
}

pub fn sweep() -> ClaimsChart {
    let mut runs: Vec<(u32, Variant)> = FLEET_SIZES
        .iter()
        .flat_map(|&w| VARIANTS.map(|v| (w, v)))
        .collect();
    runs.sort_by_key(|&(w, v)| (std::cmp::Reverse(w), v == Variant::Correct)); // costly first
    let mut points = leasehold_explore::parallel::map(&runs, |&(w, v)| measure(w, v, SEED));
    let place = |v: Variant| VARIANTS.iter().position(|x| *x == v);
    points.sort_by_key(|p| (place(p.variant), p.workers));
    ClaimsChart { points }
}

impl super::render::SweptChart for ClaimsChart {
    fn violations(&self) -> Vec<String> {
        self.points
            .iter()
            .flat_map(|p| p.violations.clone())
            .collect()
    }

    fn table(&self) -> super::table::Table {
        let mut t = super::table::Table::new(vec![
            "claiming",
            "workers",
            "tasks",
            "store_ops_per_task",
            "ops_vs_20_workers",
            "conflicts_per_task",
            "claims_per_task",
            "events_per_task",
            "pickup_p50_ms",
            "pickup_p99_ms",
            "events",
            "wall_s",
        ]);
        let base = self.ops_at_20();
        for p in &self.points {
            t.push(vec![
                p.variant.name().to_string(),
                p.workers.to_string(),
                p.tasks.to_string(),
                format!("{:.2}", p.store_ops_per_task),
                base.map_or("n/a".into(), |b| format!("{:.2}", p.store_ops_per_task / b)),
                format!("{:.3}", p.conflicts_per_task),
                format!("{:.2}", p.claims_per_task),
                format!("{:.1}", p.events_per_task),
                format!("{:.0}", p.pickup_p50_ms),
                format!("{:.0}", p.pickup_p99_ms),
                p.events.to_string(),
                format!("{:.2}", p.wall_s),
            ]);
        }
        t
    }
}

impl super::render::ChartImage for ClaimsChart {
    fn draw<DB: plotters::prelude::DrawingBackend>(
        &self,
        root: &plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        use super::render::*;
        use plotters::prelude::*;
        let (left, right) = titled_panels(
            root,
            "Claims at fleet scale: cost per task against fleet size",
            WIDTH_PX / 2,
        )?;
        let (x_lo, x_hi) = (7.0, 15_000.0);
        let styles = [
            (Variant::Correct, WORKER_COLOR, "correct: claims spread"),
            (
                Variant::HerdClaims,
                TASK_COLORS[2],
                "herd-claims: the old claiming",
            ),
        ];
        let ops_hi = self
            .points
            .iter()
            .map(|p| p.store_ops_per_task)
            .fold(10.0, f64::max)
            * 1.15;
        let mut ops = ChartBuilder::on(&left)
            .margin(15)
            .x_label_area_size(60)
            .y_label_area_size(70)
            .caption("store operations per task", label_font())
            .build_cartesian_2d(log_decades(x_lo, x_hi), 0.0..ops_hi)
            .map_err(err)?;
        ops.configure_mesh()
            .x_desc("workers in the fleet (log scale)")
            .y_desc("store operations per task")
            .x_label_formatter(&|v| si_label(*v))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .house_mesh()
            .draw()
            .map_err(err)?;
        let (c_lo, c_hi) = (0.01, 100.0);
        let mut conflicts = ChartBuilder::on(&right)
            .margin(15)
            .x_label_area_size(60)
            .y_label_area_size(70)
            .caption("claims lost to a conflict, per task", label_font())
            .build_cartesian_2d(log_decades(x_lo, x_hi), log_decades(c_lo, c_hi))
            .map_err(err)?;
        conflicts
            .configure_mesh()
            .x_desc("workers in the fleet (log scale)")
            .y_desc("conflicts per task (log scale)")
            .x_label_formatter(&|v| si_label(*v))
            .y_label_formatter(&|v| format!("{v}"))
            .house_mesh()
            .draw()
            .map_err(err)?;
        for (variant, color, label) in styles {
            let pts: Vec<&ClaimsPoint> = self.series(variant).collect();
            let line: Vec<(f64, f64)> = pts
                .iter()
                .map(|p| (p.workers as f64, p.store_ops_per_task))
                .collect();
            ops.draw_series(LineSeries::new(line.clone(), color.stroke_width(3)))
                .map_err(err)?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                });
            ops.draw_series(
                line.iter()
                    .map(|&(x, y)| Circle::new((x, y), 5, color.filled())),
            )
            .map_err(err)?;
            let line: Vec<(f64, f64)> = pts
                .iter()
                .map(|p| (p.workers as f64, p.conflicts_per_task.clamp(c_lo, c_hi)))
                .collect();
            conflicts
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(3)))
                .map_err(err)?;
            conflicts
                .draw_series(
                    line.iter()
                        .map(|&(x, y)| Circle::new((x, y), 5, color.filled())),
                )
                .map_err(err)?;
        }
        let dashed = |from: (f64, f64), to: (f64, f64)| {
            DashedLineSeries::new(vec![from, to], 10, 6, BLACK.stroke_width(2))
        };
        let dash_legend = |(x, y): (i32, i32)| {
            EmptyElement::at((x, y))
                + PathElement::new(vec![(0, 0), (8, 0)], BLACK.stroke_width(2))
                + PathElement::new(vec![(12, 0), (18, 0)], BLACK.stroke_width(2))
        };
        if let Some(base) = self.ops_at_20() {
            let bound = base * TARGET_OPS_RATIO;
            ops.draw_series(dashed((x_lo, bound), (x_hi, bound)))
                .map_err(err)?
                .label(format!(
                    "target: {TARGET_OPS_RATIO} x the 20-worker run ({bound:.1})"
                ))
                .legend(dash_legend);
        }
        ops.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font(("sans-serif", 16))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(err)?;
        conflicts
            .draw_series(dashed(
                (x_lo, TARGET_CONFLICTS_PER_TASK),
                (x_hi, TARGET_CONFLICTS_PER_TASK),
            ))
            .map_err(err)?
            .label(format!(
                "target: at most {TARGET_CONFLICTS_PER_TASK} a task"
            ))
            .legend(dash_legend);
        conflicts
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font(("sans-serif", 16))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(err)?;
        root.draw(&Text::new(
            format!(
                "friday-rush's shape at each size: {RUSH_TASKS_PER_WORKER} three-step tasks per worker over 3 minutes, 4 slots, idle polls backing off to 8 s, {:.0}% of the workers dying at once; seed {SEED}, every task done.",
                RUSH_CRASH_SHARE * 100.0
            ),
            (20, HEIGHT_PX as i32 - 50),
            note_font(),
        ))
        .map_err(err)?;
        root.draw(&Text::new(
            "herd-claims: every idle worker reads the same head of the pending index. correct: each poll reads one arc of it, as narrow as the worker's lost races say.",
            (20, HEIGHT_PX as i32 - 26),
            note_font(),
        ))
        .map_err(err)?;
        Ok(())
    }
}
