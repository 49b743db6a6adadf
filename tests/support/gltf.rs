//! The glTF JSON of a [`Doc`]: [`Doc::to_json`] writes the document's
//! objects and fills the buffer through `accessors.rs`; `containers.rs`
//! wraps the result as GLB, `.gltf` files or an embedded `.gltf`.

use super::accessors::{BufferBuilder, TARGET_ARRAY_BUFFER};
use super::scene::{Doc, Layout, Material, Node, Prim};
use base64::Engine as _;
use serde_json::{Map, Value, json};

/// Name of the GPU instancing extension written for [`Node::instances`].
const EXT_INSTANCING: &str = "EXT_mesh_gpu_instancing";

/// Inserts `key: array` into `obj` unless the array is empty.
fn insert_nonempty(obj: &mut Map<String, Value>, key: &str, items: Vec<Value>) {
    if !items.is_empty() {
        obj.insert(key.into(), Value::Array(items));
    }
}

impl Doc {
    /// Builds the glTF JSON and the binary buffer contents for `layout`.
    ///
    /// Every accessor gets its own 4-byte aligned bufferView (no
    /// `byteStride`); `POSITION` accessors carry `min`/`max`. Images without
    /// a `uri` are stored in bufferViews, images with one are referenced by
    /// that `uri`. Empty top-level arrays are omitted; when the buffer is
    /// empty no `buffers` entry is written. The returned bytes are padded to
    /// a multiple of four and equal the buffer's `byteLength`.
    pub fn to_json(&self, layout: Layout) -> (Value, Vec<u8>) {
        let mut buf = BufferBuilder::new();

        let meshes: Vec<Value> = self
            .meshes
            .iter()
            .map(|mesh| {
                let prims: Vec<Value> = mesh.primitives.iter().map(|p| prim_json(p, &mut buf)).collect();
                json!({ "primitives": prims })
            })
            .collect();

        let mut uses_instancing = false;
        let nodes: Vec<Value> = self
            .nodes
            .iter()
            .map(|n| {
                let v = node_json(n, &mut buf);
                uses_instancing |= v.get("extensions").is_some();
                v
            })
            .collect();

        let images: Vec<Value> = self
            .images
            .iter()
            .map(|img| {
                let mut obj = Map::new();
                match &img.uri {
                    Some(uri) => {
                        obj.insert("uri".into(), json!(uri));
                    }
                    None => {
                        let view = buf.push_view(&img.bytes, None);
                        obj.insert("bufferView".into(), json!(view));
                        obj.insert("mimeType".into(), json!(img.mime));
                    }
                }
                Value::Object(obj)
            })
            .collect();

        let materials: Vec<Value> = self.materials.iter().map(material_json).collect();
        let textures: Vec<Value> = self.textures.iter().map(|t| json!({ "source": t.source })).collect();

        buf.align();
        let BufferBuilder { bin, views, accessors } = buf;

        let mut root = Map::new();
        root.insert("asset".into(), json!({ "version": "2.0", "generator": "meshcheck testkit" }));
        if uses_instancing {
            root.insert("extensionsUsed".into(), json!([EXT_INSTANCING]));
        }
        root.insert("scene".into(), json!(0));
        let mut scene = Map::new();
        if !self.scene_roots.is_empty() {
            scene.insert("nodes".into(), json!(self.scene_roots));
        }
        root.insert("scenes".into(), json!([Value::Object(scene)]));
        insert_nonempty(&mut root, "nodes", nodes);
        insert_nonempty(&mut root, "meshes", meshes);
        insert_nonempty(&mut root, "materials", materials);
        insert_nonempty(&mut root, "textures", textures);
        insert_nonempty(&mut root, "images", images);
        insert_nonempty(&mut root, "accessors", accessors);
        insert_nonempty(&mut root, "bufferViews", views);
        if !bin.is_empty() {
            let mut buffer = Map::new();
            match layout {
                Layout::Glb => {}
                Layout::ExternalBin(uri) => {
                    buffer.insert("uri".into(), json!(uri));
                }
                Layout::Embedded => {
                    let b64 = base64::engine::general_purpose::STANDARD.encode(&bin);
                    buffer.insert("uri".into(), json!(format!("data:application/octet-stream;base64,{b64}")));
                }
            }
            buffer.insert("byteLength".into(), json!(bin.len()));
            root.insert("buffers".into(), json!([Value::Object(buffer)]));
        }
        (Value::Object(root), bin)
    }
}

/// Writes the JSON of one primitive, appending its accessors to `buf`.
fn prim_json(p: &Prim, buf: &mut BufferBuilder) -> Value {
    let mut attrs = Map::new();
    let pos = buf.push_float(&p.positions, Some(TARGET_ARRAY_BUFFER), true);
    attrs.insert("POSITION".into(), json!(pos));
    if let Some(normals) = &p.normals {
        let acc = buf.push_float(normals, Some(TARGET_ARRAY_BUFFER), false);
        attrs.insert("NORMAL".into(), json!(acc));
    }
    for (set, uv) in p.uvs.iter().enumerate() {
        let acc = buf.push_float(uv, Some(TARGET_ARRAY_BUFFER), false);
        attrs.insert(format!("TEXCOORD_{set}"), json!(acc));
    }
    let mut obj = Map::new();
    obj.insert("attributes".into(), Value::Object(attrs));
    if let Some(indices) = &p.indices {
        let acc = buf.push_indices(indices);
        obj.insert("indices".into(), json!(acc));
    }
    if let Some(m) = p.material {
        obj.insert("material".into(), json!(m));
    }
    if p.mode != 4 {
        obj.insert("mode".into(), json!(p.mode));
    }
    Value::Object(obj)
}

/// Writes the JSON of one node, appending instancing accessors to `buf`.
fn node_json(n: &Node, buf: &mut BufferBuilder) -> Value {
    let mut obj = Map::new();
    if let Some(mesh) = n.mesh {
        obj.insert("mesh".into(), json!(mesh));
    }
    if !n.children.is_empty() {
        obj.insert("children".into(), json!(n.children));
    }
    if let Some(t) = n.translation {
        obj.insert("translation".into(), json!(t));
    }
    if let Some(r) = n.rotation {
        obj.insert("rotation".into(), json!(r));
    }
    if let Some(s) = n.scale {
        obj.insert("scale".into(), json!(s));
    }
    if let Some(m) = n.matrix {
        obj.insert("matrix".into(), json!(m.to_vec()));
    }
    if let Some(instances) = n.instances.as_deref().filter(|i| !i.is_empty()) {
        let t: Vec<[f32; 3]> = instances.iter().map(|i| i.translation).collect();
        let r: Vec<[f32; 4]> = instances.iter().map(|i| i.rotation).collect();
        let s: Vec<[f32; 3]> = instances.iter().map(|i| i.scale).collect();
        let t = buf.push_float(&t, None, false);
        let r = buf.push_float(&r, None, false);
        let s = buf.push_float(&s, None, false);
        obj.insert(
            "extensions".into(),
            json!({
                EXT_INSTANCING: {
                    "attributes": { "TRANSLATION": t, "ROTATION": r, "SCALE": s }
                }
            }),
        );
    }
    Value::Object(obj)
}

/// Writes the JSON of one material.
fn material_json(m: &Material) -> Value {
    let mut obj = Map::new();
    if let Some(index) = m.base_color_texture {
        obj.insert(
            "pbrMetallicRoughness".into(),
            json!({ "baseColorTexture": { "index": index, "texCoord": m.tex_coord } }),
        );
    }
    if let Some(index) = m.normal_texture {
        obj.insert("normalTexture".into(), json!({ "index": index, "texCoord": m.tex_coord }));
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::super::accessors::{COMPONENT_U16, TARGET_ELEMENT_ARRAY_BUFFER};
    use super::super::readback::{parse_glb, read_floats, textured_doc};
    use super::super::shapes::cube;
    use super::*;

    #[test]
    fn glb_container_and_accessors() {
        let mut c = cube(2.0);
        c.translate([1.0, 0.0, 0.0]);
        let glb = Doc::single(c.clone()).to_glb();
        let (json, bin) = parse_glb(&glb);
        let bin = bin.expect("BIN chunk");
        assert_eq!(json["asset"]["version"], "2.0");
        assert_eq!(json["asset"]["generator"], "meshcheck testkit");
        assert_eq!(json["scene"], 0);
        assert_eq!(json["scenes"][0]["nodes"], json!([0]));
        assert_eq!(json["buffers"][0]["byteLength"].as_u64().unwrap() as usize, bin.len());
        assert!(json["buffers"][0].get("uri").is_none());
        for key in ["materials", "textures", "images", "extensionsUsed"] {
            assert!(json.get(key).is_none(), "{key} should be omitted");
        }
        for v in json["bufferViews"].as_array().unwrap() {
            assert_eq!(v["byteOffset"].as_u64().unwrap_or(0) % 4, 0);
            assert!(v.get("byteStride").is_none());
        }
        let prim = &json["meshes"][0]["primitives"][0];
        assert!(prim.get("mode").is_none());
        let pos_acc = prim["attributes"]["POSITION"].as_u64().unwrap() as usize;
        let acc = &json["accessors"][pos_acc];
        assert_eq!(acc["type"], "VEC3");
        assert_eq!(acc["min"], json!([0.0, -1.0, -1.0]));
        assert_eq!(acc["max"], json!([2.0, 1.0, 1.0]));
        assert_eq!(read_floats::<3>(&json, &bin, pos_acc), c.positions);
        let uv_acc = prim["attributes"]["TEXCOORD_0"].as_u64().unwrap() as usize;
        assert_eq!(json["accessors"][uv_acc]["type"], "VEC2");
        assert_eq!(read_floats::<2>(&json, &bin, uv_acc), c.uvs[0]);
        let n_acc = prim["attributes"]["NORMAL"].as_u64().unwrap() as usize;
        assert_eq!(read_floats::<3>(&json, &bin, n_acc), *c.normals.as_ref().unwrap());
        let idx = &json["accessors"][prim["indices"].as_u64().unwrap() as usize];
        assert_eq!(idx["componentType"], COMPONENT_U16);
        assert_eq!(idx["count"], 36);
        assert_eq!(idx["type"], "SCALAR");
        let idx_view = &json["bufferViews"][idx["bufferView"].as_u64().unwrap() as usize];
        assert_eq!(idx_view["target"], TARGET_ELEMENT_ARRAY_BUFFER);
        let pos_view = &json["bufferViews"][acc["bufferView"].as_u64().unwrap() as usize];
        assert_eq!(pos_view["target"], TARGET_ARRAY_BUFFER);
    }

    #[test]
    fn textures_images_and_instancing() {
        let doc = textured_doc();
        let (json, bin) = parse_glb(&doc.to_glb());
        let bin = bin.unwrap();
        let mat = &json["materials"][0];
        assert_eq!(mat["pbrMetallicRoughness"]["baseColorTexture"], json!({"index": 0, "texCoord": 1}));
        assert_eq!(mat["normalTexture"], json!({"index": 1, "texCoord": 1}));
        assert_eq!(json["textures"], json!([{"source": 0}, {"source": 1}]));
        let img0 = &json["images"][0];
        assert_eq!(img0["mimeType"], "image/png");
        let view = &json["bufferViews"][img0["bufferView"].as_u64().unwrap() as usize];
        assert!(view.get("target").is_none());
        let off = view["byteOffset"].as_u64().unwrap() as usize;
        let len = view["byteLength"].as_u64().unwrap() as usize;
        let decoded = image::load_from_memory(&bin[off..off + len]).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (4, 4));
        assert_eq!(json["images"][1], json!({"uri": "normal.jpg"}));
        assert!(json["meshes"][0]["primitives"][0]["attributes"].get("TEXCOORD_1").is_some());

        assert_eq!(json["extensionsUsed"], json!([EXT_INSTANCING]));
        assert_eq!(json["nodes"][0]["children"], json!([1]));
        assert!(json["nodes"][1].get("children").is_none());
        assert_eq!(json["nodes"][1]["translation"], json!([1.0, 2.0, 3.0]));
        let attrs = &json["nodes"][1]["extensions"][EXT_INSTANCING]["attributes"];
        let t = read_floats::<3>(&json, &bin, attrs["TRANSLATION"].as_u64().unwrap() as usize);
        assert_eq!(t, vec![[0.0; 3], [3.0, 0.0, 0.0]]);
        let r = read_floats::<4>(&json, &bin, attrs["ROTATION"].as_u64().unwrap() as usize);
        assert_eq!(r, vec![[0.0, 0.0, 0.0, 1.0]; 2]);
        let s = read_floats::<3>(&json, &bin, attrs["SCALE"].as_u64().unwrap() as usize);
        assert_eq!(s, vec![[1.0; 3]; 2]);
        assert_eq!(json["accessors"][attrs["ROTATION"].as_u64().unwrap() as usize]["type"], "VEC4");
    }
}
