//! An idle worker's polling, driven by hand through the sans-IO interface:
//! the wait after an empty poll doubles up to `idle_poll_max_ms`, work found
//! resets it, and a lost claim race on the only candidate backs off instead
//! of re-polling at once.

use leasehold_interface::{
    Document, Input, Instant, LocalTime, Output, ServiceId, StoreReply, StoreRequest,
};
use leasehold_protocol::{
    DocKey, DocValue, HeartbeatMode, LeaseOutput, Owner, ProtocolConfig, TaskDoc, TaskId, Variant,
    Worker,
};
use std::sync::Arc;

fn config(idle_poll_max_ms: u64) -> ProtocolConfig {
    config_with_slots(idle_poll_max_ms, 1)
}

fn config_with_slots(idle_poll_max_ms: u64, slots_per_worker: u32) -> ProtocolConfig {
    ProtocolConfig {
        heartbeat_interval_ms: 5_000,
        lease_timeout_ms: 15_000,
        default_lease_timeout_ms: 15_000,
        scan_interval_ms: 5_000,
        poll_interval_ms: 1_000,
        idle_poll_max_ms,
        store_timeout_ms: 1_000,
        effect_timeout_ms: 5_000,
        retry_backoff_ms: 200,
        max_network_delay_ms: 10,
        max_clock_drift_ppm: 0,
        slots_per_worker,
        step_services: vec![ServiceId(0)],
        scan_page_size: 100,
        heartbeat_mode: HeartbeatMode::Worker,
        variant: Variant::Correct,
    }
}

/// What the worker asked of the store, answered at once by `answer`.
#[derive(Debug, PartialEq)]
enum Asked {
    Poll,
    Claim,
    Other,
}

/// Drives one worker with instant replies; records when it polled.
struct Harness {
    worker: Worker,
    now: Instant,
    version: u64,
    polls_at_ms: Vec<u64>,
    claims: u32,
}

impl Harness {
    fn new(cfg: ProtocolConfig) -> Harness {
        assert!(cfg.validate().is_ok());
        let me = Owner {
            worker: 7,
            incarnation: 1,
        };
        Harness {
            worker: Worker::new(Arc::new(cfg), me),
            now: Instant::ZERO,
            version: 0,
            polls_at_ms: Vec::new(),
            claims: 0,
        }
    }

    fn time(&self) -> LocalTime {
        LocalTime {
            mono: self.now,
            wall_ms: self.now.as_millis(),
        }
    }

    /// Feed `input`, then answer every store request it produced with
    /// `answer` (which sees what was asked), until the worker is quiet.
    fn feed(
        &mut self,
        input: Input<DocKey, DocValue>,
        answer: &mut dyn FnMut(Asked, &mut u64) -> StoreReply<DocKey, DocValue>,
    ) {
        let mut inputs = vec![input];
        // Bounded: each round answers what the previous one asked.
        for _round in 0..100 {
            let Some(input) = inputs.pop() else {
                return;
            };
            self.worker.handle_input(self.time(), &input);
            while let Some(out) = self.worker.poll_output() {
                let LeaseOutput::Store { request, op } = out else {
                    // Effects go unanswered: these tests are about polling.
                    assert!(
                        matches!(out, Output::Event(_) | Output::Effect { .. }),
                        "unexpected {out:?}"
                    );
                    continue;
                };
                let asked = match &op {
                    StoreRequest::ScanIndex {
                        start: DocKey::PendingIdx { .. },
                        ..
                    } => {
                        self.polls_at_ms.push(self.now.as_millis());
                        Asked::Poll
                    }
                    StoreRequest::PutIfVersion {
                        key: DocKey::Task { .. },
                        ..
                    } => {
                        self.claims += 1;
                        Asked::Claim
                    }
                    _ => Asked::Other,
                };
                let reply = answer(asked, &mut self.version);
                inputs.insert(0, Input::StoreReply { request, reply });
            }
        }
        panic!("the worker kept talking");
    }

    /// Advance to each wake-up the worker asks for, up to `until_ms`.
    fn run_until(
        &mut self,
        until_ms: u64,
        answer: &mut dyn FnMut(Asked, &mut u64) -> StoreReply<DocKey, DocValue>,
    ) {
        for _wakeup in 0..10_000 {
            let next = self.worker.poll_timeout().expect("a live worker wakes up");
            if next.as_millis() > until_ms {
                return;
            }
            assert!(next >= self.now, "time goes forward");
            self.now = next;
            self.feed(Input::Timeout, answer);
        }
        panic!("too many wake-ups");
    }
}

fn empty_store(asked: Asked, version: &mut u64) -> StoreReply<DocKey, DocValue> {
    match asked {
        Asked::Poll => StoreReply::Scanned {
            docs: Vec::new(),
            more: false,
        },
        Asked::Claim => unreachable!("nothing to claim"),
        Asked::Other => {
            *version += 1;
            StoreReply::Written { version: *version }
        }
    }
}

fn gaps(polls_at_ms: &[u64]) -> Vec<u64> {
    polls_at_ms.windows(2).map(|w| w[1] - w[0]).collect()
}

fn pending_task() -> Document<DocKey, DocValue> {
    Document {
        key: DocKey::Task { task: TaskId(3) },
        version: 1_000,
        value: DocValue::Task(TaskDoc::new_pending(1)),
    }
}

#[test]
fn empty_polls_double_the_wait_up_to_the_cap() {
    let mut h = Harness::new(config(8_000));
    h.feed(Input::Start, &mut empty_store);
    h.run_until(40_000, &mut empty_store);
    let gaps = gaps(&h.polls_at_ms);
    assert_eq!(
        gaps[..6],
        [1_000, 2_000, 4_000, 8_000, 8_000, 8_000],
        "polls at {:?}",
        h.polls_at_ms
    );
    assert!(gaps.iter().all(|&g| g <= 8_000), "{gaps:?}");
}

#[test]
fn without_a_cap_above_the_interval_polls_stay_even() {
    let mut h = Harness::new(config(1_000));
    h.feed(Input::Start, &mut empty_store);
    h.run_until(20_000, &mut empty_store);
    let gaps = gaps(&h.polls_at_ms);
    assert!(gaps.len() >= 15, "{gaps:?}");
    assert!(gaps.iter().all(|&g| g == 1_000), "{gaps:?}");
}

#[test]
fn a_lost_race_for_the_only_candidate_backs_off_instead_of_repolling() {
    let mut h = Harness::new(config(8_000));
    h.feed(Input::Start, &mut empty_store);
    // Empty polls at 0, 1, 3 and 7 s: the next wait is the cap.
    h.run_until(7_000, &mut empty_store);
    assert_eq!(h.polls_at_ms, [0, 1_000, 3_000, 7_000]);
    // Then one pending task, always won by someone else.
    let mut contested = |asked: Asked, version: &mut u64| match asked {
        Asked::Poll => StoreReply::Scanned {
            docs: vec![pending_task()],
            more: false,
        },
        Asked::Claim => StoreReply::Conflict { current: None },
        Asked::Other => {
            *version += 1;
            StoreReply::Written { version: *version }
        }
    };
    h.run_until(40_000, &mut contested);
    // One poll and one claim per wake-up, no immediate re-poll after the
    // conflict, and a task seen but lost does not reset the wait.
    assert_eq!(h.polls_at_ms[4..], [15_000, 23_000, 31_000, 39_000]);
    assert_eq!(h.claims, 4, "one claim per poll");
}

#[test]
fn a_won_claim_resets_the_wait() {
    let mut h = Harness::new(config_with_slots(8_000, 2));
    h.feed(Input::Start, &mut empty_store);
    h.run_until(7_000, &mut empty_store);
    let mut winnable = |asked: Asked, version: &mut u64| {
        *version += 1;
        match asked {
            Asked::Poll => StoreReply::Scanned {
                docs: vec![pending_task()],
                more: false,
            },
            _ => StoreReply::Written { version: *version },
        }
    };
    // The poll at 15 s finds the task and wins it.
    h.run_until(15_000, &mut winnable);
    assert_eq!(h.claims, 1);
    // A free slot is left: the worker polls again at once, finds nothing,
    // and waits from the interval again, not from the cap.
    h.run_until(30_000, &mut empty_store);
    assert_eq!(
        h.polls_at_ms[4..],
        [15_000, 15_000, 16_000, 18_000, 22_000, 30_000],
        "polls at {:?}",
        h.polls_at_ms
    );
}
