//! meshoptimizer's overdraw analyzer (`meshopt_analyzeOverdraw`, its
//! `rasterizer.cpp`) computed again, bit for bit, without its cost: the
//! triangles are rasterized in index order into 256 x 256 depth-tested views
//! along the three axes, front and back faces apart, and the pixels shaded
//! are divided by the pixels covered.
//!
//! The same integer edge functions (28.4 fixed point, the top-left rule)
//! and the same chains of f32 additions give the same pixels the same
//! depths; what differs is the work around them:
//!
//! - a triangle's bounding box is found before its depth gradients (most
//!   small triangles cover no pixel centre and stop there);
//! - in a triangle of more than 64 bounding-box pixels each row is visited
//!   only over the columns where all three edge functions are
//!   non-negative, found by exact integer division, not by testing every
//!   pixel of the bounding box;
//! - there, eight rows go at once, their depth chains in an array of eight
//!   lanes (each lane performs exactly the scalar additions of its row),
//!   over a column-major buffer where eight rows of one column are
//!   contiguous (plain code the compiler vectorizes, no intrinsics; an
//!   opaque zero offset keeps each column's write a blend and a plain
//!   store, not the masked store AMD's cores are slow at);
//! - pixels shaded are counted as the tests pass, pixels covered as the
//!   touched cells are emptied after each axis: no pass over whole views;
//! - the buffer lives on in its thread and only the rectangle the triangles
//!   touched is emptied, instead of allocating and zeroing 1 MB a call;
//! - where the CPU has AVX2 the drawing runs from a second build of the
//!   same code, compiled for it and chosen at run time (the eight lanes in
//!   one register); AVX2 only, not FMA, so every f32 operation is the one
//!   the baseline build performs, and a unit test holds the two builds to
//!   the same counts.
//!
//! An empty cell holds -0.0, which every comparison takes for the C code's
//! initial 0; a shaded cell holds its depth plus +0.0 (the same depth for
//! every comparison, and never -0.0: -0.0 + 0.0 is +0.0), so the bits tell
//! an empty cell from a shaded one. A triangle with a fixed-point corner
//! outside ±8192 (C's `int()` of a NaN or infinite corner is `INT_MIN`; the
//! transform keeps finite ones within 0..=4096) has NaN depths and shades
//! nothing, in C as here, so within that bound no integer overflows and the
//! C code's wrapping casts are plain arithmetic.
//!
//! Tested against the C function on random and real meshes
//! (tests/overdraw.rs); timed against it by `cargo bench --bench overdraw`.

use std::cell::RefCell;

/// The views' side in pixels (meshoptimizer's `kViewport`).
const VIEWPORT: i32 = 256;
/// Rows handled together: one lane each.
const LANES: usize = 8;
/// A column's length in the buffer: 256 rows and a pad, so that eight rows
/// starting at any row stay inside the column.
const COLUMN: usize = VIEWPORT as usize + LANES;
/// One face's view: 256 columns.
const FACE: usize = VIEWPORT as usize * COLUMN;
/// Bound on fixed-point corners (1/16 pixel) that a shading triangle
/// keeps: within it no edge function, row or column step leaves i32 (all
/// stay under 2^30).
const FAST: i32 = 1 << 13;
/// An empty cell: compares as 0, and no shaded cell holds these bits.
const UNSHADED: f32 = -0.0;

/// Bounding boxes of at most this many pixels are tested pixel by pixel.
const SMALL: i32 = 64;

/// What `meshopt_analyzeOverdraw` returns (`meshopt_OverdrawStatistics`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Overdraw {
    /// Cells of the six views (three axes, two faces) shaded at least once.
    pub pixels_covered: u32,
    /// Depth-test passes over all cells (wrapping, as the C `unsigned`).
    pub pixels_shaded: u32,
    /// `pixels_shaded / pixels_covered` in f32, 0 when nothing is covered.
    pub overdraw: f32,
}

/// The depth views of one axis, both faces, with the rectangle each face's
/// triangles touched.
struct Views {
    depth: Vec<f32>,
    dirty: [Rect; 2],
}

/// Half-open cell rectangle, empty when `x0 >= x1`.
#[derive(Clone, Copy)]
struct Rect {
    x0: i32,
    x1: i32,
    y0: i32,
    y1: i32,
}

const EMPTY: Rect = Rect { x0: VIEWPORT, x1: 0, y0: VIEWPORT, y1: 0 };

/// Pixels shaded and covered so far (wrapping like the C sums).
#[derive(Default)]
struct Tally {
    shaded: u32,
    covered: u32,
}

thread_local! {
    /// Each thread's views, kept between calls (all cells empty between them).
    static VIEWS: RefCell<Option<Views>> = const { RefCell::new(None) };
}

/// `meshopt_analyzeOverdraw(triangles, positions)`: the same
/// `pixels_covered`, `pixels_shaded` and `overdraw` bits for every input.
/// The transform spans all of `positions` (not only the vertices the
/// triangles use), as meshoptimizer's does.
///
/// # Panics
///
/// When a triangle names a vertex past `positions` (the C function reads
/// out of bounds there).
pub fn analyze(triangles: &[[u32; 3]], positions: &[[f32; 3]]) -> Overdraw {
    let place = Transform::of(positions);
    let mut tally = Tally::default();
    VIEWS.with(|cell| {
        let mut slot = cell.borrow_mut();
        let views = slot.get_or_insert_with(|| Views { depth: vec![UNSHADED; 2 * FACE], dirty: [EMPTY; 2] });
        // Empty already, unless a call on this thread panicked half-way (a
        // triangle naming a missing vertex): then its cells go now.
        views.clear();
        draw(views, &mut tally, triangles, positions, &place);
    });
    let overdraw = if tally.covered != 0 { tally.shaded as f32 / tally.covered as f32 } else { 0.0 };
    Overdraw { pixels_covered: tally.covered, pixels_shaded: tally.shaded, overdraw }
}

/// Every triangle into each axis's views, in index order, counting the
/// cells shaded as each axis's views are emptied. Where the CPU has AVX2
/// the same code runs compiled for it ([`draw_avx2`]): the eight rows'
/// depth lanes fit one register and a lane's choice is one blend. The
/// results are the same bits: only AVX2 is enabled, not FMA, so every
/// f32 operation stays the separate, correctly rounded one it is in the
/// baseline build. tests/overdraw.rs holds this function to meshoptimizer's
/// C, and a unit test holds the baseline build to it.
fn draw(views: &mut Views, tally: &mut Tally, triangles: &[[u32; 3]], positions: &[[f32; 3]], place: &Transform) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { draw_avx2(views, tally, triangles, positions, place) };
    }
    draw_in(views, tally, triangles, positions, place);
}

/// [`draw_in`] compiled for AVX2: 37 % fewer instructions over a
/// folder of small files, whose views are mostly large triangles' spans
/// (BENCHMARKS.md, "Sixteenth step").
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn draw_avx2(views: &mut Views, tally: &mut Tally, triangles: &[[u32; 3]], positions: &[[f32; 3]], place: &Transform) {
    draw_in(views, tally, triangles, positions, place);
}

/// [`draw`]'s body, inlined into each of its two builds with everything it
/// calls.
#[inline(always)]
fn draw_in(views: &mut Views, tally: &mut Tally, triangles: &[[u32; 3]], positions: &[[f32; 3]], place: &Transform) {
    // Each axis's view: which coordinates are its x, y and depth.
    for [x, y, z] in [[2, 1, 0], [0, 2, 1], [1, 0, 2]] {
        for t in triangles {
            // Arrays written out, not mapped (see `uv::lanes::lanes`).
            let at = |i: u32| place.at(&positions[i as usize]);
            let c = [at(t[0]), at(t[1]), at(t[2])];
            let view = |v: [f32; 3]| [v[x], v[y], v[z]];
            let grid = |v: [f32; 3]| [fixed(v[x]), fixed(v[y])];
            rasterize(views, tally, [view(c[0]), view(c[1]), view(c[2])], [grid(c[0]), grid(c[1]), grid(c[2])]);
        }
        tally.covered += views.clear();
    }
}

/// meshoptimizer's `transformTriangles`: every position moved by the
/// minimum over all positions and scaled so the largest extent spans 256,
/// with its comparisons as written (a NaN coordinate never moves a bound).
/// Applied to each corner as it is drawn (the same values for every
/// corner of a vertex), not held for every vertex: 24 bytes a vertex were
/// this check's memory, beside the first phase's hungriest checks.
struct Transform {
    lo: [f32; 3],
    scale: f32,
}

impl Transform {
    fn of(positions: &[[f32; 3]]) -> Transform {
        let mut lo = [f32::MAX; 3];
        let mut hi = [-f32::MAX; 3];
        for v in positions {
            for j in 0..3 {
                lo[j] = if lo[j] > v[j] { v[j] } else { lo[j] };
                hi[j] = if hi[j] < v[j] { v[j] } else { hi[j] };
            }
        }
        let mut extent = 0.0f32;
        for j in 0..3 {
            let d = hi[j] - lo[j];
            extent = if d < extent { extent } else { d };
        }
        let scale = if extent == 0.0 { 0.0 } else { VIEWPORT as f32 / extent };
        Transform { lo, scale }
    }

    /// A position in the views' space.
    #[inline(always)]
    fn at(&self, v: &[f32; 3]) -> [f32; 3] {
        let (lo, scale) = (self.lo, self.scale);
        [(v[0] - lo[0]) * scale, (v[1] - lo[1]) * scale, (v[2] - lo[2]) * scale]
    }
}

/// C's `int(16.0f * v + 0.5f)` as x86-64 computes it (`cvttss2si`):
/// truncation toward zero, and `INT_MIN` for NaN and out-of-range values.
#[inline(always)]
fn fixed(v: f32) -> i32 {
    let f = 16.0f32 * v + 0.5f32;
    if (-2_147_483_648.0..2_147_483_648.0).contains(&f) {
        // SAFETY: f is not NaN and truncates to a value in i32's range.
        unsafe { f.to_int_unchecked::<i32>() }
    } else {
        i32::MIN
    }
}

impl Views {
    /// Counts the shaded cells among those touched since the last clear
    /// (the pixels covered) and empties them.
    #[inline(always)]
    fn clear(&mut self) -> u32 {
        let mut covered = 0u32;
        for (face, r) in self.dirty.iter_mut().enumerate() {
            for x in r.x0..r.x1 {
                let at = face * FACE + x as usize * COLUMN;
                let cells = &mut self.depth[at + r.y0 as usize..at + r.y1 as usize];
                covered += cells.iter().map(|c| u32::from(c.to_bits() != UNSHADED.to_bits())).sum::<u32>();
                cells.fill(UNSHADED);
            }
            *r = EMPTY;
        }
        covered
    }
}

/// meshoptimizer's `rasterize`: the triangle's depth gradients, its
/// facing (back faces to the second view with reversed depth), its 28.4
/// corners and bounding box, then its pixels.
#[allow(clippy::too_many_lines)]
#[inline(always)]
fn rasterize(views: &mut Views, tally: &mut Tally, [v1, v2, v3]: [[f32; 3]; 3], q: [[i32; 2]; 3]) {
    // The 28.4 corners and their bounding box first: flipping a back face
    // swaps two corners, which changes neither, and most small triangles
    // end here, before any division.
    let [[x1, y1], [mut x2, mut y2], [mut x3, mut y3]] = q;
    let minx = (x1.min(x2).min(x3).wrapping_add(7) >> 4).max(0);
    let miny = (y1.min(y2).min(y3).wrapping_add(7) >> 4).max(0);
    let maxx = (x1.max(x2).max(x3).wrapping_add(7) >> 4).min(VIEWPORT);
    let maxy = (y1.max(y2).max(y3).wrapping_add(7) >> 4).min(VIEWPORT);
    if minx >= maxx || miny >= maxy {
        return; // the C loops run no pixel; nothing else has an effect
    }
    let [v1x, v1y, mut v1z] = v1;
    let [v2x, v2y, v2z] = v2;
    let [v3x, v3y, v3z] = v3;
    // computeDepthGradients (Cramer's rule), operation for operation.
    let det = (v2x - v1x) * (v3y - v1y) - (v2y - v1y) * (v3x - v1x);
    if ![x1, x2, x3, y1, y2, y3].iter().all(|c| (-FAST..=FAST).contains(c)) {
        // Such a corner was NaN or infinite (the transform keeps finite ones
        // within 0..=256.0x, and makes infinite ones only when its scale is
        // infinite, all of a triangle's coordinates then infinite or NaN):
        // the determinant is NaN, and so are the depth gradients and every
        // depth, which pass no test. The C loop (its edge functions wrapping)
        // visits the bounding box and shades nothing.
        debug_assert!(det.is_nan(), "a corner outside the view on a triangle with a determinant");
        return;
    }
    let invdet = if det == 0.0 { 0.0 } else { 1.0 / det };
    let mut dzx = ((v2z - v1z) * (v3y - v1y) - (v2y - v1y) * (v3z - v1z)) * invdet;
    let mut dzy = ((v2x - v1x) * (v3z - v1z) - (v2z - v1z) * (v3x - v1x)) * invdet;
    let face = usize::from(det > 0.0);
    if face == 1 {
        // Back faces: corners 2 and 3 swapped, reversed depth.
        std::mem::swap(&mut x2, &mut x3);
        std::mem::swap(&mut y2, &mut y3);
        v1z = VIEWPORT as f32 - v1z;
        dzx = -dzx;
        dzy = -dzy;
    }
    let (dx12, dx23, dx31) = (x1 - x2, x2 - x3, x3 - x1);
    let (dy12, dy23, dy31) = (y1 - y2, y2 - y3, y3 - y1);
    let tl = |dy: i32, dx: i32| i32::from(dy < 0 || (dy == 0 && dx > 0));
    let (fx, fy) = ((minx << 4) + 8, (miny << 4) + 8);
    let edge = |dx: i32, dy: i32, x: i32, y: i32| dx * (fy - y) - dy * (fx - x) + tl(dy, dx) - 1;
    let cy = [edge(dx12, dy12, x1, y1), edge(dx23, dy23, x2, y2), edge(dx31, dy31, x3, y3)];
    // Row steps (added) and column steps (subtracted): the C code's
    // `int(unsigned(d) << 4)`, which is d * 16 where nothing overflows.
    let row = [dx12, dx23, dx31].map(|d| d * 16);
    let col = [dy12, dy23, dy31].map(|d| d * 16);
    let zy = v1z + (dzx * (fx - x1) as f32 + dzy * (fy - y1) as f32) * (1.0f32 / 16.0f32);

    let d = &mut views.dirty[face];
    *d = Rect { x0: d.x0.min(minx), x1: d.x1.max(maxx), y0: d.y0.min(miny), y1: d.y1.max(maxy) };
    let setup = Setup { face, bbox: [minx, maxx, miny, maxy], cy, row, col, zy, dzx, dzy };
    if (maxx - minx) * (maxy - miny) <= SMALL {
        pixels(views, tally, setup);
    } else if dzx == 0.0 {
        // Adding a zero changes no depth's comparisons (at most -0 to +0).
        spans::<false>(views, tally, setup);
    } else {
        spans::<true>(views, tally, setup);
    }
}

/// A triangle ready for its pixels: its view (`face`), bounding box
/// `[minx, maxx, miny, maxy]`, edge functions at the box's first pixel
/// centre with their row steps (added) and column steps (subtracted), and
/// the depth there with its column and row steps.
#[derive(Clone, Copy)]
struct Setup {
    face: usize,
    bbox: [i32; 4],
    cy: [i32; 3],
    row: [i32; 3],
    col: [i32; 3],
    zy: f32,
    dzx: f32,
    dzy: f32,
}

/// The pixels of a small triangle, tested one by one over its bounding box
/// as the C loop does (for a few pixels, cheaper than finding spans).
#[inline(always)]
fn pixels(views: &mut Views, tally: &mut Tally, setup: Setup) {
    let Setup { face, bbox: [minx, maxx, miny, maxy], mut cy, row, col, mut zy, dzx, dzy } = setup;
    let mut shaded = 0u32;
    let start = face * FACE + minx as usize * COLUMN;
    for y in miny..maxy {
        let mut cx = cy;
        let mut zx = zy;
        let mut at = start + y as usize;
        for _ in minx..maxx {
            if (cx[0] | cx[1] | cx[2]) >= 0 {
                let cell = &mut views.depth[at];
                if zx >= *cell {
                    *cell = zx + 0.0;
                    shaded += 1;
                }
            }
            for i in 0..3 {
                cx[i] -= col[i];
            }
            zx += dzx;
            at += COLUMN;
        }
        for i in 0..3 {
            cy[i] += row[i];
        }
        zy += dzy;
    }
    tally.shaded = tally.shaded.wrapping_add(shaded);
}

/// The pixels of a triangle whose edge functions stay in i32: per row, the
/// column span where all three are non-negative; eight rows at a time, each
/// lane carrying its row's depth chain (`ADVANCE`: whether `dzx` is nonzero,
/// so that the chain must be added at all).
#[inline(always)]
fn spans<const ADVANCE: bool>(views: &mut Views, tally: &mut Tally, setup: Setup) {
    let Setup { face, bbox: [minx, maxx, miny, maxy], mut cy, row, col, mut zy, dzx, dzy } = setup;
    let rows = maxy - miny;
    let last = maxx - minx - 1; // the last column offset
    let mut shaded = [0u32; LANES];
    let mut first = 0;
    while first < rows {
        // Each lane's row: its depth at column offset 0 and its span, n
        // columns from lo (none for the pad rows past maxy); the columns
        // kmin..=kmax where any lane is inside, full..=till where all are.
        let mut zx = [0.0f32; LANES];
        let mut lo = [0i32; LANES];
        let mut n = [0u32; LANES];
        let (mut kmin, mut kmax) = (i32::MAX, -1);
        let (mut full, mut till) = (0, if rows - first >= LANES as i32 { last } else { -1 });
        for l in 0..LANES.min((rows - first) as usize) {
            zx[l] = zy;
            let (mut a, mut b) = (0, last);
            for i in 0..3 {
                let (c, s) = (cy[i], col[i]);
                // c - k*s >= 0: every k when s == 0 and c >= 0; k <= c/s
                // when s > 0; k >= ceil(-c/-s) when s < 0 and c < 0.
                if s > 0 {
                    b = if c < 0 { -1 } else { b.min(c / s) };
                } else if s < 0 {
                    if c < 0 {
                        let (p, q) = (-c, -s);
                        a = a.max((p + q - 1) / q);
                    }
                } else if c < 0 {
                    b = -1;
                }
                cy[i] = c + row[i];
            }
            zy += dzy;
            if a <= b {
                (lo[l], n[l]) = (a, (b - a + 1) as u32);
                kmin = kmin.min(a);
                kmax = kmax.max(b);
            }
            full = full.max(a);
            till = till.min(b);
        }
        if kmin <= kmax {
            if ADVANCE {
                for _ in 0..kmin {
                    for z in &mut zx {
                        *z += dzx;
                    }
                }
            }
            let y = (miny + first) as usize;
            let at = |k: i32| face * FACE + (minx + k) as usize * COLUMN + y;
            let mut lanes = Lanes { zx, shaded: &mut shaded, back: opaque_zero() };
            let till = till.min(kmax);
            let full = if full > till { kmax + 1 } else { full };
            for k in kmin..full {
                lanes.column::<true, ADVANCE>(&mut views.depth[at(k)..], k, lo, n, dzx);
            }
            for k in full..=till {
                lanes.column::<false, ADVANCE>(&mut views.depth[at(k)..], k, lo, n, dzx);
            }
            for k in (till + 1).max(full)..=kmax {
                lanes.column::<true, ADVANCE>(&mut views.depth[at(k)..], k, lo, n, dzx);
            }
        }
        first += LANES as i32;
    }
    tally.shaded = tally.shaded.wrapping_add(shaded.iter().sum::<u32>());
}

/// Eight rows' depth chains, and their depth-test passes.
struct Lanes<'a> {
    zx: [f32; LANES],
    shaded: &'a mut [u32; LANES],
    /// Where a column's eight cells are written back, from where they were
    /// read: 0, but not to the compiler ([`opaque_zero`]).
    back: usize,
}

/// 0, from an empty `asm!` block the compiler cannot see through, so that
/// a store at an offset of it is not known to hit the cells just loaded.
/// A column's eight cells are read, chosen among and written back; where
/// the compiler knows the store hits the loaded cells, LLVM folds it into
/// a masked store (`vmaskmovps`), which AMD's cores retire far more slowly
/// than a blend and a plain store: without it, PERF-005 takes half the time
/// over a folder of small files (0.27 -> 0.14 ms a file, BENCHMARKS.md,
/// "Thirty-seventh step").
#[inline(always)]
fn opaque_zero() -> usize {
    let mut zero = 0usize;
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    // SAFETY: an empty template: the register comes out as it went in, and
    // nothing else is read or written.
    unsafe {
        std::arch::asm!("/* {0} */", inout(reg) zero, options(pure, nomem, nostack, preserves_flags));
    }
    zero
}

impl Lanes<'_> {
    /// Depth-tests the eight cells at the start of `cells` (eight rows of
    /// column offset k), in the lanes whose span holds k (`MASKED`; every
    /// lane otherwise), then steps each chain (`ADVANCE`).
    #[inline(always)]
    fn column<const MASKED: bool, const ADVANCE: bool>(
        &mut self,
        cells: &mut [f32],
        k: i32,
        lo: [i32; LANES],
        n: [u32; LANES],
        dzx: f32,
    ) {
        let old: [f32; LANES] = cells[..LANES].try_into().expect("eight cells");
        let mut new = [0.0f32; LANES];
        for l in 0..LANES {
            let inside = !MASKED || ((k - lo[l]) as u32) < n[l];
            let pass = inside & (self.zx[l] >= old[l]);
            new[l] = if pass { self.zx[l] + 0.0 } else { old[l] };
            self.shaded[l] += u32::from(pass);
            if ADVANCE {
                self.zx[l] += dzx;
            }
        }
        cells[self.back..self.back + LANES].copy_from_slice(&new);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::testrng::XorShift;

    /// (pixels covered, pixels shaded) from [`draw`] (the AVX2 build where
    /// the CPU has it) and from [`draw_in`] as the baseline build compiled it.
    fn both(triangles: &[[u32; 3]], positions: &[[f32; 3]]) -> [(u32, u32); 2] {
        let place = Transform::of(positions);
        [true, false].map(|dispatched| {
            let mut views = Views { depth: vec![UNSHADED; 2 * FACE], dirty: [EMPTY; 2] };
            let mut tally = Tally::default();
            if dispatched {
                draw(&mut views, &mut tally, triangles, positions, &place);
            } else {
                draw_in(&mut views, &mut tally, triangles, positions, &place);
            }
            (tally.covered, tally.shaded)
        })
    }

    #[test]
    fn the_dispatched_build_draws_what_the_baseline_draws() {
        // tests/overdraw.rs holds `analyze` (the dispatched build) to
        // meshoptimizer's C; this holds the baseline build to it in turn.
        // Meshes of large triangles (the spans' eight-row lanes), of small
        // ones (pixel by pixel), slivers, and scales whose depths overflow.
        let mut rng = XorShift::new(0x5eed_0f0a_4d2e_77c1);
        let mut drawn = 0;
        for case in 0..120 {
            let vertices = 3 + (rng.next_u64() % [8, 60, 600][case % 3]) as usize;
            let scale = [1.0f32, 1e-3, 1e30, 7.5][case % 4];
            let positions: Vec<[f32; 3]> =
                (0..vertices).map(|_| std::array::from_fn(|_| scale * (rng.unit() as f32 * 2.0 - 1.0))).collect();
            let triangles: Vec<[u32; 3]> = (0..1 + rng.next_u64() % 200)
                .map(|_| std::array::from_fn(|_| (rng.next_u64() % vertices as u64) as u32))
                .collect();
            let [dispatched, baseline] = both(&triangles, &positions);
            assert_eq!(dispatched, baseline, "case {case}");
            drawn += usize::from(baseline.0 > 0);
        }
        assert!(drawn > 100, "only {drawn} of the cases covered a pixel");
    }
}
