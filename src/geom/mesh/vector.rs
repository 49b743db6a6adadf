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
    if repeated {
        return true;
    }
    let s = shape(a, b, c);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let s = shape([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 3f64.sqrt() / 2.0, 0.0]);
        assert!((s.quality - 1.0).abs() < 1e-12);
        let s = shape([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]);
        assert_eq!((s.area, s.quality), (0.0, 0.0));
    }
}
