//! The baseline: findings a team has accepted, so that only new ones fail
//! the run (`--write-baseline FILE` records them, `--baseline FILE` compares
//! with them; docs/ci.md "Baseline").
//!
//! The file is JSON: `{"version": 1, "findings": [...]}`, one entry per
//! finding with its `path`, `rule`, `fingerprint`, `level` and `message`,
//! sorted by path, rule and fingerprint, so that it diffs well under version
//! control. Only the fingerprint is compared (`cli/findings.rs` says what it
//! is made of); the other fields are for the people who read the file.

use super::findings::{BaselineState, Finding, Run};
use crate::error::{Error, Result};
use crate::report::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;

/// The baseline file format version this build reads and writes.
pub const VERSION: u32 = 1;

/// One accepted finding as the file records it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The file, relative to the working directory, `/`-separated.
    pub path: String,
    /// Check ID, or error code for a file that could not be validated.
    pub rule: String,
    /// The finding's fingerprint: the only field compared.
    pub fingerprint: String,
    /// `error`, `warning` or `note` when it was recorded.
    pub level: String,
    /// Its message when it was recorded.
    pub message: String,
}

/// A baseline file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// Always [`VERSION`].
    pub version: u32,
    /// The accepted findings, sorted.
    pub findings: Vec<Entry>,
}

impl Baseline {
    /// The baseline that accepts exactly these findings.
    pub fn of(findings: &[Finding]) -> Baseline {
        let mut entries: Vec<Entry> = findings
            .iter()
            .map(|f| Entry {
                path: f.path.clone(),
                rule: f.rule.clone(),
                fingerprint: f.fingerprint.clone(),
                level: f.level.as_str().to_string(),
                message: f.message.clone(),
            })
            .collect();
        entries.sort();
        entries.dedup_by(|a, b| a.fingerprint == b.fingerprint);
        Baseline { version: VERSION, findings: entries }
    }

    /// The file's text: pretty JSON with a trailing newline.
    pub fn to_text(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a baseline serialises");
        s.push('\n');
        s
    }

    /// Parses a baseline file's text; `name` is for the messages.
    pub fn parse(text: &str, name: &str) -> Result<Baseline> {
        let b: Baseline = serde_json::from_str(text).map_err(|e| {
            Error::bad_request(format!("{name} is not a meshcheck baseline (`--write-baseline` writes one): {e}"))
        })?;
        if b.version != VERSION {
            return Err(Error::bad_request(format!(
                "{name} is a version {} baseline; this meshcheck reads version {VERSION}",
                b.version
            )));
        }
        Ok(b)
    }

    /// Reads a baseline file (a missing or unreadable file is a usage error).
    pub fn read(path: &Path) -> Result<Baseline> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::bad_request(format!("cannot read the baseline {}: {e}", path.display())))?;
        Baseline::parse(&text, &path.display().to_string())
    }

    /// Writes the file.
    pub fn write(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.to_text())
            .map_err(|e| Error::bad_request(format!("cannot write the baseline {}: {e}", path.display())))
    }

    /// The fingerprints it accepts.
    pub fn fingerprints(&self) -> BTreeSet<&str> {
        self.findings.iter().map(|e| e.fingerprint.as_str()).collect()
    }
}

/// Marks every finding of the run as accepted or new; `name` is the
/// baseline file as the formats mention it.
pub fn apply(run: &mut Run<'_>, baseline: &Baseline, name: &str) {
    let accepted = baseline.fingerprints();
    for f in &mut run.findings {
        f.baseline =
            if accepted.contains(f.fingerprint.as_str()) { BaselineState::Accepted } else { BaselineState::New };
    }
    run.baseline = Some(name.to_string());
}

/// The exit code of a run compared with a baseline: each file is judged by
/// its new findings only (accepted ones never fail it). A new finding whose
/// verdict is `fail` exits 1, one whose verdict is `warn` exits 1 when
/// `warn_fails` holds for that file (per file in the run's order: its
/// `fail_on` is `warn`, from the flag or meshcheck.toml); a file that could not be validated
/// exits with its error's code unless the baseline accepted that too. A
/// folder run exits with the worst code of its files.
pub fn exit_code(run: &Run<'_>, warn_fails: &[bool]) -> i32 {
    let mut worst = 0;
    for (file, o) in run.outcomes.iter().enumerate() {
        let mut new = run.of_file(file).filter(|f| !f.accepted()).peekable();
        let code = match &o.result {
            Err(e) if new.peek().is_some() => e.code.exit_code(),
            Err(_) => 0,
            Ok(_) => new
                .map(|f| match f.verdict {
                    Verdict::Fail => 1,
                    Verdict::Warn if warn_fails.get(file).copied().unwrap_or(false) => 1,
                    _ => 0,
                })
                .max()
                .unwrap_or(0),
        };
        worst = worst.max(code);
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_round_trips_and_refuses_other_versions() {
        let b = Baseline {
            version: VERSION,
            findings: vec![Entry {
                path: "a.glb".into(),
                rule: "TST-001".into(),
                fingerprint: "00ff".into(),
                level: "warning".into(),
                message: "3 non-manifold edges".into(),
            }],
        };
        assert_eq!(Baseline::parse(&b.to_text(), "b.json").unwrap(), b);
        let e = Baseline::parse(r#"{"version": 2, "findings": []}"#, "b.json").unwrap_err();
        assert!(e.message.contains("version 2"), "{}", e.message);
        assert!(Baseline::parse("[]", "b.json").is_err());
    }
}
