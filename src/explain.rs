//! `explain`: a failing run told as a short story around its violation, the
//! way the article tells order #49201's: who claimed which task at which
//! epoch, every effect and its outcome, every fault, every reclaim, in order,
//! ending in the invariant that broke and why.

use crate::run::{RunOutcome, node_roles, simulate_with_plan};
use crate::scenario::ValidScenario;
use leasehold_check::NodeRole;
use leasehold_interface::{EffectReply, StoreReply, StoreRequest};
use leasehold_protocol::{DocKey, DocValue, FenceCause, LeaseEvent, TaskId, TaskState, Variant};
use leasehold_sim::{
    Actor, CrashPoint, Direction, Fault, FaultPlan, Leg, Link, LossReason, MessageAction, NodeId,
    Observer, Record, RecordKind,
};
use std::collections::BTreeSet;

/// Lines beyond this are elided from the middle of the story.
const MAX_STORY_LINES: usize = 80;

struct Teller<'a> {
    roles: &'a [NodeRole],
    tasks: &'a BTreeSet<u32>,
    services: Vec<String>,
    lines: Vec<(u64, String)>,
}

fn secs(us: u64) -> String {
    format!("{:>9.3} s", us as f64 / 1e6)
}

impl Teller<'_> {
    fn node(&self, node: NodeId, incarnation: Option<u32>) -> String {
        let name = crate::export::node_name(self.roles, node);
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
        self.lines.push((time_us, text));
    }

    fn fault(&mut self, time_us: u64, fault: &Fault) {
        let n = |t: &Self, node: NodeId| t.node(node, None);
        let text = match *fault {
            Fault::Crash { node, point, .. } => match point {
                CrashPoint::BeforeInput => format!(
                    "CRASH: {} dies before handling its next input",
                    n(self, node)
                ),
                CrashPoint::BetweenOutputs { emitted } => {
                    format!(
                        "CRASH: {} dies mid-step, after {emitted} of its outputs left",
                        n(self, node)
                    )
                }
            },
            Fault::CrashAt { node, .. } => format!(
                "CRASH: {} is killed (deploy or node failure)",
                n(self, node)
            ),
            Fault::Restart { node, incarnation } => {
                format!(
                    "{} restarts as incarnation {incarnation}, remembering nothing",
                    n(self, node)
                )
            }
            Fault::Pause {
                node,
                duration_us,
                after_outputs,
                ..
            } => format!(
                "PAUSE: {} freezes for {:.1} s (stop-the-world GC) after {after_outputs} outputs of its step left",
                n(self, node),
                duration_us as f64 / 1e6
            ),
            Fault::PauseAt {
                node, duration_us, ..
            } => {
                format!(
                    "PAUSE: {} freezes for {:.1} s",
                    n(self, node),
                    duration_us as f64 / 1e6
                )
            }
            Fault::Resume { node } => format!(
                "{} wakes up and carries on as if nothing happened",
                n(self, node)
            ),
            Fault::ClockJump { node, delta_us, .. } => {
                format!(
                    "CLOCK: {}'s wall clock jumps by {:+.1} s",
                    n(self, node),
                    delta_us as f64 / 1e6
                )
            }
            Fault::Message {
                node, leg, action, ..
            } => {
                let what = match leg {
                    Leg::ToStore => "request to the store",
                    Leg::FromStore => "reply from the store",
                    Leg::ToService => "call to a service",
                    Leg::FromService => "reply from a service",
                };
                let how = match action {
                    MessageAction::Drop => "is lost".to_string(),
                    MessageAction::Duplicate { .. } => "is delivered twice".to_string(),
                    MessageAction::Delay { extra_us } => {
                        format!("is delayed {:.1} s", extra_us as f64 / 1e6)
                    }
                    MessageAction::Fail => "is refused".to_string(),
                    MessageAction::Hang => "hangs forever".to_string(),
                };
                format!("NETWORK: {}'s {what} {how}", n(self, node))
            }
            Fault::Partition {
                node,
                link,
                direction,
                duration_us,
                ..
            } => format!(
                "PARTITION: {} loses {} its link to {} for {:.1} s",
                n(self, node),
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
            Fault::PartitionHealed { node, .. } => format!("{}'s partition heals", n(self, node)),
            Fault::StoreOutage { duration_us, .. } => {
                format!("STORE OUTAGE for {:.1} s", duration_us as f64 / 1e6)
            }
            Fault::StoreRecovered { .. } => "the store answers again".to_string(),
        };
        self.say(time_us, text);
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
                    LeaseEvent::DeclaredDead { owner } => format!("{who} declares {owner} dead"),
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
                let who = self.node(*node, Some(*incarnation));
                let what = match leg {
                    Leg::ToStore | Leg::ToService => "a request",
                    Leg::FromStore | Leg::FromService => "a reply",
                };
                self.say(t, format!("{what} of {who} is lost to {why}"));
            }
            RecordKind::HealPhase => self.say(
                t,
                "--- faults stop here: the heal phase begins ---".to_string(),
            ),
            _ => {}
        }
    }
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
    explain_with(scn, seed, variant, plan, &Telling::default())
}

/// [`explain`], following the tasks and showing the lines `telling` asks for.
pub fn explain_with(
    scn: &ValidScenario,
    seed: u64,
    variant: Variant,
    plan: Option<FaultPlan>,
    telling: &Telling,
) -> (Vec<String>, RunOutcome) {
    let (tasks, violated) = match &telling.tasks {
        // Told tasks need no first run to find them; the told run says
        // whether it violated anything.
        Some(tasks) => (tasks.clone(), None),
        None => {
            let first = simulate_with_plan(scn, seed, variant, plan.clone(), None);
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
    };
    let outcome = simulate_with_plan(scn, seed, variant, plan, Some(&mut teller));
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
    let keep_head = MAX_STORY_LINES / 2;
    let cut = lines.len() > MAX_STORY_LINES && !telling.all;
    for (i, (t, text)) in lines.iter().enumerate() {
        if cut && i == keep_head {
            out.push(format!(
                "  {:>11}  ... {} more lines ...",
                "",
                lines.len() - MAX_STORY_LINES
            ));
        }
        if cut && i >= keep_head && i < lines.len() - keep_head {
            continue;
        }
        out.push(format!("  {}  {text}", secs(*t)));
    }
    for v in outcome.violations.iter().take(3) {
        out.push(format!(
            "VIOLATION {} at {:.3} s: {}",
            v.invariant,
            v.time_ms as f64 / 1e3,
            v.message
        ));
    }
    if outcome.ok() {
        out.push("no invariant was violated in this run".to_string());
    }
    (out, outcome)
}
