//! Test support: what the integration tests, the benchmarks and the example
//! share. None of it is in the library's API.
//!
//! One entry module, included with one line: the test binary declares
//! `mod support;` (tests/tests.rs), the benchmarks and the example
//! `#[path = "../tests/support/mod.rs"] mod support;`. By concern:
//!
//! - [`testkit`]: glTF 2.0 assets built in code, valid for the Khronos
//!   glTF-Validator unless broken on purpose; no binary fixtures in the
//!   repository. Its files: `scene.rs` (the model: [`testkit::Doc`],
//!   [`testkit::Prim`], ...), `accessors.rs` (buffer, views, accessors),
//!   `gltf.rs` (the JSON), `containers.rs` (GLB, `.gltf` files, zip
//!   bundles, padded GLBs), `shapes.rs` (cube, quad, grid, sphere),
//!   `defects.rs` (flipped, missing, degenerate triangles, debris),
//!   `images.rs` (PNG, JPEG, header-only PNG); `readback.rs` reads the
//!   output back for the kit's own tests. Panics only on programmer error.
//! - [`util`]: the built binary, the shared asset corpus, the engine on
//!   bytes, the report schema.
//! - [`multipart`] (`serve`): multipart/form-data bodies for the /v1 API.
//! - [`serve_process`] (`serve`): `meshcheck serve` as a child process (its
//!   address from its log, SIGTERM to stop it) and accounts made with the
//!   CLI.
//! - [`postgres`] (`serve`): a throwaway PostgreSQL cluster on a loopback
//!   port, a fresh database per test.
//! - [`fakes`] (`serve`): loopback stand-ins on the other end of a
//!   connection (a webhook receiver, a file host).
//! - [`s3`] (`serve`): a real S3-protocol server (`s3s-fs`, installed on
//!   first use) with a bucket, for the blob-store tests.
//! - [`procfs`]: process trees, status fields and descriptors from /proc,
//!   for the benchmarks' memory and descriptor watch.
//!
//! The payment provider's fake lives in tests/billing.rs and the vision
//! provider's in tests/vision.rs, the one place each is used.

mod accessors;
mod containers;
mod defects;
mod gltf;
mod images;
#[cfg(test)]
mod readback;
mod scene;
mod shapes;

#[cfg(feature = "serve")]
pub mod fakes;
#[cfg(feature = "serve")]
pub mod multipart;
// The benchmarks' (engine, render, soak); the tests use none of it.
#[cfg(feature = "serve")]
#[allow(dead_code)]
pub mod postgres;
#[allow(dead_code)]
pub mod procfs;
// The benchmarks and the example include this module too and use none of it.
#[cfg(feature = "serve")]
#[allow(dead_code)]
pub mod s3;
#[cfg(feature = "serve")]
pub mod serve_process;
pub mod util;

/// The code-built assets under one name: `testkit::cube`, `testkit::Doc`,
/// `testkit::zip`, ...
pub mod testkit {
    pub use super::containers::*;
    pub use super::images::*;
    pub use super::scene::*;
    pub use super::shapes::*;
}
