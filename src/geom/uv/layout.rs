//! The input every UV measurement takes: a layout, as the [`UvMesh`]es of
//! the primitives that share one UV set and texture.

/// One primitive's share of a UV layout: a UV set and the triangles over it.
#[derive(Debug, Clone, Copy)]
pub struct UvMesh<'a> {
    /// UV per vertex.
    pub uvs: &'a [[f32; 2]],
    /// Triangles as vertex indices; an index past `uvs` makes the triangle unusable.
    pub triangles: &'a [[u32; 3]],
}

/// Layouts the UV files' unit tests share.
#[cfg(test)]
pub(super) mod fixtures {
    use super::UvMesh;

    pub fn mesh<'a>(uvs: &'a [[f32; 2]], triangles: &'a [[u32; 3]]) -> UvMesh<'a> {
        UvMesh { uvs, triangles }
    }

    /// A unit square at 8x8 texels split along its diagonal:
    ///
    /// ```text
    ///   3 +-----+ 2
    ///     |   / |
    ///     | /   |
    ///   0 +-----+ 1
    /// ```
    pub const SQUARE: [[f32; 2]; 4] = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]];
}
