//! `meshcheck compare OLD NEW` through the binary on real assets: status
//! changes and deltas, the exit code (1 when NEW is worse), the tolerance,
//! report JSON files as sides, the formats, and in full mode the stills of
//! both sides with a per-view difference.

use crate::report_card::assert_self_contained;
use crate::testkit::{Doc, grid};
use crate::util::{model, run};
use serde_json::Value;
use std::path::Path;

fn path(rel: &str) -> String {
    model(rel).to_string_lossy().into_owned()
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn delta<'a>(c: &'a Value, figure: &str) -> &'a Value {
    c["deltas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["figure"] == figure)
        .unwrap_or_else(|| panic!("no delta {figure}: {c:#}"))
}

#[test]
fn an_asset_compared_with_itself_has_no_deltas_and_exits_0() {
    let fox = path("khronos-sample-models/Fox.glb");
    let out = run(&["compare", &fox, &fox, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let c = json(&out);
    assert_eq!(c["worse"], false);
    assert_eq!(c["status_changes"], serde_json::json!([]));
    assert_eq!(c["deltas"], serde_json::json!([]));
    assert_eq!(c["reasons"], serde_json::json!([]));
    assert_eq!(c["old"]["source"], "asset");
    assert_eq!(c["old"]["verdict"], c["new"]["verdict"]);
    assert!(c["notes"][0].as_str().unwrap().contains("same bytes"));
    // The table says so in words.
    let out = run(&["compare", &fox, &fox, "--format", "table"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("No check changed status.") && text.contains("No measured value changed."), "{text}");
    assert!(text.contains("NEW is not worse than OLD"), "{text}");
}

#[test]
fn a_heavier_asset_is_worse_with_the_triangle_delta() {
    let out = run(&[
        "compare",
        &path("khronos-sample-models/Box.glb"),
        &path("khronos-sample-models/CesiumMan.glb"),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let c = json(&out);
    assert_eq!(c["worse"], true);
    let tris = delta(&c, "stats.triangles");
    assert_eq!(
        (tris["old"].as_u64(), tris["new"].as_u64(), tris["delta"].as_u64()),
        (Some(12), Some(4672), Some(4660))
    );
    assert_eq!((tris["budget"].as_bool(), tris["worse"].as_bool()), (Some(true), Some(true)));
    // The gauge's figure of the triangle budget check is a budget figure too;
    // other measured numbers are shown but do not gate.
    let gauge = delta(&c, "PERF-001.triangles");
    assert_eq!(gauge["budget"], true);
    let quality = delta(&c, "TOP-003.quality_mean");
    assert_eq!((quality["budget"].as_bool(), quality["worse"].as_bool()), (Some(false), Some(false)));
    // SPEC-001 went from pass to fail: a status change, worse.
    let spec = c["status_changes"].as_array().unwrap().iter().find(|s| s["id"] == "SPEC-001").unwrap();
    assert_eq!(
        (spec["old"].as_str(), spec["new"].as_str(), spec["change"].as_str()),
        (Some("pass"), Some("fail"), Some("worse"))
    );
    let reasons: Vec<&str> = c["reasons"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert!(reasons.iter().any(|r| r.starts_with("stats.triangles grew from 12 to 4,672")), "{reasons:?}");
    // The other way round NEW is better: exit 0.
    let out = run(&[
        "compare",
        &path("khronos-sample-models/CesiumMan.glb"),
        &path("khronos-sample-models/Box.glb"),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let c = json(&out);
    let spec = c["status_changes"].as_array().unwrap().iter().find(|s| s["id"] == "SPEC-001").unwrap();
    assert_eq!(spec["change"], "better");
    assert_eq!(delta(&c, "stats.triangles")["worse"], false);
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn the_tolerance_lets_budget_figures_grow_that_much() {
    let dir = tempfile::tempdir().unwrap();
    let old = write(dir.path(), "old.glb", &Doc::single(grid(10, 1.0)).to_glb());
    let mut heavier = grid(10, 1.0);
    heavier.add_debris([0.0, 0.5, 0.0], 0.05); // 200 -> 204 triangles, +2%
    let new = write(dir.path(), "new.glb", &Doc::single(heavier).to_glb());
    let out = run(&["compare", &old, &new, "--only", "perf", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "any growth is worse by default");
    let c = json(&out);
    assert_eq!(delta(&c, "PERF-001.triangles")["delta_pct"], 2);
    assert_eq!(c["status_changes"], serde_json::json!([]), "both pass the web budget");
    let out = run(&["compare", &old, &new, "--only", "perf", "--tolerance", "1", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "2% > 1%");
    let out = run(&["compare", &old, &new, "--only", "perf", "--tolerance", "10", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let c = json(&out);
    assert_eq!(c["tolerance_pct"], 10);
    assert_eq!(delta(&c, "stats.triangles")["worse"], false);
    assert!(!c["deltas"].as_array().unwrap().is_empty(), "deltas are listed even within the tolerance");
    // --only also limits what is compared: no check outside PERF appears.
    for d in c["deltas"].as_array().unwrap() {
        assert!(d["check"].is_null() || d["check"].as_str().unwrap().starts_with("PERF-"), "{d}");
    }
    assert_eq!(run(&["compare", &old, &new, "--tolerance", "-3"]).status.code(), Some(2));
}

#[test]
fn two_report_json_files_are_compared_by_content() {
    let dir = tempfile::tempdir().unwrap();
    let report = |asset: &str, name: &str| {
        let out = run(&["validate", &path(asset), "--format", "json"]);
        // Any extension: the content says it is a report.
        write(dir.path(), name, &out.stdout)
    };
    let old = report("khronos-sample-models/Box.glb", "old.report.json");
    let new = report("khronos-sample-models/Avocado.zip", "new.txt");
    let out = run(&["compare", &old, &new, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let c = json(&out);
    assert_eq!((c["old"]["source"].as_str(), c["new"]["source"].as_str()), (Some("report"), Some("report")));
    assert_eq!(c["new"]["filename"], "Avocado.zip");
    let size = delta(&c, "SPEC-004.bytes");
    assert_eq!(size["worse"], true, "the file size budget figure grew");
    assert!(c["status_changes"].as_array().unwrap().iter().any(|s| s["id"] == "SPEC-004" && s["change"] == "worse"));
    // A report against the asset it was made from: same numbers.
    let out = run(&["compare", &old, &path("khronos-sample-models/Box.glb"), "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let c = json(&out);
    assert_eq!((c["old"]["source"].as_str(), c["new"]["source"].as_str()), (Some("report"), Some("asset")));
    assert_eq!(c["deltas"], serde_json::json!([]));
    // A folder run's array is not one report; an error envelope is none; a folder is not a file.
    let arr = run(&[
        "validate",
        &path("khronos-sample-models/Box.glb"),
        &path("khronos-sample-models/Fox.glb"),
        "--format",
        "json",
    ]);
    let many = write(dir.path(), "many.json", &arr.stdout);
    let out = run(&["compare", &many, &old]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("folder run"), "{}", String::from_utf8_lossy(&out.stderr));
    let envelope = write(dir.path(), "err.json", br#"{"error": {"code": "MALFORMED_GLTF", "message": "x"}}"#);
    assert_eq!(run(&["compare", &envelope, &old]).status.code(), Some(2));
    assert_eq!(run(&["compare", dir.path().to_str().unwrap(), &old]).status.code(), Some(2));
}

#[test]
fn markdown_and_html_show_the_same_changes_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let old = path("khronos-sample-models/Box.glb");
    // A file name that is markup and Markdown at once.
    let hostile = dir.path().join("<b>|x|<i> [a](javascript:alert(1)).glb");
    std::fs::copy(model("khronos-sample-models/BoxTextured.zip"), &hostile).unwrap();
    let hostile = hostile.to_string_lossy().into_owned();
    let out = run(&["compare", &old, &hostile, "--format", "markdown"]);
    assert_eq!(out.status.code(), Some(1));
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.starts_with("## meshcheck compare\n"), "{md}");
    assert!(md.contains("**NEW is worse than OLD"), "{md}");
    assert!(md.contains("| stats.textures | 0 | 1 | +1 | from 0 | **over tolerance** |"), "{md}");
    assert!(md.contains("&lt;b&gt;\\|x\\|&lt;i&gt; \\[a\\]\\(javascript:alert\\(1\\)\\)"), "{md}");
    assert!(!md.contains("<b>") && !md.contains("[a](javascript"));
    let out = run(&["compare", &old, &hostile, "--format", "html"]);
    assert_eq!(out.status.code(), Some(1));
    let page = String::from_utf8(out.stdout).unwrap();
    assert_self_contained(&page);
    assert!(page.contains("data-worse=\"true\"") && page.contains("data-figure=\"stats.textures\""));
    assert!(page.contains("&lt;b&gt;|x|&lt;i&gt;") && !page.contains("<b>|x|"), "the file name is escaped");
    assert!(page.contains("No stills on both sides"), "checks_only has no views");
}

#[test]
#[cfg(feature = "render")]
fn full_mode_html_puts_the_stills_side_by_side_with_a_difference() {
    let box_glb = path("khronos-sample-models/Box.glb");
    let textured = path("khronos-sample-models/BoxTextured.zip");
    // Same asset: every view identical.
    let out = run(&["compare", &box_glb, &box_glb, "--mode", "full", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let c = json(&out);
    let views = c["views"].as_array().unwrap();
    assert_eq!(views.len(), 6);
    for v in views {
        assert_eq!((v["mad_pct"].as_f64(), v["ssim"].as_f64()), (Some(0.0), Some(1.0)), "{v}");
    }
    // A red box against a textured one: every view differs.
    let out = run(&["compare", &box_glb, &textured, "--mode", "full", "--format", "html"]);
    assert_eq!(out.status.code(), Some(1));
    let page = String::from_utf8(out.stdout).unwrap();
    assert_self_contained(&page);
    for view in ["front", "right", "back", "left", "top", "three_quarter"] {
        assert!(page.contains(&format!("<li class=\"card pair\" data-view=\"{view}\">")), "{view}");
    }
    assert_eq!(page.matches("src=\"data:image/png;base64,").count(), 12, "old and new per view");
    let out = run(&["compare", &box_glb, &textured, "--mode", "full", "--format", "json"]);
    let c = json(&out);
    for v in c["views"].as_array().unwrap() {
        assert!(v["mad_pct"].as_f64().unwrap() > 1.0 && v["ssim"].as_f64().unwrap() < 0.99, "{v}");
    }
}

#[test]
#[cfg(feature = "render")]
fn reports_written_with_screenshots_bring_their_stills() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    for (asset, sub) in [("khronos-sample-models/Box.glb", "a"), ("khronos-sample-models/BoxTextured.zip", "b")] {
        let out = crate::util::bin()
            .args([
                "validate",
                &path(asset),
                "--mode",
                "full",
                "--screenshots",
                "--output-dir",
                sub,
                "--format",
                "json",
            ])
            .current_dir(d)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // The screenshots' paths are as validate wrote them (relative to where
    // it ran, here the same folder); a path that is not there is looked for
    // beside the report.
    let out = crate::util::bin()
        .args(["compare", "a/Box.glb.report.json", "b/BoxTextured.zip.report.json", "--format", "json"])
        .current_dir(d)
        .output()
        .unwrap();
    let c = json(&out);
    assert_eq!(c["views"].as_array().unwrap().len(), 6, "{c:#}");
}

#[test]
fn asset_sides_take_the_settings_meshcheck_toml_gives_their_paths() {
    let dir = tempfile::tempdir().unwrap();
    // Discovery stops at the folder that holds .git.
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(
        dir.path().join("meshcheck.toml"),
        "profile = \"mobile\"\nskip = [\"SPEC\"]\n[[rules]]\npaths = [\"hero/**\"]\nprofile = \"hero\"\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("hero")).unwrap();
    let bytes = Doc::single(grid(10, 1.0)).to_glb();
    let old = write(dir.path(), "crate.glb", &bytes);
    let new = write(&dir.path().join("hero"), "crate.glb", &bytes);

    // Each side gets what `validate` would give it: the top level, then the rule.
    let c = json(&run(&["compare", &old, &new, "--format", "json"]));
    assert_eq!(c["old"]["profile"], "mobile", "{c:#}");
    assert_eq!(c["new"]["profile"], "hero", "{c:#}");
    assert!(c["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("profile")), "{c:#}");
    // The file's `skip` applies: SPEC-001 was not run on either side.
    let validated = json(&run(&["validate", &new, "--format", "json"]));
    let spec = validated["checks"].as_array().unwrap().iter().find(|k| k["id"] == "SPEC-001").unwrap().clone();
    assert_eq!(spec["status"], "skipped", "{spec}");
    assert!(
        c["status_changes"].as_array().unwrap().iter().all(|s| s["check"] != "SPEC-001"),
        "SPEC-001 is not compared: {c:#}"
    );

    // Flags win over the file; --no-config reads none; --config names one.
    let c = json(&run(&["compare", &old, &new, "--profile", "pc", "--format", "json"]));
    assert_eq!((c["old"]["profile"].as_str(), c["new"]["profile"].as_str()), (Some("pc"), Some("pc")));
    let c = json(&run(&["compare", &old, &new, "--no-config", "--format", "json"]));
    assert_eq!((c["old"]["profile"].as_str(), c["new"]["profile"].as_str()), (Some("web"), Some("web")));
    let other = write(dir.path(), "other.toml", b"profile = \"pc\"\n");
    let c = json(&run(&["compare", &old, &new, "--config", &other, "--format", "json"]));
    assert_eq!((c["old"]["profile"].as_str(), c["new"]["profile"].as_str()), (Some("pc"), Some("pc")));
    // A broken file is the usage error it is for validate.
    std::fs::write(dir.path().join("meshcheck.toml"), "profil = \"mobile\"\n").unwrap();
    let out = run(&["compare", &old, &new, "--format", "json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown key `profil`"));
}
