//! Coverage points, driven by hand through the sans-IO interface: each
//! point is reported (as a `Coverage` event) exactly where its situation
//! arises, and not on the common path beside it.

use leasehold_interface::{
    Document, Input, Instant, LocalTime, Output, RequestId, ServiceId, StoreReply, StoreRequest,
};
use leasehold_protocol::{
    CoveragePoint, DocKey, DocValue, HeartbeatMode, LeaseEvent, LeaseOutput, MemberDoc,
    MemberStatus, Owner, ProtocolConfig, Reclaimer, TaskDoc, TaskId, TaskState, Variant, Worker,
};
use std::sync::Arc;

fn config() -> ProtocolConfig {
    ProtocolConfig {
        heartbeat_interval_ms: 5_000,
        lease_timeout_ms: 15_000,
        default_lease_timeout_ms: 15_000,
        scan_interval_ms: 5_000,
        poll_interval_ms: 1_000,
        idle_poll_max_ms: 1_000,
        store_timeout_ms: 1_000,
        effect_timeout_ms: 5_000,
        retry_backoff_ms: 200,
        max_network_delay_ms: 10,
        max_clock_drift_ppm: 0,
        slots_per_worker: 1,
        step_services: vec![ServiceId(0)],
        scan_page_size: 2,
        heartbeat_mode: HeartbeatMode::Worker,
        variant: Variant::Correct,
    }
}

const ME: Owner = Owner {
    worker: 7,
    incarnation: 1,
};

fn at(ms: u64) -> LocalTime {
    LocalTime {
        mono: Instant::from_micros(ms * 1_000),
        wall_ms: ms,
    }
}

/// Feed one input; the outputs it produced.
fn step_worker(w: &mut Worker, ms: u64, input: Input<DocKey, DocValue>) -> Vec<LeaseOutput> {
    let mut out = Vec::new();
    w.step(at(ms), &input, &mut out);
    out
}

fn points(out: &[LeaseOutput]) -> Vec<CoveragePoint> {
    out.iter()
        .filter_map(|o| match o {
            Output::Event(LeaseEvent::Coverage { point }) => Some(*point),
            _ => None,
        })
        .collect()
}

/// The one store request in `out` that `pick` accepts, with its id.
fn request(
    out: &[LeaseOutput],
    pick: impl Fn(&StoreRequest<DocKey, DocValue>) -> bool,
) -> (RequestId, StoreRequest<DocKey, DocValue>) {
    let mut found = out.iter().filter_map(|o| match o {
        Output::Store { request, op } if pick(op) => Some((*request, op.clone())),
        _ => None,
    });
    let first = found.next().expect("the request was sent");
    assert!(found.next().is_none(), "one such request");
    first
}

fn reply(request: RequestId, reply: StoreReply<DocKey, DocValue>) -> Input<DocKey, DocValue> {
    Input::StoreReply { request, reply }
}

/// A registered worker that has just sent a claim on task 3; returns the
/// claim's request and the claimed document.
fn worker_with_a_claim_sent() -> (Worker, RequestId, TaskDoc) {
    let mut w = Worker::new(Arc::new(config()), ME);
    let out = step_worker(&mut w, 0, Input::Start);
    let (register, _) = request(&out, |op| matches!(op, StoreRequest::CreateIfAbsent { .. }));
    let out = step_worker(
        &mut w,
        1,
        reply(register, StoreReply::Written { version: 1 }),
    );
    assert!(points(&out).is_empty(), "registering is no rare path");
    let (poll, _) = request(&out, |op| matches!(op, StoreRequest::ScanIndex { .. }));
    let pending = Document {
        key: DocKey::Task { task: TaskId(3) },
        version: 2,
        value: DocValue::Task(TaskDoc::new_pending(1)),
    };
    let out = step_worker(
        &mut w,
        2,
        reply(
            poll,
            StoreReply::Scanned {
                docs: vec![pending],
                more: false,
            },
        ),
    );
    let (claim, op) = request(&out, |op| matches!(op, StoreRequest::PutIfVersion { .. }));
    let StoreRequest::PutIfVersion {
        value: DocValue::Task(claimed),
        ..
    } = op
    else {
        unreachable!()
    };
    assert!(points(&out).is_empty());
    (w, claim, claimed)
}

#[test]
fn a_claim_in_doubt_that_turns_out_ours() {
    let (mut w, _claim, claimed) = worker_with_a_claim_sent();
    // No reply within the store timeout: the claim is in doubt.
    let out = step_worker(&mut w, 1_003, Input::Timeout);
    assert_eq!(points(&out), [CoveragePoint::ClaimInDoubt]);
    let (check, _) = request(&out, |op| matches!(op, StoreRequest::Get { .. }));
    // The re-read shows our claim: it landed.
    let doc = Document {
        key: DocKey::Task { task: TaskId(3) },
        version: 9,
        value: DocValue::Task(claimed),
    };
    let out = step_worker(
        &mut w,
        1_010,
        reply(check, StoreReply::Got { doc: Some(doc) }),
    );
    assert_eq!(points(&out), [CoveragePoint::DoubtfulClaimWasOurs]);
    assert!(
        out.iter()
            .any(|o| matches!(o, Output::Event(LeaseEvent::Claimed { .. })))
    );
}

#[test]
fn a_claim_answered_at_once_reaches_no_point() {
    let (mut w, claim, _) = worker_with_a_claim_sent();
    let out = step_worker(&mut w, 10, reply(claim, StoreReply::Written { version: 9 }));
    assert!(points(&out).is_empty(), "{out:?}");
}

#[test]
fn a_claim_in_doubt_found_untouched_is_resent_and_one_moved_on_is_dropped() {
    for (version, state, expect) in [
        (2, TaskState::Pending, CoveragePoint::DoubtfulClaimResent),
        (5, TaskState::Done, CoveragePoint::DoubtfulClaimMovedOn),
    ] {
        let (mut w, _claim, _) = worker_with_a_claim_sent();
        let out = step_worker(&mut w, 1_003, Input::Timeout);
        let (check, _) = request(&out, |op| matches!(op, StoreRequest::Get { .. }));
        let doc = Document {
            key: DocKey::Task { task: TaskId(3) },
            version,
            value: DocValue::Task(TaskDoc {
                state,
                ..TaskDoc::new_pending(1)
            }),
        };
        let out = step_worker(
            &mut w,
            1_010,
            reply(check, StoreReply::Got { doc: Some(doc) }),
        );
        assert_eq!(points(&out), [expect]);
    }
}

#[test]
fn a_worker_past_its_deadline_fences_itself_once() {
    let mut w = Worker::new(Arc::new(config()), ME);
    let out = step_worker(&mut w, 0, Input::Start);
    let (register, _) = request(&out, |op| matches!(op, StoreRequest::CreateIfAbsent { .. }));
    step_worker(
        &mut w,
        1,
        reply(register, StoreReply::Written { version: 1 }),
    );
    // Nothing renewed the lease: past the self-fencing deadline.
    let out = step_worker(&mut w, 20_000, Input::Timeout);
    assert_eq!(points(&out), [CoveragePoint::WorkerSelfFenced]);
    let out = step_worker(&mut w, 20_001, Input::Timeout);
    assert!(out.is_empty(), "a stopped worker says nothing");
}

fn member(worker: u32, version: u64) -> Document<DocKey, DocValue> {
    let owner = Owner {
        worker,
        incarnation: 1,
    };
    Document {
        key: DocKey::Member { owner },
        version,
        value: DocValue::Member(MemberDoc {
            owner,
            status: MemberStatus::Alive,
            beats: 0,
            lease_timeout_ms: 15_000,
            written_at_ms: 0,
        }),
    }
}

fn step_reclaimer(r: &mut Reclaimer, ms: u64, input: Input<DocKey, DocValue>) -> Vec<LeaseOutput> {
    let mut out = Vec::new();
    r.step(at(ms), &input, &mut out);
    out
}

/// A scan that goes on to later pages is one point a scan, whatever the
/// pages; a scan of one page is none.
#[test]
fn a_member_scan_past_its_first_page_is_one_point_a_scan() {
    let mut r = Reclaimer::new(Arc::new(config()), 0, 1);
    let out = step_reclaimer(&mut r, 0, Input::Start);
    let (scan, _) = request(&out, |op| matches!(op, StoreRequest::Scan { .. }));
    let page = |docs, more| StoreReply::Scanned { docs, more };
    let out = step_reclaimer(
        &mut r,
        1,
        reply(scan, page(vec![member(1, 1), member(2, 2)], true)),
    );
    assert_eq!(points(&out), [CoveragePoint::MemberScanNextPage]);
    let (scan, _) = request(&out, |op| matches!(op, StoreRequest::Scan { .. }));
    let out = step_reclaimer(
        &mut r,
        2,
        reply(scan, page(vec![member(3, 3), member(4, 4)], true)),
    );
    assert!(points(&out).is_empty(), "the third page is the same scan");
    let (scan, _) = request(&out, |op| matches!(op, StoreRequest::Scan { .. }));
    let out = step_reclaimer(&mut r, 3, reply(scan, page(vec![member(5, 5)], false)));
    assert!(points(&out).is_empty());
}

#[test]
fn the_points_of_a_reclaimed_orphan() {
    // The orphan sweep lists a running task whose owner the scan did not
    // see alive; its member document is gone: the claim landed after the
    // reclaim, and the task is re-queued.
    let mut r = Reclaimer::new(Arc::new(config()), 0, 1);
    let out = step_reclaimer(&mut r, 0, Input::Start);
    let (scan, _) = request(&out, |op| matches!(op, StoreRequest::Scan { .. }));
    let out = step_reclaimer(
        &mut r,
        1,
        reply(
            scan,
            StoreReply::Scanned {
                docs: Vec::new(),
                more: false,
            },
        ),
    );
    let (sweep, _) = request(&out, |op| matches!(op, StoreRequest::ScanIndex { .. }));
    let gone = Owner {
        worker: 4,
        incarnation: 2,
    };
    let running = Document {
        key: DocKey::Task { task: TaskId(8) },
        version: 30,
        value: DocValue::Task(TaskDoc {
            state: TaskState::Running,
            owner: Some(gone),
            epoch: 3,
            steps_done: 0,
            steps_total: 2,
        }),
    };
    let out = step_reclaimer(
        &mut r,
        2,
        reply(
            sweep,
            StoreReply::Scanned {
                docs: vec![running],
                more: false,
            },
        ),
    );
    assert!(points(&out).is_empty(), "a one-page sweep");
    let (check, _) = request(&out, |op| matches!(op, StoreRequest::Get { .. }));
    let out = step_reclaimer(&mut r, 3, reply(check, StoreReply::Got { doc: None }));
    assert_eq!(points(&out), [CoveragePoint::OrphanRequeued]);
    assert!(
        out.iter()
            .any(|o| matches!(o, Output::Event(LeaseEvent::Requeued { .. })))
    );
}
