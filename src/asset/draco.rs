//! KHR_draco_mesh_compression: decodes a primitive's Draco stream with the
//! pure-Rust `draco-core` decoder, under the file's decode budget.
//!
//! Every encoding Draco writes decodes (draco-core is built with all its
//! decoding features): sequential and edgebreaker connectivity (standard and
//! valence traversals), point clouds (sequential and kd-tree) and the legacy
//! bitstreams 1.1 to 2.1. `tests/crosscheck_draco.py` checks them against
//! Google's encoder and Draco's own legacy test files.
//!
//! The primitive's mode assembles the decoded geometry as it does plain
//! accessors: a mesh stream's faces are its index list, a point-cloud stream
//! has none (glTF's non-indexed drawing). So a POINTS primitive draws no
//! triangles whatever its stream holds.

use super::data::DocData;
use super::primitive::{MAX_UV_SETS, Primitive};
use crate::error::{Error, Result};
use crate::geom::topology;
use draco_core::{DecodeLimits, DecoderBuffer, Mesh, MeshDecoder};

/// Decodes the Draco stream named by `ext` into `prim`.
pub fn decode(
    data: &DocData<'_>,
    mesh: usize,
    index: usize,
    ext: &serde_json::Value,
    prim: &mut Primitive,
) -> Result<()> {
    let pointer = format!("/meshes/{mesh}/primitives/{index}/extensions/KHR_draco_mesh_compression");
    let bad = |why: String| {
        Error::malformed(format!("mesh {mesh} primitive {index}: {why}"))
            .with_detail(serde_json::json!({ "pointer": pointer }))
    };
    let view = ext
        .get("bufferView")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| bad("the Draco extension has no bufferView".into()))?;
    let attrs = ext
        .get("attributes")
        .and_then(|a| a.as_object())
        .ok_or_else(|| bad("the Draco extension has no attributes".into()))?;
    let bytes = data.view(view as usize)?;
    let budget = data.budget_left();
    let limits =
        DecodeLimits::default().with_max_decoded_bytes(budget).with_max_faces(budget / 12).with_max_points(budget / 12);
    let mut buffer = DecoderBuffer::new(bytes).with_limits(limits);
    let mut out = Mesh::new();
    MeshDecoder::new()
        .decode(&mut buffer, &mut out)
        .map_err(|e| bad(format!("the Draco stream does not decode: {e}")))?;
    let points = out.num_points();
    let faces = out.num_faces();
    // Byte 7 of the header (decoded above, so present) is the geometry type:
    // 0 a point cloud, 1 a triangle mesh. A point cloud has no index list.
    let point_cloud = bytes.get(7) == Some(&0);
    let drawn = if point_cloud { points } else { faces.saturating_mul(3) };
    let triangle_count = topology::triangle_count(prim.mode, drawn) as u64;
    // TRIANGLES over a mesh stream keeps the faces as they are; any other
    // assembly builds its triangles beside them.
    let faces_are_triangles = prim.mode == 4 && !point_cloud;
    let assembled = if faces_are_triangles { 0 } else { triangle_count * 12 };
    data.charge((points as u64) * 12 + (faces as u64) * 12 + assembled, "the Draco stream")?;
    let read = |name: &str, comps: usize| -> Result<Option<Vec<f32>>> {
        let Some(id) = attrs.get(name).and_then(|v| v.as_u64()) else { return Ok(None) };
        let att = out
            .attribute_by_unique_id(id as u32)
            .ok_or_else(|| bad(format!("the Draco stream has no attribute {id} for {name}")))?;
        Ok(Some(floats(att, points, comps)))
    };
    if let Some(p) = read("POSITION", 3)? {
        prim.positions = p.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
    }
    for set in 0..MAX_UV_SETS {
        if let Some(uv) = read(&format!("TEXCOORD_{set}"), 2)? {
            data.charge(points as u64 * 8, "a Draco UV set")?;
            prim.uvs[set] = Some(uv.chunks_exact(2).map(|c| [c[0], c[1]]).collect());
        }
    }
    // Drawing attributes, like the plain path: optional, left out when unreadable.
    let optional = |name: &str, comps: usize| read(name, comps).ok().flatten().filter(|v| v.len() == points * comps);
    prim.normals = optional("NORMAL", 3).map(|v| v.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect());
    prim.tangents = optional("TANGENT", 4).map(|v| v.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]).collect());
    // COLOR_0 when stored as floats or as normalised integers.
    let color = attrs.get("COLOR_0").and_then(|v| v.as_u64()).and_then(|id| out.attribute_by_unique_id(id as u32));
    if let Some(att) = color.filter(|a| a.data_type() == draco_core::DataType::Float32 || a.normalized()) {
        let comps = att.num_components() as usize;
        if comps == 3 || comps == 4 {
            let v = floats(att, points, comps);
            prim.colors =
                Some(v.chunks_exact(comps).map(|c| [c[0], c[1], c[2], if comps == 4 { c[3] } else { 1.0 }]).collect());
        }
    }
    let vc = prim.positions.len() as u64;
    prim.triangle_count = triangle_count;
    if faces_are_triangles {
        prim.triangles = out
            .faces()
            .iter()
            .map(|f| [f[0].0, f[1].0, f[2].0])
            .filter(|t| t.iter().all(|&v| (v as u64) < vc))
            .collect();
        prim.invalid_triangles = triangle_count - prim.triangles.len() as u64;
    } else {
        // Any other mode draws the decoded index list (a point cloud: the
        // points in order) as the plain path draws an accessor's: POINTS and
        // LINES no triangles, strips and fans assembled.
        let indices: Option<Vec<u32>> = (!point_cloud && triangle_count > 0)
            .then(|| out.faces().iter().flat_map(|f| [f[0].0, f[1].0, f[2].0]).collect());
        let (tris, dropped) = topology::assemble(prim.mode, indices.as_deref(), drawn, prim.positions.len());
        prim.triangles = tris;
        prim.invalid_triangles = dropped as u64;
    }
    prim.draco = true;
    Ok(())
}

/// An attribute's values as floats; integers that the stream marks as
/// normalised are mapped to [0, 1] (unsigned) or [-1, 1] (signed), as glTF
/// reads normalised accessors.
fn floats(att: &draco_core::PointAttribute, points: usize, comps: usize) -> Vec<f32> {
    use draco_core::DataType;
    let mut v = att.read_f32s(points, comps);
    if att.normalized() {
        let (max, signed) = match att.data_type() {
            DataType::Uint8 => (255.0, false),
            DataType::Int8 => (127.0, true),
            DataType::Uint16 => (65_535.0, false),
            DataType::Int16 => (32_767.0, true),
            DataType::Uint32 => (u32::MAX as f32, false),
            DataType::Int32 => (i32::MAX as f32, true),
            _ => return v,
        };
        for x in &mut v {
            *x /= max;
            if signed {
                *x = x.max(-1.0);
            }
        }
    }
    v
}
