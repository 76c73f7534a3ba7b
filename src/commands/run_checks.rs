//! The flags that judge runs beyond the invariants, shared by the commands
//! that run seeds: the watchdog's `--run-timeout`, and the cost budget's
//! `--cost-budget FILE` and `--no-cost-budget`.

use super::bad_input;
use leasehold::ValidScenario;
use leasehold::cost_budget::{BudgetFile, BudgetSource, CostBudget, budget_for};
use leasehold::sweep_args::parse_duration;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args, Clone, Debug)]
pub struct RunChecksArgs {
    /// Give up on a run after this much wall time and report it as a
    /// simulation-healthy violation (a step that never returns); never part
    /// of a run, which is untouched when it finishes in time.
    #[arg(
        long,
        default_value = "60s",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub run_timeout: String,
    /// Judge each run's store requests against the budgets in FILE [default:
    /// cost-budget.jsonl beside the scenario files, when there is one].
    #[arg(long, value_name = "FILE")]
    pub cost_budget: Option<PathBuf>,
    /// Judge no run against a cost budget.
    #[arg(long, conflicts_with = "cost_budget")]
    pub no_cost_budget: bool,
}

impl RunChecksArgs {
    /// `--run-timeout`, parsed; a bad one exits 2 naming the flag.
    pub fn run_timeout(&self) -> Result<Duration, u8> {
        parse_duration(&self.run_timeout).map_err(|e| bad_input(format!("--run-timeout: {e}")))
    }

    /// The budget file for scenarios in `dir`: `None` when turned off, or
    /// when there is none beside them; a file that cannot be read exits 2.
    pub fn budget_file(&self, dir: &Path) -> Result<Option<BudgetFile>, u8> {
        let source =
            BudgetSource::from_flags(self.no_cost_budget, self.cost_budget.as_deref(), dir);
        source
            .load()
            .map_err(|e| bad_input(format!("--cost-budget: {e}")))
    }

    /// The budget for the scenario in `scenario_path`, if any; a note on
    /// stderr when the file has none for it (or one measured on another text
    /// of it).
    pub fn budget_for(
        &self,
        scenario_path: &Path,
        scn: &ValidScenario,
    ) -> Result<Option<CostBudget>, u8> {
        let dir = match scenario_path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let Some(file) = self.budget_file(dir)? else {
            return Ok(None);
        };
        Ok(one_budget(&file, scn))
    }
}

/// The budget for `scn` in `file`, or `None` with the note saying why.
pub fn one_budget(file: &BudgetFile, scn: &ValidScenario) -> Option<CostBudget> {
    match budget_for(file, scn) {
        Ok(budget) => Some(budget.clone()),
        Err(note) => {
            eprintln!("{note}");
            None
        }
    }
}
