//! Independent runs on all cores. Each run is single-threaded and a pure
//! function of its inputs, so the order in which threads pick them up changes
//! nothing but the wall time.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` over `items` on up to `available_parallelism` threads; results in the
/// order of `items`. Costly items first keeps the cores busy to the end.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    map_on(crate::sweep_engine::default_jobs(), items, f)
}

/// [`map`] on up to `jobs` threads.
pub fn map_on<T: Sync, R: Send>(jobs: usize, items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = jobs.max(1).min(items.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    results.lock().expect("no thread panics holding it")[i] = Some(r);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("threads joined")
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}
