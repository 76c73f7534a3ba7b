//! The live host's threads: a node thread and a store thread per node, a
//! store thread for the workload, the wire thread (latency, effect
//! services, scheduled faults, arrivals) and, on the caller's thread, the
//! recorder that hands records to the judge.

use super::recorder::{Entry, Kind, Order, Recorder};
use super::{LiveOptions, LiveReport, LiveStore};
use leasehold_check::NodeRole;
use leasehold_interface::{
    EffectReply, EffectRequest, Input, Output, RequestId, StoreReply, StoreRequest,
};
use leasehold_protocol::{DocKey, DocValue, LeaseEvent, Owner, Reclaimer, TaskDoc, TaskId, Worker};
use leasehold_run::lease_node::LeaseNode;
use leasehold_run::run::{RecordJudge, RunOutcome, arrivals_ms, lease_timings};
use leasehold_scenario::scenario::ValidScenario;
use leasehold_sim::faults::PPM;
use leasehold_sim::{
    Actor, Concern, CrashPoint, Direction, EffectService, Fault, FaultRates, InputSummary, Leg,
    Link, LocalClock, LossReason, MessageAction, Node, NodeId, OutageMode, RngStreams, StopReason,
};
use leasehold_store_sql::{RequestError, Setup, WriteTag};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type LeaseInput = Input<DocKey, DocValue>;
type LeaseOutput = Output<DocKey, DocValue, LeaseEvent>;
type Request = StoreRequest<DocKey, DocValue>;

/// The longest a waiting thread sleeps before it looks at the stop flag
/// again, in real time.
const POLL: Duration = Duration::from_millis(20);
/// How long the recorder holds a record for others stamped before it (a
/// thread may be preempted between stamping a record and handing it over),
/// in real time.
const RECORD_WINDOW: Duration = Duration::from_millis(100);
/// How long a record waits for a write it depends on before the recorder
/// gives that write up (a commit whose outcome stays unknown), real time.
const GIVE_UP_WAITING: Duration = Duration::from_secs(5);
/// How often a store thread tries to reconnect to a store that failed.
const RECONNECT_EVERY: Duration = Duration::from_millis(200);

/// Scenario time from the real monotonic clock: `speed` times fast.
#[derive(Clone, Copy)]
struct Clock {
    start: Instant,
    speed: u64,
}

impl Clock {
    fn now_us(&self) -> u64 {
        (self.start.elapsed().as_micros() as u64).saturating_mul(self.speed)
    }

    /// Scenario time at `instant` (taken after the run began).
    fn us_at(&self, instant: Instant) -> u64 {
        (instant.saturating_duration_since(self.start).as_micros() as u64)
            .saturating_mul(self.speed)
    }

    /// The real time `us` of scenario time lasts.
    fn real(&self, us: u64) -> Duration {
        Duration::from_micros(us / self.speed)
    }

    /// The scenario time `real` lasts.
    fn scenario(&self, real: Duration) -> u64 {
        (real.as_micros() as u64).saturating_mul(self.speed)
    }

    /// The real time from now until scenario time `at_us` (zero if past).
    fn until(&self, at_us: u64) -> Duration {
        self.real(at_us.saturating_sub(self.now_us()))
    }
}

/// What reaches a node thread.
enum ToNode {
    Input {
        incarnation: u32,
        input: LeaseInput,
        /// The revision the reply observed.
        seen: u64,
    },
    /// A crash at a set time (a scheduled fault, recorded when it strikes).
    Crash { restart_after_us: u64 },
    /// A pause at a set time.
    Pause { duration_us: u64 },
}

/// A store request on its way to a store thread.
struct StoreJob {
    actor: Actor,
    request: RequestId,
    op: Request,
    decided_us: u64,
    /// The sender's latest revision seen when it sent it.
    seen: u64,
    /// The sender's message counter for it, and the delay injected on its
    /// way to the store.
    msg: u64,
    injected_us: u64,
    /// The request leg's fault: refused (`Fail`).
    refuse: bool,
    /// The reply leg's fault: lost (`Drop`: the write commits, the reply
    /// never comes) or late.
    reply: Option<MessageAction>,
}

/// An effect call on its way to its service.
struct ServiceJob {
    node: NodeId,
    incarnation: u32,
    request: RequestId,
    call: EffectRequest,
    decided_us: u64,
    sent_us: u64,
    seen: u64,
    /// The request leg's fault: `Fail` or `Hang`.
    refuse: Option<MessageAction>,
    reply: Option<MessageAction>,
}

/// What the wire does when its time comes.
enum Due {
    ToNode(NodeId, ToNode),
    ToStore(NodeId, StoreJob),
    ToService(ServiceJob),
    Scheduled(Fault),
    OutageOver(OutageMode),
    PartitionOver(NodeId, Link, Direction),
    Heal,
    Arrival(u64),
}

struct Timed {
    at_us: u64,
    seq: u64,
    due: Due,
}

impl PartialEq for Timed {
    fn eq(&self, other: &Self) -> bool {
        (self.at_us, self.seq) == (other.at_us, other.seq)
    }
}
impl Eq for Timed {}
impl PartialOrd for Timed {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timed {
    /// Earliest first in a max-heap.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.at_us, other.seq).cmp(&(self.at_us, self.seq))
    }
}

/// Past this many messages in flight the host is broken (every node keeps
/// a bounded number of requests out).
const MAX_IN_FLIGHT: usize = 1 << 20;

/// What every thread shares.
struct Shared<'a> {
    scn: &'a ValidScenario,
    clock: Clock,
    stop: AtomicBool,
    records: Sender<Entry>,
    /// Outages in force, by mode (`OutageMode as usize`).
    outages: [AtomicU32; 2],
    /// Bumped when an outage starts: every store thread drops its
    /// connection before its next request.
    outage_epoch: AtomicU64,
    /// Partitions in force per node, by (link, direction).
    cuts: Mutex<Vec<[u32; 6]>>,
    rates: FaultRates,
    fault_phase_end_us: u64,
    latency_us: (u64, u64),
    store_requests: AtomicU64,
    store_errors: AtomicU64,
    first_store_error: Mutex<Option<String>>,
    unknown_outcomes: AtomicU64,
    reconnects: AtomicU64,
    late_replies: AtomicU64,
    /// A wake-up, or a store reply, later than this (scenario µs) is a
    /// stall of the host or a slow store: past the scenario's delays.
    stall_after_us: u64,
    host_stalls: AtomicU64,
    /// A failure of the real store reported as an outage until then.
    real_outage_until_us: Mutex<Option<u64>>,
    /// Per node, the store request its store thread is answering: since
    /// when it has been on its way, and when the wire last recorded it late.
    in_flight: Mutex<Vec<Option<InFlight>>>,
    /// Threads still running.
    alive: AtomicUsize,
}

fn cut_index(link: Link, direction: Direction) -> usize {
    let link = match link {
        Link::Store => 0,
        Link::Services => 3,
    };
    link + direction as usize
}

impl Shared<'_> {
    fn record(&self, time_us: u64, order: Order, kind: Kind) {
        // The recorder outlives every sender: a failed send is a bug.
        self.records
            .send(Entry {
                time_us,
                order,
                kind,
            })
            .expect("the recorder is gone");
    }

    fn in_fault_phase(&self, now_us: u64) -> bool {
        now_us < self.fault_phase_end_us
    }

    /// Whether a partition in force cuts `node`'s messages on `leg`.
    fn is_cut(&self, node: NodeId, leg: Leg) -> bool {
        let (link, inbound) = match leg {
            Leg::ToStore => (Link::Store, false),
            Leg::FromStore => (Link::Store, true),
            Leg::ToService => (Link::Services, false),
            Leg::FromService => (Link::Services, true),
        };
        let cuts = self.cuts.lock().expect("cuts");
        let c = &cuts[node.index()];
        let one_way = if inbound {
            Direction::Inbound
        } else {
            Direction::Outbound
        };
        c[cut_index(link, Direction::Both)] > 0 || c[cut_index(link, one_way)] > 0
    }

    fn latency(&self, rng: &mut ChaCha8Rng) -> u64 {
        rng.random_range(self.latency_us.0..=self.latency_us.1)
    }

    /// The real store failed a request at `now_us`: reported as a store
    /// outage (refusing requests), in spans of the store timeout renewed
    /// while failures go on, so the run says the store was out while it
    /// was, as it says of the outages it injects.
    fn real_outage(&self, now_us: u64) {
        let mut reported = self.real_outage_until_us.lock().expect("outage");
        if reported.is_some_and(|until| now_us < until) {
            return;
        }
        let span_us = self.scn.scenario.protocol.store_timeout_ms * 1_000;
        *reported = Some(now_us + span_us);
        self.record(
            now_us,
            Order::After(0),
            Kind::Fault(Fault::StoreOutage {
                at_us: now_us,
                duration_us: span_us,
                mode: OutageMode::Fail,
            }),
        );
    }

    /// The real store answered again after failing.
    fn real_recovery(&self, now_us: u64) {
        let mut reported = self.real_outage_until_us.lock().expect("outage");
        if reported.take().is_some() {
            self.record(
                now_us,
                Order::After(0),
                Kind::Fault(Fault::StoreRecovered {
                    mode: OutageMode::Fail,
                }),
            );
        }
    }

    fn store_error(&self, error: String) {
        self.real_outage(self.clock.now_us());
        self.store_errors.fetch_add(1, Ordering::Relaxed);
        let mut first = self.first_store_error.lock().expect("first error");
        if first.is_none() {
            *first = Some(error);
        }
    }
}

/// The rates of faults on a message's two legs, rolled once when it is
/// sent: the request leg's action, the reply leg's. Duplicates are not
/// injected live.
fn roll_legs(
    rates: &FaultRates,
    rng: &mut ChaCha8Rng,
    legs: (Leg, Leg),
) -> (Option<MessageAction>, Option<MessageAction>) {
    let mut roll = |leg: Leg| {
        let r = &rates.legs[leg.index()];
        let x = rng.random_range(0..PPM);
        let delay = |rng: &mut ChaCha8Rng| MessageAction::Delay {
            extra_us: rng.random_range(r.delay_us_min..=r.delay_us_max.max(r.delay_us_min)),
        };
        let mut band = r.drop_ppm;
        if x < band {
            return Some(MessageAction::Drop);
        }
        band = band.saturating_add(r.delay_ppm);
        if x < band {
            return Some(delay(rng));
        }
        if matches!(leg, Leg::ToStore | Leg::ToService) {
            band = band.saturating_add(r.fail_ppm);
            if x < band {
                return Some(MessageAction::Fail);
            }
        }
        if leg == Leg::ToService {
            band = band.saturating_add(r.hang_ppm);
            if x < band {
                return Some(MessageAction::Hang);
            }
        }
        None
    };
    (roll(legs.0), roll(legs.1))
}

fn extra_us(action: Option<MessageAction>) -> u64 {
    match action {
        Some(MessageAction::Delay { extra_us }) => extra_us,
        _ => 0,
    }
}

/// Run the fleet until the judge says the run is over (or the scenario's
/// time limit, or `interrupt`); the verdict and what the host saw.
pub(super) fn run(
    scn: &ValidScenario,
    opts: &LiveOptions,
    roles: &[NodeRole],
    mut stores: Vec<LiveStore>,
    mut judge: RecordJudge<'_, '_>,
    interrupt: &AtomicBool,
) -> (RunOutcome, LiveReport) {
    let s = &scn.scenario;
    let fleet = scn.fleet();
    let drawn = s.faults.draw(&fleet, opts.seed, &lease_timings(scn));
    let (records_tx, records_rx) = channel::<Entry>();
    let clock = Clock {
        start: Instant::now(),
        speed: opts.speed,
    };
    let latency_us = (
        s.network.latency_ms_min * 1_000,
        s.network.latency_ms_max * 1_000,
    );
    let shared = Shared {
        scn,
        clock,
        stop: AtomicBool::new(false),
        records: records_tx,
        outages: [AtomicU32::new(0), AtomicU32::new(0)],
        outage_epoch: AtomicU64::new(0),
        cuts: Mutex::new(vec![[0; 6]; roles.len()]),
        rates: drawn.rates.clone(),
        fault_phase_end_us: s.faults.fault_phase_ms * 1_000,
        latency_us,
        store_requests: AtomicU64::new(0),
        store_errors: AtomicU64::new(0),
        first_store_error: Mutex::new(None),
        unknown_outcomes: AtomicU64::new(0),
        reconnects: AtomicU64::new(0),
        late_replies: AtomicU64::new(0),
        stall_after_us: leasehold_run::run::live_reply_tolerance_us(s),
        host_stalls: AtomicU64::new(0),
        real_outage_until_us: Mutex::new(None),
        in_flight: Mutex::new(vec![None; roles.len()]),
        alive: AtomicUsize::new(0),
    };
    let (wire_tx, wire_rx) = channel::<Timed>();
    let mut node_txs = Vec::with_capacity(roles.len());
    let mut node_rxs = Vec::with_capacity(roles.len());
    let mut io_txs = Vec::with_capacity(roles.len() + 1);
    let mut io_rxs = Vec::with_capacity(roles.len() + 1);
    for _ in 0..roles.len() {
        let (tx, rx) = channel::<ToNode>();
        node_txs.push(tx);
        node_rxs.push(rx);
    }
    for _ in 0..=roles.len() {
        let (tx, rx) = channel::<StoreJob>();
        io_txs.push(tx);
        io_rxs.push(rx);
    }
    let seq = Arc::new(AtomicU64::new(0));
    let mut stop_reason = StopReason::Observer;
    let mut cut = None;
    let mut end_us = 0;
    let mut missing = 0;
    std::thread::scope(|scope| {
        let shared = &shared;
        // The workload's store thread is the last.
        let workload_store = stores.pop().expect("a connection for the workload");
        for (i, (rx, store)) in io_rxs
            .into_iter()
            .zip(stores.drain(..).chain([workload_store]))
            .enumerate()
        {
            let wire = Wire {
                tx: wire_tx.clone(),
                seq: Arc::clone(&seq),
            };
            let url = opts.store.clone();
            shared.alive.fetch_add(1, Ordering::AcqRel);
            scope.spawn(move || {
                let _alive = Alive(&shared.alive);
                StoreThread {
                    shared,
                    index: i,
                    store: Some(store),
                    epoch: 0,
                    url,
                    wire,
                    rng: RngStreams::new(opts.seed).stream(Concern::Network, 1_000 + i as u32),
                }
                .run(rx)
            });
        }
        for (i, rx) in node_rxs.into_iter().enumerate() {
            let node = NodeId(i as u32);
            let stream_id = fleet.stream_id(node);
            let mut boot_rng = RngStreams::new(opts.seed).stream(Concern::Boot, stream_id);
            let (boot_at_us, crashable, pausable) = match roles[i] {
                NodeRole::Worker { .. } => (
                    boot_rng.random_range(0..s.protocol.heartbeat_interval_ms) * 1_000,
                    true,
                    true,
                ),
                NodeRole::Reclaimer { .. } => (0, drawn.crash_reclaimers, drawn.pause_reclaimers),
            };
            let streams = RngStreams::new(opts.seed);
            let host = NodeHost {
                shared,
                id: node,
                role: roles[i],
                cfg: Arc::new(scn.protocol_config(opts.variant)),
                clock: drawn.clocks[i],
                crashable,
                pausable,
                incarnation: 0,
                node: None,
                down_until_us: Some(boot_at_us),
                steps: 0,
                messages: 0,
                seen: 0,
                faults: streams.stream(Concern::Faults, stream_id),
                network: streams.stream(Concern::Network, stream_id),
                restarts: streams.stream(Concern::Restarts, stream_id),
                wire: Wire {
                    tx: wire_tx.clone(),
                    seq: Arc::clone(&seq),
                },
                out: Vec::with_capacity(16),
            };
            shared.alive.fetch_add(1, Ordering::AcqRel);
            scope.spawn(move || {
                let _alive = Alive(&shared.alive);
                host.run(rx)
            });
        }
        // The wire: scheduled faults, the heal phase, arrivals.
        let arrivals = arrivals_ms(scn, opts.seed);
        {
            let wire = Wire {
                tx: wire_tx.clone(),
                seq: Arc::clone(&seq),
            };
            for fault in &drawn.scheduled {
                let at_us = match *fault {
                    Fault::CrashAt { at_us, .. }
                    | Fault::PauseAt { at_us, .. }
                    | Fault::Partition { at_us, .. }
                    | Fault::StoreOutage { at_us, .. } => at_us,
                    other => unreachable!("not a scheduled fault: {other:?}"),
                };
                wire.at(at_us, Due::Scheduled(*fault));
            }
            wire.at(shared.fault_phase_end_us, Due::Heal);
            for (task, at_ms) in arrivals.iter().enumerate() {
                wire.at(at_ms * 1_000, Due::Arrival(task as u64));
            }
        }
        let services: Vec<EffectService> = scn
            .services
            .iter()
            .cloned()
            .map(EffectService::new)
            .collect();
        let wire_thread = WireThread {
            shared,
            node_txs: node_txs.clone(),
            workload: io_txs[roles.len()].clone(),
            store_txs: io_txs[..roles.len()].to_vec(),
            services,
            work: (0..scn.services.len())
                .map(|i| RngStreams::new(opts.seed).stream(Concern::Services, i as u32))
                .collect(),
            network: RngStreams::new(opts.seed).stream(Concern::Network, 2_000),
            steps_total: s.tasks.steps_per_task(),
            tx: wire_tx.clone(),
            seq: Arc::clone(&seq),
        };
        shared.alive.fetch_add(1, Ordering::AcqRel);
        scope.spawn(move || {
            let _alive = Alive(&shared.alive);
            wire_thread.run(wire_rx)
        });
        drop(wire_tx);
        drop(io_txs);
        drop(node_txs);

        // The recorder, here: the judge (and a trace writer in it) stays on
        // this thread.
        let mut recorder = Recorder::new();
        let max_us = s.limits.max_sim_time_ms.saturating_mul(1_000);
        let window_us = clock.scenario(RECORD_WINDOW);
        let give_up_us = clock.scenario(GIVE_UP_WAITING);
        stop_reason = loop {
            if let Ok(entry) = records_rx.recv_timeout(POLL) {
                recorder.push(entry);
                while let Ok(entry) = records_rx.try_recv() {
                    recorder.push(entry);
                }
            }
            let now = clock.now_us();
            recorder.release(
                now.saturating_sub(window_us),
                now.saturating_sub(give_up_us),
                &mut |r| judge.record(r),
            );
            if interrupt.load(Ordering::Relaxed) {
                cut = Some(("interrupted (Ctrl-C)", 0));
                break StopReason::Observer;
            }
            if now >= max_us {
                cut = Some(("limits.max_sim_time_ms", s.limits.max_sim_time_ms));
                break StopReason::TimeLimit;
            }
            if judge.should_stop(now.saturating_sub(window_us)) {
                break StopReason::Observer;
            }
        };
        end_us = clock.now_us().saturating_sub(window_us);
        shared.stop.store(true, Ordering::Relaxed);
        // Every thread ends once it sees the flag (each request in hand
        // finished: one transaction, the store consistent); their last
        // records come in until the last one is gone.
        loop {
            match records_rx.recv_timeout(POLL) {
                Ok(entry) => recorder.push(entry),
                Err(_) if shared.alive.load(Ordering::Acquire) == 0 => break,
                Err(_) => {}
            }
        }
        while let Ok(entry) = records_rx.try_recv() {
            recorder.push(entry);
        }
        recorder.flush(&mut |r| judge.record(r));
        missing = recorder.gaps;
    });
    let wall_s = clock.start.elapsed().as_secs_f64();
    let store_requests = shared.store_requests.load(Ordering::Relaxed);
    let report = LiveReport {
        store: opts.store.shown(),
        speed: opts.speed,
        wall_s,
        store_requests,
        store_requests_per_s: store_requests as f64 / wall_s.max(1e-9),
        store_errors: shared.store_errors.load(Ordering::Relaxed),
        first_store_error: shared
            .first_store_error
            .lock()
            .expect("first error")
            .clone(),
        unknown_outcomes: shared.unknown_outcomes.load(Ordering::Relaxed).max(missing),
        reconnects: shared.reconnects.load(Ordering::Relaxed),
        late_replies: shared.late_replies.load(Ordering::Relaxed),
        host_stalls: shared.host_stalls.load(Ordering::Relaxed),
        interrupted: interrupt.load(Ordering::Relaxed),
    };
    // Records stamped while the last ones drained may be past `end_us`.
    let mut outcome = judge.finish(end_us, stop_reason, cut);
    outcome.fault_mix = Some(drawn.mix);
    (outcome, report)
}

/// Counts a thread out of the run when it ends, however it ends.
struct Alive<'a>(&'a AtomicUsize);

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A handle to the wire: messages to deliver at a scenario time.
struct Wire {
    tx: Sender<Timed>,
    seq: Arc<AtomicU64>,
}

impl Wire {
    fn at(&self, at_us: u64, due: Due) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        // The wire ends only after every sender: a failed send is at the
        // run's end, when nothing more is delivered.
        let _ = self.tx.send(Timed { at_us, seq, due });
    }
}

/// A node's store request being answered (see `Shared::in_flight`).
#[derive(Clone, Copy)]
struct InFlight {
    since_us: u64,
    msg: u64,
    /// When the wire last recorded it as a delayed reply (0: never).
    flagged_us: u64,
}

/// A step's fault, rolled before the step.
enum StepFault {
    CrashBefore { restart_after_us: u64 },
    CrashBetween { restart_after_us: u64 },
    Pause { duration_us: u64 },
}

/// One node's thread: the protocol's state machine, stepped on its inputs
/// and its timer; its outputs sent through the wire.
struct NodeHost<'s> {
    shared: &'s Shared<'s>,
    id: NodeId,
    role: NodeRole,
    cfg: Arc<leasehold_protocol::ProtocolConfig>,
    clock: LocalClock,
    crashable: bool,
    pausable: bool,
    incarnation: u32,
    node: Option<LeaseNode>,
    /// Down (not booted yet, crashed, exited) until this time.
    down_until_us: Option<u64>,
    steps: u64,
    messages: u64,
    /// The latest revision any reply it handled observed.
    seen: u64,
    faults: ChaCha8Rng,
    network: ChaCha8Rng,
    restarts: ChaCha8Rng,
    wire: Wire,
    out: Vec<LeaseOutput>,
}

impl NodeHost<'_> {
    fn now(&self) -> u64 {
        self.shared.clock.now_us()
    }

    fn record(&self, kind: Kind) {
        self.shared
            .record(self.now(), Order::After(self.seen), kind);
    }

    fn run(mut self, inbox: Receiver<ToNode>) {
        // Bounded by the run: each round waits at most POLL, and the run
        // ends.
        while !self.shared.stop.load(Ordering::Relaxed) {
            let now = self.now();
            if let Some(at) = self.down_until_us
                && now >= at
            {
                self.boot();
                continue;
            }
            let wake_us = match &self.node {
                Some(node) => node.poll_timeout().map(|l| self.clock.sim_time_for(l)),
                None => self.down_until_us,
            };
            let wait = wake_us.map_or(POLL, |w| self.shared.clock.until(w).min(POLL));
            match inbox.recv_timeout(wait) {
                Ok(message) => self.handle(message),
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(wake_us) = wake_us
                        && self.node.is_some()
                        && self.now() >= wake_us
                    {
                        self.stalled(wake_us);
                        self.step(Input::Timeout);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// A wake-up the host delivered late by more than the scenario's
    /// delays allow (the thread was not scheduled in time) froze the node
    /// as a pause would: recorded as one, so the run says what happened.
    fn stalled(&mut self, wake_us: u64) {
        let late_us = self.now().saturating_sub(wake_us);
        if late_us <= self.shared.stall_after_us {
            return;
        }
        self.shared.host_stalls.fetch_add(1, Ordering::Relaxed);
        self.record(Kind::Fault(Fault::PauseAt {
            at_us: wake_us,
            node: self.id,
            duration_us: late_us,
        }));
        self.record(Kind::Fault(Fault::Resume { node: self.id }));
    }

    fn handle(&mut self, message: ToNode) {
        match message {
            ToNode::Input {
                incarnation,
                input,
                seen,
            } => {
                self.seen = self.seen.max(seen);
                if self.node.is_some() && incarnation == self.incarnation {
                    self.step(input);
                } else {
                    self.record(Kind::Dropped {
                        node: self.id,
                        incarnation,
                    });
                }
            }
            ToNode::Crash { restart_after_us } if self.node.is_some() => {
                self.record(Kind::Fault(Fault::CrashAt {
                    at_us: self.now(),
                    node: self.id,
                    restart_after_us,
                }));
                self.take_down(restart_after_us);
            }
            ToNode::Pause { duration_us } if self.node.is_some() => {
                self.record(Kind::Fault(Fault::PauseAt {
                    at_us: self.now(),
                    node: self.id,
                    duration_us,
                }));
                self.pause(duration_us);
            }
            // A scheduled fault on a node that is down strikes nothing.
            ToNode::Crash { .. } | ToNode::Pause { .. } => {}
        }
    }

    fn boot(&mut self) {
        self.incarnation += 1;
        let incarnation = self.incarnation;
        self.node = Some(match self.role {
            NodeRole::Worker { worker } => LeaseNode::Worker(Worker::new(
                Arc::clone(&self.cfg),
                Owner {
                    worker,
                    incarnation,
                },
            )),
            NodeRole::Reclaimer { id } => {
                LeaseNode::Reclaimer(Reclaimer::new(Arc::clone(&self.cfg), id, incarnation))
            }
        });
        self.down_until_us = None;
        if incarnation > 1 {
            self.record(Kind::Fault(Fault::Restart {
                node: self.id,
                incarnation,
            }));
        }
        self.step(Input::Start);
    }

    fn take_down(&mut self, restart_after_us: u64) {
        self.node = None;
        self.down_until_us = Some(self.now() + restart_after_us.max(1));
    }

    /// Frozen for `duration_us`: no input handled, nothing sent (what the
    /// inbox gathers waits), then a note that it woke.
    fn pause(&mut self, duration_us: u64) {
        let until = self.now().saturating_add(duration_us);
        // Bounded by the pause: each round sleeps at most POLL.
        while self.now() < until && !self.shared.stop.load(Ordering::Relaxed) {
            std::thread::sleep(self.shared.clock.until(until).min(POLL));
        }
        self.record(Kind::Fault(Fault::Resume { node: self.id }));
    }

    fn roll(&mut self, ppm: u32) -> bool {
        ppm > 0 && self.faults.random_range(0..PPM) < ppm
    }

    fn restart_delay(&mut self) -> u64 {
        let r = &self.shared.rates;
        self.restarts.random_range(
            r.restart_delay_us_min..=r.restart_delay_us_max.max(r.restart_delay_us_min),
        )
    }

    fn step_fault(&mut self, node_step: u64) -> Option<StepFault> {
        if !self.shared.in_fault_phase(self.now()) {
            return None;
        }
        let rates = self.shared.rates.clone();
        if self.crashable && self.roll(rates.crash_ppm) {
            let restart_after_us = self.restart_delay();
            return Some(if self.roll(rates.crash_before_input_ppm) {
                StepFault::CrashBefore { restart_after_us }
            } else {
                StepFault::CrashBetween { restart_after_us }
            });
        }
        if self.pausable && self.roll(rates.pause_ppm) {
            let duration_us = self
                .faults
                .random_range(rates.pause_us_min..=rates.pause_us_max.max(rates.pause_us_min));
            return Some(StepFault::Pause { duration_us });
        }
        if rates.clock_jump_us_max > 0 && self.roll(rates.clock_jump_ppm) {
            let max = rates.clock_jump_us_max;
            let delta_us = self.faults.random_range(-max..=max);
            self.clock.wall_offset_us += delta_us;
            self.record(Kind::Fault(Fault::ClockJump {
                node: self.id,
                node_step,
                delta_us,
            }));
        }
        None
    }

    fn step(&mut self, input: LeaseInput) {
        self.steps += 1;
        let node_step = self.steps;
        let fault = self.step_fault(node_step);
        if let Some(StepFault::CrashBefore { restart_after_us }) = fault {
            self.record(Kind::Fault(Fault::Crash {
                node: self.id,
                node_step,
                point: CrashPoint::BeforeInput,
                restart_after_us,
            }));
            self.take_down(restart_after_us);
            return;
        }
        let now = self.now();
        let local = self.clock.read(now);
        self.record(Kind::Step {
            node: self.id,
            incarnation: self.incarnation,
            local: local.mono,
            input: InputSummary::of(&input),
        });
        let mut out = std::mem::take(&mut self.out);
        debug_assert!(out.is_empty());
        self.node
            .as_mut()
            .expect("stepping a live node")
            .step(local, &input, &mut out);
        let counted = out
            .iter()
            .filter(|o| !matches!(o, Output::Event(e) if LeaseNode::is_annotation(e)))
            .count() as u32;
        // Where a crash or a pause cuts the step's outputs: after `k`.
        let cut = match fault {
            Some(StepFault::CrashBetween { restart_after_us }) if counted > 0 => Some((
                self.faults.random_range(0..counted),
                Some(restart_after_us),
                0,
            )),
            Some(StepFault::Pause { duration_us }) => {
                Some((self.faults.random_range(0..=counted), None, duration_us))
            }
            _ => None,
        };
        let mut sent = 0u32;
        let mut outputs = out.drain(..);
        // Bounded by the step's outputs.
        loop {
            if let Some((k, restart, duration_us)) = cut
                && sent == k
            {
                match restart {
                    Some(restart_after_us) => {
                        self.record(Kind::Fault(Fault::Crash {
                            node: self.id,
                            node_step,
                            point: CrashPoint::BetweenOutputs { emitted: k },
                            restart_after_us,
                        }));
                        self.take_down(restart_after_us);
                        break;
                    }
                    None => {
                        self.record(Kind::Fault(Fault::Pause {
                            node: self.id,
                            node_step,
                            after_outputs: k,
                            duration_us,
                        }));
                        self.pause(duration_us);
                        sent += 1 << 31;
                    }
                }
            }
            let Some(output) = outputs.next() else { break };
            match output {
                Output::Event(event) => {
                    if !LeaseNode::is_annotation(&event) {
                        sent += 1;
                    }
                    self.record(Kind::Event {
                        node: self.id,
                        incarnation: self.incarnation,
                        event,
                    });
                }
                Output::Store { request, op } => {
                    sent += 1;
                    self.send_store(request, op, now);
                }
                Output::Effect { request, call } => {
                    sent += 1;
                    self.send_effect(request, call, now);
                }
                Output::Exit => {
                    self.record(Kind::Exit {
                        node: self.id,
                        incarnation: self.incarnation,
                    });
                    let [lo, hi] = self.shared.scn.scenario.faults.restart_delay_ms;
                    let delay_us = self.restarts.random_range(lo..=hi.max(lo)) * 1_000;
                    self.take_down(delay_us);
                    break;
                }
            }
        }
        drop(outputs);
        self.out = out;
    }

    fn lost(&self, request: RequestId, leg: Leg, reason: LossReason) {
        self.record(Kind::Lost {
            node: self.id,
            incarnation: self.incarnation,
            request,
            leg,
            reason,
        });
    }

    /// Roll a message's faults (in the fault phase) and record them.
    fn message_faults(
        &mut self,
        legs: (Leg, Leg),
    ) -> (Option<MessageAction>, Option<MessageAction>) {
        self.messages += 1;
        if !self.shared.in_fault_phase(self.now()) {
            return (None, None);
        }
        let (to, back) = roll_legs(&self.shared.rates, &mut self.faults, legs);
        for (leg, action) in [(legs.0, to), (legs.1, back)] {
            if let Some(action) = action {
                self.record(Kind::Fault(Fault::Message {
                    node: self.id,
                    msg: self.messages,
                    leg,
                    action,
                }));
            }
        }
        (to, back)
    }

    fn send_store(&mut self, request: RequestId, op: Request, decided_us: u64) {
        let (to, back) = self.message_faults((Leg::ToStore, Leg::FromStore));
        if self.shared.is_cut(self.id, Leg::ToStore) {
            return self.lost(request, Leg::ToStore, LossReason::Partition);
        }
        if to == Some(MessageAction::Drop) {
            return self.lost(request, Leg::ToStore, LossReason::Dropped);
        }
        let injected_us = extra_us(to);
        let job = StoreJob {
            actor: Actor::Node {
                node: self.id,
                incarnation: self.incarnation,
            },
            request,
            op,
            decided_us,
            seen: self.seen,
            msg: self.messages,
            injected_us,
            refuse: to == Some(MessageAction::Fail),
            reply: back,
        };
        let at = self.now() + self.shared.latency(&mut self.network) + injected_us;
        self.wire.at(at, Due::ToStore(self.id, job));
    }

    fn send_effect(&mut self, request: RequestId, call: EffectRequest, decided_us: u64) {
        let (to, back) = self.message_faults((Leg::ToService, Leg::FromService));
        if self.shared.is_cut(self.id, Leg::ToService) {
            return self.lost(request, Leg::ToService, LossReason::Partition);
        }
        if to == Some(MessageAction::Drop) {
            return self.lost(request, Leg::ToService, LossReason::Dropped);
        }
        let now = self.now();
        let job = ServiceJob {
            node: self.id,
            incarnation: self.incarnation,
            request,
            call,
            decided_us,
            sent_us: now,
            seen: self.seen,
            refuse: to.filter(|a| matches!(a, MessageAction::Fail | MessageAction::Hang)),
            reply: back,
        };
        let at = now + self.shared.latency(&mut self.network) + extra_us(to);
        self.wire.at(at, Due::ToService(job));
    }
}

/// A store thread: one connection, requests answered in the order they
/// arrive, each one transaction.
struct StoreThread<'s> {
    shared: &'s Shared<'s>,
    /// The node it answers for (the workload's is past the nodes).
    index: usize,
    store: Option<LiveStore>,
    /// The outage epoch the connection belongs to.
    epoch: u64,
    url: leasehold_store_sql::StoreUrl,
    wire: Wire,
    rng: ChaCha8Rng,
}

impl StoreThread<'_> {
    fn run(mut self, jobs: Receiver<StoreJob>) {
        // Bounded by the run: each round waits at most POLL.
        while !self.shared.stop.load(Ordering::Relaxed) {
            match jobs.recv_timeout(POLL) {
                Ok(job) => self.serve(job),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn now(&self) -> u64 {
        self.shared.clock.now_us()
    }

    /// The connection, reopened if it was dropped.
    fn connection(&mut self) -> Result<&mut LiveStore, String> {
        let epoch = self.shared.outage_epoch.load(Ordering::Acquire);
        if epoch != self.epoch || self.store.as_ref().is_some_and(|s| s.is_closed()) {
            // An outage began since this connection was opened: dropped.
            self.store = None;
            self.epoch = epoch;
        }
        if self.store.is_none() {
            let store = LiveStore::open(&self.url, Setup::Existing, super::codec::LeaseCodec)
                .map_err(|e| e.0)?;
            self.shared.reconnects.fetch_add(1, Ordering::Relaxed);
            self.store = Some(store);
        }
        Ok(self.store.as_mut().expect("just opened"))
    }

    fn serve(&mut self, job: StoreJob) {
        let node = match job.actor {
            Actor::Node { node, incarnation } => Some((node, incarnation)),
            Actor::External => None,
        };
        let record = |this: &Self, order: Order, kind: Kind| {
            this.shared.record(this.now(), order, kind);
        };
        if let Some((node, incarnation)) = node {
            let lost = |reason| Kind::Lost {
                node,
                incarnation,
                request: job.request,
                leg: Leg::ToStore,
                reason,
            };
            if self.shared.outages[OutageMode::Timeout as usize].load(Ordering::Acquire) > 0 {
                return record(self, Order::After(job.seen), lost(LossReason::StoreOutage));
            }
            if job.refuse
                || self.shared.outages[OutageMode::Fail as usize].load(Ordering::Acquire) > 0
            {
                return self.refused(job);
            }
        }
        let decided_us = match job.actor {
            Actor::External => self.now(),
            Actor::Node { .. } => job.decided_us,
        };
        if node.is_some() {
            self.shared.in_flight.lock().expect("in flight")[self.index] = Some(InFlight {
                since_us: job.decided_us + job.injected_us,
                msg: job.msg,
                flagged_us: 0,
            });
        }
        let tag = WriteTag {
            client: node.map_or(-1, |(n, i)| i64::from(n.0) << 32 | i64::from(i)),
            request: job.request.0 as i64,
        };
        // Bounded by the run: a refused arrival is tried again every
        // RECONNECT_EVERY until it lands or the run ends (the workload is
        // a customer who orders again, not a node with its own retries).
        let result = loop {
            let result = match self.connection() {
                Ok(store) => store.apply(&job.op, Some(tag)),
                Err(e) => Err(RequestError::NotApplied(e)),
            };
            self.shared.store_requests.fetch_add(1, Ordering::Relaxed);
            match result {
                Err(RequestError::NotApplied(e))
                    if matches!(job.actor, Actor::External)
                        && !self.shared.stop.load(Ordering::Relaxed) =>
                {
                    self.shared.store_error(e);
                    self.store = None;
                    std::thread::sleep(RECONNECT_EVERY);
                }
                result => break result,
            }
        };
        match result {
            Ok(applied) => {
                self.shared.real_recovery(self.now());
                let order = if applied.wrote {
                    Order::Write(applied.revision)
                } else {
                    Order::After(applied.revision)
                };
                let at_us = self.shared.clock.us_at(applied.at);
                self.shared.record(
                    at_us,
                    order,
                    Kind::Store {
                        actor: job.actor,
                        request: job.request,
                        op: job.op.clone(),
                        reply: applied.reply.clone(),
                        before: applied.before,
                        decided_us: match job.actor {
                            Actor::External => at_us,
                            Actor::Node { .. } => decided_us,
                        },
                    },
                );
                self.reply(&job, applied.reply, applied.revision);
            }
            Err(RequestError::NotApplied(e)) => {
                self.shared.store_error(e);
                if self.store.as_ref().is_some_and(|s| s.is_closed()) {
                    self.store = None;
                }
                self.refused(job);
            }
            Err(RequestError::Unknown(e)) => {
                self.shared.store_error(e);
                self.store = None;
                self.unknown(job, tag, decided_us);
            }
        }
    }

    /// The store refused the request: nothing applied.
    fn refused(&mut self, job: StoreJob) {
        self.shared.record(
            self.now(),
            Order::After(job.seen),
            Kind::Store {
                actor: job.actor,
                request: job.request,
                op: job.op.clone(),
                reply: StoreReply::Unavailable,
                before: None,
                decided_us: job.decided_us,
            },
        );
        self.reply(&job, StoreReply::Unavailable, job.seen);
    }

    /// A write whose commit went unanswered: looked up in the store's
    /// write log once a connection is back. Its reply never reaches the
    /// node (the connection it would have come on is gone).
    fn unknown(&mut self, job: StoreJob, tag: WriteTag, decided_us: u64) {
        let key = *job.op.key().expect("only a write's outcome is unknown");
        // Bounded by the run: each round waits RECONNECT_EVERY.
        while !self.shared.stop.load(Ordering::Relaxed) {
            let found = self.connection().and_then(|s| s.resolve(tag, &key));
            let resolved = match found {
                Ok(resolved) => resolved,
                Err(_) => {
                    self.store = None;
                    std::thread::sleep(RECONNECT_EVERY);
                    continue;
                }
            };
            let Some((node, incarnation)) = (match job.actor {
                Actor::Node { node, incarnation } => Some((node, incarnation)),
                Actor::External => None,
            }) else {
                if let Some(r) = resolved {
                    self.landed(&job, r, decided_us);
                }
                return;
            };
            let leg = match resolved {
                Some(r) => {
                    let rev = r.revision;
                    self.landed(&job, r, decided_us);
                    self.shared.record(
                        self.now(),
                        Order::After(rev),
                        Kind::Lost {
                            node,
                            incarnation,
                            request: job.request,
                            leg: Leg::FromStore,
                            reason: LossReason::StoreOutage,
                        },
                    );
                    return;
                }
                None => Leg::ToStore,
            };
            self.shared.record(
                self.now(),
                Order::After(job.seen),
                Kind::Lost {
                    node,
                    incarnation,
                    request: job.request,
                    leg,
                    reason: LossReason::StoreOutage,
                },
            );
            return;
        }
        self.shared.unknown_outcomes.fetch_add(1, Ordering::Relaxed);
    }

    /// Record a write found in the log: it landed at `r.revision`.
    fn landed(
        &self,
        job: &StoreJob,
        r: leasehold_store_sql::Resolved<DocKey, DocValue>,
        decided_us: u64,
    ) {
        let reply = match job.op {
            StoreRequest::DeleteIfVersion { .. } => StoreReply::Deleted,
            _ => StoreReply::Written {
                version: r.revision,
            },
        };
        self.shared.record(
            self.now(),
            Order::Write(r.revision),
            Kind::Store {
                actor: job.actor,
                request: job.request,
                op: job.op.clone(),
                reply,
                before: r.before,
                decided_us,
            },
        );
    }

    /// Send `reply` back to the node that asked (through its reply leg's
    /// fault and partitions), observed at revision `seen`.
    fn reply(&mut self, job: &StoreJob, reply: StoreReply<DocKey, DocValue>, seen: u64) {
        let Actor::Node { node, incarnation } = job.actor else {
            return;
        };
        let now = self.now();
        let lost = |reason| Kind::Lost {
            node,
            incarnation,
            request: job.request,
            leg: Leg::FromStore,
            reason,
        };
        if job.reply == Some(MessageAction::Drop) {
            return self
                .shared
                .record(now, Order::After(seen), lost(LossReason::Dropped));
        }
        if self.shared.is_cut(node, Leg::FromStore) {
            return self
                .shared
                .record(now, Order::After(seen), lost(LossReason::Partition));
        }
        // Later than the scenario's delays allow (the real store, or the
        // host, was slow at this speed): recorded as the delay it was, as
        // an injected one would be, so the run says what the node met.
        let flagged = self
            .shared
            .in_flight
            .lock()
            .expect("in flight")
            .get_mut(self.index)
            .and_then(Option::take)
            .is_some_and(|f| f.flagged_us > 0);
        let late_us = now.saturating_sub(job.decided_us + job.injected_us);
        if late_us > self.shared.stall_after_us && !flagged {
            self.shared.late_replies.fetch_add(1, Ordering::Relaxed);
            self.shared.record(
                now,
                Order::After(seen),
                Kind::Fault(Fault::Message {
                    node,
                    msg: job.msg,
                    leg: Leg::FromStore,
                    action: MessageAction::Delay { extra_us: late_us },
                }),
            );
        }
        let at = now + self.shared.latency(&mut self.rng) + extra_us(job.reply);
        self.wire.at(
            at,
            Due::ToNode(
                node,
                ToNode::Input {
                    incarnation,
                    input: Input::StoreReply {
                        request: job.request,
                        reply,
                    },
                    seen,
                },
            ),
        );
    }
}

/// The wire: every message's latency, the effect services, the scheduled
/// faults, the heal phase and the workload's arrivals.
struct WireThread<'s> {
    shared: &'s Shared<'s>,
    node_txs: Vec<Sender<ToNode>>,
    store_txs: Vec<Sender<StoreJob>>,
    workload: Sender<StoreJob>,
    services: Vec<EffectService>,
    /// Work times, per service.
    work: Vec<ChaCha8Rng>,
    network: ChaCha8Rng,
    steps_total: u32,
    tx: Sender<Timed>,
    seq: Arc<AtomicU64>,
}

impl WireThread<'_> {
    fn run(mut self, rx: Receiver<Timed>) {
        let clock = self.shared.clock;
        let mut heap: BinaryHeap<Timed> = BinaryHeap::new();
        // Bounded by the run: each round waits at most POLL.
        while !self.shared.stop.load(Ordering::Relaxed) {
            let now = clock.now_us();
            while heap.peek().is_some_and(|t| t.at_us <= now) {
                let timed = heap.pop().expect("peeked");
                self.deliver(timed.due);
            }
            let wait = heap.peek().map_or(POLL, |t| clock.until(t.at_us).min(POLL));
            match rx.recv_timeout(wait) {
                Ok(timed) => heap.push(timed),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            while let Ok(timed) = rx.try_recv() {
                heap.push(timed);
            }
            assert!(
                heap.len() <= MAX_IN_FLIGHT,
                "messages in flight past the bound"
            );
            self.watch_store_requests();
        }
    }

    /// A store request out longer than the scenario's delays allow is
    /// recorded as a delayed reply while it is still out (and again each
    /// time as long passes), not only once it comes back: a node that
    /// gives up on a slow store before the reply comes was touched by a
    /// fault, and the run says so before the node acts on it.
    fn watch_store_requests(&self) {
        let now = self.shared.clock.now_us();
        let after = self.shared.stall_after_us;
        let mut late = Vec::new();
        {
            let mut in_flight = self.shared.in_flight.lock().expect("in flight");
            for (node, f) in in_flight.iter_mut().enumerate() {
                if let Some(f) = f
                    && now.saturating_sub(f.since_us) > after
                    && now.saturating_sub(f.flagged_us) > after
                {
                    f.flagged_us = now;
                    late.push((NodeId(node as u32), *f));
                }
            }
        }
        for (node, f) in late {
            self.shared.late_replies.fetch_add(1, Ordering::Relaxed);
            self.record(
                Kind::Fault(Fault::Message {
                    node,
                    msg: f.msg,
                    leg: Leg::FromStore,
                    action: MessageAction::Delay {
                        extra_us: now.saturating_sub(f.since_us),
                    },
                }),
                0,
            );
        }
    }

    fn at(&self, at_us: u64, due: Due) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let _ = self.tx.send(Timed { at_us, seq, due });
    }

    fn record(&self, kind: Kind, after: u64) {
        self.shared
            .record(self.shared.clock.now_us(), Order::After(after), kind);
    }

    fn deliver(&mut self, due: Due) {
        let now = self.shared.clock.now_us();
        // A send fails only once its receiver ended, at the run's end.
        match due {
            Due::ToNode(node, message) => {
                let _ = self.node_txs[node.index()].send(message);
            }
            Due::ToStore(node, job) => {
                let _ = self.store_txs[node.index()].send(job);
            }
            Due::ToService(job) => self.service(job),
            Due::Scheduled(fault) => match fault {
                Fault::CrashAt {
                    node,
                    restart_after_us,
                    ..
                } => {
                    let _ = self.node_txs[node.index()].send(ToNode::Crash { restart_after_us });
                }
                Fault::PauseAt {
                    node, duration_us, ..
                } => {
                    let _ = self.node_txs[node.index()].send(ToNode::Pause { duration_us });
                }
                Fault::Partition {
                    node,
                    link,
                    direction,
                    duration_us,
                    ..
                } => {
                    self.record(Kind::Fault(fault), 0);
                    self.shared.cuts.lock().expect("cuts")[node.index()]
                        [cut_index(link, direction)] += 1;
                    self.at(now + duration_us, Due::PartitionOver(node, link, direction));
                }
                Fault::StoreOutage {
                    duration_us, mode, ..
                } => {
                    self.record(Kind::Fault(fault), 0);
                    self.shared.outages[mode as usize].fetch_add(1, Ordering::AcqRel);
                    self.shared.outage_epoch.fetch_add(1, Ordering::AcqRel);
                    self.at(now + duration_us, Due::OutageOver(mode));
                }
                other => unreachable!("not a scheduled fault: {other:?}"),
            },
            Due::OutageOver(mode) => {
                self.shared.outages[mode as usize].fetch_sub(1, Ordering::AcqRel);
                self.record(Kind::Fault(Fault::StoreRecovered { mode }), 0);
            }
            Due::PartitionOver(node, link, direction) => {
                self.shared.cuts.lock().expect("cuts")[node.index()][cut_index(link, direction)] -=
                    1;
                self.record(
                    Kind::Fault(Fault::PartitionHealed {
                        node,
                        link,
                        direction,
                    }),
                    0,
                );
            }
            Due::Heal => self.record(Kind::HealPhase, 0),
            Due::Arrival(task) => {
                let task_id = TaskId(u32::try_from(task).expect("task ids are u32"));
                let doc = TaskDoc::new_pending(self.steps_total);
                let job = StoreJob {
                    actor: Actor::External,
                    request: RequestId(task),
                    op: StoreRequest::CreateIfAbsent {
                        key: DocKey::Task { task: task_id },
                        value: DocValue::Task(doc),
                        index: doc.index_key(task_id),
                    },
                    decided_us: now,
                    seen: 0,
                    msg: task,
                    injected_us: 0,
                    refuse: false,
                    reply: None,
                };
                let _ = self.workload.send(job);
            }
        }
    }

    /// A call arrives at its service: decided now (the card is charged
    /// now), its reply back after the work time.
    fn service(&mut self, job: ServiceJob) {
        let now = self.shared.clock.now_us();
        let lost = |leg, reason| Kind::Lost {
            node: job.node,
            incarnation: job.incarnation,
            request: job.request,
            leg,
            reason,
        };
        if job.refuse == Some(MessageAction::Hang) {
            return self.record(lost(Leg::ToService, LossReason::Hung), job.seen);
        }
        let service = job.call.service.0 as usize;
        let outcome = if job.refuse == Some(MessageAction::Fail) {
            EffectReply::Failed
        } else {
            self.services[service].decide(&job.call)
        };
        self.record(
            Kind::Effect {
                actor: Actor::Node {
                    node: job.node,
                    incarnation: job.incarnation,
                },
                request: job.request,
                call: job.call,
                outcome,
                decided_us: job.decided_us,
                sent_us: job.sent_us,
            },
            job.seen,
        );
        if job.reply == Some(MessageAction::Drop) {
            return self.record(lost(Leg::FromService, LossReason::Dropped), job.seen);
        }
        if self.shared.is_cut(job.node, Leg::FromService) {
            return self.record(lost(Leg::FromService, LossReason::Partition), job.seen);
        }
        let spec = &self.services[service].spec;
        let work_us = self.work[service].random_range(spec.work_ms_min..=spec.work_ms_max) * 1_000;
        let latency = self.shared.latency(&mut self.network);
        self.at(
            now + work_us + latency + extra_us(job.reply),
            Due::ToNode(
                job.node,
                ToNode::Input {
                    incarnation: job.incarnation,
                    input: Input::EffectReply {
                        request: job.request,
                        reply: outcome,
                    },
                    seen: job.seen,
                },
            ),
        );
    }
}
