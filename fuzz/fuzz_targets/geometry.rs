//! Fuzz target for the geometry pass: arbitrary points, triangles and a
//! weld tolerance through `geom::mesh` (weld, edge map, shells, winding).
//! Run with `cargo fuzz run geometry` from the repository root.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    meshcheck::geom::mesh::fuzz::exercise(data);
});
