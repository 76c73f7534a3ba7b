//! The `leasehold` command line. Exit codes: 0 all invariants held, 1 a
//! violation (or divergence), 2 bad input.

mod commands;

use clap::{CommandFactory, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

// mimalloc: scan replies and short-lived vectors make the run loop allocate
// often; glibc malloc was ~8 % of a run's instructions.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "leasehold",
    version,
    about = "Deterministic simulation testing for the lease-with-heartbeat pattern",
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one seed of a scenario and check every invariant.
    Run(commands::run::RunArgs),
    /// Run a scenario's fleet for real against a SQLite or PostgreSQL store
    /// (a thread per node, the real clock run --speed times fast, faults
    /// drawn from the seed) and judge what it recorded. Not deterministic.
    Live {
        /// Scenario file (JSON), e.g. scenarios/friday-rush.json
        scenario: PathBuf,
        /// sqlite:PATH or postgres://USER[:PASSWORD]@HOST[:PORT]/DB
        #[arg(long, value_name = "URL")]
        store: String,
        /// Seed of the fault model's draw (which faults, when).
        #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
        seed: u64,
        /// Protocol variant (see `leasehold variants`).
        #[arg(long, default_value = "correct")]
        variant: String,
        /// Time runs N times fast: every protocol timing lasts 1/N of its
        /// stated value (1 to 1000).
        #[arg(
            long,
            value_name = "N",
            default_value_t = 10,
            allow_negative_numbers = true
        )]
        speed: u64,
        /// Print one JSON object instead of the human report.
        #[arg(long)]
        json: bool,
        /// Write the run's records as a trace to FILE (read it with
        /// `replay --check`, `explain`, `export`).
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
        /// Empty the store's own tables first if they hold documents
        /// (without it such a store is refused).
        #[arg(long)]
        reset: bool,
    },
    /// Run every seed in a range on all cores; report each failing seed with
    /// its replay command, in seed order.
    Sweep(commands::sweep::SweepArgs),
    /// Measure the correct protocol's store requests on scenarios and write
    /// their cost budgets (the budget `sweep`, `hunt` and `run` judge by).
    CostBudget(commands::cost_budget::CostBudgetArgs),
    /// Combine the results files of several sweeps (shards) into one summary.
    Merge(commands::merge::MergeArgs),
    /// Run a range of seeds and print every coverage point with its hits:
    /// the protocol's named rare situations and the (fault kind x node
    /// phase) pairs; unreached points are flagged.
    Coverage(commands::coverage::CoverageArgs),
    /// Re-run a trace file from its header and check every event matches, or a
    /// failure file (from `shrink`) and check it still fails its invariant.
    Replay {
        /// Trace (from `run --trace`) or failure file (from `shrink`) to re-run.
        file: PathBuf,
        /// Print one JSON object instead of the human report.
        #[arg(long)]
        json: bool,
        /// Judge the trace's records again instead of re-running it, and
        /// hold the verdict to its end line (what a live run's trace gets).
        #[arg(long)]
        check: bool,
        /// Refuse to start a run whose estimated peak memory is over SIZE
        /// (512MiB, 4GiB) [default: half of this machine's memory]
        #[arg(long, value_name = "SIZE")]
        max_memory: Option<String>,
    },
    /// Sweep simulations and draw what heartbeats cost: load, store-load,
    /// detection, or all. Writes PNG/SVG images and CSV data into --out.
    Chart {
        /// load, store-load, claims, detection or all
        kind: String,
        /// Directory for the images and CSV files (created if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Image formats, comma separated: png, svg.
        #[arg(long, default_value = "png,svg")]
        format: String,
        /// Overlay the heartbeat load live runs measured on real stores
        /// (the file `scripts/live-vs-sim.py --points-out` writes) on the
        /// load chart.
        #[arg(long, value_name = "FILE")]
        live: Option<PathBuf>,
    },
    /// List the protocol variants: the correct protocol and the planted bugs.
    Variants {
        /// Print JSON instead of the human list.
        #[arg(long)]
        json: bool,
    },
    /// Shrink a failing seed to a minimal run that fails the same way; write a
    /// failure file that `replay` and `explain` accept.
    Shrink {
        /// Scenario file (JSON) of the failing run, e.g. scenarios/gc-pause-zombie.json
        scenario: PathBuf,
        /// The failing seed to shrink.
        #[arg(long, allow_negative_numbers = true)]
        seed: u64,
        /// Protocol variant the seed fails under (see `leasehold variants`).
        #[arg(long, default_value = "correct")]
        variant: String,
        /// Where to write the failure file (default: NAME-seedN-VARIANT.failure.json).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Print one JSON object instead of the human report.
        #[arg(long)]
        json: bool,
        /// Refuse to start a run whose estimated peak memory is over SIZE
        /// (512MiB, 4GiB) [default: half of this machine's memory]
        #[arg(long, value_name = "SIZE")]
        max_memory: Option<String>,
        /// Give up on the seed's run after this much wall time and report
        /// it (a step that never returns) instead of shrinking it.
        #[arg(
            long,
            default_value = "60s",
            value_name = "DURATION",
            allow_hyphen_values = true
        )]
        run_timeout: String,
    },
    /// Tell a failure file's (or trace's) run as a story around its violation.
    Explain {
        /// Failure file (from `shrink`) or trace (from `run --trace`) to tell.
        file: PathBuf,
        /// Follow this task instead of the ones the violation names
        /// (repeat it, or give a comma-separated list).
        #[arg(long, value_name = "N", value_delimiter = ',')]
        task: Vec<u32>,
        /// Print every line; a long story is otherwise cut to the lines
        /// that explain the violation.
        #[arg(long)]
        all: bool,
        /// Refuse to start a run whose estimated peak memory is over SIZE
        /// (512MiB, 4GiB) [default: half of this machine's memory]
        #[arg(long, value_name = "SIZE")]
        max_memory: Option<String>,
    },
    /// Draw a failure file's (or trace's) run: Chrome trace JSON for Perfetto,
    /// or a swimlane as SVG or PNG.
    Export {
        /// Failure file (from `shrink`) or trace (from `run --trace`) to draw.
        file: PathBuf,
        /// `perfetto` (Chrome trace JSON), `svg` or `png` (swimlane); `svg`
        /// with an --out ending in .png writes PNG too.
        #[arg(long)]
        format: String,
        /// File to write: .json for perfetto, .svg or .png for the swimlane
        /// (an extension that says another format is refused).
        #[arg(long, value_name = "OUT")]
        out: PathBuf,
        /// Refuse to start a run whose estimated peak memory is over SIZE
        /// (512MiB, 4GiB) [default: half of this machine's memory]
        #[arg(long, value_name = "SIZE")]
        max_memory: Option<String>,
    },
    /// List the shipped scenarios with the story each one tells.
    Scenarios {
        /// Directory holding scenario files.
        #[arg(long, default_value = "scenarios")]
        dir: PathBuf,
        /// Print JSON instead of the human list.
        #[arg(long)]
        json: bool,
    },
    /// For each planted bug, sweep scenarios until it is caught; `correct`
    /// must survive the whole budget on every scenario.
    Hunt {
        /// `all` or a comma-separated list of variant names.
        #[arg(long, default_value = "all")]
        variants: String,
        /// `all` (every scenario in --dir that is not a designed failure) or
        /// a comma-separated list of scenario names.
        #[arg(long, default_value = "all")]
        scenarios: String,
        /// Directory holding the scenario files to hunt in.
        #[arg(long, default_value = "scenarios")]
        dir: PathBuf,
        /// Seeds per scenario.
        #[arg(long, default_value_t = 200, allow_negative_numbers = true)]
        budget: u64,
        /// Threads (each run stays single-threaded); default: every core.
        #[arg(long, allow_negative_numbers = true)]
        jobs: Option<String>,
        /// Print one JSON document (the kill table) instead of the human report.
        #[arg(long)]
        json: bool,
        /// Also write the kill table as Markdown to FILE.
        #[arg(long, value_name = "FILE")]
        markdown: Option<PathBuf>,
        /// Refuse to start when the estimated peak memory of --jobs runs at
        /// once is over SIZE (512MiB, 4GiB) [default: half of this
        /// machine's memory]
        #[arg(long, value_name = "SIZE")]
        max_memory: Option<String>,
        /// Guided hunting: half the runs mutate the fault plans of inputs
        /// that reached new coverage (a deterministic function of
        /// --guided-seed).
        #[arg(long)]
        guided: bool,
        /// The guided hunt's own seed.
        #[arg(long, value_name = "N", default_value_t = leasehold::guided::DEFAULT_GUIDED_SEED, requires = "guided", allow_negative_numbers = true)]
        guided_seed: u64,
        /// Report the coverage points the hunt's runs reached (and the named
        /// ones none reached).
        #[arg(long)]
        coverage: bool,
        /// Where a guided hunt writes a failure file (replayable, unshrunk)
        /// for each failure a mutated plan found.
        #[arg(long, value_name = "DIR")]
        failures_dir: Option<PathBuf>,
        #[command(flatten)]
        checks: commands::RunChecksArgs,
    },
}

fn main() -> ExitCode {
    leasehold::panic_capture::install_quiet_hook();
    // Before anything is opened: a closed standard output would lose the
    // report, and the first file opened would take its descriptor.
    if let Err(e) = commands::report::check_writable() {
        eprintln!("error: cannot write to standard output: {e}");
        return ExitCode::from(commands::EXIT_BAD_INPUT);
    }
    // Plain `leasehold`: what it can do, as `--help` says it.
    if std::env::args_os().len() == 1 {
        let code = leasehold::panic_capture::exit_code_of(|| {
            commands::report::write(format_args!("{}", Cli::command().render_help()), true);
            commands::report::flush();
            commands::EXIT_OK
        });
        return ExitCode::from(code);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(refuse_arguments(&e)),
    };
    let code = leasehold::panic_capture::exit_code_of(|| {
        let code = dispatch(cli.command);
        // A report cut short by a reader that left still has its verdict.
        commands::report::flush();
        code
    });
    ExitCode::from(code)
}

/// What clap found wrong with the arguments, as the contract asks of all bad
/// input: one line naming the flag, exit 2. Help and version (asked for, or
/// shown because no command was given) print in full.
fn refuse_arguments(e: &clap::Error) -> u8 {
    use clap::error::ErrorKind;
    let shows_help = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if shows_help {
        let code = if e.use_stderr() { 2 } else { 0 };
        return match e.print() {
            Ok(()) => code,
            Err(io) if io.kind() == std::io::ErrorKind::BrokenPipe => code,
            Err(io) => {
                eprintln!("error: cannot write to standard output: {io}");
                2
            }
        };
    }
    // clap's text: the error and its details, then usage and a pointer to
    // --help; keep what comes before the usage, on one line.
    let text = e.render().to_string();
    let line: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    eprintln!("{}", line.join(" "));
    2
}

fn dispatch(command: Command) -> u8 {
    match command {
        Command::Run(args) => commands::run::run(&args),
        Command::Live {
            scenario,
            store,
            seed,
            variant,
            speed,
            json,
            trace,
            reset,
        } => commands::live::run(&commands::live::LiveArgs {
            scenario: &scenario,
            store: &store,
            seed,
            variant: &variant,
            speed,
            json,
            trace: trace.as_deref(),
            reset,
        }),
        Command::Sweep(args) => commands::sweep::sweep(&args),
        Command::Merge(args) => commands::merge::merge(&args),
        Command::Coverage(args) => commands::coverage::run(&args),
        Command::CostBudget(args) => commands::cost_budget::run(&args),
        Command::Replay {
            file,
            json,
            check,
            max_memory,
        } => commands::replay::replay(&file, json, check, max_memory.as_deref()),
        Command::Variants { json } => commands::variants::variants(json),
        Command::Shrink {
            scenario,
            seed,
            variant,
            out,
            json,
            max_memory,
            run_timeout,
        } => commands::shrink::run(
            &scenario,
            seed,
            &variant,
            out.as_deref(),
            json,
            max_memory.as_deref(),
            &run_timeout,
        ),
        Command::Explain {
            file,
            task,
            all,
            max_memory,
        } => commands::explain::run(&file, &task, all, max_memory.as_deref()),
        Command::Export {
            file,
            format,
            out,
            max_memory,
        } => commands::export::run(&file, &format, &out, max_memory.as_deref()),
        Command::Scenarios { dir, json } => commands::scenarios::scenarios(&dir, json),
        Command::Hunt {
            variants,
            scenarios,
            dir,
            budget,
            jobs,
            json,
            markdown,
            max_memory,
            guided,
            guided_seed,
            coverage,
            failures_dir,
            checks,
        } => commands::hunt::run(commands::hunt::HuntArgs {
            variants: &variants,
            scenarios: &scenarios,
            dir: &dir,
            budget,
            jobs: jobs.as_deref(),
            json,
            markdown: markdown.as_deref(),
            max_memory: max_memory.as_deref(),
            guided: guided.then_some(guided_seed),
            coverage,
            failures_dir: failures_dir.as_deref(),
            checks: &checks,
        }),
        Command::Chart {
            kind,
            out,
            format,
            live,
        } => commands::chart::chart(&kind, &out, &format, live.as_deref()),
    }
}
