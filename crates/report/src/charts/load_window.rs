//! Store load inside a window of simulated time, judged from the records
//! (the store operations the simulator applied), never from what the
//! protocol says about itself.

use leasehold_check::NodeRole;
use leasehold_interface::{StoreReply, StoreRequest};
use leasehold_protocol::{DocKey, DocValue, LeaseEvent, TaskState};
use leasehold_run::store_load::{StoreLoad, StoreLoadCounter};
use leasehold_sim::{Observer, Record, RecordKind};

/// When the window lies.
#[derive(Clone, Copy, Debug)]
enum Span {
    Fixed {
        from_us: u64,
        to_us: u64,
    },
    /// Opens `settle_us` after `tasks` first run at once; lasts `window_us`.
    OnceRunning {
        tasks: u64,
        settle_us: u64,
        window_us: u64,
    },
}

pub struct LoadWindow<'a> {
    span: Span,
    counter: StoreLoadCounter<'a>,
    /// Every store operation in the window, whatever its kind.
    pub store_ops: u64,
    /// Documents returned by reclaimer scans (of heartbeat or lease
    /// documents) in the window: what scanning costs beyond the operations.
    pub scanned_docs: u64,
    /// Tasks running now (claimed, neither done nor re-queued).
    running: u64,
    /// Integral of `running` over the window, in task-microseconds.
    running_task_us: u128,
    last_us: u64,
}

impl<'a> LoadWindow<'a> {
    pub fn new(roles: &'a [NodeRole], from_us: u64, to_us: u64) -> LoadWindow<'a> {
        assert!(from_us < to_us, "an empty window");
        LoadWindow::with_span(roles, Span::Fixed { from_us, to_us })
    }

    /// A window that opens `settle_us` after `tasks` first run at once, and
    /// ends the run when it closes: steady state however long claiming took.
    pub fn once_running(
        roles: &'a [NodeRole],
        tasks: u64,
        settle_us: u64,
        window_us: u64,
    ) -> LoadWindow<'a> {
        assert!(tasks > 0 && window_us > 0);
        LoadWindow::with_span(
            roles,
            Span::OnceRunning {
                tasks,
                settle_us,
                window_us,
            },
        )
    }

    fn with_span(roles: &'a [NodeRole], span: Span) -> LoadWindow<'a> {
        LoadWindow {
            span,
            counter: StoreLoadCounter::new(roles),
            store_ops: 0,
            scanned_docs: 0,
            running: 0,
            running_task_us: 0,
            last_us: 0,
        }
    }

    /// `[from, to)` in simulated microseconds, once known.
    pub fn bounds_us(&self) -> Option<(u64, u64)> {
        match self.span {
            Span::Fixed { from_us, to_us } => Some((from_us, to_us)),
            Span::OnceRunning { .. } => None,
        }
    }

    fn window_us(&self) -> u64 {
        let (from, to) = self.bounds_us().expect("the window opened");
        to - from
    }

    pub fn window_minutes(&self) -> f64 {
        self.window_us() as f64 / 60e6
    }

    pub fn load(&self) -> &StoreLoad {
        &self.counter.load
    }

    /// `count` per minute of the window.
    pub fn per_minute(&self, count: u64) -> f64 {
        count as f64 / self.window_minutes()
    }

    /// Tasks running on average over the window. Call after the run.
    pub fn mean_running_tasks(&mut self) -> f64 {
        let (_, to) = self.bounds_us().expect("the window opened");
        self.advance(to);
        self.running_task_us as f64 / self.window_us() as f64
    }

    fn advance(&mut self, now_us: u64) {
        if let Some((from, to)) = self.bounds_us() {
            let start = self.last_us.max(from);
            let end = now_us.min(to);
            if end > start {
                self.running_task_us += self.running as u128 * (end - start) as u128;
            }
        }
        self.last_us = self.last_us.max(now_us);
    }
}

impl Observer<DocKey, DocValue, LeaseEvent> for LoadWindow<'_> {
    fn record(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        let RecordKind::Store {
            op, reply, before, ..
        } = &record.kind
        else {
            return;
        };
        self.advance(record.time_us);
        if let Some((from, to)) = self.bounds_us()
            && (from..to).contains(&record.time_us)
        {
            self.store_ops += 1;
            self.counter.record(record);
            if let (StoreRequest::Scan { .. }, StoreReply::Scanned { docs, .. }) = (op, reply) {
                self.scanned_docs += docs.len() as u64;
            }
        }
        if let (Some(value), StoreReply::Written { .. }) = (op.value(), reply)
            && let Some(new) = value.as_task()
        {
            let was_running = before
                .and_then(|b| b.value.as_task())
                .is_some_and(|b| b.state == TaskState::Running);
            match (was_running, new.state == TaskState::Running) {
                (false, true) => self.running += 1,
                (true, false) => {
                    assert!(self.running > 0, "more tasks stopped than ran");
                    self.running -= 1;
                }
                _ => {}
            }
            if let Span::OnceRunning {
                tasks,
                settle_us,
                window_us,
            } = self.span
                && self.running >= tasks
            {
                let from_us = record.time_us + settle_us;
                self.span = Span::Fixed {
                    from_us,
                    to_us: from_us + window_us,
                };
            }
        }
    }

    fn should_stop(&self, now_us: u64) -> bool {
        self.bounds_us().is_some_and(|(_, to)| now_us >= to)
    }
}
