//! GEO: open boundaries, winding, degenerate triangles and floating debris,
//! all on the scene's one welded world mesh ([`crate::asset::scene::WorldMesh`]).

use super::{CheckOutput, Comparison, Ctx, Obj, count, measured, short};
use crate::asset::scene::WorldMesh;
use crate::geom::mat4::Aabb;
use crate::geom::mesh::shape;
use rayon::prelude::*;
use std::collections::BTreeSet;

const NO_TRIANGLES: &str = "the default scene draws no triangles";

/// The welded world mesh under the profile's weld tolerance, or why the
/// checks that need it are skipped: the scene draws no triangles, or the
/// mesh is over the file's geometry budget (see [`crate::asset::scene::Scene::world_mesh`]).
pub fn world<'a>(cx: &'a Ctx<'_>) -> Result<&'a WorldMesh, String> {
    let w = cx.asset.scene.world_mesh(cx.profile.get("weld_tolerance"))?;
    if w.triangles.is_empty() { Err(NO_TRIANGLES.into()) } else { Ok(w) }
}

/// JSON pointers of the primitives that drew `triangles`, sorted, each once.
pub fn primitive_pointers(cx: &Ctx<'_>, w: &WorldMesh, triangles: impl Iterator<Item = u32>) -> Vec<String> {
    let scene = &cx.asset.scene;
    let prims: BTreeSet<(usize, usize)> = triangles
        .map(|t| {
            let p = &scene.primitives[scene.instances[w.instance_of[t as usize] as usize].primitive];
            (p.mesh, p.index)
        })
        .collect();
    prims.into_iter().map(|(m, i)| format!("/meshes/{m}/primitives/{i}")).collect()
}

/// GEO-002.
pub fn open_boundaries(cx: &Ctx<'_>) -> CheckOutput {
    let w = match world(cx) {
        Ok(w) => w,
        Err(why) => return CheckOutput::Skipped(why),
    };
    let t = &w.topology;
    let boundary: Vec<u32> = t.boundary_edges().map(|e| t.faces(e)[0].0).collect();
    let non_manifold = t.edges.iter().filter(|e| e.count > 2).count() as u64;
    let mut open = BTreeSet::new();
    for &f in &boundary {
        open.insert(t.shell[f as usize]);
    }
    let loops = t.boundary_loops() as u64;
    let max = cx.profile.get("max_boundary_edges");
    let n = boundary.len() as u64;
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
    let locations = primitive_pointers(cx, w, boundary.iter().copied());
    measured(
        Obj::new()
            .int("boundary_edges", n)
            .int("boundary_loops", loops)
            .int("non_manifold_edges", non_manifold)
            .int("shells", t.shell_count as u64)
            .int("open_shells", open.len() as u64)
            .bool("weld_exact", t.exact_weld)
            .locations(&locations),
        Obj::new().param(cx.profile, "max_boundary_edges").param(cx.profile, "weld_tolerance"),
        super::over(n as f64, max),
        message,
    )
}

/// GEO-003.
pub fn winding(cx: &Ctx<'_>) -> CheckOutput {
    let w = match world(cx) {
        Ok(w) => w,
        Err(why) => return CheckOutput::Skipped(why),
    };
    let t = &w.topology;
    let faces = t.collapsed.iter().filter(|c| !**c).count() as u64;
    let flipped = t.flipped_faces();
    let pct = if faces > 0 { flipped.len() as f64 / faces as f64 * 100.0 } else { 0.0 };
    let max = cx.profile.get("flipped_pct");
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
        Obj::new().param(cx.profile, "flipped_pct"),
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

/// Whether a world-space triangle is degenerate at `tol`: a repeated index,
/// an area below tol^2, or a shortest altitude below tol (collinear).
pub fn is_degenerate(w: &WorldMesh, t: usize, tol: f64) -> bool {
    if w.repeated_index[t] {
        return true;
    }
    let [a, b, c] = w.triangles[t].map(|i| w.points[i as usize]);
    let s = shape(a, b, c);
    !(s.area >= tol * tol && s.min_altitude >= tol)
}

/// The degenerate flag of every triangle, computed once per report.
pub fn degenerate_flags(w: &WorldMesh, tol: f64) -> &[bool] {
    w.degenerate.get_or_init(|| (0..w.triangles.len()).into_par_iter().map(|t| is_degenerate(w, t, tol)).collect())
}

/// GEO-004.
pub fn degenerate_triangles(cx: &Ctx<'_>) -> CheckOutput {
    let w = match world(cx) {
        Ok(w) => w,
        Err(why) => return CheckOutput::Skipped(why),
    };
    let tol = cx.profile.get("weld_tolerance");
    let flags = degenerate_flags(w, tol);
    let bad: Vec<u32> = (0..w.triangles.len()).filter(|&t| flags[t]).map(|t| t as u32).collect();
    let total = w.triangles.len() as u64;
    let pct = bad.len() as f64 / total as f64 * 100.0;
    let max = cx.profile.get("max_degenerate_pct");
    let locations = primitive_pointers(cx, w, bad.iter().copied());
    measured(
        Obj::new()
            .int("degenerate_triangles", bad.len() as u64)
            .int("triangles", total)
            .num("degenerate_pct", pct)
            .locations(&locations),
        Obj::new().param(cx.profile, "max_degenerate_pct").param(cx.profile, "weld_tolerance"),
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
            let s = t.shell[ti];
            if s != u32::MAX {
                for &v in &t.triangles[ti] {
                    boxes[s as usize].add(t.vertices[v as usize]);
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
    let (boxes, scene_box) = shell_boxes(t);
    // The main shell: most triangles; ties go to the larger box, then the lower label.
    let main = (0..t.shell_count)
        .max_by(|&a, &b| {
            sizes[a].cmp(&sizes[b]).then(boxes[a].diagonal().total_cmp(&boxes[b].diagonal())).then(b.cmp(&a))
        })
        .unwrap_or(0);
    let total: u64 = sizes.iter().sum();
    let max_tri_pct = cx.profile.get("debris_max_tri_pct");
    let min_gap = cx.profile.get("debris_min_gap_pct") / 100.0 * scene_box.diagonal();
    let small = |s: usize| sizes[s] as f64 <= max_tri_pct / 100.0 * total as f64;
    // A main body exists only when the largest shell is not itself small (an
    // instanced grid of 125 equal boxes has none, and no debris); a small
    // shell is debris when it stands apart from every shell that is not small
    // (a rivet on a strap of a multi-part asset is not debris).
    let large: Vec<usize> = (0..t.shell_count).filter(|&s| !small(s)).collect();
    let debris: Vec<usize> = if small(main) {
        Vec::new()
    } else {
        (0..t.shell_count)
            .filter(|&s| small(s))
            .filter(|&s| large.iter().all(|&b| box_gap(&boxes[s], &boxes[b]) >= min_gap))
            .collect()
    };
    let debris_tris: u64 = debris.iter().map(|&s| sizes[s]).sum();
    let is_debris: Vec<bool> = {
        let mut v = vec![false; t.shell_count];
        debris.iter().for_each(|&s| v[s] = true);
        v
    };
    let tris = (0..t.triangles.len() as u32)
        .filter(|&x| t.shell[x as usize] != u32::MAX && is_debris[t.shell[x as usize] as usize]);
    let locations = primitive_pointers(cx, w, tris);
    let max = cx.profile.get("max_debris_shells");
    measured(
        Obj::new()
            .int("shells", t.shell_count as u64)
            .int("debris_shells", debris.len() as u64)
            .int("debris_triangles", debris_tris)
            .locations(&locations),
        Obj::new()
            .param(cx.profile, "max_debris_shells")
            .param(cx.profile, "debris_max_tri_pct")
            .param(cx.profile, "debris_min_gap_pct"),
        super::over(debris.len() as f64, max),
        format!(
            "{} of {} float apart from the main body ({})",
            count(debris.len() as u64, "small shell", "small shells"),
            count(t.shell_count as u64, "shell", "shells"),
            count(debris_tris, "triangle", "triangles")
        ),
    )
}
