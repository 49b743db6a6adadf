//! `--format github`: GitHub Actions workflow commands, one per finding
//! (`::error file=PATH,title=ID::message`, `::warning …`, `::notice …`),
//! which the runner turns into annotations on the files; a finding the
//! baseline accepted is a notice whose title ends in `(baseline)`. The
//! Markdown job summary (appended to `$GITHUB_STEP_SUMMARY` by `validate`)
//! is `markdown::job_summary`.
//!
//! Every value is escaped as GitHub documents (and its toolkit does): in
//! the message `%`, CR and LF become `%25`, `%0D`, `%0A`; in property values
//! `:` and `,` too (`%3A`, `%2C`). No command therefore spans two lines, and
//! no text from the asset (node, mesh or material names, URIs, validator
//! messages) or from a file name can start a command of its own. The last
//! line is a plain summary that holds no asset text.

use super::findings::{Level, Run, Subject};

/// A workflow command's message (its data part).
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// A workflow command's property value.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// The workflow commands of a run, then one plain summary line.
pub fn github(run: &Run<'_>) -> String {
    let mut s = String::new();
    for f in &run.findings {
        let command = match (f.accepted(), f.level) {
            (true, _) | (false, Level::Note) => "notice",
            (false, Level::Warning) => "warning",
            (false, Level::Error) => "error",
        };
        let mut title = match &f.subject {
            Subject::ValidatorMessage { code, .. } => format!("{} {code}", f.rule),
            _ => f.rule.clone(),
        };
        if f.accepted() {
            title.push_str(" (baseline)");
        }
        let mut props = Vec::new();
        if run.outcomes[f.file].job.path.is_some() {
            props.push(format!("file={}", escape_property(&f.path)));
        }
        props.push(format!("title={}", escape_property(&title)));
        s.push_str(&format!("::{command} {}::{}\n", props.join(","), escape_data(&f.message)));
    }
    let (pass, warn, fail, bad) = run.verdict_counts();
    s.push_str(&format!(
        "meshcheck: {} file{}: {pass} pass, {warn} warn, {fail} fail, {bad} could not be validated",
        run.outcomes.len(),
        if run.outcomes.len() == 1 { "" } else { "s" }
    ));
    if run.baseline.is_some() {
        let (accepted, new) = run.baseline_counts();
        s.push_str(&format!("; baseline: {accepted} findings accepted, {new} new"));
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped_as_github_documents() {
        assert_eq!(escape_data("a%b\r\nc::d,e"), "a%25b%0D%0Ac::d,e");
        assert_eq!(escape_property("a%b\r\nc::d,e"), "a%25b%0D%0Ac%3A%3Ad%2Ce");
        // Already-escaped text is escaped again, so it reads back as typed.
        assert_eq!(escape_data("%0A"), "%250A");
    }
}
