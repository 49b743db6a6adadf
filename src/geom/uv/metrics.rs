//! Per-vertex and per-triangle UV measures on plain slices: UVs outside the
//! \[0,1\] square (UV-006), mirrored UV triangles (UV-007) and texel density in
//! pixels per metre (UV-008).
//!
//! Orientation: glTF's UV origin is the image's top-left corner, v growing
//! downwards, so a triangle whose texture reads the right way round (not
//! mirrored) runs counter-clockwise on the image, which is clockwise in
//! (u, v) taken as plain x, y: its signed area (b - a) x (c - a) is
//! negative. A positive signed area is a mirrored triangle, the Khronos
//! glTF-Asset-Auditor's "inverted" test (`TriangleUv.isCounterClockwise`
//! on the raw accessor values); zero is neither.

use super::lanes::{edges_and_cross, lanes};

/// Whether a UV lies in the closed \[0,1\] square (a NaN does not).
#[inline]
pub fn inside_unit_square(uv: [f32; 2]) -> bool {
    (0.0..=1.0).contains(&uv[0]) && (0.0..=1.0).contains(&uv[1])
}

/// The UV range of one set of UVs.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RangeStats {
    /// UVs (vertices) looked at.
    pub vertices: u64,
    /// Of those, UVs outside \[0,1\]^2 (non-finite ones included).
    pub outside: u64,
    /// Smallest finite (u, v), when any UV is finite.
    pub min: Option<[f64; 2]>,
    /// Largest finite (u, v), when any UV is finite.
    pub max: Option<[f64; 2]>,
}

impl RangeStats {
    /// Adds another set's figures to these.
    pub fn merge(&mut self, o: &RangeStats) {
        self.vertices += o.vertices;
        self.outside += o.outside;
        let pick = |a: Option<[f64; 2]>, b: Option<[f64; 2]>, f: fn(f64, f64) -> f64| match (a, b) {
            (Some(x), Some(y)) => Some([f(x[0], y[0]), f(x[1], y[1])]),
            (x, None) => x,
            (None, y) => y,
        };
        self.min = pick(self.min, o.min, f64::min);
        self.max = pick(self.max, o.max, f64::max);
    }
}

/// Counts the UVs outside \[0,1\]^2 and takes the finite range. O(n).
pub fn uv_range(uvs: &[[f32; 2]]) -> RangeStats {
    let mut s = RangeStats { vertices: uvs.len() as u64, ..RangeStats::default() };
    let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
    for &uv in uvs {
        if !inside_unit_square(uv) {
            s.outside += 1;
        }
        if uv[0].is_finite() && uv[1].is_finite() {
            for k in 0..2 {
                lo[k] = lo[k].min(uv[k] as f64);
                hi[k] = hi[k].max(uv[k] as f64);
            }
        }
    }
    if lo[0] <= hi[0] {
        s.min = Some(lo);
        s.max = Some(hi);
    }
    s
}

/// Twice the signed area of a UV triangle, (b - a) x (c - a), in f64.
#[inline]
pub fn uv_signed_area2(a: [f32; 2], b: [f32; 2], c: [f32; 2]) -> f64 {
    let (ax, ay) = (a[0] as f64, a[1] as f64);
    (b[0] as f64 - ax) * (c[1] as f64 - ay) - (b[1] as f64 - ay) * (c[0] as f64 - ax)
}

/// Mirrored UV triangles of one primitive's UV set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MirrorStats {
    /// Triangles looked at (every triangle whose three UVs exist).
    pub triangles: u64,
    /// Of those, triangles with a positive signed UV area (mirrored).
    pub mirrored: u64,
    /// Of those, triangles with zero or non-finite UV area (neither way).
    pub flat: u64,
}

/// Counts mirrored triangles (see the module's note on orientation). O(n).
pub fn mirrored_triangles(uvs: &[[f32; 2]], triangles: &[[u32; 3]]) -> MirrorStats {
    let mut s = MirrorStats::default();
    for t in triangles {
        let (Some(&a), Some(&b), Some(&c)) = (uvs.get(t[0] as usize), uvs.get(t[1] as usize), uvs.get(t[2] as usize))
        else {
            continue;
        };
        s.triangles += 1;
        let area2 = uv_signed_area2(a, b, c);
        if area2 > 0.0 {
            s.mirrored += 1;
        } else if area2 == 0.0 || !area2.is_finite() {
            s.flat += 1;
        }
    }
    s
}

/// A triangle's texel density: `(3D area in m^2, density in px/m)`, where
/// density = sqrt(UV area x width x height / 3D area), the side in pixels of
/// the texture that one metre of surface receives (a 1 m square mapped onto
/// the whole of a 1024x1024 texture: 1024 px/m). `None` when the 3D area is
/// zero or not finite, or a UV is not finite; a triangle with zero UV area
/// has density 0.
#[inline]
pub fn texel_density(p: [[f64; 3]; 3], uv: [[f32; 2]; 3], width: f64, height: f64) -> Option<(f64, f64)> {
    let sub = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let (e1, e2) = (sub(p[1], p[0]), sub(p[2], p[0]));
    let c = [e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]];
    let area = 0.5 * (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt();
    if !(area.is_finite() && area > 0.0) {
        return None;
    }
    let uv_area = 0.5 * uv_signed_area2(uv[0], uv[1], uv[2]).abs();
    if !uv_area.is_finite() {
        return None;
    }
    let density = (uv_area * width * height / area).sqrt();
    density.is_finite().then_some((area, density))
}

/// [`texel_density`] of four triangles at once, lane by lane the same
/// operations in the same order (the branches are selects), so the same
/// bits; where the CPU has AVX2 the lanes share the square roots and the
/// division (as `stretch::triangle_stretch4` does for UV-004). A lane
/// with `ok` false is left out.
pub fn texel_density4(
    p: &[[[f64; 3]; 3]; 4],
    uv: &[[[f32; 2]; 3]; 4],
    ok: [bool; 4],
    width: f64,
    height: f64,
) -> [Option<(f64, f64)>; 4] {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { density4_avx2(p, uv, ok, width, height) };
    }
    density4_in(p, uv, ok, width, height)
}

/// [`density4_in`] compiled for AVX2 (not FMA: the same roundings).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn density4_avx2(
    p: &[[[f64; 3]; 3]; 4],
    uv: &[[[f32; 2]; 3]; 4],
    ok: [bool; 4],
    width: f64,
    height: f64,
) -> [Option<(f64, f64)>; 4] {
    density4_in(p, uv, ok, width, height)
}

/// [`texel_density4`]'s body: [`texel_density`] written lane-wise.
#[inline(always)]
fn density4_in(
    p: &[[[f64; 3]; 3]; 4],
    uv: &[[[f32; 2]; 3]; 4],
    ok: [bool; 4],
    width: f64,
    height: f64,
) -> [Option<(f64, f64)>; 4] {
    let [_, _, c] = edges_and_cross(p);
    let area = lanes(|k| 0.5 * (c[0][k] * c[0][k] + c[1][k] * c[1][k] + c[2][k] * c[2][k]).sqrt());
    let uv_area = lanes(|k| 0.5 * uv_signed_area2(uv[k][0], uv[k][1], uv[k][2]).abs());
    let density = lanes(|k| (uv_area[k] * width * height / area[k]).sqrt());
    lanes(|k| {
        let measurable = area[k].is_finite() && area[k] > 0.0 && uv_area[k].is_finite() && density[k].is_finite();
        (ok[k] && measurable).then_some((area[k], density[k]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_counts_outside_and_nan() {
        let s = uv_range(&[[0.0, 0.0], [1.0, 1.0], [1.5, 0.5], [f32::NAN, 0.5], [-0.25, 0.0]]);
        assert_eq!((s.vertices, s.outside), (5, 3));
        assert_eq!(s.min, Some([-0.25, 0.0]));
        assert_eq!(s.max, Some([1.5, 1.0]));
        assert_eq!(uv_range(&[]).min, None);
    }

    #[test]
    fn orientation_follows_gltf_v_down() {
        // Counter-clockwise on the image (v down): a, then right, then up.
        let uvs = [[0.0, 1.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0]];
        let s = mirrored_triangles(&uvs, &[[0, 1, 2], [0, 2, 1], [0, 0, 1], [0, 1, 9]]);
        assert_eq!(s, MirrorStats { triangles: 3, mirrored: 1, flat: 1 });
    }

    #[test]
    fn unit_quad_density() {
        let p = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0]];
        let (area, d) = texel_density(p, [[0.0, 1.0], [1.0, 1.0], [1.0, 0.0]], 1024.0, 1024.0).unwrap();
        assert_eq!(area, 0.5);
        assert!((d - 1024.0).abs() < 1e-9);
        // Half the UV span each way on a 2 m quad: 1024 * 0.5 / 2 = 256 px/m.
        let p2 = p.map(|q| q.map(|x| x * 2.0));
        let (_, d) = texel_density(p2, [[0.0, 0.5], [0.5, 0.5], [0.5, 0.0]], 1024.0, 1024.0).unwrap();
        assert!((d - 256.0).abs() < 1e-9);
        assert_eq!(texel_density([[0.0; 3]; 3], [[0.0; 2]; 3], 1.0, 1.0), None);
    }

    #[test]
    fn four_lanes_are_the_scalar_density_to_the_bit() {
        let mut rng = crate::geom::testrng::XorShift::new(0xde45_17e4_0000_0008);
        let mut prev = 0.0f64;
        let mut next = |rng: &mut crate::geom::testrng::XorShift| {
            prev = match rng.below(40) {
                0 => 0.0,
                1 => -0.0,
                2 => f64::NAN,
                3 => f64::INFINITY,
                4 => 1e-200 * rng.unit(),
                5 => 1e200 * (rng.unit() - 0.5),
                6 => 3e38,
                7..=9 => prev,
                _ => rng.unit() * 4.0 - 2.0,
            };
            prev
        };
        let bits = |r: Option<(f64, f64)>| r.map(|(a, b)| (a.to_bits(), b.to_bits()));
        let mut measured = 0;
        for round in 0..50_000 {
            let p: [[[f64; 3]; 3]; 4] =
                std::array::from_fn(|_| std::array::from_fn(|_| std::array::from_fn(|_| next(&mut rng))));
            let uv: [[[f32; 2]; 3]; 4] =
                std::array::from_fn(|_| std::array::from_fn(|_| std::array::from_fn(|_| next(&mut rng) as f32)));
            let ok: [bool; 4] = std::array::from_fn(|_| rng.below(8) != 0);
            let (w, h) = if round % 2 == 0 { (1000.0, 600.0) } else { (3.0, 7.0) };
            let want: [Option<(f64, f64)>; 4] =
                std::array::from_fn(|k| if ok[k] { texel_density(p[k], uv[k], w, h) } else { None });
            measured += want.iter().flatten().count();
            for got in [texel_density4(&p, &uv, ok, w, h), density4_in(&p, &uv, ok, w, h)] {
                assert_eq!(got.map(bits), want.map(bits), "{p:?} {uv:?} {ok:?}");
            }
        }
        assert!(measured > 30_000, "{measured} lanes measured");
    }
}
