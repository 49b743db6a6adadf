//! `geom::overdraw::analyze` against meshoptimizer's C
//! `meshopt_analyzeOverdraw` (the reference PERF-005 used to call): the same
//! pixels covered, pixels shaded and ratio bits on random meshes of every
//! awkward kind and on every triangle primitive of the shared assets.

use crate::util::overdraw_reference as reference;
use meshcheck::geom::overdraw::{Overdraw, analyze};

/// Asserts both analyzers agree bit for bit; returns the result.
fn same(what: &str, triangles: &[[u32; 3]], positions: &[[f32; 3]]) -> Overdraw {
    let want = reference(triangles, positions);
    let got = analyze(triangles, positions);
    assert_eq!(
        (got.pixels_covered, got.pixels_shaded, got.overdraw.to_bits()),
        (want.pixels_covered, want.pixels_shaded, want.overdraw.to_bits()),
        "{what}: {} triangles, {} vertices",
        triangles.len(),
        positions.len()
    );
    got
}

/// xorshift64*: a seeded, reproducible stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Uniform in [lo, hi).
    fn f(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }
}

/// A random mesh of one of several kinds (all indices in range).
fn random_mesh(rng: &mut Rng) -> (Vec<[u32; 3]>, Vec<[f32; 3]>) {
    let kind = rng.below(10);
    let scale = match rng.below(7) {
        // Subnormal: the transform's scale (256 / extent) overflows to infinity.
        6 => 1e-39,
        0 => 1e-30,
        1 => 1e-3,
        2 => 1.0,
        3 => 1e4,
        4 => 1e30,
        _ => rng.f(0.01, 100.0),
    };
    let offset = if rng.below(3) == 0 { rng.f(-1e6, 1e6) } else { 0.0 };
    let many = rng.below(4) == 0;
    let vertices = 3 + rng.below(if many { 3000 } else { 60 }) as usize;
    let mut positions: Vec<[f32; 3]> =
        (0..vertices).map(|_| std::array::from_fn(|_| offset + scale * rng.f(-1.0, 1.0))).collect();
    match kind {
        // Coincident vertices: a few positions copied over others.
        0 => {
            for _ in 0..vertices / 2 {
                let (a, b) = (rng.below(vertices as u64) as usize, rng.below(vertices as u64) as usize);
                positions[a] = positions[b];
            }
        }
        // Flat along one axis (every triangle edge-on in one view).
        1 => {
            let axis = rng.below(3) as usize;
            positions.iter_mut().for_each(|p| p[axis] = offset);
        }
        // Coordinates on a coarse grid: exact depths, edges through pixel centres.
        2 => positions.iter_mut().for_each(|p| *p = p.map(|c| (c * 4.0 / scale).round())),
        _ => {}
    }
    let used = if kind == 3 { (vertices / 2).max(3) } else { vertices };
    let many = rng.below(5) == 0;
    let count = 1 + rng.below(if many { 4000 } else { 40 }) as usize;
    let triangles = (0..count)
        .map(|_| {
            let mut t: [u32; 3] = std::array::from_fn(|_| rng.below(used as u64) as u32);
            // Degenerate: two corners the same.
            if rng.below(8) == 0 {
                t[2] = t[0];
            }
            t
        })
        .collect();
    // Vertices no triangle uses (kind 3: the upper half) stretch the bounds.
    if kind == 3 {
        for p in &mut positions[used..] {
            *p = p.map(|c| c * 16.0);
        }
    }
    (triangles, positions)
}

#[test]
fn random_meshes_match_meshoptimizer() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for case in 0..600 {
        let (t, p) = random_mesh(&mut rng);
        same(&format!("random mesh {case}"), &t, &p);
    }
}

/// Quads on a grid viewed face-on, stacked and crossing: the full-view
/// covers and shared edges the top-left rule decides, in both windings.
#[test]
fn stacked_quads_and_shared_edges_match() {
    let mut positions = Vec::new();
    let mut triangles = Vec::new();
    for layer in 0..6u32 {
        let z = layer as f32 * 0.25;
        let base = positions.len() as u32;
        positions.extend([[0.0, 0.0, z], [1.0, 0.0, z], [1.0, 1.0, z], [0.0, 1.0, z]]);
        if layer % 2 == 0 {
            triangles.extend([[base, base + 1, base + 2], [base, base + 2, base + 3]]);
        } else {
            triangles.extend([[base, base + 2, base + 1], [base, base + 3, base + 2]]);
        }
    }
    let got = same("stacked quads", &triangles, &positions);
    assert!(got.overdraw > 1.0, "stacked layers shade pixels more than once");
    // A sloped fan: depth varies along both axes of every view.
    let n = 37u32;
    let mut positions = vec![[0.5f32, 0.5, 0.0]];
    positions.extend((0..n).map(|i| {
        let a = i as f32 / n as f32 * std::f32::consts::TAU;
        [0.5 + 0.5 * a.cos(), 0.5 + 0.5 * a.sin(), 0.3 * a.sin() + 0.2 * a.cos()]
    }));
    let triangles: Vec<[u32; 3]> = (0..n).map(|i| [0, 1 + i, 1 + (i + 1) % n]).collect();
    same("sloped fan", &triangles, &positions);
}

/// Inputs the transform turns into NaN or infinite corners: an infinite
/// unused vertex (scale 0 times infinity), a span that overflows f32, NaN
/// coordinates that never move a bound. A NaN corner beside finite ones
/// takes the pixel-by-pixel path (C's `int()` of NaN is `INT_MIN`, and the
/// edge functions wrap).
#[test]
fn non_finite_bounds_match() {
    let unused = vec![[0u32, 1, 2], [2, 1, 0], [0, 2, 3]];
    let used = vec![[0u32, 1, 4], [4, 2, 3], [3, 4, 0], [1, 2, 4], [2, 0, 1]];
    let base = [[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.5], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0]];
    let mut covered = 0;
    for extra in [
        [f32::INFINITY, 0.0, 0.0],
        [f32::NEG_INFINITY, 0.0, 0.0],
        [0.0, 0.0, f32::NEG_INFINITY],
        [f32::NAN, f32::NAN, f32::NAN],
        [0.5, f32::NAN, 0.5],
        [f32::NAN, 0.25, 0.75],
        [0.3, 0.6, f32::NAN],
    ] {
        let mut p = base.to_vec();
        p.push(extra);
        same(&format!("unused vertex {extra:?}"), &unused, &p);
        covered += same(&format!("used vertex {extra:?}"), &used, &p).pixels_covered;
    }
    assert!(covered > 0, "some NaN-cornered triangles cover pixels");
    // A span past f32::MAX: (v - min) overflows to infinity, times a zero scale.
    let p = vec![[-3e38f32, -3e38, 0.0], [3e38, -3e38, 1.0], [0.0, 3e38, 2.0], [3e38, 3e38, 3e38]];
    same("overflowing span", &unused, &p);
    let empty: Vec<[f32; 3]> = vec![[0.0; 3]; 3];
    let got = same("one point", &[[0, 1, 2]], &empty);
    assert_eq!(got.pixels_covered, 0);
    same("no triangles", &[], &empty);
}

/// The same buffer serves call after call: a large mesh then a small one
/// sees no leftover depths (each call is compared fresh against the C).
#[test]
fn calls_in_turn_leave_nothing_behind() {
    let mut rng = Rng(7);
    let mut meshes: Vec<_> = (0..40).map(|_| random_mesh(&mut rng)).collect();
    let cube_p: Vec<[f32; 3]> = (0..8).map(|i| [(i & 1) as f32, (i >> 1 & 1) as f32, (i >> 2) as f32]).collect();
    let cube_t = vec![
        [0, 2, 1],
        [1, 2, 3],
        [4, 5, 6],
        [5, 7, 6],
        [0, 1, 4],
        [1, 5, 4],
        [2, 6, 3],
        [3, 6, 7],
        [0, 4, 2],
        [2, 4, 6],
        [1, 3, 5],
        [3, 7, 5],
    ];
    meshes.insert(20, (cube_t.clone(), cube_p.clone()));
    for (i, (t, p)) in meshes.iter().enumerate() {
        same(&format!("call {i}"), t, p);
    }
    let got = same("unit cube", &cube_t, &cube_p);
    assert_eq!((got.pixels_covered, got.pixels_shaded), (6 * 65536, 6 * 65536), "a cube covers all six views once");
}

/// Every triangle primitive of the shared assets, in its own space, as
/// PERF-005 analyzes them.
#[test]
fn shared_assets_match_meshoptimizer() {
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    let mut dirs = vec![crate::util::assets().join("models")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut primitives = 0;
    for file in &files {
        let Ok(input) = meshcheck::asset::Input::from_path(file) else { continue };
        let Ok(asset) = meshcheck::asset::load(input) else { continue };
        for p in asset.scene.primitives.iter().filter(|p| !p.triangles.is_empty()) {
            same(&format!("{} mesh {} primitive {}", file.display(), p.mesh, p.index), &p.triangles, &p.positions);
            primitives += 1;
        }
    }
    assert!(primitives >= 40, "only {primitives} primitives found under the shared assets");
}

/// A call that panics half-way (a triangle naming a missing vertex, which
/// the C function would read out of bounds) leaves nothing behind for the
/// next call on its thread.
#[test]
fn a_panicked_call_leaves_nothing_behind() {
    let p = vec![[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.5], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0]];
    let bad = vec![[0u32, 1, 2], [1, 3, 2], [0, 1, 9]];
    let r = std::panic::catch_unwind(|| analyze(&bad, &p));
    assert!(r.is_err(), "a missing vertex panics");
    let p = vec![[0.0f32, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 2.0, 1.0]];
    let got = same("after a panicked call", &[[0, 1, 2]], &p);
    assert!(got.pixels_covered > 0);
}
