//! UV: texture coordinates present where materials sample textures (UV-001),
//! and the quality of the layouts: overlap (UV-002), texel stretch (UV-004)
//! and island padding (UV-005), measured by `geom::uv` per texture space.

use super::{CheckDef, Family, LOC, LOC_TOTAL, Needs};
use super::{CheckOutput, Comparison, Ctx, MAX_LOCATIONS, Obj, count, measured, over, short, thousands};
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
    blurb: "Missing UVs, overlap, stretch, island padding",
    checks: &[MISSING_UVS, OVERLAP, STRETCH, PADDING],
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

/// UV-004.
pub fn stretch(cx: &Ctx<'_>) -> CheckOutput {
    let max_ratio = cx.profile.get(&MAX_STRETCH_RATIO);
    let max_pct = cx.profile.get(&MAX_STRETCHED_AREA_PCT);
    let mut per_set: BTreeMap<usize, Vec<guv::Weighted>> = BTreeMap::new();
    let mut locations = Vec::new();
    for (p, inst) in drawn_primitives(cx) {
        if !p.uvs.iter().any(Option::is_some) {
            continue;
        }
        let world: Vec<[f64; 3]> = p.positions.iter().map(|&q| mat4::transform_point(&inst.world, q)).collect();
        let mut stretched = false;
        for (set, uvs) in p.uvs.iter().enumerate() {
            let Some(uvs) = uvs else { continue };
            // Texel proportions: a 2:1 texture stretches u twice as much.
            let (w, h) = bound_texture(cx, p.material, set).unwrap_or((1, 1));
            let side = w.max(h) as f64;
            let (sx, sy) = (w as f64 / side, h as f64 / side);
            let samples = per_set.entry(set).or_default();
            samples.reserve(p.triangles.len());
            for t in &p.triangles {
                let [a, b, c] = t.map(|i| i as usize);
                let (Some(&pa), Some(&pb), Some(&pc)) = (world.get(a), world.get(b), world.get(c)) else { continue };
                let (Some(&ua), Some(&ub), Some(&uc)) = (uvs.get(a), uvs.get(b), uvs.get(c)) else { continue };
                let uv = [ua, ub, uc].map(|q| [q[0] as f64 * sx, q[1] as f64 * sy]);
                if let Some((area, ratio)) = guv::triangle_stretch([pa, pb, pc], uv) {
                    stretched |= ratio > max_ratio;
                    let order = samples.len() as u64;
                    samples.push(guv::Weighted { value: ratio, weight: area, order });
                }
            }
        }
        if stretched {
            locations.push(p.pointer());
        }
    }
    if per_set.is_empty() {
        return CheckOutput::Skipped(NO_UVS.into());
    }
    let mut rows: Vec<(usize, guv::StretchStats)> =
        per_set.into_iter().map(|(set, mut s)| (set, guv::summarize_stretch(&mut s, max_ratio))).collect();
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
        Obj::new().param(cx.profile, &MAX_STRETCH_RATIO).param(cx.profile, &MAX_STRETCHED_AREA_PCT),
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
