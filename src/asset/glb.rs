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
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Splits a GLB into its chunks.
pub fn parse(bytes: &[u8]) -> Result<Glb<'_>> {
    let header = |msg: String| Error::malformed(msg).with_detail(serde_json::json!({"offset": 0}));
    if bytes.len() < 12 || u32_at(bytes, 0) != Some(MAGIC) {
        return Err(header("the GLB header is shorter than 12 bytes or lacks the glTF magic".into()));
    }
    let version = u32_at(bytes, 4).unwrap_or(0);
    if version != 2 {
        return Err(header(format!("GLB version {version} is not supported; only version 2 is glTF 2.0")));
    }
    let declared = u32_at(bytes, 8).unwrap_or(0) as usize;
    if declared > bytes.len() {
        return Err(header(format!("the GLB header declares {declared} bytes but the file holds {}", bytes.len())));
    }
    if declared < 20 {
        return Err(header(format!("the GLB header declares {declared} bytes, too short for a JSON chunk")));
    }
    let data = &bytes[..declared];
    let mut at = 12usize;
    let mut json = None;
    let mut bin = None;
    let mut index = 0;
    while at < data.len() {
        let (Some(len), Some(kind)) = (u32_at(data, at), u32_at(data, at + 4)) else {
            return Err(Error::malformed(format!("GLB chunk {index} at byte {at} has a truncated header"))
                .with_detail(serde_json::json!({"offset": at})));
        };
        let start = at + 8;
        let end = start.checked_add(len as usize).filter(|&e| e <= data.len()).ok_or_else(|| {
            Error::malformed(format!(
                "GLB chunk {index} at byte {at} declares {len} bytes but only {} remain",
                data.len().saturating_sub(start)
            ))
            .with_detail(serde_json::json!({"offset": at}))
        })?;
        let body = &data[start..end];
        match (index, kind) {
            (0, CHUNK_JSON) => json = Some(body),
            (0, _) => {
                return Err(
                    Error::malformed("the first GLB chunk is not JSON").with_detail(serde_json::json!({"offset": at}))
                );
            }
            (1, CHUNK_BIN) => bin = Some(body),
            _ => {} // Unknown chunks are skipped, as the glTF spec requires.
        }
        // Chunks are 4-byte aligned; a lenient reader steps over missing padding.
        at = end.checked_add(3).map(|e| e & !3).unwrap_or(usize::MAX).max(end);
        index += 1;
    }
    let json = json.ok_or_else(|| Error::malformed("the GLB has no JSON chunk"))?;
    Ok(Glb { json, bin })
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
    fn refuses_lying_lengths() {
        let mut bytes = glb(b"{}", Some(&[0; 8]));
        // Header claims more than the file holds.
        bytes[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(parse(&bytes).unwrap_err().code, crate::error::ErrorCode::MalformedGltf);
        // A chunk length that overflows.
        let mut bytes = glb(b"{}", Some(&[0; 8]));
        bytes[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse(&bytes).is_err());
        assert!(parse(&bytes[..11]).is_err());
        let mut v1 = glb(b"{}", None);
        v1[4] = 1;
        assert!(parse(&v1).is_err());
    }
}
