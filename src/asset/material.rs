//! Material and texture queries, in one place for the checks and the
//! renderer: which textures a material samples and with which UV set, and
//! which image stands behind a texture.
//!
//! Two questions have two answers on purpose: the checks measure every slot
//! (extension slots too) and the image a capable viewer loads
//! ([`texture_slots`], [`texture_image`]); the studio renderer draws the core
//! five slots from an image it can decode ([`drawn_slots`],
//! [`decodable_image`]).

use serde_json::Value;

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

/// The image a texture loads: a KTX2, WebP or AVIF source when its extension
/// gives one (that is what a capable viewer loads), else `source`. The MAT
/// and UV checks measure this one.
pub fn texture_image(texture: &gltf::json::Texture) -> Option<usize> {
    let ext = texture.extensions.as_ref().map(|e| &e.others);
    for name in ["KHR_texture_basisu", "EXT_texture_webp", "EXT_texture_avif"] {
        if let Some(s) = ext.and_then(|m| m.get(name)).and_then(|e| e.get("source")).and_then(Value::as_u64) {
            return Some(s as usize);
        }
    }
    let s = texture.source.value();
    (s != u32::MAX as usize).then_some(s)
}

/// The core five slots the studio renderer draws (base colour,
/// metallic-roughness, normal, occlusion, emissive), as (texture index,
/// whether it holds sRGB colour) pairs.
pub fn drawn_slots(m: &gltf::json::Material) -> Vec<(usize, bool)> {
    let pbr = &m.pbr_metallic_roughness;
    let mut out = Vec::new();
    if let Some(t) = &pbr.base_color_texture {
        out.push((t.index.value(), true));
    }
    if let Some(t) = &pbr.metallic_roughness_texture {
        out.push((t.index.value(), false));
    }
    if let Some(t) = &m.normal_texture {
        out.push((t.index.value(), false));
    }
    if let Some(t) = &m.occlusion_texture {
        out.push((t.index.value(), false));
    }
    if let Some(t) = &m.emissive_texture {
        out.push((t.index.value(), true));
    }
    out
}

/// The image a PNG/JPEG/WebP decoder can draw for a texture:
/// EXT_texture_webp's source when present, else `source` (a
/// KHR_texture_basisu-only texture has none), when that image exists.
pub fn decodable_image(root: &gltf::json::Root, texture: usize) -> Option<usize> {
    let t = root.textures.get(texture)?;
    let webp = t
        .extensions
        .as_ref()
        .and_then(|e| e.others.get("EXT_texture_webp"))
        .and_then(|w| w.get("source"))
        .and_then(|s| s.as_u64())
        .map(|s| s as usize);
    webp.or(Some(t.source.value())).filter(|&i| i < root.images.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn material(json: &str) -> gltf::json::Material {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn checks_see_every_slot_and_the_renderer_the_core_five() {
        let m = material(
            r#"{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0},
                "metallicRoughnessTexture": {"index": 1, "texCoord": 1}},
                "normalTexture": {"index": 2, "extensions": {"KHR_texture_transform": {"texCoord": 2}}},
                "extensions": {"KHR_materials_clearcoat": {"clearcoatTexture": {"index": 3}}},
                "extras": {"fakeTexture": {"index": 9}}}"#,
        );
        let mut slots = texture_slots(&m);
        slots.sort();
        assert_eq!(slots, [(0, 0), (1, 1), (2, 2), (3, 0)], "extension slots count; extras do not");
        assert_eq!(drawn_slots(&m), [(0, true), (1, false), (2, false)]);
    }

    #[test]
    fn the_loaded_image_and_the_drawable_image_differ_for_basisu() {
        let root: gltf::json::Root = serde_json::from_str(
            r#"{"asset": {"version": "2.0"}, "images": [{"uri": "a.png"}, {"uri": "a.ktx2"}],
                "textures": [{"source": 0, "extensions": {"KHR_texture_basisu": {"source": 1}}},
                             {"extensions": {"KHR_texture_basisu": {"source": 1}}}]}"#,
        )
        .unwrap();
        assert_eq!(texture_image(&root.textures[0]), Some(1), "a capable viewer loads the KTX2");
        assert_eq!(decodable_image(&root, 0), Some(0), "the renderer draws the PNG fallback");
        assert_eq!(decodable_image(&root, 1), None, "nothing it can decode");
    }
}
