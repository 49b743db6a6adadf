//! Fuzz target for the GLB container and what it holds: the 12-byte header,
//! the chunk walk (`asset::glb::parse`), then the JSON chunk and BIN chunk
//! through the whole loader (`asset::open`, `asset::load_opened_with`: JSON
//! to a document, buffers, images, the flattened scene) and every check of
//! the catalog on the loaded asset.
//! Run with `cargo fuzz run glb` from the repository root (see fuzz/README.md).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(g) = meshcheck::asset::glb::parse(data) {
        // The chunks are slices of the input, never past its declared length.
        let range = data.as_ptr_range();
        for chunk in std::iter::once(g.json).chain(g.bin) {
            let r = chunk.as_ptr_range();
            assert!(range.start <= r.start && r.end <= range.end, "a GLB chunk lies outside the input");
        }
    }
    meshcheck_fuzz::load_and_check("fuzz.glb", data);
});
