//! The files a [`Doc`] becomes: a GLB ([`Doc::to_glb`], or any JSON and
//! buffer with [`glb_from_parts`], or a cube padded to a size with
//! [`padded_glb`]), a `.gltf` with its `.bin` and images
//! ([`Doc::to_gltf_files`]) or with an embedded buffer
//! ([`Doc::to_gltf_embedded`]), and zip bundles of such files ([`zip()`]).

use super::scene::{Doc, Layout};
use serde_json::{Value, json};
use std::io::{Cursor, Write};

/// GLB magic (`glTF`, little-endian).
pub(super) const GLB_MAGIC: u32 = 0x4654_6C67;
/// GLB chunk type of the JSON chunk (`JSON`).
pub(super) const GLB_CHUNK_JSON: u32 = 0x4E4F_534A;
/// GLB chunk type of the binary chunk (`BIN\0`).
pub(super) const GLB_CHUNK_BIN: u32 = 0x004E_4942;

impl Doc {
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

/// A valid GLB of about `bytes` bytes (a cube's at least): a 1 m cube whose
/// buffer carries zero padding after its data. Inputs above the service's
/// synchronous or multipart limits.
pub fn padded_glb(bytes: usize) -> Vec<u8> {
    let (mut json, mut bin) = Doc::single(super::shapes::cube(1.0)).to_json(Layout::Glb);
    bin.resize(bytes.max(bin.len()).next_multiple_of(4), 0);
    json["buffers"][0]["byteLength"] = json!(bin.len());
    glb_from_parts(&json, &bin)
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

#[cfg(test)]
mod tests {
    use super::super::readback::{parse_glb, textured_doc, u32_at};
    use super::super::shapes::{cube, quad};
    use super::*;
    use base64::Engine as _;
    use std::io::Read as _;

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
    fn padded_glb_is_a_cube_of_about_the_size_asked_for() {
        assert_eq!(padded_glb(0), Doc::single(cube(1.0)).to_glb(), "no smaller than the cube");
        let glb = padded_glb(100_001);
        let (json, bin) = parse_glb(&glb);
        let bin = bin.expect("BIN chunk");
        assert_eq!(bin.len(), 100_004);
        assert_eq!(json["buffers"][0]["byteLength"].as_u64().unwrap() as usize, bin.len());
        assert!(glb.len() > 100_004 && glb.len() < 100_004 + 4096);
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
