//! 4x4 affine transforms in f64, column-major as glTF stores them.

/// A column-major 4x4 matrix.
pub type Mat4 = [f64; 16];

/// The identity.
pub const IDENTITY: Mat4 = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];

/// `a * b`.
pub fn mul(a: &Mat4, b: &Mat4) -> Mat4 {
    let mut out = [0.0; 16];
    for c in 0..4 {
        for r in 0..4 {
            out[c * 4 + r] = (0..4).map(|k| a[k * 4 + r] * b[c * 4 + k]).sum();
        }
    }
    out
}

/// Translation x rotation (unit quaternion x, y, z, w) x scale.
pub fn from_trs(t: [f64; 3], q: [f64; 4], s: [f64; 3]) -> Mat4 {
    let [x, y, z, w] = q;
    let (xx, yy, zz) = (x * x, y * y, z * z);
    let (xy, xz, yz) = (x * y, x * z, y * z);
    let (wx, wy, wz) = (w * x, w * y, w * z);
    [
        (1.0 - 2.0 * (yy + zz)) * s[0],
        (2.0 * (xy + wz)) * s[0],
        (2.0 * (xz - wy)) * s[0],
        0.0,
        (2.0 * (xy - wz)) * s[1],
        (1.0 - 2.0 * (xx + zz)) * s[1],
        (2.0 * (yz + wx)) * s[1],
        0.0,
        (2.0 * (xz + wy)) * s[2],
        (2.0 * (yz - wx)) * s[2],
        (1.0 - 2.0 * (xx + yy)) * s[2],
        0.0,
        t[0],
        t[1],
        t[2],
        1.0,
    ]
}

/// Transforms a point (w = 1).
#[inline]
pub fn transform_point(m: &Mat4, p: [f32; 3]) -> [f64; 3] {
    let (x, y, z) = (p[0] as f64, p[1] as f64, p[2] as f64);
    [
        m[0] * x + m[4] * y + m[8] * z + m[12],
        m[1] * x + m[5] * y + m[9] * z + m[13],
        m[2] * x + m[6] * y + m[10] * z + m[14],
    ]
}

/// [`transform_point`] by one matrix over many points, the identity's
/// arithmetic skipped: most assets draw their meshes untransformed (s13's
/// UV-004 and UV-008 placed each corner of 1.3M triangles, 8M transforms).
#[derive(Debug, Clone, Copy)]
pub struct Placer<'a> {
    m: &'a Mat4,
    identity: bool,
    /// The identity, over points that are all finite
    /// ([`Placer::for_points`]): no point is looked at before it is placed.
    plain: bool,
}

impl<'a> Placer<'a> {
    /// Places points by `m`.
    pub fn new(m: &'a Mat4) -> Placer<'a> {
        let identity = m.iter().zip(&IDENTITY).all(|(a, b)| a.to_bits() == b.to_bits());
        Placer { m, identity, plain: false }
    }

    /// Places `points`, and only them, by `m`: where `m` is the identity
    /// and every coordinate of `points` is finite (one pass over them,
    /// here), [`Placer::place`] converts each point without testing its
    /// coordinates again (UV-004 and UV-008 place every corner of every
    /// triangle: s13's 7.8M corners tested three coordinates each, 0.9 %
    /// of its run's CPU).
    pub fn for_points(m: &'a Mat4, points: &[[f32; 3]]) -> Placer<'a> {
        let mut placer = Placer::new(m);
        // Folded without stopping early, a block at a time: the compiler
        // tests a block's coordinates in vector registers.
        placer.plain = placer.identity
            && points.chunks(1024).all(|block| {
                block.iter().fold(true, |ok, p| ok & p[0].is_finite() & p[1].is_finite() & p[2].is_finite())
            });
        placer
    }

    /// `transform_point(m, p)`, to the bit. By the identity, a finite
    /// point's row is `1 x + 0 y + 0 z + 0`: `x`, except that a zero comes
    /// out +0 (the last `+ 0` turns -0 into +0), which is `x + 0`. A point
    /// with a coordinate that is not finite (0 times it is NaN) is
    /// transformed in full. A placer [`Placer::for_points`] made must be
    /// given only those points.
    #[inline(always)]
    pub fn place(&self, p: [f32; 3]) -> [f64; 3] {
        if self.plain || (self.identity && p.iter().all(|c| c.is_finite())) {
            [p[0] as f64 + 0.0, p[1] as f64 + 0.0, p[2] as f64 + 0.0]
        } else {
            transform_point(self.m, p)
        }
    }
}

/// Determinant of the upper-left 3x3 (negative for a mirroring transform).
pub fn det3(m: &Mat4) -> f64 {
    m[0] * (m[5] * m[10] - m[9] * m[6]) - m[4] * (m[1] * m[10] - m[9] * m[2]) + m[8] * (m[1] * m[6] - m[5] * m[2])
}

/// Scale magnitudes of the upper-left 3x3 (the column lengths).
pub fn column_scales(m: &Mat4) -> [f64; 3] {
    let len = |c: usize| (m[c * 4] * m[c * 4] + m[c * 4 + 1] * m[c * 4 + 1] + m[c * 4 + 2] * m[c * 4 + 2]).sqrt();
    [len(0), len(1), len(2)]
}

/// An axis-aligned box in f64.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Aabb {
    /// Minimum corner.
    pub min: [f64; 3],
    /// Maximum corner.
    pub max: [f64; 3],
}

impl Default for Aabb {
    fn default() -> Self {
        Aabb::empty()
    }
}

impl Aabb {
    /// An empty box that any point grows.
    pub fn empty() -> Aabb {
        Aabb { min: [f64::INFINITY; 3], max: [f64::NEG_INFINITY; 3] }
    }
    /// True when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.min[0] > self.max[0]
    }
    /// Grows to hold `p` (non-finite points are ignored).
    #[inline]
    pub fn add(&mut self, p: [f64; 3]) {
        if p.iter().all(|v| v.is_finite()) {
            for (i, v) in p.into_iter().enumerate() {
                self.min[i] = self.min[i].min(v);
                self.max[i] = self.max[i].max(v);
            }
        }
    }
    /// Grows to hold another box.
    pub fn union(&mut self, o: &Aabb) {
        if !o.is_empty() {
            self.add(o.min);
            self.add(o.max);
        }
    }
    /// Side lengths.
    pub fn size(&self) -> [f64; 3] {
        [self.max[0] - self.min[0], self.max[1] - self.min[1], self.max[2] - self.min[2]]
    }
    /// Centre.
    pub fn center(&self) -> [f64; 3] {
        [(self.min[0] + self.max[0]) / 2.0, (self.min[1] + self.max[1]) / 2.0, (self.min[2] + self.max[2]) / 2.0]
    }
    /// Length of the diagonal.
    pub fn diagonal(&self) -> f64 {
        let s = self.size();
        (s[0] * s[0] + s[1] * s[1] + s[2] * s[2]).sqrt()
    }
    /// The eight corners transformed by `m`, as a new box.
    pub fn transformed(&self, m: &Mat4) -> Aabb {
        let mut out = Aabb::empty();
        if self.is_empty() {
            return out;
        }
        for i in 0..8 {
            let p = [
                if i & 1 == 0 { self.min[0] } else { self.max[0] },
                if i & 2 == 0 { self.min[1] } else { self.max[1] },
                if i & 4 == 0 { self.min[2] } else { self.max[2] },
            ];
            out.add([
                m[0] * p[0] + m[4] * p[1] + m[8] * p[2] + m[12],
                m[1] * p[0] + m[5] * p[1] + m[9] * p[2] + m[13],
                m[2] * p[0] + m[6] * p[1] + m[10] * p[2] + m[14],
            ]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placed_by_the_identity_is_transformed_by_it_to_the_bit() {
        let odd = [
            0.0,
            -0.0,
            1.5,
            -2.25,
            f32::MIN_POSITIVE,
            -1e-45,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ];
        let mut shifted = IDENTITY;
        shifted[13] = 0.5;
        let mut negative_zero = IDENTITY;
        negative_zero[12] = -0.0;
        for m in [IDENTITY, shifted, negative_zero] {
            let placer = Placer::new(&m);
            for &x in &odd {
                for &y in &odd {
                    for &z in &odd {
                        let (got, want) = (placer.place([x, y, z]), transform_point(&m, [x, y, z]));
                        assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{x} {y} {z} by {m:?}");
                    }
                }
            }
            // Made for its points: the finite ones (past a block of 1024,
            // so the folded test reads more than one), and every point with
            // one that is not, placed as transform_point places them.
            let finite: Vec<[f32; 3]> = (0..1500).map(|i| [odd[i % 8], odd[(i / 8) % 8], odd[(i / 64) % 8]]).collect();
            for bad in [None, Some(0), Some(1499)] {
                for &w in &odd[8..] {
                    let mut points = finite.clone();
                    if let Some(i) = bad {
                        points[i][i % 3] = w;
                    }
                    let placer = Placer::for_points(&m, &points);
                    assert_eq!(placer.plain, bad.is_none() && m == IDENTITY && m[12].to_bits() == 0);
                    for &p in &points {
                        let (got, want) = (placer.place(p), transform_point(&m, p));
                        assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{p:?} by {m:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn trs_composes() {
        let m = from_trs([1.0, 2.0, 3.0], [0.0, 0.0, 0.0, 1.0], [2.0, 2.0, 2.0]);
        assert_eq!(transform_point(&m, [1.0, 1.0, 1.0]), [3.0, 4.0, 5.0]);
        assert_eq!(det3(&m), 8.0);
        let mirror = from_trs([0.0; 3], [0.0, 0.0, 0.0, 1.0], [-1.0, 1.0, 1.0]);
        assert!(det3(&mirror) < 0.0);
        // 90 degrees about Y maps +X to -Z.
        let h = std::f64::consts::FRAC_1_SQRT_2;
        let r = from_trs([0.0; 3], [0.0, h, 0.0, h], [1.0; 3]);
        let p = transform_point(&r, [1.0, 0.0, 0.0]);
        assert!((p[2] + 1.0).abs() < 1e-12 && p[0].abs() < 1e-12);
        assert_eq!(mul(&IDENTITY, &m), m);
    }

    #[test]
    fn boxes() {
        let mut b = Aabb::empty();
        assert!(b.is_empty());
        b.add([0.0, 0.0, 0.0]);
        b.add([1.0, 2.0, 2.0]);
        b.add([f64::NAN, 0.0, 0.0]);
        assert_eq!(b.diagonal(), 3.0);
        let t = b.transformed(&from_trs([1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0; 3]));
        assert_eq!(t.min, [1.0, 0.0, 0.0]);
    }
}
