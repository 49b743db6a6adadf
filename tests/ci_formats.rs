//! The CI formats (`--format sarif|github|gitlab|markdown`) and the baseline
//! (`--write-baseline`, `--baseline`) through the binary, on real assets of
//! the shared corpus: identical SARIF bytes across runs and valid against the
//! official SARIF 2.1.0 schema, workflow commands that a crafted name cannot
//! break out of, Code Quality JSON's shape, and the exit codes of accepted
//! and new findings. `tests/sarif_check.mjs` (in `.ci/run`) also runs
//! Microsoft's SARIF validator on the output.

use crate::util::{self, assets, model};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The validator-suite folder of the shared corpus.
fn suite(rel: &str) -> PathBuf {
    assets().join("validator-suite/test/base/data").join(rel)
}

/// The binary run in `cwd` (the validator found wherever that is).
fn in_dir(cwd: &Path, args: &[&str]) -> Output {
    command(cwd, args).output().expect("the binary runs")
}

fn command(cwd: &Path, args: &[&str]) -> Command {
    let mut c = util::bin();
    c.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .env("MESHCHECK_GLTF_VALIDATOR", util::root().join("node_modules/gltf-validator"))
        .env_remove("GITHUB_STEP_SUMMARY");
    c
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("output is UTF-8")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// The official SARIF 2.1.0 schema, as the SARIF Multitool's npm package
/// ships it (installed by `npm ci`).
fn sarif_schema() -> jsonschema::Validator {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let path = util::root().join(format!("node_modules/@microsoft/sarif-multitool-{os}/sarif-2.1.0.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} ({e}): run `npm ci` for the SARIF schema", path.display()));
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("the SARIF schema compiles")
}

fn assert_sarif_valid(log: &Value) {
    let schema = sarif_schema();
    // The schema has teeth: a level SARIF does not know is refused.
    let mut broken = log.clone();
    broken["runs"][0]["tool"]["driver"]["rules"][0]["defaultConfiguration"]["level"] = Value::from("fatal");
    assert!(!schema.is_valid(&broken), "the SARIF schema refuses an unknown level");
    let errors: Vec<String> = schema.iter_errors(log).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "not valid SARIF 2.1.0: {errors:#?}");
}

/// A `.gltf` (with the Box's .bin beside it) whose node, mesh and material
/// names and image URI are crafted to break out of each format, under a
/// file name that tries the same.
const CRAFTED: &str =
    "x\n::error::pwned\r::warning file=a,title=b::pwned%0A<script>alert(1)</script> | @here [l](javascript:x) **b** ,:";

fn crafted_asset(dir: &Path) -> PathBuf {
    let boxdir = model("khronos-sample-models/unpacked/Box");
    std::fs::copy(boxdir.join("Box0.bin"), dir.join("Box0.bin")).unwrap();
    let mut doc: Value = serde_json::from_slice(&std::fs::read(boxdir.join("Box.gltf")).unwrap()).unwrap();
    for key in ["nodes", "meshes", "materials"] {
        for item in doc[key].as_array_mut().unwrap() {
            item["name"] = Value::from(CRAFTED);
        }
    }
    doc["images"] = serde_json::json!([{"uri": format!("{CRAFTED}.png")}]);
    doc["textures"] = serde_json::json!([{"source": 0}]);
    doc["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"] = serde_json::json!({"index": 0});
    let path = dir.join("evil\n::error::name.gltf");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

#[test]
fn sarif_is_identical_across_runs_and_valid() {
    let root = assets();
    let args = [
        "validate",
        "models/khronos-asset-auditor",
        "validator-suite/test/base/data/mesh_data",
        "validator-suite/test/base/data/glb/no_header.glb",
        "--format",
        "sarif",
    ];
    let a = in_dir(&root, &[&args[..], &["-j", "1"]].concat());
    let b = in_dir(&root, &[&args[..], &["-j", "4"]].concat());
    assert_eq!(a.status.code(), Some(3), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout, "SARIF differs between two runs");
    let log = json(&a);
    assert_sarif_valid(&log);
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    // A rule per catalog check, then the error codes.
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let catalog = meshcheck::checks::catalog::ids();
    let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(&ids[..catalog.len()], &catalog[..]);
    assert!(ids.contains(&"UNSUPPORTED_FORMAT") && ids.contains(&"MALFORMED_GLTF"));
    for r in &rules[..catalog.len()] {
        let def = meshcheck::checks::catalog::find(r["id"].as_str().unwrap()).unwrap();
        assert_eq!(r["shortDescription"]["text"], def.name);
        assert!(r["help"]["text"].as_str().unwrap().contains(def.fix));
        let want = match def.severity {
            meshcheck::report::Severity::Error => "error",
            meshcheck::report::Severity::Warning => "warning",
            meshcheck::report::Severity::Info => "note",
        };
        assert_eq!(r["defaultConfiguration"]["level"], want, "{}", def.id);
    }
    let results = run["results"].as_array().unwrap();
    let mut fingerprints = std::collections::BTreeSet::new();
    for r in results {
        let id = r["ruleId"].as_str().unwrap();
        assert_eq!(rules[r["ruleIndex"].as_u64().unwrap() as usize]["id"], id);
        let uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].as_str().unwrap();
        assert!(uri.starts_with("models/") || uri.starts_with("validator-suite/"), "relative URI: {uri}");
        let fp = r["partialFingerprints"]["meshcheckFinding/v1"].as_str().unwrap();
        assert!(fingerprints.insert(fp.to_string()), "fingerprints are unique: {fp}");
        assert!(r.get("baselineState").is_none(), "no baseline, no baselineState");
    }
    // The unreadable file, a warning check, and each validator message at its pointer.
    assert!(results.iter().any(|r| r["ruleId"] == "UNSUPPORTED_FORMAT" && r["level"] == "error"));
    assert!(results.iter().any(|r| r["ruleId"] == "GEO-002" && r["level"] == "warning"));
    let clamped: Vec<&Value> = results
        .iter()
        .filter(|r| r["properties"]["code"] == "ACCESSOR_NON_CLAMPED" && r["ruleId"] == "SPEC-001")
        .collect();
    assert_eq!(clamped.len(), 2, "two ACCESSOR_NON_CLAMPED messages in colors_non_clamped.gltf");
    for r in &clamped {
        let pointer = "/meshes/0/primitives/0/attributes/COLOR_0";
        assert_eq!(r["level"], "error");
        assert_eq!(r["properties"]["pointer"], pointer);
        assert_eq!(r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"], pointer);
        assert!(r["message"]["text"].as_str().unwrap().contains(pointer));
    }
    // No time in it.
    assert!(!stdout(&a).contains("created_at") && !stdout(&a).contains("startTimeUtc"));
}

#[test]
fn sarif_fingerprints_do_not_move_with_the_measurement() {
    // Avocado fails the web file budget; a tighter budget changes the
    // measurement's threshold and message, not the finding.
    let root = assets();
    let avocado = "models/khronos-sample-models/Avocado.zip";
    let fp = |extra: &[&str]| {
        let out = in_dir(&root, &[&["validate", avocado, "--format", "sarif", "--only", "SPEC-004"], extra].concat());
        let log = json(&out);
        let r = log["runs"][0]["results"].as_array().unwrap().iter().find(|r| r["ruleId"] == "SPEC-004").cloned();
        r.map(|r| (r["partialFingerprints"].clone(), r["message"]["text"].clone()))
    };
    let (a, msg_a) = fp(&[]).expect("SPEC-004 fails on Avocado");
    let (b, msg_b) = fp(&["--override", "max_file_bytes=1000"]).unwrap();
    assert_eq!(a, b);
    assert_ne!(msg_a, msg_b);
}

#[test]
fn github_commands_cannot_be_forged_by_asset_text() {
    let dir = tempfile::tempdir().unwrap();
    let file = crafted_asset(dir.path());
    let summary = dir.path().join("summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let out = command(dir.path(), &["validate", file.to_str().unwrap(), "--format", "github"])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "{text}");
    // Every line but the last is one well-formed command; the last is plain.
    for line in &lines[..lines.len() - 1] {
        let rest = ["::error ", "::warning ", "::notice "]
            .iter()
            .find_map(|p| line.strip_prefix(p))
            .unwrap_or_else(|| panic!("not a workflow command: {line:?}"));
        let (props, data) = rest.split_once("::").expect("properties, then the message");
        assert!(!props.contains('\r') && !data.contains('\r'));
        let names: Vec<&str> = props.split(',').map(|p| p.split_once('=').expect("key=value").0).collect();
        assert_eq!(names, ["file", "title"], "{line}");
        let file_prop = props.split(',').next().unwrap().strip_prefix("file=").unwrap();
        assert_eq!(file_prop, "evil%0A%3A%3Aerror%3A%3Aname.gltf");
    }
    assert!(lines.last().unwrap().starts_with("meshcheck: 1 file: "), "{text}");
    assert!(!lines.iter().any(|l| l.starts_with("::error::") || l.starts_with("::warning file=a")), "{text}");
    // The URI reached a message (SPEC-003), escaped.
    let spec003 = lines.iter().find(|l| l.contains("title=SPEC-003")).expect("SPEC-003 fails: the image is missing");
    assert!(spec003.contains("x%0A::error::pwned%0D::warning file=a,title=b::pwned%250A<script>"), "{spec003}");
    // The job summary was appended, and escapes the same text for Markdown.
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.starts_with("earlier step\n## meshcheck: ❌ FAIL\n"), "{md}");
    assert!(md.contains("&lt;script&gt;") && !md.contains("<script>"), "{md}");
    assert!(md.contains("@\u{200B}here") && md.contains("\\[l\\]\\(javascript:x\\)") && md.contains("\\*\\*b\\*\\*"));
    assert!(md.contains("\\| "), "a | in a cell is escaped");
}

#[test]
fn markdown_lists_flagged_checks_with_measured_and_threshold() {
    let root = assets();
    let out = in_dir(
        &root,
        &[
            "validate",
            "models/khronos-asset-auditor/blender-default-cube-non-manifold.glb",
            "models/khronos-sample-models/Box.glb",
            "validator-suite/test/base/data/mesh_data/colors_non_clamped.gltf",
            "--format",
            "markdown",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let md = stdout(&out);
    assert!(
        md.starts_with("## meshcheck: ❌ FAIL\n\n3 files: 1 pass, 1 warn, 1 fail, 0 could not be validated."),
        "{md}"
    );
    // The folder table, then a section per file.
    assert!(md.contains("| File | Verdict | Errors | Warnings | Flagged |"));
    assert!(md.contains("### ✅ PASS: models/khronos-sample-models/Box.glb"));
    assert!(md.contains("### ⚠️ WARN: models/khronos-asset-auditor/blender-default-cube-non-manifold.glb"));
    let geo = md.lines().find(|l| l.starts_with("| GEO-002 ")).expect("GEO-002 warns");
    assert!(
        geo.contains("⚠️ warn") && geo.contains("boundary\\_edges: 3") && geo.contains("max\\_boundary\\_edges: 0"),
        "{geo}"
    );
    // The validator's messages with their pointers.
    assert!(md.contains("<details><summary>SPEC-001: 2 validator messages</summary>"));
    assert!(md.contains(
        "| error | ACCESSOR\\_NON\\_CLAMPED | /meshes/0/primitives/0/attributes/COLOR\\_0 | Accessor element at index 3"
    ));
}

#[test]
fn gitlab_code_quality_has_its_shape() {
    let root = assets();
    let out = in_dir(
        &root,
        &["validate", "models/khronos-asset-auditor", "validator-suite/test/base/data/glb", "--format", "gitlab"],
    );
    assert_eq!(out.status.code(), Some(3));
    let issues = json(&out);
    let issues = issues.as_array().expect("an array");
    assert!(issues.len() > 10);
    let mut fingerprints = std::collections::BTreeSet::new();
    for i in issues {
        for key in ["description", "check_name", "fingerprint", "severity"] {
            assert!(i[key].is_string(), "{key} in {i}");
        }
        assert!(["info", "minor", "major", "critical", "blocker"].contains(&i["severity"].as_str().unwrap()));
        let path = i["location"]["path"].as_str().unwrap();
        assert!(path.starts_with("models/") || path.starts_with("validator-suite/"), "{path}");
        assert_eq!(i["location"]["lines"]["begin"], 1);
        assert!(fingerprints.insert(i["fingerprint"].as_str().unwrap().to_string()), "unique fingerprints");
    }
    assert!(issues.iter().any(|i| i["check_name"] == "MALFORMED_GLTF" && i["severity"] == "blocker"));
    assert!(issues.iter().any(|i| i["check_name"] == "GEO-002" && i["severity"] == "major"));
}

/// A folder of real assets under `dir/assets`: one that fails SPEC-001
/// (two validator errors at one pointer) and one that warns.
fn baseline_folder(dir: &Path) {
    let assets_dir = dir.join("assets");
    std::fs::create_dir_all(&assets_dir).unwrap();
    for ext in ["gltf", "bin"] {
        let name = format!("colors_non_clamped.{ext}");
        std::fs::copy(suite("mesh_data").join(&name), assets_dir.join(&name)).unwrap();
    }
    std::fs::copy(
        model("khronos-asset-auditor/blender-default-cube-non-manifold.glb"),
        assets_dir.join("non-manifold.glb"),
    )
    .unwrap();
}

#[test]
fn a_baseline_accepts_what_it_recorded_and_fails_what_is_new() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    baseline_folder(d);
    let code = |args: &[&str]| {
        let out = in_dir(d, &[&["validate", "assets"], args].concat());
        (out.status.code().unwrap(), out)
    };
    assert_eq!(code(&["--format", "json"]).0, 1, "SPEC-001 fails without a baseline");

    // Recording accepts everything: exit 0, and the file is sorted JSON.
    let (c, _) = code(&["--write-baseline", "base.json", "--format", "json"]);
    assert_eq!(c, 0);
    let base: Value = serde_json::from_str(&std::fs::read_to_string(d.join("base.json")).unwrap()).unwrap();
    assert_eq!(base["version"], 1);
    let entries = base["findings"].as_array().unwrap();
    let keys: Vec<(String, String, String)> = entries
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap().to_string();
            assert!(["error", "warning", "note"].contains(&e["level"].as_str().unwrap()));
            assert!(!s("message").is_empty());
            (s("path"), s("rule"), s("fingerprint"))
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert!(keys.iter().any(|k| k.0 == "assets/colors_non_clamped.gltf" && k.1 == "SPEC-001"));
    assert!(keys.iter().any(|k| k.0 == "assets/non-manifold.glb" && k.1 == "GEO-002"));
    assert_eq!(keys.iter().filter(|k| k.1 == "SPEC-001").count(), 3, "the check and its two messages");

    // Against it: exit 0, with --fail-on warn too; the JSON is the service's.
    let plain = code(&["--format", "json"]).1;
    let (c, judged) = code(&["--baseline", "base.json", "--format", "json"]);
    assert_eq!(c, 0);
    assert_eq!(util::without_timestamps(json(&plain)), util::without_timestamps(json(&judged)));
    assert_eq!(code(&["--baseline", "base.json", "--fail-on", "warn"]).0, 0);

    // The formats mark accepted findings.
    let (_, sarif) = code(&["--baseline", "base.json", "--format", "sarif"]);
    let log = json(&sarif);
    assert_sarif_valid(&log);
    for r in log["runs"][0]["results"].as_array().unwrap() {
        assert_eq!(r["baselineState"], "unchanged");
        assert_eq!(r["suppressions"][0]["status"], "accepted");
    }
    let (_, github) = code(&["--baseline", "base.json", "--format", "github"]);
    let github = stdout(&github);
    assert!(github.lines().filter(|l| l.starts_with("::")).all(|l| l.starts_with("::notice ")), "{github}");
    assert!(github.contains("title=SPEC-001 (baseline)::"), "{github}");
    let (_, table) = code(&["--baseline", "base.json", "--format", "table"]);
    let table = stdout(&table);
    assert!(table.contains("FAIL (baseline)") && table.contains("WARN (baseline)"), "{table}");
    let accepted = format!("Baseline base.json: {} findings accepted, 0 new", keys.len());
    assert!(table.contains(&accepted), "{table}");
    let (_, md) = code(&["--baseline", "base.json", "--format", "markdown"]);
    assert!(stdout(&md).contains("❌ fail (baseline)"));
    let (_, gl) = code(&["--baseline", "base.json", "--format", "gitlab"]);
    assert!(
        json(&gl)
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["severity"] == "info" && i["description"].as_str().unwrap().starts_with("(baseline) "))
    );

    // A new file that warns: fails only with --fail-on warn.
    let extra = d.join("assets/bad-transform.glb");
    std::fs::copy(model("khronos-asset-auditor/blender-default-cube-bad-transform.glb"), &extra).unwrap();
    assert_eq!(code(&["--baseline", "base.json"]).0, 0);
    assert_eq!(code(&["--baseline", "base.json", "--fail-on", "warn"]).0, 1);
    std::fs::remove_file(&extra).unwrap();

    // A new file that fails.
    let extra = d.join("assets/uv.gltf");
    std::fs::copy(suite("mesh/uv.gltf"), &extra).unwrap();
    assert_eq!(code(&["--baseline", "base.json"]).0, 1);
    std::fs::remove_file(&extra).unwrap();

    // A newly failing check on an accepted file (a tighter budget).
    assert_eq!(code(&["--baseline", "base.json", "--override", "max_tris=1"]).0, 1);

    // A new SPEC-001 code at a new pointer in an accepted file: the check
    // itself was accepted failing, the message is new.
    let gltf = d.join("assets/colors_non_clamped.gltf");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&gltf).unwrap()).unwrap();
    doc["scene"] = Value::from(99);
    std::fs::write(&gltf, serde_json::to_vec(&doc).unwrap()).unwrap();
    let (c, out) = code(&["--baseline", "base.json", "--format", "sarif"]);
    assert_eq!(c, 1);
    let log = json(&out);
    let new: Vec<&Value> =
        log["runs"][0]["results"].as_array().unwrap().iter().filter(|r| r["baselineState"] == "new").collect();
    assert_eq!(new.len(), 1, "{new:#?}");
    assert_eq!(new[0]["properties"]["code"], "UNRESOLVED_REFERENCE");
    assert_eq!(new[0]["properties"]["pointer"], "/scene");
    assert!(new[0].get("suppressions").is_none());

    // A file that cannot be validated exits 3 until a baseline accepts it.
    std::fs::copy(suite("glb/no_header.glb"), d.join("assets/no_header.glb")).unwrap();
    assert_eq!(code(&["--baseline", "base.json"]).0, 3);
    assert_eq!(code(&["--write-baseline", "base2.json"]).0, 0);
    assert_eq!(code(&["--baseline", "base2.json", "--fail-on", "warn"]).0, 0);
    // And --baseline with --write-baseline judges against the old one.
    assert_eq!(code(&["--baseline", "base.json", "--write-baseline", "base3.json"]).0, 3);
    assert_eq!(std::fs::read(d.join("base2.json")).unwrap(), std::fs::read(d.join("base3.json")).unwrap());
}

#[test]
fn a_bad_baseline_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let boxglb = model("khronos-sample-models/Box.glb");
    let boxglb = boxglb.to_str().unwrap();
    let out = in_dir(dir.path(), &["validate", boxglb, "--baseline", "missing.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the baseline missing.json"));
    std::fs::write(dir.path().join("old.json"), r#"{"version": 7, "findings": []}"#).unwrap();
    let out = in_dir(dir.path(), &["validate", boxglb, "--baseline", "old.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("version 7"));
}

#[test]
fn the_table_shows_terminal_escapes_in_asset_text_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let boxdir = model("khronos-sample-models/unpacked/Box");
    std::fs::copy(boxdir.join("Box0.bin"), dir.path().join("Box0.bin")).unwrap();
    let mut doc: Value = serde_json::from_slice(&std::fs::read(boxdir.join("Box.gltf")).unwrap()).unwrap();
    // Recolour, retitle (OSC, ended by BEL), clear the screen, C1 CSI.
    let esc = "\u{1b}[31mRED\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}2J";
    doc["images"] = serde_json::json!([{"uri": format!("{esc}.png")}]);
    doc["textures"] = serde_json::json!([{"source": 0}]);
    doc["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"] = serde_json::json!({"index": 0});
    let path = dir.path().join("box\u{1b}[31m.gltf");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let bad = dir.path().join("bad\u{1b}]0;x\u{7}.glb");
    std::fs::write(&bad, b"glTF\x02\x00\x00\x00\xff\xff\xff\xff").unwrap();
    for args in [
        vec!["validate", path.to_str().unwrap(), "--format", "table", "--skip", "SPEC-001"],
        vec!["validate", dir.path().to_str().unwrap(), "--format", "table", "--skip", "SPEC-001"],
    ] {
        let out = crate::util::run(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("\\x1b[31m"), "the escape is shown as text: {text}");
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{9b}'), "{text:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "stderr: {err:?}");
    }
}
