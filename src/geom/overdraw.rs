//! meshoptimizer's overdraw analyzer (`meshopt_analyzeOverdraw`, its
//! `rasterizer.cpp`) computed again, bit for bit, without its cost: the
//! triangles are rasterized in index order into 256 x 256 depth-tested views
//! along the three axes, front and back faces apart, and the pixels shaded
//! are divided by the pixels covered.
//!
//! The same integer edge functions (28.4 fixed point, the top-left rule,
//! the C code's wrapping casts) and the same chains of f32 additions give
//! the same pixels the same depths; what differs is the work around them:
//!
//! - each row is visited only over the columns where all three edge
//!   functions are non-negative, found by exact integer division instead of
//!   testing every pixel of the bounding box;
//! - eight rows go at once, their depth chains in one array of eight lanes
//!   (each lane performs exactly the scalar additions of its row), over a
//!   column-major buffer where eight rows of one column are contiguous;
//! - pixels shaded and covered are counted as they happen (a cell's first
//!   pass covers it), so there is no final pass over the views;
//! - the buffer lives on in its thread and only the rectangle the triangles
//!   touched is cleared, instead of allocating and zeroing 1 MB a call.
//!
//! An empty cell holds NaN (a depth the rasterizer never stores: a NaN depth
//! never passes the test) and is tested as the C code's 0. A triangle with a
//! fixed-point corner outside ±8192 (`int()` of a NaN or infinite corner:
//! the transform keeps finite ones within 0..=4096) has NaN depths and
//! shades nothing, in C as here, so below that bound no integer overflows.
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
    let corners = transform(triangles, positions);
    let mut tally = Tally::default();
    VIEWS.with(|cell| {
        let mut slot = cell.borrow_mut();
        let views = slot.get_or_insert_with(|| Views { depth: vec![f32::NAN; 2 * FACE], dirty: [EMPTY; 2] });
        for axis in 0..3 {
            for t in &corners {
                let [a, b, c] = t.map(|v| match axis {
                    0 => [v[2], v[1], v[0]],
                    1 => [v[0], v[2], v[1]],
                    _ => [v[1], v[0], v[2]],
                });
                rasterize(views, &mut tally, a, b, c);
            }
            views.clear();
        }
    });
    let overdraw = if tally.covered != 0 { tally.shaded as f32 / tally.covered as f32 } else { 0.0 };
    Overdraw { pixels_covered: tally.covered, pixels_shaded: tally.shaded, overdraw }
}

/// meshoptimizer's `transformTriangles`: every corner moved by the minimum
/// over all positions and scaled so the largest extent spans 256, with its
/// comparisons as written (a NaN coordinate never moves a bound).
fn transform(triangles: &[[u32; 3]], positions: &[[f32; 3]]) -> Vec<[[f32; 3]; 3]> {
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
    let at = |i: u32| {
        let v = positions[i as usize];
        [(v[0] - lo[0]) * scale, (v[1] - lo[1]) * scale, (v[2] - lo[2]) * scale]
    };
    triangles.iter().map(|t| t.map(at)).collect()
}

/// C's `int(16.0f * v + 0.5f)` as x86-64 computes it (`cvttss2si`):
/// truncation toward zero, and `INT_MIN` for NaN and out-of-range values.
fn fixed(v: f32) -> i32 {
    let f = 16.0f32 * v + 0.5f32;
    if f >= -2_147_483_648.0 && f < 2_147_483_648.0 { f as i32 } else { i32::MIN }
}

impl Views {
    /// Empties the cells touched since the last clear.
    fn clear(&mut self) {
        for (face, r) in self.dirty.iter_mut().enumerate() {
            for x in r.x0..r.x1 {
                let at = face * FACE + x as usize * COLUMN;
                self.depth[at + r.y0 as usize..at + r.y1 as usize].fill(f32::NAN);
            }
            *r = EMPTY;
        }
    }
}

/// meshoptimizer's `rasterize`: the triangle's depth gradients, its
/// facing (back faces to the second view with reversed depth), its 28.4
/// corners and bounding box, then its pixels.
#[allow(clippy::too_many_lines)]
fn rasterize(views: &mut Views, tally: &mut Tally, v1: [f32; 3], v2: [f32; 3], v3: [f32; 3]) {
    let [v1x, v1y, mut v1z] = v1;
    let [mut v2x, mut v2y, v2z] = v2;
    let [mut v3x, mut v3y, v3z] = v3;
    // computeDepthGradients (Cramer's rule), operation for operation.
    let det = (v2x - v1x) * (v3y - v1y) - (v2y - v1y) * (v3x - v1x);
    let invdet = if det == 0.0 { 0.0 } else { 1.0 / det };
    let mut dzx = ((v2z - v1z) * (v3y - v1y) - (v2y - v1y) * (v3z - v1z)) * invdet;
    let mut dzy = ((v2x - v1x) * (v3z - v1z) - (v2z - v1z) * (v3x - v1x)) * invdet;
    let face = usize::from(det > 0.0);
    if face == 1 {
        std::mem::swap(&mut v2x, &mut v3x);
        std::mem::swap(&mut v2y, &mut v3y);
        v1z = VIEWPORT as f32 - v1z;
        dzx = -dzx;
        dzy = -dzy;
    }
    let (x1, x2, x3) = (fixed(v1x), fixed(v2x), fixed(v3x));
    let (y1, y2, y3) = (fixed(v1y), fixed(v2y), fixed(v3y));
    let minx = (x1.min(x2).min(x3).wrapping_add(7) >> 4).max(0);
    let miny = (y1.min(y2).min(y3).wrapping_add(7) >> 4).max(0);
    let maxx = (x1.max(x2).max(x3).wrapping_add(7) >> 4).min(VIEWPORT);
    let maxy = (y1.max(y2).max(y3).wrapping_add(7) >> 4).min(VIEWPORT);
    if minx >= maxx || miny >= maxy {
        return; // the C loops run no pixel; nothing else has an effect
    }
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
    if dzx == 0.0 {
        // Adding a zero changes no depth's comparisons (at most -0 to +0).
        spans::<false>(views, tally, face, [minx, maxx, miny, maxy], cy, row, col, zy, dzx, dzy);
    } else {
        spans::<true>(views, tally, face, [minx, maxx, miny, maxy], cy, row, col, zy, dzx, dzy);
    }
}

/// The pixels of a triangle whose edge functions stay in i32: per row, the
/// column span where all three are non-negative; eight rows at a time, each
/// lane carrying its row's depth chain (`ADVANCE`: whether `dzx` is nonzero,
/// so that the chain must be added at all).
#[allow(clippy::too_many_arguments)]
fn spans<const ADVANCE: bool>(
    views: &mut Views,
    tally: &mut Tally,
    face: usize,
    [minx, maxx, miny, maxy]: [i32; 4],
    mut cy: [i32; 3],
    row: [i32; 3],
    col: [i32; 3],
    mut zy: f32,
    dzx: f32,
    dzy: f32,
) {
    let rows = maxy - miny;
    let last = maxx - minx - 1; // the last column offset
    let mut shaded = [0u32; LANES];
    let mut covered = [0u32; LANES];
    let mut first = 0;
    while first < rows {
        // Each lane's row: its depth at column offset 0 and its span
        // lo..=hi (empty: lo > hi, as for the pad rows past maxy).
        let mut zx = [0.0f32; LANES];
        let mut lo = [i32::MAX; LANES];
        let mut hi = [-1i32; LANES];
        let (mut kmin, mut kmax) = (i32::MAX, -1);
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
                (lo[l], hi[l]) = (a, b);
                kmin = kmin.min(a);
                kmax = kmax.max(b);
            }
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
            for k in kmin..=kmax {
                let at = face * FACE + (minx + k) as usize * COLUMN + y;
                let cells: &mut [f32; LANES] = (&mut views.depth[at..at + LANES]).try_into().expect("eight cells");
                for l in 0..LANES {
                    let old = cells[l];
                    let empty = old.is_nan();
                    let pass = (lo[l] <= k) & (k <= hi[l]) & (zx[l] >= if empty { 0.0 } else { old });
                    cells[l] = if pass { zx[l] } else { old };
                    shaded[l] += u32::from(pass);
                    covered[l] += u32::from(pass & empty);
                    if ADVANCE {
                        zx[l] += dzx;
                    }
                }
            }
        }
        first += LANES as i32;
    }
    tally.shaded = tally.shaded.wrapping_add(shaded.iter().sum::<u32>());
    tally.covered += covered.iter().sum::<u32>();
}
