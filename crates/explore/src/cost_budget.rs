//! The cost budget: what a run may ask of the store, taken from the correct
//! protocol's own figures on the same scenario plus a stated margin.
//!
//! A protocol change can multiply the load it puts on the store and still be
//! correct (a reclaimer that reads every page fifty times over). No invariant
//! sees that; the budget does. A run's store requests are counted by who sent
//! them (workers' reads and writes, reclaimers' reads and writes) and divided
//! two ways: per task (the work the run was given) and per worker-minute (the
//! fleet and the simulated time it ran). Eight figures; the budget of each is
//! the highest the correct protocol reached over a stated range of seeds,
//! times the margin, plus a few requests (`slack_ops`) so that a figure
//! correct nearly never moves (a reclaimer's writes in a scenario without
//! deaths) is not judged to the request.
//!
//! Budgets are measured, not derived, and kept in a JSON Lines file beside
//! the scenarios (`cost-budget.jsonl`, one line per scenario and heartbeat
//! mode), each line tied to the exact text of its scenario by its hash. A
//! protocol change that changes what correct costs re-measures them
//! (`leasehold cost-budget`), as a change of behaviour re-pins the golden
//! hashes. See docs/cost-budget.md for the margin and how it was chosen.
//!
//! The budget judges a run after it ends, from its counts: it is never an
//! input to a run, and a run's trace and hash do not depend on it.

use crate::seeds::SeedRange;
use leasehold_protocol::HeartbeatMode;
use leasehold_run::run::RunOutcome;
use leasehold_scenario::scenario::ValidScenario;
use leasehold_scenario::scenario::scenario_hash;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The name a run over budget is reported under (beside the invariants,
/// as `determinism` is).
pub const COST_BUDGET: &str = "cost-budget";

/// The budget file's name, looked for beside the scenario files.
pub const BUDGET_FILE_NAME: &str = "cost-budget.jsonl";

pub const BUDGET_FORMAT: &str = "leasehold-cost-budget/1";

/// See docs/cost-budget.md: the highest figure over thousands of seeds, with
/// every fault of a scenario's swarm, is already the tail; twice it has held
/// over every CI sweep measured, and a regression that matters is a
/// multiple, not a percentage.
pub const DEFAULT_MARGIN: f64 = 2.0;

/// Requests allowed on top of every figure's budget (see the module
/// documentation).
pub const DEFAULT_SLACK_OPS: u64 = 50;

/// A budget file is a line per scenario: far below this.
pub const MAX_BUDGET_FILE_BYTES: u64 = 1 << 20;

/// A margin outside this is a typo.
pub const MARGIN_RANGE: (f64, f64) = (1.0, 1_000.0);

/// A run's store requests by sender, and what they are divided by.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunCost {
    pub worker_reads: u64,
    pub worker_writes: u64,
    pub reclaimer_reads: u64,
    pub reclaimer_writes: u64,
    pub tasks: u64,
    pub worker_minutes: f64,
}

impl RunCost {
    /// `None` for a run with no counts (it panicked or never ended).
    pub fn of(outcome: &RunOutcome, workers: u32) -> Option<RunCost> {
        let stats = outcome.stats.as_ref()?;
        let ops = outcome.load.by_role();
        Some(RunCost {
            worker_reads: ops.worker_reads,
            worker_writes: ops.worker_writes,
            reclaimer_reads: ops.reclaimer_reads,
            reclaimer_writes: ops.reclaimer_writes,
            tasks: u64::from(outcome.tasks_total).max(1),
            worker_minutes: (f64::from(workers) * stats.sim_time_us as f64 / 60e6).max(1e-9),
        })
    }

    /// The requests behind each figure, in [`Figures::NAMES`] order.
    fn ops(&self) -> [u64; 8] {
        let role = [
            self.worker_reads,
            self.worker_writes,
            self.reclaimer_reads,
            self.reclaimer_writes,
        ];
        [
            role[0], role[1], role[2], role[3], role[0], role[1], role[2], role[3],
        ]
    }

    /// What each figure is divided by, in [`Figures::NAMES`] order.
    fn per(&self) -> [f64; 8] {
        let (t, m) = (self.tasks as f64, self.worker_minutes);
        [t, t, t, t, m, m, m, m]
    }

    pub fn figures(&self) -> Figures {
        let (ops, per) = (self.ops(), self.per());
        Figures::from_array(std::array::from_fn(|i| ops[i] as f64 / per[i]))
    }
}

/// The eight figures a budget bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figures {
    pub worker_reads_per_task: f64,
    pub worker_writes_per_task: f64,
    pub reclaimer_reads_per_task: f64,
    pub reclaimer_writes_per_task: f64,
    pub worker_reads_per_worker_minute: f64,
    pub worker_writes_per_worker_minute: f64,
    pub reclaimer_reads_per_worker_minute: f64,
    pub reclaimer_writes_per_worker_minute: f64,
}

impl Figures {
    pub const NAMES: [&'static str; 8] = [
        "worker_reads_per_task",
        "worker_writes_per_task",
        "reclaimer_reads_per_task",
        "reclaimer_writes_per_task",
        "worker_reads_per_worker_minute",
        "worker_writes_per_worker_minute",
        "reclaimer_reads_per_worker_minute",
        "reclaimer_writes_per_worker_minute",
    ];

    pub fn to_array(self) -> [f64; 8] {
        [
            self.worker_reads_per_task,
            self.worker_writes_per_task,
            self.reclaimer_reads_per_task,
            self.reclaimer_writes_per_task,
            self.worker_reads_per_worker_minute,
            self.worker_writes_per_worker_minute,
            self.reclaimer_reads_per_worker_minute,
            self.reclaimer_writes_per_worker_minute,
        ]
    }

    pub fn from_array(a: [f64; 8]) -> Figures {
        Figures {
            worker_reads_per_task: a[0],
            worker_writes_per_task: a[1],
            reclaimer_reads_per_task: a[2],
            reclaimer_writes_per_task: a[3],
            worker_reads_per_worker_minute: a[4],
            worker_writes_per_worker_minute: a[5],
            reclaimer_reads_per_worker_minute: a[6],
            reclaimer_writes_per_worker_minute: a[7],
        }
    }

    /// Each figure the higher of the two.
    pub fn max(self, other: Figures) -> Figures {
        let (a, b) = (self.to_array(), other.to_array());
        Figures::from_array(std::array::from_fn(|i| a[i].max(b[i])))
    }
}

/// One scenario's budget: the correct protocol's highest figures over
/// `seeds`, and the margin and slack that make them a budget. One line of a
/// budget file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostBudget {
    pub format: String,
    /// The version that measured it (a note, never compared).
    pub leasehold_version: String,
    pub scenario: String,
    /// xxh3 of the scenario file's exact text: a budget holds only for the
    /// text it was measured on.
    pub scenario_hash: String,
    pub heartbeat_mode: HeartbeatMode,
    /// The seeds measured (`A..B`).
    pub seeds: String,
    pub margin: f64,
    pub slack_ops: u64,
    /// The correct protocol's highest figures over `seeds`.
    pub measured: Figures,
}

/// A figure over its budget.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OverBudget {
    pub figure: &'static str,
    /// The run's figure.
    pub value: f64,
    /// The figure's budget: `measured x margin`, plus `slack_ops` over the
    /// run's tasks or worker-minutes.
    pub budget: f64,
    /// The correct protocol's highest figure.
    pub measured: f64,
}

impl CostBudget {
    pub fn new(
        scn: &ValidScenario,
        seeds: SeedRange,
        margin: f64,
        slack_ops: u64,
        measured: Figures,
    ) -> CostBudget {
        CostBudget {
            format: BUDGET_FORMAT.to_string(),
            leasehold_version: leasehold_scenario::file_format::LEASEHOLD_VERSION.to_string(),
            scenario: scn.name().to_string(),
            scenario_hash: scenario_hash(scn),
            heartbeat_mode: scn.scenario.protocol.heartbeat_mode,
            seeds: seeds.to_string(),
            margin,
            slack_ops,
            measured,
        }
    }

    /// Whether this budget is for `scn` as it is now: its name, its mode and
    /// its exact text.
    pub fn is_for(&self, scn: &ValidScenario) -> bool {
        self.names(scn) && self.scenario_hash == scenario_hash(scn)
    }

    /// Whether this budget names `scn` (its name and mode), whatever text
    /// it was measured on.
    fn names(&self, scn: &ValidScenario) -> bool {
        self.scenario == scn.name() && self.heartbeat_mode == scn.scenario.protocol.heartbeat_mode
    }

    /// Every figure of `cost` over its budget, in [`Figures::NAMES`] order.
    pub fn judge(&self, cost: &RunCost) -> Vec<OverBudget> {
        let (ops, per) = (cost.ops(), cost.per());
        let measured = self.measured.to_array();
        (0..8)
            .filter_map(|i| {
                let allowed_ops = measured[i] * self.margin * per[i] + self.slack_ops as f64;
                (ops[i] as f64 > allowed_ops).then(|| OverBudget {
                    figure: Figures::NAMES[i],
                    value: ops[i] as f64 / per[i],
                    budget: allowed_ops / per[i],
                    measured: measured[i],
                })
            })
            .collect()
    }

    /// The one-line report of what `judge` found: the figures over budget,
    /// each with its budget and where that came from.
    pub fn report(&self, over: &[OverBudget]) -> String {
        let parts: Vec<String> = over
            .iter()
            .map(|o| {
                format!(
                    "{} {:.2} (budget {:.2}: correct's highest {:.2} over seeds {} x {} + {} ops)",
                    o.figure
                        .replace("worker_minute", "worker-minute")
                        .replace('_', " "),
                    o.value,
                    o.budget,
                    o.measured,
                    self.seeds,
                    self.margin,
                    self.slack_ops
                )
            })
            .collect();
        format!("store requests over budget: {}", parts.join("; "))
    }
}

/// What a run's cost came to against a budget.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CostVerdict {
    pub cost: RunCost,
    pub figures: Figures,
    pub over: Vec<OverBudget>,
    /// `report` of `over`; `None` within budget.
    pub message: Option<String>,
}

/// Judge `outcome` (of scenario `scn`) against `budget`; `None` for a run
/// with no counts.
pub fn judge(
    scn: &ValidScenario,
    outcome: &RunOutcome,
    budget: &CostBudget,
) -> Option<CostVerdict> {
    let cost = RunCost::of(outcome, scn.scenario.fleet.workers)?;
    let over = budget.judge(&cost);
    let message = (!over.is_empty()).then(|| budget.report(&over));
    Some(CostVerdict {
        figures: cost.figures(),
        cost,
        over,
        message,
    })
}

/// A budget file, read.
#[derive(Clone, Debug, Default)]
pub struct BudgetFile {
    pub path: PathBuf,
    pub budgets: Vec<CostBudget>,
}

/// Where the budget for one scenario stands.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup<'a> {
    Found(&'a CostBudget),
    /// An entry for the scenario's name and mode, measured on another text
    /// of it.
    Stale(&'a CostBudget),
    Missing,
}

impl BudgetFile {
    /// The file beside the scenarios: `dir/cost-budget.jsonl`.
    pub fn default_path(dir: &Path) -> PathBuf {
        dir.join(BUDGET_FILE_NAME)
    }

    /// Read a budget file: every line one budget, every field present and
    /// none other; errors name the line.
    pub fn read(path: &Path) -> Result<BudgetFile, String> {
        let text = leasehold_scenario::input_file::read_bounded(path, MAX_BUDGET_FILE_BYTES)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut budgets: Vec<CostBudget> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let at = |e: String| format!("{} line {}: {e}", path.display(), i + 1);
            if line.trim().is_empty() {
                continue;
            }
            let value = leasehold_scenario::strict_json::parse_or(line, |e| {
                format!(
                    "not a cost budget ({})",
                    leasehold_scenario::strict_json::strip_position(e)
                )
            })
            .map_err(at)?;
            let budget: CostBudget = serde_path_to_error::deserialize(&value)
                .map_err(|e| at(format!("{}: {}", e.path(), e.inner())))?;
            leasehold_scenario::strict_json::check_shape(&value, &budget)
                .map_err(|e| at(e.to_string()))?;
            if budget.format != BUDGET_FORMAT {
                return Err(at(format!(
                    "format \"{}\", expected \"{BUDGET_FORMAT}\"",
                    budget.format
                )));
            }
            check_budget(&budget).map_err(at)?;
            if budgets
                .iter()
                .any(|b| b.scenario == budget.scenario && b.heartbeat_mode == budget.heartbeat_mode)
            {
                return Err(at(format!(
                    "a second budget for scenario \"{}\" in {} heartbeat mode",
                    budget.scenario,
                    budget.heartbeat_mode.name()
                )));
            }
            budgets.push(budget);
        }
        Ok(BudgetFile {
            path: path.to_path_buf(),
            budgets,
        })
    }

    pub fn lookup(&self, scn: &ValidScenario) -> Lookup<'_> {
        match self.budgets.iter().find(|b| b.names(scn)) {
            Some(b) if b.is_for(scn) => Lookup::Found(b),
            Some(b) => Lookup::Stale(b),
            None => Lookup::Missing,
        }
    }

    /// Add `budget`, replacing the one for its scenario and mode.
    pub fn put(&mut self, budget: CostBudget) {
        self.budgets.retain(|b| {
            !(b.scenario == budget.scenario && b.heartbeat_mode == budget.heartbeat_mode)
        });
        self.budgets.push(budget);
        self.budgets.sort_by(|a, b| {
            (&a.scenario, a.heartbeat_mode.name()).cmp(&(&b.scenario, b.heartbeat_mode.name()))
        });
    }

    /// The file's text: one line per budget, in scenario order.
    pub fn text(&self) -> String {
        self.budgets
            .iter()
            .map(|b| serde_json::to_string(b).expect("a budget serialises") + "\n")
            .collect()
    }
}

fn check_budget(b: &CostBudget) -> Result<(), String> {
    let (lo, hi) = MARGIN_RANGE;
    if !(lo..=hi).contains(&b.margin) {
        return Err(format!("margin {} is not between {lo} and {hi}", b.margin));
    }
    SeedRange::parse(&b.seeds).map_err(|e| format!("seeds: {e}"))?;
    for (name, value) in Figures::NAMES.iter().zip(b.measured.to_array()) {
        if !(value.is_finite() && value >= 0.0) {
            return Err(format!(
                "measured.{name}: {value} is not a figure (finite, at least 0)"
            ));
        }
    }
    Ok(())
}

/// `--margin X`: a number in [`MARGIN_RANGE`].
pub fn parse_margin(text: &str) -> Result<f64, String> {
    let (lo, hi) = MARGIN_RANGE;
    match text.trim().parse::<f64>() {
        Ok(m) if (lo..=hi).contains(&m) => Ok(m),
        _ => Err(format!(
            "\"{text}\" is not a margin (a number from {lo} to {hi})"
        )),
    }
}

/// Which budget, if any, judges the runs of one command.
#[derive(Clone, Debug)]
pub enum BudgetSource {
    /// `--no-cost-budget`.
    Off,
    /// The file beside the scenarios, if there is one.
    Beside(PathBuf),
    /// `--cost-budget FILE`: it must be there.
    Given(PathBuf),
}

impl BudgetSource {
    /// From the flags: `--no-cost-budget`, `--cost-budget FILE`, or the
    /// file in `dir` (the scenarios' directory).
    pub fn from_flags(off: bool, file: Option<&Path>, dir: &Path) -> BudgetSource {
        match (off, file) {
            (true, _) => BudgetSource::Off,
            (false, Some(f)) => BudgetSource::Given(f.to_path_buf()),
            (false, None) => BudgetSource::Beside(BudgetFile::default_path(dir)),
        }
    }

    /// The file to judge with: `None` when off, or when no file is beside
    /// the scenarios. An unreadable or malformed file is an error (bad
    /// input) either way.
    pub fn load(&self) -> Result<Option<BudgetFile>, String> {
        match self {
            BudgetSource::Off => Ok(None),
            BudgetSource::Beside(path) if !path.exists() => Ok(None),
            BudgetSource::Beside(path) | BudgetSource::Given(path) => {
                BudgetFile::read(path).map(Some)
            }
        }
    }
}

/// The budget for `scn` in `file`, or a note saying why there is none (an
/// entry measured on another text of the scenario, or no entry).
pub fn budget_for<'f>(file: &'f BudgetFile, scn: &ValidScenario) -> Result<&'f CostBudget, String> {
    let mode = scn.scenario.protocol.heartbeat_mode.name();
    match file.lookup(scn) {
        Lookup::Found(b) => Ok(b),
        Lookup::Stale(b) => Err(format!(
            "note: no cost budget for {} ({mode} heartbeat mode): the entry in {} was measured on another text of it (hash {}, now {}); re-measure with `leasehold cost-budget`",
            scn.name(),
            file.path.display(),
            b.scenario_hash,
            scenario_hash(scn)
        )),
        Lookup::Missing => Err(format!(
            "note: no cost budget for {} ({mode} heartbeat mode) in {}; measure one with `leasehold cost-budget`",
            scn.name(),
            file.path.display()
        )),
    }
}

/// Seeds one measurement may run: far more than a budget needs.
pub const MAX_MEASURED_SEEDS: u64 = 1 << 24;

/// The correct protocol's figures on one scenario over a range of seeds.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Each figure's highest.
    pub max: Figures,
    /// Every run's figures, in seed order (for percentiles).
    pub runs: Vec<Figures>,
}

impl Measured {
    /// Figure `i`'s `q`-quantile (0 to 1) over the runs.
    pub fn quantile(&self, i: usize, q: f64) -> f64 {
        let mut values: Vec<f64> = self.runs.iter().map(|f| f.to_array()[i]).collect();
        values.sort_by(f64::total_cmp);
        let at = ((values.len() as f64 - 1.0) * q).round() as usize;
        values.get(at).copied().unwrap_or(0.0)
    }
}

/// Run the correct protocol on `run`'s scenario over `seeds` on `jobs`
/// threads (under `watch` when given) and gather its figures. A failing seed
/// is an error: a budget is measured on a protocol that passes.
pub fn measure<'a>(
    file: &'a Path,
    scn: &'a ValidScenario,
    seeds: SeedRange,
    jobs: usize,
    watch: Option<&crate::watchdog::LeaseWatch<'a>>,
) -> Result<Measured, String> {
    assert!(
        seeds.len() <= MAX_MEASURED_SEEDS,
        "too many seeds to measure"
    );
    let list: Vec<u64> = seeds.iter().collect();
    let variant = leasehold_protocol::Variant::Correct;
    let costs = crate::parallel::map_on(jobs, &list, |&seed| {
        let outcome = crate::watchdog::simulate_watched(
            watch,
            crate::watchdog::LeaseRun {
                file,
                scenario: scn,
                seed,
                variant,
            },
        );
        match outcome.violations.first() {
            Some(v) => Err(format!(
                "{} seed {seed}: the correct protocol failed ({}: {}); a budget is measured on runs that pass",
                scn.name(),
                v.invariant,
                v.message
            )),
            None => RunCost::of(&outcome, scn.scenario.fleet.workers)
                .map(|c| c.figures())
                .ok_or_else(|| format!("{} seed {seed}: the run has no counts", scn.name())),
        }
    });
    let runs = costs
        .into_iter()
        .collect::<Result<Vec<Figures>, String>>()?;
    let max = runs.iter().fold(Figures::default(), |m, f| m.max(*f));
    Ok(Measured { max, runs })
}
