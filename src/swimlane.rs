//! The SVG swimlane: one lane per worker and reclaimer, task ownership as bars
//! coloured by task, faults as marks, the violation highlighted. Drawn with
//! plotters (bundled font, no system fonts needed).

use crate::charts::png::PngBackend;
use crate::charts::render::{ChartImage, draw_and_present, register_fonts};
use crate::export::{LeaseSpan, Timeline, node_name};
use crate::run::{RunOutcome, node_roles};
use crate::scenario::ValidScenario;
use leasehold_sim::NodeId;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Lanes beyond this are not drawn (the picture would be unreadable); the
/// title says how many were left out.
const MAX_LANES: usize = 60;

struct Swimlane<'a> {
    title: String,
    names: Vec<String>,
    tl: &'a Timeline,
    outcome: &'a RunOutcome,
    /// [`bar_rows`] of `tl.spans`, computed once: the lane height is picked
    /// from them and the bars are drawn in them.
    rows: Vec<(usize, usize)>,
}

/// The end of the picture's time axis in seconds (at least 1).
fn end_s(tl: &Timeline) -> f64 {
    (tl.end_us as f64 / 1e6).max(1.0)
}

fn task_color(task: u32) -> RGBColor {
    // Golden-angle hues: neighbouring task ids get distinct colours.
    let hue = (task as f64 * 137.508) % 360.0;
    let (s, l) = (0.55, 0.55);
    let c = (1.0 - f64::abs(2.0 * l - 1.0)) * s;
    let h = hue / 60.0;
    let x = c * (1.0 - f64::abs(h % 2.0 - 1.0));
    let (r, g, b) = match h as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let to = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    RGBColor(to(r), to(g), to(b))
}

/// Sub-rows for lease bars that overlap in time on one lane (a worker runs
/// tasks side by side in its slots): for each span, its row and the rows of
/// its lane. A span is at least `min_len_us` long, as it is drawn. Greedy
/// interval partitioning in (start, end, task, epoch) order, so the picture
/// is the same every time and uses as few rows as any stacking can.
pub fn bar_rows(spans: &[LeaseSpan], min_len_us: u64) -> Vec<(usize, usize)> {
    let drawn_end = |s: &LeaseSpan| s.end_us.max(s.start_us + min_len_us);
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| {
        let s = &spans[i];
        (s.node, s.start_us, drawn_end(s), s.task, s.epoch)
    });
    let mut row = vec![0; spans.len()];
    // Per lane: where each row's last bar ends.
    let mut ends: BTreeMap<NodeId, Vec<u64>> = BTreeMap::new();
    for i in order {
        let s = &spans[i];
        let rows = ends.entry(s.node).or_default();
        let r = match rows.iter().position(|&end| end <= s.start_us) {
            Some(r) => r,
            None => {
                rows.push(0);
                rows.len() - 1
            }
        };
        rows[r] = drawn_end(s);
        row[i] = r;
    }
    spans
        .iter()
        .zip(row)
        .map(|(s, r)| (r, ends[&s.node].len()))
        .collect()
}

impl ChartImage for Swimlane<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = crate::charts::render::err;
        root.fill(&WHITE).map_err(e)?;
        let lanes = self.names.len().min(MAX_LANES);
        let end_s = end_s(self.tl);
        let names = self.names.clone();
        let mut chart = ChartBuilder::on(root)
            .caption(
                &self.title,
                ("sans-serif", 24).into_font().style(FontStyle::Bold),
            )
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(130)
            .build_cartesian_2d(0.0..end_s, -0.5..(lanes as f64 - 0.5))
            .map_err(e)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("simulated time (s)")
            .y_labels(lanes.max(1))
            .y_label_formatter(&move |y| {
                // Lane i is centred on y = i; label only the centres.
                if (y - y.round()).abs() > 0.01 || *y < 0.0 {
                    return String::new();
                }
                names.get(y.round() as usize).cloned().unwrap_or_default()
            })
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(e)?;
        // Lane i spans [i - 0.5, i + 0.5]; `lane_of` gives its bottom edge.
        let lane_of = |node: NodeId| -> Option<f64> {
            (node.index() < lanes).then_some(node.index() as f64 - 0.5)
        };
        // Lease spans: who held which task when. Bars that overlap in time
        // share the lane's bar band [0.2, 0.8] as stacked rows.
        let lane_px = chart.plotting_area().dim_in_pixel().1 as f64 / lanes.max(1) as f64;
        for (s, &(row, of)) in self.tl.spans.iter().zip(&self.rows) {
            let Some(y) = lane_of(s.node) else { continue };
            let (x0, x1) = (
                s.start_us as f64 / 1e6,
                (s.end_us as f64 / 1e6).max(s.start_us as f64 / 1e6 + end_s / 2000.0),
            );
            let h = 0.6 / of as f64;
            let bottom = y + 0.2 + row as f64 * h;
            // A hairline between stacked rows keeps neighbours apart.
            let gap = if of > 1 { h * 0.1 } else { 0.0 };
            let color = task_color(s.task);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, bottom + gap), (x1, bottom + h)],
                    color.filled(),
                )))
                .map_err(e)?;
            if lanes <= 12 && (x1 - x0) > end_s / 40.0 && h * lane_px >= 15.0 {
                chart
                    .draw_series(std::iter::once(Text::new(
                        format!("task {} e{}", s.task, s.epoch),
                        (x0 + end_s / 400.0, bottom + h * 0.7),
                        ("sans-serif", 13).into_font().color(&BLACK),
                    )))
                    .map_err(e)?;
            }
        }
        // Faults and reclaims.
        for m in &self.tl.marks {
            let Some(y) = lane_of(m.node) else { continue };
            let x = m.time_us as f64 / 1e6;
            match m.kind {
                "pause" | "partition" => {
                    let color = if m.kind == "pause" {
                        RGBColor(120, 120, 120)
                    } else {
                        RGBColor(255, 140, 0)
                    };
                    let x1 = x + m.duration_us as f64 / 1e6;
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(x, y + 0.05), (x1, y + 0.17)],
                            color.filled(),
                        )))
                        .map_err(e)?;
                }
                "crash" => {
                    chart
                        .draw_series(std::iter::once(Cross::new(
                            (x, y + 0.5),
                            7,
                            RED.stroke_width(3),
                        )))
                        .map_err(e)?;
                }
                "declared dead" | "fenced" => {
                    chart
                        .draw_series(std::iter::once(TriangleMarker::new(
                            (x, y + 0.9),
                            6,
                            RGBColor(128, 0, 128).filled(),
                        )))
                        .map_err(e)?;
                }
                "restart" => {
                    chart
                        .draw_series(std::iter::once(Circle::new(
                            (x, y + 0.5),
                            4,
                            BLACK.filled(),
                        )))
                        .map_err(e)?;
                }
                _ => {}
            }
        }
        // The violation, highlighted across every lane.
        if let Some(v) = self.outcome.violations.first() {
            let x = v.time_ms as f64 / 1e3;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, -0.5), (x, lanes as f64 - 0.5)],
                    RED.stroke_width(3),
                )))
                .map_err(e)?
                .label(format!("VIOLATION {}", v.invariant))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(3)));
        }
        chart
            .draw_series(std::iter::once(Cross::new(
                (0.0, -0.5),
                0,
                RED.stroke_width(3),
            )))
            .map_err(e)?
            .label("crash")
            .legend(|(x, y)| Cross::new((x + 10, y), 6, RED.stroke_width(3)));
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.0, -0.5), (0.0, -0.5)],
                RGBColor(120, 120, 120).filled(),
            )))
            .map_err(e)?
            .label("pause")
            .legend(|(x, y)| {
                Rectangle::new(
                    [(x, y - 4), (x + 20, y + 4)],
                    RGBColor(120, 120, 120).filled(),
                )
            });
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.0, -0.5), (0.0, -0.5)],
                RGBColor(255, 140, 0).filled(),
            )))
            .map_err(e)?
            .label("partition")
            .legend(|(x, y)| {
                Rectangle::new(
                    [(x, y - 4), (x + 20, y + 4)],
                    RGBColor(255, 140, 0).filled(),
                )
            });
        chart
            .draw_series(std::iter::once(TriangleMarker::new(
                (0.0, -0.5),
                0,
                RGBColor(128, 0, 128).filled(),
            )))
            .map_err(e)?
            .label("declared dead / fenced")
            .legend(|(x, y)| TriangleMarker::new((x + 10, y), 6, RGBColor(128, 0, 128).filled()));
        chart
            .draw_series(std::iter::once(Circle::new((0.0, -0.5), 0, BLACK.filled())))
            .map_err(e)?
            .label("restart")
            .legend(|(x, y)| Circle::new((x + 10, y), 4, BLACK.filled()));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(e)?;
        Ok(())
    }
}

/// The image format of a swimlane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Image {
    Svg,
    Png,
}

/// Write the swimlane as SVG (or PNG when `out` ends in `.png`).
pub fn write_svg(
    scn: &ValidScenario,
    tl: &Timeline,
    outcome: &RunOutcome,
    out: &Path,
) -> Result<(), String> {
    let image = if out.extension().is_some_and(|x| x == "png") {
        Image::Png
    } else {
        Image::Svg
    };
    write_swimlane(scn, tl, outcome, out, image)
}

/// Write the swimlane to `out` as `image`, whatever its extension.
pub fn write_swimlane(
    scn: &ValidScenario,
    tl: &Timeline,
    outcome: &RunOutcome,
    out: &Path,
    image: Image,
) -> Result<(), String> {
    register_fonts();
    let roles = node_roles(scn);
    let names: Vec<String> = (0..roles.len())
        .map(|i| node_name(&roles, NodeId(i as u32)))
        .collect();
    let left_out = names.len().saturating_sub(MAX_LANES);
    let title = format!(
        "{} seed {} variant {}: {} lease spans{}",
        scn.name(),
        outcome.seed,
        outcome.variant.name(),
        tl.spans.len(),
        if left_out > 0 {
            format!(" ({left_out} lanes not drawn)")
        } else {
            String::new()
        }
    );
    let lanes = names.len().min(MAX_LANES) as u32;
    // Lanes grow with their stacked bar rows (up to 7), so rows stay legible.
    // A bar is drawn at least 1/2000 of the time axis long.
    let min_len_us = (end_s(tl) * 1e6 / 2000.0) as u64;
    let rows = bar_rows(&tl.spans, min_len_us);
    let most_rows = rows.iter().map(|&(_, of)| of as u32).max().unwrap_or(1);
    let lane_px = 34 + 10 * (most_rows.clamp(1, 7) - 1);
    let height = (160 + lanes * lane_px).clamp(360, 2400);
    let chart = Swimlane {
        title,
        names,
        tl,
        outcome,
        rows,
    };
    if image == Image::Png {
        // The bitmap encoder picks its format by extension: another name is
        // drawn as a sibling .png and renamed.
        let png_named = out.extension().is_some_and(|x| x == "png");
        let drawn = if png_named {
            out.to_path_buf()
        } else {
            let mut name = out.file_name().unwrap_or_default().to_os_string();
            name.push(".leasehold-tmp.png");
            out.with_file_name(name)
        };
        let root = PngBackend::new(&drawn, (1400, height)).into_drawing_area();
        let written = draw_and_present(&chart, root, out);
        if !png_named {
            if written.is_ok() {
                std::fs::rename(&drawn, out).map_err(|e| format!("{}: {e}", out.display()))?;
            } else {
                let _ = std::fs::remove_file(&drawn);
            }
        }
        written
    } else {
        let root = SVGBackend::new(out, (1400, height)).into_drawing_area();
        draw_and_present(&chart, root, out)
    }
}
