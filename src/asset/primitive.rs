//! A decoded mesh primitive: the data the loader (plain accessors, Draco,
//! meshopt) fills in and every check and the renderer read.

use crate::geom::mat4::Aabb;

/// UV sets read per primitive (TEXCOORD_0..TEXCOORD_7).
pub const MAX_UV_SETS: usize = 8;

/// A count found once and kept ([`Primitive::referenced`]): empty when
/// built, filled only by the primitive's own methods. A clone starts
/// empty: the clone's triangles may be changed, and a count copied from
/// the original would then be stale (it is found again, once, on demand).
#[derive(Debug, Default)]
pub struct CountCache(std::sync::OnceLock<u64>);

impl Clone for CountCache {
    fn clone(&self) -> Self {
        CountCache::default()
    }
}

/// A decoded mesh primitive, in its mesh's local space.
#[derive(Debug, Clone, Default)]
pub struct Primitive {
    /// Index of the mesh in the document.
    pub mesh: usize,
    /// Index of the primitive in the mesh.
    pub index: usize,
    /// glTF primitive mode (4 = triangles).
    pub mode: u32,
    /// Vertex positions.
    pub positions: Vec<[f32; 3]>,
    /// Triangles (vertex indices), invalid ones left out.
    pub triangles: Vec<[u32; 3]>,
    /// Triangles the primitive draws, including any left out of `triangles`.
    pub triangle_count: u64,
    /// Triangles naming vertices that do not exist (left out of `triangles`).
    pub invalid_triangles: u64,
    /// UV sets by set number; `None` where the primitive has no TEXCOORD_n.
    pub uvs: Vec<Option<Vec<[f32; 2]>>>,
    /// NORMAL, for drawing; `None` when absent or unreadable (the renderer
    /// then shades flat, as glTF 2.0 asks).
    pub normals: Option<Vec<[f32; 3]>>,
    /// TANGENT (xyz and the bitangent sign), for drawing normal maps.
    pub tangents: Option<Vec<[f32; 4]>>,
    /// COLOR_0 as RGBA (RGB colours get alpha 1), for drawing.
    pub colors: Option<Vec<[f32; 4]>>,
    /// Material index, if any.
    pub material: Option<usize>,
    /// Whether the geometry came through Draco.
    pub draco: bool,
    /// Bounds in local space.
    pub bounds: Aabb,
    /// The vertex count once [`Primitive::free_geometry`] has freed the
    /// positions (`None` while they are held).
    pub freed_vertices: Option<u64>,
    /// [`Primitive::referenced_vertices`] once found, for the checks that
    /// read it (PERF-004 and PERF-006). Public, like every field, so that a
    /// primitive can still be built field by field with
    /// `..Primitive::default()` (the fuzz targets build theirs so); its
    /// value is private and only that call fills it.
    pub referenced: CountCache,
}

impl Primitive {
    /// JSON pointer to the primitive.
    pub fn pointer(&self) -> String {
        format!("/meshes/{}/primitives/{}", self.mesh, self.index)
    }
    /// Vertices the triangles reference (each once), counted on the first
    /// call and kept: PERF-004 and PERF-006 both read it (s13: a pass over
    /// 3.9M indices each, 3-4 ms, when each counted for itself). Counted
    /// over the positions and triangles held then: call it before
    /// [`Primitive::free_geometry`].
    pub fn referenced_vertices(&self) -> u64 {
        *self.referenced.0.get_or_init(|| {
            let mut seen = vec![false; self.positions.len()];
            let mut n = 0u64;
            for &v in self.triangles.as_flattened() {
                if !std::mem::replace(&mut seen[v as usize], true) {
                    n += 1;
                }
            }
            n
        })
    }
    /// Vertices uploaded for the primitive.
    pub fn vertex_count(&self) -> u64 {
        self.freed_vertices.unwrap_or(self.positions.len() as u64)
    }
    /// Frees the attributes only drawing and the UV, material and
    /// performance checks read (UVs, normals, tangents, colours), keeping
    /// positions and triangles: afterwards the primitive reads as one
    /// without them. The engine calls it once every check that reads them
    /// has run ([`crate::asset::scene::Scene::free_surface_attributes`]).
    pub fn free_surface_attributes(&mut self) {
        self.uvs = Vec::new();
        self.free_vertex_streams();
    }
    /// Frees the normals, tangents and colours (only drawing and PERF-006
    /// read them), keeping positions, UVs and triangles.
    pub fn free_vertex_streams(&mut self) {
        self.normals = None;
        self.tangents = None;
        self.colors = None;
    }
    /// Frees the positions and triangles, keeping their counts
    /// ([`Primitive::vertex_count`], `triangle_count`): the engine calls it
    /// once the welded world mesh has read them and nothing else will
    /// ([`crate::asset::scene::Scene::build_world_mesh_freeing`]).
    pub fn free_geometry(&mut self) {
        self.freed_vertices = Some(self.vertex_count());
        self.positions = Vec::new();
        self.triangles = Vec::new();
    }
    /// Whether the primitive has TEXCOORD_`set`.
    pub fn has_uv(&self, set: usize) -> bool {
        self.uvs.get(set).is_some_and(Option::is_some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_counts_its_own_referenced_vertices() {
        let original =
            Primitive { positions: vec![[0.0; 3]; 6], triangles: vec![[0, 1, 2], [3, 4, 5]], ..Primitive::default() };
        assert_eq!(original.referenced_vertices(), 6);
        let mut clone = original.clone();
        clone.triangles.truncate(1);
        assert_eq!(clone.referenced_vertices(), 3);
        assert_eq!(original.referenced_vertices(), 6);
    }
}
