//! Drawing with plotters, PNG and SVG alike, on machines with no fonts
//! installed: DejaVu Sans is compiled in and registered with plotters'
//! `ab_glyph` renderer, so nothing asks fontconfig.

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::prelude::*;
use std::path::Path;

pub const WIDTH_PX: u32 = 1280;
pub const HEIGHT_PX: u32 = 800;

pub const WORKER_COLOR: RGBColor = RGBColor(31, 119, 180);
pub const TASK_COLORS: [RGBColor; 3] = [
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
];
pub const GREY: RGBColor = RGBColor(110, 110, 110);
/// Points measured on real stores, one colour per store, apart from the
/// simulator's colours.
pub const LIVE_COLORS: [RGBColor; 3] = [
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
];
/// Band colours for stacked charts, bottom to top.
pub const BANDS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(255, 187, 120),
    RGBColor(44, 160, 44),
    RGBColor(152, 223, 138),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
];

/// A chart that can draw itself on any plotters backend.
pub trait ChartImage {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// A chart measured by sweeping simulations: its image, its data as a table
/// (printed and written as CSV), and what the sweep's runs violated.
pub trait SweptChart: ChartImage {
    fn table(&self) -> super::table::Table;
    fn violations(&self) -> Vec<String>;
}

/// Plotters errors carry the backend's error type; the CLI wants a line
/// (their `Display`, which ends in the I/O error's own words).
pub fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Draw `chart` at `size` pixels and write it to `path` as SVG: drawn in
/// memory, then written through the path ([`crate::output_file`]).
pub fn write_svg<C: ChartImage>(chart: &C, size: (u32, u32), path: &Path) -> Result<(), String> {
    let mut text = String::new();
    draw_and_present(
        chart,
        SVGBackend::with_string(&mut text, size).into_drawing_area(),
        path,
    )?;
    crate::output_file::write(path, text.as_bytes())
}

/// Draw `chart` on `root` and write it out; a failure of either names
/// `path`. The backend is dropped (and its file closed) before this returns.
pub fn draw_and_present<C: ChartImage, DB: DrawingBackend>(
    chart: &C,
    root: DrawingArea<DB, Shift>,
    path: &Path,
) -> Result<(), String> {
    chart
        .draw(&root)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    root.present()
        .map_err(|e| format!("{}: {}", path.display(), err(e)))
}

/// The mesh style every chart shares: axis and tick fonts, no light grid
/// lines, faint bold ones.
pub trait HouseMesh {
    fn house_mesh(&mut self) -> &mut Self;
}

impl<X: Ranged, Y: Ranged, DB: DrawingBackend> HouseMesh for MeshStyle<'_, '_, X, Y, DB> {
    fn house_mesh(&mut self) -> &mut Self {
        self.axis_desc_style(label_font())
            .label_style(tick_font())
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.12))
    }
}

/// A log axis over `[lo, hi]` with its ticks at the decades.
pub fn log_decades(lo: f64, hi: f64) -> WithKeyPoints<LogCoord<f64>> {
    (lo..hi).log_scale().with_key_points(decades(lo, hi))
}

/// Tick labels for log axes: 1, 10, 100, 1k, 10k, 100k, 1M, 10M; values
/// that are not round keep a digit.
pub fn si_label(v: f64) -> String {
    let (scaled, suffix) = if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    if (scaled - scaled.round()).abs() < 1e-9 {
        format!("{}{suffix}", scaled.round())
    } else if scaled < 10.0 {
        format!("{scaled:.1}{suffix}")
    } else {
        format!("{scaled:.0}{suffix}")
    }
}

/// Decades (1, 10, 100, ...) within `[lo, hi]`, for log-axis key points.
pub fn decades(lo: f64, hi: f64) -> Vec<f64> {
    assert!(lo > 0.0 && hi > lo);
    let mut v = 10f64.powi(lo.log10().ceil() as i32);
    let mut out = Vec::new();
    while v <= hi * (1.0 + 1e-9) {
        out.push(v);
        v *= 10.0;
    }
    out
}

/// Title style shared by every chart.
/// The frame of the charts drawn against fleet size: white, `title` on
/// top, a strip at the bottom left for notes, and the body split into two
/// panels, the left one `left_px` wide.
#[allow(clippy::type_complexity)]
pub fn titled_panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    left_px: u32,
) -> Result<(DrawingArea<DB, Shift>, DrawingArea<DB, Shift>), String> {
    root.fill(&WHITE).map_err(err)?;
    let titled = root.titled(title, title_font()).map_err(err)?;
    let (body, _) = titled.split_vertically(HEIGHT_PX - 90);
    Ok(body.split_horizontally(left_px))
}

pub fn title_font() -> TextStyle<'static> {
    ("sans-serif", 30).into_font().style(FontStyle::Bold).into()
}

pub fn label_font() -> TextStyle<'static> {
    ("sans-serif", 20).into_font().into()
}

pub fn tick_font() -> TextStyle<'static> {
    ("sans-serif", 17).into_font().into()
}

pub fn note_font() -> TextStyle<'static> {
    ("sans-serif", 16).into_font().color(&GREY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_tick_labels_read_like_numbers() {
        assert_eq!(si_label(1.0), "1");
        assert_eq!(si_label(100.0), "100");
        assert_eq!(si_label(10_000.0), "10k");
        assert_eq!(si_label(2_500.0), "2.5k");
        assert_eq!(si_label(1e7), "10M");
        assert_eq!(decades(0.8, 15_000.0), vec![1.0, 10.0, 100.0, 1e3, 1e4]);
    }
}
