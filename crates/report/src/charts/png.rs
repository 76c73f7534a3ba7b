//! The PNG backend: plotters' `BitMapBackend` with text drawn here.
//!
//! plotters 0.3.7 draws `ab_glyph` text by rasterising each glyph at the
//! origin and copying its pixels to the pen position, truncated to a whole
//! pixel: the glyph's left side bearing is dropped, so narrow glyphs with a
//! wide bearing ("l", "i", "1") land on their left neighbour ("cl" reads
//! "d"). Here each glyph is placed where its font puts it (pen position from
//! advances and kerning, outline at its own bounds) and its coverage blended
//! into the bitmap. Layout boxes are measured as plotters measures them, so
//! charts lay out as before.
//!
//! plotters also keeps the regular face for a style made bold with
//! `FontDesc::style` (it loads the face when the font is created): the PNG
//! titles came out regular while the SVG's are bold. Here the style picks the
//! face, for drawing and measuring alike.

use super::fonts::{BOLD_TTF, REGULAR_TTF};
use super::render::{ChartImage, draw_and_present};
use ab_glyph::{Font, FontRef, GlyphId, PxScale, ScaleFont, point};
use plotters::prelude::*;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind, FontStyle,
};
use std::path::Path;
use std::sync::LazyLock;

static REGULAR: LazyLock<FontRef<'static>> = LazyLock::new(|| {
    FontRef::try_from_slice(REGULAR_TTF).expect("the bundled regular font is a valid TTF")
});
static BOLD: LazyLock<FontRef<'static>> = LazyLock::new(|| {
    FontRef::try_from_slice(BOLD_TTF).expect("the bundled bold font is a valid TTF")
});

/// The bundled face for a family and style, if the family is one
/// `fonts::register_fonts` registers.
fn bundled_face(family: &str, style: FontStyle) -> Option<&'static FontRef<'static>> {
    if family != "sans-serif" && family != "DejaVu Sans" {
        return None;
    }
    Some(match style {
        FontStyle::Bold => &BOLD,
        _ => &REGULAR,
    })
}

/// The box plotters' `ab_glyph` font gives `text` (its width the sum of the
/// advances and kerning, its height the size / 1.24), measured in `font`.
fn layout_box(font: &FontRef<'_>, size: f64, text: &str) -> (i32, i32) {
    let font = font.as_scaled(PxScale::from(size as f32));
    let mut width = 0f32;
    let mut prev: Option<GlyphId> = None;
    for c in text.chars() {
        let id = font.glyph_id(c);
        width += font.h_advance(id);
        if let Some(p) = prev {
            width += font.kern(p, id);
        }
        prev = Some(id);
    }
    (width as i32, (size / 1.24) as i32)
}

/// Every pixel of `text` set in `font` at `size` px, as (x, y, coverage)
/// relative to the top left of plotters' layout box: pen from x = 0, the
/// baseline on the pixel row plotters puts it on (half the size down).
fn text_coverage(font: &FontRef<'_>, size: f64, text: &str, mut put: impl FnMut(i32, i32, f32)) {
    let font = font.as_scaled(PxScale::from(size as f32));
    let baseline = (size as f32 / 2.0).ceil();
    let mut pen = 0f32;
    let mut prev: Option<GlyphId> = None;
    for c in text.chars() {
        let id = font.glyph_id(c);
        if let Some(p) = prev {
            pen += font.kern(p, id);
        }
        prev = Some(id);
        let glyph = id.with_scale_and_position(font.scale(), point(pen, baseline));
        if let Some(outline) = font.outline_glyph(glyph) {
            let bounds = outline.px_bounds();
            let (left, top) = (bounds.min.x as i32, bounds.min.y as i32);
            outline.draw(|x, y, coverage| put(left + x as i32, top + y as i32, coverage));
        }
        pen += font.h_advance(id);
    }
}

/// `BitMapBackend` writing a PNG, with the bundled font's text laid out
/// right. Everything but text is the bitmap backend's own drawing.
pub struct PngBackend<'a> {
    inner: BitMapBackend<'a>,
}

impl<'a> PngBackend<'a> {
    /// Draw into `buf`, RGB rows of `size.0` pixels.
    pub fn with_buffer(buf: &'a mut [u8], size: (u32, u32)) -> Self {
        Self {
            inner: BitMapBackend::with_buffer(buf, size),
        }
    }
}

/// Draw `chart` at `size` pixels and write it to `path` as a PNG. Drawn and
/// encoded in memory, then written through the path as every output is
/// ([`crate::output_file`]): never drawn beside it and renamed over it.
pub fn write_png<C: ChartImage>(chart: &C, size: (u32, u32), path: &Path) -> Result<(), String> {
    use image::ImageEncoder;
    let mut pixels = vec![0u8; size.0 as usize * size.1 as usize * 3];
    draw_and_present(
        chart,
        PngBackend::with_buffer(&mut pixels, size).into_drawing_area(),
        path,
    )?;
    let mut encoded = Vec::new();
    image::codecs::png::PngEncoder::new(&mut encoded)
        .write_image(&pixels, size.0, size.1, image::ColorType::Rgb8)
        .map_err(|e| format!("{}: cannot encode the PNG: {e}", path.display()))?;
    crate::output_file::write(path, &encoded)
}

type Drawn<E> = Result<(), DrawingErrorKind<E>>;

impl<'a> DrawingBackend for PngBackend<'a> {
    type ErrorType = <BitMapBackend<'a> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Drawn<Self::ErrorType> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Drawn<Self::ErrorType> {
        self.inner.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Drawn<Self::ErrorType> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Drawn<Self::ErrorType> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Drawn<Self::ErrorType> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Drawn<Self::ErrorType> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Drawn<Self::ErrorType> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Drawn<Self::ErrorType> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        (iw, ih): (u32, u32),
        src: &[u8],
    ) -> Drawn<Self::ErrorType> {
        self.inner.blit_bitmap(pos, (iw, ih), src)
    }

    /// plotters' own estimate, measured in the face [`Self::draw_text`]
    /// draws: plotters measures (and draws) a bold style in the regular face.
    fn estimate_text_size<TStyle: BackendTextStyle>(
        &self,
        text: &str,
        style: &TStyle,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let Some(font) = bundled_face(style.family().as_str(), style.style()) else {
            return self.inner.estimate_text_size(text, style);
        };
        let (width, height) = layout_box(font, style.size(), text);
        Ok((width as u32, height as u32))
    }

    /// plotters' own `draw_text` (anchor from its layout box, then the
    /// rotation), with the glyphs from [`text_coverage`].
    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Drawn<Self::ErrorType> {
        let Some(font) = bundled_face(style.family().as_str(), style.style()) else {
            return self.inner.draw_text(text, style, pos);
        };
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let (width, height) = layout_box(font, style.size(), text);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let trans = style.transform();
        let (w, h) = self.get_size();
        let mut result = Ok(());
        text_coverage(font, style.size(), text, |x, y, coverage| {
            if result.is_err() {
                return;
            }
            let (x, y) = trans.transform(x + dx, y + dy);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && x < w as i32 && y >= 0 && y < h as i32 {
                result = self
                    .inner
                    .draw_pixel((x, y), color.mix(f64::from(coverage)));
            }
        });
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::fonts::register_fonts;

    const SIZE: f64 = 60.0;
    const LEFT: i32 = 20;

    /// The columns, left to right, where `text` drawn black on white from
    /// `LEFT` has a pixel darker than mid-grey, as runs [first, last].
    fn ink_runs(text: &str, style: FontStyle) -> Vec<(i32, i32)> {
        register_fonts();
        let (w, h) = (600u32, 120u32);
        let mut buf = vec![255u8; (w * h * 3) as usize];
        {
            let root = PngBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
            let font = ("sans-serif", SIZE).into_font().style(style).color(&BLACK);
            root.draw(&Text::new(text, (LEFT, 20), font)).unwrap();
            root.present().unwrap();
        }
        let inked = |x: u32| (0..h).any(|y| buf[((y * w + x) * 3) as usize] < 128);
        let mut runs: Vec<(i32, i32)> = Vec::new();
        for x in 0..w {
            if inked(x) {
                match runs.last_mut() {
                    Some(run) if run.1 == x as i32 - 1 => run.1 = x as i32,
                    _ => runs.push((x as i32, x as i32)),
                }
            }
        }
        runs
    }

    /// Each glyph's outline where the font's own metrics put it (advances,
    /// kerning, the outline's bounds in font units), from `LEFT`: [left,
    /// right] in pixels.
    fn font_layout(text: &str, font: &FontRef<'_>) -> Vec<(f32, f32)> {
        let font = font.as_scaled(PxScale::from(SIZE as f32));
        let mut pen = LEFT as f32;
        let mut prev: Option<GlyphId> = None;
        let mut out = Vec::new();
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(p) = prev {
                pen += font.kern(p, id);
            }
            prev = Some(id);
            if let Some(outline) = font.font().outline(id) {
                let k = font.h_scale_factor();
                out.push((
                    pen + outline.bounds.min.x * k,
                    pen + outline.bounds.max.x * k,
                ));
            }
            pen += font.h_advance(id);
        }
        out
    }

    /// "cl" read "d" and "reclaimer" "redaimer": glyphs were drawn without
    /// their left side bearing. Each glyph's ink now stands where the font
    /// puts its outline, both edges within a pixel and a half (anti-aliased
    /// edges), so the blank between two glyphs is the font's too. Bold is
    /// drawn bold (plotters drew it in the regular face).
    #[test]
    fn png_glyphs_stand_where_the_font_puts_them() {
        for (style, font) in [(FontStyle::Normal, &*REGULAR), (FontStyle::Bold, &*BOLD)] {
            for text in ["clil", "1l1"] {
                let runs = ink_runs(text, style);
                let want = font_layout(text, font);
                let why = format!("{text} {}: ink {runs:?}, font {want:?}", style.as_str());
                assert_eq!(runs.len(), want.len(), "{why}");
                for (&(first, last), &(left, right)) in runs.iter().zip(&want) {
                    assert!((first as f32 - left).abs() <= 1.5, "{why}");
                    assert!((last as f32 + 1.0 - right).abs() <= 1.5, "{why}");
                }
            }
        }
    }
}
