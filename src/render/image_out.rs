//! From a read-back view to a still: coverage from the alpha channel, the
//! background composited in linear light (or the alpha kept, straight, for
//! a transparent PNG), the watermark stamped; and PNG encoding.
//!
//! The GPU target holds premultiplied, sRGB-encoded colour: the model was
//! drawn over transparent black, so alpha is exactly the silhouette's
//! coverage of each pixel (4x MSAA at the edges).

use super::gpu::RawView;
use super::rig::Angle;
use super::types::{Background, Still};
use super::watermark;
use image::RgbaImage;

/// A pixel is visible when the model covers at least half of it.
pub const VISIBLE_ALPHA: u8 = 128;

fn srgb_to_linear(c: u8) -> f32 {
    let c = c as f32 / 255.0;
    if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
}

fn linear_to_srgb(l: f32) -> u8 {
    let l = l.clamp(0.0, 1.0);
    let c = if l <= 0.003_130_8 { l * 12.92 } else { 1.055 * l.powf(1.0 / 2.4) - 0.055 };
    (c * 255.0 + 0.5) as u8
}

/// Turns a raw view into a still.
pub fn finish(raw: RawView, angle: Angle, background: Background, mark: Option<&str>) -> Still {
    let lut: [f32; 256] = std::array::from_fn(|i| srgb_to_linear(i as u8));
    let mut rgba = raw.rgba;
    let mut visible = 0u64;
    for px in rgba.chunks_exact_mut(4) {
        let a = px[3];
        if a >= VISIBLE_ALPHA {
            visible += 1;
        }
        if a == 255 {
            continue;
        }
        let af = a as f32 / 255.0;
        match background {
            Background::Color(bg) if a == 0 => {
                px.copy_from_slice(&[bg[0], bg[1], bg[2], 255]);
            }
            Background::Color(bg) => {
                for c in 0..3 {
                    let l = lut[px[c] as usize] + lut[bg[c] as usize] * (1.0 - af);
                    px[c] = linear_to_srgb(l);
                }
                px[3] = 255;
            }
            Background::Transparent => {
                if a == 0 {
                    px[..3].fill(0);
                } else {
                    for c in 0..3 {
                        px[c] = linear_to_srgb(lut[px[c] as usize] / af);
                    }
                }
            }
        }
    }
    let mut image = RgbaImage::from_raw(raw.size, raw.size, rgba).unwrap_or_else(|| RgbaImage::new(raw.size, raw.size));
    if let Some(text) = mark {
        watermark::stamp(&mut image, text);
    }
    Still { angle, image, visible_pixels: visible }
}

/// Encodes a still as PNG (default compression: byte-identical for the same pixels).
pub fn png(image: &RgbaImage) -> Vec<u8> {
    let mut out = Vec::new();
    let encoder = image::codecs::png::PngEncoder::new(&mut out);
    // Writing to memory cannot fail for a well-formed RgbaImage.
    let _ = image::ImageEncoder::write_image(
        encoder,
        image.as_raw(),
        image.width(),
        image.height(),
        image::ExtendedColorType::Rgba8,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composites_and_counts() {
        // 2x2: opaque red, half-covered red (premultiplied), empty, empty.
        let half = linear_to_srgb(srgb_to_linear(255) * 0.5);
        let raw = RawView { size: 2, rgba: vec![255, 0, 0, 255, half, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0] };
        let s = finish(raw, Angle { rv: 0.0, rh: 0.0 }, Background::Color([0, 0, 255]), None);
        assert_eq!(s.visible_pixels, 2);
        assert_eq!(s.image.get_pixel(0, 0).0, [255, 0, 0, 255]);
        assert_eq!(s.image.get_pixel(0, 1).0, [0, 0, 255, 255]);
        let p = s.image.get_pixel(1, 0).0;
        assert!(p[0] > 150 && p[2] > 150 && p[3] == 255, "{p:?}");
        assert!((s.visible_pct() - 50.0).abs() < 1e-9);
        let raw = RawView { size: 2, rgba: vec![255, 0, 0, 255, half, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0] };
        let t = finish(raw, Angle { rv: 0.0, rh: 0.0 }, Background::Transparent, None);
        assert_eq!(t.image.get_pixel(1, 0).0[3], 128);
        assert!(t.image.get_pixel(1, 0).0[0] >= 253, "un-premultiplied back to full red");
        assert_eq!(t.image.get_pixel(0, 1).0, [0, 0, 0, 0]);
    }

    #[test]
    fn png_round_trips() {
        let img = RgbaImage::from_pixel(3, 2, image::Rgba([1, 2, 3, 4]));
        let back = image::load_from_memory(&png(&img)).unwrap().into_rgba8();
        assert_eq!(back, img);
    }
}
