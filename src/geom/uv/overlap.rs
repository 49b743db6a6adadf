//! UV overlap (UV-002): every triangle of a layout rasterised into the
//! [0,1) tile with texel-centre sampling and a top-left fill rule, coverage
//! counted per texel, so only real overlap (stacked or folded triangles,
//! islands on top of each other) counts ([`uv_overlap`]). A texel's count
//! is kept only as far as the measurement reads it, 0, 1 or 2 and more:
//! two bits a texel, in two bit planes ([`Levels`]).

use super::layout::UvMesh;
use super::raster::{
    Coverage as CoverageRule, PIECE_MIN, Pieces, RasterPlan, TriangleCounts, for_each_inside, for_each_inside_in_parts,
    raster_at, rasterise, setup, spans, within_budget,
};
use crate::geom::kept::Kept;

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
/// top-left fill rule, counting coverage per texel as 0, 1 or 2 and more.
/// Triangles sharing an edge never cover a texel twice, so only real overlap
/// (stacked or folded triangles, islands on top of each other) counts; a
/// triangle entirely outside the tile is ignored and one crossing its border
/// is clipped. Memory: two bits per raster texel, or less when the layout's
/// spans fit [`MAX_SPANS`]; time: O(triangles + texel visits), the visits
/// bounded by [`RASTER_WORK_BUDGET`].
///
/// [`plan_raster`]: super::raster::plan_raster
/// [`RASTER_WORK_BUDGET`]: super::raster::RASTER_WORK_BUDGET
pub fn uv_overlap(meshes: &[UvMesh<'_>], width: u32, height: u32) -> OverlapStats {
    overlap_counted(meshes, width, height, MAX_SPANS)
}

/// [`uv_overlap`], counting from spans up to `max_spans` of them.
fn overlap_counted(meshes: &[UvMesh<'_>], width: u32, height: u32, max_spans: usize) -> OverlapStats {
    let total: usize = meshes.iter().map(|m| m.triangles.len()).sum();
    let plan = raster_at(width, height, 1.0);
    let small = u64::from(plan.width) * u64::from(plan.height) <= PARTS_MAX_TEXELS;
    let parts = if small { crate::geom::parts::parts_for(total) } else { 1 };
    overlap_in(meshes, width, height, max_spans, parts, PIECE_MIN)
}

/// The largest raster a layout is rasterised into in parts
/// ([`levels_in_parts`]), 1024 x 1024: each part's raster of levels is
/// then 256 KiB at most, and a larger one (a 4096 px texture's, 4 MiB)
/// is rasterised on one thread, not once for each part.
const PARTS_MAX_TEXELS: u64 = 1 << 20;

/// [`overlap_counted`] rasterised in `parts` parts side by side (more than
/// one: [`levels_in_parts`], meshes of `piece_min` triangles or more cut
/// into ranges) or on this thread.
fn overlap_in(
    meshes: &[UvMesh<'_>],
    width: u32,
    height: u32,
    max_spans: usize,
    parts: usize,
    piece_min: usize,
) -> OverlapStats {
    let (coverage, plan, counts) = if parts > 1 {
        let (levels, plan, counts) = levels_in_parts(meshes, width, height, parts, piece_min);
        (Coverage::Raster(levels), plan, counts)
    } else {
        let ((_, coverage), plan, counts) = rasterise(
            meshes,
            width,
            height,
            |plan| (plan, Coverage::Spans(Kept::take(&SPAN_LIST, KEEP_SPANS_MAX))),
            |(plan, coverage), m, _, c| {
                if let Some(s) = setup(c, CoverageRule::Centre, plan.width, plan.height) {
                    spans(&s, |y, x0, x1| coverage.add(plan, max_spans, m, y, x0, x1));
                }
            },
        );
        (coverage, plan, counts)
    };
    let (covered, overlapping, overlapping_meshes) = match coverage {
        Coverage::Spans(list) => {
            swept(&list, &mut Kept::take(&SPAN_BY_ROW, KEEP_SPANS_MAX), plan.height as usize, meshes.len())
        }
        Coverage::Raster(levels) => {
            let (covered, overlapping) = levels.counts();
            let mut overlapping_meshes = vec![false; meshes.len()];
            if overlapping > 0 {
                for_each_inside(meshes, plan, f64::INFINITY, |m, _, c| {
                    if overlapping_meshes[m] {
                        return;
                    }
                    if let Some(s) = setup(c, CoverageRule::Centre, plan.width, plan.height) {
                        let mut hit = false;
                        spans(&s, |y, x0, x1| hit |= levels.twice_within(y, x0, x1));
                        overlapping_meshes[m] |= hit;
                    }
                });
            }
            (covered, overlapping, overlapping_meshes)
        }
    };
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

/// The layout's levels ([`Levels`]) rasterised in ranges of its
/// triangles on the pool, a mesh at a time (those of `piece_min`
/// triangles or more; a smaller one on this thread), eight ranges for
/// each of `parts` threads so that a thread that comes free takes its
/// share (a raster for each range, of 256 KiB at most), then merged: a
/// texel's level in the merge is its levels in the parts added up to 2 at
/// most, which is the level one raster of every triangle gives it (its
/// count of covering triangles, capped), so the counts are the same. The
/// plan is [`rasterise`]'s ([`within_budget`]): the texture's raster
/// unless the parts' visits together pass the budget (as its single pass
/// would find), then [`plan_raster`]'s. UV-002 rasterised on one thread, beside the light
/// checks, and ran on alone once they were done (s13: 13 ms of one core
/// idle in a fast sitting, 36 in a slow one).
fn levels_in_parts(
    meshes: &[UvMesh<'_>],
    width: u32,
    height: u32,
    parts: usize,
    piece_min: usize,
) -> (Levels, RasterPlan, TriangleCounts) {
    let run = |plan: RasterPlan, budget: f64| {
        for_each_inside_in_parts(
            meshes,
            plan,
            budget,
            Pieces { count: 8 * parts, min_triangles: piece_min },
            || Levels::zeroed(plan.width as usize, plan.height as usize),
            |levels, more| levels.merge(&more),
            |levels, _, _, c| {
                if let Some(s) = setup(c, CoverageRule::Centre, plan.width, plan.height) {
                    spans(&s, |y, x0, x1| levels.paint(y, x0, x1));
                }
            },
        )
    };
    let (plan, (levels, counts)) = within_budget(meshes, width, height, run);
    (levels, plan, counts)
}

/// Most spans a layout is counted from before it is counted in a raster:
/// 256 KiB of spans, the bytes of a 1024 x 1024 raster's two bit planes.
/// At the switch the list and the raster are held together for a moment:
/// with a 1 MiB list and a byte a texel that was 2 MiB, the largest part of
/// what a 1 MB GLB's run holds above the process's floor (BENCHMARKS.md,
/// "Thirty-second step").
const MAX_SPANS: usize = 1 << 14;

/// Most spans a list this thread keeps between layouts (and files) may
/// hold: half of [`MAX_SPANS`], 128 KiB, enough for a box's or a low
/// sphere's layout at 1024 px. A small file's list grew one doubling at a
/// time and its by-row copy was a fresh allocation, each page faulted in;
/// kept, UV-002 takes about a fifth less time over a folder of small files
/// (BENCHMARKS.md, "Twelfth step"). A list that grew to the limit (a
/// layout on its way to the raster) is freed, so a large file's run does
/// not hold it through the checks after UV-002.
const KEEP_SPANS_MAX: usize = MAX_SPANS / 2;

thread_local! {
    /// This thread's span list and its by-row copy ([`Kept`] buffers).
    static SPAN_LIST: std::cell::Cell<Vec<Span>> = const { std::cell::Cell::new(Vec::new()) };
    static SPAN_BY_ROW: std::cell::Cell<Vec<Span>> = const { std::cell::Cell::new(Vec::new()) };
}

/// One row's run of texels `x0..=x1` covered by a triangle of mesh `mesh`.
#[derive(Debug, Clone, Copy)]
struct Span {
    y: u32,
    x0: u32,
    x1: u32,
    mesh: u32,
}

/// How a layout's coverage is counted. A small layout (a box, a card, a
/// prop's few hundred triangles) keeps its spans and counts them by
/// sweeping each row: a handful of spans per row instead of a raster
/// written and read texel by texel (about 0.15 ms of every small file, with
/// a byte a texel). Past [`MAX_SPANS`] the spans are painted into a raster
/// of levels ([`Levels`]) and the rest of the layout goes there. Both give
/// the same counts: a texel's level is the number of spans holding it, up
/// to 2.
enum Coverage {
    Spans(Kept<Span>),
    Raster(Levels),
}

impl Coverage {
    /// Counts texels `x0..=x1` of row `y` once more. A span kept in the list
    /// is a push inlined where the spans are found (a call per span was
    /// about a tenth of UV-002's instructions over small files); the rest is
    /// [`Coverage::add_past`].
    #[inline(always)]
    fn add(&mut self, plan: &RasterPlan, max_spans: usize, mesh: usize, y: usize, x0: usize, x1: usize) {
        if let Coverage::Spans(list) = self
            && list.len() < max_spans
        {
            list.push(Span { y: y as u32, x0: x0 as u32, x1: x1 as u32, mesh: mesh as u32 });
        } else {
            self.add_past(plan, y, x0, x1);
        }
    }

    /// [`Coverage::add`] past the list: at the limit the listed spans are
    /// painted into a raster, which takes this span and every later one.
    #[inline(never)]
    fn add_past(&mut self, plan: &RasterPlan, y: usize, x0: usize, x1: usize) {
        if let Coverage::Spans(list) = self {
            let mut levels = Levels::zeroed(plan.width as usize, plan.height as usize);
            for s in list.iter() {
                levels.paint(s.y as usize, s.x0 as usize, s.x1 as usize);
            }
            *self = Coverage::Raster(levels);
        }
        if let Coverage::Raster(levels) = self {
            levels.paint(y, x0, x1);
        }
    }
}

/// A raster's coverage levels, two bits a texel: each row is a run of
/// 64-texel words in pairs, the texels covered at least once, then those
/// covered at least twice. Painting a span sets its texels' bits in the
/// first word of each pair and, where they were set already, in the
/// second: a word's 64 texels at once, where a byte a texel (a saturating
/// count) wrote each, and four times the memory (a 1024 x 1024 raster: 256
/// KiB, not 1 MiB). The counts are the two planes' bits, counted by
/// `count_ones`. The words come from a buffer this thread keeps between
/// layouts (and files), a [`Kept`] buffer, cleared by one `memset` rather
/// than faulted in again; one past [`Levels::KEEP_MAX`] words is freed.
struct Levels {
    words: Kept<u64>,
    /// Word pairs a row.
    row: usize,
}

thread_local! {
    static KEPT_WORDS: std::cell::Cell<Vec<u64>> = const { std::cell::Cell::new(Vec::new()) };
}

impl Levels {
    /// The most words a thread keeps: a 2048 x 2048 raster's (1 MiB).
    const KEEP_MAX: usize = 2048 * 2048 / 32;

    /// A `width` x `height` raster with every texel at level 0.
    fn zeroed(width: usize, height: usize) -> Self {
        let row = width.div_ceil(64);
        let mut words = Kept::take(&KEPT_WORDS, Self::KEEP_MAX);
        words.resize(2 * row * height, 0);
        Levels { words, row }
    }

    /// The pairs of row `y` that texels `x0..=x1` lie in, each with the
    /// mask of those texels in it: the pair's index in `words` and the mask.
    #[inline(always)]
    fn masks(&self, y: usize, x0: usize, x1: usize) -> impl Iterator<Item = (usize, u64)> + use<> {
        let (w0, w1) = (x0 / 64, x1 / 64);
        let base = y * self.row;
        (w0..=w1).map(move |w| {
            let lo = if w == w0 { x0 % 64 } else { 0 };
            let hi = if w == w1 { x1 % 64 } else { 63 };
            (2 * (base + w), (u64::MAX >> (63 - hi)) & (u64::MAX << lo))
        })
    }

    /// Texels `x0..=x1` of row `y` covered once more.
    #[inline(always)]
    fn paint(&mut self, y: usize, x0: usize, x1: usize) {
        for (i, m) in self.masks(y, x0, x1) {
            let once = self.words[i];
            self.words[i + 1] |= once & m;
            self.words[i] = once | m;
        }
    }

    /// `other`'s coverage (a raster of the same size) added: covered once
    /// where either is, twice where either is or both are once.
    fn merge(&mut self, other: &Levels) {
        for (mine, theirs) in self.words.chunks_exact_mut(2).zip(other.words.chunks_exact(2)) {
            let (once, twice) = (mine[0], mine[1]);
            mine[1] = twice | theirs[1] | (once & theirs[0]);
            mine[0] = once | theirs[0];
        }
    }

    /// Whether a texel of `x0..=x1` in row `y` is covered twice or more.
    fn twice_within(&self, y: usize, x0: usize, x1: usize) -> bool {
        self.masks(y, x0, x1).any(|(i, m)| self.words[i + 1] & m != 0)
    }

    /// Texels covered at least once and at least twice.
    fn counts(&self) -> (u64, u64) {
        self.words.chunks_exact(2).fold((0, 0), |(once, twice), p| {
            (once + u64::from(p[0].count_ones()), twice + u64::from(p[1].count_ones()))
        })
    }
}

/// Texels covered at least once and at least twice, and per mesh whether
/// one of its spans holds a texel covered twice, from the spans: grouped by
/// row (a counting sort: rows are few, spans many), each row's span ends
/// swept in order, counting the texels between consecutive ends by how
/// many spans hold them.
fn swept(list: &[Span], by_row: &mut Vec<Span>, rows: usize, meshes: usize) -> (u64, u64, Vec<bool>) {
    let mut start = vec![0u32; rows + 1];
    for s in list {
        start[s.y as usize + 1] += 1;
    }
    for y in 0..rows {
        start[y + 1] += start[y];
    }
    let mut next = start.clone();
    by_row.clear();
    by_row.resize(list.len(), Span { y: 0, x0: 0, x1: 0, mesh: 0 });
    for &s in list {
        let at = &mut next[s.y as usize];
        by_row[*at as usize] = s;
        *at += 1;
    }
    let (mut covered, mut overlapping) = (0u64, 0u64);
    let mut overlapping_meshes = vec![false; meshes];
    // A span's ends as one integer key each: x above a low bit that is 1
    // for a start and 0 for a stop, so that at one x the stops sort first,
    // as the pairs (x, -1) and (x, +1) did.
    let mut ends: Vec<u64> = Vec::new();
    let mut twice: Vec<(u32, u32)> = Vec::new();
    for y in 0..rows {
        let row = &by_row[start[y] as usize..start[y + 1] as usize];
        if row.is_empty() {
            continue;
        }
        ends.clear();
        twice.clear();
        for s in row {
            ends.push((u64::from(s.x0) << 1) | 1);
            ends.push((u64::from(s.x1) + 1) << 1);
        }
        ends.sort_unstable();
        let mut depth = 0i32;
        for pair in ends.windows(2) {
            depth += if pair[0] & 1 == 1 { 1 } else { -1 };
            let (from, to) = ((pair[0] >> 1) as u32, (pair[1] >> 1) as u32);
            if to > from {
                if depth >= 1 {
                    covered += u64::from(to - from);
                }
                if depth >= 2 {
                    overlapping += u64::from(to - from);
                    match twice.last_mut() {
                        Some(last) if last.1 == from => last.1 = to,
                        _ => twice.push((from, to)),
                    }
                }
            }
        }
        // The doubly covered runs are disjoint and sorted: a span meets
        // one when the first run ending after its start begins at or
        // before its end.
        if !twice.is_empty() {
            for s in row {
                let first = twice.partition_point(|&(_, to)| to <= s.x0);
                if twice.get(first).is_some_and(|&(from, _)| from <= s.x1) {
                    overlapping_meshes[s.mesh as usize] = true;
                }
            }
        }
    }
    (covered, overlapping, overlapping_meshes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::uv::layout::fixtures::{SQUARE, mesh};
    use crate::geom::uv::padding::island_padding;
    use crate::geom::uv::raster::plan_raster;
    use crate::geom::uv::stretch::triangle_stretch;

    #[test]
    fn levels_match_a_texel_by_texel_count() {
        // Random spans on rasters whose rows end inside a word, on one and
        // across several, against a saturating count a texel.
        let mut rng = crate::geom::testrng::XorShift::new(0x1234_5678_9abc_def1u64);
        for (width, height) in [(1usize, 1usize), (63, 3), (64, 2), (65, 4), (200, 5), (1024, 2)] {
            let mut levels = Levels::zeroed(width, height);
            let mut count = vec![0u8; width * height];
            for _ in 0..40 {
                let y = (rng.next_u64() % height as u64) as usize;
                let a = (rng.next_u64() % width as u64) as usize;
                let b = (rng.next_u64() % width as u64) as usize;
                let (x0, x1) = (a.min(b), a.max(b));
                levels.paint(y, x0, x1);
                count[y * width + x0..=y * width + x1].iter_mut().for_each(|c| *c = c.saturating_add(1));
                let slow = (count.iter().filter(|&&c| c >= 1).count(), count.iter().filter(|&&c| c >= 2).count());
                assert_eq!(levels.counts(), (slow.0 as u64, slow.1 as u64), "{width} x {height}");
                for (y, x0, x1) in [(y, x0, x1), (0, 0, width - 1), (height - 1, width / 2, width - 1)] {
                    let twice = count[y * width + x0..=y * width + x1].iter().any(|&c| c >= 2);
                    assert_eq!(levels.twice_within(y, x0, x1), twice, "{width} x {height}: {y} {x0}..={x1}");
                }
            }
        }
        // A kept buffer comes back at level 0 everywhere.
        drop(Levels::zeroed(64, 1));
        let mut dirty = Levels::zeroed(128, 2);
        dirty.paint(1, 0, 127);
        drop(dirty);
        assert_eq!(Levels::zeroed(128, 2).counts(), (0, 0));
    }

    #[test]
    fn spans_and_raster_count_alike() {
        // Counted from spans only, in a raster from the first span, and
        // switching part way.
        random_layouts(0x0dd_ba11_5eed_f00du64, |case, meshes, _, w, h| {
            let spans = overlap_counted(meshes, w, h, usize::MAX);
            for max in [0, 1, 17] {
                assert_eq!(overlap_counted(meshes, w, h, max), spans, "case {case}, {max}");
            }
            assert_eq!(uv_overlap(meshes, w, h), spans);
        });
    }

    /// Sixty random layouts (overlapping, folded, crossing the tile's
    /// border), each as three meshes (its first half of triangles, the
    /// rest, and its first triangle again, or none), with a raster's width
    /// and height: `f(case, meshes, first half's triangles, width, height)`.
    fn random_layouts(seed: u64, mut f: impl FnMut(usize, &[UvMesh<'_>], usize, u32, u32)) {
        let mut rng = crate::geom::testrng::XorShift::new(seed);
        let mut next = move || rng.unit();
        for case in 0..60 {
            let n = 1 + (next() * 40.0) as usize;
            let uvs: Vec<[f32; 2]> =
                (0..n * 3).map(|_| [(next() * 1.3 - 0.15) as f32, (next() * 1.3 - 0.15) as f32]).collect();
            let tris: Vec<[u32; 3]> = (0..n as u32).map(|t| [3 * t, 3 * t + 1, 3 * t + 2]).collect();
            let half = n / 2;
            let meshes = [mesh(&uvs, &tris[..half]), mesh(&uvs, &tris[half..]), mesh(&uvs, &tris[..half.min(1)])];
            let side = [7, 64, 333, 1024][case % 4];
            f(case, &meshes, half, side, side + case as u32 % 3);
        }
    }

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
        let mut rng = crate::geom::testrng::XorShift::new(0x9e37_79b9_7f4a_7c15u64);
        let mut next = move || rng.next_u64();
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
    fn layouts_rasterised_in_parts_count_as_on_one_thread() {
        // The layouts above (spans only on one thread, where they are few),
        // in two, three and four parts: parts inside one mesh, across
        // meshes, with empty ones. Then layouts over the work budget, where
        // the parts' visits together (none alone) pass it, and every part's
        // alone does: the same lower resolution either way.
        random_layouts(0x9a27_5eed, |case, meshes, half, w, h| {
            let alone = overlap_in(meshes, w, h, MAX_SPANS, 1, PIECE_MIN);
            for parts in [2, 3, 4] {
                // Every mesh in ranges, and the smaller ones on this thread.
                for piece_min in [1, half.max(2)] {
                    let split = overlap_in(meshes, w, h, MAX_SPANS, parts, piece_min);
                    assert_eq!(split, alone, "case {case}, {parts} parts, from {piece_min} triangles");
                }
            }
        });
        // 2^28 visits is the budget: each triangle of a full-tile pair
        // visits the tile's 2^24 texels at 4096^2, so 8 copies reach it
        // exactly (kept), 9 pass it (halved), and in two parts neither
        // half of 9 passes it alone.
        for copies in [8, 9, 20] {
            let tris: Vec<[u32; 3]> = (0..copies).flat_map(|_| [[0, 1, 2], [0, 2, 3]]).collect();
            let meshes = [mesh(&SQUARE, &tris)];
            let alone = overlap_in(&meshes, 4096, 4096, MAX_SPANS, 1, PIECE_MIN);
            assert_eq!(alone.plan.width, if copies == 8 { 4096 } else { 2048 }, "{copies} copies");
            for parts in [2, 4] {
                let split = overlap_in(&meshes, 4096, 4096, MAX_SPANS, parts, 1);
                assert_eq!(split, alone, "{copies} copies, {parts} parts");
            }
        }
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
}
