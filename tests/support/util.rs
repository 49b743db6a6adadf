//! Helpers shared by the integration tests and the benchmarks: the built
//! binary, the shared asset corpus, running the engine on bytes, and the
//! report schema.

#![allow(dead_code)]

use meshcheck::asset::Input;
use meshcheck::engine::{self, Options};
use meshcheck::error::Error;
use meshcheck::report::{CheckResult, Report};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared/assets` beside the checkout.
pub fn assets() -> PathBuf {
    root().join("../shared/assets")
}

/// A model under `../shared/assets/models`.
pub fn model(rel: &str) -> PathBuf {
    assets().join("models").join(rel)
}

/// A command for the built binary (Cargo names it to integration tests and
/// benchmarks, not to the example that includes this module too).
pub fn bin() -> Command {
    let Some(exe) = option_env!("CARGO_BIN_EXE_meshcheck") else {
        panic!("the meshcheck binary is named to integration tests and benchmarks only");
    };
    let mut c = Command::new(exe);
    c.env_remove("NO_COLOR");
    c
}

/// Runs the binary with `args` and standard input closed.
pub fn run(args: &[&str]) -> Output {
    bin().args(args).stdin(Stdio::null()).output().expect("the binary runs")
}

/// Runs the binary with `stdin` piped in.
pub fn run_stdin(args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child =
        bin().args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// Validates bytes with the default options (web profile, no external resources).
pub fn validate_bytes(name: &str, bytes: Vec<u8>) -> Result<Report, Error> {
    engine::validate(Input::from_bytes(name, bytes), &Options::default())
}

/// Validates bytes with given options.
pub fn validate_with(name: &str, bytes: Vec<u8>, opts: &Options) -> Result<Report, Error> {
    engine::validate(Input::from_bytes(name, bytes), opts)
}

/// Validates a file on disk with the default options.
pub fn validate_path(path: &std::path::Path) -> Result<Report, Error> {
    engine::validate(Input::from_path(path).expect("readable"), &Options::default())
}

/// The result of check `id`.
pub fn check<'a>(r: &'a Report, id: &str) -> &'a CheckResult {
    r.checks.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("{id} is in the report"))
}

/// A measured value as f64.
pub fn measured_f64(c: &CheckResult, key: &str) -> f64 {
    c.measured.get(key).and_then(|v| v.as_f64()).unwrap_or_else(|| panic!("{} has numeric measured.{key}", c.id))
}

/// The committed report schema, compiled.
pub fn report_schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("schemas/report.json")).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("the report schema compiles")
}

/// Asserts that a report validates against schemas/report.json.
pub fn assert_schema_valid(v: &serde_json::Value) {
    let validator = report_schema();
    let errors: Vec<String> = validator.iter_errors(v).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "report does not fit schemas/report.json: {errors:#?}");
}

/// A report as JSON without its `created_at`, for comparing two runs.
pub fn report_without_timestamps(r: &Report) -> serde_json::Value {
    without_timestamps(serde_json::to_value(r).expect("a report serialises"))
}

/// A report's JSON with `created_at` removed, for golden comparisons.
pub fn without_timestamps(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(m) = v.as_object_mut() {
        m.remove("created_at");
    }
    if let Some(a) = v.as_array_mut() {
        for x in a {
            if let Some(m) = x.as_object_mut() {
                m.remove("created_at");
            }
        }
    }
    v
}

/// meshoptimizer's C overdraw analyzer (`meshopt_analyzeOverdraw`, the
/// reference `geom::overdraw::analyze` is held to) on the same arrays.
pub fn overdraw_reference(triangles: &[[u32; 3]], positions: &[[f32; 3]]) -> meshcheck::geom::overdraw::Overdraw {
    let idx: &[u32] = bytemuck::cast_slice(triangles);
    assert!(idx.iter().all(|&i| (i as usize) < positions.len()), "an index past the positions");
    // SAFETY: every index is below positions.len() (asserted above), the
    // stride is 12 bytes of three f32 and the index count is a multiple of 3.
    let s = unsafe {
        meshopt::ffi::meshopt_analyzeOverdraw(
            idx.as_ptr(),
            idx.len(),
            positions.as_ptr().cast(),
            positions.len(),
            std::mem::size_of::<[f32; 3]>(),
        )
    };
    meshcheck::geom::overdraw::Overdraw {
        pixels_covered: s.pixels_covered,
        pixels_shaded: s.pixels_shaded,
        overdraw: s.overdraw,
    }
}
