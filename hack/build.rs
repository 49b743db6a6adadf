//! An empty build script: cargo reads a crate's `[build-dependencies]` only
//! when it has one, and this crate has them only for their features
//! (Cargo.toml).

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
}
