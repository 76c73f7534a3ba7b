//! `leasehold scenarios`: the shipped scenarios and their stories.

use super::{EXIT_OK, bad_input};
use leasehold::Scenario;
use std::path::Path;

/// `leasehold scenarios [--dir DIR] [--json]`: every scenario with its story.
pub fn scenarios(dir: &Path, json: bool) -> u8 {
    let found = match leasehold::catalogue::scenario_files(dir) {
        Ok(f) => f,
        Err(e) => return bad_input(e),
    };
    let mut rows = Vec::new();
    for path in found {
        match Scenario::load(&path) {
            Ok(s) => rows.push((path, s)),
            Err(e) => return bad_input(format!("scenario {}: {e}", path.display())),
        }
    }
    if json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|(path, s)| {
                serde_json::json!({
                    "name": s.name(),
                    "file": path.display().to_string(),
                    "story": s.scenario.story,
                    "workers": s.scenario.fleet.workers,
                    "tasks": s.scenario.tasks.count,
                    "expected_violations": s.scenario.expected_violations,
                })
            })
            .collect();
        println!("{}", serde_json::json!({ "scenarios": list }));
    } else {
        for (_, s) in &rows {
            let note = if s.scenario.expected_violations.is_empty() {
                String::new()
            } else {
                format!(
                    " [demonstrates an impossibility: expect {}]",
                    s.scenario.expected_violations.join(", ")
                )
            };
            println!("{:<20} {}{note}", s.name(), s.scenario.story);
        }
    }
    EXIT_OK
}
