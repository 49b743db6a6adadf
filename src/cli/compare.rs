//! The comparison of two reports (`meshcheck compare OLD NEW`): what changed
//! and whether NEW is worse, and its presentations (terminal table, JSON,
//! Markdown, HTML). `compare_cmd.rs` reads the two sides; nothing here reads
//! files.
//!
//! - **Status changes**: every selected check whose status differs. pass <
//!   warn < fail; a change between two of those is `worse` or `better`, a
//!   change to or from `skipped` is `changed` (never worse).
//! - **Deltas**: every numeric `measured` value present in both reports for
//!   the same check that differs, and the report's `stats` counts plus the
//!   input's size in bytes (`stats.file_bytes`) that differ.
//! - **Budget figures**: the measured value a check's gauge names (triangles,
//!   vertices, draw calls, materials, texture memory, texture size, file
//!   size, …) and every stats count.
//! - **Worse**: the verdict got worse, a status got worse, or a budget figure
//!   grew by more than the tolerance (% of OLD's value; any growth from 0).
//! - **Views** (both sides with stills): per view, the mean absolute
//!   difference and SSIM (`stilldiff.rs`).

use super::html::{self, esc};
use super::stilldiff;
use crate::checks::catalog;
use crate::engine::Selection;
use crate::report::{Mode, Report, Status, Verdict, num};
use comfy_table::{Cell, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use image::RgbaImage;
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write as _;

/// One still of a side.
pub struct Still {
    /// `front`, `right`, … (the file stem of a screenshot).
    pub name: String,
    /// The image as drawn.
    pub image: RgbaImage,
}

/// One side of a comparison.
pub struct Side {
    /// The path as the user gave it.
    pub path: String,
    /// Whether it was a report JSON file (else an asset validated now).
    pub from_report: bool,
    /// The report.
    pub report: Report,
    /// Its stills (full mode on an asset, or a report's screenshots read back).
    pub stills: Vec<Still>,
}

/// A side as the comparison names it.
#[derive(Debug, Clone, Serialize)]
pub struct SideInfo {
    /// The path as given.
    pub path: String,
    /// `asset` (validated now) or `report` (read from a report JSON file).
    pub source: &'static str,
    /// The input's file name.
    pub filename: String,
    /// The input's SHA-256.
    pub sha256: String,
    /// The profile it was measured against.
    pub profile: String,
    /// `checks_only` or `full`.
    pub mode: Mode,
    /// Its verdict.
    pub verdict: Verdict,
}

/// The direction of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// pass → warn → fail.
    Worse,
    /// fail → warn → pass.
    Better,
    /// To or from `skipped`.
    Changed,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Direction::Worse => "worse",
            Direction::Better => "better",
            Direction::Changed => "changed",
        }
    }
}

/// A check whose status changed.
#[derive(Debug, Clone, Serialize)]
pub struct StatusChange {
    /// Check ID.
    pub id: String,
    /// Check name.
    pub name: String,
    /// OLD's status.
    pub old: Status,
    /// NEW's status.
    pub new: Status,
    /// Worse, better or changed.
    pub change: Direction,
}

/// A numeric value that differs.
#[derive(Debug, Clone, Serialize)]
pub struct Delta {
    /// `stats.KEY` or `CHECK-ID.KEY`.
    pub figure: String,
    /// The check, for a measured value.
    pub check: Option<String>,
    /// The key.
    pub key: String,
    /// OLD's value.
    pub old: Value,
    /// NEW's value.
    pub new: Value,
    /// NEW − OLD.
    pub delta: Value,
    /// The change in % of OLD (null when OLD is 0).
    pub delta_pct: Value,
    /// Whether it is a budget figure (a gauge's measured value, or a stats count).
    pub budget: bool,
    /// Whether it grew by more than the tolerance (budget figures only).
    pub worse: bool,
}

/// The difference of one view.
#[derive(Debug, Clone, Serialize)]
pub struct ViewDiff {
    /// The view.
    pub view: String,
    /// Mean absolute difference over R, G and B, % of 255.
    pub mad_pct: Value,
    /// SSIM of the luma on 8×8 windows.
    pub ssim: Value,
}

/// What changed from OLD to NEW.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The old side.
    pub old: SideInfo,
    /// The new side.
    pub new: SideInfo,
    /// Whether NEW is worse (the exit code is 1 then).
    pub worse: bool,
    /// Why NEW is worse, one line each.
    pub reasons: Vec<String>,
    /// How much a budget figure may grow, % of OLD's value.
    pub tolerance_pct: Value,
    /// Checks whose status changed.
    pub status_changes: Vec<StatusChange>,
    /// Numeric values that differ.
    pub deltas: Vec<Delta>,
    /// Per view, when both sides have stills.
    pub views: Vec<ViewDiff>,
    /// What to keep in mind (different profiles or modes, same bytes).
    pub notes: Vec<String>,
}

fn rank(s: Status) -> Option<u8> {
    match s {
        Status::Pass => Some(0),
        Status::Warn => Some(1),
        Status::Fail => Some(2),
        Status::Skipped => None,
    }
}

fn info(s: &Side) -> SideInfo {
    let r = &s.report;
    SideInfo {
        path: s.path.clone(),
        source: if s.from_report { "report" } else { "asset" },
        filename: r.input.filename.clone(),
        sha256: r.input.sha256.clone(),
        profile: r.profile.name.clone(),
        mode: r.mode,
        verdict: r.verdict,
    }
}

/// The stats counts as named figures, plus the input's size.
fn stats_figures(r: &Report) -> Vec<(&'static str, f64)> {
    let s = &r.stats;
    vec![
        ("nodes", s.nodes as f64),
        ("meshes", s.meshes as f64),
        ("primitives", s.primitives as f64),
        ("instances", s.instances as f64),
        ("triangles", s.triangles as f64),
        ("vertices", s.vertices as f64),
        ("draw_calls", s.draw_calls as f64),
        ("materials", s.materials as f64),
        ("textures", s.textures as f64),
        ("images", s.images as f64),
        ("animations", s.animations as f64),
        ("skins", s.skins as f64),
        ("file_bytes", r.input.bytes as f64),
    ]
}

fn fmt_pct(p: f64) -> String {
    let sign = if p > 0.0 {
        "+"
    } else if p < 0.0 {
        "−"
    } else {
        ""
    };
    format!("{sign}{}%", html::num(p.abs(), Some(1)))
}

fn delta(figure: String, check: Option<&str>, key: &str, old: f64, new: f64, budget: bool, tol: f64) -> Delta {
    let pct = (old != 0.0).then(|| (new - old) / old.abs() * 100.0);
    let worse = budget && new > old && pct.is_none_or(|p| p > tol);
    Delta {
        figure,
        check: check.map(str::to_string),
        key: key.to_string(),
        old: num(old),
        new: num(new),
        delta: num(new - old),
        delta_pct: pct.map_or(Value::Null, num),
        budget,
        worse,
    }
}

/// Compares two sides: the checks `selection` runs, budget figures allowed
/// to grow by `tolerance_pct` % of OLD's value.
pub fn compare(old: &Side, new: &Side, tolerance_pct: f64, selection: &Selection) -> Comparison {
    let (o, n) = (&old.report, &new.report);
    let mut reasons = Vec::new();
    if n.verdict > o.verdict {
        reasons.push(format!("the verdict went from {} to {}", o.verdict.as_str(), n.verdict.as_str()));
    }
    let mut status_changes = Vec::new();
    let mut deltas = Vec::new();
    for nc in &n.checks {
        if !selection.runs(&nc.id) {
            continue;
        }
        let Some(oc) = o.checks.iter().find(|c| c.id == nc.id) else { continue };
        if oc.status != nc.status {
            let change = match (rank(oc.status), rank(nc.status)) {
                (Some(a), Some(b)) if b > a => Direction::Worse,
                (Some(_), Some(_)) => Direction::Better,
                _ => Direction::Changed,
            };
            if change == Direction::Worse {
                reasons.push(format!(
                    "{} {} went from {} to {}",
                    nc.id,
                    nc.name,
                    oc.status.as_str(),
                    nc.status.as_str()
                ));
            }
            status_changes.push(StatusChange {
                id: nc.id.clone(),
                name: nc.name.clone(),
                old: oc.status,
                new: nc.status,
                change,
            });
        }
        let gauge = catalog::find(&nc.id).and_then(|d| d.gauge).map(|(m, _)| m);
        for (key, ov) in &oc.measured {
            let (Some(a), Some(b)) = (ov.as_f64(), nc.measured.get(key).and_then(Value::as_f64)) else { continue };
            if !ov.is_number() || a == b {
                continue;
            }
            let d =
                delta(format!("{}.{key}", nc.id), Some(&nc.id), key, a, b, gauge == Some(key.as_str()), tolerance_pct);
            deltas.push(d);
        }
    }
    for ((key, a), (_, b)) in stats_figures(o).into_iter().zip(stats_figures(n)) {
        if a != b {
            deltas.push(delta(format!("stats.{key}"), None, key, a, b, true, tolerance_pct));
        }
    }
    for d in deltas.iter().filter(|d| d.worse) {
        let pct = d.delta_pct.as_f64().map(|p| format!(" ({})", fmt_pct(p))).unwrap_or_default();
        reasons.push(format!(
            "{} grew from {} to {}{pct}, more than the {}% tolerance",
            d.figure,
            fmt_num(&d.key, &d.old),
            fmt_num(&d.key, &d.new),
            html::num(tolerance_pct, None)
        ));
    }
    let mut views = Vec::new();
    for a in &old.stills {
        if let Some(b) = new.stills.iter().find(|b| b.name == a.name) {
            let d = stilldiff::difference(&a.image, &b.image);
            views.push(ViewDiff { view: a.name.clone(), mad_pct: num(d.mad_pct), ssim: num(d.ssim) });
        }
    }
    let mut notes = Vec::new();
    if o.input.sha256 == n.input.sha256 {
        notes.push("OLD and NEW hold the same bytes.".to_string());
    }
    if o.profile.name != n.profile.name || o.profile.thresholds != n.profile.thresholds {
        notes.push(format!(
            "OLD was measured against the {} profile and NEW against {}{}: a status may change with the budget.",
            o.profile.name,
            n.profile.name,
            if o.profile.name == n.profile.name { " with other thresholds" } else { "" }
        ));
    }
    if o.mode != n.mode {
        notes.push(format!(
            "OLD ran in {} mode and NEW in {}: the renderer's checks ran on one side only.",
            o.mode.as_str(),
            n.mode.as_str()
        ));
    }
    Comparison {
        old: info(old),
        new: info(new),
        worse: !reasons.is_empty(),
        reasons,
        tolerance_pct: num(tolerance_pct),
        status_changes,
        deltas,
        views,
        notes,
    }
}

/// A figure's value in words (bytes as KiB/MiB, counts with separators).
fn fmt_num(key: &str, v: &Value) -> String {
    html::fmt_value(key, v)
}

fn fmt_delta(d: &Delta) -> String {
    let x = d.delta.as_f64().unwrap_or(0.0);
    let body = html::fmt_value(&d.key, &Value::from(x.abs()));
    format!(
        "{}{body}",
        if x > 0.0 {
            "+"
        } else if x < 0.0 {
            "−"
        } else {
            ""
        }
    )
}

fn fmt_delta_pct(d: &Delta) -> String {
    d.delta_pct.as_f64().map(fmt_pct).unwrap_or_else(|| "from 0".into())
}

fn verdict_line(c: &Comparison) -> String {
    if c.worse {
        format!("NEW is worse than OLD ({}):", plural(c.reasons.len(), "reason", "reasons"))
    } else {
        format!("NEW is not worse than OLD (tolerance {}%).", html::num(c.tolerance_pct.as_f64().unwrap_or(0.0), None))
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {many}") }
}

fn new_table() -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic);
    t.force_no_tty();
    t
}

fn view_line(v: &ViewDiff) -> (String, String, String) {
    (
        html::view_label(&v.view),
        format!("{}%", html::num(v.mad_pct.as_f64().unwrap_or(0.0), Some(2))),
        html::num(v.ssim.as_f64().unwrap_or(0.0), Some(4)),
    )
}

/// The terminal table.
pub fn table(c: &Comparison) -> String {
    let mut s = String::new();
    let mut t = new_table();
    t.set_header(vec!["", "File", "Source", "Verdict", "Profile", "Mode"]);
    for (label, side) in [("OLD", &c.old), ("NEW", &c.new)] {
        t.add_row(vec![
            Cell::new(label),
            Cell::new(&side.path),
            Cell::new(side.source),
            Cell::new(side.verdict.as_str().to_uppercase()),
            Cell::new(&side.profile),
            Cell::new(side.mode.as_str()),
        ]);
    }
    let _ = writeln!(s, "{t}");
    if c.status_changes.is_empty() {
        s.push_str("No check changed status.\n");
    } else {
        let mut t = new_table();
        t.set_header(vec!["Check", "Name", "Old", "New", "Change"]);
        for ch in &c.status_changes {
            t.add_row(vec![
                Cell::new(&ch.id),
                Cell::new(&ch.name),
                Cell::new(ch.old.as_str().to_uppercase()),
                Cell::new(ch.new.as_str().to_uppercase()),
                Cell::new(ch.change.as_str()),
            ]);
        }
        let _ = writeln!(s, "Status changes\n{t}");
    }
    if c.deltas.is_empty() {
        s.push_str("No measured value changed.\n");
    } else {
        let mut t = new_table();
        t.set_header(vec!["Figure", "Old", "New", "Delta", "Delta %", "Budget"]);
        for d in &c.deltas {
            t.add_row(vec![
                Cell::new(&d.figure),
                Cell::new(fmt_num(&d.key, &d.old)),
                Cell::new(fmt_num(&d.key, &d.new)),
                Cell::new(fmt_delta(d)),
                Cell::new(fmt_delta_pct(d)),
                Cell::new(if d.worse {
                    "over tolerance"
                } else if d.budget {
                    "yes"
                } else {
                    ""
                }),
            ]);
        }
        let _ = writeln!(s, "Measured values\n{t}");
    }
    if !c.views.is_empty() {
        let mut t = new_table();
        t.set_header(vec!["View", "Mean abs. difference", "SSIM"]);
        for v in &c.views {
            let (a, b, d) = view_line(v);
            t.add_row(vec![a, b, d]);
        }
        let _ = writeln!(s, "Views\n{t}");
    }
    for n in &c.notes {
        let _ = writeln!(s, "Note: {n}");
    }
    let _ = writeln!(s, "{}", verdict_line(c));
    for r in &c.reasons {
        let _ = writeln!(s, "  - {r}");
    }
    s
}

/// JSON: the comparison object.
pub fn json(c: &Comparison) -> String {
    let mut s = serde_json::to_string_pretty(c).expect("a comparison serialises");
    s.push('\n');
    s
}

/// Escapes text for a Markdown table cell or line: Markdown's punctuation
/// is backslash-escaped, `<`, `>` and `&` become entities (no HTML gets
/// through to a PR comment), line breaks become spaces.
pub fn md(s: &str) -> String {
    super::escape::markdown(s)
}

/// Markdown (a PR comment or a job summary).
pub fn markdown(c: &Comparison) -> String {
    let mut s = String::from("## meshcheck compare\n\n");
    s.push_str("| | File | Source | Verdict | Profile | Mode |\n|---|---|---|---|---|---|\n");
    for (label, side) in [("Old", &c.old), ("New", &c.new)] {
        let _ = writeln!(
            s,
            "| {label} | {} | {} | **{}** | {} | {} |",
            md(&side.path),
            side.source,
            side.verdict.as_str(),
            md(&side.profile),
            side.mode.as_str()
        );
    }
    let _ = writeln!(s, "\n**{}**", md(&verdict_line(c)));
    for r in &c.reasons {
        let _ = writeln!(s, "- {}", md(r));
    }
    s.push_str("\n### Status changes\n\n");
    if c.status_changes.is_empty() {
        s.push_str("No check changed status.\n");
    } else {
        s.push_str("| Check | Name | Old | New | Change |\n|---|---|---|---|---|\n");
        for ch in &c.status_changes {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                md(&ch.id),
                md(&ch.name),
                ch.old.as_str(),
                ch.new.as_str(),
                ch.change.as_str()
            );
        }
    }
    s.push_str("\n### Measured values\n\n");
    if c.deltas.is_empty() {
        s.push_str("No measured value changed.\n");
    } else {
        s.push_str("| Figure | Old | New | Delta | Delta % | Budget |\n|---|---:|---:|---:|---:|---|\n");
        for d in &c.deltas {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                md(&d.figure),
                md(&fmt_num(&d.key, &d.old)),
                md(&fmt_num(&d.key, &d.new)),
                md(&fmt_delta(d)),
                md(&fmt_delta_pct(d)),
                if d.worse {
                    "**over tolerance**"
                } else if d.budget {
                    "yes"
                } else {
                    ""
                }
            );
        }
    }
    if !c.views.is_empty() {
        s.push_str("\n### Views\n\nMean absolute difference over R, G and B (% of 255) and SSIM of the luma.\n\n| View | Difference | SSIM |\n|---|---:|---:|\n");
        for v in &c.views {
            let (a, b, d) = view_line(v);
            let _ = writeln!(s, "| {} | {} | {} |", md(&a), md(&b), md(&d));
        }
    }
    if !c.notes.is_empty() {
        s.push('\n');
        for n in &c.notes {
            let _ = writeln!(s, "> {}", md(n));
        }
    }
    s
}

fn side_card(label: &str, side: &SideInfo) -> String {
    let v = side.verdict.as_str();
    format!(
        "<div class=\"card side\" data-side=\"{}\"><h3>{label}</h3><p><strong>{}</strong></p><p>{} {} · {} · profile {} · mode {}</p><p class=\"meta\">SHA-256 {}</p></div>",
        esc(&label.to_ascii_lowercase()),
        html::breakable(&side.path),
        html::pill(v, v),
        esc(&side.filename),
        if side.source == "report" { "from a report" } else { "validated now" },
        esc(&side.profile),
        side.mode.as_str(),
        esc(&side.sha256)
    )
}

fn shrunk_png(image: &RgbaImage) -> String {
    html::data_uri("image/png", &html::png_bytes(&html::shrink(image, html::CARD_STILL_SIZE)))
}

/// HTML: one self-contained page (the report card's look and rules): the
/// outcome, both sides, the status changes, the deltas and, when both sides
/// have stills, each view side by side with its difference.
pub fn html(c: &Comparison, old: &Side, new: &Side) -> String {
    let mut b = String::new();
    let (class, title) =
        if c.worse { ("fail", "NEW is worse than OLD") } else { ("pass", "NEW is not worse than OLD") };
    let _ = write!(
        b,
        "<div class=\"card verdict {class}\" data-worse=\"{}\"><div class=\"v-icon\">{}</div><div class=\"v-main\"><div class=\"v-head\"><h2>{title}</h2></div><p class=\"v-file\">{} → {} · tolerance {}%</p>",
        c.worse,
        html::icon(class, 28, ""),
        esc(&old.path),
        esc(&new.path),
        html::num(c.tolerance_pct.as_f64().unwrap_or(0.0), None)
    );
    if !c.reasons.is_empty() {
        b.push_str("<ul class=\"msgs\">");
        for r in &c.reasons {
            let _ = write!(b, "<li>{}</li>", esc(r));
        }
        b.push_str("</ul>");
    }
    b.push_str("</div></div>\n<div class=\"sides\">");
    b.push_str(&side_card("Old", &c.old));
    b.push_str(&side_card("New", &c.new));
    b.push_str("</div>\n");
    for n in &c.notes {
        let _ = writeln!(b, "<p class=\"meta\">{}</p>", esc(n));
    }

    b.push_str("<div class=\"section-head\"><h2>Status changes</h2></div>\n");
    if c.status_changes.is_empty() {
        b.push_str("<p class=\"card empty\">No check changed status.</p>\n");
    } else {
        b.push_str("<div class=\"card tablecard\"><table class=\"grid\" id=\"status-changes\"><thead><tr><th>Check</th><th>Name</th><th>Old</th><th>New</th><th>Change</th></tr></thead><tbody>");
        for ch in &c.status_changes {
            let _ = write!(
                b,
                "<tr class=\"{}\" data-check=\"{}\"><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                ch.change.as_str(),
                esc(&ch.id),
                esc(&ch.id),
                esc(&ch.name),
                html::pill(ch.old.as_str(), ch.old.as_str()),
                html::pill(ch.new.as_str(), ch.new.as_str()),
                ch.change.as_str()
            );
        }
        b.push_str("</tbody></table></div>\n");
    }

    b.push_str(
        "<div class=\"section-head\"><h2>Measured values</h2><p>Budget figures may grow by the tolerance.</p></div>\n",
    );
    if c.deltas.is_empty() {
        b.push_str("<p class=\"card empty\">No measured value changed.</p>\n");
    } else {
        b.push_str("<div class=\"card tablecard\"><table class=\"grid\" id=\"deltas\"><thead><tr><th>Figure</th><th class=\"n\">Old</th><th class=\"n\">New</th><th class=\"n\">Delta</th><th class=\"n\">Delta %</th><th>Budget</th></tr></thead><tbody>");
        for d in &c.deltas {
            let x = d.delta.as_f64().unwrap_or(0.0);
            let dir = if x > 0.0 { "up" } else { "down" };
            let _ = write!(
                b,
                "<tr{} data-figure=\"{}\"><td class=\"mono\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\"><span class=\"{}\">{}</span></td><td class=\"n\">{}</td><td>{}</td></tr>",
                if d.worse { " class=\"worse\"" } else { "" },
                esc(&d.figure),
                html::breakable(&d.figure),
                esc(&fmt_num(&d.key, &d.old)),
                esc(&fmt_num(&d.key, &d.new)),
                if d.budget { dir } else { "" },
                esc(&fmt_delta(d)),
                esc(&fmt_delta_pct(d)),
                if d.worse {
                    "over tolerance"
                } else if d.budget {
                    "yes"
                } else {
                    ""
                }
            );
        }
        b.push_str("</tbody></table></div>\n");
    }

    b.push_str("<div class=\"section-head\"><h2>Views</h2>");
    if c.views.is_empty() {
        b.push_str("</div>\n<p class=\"card empty\">No stills on both sides: compare two assets with --mode full (or two reports written with --screenshots).</p>\n");
    } else {
        b.push_str("<p>Difference: mean absolute difference over R, G and B (% of 255); SSIM of the luma on 8×8 windows (1 is identical).</p></div>\n<ul class=\"pairs\">");
        for v in &c.views {
            let (Some(a), Some(n)) =
                (old.stills.iter().find(|s| s.name == v.view), new.stills.iter().find(|s| s.name == v.view))
            else {
                continue;
            };
            let (label, mad, ssim) = view_line(v);
            let _ = write!(
                b,
                "<li class=\"card pair\" data-view=\"{}\"><div class=\"pair-head\"><strong>{}</strong><span>difference {mad} · SSIM {ssim}</span></div><div class=\"pair-imgs\"><figure><img src=\"{}\" width=\"{s}\" height=\"{s}\" alt=\"{} view, old\"><figcaption>Old</figcaption></figure><figure><img src=\"{}\" width=\"{s}\" height=\"{s}\" alt=\"{} view, new\"><figcaption>New</figcaption></figure></div></li>",
                esc(&v.view),
                esc(&label),
                shrunk_png(&a.image),
                esc(&label),
                shrunk_png(&n.image),
                esc(&label),
                s = html::CARD_STILL_SIZE
            );
        }
        b.push_str("</ul>\n");
    }
    let title = format!("meshcheck compare: {} → {}", old.path, new.path);
    html::page(&title, "compare", if c.worse { "NEW is worse" } else { "NEW is not worse" }, &b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_escapes_what_could_format_or_inject() {
        assert_eq!(md("a|b <img src=x> *c* [l](u)"), "a\\|b &lt;img src=x&gt; \\*c\\* \\[l\\]\\(u\\)");
        assert_eq!(md("x\ny"), "x y");
    }
}
