//! Four lanes of f64 arithmetic for the per-triangle measures that run four
//! triangles at a time (`stretch::triangle_stretch4`, UV-004;
//! `metrics::texel_density4`, UV-008): plain arrays that the compiler packs
//! into AVX2 registers where the caller is compiled for them.

/// Four lanes of one operation (of any lane type: a number, a flag, an
/// option).
///
/// This and [`xyz`] and [`uv`] write their arrays out, call by call: an
/// array built with `map` or `std::array::from_fn` is a function of its
/// own, which the AVX2 kernels called out of line, compiled without AVX2
/// (a call and a `vzeroupper` for each, on every four triangles).
#[inline(always)]
pub fn lanes<T>(f: impl Fn(usize) -> T) -> [T; 4] {
    [f(0), f(1), f(2), f(3)]
}

/// A lane-wise 3D vector, its components `f(0)`, `f(1)`, `f(2)`.
#[inline(always)]
pub fn xyz(f: impl Fn(usize) -> [f64; 4]) -> [[f64; 4]; 3] {
    [f(0), f(1), f(2)]
}

/// A lane-wise 2D vector, its components `f(0)`, `f(1)`.
#[inline(always)]
pub fn uv(f: impl Fn(usize) -> [f64; 4]) -> [[f64; 4]; 2] {
    [f(0), f(1)]
}

/// Each lane's triangle `p[k]`: its edges e1 = p1 - p0 and e2 = p2 - p0 and
/// their cross product e1 x e2, component by component (`[c][k]`), with the
/// scalar code's operations in its order.
#[inline(always)]
pub fn edges_and_cross(p: &[[[f64; 3]; 3]; 4]) -> [[[f64; 4]; 3]; 3] {
    let e1 = xyz(|c| lanes(|k| p[k][1][c] - p[k][0][c]));
    let e2 = xyz(|c| lanes(|k| p[k][2][c] - p[k][0][c]));
    let cross = [
        lanes(|k| e1[1][k] * e2[2][k] - e1[2][k] * e2[1][k]),
        lanes(|k| e1[2][k] * e2[0][k] - e1[0][k] * e2[2][k]),
        lanes(|k| e1[0][k] * e2[1][k] - e1[1][k] * e2[0][k]),
    ];
    [e1, e2, cross]
}
