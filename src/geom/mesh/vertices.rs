//! The welded vertices' positions ([`Vertices`]), held in 12 bytes a vertex
//! when every coordinate is an `f32` exactly, else in 24: read back as the
//! same `f64` numbers either way.
//!
//! A welded vertex is the first point of its group, a primitive's `f32`
//! position put through its instance's transform in `f64`. Under a
//! transform that keeps them (the identity, the common case of a mesh drawn
//! where it was modelled) every coordinate is an `f32` value, and half the
//! bytes hold it bit for bit.

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
        if points.iter().all(|p| p.iter().all(|&x| narrows(x))) {
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
/// `i`'s group).
fn first_of_groups<T: Copy + Default>(
    points: &[[f64; 3]],
    labels: &[u32],
    count: usize,
    f: impl Fn([f64; 3]) -> T,
) -> Vec<T> {
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
