//! UV-space algorithms on plain slices, with no glTF types: rasterising UV
//! triangles into the [0,1) tile (overlap, UV-002), UV islands and the gaps
//! between them (padding, UV-005), and the singular values of the 3D-to-UV
//! Jacobian (texel stretch, UV-004).
//!
//! - [`layout`]: the input, a layout as [`UvMesh`]es.
//! - [`raster`]: the exact, fixed-point texel rasteriser both raster
//!   measurements share, and the raster a layout is measured on (capped at
//!   [`raster::MAX_RASTER_PX`], halved while the work would pass
//!   [`raster::RASTER_WORK_BUDGET`]).
//! - [`overlap`]: UV overlap (UV-002).
//! - [`islands`]: UV islands.
//! - [`padding`]: the gaps between islands (UV-005).
//! - [`stretch`]: texel stretch (UV-004).
//! - [`metrics`]: UVs outside \[0,1\] (UV-006), mirrored UV triangles (UV-007)
//!   and texel density (UV-008).
//! - [`lanes`]: four lanes of f64 arithmetic, for the measures that take
//!   four triangles at a time (UV-004, UV-008).
//!
//! This file only declares the parts and re-exports the names the UV checks
//! use (`geom::uv::{UvMesh, uv_overlap, island_padding, ...}`).

pub mod islands;
pub mod lanes;
pub mod layout;
pub mod metrics;
pub mod overlap;
pub mod padding;
pub mod raster;
pub mod stretch;

pub use layout::UvMesh;
pub use metrics::{MirrorStats, RangeStats, mirrored_triangles, texel_density, texel_density4, uv_range};
pub use overlap::uv_overlap;
pub use padding::{MAX_SEARCH_TEXELS, PaddingStats, island_padding};
pub use raster::DEFAULT_RASTER_PX;
pub use stretch::{
    StretchStats, Weighted, extend_measured4, summarize_stretch, triangle_stretch, triangle_stretch4,
    weighted_quantiles,
};
