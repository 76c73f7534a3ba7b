//! `explain`: a failing run told as a short story around its violation, the
//! way the article tells order #49201's: who claimed which task at which
//! epoch, every effect and its outcome, every fault, every reclaim, in order,
//! ending in the invariant that broke and why.

use leasehold_check::NodeRole;
use leasehold_interface::{EffectReply, StoreReply, StoreRequest};
use leasehold_protocol::{DocKey, DocValue, FenceCause, LeaseEvent, TaskId, TaskState, Variant};
use leasehold_run::run::{Rerun, RunOutcome, node_roles};
use leasehold_scenario::scenario::ValidScenario;
use leasehold_sim::{
    Actor, CrashPoint, Direction, Fault, FaultPlan, Leg, Link, LossReason, MessageAction, NodeId,
    Observer, Record, RecordKind,
};
use std::collections::BTreeSet;

/// Lines beyond this are elided from the middle of the story.
const MAX_STORY_LINES: usize = 80;

/// How much a line of the story explains: what a long story's default cut
/// keeps first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Weight {
    /// About a followed task (its writes, effects, re-queues), or what
    /// struck a node that owned one (a crash, a pause, a partition, being
    /// declared dead), or the heal phase.
    Story,
    /// A message fault or a message lost: noise in bulk, one may matter.
    Message,
}

struct Teller<'a> {
    roles: &'a [NodeRole],
    tasks: &'a BTreeSet<u32>,
    services: Vec<String>,
    lines: Vec<(u64, String, Weight)>,
    /// Nodes that claimed a followed task: their faults are its story (a
    /// node keeps that until every followed task is done). Empty while no
    /// task is followed, when every fault is told.
    owners: BTreeSet<NodeId>,
    /// Followed tasks done (once all are, faults are no longer theirs).
    done: BTreeSet<u32>,
    /// Followed tasks that arrived (a store outage before any is not theirs).
    arrived: BTreeSet<u32>,
    /// Nodes whose pause, crash or partition was told: its end is told too.
    told_open: BTreeSet<(NodeId, u8)>,
    /// A store outage was told: its end is told too.
    told_outage: bool,
}

fn secs(us: u64) -> String {
    format!("{:>9.3} s", us as f64 / 1e6)
}

/// A fault in the words `explain` tells it (`NETWORK: worker-3's reply from
/// the store is delayed 0.4 s`); `export` labels its marks with the same.
pub fn fault_words(roles: &[NodeRole], fault: &Fault) -> String {
    let n = |node: NodeId| node_name(roles, node);
    match *fault {
        Fault::Crash { node, point, .. } => match point {
            CrashPoint::BeforeInput => {
                format!("CRASH: {} dies before handling its next input", n(node))
            }
            CrashPoint::BetweenOutputs { emitted } => format!(
                "CRASH: {} dies mid-step, after {emitted} of its outputs left",
                n(node)
            ),
        },
        Fault::CrashAt { node, .. } => {
            format!("CRASH: {} is killed (deploy or node failure)", n(node))
        }
        Fault::Restart { node, incarnation } => format!(
            "{} restarts as incarnation {incarnation}, remembering nothing",
            n(node)
        ),
        Fault::Pause {
            node,
            duration_us,
            after_outputs,
            ..
        } => format!(
            "PAUSE: {} freezes for {:.1} s (stop-the-world GC) after {after_outputs} outputs of its step left",
            n(node),
            duration_us as f64 / 1e6
        ),
        Fault::PauseAt {
            node, duration_us, ..
        } => format!(
            "PAUSE: {} freezes for {:.1} s",
            n(node),
            duration_us as f64 / 1e6
        ),
        Fault::Resume { node } => {
            format!("{} wakes up and carries on as if nothing happened", n(node))
        }
        Fault::ClockJump { node, delta_us, .. } => format!(
            "CLOCK: {}'s wall clock jumps by {:+.1} s",
            n(node),
            delta_us as f64 / 1e6
        ),
        Fault::Message {
            node, leg, action, ..
        } => format!(
            "NETWORK: {}'s {} {}",
            n(node),
            message_words(leg),
            action_words(action)
        ),
        Fault::Partition {
            node,
            link,
            direction,
            duration_us,
            ..
        } => format!(
            "PARTITION: {} loses {} its link to {} for {:.1} s",
            n(node),
            match direction {
                Direction::Both => "both directions of",
                Direction::Outbound => "the outbound half of",
                Direction::Inbound => "the inbound half of",
            },
            match link {
                Link::Store => "the store",
                Link::Services => "the services",
            },
            duration_us as f64 / 1e6
        ),
        Fault::PartitionHealed { node, .. } => format!("{}'s partition heals", n(node)),
        Fault::StoreOutage { duration_us, .. } => {
            format!("STORE OUTAGE for {:.1} s", duration_us as f64 / 1e6)
        }
        Fault::StoreRecovered { .. } => "the store answers again".to_string(),
    }
}

/// The message of a leg, in words: "reply from the store".
pub fn message_words(leg: Leg) -> &'static str {
    match leg {
        Leg::ToStore => "request to the store",
        Leg::FromStore => "reply from the store",
        Leg::ToService => "call to a service",
        Leg::FromService => "reply from a service",
    }
}

/// What a message fault did, in words: "is delayed 0.4 s".
pub fn action_words(action: MessageAction) -> String {
    match action {
        MessageAction::Drop => "is lost".to_string(),
        MessageAction::Duplicate { .. } => "is delivered twice".to_string(),
        MessageAction::Delay { extra_us } => {
            format!("is delayed {:.1} s", extra_us as f64 / 1e6)
        }
        MessageAction::Fail => "is refused".to_string(),
        MessageAction::Hang => "hangs forever".to_string(),
    }
}

impl Teller<'_> {
    fn node(&self, node: NodeId, incarnation: Option<u32>) -> String {
        let name = node_name(self.roles, node);
        match (self.roles.get(node.index()), incarnation) {
            (Some(NodeRole::Worker { .. }), Some(i)) => format!("{name}#{i}"),
            _ => name,
        }
    }

    fn actor(&self, actor: Actor) -> String {
        match actor {
            Actor::Node { node, incarnation } => self.node(node, Some(incarnation)),
            Actor::External => "a customer".to_string(),
        }
    }

    fn say(&mut self, time_us: u64, text: String) {
        self.lines.push((time_us, text, Weight::Story));
    }

    fn say_message(&mut self, time_us: u64, text: String) {
        self.lines.push((time_us, text, Weight::Message));
    }

    /// Whether what happens to `node` now is part of the followed tasks'
    /// story: every node's is while no task is followed; otherwise an
    /// owner's, until every followed task is done.
    fn touches(&self, node: NodeId) -> bool {
        self.tasks.is_empty() || (self.owners.contains(&node) && self.done.len() < self.tasks.len())
    }

    /// The node of a worker owner, if it is in this run's fleet.
    fn node_of_worker(&self, worker: u32) -> Option<NodeId> {
        self.roles
            .iter()
            .position(|r| *r == NodeRole::Worker { worker })
            .map(|i| NodeId(i as u32))
    }

    fn fault(&mut self, time_us: u64, fault: &Fault) {
        // Kinds of what opens and closes: a pause, a crash, a partition.
        const PAUSE: u8 = 0;
        const CRASH: u8 = 1;
        const PARTITION: u8 = 2;
        let told = match *fault {
            Fault::StoreOutage { .. } => {
                let alive = self.tasks.is_empty()
                    || (!self.arrived.is_empty() && self.done.len() < self.tasks.len());
                self.told_outage = alive;
                alive
            }
            Fault::StoreRecovered { .. } => std::mem::take(&mut self.told_outage),
            // An end is told when its start was, or when it is the
            // story's anyway (a restart after a node fenced itself).
            Fault::Resume { node } => self.told_open.remove(&(node, PAUSE)) | self.touches(node),
            Fault::Restart { node, .. } => {
                self.told_open.remove(&(node, CRASH)) | self.touches(node)
            }
            Fault::PartitionHealed { node, .. } => {
                self.told_open.remove(&(node, PARTITION)) | self.touches(node)
            }
            ref f => {
                let node = f.node().expect("every other fault strikes a node");
                let told = self.touches(node);
                let opens = match f {
                    Fault::Pause { .. } | Fault::PauseAt { .. } => Some(PAUSE),
                    Fault::Crash { .. } | Fault::CrashAt { .. } => Some(CRASH),
                    Fault::Partition { .. } => Some(PARTITION),
                    _ => None,
                };
                if let (true, Some(kind)) = (told, opens) {
                    self.told_open.insert((node, kind));
                }
                told
            }
        };
        if !told {
            return;
        }
        let text = fault_words(self.roles, fault);
        if matches!(fault, Fault::Message { .. }) {
            self.say_message(time_us, text);
        } else {
            self.say(time_us, text);
        }
    }

    /// A write of a followed task's document: who owns it from now on, and
    /// whether it is done.
    fn follow_write(&mut self, task: u32, actor: Actor, new: &leasehold_protocol::TaskDoc) {
        self.arrived.insert(task);
        match new.state {
            TaskState::Done => {
                self.done.insert(task);
            }
            TaskState::Running => {
                if let Some(node) = new.owner.and_then(|o| self.node_of_worker(o.worker)) {
                    self.owners.insert(node);
                }
                if let Actor::Node { node, .. } = actor {
                    self.owners.insert(node);
                }
                self.done.remove(&task);
            }
            TaskState::Pending => {
                self.done.remove(&task);
            }
        }
    }
}

impl Observer<DocKey, DocValue, LeaseEvent> for Teller<'_> {
    fn record(&mut self, record: &Record<'_, DocKey, DocValue, LeaseEvent>) {
        let t = record.time_us;
        match &record.kind {
            RecordKind::Store {
                actor,
                op,
                reply,
                before,
                ..
            } => {
                let Some(DocKey::Task { task }) = op.key() else {
                    return;
                };
                if !self.tasks.contains(&task.0) {
                    return;
                }
                let who = self.actor(*actor);
                let Some(new) = op.value().and_then(|v| v.as_task().copied()) else {
                    return;
                };
                if let StoreReply::Written { .. } = reply {
                    self.follow_write(task.0, *actor, &new);
                }
                let old = before.and_then(|b| b.value.as_task().copied());
                let blind = matches!(op, StoreRequest::PutUnconditional { .. });
                let text = match reply {
                    StoreReply::Written { .. } => {
                        (match (old.map(|o| o.state), new.state) {
                            (None, _) => format!("task {} arrives", task.0),
                            (Some(TaskState::Pending), TaskState::Running) => {
                                format!("{who} claims task {} (epoch {})", task.0, new.epoch)
                            }
                            (Some(TaskState::Running), TaskState::Running) => {
                                format!(
                                    "{who} records step {} of task {} done",
                                    new.steps_done.saturating_sub(1),
                                    task.0
                                )
                            }
                            (_, TaskState::Done) => {
                                format!("{who} completes task {} (epoch {})", task.0, new.epoch)
                            }
                            (_, TaskState::Pending) => format!(
                                "{who} re-queues task {} (epoch {} -> {})",
                                task.0,
                                old.map_or(0, |o| o.epoch),
                                new.epoch
                            ),
                            (_, TaskState::Running) => format!(
                                "{who} writes task {}: running, owner {}, epoch {}",
                                task.0,
                                new.owner.map_or("-".to_string(), |o| o.to_string()),
                                new.epoch
                            ),
                        }) + if blind {
                            " [blind write, no condition]"
                        } else {
                            ""
                        }
                    }
                    StoreReply::Conflict { .. } => {
                        format!(
                            "the store refuses {who}'s write to task {}: it moved on",
                            task.0
                        )
                    }
                    StoreReply::Unavailable => format!("the store is unavailable to {who}"),
                    _ => return,
                };
                self.say(t, text);
            }
            RecordKind::Effect {
                actor,
                call,
                outcome,
                decided_us,
                ..
            } => {
                if !self.tasks.contains(&(call.resource as u32)) {
                    return;
                }
                let service = self
                    .services
                    .get(call.service.0 as usize)
                    .cloned()
                    .unwrap_or_default();
                let what = match outcome {
                    EffectReply::Applied => "APPLIES",
                    EffectReply::Deduplicated => "deduplicates",
                    EffectReply::RejectedStale => "rejects as stale",
                    EffectReply::Failed => "fails",
                };
                let late = if *decided_us + 1_000_000 < t {
                    format!(" (decided at {})", secs(*decided_us).trim())
                } else {
                    String::new()
                };
                let who = self.actor(*actor);
                self.say(
                    t,
                    format!(
                        "{service} {what} step {} of task {} for {who} at epoch {}{late}",
                        call.step, call.resource, call.token
                    ),
                );
            }
            RecordKind::Fault(f) => self.fault(t, f),
            RecordKind::Event {
                node,
                incarnation,
                event,
            } => {
                let who = self.node(*node, Some(*incarnation));
                let text = match event {
                    LeaseEvent::DeclaredDead { owner }
                        if self
                            .node_of_worker(owner.worker)
                            .is_some_and(|n| self.touches(n)) =>
                    {
                        format!("{who} declares {owner} dead")
                    }
                    LeaseEvent::DeclaredDead { .. } => return,
                    LeaseEvent::Fenced { .. } if !self.touches(*node) => return,
                    LeaseEvent::Fenced {
                        cause: FenceCause::LeaseExpired,
                        ..
                    } => {
                        format!("{who} cannot prove its lease and fences itself: it stops all work")
                    }
                    LeaseEvent::Fenced {
                        cause: FenceCause::DeclaredDead,
                        ..
                    } => format!(
                        "{who} learns it was declared dead (a write to its member document conflicts) and stops all work"
                    ),
                    LeaseEvent::Abandoned { task, epoch } if self.tasks.contains(&task.0) => {
                        format!(
                            "{who} gives up task {} (epoch {epoch}): it moved on",
                            task.0
                        )
                    }
                    LeaseEvent::TaskLeaseExpired { task, owner, epoch }
                        if self.tasks.contains(&task.0) =>
                    {
                        format!(
                            "{who} finds the lease of {owner} on task {} (epoch {epoch}) expired and marks it dead",
                            task.0
                        )
                    }
                    LeaseEvent::ClaimVoided { task, owner, epoch }
                        if self.tasks.contains(&task.0) =>
                    {
                        format!(
                            "{who} voids any claim of {owner} on task {} still in flight: the task stays pending, now at epoch {epoch}",
                            task.0
                        )
                    }
                    _ => return,
                };
                self.say(record.time_us, text);
            }
            RecordKind::Lost {
                node,
                incarnation,
                leg,
                reason,
                ..
            } => {
                let why = match reason {
                    LossReason::Partition => "the partition",
                    LossReason::StoreOutage => "the store outage",
                    LossReason::Dropped | LossReason::Hung => return, // told by the fault line
                };
                if !self.touches(*node) {
                    return;
                }
                let who = self.node(*node, Some(*incarnation));
                let what = match leg {
                    Leg::ToStore | Leg::ToService => "a request",
                    Leg::FromStore | Leg::FromService => "a reply",
                };
                self.say_message(t, format!("{what} of {who} is lost to {why}"));
            }
            RecordKind::HealPhase => self.say(
                t,
                "--- faults stop here: the heal phase begins ---".to_string(),
            ),
            _ => {}
        }
    }
}

/// The marker for `n` lines a cut left out.
fn elided(n: usize) -> String {
    let lines = if n == 1 { "line" } else { "lines" };
    format!("  {:>11}  ... {n} more {lines} ...", "")
}

/// Which lines of a long story its default cut keeps: at most
/// [`MAX_STORY_LINES`], counting a `... N more lines ...` marker for each
/// run of lines left out. The story's own lines first (a followed task's
/// writes and effects, what struck its owners), then the message faults
/// nearest the violation (before it first). A story with more of its own
/// lines than that, or of no task, keeps its start and its end.
fn story_cut(lines: &[(u64, String, Weight)], violation_us: Option<u64>) -> Vec<bool> {
    if lines.len() <= MAX_STORY_LINES {
        return vec![true; lines.len()];
    }
    let story: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].2 == Weight::Story)
        .collect();
    let mut keep = vec![false; lines.len()];
    for &i in &story {
        keep[i] = true;
    }
    let shown = |keep: &[bool]| {
        let kept = keep.iter().filter(|k| **k).count();
        let gaps = (0..keep.len())
            .filter(|&i| !keep[i] && (i == 0 || keep[i - 1]))
            .count();
        kept + gaps
    };
    if story.len() == lines.len() || shown(&keep) > MAX_STORY_LINES {
        // More than fits: the story's beginning and its run-up to the end,
        // with one marker between.
        let budget = MAX_STORY_LINES - 1;
        let head = budget / 4;
        let mut keep = vec![false; lines.len()];
        for &i in story.iter().take(head) {
            keep[i] = true;
        }
        for &i in story.iter().rev().take(budget - head) {
            keep[i] = true;
        }
        return keep;
    }
    // Then the message faults closest to the violation (or the end), while
    // the lines and their markers fit.
    let focus = violation_us.unwrap_or_else(|| lines.last().map_or(0, |l| l.0));
    let mut messages: Vec<usize> = (0..lines.len()).filter(|&i| !keep[i]).collect();
    messages.sort_by_key(|&i| {
        let t = lines[i].0;
        (t > focus, t.abs_diff(focus), i)
    });
    for i in messages {
        keep[i] = true;
        if shown(&keep) > MAX_STORY_LINES {
            keep[i] = false;
            break;
        }
    }
    // A line left out alone costs its marker: show it instead.
    for i in 0..keep.len() {
        let alone = (i == 0 || keep[i - 1]) && (i + 1 == keep.len() || keep[i + 1]);
        if alone {
            keep[i] = true;
        }
    }
    keep
}

/// What `explain` tells beyond its default.
#[derive(Clone, Debug, Default)]
pub struct Telling {
    /// Follow these tasks instead of the ones the violations name.
    pub tasks: Option<BTreeSet<u32>>,
    /// Every line: no cut in the middle of a long story.
    pub all: bool,
}

/// The story of `seed` (with `plan`, if given) as lines of text, ending with
/// the violations. Runs the simulation twice: once to learn which tasks the
/// violations involve, once to tell their story.
pub fn explain(
    scn: &ValidScenario,
    seed: u64,
    variant: Variant,
    plan: Option<FaultPlan>,
) -> (Vec<String>, RunOutcome) {
    explain_with(scn, seed, variant, &Rerun::Seed(plan), &Telling::default())
}

/// [`explain`], following the tasks and showing the lines `telling` asks
/// for; the run had again as `how` says (a live run's trace: its records).
pub fn explain_with(
    scn: &ValidScenario,
    seed: u64,
    variant: Variant,
    how: &Rerun,
    telling: &Telling,
) -> (Vec<String>, RunOutcome) {
    let (tasks, violated) = match &telling.tasks {
        // Told tasks need no first run to find them; the told run says
        // whether it violated anything.
        Some(tasks) => (tasks.clone(), None),
        None => {
            let first = how.run(scn, seed, variant, None);
            let tasks: BTreeSet<u32> = first
                .violations
                .iter()
                .filter_map(|v| v.task.map(|t: TaskId| t.0))
                .take(3)
                .collect();
            (tasks, Some(!first.ok()))
        }
    };
    let roles = node_roles(scn);
    let mut teller = Teller {
        roles: &roles,
        tasks: &tasks,
        services: scn.services.iter().map(|s| s.name.clone()).collect(),
        lines: Vec::new(),
        owners: BTreeSet::new(),
        done: BTreeSet::new(),
        arrived: BTreeSet::new(),
        told_open: BTreeSet::new(),
        told_outage: false,
    };
    let outcome = how.run(scn, seed, variant, Some(&mut teller));
    let mut out = Vec::new();
    let s = &scn.scenario;
    let story = match violated {
        _ if !tasks.is_empty() => format!(
            "the story of task{} {}",
            if tasks.len() == 1 { "" } else { "s" },
            tasks
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Some(false) => "no invariant was violated, so no task is followed: faults and stops only \
             (--task N follows a task, --all shows every line)"
            .to_string(),
        _ => "the violation names no task: faults and stops only (--task N follows a task)"
            .to_string(),
    };
    out.push(format!(
        "{} (seed {seed}, variant {}): {} workers, {} reclaimers, {} tasks of {} steps; {story}",
        s.name,
        variant.name(),
        s.fleet.workers,
        s.fleet.reclaimers,
        s.tasks.total(),
        s.tasks.steps_per_task(),
    ));
    let lines = teller.lines;
    let kept = if telling.all {
        vec![true; lines.len()]
    } else {
        story_cut(
            &lines,
            outcome.violations.first().map(|v| v.time_ms * 1_000),
        )
    };
    let mut left_out = 0;
    for ((t, text, _), keep) in lines.iter().zip(&kept) {
        if !keep {
            left_out += 1;
            continue;
        }
        if left_out > 0 {
            out.push(elided(left_out));
            left_out = 0;
        }
        out.push(format!("  {}  {text}", secs(*t)));
    }
    if left_out > 0 {
        out.push(elided(left_out));
    }
    for v in outcome.violations.iter().take(3) {
        out.push(format!(
            "VIOLATION {} at {:.3} s: {}",
            v.invariant,
            v.time_ms as f64 / 1e3,
            v.message
        ));
    }
    if let Some(cut) = &outcome.cut_short {
        out.push(format!("CUT SHORT: {}", cut.line()));
    } else if outcome.ok() {
        out.push("no invariant was violated in this run".to_string());
    }
    (out, outcome)
}

/// A node as every report names it: `worker-3`, `reclaimer-0`.
pub fn node_name(roles: &[NodeRole], node: NodeId) -> String {
    match roles.get(node.index()) {
        Some(NodeRole::Worker { worker }) => format!("worker-{worker}"),
        Some(NodeRole::Reclaimer { id }) => format!("reclaimer-{id}"),
        None => format!("node-{}", node.0),
    }
}
