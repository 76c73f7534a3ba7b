//! The work per event stays flat as the fleet grows (issue 8): no scan that
//! grows with the whole store per heartbeat, no per-event allocation that
//! grows with history or with the fleet.
//!
//! Wall time is never measured here (that is the benches' job). These are
//! counts, pure functions of the run: events, heap allocations and bytes
//! (a counting allocator, this test binary's global allocator, counting
//! only the thread that runs the simulation), documents the store returned
//! to scans, and the heap peak. One simulated hour of friday-rush resized
//! to 10, 100 and 1,000 workers (the scale bench's scenarios), seed 1; each
//! figure per event (or per task, or per worker and simulated second) may
//! rise from a smaller fleet to a larger one by at most `MAX_RISE`.
//!
//! Shown firing here: the two allocation figures, on deliberately broken
//! observers. Not shown: documents scanned, events per worker-second and
//! peak heap per task would need a protocol broken for cost, not for
//! correctness, which no variant is. (The herd of one-second idle polling,
//! which raises events per worker-second, is a 10,000-worker effect and
//! does not show by 1,000: see docs/performance.md.)
//!
//! The allocator's counters are shared: measurements on the test harness's
//! threads take turns inside `CountingAllocator::use_of`.

use leasehold::measure::{CountingAllocator, HeapUse};
use leasehold::run::ExtraObserver;
use leasehold::scaled_scenario::one_hour_fleet;
use leasehold::{ValidScenario, simulate};
use leasehold_protocol::Variant;
use leasehold_protocol::docs::{DocKey, DocValue};
use leasehold_protocol::events::LeaseEvent;
use leasehold_sim::record::{Observer, Record, RecordKind};
use std::hint::black_box;

#[global_allocator]
static HEAP: CountingAllocator = CountingAllocator::new();

const SEED: u64 = 1;
const FLEETS: [u32; 3] = [10, 100, 1_000];

/// What one run did, counted.
#[derive(Debug)]
struct Work {
    workers: u32,
    tasks: u32,
    events: u64,
    sim_time_s: f64,
    heap: HeapUse,
    docs_scanned: u64,
}

/// The most a figure may rise from a smaller fleet to a larger one, over
/// the 100-fold change of fleet and tasks here. It leaves room for what
/// legitimately changes with the size (the fault mix the seed draws, a
/// deeper queue and store: the closest figure, documents scanned per event,
/// rises 1.29x), not for a term that grows with the fleet or the history,
/// which multiplies a figure several times per tenfold step (5.4x for the
/// table-copying observer below).
const MAX_RISE: f64 = 1.5;

/// One per-unit figure.
struct Figure {
    name: &'static str,
    of: fn(&Work) -> f64,
}

const FIGURES: [Figure; 5] = [
    Figure {
        name: "heap allocations per event",
        of: |w| w.heap.allocations as f64 / w.events as f64,
    },
    Figure {
        name: "heap bytes allocated per event",
        of: |w| w.heap.allocated_bytes as f64 / w.events as f64,
    },
    Figure {
        name: "documents returned to scans per event",
        of: |w| w.docs_scanned as f64 / w.events as f64,
    },
    Figure {
        name: "events per worker per simulated second",
        of: |w| w.events as f64 / w.workers as f64 / w.sim_time_s,
    },
    Figure {
        name: "peak heap bytes per task",
        of: |w| w.heap.peak_bytes as f64 / w.tasks as f64,
    },
];

fn measure(scn: &ValidScenario, extra: Option<ExtraObserver<'_>>) -> Work {
    let (outcome, heap) = HEAP.use_of(|| simulate(scn, SEED, Variant::Correct, extra));
    assert!(
        outcome.ok(),
        "{} seed {SEED} failed: {:?}",
        scn.name(),
        outcome.violations.first()
    );
    let stats = outcome.stats.as_ref().expect("a healthy run has stats");
    Work {
        workers: scn.scenario.fleet.workers,
        tasks: outcome.tasks_total,
        events: stats.events,
        sim_time_s: stats.sim_time_us as f64 / 1e6,
        heap,
        docs_scanned: stats.store.docs_returned_by_scans,
    }
}

/// How much a figure rose with the fleet: the largest ratio of its value at
/// a fleet to its value at a smaller one (below 1 when it only fell, as
/// fixed costs spread over more tasks do).
fn rise(values: &[f64]) -> f64 {
    let mut most = 0.0f64;
    for (i, small) in values.iter().enumerate() {
        for large in &values[i + 1..] {
            most = most.max(large / small);
        }
    }
    most
}

/// The figures that rose past `MAX_RISE` across `runs` (in fleet order):
/// each figure's name, and a line saying by how much.
fn rises_beyond_bound(runs: &[Work]) -> Vec<(&'static str, String)> {
    assert!(runs.is_sorted_by_key(|w| w.workers) && runs.len() >= 2);
    let mut over = Vec::new();
    for figure in &FIGURES {
        let values: Vec<f64> = runs.iter().map(figure.of).collect();
        assert!(
            values.iter().all(|v| v.is_finite() && *v > 0.0),
            "{}: {values:?}",
            figure.name
        );
        let rise = rise(&values);
        println!(
            "{:<40} {}  rise {rise:.2} (bound {MAX_RISE})",
            figure.name,
            runs.iter()
                .zip(&values)
                .map(|(w, v)| format!("{} workers: {v:>10.3}", w.workers))
                .collect::<Vec<_>>()
                .join(", "),
        );
        if rise > MAX_RISE {
            let line = format!(
                "{} rose {rise:.2}x across fleets of {:?} workers (bound {MAX_RISE}x): {values:?}",
                figure.name,
                runs.iter().map(|w| w.workers).collect::<Vec<_>>(),
            );
            over.push((figure.name, line));
        }
    }
    over
}

/// Fleets of `sizes` workers, measured one after another, each with a
/// broken observer riding along if `mistake` names one.
fn measure_fleets(sizes: &[u32], mistake: Option<Mistake>) -> Vec<Work> {
    sizes
        .iter()
        .map(|&workers| {
            let scn = one_hour_fleet(workers).expect("scaled scenarios are valid");
            let mut observer = mistake.map(BrokenObserver::new);
            let extra = observer.as_mut().map(|o| o as ExtraObserver<'_>);
            measure(&scn, extra)
        })
        .collect()
}

#[test]
fn work_per_event_stays_flat_from_10_to_1000_workers() {
    let runs = measure_fleets(&FLEETS, None);
    for w in &runs {
        println!("{w:?}");
    }
    let over = rises_beyond_bound(&runs);
    assert!(over.is_empty(), "{over:#?}");
}

/// Mistakes a change could make, each costing more per event as the fleet
/// grows: what this file is here to catch.
#[derive(Clone, Copy)]
enum Mistake {
    /// Copy a table with one entry per node on every record.
    CopyNodeTable,
    /// Allocate one small box per node on every step.
    BoxPerNode,
}

/// An observer riding along in the run that makes `mistake`.
struct BrokenObserver {
    mistake: Mistake,
    last_step_us: Vec<u64>,
}

impl BrokenObserver {
    fn new(mistake: Mistake) -> BrokenObserver {
        BrokenObserver {
            mistake,
            last_step_us: Vec::new(),
        }
    }
}

impl Observer<DocKey, DocValue, LeaseEvent> for BrokenObserver {
    fn record(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        let step = match record.kind {
            RecordKind::Step { node, .. } => {
                if self.last_step_us.len() <= node.index() {
                    self.last_step_us.resize(node.index() + 1, 0);
                }
                self.last_step_us[node.index()] = record.time_us;
                true
            }
            _ => false,
        };
        match self.mistake {
            Mistake::CopyNodeTable => {
                black_box(self.last_step_us.clone());
            }
            Mistake::BoxPerNode if step => {
                let boxes: Vec<Box<u64>> = self.last_step_us.iter().map(|&t| Box::new(t)).collect();
                black_box(boxes);
            }
            Mistake::BoxPerNode => {}
        }
    }
}

/// The figures a guard over 10 and 100 workers reports when a broken
/// observer makes `mistake`.
fn figures_caught(mistake: Mistake) -> Vec<&'static str> {
    let over = rises_beyond_bound(&measure_fleets(&FLEETS[..2], Some(mistake)));
    over.iter().map(|(name, _)| *name).collect()
}

#[test]
fn a_per_event_copy_that_grows_with_the_fleet_is_caught() {
    // One allocation per record either way; its size grows.
    assert_eq!(
        figures_caught(Mistake::CopyNodeTable),
        ["heap bytes allocated per event"]
    );
}

#[test]
fn per_event_allocations_that_grow_with_the_fleet_are_caught() {
    assert_eq!(
        figures_caught(Mistake::BoxPerNode),
        [
            "heap allocations per event",
            "heap bytes allocated per event"
        ]
    );
}

#[test]
fn rise_is_the_largest_from_a_smaller_fleet_to_a_larger() {
    assert_eq!(rise(&[1.0, 1.0, 1.0]), 1.0);
    // Falling figures (fixed costs spread thinner) do not count as a rise.
    assert_eq!(rise(&[4.0, 2.0, 1.0]), 0.5);
    assert_eq!(rise(&[2.0, 1.0, 3.0]), 3.0);
    assert_eq!(rise(&[1.0, 3.0, 2.0]), 3.0);
}
