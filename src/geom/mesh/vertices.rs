//! The welded vertices' positions ([`Vertices`]), held in 12 bytes a vertex
//! when every coordinate is an `f32` exactly, else in 24: read back as the
//! same `f64` numbers either way.
//!
//! A welded vertex is the first point of its group, a primitive's `f32`
//! position put through its instance's transform in `f64`. Under a
//! transform that keeps them (the identity, the common case of a mesh drawn
//! where it was modelled) every coordinate is an `f32` value, and half the
//! bytes hold it bit for bit.

use crate::geom::parts;
use rayon::prelude::*;

/// Welded vertex positions (see the module documentation).
#[derive(Debug, Clone)]
pub enum Vertices {
    /// Every coordinate is exactly this `f32` (bit for bit once widened).
    Narrow(Vec<[f32; 3]>),
    /// At least one coordinate is not an `f32`.
    Wide(Vec<[f64; 3]>),
}

impl Default for Vertices {
    fn default() -> Self {
        Vertices::Narrow(Vec::new())
    }
}

/// Whether `x` widened from its `f32` rounding is `x` bit for bit (a value
/// finer or larger than an `f32`, or a NaN whose payload would change, is
/// not).
#[inline]
fn narrows(x: f64) -> bool {
    ((x as f32) as f64).to_bits() == x.to_bits()
}

impl Vertices {
    /// The positions `count` vertices take from `points`: vertex `w` is
    /// `points[i]` for the first `i` whose `labels[i]` is `w` (every vertex
    /// has one). Narrow when every point's coordinates narrow exactly.
    pub fn first_of_groups(points: &[[f64; 3]], labels: &[u32], count: usize) -> Vertices {
        if points.par_iter().with_min_len(4096).all(|p| p.iter().all(|&x| narrows(x))) {
            Vertices::Narrow(first_of_groups(points, labels, count, |p| p.map(|x| x as f32)))
        } else {
            Vertices::Wide(first_of_groups(points, labels, count, |p| p))
        }
    }

    /// Positions as given (narrowed when every coordinate allows).
    pub fn from_points(points: Vec<[f64; 3]>) -> Vertices {
        if points.iter().all(|p| p.iter().all(|&x| narrows(x))) {
            Vertices::Narrow(points.iter().map(|p| p.map(|x| x as f32)).collect())
        } else {
            Vertices::Wide(points)
        }
    }

    /// Number of vertices.
    pub fn len(&self) -> usize {
        match self {
            Vertices::Narrow(v) => v.len(),
            Vertices::Wide(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Vertex `i`'s position.
    #[inline(always)]
    pub fn get(&self, i: u32) -> [f64; 3] {
        match self {
            Vertices::Narrow(v) => v[i as usize].map(f64::from),
            Vertices::Wide(v) => v[i as usize],
        }
    }

    /// Bytes a vertex takes (12 narrow, 24 wide).
    pub fn bytes_per_vertex(&self) -> usize {
        match self {
            Vertices::Narrow(_) => 12,
            Vertices::Wide(_) => 24,
        }
    }
}

/// `f` of the first point of each of `count` groups (`labels[i]` is point
/// `i`'s group). From [`parts::PARALLEL_FROM`] points, in parts on the pool
/// when the groups are numbered in order of first appearance, as the
/// weld numbers them ([`in_parts`]); otherwise in one pass.
fn first_of_groups<T: Copy + Default + Send>(
    points: &[[f64; 3]],
    labels: &[u32],
    count: usize,
    f: impl Fn([f64; 3]) -> T + Sync,
) -> Vec<T> {
    let n = parts::parts_for(labels.len());
    if n > 1
        && let Some(out) = in_parts(points, labels, count, n, &f)
    {
        return out;
    }
    let mut out = vec![T::default(); count];
    let mut seen = vec![false; count];
    for (i, &w) in labels.iter().enumerate() {
        if !seen[w as usize] {
            seen[w as usize] = true;
            out[w as usize] = f(points[i]);
        }
    }
    out
}

/// [`first_of_groups`] in `n` parts, when the groups are numbered in order
/// of first appearance (`None` when they are not). Then the groups a part
/// meets first are the numbers from one past the highest before it, in
/// order, and each part writes a slice of its own: the highest label of
/// each part first, then the parts side by side.
fn in_parts<T: Copy + Default + Send>(
    points: &[[f64; 3]],
    labels: &[u32],
    count: usize,
    n: usize,
    f: &(impl Fn([f64; 3]) -> T + Sync),
) -> Option<Vec<T>> {
    let ranges = parts::ranges(labels.len(), n, 1);
    // One past each part's highest label (0 for an empty part).
    let tops: Vec<usize> =
        ranges.par_iter().map(|r| labels[r.clone()].iter().map(|&w| w as usize + 1).max().unwrap_or(0)).collect();
    // The first group each part can meet first: one past the highest before it.
    let mut firsts = Vec::with_capacity(n);
    let mut high = 0;
    for &t in &tops {
        firsts.push(high);
        high = high.max(t);
    }
    if high != count {
        return None;
    }
    let mut out = vec![T::default(); count];
    let lengths = (0..n).map(|p| firsts.get(p + 1).copied().unwrap_or(count) - firsts[p]);
    let slices = crate::geom::parts::split_by_lengths(&mut out, lengths);
    let in_order = ranges.into_par_iter().zip(slices).zip(firsts).all(|((range, slice), first)| {
        let mut next = first;
        for i in range {
            let w = labels[i] as usize;
            if w >= next {
                if w != next {
                    return false;
                }
                slice[w - first] = f(points[i]);
                next += 1;
            }
        }
        next == first + slice.len()
    });
    in_order.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_only_when_every_coordinate_comes_back_bit_for_bit() {
        let exact = vec![[1.5, -0.0, 3.0], [0.1f32 as f64, 1e30f32 as f64, f32::MAX as f64]];
        let v = Vertices::from_points(exact.clone());
        assert_eq!(v.bytes_per_vertex(), 12);
        for (i, p) in exact.iter().enumerate() {
            assert_eq!(v.get(i as u32).map(f64::to_bits), p.map(f64::to_bits));
        }
        // 0.1 in f64, a value past f32's range and one finer than its mantissa do not narrow.
        for odd in [0.1, 1e300, 1.0 + 1e-12] {
            let v = Vertices::from_points(vec![[1.0, 2.0, 3.0], [1.0, odd, 3.0]]);
            assert_eq!(v.bytes_per_vertex(), 24, "{odd}");
            assert_eq!(v.get(1)[1].to_bits(), odd.to_bits());
        }
        // Infinities narrow; a NaN comes back with its bits, held either way.
        let v = Vertices::from_points(vec![[f64::INFINITY, f64::NEG_INFINITY, 0.0]]);
        assert_eq!(v.bytes_per_vertex(), 12);
        assert_eq!(v.get(0), [f64::INFINITY, f64::NEG_INFINITY, 0.0]);
        let nan = f64::from_bits(0x7ff8_0000_0000_0001);
        let v = Vertices::from_points(vec![[nan, 1.0, 2.0]]);
        assert_eq!(v.get(0)[0].to_bits(), nan.to_bits());
    }

    #[test]
    fn first_of_groups_in_parts_is_the_one_pass() {
        // Labels in order of first appearance (the weld's), over enough
        // points to split; and labels out of that order, which fall back.
        let n = 3 * parts::PARALLEL_FROM + 17;
        let points: Vec<[f64; 3]> = (0..n).map(|i| [i as f64, 0.5, -(i as f64)]).collect();
        let mut rng = crate::geom::testrng::XorShift::new(7);
        let mut labels = Vec::with_capacity(n);
        let mut count = 0u32;
        for _ in 0..n {
            let fresh = count == 0 || rng.below(3) == 0;
            labels.push(if fresh { count } else { rng.below(count as u64) as u32 });
            count += u32::from(fresh);
        }
        let one_pass = |labels: &[u32], count: usize| {
            let mut out = vec![[f64::NAN; 3]; count];
            let mut seen = vec![false; count];
            for (i, &w) in labels.iter().enumerate() {
                if !std::mem::replace(&mut seen[w as usize], true) {
                    out[w as usize] = points[i];
                }
            }
            out
        };
        let f = |p: [f64; 3]| p;
        let split = in_parts(&points, &labels, count as usize, 4, &f).expect("in order");
        assert_eq!(split, one_pass(&labels, count as usize));
        assert_eq!(first_of_groups(&points, &labels, count as usize, f), one_pass(&labels, count as usize));
        // Two groups swapped: not in order of first appearance.
        let swapped: Vec<u32> = labels
            .iter()
            .map(|&w| {
                if w == 0 {
                    1
                } else if w == 1 {
                    0
                } else {
                    w
                }
            })
            .collect();
        assert!(in_parts(&points, &swapped, count as usize, 4, &f).is_none());
        assert_eq!(first_of_groups(&points, &swapped, count as usize, f), one_pass(&swapped, count as usize));
        // A group first met late in the last part, past the others.
        let mut late = labels.clone();
        let last = late.len() - 1;
        late[last] = count;
        assert!(in_parts(&points, &late, count as usize + 1, 4, &f).is_some());
        assert_eq!(first_of_groups(&points, &late, count as usize + 1, f), one_pass(&late, count as usize + 1));
    }

    #[test]
    fn first_of_groups_takes_each_groups_first_point() {
        let points = [[1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.0000001, 0.0, 0.0], [3.0, 0.0, 0.0]];
        let labels = [0, 1, 0, 2];
        for v in [
            Vertices::first_of_groups(&points, &labels, 3),
            Vertices::first_of_groups(&points.map(|p| p.map(|x| x as f32 as f64)), &labels, 3),
        ] {
            assert_eq!(v.len(), 3);
            assert_eq!(v.get(0)[0], 1.0);
            assert_eq!(v.get(2)[0], 3.0);
        }
        assert_eq!(Vertices::first_of_groups(&points, &labels, 3).bytes_per_vertex(), 24);
    }
}
