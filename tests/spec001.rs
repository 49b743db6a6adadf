//! SPEC-001 against the reference: the Khronos validator-suite's expected
//! reports, the validator run bare in Node (benches/validator_direct.js), the
//! corpus manifest's recorded totals; plus timeouts, crashes and a missing install.

use crate::util::{self, check, measured_f64};
use meshcheck::asset::Input;
use meshcheck::engine::{self, Options};
use meshcheck::report::Status;
use meshcheck::validator::{Install, Validator};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Suite inputs whose expected report (made by another build of the
/// validator) differs from what the pinned npm build says; for these
/// SPEC-001 is compared with the pinned build run bare in Node.
const VERSION_DIFFERENCES: &[(&str, &str)] = &[
    (
        "accessor_data/out_of_range_elements_float.gltf",
        "the Dart VM build prints whole floats as 0.0; the npm (dart2js) build prints 0",
    ),
    ("animation_data/invalid_input_values.gltf", "whole floats printed without .0 by the npm build"),
    ("mesh_data/joints_weights_complex.gltf", "whole floats printed without .0 by the npm build"),
    ("mesh_data/normals_tangents_non_unit_invalid_sign.gltf", "whole floats printed without .0 by the npm build"),
    ("skin_data/invalid_ibm.gltf", "whole floats printed without .0 by the npm build"),
    ("glb/invalid_json_chunk.glb", "the npm build parses JSON with V8, whose syntax-error text differs"),
    (
        "buffer/non_relative_uri.gltf",
        "the npm build asks the host for non-relative URIs; meshcheck never fetches remote URIs, so the validator records IO_ERROR",
    ),
    (
        "glb/empty_file.glb",
        "the npm build rejects an empty input outright (\"could not detect glTF format\") instead of reporting",
    ),
    ("json/empty_file.gltf", "the npm build rejects an empty input outright instead of reporting"),
    ("glb/no_header.glb", "the npm build rejects input it cannot detect as glTF instead of reporting"),
    ("json/invalid_object.gltf", "the npm build rejects input it cannot detect as glTF instead of reporting"),
];

fn suite_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![util::assets().join("validator-suite/test")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "gltf" || x == "glb") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

type Msg = (String, String, String);

fn triples(messages: &[Value]) -> Vec<Msg> {
    messages
        .iter()
        .map(|m| {
            let loc = m.get("pointer").or_else(|| m.get("offset")).map(|v| v.to_string()).unwrap_or_default();
            (m["code"].as_str().unwrap_or_default().into(), m["message"].as_str().unwrap_or_default().into(), loc)
        })
        .collect()
}

/// SPEC-001's messages and totals, or the validator messages carried by a refusal.
fn ours(path: &Path) -> (Vec<Msg>, Option<[u64; 4]>) {
    match engine::validate(Input::from_path(path).unwrap(), &Options::default()) {
        Ok(r) => {
            let c = check(&r, "SPEC-001");
            assert_ne!(c.status, Status::Skipped, "{}: {:?}", path.display(), c.measured);
            let m = &c.measured;
            let totals = ["errors", "warnings", "infos", "hints"].map(|k| m[k].as_u64().unwrap());
            (triples(m["messages"].as_array().unwrap()), Some(totals))
        }
        Err(e) => {
            let d = e.detail.map(|d| *d).unwrap_or(Value::Null);
            (triples(d.get("validator_messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])), None)
        }
    }
}

fn bare_node(paths: &[PathBuf]) -> Vec<Value> {
    let out = std::process::Command::new("node")
        .arg(util::root().join("benches/validator_direct.js"))
        .args(paths)
        .output()
        .expect("node runs");
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn validator_suite_matches_expected_reports() {
    let files: Vec<PathBuf> =
        suite_files().into_iter().filter(|f| Path::new(&format!("{}.report.json", f.display())).exists()).collect();
    assert!(files.len() > 100);
    let mut compared_with_bare = Vec::new();
    for f in &files {
        let rel = f.to_string_lossy();
        let exception = VERSION_DIFFERENCES.iter().find(|(name, _)| rel.ends_with(name));
        let (got, totals) = ours(f);
        if exception.is_some() {
            compared_with_bare.push(f.clone());
            continue;
        }
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{}.report.json", f.display())).unwrap()).unwrap();
        let issues = &expected["issues"];
        let want: Vec<Value> = issues["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["severity"].as_u64().unwrap() <= 1)
            .cloned()
            .collect();
        assert_eq!(got, triples(&want), "{rel}: messages differ from the expected report");
        if let Some(t) = totals {
            let want = ["numErrors", "numWarnings", "numInfos", "numHints"].map(|k| issues[k].as_u64().unwrap());
            assert_eq!(t, want, "{rel}: totals differ");
        }
    }
    // The listed inputs match the pinned validator run bare in Node.
    for (f, bare) in compared_with_bare.iter().zip(bare_node(&compared_with_bare)) {
        let (got, totals) = ours(f);
        if bare.get("error").is_some() {
            assert!(got.is_empty(), "{}: the bare validator refused it; so does SPEC-001", f.display());
            continue;
        }
        assert_eq!(got, triples(bare["messages"].as_array().unwrap()), "{}", f.display());
        if let Some(t) = totals {
            assert_eq!(
                t,
                ["errors", "warnings", "infos", "hints"].map(|k| bare[k].as_u64().unwrap()),
                "{}",
                f.display()
            );
        }
    }
    assert_eq!(compared_with_bare.len(), VERSION_DIFFERENCES.len(), "every listed difference is a suite input");
}

#[test]
fn every_model_gets_spec001_as_the_manifest_recorded() {
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(util::assets().join("MANIFEST.json")).unwrap()).unwrap();
    let mut seen = 0;
    for entry in manifest["files"].as_array().unwrap() {
        let path = entry["path"].as_str().unwrap();
        let Some(kv) = entry.get("khronos_validator").filter(|k| k.is_object()) else { continue };
        if !path.starts_with("models/") || kv.get("numErrors").is_none() {
            continue;
        }
        let r = util::validate_path(&util::assets().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        let c = check(&r, "SPEC-001");
        for (ours, theirs) in
            [("errors", "numErrors"), ("warnings", "numWarnings"), ("infos", "numInfos"), ("hints", "numHints")]
        {
            assert_eq!(measured_f64(c, ours) as u64, kv[theirs].as_u64().unwrap(), "{path}: {ours}");
        }
        assert_eq!(r.validator.as_ref().unwrap().version, "2.0.0-dev.3.10");
        seen += 1;
    }
    assert!(seen >= 55, "only {seen} models compared");
    // The Node_NegativeScale bundles lack one image: the validator's IO_ERROR, verbatim.
    for n in ["01", "04", "05"] {
        let r =
            util::validate_path(&util::model(&format!("khronos-asset-generator/Node_NegativeScale_{n}.zip"))).unwrap();
        let c = check(&r, "SPEC-001");
        assert_eq!(c.status, Status::Fail);
        let io: Vec<&Value> =
            c.measured["messages"].as_array().unwrap().iter().filter(|m| m["code"] == "IO_ERROR").collect();
        assert_eq!(io.len(), 1);
        assert_eq!(io[0]["pointer"], "/images/1/uri");
        assert!(io[0]["message"].as_str().unwrap().contains("Textures/MetallicRoughness_Nodes.png"));
        assert!(!io[0]["message"].as_str().unwrap().contains("/work"), "no local paths in messages");
    }
}

#[test]
fn compressed_data_is_listed_as_not_covered() {
    let r = util::validate_path(&util::model("other/BoxDraco.zip")).unwrap();
    let c = check(&r, "SPEC-001");
    assert!(c.measured["not_covered"].as_array().unwrap().contains(&Value::from("KHR_draco_mesh_compression")));
    let r = util::validate_path(&util::model("other/BoxMeshopt.glb")).unwrap();
    let nc = check(&r, "SPEC-001").measured["not_covered"].clone();
    assert!(nc.as_array().unwrap().contains(&Value::from("EXT_meshopt_compression")), "{nc}");
    let r = util::validate_path(&util::model("khronos-sample-models/Box.glb")).unwrap();
    assert_eq!(check(&r, "SPEC-001").measured["not_covered"], serde_json::json!([]));
}

#[test]
fn malformed_input_carries_the_validators_messages() {
    let f = util::assets().join("validator-suite/test/base/data/root/empty_object.gltf");
    let e = engine::validate(Input::from_path(&f).unwrap(), &Options::default()).unwrap_err();
    assert_eq!(e.code, meshcheck::error::ErrorCode::MalformedGltf);
    let d = e.detail.unwrap();
    assert!(d["validator_errors"].as_u64().unwrap() >= 1);
    assert_eq!(d["validator_messages"][0]["code"], "UNDEFINED_PROPERTY");
}

/// A fake validator package: a real Node module with the same API whose
/// `validateBytes` does what `body` says (hang, crash, or answer).
fn fake_package(body: &str) -> (tempfile::TempDir, Install) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("package.json"), r#"{"name":"gltf-validator","version":"0.0.0-fake"}"#).unwrap();
    let js = format!(
        "exports.version = () => '0.0.0-fake';\nexports.supportedExtensions = () => [];\nexports.validateBytes = (data, options) => {{ {body} }};\n"
    );
    std::fs::write(dir.path().join("index.js"), js).unwrap();
    let node = meshcheck::validator::locate().expect("node and the package are installed for the tests").node;
    let install = Install { node, package: dir.path().to_path_buf() };
    (dir, install)
}

fn opts_with(v: Arc<Validator>) -> Options {
    Options { validator: Some(v), ..Options::default() }
}

fn box_glb() -> Vec<u8> {
    crate::testkit::Doc::single(crate::testkit::cube(1.0)).to_glb()
}

#[test]
fn a_validation_begun_ahead_is_taken_by_the_same_request_only() {
    use meshcheck::asset::bundle::DirResolver;
    use meshcheck::validator::{Main, MainBytes};
    // The fake validator names each outcome by the name it was given, the
    // bytes it read and its count of validations so far (one process).
    let (_pkg, install) = fake_package(
        "globalThis.n = (globalThis.n || 0) + 1; return Promise.resolve({validatorVersion: options.uri + '-' + data.length + '-' + globalThis.n, issues: {numErrors: 0, numWarnings: 0, numInfos: 0, numHints: 0, messages: []}, info: {}});",
    );
    let v = Arc::new(Validator::with_install(install, Duration::from_secs(30)).unwrap());
    v.limit(1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cube.glb");
    let glb = box_glb();
    std::fs::write(&path, &glb).unwrap();
    let bytes = Arc::new(meshcheck::asset::bytes::Bytes::from(glb.clone()));
    let resolver = || Arc::new(DirResolver::new(dir.path()));
    let main = Main { bytes: MainBytes::Held(&bytes), path: Some(&path) };

    v.begin_ahead("cube.glb".into(), path.clone(), bytes.clone(), resolver());
    let first = v.validate_main("cube.glb", main, resolver().as_ref()).unwrap();
    assert_eq!(first.validator_version, format!("cube.glb-{}-1", glb.len()));
    // Nothing was validated twice: the next validation is the second.
    std::thread::sleep(Duration::from_millis(300));
    let probe = v.validate("probe.glb", b"glTF", &meshcheck::asset::bundle::NoResources).unwrap();
    assert_eq!(probe.validator_version, "probe.glb-4-2", "the file was validated once");

    // Begun ahead for other bytes than the request's (the file changed in
    // between): that outcome is not taken, the request is validated.
    v.begin_ahead("cube.glb".into(), path.clone(), Arc::new(b"other".to_vec().into()), resolver());
    let third = v.validate_main("cube.glb", main, resolver().as_ref()).unwrap();
    assert!(third.validator_version.starts_with(&format!("cube.glb-{}-", glb.len())), "{}", third.validator_version);
    // Nor for another name.
    v.begin_ahead("other.glb".into(), path.clone(), bytes.clone(), resolver());
    let fourth = v.validate_main("cube.glb", main, resolver().as_ref()).unwrap();
    assert!(fourth.validator_version.starts_with("cube.glb-"), "{}", fourth.validator_version);
}

#[test]
fn validations_begun_ahead_are_capped() {
    use meshcheck::asset::bundle::NoResources;
    // Counting as above: 20 files begun ahead and never asked for start 16
    // validations, the pending cap; the probe after them is the 17th.
    let (_pkg, install) = fake_package(
        "globalThis.n = (globalThis.n || 0) + 1; return Promise.resolve({validatorVersion: 'n' + globalThis.n, issues: {numErrors: 0, numWarnings: 0, numInfos: 0, numHints: 0, messages: []}, info: {}});",
    );
    let v = Arc::new(Validator::with_install(install, Duration::from_secs(30)).unwrap());
    v.limit(1);
    let dir = tempfile::tempdir().unwrap();
    let bytes = Arc::new(meshcheck::asset::bytes::Bytes::from(box_glb()));
    for i in 0..20 {
        let path = dir.path().join(format!("f{i}.glb"));
        std::fs::write(&path, &*bytes).unwrap();
        v.begin_ahead(format!("f{i}.glb"), path, bytes.clone(), Arc::new(NoResources));
    }
    std::thread::sleep(Duration::from_millis(1000));
    let probe = v.validate("probe.glb", b"glTF", &NoResources).unwrap();
    assert_eq!(probe.validator_version, "n17");
}

#[test]
fn a_stuck_validator_is_killed_and_spec001_skips() {
    let (_dir, install) = fake_package(
        "if (data.length > 1000) return new Promise(() => {}); return Promise.resolve({validatorVersion: 'fake', issues: {numErrors: 0, numWarnings: 0, numInfos: 0, numHints: 0, messages: []}, info: {}});",
    );
    let v = Arc::new(Validator::with_install(install, Duration::from_millis(500)).unwrap());
    let started = std::time::Instant::now();
    let r = engine::validate(Input::from_bytes("box.glb", box_glb()), &opts_with(v.clone())).unwrap();
    let c = check(&r, "SPEC-001");
    assert_eq!(c.status, Status::Skipped);
    assert_eq!(c.measured["reason"], "validator timed out");
    assert!(started.elapsed() < Duration::from_secs(10));
    // The other checks still ran.
    assert_eq!(check(&r, "PERF-001").status, Status::Pass);
    // A fresh process serves the next file.
    let tiny = br#"{"asset":{"version":"2.0"}}"#.to_vec();
    let r = engine::validate(Input::from_bytes("tiny.gltf", tiny), &opts_with(v)).unwrap();
    assert_eq!(check(&r, "SPEC-001").status, Status::Pass);
}

#[test]
fn a_crashed_validator_is_restarted() {
    let (_dir, install) = fake_package(
        "if (data.length > 1000) process.exit(3); return Promise.resolve({validatorVersion: 'fake', issues: {numErrors: 1, numWarnings: 0, numInfos: 0, numHints: 0, messages: [{code: 'X', message: 'x', severity: 0, pointer: '/'}]}, info: {}});",
    );
    let v = Arc::new(Validator::with_install(install, Duration::from_secs(20)).unwrap());
    let r = engine::validate(Input::from_bytes("box.glb", box_glb()), &opts_with(v.clone())).unwrap();
    let c = check(&r, "SPEC-001");
    assert_eq!(c.status, Status::Skipped);
    assert!(c.measured["reason"].as_str().unwrap().starts_with("validator crashed"), "{:?}", c.measured);
    let tiny = br#"{"asset":{"version":"2.0"}}"#.to_vec();
    let r = engine::validate(Input::from_bytes("tiny.gltf", tiny), &opts_with(v)).unwrap();
    let c = check(&r, "SPEC-001");
    assert_eq!(c.status, Status::Fail, "the restarted process answered");
    assert_eq!(c.measured["messages"][0]["code"], "X");
}

/// `n` validations at once on `v`, from threads, each of `files[k % len]`;
/// their outcomes in order.
fn at_once(
    v: &Arc<Validator>,
    files: &[(&str, Vec<u8>)],
    n: usize,
) -> Vec<Result<meshcheck::validator::Findings, meshcheck::validator::Failure>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|k| {
                let (name, bytes) = &files[k % files.len()];
                let v = v.clone();
                let h = s.spawn(move || v.validate(name, bytes, &meshcheck::asset::bundle::NoResources));
                // Sent in order: the driver's queue is the order of arrival.
                std::thread::sleep(Duration::from_millis(30));
                h
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn validations_queue_on_one_process_and_each_gets_its_own_answer() {
    // One process, eight files in flight: each answer is its own file's
    // (the errors differ), as the same files one at a time give.
    let v = Arc::new(Validator::start(Duration::from_secs(60)).unwrap());
    v.limit(1);
    let clean = box_glb();
    let broken = br#"{"asset":{"version":"2.0"},"nodes":[{"mesh":7}]}"#.to_vec();
    let files = [("clean.glb", clean), ("broken.gltf", broken)];
    let alone: Vec<_> =
        files.iter().map(|(n, b)| v.validate(n, b, &meshcheck::asset::bundle::NoResources).unwrap()).collect();
    assert_eq!(alone[0].errors, 0);
    assert!(alone[1].errors >= 1, "{:?}", alone[1]);
    for (k, r) in at_once(&v, &files, 8).into_iter().enumerate() {
        assert_eq!(r.unwrap(), alone[k % 2], "validation {k}");
    }
}

#[test]
fn files_queued_behind_a_stuck_or_crashing_one_are_validated_elsewhere() {
    // The first file hangs (or kills Node); the three queued behind it on
    // the same process had not begun: they are answered by a new process.
    for (body, first) in
        [("return new Promise(() => {});", "validator timed out"), ("process.exit(3);", "validator crashed")]
    {
        let (_dir, install) = fake_package(&format!(
            "if (data.length > 1000) {{ {body} }} return Promise.resolve({{validatorVersion: 'fake', issues: {{numErrors: 0, numWarnings: 0, numInfos: 0, numHints: 0, messages: []}}, info: {{}}}});"
        ));
        let v = Arc::new(Validator::with_install(install, Duration::from_millis(1500)).unwrap());
        v.ready().unwrap();
        v.limit(1);
        let tiny = br#"{"asset":{"version":"2.0"}}"#.to_vec();
        let files =
            [("box.glb", box_glb()), ("tiny.gltf", tiny.clone()), ("tiny.gltf", tiny.clone()), ("tiny.gltf", tiny)];
        let out = at_once(&v, &files, 4);
        let reason = out[0].as_ref().unwrap_err().reason();
        assert!(reason.starts_with(first), "{reason}");
        for r in &out[1..] {
            assert_eq!(r.as_ref().unwrap().errors, 0, "{r:?}");
        }
    }
}

#[test]
fn a_missing_install_is_an_environment_error_with_the_fix() {
    let box_path = util::model("khronos-sample-models/Box.glb");
    let out = util::bin()
        .args(["validate", box_path.to_str().unwrap()])
        .env("MESHCHECK_GLTF_VALIDATOR", "/nonexistent/gltf-validator")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("npm ci") && err.contains("--skip SPEC-001"), "{err}");
    // Skipping SPEC-001 on purpose runs without it.
    let out = util::bin()
        .args(["validate", box_path.to_str().unwrap(), "--skip", "SPEC-001"])
        .env("MESHCHECK_GLTF_VALIDATOR", "/nonexistent/gltf-validator")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["validator"], Value::Null);
    // No node at all.
    let out = util::bin().args(["validate", box_path.to_str().unwrap()]).env("PATH", "/nonexistent").output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Node.js"));
}

#[test]
fn folder_runs_reuse_warm_processes() {
    // Ten files through one pool: each is validated by a warm process, fast.
    let v = Validator::global().unwrap();
    let bytes = box_glb();
    let started = std::time::Instant::now();
    for i in 0..10 {
        let r = v.validate(&format!("box{i}.glb"), &bytes, &meshcheck::asset::bundle::NoResources).unwrap();
        assert_eq!(r.errors, 0);
    }
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[test]
fn node_runs_with_the_drivers_options() {
    // Node rejects an option it does not know at start, and would then never
    // say ready; one it dropped would be missing from its execArgv.
    let v = Validator::global().unwrap();
    let hello = v.ready().unwrap();
    assert_eq!(hello.node_flags, meshcheck::validator::NODE_FLAGS);
    assert!(hello.node_flags.iter().any(|f| f == "--single-threaded-gc"), "{:?}", hello.node_flags);
    assert_eq!(hello.v8_flags, meshcheck::validator::V8_FLAGS);
    assert!(hello.v8_flags.iter().any(|f| f == "--interrupt-budget=270336"), "{:?}", hello.v8_flags);
}

#[test]
fn a_v8_option_that_node_does_not_know_does_not_stop_the_driver() {
    use std::io::Read;
    // The driver run as meshcheck runs it, with an option no V8 has before
    // the real one: it still says ready, listing both.
    let install = meshcheck::validator::locate().unwrap();
    let mut child =
        meshcheck::validator::driver_command(&install, &["--no-such-v8-option-here", "--interrupt-budget=270336"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut head = [0u8; 8];
    out.read_exact(&mut head).unwrap();
    let json_len = u32::from_le_bytes(head[4..8].try_into().unwrap()) as usize;
    let mut json = vec![0u8; json_len];
    out.read_exact(&mut json).unwrap();
    let ready: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(ready["type"], "ready", "{ready}");
    assert_eq!(ready["v8_flags"], serde_json::json!(["--no-such-v8-option-here", "--interrupt-budget=270336"]));
    // V8 said so on stderr, which meshcheck discards.
    drop(child.stdin.take());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let _ = child.wait();
    assert!(err.contains("no-such-v8-option-here"), "{err}");
}

/// The members of a shared zip bundle, by name.
fn bundle_files(rel: &str) -> Vec<(String, Vec<u8>)> {
    let bytes = std::fs::read(util::model(rel)).unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    (0..archive.len())
        .map(|i| {
            let mut f = archive.by_index(i).unwrap();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut data).unwrap();
            (f.name().unwrap().to_string(), data)
        })
        .filter(|(n, _)| !n.ends_with('/'))
        .collect()
}

#[test]
fn a_draco_stream_that_does_not_decode_skips_the_primitive_by_its_pointer() {
    let mut files = bundle_files("other/BoxDraco.zip");
    let bin = files.iter_mut().find(|(n, _)| n.ends_with(".bin")).unwrap();
    // Keep the Draco header, scramble the connectivity and attribute data after it.
    for b in bin.1.iter_mut().skip(12) {
        *b = b.wrapping_mul(31).wrapping_add(7);
    }
    let zipped = crate::testkit::zip(&files);
    let r = util::validate_bytes("BoxDraco-broken.zip", zipped).unwrap();
    let note = r.notes.iter().find(|n| n.pointer == "/meshes/0/primitives/0").expect("a note on the primitive");
    assert!(note.message.contains("the Draco stream does not decode"), "{}", note.message);
    let geo = util::check(&r, "GEO-002");
    assert_eq!(geo.status, meshcheck::report::Status::Skipped);
    assert!(geo.measured["reason"].as_str().unwrap().contains("/meshes/0/primitives/0"));
}

#[test]
fn a_meshopt_stream_that_does_not_decode_skips_the_primitive() {
    let bytes = std::fs::read(util::model("other/BoxMeshopt.glb")).unwrap();
    let glb = meshcheck::asset::glb::parse(&bytes).unwrap();
    let json: Value = serde_json::from_slice(glb.json).unwrap();
    let mut bin = glb.bin.unwrap().to_vec();
    for b in bin.iter_mut() {
        *b = b.wrapping_mul(31).wrapping_add(7);
    }
    let r = util::validate_bytes("broken.glb", crate::testkit::glb_from_parts(&json, &bin)).unwrap();
    let unread: Vec<_> = r.notes.iter().filter(|n| n.pointer.starts_with("/meshes/")).collect();
    assert!(!unread.is_empty(), "{:?}", r.notes);
    assert!(unread.iter().all(|n| n.message.contains("EXT_meshopt_compression")), "{unread:?}");
    assert_eq!(util::check(&r, "PERF-001").status, meshcheck::report::Status::Skipped);
}

#[test]
fn a_million_messages_are_folded() {
    // 3,000 triangles naming vertices that do not exist: one validator error each index.
    let mut prim = crate::testkit::quad(1.0);
    prim.indices = Some((0..9_000u32).map(|i| 100 + i).collect());
    let r = util::validate_bytes("oob.glb", crate::testkit::Doc::single(prim).to_glb()).unwrap();
    let c = check(&r, "SPEC-001");
    assert_eq!(c.status, Status::Fail);
    assert!(measured_f64(c, "errors") >= 9_000.0);
    assert_eq!(c.measured["messages"].as_array().unwrap().len(), 1_000);
    assert_eq!(c.measured["truncated"], true);
    assert!(c.measured["by_code"]["ACCESSOR_INDEX_OOB"].as_u64().unwrap() >= 9_000);
    // The engine's own checks still count what is drawn.
    assert_eq!(measured_f64(check(&r, "PERF-001"), "triangles"), 3_000.0);
}

/// An input's resolver that serves the same files but names no folder, so
/// every resource crosses the pipe as bytes (the route before issue 22).
struct Piped(meshcheck::asset::bundle::DirResolver);

impl meshcheck::asset::bundle::Resolver for Piped {
    fn fetch(&self, path: &str) -> Result<Vec<u8>, meshcheck::asset::bundle::Unresolved> {
        self.0.fetch(path)
    }
}

/// SPEC-001 of a file on disk, the validator reading it (and its resources) by path.
fn spec_by_path(path: &Path, opts: &Options) -> Result<meshcheck::report::CheckResult, meshcheck::error::Error> {
    let (r, _) = engine::validate_file_with_stills(Input::from_path(path).unwrap(), path, opts)?;
    Ok(check(&r, "SPEC-001").clone())
}

/// SPEC-001 of the same file with every byte piped to the validator.
fn spec_piped(path: &Path, opts: &Options) -> Result<meshcheck::report::CheckResult, meshcheck::error::Error> {
    let mut input = Input::from_path(path).unwrap();
    let dir = meshcheck::asset::bundle::parent_dir(path);
    input.resolver = Box::new(Piped(meshcheck::asset::bundle::DirResolver::new(dir)));
    let r = engine::validate(input, opts)?;
    Ok(check(&r, "SPEC-001").clone())
}

/// Compares the two routes on one file: the same SPEC-001 result, or the
/// same refusal with the same validator messages.
fn assert_routes_agree(path: &Path, opts: &Options) {
    match (spec_by_path(path, opts), spec_piped(path, opts)) {
        (Ok(a), Ok(b)) => {
            assert_ne!(a.status, Status::Skipped, "{}: {:?}", path.display(), a.measured);
            assert_eq!(a, b, "{}: SPEC-001 differs between reading by path and piping", path.display());
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "{}: the refusals differ", path.display()),
        (a, b) => panic!("{}: one route refused: {a:?} / {b:?}", path.display()),
    }
}

/// A textured .gltf with an external .bin and PNG, an index out of range
/// (a validator error), a second image that is missing and a third whose
/// URI leaves the folder: written into `dir`.
fn gltf_with_resources(dir: &Path) -> PathBuf {
    use crate::testkit::{Doc, Image, Material, Texture, png, sphere};
    let mut prim = sphere(12, 8, 1.0);
    prim.material = Some(0);
    prim.indices.as_mut().unwrap()[4] = 10_000;
    let mut doc = Doc::single(prim);
    doc.materials.push(Material { base_color_texture: Some(0), normal_texture: Some(1), ..Material::default() });
    doc.textures.extend([Texture { source: 0 }, Texture { source: 1 }, Texture { source: 2 }]);
    doc.images.push(Image { bytes: png(16, 16), mime: "image/png".into(), uri: Some("tex.png".into()) });
    doc.images.push(Image { bytes: png(4, 4), mime: "image/png".into(), uri: Some("missing.png".into()) });
    doc.images.push(Image { bytes: png(4, 4), mime: "image/png".into(), uri: Some("../outside.png".into()) });
    for (name, bytes) in doc.to_gltf_files("model") {
        if name == "missing.png" || name.starts_with("..") {
            continue;
        }
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    dir.join("model.gltf")
}

#[test]
fn reading_by_path_gives_the_same_findings_as_piping() {
    let opts = Options::default();
    let dir = tempfile::tempdir().unwrap();
    let gltf = gltf_with_resources(dir.path());
    assert_routes_agree(&gltf, &opts);
    let c = spec_by_path(&gltf, &opts).unwrap();
    assert_eq!(c.status, Status::Fail);
    let codes: Vec<&str> =
        c.measured["messages"].as_array().unwrap().iter().map(|m| m["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"ACCESSOR_INDEX_OOB") && codes.contains(&"IO_ERROR"), "{codes:?}");
    assert!(c.measured["messages"].to_string().contains("missing.png"));
    assert!(!c.measured["messages"].to_string().contains(&dir.path().display().to_string()), "no local paths");
    // A GLB with warnings, a .gltf with external files, zip bundles (whose
    // main file exists only in memory) and a file meshcheck refuses.
    for rel in [
        "khronos-sample-models/NormalTangentTest.glb",
        "other/subpass_scene_opaque.gltf",
        "khronos-sample-models/FlightHelmet.zip",
        "khronos-asset-generator/Node_NegativeScale_05.zip",
    ] {
        assert_routes_agree(&util::model(rel), &opts);
    }
    assert_routes_agree(&util::assets().join("validator-suite/test/base/data/root/empty_object.gltf"), &opts);
}

#[test]
fn the_validator_suite_reads_the_same_by_path() {
    let opts = Options::default();
    let files = suite_files();
    assert!(files.len() > 100);
    for f in &files {
        assert_routes_agree(f, &opts);
    }
}

/// A GLB whose JSON says `key` where the cube's says `"scene"`: the same length.
fn cube_glb_with(key: &str) -> Vec<u8> {
    let glb = box_glb();
    let at = glb.windows(7).position(|w| w == b"\"scene\"").expect("the cube names its scene");
    let mut out = glb.clone();
    out[at..at + 7].copy_from_slice(key.as_bytes());
    out
}

#[test]
fn the_validator_reads_the_file_and_falls_back_to_the_bytes_it_was_given() {
    let opts = Options::default();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cube.glb");
    let codes = |c: &meshcheck::report::CheckResult| -> Vec<String> {
        c.measured["messages"].as_array().unwrap().iter().map(|m| m["code"].as_str().unwrap().to_string()).collect()
    };
    // On disk, a property the validator does not know; in hand, the clean cube.
    std::fs::write(&path, cube_glb_with("\"scenx\"")).unwrap();
    let clean = Input::from_bytes("cube.glb", box_glb());
    let (r, _) = engine::validate_file_with_stills(clean, &path, &opts).unwrap();
    assert_eq!(codes(check(&r, "SPEC-001")), ["UNEXPECTED_PROPERTY"], "the validator read the file by its path");
    // A file of another size than the bytes in hand: the bytes are validated.
    std::fs::write(&path, [cube_glb_with("\"scenx\""), vec![0; 4]].concat()).unwrap();
    let (r, _) = engine::validate_file_with_stills(Input::from_bytes("cube.glb", box_glb()), &path, &opts).unwrap();
    assert_eq!(check(&r, "SPEC-001").status, Status::Pass, "{:?}", check(&r, "SPEC-001").measured);
    // A file removed after it was read: the bytes are validated, promptly.
    std::fs::remove_file(&path).unwrap();
    let started = std::time::Instant::now();
    let (r, _) = engine::validate_file_with_stills(Input::from_bytes("cube.glb", box_glb()), &path, &opts).unwrap();
    assert_eq!(check(&r, "SPEC-001").status, Status::Pass);
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    // Removed before meshcheck reads it: a clear error naming the file.
    let out = util::bin().args(["validate", path.to_str().unwrap(), "--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cube.glb") && err.contains("No such file"), "{err}");
}

/// A stored file (the service's blob): the validator reads it, the bytes in
/// hand are not kept for it; should Node not be able to read the file as
/// announced, meshcheck reads it again, and a file that is gone or changed
/// in size fails SPEC-001 with the reason rather than validating other bytes.
#[test]
fn a_stored_file_is_read_by_the_validator_and_again_never_from_the_bytes() {
    let opts = Options::default();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blob_1");
    let codes = |c: &meshcheck::report::CheckResult| -> Vec<String> {
        c.measured["messages"].as_array().unwrap().iter().map(|m| m["code"].as_str().unwrap().to_string()).collect()
    };
    // The same bytes on disk and in hand: the report of the bytes alone.
    std::fs::write(&path, box_glb()).unwrap();
    let (stored, _) =
        engine::validate_stored_with_stills(Input::from_bytes("cube.glb", box_glb()), &path, &opts).unwrap();
    let (held, _) = engine::validate_with_stills(Input::from_bytes("cube.glb", box_glb()), &opts).unwrap();
    assert_eq!(util::report_without_timestamps(&stored), util::report_without_timestamps(&held));
    // What the validator saw is the file.
    std::fs::write(&path, cube_glb_with("\"scenx\"")).unwrap();
    let (r, _) = engine::validate_stored_with_stills(Input::from_bytes("cube.glb", box_glb()), &path, &opts).unwrap();
    assert_eq!(codes(check(&r, "SPEC-001")), ["UNEXPECTED_PROPERTY"], "the validator read the stored file");
    // Another size than announced: Node refuses it, the second read too.
    std::fs::write(&path, [box_glb(), vec![0; 4]].concat()).unwrap();
    let (r, _) = engine::validate_stored_with_stills(Input::from_bytes("cube.glb", box_glb()), &path, &opts).unwrap();
    let spec = check(&r, "SPEC-001");
    assert_eq!(spec.status, Status::Skipped, "{:?}", spec.measured);
    assert!(spec.message.contains("could not be read again") && spec.message.contains("bytes"), "{}", spec.message);
    // Gone: the same, promptly; the validator goes on with the next file.
    std::fs::remove_file(&path).unwrap();
    let started = std::time::Instant::now();
    let (r, _) = engine::validate_stored_with_stills(Input::from_bytes("cube.glb", box_glb()), &path, &opts).unwrap();
    assert_eq!(check(&r, "SPEC-001").status, Status::Skipped);
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let (r, _) = engine::validate_with_stills(Input::from_bytes("cube.glb", box_glb()), &opts).unwrap();
    assert_eq!(check(&r, "SPEC-001").status, Status::Pass);
}

/// A plain file past HELD_MAX_BYTES is validated as a stored one: the
/// report is the same as from the bytes, but the bytes in hand are not held
/// for the validator, so a file that changes in size meanwhile skips
/// SPEC-001 with the reason (a small file's bytes are piped instead: the
/// test above).
#[test]
fn a_large_file_is_not_held_for_the_validator() {
    let opts = Options::default();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cube.glb");
    let big = crate::testkit::padded_glb(engine::HELD_MAX_BYTES + 1);
    std::fs::write(&path, &big).unwrap();
    let (by_path, _) =
        engine::validate_file_with_stills(Input::from_bytes("cube.glb", big.clone()), &path, &opts).unwrap();
    let (piped, _) = engine::validate_with_stills(Input::from_bytes("cube.glb", big.clone()), &opts).unwrap();
    assert_eq!(util::report_without_timestamps(&by_path), util::report_without_timestamps(&piped));
    assert_ne!(check(&by_path, "SPEC-001").status, Status::Skipped, "{:?}", check(&by_path, "SPEC-001").measured);
    // Another size on disk: the bytes in hand were not kept to be piped.
    std::fs::write(&path, [big.clone(), vec![0; 4]].concat()).unwrap();
    let (r, _) = engine::validate_file_with_stills(Input::from_bytes("cube.glb", big), &path, &opts).unwrap();
    let spec = check(&r, "SPEC-001");
    assert_eq!(spec.status, Status::Skipped, "{:?}", spec.measured);
    assert!(spec.message.contains("could not be read again") && spec.message.contains("bytes"), "{}", spec.message);
}

#[test]
fn the_engine_fixes_glibcs_threshold_for_a_large_input() {
    // The threshold is one for the whole process, and other tests here
    // validate large inputs: this runs in a child process of this test
    // binary that runs this test alone. (That fixing it has its effect is
    // the engine's unit test.)
    const CHILD: &str = "MESHCHECK_TEST_THRESHOLD_CHILD";
    const NAME: &str = "spec001::the_engine_fixes_glibcs_threshold_for_a_large_input";
    if std::env::var_os(CHILD).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([NAME, "--exact", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("1 passed"), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
        return;
    }
    let opts = Options { validator: None, ..Options::default() };
    // A small input (a folder of them runs faster so) leaves it to glibc.
    engine::validate(Input::from_bytes("box.glb", box_glb()), &opts).unwrap();
    assert!(!meshcheck::memory::reusing_large_blocks(), "fixed before any large input");
    // One over HELD_MAX_BYTES fixes it.
    let big = crate::testkit::padded_glb(engine::HELD_MAX_BYTES + 1);
    engine::validate(Input::from_bytes("cube.glb", big), &opts).unwrap();
    assert_eq!(
        meshcheck::memory::reusing_large_blocks(),
        cfg!(target_os = "linux"),
        "the engine did not fix the threshold and switch to reusing large blocks for a large input"
    );
}

#[test]
fn the_timeout_runs_from_the_validators_start() {
    // A package that takes 1.5 s to load and answers at once: a 1 s timeout
    // is not spent waiting for Node to start.
    let (dir, install) = fake_package(
        "return Promise.resolve({validatorVersion: 'fake', issues: {numErrors: 0, numWarnings: 0, numInfos: 0, numHints: 0, messages: []}, info: {}});",
    );
    let index = dir.path().join("index.js");
    let js = std::fs::read_to_string(&index).unwrap();
    std::fs::write(&index, format!("const until = Date.now() + 1500; while (Date.now() < until) {{}}\n{js}")).unwrap();
    let v = Arc::new(Validator::with_install(install, Duration::from_secs(1)).unwrap());
    let r = engine::validate(Input::from_bytes("box.glb", box_glb()), &opts_with(v.clone())).unwrap();
    assert_eq!(check(&r, "SPEC-001").status, Status::Pass, "{:?}", check(&r, "SPEC-001").measured);
    assert_eq!(r.validator.unwrap().version, "0.0.0-fake");
}

#[test]
fn a_package_that_does_not_load_is_one_environment_error() {
    let (dir, install) = fake_package("return Promise.resolve({});");
    std::fs::write(dir.path().join("index.js"), "throw new Error('broken on purpose');\n").unwrap();
    // Starting does not wait for Node; the handshake says what went wrong.
    let v = Arc::new(Validator::with_install(install, Duration::from_secs(5)).unwrap());
    let e = v.ready().unwrap_err();
    assert!(e.message.contains("exited at start"), "{e:?}");
    let e = engine::validate(Input::from_bytes("box.glb", box_glb()), &opts_with(v)).unwrap_err();
    assert_eq!(e.code.exit_code(), 4);
    assert!(e.help.unwrap().contains("npm ci"));
    // A folder run reports it once, exit 4.
    let models = tempfile::tempdir().unwrap();
    for i in 0..3 {
        std::fs::write(models.path().join(format!("box{i}.glb")), box_glb()).unwrap();
    }
    let out = util::bin()
        .args(["validate", models.path().to_str().unwrap(), "--format", "json"])
        .env("MESHCHECK_GLTF_VALIDATOR", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("exited at start").count(), 1, "{err}");
    assert!(err.contains("npm ci"), "{err}");
}
