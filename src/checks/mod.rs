//! Checks: the catalog (one ordered table) and one file per family.
//!
//! A check measures and returns a [`Measurement`]: its `measured` and
//! `threshold` objects, whether the measurement breaches the threshold (or
//! falls in a documented warn band), and a one-sentence message. The engine
//! applies the severity, turns breaches into statuses and rolls up the
//! verdict. Adding a check touches its family file and one catalog row.

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
use crate::profile::Profile;
use serde_json::{Map, Value};

/// Most locations (JSON pointers) a check lists; the total is always given.
pub const MAX_LOCATIONS: usize = 100;

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
    /// Adds the profile value of `key` under the same name.
    pub fn param(self, profile: &Profile, key: &str) -> Obj {
        self.num(key, profile.get(key))
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
