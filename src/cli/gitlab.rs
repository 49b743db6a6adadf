//! `--format gitlab`: a GitLab Code Quality report (a Code Climate issue
//! array): one entry per finding with `description`, `check_name`, the
//! finding's `fingerprint`, `severity` and `location` (`path`, `lines.begin`
//! 1: a model has no lines), plus Code Climate's `type`, `categories` and
//! `engine_name`. Severity: `blocker` for a file that could not be
//! validated, `critical` for an error, `major` for a warning, `info` for a
//! note and for a finding the baseline accepted (its description then
//! starts with `(baseline)`). JSON escapes every string, so asset text needs
//! nothing more.

use super::findings::{Finding, Level, Run, Subject};
use serde_json::{Value, json};

fn severity(f: &Finding) -> &'static str {
    if f.accepted() {
        return "info";
    }
    match (&f.subject, f.level) {
        (Subject::Unreadable { .. }, _) => "blocker",
        (_, Level::Error) => "critical",
        (_, Level::Warning) => "major",
        (_, Level::Note) => "info",
    }
}

fn category(f: &Finding) -> &'static str {
    match f.rule.split('-').next().unwrap_or_default() {
        "PERF" => "Performance",
        "SPEC" => "Compatibility",
        _ => "Bug Risk",
    }
}

/// The Code Quality report of a run, pretty-printed with a trailing newline.
pub fn gitlab(run: &Run<'_>) -> String {
    let issues: Vec<Value> = run
        .findings
        .iter()
        .map(|f| {
            let description = if f.accepted() {
                format!("(baseline) {}: {}", f.rule, f.message)
            } else {
                format!("{}: {}", f.rule, f.message)
            };
            json!({
                "type": "issue",
                "engine_name": "meshcheck",
                "check_name": f.rule,
                "description": description,
                "categories": [category(f)],
                "fingerprint": f.fingerprint,
                "severity": severity(f),
                "location": {"path": f.path, "lines": {"begin": 1}},
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&Value::Array(issues)).expect("JSON serialises");
    s.push('\n');
    s
}
