//! RND: what the studio renderer shows of the asset (full mode only): the
//! six standard views draw without error (RND-001), every view shows
//! something (RND-002), and the model fills a fair share of the frame
//! (RND-003). In checks_only mode they report `skipped`; in a build without
//! the `render` feature the engine skips them before they run.

use super::{CheckOutput, Ctx};
#[cfg(feature = "render")]
use super::{Comparison, Obj, measured, short};
#[cfg(feature = "render")]
use crate::render::Rendered;
#[cfg(feature = "render")]
use serde_json::{Value, json};

const NOT_RENDERED: &str = "mode is checks_only (the renderer runs in full mode)";

/// The stills, or why the check is skipped.
#[cfg(feature = "render")]
fn stills<'a>(cx: &Ctx<'a>) -> Result<&'a Rendered, String> {
    match cx.render {
        None => Err(NOT_RENDERED.into()),
        Some(Err(_)) => Err("the renderer could not draw the asset (RND-001)".into()),
        Some(Ok(r)) => Ok(r),
    }
}

#[cfg(feature = "render")]
fn view_name(still: &crate::render::Still, i: usize) -> String {
    still.angle.file_stem(i)
}

/// Visible share per view, rounded to 2 decimals (pixel counts are exact;
/// the rounding keeps the JSON short).
#[cfg(feature = "render")]
fn pct2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// RND-001.
#[cfg(feature = "render")]
pub fn renders(cx: &Ctx<'_>) -> CheckOutput {
    let Some(run) = cx.render else { return CheckOutput::Skipped(NOT_RENDERED.into()) };
    let views = crate::render::STANDARD_ANGLES.len() as u64;
    match run {
        Ok(r) => measured(
            Obj::new()
                .int("views", views)
                .int("rendered", r.stills.len() as u64)
                .int("triangles_drawn", r.triangles)
                .int("draw_calls", r.draw_calls)
                .val("notes", Value::Array(r.notes.iter().map(|n| Value::String(n.clone())).collect())),
            Obj::new(),
            Comparison::Within,
            format!("the {} standard views rendered", r.stills.len()),
        ),
        Err(why) => measured(
            Obj::new().int("views", views).int("rendered", 0).val("error", Value::String(why.clone())),
            Obj::new(),
            Comparison::Breach,
            format!("the standard views could not be rendered: {why}"),
        ),
    }
}

/// RND-002.
#[cfg(feature = "render")]
pub fn visible_pixels(cx: &Ctx<'_>) -> CheckOutput {
    let r = match stills(cx) {
        Ok(r) => r,
        Err(reason) => return CheckOutput::Skipped(reason),
    };
    let per_view: Vec<Value> = r
        .stills
        .iter()
        .enumerate()
        .map(|(i, s)| json!({ "view": view_name(s, i), "visible_pct": crate::report::num(pct2(s.visible_pct())) }))
        .collect();
    let empty: Vec<String> =
        r.stills.iter().enumerate().filter(|(_, s)| s.visible_pixels == 0).map(|(i, s)| view_name(s, i)).collect();
    let min = r.stills.iter().map(|s| pct2(s.visible_pct())).fold(f64::INFINITY, f64::min);
    let min = if min.is_finite() { min } else { 0.0 };
    let message = if empty.is_empty() {
        format!("every view shows the model (at least {}% of the frame)", short(min))
    } else {
        format!("{} of {} views show nothing: {}", empty.len(), r.stills.len(), empty.join(", "))
    };
    measured(
        Obj::new()
            .val("views", Value::Array(per_view))
            .num("min_visible_pct", min)
            .int("empty_views", empty.len() as u64),
        Obj::new().int("max_empty_views", 0),
        if empty.is_empty() { Comparison::Within } else { Comparison::Breach },
        message,
    )
}

/// RND-003.
#[cfg(feature = "render")]
pub fn coverage(cx: &Ctx<'_>) -> CheckOutput {
    let r = match stills(cx) {
        Ok(r) => r,
        Err(reason) => return CheckOutput::Skipped(reason),
    };
    let n = r.stills.len().max(1) as f64;
    let mean = pct2(r.stills.iter().map(|s| s.visible_pct()).sum::<f64>() / n);
    let min = cx.profile.get("min_coverage_pct");
    let outcome = if mean < min { Comparison::Breach } else { Comparison::Within };
    let verdict = if mean < min { "below" } else { "at or above" };
    measured(
        Obj::new().num("coverage_pct", mean).int("views", r.stills.len() as u64),
        Obj::new().param(cx.profile, "min_coverage_pct"),
        outcome,
        format!("the model covers {}% of the frame on average, {verdict} {}%", short(mean), short(min)),
    )
}

/// Without the renderer in the build there are never stills: each RND check
/// is skipped as in checks_only mode (the engine gives full mode its own reason).
#[cfg(not(feature = "render"))]
fn not_drawn(_cx: &Ctx<'_>) -> CheckOutput {
    CheckOutput::Skipped(NOT_RENDERED.into())
}

/// RND-001 without the renderer in the build.
#[cfg(not(feature = "render"))]
pub fn renders(cx: &Ctx<'_>) -> CheckOutput {
    not_drawn(cx)
}

/// RND-002 without the renderer in the build.
#[cfg(not(feature = "render"))]
pub fn visible_pixels(cx: &Ctx<'_>) -> CheckOutput {
    not_drawn(cx)
}

/// RND-003 without the renderer in the build.
#[cfg(not(feature = "render"))]
pub fn coverage(cx: &Ctx<'_>) -> CheckOutput {
    not_drawn(cx)
}
