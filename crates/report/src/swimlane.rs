//! The SVG swimlane: one lane per worker and reclaimer, task ownership as bars
//! coloured by task, faults as marks, the violation highlighted. Drawn with
//! plotters (bundled font, no system fonts needed).

use crate::charts::fonts::register_fonts;
use crate::charts::png::write_png;
use crate::charts::render::{self, ChartImage};
use crate::export::{LeaseSpan, Timeline, node_name};
use leasehold_run::run::{RunOutcome, node_roles};
use leasehold_scenario::scenario::ValidScenario;
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

/// The width of the legend's column, right of the lanes: the legend never
/// covers what they show.
const LEGEND_PX: u32 = 300;

const PAUSE_GREY: RGBColor = RGBColor(120, 120, 120);
const PARTITION_ORANGE: RGBColor = RGBColor(255, 140, 0);
const DEAD_PURPLE: RGBColor = RGBColor(128, 0, 128);

/// One line of the legend: what its sample shows.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Sample {
    Violation,
    Crash,
    Pause,
    Partition,
    Dead,
    Restart,
}

impl Swimlane<'_> {
    /// The legend's lines: each invariant violated, then each kind of mark
    /// drawn on a lane, in a fixed order; nothing that did not happen.
    fn legend(&self, lanes: usize) -> Vec<(Sample, String)> {
        let mut lines: Vec<(Sample, String)> = Vec::new();
        for v in &self.outcome.violations {
            let label = format!("VIOLATION {}", v.invariant);
            if !lines.iter().any(|(_, l)| *l == label) {
                lines.push((Sample::Violation, label));
            }
        }
        let mut kinds = BTreeMap::new();
        for m in self.tl.marks.iter().filter(|m| m.node.index() < lanes) {
            let sample = match m.kind {
                "crash" => Sample::Crash,
                "pause" => Sample::Pause,
                "partition" => Sample::Partition,
                "declared dead" | "fenced" => Sample::Dead,
                "restart" => Sample::Restart,
                _ => continue,
            };
            kinds.insert(sample, ());
        }
        for sample in kinds.into_keys() {
            let label = match sample {
                Sample::Crash => "crash",
                Sample::Pause => "pause",
                Sample::Partition => "partition",
                Sample::Dead => "declared dead / fenced",
                Sample::Restart => "restart",
                Sample::Violation => unreachable!("violations are listed above"),
            };
            lines.push((sample, label.to_string()));
        }
        lines
    }
}

/// Draw the legend's `lines` in `area`, from its top left.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lines: &[(Sample, String)],
) -> Result<(), String> {
    let e = crate::charts::render::err;
    if lines.is_empty() {
        return Ok(());
    }
    const LINE_PX: i32 = 20;
    let (left, top) = (8, 60);
    // Wide enough for the longest label (about 8 px a character at 14 px).
    let longest = lines.iter().map(|(_, l)| l.len()).max().unwrap_or(0) as i32;
    let width = (46 + 8 * longest).min(LEGEND_PX as i32 - 16);
    let height = LINE_PX * lines.len() as i32 + 12;
    area.draw(&Rectangle::new(
        [(left, top), (left + width, top + height)],
        WHITE.filled(),
    ))
    .map_err(e)?;
    area.draw(&Rectangle::new(
        [(left, top), (left + width, top + height)],
        BLACK.stroke_width(1),
    ))
    .map_err(e)?;
    for (i, (sample, label)) in lines.iter().enumerate() {
        let (x, y) = (left + 10, top + 16 + LINE_PX * i as i32);
        let at = EmptyElement::at((x, y));
        let drawn = match sample {
            Sample::Violation => {
                area.draw(&(at + PathElement::new(vec![(0, 0), (20, 0)], RED.stroke_width(3))))
            }
            Sample::Crash => area.draw(&(at + Cross::new((10, 0), 6, RED.stroke_width(3)))),
            Sample::Pause => {
                area.draw(&(at + Rectangle::new([(0, -4), (20, 4)], PAUSE_GREY.filled())))
            }
            Sample::Partition => {
                area.draw(&(at + Rectangle::new([(0, -4), (20, 4)], PARTITION_ORANGE.filled())))
            }
            Sample::Dead => {
                area.draw(&(at + TriangleMarker::new((10, 0), 6, DEAD_PURPLE.filled())))
            }
            Sample::Restart => area.draw(&(at + Circle::new((10, 0), 4, BLACK.filled()))),
        };
        drawn.map_err(e)?;
        area.draw(&Text::new(
            label.clone(),
            (x + 30, y - 7),
            ("sans-serif", 14).into_font().color(&BLACK),
        ))
        .map_err(e)?;
    }
    Ok(())
}

impl ChartImage for Swimlane<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = crate::charts::render::err;
        root.fill(&WHITE).map_err(e)?;
        let lanes = self.names.len().min(MAX_LANES);
        let end_s = end_s(self.tl);
        let names = self.names.clone();
        let body = root
            .titled(
                &self.title,
                ("sans-serif", 24).into_font().style(FontStyle::Bold),
            )
            .map_err(e)?;
        let (lanes_area, legend_area) = body.split_horizontally(body.dim_in_pixel().0 - LEGEND_PX);
        let mut chart = ChartBuilder::on(&lanes_area)
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
        let (plot_w, plot_h) = chart.plotting_area().dim_in_pixel();
        let lane_px = plot_h as f64 / lanes.max(1) as f64;
        // Seconds of the time axis per pixel, to fit labels beside bars.
        let s_per_px = end_s / plot_w.max(1) as f64;
        // Lease spans: who held which task when. Bars that overlap in time
        // share the lane's bar band [0.2, 0.8] as stacked rows.
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
            if lanes <= 12 && h * lane_px >= 15.0 {
                // Inside the bar when it fits, else just after its end.
                let label = format!("task {} e{}", s.task, s.epoch);
                let label_s = (label.len() as f64 * 7.5 + 6.0) * s_per_px;
                let x = if x1 - x0 > label_s {
                    x0 + 3.0 * s_per_px
                } else {
                    x1 + 3.0 * s_per_px
                };
                chart
                    .draw_series(std::iter::once(Text::new(
                        label,
                        (x, bottom + h * 0.7),
                        ("sans-serif", 13).into_font().color(&BLACK),
                    )))
                    .map_err(e)?;
            }
        }
        // Faults and reclaims, each on its lane's centre line (pauses and
        // partitions as bands below the bars).
        for m in &self.tl.marks {
            let Some(y) = lane_of(m.node) else { continue };
            let (x, centre) = (m.time_us as f64 / 1e6, y + 0.5);
            match m.kind {
                "pause" | "partition" => {
                    let color = if m.kind == "pause" {
                        PAUSE_GREY
                    } else {
                        PARTITION_ORANGE
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
                            (x, centre),
                            7,
                            RED.stroke_width(3),
                        )))
                        .map_err(e)?;
                }
                "declared dead" | "fenced" => {
                    chart
                        .draw_series(std::iter::once(TriangleMarker::new(
                            (x, centre),
                            6,
                            DEAD_PURPLE.filled(),
                        )))
                        .map_err(e)?;
                }
                "restart" => {
                    chart
                        .draw_series(std::iter::once(Circle::new((x, centre), 4, BLACK.filled())))
                        .map_err(e)?;
                }
                _ => {}
            }
        }
        // Every violation, each across every lane at its time (one line
        // for violations at the same time).
        let times: std::collections::BTreeSet<u64> =
            self.outcome.violations.iter().map(|v| v.time_ms).collect();
        // A few stand out; many (up to 64 are kept) must not hide the bars.
        let style = if times.len() <= 4 {
            RED.stroke_width(3)
        } else {
            RED.mix(0.6).stroke_width(1)
        };
        for time_ms in times {
            let x = time_ms as f64 / 1e3;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, -0.5), (x, lanes as f64 - 0.5)],
                    style,
                )))
                .map_err(e)?;
        }
        draw_legend(&legend_area, &self.legend(lanes))
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
    match image {
        Image::Png => write_png(&chart, (1400, height), out),
        Image::Svg => render::write_svg(&chart, (1400, height), out),
    }
}
