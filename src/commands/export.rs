//! `leasehold export`: a failure file or a trace drawn as Perfetto JSON, SVG or PNG.

use super::{EXIT_OK, bad_input};
use leasehold::export::{perfetto, timeline};
use leasehold::swimlane::Image;
use std::path::Path;

/// `leasehold export FILE --format perfetto|svg|png --out OUT`: FILE is a
/// failure file (from `shrink`) or a trace (from `run --trace`).
pub fn run(file: &Path, format: &str, out: &Path, max_memory: Option<&str>) -> u8 {
    if !matches!(format, "perfetto" | "svg" | "png") {
        return bad_input(format!(
            "--format: \"{format}\" is not one of perfetto, svg, png"
        ));
    }
    if let Err(e) = extension_fits(format, out) {
        return bad_input(e);
    }
    // Checked before the run is re-simulated and drawn.
    if let Err(code) = super::output_file("--out", out, &[file]) {
        return code;
    }
    let run = match super::explain::load(file, max_memory) {
        Ok(run) => run,
        Err(code) => return code,
    };
    let (scn, variant) = (&run.scn, run.variant);
    let (tl, outcome) = timeline(scn, run.seed(), variant, &run.rerun());
    let written = match format {
        "perfetto" => {
            let value = perfetto(scn, &tl, &outcome);
            std::fs::write(out, serde_json::to_string(&value).expect("json serialises"))
                .map_err(|e| format!("{}: {e}", out.display()))
        }
        // Its errors name the file already. `svg` with a .png --out has
        // always written PNG: that stays.
        "svg" => leasehold::swimlane::write_svg(scn, &tl, &outcome, out),
        _ => leasehold::swimlane::write_swimlane(scn, &tl, &outcome, out, Image::Png),
    };
    if let Err(e) = written {
        return bad_input(format!("--out {e}"));
    }
    println!(
        "wrote {} ({} lease spans, {} marks, {} violations)",
        out.display(),
        tl.spans.len(),
        tl.marks.len(),
        outcome.violations.len()
    );
    EXIT_OK
}

/// Refuse an --out whose extension says another format than --format (JSON
/// in a .png opens nowhere). Other extensions, or none, are the user's call.
/// `svg` with `.png` is not refused: it wrote PNG before `png` existed.
fn extension_fits(format: &str, out: &Path) -> Result<(), String> {
    let Some(ext) = out.extension().and_then(|x| x.to_str()) else {
        return Ok(());
    };
    let ext = ext.to_ascii_lowercase();
    let wrong = match format {
        "perfetto" => ["png", "svg"].contains(&ext.as_str()),
        "svg" => ext == "json",
        _ => ["svg", "json"].contains(&ext.as_str()),
    };
    if !wrong {
        return Ok(());
    }
    let fits = match format {
        "perfetto" => ".json",
        "svg" => ".svg",
        _ => ".png",
    };
    let other = match ext.as_str() {
        "json" => "perfetto",
        e => e,
    };
    Err(format!(
        "--out {}: a .{ext} file for --format {format}; use an --out ending in {fits}, or --format {other}",
        out.display()
    ))
}
