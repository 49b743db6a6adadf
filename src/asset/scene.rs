//! The `Scene`: the default scene flattened to world-space primitive
//! instances, shared by every check.
//!
//! Mesh primitives are decoded once (plain accessors, sparse accessors,
//! KHR_draco_mesh_compression, EXT_meshopt_compression views with
//! KHR_mesh_quantization) and kept in local space; each drawn instance holds
//! its world matrix. Node hierarchies are walked iteratively, so a 100,000-deep
//! chain or a cycle cannot overflow the stack or loop.
//!
//! Memory follows the file, not what it claims: every drawn instance is
//! charged to the document's decode budget (a few hundred bytes of JSON can
//! instance a mesh millions of times), and the welded world mesh is built
//! only when its estimated size fits the same budget; otherwise the checks
//! that need it report `skipped` with the reason.

use super::data::DocData;
use super::json::Note;
pub use super::primitive::{MAX_UV_SETS, Primitive};
use crate::error::{Error, ErrorCode, Result};
use crate::geom::mat4::{self, Aabb, Mat4};
use crate::geom::mesh::edges::Topology;
use crate::geom::mesh::vector::{self, QualityStream};
use crate::geom::topology;
use gltf::json::validation::Checked;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Estimated bytes the world mesh and its welded topology hold per drawn
/// vertex (world point, welded copy, weld keys and maps). Measured peaks are
/// below these estimates (see `docs/reliability.md`).
pub const WORLD_BYTES_PER_VERTEX: u64 = 80;
/// Estimated bytes per drawn triangle (world and welded triangles, flags,
/// three edges with their faces, shell, patch, orientation and normal).
pub const WORLD_BYTES_PER_TRIANGLE: u64 = 160;

/// Triangles whose qualities [`Scene::build_world_mesh_freeing`] computes
/// at once, on the thread pool, before pushing them in order into TOP-003's
/// summary: 512 KB of qualities.
const QUALITY_WINDOW: usize = 1 << 16;

/// One drawn instance of a primitive.
#[derive(Debug, Clone)]
pub struct Instance {
    /// Index into `Scene::primitives`.
    pub primitive: usize,
    /// The node that draws it.
    pub node: usize,
    /// Local-to-world transform.
    pub world: Mat4,
    /// The EXT_mesh_gpu_instancing instance number, if GPU-instanced.
    pub gpu_instance: Option<u32>,
    /// The instance's own transform (EXT_mesh_gpu_instancing TRS), if GPU-instanced.
    pub instance_matrix: Option<Mat4>,
}

impl Instance {
    /// True when the transform mirrors (negative determinant): winding flips.
    pub fn mirrored(&self) -> bool {
        mat4::det3(&self.world) < 0.0
    }
}

/// The flattened default scene.
#[derive(Debug, Clone, Default)]
pub struct Scene {
    /// Index of the scene used (the default scene, or 0), if the document has any.
    pub scene_index: Option<usize>,
    /// Decoded primitives that are drawn.
    pub primitives: Vec<Primitive>,
    /// Drawn instances.
    pub instances: Vec<Instance>,
    /// Nodes reached from the scene, in depth-first order.
    pub nodes: Vec<usize>,
    /// Parent of each reached node within the scene (`None` for roots); by node index.
    pub parents: HashMap<usize, Option<usize>>,
    /// Draw-call estimate.
    pub draw_calls: u64,
    /// World-space bounds of everything drawn.
    pub bounds: Aabb,
    /// Loader observations worth a user's attention (cycles, invalid
    /// indices, references that do not resolve, skins drawn in their bind
    /// pose, primitives that could not be read), each naming its JSON pointer.
    pub notes: Vec<Note>,
    /// Primitives (and other geometry) that could not be read and are left
    /// out of every measurement, with the reason; also listed in `notes`.
    pub unread: Vec<Note>,
    /// Bytes the welded world mesh may take (the document's decode budget;
    /// see [`Scene::world_mesh`]).
    pub geometry_budget: u64,
    /// The welded world-space mesh, built once on first use, or why it was
    /// not built (see [`Scene::world_mesh`]).
    pub world: OnceLock<std::result::Result<WorldMesh, String>>,
}

/// Every drawn triangle of every instance in world space, welded: the one
/// weld, edge map and shell pass that the geometry and topology checks share.
///
/// Triangles are numbered instance by instance, in `Scene::instances`
/// order, each instance's in its primitive's order. The world-space points
/// and triangles are not kept: a triangle's corners are read through its
/// instance ([`WorldMesh::corners`]), transformed as they were when welded,
/// so they are the same numbers; only the welded topology is stored.
#[derive(Debug, Clone)]
pub struct WorldMesh {
    /// The weld tolerance used, in metres.
    pub tolerance: f64,
    /// The first triangle of each instance (ascending; by instance index).
    first_triangle: Vec<u32>,
    /// Whether each instance mirrors (its triangles are flipped).
    mirrored: Vec<bool>,
    /// Welded topology.
    pub topology: Topology,
    /// Degenerate flag per triangle (see `checks::geo::degenerate`), computed
    /// once, a bit a triangle.
    pub degenerate: OnceLock<crate::geom::bits::Bits>,
    /// TOP-003's quality summary ([`vector::quality_summary`]), when it was computed
    /// while the mesh was built ([`Scene::build_world_mesh_freeing`]); set
    /// there or never, so a plain field.
    pub regularity: Option<Option<(f64, f64, usize)>>,
    /// What TOP-001 and TOP-004 read of the manifold edges, when the
    /// engine walked them once for both (`checks::top::prepare_pairs`),
    /// each part taken by its check.
    pub pairs: crate::geom::mesh::pairs::Kept,
}

impl WorldMesh {
    /// Frees the mesh, its topology in two halves side by side
    /// ([`Topology::free_in_halves`]).
    pub fn free_in_halves(self) {
        self.topology.free_in_halves();
    }

    /// Triangles drawn (every instance's, collapsed and degenerate ones included).
    pub fn triangle_count(&self) -> usize {
        self.topology.triangles.len()
    }

    /// The instance (index into `Scene::instances`) that drew triangle `t`.
    pub fn instance_of(&self, t: u32) -> usize {
        self.first_triangle.partition_point(|&s| s <= t) - 1
    }

    /// Triangle `t`'s corners in world space, as wound (a mirrored
    /// instance's triangles flipped), and whether it repeats a vertex index
    /// in its own primitive. `scene` is the scene the mesh was built from.
    pub fn corners(&self, scene: &Scene, t: u32) -> ([[f64; 3]; 3], bool) {
        let ii = self.instance_of(t);
        let inst = &scene.instances[ii];
        let prim = &scene.primitives[inst.primitive];
        let place = mat4::Placer::new(&inst.world);
        corners(&place, self.mirrored[ii], prim, prim.triangles[(t - self.first_triangle[ii]) as usize])
    }

    /// `f` of every triangle's [`WorldMesh::corners`], in triangle order,
    /// computed on the thread pool instance by instance.
    ///
    /// # Panics
    ///
    /// When the scene's geometry was freed ([`Scene::build_world_mesh_freeing`]).
    pub fn map_corners<T: Send>(&self, scene: &Scene, f: impl Fn([[f64; 3]; 3], bool) -> T + Sync) -> Vec<T> {
        assert!(!scene.geometry_freed(), "the scene's corners were freed when the mesh was built");
        let mut out = Vec::with_capacity(self.triangle_count());
        for (inst, &mirrored) in scene.instances.iter().zip(&self.mirrored) {
            let prim = &scene.primitives[inst.primitive];
            let place = mat4::Placer::for_points(&inst.world, &prim.positions);
            out.par_extend(prim.triangles.par_iter().map(|&tri| {
                let (c, repeated) = corners(&place, mirrored, prim, tri);
                f(c, repeated)
            }));
        }
        out
    }
}

/// A primitive's triangle `tri` in world space as an instance draws it
/// (`place`: its transform; flipped when `mirrored`), and whether it
/// repeats a vertex index.
#[inline]
fn corners(place: &mat4::Placer<'_>, mirrored: bool, prim: &Primitive, tri: [u32; 3]) -> ([[f64; 3]; 3], bool) {
    wound_corners(tri, mirrored, |i| place.place(prim.positions[i as usize]))
}

/// Triangle `tri`'s corners as wound (flipped when `mirrored`), each read
/// by `point`, and whether it repeats a vertex index. Always inlined: as a
/// call per corner (through `array::map`) the three transforms were three
/// times TOP-003's own work in a profile.
#[inline(always)]
fn wound_corners(tri: [u32; 3], mirrored: bool, point: impl Fn(u32) -> [f64; 3]) -> ([[f64; 3]; 3], bool) {
    let repeated = tri[0] == tri[1] || tri[1] == tri[2] || tri[0] == tri[2];
    let [a, b, c] = if mirrored { [tri[0], tri[2], tri[1]] } else { tri };
    ([point(a), point(b), point(c)], repeated)
}

/// Every instance's triangles over welded vertices, instance by instance
/// (a mirroring instance's flipped: glTF 2.0, 3.7.4), given each world
/// point's welded vertex (`welded`), each instance's first point and each
/// primitive's triangles (`triangles_of`).
fn welded_triangles<'t>(
    instances: &[Instance],
    first_point: &[usize],
    welded: &[u32],
    total: usize,
    triangles_of: impl Fn(usize) -> &'t [[u32; 3]],
) -> Vec<[u32; 3]> {
    let mut out = Vec::with_capacity(total);
    for (inst, &base) in instances.iter().zip(first_point) {
        let w = &welded[base..];
        let tris = triangles_of(inst.primitive);
        if inst.mirrored() {
            out.par_extend(tris.par_iter().map(|t| [t[0], t[2], t[1]].map(|i| w[i as usize])));
        } else {
            out.par_extend(tris.par_iter().map(|t| t.map(|i| w[i as usize])));
        }
    }
    out
}

impl Scene {
    /// The welded world mesh at `tolerance`, built on the first call. One
    /// profile (one tolerance) applies per report, so the first call's
    /// tolerance is the one kept; a later call with another tolerance
    /// rebuilds nothing and returns the kept mesh (its `tolerance` says which).
    ///
    /// `Err` says why it was not built: its estimated size
    /// ([`Scene::world_mesh_bytes`]) is over [`Scene::geometry_budget`].
    pub fn world_mesh(&self, tolerance: f64) -> std::result::Result<&WorldMesh, &str> {
        self.world
            .get_or_init(|| {
                let need = self.world_mesh_bytes();
                if need > self.geometry_budget {
                    return Err(format!(
                        "the scene draws {} vertices and {} triangles (with instancing); welding them would take about {} MB, over this file's geometry budget of {} MB",
                        self.vertices(),
                        self.triangles(),
                        need >> 20,
                        self.geometry_budget >> 20
                    ));
                }
                Ok(self.build_world_mesh(tolerance))
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// The estimated bytes of the welded world mesh: every instance's
    /// vertices and triangles at [`WORLD_BYTES_PER_VERTEX`] and
    /// [`WORLD_BYTES_PER_TRIANGLE`].
    pub fn world_mesh_bytes(&self) -> u64 {
        self.instances
            .iter()
            .map(|i| {
                let p = &self.primitives[i.primitive];
                (p.positions.len() as u64)
                    .saturating_mul(WORLD_BYTES_PER_VERTEX)
                    .saturating_add((p.triangles.len() as u64).saturating_mul(WORLD_BYTES_PER_TRIANGLE))
            })
            .fold(0u64, u64::saturating_add)
    }

    /// Whether [`Scene::build_world_mesh_freeing`] freed the primitives'
    /// positions and triangles.
    pub fn geometry_freed(&self) -> bool {
        self.primitives.iter().any(|p| p.freed_vertices.is_some())
    }

    /// [`Scene::world_mesh`] for a caller that will read no primitive's
    /// positions or triangles again (the engine's second phase, once the
    /// renderer and every check that reads them have run): each primitive's
    /// positions are freed once the world points are made, and its triangles
    /// once the welded triangles are, so neither is held beside the edge map
    /// (20 bytes a vertex and triangle of a large mesh). What the checks read
    /// from the unwelded corners afterwards is computed from the world
    /// points first, as [`WorldMesh::map_corners`] would give it: the
    /// degenerate flags at `tolerance` (the weld tolerance, as GEO-004 asks)
    /// and, with `regularity`, TOP-003's quality summary. Counts stay
    /// ([`Primitive::vertex_count`], `triangle_count`). Over the geometry
    /// budget, or with the mesh already built, nothing is built or freed.
    pub fn build_world_mesh_freeing(&mut self, tolerance: f64, regularity: bool) {
        if self.world.get().is_some() || self.world_mesh_bytes() > self.geometry_budget {
            return;
        }
        let (points, first_point, first_triangle, total_tris) = self.world_points();
        let mirrored: Vec<bool> = self.instances.iter().map(Instance::mirrored).collect();
        // The positions are in the points now; the triangles are taken out
        // of the primitives (a move) and freed once welded.
        let triangles: Vec<Vec<[u32; 3]>> = self
            .primitives
            .iter_mut()
            .map(|p| {
                let t = std::mem::take(&mut p.triangles);
                p.free_geometry();
                t
            })
            .collect();
        // Every triangle's corners from the points: the numbers `corners`
        // gives (the same transform of the same positions), in triangle order.
        let corners_of =
            |ii: usize, tri: [u32; 3]| wound_corners(tri, mirrored[ii], |i| points[first_point[ii] + i as usize]);
        let each = |ii: usize| &triangles[self.instances[ii].primitive];
        // Each triangle's shape once, for its degenerate flag (a window's
        // flags written in place, then packed a bit a triangle) and, with
        // `regularity`, its quality, pushed in triangle order a window at a
        // time into TOP-003's summary: no list of every quality is held
        // beside the points and triangles (8 bytes a triangle).
        let mut degenerate = crate::geom::bits::Bits::new(total_tris);
        let mut stream = regularity.then(|| QualityStream::new(total_tris));
        // A window's qualities are pushed into the summary (in order, on
        // one thread) while the next window's shapes are found on the pool.
        let (mut window, mut pushing) = (Vec::new(), Vec::new());
        let mut head = Vec::new();
        let mut done = 0;
        for ii in 0..self.instances.len() {
            for tris in each(ii).chunks(QUALITY_WINDOW) {
                head.clear();
                head.resize(tris.len(), false);
                // The flags into `head`, and the qualities into `window` when kept.
                let shapes = |head: &mut [bool], window: Option<&mut Vec<f64>>| {
                    let shapes = tris.par_iter().zip(head.par_iter_mut()).map(|(&t, flag)| {
                        let ([a, b, c], repeated) = corners_of(ii, t);
                        let s = vector::shape(a, b, c);
                        *flag = repeated || vector::degenerate_shape(&s, tolerance);
                        s.quality
                    });
                    match window {
                        Some(window) => shapes.collect_into_vec(window),
                        None => shapes.for_each(drop),
                    }
                };
                match stream.as_mut() {
                    Some(stream) => {
                        rayon::join(|| stream.extend(&pushing), || shapes(&mut head, Some(&mut window)));
                        std::mem::swap(&mut window, &mut pushing);
                    }
                    None => shapes(&mut head, None),
                }
                degenerate.write(done, &head);
                done += tris.len();
            }
        }
        if let Some(stream) = stream.as_mut() {
            stream.extend(&pushing);
        }
        drop((window, pushing, head));
        let summary = stream.map(QualityStream::finish);
        let instances = &self.instances;
        let topology = Topology::build_owned(points, tolerance, move |welded| {
            let out = welded_triangles(instances, &first_point, welded, total_tris, |p| &triangles[p]);
            // Freed before the edge map is built.
            drop(triangles);
            out
        });
        let mesh = WorldMesh {
            tolerance,
            first_triangle,
            mirrored,
            topology,
            degenerate: OnceLock::from(degenerate),
            regularity: summary,
            pairs: Default::default(),
        };
        let _ = self.world.set(Ok(mesh));
    }

    /// Every instance's points in world space, instance by instance (held
    /// only while they are welded), each instance's first point and first
    /// triangle, and the triangles drawn.
    fn world_points(&self) -> (Vec<[f64; 3]>, Vec<usize>, Vec<u32>, usize) {
        let total_points: usize = self.instances.iter().map(|i| self.primitives[i.primitive].positions.len()).sum();
        let total_tris: usize = self.instances.iter().map(|i| self.primitives[i.primitive].triangles.len()).sum();
        let mut points = Vec::with_capacity(total_points);
        let mut first_point = Vec::with_capacity(self.instances.len());
        let mut first_triangle = Vec::with_capacity(self.instances.len());
        let mut tris = 0u32;
        for inst in &self.instances {
            let prim = &self.primitives[inst.primitive];
            first_point.push(points.len());
            first_triangle.push(tris);
            let place = mat4::Placer::for_points(&inst.world, &prim.positions);
            points.par_extend(prim.positions.par_iter().map(|p| place.place(*p)));
            tris += prim.triangles.len() as u32;
        }
        (points, first_point, first_triangle, total_tris)
    }

    fn build_world_mesh(&self, tolerance: f64) -> WorldMesh {
        // The welded triangles are read from the primitives.
        let (points, first_point, first_triangle, total_tris) = self.world_points();
        let topology = Topology::build_owned(points, tolerance, |welded| {
            welded_triangles(&self.instances, &first_point, welded, total_tris, |p| &self.primitives[p].triangles)
        });
        let mirrored = self.instances.iter().map(Instance::mirrored).collect();
        WorldMesh {
            tolerance,
            first_triangle,
            mirrored,
            topology,
            degenerate: OnceLock::new(),
            regularity: None,
            pairs: Default::default(),
        }
    }

    /// Triangles drawn, counted per instance.
    pub fn triangles(&self) -> u64 {
        self.instances.iter().map(|i| self.primitives[i.primitive].triangle_count).sum()
    }
    /// Vertices drawn, counted per instance.
    pub fn vertices(&self) -> u64 {
        self.instances.iter().map(|i| self.primitives[i.primitive].vertex_count()).sum()
    }
    /// Frees every primitive's UVs, normals, tangents and colours
    /// ([`Primitive::free_surface_attributes`]): the world mesh and its
    /// checks read positions and triangles only, so a large mesh's second
    /// phase runs without them (`engine::run_checks`).
    pub fn free_surface_attributes(&mut self) {
        self.primitives.iter_mut().for_each(Primitive::free_surface_attributes);
    }
    /// Every primitive's normals, tangents and colours freed
    /// ([`Primitive::free_vertex_streams`]).
    pub fn free_vertex_streams(&mut self) {
        self.primitives.iter_mut().for_each(Primitive::free_vertex_streams);
    }
    /// The path from a scene root to `node`, root first.
    pub fn path_to(&self, node: usize) -> Vec<usize> {
        let mut path = vec![node];
        let mut at = node;
        while let Some(Some(p)) = self.parents.get(&at) {
            if path.len() > self.parents.len() {
                break;
            }
            path.push(*p);
            at = *p;
        }
        path.reverse();
        path
    }
}

/// A node's local transform.
pub fn local_matrix(node: &gltf::json::Node) -> Mat4 {
    if let Some(m) = node.matrix {
        let mut out = [0.0; 16];
        for (o, v) in out.iter_mut().zip(m) {
            *o = v as f64;
        }
        return out;
    }
    let t = node.translation.unwrap_or([0.0; 3]);
    let r = node.rotation.map(|q| q.0).unwrap_or([0.0, 0.0, 0.0, 1.0]);
    let s = node.scale.unwrap_or([1.0; 3]);
    mat4::from_trs(
        [t[0] as f64, t[1] as f64, t[2] as f64],
        [r[0] as f64, r[1] as f64, r[2] as f64, r[3] as f64],
        [s[0] as f64, s[1] as f64, s[2] as f64],
    )
}

fn child_indices(node: &gltf::json::Node) -> impl Iterator<Item = usize> + '_ {
    node.children.iter().flatten().map(|c| c.value())
}

/// World matrices of every node reachable from a parentless node (cycles and
/// second parents are ignored), for skin joints that live outside the scene.
fn all_world_matrices(root: &gltf::json::Root) -> Vec<Option<Mat4>> {
    let n = root.nodes.len();
    let mut parent: Vec<Option<usize>> = vec![None; n];
    for (i, node) in root.nodes.iter().enumerate() {
        for c in child_indices(node) {
            if c < n && parent[c].is_none() && c != i {
                parent[c] = Some(i);
            }
        }
    }
    let mut world: Vec<Option<Mat4>> = vec![None; n];
    let mut stack: Vec<(usize, Mat4)> = (0..n).filter(|&i| parent[i].is_none()).map(|i| (i, mat4::IDENTITY)).collect();
    while let Some((i, parent_world)) = stack.pop() {
        if world[i].is_some() {
            continue;
        }
        let w = mat4::mul(&parent_world, &local_matrix(&root.nodes[i]));
        world[i] = Some(w);
        for c in child_indices(&root.nodes[i]) {
            if c < n && parent[c] == Some(i) && world[c].is_none() {
                stack.push((c, w));
            }
        }
    }
    world
}

/// Coordinates beyond this many metres from the origin, reached only
/// through a skin's joint matrices, mean the skin is unusable: its
/// primitives are measured in their bind pose instead.
pub const ABSURD_SKIN_M: f64 = 1.0e6;

/// Flattens the default scene, decoding each drawn primitive once.
///
/// Faults in one part of the document leave that part out, with a note
/// naming its JSON pointer: a default scene or node that does not exist, a
/// node's mesh that does not exist, a primitive whose data cannot be read,
/// instancing that cannot be read (drawn once), a skin that yields no usable
/// pose (drawn in its bind pose). Refusing the whole file is kept for the
/// decode budget (a hostile-input limit), and for BUNDLE_INCOMPLETE when no
/// primitive could be read because the bundle lacks its files.
pub fn build(data: &DocData<'_>) -> Result<Scene> {
    let root = data.root;
    let mut scene = Scene { bounds: Aabb::empty(), geometry_budget: data.budget_total(), ..Scene::default() };
    let n = root.nodes.len();
    let roots: Vec<usize> = if root.scenes.is_empty() {
        // No scenes: draw every parentless node, as most viewers do.
        let mut has_parent = vec![false; n];
        for node in &root.nodes {
            for c in child_indices(node) {
                if c < n {
                    has_parent[c] = true;
                }
            }
        }
        if n > 0 {
            scene.notes.push(Note::new("", "the document has no scenes; every root node was measured"));
        }
        (0..n).filter(|&i| !has_parent[i]).collect()
    } else {
        let named = root.scene.map(|s| s.value());
        let idx = match named {
            Some(i) if i >= root.scenes.len() => {
                scene.notes.push(Note::new("/scene", format!("scene {i} does not exist; scene 0 was measured")));
                0
            }
            Some(i) => i,
            None => 0,
        };
        scene.scene_index = Some(idx);
        root.scenes[idx].nodes.iter().map(|n| n.value()).collect()
    };

    let mut visited = vec![false; n];
    let mut decoded: HashMap<(usize, usize), Option<usize>> = HashMap::new();
    let mut all_worlds: Option<Vec<Option<Mat4>>> = None;
    let mut stack: Vec<(usize, Option<usize>, Mat4)> = roots.iter().rev().map(|&r| (r, None, mat4::IDENTITY)).collect();
    let mut revisits = 0usize;
    let mut missing_file: Option<Error> = None;
    // Whether a skinned primitive's weights are all zero, read once each.
    let mut zero_weighted: HashMap<usize, bool> = HashMap::new();
    while let Some((i, parent, parent_world)) = stack.pop() {
        let Some(node) = root.nodes.get(i) else {
            let from = match parent {
                Some(p) => format!("/nodes/{p}/children"),
                None => scene.scene_index.map(|s| format!("/scenes/{s}/nodes")).unwrap_or_default(),
            };
            scene.notes.push(Note::new(from, format!("names node {i}, which does not exist; left out")));
            continue;
        };
        if visited[i] {
            revisits += 1;
            continue;
        }
        visited[i] = true;
        scene.nodes.push(i);
        scene.parents.insert(i, parent);
        let world = mat4::mul(&parent_world, &local_matrix(node));
        for c in child_indices(node).collect::<Vec<_>>().into_iter().rev() {
            stack.push((c, Some(i), world));
        }
        let Some(mesh_idx) = node.mesh.map(|m| m.value()) else { continue };
        let Some(mesh) = root.meshes.get(mesh_idx) else {
            scene.notes.push(Note::new(
                format!("/nodes/{i}/mesh"),
                format!("names mesh {mesh_idx}, which does not exist; the node was measured without it"),
            ));
            continue;
        };
        if let Some(why) = data.unreadable(|| format!("/meshes/{mesh_idx}")) {
            unread(&mut scene, format!("/meshes/{mesh_idx}"), &Error::malformed(why));
            continue;
        }
        // Skinned meshes ignore their node's transform; in the default pose
        // the first joint's world matrix times its inverse bind matrix places
        // them. Read once per node; judged per primitive below.
        let skin = match node.skin.map(|s| s.value()) {
            Some(s) => {
                let worlds = all_worlds.get_or_insert_with(|| all_world_matrices(root));
                match skin_bind_world(data, s, worlds) {
                    Err(e) if e.is_decode_budget() => return Err(e),
                    bind => Some((s, bind)),
                }
            }
            None => None,
        };
        let instancing = match node
            .extensions
            .as_ref()
            .and_then(|e| e.others.get("EXT_mesh_gpu_instancing"))
            .map(|ext| read_instancing(data, i, ext))
            .transpose()
        {
            Ok(list) => list,
            Err(e) if e.is_decode_budget() => return Err(e),
            Err(e) => {
                scene.notes.push(Note::new(
                    format!("/nodes/{i}/extensions/EXT_mesh_gpu_instancing"),
                    format!("cannot be read ({}); the mesh was measured once, without instancing", e.message),
                ));
                None
            }
        };
        for p in 0..mesh.primitives.len() {
            let prim_id = match decoded.get(&(mesh_idx, p)) {
                Some(&id) => id,
                None => {
                    let id = match decode_primitive(data, mesh_idx, p) {
                        Ok(prim) => {
                            scene.primitives.push(prim);
                            Some(scene.primitives.len() - 1)
                        }
                        Err(e) if e.is_decode_budget() => return Err(e),
                        Err(e) => {
                            if e.code == ErrorCode::BundleIncomplete && missing_file.is_none() {
                                missing_file = Some(e.clone());
                            }
                            unread(&mut scene, format!("/meshes/{mesh_idx}/primitives/{p}"), &e);
                            None
                        }
                    };
                    decoded.insert((mesh_idx, p), id);
                    id
                }
            };
            let Some(prim_id) = prim_id else { continue };
            let draw_world = match &skin {
                Some((s, bind)) => {
                    let prim = &scene.primitives[prim_id];
                    let zero = *zero_weighted.entry(prim_id).or_insert_with(|| zero_weights(data, prim));
                    match skin_pose(*s, bind, prim, zero) {
                        Ok(Some(m)) => m,
                        Ok(None) => world,
                        Err(e) => {
                            scene.notes.push(Note::new(
                                format!("/nodes/{i}/skin"),
                                format!(
                                    "{}; /meshes/{mesh_idx}/primitives/{p} was measured in its bind pose",
                                    e.message
                                ),
                            ));
                            world
                        }
                    }
                }
                None => world,
            };
            scene.draw_calls += 1;
            let drawn = instancing.as_ref().map_or(1, Vec::len) as u64;
            data.charge_with(drawn.saturating_mul(std::mem::size_of::<Instance>() as u64), || {
                format!("node {i}'s {drawn} drawn instances of /meshes/{mesh_idx}/primitives/{p}")
            })?;
            let local_bounds = scene.primitives[prim_id].bounds;
            match &instancing {
                Some(list) => {
                    for (k, m) in list.iter().enumerate() {
                        let w = mat4::mul(&draw_world, m);
                        scene.bounds.union(&local_bounds.transformed(&w));
                        scene.instances.push(Instance {
                            primitive: prim_id,
                            node: i,
                            world: w,
                            gpu_instance: Some(k as u32),
                            instance_matrix: Some(*m),
                        });
                    }
                }
                None => {
                    scene.bounds.union(&local_bounds.transformed(&draw_world));
                    scene.instances.push(Instance {
                        primitive: prim_id,
                        node: i,
                        world: draw_world,
                        gpu_instance: None,
                        instance_matrix: None,
                    });
                }
            }
        }
    }
    if let Some(e) = missing_file
        && scene.primitives.is_empty()
    {
        // Nothing could be measured because the bundle lacks its files.
        return Err(e);
    }
    if revisits > 0 {
        scene.notes.push(Note::new(
            "",
            format!("{revisits} node references were reached twice (a cycle or a shared child) and were measured once"),
        ));
    }
    let invalid: u64 = scene.primitives.iter().map(|p| p.invalid_triangles).sum();
    if invalid > 0 {
        scene.notes.push(Note::new(
            "",
            format!("{invalid} triangles name vertices that do not exist and were left out of geometry measurements"),
        ));
    }
    Ok(scene)
}

/// Records geometry at `pointer` that could not be read.
fn unread(scene: &mut Scene, pointer: String, e: &Error) {
    let note = Note::new(pointer, format!("cannot be read ({}); left out of every measurement", e.message));
    scene.notes.push(note.clone());
    scene.unread.push(note);
}

/// The matrix that places a skinned primitive in its default pose: the
/// first joint's world matrix times its inverse bind matrix. `Ok(None)`
/// when the skin has no usable joint (the node's own transform is used);
/// an error saying why when the pose is unusable: a matrix that is not
/// finite or is singular, every vertex weighted zero, or a pose that moves
/// the primitive beyond [`ABSURD_SKIN_M`] metres.
fn skin_pose(skin: usize, bind: &Result<Option<Mat4>>, prim: &Primitive, zero_weights: bool) -> Result<Option<Mat4>> {
    let bad =
        |why: String| Error::malformed(why).with_detail(serde_json::json!({ "pointer": format!("/skins/{skin}") }));
    let m = match bind {
        Ok(Some(m)) => *m,
        Ok(None) => return Ok(None),
        Err(e) => return Err(e.clone()),
    };
    if m.iter().any(|v| !v.is_finite()) {
        return Err(bad(format!("skin {skin}'s joint matrix is not finite")));
    }
    let det = mat4::det3(&m);
    if !det.is_finite() || det.abs() < 1e-12 {
        return Err(bad(format!("skin {skin}'s joint matrix is singular (determinant {det:e})")));
    }
    if zero_weights {
        return Err(bad(format!(
            "every vertex of /meshes/{}/primitives/{} has zero skin weights",
            prim.mesh, prim.index
        )));
    }
    let local = prim.bounds;
    let moved = local.transformed(&m);
    let far = |b: &Aabb| b.min.iter().chain(&b.max).any(|c| !c.is_finite() || c.abs() > ABSURD_SKIN_M);
    if !local.is_empty() && !far(&local) && far(&moved) {
        return Err(bad(format!(
            "skin {skin}'s joint matrices move the primitive beyond {ABSURD_SKIN_M:e} m from the origin"
        )));
    }
    Ok(Some(m))
}

fn skin_bind_world(data: &DocData<'_>, skin: usize, worlds: &[Option<Mat4>]) -> Result<Option<Mat4>> {
    let Some(skin) = data.root.skins.get(skin) else { return Ok(None) };
    let Some(joint) = skin.joints.first().map(|j| j.value()) else { return Ok(None) };
    let Some(Some(joint_world)) = worlds.get(joint) else { return Ok(None) };
    let ibm = match skin.inverse_bind_matrices.map(|a| a.value()) {
        Some(acc) => {
            let m = data.read_floats(acc, 16)?;
            if m.len() < 16 {
                return Ok(None);
            }
            let mut out = [0.0; 16];
            for (o, v) in out.iter_mut().zip(&m[..16]) {
                *o = *v as f64;
            }
            out
        }
        None => mat4::IDENTITY,
    };
    Ok(Some(mat4::mul(joint_world, &ibm)))
}

fn read_instancing(data: &DocData<'_>, node: usize, ext: &serde_json::Value) -> Result<Vec<Mat4>> {
    let attrs = ext.get("attributes").and_then(|a| a.as_object());
    let get = |k: &str, comps: usize| -> Result<Option<Vec<f32>>> {
        match attrs.and_then(|a| a.get(k)).and_then(|v| v.as_u64()) {
            Some(acc) => data.read_floats(acc as usize, comps).map(Some),
            None => Ok(None),
        }
    };
    let t = get("TRANSLATION", 3)?;
    let r = get("ROTATION", 4)?;
    let s = get("SCALE", 3)?;
    let counts: Vec<usize> =
        [t.as_ref().map(|v| v.len() / 3), r.as_ref().map(|v| v.len() / 4), s.as_ref().map(|v| v.len() / 3)]
            .into_iter()
            .flatten()
            .collect();
    let Some(&count) = counts.iter().min() else {
        return Err(Error::malformed(format!("node {node}: EXT_mesh_gpu_instancing has no attributes")));
    };
    if counts.iter().any(|&c| c != count) {
        return Err(Error::malformed(format!("node {node}: EXT_mesh_gpu_instancing attributes have different counts")));
    }
    data.charge_with((count as u64).saturating_mul(std::mem::size_of::<Mat4>() as u64), || {
        format!("node {node}'s {count} EXT_mesh_gpu_instancing transforms")
    })?;
    Ok((0..count)
        .map(|k| {
            let tv = t.as_ref().map_or([0.0; 3], |v| [v[3 * k] as f64, v[3 * k + 1] as f64, v[3 * k + 2] as f64]);
            let rv = r.as_ref().map_or([0.0, 0.0, 0.0, 1.0], |v| {
                [v[4 * k] as f64, v[4 * k + 1] as f64, v[4 * k + 2] as f64, v[4 * k + 3] as f64]
            });
            let sv = s.as_ref().map_or([1.0; 3], |v| [v[3 * k] as f64, v[3 * k + 1] as f64, v[3 * k + 2] as f64]);
            mat4::from_trs(tv, rv, sv)
        })
        .collect())
}

/// Moves positions to the mesh's default pose: each morph target's POSITION
/// displacement times the mesh's default `weights` (glTF 2.0, 3.7.2.2).
/// Targets whose length does not match the primitive's are left out (the
/// validator reports them).
fn apply_default_morph(
    data: &DocData<'_>,
    mesh: usize,
    json: &gltf::json::mesh::Primitive,
    positions: &mut [[f32; 3]],
) -> Result<()> {
    let (Some(targets), Some(weights)) = (&json.targets, &data.root.meshes[mesh].weights) else { return Ok(()) };
    for (target, &w) in targets.iter().zip(weights) {
        let Some(acc) = target.positions else { continue };
        if w == 0.0 || !w.is_finite() {
            continue;
        }
        let delta = data.read_vecs::<3>(acc.value())?;
        if delta.len() != positions.len() {
            continue;
        }
        for (p, d) in positions.iter_mut().zip(&delta) {
            for (c, dc) in p.iter_mut().zip(d) {
                *c += w * dc;
            }
        }
    }
    Ok(())
}

fn uv_set(semantic: &Checked<gltf::json::mesh::Semantic>) -> Option<usize> {
    match semantic {
        Checked::Valid(gltf::json::mesh::Semantic::TexCoords(n)) if (*n as usize) < MAX_UV_SETS => Some(*n as usize),
        _ => None,
    }
}

/// Reads the attributes only the renderer uses (NORMAL, TANGENT, COLOR_0).
/// They are optional to every check, so one that cannot be read, or whose
/// length differs from POSITION's, is left out (SPEC-001 reports why)
/// rather than failing the load.
fn read_draw_attributes(data: &DocData<'_>, json: &gltf::json::mesh::Primitive, prim: &mut Primitive) {
    use gltf::json::mesh::Semantic;
    let n = prim.positions.len();
    let get = |semantic: Semantic| json.attributes.get(&Checked::Valid(semantic)).map(|a| a.value());
    prim.normals = get(Semantic::Normals).and_then(|a| data.read_vecs::<3>(a).ok()).filter(|v| v.len() == n);
    prim.tangents = get(Semantic::Tangents).and_then(|a| data.read_vecs::<4>(a).ok()).filter(|v| v.len() == n);
    prim.colors = get(Semantic::Colors(0))
        .and_then(|a| {
            let components = data.root.accessors.get(a).map(|acc| match acc.type_ {
                Checked::Valid(gltf::json::accessor::Type::Vec3) => 3,
                _ => 4,
            })?;
            let flat = data.read_floats(a, components).ok()?;
            Some(if components == 3 {
                flat.chunks_exact(3).map(|c| [c[0], c[1], c[2], 1.0]).collect()
            } else {
                super::data::arrays(flat)
            })
        })
        .filter(|v: &Vec<[f32; 4]>| v.len() == n);
}

/// Whether the primitive's WEIGHTS_0 is readable and zero for every vertex
/// (skinning would collapse it).
fn zero_weights(data: &DocData<'_>, prim: &Primitive) -> bool {
    let json = &data.root.meshes[prim.mesh].primitives[prim.index];
    let vertices = prim.positions.len();
    let Some(acc) = json.attributes.get(&Checked::Valid(gltf::json::mesh::Semantic::Weights(0))) else {
        return false;
    };
    if json.attributes.contains_key(&Checked::Valid(gltf::json::mesh::Semantic::Weights(1))) {
        return false;
    }
    match data.read_floats(acc.value(), 4) {
        Ok(w) => vertices > 0 && w.len() == vertices * 4 && w.iter().all(|&x| x == 0.0),
        Err(_) => false,
    }
}

fn decode_primitive(data: &DocData<'_>, mesh: usize, index: usize) -> Result<Primitive> {
    if let Some(why) = data.unreadable(|| format!("/meshes/{mesh}/primitives/{index}")) {
        return Err(Error::malformed(why));
    }
    let json = &data.root.meshes[mesh].primitives[index];
    let mode = match json.mode {
        Checked::Valid(m) => m.as_gl_enum(),
        Checked::Invalid => return Err(Error::malformed(format!("mesh {mesh} primitive {index} has an invalid mode"))),
    };
    if !json.attributes.contains_key(&Checked::Valid(gltf::json::mesh::Semantic::Positions))
        && json.extensions.as_ref().and_then(|e| e.others.get("KHR_draco_mesh_compression")).is_none()
    {
        return Err(Error::malformed(format!("mesh {mesh} primitive {index} has no POSITION attribute")));
    }
    let mut prim = Primitive {
        mesh,
        index,
        mode,
        material: json.material.map(|m| m.value()),
        bounds: Aabb::empty(),
        ..Primitive::default()
    };
    prim.uvs = vec![None; MAX_UV_SETS];
    let draco = json.extensions.as_ref().and_then(|e| e.others.get("KHR_draco_mesh_compression"));
    if let Some(ext) = draco {
        super::draco::decode(data, mesh, index, ext, &mut prim)?;
    } else {
        if let Some(acc) = json.attributes.get(&Checked::Valid(gltf::json::mesh::Semantic::Positions)) {
            prim.positions = data.read_vecs::<3>(acc.value())?;
        }
        apply_default_morph(data, mesh, json, &mut prim.positions)?;
        for (semantic, acc) in &json.attributes {
            if let Some(set) = uv_set(semantic) {
                prim.uvs[set] = Some(data.read_vecs::<2>(acc.value())?);
            }
        }
        read_draw_attributes(data, json, &mut prim);
        let indices = json.indices.map(|i| data.read_indices(i.value())).transpose()?;
        let n = indices.as_ref().map_or(prim.positions.len(), Vec::len);
        prim.triangle_count = topology::triangle_count(mode, n) as u64;
        let vertex_count = prim.positions.len();
        let (tris, dropped) = match (mode, indices) {
            // The common case: an indexed triangle list, regrouped in place.
            (4, Some(ix)) => topology::triangle_list(ix, vertex_count),
            (_, ix) => topology::assemble(mode, ix.as_deref(), n, vertex_count),
        };
        prim.invalid_triangles = dropped as u64;
        prim.triangles = tris;
    }
    while prim.uvs.last().is_some_and(Option::is_none) {
        prim.uvs.pop();
    }
    for p in &prim.positions {
        prim.bounds.add([p[0] as f64, p[1] as f64, p[2] as f64]);
    }
    Ok(prim)
}
