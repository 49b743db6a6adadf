//! Reading an input into a document and a flattened scene.
//!
//! The format is sniffed from the bytes, never the file name: `glTF` magic is
//! a GLB, `PK` a zip bundle, `{` glTF JSON; anything else is
//! UNSUPPORTED_FORMAT. External resources come from a [`bundle::Resolver`]:
//! the folder beside a .gltf on disk, the zip bundle, or nothing.

pub mod anim;
pub mod bundle;
pub mod bytes;
pub mod data;
pub mod draco;
pub mod glb;
pub mod json;
pub mod material;
pub mod primitive;
pub mod scene;
pub mod texture;

use crate::error::{Error, Result};
use crate::report::{InputFormat, InputInfo};
use bundle::{Resolver, UriKind};
use data::{BufferData, DocData};
pub use json::Note;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Fixed part of the per-file decode budget, in bytes.
pub const DECODE_BUDGET_BASE: u64 = 256 << 20;
/// Decoded bytes allowed per input byte, on top of the base.
pub const DECODE_BUDGET_PER_BYTE: u64 = 64;
/// Hard ceiling on decoded bytes per file.
pub const DECODE_BUDGET_MAX: u64 = 8 << 30;

/// An input to validate.
pub struct Input {
    /// File name as shown in the report (no directories), or "-".
    pub filename: String,
    /// The bytes (a large file mapped, [`bytes::Bytes`]).
    pub bytes: bytes::Bytes,
    /// Where a .gltf's external resources come from.
    pub resolver: Box<dyn Resolver>,
}

impl Input {
    /// Bytes with no external resources (a lone upload).
    pub fn from_bytes(filename: impl Into<String>, bytes: Vec<u8>) -> Input {
        Input { filename: filename.into(), bytes: bytes.into(), resolver: Box::new(bundle::NoResources) }
    }

    /// A file on disk; a .gltf's resources resolve beside it.
    pub fn from_path(path: &std::path::Path) -> std::io::Result<Input> {
        // Mapped when large, else read whole (`Bytes::read_file`).
        let bytes = bytes::Bytes::read_file(&mut std::fs::File::open(path)?)?;
        let filename =
            path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string());
        Ok(Input { filename, bytes, resolver: Box::new(bundle::DirResolver::new(bundle::parent_dir(path))) })
    }
}

/// An external reference (a buffer or image URI) and whether it resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// JSON pointer of the object holding the URI.
    pub pointer: String,
    /// The URI as written (data: URIs shortened to their media type).
    pub uri: String,
    /// Bytes, when resolved.
    pub bytes: Option<u64>,
    /// Why not, when unresolved.
    pub reason: Option<String>,
    /// Whether it is external (a file), as opposed to a data: URI.
    pub external: bool,
}

/// One image of the document and what its header says.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageRecord {
    /// Index in `images`.
    pub index: usize,
    /// The header, or why it cannot be read (missing, not an image).
    pub header: std::result::Result<texture::ImageHeader, String>,
    /// The mimeType the document declares.
    pub declared_mime: Option<String>,
}

impl ImageRecord {
    /// JSON pointer.
    pub fn pointer(&self) -> String {
        format!("/images/{}", self.index)
    }
}

/// A loaded input: the document, its scene and what was learnt on the way.
pub struct Asset {
    /// The report's `input` block.
    pub info: InputInfo,
    /// The parsed document.
    pub root: gltf::json::Root,
    /// The default scene, flattened.
    pub scene: scene::Scene,
    /// Every buffer and image URI.
    pub references: Vec<Reference>,
    /// Every image.
    pub images: Vec<ImageRecord>,
    /// The asset's size as delivered: the GLB or .gltf plus every resolved external file.
    pub asset_bytes: u64,
    /// Every image's encoded bytes, by image index, when the load was asked
    /// to keep them (the renderer draws them); base-colour images' bytes
    /// always (the base-colour range check decodes their texels; the others read only
    /// headers). `None` for an image not kept or not loaded.
    /// Images that share a file or a buffer view share their bytes.
    pub image_data: Vec<KeptImage>,
    /// What the loader did not read as written (container lengths, JSON
    /// faults, unreadable objects and primitives) and what it did instead;
    /// the report lists them as `notes`.
    pub notes: Vec<Note>,
    /// Skin weights and animation keyframes, read from the buffers (the ANM
    /// checks); its own notes say what could not be read.
    pub animation: anim::Animation,
}

/// An image's encoded bytes kept for the renderer, if it could be loaded.
pub type KeptImage = Option<Arc<[u8]>>;

/// What a load keeps beyond what the checks need.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions {
    /// Keep every image's encoded bytes in [`Asset::image_data`] (for rendering).
    pub keep_images: bool,
}

/// What the first bytes say the input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniffed {
    /// Binary glTF.
    Glb,
    /// A zip archive.
    Zip,
    /// JSON (presumably glTF).
    Json,
}

/// Sniffs the container format from the bytes.
pub fn sniff(bytes: &[u8]) -> Result<Sniffed> {
    if bytes.starts_with(b"glTF") {
        return Ok(Sniffed::Glb);
    }
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        return Ok(Sniffed::Zip);
    }
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if body.trim_ascii_start().starts_with(b"{") {
        return Ok(Sniffed::Json);
    }
    if bytes.is_empty() {
        return Err(Error::unsupported("the input is empty"));
    }
    Err(Error::unsupported("the input is not a GLB, a zip bundle or glTF JSON").with_help(
        "meshcheck reads .glb files, .gltf files (with their resources) and .zip bundles of a .gltf and its resources",
    ))
}

/// An input whose container is open: the main file's bytes and where its
/// external resources come from. The validator and the loader both read it.
pub struct Opened {
    /// The report's `input` block.
    pub info: InputInfo,
    /// The GLB or .gltf bytes (the input itself, or the bundle's main file).
    pub main: bytes::Bytes,
    /// External resources, relative to the main file (shared, so that the
    /// validator can keep reading them after the main bytes are dropped).
    pub resolver: std::sync::Arc<dyn Resolver>,
}

impl Opened {
    /// The name the main file goes by in messages: a file name, never a path.
    pub fn main_name(&self) -> String {
        match &self.info.main_file {
            Some(m) => m.rsplit('/').next().unwrap_or(m).to_string(),
            None => self.info.filename.clone(),
        }
    }
}

/// Sniffs the input, and opens a zip bundle (under its limits) while
/// hashing it. The hash of a GLB or .gltf, which is also the main file, is
/// left to [`load_opened`], which takes it beside the parse: `info.sha256`
/// is empty until then.
pub fn open(input: Input) -> Result<Opened> {
    let Input { filename, bytes, resolver } = input;
    let input_bytes = bytes.len() as u64;
    let kind = sniff(&bytes)?;
    let (format, main_file, main, resolver, sha256): (
        InputFormat,
        Option<String>,
        bytes::Bytes,
        Box<dyn Resolver>,
        String,
    ) = match kind {
        Sniffed::Glb => (InputFormat::Glb, None, bytes, resolver, String::new()),
        Sniffed::Json => (InputFormat::Gltf, None, bytes, resolver, String::new()),
        Sniffed::Zip => {
            let (sha256, zipped) = rayon::join(|| sha256_hex(&bytes), || bundle::ZipBundle::open(&bytes));
            let mut zipped = zipped?;
            let main_file = zipped.main_file.clone();
            let main = zipped.take_main().into();
            (InputFormat::Zip, Some(main_file), main, Box::new(zipped.into_resolver()), sha256)
        }
    };
    let info = InputInfo { filename, format, bytes: input_bytes, sha256, main_file };
    Ok(Opened { info, main, resolver: resolver.into() })
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Reads an input into an [`Asset`].
pub fn load(input: Input) -> Result<Asset> {
    load_opened(&open(input)?)
}

/// Reads an opened input into an [`Asset`].
pub fn load_opened(opened: &Opened) -> Result<Asset> {
    load_opened_with(opened, LoadOptions::default())
}

/// [`load_opened`], keeping what `options` asks for.
pub fn load_opened_with(opened: &Opened, options: LoadOptions) -> Result<Asset> {
    let mut info = opened.info.clone();
    if info.sha256.is_empty() {
        // A GLB or .gltf is its own main file: hash it beside the parse.
        let (sha256, asset) = rayon::join(|| sha256_hex(&opened.main), || load_main(opened, options));
        info.sha256 = sha256;
        return asset.map(|a| Asset { info, ..a });
    }
    load_main(opened, options).map(|a| Asset { info, ..a })
}

/// [`load_opened_with`] without the hash (the returned `info` is the opened one).
fn load_main(opened: &Opened, options: LoadOptions) -> Result<Asset> {
    let main_bytes = &opened.main[..];
    let resolver = opened.resolver.as_ref();
    let input_bytes = opened.info.bytes;
    let mut notes = Vec::new();
    let (json, bin) = match sniff(main_bytes) {
        Ok(Sniffed::Glb) => {
            let g = glb::parse(main_bytes)?;
            notes.extend(g.notes.into_iter().map(|n| Note::new("", n)));
            (g.json, g.bin)
        }
        Ok(Sniffed::Json) => (main_bytes, None),
        _ => return Err(Error::unsupported("the bundle's main file is neither a GLB nor glTF JSON")),
    };
    // A UTF-8 byte-order mark is an error the validator reports; it does not stop measuring.
    let json = json.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(json);
    let json::Lenient { root, notes: json_notes, unreadable } = json::read(json)?;
    notes.extend(json_notes);
    let budget = (DECODE_BUDGET_BASE + input_bytes.saturating_mul(DECODE_BUDGET_PER_BYTE)).min(DECODE_BUDGET_MAX);
    let mut references = Vec::new();
    let fetched = fetch_external(&root, resolver);
    let mut files = Files { fetched: &fetched, counted: HashSet::new(), asset_bytes: main_bytes.len() as u64 };
    let buffers = load_buffers(&root, bin, &mut files, &mut references, &mut notes);
    let data = DocData::new(&root, buffers, budget).with_unreadable(unreadable);
    let (images, image_data) = load_images(&data, &mut files, &mut references, options.keep_images);
    let asset_bytes = files.asset_bytes;
    let scene = scene::build(&data)?;
    let animation = anim::read(&data);
    drop(data);
    // An object that the JSON reader could not read and the scene then left
    // out is said once, by the scene.
    let unread: HashSet<&str> = scene.unread.iter().map(|u| u.pointer.as_str()).collect();
    notes.retain(|n| !unread.contains(n.pointer.as_str()));
    notes.extend(scene.notes.iter().cloned());
    Ok(Asset { info: opened.info.clone(), root, scene, references, images, asset_bytes, image_data, notes, animation })
}

fn display_uri(uri: &str) -> String {
    if uri.starts_with("data:") { format!("data:{}", bundle::data_uri_mime(uri)) } else { uri.to_string() }
}

/// External files by the path the resolver was asked for: the bytes, or why
/// they could not be had.
type Fetched = HashMap<String, std::result::Result<Vec<u8>, String>>;

/// The path a relative URI is fetched by.
fn fetch_key(path: String) -> String {
    bundle::normalise(&path).unwrap_or(path)
}

/// Fetches every file the buffers and images name, once each: a bundle
/// whose thousand buffers name one file holds that file once, not a
/// thousand times.
fn fetch_external(root: &gltf::json::Root, resolver: &dyn Resolver) -> Fetched {
    let mut out = Fetched::new();
    let uris = root.buffers.iter().filter_map(|b| b.uri.as_deref());
    for uri in uris.chain(root.images.iter().filter_map(|i| i.uri.as_deref())) {
        if let UriKind::Relative(path) = bundle::classify_uri(uri) {
            out.entry(fetch_key(path)).or_insert_with_key(|k| resolver.fetch(k).map_err(|e| e.reason()));
        }
    }
    out
}

/// The fetched files, and the asset's size as delivered (each external file
/// counted once, however many URIs name it).
struct Files<'f> {
    fetched: &'f Fetched,
    counted: HashSet<&'f str>,
    asset_bytes: u64,
}

/// Resolves a URI to bytes, recording the reference.
fn resolve<'f>(uri: &str, pointer: String, files: &mut Files<'f>, refs: &mut Vec<Reference>) -> Option<Cow<'f, [u8]>> {
    let (result, external) = match bundle::classify_uri(uri) {
        UriKind::Data => (bundle::decode_data_uri(uri).map(Cow::Owned), false),
        UriKind::Relative(path) => {
            let got = files.fetched.get_key_value(&fetch_key(path));
            let result = match got {
                Some((key, Ok(bytes))) => {
                    if files.counted.insert(key.as_str()) {
                        files.asset_bytes += bytes.len() as u64;
                    }
                    Ok(Cow::Borrowed(&bytes[..]))
                }
                Some((_, Err(why))) => Err(why.clone()),
                None => Err(bundle::Unresolved::NotFound.reason()),
            };
            (result, true)
        }
        UriKind::Unfetchable(why) => (Err(why.reason()), true),
    };
    let (bytes, reason) = match result {
        Ok(b) => (Some(b), None),
        Err(r) => (None, Some(r)),
    };
    refs.push(Reference {
        pointer,
        uri: display_uri(uri),
        bytes: bytes.as_ref().map(|b| b.len() as u64),
        reason,
        external,
    });
    bytes
}

fn load_buffers<'a>(
    root: &gltf::json::Root,
    bin: Option<&'a [u8]>,
    files: &mut Files<'a>,
    refs: &mut Vec<Reference>,
    notes: &mut Vec<Note>,
) -> Vec<BufferData<'a>> {
    let mut out = Vec::with_capacity(root.buffers.len());
    for (i, b) in root.buffers.iter().enumerate() {
        let fallback = b
            .extensions
            .as_ref()
            .and_then(|e| e.others.get("EXT_meshopt_compression"))
            .and_then(|m| m.get("fallback"))
            .and_then(|f| f.as_bool())
            .unwrap_or(false);
        let declared = b.byte_length.0;
        let data = match (&b.uri, i, bin) {
            (Some(uri), _, _) => match resolve(uri, format!("/buffers/{i}"), files, refs) {
                Some(bytes) => BufferData::Loaded(bytes),
                None if fallback => BufferData::Fallback,
                None => {
                    let reason = refs.last().and_then(|r| r.reason.clone()).unwrap_or_default();
                    let external = !uri.starts_with("data:");
                    BufferData::Missing { reason, external }
                }
            },
            (None, 0, Some(bin)) => BufferData::Loaded(Cow::Borrowed(bin)),
            (None, _, _) if fallback => BufferData::Fallback,
            (None, _, _) => {
                BufferData::Missing { reason: "it has no uri and is not the GLB's BIN chunk".into(), external: false }
            }
        };
        if let BufferData::Loaded(bytes) = &data
            && (bytes.len() as u64) < declared
        {
            // What reads past its end fails on its own (and is named).
            notes.push(Note::new(
                format!("/buffers/{i}"),
                format!("declares {declared} bytes but holds {}; the bytes it holds were read", bytes.len()),
            ));
        }
        out.push(data);
    }
    out
}

fn load_images(
    data: &DocData<'_>,
    files: &mut Files<'_>,
    refs: &mut Vec<Reference>,
    keep: bool,
) -> (Vec<ImageRecord>, Vec<KeptImage>) {
    let mut kept = Vec::new();
    // Kept bytes by source (a URI or a buffer view): images that share one share its bytes.
    let mut shared: HashMap<String, Arc<[u8]>> = HashMap::new();
    // Base-colour images are kept whatever `keep` says: a MAT check decodes their texels.
    let base_colour: HashSet<usize> = data
        .root
        .materials
        .iter()
        .filter_map(|m| m.pbr_metallic_roughness.base_color_texture.as_ref())
        .filter_map(|t| material::decodable_image(data.root, t.index.value()))
        .collect();
    let records = data
        .root
        .images
        .iter()
        .enumerate()
        .map(|(index, img)| {
            let bytes: std::result::Result<Cow<'_, [u8]>, String> = match (&img.uri, img.buffer_view) {
                _ if data.readable("images", index).is_err() => {
                    Err(data.readable("images", index).err().map(|e| e.message).unwrap_or_default())
                }
                (Some(uri), _) => resolve(uri, format!("/images/{index}"), files, refs)
                    .ok_or_else(|| "the image could not be loaded".to_string()),
                (None, Some(v)) => data.view(v.value()).map(Cow::Borrowed).map_err(|e| e.message),
                (None, None) => Err("the image has neither a uri nor a bufferView".into()),
            };
            let header = bytes.as_ref().map_err(Clone::clone).and_then(|b| texture::read_header(b));
            if keep || base_colour.contains(&index) {
                let source = match (&img.uri, img.buffer_view) {
                    (Some(uri), _) => format!("uri:{uri}"),
                    (None, Some(v)) => format!("view:{}", v.value()),
                    (None, None) => String::new(),
                };
                kept.push(bytes.ok().map(|b| shared.entry(source).or_insert_with(|| Arc::from(&b[..])).clone()));
            } else {
                kept.push(None);
            }
            ImageRecord { index, header, declared_mime: img.mime_type.as_ref().map(|m| m.0.clone()) }
        })
        .collect();
    (records, kept)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
