//! Lenient reading: every glTF document gets a report card.
//!
//! Documents that glTF 2.0 allows but the loader's typed model is strict
//! about are read without a word; documents with errors are measured as far
//! as they can be read, each fault a note naming its JSON pointer; what is
//! not a glTF document at all is still refused with its code. Every input is
//! built here in code from a 1 m cube.

use crate::testkit::{Doc, Layout, cube, glb_from_parts};
use crate::util::{check, validate_bytes};
use meshcheck::error::ErrorCode;
use meshcheck::report::{Report, Status};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn cube_glb_parts() -> (Value, Vec<u8>) {
    Doc::single(cube(1.0)).to_json(Layout::Glb)
}

fn triangles(r: &Report) -> u64 {
    r.stats.triangles
}

fn spec_errors(r: &Report) -> u64 {
    check(r, "SPEC-001").measured["errors"].as_u64().unwrap()
}

fn report_of(name: &str, json: &Value, bin: &[u8]) -> Report {
    let r = validate_bytes(name, glb_from_parts(json, bin)).unwrap_or_else(|e| panic!("{name} was refused: {e}"));
    crate::util::assert_schema_valid(&serde_json::to_value(&r).unwrap());
    r
}

/// Rewrites every integer in `v` as a float (`24` becomes `24.0`).
fn floats_everywhere(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_u64() => *v = json!(n.as_u64().unwrap() as f64),
        Value::Array(a) => a.iter_mut().for_each(floats_everywhere),
        Value::Object(m) => m.values_mut().for_each(floats_everywhere),
        _ => {}
    }
}

#[test]
fn documents_that_gltf_allows_are_read_without_a_note() {
    // An animation channel that targets no node (KHR_animation_pointer says
    // what it animates), every integer written as a float, a scene without
    // `nodes` beside the default one.
    let (mut json, bin) = cube_glb_parts();
    floats_everywhere(&mut json);
    json["scenes"].as_array_mut().unwrap().push(json!({}));
    json["extensionsUsed"] = json!(["KHR_animation_pointer"]);
    let n = json["accessors"].as_array().unwrap().len();
    let mut bin = bin;
    // Keyframe times (2 floats) and values (2 x VEC3) for the animation.
    let at = bin.len();
    for f in [0.0f32, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0] {
        bin.extend(f.to_le_bytes());
    }
    json["buffers"][0]["byteLength"] = json!(bin.len());
    let views = json["bufferViews"].as_array().unwrap().len();
    json["bufferViews"].as_array_mut().unwrap().push(json!({"buffer": 0, "byteOffset": at, "byteLength": 8}));
    json["bufferViews"].as_array_mut().unwrap().push(json!({"buffer": 0, "byteOffset": at + 8, "byteLength": 24}));
    json["accessors"].as_array_mut().unwrap().push(
        json!({"bufferView": views, "componentType": 5126, "count": 2, "type": "SCALAR", "min": [0.0], "max": [1.0]}),
    );
    json["accessors"]
        .as_array_mut()
        .unwrap()
        .push(json!({"bufferView": views + 1, "componentType": 5126, "count": 2, "type": "VEC3"}));
    json["animations"] = json!([{
        "channels": [{"sampler": 0, "target": {"path": "pointer", "extensions": {"KHR_animation_pointer": {"pointer": "/nodes/0/translation"}}}}],
        "samplers": [{"input": n, "output": n + 1}]
    }]);
    let r = report_of("allowed.glb", &json, &bin);
    assert_eq!(spec_errors(&r), 0, "the reference validator accepts it: {:?}", check(&r, "SPEC-001").measured);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    assert_eq!(triangles(&r), 12);
    assert_eq!(r.stats.animations, 1);
}

/// One document fault: what it does to a cube, the note it must give, and
/// the triangles still measured.
struct Fault {
    name: &'static str,
    apply: fn(&mut Value),
    pointer: &'static str,
    says: &'static str,
    triangles: u64,
}

const FAULTS: &[Fault] = &[
    Fault {
        name: "a node's mesh that does not exist",
        apply: |j| j["nodes"][0]["mesh"] = json!(7),
        pointer: "/nodes/0/mesh",
        says: "names mesh 7, which does not exist",
        triangles: 0,
    },
    Fault {
        name: "a default scene that does not exist",
        apply: |j| j["scene"] = json!(5),
        pointer: "/scene",
        says: "scene 5 does not exist",
        triangles: 12,
    },
    Fault {
        name: "a scene naming a node that does not exist",
        apply: |j| j["scenes"][0]["nodes"] = json!([0, 9]),
        pointer: "/scenes/0/nodes",
        says: "names node 9",
        triangles: 12,
    },
    Fault {
        name: "a property of the wrong type",
        apply: |j| j["nodes"][0]["mesh"] = json!("0"),
        pointer: "/nodes/0/mesh",
        says: "ignored: invalid type",
        triangles: 0,
    },
    Fault {
        name: "a texture reference without its index",
        apply: |j| j["materials"] = json!([{"pbrMetallicRoughness": {"baseColorTexture": {"texCoord": 0}}}]),
        pointer: "/materials/0/pbrMetallicRoughness/baseColorTexture",
        says: "ignored: missing field `index`",
        triangles: 12,
    },
    Fault {
        name: "an accessor whose count is not a number",
        apply: |j| j["accessors"][0]["count"] = json!("many"),
        pointer: "/accessors/0/count",
        says: "ignored: invalid type",
        triangles: 0,
    },
    Fault {
        name: "a primitive without attributes",
        apply: |j| {
            j["meshes"][0]["primitives"][0].as_object_mut().unwrap().remove("attributes");
        },
        pointer: "/meshes/0/primitives/0",
        says: "missing field `attributes`",
        triangles: 0,
    },
    Fault {
        name: "a primitive with an unknown mode",
        apply: |j| j["meshes"][0]["primitives"][0]["mode"] = json!(99),
        pointer: "/meshes/0/primitives/0",
        says: "invalid mode",
        triangles: 0,
    },
    Fault {
        name: "a mesh whose primitives are not a list",
        apply: |j| j["meshes"][0]["primitives"] = json!({"0": {}}),
        pointer: "/meshes/0",
        says: "missing field `primitives`",
        triangles: 0,
    },
    Fault {
        name: "a version that is not a string",
        apply: |j| j["asset"]["version"] = json!(2.0),
        pointer: "/asset/version",
        says: "read as glTF 2.0",
        triangles: 12,
    },
];

#[test]
fn documents_with_errors_get_a_report_card_with_notes() {
    for f in FAULTS {
        let (mut json, bin) = cube_glb_parts();
        (f.apply)(&mut json);
        let r = report_of(f.name, &json, &bin);
        assert!(
            r.notes.iter().any(|n| n.pointer == f.pointer && n.message.contains(f.says)),
            "{}: want a note at {} saying {:?}, got {:?}",
            f.name,
            f.pointer,
            f.says,
            r.notes
        );
        assert_eq!(triangles(&r), f.triangles, "{}", f.name);
        // What does not need the geometry is measured whatever the fault.
        assert_ne!(check(&r, "SPEC-004").status, Status::Skipped, "{}", f.name);
    }
}

#[test]
fn a_primitive_that_cannot_be_read_skips_only_itself() {
    // Two meshes; the second's POSITION accessor reads past its view.
    let mut doc = Doc::single(cube(1.0));
    let mut far = cube(1.0);
    far.translate([3.0, 0.0, 0.0]);
    doc.meshes.push(crate::testkit::Mesh { primitives: vec![far] });
    doc.nodes.push(crate::testkit::Node { mesh: Some(1), ..Default::default() });
    doc.scene_roots.push(1);
    let (mut json, bin) = doc.to_json(Layout::Glb);
    let pos = json["meshes"][1]["primitives"][0]["attributes"]["POSITION"].as_u64().unwrap() as usize;
    json["accessors"][pos]["count"] = json!(1_000_000);
    let r = report_of("half.glb", &json, &bin);
    assert_eq!(triangles(&r), 12, "the first cube is measured");
    let note = r.notes.iter().find(|n| n.pointer == "/meshes/1/primitives/0").expect("the second is named");
    assert!(note.message.contains(&format!("accessor {pos} needs")), "{}", note.message);
    for id in ["GEO-002", "XFM-001", "PERF-002"] {
        let c = check(&r, id);
        assert_ne!(c.status, Status::Skipped, "{id}");
        let notes = c.measured["notes"].as_array().unwrap_or_else(|| panic!("{id} carries the scene's notes"));
        assert!(notes.iter().any(|n| n.as_str().unwrap().starts_with("/meshes/1/primitives/0")), "{id}: {notes:?}");
    }
}

#[test]
fn a_gltf_buffer_without_uri_skips_what_reads_it() {
    let doc = Doc::single(cube(1.0));
    let (mut json, _) = doc.to_json(Layout::Embedded);
    json["buffers"][0].as_object_mut().unwrap().remove("uri");
    let r = validate_bytes("nouri.gltf", serde_json::to_vec(&json).unwrap()).expect("a report");
    let note = r.notes.iter().find(|n| n.pointer == "/meshes/0/primitives/0").expect("the primitive is named");
    assert!(note.message.contains("no uri"), "{}", note.message);
    let geo = check(&r, "GEO-002");
    assert_eq!(geo.status, Status::Skipped);
    assert!(geo.measured["reason"].as_str().unwrap().starts_with("no primitive could be read: /meshes/0/primitives/0"));
}

#[test]
fn what_is_not_a_gltf_document_is_still_refused() {
    let cases: &[(&str, &[u8], ErrorCode)] = &[
        ("not-json.gltf", b"{ this is not json", ErrorCode::MalformedGltf),
        ("array.gltf", b"[{\"asset\": {\"version\": \"2.0\"}}]", ErrorCode::UnsupportedFormat),
        ("no-asset.gltf", b"{\"nodes\": [{\"mesh\": 0}], \"meshes\": 5}", ErrorCode::MalformedGltf),
        ("asset-not-object.gltf", b"{\"asset\": \"2.0\", \"nodes\": 5}", ErrorCode::MalformedGltf),
        ("gltf1.gltf", b"{\"asset\": {\"version\": \"1.0\"}, \"meshes\": {}}", ErrorCode::UnsupportedFormat),
        ("gltf1-number.gltf", b"{\"asset\": {\"version\": 1}, \"meshes\": {}}", ErrorCode::UnsupportedFormat),
        ("empty-version.gltf", b"{\"asset\": {\"version\": \"\"}, \"meshes\": {}}", ErrorCode::UnsupportedFormat),
    ];
    for (name, bytes, code) in cases {
        let e = validate_bytes(name, bytes.to_vec()).map(|r| r.verdict).unwrap_err();
        assert_eq!(e.code, *code, "{name}: {e}");
    }
}

#[test]
fn a_missing_external_buffer_is_incomplete_only_when_nothing_can_be_measured() {
    // The cube's .gltf without its .bin: nothing to measure.
    let files = Doc::single(cube(1.0)).to_gltf_files("model");
    let gltf: Vec<_> = files.into_iter().filter(|(n, _)| n.ends_with(".gltf")).collect();
    let e = validate_bytes("lonely.zip", crate::testkit::zip(&gltf)).unwrap_err();
    assert_eq!(e.code, ErrorCode::BundleIncomplete, "{e}");
}

#[test]
fn mending_is_bounded_by_the_document() {
    // 20,000 accessors each with a count of the wrong type: each is mended
    // on its own, so the work grows with the document, not its square.
    let (mut json, bin) = cube_glb_parts();
    let accessors = json["accessors"].as_array_mut().unwrap();
    for _ in 0..20_000 {
        accessors.push(json!({"componentType": 5126, "count": "x", "type": "SCALAR"}));
    }
    let started = Instant::now();
    let r = report_of("many-faults.glb", &json, &bin);
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
    assert_eq!(triangles(&r), 12);
    // A note for each ignored count and each unreadable accessor: 40,000, of
    // which the report lists the first 999 and how many more there were.
    assert_eq!(r.notes.len(), meshcheck::engine::MAX_NOTES);
    assert_eq!(r.notes.last().unwrap().message, "39001 more notes are not listed");

    // A list of node indices with 1,000 entries that are not indices: one mend.
    let (mut json, bin) = cube_glb_parts();
    json["nodes"][0]["children"] = Value::Array((0..1000).map(|i| json!(format!("n{i}"))).collect());
    let r = report_of("bad-children.glb", &json, &bin);
    assert_eq!(triangles(&r), 12);
    let notes: Vec<_> = r.notes.iter().filter(|n| n.pointer.starts_with("/nodes/0/children")).collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
}

/// A cube skinned to one joint (node 1), with an inverse bind matrix and
/// JOINTS_0/WEIGHTS_0 as given.
fn skinned_cube(joint: Value, ibm: [f32; 16], weight: f32) -> (Value, Vec<u8>) {
    let (mut json, mut bin) = cube_glb_parts();
    let pos = json["meshes"][0]["primitives"][0]["attributes"]["POSITION"].as_u64().unwrap() as usize;
    let vertices = json["accessors"][pos]["count"].as_u64().unwrap() as usize;
    let mut add = |bytes: Vec<u8>, count: usize, kind: &str, component: u32, json: &mut Value| -> usize {
        while !bin.len().is_multiple_of(4) {
            bin.push(0);
        }
        let at = bin.len();
        bin.extend(&bytes);
        let view = json["bufferViews"].as_array().unwrap().len();
        json["bufferViews"]
            .as_array_mut()
            .unwrap()
            .push(json!({"buffer": 0, "byteOffset": at, "byteLength": bytes.len()}));
        let acc = json["accessors"].as_array().unwrap().len();
        json["accessors"]
            .as_array_mut()
            .unwrap()
            .push(json!({"bufferView": view, "componentType": component, "count": count, "type": kind}));
        acc
    };
    let ibm_acc = add(ibm.iter().flat_map(|f| f.to_le_bytes()).collect(), 1, "MAT4", 5126, &mut json);
    let joints = add(vec![0u8; vertices * 4], vertices, "VEC4", 5121, &mut json);
    let weights: Vec<u8> = (0..vertices).flat_map(|_| [weight, 0.0, 0.0, 0.0]).flat_map(f32::to_le_bytes).collect();
    let weights = add(weights, vertices, "VEC4", 5126, &mut json);
    json["buffers"][0]["byteLength"] = json!(bin.len());
    json["meshes"][0]["primitives"][0]["attributes"]["JOINTS_0"] = json!(joints);
    json["meshes"][0]["primitives"][0]["attributes"]["WEIGHTS_0"] = json!(weights);
    json["nodes"][0]["skin"] = json!(0);
    json["nodes"].as_array_mut().unwrap().push(joint);
    json["scenes"][0]["nodes"].as_array_mut().unwrap().push(json!(1));
    json["skins"] = json!([{"joints": [1], "inverseBindMatrices": ibm_acc}]);
    (json, bin)
}

const IDENTITY: [f32; 16] = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];

fn largest_extent(r: &Report) -> f64 {
    let m = &check(r, "XFM-001").measured;
    m["largest_extent_m"].as_f64().unwrap_or_else(|| panic!("XFM-001 measured: {m:?}"))
}

#[test]
fn a_usable_skin_poses_the_mesh() {
    // The joint moves the cube 2 m up: the pose is used, without a note.
    let (json, bin) = skinned_cube(json!({"translation": [0.0, 2.0, 0.0]}), IDENTITY, 1.0);
    let r = report_of("posed.glb", &json, &bin);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    assert!((largest_extent(&r) - 1.0).abs() < 1e-6);
    assert!(check(&r, "XFM-002").measured.get("notes").is_none());
}

#[test]
fn skins_that_yield_unusable_geometry_fall_back_to_the_bind_pose() {
    let mut nan = IDENTITY;
    nan[12] = f32::NAN;
    let cases: Vec<(&str, Value, [f32; 16], f32, &str)> = vec![
        ("absurd.glb", json!({"translation": [6.0e17, 0.0, 0.0]}), IDENTITY, 1.0, "beyond"),
        ("singular.glb", json!({"scale": [0.0, 0.0, 0.0]}), IDENTITY, 1.0, "singular"),
        ("not-finite.glb", json!({}), nan, 1.0, "not finite"),
        ("zero-weights.glb", json!({"translation": [0.0, 2.0, 0.0]}), IDENTITY, 0.0, "zero skin weights"),
    ];
    for (name, joint, ibm, weight, says) in cases {
        let (json, bin) = skinned_cube(joint, ibm, weight);
        let r = report_of(name, &json, &bin);
        let note =
            r.notes.iter().find(|n| n.pointer == "/nodes/0/skin").unwrap_or_else(|| panic!("{name}: {:?}", r.notes));
        assert!(note.message.contains(says) && note.message.contains("bind pose"), "{name}: {}", note.message);
        // Measured in the bind pose: a 1 m cube, not a 1e17 m one.
        assert!((largest_extent(&r) - 1.0).abs() < 1e-6, "{name}: {}", largest_extent(&r));
        for id in ["XFM-001", "GEO-004", "PERF-001"] {
            let notes = check(&r, id).measured["notes"].as_array().cloned().unwrap_or_default();
            assert!(notes.iter().any(|n| n.as_str().unwrap().contains("bind pose")), "{name}: {id}: {notes:?}");
        }
    }
}

#[test]
fn the_cli_prints_the_report_of_a_document_with_errors_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dangling.glb");
    let (mut json, bin) = cube_glb_parts();
    json["nodes"][0]["mesh"] = json!(7);
    std::fs::write(&path, glb_from_parts(&json, &bin)).unwrap();
    let out = crate::util::run(&["validate", path.to_str().unwrap(), "--format", "json"]);
    // Exit 1: SPEC-001 fails on the validator's error; never 3 (refused).
    assert_eq!(out.status.code(), Some(1), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(v["schema_version"], "1.2");
    assert_eq!(v["notes"][0]["pointer"], "/nodes/0/mesh");
}
