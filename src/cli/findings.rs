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
//! The validator may report one code at one pointer several times (each
//! element of an accessor that is out of range); the second and later of
//! them in a file add their ordinal (`2`, `3`, ...) as one more part, so each
//! is a finding of its own and a third occurrence where two were accepted is
//! new.
//!
//! Measured values are not part of it: a triangle count that changes but
//! still fails is the same finding.

use super::output::FileResult;
use crate::report::{Severity, Status, Verdict};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
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

/// Where a finding stands against a baseline (`--baseline`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaselineState {
    /// No baseline was given.
    NotCompared,
    /// Not in the baseline: it counts towards the exit code.
    New,
    /// In the baseline: still reported, marked, and it no longer fails the run.
    Accepted,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Index of its file in the run's results.
    pub file: usize,
    /// The file, relative to the working directory where it lies under it,
    /// `/`-separated (`-` for standard input).
    pub path: String,
    /// The rule it breaks: a check ID (`SPEC-001` for validator messages),
    /// or the error code for a file that could not be validated.
    pub rule: String,
    /// Level.
    pub level: Level,
    /// What this finding alone makes of its file's verdict, as `--fail-on`
    /// weighs it: `fail` for a failing error-severity check and for a
    /// validator error while SPEC-001 fails, `warn` for a warning (or a
    /// validator warning), `pass` for a note. A file that could not be
    /// validated is `fail` (its exit code is its error's).
    pub verdict: Verdict,
    /// What it is about.
    pub subject: Subject,
    /// One sentence, taken from the report (asset-controlled text included:
    /// each format escapes it for itself).
    pub message: String,
    /// Stable identity across runs (see the module documentation).
    pub fingerprint: String,
    /// Against the baseline, when one was given.
    pub baseline: BaselineState,
}

impl Finding {
    /// Whether a baseline accepted it.
    pub fn accepted(&self) -> bool {
        self.baseline == BaselineState::Accepted
    }
}

/// A run as the CI formats see it: the results in path order, each file's
/// path as findings show it, and every finding.
pub struct Run<'a> {
    /// The results, in the order `validate` sorted its inputs.
    pub outcomes: &'a [FileResult],
    /// Each result's path, relative to the working directory (`-` for
    /// standard input).
    pub paths: Vec<String>,
    /// The findings, in file order, then check order, then message order.
    pub findings: Vec<Finding>,
    /// The baseline file the findings were compared with, if any.
    pub baseline: Option<String>,
}

impl<'a> Run<'a> {
    /// The findings of `outcomes`, paths relative to `cwd`; no baseline.
    pub fn new(outcomes: &'a [FileResult], cwd: &Path) -> Run<'a> {
        Run {
            outcomes,
            paths: outcomes.iter().map(|o| file_path(o, cwd)).collect(),
            findings: findings(outcomes, cwd),
            baseline: None,
        }
    }

    /// The findings of one file (they are in file order).
    pub fn of_file(&self, file: usize) -> impl Iterator<Item = &Finding> {
        let start = self.findings.partition_point(|f| f.file < file);
        let end = self.findings.partition_point(|f| f.file <= file);
        self.findings[start..end].iter()
    }

    /// The finding of check `id` in `file`, when the check did not pass.
    pub fn check_finding(&self, file: usize, id: &str) -> Option<&Finding> {
        self.of_file(file)
            .find(|f| f.rule == id && matches!(f.subject, Subject::Check { .. } | Subject::Unreadable { .. }))
    }

    /// Whether every finding of `rule` in `file` (a check with its
    /// validator messages, or an error code) is accepted by the baseline;
    /// false when there is none.
    pub fn all_accepted(&self, file: usize, rule: &str) -> bool {
        let mut any = false;
        for f in self.of_file(file).filter(|f| f.rule == rule) {
            if !f.accepted() {
                return false;
            }
            any = true;
        }
        any
    }

    /// How many files passed, warned, failed and could not be validated.
    pub fn verdict_counts(&self) -> (usize, usize, usize, usize) {
        let (mut pass, mut warn, mut fail, mut bad) = (0, 0, 0, 0);
        for o in self.outcomes {
            match &o.result {
                Ok(r) => match r.verdict {
                    Verdict::Pass => pass += 1,
                    Verdict::Warn => warn += 1,
                    Verdict::Fail => fail += 1,
                },
                Err(_) => bad += 1,
            }
        }
        (pass, warn, fail, bad)
    }

    /// (file, rule) for every rule all of whose findings in that file the
    /// baseline accepted: what the table marks `(baseline)`.
    pub fn accepted_rules(&self) -> std::collections::BTreeSet<(usize, String)> {
        let mut all: std::collections::BTreeMap<(usize, &str), bool> = std::collections::BTreeMap::new();
        for f in &self.findings {
            *all.entry((f.file, f.rule.as_str())).or_insert(true) &= f.accepted();
        }
        all.into_iter().filter(|(_, accepted)| *accepted).map(|((file, rule), _)| (file, rule.to_string())).collect()
    }

    /// How many findings the baseline accepted, and how many are new.
    pub fn baseline_counts(&self) -> (usize, usize) {
        let accepted = self.findings.iter().filter(|f| f.accepted()).count();
        let new = self.findings.iter().filter(|f| f.baseline == BaselineState::New).count();
        (accepted, new)
    }
}

/// The path of one result as findings show it (`-` for standard input).
pub fn file_path(o: &FileResult, cwd: &Path) -> String {
    match &o.job.path {
        Some(p) => display_path(p, cwd),
        None => "-".to_string(),
    }
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

/// What one check does to its file's verdict (the rule of `report::rollup`).
fn check_verdict(status: Status, severity: Severity) -> Verdict {
    match (status, severity) {
        (Status::Fail, Severity::Error) => Verdict::Fail,
        (Status::Fail | Status::Warn, _) => Verdict::Warn,
        _ => Verdict::Pass,
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
    for (file, o) in outcomes.iter().enumerate() {
        let path = file_path(o, cwd);
        let finding = |rule: &str, level, verdict, subject, message: String, fingerprint| Finding {
            file,
            path: path.clone(),
            rule: rule.to_string(),
            level,
            verdict,
            subject,
            message,
            fingerprint,
            baseline: BaselineState::NotCompared,
        };
        match &o.result {
            Err(e) => {
                let code = e.code.as_str().to_string();
                let fp = fingerprint(&[&path, "error", &code]);
                out.push(finding(
                    &code,
                    Level::Error,
                    Verdict::Fail,
                    Subject::Unreadable { code: code.clone() },
                    e.message.clone(),
                    fp,
                ));
            }
            Ok(r) => {
                // Occurrences of (code, pointer) so far in this file.
                let mut seen: HashMap<(String, String), usize> = HashMap::new();
                for c in &r.checks {
                    let messages =
                        if c.measured.contains_key("by_code") { validator_messages(&c.measured) } else { vec![] };
                    let verdict = check_verdict(c.status, c.severity);
                    if matches!(c.status, Status::Fail | Status::Warn) {
                        let fp = fingerprint(&[&path, &c.id, c.status.as_str()]);
                        let subject = Subject::Check { status: c.status };
                        out.push(finding(
                            &c.id,
                            check_level(c.status, c.severity),
                            verdict,
                            subject,
                            c.message.clone(),
                            fp,
                        ));
                    }
                    for (code, pointer, severity, message) in messages {
                        let (level, verdict) = match severity.as_str() {
                            "error" => (Level::Error, verdict),
                            "warning" => (Level::Warning, verdict.min(Verdict::Warn)),
                            _ => (Level::Note, Verdict::Pass),
                        };
                        let n = seen.entry((code.clone(), pointer.clone())).or_insert(0);
                        *n += 1;
                        let fp = if *n == 1 {
                            fingerprint(&[&path, &c.id, &code, &pointer])
                        } else {
                            fingerprint(&[&path, &c.id, &code, &pointer, &n.to_string()])
                        };
                        let at = if pointer.is_empty() { String::new() } else { format!(" ({pointer})") };
                        let text = format!("{code}: {message}{at}");
                        out.push(finding(&c.id, level, verdict, Subject::ValidatorMessage { code, pointer }, text, fp));
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
