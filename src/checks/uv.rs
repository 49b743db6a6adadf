//! UV: texture coordinates present where materials sample textures.

use super::{CheckOutput, Ctx, MAX_LOCATIONS, Obj, Outcome, measured};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Every texture slot a material samples: (texture index, texCoord set).
/// Walks the material's JSON so that extension slots (clearcoat, sheen,
/// specular, ...) count as well as the core five; KHR_texture_transform's
/// `texCoord` overrides the slot's.
pub fn texture_slots(material: &gltf::json::Material) -> Vec<(usize, u32)> {
    let mut out = Vec::new();
    if let Ok(v) = serde_json::to_value(material) {
        walk(&v, &mut out, 0);
    }
    out
}

fn walk(v: &Value, out: &mut Vec<(usize, u32)>, depth: usize) {
    let Value::Object(map) = v else { return };
    if depth > 8 {
        return;
    }
    for (k, child) in map {
        if (k.ends_with("Texture") || k.ends_with("texture"))
            && let Some(index) = child.get("index").and_then(Value::as_u64)
        {
            let base = child.get("texCoord").and_then(Value::as_u64).unwrap_or(0);
            let set =
                child.pointer("/extensions/KHR_texture_transform/texCoord").and_then(Value::as_u64).unwrap_or(base);
            out.push((index as usize, set as u32));
            continue;
        }
        if k != "extras" {
            walk(child, out, depth + 1);
        }
    }
}

/// UV-001.
pub fn missing_uvs(cx: &Ctx<'_>) -> CheckOutput {
    let root = &cx.asset.root;
    let mut textured = 0u64;
    let mut cases = Vec::new();
    let mut seen = BTreeSet::new();
    for inst in &cx.asset.scene.instances {
        if !seen.insert(inst.primitive) {
            continue;
        }
        let prim = &cx.asset.scene.primitives[inst.primitive];
        let Some(mat) = prim.material.and_then(|m| root.materials.get(m)) else { continue };
        let slots = texture_slots(mat);
        if slots.is_empty() {
            continue;
        }
        textured += 1;
        let needed: BTreeSet<u32> = slots.iter().map(|s| s.1).collect();
        if let Some(&set) = needed.iter().find(|&&s| !prim.has_uv(s as usize)) {
            cases.push((prim.pointer(), prim.material.unwrap_or(0), set));
        }
    }
    let locations: Vec<String> = cases.iter().map(|c| c.0.clone()).collect();
    let missing: Vec<Value> = cases
        .iter()
        .take(MAX_LOCATIONS)
        .map(|(p, m, s)| json!({"pointer": p, "material": m, "tex_coord": s}))
        .collect();
    let outcome = if cases.is_empty() { Outcome::Within } else { Outcome::Breach };
    let message = match cases.first() {
        None if textured == 0 => "no drawn primitive samples a texture".to_string(),
        None if textured == 1 => "the textured primitive has the UV sets its material reads".to_string(),
        None => format!("all {textured} textured primitives have the UV sets their materials read"),
        Some((p, m, s)) => format!(
            "{} of {textured} textured primitives lack a UV set their material reads; first: {p} has no TEXCOORD_{s} for material {m}",
            cases.len()
        ),
    };
    measured(
        Obj::new()
            .int("textured_primitives", textured)
            .int("primitives_missing_uvs", cases.len() as u64)
            .val("missing", Value::Array(missing))
            .locations(&locations),
        Obj::new().int("max_primitives_missing_uvs", 0),
        outcome,
        message,
    )
}
