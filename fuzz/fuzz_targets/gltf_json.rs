//! Fuzz target for .gltf JSON text to a `Scene`: the bytes as a lone
//! upload (`Input::from_bytes`, so `bundle::NoResources`: only data: URIs
//! resolve) through `asset::open` and `asset::load_opened_with` (the JSON
//! parse and its glTF 1.0 / missing `scene.nodes` fallbacks, data: URI
//! buffers and images, accessors, the flattened scene), then every check of
//! the catalog on the loaded asset.
//! Run with `cargo fuzz run gltf_json -- -dict=fuzz/dicts/gltf.dict`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    meshcheck_fuzz::load_and_check("fuzz.gltf", data);
});
