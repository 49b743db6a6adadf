//! Findings: what a run found, one per non-passing check per file, one per
//! SPEC-001 validator message (its code at its JSON pointer), and one per
//! file that could not be validated. The CI formats (SARIF, GitHub and
//! GitLab annotations, Markdown) and the baseline all speak of findings, and
//! each finding has one stable fingerprint.
//!
//! The fingerprint is the first 16 bytes, in hex, of SHA-256 over
//! `meshcheck-finding/1`, the file's path (relative to the working directory,
//! `/`-separated) and the finding's identity, NUL-separated:
//! - a check: its ID and its status (`fail` or `warn`), so a warning that
//!   becomes a failure is a new finding;
//! - a validator message: `SPEC-001`, its code and its JSON pointer (or byte
//!   offset), so the same code at a new place is a new finding;
//! - a file that could not be validated: `error` and the error code.
//!
//! Measured values are not part of it: a triangle count that changes but
//! still fails is the same finding.

use super::output::FileResult;
use crate::report::{Severity, Status};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Component, Path, PathBuf};

/// How bad a finding is, on the scale every CI format maps from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Worth a look (an info check, a validator info or hint).
    Note,
    /// A warning: a warn status, or a validator warning.
    Warning,
    /// An error: a failing check, a validator error, a file that could not
    /// be validated.
    Error,
}

impl Level {
    /// `error`, `warning` or `note` (SARIF's words).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Note => "note",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

/// What a finding is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A check that did not pass.
    Check {
        /// Its status, `fail` or `warn`.
        status: Status,
    },
    /// One message of the Khronos glTF-Validator (SPEC-001).
    ValidatorMessage {
        /// The validator's code, such as `ACCESSOR_MIN_MISMATCH`.
        code: String,
        /// JSON pointer (or `@offset` for a GLB byte offset; empty when the
        /// message names no place).
        pointer: String,
    },
    /// The file could not be validated at all.
    Unreadable {
        /// The error code, such as `MALFORMED_GLTF`.
        code: String,
    },
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file, relative to the working directory where it lies under it,
    /// `/`-separated (`-` for standard input).
    pub path: String,
    /// The rule it breaks: a check ID (`SPEC-001` for validator messages),
    /// or the error code for a file that could not be validated.
    pub rule: String,
    /// Level.
    pub level: Level,
    /// What it is about.
    pub subject: Subject,
    /// One sentence, taken from the report (asset-controlled text included:
    /// each format escapes it for itself).
    pub message: String,
    /// Stable identity across runs (see the module documentation).
    pub fingerprint: String,
}

/// The path as findings show it: relative to `cwd` when it lies under it,
/// with `.` and empty parts dropped and `/` as separator.
pub fn display_path(path: &Path, cwd: &Path) -> String {
    let abs = if path.is_absolute() { path.to_path_buf() } else { cwd.join(path) };
    let normal: PathBuf = abs.components().filter(|c| !matches!(c, Component::CurDir)).collect();
    let rel = normal.strip_prefix(cwd).map(Path::to_path_buf).unwrap_or(normal);
    rel.to_string_lossy().replace('\\', "/")
}

fn fingerprint(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    h.update(b"meshcheck-finding/1");
    for p in parts {
        h.update([0u8]);
        h.update(p.as_bytes());
    }
    h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

fn check_level(status: Status, severity: Severity) -> Level {
    match (status, severity) {
        (Status::Fail, _) => Level::Error,
        (_, Severity::Info) => Level::Note,
        _ => Level::Warning,
    }
}

/// The validator messages in SPEC-001's `measured.messages`, as
/// (code, pointer, severity, message).
fn validator_messages(measured: &serde_json::Map<String, Value>) -> Vec<(String, String, String, String)> {
    let Some(Value::Array(messages)) = measured.get("messages") else { return Vec::new() };
    messages
        .iter()
        .filter_map(Value::as_object)
        .map(|m| {
            let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            let pointer = match (m.get("pointer").and_then(Value::as_str), m.get("offset").and_then(Value::as_u64)) {
                (Some(p), _) => p.to_string(),
                (None, Some(o)) => format!("@{o}"),
                (None, None) => String::new(),
            };
            (s("code"), pointer, s("severity"), s("message"))
        })
        .collect()
}

/// Every finding of a run, in file order, then check order, then message
/// order. `cwd` is the folder paths are made relative to.
pub fn findings(outcomes: &[FileResult], cwd: &Path) -> Vec<Finding> {
    let mut out = Vec::new();
    for o in outcomes {
        let path = match &o.job.path {
            Some(p) => display_path(p, cwd),
            None => "-".to_string(),
        };
        match &o.result {
            Err(e) => {
                let code = e.code.as_str().to_string();
                out.push(Finding {
                    fingerprint: fingerprint(&[&path, "error", &code]),
                    path: path.clone(),
                    rule: code.clone(),
                    level: Level::Error,
                    subject: Subject::Unreadable { code },
                    message: e.message.clone(),
                });
            }
            Ok(r) => {
                for c in &r.checks {
                    let messages =
                        if c.measured.contains_key("by_code") { validator_messages(&c.measured) } else { vec![] };
                    if matches!(c.status, Status::Fail | Status::Warn) {
                        out.push(Finding {
                            fingerprint: fingerprint(&[&path, &c.id, c.status.as_str()]),
                            path: path.clone(),
                            rule: c.id.clone(),
                            level: check_level(c.status, c.severity),
                            subject: Subject::Check { status: c.status },
                            message: c.message.clone(),
                        });
                    }
                    for (code, pointer, severity, message) in messages {
                        let level = match severity.as_str() {
                            "error" => Level::Error,
                            "warning" => Level::Warning,
                            _ => Level::Note,
                        };
                        let at = if pointer.is_empty() { String::new() } else { format!(" ({pointer})") };
                        out.push(Finding {
                            fingerprint: fingerprint(&[&path, &c.id, &code, &pointer]),
                            path: path.clone(),
                            rule: c.id.clone(),
                            level,
                            message: format!("{code}: {message}{at}"),
                            subject: Subject::ValidatorMessage { code, pointer },
                        });
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_relative_to_the_working_directory_and_slash_separated() {
        let cwd = Path::new("/work/repo");
        assert_eq!(display_path(Path::new("assets/./a.glb"), cwd), "assets/a.glb");
        assert_eq!(display_path(Path::new("/work/repo/b/c.gltf"), cwd), "b/c.gltf");
        assert_eq!(display_path(Path::new("/elsewhere/d.glb"), cwd), "/elsewhere/d.glb");
    }

    #[test]
    fn fingerprints_are_stable_and_separate_their_parts() {
        let a = fingerprint(&["a.glb", "GEO-002", "warn"]);
        assert_eq!(a, fingerprint(&["a.glb", "GEO-002", "warn"]));
        assert_eq!(a.len(), 32);
        assert_ne!(a, fingerprint(&["a.glb", "GEO-002", "fail"]));
        assert_ne!(fingerprint(&["ab", "c"]), fingerprint(&["a", "bc"]));
    }
}
