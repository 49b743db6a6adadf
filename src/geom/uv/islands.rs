//! UV islands: connected components of a layout's triangles joined across
//! shared UV edges, compared exactly by their f32 bits ([`uv_islands`]).
//! The padding measurement (UV-005) measures the gaps between them.

use super::layout::UvMesh;
use crate::geom::bits::Bits;
use crate::geom::prefetch::{BLOCK, prefetch};
use crate::geom::unionfind::UnionFind;

fn corner_uvs(uvs: &[[f32; 2]], t: [u32; 3]) -> Option<[[f32; 2]; 3]> {
    Some([*uvs.get(t[0] as usize)?, *uvs.get(t[1] as usize)?, *uvs.get(t[2] as usize)?])
}

fn finite(c: &[[f32; 2]; 3]) -> bool {
    c.iter().all(|p| p[0].is_finite() && p[1].is_finite())
}

/// The UV point of a vertex as one key: both coordinates' f32 bits, with
/// -0.0 read as 0.0.
fn uv_key(p: [f32; 2]) -> u64 {
    let bits = |x: f32| if x == 0.0 { 0 } else { x.to_bits() };
    (bits(p[0]) as u64) << 32 | bits(p[1]) as u64
}

/// UV islands of a layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Islands {
    /// Per triangle (meshes in order, then triangles in order): its island,
    /// numbered 0.. in order of first appearance; `u32::MAX` for a triangle
    /// with non-finite UVs or an invalid index.
    pub island: Vec<u32>,
    /// Number of islands.
    pub count: u32,
}

/// UV islands: connected components of triangles joined across shared UV
/// edges. Two triangles share an edge when both have an edge between the same
/// two UV points, compared exactly by their f32 bits (in either direction),
/// across meshes too; triangles touching only at a point stay apart, as do
/// the two sides of a UV seam. O(vertices + triangles).
pub fn uv_islands(meshes: &[UvMesh<'_>]) -> Islands {
    // Canonical point ids: vertices with the same UV bits are one point
    // (open addressing with linear probing; ids in order of first appearance).
    let vertices: usize = meshes.iter().map(|m| m.uvs.len()).sum();
    // At most two thirds full (a third of the memory of a table twice the
    // points, with probes still short).
    let cap = (vertices + vertices / 2).next_power_of_two().max(16);
    let shift = 64 - cap.trailing_zeros();
    // Keys, and ids + 1 (0 marks an empty slot).
    let mut slot_key = vec![0u64; cap];
    let mut slot_id = vec![0u32; cap];
    // Probed all over, each page read before it is written: faulted in at
    // once (`memory::prefault`), as the buckets below.
    crate::memory::prefault(&mut slot_key);
    crate::memory::prefault(&mut slot_id);
    let mut point: Vec<u32> = Vec::with_capacity(vertices);
    let mut base = Vec::with_capacity(meshes.len());
    let mut points = 0u32;
    let slot_of = |k: u64| (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
    let mut keys = [0u64; BLOCK];
    for m in meshes {
        base.push(point.len());
        // Each block's slots are fetched before its points are probed in
        // order (the table is far larger than the caches).
        for block in m.uvs.chunks(BLOCK) {
            for (k, &p) in keys.iter_mut().zip(block) {
                *k = uv_key(p);
                let i = slot_of(*k);
                prefetch(&slot_id[i]);
                prefetch(&slot_key[i]);
            }
            for &k in &keys[..block.len()] {
                let mut i = slot_of(k);
                loop {
                    let id = slot_id[i];
                    if id == 0 {
                        points += 1;
                        (slot_key[i], slot_id[i]) = (k, points);
                        point.push(points - 1);
                        break;
                    }
                    if slot_key[i] == k {
                        point.push(id - 1);
                        break;
                    }
                    i = (i + 1) & (cap - 1);
                }
            }
        }
    }
    drop((slot_key, slot_id));
    let points = points as usize;

    // Edges bucketed by their lower point id (counting sort), to be joined
    // within each bucket by their higher id. A triangle's corners as point
    // ids ([u32::MAX; 3]: unusable) are read twice from the point ids, to
    // count and to fill, rather than held in an array of their own (12
    // bytes a triangle beside the buckets' 24: this check's peak, and the
    // first phase's on a large mesh). Each array is freed once read: the
    // point ids once the buckets are filled (which triangles are usable is
    // kept in a bit a triangle), the buckets once joined.
    const NONE: [u32; 3] = [u32::MAX; 3];
    let total: usize = meshes.iter().map(|m| m.triangles.len()).sum();
    let corners = |mi: usize, m: &UvMesh<'_>, t: [u32; 3]| match corner_uvs(m.uvs, t).filter(finite) {
        Some(_) => t.map(|v| point[base[mi] + v as usize]),
        None => NONE,
    };
    let mut start = vec![0u32; points + 1];
    // Counted into: each page read before it is written.
    crate::memory::prefault(&mut start);
    let edges_of = |c: [u32; 3]| [(c[0], c[1]), (c[1], c[2]), (c[2], c[0])].map(|(a, b)| (a.min(b), a.max(b)));
    for (mi, m) in meshes.iter().enumerate() {
        for &t in m.triangles {
            let c = corners(mi, m, t);
            if c != NONE {
                for (lo, hi) in edges_of(c) {
                    start[lo as usize + 1] += (lo != hi) as u32;
                }
            }
        }
    }
    for i in 0..points {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut entries = vec![(0u32, 0u32); start[points] as usize];
    crate::memory::prefault(&mut entries);
    let mut usable = Bits::new(total);
    let mut t = 0usize;
    for (mi, m) in meshes.iter().enumerate() {
        for &tri in m.triangles {
            let c = corners(mi, m, tri);
            if c != NONE {
                usable.set(t);
                for (lo, hi) in edges_of(c) {
                    if lo != hi {
                        let f = &mut fill[lo as usize];
                        entries[*f as usize] = (hi, t as u32);
                        *f += 1;
                    }
                }
            }
            t += 1;
        }
    }
    drop(fill);
    drop(point);
    let mut sets = UnionFind::new(total);
    for p in 0..points {
        let bucket = &mut entries[start[p] as usize..start[p + 1] as usize];
        if bucket.len() < 2 {
            continue;
        }
        bucket.sort_unstable();
        for k in 1..bucket.len() {
            if bucket[k].0 == bucket[k - 1].0 {
                sets.union(bucket[k - 1].1, bucket[k].1);
            }
        }
    }
    drop(entries);
    drop(start);

    // Labelled over the union-find's own array (unusable triangles were
    // never joined): no array of labels beside the buckets and the sets
    // (4 bytes a triangle at this check's peak).
    let (island, count) = sets.into_labels(|t| !usable.get(t));
    Islands { island, count: count as u32 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::uv::layout::fixtures::mesh;

    /// Islands by a map from each edge's two UV keys to its triangles: the
    /// definition, without buckets.
    fn islands_by_edge_map(meshes: &[UvMesh<'_>]) -> Islands {
        let mut by_edge: std::collections::HashMap<(u64, u64), Vec<u32>> = Default::default();
        let mut usable = Vec::new();
        for m in meshes {
            for &t in m.triangles {
                let at = usable.len() as u32;
                let c = corner_uvs(m.uvs, t).filter(finite);
                usable.push(c.is_some());
                let Some(c) = c else { continue };
                let k = c.map(uv_key);
                for (a, b) in [(k[0], k[1]), (k[1], k[2]), (k[2], k[0])] {
                    if a != b {
                        by_edge.entry((a.min(b), a.max(b))).or_default().push(at);
                    }
                }
            }
        }
        let mut sets = UnionFind::new(usable.len());
        for tris in by_edge.values() {
            for w in tris.windows(2) {
                sets.union(w[0], w[1]);
            }
        }
        let (mut label, mut count) = (std::collections::HashMap::new(), 0u32);
        let island = (0..usable.len() as u32)
            .map(|t| {
                if !usable[t as usize] {
                    return u32::MAX;
                }
                *label.entry(sets.find(t)).or_insert_with(|| {
                    count += 1;
                    count - 1
                })
            })
            .collect();
        Islands { island, count }
    }

    #[test]
    fn islands_match_an_edge_map_on_random_layouts() {
        // Few distinct UV points, so that edges are shared by two, three or
        // more triangles; vertices repeating a point's UV (split for
        // normals); a triangle's edge from a point to itself; a NaN UV; an
        // index past the UVs; one to four meshes.
        let mut rng = crate::geom::testrng::XorShift::new(22);
        for round in 0..200 {
            let grid = 2 + rng.below(6) as usize;
            let point = |rng: &mut crate::geom::testrng::XorShift| {
                [rng.below(grid as u64) as f32 / grid as f32, rng.below(grid as u64) as f32 / grid as f32]
            };
            let mut layouts = Vec::new();
            for _ in 0..1 + rng.below(4) {
                let n = 3 + rng.below(40) as usize;
                let mut uvs: Vec<[f32; 2]> = (0..n).map(|_| point(&mut rng)).collect();
                if rng.below(4) == 0 {
                    uvs[rng.below(n as u64) as usize] = [f32::NAN, 0.5];
                }
                if rng.below(4) == 0 {
                    uvs[rng.below(n as u64) as usize] = [-0.0, 0.0];
                }
                let tris: Vec<[u32; 3]> = (0..1 + rng.below(60))
                    .map(|_| {
                        let limit = if rng.below(20) == 0 { n as u64 + 2 } else { n as u64 };
                        [rng.below(limit) as u32, rng.below(limit) as u32, rng.below(limit) as u32]
                    })
                    .collect();
                layouts.push((uvs, tris));
            }
            let meshes: Vec<UvMesh<'_>> = layouts.iter().map(|(u, t)| mesh(u, t)).collect();
            assert_eq!(uv_islands(&meshes), islands_by_edge_map(&meshes), "round {round}");
        }
    }

    #[test]
    fn islands_join_on_shared_edges_only() {
        //  3---2---5
        //  | / | \ |     the left square (0,1,2,3) and the right one (1,4,5,2)
        //  0---1---4     share the edge 1-2: one island. Triangle 6-7-8 touches
        //          |     the right square only at the point 4: its own island.
        //          8-7
        let uvs = [
            [0.0, 0.0],
            [0.5, 0.0],
            [0.5, 0.5],
            [0.0, 0.5],
            [1.0, 0.0],
            [1.0, 0.5],
            [1.0, 0.0],
            [1.0, -0.5],
            [1.5, -0.5],
        ];
        let tris = [[0, 1, 2], [0, 2, 3], [1, 4, 5], [1, 5, 2], [6, 7, 8]];
        let i = uv_islands(&[mesh(&uvs, &tris)]);
        assert_eq!(i.count, 2);
        assert_eq!(i.island, vec![0, 0, 0, 0, 1]);
        // Duplicated vertices with equal UVs (split for normals) still join, across meshes too.
        let a = [[0.0f32, 0.0], [0.5, 0.0], [0.5, 0.5]];
        let b = [[0.5f32, 0.5], [0.0, 0.5], [0.0, 0.0]];
        let i = uv_islands(&[mesh(&a, &[[0, 1, 2]]), mesh(&b, &[[0, 1, 2]])]);
        assert_eq!(i.count, 1);
        // A NaN triangle belongs to no island.
        let n = [[f32::NAN, 0.0], [0.5, 0.0], [0.5, 0.5]];
        let i = uv_islands(&[mesh(&n, &[[0, 1, 2]])]);
        assert_eq!((i.count, i.island[0]), (0, u32::MAX));
    }
}
