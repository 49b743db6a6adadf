//! The hostile-input suite for the loader: broken containers, lying lengths,
//! decode bombs, deep or cyclic node graphs, nesting bombs, huge claimed
//! images and unsafe zip bundles.
//!
//! Every case runs in-process and must end in bounded time with its
//! documented error code (or a report), never a panic, a stack overflow or a
//! huge allocation. A few cases also go through the CLI, one of them under a
//! virtual-memory cap, to show the binary reports the error rather than
//! aborting, and every hostile input and fuzz reproducer goes through the
//! binary in both modes with its peak memory measured.

use crate::testkit::{Doc, Image, Layout, Material, Node, Texture, cube, glb_from_parts, png, png_header_only, zip};
use crate::util::{assert_schema_valid, check, run, run_stdin, validate_bytes};
use meshcheck::error::{Error, ErrorCode};
use meshcheck::report::{InputFormat, Report, Status};
use serde_json::{Value, json};
use std::io::Write;
use std::time::{Duration, Instant};

/// Generous bound for any single hostile case on a busy 2-core machine.
const BOUNDED: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// CPU time this thread has used so far, from `/proc/thread-self/schedstat`
/// (nanoseconds on the CPU); `None` where that file does not exist.
fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok().map(Duration::from_nanos)
}

/// Validates `bytes`, asserting the call ends within `limit`. The loader and
/// the checks run on the calling thread (SPEC-001's reference validator runs
/// beside them on its own), so the limit is checked against this thread's CPU
/// time where Linux reports it (other builds on a small machine stretch wall
/// time, not CPU time), and against wall time otherwise; wall time must in
/// any case stay within [`BOUNDED`].
fn validate_within(name: &str, bytes: Vec<u8>, limit: Duration) -> Result<Report, Error> {
    let (wall, cpu) = (Instant::now(), thread_cpu());
    let result = validate_bytes(name, bytes);
    let took_wall = wall.elapsed();
    let took = match (cpu, thread_cpu()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => took_wall,
    };
    assert!(took < limit, "{name} took {took:?} of CPU, over {limit:?}");
    assert!(took_wall < BOUNDED.max(limit), "{name} took {took_wall:?}, over {BOUNDED:?}");
    result
}

/// The error code `bytes` is refused with.
fn refused(name: &str, bytes: Vec<u8>) -> ErrorCode {
    match validate_within(name, bytes, BOUNDED) {
        Ok(r) => panic!("{name} was accepted (verdict {:?}) but should be refused", r.verdict),
        Err(e) => {
            assert!(!e.message.is_empty(), "{name}: the error has a message");
            e.code
        }
    }
}

/// The report for `bytes`, which must load.
fn accepted(name: &str, bytes: Vec<u8>) -> Report {
    let r = validate_within(name, bytes, BOUNDED).unwrap_or_else(|e| panic!("{name} was refused: {e}"));
    assert_schema_valid(&serde_json::to_value(&r).unwrap());
    r
}

/// The report for a cube whose only primitive cannot be read: the file is
/// accepted, every check that reads geometry skips naming the primitive's
/// JSON pointer, and the report's notes say why (`why` is a fragment of the reason).
fn unread_cube(name: &str, bytes: Vec<u8>, why: &str) -> Report {
    let r = accepted(name, bytes);
    for id in ["GEO-002", "GEO-004", "PERF-001", "XFM-001", "UV-001", "TOP-003"] {
        let c = check(&r, id);
        assert_eq!(c.status, Status::Skipped, "{name}: {id} {:?}", c.measured);
        let reason = c.measured["reason"].as_str().unwrap();
        assert!(reason.contains("/meshes/0/primitives/0") && reason.contains(why), "{name}: {id}: {reason}");
    }
    assert!(
        r.notes.iter().any(|n| n.pointer == "/meshes/0/primitives/0" && n.message.contains(why)),
        "{name}: {:?}",
        r.notes
    );
    // What does not need the geometry is still measured.
    assert_ne!(check(&r, "SPEC-004").status, Status::Skipped);
    r
}

/// Whether a note of `r` concerns `pointer` and says `fragment`.
fn has_note(r: &Report, pointer: &str, fragment: &str) -> bool {
    r.notes.iter().any(|n| n.pointer == pointer && n.message.contains(fragment))
}

fn measured_u64(r: &Report, id: &str, key: &str) -> u64 {
    check(r, id).measured.get(key).and_then(Value::as_u64).unwrap_or_else(|| panic!("{id} has integer {key}"))
}

/// A 1 m cube as GLB JSON and binary buffer, ready to mutate.
fn cube_parts() -> (Value, Vec<u8>) {
    Doc::single(cube(1.0)).to_json(Layout::Glb)
}

/// Index of the cube's POSITION accessor.
fn position_accessor(json: &Value) -> usize {
    json["meshes"][0]["primitives"][0]["attributes"]["POSITION"].as_u64().unwrap() as usize
}

/// A GLB 2 container with the given chunks, in the given order, each padded
/// to four bytes (JSON with spaces, others with zeros).
fn raw_glb(chunks: &[(&[u8; 4], &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (kind, data) in chunks {
        let pad = if *kind == b"JSON" { b' ' } else { 0 };
        let mut d = data.to_vec();
        d.resize(d.len().next_multiple_of(4), pad);
        body.extend_from_slice(&(d.len() as u32).to_le_bytes());
        body.extend_from_slice(*kind);
        body.extend_from_slice(&d);
    }
    let mut out = Vec::new();
    out.extend_from_slice(b"glTF");
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&((12 + body.len()) as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// A textured cube whose image is the external file `tex.png`.
fn textured_doc(image: Vec<u8>) -> Doc {
    let mut prim = cube(1.0);
    prim.material = Some(0);
    let mut doc = Doc::single(prim);
    doc.materials.push(Material { base_color_texture: Some(0), ..Material::default() });
    doc.textures.push(Texture { source: 0 });
    doc.images.push(Image { bytes: image, mime: "image/png".into(), uri: Some("tex.png".into()) });
    doc
}

/// A textured cube with its image inside the GLB.
fn textured_glb(image: Vec<u8>) -> Vec<u8> {
    let mut doc = textured_doc(image);
    doc.images[0].uri = None;
    doc.to_glb()
}

/// A zip built entry by entry with the zip crate's writer.
fn zip_with(build: impl FnOnce(&mut zip::ZipWriter<std::io::Cursor<Vec<u8>>>)) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    build(&mut w);
    w.finish().unwrap().into_inner()
}

fn stored() -> zip::write::SimpleFileOptions {
    zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored)
}

/// The .gltf + .bin of a plain cube, as zip entries.
fn cube_files() -> Vec<(String, Vec<u8>)> {
    Doc::single(cube(1.0)).to_gltf_files("model")
}

/// A cube bundle with 64 MiB of zeros deflated beside it (about 1000:1).
fn ratio_bomb_zip() -> Vec<u8> {
    zip_with(|w| {
        for (name, bytes) in cube_files() {
            w.start_file(name, stored()).unwrap();
            w.write_all(&bytes).unwrap();
        }
        let deflate = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        w.start_file("zeros.bin", deflate).unwrap();
        let chunk = vec![0u8; 1 << 20];
        for _ in 0..64 {
            w.write_all(&chunk).unwrap();
        }
    })
}

/// A GLB whose POSITION accessor claims 2^31 elements and has no bufferView
/// (so it would be zero-filled: 2^31 x 3 x 4 bytes = 24 GiB).
fn zero_filled_bomb_glb() -> Vec<u8> {
    let (mut json, bin) = cube_parts();
    let pos = position_accessor(&json);
    let acc = json["accessors"][pos].as_object_mut().unwrap();
    acc.remove("bufferView");
    acc.insert("count".into(), json!(1u64 << 31));
    glb_from_parts(&json, &bin)
}

// ---------------------------------------------------------------------------
// Not glTF at all
// ---------------------------------------------------------------------------

#[test]
fn random_bytes_are_unsupported() {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut bytes: Vec<u8> = (0..4096)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    bytes[0] = 0x01; // not `g`, `P`, `{`, a BOM or whitespace
    assert_eq!(refused("noise.bin", bytes), ErrorCode::UnsupportedFormat);
}

#[test]
fn empty_input_is_unsupported() {
    assert_eq!(refused("empty.glb", Vec::new()), ErrorCode::UnsupportedFormat);
    assert_eq!(refused("blank.gltf", b"   \n".to_vec()), ErrorCode::UnsupportedFormat);
}

#[test]
fn gltf_1_json_is_unsupported() {
    let code = refused("old.gltf", br#"{"asset":{"version":"1.0"}}"#.to_vec());
    assert_eq!(code, ErrorCode::UnsupportedFormat);
    // The same inside a GLB container.
    let glb = glb_from_parts(&json!({"asset": {"version": "1.0"}}), &[]);
    assert_eq!(refused("old.glb", glb), ErrorCode::UnsupportedFormat);
}

#[test]
fn truncated_json_is_malformed() {
    assert_eq!(refused("cut.gltf", b"{".to_vec()), ErrorCode::MalformedGltf);
    let full = Doc::single(cube(1.0)).to_gltf_embedded();
    assert_eq!(refused("cut2.gltf", full[..full.len() / 2].to_vec()), ErrorCode::MalformedGltf);
}

#[test]
fn json_that_is_not_a_document_is_malformed() {
    assert_eq!(refused("array.gltf", b"{\"asset\": 5}".to_vec()), ErrorCode::MalformedGltf);
    assert_eq!(refused("noasset.gltf", b"{}".to_vec()), ErrorCode::MalformedGltf);
}

// ---------------------------------------------------------------------------
// GLB container
// ---------------------------------------------------------------------------

#[test]
fn glb_header_length_that_is_off_is_read_with_a_note() {
    for delta in [100i64, -100] {
        let mut glb = Doc::single(cube(1.0)).to_glb();
        let claimed = (glb.len() as i64 + delta) as u32;
        glb[8..12].copy_from_slice(&claimed.to_le_bytes());
        let r = accepted("long.glb", glb);
        assert!(has_note(&r, "", "the GLB header declares"), "{:?}", r.notes);
        assert_eq!(measured_u64(&r, "PERF-001", "triangles"), 12);
        assert!(check(&r, "PERF-001").measured.get("notes").is_none(), "a container note is not a geometry note");
    }
}

#[test]
fn glb_truncated_reports_what_remains_and_a_short_header_is_malformed() {
    let glb = Doc::single(cube(1.0)).to_glb();
    // The BIN chunk lost its last 16 bytes: the primitive reads past them.
    let r = unread_cube("short.glb", glb[..glb.len() - 16].to_vec(), "bufferView");
    assert!(has_note(&r, "", "declares"), "{:?}", r.notes);
    assert_eq!(refused("header.glb", glb[..11].to_vec()), ErrorCode::MalformedGltf);
    assert_eq!(refused("nothing-after-header.glb", glb[..12].to_vec()), ErrorCode::MalformedGltf);
}

#[test]
fn glb_chunk_lengths_that_are_off_are_read_with_a_note() {
    // The JSON chunk's length: the JSON value is read whole, and BIN after it.
    let mut glb = Doc::single(cube(1.0)).to_glb();
    glb[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    let r = accepted("json-chunk.glb", glb);
    assert!(has_note(&r, "", "JSON chunk declares"), "{:?}", r.notes);
    assert_eq!(measured_u64(&r, "PERF-001", "triangles"), 12);

    // The BIN chunk's length: it holds what remains.
    let (json, bin) = cube_parts();
    let mut glb = glb_from_parts(&json, &bin);
    let json_len = u32::from_le_bytes(glb[12..16].try_into().unwrap()) as usize;
    let bin_at = 20 + json_len;
    glb[bin_at..bin_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let r = accepted("bin-chunk.glb", glb);
    assert!(has_note(&r, "", "GLB chunk 1"), "{:?}", r.notes);
    assert_eq!(measured_u64(&r, "PERF-001", "triangles"), 12);

    // A JSON chunk that runs past the file and holds no JSON value is malformed.
    let mut glb = raw_glb(&[(b"JSON", b"[1, 2")]);
    glb[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(refused("no-json.glb", glb), ErrorCode::MalformedGltf);
}

#[test]
fn glb_version_1_is_unsupported_and_other_versions_malformed() {
    let mut glb = Doc::single(cube(1.0)).to_glb();
    glb[4..8].copy_from_slice(&1u32.to_le_bytes());
    assert_eq!(refused("v1.glb", glb.clone()), ErrorCode::UnsupportedFormat, "glTF 1.0, as in JSON");
    glb[4..8].copy_from_slice(&0u32.to_le_bytes());
    assert_eq!(refused("v0.glb", glb), ErrorCode::MalformedGltf);
}

#[test]
fn glb_json_chunk_not_first_is_malformed() {
    let (json, bin) = cube_parts();
    let text = json.to_string();
    let glb = raw_glb(&[(b"BIN\0", &bin), (b"JSON", text.as_bytes())]);
    assert_eq!(refused("order.glb", glb), ErrorCode::MalformedGltf);
    // Sanity: the same chunks in the right order load.
    accepted("ordered.glb", raw_glb(&[(b"JSON", text.as_bytes()), (b"BIN\0", &bin)]));
}

// ---------------------------------------------------------------------------
// Accessors, buffers and views that lie
// ---------------------------------------------------------------------------

#[test]
fn accessor_count_beyond_its_view_skips_the_primitive() {
    let (mut json, bin) = cube_parts();
    let pos = position_accessor(&json);
    json["accessors"][pos]["count"] = json!(1u64 << 31);
    unread_cube("count.glb", glb_from_parts(&json, &bin), &format!("accessor {pos} needs"));
}

#[test]
fn index_accessor_count_beyond_its_view_skips_the_primitive() {
    let (mut json, bin) = cube_parts();
    let idx = json["meshes"][0]["primitives"][0]["indices"].as_u64().unwrap() as usize;
    json["accessors"][idx]["count"] = json!(u32::MAX);
    unread_cube("indices.glb", glb_from_parts(&json, &bin), &format!("accessor {idx} needs"));
}

#[test]
fn accessor_without_view_is_charged_to_the_decode_budget() {
    // 2^31 VEC3 floats with no bufferView would be 24 GiB of zeros. The decode
    // budget refuses it before anything is allocated, so this is fast.
    let result = validate_within("zeros.glb", zero_filled_bomb_glb(), Duration::from_secs(1));
    assert_eq!(result.unwrap_err().code, ErrorCode::MalformedGltf);
}

#[test]
fn buffer_byte_length_beyond_its_data_is_read_with_a_note() {
    for (name, claimed) in [("buffer.glb", 100u64), ("tera.glb", 1_000_000_000_000)] {
        let (mut json, bin) = cube_parts();
        json["buffers"][0]["byteLength"] = json!(bin.len() as u64 + claimed);
        let r = accepted(name, glb_from_parts(&json, &bin));
        assert!(has_note(&r, "/buffers/0", "declares"), "{name}: {:?}", r.notes);
        // Every view lies within the bytes it holds: all is measured.
        assert_eq!(measured_u64(&r, "PERF-001", "triangles"), 12);
    }
}

#[test]
fn buffer_view_past_the_end_skips_the_primitive() {
    let (mut json, bin) = cube_parts();
    let pos = position_accessor(&json);
    let view = json["accessors"][pos]["bufferView"].as_u64().unwrap() as usize;
    json["bufferViews"][view]["byteOffset"] = json!(bin.len() - 8);
    unread_cube("view.glb", glb_from_parts(&json, &bin), &format!("bufferView {view} spans"));

    // An offset that would overflow when added to the length.
    let (mut json, bin) = cube_parts();
    json["bufferViews"][view]["byteOffset"] = json!(u64::MAX - 4);
    unread_cube("view-overflow.glb", glb_from_parts(&json, &bin), &format!("bufferView {view}"));
}

#[test]
fn indices_out_of_range_still_report() {
    let mut prim = cube(1.0);
    prim.indices.as_mut().unwrap()[0] = 1000;
    prim.indices.as_mut().unwrap()[4] = 60_000;
    let r = accepted("badidx.glb", Doc::single(prim).to_glb());
    // Every triangle the primitive draws is counted, valid or not.
    assert_eq!(measured_u64(&r, "PERF-001", "triangles"), 12);
    assert_eq!(r.stats.triangles, 12);
}

#[test]
fn non_finite_positions_are_left_out_of_bounds() {
    let mut prim = cube(1.0);
    prim.positions[0] = [f32::NAN, 0.0, 0.0];
    prim.positions[1] = [f32::INFINITY, f32::NEG_INFINITY, 0.0];
    let r = accepted("nan.glb", Doc::single(prim).to_glb());
    let c = check(&r, "XFM-001");
    assert_ne!(c.status, Status::Skipped);
    let largest = c.measured["largest_extent_m"].as_f64().expect("a finite number, not null");
    assert!(largest.is_finite() && (largest - 1.0).abs() < 1e-6, "largest_extent_m {largest}");
    for key in ["extent_m", "bounds_min", "bounds_max"] {
        let arr = c.measured[key].as_array().unwrap();
        assert!(arr.iter().all(|v| v.as_f64().is_some_and(f64::is_finite)), "{key}: {arr:?}");
    }
    assert_eq!(measured_u64(&r, "PERF-001", "triangles"), 12);
}

#[test]
fn all_positions_non_finite_still_report() {
    let mut prim = cube(1.0);
    for p in &mut prim.positions {
        *p = [f32::NAN; 3];
    }
    let r = accepted("allnan.glb", Doc::single(prim).to_glb());
    // Nothing finite to bound: the scale checks have nothing to measure.
    assert_eq!(check(&r, "XFM-001").status, Status::Skipped);
}

// ---------------------------------------------------------------------------
// Node graphs
// ---------------------------------------------------------------------------

#[test]
fn node_cycle_reports() {
    let mut doc = Doc::single(cube(1.0));
    doc.nodes[0].children = vec![1];
    doc.nodes.push(Node { children: vec![0], ..Node::default() });
    let r = accepted("cycle.glb", doc.to_glb());
    assert_eq!(measured_u64(&r, "PERF-001", "triangles"), 12);
    assert_eq!(r.stats.nodes, 2);
    assert_eq!(check(&r, "XFM-003").status, Status::Pass);
}

#[test]
fn self_parent_and_shared_children_report() {
    let mut doc = Doc::single(cube(1.0));
    doc.nodes[0].children = vec![0, 1, 1];
    doc.nodes.push(Node { mesh: Some(0), children: vec![0, 1], ..Node::default() });
    doc.scene_roots = vec![0, 1, 0];
    let r = accepted("selfcycle.glb", doc.to_glb());
    assert_eq!(r.stats.nodes, 2);
    assert_eq!(measured_u64(&r, "PERF-001", "triangles"), 24);
}

#[test]
fn node_index_out_of_range_is_left_out_with_a_note() {
    let (mut json, bin) = cube_parts();
    json["nodes"][0]["children"] = json!([7]);
    let r = accepted("dangling.glb", glb_from_parts(&json, &bin));
    assert!(has_note(&r, "/nodes/0/children", "names node 7"), "{:?}", r.notes);
    assert_eq!(measured_u64(&r, "PERF-001", "triangles"), 12);
    // The checks that read the scene carry the note.
    let notes = check(&r, "GEO-002").measured["notes"].as_array().unwrap().clone();
    assert!(notes.iter().any(|n| n.as_str().unwrap().contains("names node 7")), "{notes:?}");
}

#[test]
fn deep_node_chain_reports_quickly() {
    const DEPTH: usize = 100_000;
    let (mut json, bin) = cube_parts();
    let nodes: Vec<Value> = (0..DEPTH)
        .map(|i| {
            if i + 1 < DEPTH {
                json!({ "children": [i + 1], "translation": [0.0, 0.0, 0.0] })
            } else {
                json!({ "mesh": 0 })
            }
        })
        .collect();
    json["nodes"] = Value::Array(nodes);
    json["scenes"] = json!([{ "nodes": [0] }]);
    let glb = glb_from_parts(&json, &bin);
    let r = validate_within("deep.glb", glb, Duration::from_secs(1)).expect("a deep chain is a valid document");
    assert_eq!(r.stats.nodes, DEPTH as u64);
    assert_eq!(measured_u64(&r, "PERF-001", "triangles"), 12);
    assert_eq!(measured_u64(&r, "XFM-003", "nodes_checked"), DEPTH as u64);
}

/// `[` x depth, then `]` x depth.
fn nested_arrays(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn json_nesting_bomb_in_extensions_is_malformed() {
    // Extension objects are parsed into JSON values, where serde_json's
    // recursion limit stops the descent long before the stack runs out.
    let bomb = format!(r#"{{"asset":{{"version":"2.0"}},"extensions":{{"X_bomb":{}}}}}"#, nested_arrays(100_000));
    assert_eq!(refused("bomb.gltf", bomb.clone().into_bytes()), ErrorCode::MalformedGltf);
    let glb = raw_glb(&[(b"JSON", bomb.as_bytes())]);
    assert_eq!(refused("bomb.glb", glb), ErrorCode::MalformedGltf);
    // Objects nest as deeply.
    let objects = format!(
        r#"{{"asset":{{"version":"2.0"}},"extensions":{{"X_bomb":{}1{}}}}}"#,
        "{\"a\":".repeat(100_000),
        "}".repeat(100_000)
    );
    assert_eq!(refused("objbomb.gltf", objects.into_bytes()), ErrorCode::MalformedGltf);
}

#[test]
fn json_nesting_bomb_in_extras_is_skipped_over() {
    // `extras` are kept as raw JSON and skipped without recursion: deep but
    // well-formed extras are legal glTF and the document still reports.
    let bomb = format!(
        r#"{{"asset":{{"version":"2.0","extras":{}}},"extras":{}}}"#,
        nested_arrays(100_000),
        nested_arrays(100_000)
    );
    let r = accepted("extras.gltf", bomb.into_bytes());
    assert_eq!(r.stats.nodes, 0);
    // Unbalanced nesting is not JSON at all.
    let broken = format!(r#"{{"asset":{{"version":"2.0","extras":{}}}}}"#, "[".repeat(100_000));
    assert_eq!(refused("broken.gltf", broken.into_bytes()), ErrorCode::MalformedGltf);
}

// ---------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------

#[test]
fn huge_claimed_image_is_measured_from_its_header() {
    let r = accepted("huge-image.glb", textured_glb(png_header_only(65535, 65535)));
    let c = check(&r, "MAT-001");
    assert_eq!(c.status, Status::Fail);
    assert_eq!(measured_u64(&r, "MAT-001", "max_dimension_px"), 65535);
    let mat2 = check(&r, "MAT-002");
    assert_eq!(mat2.status, Status::Fail);
    let gpu = measured_u64(&r, "MAT-002", "gpu_bytes");
    assert_eq!(gpu, meshcheck::asset::texture::rgba8_mip_chain_bytes(65535, 65535));
    assert!(gpu > 17_000_000_000, "{gpu}");
}

#[test]
fn image_that_is_not_an_image_reports_unreadable() {
    let r = accepted("notimage.glb", textured_glb(b"this is not a picture".to_vec()));
    assert_eq!(measured_u64(&r, "MAT-001", "unreadable"), 1);
    assert_eq!(measured_u64(&r, "MAT-002", "gpu_bytes"), 0);
    // A PNG signature with nothing behind it.
    let r = accepted("sigonly.glb", textured_glb(b"\x89PNG\r\n\x1a\n".to_vec()));
    assert_eq!(measured_u64(&r, "MAT-001", "unreadable"), 1);
}

#[test]
fn image_view_out_of_range_reports_unreadable() {
    let (mut json, bin) = textured_doc(png(4, 4)).to_json(Layout::Glb);
    json["images"][0] = json!({ "bufferView": 999, "mimeType": "image/png" });
    let r = accepted("imgview.glb", glb_from_parts(&json, &bin));
    assert_eq!(measured_u64(&r, "MAT-001", "unreadable"), 1);
}

/// A structurally valid KTX2 file of `width` x `height` with `layers` array
/// layers, `levels` empty mip levels each declaring `uncompressed` bytes, the
/// given supercompression scheme (1 = BasisLZ, i.e. ETC1S) and no DFD blocks.
fn ktx2(width: u32, height: u32, layers: u32, levels: u32, scheme: u32, uncompressed: u64) -> Vec<u8> {
    let mut out = vec![0xAB, 0x4B, 0x54, 0x58, 0x20, 0x32, 0x30, 0xBB, 0x0D, 0x0A, 0x1A, 0x0A];
    let index_len = levels.max(1) as usize * 24;
    let dfd_at = (80 + index_len) as u32;
    // vkFormat, typeSize, width, height, depth, layers, faces, levels, scheme,
    // dfd offset and length, kvd offset and length.
    for v in [0u32, 1, width, height, 0, layers, 1, levels, scheme, dfd_at, 4, 0, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&[0; 16]); // sgd offset and length
    for _ in 0..levels.max(1) {
        out.extend_from_slice(&0u64.to_le_bytes()); // byteOffset
        out.extend_from_slice(&0u64.to_le_bytes()); // byteLength
        out.extend_from_slice(&uncompressed.to_le_bytes());
    }
    out.extend_from_slice(&4u32.to_le_bytes()); // DFD: its total length only
    out.extend_from_slice(&[0; 4]);
    out
}

#[test]
fn ktx2_header_is_measured() {
    let r = accepted("small.glb", textured_glb(ktx2(512, 256, 0, 1, 0, 1000)));
    let c = check(&r, "MAT-001");
    assert_eq!(c.measured["textures"][0]["format"], "ktx2");
    assert_eq!(measured_u64(&r, "MAT-001", "max_dimension_px"), 512);
    assert_eq!(measured_u64(&r, "MAT-002", "gpu_bytes"), 1000);
}

/// A report for a hostile KTX2 texture: the header is either refused
/// (unreadable) or measured, and a measured estimate must not wrap around to
/// something small enough to pass MAT-002.
fn assert_ktx2_reports(name: &str, image: Vec<u8>) {
    let r = accepted(name, textured_glb(image));
    assert_eq!(measured_u64(&r, "MAT-001", "images"), 1);
    if measured_u64(&r, "MAT-001", "unreadable") == 0 {
        assert_eq!(check(&r, "MAT-002").status, Status::Fail, "{:?}", check(&r, "MAT-002").measured);
    }
}

/// Found by this suite: `read_ktx2` shifts the width right by the level
/// number, which overflows from level 64 on. The panic happens in the loader,
/// outside the checks' panic guard, so it takes the whole validation down
/// (debug builds); release builds shift by the level modulo 64 instead.
#[test]
fn ktx2_with_more_than_64_levels_reports() {
    let r = accepted("levels.glb", textured_glb(ktx2(1024, 1024, 0, 70, 0, 0)));
    assert_eq!(measured_u64(&r, "MAT-001", "images"), 1);
}

/// Found by this suite: the ETC1S size estimate multiplies block counts by
/// the layer count without overflow checks (panic in debug, wrap in release).
#[test]
fn ktx2_with_huge_etc1s_dimensions_reports() {
    assert_ktx2_reports("etc1s.glb", ktx2(u32::MAX, u32::MAX, u32::MAX, 1, 1, 0));
}

/// Found by this suite: level sizes declared by the file are summed without
/// overflow checks (panic in debug, wrap in release).
#[test]
fn ktx2_with_huge_declared_level_sizes_reports() {
    assert_ktx2_reports("levelsize.glb", ktx2(64, 64, 0, 2, 0, u64::MAX / 2 + 1));
}

/// Found by this suite: MAT-002 sums per-image estimates with plain `+`.
/// Three 2^30 x 2^30 headers and one 1x1 image add up to exactly 2^64, which
/// wraps to 0 in a release build (MAT-002 then passes) and panics in a debug
/// build (MAT-002 is then skipped as an internal error).
#[test]
fn texture_memory_total_does_not_wrap() {
    let mut prim = cube(1.0);
    prim.material = Some(0);
    let mut second = prim.clone();
    second.material = Some(1);
    let mut doc = Doc::single(prim);
    doc.meshes[0].primitives.push(second);
    doc.materials.push(Material { base_color_texture: Some(0), normal_texture: Some(1), ..Material::default() });
    doc.materials.push(Material { base_color_texture: Some(2), normal_texture: Some(3), ..Material::default() });
    for i in 0..4 {
        doc.textures.push(Texture { source: i });
        let bytes = if i < 3 { png_header_only(1 << 30, 1 << 30) } else { png(1, 1) };
        doc.images.push(Image { bytes, mime: "image/png".into(), uri: None });
    }
    let each = meshcheck::asset::texture::rgba8_mip_chain_bytes(1 << 30, 1 << 30);
    let r = accepted("sum.glb", doc.to_glb());
    let c = check(&r, "MAT-002");
    assert_eq!(c.status, Status::Fail, "{:?}", c.measured);
    assert!(measured_u64(&r, "MAT-002", "gpu_bytes") >= 3 * each);
}

// ---------------------------------------------------------------------------
// Zip bundles
// ---------------------------------------------------------------------------

#[test]
fn zip_without_a_gltf_is_incomplete() {
    let z = zip(&[("readme.txt".into(), b"hello".to_vec()), ("model.bin".into(), vec![0; 64])]);
    assert_eq!(refused("nothing.zip", z), ErrorCode::BundleIncomplete);
}

#[test]
fn zip_missing_its_bin_is_incomplete() {
    let files: Vec<_> = cube_files().into_iter().filter(|(n, _)| !n.ends_with(".bin")).collect();
    assert_eq!(files.len(), 1);
    assert_eq!(refused("nobin.zip", zip(&files)), ErrorCode::BundleIncomplete);
}

#[test]
fn zip_entry_escaping_the_bundle_is_unsupported() {
    for evil in ["../evil.bin", "/abs.bin", "a/../../evil.bin", "..\\evil.bin", "C:/evil.bin"] {
        let mut files = cube_files();
        files.push((evil.to_string(), vec![1, 2, 3]));
        assert_eq!(refused(evil, zip(&files)), ErrorCode::UnsupportedFormat, "entry {evil}");
    }
}

#[test]
fn zip_with_too_many_entries_is_unsupported() {
    let limit = meshcheck::asset::bundle::MAX_ZIP_ENTRIES;
    let z = zip_with(|w| {
        for (name, bytes) in cube_files() {
            w.start_file(name, stored()).unwrap();
            w.write_all(&bytes).unwrap();
        }
        for i in 0..limit + 1 - 2 {
            w.start_file(format!("f{i}.txt"), stored()).unwrap();
        }
    });
    assert_eq!(refused("many.zip", z), ErrorCode::UnsupportedFormat);
}

#[test]
fn zip_with_exactly_the_entry_limit_loads() {
    let limit = meshcheck::asset::bundle::MAX_ZIP_ENTRIES;
    let z = zip_with(|w| {
        for (name, bytes) in cube_files() {
            w.start_file(name, stored()).unwrap();
            w.write_all(&bytes).unwrap();
        }
        for i in 0..limit - 2 {
            w.start_file(format!("f{i}.txt"), stored()).unwrap();
        }
    });
    let r = accepted("limit.zip", z);
    assert_eq!(r.input.format, InputFormat::Zip);
}

#[test]
fn zip_ratio_bomb_is_unsupported() {
    let z = ratio_bomb_zip();
    assert!(z.len() < 1 << 20, "64 MiB of zeros deflates small ({} bytes)", z.len());
    assert_eq!(refused("bomb.zip", z), ErrorCode::UnsupportedFormat);
}

#[test]
fn zip_symlink_entry_is_unsupported() {
    let z = zip_with(|w| {
        for (name, bytes) in cube_files() {
            w.start_file(name, stored()).unwrap();
            w.write_all(&bytes).unwrap();
        }
        w.add_symlink("tex.png", "/etc/passwd", zip::write::SimpleFileOptions::default()).unwrap();
    });
    assert_eq!(refused("link.zip", z), ErrorCode::UnsupportedFormat);
}

#[test]
fn zip_garbage_is_unsupported() {
    let mut bytes = b"PK\x03\x04".to_vec();
    bytes.extend((0..200u32).map(|i| (i * 37 % 251) as u8));
    assert_eq!(refused("garbage.zip", bytes), ErrorCode::UnsupportedFormat);
    // An end-of-central-directory record alone.
    let mut eocd = b"PK\x05\x06".to_vec();
    eocd.extend([0xFF; 18]);
    assert_eq!(refused("eocd.zip", eocd), ErrorCode::UnsupportedFormat);
}

#[test]
fn valid_zip_bundle_reports() {
    let files = textured_doc(png(8, 8)).to_gltf_files("model");
    assert_eq!(files.len(), 3);
    let uncompressed: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
    let z = zip(&files);
    let zip_len = z.len() as u64;
    let r = accepted("bundle.zip", z);
    assert_eq!(r.input.format, InputFormat::Zip);
    assert_eq!(r.input.main_file.as_deref(), Some("model.gltf"));
    assert_eq!(r.input.bytes, zip_len);
    let spec3 = check(&r, "SPEC-003");
    assert_eq!(spec3.status, Status::Pass);
    assert_eq!(measured_u64(&r, "SPEC-003", "resolved"), 2);
    assert_eq!(measured_u64(&r, "SPEC-004", "bytes"), uncompressed);
    assert_eq!(measured_u64(&r, "SPEC-004", "input_bytes"), zip_len);
    assert_eq!(measured_u64(&r, "MAT-001", "max_dimension_px"), 8);
    assert_eq!(measured_u64(&r, "PERF-001", "triangles"), 12);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["input"]["format"], "zip");
    assert_eq!(v["input"]["main_file"], "model.gltf");
}

#[test]
fn zip_uri_leaving_the_bundle_is_unresolved() {
    let mut doc = textured_doc(png(4, 4));
    doc.images[0].uri = Some("../tex.png".into());
    let files: Vec<_> = doc.to_gltf_files("model").into_iter().filter(|(n, _)| !n.starts_with("..")).collect();
    let r = accepted("escape.zip", zip(&files));
    let c = check(&r, "SPEC-003");
    assert_eq!(c.status, Status::Fail);
    assert_eq!(measured_u64(&r, "SPEC-003", "unresolved"), 1);
}

// ---------------------------------------------------------------------------
// Through the CLI
// ---------------------------------------------------------------------------

#[test]
fn cli_malformed_file_exits_3_with_an_error_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.glb");
    let mut glb = Doc::single(cube(1.0)).to_glb();
    glb[4..8].copy_from_slice(&7u32.to_le_bytes()); // no such GLB version
    std::fs::write(&path, glb).unwrap();
    let out = run(&["validate", path.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(3), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let obj = v.as_object().unwrap();
    assert_eq!(obj.keys().collect::<Vec<_>>(), ["error"]);
    assert_eq!(v["error"]["code"], "MALFORMED_GLTF");
    assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
}

#[test]
fn cli_unsupported_file_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noise.glb");
    std::fs::write(&path, b"\x01\x02\x03 definitely not a model").unwrap();
    let out = run(&["validate", path.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(3));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["code"], "UNSUPPORTED_FORMAT");
}

#[test]
fn cli_reads_standard_input() {
    let glb = Doc::single(cube(1.0)).to_glb();
    let out = run_stdin(&["validate", "-", "--format", "json"], &glb);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is a JSON report");
    assert_eq!(v["input"]["filename"], "-");
    assert_eq!(v["input"]["format"], "glb");
    assert_eq!(v["input"]["bytes"], glb.len());
    assert_schema_valid(&v);

    // A malformed GLB on standard input gives the envelope too.
    let bad = glb[..11].to_vec();
    let out = run_stdin(&["validate", "-", "--format", "json"], &bad);
    assert_eq!(out.status.code(), Some(3));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["code"], "MALFORMED_GLTF");
}

/// Runs the binary on `path` under `ulimit -v` (about 2 GB of virtual
/// memory); `None` when bash is not available.
fn run_capped(path: &std::path::Path) -> Option<std::process::Output> {
    let exe = crate::util::bin().get_program().to_owned();
    std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"ulimit -v 2000000 && exec "$0" validate "$1" --format json -j 1"#)
        .arg(exe)
        .arg(path)
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
}

#[test]
fn cli_decode_bomb_under_a_memory_cap_reports_the_error() {
    let dir = tempfile::tempdir().unwrap();
    // Control: a normal file validates under the cap, so the cap itself is no obstacle.
    let ok = dir.path().join("ok.glb");
    std::fs::write(&ok, Doc::single(cube(1.0)).to_glb()).unwrap();
    let Some(out) = run_capped(&ok) else {
        eprintln!("bash is not available; skipping the memory-capped run");
        return;
    };
    assert_eq!(out.status.code(), Some(0), "control run: {}", String::from_utf8_lossy(&out.stderr));

    let bomb = dir.path().join("zeros.glb");
    std::fs::write(&bomb, zero_filled_bomb_glb()).unwrap();
    let out = run_capped(&bomb).unwrap();
    // A 24 GiB allocation would abort under the cap; the budget refuses first.
    assert_eq!(out.status.code(), Some(3), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(v["error"]["code"], "MALFORMED_GLTF");
}

// ---------------------------------------------------------------------------
// Full mode: the renderer meets the same inputs
// ---------------------------------------------------------------------------

/// Hostile inputs that load also render (or fail RND-001 with a reason) in
/// full mode, in bounded time: non-finite positions, out-of-range indices,
/// images that lie about their size or are not images, a deep node chain.
#[test]
#[cfg(feature = "render")]
fn hostile_inputs_in_full_mode_report() {
    use meshcheck::engine::{Options, Selection, validate};
    use meshcheck::report::Mode;
    let opts = Options {
        mode: Mode::Full,
        selection: Selection::parse(&["RND".into(), "PERF-001".into()], &[]).unwrap(),
        ..Options::default()
    };
    let mut nan = cube(1.0);
    nan.positions[0] = [f32::NAN, 0.0, 0.0];
    nan.positions[1] = [f32::INFINITY, f32::NEG_INFINITY, 0.0];
    let mut all_nan = cube(1.0);
    all_nan.positions.iter_mut().for_each(|p| *p = [f32::NAN; 3]);
    let mut bad_idx = cube(1.0);
    bad_idx.indices.as_mut().unwrap()[0] = 1000;
    let (mut deep, bin) = cube_parts();
    deep["nodes"] = Value::Array(
        (0..20_000)
            .map(|i| if i + 1 < 20_000 { json!({ "children": [i + 1] }) } else { json!({ "mesh": 0 }) })
            .collect(),
    );
    deep["scenes"] = json!([{ "nodes": [0] }]);
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        // The two broken vertices are on the +X face, whose triangles the
        // GPU drops: the right view sees no face (the inner side of -X is culled).
        ("nan.glb", Doc::single(nan).to_glb(), false),
        ("allnan.glb", Doc::single(all_nan).to_glb(), false),
        ("badidx.glb", Doc::single(bad_idx).to_glb(), true),
        ("huge-image.glb", textured_glb(png_header_only(65535, 65535)), true),
        ("notimage.glb", textured_glb(b"this is not a picture".to_vec()), true),
        ("deep.glb", glb_from_parts(&deep, &bin), true),
    ];
    for (name, bytes, visible) in cases {
        let started = Instant::now();
        let r = validate(meshcheck::asset::Input::from_bytes(name, bytes), &opts)
            .unwrap_or_else(|e| panic!("{name}: refused in full mode: {e}"));
        assert!(started.elapsed() < BOUNDED, "{name} took {:?}", started.elapsed());
        let rnd1 = check(&r, "RND-001");
        assert_eq!(rnd1.status, Status::Pass, "{name}: {}", rnd1.message);
        let rnd2 = check(&r, "RND-002");
        assert_eq!(rnd2.status == Status::Pass, visible, "{name}: {}", rnd2.message);
        if name.contains("image") {
            let notes = rnd1.measured["notes"].as_array().unwrap();
            assert_eq!(notes.len(), 1, "{name}: the texture is named in notes: {notes:?}");
        }
        assert_schema_valid(&serde_json::to_value(&r).unwrap());
    }
}

// ---------------------------------------------------------------------------
// The fuzzers' reproducers, in process
// ---------------------------------------------------------------------------

/// A file of `fuzz/regressions/<dir>/`.
fn regression(dir: &str, name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions").join(dir).join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn millions_of_gpu_instances_are_charged_to_the_decode_budget() {
    // 8 million instances of a triangle from 362 bytes of JSON (the
    // instance matrices alone would be 1 GB); 1 million instances of three
    // primitives from a 1.4 KB GLB.
    for (dir, name) in [("gltf_json", "gpu-instancing-8M.gltf"), ("glb", "gpu-instancing-1M-instances.glb")] {
        let started = Instant::now();
        match validate_bytes(name, regression(dir, name)) {
            Err(e) => {
                assert_eq!(e.code, ErrorCode::MalformedGltf, "{name}: {e}");
                assert!(e.message.contains("decode budget"), "{name}: {}", e.message);
            }
            Ok(r) => panic!("{name} loaded ({:?}); its instances are over the budget", r.verdict),
        }
        assert!(started.elapsed() < BOUNDED, "{name} took {:?}", started.elapsed());
    }
}

#[test]
fn a_scene_too_big_to_weld_skips_the_geometry_checks_with_the_reason() {
    // One 100,000-vertex mesh drawn by 200 nodes (20 million world-space
    // vertices), and 16 million zero-filled positions: the report comes back
    // with GEO/TOP skipped and the estimate named, instead of gigabytes of weld.
    for name in ["mesh-reuse-200x100k.gltf", "viewless-positions-16M.gltf"] {
        let r = validate_within(name, regression("gltf_json", name), Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for id in ["GEO-002", "GEO-003", "GEO-004", "GEO-007", "TOP-001", "TOP-002"] {
            let c = check(&r, id);
            assert_eq!(c.status, Status::Skipped, "{name} {id}: {}", c.message);
            let reason = c.measured["reason"].as_str().unwrap_or_default();
            assert!(reason.contains("geometry budget"), "{name} {id}: {reason}");
        }
        assert!(measured_u64(&r, "PERF-002", "vertices") >= 16_000_000, "{name}: PERF still counts every vertex");
        assert_schema_valid(&serde_json::to_value(&r).unwrap());
    }
    // A real scene is welded: the budget is the file's decode budget.
    let r = accepted("cube.glb", Doc::single(cube(1.0)).to_glb());
    assert_eq!(check(&r, "GEO-002").status, Status::Pass);

    #[cfg(feature = "render")]
    {
        // In full mode the renderer refuses 16 million vertices (1.1 GB of
        // vertex buffers) by its own budget: RND-001 fails and says so.
        use meshcheck::engine::{Options, Selection, validate};
        let opts = Options {
            mode: meshcheck::report::Mode::Full,
            selection: Selection::parse(&["RND-001".into()], &[]).unwrap(),
            ..Options::default()
        };
        let name = "viewless-positions-16M.gltf";
        let input = meshcheck::asset::Input::from_bytes(name, regression("gltf_json", name));
        let r = validate(input, &opts).unwrap();
        let rnd = check(&r, "RND-001");
        assert_eq!(rnd.status, Status::Fail);
        assert!(rnd.message.contains("renderer's budget"), "{}", rnd.message);
    }
}

#[test]
fn zip_entries_claiming_more_compressed_bytes_than_the_archive_are_unsupported() {
    // 127 entries that all start at offset 0 and claim 6 MB compressed each
    // (8 MB inflated, a believable ratio), in a 15 KB file.
    let bytes = regression("zip_bundle", "overlapping-entries-lying-compressed-sizes.zip");
    match validate_within("overlap.zip", bytes, BOUNDED) {
        Err(e) => {
            assert_eq!(e.code, ErrorCode::UnsupportedFormat);
            assert!(e.message.contains("compressed bytes"), "{}", e.message);
        }
        Ok(_) => panic!("overlapping entries were accepted"),
    }
}

#[test]
fn a_file_named_by_many_buffers_is_held_and_counted_once() {
    // 1,000 buffers naming one 2.5 MB entry: held once (the loader and the
    // reference validator), and delivered once in SPEC-004.
    let r = accepted("shared.zip", regression("zip_bundle", "shared-buffer-1000x2.5MB.zip"));
    assert_eq!(check(&r, "SPEC-003").status, Status::Pass);
    let delivered = measured_u64(&r, "SPEC-004", "bytes");
    assert!((2_500_000..2_600_000).contains(&delivered), "delivered {delivered}");
    let z = zip_with(|w| {
        let files = Doc::single(cube(1.0)).to_gltf_files("model");
        for (name, bytes) in &files {
            w.start_file(name.as_str(), stored()).unwrap();
            w.write_all(bytes).unwrap();
        }
    });
    let once = accepted("cube.zip", z);
    assert!(measured_u64(&once, "SPEC-004", "bytes") > 0);
}

#[test]
fn a_ktx2_texel_block_dimension_of_255_is_read() {
    // The ktx2 crate (0.5.0) panics on it; meshcheck reads the header.
    let r = accepted("ktx2-dfd.gltf", regression("gltf_json", "ktx2-image-dfd-texel-dim-255.gltf"));
    assert_schema_valid(&serde_json::to_value(&r).unwrap());
}

// ---------------------------------------------------------------------------
// Peak memory, measured on the binary
// ---------------------------------------------------------------------------

/// Peak resident memory allowed for one hostile input through the binary in
/// checks_only mode (the decode budget of a small file is 256 MiB, and the
/// world mesh is held to the same; measured peaks are in docs/reliability.md).
const PEAK_CHECKS_ONLY: u64 = 512 << 20;
/// The same in full mode, where lavapipe's renderer adds its own.
const PEAK_FULL: u64 = 1024 << 20;

/// Runs the binary with `args` (at most 120 s) and returns the exit code,
/// standard output and the peak resident memory in bytes of the largest
/// process of its tree (the binary, or the reference validator it started).
fn run_measured(args: &[&str]) -> (Option<i32>, Vec<u8>, u64) {
    // The peak comes from a small Python parent's RUSAGE_CHILDREN: a child
    // forked from this (large) test process would carry this process's
    // high-water mark into its own through exec.
    const MEASURE: &str = "import resource, subprocess, sys\n\
        p = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)\n\
        sys.stderr.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n\
        sys.exit(p.returncode)\n";
    let exe = crate::util::bin().get_program().to_owned();
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(MEASURE)
        .arg(exe)
        .args(args)
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("python3 runs");
    let kib: u64 = String::from_utf8_lossy(&out.stderr).trim().parse().unwrap_or_else(|_| {
        panic!("no peak from the measuring parent (a hang past 120 s?): {}", String::from_utf8_lossy(&out.stderr))
    });
    (out.status.code(), out.stdout, kib * 1024)
}

#[test]
fn hostile_inputs_stay_within_a_memory_bound_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    let mut add = |name: &str, bytes: Vec<u8>| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        files.push(path);
    };
    add("zero-filled-24GiB.glb", zero_filled_bomb_glb());
    let (mut json, bin) = cube_parts();
    json["buffers"][0]["byteLength"] = json!(1_000_000_000_000u64);
    add("terabyte-buffer.glb", glb_from_parts(&json, &bin));
    let mut glb = Doc::single(cube(1.0)).to_glb();
    glb[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    add("chunk-overflow.glb", glb);
    add(
        "nesting-bomb.gltf",
        format!(r#"{{"asset":{{"version":"2.0"}},"extensions":{{"X":{}}}}}"#, nested_arrays(100_000)).into_bytes(),
    );
    let (mut deep, bin) = cube_parts();
    deep["nodes"] = Value::Array(
        (0..100_000)
            .map(|i| if i + 1 < 100_000 { json!({ "children": [i + 1] }) } else { json!({ "mesh": 0 }) })
            .collect(),
    );
    deep["scenes"] = json!([{ "nodes": [0] }]);
    add("deep-100k.glb", glb_from_parts(&deep, &bin));
    add("image-65535.glb", textured_glb(png_header_only(65535, 65535)));
    add("ratio-bomb.zip", ratio_bomb_zip());
    add(
        "entries-10001.zip",
        zip_with(|w| {
            for (name, bytes) in cube_files() {
                w.start_file(name, stored()).unwrap();
                w.write_all(&bytes).unwrap();
            }
            for i in 0..meshcheck::asset::bundle::MAX_ZIP_ENTRIES - 1 {
                w.start_file(format!("f{i}.txt"), stored()).unwrap();
            }
        }),
    );
    for (name, evil) in [("traversal.zip", "../evil.bin"), ("absolute.zip", "/abs.bin")] {
        let mut files = cube_files();
        files.push((evil.to_string(), vec![1, 2, 3]));
        add(name, zip(&files));
    }
    add(
        "symlink.zip",
        zip_with(|w| {
            for (name, bytes) in cube_files() {
                w.start_file(name, stored()).unwrap();
                w.write_all(&bytes).unwrap();
            }
            w.add_symlink("tex.png", "/etc/passwd", zip::write::SimpleFileOptions::default()).unwrap();
        }),
    );
    let (mut json, bin) = cube_parts();
    json["buffers"][0]["byteLength"] = json!(bin.len() + 100);
    add("short-buffer.glb", glb_from_parts(&json, &bin));
    let mut prim = cube(1.0);
    prim.positions[0] = [f32::NAN, 0.0, 0.0];
    prim.positions[1] = [f32::INFINITY, f32::NEG_INFINITY, 0.0];
    prim.indices.as_mut().unwrap()[0] = 60_000;
    add("nan-and-bad-indices.glb", Doc::single(prim).to_glb());
    let mut doc = Doc::single(cube(1.0));
    doc.nodes[0].children = vec![1];
    doc.nodes.push(Node { children: vec![0], ..Node::default() });
    add("node-cycle.glb", doc.to_glb());
    add("not-an-image.glb", textured_glb(b"this is not a picture".to_vec()));
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    for sub in ["glb", "gltf_json", "zip_bundle"] {
        let mut names: Vec<_> = std::fs::read_dir(root.join(sub)).unwrap().map(|e| e.unwrap().path()).collect();
        names.sort();
        files.extend(names);
    }
    let runs: Vec<(&std::path::Path, &str)> =
        files.iter().flat_map(|f| [(f.as_path(), "checks_only"), (f.as_path(), "full")]).collect();
    let results = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&(path, mode)) = runs.get(i) else { break };
                    let started = Instant::now();
                    let (code, stdout, peak) = run_measured(&[
                        "validate",
                        path.to_str().unwrap(),
                        "--format",
                        "json",
                        "--mode",
                        mode,
                        "-j",
                        "1",
                    ]);
                    results.lock().unwrap().push((path, mode, code, stdout, peak, started.elapsed()));
                }
            });
        }
    });
    let mut failures = Vec::new();
    for (path, mode, code, stdout, peak, took) in results.into_inner().unwrap() {
        let name = path.file_name().unwrap().to_string_lossy();
        let v: Value = serde_json::from_slice(&stdout).unwrap_or(Value::Null);
        let outcome = v["verdict"].as_str().or(v["error"]["code"].as_str()).unwrap_or("no JSON").to_string();
        eprintln!("{name:>52} {mode:>11}: exit {code:?}, {outcome}, peak {} MiB, {took:.1?}", peak >> 20);
        let limit = if mode == "full" { PEAK_FULL } else { PEAK_CHECKS_ONLY };
        let answered = matches!(code, Some(0..=3))
            && ["pass", "warn", "fail", "MALFORMED_GLTF", "UNSUPPORTED_FORMAT", "BUNDLE_INCOMPLETE"]
                .contains(&outcome.as_str());
        if !answered || peak > limit {
            failures.push(format!("{name} ({mode}): exit {code:?}, {outcome}, peak {} MiB", peak >> 20));
        }
    }
    assert!(failures.is_empty(), "over the bound or unanswered: {failures:#?}");
}
