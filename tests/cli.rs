//! The command line as users and CI pipelines meet it: formats, exit codes,
//! folder runs, selection, profiles and errors.

use crate::testkit::{Doc, cube};
use crate::util::{self, model, run};

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn path(rel: &str) -> String {
    model(rel).to_string_lossy().into_owned()
}

#[test]
fn single_file_json_is_the_report_object() {
    let out = run(&["validate", &path("khronos-sample-models/Box.glb")]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(v["schema_version"], "1.2");
    assert_eq!(v["input"]["format"], "glb");
    assert_eq!(v["report_id"], serde_json::Value::Null);
    util::assert_schema_valid(&v);
    // Field order is DESIGN.md's.
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "schema_version",
            "report_id",
            "created_at",
            "expires_at",
            "input",
            "profile",
            "mode",
            "engine",
            "validator",
            "verdict",
            "summary",
            "stats",
            "checks"
        ]
    );
    // Not a terminal: nothing on stderr.
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn exit_codes_follow_the_verdict() {
    // Avocado is over the web file budget: fail, exit 1.
    let out = run(&["validate", &path("khronos-sample-models/Avocado.zip"), "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["verdict"], "fail");
    // Fox warns (scale): exit 0, or 1 with --fail-on warn.
    let fox = path("khronos-sample-models/Fox.glb");
    assert_eq!(run(&["validate", &fox]).status.code(), Some(0));
    assert_eq!(run(&["validate", &fox, "--fail-on", "warn"]).status.code(), Some(1));
    // A bigger budget turns Avocado's fail into a pass.
    let out = run(&["validate", &path("khronos-sample-models/Avocado.zip"), "--override", "max_file_bytes=20000000"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out)["profile"]["overrides"]["max_file_bytes"], 20_000_000);
}

#[test]
fn usage_errors_exit_2_and_list_valid_values() {
    let box_glb = path("khronos-sample-models/Box.glb");
    let out = run(&["validate", &box_glb, "--profile", "console"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("web, mobile, pc, hero"), "{err}");
    let out = run(&["validate", &box_glb, "--override", "weld_tolerance=1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_tris"));
    let out = run(&["validate", &box_glb, "--only", "NOPE-001"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("PERF-001"));
    assert_eq!(run(&["validate", &box_glb, "--override", "max_tris=-5"]).status.code(), Some(2));
    assert_eq!(run(&["validate", "/nonexistent/file.glb"]).status.code(), Some(2));
    assert_eq!(run(&["validate"]).status.code(), Some(2));
    assert_eq!(run(&["validate", &box_glb, "--format", "xml"]).status.code(), Some(2));
}

#[test]
#[cfg(feature = "render")]
fn full_mode_runs_the_rnd_checks() {
    let out = run(&["validate", &path("khronos-sample-models/Box.glb"), "--mode", "full", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r = json(&out);
    assert_eq!(r["mode"], "full");
    let check = |id: &str| r["checks"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap().clone();
    assert_eq!(check("RND-001")["status"], "pass");
    assert_eq!(check("RND-001")["measured"]["rendered"], 6);
    assert_eq!(check("RND-002")["status"], "pass");
    assert_eq!(check("RND-002")["measured"]["empty_views"], 0);
    let coverage = check("RND-003")["measured"]["coverage_pct"].as_f64().unwrap();
    assert!((20.0..80.0).contains(&coverage), "a cube framed by its bounding sphere: {coverage}");
    assert!(r.get("screenshots").is_none(), "stills are listed only when asked for");
    // In checks_only mode the RND checks are skipped.
    let out = run(&["validate", &path("khronos-sample-models/Box.glb"), "--format", "json"]);
    let r = json(&out);
    let rnd = r["checks"].as_array().unwrap().iter().find(|c| c["id"] == "RND-002").unwrap().clone();
    assert_eq!(rnd["status"], "skipped");
    // --screenshots needs full mode.
    assert_eq!(run(&["validate", &path("khronos-sample-models/Box.glb"), "--screenshots"]).status.code(), Some(2));
}

#[test]
fn bad_input_exits_3_with_the_error_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("not-a-model.glb");
    std::fs::write(&f, b"this is text, not a model").unwrap();
    let out = run(&["validate", f.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(3));
    let v = json(&out);
    assert_eq!(v["error"]["code"], "UNSUPPORTED_FORMAT");
    assert!(v["error"]["message"].as_str().unwrap().contains("not a GLB"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("UNSUPPORTED_FORMAT") && err.contains("not-a-model.glb"), "miette names code and file: {err}");
}

#[test]
fn only_and_skip_select_checks() {
    let out = run(&["validate", &path("khronos-sample-models/Box.glb"), "--only", "perf,XFM-001"]);
    let v = json(&out);
    for c in v["checks"].as_array().unwrap() {
        let id = c["id"].as_str().unwrap();
        let selected = id.starts_with("PERF-") || id == "XFM-001";
        assert_eq!(c["status"] == "skipped", !selected, "{id}");
        if !selected {
            assert_eq!(c["measured"]["reason"], "not selected");
        }
    }
    let out = run(&["validate", &path("khronos-sample-models/Box.glb"), "--skip", "MAT"]);
    let v = json(&out);
    for c in v["checks"].as_array().unwrap() {
        let skipped_by_flag = c["measured"]["reason"] == "not selected";
        assert_eq!(skipped_by_flag, c["id"].as_str().unwrap().starts_with("MAT-"), "{}", c["id"]);
    }
}

#[test]
fn folder_runs_sort_paths_and_keep_the_worst_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("b.glb"), Doc::single(cube(1.0)).to_glb()).unwrap();
    std::fs::write(dir.path().join("sub/a.glb"), Doc::single(cube(1.0)).to_glb()).unwrap();
    std::fs::write(dir.path().join("broken.glb"), b"glTF\x02\x00\x00\x00\xff\xff\xff\xff").unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"ignored").unwrap();
    // A .gltf's own resources are not validated on their own.
    for (name, bytes) in Doc::single(cube(1.0)).to_gltf_files("model") {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let out_dir = dir.path().join("reports");
    let out =
        run(&["validate", dir.path().to_str().unwrap(), "--format", "json", "--output-dir", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "the broken file sets the exit code");
    let v = json(&out);
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 4);
    assert_eq!(arr[0]["input"]["filename"], "b.glb");
    assert_eq!(arr[1]["error"]["code"], "MALFORMED_GLTF");
    assert!(arr[1]["file"].as_str().unwrap().ends_with("broken.glb"));
    assert_eq!(arr[2]["input"]["filename"], "model.gltf");
    assert_eq!(arr[3]["input"]["filename"], "a.glb");
    assert!(out_dir.join("b.glb.report.json").exists());
    assert!(out_dir.join("sub/a.glb.report.json").exists());
    assert!(out_dir.join("broken.glb.report.json").exists());
    // Each file's part is rendered on its own and joined: the whole is
    // byte for byte what serde_json's pretty printer writes for the array,
    // and each report is the one written to the output folder.
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(text, format!("{}\n", serde_json::to_string_pretty(&v).unwrap()));
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("sub/a.glb.report.json")).unwrap()).unwrap();
    assert_eq!(arr[3], written);

    // The table ends with a summary of every file and the list of failures.
    let out = run(&["validate", dir.path().to_str().unwrap(), "--format", "table"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Summary") && text.contains("Failed:") && text.contains("broken.glb"), "{text}");
    assert!(!text.contains("\x1b["), "no colour when not a terminal");
}

#[test]
fn junit_has_a_testcase_per_check() {
    let out = run(&["validate", &path("khronos-sample-models/Avocado.zip"), "--format", "junit"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("<?xml"));
    let n = meshcheck::checks::catalog::CATALOG.len();
    assert_eq!(text.matches("<testcase ").count(), n);
    assert!(text.contains("<failure message=") && text.contains("SPEC-004"));
}

#[test]
fn table_shows_each_check_and_the_verdict() {
    let out = run(&["validate", &path("khronos-sample-models/Box.glb"), "--format", "table"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("PASS") && text.contains("PERF-001") && text.contains("12 triangles drawn"), "{text}");
}

#[test]
fn stdin_is_read_with_dash() {
    let out = util::run_stdin(&["validate", "-", "--format", "json"], &Doc::single(cube(1.0)).to_glb());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out)["input"]["filename"], "-");
}

#[test]
fn checks_and_profiles_list_the_catalog() {
    let out = run(&["checks", "--format", "json", "--profile", "mobile"]);
    let v = json(&out);
    let perf = v.as_array().unwrap().iter().find(|c| c["id"] == "PERF-001").unwrap();
    assert_eq!(perf["thresholds"]["max_tris"], 50_000);
    let out = run(&["profiles", "--format", "json"]);
    let v = json(&out);
    assert_eq!(v["hero"]["thresholds"]["max_texture_dim"], 8192);
    assert_eq!(v["web"]["thresholds"]["max_file_bytes"], 5_242_880);
    let out = run(&["profiles", "--format", "table"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("web (default)"));
}

#[test]
fn custom_profile_file_and_weld_tolerance() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("studio.toml");
    std::fs::write(&p, "name = \"studio\"\nextends = \"pc\"\n[thresholds]\nmax_tris = 10\n").unwrap();
    let out = run(&[
        "validate",
        &path("khronos-sample-models/Box.glb"),
        "--profile",
        p.to_str().unwrap(),
        "--weld-tolerance",
        "0.001",
    ]);
    assert_eq!(out.status.code(), Some(1), "12 triangles > 10");
    let v = json(&out);
    assert_eq!(v["profile"]["name"], "studio");
    assert_eq!(v["profile"]["thresholds"]["weld_tolerance"], 0.001);
    assert_eq!(v["profile"]["thresholds"]["max_verts"], 250_000);
}

/// The validate-only build (`--no-default-features`): full mode still
/// reports, with the RND checks skipped for want of a renderer, and the help
/// lists only the commands this build has.
#[test]
#[cfg(not(feature = "render"))]
fn without_the_renderer_full_mode_skips_the_rnd_checks_and_help_lists_what_exists() {
    let box_glb = path("khronos-sample-models/Box.glb");
    let out = run(&["validate", "--mode", "full", "--skip", "SPEC-001", "--format", "json", &box_glb]);
    let report = json(&out);
    let rnd: Vec<&serde_json::Value> =
        report["checks"].as_array().unwrap().iter().filter(|c| c["id"].as_str().unwrap().starts_with("RND-")).collect();
    assert_eq!(rnd.len(), 3);
    for c in rnd {
        assert_eq!(c["status"], "skipped");
        assert_eq!(c["measured"]["reason"], "renderer not in this build");
    }
    let help = String::from_utf8(run(&["--help"]).stdout).unwrap();
    for present in ["validate", "checks", "profiles"] {
        assert!(help.contains(present), "{help}");
    }
    for absent in ["render", "inspect", "serve", "accounts", "keys"] {
        assert!(!help.lines().any(|l| l.trim_start().starts_with(absent)), "`{absent}` listed:\n{help}");
    }
    let shots = run(&["validate", "--mode", "full", "--screenshots", &box_glb]);
    assert_eq!(shots.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&shots.stderr).contains("not in this build"));
}

/// `MESHCHECK_CHECK_TIMES` (the developer's timing aid) writes one line per
/// measured step to stderr and leaves the report and the exit code alone.
#[test]
fn check_times_go_to_stderr_and_leave_the_report_alone() {
    let file = path("khronos-sample-models/Box.glb");
    let args = ["validate", file.as_str(), "--format", "json", "--skip", "SPEC-001"];
    let plain = util::bin().args(args).env_remove("MESHCHECK_CHECK_TIMES").output().unwrap();
    let timed = util::bin().args(args).env("MESHCHECK_CHECK_TIMES", "1").output().unwrap();
    assert_eq!(plain.status.code(), timed.status.code());
    let strip = |o: &std::process::Output| {
        let mut v = json(o);
        v.as_object_mut().unwrap().remove("created_at");
        v
    };
    assert_eq!(strip(&plain), strip(&timed));
    assert!(String::from_utf8_lossy(&plain.stderr).lines().all(|l| !l.starts_with("check ")));
    let err = String::from_utf8_lossy(&timed.stderr);
    // "STEP 12.3 ms (4.5..16.8)": its wall time, and when it started and
    // ended (ms from the start of the load), the end no earlier than the
    // start and the span the wall time.
    for step in ["load ", "shared data (welded world mesh) ", "check GEO-002 ", "check UV-005 "] {
        let line = err.lines().find(|l| l.starts_with(step)).unwrap_or_else(|| panic!("no {step:?} line in {err}"));
        let rest = &line[step.len()..];
        let (ms, span) = rest.split_once(" ms (").unwrap_or_else(|| panic!("{line:?}"));
        let (from, to) = span.strip_suffix(')').and_then(|s| s.split_once("..")).unwrap_or_else(|| panic!("{line:?}"));
        let [ms, from, to] = [ms, from, to].map(|x| x.parse::<f64>().unwrap_or_else(|_| panic!("{line:?}")));
        assert!(from >= 0.0 && to >= from && (to - from - ms).abs() <= 0.2, "{line:?}");
    }
    assert!(
        err.lines().any(|l| l.starts_with("load ") && l.contains(" ms (0.0..")),
        "the load starts the clock: {err}"
    );
}
