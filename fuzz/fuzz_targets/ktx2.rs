//! Fuzz target for image headers, KTX2 first: `asset::texture::read_header`
//! (the KTX2 header, level index and data format descriptor through the
//! `ktx2` crate, and the GPU-memory sum; PNG, JPEG and WebP headers through
//! `image`). Inputs that are not KTX2 are read as they are and a second time
//! behind the KTX2 identifier, so mutations of any bytes reach the KTX2
//! header reader.
//! Run with `cargo fuzz run ktx2`.

#![no_main]

use meshcheck::asset::texture::{self, ImageFormat};

const KTX2_MAGIC: [u8; 12] = [0xAB, 0x4B, 0x54, 0x58, 0x20, 0x32, 0x30, 0xBB, 0x0D, 0x0A, 0x1A, 0x0A];

fn read(bytes: &[u8]) {
    let sniffed = texture::sniff(bytes);
    if let Ok(h) = texture::read_header(bytes) {
        assert_eq!(Some(h.format), sniffed);
        assert!(h.width > 0 && h.height > 0, "{h:?}");
        if h.format == ImageFormat::Ktx2 {
            assert!(h.encoding.is_some());
        } else {
            assert_eq!(h.levels, 1);
            assert_eq!(h.gpu_bytes, texture::rgba8_mip_chain_bytes(h.width, h.height));
        }
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    read(data);
    if texture::sniff(data) != Some(ImageFormat::Ktx2) {
        let mut ktx = KTX2_MAGIC.to_vec();
        ktx.extend_from_slice(data);
        read(&ktx);
    }
});
