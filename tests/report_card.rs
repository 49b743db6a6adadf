//! `validate --format html` through the binary: the report card is one
//! self-contained page (inline CSS allowed by its hash in a CSP, images as
//! data: URIs, no script, nothing fetched), every string from the asset is
//! escaped, folder runs get an index, full mode embeds the stills and the
//! turntable. tests/browser/report_card.mjs opens the same pages in Chromium.

use crate::testkit::{Doc, Material, cube, glb_from_parts};
use crate::util::{model, run};
use serde_json::{Value, json};

/// Markup and script in every place an asset can put text.
const PAYLOADS: &[&str] = &[
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "\"><svg onload=alert(3)>",
    "' onmouseover='alert(4)",
    "</details><b>bold</b>",
];

/// A cube whose node, mesh and material names, an image URI and an
/// extension name hold the payloads (the URI does not resolve and the
/// extension is unknown, so both reach the report's messages).
pub fn hostile_glb() -> Vec<u8> {
    let mut prim = cube(1.0);
    prim.material = Some(0);
    let mut doc = Doc::single(prim);
    doc.materials.push(Material::default());
    let (mut v, bin) = doc.to_json(crate::testkit::Layout::Glb);
    v["nodes"][0]["name"] = json!(PAYLOADS[0]);
    v["meshes"][0]["name"] = json!(PAYLOADS[1]);
    v["materials"][0]["name"] = json!(PAYLOADS[2]);
    v["materials"][0]["pbrMetallicRoughness"] = json!({"baseColorTexture": {"index": 0}});
    v["textures"] = json!([{"source": 0, "name": PAYLOADS[3]}]);
    v["images"] = json!([{"uri": format!("{}.png", PAYLOADS[1]), "name": PAYLOADS[4]}]);
    v["extensionsUsed"] = json!([PAYLOADS[0]]);
    v["scenes"][0]["name"] = json!(PAYLOADS[4]);
    glb_from_parts(&v, &bin)
}

fn html(out: &std::process::Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("the card is UTF-8")
}

/// Every `src`/`href` attribute value in the page.
fn links(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in [" src=\"", " href=\""] {
        for (i, _) in page.match_indices(attr) {
            let rest = &page[i + attr.len()..];
            out.push(rest[..rest.find('"').unwrap()].to_string());
        }
    }
    out
}

/// The page loads nothing and runs nothing: a strict CSP comes first, no
/// script or external link, every src/href a data: URI or a fragment, and
/// `http://`/`https://` only as inert text.
pub fn assert_self_contained(page: &str) {
    assert!(page.starts_with("<!doctype html>"), "{}", &page[..100.min(page.len())]);
    let csp = page
        .find("http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'sha256-")
        .expect("a strict CSP");
    assert!(csp < page.find("<style>").unwrap(), "the CSP precedes the stylesheet");
    assert!(!page.to_ascii_lowercase().contains("<script"), "no script element");
    for l in links(page) {
        assert!(l.starts_with("data:") || l.starts_with('#'), "only data: and fragment links: {l}");
    }
    for scheme in ["http://", "https://"] {
        for (i, _) in page.match_indices(scheme) {
            let before = &page[i.saturating_sub(12)..i];
            // The favicon's SVG namespace is the only one, inside a data: URI.
            assert!(
                before.ends_with("xmlns='"),
                "{scheme} outside inert text at {i}: {}",
                &page[i.saturating_sub(60)..i + 40]
            );
        }
    }
    assert!(!page.contains("url("), "the stylesheet fetches nothing");
    assert!(!page.contains("@import"));
}

fn assert_escaped(page: &str) {
    for p in PAYLOADS {
        let raw_tag = p.trim_start_matches(['"', '\'', '>', '<', '/']);
        assert!(!page.contains(&format!("<{raw_tag}")), "unescaped payload {p}");
    }
    for raw in ["<script>alert", "<img src=x", "<svg onload", "<b>bold", "onerror=alert(2)>", "' onmouseover='"] {
        assert!(!page.contains(raw), "{raw} reached the page unescaped");
    }
    // Long values may wrap after `/` and `_` (`<wbr>`).
    let text = page.replace("<wbr>", "");
    assert!(text.contains("&lt;img src=x onerror=alert(2)&gt;.png"), "the URI shows as text");
    assert!(text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the extension name shows as text");
}

#[test]
fn a_hostile_asset_shows_its_names_as_text() {
    let dir = tempfile::tempdir().unwrap();
    // The file name is the asset's too.
    let file = dir.path().join("\"><img src=x onerror=alert(5)>.glb");
    std::fs::write(&file, hostile_glb()).unwrap();
    let out = run(&["validate", file.to_str().unwrap(), "--format", "html"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let page = html(&out);
    assert_self_contained(&page);
    assert_escaped(&page);
    assert!(page.contains("&quot;&gt;&lt;img src=x onerror=alert(5)&gt;.glb"), "the file name shows as text");
    assert!(!page.contains("alert(5)>"));
    // A folder run escapes the index row and its link too.
    let out = run(&["validate", dir.path().to_str().unwrap(), "--format", "html"]);
    let page = html(&out);
    assert_self_contained(&page);
    assert_escaped(&page);
    assert!(page.contains("<a href=\"#file-1\">"));
}

#[test]
fn a_card_shows_verdict_families_gauges_and_validator_messages() {
    let out = run(&["validate", &model("khronos-sample-models/CesiumMan.glb").to_string_lossy(), "--format", "html"]);
    assert_eq!(out.status.code(), Some(1));
    let page = html(&out);
    assert_self_contained(&page);
    assert!(page.contains("data-verdict=\"fail\""));
    for f in meshcheck::checks::catalog::FAMILIES {
        assert!(page.contains(&format!("data-family=\"{}\"", f.prefix)), "{}", f.prefix);
        assert!(page.contains(&meshcheck::cli::html::esc(f.label)), "{}", f.label);
    }
    for c in meshcheck::checks::catalog::CATALOG.iter() {
        assert!(page.contains(&format!("data-check=\"{}\"", c.id)), "{}", c.id);
    }
    // A gauge per check that declares one and ran (4,672 of 100,000 triangles).
    assert!(page.contains("4,672 of 100,000 (4.7% of budget)"), "the triangle gauge");
    assert!(page.contains("<svg class=\"gauge\""));
    // The validator's messages, with code and pointer.
    assert!(page.contains("Validator messages") && page.contains("ACCESSOR_<wbr>WEIGHTS_<wbr>NON_<wbr>NORMALIZED"));
    assert!(page.contains("more in the report JSON"), "a long list is cut");
    // checks_only: no views, no stills.
    assert!(!page.contains("data:image/png"));
}

#[test]
fn a_folder_gets_an_index_and_a_card_per_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.glb"), Doc::single(cube(1.0)).to_glb()).unwrap();
    std::fs::copy(model("khronos-sample-models/Fox.glb"), dir.path().join("fox.glb")).unwrap();
    std::fs::write(dir.path().join("broken.glb"), b"glTF\x02\x00\x00\x00\xff\xff\xff\xff").unwrap();
    let out = run(&["validate", dir.path().to_str().unwrap(), "--format", "html"]);
    assert_eq!(out.status.code(), Some(3), "the broken file sets the exit code");
    let page = html(&out);
    assert_self_contained(&page);
    assert!(page.contains("id=\"index\"") && page.contains("3 files"));
    for i in 1..=3 {
        assert!(page.contains(&format!("<a href=\"#file-{i}\">")) && page.contains(&format!("id=\"file-{i}\"")));
    }
    assert!(page.contains("MALFORMED_GLTF") && page.contains("could not be validated"));
    assert_eq!(page.matches("<section class=\"report\"").count(), 3);
}

#[test]
#[cfg(feature = "render")]
fn full_mode_embeds_the_six_stills_and_the_turntable() {
    use base64::Engine as _;
    let box_glb = model("khronos-sample-models/Box.glb");
    let out = run(&["validate", box_glb.to_str().unwrap(), "--format", "html", "--mode", "full", "--turntable"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let page = html(&out);
    assert_self_contained(&page);
    let stills: Vec<String> = links(&page).into_iter().filter(|l| l.starts_with("data:image/png;base64,")).collect();
    assert_eq!(stills.len(), 6);
    for view in ["front", "right", "back", "left", "top", "three_quarter"] {
        assert!(page.contains(&format!("data-view=\"{view}\"")), "{view}");
    }
    let png = base64::engine::general_purpose::STANDARD.decode(&stills[0]["data:image/png;base64,".len()..]).unwrap();
    let img = image::load_from_memory(&png).unwrap();
    assert_eq!((img.width(), img.height()), (512, 512));
    let gif: Vec<String> = links(&page).into_iter().filter(|l| l.starts_with("data:image/gif;base64,")).collect();
    assert_eq!(gif.len(), 1, "one turntable");
    let gif = base64::engine::general_purpose::STANDARD.decode(&gif[0]["data:image/gif;base64,".len()..]).unwrap();
    assert!(gif.starts_with(b"GIF89a"));
    // The turntable needs the card and full mode.
    let out = run(&["validate", box_glb.to_str().unwrap(), "--format", "html", "--turntable"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["validate", box_glb.to_str().unwrap(), "--mode", "full", "--turntable={\"frames\":2}"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
#[cfg(not(feature = "render"))]
fn without_the_renderer_full_mode_cards_say_why_there_are_no_views() {
    let box_glb = model("khronos-sample-models/Box.glb");
    let out = run(&["validate", box_glb.to_str().unwrap(), "--format", "html", "--mode", "full", "--skip", "SPEC-001"]);
    assert_eq!(out.status.code(), Some(0));
    let page = html(&out);
    assert_self_contained(&page);
    assert!(page.contains("No views were rendered") && page.contains("renderer not in this build"), "the reason");
    let out = run(&["validate", box_glb.to_str().unwrap(), "--format", "html", "--mode", "full", "--turntable"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not in this build"));
}

#[test]
fn escaping_covers_what_json_reports_carry() {
    // The payloads are in the report JSON verbatim (the card is what escapes).
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.glb");
    std::fs::write(&file, hostile_glb()).unwrap();
    let out = run(&["validate", file.to_str().unwrap(), "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v.to_string();
    assert!(text.contains("<img src=x onerror=alert(2)>.png"), "the unresolved URI is reported");
    assert!(text.contains("<script>alert(1)</script>"), "the unknown extension is reported");
}
