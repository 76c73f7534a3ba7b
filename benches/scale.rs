//! Scaling with the work: one simulated hour of friday-rush resized to 10,
//! 100 and 1,000 workers (1,000 to 100,000 tasks; criterion, 10 samples each)
//! and to 10,000 workers with 1,000,000 tasks, the scale target
//! (under 60 s and 2 GiB), timed as single runs: criterion's minimum of ten
//! samples would be ten minutes of a shared machine. The cost per event
//! should stay flat across sizes.
//!
//! `cargo bench --bench scale`; `LEASEHOLD_BENCH_HOUR_RUNS=3` times the
//! 10,000-worker hour three times and reports the median. Under
//! `cargo test --benches` only the 10-worker hour runs, once.

mod common;

use common::{Batch, bench_mode, criterion_median_s, machine};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use leasehold::measure::{CountingAllocator, fmt_bytes, fmt_thousands, peak_rss_bytes};
use leasehold::scaled_scenario::one_hour_fleet;
use leasehold::simulate;
use leasehold_protocol::Variant;
use std::hint::black_box;
use std::time::{Duration, Instant};

#[global_allocator]
static HEAP: CountingAllocator = CountingAllocator::new();

const GROUP: &str = "one-simulated-hour";
const SEED: u64 = 1;

fn id(workers: u32) -> String {
    format!("{workers}-workers")
}

struct Row {
    workers: u32,
    batch: Batch,
    wall_s: Option<f64>,
}

fn print_rows(rows: &[Row]) {
    println!();
    println!("one simulated hour, seed {SEED} (one core; {})", machine());
    println!(
        "  {:>7} {:>9} {:>12} {:>9} {:>10} {:>9} {:>8} {:>11}",
        "workers", "tasks", "events", "wall s", "events/s", "ns/event", "sim s", "peak heap"
    );
    for r in rows {
        let b = &r.batch;
        let (wall, rate, ns) = match r.wall_s {
            Some(w) => (
                format!("{w:.2}"),
                format!("{:.2} M", b.events as f64 / w / 1e6),
                format!("{:.0}", w * 1e9 / b.events as f64),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        println!(
            "  {:>7} {:>9} {:>12} {:>9} {:>10} {:>9} {:>8.0} {:>11}",
            fmt_thousands(r.workers as u64),
            fmt_thousands(r.workers as u64 * 100),
            fmt_thousands(b.events),
            wall,
            rate,
            ns,
            b.sim_time_us as f64 / 1e6,
            fmt_bytes(b.peak_heap_bytes as u64)
        );
    }
}

fn scale(c: &mut Criterion) {
    let sizes: &[u32] = if bench_mode() {
        &[10, 100, 1_000]
    } else {
        &[10]
    };
    let mut rows = Vec::new();
    let mut g = c.benchmark_group(GROUP);
    g.sample_size(10).warm_up_time(Duration::from_millis(500));
    for &workers in sizes {
        let scn = one_hour_fleet(workers).expect("scaled scenarios are valid");
        let batch = Batch::learn(&scn, SEED..=SEED, |run| HEAP.peak_of(run).1);
        g.throughput(Throughput::Elements(batch.events));
        g.bench_function(id(workers), |b| {
            b.iter(|| black_box(simulate(&scn, SEED, Variant::Correct, None)))
        });
        rows.push(Row {
            workers,
            batch,
            wall_s: None,
        });
    }
    g.finish();
    for r in rows.iter_mut() {
        r.wall_s = criterion_median_s(GROUP, &id(r.workers));
    }
    if !bench_mode() {
        return;
    }
    rows.push(hour_at_scale());
    print_rows(&rows);
}

/// The scale target: 10,000 workers, 1,000,000 tasks, one simulated hour.
/// The first run measures the heap peak (counting allocator; its per-
/// allocation cost is paid only there) and is not timed; then
/// `LEASEHOLD_BENCH_HOUR_RUNS` (default 1) timed runs.
fn hour_at_scale() -> Row {
    let workers = 10_000;
    let scn = one_hour_fleet(workers).expect("scaled scenarios are valid");
    let timed_runs: usize = std::env::var("LEASEHOLD_BENCH_HOUR_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let batch = Batch::learn(&scn, SEED..=SEED, |run| HEAP.peak_of(run).1);
    let mut walls = Vec::new();
    for _ in 0..timed_runs {
        let started = Instant::now();
        black_box(simulate(&scn, SEED, Variant::Correct, None));
        walls.push(started.elapsed().as_secs_f64());
    }
    walls.sort_by(f64::total_cmp);
    let wall_s = walls[walls.len() / 2];
    let peak = batch.peak_heap_bytes as u64;
    println!();
    println!(
        "{workers} workers, {} tasks, one simulated hour: {wall_s:.1} s wall (median of {timed_runs}; target < 60 s), \
         peak heap {} (target < 2 GiB), process peak RSS {}",
        fmt_thousands(workers as u64 * 100),
        fmt_bytes(peak),
        peak_rss_bytes().map_or("unknown".into(), fmt_bytes)
    );
    Row {
        workers,
        batch,
        wall_s: Some(wall_s),
    }
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = scale
}
criterion_main!(benches);
