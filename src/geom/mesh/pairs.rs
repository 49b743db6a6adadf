//! The face pairs of a welded mesh's manifold edges, walked once for what
//! two topology checks read of them ([`walk`]): TOP-001's quad candidates
//! (two triangles that make a planar, convex, near-square quad, scored by
//! their corners) and TOP-004's hard-edge sums (the edges' lengths, and
//! those whose faces' normals meet at the hard angle or more).
//!
//! Both read the same things of an edge: its two faces, their triangles,
//! four corners and the two face normals. Walked apart, on s13 (1.95M
//! edges) TOP-004 took 44 ms of one core beside TOP-001's 90 on the other,
//! at the end of a large mesh's run; walked together, every edge is read
//! and its normals found once. What each check computes is the same
//! arithmetic in the same order as when it walks alone, so the candidates
//! and the sums are the same to the bit (the tests hold the walk together
//! to the walks apart). Where the CPU has AVX2, four edges are measured at
//! once (`avx2`), to the same bits as an edge at a time.

use super::edges::{Edge, Topology};
use super::vector::{cross, dot, len, normal, sub};
use crate::geom::bits::Bits;
use rayon::prelude::*;

/// TOP-001's limits, as cosines (no trigonometry per edge).
#[derive(Debug, Clone, Copy)]
pub struct QuadTest {
    /// The two faces' normals meet at a cosine of at least this (planar).
    pub planar: f64,
    /// Each corner's cosine, taken absolutely, is at most this (near-square).
    pub corner: f64,
}

/// Quad candidates name their edge by its offset in runs of this many
/// edges, in 16 bits; the walk reads the edges a run (a window) at a time.
pub const RUN: usize = 1 << 16;

/// Edges measured by one job on the thread pool.
const SLICE: usize = 4096;

/// Edges measured on the pool between two folds ([`walk`]): four jobs, so
/// that the jobs' lengths (8 bytes an edge) are held for two windows, 256
/// KiB, at most (a window of four runs held 3 MiB more at s13's peak, and
/// one of a run, the 1 MB sphere's whole 416 KB, beside GEO-008's tables).
const WINDOW: usize = 4 * SLICE;

/// TOP-001's candidates: `runs[r]` holds those of edges r x [`RUN`].., in
/// edge order, each [`pack`]ed.
pub type Candidates = Vec<Vec<[u16; 5]>>;

/// A quad candidate in 10 bytes: the score's bits, low first, in four
/// parts, then the edge's offset in its run of [`RUN`] edges. A score is a
/// sum of absolute values (finite: a NaN corner fails the corner test), so
/// its bits order as the number does.
pub fn pack(score: f64, edge: usize) -> [u16; 5] {
    let bits = f64::to_bits(score);
    [bits as u16, (bits >> 16) as u16, (bits >> 32) as u16, (bits >> 48) as u16, (edge % RUN) as u16]
}

/// A packed candidate as (score bits, edge offset): two integers, not
/// five. The parts lie in the order of a little-endian u64, so the
/// compiler reads the score's bits in one load.
pub fn key(c: &[u16; 5]) -> (u64, u16) {
    let bits = u64::from(c[0]) | (u64::from(c[1]) << 16) | (u64::from(c[2]) << 32) | (u64::from(c[3]) << 48);
    (bits, c[4])
}

/// TOP-004's sums over the manifold edges.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HardEdges {
    /// Their total length, added in edge order.
    pub total_len: f64,
    /// The length of the hard ones, added in edge order.
    pub hard_len: f64,
    /// How many are hard.
    pub hard: u64,
    /// Each hard edge's first face, in edge order.
    pub hard_faces: Vec<u32>,
}

/// What [`walk`] found: each part only when it was asked for.
#[derive(Debug, Clone, Default)]
pub struct Walked {
    /// TOP-001's candidates.
    pub candidates: Option<Candidates>,
    /// TOP-004's sums.
    pub hard: Option<HardEdges>,
}

/// A [`Walked`] kept for the checks that read it, each taking its part
/// once (the world mesh holds one; the engine fills it before the checks
/// run side by side, so none waits on another). A copy of the mesh starts
/// with nothing kept: what is kept is only a head start.
#[derive(Debug, Default)]
pub struct Kept(std::sync::Mutex<Walked>);

impl Clone for Kept {
    fn clone(&self) -> Kept {
        Kept::default()
    }
}

impl Kept {
    /// Keeps `walked` for the checks (what was kept before is dropped).
    pub fn put(&self, walked: Walked) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = walked;
    }

    /// TOP-001's candidates, if kept (taken: a second call finds none).
    pub fn take_candidates(&self) -> Option<Candidates> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).candidates.take()
    }

    /// TOP-004's sums, if kept (taken: a second call finds none).
    pub fn take_hard(&self) -> Option<HardEdges> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).hard.take()
    }
}

/// Cosine of the angle between two vectors (1 when either is zero): the
/// definition of a corner's cosine, which [`corners`] computes with each
/// side's length shared (the tests hold the walk to it).
#[cfg(test)]
fn cosine(a: [f64; 3], b: [f64; 3]) -> f64 {
    let (la, lb) = (len(a), len(b));
    if la == 0.0 || lb == 0.0 {
        return 1.0;
    }
    (dot(a, b) / (la * lb)).clamp(-1.0, 1.0)
}

/// Which side of the line from `x` to `y` `q` lies on, seen along `n`
/// (inlined: as a closure it was a call whose arguments, just stored,
/// were loaded back whole, and TOP-001 took 7 % longer).
#[inline(always)]
fn side(x: [f64; 3], y: [f64; 3], q: [f64; 3], n: [f64; 3]) -> f64 {
    dot(cross(sub(y, x), sub(q, x)), n)
}

/// The quad c, a, d, b's score, the sum of its four corners' absolute
/// cosines (0 = square), or `None` when a corner is out of range (the
/// rest are then not needed).
///
/// Each corner's cosine is the cosine of its two sides (1 when either has
/// no length, otherwise clamped to -1..=1), but each side's
/// length is taken once for the two corners at its ends ([`SIDES`]): a
/// side read from its other end is the same difference negated, whose
/// squares, and so whose length, are the same to the bit. Four square
/// roots, not eight, when every corner is in range.
#[inline(always)]
fn corners(a: [f64; 3], b: [f64; 3], c: [f64; 3], d: [f64; 3], corner: f64) -> Option<f64> {
    let points = [a, b, c, d];
    let length_of = |k: usize| {
        let (x, y) = SIDES[k % 4];
        len(sub(points[x], points[y]))
    };
    let mut score = 0.0;
    let mut lu = length_of(0);
    for (k, (prev, at, next)) in [(c, a, d), (a, d, b), (d, b, c), (b, c, a)].into_iter().enumerate() {
        let lv = length_of(k + 1);
        let cos =
            if lu == 0.0 || lv == 0.0 { 1.0 } else { (dot(sub(prev, at), sub(next, at)) / (lu * lv)).clamp(-1.0, 1.0) }
                .abs();
        if cos.is_nan() || cos > corner {
            return None;
        }
        score += cos;
        lu = lv;
    }
    Some(score)
}

/// The sides of the quad c, a, d, b in the order its corners are walked,
/// as indices into `[a, b, c, d]`: corner k (at a, d, b, c) lies between
/// side k and side k + 1 (mod 4): c-a, d-a, b-d, c-b.
const SIDES: [(usize, usize); 4] = [(2, 0), (3, 0), (1, 3), (2, 1)];

/// Whether the quad c, a, d, b, split along a-b into faces with unit
/// normals `n1` and `n2`, is convex: each diagonal separates the other's
/// ends. Written as "no product is 0 or more", as TOP-001 always had it:
/// a NaN product (a non-finite corner) does not reject the pair.
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn convex(a: [f64; 3], b: [f64; 3], c: [f64; 3], d: [f64; 3], n1: [f64; 3], n2: [f64; 3]) -> bool {
    let n = [n1[0] + n2[0], n1[1] + n2[1], n1[2] + n2[2]];
    !(side(a, b, c, n) * side(a, b, d, n) >= 0.0) && !(side(c, d, a, n) * side(c, d, b, n) >= 0.0)
}

/// Whether faces whose normals meet at cosine `cos` are planar enough:
/// "not below the limit", so that a NaN cosine passes, as TOP-001 always
/// had it.
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn planar(cos: f64, test: QuadTest) -> bool {
    !(cos < test.planar)
}

/// One slice's findings (its first edge `start`): candidates, every
/// manifold edge's length, and the length and first face of each hard one.
#[derive(Default)]
struct Slice {
    start: usize,
    candidates: Vec<[u16; 5]>,
    lens: Vec<f64>,
    hard: Vec<(f64, u32)>,
}

/// Walks `t`'s manifold edges (two faces each) once, on the thread pool, a
/// window of [`RUN`] edges at a time in slices, for TOP-001's candidates
/// (`quads`: the degenerate triangles, which pair with none, and the
/// limits) and TOP-004's sums (`hard_cos`: an edge is hard when its faces'
/// unit normals, the second negated where the two walk the edge the same
/// way, meet at a cosine of at most it, less 1e-12). The lengths are added
/// on this thread in edge order, so the sums are the sequential loop's.
///
/// A candidate's faces walk their edge in opposite directions and neither
/// is degenerate; every corner is within range (the corners are tested
/// before the normals when the sums are not asked for: across most edges
/// of a quad mesh, a quad's sides, the first corner is out of range and
/// the edge costs no normal); the normals meet at a cosine of at least
/// `planar`; the quad is convex.
pub fn walk(t: &Topology, quads: Option<(&Bits, QuadTest)>, hard_cos: Option<f64>) -> Walked {
    let n = t.edges.len();
    let mut candidates = quads.map(|_| Vec::with_capacity(n.div_ceil(RUN)));
    let mut hard = hard_cos.map(|_| HardEdges::default());
    // A window's slices are folded in while the next window's are
    // measured on the pool, so neither core waits on the fold.
    let mut measured: Vec<Slice> = Vec::new();
    for w in (0..n).step_by(WINDOW) {
        let end = (w + WINDOW).min(n);
        let folding = std::mem::take(&mut measured);
        let (next, ()) = rayon::join(
            || {
                (w..end)
                    .step_by(SLICE)
                    .collect::<Vec<usize>>()
                    .into_par_iter()
                    .map(|s| {
                        let mut out = Slice { start: s, ..Slice::default() };
                        let edges = s..(s + SLICE).min(end);
                        match (quads, hard_cos) {
                            (Some(q), Some(h)) => slice::<true, true>(t, edges, Some(q), h, &mut out),
                            (Some(q), None) => slice::<true, false>(t, edges, Some(q), 0.0, &mut out),
                            (None, Some(h)) => slice::<false, true>(t, edges, None, h, &mut out),
                            (None, None) => {}
                        }
                        out
                    })
                    .collect()
            },
            || fold(folding, &mut candidates, &mut hard),
        );
        measured = next;
    }
    fold(measured, &mut candidates, &mut hard);
    Walked { candidates, hard }
}

/// Adds `slices`, the next in edge order, to the candidates' runs and the
/// sums, on this thread. A run is begun by its first slice and continued
/// by the windows after it.
fn fold(slices: Vec<Slice>, candidates: &mut Option<Candidates>, hard: &mut Option<HardEdges>) {
    if let Some(runs) = candidates.as_mut() {
        for part in slices.chunk_by(|a, b| a.start / RUN == b.start / RUN) {
            if part[0].start % RUN == 0 {
                runs.push(Vec::new());
            }
            let run = runs.last_mut().expect("a run is begun by its first slice");
            run.reserve(part.iter().map(|s| s.candidates.len()).sum());
            part.iter().for_each(|s| run.extend_from_slice(&s.candidates));
        }
    }
    for s in slices {
        if let Some(sums) = hard.as_mut() {
            for l in s.lens {
                sums.total_len += l;
            }
            for (l, face) in s.hard {
                sums.hard_len += l;
                sums.hard += 1;
                sums.hard_faces.push(face);
            }
        }
    }
}

/// [`walk`]'s job: the edges `edges` of `t` into `out`, with the quads
/// (`quads`, when `QUADS`) and the sums (`HARD`) looked for as asked. Where
/// the CPU has AVX2 the manifold edges are measured four at a time
/// ([`avx2::slice`]), to the same bits.
fn slice<const QUADS: bool, const HARD: bool>(
    t: &Topology,
    edges: std::ops::Range<usize>,
    quads: Option<(&Bits, QuadTest)>,
    hard_cos: f64,
    out: &mut Slice,
) {
    if HARD {
        out.lens.reserve(edges.len());
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { avx2::slice::<QUADS, HARD>(t, edges, quads, hard_cos, out) };
    }
    slice_by_edge::<QUADS, HARD>(t, edges, quads, hard_cos, out)
}

/// [`slice`] an edge at a time.
fn slice_by_edge<const QUADS: bool, const HARD: bool>(
    t: &Topology,
    edges: std::ops::Range<usize>,
    quads: Option<(&Bits, QuadTest)>,
    hard_cos: f64,
    out: &mut Slice,
) {
    for (ei, e) in edges.clone().zip(t.edges.range(edges)) {
        if e.count == 2 {
            edge::<QUADS, HARD>(t, ei, e, quads, hard_cos, out);
        }
    }
}

/// The two faces of the manifold edge `e` as the walk reads them: their
/// triangles, whether they walk `e` the same way, and whether they may make
/// a quad (`QUADS`: they walk it in opposite directions and neither is
/// degenerate); `None` when no check asked reads anything of the edge.
#[inline(always)]
fn read_faces<const QUADS: bool, const HARD: bool>(
    t: &Topology,
    e: Edge,
    quads: Option<(&Bits, QuadTest)>,
) -> Option<(u32, u32, bool, bool)> {
    let f = t.faces(e);
    let (t0, t1) = (f[0].tri(), f[1].tri());
    let alike = f[0].forward() == f[1].forward();
    let quad = QUADS
        && !alike
        && quads.is_some_and(|(degenerate, _)| !degenerate.get(t0 as usize) && !degenerate.get(t1 as usize));
    (HARD || quad).then_some((t0, t1, alike, quad))
}

/// The corners of the manifold edge `e` whose faces are the triangles `t0`
/// and `t1`: the quad c, a, d, b (the edge's ends a and b, the first
/// face's third corner c, the second's d: four corners read, not six and
/// the ends again), and each face's corners in its triangle's own order
/// ([`Topology::face_corners`], its normal's operands).
#[inline(always)]
fn read_corners(t: &Topology, e: Edge, t0: u32, t1: u32) -> ([[f64; 3]; 4], [[[f64; 3]; 3]; 2]) {
    let (tri0, tri1) = (t.triangles[t0 as usize], t.triangles[t1 as usize]);
    let p = |i: u32| t.vertices.get(i);
    let (a, b, c, d) = (p(e.a), p(e.b), p(Topology::opposite(tri0, e)), p(Topology::opposite(tri1, e)));
    ([a, b, c, d], [Topology::face_corners(tri0, e, (a, b), c), Topology::face_corners(tri1, e, (a, b), d)])
}

/// One manifold edge `e` (index `ei`) into `out`.
#[inline(always)]
fn edge<const QUADS: bool, const HARD: bool>(
    t: &Topology,
    ei: usize,
    e: Edge,
    quads: Option<(&Bits, QuadTest)>,
    hard_cos: f64,
    out: &mut Slice,
) {
    let Some((t0, t1, alike, quad)) = read_faces::<QUADS, HARD>(t, e, quads) else { return };
    let test = quads.map_or(NO_QUADS, |(_, q)| q);
    let ([a, b, c, d], faces) = read_corners(t, e, t0, t1);
    let normals = || {
        let [[p0, p1, p2], [q0, q1, q2]] = faces;
        (normal(p0, p1, p2), normal(q0, q1, q2))
    };
    if HARD {
        let (n1, n2) = normals();
        // Inconsistent winding: the faces compared as if wound alike.
        let n2h = if alike { [-n2[0], -n2[1], -n2[2]] } else { n2 };
        let l = len(sub(a, b));
        out.lens.push(l);
        // Unit normals: the angle is at least the hard angle when the
        // cosine is at most its cosine.
        let cos = dot(n1, n2h);
        if n1 != [0.0; 3] && n2h != [0.0; 3] && cos <= hard_cos + 1e-12 {
            out.hard.push((l, t0));
        }
        // A candidate's faces walk the edge in opposite directions, so
        // `n2h` is `n2` and `cos` their cosine.
        if quad
            && let Some(score) = corners(a, b, c, d, test.corner)
            && planar(cos, test)
            && convex(a, b, c, d, n1, n2)
        {
            out.candidates.push(pack(score, ei));
        }
    } else if let Some(score) = corners(a, b, c, d, test.corner) {
        let (n1, n2) = normals();
        if planar(dot(n1, n2), test) && convex(a, b, c, d, n1, n2) {
            out.candidates.push(pack(score, ei));
        }
    }
}

/// Limits that no quad passes, for a walk that looks for none.
const NO_QUADS: QuadTest = QuadTest { planar: f64::INFINITY, corner: f64::NEG_INFINITY };

/// The walk four edges at a time on AVX2: each manifold edge's corners
/// gathered into a lane, and the four lanes sharing each square root and
/// division (an edge takes seven square roots and seven divisions when
/// both checks ask, most of its cost: s13's 1.95M edges took 95 ms of CPU
/// an edge at a time). Written with the intrinsics, not left to the
/// compiler: lane arrays as UV-004 writes them came out half scalar here.
/// Every operation is the edge-at-a-time code's, correctly rounded, in its
/// order (no FMA), its branches selects and its comparisons the same
/// ordered or unordered ones, so every lane's bits are [`edge`]'s (the
/// tests hold the two walks to each other and to a loop written out).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Bits, Edge, QuadTest, Slice, Topology, pack, read_corners, read_faces};
    use std::arch::x86_64::*;

    /// Four lanes of a 3D vector, one register a component.
    type V3 = [__m256d; 3];

    /// Four manifold edges, lane `k` one edge: each point's components
    /// `[c][k]`.
    #[derive(Default)]
    struct Four {
        /// The edge's index, its first face's triangle, whether its faces
        /// walk it the same way, and whether they may make a quad.
        ei: [usize; 4],
        t0: [u32; 4],
        alike: [u64; 4],
        quad: [u64; 4],
        /// The quad c, a, d, b: the edge's ends a and b, the first face's
        /// third corner c, the second's d.
        q: [[[f64; 4]; 3]; 4],
        /// Each face's corners in its triangle's own order
        /// ([`Topology::face_corners`]), its normal's operands.
        f: [[[[f64; 4]; 3]; 3]; 2],
    }

    /// [`super::slice`] on AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) fn slice<const QUADS: bool, const HARD: bool>(
        t: &Topology,
        edges: std::ops::Range<usize>,
        quads: Option<(&Bits, QuadTest)>,
        hard_cos: f64,
        out: &mut Slice,
    ) {
        let test = quads.map_or(super::NO_QUADS, |(_, q)| q);
        let mut four = Four::default();
        let mut n = 0;
        for (ei, e) in edges.clone().zip(t.edges.range(edges)) {
            if e.count != 2 {
                continue;
            }
            let Some((t0, t1, alike, quad)) = read_faces::<QUADS, HARD>(t, e, quads) else { continue };
            gather(&mut four, n, t, e, (ei, t0, t1), alike, quad);
            n += 1;
            if n == 4 {
                measure::<QUADS, HARD>(&four, 4, test, hard_cos, out);
                n = 0;
            }
        }
        if n > 0 {
            measure::<QUADS, HARD>(&four, n, test, hard_cos, out);
        }
    }

    /// Edge `e` (its index and its faces' triangles in `at`) into lane `k`:
    /// its four corners read once.
    #[inline(always)]
    fn gather(four: &mut Four, k: usize, t: &Topology, e: Edge, at: (usize, u32, u32), alike: bool, quad: bool) {
        let (ei, t0, t1) = at;
        let ([a, b, c, d], faces) = read_corners(t, e, t0, t1);
        four.ei[k] = ei;
        four.t0[k] = t0;
        four.alike[k] = if alike { u64::MAX } else { 0 };
        four.quad[k] = if quad { u64::MAX } else { 0 };
        for c3 in 0..3 {
            for (j, point) in [a, b, c, d].iter().enumerate() {
                four.q[j][c3][k] = point[c3];
            }
            for (s, face) in faces.iter().enumerate() {
                for (j, corner) in face.iter().enumerate() {
                    four.f[s][j][c3][k] = corner[c3];
                }
            }
        }
    }

    /// A lane-wise point from its components' rows.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn load(x: &[[f64; 4]; 3]) -> V3 {
        // SAFETY: each row is four f64s; unaligned loads.
        unsafe { [_mm256_loadu_pd(x[0].as_ptr()), _mm256_loadu_pd(x[1].as_ptr()), _mm256_loadu_pd(x[2].as_ptr())] }
    }

    /// [`super::sub`], lane-wise.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn sub(x: V3, y: V3) -> V3 {
        [_mm256_sub_pd(x[0], y[0]), _mm256_sub_pd(x[1], y[1]), _mm256_sub_pd(x[2], y[2])]
    }

    /// [`super::dot`]: (x0 y0 + x1 y1) + x2 y2.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn dot(x: V3, y: V3) -> __m256d {
        _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(x[0], y[0]), _mm256_mul_pd(x[1], y[1])), _mm256_mul_pd(x[2], y[2]))
    }

    /// [`super::cross`].
    #[inline]
    #[target_feature(enable = "avx2")]
    fn cross(x: V3, y: V3) -> V3 {
        [
            _mm256_sub_pd(_mm256_mul_pd(x[1], y[2]), _mm256_mul_pd(x[2], y[1])),
            _mm256_sub_pd(_mm256_mul_pd(x[2], y[0]), _mm256_mul_pd(x[0], y[2])),
            _mm256_sub_pd(_mm256_mul_pd(x[0], y[1]), _mm256_mul_pd(x[1], y[0])),
        ]
    }

    /// `if mask { yes } else { no }`, lane by lane.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn select(mask: __m256d, yes: __m256d, no: __m256d) -> __m256d {
        _mm256_blendv_pd(no, yes, mask)
    }

    /// [`super::normal`]: the cross product over its length where that is
    /// positive and finite, else zero.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn normal(p: &[[[f64; 4]; 3]; 3]) -> V3 {
        let (p0, p1, p2) = (load(&p[0]), load(&p[1]), load(&p[2]));
        let n = cross(sub(p1, p0), sub(p2, p0));
        let l = _mm256_sqrt_pd(dot(n, n));
        let unit = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GT_OQ>(l, _mm256_setzero_pd()),
            _mm256_cmp_pd::<_CMP_LT_OQ>(abs(l), _mm256_set1_pd(f64::INFINITY)),
        );
        let zero = _mm256_setzero_pd();
        [
            select(unit, _mm256_div_pd(n[0], l), zero),
            select(unit, _mm256_div_pd(n[1], l), zero),
            select(unit, _mm256_div_pd(n[2], l), zero),
        ]
    }

    /// `f64::abs`: the sign bit cleared.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn abs(x: __m256d) -> __m256d {
        _mm256_andnot_pd(_mm256_set1_pd(-0.0), x)
    }

    /// `!= [0.0; 3]`: some component is not equal to zero.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn nonzero(n: V3) -> __m256d {
        let z = _mm256_setzero_pd();
        let all_zero = _mm256_and_pd(
            _mm256_and_pd(_mm256_cmp_pd::<_CMP_EQ_OQ>(n[0], z), _mm256_cmp_pd::<_CMP_EQ_OQ>(n[1], z)),
            _mm256_cmp_pd::<_CMP_EQ_OQ>(n[2], z),
        );
        _mm256_xor_pd(all_zero, _mm256_castsi256_pd(_mm256_set1_epi64x(-1)))
    }

    /// [`super::side`].
    #[inline]
    #[target_feature(enable = "avx2")]
    fn side(x: V3, y: V3, q: V3, n: V3) -> __m256d {
        dot(cross(sub(y, x), sub(q, x)), n)
    }

    /// A lane mask as flags.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn flags(mask: __m256d) -> [bool; 4] {
        let m = _mm256_movemask_pd(mask);
        [m & 1 != 0, m & 2 != 0, m & 4 != 0, m & 8 != 0]
    }

    /// The four lanes as numbers.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn store(x: __m256d) -> [f64; 4] {
        let mut out = [0.0; 4];
        // SAFETY: `out` holds four f64s; an unaligned store.
        unsafe { _mm256_storeu_pd(out.as_mut_ptr(), x) };
        out
    }

    /// Flags kept as all-ones or all-zero words, as a lane mask.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn mask_of(bits: &[u64; 4]) -> __m256d {
        // SAFETY: four u64s; an unaligned load.
        _mm256_castsi256_pd(unsafe { _mm256_loadu_si256(bits.as_ptr().cast()) })
    }

    /// The first `n` lanes of `four` measured and added to `out` in edge
    /// order, as [`super::edge`] adds each (a lane past `n` is measured and
    /// left out).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn measure<const QUADS: bool, const HARD: bool>(
        four: &Four,
        n: usize,
        test: QuadTest,
        hard_cos: f64,
        out: &mut Slice,
    ) {
        let [a, b, c, d] = [load(&four.q[0]), load(&four.q[1]), load(&four.q[2]), load(&four.q[3])];
        let (n1, n2) = (normal(&four.f[0]), normal(&four.f[1]));
        // Inconsistent winding: the faces compared as if wound alike.
        let alike = mask_of(&four.alike);
        let sign = _mm256_set1_pd(-0.0);
        let n2h = [0, 1, 2].map(|i| select(alike, _mm256_xor_pd(n2[i], sign), n2[i]));
        let cos = dot(n1, n2h);
        let (l, hard) = if HARD {
            let ab = sub(a, b);
            let l = _mm256_sqrt_pd(dot(ab, ab));
            let limit = _mm256_set1_pd(hard_cos + 1e-12);
            let hard = _mm256_and_pd(_mm256_and_pd(nonzero(n1), nonzero(n2h)), _mm256_cmp_pd::<_CMP_LE_OQ>(cos, limit));
            (store(l), flags(hard))
        } else {
            ([0.0; 4], [false; 4])
        };
        let (score, quad) = if QUADS {
            // The quad's four corners, each cosine taken absolutely; a
            // corner out of range (or NaN) fails the lane.
            let (one, zero) = (_mm256_set1_pd(1.0), _mm256_setzero_pd());
            let corner = _mm256_set1_pd(test.corner);
            let mut score = zero;
            let mut ok = mask_of(&four.quad);
            // Each side's length once, for the corners at both its ends
            // (`super::corners`, `super::SIDES`): four square roots, not eight.
            let (ca, da, bd, cb) = (sub(c, a), sub(d, a), sub(b, d), sub(c, b));
            let sides = [
                _mm256_sqrt_pd(dot(ca, ca)),
                _mm256_sqrt_pd(dot(da, da)),
                _mm256_sqrt_pd(dot(bd, bd)),
                _mm256_sqrt_pd(dot(cb, cb)),
            ];
            for (k, (prev, at, next)) in [(c, a, d), (a, d, b), (d, b, c), (b, c, a)].into_iter().enumerate() {
                let (u, v) = (sub(prev, at), sub(next, at));
                let (lu, lv) = (sides[k], sides[(k + 1) % 4]);
                let q = _mm256_div_pd(dot(u, v), _mm256_mul_pd(lu, lv));
                // `clamp(-1.0, 1.0)`: below -1 is -1, above 1 is 1, a NaN kept.
                let q = select(_mm256_cmp_pd::<_CMP_LT_OQ>(q, _mm256_set1_pd(-1.0)), _mm256_set1_pd(-1.0), q);
                let q = select(_mm256_cmp_pd::<_CMP_GT_OQ>(q, one), one, q);
                // 1 where either side has no length.
                let degenerate =
                    _mm256_or_pd(_mm256_cmp_pd::<_CMP_EQ_OQ>(lu, zero), _mm256_cmp_pd::<_CMP_EQ_OQ>(lv, zero));
                let cos = abs(select(degenerate, one, q));
                // Passes when neither NaN nor above the limit.
                ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_NGT_UQ>(cos, corner));
                ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_ORD_Q>(cos, cos));
                score = _mm256_add_pd(score, cos);
            }
            // Planar: `!(cos < planar)`, a NaN passing.
            let planar = _mm256_cmp_pd::<_CMP_NLT_UQ>(cos, _mm256_set1_pd(test.planar));
            // Convex: `!(s1 s2 >= 0) && !(s3 s4 >= 0)`, the faces' unit
            // normals summed (a candidate's `n2h` is `n2`).
            let sum = [0, 1, 2].map(|i| _mm256_add_pd(n1[i], n2[i]));
            let (s1, s2) = (side(a, b, c, sum), side(a, b, d, sum));
            let (s3, s4) = (side(c, d, a, sum), side(c, d, b, sum));
            let convex = _mm256_and_pd(
                _mm256_cmp_pd::<_CMP_NGE_UQ>(_mm256_mul_pd(s1, s2), zero),
                _mm256_cmp_pd::<_CMP_NGE_UQ>(_mm256_mul_pd(s3, s4), zero),
            );
            (store(score), flags(_mm256_and_pd(_mm256_and_pd(ok, planar), convex)))
        } else {
            ([0.0; 4], [false; 4])
        };
        for k in 0..n {
            if HARD {
                out.lens.push(l[k]);
                if hard[k] {
                    out.hard.push((l[k], four.t0[k]));
                }
            }
            if QUADS && quad[k] {
                out.candidates.push(pack(score[k], four.ei[k]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::testrng::XorShift;

    /// A height field of `n` x `n` cells with random creases and jitter,
    /// some triangles wound the other way, some collapsed to a line, a fin
    /// (an edge of three faces), and two triangles on the field's edge with
    /// a corner that is not finite (NaN, infinite): about 3 n^2 edges.
    fn field(n: u32, seed: u64) -> Topology {
        let mut rng = XorShift::new(seed);
        let points: Vec<[f64; 3]> = (0..=n)
            .flat_map(|y| (0..=n).map(move |x| (x, y)))
            .map(|(x, y)| {
                let z = if rng.below(5) == 0 { rng.unit() * 0.01 } else { 0.0 };
                [x as f64 * 0.01 + rng.unit() * 1e-3, y as f64 * 0.01, z]
            })
            .chain([[0.0, 0.0, 1.0], [f64::NAN, 0.0, 0.0], [f64::INFINITY, -1.0, 0.0]])
            .collect();
        let at = |x: u32, y: u32| y * (n + 1) + x;
        let mut rng = XorShift::new(seed ^ 7);
        let mut triangles: Vec<[u32; 3]> = (0..n)
            .flat_map(|y| (0..n).map(move |x| (x, y)))
            .flat_map(|(x, y)| [[at(x, y), at(x + 1, y), at(x + 1, y + 1)], [at(x, y), at(x + 1, y + 1), at(x, y + 1)]])
            .map(|t| match rng.below(60) {
                0 => [t[0], t[2], t[1]],
                1 => [t[0], t[1], t[1]],
                _ => t,
            })
            .collect();
        let far = (n + 1) * (n + 1);
        triangles.push([at(0, 0), at(1, 0), far]);
        triangles.push([at(3, 0), at(2, 0), far + 1]);
        triangles.push([at(5, 0), at(4, 0), far + 2]);
        Topology::build(&points, &triangles, 1e-9)
    }

    /// TOP-001's limits, as the check sets them.
    fn test_limits() -> QuadTest {
        QuadTest { planar: 40f64.to_radians().cos(), corner: 50f64.to_radians().cos() }
    }

    #[test]
    fn walked_together_the_candidates_and_sums_are_those_walked_apart() {
        for (n, seed) in [(12, 1), (160, 2)] {
            let t = field(n, seed);
            if n > 100 {
                assert!(t.edges.len() > RUN, "{} edges: more than one run", t.edges.len());
            }
            let degenerate = Bits::from_bools(&(0..t.triangles.len()).map(|i| i % 97 == 3).collect::<Vec<bool>>());
            let quads = Some((&degenerate, test_limits()));
            let hard_cos = 20f64.to_radians().cos();
            let both = walk(&t, quads, Some(hard_cos));
            let (alone_q, alone_h) = (walk(&t, quads, None), walk(&t, None, Some(hard_cos)));
            assert!(alone_q.hard.is_none() && alone_h.candidates.is_none());
            let (cq, ch) = (both.candidates.expect("asked"), both.hard.expect("asked"));
            assert_eq!(Some(&cq), alone_q.candidates.as_ref());
            let h = alone_h.hard.expect("asked");
            assert_eq!((ch.total_len.to_bits(), ch.hard_len.to_bits()), (h.total_len.to_bits(), h.hard_len.to_bits()));
            assert_eq!((ch.hard, &ch.hard_faces), (h.hard, &h.hard_faces));
            assert!(ch.hard > 10, "{} hard edges", ch.hard);
            assert!(cq.iter().map(Vec::len).sum::<usize>() > 10, "too few candidates");
        }
    }

    #[test]
    fn the_walk_is_the_sequential_loop_over_every_manifold_edge() {
        // Several windows: a window's fold runs beside the next one.
        let t = field(310, 3);
        assert!(t.edges.len() > WINDOW, "{} edges", t.edges.len());
        let degenerate = Bits::from_bools(&(0..t.triangles.len()).map(|i| i % 89 == 5).collect::<Vec<bool>>());
        let limits = test_limits();
        let hard_cos = 20f64.to_radians().cos();
        // Every edge in order, each test written out as the checks had it.
        let (mut total_len, mut hard_len, mut hard, mut hard_faces) = (0.0f64, 0.0f64, 0u64, Vec::new());
        let mut candidates: Vec<(usize, [u16; 5])> = Vec::new();
        for (ei, e) in t.edges.iter().enumerate().filter(|(_, e)| e.count == 2) {
            let f = t.faces(e);
            let (n1, mut n2) = (t.normal(f[0].tri()), t.normal(f[1].tri()));
            let alike = f[0].forward() == f[1].forward();
            if alike {
                n2 = [-n2[0], -n2[1], -n2[2]];
            }
            let l = len(sub(t.vertices.get(e.a), t.vertices.get(e.b)));
            total_len += l;
            if n1 != [0.0; 3] && n2 != [0.0; 3] && dot(n1, n2) <= hard_cos + 1e-12 {
                hard_len += l;
                hard += 1;
                hard_faces.push(f[0].tri());
            }
            let (t0, t1) = (f[0].tri(), f[1].tri());
            if alike || degenerate.get(t0 as usize) || degenerate.get(t1 as usize) {
                continue;
            }
            let p = |i: u32| t.vertices.get(i);
            let (a, b) = (p(e.a), p(e.b));
            let (c, d) = (
                p(Topology::opposite(t.triangles[t0 as usize], e)),
                p(Topology::opposite(t.triangles[t1 as usize], e)),
            );
            let mut score = 0.0;
            let mut ok = true;
            for (prev, at, next) in [(c, a, d), (a, d, b), (d, b, c), (b, c, a)] {
                let cos = cosine(sub(prev, at), sub(next, at)).abs();
                if cos.is_nan() || cos > limits.corner {
                    ok = false;
                    break;
                }
                score += cos;
            }
            if !ok || dot(n1, n2) < limits.planar {
                continue;
            }
            let n = [n1[0] + n2[0], n1[1] + n2[1], n1[2] + n2[2]];
            if side(a, b, c, n) * side(a, b, d, n) >= 0.0 || side(c, d, a, n) * side(c, d, b, n) >= 0.0 {
                continue;
            }
            candidates.push((ei, pack(score, ei)));
        }
        let walked = walk(&t, Some((&degenerate, limits)), Some(hard_cos));
        let sums = walked.hard.expect("asked");
        assert_eq!((sums.total_len.to_bits(), sums.hard_len.to_bits()), (total_len.to_bits(), hard_len.to_bits()));
        assert_eq!((sums.hard, sums.hard_faces), (hard, hard_faces));
        let runs = walked.candidates.expect("asked");
        assert_eq!(runs.len(), t.edges.len().div_ceil(RUN));
        let flat: Vec<(usize, [u16; 5])> = runs
            .iter()
            .enumerate()
            .flat_map(|(r, run)| run.iter().map(move |c| (r * RUN + c[4] as usize, *c)))
            .collect();
        assert_eq!(flat, candidates);
        assert!(candidates.len() > 1000 && hard > 100, "{} candidates, {hard} hard", candidates.len());
    }

    #[test]
    fn four_edges_at_a_time_are_an_edge_at_a_time_to_the_bit() {
        // `slice` measures four at a time where the CPU has AVX2 (a CPU
        // without it compares the edge-at-a-time walk with itself).
        let t = field(60, 4);
        let degenerate = Bits::from_bools(&(0..t.triangles.len()).map(|i| i % 41 == 2).collect::<Vec<bool>>());
        let quads = Some((&degenerate, test_limits()));
        let hard_cos = 20f64.to_radians().cos();
        // Slices of every length modulo four: the last lanes left empty.
        for end in [t.edges.len(), t.edges.len() - 1, t.edges.len() - 2, t.edges.len() - 3] {
            let (mut fast, mut plain) = (Slice::default(), Slice::default());
            slice::<true, true>(&t, 0..end, quads, hard_cos, &mut fast);
            slice_by_edge::<true, true>(&t, 0..end, quads, hard_cos, &mut plain);
            assert_eq!(fast.candidates, plain.candidates);
            assert_eq!(
                fast.lens.iter().map(|l| l.to_bits()).collect::<Vec<_>>(),
                plain.lens.iter().map(|l| l.to_bits()).collect::<Vec<_>>()
            );
            assert_eq!(
                fast.hard.iter().map(|h| (h.0.to_bits(), h.1)).collect::<Vec<_>>(),
                plain.hard.iter().map(|h| (h.0.to_bits(), h.1)).collect::<Vec<_>>()
            );
            assert!(fast.candidates.len() > 100 && fast.hard.len() > 10);
            // Each check walking alone.
            let (mut fast_q, mut plain_q) = (Slice::default(), Slice::default());
            slice::<true, false>(&t, 0..end, quads, 0.0, &mut fast_q);
            slice_by_edge::<true, false>(&t, 0..end, quads, 0.0, &mut plain_q);
            assert_eq!(fast_q.candidates, plain.candidates);
            assert_eq!(plain_q.candidates, plain.candidates);
            let (mut fast_h, mut plain_h) = (Slice::default(), Slice::default());
            slice::<false, true>(&t, 0..end, None, hard_cos, &mut fast_h);
            slice_by_edge::<false, true>(&t, 0..end, None, hard_cos, &mut plain_h);
            assert_eq!(fast_h.lens, plain.lens);
            assert_eq!((&fast_h.hard, &plain_h.hard), (&plain.hard, &plain.hard));
        }
    }

    #[test]
    fn kept_parts_are_taken_once_and_a_copy_keeps_none() {
        let kept = Kept::default();
        kept.put(Walked { candidates: Some(vec![vec![pack(0.5, 3)]]), hard: Some(HardEdges::default()) });
        assert!(kept.clone().take_candidates().is_none());
        assert_eq!(kept.take_candidates(), Some(vec![vec![pack(0.5, 3)]]));
        assert_eq!(kept.take_candidates(), None);
        assert_eq!(kept.take_hard(), Some(HardEdges::default()));
        assert_eq!(kept.take_hard(), None);
    }
}
