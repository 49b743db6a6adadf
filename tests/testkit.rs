//! Test fixtures: build glTF 2.0 assets as bytes, in code.
//!
//! A module of the integration-test binary (`tests/tests.rs`) that the
//! benchmarks include too (`#[path = "../tests/testkit.rs"] mod testkit;`),
//! so tests and benches share one small way of producing well-formed (or
//! deliberately broken) glTF input without checking binary fixture files
//! into the repository. It is not part of the library's API.
//!
//! The model is a tiny in-memory scene description ([`Doc`], [`Mesh`],
//! [`Prim`], [`Node`], [`Material`], [`Texture`], [`Image`]) that can be
//! serialised as a GLB ([`Doc::to_glb`]), as a `.gltf` with an external
//! `.bin` and image files ([`Doc::to_gltf_files`]) or as a self-contained
//! `.gltf` with a base64 `data:` URI buffer ([`Doc::to_gltf_embedded`]).
//! [`Doc::to_json`] exposes the JSON and binary buffer separately so tests can
//! mutate the JSON and re-wrap it with [`glb_from_parts`].
//!
//! Shape generators ([`cube`], [`quad`], [`grid`], [`sphere`]) produce closed
//! or open meshes with counter-clockwise winding seen from outside and
//! outward normals; the [`Prim`] mutators introduce specific defects (flipped
//! triangles, holes, degenerate triangles, floating debris, missing UVs).
//! Image helpers ([`png`], [`png_header_only`], [`jpeg`]) and [`zip()`] cover
//! texture and bundle inputs.
//!
//! For ordinary inputs the output is valid according to the Khronos
//! glTF-Validator (no errors). Panics only occur on programmer error (for
//! example out-of-range triangle indices passed to a mutator).

use std::io::{Cursor, Write};
use std::ops::Range;

use base64::Engine as _;
use serde_json::{Map, Value, json};

/// glTF `componentType` for `UNSIGNED_SHORT`.
const COMPONENT_U16: u32 = 5123;
/// glTF `componentType` for `UNSIGNED_INT`.
const COMPONENT_U32: u32 = 5125;
/// glTF `componentType` for `FLOAT`.
const COMPONENT_F32: u32 = 5126;
/// bufferView `target` for vertex attributes (`ARRAY_BUFFER`).
const TARGET_ARRAY_BUFFER: u32 = 34962;
/// bufferView `target` for indices (`ELEMENT_ARRAY_BUFFER`).
const TARGET_ELEMENT_ARRAY_BUFFER: u32 = 34963;
/// Name of the GPU instancing extension written for [`Node::instances`].
const EXT_INSTANCING: &str = "EXT_mesh_gpu_instancing";

/// GLB magic (`glTF`, little-endian).
const GLB_MAGIC: u32 = 0x4654_6C67;
/// GLB chunk type of the JSON chunk (`JSON`).
const GLB_CHUNK_JSON: u32 = 0x4E4F_534A;
/// GLB chunk type of the binary chunk (`BIN\0`).
const GLB_CHUNK_BIN: u32 = 0x004E_4942;

// ---------------------------------------------------------------------------
// Scene model
// ---------------------------------------------------------------------------

/// One mesh primitive: vertex attributes, optional indices and a material.
///
/// All attribute arrays (`uvs[n]`, `normals`) must have the same length as
/// `positions` for the output to be valid; the shape generators and mutators
/// in this module maintain that invariant.
#[derive(Debug, Clone)]
pub struct Prim {
    /// `POSITION` attribute.
    pub positions: Vec<[f32; 3]>,
    /// Vertex indices; `None` writes a non-indexed primitive.
    pub indices: Option<Vec<u32>>,
    /// `TEXCOORD_0`, `TEXCOORD_1`, ... in that order.
    pub uvs: Vec<Vec<[f32; 2]>>,
    /// `NORMAL` attribute (unit vectors), if any.
    pub normals: Option<Vec<[f32; 3]>>,
    /// Index into [`Doc::materials`], if any.
    pub material: Option<usize>,
    /// glTF primitive `mode`; `4` (`TRIANGLES`) is the default and is not
    /// written explicitly.
    pub mode: u32,
}

impl Default for Prim {
    fn default() -> Self {
        Prim { positions: Vec::new(), indices: None, uvs: Vec::new(), normals: None, material: None, mode: 4 }
    }
}

/// A mesh: a list of primitives.
#[derive(Debug, Clone, Default)]
pub struct Mesh {
    /// The primitives of the mesh (glTF requires at least one).
    pub primitives: Vec<Prim>,
}

/// A translation / rotation / scale triple, used for GPU instances.
#[derive(Debug, Clone)]
pub struct Trs {
    /// Translation.
    pub translation: [f32; 3],
    /// Rotation as a unit quaternion `[x, y, z, w]`.
    pub rotation: [f32; 4],
    /// Non-uniform scale.
    pub scale: [f32; 3],
}

impl Default for Trs {
    /// The identity transform.
    fn default() -> Self {
        Trs { translation: [0.0; 3], rotation: [0.0, 0.0, 0.0, 1.0], scale: [1.0; 3] }
    }
}

/// A scene-graph node.
#[derive(Debug, Clone, Default)]
pub struct Node {
    /// Index into [`Doc::meshes`], if any.
    pub mesh: Option<usize>,
    /// Child node indices (omitted from the JSON when empty).
    pub children: Vec<usize>,
    /// Local translation.
    pub translation: Option<[f32; 3]>,
    /// Local rotation as a unit quaternion `[x, y, z, w]`.
    pub rotation: Option<[f32; 4]>,
    /// Local scale.
    pub scale: Option<[f32; 3]>,
    /// Local column-major 4x4 matrix (do not combine with TRS for valid
    /// output).
    pub matrix: Option<[f32; 16]>,
    /// GPU instances, written as `EXT_mesh_gpu_instancing` with `TRANSLATION`,
    /// `ROTATION` and `SCALE` float accessors; the extension is then listed
    /// in `extensionsUsed`. `Some` with an empty list writes nothing.
    pub instances: Option<Vec<Trs>>,
}

/// A material with optional base-colour and normal textures.
#[derive(Debug, Clone, Default)]
pub struct Material {
    /// Index into [`Doc::textures`] used as
    /// `pbrMetallicRoughness.baseColorTexture`.
    pub base_color_texture: Option<usize>,
    /// `texCoord` set index used by both texture references.
    pub tex_coord: u32,
    /// Index into [`Doc::textures`] used as `normalTexture`.
    pub normal_texture: Option<usize>,
}

/// A texture referencing an image (no sampler).
#[derive(Debug, Clone, Default)]
pub struct Texture {
    /// Index into [`Doc::images`].
    pub source: usize,
}

/// An image: encoded bytes plus MIME type.
#[derive(Debug, Clone, Default)]
pub struct Image {
    /// Encoded image file bytes (PNG, JPEG, ...).
    pub bytes: Vec<u8>,
    /// MIME type, e.g. `image/png`.
    pub mime: String,
    /// When `Some(name)`, the image is always written as an external file
    /// referenced by `"uri": name` (and [`Doc::to_gltf_files`] emits a file
    /// of that name). When `None`, the bytes are stored in a bufferView with
    /// `mimeType`.
    pub uri: Option<String>,
}

/// A whole glTF document: one scene whose root nodes are `scene_roots`.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    /// Meshes.
    pub meshes: Vec<Mesh>,
    /// Nodes.
    pub nodes: Vec<Node>,
    /// Root node indices of scene 0.
    pub scene_roots: Vec<usize>,
    /// Materials.
    pub materials: Vec<Material>,
    /// Textures.
    pub textures: Vec<Texture>,
    /// Images.
    pub images: Vec<Image>,
}

/// How the binary buffer (and buffer-backed images) are referenced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// GLB: the buffer has no `uri` and lives in the BIN chunk.
    Glb,
    /// `.gltf` + external binary file: the buffer's `uri` is this string.
    ExternalBin(String),
    /// Self-contained `.gltf`: the buffer is a base64
    /// `data:application/octet-stream;base64,...` URI.
    Embedded,
}

// ---------------------------------------------------------------------------
// Serialisation
// ---------------------------------------------------------------------------

/// Accumulates the binary buffer, bufferViews and accessors.
struct BufferBuilder {
    bin: Vec<u8>,
    views: Vec<Value>,
    accessors: Vec<Value>,
}

impl BufferBuilder {
    fn new() -> Self {
        BufferBuilder { bin: Vec::new(), views: Vec::new(), accessors: Vec::new() }
    }

    /// Pads the buffer with zeros to a multiple of four bytes.
    fn align(&mut self) {
        let padded = self.bin.len().next_multiple_of(4);
        self.bin.resize(padded, 0);
    }

    /// Appends a 4-byte aligned bufferView holding `bytes`; returns its index.
    fn push_view(&mut self, bytes: &[u8], target: Option<u32>) -> usize {
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
    fn push_float<const N: usize>(&mut self, data: &[[f32; N]], target: Option<u32>, with_bounds: bool) -> usize {
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
    fn push_indices(&mut self, indices: &[u32]) -> usize {
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

/// Inserts `key: array` into `obj` unless the array is empty.
fn insert_nonempty(obj: &mut Map<String, Value>, key: &str, items: Vec<Value>) {
    if !items.is_empty() {
        obj.insert(key.into(), Value::Array(items));
    }
}

impl Doc {
    /// A document with one mesh holding `prim`, one node instancing it and
    /// that node as the only scene root.
    pub fn single(prim: Prim) -> Doc {
        Doc {
            meshes: vec![Mesh { primitives: vec![prim] }],
            nodes: vec![Node { mesh: Some(0), ..Node::default() }],
            scene_roots: vec![0],
            ..Doc::default()
        }
    }

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

    /// Serialises the document as a binary GLB 2 container.
    pub fn to_glb(&self) -> Vec<u8> {
        let (json, bin) = self.to_json(Layout::Glb);
        glb_from_parts(&json, &bin)
    }

    /// Serialises the document as separate files: `{stem}.gltf` (pretty
    /// JSON), `{stem}.bin` (omitted when the buffer is empty) and one entry
    /// per image with a `uri` (named by that uri, holding the image bytes).
    ///
    /// `stem` may contain a directory part (`dir/model`); the buffer `uri`
    /// written into the JSON is then relative (`model.bin`). The stem should
    /// be URI-safe (no spaces or `%`).
    pub fn to_gltf_files(&self, stem: &str) -> Vec<(String, Vec<u8>)> {
        let base = stem.rsplit('/').next().unwrap_or(stem);
        let (json, bin) = self.to_json(Layout::ExternalBin(format!("{base}.bin")));
        let mut files = vec![(format!("{stem}.gltf"), format!("{json:#}").into_bytes())];
        if !bin.is_empty() {
            files.push((format!("{stem}.bin"), bin));
        }
        for img in &self.images {
            if let Some(uri) = &img.uri {
                files.push((uri.clone(), img.bytes.clone()));
            }
        }
        files
    }

    /// Serialises the document as one self-contained `.gltf` (pretty JSON)
    /// whose buffer is a base64 `data:` URI. Images that have a `uri` are
    /// still referenced externally.
    pub fn to_gltf_embedded(&self) -> Vec<u8> {
        let (json, _bin) = self.to_json(Layout::Embedded);
        format!("{json:#}").into_bytes()
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

/// Wraps arbitrary glTF JSON and binary buffer bytes into a GLB 2 container.
///
/// The JSON chunk is compact JSON padded with spaces to a multiple of four
/// bytes; the BIN chunk (omitted when `bin` is empty) is padded with zeros.
/// The JSON is written as given: it is not adjusted to match `bin`.
pub fn glb_from_parts(json: &Value, bin: &[u8]) -> Vec<u8> {
    let mut json_bytes = json.to_string().into_bytes();
    json_bytes.resize(json_bytes.len().next_multiple_of(4), b' ');
    let bin_padded = bin.len().next_multiple_of(4);
    let mut total = 12 + 8 + json_bytes.len();
    if !bin.is_empty() {
        total += 8 + bin_padded;
    }
    let total32 = u32::try_from(total).expect("GLB larger than 4 GiB");

    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&GLB_MAGIC.to_le_bytes());
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&total32.to_le_bytes());
    // Lossless: bounded by `total32`.
    out.extend_from_slice(&(json_bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(&GLB_CHUNK_JSON.to_le_bytes());
    out.extend_from_slice(&json_bytes);
    if !bin.is_empty() {
        out.extend_from_slice(&(bin_padded as u32).to_le_bytes());
        out.extend_from_slice(&GLB_CHUNK_BIN.to_le_bytes());
        out.extend_from_slice(bin);
        out.resize(total, 0);
    }
    out
}

/// Builds a zip archive holding `files` (name, bytes), deflate-compressed.
///
/// # Panics
///
/// On duplicate or otherwise invalid entry names (programmer error).
pub fn zip(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(files.iter().any(|(_, b)| b.len() >= u32::MAX as usize));
    for (name, bytes) in files {
        writer.start_file(name.as_str(), options).unwrap_or_else(|e| panic!("testkit::zip: cannot add {name:?}: {e}"));
        writer.write_all(bytes).unwrap_or_else(|e| panic!("testkit::zip: cannot write {name:?}: {e}"));
    }
    writer.finish().unwrap_or_else(|e| panic!("testkit::zip: cannot finish archive: {e}")).into_inner()
}

// ---------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------

fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Converts a vertex count to the `u32` index space.
fn index_of(i: usize) -> u32 {
    u32::try_from(i).expect("testkit: more than u32::MAX vertices")
}

/// An axis-aligned cube of edge `size` centred at the origin.
///
/// 24 vertices (4 per face, so normals are flat), 12 triangles, outward
/// normals, CCW winding seen from outside, and one UV set in which each face
/// occupies its own cell of a 3x2 grid over `[0, 1)` with a small margin.
pub fn cube(size: f32) -> Prim {
    let h = size / 2.0;
    // (normal, u axis, v axis) with u x v == normal.
    let faces: [([f32; 3], [f32; 3], [f32; 3]); 6] = [
        ([1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]),
        ([-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]),
        ([0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]),
        ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
        ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
        ([0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
    ];
    const MARGIN: f32 = 1.0 / 64.0;
    let mut p = Prim {
        positions: Vec::with_capacity(24),
        indices: Some(Vec::with_capacity(36)),
        uvs: vec![Vec::with_capacity(24)],
        normals: Some(Vec::with_capacity(24)),
        ..Prim::default()
    };
    for (f, (n, u, v)) in faces.iter().enumerate() {
        debug_assert_eq!(cross(*u, *v), *n);
        let (col, row) = ((f % 3) as f32, (f / 3) as f32);
        let (u0, u1) = (col / 3.0 + MARGIN, (col + 1.0) / 3.0 - MARGIN);
        let (v0, v1) = (row / 2.0 + MARGIN, (row + 1.0) / 2.0 - MARGIN);
        let base = index_of(p.positions.len());
        // Corners in CCW order around the face normal; image v points down.
        for (su, sv, uv) in [(-1.0, -1.0, [u0, v1]), (1.0, -1.0, [u1, v1]), (1.0, 1.0, [u1, v0]), (-1.0, 1.0, [u0, v0])]
        {
            p.positions.push(std::array::from_fn(|i| h * (n[i] + su * u[i] + sv * v[i])));
            p.uvs[0].push(uv);
            p.normals.as_mut().expect("set above").push(*n);
        }
        p.indices.as_mut().expect("set above").extend_from_slice(&[base, base + 1, base + 2, base, base + 2, base + 3]);
    }
    p
}

/// A square of edge `size` in the XY plane centred at the origin, facing +Z:
/// 4 vertices, 2 triangles, normals and UVs covering `[0, 1]`.
pub fn quad(size: f32) -> Prim {
    let h = size / 2.0;
    Prim {
        positions: vec![[-h, -h, 0.0], [h, -h, 0.0], [h, h, 0.0], [-h, h, 0.0]],
        indices: Some(vec![0, 1, 2, 0, 2, 3]),
        uvs: vec![vec![[0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]],
        normals: Some(vec![[0.0, 0.0, 1.0]; 4]),
        ..Prim::default()
    }
}

/// An `n` x `n` grid of quads of total edge `size` in the XZ plane, centred
/// at the origin and facing +Y: `(n+1)^2` vertices, `2*n*n` triangles,
/// normals and UVs covering `[0, 1]`.
///
/// # Panics
///
/// If `n` is zero.
pub fn grid(n: u32, size: f32) -> Prim {
    assert!(n >= 1, "testkit::grid: n must be at least 1");
    let h = size / 2.0;
    let side = n as usize + 1;
    let count = side * side;
    let _ = index_of(count);
    let mut positions = Vec::with_capacity(count);
    let mut uvs = Vec::with_capacity(count);
    for i in 0..=n {
        for j in 0..=n {
            let (fi, fj) = (i as f32 / n as f32, j as f32 / n as f32);
            positions.push([-h + size * fi, 0.0, -h + size * fj]);
            uvs.push([fi, fj]);
        }
    }
    let mut indices = Vec::with_capacity(6 * (n as usize) * (n as usize));
    let side = n + 1;
    for i in 0..n {
        for j in 0..n {
            let a = i * side + j;
            let b = a + 1; // +Z
            let c = b + side; // +X +Z
            let d = a + side; // +X
            indices.extend_from_slice(&[a, b, c, a, c, d]);
        }
    }
    Prim {
        positions,
        indices: Some(indices),
        uvs: vec![uvs],
        normals: Some(vec![[0.0, 1.0, 0.0]; count]),
        ..Prim::default()
    }
}

/// A UV sphere of `radius` centred at the origin with `segments` meridian
/// divisions and `rings` latitude bands.
///
/// Each pole is a single vertex shared by its cap fan; the other `rings - 1`
/// latitude rings have `segments + 1` vertices (the seam is duplicated for
/// UVs). Produces `2 * segments * (rings - 1)` triangles with outward normals
/// and CCW winding seen from outside.
///
/// # Panics
///
/// If `segments < 3`, `rings < 2`, or the vertex count exceeds `u32`.
pub fn sphere(segments: u32, rings: u32, radius: f32) -> Prim {
    assert!(segments >= 3, "testkit::sphere: segments must be at least 3");
    assert!(rings >= 2, "testkit::sphere: rings must be at least 2");
    let row = segments as usize + 1;
    let inner = rings as usize - 1;
    let count = 2 + inner * row;
    let _ = index_of(count);

    let mut positions = Vec::with_capacity(count);
    let mut normals = Vec::with_capacity(count);
    let mut uvs = Vec::with_capacity(count);

    // Unit direction for polar angle theta (from +Y) and azimuth phi; the
    // minus sign on Z makes (d/dtheta x d/dphi) point outward.
    let trig: Vec<(f64, f64)> = (0..=segments)
        .map(|s| {
            let phi = std::f64::consts::TAU * f64::from(s) / f64::from(segments);
            (phi.cos(), phi.sin())
        })
        .collect();
    let mut push = |n: [f64; 3], uv: [f32; 2]| {
        let n = n.map(|c| c as f32);
        positions.push(n.map(|c| c * radius));
        normals.push(n);
        uvs.push(uv);
    };
    push([0.0, 1.0, 0.0], [0.5, 0.0]);
    for k in 1..rings {
        let theta = std::f64::consts::PI * f64::from(k) / f64::from(rings);
        let (st, ct) = theta.sin_cos();
        let v = k as f32 / rings as f32;
        for (s, &(cp, sp)) in trig.iter().enumerate() {
            push([st * cp, ct, -st * sp], [s as f32 / segments as f32, v]);
        }
    }
    push([0.0, -1.0, 0.0], [0.5, 1.0]);

    let tris = 2 * segments as usize * inner;
    let mut indices = Vec::with_capacity(tris * 3);
    let north = 0u32;
    let south = index_of(count - 1);
    let ring = |k: u32, s: u32| 1 + (k - 1) * (segments + 1) + s;
    for s in 0..segments {
        indices.extend_from_slice(&[north, ring(1, s), ring(1, s + 1)]);
    }
    for k in 1..rings - 1 {
        for s in 0..segments {
            let a = ring(k, s);
            let b = ring(k + 1, s);
            let c = ring(k + 1, s + 1);
            let d = ring(k, s + 1);
            indices.extend_from_slice(&[a, b, c, a, c, d]);
        }
    }
    for s in 0..segments {
        indices.extend_from_slice(&[ring(rings - 1, s), south, ring(rings - 1, s + 1)]);
    }
    debug_assert_eq!(indices.len(), tris * 3);

    Prim { positions, indices: Some(indices), uvs: vec![uvs], normals: Some(normals), ..Prim::default() }
}

// ---------------------------------------------------------------------------
// Prim mutators
// ---------------------------------------------------------------------------

impl Prim {
    /// Number of triangles (assuming `TRIANGLES` mode).
    pub fn triangle_count(&self) -> usize {
        match &self.indices {
            Some(i) => i.len() / 3,
            None => self.positions.len() / 3,
        }
    }

    /// Makes the primitive indexed (`0..n`) if it is not already; the
    /// geometry is unchanged.
    pub fn ensure_indexed(&mut self) {
        if self.indices.is_none() {
            let n = index_of(self.positions.len());
            self.indices = Some((0..n).collect());
        }
    }

    /// Mutable access to the indices, creating them first if needed.
    fn indices_mut(&mut self) -> &mut Vec<u32> {
        self.ensure_indexed();
        self.indices.get_or_insert_with(Vec::new)
    }

    /// Reverses the winding of triangles `range` (triangle indices, not
    /// index offsets). A non-indexed primitive is made indexed first.
    ///
    /// # Panics
    ///
    /// If the range exceeds the triangle count.
    pub fn flip_triangles(&mut self, range: Range<usize>) {
        let indices = self.indices_mut();
        let tris = &mut indices[range.start * 3..range.end * 3];
        for tri in tris.chunks_exact_mut(3) {
            tri.swap(1, 2);
        }
    }

    /// Removes triangle `i`, punching a hole in a closed surface. For a
    /// non-indexed primitive its three vertices (and their attributes) are
    /// removed.
    ///
    /// # Panics
    ///
    /// If `i` is not a valid triangle index.
    pub fn remove_triangle(&mut self, i: usize) {
        let span = i * 3..i * 3 + 3;
        match &mut self.indices {
            Some(indices) => {
                assert!(span.end <= indices.len(), "no triangle {i}");
                indices.drain(span);
            }
            None => {
                assert!(span.end <= self.positions.len(), "no triangle {i}");
                self.positions.drain(span.clone());
                for uv in &mut self.uvs {
                    uv.drain(span.clone());
                }
                if let Some(n) = &mut self.normals {
                    n.drain(span);
                }
            }
        }
    }

    /// Appends a degenerate triangle (one that repeats an index) built from
    /// existing vertices. A non-indexed primitive is made indexed first.
    ///
    /// # Panics
    ///
    /// If the primitive has no vertices.
    pub fn add_degenerate(&mut self) {
        let n = self.positions.len();
        assert!(n > 0, "testkit: add_degenerate needs at least one vertex");
        let other = index_of(n.min(2) - 1);
        self.indices_mut().extend_from_slice(&[0, 0, other]);
    }

    /// Appends a small closed tetrahedron (4 new vertices, 4 triangles,
    /// outward CCW winding) of roughly `size` extent centred at `offset`,
    /// disconnected from the rest of the mesh. UV sets and normals, when
    /// present, are extended to match. A non-indexed primitive is made
    /// indexed first.
    pub fn add_debris(&mut self, offset: [f32; 3], size: f32) {
        let corners: [[f32; 3]; 4] = [[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]];
        let h = size / 2.0;
        let verts = corners.map(|c| std::array::from_fn(|i| offset[i] + h * c[i]));
        let base = index_of(self.positions.len());
        let _ = index_of(self.positions.len() + 4);
        let mut tris: [[u32; 3]; 4] = [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]];
        for (t, opposite) in tris.iter_mut().zip([3usize, 2, 1, 0]) {
            // Orient each face away from the vertex not on it.
            let [a, b, c] = t.map(|i| corners[i as usize]);
            let n = cross(sub(b, a), sub(c, a));
            if dot(n, sub(a, corners[opposite])) < 0.0 {
                t.swap(1, 2);
            }
        }
        let indices = self.indices_mut();
        for t in tris {
            indices.extend(t.map(|i| base + i));
        }
        self.positions.extend_from_slice(&verts);
        let inv = 1.0 / 3f32.sqrt();
        if let Some(n) = &mut self.normals {
            n.extend(corners.map(|c| c.map(|x| x * inv)));
        }
        for uv in &mut self.uvs {
            uv.extend_from_slice(&[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]);
        }
    }

    /// Removes every UV set.
    pub fn drop_uvs(&mut self) {
        self.uvs.clear();
    }

    /// Translates all positions by `d`.
    pub fn translate(&mut self, d: [f32; 3]) {
        for p in &mut self.positions {
            for i in 0..3 {
                p[i] += d[i];
            }
        }
    }

    /// Scales all positions uniformly by `s` about the origin. Normals are
    /// left unchanged (they stay correct for `s > 0`).
    pub fn scale(&mut self, s: f32) {
        for p in &mut self.positions {
            for c in p.iter_mut() {
                *c *= s;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------

/// A simple deterministic RGBA pattern: 8x8 checkerboard over a gradient.
fn pattern(x: u32, y: u32, w: u32, h: u32) -> [u8; 4] {
    let checker = ((x / 8) + (y / 8)).is_multiple_of(2);
    let r = (u64::from(x) * 255 / u64::from(w.max(1))) as u8;
    let g = (u64::from(y) * 255 / u64::from(h.max(1))) as u8;
    let b = if checker { 200 } else { 40 };
    [r, g, b, 255]
}

/// A real, decodable RGBA8 PNG of `w` x `h` pixels with a simple pattern.
///
/// # Panics
///
/// If `w` or `h` is zero.
pub fn png(w: u32, h: u32) -> Vec<u8> {
    use image::ImageEncoder as _;
    assert!(w > 0 && h > 0, "testkit::png: empty image");
    let img = image::RgbaImage::from_fn(w, h, |x, y| image::Rgba(pattern(x, y, w, h)));
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(img.as_raw(), w, h, image::ExtendedColorType::Rgba8)
        .unwrap_or_else(|e| panic!("testkit::png: encoding failed: {e}"));
    out
}

/// A real, decodable RGB JPEG of `w` x `h` pixels with a simple pattern.
///
/// # Panics
///
/// If `w` or `h` is zero or larger than 65535.
pub fn jpeg(w: u32, h: u32) -> Vec<u8> {
    use image::ImageEncoder as _;
    assert!(w > 0 && h > 0, "testkit::jpeg: empty image");
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        let [r, g, b, _] = pattern(x, y, w, h);
        image::Rgb([r, g, b])
    });
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90)
        .write_image(img.as_raw(), w, h, image::ExtendedColorType::Rgb8)
        .unwrap_or_else(|e| panic!("testkit::jpeg: encoding failed: {e}"));
    out
}

/// A PNG that consists of only the signature, an IHDR chunk claiming
/// `w` x `h` RGBA8 (8-bit, colour type 6, non-interlaced), an empty IDAT and
/// IEND, with correct CRCs. Its header reads back as `w` x `h` but it cannot be decoded
/// (there is no image data), which makes it cheap to test huge claimed
/// dimensions.
pub fn png_header_only(w: u32, h: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 25 + 12 + 12);
    out.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    png_chunk(&mut out, b"IHDR", &ihdr);
    // An (empty) IDAT is needed: decoders only report the header once they
    // reach the image data, and reject files without any.
    png_chunk(&mut out, b"IDAT", &[]);
    png_chunk(&mut out, b"IEND", &[]);
    out
}

/// Appends one PNG chunk (length, type, data, CRC over type and data).
fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&index_of(data.len()).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// CRC-32 (IEEE 802.3, reflected, as used by PNG and zip), bitwise.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    /// Splits a GLB into (JSON, optional BIN), checking the container.
    fn parse_glb(glb: &[u8]) -> (Value, Option<Vec<u8>>) {
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
    fn read_floats<const N: usize>(json: &Value, bin: &[u8], acc: usize) -> Vec<[f32; N]> {
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
    fn assert_outward(p: &Prim) {
        let idx = p.indices.as_ref().unwrap();
        for t in idx.chunks_exact(3) {
            let [a, b, c] = [0, 1, 2].map(|k| p.positions[t[k] as usize]);
            let n = cross(sub(b, a), sub(c, a));
            let centroid: [f32; 3] = std::array::from_fn(|i| (a[i] + b[i] + c[i]) / 3.0);
            assert!(dot(n, centroid) > 0.0, "inward triangle {t:?}");
        }
    }

    fn assert_consistent(p: &Prim) {
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

    #[test]
    fn crc32_known_vectors() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b"IEND"), 0xAE42_6082);
    }

    #[test]
    fn cube_shape() {
        let c = cube(2.0);
        assert_eq!(c.positions.len(), 24);
        assert_eq!(c.indices.as_ref().unwrap().len(), 36);
        assert_eq!(c.triangle_count(), 12);
        assert_consistent(&c);
        assert_outward(&c);
        // Vertex normals agree with face orientation.
        for t in c.indices.as_ref().unwrap().chunks_exact(3) {
            let [a, b, cc] = [0, 1, 2].map(|k| c.positions[t[k] as usize]);
            let n = cross(sub(b, a), sub(cc, a));
            assert!(dot(n, c.normals.as_ref().unwrap()[t[0] as usize]) > 0.0);
        }
        for p in &c.positions {
            assert!(p.iter().all(|x| x.abs() == 1.0));
        }
        // Each face's UVs lie in their own 3x2 cell.
        let uv = &c.uvs[0];
        let cells: Vec<(u32, u32)> = (0..6)
            .map(|f| {
                let q = &uv[f * 4..f * 4 + 4];
                let cell = ((q[0][0] * 3.0) as u32, (q[0][1] * 2.0) as u32);
                for v in q {
                    assert!(v[0] > 0.0 && v[0] < 1.0 && v[1] > 0.0 && v[1] < 1.0);
                    assert_eq!(cell, ((v[0] * 3.0) as u32, (v[1] * 2.0) as u32));
                }
                cell
            })
            .collect();
        let mut unique = cells.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 6);
    }

    #[test]
    fn quad_and_grid_shapes() {
        let q = quad(2.0);
        assert_eq!(q.positions.len(), 4);
        assert_eq!(q.triangle_count(), 2);
        assert_consistent(&q);
        for t in q.indices.as_ref().unwrap().chunks_exact(3) {
            let [a, b, c] = [0, 1, 2].map(|k| q.positions[t[k] as usize]);
            assert!(cross(sub(b, a), sub(c, a))[2] > 0.0);
        }

        let g = grid(5, 10.0);
        assert_eq!(g.positions.len(), 36);
        assert_eq!(g.triangle_count(), 50);
        assert_consistent(&g);
        for t in g.indices.as_ref().unwrap().chunks_exact(3) {
            let [a, b, c] = [0, 1, 2].map(|k| g.positions[t[k] as usize]);
            assert!(cross(sub(b, a), sub(c, a))[1] > 0.0);
        }
        let xs: Vec<f32> = g.positions.iter().map(|p| p[0]).collect();
        assert_eq!(xs.iter().cloned().fold(f32::INFINITY, f32::min), -5.0);
        assert_eq!(xs.iter().cloned().fold(f32::NEG_INFINITY, f32::max), 5.0);
    }

    #[test]
    fn sphere_shape() {
        for (s, r) in [(3, 2), (8, 4), (32, 17)] {
            let p = sphere(s, r, 1.5);
            assert_eq!(p.triangle_count(), 2 * s as usize * (r as usize - 1));
            assert_eq!(p.positions.len(), 2 + (r as usize - 1) * (s as usize + 1));
            assert_consistent(&p);
            assert_outward(&p);
            for v in &p.positions {
                assert!((dot(*v, *v).sqrt() - 1.5).abs() < 1e-4);
            }
        }
        let big = sphere(1000, 501, 1.0);
        assert_eq!(big.triangle_count(), 1_000_000);
    }

    #[test]
    fn mutators_keep_attributes_consistent() {
        let mut c = cube(1.0);
        c.flip_triangles(0..2);
        assert_eq!(&c.indices.as_ref().unwrap()[0..3], &[0, 2, 1]);
        c.remove_triangle(11);
        assert_eq!(c.triangle_count(), 11);
        c.add_degenerate();
        assert_eq!(c.triangle_count(), 12);
        let last = &c.indices.as_ref().unwrap()[33..36];
        assert!(last[0] == last[1] || last[1] == last[2] || last[0] == last[2]);
        c.add_debris([5.0, 0.0, 0.0], 0.1);
        assert_eq!(c.positions.len(), 28);
        assert_eq!(c.triangle_count(), 16);
        assert_consistent(&c);

        // Debris on its own is an outward-wound closed tetrahedron.
        let mut t = Prim::default();
        t.add_debris([0.0; 3], 1.0);
        assert_eq!(t.triangle_count(), 4);
        assert_outward(&t);
        let mut edges: Vec<(u32, u32)> = t
            .indices
            .as_ref()
            .unwrap()
            .chunks_exact(3)
            .flat_map(|tri| [(tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])])
            .collect();
        edges.sort();
        for &(a, b) in &edges {
            assert!(edges.binary_search(&(b, a)).is_ok(), "open edge {a}-{b}");
        }

        // Non-indexed primitives.
        let mut n = Prim {
            positions: [[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]].repeat(2),
            uvs: vec![vec![[0.0; 2]; 6]],
            ..Prim::default()
        };
        n.remove_triangle(0);
        assert_eq!(n.positions.len(), 3);
        assert_consistent(&n);
        n.flip_triangles(0..1);
        assert_eq!(n.indices.as_deref(), Some(&[0, 2, 1][..]));

        let mut m = quad(2.0);
        m.translate([1.0, 2.0, 3.0]);
        m.scale(2.0);
        assert_eq!(m.positions[0], [0.0, 2.0, 6.0]);
        m.drop_uvs();
        assert!(m.uvs.is_empty());
    }

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

    #[test]
    fn empty_doc_has_no_bin_chunk() {
        let glb = Doc::default().to_glb();
        let (json, bin) = parse_glb(&glb);
        assert!(bin.is_none());
        assert!(json.get("buffers").is_none());
        assert!(json.get("bufferViews").is_none());
        assert!(json.get("nodes").is_none());
        assert_eq!(json["scenes"], json!([{}]));
    }

    #[test]
    fn glb_from_parts_pads() {
        let glb = glb_from_parts(&json!({"a": 1}), &[1, 2, 3, 4, 5]);
        let (json, bin) = parse_glb(&glb);
        assert_eq!(json, json!({"a": 1}));
        assert_eq!(bin.unwrap(), vec![1, 2, 3, 4, 5, 0, 0, 0]);
        // JSON padding is spaces.
        let json_len = u32_at(&glb, 12) as usize;
        assert_eq!(glb[20 + json_len - 1], b' ');
    }

    fn textured_doc() -> Doc {
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

    #[test]
    fn gltf_files_names() {
        let doc = textured_doc();
        let files = doc.to_gltf_files("out/model");
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["out/model.gltf", "out/model.bin", "normal.jpg"]);
        let json: Value = serde_json::from_slice(&files[0].1).unwrap();
        assert_eq!(json["buffers"][0]["uri"], "model.bin");
        assert_eq!(json["buffers"][0]["byteLength"].as_u64().unwrap() as usize, files[1].1.len());
        assert_eq!(files[2].1, doc.images[1].bytes);

        let plain = Doc::single(quad(1.0)).to_gltf_files("q");
        let names: Vec<&str> = plain.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["q.gltf", "q.bin"]);
    }

    #[test]
    fn embedded_round_trips() {
        let doc = Doc::single(cube(1.0));
        let bytes = doc.to_gltf_embedded();
        let json: Value = serde_json::from_slice(&bytes).unwrap();
        let uri = json["buffers"][0]["uri"].as_str().unwrap();
        let b64 = uri.strip_prefix("data:application/octet-stream;base64,").unwrap();
        let bin = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
        let (_, expected) = doc.to_json(Layout::Glb);
        assert_eq!(bin, expected);
        assert_eq!(json["buffers"][0]["byteLength"].as_u64().unwrap() as usize, bin.len());
    }

    #[test]
    fn png_decodes() {
        let bytes = png(17, 9);
        let img = image::load_from_memory(&bytes).unwrap();
        assert_eq!((img.width(), img.height()), (17, 9));
        assert_eq!(img.color(), image::ColorType::Rgba8);
    }

    #[test]
    fn jpeg_decodes() {
        let bytes = jpeg(16, 24);
        assert_eq!(image::guess_format(&bytes).unwrap(), image::ImageFormat::Jpeg);
        let img = image::load_from_memory(&bytes).unwrap();
        assert_eq!((img.width(), img.height()), (16, 24));
    }

    #[test]
    fn png_header_only_dimensions() -> Result<(), Box<dyn std::error::Error>> {
        let bytes = png_header_only(100_000, 70_000);
        let dims = image::ImageReader::new(Cursor::new(&bytes)).with_guessed_format()?.into_dimensions()?;
        assert_eq!(dims, (100_000, 70_000));
        assert!(image::load_from_memory(&bytes).is_err());
        Ok(())
    }

    #[test]
    fn zip_round_trips() {
        let files = vec![("a.gltf".to_string(), b"{}".to_vec()), ("dir/b.bin".to_string(), vec![7u8; 10_000])];
        let bytes = zip(&files);
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        assert_eq!(archive.len(), 2);
        for (name, data) in &files {
            let mut entry = archive.by_name(name).unwrap();
            assert_eq!(entry.compression(), zip::CompressionMethod::Deflated);
            let mut read = Vec::new();
            entry.read_to_end(&mut read).unwrap();
            assert_eq!(&read, data);
        }
    }
}
