use super::{EXIT_OK, bad_input};
use leasehold::export::{perfetto, timeline};
use std::path::Path;

/// `leasehold export FILE --format perfetto|svg --out OUT`: FILE is a failure
/// file (from `shrink`) or a trace (from `run --trace`).
pub fn run(file: &Path, format: &str, out: &Path) -> u8 {
    if !matches!(format, "perfetto" | "svg") {
        return bad_input(format!(
            "--format: \"{format}\" is not one of perfetto, svg"
        ));
    }
    // Checked before the run is re-simulated and drawn.
    if let Err(code) = super::output_file("--out", out, &[file]) {
        return code;
    }
    let run = match super::explain::load(file) {
        Ok(run) => run,
        Err(code) => return code,
    };
    let (scn, variant) = (&run.scn, run.variant);
    let (tl, outcome) = timeline(scn, run.seed(), variant, run.plan());
    let written = match format {
        "perfetto" => {
            let value = perfetto(scn, &tl, &outcome);
            std::fs::write(out, serde_json::to_string(&value).expect("json serialises"))
                .map_err(|e| format!("{}: {e}", out.display()))
        }
        // Its errors name the file already.
        _ => leasehold::swimlane::write_svg(scn, &tl, &outcome, out),
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
