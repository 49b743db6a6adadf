//! MAT: texture resolution, GPU texture memory and material count.

use super::{CheckOutput, Ctx, MAX_LOCATIONS, Obj, bytes_h, count, measured, over};
use crate::asset::ImageRecord;
use crate::asset::material::{texture_image, texture_slots};
use crate::asset::texture::ImageHeader;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Materials used by drawn primitives (`None` = the default material).
fn used_materials(cx: &Ctx<'_>) -> BTreeSet<Option<usize>> {
    let scene = &cx.asset.scene;
    scene.instances.iter().map(|i| scene.primitives[i.primitive].material).collect()
}

/// Images used by drawn materials, each once, in index order.
fn used_images<'a>(cx: &'a Ctx<'_>) -> Vec<&'a ImageRecord> {
    let root = &cx.asset.root;
    let mut images = BTreeSet::new();
    for m in used_materials(cx).into_iter().flatten() {
        let Some(mat) = root.materials.get(m) else { continue };
        for (tex, _) in texture_slots(mat) {
            if let Some(img) = root.textures.get(tex).and_then(texture_image) {
                images.insert(img);
            }
        }
    }
    images.into_iter().filter_map(|i| cx.asset.images.get(i)).collect()
}

fn readable<'a>(images: &[&'a ImageRecord]) -> Vec<(&'a ImageRecord, &'a ImageHeader)> {
    images.iter().filter_map(|r| r.header.as_ref().ok().map(|h| (*r, h))).collect()
}

/// MAT-001.
pub fn texture_resolution(cx: &Ctx<'_>) -> CheckOutput {
    let images = used_images(cx);
    let mut ok = readable(&images);
    ok.sort_by_key(|(r, h)| (std::cmp::Reverse(h.width.max(h.height)), r.index));
    let max = cx.profile.get("max_texture_dim");
    let largest = ok.first();
    let max_dim = largest.map_or(0, |(_, h)| h.width.max(h.height));
    let over_budget = ok.iter().filter(|(_, h)| h.width.max(h.height) as f64 > max).count();
    let npot = ok.iter().filter(|(_, h)| !h.width.is_power_of_two() || !h.height.is_power_of_two()).count();
    let list: Vec<Value> = ok
        .iter()
        .take(MAX_LOCATIONS)
        .map(
            |(r, h)| json!({"pointer": r.pointer(), "width": h.width, "height": h.height, "format": h.format.as_str()}),
        )
        .collect();
    let message = match largest {
        None if images.is_empty() => "no drawn material uses a texture".to_string(),
        None => format!("none of the {} used images has a readable header", images.len()),
        Some((r, h)) if over_budget > 0 => format!(
            "{over_budget} of {} images exceed {} px; largest {}x{} ({})",
            ok.len(),
            max as u64,
            h.width,
            h.height,
            r.pointer()
        ),
        Some((r, h)) => format!("largest texture {}x{} ({}), within {} px", h.width, h.height, r.pointer(), max as u64),
    };
    measured(
        Obj::new()
            .int("images", images.len() as u64)
            .int("max_dimension_px", max_dim as u64)
            .int("over_budget", over_budget as u64)
            .int("non_power_of_two", npot as u64)
            .int("unreadable", (images.len() - ok.len()) as u64)
            .val("textures", Value::Array(list)),
        Obj::new().param(cx.profile, "max_texture_dim"),
        over(max_dim as f64, max),
        message,
    )
}

/// MAT-002.
pub fn texture_memory(cx: &Ctx<'_>) -> CheckOutput {
    let images = used_images(cx);
    let mut ok = readable(&images);
    ok.sort_by_key(|(r, h)| (std::cmp::Reverse(h.gpu_bytes), r.index));
    let total: u64 = ok.iter().map(|(_, h)| h.gpu_bytes).fold(0, u64::saturating_add);
    let max = cx.profile.get("max_texture_mem");
    let by_image: Vec<Value> =
        ok.iter().take(MAX_LOCATIONS).map(|(r, h)| json!({"pointer": r.pointer(), "gpu_bytes": h.gpu_bytes})).collect();
    let verdict = if total as f64 > max { "over" } else { "within" };
    measured(
        Obj::new().int("gpu_bytes", total).int("images", ok.len() as u64).val("by_image", Value::Array(by_image)),
        Obj::new().param(cx.profile, "max_texture_mem"),
        over(total as f64, max),
        format!(
            "{} of GPU texture memory for {}, {verdict} the budget of {} ({})",
            bytes_h(total),
            count(ok.len() as u64, "image", "images"),
            bytes_h(max as u64),
            cx.profile.name
        ),
    )
}

/// MAT-004.
pub fn material_count(cx: &Ctx<'_>) -> CheckOutput {
    let used = used_materials(cx);
    let n = used.len() as u64;
    let default_used = used.contains(&None);
    let max = cx.profile.get("max_materials");
    let verdict = if n as f64 > max { "over" } else { "within" };
    measured(
        Obj::new()
            .int("materials", n)
            .int("materials_defined", cx.asset.root.materials.len() as u64)
            .bool("default_material_used", default_used),
        Obj::new().param(cx.profile, "max_materials"),
        over(n as f64, max),
        format!(
            "{} drawn, {verdict} the budget of {} ({})",
            count(n, "material", "materials"),
            max as u64,
            cx.profile.name
        ),
    )
}
