//! Reading the kit's output back, for the kit's own tests: a GLB split into
//! its JSON and buffer, float accessors read back, the invariants every
//! shape keeps, and a document with textures and instancing.

use super::accessors::COMPONENT_F32;
use super::containers::{GLB_CHUNK_BIN, GLB_CHUNK_JSON};
use super::images::{jpeg, png};
use super::scene::{Doc, Image, Material, Node, Prim, Texture, Trs};
use super::shapes::{cross, cube, dot, sub};
use serde_json::Value;

/// The little-endian `u32` at `at`.
pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Splits a GLB into (JSON, optional BIN), checking the container.
pub(super) fn parse_glb(glb: &[u8]) -> (Value, Option<Vec<u8>>) {
    assert_eq!(&glb[0..4], b"glTF");
    assert_eq!(u32_at(glb, 4), 2);
    assert_eq!(u32_at(glb, 8) as usize, glb.len());
    assert_eq!(glb.len() % 4, 0);
    let json_len = u32_at(glb, 12) as usize;
    assert_eq!(json_len % 4, 0);
    assert_eq!(u32_at(glb, 16), GLB_CHUNK_JSON);
    let json: Value = serde_json::from_slice(&glb[20..20 + json_len]).unwrap();
    let mut at = 20 + json_len;
    let bin = if at < glb.len() {
        let bin_len = u32_at(glb, at) as usize;
        assert_eq!(bin_len % 4, 0);
        assert_eq!(u32_at(glb, at + 4), GLB_CHUNK_BIN);
        at += 8;
        let bin = glb[at..at + bin_len].to_vec();
        at += bin_len;
        Some(bin)
    } else {
        None
    };
    assert_eq!(at, glb.len());
    (json, bin)
}

/// Reads a FLOAT VECn accessor back from the buffer.
pub(super) fn read_floats<const N: usize>(json: &Value, bin: &[u8], acc: usize) -> Vec<[f32; N]> {
    let acc = &json["accessors"][acc];
    assert_eq!(acc["componentType"], COMPONENT_F32);
    let view = &json["bufferViews"][acc["bufferView"].as_u64().unwrap() as usize];
    let off = view["byteOffset"].as_u64().unwrap_or(0) as usize;
    let count = acc["count"].as_u64().unwrap() as usize;
    assert_eq!(view["byteLength"].as_u64().unwrap() as usize, count * N * 4);
    (0..count)
        .map(|i| {
            std::array::from_fn(|c| {
                let at = off + (i * N + c) * 4;
                f32::from_le_bytes(bin[at..at + 4].try_into().unwrap())
            })
        })
        .collect()
}

/// Checks that every triangle's geometric normal points away from the
/// origin (valid for convex shapes centred at the origin).
pub(super) fn assert_outward(p: &Prim) {
    let idx = p.indices.as_ref().unwrap();
    for t in idx.chunks_exact(3) {
        let [a, b, c] = [0, 1, 2].map(|k| p.positions[t[k] as usize]);
        let n = cross(sub(b, a), sub(c, a));
        let centroid: [f32; 3] = std::array::from_fn(|i| (a[i] + b[i] + c[i]) / 3.0);
        assert!(dot(n, centroid) > 0.0, "inward triangle {t:?}");
    }
}

/// Checks that every attribute array is as long as the positions, normals
/// are unit length and indices are whole triangles within range.
pub(super) fn assert_consistent(p: &Prim) {
    let n = p.positions.len();
    for uv in &p.uvs {
        assert_eq!(uv.len(), n);
    }
    if let Some(normals) = &p.normals {
        assert_eq!(normals.len(), n);
        for v in normals {
            assert!((dot(*v, *v) - 1.0).abs() < 1e-4, "non-unit normal {v:?}");
        }
    }
    if let Some(idx) = &p.indices {
        assert_eq!(idx.len() % 3, 0);
        assert!(idx.iter().all(|&i| (i as usize) < n));
    }
}

/// A cube with two UV sets, a material with a buffer-backed PNG and an
/// external JPEG, and a second, GPU-instanced node as the first's child.
pub(super) fn textured_doc() -> Doc {
    let mut prim = cube(1.0);
    prim.uvs.push(prim.uvs[0].clone());
    prim.material = Some(0);
    let mut doc = Doc::single(prim);
    doc.materials.push(Material { base_color_texture: Some(0), tex_coord: 1, normal_texture: Some(1) });
    doc.textures.push(Texture { source: 0 });
    doc.textures.push(Texture { source: 1 });
    doc.images.push(Image { bytes: png(4, 4), mime: "image/png".into(), uri: None });
    doc.images.push(Image { bytes: jpeg(8, 8), mime: "image/jpeg".into(), uri: Some("normal.jpg".into()) });
    doc.nodes.push(Node {
        mesh: Some(0),
        translation: Some([1.0, 2.0, 3.0]),
        instances: Some(vec![Trs::default(), Trs { translation: [3.0, 0.0, 0.0], ..Trs::default() }]),
        ..Node::default()
    });
    doc.nodes[0].children.push(1);
    doc
}
