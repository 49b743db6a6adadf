//! PERF: triangle, vertex and draw-call counts of the default scene as drawn;
//! vertex-cache, overdraw and vertex-fetch efficiency of each drawn primitive
//! (meshoptimizer's analyzers, through the `meshopt` crate; overdraw's
//! computed bit for bit by `geom::overdraw`); scene structure.
//!
//! The analyzers run once per distinct drawn primitive on its own index
//! buffer (triangle lists as stored; strips and fans as assembled), and their
//! ratios are averaged over primitives weighted by the triangles each draws
//! (its triangles times its instances).

use super::{CheckDef, Comparison, Family, LOC, LOC_TOTAL, Needs};
use super::{CheckOutput, Ctx, Obj, count, measured, over, short, thousands};
use crate::asset::scene::Primitive;
use crate::profile::Param;
use crate::report::Severity;
use gltf::json::validation::Checked;

const CATEGORY: &str = "performance";

/// The PERF family: its checks in ID order.
pub static FAMILY: Family = Family {
    prefix: "PERF",
    category: CATEGORY,
    label: "Performance",
    blurb: "Triangles, vertices, draw calls, GPU efficiency and scene structure",
    checks: &[TRIANGLE_COUNT, VERTEX_COUNT, DRAW_CALLS, VERTEX_CACHE, OVERDRAW, VERTEX_FETCH, SCENE_STRUCTURE],
};

fn budget_msg(noun: (&str, &str), what: &str, value: u64, max: f64, profile: &str) -> String {
    let verdict = if value as f64 > max { "over" } else { "within" };
    format!("{} {what}, {verdict} the budget of {} ({profile})", count(value, noun.0, noun.1), thousands(max as u64))
}

/// Budget: Triangles drawn.
pub const MAX_TRIS: Param =
    Param { key: "max_tris", unit: "triangles", doc: "Triangles drawn", overridable: true, integer: true };

/// PERF-001: its definition.
pub const TRIANGLE_COUNT: CheckDef = CheckDef {
    id: "PERF-001",
    name: "Triangle count",
    category: CATEGORY,
    severity: Severity::Error,
    params: &[&MAX_TRIS],
    what: "Counts the triangles drawn by the default scene, once per drawn instance (a mesh used by three nodes counts three times; EXT_mesh_gpu_instancing counts every instance). Triangle strips and fans count n-2, triangle lists n/3; points and lines draw none.",
    why: "Triangle throughput bounds frame rate on mobile and web GPUs; the budget is the profile's platform guidance.",
    fix: "Decimate (e.g. gltf-transform simplify, Blender's Decimate), bake detail into normal maps, or use levels of detail.",
    measured: &[("triangles", "triangles drawn, per instance"), ("instances", "drawn primitive instances")],
    threshold: &[("max_tris", "budget")],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: Some(("triangles", "max_tris")),
    run: triangle_count,
};

/// PERF-001.
pub fn triangle_count(cx: &Ctx<'_>) -> CheckOutput {
    let tris = cx.asset.scene.triangles();
    let max = cx.profile.get(&MAX_TRIS);
    measured(
        Obj::new().int("triangles", tris).int("instances", cx.asset.scene.instances.len() as u64),
        Obj::new().param(cx.profile, &MAX_TRIS),
        over(tris as f64, max),
        budget_msg(("triangle", "triangles"), "drawn", tris, max, &cx.profile.name),
    )
}

/// Budget: Vertices drawn.
pub const MAX_VERTS: Param =
    Param { key: "max_verts", unit: "vertices", doc: "Vertices drawn", overridable: true, integer: true };

/// PERF-002: its definition.
pub const VERTEX_COUNT: CheckDef = CheckDef {
    id: "PERF-002",
    name: "Vertex count",
    category: CATEGORY,
    severity: Severity::Error,
    params: &[&MAX_VERTS],
    what: "Counts the vertices (POSITION elements, or decoded Draco points) of every primitive drawn, once per drawn instance.",
    why: "Vertex processing and memory scale with vertices, which UV seams and hard edges multiply beyond the triangle count.",
    fix: "Decimate, weld needless splits (gltf-transform weld), or reduce UV seams and hard edges.",
    measured: &[("vertices", "vertices drawn, per instance")],
    threshold: &[("max_verts", "budget")],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: Some(("vertices", "max_verts")),
    run: vertex_count,
};

/// PERF-002.
pub fn vertex_count(cx: &Ctx<'_>) -> CheckOutput {
    let verts = cx.asset.scene.vertices();
    let max = cx.profile.get(&MAX_VERTS);
    measured(
        Obj::new().int("vertices", verts),
        Obj::new().param(cx.profile, &MAX_VERTS),
        over(verts as f64, max),
        budget_msg(("vertex", "vertices"), "drawn", verts, max, &cx.profile.name),
    )
}

/// Budget: Draw-call estimate.
pub const MAX_DRAW_CALLS: Param =
    Param { key: "max_draw_calls", unit: "draw calls", doc: "Draw-call estimate", overridable: true, integer: true };

/// PERF-003: its definition.
pub const DRAW_CALLS: CheckDef = CheckDef {
    id: "PERF-003",
    name: "Draw-call estimate",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_DRAW_CALLS],
    what: "Estimates draw calls as one per primitive per node that draws it; a GPU-instanced node (EXT_mesh_gpu_instancing) costs one per primitive whatever its instance count.",
    why: "Draw calls cost CPU time per frame; web and mobile engines stall long before the GPU is busy.",
    fix: "Join meshes that share a material, merge materials, or use EXT_mesh_gpu_instancing for repeated objects.",
    measured: &[
        ("draw_calls", "estimated draw calls"),
        ("primitives", "distinct primitives drawn"),
        ("gpu_instanced_nodes", "nodes drawn with EXT_mesh_gpu_instancing"),
    ],
    threshold: &[("max_draw_calls", "budget")],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: Some(("draw_calls", "max_draw_calls")),
    run: draw_calls,
};

/// PERF-003.
pub fn draw_calls(cx: &Ctx<'_>) -> CheckOutput {
    let scene = &cx.asset.scene;
    let calls = scene.draw_calls;
    let max = cx.profile.get(&MAX_DRAW_CALLS);
    let mut gpu_nodes: Vec<usize> =
        scene.instances.iter().filter(|i| i.gpu_instance.is_some()).map(|i| i.node).collect();
    gpu_nodes.dedup();
    measured(
        Obj::new()
            .int("draw_calls", calls)
            .int("primitives", scene.primitives.len() as u64)
            .int("gpu_instanced_nodes", gpu_nodes.len() as u64),
        Obj::new().param(cx.profile, &MAX_DRAW_CALLS),
        over(calls as f64, max),
        budget_msg(("draw call", "draw calls"), "estimated", calls, max, &cx.profile.name),
    )
}

const NO_TRIANGLE_PRIMITIVES: &str = "the default scene draws no triangles";

/// The drawn primitives with triangles, each once, with its instance count.
fn drawn<'a>(cx: &Ctx<'a>) -> Vec<(&'a Primitive, u64)> {
    let scene = &cx.asset.scene;
    let mut instances = vec![0u64; scene.primitives.len()];
    scene.instances.iter().for_each(|i| instances[i.primitive] += 1);
    scene.primitives.iter().zip(instances).filter(|(p, n)| *n > 0 && !p.triangles.is_empty()).collect()
}

/// A primitive's index buffer as meshoptimizer reads it.
fn indices(p: &Primitive) -> &[u32] {
    bytemuck::cast_slice(&p.triangles)
}

/// Triangle-weighted mean of `f` over primitives weighted by `w`.
fn weighted(items: &[(f64, f64)]) -> f64 {
    let total: f64 = items.iter().map(|x| x.1).sum();
    if total > 0.0 { items.iter().map(|x| x.0 * x.1).sum::<f64>() / total } else { 0.0 }
}

/// FIFO cache size of the vertex-cache model (meshoptimizer's demo and
/// `optimizeVertexCacheFifo` use 16; no warp or primitive-group limits).
pub const VERTEX_CACHE_SIZE: u32 = 16;

/// Budget: Largest average cache miss ratio (ACMR).
pub const MAX_ACMR: Param = Param {
    key: "max_acmr",
    unit: "vertices per triangle",
    doc: "Largest average cache miss ratio (ACMR, 16-entry FIFO)",
    overridable: false,
    integer: false,
};

/// PERF-004: its definition.
pub const VERTEX_CACHE: CheckDef = CheckDef {
    id: "PERF-004",
    name: "Vertex-cache efficiency (ACMR, ATVR)",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_ACMR],
    what: "Runs meshoptimizer's vertex-cache analyzer (meshopt_analyzeVertexCache, a 16-entry FIFO, no warp or primitive-group limit) on each drawn primitive's index buffer and averages over primitives weighted by the triangles each draws: ACMR (vertex shader runs per triangle; 0.5 on an ideal grid, 3 at worst) and ATVR (runs per referenced vertex; 1 is ideal). acmr_floor is the ACMR if no vertex ran twice (referenced vertices per triangle), which vertex splits (UV seams, hard edges) can push above max_acmr however the triangles are ordered. Warns when the ACMR is over both max_acmr and acmr_floor.",
    why: "Triangle order decides how often the GPU re-runs the vertex shader for a vertex it has just processed; a badly ordered index buffer can cost up to six times the vertex work of a well-ordered one.",
    fix: "Reorder the indices for the vertex cache: gltfpack, gltf-transform reorder, or meshoptimizer's meshopt_optimizeVertexCache (most exporters and engines' importers do it too).",
    measured: &[
        ("acmr", "average cache miss ratio, transformed vertices per triangle, triangle-weighted"),
        ("atvr", "average transformed vertex ratio, transformed per referenced vertex, triangle-weighted"),
        ("acmr_floor", "the ACMR with every referenced vertex transformed once"),
        ("primitives", "distinct primitives analyzed"),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[("max_acmr", "ACMR above which (and above acmr_floor) the check warns")],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: Some(("acmr", "max_acmr")),
    run: vertex_cache,
};

/// PERF-004.
pub fn vertex_cache(cx: &Ctx<'_>) -> CheckOutput {
    let prims = drawn(cx);
    if prims.is_empty() {
        return CheckOutput::Skipped(NO_TRIANGLE_PRIMITIVES.into());
    }
    let max = cx.profile.get(&MAX_ACMR);
    let (mut transformed, mut refs, mut tris) = (0.0, 0.0, 0.0);
    let mut atvr = Vec::with_capacity(prims.len());
    let mut worse = Vec::new();
    for &(p, n) in &prims {
        let stats = meshopt::analyze_vertex_cache(indices(p), p.positions.len(), VERTEX_CACHE_SIZE, 0, 0);
        let (t, r, k) = (stats.vertices_transformed as f64, p.referenced_vertices() as f64, p.triangles.len() as f64);
        transformed += t * n as f64;
        refs += r * n as f64;
        tris += k * n as f64;
        atvr.push((t / r, k * n as f64));
        if t > r && t / k > max {
            worse.push(p.pointer());
        }
    }
    let (acmr, floor) = (transformed / tris, refs / tris);
    let outcome = if transformed > refs && acmr > max { Comparison::Breach } else { Comparison::Within };
    let atvr = weighted(&atvr);
    measured(
        Obj::new()
            .num("acmr", acmr)
            .num("atvr", atvr)
            .num("acmr_floor", floor)
            .int("primitives", prims.len() as u64)
            .locations(&worse),
        Obj::new().param(cx.profile, &MAX_ACMR),
        outcome,
        format!(
            "ACMR {} (floor {}, limit {}), ATVR {} over {}",
            short(acmr),
            short(floor),
            short(max),
            short(atvr),
            count(prims.len() as u64, "primitive", "primitives")
        ),
    )
}

/// PERF-005: its definition.
pub const OVERDRAW: CheckDef = CheckDef {
    id: "PERF-005",
    name: "Overdraw",
    category: CATEGORY,
    severity: Severity::Info,
    params: &[],
    what: "Computes what meshoptimizer's overdraw analyzer (meshopt_analyzeOverdraw) computes, bit for bit (meshcheck's own rasterizer, tested against it), on each drawn primitive in its own space: it rasterizes the triangles in index order into 256 x 256 depth-tested views along the three axes (front and back faces apart) and divides the pixels shaded by the pixels covered (1 is ideal: every pixel shaded once). Averaged over primitives weighted by the triangles each draws. Triangles with a non-finite corner are left out. To bound its cost, when the distinct drawn primitives hold more than 131,072 triangles every primitive is analyzed on every k-th triangle in index order (k = ceil(triangles / 131,072), reported as sample_stride): an estimate. Informational: no published budget exists.",
    why: "Triangles drawn back to front shade the same pixel again and again; ordering them so outer ones come first lets early depth testing reject the rest, which matters for heavy pixel shaders on fill-rate-bound mobile GPUs.",
    fix: "Reorder triangles for overdraw after the vertex-cache pass: meshopt_optimizeOverdraw (gltfpack does both).",
    measured: &[
        ("overdraw", "pixels shaded / pixels covered, triangle-weighted over primitives"),
        ("primitives", "distinct primitives analyzed"),
        ("sample_stride", "1, or k when only every k-th triangle was analyzed (over 131,072 triangles)"),
    ],
    threshold: &[],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: None,
    run: overdraw,
};

/// Most triangles PERF-005 rasterizes per report: the analyzer (meshoptimizer's,
/// or `geom::overdraw` computing the same) rasterizes every triangle three
/// times (about 70 ns a triangle, 70 ms on a 1M-triangle mesh); above this every primitive is analyzed on every k-th
/// triangle in index order, k = ceil(triangles drawn by distinct primitives / cap).
pub const OVERDRAW_MAX_TRIANGLES: u64 = 131_072;

/// meshoptimizer's overdraw ratio for a primitive (`geom::overdraw`, bit
/// for bit `meshopt_analyzeOverdraw`), on every `stride`-th triangle with
/// three finite corners, or `None` when none is left or no pixel is covered.
///
/// Every triangle of a primitive whose positions are all finite is read
/// where it lies: the copy of the triangles kept was the largest array
/// PERF-005 held (12 bytes a triangle), beside UV-002 in a large mesh's
/// first phase.
fn overdraw_of(p: &Primitive, stride: usize) -> Option<f64> {
    let copy: Vec<[u32; 3]>;
    let tris: &[[u32; 3]] = if stride == 1 && p.positions.iter().flatten().all(|c| c.is_finite()) {
        &p.triangles
    } else {
        let finite = |v: u32| p.positions[v as usize].iter().all(|c| c.is_finite());
        copy = p.triangles.iter().step_by(stride).filter(|t| t.iter().all(|&v| finite(v))).copied().collect();
        &copy
    };
    if tris.is_empty() {
        return None;
    }
    let stats = crate::geom::overdraw::analyze(tris, &p.positions);
    (stats.pixels_covered > 0).then_some(stats.overdraw as f64)
}

/// PERF-005.
pub fn overdraw(cx: &Ctx<'_>) -> CheckOutput {
    let prims = drawn(cx);
    let total: u64 = prims.iter().map(|(p, _)| p.triangles.len() as u64).sum();
    let stride = total.div_ceil(OVERDRAW_MAX_TRIANGLES).max(1) as usize;
    let rows: Vec<(f64, f64)> = prims
        .iter()
        .filter_map(|&(p, n)| overdraw_of(p, stride).map(|o| (o, p.triangles.len() as f64 * n as f64)))
        .collect();
    if rows.is_empty() {
        return CheckOutput::Skipped(NO_TRIANGLE_PRIMITIVES.into());
    }
    let o = weighted(&rows);
    let sampled = if stride > 1 { format!(", on every {stride}th triangle") } else { String::new() };
    measured(
        Obj::new().num("overdraw", o).int("primitives", rows.len() as u64).int("sample_stride", stride as u64),
        Obj::new(),
        Comparison::Within,
        format!(
            "overdraw {} (1 is ideal) over {}{sampled}",
            short(o),
            count(rows.len() as u64, "primitive", "primitives")
        ),
    )
}

/// PERF-006: its definition.
pub const VERTEX_FETCH: CheckDef = CheckDef {
    id: "PERF-006",
    name: "Vertex fetch efficiency; unused and duplicate vertices",
    category: CATEGORY,
    severity: Severity::Info,
    params: &[],
    what: "Runs meshoptimizer's vertex-fetch analyzer (meshopt_analyzeVertexFetch: 64-byte lines in a direct-mapped cache) on each drawn primitive, with the vertex size its accessors declare (every attribute's element size rounded up to 4 bytes, at most 256), and reports overfetch (bytes fetched / vertex-buffer bytes; 1 is ideal), triangle-weighted over primitives. Counts, over the distinct drawn primitives, unused vertices (referenced by none of the primitive's triangles) and duplicate vertices (bit-identical to an earlier vertex of the same primitive in every attribute meshcheck decodes: POSITION, NORMAL, TANGENT, TEXCOORD_n and COLOR_0; meshopt_generateVertexRemapMulti). Informational: no published budget exists.",
    why: "Vertex buffers in an order unrelated to the index buffer waste memory bandwidth; unused and duplicate vertices are uploaded and stored for nothing.",
    fix: "Reorder the vertex buffer in index order (meshopt_optimizeVertexFetch, gltfpack, gltf-transform reorder) and drop unused and duplicate vertices (gltf-transform weld and prune; meshopt_generateVertexRemap).",
    measured: &[
        ("overfetch", "bytes fetched / vertex-buffer bytes, triangle-weighted over primitives"),
        ("unused_vertices", "vertices no triangle of their primitive references, over distinct drawn primitives"),
        ("duplicate_vertices", "vertices identical in every decoded attribute to an earlier one of their primitive"),
        ("vertices", "vertices of the distinct drawn primitives"),
        ("primitives", "distinct primitives analyzed"),
    ],
    threshold: &[],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: None,
    run: vertex_fetch,
};

/// Bytes per vertex a primitive's accessors declare: every attribute's
/// element size rounded up to 4 bytes (glTF aligns vertex attributes to 4),
/// attributes whose accessor cannot be read left out; at least 12 (a
/// position), at most 256 (meshoptimizer's limit).
pub fn vertex_size(root: &gltf::json::Root, p: &Primitive) -> usize {
    use gltf::json::accessor::{ComponentType, Type};
    let Some(json) = root.meshes.get(p.mesh).and_then(|m| m.primitives.get(p.index)) else {
        return 12;
    };
    let mut size = 0usize;
    for acc in json.attributes.values() {
        let Some(a) = root.accessors.get(acc.value()) else { continue };
        let n: usize = match a.type_ {
            Checked::Valid(Type::Scalar) => 1,
            Checked::Valid(Type::Vec2) => 2,
            Checked::Valid(Type::Vec3) => 3,
            Checked::Valid(Type::Vec4) => 4,
            _ => continue,
        };
        let c = match &a.component_type {
            Checked::Valid(c) => match c.0 {
                ComponentType::I8 | ComponentType::U8 => 1,
                ComponentType::I16 | ComponentType::U16 => 2,
                _ => 4,
            },
            Checked::Invalid => continue,
        };
        size += (n * c).div_ceil(4) * 4;
    }
    size.clamp(12, 256)
}

/// Unique vertices of a primitive over its decoded attributes (bitwise):
/// what meshopt_generateVertexRemapMulti counts with no index buffer.
fn unique_vertices(p: &Primitive) -> usize {
    use crate::geom::dedup::{Stream, distinct_vertices};
    let n = p.positions.len();
    let mut streams = vec![Stream::of(&p.positions)];
    if let Some(v) = p.normals.as_ref().filter(|v| v.len() == n) {
        streams.push(Stream::of(v));
    }
    if let Some(v) = p.tangents.as_ref().filter(|v| v.len() == n) {
        streams.push(Stream::of(v));
    }
    for v in p.uvs.iter().flatten().filter(|v| v.len() == n) {
        streams.push(Stream::of(v));
    }
    if let Some(v) = p.colors.as_ref().filter(|v| v.len() == n) {
        streams.push(Stream::of(v));
    }
    distinct_vertices(n, &streams)
}

/// PERF-006.
pub fn vertex_fetch(cx: &Ctx<'_>) -> CheckOutput {
    let prims = drawn(cx);
    if prims.is_empty() {
        return CheckOutput::Skipped(NO_TRIANGLE_PRIMITIVES.into());
    }
    let (mut unused, mut dups, mut verts) = (0u64, 0u64, 0u64);
    let mut rows = Vec::with_capacity(prims.len());
    for &(p, n) in &prims {
        let size = vertex_size(&cx.asset.root, p);
        let stats = meshopt::analyze_vertex_fetch(indices(p), p.positions.len(), size);
        rows.push((stats.overfetch as f64, p.triangles.len() as f64 * n as f64));
        unused += p.vertex_count() - p.referenced_vertices();
        dups += (p.positions.len() - unique_vertices(p)) as u64;
        verts += p.vertex_count();
    }
    let overfetch = weighted(&rows);
    measured(
        Obj::new()
            .num("overfetch", overfetch)
            .int("unused_vertices", unused)
            .int("duplicate_vertices", dups)
            .int("vertices", verts)
            .int("primitives", prims.len() as u64),
        Obj::new(),
        Comparison::Within,
        format!(
            "overfetch {} (1 is ideal); {} unused and {} duplicate of {}",
            short(overfetch),
            thousands(unused),
            thousands(dups),
            count(verts, "vertex", "vertices")
        ),
    )
}

/// PERF-007: its definition.
pub const SCENE_STRUCTURE: CheckDef = CheckDef {
    id: "PERF-007",
    name: "Scene structure",
    category: CATEGORY,
    severity: Severity::Info,
    params: &[],
    what: "Counts the document's nodes, meshes and mesh primitives (the lengths of its JSON arrays, as the Khronos asset auditor counts them), the nodes reached from the default scene, and the depth of its hierarchy (a root node is at depth 1; 0 when the scene has no nodes). Informational: no published budget exists for these.",
    why: "Every node is a transform the engine updates and every primitive a draw call; deep or sprawling hierarchies (CAD exports, one node per bolt) cost CPU time per frame and make the asset hard to edit.",
    fix: "Flatten static hierarchies and join meshes that share a material (gltf-transform flatten and join; gltfpack merges by default).",
    measured: &[
        ("nodes", "entries in the document's nodes array"),
        ("meshes", "entries in the meshes array"),
        ("primitives", "mesh primitives over all meshes"),
        ("scene_nodes", "nodes reached from the default scene"),
        ("max_depth", "longest root-to-node chain in the default scene, roots at depth 1"),
    ],
    threshold: &[],
    needs: Needs { geometry: false, textures: false, validator: false, renderer: false },
    gauge: None,
    run: scene_structure,
};

/// PERF-007.
pub fn scene_structure(cx: &Ctx<'_>) -> CheckOutput {
    let root = &cx.asset.root;
    let scene = &cx.asset.scene;
    let prims: u64 = root.meshes.iter().map(|m| m.primitives.len() as u64).sum();
    // `scene.nodes` lists parents before their children (depth first).
    let mut depth: std::collections::HashMap<usize, u64> = std::collections::HashMap::with_capacity(scene.nodes.len());
    let mut max_depth = 0;
    for &n in &scene.nodes {
        let d = match scene.parents.get(&n) {
            Some(Some(p)) => depth.get(p).copied().unwrap_or(0) + 1,
            _ => 1,
        };
        depth.insert(n, d);
        max_depth = max_depth.max(d);
    }
    measured(
        Obj::new()
            .int("nodes", root.nodes.len() as u64)
            .int("meshes", root.meshes.len() as u64)
            .int("primitives", prims)
            .int("scene_nodes", scene.nodes.len() as u64)
            .int("max_depth", max_depth),
        Obj::new(),
        Comparison::Within,
        format!(
            "{}, {}, {}; the default scene reaches {} to a depth of {max_depth}",
            count(root.nodes.len() as u64, "node", "nodes"),
            count(root.meshes.len() as u64, "mesh", "meshes"),
            count(prims, "primitive", "primitives"),
            count(scene.nodes.len() as u64, "node", "nodes")
        ),
    )
}
