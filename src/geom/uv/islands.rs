//! UV islands: connected components of a layout's triangles joined across
//! shared UV edges, compared exactly by their f32 bits ([`uv_islands`]).
//! The padding measurement (UV-005) measures the gaps between them.

use super::layout::UvMesh;
use crate::geom::bits::Bits;
use crate::geom::parts::{self, parts_for};
use crate::geom::prefetch::{BLOCK, prefetch};
use crate::geom::unionfind::SharedUnionFind;
use rayon::prelude::*;
use std::sync::atomic::Ordering::Relaxed;

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
    /// with non-finite UVs or an invalid index. Empty when
    /// [`uv_islands_if_several`] found fewer than two islands.
    pub island: Vec<u32>,
    /// Number of islands.
    pub count: u32,
}

/// UV islands: connected components of triangles joined across shared UV
/// edges. Two triangles share an edge when both have an edge between the same
/// two UV points, compared exactly by their f32 bits (in either direction),
/// across meshes too; triangles touching only at a point stay apart, as do
/// the two sides of a UV seam. O(vertices + triangles), in parts on the
/// thread pool ([`parts_for`]); the islands do not depend on the parts.
pub fn uv_islands(meshes: &[UvMesh<'_>]) -> Islands {
    let total: usize = meshes.iter().map(|m| m.triangles.len()).sum();
    islands_in_parts(meshes, parts_for(total), 0)
}

/// [`uv_islands`], with each triangle's island only where there are two
/// islands or more: one island (or none) has no neighbour to measure, and
/// its `island` is left empty. The sets are counted first, without
/// labelling 1.3M triangles for nothing (s13, one island: 4-6 ms of
/// UV-005).
pub fn uv_islands_if_several(meshes: &[UvMesh<'_>]) -> Islands {
    let total: usize = meshes.iter().map(|m| m.triangles.len()).sum();
    islands_in_parts(meshes, parts_for(total), 2)
}

/// A vertex's point in [`point_ids`] when its UV is not finite: no usable
/// triangle reads it.
const NO_POINT: u32 = u32::MAX;

/// A triangle's corners as point ids when it is usable: every index within
/// its mesh's UVs, and every UV finite.
fn corner_points(uvs: &[[f32; 2]], point: &[u32], t: [u32; 3]) -> Option<[u32; 3]> {
    corner_uvs(uvs, t).filter(finite).map(|_| t.map(|v| point[v as usize]))
}

/// [`uv_islands`] in `parts` parts (1 or more), the triangles labelled
/// only when there are at least `labelled_from` islands: the triangles in that many
/// ranges, each counted and bucketed on a thread of its own, and the
/// buckets joined in as many ranges into one [`SharedUnionFind`].
///
/// Edges are bucketed by their lower point id (a counting sort), to be
/// joined within each bucket by their higher id. Each part counts its
/// triangles' edges into counts of its own; one pass over the points then
/// turns every part's counts into where its entries go (the buckets in
/// point order, each bucket's entries in part order, so in triangle order:
/// the sequential layout), and each part writes its entries there. A
/// triangle's corners are read twice from the point ids, to count and to
/// fill, rather than held in an array of their own (12 bytes a triangle
/// beside the buckets' 24). After the fill, the last part's positions are
/// every bucket's end, and the others' are freed.
fn islands_in_parts(meshes: &[UvMesh<'_>], parts: usize, labelled_from: usize) -> Islands {
    let parts = parts.max(1);
    let (point, points) = point_ids(meshes);
    // Each mesh's first vertex and first triangle, then the triangles in all.
    let (mut base, mut tri_base) = (Vec::with_capacity(meshes.len()), Vec::with_capacity(meshes.len() + 1));
    let (mut vertices, mut total) = (0usize, 0usize);
    for m in meshes {
        base.push(vertices);
        tri_base.push(total);
        vertices += m.uvs.len();
        total += m.triangles.len();
    }
    tri_base.push(total);
    // Triangle ranges on whole words of the usable flags (each part sets
    // the bits of its own words).
    let ranges = parts::ranges(total, parts, 64);
    let edges_of = |c: [u32; 3]| [(c[0], c[1]), (c[1], c[2]), (c[2], c[0])].map(|(a, b)| (a.min(b), a.max(b)));
    let mut counts: Vec<Vec<u32>> = (0..parts).map(|_| vec![0u32; points]).collect();
    let mut usable = vec![0u64; total.div_ceil(64)];
    {
        let mut jobs = Vec::with_capacity(parts);
        for ((range, count), words) in ranges.iter().zip(counts.iter_mut()).zip(parts::flag_words(&mut usable, &ranges))
        {
            // Counted into: each page read before it is written.
            crate::memory::prefault(count);
            jobs.push((range.clone(), count, words));
        }
        jobs.into_par_iter().for_each(|(range, count, words)| {
            let first = range.start;
            each_triangle(meshes, &tri_base, range, |mi, g, t| {
                if let Some(c) = corner_points(meshes[mi].uvs, &point[base[mi]..], t) {
                    words[(g - first) / 64] |= 1 << (g % 64);
                    for (lo, hi) in edges_of(c) {
                        count[lo as usize] += (lo != hi) as u32;
                    }
                }
            });
        });
    }
    // Every part's counts become its first position in each bucket.
    let at = parts::positions_from_counts(&mut counts);
    let mut entries = vec![0u64; at as usize];
    crate::memory::prefault(&mut entries);
    {
        // Each part writes entries of its own (their places are disjoint):
        // (higher point, triangle), packed so that sorting the numbers
        // sorts the pairs.
        let shared = parts::shared_u64s(&mut entries);
        let jobs: Vec<_> = ranges.into_iter().zip(counts.iter_mut()).collect();
        jobs.into_par_iter().for_each(|(range, fill)| {
            each_triangle(meshes, &tri_base, range, |mi, g, t| {
                if let Some(c) = corner_points(meshes[mi].uvs, &point[base[mi]..], t) {
                    for (lo, hi) in edges_of(c) {
                        if lo != hi {
                            let f = &mut fill[lo as usize];
                            shared[*f as usize].store(u64::from(hi) << 32 | g as u64, Relaxed);
                            *f += 1;
                        }
                    }
                }
            });
        });
    }
    drop(point);
    let end = counts.pop().expect("one part at least");
    drop(counts);
    // Buckets joined in ranges of points holding about equal entries.
    let sets = SharedUnionFind::new(total);
    let mut jobs = Vec::with_capacity(parts);
    let (mut rest, mut from, mut taken) = (&mut entries[..], 0usize, 0usize);
    for i in 1..=parts {
        let to = if i == parts { points } else { end.partition_point(|&e| (e as usize) < at as usize / parts * i) };
        let to = to.max(from);
        let upto = if to == 0 { 0 } else { end[to - 1] as usize };
        let (head, tail) = rest.split_at_mut(upto - taken);
        jobs.push((from..to, taken, head));
        (rest, from, taken) = (tail, to, upto);
    }
    jobs.into_par_iter().for_each(|(range, first, part)| {
        let mut lo_at = first;
        for p in range {
            let hi_at = end[p] as usize;
            let bucket = &mut part[lo_at - first..hi_at - first];
            lo_at = hi_at;
            if bucket.len() < 2 {
                continue;
            }
            bucket.sort_unstable();
            for k in 1..bucket.len() {
                if bucket[k] >> 32 == bucket[k - 1] >> 32 {
                    sets.union(bucket[k - 1] as u32, bucket[k] as u32);
                }
            }
        }
    });
    drop(entries);
    drop(end);
    // Unusable triangles were never joined.
    let usable = Bits::from_words(usable, total);
    let unusable = |t: usize| !usable.get(t);
    if labelled_from > 0 {
        let count = sets.count_sets(unusable);
        if count < labelled_from {
            return Islands { island: Vec::new(), count: count as u32 };
        }
    }
    let (island, count) = sets.into_labels(unusable);
    Islands { island, count: count as u32 }
}

/// Calls `f(mesh, triangle, corners)` for the triangles `range` of the
/// meshes in order: the mesh's index, the triangle's number across the
/// meshes, and its corners (`tri_base` is each mesh's first triangle, then
/// the total).
fn each_triangle(
    meshes: &[UvMesh<'_>],
    tri_base: &[usize],
    range: std::ops::Range<usize>,
    mut f: impl FnMut(usize, usize, [u32; 3]),
) {
    let mut g = range.start;
    let mut mi = tri_base.partition_point(|&b| b <= g).saturating_sub(1);
    while g < range.end && mi < meshes.len() {
        let local = g - tri_base[mi];
        let upto = range.end.min(tri_base[mi + 1]);
        for &t in &meshes[mi].triangles[local..upto - tri_base[mi]] {
            f(mi, g, t);
            g += 1;
        }
        mi += 1;
    }
}

/// Every vertex's UV point (vertices with the same UV bits, across meshes,
/// are one point), as an id in `0..points` numbered in order of first
/// appearance, and `points`; [`NO_POINT`] for a vertex whose UV is not
/// finite. Open addressing with linear probing, on this thread: hashing in
/// parts into one table took longer on two cores than this (each slot
/// claimed by a compare-and-swap, and its first vertex kept by another,
/// both missing the cache), and hashing in parts that each own a run of
/// the table saved nothing in a whole run: the other core is busy with
/// UV-004's summary while this runs (BENCHMARKS.md, "Thirty-ninth step").
fn point_ids(meshes: &[UvMesh<'_>]) -> (Vec<u32>, usize) {
    let vertices: usize = meshes.iter().map(|m| m.uvs.len()).sum();
    // At most two thirds full (a third of the memory of a table twice the
    // points, with probes still short).
    let cap = (vertices + vertices / 2).next_power_of_two().max(16);
    let shift = 64 - cap.trailing_zeros();
    // A slot is a key's two halves, low first, and its id + 1 (0 marks an
    // empty slot): a probe reads one slot, 12 bytes, where a table of keys
    // beside a table of ids missed the cache (and the TLB) in each (s13's
    // UV-005 alone: 0.080 -> 0.077 s; BENCHMARKS.md, "Forty-first step").
    let mut slots = vec![[0u32; 3]; cap];
    // Probed all over, each page read before it is written: faulted in at
    // once (`memory::prefault`), as the counts in `islands_in_parts`.
    crate::memory::prefault(&mut slots);
    let mut point: Vec<u32> = Vec::with_capacity(vertices);
    let mut points = 0u32;
    let slot_of = |k: u64| (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
    let mut keys = [0u64; BLOCK];
    for m in meshes {
        // Each block's slots are fetched before its points are probed in
        // order (the table is far larger than the caches).
        for block in m.uvs.chunks(BLOCK) {
            for (k, &p) in keys.iter_mut().zip(block) {
                *k = uv_key(p);
                prefetch(&slots[slot_of(*k)]);
            }
            for (&k, &p) in keys.iter().zip(block) {
                if !(p[0].is_finite() && p[1].is_finite()) {
                    point.push(NO_POINT);
                    continue;
                }
                let mut i = slot_of(k);
                loop {
                    let [lo, hi, id] = slots[i];
                    if id == 0 {
                        points += 1;
                        slots[i] = [k as u32, (k >> 32) as u32, points];
                        point.push(points - 1);
                        break;
                    }
                    if (u64::from(hi) << 32 | u64::from(lo)) == k {
                        point.push(id - 1);
                        break;
                    }
                    i = (i + 1) & (cap - 1);
                }
            }
        }
    }
    (point, points as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::unionfind::UnionFind;
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
            let want = islands_by_edge_map(&meshes);
            assert_eq!(uv_islands(&meshes), want, "round {round}");
            // Labelled only from two islands: the same count, and the same
            // labels or none.
            let several = uv_islands_if_several(&meshes);
            assert_eq!(several.count, want.count, "round {round}");
            let labels = if want.count >= 2 { want.island.clone() } else { Vec::new() };
            assert_eq!(several.island, labels, "round {round}");
            // In parts, whatever their number (ranges empty, or ending inside a mesh).
            for parts in 2..=5 {
                assert_eq!(islands_in_parts(&meshes, parts, 0), want, "round {round}, {parts} parts");
            }
        }
    }

    #[test]
    fn point_ids_name_each_uv_point_once() {
        // Few distinct UV points over several meshes (so points are found
        // again, and probes collide), NaN and infinite UVs, and -0.0 beside
        // 0.0; blocks of the probe ended inside a mesh.
        let mut rng = crate::geom::testrng::XorShift::new(0x0901_71d5);
        for (round, (meshes_n, per_mesh, distinct)) in
            [(1usize, 0usize, 1u64), (1, 5, 3), (3, 200, 40), (4, 3000, 5000), (2, 40_000, 30_000)]
                .into_iter()
                .enumerate()
        {
            let uvs: Vec<Vec<[f32; 2]>> = (0..meshes_n)
                .map(|_| {
                    (0..per_mesh)
                        .map(|_| match rng.below(50) {
                            0 => [f32::NAN, 0.25],
                            1 => [0.5, f32::INFINITY],
                            2 => [-0.0, 0.0],
                            _ => {
                                let d = rng.below(distinct);
                                [d as f32 / 7.0, (d % 13) as f32]
                            }
                        })
                        .collect()
                })
                .collect();
            let meshes: Vec<UvMesh<'_>> = uvs.iter().map(|u| mesh(u, &[])).collect();
            let all: Vec<[f32; 2]> = uvs.concat();
            let (point, points) = point_ids(&meshes);
            assert_eq!(point.len(), all.len(), "round {round}");
            // One id a point (the same bits, -0.0 read as 0.0), numbered in
            // order of first appearance.
            let bits = |x: f32| if x == 0.0 { 0 } else { x.to_bits() };
            let mut named: std::collections::HashMap<(u32, u32), u32> = Default::default();
            for (&uv, &id) in all.iter().zip(&point) {
                if !(uv[0].is_finite() && uv[1].is_finite()) {
                    assert_eq!(id, NO_POINT, "round {round}");
                    continue;
                }
                let next = named.len() as u32;
                assert_eq!(*named.entry((bits(uv[0]), bits(uv[1]))).or_insert(next), id, "round {round}");
            }
            assert_eq!(named.len(), points, "round {round}");
        }
    }

    #[test]
    fn islands_in_parts_match_an_edge_map_on_large_layouts() {
        // Enough vertices that the table's probes collide and the parts
        // hash, count and join at once: a grid of points split into strips
        // by seams (a strip's edge vertices duplicated), spread over three
        // meshes, with triangles in random order.
        let mut rng = crate::geom::testrng::XorShift::new(0x1d2c_3b4a);
        let n = 120usize;
        let at = |x: usize, y: usize| [x as f32 / n as f32, y as f32 / n as f32 + (x / 17) as f32 * 2.0];
        let mut uvs = Vec::new();
        let mut index = std::collections::HashMap::new();
        let mut vertex = |x: usize, y: usize, strip: usize, uvs: &mut Vec<[f32; 2]>| {
            *index.entry((x, y, strip)).or_insert_with(|| {
                uvs.push(if x.is_multiple_of(17) && strip != x / 17 { [x as f32, y as f32] } else { at(x, y) });
                (uvs.len() - 1) as u32
            })
        };
        let mut tris = Vec::new();
        for y in 0..n - 1 {
            for x in 0..n - 1 {
                let s = x / 17;
                let [a, b, c, d] =
                    [(x, y), (x + 1, y), (x + 1, y + 1), (x, y + 1)].map(|(x, y)| vertex(x, y, s, &mut uvs));
                tris.push([a, b, c]);
                tris.push([a, c, d]);
            }
        }
        for i in (1..tris.len()).rev() {
            tris.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let (one, rest) = tris.split_at(tris.len() / 3);
        let (two, three) = rest.split_at(rest.len() / 2);
        let meshes = [mesh(&uvs, one), mesh(&uvs, two), mesh(&uvs, three)];
        let want = islands_by_edge_map(&meshes);
        assert!(want.count > 1);
        for parts in 1..=4 {
            assert_eq!(islands_in_parts(&meshes, parts, 0), want, "{parts} parts");
        }
        // Past PARALLEL_FROM triangles the sets are counted on the pool.
        let whole = [mesh(&uvs, &tris)];
        let one_island = uv_islands_if_several(&[mesh(&[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], &[[0, 1, 2]; 3])]);
        assert_eq!((one_island.count, one_island.island.len()), (1, 0));
        assert_eq!(uv_islands_if_several(&whole), islands_by_edge_map(&whole));
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
