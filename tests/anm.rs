//! The ANM checks (skin influences, animation budget, morph targets) on
//! assets built in code: a testkit cube written as GLB JSON and buffer, with
//! skins, weights, animations and morph targets added here (the testkit's
//! model has none). Each check gets a passing and a non-passing case, the
//! profiles' budgets and severities, the accessor forms the loader decodes
//! (normalised integers, sparse), and malformed parts that must be left out
//! with a note rather than fail the load.

use crate::testkit::{Doc, Layout, cube, glb_from_parts};
use crate::util::{assert_schema_valid, check, validate_with};
use meshcheck::engine::{Options, Selection};
use meshcheck::report::{CheckResult, Report, Severity, Status};
use serde_json::{Value, json};

const FLOAT: u32 = 5126;
const U8: u32 = 5121;
const U16: u32 = 5123;

/// One animation channel: target path, node, interpolation, keyframe times, output values.
type Channel<'a> = (&'a str, usize, &'a str, &'a [f32], &'a [f32]);

/// A cube's GLB JSON and buffer, to which skins, animations and targets are added.
struct Asset {
    json: Value,
    bin: Vec<u8>,
}

impl Asset {
    fn cube() -> Asset {
        let (json, bin) = Doc::single(cube(1.0)).to_json(Layout::Glb);
        Asset { json, bin }
    }

    /// Vertices of the cube's one primitive.
    fn vertices(&self) -> usize {
        let pos = self.json["meshes"][0]["primitives"][0]["attributes"]["POSITION"].as_u64().unwrap() as usize;
        self.json["accessors"][pos]["count"].as_u64().unwrap() as usize
    }

    /// Appends a bufferView holding `bytes`; returns its index.
    fn view(&mut self, bytes: &[u8]) -> usize {
        self.bin.resize(self.bin.len().next_multiple_of(4), 0);
        let views = self.json["bufferViews"].as_array_mut().unwrap();
        views.push(json!({ "buffer": 0, "byteOffset": self.bin.len(), "byteLength": bytes.len() }));
        self.bin.extend_from_slice(bytes);
        views.len() - 1
    }

    /// Appends an accessor (with its own view unless `bytes` is `None`); returns its index.
    fn accessor(&mut self, bytes: Option<&[u8]>, component: u32, ty: &str, count: usize, extra: Value) -> usize {
        let mut acc = json!({ "componentType": component, "type": ty, "count": count });
        if let Some(b) = bytes {
            acc["bufferView"] = json!(self.view(b));
        }
        if let (Value::Object(a), Value::Object(e)) = (&mut acc, extra) {
            a.extend(e);
        }
        let accs = self.json["accessors"].as_array_mut().unwrap();
        accs.push(acc);
        accs.len() - 1
    }

    fn floats(&mut self, values: &[f32], ty: &str, count: usize) -> usize {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.accessor(Some(&bytes), FLOAT, ty, count, json!({}))
    }

    fn attribute(&mut self, name: &str, accessor: usize) {
        self.json["meshes"][0]["primitives"][0]["attributes"][name] = json!(accessor);
    }

    /// A skin of `joints` new nodes (children of the mesh node) on node 0.
    fn skin(&mut self, joints: usize) {
        let nodes = self.json["nodes"].as_array_mut().unwrap();
        let first = nodes.len();
        nodes.extend((0..joints).map(|_| json!({})));
        self.json["nodes"][0]["children"] = json!((first..first + joints).collect::<Vec<_>>());
        self.json["nodes"][0]["skin"] = json!(0);
        self.json["skins"] = json!([{ "joints": (first..first + joints).collect::<Vec<_>>() }]);
    }

    /// WEIGHTS_`set` (floats) and JOINTS_`set` (all joint 0) from per-vertex weights.
    fn weights(&mut self, set: usize, per_vertex: &[[f32; 4]]) {
        let flat: Vec<f32> = per_vertex.iter().flatten().copied().collect();
        let w = self.floats(&flat, "VEC4", per_vertex.len());
        let j = self.accessor(Some(&vec![0u8; per_vertex.len() * 4]), U8, "VEC4", per_vertex.len(), json!({}));
        self.attribute(&format!("WEIGHTS_{set}"), w);
        self.attribute(&format!("JOINTS_{set}"), j);
    }

    /// An animation of (path, node, interpolation, times, values) channels.
    fn animation(&mut self, channels: &[Channel<'_>]) {
        let mut samplers = Vec::new();
        let mut list = Vec::new();
        for (k, (path, node, interpolation, times, values)) in channels.iter().enumerate() {
            let input = self.accessor(
                Some(&times.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()),
                FLOAT,
                "SCALAR",
                times.len(),
                json!({ "min": [times[0]], "max": [times[times.len() - 1]] }),
            );
            let (ty, width) = match *path {
                "rotation" => ("VEC4", 4),
                "weights" => ("SCALAR", 1),
                _ => ("VEC3", 3),
            };
            let output = self.floats(values, ty, values.len() / width);
            samplers.push(json!({ "input": input, "output": output, "interpolation": interpolation }));
            list.push(json!({ "sampler": k, "target": { "node": node, "path": path } }));
        }
        let anims = self.json.as_object_mut().unwrap().entry("animations").or_insert(json!([]));
        anims.as_array_mut().unwrap().push(json!({ "channels": list, "samplers": samplers }));
    }

    /// `n` POSITION morph targets (each moving every vertex up by `k`).
    fn targets(&mut self, n: usize) {
        let v = self.vertices();
        let mut targets = Vec::new();
        for k in 0..n {
            let d: Vec<f32> = (0..v).flat_map(|_| [0.0, k as f32 + 1.0, 0.0]).collect();
            let acc = self.floats(&d, "VEC3", v);
            targets.push(json!({ "POSITION": acc }));
        }
        self.json["meshes"][0]["primitives"][0]["targets"] = json!(targets);
        self.json["meshes"][0]["weights"] = json!(vec![0.0; n]);
    }

    fn glb(&mut self) -> Vec<u8> {
        self.bin.resize(self.bin.len().next_multiple_of(4), 0);
        self.json["buffers"][0]["byteLength"] = json!(self.bin.len());
        glb_from_parts(&self.json, &self.bin)
    }
}

/// Only the ANM checks (no validator run), under a built-in profile.
fn opts(profile: &str) -> Options {
    Options {
        profile: meshcheck::checks::catalog::profile(profile).unwrap(),
        selection: Selection::parse(&["ANM".into()], &[]).unwrap(),
        ..Options::default()
    }
}

fn report(a: &mut Asset, profile: &str) -> Report {
    let r = validate_with("anm.glb", a.glb(), &opts(profile)).expect("the asset loads");
    assert_schema_valid(&serde_json::to_value(&r).unwrap());
    r
}

fn int(c: &CheckResult, key: &str) -> u64 {
    c.measured
        .get(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{} has no integer {key}: {:?}", c.id, c.measured))
}

fn notes(c: &CheckResult) -> Vec<String> {
    c.measured
        .get("notes")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|n| n.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// A skinned cube whose every vertex has `n` non-zero weights (over two sets when n > 4).
fn skinned(n: usize, joints: usize) -> Asset {
    let mut a = Asset::cube();
    let v = a.vertices();
    a.skin(joints);
    let w = 1.0 / n as f32;
    let set = |k: usize| -> [f32; 4] { std::array::from_fn(|i| if k * 4 + i < n { w } else { 0.0 }) };
    a.weights(0, &vec![set(0); v]);
    if n > 4 {
        a.weights(1, &vec![set(1); v]);
    }
    a
}

#[test]
fn nothing_to_measure_is_skipped() {
    let r = report(&mut Asset::cube(), "web");
    for id in ["ANM-001", "ANM-002", "ANM-003"] {
        let c = check(&r, id);
        assert_eq!(c.status, Status::Skipped, "{id}: {}", c.message);
        assert_eq!(c.category, "animation");
    }
}

#[test]
fn four_influences_pass_everywhere() {
    let mut a = skinned(4, 19);
    for profile in ["mobile", "web", "pc", "hero"] {
        let r = report(&mut a, profile);
        let c = check(&r, "ANM-001");
        assert_eq!(c.status, Status::Pass, "{profile}: {}", c.message);
        assert_eq!(int(c, "max_influences"), 4);
        assert_eq!(int(c, "max_joints_per_skin"), 19);
        assert_eq!(int(c, "skins"), 1);
        assert_eq!(int(c, "skinned_primitives"), 1);
        assert_eq!(int(c, "skinned_vertices"), 24);
        assert_eq!(int(c, "vertices_over_budget"), 0);
    }
}

#[test]
fn five_influences_warn_on_web_fail_on_mobile_pass_on_pc() {
    let mut a = skinned(5, 3);
    let web = report(&mut a, "web");
    let c = check(&web, "ANM-001");
    assert_eq!((c.status, c.severity), (Status::Warn, Severity::Warning), "{}", c.message);
    assert_eq!(int(c, "max_influences"), 5);
    assert_eq!(int(c, "vertices_over_budget"), 24);
    assert_eq!(c.threshold["max_skin_influences"], json!(4));
    assert_eq!(c.measured["locations"], json!(["/meshes/0/primitives/0"]));
    let mobile = report(&mut a, "mobile");
    let c = check(&mobile, "ANM-001");
    assert_eq!((c.status, c.severity), (Status::Fail, Severity::Error), "mobile raises ANM-001 to error");
    let pc = report(&mut a, "pc");
    assert_eq!(check(&pc, "ANM-001").status, Status::Pass);
}

#[test]
fn joints_over_the_mobile_budget_fail_there_only() {
    let mut a = skinned(2, 80);
    let c = report(&mut a, "mobile");
    let c = check(&c, "ANM-001");
    assert_eq!(c.status, Status::Fail, "{}", c.message);
    assert_eq!(int(c, "max_joints_per_skin"), 80);
    assert_eq!(c.measured["locations"], json!(["/skins/0"]));
    assert_eq!(check(&report(&mut a, "web"), "ANM-001").status, Status::Pass);
}

#[test]
fn normalised_and_sparse_weights_are_counted_once_decoded() {
    let mut a = Asset::cube();
    let v = a.vertices();
    a.skin(2);
    // Normalised unsigned bytes (KHR_mesh_quantization's form): three non-zero.
    let bytes: Vec<u8> = (0..v).flat_map(|_| [85u8, 85, 85, 0]).collect();
    let w = a.accessor(Some(&bytes), U8, "VEC4", v, json!({ "normalized": true }));
    a.attribute("WEIGHTS_0", w);
    let j = a.accessor(Some(&vec![0u8; v * 4]), U8, "VEC4", v, json!({}));
    a.attribute("JOINTS_0", j);
    // A sparse WEIGHTS_1 with no bufferView: zero but for vertex 5, which gets two more.
    let idx = a.view(&5u16.to_le_bytes());
    let vals = a.view(&[0.5f32, 0.5, 0.0, 0.0].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
    let sparse = json!({ "sparse": { "count": 1, "indices": { "bufferView": idx, "componentType": U16 }, "values": { "bufferView": vals } } });
    let w1 = a.accessor(None, FLOAT, "VEC4", v, sparse);
    a.attribute("WEIGHTS_1", w1);
    a.attribute("JOINTS_1", j);
    let r = report(&mut a, "web");
    let c = check(&r, "ANM-001");
    assert_eq!(int(c, "max_influences"), 5, "{:?}", c.measured);
    assert_eq!(int(c, "vertices_over_budget"), 1);
    assert_eq!(c.status, Status::Warn);
}

#[test]
fn unreadable_weights_are_left_out_with_a_note() {
    let mut a = Asset::cube();
    a.skin(3);
    let v = a.vertices();
    // A weights accessor that claims more elements than its view holds.
    let w = a.accessor(Some(&[0u8; 16]), FLOAT, "VEC4", v, json!({}));
    a.attribute("WEIGHTS_0", w);
    let r = report(&mut a, "web");
    let c = check(&r, "ANM-001");
    assert_eq!(c.status, Status::Pass, "{}", c.message);
    assert_eq!(int(c, "skinned_primitives"), 0);
    assert_eq!(int(c, "max_joints_per_skin"), 3);
    let n = notes(c);
    assert!(n.len() == 1 && n[0].starts_with("/meshes/0/primitives/0:") && n[0].contains("WEIGHTS_0"), "{n:?}");
}

#[test]
fn animation_budget_counts_keyframes_duration_and_static_channels() {
    let mut a = Asset::cube();
    let h = std::f32::consts::FRAC_1_SQRT_2;
    let turn: &[f32] = &[0.0, 0.0, 0.0, 1.0, 0.0, h, 0.0, h, 0.0, 1.0, 0.0, 0.0];
    let still: &[f32] = &[1.0, 2.0, 3.0, 1.0, 2.0, 3.00005, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0];
    a.animation(&[
        ("rotation", 0, "LINEAR", &[0.0, 1.0, 2.0], turn),
        ("translation", 0, "STEP", &[0.5, 1.0, 2.0, 2.5], still),
    ]);
    // A second clip, cubic: a constant value with zero tangents is static too.
    let cubic: &[f32] = &[0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0];
    a.animation(&[("scale", 0, "CUBICSPLINE", &[1.0, 4.0], cubic)]);
    let r = report(&mut a, "web");
    let c = check(&r, "ANM-002");
    assert_eq!((c.status, c.severity), (Status::Pass, Severity::Info), "{}", c.message);
    assert_eq!(int(c, "animations"), 2);
    assert_eq!(int(c, "channels"), 3);
    assert_eq!(int(c, "samplers"), 3);
    assert_eq!(int(c, "keyframes"), 3 + 4 + 2);
    assert_eq!(c.measured["duration_s"], json!(3), "the second clip runs 1 s to 4 s");
    assert_eq!(int(c, "static_channels"), 2);
    assert_eq!(c.measured["locations"], json!(["/animations/0/channels/1", "/animations/1/channels/0"]));
    assert!(c.threshold.is_empty());
}

#[test]
fn a_moving_tangent_or_value_is_not_static() {
    let mut a = Asset::cube();
    let cubic: &[f32] = &[0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0];
    let moving: &[f32] = &[1.0, 2.0, 3.0, 1.0, 2.001, 3.0];
    a.animation(&[("scale", 0, "CUBICSPLINE", &[1.0, 4.0], cubic), ("translation", 0, "LINEAR", &[0.0, 1.0], moving)]);
    let r = report(&mut a, "web");
    assert_eq!(int(check(&r, "ANM-002"), "static_channels"), 0);
}

#[test]
fn malformed_samplers_are_left_out_with_notes() {
    let mut a = Asset::cube();
    let still: &[f32] = &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0];
    a.animation(&[("translation", 0, "LINEAR", &[0.0, 1.0], still), ("translation", 0, "LINEAR", &[0.0, 1.0], still)]);
    // Channel 1 names a sampler that does not exist; sampler 0's output is one value short.
    a.json["animations"][0]["channels"][1]["sampler"] = json!(7);
    let out = a.json["animations"][0]["samplers"][0]["output"].as_u64().unwrap() as usize;
    a.json["accessors"][out]["count"] = json!(1);
    // A second clip whose input accessor does not exist.
    a.animation(&[("translation", 0, "LINEAR", &[0.0, 1.0], still)]);
    a.json["animations"][1]["samplers"][0]["input"] = json!(999);
    let r = report(&mut a, "web");
    let c = check(&r, "ANM-002");
    assert_eq!(c.status, Status::Pass, "{}", c.message);
    assert_eq!(int(c, "channels"), 3);
    assert_eq!(int(c, "keyframes"), 4, "the unreadable input's keyframes are left out");
    assert_eq!(int(c, "static_channels"), 0);
    let n = notes(c);
    assert!(n.iter().any(|s| s.starts_with("/animations/0/channels/1:") && s.contains("sampler 7")), "{n:?}");
    assert!(n.iter().any(|s| s.starts_with("/animations/0/samplers/0:") && s.contains("does not divide")), "{n:?}");
    assert!(n.iter().any(|s| s.starts_with("/animations/1/samplers/0:") && s.contains("input")), "{n:?}");
}

#[test]
fn morph_targets_against_the_budget() {
    let mut a = Asset::cube();
    a.targets(2);
    let r = report(&mut a, "web");
    let c = check(&r, "ANM-003");
    assert_eq!(c.status, Status::Pass, "{}", c.message);
    assert_eq!(int(c, "max_targets"), 2);
    assert_eq!(int(c, "morph_bytes"), 2 * 24 * 12);
    assert_eq!(int(c, "meshes_with_targets"), 1);

    let mut a = Asset::cube();
    a.targets(9);
    let r = report(&mut a, "web");
    let c = check(&r, "ANM-003");
    assert_eq!((c.status, c.severity), (Status::Warn, Severity::Warning), "{}", c.message);
    assert_eq!(int(c, "max_targets"), 9);
    assert_eq!(int(c, "morph_bytes"), 9 * 24 * 12);
    assert_eq!(int(c, "target_accessors"), 9);
    assert_eq!(c.measured["locations"], json!(["/meshes/0"]));
    assert_eq!(c.threshold["max_morph_targets"], json!(8));
    assert_eq!(check(&report(&mut a, "pc"), "ANM-003").status, Status::Pass);
}

#[test]
fn shared_target_accessors_count_once_and_missing_ones_are_noted() {
    let mut a = Asset::cube();
    a.targets(2);
    let first = a.json["meshes"][0]["primitives"][0]["targets"][0]["POSITION"].clone();
    a.json["meshes"][0]["primitives"][0]["targets"][1]["POSITION"] = first;
    a.json["meshes"][0]["primitives"][0]["targets"][1]["NORMAL"] = json!(999);
    let r = report(&mut a, "web");
    let c = check(&r, "ANM-003");
    assert_eq!(int(c, "max_targets"), 2);
    assert_eq!(int(c, "target_accessors"), 1);
    assert_eq!(int(c, "morph_bytes"), 24 * 12);
    assert!(notes(c).iter().any(|n| n.contains("accessor 999")), "{:?}", notes(c));
}

#[test]
fn only_and_skip_select_the_family() {
    let mut a = skinned(5, 3);
    let bytes = a.glb();
    let only = Options { selection: Selection::parse(&["ANM-001".into()], &[]).unwrap(), ..Options::default() };
    let r = validate_with("anm.glb", bytes.clone(), &only).unwrap();
    for c in &r.checks {
        assert_eq!(c.status == Status::Skipped, c.id != "ANM-001", "{} {:?}", c.id, c.status);
    }
    let skip = Options {
        selection: Selection::parse(&["animation".into()], &["ANM-002".into()]).unwrap(),
        ..Options::default()
    };
    let r = validate_with("anm.glb", bytes, &skip).unwrap();
    assert_eq!(check(&r, "ANM-001").status, Status::Warn);
    assert_eq!(check(&r, "ANM-002").message, "skipped: not selected");
}

/// The shared Khronos samples, checked by hand against their JSON and
/// accessors (tests/crosscheck_anm.py compares every key on every asset).
#[test]
fn khronos_samples() {
    let load = |rel: &str, profile: &str| {
        let input = meshcheck::asset::Input::from_path(&crate::util::model(rel)).unwrap();
        meshcheck::engine::validate(input, &opts(profile)).unwrap()
    };
    let r = load("khronos-sample-models/CesiumMan.glb", "mobile");
    let c = check(&r, "ANM-001");
    assert_eq!((int(c, "max_joints_per_skin"), int(c, "max_influences")), (19, 4));
    assert_eq!(c.status, Status::Pass, "19 joints and 4 weights fit the mobile budget");
    let c = check(&r, "ANM-002");
    assert_eq!((int(c, "channels"), int(c, "keyframes"), int(c, "static_channels")), (57, 2793, 37));
    assert_eq!(c.measured["duration_s"], json!(2));

    let r = load("khronos-sample-models/AnimatedMorphCube.glb", "web");
    let c = check(&r, "ANM-003");
    assert_eq!(
        (int(c, "max_targets"), int(c, "morph_bytes")),
        (2, 1728),
        "two targets of POSITION and NORMAL, 24 vertices"
    );
    assert_eq!(check(&r, "ANM-001").status, Status::Skipped);

    let r = load("khronos-sample-models/MorphStressTest.zip", "web");
    assert_eq!((check(&r, "ANM-003").status, int(check(&r, "ANM-003"), "max_targets")), (Status::Pass, 8));

    let r = load("khronos-sample-models/Fox.glb", "web");
    let c = check(&r, "ANM-002");
    assert_eq!((int(c, "animations"), int(c, "channels"), int(c, "keyframes")), (3, 63, 2646));
}

/// The ANM family's cost on the engine benchmark's sphere (1,000,000
/// triangles, 501,002 vertices), plain and with two weight sets on every
/// vertex and a 64-channel, 1,000-keyframe animation: the load-time read
/// (`asset::anim::read`, timed alone on the parsed document) and the three
/// checks. Prints medians of 5; BENCHMARKS.md quotes them. Run with
/// `cargo test --release --test tests anm::cost -- --ignored --nocapture`.
#[test]
#[ignore]
fn cost() {
    use meshcheck::asset::{anim, data, glb, json as gjson};
    use std::time::{Duration, Instant};
    let median = |mut d: Vec<Duration>| {
        d.sort();
        d[d.len() / 2]
    };
    let plain = {
        let (json, bin) = Doc::single(crate::testkit::sphere(1000, 501, 1.0)).to_json(Layout::Glb);
        Asset { json, bin }
    };
    let mut skinned = Asset { json: plain.json.clone(), bin: plain.bin.clone() };
    let v = skinned.vertices();
    let joints: Vec<Value> = (0..64).map(|_| json!({})).collect();
    skinned.json["nodes"].as_array_mut().unwrap().extend(joints);
    skinned.json["skins"] = json!([{ "joints": (1..65).collect::<Vec<_>>() }]);
    skinned.weights(0, &vec![[0.4, 0.3, 0.2, 0.1]; v]);
    skinned.weights(1, &vec![[0.0, 0.0, 0.0, 0.0]; v]);
    let times: Vec<f32> = (0..1000).map(|k| k as f32 / 30.0).collect();
    let values: Vec<f32> = (0..3000).map(|k| (k % 7) as f32).collect();
    let channels: Vec<Channel<'_>> = (1..65).map(|n| ("translation", n, "LINEAR", &times[..], &values[..])).collect();
    skinned.animation(&channels);
    for (name, a) in
        [("plain", &mut Asset { json: plain.json.clone(), bin: plain.bin.clone() }), ("skinned", &mut skinned)]
    {
        let bytes = a.glb();
        let g = glb::parse(&bytes).unwrap();
        let root = gjson::read(g.json).unwrap().root;
        let read: Vec<Duration> = (0..5)
            .map(|_| {
                let buffers = vec![data::BufferData::Loaded(std::borrow::Cow::Borrowed(g.bin.unwrap()))];
                let doc = data::DocData::new(&root, buffers, u64::MAX);
                let t = Instant::now();
                std::hint::black_box(anim::read(&doc));
                t.elapsed()
            })
            .collect();
        let input = || meshcheck::asset::Input::from_bytes("s.glb", bytes.clone());
        let loads: Vec<Duration> = (0..5)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(meshcheck::asset::load(input()).unwrap());
                t.elapsed()
            })
            .collect();
        let asset = meshcheck::asset::load(input()).unwrap();
        let o = opts("web");
        let checks: Vec<Duration> = (0..5)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(meshcheck::engine::report_for(&asset, &o));
                t.elapsed()
            })
            .collect();
        println!(
            "{name}: {} bytes; anim::read {:.2} ms; whole load {:.1} ms; ANM checks {:.3} ms",
            bytes.len(),
            median(read).as_secs_f64() * 1e3,
            median(loads).as_secs_f64() * 1e3,
            median(checks).as_secs_f64() * 1e3
        );
    }
}
