//! Figures about the tool itself: throughput, time compression, peak memory.
//!
//! None of this is an input to a run. Wall time and memory are read around
//! runs, by the CLI and the benches, never inside one (a run is a pure
//! function of scenario, seed and variant).

use serde::Serialize;
use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// What a batch of runs did and how long it took on the wall clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Throughput {
    pub seeds: u64,
    pub events: u64,
    /// Simulated time, summed over the runs.
    pub sim_time_us: u64,
    pub wall_s: f64,
}

impl Throughput {
    /// One seed's figures (both runs' worth when it was run twice to check
    /// determinism).
    pub fn add_run(&mut self, events: u64, sim_time_us: u64) {
        self.seeds += 1;
        self.events += events;
        self.sim_time_us += sim_time_us;
    }

    fn wall(&self) -> f64 {
        self.wall_s.max(1e-9)
    }

    pub fn seeds_per_sec(&self) -> f64 {
        self.seeds as f64 / self.wall()
    }

    pub fn events_per_sec(&self) -> f64 {
        self.events as f64 / self.wall()
    }

    /// Simulated seconds per wall-clock second.
    pub fn time_compression(&self) -> f64 {
        self.sim_time_us as f64 / 1e6 / self.wall()
    }
}

/// The process's peak resident set size so far (`VmHWM`), in bytes; `None`
/// where `/proc` is not available. It covers everything the process touched,
/// the tool itself included, so for a single run it is that run's peak plus a
/// few MiB, and for a sweep the largest of its runs (pages are reused).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    proc_status_kib(&status, "VmHWM:").map(|kib| kib * 1024)
}

/// The current resident set size (`VmRSS`), in bytes.
pub fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    proc_status_kib(&status, "VmRSS:").map(|kib| kib * 1024)
}

fn proc_status_kib(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    let value = line[field.len()..].trim();
    let kib = value.strip_suffix("kB").unwrap_or(value).trim();
    kib.parse().ok()
}

/// `", 23,456x time compression, peak memory 9.8 MiB"`: what the CLI appends
/// to its throughput figures.
pub fn fmt_compression_and_memory(time_compression: f64, peak_rss_bytes: Option<u64>) -> String {
    let memory = peak_rss_bytes.map_or_else(|| "unknown".to_string(), fmt_bytes);
    format!(
        ", {}x time compression, peak memory {memory}",
        fmt_thousands(time_compression.round() as u64)
    )
}

/// `1234567` -> `"1,234,567"`.
pub fn fmt_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1536` -> `"1.5 KiB"`.
pub fn fmt_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A global allocator that can measure what a piece of code does with the
/// heap, for benches and tests: install it with `#[global_allocator]` and
/// wrap a run in [`CountingAllocator::peak_of`] (the high-water mark) or
/// [`CountingAllocator::use_of`] (that, and allocations made). Exact for
/// heap memory (what a run allocates), unlike RSS, which also counts the
/// binary, stacks and pages the allocator keeps.
///
/// Counting is on only inside `peak_of` and `use_of`, and only for the
/// thread that called them (a run is single-threaded; a test harness's
/// own threads stay out of the figures). Otherwise each allocation pays
/// one thread-local load, so timed runs are not slowed by the bookkeeping.
/// While on, it counts net bytes since the start (frees of older memory
/// count negative), so the peak is what the measured code added at its
/// worst. The counters are shared, so measurements on different threads
/// take turns (a lock in `use_of`), and a nested one panics.
pub struct CountingAllocator {
    /// Held for the whole of one measurement. A futex lock: taking it
    /// does not allocate.
    turn: Mutex<()>,
    live: AtomicIsize,
    peak: AtomicIsize,
    allocations: AtomicU64,
    allocated: AtomicU64,
}

thread_local! {
    /// Whether this thread's allocations are counted. Constant-initialised
    /// and without a destructor, so reading it never allocates (it is read
    /// inside the allocator) and works while a thread exits.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

/// What a piece of code did with the heap (see [`CountingAllocator::use_of`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapUse {
    /// The most bytes held at once, beyond what was live at the start. A
    /// `realloc` counts its new block before it frees the old one, so a
    /// resize in place overstates the peak by the old size: an upper bound.
    pub peak_bytes: usize,
    /// Allocations made (`alloc`, `alloc_zeroed`, and each `realloc`).
    pub allocations: u64,
    /// Bytes those allocations asked for, in total (a `realloc` counts its
    /// new size).
    pub allocated_bytes: u64,
}

impl CountingAllocator {
    pub const fn new() -> CountingAllocator {
        CountingAllocator {
            turn: Mutex::new(()),
            live: AtomicIsize::new(0),
            peak: AtomicIsize::new(0),
            allocations: AtomicU64::new(0),
            allocated: AtomicU64::new(0),
        }
    }

    /// Run `f` and return its result with the most heap bytes it held at
    /// once (beyond what was live when it started).
    pub fn peak_of<R>(&self, f: impl FnOnce() -> R) -> (R, usize) {
        let (result, heap) = self.use_of(f);
        (result, heap.peak_bytes)
    }

    /// Run `f` and return its result with what it did with the heap: its
    /// peak, and how many allocations of how many bytes it made. The counts
    /// are a pure function of the code run, so tests can bound them (a
    /// per-event allocation that grows with history shows here).
    pub fn use_of<R>(&self, f: impl FnOnce() -> R) -> (R, HeapUse) {
        // Before the counters are reset: a nested call must not clobber
        // the measurement it is inside.
        assert!(!COUNTING.get(), "one measurement at a time");
        // A measurement that panicked released the lock and its counters
        // are reset below: the poison carries nothing.
        let _turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        self.live.store(0, Ordering::Relaxed);
        self.peak.store(0, Ordering::Relaxed);
        self.allocations.store(0, Ordering::Relaxed);
        self.allocated.store(0, Ordering::Relaxed);
        /// Stops counting however `f` ends, a panic included.
        struct StopCounting;
        impl Drop for StopCounting {
            fn drop(&mut self) {
                COUNTING.set(false);
            }
        }
        COUNTING.set(true);
        let stop = StopCounting;
        let result = f();
        drop(stop);
        let heap = HeapUse {
            peak_bytes: self.peak.load(Ordering::Relaxed).max(0) as usize,
            allocations: self.allocations.load(Ordering::Relaxed),
            allocated_bytes: self.allocated.load(Ordering::Relaxed),
        };
        (result, heap)
    }

    #[inline]
    fn added(&self, bytes: usize) {
        if COUNTING.get() {
            let live = self.live.fetch_add(bytes as isize, Ordering::Relaxed) + bytes as isize;
            self.peak.fetch_max(live, Ordering::Relaxed);
            self.allocations.fetch_add(1, Ordering::Relaxed);
            self.allocated.fetch_add(bytes as u64, Ordering::Relaxed);
        }
    }

    #[inline]
    fn removed(&self, bytes: usize) {
        if COUNTING.get() {
            self.live.fetch_sub(bytes as isize, Ordering::Relaxed);
        }
    }
}

impl Default for CountingAllocator {
    fn default() -> Self {
        CountingAllocator::new()
    }
}

// SAFETY: every call is forwarded unchanged to mimalloc (the allocator the
// CLI installs, so benches time what users run); the
// counters are bookkeeping on the side and never touch the memory.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract; we pass it on.
        let ptr = unsafe { mimalloc::MiMalloc.alloc(layout) };
        if !ptr.is_null() {
            self.added(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) };
        if !ptr.is_null() {
            self.added(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator (so from mimalloc) with
        // `layout`, as the caller guarantees.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) };
        self.removed(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`, and `new_size` is valid per the caller.
        let new = unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            // Grow first: a moving realloc holds both blocks for a moment.
            self.added(new_size);
            self.removed(layout.size());
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_compression() {
        let mut t = Throughput::default();
        t.add_run(1_000, 60_000_000);
        t.add_run(3_000, 60_000_000);
        t.wall_s = 2.0;
        assert_eq!(t.seeds_per_sec(), 1.0);
        assert_eq!(t.events_per_sec(), 2_000.0);
        assert_eq!(t.time_compression(), 60.0);
    }

    #[test]
    fn proc_status_is_parsed() {
        let status = "Name:\tx\nVmHWM:\t  123456 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(proc_status_kib(status, "VmHWM:"), Some(123_456));
        assert_eq!(proc_status_kib(status, "VmRSS:"), Some(1_000));
        assert_eq!(proc_status_kib(status, "VmPeak:"), None);
        if cfg!(target_os = "linux") {
            assert!(peak_rss_bytes().unwrap() >= rss_bytes().unwrap() / 2);
        }
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(fmt_thousands(0), "0");
        assert_eq!(fmt_thousands(999), "999");
        assert_eq!(fmt_thousands(1_000), "1,000");
        assert_eq!(fmt_thousands(1_234_567), "1,234,567");
        assert_eq!(
            fmt_compression_and_memory(12_345.4, Some(10 * 1024 * 1024)),
            ", 12,345x time compression, peak memory 10.0 MiB"
        );
    }

    #[test]
    fn bytes_are_formatted_in_binary_units() {
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
        assert_eq!(fmt_bytes(3 * 1024 * 1024 * 1024), "3.0 GiB");
    }

    #[test]
    fn the_counting_allocator_tracks_a_high_water_mark_and_allocations() {
        let a = CountingAllocator::new();
        let layout = Layout::from_size_align(4096, 8).unwrap();
        // Not counting: nothing recorded.
        // SAFETY: a valid non-zero layout, freed with the same layout.
        unsafe { a.dealloc(a.alloc(layout), layout) };
        let ((), heap) = a.use_of(|| {
            // SAFETY: valid layouts; each block is freed with its own.
            unsafe {
                let p = a.alloc(layout);
                assert!(!p.is_null());
                let q = a.realloc(p, layout, 8192);
                assert!(!q.is_null());
                a.dealloc(q, Layout::from_size_align(8192, 8).unwrap());
                let r = a.alloc(layout);
                a.dealloc(r, layout);
            }
            // Another thread's allocations are not the measured code's.
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    // SAFETY: as above.
                    unsafe { a.dealloc(a.alloc(layout), layout) };
                });
            });
        });
        assert_eq!(
            heap,
            HeapUse {
                peak_bytes: 4096 + 8192,
                allocations: 3,
                allocated_bytes: 4096 + 8192 + 4096,
            }
        );
        let ((), peak) = a.peak_of(|| ());
        assert_eq!(peak, 0);
        let ((), none) = a.use_of(|| ());
        assert_eq!(none, HeapUse::default());
    }

    #[test]
    fn a_measurement_that_panics_stops_counting_and_frees_its_turn() {
        let a = CountingAllocator::new();
        let layout = Layout::from_size_align(64, 8).unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            a.use_of(|| panic!("the measured code fails"))
        }));
        assert!(caught.is_err());
        // Not counting any more: an allocation now is nobody's.
        assert!(!COUNTING.get());
        // SAFETY: a valid non-zero layout, freed with the same layout.
        unsafe { a.dealloc(a.alloc(layout), layout) };
        // And the next measurement is neither nested nor locked out.
        let ((), heap) = a.use_of(|| {
            // SAFETY: as above.
            unsafe { a.dealloc(a.alloc(layout), layout) };
        });
        assert_eq!(
            heap,
            HeapUse {
                peak_bytes: 64,
                allocations: 1,
                allocated_bytes: 64,
            }
        );
    }

    #[test]
    #[should_panic(expected = "one measurement at a time")]
    fn a_nested_measurement_panics() {
        let a = CountingAllocator::new();
        a.use_of(|| a.use_of(|| ()));
    }
}
