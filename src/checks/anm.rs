//! ANM: skins (weights per vertex, joints per skin), animation budgets
//! (channels, keyframes, duration, channels that never change) and morph
//! targets (per mesh, and the memory their accessors take).
//!
//! These measure the whole document, not only the default scene: a file
//! ships every skin, animation and morph target it holds, and engines
//! upload them all. The figures that need the buffers (weights, keyframe
//! times and values) are read once at load ([`crate::asset::anim`]); what
//! could not be read is left out and listed in `measured.notes`.

use super::{CheckDef, Family, LOC, LOC_TOTAL, Needs};
use super::{CheckOutput, Comparison, Ctx, MAX_LOCATIONS, Obj, bytes_h, count, measured, short, thousands};
use crate::asset::Note;
use crate::asset::anim::STATIC_TOLERANCE;
use crate::profile::Param;
use crate::report::Severity;
use serde_json::Value;
use std::collections::BTreeSet;

const CATEGORY: &str = "animation";

/// The ANM family: its checks in ID order.
pub static FAMILY: Family = Family {
    prefix: "ANM",
    category: CATEGORY,
    label: "Animation",
    blurb: "Skin influences and joints, animation keyframes, morph targets",
    checks: &[SKIN_INFLUENCES, ANIMATION_BUDGET, MORPH_TARGETS],
};

const NOTES: (&str, &str) = ("notes", "what could not be read and was left out (at most 100)");

/// The loader's notes about what this check reads (JSON pointers under `prefix`).
fn notes_under(cx: &Ctx<'_>, prefix: &str) -> Vec<Value> {
    let of = |n: &&Note| n.pointer.starts_with(prefix);
    let mut out: Vec<Value> =
        cx.asset.animation.notes.iter().filter(of).map(|n| Value::String(n.to_string())).collect();
    out.truncate(MAX_LOCATIONS);
    out
}

fn with_notes(obj: Obj, notes: Vec<Value>) -> Obj {
    if notes.is_empty() { obj } else { obj.val("notes", Value::Array(notes)) }
}

/// Budget: Non-zero skin weights per vertex.
pub const MAX_SKIN_INFLUENCES: Param = Param {
    key: "max_skin_influences",
    unit: "weights",
    doc: "Non-zero skin weights (joint influences) per vertex",
    overridable: false,
    integer: true,
};

/// Budget: Joints per skin.
pub const MAX_SKIN_JOINTS: Param =
    Param { key: "max_skin_joints", unit: "joints", doc: "Joints per skin", overridable: false, integer: true };

/// ANM-001: its definition.
pub const SKIN_INFLUENCES: CheckDef = CheckDef {
    id: "ANM-001",
    name: "Skin influences",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_SKIN_INFLUENCES, &MAX_SKIN_JOINTS],
    what: "Reads every mesh primitive's WEIGHTS_n sets (normalised integer weights decoded, sparse accessors applied) and counts each vertex's non-zero weights over all sets; counts the joints of every skin. The whole document is measured, not only the default scene.",
    why: "glTF stores four influences per JOINTS_n/WEIGHTS_n set and lets clients read only the first set: weights beyond four are dropped by three.js and by Scene Viewer (four is its hard limit), and deform the mesh differently from the authoring tool. Joint counts beyond a platform's bone limit fail to load or fall back to slow paths (Unreal's mobile renderer draws at most 75 bones per skeletal mesh).",
    fix: "Limit weights per vertex to four and renormalise (Blender: Weights > Limit Total, then Normalize All), and remove helper bones that deform nothing before export.",
    measured: &[
        ("max_influences", "the most non-zero weights any vertex carries"),
        ("max_joints_per_skin", "joints of the largest skin"),
        ("skins", "skins in the document"),
        ("skinned_primitives", "mesh primitives with WEIGHTS_0 whose weights were read"),
        ("skinned_vertices", "vertices of those primitives"),
        ("vertices_over_budget", "vertices with more non-zero weights than max_skin_influences"),
        LOC,
        LOC_TOTAL,
        NOTES,
    ],
    threshold: &[
        ("max_skin_influences", "most non-zero weights per vertex"),
        ("max_skin_joints", "most joints per skin"),
    ],
    needs: Needs { geometry: false, textures: false, validator: false, renderer: false },
    gauge: Some(("max_influences", "max_skin_influences")),
    run: skin_influences,
};

/// ANM-001.
pub fn skin_influences(cx: &Ctx<'_>) -> CheckOutput {
    let anim = &cx.asset.animation;
    let skins = &cx.asset.root.skins;
    let notes = notes_under(cx, "/meshes/");
    if skins.is_empty() && anim.influences.is_empty() && notes.is_empty() {
        return CheckOutput::Skipped("the document has no skins and no skin weights".into());
    }
    let max_w = cx.profile.get(&MAX_SKIN_INFLUENCES);
    let max_j = cx.profile.get(&MAX_SKIN_JOINTS);
    let budget_w = max_w.max(0.0) as u64;
    let max_influences = anim.influences.iter().map(|i| i.max()).max().unwrap_or(0);
    let max_joints = skins.iter().map(|s| s.joints.len() as u64).max().unwrap_or(0);
    let vertices: u64 = anim.influences.iter().map(|i| i.histogram.iter().sum::<u64>()).sum();
    let over: u64 = anim.influences.iter().map(|i| i.over(budget_w)).sum();
    let mut locations: Vec<String> =
        anim.influences.iter().filter(|i| i.over(budget_w) > 0).map(|i| i.pointer()).collect();
    locations.extend(
        skins.iter().enumerate().filter(|(_, s)| s.joints.len() as f64 > max_j).map(|(k, _)| format!("/skins/{k}")),
    );
    let breach = max_influences as f64 > max_w || max_joints as f64 > max_j;
    let verdict = if breach { "over" } else { "within" };
    let message = format!(
        "at most {} per vertex and {} in the largest of {}, {verdict} the budget of {} weights and {} joints ({})",
        count(max_influences, "weight", "weights"),
        count(max_joints, "joint", "joints"),
        count(skins.len() as u64, "skin", "skins"),
        thousands(budget_w),
        thousands(max_j.max(0.0) as u64),
        cx.profile.name
    );
    measured(
        with_notes(
            Obj::new()
                .int("max_influences", max_influences)
                .int("max_joints_per_skin", max_joints)
                .int("skins", skins.len() as u64)
                .int("skinned_primitives", anim.influences.len() as u64)
                .int("skinned_vertices", vertices)
                .int("vertices_over_budget", over)
                .locations(&locations),
            notes,
        ),
        Obj::new().param(cx.profile, &MAX_SKIN_INFLUENCES).param(cx.profile, &MAX_SKIN_JOINTS),
        if breach { Comparison::Breach } else { Comparison::Within },
        message,
    )
}

/// ANM-002: its definition.
pub const ANIMATION_BUDGET: CheckDef = CheckDef {
    id: "ANM-002",
    name: "Animation budget",
    category: CATEGORY,
    severity: Severity::Info,
    params: &[],
    what: "Counts every animation's channels and samplers, its keyframes (the sum of its samplers' input counts, as glTF-Transform's inspect counts them) and its duration (last keyframe time minus first, over its samplers), and finds channels that never change: every keyframe value within 1e-4 of the first (glTF-Transform resample's default tolerance; cubic-spline tangents within it of zero). Measures; no published budget limits keyframes or duration, so it never fails a file.",
    why: "Keyframes are download size and CPU time every frame; channels that never change (exporters bake one per bone per property) cost both and do nothing.",
    fix: "Resample and prune (gltf-transform resample, then prune; or Blender's export with 'Always Sample Animations' off and 'Optimize Animation Size' on), and drop clips the product does not play.",
    measured: &[
        ("animations", "animations in the document"),
        ("channels", "channels over all animations"),
        ("samplers", "samplers over all animations"),
        ("keyframes", "keyframes: the sum of every readable sampler's input count"),
        ("duration_s", "the longest animation, last keyframe time minus first, in seconds"),
        ("static_channels", "channels whose value never changes"),
        LOC,
        LOC_TOTAL,
        NOTES,
    ],
    threshold: &[],
    needs: Needs { geometry: false, textures: false, validator: false, renderer: false },
    gauge: None,
    run: animation_budget,
};

/// ANM-002.
pub fn animation_budget(cx: &Ctx<'_>) -> CheckOutput {
    let clips = &cx.asset.animation.clips;
    if clips.is_empty() {
        return CheckOutput::Skipped("the document has no animations".into());
    }
    let channels: u64 = clips.iter().map(|c| c.channels).sum();
    let samplers: u64 = clips.iter().map(|c| c.samplers).sum();
    let keyframes: u64 = clips.iter().map(|c| c.keyframes).sum();
    let duration = clips.iter().map(|c| c.duration()).fold(0.0, f64::max);
    let locations: Vec<String> = clips
        .iter()
        .flat_map(|c| c.static_channels.iter().map(move |ch| format!("/animations/{}/channels/{ch}", c.index)))
        .collect();
    let message = format!(
        "{} with {}, {} and {} s at the longest; {} of them never change (within {})",
        count(clips.len() as u64, "animation", "animations"),
        count(channels, "channel", "channels"),
        count(keyframes, "keyframe", "keyframes"),
        short(duration),
        thousands(locations.len() as u64),
        STATIC_TOLERANCE
    );
    measured(
        with_notes(
            Obj::new()
                .int("animations", clips.len() as u64)
                .int("channels", channels)
                .int("samplers", samplers)
                .int("keyframes", keyframes)
                .num("duration_s", duration)
                .int("static_channels", locations.len() as u64)
                .locations(&locations),
            notes_under(cx, "/animations/"),
        ),
        Obj::new(),
        Comparison::Within,
        message,
    )
}

/// Budget: Morph targets per mesh.
pub const MAX_MORPH_TARGETS: Param = Param {
    key: "max_morph_targets",
    unit: "targets",
    doc: "Morph targets per mesh",
    overridable: false,
    integer: true,
};

/// ANM-003: its definition.
pub const MORPH_TARGETS: CheckDef = CheckDef {
    id: "ANM-003",
    name: "Morph targets",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_MORPH_TARGETS],
    what: "Counts each mesh's morph targets (the most of any of its primitives) and the bytes their POSITION, NORMAL and TANGENT accessors hold once decoded (count x components x component size, each accessor once, sparse ones at their full size). The whole document is measured, not only the default scene.",
    why: "Each target is another copy of the vertex attributes it moves, in memory and, while it is active, in vertex work; clients need only support eight morphed attributes (glTF 2.0, 3.7.2.2) and many blend only a few targets at once.",
    fix: "Remove targets the product never drives, split rarely used shapes into separate meshes, or bake shapes that never animate into the base mesh; drop morphed NORMAL/TANGENT where shading allows.",
    measured: &[
        ("max_targets", "the most morph targets of any mesh"),
        ("morph_bytes", "bytes of every target accessor, decoded, each counted once"),
        ("meshes_with_targets", "meshes that have morph targets"),
        ("target_accessors", "distinct accessors the targets use"),
        LOC,
        LOC_TOTAL,
        NOTES,
    ],
    threshold: &[("max_morph_targets", "most morph targets per mesh")],
    needs: Needs { geometry: false, textures: false, validator: false, renderer: false },
    gauge: Some(("max_targets", "max_morph_targets")),
    run: morph_targets,
};

/// Bytes an accessor holds once decoded: count x components x component size
/// (`None` when it does not exist or its type is invalid).
fn accessor_bytes(root: &gltf::json::Root, index: usize) -> Option<u64> {
    use gltf::json::accessor::{ComponentType, Type};
    use gltf::json::validation::Checked::Valid;
    let acc = root.accessors.get(index)?;
    let components: u64 = match acc.type_ {
        Valid(Type::Scalar) => 1,
        Valid(Type::Vec2) => 2,
        Valid(Type::Vec3) => 3,
        Valid(Type::Vec4) | Valid(Type::Mat2) => 4,
        Valid(Type::Mat3) => 9,
        Valid(Type::Mat4) => 16,
        _ => return None,
    };
    let size: u64 = match acc.component_type {
        Valid(gltf::json::accessor::GenericComponentType(c)) => match c {
            ComponentType::I8 | ComponentType::U8 => 1,
            ComponentType::I16 | ComponentType::U16 => 2,
            ComponentType::U32 | ComponentType::F32 => 4,
        },
        _ => return None,
    };
    Some(acc.count.0.saturating_mul(components).saturating_mul(size))
}

/// ANM-003.
pub fn morph_targets(cx: &Ctx<'_>) -> CheckOutput {
    let root = &cx.asset.root;
    let max = cx.profile.get(&MAX_MORPH_TARGETS);
    let mut accessors = BTreeSet::new();
    let mut notes = Vec::new();
    let mut with_targets = 0u64;
    let mut max_targets = 0u64;
    let mut locations = Vec::new();
    for (m, mesh) in root.meshes.iter().enumerate() {
        let mut targets = 0u64;
        for (p, prim) in mesh.primitives.iter().enumerate() {
            let Some(list) = &prim.targets else { continue };
            targets = targets.max(list.len() as u64);
            for (t, target) in list.iter().enumerate() {
                for acc in [target.positions, target.normals, target.tangents].into_iter().flatten() {
                    let a = acc.value();
                    if a >= root.accessors.len() {
                        notes.push(Value::String(format!(
                            "/meshes/{m}/primitives/{p}/targets/{t}: names accessor {a}, which does not exist; left out"
                        )));
                    } else {
                        accessors.insert(a);
                    }
                }
            }
        }
        if targets > 0 {
            with_targets += 1;
            if targets as f64 > max {
                locations.push(format!("/meshes/{m}"));
            }
        }
        max_targets = max_targets.max(targets);
    }
    if with_targets == 0 {
        return CheckOutput::Skipped("no mesh has morph targets".into());
    }
    let bytes: u64 = accessors.iter().filter_map(|&a| accessor_bytes(root, a)).fold(0, u64::saturating_add);
    notes.truncate(MAX_LOCATIONS);
    let breach = max_targets as f64 > max;
    let message = format!(
        "at most {} per mesh over {} with targets, {} in all; {} the budget of {} ({})",
        count(max_targets, "morph target", "morph targets"),
        count(with_targets, "mesh", "meshes"),
        bytes_h(bytes),
        if breach { "over" } else { "within" },
        thousands(max.max(0.0) as u64),
        cx.profile.name
    );
    measured(
        with_notes(
            Obj::new()
                .int("max_targets", max_targets)
                .int("morph_bytes", bytes)
                .int("meshes_with_targets", with_targets)
                .int("target_accessors", accessors.len() as u64)
                .locations(&locations),
            notes,
        ),
        Obj::new().param(cx.profile, &MAX_MORPH_TARGETS),
        if breach { Comparison::Breach } else { Comparison::Within },
        message,
    )
}
