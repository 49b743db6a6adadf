//! Island padding (UV-005): the gaps between a layout's UV islands
//! ([`island_padding`]). Each island is rasterised conservatively, then a
//! two-pass chessboard distance transform (`gaps`) finds the smallest gap
//! and the pairs of neighbouring islands that are too close (`Pairs`).

use super::islands::uv_islands_if_several;
use super::layout::UvMesh;
use super::raster::{
    Coverage, RASTER_WORK_BUDGET, RasterPlan, any_inside, for_each_inside, raster_at, rasterise, setup, spans,
};

/// Widest search radius of the island-gap measurement, in raster texels.
pub const MAX_SEARCH_TEXELS: u32 = 254;

/// Distance value of a texel no island reaches within the search radius.
const UNREACHED: u8 = u8::MAX;

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
    /// Per mesh, in input order: whether it has a triangle in an island of a close pair.
    pub close_meshes: Vec<bool>,
}

/// Measures the padding between the UV islands ([`super::islands::uv_islands`]) of `meshes`
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
/// texture pixels is below `min_gap_px` is close. Memory: two bytes per
/// raster texel (three with more than 255 islands, five with more than
/// 65,535); time O(triangles + texels).
///
/// [`plan_raster`]: super::raster::plan_raster
pub fn island_padding(meshes: &[UvMesh<'_>], width: u32, height: u32, min_gap_px: f64, search_px: f64) -> PaddingStats {
    padding_of(meshes, width, height, min_gap_px, search_px, true)
}

/// [`island_padding`], with or without the [`far_apart`] shortcut (the test
/// that it changes nothing runs both).
fn padding_of(
    meshes: &[UvMesh<'_>],
    width: u32,
    height: u32,
    min_gap_px: f64,
    search_px: f64,
    shortcut: bool,
) -> PaddingStats {
    // One island (or none) is measured by its count alone (below).
    let islands = uv_islands_if_several(meshes);
    let too_close = |gap_texels: u32, plan: RasterPlan| (gap_texels as f64) / plan.scale < min_gap_px;
    let at_full = raster_at(width, height, 1.0);
    // More islands than far_apart compares: skip its pass over the triangles.
    let apart = (shortcut && (2..=MAX_BOXED as u32).contains(&islands.count))
        .then(|| far_apart(meshes, &islands, at_full, search_radius(search_px, at_full)))
        .flatten();
    let Found { plan, owner, pairs, min_gap } = if let Some(owner) = apart {
        // No two islands can meet within the search radius: nothing to raster.
        Found { plan: at_full, owner, pairs: Pairs::new(), min_gap: None }
    } else if islands.count < 2 {
        // One island has no neighbour: it is counted when it reaches into
        // the tile, and nothing is rasterised.
        let owner = if any_inside(meshes, at_full) { vec![0] } else { Vec::new() };
        Found { plan: at_full, owner, pairs: Pairs::new(), min_gap: None }
    } else if islands.count <= u8::MAX as u32 {
        raster_gaps::<u8>(meshes, &islands, width, height, search_px, &too_close)
    } else if islands.count <= u16::MAX as u32 {
        raster_gaps::<u16>(meshes, &islands, width, height, search_px, &too_close)
    } else {
        raster_gaps::<u32>(meshes, &islands, width, height, search_px, &too_close)
    };
    let radius = search_radius(search_px, plan);
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
        // No labels (one island or none): no pair, so no mesh is close.
        *flag = islands
            .island
            .get(t_global..t_global + n)
            .is_some_and(|labels| labels.iter().any(|&i| close_island.get(i as usize).copied().unwrap_or(false)));
        t_global += n;
    }
    let min_gap_px = min_gap.filter(|&g| g < radius as u32).map(|g| g as f64 / plan.scale);
    PaddingStats {
        plan,
        islands: labels as u64,
        searched_px: radius as f64 / plan.scale,
        min_gap_px,
        close_pairs: pairs.len() as u64,
        close_meshes,
    }
}

/// What measuring a layout finds, before its pairs are sorted out.
struct Found {
    /// The raster measured on.
    plan: RasterPlan,
    /// Island of each label - 1.
    owner: Vec<u32>,
    /// Island label pairs found too close.
    pairs: Pairs,
    /// Smallest gap found, in raster texels.
    min_gap: Option<u32>,
}

/// An island label in the raster (0 = no island): the narrowest of `u8`,
/// `u16` and `u32` that holds the layout's island count. Most layouts have
/// a few dozen islands: byte labels make the raster 2 bytes a texel, and
/// the fill and both passes move a quarter of the label bytes 32-bit ones
/// would.
trait Label: Copy + Eq + Default + Into<u32> {
    /// Label `l`, which fits (the caller chose the type by the island count).
    fn of(l: u32) -> Self;
}

impl Label for u8 {
    fn of(l: u32) -> u8 {
        l as u8
    }
}

impl Label for u16 {
    fn of(l: u32) -> u16 {
        l as u16
    }
}

impl Label for u32 {
    fn of(l: u32) -> u32 {
        l
    }
}

/// Rasterises the islands (labels of type `L`, which must hold
/// `islands.count`) and runs [`gaps`] on the raster.
fn raster_gaps<L: Label>(
    meshes: &[UvMesh<'_>],
    islands: &super::islands::Islands,
    width: u32,
    height: u32,
    search_px: f64,
    too_close: &impl Fn(u32, RasterPlan) -> bool,
) -> Found {
    let (st, plan, _) = rasterise(
        meshes,
        width,
        height,
        |plan| PadState::<L>::new(plan, islands.count, plan.width as usize * plan.height as usize),
        |st, _, t, c| {
            let Some(&isl) = islands.island.get(t) else { return };
            let Some(known) = st.label_of.get_mut(isl as usize) else { return };
            if *known == 0 {
                st.owner.push(isl);
                *known = st.owner.len() as u32;
            }
            let l = L::of(*known);
            let plan = st.plan;
            let w = plan.width as usize;
            let Some(s) = setup(c, Coverage::Conservative, plan.width, plan.height) else { return };
            let (label, pairs, min_gap) = (&mut st.label, &mut st.pairs, &mut st.min_gap);
            let none = L::default();
            spans(&s, |y, x0, x1| {
                let run = &mut label[y * w + x0..=y * w + x1];
                // Fresh texels, or this island's own already: one pass.
                if run.iter().fold(true, |all, &v| all & (v == none || v == l)) {
                    run.fill(l);
                    return;
                }
                for v in run {
                    if *v == none {
                        *v = l;
                    } else if *v != l {
                        // Two islands on one texel: gap 0.
                        *min_gap = Some(0);
                        if too_close(0, plan) {
                            pairs.add((*v).into(), l.into());
                        }
                    }
                }
            });
        },
    );
    let PadState { mut label, owner, mut pairs, mut min_gap, .. } = st;
    if owner.len() >= 2 && !label.is_empty() {
        let (w, h) = (plan.width as usize, plan.height as usize);
        gaps(&mut label, w, h, search_radius(search_px, plan), &mut min_gap, &mut |a, b, gap| {
            if too_close(gap, plan) {
                pairs.add(a, b);
            }
        });
    }
    Found { plan, owner, pairs, min_gap }
}

/// Runs a two-pass, 8-connected (chessboard) distance transform with
/// nearest labels over an island raster (0 = no island) and reports every
/// pair of neighbouring texels of different islands a, b with their gap
/// dist_a + dist_b to `found`, keeping the smallest in `min_gap`.
///
/// After the passes every texel within `radius` of an island holds the
/// distance to the nearest island texel and that island's label; the rest
/// keep label 0. The transform is exact for the Chebyshev metric (Rosenfeld
/// and Pfaltz); ties keep the first label found. Once a row's backward pass
/// is done the row and the one below it are final, so its pairs are checked
/// then, in a sweep of their own.
///
/// Each pass visits a texel's neighbours in a fixed order (itself, the one
/// before it in the row, then the three in the row before; mirrored in the
/// backward pass) and keeps the first nearest. That choice is the smallest
/// (distance, position in the order) key, and a smallest key can be found
/// in any grouping, so each run of a row is done in two steps: the three
/// texels of the row before, in one pass over the run that reads one new
/// neighbour a texel (`from_row`), then the texel before it, one after
/// another along the run (`along_row`). The texel-by-texel passes
/// (`gaps_reference`, compared by a test) give the same labels and gaps.
///
/// Runs of [`CHUNK`] texels where nothing can happen are stepped over whole:
/// island interiors (distance 0 everywhere), texels no island reaches
/// within the radius, and, for pairs, runs where the row and the one below
/// hold one label. Each test is a few vectorised byte or word compares on a
/// fixed-size run, and the texels it skips are exactly those the passes
/// would leave unchanged, so a 1024 px raster of a few islands takes a
/// fraction of the time.
fn gaps<L: Label>(
    label: &mut [L],
    w: usize,
    h: usize,
    radius: u8,
    min_gap: &mut Option<u32>,
    found: &mut impl FnMut(u32, u32, u32),
) {
    let none = L::default();
    let mut dist: Vec<u8> = label.iter().map(|&l| if l == none { UNREACHED } else { 0 }).collect();
    // 1 where `from_row` moved a texel to a neighbour of the row before.
    let mut took = vec![0u8; w];
    // The smallest distance around a run in a neighbouring row: its texels
    // and the one on each side.
    let around = |d: &[u8], x0: usize, x1: usize| {
        let mut m = least(&d[x0..x1]);
        if x0 > 0 {
            m = m.min(d[x0 - 1]);
        }
        if x1 < w {
            m = m.min(d[x1]);
        }
        m
    };
    for y in 0..h {
        let (done_l, rest_l) = label.split_at_mut(y * w);
        let (done_d, rest_d) = dist.split_at_mut(y * w);
        let (cl, cd) = (&mut rest_l[..w], &mut rest_d[..w]);
        let prev = (y > 0).then(|| (&done_l[(y - 1) * w..y * w], &done_d[(y - 1) * w..y * w]));
        let mut x0 = 0;
        while x0 < w {
            let x1 = (x0 + CHUNK).min(w);
            if x1 - x0 == CHUNK {
                // Before this pass a texel is 0 (island) or UNREACHED.
                let run = &cd[x0..x1];
                let idle = least(run) == UNREACHED
                    && (x0 == 0 || cd[x0 - 1] >= radius)
                    && prev.is_none_or(|(_, pd)| around(pd, x0, x1) >= radius);
                if idle || all_zero(run) {
                    x0 = x1;
                    continue;
                }
            }
            match prev {
                Some((pl, pd)) => from_row(Pass::Forward, pd, pl, cd, cl, &mut took, x0, x1, radius),
                None => took[x0..x1].fill(0),
            }
            along_row(Pass::Forward, cd, cl, &took, x0, x1, radius);
            x0 = x1;
        }
    }
    let mut pair_at = |a: L, da: u8, b: L, db: u8| {
        if a != none && b != none && a != b {
            let gap = da as u32 + db as u32;
            if min_gap.is_none_or(|g| gap < g) {
                *min_gap = Some(gap);
            }
            found(a.into(), b.into(), gap);
        }
    };
    for y in (0..h).rev() {
        let (cur_l, after_l) = label.split_at_mut((y + 1) * w);
        let (cur_d, after_d) = dist.split_at_mut((y + 1) * w);
        let (cl, cd) = (&mut cur_l[y * w..], &mut cur_d[y * w..]);
        let next = (y + 1 < h).then(|| (&after_l[..w], &after_d[..w]));
        let mut x1 = w;
        while x1 > 0 {
            let x0 = x1.saturating_sub(CHUNK);
            if x1 - x0 == CHUNK {
                let run = &cd[x0..x1];
                let idle = least(run) >= radius
                    && (x1 == w || cd[x1] >= radius)
                    && next.is_none_or(|(_, nd)| around(nd, x0, x1) >= radius);
                if idle || all_zero(run) {
                    x1 = x0;
                    continue;
                }
            }
            match next {
                Some((nl, nd)) => from_row(Pass::Backward, nd, nl, cd, cl, &mut took, x0, x1, radius),
                None => took[x0..x1].fill(0),
            }
            along_row(Pass::Backward, cd, cl, &took, x0, x1, radius);
            x1 = x0;
        }
        // The row is final, and so is the one below: its pairs.
        let mut x0 = 0;
        while x0 < w {
            let x1 = (x0 + CHUNK).min(w);
            if x1 - x0 == CHUNK {
                // One label on the run, its right neighbour and the three
                // texels below each: no pair can start here.
                let v = cl[x0];
                if all_are(&cl[x0..x1], v)
                    && (x1 == w || cl[x1] == v)
                    && next.is_none_or(|(nl, _)| {
                        all_are(&nl[x0..x1], v) && (x0 == 0 || nl[x0 - 1] == v) && (x1 == w || nl[x1] == v)
                    })
                {
                    x0 = x1;
                    continue;
                }
            }
            for x in x0..x1 {
                let (a, da) = (cl[x], cd[x]);
                if a == none {
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
            x0 = x1;
        }
    }
}

/// The smallest distance in a run (UNREACHED when empty).
fn least(d: &[u8]) -> u8 {
    match <&[u8; CHUNK]>::try_from(d) {
        // A whole run: a fixed-size fold the compiler turns into vector minima.
        Ok(run) => run.iter().fold(UNREACHED, |m, &v| m.min(v)),
        Err(_) => d.iter().fold(UNREACHED, |m, &v| m.min(v)),
    }
}

/// Whether every label of a run is `v`.
fn all_are<L: Label>(l: &[L], v: L) -> bool {
    match <&[L; CHUNK]>::try_from(l) {
        Ok(run) => run.iter().fold(true, |a, &u| a & (u == v)),
        Err(_) => l.iter().all(|&u| u == v),
    }
}

/// Whether every distance of a run is 0 (an island's interior).
fn all_zero(d: &[u8]) -> bool {
    match <&[u8; CHUNK]>::try_from(d) {
        Ok(run) => u128::from_ne_bytes(*run) == 0,
        Err(_) => d.iter().all(|&v| v == 0),
    }
}

/// Which of [`gaps`]'s two passes: the forward one goes left to right down
/// the raster, the backward one right to left up it.
#[derive(Clone, Copy, PartialEq)]
enum Pass {
    Forward,
    Backward,
}

/// The distance a texel would get through a neighbour at distance `d`:
/// `d + 1`, or UNREACHED when the neighbour is not within the radius (so it
/// never wins).
#[inline(always)]
fn through(d: u8, radius: u8) -> u8 {
    if d < radius { d + 1 } else { UNREACHED }
}

/// Step one of a pass over texels `x0..x1` of row (`cd`, `cl`): each texel
/// takes the first nearest of the three beside it in the neighbouring row
/// (`nd`, `nl`; left to right in the forward pass, right to left in the
/// backward one) when that is strictly nearer than it is, and `took`
/// records that it did (the texel along the row beats a neighbouring-row
/// texel on a tie, but not the texel's own value). The three neighbours are
/// a window sliding along the run: one new neighbour a texel.
#[allow(clippy::too_many_arguments)]
fn from_row<L: Label>(
    pass: Pass,
    nd: &[u8],
    nl: &[L],
    cd: &mut [u8],
    cl: &mut [L],
    took: &mut [u8],
    x0: usize,
    x1: usize,
    radius: u8,
) {
    let w = cd.len();
    // Texel x's three neighbours (x - 1, x, x + 1) as (distance through
    // them, label); off the raster none.
    let at = |n: usize| if n < w { (through(nd[n], radius), nl[n]) } else { (UNREACHED, L::default()) };
    // A window of three sliding along the row: one new neighbour a texel.
    let (mut l, mut m) = (at(x0.wrapping_sub(1)), at(x0));
    for x in x0..x1 {
        let r = at(x + 1);
        let (first, second, third) = match pass {
            Pass::Forward => (l, m, r),
            Pass::Backward => (r, m, l),
        };
        let mut best = first;
        if second.0 < best.0 {
            best = second;
        }
        if third.0 < best.0 {
            best = third;
        }
        let take = best.0 < cd[x];
        took[x] = take as u8;
        if take {
            (cd[x], cl[x]) = best;
        }
        (l, m) = (m, r);
    }
}

/// Step two of a pass over texels `x0..x1` (after [`from_row`]): one after
/// another in the pass's direction, each texel takes the texel before it in
/// the row when that is nearer, or as near and the texel's value came from
/// the neighbouring row (which comes later in the order).
fn along_row<L: Label>(pass: Pass, cd: &mut [u8], cl: &mut [L], took: &[u8], x0: usize, x1: usize, radius: u8) {
    let step = |cd: &mut [u8], cl: &mut [L], x: usize, before: usize| {
        let d = through(cd[before], radius);
        if (d as u16) < cd[x] as u16 + took[x] as u16 {
            cd[x] = d;
            cl[x] = cl[before];
        }
    };
    match pass {
        Pass::Forward => (x0.max(1)..x1).for_each(|x| step(cd, cl, x, x - 1)),
        Pass::Backward => (x0..x1.min(cd.len().saturating_sub(1))).rev().for_each(|x| step(cd, cl, x, x + 1)),
    }
}

/// Most islands [`far_apart`] compares pair by pair.
const MAX_BOXED: usize = 64;

/// The islands in the tile, in the order the raster labels them, when
/// every two islands' texel boxes lie more than twice
/// the search radius apart: no label travels further than the radius from
/// its island, so two islands whose boxes have more than 2 x radius empty
/// texels between them can never be found neighbours (nor share a texel),
/// and rasterising them would find nothing. A layout of a few islands with
/// margins between them (a cube unwrapped into a grid of cells) is then
/// measured without its raster. `None` when two boxes are closer or over the
/// raster's work budget. The pairs are compared one by one: the caller asks
/// only for layouts of at most [`MAX_BOXED`] islands.
fn far_apart(
    meshes: &[UvMesh<'_>],
    islands: &super::islands::Islands,
    plan: RasterPlan,
    radius: u8,
) -> Option<Vec<u32>> {
    let mut label_of = vec![0u32; islands.count as usize];
    let mut owner = Vec::new();
    let mut boxes: Vec<Option<[i64; 4]>> = Vec::new();
    for_each_inside(meshes, plan, RASTER_WORK_BUDGET, |_, t, c| {
        let Some(&isl) = islands.island.get(t) else { return };
        let Some(known) = label_of.get_mut(isl as usize) else { return };
        if *known == 0 {
            owner.push(isl);
            boxes.push(None);
            *known = owner.len() as u32;
        }
        let Some(s) = setup(c, Coverage::Conservative, plan.width, plan.height) else { return };
        let (x0, x1, y0, y1) = s.bounds();
        let b = &mut boxes[*known as usize - 1];
        *b = Some(match *b {
            None => [x0, x1, y0, y1],
            Some([a0, a1, b0, b1]) => [a0.min(x0), a1.max(x1), b0.min(y0), b1.max(y1)],
        });
    })?;
    let reach = 2 * radius as i64;
    let boxes: Vec<[i64; 4]> = boxes.into_iter().flatten().collect();
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            // Empty columns and rows between the boxes.
            let dx = (b[0] - a[1] - 1).max(a[0] - b[1] - 1).max(0);
            let dy = (b[2] - a[3] - 1).max(a[2] - b[3] - 1).max(0);
            if dx.max(dy) <= reach {
                return None;
            }
        }
    }
    Some(owner)
}

/// Texels [`gaps`] tests at once for a run where nothing can happen.
const CHUNK: usize = 16;

#[cfg(test)]
/// The plain texel-by-texel transform [`gaps`] must agree with (kept for
/// the test that compares them).
///
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
fn gaps_reference(
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
struct PadState<L> {
    plan: RasterPlan,
    /// Island label per texel (0 = none).
    label: Vec<L>,
    /// Label of each island (0 = not in the tile yet).
    label_of: Vec<u32>,
    /// Island of each label - 1.
    owner: Vec<u32>,
    /// Island label pairs found too close.
    pairs: Pairs,
    /// Smallest gap found, in raster texels.
    min_gap: Option<u32>,
}

impl<L: Label> PadState<L> {
    fn new(plan: RasterPlan, islands: u32, texels: usize) -> PadState<L> {
        PadState {
            plan,
            label: vec![L::default(); texels],
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
        // The pair just added again (texel after texel of two overlapping
        // islands): nothing to hash.
        if self.list.last() == Some(&p) {
            return;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::uv::islands::uv_islands;
    use crate::geom::uv::layout::fixtures::{SQUARE, mesh};

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

    /// The smallest gap and every pair with its gap, sorted.
    type Reported = (Option<u32>, Vec<(u32, u32, u32)>);

    /// What `gaps_reference` (with `plain`) or [`gaps`] on labels of type
    /// `L` reports for the raster `label`: the smallest gap, every pair with
    /// its gap (sorted), and the labels after the passes, in 32 bits.
    fn transformed<L: Label + TryFrom<u32>>(
        plain: bool,
        label: &[u32],
        w: usize,
        h: usize,
        radius: u8,
    ) -> (Reported, Vec<u32>) {
        let mut min_gap = None;
        let mut found = Vec::new();
        let mut push = |a, b, g| found.push((a, b, g));
        let labels = if plain {
            let mut wide = label.to_vec();
            gaps_reference(&mut wide, w, h, radius, &mut min_gap, &mut push);
            wide
        } else {
            let mut typed: Vec<L> = label.iter().map(|&l| L::try_from(l).ok().expect("a small label")).collect();
            gaps(&mut typed, w, h, radius, &mut min_gap, &mut push);
            typed.into_iter().map(Into::into).collect()
        };
        found.sort_unstable();
        ((min_gap, found), labels)
    }

    #[test]
    fn skipping_runs_changes_nothing() {
        // Random rasters of rectangles, blobs and noise, at widths around
        // the run length, every radius from 1 to beyond the raster: labels,
        // distances (through the labels), pairs and gaps equal the plain
        // transform's.
        let mut rng = crate::geom::testrng::XorShift::new(0x0dd_ba11_cafe_f00du64);
        let mut next = move |n: u64| rng.below(n);
        for case in 0..300 {
            let w = [1usize, 15, 16, 17, 33, 64, 100][case % 7];
            let h = 1 + next(60) as usize;
            let mut label = vec![0u32; w * h];
            let shapes = next(6);
            for k in 0..shapes {
                let (x0, y0) = (next(w as u64) as usize, next(h as u64) as usize);
                let (x1, y1) = ((x0 + 1 + next(40) as usize).min(w), (y0 + 1 + next(20) as usize).min(h));
                let l = 1 + (k as u32 % 4);
                for y in y0..y1 {
                    for x in x0..x1 {
                        if next(10) > 0 || case % 2 == 0 {
                            label[y * w + x] = l;
                        }
                    }
                }
            }
            let radius = [1u8, 2, 3, 8, 16, 40, 254][case % 7];
            let want = transformed::<u32>(true, &label, w, h, radius);
            let got = [
                transformed::<u8>(false, &label, w, h, radius),
                transformed::<u16>(false, &label, w, h, radius),
                transformed::<u32>(false, &label, w, h, radius),
            ];
            for (bits, got) in [8, 16, 32].into_iter().zip(got) {
                assert_eq!(got.0, want.0, "case {case}: {bits}-bit labels, {w}x{h} radius {radius}: pairs");
                assert_eq!(got.1, want.1, "case {case}: {bits}-bit labels: labels");
            }
        }
    }

    #[test]
    fn islands_far_apart_are_measured_without_the_raster_and_alike() {
        // Random layouts of 2 to 9 squares and slivers, some far apart,
        // some about twice the radius apart, some touching or overlapping:
        // with and without the shortcut every figure is the same.
        let mut rng = crate::geom::testrng::XorShift::new(0x5eed_1234_abcd_0001u64);
        let mut next = move |n: u64| rng.below(n);
        let mut shortcuts = 0;
        for case in 0..400 {
            let side = [16u32, 64, 100, 256][case % 4];
            let n = 2 + next(8) as usize;
            let mut uvs = Vec::new();
            let mut tris = Vec::new();
            for _ in 0..n {
                let (x, y) = (next(side as u64) as f32 / side as f32, next(side as u64) as f32 / side as f32);
                let (w, h) = ((1 + next(12)) as f32 / side as f32, (1 + next(12)) as f32 / side as f32);
                let b = uvs.len() as u32;
                uvs.extend([[x, y], [x + w, y], [x + w, y + h], [x, y + h]]);
                if next(5) == 0 {
                    tris.push([b, b + 1, b + 1]); // a sliver
                } else {
                    tris.extend([[b, b + 1, b + 2], [b, b + 2, b + 3]]);
                }
            }
            let m = [mesh(&uvs, &tris)];
            let (min, search) = ([1.0, 2.0, 4.0][case % 3], [2.0, 8.0, 16.0][case % 3]);
            let fast = padding_of(&m, side, side, min, search, true);
            let slow = padding_of(&m, side, side, min, search, false);
            assert_eq!(fast, slow, "case {case}");
            let islands = uv_islands(&m);
            let plan = raster_at(side, side, 1.0);
            shortcuts += far_apart(&m, &islands, plan, search_radius(search, plan)).is_some() as u32;
            // 8-, 16- and 32-bit labels find the same.
            let too_close = |gap: u32, plan: RasterPlan| (gap as f64) / plan.scale < min;
            let [a, b, c] = [
                raster_gaps::<u8>(&m, &islands, side, side, search, &too_close),
                raster_gaps::<u16>(&m, &islands, side, side, search, &too_close),
                raster_gaps::<u32>(&m, &islands, side, side, search, &too_close),
            ]
            .map(|f| (f.plan, f.min_gap, f.pairs.into_distinct(f.owner.len() + 1), f.owner));
            assert_eq!(a, c, "case {case}: 8- and 32-bit labels");
            assert_eq!(b, c, "case {case}: 16- and 32-bit labels");
        }
        // Both routes were taken.
        assert!((50..350).contains(&shortcuts), "{shortcuts}");
    }

    /// `cells` x `cells` squares of 2 x 2 texels, 2 texels apart, at
    /// `4 * cells` px, the last square a mesh of its own: measured, every
    /// island must be found 2 px from its neighbours, the last one too (a
    /// label wrapped to 0 would leave it out).
    fn grid_of_islands(cells: u32) {
        let mut uvs = Vec::new();
        let mut tris = Vec::new();
        let side = 4 * cells;
        for cy in 0..cells {
            for cx in 0..cells {
                let t = |c: u32, k: u32| (4 * c + k) as f32 / side as f32;
                let b = uvs.len() as u32;
                uvs.extend([[t(cx, 1), t(cy, 1)], [t(cx, 3), t(cy, 1)], [t(cx, 3), t(cy, 3)], [t(cx, 1), t(cy, 3)]]);
                tris.extend([[b, b + 1, b + 2], [b, b + 2, b + 3]]);
            }
        }
        let last = tris.len() - 2;
        let m = [mesh(&uvs, &tris[..last]), mesh(&uvs, &tris[last..])];
        let n = (cells * cells) as u64;
        assert_eq!(uv_islands(&m).count as u64, n);
        let p = island_padding(&m, side, side, 4.0, 8.0);
        assert_eq!((p.islands, p.min_gap_px), (n, Some(2.0)), "{cells}");
        assert_eq!(p.close_meshes, vec![true, true], "{cells}");
        assert!(p.close_pairs >= 2 * (cells as u64 - 1) * cells as u64, "{cells}: {}", p.close_pairs);
    }

    #[test]
    fn more_islands_than_narrow_labels_hold() {
        // 256 islands, one more than 8-bit labels hold: 16-bit ones.
        grid_of_islands(16);
        // 65,536 islands, one more than 16-bit labels hold: 32-bit ones.
        grid_of_islands(256);
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
}
