//! Welded mesh topology: the one weld, edge map and shell pass that the
//! geometry and topology checks share.
//!
//! Everything here works on plain slices: world-space points and triangles
//! of point indices. Nothing knows about glTF.
//!
//! - [`weld`]: points within a tolerance are one vertex (transitively:
//!   union-find over a hash grid), so UV seams and hard-normal splits are
//!   not holes. Linear in the number of points for real meshes.
//! - [`edges`]: [`Topology::build`] gives welded triangles; collapsed ones
//!   (a repeated welded index) are left out of the edge map. Edges are found
//!   by sorting 64-bit keys (n log n), shells by union-find, winding by a
//!   union-find with parity over manifold edges (a breadth-first walk where
//!   a patch cannot be wound consistently). Results do not depend on
//!   triangle or vertex order.
//! - [`vertices`]: the welded vertices' positions, in `f32` where that
//!   holds them bit for bit.
//! - [`labels`]: every triangle's shell, in 2 bytes where that holds it.
//! - [`vector`]: cross, dot, length, normals and triangle shape.
//! - [`hash`]: the fast hasher and map for integer keys both passes use.
//! - [`fuzz`]: the geometry fuzz target's body.
//! - [`winding`]: the triangles against their patch's majority winding, by
//!   a union-find with parity (the walk in [`edges`] where a patch cannot
//!   be wound consistently).
//! - [`pairs`]: the manifold edges' face pairs walked once for TOP-001's
//!   quad candidates and TOP-004's hard-edge sums.
//!
//! This file only declares the parts and re-exports the names the checks
//! use (`geom::mesh::{Topology, shape, cross, dot, len, sub}`).

pub mod edges;
pub mod fuzz;
pub mod hash;
pub mod labels;
pub mod pairs;
pub mod vector;
pub mod vertices;
pub mod weld;
pub mod winding;

pub use edges::Topology;
pub use labels::ShellLabels;
pub use vector::{cross, dot, len, shape, sub};
pub use vertices::Vertices;
