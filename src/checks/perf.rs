//! PERF: triangle, vertex and draw-call counts of the default scene as drawn.

use super::{CheckDef, Family, Needs};
use super::{CheckOutput, Ctx, Obj, count, measured, over, thousands};
use crate::profile::Param;
use crate::report::Severity;

const CATEGORY: &str = "performance";

/// The PERF family: its checks in ID order.
pub static FAMILY: Family = Family {
    prefix: "PERF",
    category: CATEGORY,
    label: "Performance",
    blurb: "Triangles, vertices and draw calls against the budget",
    checks: &[TRIANGLE_COUNT, VERTEX_COUNT, DRAW_CALLS],
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
