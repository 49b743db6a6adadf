//! The texel rasteriser the overlap and padding measurements share: UVs
//! snapped to a fixed-point grid (`snap`), each triangle set up as
//! half-planes over a clipped texel box (`setup`) and walked row by row
//! (`spans`), sampled at texel centres with a top-left fill rule or
//! conservatively (`Coverage`); and the raster a layout is measured on
//! ([`plan_raster`], `rasterise`).
//!
//! Rasterisation is exact: UVs are snapped to a fixed-point grid of
//! [`SUBTEXEL`] steps per texel and every coverage test is integer
//! arithmetic, so two triangles that share an edge are treated identically
//! whatever their vertex order. Costs are bounded: a raster side is at most
//! [`MAX_RASTER_PX`], and a layout whose triangles would make the
//! rasteriser visit more than [`RASTER_WORK_BUDGET`] texels is measured at a
//! halved resolution (the [`RasterPlan::scale`] says by how much).

use super::layout::UvMesh;
use std::cmp::Ordering;

/// Largest raster side in texels; larger textures are measured at this size.
pub const MAX_RASTER_PX: u32 = 4096;
/// Raster side used when no texture is bound to a UV set.
pub const DEFAULT_RASTER_PX: u32 = 1024;
/// UVs whose magnitude exceeds this (in tile units) cannot be snapped to the
/// fixed-point grid without overflow; a triangle that has one and still
/// reaches into the tile is left out (counted as unusable).
pub const MAX_UV_MAGNITUDE: f64 = 1024.0;
/// Most texel visits (the sum of the triangles' clipped bounding-box areas)
/// one rasterisation may make before the resolution is halved: 2^28.
pub const RASTER_WORK_BUDGET: f64 = 268_435_456.0;
/// Fixed-point steps per texel (8 bits of sub-texel precision).
pub const SUBTEXEL: i64 = 1 << 8;

/// Bounding boxes at most this many texels wide are scanned texel by texel;
/// wider ones solve each row's span with divisions.
const NARROW_SPAN: i64 = 24;

/// The raster a layout is measured on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RasterPlan {
    /// Raster width in texels (1..=4096).
    pub width: u32,
    /// Raster height in texels (1..=4096).
    pub height: u32,
    /// Raster side / requested (texture) side, in (0, 1]: 1 when the
    /// texture is measured at its own resolution, 0.5 for an 8192 texture.
    pub scale: f64,
}

impl RasterPlan {
    /// The longer raster side in texels.
    pub fn resolution(&self) -> u32 {
        self.width.max(self.height)
    }
}

/// How each triangle of a layout relates to the tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Entirely outside [0,1) in u or in v (e.g. a copy moved by whole units).
    Outside,
    /// Non-finite UVs, an index past the UV list, or UVs too large to snap.
    Unusable,
    /// Reaches into the tile: the fixed-point corners.
    Inside([[i64; 2]; 3]),
}

/// Triangle counts of one rasterisation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TriangleCounts {
    /// Triangles that reach into the [0,1) tile and were rasterised.
    pub rasterised: u64,
    /// Triangles entirely outside the tile, ignored (copies moved out by whole units, ...).
    pub outside: u64,
    /// Triangles left out: non-finite UVs, an invalid index, or UVs beyond +/-1024.
    pub unusable: u64,
}

impl std::ops::Add for TriangleCounts {
    type Output = TriangleCounts;
    fn add(self, o: TriangleCounts) -> TriangleCounts {
        TriangleCounts {
            rasterised: self.rasterised + o.rasterised,
            outside: self.outside + o.outside,
            unusable: self.unusable + o.unusable,
        }
    }
}

impl std::ops::AddAssign for TriangleCounts {
    fn add_assign(&mut self, o: TriangleCounts) {
        *self = *self + o;
    }
}

/// A vertex snapped to the fixed-point grid of a raster, with flags.
#[derive(Debug, Clone, Copy, Default)]
struct Snap {
    fixed: [i32; 2],
    flags: u8,
}

const U_LOW: u8 = 1; // u <= 0
const U_HIGH: u8 = 2; // u >= 1
const V_LOW: u8 = 4; // v <= 0
const V_HIGH: u8 = 8; // v >= 1
const OUTSIDE: u8 = U_LOW | U_HIGH | V_LOW | V_HIGH;
const NON_FINITE: u8 = 16;
const HUGE: u8 = 32;

fn snap(p: [f32; 2], width: u32, height: u32) -> Snap {
    let [u, v] = p;
    if !u.is_finite() || !v.is_finite() {
        return Snap { fixed: [0; 2], flags: NON_FINITE };
    }
    let flag = |on: bool, bit: u8| if on { bit } else { 0 };
    let flags = flag(u <= 0.0, U_LOW)
        | flag(u >= 1.0, U_HIGH)
        | flag(v <= 0.0, V_LOW)
        | flag(v >= 1.0, V_HIGH)
        | flag(u.abs() as f64 > MAX_UV_MAGNITUDE || v.abs() as f64 > MAX_UV_MAGNITUDE, HUGE);
    if flags & HUGE != 0 {
        return Snap { fixed: [0; 2], flags };
    }
    // Round half away from zero; within +/-2^30, so i32 holds it.
    let fix = |x: f32, side: u32| {
        let f = x as f64 * (side as i64 * SUBTEXEL) as f64;
        (f + 0.5f64.copysign(f)) as i32
    };
    Snap { fixed: [fix(u, width), fix(v, height)], flags }
}

/// Classifies a triangle from its snapped corners: unusable when one is
/// missing or not finite, outside when all three lie beyond the same side of
/// the tile, unusable when one is too large to snap, else inside.
fn classify_snapped(snaps: &[Snap], t: [u32; 3]) -> Class {
    classify_corners(t.map(|i| snaps.get(i as usize).copied()))
}

/// [`classify_snapped`] of a triangle's three snapped corners (`None`: an
/// index past the vertices).
fn classify_corners(corners: [Option<Snap>; 3]) -> Class {
    let [Some(a), Some(b), Some(c)] = corners else {
        return Class::Unusable;
    };
    let any = a.flags | b.flags | c.flags;
    if any & NON_FINITE != 0 {
        Class::Unusable
    } else if a.flags & b.flags & c.flags & OUTSIDE != 0 {
        Class::Outside
    } else if any & HUGE != 0 {
        Class::Unusable
    } else {
        Class::Inside([a, b, c].map(|s| [s.fixed[0] as i64, s.fixed[1] as i64]))
    }
}

#[cfg(test)]
fn classify(uvs: &[[f32; 2]], t: [u32; 3], width: u32, height: u32) -> Class {
    let snaps: Vec<Snap> = uvs.iter().map(|&p| snap(p, width, height)).collect();
    classify_snapped(&snaps, t)
}

/// Which texels a triangle covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Coverage {
    /// Texels whose centre lies inside, with a top-left fill rule on edges:
    /// triangles sharing an edge never both cover a texel.
    Centre,
    /// Texels whose open square meets the closed triangle (conservative):
    /// slivers and zero-area triangles still mark the texels they cross.
    Conservative,
}

/// `c + a*x + b*y >= 0` at texel (x, y).
#[derive(Debug, Clone, Copy, Default)]
struct HalfPlane {
    a: i64,
    b: i64,
    c: i64,
}

/// A triangle ready to rasterise: up to three half-planes and a clipped,
/// inclusive texel box.
#[derive(Debug, Clone, Copy)]
pub(super) struct Setup {
    planes: [HalfPlane; 3],
    n: usize,
    x0: i64,
    x1: i64,
    y0: i64,
    y1: i64,
}

impl Setup {
    /// The clipped, inclusive texel box: (x0, x1, y0, y1). Every texel the
    /// triangle covers lies in it.
    pub(super) fn bounds(&self) -> (i64, i64, i64, i64) {
        (self.x0, self.x1, self.y0, self.y1)
    }
}

/// floor(a / SUBTEXEL), by shifting (SUBTEXEL is 2^8).
fn texel_floor(a: i64) -> i64 {
    a >> 8
}

/// ceil(a / SUBTEXEL).
fn texel_ceil(a: i64) -> i64 {
    -((-a) >> 8)
}

/// The half-plane left of the directed edge `p -> q` (where the edge function
/// (q - p) x (s - p) is positive), sampled at offset (ox, oy) inside each
/// texel, strict when `strict`.
fn half_plane(p: [i64; 2], q: [i64; 2], ox: i64, oy: i64, strict: bool) -> HalfPlane {
    let (ex, ey) = (q[0] - p[0], q[1] - p[1]);
    let bias = if strict { -1 } else { 0 };
    HalfPlane { a: -ey * SUBTEXEL, b: ex * SUBTEXEL, c: ex * (oy - p[1]) - ey * (ox - p[0]) + bias }
}

/// The conservative half-plane of edge `p -> q`: sampled at the texel corner
/// that lies furthest inside, strictly (a texel touching the edge only along
/// its border is not covered).
fn conservative_plane(p: [i64; 2], q: [i64; 2]) -> HalfPlane {
    let (ex, ey) = (q[0] - p[0], q[1] - p[1]);
    let ox = if ey < 0 { SUBTEXEL } else { 0 };
    let oy = if ex > 0 { SUBTEXEL } else { 0 };
    half_plane(p, q, ox, oy, true)
}

pub(super) fn setup(tri: [[i64; 2]; 3], mode: Coverage, width: u32, height: u32) -> Option<Setup> {
    let [p0, mut p1, mut p2] = tri;
    let area2 = (p1[0] - p0[0]) as i128 * (p2[1] - p0[1]) as i128 - (p1[1] - p0[1]) as i128 * (p2[0] - p0[0]) as i128;
    let min_x = p0[0].min(p1[0]).min(p2[0]);
    let max_x = p0[0].max(p1[0]).max(p2[0]);
    let min_y = p0[1].min(p1[1]).min(p2[1]);
    let max_y = p0[1].max(p1[1]).max(p2[1]);
    let mut planes = [HalfPlane::default(); 3];
    let mut n = 0;
    let (x0, x1, y0, y1);
    match mode {
        Coverage::Centre => {
            if area2 == 0 {
                return None;
            }
            if area2 < 0 {
                std::mem::swap(&mut p1, &mut p2);
            }
            let half = SUBTEXEL / 2;
            for (p, q) in [(p0, p1), (p1, p2), (p2, p0)] {
                let (ex, ey) = (q[0] - p[0], q[1] - p[1]);
                // Top-left rule: of an edge's two directions exactly one is
                // inclusive, so a shared edge belongs to one triangle.
                let inclusive = ey < 0 || (ey == 0 && ex > 0);
                planes[n] = half_plane(p, q, half, half, !inclusive);
                n += 1;
            }
            x0 = texel_ceil(min_x - half);
            x1 = texel_floor(max_x - half);
            y0 = texel_ceil(min_y - half);
            y1 = texel_floor(max_y - half);
        }
        Coverage::Conservative => {
            if area2 == 0 {
                // A segment (or a point): its line must cross the texel's
                // interior, seen from both sides; the box test does the rest.
                let edges = [(p0, p1), (p1, p2), (p2, p0)];
                let longest = edges.iter().max_by_key(|(p, q)| (q[0] - p[0]).abs() + (q[1] - p[1]).abs());
                if let Some(&(p, q)) = longest.filter(|(p, q)| p != q) {
                    planes[0] = conservative_plane(p, q);
                    planes[1] = conservative_plane(q, p);
                    n = 2;
                }
            } else {
                if area2 < 0 {
                    std::mem::swap(&mut p1, &mut p2);
                }
                for (p, q) in [(p0, p1), (p1, p2), (p2, p0)] {
                    planes[n] = conservative_plane(p, q);
                    n += 1;
                }
            }
            x0 = texel_floor(min_x);
            x1 = texel_ceil(max_x) - 1;
            y0 = texel_floor(min_y);
            y1 = texel_ceil(max_y) - 1;
        }
    }
    let (x0, x1) = (x0.max(0), x1.min(width as i64 - 1));
    let (y0, y1) = (y0.max(0), y1.min(height as i64 - 1));
    (x0 <= x1 && y0 <= y1).then_some(Setup { planes, n, x0, x1, y0, y1 })
}

/// Calls `f(y, x0, x1)` for each row's run of covered texels (inclusive).
pub(super) fn spans(s: &Setup, mut f: impl FnMut(usize, usize, usize)) {
    let planes = &s.planes[..s.n];
    if s.x1 - s.x0 >= NARROW_SPAN {
        return wide_spans(s, f);
    }
    for y in s.y0..=s.y1 {
        let (lo, hi) = (s.x0, s.x1);
        // Scan: evaluate the edge functions texel by texel.
        let mut v = [0i64; 3];
        for (k, p) in planes.iter().enumerate() {
            v[k] = p.c + p.b * y + p.a * lo;
        }
        let inside = |v: &[i64; 3]| v[..planes.len()].iter().all(|&x| x >= 0);
        let mut first = None;
        let mut last = lo - 1;
        let mut x = lo;
        while x <= hi {
            if inside(&v) {
                first.get_or_insert(x);
                last = x;
            } else if first.is_some() {
                break;
            }
            for (k, p) in planes.iter().enumerate() {
                v[k] += p.a;
            }
            x += 1;
        }
        if let Some(first) = first {
            f(y as usize, first as usize, last as usize);
        }
    }
}

/// [`spans`] of a box at least [`NARROW_SPAN`] texels wide: each row's run
/// solved from the edge functions, `c + b*y + a*x >= 0` giving `x >=
/// -floor((c + b*y) / a)` where `a > 0` and `x <= floor((c + b*y) / -a)`
/// where `a < 0`. The quotients are carried from row to row as quotient and
/// remainder (a step of `b` adds `b`'s own quotient and remainder, and a
/// carry), so a row costs additions where it cost three 64-bit divisions:
/// the same integers, about a third of the time on a layout of a few large
/// triangles (a box's faces, a card).
fn wide_spans(s: &Setup, mut f: impl FnMut(usize, usize, usize)) {
    /// floor((c + b*y) / d) for d > 0, row after row: `q` and `r` with
    /// `c + b*y = q*d + r`, `0 <= r < d`.
    #[derive(Clone, Copy)]
    struct Stepped {
        q: i64,
        r: i64,
        d: i64,
        bq: i64,
        br: i64,
    }
    impl Stepped {
        fn at(c: i64, b: i64, d: i64) -> Stepped {
            Stepped { q: c.div_euclid(d), r: c.rem_euclid(d), d, bq: b.div_euclid(d), br: b.rem_euclid(d) }
        }
        fn step(&mut self) {
            self.q += self.bq;
            self.r += self.br;
            if self.r >= self.d {
                self.r -= self.d;
                self.q += 1;
            }
        }
    }
    // Per plane: a lower bound (a > 0), an upper bound (a < 0), or a row
    // test (a == 0: the whole row is in or out).
    let mut lower: [Option<Stepped>; 3] = [None; 3];
    let mut upper: [Option<Stepped>; 3] = [None; 3];
    let mut flat: [Option<(i64, i64)>; 3] = [None; 3];
    for (k, p) in s.planes[..s.n].iter().enumerate() {
        let c = p.c + p.b * s.y0;
        match p.a.cmp(&0) {
            Ordering::Greater => lower[k] = Some(Stepped::at(c, p.b, p.a)),
            Ordering::Less => upper[k] = Some(Stepped::at(c, p.b, -p.a)),
            Ordering::Equal => flat[k] = Some((p.c, p.b)),
        }
    }
    for y in s.y0..=s.y1 {
        let (mut lo, mut hi) = (s.x0, s.x1);
        let mut empty = false;
        for k in 0..3 {
            if let Some(l) = &mut lower[k] {
                lo = lo.max(-l.q);
                l.step();
            }
            if let Some(u) = &mut upper[k] {
                hi = hi.min(u.q);
                u.step();
            }
            if let Some((c, b)) = flat[k] {
                empty |= c + b * y < 0;
            }
        }
        if !empty && lo <= hi {
            f(y as usize, lo as usize, hi as usize);
        }
    }
}

/// The raster for a `width` x `height` texture divided by `div` (a power of
/// two): the texture's size, scaled down, keeping its aspect, so that the
/// longer side is at most [`MAX_RASTER_PX`]. Zero sizes count as 1.
pub(super) fn raster_at(width: u32, height: u32, div: f64) -> RasterPlan {
    let (w, h) = (width.max(1), height.max(1));
    let side = w.max(h);
    let scale = (MAX_RASTER_PX as f64 / side as f64).min(1.0) / div;
    let d = |x: u32| ((x as f64 * scale).round() as u32).clamp(1, MAX_RASTER_PX);
    let (rw, rh) = (d(w), d(h));
    RasterPlan { width: rw, height: rh, scale: rw.max(rh) as f64 / side as f64 }
}

/// Calls `f(mesh, triangle, corners)`, in input order, for every triangle
/// that reaches into the tile of `plan` (`triangle` numbers all triangles,
/// meshes in order, then triangles; `corners` are fixed-point). Returns the
/// triangle counts and the texel visits a rasterisation makes at most (the
/// sum of clipped conservative bounding-box areas), or `None` as soon as
/// those exceed `budget`.
pub(super) fn for_each_inside(
    meshes: &[UvMesh<'_>],
    plan: RasterPlan,
    budget: f64,
    mut f: impl FnMut(usize, usize, [[i64; 2]; 3]),
) -> Option<(TriangleCounts, f64)> {
    let (mut counts, mut work) = (TriangleCounts::default(), 0.0);
    let (mut first, mut snaps) = (0usize, Vec::new());
    for (mi, m) in meshes.iter().enumerate() {
        snap_into(&mut snaps, m, plan);
        let (c, w) = visit_mesh(plan, budget - work, mi, first, m.triangles, &snaps, &mut f)?;
        counts += c;
        work += w;
        first += m.triangles.len();
    }
    Some((counts, work))
}

/// How [`for_each_inside_in_parts`] cuts a layout: into about `count`
/// ranges of its triangles, in all, from meshes of at least
/// `min_triangles` ([`PIECE_MIN`]) triangles.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pieces {
    /// Ranges in all (each large mesh gets its share).
    pub count: usize,
    /// The fewest triangles of a mesh cut into ranges.
    pub min_triangles: usize,
}

/// [`for_each_inside`] in ranges of the layout's triangles (`pieces`; as
/// `f`'s second argument numbers them) on the pool, a mesh at a time,
/// into one state: each mesh of at least `pieces.min_triangles`
/// triangles is cut into ranges (its share of `pieces.count`), each a job
/// of its own visited into a state made by `start`, the states merged
/// (`merge`) as the jobs end and then into the first; a smaller
/// mesh is visited into the first state on this thread. Returns the state
/// and the triangle counts, or `None` when the visits together pass
/// `budget`, which is when [`for_each_inside`]'s running sum would (the
/// visits only add up, and are whole numbers, exact in an `f64`). A range
/// whose visits with those of the ranges done before it pass the budget
/// stops there.
pub(super) fn for_each_inside_in_parts<S: Send>(
    meshes: &[UvMesh<'_>],
    plan: RasterPlan,
    budget: f64,
    pieces: Pieces,
    start: impl Fn() -> S + Sync,
    merge: impl Fn(&mut S, S) + Sync,
    f: impl Fn(&mut S, usize, usize, [[i64; 2]; 3]) + Sync,
) -> Option<(S, TriangleCounts)> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    let total: usize = meshes.iter().map(|m| m.triangles.len()).sum();
    let (mut state, mut counts, mut work) = (start(), TriangleCounts::default(), 0.0);
    // One mesh's vertices snapped at a time, as `for_each_inside` holds
    // them (a large mesh's on the pool).
    let (mut first, mut snaps) = (0usize, Vec::new());
    for (mi, m) in meshes.iter().enumerate() {
        let tris = m.triangles;
        if tris.len() < pieces.min_triangles.max(1) {
            snap_into(&mut snaps, m, plan);
            let (c, w) = visit_mesh(plan, budget - work, mi, first, tris, &snaps, |m, t, c| f(&mut state, m, t, c))?;
            counts += c;
            work += w;
        } else {
            snaps.clear();
            snaps.par_extend(m.uvs.par_iter().map(|&q| snap(q, plan.width, plan.height)));
            let its = (pieces.count * tris.len()).div_ceil(total.max(1)).max(1);
            let left = budget - work;
            // Each range a job of its own (`with_max_len(1)`), so that a
            // thread that comes free takes the ranges not yet started: left
            // to rayon's splitting, two threads' ranges ran as four runs of
            // four, and a thread that finished the light checks found none
            // to take while the other ran its last run alone (s13: 7 ms of
            // UV-002 on one core; BENCHMARKS.md, "Forty-first step"). The
            // visits the ranges have made so far are shared, so that a
            // range stops once they pass the budget, as one pass would.
            let spent = AtomicU64::new(0);
            let visit_range = |range: std::ops::Range<usize>| {
                let before = spent.load(Relaxed) as f64;
                let mut part = start();
                let visit = |m, t, corners| f(&mut part, m, t, corners);
                let at = first + range.start;
                let (c, w) = visit_mesh(plan, left - before, mi, at, &tris[range], &snaps, visit)?;
                // Visits are whole numbers, exact in an `f64` and a `u64`.
                spent.fetch_add(w as u64, Relaxed);
                Some((part, c, w))
            };
            let done = crate::geom::parts::ranges(tris.len(), its, 1)
                .into_par_iter()
                .with_max_len(1)
                .map(visit_range)
                .reduce_with(|a, b| {
                    let ((mut part, c, w), (more, more_c, more_w)) = (a?, b?);
                    merge(&mut part, more);
                    Some((part, c + more_c, w + more_w))
                });
            if let Some(done) = done {
                let (part, c, w) = done?;
                merge(&mut state, part);
                counts += c;
                work += w;
            }
            if work > budget {
                return None;
            }
        }
        first += tris.len();
    }
    Some((state, counts))
}

/// The fewest triangles of a mesh that [`for_each_inside_in_parts`] cuts
/// into ranges on the pool: below it a range's state (a raster of its own,
/// made, then merged) costs more than the visits it shares.
pub(super) const PIECE_MIN: usize = 1 << 14;

/// `m`'s vertices snapped to `plan`'s grid, into `snaps` (cleared first).
fn snap_into(snaps: &mut Vec<Snap>, m: &UvMesh<'_>, plan: RasterPlan) {
    snaps.clear();
    snaps.extend(m.uvs.iter().map(|&q| snap(q, plan.width, plan.height)));
}

/// [`for_each_inside`] over `triangles` of mesh `mesh` (its vertices
/// snapped in `snaps`), the first numbered `first`: their counts and
/// visits, or `None` as soon as the visits pass `budget`.
fn visit_mesh(
    plan: RasterPlan,
    budget: f64,
    mesh: usize,
    first: usize,
    triangles: &[[u32; 3]],
    snaps: &[Snap],
    mut f: impl FnMut(usize, usize, [[i64; 2]; 3]),
) -> Option<(TriangleCounts, f64)> {
    let (w, h) = (plan.width as i64, plan.height as i64);
    let mut counts = TriangleCounts::default();
    let mut work = 0.0;
    for (global, &t) in (first..).zip(triangles) {
        match classify_snapped(snaps, t) {
            Class::Outside => counts.outside += 1,
            Class::Unusable => counts.unusable += 1,
            Class::Inside(c) => {
                counts.rasterised += 1;
                let lo = |k: usize| c[0][k].min(c[1][k]).min(c[2][k]);
                let hi = |k: usize| c[0][k].max(c[1][k]).max(c[2][k]);
                let cols = (texel_ceil(hi(0)) - 1).min(w - 1) - texel_floor(lo(0)).max(0) + 1;
                let rows = (texel_ceil(hi(1)) - 1).min(h - 1) - texel_floor(lo(1)).max(0) + 1;
                work += (cols.max(0) * rows.max(0)) as f64;
                if work > budget {
                    return None;
                }
                f(mesh, global, c);
            }
        }
    }
    Some((counts, work))
}

/// Whether any triangle of `meshes` reaches into the tile of `plan` (one
/// that [`for_each_inside`] would visit): the first one found answers, and
/// only its corners are snapped. A layout of one island needs nothing more
/// (UV-005: an island with no neighbour has no gap to measure, and is
/// counted when it reaches into the tile), where counting every triangle
/// took 20-30 ms of a 1.3M-triangle sphere's run, alone on the critical path.
pub(super) fn any_inside(meshes: &[UvMesh<'_>], plan: RasterPlan) -> bool {
    meshes.iter().any(|m| {
        let corner = |i: u32| m.uvs.get(i as usize).map(|&q| snap(q, plan.width, plan.height));
        m.triangles.iter().any(|t| matches!(classify_corners(t.map(corner)), Class::Inside(_)))
    })
}

/// The raster for a layout bound to a `width` x `height` texture: the
/// texture's size, scaled down (keeping its aspect) so that the longer side
/// is at most [`MAX_RASTER_PX`], then halved while rasterising would visit
/// more than [`RASTER_WORK_BUDGET`] texels. Zero sizes count as 1.
pub fn plan_raster(meshes: &[UvMesh<'_>], width: u32, height: u32) -> RasterPlan {
    let mut div = 1.0;
    loop {
        let plan = raster_at(width, height, div);
        if plan.resolution() == 1 || for_each_inside(meshes, plan, RASTER_WORK_BUDGET, |_, _, _| {}).is_some() {
            return plan;
        }
        div *= 2.0;
    }
}

/// Rasterises a layout in one pass when the work fits the budget at the
/// capped resolution (the usual case), else at the resolution
/// [`plan_raster`] picks: `start` makes the state for a raster, `tri` adds
/// one triangle to it.
pub(super) fn rasterise<S>(
    meshes: &[UvMesh<'_>],
    width: u32,
    height: u32,
    mut start: impl FnMut(RasterPlan) -> S,
    mut tri: impl FnMut(&mut S, usize, usize, [[i64; 2]; 3]),
) -> (S, RasterPlan, TriangleCounts) {
    let (plan, (state, counts)) = within_budget(meshes, width, height, |plan, budget| {
        let mut state = start(plan);
        for_each_inside(meshes, plan, budget, |m, t, c| tri(&mut state, m, t, c)).map(|(counts, _)| (state, counts))
    });
    (state, plan, counts)
}

/// `run(plan, budget)` at the capped resolution with
/// [`RASTER_WORK_BUDGET`], and when it passes the budget (`None`) again at
/// the resolution [`plan_raster`] picks, with no budget: the plan it ran
/// at and what it made. [`rasterise`]'s plan, for a rasterisation of its
/// own (UV-002's in parts).
pub(super) fn within_budget<T>(
    meshes: &[UvMesh<'_>],
    width: u32,
    height: u32,
    mut run: impl FnMut(RasterPlan, f64) -> Option<T>,
) -> (RasterPlan, T) {
    let plan = raster_at(width, height, 1.0);
    if let Some(done) = run(plan, RASTER_WORK_BUDGET) {
        return (plan, done);
    }
    let plan = plan_raster(meshes, width, height);
    (plan, run(plan, f64::INFINITY).expect("no rasterisation passes an infinite budget"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::uv::layout::fixtures::{SQUARE, mesh};

    #[test]
    fn scan_and_stepped_spans_agree_with_every_texel_tested() {
        // Deterministic pseudo-random triangles, many crossing the tile's
        // border, on rasters where boxes narrower than NARROW_SPAN are
        // scanned and wider ones solved row by row with carried quotients
        // (wide_spans): both against the edge functions evaluated at every
        // texel of the box.
        let mut rng = crate::geom::testrng::XorShift::new(0x2545_f491_4f6c_dd1du64);
        let mut next = move || rng.unit();
        let (mut narrow, mut wide) = (0, 0);
        for side in [64u32, 257] {
            for i in 0..800 {
                // Half of them with corners on a grid of eighths, whose edge
                // functions divide evenly on some rows (a carried remainder
                // reaching its divisor exactly).
                let at =
                    |u: f64| if i % 2 == 0 { (u * 1.4 - 0.2) as f32 } else { ((u * 12.0).floor() / 8.0 - 0.25) as f32 };
                let c: [[f32; 2]; 3] = std::array::from_fn(|_| [at(next()), at(next())]);
                let Class::Inside(f) = classify(&c, [0, 1, 2], side, side) else { continue };
                for mode in [Coverage::Centre, Coverage::Conservative] {
                    let Some(s) = setup(f, mode, side, side) else { continue };
                    let mut texel = Vec::new();
                    for y in s.y0..=s.y1 {
                        for x in s.x0..=s.x1 {
                            if s.planes[..s.n].iter().all(|p| p.c + p.a * x + p.b * y >= 0) {
                                texel.push((y as usize, x as usize));
                            }
                        }
                    }
                    let mut span = Vec::new();
                    spans(&s, |y, x0, x1| span.extend((x0..=x1).map(|x| (y, x))));
                    assert_eq!(texel, span, "{c:?} {mode:?} {side}");
                    if s.x1 - s.x0 >= NARROW_SPAN { wide += 1 } else { narrow += 1 }
                }
            }
        }
        assert!(narrow > 50 && wide > 200, "both paths tested: {narrow} narrow, {wide} wide");
    }

    #[test]
    fn any_inside_answers_as_counting_every_triangle_does() {
        // Layouts of one to three meshes whose triangles mostly lie beyond
        // one side of the tile (copies moved out by whole units), with
        // corners on the tile's edges, non-finite, too large to snap, or
        // past the UVs: the first triangle found inside answers as the
        // count of every triangle does.
        let mut rng = crate::geom::testrng::XorShift::new(0x0005_eed0_f0e1_0005);
        let (mut yes, mut no) = (0, 0);
        for round in 0..400 {
            let corner = |rng: &mut crate::geom::testrng::XorShift| -> [f32; 2] {
                let shift = [1.0f32, -1.0, 0.0, 0.0][rng.below(4) as usize];
                match rng.below(40) {
                    0 => [f32::NAN, 0.5],
                    1 => [0.5, 1e6],
                    2 => [1.0, rng.unit() as f32],
                    _ if round % 3 == 0 => [rng.unit() as f32, rng.unit() as f32],
                    _ => [rng.unit() as f32 + 1.0 + shift.abs(), rng.unit() as f32 + shift],
                }
            };
            type Layout = (Vec<[f32; 2]>, Vec<[u32; 3]>);
            let layouts: Vec<Layout> = (0..1 + rng.below(3))
                .map(|_| {
                    let n = 3 + rng.below(12) as usize;
                    let uvs: Vec<[f32; 2]> = (0..n).map(|_| corner(&mut rng)).collect();
                    let tris = (0..rng.below(8))
                        .map(|_| {
                            let past = u64::from(rng.below(10) == 0);
                            std::array::from_fn(|_| rng.below(n as u64 + past) as u32)
                        })
                        .collect();
                    (uvs, tris)
                })
                .collect();
            let meshes: Vec<UvMesh<'_>> = layouts.iter().map(|(u, t)| mesh(u, t)).collect();
            let plan = raster_at(64, 32, 1.0);
            let counted = for_each_inside(&meshes, plan, f64::INFINITY, |_, _, _| {}).unwrap().0.rasterised > 0;
            assert_eq!(any_inside(&meshes, plan), counted, "round {round}");
            if counted { yes += 1 } else { no += 1 }
        }
        assert!(yes > 50 && no > 50, "both answers tested: {yes} inside, {no} not");
    }

    #[test]
    fn large_textures_are_capped() {
        let tris = [[0, 1, 2]];
        let p = plan_raster(&[mesh(&SQUARE, &tris)], 8192, 4096);
        assert_eq!((p.width, p.height, p.scale), (4096, 2048, 0.5));
        let p = plan_raster(&[mesh(&SQUARE, &tris)], 2048, 2048);
        assert_eq!((p.width, p.height, p.scale), (2048, 2048, 1.0));
    }
}
