//! GEO-008/009 and PERF-004..007 (issue 20) through the engine on assets
//! built in code: each check passes on a clean asset and measures the
//! defect it is about, with figures computed by hand or by meshoptimizer's
//! own optimizer on the same indices. Assertions are on `status` and on
//! `measured`, never on `message`.

use crate::testkit::{Doc, Image, Material, Mesh, Node, Prim, Texture, cube, png, quad, sphere};
use crate::util::{self, check, measured_f64, validate_with};
use meshcheck::engine::{Options, Selection};
use meshcheck::report::{Report, Status};

/// Runs only `ids` on `doc` (as a GLB) under the default profile.
fn run(doc: &Doc, ids: &[&str]) -> Report {
    let only: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    let opts = Options { selection: Selection::parse(&only, &[]).expect("known IDs"), ..Options::default() };
    validate_with("test.glb", doc.to_glb(), &opts).expect("the asset loads")
}

fn int(r: &Report, id: &str, key: &str) -> u64 {
    measured_f64(check(r, id), key) as u64
}

/// A triangle list primitive from positions and triangles (no UVs, no normals).
fn soup(positions: Vec<[f32; 3]>, tris: &[[u32; 3]]) -> Prim {
    Prim { positions, indices: Some(tris.iter().flatten().copied().collect()), ..Prim::default() }
}

/// The unit cube as 8 shared corners and 12 outward triangles.
fn shared_cube() -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    let p = vec![
        [0.0, 0.0, 1.0],
        [1.0, 0.0, 1.0],
        [1.0, 1.0, 1.0],
        [0.0, 1.0, 1.0],
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [1.0, 1.0, 0.0],
        [0.0, 1.0, 0.0],
    ];
    let t = vec![
        [0, 1, 2],
        [0, 2, 3],
        [5, 4, 7],
        [5, 7, 6],
        [1, 5, 6],
        [1, 6, 2],
        [4, 0, 3],
        [4, 3, 7],
        [3, 2, 6],
        [3, 6, 7],
        [4, 5, 1],
        [4, 1, 0],
    ];
    (p, t)
}

// ---------------------------------------------------------------------------
// GEO-008
// ---------------------------------------------------------------------------

#[test]
fn geo008_closed_cube_passes_with_seams_welded() {
    // testkit's cube splits every corner three ways (flat normals, UVs): welded, it is closed and manifold.
    let r = run(&Doc::single(cube(1.0)), &["GEO-008"]);
    let c = check(&r, "GEO-008");
    assert_eq!(c.status, Status::Pass);
    assert_eq!(int(&r, "GEO-008", "non_manifold_edges"), 0);
    assert_eq!(int(&r, "GEO-008", "non_manifold_vertices"), 0);
}

#[test]
fn geo008_fin_on_an_edge_is_a_non_manifold_edge() {
    let (mut p, mut t) = shared_cube();
    p.push([0.5, -1.0, 1.0]);
    t.push([0, 1, 8]); // a third triangle on edge 0-1
    let r = run(&Doc::single(soup(p, &t)), &["GEO-008"]);
    assert_eq!(check(&r, "GEO-008").status, Status::Warn);
    assert_eq!(int(&r, "GEO-008", "non_manifold_edges"), 1);
    // Its ends are not bow-ties: the fin joins the fans at 0 and 1 across the edge.
    assert_eq!(int(&r, "GEO-008", "non_manifold_vertices"), 0);
    assert_eq!(int(&r, "GEO-008", "locations_total"), 1);
}

#[test]
fn geo008_bow_tie_vertex() {
    // Two cubes touching at one corner: (1,1,1) of the first is (0,0,0) of the second.
    let (p, t) = shared_cube();
    let mut pos = p.clone();
    pos.extend(p.iter().map(|q| [q[0] + 1.0, q[1] + 1.0, q[2] + 1.0]));
    let tris: Vec<[u32; 3]> = t.iter().copied().chain(t.iter().map(|x| x.map(|v| v + 8))).collect();
    let r = run(&Doc::single(soup(pos, &tris)), &["GEO-008"]);
    assert_eq!(check(&r, "GEO-008").status, Status::Warn);
    assert_eq!(int(&r, "GEO-008", "non_manifold_edges"), 0);
    assert_eq!(int(&r, "GEO-008", "non_manifold_vertices"), 1);
    // Moved 1 mm apart they no longer touch.
    let mut pos = p.clone();
    pos.extend(p.iter().map(|q| [q[0] + 1.001, q[1] + 1.0, q[2] + 1.0]));
    let r = run(&Doc::single(soup(pos, &tris)), &["GEO-008"]);
    assert_eq!(check(&r, "GEO-008").status, Status::Pass);
}

// ---------------------------------------------------------------------------
// GEO-009
// ---------------------------------------------------------------------------

#[test]
fn geo009_duplicates_in_any_order_and_winding() {
    let (p, mut t) = shared_cube();
    let r = run(&Doc::single(soup(p.clone(), &t)), &["GEO-009"]);
    assert_eq!(check(&r, "GEO-009").status, Status::Pass);
    assert_eq!(int(&r, "GEO-009", "duplicate_faces"), 0);
    t.push([2, 0, 1]); // triangle 0, rotated
    t.push([0, 2, 1]); // triangle 0, reversed (back to back)
    t.push([6, 2, 3]); // triangle 8, reversed and rotated
    let r = run(&Doc::single(soup(p, &t)), &["GEO-009"]);
    assert_eq!(check(&r, "GEO-009").status, Status::Warn);
    assert_eq!(int(&r, "GEO-009", "duplicate_faces"), 3);
    assert_eq!(int(&r, "GEO-009", "opposite_winding"), 2);
    assert_eq!(int(&r, "GEO-009", "face_count"), 15);
    assert!((measured_f64(check(&r, "GEO-009"), "duplicate_pct") - 20.0).abs() < 1e-9);
    // Back to back is counted against the group's majority, whatever the
    // order: with the reversed copy first, still one of the three.
    let (p, t) = shared_cube();
    let mut reordered = vec![[t[0][0], t[0][2], t[0][1]]];
    reordered.extend(t.iter().copied());
    reordered.push([t[0][1], t[0][2], t[0][0]]);
    let r = run(&Doc::single(soup(p, &reordered)), &["GEO-009"]);
    assert_eq!(int(&r, "GEO-009", "duplicate_faces"), 2);
    assert_eq!(int(&r, "GEO-009", "opposite_winding"), 1);
}

#[test]
fn geo009_instances_drawn_on_top_of_each_other() {
    let mut doc = Doc::single(cube(1.0));
    doc.nodes.push(Node { mesh: Some(0), ..Node::default() });
    doc.scene_roots.push(1);
    let r = run(&doc, &["GEO-009"]);
    assert_eq!(int(&r, "GEO-009", "duplicate_faces"), 12);
    assert_eq!(int(&r, "GEO-009", "opposite_winding"), 0);
    // Moved aside, nothing coincides.
    doc.nodes[1].translation = Some([3.0, 0.0, 0.0]);
    let r = run(&doc, &["GEO-009"]);
    assert_eq!(int(&r, "GEO-009", "duplicate_faces"), 0);
}

// ---------------------------------------------------------------------------
// PERF-004
// ---------------------------------------------------------------------------

/// A deterministic shuffle of triangles (xorshift), the same on every run.
fn shuffled(mut prim: Prim) -> Prim {
    let mut tris: Vec<[u32; 3]> = prim.indices.take().unwrap().chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..tris.len()).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        tris.swap(i, (s % (i as u64 + 1)) as usize);
    }
    prim.indices = Some(tris.into_iter().flatten().collect());
    prim
}

#[test]
fn perf004_shuffled_mesh_scores_clearly_worse_than_an_optimized_one() {
    let ordered = sphere(64, 33, 1.0);
    let vertex_count = ordered.positions.len();
    let mut optimized = ordered.clone();
    optimized.indices = Some(meshopt::optimize_vertex_cache(ordered.indices.as_ref().unwrap(), vertex_count));
    let acmr = |p: Prim| {
        let r = run(&Doc::single(p), &["PERF-004"]);
        let c = check(&r, "PERF-004");
        (measured_f64(c, "acmr"), measured_f64(c, "atvr"), c.status)
    };
    let (a_opt, t_opt, s_opt) = acmr(optimized);
    let (a_shuf, t_shuf, s_shuf) = acmr(shuffled(ordered));
    assert_eq!(s_opt, Status::Pass);
    assert_eq!(s_shuf, Status::Warn, "a shuffled sphere is over the 1.5 ACMR budget");
    assert!(a_opt < 0.8, "meshoptimizer's order: ACMR {a_opt}");
    assert!(a_shuf > 2.0 * a_opt, "shuffled {a_shuf} vs optimized {a_opt}");
    assert!(t_opt < 1.5 && t_shuf > 3.0, "ATVR optimized {t_opt}, shuffled {t_shuf}");
}

#[test]
fn perf004_hand_computed_ratios_and_weighting() {
    // A quad: 2 triangles, 4 vertices each run once: ACMR 2, ATVR 1, floor 2;
    // over the 1.5 budget but at its floor, so it passes.
    let r = run(&Doc::single(quad(1.0)), &["PERF-004"]);
    let c = check(&r, "PERF-004");
    assert_eq!(c.status, Status::Pass);
    assert_eq!(measured_f64(c, "acmr"), 2.0);
    assert_eq!(measured_f64(c, "atvr"), 1.0);
    assert_eq!(measured_f64(c, "acmr_floor"), 2.0);
    // A strip of 10 quads in order (22 vertices, 20 triangles, each vertex run
    // once): ACMR 22/20. Drawn by two nodes beside the quad (drawn once):
    // weighted by triangles drawn, (2*22 + 4) / (2*20 + 2).
    let mut positions = Vec::new();
    for i in 0..=10 {
        positions.push([i as f32, 0.0, 0.0]);
        positions.push([i as f32, 1.0, 0.0]);
    }
    let tris: Vec<[u32; 3]> =
        (0..10).flat_map(|i| [[2 * i, 2 * i + 2, 2 * i + 1], [2 * i + 1, 2 * i + 2, 2 * i + 3]]).collect();
    let strip = soup(positions, &tris);
    let doc = Doc {
        meshes: vec![Mesh { primitives: vec![strip] }, Mesh { primitives: vec![quad(1.0)] }],
        nodes: vec![
            Node { mesh: Some(0), ..Node::default() },
            Node { mesh: Some(0), translation: Some([0.0, 5.0, 0.0]), ..Node::default() },
            Node { mesh: Some(1), translation: Some([0.0, 9.0, 0.0]), ..Node::default() },
        ],
        scene_roots: vec![0, 1, 2],
        ..Doc::default()
    };
    let r = run(&doc, &["PERF-004"]);
    let c = check(&r, "PERF-004");
    assert!((measured_f64(c, "acmr") - 48.0 / 42.0).abs() < 1e-6, "{}", measured_f64(c, "acmr"));
    assert!((measured_f64(c, "atvr") - 1.0).abs() < 1e-9);
    assert_eq!(int(&r, "PERF-004", "primitives"), 2);
}

// ---------------------------------------------------------------------------
// PERF-005
// ---------------------------------------------------------------------------

#[test]
fn perf005_stacked_quads_drawn_back_to_front_shade_twice() {
    // Two parallel quads (y = 0 and y = 1, both facing +y): seen along y,
    // one order shades every covered pixel once, the other twice.
    let q = |y: f32| vec![[0.0, y, 0.0], [0.0, y, 1.0], [1.0, y, 1.0], [1.0, y, 0.0]];
    let positions: Vec<[f32; 3]> = q(0.0).into_iter().chain(q(1.0)).collect();
    let lower = [[0, 1, 2], [0, 2, 3]];
    let upper = [[4, 5, 6], [4, 6, 7]];
    let overdraw = |tris: Vec<[u32; 3]>| {
        let r = run(&Doc::single(soup(positions.clone(), &tris)), &["PERF-005"]);
        let c = check(&r, "PERF-005");
        assert_eq!(c.status, Status::Pass, "informational");
        measured_f64(c, "overdraw")
    };
    let a = overdraw(lower.iter().chain(upper.iter()).copied().collect());
    let b = overdraw(upper.iter().chain(lower.iter()).copied().collect());
    let (lo, hi) = (a.min(b), a.max(b));
    assert!((lo - 1.0).abs() < 0.05, "front to back: {lo}");
    assert!(hi > 1.5, "back to front: {hi}");
    // One quad alone: each pixel once.
    let r = run(&Doc::single(quad(1.0)), &["PERF-005"]);
    assert_eq!(measured_f64(check(&r, "PERF-005"), "overdraw"), 1.0);
}

#[test]
fn perf005_leaves_out_triangles_with_a_non_finite_corner() {
    // The stacked quads drawn back to front, then a ninth vertex that is
    // not finite. Three routes to the same overdraw: every position finite
    // (the triangles read where they lie), the vertex unused (copied,
    // nothing left out), and a triangle using it (copied without it). The
    // vertex must not move the views' transform either.
    let q = |y: f32| vec![[0.0, y, 0.0], [0.0, y, 1.0], [1.0, y, 1.0], [1.0, y, 0.0]];
    let finite: Vec<[f32; 3]> = q(0.0).into_iter().chain(q(1.0)).collect();
    let mut with_nan = finite.clone();
    with_nan.push([f32::NAN, 0.5, 0.5]);
    let quads = vec![[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]];
    let mut with_bad = quads.clone();
    with_bad.insert(2, [8, 0, 1]);
    let overdraw = |positions: &[[f32; 3]], tris: &[[u32; 3]]| {
        let r = run(&Doc::single(soup(positions.to_vec(), tris)), &["PERF-005"]);
        measured_f64(check(&r, "PERF-005"), "overdraw")
    };
    let clean = overdraw(&finite, &quads);
    assert!(clean > 1.5, "back to front: {clean}");
    assert_eq!(overdraw(&with_nan, &with_bad), clean);
    assert_eq!(overdraw(&with_nan, &quads), clean);
}

// ---------------------------------------------------------------------------
// PERF-006
// ---------------------------------------------------------------------------

#[test]
fn perf006_unused_and_duplicate_vertices() {
    let clean = quad(1.0);
    let r = run(&Doc::single(clean.clone()), &["PERF-006"]);
    let c = check(&r, "PERF-006");
    assert_eq!(c.status, Status::Pass);
    assert_eq!(int(&r, "PERF-006", "unused_vertices"), 0);
    assert_eq!(int(&r, "PERF-006", "duplicate_vertices"), 0);
    assert_eq!(measured_f64(c, "overfetch"), 1.0);
    // Append a copy of vertex 0 (every attribute) that nothing references,
    // and a vertex at a new place that nothing references: 2 unused, 1 duplicate.
    let mut p = clean.clone();
    p.positions.push(p.positions[0]);
    p.positions.push([9.0, 9.0, 9.0]);
    for set in &mut p.uvs {
        set.push(set[0]);
        set.push([0.5, 0.5]);
    }
    if let Some(n) = &mut p.normals {
        n.push(n[0]);
        n.push([0.0, 1.0, 0.0]);
    }
    let r = run(&Doc::single(p.clone()), &["PERF-006"]);
    assert_eq!(int(&r, "PERF-006", "unused_vertices"), 2);
    assert_eq!(int(&r, "PERF-006", "duplicate_vertices"), 1);
    assert_eq!(int(&r, "PERF-006", "vertices"), 6);
    // A copy that differs in one UV only is not a duplicate.
    let mut q = p;
    q.uvs[0][4] = [0.25, 0.75];
    let r = run(&Doc::single(q), &["PERF-006"]);
    assert_eq!(int(&r, "PERF-006", "duplicate_vertices"), 0);
}

#[test]
fn perf006_vertex_order_unrelated_to_indices_overfetches() {
    // A sphere whose vertex buffer (about 1 MB: 32,898 vertices of 32 bytes,
    // over meshoptimizer's 128 KB cache model) is shuffled, the indices
    // remapped: the same triangles, fetched from scattered cache lines.
    let ordered = sphere(256, 129, 1.0);
    let n = ordered.positions.len();
    let mut perm: Vec<usize> = (0..n).collect();
    let mut s = 0x2545_f491_4f6c_dd1du64;
    for i in (1..n).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        perm.swap(i, (s % (i as u64 + 1)) as usize);
    }
    let mut inv = vec![0u32; n];
    perm.iter().enumerate().for_each(|(new, &old)| inv[old] = new as u32);
    let mut scattered = ordered.clone();
    scattered.positions = perm.iter().map(|&o| ordered.positions[o]).collect();
    scattered.uvs = ordered.uvs.iter().map(|set| perm.iter().map(|&o| set[o]).collect()).collect();
    scattered.normals = ordered.normals.as_ref().map(|v| perm.iter().map(|&o| v[o]).collect());
    scattered.indices = Some(ordered.indices.as_ref().unwrap().iter().map(|&i| inv[i as usize]).collect());
    let of = |p: Prim| measured_f64(check(&run(&Doc::single(p), &["PERF-006"]), "PERF-006"), "overfetch");
    let (a, b) = (of(ordered), of(scattered));
    assert!(a < 1.5, "in index order: {a}");
    assert!(b > 2.0 * a, "scattered {b} vs ordered {a}");
}

// ---------------------------------------------------------------------------
// PERF-007
// ---------------------------------------------------------------------------

#[test]
fn perf007_counts_and_depth() {
    // A chain of 4 nodes (depth 4), an unused node, a mesh of two primitives.
    let doc = Doc {
        meshes: vec![Mesh { primitives: vec![quad(1.0), cube(1.0)] }],
        nodes: vec![
            Node { children: vec![1], ..Node::default() },
            Node { children: vec![2], ..Node::default() },
            Node { children: vec![3], ..Node::default() },
            Node { mesh: Some(0), ..Node::default() },
            Node::default(),
        ],
        scene_roots: vec![0],
        ..Doc::default()
    };
    let r = run(&doc, &["PERF-007"]);
    let c = check(&r, "PERF-007");
    assert_eq!(c.status, Status::Pass, "informational");
    assert_eq!(int(&r, "PERF-007", "nodes"), 5);
    assert_eq!(int(&r, "PERF-007", "scene_nodes"), 4);
    assert_eq!(int(&r, "PERF-007", "meshes"), 1);
    assert_eq!(int(&r, "PERF-007", "primitives"), 2);
    assert_eq!(int(&r, "PERF-007", "max_depth"), 4);
}

#[test]
fn new_checks_follow_only_and_skip() {
    let doc = Doc::single(cube(1.0));
    let r = run(&doc, &["GEO-008", "PERF-007"]);
    for id in ["GEO-008", "PERF-007"] {
        assert_ne!(check(&r, id).status, Status::Skipped, "{id} ran");
    }
    for id in ["GEO-009", "PERF-004", "PERF-005", "PERF-006"] {
        assert_eq!(check(&r, id).status, Status::Skipped, "{id} not selected");
    }
}

/// A mesh large enough for the two phases (`engine::PHASED_WORLD_BYTES`),
/// with normals and UVs that the first phase reads and the second runs
/// without (`Scene::free_surface_attributes`): `engine::validate`, which
/// frees them between the phases, gives the report that checking a
/// borrowed asset, which frees nothing, gives.
#[test]
fn a_large_mesh_checked_without_its_surface_attributes_gives_the_same_report() {
    let glb = Doc::single(sphere(900, 450, 1.0)).to_glb();
    let opts = Options { selection: Selection::parse(&[], &["SPEC-001".into()]).unwrap(), ..Options::default() };
    let asset = meshcheck::asset::load(meshcheck::asset::Input::from_bytes("sphere.glb", glb.clone())).unwrap();
    assert!(asset.scene.world_mesh_bytes() >= meshcheck::engine::PHASED_WORLD_BYTES, "checked in two phases");
    let p = &asset.scene.primitives[0];
    assert!(p.normals.is_some() && p.has_uv(0), "the sphere has normals and UVs");
    let kept = meshcheck::engine::report_for(&asset, &opts);
    let freed = meshcheck::engine::validate(meshcheck::asset::Input::from_bytes("sphere.glb", glb), &opts).unwrap();
    assert_eq!(util::report_without_timestamps(&freed), util::report_without_timestamps(&kept));
    // UV-005 measured the UVs (in the first phase, before they went).
    let islands = check(&freed, "UV-005");
    assert_ne!(islands.status, Status::Skipped, "{:?}", islands.measured);
    assert!(!islands.measured.is_empty());
}

/// The two orders of the checks (`engine::run_checks_phased`: in two
/// phases, or the mesh built beside the checks that never read it) give
/// the same results, check for check, on meshes either side of
/// `engine::PHASED_WORLD_BYTES` (which order `run_checks` picks is a
/// matter of memory, never of numbers): spheres with flipped and
/// degenerate triangles, a second sphere instanced and a textured cube
/// beside them, so every family has something to measure.
#[test]
fn both_orders_of_the_checks_give_the_same_results() {
    let opts = Options { selection: Selection::parse(&[], &["SPEC-001".into()]).unwrap(), ..Options::default() };
    for (segments, rings) in [(24, 12), (160, 80)] {
        let mut ball = sphere(segments, rings, 1.0);
        ball.flip_triangles(0..7);
        ball.add_degenerate();
        let mut doc = Doc::single(ball);
        doc.meshes.push(Mesh { primitives: vec![sphere(12, 6, 0.5)] });
        doc.nodes.push(Node { mesh: Some(1), translation: Some([3.0, 0.0, 0.0]), ..Node::default() });
        let mut box_ = cube(1.0);
        box_.material = Some(0);
        doc.meshes.push(Mesh { primitives: vec![box_] });
        doc.nodes.push(Node { mesh: Some(2), translation: Some([-3.0, 0.0, 0.0]), ..Node::default() });
        doc.materials.push(Material { base_color_texture: Some(0), ..Material::default() });
        doc.textures.push(Texture { source: 0 });
        doc.images.push(Image { bytes: png(16, 16), mime: "image/png".into(), uri: None });
        doc.scene_roots.extend([1, 2]);
        let asset = meshcheck::asset::load(meshcheck::asset::Input::from_bytes("balls.glb", doc.to_glb())).unwrap();
        let bytes = asset.scene.world_mesh_bytes();
        let large = bytes >= meshcheck::engine::PHASED_WORLD_BYTES;
        assert_eq!(large, segments > 100, "the meshes sit either side of the threshold ({bytes} bytes)");
        let phased = meshcheck::engine::run_checks_phased(&asset, &opts, None, None, true);
        let overlapped = meshcheck::engine::run_checks_phased(&asset, &opts, None, None, false);
        assert_eq!(phased.len(), overlapped.len());
        for (a, b) in phased.iter().zip(&overlapped) {
            assert_eq!(serde_json::to_value(a).unwrap(), serde_json::to_value(b).unwrap(), "{}", a.id);
        }
        let measured = phased.iter().filter(|r| r.status != Status::Skipped).count();
        assert!(measured > 30, "only {measured} checks measured");
    }
}

/// TOP-001 and TOP-004 selected together share one walk over the manifold
/// edges (`catalog::prepare`, four edges at a time where the CPU has
/// AVX2), beside GEO-008's fan walks; selected alone, each walks the edges
/// itself. Either way, and on either side of `engine::PHASED_WORLD_BYTES`,
/// each reports what it reports in the full run: a sphere with flipped and
/// collapsed triangles (quad candidates, GEO-008's vertices) and a box
/// (hard edges).
#[test]
fn the_shared_edge_walk_gives_each_check_what_it_finds_alone() {
    for (segments, rings) in [(24, 12), (160, 80)] {
        let mut ball = sphere(segments, rings, 1.0);
        ball.flip_triangles(0..7);
        ball.add_degenerate();
        let mut doc = Doc::single(ball);
        doc.meshes.push(Mesh { primitives: vec![cube(1.0)] });
        doc.nodes.push(Node { mesh: Some(1), translation: Some([-3.0, 0.0, 0.0]), ..Node::default() });
        doc.scene_roots.push(1);
        let all = run(&doc, &["geometry", "topology"]);
        let json = |r: &Report, id: &str| serde_json::to_value(check(r, id)).unwrap();
        for only in [&["TOP-001"][..], &["TOP-004"], &["GEO-008"], &["TOP-001", "TOP-004"], &["TOP-004", "GEO-008"]] {
            let alone = run(&doc, only);
            for id in only {
                assert_eq!(json(&alone, id), json(&all, id), "{id} with {only:?}, {segments} segments");
            }
        }
        assert!(int(&all, "TOP-001", "quads") > 100, "quads paired");
        assert!(int(&all, "TOP-004", "hard_edges") >= 12, "the box's edges are hard");
    }
}

/// The `MESHCHECK_CHECK_TIMES` timeline (stderr) of `validate FILE` with
/// only the checks `only`, on a mesh that must be checked in two phases.
fn two_phase_timeline(file: &std::path::Path, only: &[&str]) -> String {
    let out = util::bin()
        .args(["validate", file.to_str().unwrap(), "--no-config", "--format", "json"])
        .args(only.iter().flat_map(|id| ["--only", id]))
        .env("MESHCHECK_CHECK_TIMES", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains("the scene's geometry freed"), "not the two phases: {err}");
    err
}

/// Check `id`'s span (start, end, in ms) in a `MESHCHECK_CHECK_TIMES`
/// timeline: its line `check ID W ms (START..END)`.
fn span_of(timeline: &str, id: &str) -> (f64, f64) {
    span_at(timeline, &format!("check {id} "))
}

/// The span of the timeline's first step whose line starts with `starts`.
fn span_at(timeline: &str, starts: &str) -> (f64, f64) {
    let line = timeline.lines().find(|l| l.starts_with(starts)).unwrap_or_else(|| panic!("no {starts}: {timeline}"));
    let inner = line.rsplit_once('(').and_then(|(_, r)| r.strip_suffix(')')).unwrap_or_else(|| panic!("{line}"));
    let (a, b) = inner.split_once("..").unwrap_or_else(|| panic!("{line}"));
    (a.parse().unwrap(), b.parse().unwrap())
}

/// A UV sphere checked in two phases, textured, so that UV-008 measures
/// rather than skips.
fn textured_sphere_glb() -> Vec<u8> {
    let mut prim = sphere(700, 500, 1.0);
    prim.material = Some(0);
    let mut doc = Doc::single(prim);
    doc.materials.push(Material { base_color_texture: Some(0), ..Material::default() });
    doc.textures.push(Texture { source: 0 });
    doc.images.push(Image { bytes: png(64, 64), mime: "image/png".into(), uri: None });
    doc.to_glb()
}

/// On a mesh checked in two phases, the first phase's memory-hungry checks
/// (UV-002, UV-004, UV-005, UV-008: UV rasters, per-triangle samples,
/// islands) run one after another, never side by side, whatever the light
/// checks' timing: their spans in `MESHCHECK_CHECK_TIMES`' timeline do not
/// meet (the four run on the pool side by side, tried when the chain made a
/// parallel iterator of one item a job, fail it; so does UV-008 left out of
/// `catalog::memory_hungry`, which let its samples meet UV-004's). The
/// sphere is textured, so that UV-008 measures rather than skips. And
/// PERF-006 ends before the other light checks begin (it fails without
/// `catalog::runs_first`), and the vertex streams only it reads are freed
/// before UV-004 begins, once the other light checks have run beside UV-002
/// (they ran beside UV-004 before the twenty-fifth step). In the second phase GEO-008 runs first the same
/// way, ending before the other light checks there begin (it fails without
/// GEO-008 in `catalog::runs_first`).
#[test]
fn the_first_phases_hungry_checks_run_one_at_a_time() {
    let glb = textured_sphere_glb();
    let asset = meshcheck::asset::load(meshcheck::asset::Input::from_bytes("sphere.glb", glb.clone())).unwrap();
    assert!(asset.scene.world_mesh_bytes() >= meshcheck::engine::PHASED_WORLD_BYTES, "checked in two phases");
    drop(asset);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sphere.glb");
    std::fs::write(&file, glb).unwrap();
    let err = two_phase_timeline(
        &file,
        &[
            "PERF-004", "UV-002", "UV-004", "UV-005", "GEO-002", "PERF-005", "PERF-006", "UV-008", "GEO-008",
            "GEO-009", "TOP-001", "TOP-002",
        ],
    );
    let span = |id: &str| span_of(&err, id);
    let hungry = ["UV-002", "UV-004", "UV-005", "UV-008"].map(span);
    for (i, a) in hungry.iter().enumerate() {
        for b in &hungry[i + 1..] {
            assert!(a.1 <= b.0 || b.1 <= a.0, "{a:?} and {b:?} overlap:\n{err}");
        }
    }
    // PERF-006 (its vertex table) runs first beside the chain, before the
    // other light checks start (catalog::runs_first); left to the pool it
    // ran after PERF-004 and PERF-005, and could meet UV-005's end.
    let first = span("PERF-006");
    for id in ["PERF-004", "PERF-005"] {
        assert!(first.1 <= span(id).0, "PERF-006 {first:?} not before {id} {:?}:\n{err}", span(id));
    }
    // The normals, tangents and colours, which only PERF-006 reads, are
    // freed once it has run, before UV-004 and UV-005 (the phase's peak).
    let freed = span_at(&err, "vertex streams freed").0;
    assert!(first.1 <= freed && freed <= span("UV-004").0, "streams freed at {freed}, PERF-006 {first:?}:\n{err}");
    // The other light checks run beside UV-002 too (whose raster leaves a
    // core idle), ending before the streams are freed.
    for id in ["PERF-004", "PERF-005"] {
        assert!(span(id).1 <= freed, "{id} {:?} after the streams were freed at {freed}:\n{err}", span(id));
    }
    // The second phase: GEO-008 (its vertex arrays) before the other light
    // checks, beside TOP-001's candidates rather than its pairing.
    let first = span("GEO-008");
    for id in ["GEO-002", "GEO-009", "TOP-002"] {
        assert!(first.1 <= span(id).0, "GEO-008 {first:?} not before {id} {:?}:\n{err}", span(id));
    }
}

/// The last steps of UV-004 and UV-008 (their weighted quantiles, each on
/// one thread over a sample a triangle: `catalog::split_run`) run beside
/// what follows them on a mesh checked in two phases: UV-004's beside
/// UV-005, which hashes its UV points on one thread first, and UV-008's
/// beside the world mesh's build. Each summary starts once its check has
/// measured, and meets what follows it in one run of three (whether the
/// second core takes the next step in time depends on the machine's load;
/// run in turn, as before, they never meet). The report is the one a
/// single thread gives (`-j 1`: every tail finished before what follows),
/// byte for byte but for its date.
#[test]
fn the_uv_summaries_run_beside_what_follows_them() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sphere.glb");
    std::fs::write(&file, textured_sphere_glb()).unwrap();
    let meet = |a: (f64, f64), b: (f64, f64)| a.0 < b.1 && b.0 < a.1;
    let (mut beside_uv005, mut beside_build) = (false, false);
    let mut timelines = Vec::new();
    for _ in 0..3 {
        let err = two_phase_timeline(&file, &["UV-004", "UV-005", "UV-008", "GEO-002"]);
        let (stretch, density) = (span_at(&err, "summary of UV-004 "), span_at(&err, "summary of UV-008 "));
        assert!(span_of(&err, "UV-004").1 <= stretch.0, "UV-004's summary before it measured:\n{err}");
        assert!(span_of(&err, "UV-008").1 <= density.0, "UV-008's summary before it measured:\n{err}");
        beside_uv005 |= meet(stretch, span_of(&err, "UV-005"));
        beside_build |= meet(density, span_at(&err, "shared data (welded world mesh"));
        timelines.push(err);
        if beside_uv005 && beside_build {
            break;
        }
    }
    assert!(
        beside_uv005 && beside_build,
        "in three runs, UV-004's summary beside UV-005: {beside_uv005}; UV-008's beside the build: {beside_build}:\n{}",
        timelines.join("\n")
    );
    let report = |jobs: &[&str]| {
        let out = util::bin()
            .args(["validate", file.to_str().unwrap(), "--no-config", "--format", "json", "--skip", "SPEC-001"])
            .args(jobs)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("\"UV-008\"") && text.contains("texel_density_median"), "{text}");
        text.lines().filter(|l| !l.contains("\"created_at\"")).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(report(&[]), report(&["-j", "1"]));
}

/// On the pool each check is a job of its own (`Checks::on_pool`): with
/// `--only GEO-002,GEO-009` on a mesh checked in two phases, the two run
/// side by side. Split as rayon splits a slice by default, the catalog's
/// neighbours GEO-002 to GEO-009 were one run on one thread, one after
/// another, and this fails. With no memory-hungry check selected there is
/// no chain, and GEO-008, which runs first (`catalog::runs_first`), starts
/// at once beside the pool: with `--only GEO-002,GEO-008,GEO-009` it starts
/// before either of the others ends. Left to the pool, last first, it
/// started on the thread that had just finished one of them, and this
/// fails too. Whether the second core takes a job in time depends on the
/// machine's load, so GEO-002 and GEO-009 need meet in one run of three.
#[test]
fn on_the_pool_each_check_is_a_job_of_its_own() {
    let glb = Doc::single(sphere(700, 500, 1.0)).to_glb();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sphere.glb");
    std::fs::write(&file, glb).unwrap();
    let timeline = |only: &[&str]| two_phase_timeline(&file, only);
    let meet = |err: &str, a: &str, b: &str| {
        let (a, b) = (span_of(err, a), span_of(err, b));
        a.0 < b.1 && b.0 < a.1
    };
    let starts_first = |err: &str| span_of(err, "GEO-008").0 < span_of(err, "GEO-002").1.min(span_of(err, "GEO-009").1);
    let (mut pool_met, mut first_met) = (false, false);
    let mut timelines = Vec::new();
    for _ in 0..3 {
        let (pool, first) = (timeline(&["GEO-002", "GEO-009"]), timeline(&["GEO-002", "GEO-008", "GEO-009"]));
        pool_met |= meet(&pool, "GEO-002", "GEO-009");
        first_met |= starts_first(&first);
        if pool_met && first_met {
            return;
        }
        timelines.extend([pool, first]);
    }
    panic!(
        "in three runs, GEO-002 and GEO-009 side by side: {pool_met}; GEO-008 started before the others ended: {first_met}:\n{}",
        timelines.join("\n")
    );
}

/// The second phase's mesh built with the scene's positions and triangles
/// freed as it reads them (`Scene::build_world_mesh_freeing`): a primitive
/// drawn twice (once mirrored), a second mesh scaled, flipped and
/// degenerate triangles, give the report of a borrowed asset, whose mesh
/// reads the scene's corners afterwards; every GEO and TOP figure that
/// reads the unwelded corners (the degenerate flags, TOP-003's qualities)
/// comes out the same, and the counts in the stats stay. A cube without
/// UVs, whose corners differ only in their normals, makes PERF-006's count
/// depend on the normals: a check that read them after the engine frees
/// them (`catalog::reads_vertex_streams`) would count fewer vertices.
#[test]
fn a_large_scene_checked_with_its_geometry_freed_gives_the_same_report() {
    let mut big = sphere(600, 300, 1.0);
    big.flip_triangles(0..40);
    let mut small = sphere(420, 210, 0.5);
    small.add_degenerate();
    let mut flat = cube(0.25);
    flat.uvs.clear();
    let node = |mesh: usize, translation: [f32; 3], scale: [f32; 3]| Node {
        mesh: Some(mesh),
        translation: Some(translation),
        scale: Some(scale),
        ..Node::default()
    };
    let doc = Doc {
        meshes: vec![Mesh { primitives: vec![big, flat] }, Mesh { primitives: vec![small] }],
        nodes: vec![
            node(0, [0.0; 3], [1.0; 3]),
            node(0, [3.0, 0.0, 0.0], [-1.0, 1.0, 1.0]),
            node(1, [0.0, 3.0, 0.0], [2.0; 3]),
        ],
        scene_roots: vec![0, 1, 2],
        ..Doc::default()
    };
    let glb = doc.to_glb();
    let opts = Options { selection: Selection::parse(&[], &["SPEC-001".into()]).unwrap(), ..Options::default() };
    let asset = meshcheck::asset::load(meshcheck::asset::Input::from_bytes("scene.glb", glb.clone())).unwrap();
    assert!(asset.scene.world_mesh_bytes() >= meshcheck::engine::PHASED_WORLD_BYTES, "checked in two phases");
    assert_eq!(asset.scene.instances.len(), 5, "two instances of mesh 0's two primitives, one of mesh 1's");
    let kept = meshcheck::engine::report_for(&asset, &opts);
    let freed = meshcheck::engine::validate(meshcheck::asset::Input::from_bytes("scene.glb", glb), &opts).unwrap();
    assert_eq!(util::report_without_timestamps(&freed), util::report_without_timestamps(&kept));
    // The figures the corners give were measured, not skipped.
    assert!(measured_f64(check(&freed, "GEO-004"), "degenerate_triangles") >= 1.0, "{:?}", check(&freed, "GEO-004"));
    assert!(measured_f64(check(&freed, "GEO-003"), "flipped_face_count") > 0.0);
    assert!(measured_f64(check(&freed, "TOP-003"), "quality_mean") > 0.0);
    assert!(freed.stats.triangles > 800_000 && freed.stats.vertices > 0);
}
