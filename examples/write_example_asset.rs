//! Writes `examples/textured-cube.glb`, the asset the README's quick start
//! validates: a 1 m textured cube sitting on the origin, built with the
//! tests' testkit (so it carries no third-party licence).
//!
//! `cargo run --example write_example_asset`

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

use support::testkit::{Doc, Image, Material, Texture, cube, png};

fn main() {
    let mut prim = cube(1.0);
    prim.translate([0.0, 0.5, 0.0]);
    prim.material = Some(0);
    let mut doc = Doc::single(prim);
    doc.materials.push(Material { base_color_texture: Some(0), tex_coord: 0, normal_texture: None });
    doc.textures.push(Texture { source: 0 });
    doc.images.push(Image { bytes: png(256, 256), mime: "image/png".into(), uri: None });
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/textured-cube.glb");
    std::fs::write(&path, doc.to_glb()).expect("write the example asset");
    println!("wrote {}", path.display());
}
