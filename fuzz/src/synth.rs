//! A structured input for the accessor target: fuzz bytes choose the fields
//! of a small glTF document (buffer views with and without
//! EXT_meshopt_compression, accessors with and without sparse storage, mesh
//! primitives with and without KHR_draco_mesh_compression, morph targets,
//! EXT_mesh_gpu_instancing, a skin) and the rest of the bytes become its BIN
//! chunk. The result is a GLB, so it goes through the same reading path as a
//! real file.

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use serde_json::{Value, json};

const COMPONENT_TYPES: [u32; 8] = [5120, 5121, 5122, 5123, 5125, 5126, 5124, 0];
const TYPES: [&str; 8] = ["SCALAR", "VEC2", "VEC3", "VEC4", "MAT2", "MAT3", "MAT4", "VEC5"];
const INDEX_TYPES: [u32; 4] = [5121, 5123, 5125, 5126];
const MESHOPT_MODES: [&str; 4] = ["ATTRIBUTES", "TRIANGLES", "INDICES", "POINTS"];
const MESHOPT_FILTERS: [&str; 6] = ["NONE", "OCTAHEDRAL", "QUATERNION", "EXPONENTIAL", "COLOR", "BOGUS"];
/// Counts past every budget and view, kept rare so that most runs decode.
const BIG: [u64; 8] = [1 << 20, 1 << 24, (1 << 30) + 1, u32::MAX as u64, 1 << 32, 1 << 40, 1 << 53, u64::MAX >> 1];

/// A small count most of the time, sometimes a huge one.
fn count(u: &mut Unstructured<'_>) -> Result<u64> {
    if u.ratio(1, 8)? { Ok(*u.choose(&BIG)?) } else { Ok(u.int_in_range(0..=96u64)?) }
}

/// A small index, sometimes one past the end of its array.
fn index(u: &mut Unstructured<'_>, len: usize) -> Result<u64> {
    Ok(u.int_in_range(0..=len as u64)?)
}

/// An offset into a buffer of `len` bytes, sometimes past it.
fn offset(u: &mut Unstructured<'_>, len: usize) -> Result<u64> {
    if u.ratio(1, 16)? { Ok(*u.choose(&BIG)?) } else { Ok(u.int_in_range(0..=(len as u64 + 8))?) }
}

fn maybe<T>(u: &mut Unstructured<'_>, f: impl FnOnce(&mut Unstructured<'_>) -> Result<T>) -> Result<Option<T>> {
    if u.arbitrary::<bool>()? { Ok(Some(f(u)?)) } else { Ok(None) }
}

fn insert(obj: &mut Value, key: &str, v: Option<Value>) {
    if let (Some(v), Some(m)) = (v, obj.as_object_mut()) {
        m.insert(key.to_string(), v);
    }
}

/// Builds a GLB from fuzz bytes: a JSON chunk made of the fields chosen by
/// the first bytes, and a BIN chunk of whatever is left.
pub fn glb(data: &[u8]) -> Result<Vec<u8>> {
    // The first two bytes give the BIN chunk's length; its bytes are the input's tail.
    let (Some(&lo), Some(&hi)) = (data.first(), data.get(1)) else { return Ok(Vec::new()) };
    let rest = &data[2..];
    let bin_len = u16::from_le_bytes([lo, hi]) as usize % (rest.len() + 1);
    let (head, bin) = rest.split_at(rest.len() - bin_len);
    let mut u = Unstructured::new(head);
    let u = &mut u;
    let n_views = u.int_in_range(0..=6usize)?;
    let n_acc = u.int_in_range(0..=8usize)?;
    let len = bin.len();

    let mut buffers = vec![json!({ "byteLength": if u.ratio(1, 16)? { len as u64 + 4 } else { len as u64 } })];
    if u.ratio(1, 4)? {
        // A meshopt fallback buffer: declared, no bytes.
        buffers.push(json!({
            "byteLength": count(u)?,
            "extensions": { "EXT_meshopt_compression": { "fallback": u.arbitrary::<bool>()? } }
        }));
    }
    let n_buffers = buffers.len();

    let mut views = Vec::new();
    for _ in 0..n_views {
        let mut v = json!({
            "buffer": index(u, n_buffers)?,
            "byteOffset": offset(u, len)?,
            "byteLength": offset(u, len)?,
        });
        insert(&mut v, "byteStride", maybe(u, |u| Ok(json!(u.int_in_range(0..=64u64)? * 4)))?);
        if u.ratio(1, 3)? {
            let ext = json!({
                "buffer": index(u, n_buffers)?,
                "byteOffset": offset(u, len)?,
                "byteLength": offset(u, len)?,
                "byteStride": *u.choose(&[2u64, 4, 8, 12, 16, 3, 0, 260])?,
                "count": count(u)?,
                "mode": *u.choose(&MESHOPT_MODES)?,
                "filter": *u.choose(&MESHOPT_FILTERS)?,
            });
            insert(&mut v, "extensions", Some(json!({ "EXT_meshopt_compression": ext })));
        }
        views.push(v);
    }

    let mut accessors = Vec::new();
    for _ in 0..n_acc {
        let mut a = json!({
            "componentType": *u.choose(&COMPONENT_TYPES)?,
            "type": *u.choose(&TYPES)?,
            "count": count(u)?,
            "normalized": u.arbitrary::<bool>()?,
        });
        insert(&mut a, "bufferView", maybe(u, |u| Ok(json!(index(u, n_views)?)))?);
        insert(&mut a, "byteOffset", maybe(u, |u| Ok(json!(offset(u, len)?)))?);
        if u.ratio(1, 3)? {
            let sparse = json!({
                "count": count(u)?,
                "indices": {
                    "bufferView": index(u, n_views)?,
                    "byteOffset": offset(u, len)?,
                    "componentType": *u.choose(&INDEX_TYPES)?,
                },
                "values": { "bufferView": index(u, n_views)?, "byteOffset": offset(u, len)? },
            });
            insert(&mut a, "sparse", Some(sparse));
        }
        accessors.push(a);
    }

    let n_prims = u.int_in_range(1..=3usize)?;
    let mut prims = Vec::new();
    for _ in 0..n_prims {
        let mut attrs = serde_json::Map::new();
        for name in ["POSITION", "TEXCOORD_0", "TEXCOORD_1", "NORMAL", "TANGENT", "COLOR_0"] {
            if (name == "POSITION" && !u.ratio(1, 8)?) || u.ratio(1, 3)? {
                attrs.insert(name.into(), json!(index(u, n_acc)?));
            }
        }
        let mut p = json!({ "attributes": attrs, "mode": u.int_in_range(0..=7u32)? });
        insert(&mut p, "indices", maybe(u, |u| Ok(json!(index(u, n_acc)?)))?);
        if u.ratio(1, 4)? {
            insert(&mut p, "targets", Some(json!([{ "POSITION": index(u, n_acc)? }])));
        }
        if u.ratio(1, 3)? {
            let mut d = serde_json::Map::new();
            for name in ["POSITION", "TEXCOORD_0", "NORMAL", "TANGENT", "COLOR_0"] {
                if name == "POSITION" || u.arbitrary::<bool>()? {
                    d.insert(name.into(), json!(u.int_in_range(0..=4u32)?));
                }
            }
            let ext = json!({ "bufferView": index(u, n_views)?, "attributes": d });
            insert(&mut p, "extensions", Some(json!({ "KHR_draco_mesh_compression": ext })));
        }
        prims.push(p);
    }
    let mut mesh = json!({ "primitives": prims });
    if u.arbitrary::<bool>()? {
        insert(&mut mesh, "weights", Some(json!([f32::from(u.int_in_range(0..=4u8)?) * 0.5])));
    }

    let mut node = json!({ "mesh": 0 });
    if u.ratio(1, 4)? {
        let mut attrs = serde_json::Map::new();
        for name in ["TRANSLATION", "ROTATION", "SCALE"] {
            if u.arbitrary::<bool>()? {
                attrs.insert(name.into(), json!(index(u, n_acc)?));
            }
        }
        insert(&mut node, "extensions", Some(json!({ "EXT_mesh_gpu_instancing": { "attributes": attrs } })));
    }
    let mut doc = json!({
        "asset": { "version": "2.0" },
        "buffers": buffers,
        "bufferViews": views,
        "accessors": accessors,
        "meshes": [mesh],
        "nodes": [node],
        "scenes": [{ "nodes": [0] }],
        "scene": 0,
    });
    if u.ratio(1, 6)? {
        insert(&mut doc, "skins", Some(json!([{ "joints": [0], "inverseBindMatrices": index(u, n_acc)? }])));
        if let Some(n) = doc.pointer_mut("/nodes/0") {
            insert(n, "skin", Some(json!(0)));
        }
    }
    Ok(pack_glb(doc.to_string().as_bytes(), bin))
}

/// A GLB of a JSON chunk and a BIN chunk, each padded to 4 bytes.
pub fn pack_glb(json: &[u8], bin: &[u8]) -> Vec<u8> {
    let pad = |n: usize| (4 - n % 4) % 4;
    let json_len = json.len() + pad(json.len());
    let bin_len = bin.len() + pad(bin.len());
    let total = 12 + 8 + json_len + 8 + bin_len;
    let mut out = Vec::with_capacity(total);
    out.extend(b"glTF");
    out.extend(2u32.to_le_bytes());
    out.extend((total as u32).to_le_bytes());
    out.extend((json_len as u32).to_le_bytes());
    out.extend(b"JSON");
    out.extend(json);
    out.extend(std::iter::repeat_n(b' ', pad(json.len())));
    out.extend((bin_len as u32).to_le_bytes());
    out.extend(b"BIN\0");
    out.extend(bin);
    out.extend(std::iter::repeat_n(0u8, pad(bin.len())));
    out
}

/// Writes `glb` to the file named by `FUZZ_SYNTH_DUMP`, when it is set (to
/// read what a crashing structured input builds).
pub fn dump(glb: &[u8]) {
    static TO: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    if let Some(path) = TO.get_or_init(|| std::env::var_os("FUZZ_SYNTH_DUMP").map(Into::into)) {
        let _ = std::fs::write(path, glb);
    }
}
