//! What a render asks for and what it gives: background, request, stills,
//! and the result the RND checks read.

use super::rig::{Angle, STANDARD_ANGLES};
use image::RgbaImage;

/// The stills the RND checks measure are rendered at this size.
pub const CHECK_SIZE: u32 = 512;

/// What is behind the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Background {
    /// An opaque sRGB colour.
    Color([u8; 3]),
    /// Transparent (the PNG keeps the alpha channel).
    Transparent,
}

impl Default for Background {
    fn default() -> Self {
        Background::Color([0xF2, 0xF2, 0xF2])
    }
}

impl Background {
    /// Parses `#RRGGBB` or `transparent`.
    pub fn parse(s: &str) -> std::result::Result<Background, String> {
        if s.eq_ignore_ascii_case("transparent") {
            return Ok(Background::Transparent);
        }
        let hex = s.strip_prefix('#').filter(|h| h.len() == 6 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        match hex {
            Some(h) => {
                let byte = |i: usize| u8::from_str_radix(&h[i..i + 2], 16).unwrap_or(0);
                Ok(Background::Color([byte(0), byte(2), byte(4)]))
            }
            None => Err(format!("background must be #RRGGBB or transparent, got {s:?}")),
        }
    }
}

impl std::fmt::Display for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Background::Color([r, g, b]) => write!(f, "#{r:02X}{g:02X}{b:02X}"),
            Background::Transparent => f.write_str("transparent"),
        }
    }
}

/// What to render.
#[derive(Debug, Clone)]
pub struct Request {
    /// The views, in order (at most [`MAX_ANGLES`](crate::render::MAX_ANGLES)).
    pub angles: Vec<Angle>,
    /// Width and height of each still.
    pub size: u32,
    /// Background.
    pub background: Background,
    /// Text stamped on every still (demo mode).
    pub watermark: Option<String>,
}

impl Request {
    /// The six standard views at `size`.
    pub fn standard(size: u32) -> Request {
        Request {
            angles: STANDARD_ANGLES.iter().map(|(_, a)| *a).collect(),
            size,
            background: Background::default(),
            watermark: None,
        }
    }
}

/// One rendered view.
#[derive(Debug, Clone)]
pub struct Still {
    /// The view.
    pub angle: Angle,
    /// The image, background composited (or transparent), watermark stamped.
    pub image: RgbaImage,
    /// Pixels the model covers (coverage alpha at least one half).
    pub visible_pixels: u64,
}

impl Still {
    /// Share of the frame the model covers, in %.
    pub fn visible_pct(&self) -> f64 {
        let total = (self.image.width() as u64 * self.image.height() as u64).max(1);
        self.visible_pixels as f64 / total as f64 * 100.0
    }

    /// The report's entry for the `index`-th still of a render (no `path` or `url` yet).
    pub fn screenshot(&self, index: usize) -> crate::report::Screenshot {
        crate::report::Screenshot {
            name: self.angle.file_stem(index),
            angle: self.angle,
            size: self.image.width(),
            path: None,
            url: None,
            visible_pct: (self.visible_pct() * 100.0).round() / 100.0,
        }
    }
}

/// What a render request produced.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// One still per requested angle, in order.
    pub stills: Vec<Still>,
    /// Triangles drawn per view (per instance).
    pub triangles: u64,
    /// Draw calls per view.
    pub draw_calls: u64,
    /// Wall time of upload and drawing, milliseconds.
    pub render_ms: f64,
    /// What the renderer could not draw as the file asks (undecodable
    /// textures, KTX2 drawn with factors only).
    pub notes: Vec<String>,
}

/// What the RND checks get from the renderer (full mode): the standard
/// views, or why this asset could not be drawn.
pub type RenderRun = std::result::Result<Rendered, String>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backgrounds_parse() {
        assert_eq!(Background::parse("#FF8000").unwrap(), Background::Color([255, 128, 0]));
        assert_eq!(Background::parse("#ff8000").unwrap().to_string(), "#FF8000");
        assert_eq!(Background::parse("Transparent").unwrap(), Background::Transparent);
        for bad in ["", "#FFF", "FF8000", "#GG0000", "#FF80001", "red"] {
            assert!(Background::parse(bad).is_err(), "{bad}");
        }
    }
}
