//! The report card: `Report`, `CheckResult`, statuses, severities and the
//! verdict rollup.
//!
//! Field order is the order DESIGN.md gives, because serde writes struct
//! fields in declaration order; `measured` and `threshold` keep insertion
//! order (serde_json's `preserve_order`). Floats go through [`num`], which
//! writes whole numbers as integers and rounds the rest to six decimals, so
//! the same input gives byte-identical JSON.

pub mod views;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The report schema version this engine writes.
pub const SCHEMA_VERSION: &str = "1.2";

/// A JSON number from an f64: integral values as integers, others rounded to
/// six decimals; non-finite values become `null`.
pub fn num(x: f64) -> Value {
    if !x.is_finite() {
        return Value::Null;
    }
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        return Value::from(x as i64);
    }
    let r = (x * 1e6).round() / 1e6;
    if r.fract() == 0.0 && r.abs() < 9.0e15 {
        return Value::from(r as i64);
    }
    serde_json::Number::from_f64(r).map(Value::Number).unwrap_or(Value::Null)
}

/// A validate result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "Report", description = "A meshcheck validate report (schema 1.2).")]
pub struct Report {
    /// Always "1.2".
    pub schema_version: String,
    /// Identifier for GET /v1/reports/{id} (`rpt_` + random); null in the CLI.
    pub report_id: Option<String>,
    /// When the report was made, RFC 3339 UTC.
    pub created_at: String,
    /// When the service deletes the report (30 days); null in the CLI.
    pub expires_at: Option<String>,
    /// What was validated.
    pub input: InputInfo,
    /// The budget profile and the thresholds actually used.
    pub profile: ProfileInfo,
    /// `checks_only` or `full`.
    pub mode: Mode,
    /// The engine that made the report.
    pub engine: EngineInfo,
    /// The glTF-Validator that ran SPEC-001; null when SPEC-001 did not run.
    pub validator: Option<EngineInfo>,
    /// The rollup: fail if an error-severity check failed, else warn if any
    /// check warned, else pass.
    pub verdict: Verdict,
    /// Counts by status.
    pub summary: Summary,
    /// Scene counts.
    pub stats: Stats,
    /// What meshcheck did not read as the file wrote it, and what it did
    /// instead (lengths that are off, JSON faults, references that do not
    /// resolve, primitives that cannot be read, skins measured in their bind
    /// pose), each with the JSON pointer it concerns; omitted when there is
    /// nothing to say (added in schema 1.2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<ReportNote>,
    /// One result per catalog check, in check-ID order.
    pub checks: Vec<CheckResult>,
    /// The standard views of a full-mode run, only when asked for
    /// (`--screenshots`; `screenshots: true` on the API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshots: Option<Vec<Screenshot>>,
}

/// A note on how the input was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReportNote {
    /// JSON pointer of what it concerns (empty for the container or the
    /// whole document).
    pub pointer: String,
    /// What was done, in one sentence.
    pub message: String,
}

/// One rendered still.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Screenshot {
    /// `front`, `right`, `back`, `left`, `top`, `three_quarter`, or
    /// `viewNN_rv.._rh..` for other angles; also the file stem.
    pub name: String,
    /// The view.
    pub angle: views::Angle,
    /// Width and height in pixels.
    pub size: u32,
    /// Where the CLI wrote the PNG, relative to the current directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Signed URL of the PNG (service), expiring with the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// % of the frame the model covers.
    pub visible_pct: f64,
}

/// What `meshcheck render` and POST /v1/render return: stills (and a
/// turntable) of the asset under the studio rig; no checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "RenderReport", description = "A meshcheck render report (schema 1.2).")]
pub struct RenderReport {
    /// Always "1.2".
    pub schema_version: String,
    /// Identifier (`rnd_` + random) on the service; null in the CLI.
    pub render_id: Option<String>,
    /// When the render was made, RFC 3339 UTC.
    pub created_at: String,
    /// When the render and its stills are deleted (service only; null in the CLI).
    pub expires_at: Option<String>,
    /// What was rendered.
    pub input: InputInfo,
    /// The request as applied.
    pub options: RenderOptions,
    /// The graphics adapter that drew the stills.
    pub renderer: views::AdapterInfo,
    /// Counts and timing.
    pub stats: RenderStats,
    /// One still per requested angle, in order.
    pub screenshots: Vec<Screenshot>,
    /// The turntable GIF, when asked for.
    pub turntable: Option<TurntableOut>,
    /// What could not be drawn as the file asks (undecodable or KTX2 textures).
    pub notes: Vec<String>,
}

/// A render request as applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RenderOptions {
    /// The views.
    pub angles: Vec<views::Angle>,
    /// Still size in pixels.
    pub size: u32,
    /// `#RRGGBB` or `transparent`.
    pub background: String,
    /// Always `studio`.
    pub lighting: String,
    /// The turntable asked for, if any.
    pub turntable: Option<TurntableSpec>,
}

/// A turntable request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurntableSpec {
    /// Frames per turn, 8 to 120 (default 36).
    #[serde(default = "default_frames")]
    pub frames: u32,
    /// Only `gif`.
    #[serde(default = "default_format")]
    pub format: String,
    /// Frame size in pixels, 128 to 1024 (default 512).
    #[serde(default = "default_tt_size")]
    pub size: u32,
}

fn default_frames() -> u32 {
    views::TURNTABLE_FRAMES.0
}
fn default_format() -> String {
    "gif".into()
}
fn default_tt_size() -> u32 {
    views::TURNTABLE_SIZE
}

/// Render counts and timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RenderStats {
    /// Triangles drawn per view (per instance).
    pub triangles: u64,
    /// Draw calls per view.
    pub draw_calls: u64,
    /// Stills drawn.
    pub views: u64,
    /// Wall time of upload and drawing (stills and turntable), milliseconds.
    pub render_ms: f64,
}

/// The turntable as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurntableOut {
    /// Frames.
    pub frames: u32,
    /// Frame size in pixels.
    pub size: u32,
    /// Delay between frames in hundredths of a second (one turn lasts about 4 s).
    pub delay_cs: u16,
    /// Where the CLI wrote the GIF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Signed URL of the GIF (service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The input as received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InputInfo {
    /// File name as given (no directories), or "-" for standard input.
    pub filename: String,
    /// Container format sniffed from the bytes.
    pub format: InputFormat,
    /// Size of the input in bytes (the zip itself for a bundle).
    pub bytes: u64,
    /// SHA-256 of the input bytes, lower-case hex.
    pub sha256: String,
    /// For a zip bundle, the path of the .gltf/.glb inside it that was validated.
    pub main_file: Option<String>,
}

/// Container formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InputFormat {
    /// Binary glTF.
    Glb,
    /// glTF JSON with resources beside it or in data: URIs.
    Gltf,
    /// A zip bundle holding a .gltf and its resources (or a .glb).
    Zip,
}

impl InputFormat {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            InputFormat::Glb => "glb",
            InputFormat::Gltf => "gltf",
            InputFormat::Zip => "zip",
        }
    }
}

/// Profile echo.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileInfo {
    /// Profile name.
    pub name: String,
    /// Every parameter after overrides (numbers keyed by parameter name).
    pub thresholds: Map<String, Value>,
    /// The overrides given (numbers keyed by parameter name).
    pub overrides: Map<String, Value>,
}

/// Validation mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Measurements only; RND checks are skipped.
    #[default]
    ChecksOnly,
    /// Measurements plus the renderer.
    Full,
}

impl Mode {
    /// Name as in the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::ChecksOnly => "checks_only",
            Mode::Full => "full",
        }
    }
}

/// A named, versioned component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EngineInfo {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
}

/// The overall verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Nothing failed or warned.
    Pass,
    /// A check warned; nothing error-severity failed.
    Warn,
    /// An error-severity check failed.
    Fail,
}

impl Verdict {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
        }
    }
}

/// Counts by status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
pub struct Summary {
    /// Checks with status fail.
    pub errors: u32,
    /// Checks with status warn.
    pub warnings: u32,
    /// Info-severity checks that ran.
    pub info: u32,
    /// Checks with status skipped.
    pub skipped: u32,
}

/// Scene counts (the default scene, as drawn).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
pub struct Stats {
    /// Nodes reached from the default scene.
    pub nodes: u64,
    /// Distinct meshes drawn.
    pub meshes: u64,
    /// Distinct mesh primitives drawn.
    pub primitives: u64,
    /// Drawn primitive instances (node x primitive x GPU instance).
    pub instances: u64,
    /// Triangles drawn, counted per instance.
    pub triangles: u64,
    /// Vertices drawn, counted per instance.
    pub vertices: u64,
    /// Draw-call estimate: one per primitive per node (GPU instancing: one per primitive).
    pub draw_calls: u64,
    /// Materials defined in the document.
    pub materials: u64,
    /// Textures defined in the document.
    pub textures: u64,
    /// Images defined in the document.
    pub images: u64,
    /// Animations defined in the document.
    pub animations: u64,
    /// Skins defined in the document.
    pub skins: u64,
    /// The document's extensionsUsed.
    pub extensions_used: Vec<String>,
    /// The document's extensionsRequired.
    pub extensions_required: Vec<String>,
}

/// Check severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A breach fails the check and the report.
    Error,
    /// A breach warns.
    Warning,
    /// Measures only; never judges.
    Info,
}

impl Severity {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
    /// Parses a lower-case name.
    pub fn parse(s: &str) -> Option<Severity> {
        match s {
            "error" => Some(Severity::Error),
            "warning" => Some(Severity::Warning),
            "info" => Some(Severity::Info),
            _ => None,
        }
    }
}

/// Check status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Within threshold.
    Pass,
    /// A warning-severity breach, or inside a documented warn band.
    Warn,
    /// An error-severity breach.
    Fail,
    /// Not run; `measured.reason` says why.
    Skipped,
}

impl Status {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skipped => "skipped",
        }
    }
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "CheckResult")]
pub struct CheckResult {
    /// Check ID such as `PERF-001`.
    pub id: String,
    /// Human name.
    pub name: String,
    /// Family name in lower case.
    pub category: String,
    /// error, warning or info.
    pub severity: Severity,
    /// pass, warn, fail or skipped.
    pub status: Status,
    /// Structured measurements (docs/checks.md lists the keys).
    pub measured: Map<String, Value>,
    /// The thresholds the measurement was compared with.
    pub threshold: Map<String, Value>,
    /// Prose derived from measured and threshold; never parse it.
    pub message: String,
}

/// Summary counts and verdict for a list of results.
pub fn rollup(checks: &[CheckResult]) -> (Verdict, Summary) {
    let mut summary = Summary::default();
    let mut verdict = Verdict::Pass;
    for c in checks {
        match c.status {
            Status::Fail => {
                summary.errors += 1;
                if c.severity == Severity::Error {
                    verdict = Verdict::Fail;
                } else if verdict == Verdict::Pass {
                    verdict = Verdict::Warn;
                }
            }
            Status::Warn => {
                summary.warnings += 1;
                if verdict == Verdict::Pass {
                    verdict = Verdict::Warn;
                }
            }
            Status::Skipped => summary.skipped += 1,
            Status::Pass => {}
        }
        if c.severity == Severity::Info && c.status != Status::Skipped {
            summary.info += 1;
        }
    }
    (verdict, summary)
}

impl Report {
    /// The report as pretty JSON with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a report always serialises");
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(sev: Severity, status: Status) -> CheckResult {
        CheckResult {
            id: "X-001".into(),
            name: "x".into(),
            category: "x".into(),
            severity: sev,
            status,
            measured: Map::new(),
            threshold: Map::new(),
            message: String::new(),
        }
    }

    #[test]
    fn rollup_follows_the_spec() {
        let (v, s) = rollup(&[result(Severity::Error, Status::Pass), result(Severity::Info, Status::Pass)]);
        assert_eq!(v, Verdict::Pass);
        assert_eq!(s.info, 1);
        let (v, _) = rollup(&[result(Severity::Warning, Status::Warn)]);
        assert_eq!(v, Verdict::Warn);
        let (v, s) = rollup(&[result(Severity::Error, Status::Fail), result(Severity::Warning, Status::Warn)]);
        assert_eq!(v, Verdict::Fail);
        assert_eq!((s.errors, s.warnings), (1, 1));
        let (_, s) = rollup(&[result(Severity::Error, Status::Skipped)]);
        assert_eq!(s.skipped, 1);
    }

    #[test]
    fn numbers_are_stable() {
        assert_eq!(num(100000.0).to_string(), "100000");
        assert_eq!(num(0.1 + 0.2).to_string(), "0.3");
        assert_eq!(num(1e-5).to_string(), "0.00001");
        assert_eq!(num(f64::NAN), Value::Null);
    }
}
