//! Buffers, buffer views and accessors: the bytes behind a glTF document.
//!
//! Nothing here trusts the document. Every view is checked against its
//! buffer's real bytes, every accessor against its view, and every decoded
//! size (sparse-only accessors, meshopt views, Draco streams) is charged to a
//! per-file budget before memory is allocated, so a file that claims more
//! than it holds is MALFORMED_GLTF rather than a panic or a huge allocation.

use crate::error::{Error, Result};
use gltf::json::Root;
use gltf::json::validation::Checked;
use std::cell::{Cell, OnceCell};
use std::collections::BTreeMap;

/// One buffer's bytes, or why there are none.
#[derive(Debug)]
pub enum BufferData<'a> {
    /// The bytes (the GLB BIN chunk, a data: URI, or an external file).
    Loaded(std::borrow::Cow<'a, [u8]>),
    /// An EXT_meshopt_compression fallback buffer: no bytes by design.
    Fallback,
    /// Missing: the reason, and whether it is an external resource (a bundle
    /// that lacks it is incomplete) or a document fault.
    Missing {
        /// Why.
        reason: String,
        /// True when an external file could not be had.
        external: bool,
    },
}

/// Accessor component types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// i8
    I8,
    /// u8
    U8,
    /// i16
    I16,
    /// u16
    U16,
    /// u32
    U32,
    /// f32
    F32,
}

impl Component {
    fn from_gl(v: u32) -> Option<Component> {
        Some(match v {
            5120 => Component::I8,
            5121 => Component::U8,
            5122 => Component::I16,
            5123 => Component::U16,
            5125 => Component::U32,
            5126 => Component::F32,
            _ => return None,
        })
    }
    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            Component::I8 | Component::U8 => 1,
            Component::I16 | Component::U16 => 2,
            Component::U32 | Component::F32 => 4,
        }
    }
}

/// The bytes of a document, with lazily decoded compressed views.
pub struct DocData<'a> {
    /// The document.
    pub root: &'a Root,
    /// Per buffer.
    pub buffers: Vec<BufferData<'a>>,
    decoded_views: Vec<OnceCell<std::result::Result<Vec<u8>, Error>>>,
    budget: Cell<u64>,
    total: u64,
    unreadable: BTreeMap<String, String>,
}

fn accessor_ptr(i: usize) -> serde_json::Value {
    serde_json::json!({ "pointer": format!("/accessors/{i}") })
}

fn ext_value<'v>(
    others: Option<&'v serde_json::Map<String, serde_json::Value>>,
    name: &str,
) -> Option<&'v serde_json::Value> {
    others.and_then(|m| m.get(name))
}

impl<'a> DocData<'a> {
    /// Wraps loaded buffers with a decode budget in bytes.
    pub fn new(root: &'a Root, buffers: Vec<BufferData<'a>>, budget: u64) -> Self {
        let decoded_views = (0..root.buffer_views.len()).map(|_| OnceCell::new()).collect();
        DocData { root, buffers, decoded_views, budget: Cell::new(budget), total: budget, unreadable: BTreeMap::new() }
    }

    /// Objects the lenient JSON reader could not read (JSON pointer to
    /// reason; see `asset::json`): reading one is an error naming it.
    pub fn with_unreadable(mut self, unreadable: BTreeMap<String, String>) -> Self {
        self.unreadable = unreadable;
        self
    }

    /// Why the object at the JSON pointer `pointer()` names could not be read
    /// as JSON, if it could not (the pointer is formatted only when the
    /// document has unreadable objects at all).
    pub fn unreadable(&self, pointer: impl FnOnce() -> String) -> Option<&str> {
        if self.unreadable.is_empty() {
            return None;
        }
        self.unreadable.get(&pointer()).map(String::as_str)
    }

    /// An error when `/{collection}/{index}` could not be read as JSON.
    pub fn readable(&self, collection: &str, index: usize) -> Result<()> {
        let pointer = || format!("/{collection}/{index}");
        match self.unreadable(pointer) {
            Some(why) => Err(Error::malformed(format!("{} cannot be read: {why}", pointer()))
                .with_detail(serde_json::json!({ "pointer": pointer() }))),
            None => Ok(()),
        }
    }

    /// Takes `bytes` from the decode budget, or fails with MALFORMED_GLTF.
    pub fn charge(&self, bytes: u64, what: &str) -> Result<()> {
        self.charge_with(bytes, || what.to_string())
    }

    /// [`DocData::charge`], naming what is charged only when it is refused
    /// (for charges made once per drawn primitive).
    pub fn charge_with(&self, bytes: u64, what: impl FnOnce() -> String) -> Result<()> {
        let left = self.budget.get();
        if bytes > left {
            let what = what();
            return Err(Error::malformed(format!(
                "{what} would decode {bytes} bytes, more than this file can plausibly hold ({left} bytes left of its decode budget)"
            ))
            .with_detail(serde_json::json!({ "limit": "decode_budget" })));
        }
        self.budget.set(left - bytes);
        Ok(())
    }

    /// What remains of the decode budget.
    pub fn budget_left(&self) -> u64 {
        self.budget.get()
    }

    /// The whole decode budget this document was given.
    pub fn budget_total(&self) -> u64 {
        self.total
    }

    /// A buffer's bytes.
    pub fn buffer(&self, index: usize) -> Result<&[u8]> {
        self.readable("buffers", index)?;
        match self.buffers.get(index) {
            Some(BufferData::Loaded(b)) => Ok(b),
            Some(BufferData::Fallback) => Err(Error::malformed(format!(
                "buffer {index} is a meshopt fallback buffer with no data, but a plain bufferView reads it"
            ))),
            Some(BufferData::Missing { reason, external: true }) => {
                Err(Error::incomplete(format!("buffer {index} is missing: {reason}"))
                    .with_detail(serde_json::json!({"pointer": format!("/buffers/{index}"), "reason": reason}))
                    .with_help("put the .bin file next to the .gltf (or inside the zip bundle)"))
            }
            Some(BufferData::Missing { reason, .. }) => {
                Err(Error::malformed(format!("buffer {index} has no data: {reason}")))
            }
            None => Err(Error::malformed(format!("buffer {index} does not exist"))),
        }
    }

    /// A buffer view's bytes (decoding EXT_meshopt_compression views once).
    pub fn view(&self, index: usize) -> Result<&[u8]> {
        self.readable("bufferViews", index)?;
        let view = self
            .root
            .buffer_views
            .get(index)
            .ok_or_else(|| Error::malformed(format!("bufferView {index} does not exist")))?;
        if let Some(ext) = ext_value(view.extensions.as_ref().map(|e| &e.others), "EXT_meshopt_compression") {
            let cell = &self.decoded_views[index];
            let decoded = cell.get_or_init(|| self.decode_meshopt(index, ext));
            return decoded.as_deref().map_err(Clone::clone);
        }
        let buffer = self.buffer(view.buffer.value())?;
        let offset = view.byte_offset.map(|o| o.0).unwrap_or(0);
        let end = offset.checked_add(view.byte_length.0).filter(|&e| e <= buffer.len() as u64).ok_or_else(|| {
            Error::malformed(format!(
                "bufferView {index} spans bytes {offset}..{} but buffer {} holds {}",
                offset.saturating_add(view.byte_length.0),
                view.buffer.value(),
                buffer.len()
            ))
            .with_detail(serde_json::json!({"pointer": format!("/bufferViews/{index}")}))
        })?;
        Ok(&buffer[offset as usize..end as usize])
    }

    fn decode_meshopt(&self, index: usize, ext: &serde_json::Value) -> Result<Vec<u8>> {
        let bad = |why: &str| {
            Error::malformed(format!("bufferView {index}: EXT_meshopt_compression {why}")).with_detail(
                serde_json::json!({"pointer": format!("/bufferViews/{index}/extensions/EXT_meshopt_compression")}),
            )
        };
        let field = |k: &str| ext.get(k).and_then(serde_json::Value::as_u64);
        let buffer = field("buffer").ok_or_else(|| bad("has no buffer"))? as usize;
        let offset = field("byteOffset").unwrap_or(0);
        let length = field("byteLength").ok_or_else(|| bad("has no byteLength"))?;
        let stride = field("byteStride").ok_or_else(|| bad("has no byteStride"))? as usize;
        let count = field("count").ok_or_else(|| bad("has no count"))? as usize;
        let mode = ext.get("mode").and_then(|m| m.as_str()).ok_or_else(|| bad("has no mode"))?;
        let filter = ext.get("filter").and_then(|m| m.as_str()).unwrap_or("NONE");
        let src = self.buffer(buffer)?;
        let end = offset
            .checked_add(length)
            .filter(|&e| e <= src.len() as u64)
            .ok_or_else(|| bad("reads past the end of its buffer"))?;
        let src = &src[offset as usize..end as usize];
        let out_len = count.checked_mul(stride).ok_or_else(|| bad("count x byteStride overflows"))?;
        self.charge(out_len as u64, &format!("bufferView {index} (meshopt)"))?;
        let mut out = vec![0u8; out_len];
        // The C decoder asserts on bad parameters, so they are checked here first.
        let rc = match mode {
            "ATTRIBUTES" => {
                if stride == 0 || stride > 256 || !stride.is_multiple_of(4) {
                    return Err(bad("ATTRIBUTES needs a byteStride that is a multiple of 4 up to 256"));
                }
                // SAFETY: `out` holds count*stride bytes and `src` is a valid slice.
                unsafe {
                    meshopt::ffi::meshopt_decodeVertexBuffer(
                        out.as_mut_ptr().cast(),
                        count,
                        stride,
                        src.as_ptr(),
                        src.len(),
                    )
                }
            }
            "TRIANGLES" | "INDICES" => {
                if stride != 2 && stride != 4 {
                    return Err(bad("index modes need a byteStride of 2 or 4"));
                }
                if mode == "TRIANGLES" {
                    if !count.is_multiple_of(3) {
                        return Err(bad("TRIANGLES needs a count divisible by 3"));
                    }
                    // SAFETY: as above.
                    unsafe {
                        meshopt::ffi::meshopt_decodeIndexBuffer(
                            out.as_mut_ptr().cast(),
                            count,
                            stride,
                            src.as_ptr(),
                            src.len(),
                        )
                    }
                } else {
                    // SAFETY: as above.
                    unsafe {
                        meshopt::ffi::meshopt_decodeIndexSequence(
                            out.as_mut_ptr().cast(),
                            count,
                            stride,
                            src.as_ptr(),
                            src.len(),
                        )
                    }
                }
            }
            other => return Err(bad(&format!("has unknown mode {other}"))),
        };
        if rc != 0 {
            return Err(bad(&format!("stream does not decode (meshopt error {rc})")));
        }
        if mode == "ATTRIBUTES" && count > 0 {
            let ptr = out.as_mut_ptr().cast();
            match filter {
                "NONE" => {}
                // SAFETY: strides are checked against each filter's contract.
                "OCTAHEDRAL" if stride == 4 || stride == 8 => unsafe {
                    meshopt::ffi::meshopt_decodeFilterOct(ptr, count, stride)
                },
                "QUATERNION" if stride == 8 => unsafe { meshopt::ffi::meshopt_decodeFilterQuat(ptr, count, stride) },
                "EXPONENTIAL" => unsafe { meshopt::ffi::meshopt_decodeFilterExp(ptr, count, stride) },
                "COLOR" if stride == 4 || stride == 8 => unsafe {
                    meshopt::ffi::meshopt_decodeFilterColor(ptr, count, stride)
                },
                other => return Err(bad(&format!("filter {other} does not fit byteStride {stride}"))),
            }
        }
        Ok(out)
    }

    /// Reads a float accessor of `components` components per element
    /// (normalised integers are mapped to \[0,1\] or \[-1,1\], plain integers
    /// converted as KHR_mesh_quantization allows), sparse substitution applied.
    pub fn read_floats(&self, index: usize, components: usize) -> Result<Vec<f32>> {
        self.readable("accessors", index)?;
        let acc = self
            .root
            .accessors
            .get(index)
            .ok_or_else(|| Error::malformed(format!("accessor {index} does not exist")))?;
        let n = type_components(&acc.type_).ok_or_else(|| {
            Error::malformed(format!("accessor {index} has an invalid type")).with_detail(accessor_ptr(index))
        })?;
        if n != components {
            return Err(Error::malformed(format!(
                "accessor {index} has {n} components per element where {components} are required"
            ))
            .with_detail(accessor_ptr(index)));
        }
        let comp = match &acc.component_type {
            Checked::Valid(c) => Component::from_gl(c.0.as_gl_enum()),
            Checked::Invalid => None,
        }
        .ok_or_else(|| {
            Error::malformed(format!("accessor {index} has an invalid componentType")).with_detail(accessor_ptr(index))
        })?;
        let count = usize::try_from(acc.count.0)
            .map_err(|_| Error::malformed(format!("accessor {index} count is too large")))?;
        let total =
            count.checked_mul(n).ok_or_else(|| Error::malformed(format!("accessor {index} count overflows")))?;
        let normalized = acc.normalized;
        let mut out: Vec<f32>;
        match acc.buffer_view {
            Some(v) => {
                let (bytes, stride) = self.element_bytes(
                    index,
                    v.value(),
                    acc.byte_offset.map(|o| o.0).unwrap_or(0),
                    count,
                    comp.size() * n,
                )?;
                self.charge((total * 4) as u64, &format!("accessor {index}"))?;
                out = Vec::with_capacity(total);
                convert_into(&mut out, bytes, stride, count, n, comp, normalized);
            }
            None => {
                self.charge((total as u64).saturating_mul(4), &format!("accessor {index} (no bufferView)"))?;
                out = vec![0.0; total];
            }
        }
        if let Some(sparse) = &acc.sparse {
            let scount = usize::try_from(sparse.count.0).unwrap_or(usize::MAX);
            if scount > count {
                return Err(Error::malformed(format!("accessor {index}: sparse count {scount} exceeds count {count}"))
                    .with_detail(accessor_ptr(index)));
            }
            let icomp = match &sparse.indices.component_type {
                Checked::Valid(c) => Component::from_gl(c.0.as_gl_enum()),
                Checked::Invalid => None,
            }
            .filter(|c| matches!(c, Component::U8 | Component::U16 | Component::U32))
            .ok_or_else(|| Error::malformed(format!("accessor {index}: invalid sparse index type")))?;
            let (ibytes, istride) = self.element_bytes(
                index,
                sparse.indices.buffer_view.value(),
                sparse.indices.byte_offset.0,
                scount,
                icomp.size(),
            )?;
            let (vbytes, vstride) = self.element_bytes(
                index,
                sparse.values.buffer_view.value(),
                sparse.values.byte_offset.0,
                scount,
                comp.size() * n,
            )?;
            let mut values = Vec::with_capacity(scount * n);
            convert_into(&mut values, vbytes, vstride, scount, n, comp, normalized);
            for k in 0..scount {
                let at = read_index(&ibytes[k * istride..], icomp) as usize;
                if at >= count {
                    return Err(Error::malformed(format!(
                        "accessor {index}: sparse index {at} is out of range (count {count})"
                    ))
                    .with_detail(accessor_ptr(index)));
                }
                out[at * n..at * n + n].copy_from_slice(&values[k * n..k * n + n]);
            }
        }
        Ok(out)
    }

    /// Reads a float accessor of N components per element as arrays (no copy:
    /// the flat vector is reinterpreted in place).
    pub fn read_vecs<const N: usize>(&self, index: usize) -> Result<Vec<[f32; N]>> {
        Ok(arrays(self.read_floats(index, N)?))
    }

    /// Reads an index accessor (unsigned byte, short or int scalars).
    pub fn read_indices(&self, index: usize) -> Result<Vec<u32>> {
        self.readable("accessors", index)?;
        let acc = self
            .root
            .accessors
            .get(index)
            .ok_or_else(|| Error::malformed(format!("accessor {index} does not exist")))?;
        if type_components(&acc.type_) != Some(1) {
            return Err(
                Error::malformed(format!("index accessor {index} is not SCALAR")).with_detail(accessor_ptr(index))
            );
        }
        let comp = match &acc.component_type {
            Checked::Valid(c) => Component::from_gl(c.0.as_gl_enum()),
            Checked::Invalid => None,
        }
        .filter(|c| matches!(c, Component::U8 | Component::U16 | Component::U32))
        .ok_or_else(|| {
            Error::malformed(format!("index accessor {index} is not an unsigned integer type"))
                .with_detail(accessor_ptr(index))
        })?;
        if acc.sparse.is_some() || acc.buffer_view.is_none() {
            // Rare; go through the general path and convert back.
            let f = self.read_floats_raw_ints(index)?;
            return Ok(f);
        }
        let count = usize::try_from(acc.count.0)
            .map_err(|_| Error::malformed(format!("accessor {index} count is too large")))?;
        let view = acc.buffer_view.map(|v| v.value()).unwrap_or(0);
        let (bytes, stride) =
            self.element_bytes(index, view, acc.byte_offset.map(|o| o.0).unwrap_or(0), count, comp.size())?;
        self.charge((count * 4) as u64, &format!("accessor {index}"))?;
        let mut out = Vec::with_capacity(count);
        match (comp, stride) {
            (Component::U32, 4) => {
                out.extend(bytes[..count * 4].chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            }
            (Component::U16, 2) => {
                out.extend(bytes[..count * 2].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]) as u32))
            }
            _ => out.extend((0..count).map(|i| read_index(&bytes[i * stride..], comp))),
        }
        Ok(out)
    }

    fn read_floats_raw_ints(&self, index: usize) -> Result<Vec<u32>> {
        // Unsigned integer indices read through the float path without
        // normalisation are exact below 2^24; sparse or view-less index
        // accessors beyond that are not seen in practice.
        let vals = self.read_floats(index, 1)?;
        Ok(vals.into_iter().map(|v| v as u32).collect())
    }

    /// The bytes holding `count` elements of `elem` bytes for an accessor,
    /// checked against the view, and the stride between elements.
    fn element_bytes(
        &self,
        acc: usize,
        view_index: usize,
        offset: u64,
        count: usize,
        elem: usize,
    ) -> Result<(&[u8], usize)> {
        let view_json = self.root.buffer_views.get(view_index).ok_or_else(|| {
            Error::malformed(format!("accessor {acc} names bufferView {view_index}, which does not exist"))
                .with_detail(accessor_ptr(acc))
        })?;
        let declared_stride = view_json.byte_stride.map(|s| s.0).unwrap_or(0);
        let meshopt_stride = ext_value(view_json.extensions.as_ref().map(|e| &e.others), "EXT_meshopt_compression")
            .and_then(|e| e.get("byteStride"))
            .and_then(serde_json::Value::as_u64)
            .map(|s| s as usize);
        let stride = match (declared_stride, meshopt_stride) {
            (s, _) if s >= elem => s,
            (_, Some(s)) if s >= elem => s,
            _ => elem,
        };
        let bytes = self.view(view_index)?;
        if count == 0 {
            return Ok((&bytes[..0], stride));
        }
        let needed = (count as u64 - 1)
            .checked_mul(stride as u64)
            .and_then(|x| x.checked_add(elem as u64))
            .and_then(|x| x.checked_add(offset));
        match needed {
            Some(n) if n <= bytes.len() as u64 => Ok((&bytes[offset as usize..], stride)),
            _ => Err(Error::malformed(format!(
                "accessor {acc} needs {} bytes from bufferView {view_index}, which holds {}",
                needed.map(|n| n.to_string()).unwrap_or_else(|| "more than 2^64".into()),
                bytes.len()
            ))
            .with_detail(accessor_ptr(acc))),
        }
    }
}

pub use crate::geom::flat::arrays;

/// Components per element of an accessor type (matrices excluded: never read here).
fn type_components(t: &Checked<gltf::json::accessor::Type>) -> Option<usize> {
    use gltf::json::accessor::Type;
    match t {
        Checked::Valid(Type::Scalar) => Some(1),
        Checked::Valid(Type::Vec2) => Some(2),
        Checked::Valid(Type::Vec3) => Some(3),
        Checked::Valid(Type::Vec4) => Some(4),
        Checked::Valid(Type::Mat4) => Some(16),
        _ => None,
    }
}

fn read_index(b: &[u8], c: Component) -> u32 {
    match c {
        Component::U8 => b[0] as u32,
        Component::U16 => u16::from_le_bytes([b[0], b[1]]) as u32,
        _ => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
    }
}

/// Appends `count` elements of `n` components, converting to f32.
fn convert_into(
    out: &mut Vec<f32>,
    bytes: &[u8],
    stride: usize,
    count: usize,
    n: usize,
    comp: Component,
    normalized: bool,
) {
    fn each<const W: usize>(
        out: &mut Vec<f32>,
        bytes: &[u8],
        stride: usize,
        count: usize,
        n: usize,
        f: impl Fn([u8; W]) -> f32,
    ) {
        for e in 0..count {
            let base = &bytes[e * stride..];
            for c in 0..n {
                let mut a = [0u8; W];
                a.copy_from_slice(&base[c * W..c * W + W]);
                out.push(f(a));
            }
        }
    }
    match (comp, normalized) {
        (Component::F32, _) => {
            if stride == 4 * n {
                out.extend(
                    bytes[..count * stride].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                );
            } else {
                each::<4>(out, bytes, stride, count, n, f32::from_le_bytes);
            }
        }
        (Component::I8, true) => {
            each::<1>(out, bytes, stride, count, n, |b| (i8::from_le_bytes(b) as f32 / 127.0).max(-1.0))
        }
        (Component::I8, false) => each::<1>(out, bytes, stride, count, n, |b| i8::from_le_bytes(b) as f32),
        (Component::U8, true) => each::<1>(out, bytes, stride, count, n, |b| b[0] as f32 / 255.0),
        (Component::U8, false) => each::<1>(out, bytes, stride, count, n, |b| b[0] as f32),
        (Component::I16, true) => {
            each::<2>(out, bytes, stride, count, n, |b| (i16::from_le_bytes(b) as f32 / 32767.0).max(-1.0))
        }
        (Component::I16, false) => each::<2>(out, bytes, stride, count, n, |b| i16::from_le_bytes(b) as f32),
        (Component::U16, true) => each::<2>(out, bytes, stride, count, n, |b| u16::from_le_bytes(b) as f32 / 65535.0),
        (Component::U16, false) => each::<2>(out, bytes, stride, count, n, |b| u16::from_le_bytes(b) as f32),
        (Component::U32, true) => {
            each::<4>(out, bytes, stride, count, n, |b| (u32::from_le_bytes(b) as f64 / u32::MAX as f64) as f32)
        }
        (Component::U32, false) => each::<4>(out, bytes, stride, count, n, |b| u32::from_le_bytes(b) as f32),
    }
}
