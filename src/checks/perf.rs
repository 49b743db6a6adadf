//! PERF: triangle, vertex and draw-call counts of the default scene as drawn.

use super::{CheckOutput, Ctx, Obj, count, measured, over, thousands};

fn budget_msg(noun: (&str, &str), what: &str, value: u64, max: f64, profile: &str) -> String {
    let verdict = if value as f64 > max { "over" } else { "within" };
    format!("{} {what}, {verdict} the budget of {} ({profile})", count(value, noun.0, noun.1), thousands(max as u64))
}

/// PERF-001.
pub fn triangle_count(cx: &Ctx<'_>) -> CheckOutput {
    let tris = cx.asset.scene.triangles();
    let max = cx.profile.get("max_tris");
    measured(
        Obj::new().int("triangles", tris).int("instances", cx.asset.scene.instances.len() as u64),
        Obj::new().param(cx.profile, "max_tris"),
        over(tris as f64, max),
        budget_msg(("triangle", "triangles"), "drawn", tris, max, &cx.profile.name),
    )
}

/// PERF-002.
pub fn vertex_count(cx: &Ctx<'_>) -> CheckOutput {
    let verts = cx.asset.scene.vertices();
    let max = cx.profile.get("max_verts");
    measured(
        Obj::new().int("vertices", verts),
        Obj::new().param(cx.profile, "max_verts"),
        over(verts as f64, max),
        budget_msg(("vertex", "vertices"), "drawn", verts, max, &cx.profile.name),
    )
}

/// PERF-003.
pub fn draw_calls(cx: &Ctx<'_>) -> CheckOutput {
    let scene = &cx.asset.scene;
    let calls = scene.draw_calls;
    let max = cx.profile.get("max_draw_calls");
    let mut gpu_nodes: Vec<usize> =
        scene.instances.iter().filter(|i| i.gpu_instance.is_some()).map(|i| i.node).collect();
    gpu_nodes.dedup();
    measured(
        Obj::new()
            .int("draw_calls", calls)
            .int("primitives", scene.primitives.len() as u64)
            .int("gpu_instanced_nodes", gpu_nodes.len() as u64),
        Obj::new().param(cx.profile, "max_draw_calls"),
        over(calls as f64, max),
        budget_msg(("draw call", "draw calls"), "estimated", calls, max, &cx.profile.name),
    )
}
