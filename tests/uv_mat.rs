//! Issue 20's UV and MAT checks through the engine: UV-006 (UVs outside the
//! 0-1 square), UV-007 (mirrored UV triangles), UV-008 (texel density),
//! MAT-005 (power-of-two sides), MAT-006 (PBR base-colour range) and
//! MAT-007 (compression and KTX2 mip chains), on assets built in code and on
//! the Khronos asset-auditor cubes and sample models of the shared corpus.
//! Assertions are on status and structured `measured` values.

use crate::testkit::{Doc, Image, Layout, Material, Node, Prim, Texture, glb_from_parts, png, quad};
use crate::util::{assert_schema_valid, check, measured_f64, model, validate_with};
use meshcheck::engine::{Options, Selection};
use meshcheck::report::{CheckResult, Report, Status};
use serde_json::{Value, json};

const IDS: &[&str] = &["UV-006", "UV-007", "UV-008", "MAT-005", "MAT-006", "MAT-007"];

fn opts(profile: &str) -> Options {
    Options {
        selection: Selection::parse(&IDS.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &[]).unwrap(),
        profile: meshcheck::checks::catalog::profile(profile).expect("built-in profile"),
        ..Options::default()
    }
}

fn glb_report(bytes: Vec<u8>, profile: &str) -> Report {
    let r = validate_with("t.glb", bytes, &opts(profile)).expect("the asset loads");
    assert_schema_valid(&serde_json::to_value(&r).unwrap());
    r
}

fn report(doc: &Doc) -> Report {
    glb_report(doc.to_glb(), "web")
}

/// The document with `edit` applied to its JSON, as a GLB.
fn edited(doc: &Doc, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let (mut json, bin) = doc.to_json(Layout::Glb);
    edit(&mut json);
    glb_from_parts(&json, &bin)
}

fn u(c: &CheckResult, key: &str) -> u64 {
    c.measured.get(key).and_then(Value::as_u64).unwrap_or_else(|| panic!("{} has integer measured.{key}", c.id))
}

fn file(rel: &str) -> Report {
    let path = model(rel);
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let r = validate_with(&name, std::fs::read(&path).unwrap(), &opts("web")).expect("the shared asset loads");
    assert_schema_valid(&serde_json::to_value(&r).unwrap());
    r
}

fn png_image(bytes: Vec<u8>) -> Image {
    Image { bytes, mime: "image/png".into(), uri: None }
}

/// A quad whose material samples one texture showing `image`.
fn textured(mut prim: Prim, image: Vec<u8>) -> Doc {
    prim.material = Some(0);
    let mut doc = Doc::single(prim);
    doc.materials.push(Material { base_color_texture: Some(0), ..Material::default() });
    doc.textures.push(Texture { source: 0 });
    doc.images.push(png_image(image));
    doc
}

/// A PNG filled with `rgba`, except the first texel, which is `first`.
fn solid_png(w: u32, h: u32, first: [u8; 4], rgba: [u8; 4]) -> Vec<u8> {
    use image::ImageEncoder as _;
    let img = image::RgbaImage::from_fn(w, h, |x, y| image::Rgba(if x == 0 && y == 0 { first } else { rgba }));
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(img.as_raw(), w, h, image::ExtendedColorType::Rgba8)
        .unwrap();
    out
}

// ----------------------------------------------------------------- UV-006

#[test]
fn uv006_counts_outside_uvs_and_fails_only_on_a_lightmap_set() {
    // TEXCOORD_0 tiles (one UV at u = 2): reported, not a breach.
    let mut prim = quad(1.0);
    prim.uvs[0][1] = [2.0, 1.0];
    let r = report(&Doc::single(prim.clone()));
    let c = check(&r, "UV-006");
    assert_eq!(c.status, Status::Pass);
    assert_eq!((u(c, "outside_uvs"), u(c, "uvs"), u(c, "lightmap_sets")), (1, 4, 0));
    assert_eq!(measured_f64(c, "outside_pct"), 25.0);

    // A second set nothing samples is a lightmap set: inside passes...
    prim.uvs.push(vec![[0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]);
    let c = report(&Doc::single(prim.clone())).checks.into_iter().find(|c| c.id == "UV-006").unwrap();
    assert_eq!((c.status, u(&c, "lightmap_sets"), u(&c, "lightmap_outside_uvs")), (Status::Pass, 1, 0));

    // ... and one UV outside (or NaN) breaches.
    prim.uvs[1][2] = [1.0, -0.5];
    prim.uvs[1][3] = [f32::NAN, 0.0];
    let r = report(&Doc::single(prim));
    let c = check(&r, "UV-006");
    assert_eq!(c.status, Status::Warn);
    assert_eq!((u(c, "lightmap_outside_uvs"), u(c, "outside_uvs"), u(c, "uvs")), (2, 3, 8));
    assert_eq!(c.measured["locations"], json!(["/meshes/0/primitives/0"]));
    let lm = c.measured["sets"].as_array().unwrap().iter().find(|s| s["set"] == 1).unwrap();
    assert_eq!((lm["lightmap"].clone(), lm["v_min"].clone()), (json!(true), json!(-0.5)));
}

#[test]
fn uv006_a_set_the_base_colour_reads_is_no_lightmap() {
    let mut prim = quad(1.0);
    prim.uvs.push(vec![[0.0, 3.0], [1.0, 3.0], [1.0, 2.0], [0.0, 2.0]]);
    let mut doc = textured(prim, png(4, 4));
    doc.materials[0].tex_coord = 1;
    let c = report(&doc).checks.into_iter().find(|c| c.id == "UV-006").unwrap();
    assert_eq!((c.status, u(&c, "lightmap_sets"), u(&c, "outside_uvs")), (Status::Pass, 0, 4));
}

// ----------------------------------------------------------------- UV-007

#[test]
fn uv007_counts_mirrored_triangles() {
    let r = report(&Doc::single(quad(1.0)));
    let c = check(&r, "UV-007");
    assert_eq!((c.status, u(c, "mirrored_triangles"), u(c, "triangles")), (Status::Pass, 0, 2));
    // Mirror u on the quad: both triangles read back to front.
    let mut prim = quad(1.0);
    for uv in &mut prim.uvs[0] {
        uv[0] = 1.0 - uv[0];
    }
    let r = report(&Doc::single(prim));
    let c = check(&r, "UV-007");
    assert_eq!((c.status, u(c, "mirrored_triangles")), (Status::Warn, 2));
    assert_eq!(measured_f64(c, "mirrored_pct"), 100.0);
    assert_eq!(c.threshold["max_mirrored_uv_pct"], json!(0));
}

#[test]
fn uv007_agrees_with_the_auditor_cubes() {
    let pass = file("khronos-asset-auditor/blender-default-cube-passing.glb");
    let c = check(&pass, "UV-007");
    assert_eq!((c.status, u(c, "mirrored_triangles"), u(c, "triangles")), (Status::Pass, 0, 12));
    let bad = file("khronos-asset-auditor/blender-default-cube-inverted-uvs.glb");
    let c = check(&bad, "UV-007");
    assert_eq!(c.status, Status::Warn);
    assert!(u(c, "mirrored_triangles") > 0, "the inverted-UV cube has mirrored triangles");
}

// ----------------------------------------------------------------- UV-008

#[test]
fn uv008_unit_quad_by_hand() {
    // 1 m quad, UVs spanning 0-1, 1024 px texture: 1024 px/m everywhere.
    let c = report(&textured(quad(1.0), png(1024, 1024))).checks.into_iter().find(|c| c.id == "UV-008").unwrap();
    assert_eq!(c.status, Status::Pass);
    for k in ["texel_density_p5", "texel_density_median", "texel_density_p95"] {
        assert!((measured_f64(&c, k) - 1024.0).abs() < 1e-6, "{k}");
    }
    // Node scale 2: four times the area, half the density; a 256x1024 texture: sqrt(256*1024) = 512.
    let mut doc = textured(quad(1.0), png(1024, 1024));
    doc.nodes = vec![Node { mesh: Some(0), scale: Some([2.0, 2.0, 2.0]), ..Node::default() }];
    doc.scene_roots = vec![0];
    let r = report(&doc);
    assert!((measured_f64(check(&r, "UV-008"), "texel_density_median") - 512.0).abs() < 1e-6);
    let r = report(&textured(quad(1.0), png(256, 1024)));
    assert!((measured_f64(check(&r, "UV-008"), "texel_density_median") - 512.0).abs() < 1e-6);
}

#[test]
fn uv008_weights_by_area_and_skips_untextured() {
    // Without a texture there are no pixels to count.
    assert_eq!(check(&report(&Doc::single(quad(1.0))), "UV-008").status, Status::Skipped);
    // Two quads on one texture: 1 m^2 at full UV, 1 m^2 at a quarter of the UV square (512 px/m).
    let mut a = quad(1.0);
    let mut b = quad(1.0);
    for uv in &mut b.uvs[0] {
        *uv = [uv[0] * 0.5, uv[1] * 0.5];
    }
    b.positions.iter_mut().for_each(|p| p[0] += 2.0);
    let base = a.positions.len() as u32;
    a.positions.extend(b.positions);
    a.uvs[0].extend(b.uvs[0].clone());
    a.indices.as_mut().unwrap().extend(b.indices.unwrap().iter().map(|i| i + base));
    let r = report(&textured(a, png(1024, 1024)));
    let c = check(&r, "UV-008");
    assert!((measured_f64(c, "texel_density_p5") - 512.0).abs() < 1e-6);
    assert!((measured_f64(c, "texel_density_median") - 512.0).abs() < 1e-6, "half the area reaches the median");
    assert!((measured_f64(c, "texel_density_p95") - 1024.0).abs() < 1e-6);
}

#[test]
fn uv008_density_cube() {
    // The auditor's density cube (2 m cube, four materials on 512, 1024, 1024
    // and 256 px textures). By hand from its accessors (tests/crosscheck_uv.py
    // agrees): the densest faces map the whole 512 px texture onto a 2 m side,
    // 256 px/m; the sparsest an eighth of a 1024 px side, 64 px/m. The auditor's
    // "pixels per meter" maximum is (UV area / 3D area) x the file's largest
    // texture (1024 x 1024) = 262,144, i.e. (256 x 1024/512)^2: px^2/m^2 with
    // another texture's size, where meshcheck takes each face's own texture.
    let r = file("khronos-asset-auditor/blender-default-cube-density.glb");
    let c = check(&r, "UV-008");
    assert_eq!(c.status, Status::Pass);
    assert!((measured_f64(c, "texel_density_median") - 64.0).abs() < 1e-6);
    assert!((measured_f64(c, "texel_density_p95") - 256.0).abs() < 1e-6);
    assert!((measured_f64(c, "texel_density_p5") - 21.39969).abs() < 1e-5);
    let rows = c.measured["materials"].as_array().unwrap();
    let densest = rows.iter().find(|m| m["material"] == 0).unwrap();
    assert_eq!((densest["width"].clone(), densest["texel_density_median"].clone()), (json!(512), json!(256)));
}

// ----------------------------------------------------------------- MAT-005

#[test]
fn mat005_power_of_two_sides() {
    let r = report(&textured(quad(1.0), png(512, 256)));
    let c = check(&r, "MAT-005");
    assert_eq!((c.status, u(c, "non_power_of_two"), u(c, "textures")), (Status::Pass, 0, 1));
    let doc = textured(quad(1.0), png(500, 500));
    let c = report(&doc).checks.into_iter().find(|c| c.id == "MAT-005").unwrap();
    assert_eq!((c.status, u(&c, "non_power_of_two")), (Status::Warn, 1));
    // Mobile raises it to an error (WebGL 1 / ES 2.0).
    let m = glb_report(doc.to_glb(), "mobile");
    assert_eq!(check(&m, "MAT-005").status, Status::Fail);
}

#[test]
fn mat005_agrees_with_the_auditor_and_sample_models() {
    let c = file("khronos-asset-auditor/blender-default-cube-failing.glb");
    let c = check(&c, "MAT-005");
    assert_eq!((c.status, u(c, "non_power_of_two")), (Status::Warn, 1));
    assert_eq!(c.measured["images"][0]["width"], json!(500));
    let c = file("khronos-sample-models/BoxTexturedNonPowerOfTwo.glb");
    assert_eq!(u(check(&c, "MAT-005"), "non_power_of_two"), 1);
    let c = file("khronos-asset-auditor/blender-default-cube-density.glb");
    let c = check(&c, "MAT-005");
    assert_eq!((c.status, u(c, "non_power_of_two"), u(c, "textures")), (Status::Pass, 0, 4));
}

// ----------------------------------------------------------------- MAT-006

#[test]
fn mat006_reads_texels_like_the_auditor() {
    // The auditor's safe texture spans 30..240; its unsafe one 0..255.
    let safe = report(&textured(quad(1.0), solid_png(8, 8, [30, 20, 10, 255], [240, 240, 200, 255])));
    let c = check(&safe, "MAT-006");
    assert_eq!((c.status, u(c, "base_color_min"), u(c, "base_color_max")), (Status::Pass, 30, 240));
    let bad = report(&textured(quad(1.0), solid_png(8, 8, [0, 0, 0, 255], [255, 10, 10, 255])));
    let c = check(&bad, "MAT-006");
    assert_eq!((c.status, u(c, "base_color_min"), u(c, "base_color_max")), (Status::Warn, 0, 255));
    // A transparent texel is not seen.
    let clear = report(&textured(quad(1.0), solid_png(8, 8, [0, 0, 0, 0], [128, 128, 128, 255])));
    assert_eq!(u(check(&clear, "MAT-006"), "base_color_min"), 128);
}

#[test]
fn mat006_applies_the_factor_in_linear_space() {
    // Factor 0.5 (linear) on a white texel: sRGB 188; alone on an untextured material too.
    let doc = textured(quad(1.0), solid_png(4, 4, [255, 255, 255, 255], [255, 255, 255, 255]));
    let bytes =
        edited(&doc, |j| j["materials"][0]["pbrMetallicRoughness"]["baseColorFactor"] = json!([0.5, 0.2, 0.1, 1.0]));
    let c = glb_report(bytes, "web").checks.into_iter().find(|c| c.id == "MAT-006").unwrap();
    assert_eq!((u(&c, "base_color_min"), u(&c, "base_color_max")), (188, 188));
    let mut prim = quad(1.0);
    prim.material = Some(0);
    let mut plain = Doc::single(prim);
    plain.materials.push(Material::default());
    let bytes = edited(&plain, |j| {
        j["materials"] = json!([{"pbrMetallicRoughness": {"baseColorFactor": [0.01, 0.0, 0.0, 1.0]}}])
    });
    let c = glb_report(bytes, "web").checks.into_iter().find(|c| c.id == "MAT-006").unwrap();
    // linear 0.01 -> sRGB 0.0998 -> 25: too dark.
    assert_eq!((c.status, u(&c, "base_color_min")), (Status::Warn, 25));
}

#[test]
fn mat006_skips_without_materials_and_lists_unreadable_textures() {
    assert_eq!(check(&report(&Doc::single(quad(1.0))), "MAT-006").status, Status::Skipped);
    let doc = textured(quad(1.0), b"not an image at all".to_vec());
    let c = report(&doc).checks.into_iter().find(|c| c.id == "MAT-006").unwrap();
    assert_eq!(c.status, Status::Skipped);
}

// ----------------------------------------------------------------- MAT-007

/// A KTX2 (UASTC colour model, no supercompression) of `w` x `h` with
/// `levels` levels of 4x4 blocks, 16 bytes each, built by hand.
fn ktx2(w: u32, h: u32, levels: u32) -> Vec<u8> {
    let level_len = |i: u32| ((w >> i).max(1).div_ceil(4) * (h >> i).max(1).div_ceil(4) * 16) as u64;
    // A Basic DFD: total size, then one 24-byte block plus one 16-byte sample.
    let mut dfd = Vec::new();
    let block_size: u16 = 24 + 16;
    dfd.extend_from_slice(&(4 + block_size as u32).to_le_bytes());
    dfd.extend_from_slice(&0u32.to_le_bytes()); // vendorId 0, descriptorType 0
    dfd.extend_from_slice(&2u16.to_le_bytes()); // versionNumber
    dfd.extend_from_slice(&block_size.to_le_bytes());
    dfd.extend_from_slice(&[166, 1, 2, 0]); // UASTC, BT709, sRGB, flags
    dfd.extend_from_slice(&[3, 3, 0, 0]); // texelBlockDimension 4x4
    dfd.extend_from_slice(&[16, 0, 0, 0, 0, 0, 0, 0]); // bytesPlane
    dfd.extend_from_slice(&[0, 0, 127, 0]); // sample: bitOffset, bitLength 128, channel 0
    dfd.extend_from_slice(&[0; 4]); // samplePosition
    dfd.extend_from_slice(&0u32.to_le_bytes());
    dfd.extend_from_slice(&u32::MAX.to_le_bytes());
    let index_at = 80u64;
    let dfd_at = index_at + 24 * levels as u64;
    let mut data_at = (dfd_at + dfd.len() as u64).div_ceil(16) * 16;
    let mut index = Vec::new();
    let mut data = Vec::new();
    // Levels are stored smallest first; the index lists largest first.
    let mut offsets = vec![0u64; levels as usize];
    for i in (0..levels).rev() {
        offsets[i as usize] = data_at;
        data_at += level_len(i);
    }
    for i in 0..levels {
        index.extend_from_slice(&offsets[i as usize].to_le_bytes());
        index.extend_from_slice(&level_len(i).to_le_bytes());
        index.extend_from_slice(&level_len(i).to_le_bytes());
    }
    let mut out = b"\xABKTX 20\xBB\r\n\x1A\n".to_vec();
    for v in [0u32, 1, w, h, 0, 0, 1, levels, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&(dfd_at as u32).to_le_bytes());
    out.extend_from_slice(&(dfd.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0; 8]); // kvd
    out.extend_from_slice(&[0; 16]); // sgd
    out.extend_from_slice(&index);
    out.extend_from_slice(&dfd);
    out.resize(offsets[levels as usize - 1] as usize, 0);
    for i in (0..levels).rev() {
        data.resize(level_len(i) as usize, 0x55);
        out.extend_from_slice(&data);
    }
    out
}

/// A quad whose one texture is a KTX2 through KHR_texture_basisu, with an
/// optional minFilter.
fn ktx2_doc(image: Vec<u8>, min_filter: Option<u32>) -> Vec<u8> {
    let mut doc = textured(quad(1.0), Vec::new());
    doc.images[0] = Image { bytes: image, mime: "image/ktx2".into(), uri: None };
    edited(&doc, |j| {
        j["textures"][0] = json!({"extensions": {"KHR_texture_basisu": {"source": 0}}});
        if let Some(f) = min_filter {
            j["textures"][0]["sampler"] = json!(0);
            j["samplers"] = json!([{"minFilter": f}]);
        }
        j["extensionsUsed"] = json!(["KHR_texture_basisu"]);
        j["extensionsRequired"] = json!(["KHR_texture_basisu"]);
    })
}

#[test]
fn mat007_full_and_short_mip_chains() {
    let full = glb_report(ktx2_doc(ktx2(8, 8, 4), None), "web");
    let c = check(&full, "MAT-007");
    assert_eq!((c.status, u(c, "missing_mips"), u(c, "compressed_images")), (Status::Pass, 0, 1));
    assert_eq!(measured_f64(c, "compressed_pct"), 100.0);
    let short = glb_report(ktx2_doc(ktx2(8, 8, 1), None), "web");
    let c = check(&short, "MAT-007");
    assert_eq!((c.status, u(c, "missing_mips")), (Status::Warn, 1));
    assert_eq!(c.measured["incomplete"][0]["levels_needed"], json!(4));
    // Sampled without mipmaps (LINEAR), one level is all it needs.
    let linear = glb_report(ktx2_doc(ktx2(8, 8, 1), Some(9729)), "web");
    assert_eq!(u(check(&linear, "MAT-007"), "missing_mips"), 0);
    // PNG only: nothing compressed, mipmaps are the viewer's.
    let r = report(&textured(quad(1.0), png(64, 64)));
    let c = check(&r, "MAT-007");
    assert_eq!((c.status, u(c, "compressed_images"), u(c, "missing_mips")), (Status::Pass, 0, 0));
    assert_eq!(measured_f64(c, "compressed_pct"), 0.0);
}

#[test]
fn mat007_reads_the_real_ktx2_header() {
    // TextureVariants-Embedded-KTX: one 4x4 UASTC image, levelCount 3 (4, 2, 1).
    let r = file("other/TextureVariants-Embedded-KTX.gltf");
    let c = check(&r, "MAT-007");
    assert_eq!((c.status, u(c, "missing_mips"), u(c, "compressed_images"), u(c, "images")), (Status::Pass, 0, 1, 1));
    assert_eq!(measured_f64(c, "compressed_pct"), 100.0);
}

#[test]
fn only_and_skip_select_the_new_checks() {
    let doc = textured(quad(1.0), png(500, 500));
    let o = Options { selection: Selection::parse(&["MAT-005".into()], &[]).unwrap(), ..Options::default() };
    let r = validate_with("t.glb", doc.to_glb(), &o).unwrap();
    let ran: Vec<&str> = r.checks.iter().filter(|c| c.status != Status::Skipped).map(|c| c.id.as_str()).collect();
    assert_eq!(ran, ["MAT-005"]);
    let o = Options { selection: Selection::parse(&["uv".into()], &["UV-007".into()]).unwrap(), ..Options::default() };
    let r = validate_with("t.glb", doc.to_glb(), &o).unwrap();
    assert_eq!(check(&r, "UV-006").status, Status::Pass);
    assert_eq!(check(&r, "UV-007").status, Status::Skipped);
    assert_eq!(check(&r, "MAT-005").status, Status::Skipped);
}

#[test]
fn mat006_agrees_with_the_auditors_own_pbr_range_tests() {
    // tests/pbrColorRange.ts in the auditor: safe cube 30..240, unsafe cube 0..255.
    let dir = crate::util::root().join("tests/fixtures/asset-auditor");
    for (name, status, lo, hi) in [
        ("blender-default-cube-pbr-safe-colors.glb", Status::Pass, 30, 240),
        ("blender-default-cube-pbr-unsafe-colors.glb", Status::Warn, 0, 255),
    ] {
        let r = glb_report(std::fs::read(dir.join(name)).unwrap(), "web");
        let c = check(&r, "MAT-006");
        assert_eq!((c.status, u(c, "base_color_min"), u(c, "base_color_max")), (status, lo, hi), "{name}");
    }
}
