//! friday-rush on one core: seeds/s, simulated events/s, time compression,
//! peak heap per run, and the event-queue floor (the same number of events
//! pushed and popped through the same queue, nothing else) with the ratio
//! run/floor, and the difference per event: what the simulation adds to
//! its queue.
//!
//! `cargo bench --bench friday_rush` prints criterion's report for each
//! benchmark, then a summary built from criterion's medians. Under
//! `cargo test --benches` every benchmark runs once, on two seeds.

mod common;

use common::{Batch, bench_mode, criterion_median_s, machine};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use leasehold::measure::{CountingAllocator, fmt_bytes, fmt_thousands};
use leasehold::{Scenario, simulate};
use leasehold_protocol::{DocKey, DocValue, Variant};
use leasehold_sim::queue_floor;
use std::hint::black_box;
use std::time::Duration;

#[global_allocator]
static HEAP: CountingAllocator = CountingAllocator::new();

const GROUP: &str = "friday-rush";
const RUN: &str = "seeds-1-to-20";
const FLOOR: &str = "queue-floor";

fn friday_rush(c: &mut Criterion) {
    let scn = Scenario::parse(include_str!("../scenarios/friday-rush.json"))
        .expect("friday-rush is valid");
    let seeds = if bench_mode() { 1..=20 } else { 1..=2 };
    let batch = Batch::learn(&scn, seeds.clone(), |run| HEAP.peak_of(run).1);
    let depth = batch.mean_queue_len();

    let mut g = c.benchmark_group(GROUP);
    g.sample_size(20).measurement_time(Duration::from_secs(10));
    // Both in events: criterion's "thrpt" is events/s for the run and for
    // the floor, side by side.
    g.throughput(Throughput::Elements(batch.events));
    g.bench_function(RUN, |b| {
        b.iter(|| {
            for seed in seeds.clone() {
                black_box(simulate(&scn, seed, Variant::Correct, None));
            }
        })
    });
    g.bench_function(FLOOR, |b| {
        b.iter(|| black_box(queue_floor::<DocKey, DocValue>(batch.events, depth, 1)))
    });
    g.finish();

    let (Some(run_s), Some(floor_s)) = (
        criterion_median_s(GROUP, RUN),
        criterion_median_s(GROUP, FLOOR),
    ) else {
        return; // test mode: nothing was timed
    };
    let events_per_s = batch.events as f64 / run_s;
    println!();
    println!(
        "friday-rush summary (criterion medians, one core; {})",
        machine()
    );
    println!(
        "  seeds {}..={}: {} events, {:.1} s simulated, mean queue depth {depth}",
        seeds.start(),
        seeds.end(),
        fmt_thousands(batch.events),
        batch.sim_time_us as f64 / 1e6
    );
    println!("  seeds/s            {:.1}", batch.seeds as f64 / run_s);
    println!("  events/s           {:.2} M", events_per_s / 1e6);
    println!(
        "  time compression   {}x (simulated s per wall s)",
        fmt_thousands((batch.sim_time_us as f64 / 1e6 / run_s) as u64)
    );
    println!(
        "  peak heap per run  {} (largest of the batch, counting allocator)",
        fmt_bytes(batch.peak_heap_bytes as u64)
    );
    println!(
        "  queue floor        {:.2} M events/s ({} events at depth {depth})",
        batch.events as f64 / floor_s / 1e6,
        fmt_thousands(batch.events)
    );
    println!("  run / floor        {:.2}x", run_s / floor_s);
    // What the simulation adds to its queue, per event: the ratio alone
    // rises when the queue gets cheaper, this does not.
    let ns_per_event = |s: f64| s * 1e9 / batch.events as f64;
    println!(
        "  beyond the queue   {:.0} ns/event ({:.0} ns/event run, {:.0} floor)",
        ns_per_event(run_s) - ns_per_event(floor_s),
        ns_per_event(run_s),
        ns_per_event(floor_s)
    );
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = friday_rush
}
criterion_main!(benches);
