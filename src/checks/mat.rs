//! MAT: texture resolution, GPU texture memory and material count.

use super::{CheckDef, Family, Needs};
use super::{CheckOutput, Ctx, MAX_LOCATIONS, Obj, bytes_h, count, measured, over};
use crate::asset::ImageRecord;
use crate::asset::material::{texture_image, texture_slots};
use crate::asset::texture::ImageHeader;
use crate::profile::Param;
use crate::report::Severity;
use serde_json::{Value, json};
use std::collections::BTreeSet;

const CATEGORY: &str = "material";

/// The MAT family: its checks in ID order.
pub static FAMILY: Family = Family {
    prefix: "MAT",
    category: CATEGORY,
    label: "Materials",
    blurb: "Texture size, GPU texture memory, material count",
    checks: &[TEXTURE_RESOLUTION, TEXTURE_MEMORY, MATERIAL_COUNT],
};

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

/// Budget: Largest texture side.
pub const MAX_TEXTURE_DIM: Param =
    Param { key: "max_texture_dim", unit: "px", doc: "Largest texture side", overridable: true, integer: true };

/// MAT-001: its definition.
pub const TEXTURE_RESOLUTION: CheckDef = CheckDef {
    id: "MAT-001",
    name: "Texture resolution",
    category: CATEGORY,
    severity: Severity::Error,
    params: &[&MAX_TEXTURE_DIM],
    what: "Reads the header (never the pixels) of every image that a material drawn in the default scene uses, preferring a KTX2 (KHR_texture_basisu) or WebP (EXT_texture_webp) source over the fallback, and compares the longest side with the budget.",
    why: "Textures beyond a platform's maximum are downscaled or refused at load time, and large maps dominate download size and GPU memory.",
    fix: "Resize the named images to the budget (power-of-two sides are kindest to mipmapping), or choose a profile meant for the target hardware.",
    measured: &[
        ("images", "images measured (used by drawn materials, each once)"),
        ("max_dimension_px", "the longest side of any measured image, in pixels"),
        ("over_budget", "images with a side over max_texture_dim"),
        ("non_power_of_two", "images with a side that is not a power of two"),
        ("unreadable", "used images whose header could not be read (missing or not an image)"),
        ("textures", "per image (at most 100, largest first): pointer, width, height, format"),
    ],
    threshold: &[("max_texture_dim", "largest allowed side in pixels")],
    needs: Needs { geometry: false, textures: true, validator: false, renderer: false },
    gauge: Some(("max_dimension_px", "max_texture_dim")),
    run: texture_resolution,
};

/// MAT-001.
pub fn texture_resolution(cx: &Ctx<'_>) -> CheckOutput {
    let images = used_images(cx);
    let mut ok = readable(&images);
    ok.sort_by_key(|(r, h)| (std::cmp::Reverse(h.width.max(h.height)), r.index));
    let max = cx.profile.get(&MAX_TEXTURE_DIM);
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
        Obj::new().param(cx.profile, &MAX_TEXTURE_DIM),
        over(max_dim as f64, max),
        message,
    )
}

/// Budget: Estimated GPU texture memory.
pub const MAX_TEXTURE_MEM: Param = Param {
    key: "max_texture_mem",
    unit: "bytes",
    doc: "Estimated GPU texture memory",
    overridable: true,
    integer: true,
};

/// MAT-002: its definition.
pub const TEXTURE_MEMORY: CheckDef = CheckDef {
    id: "MAT-002",
    name: "Estimated GPU texture memory",
    category: CATEGORY,
    severity: Severity::Error,
    params: &[&MAX_TEXTURE_MEM],
    what: "Sums the GPU memory of the measured images as glTF-Transform estimates it: PNG, JPEG and WebP as RGBA8 with a full mip chain (a 2048x2048 map is 22,369,620 bytes); KTX2 from its levels (UASTC and GPU formats from each level's uncompressed size, ETC1S as 8 bytes per 4x4 block, 16 with alpha).",
    why: "Texture memory is what runs mobile browsers and headsets out of memory; file size hides it, since a 300 KB JPEG still costs width x height x 4 bytes on the GPU.",
    fix: "Downscale the largest maps, merge small ones into an atlas, or ship KTX2 (Basis Universal) textures, which stay compressed on the GPU.",
    measured: &[
        ("gpu_bytes", "estimated GPU memory of all measured images, in bytes"),
        ("images", "images measured"),
        ("by_image", "per image (at most 100, largest first): pointer, gpu_bytes"),
    ],
    threshold: &[("max_texture_mem", "budget in bytes")],
    needs: Needs { geometry: false, textures: true, validator: false, renderer: false },
    gauge: Some(("gpu_bytes", "max_texture_mem")),
    run: texture_memory,
};

/// MAT-002.
pub fn texture_memory(cx: &Ctx<'_>) -> CheckOutput {
    let images = used_images(cx);
    let mut ok = readable(&images);
    ok.sort_by_key(|(r, h)| (std::cmp::Reverse(h.gpu_bytes), r.index));
    let total: u64 = ok.iter().map(|(_, h)| h.gpu_bytes).fold(0, u64::saturating_add);
    let max = cx.profile.get(&MAX_TEXTURE_MEM);
    let by_image: Vec<Value> =
        ok.iter().take(MAX_LOCATIONS).map(|(r, h)| json!({"pointer": r.pointer(), "gpu_bytes": h.gpu_bytes})).collect();
    let verdict = if total as f64 > max { "over" } else { "within" };
    measured(
        Obj::new().int("gpu_bytes", total).int("images", ok.len() as u64).val("by_image", Value::Array(by_image)),
        Obj::new().param(cx.profile, &MAX_TEXTURE_MEM),
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

/// Budget: Materials drawn.
pub const MAX_MATERIALS: Param =
    Param { key: "max_materials", unit: "materials", doc: "Materials drawn", overridable: true, integer: true };

/// MAT-004: its definition.
pub const MATERIAL_COUNT: CheckDef = CheckDef {
    id: "MAT-004",
    name: "Material count",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_MATERIALS],
    what: "Counts the distinct materials used by primitives drawn in the default scene; primitives without a material use the glTF default material, which counts as one.",
    why: "Every material is at least one shader state change and usually one more draw call; real-time budgets cap them.",
    fix: "Merge materials that differ only in texture into one material over a texture atlas; remove near-duplicate materials.",
    measured: &[
        ("materials", "distinct materials drawn (the default material counts once)"),
        ("materials_defined", "length of the document's materials array"),
        ("default_material_used", "whether some primitive has no material"),
    ],
    threshold: &[("max_materials", "budget")],
    needs: Needs { geometry: false, textures: false, validator: false, renderer: false },
    gauge: Some(("materials", "max_materials")),
    run: material_count,
};

/// MAT-004.
pub fn material_count(cx: &Ctx<'_>) -> CheckOutput {
    let used = used_materials(cx);
    let n = used.len() as u64;
    let default_used = used.contains(&None);
    let max = cx.profile.get(&MAX_MATERIALS);
    let verdict = if n as f64 > max { "over" } else { "within" };
    measured(
        Obj::new()
            .int("materials", n)
            .int("materials_defined", cx.asset.root.materials.len() as u64)
            .bool("default_material_used", default_used),
        Obj::new().param(cx.profile, &MAX_MATERIALS),
        over(n as f64, max),
        format!(
            "{} drawn, {verdict} the budget of {} ({})",
            count(n, "material", "materials"),
            max as u64,
            cx.profile.name
        ),
    )
}
