//! The binary side of a written document: the buffer, its bufferViews and
//! accessors ([`BufferBuilder`]), with the glTF component and target
//! constants. Every accessor gets its own 4-byte aligned view.

use serde_json::{Map, Value, json};

/// glTF `componentType` for `UNSIGNED_SHORT`.
pub(super) const COMPONENT_U16: u32 = 5123;
/// glTF `componentType` for `UNSIGNED_INT`.
pub(super) const COMPONENT_U32: u32 = 5125;
/// glTF `componentType` for `FLOAT`.
pub(super) const COMPONENT_F32: u32 = 5126;
/// bufferView `target` for vertex attributes (`ARRAY_BUFFER`).
pub(super) const TARGET_ARRAY_BUFFER: u32 = 34962;
/// bufferView `target` for indices (`ELEMENT_ARRAY_BUFFER`).
pub(super) const TARGET_ELEMENT_ARRAY_BUFFER: u32 = 34963;

/// Accumulates the binary buffer, bufferViews and accessors.
pub(super) struct BufferBuilder {
    /// The buffer's bytes.
    pub(super) bin: Vec<u8>,
    /// The bufferViews written so far.
    pub(super) views: Vec<Value>,
    /// The accessors written so far.
    pub(super) accessors: Vec<Value>,
}

impl BufferBuilder {
    pub(super) fn new() -> Self {
        BufferBuilder { bin: Vec::new(), views: Vec::new(), accessors: Vec::new() }
    }

    /// Pads the buffer with zeros to a multiple of four bytes.
    pub(super) fn align(&mut self) {
        let padded = self.bin.len().next_multiple_of(4);
        self.bin.resize(padded, 0);
    }

    /// Appends a 4-byte aligned bufferView holding `bytes`; returns its index.
    pub(super) fn push_view(&mut self, bytes: &[u8], target: Option<u32>) -> usize {
        self.align();
        let mut view = Map::new();
        view.insert("buffer".into(), json!(0));
        if !self.bin.is_empty() {
            view.insert("byteOffset".into(), json!(self.bin.len()));
        }
        view.insert("byteLength".into(), json!(bytes.len()));
        if let Some(target) = target {
            view.insert("target".into(), json!(target));
        }
        self.bin.extend_from_slice(bytes);
        self.views.push(Value::Object(view));
        self.views.len() - 1
    }

    /// Appends a FLOAT accessor (with its own bufferView) of `N` components.
    /// When `with_bounds` is set, per-component `min`/`max` are written.
    pub(super) fn push_float<const N: usize>(
        &mut self,
        data: &[[f32; N]],
        target: Option<u32>,
        with_bounds: bool,
    ) -> usize {
        let mut bytes = Vec::with_capacity(data.len() * N * 4);
        for v in data {
            for c in v {
                bytes.extend_from_slice(&c.to_le_bytes());
            }
        }
        let view = self.push_view(&bytes, target);
        let mut acc = Map::new();
        acc.insert("bufferView".into(), json!(view));
        acc.insert("componentType".into(), json!(COMPONENT_F32));
        acc.insert("count".into(), json!(data.len()));
        acc.insert("type".into(), json!(accessor_type(N)));
        if with_bounds && !data.is_empty() {
            let mut min = [f32::INFINITY; N];
            let mut max = [f32::NEG_INFINITY; N];
            for v in data {
                for i in 0..N {
                    min[i] = min[i].min(v[i]);
                    max[i] = max[i].max(v[i]);
                }
            }
            acc.insert("min".into(), json!(min.to_vec()));
            acc.insert("max".into(), json!(max.to_vec()));
        }
        self.accessors.push(Value::Object(acc));
        self.accessors.len() - 1
    }

    /// Appends a SCALAR index accessor: `UNSIGNED_SHORT` when every index is
    /// below 65535 (the primitive-restart value), `UNSIGNED_INT` otherwise.
    pub(super) fn push_indices(&mut self, indices: &[u32]) -> usize {
        let short = indices.iter().all(|&i| i < 65535);
        let (bytes, component) = if short {
            let mut bytes = Vec::with_capacity(indices.len() * 2);
            for &i in indices {
                // Lossless: checked above.
                bytes.extend_from_slice(&(i as u16).to_le_bytes());
            }
            (bytes, COMPONENT_U16)
        } else {
            let mut bytes = Vec::with_capacity(indices.len() * 4);
            for &i in indices {
                bytes.extend_from_slice(&i.to_le_bytes());
            }
            (bytes, COMPONENT_U32)
        };
        let view = self.push_view(&bytes, Some(TARGET_ELEMENT_ARRAY_BUFFER));
        self.accessors.push(json!({
            "bufferView": view,
            "componentType": component,
            "count": indices.len(),
            "type": "SCALAR",
        }));
        self.accessors.len() - 1
    }
}

/// glTF accessor `type` for a float vector of `n` components.
fn accessor_type(n: usize) -> &'static str {
    match n {
        1 => "SCALAR",
        2 => "VEC2",
        3 => "VEC3",
        4 => "VEC4",
        16 => "MAT4",
        _ => unreachable!("no accessor type with {n} components is used"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::scene::{Doc, Layout};
    use super::super::shapes::{grid, quad};
    use super::*;

    #[test]
    fn large_indices_use_u32() {
        let g = grid(300, 1.0); // 90601 vertices
        let (json, _) = Doc::single(g).to_json(Layout::Glb);
        let prim = &json["meshes"][0]["primitives"][0];
        let idx = &json["accessors"][prim["indices"].as_u64().unwrap() as usize];
        assert_eq!(idx["componentType"], COMPONENT_U32);
    }

    #[test]
    fn odd_u16_index_count_stays_aligned() {
        let mut q = quad(1.0);
        q.remove_triangle(1);
        q.indices.as_mut().unwrap().truncate(3);
        let mut doc = Doc::single(q.clone());
        doc.meshes[0].primitives.push(q);
        let (json, bin) = doc.to_json(Layout::Glb);
        assert_eq!(bin.len() % 4, 0);
        for v in json["bufferViews"].as_array().unwrap() {
            assert_eq!(v["byteOffset"].as_u64().unwrap_or(0) % 4, 0);
        }
    }
}
