//! Bodies shared by the fuzz targets in `fuzz_targets/`.
//!
//! Every target feeds untrusted bytes to one of meshcheck's public entry
//! points and checks that it returns (never panics, never hangs, never
//! allocates past the limits libFuzzer is given) with an answer that keeps
//! the library's documented promises: a load error is one of the input's
//! codes (never INTERNAL), every triangle a loaded primitive keeps names a
//! vertex that exists, and so on.

use meshcheck::asset::bundle::{self, Resolver, UriKind};
use meshcheck::asset::data::{BufferData, DocData};
use meshcheck::asset::scene::{self, MAX_UV_SETS, Primitive};
use meshcheck::asset::{self, Asset, Input, LoadOptions, Sniffed};
use meshcheck::error::{Error, ErrorCode};
use std::borrow::Cow;

pub mod synth;

/// A load may only fail for reasons the input decides.
pub fn assert_input_error(e: &Error) {
    assert!(
        matches!(e.code, ErrorCode::UnsupportedFormat | ErrorCode::MalformedGltf | ErrorCode::BundleIncomplete),
        "a load failed with {:?}, which is not an input error: {}",
        e.code,
        e.message
    );
}

/// Opens and loads `bytes` as the CLI and the service do (a lone upload: no
/// resources outside a zip bundle; the library's own decode budget), checks
/// the loaded asset's invariants and runs every check of the catalog on it
/// (SPEC-001 and the RND checks report skipped: no validator, no renderer).
pub fn load_and_check(filename: &str, bytes: &[u8]) {
    let input = Input::from_bytes(filename, bytes.to_vec());
    let opened = match asset::open(input) {
        Ok(o) => o,
        Err(e) => return assert_input_error(&e),
    };
    let asset = match asset::load_opened_with(&opened, LoadOptions::default()) {
        Ok(a) => a,
        Err(e) => return assert_input_error(&e),
    };
    assert_eq!(asset.info.bytes, bytes.len() as u64);
    check_asset(&asset);
    let opts = meshcheck::engine::Options::default();
    let report = meshcheck::engine::report_for(&asset, &opts);
    assert_eq!(report.checks.len(), meshcheck::checks::catalog::CATALOG.len());
    for c in &report.checks {
        // A check that panics is caught by the engine and reported skipped;
        // under libFuzzer the panic aborts first, but say so if one slips by.
        let reason = c.measured.get("reason").and_then(|r| r.as_str()).unwrap_or("");
        assert!(!reason.contains("internal error"), "check {} failed internally: {reason}", c.id);
    }
}

/// What a loaded asset promises.
pub fn check_asset(asset: &Asset) {
    let scene = &asset.scene;
    for p in &scene.primitives {
        check_primitive(p);
    }
    for inst in &scene.instances {
        assert!(inst.primitive < scene.primitives.len(), "an instance names a primitive that was not decoded");
    }
    assert_eq!(asset.images.len(), asset.root.images.len());
    for n in &scene.nodes {
        assert!(*n < asset.root.nodes.len());
    }
}

/// Every kept triangle names vertices that exist.
pub fn check_primitive(p: &Primitive) {
    let n = p.positions.len();
    for t in &p.triangles {
        assert!(t.iter().all(|&v| (v as usize) < n), "triangle {t:?} of {} names a vertex past {n}", p.pointer());
    }
    assert!(p.uvs.len() <= MAX_UV_SETS);
}

/// Decode budget of the accessor target's direct reads: smaller than the
/// library's 256 MiB floor so that each run stays quick; the budget logic is
/// the same whatever its size.
pub const ACCESSOR_BUDGET: u64 = 48 << 20;

/// Reads a container (GLB, .gltf or zip) into a document and its buffers the
/// way the loader does, without the loader's own checks on declared buffer
/// lengths (DocData must not trust the document either), and runs
/// [`exercise_doc`] and [`build_scene`] on it.
pub fn exercise_container(bytes: &[u8]) {
    let Ok(opened) = asset::open(Input::from_bytes("fuzz", bytes.to_vec())) else { return };
    let (json, bin) = match asset::sniff(&opened.main) {
        Ok(Sniffed::Glb) => match asset::glb::parse(&opened.main) {
            Ok(g) => (g.json, g.bin),
            Err(_) => return,
        },
        Ok(Sniffed::Json) => (&opened.main[..], None),
        _ => return,
    };
    let json = json.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(json);
    let Ok(root) = gltf::json::Root::from_slice(json) else { return };
    exercise_doc(&root, buffers(&root, bin, opened.resolver.as_ref()));
    build_scene(&root, buffers(&root, bin, opened.resolver.as_ref()));
}

fn buffers<'a>(root: &gltf::json::Root, bin: Option<&'a [u8]>, resolver: &dyn Resolver) -> Vec<BufferData<'a>> {
    root.buffers
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let fallback = b
                .extensions
                .as_ref()
                .and_then(|e| e.others.get("EXT_meshopt_compression"))
                .and_then(|m| m.get("fallback"))
                .and_then(|f| f.as_bool())
                .unwrap_or(false);
            let got = match (&b.uri, i, bin) {
                (Some(uri), _, _) => match bundle::classify_uri(uri) {
                    UriKind::Data => bundle::decode_data_uri(uri).ok(),
                    UriKind::Relative(p) => resolver.fetch(&bundle::normalise(&p).unwrap_or(p)).ok(),
                    UriKind::Unfetchable(_) => None,
                },
                (None, 0, Some(bin)) => return BufferData::Loaded(Cow::Borrowed(bin)),
                (None, _, _) => None,
            };
            match got {
                Some(bytes) => BufferData::Loaded(Cow::Owned(bytes)),
                None if fallback => BufferData::Fallback,
                None => BufferData::Missing { reason: "fuzz".into(), external: i % 2 == 0 },
            }
        })
        .collect()
}

/// Reads every buffer view and accessor of a document every way the loader
/// can (floats of 1-4 and 16 components, indices, arrays), decodes every
/// KHR_draco_mesh_compression primitive, checking lengths and index ranges.
pub fn exercise_doc(root: &gltf::json::Root, buffers: Vec<BufferData<'_>>) {
    let data = DocData::new(root, buffers, ACCESSOR_BUDGET);
    for v in 0..root.buffer_views.len().min(64) {
        let _ = data.view(v);
    }
    for (a, acc) in root.accessors.iter().enumerate().take(64) {
        let count = acc.count.0;
        for n in [1usize, 2, 3, 4, 16] {
            if let Ok(f) = data.read_floats(a, n) {
                assert_eq!(f.len() as u64, count * n as u64, "accessor {a} read as {n} components");
            }
        }
        if let Ok(ix) = data.read_indices(a) {
            assert_eq!(ix.len() as u64, count, "accessor {a} read as indices");
        }
        if let Ok(v) = data.read_vecs::<3>(a) {
            assert_eq!(v.len() as u64, count);
        }
    }
    for (m, mesh) in root.meshes.iter().enumerate().take(16) {
        for (p, prim) in mesh.primitives.iter().enumerate().take(16) {
            let Some(ext) = prim.extensions.as_ref().and_then(|e| e.others.get("KHR_draco_mesh_compression")) else {
                continue;
            };
            let mut out = Primitive { mesh: m, index: p, uvs: vec![None; MAX_UV_SETS], ..Primitive::default() };
            if meshcheck::asset::draco::decode(&data, m, p, ext, &mut out).is_ok() {
                check_primitive(&out);
                let n = out.positions.len();
                // Every Draco attribute holds one value per point; a stream
                // without POSITION leaves `positions` empty (and draws nothing).
                for uv in out.uvs.iter().flatten() {
                    assert!(n == 0 || uv.len() == n, "a Draco UV set has one UV per point ({} for {n})", uv.len());
                }
                assert_eq!(out.triangles.len() as u64 + out.invalid_triangles, out.triangle_count);
            }
        }
    }
}

/// Flattens the scene as the loader does (decoding every drawn primitive),
/// on a fresh budget.
pub fn build_scene(root: &gltf::json::Root, buffers: Vec<BufferData<'_>>) {
    let data = DocData::new(root, buffers, ACCESSOR_BUDGET);
    match scene::build(&data) {
        Ok(s) => {
            for p in &s.primitives {
                check_primitive(p);
            }
            for i in &s.instances {
                assert!(i.primitive < s.primitives.len());
            }
        }
        Err(e) => assert_input_error(&e),
    }
}
