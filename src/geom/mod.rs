//! Pure geometry on plain slices and arrays, with no glTF types: transforms,
//! bounds, triangle assembly, meshoptimizer's overdraw analyzer. Checks and
//! the loader build on these.

pub mod bits;
pub mod dedup;
pub mod flat;
pub mod kept;
pub mod mat4;
pub mod mesh;
pub mod overdraw;
pub mod parts;
pub mod prefetch;
pub mod radix;
#[cfg(test)]
pub(crate) mod testrng;
pub mod topology;
pub mod unionfind;
pub mod uv;
