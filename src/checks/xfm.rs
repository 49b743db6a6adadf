//! XFM: real-world scale, origin placement and node scale.

use super::{CheckDef, Family, LOC, LOC_TOTAL, Needs};
use super::{CheckOutput, Comparison, Ctx, Obj, count, measured, short};
use crate::asset::scene::local_matrix;
use crate::geom::mat4::{self, Mat4};
use crate::profile::Param;
use crate::report::Severity;
use std::collections::BTreeSet;

const CATEGORY: &str = "transform";

/// The XFM family: its checks in ID order.
pub static FAMILY: Family = Family {
    prefix: "XFM",
    category: CATEGORY,
    label: "Transforms",
    blurb: "Real-world scale, pivot placement, node scale",
    checks: &[REAL_WORLD_SCALE, ORIGIN_PLACEMENT, NODE_SCALE],
};

const NO_GEOMETRY: &str = "the default scene draws no geometry";

/// Budget: Smallest plausible largest side.
pub const MIN_EXTENT: Param =
    Param { key: "min_extent", unit: "m", doc: "Smallest plausible largest side", overridable: true, integer: false };

/// Budget: Largest plausible largest side.
pub const MAX_EXTENT: Param =
    Param { key: "max_extent", unit: "m", doc: "Largest plausible largest side", overridable: true, integer: false };

/// XFM-001: its definition.
pub const REAL_WORLD_SCALE: CheckDef = CheckDef {
    id: "XFM-001",
    name: "Real-world scale",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MIN_EXTENT, &MAX_EXTENT],
    what: "Computes the world-space bounding box of everything the default scene draws (real vertex positions through every node transform and GPU instance; morph targets at the mesh's default weights; skinned meshes in their default pose) and compares its largest side, in metres, with min_extent and max_extent.",
    why: "glTF units are metres; an asset exported in centimetres is 100 times too large in AR and in scenes that mix assets.",
    fix: "Apply the unit conversion at export (Blender: Unit Scale; 3ds Max/Maya: export in metres) or scale the root node.",
    measured: &[
        ("largest_extent_m", "the largest side of the world bounding box, in metres"),
        ("extent_m", "the box's sides [x, y, z] in metres"),
        ("bounds_min", "minimum corner [x, y, z]"),
        ("bounds_max", "maximum corner [x, y, z]"),
    ],
    threshold: &[
        ("min_extent", "smallest plausible largest side, metres"),
        ("max_extent", "largest plausible largest side, metres"),
    ],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: None,
    run: real_world_scale,
};

/// XFM-001.
pub fn real_world_scale(cx: &Ctx<'_>) -> CheckOutput {
    let b = cx.asset.scene.bounds;
    if b.is_empty() {
        return CheckOutput::Skipped(NO_GEOMETRY.into());
    }
    let size = b.size();
    let largest = size.iter().copied().fold(0.0, f64::max);
    let (min, max) = (cx.profile.get(&MIN_EXTENT), cx.profile.get(&MAX_EXTENT));
    let outcome = if largest < min || largest > max { Comparison::Breach } else { Comparison::Within };
    let message = match outcome {
        Comparison::Within => format!("largest side {} m, within {}..{} m", short(largest), short(min), short(max)),
        _ if largest < min => {
            format!("largest side {} m is under {} m: the asset may be in the wrong units", short(largest), short(min))
        }
        _ => format!(
            "largest side {} m is over {} m: the asset may be in centimetres or millimetres",
            short(largest),
            short(max)
        ),
    };
    measured(
        Obj::new()
            .num("largest_extent_m", largest)
            .nums("extent_m", &size)
            .nums("bounds_min", &b.min)
            .nums("bounds_max", &b.max),
        Obj::new().param(cx.profile, &MIN_EXTENT).param(cx.profile, &MAX_EXTENT),
        outcome,
        message,
    )
}

fn dist(a: [f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

/// Budget: Origin distance from bottom centre or centre.
pub const MAX_ORIGIN_OFFSET_PCT: Param = Param {
    key: "max_origin_offset_pct",
    unit: "% of diagonal",
    doc: "Origin distance from bottom centre or centre",
    overridable: false,
    integer: false,
};

/// XFM-002: its definition.
pub const ORIGIN_PLACEMENT: CheckDef = CheckDef {
    id: "XFM-002",
    name: "Origin / pivot placement",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_ORIGIN_OFFSET_PCT],
    what: "Measures the distance from the scene origin to the world bounding box's bottom centre and to its centre, each as a percentage of the box's diagonal; passes when either is within max_origin_offset_pct.",
    why: "Viewers and AR placement put the origin on the floor or at the centre; an off-origin asset floats, sinks or orbits off-screen.",
    fix: "Move the geometry so the origin sits at its bottom centre (products on a floor) or its centre, and apply the transform before export.",
    measured: &[
        ("bottom_center_offset_pct", "distance origin to bottom centre, % of the diagonal"),
        ("center_offset_pct", "distance origin to centre, % of the diagonal"),
        ("bottom_center", "bottom centre [x, y, z]"),
        ("center", "centre [x, y, z]"),
        ("diagonal_m", "the bounding box diagonal in metres"),
    ],
    threshold: &[("max_origin_offset_pct", "largest allowed offset, % of the diagonal")],
    needs: Needs { geometry: true, textures: false, validator: false, renderer: false },
    gauge: None,
    run: origin_placement,
};

/// XFM-002.
pub fn origin_placement(cx: &Ctx<'_>) -> CheckOutput {
    let b = cx.asset.scene.bounds;
    if b.is_empty() {
        return CheckOutput::Skipped(NO_GEOMETRY.into());
    }
    let diag = b.diagonal();
    if diag <= 0.0 {
        return CheckOutput::Skipped("the scene's bounding box has no extent".into());
    }
    let c = b.center();
    let bottom = [c[0], b.min[1], c[2]];
    let bottom_pct = dist(bottom) / diag * 100.0;
    let center_pct = dist(c) / diag * 100.0;
    let max = cx.profile.get(&MAX_ORIGIN_OFFSET_PCT);
    let best = bottom_pct.min(center_pct);
    let outcome = if best > max { Comparison::Breach } else { Comparison::Within };
    let message = if outcome == Comparison::Within {
        let at = if bottom_pct <= center_pct { "bottom centre" } else { "centre" };
        format!("origin is {}% of the diagonal from the {at}, within {}%", short(best), short(max))
    } else {
        format!(
            "origin is {}% of the diagonal from the bottom centre and {}% from the centre, over {}%",
            short(bottom_pct),
            short(center_pct),
            short(max)
        )
    };
    measured(
        Obj::new()
            .num("bottom_center_offset_pct", bottom_pct)
            .num("center_offset_pct", center_pct)
            .nums("bottom_center", &bottom)
            .nums("center", &c)
            .num("diagonal_m", diag),
        Obj::new().param(cx.profile, &MAX_ORIGIN_OFFSET_PCT),
        outcome,
        message,
    )
}

/// What is wrong with one transform's scale, if anything.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ScaleFinding {
    /// Largest over smallest axis (infinite for a zero axis).
    pub ratio: f64,
    /// The transform mirrors (negative determinant).
    pub negative: bool,
    /// An axis has zero scale.
    pub zero: bool,
}

/// Scale facts of a transform's upper 3x3.
pub fn scale_finding(m: &Mat4) -> ScaleFinding {
    let s = mat4::column_scales(m);
    let hi = s.iter().copied().fold(0.0, f64::max);
    let lo = s.iter().copied().fold(f64::INFINITY, f64::min);
    let zero = lo <= 1e-12 * hi.max(1.0) || hi == 0.0;
    ScaleFinding { ratio: if zero { f64::INFINITY } else { hi / lo }, negative: !zero && mat4::det3(m) < 0.0, zero }
}

/// Budget: Largest/smallest node scale axis.
pub const MAX_SCALE_RATIO: Param = Param {
    key: "max_scale_ratio",
    unit: "ratio",
    doc: "Largest/smallest node scale axis",
    overridable: false,
    integer: false,
};

/// XFM-003: its definition.
pub const NODE_SCALE: CheckDef = CheckDef {
    id: "XFM-003",
    name: "Non-uniform node scale",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_SCALE_RATIO],
    what: "For every node on a path from a scene root to a mesh, and every EXT_mesh_gpu_instancing instance, takes the local transform's scale (the matrix's column lengths) and flags a ratio of largest to smallest axis over max_scale_ratio, a mirroring (negative determinant) transform, or a zero scale. A scale such as (-1, -1, 1) is a rotation, not a mirror, and is not flagged as negative.",
    why: "Non-uniform scale shears normals and breaks physics and instancing; a mirroring scale flips triangle winding, so back-face culling hides the wrong side in viewers that ignore the determinant.",
    fix: "Apply scale to the mesh data (Blender: Apply > Scale) and keep node scales uniform and positive.",
    measured: &[
        ("nodes_checked", "nodes on paths to meshes"),
        ("instances_checked", "GPU instances checked"),
        ("non_uniform", "nodes and instances whose scale ratio exceeds the threshold"),
        ("negative_scale", "nodes and instances whose transform mirrors"),
        ("zero_scale", "nodes and instances with a zero scale axis"),
        ("worst_scale_ratio", "largest scale ratio seen (1 = uniform)"),
        LOC,
        LOC_TOTAL,
    ],
    threshold: &[("max_scale_ratio", "largest allowed axis ratio")],
    needs: Needs { geometry: false, textures: false, validator: false, renderer: false },
    gauge: None,
    run: node_scale,
};

/// XFM-003.
pub fn node_scale(cx: &Ctx<'_>) -> CheckOutput {
    let scene = &cx.asset.scene;
    let max_ratio = cx.profile.get(&MAX_SCALE_RATIO);
    let mut on_path = BTreeSet::new();
    for inst in &scene.instances {
        on_path.extend(scene.path_to(inst.node));
    }
    let (mut non_uniform, mut negative, mut zero) = (0u64, 0u64, 0u64);
    let mut worst: f64 = 1.0;
    let mut locations = Vec::new();
    let mut judge = |f: ScaleFinding, pointer: String| {
        let bad_ratio = f.ratio > max_ratio;
        non_uniform += u64::from(bad_ratio && !f.zero);
        negative += u64::from(f.negative);
        zero += u64::from(f.zero);
        if f.ratio.is_finite() {
            worst = worst.max(f.ratio);
        }
        if bad_ratio || f.negative || f.zero {
            locations.push(pointer);
        }
    };
    for &n in &on_path {
        judge(scale_finding(&local_matrix(&cx.asset.root.nodes[n])), format!("/nodes/{n}"));
    }
    let mut instances_checked = 0u64;
    for inst in &scene.instances {
        // One instance transform per (node, instance); a multi-primitive mesh repeats it.
        if let (Some(k), Some(m)) = (inst.gpu_instance, inst.instance_matrix)
            && scene.primitives[inst.primitive].index == 0
        {
            instances_checked += 1;
            judge(
                scale_finding(&m),
                format!("/nodes/{}/extensions/EXT_mesh_gpu_instancing/attributes/SCALE/{k}", inst.node),
            );
        }
    }
    let flagged = locations.len();
    let outcome = if flagged > 0 { Comparison::Breach } else { Comparison::Within };
    let message = if flagged == 0 {
        format!(
            "{} and {} have uniform, positive scale",
            count(on_path.len() as u64, "node", "nodes"),
            count(instances_checked, "instance", "instances")
        )
    } else {
        format!(
            "{} with a problem scale ({non_uniform} non-uniform over {}, {negative} mirrored, {zero} zero); first: {}",
            count(flagged as u64, "transform", "transforms"),
            short(max_ratio),
            locations[0]
        )
    };
    measured(
        Obj::new()
            .int("nodes_checked", on_path.len() as u64)
            .int("instances_checked", instances_checked)
            .int("non_uniform", non_uniform)
            .int("negative_scale", negative)
            .int("zero_scale", zero)
            .num("worst_scale_ratio", worst)
            .locations(&locations),
        Obj::new().param(cx.profile, &MAX_SCALE_RATIO),
        outcome,
        message,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_findings() {
        let id = [0.0, 0.0, 0.0, 1.0];
        let f = scale_finding(&mat4::from_trs([0.0; 3], id, [-1.0, 1.0, 1.0]));
        assert!(f.negative && f.ratio == 1.0);
        let f = scale_finding(&mat4::from_trs([0.0; 3], id, [-1.0, -1.0, 1.0]));
        assert!(!f.negative, "(-1,-1,1) is a rotation");
        let f = scale_finding(&mat4::from_trs([0.0; 3], id, [1.0, 2.0, 1.0]));
        assert_eq!(f.ratio, 2.0);
        let f = scale_finding(&mat4::from_trs([0.0; 3], id, [1.0, 0.0, 1.0]));
        assert!(f.zero);
    }
}
