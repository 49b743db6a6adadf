//! UV-space algorithms on plain slices, with no glTF types: rasterising UV
//! triangles into the [0,1) tile (overlap, UV-002), UV islands and the gaps
//! between them (padding, UV-005), and the singular values of the 3D-to-UV
//! Jacobian (texel stretch, UV-004).
//!
//! Rasterisation is exact: UVs are snapped to a fixed-point grid of
//! [`SUBTEXEL`] steps per texel and every coverage test is integer
//! arithmetic, so two triangles that share an edge are treated identically
//! whatever their vertex order. Costs are bounded: a raster side is at most
//! [`MAX_RASTER_PX`], and a layout whose triangles would make the
//! rasteriser visit more than [`RASTER_WORK_BUDGET`] texels is measured at a
//! halved resolution (the [`RasterPlan::scale`] says by how much).

use super::unionfind::UnionFind;
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
/// Widest search radius of the island-gap measurement, in raster texels.
pub const MAX_SEARCH_TEXELS: u32 = 254;

/// Bounding boxes at most this many texels wide are scanned texel by texel;
/// wider ones solve each row's span with divisions.
const NARROW_SPAN: i64 = 24;
/// Distance value of a texel no island reaches within the search radius.
const UNREACHED: u8 = u8::MAX;

/// One primitive's share of a UV layout: a UV set and the triangles over it.
#[derive(Debug, Clone, Copy)]
pub struct UvMesh<'a> {
    /// UV per vertex.
    pub uvs: &'a [[f32; 2]],
    /// Triangles as vertex indices; an index past `uvs` makes the triangle unusable.
    pub triangles: &'a [[u32; 3]],
}

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

fn corner_uvs(uvs: &[[f32; 2]], t: [u32; 3]) -> Option<[[f32; 2]; 3]> {
    Some([*uvs.get(t[0] as usize)?, *uvs.get(t[1] as usize)?, *uvs.get(t[2] as usize)?])
}

fn finite(c: &[[f32; 2]; 3]) -> bool {
    c.iter().all(|p| p[0].is_finite() && p[1].is_finite())
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
    let (Some(a), Some(b), Some(c)) = (snaps.get(t[0] as usize), snaps.get(t[1] as usize), snaps.get(t[2] as usize))
    else {
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
enum Coverage {
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
struct Setup {
    planes: [HalfPlane; 3],
    n: usize,
    x0: i64,
    x1: i64,
    y0: i64,
    y1: i64,
}

fn floor_div(a: i64, b: i64) -> i64 {
    a.div_euclid(b)
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

fn setup(tri: [[i64; 2]; 3], mode: Coverage, width: u32, height: u32) -> Option<Setup> {
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
fn spans(s: &Setup, mut f: impl FnMut(usize, usize, usize)) {
    let planes = &s.planes[..s.n];
    for y in s.y0..=s.y1 {
        let (mut lo, mut hi) = (s.x0, s.x1);
        if hi - lo < NARROW_SPAN {
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
            match first {
                Some(first) => (lo, hi) = (first, last),
                None => continue,
            }
        } else {
            let mut empty = false;
            for p in planes {
                let c = p.c + p.b * y;
                match p.a.cmp(&0) {
                    Ordering::Greater => lo = lo.max(-floor_div(c, p.a)),
                    Ordering::Less => hi = hi.min(floor_div(c, -p.a)),
                    Ordering::Equal => empty |= c < 0,
                }
            }
            if empty || lo > hi {
                continue;
            }
        }
        f(y as usize, lo as usize, hi as usize);
    }
}

/// The raster for a `width` x `height` texture divided by `div` (a power of
/// two): the texture's size, scaled down, keeping its aspect, so that the
/// longer side is at most [`MAX_RASTER_PX`]. Zero sizes count as 1.
fn raster_at(width: u32, height: u32, div: f64) -> RasterPlan {
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
fn for_each_inside(
    meshes: &[UvMesh<'_>],
    plan: RasterPlan,
    budget: f64,
    mut f: impl FnMut(usize, usize, [[i64; 2]; 3]),
) -> Option<(TriangleCounts, f64)> {
    let (w, h) = (plan.width as i64, plan.height as i64);
    let mut counts = TriangleCounts::default();
    let mut work = 0.0;
    let mut global = 0usize;
    let mut snaps = Vec::new();
    for (mi, m) in meshes.iter().enumerate() {
        snaps.clear();
        snaps.extend(m.uvs.iter().map(|&q| snap(q, plan.width, plan.height)));
        for &t in m.triangles {
            match classify_snapped(&snaps, t) {
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
                    f(mi, global, c);
                }
            }
            global += 1;
        }
    }
    Some((counts, work))
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
fn rasterise<S>(
    meshes: &[UvMesh<'_>],
    width: u32,
    height: u32,
    mut start: impl FnMut(RasterPlan) -> S,
    mut tri: impl FnMut(&mut S, usize, usize, [[i64; 2]; 3]),
) -> (S, RasterPlan, TriangleCounts) {
    let plan = raster_at(width, height, 1.0);
    let mut state = start(plan);
    if let Some((counts, _)) = for_each_inside(meshes, plan, RASTER_WORK_BUDGET, |m, t, c| tri(&mut state, m, t, c)) {
        return (state, plan, counts);
    }
    let plan = plan_raster(meshes, width, height);
    let mut state = start(plan);
    let counts = for_each_inside(meshes, plan, f64::INFINITY, |m, t, c| tri(&mut state, m, t, c))
        .map_or_else(TriangleCounts::default, |(c, _)| c);
    (state, plan, counts)
}

/// UV overlap of one layout (UV-002).
#[derive(Debug, Clone, PartialEq)]
pub struct OverlapStats {
    /// The raster measured on.
    pub plan: RasterPlan,
    /// Texels whose centre at least one triangle covers (0..=width*height).
    pub covered_texels: u64,
    /// Texels whose centre two or more triangles cover (0..=covered_texels).
    pub overlapping_texels: u64,
    /// overlapping_texels / covered_texels * 100, in [0, 100]; 0 when nothing is covered.
    pub overlap_pct: f64,
    /// What happened to the triangles.
    pub triangles: TriangleCounts,
    /// Per mesh, in input order: whether one of its triangles covers an overlapping texel.
    pub overlapping_meshes: Vec<bool>,
}

/// Rasterises every triangle of `meshes` into the [0,1) tile of a `width` x
/// `height` texture (see [`plan_raster`]) with texel-centre sampling and a
/// top-left fill rule, counting coverage per texel in a saturating byte.
/// Triangles sharing an edge never cover a texel twice, so only real overlap
/// (stacked or folded triangles, islands on top of each other) counts; a
/// triangle entirely outside the tile is ignored and one crossing its border
/// is clipped. Memory: one byte per raster texel; time: O(triangles + texel
/// visits), the visits bounded by [`RASTER_WORK_BUDGET`].
pub fn uv_overlap(meshes: &[UvMesh<'_>], width: u32, height: u32) -> OverlapStats {
    let (count, plan, counts) = rasterise(
        meshes,
        width,
        height,
        |plan| (plan, vec![0u8; plan.width as usize * plan.height as usize]),
        |(plan, count), _, _, c| {
            let stride = plan.width as usize;
            if let Some(s) = setup(c, Coverage::Centre, plan.width, plan.height) {
                spans(&s, |y, x0, x1| {
                    for v in &mut count[y * stride + x0..=y * stride + x1] {
                        *v = v.saturating_add(1);
                    }
                });
            }
        },
    );
    let count = count.1;
    let stride = plan.width as usize;
    let (mut covered, mut overlapping) = (0u64, 0u64);
    for &c in &count {
        covered += (c >= 1) as u64;
        overlapping += (c >= 2) as u64;
    }
    let mut overlapping_meshes = vec![false; meshes.len()];
    if overlapping > 0 {
        for_each_inside(meshes, plan, f64::INFINITY, |m, _, c| {
            if overlapping_meshes[m] {
                return;
            }
            if let Some(s) = setup(c, Coverage::Centre, plan.width, plan.height) {
                let mut hit = false;
                spans(&s, |y, x0, x1| hit |= count[y * stride + x0..=y * stride + x1].iter().any(|&v| v >= 2));
                overlapping_meshes[m] |= hit;
            }
        });
    }
    let overlap_pct = if covered == 0 { 0.0 } else { overlapping as f64 / covered as f64 * 100.0 };
    OverlapStats {
        plan,
        covered_texels: covered,
        overlapping_texels: overlapping,
        overlap_pct,
        triangles: counts,
        overlapping_meshes,
    }
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
    let cap = (vertices * 2).next_power_of_two().max(16);
    let shift = 64 - cap.trailing_zeros();
    // Keys, and ids + 1 (0 marks an empty slot).
    let mut slot_key = vec![0u64; cap];
    let mut slot_id = vec![0u32; cap];
    let mut point: Vec<u32> = Vec::with_capacity(vertices);
    let mut base = Vec::with_capacity(meshes.len());
    let mut points = 0u32;
    for m in meshes {
        base.push(point.len());
        for &p in m.uvs {
            let k = uv_key(p);
            let mut i = (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
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
    drop((slot_key, slot_id));
    let points = points as usize;

    // Triangle corners as point ids ([u32::MAX; 3]: unusable), and edges
    // bucketed by their lower point id (counting sort), to be joined within
    // each bucket by their higher id.
    const NONE: [u32; 3] = [u32::MAX; 3];
    let total: usize = meshes.iter().map(|m| m.triangles.len()).sum();
    let mut corners: Vec<[u32; 3]> = Vec::with_capacity(total);
    let mut start = vec![0u32; points + 1];
    let edges_of = |c: [u32; 3]| [(c[0], c[1]), (c[1], c[2]), (c[2], c[0])].map(|(a, b)| (a.min(b), a.max(b)));
    for (mi, m) in meshes.iter().enumerate() {
        for &t in m.triangles {
            let c = match corner_uvs(m.uvs, t).filter(finite) {
                Some(_) => t.map(|v| point[base[mi] + v as usize]),
                None => NONE,
            };
            corners.push(c);
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
    for (t, &c) in corners.iter().enumerate() {
        if c == NONE {
            continue;
        }
        for (lo, hi) in edges_of(c) {
            if lo != hi {
                let f = &mut fill[lo as usize];
                entries[*f as usize] = (hi, t as u32);
                *f += 1;
            }
        }
    }
    drop(fill);
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

    let mut id = vec![u32::MAX; total];
    let mut island = vec![u32::MAX; total];
    let mut count = 0u32;
    for t in 0..total {
        if corners[t] == NONE {
            continue;
        }
        let r = sets.find(t as u32) as usize;
        if id[r] == u32::MAX {
            id[r] = count;
            count += 1;
        }
        island[t] = id[r];
    }
    Islands { island, count }
}

/// Gaps between UV islands of one layout (UV-005).
#[derive(Debug, Clone, PartialEq)]
pub struct PaddingStats {
    /// The raster measured on.
    pub plan: RasterPlan,
    /// Islands with a triangle reaching into the tile.
    pub islands: u64,
    /// Search radius actually used, in texture pixels (the requested radius
    /// rounded up to whole raster texels, at most 254 raster texels).
    pub searched_px: f64,
    /// The smallest gap between two different islands, in texture pixels
    /// (raster texels / scale): 0 when islands touch or overlap, k when k
    /// empty texels separate them (Chebyshev, so diagonals count as one
    /// step); `None` when no two islands come within the search radius.
    pub min_gap_px: Option<f64>,
    /// Distinct pairs of neighbouring islands whose gap is below the
    /// minimum asked for.
    pub close_pairs: u64,
    /// What happened to the triangles.
    pub triangles: TriangleCounts,
    /// Per mesh, in input order: whether it has a triangle in an island of a close pair.
    pub close_meshes: Vec<bool>,
}

/// Measures the padding between the UV islands ([`uv_islands`]) of `meshes`
/// inside the [0,1) tile of a `width` x `height` texture (see [`plan_raster`]).
///
/// Each island is rasterised conservatively (every texel whose open square
/// meets one of its triangles, so slivers are not lost; the gap is therefore
/// counted in texels that no island touches at all). A multi-source,
/// 8-connected distance transform (two raster passes, exact for the Chebyshev
/// metric) limited to `search_px` then gives every texel its nearest island
/// and distance; wherever two neighbouring texels belong to different islands
/// a and b, dist_a + dist_b is the gap between them, and the smallest such
/// value over the raster is the exact smallest gap up to the search radius.
/// Pairs are those whose nearest-island regions touch. A pair whose gap in
/// texture pixels is below `min_gap_px` is close. Memory: five bytes per
/// raster texel; time O(triangles + texels).
pub fn island_padding(meshes: &[UvMesh<'_>], width: u32, height: u32, min_gap_px: f64, search_px: f64) -> PaddingStats {
    let islands = uv_islands(meshes);
    let too_close = |gap_texels: u32, plan: RasterPlan| (gap_texels as f64) / plan.scale < min_gap_px;
    let (st, plan, counts) = if islands.count < 2 {
        // One island has no neighbour: count, do not rasterise.
        let plan = raster_at(width, height, 1.0);
        let counts =
            for_each_inside(meshes, plan, f64::INFINITY, |_, _, _| {}).map_or_else(TriangleCounts::default, |c| c.0);
        let mut st = PadState::new(plan, islands.count, 0);
        if counts.rasterised > 0 {
            st.owner.push(0);
        }
        (st, plan, counts)
    } else {
        rasterise(
            meshes,
            width,
            height,
            |plan| PadState::new(plan, islands.count, plan.width as usize * plan.height as usize),
            |st, _, t, c| {
                let Some(&isl) = islands.island.get(t) else { return };
                let Some(known) = st.label_of.get_mut(isl as usize) else { return };
                if *known == 0 {
                    st.owner.push(isl);
                    *known = st.owner.len() as u32;
                }
                let l = *known;
                let plan = st.plan;
                let w = plan.width as usize;
                let Some(s) = setup(c, Coverage::Conservative, plan.width, plan.height) else { return };
                let (label, pairs, min_gap) = (&mut st.label, &mut st.pairs, &mut st.min_gap);
                spans(&s, |y, x0, x1| {
                    for v in &mut label[y * w + x0..=y * w + x1] {
                        if *v == 0 {
                            *v = l;
                        } else if *v != l {
                            // Two islands on one texel: gap 0.
                            *min_gap = Some(0);
                            if too_close(0, plan) {
                                pairs.add(*v, l);
                            }
                        }
                    }
                });
            },
        )
    };
    let PadState { mut label, owner, mut pairs, mut min_gap, .. } = st;
    let radius = search_radius(search_px, plan);
    if owner.len() >= 2 {
        let (w, h) = (plan.width as usize, plan.height as usize);
        gaps(&mut label, w, h, radius, &mut min_gap, &mut |a, b, gap| {
            if too_close(gap, plan) {
                pairs.add(a, b);
            }
        });
    }
    drop(label);
    let pairs = pairs.into_distinct(owner.len() + 1);
    let labels = owner.len() as u32;

    let mut close_island = vec![false; islands.count as usize];
    for &(a, b) in &pairs {
        for l in [a, b] {
            if let Some(&isl) = owner.get(l as usize - 1) {
                close_island[isl as usize] = true;
            }
        }
    }
    let mut close_meshes = vec![false; meshes.len()];
    let mut t_global = 0usize;
    for (flag, m) in close_meshes.iter_mut().zip(meshes) {
        let n = m.triangles.len();
        *flag = islands.island[t_global..t_global + n]
            .iter()
            .any(|&i| close_island.get(i as usize).copied().unwrap_or(false));
        t_global += n;
    }
    let min_gap_px = min_gap.filter(|&g| g < radius as u32).map(|g| g as f64 / plan.scale);
    PaddingStats {
        plan,
        islands: labels as u64,
        searched_px: radius as f64 / plan.scale,
        min_gap_px,
        close_pairs: pairs.len() as u64,
        triangles: counts,
        close_meshes,
    }
}

/// Runs a two-pass, 8-connected (chessboard) distance transform with
/// nearest labels over an island raster (0 = no island) and reports every
/// pair of neighbouring texels of different islands a, b with their gap
/// dist_a + dist_b to `found`, keeping the smallest in `min_gap`.
///
/// After the passes every texel within `radius` of an island holds the
/// distance to the nearest island texel and that island's label; the rest
/// keep label 0. The transform is exact for the Chebyshev metric (Rosenfeld
/// and Pfaltz); ties keep the first label found. A texel is final once the
/// backward pass has visited it, so pairs are checked there, in one sweep.
fn gaps(
    label: &mut [u32],
    w: usize,
    h: usize,
    radius: u8,
    min_gap: &mut Option<u32>,
    found: &mut impl FnMut(u32, u32, u32),
) {
    let mut dist: Vec<u8> = label.iter().map(|&l| if l == 0 { UNREACHED } else { 0 }).collect();
    let relax = |best: &mut (u8, u32), d: u8, l: u32| {
        if d < radius && d + 1 < best.0 {
            *best = (d + 1, l);
        }
    };
    for y in 0..h {
        let (done_l, rest_l) = label.split_at_mut(y * w);
        let (done_d, rest_d) = dist.split_at_mut(y * w);
        let (cl, cd) = (&mut rest_l[..w], &mut rest_d[..w]);
        let prev = (y > 0).then(|| (&done_l[(y - 1) * w..], &done_d[(y - 1) * w..]));
        for x in 0..w {
            if cd[x] == 0 {
                continue;
            }
            let mut best = (cd[x], cl[x]);
            if x > 0 {
                relax(&mut best, cd[x - 1], cl[x - 1]);
            }
            if let Some((pl, pd)) = prev {
                if x > 0 {
                    relax(&mut best, pd[x - 1], pl[x - 1]);
                }
                relax(&mut best, pd[x], pl[x]);
                if x + 1 < w {
                    relax(&mut best, pd[x + 1], pl[x + 1]);
                }
            }
            (cd[x], cl[x]) = best;
        }
    }
    let mut pair_at = |a: u32, da: u8, b: u32, db: u8| {
        if a != 0 && b != 0 && a != b {
            let gap = da as u32 + db as u32;
            if min_gap.is_none_or(|g| gap < g) {
                *min_gap = Some(gap);
            }
            found(a, b, gap);
        }
    };
    for y in (0..h).rev() {
        let (cur_l, after_l) = label.split_at_mut((y + 1) * w);
        let (cur_d, after_d) = dist.split_at_mut((y + 1) * w);
        let (cl, cd) = (&mut cur_l[y * w..], &mut cur_d[y * w..]);
        let next = (y + 1 < h).then(|| (&after_l[..w], &after_d[..w]));
        for x in (0..w).rev() {
            if cd[x] != 0 {
                let mut best = (cd[x], cl[x]);
                if x + 1 < w {
                    relax(&mut best, cd[x + 1], cl[x + 1]);
                }
                if let Some((nl, nd)) = next {
                    if x + 1 < w {
                        relax(&mut best, nd[x + 1], nl[x + 1]);
                    }
                    relax(&mut best, nd[x], nl[x]);
                    if x > 0 {
                        relax(&mut best, nd[x - 1], nl[x - 1]);
                    }
                }
                (cd[x], cl[x]) = best;
            }
            // (x, y) is final, and so are its neighbours to the right and below.
            let (a, da) = (cl[x], cd[x]);
            if a == 0 {
                continue;
            }
            if x + 1 < w {
                pair_at(a, da, cl[x + 1], cd[x + 1]);
            }
            if let Some((nl, nd)) = next {
                if x > 0 {
                    pair_at(a, da, nl[x - 1], nd[x - 1]);
                }
                pair_at(a, da, nl[x], nd[x]);
                if x + 1 < w {
                    pair_at(a, da, nl[x + 1], nd[x + 1]);
                }
            }
        }
    }
}

/// What [`island_padding`] builds while rasterising.
struct PadState {
    plan: RasterPlan,
    /// Island label per texel (0 = none).
    label: Vec<u32>,
    /// Label of each island (0 = not in the tile yet).
    label_of: Vec<u32>,
    /// Island of each label - 1.
    owner: Vec<u32>,
    /// Island label pairs found too close.
    pairs: Pairs,
    /// Smallest gap found, in raster texels.
    min_gap: Option<u32>,
}

impl PadState {
    fn new(plan: RasterPlan, islands: u32, texels: usize) -> PadState {
        PadState {
            plan,
            label: vec![0; texels],
            label_of: vec![0; islands as usize],
            owner: Vec::new(),
            pairs: Pairs::new(),
            min_gap: None,
        }
    }
}

/// The search radius in raster texels: `search_px` texture pixels, rounded
/// up, between 1 and [`MAX_SEARCH_TEXELS`].
fn search_radius(search_px: f64, plan: RasterPlan) -> u8 {
    (search_px * plan.scale).ceil().clamp(1.0, MAX_SEARCH_TEXELS as f64) as u8
}

/// Island pairs, collected with a small direct-mapped cache in front so that
/// the same pair, met again and again along a shared border, is stored about
/// once; `into_sorted` removes what duplicates remain.
struct Pairs {
    list: Vec<(u32, u32)>,
    cache: Vec<(u32, u32)>,
}

impl Pairs {
    const CACHE: usize = 4096;
    fn new() -> Pairs {
        Pairs { list: Vec::new(), cache: vec![(0, 0); Self::CACHE] }
    }
    fn add(&mut self, a: u32, b: u32) {
        let p = pair(a, b);
        let slot =
            &mut self.cache[(p.0.wrapping_mul(0x9E37_79B9) ^ p.1).wrapping_mul(0x85EB_CA6B) as usize % Self::CACHE];
        if *slot != p {
            *slot = p;
            self.list.push(p);
        }
    }
    /// The distinct pairs, ordered; labels are below `labels`. A counting
    /// sort by the first label, then small sorts: O(pairs + labels).
    fn into_distinct(self, labels: usize) -> Vec<(u32, u32)> {
        let mut start = vec![0u32; labels + 1];
        for &(a, _) in &self.list {
            if let Some(s) = start.get_mut(a as usize + 1) {
                *s += 1;
            }
        }
        for i in 0..labels {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut second = vec![0u32; self.list.len()];
        for &(a, b) in &self.list {
            if let Some(f) = fill.get_mut(a as usize) {
                second[*f as usize] = b;
                *f += 1;
            }
        }
        let mut out = Vec::new();
        for a in 0..labels {
            let run = &mut second[start[a] as usize..start[a + 1] as usize];
            run.sort_unstable();
            for (k, &b) in run.iter().enumerate() {
                if k == 0 || run[k - 1] != b {
                    out.push((a as u32, b));
                }
            }
        }
        out
    }
}

fn pair(a: u32, b: u32) -> (u32, u32) {
    (a.min(b), a.max(b))
}

/// Singular values (s1, s2), s1 >= s2 >= 0, of the 2x2 matrix
/// `[[m[0][0], m[0][1]], [m[1][0], m[1][1]]]` in closed form:
/// s1 = sqrt(E^2 + H^2) + sqrt(F^2 + G^2) with E = (a+d)/2, F = (a-d)/2,
/// G = (c+b)/2, H = (c-b)/2, and s2 = |det| / s1 (0 when s1 is 0).
#[inline]
pub fn singular_values(m: [[f64; 2]; 2]) -> (f64, f64) {
    let [[a, b], [c, d]] = m;
    let (e, f, g, h) = ((a + d) / 2.0, (a - d) / 2.0, (c + b) / 2.0, (c - b) / 2.0);
    let s1 = (e * e + h * h).sqrt() + (f * f + g * g).sqrt();
    let det = (a * d - b * c).abs();
    let s2 = if s1 > 0.0 { (det / s1).min(s1) } else { 0.0 };
    (s1, s2)
}

/// Area and stretch of one triangle: `p` its 3D corners, `uv` its UV corners
/// (already scaled to texel proportions when the texture is not square).
///
/// The triangle is laid into its own 2D frame (x along p1 - p0), and J is the
/// 2x2 Jacobian from that frame to UV; the ratio s1/s2 of its singular values
/// ([`singular_values`]) is 1 for a conformal (shape-preserving) mapping,
/// whatever the scale, and grows with anisotropic stretch; it is infinite
/// when the UV triangle has zero area (or all its corners coincide). The
/// ratio does not change when either side is scaled, so both are normalised
/// first (3D by |p1 - p0|, UV by its largest difference) and no input can
/// overflow. Returns `None` for a triangle whose 3D area is zero (its height
/// below 1e-12 of its longest edge) or not finite, or whose UVs are not finite.
#[inline]
pub fn triangle_stretch(p: [[f64; 3]; 3], uv: [[f64; 2]; 3]) -> Option<(f64, f64)> {
    if !uv.iter().flatten().all(|x| x.is_finite()) {
        return None;
    }
    let sub = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let (e1, e2) = (sub(p[1], p[0]), sub(p[2], p[0]));
    let cross = [e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]];
    let (l1sq, l2sq, a2sq) = (dot(e1, e1), dot(e2, e2), dot(cross, cross));
    if !(l1sq.is_finite() && l2sq.is_finite() && a2sq.is_finite() && l1sq > 0.0) {
        return None;
    }
    // Zero area up to rounding: (2 area)^2 = (l1 height)^2 against (l1 longest)^2.
    if a2sq.partial_cmp(&(1e-24 * l1sq * l1sq.max(l2sq))) != Some(Ordering::Greater) {
        return None;
    }
    let area2 = a2sq.sqrt();
    // The frame, scaled so that p1 - p0 has length 1: p2 at (x2, y2).
    let inv = 1.0 / l1sq;
    let (x2, y2) = (dot(e1, e2) * inv, area2 * inv);
    let d1 = [uv[1][0] - uv[0][0], uv[1][1] - uv[0][1]];
    let d2 = [uv[2][0] - uv[0][0], uv[2][1] - uv[0][1]];
    let m = d1[0].abs().max(d1[1].abs()).max(d2[0].abs()).max(d2[1].abs());
    let ratio = if m > 0.0 {
        let inv_m = 1.0 / m;
        let (d1, d2) = (d1.map(|x| x * inv_m), d2.map(|x| x * inv_m));
        // J [1 x2; 0 y2] = [d1 d2]: J = [d1, (d2 - x2 d1) / y2].
        let inv_y2 = 1.0 / y2;
        let c1 = [(d2[0] - d1[0] * x2) * inv_y2, (d2[1] - d1[1] * x2) * inv_y2];
        let (s1, s2) = singular_values([[d1[0], c1[0]], [d1[1], c1[1]]]);
        if s2 > 0.0 { s1 / s2 } else { f64::INFINITY }
    } else {
        f64::INFINITY
    };
    Some((area2 / 2.0, if ratio.is_finite() { ratio } else { f64::INFINITY }))
}

/// One value of a weighted distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weighted {
    /// The value (may be +infinity).
    pub value: f64,
    /// Its weight (>= 0).
    pub weight: f64,
    /// Tie-break among equal values (e.g. the triangle's index).
    pub order: u64,
}

fn by_value(a: &Weighted, b: &Weighted) -> Ordering {
    a.value.total_cmp(&b.value).then(a.order.cmp(&b.order))
}

/// The weighted `q`-quantile (q in [0, 1]): the smallest value, in the order
/// (value, then `order`), at which the cumulative weight reaches q times the
/// total. `None` when the total weight is not positive. Expected O(n)
/// (weighted quickselect); reorders `items`.
pub fn weighted_quantile(items: &mut [Weighted], q: f64) -> Option<f64> {
    let total: f64 = items.iter().map(|x| x.weight).sum();
    if !(total.is_finite() && total > 0.0) {
        return None;
    }
    let mut target = q.clamp(0.0, 1.0) * total;
    let mut s = items;
    let mut best = None;
    while !s.is_empty() {
        let mid = s.len() / 2;
        s.select_nth_unstable_by(mid, by_value);
        let left: f64 = s[..mid].iter().map(|x| x.weight).sum();
        if mid > 0 && left >= target {
            s = &mut s[..mid];
            continue;
        }
        let through = left + s[mid].weight;
        best = Some(s[mid].value);
        if through >= target {
            return best;
        }
        target -= through;
        s = &mut s[mid + 1..];
    }
    best
}

/// Texel stretch of a set of triangles (UV-004).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StretchStats {
    /// Triangles measured (non-degenerate in 3D, finite UVs).
    pub triangles: u64,
    /// Their total 3D area.
    pub area: f64,
    /// 3D area of triangles whose ratio exceeds the maximum.
    pub stretched_area: f64,
    /// stretched_area / area * 100, in [0, 100]; 0 when nothing was measured.
    pub stretched_area_pct: f64,
    /// Area-weighted 95th percentile of the ratio, >= 1 (infinity when
    /// UV-degenerate triangles reach it); `None` when nothing was measured.
    pub p95: Option<f64>,
}

/// Summarises per-triangle (ratio as `value`, 3D area as `weight`) samples
/// against `max_ratio`.
pub fn summarize_stretch(samples: &mut [Weighted], max_ratio: f64) -> StretchStats {
    let area: f64 = samples.iter().map(|s| s.weight).sum();
    let stretched_area: f64 = samples.iter().filter(|s| s.value > max_ratio).map(|s| s.weight).sum();
    let stretched_area_pct = if area > 0.0 { (stretched_area / area * 100.0).clamp(0.0, 100.0) } else { 0.0 };
    StretchStats {
        triangles: samples.len() as u64,
        area,
        stretched_area,
        stretched_area_pct,
        p95: weighted_quantile(samples, 0.95),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mesh<'a>(uvs: &'a [[f32; 2]], triangles: &'a [[u32; 3]]) -> UvMesh<'a> {
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
    const SQUARE: [[f32; 2]; 4] = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]];

    #[test]
    fn shared_edge_covers_disjoint_texels() {
        let tris = [[0, 1, 2], [0, 2, 3]];
        let s = uv_overlap(&[mesh(&SQUARE, &tris)], 8, 8);
        // The diagonal passes through 8 texel centres; each goes to one triangle.
        assert_eq!((s.covered_texels, s.overlapping_texels, s.overlap_pct), (64, 0, 0.0));
        // The same with odd angles and the second triangle wound the other way.
        let uvs = [[0.1, 0.05], [0.93, 0.2], [0.7, 0.9], [0.05, 0.77]];
        let s = uv_overlap(&[mesh(&uvs, &[[0, 1, 2], [3, 2, 0]])], 37, 37);
        assert_eq!(s.overlapping_texels, 0);
        assert!(s.covered_texels > 500);
    }

    #[test]
    fn fan_around_a_texel_centre_covers_it_once() {
        // Eight triangles meeting at (0.5, 0.5), the centre of texel (1, 1)
        // at 3x3 texels; the fan reaches no other texel centre.
        //
        //    \ | /
        //   -- * --
        //    / | \
        let mut uvs = vec![[0.5f32, 0.5]];
        for k in 0..8 {
            let a = k as f32 * std::f32::consts::FRAC_PI_4;
            uvs.push([0.5 + 0.3 * a.cos(), 0.5 + 0.3 * a.sin()]);
        }
        let tris: Vec<[u32; 3]> = (0..8).map(|k| [0, 1 + k, 1 + (k + 1) % 8]).collect();
        let s = uv_overlap(&[mesh(&uvs, &tris)], 3, 3);
        assert_eq!(s.overlapping_texels, 0);
        assert_eq!(s.covered_texels, 1);
    }

    #[test]
    fn stacked_triangle_overlaps_fully() {
        // The same triangle twice (second copy wound the other way).
        let tris = [[0, 1, 2], [0, 2, 1]];
        let s = uv_overlap(&[mesh(&SQUARE, &tris)], 16, 16);
        assert!(s.covered_texels > 0);
        assert_eq!(s.overlapping_texels, s.covered_texels);
        assert_eq!(s.overlap_pct, 100.0);
        assert_eq!(s.overlapping_meshes, vec![true]);
    }

    #[test]
    fn copy_moved_by_a_whole_unit_is_ignored() {
        //  tile [0,1)        tile [1,2)
        //  +-----+           +-----+
        //  | /   |    u+1    | /   |   <- the copy: ignored
        //  +-----+           +-----+
        let uvs = [[0.1, 0.1], [0.9, 0.1], [0.5, 0.9], [1.1, 0.1], [1.9, 0.1], [1.5, 0.9]];
        let s = uv_overlap(&[mesh(&uvs, &[[0, 1, 2], [3, 4, 5]])], 64, 64);
        assert_eq!(s.overlapping_texels, 0);
        assert_eq!((s.triangles.rasterised, s.triangles.outside), (1, 1));
    }

    #[test]
    fn border_crossing_triangles_are_clipped_and_hostile_uvs_skipped() {
        let uvs = [[-0.5, -0.5], [1.5, -0.5], [-0.5, 1.5], [f32::NAN, 0.0], [f32::INFINITY, 0.5], [0.5, 0.5]];
        let huge = [[-1e30f32, 0.5], [0.5, 1e30], [0.5, 0.5]];
        let s = uv_overlap(&[mesh(&uvs, &[[0, 1, 2], [3, 4, 5], [0, 1, 99]]), mesh(&huge, &[[0, 1, 2]])], 8, 8);
        // The big triangle covers the texel centres strictly below its edge
        // u + v = 1 (the 8 centres on it belong to the other side by the fill rule).
        assert_eq!(s.covered_texels, 28);
        assert_eq!(s.triangles, TriangleCounts { rasterised: 1, outside: 0, unusable: 3 });
        // Empty input, zero-area triangles, a zero-sized texture.
        let s = uv_overlap(&[mesh(&SQUARE, &[[0, 0, 1], [0, 1, 1]])], 0, 0);
        assert_eq!((s.covered_texels, s.plan.width), (0, 1));
        assert_eq!(uv_overlap(&[], 1024, 1024).overlap_pct, 0.0);
    }

    #[test]
    fn scan_and_division_spans_agree() {
        // Deterministic pseudo-random triangles, each rasterised with its
        // natural path and with the other one forced.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..400 {
            let c: [[f32; 2]; 3] = std::array::from_fn(|_| [(next() * 1.4 - 0.2) as f32, (next() * 1.4 - 0.2) as f32]);
            let Class::Inside(f) = classify(&c, [0, 1, 2], 64, 64) else { continue };
            for mode in [Coverage::Centre, Coverage::Conservative] {
                let Some(s) = setup(f, mode, 64, 64) else { continue };
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
                assert_eq!(texel, span, "{c:?} {mode:?}");
            }
        }
    }

    #[test]
    fn hostile_layouts_do_not_panic() {
        // Deterministic junk: huge, tiny, non-finite and border values at the
        // largest raster, where the fixed-point arithmetic is tightest.
        let special = [
            0.0f32,
            -0.0,
            1.0,
            0.5,
            1023.999,
            -1023.999,
            1024.0,
            1e30,
            -1e30,
            f32::MAX,
            f32::MIN_POSITIVE,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1.0 - f32::EPSILON,
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let uvs: Vec<[f32; 2]> = (0..300)
            .map(|_| {
                let mut pick = || {
                    let r = next();
                    if r % 3 == 0 {
                        special[(r >> 8) as usize % special.len()]
                    } else {
                        (r >> 11) as f32 / (1u64 << 53) as f32 * 3.0 - 1.0
                    }
                };
                [pick(), pick()]
            })
            .collect();
        let tris: Vec<[u32; 3]> = (0..400).map(|_| std::array::from_fn(|_| (next() % 310) as u32)).collect();
        let m = [mesh(&uvs, &tris)];
        for (w, h) in [(4096, 16), (16, 4096), (8192, 3), (1, 1), (0, 0), (u32::MAX, 7)] {
            let o = uv_overlap(&m, w, h);
            assert!((0.0..=100.0).contains(&o.overlap_pct));
            let p = island_padding(&m, w, h, 4.0, 8.0);
            assert!(p.min_gap_px.is_none_or(|g| g >= 0.0));
        }
        for t in &tris {
            let uv = t.map(|i| uvs.get(i as usize).map_or([0.0; 2], |q| [q[0] as f64, q[1] as f64]));
            let p = t.map(|i| [i as f64 * 1e300, (i % 7) as f64, f64::from(uv[0][0] as f32)]);
            if let Some((area, ratio)) = triangle_stretch(p, uv) {
                assert!(area >= 0.0 && ratio >= 1.0 - 1e-9, "{area} {ratio}");
            }
        }
    }

    #[test]
    fn large_textures_are_capped() {
        let tris = [[0, 1, 2]];
        let p = plan_raster(&[mesh(&SQUARE, &tris)], 8192, 4096);
        assert_eq!((p.width, p.height, p.scale), (4096, 2048, 0.5));
        let p = plan_raster(&[mesh(&SQUARE, &tris)], 2048, 2048);
        assert_eq!((p.width, p.height, p.scale), (2048, 2048, 1.0));
    }

    #[test]
    fn work_budget_halves_the_resolution() {
        // 64 copies of a full-tile triangle pair at 4096^2 would be 2^30 visits.
        let tris: Vec<[u32; 3]> = (0..64).flat_map(|_| [[0, 1, 2], [0, 2, 3]]).collect();
        let p = plan_raster(&[mesh(&SQUARE, &tris)], 4096, 4096);
        assert_eq!((p.width, p.scale), (1024, 0.25));
        let s = uv_overlap(&[mesh(&SQUARE, &tris)], 4096, 4096);
        assert_eq!(s.overlap_pct, 100.0);
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

    /// Two squares side by side, `gap` texels apart at 64 texels:
    ///
    /// ```text
    ///   +----+ . . . +----+
    ///   |  A |  gap  |  B |
    ///   +----+ . . . +----+
    ///   8    16    16+gap  24+gap   (texel columns)
    /// ```
    fn two_islands(gap: u32) -> Vec<[f32; 2]> {
        let t = |x: u32| x as f32 / 64.0;
        let (b0, b1) = (t(16 + gap), t(24 + gap));
        vec![
            [t(8), t(8)],
            [t(16), t(8)],
            [t(16), t(16)],
            [t(8), t(16)],
            [b0, t(8)],
            [b1, t(8)],
            [b1, t(16)],
            [b0, t(16)],
        ]
    }
    const TWO_ISLANDS: [[u32; 3]; 4] = [[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]];

    #[test]
    fn islands_three_texels_apart() {
        let uvs = two_islands(3);
        let m = [mesh(&uvs, &TWO_ISLANDS)];
        let fail = island_padding(&m, 64, 64, 4.0, 8.0);
        assert_eq!((fail.islands, fail.min_gap_px, fail.close_pairs), (2, Some(3.0), 1));
        assert_eq!(fail.close_meshes, vec![true]);
        let pass = island_padding(&m, 64, 64, 2.0, 8.0);
        assert_eq!((pass.min_gap_px, pass.close_pairs), (Some(3.0), 0));
        // At twice the resolution the same layout is 6 texels apart.
        assert_eq!(island_padding(&m, 128, 128, 4.0, 8.0).min_gap_px, Some(6.0));
        // Beyond the search radius nothing is reported.
        let far = island_padding(&m, 256, 256, 4.0, 8.0);
        assert_eq!((far.min_gap_px, far.close_pairs, far.searched_px), (None, 0, 8.0));
    }

    #[test]
    fn touching_and_overlapping_islands_have_gap_zero() {
        for gap in [0, 1] {
            // B shifted one texel down, so that at gap 0 the two squares touch
            // along part of an edge without sharing UV points: two islands.
            let mut uvs = two_islands(gap);
            for p in &mut uvs[4..] {
                p[1] += 1.0 / 64.0;
            }
            let s = island_padding(&[mesh(&uvs, &TWO_ISLANDS)], 64, 64, 4.0, 8.0);
            assert_eq!(s.min_gap_px, Some(gap as f64), "gap {gap}");
        }
        // B moved onto A: they overlap.
        let mut uvs = two_islands(0);
        for p in &mut uvs[4..] {
            p[0] -= 4.0 / 64.0;
        }
        let s = island_padding(&[mesh(&uvs, &TWO_ISLANDS)], 64, 64, 4.0, 8.0);
        assert_eq!((s.min_gap_px, s.close_pairs), (Some(0.0), 1));
    }

    #[test]
    fn diagonal_gap_is_chebyshev() {
        // B's corner texel 6 texels right of and below A's: 5 empty texels diagonally.
        let uvs = two_islands(0);
        let mut uvs = uvs.clone();
        for p in &mut uvs[4..] {
            p[1] += 13.0 / 64.0;
            p[0] += 5.0 / 64.0;
        }
        let s = island_padding(&[mesh(&uvs, &TWO_ISLANDS)], 64, 64, 4.0, 16.0);
        assert_eq!(s.min_gap_px, Some(5.0));
    }

    #[test]
    fn single_island_passes() {
        let s = island_padding(&[mesh(&SQUARE, &[[0, 1, 2], [0, 2, 3]])], 64, 64, 4.0, 8.0);
        assert_eq!((s.islands, s.min_gap_px, s.close_pairs), (1, None, 0));
        let s = island_padding(&[], 64, 64, 4.0, 8.0);
        assert_eq!(s.islands, 0);
        // Two squares sharing an edge (the same two UV points) are one island.
        let uvs = two_islands(0);
        let s = island_padding(&[mesh(&uvs, &TWO_ISLANDS)], 64, 64, 4.0, 8.0);
        assert_eq!((s.islands, s.min_gap_px), (1, None));
    }

    #[test]
    fn thin_slivers_are_not_lost() {
        // A zero-area triangle (a segment) one texel from a square still counts.
        let t = |x: f32| x / 64.0;
        let uvs = [[t(8.0), t(8.0)], [t(16.0), t(8.0)], [t(16.0), t(16.0)], [t(17.5), t(8.5)], [t(17.5), t(15.5)]];
        let s = island_padding(&[mesh(&uvs, &[[0, 1, 2], [3, 4, 4]])], 64, 64, 4.0, 8.0);
        assert_eq!((s.islands, s.min_gap_px), (2, Some(1.0)));
    }

    #[test]
    fn singular_values_of_a_scale() {
        assert_eq!(singular_values([[3.0, 0.0], [0.0, 2.0]]), (3.0, 2.0));
        assert_eq!(singular_values([[0.5, 0.0], [0.0, -4.0]]), (4.0, 0.5));
        // A rotation by 30 degrees times diag(2, 1): singular values 2 and 1.
        let (c, s) = (30f64.to_radians().cos(), 30f64.to_radians().sin());
        let (s1, s2) = singular_values([[2.0 * c, -s], [2.0 * s, c]]);
        assert!((s1 - 2.0).abs() < 1e-12 && (s2 - 1.0).abs() < 1e-12);
        assert_eq!(singular_values([[0.0; 2]; 2]), (0.0, 0.0));
    }

    /// A right triangle with legs 2 (x) and 1 (y) in the z = 5 plane.
    const RIGHT: [[f64; 3]; 3] = [[0.0, 0.0, 5.0], [2.0, 0.0, 5.0], [0.0, 1.0, 5.0]];

    #[test]
    fn isometric_mapping_has_ratio_one() {
        let (area, ratio) = triangle_stretch(RIGHT, [[0.0, 0.0], [0.2, 0.0], [0.0, 0.1]]).unwrap();
        assert!((area - 1.0).abs() < 1e-12);
        assert!((ratio - 1.0).abs() < 1e-12);
        // Rotated and mirrored in UV: still 1.
        let (_, ratio) = triangle_stretch(RIGHT, [[0.5, 0.5], [0.5, 0.7], [0.6, 0.5]]).unwrap();
        assert!((ratio - 1.0).abs() < 1e-12);
    }

    #[test]
    fn squashed_in_v_has_ratio_three() {
        let (_, ratio) = triangle_stretch(RIGHT, [[0.0, 0.0], [0.3, 0.0], [0.0, 0.05]]).unwrap();
        assert!((ratio - 3.0).abs() < 1e-9, "{ratio}");
    }

    #[test]
    fn degenerate_triangles() {
        // Zero 3D area: skipped.
        assert_eq!(
            triangle_stretch([[0.0; 3], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]], [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]),
            None
        );
        assert_eq!(triangle_stretch([[f64::NAN; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [[0.0; 2]; 3]), None);
        assert_eq!(triangle_stretch(RIGHT, [[f64::NAN, 0.0], [1.0, 0.0], [0.0, 1.0]]), None);
        // Zero UV area on a real triangle: infinitely stretched.
        assert_eq!(triangle_stretch(RIGHT, [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]).unwrap().1, f64::INFINITY);
        assert_eq!(triangle_stretch(RIGHT, [[0.3, 0.3]; 3]).unwrap().1, f64::INFINITY);
    }

    #[test]
    fn weighted_quantile_is_exact_and_order_free() {
        let w = |value: f64, weight: f64, order: u64| Weighted { value, weight, order };
        // Weights 10% each over values 1..=10: the 95th percentile is 10, the 50th is 5.
        let mut items: Vec<Weighted> = (1..=10).rev().map(|v| w(v as f64, 1.0, v)).collect();
        assert_eq!(weighted_quantile(&mut items, 0.95), Some(10.0));
        assert_eq!(weighted_quantile(&mut items, 0.5), Some(5.0));
        // One heavy value dominates.
        let mut items = vec![w(3.0, 96.0, 0), w(1.0, 1.0, 1), w(f64::INFINITY, 3.0, 2)];
        assert_eq!(weighted_quantile(&mut items, 0.95), Some(3.0));
        let mut items = vec![w(3.0, 90.0, 0), w(1.0, 1.0, 1), w(f64::INFINITY, 9.0, 2)];
        assert_eq!(weighted_quantile(&mut items, 0.95), Some(f64::INFINITY));
        assert_eq!(weighted_quantile(&mut [], 0.95), None);
        // Against a sort, on many values.
        let mut items: Vec<Weighted> = (0..1000u64).map(|i| w(((i * 7919) % 1000) as f64, (i % 7) as f64, i)).collect();
        let mut sorted = items.clone();
        sorted.sort_by(by_value);
        let total: f64 = sorted.iter().map(|x| x.weight).sum();
        let mut acc = 0.0;
        let want = sorted.iter().find(|x| {
            acc += x.weight;
            acc >= 0.95 * total
        });
        assert_eq!(weighted_quantile(&mut items, 0.95), want.map(|x| x.value));
    }

    #[test]
    fn stretch_summary() {
        let w = |value: f64, weight: f64, order: u64| Weighted { value, weight, order };
        let mut s = vec![w(1.0, 3.0, 0), w(5.0, 1.0, 1)];
        let st = summarize_stretch(&mut s, 2.0);
        assert_eq!((st.triangles, st.stretched_area_pct, st.p95), (2, 25.0, Some(5.0)));
        let st = summarize_stretch(&mut [], 2.0);
        assert_eq!((st.stretched_area_pct, st.p95), (0.0, None));
    }
}
