//! The edge map of a welded mesh and what follows from it ([`Topology`]):
//! edges with the triangles using them, boundary edges and loops, shells
//! (edge-connected components, by union-find) and winding (per manifold
//! patch: by parity over manifold edges, [`super::winding`], or a
//! breadth-first walk where a patch cannot be wound consistently).
//!
//! Collapsed triangles (a repeated welded index) are left out of the edge
//! map. Edges are found by a counting sort on their smaller vertex and a
//! small sort per bucket (the order of sorting every 64-bit edge key).
//! Results do not depend on triangle or vertex order.

use super::hash::FxMap;
use super::labels::ShellLabels;
use super::vector::normal;
use super::vertices::Vertices;
use super::weld::{Welded, weld_report};
use crate::geom::parts::{self, parts_for, split_by_lengths};
use crate::geom::unionfind::{SharedUnionFind, UnionFind};
use rayon::prelude::*;
use std::sync::atomic::Ordering::Relaxed;

/// An undirected edge key: the two welded vertex indices, smaller first.
#[inline]
pub fn edge_key(a: u32, b: u32) -> u64 {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    ((lo as u64) << 32) | hi as u64
}

/// A triangle's three directed edges, in its corners' order.
#[inline]
fn directed(t: [u32; 3]) -> [(u32, u32); 3] {
    [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])]
}

/// Whether a triangle in welded indices collapsed: two of its corners are
/// one welded vertex.
#[inline]
pub fn is_collapsed(t: [u32; 3]) -> bool {
    t[0] == t[1] || t[1] == t[2] || t[0] == t[2]
}

/// One edge of the welded mesh and the triangles using it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// Smaller welded vertex index.
    pub a: u32,
    /// Larger welded vertex index.
    pub b: u32,
    /// Index into `Topology::edge_faces` of the first face using it.
    pub start: u32,
    /// How many faces use it (1 = boundary, 2 = manifold, 3+ = non-manifold).
    pub count: u32,
}

/// The open edges of a welded mesh ([`Topology::open_edges`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenEdges {
    /// The boundary edges (used by exactly one triangle), as indices into
    /// the edge map, ascending: 4 bytes each, where an open mesh (a
    /// triangle soup, cards of foliage) has three a triangle.
    pub boundary: Vec<u32>,
    /// How many edges more than two triangles use.
    pub non_manifold: u64,
}

/// Connected components of the graph of `boundary` edges.
fn loops_of(boundary: impl Iterator<Item = Edge>) -> usize {
    let mut ids: FxMap<u32, u32> = FxMap::default();
    let mut pairs = Vec::new();
    for e in boundary {
        let n = ids.len() as u32;
        let a = *ids.entry(e.a).or_insert(n);
        let n = ids.len() as u32;
        let b = *ids.entry(e.b).or_insert(n);
        pairs.push((a, b));
    }
    let mut uf = UnionFind::new(ids.len());
    pairs.iter().for_each(|&(a, b)| {
        uf.union(a, b);
    });
    uf.labels().1
}

/// One face of an edge: a triangle and whether it walks the edge from `a`
/// to `b`, packed in 4 bytes (triangle << 1 | forward; the edge map holds
/// fewer than 2^31 triangles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub struct Face(u32);

impl Face {
    /// The triangle.
    #[inline]
    pub fn tri(self) -> u32 {
        self.0 >> 1
    }
    /// Whether the triangle walks the edge from `a` to `b`.
    #[inline]
    pub fn forward(self) -> bool {
        self.0 & 1 == 1
    }

    /// Faces as their numbers, to be written through
    /// [`parts::shared_u32s`].
    fn as_u32s(faces: &mut [Face]) -> &mut [u32] {
        // SAFETY: Face is a transparent u32, so a slice of faces is a slice
        // of u32 of the same length; the borrow is passed on.
        unsafe { std::slice::from_raw_parts_mut(faces.as_mut_ptr().cast::<u32>(), faces.len()) }
    }
}

/// The edges of a welded mesh, sorted by key, in 8 bytes each and 4 a
/// vertex: an edge's smaller vertex is not stored but read from the index
/// of every vertex's first edge (its edges are a run, the edges being
/// sorted by it), and its face count is the distance to the next edge's
/// first face. Read as [`Edge`] values.
#[derive(Debug, Clone, Default)]
pub struct Edges {
    /// The index of the first edge of every smaller vertex `0..nv`, and
    /// the edge count last (`nv + 1` entries).
    first: Vec<u32>,
    /// The larger vertex of every edge.
    larger: Vec<u32>,
    /// The first face of every edge, in `Topology::edge_faces`.
    start: Vec<u32>,
    /// Faces of all edges (the end of the last edge's).
    faces: u32,
}

impl Edges {
    /// Number of edges.
    pub fn len(&self) -> usize {
        self.start.len()
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }
    /// The smaller vertex of edge `i` (a binary search of the first edges).
    #[inline]
    fn smaller(&self, i: usize) -> u32 {
        (self.first.partition_point(|&f| f as usize <= i) - 1) as u32
    }
    /// Edge `i`'s faces, as indices into `Topology::edge_faces` (its
    /// smaller vertex is not needed for them).
    #[inline]
    pub fn span(&self, i: usize) -> std::ops::Range<usize> {
        let start = self.start[i];
        let end = self.start.get(i + 1).map_or(self.faces, |&n| n);
        start as usize..end as usize
    }
    /// Edge `i`, given its smaller vertex `a`.
    #[inline]
    fn edge(&self, a: u32, i: usize) -> Edge {
        let (b, start) = (self.larger[i], self.start[i]);
        let end = self.start.get(i + 1).map_or(self.faces, |&n| n);
        Edge { a, b, start, count: end - start }
    }
    /// Every edge, in order.
    pub fn iter(&self) -> EdgeIter<'_> {
        self.range(0..self.len())
    }
    /// The edges `range`, in order (one binary search for the first).
    pub fn range(&self, range: std::ops::Range<usize>) -> EdgeIter<'_> {
        let a = if range.start < range.end { self.smaller(range.start) } else { 0 };
        EdgeIter { edges: self, next: range.start, end: range.end, a }
    }
    /// The edges `indices` (ascending), in order: their smaller vertex
    /// walked along with them, as [`EdgeIter`] walks it, rather than found
    /// by halves for each.
    pub fn ascending<'a>(&'a self, indices: &'a [u32]) -> impl Iterator<Item = Edge> + 'a {
        let mut a = indices.first().map_or(0, |&i| self.smaller(i as usize));
        indices.iter().map(move |&i| {
            a = self.smaller_from(a, i as usize);
            self.edge(a, i as usize)
        })
    }
    /// The smaller vertex of edge `i`, walked forward from `a`, that of an
    /// earlier edge (or a vertex below it): what [`EdgeIter`] and
    /// [`Edges::ascending`] read edges in order with.
    #[inline(always)]
    fn smaller_from(&self, mut a: u32, i: usize) -> u32 {
        while self.first[a as usize + 1] as usize <= i {
            a += 1;
        }
        a
    }
    /// The index of the first edge of every smaller vertex `0..nv`, and
    /// the edge count last (`nv + 1` entries): vertex `a`'s edges are
    /// `first[a]..first[a + 1]`, sorted by their larger vertex.
    pub fn first_edges(&self) -> &[u32] {
        &self.first
    }
    /// The index of the edge between `u` and `v`, found among the smaller
    /// one's edges: read in order up to [`SCANNED_EDGES`] of them (a real
    /// mesh's vertex has a handful; a binary search over so few cost GEO-008
    /// 70-72 ms on s13 against 47-50), by halves beyond (a cone's apex
    /// with thousands stays a logarithmic look-up).
    ///
    /// # Panics
    ///
    /// When there is no such edge.
    pub fn find(&self, u: u32, v: u32) -> usize {
        let (lo, hi) = (u.min(v), u.max(v));
        let from = self.first[lo as usize] as usize;
        let bucket = &self.larger[from..self.first[lo as usize + 1] as usize];
        let at = if bucket.len() <= SCANNED_EDGES {
            bucket.iter().position(|&x| x == hi)
        } else {
            bucket.binary_search(&hi).ok()
        };
        from + at.expect("the edge is in the map")
    }
}

/// The most edges of one smaller vertex [`Edges::find`] reads in order
/// rather than by halves.
pub const SCANNED_EDGES: usize = 16;

impl<'a> IntoIterator for &'a Edges {
    type Item = Edge;
    type IntoIter = EdgeIter<'a>;
    fn into_iter(self) -> EdgeIter<'a> {
        self.iter()
    }
}

/// [`Edges::iter`] and [`Edges::range`]: edges in order, read as [`Edge`]
/// values (a plain struct, so that loops over millions of edges inline
/// `next`), the smaller vertex walked along with them.
#[derive(Debug, Clone)]
pub struct EdgeIter<'a> {
    edges: &'a Edges,
    next: usize,
    end: usize,
    /// The smaller vertex of edge `next`, or one before it.
    a: u32,
}

impl Iterator for EdgeIter<'_> {
    type Item = Edge;
    #[inline]
    fn next(&mut self) -> Option<Edge> {
        if self.next >= self.end {
            return None;
        }
        self.a = self.edges.smaller_from(self.a, self.next);
        let e = self.edges.edge(self.a, self.next);
        self.next += 1;
        Some(e)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.end - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for EdgeIter<'_> {}

/// The welded mesh and everything derived from its edge map.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    /// Welded vertex positions (the first point of each welded group), in
    /// 12 bytes a vertex where `f32` holds them exactly.
    pub vertices: Vertices,
    /// Every input triangle, in welded indices (collapsed ones included).
    pub triangles: Vec<[u32; 3]>,
    /// Triangles that did not collapse ([`is_collapsed`]): collapsed ones
    /// are left out of the edge map, shells and winding. Whether one
    /// triangle collapsed is read off its welded indices
    /// ([`Topology::collapsed`]), not held in an array (a byte a
    /// triangle, beside a large mesh's checks).
    live_triangles: usize,
    /// Edges sorted by key.
    pub edges: Edges,
    /// Faces of each edge (see [`Edge::start`]).
    pub edge_faces: Vec<Face>,
    /// Shell (edge-connected component) of each triangle;
    /// [`ShellLabels::NONE`] for collapsed ones. 2 bytes a triangle below
    /// 65,535 shells.
    pub shell: ShellLabels,
    /// Number of shells.
    pub shell_count: usize,
    /// The triangles that disagree with their majority winding (see
    /// [`Topology::flipped_faces`]), found when the mesh is built: the
    /// per-triangle windings and patches they come from are not kept.
    flipped: Vec<u32>,
    /// Whether the weld was exact (see [`Welded::exact`]).
    pub exact_weld: bool,
    /// [`Topology::non_manifold_vertices`], found once (the engine finds
    /// them beside TOP-001's and TOP-004's walk, before the checks run).
    non_manifold: std::sync::OnceLock<Vec<u32>>,
}

impl Topology {
    /// Frees the mesh in two halves side by side on the thread pool: its
    /// vertices, triangles and shells beside its edge map and faces, each
    /// about half its memory. At a large mesh's end these are tens of
    /// megabytes of pages handed back to the kernel (s13: 4-6 ms on one
    /// core, where the other had nothing left to run). A mesh of fewer
    /// than [`parts::PARALLEL_FROM`] triangles is freed as it is.
    pub fn free_in_halves(self) {
        if self.triangles.len() < parts::PARALLEL_FROM {
            return;
        }
        let Topology { vertices, triangles, shell, edges, edge_faces, flipped, non_manifold, .. } = self;
        rayon::join(
            move || drop((vertices, triangles, shell)),
            move || drop((edges, edge_faces, flipped, non_manifold)),
        );
    }

    /// Welds `points` at `tol` and builds the edge map, shells and winding
    /// for `triangles` (indices into `points`).
    pub fn build(points: &[[f64; 3]], triangles: &[[u32; 3]], tol: f64) -> Topology {
        let (vertices, remap, exact) = welded_vertices(points, tol);
        let tris: Vec<[u32; 3]> =
            triangles.iter().map(|t| [remap[t[0] as usize], remap[t[1] as usize], remap[t[2] as usize]]).collect();
        drop(remap);
        let mut topo = Topology::from_welded(vertices, tris);
        topo.exact_weld = exact;
        topo
    }

    /// [`Topology::build`] for a caller that owns its points and need not
    /// keep them: they are freed once welded, before the edge map is built,
    /// and the welded triangles come from `triangles`, given the welded
    /// index of every point. (The caller never holds its triangles over
    /// point indices: the world mesh reads them through its instances.)
    pub fn build_owned(points: Vec<[f64; 3]>, tol: f64, triangles: impl FnOnce(&[u32]) -> Vec<[u32; 3]>) -> Topology {
        let (vertices, remap, exact) = welded_vertices(&points, tol);
        drop(points);
        let tris = triangles(&remap);
        drop(remap);
        let mut topo = Topology::from_welded(vertices, tris);
        topo.exact_weld = exact;
        topo
    }

    /// Builds the edge map, shells and winding for already-welded triangles.
    pub fn from_welded(vertices: Vertices, triangles: Vec<[u32; 3]>) -> Topology {
        // Directed edges bucketed by their smaller vertex (a counting sort,
        // linear), then each small bucket sorted by (larger vertex, triangle):
        // the same order as sorting every edge key, at a fraction of the cost.
        let nv = vertices.len();
        let (offset, mut hi, mut edge_faces, live_triangles) = bucket_edges(&triangles, nv, parts_for(triangles.len()));
        // Buckets are sorted by (larger vertex, face) and read in chunks of
        // vertices on the thread pool. An edge's faces are its bucket
        // entries in order, so an edge starts at its entries' position: every
        // chunk knows its edges' starts, and the result is the sequential one.
        const CHUNK: usize = 4096;
        let starts: Vec<usize> = (0..nv).step_by(CHUNK).collect();
        // Each chunk's vertices, and its directed edges (both passes below
        // split by them).
        let vertices_of = || starts.iter().map(|&s| s..(s + CHUNK).min(nv));
        let directed_of = || vertices_of().map(|v| (offset[v.end] - offset[v.start]) as usize);
        let parts: Vec<_> = starts
            .iter()
            .zip(split_by_lengths(&mut hi, directed_of()))
            .zip(split_by_lengths(&mut edge_faces, directed_of()))
            .collect();
        parts.into_par_iter().for_each(|((&s, part_hi), part_faces)| {
            let base = offset[s];
            let mut scratch: Vec<u64> = Vec::new();
            for lo in s..(s + CHUNK).min(nv) {
                let range = (offset[lo] - base) as usize..(offset[lo + 1] - base) as usize;
                if range.len() < 2 {
                    continue;
                }
                scratch.clear();
                scratch.extend(
                    part_hi[range.clone()]
                        .iter()
                        .zip(&part_faces[range.clone()])
                        .map(|(&h, f)| ((h as u64) << 32) | f.0 as u64),
                );
                scratch.sort_unstable();
                for ((h, f), &k) in part_hi[range.clone()].iter_mut().zip(&mut part_faces[range]).zip(&scratch) {
                    *h = (k >> 32) as u32;
                    *f = Face(k as u32);
                }
            }
        });
        // Edges are runs of equal larger vertices within a bucket. Each
        // chunk of buckets counts its edges, then (on the thread pool)
        // writes their starts and its buckets' first edges into slices of
        // their own, and its edges' larger vertices over its own part of
        // `hi` as it reads it (edge k of a chunk starts at its directed edge
        // k or later, so the write never passes the read). The chunks'
        // edges are then moved down to follow each other, in order (a
        // chunk's edges end where the next chunk's go, never past where the
        // next chunk's directed edges begin). The edge list is never held
        // beside a second copy of the directed edges.
        let chunk_edges: Vec<usize> = starts
            .par_iter()
            .map(|&s| {
                let (hi, offset) = (&hi, &offset);
                let mut n = 0;
                for lo in s..(s + CHUNK).min(nv) {
                    let run = &hi[offset[lo] as usize..offset[lo + 1] as usize];
                    n += run.iter().zip(run.iter().skip(1)).filter(|(x, y)| x != y).count()
                        + usize::from(!run.is_empty());
                }
                n
            })
            .collect();
        let edge_count: usize = chunk_edges.iter().sum();
        let mut edge_start = vec![0u32; edge_count];
        let mut first = vec![0u32; nv + 1];
        {
            // Each chunk's directed edges, its edges, and its vertices' first edges.
            let his = split_by_lengths(&mut hi, directed_of());
            let edge_starts = split_by_lengths(&mut edge_start, chunk_edges.iter().copied());
            let firsts = split_by_lengths(&mut first[1..], vertices_of().map(|v| v.len()));
            let befores = chunk_edges.iter().scan(0usize, |before, &n| {
                *before += n;
                Some(*before - n)
            });
            let jobs: Vec<_> = starts
                .iter()
                .zip(befores)
                .zip(his)
                .zip(edge_starts)
                .zip(firsts)
                .map(|((((&s, before), hi), start), first)| (s, before, hi, start, first))
                .collect();
            jobs.into_par_iter().for_each(|(s, before, part_hi, part_start, part_first)| {
                let base = offset[s] as usize;
                let mut k = 0usize;
                for (lo, first) in (s..).zip(part_first.iter_mut()) {
                    let (mut i, to) = (offset[lo] as usize - base, offset[lo + 1] as usize - base);
                    while i < to {
                        let (h, start) = (part_hi[i], i);
                        while i < to && part_hi[i] == h {
                            i += 1;
                        }
                        part_hi[k] = h;
                        part_start[k] = (base + start) as u32;
                        k += 1;
                    }
                    *first = (before + k) as u32;
                }
            });
        }
        let mut k = 0usize;
        for (&s, &n) in starts.iter().zip(&chunk_edges) {
            let from = offset[s] as usize;
            hi.copy_within(from..from + n, k);
            k += n;
        }
        debug_assert_eq!(k, edge_count);
        hi.truncate(k);
        hi.shrink_to_fit();
        drop(offset);
        let edges = Edges { first, larger: hi, start: edge_start, faces: edge_faces.len() as u32 };
        // Shells and winding are independent: they run side by side.
        let ((shell, shell_count), flipped) =
            rayon::join(|| shells(&triangles, &edges, &edge_faces), || winding(&triangles, &edges, &edge_faces));
        Topology {
            vertices,
            triangles,
            live_triangles,
            edges,
            edge_faces,
            shell,
            shell_count,
            flipped,
            exact_weld: true,
            non_manifold: std::sync::OnceLock::new(),
        }
    }

    /// Whether triangle `t` collapsed ([`is_collapsed`]).
    #[inline]
    pub fn collapsed(&self, t: usize) -> bool {
        is_collapsed(self.triangles[t])
    }

    /// Triangles that did not collapse: those in the edge map.
    pub fn live_triangles(&self) -> usize {
        self.live_triangles
    }

    /// Faces of an edge.
    pub fn faces(&self, e: Edge) -> &[Face] {
        &self.edge_faces[e.start as usize..(e.start + e.count) as usize]
    }

    /// Faces of edge `i` (without reading its smaller vertex).
    #[inline]
    pub fn faces_of(&self, i: usize) -> &[Face] {
        &self.edge_faces[self.edges.span(i)]
    }

    /// Edges used by exactly one triangle.
    pub fn boundary_edges(&self) -> impl Iterator<Item = Edge> + '_ {
        self.edges.iter().filter(|e| e.count == 1)
    }

    /// Number of boundary loops: connected components of the boundary-edge graph.
    pub fn boundary_loops(&self) -> usize {
        loops_of(self.boundary_edges())
    }

    /// The boundary edges and the count of non-manifold ones, in one pass
    /// over the edge map, in parts on the pool: what GEO-002 reads of it.
    /// It took three passes on one thread (the boundary's faces, the
    /// non-manifold count, the loops), 7 ms on s13's 1.95M edges, alone at
    /// the end of the checks (BENCHMARKS.md, "Fortieth step").
    pub fn open_edges(&self) -> OpenEdges {
        let found = parts::map(self.edges.len(), |range| {
            let (mut boundary, mut non_manifold) = (Vec::new(), 0u64);
            for i in range {
                match self.edges.span(i).len() {
                    1 => boundary.push(i as u32),
                    c if c > 2 => non_manifold += 1,
                    _ => {}
                }
            }
            (boundary, non_manifold)
        });
        let non_manifold = found.iter().map(|(_, k)| k).sum();
        let boundary = found.into_iter().flat_map(|(b, _)| b).collect();
        OpenEdges { boundary, non_manifold }
    }

    /// [`Topology::boundary_loops`] of the boundary edges `open` lists.
    pub fn loops_of_open(&self, open: &OpenEdges) -> usize {
        loops_of(self.edges.ascending(&open.boundary))
    }

    /// Triangles that disagree with their majority winding: per manifold
    /// patch (the part of a shell whose windings can be compared across
    /// manifold edges), the smaller of the two orientation classes. For a
    /// shell that is one patch, that is its shell's majority.
    pub fn flipped_faces(&self) -> &[u32] {
        &self.flipped
    }

    /// Triangles in each shell.
    pub fn shell_sizes(&self) -> Vec<u64> {
        let mut sizes = vec![0u64; self.shell_count];
        for s in self.shell.iter() {
            if s != ShellLabels::NONE {
                sizes[s as usize] += 1;
            }
        }
        sizes
    }

    /// Non-manifold (bow-tie) vertices: welded vertices whose triangles
    /// (collapsed ones left out) form more than one fan, two triangles at a
    /// vertex being in one fan when they are joined, directly or through
    /// others at the same vertex, across edges that end at that vertex (any
    /// shared edge, manifold or not). Ascending vertex indices.
    ///
    /// Vertex by vertex, on the thread pool: from one of its triangles, the
    /// fan is walked across the vertex's edges (found in the edge map) and
    /// its triangles counted; the vertex is non-manifold when the walk
    /// reaches fewer than all of them. Where every edge at the vertex has at
    /// most two faces, a fan is a chain or a ring and the walk needs no
    /// record of where it has been; otherwise it is a breadth-first search
    /// over a set of the vertex's triangles. It holds 8 bytes a vertex (the
    /// first edge of each is the edge map's own; a union-find over every triangle corner held 15 bytes a corner, 45 a
    /// triangle, beside the mesh; `fans_by_corners` in the tests is that
    /// method, kept as the oracle).
    pub fn non_manifold_vertices(&self) -> &[u32] {
        self.non_manifold.get_or_init(|| self.find_non_manifold_vertices())
    }

    /// [`Topology::non_manifold_vertices`], found.
    fn find_non_manifold_vertices(&self) -> Vec<u32> {
        let nv = self.vertices.len();
        // Per vertex: its (non-collapsed) triangles counted, and one of them.
        let mut corners = vec![0u32; nv];
        // Counted into: each page read before it is written.
        crate::memory::prefault(&mut corners);
        let mut start = vec![u32::MAX; nv];
        for (t, tri) in self.triangles.iter().enumerate() {
            if !is_collapsed(*tri) {
                for &v in tri {
                    corners[v as usize] += 1;
                    if start[v as usize] == u32::MAX {
                        start[v as usize] = t as u32;
                    }
                }
            }
        }
        (0..nv as u32)
            .into_par_iter()
            .filter(|&v| {
                let n = corners[v as usize];
                n > 1 && self.fan_size(v, start[v as usize], n) < n
            })
            .collect()
    }

    /// The triangles in the fan of `from` at vertex `v` (at most `of`, the
    /// triangles at `v`), walked across `v`'s edges.
    fn fan_size(&self, v: u32, from: u32, of: u32) -> u32 {
        // The vertex of `t` other than `v` and `w`.
        let third = |t: u32, w: u32| -> u32 {
            let tri = self.triangles[t as usize];
            if tri[0] != v && tri[0] != w {
                tri[0]
            } else if tri[1] != v && tri[1] != w {
                tri[1]
            } else {
                tri[2]
            }
        };
        let faces_at = |w: u32| self.faces_of(self.edges.find(v, w));
        // A chain or ring: walk away from `from` across each of its two
        // edges at `v` in turn, counting the triangles passed, until the
        // walk comes back round (a ring) or reaches a boundary edge.
        // `from` is not collapsed: its two corners other than `v` (in an
        // array, not a list allocated for every vertex of the mesh).
        let tri = self.triangles[from as usize];
        let ends = match tri.iter().position(|&w| w == v) {
            Some(0) => [tri[1], tri[2]],
            Some(1) => [tri[0], tri[2]],
            _ => [tri[0], tri[1]],
        };
        let mut size = 1u32;
        for (k, &w0) in ends.iter().enumerate() {
            let (mut at, mut across) = (from, w0);
            loop {
                let faces = faces_at(across);
                if faces.len() > 2 {
                    return self.fan_size_searched(v, from, of);
                }
                if faces.len() < 2 {
                    break;
                }
                let next = if faces[0].tri() == at { faces[1].tri() } else { faces[0].tri() };
                if next == from {
                    // Round the ring: every triangle of the fan is counted.
                    debug_assert_eq!(k, 0);
                    return size;
                }
                size += 1;
                across = third(next, across);
                at = next;
            }
        }
        size
    }

    /// [`Topology::fan_size`] by a breadth-first search, for a vertex with
    /// an edge of three or more faces: every face of such an edge is in
    /// the fan of any other.
    fn fan_size_searched(&self, v: u32, from: u32, of: u32) -> u32 {
        let mut seen: std::collections::HashSet<u32, std::hash::BuildHasherDefault<super::hash::FxHasher>> =
            Default::default();
        seen.insert(from);
        let mut queue = vec![from];
        while let Some(t) = queue.pop() {
            for &w in self.triangles[t as usize].iter().filter(|&&w| w != v) {
                for f in self.faces_of(self.edges.find(v, w)) {
                    if seen.insert(f.tri()) {
                        queue.push(f.tri());
                    }
                }
            }
            if seen.len() as u32 >= of {
                break;
            }
        }
        seen.len() as u32
    }

    /// Duplicate faces: triangles (collapsed ones left out) over the same
    /// three welded vertices as an earlier triangle, in any order or
    /// winding. Returns, for each triangle of a group but its representative
    /// (the lowest-index triangle of the group's majority winding; on a tie,
    /// of the first triangle's), the triangle and whether it is wound against
    /// that majority (back to back), so that a group of k gives k - 1
    /// duplicates of which min(forward, backward) are back to back, in any
    /// triangle order. Ascending triangles.
    ///
    /// Read from the edge map: two such triangles share all three edges, so
    /// each group is found once, on the smallest edge key of its triangles,
    /// by sorting that edge's few third vertices. The edges are read in
    /// parts on the pool, each part's groups sorted together at the end
    /// (GEO-009 took 8.9 ms of one thread on s13's 1.95M edges, at the end
    /// of the checks; BENCHMARKS.md, "Fortieth step").
    pub fn duplicate_faces(&self) -> Vec<(u32, bool)> {
        let mut out = parts::map(self.edges.len(), |range| self.duplicate_faces_in(range)).concat();
        out.sort_unstable();
        out
    }

    /// [`Topology::duplicate_faces`] of the groups found on the edges
    /// `range`, unsorted.
    fn duplicate_faces_in(&self, range: std::ops::Range<usize>) -> Vec<(u32, bool)> {
        let mut out = Vec::new();
        let mut third: Vec<(u32, u32, bool)> = Vec::new();
        for e in self.edges.range(range).filter(|e| e.count >= 2) {
            third.clear();
            let faces = self.faces(e);
            for (k, (f, forward)) in faces.iter().map(|f| (f.tri(), f.forward())).enumerate() {
                // Fewer than two of the edge's faces can still have it as
                // their smallest: nothing to find here, and the rest of its
                // triangles are not read.
                if third.len() + (faces.len() - k) < 2 {
                    break;
                }
                // A face of the edge map has three distinct corners, `e.a`
                // < `e.b` and `c`; the edge is its smallest key exactly when
                // `c` is above both (below `e.a`, (c, a) is smaller;
                // between, (a, c)).
                let c = Self::opposite(self.triangles[f as usize], e);
                if c > e.b {
                    third.push((c, f, forward));
                }
            }
            duplicate_groups(&mut third, &mut out);
        }
        out
    }

    /// Unit normal of a triangle as wound (zero for a degenerate one).
    /// Computed on each call, not stored: the few checks that read normals
    /// read each a couple of times, and a stored array cost 24 bytes per
    /// triangle for the whole run.
    #[inline(always)]
    pub fn normal(&self, t: u32) -> [f64; 3] {
        let [a, b, c] = self.triangles[t as usize];
        let v = &self.vertices;
        normal(v.get(a), v.get(b), v.get(c))
    }

    /// The corners of `tri`, a face of the edge `e`, in the triangle's own
    /// order, from positions already read: `ends`, those of `e.a` and
    /// `e.b`, and `other`, that of its third vertex. Their [`normal`] is
    /// [`Topology::normal`]'s to the bit; what is saved is reading the
    /// three corners again.
    #[inline(always)]
    pub fn face_corners(tri: [u32; 3], e: Edge, ends: ([f64; 3], [f64; 3]), other: [f64; 3]) -> [[f64; 3]; 3] {
        let at = |v: u32| {
            if v == e.a {
                ends.0
            } else if v == e.b {
                ends.1
            } else {
                other
            }
        };
        [at(tri[0]), at(tri[1]), at(tri[2])]
    }

    /// The vertex of `tri` that is neither end of `e` (`e.a` when there is
    /// none, which no face in the edge map is: a collapsed triangle is left
    /// out).
    #[inline(always)]
    pub fn opposite(tri: [u32; 3], e: Edge) -> u32 {
        *tri.iter().find(|&&v| v != e.a && v != e.b).unwrap_or(&e.a)
    }
}

/// One edge's duplicate faces into `out`: `third` holds the faces that have
/// the edge as their smallest key, each as (third corner, triangle,
/// forward); faces with the same third corner are one group, and every one
/// but the group's representative is a duplicate, `true` when it has the
/// group's minority winding ([`Topology::duplicate_faces`]).
fn duplicate_groups(third: &mut [(u32, u32, bool)], out: &mut Vec<(u32, bool)>) {
    if third.len() < 2 {
        return;
    }
    third.sort_unstable();
    for group in third.chunk_by(|x, y| x.0 == y.0).filter(|g| g.len() > 1) {
        // The group's minority winding is "opposite" (on a tie, the
        // winding the group's first triangle does not have), so the
        // count is min(forward, backward) whatever the triangle order.
        let forward = group.iter().filter(|g| g.2).count();
        let minority = if 2 * forward == group.len() { !group[0].2 } else { 2 * forward < group.len() };
        // The group's representative: its first triangle of the majority winding.
        let rep = group.iter().position(|g| g.2 != minority).unwrap_or(0);
        out.extend(group.iter().enumerate().filter(|(k, _)| *k != rep).map(|(_, g)| (g.1, g.2 == minority)));
    }
}

/// Every live triangle's three directed edges bucketed by their smaller
/// vertex (a counting sort): the buckets' offsets (`nv + 1`), each edge's
/// larger vertex and its face (triangle << 1 | walks lo -> hi), and the
/// live triangles. In `parts` ranges of triangles on the thread pool, each
/// counted into counts of its own and then written into places of its own
/// ([`parts::positions_from_counts`]): within a bucket the parts' entries
/// follow each other in triangle order, so the layout is the one
/// sequential pass's. Two parts hold the two count arrays that one pass
/// held (its offsets and its cursors; each part past two, 4 bytes a vertex
/// more); the last part's cursors become the offsets in place. On s13
/// (1.3M triangles, two cores) the step took 16 -> 11.5 ms.
fn bucket_edges(triangles: &[[u32; 3]], nv: usize, parts: usize) -> (Vec<u32>, Vec<u32>, Vec<Face>, usize) {
    let ranges = parts::ranges(triangles.len(), parts, 1);
    let parts = ranges.len();
    // Counted into (read before written) and then filled: faulted in at
    // once (`memory::prefault`, as the arrays below). The last part's
    // array has room for the offsets' leading zero.
    let mut counts: Vec<Vec<u32>> = (0..parts)
        .map(|i| {
            let mut c = Vec::with_capacity(nv + usize::from(i + 1 == parts));
            c.resize(nv, 0u32);
            crate::memory::prefault(&mut c);
            c
        })
        .collect();
    let live_triangles: usize = counts
        .par_iter_mut()
        .zip(ranges.par_iter())
        .map(|(count, range)| {
            let mut live = 0usize;
            for t in &triangles[range.clone()] {
                if !is_collapsed(*t) {
                    live += 1;
                    for (u, v) in directed(*t) {
                        count[u.min(v) as usize] += 1;
                    }
                }
            }
            live
        })
        .sum();
    let total = parts::positions_from_counts(&mut counts) as usize;
    // Each directed edge's larger vertex and its face, in two arrays: the
    // faces become `edge_faces` as they stand, and the larger vertices are
    // freed once the edges are read from them (one array of pairs held
    // both, and the faces were copied out beside it).
    let mut hi = vec![0u32; total];
    let mut edge_faces = vec![Face(0); total];
    // Every entry is written, in the buckets' order, not the pages'.
    crate::memory::prefault(&mut hi);
    crate::memory::prefault(&mut edge_faces);
    {
        let shared_hi = parts::shared_u32s(&mut hi);
        let shared_faces = parts::shared_u32s(Face::as_u32s(&mut edge_faces));
        counts.par_iter_mut().zip(ranges.into_par_iter()).for_each(|(fill, range)| {
            for ti in range {
                let t = triangles[ti];
                if !is_collapsed(t) {
                    for (u, v) in directed(t) {
                        let lo = u.min(v) as usize;
                        let at = fill[lo] as usize;
                        shared_hi[at].store(u.max(v), Relaxed);
                        shared_faces[at].store(((ti as u32) << 1) | u32::from(u < v), Relaxed);
                        fill[lo] += 1;
                    }
                }
            }
        });
    }
    // The last part's cursors are every bucket's end: with a zero before
    // them, the buckets' offsets.
    let mut offset = counts.pop().expect("one part at least");
    drop(counts);
    offset.insert(0, 0);
    (offset, hi, edge_faces, live_triangles)
}

/// The weld of `points` at `tol`: each welded vertex's position (the first
/// point of its group), every point's welded index, and whether the weld
/// was exact.
fn welded_vertices(points: &[[f64; 3]], tol: f64) -> (Vertices, Vec<u32>, bool) {
    let Welded { labels, count, exact } = weld_report(points, tol);
    let vertices = Vertices::first_of_groups(points, &labels, count);
    (vertices, labels, exact)
}

/// Shells: triangles joined across every edge they share (union-find),
/// labelled in order of their lowest triangle; collapsed triangles get
/// [`ShellLabels::NONE`].
///
/// The edges are joined in runs on the thread pool, into one
/// [`SharedUnionFind`], and labelled in parts: the same sets, so the same
/// labels, as one pass of a plain union-find, which took s13's 1.95M edges
/// 17 ms on one core.
fn shells(triangles: &[[u32; 3]], edges: &Edges, edge_faces: &[Face]) -> (ShellLabels, usize) {
    let uf = SharedUnionFind::new(triangles.len());
    (0..edges.len()).into_par_iter().with_min_len(1 << 14).for_each(|i| {
        for w in edge_faces[edges.span(i)].windows(2) {
            uf.union(w[0].tri(), w[1].tri());
        }
    });
    // Labelled over the union-find's own array (collapsed triangles are
    // never joined): no array of labels beside it.
    let (shell, shell_count) = uf.into_labels(|t| is_collapsed(triangles[t]));
    (ShellLabels::new(shell, shell_count), shell_count)
}

/// The triangles that disagree with their patch's majority winding: by
/// parity over the manifold edges ([`super::winding::flipped`], one pass in
/// edge order), or by [`orient`]'s walk where a patch cannot be wound
/// consistently (its classes then depend on the walk). The same triangles
/// either way.
///
/// A mesh wound consistently throughout (no manifold edge walked the same
/// way by both its faces, as an exported mesh's edges nearly always are)
/// has every triangle of a patch in its first triangle's class, so nothing
/// disagrees: that is found by reading the edges' two face directions, on
/// the thread pool, without the parity union-find's sequential pass over
/// every triangle (s13's world mesh: 25-39 ms on one core, beside the
/// shells' 17 on the other).
fn winding(triangles: &[[u32; 3]], edges: &Edges, edge_faces: &[Face]) -> Vec<u32> {
    let walked_alike = |i: usize| {
        let span = edges.span(i);
        span.len() == 2 && edge_faces[span.start].forward() == edge_faces[span.start + 1].forward()
    };
    if !(0..edges.len()).into_par_iter().with_min_len(1 << 14).any(walked_alike) {
        return Vec::new();
    }
    let manifold = edges.iter().filter(|e| e.count == 2).map(|e| {
        let f = &edge_faces[e.start as usize..e.start as usize + 2];
        (f[0].tri(), f[1].tri(), f[0].forward() == f[1].forward())
    });
    super::winding::flipped(triangles.len(), |t| is_collapsed(triangles[t]), manifold)
        .unwrap_or_else(|| orient(triangles, edges, edge_faces))
}

/// Orientation bits from a walk over manifold edges: two triangles sharing
/// an edge agree when they traverse it in opposite directions. Each shell's
/// walk starts from its lowest-numbered triangle.
fn orient(triangles: &[[u32; 3]], edges: &Edges, edge_faces: &[Face]) -> Vec<u32> {
    let n = triangles.len();
    // A triangle's neighbours across manifold edges are found through the
    // edge map, whose edges are sorted by (smaller vertex, larger vertex):
    // the map's first edge of every smaller vertex instead of a table of
    // three neighbours a triangle (12 bytes a triangle). They are visited in
    // edge order, as the table listed them, so the walk and the windings are
    // the same.
    let edge_of = |u: u32, v: u32| edges.find(u, v);
    // Neighbour `<< 1 | same direction` across each manifold edge of `t`, in edge order.
    let neighbours = |t: u32| -> ([u32; 3], usize) {
        let [a, b, c] = triangles[t as usize];
        let mut es = [edge_of(a, b), edge_of(b, c), edge_of(c, a)];
        es.sort_unstable();
        let mut out = [0u32; 3];
        let mut k = 0;
        for e in es {
            let span = edges.span(e);
            if span.len() == 2 {
                let f = &edge_faces[span];
                let same = u32::from(f[0].forward() == f[1].forward());
                let other = if f[0].tri() == t { f[1].tri() } else { f[0].tri() };
                out[k] = (other << 1) | same;
                k += 1;
            }
        }
        (out, k)
    };
    let mut orientation = vec![0u8; n];
    let mut patch = vec![u32::MAX; n];
    let mut patches = 0u32;
    let mut queue = std::collections::VecDeque::new();
    for start in 0..n {
        if patch[start] != u32::MAX || is_collapsed(triangles[start]) {
            continue;
        }
        patch[start] = patches;
        queue.push_back(start as u32);
        while let Some(t) = queue.pop_front() {
            let (nbr, k) = neighbours(t);
            for &packed in &nbr[..k] {
                let (m, same) = (packed >> 1, packed & 1);
                if patch[m as usize] == u32::MAX {
                    patch[m as usize] = patches;
                    orientation[m as usize] = orientation[t as usize] ^ same as u8;
                    queue.push_back(m);
                }
            }
        }
        patches += 1;
    }
    // Per manifold patch (the part of a shell whose windings can be
    // compared across manifold edges), the smaller of the two orientation
    // classes is flipped; for a shell that is one patch, that is its
    // shell's majority.
    let mut counts = vec![[0u64; 2]; patches as usize];
    for (ti, &p) in patch.iter().enumerate() {
        if p != u32::MAX {
            counts[p as usize][orientation[ti] as usize] += 1;
        }
    }
    // The minority class of each patch (ties: class 1, the class the walk did not start in).
    let minority: Vec<u8> = counts.iter().map(|c| if c[0] < c[1] { 0 } else { 1 }).collect();
    (0..n as u32)
        .filter(|&t| {
            let p = patch[t as usize];
            p != u32::MAX && orientation[t as usize] == minority[p as usize]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flat grid of `n` x `n` unit quads with its `(n + 1)^2` points; the
    /// triangles are what `quad(x, y)` gives for each quad, rows in order
    /// (see [`quad`] for a quad's own two).
    fn grid(n: u32, mut quad: impl FnMut(u32, u32) -> Vec<[u32; 3]>) -> (Vec<[f64; 3]>, Vec<[u32; 3]>) {
        let points = (0..=n).flat_map(|y| (0..=n).map(move |x| [x as f64, y as f64, 0.0])).collect();
        let triangles = (0..n).flat_map(|y| (0..n).map(move |x| (x, y))).flat_map(|(x, y)| quad(x, y)).collect();
        (points, triangles)
    }

    /// The two triangles of the grid's quad at (x, y), `n` quads a row.
    fn quad(n: u32, x: u32, y: u32) -> [[u32; 3]; 2] {
        let (a, c) = (y * (n + 1) + x, (y + 1) * (n + 1) + x);
        [[a, a + 1, c + 1], [a, c + 1, c]]
    }

    #[test]
    fn open_edges_in_parts_are_the_three_passes_over_the_edges() {
        // Grids of quads with holes cut (boundaries and loops) and fins
        // added on some edges (non-manifold), small and large enough to be
        // found in parts.
        let mut rng = crate::geom::testrng::XorShift::new(0x0e0e_d9e5);
        for n in [3u32, 40, 200] {
            let (mut points, mut triangles) =
                grid(n, |x, y| if rng.below(20) == 0 { Vec::new() } else { quad(n, x, y).to_vec() });
            points.extend((0..n).map(|x| [x as f64 + 0.5, 0.0, 1.0]));
            // Two fins (one face, both windings) on edges of the first row:
            // three faces or more there.
            let top = (n + 1) * (n + 1);
            for x in (0..n).filter(|&x| x == 0 || rng.below(3) == 0) {
                triangles.extend([[x, x + 1, top + x], [x + 1, x, top + x]]);
            }
            let t = Topology::build(&points, &triangles, 1e-5);
            let open = t.open_edges();
            let boundary: Vec<Edge> = t.edges.ascending(&open.boundary).collect();
            assert_eq!(boundary, t.boundary_edges().collect::<Vec<_>>(), "{n}");
            assert_eq!(open.non_manifold, t.edges.iter().filter(|e| e.count > 2).count() as u64, "{n}");
            assert_eq!(t.loops_of_open(&open), t.boundary_loops(), "{n}");
            assert!(!open.boundary.is_empty() && open.non_manifold > 0, "{n}: both kinds present");
            if n == 200 {
                assert!(t.edges.len() >= parts::PARALLEL_FROM, "found in parts");
            }
        }
    }

    #[test]
    fn a_mesh_freed_in_halves_holds_nothing_after() {
        if !crate::testing::alone("geom::mesh::edges::tests::a_mesh_freed_in_halves_holds_nothing_after") {
            return;
        }
        // A grid of 200 x 200 quads: 80,000 triangles, enough to be freed
        // in halves.
        let n = 200u32;
        let (points, triangles) = grid(n, |x, y| quad(n, x, y).to_vec());
        // Once first, so that the pool's threads hold what they keep.
        Topology::build(&points, &triangles, 1e-5).free_in_halves();
        let before = crate::testing::mark_live();
        let topo = Topology::build(&points, &triangles, 1e-5);
        assert!(topo.triangles.len() >= parts::PARALLEL_FROM);
        assert!(topo.non_manifold_vertices().is_empty());
        assert!(crate::testing::live() > before + 80_000 * 12, "the mesh is held");
        topo.free_in_halves();
        assert_eq!(crate::testing::live(), before, "every byte of it freed");
    }

    /// A unit cube as 8 corners and 12 outward-wound triangles.
    ///
    /// ```text
    ///      7-----6
    ///     /|    /|      y
    ///    3-----2 |      |
    ///    | 4---|-5      +-- x
    ///    |/    |/      /
    ///    0-----1      z (0..3 at z = 1, 4..7 at z = 0)
    /// ```
    fn cube() -> (Vec<[f64; 3]>, Vec<[u32; 3]>) {
        let p = vec![
            [0.0, 0.0, 1.0],
            [1.0, 0.0, 1.0],
            [1.0, 1.0, 1.0],
            [0.0, 1.0, 1.0],
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [1.0, 1.0, 0.0],
            [0.0, 1.0, 0.0],
        ];
        let t = vec![
            [0, 1, 2],
            [0, 2, 3], // front (+z)
            [5, 4, 7],
            [5, 7, 6], // back (-z)
            [1, 5, 6],
            [1, 6, 2], // right (+x)
            [4, 0, 3],
            [4, 3, 7], // left (-x)
            [3, 2, 6],
            [3, 6, 7], // top (+y)
            [4, 5, 1],
            [4, 1, 0], // bottom (-y)
        ];
        (p, t)
    }

    /// The cube with every face's corners duplicated, as glTF splits at UV
    /// seams and hard normals: 24 points, no shared indices.
    fn split_cube() -> (Vec<[f64; 3]>, Vec<[u32; 3]>) {
        let (p, t) = cube();
        let mut pts = Vec::new();
        let mut tris = Vec::new();
        for tri in t {
            let base = pts.len() as u32;
            for &i in &tri {
                pts.push(p[i as usize]);
            }
            tris.push([base, base + 1, base + 2]);
        }
        (pts, tris)
    }

    #[test]
    fn directed_edges_bucketed_in_parts_are_one_counting_sort() {
        // Random triangles with collapsed, repeated and reversed ones, over
        // vertices some of which no edge starts from: in 1 to 4 parts (and
        // more parts than triangles), the offsets, larger vertices, faces
        // and live count are those of one sequential counting sort.
        let mut rng = crate::geom::testrng::XorShift::new(7);
        for round in 0..40 {
            let nv = 1 + rng.below(300) as usize;
            let n = rng.below(500) as usize;
            let tris: Vec<[u32; 3]> = (0..n)
                .map(|_| {
                    let v = |rng: &mut crate::geom::testrng::XorShift| rng.below(nv as u64) as u32;
                    let a = v(&mut rng);
                    if rng.below(6) == 0 { [a, a, v(&mut rng)] } else { [a, v(&mut rng), v(&mut rng)] }
                })
                .collect();
            let mut offset = vec![0u32; nv + 1];
            let mut entries: Vec<Vec<(u32, u32)>> = vec![Vec::new(); nv];
            let mut live = 0;
            for (ti, t) in tris.iter().enumerate() {
                if !is_collapsed(*t) {
                    live += 1;
                    for (u, v) in directed(*t) {
                        offset[u.min(v) as usize + 1] += 1;
                        entries[u.min(v) as usize].push((u.max(v), ((ti as u32) << 1) | u32::from(u < v)));
                    }
                }
            }
            for i in 0..nv {
                offset[i + 1] += offset[i];
            }
            let flat: Vec<(u32, u32)> = entries.concat();
            for parts in [1, 2, 3, 4, n + 2] {
                let (o, hi, faces, l) = bucket_edges(&tris, nv, parts);
                assert_eq!((o.as_slice(), l), (offset.as_slice(), live), "round {round}, {parts} parts");
                let got: Vec<(u32, u32)> = hi.iter().zip(&faces).map(|(&h, f)| (h, f.0)).collect();
                assert_eq!(got, flat, "round {round}, {parts} parts");
            }
        }
    }

    #[test]
    fn the_edge_map_over_many_chunks_is_every_directed_edge_sorted() {
        // Enough vertices for a dozen chunks of buckets, some buckets empty,
        // repeated and reversed edges, collapsed triangles: the edges, their
        // starts and faces are those of sorting every (smaller, larger,
        // face) once.
        let nv = 12 * 4096 + 333;
        let mut rng = crate::geom::testrng::XorShift::new(22);
        let mut tris = Vec::new();
        for _ in 0..60_000 {
            let a = rng.below(nv as u64) as u32;
            let near = |rng: &mut crate::geom::testrng::XorShift| (a as u64 + rng.below(40)).min(nv as u64 - 1) as u32;
            let t = [a, near(&mut rng), near(&mut rng)];
            tris.push(t);
            if rng.below(5) == 0 {
                tris.push([t[1], t[0], t[2]]);
            }
        }
        let vertices = Vertices::from_points((0..nv).map(|i| [i as f64, 0.0, 0.0]).collect());
        let topo = Topology::from_welded(vertices, tris.clone());
        let mut directed: Vec<(u32, u32, u32)> = Vec::new();
        for (ti, t) in tris.iter().enumerate() {
            if !is_collapsed(*t) {
                for (u, v) in super::directed(*t) {
                    directed.push((u.min(v), u.max(v), ((ti as u32) << 1) | u32::from(u < v)));
                }
            }
        }
        directed.sort_unstable();
        let faces: Vec<u32> = topo.edge_faces.iter().map(|f| (f.tri() << 1) | u32::from(f.forward())).collect();
        assert_eq!(faces, directed.iter().map(|d| d.2).collect::<Vec<_>>());
        let mut want = Vec::new();
        let mut i = 0;
        while i < directed.len() {
            let j = i + directed[i..].iter().take_while(|d| (d.0, d.1) == (directed[i].0, directed[i].1)).count();
            want.push(Edge { a: directed[i].0, b: directed[i].1, start: i as u32, count: (j - i) as u32 });
            i = j;
        }
        assert!(want.len() > 100_000);
        assert_eq!(topo.edges.iter().collect::<Vec<_>>(), want);
        assert_eq!(topo.edges.len(), want.len());
    }

    #[test]
    fn closed_cube_has_no_boundary() {
        let (p, t) = cube();
        let topo = Topology::build(&p, &t, 1e-5);
        assert_eq!(topo.boundary_edges().count(), 0);
        assert_eq!(topo.edges.len(), 18);
        assert_eq!(topo.shell_count, 1);
        assert!(topo.flipped_faces().is_empty());
    }

    #[test]
    fn seams_are_welded_not_holes() {
        let (p, t) = split_cube();
        assert_eq!(p.len(), 36);
        let topo = Topology::build(&p, &t, 1e-5);
        assert_eq!(topo.vertices.len(), 8);
        assert_eq!(topo.boundary_edges().count(), 0);
        // Without welding every triangle is its own open shell.
        let unwelded = Topology::build(&p, &t, 0.0);
        assert_eq!(unwelded.vertices.len(), 8, "exact duplicates always weld");
    }

    #[test]
    fn missing_face_is_one_loop_of_four_edges() {
        // The front face (triangles 0 and 1) removed: a square hole.
        let (p, mut t) = cube();
        t.drain(0..2);
        let topo = Topology::build(&p, &t, 1e-5);
        assert_eq!(topo.boundary_edges().count(), 4);
        assert_eq!(topo.boundary_loops(), 1);
    }

    #[test]
    fn one_flipped_triangle_is_found() {
        let (p, mut t) = cube();
        t[5].swap(1, 2);
        let topo = Topology::build(&p, &t, 1e-5);
        assert_eq!(topo.flipped_faces(), vec![5]);
        // Whichever triangle the walk starts from.
        let (p, mut t) = cube();
        t[0].swap(1, 2);
        let topo = Topology::build(&p, &t, 1e-5);
        assert_eq!(topo.flipped_faces(), vec![0]);
    }

    #[test]
    fn a_consistently_wound_mesh_has_no_flipped_faces_and_one_reversed_triangle_is_still_found() {
        // A 120 x 120 grid (about 43,000 edges: three of the reading's
        // chunks), wound alike, then with one triangle reversed, whose
        // edges come last in the map, then with one in the middle.
        let n = 120u32;
        let points: Vec<[f64; 3]> = (0..=n).flat_map(|y| (0..=n).map(move |x| [x as f64, y as f64, 0.0])).collect();
        let at = |x: u32, y: u32| y * (n + 1) + x;
        let tris: Vec<[u32; 3]> = (0..n)
            .flat_map(|y| (0..n).map(move |x| (x, y)))
            .flat_map(|(x, y)| [[at(x, y), at(x + 1, y), at(x + 1, y + 1)], [at(x, y), at(x + 1, y + 1), at(x, y + 1)]])
            .collect();
        let topo = Topology::build(&points, &tris, 1e-6);
        assert!(topo.edges.len() > 2 << 14, "{} edges", topo.edges.len());
        assert!(topo.flipped_faces().is_empty());
        // The parity union-find agrees.
        let manifold = topo.edges.iter().filter(|e| e.count == 2).map(|e| {
            let f = topo.faces(e);
            (f[0].tri(), f[1].tri(), f[0].forward() == f[1].forward())
        });
        assert_eq!(super::super::winding::flipped(tris.len(), |_| false, manifold), Some(Vec::new()));
        for reversed in [tris.len() - 1, tris.len() / 2] {
            let mut t = tris.clone();
            t[reversed].swap(1, 2);
            let topo = Topology::build(&points, &t, 1e-6);
            assert_eq!(topo.flipped_faces(), vec![reversed as u32]);
        }
    }

    #[test]
    fn patches_joined_by_a_fin_are_judged_apart() {
        // Two fans of three triangles meet only on the edge 0-1, with a third
        // triangle (a fin) on it too: the edge is non-manifold, so the fans'
        // windings cannot be compared. One triangle of each fan is flipped:
        // two flipped faces, whatever the triangle order.
        let p = vec![
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.5, 1.0, 0.0],
            [1.5, 1.0, 0.0],
            [-0.5, 1.0, 0.0],
            [0.5, -1.0, 0.0],
            [1.5, -1.0, 0.0],
            [-0.5, -1.0, 0.0],
            [0.5, 0.0, 1.0],
        ];
        let fan_a = [[0, 1, 2], [1, 3, 2], [0, 4, 2]]; // the third is flipped against the first
        let fan_b = [[1, 0, 5], [1, 6, 5], [0, 7, 5]]; // the second is flipped
        let fin = [0, 1, 8];
        let mut t: Vec<[u32; 3]> = fan_a.iter().chain(fan_b.iter()).copied().collect();
        t.push(fin);
        for rotate in 0..t.len() {
            let mut order = t.clone();
            order.rotate_left(rotate);
            let topo = Topology::build(&p, &order, 1e-5);
            assert_eq!(topo.shell_count, 1);
            assert_eq!(topo.flipped_faces().len(), 2, "rotation {rotate}");
        }
    }

    #[test]
    fn bow_tie_vertex_and_fin_edges() {
        // Two triangles touching only at vertex 0: one non-manifold vertex.
        let p = vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [-1.0, -1.0, 0.0]];
        let topo = Topology::build(&p, &[[0, 1, 2], [0, 3, 4]], 1e-5);
        assert_eq!(topo.non_manifold_vertices(), vec![0]);
        // Joined by a third triangle across edges at 0: one fan, manifold.
        let topo = Topology::build(&p, &[[0, 1, 2], [0, 3, 4], [0, 2, 3]], 1e-5);
        assert!(topo.non_manifold_vertices().is_empty());
        // The closed cube has none; nor do its edges have duplicates.
        let (p, t) = cube();
        let topo = Topology::build(&p, &t, 1e-5);
        assert!(topo.non_manifold_vertices().is_empty());
        assert!(topo.duplicate_faces().is_empty());
    }

    #[test]
    fn duplicate_faces_any_order_and_winding() {
        let (p, mut t) = cube();
        t.push([2, 0, 1]); // triangle 0 rotated: same winding
        t.push([0, 2, 1]); // triangle 0 reversed: back to back
        t.push([6, 5, 1]); // triangle 4 reversed
        let topo = Topology::build(&p, &t, 1e-5);
        assert_eq!(topo.duplicate_faces(), vec![(12, false), (13, true), (14, true)]);
    }

    #[test]
    fn collapsed_and_non_manifold() {
        // Three triangles on one edge (0-1): a non-manifold fin; one triangle collapses.
        let p =
            vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]];
        let t = vec![[0, 1, 2], [1, 0, 3], [0, 1, 4], [0, 1, 5]];
        let topo = Topology::build(&p, &t, 1e-5);
        assert!(topo.collapsed(3), "vertex 5 welds onto vertex 1");
        assert!(!topo.collapsed(2));
        assert_eq!(topo.live_triangles(), 3);
        let e01 = topo.edges.iter().find(|e| (e.a, e.b) == (0, 1)).unwrap();
        assert_eq!(e01.count, 3);
        assert_eq!(topo.shell_count, 1);
    }

    /// The union-find over triangle corners that [`Topology::non_manifold_vertices`]
    /// replaced: corners joined across every edge with two or more faces,
    /// per vertex; more than one group of corners is more than one fan.
    fn fans_by_corners(t: &Topology) -> Vec<u32> {
        let corner =
            |tri: u32, v: u32| 3 * tri + t.triangles[tri as usize].iter().position(|&x| x == v).unwrap() as u32;
        let mut fans = vec![0i32; t.vertices.len()];
        for (ti, tri) in t.triangles.iter().enumerate() {
            if !t.collapsed(ti) {
                tri.iter().for_each(|&v| fans[v as usize] += 1);
            }
        }
        let mut uf = UnionFind::new(3 * t.triangles.len());
        for e in t.edges.iter().filter(|e| e.count >= 2) {
            let faces = t.faces(e);
            for f in &faces[1..] {
                for v in [e.a, e.b] {
                    if uf.union(corner(faces[0].tri(), v), corner(f.tri(), v)) {
                        fans[v as usize] -= 1;
                    }
                }
            }
        }
        (0..t.vertices.len() as u32).filter(|&v| fans[v as usize] > 1).collect()
    }

    #[test]
    fn fan_walks_agree_with_the_corner_union_find() {
        use crate::geom::testrng::XorShift;
        let (mut with_bow_ties, mut with_fins) = (0, 0);
        for seed in 1..=300u64 {
            let mut rng = XorShift::new(seed * 0x9e37_79b9);
            // A grid of points, triangulated, with triangles dropped,
            // repeated (either winding), reversed and added across it from
            // a few points (fins, bow-ties, edges of three or more faces).
            let side = 2 + rng.below(6) as u32;
            let p: Vec<[f64; 3]> =
                (0..side * side).map(|i| [(i % side) as f64, (i / side) as f64, (i % 3) as f64 * 0.1]).collect();
            let mut t = Vec::new();
            for y in 0..side - 1 {
                for x in 0..side - 1 {
                    let (a, b, c, d) = (y * side + x, y * side + x + 1, (y + 1) * side + x + 1, (y + 1) * side + x);
                    for tri in [[a, b, c], [a, c, d]] {
                        match rng.below(10) {
                            0 => {}
                            1 => {
                                t.push(tri);
                                t.push([tri[0], tri[2], tri[1]]);
                            }
                            2 => t.push([tri[1], tri[0], tri[2]]),
                            _ => t.push(tri),
                        }
                    }
                }
            }
            let n = side * side;
            for _ in 0..rng.below(6) {
                let k = rng.below(4) as u32 + 1;
                let tri = [rng.below(k as u64 + 1) as u32 % n, rng.below(n as u64) as u32, rng.below(n as u64) as u32];
                t.push(tri);
            }
            let topo = Topology::build(&p, &t, 1e-5);
            let found = topo.non_manifold_vertices();
            assert_eq!(found, fans_by_corners(&topo), "seed {seed}");
            with_bow_ties += usize::from(!found.is_empty());
            with_fins += usize::from(topo.edges.iter().any(|e| e.count > 2));
        }
        // The draws reach both walks and both answers.
        assert!(with_bow_ties > 30 && with_bow_ties < 270, "{with_bow_ties} meshes with bow-ties");
        assert!(with_fins > 30, "{with_fins} meshes with fins");
    }

    #[test]
    fn find_gives_every_edge_its_index_in_short_and_long_buckets() {
        // A fan of 40 triangles around vertex 0 (40 edges from it: searched
        // by halves) beside a strip whose vertices have a few each (read in
        // order), both edge directions asked.
        let mut p = vec![[0.0, 0.0, 0.0]];
        let mut t = Vec::new();
        for i in 0..41u32 {
            let a = i as f64 * 0.1;
            p.push([a.cos(), a.sin(), 0.0]);
            if i > 0 {
                t.push([0, i, i + 1]);
            }
        }
        let base = p.len() as u32;
        for i in 0..30u32 {
            p.push([i as f64, 5.0, 1.0]);
            p.push([i as f64, 6.0, 1.0]);
            if i > 0 {
                let (a, b, c, d) = (base + 2 * (i - 1), base + 2 * i, base + 2 * i + 1, base + 2 * (i - 1) + 1);
                t.push([a, b, c]);
                t.push([a, c, d]);
            }
        }
        let topo = Topology::build(&p, &t, 1e-9);
        let longest = topo.edges.first_edges().windows(2).map(|w| (w[1] - w[0]) as usize).max().unwrap();
        assert!(longest > SCANNED_EDGES, "{longest} edges at the fan's centre");
        for (i, e) in topo.edges.iter().enumerate() {
            assert_eq!(topo.edges.find(e.a, e.b), i);
            assert_eq!(topo.edges.find(e.b, e.a), i);
        }
    }

    #[test]
    fn rings_chains_and_fins_at_a_vertex() {
        // Two discs of 4,000 triangles each around vertex 0 (rings), in
        // different planes, then each opened (a chain), then joined by a fin
        // (an edge of three faces through vertex 0).
        let ring = 4000u32;
        let mut p = vec![[0.0, 0.0, 0.0]];
        for plane in 0..2 {
            for i in 0..ring {
                let a = i as f64 / ring as f64 * std::f64::consts::TAU;
                p.push(if plane == 0 { [a.cos(), a.sin(), 0.0] } else { [0.0, a.cos(), a.sin() + 3.0] });
            }
        }
        let disc = |plane: u32, open: bool| -> Vec<[u32; 3]> {
            let base = 1 + plane * ring;
            (0..ring - u32::from(open)).map(|i| [0, base + i, base + (i + 1) % ring]).collect()
        };
        let one = Topology::build(&p, &disc(0, false), 1e-9);
        assert!(one.non_manifold_vertices().is_empty());
        let chain = Topology::build(&p, &disc(0, true), 1e-9);
        assert!(chain.non_manifold_vertices().is_empty());
        for open in [false, true] {
            let mut t = disc(0, open);
            t.extend(disc(1, open));
            let two = Topology::build(&p, &t, 1e-9);
            assert_eq!(two.non_manifold_vertices(), vec![0], "open {open}");
            assert_eq!(fans_by_corners(&two), vec![0]);
            // A fin on the first disc's edge 0-1 reaching the second disc's
            // point: its edge 0-(second disc's first point) lies in that
            // disc's fan only if that edge is the disc's; here it is, so the
            // fin joins the two fans into one.
            t.push([0, 1, 1 + ring]);
            let joined = Topology::build(&p, &t, 1e-9);
            assert_eq!(joined.non_manifold_vertices(), fans_by_corners(&joined), "open {open}");
            assert!(!joined.non_manifold_vertices().contains(&0), "open {open}");
        }
    }

    #[test]
    fn a_faces_normal_from_its_edges_corners_is_normal_to_the_bit() {
        // Random triangles over few points, so that edges are shared by
        // one to several faces in either direction, with repeated corners
        // (collapsed, left out of the map) and a few coincident points.
        let mut rng = crate::geom::testrng::XorShift::new(0xface_0001);
        let points: Vec<[f64; 3]> = (0..60)
            .map(|i| if i % 20 == 19 { [0.5; 3] } else { [rng.unit(), rng.unit() * 1e3, rng.unit() * 1e-3] })
            .collect();
        let triangles: Vec<[u32; 3]> =
            (0..4000).map(|_| [rng.below(60) as u32, rng.below(60) as u32, rng.below(60) as u32]).collect();
        let t = Topology::build(&points, &triangles, 0.0);
        let mut faces = 0;
        for e in t.edges.iter() {
            let ends = (t.vertices.get(e.a), t.vertices.get(e.b));
            for f in t.faces(e) {
                let tri = t.triangles[f.tri() as usize];
                let other = t.vertices.get(Topology::opposite(tri, e));
                let [p0, p1, p2] = Topology::face_corners(tri, e, ends, other);
                let got = normal(p0, p1, p2);
                assert_eq!(got.map(f64::to_bits), t.normal(f.tri()).map(f64::to_bits), "{tri:?} on {e:?}");
                faces += 1;
            }
        }
        assert!(faces > 10_000, "{faces} faces");
    }

    #[test]
    fn duplicate_faces_are_found_on_each_groups_smallest_edge() {
        // The definition: each edge's faces whose smallest edge key it is,
        // found by computing all three keys (before the third corner alone
        // told it) and grouped as the method groups them, on random triangles over few points: many duplicates,
        // in both windings, and non-manifold edges.
        let oracle = |t: &Topology| -> Vec<(u32, bool)> {
            let mut out = Vec::new();
            for e in t.edges.iter().filter(|e| e.count >= 2) {
                let key = edge_key(e.a, e.b);
                let mut third: Vec<(u32, u32, bool)> = Vec::new();
                for f in t.faces(e) {
                    let tri = t.triangles[f.tri() as usize];
                    let smallest = edge_key(tri[0], tri[1]).min(edge_key(tri[1], tri[2])).min(edge_key(tri[2], tri[0]));
                    if smallest == key {
                        third.push((Topology::opposite(tri, e), f.tri(), f.forward()));
                    }
                }
                duplicate_groups(&mut third, &mut out);
            }
            out.sort_unstable();
            out
        };
        let mut rng = crate::geom::testrng::XorShift::new(0x00d0_b1e5);
        for round in 0..20 {
            let n = 6 + round as u64;
            let points: Vec<[f64; 3]> = (0..n).map(|_| [rng.unit(), rng.unit(), rng.unit()]).collect();
            let triangles: Vec<[u32; 3]> =
                (0..600).map(|_| [rng.below(n) as u32, rng.below(n) as u32, rng.below(n) as u32]).collect();
            let t = Topology::build(&points, &triangles, 0.0);
            let want = oracle(&t);
            assert!(round > 10 || !want.is_empty(), "round {round} has duplicates");
            assert_eq!(t.duplicate_faces(), want, "round {round}");
        }
        // A grid large enough to be read in parts, with triangles repeated
        // in either winding all over it, so that groups fall in every part.
        let n = 200u32;
        let (points, triangles) = grid(n, |x, y| {
            let mut tris = quad(n, x, y).to_vec();
            let [[a, b, c], _] = quad(n, x, y);
            match rng.below(40) {
                0 => tris.push([a, b, c]),
                1 => tris.extend([[c, b, a], [b, c, a]]),
                _ => {}
            }
            tris
        });
        let t = Topology::build(&points, &triangles, 0.0);
        assert!(t.edges.len() >= parts::PARALLEL_FROM, "read in parts");
        let want = oracle(&t);
        assert!(want.len() > 1_000, "{} duplicates", want.len());
        assert_eq!(t.duplicate_faces(), want, "the grid");
    }
}
