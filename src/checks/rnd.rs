//! RND: what the studio renderer shows of the asset (full mode only): the
//! six standard views draw without error (RND-001), every view shows
//! something (RND-002), and the model fills a fair share of the frame
//! (RND-003). In checks_only mode they report `skipped`; in a build without
//! the `render` feature the engine skips them before they run.

use super::{CheckDef, Family, Needs};
use super::{CheckOutput, Ctx};
#[cfg(feature = "render")]
use super::{Comparison, Obj, measured, short};
use crate::profile::Param;
#[cfg(feature = "render")]
use crate::render::Rendered;
use crate::report::Severity;
#[cfg(feature = "render")]
use serde_json::{Value, json};

const CATEGORY: &str = "render";

/// The RND family: its checks in ID order.
pub static FAMILY: Family = Family {
    prefix: "RND",
    category: CATEGORY,
    label: "Rendering",
    blurb: "Renders without error and shows up in every view",
    checks: &[RENDERS, VISIBLE_PIXELS, COVERAGE],
};

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

/// RND-001: its definition.
pub const RENDERS: CheckDef = CheckDef {
    id: "RND-001",
    name: "Renders without error",
    category: CATEGORY,
    severity: Severity::Error,
    params: &[],
    what: "Full mode only: draws the six standard views (front, right, back, left, top, three-quarter) with the studio renderer (wgpu; Mesa's lavapipe where there is no GPU). Fails when the device refuses the scene (for example a buffer beyond its limits). Textures that cannot be decoded are drawn with their material's factors and listed in `notes`. No graphics adapter at all is an environment error (exit 4), not a failed check.",
    why: "An asset that cannot be drawn cannot be shown in a viewer, a store page or a thumbnail.",
    fix: "Read `error`; split very large meshes, and re-export textures as PNG, JPEG or WebP.",
    measured: &[
        ("views", "standard views asked for (6)"),
        ("rendered", "views drawn"),
        ("triangles_drawn", "triangles drawn per view, per instance"),
        ("draw_calls", "draw calls per view"),
        ("notes", "what could not be drawn as the file asks (undecodable or KTX2 textures)"),
        ("error", "why the views could not be drawn (on failure only)"),
    ],
    threshold: &[],
    needs: Needs { geometry: true, textures: true, validator: false, renderer: true },
    gauge: None,
    run: renders,
};

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

/// RND-002: its definition.
pub const VISIBLE_PIXELS: CheckDef = CheckDef {
    id: "RND-002",
    name: "Visible pixels",
    category: CATEGORY,
    severity: Severity::Error,
    params: &[],
    what: "Full mode only: per standard view, the share of the frame the model covers (pixels whose coverage alpha is at least one half, with the model drawn over a transparent clear, so the background colour cannot be mistaken for the model). Fails when any view shows nothing.",
    why: "A view that shows nothing means the asset is invisible from there: all triangles degenerate or culled, fully transparent materials, or geometry so small or far that it vanishes.",
    fix: "Check GEO-004 (degenerate triangles), materials with alpha 0 or alphaMode mistakes, and single-sided planes seen from behind (set doubleSided).",
    measured: &[
        ("views", "per view: its name and visible_pct, % of the frame covered (2 decimals)"),
        ("min_visible_pct", "the smallest visible_pct"),
        ("empty_views", "views with no visible pixel"),
    ],
    threshold: &[("max_empty_views", "0")],
    needs: Needs { geometry: true, textures: true, validator: false, renderer: true },
    gauge: None,
    run: visible_pixels,
};

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

/// Budget: Mean silhouette coverage of the standard views below which the check warns.
pub const MIN_COVERAGE_PCT: Param = Param {
    key: "min_coverage_pct",
    unit: "% of frame",
    doc: "Mean silhouette coverage of the standard views below which the check warns",
    overridable: false,
    integer: false,
};

/// RND-003: its definition.
pub const COVERAGE: CheckDef = CheckDef {
    id: "RND-003",
    name: "Silhouette coverage",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MIN_COVERAGE_PCT],
    what: "Full mode only: the mean, over the six standard views, of the % of the frame the model covers. The camera frames the scene's bounding sphere, so a low coverage means the bounds are much larger than what is seen: stray vertices or debris far away, or a long thin object.",
    why: "Thumbnails and viewers frame the bounding box; a model lost in empty space looks broken.",
    fix: "Remove stray geometry far from the model (see GEO-007), or accept the warning for genuinely thin objects.",
    measured: &[("coverage_pct", "mean % of the frame covered (2 decimals)"), ("views", "views measured")],
    threshold: &[("min_coverage_pct", "warn below this mean %")],
    needs: Needs { geometry: true, textures: true, validator: false, renderer: true },
    gauge: None,
    run: coverage,
};

/// RND-003.
#[cfg(feature = "render")]
pub fn coverage(cx: &Ctx<'_>) -> CheckOutput {
    let r = match stills(cx) {
        Ok(r) => r,
        Err(reason) => return CheckOutput::Skipped(reason),
    };
    let n = r.stills.len().max(1) as f64;
    let mean = pct2(r.stills.iter().map(|s| s.visible_pct()).sum::<f64>() / n);
    let min = cx.profile.get(&MIN_COVERAGE_PCT);
    let outcome = if mean < min { Comparison::Breach } else { Comparison::Within };
    let verdict = if mean < min { "below" } else { "at or above" };
    measured(
        Obj::new().num("coverage_pct", mean).int("views", r.stills.len() as u64),
        Obj::new().param(cx.profile, &MIN_COVERAGE_PCT),
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
