//! Image headers: dimensions, container format and estimated GPU memory.
//!
//! Only headers are read (PNG IHDR, JPEG SOF, WebP VP8 headers, the KTX2
//! header and level index), never pixels, so an image that claims 65535x65535
//! costs nothing to measure. GPU memory follows glTF-Transform's
//! `getVRAMByteLength`: PNG/JPEG/WebP as RGBA8 with a full mip chain; KTX2
//! from its levels (UASTC and uncompressed formats from each level's
//! uncompressed size, ETC1S/BasisLZ as 8 bytes per 4x4 block, 16 with alpha).
//! [`decode_texels`] decodes texels, for the one check that reads them (the
//! base-colour range), under the renderer's size limits; [`png_rows`] reads
//! a PNG's texels a row at a time instead, holding no image-sized buffer,
//! and leaves to [`decode_texels`] what it cannot read as that would.

use serde::Serialize;
use std::io::Cursor;

/// An image's container format, sniffed from its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    /// PNG
    Png,
    /// JPEG
    Jpeg,
    /// WebP
    Webp,
    /// KTX 2.0 (Basis Universal or GPU formats)
    Ktx2,
}

impl ImageFormat {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpeg",
            ImageFormat::Webp => "webp",
            ImageFormat::Ktx2 => "ktx2",
        }
    }
}

/// What the header of one image says.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageHeader {
    /// Container format.
    pub format: ImageFormat,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Estimated GPU memory in bytes.
    pub gpu_bytes: u64,
    /// For KTX2: the encoding ("etc1s", "uastc" or the vkFormat number).
    pub encoding: Option<String>,
    /// Mip levels stored in the file (1 for PNG/JPEG/WebP).
    pub levels: u32,
}

/// Sniffs the container from magic bytes.
pub fn sniff(bytes: &[u8]) -> Option<ImageFormat> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageFormat::Png)
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(ImageFormat::Jpeg)
    } else if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(ImageFormat::Webp)
    } else if bytes.starts_with(&[0xAB, 0x4B, 0x54, 0x58, 0x20, 0x32, 0x30, 0xBB, 0x0D, 0x0A, 0x1A, 0x0A]) {
        Some(ImageFormat::Ktx2)
    } else {
        None
    }
}

/// RGBA8 bytes of a full mip chain down to 1x1.
pub fn rgba8_mip_chain_bytes(width: u32, height: u32) -> u64 {
    let (mut w, mut h) = (width.max(1) as u64, height.max(1) as u64);
    let mut total = 0u64;
    loop {
        // Saturating: a header may claim 2^32 - 1 on each side (a fuzzer find).
        total = total.saturating_add(w.saturating_mul(h).saturating_mul(4));
        if w == 1 && h == 1 {
            return total;
        }
        w = (w / 2).max(1);
        h = (h / 2).max(1);
    }
}

/// Reads an image's header, or says why it cannot be read.
pub fn read_header(bytes: &[u8]) -> Result<ImageHeader, String> {
    let format = sniff(bytes).ok_or_else(|| "not a PNG, JPEG, WebP or KTX2 image".to_string())?;
    if format == ImageFormat::Ktx2 {
        return read_ktx2(bytes);
    }
    let fmt = match format {
        ImageFormat::Png => image::ImageFormat::Png,
        ImageFormat::Jpeg => image::ImageFormat::Jpeg,
        _ => image::ImageFormat::WebP,
    };
    let mut reader = image::ImageReader::with_format(Cursor::new(bytes), fmt);
    reader.no_limits();
    let (width, height) =
        reader.into_dimensions().map_err(|e| format!("the {} header cannot be read: {e}", format.as_str()))?;
    if width == 0 || height == 0 {
        return Err(format!("the {} header gives a zero dimension ({width}x{height})", format.as_str()));
    }
    Ok(ImageHeader {
        format,
        width,
        height,
        gpu_bytes: rgba8_mip_chain_bytes(width, height),
        encoding: None,
        levels: 1,
    })
}

/// Offsets, in a Basic data format descriptor block (after its 8-byte block
/// header), of the four `texelBlockDimension` bytes.
const DFD_TEXEL_DIMS: std::ops::Range<usize> = 4..8;

/// A copy of `bytes` whose Basic DFD blocks have no `texelBlockDimension`
/// of 255, or `None` when none has. The `ktx2` crate (0.5.0) adds one to each
/// dimension byte in a `u8` and unwraps it as non-zero, so 255 panics while
/// parsing; no Vulkan format has a 256-texel block, and meshcheck never reads
/// the dimensions, so they are set to 0 (one texel) before the crate parses.
fn without_dfd_texel_dim_255(bytes: &[u8]) -> Option<Vec<u8>> {
    let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let (offset, length) = (u32_at(48)?, u32_at(52)?);
    let end = offset.checked_add(length)?.min(bytes.len());
    // Skip the DFD's 4-byte total size; walk its blocks.
    let mut at = offset.checked_add(4)?;
    let mut patches = Vec::new();
    while at.checked_add(8).is_some_and(|e| e <= end) {
        let (head, size) = (u32_at(at)?, bytes.get(at + 6..at + 8).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)?);
        // vendorId 0 and descriptorType 0: a Basic block.
        if head == 0 {
            for i in DFD_TEXEL_DIMS {
                if bytes.get(at + 8 + i) == Some(&255) {
                    patches.push(at + 8 + i);
                }
            }
        }
        if size == 0 {
            break;
        }
        at += size;
    }
    if patches.is_empty() {
        return None;
    }
    let mut copy = bytes.to_vec();
    for at in patches {
        copy[at] = 0;
    }
    Some(copy)
}

fn read_ktx2(bytes: &[u8]) -> Result<ImageHeader, String> {
    let patched = without_dfd_texel_dim_255(bytes);
    let bytes = patched.as_deref().unwrap_or(bytes);
    let reader = ktx2::Reader::new(bytes).map_err(|e| format!("the KTX2 header cannot be read: {e:?}"))?;
    let header = reader.header();
    let (width, height) = (header.pixel_width, header.pixel_height.max(1));
    if width == 0 {
        return Err("the KTX2 header gives a zero width".into());
    }
    let layers = (header.layer_count.max(1) as u64).saturating_mul(header.face_count.max(1) as u64);
    let dfd = reader.basic_dfd();
    let model = dfd.as_ref().and_then(|d| d.color_model);
    let etc1s = header.supercompression_scheme == Some(ktx2::SupercompressionScheme::BasisLZ)
        || model == Some(ktx2::ColorModel::ETC1S);
    let uastc = model == Some(ktx2::ColorModel::UASTC);
    let alpha = dfd.as_ref().is_some_and(|d| d.sample_information.len() > 1);
    let mut gpu = 0u64;
    let mut levels = 0u32;
    // Sizes come from the file: every product and sum saturates rather than wraps.
    for (i, level) in reader.levels().enumerate() {
        levels += 1;
        let shift = u32::try_from(i).unwrap_or(u32::MAX);
        let w = (width as u64).checked_shr(shift).unwrap_or(0).max(1);
        let h = (height as u64).checked_shr(shift).unwrap_or(0).max(1);
        let level_bytes = if etc1s {
            w.div_ceil(4)
                .saturating_mul(h.div_ceil(4))
                .saturating_mul(if alpha { 16 } else { 8 })
                .saturating_mul(layers)
        } else if level.uncompressed_byte_length > 0 {
            level.uncompressed_byte_length
        } else {
            level.data.len() as u64
        };
        gpu = gpu.saturating_add(level_bytes);
    }
    let encoding = if etc1s {
        "etc1s".to_string()
    } else if uastc {
        "uastc".to_string()
    } else {
        header.format.map(|f| format!("vkformat-{}", f.value())).unwrap_or_else(|| "unknown".into())
    };
    Ok(ImageHeader { format: ImageFormat::Ktx2, width, height, gpu_bytes: gpu, encoding: Some(encoding), levels })
}

/// Largest side [`decode_texels`] decodes (the renderer's limit).
pub const MAX_DECODE_DIM: u32 = 8192;
/// Most bytes [`decode_texels`] lets the decoder allocate.
pub const MAX_DECODE_BYTES: u64 = 512 << 20;

/// Decodes a PNG, JPEG or WebP image under [`MAX_DECODE_DIM`] and
/// [`MAX_DECODE_BYTES`], in the decoder's own layout (an RGB PNG stays
/// three bytes a texel: the reader converts what it must, and a 2048 px
/// texture is not copied into 16 MB of RGBA), or says why not (KTX2 is not
/// decoded: it needs a Basis Universal transcoder).
pub fn decode_texels(bytes: &[u8]) -> Result<image::DynamicImage, String> {
    let fmt = match sniff(bytes) {
        Some(ImageFormat::Png) => image::ImageFormat::Png,
        Some(ImageFormat::Jpeg) => image::ImageFormat::Jpeg,
        Some(ImageFormat::Webp) => image::ImageFormat::WebP,
        Some(ImageFormat::Ktx2) => return Err("KTX2 texels are not decoded".into()),
        None => return Err("not a PNG, JPEG or WebP image".into()),
    };
    let mut reader = image::ImageReader::with_format(Cursor::new(bytes), fmt);
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_DECODE_DIM);
    limits.max_image_height = Some(MAX_DECODE_DIM);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    reader.decode().map_err(|e| format!("the image cannot be decoded: {e}"))
}

/// How [`png_rows`] hands over a row: three bytes a texel (RGB8) or four
/// (RGBA8, alpha last).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowLayout {
    /// RGB8.
    Rgb,
    /// RGBA8.
    Rgba,
}

/// A PNG's texels, one row at a time, as [`decode_texels`] gives them
/// after a conversion to RGB8 or RGBA8: the decoder configured as `image`
/// configures it (the same limits, the same `EXPAND` transformation:
/// palettes and bit depths under 8 expanded, `tRNS` made alpha), grey
/// rows widened to RGBA8 as `image`'s conversion widens them (grey in the
/// three channels, alpha 255 where the image has none). Returns the number
/// of texels, or `None` where it cannot stand in for [`decode_texels`]: not
/// a PNG, 16 bits a channel (which `image` narrows in its own way), a side
/// over [`MAX_DECODE_DIM`], or any decoding error; the caller then decodes
/// with [`decode_texels`], which reports the error in its own words. Rows
/// already handed over before such an error are to be discarded.
///
/// Each texel is handed over exactly once, but an interlaced image's rows
/// come pass by pass (Adam7), not top to bottom: for what reads texels in
/// any order (MAT-006's lowest and highest value). Nothing the size of the
/// image is held: a 2048 px texture is not written into a 12-16 MB buffer
/// (fresh pages the kernel zeroes) and read back.
pub fn png_rows(bytes: &[u8], mut each: impl FnMut(RowLayout, &[u8])) -> Option<u64> {
    if sniff(bytes) != Some(ImageFormat::Png) {
        return None;
    }
    let limits = png::Limits { bytes: usize::try_from(MAX_DECODE_BYTES).unwrap_or(usize::MAX) };
    let mut decoder = png::Decoder::new_with_limits(Cursor::new(bytes), limits);
    decoder.set_ignore_text_chunk(false);
    let header = decoder.read_header_info().ok()?;
    let (width, height) = (header.width, header.height);
    if width > MAX_DECODE_DIM || height > MAX_DECODE_DIM {
        return None;
    }
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().ok()?;
    let (color, depth) = reader.output_color_type();
    if depth != png::BitDepth::Eight {
        return None;
    }
    let mut wide = Vec::new();
    loop {
        let row = match reader.next_row() {
            Ok(Some(row)) => row,
            Ok(None) => break,
            Err(_) => return None,
        };
        let data = row.data();
        match color {
            png::ColorType::Rgb => each(RowLayout::Rgb, data),
            png::ColorType::Rgba => each(RowLayout::Rgba, data),
            png::ColorType::Grayscale | png::ColorType::GrayscaleAlpha => {
                let grey_alpha = color == png::ColorType::GrayscaleAlpha;
                let step = if grey_alpha { 2 } else { 1 };
                wide.clear();
                for t in data.chunks_exact(step) {
                    wide.extend_from_slice(&[t[0], t[0], t[0], if grey_alpha { t[1] } else { u8::MAX }]);
                }
                each(RowLayout::Rgba, &wide);
            }
            // EXPAND leaves no palette indices.
            png::ColorType::Indexed => return None,
        }
    }
    Some(u64::from(width) * u64::from(height))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mip_chain_matches_gltf_transform() {
        assert_eq!(rgba8_mip_chain_bytes(256, 256), 349_524);
        assert_eq!(rgba8_mip_chain_bytes(2048, 2048), 22_369_620);
        assert_eq!(rgba8_mip_chain_bytes(1, 1), 4);
        // A PNG header may claim about 2^32 on each side: the estimate saturates
        // (fuzzer find, fuzz/regressions/ktx2/fuzzer-found-png-4g-sides.png).
        assert_eq!(rgba8_mip_chain_bytes(u32::MAX, u32::MAX), u64::MAX);
    }

    #[test]
    fn a_dfd_texel_dimension_of_255_is_read_not_panicked_on() {
        // fuzz/regressions/ktx2: the ktx2 crate unwraps 255 + 1 as non-zero.
        let bytes = include_bytes!("../../fuzz/regressions/ktx2/dfd-texel-dim-255.ktx2");
        assert!(without_dfd_texel_dim_255(bytes).is_some());
        let found = include_bytes!("../../fuzz/regressions/ktx2/fuzzer-found-dfd-texel-dim-255.ktx2");
        for b in [&bytes[..], &found[..]] {
            let _ = read_header(b);
        }
        let header = read_header(bytes).expect("the header is otherwise sound");
        assert_eq!(header.format, ImageFormat::Ktx2);
    }

    #[test]
    fn not_an_image() {
        assert!(read_header(b"hello world, not an image").is_err());
        assert!(read_header(b"\x89PNG\r\n\x1a\n").is_err());
    }
}

/// PNG files for the tests of [`png_rows`] and of what reads it: every
/// colour type and bit depth the `png` encoder writes, and Adam7-interlaced
/// ones written by hand (the encoder writes none).
#[cfg(test)]
pub(crate) mod test_png {
    /// A PNG of `color` at `depth` bits, its samples (packed as PNG packs
    /// them, without filter bytes) from `next`; `plte` and `trns` chunks
    /// where given.
    pub fn encoded(
        (w, h): (u32, u32),
        color: png::ColorType,
        depth: png::BitDepth,
        plte: Option<&[u8]>,
        trns: Option<&[u8]>,
        mut next: impl FnMut() -> u8,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(color);
        enc.set_depth(depth);
        if let Some(p) = plte {
            enc.set_palette(p.to_vec());
        }
        if let Some(t) = trns {
            enc.set_trns(t.to_vec());
        }
        let row = (w as usize * color.samples() * depth as usize).div_ceil(8);
        let data: Vec<u8> = (0..row * h as usize).map(|_| next()).collect();
        let mut writer = enc.write_header().unwrap();
        writer.write_image_data(&data).unwrap();
        writer.finish().unwrap();
        out
    }

    /// An Adam7-interlaced 8-bit PNG of `channels` samples a texel (1 grey,
    /// 2 grey and alpha, 3 RGB, 4 RGBA), its samples in row-major order:
    /// the passes' rows unfiltered, in stored deflate blocks.
    pub fn interlaced((w, h): (u32, u32), channels: usize, samples: &[u8]) -> Vec<u8> {
        const PASSES: [(u32, u32, u32, u32); 7] =
            [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)];
        let mut raw = Vec::new();
        for (x0, y0, dx, dy) in PASSES {
            if x0 >= w || y0 >= h {
                continue;
            }
            for y in (y0..h).step_by(dy as usize) {
                raw.push(0);
                for x in (x0..w).step_by(dx as usize) {
                    let at = (y * w + x) as usize * channels;
                    raw.extend_from_slice(&samples[at..at + channels]);
                }
            }
        }
        // zlib: stored blocks, then the Adler-32 of the data.
        let mut z = vec![0x78, 0x01];
        let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
        for (i, b) in blocks.iter().enumerate() {
            z.push(u8::from(i + 1 == blocks.len()));
            z.extend_from_slice(&(b.len() as u16).to_le_bytes());
            z.extend_from_slice(&(!(b.len() as u16)).to_le_bytes());
            z.extend_from_slice(b);
        }
        let (mut a, mut b) = (1u32, 0u32);
        for &x in &raw {
            a = (a + x as u32) % 65_521;
            b = (b + a) % 65_521;
        }
        z.extend_from_slice(&((b << 16) | a).to_be_bytes());
        let color = match channels {
            1 => 0,
            2 => 4,
            3 => 2,
            _ => 6,
        };
        let mut ihdr = Vec::new();
        ihdr.extend_from_slice(&w.to_be_bytes());
        ihdr.extend_from_slice(&h.to_be_bytes());
        ihdr.extend_from_slice(&[8, color, 0, 0, 1]);
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        for (kind, data) in [(b"IHDR", ihdr), (b"IDAT", z), (b"IEND", Vec::new())] {
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            let start = out.len();
            out.extend_from_slice(kind);
            out.extend_from_slice(&data);
            let crc = crc32fast::hash(&out[start..]);
            out.extend_from_slice(&crc.to_be_bytes());
        }
        out
    }
}

#[cfg(test)]
mod png_rows_tests {
    use super::test_png::{encoded, interlaced};
    use super::*;
    use png::{BitDepth as B, ColorType as C};

    /// The RGB8 or RGBA8 texels of [`decode_texels`]'s image, as MAT-006
    /// reads them (RGB8 and RGBA8 as decoded, any other layout as RGBA8).
    fn decoded(bytes: &[u8]) -> Result<(RowLayout, Vec<u8>), String> {
        Ok(match decode_texels(bytes)? {
            image::DynamicImage::ImageRgb8(b) => (RowLayout::Rgb, b.into_raw()),
            image::DynamicImage::ImageRgba8(b) => (RowLayout::Rgba, b.into_raw()),
            other => (RowLayout::Rgba, other.into_rgba8().into_raw()),
        })
    }

    /// [`png_rows`]'s texels, each texel's bytes a vector, and the count it returned.
    fn streamed(bytes: &[u8]) -> Option<(RowLayout, Vec<Vec<u8>>, u64)> {
        let mut got = Vec::new();
        let mut layout = None;
        let count = png_rows(bytes, |l, row| {
            assert!(layout.is_none_or(|seen| seen == l), "one layout per image");
            layout = Some(l);
            let n = if l == RowLayout::Rgb { 3 } else { 4 };
            assert_eq!(row.len() % n, 0);
            got.extend(row.chunks_exact(n).map(<[u8]>::to_vec));
        })?;
        Some((layout.unwrap_or(RowLayout::Rgb), got, count))
    }

    fn texels(layout: RowLayout, raw: &[u8]) -> Vec<Vec<u8>> {
        raw.chunks_exact(if layout == RowLayout::Rgb { 3 } else { 4 }).map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn rows_are_the_texels_image_decodes() {
        let mut rng = crate::geom::testrng::XorShift::new(0x9e37_79b9_7f4a_7c15);
        let mut byte = || (rng.next_u64() >> 24) as u8;
        let palette: Vec<u8> = (0..16 * 3).map(|i| (i * 17) as u8).collect();
        for (w, h) in [(1, 1), (5, 3), (17, 9), (64, 2)] {
            let mut streamable = vec![
                encoded((w, h), C::Rgb, B::Eight, None, None, &mut byte),
                encoded((w, h), C::Rgba, B::Eight, None, None, &mut byte),
                encoded((w, h), C::Grayscale, B::Eight, None, None, &mut byte),
                encoded((w, h), C::GrayscaleAlpha, B::Eight, None, None, &mut byte),
                // Bit depths under 8 and palettes, expanded; tRNS made alpha.
                encoded((w, h), C::Grayscale, B::Two, None, None, &mut byte),
                encoded((w, h), C::Grayscale, B::Four, None, Some(&[0, 5]), &mut byte),
                encoded((w, h), C::Rgb, B::Eight, None, Some(&[0, 9, 0, 9, 0, 9]), || 9),
                encoded((w, h), C::Indexed, B::Four, Some(&palette), None, || 0x3c),
                encoded((w, h), C::Indexed, B::Eight, Some(&palette), Some(&[0, 128, 255]), || 1),
            ];
            let samples: Vec<u8> = (0..w * h * 4).map(|_| byte()).collect();
            for channels in 1..=4 {
                streamable.push(interlaced((w, h), channels, &samples[..(w * h) as usize * channels]));
            }
            for (case, bytes) in streamable.iter().enumerate() {
                let (layout, raw) = decoded(bytes).unwrap();
                let (got_layout, mut got, count) =
                    streamed(bytes).unwrap_or_else(|| panic!("{w}x{h} case {case} was not streamed"));
                let mut want = texels(layout, &raw);
                assert_eq!((got_layout, count), (layout, u64::from(w * h)), "{w}x{h} case {case}");
                // Interlaced rows come pass by pass: the same texels, in another order.
                if case >= streamable.len() - 4 && (w, h) != (1, 1) {
                    assert_ne!(got, want, "{w}x{h} case {case}: the passes should reorder the texels");
                    got.sort();
                    want.sort();
                }
                assert_eq!(got, want, "{w}x{h} case {case}");
            }
        }
    }

    #[test]
    fn what_image_reads_differently_or_not_at_all_is_left_to_it() {
        let mut n = 0u8;
        let sixteen = encoded((4, 4), C::Rgba, B::Sixteen, None, None, || {
            n = n.wrapping_add(37);
            n
        });
        assert!(decoded(&sixteen).is_ok());
        assert!(png_rows(&sixteen, |_, _| ()).is_none(), "16-bit channels are image's to narrow");
        // Truncated in its image data: image's error, not a partial stream.
        let whole = encoded((64, 64), C::Rgb, B::Eight, None, None, || 7);
        let cut = &whole[..whole.len() - 30];
        assert!(decoded(cut).is_err());
        assert!(png_rows(cut, |_, _| ()).is_none());
        // Over the side limit: the header says so before any texel.
        let mut wide = encoded((1, 1), C::Rgb, B::Eight, None, None, || 0);
        wide[16..20].copy_from_slice(&(MAX_DECODE_DIM + 1).to_be_bytes());
        assert!(png_rows(&wide, |_, _| panic!("no row of an image too wide")).is_none());
        assert!(decoded(&wide).is_err());
        // Not a PNG.
        assert!(png_rows(b"\xff\xd8\xff\xe0 a JPEG's start", |_, _| ()).is_none());
    }
}
