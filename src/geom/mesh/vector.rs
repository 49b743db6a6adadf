//! Vector maths on `[f64; 3]`: cross and dot products, differences,
//! lengths, unit triangle normals, and a triangle's shape facts (area,
//! shortest altitude, quality) for the geometry and topology checks.

/// Cross product.
#[inline]
pub fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// Difference.
#[inline]
pub fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// Dot product.
#[inline]
pub fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Length.
#[inline]
pub fn len(a: [f64; 3]) -> f64 {
    dot(a, a).sqrt()
}

/// Unit normal of a triangle (zero when degenerate).
pub fn normal(a: [f64; 3], b: [f64; 3], c: [f64; 3]) -> [f64; 3] {
    let n = cross(sub(b, a), sub(c, a));
    let l = len(n);
    if l > 0.0 && l.is_finite() { [n[0] / l, n[1] / l, n[2] / l] } else { [0.0; 3] }
}

/// Area, longest edge and the 4*sqrt(3)*area/(a^2+b^2+c^2) quality of a
/// triangle (1 for equilateral, 0 for degenerate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TriangleShape {
    /// Area.
    pub area: f64,
    /// Shortest altitude: 2 * area / longest edge.
    pub min_altitude: f64,
    /// 4*sqrt(3)*area / (sum of squared edge lengths), in [0, 1].
    pub quality: f64,
}

/// Shape facts of a triangle.
pub fn shape(a: [f64; 3], b: [f64; 3], c: [f64; 3]) -> TriangleShape {
    let (ab, bc, ca) = (sub(b, a), sub(c, b), sub(a, c));
    let area = 0.5 * len(cross(ab, sub(c, a)));
    let (l1, l2, l3) = (dot(ab, ab), dot(bc, bc), dot(ca, ca));
    let longest = l1.max(l2).max(l3).sqrt();
    let sum = l1 + l2 + l3;
    let quality = if sum > 0.0 { (4.0 * 3f64.sqrt() * area / sum).clamp(0.0, 1.0) } else { 0.0 };
    let min_altitude = if longest > 0.0 { 2.0 * area / longest } else { 0.0 };
    TriangleShape { area, min_altitude, quality }
}

/// Whether a triangle is degenerate: a repeated vertex index (`repeated`),
/// an area below tol^2, or a shortest altitude below tol (collinear
/// corners). GEO-004's test, shared by every check that leaves such
/// triangles out.
pub fn is_degenerate([a, b, c]: [[f64; 3]; 3], repeated: bool, tol: f64) -> bool {
    repeated || degenerate_shape(&shape(a, b, c), tol)
}

/// [`is_degenerate`]'s geometric half, on a shape already computed: an area
/// below tol^2 or a shortest altitude below tol.
#[inline]
pub fn degenerate_shape(s: &TriangleShape, tol: f64) -> bool {
    !(s.area >= tol * tol && s.min_altitude >= tol)
}

/// TOP-003's summary of per-triangle qualities (in triangle order): the
/// finite ones' mean (summed in that order) and 5th percentile (the
/// element at floor((n - 1) x 0.05) in sorted order), and how many there
/// are; `None` when none is finite.
pub fn quality_summary(mut q: Vec<f64>) -> Option<(f64, f64, usize)> {
    // Collected in place, then the non-finite ones removed: the same list
    // in the same order as filtering while collecting.
    q.retain(|x| x.is_finite());
    if q.is_empty() {
        return None;
    }
    // Summed in a fixed order: the same bytes give the same mean.
    let mean = q.iter().sum::<f64>() / q.len() as f64;
    let k = ((q.len() as f64 - 1.0) * 0.05).floor() as usize;
    let (_, p5, _) = q.select_nth_unstable_by(k, f64::total_cmp);
    Some((mean, *p5, q.len()))
}

/// [`quality_summary`] without the list: the qualities are pushed in
/// triangle order, a window at a time, and only what the summary needs is
/// kept. The finite ones are summed as they come (the same additions in the
/// same order as the list's sum), and the 5th percentile is found among the
/// smallest values seen: the element at floor((n - 1) x 0.05) is among the
/// `keep` = floor((total - 1) x 0.05) + 1 smallest for every n up to
/// `total`, so the candidates are pruned to those whenever they reach twice
/// that (a selection, linear). About 0.8 bytes a triangle instead of 8: the
/// welded mesh's build held the 1.1M-triangle 32 MB sphere's 9 MB list beside
/// its points and triangles.
pub struct QualityStream {
    sum: f64,
    count: usize,
    keep: usize,
    /// Every finite value pushed that compares at most `bound` (all of
    /// them until the first prune).
    candidates: Vec<f64>,
    bound: Option<f64>,
}

impl QualityStream {
    /// For at most `total` values.
    pub fn new(total: usize) -> QualityStream {
        let keep = (total.saturating_sub(1) as f64 * 0.05).floor() as usize + 1;
        QualityStream { sum: 0.0, count: 0, keep, candidates: Vec::new(), bound: None }
    }

    /// The next values, in order.
    pub fn extend(&mut self, values: &[f64]) {
        for &x in values.iter().filter(|x| x.is_finite()) {
            self.sum += x;
            self.count += 1;
            if self.bound.is_none_or(|b| x.total_cmp(&b).is_le()) {
                self.candidates.push(x);
            }
        }
        if self.candidates.len() >= 2 * self.keep {
            let (_, &mut b, _) = self.candidates.select_nth_unstable_by(self.keep - 1, f64::total_cmp);
            self.candidates.truncate(self.keep);
            self.bound = Some(b);
        }
    }

    /// [`quality_summary`] of every value pushed.
    pub fn finish(mut self) -> Option<(f64, f64, usize)> {
        if self.count == 0 {
            return None;
        }
        let mean = self.sum / self.count as f64;
        let k = ((self.count as f64 - 1.0) * 0.05).floor() as usize;
        let (_, p5, _) = self.candidates.select_nth_unstable_by(k, f64::total_cmp);
        Some((mean, *p5, self.count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::testrng::XorShift;

    /// The stream gives the list's summary, bit for bit, whatever the
    /// order, the ties, the non-finite values and the window sizes.
    #[test]
    fn stream_matches_the_list() {
        let mut rng = XorShift::new(7);
        for case in 0..400 {
            let n = match case % 4 {
                0 => rng.below(40) as usize,
                1 => rng.below(3_000) as usize,
                _ => rng.below(60_000) as usize,
            };
            let distinct = 1 + rng.below(if case % 3 == 0 { 5 } else { 1_000_000 });
            let mut q: Vec<f64> = (0..n)
                .map(|_| match rng.below(100) {
                    0 => f64::NAN,
                    1 => f64::INFINITY,
                    2 => -0.0,
                    _ => rng.below(distinct) as f64 / distinct as f64,
                })
                .collect();
            match case % 5 {
                0 => q.sort_by(f64::total_cmp),
                1 => q.sort_by(|a, b| b.total_cmp(a)),
                _ => {}
            }
            let mut stream = QualityStream::new(n + rng.below(3) as usize);
            let mut rest = &q[..];
            while !rest.is_empty() {
                let w = (1 + rng.below(5_000) as usize).min(rest.len());
                stream.extend(&rest[..w]);
                rest = &rest[w..];
            }
            let (want, got) = (quality_summary(q.clone()), stream.finish());
            let bits = |s: Option<(f64, f64, usize)>| s.map(|(m, p, n)| (m.to_bits(), p.to_bits(), n));
            assert_eq!(bits(got), bits(want), "case {case}: {n} values");
        }
    }

    #[test]
    fn shapes() {
        let s = shape([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 3f64.sqrt() / 2.0, 0.0]);
        assert!((s.quality - 1.0).abs() < 1e-12);
        let s = shape([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]);
        assert_eq!((s.area, s.quality), (0.0, 0.0));
    }
}
