//! `--format html`: one self-contained HTML report card for a file, or for a
//! folder an index (a row per file, linking to its card) and a card per file.
//!
//! A card shows the verdict, the scene counts, in full mode the six stills
//! (and the turntable GIF when asked), the notes on how the file was read,
//! and the checks grouped by family (`checks::catalog::FAMILIES`: label and
//! blurb) with the gauge each check declares, measured against threshold,
//! and the glTF-Validator's messages. It looks like the demo page (its
//! palette and type, `report_card.css`).
//!
//! Self-contained and inert: the stylesheet is inline and allowed by its
//! SHA-256 in a Content-Security-Policy meta tag (`default-src 'none'`, so
//! no script runs and nothing is fetched), images are `data:` URIs, gauges
//! are SVG shapes (no `style` attributes), and every string that comes from
//! the asset or the report (file names, URIs, pointers, names, messages) is
//! escaped by [`esc`]. The page needs no JavaScript. `compare --format html`
//! builds its page from the same parts.

use super::output::FileResult;
use crate::checks::catalog::{self, FAMILIES};
use crate::report::{CheckResult, Report, Severity, Status, Verdict};
use base64::Engine as _;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::sync::LazyLock;

/// The stylesheet, inline in every page.
pub const CSS: &str = concat!(include_str!("../palette.css"), include_str!("report_card.css"));

/// Width and height of a still as the card embeds it (the stills are drawn
/// at 1024 px; a card shows them about 330 px wide).
pub const CARD_STILL_SIZE: u32 = 512;

/// Most validator messages a card lists per check (the report JSON has all).
pub const MAX_MESSAGES: usize = 20;

/// One still as a card embeds it.
#[derive(Debug, Clone)]
pub struct CardStill {
    /// `front`, `right`, `back`, `left`, `top`, `three_quarter` (or `viewNN_…`).
    pub name: String,
    /// Share of the frame the model covers, %.
    pub visible_pct: f64,
    /// The PNG, at most [`CARD_STILL_SIZE`] pixels wide.
    pub png: Vec<u8>,
}

/// The pictures of one file's card: its stills and, when asked, a turntable.
#[derive(Debug, Clone, Default)]
pub struct Visuals {
    /// The standard views, in order.
    pub stills: Vec<CardStill>,
    /// The turntable GIF.
    pub turntable: Option<Vec<u8>>,
}

/// The stills of a full-mode run as a card embeds them: scaled down to
/// [`CARD_STILL_SIZE`] and encoded as PNG.
#[cfg(feature = "render")]
pub fn card_stills(rendered: &crate::engine::Rendered) -> Vec<CardStill> {
    rendered
        .stills
        .iter()
        .enumerate()
        .map(|(i, s)| CardStill {
            name: s.angle.file_stem(i),
            visible_pct: s.visible_pct(),
            png: crate::render::image_out::png(&shrink(&s.image, CARD_STILL_SIZE)),
        })
        .collect()
}

/// `image` scaled down (never up) to fit `size` pixels.
pub fn shrink(image: &image::RgbaImage, size: u32) -> image::RgbaImage {
    if image.width() <= size && image.height() <= size {
        return image.clone();
    }
    image::imageops::thumbnail(image, size, size)
}

/// PNG bytes of an image (for stills that did not come from the renderer).
pub fn png_bytes(image: &image::RgbaImage) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, image::ImageFormat::Png).expect("an in-memory PNG encodes");
    out.into_inner()
}

/// Escapes text for HTML element content and double- or single-quoted
/// attribute values; control characters other than tab and line feed are
/// dropped.
pub fn esc(s: &str) -> String {
    super::escape::markup(s, super::escape::Apostrophe::Html)
}

/// Escaped text that may wrap after `_` and `/` (validator codes, JSON
/// pointers, paths) rather than inside a word.
pub fn breakable(s: &str) -> String {
    esc(s).replace('_', "_<wbr>").replace('/', "/<wbr>")
}

/// A `data:` URI.
pub fn data_uri(mime: &str, bytes: &[u8]) -> String {
    format!("data:{mime};base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The Content-Security-Policy of every page: nothing may load or run but
/// the inline stylesheet (by its hash) and `data:` images.
pub fn csp() -> &'static str {
    static CSP: LazyLock<String> = LazyLock::new(|| {
        let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(CSS.as_bytes()));
        format!("default-src 'none'; img-src data:; style-src 'sha256-{hash}'; base-uri 'none'; form-action 'none'")
    });
    &CSP
}

const LOGO: &str = r##"<svg width="30" height="30" viewBox="0 0 32 32" aria-hidden="true"><rect width="32" height="32" rx="8" fill="#4f46e5"/><path d="M16 6l9 5v10l-9 5-9-5V11z" fill="none" stroke="#fff" stroke-width="2" stroke-linejoin="round"/><path d="M12 16.5l3 3 5-6" fill="none" stroke="#fff" stroke-width="2.4" stroke-linecap="round" stroke-linejoin="round"/></svg>"##;

const FAVICON: &str = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Crect width='32' height='32' rx='7' fill='%234f46e5'/%3E%3Cpath d='M16 6l9 5v10l-9 5-9-5V11z' fill='none' stroke='white' stroke-width='2' stroke-linejoin='round'/%3E%3Cpath d='M12 16.5l3 3 5-6' fill='none' stroke='white' stroke-width='2.4' stroke-linecap='round' stroke-linejoin='round'/%3E%3C/svg%3E";

/// A whole page: the CSP, the inline stylesheet, the header (`tag` beside
/// the name, `aside` on the right) and `body` (already HTML).
pub fn page(title: &str, tag: &str, aside: &str, body: &str) -> String {
    let mut s = String::with_capacity(body.len() + CSS.len() + 2048);
    s.push_str("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(s, "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">", csp());
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    s.push_str("<meta name=\"color-scheme\" content=\"light dark\">\n");
    s.push_str("<meta name=\"referrer\" content=\"no-referrer\">\n");
    let _ = writeln!(s, "<meta name=\"generator\" content=\"meshcheck {}\">", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(s, "<title>{}</title>", esc(title));
    let _ = writeln!(s, "<link rel=\"icon\" href=\"{FAVICON}\">");
    let _ = writeln!(s, "<style>{CSS}</style>\n</head>\n<body>");
    let _ = writeln!(
        s,
        "<header class=\"top\"><div class=\"wrap\"><div class=\"brand\">{LOGO}<span>meshcheck</span><span class=\"tag\">{}</span></div><span class=\"top-meta\">{}</span></div></header>",
        esc(tag),
        esc(aside)
    );
    s.push_str("<main class=\"wrap\">\n");
    s.push_str(body);
    s.push_str("</main>\n<footer><div class=\"wrap\">");
    let _ = write!(
        s,
        "Made by meshcheck {}, a glTF 2.0 asset validator. This page is self-contained: it loads nothing and runs no script.",
        env!("CARGO_PKG_VERSION")
    );
    s.push_str("</div></footer>\n</body>\n</html>\n");
    s
}

/// An inline SVG icon: `pass`, `warn`, `fail` or `chev`.
pub fn icon(kind: &str, size: u32, class: &str) -> String {
    let d = match kind {
        "pass" => "M5 12.5l4.5 4.5L19 7.5",
        "warn" => "M12 6v7.5M12 17.6v.2",
        "chev" => "M9 6l6 6-6 6",
        _ => "M7 7l10 10M17 7L7 17",
    };
    let class = if class.is_empty() { String::new() } else { format!(" class=\"{class}\"") };
    format!(
        "<svg{class} width=\"{size}\" height=\"{size}\" viewBox=\"0 0 24 24\" aria-hidden=\"true\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"2.6\" stroke-linecap=\"round\" stroke-linejoin=\"round\"><path d=\"{d}\"/></svg>"
    )
}

/// A status pill.
pub fn pill(class: &str, text: &str) -> String {
    format!("<span class=\"pill {}\">{}</span>", esc(class), esc(text))
}

// ---------- numbers and values ----------

fn group_thousands(int: &str) -> String {
    let (sign, digits) = int.strip_prefix('-').map_or(("", int), |d| ("-", d));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    format!("{sign}{out}")
}

/// A number as people read it: thousands separated, at most `digits`
/// decimals (by default 0 from 1,000, 2 from 10, else 3), trailing zeros
/// dropped; tiny values keep three significant digits.
pub fn num(x: f64, digits: Option<usize>) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    if x != 0.0 && x.abs() < 0.001 {
        return format!("{x:.2e}");
    }
    let d = digits.unwrap_or(if x.abs() >= 1000.0 {
        0
    } else if x.abs() >= 10.0 {
        2
    } else {
        3
    });
    let s = format!("{x:.d$}");
    let (int, frac) = s.split_once('.').map_or((s.as_str(), ""), |(i, f)| (i, f));
    let frac = frac.trim_end_matches('0');
    let int = if int == "-0" && frac.is_empty() { "0" } else { int };
    if frac.is_empty() { group_thousands(int) } else { format!("{}.{frac}", group_thousands(int)) }
}

/// A byte count in binary units, as the report's messages write them.
pub fn bytes(n: f64) -> String {
    if n < 1024.0 {
        let n = num(n, Some(0));
        return if n == "1" { "1 byte".into() } else { format!("{n} bytes") };
    }
    if n < 1_048_576.0 {
        return format!("{:.1} KiB", n / 1024.0);
    }
    if n < 1_073_741_824.0 {
        return format!("{:.1} MiB", n / 1_048_576.0);
    }
    format!("{:.2} GiB", n / 1_073_741_824.0)
}

fn is_bytes_key(k: &str) -> bool {
    k == "bytes" || k.ends_with("_bytes") || k == "max_texture_mem"
}

/// A measured or threshold key in words: `max_tris` -> "max triangles".
pub fn human_key(k: &str) -> String {
    match k {
        "gpu_bytes" => return "GPU memory".into(),
        "bytes" => return "size".into(),
        "input_bytes" => return "input size".into(),
        "max_file_bytes" => return "max file size".into(),
        "stretch_p95" => return "stretch, 95th percentile".into(),
        _ => {}
    }
    let base = ["_pct", "_px", "_m", "_deg"].iter().find_map(|s| k.strip_suffix(s)).unwrap_or(k);
    let words: Vec<String> = base
        .split('_')
        .map(|w| match w {
            "tris" => "triangles".into(),
            "verts" => "vertices".into(),
            "mem" => "memory".into(),
            "uv" => "UV".into(),
            "uvs" => "UVs".into(),
            "gpu" => "GPU".into(),
            w => w.to_string(),
        })
        .collect();
    let s = words.join(" ");
    match s.strip_prefix("non ") {
        Some(rest) => format!("non-{rest}"),
        None => s,
    }
}

/// One value, formatted by what its key says it is (plain text, not escaped).
pub fn fmt_value(key: &str, v: &Value) -> String {
    match v {
        Value::Null => "—".into(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.into(),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if is_bytes_key(key) {
                bytes(x)
            } else if key.ends_with("_pct") {
                format!("{}%", num(x, Some(2)))
            } else if key.ends_with("_px") || key.ends_with("_dim") {
                format!("{} px", num(x, Some(0)))
            } else if key.ends_with("_deg") {
                format!("{}°", num(x, None))
            } else if key.ends_with("_m") || key.ends_with("_extent") || key.ends_with("tolerance") {
                format!("{} m", num(x, None))
            } else if key.ends_with("ratio") || key.ends_with("p95") {
                format!("{}{}", num(x, None), if x >= 1.0 { ":1" } else { "" })
            } else {
                num(x, None)
            }
        }
        Value::String(s) => s.clone(),
        Value::Array(a) => fmt_array(key, a),
        Value::Object(o) => fmt_object(o),
    }
}

fn fmt_array(key: &str, arr: &[Value]) -> String {
    if arr.is_empty() {
        return "none".into();
    }
    if arr.len() <= 3 && arr.iter().all(Value::is_number) {
        let unit = if key.ends_with("_m") { " m" } else { "" };
        let sep = if key == "extent_m" { " × " } else { ", " };
        let parts: Vec<String> = arr.iter().map(|x| num(x.as_f64().unwrap_or(f64::NAN), None)).collect();
        return format!("{}{unit}", parts.join(sep));
    }
    let mut lines: Vec<String> = arr
        .iter()
        .take(3)
        .map(|x| match x {
            Value::Object(o) => summarise_item(o),
            other => fmt_value(key, other),
        })
        .collect();
    if arr.len() > 3 {
        lines.push(format!("… +{} more", num((arr.len() - 3) as f64, Some(0))));
    }
    lines.join("\n")
}

/// One element of a list of objects in a few words:
/// `{view: front, visible_pct: 7.4}` -> "front: 7.4%".
fn summarise_item(o: &Map<String, Value>) -> String {
    let text =
        |k: &str| o.get(k).and_then(|v| v.as_str().map(str::to_string).or_else(|| v.as_u64().map(|n| n.to_string())));
    let mut label = ["view", "pointer", "code", "uri", "name"].iter().find_map(|k| text(k));
    if label.is_none()
        && let Some(set) = text("set")
    {
        let material = text("material").map(|m| format!(", material {m}")).unwrap_or_default();
        label = Some(format!("UV set {set}{material}"));
    }
    if let (Some(w), Some(h)) = (o.get("width").and_then(Value::as_f64), o.get("height").and_then(Value::as_f64)) {
        let fmt = o.get("format").and_then(Value::as_str).map(|f| format!(" {f}")).unwrap_or_default();
        let head = label.map(|l| format!("{l}: ")).unwrap_or_default();
        return format!("{head}{}×{} px{fmt}", num(w, Some(0)), num(h, Some(0)));
    }
    const SKIP: &[&str] =
        &["view", "pointer", "code", "uri", "name", "set", "material", "scale", "resolution_px", "searched_px"];
    let keys: Vec<&String> =
        o.keys().filter(|k| !SKIP.contains(&k.as_str()) && !o[*k].is_object() && !o[*k].is_array()).collect();
    let main: Vec<&String> = keys
        .iter()
        .copied()
        .filter(|k| {
            k.ends_with("_pct")
                || k.ends_with("_bytes")
                || k.ends_with("p95")
                || k.ends_with("padding_px")
                || k.ends_with("too_close")
                || ["reason", "message", "tex_coord"].contains(&k.as_str())
        })
        .collect();
    let chosen = if main.is_empty() { keys } else { main };
    let parts: Vec<String> = chosen
        .iter()
        .take(2)
        .map(|k| {
            let v = fmt_value(k, &o[*k]);
            if ["visible_pct", "gpu_bytes", "reason", "message"].contains(&k.as_str()) {
                v
            } else {
                format!("{} {v}", human_key(k))
            }
        })
        .collect();
    match (label, parts.is_empty()) {
        (Some(l), false) => format!("{l}: {}", parts.join(", ")),
        (Some(l), true) => l,
        (None, _) => parts.join(", "),
    }
}

fn fmt_object(o: &Map<String, Value>) -> String {
    if o.is_empty() {
        return "none".into();
    }
    let mut lines: Vec<String> = o
        .iter()
        .take(4)
        .map(|(k, v)| format!("{k}: {}", if v.is_object() || v.is_array() { "…".into() } else { fmt_value(k, v) }))
        .collect();
    if o.len() > 4 {
        lines.push(format!("… +{} more", o.len() - 4));
    }
    lines.join("\n")
}

// ---------- the card ----------

/// The status a card shows: an info check that ran shows `info`.
fn display_status(c: &CheckResult) -> &'static str {
    if c.severity == Severity::Info && c.status == Status::Pass { "info" } else { c.status.as_str() }
}

/// The view's name for people.
pub fn view_label(name: &str) -> String {
    match name {
        "front" => "Front".into(),
        "right" => "Right".into(),
        "back" => "Back".into(),
        "left" => "Left".into(),
        "top" => "Top".into(),
        "three_quarter" => "Three-quarter".into(),
        other => other.to_string(),
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{} {many}", num(n as f64, Some(0))) }
}

/// The verdict's headline: "All checks passed", "Passed with 2 warnings", "3 checks failed".
pub fn verdict_title(r: &Report) -> String {
    match r.verdict {
        Verdict::Pass => "All checks passed".into(),
        Verdict::Warn => format!("Passed with {}", plural(r.summary.warnings as u64, "warning", "warnings")),
        Verdict::Fail => format!("{} failed", plural(r.summary.errors as u64, "check", "checks")),
    }
}

fn counts(r: &Report) -> String {
    let passed = r.checks.iter().filter(|c| c.status == Status::Pass && c.severity != Severity::Info).count() as u64;
    let s = &r.summary;
    let items = [
        ("fail", s.errors as u64, "failed"),
        ("warn", s.warnings as u64, if s.warnings == 1 { "warning" } else { "warnings" }),
        ("pass", passed, "passed"),
        ("info", s.info as u64, "info"),
        ("skipped", s.skipped as u64, "skipped"),
    ];
    let mut out = String::from("<ul class=\"v-counts\" aria-label=\"Check counts\">");
    for (class, n, word) in items {
        let _ = write!(out, "<li class=\"count {class}\"><b>{}</b>{word}</li>", num(n as f64, Some(0)));
    }
    out.push_str("</ul>");
    out
}

/// The verdict banner of a report; `label` is the file as the user named it.
pub fn verdict_banner(r: &Report, label: &str) -> String {
    let v = r.verdict.as_str();
    let mut bits = vec![bytes(r.input.bytes as f64), r.input.format.as_str().to_uppercase()];
    if let Some(main) = &r.input.main_file {
        bits.push(format!("main file {main}"));
    }
    bits.push(format!("profile {}", r.profile.name));
    bits.push(format!("mode {}", r.mode.as_str()));
    format!(
        "<div class=\"card verdict {v}\" data-verdict=\"{v}\"><div class=\"v-icon\">{}</div><div class=\"v-main\"><div class=\"v-head\"><h2>{}</h2>{}</div><p class=\"v-file\"><strong>{}</strong> · {}</p>{}</div></div>\n",
        icon(v, 28, ""),
        esc(&verdict_title(r)),
        pill(&format!("big {v}"), v),
        esc(label),
        esc(&bits.join(" · ")),
        counts(r)
    )
}

/// The scene counts.
pub fn stats_block(r: &Report) -> String {
    let st = &r.stats;
    let mut s = String::from("<dl class=\"stats\">");
    for (label, n) in [
        ("Triangles", st.triangles),
        ("Vertices", st.vertices),
        ("Draw calls", st.draw_calls),
        ("Materials", st.materials),
        ("Textures", st.textures),
        ("Animations", st.animations),
    ] {
        let _ = write!(s, "<div class=\"stat\"><dt>{label}</dt><dd>{}</dd></div>", num(n as f64, Some(0)));
    }
    s.push_str("</dl>\n");
    s
}

/// One still as a figure.
pub fn still_figure(still: &CardStill, of: &str) -> String {
    let name = view_label(&still.name);
    format!(
        "<li><figure class=\"shot\" data-view=\"{}\"><img src=\"{}\" width=\"{CARD_STILL_SIZE}\" height=\"{CARD_STILL_SIZE}\" alt=\"{} view of {}\"><figcaption><span>{}</span><span>{}% of frame</span></figcaption></figure></li>",
        esc(&still.name),
        data_uri("image/png", &still.png),
        esc(&name),
        esc(of),
        esc(&name),
        num(still.visible_pct, Some(1))
    )
}

fn views_block(r: &Report, visuals: Option<&Visuals>) -> String {
    let mut s = String::new();
    let stills = visuals.map(|v| v.stills.as_slice()).unwrap_or_default();
    if r.mode != crate::report::Mode::Full && stills.is_empty() {
        return s;
    }
    s.push_str("<div class=\"section-head\"><h2>Rendered views</h2>");
    if !stills.is_empty() {
        let turntable = if visuals.is_some_and(|v| v.turntable.is_some()) { " and a turntable" } else { "" };
        let _ = write!(s, "<p>Six views under the studio rig ({CARD_STILL_SIZE} px){turntable}.</p>");
    }
    s.push_str("</div>\n");
    if stills.is_empty() {
        // Why: the message of a renderer check that did not run.
        let why = r
            .checks
            .iter()
            .find(|c| c.status == Status::Skipped && catalog::find(&c.id).is_some_and(|d| d.needs.renderer))
            .map(|c| format!(" {}", c.message))
            .unwrap_or_default();
        let _ = writeln!(s, "<p class=\"card no-shots\">No views were rendered for this report.{}</p>", esc(&why));
        return s;
    }
    s.push_str("<ul class=\"shots\">");
    for still in stills {
        s.push_str(&still_figure(still, &r.input.filename));
    }
    // The turntable is a seventh tile (the grid then has four columns).
    if let Some(gif) = visuals.and_then(|v| v.turntable.as_ref()) {
        let _ = write!(
            s,
            "<li><figure class=\"shot\" data-view=\"turntable\"><img src=\"{}\" alt=\"Turntable of {}\"><figcaption><span>Turntable</span><span>one turn</span></figcaption></figure></li>",
            data_uri("image/gif", gif),
            esc(&r.input.filename)
        );
    }
    s.push_str("</ul>\n");
    s
}

fn notes_block(r: &Report) -> String {
    if r.notes.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<div class=\"section-head\"><h2>Notes</h2><p>What was not read as the file wrote it, and what was done instead.</p></div>\n<div class=\"card msgs notes\"><ul>",
    );
    for n in &r.notes {
        let ptr = if n.pointer.is_empty() {
            String::new()
        } else {
            format!("<span class=\"ptr\">{}</span> ", breakable(&n.pointer))
        };
        let _ = write!(s, "<li>{ptr}{}</li>", esc(&n.message));
    }
    s.push_str("</ul></div>\n");
    s
}

fn gauge(c: &CheckResult) -> String {
    let Some((m, t)) = catalog::find(&c.id).and_then(|d| d.gauge) else { return String::new() };
    let (Some(mv), Some(tv)) = (c.measured.get(m).and_then(Value::as_f64), c.threshold.get(t).and_then(Value::as_f64))
    else {
        return String::new();
    };
    if tv <= 0.0 {
        return String::new();
    }
    let pct = mv / tv * 100.0;
    format!(
        "<div class=\"meter\"><svg class=\"gauge\" viewBox=\"0 0 100 6\" preserveAspectRatio=\"none\" aria-hidden=\"true\"><rect class=\"track\" width=\"100\" height=\"6\" rx=\"3\"/><rect class=\"fill\" width=\"{:.1}\" height=\"6\" rx=\"3\"/></svg><span>{} of {} ({}% of budget)</span></div>",
        pct.clamp(1.0, 100.0),
        esc(&fmt_value(m, &Value::from(mv))),
        esc(&fmt_value(t, &Value::from(tv))),
        num(pct, Some(1))
    )
}

fn kv_table(title: &str, obj: &Map<String, Value>) -> String {
    let mut s = format!("<div class=\"mt-col\"><h4>{title}</h4>");
    let keys: Vec<&String> = obj
        .keys()
        .filter(|k| !(k.as_str() == "messages" && obj[*k].as_array().is_some_and(|a| !a.is_empty())))
        .filter(|k| !(k.as_str() == "locations_total" && obj.get("locations").is_some_and(Value::is_array)))
        .collect();
    if keys.is_empty() {
        let empty = if title == "Threshold" { "No threshold: measured only" } else { "Nothing measured" };
        let _ = write!(s, "<p class=\"mt-empty\">{empty}</p></div>");
        return s;
    }
    s.push_str("<table><tbody>");
    for k in keys {
        let v = &obj[k];
        let mut text = fmt_value(k, v);
        if k == "locations"
            && let (Some(list), Some(total)) = (v.as_array(), obj.get("locations_total").and_then(Value::as_u64))
        {
            text = if total == 0 {
                "none".into()
            } else {
                let shown = fmt_array(k, &list[..list.len().min(3)]);
                if total > 3 { format!("{shown}\n… +{} more", num((total - 3) as f64, Some(0))) } else { shown }
            };
        }
        let class = if text == "none" || text == "—" { " class=\"none\"" } else { "" };
        let _ = write!(
            s,
            "<tr><th scope=\"row\" title=\"{}\">{}</th><td{class}>{}</td></tr>",
            esc(k),
            esc(&human_key(k)),
            breakable(&text)
        );
    }
    s.push_str("</tbody></table></div>");
    s
}

fn messages_block(measured: &Map<String, Value>) -> String {
    let Some(list) = measured.get("messages").and_then(Value::as_array).filter(|a| !a.is_empty()) else {
        return String::new();
    };
    let mut s = String::from("<div class=\"msgs\"><h4>Validator messages</h4><ul>");
    for m in list.iter().take(MAX_MESSAGES) {
        let get = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default();
        let sev = get("severity");
        let class = match sev {
            "error" => "fail",
            "warning" => "warn",
            _ => "info",
        };
        let place = match (m.get("pointer").and_then(Value::as_str), m.get("offset").and_then(Value::as_u64)) {
            (Some(p), _) if !p.is_empty() => format!("<span class=\"ptr\">{}</span>", breakable(p)),
            (_, Some(o)) => format!("<span class=\"ptr\">offset {o}</span>"),
            _ => String::new(),
        };
        let _ = write!(
            s,
            "<li><span class=\"sev-tag {class}\">{}</span><span class=\"code\">{}</span>{}{place}</li>",
            esc(if sev.is_empty() { "note" } else { sev }),
            breakable(get("code")),
            esc(get("message"))
        );
    }
    let total = measured.get("errors").and_then(Value::as_u64).unwrap_or(0)
        + measured.get("warnings").and_then(Value::as_u64).unwrap_or(0);
    let rest = (list.len() as u64).max(total).saturating_sub(MAX_MESSAGES as u64);
    if rest > 0 {
        let _ = write!(s, "<li class=\"more\">… and {} more in the report JSON</li>", num(rest as f64, Some(0)));
    }
    s.push_str("</ul></div>");
    s
}

fn check_item(c: &CheckResult) -> String {
    let st = display_status(c);
    let mut s = format!("<li class=\"check {st}\" data-check=\"{}\">{}", esc(&c.id), pill(st, st));
    let sev = match c.severity {
        Severity::Error => "<span class=\"sev\">fails the file when breached</span>",
        Severity::Warning => "<span class=\"sev\">warns when breached</span>",
        Severity::Info => "",
    };
    let _ = write!(
        s,
        "<div class=\"check-head\"><span class=\"check-id\">{}</span><h3 class=\"check-name\">{}</h3>{sev}</div><p class=\"check-msg\">{}</p>",
        esc(&c.id),
        esc(&c.name),
        esc(&c.message)
    );
    if c.status != Status::Skipped {
        s.push_str("<div class=\"check-body\">");
        s.push_str(&gauge(c));
        s.push_str("<div class=\"mt\">");
        s.push_str(&kv_table("Measured", &c.measured));
        s.push_str(&kv_table("Threshold", &c.threshold));
        s.push_str("</div>");
        s.push_str(&messages_block(&c.measured));
        s.push_str("</div>");
    }
    s.push_str("</li>\n");
    s
}

fn family_block(prefix: &str, label: &str, blurb: &str, list: &[&CheckResult]) -> String {
    let order = ["fail", "warn", "pass", "info", "skipped"];
    let mut n = [0usize; 5];
    for c in list {
        let st = display_status(c);
        if let Some(i) = order.iter().position(|o| *o == st) {
            n[i] += 1;
        }
    }
    let class = if n[0] > 0 {
        " has-fail"
    } else if n[1] > 0 {
        " has-warn"
    } else {
        ""
    };
    let open = if n[0] + n[1] > 0 { " open" } else { "" };
    let mut s = format!(
        "<details class=\"card family{class}\" data-family=\"{}\"{open}><summary>{}<span class=\"fam-title\"><strong>{}<span class=\"fam-prefix\">{}</span></strong>",
        esc(prefix),
        icon("chev", 18, "chev"),
        esc(label),
        esc(prefix)
    );
    if !blurb.is_empty() {
        let _ = write!(s, "<span>{}</span>", esc(blurb));
    }
    s.push_str("</span><span class=\"fam-badges\">");
    for (i, k) in order.iter().enumerate() {
        if n[i] > 0 {
            s.push_str(&pill(k, &format!("{} {k}", n[i])));
        }
    }
    s.push_str("</span></summary><ul class=\"checks\">\n");
    for c in list {
        s.push_str(&check_item(c));
    }
    s.push_str("</ul></details>\n");
    s
}

/// The checks of a report grouped by family, in the catalog's family order
/// (a check of a family this build does not know goes last, under its prefix).
pub fn families_block(r: &Report) -> String {
    let prefix = |c: &CheckResult| c.id.split('-').next().unwrap_or_default().to_string();
    let mut fams: Vec<(String, String, String)> =
        FAMILIES.iter().map(|f| (f.prefix.to_string(), f.label.to_string(), f.blurb.to_string())).collect();
    for c in &r.checks {
        let p = prefix(c);
        if !fams.iter().any(|(q, _, _)| *q == p) {
            fams.push((p.clone(), p, String::new()));
        }
    }
    let mut s = String::from(
        "<div class=\"section-head\"><h2>Checks</h2><p>By family; families with a failure or warning are open.</p></div>\n",
    );
    for (p, label, blurb) in &fams {
        let list: Vec<&CheckResult> = r.checks.iter().filter(|c| prefix(c) == *p).collect();
        if !list.is_empty() {
            s.push_str(&family_block(p, label, blurb, &list));
        }
    }
    s
}

fn meta_line(r: &Report) -> String {
    let mut m = Vec::new();
    if let Some(id) = &r.report_id {
        m.push(format!("Report {id}"));
    }
    m.push(format!("made {}", r.created_at.replace('T', " ").replace('Z', " UTC")));
    m.push(format!("{} {}", r.engine.name, r.engine.version));
    if let Some(v) = &r.validator {
        m.push(format!("{} {}", v.name, v.version));
    }
    m.push(format!("SHA-256 {}", r.input.sha256));
    format!("<p class=\"meta\">{}</p>\n", esc(&m.join(" · ")))
}

/// The card of one report: banner, counts, views, notes, checks, meta.
pub fn card(r: &Report, label: &str, visuals: Option<&Visuals>) -> String {
    let mut s = verdict_banner(r, label);
    s.push_str(&stats_block(r));
    s.push_str(&views_block(r, visuals));
    s.push_str(&notes_block(r));
    s.push_str(&families_block(r));
    s.push_str(&meta_line(r));
    s
}

fn error_card(o: &FileResult, e: &crate::error::Error) -> String {
    let mut s = format!(
        "<div class=\"card alert\" data-verdict=\"error\"><div><h2>{} could not be validated</h2><p>{}</p><p class=\"code\">Error code: {}</p>",
        esc(&o.job.display),
        esc(&e.message),
        esc(e.code.as_str())
    );
    let msgs = e.detail.as_deref().and_then(|d| d.get("validator_messages")).and_then(Value::as_array);
    if let Some(list) = msgs.filter(|l| !l.is_empty()) {
        let mut m = Map::new();
        m.insert("messages".into(), Value::Array(list.clone()));
        s.push_str(&messages_block(&m));
    }
    s.push_str("</div></div>\n");
    s
}

fn index_block(outcomes: &[FileResult]) -> String {
    let (mut pass, mut warn, mut fail, mut bad) = (0, 0, 0, 0);
    let mut rows = String::new();
    for (i, o) in outcomes.iter().enumerate() {
        let link = format!("<a href=\"#file-{}\">{}</a>", i + 1, breakable(&o.job.display));
        match &o.result {
            Ok(r) => {
                match r.verdict {
                    Verdict::Pass => pass += 1,
                    Verdict::Warn => warn += 1,
                    Verdict::Fail => fail += 1,
                }
                let failing: Vec<&str> = r
                    .checks
                    .iter()
                    .filter(|c| matches!(c.status, Status::Fail | Status::Warn))
                    .map(|c| c.id.as_str())
                    .collect();
                let _ = writeln!(
                    rows,
                    "<tr data-verdict=\"{v}\"><td>{link}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"mono\">{}</td></tr>",
                    pill(r.verdict.as_str(), r.verdict.as_str()),
                    r.summary.errors,
                    r.summary.warnings,
                    esc(&failing.join(", ")),
                    v = r.verdict.as_str()
                );
            }
            Err(e) => {
                bad += 1;
                let _ = writeln!(
                    rows,
                    "<tr data-verdict=\"error\"><td>{link}</td><td>{}</td><td class=\"n\">–</td><td class=\"n\">–</td><td class=\"mono\">{}</td></tr>",
                    pill("error", "error"),
                    esc(e.code.as_str())
                );
            }
        }
    }
    format!(
        "<section class=\"card index\" id=\"index\" aria-labelledby=\"index-title\"><h2 id=\"index-title\">{}</h2><p>{pass} pass, {warn} warn, {fail} fail, {bad} could not be validated.</p><div class=\"tablecard\"><table class=\"grid\"><thead><tr><th>File</th><th>Verdict</th><th class=\"n\">Failed</th><th class=\"n\">Warnings</th><th>Not passing</th></tr></thead><tbody>\n{rows}</tbody></table></div></section>\n",
        plural(outcomes.len() as u64, "file", "files")
    )
}

/// The report card page: for one file (`single`) its card; otherwise an
/// index of every file and a card per file. `visuals[i]` holds the pictures
/// of `outcomes[i]` (none outside full mode).
pub fn report_card(outcomes: &[FileResult], visuals: &[Option<Visuals>], single: bool) -> String {
    let mut body = String::new();
    let many = !single || outcomes.len() != 1;
    if many {
        body.push_str(&index_block(outcomes));
    }
    for (i, o) in outcomes.iter().enumerate() {
        let _ = write!(body, "<section class=\"report\" id=\"file-{}\" aria-label=\"{}\">", i + 1, esc(&o.job.display));
        if many {
            body.push_str("<p class=\"back\"><a href=\"#index\">↑ All files</a></p>");
        }
        match &o.result {
            Ok(r) => body.push_str(&card(r, &o.job.display, visuals.get(i).and_then(Option::as_ref))),
            Err(e) => body.push_str(&error_card(o, e)),
        }
        body.push_str("</section>\n");
    }
    let (title, aside) = if many {
        (
            format!("meshcheck report: {}", plural(outcomes.len() as u64, "file", "files")),
            plural(outcomes.len() as u64, "file", "files"),
        )
    } else {
        let name = outcomes.first().map(|o| o.job.display.clone()).unwrap_or_default();
        (format!("meshcheck report: {name}"), String::new())
    };
    page(&title, "report card", &aside, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_numbers() {
        assert_eq!(esc("<img src=x onerror='a(1)'>&\"\u{7}"), "&lt;img src=x onerror=&#39;a(1)&#39;&gt;&amp;&quot;");
        assert_eq!(breakable("/meshes/0_a"), "/<wbr>meshes/<wbr>0_<wbr>a");
        assert_eq!(num(1_234_567.0, None), "1,234,567");
        assert_eq!(num(12.5, None), "12.5");
        assert_eq!(num(-0.0001, None), "-1.00e-4");
        assert_eq!(num(2.0, Some(1)), "2");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(human_key("max_tris"), "max triangles");
        assert_eq!(human_key("overlap_pct"), "overlap");
        assert_eq!(fmt_value("overlap_pct", &Value::from(1.5)), "1.5%");
        assert_eq!(fmt_value("extent_m", &serde_json::json!([1, 2, 3])), "1 × 2 × 3 m");
    }

    #[test]
    fn the_csp_allows_exactly_the_stylesheet() {
        assert!(csp().starts_with("default-src 'none'; img-src data:; style-src 'sha256-"));
        let p = page("<t>", "x", "", "");
        assert!(p.contains("<title>&lt;t&gt;</title>"));
        assert!(!p.contains("<script"));
    }
}
