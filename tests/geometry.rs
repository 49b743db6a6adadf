//! GEO and TOP through the engine, on meshes built in code: the cases the
//! issue names, mirrored instances, and properties that must hold for any
//! mesh (proptest): invariance under triangle order, vertex permutation and
//! rigid motion; weld idempotence; closed generated meshes have no boundary.

use crate::testkit::{Doc, Node, Prim, cube, sphere};
use crate::util::{check, measured_f64, validate_bytes, validate_with};
use meshcheck::engine::Options;
use meshcheck::geom::mesh::edges::Topology;
use meshcheck::geom::mesh::weld::weld;
use meshcheck::report::Status;
use proptest::prelude::*;

fn report(doc: &Doc) -> meshcheck::report::Report {
    validate_bytes("mesh.glb", doc.to_glb()).expect("a report")
}

#[test]
fn textured_cube_split_at_seams_is_closed() {
    // testkit::cube has 24 vertices: every face's corners are split for UVs and normals.
    let r = report(&Doc::single(cube(1.0)));
    let g = check(&r, "GEO-002");
    assert_eq!(g.status, Status::Pass);
    assert_eq!(measured_f64(g, "boundary_edges"), 0.0);
    assert_eq!(measured_f64(g, "shells"), 1.0);
    assert_eq!(measured_f64(check(&r, "GEO-003"), "flipped_face_count"), 0.0);
    assert_eq!(check(&r, "GEO-004").status, Status::Pass);
    assert_eq!(check(&r, "GEO-007").status, Status::Pass);
    // The cube's 12 edges are hard, its 6 diagonals are not: 12 / (12 + 6 sqrt 2).
    let hard = measured_f64(check(&r, "TOP-004"), "hard_edge_length_pct");
    assert!((hard - 1200.0 / (12.0 + 6.0 * 2f64.sqrt())).abs() < 1e-3, "{hard}");
    assert_eq!(measured_f64(check(&r, "TOP-001"), "quad_pct"), 100.0);
}

#[test]
fn a_cube_missing_one_face_has_a_four_edge_hole() {
    let mut c = cube(1.0);
    c.remove_triangle(0);
    c.remove_triangle(0);
    let r = report(&Doc::single(c));
    let g = check(&r, "GEO-002");
    assert_eq!(g.status, Status::Warn);
    assert_eq!(measured_f64(g, "boundary_edges"), 4.0);
    assert_eq!(measured_f64(g, "boundary_loops"), 1.0);
    assert_eq!(measured_f64(g, "open_shells"), 1.0);
    assert_eq!(g.measured["locations"][0], "/meshes/0/primitives/0");
}

#[test]
fn flipped_faces_fail_above_five_percent_and_warn_below() {
    let mut c = cube(1.0);
    c.flip_triangles(3..4);
    let r = report(&Doc::single(c));
    let g = check(&r, "GEO-003");
    assert_eq!(measured_f64(g, "flipped_face_count"), 1.0);
    assert_eq!(measured_f64(g, "face_count"), 12.0);
    assert_eq!(g.status, Status::Fail, "1 of 12 is 8.3%");
    assert_eq!(g.threshold["flipped_pct"], 5);
    let mut s = sphere(32, 16, 1.0);
    s.flip_triangles(100..101);
    let r = report(&Doc::single(s));
    let g = check(&r, "GEO-003");
    assert_eq!(measured_f64(g, "flipped_face_count"), 1.0);
    assert_eq!(g.status, Status::Warn, "in the band 0 < pct <= 5");
}

#[test]
fn a_mirrored_instance_is_not_flipped() {
    // Scale (-1, 1, 1) mirrors: glTF flips the winding, so the cube stays consistent and closed.
    let mut doc = Doc::single(cube(1.0));
    doc.nodes[0].scale = Some([-1.0, 1.0, 1.0]);
    let r = report(&doc);
    assert_eq!(measured_f64(check(&r, "GEO-003"), "flipped_face_count"), 0.0);
    // Two instances, one mirrored, far apart: two closed shells, nothing flipped.
    let mut doc = Doc::single(cube(1.0));
    doc.nodes[0].translation = Some([-5.0, 0.0, 0.0]);
    doc.nodes.push(Node {
        mesh: Some(0),
        translation: Some([5.0, 0.0, 0.0]),
        scale: Some([-1.0, 1.0, 1.0]),
        ..Node::default()
    });
    doc.scene_roots.push(1);
    let r = report(&doc);
    assert_eq!(measured_f64(check(&r, "GEO-002"), "shells"), 2.0);
    assert_eq!(measured_f64(check(&r, "GEO-003"), "flipped_face_count"), 0.0);
}

#[test]
fn a_small_tetrahedron_far_from_a_sphere_is_debris() {
    let mut s = sphere(48, 24, 1.0);
    s.add_debris([10.0, 0.0, 0.0], 0.05);
    let r = report(&Doc::single(s));
    let g = check(&r, "GEO-007");
    assert_eq!(g.status, Status::Warn);
    assert_eq!(measured_f64(g, "debris_shells"), 1.0);
    assert_eq!(measured_f64(g, "debris_triangles"), 4.0);
    // Close to the sphere it is a part, not debris.
    let mut s = sphere(48, 24, 1.0);
    s.add_debris([1.02, 0.0, 0.0], 0.05);
    assert_eq!(measured_f64(check(&report(&Doc::single(s)), "GEO-007"), "debris_shells"), 0.0);
}

/// Shells that are all small, or none small, hold no debris however far
/// apart they stand (GEO-007 does not box them then): a 5 x 5 x 5 grid of
/// cube instances (each 0.8 % of the triangles, under the 1 % line) and two
/// equal spheres 50 m apart.
#[test]
fn shells_all_small_or_none_small_are_not_debris() {
    let mut doc = Doc::single(cube(0.1));
    doc.nodes.clear();
    doc.scene_roots.clear();
    for i in 0..125u32 {
        let at = [(i % 5) as f32 * 10.0, (i / 5 % 5) as f32 * 10.0, (i / 25) as f32 * 10.0];
        doc.nodes.push(Node { mesh: Some(0), translation: Some(at), ..Node::default() });
        doc.scene_roots.push(i as usize);
    }
    let r = report(&doc);
    let g = check(&r, "GEO-007");
    assert_eq!(measured_f64(g, "shells"), 125.0);
    assert_eq!(measured_f64(g, "debris_shells"), 0.0);
    assert_eq!(g.status, Status::Pass);
    let mut doc = Doc::single(sphere(24, 12, 1.0));
    doc.nodes.push(Node { mesh: Some(0), translation: Some([50.0, 0.0, 0.0]), ..Node::default() });
    doc.scene_roots.push(1);
    let r = report(&doc);
    let g = check(&r, "GEO-007");
    assert_eq!(measured_f64(g, "shells"), 2.0);
    assert_eq!(measured_f64(g, "debris_shells"), 0.0);
    assert_eq!(g.status, Status::Pass);
}

#[test]
fn degenerate_triangles_are_counted() {
    let mut c = cube(1.0);
    c.add_degenerate();
    let r = report(&Doc::single(c));
    let g = check(&r, "GEO-004");
    assert_eq!(measured_f64(g, "degenerate_triangles"), 1.0);
    assert_eq!(g.status, Status::Warn, "1 of 13 is over 1%");
    // A sliver thinner than the weld tolerance counts too.
    let sliver = Prim {
        positions: vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 1e-7, 0.0]],
        indices: Some(vec![0, 1, 2]),
        ..Prim::default()
    };
    let r = report(&Doc::single(sliver));
    assert_eq!(measured_f64(check(&r, "GEO-004"), "degenerate_triangles"), 1.0);
}

#[test]
fn weld_tolerance_is_a_profile_parameter() {
    // Two triangles 1 mm apart along their shared edge: joined at 1e-2 m, open at 1e-5 m.
    let prim = Prim {
        positions: vec![
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [1.0, 0.001, 0.0],
            [0.0, 0.001, 0.0],
            [1.0, -1.0, 0.0],
        ],
        indices: Some(vec![0, 1, 2, 3, 4, 5]),
        ..Prim::default()
    };
    let bytes = Doc::single(prim).to_glb();
    let r = validate_bytes("gap.glb", bytes.clone()).unwrap();
    assert_eq!(measured_f64(check(&r, "GEO-002"), "shells"), 2.0);
    let mut opts = Options::default();
    meshcheck::checks::set_weld_tolerance(&mut opts.profile, 0.01).unwrap();
    let r = validate_with("gap.glb", bytes, &opts).unwrap();
    let g = check(&r, "GEO-002");
    assert_eq!(measured_f64(g, "shells"), 1.0);
    assert_eq!(g.threshold["weld_tolerance"], 0.01);
}

#[test]
fn topology_measures_a_regular_sphere() {
    let r = report(&Doc::single(sphere(64, 32, 1.0)));
    let v = check(&r, "TOP-002");
    assert!(measured_f64(v, "regular_valence_pct") > 90.0, "{:?}", v.measured);
    let q = check(&r, "TOP-003");
    assert!(measured_f64(q, "quality_mean") > 0.5 && measured_f64(q, "quality_p5") <= measured_f64(q, "quality_mean"));
    assert_eq!(measured_f64(check(&r, "TOP-004"), "hard_edges"), 0.0);
    for id in ["TOP-001", "TOP-002", "TOP-003", "TOP-004"] {
        assert_eq!(check(&r, id).status, Status::Pass, "info checks never judge");
    }
}

/// TOP-002's histogram, interior count and share against a plain count
/// of every welded vertex's edges (a `u32` count and a border flag per
/// vertex, the definition) on a sphere (poles of valence 48, counted as
/// "12+"), the sphere with triangles cut out (their vertices on the border
/// left out) and a closed fan of 262 triangles, whose centre's valence is
/// 6 past a byte's range (a count that wrapped would call it regular).
#[test]
fn valence_histogram_is_a_plain_count_of_each_vertexs_edges() {
    let fan = {
        let ring = 262u32;
        let mut positions = vec![[0.0f32, 0.0, 0.0]];
        positions.extend((0..ring).map(|i| {
            let a = i as f32 / ring as f32 * std::f32::consts::TAU;
            [a.cos(), a.sin(), 0.0]
        }));
        let indices = (0..ring).flat_map(|i| [0, 1 + i, 1 + (i + 1) % ring]).collect();
        Prim { positions, indices: Some(indices), ..Prim::default() }
    };
    let mut cut = sphere(48, 24, 1.0);
    for _ in 0..30 {
        cut.remove_triangle(200);
    }
    for prim in [sphere(48, 24, 1.0), cut, fan] {
        let pts: Vec<[f64; 3]> = prim.positions.iter().map(|p| p.map(f64::from)).collect();
        let tris: Vec<[u32; 3]> = prim.indices.clone().unwrap().chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
        let t = Topology::build(&pts, &tris, 1e-5);
        let mut valence = vec![0u32; t.vertices.len()];
        let mut border = vec![false; t.vertices.len()];
        for e in t.edges.iter() {
            for v in [e.a, e.b] {
                valence[v as usize] += 1;
                border[v as usize] |= e.count != 2;
            }
        }
        let mut want = std::collections::BTreeMap::<String, u64>::new();
        let (mut interior, mut regular) = (0u64, 0u64);
        for (v, b) in valence.iter().zip(&border) {
            if !*b && *v > 0 {
                interior += 1;
                regular += u64::from(*v == 6);
                let key = if *v >= 12 { "12+".to_string() } else { v.to_string() };
                *want.entry(key).or_default() += 1;
            }
        }
        let r = report(&Doc::single(prim));
        let c = check(&r, "TOP-002");
        let got: std::collections::BTreeMap<String, u64> =
            serde_json::from_value(c.measured["valence_histogram"].clone()).expect("a histogram");
        assert_eq!(got, want);
        assert_eq!(measured_f64(c, "interior_vertices"), interior as f64);
        // Reports carry six decimals.
        let pct = regular as f64 / interior as f64 * 100.0;
        assert!((measured_f64(c, "regular_valence_pct") - pct).abs() < 1e-6, "{:?}", c.measured);
    }
}

/// Points and triangles of a testkit sphere.
fn sphere_mesh(seg: u32, rings: u32) -> (Vec<[f64; 3]>, Vec<[u32; 3]>) {
    let s = sphere(seg, rings, 1.0);
    let pts = s.positions.iter().map(|p| [p[0] as f64, p[1] as f64, p[2] as f64]).collect();
    let tris = s.indices.unwrap().chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
    (pts, tris)
}

/// The measurements that must not depend on order or placement.
fn summary(t: &Topology) -> (usize, usize, usize, usize, usize) {
    (
        t.boundary_edges().count(),
        t.edges.iter().filter(|e| e.count > 2).count(),
        t.shell_count,
        t.flipped_faces().len(),
        t.boundary_loops(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn closed_generated_meshes_have_no_boundary(seg in 3u32..40, rings in 2u32..30) {
        let (p, t) = sphere_mesh(seg, rings);
        let topo = Topology::build(&p, &t, 1e-5);
        prop_assert_eq!(topo.boundary_edges().count(), 0);
        prop_assert_eq!(topo.shell_count, 1);
        prop_assert_eq!(topo.flipped_faces().len(), 0);
    }

    #[test]
    fn invariant_under_order_and_rigid_motion(seed in any::<u64>(), flip in 0usize..50, angle in 0.0f64..std::f64::consts::TAU, shift in -100.0f64..100.0) {
        let (p, mut t) = sphere_mesh(12, 8);
        let k = flip % t.len();
        t[k].swap(1, 2);
        t.remove(seed as usize % t.len());
        let base = summary(&Topology::build(&p, &t, 1e-5));
        // Triangle order and rotation of each triangle's corners.
        let mut order: Vec<usize> = (0..t.len()).collect();
        let mut x = seed | 1;
        for i in (1..order.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let t2: Vec<[u32; 3]> = order.iter().map(|&i| { let c = t[i]; [c[1], c[2], c[0]] }).collect();
        prop_assert_eq!(summary(&Topology::build(&p, &t2, 1e-5)), base);
        // Vertex permutation.
        let n = p.len();
        let perm: Vec<u32> = (0..n as u32).map(|i| (i as u64 * 7919 % n as u64) as u32).collect();
        let coprime = (0..n).map(|i| perm[i]).collect::<std::collections::BTreeSet<_>>().len() == n;
        if coprime {
            let mut p3 = vec![[0.0; 3]; n];
            for i in 0..n { p3[perm[i] as usize] = p[i]; }
            let t3: Vec<[u32; 3]> = t.iter().map(|c| c.map(|v| perm[v as usize])).collect();
            prop_assert_eq!(summary(&Topology::build(&p3, &t3, 1e-5)), base);
        }
        // Rigid motion: rotate about y, then translate.
        let (s, c) = angle.sin_cos();
        let p4: Vec<[f64; 3]> = p.iter().map(|q| [c * q[0] + s * q[2] + shift, q[1] - shift, -s * q[0] + c * q[2]]).collect();
        prop_assert_eq!(summary(&Topology::build(&p4, &t, 1e-5)), base);
    }

    #[test]
    fn weld_is_idempotent(pts in proptest::collection::vec((0i32..50, 0i32..50, 0i32..5), 1..300), tol in 0.0f64..3.0) {
        let p: Vec<[f64; 3]> = pts.iter().map(|&(a, b, c)| [a as f64 * 0.5, b as f64 * 0.5, c as f64]).collect();
        let (w, n) = weld(&p, tol);
        // Weld the welded points (one representative each): nothing more merges.
        let mut rep = vec![[0.0; 3]; n];
        for (i, &g) in w.iter().enumerate() { rep[g as usize] = p[i]; }
        let (_, n2) = weld(&rep, tol);
        prop_assert_eq!(n2, n);
        // Every pair within tol is in one group.
        for i in 0..p.len() { for j in 0..i {
            let d2: f64 = (0..3).map(|k| (p[i][k] - p[j][k]).powi(2)).sum();
            if d2 <= tol * tol { prop_assert_eq!(w[i], w[j]); }
        }}
    }
}
