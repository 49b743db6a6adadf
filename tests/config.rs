//! meshcheck.toml through the binary: discovery walking up from each input
//! (stopping at a repository root), `--config` and `--no-config`, rules by
//! path, flags over the file, unknown keys and values, `meshcheck config`
//! with provenance, and each file's own `fail_on` deciding the exit code.

use crate::util::{bin, model};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

/// Runs the binary in `dir` with `args`.
fn run_in(dir: &Path, args: &[&str]) -> Output {
    bin().current_dir(dir).args(args).stdin(Stdio::null()).output().expect("the binary runs")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Standard error with the diagnostic's line wrapping undone.
fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).replace('│', " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Copies a shared sample model to `dir/rel` (making its folders).
fn place(dir: &Path, rel: &str, sample: &str) -> PathBuf {
    let to = dir.join(rel);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(model(&format!("khronos-sample-models/{sample}")), &to).unwrap();
    to
}

fn write(dir: &Path, rel: &str, text: &str) {
    let to = dir.join(rel);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::write(to, text).unwrap();
}

/// The `i`-th report of a folder run (reports are in path order).
fn nth(reports: &Value, i: usize) -> &Value {
    &reports.as_array().expect("a folder run prints an array")[i]
}

#[test]
fn the_nearest_file_above_an_input_applies_and_the_walk_stops_at_the_repository_root() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // outer/meshcheck.toml is above the repository: never read for its files.
    write(root, "outer/meshcheck.toml", "profile = \"hero\"\n");
    std::fs::create_dir_all(root.join("outer/repo/.git")).unwrap();
    write(root, "outer/repo/meshcheck.toml", "profile = \"mobile\"\n");
    write(root, "outer/repo/props/pc/meshcheck.toml", "profile = \"pc\"\n");
    let deep = place(root, "outer/repo/props/a/b/Box.glb", "Box.glb");
    let nested = place(root, "outer/repo/props/pc/Box.glb", "Box.glb");
    let bare = place(root, "outer/repo2/Box.glb", "Box.glb");
    std::fs::create_dir_all(root.join("outer/repo2/.git")).unwrap();
    let profile = |path: &Path, extra: &[&str]| {
        let mut args = vec!["validate", path.to_str().unwrap(), "--format", "json"];
        args.extend_from_slice(extra);
        let out = run_in(root, &args);
        json(&out)["profile"]["name"].as_str().unwrap().to_string()
    };
    // Walking up from props/a/b reaches repo/meshcheck.toml.
    assert_eq!(profile(&deep, &[]), "mobile");
    // The nearest file wins; files are not merged.
    assert_eq!(profile(&nested, &[]), "pc");
    // repo2 has a .git and no meshcheck.toml: outer's is not read.
    assert_eq!(profile(&bare, &[]), "web");
    // --no-config reads none; --config names one for every input.
    assert_eq!(profile(&deep, &["--no-config"]), "web");
    assert_eq!(profile(&deep, &["--config", root.join("outer/meshcheck.toml").to_str().unwrap()]), "hero");
    // A relative input: the walk starts from its folder, resolved against the working directory.
    let out = run_in(&root.join("outer/repo/props"), &["validate", "a/b/Box.glb", "--format", "json"]);
    assert_eq!(json(&out)["profile"]["name"], "mobile");
    // The two flags exclude each other.
    let out = run_in(root, &["validate", deep.to_str().unwrap(), "--config", "x.toml", "--no-config"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // A --config file that is not there is a usage error.
    let out = run_in(root, &["validate", deep.to_str().unwrap(), "--config", "missing.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing.toml"), "{}", stderr(&out));
}

#[test]
fn config_flag_applies_to_every_input_with_paths_relative_to_its_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // A profile file beside the config, named relative to the config's folder.
    write(root, "ci/budgets/tight.toml", "name = \"tight\"\nextends = \"mobile\"\n[thresholds]\nmax_tris = 7\n");
    write(
        root,
        "ci/gate.toml",
        "profile = \"budgets/tight.toml\"\nskip = [\"TOP\"]\n[[rules]]\npaths = [\"../assets/big/**\"]\noverrides = { max_tris = 50000 }\n",
    );
    place(root, "assets/Box.glb", "Box.glb");
    place(root, "assets/big/Box.glb", "Box.glb");
    // Run from elsewhere: the profile path still resolves from ci/.
    let out = run_in(&root.join("assets"), &["validate", ".", "--config", "../ci/gate.toml", "--format", "json"]);
    let reports = json(&out);
    assert_eq!(reports.as_array().unwrap().len(), 2);
    for r in reports.as_array().unwrap() {
        assert_eq!(r["profile"]["name"], "tight", "{r:#}");
        let top = r["checks"].as_array().unwrap().iter().find(|c| c["id"] == "TOP-001").unwrap();
        assert_eq!(top["status"], "skipped");
    }
    // Rule globs are relative to the config file's folder; an input outside
    // it matches no rule ("../assets/big/**" cannot match anything).
    for r in reports.as_array().unwrap() {
        assert_eq!(r["profile"]["thresholds"]["max_tris"], 7, "{r:#}");
    }
}

#[test]
fn a_hero_rule_gives_hero_assets_the_hero_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(root, "meshcheck.toml", "# the game's budgets\n[[rules]]\npaths = [\"hero/**\"]\nprofile = \"hero\"\n");
    // Avocado is over the web file budget (5 MiB) and within hero's (50 MiB).
    place(root, "hero/food/Avocado.zip", "Avocado.zip");
    place(root, "props/Avocado.zip", "Avocado.zip");
    let out = run_in(root, &["validate", ".", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "the prop fails: {}", stderr(&out));
    let reports = json(&out);
    // In path order: hero/food/Avocado.zip, then props/Avocado.zip.
    let hero = nth(&reports, 0);
    assert_eq!(hero["profile"]["name"], "hero");
    assert_eq!(hero["profile"]["thresholds"]["max_file_bytes"], 52_428_800);
    assert_eq!(hero["profile"]["thresholds"]["max_tris"], 500_000);
    assert_ne!(hero["verdict"], "fail");
    let prop = nth(&reports, 1);
    assert_eq!(prop["profile"]["name"], "web");
    assert_eq!(prop["profile"]["thresholds"]["max_file_bytes"], 5_242_880);
    assert_eq!(prop["verdict"], "fail");
    let spec004 = prop["checks"].as_array().unwrap().iter().find(|c| c["id"] == "SPEC-004").unwrap();
    assert_eq!(spec004["status"], "fail");
}

#[test]
fn flags_the_user_gave_override_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        root,
        "meshcheck.toml",
        "profile = \"hero\"\nfail_on = \"warn\"\noverrides = { max_tris = 1, max_verts = 99 }\nonly = [\"PERF\", \"XFM\"]\n",
    );
    let fox = place(root, "Fox.glb", "Fox.glb");
    let fox = fox.to_str().unwrap();
    // The file alone: hero, max_tris 1 (PERF-001 fails), fail_on warn.
    let out = run_in(root, &["validate", fox, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let r = json(&out);
    assert_eq!(r["profile"]["name"], "hero");
    assert_eq!(r["profile"]["thresholds"]["max_tris"], 1);
    assert_eq!(r["profile"]["overrides"], serde_json::json!({"max_tris": 1, "max_verts": 99}));
    // Flags win key by key; what they do not name stays the file's.
    let out = run_in(
        root,
        &["validate", fox, "--format", "json", "--profile", "mobile", "--override", "max_tris=70000", "--only", "XFM"],
    );
    let r = json(&out);
    assert_eq!(r["profile"]["name"], "mobile");
    assert_eq!(r["profile"]["thresholds"]["max_tris"], 70_000);
    assert_eq!(r["profile"]["thresholds"]["max_verts"], 99, "the file's other override stays");
    let perf = r["checks"].as_array().unwrap().iter().find(|c| c["id"] == "PERF-001").unwrap();
    assert_eq!(perf["status"], "skipped", "--only XFM replaces the file's only");
    // Fox warns (scale): the file's fail_on = "warn" makes that exit 1; --fail-on fail wins.
    assert_eq!(out.status.code(), Some(1));
    let out = run_in(root, &["validate", fox, "--only", "XFM", "--fail-on", "fail"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn an_unknown_key_or_value_is_a_usage_error_naming_the_file_and_the_valid_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let box_glb = place(root, "Box.glb", "Box.glb");
    let box_glb = box_glb.to_str().unwrap();
    let check = |text: &str, wants: &[&str]| {
        write(root, "meshcheck.toml", text);
        for args in [vec!["validate", box_glb], vec!["config", box_glb]] {
            let out = run_in(root, &args);
            assert_eq!(out.status.code(), Some(2), "{text}: {}", stderr(&out));
            let err = stderr(&out);
            assert!(err.contains("meshcheck.toml"), "names the file: {err}");
            for w in wants {
                assert!(err.contains(w), "{text}: wants {w:?} in {err}");
            }
            assert!(out.stdout.is_empty(), "nothing is validated");
        }
    };
    check(
        "profil = \"hero\"\n",
        &["unknown key `profil`", "profile, overrides, only, skip, fail_on, mode, weld_tolerance"],
    );
    check(
        "[[rules]]\npaths = [\"hero/**\"]\nfailon = \"warn\"\n",
        &[
            "[[rules]] 1",
            "unknown key `failon`",
            "paths, profile, overrides, only, skip, fail_on, mode, weld_tolerance",
        ],
    );
    // Values get the flags' own errors, with where they are.
    check(
        "[[rules]]\npaths = [\"a/**\"]\n[[rules]]\npaths = [\"b/**\"]\nprofile = \"console\"\n",
        &["[[rules]] 2", "unknown profile `console`", "web, mobile, pc, hero"],
    );
    check("overrides = { weld_tolerance = 1 }\n", &["unknown override key `weld_tolerance`", "max_tris"]);
    check("skip = [\"NOPE-001\"]\n", &["unknown check or family `NOPE-001`", "PERF-001"]);
    check("fail_on = \"never\"\n", &["`fail_on`", "`fail` or `warn`"]);
    check("mode = \"fast\"\n", &["`mode`", "`checks_only` or `full`"]);
    check("weld_tolerance = 5\n", &["1 m maximum"]);
    check("[[rules]]\nprofile = \"hero\"\n", &["[[rules]] 1", "`paths` is missing"]);
    check("[[rules]]\npaths = [\"a/[\"]\n", &["bad glob `a/[`"]);
    check("profile = \n", &["not valid TOML", "line 1"]);
}

#[test]
fn meshcheck_config_shows_each_setting_and_where_it_came_from() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        root,
        "meshcheck.toml",
        "fail_on = \"warn\"\noverrides = { max_verts = 1000 }\n[[rules]]\npaths = [\"hero/**\"]\nprofile = \"hero\"\n[[rules]]\npaths = [\"**/*.zip\"]\nmode = \"full\"\n",
    );
    // The file need not exist yet.
    let out = run_in(root, &["config", "hero/new.glb", "--format", "json", "--override", "max_tris=5"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["file"], "hero/new.glb");
    assert_eq!(v["config"], "meshcheck.toml");
    assert_eq!(v["rules"], serde_json::json!([1]));
    let s = &v["settings"];
    assert_eq!(s["profile"]["value"], "hero");
    assert_eq!(s["profile"]["from"], serde_json::json!({"source": "config", "path": "meshcheck.toml", "rule": 1}));
    assert_eq!(s["fail_on"]["value"], "warn");
    assert_eq!(s["fail_on"]["from"], serde_json::json!({"source": "config", "path": "meshcheck.toml"}));
    assert_eq!(s["mode"]["value"], "checks_only");
    assert_eq!(s["mode"]["from"], serde_json::json!({"source": "default"}));
    assert_eq!(s["overrides"]["max_verts"]["value"], 1000);
    assert_eq!(s["overrides"]["max_tris"]["from"], serde_json::json!({"source": "flag", "flag": "--override"}));
    assert_eq!(s["weld_tolerance"]["value"], 0.00001);
    assert_eq!(v["profile"]["name"], "hero");
    assert_eq!(v["profile"]["thresholds"]["max_tris"], 5);
    assert_eq!(v["profile"]["thresholds"]["max_verts"], 1000);
    // Both rules match a hero zip, in order; a flag wins over them.
    let out = run_in(root, &["config", "hero/a.zip", "--format", "json", "--mode", "checks_only"]);
    let v = json(&out);
    assert_eq!(v["rules"], serde_json::json!([1, 2]));
    assert_eq!(s_from(&v, "mode"), serde_json::json!({"source": "flag", "flag": "--mode"}));
    // The table names the rule.
    let out = run_in(root, &["config", "props/a.zip", "--format", "table"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Config: meshcheck.toml (rules matching: 2)"), "{text}");
    let mode_row = text.lines().find(|l| l.contains(" mode ")).unwrap();
    assert!(mode_row.contains("full") && mode_row.contains("meshcheck.toml [[rules]] 2"), "{text}");
    let profile_row = text.lines().find(|l| l.contains(" profile ")).unwrap();
    assert!(profile_row.contains("web") && profile_row.contains("default"), "{text}");
    // Without a config file everything is a default.
    let out = run_in(root, &["config", "x.glb", "--no-config", "--format", "json"]);
    let v = json(&out);
    assert_eq!(v["config"], Value::Null);
    assert_eq!(v["settings"]["overrides"], serde_json::json!({}));
    assert_eq!(v["settings"]["fail_on"]["from"]["source"], "default");
    // A folder is not a file.
    assert_eq!(run_in(root, &["config", "."]).status.code(), Some(2));
}

fn s_from(v: &Value, key: &str) -> Value {
    v["settings"][key]["from"].clone()
}

#[test]
fn each_file_exits_by_its_own_fail_on() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // Fox warns (its scale): only the strict folder fails on a warning.
    write(root, "meshcheck.toml", "[[rules]]\npaths = [\"strict/**\"]\nfail_on = \"warn\"\n");
    place(root, "loose/Fox.glb", "Fox.glb");
    place(root, "strict/Fox.glb", "Fox.glb");
    let code = |args: &[&str]| run_in(root, args).status.code();
    assert_eq!(code(&["validate", "loose"]), Some(0));
    assert_eq!(code(&["validate", "strict"]), Some(1));
    assert_eq!(code(&["validate", "."]), Some(1));
    assert_eq!(code(&["validate", ".", "--fail-on", "fail"]), Some(0));
    // Both files share one set of engine settings; the report is the same.
    let out = run_in(root, &["validate", ".", "--format", "json"]);
    let reports = json(&out);
    let (a, b) = (nth(&reports, 0), nth(&reports, 1));
    assert_eq!(a["verdict"], "warn");
    assert_eq!(a["verdict"], b["verdict"]);
    assert_eq!(a["profile"], b["profile"]);
    // Against a baseline, each file's new findings are weighed by its own fail_on.
    assert_eq!(code(&["validate", ".", "--write-baseline", "base.json"]), Some(0));
    assert_eq!(code(&["validate", ".", "--baseline", "base.json"]), Some(0));
    place(root, "loose/new.glb", "Fox.glb");
    assert_eq!(code(&["validate", ".", "--baseline", "base.json"]), Some(0), "a new warning where warnings pass");
    place(root, "strict/new.glb", "Fox.glb");
    assert_eq!(code(&["validate", ".", "--baseline", "base.json"]), Some(1), "a new warning under strict/");
}

/// The ```toml blocks of docs/config.md.
fn doc_examples() -> Vec<String> {
    let text = std::fs::read_to_string(crate::util::root().join("docs/config.md")).unwrap();
    text.split("```toml\n").skip(1).map(|rest| rest.split("```").next().unwrap().to_string()).collect()
}

#[test]
fn the_documented_examples_fit_the_schema_and_the_reader() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(crate::util::root().join("schemas/meshcheck-toml.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let examples = doc_examples();
    assert!(examples.len() >= 3, "docs/config.md has its examples");
    for text in &examples {
        let v: Value = toml::from_str(text).unwrap();
        let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{text}\n{errors:#?}");
    }
    for bad in ["profil = \"hero\"\n", "[[rules]]\npaths = []\n", "overrides = { weld_tolerance = 1 }\n"] {
        let v: Value = toml::from_str(bad).unwrap();
        assert!(!validator.is_valid(&v), "the schema refuses {bad}");
    }
    // The first example, read by meshcheck: hero assets get the hero budget.
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "meshcheck.toml", &examples[0]);
    let out = run_in(tmp.path(), &["config", "hero/dragon.glb", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["settings"]["profile"]["value"], "hero");
    assert_eq!(v["settings"]["fail_on"]["value"], "warn");
    let out = run_in(tmp.path(), &["config", "props/crate.glb", "--format", "json"]);
    assert_eq!(json(&out)["settings"]["profile"]["value"], "mobile");
}

#[test]
#[cfg(feature = "render")]
fn a_rule_can_put_some_files_in_full_mode_sharing_one_drawer() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(root, "meshcheck.toml", "only = [\"RND\", \"PERF\"]\n[[rules]]\npaths = [\"drawn/**\"]\nmode = \"full\"\n");
    place(root, "drawn/a.glb", "Box.glb");
    place(root, "drawn/b.glb", "Box.glb");
    place(root, "plain/c.glb", "Box.glb");
    // Two files are drawn: by the render worker, started once for the run.
    let out = run_in(root, &["validate", ".", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reports = json(&out);
    for (i, mode, rnd) in [(0, "full", "pass"), (1, "full", "pass"), (2, "checks_only", "skipped")] {
        let r = nth(&reports, i);
        assert_eq!(r["mode"], mode, "{r:#}");
        let rnd001 = r["checks"].as_array().unwrap().iter().find(|c| c["id"] == "RND-001").unwrap();
        assert_eq!(rnd001["status"], rnd, "{r:#}");
    }
    // --screenshots needs some input in full mode: here the drawn ones.
    let shots = root.join("shots");
    let out =
        run_in(root, &["validate", ".", "--format", "json", "--screenshots", "--output-dir", shots.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reports = json(&out);
    assert!(nth(&reports, 0)["screenshots"].is_array());
    assert!(nth(&reports, 2).get("screenshots").is_none());
    let out = run_in(root, &["validate", "plain", "--screenshots"]);
    assert_eq!(out.status.code(), Some(2), "no input of plain/ is drawn: {}", stderr(&out));
}
