//! Presentation of reports: JSON (exactly the service's), JUnit XML and the
//! terminal table. Reports are data; nothing here changes them.

use super::escape::terminal;
use crate::error::Result;
use crate::report::{Report, Status, Verdict};
use comfy_table::{Cell, Color, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One thing to validate: a display path, where it is, and the output-dir name.
#[derive(Debug, Clone)]
pub struct Job {
    /// Path as shown to the user.
    pub display: String,
    /// `None` for standard input.
    pub path: Option<PathBuf>,
    /// Relative name for `--output-dir`.
    pub out_name: PathBuf,
}

/// One input's result.
pub struct FileResult {
    /// What was validated.
    pub job: Job,
    /// The report, or why there is none.
    pub result: crate::error::Result<Report>,
}

/// Writes to standard output, ignoring a closed pipe (`| head`).
pub fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

fn error_value(o: &FileResult, with_file: bool) -> serde_json::Value {
    let Err(e) = &o.result else { unreachable!("error_value on a report") };
    let mut v = e.envelope();
    if with_file && let Some(map) = v.as_object_mut() {
        map.insert("file".into(), serde_json::Value::String(o.job.display.clone()));
    }
    v
}

/// JSON: the report object (or error envelope) for a single input; an
/// array in path order for several, where a failed input is
/// `{"error": {...}, "file": PATH}`.
pub fn json(outcomes: &[FileResult], single: bool) -> String {
    json_joined(&outcomes.iter().map(|o| json_entry(o, single)).collect::<Vec<_>>(), single)
}

/// One input's part of [`json`]: its report (or error envelope) as
/// pretty-printed JSON, without a trailing newline; for several inputs
/// (`single` false) each line indented by two spaces, as it stands inside
/// the array. Serialised straight from the report, not through a
/// `serde_json::Value` (the same text without building and freeing a tree
/// of maps), so a folder run renders each file's part, indentation
/// included, on the worker that checked it while the other files are
/// still being checked; what is left at the end is to write the parts out.
pub fn json_entry(o: &FileResult, single: bool) -> String {
    let mut out = Vec::with_capacity(4096);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Nested::at(if single { 0 } else { 1 }));
    let written = match &o.result {
        Ok(r) => serde::Serialize::serialize(r, &mut ser),
        Err(_) => serde::Serialize::serialize(&error_value(o, !single), &mut ser),
    };
    written.expect("a report serialises");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// serde_json's pretty printer (two spaces a level) starting `base` levels
/// deep: what [`serde_json::ser::PrettyFormatter`] writes for a value that
/// stands inside `base` arrays, without them. A folder's parts are written
/// at level 1, so they need no re-indenting afterwards; with that pass over
/// every part's text, a folder of 1,000 small files ran 5 % more
/// instructions (BENCHMARKS.md, "Thirteenth step"). The byte-for-byte
/// agreement with the pretty printer is a test below.
struct Nested {
    level: usize,
    has_value: bool,
}

impl Nested {
    /// A formatter whose outermost value stands `base` levels deep.
    fn at(base: usize) -> Self {
        Self { level: base, has_value: false }
    }

    /// Two spaces a level.
    fn indent<W: ?Sized + Write>(&self, w: &mut W) -> std::io::Result<()> {
        const SPACES: &[u8; 64] = b"                                                                ";
        let mut n = 2 * self.level;
        while n > 0 {
            let k = n.min(SPACES.len());
            w.write_all(&SPACES[..k])?;
            n -= k;
        }
        Ok(())
    }

    /// `[` or `{`: one level deeper, nothing in it yet.
    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> std::io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    /// `]` or `}`, on a line of its own when something came before it.
    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> std::io::Result<()> {
        self.level -= 1;
        if self.has_value {
            w.write_all(b"\n")?;
            self.indent(w)?;
        }
        w.write_all(bracket)
    }

    /// Before an element or a key: a comma after the first, a new line, the indent.
    fn item<W: ?Sized + Write>(&self, w: &mut W, first: bool) -> std::io::Result<()> {
        w.write_all(if first { b"\n" } else { b",\n" })?;
        self.indent(w)
    }
}

impl serde_json::ser::Formatter for Nested {
    #[inline]
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"[")
    }

    #[inline]
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]")
    }

    #[inline]
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.item(w, first)
    }

    #[inline]
    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    #[inline]
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"{")
    }

    #[inline]
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}")
    }

    #[inline]
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.item(w, first)
    }

    #[inline]
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }

    #[inline]
    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// [`json`] from the parts [`json_entry`] rendered, in path order: the one
/// part for a single input, else the array serde_json's pretty printer
/// writes around the (already indented) parts.
pub fn json_joined(entries: &[String], single: bool) -> String {
    let mut out = Vec::with_capacity(entries.iter().map(|e| e.len() + 4).sum::<usize>() + 4);
    let _ = write_json_joined(&mut out, entries, single);
    String::from_utf8(out).expect("the parts are UTF-8")
}

/// Writes [`json_joined`]'s text to `w` part by part, without first making
/// one string of it (a folder's array can be tens of megabytes).
pub fn write_json_joined(w: &mut impl Write, entries: &[String], single: bool) -> std::io::Result<()> {
    if single {
        w.write_all(entries.first().map_or("", String::as_str).as_bytes())?;
        return w.write_all(b"\n");
    }
    if entries.is_empty() {
        return w.write_all(b"[]\n");
    }
    for (i, e) in entries.iter().enumerate() {
        w.write_all(if i == 0 { b"[\n  " } else { b",\n  " })?;
        w.write_all(e.as_bytes())?;
    }
    w.write_all(b"\n]\n")
}

/// [`write_json_joined`] to standard output, ignoring a closed pipe (as [`emit`]).
pub fn emit_json_joined(entries: &[String], single: bool) {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let _ = write_json_joined(&mut out, entries, single);
    let _ = out.flush();
}

/// Writes one `NAME.report.json` per input under `dir`.
pub fn write_reports(dir: &Path, outcomes: &[FileResult]) -> Result<()> {
    let fail =
        |e: std::io::Error, p: &Path| crate::error::Error::bad_request(format!("cannot write {}: {e}", p.display()));
    for o in outcomes {
        let mut name = o.job.out_name.clone().into_os_string();
        name.push(".report.json");
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| fail(e, parent))?;
        }
        let text = match &o.result {
            Ok(r) => r.to_json_pretty(),
            Err(_) => format!("{}\n", serde_json::to_string_pretty(&error_value(o, false)).expect("JSON serialises")),
        };
        std::fs::write(&path, text).map_err(|e| fail(e, &path))?;
    }
    Ok(())
}

fn xml_escape(s: &str) -> String {
    super::escape::markup(s, super::escape::Apostrophe::Xml)
}

/// JUnit XML: a testsuite per file, a testcase per check. Fail is a
/// `<failure>`, warn passes with the message in `<system-out>`, skipped is
/// `<skipped>`; a file that cannot be validated is one testcase with `<error>`.
pub fn junit(outcomes: &[FileResult]) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"meshcheck\">\n");
    for o in outcomes {
        let name = xml_escape(&o.job.display);
        match &o.result {
            Ok(r) => {
                let failures = r.checks.iter().filter(|c| c.status == Status::Fail).count();
                let skipped = r.checks.iter().filter(|c| c.status == Status::Skipped).count();
                s.push_str(&format!(
                    "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">\n",
                    r.checks.len()
                ));
                for c in &r.checks {
                    s.push_str(&format!(
                        "    <testcase classname=\"{name}\" name=\"{} {}\">",
                        xml_escape(&c.id),
                        xml_escape(&c.name)
                    ));
                    let msg = xml_escape(&c.message);
                    match c.status {
                        Status::Fail => s.push_str(&format!(
                            "<failure message=\"{msg}\" type=\"{}\">{}</failure>",
                            c.severity.as_str(),
                            xml_escape(&serde_json::Value::Object(c.measured.clone()).to_string())
                        )),
                        Status::Warn => s.push_str(&format!("<system-out>WARN: {msg}</system-out>")),
                        Status::Skipped => s.push_str(&format!("<skipped message=\"{msg}\"/>")),
                        Status::Pass => {}
                    }
                    s.push_str("</testcase>\n");
                }
                s.push_str("  </testsuite>\n");
            }
            Err(e) => {
                s.push_str(&format!(
                    "  <testsuite name=\"{name}\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\">\n"
                ));
                s.push_str(&format!(
                    "    <testcase classname=\"{name}\" name=\"load\"><error message=\"{}\" type=\"{}\"/></testcase>\n",
                    xml_escape(&e.message),
                    e.code.as_str()
                ));
                s.push_str("  </testsuite>\n");
            }
        }
    }
    s.push_str("</testsuites>\n");
    s
}

fn status_cell(status: Status, colour: bool, accepted: bool) -> Cell {
    let word = status.as_str().to_uppercase();
    let cell = Cell::new(if accepted { format!("{word} (baseline)") } else { word });
    if !colour {
        return cell;
    }
    cell.fg(match status {
        Status::Pass => Color::Green,
        Status::Warn => Color::Yellow,
        Status::Fail => Color::Red,
        Status::Skipped => Color::DarkGrey,
    })
}

fn verdict_text(v: Verdict, colour: bool) -> String {
    let word = v.as_str().to_uppercase();
    if !colour {
        return word;
    }
    let code = match v {
        Verdict::Pass => 32,
        Verdict::Warn => 33,
        Verdict::Fail => 31,
    };
    format!("\x1b[1;{code}m{word}\x1b[0m")
}

fn new_table(colour: bool) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic);
    if !colour {
        t.force_no_tty();
    }
    t
}

/// The terminal table: one table per file (a row per check: status, and the
/// message that states measured against threshold), then for several files
/// a summary of every file and the list of those that failed.
pub fn table(outcomes: &[FileResult], colour: bool) -> String {
    table_marked(outcomes, colour, &BTreeSet::new())
}

/// [`table`], with the checks (and error codes) a baseline accepted marked
/// `(baseline)`: `accepted` holds (index of the file, check ID or error code).
pub fn table_marked(outcomes: &[FileResult], colour: bool, accepted: &BTreeSet<(usize, String)>) -> String {
    let is_accepted = |file: usize, rule: &str| accepted.contains(&(file, rule.to_string()));
    let mut s = String::new();
    for (file, o) in outcomes.iter().enumerate() {
        match &o.result {
            Ok(r) => {
                s.push_str(&format!(
                    "{}  {}  ({} profile; {} errors, {} warnings, {} skipped)\n",
                    terminal(&o.job.display),
                    verdict_text(r.verdict, colour),
                    r.profile.name,
                    r.summary.errors,
                    r.summary.warnings,
                    r.summary.skipped
                ));
                let mut t = new_table(colour);
                t.set_header(vec!["Check", "Name", "Severity", "Status", "Measured vs threshold"]);
                for c in &r.checks {
                    t.add_row(vec![
                        Cell::new(&c.id),
                        Cell::new(&c.name),
                        Cell::new(c.severity.as_str()),
                        status_cell(c.status, colour, is_accepted(file, &c.id)),
                        Cell::new(terminal(&c.message)),
                    ]);
                }
                s.push_str(&t.to_string());
                s.push_str("\n\n");
            }
            Err(e) => s.push_str(&format!(
                "{}  {}{}  {}: {}\n\n",
                terminal(&o.job.display),
                if colour { "\x1b[1;31mERROR\x1b[0m" } else { "ERROR" },
                if is_accepted(file, e.code.as_str()) { " (baseline)" } else { "" },
                e.code,
                terminal(&e.message)
            )),
        }
    }
    if outcomes.len() > 1 {
        let mut t = new_table(colour);
        t.set_header(vec!["File", "Verdict", "Errors", "Warnings", "Failing checks"]);
        let mut failed = Vec::new();
        let (mut pass, mut warn, mut fail, mut bad) = (0, 0, 0, 0);
        for o in outcomes {
            match &o.result {
                Ok(r) => {
                    match r.verdict {
                        Verdict::Pass => pass += 1,
                        Verdict::Warn => warn += 1,
                        Verdict::Fail => {
                            fail += 1;
                            failed.push(terminal(&o.job.display).into_owned());
                        }
                    }
                    let failing: Vec<&str> = r
                        .checks
                        .iter()
                        .filter(|c| matches!(c.status, Status::Fail | Status::Warn))
                        .map(|c| c.id.as_str())
                        .collect();
                    let vcell = Cell::new(r.verdict.as_str().to_uppercase());
                    let vcell = if colour {
                        vcell.fg(match r.verdict {
                            Verdict::Pass => Color::Green,
                            Verdict::Warn => Color::Yellow,
                            Verdict::Fail => Color::Red,
                        })
                    } else {
                        vcell
                    };
                    t.add_row(vec![
                        Cell::new(terminal(&o.job.display)),
                        vcell,
                        Cell::new(r.summary.errors),
                        Cell::new(r.summary.warnings),
                        Cell::new(failing.join(", ")),
                    ]);
                }
                Err(e) => {
                    bad += 1;
                    failed.push(terminal(&o.job.display).into_owned());
                    t.add_row(vec![
                        Cell::new(terminal(&o.job.display)),
                        Cell::new("ERROR"),
                        Cell::new("-"),
                        Cell::new("-"),
                        Cell::new(e.code.as_str()),
                    ]);
                }
            }
        }
        s.push_str("Summary\n");
        s.push_str(&t.to_string());
        s.push_str(&format!(
            "\n{} files: {pass} pass, {warn} warn, {fail} fail, {bad} could not be validated\n",
            outcomes.len()
        ));
        if !failed.is_empty() {
            s.push_str("Failed:\n");
            for f in failed {
                s.push_str(&format!("  {f}\n"));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::Nested;
    use serde_json::{Value, json};

    fn nested(v: &Value, base: usize) -> String {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Nested::at(base));
        serde::Serialize::serialize(v, &mut ser).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The values a report holds: nested objects and arrays, empty ones,
    /// strings with newlines and escapes, numbers, null.
    fn samples() -> Vec<Value> {
        vec![
            json!({}),
            json!([]),
            json!("a\nb \"quoted\" \u{1}"),
            json!(1.5),
            json!({"a": [], "b": {}, "c": [1, [2, []], {"d": null}], "e": {"f": {"g": [true, false]}}}),
            json!([{"status": "pass", "measured": {"x": 0.1, "list": [1, 2, 3]}, "threshold": null}, [], {}]),
            // Deeper than the formatter's run of 64 spaces.
            json!({"deep": (0..40).fold(json!(1), |v, _| json!([v]))}),
        ]
    }

    #[test]
    fn at_level_zero_it_is_the_pretty_printer() {
        for v in samples() {
            assert_eq!(nested(&v, 0), serde_json::to_string_pretty(&v).unwrap());
        }
    }

    #[test]
    fn folder_parts_joined_are_the_pretty_printed_array() {
        let values = samples();
        let parts: Vec<String> = values.iter().map(|v| nested(v, 1)).collect();
        let joined = super::json_joined(&parts, false);
        assert_eq!(joined, format!("{}\n", serde_json::to_string_pretty(&Value::Array(values)).unwrap()));
    }
}
