//! XFM: real-world scale, origin placement and node scale.

use super::{CheckOutput, Comparison, Ctx, Obj, count, measured, short};
use crate::asset::scene::local_matrix;
use crate::geom::mat4::{self, Mat4};
use std::collections::BTreeSet;

const NO_GEOMETRY: &str = "the default scene draws no geometry";

/// XFM-001.
pub fn real_world_scale(cx: &Ctx<'_>) -> CheckOutput {
    let b = cx.asset.scene.bounds;
    if b.is_empty() {
        return CheckOutput::Skipped(NO_GEOMETRY.into());
    }
    let size = b.size();
    let largest = size.iter().copied().fold(0.0, f64::max);
    let (min, max) = (cx.profile.get("min_extent"), cx.profile.get("max_extent"));
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
        Obj::new().param(cx.profile, "min_extent").param(cx.profile, "max_extent"),
        outcome,
        message,
    )
}

fn dist(a: [f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

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
    let max = cx.profile.get("max_origin_offset_pct");
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
        Obj::new().param(cx.profile, "max_origin_offset_pct"),
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

/// XFM-003.
pub fn node_scale(cx: &Ctx<'_>) -> CheckOutput {
    let scene = &cx.asset.scene;
    let max_ratio = cx.profile.get("max_scale_ratio");
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
        Obj::new().param(cx.profile, "max_scale_ratio"),
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
