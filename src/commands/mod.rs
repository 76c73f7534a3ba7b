pub mod chart;
pub mod explain;
pub mod export;
pub mod hunt;
pub mod merge;
pub mod progress;
pub mod replay;
pub mod run;
pub mod scenarios;
pub mod shrink;
pub mod sweep;
pub mod variants;

use leasehold::{Scenario, ValidScenario};
use leasehold_protocol::Variant;
use std::path::Path;

pub const EXIT_OK: u8 = 0;
pub const EXIT_VIOLATION: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;

/// Print one clear line about bad input and give its exit code.
pub fn bad_input(message: impl std::fmt::Display) -> u8 {
    eprintln!("error: {message}");
    EXIT_BAD_INPUT
}

pub fn load_scenario(path: &Path) -> Result<ValidScenario, u8> {
    Scenario::load(path).map_err(|e| bad_input(format!("scenario {}: {e}", path.display())))
}

/// The scenario file and the variant a command runs, checked in that order.
pub fn load_run_inputs(path: &Path, variant: &str) -> Result<(ValidScenario, Variant), u8> {
    Ok((load_scenario(path)?, parse_variant(variant)?))
}

pub fn parse_variant(name: &str) -> Result<Variant, u8> {
    Variant::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Variant::all().map(|v| v.name()).collect();
        bad_input(format!(
            "--variant: unknown variant \"{name}\"; known: {}",
            known.join(", ")
        ))
    })
}
