//! UV: texture coordinates present where materials sample textures (UV-001),
//! and the quality of the layouts: overlap (UV-002), texel stretch (UV-004)
//! and island padding (UV-005), UVs outside the 0-1 square (UV-006),
//! mirrored UV triangles (UV-007) and texel density (UV-008), measured by
//! `geom::uv` per texture space.

use super::{CheckDef, Family, LOC, LOC_TOTAL, Needs};
use super::{CheckOutput, Comparison, Ctx, MAX_LOCATIONS, Obj, Split, Tail, count, measured, over, short, thousands};
use crate::asset::material::{texture_image, texture_slots};
use crate::asset::scene::{Instance, Primitive};
use crate::geom::mat4;
use crate::geom::uv as guv;
use crate::profile::Param;
use crate::report::Severity;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

const CATEGORY: &str = "uv";

/// The UV family: its checks in ID order.
pub static FAMILY: Family = Family {
    prefix: "UV",
    category: CATEGORY,
    label: "UVs",
    blurb: "Missing UVs, overlap, stretch, island padding, range, mirroring, texel density",
    checks: &[MISSING_UVS, OVERLAP, STRETCH, PADDING, OUTSIDE_UNIT_SQUARE, MIRRORED, TEXEL_DENSITY],
};

/// UV-001: its definition.
pub const MISSING_UVS: CheckDef = CheckDef {
    id: "UV-001",
    name: "Missing UVs on textured mesh",
    category: CATEGORY,
    severity: Severity::Error,
    params: &[],
    what: "For every primitive drawn, finds each texture its material samples (core and extension texture slots, honouring KHR_texture_transform's texCoord) and checks the primitive has the TEXCOORD_n set the slot reads.",
    why: "Without the UV set a texture samples one texel everywhere: the surface renders flat or black.",
    fix: "Unwrap the mesh (or export its UV map) so it carries the TEXCOORD sets its material reads, or remove the texture from the material.",
    measured: &[
        ("textured_primitives", "drawn primitives whose material samples a texture"),
        ("primitives_missing_uvs", "of those, primitives lacking a UV set their material reads"),
        ("missing", "per case (at most 100): pointer, material, tex_coord"),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[("max_primitives_missing_uvs", "always 0")],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: None,
    run: missing_uvs,
};

/// UV-001.
pub fn missing_uvs(cx: &Ctx<'_>) -> CheckOutput {
    let root = &cx.asset.root;
    let mut textured = 0u64;
    let mut cases = Vec::new();
    let mut seen = BTreeSet::new();
    for inst in &cx.asset.scene.instances {
        if !seen.insert(inst.primitive) {
            continue;
        }
        let prim = &cx.asset.scene.primitives[inst.primitive];
        let Some(mat) = prim.material.and_then(|m| root.materials.get(m)) else { continue };
        let slots = texture_slots(mat);
        if slots.is_empty() {
            continue;
        }
        textured += 1;
        let needed: BTreeSet<u32> = slots.iter().map(|s| s.1).collect();
        if let Some(&set) = needed.iter().find(|&&s| !prim.has_uv(s as usize)) {
            cases.push((prim.pointer(), prim.material.unwrap_or(0), set));
        }
    }
    let locations: Vec<String> = cases.iter().map(|c| c.0.clone()).collect();
    let missing: Vec<Value> = cases
        .iter()
        .take(MAX_LOCATIONS)
        .map(|(p, m, s)| json!({"pointer": p, "material": m, "tex_coord": s}))
        .collect();
    let outcome = if cases.is_empty() { Comparison::Within } else { Comparison::Breach };
    let message = match cases.first() {
        None if textured == 0 => "no drawn primitive samples a texture".to_string(),
        None if textured == 1 => "the textured primitive has the UV sets its material reads".to_string(),
        None => format!("all {textured} textured primitives have the UV sets their materials read"),
        Some((p, m, s)) => format!(
            "{} of {textured} textured primitives lack a UV set their material reads; first: {p} has no TEXCOORD_{s} for material {m}",
            cases.len()
        ),
    };
    measured(
        Obj::new()
            .int("textured_primitives", textured)
            .int("primitives_missing_uvs", cases.len() as u64)
            .val("missing", Value::Array(missing))
            .locations(&locations),
        Obj::new().int("max_primitives_missing_uvs", 0),
        outcome,
        message,
    )
}

// ---------------------------------------------------------------------------
// UV-002, UV-004, UV-005: overlap, stretch and island padding. The measuring
// lives in `geom::uv`; these functions gather the layouts and write reports.
// ---------------------------------------------------------------------------

/// Unique drawn primitives, each with its first instance, in the order of
/// their first instance.
fn drawn_primitives<'a>(cx: &'a Ctx<'_>) -> Vec<(&'a Primitive, &'a Instance)> {
    let scene = &cx.asset.scene;
    let mut seen = BTreeSet::new();
    scene
        .instances
        .iter()
        .filter(|i| seen.insert(i.primitive))
        .filter_map(|i| scene.primitives.get(i.primitive).map(|p| (p, i)))
        .collect()
}

/// The largest width and height among the readable images that `material`
/// samples through UV set `set`; `None` when it binds none.
fn bound_texture(cx: &Ctx<'_>, material: Option<usize>, set: usize) -> Option<(u32, u32)> {
    let root = &cx.asset.root;
    let mat = root.materials.get(material?)?;
    let mut size: Option<(u32, u32)> = None;
    for (tex, s) in texture_slots(mat) {
        if s as usize != set {
            continue;
        }
        let Some(img) = root.textures.get(tex).and_then(texture_image) else { continue };
        let Some(Ok(h)) = cx.asset.images.get(img).map(|r| r.header.as_ref()) else { continue };
        size = Some(size.map_or((h.width, h.height), |(w0, h0)| (w0.max(h.width), h0.max(h.height))));
    }
    size.filter(|&(w, h)| w > 0 && h > 0)
}

/// One texture space: the primitives drawn with one material that have UV
/// set `set` (instances share it, so each primitive counts once).
struct UvGroup<'a> {
    material: Option<usize>,
    set: usize,
    prims: Vec<&'a Primitive>,
    /// Largest bound texture (width, height), if any.
    texture: Option<(u32, u32)>,
}

impl UvGroup<'_> {
    fn meshes(&self) -> Vec<guv::UvMesh<'_>> {
        self.prims
            .iter()
            .filter_map(|p| p.uvs.get(self.set)?.as_deref().map(|uvs| guv::UvMesh { uvs, triangles: &p.triangles }))
            .collect()
    }
    /// Texture size measured against (1024 square when no texture is bound).
    fn size(&self) -> (u32, u32) {
        self.texture.unwrap_or((guv::DEFAULT_RASTER_PX, guv::DEFAULT_RASTER_PX))
    }
    /// "TEXCOORD_0 of material 2".
    fn label(&self) -> String {
        match self.material {
            Some(m) => format!("TEXCOORD_{} of material {m}", self.set),
            None => format!("TEXCOORD_{} of the default material", self.set),
        }
    }
}

/// Groups by (material, UV set), in that order.
fn uv_groups<'a>(cx: &'a Ctx<'_>) -> Vec<UvGroup<'a>> {
    let mut map: BTreeMap<(Option<usize>, usize), Vec<&Primitive>> = BTreeMap::new();
    for (p, _) in drawn_primitives(cx) {
        for (set, uvs) in p.uvs.iter().enumerate() {
            if uvs.is_some() {
                map.entry((p.material, set)).or_default().push(p);
            }
        }
    }
    map.into_iter()
        .map(|((material, set), prims)| UvGroup { material, set, prims, texture: bound_texture(cx, material, set) })
        .collect()
}

const NO_UVS: &str = "no drawn primitive has UV coordinates";

/// Pointers of the primitives flagged in `flags` (parallel to `prims`), each once.
fn flagged(out: &mut Vec<String>, seen: &mut BTreeSet<(usize, usize)>, prims: &[&Primitive], flags: &[bool]) {
    for (p, _) in prims.iter().zip(flags).filter(|(_, f)| **f) {
        if seen.insert((p.mesh, p.index)) {
            out.push(p.pointer());
        }
    }
}

fn material_json(m: Option<usize>) -> Value {
    m.map_or(Value::Null, Value::from)
}

/// Budget: UV overlap allowed.
pub const MAX_UV_OVERLAP_PCT: Param = Param {
    key: "max_uv_overlap_pct",
    unit: "% of covered texels",
    doc: "UV overlap allowed",
    overridable: false,
    integer: false,
};

/// UV-002: its definition.
pub const OVERLAP: CheckDef = CheckDef {
    id: "UV-002",
    name: "UV overlap",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_UV_OVERLAP_PCT],
    what: "Groups the triangles of the drawn primitives by texture space (material and UV set; each primitive once, since instances share their texture space) and rasterises each group inside the [0,1) UV tile at the resolution of the largest texture the material samples through that set (1024 when none; capped at 4096, a larger texture being measured at 4096 and its scale recorded, and halved again should a pathological layout ask for more than 2^28 texel visits). Sampling is at texel centres with a top-left fill rule, so triangles sharing an edge never cover a texel twice; a triangle lying outside the tile (a copy moved out by whole units, as bakers expect for mirrored parts) is ignored, one crossing the border is clipped, and one with non-finite UVs is left out. Overlap is the share of covered texels that two or more triangles cover, from 0 (no overlap) to 100 (every texel covered twice); the worst texture space is reported.",
    why: "Overlapping UVs make two surfaces share texels: baked lighting, ambient occlusion and hand-painted detail show up on both, and lightmaps break.",
    fix: "Unwrap again or pack islands so that none overlap (Blender: UV > Pack Islands); move intentionally mirrored or repeated parts out of the [0,1) tile by whole units so that bakers ignore them.",
    measured: &[
        ("overlap_pct", "overlapping_texels / covered_texels x 100 in the worst texture space, 0 to 100"),
        ("overlapping_texels", "texels covered by two or more triangles, in the worst texture space"),
        ("covered_texels", "texels covered by at least one triangle, in the worst texture space"),
        ("resolution_px", "longer side of the raster measured on, in texels (at most 4096)"),
        (
            "sets",
            "per texture space (at most 100, worst first): set (TEXCOORD_n), material (index, or null for the default material), resolution_px, scale (raster side / texture side, 1 unless the texture is over 4096 px), overlap_pct, overlapping_texels, covered_texels",
        ),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[("max_uv_overlap_pct", "largest allowed overlap, % of covered texels")],
    needs: Needs { geometry: true, textures: true, validator: false, renderer: false },
    gauge: Some(("overlap_pct", "max_uv_overlap_pct")),
    run: overlap,
};

/// UV-002.
pub fn overlap(cx: &Ctx<'_>) -> CheckOutput {
    let groups = uv_groups(cx);
    if groups.is_empty() {
        return CheckOutput::Skipped(NO_UVS.into());
    }
    let mut rows = Vec::with_capacity(groups.len());
    let mut locations = Vec::new();
    let mut seen = BTreeSet::new();
    for g in &groups {
        let (w, h) = g.size();
        let s = guv::uv_overlap(&g.meshes(), w, h);
        flagged(&mut locations, &mut seen, &g.prims, &s.overlapping_meshes);
        rows.push((g, s));
    }
    // Worst first; the sort is stable, so ties keep (material, set) order.
    rows.sort_by(|a, b| b.1.overlap_pct.total_cmp(&a.1.overlap_pct));
    let sets: Vec<Value> = rows
        .iter()
        .take(MAX_LOCATIONS)
        .map(|(g, s)| {
            json!({
                "set": g.set,
                "material": material_json(g.material),
                "resolution_px": s.plan.resolution(),
                "scale": crate::report::num(s.plan.scale),
                "overlap_pct": crate::report::num(s.overlap_pct),
                "overlapping_texels": s.overlapping_texels,
                "covered_texels": s.covered_texels,
            })
        })
        .collect();
    let (g, s) = &rows[0];
    let max = cx.profile.get(&MAX_UV_OVERLAP_PCT);
    let outcome = over(s.overlap_pct, max);
    let message = if s.overlapping_texels == 0 {
        format!("no overlapping UVs in {}", count(groups.len() as u64, "UV layout", "UV layouts"))
    } else {
        format!(
            "{}% of the covered texels overlap in {} ({} of {} texels at {} px), {} the {}% limit",
            short(s.overlap_pct),
            g.label(),
            thousands(s.overlapping_texels),
            thousands(s.covered_texels),
            s.plan.resolution(),
            if outcome == Comparison::Breach { "over" } else { "within" },
            short(max)
        )
    };
    measured(
        Obj::new()
            .num("overlap_pct", s.overlap_pct)
            .int("overlapping_texels", s.overlapping_texels)
            .int("covered_texels", s.covered_texels)
            .int("resolution_px", s.plan.resolution() as u64)
            .val("sets", Value::Array(sets))
            .locations(&locations),
        Obj::new().param(cx.profile, &MAX_UV_OVERLAP_PCT),
        outcome,
        message,
    )
}

/// Reported stretch ratios are capped here (an infinite ratio reads as this).
pub const MAX_REPORTED_STRETCH: f64 = 1e6;

/// Budget: Singular-value ratio above which a triangle is stretched.
pub const MAX_STRETCH_RATIO: Param = Param {
    key: "max_stretch_ratio",
    unit: "ratio",
    doc: "Singular-value ratio above which a triangle is stretched",
    overridable: false,
    integer: false,
};

/// Budget: Stretched surface allowed.
pub const MAX_STRETCHED_AREA_PCT: Param = Param {
    key: "max_stretched_area_pct",
    unit: "% of area",
    doc: "Stretched surface allowed",
    overridable: false,
    integer: false,
};

/// UV-004: its definition.
pub const STRETCH: CheckDef = CheckDef {
    id: "UV-004",
    name: "Texel stretch",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_STRETCH_RATIO, &MAX_STRETCHED_AREA_PCT],
    what: "For every drawn primitive (each once, placed by the world transform of its first instance, so node scale counts) and each of its UV sets, lays every triangle into its own 2D frame, forms the 2x2 Jacobian from that frame to UV (in texel proportions: u and v scaled by the width and height of the largest texture bound to the set), and takes the ratio of its singular values: 1 for a mapping that keeps shape at any scale, growing with anisotropic stretch, infinite for a triangle whose UVs have zero area. Triangles with zero 3D area or non-finite UVs are skipped. Stretched area is the share of 3D surface whose ratio exceeds max_stretch_ratio, 0 to 100; the worst UV set is reported.",
    why: "A stretched mapping smears texels along one direction: text and patterns distort, and detail is lost where the texture is squeezed.",
    fix: "Relax or re-unwrap the named meshes (Blender: UV > Unwrap with Conformal or Angle Based, then Minimize Stretch), add seams where a surface cannot lie flat, and keep node scale out of the UV layout by applying it before unwrapping.",
    measured: &[
        (
            "stretched_area_pct",
            "3D area of triangles whose ratio exceeds max_stretch_ratio, % of the area of the worst UV set, 0 to 100",
        ),
        (
            "stretch_p95",
            "area-weighted 95th percentile of the singular-value ratio in that set, >= 1, capped at 1,000,000 (an infinite, UV-degenerate ratio reads as 1,000,000); null when no triangle could be measured",
        ),
        (
            "sets",
            "per UV set (at most 100, worst first): set, stretched_area_pct, stretch_p95, triangles (triangles measured)",
        ),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[
        ("max_stretch_ratio", "singular-value ratio above which a triangle counts as stretched"),
        ("max_stretched_area_pct", "largest allowed stretched area, % of the surface"),
    ],
    needs: Needs { geometry: true, textures: true, validator: false, renderer: false },
    gauge: Some(("stretched_area_pct", "max_stretched_area_pct")),
    run: stretch,
};

/// Triangles `i..i + 4` of `p` (those it has): each one's corners placed
/// by an instance's world transform (`place`), and their UVs in `uvs`; a lane is `false`
/// in the mask when `p` has no such triangle or an
/// index is past the positions or the UVs (its corners are then zeros).
/// Corners are placed as they are read (UV-004, UV-008, four triangles a
/// call for their four-lane measures): the same numbers as a placed copy of
/// the positions, which held 24 bytes a vertex beside the samples (the
/// first phase's peak on a large untextured mesh).
fn placed_quad(p: &Primitive, place: &mat4::Placer<'_>, uvs: &[[f32; 2]], i: usize) -> PlacedQuad {
    let mut quad = ([[[0.0; 3]; 3]; 4], [[[0.0; 2]; 3]; 4], [false; 4]);
    for k in 0..4 {
        let Some(&t) = p.triangles.get(i + k) else { continue };
        let [a, b, c] = t.map(|v| v as usize);
        let world = |v: usize| p.positions.get(v).map(|&q| place.place(q));
        let (Some(&ua), Some(&ub), Some(&uc)) = (uvs.get(a), uvs.get(b), uvs.get(c)) else { continue };
        let (Some(pa), Some(pb), Some(pc)) = (world(a), world(b), world(c)) else { continue };
        (quad.0[k], quad.1[k], quad.2[k]) = ([pa, pb, pc], [ua, ub, uc], true);
    }
    quad
}

/// Four triangles' world corners, their UVs, and which lanes hold one.
type PlacedQuad = ([[[f64; 3]; 3]; 4], [[[f32; 2]; 3]; 4], [bool; 4]);

/// UV-004.
pub fn stretch(cx: &Ctx<'_>) -> CheckOutput {
    stretch_split(cx).finish()
}

/// UV-004 in two steps: its samples measured here, their summary (the
/// area-weighted p95 over a sample a triangle) handed back as a [`Tail`].
pub fn stretch_split(cx: &Ctx<'_>) -> Split {
    let max_ratio = cx.profile.get(&MAX_STRETCH_RATIO);
    let max_pct = cx.profile.get(&MAX_STRETCHED_AREA_PCT);
    // Per UV set: its samples, and the triangles visited so far (each
    // sample is ordered by its triangle's place among them).
    let mut per_set: BTreeMap<usize, (Vec<guv::Weighted>, usize)> = BTreeMap::new();
    let mut locations = Vec::new();
    for (p, inst) in drawn_primitives(cx) {
        if !p.uvs.iter().any(Option::is_some) {
            continue;
        }
        let mut stretched = false;
        for (set, uvs) in p.uvs.iter().enumerate() {
            let Some(uvs) = uvs else { continue };
            // Texel proportions: a 2:1 texture stretches u twice as much.
            let (w, h) = bound_texture(cx, p.material, set).unwrap_or((1, 1));
            let side = w.max(h) as f64;
            let (sx, sy) = (w as f64 / side, h as f64 / side);
            let (samples, visited) = per_set.entry(set).or_default();
            let start = samples.len();
            // Four triangles at a time: their square roots and divisions
            // share the vector registers (`triangle_stretch4`).
            let n = p.triangles.len();
            let place = mat4::Placer::for_points(&inst.world, &p.positions);
            guv::extend_measured4(samples, n, *visited, |i| {
                let (corners, uv, ok) = placed_quad(p, &place, uvs, i);
                let uv = uv.map(|t| t.map(|q| [q[0] as f64 * sx, q[1] as f64 * sy]));
                guv::triangle_stretch4(&corners, &uv, ok).map(|s| s.map(|(area, ratio)| (ratio, area)))
            });
            *visited += p.triangles.len();
            stretched |= samples[start..].iter().any(|s| ({ s.value }) > max_ratio);
        }
        if stretched {
            locations.push(p.pointer());
        }
    }
    if per_set.is_empty() {
        return Split::Done(CheckOutput::Skipped(NO_UVS.into()));
    }
    let threshold = Obj::new().param(cx.profile, &MAX_STRETCH_RATIO).param(cx.profile, &MAX_STRETCHED_AREA_PCT);
    Split::Tail(Tail::new(move || stretch_summary(per_set, locations, threshold, max_ratio, max_pct)))
}

/// UV-004's summary of its samples per UV set ([`stretch_split`]).
fn stretch_summary(
    per_set: BTreeMap<usize, (Vec<guv::Weighted>, usize)>,
    locations: Vec<String>,
    threshold: Obj,
    max_ratio: f64,
    max_pct: f64,
) -> CheckOutput {
    let mut rows: Vec<(usize, guv::StretchStats)> =
        per_set.into_iter().map(|(set, (mut s, _))| (set, guv::summarize_stretch(&mut s, max_ratio))).collect();
    rows.sort_by(|a, b| b.1.stretched_area_pct.total_cmp(&a.1.stretched_area_pct));
    let p95 = |s: &guv::StretchStats| s.p95.map(|x| x.min(MAX_REPORTED_STRETCH));
    let p95_json = |s: &guv::StretchStats| p95(s).map_or(Value::Null, crate::report::num);
    let sets: Vec<Value> = rows
        .iter()
        .take(MAX_LOCATIONS)
        .map(|(set, s)| {
            json!({
                "set": set,
                "stretched_area_pct": crate::report::num(s.stretched_area_pct),
                "stretch_p95": p95_json(s),
                "triangles": s.triangles,
            })
        })
        .collect();
    let (set, s) = &rows[0];
    let outcome = over(s.stretched_area_pct, max_pct);
    let p95_text = p95(s).map_or("no measurable triangles".to_string(), |x| format!("p95 ratio {}", short(x)));
    let message = format!(
        "{}% of the surface in TEXCOORD_{set} is stretched beyond {}:1 ({p95_text}), {} the {}% limit",
        short(s.stretched_area_pct),
        short(max_ratio),
        if outcome == Comparison::Breach { "over" } else { "within" },
        short(max_pct)
    );
    measured(
        Obj::new()
            .num("stretched_area_pct", s.stretched_area_pct)
            .val("stretch_p95", p95_json(s))
            .val("sets", Value::Array(sets))
            .locations(&locations),
        threshold,
        outcome,
        message,
    )
}

/// Budget: Smallest gap between UV islands.
pub const MIN_PADDING_PX: Param = Param {
    key: "min_padding_px",
    unit: "px",
    doc: "Smallest gap between UV islands",
    overridable: false,
    integer: true,
};

/// UV-005: its definition.
pub const PADDING: CheckDef = CheckDef {
    id: "UV-005",
    name: "UV island padding",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MIN_PADDING_PX],
    what: "Splits each texture space (material and UV set, as in UV-002, at the same resolution: the largest bound texture, 1024 when none, capped at 4096) into islands, the triangles connected through shared UV edges (the same two UV points, compared exactly; islands touching only at a point stay apart). Each island is rasterised conservatively (every texel it touches, so slivers count) and an 8-connected distance transform from all islands at once gives the gap between neighbouring islands: the number of texels that no island touches between them, diagonal steps counting one, 0 when they touch or overlap. The search reaches twice min_padding_px (at least 8 px); gaps are given in pixels of the texture (raster texels divided by scale).",
    why: "Mipmapping and filtering blend neighbouring texels: islands closer than a few pixels bleed colour into each other at a distance, visible as seams; the padding needed grows with the number of mip levels a viewer uses.",
    fix: "Re-pack the UV islands with a larger margin (Blender: UV > Pack Islands, Margin; Substance and RizomUV: padding in pixels at the target resolution), or give the texture a higher resolution.",
    measured: &[
        (
            "min_padding_px",
            "smallest gap between two islands over all texture spaces, in texture pixels, 0 or more; searched_px when no two islands are that close",
        ),
        ("searched_px", "how far the search reached, in texture pixels: twice min_padding_px, at least 8"),
        ("islands", "UV islands in the [0,1) tile, summed over texture spaces"),
        (
            "island_pairs_too_close",
            "distinct pairs of neighbouring islands closer than min_padding_px, summed over texture spaces",
        ),
        (
            "sets",
            "per texture space (at most 100, closest first): set, material (index or null), resolution_px, scale, islands, min_padding_px, island_pairs_too_close",
        ),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[("min_padding_px", "smallest allowed gap between islands, in texture pixels")],
    needs: Needs { geometry: true, textures: true, validator: false, renderer: false },
    gauge: None,
    run: padding,
};

/// UV-005.
pub fn padding(cx: &Ctx<'_>) -> CheckOutput {
    let groups = uv_groups(cx);
    if groups.is_empty() {
        return CheckOutput::Skipped(NO_UVS.into());
    }
    let min = cx.profile.get(&MIN_PADDING_PX);
    // Search twice the minimum (at least 8 px): enough to report how far
    // short a layout falls, without paying for distances nobody asks about.
    let searched = (2.0 * min.max(0.0).ceil()).clamp(8.0, 2.0 * guv::MAX_SEARCH_TEXELS as f64);
    let mut rows = Vec::with_capacity(groups.len());
    let mut locations = Vec::new();
    let mut seen = BTreeSet::new();
    for g in &groups {
        let (w, h) = g.size();
        let s = guv::island_padding(&g.meshes(), w, h, min, searched);
        flagged(&mut locations, &mut seen, &g.prims, &s.close_meshes);
        rows.push((g, s));
    }
    let gap = |s: &guv::PaddingStats| s.min_gap_px.unwrap_or(searched);
    rows.sort_by(|a, b| gap(&a.1).total_cmp(&gap(&b.1)));
    let islands: u64 = rows.iter().map(|(_, s)| s.islands).sum();
    let pairs: u64 = rows.iter().map(|(_, s)| s.close_pairs).sum();
    let sets: Vec<Value> = rows
        .iter()
        .take(MAX_LOCATIONS)
        .map(|(g, s)| {
            json!({
                "set": g.set,
                "material": material_json(g.material),
                "resolution_px": s.plan.resolution(),
                "scale": crate::report::num(s.plan.scale),
                "islands": s.islands,
                "min_padding_px": crate::report::num(gap(s)),
                "island_pairs_too_close": s.close_pairs,
            })
        })
        .collect();
    let (g, s) = &rows[0];
    let found = s.min_gap_px;
    let outcome = match found {
        Some(x) if x < min => Comparison::Breach,
        _ => Comparison::Within,
    };
    let message = match found {
        None => format!(
            "no two UV islands within {} px of each other ({})",
            short(searched),
            count(islands, "island", "islands")
        ),
        Some(x) => format!(
            "the closest UV islands are {} px apart in {} at {} px, {} the {} px minimum; {} too close",
            short(x),
            g.label(),
            s.plan.resolution(),
            if outcome == Comparison::Breach { "under" } else { "within" },
            short(min),
            count(pairs, "island pair", "island pairs")
        ),
    };
    measured(
        Obj::new()
            .num("min_padding_px", gap(s))
            .num("searched_px", searched)
            .int("islands", islands)
            .int("island_pairs_too_close", pairs)
            .val("sets", Value::Array(sets))
            .locations(&locations),
        Obj::new().param(cx.profile, &MIN_PADDING_PX),
        outcome,
        message,
    )
}

// ---------------------------------------------------------------------------
// UV-006, UV-007, UV-008: UV range, mirrored triangles and texel density,
// per texture space (material and UV set), each primitive once.
// ---------------------------------------------------------------------------

/// The UV sets that `material` reads through some texture slot other than
/// `occlusionTexture` (an occlusion map is baked lighting, like a lightmap).
fn colour_sets(cx: &Ctx<'_>, material: Option<usize>) -> BTreeSet<usize> {
    let Some(mat) = material.and_then(|m| cx.asset.root.materials.get(m)) else { return BTreeSet::new() };
    let mut m = mat.clone();
    m.occlusion_texture = None;
    texture_slots(&m).into_iter().map(|(_, s)| s as usize).collect()
}

/// Whether TEXCOORD_`set` is a lightmap set for `material`: a set other than
/// TEXCOORD_0 that no texture slot but `occlusionTexture` reads (engines bake
/// lightmaps into the second UV channel: Unity's "Generate Lightmap UVs",
/// Unreal's Light Map Coordinate Index 1, Godot's UV2).
fn is_lightmap_set(cx: &Ctx<'_>, material: Option<usize>, set: usize) -> bool {
    set >= 1 && !colour_sets(cx, material).contains(&set)
}

/// UV-006: its definition.
pub const OUTSIDE_UNIT_SQUARE: CheckDef = CheckDef {
    id: "UV-006",
    name: "UVs outside the 0-1 square",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[],
    what: "For every texture space (material and UV set) of the drawn primitives, each primitive once, counts the UV coordinates (accessor elements) outside the closed [0,1] square, non-finite ones included, and takes the finite range of u and v. A set other than TEXCOORD_0 that the material reads through no texture slot except occlusionTexture is a lightmap set. Outside UVs in a colour set are reported (tiling and trim sheets use them on purpose); in a lightmap set they breach.",
    why: "Lightmaps and baked occlusion are unique per surface: a UV outside the tile wraps onto another surface's texels, so lighting bakes onto the wrong place, and lightmappers (Unity, Unreal, Godot) refuse or clamp such UVs. Atlased assets that do not tile should also stay inside the tile (the glTF-Asset-Auditor's requireRangeZeroToOne).",
    fix: "Pack the lightmap UV set into the 0-1 square (Blender: UV > Pack Islands on the second UV map; Unity: Generate Lightmap UVs); for atlased colour sets, move islands back into the tile by whole units.",
    measured: &[
        ("outside_pct", "UVs outside [0,1] over all texture spaces, % of UVs, 0 to 100"),
        ("outside_uvs", "UVs outside [0,1], summed over texture spaces"),
        ("uvs", "UVs looked at, summed over texture spaces"),
        ("lightmap_sets", "texture spaces whose set is a lightmap set"),
        ("lightmap_outside_uvs", "UVs outside [0,1] in lightmap sets"),
        (
            "sets",
            "per texture space (at most 100, most outside first): set, material (index or null), lightmap, uvs, outside_uvs, outside_pct, u_min, u_max, v_min, v_max (null when no UV is finite)",
        ),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[("max_lightmap_outside_uvs", "always 0: a lightmap set lies inside the 0-1 square")],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: None,
    run: outside_unit_square,
};

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 * 100.0 / whole as f64 }
}

/// UV-006.
pub fn outside_unit_square(cx: &Ctx<'_>) -> CheckOutput {
    let groups = uv_groups(cx);
    if groups.is_empty() {
        return CheckOutput::Skipped(NO_UVS.into());
    }
    let mut rows = Vec::with_capacity(groups.len());
    let mut locations = Vec::new();
    let mut seen = BTreeSet::new();
    let mut total = guv::RangeStats::default();
    let (mut lightmap_sets, mut lightmap_outside) = (0u64, 0u64);
    for g in &groups {
        let lightmap = is_lightmap_set(cx, g.material, g.set);
        let mut s = guv::RangeStats::default();
        let mut flags = Vec::with_capacity(g.prims.len());
        for p in &g.prims {
            let r = p.uvs.get(g.set).and_then(|u| u.as_deref()).map(guv::uv_range).unwrap_or_default();
            flags.push(lightmap && r.outside > 0);
            s.merge(&r);
        }
        if lightmap {
            lightmap_sets += 1;
            lightmap_outside += s.outside;
            flagged(&mut locations, &mut seen, &g.prims, &flags);
        }
        total.merge(&s);
        rows.push((g, lightmap, s));
    }
    rows.sort_by(|a, b| pct(b.2.outside, b.2.vertices).total_cmp(&pct(a.2.outside, a.2.vertices)));
    let bound = |x: Option<[f64; 2]>, k: usize| x.map_or(Value::Null, |v| crate::report::num(v[k]));
    let sets: Vec<Value> = rows
        .iter()
        .take(MAX_LOCATIONS)
        .map(|(g, lightmap, s)| {
            json!({
                "set": g.set,
                "material": material_json(g.material),
                "lightmap": lightmap,
                "uvs": s.vertices,
                "outside_uvs": s.outside,
                "outside_pct": crate::report::num(pct(s.outside, s.vertices)),
                "u_min": bound(s.min, 0),
                "u_max": bound(s.max, 0),
                "v_min": bound(s.min, 1),
                "v_max": bound(s.max, 1),
            })
        })
        .collect();
    let outside_pct = pct(total.outside, total.vertices);
    let outcome = if lightmap_outside > 0 { Comparison::Breach } else { Comparison::Within };
    let message = if lightmap_outside > 0 {
        let (g, _, s) = rows.iter().find(|r| r.1 && r.2.outside > 0).expect("a lightmap set has outside UVs");
        format!(
            "{} of the lightmap set {} lie outside the 0-1 square ({}%); a lightmap must lie inside",
            count(s.outside, "UV", "UVs"),
            g.label(),
            short(pct(s.outside, s.vertices))
        )
    } else if total.outside == 0 {
        format!("every UV lies inside the 0-1 square ({})", count(groups.len() as u64, "UV layout", "UV layouts"))
    } else {
        format!(
            "{}% of the UVs lie outside the 0-1 square ({} of {}), none of them in a lightmap set",
            short(outside_pct),
            thousands(total.outside),
            thousands(total.vertices)
        )
    };
    measured(
        Obj::new()
            .num("outside_pct", outside_pct)
            .int("outside_uvs", total.outside)
            .int("uvs", total.vertices)
            .int("lightmap_sets", lightmap_sets)
            .int("lightmap_outside_uvs", lightmap_outside)
            .val("sets", Value::Array(sets))
            .locations(&locations),
        Obj::new().int("max_lightmap_outside_uvs", 0),
        outcome,
        message,
    )
}

/// Budget: Mirrored UV triangles allowed.
pub const MAX_MIRRORED_UV_PCT: Param = Param {
    key: "max_mirrored_uv_pct",
    unit: "% of UV triangles",
    doc: "Mirrored (inverted) UV triangles allowed",
    overridable: false,
    integer: false,
};

/// UV-007: its definition.
pub const MIRRORED: CheckDef = CheckDef {
    id: "UV-007",
    name: "Mirrored UV triangles",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_MIRRORED_UV_PCT],
    what: "For every texture space (material and UV set) of the drawn primitives, each primitive once and as authored (a node's mirroring transform is XFM's business), takes each triangle's signed UV area (b - a) x (c - a) on the accessor values. glTF puts the UV origin at the image's top-left, so a triangle that reads the right way round on the texture has a negative signed area; a positive one is mirrored, the glTF-Asset-Auditor's inverted-UV test (its TriangleUv.isCounterClockwise). Triangles with zero UV area count as neither. The share is of all triangles with the set, summed over texture spaces.",
    why: "A mirrored triangle shows its texture back to front: text and logos read reversed, and tangent-space normal maps shade the wrong way unless tangents account for the mirroring.",
    fix: "Flip the mirrored islands back in the UV editor (Blender: select the island, UV > Mirror X), or, for intentionally mirrored halves, give them their own tangents and keep text out of them.",
    measured: &[
        ("mirrored_triangles", "mirrored UV triangles, summed over texture spaces"),
        ("mirrored_pct", "mirrored_triangles / triangles x 100, 0 to 100"),
        ("triangles", "triangles looked at, summed over texture spaces"),
        (
            "sets",
            "per texture space (at most 100, most mirrored first): set, material (index or null), triangles, mirrored_triangles, mirrored_pct",
        ),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[("max_mirrored_uv_pct", "largest allowed share of mirrored triangles, %")],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: Some(("mirrored_pct", "max_mirrored_uv_pct")),
    run: mirrored,
};

/// UV-007.
pub fn mirrored(cx: &Ctx<'_>) -> CheckOutput {
    let groups = uv_groups(cx);
    if groups.is_empty() {
        return CheckOutput::Skipped(NO_UVS.into());
    }
    let mut rows = Vec::with_capacity(groups.len());
    let mut locations = Vec::new();
    let mut seen = BTreeSet::new();
    let (mut tris, mut mirrored) = (0u64, 0u64);
    for g in &groups {
        let mut s = guv::MirrorStats::default();
        let mut flags = Vec::with_capacity(g.prims.len());
        for p in &g.prims {
            let m = p
                .uvs
                .get(g.set)
                .and_then(|u| u.as_deref())
                .map(|uvs| guv::mirrored_triangles(uvs, &p.triangles))
                .unwrap_or_default();
            flags.push(m.mirrored > 0);
            s.triangles += m.triangles;
            s.mirrored += m.mirrored;
        }
        flagged(&mut locations, &mut seen, &g.prims, &flags);
        tris += s.triangles;
        mirrored += s.mirrored;
        rows.push((g, s));
    }
    rows.sort_by(|a, b| pct(b.1.mirrored, b.1.triangles).total_cmp(&pct(a.1.mirrored, a.1.triangles)));
    let sets: Vec<Value> = rows
        .iter()
        .take(MAX_LOCATIONS)
        .map(|(g, s)| {
            json!({
                "set": g.set,
                "material": material_json(g.material),
                "triangles": s.triangles,
                "mirrored_triangles": s.mirrored,
                "mirrored_pct": crate::report::num(pct(s.mirrored, s.triangles)),
            })
        })
        .collect();
    let share = pct(mirrored, tris);
    let max = cx.profile.get(&MAX_MIRRORED_UV_PCT);
    let outcome = over(share, max);
    let message = if mirrored == 0 {
        format!("no mirrored UV triangles among {}", count(tris, "triangle", "triangles"))
    } else {
        let (g, s) = &rows[0];
        format!(
            "{} of {} are mirrored in UV space ({}%), {} the {}% limit; most in {} ({})",
            thousands(mirrored),
            count(tris, "triangle", "triangles"),
            short(share),
            if outcome == Comparison::Breach { "over" } else { "within" },
            short(max),
            g.label(),
            thousands(s.mirrored)
        )
    };
    measured(
        Obj::new()
            .int("mirrored_triangles", mirrored)
            .num("mirrored_pct", share)
            .int("triangles", tris)
            .val("sets", Value::Array(sets))
            .locations(&locations),
        Obj::new().param(cx.profile, &MAX_MIRRORED_UV_PCT),
        outcome,
        message,
    )
}

/// UV-008: its definition.
pub const TEXEL_DENSITY: CheckDef = CheckDef {
    id: "UV-008",
    name: "Texel density",
    category: CATEGORY,
    severity: Severity::Info,
    params: &[],
    what: "For every texture space (material and UV set) that samples a texture, each drawn primitive once, placed by the world transform of its first instance (so node scale counts), gives each triangle its texel density: sqrt(UV area x width x height / 3D area) in pixels per metre, where width and height are those of the largest texture the material samples through that set (a 1 m square mapped onto the whole of a 1024x1024 texture is 1024 px/m). Percentiles are weighted by 3D area: p5, median and p95, per material and over all texture spaces together. The glTF-Asset-Auditor's \"pixels per meter\" is UV area / 3D area times the file's largest (or smallest) texture's width x height, which is pixels squared per square metre, the square of this figure, and it reports only the extremes.",
    why: "Texel density tells how sharp a surface looks at a given distance; a spread across materials or parts means some look blurry beside others, and a density far above what the viewer ever sees wastes memory.",
    fix: "Nothing to fix: it measures. Even out density by scaling UV islands (Blender: Texel Density add-ons, UV > Average Islands Scale), or give materials texture sizes proportional to their surface.",
    measured: &[
        ("texel_density_median", "area-weighted median texel density over every texture space, px/m"),
        ("texel_density_p5", "area-weighted 5th percentile, px/m"),
        ("texel_density_p95", "area-weighted 95th percentile, px/m"),
        ("triangles", "triangles measured"),
        (
            "materials",
            "per texture space (at most 100, in material order): material (index or null), set, width, height, triangles, texel_density_p5, texel_density_median, texel_density_p95",
        ),
    ],
    threshold: &[],
    needs: Needs { geometry: true, textures: true, validator: false, renderer: false },
    gauge: None,
    run: texel_density,
};

/// Texel-density percentiles: (p5, median, p95), px/m.
type Quantiles = (f64, f64, f64);

/// Density percentiles of one sample set: (p5, median, p95).
fn density_quantiles(items: &mut [guv::Weighted]) -> Option<Quantiles> {
    guv::weighted_quantiles(items, [0.05, 0.5, 0.95]).map(|[p5, median, p95]| (p5, median, p95))
}

/// UV-008.
pub fn texel_density(cx: &Ctx<'_>) -> CheckOutput {
    texel_density_split(cx).finish()
}

/// A textured UV layout of UV-008, as its summary reports it: material,
/// UV set and texture size.
struct DensityLayout {
    material: Option<usize>,
    set: usize,
    size: (u32, u32),
}

/// UV-008 in two steps: its samples measured here, per textured layout,
/// their summary (three weighted quantiles over a sample a triangle)
/// handed back as a [`Tail`].
pub fn texel_density_split(cx: &Ctx<'_>) -> Split {
    let groups: Vec<UvGroup<'_>> = uv_groups(cx).into_iter().filter(|g| g.texture.is_some()).collect();
    if groups.is_empty() {
        return Split::Done(CheckOutput::Skipped("no drawn primitive samples a texture through its UVs".into()));
    }
    let first: BTreeMap<(usize, usize), &Instance> =
        drawn_primitives(cx).into_iter().map(|(p, i)| ((p.mesh, p.index), i)).collect();
    let mut rows = Vec::with_capacity(groups.len());
    // Each sample is ordered by its triangle's place among all the groups'
    // triangles visited (ties among equal densities go to the earlier
    // group, then the earlier triangle).
    let mut visited = 0usize;
    for g in &groups {
        let (w, h) = g.size();
        let mut samples = Vec::new();
        for p in &g.prims {
            let (Some(uvs), Some(inst)) = (p.uvs.get(g.set).and_then(|u| u.as_deref()), first.get(&(p.mesh, p.index)))
            else {
                continue;
            };
            // Four triangles at a time, as UV-004 measures them.
            let n = p.triangles.len();
            let place = mat4::Placer::for_points(&inst.world, &p.positions);
            guv::extend_measured4(&mut samples, n, visited, |i| {
                let (corners, uv, ok) = placed_quad(p, &place, uvs, i);
                guv::texel_density4(&corners, &uv, ok, w as f64, h as f64).map(|s| s.map(|(area, d)| (d, area)))
            });
            visited += p.triangles.len();
        }
        rows.push((DensityLayout { material: g.material, set: g.set, size: (w, h) }, samples));
    }
    Split::Tail(Tail::new(move || density_summary(rows)))
}

/// UV-008's summary of its samples per textured layout
/// ([`texel_density_split`]).
fn density_summary(rows: Vec<(DensityLayout, Vec<guv::Weighted>)>) -> CheckOutput {
    let layouts = rows.len() as u64;
    let mut all = Vec::new();
    // One texture space: its percentiles are the overall ones (three
    // selections over a million triangles, not six).
    let single = rows.len() == 1;
    let rows: Vec<(DensityLayout, u64, Option<Quantiles>)> = rows
        .into_iter()
        .map(|(g, mut samples)| {
            let q = if single { None } else { density_quantiles(&mut samples) };
            let n = samples.len() as u64;
            // One texture space: its samples become the whole, not a copy.
            if all.is_empty() {
                all = samples;
            } else {
                all.extend(samples);
            }
            (g, n, q)
        })
        .collect();
    let Some((p5, median, p95)) = density_quantiles(&mut all) else {
        return CheckOutput::Skipped("no textured triangle has a measurable 3D area".into());
    };
    let rows: Vec<_> =
        rows.into_iter().map(|(g, n, q)| (g, n, if single { Some((p5, median, p95)) } else { q })).collect();
    let qn = |q: Option<(f64, f64, f64)>, k: usize| q.map_or(Value::Null, |q| crate::report::num([q.0, q.1, q.2][k]));
    let materials: Vec<Value> = rows
        .iter()
        .take(MAX_LOCATIONS)
        .map(|(g, n, q)| {
            let (w, h) = g.size;
            json!({
                "material": material_json(g.material),
                "set": g.set,
                "width": w,
                "height": h,
                "triangles": n,
                "texel_density_p5": qn(*q, 0),
                "texel_density_median": qn(*q, 1),
                "texel_density_p95": qn(*q, 2),
            })
        })
        .collect();
    let message = format!(
        "texel density {} px/m (median; 5-95%: {} to {} px/m) over {}",
        short(median),
        short(p5),
        short(p95),
        count(layouts, "textured UV layout", "textured UV layouts")
    );
    measured(
        Obj::new()
            .num("texel_density_median", median)
            .num("texel_density_p5", p5)
            .num("texel_density_p95", p95)
            .int("triangles", all.len() as u64)
            .val("materials", Value::Array(materials)),
        Obj::new(),
        Comparison::Within,
        message,
    )
}
