//! Sweep progress for people: a live bar (indicatif) on a terminal, plain
//! periodic lines on stderr in CI logs. Never on stdout, which holds the
//! report (and `--json`).

use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use leasehold::sweep_engine::Progress;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProgressMode {
    /// A bar when stdout and stderr are terminals, plain lines otherwise.
    Auto,
    /// A live bar on stderr.
    Bar,
    /// A plain line on stderr every --progress-every.
    Lines,
    /// Nothing until the summary.
    Off,
}

pub struct ProgressReporter {
    bar: Option<ProgressBar>,
    lines_every: Option<Duration>,
    last_line: Instant,
}

impl ProgressReporter {
    pub fn new(mode: ProgressMode, seeds_total: u64, lines_every: Duration) -> ProgressReporter {
        let mode = match mode {
            ProgressMode::Auto
                if std::io::stdout().is_terminal() && std::io::stderr().is_terminal() =>
            {
                ProgressMode::Bar
            }
            ProgressMode::Auto => ProgressMode::Lines,
            other => other,
        };
        let bar = (mode == ProgressMode::Bar).then(|| {
            let bar = ProgressBar::with_draw_target(Some(seeds_total), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed}] {wide_bar} {human_pos}/{human_len} seeds, {msg}, {per_sec:1}, ETA {eta}",
                )
                .expect("the template is valid"),
            );
            bar.set_message("0 failed");
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        ProgressReporter {
            bar,
            lines_every: (mode == ProgressMode::Lines).then_some(lines_every),
            last_line: Instant::now(),
        }
    }

    /// A seed finished.
    pub fn update(&mut self, progress: &Progress) {
        if let Some(bar) = &self.bar {
            bar.set_position(progress.seeds_done);
            bar.set_message(format!("{} failed", progress.failures));
        }
        self.tick(progress);
    }

    /// Time passed: print a plain line if one is due.
    pub fn tick(&mut self, progress: &Progress) {
        let Some(every) = self.lines_every else {
            return;
        };
        if self.last_line.elapsed() < every {
            return;
        }
        self.last_line = Instant::now();
        let percent = 100.0 * progress.seeds_done as f64 / progress.seeds_total.max(1) as f64;
        let eta = progress.eta().map_or_else(
            || "unknown".to_string(),
            |eta| humantime::format_duration(Duration::from_secs(eta.as_secs())).to_string(),
        );
        eprintln!(
            "progress: {}/{} seeds ({percent:.0}%), {} failed, {:.1} seeds/s, ETA {eta}",
            progress.seeds_done,
            progress.seeds_total,
            progress.failures,
            progress.seeds_per_sec()
        );
    }

    /// Print report text on stdout without tearing the bar.
    pub fn print(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| print!("{text}")),
            None => print!("{text}"),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
