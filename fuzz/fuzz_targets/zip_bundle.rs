//! Fuzz target for zip bundles: `asset::bundle::ZipBundle::open` (entry
//! names, links, the entry, size and ratio caps, inflating under the sizes
//! the headers declare, picking the main file), the bundle's resolver, then
//! the whole load of the bundle's .gltf or .glb with its resources and every
//! check of the catalog.
//! Run with `cargo fuzz run zip_bundle`.

#![no_main]

use meshcheck::asset::bundle::{Resolver, Unresolved, ZipBundle};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut bundle = match ZipBundle::open(data) {
        Ok(b) => b,
        Err(e) => return meshcheck_fuzz::assert_input_error(&e),
    };
    let main = bundle.main_file.clone();
    let lower = main.to_ascii_lowercase();
    assert!(lower.ends_with(".gltf") || lower.ends_with(".glb"), "main file {main:?}");
    assert!(!main.starts_with('/') && !main.split(['/', '\\']).any(|s| s == ".."), "main file {main:?}");
    let depth = bundle.main_dir().split('/').count();
    let _ = bundle.take_main();
    let resolver = bundle.into_resolver();
    // Nothing outside the bundle is reachable through it.
    let escape = format!("{}etc/passwd", "../".repeat(depth + 1));
    assert!(matches!(resolver.fetch(&escape), Err(Unresolved::Refused(_))), "{escape} from {main:?}");
    if data.starts_with(b"PK") {
        meshcheck_fuzz::load_and_check("fuzz.zip", data);
    }
});
