//! Texel stretch (UV-004): per triangle, the ratio of the singular values of
//! the 3D-to-UV Jacobian ([`triangle_stretch`]), and their area-weighted
//! summary ([`summarize_stretch`], [`weighted_quantiles`]), and the
//! per-triangle samples that UV-004 and UV-008 measure on the thread pool,
//! four triangles at a time ([`extend_measured4`], [`triangle_stretch4`]).

use super::lanes::{self, edges_and_cross, lanes};
use rayon::prelude::*;
use std::cmp::Ordering;

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

/// [`triangle_stretch`] of four triangles at once, lane by lane the same
/// operations in the same order, so the same bits; the branches are
/// selects, and where the CPU has AVX2 the four lanes share each of the
/// five divisions and three square roots, which are most of a triangle's
/// cost (UV-004 measured every triangle of a 1.3M-triangle file in 66-72
/// ms, a fifth of its first phase). Only AVX2 is enabled, not FMA: every
/// operation stays the separate, correctly rounded one of the scalar code.
/// A lane with `ok` false is left out (its corners may be anything).
pub fn triangle_stretch4(p: &[[[f64; 3]; 3]; 4], uv: &[[[f64; 2]; 3]; 4], ok: [bool; 4]) -> [Option<(f64, f64)>; 4] {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { stretch4_avx2(p, uv, ok) };
    }
    stretch4_in(p, uv, ok)
}

/// [`stretch4_in`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn stretch4_avx2(p: &[[[f64; 3]; 3]; 4], uv: &[[[f64; 2]; 3]; 4], ok: [bool; 4]) -> [Option<(f64, f64)>; 4] {
    stretch4_in(p, uv, ok)
}

/// [`triangle_stretch4`]'s body: [`triangle_stretch`] written lane-wise,
/// each of its early returns a mask.
#[inline(always)]
fn stretch4_in(p: &[[[f64; 3]; 3]; 4], uv: &[[[f64; 2]; 3]; 4], ok: [bool; 4]) -> [Option<(f64, f64)>; 4] {
    let [e1, e2, cross] = edges_and_cross(p);
    let dot =
        |a: &[[f64; 4]; 3], b: &[[f64; 4]; 3]| lanes(|k| a[0][k] * b[0][k] + a[1][k] * b[1][k] + a[2][k] * b[2][k]);
    let (l1sq, l2sq, a2sq, e12) = (dot(&e1, &e1), dot(&e2, &e2), dot(&cross, &cross), dot(&e1, &e2));
    let area2 = lanes(|k| a2sq[k].sqrt());
    let inv = lanes(|k| 1.0 / l1sq[k]);
    let (x2, y2) = (lanes(|k| e12[k] * inv[k]), lanes(|k| area2[k] * inv[k]));
    let d1 = lanes::uv(|c| lanes(|k| uv[k][1][c] - uv[k][0][c]));
    let d2 = lanes::uv(|c| lanes(|k| uv[k][2][c] - uv[k][0][c]));
    let m = lanes(|k| d1[0][k].abs().max(d1[1][k].abs()).max(d2[0][k].abs()).max(d2[1][k].abs()));
    let inv_m = lanes(|k| 1.0 / m[k]);
    let (d1, d2) = (lanes::uv(|c| lanes(|k| d1[c][k] * inv_m[k])), lanes::uv(|c| lanes(|k| d2[c][k] * inv_m[k])));
    let inv_y2 = lanes(|k| 1.0 / y2[k]);
    let c1 = lanes::uv(|c| lanes(|k| (d2[c][k] - d1[c][k] * x2[k]) * inv_y2[k]));
    // singular_values([[d1[0], c1[0]], [d1[1], c1[1]]]), lane-wise.
    let (a, b, c, d) = (d1[0], c1[0], d1[1], c1[1]);
    let e = lanes(|k| (a[k] + d[k]) / 2.0);
    let f = lanes(|k| (a[k] - d[k]) / 2.0);
    let g = lanes(|k| (c[k] + b[k]) / 2.0);
    let h = lanes(|k| (c[k] - b[k]) / 2.0);
    let s1 = lanes(|k| (e[k] * e[k] + h[k] * h[k]).sqrt() + (f[k] * f[k] + g[k] * g[k]).sqrt());
    let det = lanes(|k| (a[k] * d[k] - b[k] * c[k]).abs());
    let s2 = lanes(|k| if s1[k] > 0.0 { (det[k] / s1[k]).min(s1[k]) } else { 0.0 });
    let ratio = lanes(|k| {
        let r = if m[k] > 0.0 { if s2[k] > 0.0 { s1[k] / s2[k] } else { f64::INFINITY } } else { f64::INFINITY };
        if r.is_finite() { r } else { f64::INFINITY }
    });
    lanes(|k| {
        let finite_uv = uv[k].as_flattened().iter().all(|x| x.is_finite());
        let sized = l1sq[k].is_finite() && l2sq[k].is_finite() && a2sq[k].is_finite() && l1sq[k] > 0.0;
        let flat = a2sq[k].partial_cmp(&(1e-24 * l1sq[k] * l1sq[k].max(l2sq[k]))) != Some(Ordering::Greater);
        (ok[k] && finite_uv && sized && !flat).then_some((area2[k] / 2.0, ratio[k]))
    })
}

/// Appends to `out` the samples of items `0..n` (`(value, weight)`,
/// weight >= 0), measured four at a time on the thread pool: `measure4(i)`
/// gives the samples of items `i..i + 4` (those past `n` ignored). They are
/// kept in item order; item `i`'s sample is ordered as `first_order + i`
/// (so a caller that numbers its items in the order it visits them keeps
/// ties in that order). Items without a sample (`None`) are left out:
/// every item's slot is written in place, in the list's own memory, then
/// the gaps are closed (no second list, and no copying as the list grows).
pub fn extend_measured4(
    out: &mut Vec<Weighted>,
    n: usize,
    first_order: usize,
    measure4: impl Fn(usize) -> [Option<(f64, f64)>; 4] + Sync + Send,
) {
    // Items a job, a multiple of four.
    const PIECE: usize = 1 << 12;
    let start = out.len();
    out.reserve(n);
    out.spare_capacity_mut()[..n].par_chunks_mut(PIECE).enumerate().for_each(|(c, piece)| {
        for (j, quad) in piece.chunks_mut(4).enumerate() {
            let i = c * PIECE + 4 * j;
            let got = measure4(i);
            for (k, slot) in quad.iter_mut().enumerate() {
                slot.write(match got[k] {
                    Some((value, weight)) => {
                        debug_assert!(weight >= 0.0, "a sample's weight is not negative");
                        Weighted::new(value, weight, first_order + i + k)
                    }
                    None => Weighted { value: 0.0, weight: GAP, order: 0 },
                });
            }
        }
    });
    // SAFETY: the loop above wrote each of the `n` slots past `start`
    // (every piece whole, in quads of four and a last shorter one);
    // `Weighted` is `Copy`, so nothing is dropped twice should it panic
    // before this line (the length is then unchanged).
    unsafe { out.set_len(start + n) };
    close_gaps(out, start);
}

/// A weight no sample has: the mark of an item without one.
const GAP: f64 = -1.0;

/// Closes the gaps (items without a sample) in `out[start..]`, in place.
fn close_gaps(out: &mut Vec<Weighted>, start: usize) {
    let mut kept = start;
    for at in start..out.len() {
        let sample = out[at];
        if sample.weight != GAP {
            out[kept] = sample;
            kept += 1;
        }
    }
    out.truncate(kept);
}

/// One value of a weighted distribution, in 20 bytes: packed to 4-byte
/// alignment, so that a list of one a triangle (UV-004, UV-008; their
/// first phase's largest arrays) takes 20 bytes a triangle, not 24. Its
/// fields are read by value (a reference to one would be unaligned).
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C, packed(4))]
pub struct Weighted {
    /// The value (may be +infinity).
    pub value: f64,
    /// Its weight (>= 0).
    pub weight: f64,
    /// Tie-break among equal values: the sample's place in the order the
    /// samples were made (its triangle's index among those visited).
    pub order: u32,
}

impl Weighted {
    /// A sample; `order` is its place among the samples (saturating at
    /// u32::MAX, past four billion triangles, which no input in memory
    /// reaches: their samples alone would take 80 GB).
    pub fn new(value: f64, weight: f64, order: usize) -> Weighted {
        Weighted { value, weight, order: u32::try_from(order).unwrap_or(u32::MAX) }
    }
}

fn by_value(a: &Weighted, b: &Weighted) -> Ordering {
    let (av, bv, ao, bo) = (a.value, b.value, a.order, b.order);
    av.total_cmp(&bv).then(ao.cmp(&bo))
}

/// Slices this short are sorted and walked instead of partitioned.
const SORTED_BELOW: usize = 24;

/// Weighted quantiles of one list, each of `qs` in [0, 1]: for each q, the
/// smallest value, in the order (value, then `order`), at which the
/// cumulative weight reaches q times the total. `None` when the total
/// weight is not positive and finite. Expected O(n) for all of them
/// together; reorders `items`.
///
/// A quickselect whose partition pass also sums the weight below the pivot:
/// each pass over a slice both places the pivot and tells which side each
/// quantile's target lies on, so one partition of the whole list serves
/// every quantile, and each goes on into its side only. (Before, each
/// quantile was a `select_nth` and then a pass summing the lower half's
/// weights, three times over for UV-008: UV-008 alone on a 1.3M-triangle
/// file took 58 ms, now 36.) Slices
/// below [`SORTED_BELOW`] items are sorted and walked; a slice that is
/// still long after 2 log2(n) levels (pivots that keep landing near an
/// end) is sorted whole, so the worst case stays O(n log n).
pub fn weighted_quantiles<const N: usize>(items: &mut [Weighted], qs: [f64; N]) -> Option<[f64; N]> {
    let total: f64 = items.iter().map(|x| x.weight).sum();
    quantiles_of_total(items, total, qs)
}

/// [`weighted_quantiles`] with the items' total weight, summed in their
/// order, already known.
fn quantiles_of_total<const N: usize>(items: &mut [Weighted], total: f64, qs: [f64; N]) -> Option<[f64; N]> {
    if !(total.is_finite() && total > 0.0) {
        return None;
    }
    // The targets in ascending order, each with the slot it answers.
    let mut targets: [(f64, usize); N] = std::array::from_fn(|k| (qs[k].clamp(0.0, 1.0) * total, k));
    targets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = [f64::NAN; N];
    let depth = 2 * (usize::BITS - items.len().leading_zeros()) as usize;
    select(items, &mut targets, &mut out, depth);
    Some(out)
}

/// Answers `targets` (ascending cumulative weights, measured from the start
/// of `s`, each with its slot in `out`) within `s`. A target past the
/// slice's whole weight (rounding) gets its largest value.
fn select(s: &mut [Weighted], targets: &mut [(f64, usize)], out: &mut [f64], depth: usize) {
    if targets.is_empty() || s.is_empty() {
        return;
    }
    if s.len() < SORTED_BELOW || depth == 0 {
        s.sort_unstable_by(by_value);
        let mut acc = 0.0;
        let mut next = 0;
        for x in s.iter() {
            acc += x.weight;
            while next < targets.len() && acc >= targets[next].0 {
                out[targets[next].1] = x.value;
                next += 1;
            }
        }
        let last = s[s.len() - 1].value;
        for &(_, slot) in &targets[next..] {
            out[slot] = last;
        }
        return;
    }
    let (lower, below) = partition(s);
    let (left, rest) = s.split_at_mut(lower);
    let (pivot, right) = rest.split_first_mut().expect("the pivot");
    let through = below + pivot.weight;
    // Targets the lower part reaches go there (none when it is empty: the
    // pivot is then the first value, and a target of 0 stops at it).
    let into_left = if left.is_empty() { 0 } else { targets.partition_point(|t| below >= t.0) };
    let at_pivot = into_left + targets[into_left..].partition_point(|t| through >= t.0);
    let (to_left, rest) = targets.split_at_mut(into_left);
    let (to_pivot, to_right) = rest.split_at_mut(at_pivot - into_left);
    select(left, to_left, out, depth - 1);
    for &(_, slot) in to_pivot.iter() {
        out[slot] = pivot.value;
    }
    if right.is_empty() {
        for &(_, slot) in to_right.iter() {
            out[slot] = pivot.value;
        }
    } else {
        for t in to_right.iter_mut() {
            t.0 -= through;
        }
        select(right, to_right, out, depth - 1);
    }
}

/// Partitions `s` (at least [`SORTED_BELOW`] items) around a pivot, the
/// median of nine spread over the slice: the items before it in (value,
/// order) come first, then the pivot, then the rest. Returns the pivot's
/// place and the summed weight of the items before it, added in the order
/// the pass meets them.
fn partition(s: &mut [Weighted]) -> (usize, f64) {
    let n = s.len();
    let at = |k: usize| k * (n - 1) / 8;
    let mut nine: [(Weighted, usize); 9] = std::array::from_fn(|k| (s[at(k)], at(k)));
    nine.sort_unstable_by(|a, b| by_value(&a.0, &b.0));
    s.swap(nine[4].1, n - 1);
    let (body, last) = s.split_at_mut(n - 1);
    let pivot = last[0];
    let (pv, po) = (pivot.value, pivot.order);
    let mut lower = 0;
    let mut below = 0.0;
    // Branch-free: every item is written to the next lower slot, and the
    // slot moves on only when the item belongs below the pivot.
    for j in 0..body.len() {
        let x = body[j];
        let (xv, xo) = (x.value, x.order);
        let less = xv.total_cmp(&pv).then(xo.cmp(&po)) == Ordering::Less;
        body[j] = body[lower];
        body[lower] = x;
        lower += usize::from(less);
        below += if less { x.weight } else { 0.0 };
    }
    s.swap(lower, n - 1);
    (lower, below)
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
    // Both sums in one pass, each in the samples' order and from -0.0, as
    // `Iterator::sum` adds (an empty sum is -0.0).
    let (mut area, mut stretched_area) = (-0.0f64, -0.0f64);
    for s in samples.iter() {
        let (value, weight) = (s.value, s.weight);
        area += weight;
        if value > max_ratio {
            stretched_area += weight;
        }
    }
    let stretched_area_pct = if area > 0.0 { (stretched_area / area * 100.0).clamp(0.0, 100.0) } else { 0.0 };
    StretchStats {
        triangles: samples.len() as u64,
        area,
        stretched_area,
        stretched_area_pct,
        // The area is the samples' total weight, summed in their order.
        p95: quantiles_of_total(samples, area, [0.95]).map(|[p95]| p95),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// A coordinate for the lane tests: mostly ordinary, sometimes one of
    /// the values where a lane-wise rewrite could part from the scalar code
    /// (zeros of both signs, NaN, infinities, tiny and huge magnitudes,
    /// repeats that make edges or UV spans vanish).
    fn awkward(rng: &mut crate::geom::testrng::XorShift, prev: f64) -> f64 {
        match rng.below(40) {
            0 => 0.0,
            1 => -0.0,
            2 => f64::NAN,
            3 => f64::INFINITY,
            4 => f64::NEG_INFINITY,
            5 => 1e-200 * rng.unit(),
            6 => 1e200 * (rng.unit() - 0.5),
            7..=9 => prev,
            10 => prev + 1e-13,
            _ => rng.unit() * 4.0 - 2.0,
        }
    }

    #[test]
    fn four_lanes_are_the_scalar_stretch_to_the_bit() {
        let mut rng = crate::geom::testrng::XorShift::new(0x5742_e7c4_0000_0004);
        let bits = |r: Option<(f64, f64)>| r.map(|(a, b)| (a.to_bits(), b.to_bits()));
        let mut measured = 0;
        for _ in 0..200_000 / 4 {
            let mut prev = 0.0;
            let mut next = |rng: &mut crate::geom::testrng::XorShift| {
                prev = awkward(rng, prev);
                prev
            };
            let p: [[[f64; 3]; 3]; 4] =
                std::array::from_fn(|_| std::array::from_fn(|_| std::array::from_fn(|_| next(&mut rng))));
            let uv: [[[f64; 2]; 3]; 4] =
                std::array::from_fn(|_| std::array::from_fn(|_| std::array::from_fn(|_| next(&mut rng))));
            let ok: [bool; 4] = std::array::from_fn(|_| rng.below(8) != 0);
            let want: [Option<(f64, f64)>; 4] =
                std::array::from_fn(|k| if ok[k] { triangle_stretch(p[k], uv[k]) } else { None });
            measured += want.iter().flatten().count();
            // The build this CPU runs, and the baseline build.
            for got in [triangle_stretch4(&p, &uv, ok), stretch4_in(&p, &uv, ok)] {
                assert_eq!(got.map(bits), want.map(bits), "{p:?} {uv:?} {ok:?}");
            }
        }
        // Enough lanes were real triangles for the comparison to mean something.
        assert!(measured > 30_000, "{measured} lanes measured");
    }

    #[test]
    fn measuring_four_at_a_time_gives_the_same_samples() {
        let n = 100_003;
        let one = |i: usize| (!i.is_multiple_of(3)).then_some((i as f64 * 0.5, (i % 7) as f64));
        let mut want = vec![Weighted::new(9.0, 1.0, 0)];
        extend_measured(&mut want, n, 11, one);
        let mut got = vec![Weighted::new(9.0, 1.0, 0)];
        extend_measured4(&mut got, n, 11, |i| std::array::from_fn(|k| (i + k < n).then(|| one(i + k)).flatten()));
        assert_eq!(got, want);
        extend_measured4(&mut got, 6, 0, |_| [None; 4]);
        assert_eq!(got, want);
    }

    /// One item at a time (how UV-004 and UV-008 measured before
    /// [`extend_measured4`]): the oracle of the four-at-a-time form.
    fn extend_measured(
        out: &mut Vec<Weighted>,
        n: usize,
        first_order: usize,
        measure: impl Fn(usize) -> Option<(f64, f64)>,
    ) {
        let start = out.len();
        out.extend((0..n).map(|i| match measure(i) {
            Some((value, weight)) => Weighted::new(value, weight, first_order + i),
            None => Weighted { value: 0.0, weight: GAP, order: 0 },
        }));
        close_gaps(out, start);
    }

    #[test]
    fn measured_samples_keep_item_order_and_skip_gaps() {
        // Every third item has no sample; the others are in item order,
        // ordered from `first_order`, after what the list held.
        let mut out = vec![Weighted::new(9.0, 1.0, 0)];
        let n = 100_001;
        let one = |i: usize| (!i.is_multiple_of(3)).then_some((i as f64, 0.5));
        extend_measured4(&mut out, n, 7, |i| std::array::from_fn(|k| (i + k < n).then(|| one(i + k)).flatten()));
        assert_eq!(out.len(), 1 + (0..n).filter(|i| i % 3 != 0).count());
        let expected = (0..n).filter(|i| i % 3 != 0).map(|i| Weighted::new(i as f64, 0.5, 7 + i));
        assert!(out[1..].iter().copied().eq(expected));
        assert_eq!(out[0], Weighted::new(9.0, 1.0, 0));
        // Nothing measured: nothing added.
        extend_measured4(&mut out, 10, 0, |_| [None; 4]);
        assert_eq!(out.len(), 1 + (0..n).filter(|i| i % 3 != 0).count());
    }

    /// One quantile.
    fn weighted_quantile(items: &mut [Weighted], q: f64) -> Option<f64> {
        weighted_quantiles(items, [q]).map(|[v]| v)
    }

    /// The definition, plainly: sort, add the weights in order, take the
    /// first value whose running sum reaches the target (the last value
    /// when rounding keeps every sum below it).
    fn by_sorting(items: &[Weighted], q: f64) -> Option<f64> {
        let total: f64 = items.iter().map(|x| x.weight).sum();
        if !(total.is_finite() && total > 0.0) {
            return None;
        }
        let mut sorted = items.to_vec();
        sorted.sort_by(by_value);
        let target = q.clamp(0.0, 1.0) * total;
        let mut acc = 0.0;
        let hit = sorted.iter().find(|x| {
            acc += x.weight;
            acc >= target
        });
        Some(hit.unwrap_or(&sorted[sorted.len() - 1]).value)
    }

    #[test]
    fn several_quantiles_at_once_match_the_sorted_walk() {
        // Lists that stress the partition: few distinct values (ties broken
        // by order), zero weights, equal weights (exact sums, so the walk's
        // answer is the only right one), infinities, runs already sorted or
        // reversed, and lengths on both sides of the sorted-slice cut.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let qs = [0.05, 0.5, 0.95, 0.0, 1.0, 0.25];
        for case in 0..3000usize {
            let n = match case % 5 {
                0 => (next() % 8) as usize,
                1 => (next() % 40) as usize,
                _ => (next() % 3000) as usize,
            };
            let distinct = 1 + next() % [2, 7, 1000, 1 << 40][case % 4];
            let mut items: Vec<Weighted> = (0..n)
                .map(|i| {
                    let r = next();
                    let value = if r % 97 == 0 { f64::INFINITY } else { (r % distinct) as f64 * 0.25 };
                    let weight = match case % 3 {
                        0 => 0.5,
                        1 => (next() % 4) as f64,
                        _ => (next() % 1_000_000) as f64 / 7.0,
                    };
                    Weighted::new(value, weight, i)
                })
                .collect();
            match case % 7 {
                0 => items.sort_by(by_value),
                1 => items.sort_by(|a, b| by_value(b, a)),
                _ => {}
            }
            let want = qs.map(|q| by_sorting(&items, q));
            let got = weighted_quantiles(&mut items.clone(), qs);
            assert_eq!(got.map(|g| g.map(Some)).unwrap_or([None; 6]), want, "case {case}, n {n}");
            for (k, &q) in qs.iter().enumerate() {
                assert_eq!(weighted_quantile(&mut items.clone(), q), want[k], "case {case}, q {q}");
            }
        }
    }

    #[test]
    fn a_quantile_of_a_long_sorted_list_stays_fast() {
        // Sorted input with one heavy item at the end: pivots from a
        // median of nine still halve the list (a first-or-last pivot would
        // take a million passes).
        let n = 1_000_000;
        let mut items: Vec<Weighted> = (0..n).map(|i| Weighted::new(i as f64, 1.0, i)).collect();
        items[n - 1] = Weighted::new(n as f64, 1e9, n - 1);
        assert_eq!(weighted_quantiles(&mut items, [0.0005, 0.5]), Some([500_499.0, n as f64]));
    }

    #[test]
    fn weighted_quantile_is_exact_and_order_free() {
        let w = |value: f64, weight: f64, order: usize| Weighted::new(value, weight, order);
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
        let mut items: Vec<Weighted> =
            (0..1000usize).map(|i| w(((i * 7919) % 1000) as f64, (i % 7) as f64, i)).collect();
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
    fn a_sample_takes_twenty_bytes() {
        // UV-004 and UV-008 hold one a triangle: 1.1M of them on the 32 MB
        // sphere, 4.5 MB less than at 24 bytes.
        assert_eq!(std::mem::size_of::<Weighted>(), 20);
        assert_eq!(Weighted::new(1.0, 2.0, usize::MAX).order, u32::MAX);
    }

    #[test]
    fn stretch_summary_sums_are_the_iterator_sums() {
        // The one pass's two sums, bit for bit those of summing the
        // weights, and the stretched ones, in the samples' order (an empty
        // sum is -0.0 both ways).
        let mut rng = crate::geom::testrng::XorShift::new(5);
        for n in [0, 1, 2, 7, 100, 1000] {
            let mut s: Vec<Weighted> = (0..n)
                .map(|i| Weighted::new(rng.unit() * 4.0, rng.unit() * 1e-3 * 10f64.powi(rng.below(9) as i32), i))
                .collect();
            let area: f64 = s.iter().map(|x| x.weight).sum();
            let stretched: f64 = s.iter().filter(|x| x.value > 2.0).map(|x| x.weight).sum();
            let st = summarize_stretch(&mut s, 2.0);
            assert_eq!((st.area.to_bits(), st.stretched_area.to_bits()), (area.to_bits(), stretched.to_bits()), "{n}");
        }
    }

    #[test]
    fn stretch_summary() {
        let w = |value: f64, weight: f64, order: usize| Weighted::new(value, weight, order);
        let mut s = vec![w(1.0, 3.0, 0), w(5.0, 1.0, 1)];
        let st = summarize_stretch(&mut s, 2.0);
        assert_eq!((st.triangles, st.stretched_area_pct, st.p95), (2, 25.0, Some(5.0)));
        let st = summarize_stretch(&mut [], 2.0);
        assert_eq!((st.stretched_area_pct, st.p95), (0.0, None));
    }
}
