//! GEO: open boundaries, winding, degenerate triangles, floating debris,
//! non-manifold edges and vertices, and duplicate faces, all on the scene's
//! one welded world mesh ([`crate::asset::scene::WorldMesh`]).

use super::{CheckDef, Family, LOC, LOC_TOTAL, Needs, WELD_TOLERANCE};
use super::{CheckOutput, Comparison, Ctx, Obj, count, measured, short};
use crate::asset::scene::{Scene, WorldMesh};
use crate::geom::bits::Bits;
use crate::geom::mat4::Aabb;
use crate::geom::mesh::ShellLabels;
use crate::profile::Param;
use crate::report::Severity;
use rayon::prelude::*;
use std::collections::BTreeSet;

const CATEGORY: &str = "geometry";

/// The GEO family: its checks in ID order.
pub static FAMILY: Family = Family {
    prefix: "GEO",
    category: CATEGORY,
    label: "Geometry",
    blurb: "Holes, winding, degenerate triangles, floating debris, non-manifold and duplicate faces",
    checks: &[OPEN_BOUNDARIES, WINDING, DEGENERATE_TRIANGLES, FLOATING_DEBRIS, NON_MANIFOLD, DUPLICATE_FACES],
};

const NO_TRIANGLES: &str = "the default scene draws no triangles";

/// The welded world mesh under the profile's weld tolerance, or why the
/// checks that need it are skipped: the scene draws no triangles, or the
/// mesh is over the file's geometry budget (see [`crate::asset::scene::Scene::world_mesh`]).
pub fn world<'a>(cx: &'a Ctx<'_>) -> Result<&'a WorldMesh, String> {
    let w = cx.asset.scene.world_mesh(cx.profile.get(&WELD_TOLERANCE))?;
    if w.triangle_count() == 0 { Err(NO_TRIANGLES.into()) } else { Ok(w) }
}

/// JSON pointers of the primitives that drew `triangles`, sorted, each once.
pub fn primitive_pointers(cx: &Ctx<'_>, w: &WorldMesh, triangles: impl Iterator<Item = u32>) -> Vec<String> {
    let scene = &cx.asset.scene;
    let prims: BTreeSet<(usize, usize)> = triangles
        .map(|t| {
            let p = &scene.primitives[scene.instances[w.instance_of(t)].primitive];
            (p.mesh, p.index)
        })
        .collect();
    prims.into_iter().map(|(m, i)| format!("/meshes/{m}/primitives/{i}")).collect()
}

/// Budget: Open boundary edges allowed.
pub const MAX_BOUNDARY_EDGES: Param = Param {
    key: "max_boundary_edges",
    unit: "edges",
    doc: "Open boundary edges allowed",
    overridable: false,
    integer: true,
};

/// GEO-002: its definition.
pub const OPEN_BOUNDARIES: CheckDef = CheckDef {
    id: "GEO-002",
    name: "Open boundaries (holes)",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_BOUNDARY_EDGES, &WELD_TOLERANCE],
    what: "Welds every drawn vertex in world space (positions within weld_tolerance are one vertex, transitively; UVs and normals are ignored, so UV seams and hard-normal splits are not holes), then counts edges used by exactly one triangle (boundary edges), their loops, edges used by three or more (non-manifold), and the edge-connected shells that have a boundary. Collapsed triangles (a repeated index after welding) are left out.",
    why: "Holes show as see-through gaps and break watertight uses: 3D printing, physics, booleans, shadow volumes and remeshing.",
    fix: "Fill the holes or cap the openings; merge by distance (Blender: Mesh > Clean Up > Merge by Distance) when the gaps are unwelded seams wider than the tolerance. Open surfaces by design (planes, cloth, leaves) can be accepted with a profile that raises max_boundary_edges.",
    measured: &[
        ("boundary_edges", "welded edges used by exactly one triangle"),
        ("boundary_loops", "connected chains of boundary edges (a hole, or an open border)"),
        ("non_manifold_edges", "welded edges used by three or more triangles"),
        ("shells", "edge-connected components of the welded mesh"),
        ("open_shells", "shells with at least one boundary edge"),
        ("weld_exact", "false only when pathological density made the weld merge whole tolerance-wide cells"),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[("max_boundary_edges", "boundary edges allowed"), ("weld_tolerance", "weld tolerance, metres")],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: None,
    run: open_boundaries,
};

/// GEO-002.
pub fn open_boundaries(cx: &Ctx<'_>) -> CheckOutput {
    let w = match world(cx) {
        Ok(w) => w,
        Err(why) => return CheckOutput::Skipped(why),
    };
    let t = &w.topology;
    let edges = t.open_edges();
    // Each boundary edge's one face, read where it is needed rather than held.
    let boundary = || edges.boundary.iter().map(|&i| t.faces_of(i as usize)[0].tri());
    let non_manifold = edges.non_manifold;
    let mut open = BTreeSet::new();
    for f in boundary() {
        open.insert(t.shell.get(f as usize));
    }
    let loops = t.loops_of_open(&edges) as u64;
    let max = cx.profile.get(&MAX_BOUNDARY_EDGES);
    let n = edges.boundary.len() as u64;
    let message = if n == 0 {
        format!("closed: no boundary edges in {}", count(t.shell_count as u64, "shell", "shells"))
    } else {
        format!(
            "{} in {} ({} of {} open); {} non-manifold",
            count(n, "boundary edge", "boundary edges"),
            count(loops, "loop", "loops"),
            open.len(),
            count(t.shell_count as u64, "shell", "shells"),
            non_manifold
        )
    };
    let locations = primitive_pointers(cx, w, boundary());
    measured(
        Obj::new()
            .int("boundary_edges", n)
            .int("boundary_loops", loops)
            .int("non_manifold_edges", non_manifold)
            .int("shells", t.shell_count as u64)
            .int("open_shells", open.len() as u64)
            .bool("weld_exact", t.exact_weld)
            .locations(&locations),
        Obj::new().param(cx.profile, &MAX_BOUNDARY_EDGES).param(cx.profile, &WELD_TOLERANCE),
        super::over(n as f64, max),
        message,
    )
}

/// Budget: Faces disagreeing with their shell's winding before failing.
pub const FLIPPED_PCT: Param = Param {
    key: "flipped_pct",
    unit: "% of faces",
    doc: "Faces disagreeing with their shell's winding before failing",
    overridable: false,
    integer: false,
};

/// GEO-003: its definition.
pub const WINDING: CheckDef = CheckDef {
    id: "GEO-003",
    name: "Inconsistent winding / flipped normals",
    category: CATEGORY,
    severity: Severity::Error,
    params: &[&FLIPPED_PCT],
    what: "Within each shell of the welded mesh, propagates orientation across manifold edges (two triangles agree when they walk their shared edge in opposite directions); a triangle is flipped when its orientation is opposite to its shell's majority (where non-manifold edges split a shell into manifold patches whose windings cannot be compared, the majority of its patch). Mirrored instances (negative determinant) flip their winding first, as glTF requires. Fails above flipped_pct; warns in the band 0 < flipped_pct <= threshold.",
    why: "Flipped triangles are culled from the wrong side and light inside-out: holes and black patches in viewers that cull back faces.",
    fix: "Recalculate normals outside (Blender: Mesh > Normals > Recalculate Outside) or flip the listed primitives' faces.",
    measured: &[
        ("face_count", "triangles in the welded mesh (collapsed ones excluded)"),
        ("flipped_face_count", "triangles whose winding disagrees with their shell's majority"),
        ("flipped_pct", "flipped_face_count / face_count x 100, 0..50"),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[("flipped_pct", "percentage above which the check fails (warns from just above 0)")],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: None,
    run: winding,
};

/// GEO-003.
pub fn winding(cx: &Ctx<'_>) -> CheckOutput {
    let w = match world(cx) {
        Ok(w) => w,
        Err(why) => return CheckOutput::Skipped(why),
    };
    let t = &w.topology;
    let faces = t.live_triangles() as u64;
    let flipped = t.flipped_faces();
    let pct = if faces > 0 { flipped.len() as f64 / faces as f64 * 100.0 } else { 0.0 };
    let max = cx.profile.get(&FLIPPED_PCT);
    let outcome = if pct > max {
        Comparison::Breach
    } else if !flipped.is_empty() {
        Comparison::WarnBand
    } else {
        Comparison::Within
    };
    let locations = primitive_pointers(cx, w, flipped.iter().copied());
    measured(
        Obj::new()
            .int("face_count", faces)
            .int("flipped_face_count", flipped.len() as u64)
            .num("flipped_pct", pct)
            .locations(&locations),
        Obj::new().param(cx.profile, &FLIPPED_PCT),
        outcome,
        format!(
            "{} of {} disagree with their shell's winding ({}%, limit {}%)",
            flipped.len(),
            count(faces, "face", "faces"),
            short(pct),
            short(max)
        ),
    )
}

/// GEO-004's degenerate test ([`crate::geom::mesh::vector::is_degenerate`]).
pub use crate::geom::mesh::vector::is_degenerate;

/// The degenerate flag of every triangle, computed once per report.
/// `scene` is the scene `w` was built from.
pub fn degenerate_flags<'a>(w: &'a WorldMesh, scene: &Scene, tol: f64) -> &'a Bits {
    w.degenerate.get_or_init(|| Bits::from_bools(&w.map_corners(scene, |c, repeated| is_degenerate(c, repeated, tol))))
}

/// Budget: Degenerate triangles allowed.
pub const MAX_DEGENERATE_PCT: Param = Param {
    key: "max_degenerate_pct",
    unit: "% of triangles",
    doc: "Degenerate triangles allowed",
    overridable: false,
    integer: false,
};

/// GEO-004: its definition.
pub const DEGENERATE_TRIANGLES: CheckDef = CheckDef {
    id: "GEO-004",
    name: "Degenerate triangles",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_DEGENERATE_PCT, &WELD_TOLERANCE],
    what: "Counts drawn triangles (per instance, in world space) with a repeated vertex index, an area below weld_tolerance squared, or a shortest altitude below weld_tolerance (collinear corners).",
    why: "Degenerate triangles render nothing but cost vertex work, break normal and tangent generation (NaNs), and trip physics and remeshing tools.",
    fix: "Remove them (Blender: Mesh > Clean Up > Degenerate Dissolve; glTF-Transform weld and dedup).",
    measured: &[
        ("degenerate_triangles", "degenerate triangles drawn"),
        ("triangles", "triangles drawn"),
        ("degenerate_pct", "degenerate_triangles / triangles x 100"),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[
        ("max_degenerate_pct", "percentage allowed"),
        ("weld_tolerance", "metres: the area and altitude floor"),
    ],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: Some(("degenerate_pct", "max_degenerate_pct")),
    run: degenerate_triangles,
};

/// GEO-004.
pub fn degenerate_triangles(cx: &Ctx<'_>) -> CheckOutput {
    let w = match world(cx) {
        Ok(w) => w,
        Err(why) => return CheckOutput::Skipped(why),
    };
    let tol = cx.profile.get(&WELD_TOLERANCE);
    let flags = degenerate_flags(w, &cx.asset.scene, tol);
    let bad: Vec<u32> = (0..w.triangle_count()).filter(|&t| flags.get(t)).map(|t| t as u32).collect();
    let total = w.triangle_count() as u64;
    let pct = bad.len() as f64 / total as f64 * 100.0;
    let max = cx.profile.get(&MAX_DEGENERATE_PCT);
    let locations = primitive_pointers(cx, w, bad.iter().copied());
    measured(
        Obj::new()
            .int("degenerate_triangles", bad.len() as u64)
            .int("triangles", total)
            .num("degenerate_pct", pct)
            .locations(&locations),
        Obj::new().param(cx.profile, &MAX_DEGENERATE_PCT).param(cx.profile, &WELD_TOLERANCE),
        super::over(pct, max),
        format!(
            "{} of {} degenerate ({}%, limit {}%)",
            bad.len(),
            count(total, "triangle", "triangles"),
            short(pct),
            short(max)
        ),
    )
}

/// Gap between two boxes (0 when they touch or overlap).
fn box_gap(a: &Aabb, b: &Aabb) -> f64 {
    let mut d2 = 0.0;
    for i in 0..3 {
        let g = (a.min[i] - b.max[i]).max(b.min[i] - a.max[i]).max(0.0);
        d2 += g * g;
    }
    d2.sqrt()
}

/// The bounding box of every shell's triangles, and of all of them. With
/// few shells, chunks of triangles are boxed on all cores and merged (min
/// and max are exact in any order); with many, one pass.
fn shell_boxes(t: &crate::geom::mesh::Topology) -> (Vec<Aabb>, Aabb) {
    let boxes_of = |range: std::ops::Range<usize>| {
        let mut boxes = vec![Aabb::empty(); t.shell_count];
        for ti in range {
            let s = t.shell.get(ti);
            if s != ShellLabels::NONE {
                for &v in &t.triangles[ti] {
                    boxes[s as usize].add(t.vertices.get(v));
                }
            }
        }
        boxes
    };
    let n = t.triangles.len();
    let boxes = if t.shell_count <= 4096 && n >= 65_536 {
        let chunk = n.div_ceil(8);
        (0..8)
            .into_par_iter()
            .map(|c| boxes_of(c * chunk..((c + 1) * chunk).min(n)))
            .reduce_with(|mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| x.union(y));
                a
            })
            .unwrap_or_default()
    } else {
        boxes_of(0..n)
    };
    let mut scene_box = Aabb::empty();
    boxes.iter().for_each(|b| scene_box.union(b));
    (boxes, scene_box)
}

/// Budget: Floating debris shells allowed.
pub const MAX_DEBRIS_SHELLS: Param = Param {
    key: "max_debris_shells",
    unit: "shells",
    doc: "Floating debris shells allowed",
    overridable: false,
    integer: true,
};

/// Budget: Largest shell that can count as debris.
pub const DEBRIS_MAX_TRI_PCT: Param = Param {
    key: "debris_max_tri_pct",
    unit: "% of triangles",
    doc: "Largest shell that can count as debris",
    overridable: false,
    integer: false,
};

/// Budget: Smallest gap from the larger shells for debris.
pub const DEBRIS_MIN_GAP_PCT: Param = Param {
    key: "debris_min_gap_pct",
    unit: "% of diagonal",
    doc: "Smallest gap from the larger shells for debris",
    overridable: false,
    integer: false,
};

/// GEO-007: its definition.
pub const FLOATING_DEBRIS: CheckDef = CheckDef {
    id: "GEO-007",
    name: "Floating debris",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_DEBRIS_SHELLS, &DEBRIS_MAX_TRI_PCT, &DEBRIS_MIN_GAP_PCT],
    what: "Among the shells of the welded mesh, a shell is debris when it holds at most debris_max_tri_pct % of the triangles and its bounding box is at least debris_min_gap_pct % of the scene diagonal away from the box of every shell that is not small (so a small part beside a larger part is not debris); a mesh whose shells are all small, or none, has none.",
    why: "Stray fragments left by modelling or scanning inflate bounds (breaking framing, scale and origin checks) and render as specks in mid-air.",
    fix: "Select linked geometry and delete the fragments (Blender: Select > Select Loose; MeshLab: Remove Isolated Pieces).",
    measured: &[
        ("shells", "edge-connected components of the welded mesh"),
        ("debris_shells", "shells that are small and separated from every shell that is not"),
        ("debris_triangles", "triangles in debris shells"),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[
        ("max_debris_shells", "debris shells allowed"),
        ("debris_max_tri_pct", "largest shell, % of triangles, that can be debris"),
        ("debris_min_gap_pct", "smallest box gap from the shells that are not small, % of the scene diagonal"),
    ],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: None,
    run: floating_debris,
};

/// GEO-007.
pub fn floating_debris(cx: &Ctx<'_>) -> CheckOutput {
    let w = match world(cx) {
        Ok(w) => w,
        Err(why) => return CheckOutput::Skipped(why),
    };
    let t = &w.topology;
    if t.shell_count == 0 {
        return CheckOutput::Skipped("every triangle is degenerate".into());
    }
    let sizes = t.shell_sizes();
    let total: u64 = sizes.iter().sum();
    let max_tri_pct = cx.profile.get(&DEBRIS_MAX_TRI_PCT);
    let small = |s: usize| sizes[s] as f64 <= max_tri_pct / 100.0 * total as f64;
    // A main body exists only when the largest shell is not itself small (an
    // instanced grid of 125 equal boxes has none, and no debris); a small
    // shell is debris when it stands apart from every shell that is not small
    // (a rivet on a strap of a multi-part asset is not debris). So there is
    // debris to look for only when some shells are small and some are not:
    // only then are the shells boxed (a mesh of one shell, or of shells all
    // alike, reads no corner here).
    let large: Vec<usize> = (0..t.shell_count).filter(|&s| !small(s)).collect();
    let debris: Vec<usize> = if large.is_empty() || large.len() == t.shell_count {
        Vec::new()
    } else {
        let (boxes, scene_box) = shell_boxes(t);
        let min_gap = cx.profile.get(&DEBRIS_MIN_GAP_PCT) / 100.0 * scene_box.diagonal();
        (0..t.shell_count)
            .filter(|&s| small(s))
            .filter(|&s| large.iter().all(|&b| box_gap(&boxes[s], &boxes[b]) >= min_gap))
            .collect()
    };
    let debris_tris: u64 = debris.iter().map(|&s| sizes[s]).sum();
    let locations = if debris.is_empty() {
        Vec::new()
    } else {
        let mut is_debris = vec![false; t.shell_count];
        debris.iter().for_each(|&s| is_debris[s] = true);
        let tris = (0..t.triangles.len() as u32)
            .filter(|&x| t.shell.get(x as usize) != ShellLabels::NONE && is_debris[t.shell.get(x as usize) as usize]);
        primitive_pointers(cx, w, tris)
    };
    let max = cx.profile.get(&MAX_DEBRIS_SHELLS);
    measured(
        Obj::new()
            .int("shells", t.shell_count as u64)
            .int("debris_shells", debris.len() as u64)
            .int("debris_triangles", debris_tris)
            .locations(&locations),
        Obj::new()
            .param(cx.profile, &MAX_DEBRIS_SHELLS)
            .param(cx.profile, &DEBRIS_MAX_TRI_PCT)
            .param(cx.profile, &DEBRIS_MIN_GAP_PCT),
        super::over(debris.len() as f64, max),
        format!(
            "{} of {} float apart from the main body ({})",
            count(debris.len() as u64, "small shell", "small shells"),
            count(t.shell_count as u64, "shell", "shells"),
            count(debris_tris, "triangle", "triangles")
        ),
    )
}

/// Budget: Non-manifold edges allowed.
pub const MAX_NON_MANIFOLD_EDGES: Param = Param {
    key: "max_non_manifold_edges",
    unit: "edges",
    doc: "Non-manifold edges (three or more triangles) allowed",
    overridable: false,
    integer: true,
};

/// Budget: Non-manifold (bow-tie) vertices allowed.
pub const MAX_NON_MANIFOLD_VERTICES: Param = Param {
    key: "max_non_manifold_vertices",
    unit: "vertices",
    doc: "Non-manifold (bow-tie) vertices allowed",
    overridable: false,
    integer: true,
};

/// GEO-008: its definition.
pub const NON_MANIFOLD: CheckDef = CheckDef {
    id: "GEO-008",
    name: "Non-manifold edges and vertices",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_NON_MANIFOLD_EDGES, &MAX_NON_MANIFOLD_VERTICES, &WELD_TOLERANCE],
    what: "On the welded world mesh (the weld GEO-002 uses; collapsed triangles left out), counts non-manifold edges, used by three or more triangles (fins, T-junctions of surfaces; boundary edges, used by one, are GEO-002's and edges whose two triangles disagree in winding are GEO-003's, so neither counts here), and non-manifold vertices, whose triangles form more than one fan (bow-ties: two triangles at a vertex are in one fan when edges ending at that vertex join them, directly or through other triangles there). Fails when either count is over its budget.",
    why: "Non-manifold geometry has no well-defined inside or surface neighbourhood: 3D printing slicers, booleans, remeshers, subdivision, normal smoothing and simplifiers fail or produce artefacts on it.",
    fix: "Split or delete the extra faces on each listed edge and separate bow-tie vertices (Blender: Select > Select All by Trait > Non Manifold, then Rip or Merge; MeshLab: Repair non-manifold edges/vertices).",
    measured: &[
        ("non_manifold_edges", "welded edges used by three or more triangles"),
        ("non_manifold_vertices", "welded vertices whose triangles form more than one fan (bow-ties)"),
        ("weld_exact", "false only when pathological density made the weld merge whole tolerance-wide cells"),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[
        ("max_non_manifold_edges", "non-manifold edges allowed"),
        ("max_non_manifold_vertices", "non-manifold vertices allowed"),
        ("weld_tolerance", "weld tolerance, metres"),
    ],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: None,
    run: non_manifold,
};

/// GEO-008.
pub fn non_manifold(cx: &Ctx<'_>) -> CheckOutput {
    let w = match world(cx) {
        Ok(w) => w,
        Err(why) => return CheckOutput::Skipped(why),
    };
    let t = &w.topology;
    // The edges of three or more faces, found on the thread pool, in order.
    let edges: Vec<usize> =
        (0..t.edges.len()).into_par_iter().with_min_len(1 << 14).filter(|&i| t.edges.span(i).len() > 2).collect();
    let vertices = t.non_manifold_vertices();
    // The primitives that drew the triangles on a non-manifold edge or at
    // a non-manifold vertex (every triangle read only when there is one).
    let at_vertex = (!vertices.is_empty()).then(|| {
        let mut at = Bits::new(t.vertices.len());
        vertices.iter().for_each(|&v| at.set(v as usize));
        at
    });
    let at_one = at_vertex.iter().flat_map(|at| {
        (0..t.triangles.len() as u32)
            .filter(|&ti| !t.collapsed(ti as usize) && t.triangles[ti as usize].iter().any(|&v| at.get(v as usize)))
    });
    let tris = edges.iter().flat_map(|&e| t.faces_of(e).iter().map(|f| f.tri())).chain(at_one);
    let locations = primitive_pointers(cx, w, tris);
    let (ne, nv) = (edges.len() as u64, vertices.len() as u64);
    let (max_e, max_v) = (cx.profile.get(&MAX_NON_MANIFOLD_EDGES), cx.profile.get(&MAX_NON_MANIFOLD_VERTICES));
    let outcome = if ne as f64 > max_e || nv as f64 > max_v { Comparison::Breach } else { Comparison::Within };
    measured(
        Obj::new()
            .int("non_manifold_edges", ne)
            .int("non_manifold_vertices", nv)
            .bool("weld_exact", t.exact_weld)
            .locations(&locations),
        Obj::new()
            .param(cx.profile, &MAX_NON_MANIFOLD_EDGES)
            .param(cx.profile, &MAX_NON_MANIFOLD_VERTICES)
            .param(cx.profile, &WELD_TOLERANCE),
        outcome,
        format!(
            "{} and {} (limits {} and {})",
            count(ne, "non-manifold edge", "non-manifold edges"),
            count(nv, "non-manifold vertex", "non-manifold vertices"),
            max_e,
            max_v
        ),
    )
}

/// Budget: Duplicate faces allowed.
pub const MAX_DUPLICATE_FACES: Param = Param {
    key: "max_duplicate_faces",
    unit: "triangles",
    doc: "Duplicate (coincident) triangles allowed",
    overridable: false,
    integer: true,
};

/// GEO-009: its definition.
pub const DUPLICATE_FACES: CheckDef = CheckDef {
    id: "GEO-009",
    name: "Duplicate and coincident faces (z-fighting)",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_DUPLICATE_FACES, &WELD_TOLERANCE],
    what: "On the welded world mesh (collapsed triangles left out), counts triangles over the same three welded vertices as another triangle, in any order or winding (so instances drawn on top of each other count too); each group of k such triangles counts k - 1 (what removing duplicates would remove). Those whose winding opposes the group's first are counted apart as back-to-back pairs.",
    why: "Coincident triangles z-fight (flicker between materials as the camera moves), double the shading and blending cost, and break manifoldness for printing and booleans; back-to-back copies are a way to fake two-sided faces that doubleSided does better.",
    fix: "Delete the duplicates (Blender: Mesh > Clean Up > Merge by Distance, then Select > Select All by Trait > Interior Faces; MeshLab: Remove Duplicate Faces; glTF-Transform dedup for repeated meshes); use doubleSided materials instead of back-to-back copies.",
    measured: &[
        ("duplicate_faces", "triangles coincident with an earlier one (k - 1 per group of k)"),
        ("duplicate_pct", "duplicate_faces / face_count x 100"),
        (
            "opposite_winding",
            "of duplicate_faces, those wound against their group's majority (back to back): min(forward, backward) per group",
        ),
        ("face_count", "triangles in the welded mesh (collapsed ones excluded)"),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[("max_duplicate_faces", "duplicate triangles allowed"), ("weld_tolerance", "weld tolerance, metres")],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: None,
    run: duplicate_faces,
};

/// GEO-009.
pub fn duplicate_faces(cx: &Ctx<'_>) -> CheckOutput {
    let w = match world(cx) {
        Ok(w) => w,
        Err(why) => return CheckOutput::Skipped(why),
    };
    let t = &w.topology;
    let dups = t.duplicate_faces();
    let faces = t.live_triangles() as u64;
    let n = dups.len() as u64;
    let opposite = dups.iter().filter(|d| d.1).count() as u64;
    let pct = if faces > 0 { n as f64 / faces as f64 * 100.0 } else { 0.0 };
    let max = cx.profile.get(&MAX_DUPLICATE_FACES);
    let locations = primitive_pointers(cx, w, dups.iter().map(|d| d.0));
    measured(
        Obj::new()
            .int("duplicate_faces", n)
            .num("duplicate_pct", pct)
            .int("opposite_winding", opposite)
            .int("face_count", faces)
            .locations(&locations),
        Obj::new().param(cx.profile, &MAX_DUPLICATE_FACES).param(cx.profile, &WELD_TOLERANCE),
        super::over(n as f64, max),
        format!(
            "{} of {} coincide with another ({}%, {} back to back; limit {})",
            n,
            count(faces, "face", "faces"),
            short(pct),
            opposite,
            max
        ),
    )
}
