//! Image headers: dimensions, container format and estimated GPU memory.
//!
//! Only headers are read (PNG IHDR, JPEG SOF, WebP VP8 headers, the KTX2
//! header and level index), never pixels, so an image that claims 65535x65535
//! costs nothing to measure. GPU memory follows glTF-Transform's
//! `getVRAMByteLength`: PNG/JPEG/WebP as RGBA8 with a full mip chain; KTX2
//! from its levels (UASTC and uncompressed formats from each level's
//! uncompressed size, ETC1S/BasisLZ as 8 bytes per 4x4 block, 16 with alpha).
//! [`decode_texels`] decodes texels, for the one check that reads them (the
//! base-colour range), under the renderer's size limits.

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
