//! Text watermark for rendered stills.
//!
//! The demo mode stamps a short text (for example the tool name and version) onto its screenshots. The text is
//! drawn with a small built-in 5x7 bitmap font, so no font crate or font file is needed, in the bottom-right corner
//! of the image: white glyphs at 75% opacity over a one-font-pixel black drop shadow at 50% opacity, both
//! alpha-composited "over" the existing pixels in straight (non-premultiplied) RGBA, so the mark also shows on a
//! transparent background.
//!
//! Layout, in font pixels (each drawn as a `scale` x `scale` block, `scale = max(1, min(width, height) / 256)`):
//! every character takes a 6x8 cell (a 5x7 glyph plus one column and one row of spacing, which the shadow, offset by
//! (+1, +1), fills); the row of cells ends 2 font pixels from the right and bottom edges. Characters that would not
//! fit horizontally are dropped from the end of the text, so the mark never leaves the image. All arithmetic is
//! integer, so the result is deterministic.

use image::RgbaImage;

/// Glyph width in font pixels.
const GLYPH_W: u32 = 5;
/// Glyph height in font pixels.
const GLYPH_H: u32 = 7;
/// Cell width in font pixels (glyph plus one column of spacing).
const CELL_W: u32 = GLYPH_W + 1;
/// Cell height in font pixels (glyph plus one row of spacing).
const CELL_H: u32 = GLYPH_H + 1;
/// Distance of the text box from the right and bottom edges, in font pixels.
const MARGIN: u32 = 2;
/// Glyph colour and opacity (white at 75%).
const FOREGROUND: [u8; 4] = [255, 255, 255, 191];
/// Shadow colour and opacity (black at 50%).
const SHADOW: [u8; 4] = [0, 0, 0, 128];

/// Stamps `text` onto the bottom-right corner of `img`.
///
/// Lowercase ASCII letters are drawn as uppercase; characters outside the built-in font (A-Z, 0-9, space and
/// `. , - _ : / @ ! ? ' ( ) + # &`) are drawn as `?`. Text that does not fit is truncated from the end; if not even
/// one character fits, or `text` is empty, the image is left unchanged. Never panics.
pub fn stamp(img: &mut RgbaImage, text: &str) {
    let Some(layout) = Layout::new(img.width(), img.height(), text) else {
        return;
    };
    let s = layout.scale;
    for (i, ch) in text.chars().take(layout.glyphs as usize).enumerate() {
        let rows = glyph(ch);
        // `i < layout.glyphs <= u32::MAX`, so the conversion cannot fail; skip defensively rather than panic.
        let Ok(i) = u32::try_from(i) else { break };
        let cell_x = layout.x0 + i * CELL_W * s;
        for cy in 0..CELL_H {
            for cx in 0..CELL_W {
                let shadow = cx >= 1 && cy >= 1 && lit(&rows, cx - 1, cy - 1);
                let fg = lit(&rows, cx, cy);
                if !shadow && !fg {
                    continue;
                }
                let px0 = cell_x + cx * s;
                let py0 = layout.y0 + cy * s;
                for py in py0..py0 + s {
                    for px in px0..px0 + s {
                        let Some(dst) = img.get_pixel_mut_checked(px, py) else { continue };
                        if shadow {
                            dst.0 = over(SHADOW, dst.0);
                        }
                        if fg {
                            dst.0 = over(FOREGROUND, dst.0);
                        }
                    }
                }
            }
        }
    }
}

/// Where the text goes: top-left corner of the first cell in image pixels, scale and number of glyphs drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    x0: u32,
    y0: u32,
    scale: u32,
    glyphs: u32,
}

impl Layout {
    /// Computes the layout for `text` on a `width` x `height` image; `None` when nothing is drawn.
    fn new(width: u32, height: u32, text: &str) -> Option<Self> {
        let scale = (width.min(height) / 256).max(1);
        // Scaled sizes; `scale <= u32::MAX / 256`, so these products cannot overflow.
        let (cell_w, cell_h, margin) = (CELL_W * scale, CELL_H * scale, MARGIN * scale);
        let avail_w = width.checked_sub(margin)?;
        let y0 = height.checked_sub(margin)?.checked_sub(cell_h)?;
        let max_glyphs = avail_w / cell_w;
        let glyphs = u32::try_from(text.chars().take(max_glyphs as usize).count()).ok()?;
        if glyphs == 0 {
            return None;
        }
        let x0 = avail_w - glyphs * cell_w;
        Some(Self { x0, y0, scale, glyphs })
    }
}

/// Whether font pixel (`x`, `y`) of a glyph is set; false outside the 5x7 glyph.
fn lit(rows: &[u8; 7], x: u32, y: u32) -> bool {
    x < GLYPH_W && rows.get(y as usize).is_some_and(|row| row & (1 << (GLYPH_W - 1 - x)) != 0)
}

/// Composites straight-alpha RGBA `src` over `dst` (Porter-Duff "over"), rounding to nearest.
fn over(src: [u8; 4], dst: [u8; 4]) -> [u8; 4] {
    let sa = u32::from(src[3]);
    let da = u32::from(dst[3]);
    // Output alpha scaled by 255: a_out * 255 = a_s * 255 + a_d * (255 - a_s). At most 255 * 255.
    let out_a255 = sa * 255 + da * (255 - sa);
    if out_a255 == 0 {
        return [0, 0, 0, 0];
    }
    let mut out = [0u8; 4];
    for (c, o) in out.iter_mut().take(3).enumerate() {
        let num = u32::from(src[c]) * sa * 255 + u32::from(dst[c]) * da * (255 - sa);
        *o = u8::try_from((num + out_a255 / 2) / out_a255).unwrap_or(u8::MAX);
    }
    out[3] = u8::try_from((out_a255 + 127) / 255).unwrap_or(u8::MAX);
    out
}

/// The 5x7 bitmap of `ch`: seven rows, top first, bit 4 the leftmost pixel. Lowercase ASCII maps to uppercase and
/// anything not in the font to `?`.
fn glyph(ch: char) -> [u8; 7] {
    match ch.to_ascii_uppercase() {
        'A' => [0b01110, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001],
        'B' => [0b11110, 0b10001, 0b10001, 0b11110, 0b10001, 0b10001, 0b11110],
        'C' => [0b01110, 0b10001, 0b10000, 0b10000, 0b10000, 0b10001, 0b01110],
        'D' => [0b11100, 0b10010, 0b10001, 0b10001, 0b10001, 0b10010, 0b11100],
        'E' => [0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b11111],
        'F' => [0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b10000],
        'G' => [0b01110, 0b10001, 0b10000, 0b10111, 0b10001, 0b10001, 0b01111],
        'H' => [0b10001, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001],
        'I' => [0b01110, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110],
        'J' => [0b00111, 0b00010, 0b00010, 0b00010, 0b00010, 0b10010, 0b01100],
        'K' => [0b10001, 0b10010, 0b10100, 0b11000, 0b10100, 0b10010, 0b10001],
        'L' => [0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b11111],
        'M' => [0b10001, 0b11011, 0b10101, 0b10101, 0b10001, 0b10001, 0b10001],
        'N' => [0b10001, 0b10001, 0b11001, 0b10101, 0b10011, 0b10001, 0b10001],
        'O' => [0b01110, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110],
        'P' => [0b11110, 0b10001, 0b10001, 0b11110, 0b10000, 0b10000, 0b10000],
        'Q' => [0b01110, 0b10001, 0b10001, 0b10001, 0b10101, 0b10010, 0b01101],
        'R' => [0b11110, 0b10001, 0b10001, 0b11110, 0b10100, 0b10010, 0b10001],
        'S' => [0b01111, 0b10000, 0b10000, 0b01110, 0b00001, 0b00001, 0b11110],
        'T' => [0b11111, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100],
        'U' => [0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110],
        'V' => [0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01010, 0b00100],
        'W' => [0b10001, 0b10001, 0b10001, 0b10101, 0b10101, 0b10101, 0b01010],
        'X' => [0b10001, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001, 0b10001],
        'Y' => [0b10001, 0b10001, 0b10001, 0b01010, 0b00100, 0b00100, 0b00100],
        'Z' => [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b11111],
        '0' => [0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110],
        '1' => [0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110],
        '2' => [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111],
        '3' => [0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110],
        '4' => [0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010],
        '5' => [0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110],
        '6' => [0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110],
        '7' => [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000],
        '8' => [0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110],
        '9' => [0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100],
        ' ' => [0; 7],
        '.' => [0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b01100],
        ',' => [0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b00100, 0b01000],
        '-' => [0b00000, 0b00000, 0b00000, 0b11111, 0b00000, 0b00000, 0b00000],
        '_' => [0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b11111],
        ':' => [0b00000, 0b01100, 0b01100, 0b00000, 0b01100, 0b01100, 0b00000],
        '/' => [0b00000, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b00000],
        '@' => [0b01110, 0b10001, 0b00001, 0b01101, 0b10101, 0b10101, 0b01110],
        '!' => [0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00000, 0b00100],
        '\'' => [0b01100, 0b00100, 0b01000, 0b00000, 0b00000, 0b00000, 0b00000],
        '(' => [0b00010, 0b00100, 0b01000, 0b01000, 0b01000, 0b00100, 0b00010],
        ')' => [0b01000, 0b00100, 0b00010, 0b00010, 0b00010, 0b00100, 0b01000],
        '+' => [0b00000, 0b00100, 0b00100, 0b11111, 0b00100, 0b00100, 0b00000],
        '#' => [0b01010, 0b01010, 0b11111, 0b01010, 0b11111, 0b01010, 0b01010],
        '&' => [0b01100, 0b10010, 0b10100, 0b01000, 0b10101, 0b10010, 0b01101],
        // '?' and every character outside the font.
        _ => [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b00000, 0b00100],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::Rgba;

    const GREY: Rgba<u8> = Rgba([40, 80, 120, 255]);

    /// Asserts that every pixel differing between `before` and `after` lies in `[x0, x1) x [y0, y1)`, and returns how
    /// many differ.
    fn changed_within(before: &RgbaImage, after: &RgbaImage, x0: u32, y0: u32, x1: u32, y1: u32) -> usize {
        let mut changed = 0;
        for (x, y, p) in after.enumerate_pixels() {
            if p != before.get_pixel(x, y) {
                assert!(x >= x0 && x < x1 && y >= y0 && y < y1, "pixel ({x}, {y}) changed outside the text box");
                changed += 1;
            }
        }
        changed
    }

    #[test]
    fn changes_only_the_bottom_right_text_box() {
        let before = RgbaImage::from_pixel(128, 128, GREY);
        let mut after = before.clone();
        stamp(&mut after, "AB");
        // Scale 1: two 6x8 cells ending 2 px from the right and bottom edges.
        let changed = changed_within(&before, &after, 128 - 2 - 12, 128 - 2 - 8, 126, 126);
        assert!(changed > 20, "only {changed} pixels changed");
    }

    #[test]
    fn empty_text_changes_nothing() {
        let before = RgbaImage::from_pixel(64, 64, GREY);
        let mut after = before.clone();
        stamp(&mut after, "");
        assert_eq!(before, after);
    }

    #[test]
    fn scale_one_and_four() {
        let before = RgbaImage::from_pixel(128, 128, GREY);
        let mut after = before.clone();
        stamp(&mut after, "meshcheck 0.1");
        assert!(changed_within(&before, &after, 128 - 2 - 13 * 6, 118, 126, 126) > 0);

        let before = RgbaImage::from_pixel(1024, 1024, GREY);
        let mut after = before.clone();
        stamp(&mut after, "meshcheck 0.1");
        let (x0, y0) = (1024 - 4 * (2 + 13 * 6), 1024 - 4 * (2 + 8));
        let changed = changed_within(&before, &after, x0, y0, 1024 - 8, 1024 - 8);
        // Every font pixel is a 4x4 block.
        assert!(changed > 0 && changed.is_multiple_of(16), "{changed} pixels changed");
        // 'M' has its top-left font pixel set: the whole 4x4 block at the box corner is drawn.
        assert_ne!(after.get_pixel(x0, y0), &GREY);
        assert_ne!(after.get_pixel(x0 + 3, y0 + 3), &GREY);
    }

    #[test]
    fn glyph_pixel_over_shadow_colours() {
        // '-' has only row 3 set: font pixel (0, 3) is glyph only and (5, 4) is shadow only.
        let mut img = RgbaImage::from_pixel(128, 128, Rgba([0, 0, 0, 255]));
        stamp(&mut img, "-");
        let (x0, y0) = (128 - 2 - 6, 128 - 2 - 8);
        // White at 75% over opaque black.
        assert_eq!(img.get_pixel(x0, y0 + 3), &Rgba([191, 191, 191, 255]));
        let mut img = RgbaImage::from_pixel(128, 128, Rgba([255, 255, 255, 255]));
        stamp(&mut img, "-");
        // Black at 50% over opaque white (shadow only: right of the bar, one row lower).
        assert_eq!(img.get_pixel(x0 + 5, y0 + 4), &Rgba([127, 127, 127, 255]));
    }

    #[test]
    fn unknown_and_lowercase_characters() {
        assert_eq!(glyph('a'), glyph('A'));
        assert_eq!(glyph('z'), glyph('Z'));
        assert_eq!(glyph('é'), glyph('?'));
        assert_eq!(glyph('\u{1F600}'), glyph('?'));
        assert_ne!(glyph('?'), glyph('A'));
        let mut img = RgbaImage::from_pixel(100, 50, GREY);
        stamp(&mut img, "\u{0}\u{1F600}é\t\n~`{}[]<>|\\\"%$^*=;\u{FFFD}");
        let mut a = RgbaImage::from_pixel(100, 50, GREY);
        let mut b = a.clone();
        stamp(&mut a, "~");
        stamp(&mut b, "?");
        assert_eq!(a, b);
    }

    #[test]
    fn font_rows_fit_five_columns() {
        let all = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,-_:/@!?'()+#&";
        for ch in all.chars() {
            assert!(glyph(ch).iter().all(|&row| row < 1 << GLYPH_W), "{ch:?}");
            if ch != '?' && ch != ' ' {
                assert_ne!(glyph(ch), glyph('?'), "{ch:?} falls back to '?'");
            }
        }
    }

    #[test]
    fn long_text_is_truncated_within_the_image() {
        let text = "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG ".repeat(50);
        for (w, h) in [(128, 128), (100, 40), (1024, 600), (600, 1024)] {
            let before = RgbaImage::from_pixel(w, h, GREY);
            let mut after = before.clone();
            stamp(&mut after, &text);
            let layout = Layout::new(w, h, &text).expect("fits at least one glyph");
            let s = layout.scale;
            assert_eq!(layout.glyphs, (w - 2 * s) / (6 * s));
            assert!(changed_within(&before, &after, 0, h - 10 * s, w - 2 * s, h - 2 * s) > 0);
        }
    }

    #[test]
    fn too_small_images_are_left_alone() {
        for (w, h) in [(0, 0), (0, 100), (100, 0), (7, 100), (100, 9), (1, 1), (8, 10)] {
            let before = RgbaImage::from_pixel(w, h, GREY);
            let mut after = before.clone();
            stamp(&mut after, "X");
            if (w, h) == (8, 10) {
                // Exactly one cell plus margins.
                assert!(changed_within(&before, &after, 0, 0, 6, 8) > 0);
            } else {
                assert_eq!(before, after, "{w}x{h}");
            }
        }
    }

    #[test]
    fn transparent_background_gets_alpha() {
        let mut img = RgbaImage::new(128, 128);
        stamp(&mut img, "OK");
        let (x0, y0) = (128 - 2 - 12, 128 - 2 - 8);
        // 'O' top row: pixel (1, 0) is glyph only; the shadow of (1, 0) is at (2, 1).
        assert_eq!(img.get_pixel(x0 + 1, y0), &Rgba([255, 255, 255, 191]));
        // 'O' left column, row 2: glyph only.
        assert_eq!(img.get_pixel(x0, y0 + 2), &Rgba([255, 255, 255, 191]));
        let stamped = img.pixels().filter(|p| p.0[3] > 0).count();
        assert!(stamped > 20);
        // Shadow only: 'O' right column is set at rows 1..=5, so font pixel (5, 2) is shadow only.
        assert_eq!(img.get_pixel(x0 + 5, y0 + 2), &Rgba([0, 0, 0, 128]));
    }
}
