//! Shape generators: [`cube`], [`quad`], [`grid`] and [`sphere`], closed or
//! open meshes with counter-clockwise winding seen from outside, outward
//! normals and UVs; and the small vector helpers the kit shares.

use super::scene::Prim;

/// `a - b`.
pub(super) fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// `a x b`.
pub(super) fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// `a . b`.
pub(super) fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Converts a vertex count to the `u32` index space.
pub(super) fn index_of(i: usize) -> u32 {
    u32::try_from(i).expect("testkit: more than u32::MAX vertices")
}

/// An axis-aligned cube of edge `size` centred at the origin.
///
/// 24 vertices (4 per face, so normals are flat), 12 triangles, outward
/// normals, CCW winding seen from outside, and one UV set in which each face
/// occupies its own cell of a 3x2 grid over `[0, 1)` with a small margin.
pub fn cube(size: f32) -> Prim {
    let h = size / 2.0;
    // (normal, u axis, v axis) with u x v == normal.
    let faces: [([f32; 3], [f32; 3], [f32; 3]); 6] = [
        ([1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]),
        ([-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]),
        ([0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]),
        ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
        ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
        ([0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
    ];
    const MARGIN: f32 = 1.0 / 64.0;
    let mut p = Prim {
        positions: Vec::with_capacity(24),
        indices: Some(Vec::with_capacity(36)),
        uvs: vec![Vec::with_capacity(24)],
        normals: Some(Vec::with_capacity(24)),
        ..Prim::default()
    };
    for (f, (n, u, v)) in faces.iter().enumerate() {
        debug_assert_eq!(cross(*u, *v), *n);
        let (col, row) = ((f % 3) as f32, (f / 3) as f32);
        let (u0, u1) = (col / 3.0 + MARGIN, (col + 1.0) / 3.0 - MARGIN);
        let (v0, v1) = (row / 2.0 + MARGIN, (row + 1.0) / 2.0 - MARGIN);
        let base = index_of(p.positions.len());
        // Corners in CCW order around the face normal; image v points down.
        for (su, sv, uv) in [(-1.0, -1.0, [u0, v1]), (1.0, -1.0, [u1, v1]), (1.0, 1.0, [u1, v0]), (-1.0, 1.0, [u0, v0])]
        {
            p.positions.push(std::array::from_fn(|i| h * (n[i] + su * u[i] + sv * v[i])));
            p.uvs[0].push(uv);
            p.normals.as_mut().expect("set above").push(*n);
        }
        p.indices.as_mut().expect("set above").extend_from_slice(&[base, base + 1, base + 2, base, base + 2, base + 3]);
    }
    p
}

/// A square of edge `size` in the XY plane centred at the origin, facing +Z:
/// 4 vertices, 2 triangles, normals and UVs covering `[0, 1]`.
pub fn quad(size: f32) -> Prim {
    let h = size / 2.0;
    Prim {
        positions: vec![[-h, -h, 0.0], [h, -h, 0.0], [h, h, 0.0], [-h, h, 0.0]],
        indices: Some(vec![0, 1, 2, 0, 2, 3]),
        uvs: vec![vec![[0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]],
        normals: Some(vec![[0.0, 0.0, 1.0]; 4]),
        ..Prim::default()
    }
}

/// An `n` x `n` grid of quads of total edge `size` in the XZ plane, centred
/// at the origin and facing +Y: `(n+1)^2` vertices, `2*n*n` triangles,
/// normals and UVs covering `[0, 1]`.
///
/// # Panics
///
/// If `n` is zero.
pub fn grid(n: u32, size: f32) -> Prim {
    assert!(n >= 1, "testkit::grid: n must be at least 1");
    let h = size / 2.0;
    let side = n as usize + 1;
    let count = side * side;
    let _ = index_of(count);
    let mut positions = Vec::with_capacity(count);
    let mut uvs = Vec::with_capacity(count);
    for i in 0..=n {
        for j in 0..=n {
            let (fi, fj) = (i as f32 / n as f32, j as f32 / n as f32);
            positions.push([-h + size * fi, 0.0, -h + size * fj]);
            uvs.push([fi, fj]);
        }
    }
    let mut indices = Vec::with_capacity(6 * (n as usize) * (n as usize));
    let side = n + 1;
    for i in 0..n {
        for j in 0..n {
            let a = i * side + j;
            let b = a + 1; // +Z
            let c = b + side; // +X +Z
            let d = a + side; // +X
            indices.extend_from_slice(&[a, b, c, a, c, d]);
        }
    }
    Prim {
        positions,
        indices: Some(indices),
        uvs: vec![uvs],
        normals: Some(vec![[0.0, 1.0, 0.0]; count]),
        ..Prim::default()
    }
}

/// A UV sphere of `radius` centred at the origin with `segments` meridian
/// divisions and `rings` latitude bands.
///
/// Each pole is a single vertex shared by its cap fan; the other `rings - 1`
/// latitude rings have `segments + 1` vertices (the seam is duplicated for
/// UVs). Produces `2 * segments * (rings - 1)` triangles with outward normals
/// and CCW winding seen from outside.
///
/// # Panics
///
/// If `segments < 3`, `rings < 2`, or the vertex count exceeds `u32`.
pub fn sphere(segments: u32, rings: u32, radius: f32) -> Prim {
    assert!(segments >= 3, "testkit::sphere: segments must be at least 3");
    assert!(rings >= 2, "testkit::sphere: rings must be at least 2");
    let row = segments as usize + 1;
    let inner = rings as usize - 1;
    let count = 2 + inner * row;
    let _ = index_of(count);

    let mut positions = Vec::with_capacity(count);
    let mut normals = Vec::with_capacity(count);
    let mut uvs = Vec::with_capacity(count);

    // Unit direction for polar angle theta (from +Y) and azimuth phi; the
    // minus sign on Z makes (d/dtheta x d/dphi) point outward.
    let trig: Vec<(f64, f64)> = (0..=segments)
        .map(|s| {
            let phi = std::f64::consts::TAU * f64::from(s) / f64::from(segments);
            (phi.cos(), phi.sin())
        })
        .collect();
    let mut push = |n: [f64; 3], uv: [f32; 2]| {
        let n = n.map(|c| c as f32);
        positions.push(n.map(|c| c * radius));
        normals.push(n);
        uvs.push(uv);
    };
    push([0.0, 1.0, 0.0], [0.5, 0.0]);
    for k in 1..rings {
        let theta = std::f64::consts::PI * f64::from(k) / f64::from(rings);
        let (st, ct) = theta.sin_cos();
        let v = k as f32 / rings as f32;
        for (s, &(cp, sp)) in trig.iter().enumerate() {
            push([st * cp, ct, -st * sp], [s as f32 / segments as f32, v]);
        }
    }
    push([0.0, -1.0, 0.0], [0.5, 1.0]);

    let tris = 2 * segments as usize * inner;
    let mut indices = Vec::with_capacity(tris * 3);
    let north = 0u32;
    let south = index_of(count - 1);
    let ring = |k: u32, s: u32| 1 + (k - 1) * (segments + 1) + s;
    for s in 0..segments {
        indices.extend_from_slice(&[north, ring(1, s), ring(1, s + 1)]);
    }
    for k in 1..rings - 1 {
        for s in 0..segments {
            let a = ring(k, s);
            let b = ring(k + 1, s);
            let c = ring(k + 1, s + 1);
            let d = ring(k, s + 1);
            indices.extend_from_slice(&[a, b, c, a, c, d]);
        }
    }
    for s in 0..segments {
        indices.extend_from_slice(&[ring(rings - 1, s), south, ring(rings - 1, s + 1)]);
    }
    debug_assert_eq!(indices.len(), tris * 3);

    Prim { positions, indices: Some(indices), uvs: vec![uvs], normals: Some(normals), ..Prim::default() }
}

#[cfg(test)]
mod tests {
    use super::super::readback::{assert_consistent, assert_outward};
    use super::*;

    #[test]
    fn cube_shape() {
        let c = cube(2.0);
        assert_eq!(c.positions.len(), 24);
        assert_eq!(c.indices.as_ref().unwrap().len(), 36);
        assert_eq!(c.triangle_count(), 12);
        assert_consistent(&c);
        assert_outward(&c);
        // Vertex normals agree with face orientation.
        for t in c.indices.as_ref().unwrap().chunks_exact(3) {
            let [a, b, cc] = [0, 1, 2].map(|k| c.positions[t[k] as usize]);
            let n = cross(sub(b, a), sub(cc, a));
            assert!(dot(n, c.normals.as_ref().unwrap()[t[0] as usize]) > 0.0);
        }
        for p in &c.positions {
            assert!(p.iter().all(|x| x.abs() == 1.0));
        }
        // Each face's UVs lie in their own 3x2 cell.
        let uv = &c.uvs[0];
        let cells: Vec<(u32, u32)> = (0..6)
            .map(|f| {
                let q = &uv[f * 4..f * 4 + 4];
                let cell = ((q[0][0] * 3.0) as u32, (q[0][1] * 2.0) as u32);
                for v in q {
                    assert!(v[0] > 0.0 && v[0] < 1.0 && v[1] > 0.0 && v[1] < 1.0);
                    assert_eq!(cell, ((v[0] * 3.0) as u32, (v[1] * 2.0) as u32));
                }
                cell
            })
            .collect();
        let mut unique = cells.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 6);
    }

    #[test]
    fn quad_and_grid_shapes() {
        let q = quad(2.0);
        assert_eq!(q.positions.len(), 4);
        assert_eq!(q.triangle_count(), 2);
        assert_consistent(&q);
        for t in q.indices.as_ref().unwrap().chunks_exact(3) {
            let [a, b, c] = [0, 1, 2].map(|k| q.positions[t[k] as usize]);
            assert!(cross(sub(b, a), sub(c, a))[2] > 0.0);
        }

        let g = grid(5, 10.0);
        assert_eq!(g.positions.len(), 36);
        assert_eq!(g.triangle_count(), 50);
        assert_consistent(&g);
        for t in g.indices.as_ref().unwrap().chunks_exact(3) {
            let [a, b, c] = [0, 1, 2].map(|k| g.positions[t[k] as usize]);
            assert!(cross(sub(b, a), sub(c, a))[1] > 0.0);
        }
        let xs: Vec<f32> = g.positions.iter().map(|p| p[0]).collect();
        assert_eq!(xs.iter().cloned().fold(f32::INFINITY, f32::min), -5.0);
        assert_eq!(xs.iter().cloned().fold(f32::NEG_INFINITY, f32::max), 5.0);
    }

    #[test]
    fn sphere_shape() {
        for (s, r) in [(3, 2), (8, 4), (32, 17)] {
            let p = sphere(s, r, 1.5);
            assert_eq!(p.triangle_count(), 2 * s as usize * (r as usize - 1));
            assert_eq!(p.positions.len(), 2 + (r as usize - 1) * (s as usize + 1));
            assert_consistent(&p);
            assert_outward(&p);
            for v in &p.positions {
                assert!((dot(*v, *v).sqrt() - 1.5).abs() < 1e-4);
            }
        }
        let big = sphere(1000, 501, 1.0);
        assert_eq!(big.triangle_count(), 1_000_000);
    }
}
