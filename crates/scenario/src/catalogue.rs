//! Finding the shipped scenarios.

use std::path::{Path, PathBuf};

/// Every `*.json` directly in `dir`, sorted by file name.
pub fn scenario_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("--dir {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!(
            "--dir {}: no scenario files (*.json) there",
            dir.display()
        ));
    }
    Ok(files)
}
