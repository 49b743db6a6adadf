//! The weld: points within a tolerance are one vertex (transitively:
//! union-find over a hash grid), so UV seams and hard-normal splits are not
//! holes. Linear in the number of points for real meshes: a sorted walk over
//! wide cells first, hash grids when that cannot answer, and dense cells
//! welded whole only when even those are pathological ([`Welded::exact`]).

use super::hash::FxMap;
use crate::geom::parts::split_by_lengths;
use crate::geom::unionfind::{SharedUnionFind, UnionFind};
use rayon::prelude::*;
use std::collections::HashMap;

/// Distance comparisons the exact weld may make per point (plus a fixed
/// allowance) before it falls back to welding dense cells whole. Real meshes
/// need a handful per point; only hostile or absurdly dense input (thousands
/// of distinct positions within a few tolerances) reaches the limit, and the
/// fallback keeps it linear.
pub const WELD_COMPARISONS_PER_POINT: u64 = 64;
/// Points of a neighbouring cell scanned per point once in fallback mode.
pub const MAX_CELL_POINTS: usize = 32;
/// Width of a weld grid cell, in tolerances: wide cells mean few points lie
/// within a tolerance of a cell face (1 in 8 per axis), so few neighbour
/// cells are looked up.
pub const CELL_TOLERANCES: f64 = 16.0;

/// Welds points: any two within `tol` (Euclidean) are one vertex, and the
/// relation is closed transitively, so the result does not depend on point
/// order. Returns the welded index of every point (numbered in order of
/// first appearance) and the number of welded vertices. Non-finite points
/// are never welded to anything.
///
/// Points go into a hash grid of cells [`CELL_TOLERANCES`] tolerances wide;
/// a point is compared with the points of its own cell and of the
/// neighbouring cells whose faces lie within `tol` of it (for real meshes,
/// usually none). At tolerance 0 only identical positions weld.
pub fn weld(points: &[[f64; 3]], tol: f64) -> (Vec<u32>, usize) {
    let w = weld_report(points, tol);
    (w.labels, w.count)
}

/// What [`weld_report`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Welded {
    /// Welded index of every point, numbered in order of first appearance.
    pub labels: Vec<u32>,
    /// Number of welded vertices.
    pub count: usize,
    /// False only when pathological density made the weld fall back to
    /// merging whole tolerance-wide cells (positions up to sqrt(3) tolerances
    /// apart may then merge).
    pub exact: bool,
}

/// [`weld`], saying whether the result is exact. Wide cells (fast for real
/// meshes, where welded positions are far closer than the tolerance and
/// distinct ones far apart) are tried first; when they hold too many
/// distinct positions to compare pairwise, the weld restarts on cells one
/// tolerance wide, and only if even those are pathologically dense does it
/// merge dense cells whole.
pub fn weld_report(points: &[[f64; 3]], tol: f64) -> Welded {
    match weld_sorted(points, tol) {
        Ok(w) => return w,
        Err(SortedMiss::TooDense) => {
            // Dense cells are most often one position repeated (a zero-filled
            // accessor, vertices never written): weld the distinct positions,
            // which cost nothing to compare, and map the labels back.
            if let Some(w) = weld_distinct(points, tol) {
                return w;
            }
        }
        Err(SortedMiss::NotPackable) => {
            if let Some(w) = weld_grid(points, tol, CELL_TOLERANCES, false) {
                return w;
            }
        }
    }
    weld_grid(points, tol, 1.0, true).expect("the fallback pass always completes")
}

/// [`weld_report`] on the distinct positions of `points` (bit for bit;
/// non-finite points stay apart), or `None` when they are not fewer than
/// half the points. Labels stay numbered in order of first appearance: the
/// distinct positions are listed in that order.
fn weld_distinct(points: &[[f64; 3]], tol: f64) -> Option<Welded> {
    let mut index: HashMap<[u64; 3], u32> = HashMap::with_capacity(points.len() / 4);
    let mut distinct: Vec<[f64; 3]> = Vec::new();
    let of: Vec<u32> = points
        .iter()
        .map(|p| {
            let push = |distinct: &mut Vec<[f64; 3]>| {
                distinct.push(*p);
                (distinct.len() - 1) as u32
            };
            if p.iter().all(|v| v.is_finite()) {
                *index.entry(p.map(f64::to_bits)).or_insert_with(|| push(&mut distinct))
            } else {
                push(&mut distinct)
            }
        })
        .collect();
    if distinct.len() * 2 > points.len() {
        return None;
    }
    drop(index);
    let w = weld_report(&distinct, tol);
    Some(Welded { labels: of.iter().map(|&d| w.labels[d as usize]).collect(), count: w.count, exact: w.exact })
}

/// Why [`weld_sorted`] handed over to the hash grid.
#[derive(Debug, PartialEq, Eq)]
enum SortedMiss {
    /// Tolerance 0, or cell coordinates beyond the packed range.
    NotPackable,
    /// The comparison budget ran out: too many distinct positions per cell.
    TooDense,
}

/// Marks a non-finite point in [`weld_sorted`]'s key array.
const KEY_SKIP: u64 = u64::MAX;
/// Marks a point whose cell does not pack into 63 bits.
const KEY_WIDE: u64 = u64::MAX - 1;

/// The exact weld on cells [`CELL_TOLERANCES`] tolerances wide, without a
/// hash table: every point's cell key is computed (in parallel), the keys
/// are sorted with their points' numbers, so each cell is a run of the
/// sorted array, and neighbouring cells are found by a merge walk: for a
/// fixed offset, the neighbour keys of ascending cells ascend, so one
/// galloping cursor per offset finds them all. The same pairs are compared
/// as in [`weld_grid`] and the union-find closure is the same, so the
/// labels are identical; the sorted walk reads the cells in order, where the
/// hash table missed the cache on every point (about 3x faster on a
/// 500,000-point mesh). The walk runs in parts of the cells on the pool
/// ([`crate::geom::parts`]), each with cursors of its own, joining into
/// one [`SharedUnionFind`] (s13's world mesh, 650,000 points: its build 134
/// -> 127 ms, medians of 14 interleaved runs).
///
/// The sort: where a cell's coordinates, counted from the mesh's lowest
/// cell on each axis, and a point's number fit one u64 together
/// ([`CellCode::compact`]: a mesh a few metres across at the default
/// tolerance), each point is that one number, the cell above its number,
/// sorted by a radix sort on the cell's bits alone
/// ([`crate::geom::radix::sort_bits`]: four linear passes for s13 instead
/// of a comparison sort of (key, number) pairs twice the size). Otherwise
/// the pairs are sorted as before. Both orders are by cell, then number.
fn weld_sorted(points: &[[f64; 3]], tol: f64) -> Result<Welded, SortedMiss> {
    if !(tol > 0.0 && tol.is_finite()) {
        return Err(SortedMiss::NotPackable);
    }
    let n = points.len();
    let cell = CELL_TOLERANCES * tol;
    let cell_of =
        |p: &[f64; 3]| -> [i64; 3] { [floor_i64(p[0] / cell), floor_i64(p[1] / cell), floor_i64(p[2] / cell)] };
    // A point's packed cell key (KEY_SKIP for a non-finite point, KEY_WIDE
    // for a cell past the packed range) with its cell: the one definition
    // the key pass and the wide path's pairs both read.
    let key_of = |p: &[f64; 3]| -> (u64, [i64; 3]) {
        if !p.iter().all(|v| v.is_finite()) {
            return (KEY_SKIP, [0; 3]);
        }
        let k = cell_of(p);
        (CellMap::pack(k).unwrap_or(KEY_WIDE), k)
    };
    // Each point's key, written in place on the thread pool, with the
    // range of the packed keys' coordinates over the finite points. Beside
    // them, each point's faces near it (`near_bits`), found while the point
    // is at hand: the walk reads a point again only when its cell holds
    // another or a face is near it (a third of s13's points), from an array
    // of a byte a point that stays in the cache, where the points, read in
    // the sorted order, do not (s13's walk: 15.8 -> 6.1 ms, its key pass
    // 3.1 -> 4.2).
    let mut near = vec![0u8; n];
    let mut keys = vec![0u64; n];
    const CHUNK: usize = 1 << 14;
    let span = keys
        .par_chunks_mut(CHUNK)
        .zip(near.par_chunks_mut(CHUNK))
        .zip(points.par_chunks(CHUNK))
        .map(|((keys, near), points)| {
            let mut span = Span::EMPTY;
            for ((key, near), p) in keys.iter_mut().zip(near).zip(points) {
                let (packed, k) = key_of(p);
                *key = packed;
                match packed {
                    KEY_SKIP => span.skipped += 1,
                    KEY_WIDE => span.wide = true,
                    _ => {
                        span.add(packed);
                        *near = near_bits(p, k, cell, tol);
                    }
                }
            }
            span
        })
        .reduce(|| Span::EMPTY, Span::merge);
    if span.wide {
        return Err(SortedMiss::NotPackable);
    }
    let finite = n - span.skipped;
    match CellCode::compact(&span, n) {
        Some((code, id_bits)) => {
            // A point as one number: its cell's compact key above its own
            // number (a non-finite one's cell past every finite cell).
            let past = code.past();
            keys.par_iter_mut().enumerate().for_each(|(i, key)| {
                let cell = if *key == KEY_SKIP { past } else { code.key_of_packed(*key) };
                *key = cell << id_bits | i as u64;
            });
            let mut sorted = crate::geom::radix::sort_bits(keys, id_bits, id_bits + code.bits());
            sorted.truncate(finite);
            let id_mask = (1u64 << id_bits) - 1;
            walk_sorted(points, tol, &near, &code, finite, |a| sorted[a] >> id_bits, |a| (sorted[a] & id_mask) as u32)
        }
        None => {
            // The (key, number) pairs, from the points again once `keys`
            // is dropped, so that the two arrays are never held at once: a
            // million points, one a cell, held 33.1 bytes a point at the
            // weld's peak, where keeping the keys through the walk held 41.1
            // (`the_weld_holds_a_bounded_number_of_bytes_a_point`).
            drop(keys);
            let mut sorted: Vec<(u64, u32)> =
                points.par_iter().enumerate().map(|(i, p)| (key_of(p).0, i as u32)).collect();
            sorted.par_sort_unstable();
            // KEY_SKIP sorts last: cut off.
            sorted.truncate(finite);
            walk_sorted(points, tol, &near, &CellCode::PACKED, finite, |a| sorted[a].0, |a| sorted[a].1)
        }
    }
}

/// The range of packed cell keys' coordinates over a mesh's finite
/// points ([`weld_sorted`]'s key pass), with the points it skipped.
#[derive(Clone, Copy)]
struct Span {
    min: [u64; 3],
    max: [u64; 3],
    /// Non-finite points.
    skipped: usize,
    /// Whether a cell was past the packed range.
    wide: bool,
}

impl Span {
    const EMPTY: Span = Span { min: [u64::MAX; 3], max: [0; 3], skipped: 0, wide: false };

    /// A packed key's coordinates ([`CellCode::PACKED`]).
    fn fields(packed: u64) -> [u64; 3] {
        CellCode::PACKED.coordinates(packed).map(|c| c as u64)
    }

    fn add(&mut self, packed: u64) {
        for (a, f) in Self::fields(packed).into_iter().enumerate() {
            self.min[a] = self.min[a].min(f);
            self.max[a] = self.max[a].max(f);
        }
    }

    fn merge(self, other: Span) -> Span {
        Span {
            min: std::array::from_fn(|a| self.min[a].min(other.min[a])),
            max: std::array::from_fn(|a| self.max[a].max(other.max[a])),
            skipped: self.skipped + other.skipped,
            wide: self.wide || other.wide,
        }
    }
}

/// How a cell's three coordinates lie in one key: coordinate `a`, less
/// `base[a]`, at bit `shift[a]`, below `limit[a]`; keys order as the
/// coordinates do, x first. [`CellCode::PACKED`] is [`CellMap::pack`]'s
/// layout; [`CellCode::compact`] one as narrow as a mesh's cells allow.
struct CellCode {
    base: [u64; 3],
    shift: [u32; 3],
    limit: [i64; 3],
}

/// Bits needed to write `v`.
fn bits_for(v: u64) -> u32 {
    64 - v.leading_zeros()
}

impl CellCode {
    const PACKED: CellCode = CellCode { base: [0; 3], shift: [42, 21, 0], limit: [F; 3] };

    /// The narrowest layout of the cells `span` covers, with room on x for
    /// one cell past them ([`CellCode::past`]), and the bits a number below
    /// `n` takes under it; `None` when both do not fit in 64 bits (or no
    /// point is finite).
    fn compact(span: &Span, n: usize) -> Option<(CellCode, u32)> {
        if span.min[0] > span.max[0] {
            return None;
        }
        let width: [u32; 3] = std::array::from_fn(|a| bits_for(span.max[a] - span.min[a] + u64::from(a == 0)));
        let id_bits = bits_for(n.saturating_sub(1) as u64);
        (width.iter().sum::<u32>() + id_bits <= 64).then(|| {
            let code =
                CellCode { base: span.min, shift: [width[1] + width[2], width[2], 0], limit: width.map(|w| 1i64 << w) };
            (code, id_bits)
        })
    }

    /// Bits a key takes.
    fn bits(&self) -> u32 {
        self.shift[0] + self.limit[0].trailing_zeros()
    }

    /// The key of the cell one past the last on x: after every cell.
    fn past(&self) -> u64 {
        (self.limit[0] as u64 - 1) << self.shift[0]
    }

    /// A packed key ([`CellCode::PACKED`]) in this layout (its cell within
    /// the span this layout was made for).
    fn key_of_packed(&self, packed: u64) -> u64 {
        let f = Span::fields(packed);
        (0..3).fold(0, |key, a| key | (f[a] - self.base[a]) << self.shift[a])
    }

    /// A key's coordinates, as signed numbers in `0..limit`.
    fn coordinates(&self, key: u64) -> [i64; 3] {
        std::array::from_fn(|a| (key >> self.shift[a] & (self.limit[a] as u64 - 1)) as i64)
    }

    /// The key of coordinates in `0..limit` each.
    fn key(&self, c: [i64; 3]) -> u64 {
        (0..3).fold(0, |key, a| key | (c[a] as u64) << self.shift[a])
    }
}

/// [`weld_sorted`] once its finite points are sorted by cell: `m` of
/// them, the one at sorted position `a` in the cell `cell_at(a)` (a key
/// of `code`) with number `id_at(a)`.
fn walk_sorted(
    points: &[[f64; 3]],
    tol: f64,
    near: &[u8],
    code: &CellCode,
    m: usize,
    cell_at: impl Fn(usize) -> u64 + Sync,
    id_at: impl Fn(usize) -> u32 + Sync,
) -> Result<Welded, SortedMiss> {
    let n = points.len();
    let (cell_keys, starts) = cells_of(m, &cell_at);
    let uf = SharedUnionFind::new(n);
    let tol2 = tol * tol;
    let budget = WELD_COMPARISONS_PER_POINT * n as u64 + 1_000_000;
    // The point at sorted position `a`. Read through the sort's numbers:
    // the positions gathered into sorted order first (in parallel) took
    // 10-11 ms of s13's weld and 24 bytes a point, where the walk reads
    // each point once from memory and its cell's neighbours from the cache.
    let at = |a: usize| &points[id_at(a) as usize];
    // Compares the points at sorted positions `a` and `b`.
    let close = |a: usize, b: usize| {
        let (p, q) = (at(a), at(b));
        let d2 = (p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2);
        if d2 <= tol2 {
            uf.union(id_at(a), id_at(b));
        }
    };
    // Walks `cells`, joining the close pairs; returns the comparisons
    // made, or TooDense once they pass the whole walk's budget.
    let walk = |cells: std::ops::Range<usize>| -> Result<u64, SortedMiss> {
        let mut spent = 0u64;
        let mut spend = |k: u64| {
            spent += k;
            if spent > budget { Err(SortedMiss::TooDense) } else { Ok(()) }
        };
        // One cursor per neighbour offset (dx, dy, dz) in -1..=1, index
        // (dx+1)*9 + (dy+1)*3 + (dz+1).
        let mut cursor = [0usize; 27];
        for c in cells {
            let run = starts[c] as usize..starts[c + 1] as usize;
            spend((run.len() * run.len().saturating_sub(1) / 2) as u64)?;
            for a in run.clone() {
                for b in a + 1..run.end {
                    close(a, b);
                }
            }
            let k = code.coordinates(cell_keys[c]);
            for a in run {
                // The same face test as the hash grid, found with the keys.
                let bits = near[id_at(a) as usize];
                if bits == 0 {
                    continue;
                }
                each_neighbour_cell(code, k, face_range(bits), |slot, target| {
                    let found = gallop(&cell_keys, cursor[slot], target);
                    cursor[slot] = found;
                    if found < cell_keys.len() && cell_keys[found] == target {
                        let other = starts[found] as usize..starts[found + 1] as usize;
                        spend(other.len() as u64)?;
                        // Each cross-cell pair is met from both sides; compare it once.
                        for b in other.filter(|&b| b < a) {
                            close(a, b);
                        }
                    }
                    Ok(())
                })?;
            }
        }
        Ok(spent)
    };
    // The cells in parts on the pool, each walked with cursors of its own
    // (a part's first look-ups gallop from the start), joining into one
    // shared union-find; what the parts spent is added up, so the walk is
    // too dense exactly when one pass would have run out of comparisons.
    let cells = cell_keys.len();
    let per = cells.div_ceil(crate::geom::parts::parts_for(cells)).max(1);
    let spent: u64 = (0..cells.div_ceil(per))
        .into_par_iter()
        .map(|k| walk(k * per..((k + 1) * per).min(cells)))
        .sum::<Result<u64, SortedMiss>>()?;
    if spent > budget {
        return Err(SortedMiss::TooDense);
    }
    let (labels, count) = uf.labels();
    Ok(Welded { labels, count, exact: true })
}

/// `x.floor() as i64`, bit for bit for every `x` (NaN and the infinities,
/// which the casts saturate, included), without a call: on the x86-64
/// baseline (no SSE4.1 rounding instruction) `floor` is a call into the C
/// library, three for every point of the weld.
#[inline(always)]
fn floor_i64(x: f64) -> i64 {
    let t = x as i64;
    // Truncation rounds a negative fraction up: one less. Below i64::MIN
    // the cast saturates, and so does the subtraction.
    t.saturating_sub(((t as f64) > x) as i64)
}

/// The runs of equal keys among `n` keys in ascending order (`key(i)` the
/// i-th), the cells: each cell's key, and where each begins (then `n`),
/// so that `keys[c]` is the key of positions `starts[c]..starts[c + 1]`.
/// Found in parts on the pool: each part counts the runs that begin in its
/// range, then writes them where the counts before it end (s13's 650,000
/// points took 5-6 ms on one thread, its other core idle).
fn cells_of(n: usize, key: &(impl Fn(usize) -> u64 + Sync)) -> (Vec<u64>, Vec<u32>) {
    let ranges = crate::geom::parts::ranges(n, crate::geom::parts::parts_for(n), 1);
    let begins = |i: usize| i == 0 || key(i - 1) != key(i);
    let counts: Vec<usize> = ranges.par_iter().map(|r| r.clone().filter(|&i| begins(i)).count()).collect();
    let cells: usize = counts.iter().sum();
    let (mut keys, mut starts) = (vec![0u64; cells], vec![0u32; cells + 1]);
    starts[cells] = n as u32;
    let jobs: Vec<_> = ranges
        .into_iter()
        .zip(split_by_lengths(&mut keys, counts.iter().copied()))
        .zip(split_by_lengths(&mut starts[..cells], counts.iter().copied()))
        .map(|((r, k), st)| (r, k, st))
        .collect();
    jobs.into_par_iter().for_each(|(r, k, st)| {
        for (j, i) in r.filter(|&i| begins(i)).enumerate() {
            (k[j], st[j]) = (key(i), i as u32);
        }
    });
    (keys, starts)
}

/// For a point in cell `k` (cells `cell` wide), the neighbour offsets per
/// axis (-1..=1) whose shared face lies within `tol` of it; `None` when it
/// is near no face (the common case). [`near_bits`], unpacked.
fn near_faces(p: &[f64; 3], k: [i64; 3], cell: f64, tol: f64) -> Option<[[i64; 2]; 3]> {
    let bits = near_bits(p, k, cell, tol);
    (bits != 0).then(|| face_range(bits))
}

/// The faces of cell `k` (cells `cell` wide) within `tol` of `p`, in six
/// bits, two an axis: the low one for the face below (offset -1), the
/// high one for the face above (+1); 0 when no face is near. The sorted
/// weld keeps these (a byte a point); [`near_faces`] unpacks them.
#[inline(always)]
fn near_bits(p: &[f64; 3], k: [i64; 3], cell: f64, tol: f64) -> u8 {
    let mut bits = 0;
    for a in 0..3 {
        let lo = k[a] as f64 * cell;
        bits |= u8::from(p[a] - lo <= tol) << (2 * a) | u8::from(lo + cell - p[a] <= tol) << (2 * a + 1);
    }
    bits
}

/// The offsets per axis that [`near_bits`] packed (not 0).
fn face_range(bits: u8) -> [[i64; 2]; 3] {
    std::array::from_fn(|a| [-i64::from(bits >> (2 * a) & 1), i64::from(bits >> (2 * a + 1) & 1)])
}

/// Packed cell coordinates run over 0..2^21 on each axis (21 bits each in
/// a 63-bit key).
const F: i64 = 1 << 21;

/// Calls `f(slot, key)` for the cells around cell `k` (coordinates of
/// `code`) at the offsets `range` allows ([`near_faces`]), in order, with
/// their keys in `code`, leaving out `k` itself and cells off the code's
/// range; `slot` is the
/// offset's cursor, (dx+1)*9 + (dy+1)*3 + (dz+1). Stops at `f`'s first
/// error. Nested loops, not an iterator chain: a third of a mesh's points
/// come here, and the chain made the weld 5 ms slower on s13.
#[inline(always)]
fn each_neighbour_cell<E>(
    code: &CellCode,
    k: [i64; 3],
    range: [[i64; 2]; 3],
    mut f: impl FnMut(usize, u64) -> Result<(), E>,
) -> Result<(), E> {
    for dx in range[0][0]..=range[0][1] {
        for dy in range[1][0]..=range[1][1] {
            for dz in range[2][0]..=range[2][1] {
                let t = [k[0] + dx, k[1] + dy, k[2] + dz];
                if [dx, dy, dz] == [0; 3] || (0..3).any(|a| !(0..code.limit[a]).contains(&t[a])) {
                    continue;
                }
                let slot = ((dx + 1) * 9 + (dy + 1) * 3 + (dz + 1)) as usize;
                f(slot, code.key(t))?;
            }
        }
    }
    Ok(())
}

/// The first index at or after `from` whose key is at least `target`
/// (`keys` ascending): exponential steps, then a binary search.
fn gallop(keys: &[u64], from: usize, target: u64) -> usize {
    let mut lo = from;
    let mut step = 1;
    let mut hi = from;
    while hi < keys.len() && keys[hi] < target {
        lo = hi + 1;
        hi = from + step;
        step *= 2;
    }
    let hi = hi.min(keys.len());
    lo + keys[lo..hi].partition_point(|&k| k < target)
}

/// One weld pass over a grid of cells `factor` tolerances wide; `None` when
/// the comparison budget runs out and `fallback` is not allowed.
fn weld_grid(points: &[[f64; 3]], tol: f64, factor: f64, fallback_allowed: bool) -> Option<Welded> {
    let n = points.len();
    let mut uf = UnionFind::new(n);
    let mut exact = true;
    // Exact matches only when there is no tolerance: cells one unit wide at
    // tolerance 0 would be meaningless, so compare bit patterns instead.
    let tol = if tol > 0.0 && tol.is_finite() { tol } else { 0.0 };
    let cell = if tol > 0.0 { factor * tol } else { 1.0 };
    let key_of = |p: &[f64; 3]| -> [i64; 3] {
        if tol > 0.0 {
            [floor_i64(p[0] / cell), floor_i64(p[1] / cell), floor_i64(p[2] / cell)]
        } else {
            // -0.0 and 0.0 are the same position.
            [(p[0] + 0.0).to_bits() as i64, (p[1] + 0.0).to_bits() as i64, (p[2] + 0.0).to_bits() as i64]
        }
    };
    // Cells: (head of the linked list of points, count, welded whole); each point knows its cell.
    let mut slots = CellMap::default();
    slots.packed.reserve(n);
    let mut cells: Vec<(u32, u32, bool)> = Vec::new();
    let mut cell_of = vec![u32::MAX; n];
    let mut next = vec![u32::MAX; n];
    for (i, p) in points.iter().enumerate() {
        if !p.iter().all(|v| v.is_finite()) {
            continue;
        }
        let slot = slots.get_or_insert(key_of(p), || {
            cells.push((u32::MAX, 0, false));
            (cells.len() - 1) as u32
        });
        let c = &mut cells[slot as usize];
        next[i] = c.0;
        *c = (i as u32, c.1 + 1, false);
        cell_of[i] = slot;
    }
    let tol2 = tol * tol;
    // The exact pass on tolerance-wide cells gets a larger allowance: it runs
    // only when wide cells were too dense, and exactness is worth time there.
    let per_point = if fallback_allowed { 16 * WELD_COMPARISONS_PER_POINT } else { WELD_COMPARISONS_PER_POINT };
    let mut budget = per_point * n as u64 + if fallback_allowed { 64_000_000 } else { 1_000_000 };
    let scan =
        |i: u32, slot: u32, own: bool, uf: &mut UnionFind, budget: &mut u64, cells: &mut Vec<(u32, u32, bool)>| {
            let p = &points[i as usize];
            let (head, count, whole) = cells[slot as usize];
            let fallback = *budget == 0 && fallback_allowed;
            if fallback && own && count as usize > MAX_CELL_POINTS {
                if !whole {
                    // Weld the dense cell whole, once.
                    cells[slot as usize].2 = true;
                    let mut j = head;
                    while j != u32::MAX {
                        uf.union(head, j);
                        j = next[j as usize];
                    }
                }
                return;
            }
            // Exact: every point of the cell is compared until the budget runs
            // out; then dense cells are sampled.
            let mut j = head;
            let mut scanned = 0;
            while j != u32::MAX && (!fallback || scanned < MAX_CELL_POINTS) {
                scanned += 1;
                *budget = budget.saturating_sub(1);
                if j < i {
                    let q = &points[j as usize];
                    let d2 = (p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2);
                    if d2 <= tol2 {
                        uf.union(i, j);
                    }
                }
                j = next[j as usize];
            }
        };
    for i in 0..n as u32 {
        let slot = cell_of[i as usize];
        if slot == u32::MAX {
            continue;
        }
        if budget == 0 {
            if !fallback_allowed {
                return None;
            }
            exact = false;
        }
        scan(i, slot, true, &mut uf, &mut budget, &mut cells);
        if tol == 0.0 {
            continue;
        }
        // Neighbouring cells only where the point lies within tol of a face
        // (cells are CELL_TOLERANCES wide, so usually none).
        let p = &points[i as usize];
        let k = key_of(p);
        let Some(range) = near_faces(p, k, cell, tol) else { continue };
        for dx in range[0][0]..=range[0][1] {
            for dy in range[1][0]..=range[1][1] {
                for dz in range[2][0]..=range[2][1] {
                    if dx == 0 && dy == 0 && dz == 0 {
                        continue;
                    }
                    if let Some(slot) = slots.get([k[0].wrapping_add(dx), k[1].wrapping_add(dy), k[2].wrapping_add(dz)])
                    {
                        scan(i, slot, false, &mut uf, &mut budget, &mut cells);
                    }
                }
            }
        }
    }
    let (labels, count) = uf.labels();
    Some(Welded { labels, count, exact })
}

/// Grid cells to slots. Cell coordinates within +/-2^20 (a span of a
/// million cells per axis: 167 m at the default tolerance) pack into one
/// u64, which halves the table and its cache misses; others use the full key.
#[derive(Default)]
struct CellMap {
    packed: FxMap<u64, u32>,
    wide: FxMap<[i64; 3], u32>,
}

impl CellMap {
    const LIMIT: i64 = 1 << 20;

    fn pack(k: [i64; 3]) -> Option<u64> {
        k.iter()
            .all(|&c| (-Self::LIMIT..Self::LIMIT).contains(&c))
            .then(|| CellCode::PACKED.key(k.map(|c| c + Self::LIMIT)))
    }

    fn get_or_insert(&mut self, k: [i64; 3], new: impl FnOnce() -> u32) -> u32 {
        match Self::pack(k) {
            Some(p) => *self.packed.entry(p).or_insert_with(new),
            None => *self.wide.entry(k).or_insert_with(new),
        }
    }

    fn get(&self, k: [i64; 3]) -> Option<u32> {
        match Self::pack(k) {
            Some(p) => self.packed.get(&p).copied(),
            None => self.wide.get(&k).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_found_in_parts_are_the_runs_of_equal_keys() {
        let mut rng = crate::geom::testrng::XorShift::new(0xce11);
        for n in [0usize, 1, 2, 5, 70_000, 200_001] {
            let mut sorted: Vec<(u64, u32)> = (0..n).map(|i| (rng.below(n as u64 / 3 + 1), i as u32)).collect();
            sorted.sort_unstable();
            let (mut keys, mut starts) = (Vec::new(), Vec::new());
            for (i, &(k, _)) in sorted.iter().enumerate() {
                if keys.last() != Some(&k) {
                    keys.push(k);
                    starts.push(i as u32);
                }
            }
            starts.push(n as u32);
            assert_eq!(cells_of(n, &|i| sorted[i].0), (keys, starts), "{n} keys");
        }
    }

    #[test]
    fn compact_keys_order_as_packed_keys_and_find_the_same_neighbours() {
        // Cells over a span of each axis: their compact keys order as the
        // packed keys do, each key's coordinates come back, the cell past
        // them sorts after all, and a neighbour's compact key is the
        // compact key of its packed one.
        let mut rng = crate::geom::testrng::XorShift::new(0xc0de);
        for (lo, wide) in [([-5i64, 7, 0], [3i64, 1, 40]), ([-1000, -1000, -1000], [4000, 17, 1]), ([0; 3], [0; 3])] {
            let cells: Vec<[i64; 3]> =
                (0..500).map(|_| std::array::from_fn(|a| lo[a] + rng.below(wide[a] as u64 + 1) as i64)).collect();
            let mut span = Span::EMPTY;
            let packed: Vec<u64> = cells.iter().map(|&k| CellMap::pack(k).expect("packable")).collect();
            packed.iter().for_each(|&p| span.add(p));
            let (code, id_bits) = CellCode::compact(&span, 500).expect("narrow");
            assert_eq!(id_bits, 9);
            let compact: Vec<u64> = packed.iter().map(|&p| code.key_of_packed(p)).collect();
            for i in 0..cells.len() {
                assert!(compact[i] < code.past() && code.past() < 1 << code.bits());
                for j in 0..cells.len() {
                    assert_eq!(packed[i].cmp(&packed[j]), compact[i].cmp(&compact[j]));
                }
                let c = code.coordinates(compact[i]);
                assert_eq!(code.key(c), compact[i]);
                // Counted from the lowest cell of each axis.
                let want: [i64; 3] = std::array::from_fn(|a| cells[i][a] + CellMap::LIMIT - span.min[a] as i64);
                assert_eq!(c, want);
                let mut seen = 0;
                let all = [[-1, 1]; 3];
                each_neighbour_cell(&code, c, all, |_, key| {
                    let t = code.coordinates(key);
                    let back: [i64; 3] = std::array::from_fn(|a| t[a] + span.min[a] as i64 - CellMap::LIMIT);
                    assert_eq!(code.key_of_packed(CellMap::pack(back).expect("packable")), key);
                    seen += 1;
                    Ok::<(), ()>(())
                })
                .unwrap();
                assert!(seen <= 26);
            }
        }
    }

    /// The faces near a point, by their definition: per axis, the face
    /// below when the point is within `tol` above it, the face above when
    /// within `tol` below it.
    fn near_by_definition(p: &[f64; 3], k: [i64; 3], cell: f64, tol: f64) -> Option<[[i64; 2]; 3]> {
        let mut range = [[0i64; 2]; 3];
        for a in 0..3 {
            let lo = k[a] as f64 * cell;
            range[a] = [if p[a] - lo <= tol { -1 } else { 0 }, if lo + cell - p[a] <= tol { 1 } else { 0 }];
        }
        range.iter().any(|r| r != &[0, 0]).then_some(range)
    }

    #[test]
    fn the_faces_found_with_the_keys_are_the_faces_the_walk_tested() {
        // Points inside cells, on their faces, a tolerance from them (each
        // side), at corners, at negative coordinates, and in cells barely
        // two tolerances wide (both faces of an axis near): the bits, and
        // near_faces (them unpacked), are the definition's answer.
        let mut rng = crate::geom::testrng::XorShift::new(0xfa_ce5);
        let mut seen = [false; 64];
        for (tol, cells) in [(1e-3, CELL_TOLERANCES), (0.25, 2.0), (1e-7, CELL_TOLERANCES)] {
            let cell = cells * tol;
            for _ in 0..20_000 {
                let p: [f64; 3] = std::array::from_fn(|_| {
                    let k = (rng.unit() * 20.0).floor() - 10.0;
                    let within = match rng.below(5) {
                        0 => 0.0,
                        1 => tol,
                        2 => cell - tol,
                        3 => tol * (1.0 + 1e-12),
                        _ => rng.unit() * cell,
                    };
                    k * cell + within
                });
                let k = p.map(|v| floor_i64(v / cell));
                let want = near_by_definition(&p, k, cell, tol);
                assert_eq!(near_faces(&p, k, cell, tol), want, "{p:?} {tol}");
                let bits = near_bits(&p, k, cell, tol);
                assert_eq!(bits == 0, want.is_none(), "{p:?} {tol}");
                seen[bits as usize] = true;
            }
        }
        assert!(seen.iter().filter(|&&s| s).count() >= 27, "faces below, above and none on every axis");
    }

    #[test]
    fn floor_without_a_call_is_floor_for_every_kind_of_number() {
        let mut rng = crate::geom::testrng::XorShift::new(0x00f1_0012);
        let special = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            -1.0,
            1.0 - f64::EPSILON,
            -1.0 + f64::EPSILON / 2.0,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            4_503_599_627_370_495.5,
            -4_503_599_627_370_495.5,
            9.223_372_036_854_775e18,
            -9.223_372_036_854_775e18,
            1e300,
            -1e300,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let random = (0..100_000).map(|i| (rng.unit() - 0.5) * 10f64.powi(i % 40 - 20));
        for x in special.into_iter().chain(random) {
            assert_eq!(floor_i64(x), x.floor() as i64, "{x:e}");
        }
    }

    #[test]
    fn sorted_weld_matches_the_hash_grid() {
        // Clusters of near-coincident points on and around cell faces, some
        // non-finite points, negative coordinates: the sorted weld and the
        // hash-grid weld must label every point the same way.
        let mut rng = crate::geom::testrng::XorShift::new(0x9e37_79b9_7f4a_7c15u64);
        let mut rnd = move || rng.unit();
        let tol = 1e-3;
        let cell = CELL_TOLERANCES * tol;
        for round in 0..40 {
            let mut pts = Vec::new();
            for _ in 0..200 {
                // A centre near a cell corner or face, then a few jittered copies.
                let c = [0, 1, 2].map(|_| ((rnd() * 20.0).floor() - 10.0) * cell + (rnd() - 0.5) * 3.0 * tol);
                for _ in 0..(1 + (rnd() * 4.0) as usize) {
                    pts.push(c.map(|v| v + (rnd() - 0.5) * 1.5 * tol));
                }
            }
            if round % 5 == 0 {
                pts.push([f64::NAN, 0.0, 0.0]);
                pts.push([f64::INFINITY, 1.0, 1.0]);
            }
            let sorted = weld_sorted(&pts, tol).expect("sparse enough");
            let grid = weld_grid(&pts, tol, CELL_TOLERANCES, false).expect("sparse enough");
            assert_eq!(sorted, grid, "round {round}");
            assert!(sorted.count < pts.len(), "round {round}: some points weld");
        }
        // Past PARALLEL_FROM cells, so the walk runs in parts joining one
        // shared union-find: still the hash grid's labels.
        let mut pts = Vec::new();
        for _ in 0..80_000 {
            let c = [0, 1, 2].map(|_| ((rnd() * 200.0).floor() - 100.0) * cell + (rnd() - 0.5) * 3.0 * tol);
            for _ in 0..(1 + (rnd() * 3.0) as usize) {
                pts.push(c.map(|v| v + (rnd() - 0.5) * 1.5 * tol));
            }
        }
        let sorted = weld_sorted(&pts, tol).expect("sparse enough");
        // Clusters at cell corners of their own (few of the 8 million share
        // one): more cells than welded vertices, which are more than
        // PARALLEL_FROM.
        assert!(sorted.count < pts.len() && sorted.count > crate::geom::parts::PARALLEL_FROM);
        assert_eq!(sorted, weld_grid(&pts, tol, CELL_TOLERANCES, false).expect("sparse enough"));
        // Out of the packed range, and tolerance 0: handed to the hash grid.
        assert_eq!(weld_sorted(&[[1e12, 0.0, 0.0]], 1e-5), Err(SortedMiss::NotPackable));
        // Found among others, and with a non-finite point sorted after it.
        let wide = [[0.0; 3], [f64::NAN, 0.0, 0.0], [0.0, -1e12, 0.0], [1.0, 1.0, 1.0], [f64::INFINITY; 3]];
        assert_eq!(weld_sorted(&wide, 1e-5), Err(SortedMiss::NotPackable));
        assert_eq!(weld_sorted(&[[0.0; 3]], 0.0), Err(SortedMiss::NotPackable));
        // Clusters across the whole packed range (2^21 cells an axis, 63
        // bits of cell): too wide for the compact keys, so the pairs are
        // sorted, and the labels are still the hash grid's.
        let reach = (CellMap::LIMIT - 2) as f64 * cell;
        let mut pts = Vec::new();
        for _ in 0..3_000 {
            let c = [0, 1, 2].map(|_| (rnd() * 2.0 - 1.0) * reach);
            for _ in 0..(1 + (rnd() * 3.0) as usize) {
                pts.push(c.map(|v| v + (rnd() - 0.5) * 1.5 * tol));
            }
        }
        pts.push([f64::NAN, 0.0, 0.0]);
        let mut span = Span::EMPTY;
        pts.iter()
            .filter(|p| p[0].is_finite())
            .for_each(|p| span.add(CellMap::pack([0, 1, 2].map(|a| floor_i64(p[a] / cell))).expect("packable")));
        assert!(CellCode::compact(&span, pts.len()).is_none(), "too wide for one u64");
        let sorted = weld_sorted(&pts, tol).expect("sparse enough");
        assert!(sorted.count < pts.len());
        assert_eq!(sorted, weld_grid(&pts, tol, CELL_TOLERANCES, false).expect("sparse enough"));
    }

    #[test]
    fn the_walk_in_parts_runs_out_of_comparisons_as_one_pass_does() {
        // 70,000 points a cell apart, each alone in its cell's centre, and
        // two dense cells of 2,500 points at the two ends of the key order,
        // so that two parts take one each: each costs 3.1 million
        // comparisons, under the budget of 64 a point and a million (5.8
        // million); both together are over it, as one pass would find.
        let tol = 1e-3;
        let cell = CELL_TOLERANCES * tol;
        let centre = |x: f64| [(x + 0.5) * cell, 0.5 * cell, 0.5 * cell];
        let dense = |x: f64| (0..2_500).map(move |j| [(x + 0.5) * cell, (0.4 + j as f64 * 1e-5) * cell, 0.5 * cell]);
        let sparse = (0..70_000).map(|i| centre(2.0 * i as f64));
        let one: Vec<[f64; 3]> = dense(-10.0).chain(sparse.clone()).collect();
        assert!(weld_sorted(&one, tol).is_ok(), "one dense cell is within the budget");
        let both: Vec<[f64; 3]> = dense(-10.0).chain(sparse).chain(dense(150_000.0)).collect();
        assert_eq!(weld_sorted(&both, tol), Err(SortedMiss::TooDense));
    }

    #[test]
    fn coarse_tolerances_stay_exact() {
        // A dense grid at a tolerance that covers several grid steps: the
        // wide-cell pass runs out of comparisons and the exact pass takes over.
        let pts: Vec<[f64; 3]> =
            (0..60).flat_map(|x| (0..60).map(move |y| [x as f64 * 0.01, y as f64 * 0.01, 0.0])).collect();
        let w = weld_report(&pts, 0.0099);
        assert!(w.exact);
        assert_eq!(w.count, pts.len(), "0.01 apart, tolerance 0.0099: nothing welds");
        let w = weld_report(&pts, 0.0101);
        assert!(w.exact);
        assert_eq!(w.count, 1, "every neighbour within tolerance: one vertex");
    }

    /// The most bytes a point [`weld_report`] holds at once beside the
    /// points, in clusters of `per` points within a tolerance of each
    /// other, the clusters' centres `spread` cells apart at most on each
    /// axis.
    fn weld_peak_per_point(clusters: usize, per: usize, spread: f64) -> f64 {
        let mut rng = crate::geom::testrng::XorShift::new(0x51a7_0ad5_eed5_u64);
        let mut rnd = move || rng.unit();
        let tol = 1e-5;
        let cell = CELL_TOLERANCES * tol;
        let mut pts = Vec::with_capacity(clusters * per);
        for _ in 0..clusters {
            let c = [0, 1, 2].map(|_| (rnd() - 0.5) * spread * cell);
            for _ in 0..per {
                pts.push(c.map(|v| v + (rnd() - 0.5) * 0.5 * tol));
            }
        }
        let before = crate::testing::mark_live();
        let w = weld_report(&pts, tol);
        let held = crate::testing::peak_live() - before;
        assert!(w.exact && w.count <= clusters, "every cluster welds");
        held as f64 / pts.len() as f64
    }

    #[test]
    fn the_weld_holds_a_bounded_number_of_bytes_a_point() {
        if !crate::testing::alone("geom::mesh::weld::tests::the_weld_holds_a_bounded_number_of_bytes_a_point") {
            return;
        }
        // The compact path: keys, near-face bits, the radix sort's second
        // buffer, then the union-find and the cells (a key and a start
        // each) beside the keys. The wide path: the (key, number) pairs in
        // place of the keys, made after the keys are dropped (with the keys
        // kept through the walk it held 41.1 and 30.7 bytes a point).
        let reach = 2.0 * (CellMap::LIMIT - 2) as f64;
        for (path, spread, one_a_cell, eight_a_cell) in [("compact", 1e4, 26.0, 18.0), ("wide", reach, 34.0, 24.0)] {
            for (per, budget) in [(1, one_a_cell), (8, eight_a_cell)] {
                let held = weld_peak_per_point(1_000_000 / per, per, spread);
                assert!(held <= budget, "{path} path, {per} a cell: {held:.2} bytes a point, over {budget}");
            }
        }
    }

    #[test]
    fn weld_is_transitive_and_order_free() {
        // A chain 0 - 1 - 2, each step 0.8 tol: one vertex, whatever the order.
        let pts = vec![[0.0, 0.0, 0.0], [0.8, 0.0, 0.0], [1.6, 0.0, 0.0], [5.0, 0.0, 0.0]];
        let (w, n) = weld(&pts, 1.0);
        assert_eq!(n, 2);
        assert_eq!(w[0], w[2]);
        let rev: Vec<_> = pts.iter().rev().copied().collect();
        assert_eq!(weld(&rev, 1.0).1, 2);
        let (_, n) = weld(&[[f64::NAN, 0.0, 0.0], [f64::NAN, 0.0, 0.0]], 1.0);
        assert_eq!(n, 2, "non-finite points never weld");
        let (w, _) = weld(&[[0.0, 0.0, 0.0], [-0.0, 0.0, 0.0]], 0.0);
        assert_eq!(w[0], w[1]);
    }

    #[test]
    fn dense_cells_stay_linear() {
        // 100,000 distinct points in one cell: the exact weld runs out of
        // budget and welds the dense cell whole, quickly.
        let pts: Vec<[f64; 3]> = (0..100_000).map(|i| [i as f64 * 1e-12, 0.0, 0.0]).collect();
        let (_, n) = weld(&pts, 1e-5);
        assert_eq!(n, 1);
    }

    #[test]
    fn one_position_repeated_welds_exactly_and_at_once() {
        // 131,071 copies of the origin (a zero-filled accessor; fuzz find:
        // 200 million comparisons before the dense fallback), with a few other
        // points and a NaN: distinct positions are welded, labels mapped back.
        let mut pts = vec![[0.0; 3]; 131_071];
        pts[5] = [1.0, 0.0, 0.0];
        pts[6] = [1.0 + 1e-7, 0.0, 0.0];
        pts[7] = [f64::NAN, 0.0, 0.0];
        pts[8] = [f64::NAN, 0.0, 0.0];
        let w = weld_report(&pts, 1e-5);
        assert!(w.exact);
        assert_eq!(w.count, 4, "origin, the pair near x = 1, and each NaN alone");
        assert_eq!((w.labels[0], w.labels[5], w.labels[6], w.labels[7], w.labels[8]), (0, 1, 1, 2, 3));
        assert!(w.labels[9..].iter().all(|&l| l == 0));
        // The same answer as the grid weld, which compares every pair.
        let g = weld_grid(&pts[..2000], 1e-5, 1.0, true).unwrap();
        assert_eq!(weld_report(&pts[..2000], 1e-5).labels, g.labels);
    }
}
