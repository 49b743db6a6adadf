//! `--format markdown`: a report fit for a pull-request comment or a GitHub
//! job summary. A heading with the run's verdict and counts; for a folder
//! run a table of every file; then per file its verdict and a table of each
//! failing or warning check (status, measured against threshold, the
//! message), and its SPEC-001 validator messages (code, pointer, message)
//! folded under `<details>`. A finding the baseline accepted is marked
//! `(baseline)`.
//!
//! Every string that comes from the asset or its path is escaped
//! ([`escape`]): HTML's `&`, `<`, `>` become entities, Markdown's
//! punctuation is backslash-escaped, line breaks become spaces, and `@` is
//! followed by a zero-width space so that a name can never mention anyone.

use super::findings::{Finding, Run, Subject};
use crate::checks::catalog;
use crate::report::{CheckResult, Status, Verdict};
use serde_json::{Map, Value};

/// GitHub's limit on one step's job summary.
pub const JOB_SUMMARY_LIMIT: usize = 1024 * 1024;

/// Validator messages listed per file; the rest are counted.
const MAX_MESSAGES: usize = 50;

/// Entries of `measured` or `threshold` shown per check.
const MAX_ENTRIES: usize = 4;

/// Text from the asset (or anywhere else) made inert in Markdown and HTML,
/// on one line, safe inside a table cell.
pub fn escape(s: &str) -> String {
    super::escape::markdown(s)
}

fn verdict_badge(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "✅ PASS",
        Verdict::Warn => "⚠️ WARN",
        Verdict::Fail => "❌ FAIL",
    }
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Pass => "pass",
        Status::Warn => "⚠️ warn",
        Status::Fail => "❌ fail",
        Status::Skipped => "skipped",
    }
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::String(s) => Some(s.clone()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// `key: value` pairs of a measured or threshold object, `first` (the
/// check's gauge) leading; lists and objects are left out (the JSON report
/// has them).
fn entries(m: &Map<String, Value>, first: Option<&str>) -> String {
    let mut keys: Vec<&String> = m.keys().collect();
    if let Some(first) = first
        && let Some(i) = keys.iter().position(|k| k.as_str() == first)
    {
        let k = keys.remove(i);
        keys.insert(0, k);
    }
    let mut parts = Vec::new();
    let mut more = 0;
    for k in keys {
        let Some(text) = m.get(k).and_then(scalar) else { continue };
        if parts.len() == MAX_ENTRIES {
            more += 1;
            continue;
        }
        parts.push(format!("{}: {}", escape(k), escape(&text)));
    }
    if more > 0 {
        parts.push(format!("… {more} more"));
    }
    if parts.is_empty() { "–".into() } else { parts.join("<br>") }
}

fn check_row(c: &CheckResult, f: Option<&Finding>, run: &Run<'_>, file: usize) -> String {
    let gauge = catalog::find(&c.id).and_then(|d| d.gauge);
    let mut status = status_word(c.status).to_string();
    if f.is_some() && run.all_accepted(file, &c.id) {
        status.push_str(" (baseline)");
    }
    format!(
        "| {} {} | {} | {} | {} | {} |\n",
        escape(&c.id),
        escape(&c.name),
        status,
        entries(&c.measured, gauge.map(|g| g.0)),
        entries(&c.threshold, gauge.map(|g| g.1)),
        escape(&c.message)
    )
}

fn file_section(run: &Run<'_>, file: usize, s: &mut String) {
    let o = &run.outcomes[file];
    let path = escape(&run.paths[file]);
    match &o.result {
        Err(e) => {
            let mark = if run.all_accepted(file, e.code.as_str()) { " (baseline)" } else { "" };
            s.push_str(&format!("### ⛔ ERROR{mark}: {path}\n\n"));
            s.push_str(&format!("Could not be validated: `{}`: {}\n\n", e.code.as_str(), escape(&e.message)));
        }
        Ok(r) => {
            s.push_str(&format!("### {}: {path}\n\n", verdict_badge(r.verdict)));
            s.push_str(&format!(
                "Profile {}, mode {}: {} failing, {} warning, {} skipped of {} checks.\n\n",
                escape(&r.profile.name),
                r.mode.as_str(),
                r.summary.errors,
                r.summary.warnings,
                r.summary.skipped,
                r.checks.len()
            ));
            let flagged: Vec<&CheckResult> =
                r.checks.iter().filter(|c| matches!(c.status, Status::Fail | Status::Warn)).collect();
            if !flagged.is_empty() {
                s.push_str("| Check | Status | Measured | Threshold | Message |\n| --- | --- | --- | --- | --- |\n");
                for c in flagged {
                    s.push_str(&check_row(c, run.check_finding(file, &c.id), run, file));
                }
                s.push('\n');
            }
            let messages: Vec<&Finding> =
                run.of_file(file).filter(|f| matches!(f.subject, Subject::ValidatorMessage { .. })).collect();
            if !messages.is_empty() {
                s.push_str(&format!(
                    "<details><summary>{}: {} validator message{}</summary>\n\n",
                    escape(&messages[0].rule),
                    messages.len(),
                    if messages.len() == 1 { "" } else { "s" }
                ));
                s.push_str("| Level | Code | Pointer | Message |\n| --- | --- | --- | --- |\n");
                for f in messages.iter().take(MAX_MESSAGES) {
                    let Subject::ValidatorMessage { code, pointer } = &f.subject else { continue };
                    let mark = if f.accepted() { " (baseline)" } else { "" };
                    // The message without the code and pointer its columns show.
                    let text = f.message.strip_prefix(&format!("{code}: ")).unwrap_or(&f.message);
                    let text = text.strip_suffix(&format!(" ({pointer})")).unwrap_or(text);
                    s.push_str(&format!(
                        "| {}{mark} | {} | {} | {} |\n",
                        f.level.as_str(),
                        escape(code),
                        escape(pointer),
                        escape(text)
                    ));
                }
                if messages.len() > MAX_MESSAGES {
                    s.push_str(&format!(
                        "\n… and {} more (the JSON report lists them all).\n",
                        messages.len() - MAX_MESSAGES
                    ));
                }
                s.push_str("\n</details>\n\n");
            }
        }
    }
}

fn heading(run: &Run<'_>, s: &mut String) {
    let (pass, warn, fail, bad) = run.verdict_counts();
    let overall = if fail + bad > 0 {
        "❌ FAIL"
    } else if warn > 0 {
        "⚠️ WARN"
    } else {
        "✅ PASS"
    };
    s.push_str(&format!("## meshcheck: {overall}\n\n"));
    s.push_str(&format!(
        "{} file{}: {pass} pass, {warn} warn, {fail} fail, {bad} could not be validated.",
        run.outcomes.len(),
        if run.outcomes.len() == 1 { "" } else { "s" }
    ));
    if let Some(name) = &run.baseline {
        let (accepted, new) = run.baseline_counts();
        s.push_str(&format!(" Baseline {}: {accepted} findings accepted, {new} new.", escape(name)));
    }
    s.push_str("\n\n");
}

fn summary_table(run: &Run<'_>, rows: usize, s: &mut String) {
    s.push_str("| File | Verdict | Errors | Warnings | Flagged |\n| --- | --- | --- | --- | --- |\n");
    for (file, o) in run.outcomes.iter().enumerate().take(rows) {
        let path = escape(&run.paths[file]);
        match &o.result {
            Ok(r) => {
                let flagged: Vec<String> = r
                    .checks
                    .iter()
                    .filter(|c| matches!(c.status, Status::Fail | Status::Warn))
                    .map(|c| escape(&c.id))
                    .collect();
                s.push_str(&format!(
                    "| {path} | {} | {} | {} | {} |\n",
                    verdict_badge(r.verdict),
                    r.summary.errors,
                    r.summary.warnings,
                    flagged.join(", ")
                ));
            }
            Err(e) => s.push_str(&format!("| {path} | ⛔ ERROR | – | – | {} |\n", e.code.as_str())),
        }
    }
    if run.outcomes.len() > rows {
        s.push_str(&format!("\n… and {} more files.\n", run.outcomes.len() - rows));
    }
    s.push('\n');
}

/// The Markdown report of a run.
pub fn markdown(run: &Run<'_>) -> String {
    let mut s = String::new();
    heading(run, &mut s);
    if run.outcomes.len() > 1 {
        summary_table(run, run.outcomes.len(), &mut s);
    }
    for file in 0..run.outcomes.len() {
        file_section(run, file, &mut s);
    }
    s
}

/// The job summary for `$GITHUB_STEP_SUMMARY`: the Markdown report, or
/// when that is over GitHub's 1 MiB limit, the heading and as much of the
/// file table as fits.
pub fn job_summary(run: &Run<'_>) -> String {
    job_summary_within(run, JOB_SUMMARY_LIMIT)
}

/// [`job_summary`] under a limit of `limit` bytes.
fn job_summary_within(run: &Run<'_>, limit: usize) -> String {
    let full = markdown(run);
    if full.len() <= limit {
        return full;
    }
    let mut rows = run.outcomes.len();
    loop {
        let mut s = String::new();
        heading(run, &mut s);
        summary_table(run, rows, &mut s);
        s.push_str("The full report is over GitHub's summary limit: see the job's annotations or the SARIF file.\n");
        if s.len() <= limit || rows == 0 {
            return s;
        }
        rows /= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asset_text_is_inert() {
        assert_eq!(escape("<script>alert(1)</script>"), "&lt;script&gt;alert\\(1\\)&lt;/script&gt;");
        assert_eq!(escape("a|b\nc"), "a\\|b c");
        assert_eq!(escape("[x](javascript:y) **b** `c`"), "\\[x\\]\\(javascript:y\\) \\*\\*b\\*\\* \\`c\\`");
        assert_eq!(escape("@team"), "@\u{200B}team");
        assert_eq!(escape("&amp;"), "&amp;amp;");
    }

    #[test]
    fn a_summary_over_the_limit_keeps_the_heading_and_as_many_rows_as_fit() {
        use crate::cli::output::{FileResult, Job};
        let outcomes: Vec<FileResult> = (0..200)
            .map(|i| FileResult {
                job: Job {
                    display: format!("assets/prop_{i:03}.glb"),
                    path: Some(format!("assets/prop_{i:03}.glb").into()),
                    out_name: format!("prop_{i:03}.glb").into(),
                },
                result: Err(crate::error::Error::malformed("the GLB has no JSON chunk")),
            })
            .collect();
        let run = Run::new(&outcomes, std::path::Path::new("."));
        let full = markdown(&run);
        assert_eq!(job_summary_within(&run, full.len()), full, "a summary within the limit is the full report");
        let limit = full.len() / 4;
        let cut = job_summary_within(&run, limit);
        assert!(cut.len() <= limit, "{} > {limit}", cut.len());
        assert!(cut.starts_with(&full[..full.find('|').unwrap()]), "the heading is kept:\n{cut}");
        assert!(cut.contains("over GitHub's summary limit"), "{cut}");
        let rows = cut.lines().filter(|l| l.starts_with("| assets/prop")).count();
        assert!(rows > 0 && rows < 200, "{rows} rows");
        assert!(cut.contains(&format!("… and {} more files.", 200 - rows)), "{cut}");
    }
}
