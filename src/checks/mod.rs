//! Checks: one file per family, the catalog that gathers them, and the
//! measuring kit they share (this file).
//!
//! A check is defined once, beside its function, in its family file: a
//! [`CheckDef`] (ID, name, severity, the typed budget [`Param`]s it reads,
//! what it [`Needs`], what/why/fix and its keys) listed in the family's
//! [`Family`]. A check measures and returns a [`Measurement`]: its `measured`
//! and `threshold` objects, whether the measurement breaches the threshold
//! (or falls in a documented warn band), and a one-sentence message. The
//! engine applies the severity, turns breaches into statuses and rolls up
//! the verdict.

pub mod anm;
pub mod catalog;
pub mod geo;
pub mod mat;
pub mod perf;
pub mod rnd;
pub mod spec;
pub mod top;
pub mod uv;
pub mod xfm;

use crate::asset::Asset;
use crate::error::{Error, Result};
use crate::profile::{Param, Profile};
use crate::report::Severity;
use serde_json::{Map, Value};

/// Most locations (JSON pointers) a check lists; the total is always given.
pub const MAX_LOCATIONS: usize = 100;

/// One check's definition, written beside its measuring function.
pub struct CheckDef {
    /// ID of the form FAMILY-NNN.
    pub id: &'static str,
    /// Human name.
    pub name: &'static str,
    /// Family name in lower case (`geometry`, `performance`, ...).
    pub category: &'static str,
    /// Default severity (a custom profile may change it).
    pub severity: Severity,
    /// The budget parameters it compares against.
    pub params: &'static [&'static Param],
    /// What it measures and how.
    pub what: &'static str,
    /// Why it matters.
    pub why: &'static str,
    /// How to fix a breach.
    pub fix: &'static str,
    /// `measured` keys and their meaning.
    pub measured: &'static [(&'static str, &'static str)],
    /// `threshold` keys and their meaning.
    pub threshold: &'static [(&'static str, &'static str)],
    /// What it reads besides the document.
    pub needs: Needs,
    /// The budget it is mostly about, as (`measured` key, `threshold` key):
    /// the gauge the demo page and report cards draw.
    pub gauge: Option<(&'static str, &'static str)>,
    /// The measuring function.
    pub run: fn(&Ctx<'_>) -> CheckOutput,
}

/// What a check reads besides the document; the engine acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// The flattened scene's geometry: the check carries the scene's notes
    /// in `measured.notes` and is skipped when no primitive could be read.
    pub geometry: bool,
    /// The images' headers (sizes and formats) behind the materials.
    pub textures: bool,
    /// The Khronos glTF-Validator's outcome (the engine runs it only when a
    /// selected check needs it).
    pub validator: bool,
    /// The renderer's stills (full mode; skipped in a build without it).
    pub renderer: bool,
}

/// A family of checks: ID prefix, category, the labels the report card and
/// the demo page show, and its checks in ID order.
pub struct Family {
    /// ID prefix (`GEO`).
    pub prefix: &'static str,
    /// Category name (`geometry`).
    pub category: &'static str,
    /// Heading for people.
    pub label: &'static str,
    /// One line on what the family looks at.
    pub blurb: &'static str,
    /// Its checks, in ID order.
    pub checks: &'static [CheckDef],
}

/// The `locations` key most checks list.
pub const LOC: (&str, &str) = ("locations", "JSON pointers to the objects involved (at most 100)");
/// The `locations_total` key that goes with it.
pub const LOC_TOTAL: (&str, &str) = ("locations_total", "how many objects are involved in all");

/// Budget: positions closer than this are one vertex (every check on the
/// welded mesh reads it; `--weld-tolerance` and the API's `weld_tolerance`
/// set it).
pub const WELD_TOLERANCE: Param = Param {
    key: "weld_tolerance",
    unit: "m",
    doc: "Positions closer than this are one vertex",
    overridable: false,
    integer: false,
};

/// The largest weld tolerance a caller may ask for, in metres.
pub const MAX_WELD_TOLERANCE: f64 = 1.0;

/// Sets the weld tolerance in metres (`--weld-tolerance`, API
/// `weld_tolerance`): finite, non-negative, at most 1 m.
pub fn set_weld_tolerance(profile: &mut Profile, metres: f64) -> Result<()> {
    // Not finite or negative: `set` says so, as for any parameter.
    if metres.is_finite() && metres > MAX_WELD_TOLERANCE {
        return Err(Error::bad_request(format!("weld tolerance {metres} m is over the 1 m maximum")));
    }
    profile.set(&WELD_TOLERANCE, metres)
}

/// What a check sees: the loaded asset, the profile and the reference
/// validator's outcome.
pub struct Ctx<'a> {
    /// The input, document and scene.
    pub asset: &'a Asset,
    /// The budgets in force.
    pub profile: &'a Profile,
    /// What the glTF-Validator said (SPEC-001), when it ran.
    pub spec: Option<&'a crate::validator::SpecRun>,
    /// The standard views, in full mode: the stills, or why the renderer
    /// could not draw this asset.
    pub render: Option<&'a RenderRun>,
}

/// What the renderer gave the RND checks (full mode): the stills, or why
/// this asset could not be drawn.
#[cfg(feature = "render")]
pub type RenderRun = crate::render::RenderRun;
/// Without the `render` feature there is never a render to hand over.
#[cfg(not(feature = "render"))]
pub type RenderRun = std::convert::Infallible;

/// How a measurement compares with its threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// Within the threshold.
    Within,
    /// In the check's documented warn band (warn whatever the severity).
    WarnBand,
    /// Beyond the threshold (fail for error severity, warn for warning).
    Breach,
}

/// A check's measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Structured measurements.
    pub measured: Map<String, Value>,
    /// Thresholds compared against.
    pub threshold: Map<String, Value>,
    /// The comparison.
    pub outcome: Comparison,
    /// One sentence with the numbers in it.
    pub message: String,
}

/// What running a check gives.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckOutput {
    /// A measurement.
    Measured(Measurement),
    /// Nothing to measure; the reason.
    Skipped(String),
}

/// A check's last step, handed back to run beside what follows it: a
/// summary over arrays the check made (UV-004's and UV-008's weighted
/// quantiles over a sample a triangle), owning everything it reads, so
/// that it borrows nothing from the asset. On a large mesh the engine runs
/// it beside the next check of the chain, or beside the world mesh's
/// build after the first phase ([`catalog::split_run`]); anywhere else it
/// is finished at once. Either way the result is the one the check's
/// function gives, which is the same two steps in turn.
pub struct Tail(Box<dyn FnOnce() -> CheckOutput + Send>);

impl Tail {
    /// The step `f`.
    pub fn new(f: impl FnOnce() -> CheckOutput + Send + 'static) -> Tail {
        Tail(Box::new(f))
    }

    /// Runs the step.
    pub fn finish(self) -> CheckOutput {
        (self.0)()
    }
}

/// What a check with a [`Tail`] gives: its output, or its last step.
pub enum Split {
    /// The output (a skip, say), nothing left to run.
    Done(CheckOutput),
    /// The step that gives it.
    Tail(Tail),
}

impl Split {
    /// The output, the tail run here when there is one.
    pub fn finish(self) -> CheckOutput {
        match self {
            Split::Done(out) => out,
            Split::Tail(t) => t.finish(),
        }
    }
}

/// A small builder for `measured` and `threshold` objects.
#[derive(Debug, Default, Clone)]
pub struct Obj(pub Map<String, Value>);

impl Obj {
    /// An empty object.
    pub fn new() -> Obj {
        Obj(Map::new())
    }
    /// Adds an integer.
    pub fn int(mut self, k: &str, v: u64) -> Obj {
        self.0.insert(k.into(), Value::from(v));
        self
    }
    /// Adds a number (whole numbers as integers, others rounded to six decimals).
    pub fn num(mut self, k: &str, v: f64) -> Obj {
        self.0.insert(k.into(), crate::report::num(v));
        self
    }
    /// Adds a number array.
    pub fn nums(mut self, k: &str, v: &[f64]) -> Obj {
        self.0.insert(k.into(), Value::Array(v.iter().map(|x| crate::report::num(*x)).collect()));
        self
    }
    /// Adds any JSON value.
    pub fn val(mut self, k: &str, v: Value) -> Obj {
        self.0.insert(k.into(), v);
        self
    }
    /// Adds a boolean.
    pub fn bool(mut self, k: &str, v: bool) -> Obj {
        self.0.insert(k.into(), Value::Bool(v));
        self
    }
    /// Adds a capped `locations` list of JSON pointers and `locations_total`.
    pub fn locations(mut self, all: &[String]) -> Obj {
        let list = all.iter().take(MAX_LOCATIONS).map(|s| Value::String(s.clone())).collect();
        self.0.insert("locations".into(), Value::Array(list));
        self.0.insert("locations_total".into(), Value::from(all.len() as u64));
        self
    }
    /// Adds the profile's value of `param` under its key.
    pub fn param(self, profile: &Profile, param: &Param) -> Obj {
        self.num(param.key, profile.get(param))
    }
}

/// A measurement from its parts.
pub fn measured(measured: Obj, threshold: Obj, outcome: Comparison, message: String) -> CheckOutput {
    CheckOutput::Measured(Measurement { measured: measured.0, threshold: threshold.0, outcome, message })
}

/// Breach when `value > max`.
pub fn over(value: f64, max: f64) -> Comparison {
    if value > max { Comparison::Breach } else { Comparison::Within }
}

/// Formats an integer with thousands separators: 1234567 -> "1,234,567".
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// "1 vertex", "3 vertices": a count with its noun, thousands-separated.
pub fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{} {many}", thousands(n)) }
}

/// Formats a byte count: "67,108,860 bytes (64.0 MiB)".
pub fn bytes_h(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{} bytes ({:.1} MiB)", thousands(n), n as f64 / (1u64 << 20) as f64)
    } else {
        format!("{} bytes", thousands(n))
    }
}

/// Formats a float compactly for messages (up to 3 decimals, trailing zeros dropped).
pub fn short(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(100), "100");
        assert_eq!(short(1.5), "1.5");
        assert_eq!(short(2.0), "2");
        assert_eq!(bytes_h(67_108_860), "67,108,860 bytes (64.0 MiB)");
    }
}
