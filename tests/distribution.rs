//! The GitHub Action (action.yml and its scripts under .github/action/) and
//! the pre-commit hook definition, run as a workflow would run them: the
//! validate step's script with the inputs in environment variables, the
//! built binary on PATH, and the files GitHub hands a step (GITHUB_OUTPUT,
//! GITHUB_STEP_SUMMARY) in a temp folder.

use crate::util;
use std::path::Path;
use std::process::Command;

fn action_step(inputs: &[(&str, &str)], dir: &Path) -> (std::process::Output, String, String) {
    let exe = Path::new(env!("CARGO_BIN_EXE_meshcheck"));
    let path = format!("{}:{}", exe.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let output = dir.join("github_output");
    let summary = dir.join("summary.md");
    let mut cmd = Command::new("bash");
    cmd.arg(util::root().join(".github/action/run.sh"))
        .current_dir(util::root())
        .env("PATH", path)
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("MC_SARIF", dir.join("meshcheck.sarif"));
    for (k, v) in inputs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("bash runs");
    let outputs = std::fs::read_to_string(&output).unwrap_or_default();
    let summary = std::fs::read_to_string(&summary).unwrap_or_default();
    (out, outputs, summary)
}

#[test]
fn the_actions_validate_step_writes_sarif_annotations_a_summary_and_the_gate() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = util::model("khronos-sample-models");
    let box_glb = util::model("khronos-sample-models/Box.glb");
    let paths = format!("{} {}", box_glb.display(), folder.join("Fox.glb").display());
    let (out, outputs, summary) = action_step(
        &[("MC_PATHS", &paths), ("MC_FAIL_ON", "fail"), ("MC_PROFILE", "mobile"), ("MC_ARGS", "--skip SPEC-001")],
        tmp.path(),
    );
    assert!(out.status.success(), "the step itself succeeds; the gate is its output: {out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("::error ") || l.starts_with("::warning ")), "{stdout}");
    // The exit code the last step gates on, and the SARIF file the upload step reads.
    let code: i32 =
        outputs.lines().find_map(|l| l.strip_prefix("exit-code=")).expect("exit-code output").parse().unwrap();
    let direct = util::bin()
        .args(["validate", "--profile", "mobile", "--skip", "SPEC-001", "--format", "json"])
        .arg(&box_glb)
        .arg(folder.join("Fox.glb"))
        .output()
        .unwrap();
    assert_eq!(Some(code), direct.status.code(), "the gate is the validation's exit code");
    let sarif_path = outputs.lines().find_map(|l| l.strip_prefix("sarif-file=")).expect("sarif-file output");
    let sarif: serde_json::Value = serde_json::from_slice(&std::fs::read(sarif_path).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert!(!summary.is_empty(), "the job summary was appended");
}

#[test]
fn action_inputs_reach_the_script_only_through_the_environment() {
    let action = std::fs::read_to_string(util::root().join("action.yml")).unwrap();
    let script = std::fs::read_to_string(util::root().join(".github/action/run.sh")).unwrap();
    // No `${{ inputs.… }}` inside a `run:` line (script injection); inputs go to env.
    for line in action.lines().filter(|l| l.trim_start().starts_with("run:")) {
        assert!(!line.contains("${{"), "an input is spliced into a script: {line}");
    }
    for input in ["paths", "profile", "fail-on", "baseline", "args"] {
        assert!(action.contains(&format!("${{{{ inputs.{input} }}}}")), "input {input} is used");
    }
    for var in ["MC_PATHS", "MC_PROFILE", "MC_FAIL_ON", "MC_BASELINE", "MC_ARGS", "MC_SARIF"] {
        assert!(action.contains(var) && script.contains(var), "{var} is passed and read");
    }
    // A path input holding shell syntax stays a path.
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("pwned");
    let hostile = format!("$(touch {}) ;touch {}", marker.display(), marker.display());
    let (out, outputs, _) = action_step(&[("MC_PATHS", &hostile), ("MC_ARGS", "--skip SPEC-001")], tmp.path());
    assert!(out.status.success());
    assert!(!marker.exists(), "input text ran as a command");
    assert!(outputs.contains("exit-code=2"), "an unreadable path is a usage error: {outputs}");
}

#[test]
fn the_pre_commit_hook_runs_validate_on_gltf_files() {
    let hooks = std::fs::read_to_string(util::root().join(".pre-commit-hooks.yaml")).unwrap();
    assert!(hooks.contains("- id: meshcheck"));
    let entry = hooks.lines().find_map(|l| l.trim().strip_prefix("entry: ")).expect("an entry");
    let files = hooks.lines().find_map(|l| l.trim().strip_prefix("files: ")).expect("a files pattern");
    assert_eq!(files, r"'\.(glb|gltf|zip)$'");
    // The entry, with file names appended as pre-commit appends them, runs.
    let mut words = entry.split_whitespace();
    assert_eq!(words.next(), Some("meshcheck"));
    let out = util::bin()
        .args(words)
        .args(["--skip", "SPEC-001"])
        .arg(util::model("khronos-sample-models/Box.glb"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Box.glb"));
}
