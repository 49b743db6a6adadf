//! The GLB container: a 12-byte header, a JSON chunk and an optional BIN chunk.
//!
//! Every length is checked against the bytes actually present, with checked
//! arithmetic, before a slice is taken.

use crate::error::{Error, Result};

/// `glTF` in little-endian.
pub const MAGIC: u32 = 0x4654_6C67;
const CHUNK_JSON: u32 = 0x4E4F_534A;
const CHUNK_BIN: u32 = 0x004E_4942;

/// The two chunks of a GLB.
#[derive(Debug)]
pub struct Glb<'a> {
    /// The JSON chunk's bytes.
    pub json: &'a [u8],
    /// The BIN chunk's bytes, when present.
    pub bin: Option<&'a [u8]>,
    /// Lengths that were off and how they were read instead.
    pub notes: Vec<String>,
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The length of the first JSON value in `bytes` (leading whitespace
/// included), when there is one.
fn json_value_len(bytes: &[u8]) -> Option<usize> {
    let mut stream = serde_json::Deserializer::from_slice(bytes).into_iter::<serde::de::IgnoredAny>();
    match stream.next() {
        Some(Ok(_)) => Some(stream.byte_offset()),
        _ => None,
    }
}

/// Whether `chunk`, less trailing padding, ends with the `}` of an object.
fn ends_an_object(chunk: &[u8]) -> bool {
    chunk.iter().rev().find(|b| !b.is_ascii_whitespace() && **b != 0) == Some(&b'}')
}

/// Splits a GLB into its chunks.
///
/// The header must be readable (12 bytes, the magic, version 2) and the
/// first chunk must be JSON. Past that, lengths that are off are read
/// leniently, as engines do, with a note each: a total length that differs
/// from the file's is replaced by the file's; a JSON chunk whose length runs
/// past the file, or cuts its JSON short, is read to the end of its JSON
/// value (the BIN chunk is looked for after it); a BIN chunk that claims
/// more bytes than remain holds those that remain; trailing bytes too short
/// for a chunk header are ignored.
pub fn parse(bytes: &[u8]) -> Result<Glb<'_>> {
    let header = |msg: String| Error::malformed(msg).with_detail(serde_json::json!({"offset": 0}));
    if bytes.len() < 12 || u32_at(bytes, 0) != Some(MAGIC) {
        return Err(header("the GLB header is shorter than 12 bytes or lacks the glTF magic".into()));
    }
    let version = u32_at(bytes, 4).unwrap_or(0);
    if version == 1 {
        return Err(Error::unsupported("GLB version 1 is glTF 1.0 (KHR_binary_glTF); meshcheck reads glTF 2.0")
            .with_detail(serde_json::json!({"offset": 4})));
    }
    if version != 2 {
        return Err(header(format!("GLB version {version} is not supported; only version 2 is glTF 2.0")));
    }
    let mut notes = Vec::new();
    let declared = u32_at(bytes, 8).unwrap_or(0) as usize;
    if declared != bytes.len() {
        notes.push(format!(
            "the GLB header declares {declared} bytes but the file holds {}; the file's length was used",
            bytes.len()
        ));
    }
    let data = bytes;
    let mut at = 12usize;
    let mut json = None;
    let mut bin = None;
    let mut index = 0;
    while at < data.len() {
        let (Some(len), Some(kind)) = (u32_at(data, at), u32_at(data, at + 4)) else {
            if json.is_none() {
                return Err(Error::malformed(format!("GLB chunk {index} at byte {at} has a truncated header"))
                    .with_detail(serde_json::json!({"offset": at})));
            }
            notes.push(format!("{} bytes after the last GLB chunk were ignored", data.len() - at));
            break;
        };
        let start = at + 8;
        let fits = start.checked_add(len as usize).filter(|&e| e <= data.len());
        let end = match (index, kind, fits) {
            // The common case: the chunk holds one JSON object and padding.
            (0, CHUNK_JSON, Some(end)) if ends_an_object(&data[start..end]) => end,
            (0, CHUNK_JSON, _) => {
                // The JSON chunk's length is off: read its JSON value whole.
                let bom = if data[start.min(data.len())..].starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
                let Some(n) = data.get(start + bom..).and_then(json_value_len).map(|n| n + bom) else {
                    let remain = data.len().saturating_sub(start);
                    return Err(Error::malformed(match fits {
                        None => format!("GLB chunk 0 at byte {at} declares {len} bytes but only {remain} remain"),
                        Some(_) => format!("the GLB's JSON chunk at byte {at} does not hold a JSON value"),
                    })
                    .with_detail(serde_json::json!({"offset": at})));
                };
                let mut end = start + n;
                while !(end - start).is_multiple_of(4)
                    && data.get(end).is_some_and(|b| b.is_ascii_whitespace() || *b == 0)
                {
                    end += 1;
                }
                notes.push(format!(
                    "the GLB's JSON chunk declares {len} bytes but its JSON value takes {n}; read as {}",
                    end - start
                ));
                end
            }
            (0, _, _) => {
                return Err(
                    Error::malformed("the first GLB chunk is not JSON").with_detail(serde_json::json!({"offset": at}))
                );
            }
            (_, _, Some(end)) => end,
            (_, _, None) => {
                let remain = data.len() - start.min(data.len());
                notes.push(format!(
                    "GLB chunk {index} at byte {at} declares {len} bytes but only {remain} remain; read as {remain}"
                ));
                data.len()
            }
        };
        let body = &data[start.min(end)..end];
        match (index, kind) {
            (0, _) => json = Some(body),
            (1, CHUNK_BIN) => bin = Some(body),
            _ => {} // Unknown chunks are skipped, as the glTF spec requires.
        }
        // Chunks are 4-byte aligned; a lenient reader steps over missing padding.
        at = end.checked_add(3).map(|e| e & !3).unwrap_or(usize::MAX).max(end);
        index += 1;
    }
    let json = json.ok_or_else(|| Error::malformed("the GLB has no JSON chunk"))?;
    Ok(Glb { json, bin, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glb(json: &[u8], bin: Option<&[u8]>) -> Vec<u8> {
        let mut out = Vec::new();
        let mut body = Vec::new();
        let mut j = json.to_vec();
        while !j.len().is_multiple_of(4) {
            j.push(b' ');
        }
        body.extend((j.len() as u32).to_le_bytes());
        body.extend(CHUNK_JSON.to_le_bytes());
        body.extend(&j);
        if let Some(b) = bin {
            body.extend((b.len() as u32).to_le_bytes());
            body.extend(CHUNK_BIN.to_le_bytes());
            body.extend(b);
        }
        out.extend(MAGIC.to_le_bytes());
        out.extend(2u32.to_le_bytes());
        out.extend(((12 + body.len()) as u32).to_le_bytes());
        out.extend(body);
        out
    }

    #[test]
    fn splits_chunks() {
        let bytes = glb(b"{}", Some(&[1, 2, 3, 4]));
        let g = parse(&bytes).unwrap();
        assert_eq!(g.json.trim_ascii(), b"{}");
        assert_eq!(g.bin, Some(&[1u8, 2, 3, 4][..]));
    }

    #[test]
    fn refuses_what_has_no_readable_header_or_json() {
        let bytes = glb(b"{}", Some(&[0; 8]));
        assert!(parse(&bytes[..11]).is_err());
        let mut v1 = glb(b"{}", None);
        v1[4] = 1;
        assert!(parse(&v1).is_err());
        // A JSON chunk that runs past the file and holds no JSON value.
        let mut bad = glb(b"[1, ", None);
        bad[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(parse(&bad).unwrap_err().code, crate::error::ErrorCode::MalformedGltf);
        // The first chunk is BIN.
        let mut first_bin = glb(b"{}", None);
        first_bin[16..20].copy_from_slice(&CHUNK_BIN.to_le_bytes());
        assert!(parse(&first_bin).is_err());
    }

    #[test]
    fn reads_lying_lengths_with_a_note() {
        // Header claims more than the file holds.
        let mut bytes = glb(br#"{"a":1}"#, Some(&[7; 8]));
        bytes[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        let g = parse(&bytes).unwrap();
        assert_eq!(g.bin, Some(&[7u8; 8][..]));
        assert_eq!(g.notes.len(), 1, "{:?}", g.notes);
        // A JSON chunk length that overflows: the JSON value is read whole, BIN found after it.
        let mut bytes = glb(br#"{"a":1}"#, Some(&[7; 8]));
        bytes[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        let g = parse(&bytes).unwrap();
        assert_eq!(g.json.trim_ascii(), br#"{"a":1}"#);
        assert_eq!(g.bin, Some(&[7u8; 8][..]));
        // A JSON chunk length that cuts the JSON short.
        let mut bytes = glb(br#"{"abc":1234}"#, Some(&[7; 8]));
        bytes[12..16].copy_from_slice(&4u32.to_le_bytes());
        let g = parse(&bytes).unwrap();
        assert_eq!(g.json.trim_ascii(), br#"{"abc":1234}"#);
        assert_eq!(g.bin, Some(&[7u8; 8][..]));
        // A BIN chunk that claims more than remains holds what remains.
        let mut bytes = glb(br#"{"a":1}"#, Some(&[7; 8]));
        let bin_at = bytes.len() - 16;
        bytes[bin_at..bin_at + 4].copy_from_slice(&1000u32.to_le_bytes());
        let g = parse(&bytes).unwrap();
        assert_eq!(g.bin, Some(&[7u8; 8][..]));
        assert!(g.notes.iter().any(|n| n.contains("declares 1000 bytes")), "{:?}", g.notes);
    }
}
