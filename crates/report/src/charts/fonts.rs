//! The fonts every chart is drawn with: DejaVu Sans, compiled in, so that
//! no machine's installed fonts (or their absence) change a picture.

use plotters::style::{FontStyle, register_font};
use std::sync::Once;

static FONTS: Once = Once::new();

pub const REGULAR_TTF: &[u8] = include_bytes!("../../../../assets/fonts/DejaVuSans.ttf");
pub const BOLD_TTF: &[u8] = include_bytes!("../../../../assets/fonts/DejaVuSans-Bold.ttf");

/// Register the bundled font under the family plotters asks for by default.
/// (PNG text is drawn by [`super::png::PngBackend`] from the same fonts.)
pub fn register_fonts() {
    FONTS.call_once(|| {
        for family in ["sans-serif", "DejaVu Sans"] {
            register_font(family, FontStyle::Normal, REGULAR_TTF)
                .unwrap_or_else(|_| panic!("the bundled regular font is a valid TTF"));
            register_font(family, FontStyle::Bold, BOLD_TTF)
                .unwrap_or_else(|_| panic!("the bundled bold font is a valid TTF"));
        }
    });
}
