//! The scene model of the code-built assets: a tiny in-memory glTF document
//! ([`Doc`]: meshes of primitives, nodes, materials, textures, images) and
//! how its buffer is referenced ([`Layout`]). `gltf.rs` writes it as JSON,
//! `containers.rs` as GLB, `.gltf` files or a zip.

/// One mesh primitive: vertex attributes, optional indices and a material.
///
/// All attribute arrays (`uvs[n]`, `normals`) must have the same length as
/// `positions` for the output to be valid; the shape generators
/// (`shapes.rs`) and the defects (`defects.rs`) keep it.
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
}
