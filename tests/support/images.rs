//! Texture inputs: real, decodable PNG and JPEG images of any size
//! ([`png`], [`jpeg`]) and a PNG that is only a header claiming a size
//! ([`png_header_only`]), cheap to claim huge dimensions with.

use super::shapes::index_of;

/// A simple deterministic RGBA pattern: 8x8 checkerboard over a gradient.
fn pattern(x: u32, y: u32, w: u32, h: u32) -> [u8; 4] {
    let checker = ((x / 8) + (y / 8)).is_multiple_of(2);
    let r = (u64::from(x) * 255 / u64::from(w.max(1))) as u8;
    let g = (u64::from(y) * 255 / u64::from(h.max(1))) as u8;
    let b = if checker { 200 } else { 40 };
    [r, g, b, 255]
}

/// A real, decodable RGBA8 PNG of `w` x `h` pixels with a simple pattern.
///
/// # Panics
///
/// If `w` or `h` is zero.
pub fn png(w: u32, h: u32) -> Vec<u8> {
    use image::ImageEncoder as _;
    assert!(w > 0 && h > 0, "testkit::png: empty image");
    let img = image::RgbaImage::from_fn(w, h, |x, y| image::Rgba(pattern(x, y, w, h)));
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(img.as_raw(), w, h, image::ExtendedColorType::Rgba8)
        .unwrap_or_else(|e| panic!("testkit::png: encoding failed: {e}"));
    out
}

/// Like [`png`], with every texel's largest channel inside the PBR-safe
/// sRGB range 30-243 (MAT-006): the pattern's channels mapped into 30-240.
///
/// # Panics
///
/// If `w` or `h` is zero.
pub fn png_pbr_safe(w: u32, h: u32) -> Vec<u8> {
    use image::ImageEncoder as _;
    assert!(w > 0 && h > 0, "testkit::png_pbr_safe: empty image");
    let img = image::RgbaImage::from_fn(w, h, |x, y| {
        let [r, g, b, a] = pattern(x, y, w, h);
        let safe = |c: u8| (30 + u32::from(c) * 210 / 255) as u8;
        image::Rgba([safe(r), safe(g), safe(b), a])
    });
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(img.as_raw(), w, h, image::ExtendedColorType::Rgba8)
        .unwrap_or_else(|e| panic!("testkit::png_pbr_safe: encoding failed: {e}"));
    out
}

/// A real, decodable RGB JPEG of `w` x `h` pixels with a simple pattern.
///
/// # Panics
///
/// If `w` or `h` is zero or larger than 65535.
pub fn jpeg(w: u32, h: u32) -> Vec<u8> {
    use image::ImageEncoder as _;
    assert!(w > 0 && h > 0, "testkit::jpeg: empty image");
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        let [r, g, b, _] = pattern(x, y, w, h);
        image::Rgb([r, g, b])
    });
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90)
        .write_image(img.as_raw(), w, h, image::ExtendedColorType::Rgb8)
        .unwrap_or_else(|e| panic!("testkit::jpeg: encoding failed: {e}"));
    out
}

/// A PNG that consists of only the signature, an IHDR chunk claiming
/// `w` x `h` RGBA8 (8-bit, colour type 6, non-interlaced), an empty IDAT and
/// IEND, with correct CRCs. Its header reads back as `w` x `h` but it cannot be decoded
/// (there is no image data), which makes it cheap to test huge claimed
/// dimensions.
pub fn png_header_only(w: u32, h: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 25 + 12 + 12);
    out.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    png_chunk(&mut out, b"IHDR", &ihdr);
    // An (empty) IDAT is needed: decoders only report the header once they
    // reach the image data, and reject files without any.
    png_chunk(&mut out, b"IDAT", &[]);
    png_chunk(&mut out, b"IEND", &[]);
    out
}

/// Appends one PNG chunk (length, type, data, CRC over type and data).
fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&index_of(data.len()).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32fast::hash(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn png_decodes() {
        let bytes = png(17, 9);
        let img = image::load_from_memory(&bytes).unwrap();
        assert_eq!((img.width(), img.height()), (17, 9));
        assert_eq!(img.color(), image::ColorType::Rgba8);
    }

    #[test]
    fn jpeg_decodes() {
        let bytes = jpeg(16, 24);
        assert_eq!(image::guess_format(&bytes).unwrap(), image::ImageFormat::Jpeg);
        let img = image::load_from_memory(&bytes).unwrap();
        assert_eq!((img.width(), img.height()), (16, 24));
    }

    #[test]
    fn png_header_only_dimensions() -> Result<(), Box<dyn std::error::Error>> {
        let bytes = png_header_only(100_000, 70_000);
        let dims = image::ImageReader::new(Cursor::new(&bytes)).with_guessed_format()?.into_dimensions()?;
        assert_eq!(dims, (100_000, 70_000));
        assert!(image::load_from_memory(&bytes).is_err());
        Ok(())
    }
}
