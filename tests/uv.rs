//! UV layout checks through the engine: UV-002 (overlap), UV-004 (texel
//! stretch) and UV-005 (island padding), on assets built in code with
//! `crate::testkit` and on the Khronos asset-auditor cubes of the shared
//! corpus. Assertions are on status and structured `measured` values.

use crate::testkit::{Doc, Image, Material, Mesh, Node, Prim, Texture, cube, png_header_only, quad};
use crate::util::{assert_schema_valid, check, measured_f64, model, validate_with};
use meshcheck::asset::Input;
use meshcheck::engine::{self, Options, Selection};
use meshcheck::report::{CheckResult, Report, Status};
use serde_json::Value;

/// Options running only the UV family (no glTF-Validator process needed).
fn uv_only() -> Options {
    Options { selection: Selection::parse(&["uv".into()], &[]).unwrap(), ..Options::default() }
}

/// Validates a document as a GLB, UV checks only, checking the report against the schema.
fn report(doc: &Doc) -> Report {
    let r = validate_with("uv.glb", doc.to_glb(), &uv_only()).expect("the asset loads");
    assert_schema_valid(&serde_json::to_value(&r).unwrap());
    r
}

fn measured_u64(c: &CheckResult, key: &str) -> u64 {
    c.measured.get(key).and_then(Value::as_u64).unwrap_or_else(|| panic!("{} has integer measured.{key}", c.id))
}

fn sets(c: &CheckResult) -> &Vec<Value> {
    c.measured.get("sets").and_then(Value::as_array).unwrap_or_else(|| panic!("{} has measured.sets", c.id))
}

fn locations(c: &CheckResult) -> Vec<&str> {
    c.measured["locations"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect()
}

/// A unit quad (testkit `quad(1.0)`) whose UVs span [u0,u1] x [v0,v1].
fn quad_uv(u0: f32, u1: f32, v0: f32, v1: f32) -> Prim {
    let mut p = quad(1.0);
    p.uvs = vec![vec![[u0, v1], [u1, v1], [u1, v0], [u0, v0]]];
    p
}

/// One mesh of `prims`, each with material 0, which samples one texture
/// showing a `w` x `h` image (header only) through TEXCOORD_0.
fn textured(prims: Vec<Prim>, w: u32, h: u32) -> Doc {
    let prims = prims.into_iter().map(|p| Prim { material: Some(0), ..p }).collect();
    Doc {
        meshes: vec![Mesh { primitives: prims }],
        nodes: vec![Node { mesh: Some(0), ..Node::default() }],
        scene_roots: vec![0],
        materials: vec![Material { base_color_texture: Some(0), ..Material::default() }],
        textures: vec![Texture { source: 0 }],
        images: vec![Image { bytes: png_header_only(w, h), mime: "image/png".into(), uri: None }],
    }
}

/// Two unit quads whose UV squares (0.25 wide) sit side by side, `gap` of
/// the tile apart in u:
///
/// ```text
///   v 0.25 +------+ gap +------+
///          |  A   | <-> |  B   |
///   v 0.5  +------+     +------+
///        u 0.25  0.5  0.5+gap  0.75+gap
/// ```
fn two_islands(gap: f32, w: u32, h: u32) -> Doc {
    let a = quad_uv(0.25, 0.5, 0.25, 0.5);
    let mut b = quad_uv(0.5 + gap, 0.75 + gap, 0.25, 0.5);
    b.translate([2.0, 0.0, 0.0]);
    textured(vec![a, b], w, h)
}

// ---------------------------------------------------------------------------
// The testkit cube and quads
// ---------------------------------------------------------------------------

#[test]
fn uv_testkit_cube_has_no_overlap_stretch_or_tight_padding() {
    // The cube's six faces each fill a cell of a 3x2 grid with a margin of
    // 1/64 of the tile on every side: 2/64 between neighbouring faces, 32
    // texels at 1024 (no texture: the default raster). Counted in texels that
    // no face touches at all, faces 0 and 1 are separated by the texels after
    // u = (1/3 - 1/64) * 1024 = 325.3 and before (1/3 + 1/64) * 1024 = 357.3,
    // i.e. 326..=356: 31 texels; rows the same way: (1/2 -+ 1/64) * 1024 =
    // 496 and 528, texels 496..=527: 32.
    let r = report(&Doc::single(cube(1.0)));
    let c = check(&r, "UV-002");
    assert_eq!(c.status, Status::Pass);
    assert_eq!(measured_f64(c, "overlap_pct"), 0.0);
    assert_eq!(measured_u64(c, "overlapping_texels"), 0);
    assert_eq!(measured_u64(c, "resolution_px"), 1024);
    assert!(measured_u64(c, "covered_texels") > 600_000);
    let c = check(&r, "UV-005");
    assert_eq!(c.status, Status::Pass);
    assert_eq!(measured_u64(c, "islands"), 6);
    assert_eq!(measured_f64(c, "min_padding_px"), 8.0, "nothing within the 8 px search");
    assert_eq!(measured_f64(c, "searched_px"), 8.0);
    // On a 64 px texture the faces are 2 texels apart, 1 untouched texel
    // between columns (20.3 .. 22.3: texel 21) and 2 between rows (31 .. 33):
    // under the 4 px minimum.
    let r = report(&textured(vec![cube(1.0)], 64, 64));
    let c = check(&r, "UV-005");
    assert_eq!(c.status, Status::Warn);
    assert_eq!(measured_f64(c, "min_padding_px"), 1.0);
    // Pairs are counted where the islands' search fronts meet: the 7 pairs
    // of faces side by side, plus one diagonal pair at each of the two inner
    // corners where four faces meet (the other diagonal's fronts are cut off
    // there; all four diagonals are 2 texels apart).
    assert_eq!(measured_u64(c, "island_pairs_too_close"), 9);
    // Each face is 1 x 1 mapped onto 0.302 x 0.469 of the tile: ratio 1.55 < 2.
    let c = check(&r, "UV-004");
    assert_eq!(c.status, Status::Pass);
    assert_eq!(measured_f64(c, "stretched_area_pct"), 0.0);
    let p95 = measured_f64(c, "stretch_p95");
    assert!((p95 - (1.0 - 4.0 / 64.0) / 2.0 / ((1.0 - 6.0 / 64.0) / 3.0)).abs() < 1e-3, "{p95}");
}

#[test]
fn uv002_quad_with_stacked_triangles_warns() {
    // Vertex 3 takes vertex 1's UV: triangle (0, 2, 3) lands on (0, 1, 2).
    let mut q = quad(1.0);
    q.uvs[0][3] = q.uvs[0][1];
    let r = report(&Doc::single(q));
    let c = check(&r, "UV-002");
    assert_eq!(c.status, Status::Warn);
    assert_eq!(measured_f64(c, "overlap_pct"), 100.0);
    assert_eq!(measured_u64(c, "overlapping_texels"), measured_u64(c, "covered_texels"));
    assert_eq!(locations(c), vec!["/meshes/0/primitives/0"]);
    assert_eq!(c.threshold["max_uv_overlap_pct"], Value::from(1));
    let set = &sets(c)[0];
    assert_eq!((set["set"].as_u64(), set["material"].is_null(), set["scale"].as_f64()), (Some(0), true, Some(1.0)));
}

#[test]
fn uv002_instances_share_one_texture_space_and_moved_copies_are_ignored() {
    // The same quad drawn by two nodes, plus a UV copy of it moved by +1 in u.
    let mut doc = Doc::single(quad(1.0));
    doc.nodes.push(Node { mesh: Some(0), translation: Some([3.0, 0.0, 0.0]), ..Node::default() });
    doc.scene_roots.push(1);
    let mut copy = quad(1.0);
    for uv in &mut copy.uvs[0] {
        uv[0] += 1.0;
    }
    copy.translate([0.0, 2.0, 0.0]);
    doc.meshes[0].primitives.push(copy);
    let r = report(&doc);
    let c = check(&r, "UV-002");
    assert_eq!(c.status, Status::Pass);
    assert_eq!(measured_u64(c, "overlapping_texels"), 0);
    assert_eq!(measured_u64(c, "covered_texels"), 1024 * 1024);
}

#[test]
fn uv004_quad_stretched_five_times_warns() {
    // A 1 x 1 quad onto 0.2 x 1 of the tile: ratio 5 everywhere.
    let r = report(&Doc::single(quad_uv(0.0, 0.2, 0.0, 1.0)));
    let c = check(&r, "UV-004");
    assert_eq!(c.status, Status::Warn);
    assert_eq!(measured_f64(c, "stretched_area_pct"), 100.0);
    assert!((measured_f64(c, "stretch_p95") - 5.0).abs() < 1e-6);
    assert_eq!(sets(c)[0]["triangles"].as_u64(), Some(2));
    assert_eq!(locations(c), vec!["/meshes/0/primitives/0"]);
    assert_eq!(c.threshold["max_stretch_ratio"], Value::from(2));
    assert_eq!(c.threshold["max_stretched_area_pct"], Value::from(5));
}

#[test]
fn uv004_node_scale_counts_and_texture_aspect_compensates() {
    // An evenly mapped quad scaled 5x along x by its node: stretched.
    let mut doc = Doc::single(quad_uv(0.0, 0.5, 0.0, 0.5));
    doc.nodes[0].scale = Some([5.0, 1.0, 1.0]);
    let r = report(&doc);
    let c = check(&r, "UV-004");
    assert_eq!(c.status, Status::Warn);
    assert!((measured_f64(c, "stretch_p95") - 5.0).abs() < 1e-6);
    // A 1 x 1 quad on 0.25 x 0.5 of a 2048 x 1024 texture is 512 x 512 texels: even.
    let r = report(&textured(vec![quad_uv(0.0, 0.25, 0.0, 0.5)], 2048, 1024));
    let c = check(&r, "UV-004");
    assert_eq!(c.status, Status::Pass);
    assert!((measured_f64(c, "stretch_p95") - 1.0).abs() < 1e-6);
}

#[test]
fn uv004_degenerate_uvs_are_infinitely_stretched() {
    // All four UVs on one line: both triangles have zero UV area.
    let mut q = quad(1.0);
    q.uvs = vec![vec![[0.1, 0.1], [0.2, 0.2], [0.3, 0.3], [0.4, 0.4]]];
    let r = report(&Doc::single(q));
    let c = check(&r, "UV-004");
    assert_eq!(c.status, Status::Warn);
    assert_eq!(measured_f64(c, "stretched_area_pct"), 100.0);
    assert_eq!(measured_f64(c, "stretch_p95"), 1e6, "capped");
}

#[test]
fn uv005_islands_three_texels_apart_at_1024_warn() {
    // A ends at u = 0.5 (texel 512's left edge), B starts 3/1024 later:
    // texels 512, 513 and 514 are empty.
    let r = report(&two_islands(3.0 / 1024.0, 1024, 1024));
    let c = check(&r, "UV-005");
    assert_eq!(c.status, Status::Warn);
    assert_eq!(measured_f64(c, "min_padding_px"), 3.0);
    assert_eq!(measured_u64(c, "islands"), 2);
    assert_eq!(measured_u64(c, "island_pairs_too_close"), 1);
    assert_eq!(locations(c), vec!["/meshes/0/primitives/0", "/meshes/0/primitives/1"]);
    let set = &sets(c)[0];
    assert_eq!((set["material"].as_u64(), set["resolution_px"].as_u64()), (Some(0), Some(1024)));
    assert_eq!(c.threshold["min_padding_px"], Value::from(4));
    // Nothing else is wrong with the layout.
    assert_eq!(check(&r, "UV-002").status, Status::Pass);
    assert_eq!(check(&r, "UV-004").status, Status::Pass);
    // Six texels apart passes.
    let r = report(&two_islands(6.0 / 1024.0, 1024, 1024));
    let c = check(&r, "UV-005");
    assert_eq!((c.status, measured_f64(c, "min_padding_px")), (Status::Pass, 6.0));
}

#[test]
fn uv005_texture_resolution_is_honoured_and_capped() {
    // The same layout on a 256 texture: A ends at texel 128's left edge and
    // B starts 0.75 texel later, inside texel 128: adjacent texels, gap 0.
    let r = report(&two_islands(3.0 / 1024.0, 256, 256));
    let c = check(&r, "UV-005");
    assert_eq!(c.status, Status::Warn);
    assert_eq!(measured_f64(c, "min_padding_px"), 0.0);
    assert_eq!(sets(c)[0]["resolution_px"].as_u64(), Some(256));
    // On an 8192 texture the raster is 4096 (scale 0.5): 12 raster texels,
    // reported as 24 texture pixels; nothing within the 8 px search.
    let r = report(&two_islands(3.0 / 1024.0, 8192, 8192));
    let c = check(&r, "UV-005");
    assert_eq!(c.status, Status::Pass);
    assert_eq!(measured_f64(c, "min_padding_px"), 8.0);
    let set = &sets(c)[0];
    assert_eq!((set["resolution_px"].as_u64(), set["scale"].as_f64()), (Some(4096), Some(0.5)));
    let c = check(&r, "UV-002");
    assert_eq!(measured_u64(c, "resolution_px"), 4096);
    assert_eq!(sets(c)[0]["scale"].as_f64(), Some(0.5));
    // 2 texels apart at 8192 is 1 raster texel: reported as 2 px.
    let r = report(&two_islands(2.0 / 8192.0, 8192, 8192));
    let c = check(&r, "UV-005");
    assert_eq!((c.status, measured_f64(c, "min_padding_px")), (Status::Warn, 2.0));
}

#[test]
fn uv_checks_skip_without_uvs() {
    let mut p = cube(1.0);
    p.drop_uvs();
    let r = report(&Doc::single(p));
    for id in ["UV-002", "UV-004", "UV-005"] {
        let c = check(&r, id);
        assert_eq!(c.status, Status::Skipped, "{id}");
        assert!(c.measured["reason"].as_str().unwrap().contains("UV"), "{id}");
    }
}

#[test]
fn uv_checks_survive_hostile_uvs() {
    // Finite but huge UVs, a NaN, and a degenerate triangle.
    let mut q = quad(1.0);
    q.uvs = vec![vec![[0.2, 0.2], [3e38, 0.2], [-3e38, 3e38], [0.5, f32::NAN]]];
    q.add_degenerate();
    let r = report(&Doc::single(q));
    for id in ["UV-002", "UV-004", "UV-005"] {
        assert_ne!(check(&r, id).status, Status::Skipped, "{id}: {:?}", check(&r, id).measured);
    }
}

// ---------------------------------------------------------------------------
// The Khronos asset-auditor cubes (no textures: measured at 1024)
// ---------------------------------------------------------------------------

fn auditor(name: &str) -> Report {
    let path = model(&format!("khronos-asset-auditor/{name}"));
    let r = engine::validate(Input::from_path(&path).expect("readable"), &uv_only()).expect("loads");
    assert_schema_valid(&serde_json::to_value(&r).unwrap());
    r
}

#[test]
fn uv_auditor_overlapping_cube_warns() {
    // Three of its twelve UV triangles were dragged onto other faces.
    let r = auditor("blender-default-cube-uv-overlaps.glb");
    let c = check(&r, "UV-002");
    assert_eq!(c.status, Status::Warn);
    assert!(measured_f64(c, "overlap_pct") > 1.0);
    assert_eq!(locations(c), vec!["/meshes/0/primitives/0"]);
}

#[test]
fn uv_auditor_passing_cube_passes() {
    // Blender's default cross unwrap: six squares of 0.25 sharing their UV
    // edges, one island, no overlap, every face mapped evenly.
    let r = auditor("blender-default-cube-passing.glb");
    for id in ["UV-002", "UV-004", "UV-005"] {
        assert_eq!(check(&r, id).status, Status::Pass, "{id}");
    }
    let c = check(&r, "UV-005");
    assert_eq!((measured_u64(c, "islands"), measured_f64(c, "min_padding_px")), (1, 8.0));
    assert!((measured_f64(check(&r, "UV-004"), "stretch_p95") - 1.0).abs() < 1e-6);
}

#[test]
fn uv_auditor_grid_aligned_margin_cube_passes_at_four_pixels() {
    // Six faces in four islands (three faces share edges in an L), packed
    // with a margin of about 0.0027 of the tile on each side, so neighbours
    // are 0.0052..0.0055 apart: 5.4..5.6 texels at 1024. Counting only texels
    // that no island touches, e.g. u 0.4972 * 1024 = 509.1 to 0.50265 * 1024
    // = 514.7 leaves texels 510..=513 empty: 4 px, exactly the minimum.
    let r = auditor("blender-default-cube-uv-margin-grid-aligned.glb");
    assert_eq!(check(&r, "UV-002").status, Status::Pass);
    assert_eq!(measured_u64(check(&r, "UV-002"), "overlapping_texels"), 0);
    let c = check(&r, "UV-005");
    assert_eq!(c.status, Status::Pass);
    assert_eq!(measured_u64(c, "islands"), 4);
    assert_eq!(measured_f64(c, "min_padding_px"), 4.0);
    assert_eq!(check(&r, "UV-004").status, Status::Pass);
}

// ---------------------------------------------------------------------------
// Speed
// ---------------------------------------------------------------------------
