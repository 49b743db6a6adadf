//! SPEC-001 benchmark: meshcheck with the Khronos glTF-Validator against the
//! same validator run bare in Node, three ways.
//!
//! - `warm`: meshcheck's whole checks_only run in process (its own loader
//!   and checks plus the validator in a warm pooled Node process, beside
//!   them) against `validateBytes` in one warm Node process on the same file
//!   (`benches/validator_direct.js --repeat N`), plus a warm-pool validation
//!   of Box.glb. Targets: at most 1.3x; Box.glb under 20 ms.
//! - `process`: whole processes, start included, one file each: `meshcheck
//!   validate FILE --format json` (checks_only, SPEC-001 on) against `node
//!   benches/validator_direct.js FILE` (Node's start, loading the validator,
//!   reading the file, one validation), on the shared assets and on
//!   generated GLBs up to a 1.3M-triangle textured sphere. Target: at most
//!   1.3x (issue 22, point 2).
//! - `folder`: `meshcheck validate FOLDER --format json` against one Node
//!   process validating every file of the same folder in turn
//!   (`benches/validator_folder.js FOLDER`), both whole processes, on a copy
//!   of the shared assets (`../shared/assets`: the models and the
//!   validator suite, zip bundles extracted so that both read the same
//!   files) and on 1,000 small generated files (GLBs and .gltf files with
//!   external .bin and textures, some with defects). Targets: at most 1.3x
//!   on the shared assets (point 2), at most 1.1x on the 1,000 files (point
//!   5), with the per-file overhead (meshcheck minus the validator, over the
//!   files) printed.
//!
//! The process and folder rows also time `meshcheck validate --only
//! SPEC-001`: the validator's path alone (Node's start, the file handed
//! over, the findings back; meshcheck's loader still runs beside it), so
//! that what meshcheck's own checks add can be told from what SPEC-001 costs.
//!
//! `cargo bench --bench spec001 [-- warm|process|folder ...]` (needs `npm
//! ci`, or MESHCHECK_GLTF_VALIDATOR naming the package folder).
//! MESHCHECK_BENCH_RUNS sets the runs per row (default 7 warm, 5 process
//! and folder); the process rows use the benchmark's own build of
//! `meshcheck` (target/release/meshcheck). MESHCHECK_BENCH_KEEP=1 keeps the
//! generated inputs (the temporary folder it prints) for profiling by hand.

/// The test support (code-built assets under `testkit`), shared with the
/// integration tests.
#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;
use support::testkit;

use crate::testkit::{Doc, Image, Material, Texture, cube, grid, png, quad, sphere};
use meshcheck::asset::Input;
use meshcheck::engine::{self, Options};
use meshcheck::validator::Validator;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ASSETS: &[&str] = &[
    "khronos-sample-models/Avocado.zip",
    "khronos-sample-models/FlightHelmet.zip",
    "khronos-sample-models/NormalTangentTest.glb",
    "khronos-sample-models/CesiumMilkTruck.zip",
    "other/subpass_scene_opaque.gltf",
];
const RATIO_TARGET: f64 = 1.3;
/// Issue 22, point 5: a folder of 1,000 small files.
const SMALL_FOLDER_TARGET: f64 = 1.1;
/// Files in the generated folder.
const SMALL_FILES: usize = 1000;
const BOX_TARGET: Duration = Duration::from_millis(20);

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

/// Extracts a zip bundle into `dir` and returns its main .gltf/.glb.
fn extract(zip_path: &Path, dir: &Path) -> PathBuf {
    let bytes = std::fs::read(zip_path).expect("read the bundle");
    let bundle = meshcheck::asset::bundle::ZipBundle::open(&bytes).expect("a valid bundle");
    let main = bundle.main_file.clone();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("zip");
    for i in 0..archive.len() {
        let mut f = archive.by_index(i).expect("entry");
        if f.is_dir() {
            continue;
        }
        let out = dir.join(f.name().expect("entry name").to_string());
        std::fs::create_dir_all(out.parent().expect("parent")).expect("mkdir");
        let mut w = std::fs::File::create(&out).expect("create");
        std::io::copy(&mut f, &mut w).expect("copy");
    }
    dir.join(main)
}

/// Median wall time of one warm validation, from the bare validator in Node.
fn bare(root: &Path, file: &Path, runs: usize) -> Option<Duration> {
    let out = Command::new("node")
        .arg(root.join("benches/validator_direct.js"))
        .args(["--repeat", &runs.to_string()])
        .arg(file)
        .output()
        .ok()?;
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    line["ms"].as_f64().map(|m| Duration::from_secs_f64(m / 1e3))
}

/// A textured sphere of about `tris` triangles as a GLB (its PNG in the
/// binary chunk): the 1.3M-triangle file at `sphere(1140, 571)`.
fn textured_sphere(segments: u32, rings: u32, texture: u32) -> Vec<u8> {
    let mut prim = sphere(segments, rings, 1.0);
    prim.material = Some(0);
    let mut doc = Doc::single(prim);
    doc.materials.push(Material { base_color_texture: Some(0), ..Material::default() });
    doc.textures.push(Texture { source: 0 });
    doc.images.push(Image { bytes: png(texture, texture), mime: "image/png".into(), uri: None });
    doc.to_glb()
}

fn main() {
    let sections: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let want = |s: &str| sections.is_empty() || sections.iter().any(|a| a == s);
    let runs_env = std::env::var("MESHCHECK_BENCH_RUNS").ok().and_then(|s| s.parse::<usize>().ok());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let validator = match Validator::global() {
        Ok(v) => v,
        Err(e) => {
            println!("SPEC-001 benchmark skipped: {e}");
            return;
        }
    };
    if let Err(e) = validator.ready() {
        println!("SPEC-001 benchmark skipped: {e}");
        return;
    }
    let tmp = std::env::temp_dir().join("meshcheck-bench-spec001");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("temp folder");
    let mut files = Vec::new();
    for rel in ASSETS {
        let p = root.join("../shared/assets/models").join(rel);
        if rel.ends_with(".zip") {
            let dir = tmp.join(Path::new(rel).file_stem().expect("stem"));
            files.push(extract(&p, &dir));
        } else {
            files.push(p);
        }
    }
    let big = tmp.join("sphere_1m.glb");
    std::fs::write(&big, Doc::single(sphere(1000, 501, 1.0)).to_glb()).expect("write the 1M GLB");
    files.push(big);
    let textured = tmp.join("sphere_1m3_textured.glb");
    std::fs::write(&textured, textured_sphere(1140, 571, 1024)).expect("write the 1.3M GLB");
    files.push(textured);

    println!("# SPEC-001 benchmark\n");
    if want("warm") {
        warm(&root, &validator, &files, runs_env.unwrap_or(7).max(5));
    }
    let meshcheck = Path::new(env!("CARGO_BIN_EXE_meshcheck"));
    if want("process") {
        processes(&root, meshcheck, &files, runs_env.unwrap_or(5).max(3));
    }
    if want("folder") {
        folders(&root, meshcheck, &tmp, runs_env.unwrap_or(5).max(3));
    }
    if std::env::var_os("MESHCHECK_BENCH_KEEP").is_some() {
        println!("\nInputs kept in {} (MESHCHECK_BENCH_KEEP).", tmp.display());
    } else {
        let _ = std::fs::remove_dir_all(&tmp);
    }
}

fn warm(root: &Path, validator: &std::sync::Arc<Validator>, files: &[PathBuf], runs: usize) {
    println!(
        "Both sides warm: meshcheck `engine::validate` with default options (its loader and checks on this thread, \
         the validator in a pooled Node process beside them) against `validateBytes` in one Node process \
         (`benches/validator_direct.js --repeat {runs}`). Median of {runs} runs after a warm-up. Zip bundles are \
         extracted first so that both read the same .gltf and files.\n"
    );
    println!(
        "| file | triangles | bare validator (ms) | meshcheck checks_only (ms) | ratio | target <= {RATIO_TARGET} |"
    );
    println!("|---|--:|--:|--:|--:|---|");
    let opts = Options { validator: Some(validator.clone()), ..Options::default() };
    for f in files {
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let go =
            || engine::validate_file_with_stills(Input::from_path(f).expect("readable"), f, &opts).expect("a report").0;
        let first = go();
        let mut times = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            std::hint::black_box(go());
            times.push(t.elapsed());
        }
        let ours = median(times);
        let theirs = bare(root, f, runs);
        let (ratio, verdict) = match theirs {
            Some(b) => {
                let r = ours.as_secs_f64() / b.as_secs_f64();
                (format!("{r:.2}"), if r <= RATIO_TARGET { "PASS" } else { "MISS" })
            }
            None => ("-".into(), "no node"),
        };
        println!(
            "| {name} | {} | {} | {} | {ratio} | {verdict} |",
            first.stats.triangles,
            theirs.map(ms).unwrap_or_else(|| "-".into()),
            ms(ours)
        );
    }

    let box_glb = root.join("../shared/assets/models/khronos-sample-models/Box.glb");
    let bytes = std::fs::read(&box_glb).expect("Box.glb");
    let _ = validator.validate("Box.glb", &bytes, &meshcheck::asset::bundle::NoResources);
    let mut times = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        validator.validate("Box.glb", &bytes, &meshcheck::asset::bundle::NoResources).expect("validates");
        times.push(t.elapsed());
    }
    let m = median(times.clone());
    let worst = times.iter().max().copied().unwrap_or_default();
    println!(
        "\nWarm-pool validation of Box.glb (`Validator::validate`, 50 runs): median {} ms, worst {} ms; target < {} ms: {}\n",
        ms(m),
        ms(worst),
        BOX_TARGET.as_millis(),
        if m < BOX_TARGET { "PASS" } else { "MISS" }
    );
}

/// Wall time of one whole process, spawn to exit; stdout goes to `out`.
fn time_process(cmd: &mut Command, out: &Path) -> Duration {
    let sink = std::fs::File::create(out).expect("output file");
    let t = Instant::now();
    let status = cmd.stdout(sink).stderr(Stdio::null()).status().expect("the process starts");
    let elapsed = t.elapsed();
    assert!(status.code().is_some(), "{cmd:?} was killed");
    elapsed
}

/// `meshcheck validate PATH --format json` with SPEC-001 on (checks_only,
/// no meshcheck.toml), and `extra` arguments.
/// `node benches/SCRIPT ARG`: the bare validator, the peer of every table.
fn node_cmd(root: &Path, script: &str, arg: &Path) -> Command {
    let mut c = Command::new("node");
    c.arg(root.join("benches").join(script)).arg(arg);
    c
}

fn meshcheck_cmd(bin: &Path, path: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.args(["validate", "--format", "json", "--no-config"]).args(extra).arg(path);
    c
}

/// Medians of `runs` interleaved runs of each side (whole processes), after a warm-up of each.
fn interleaved(sides: &mut [&mut dyn FnMut() -> Duration], runs: usize) -> Vec<Duration> {
    sides.iter_mut().for_each(|side| {
        side();
    });
    let mut times = vec![Vec::new(); sides.len()];
    for _ in 0..runs {
        for (side, t) in sides.iter_mut().zip(&mut times) {
            t.push(side());
        }
    }
    times.into_iter().map(median).collect()
}

fn verdict(ratio: f64, target: f64) -> &'static str {
    if ratio <= target { "PASS" } else { "MISS" }
}

/// Whole processes, one file each, start included.
fn processes(root: &Path, bin: &Path, files: &[PathBuf], runs: usize) {
    println!(
        "## One file, whole processes\n\n`{} validate FILE --format json --no-config` (checks_only, SPEC-001 on) against \
         `node benches/validator_direct.js FILE` (Node's start, loading the validator, reading the file, one validation), \
         spawn to exit, median of {runs} interleaved runs after a warm-up of each. Zip bundles are extracted first.\n",
        bin.display()
    );
    println!(
        "| file | main file (MB) | bare validator process (ms) | meshcheck process (ms) | ratio | target <= {RATIO_TARGET} | \
         meshcheck --only SPEC-001 (ms) | ratio |"
    );
    println!("|---|--:|--:|--:|--:|---|--:|--:|");
    let out = std::env::temp_dir().join("meshcheck-bench-spec001-out.json");
    for f in files {
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let size = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
        let t = interleaved(
            &mut [
                &mut || time_process(&mut meshcheck_cmd(bin, f, &[]), &out),
                &mut || time_process(&mut meshcheck_cmd(bin, f, &["--only", "SPEC-001"]), &out),
                &mut || time_process(&mut node_cmd(root, "validator_direct.js", f), &out),
            ],
            runs,
        );
        let (ours, spec_only, theirs) = (t[0], t[1], t[2]);
        let r = ours.as_secs_f64() / theirs.as_secs_f64();
        let r_spec = spec_only.as_secs_f64() / theirs.as_secs_f64();
        println!(
            "| {name} | {size:.1} | {} | {} | {r:.2} | {} | {} | {r_spec:.2} |",
            ms(theirs),
            ms(ours),
            verdict(r, RATIO_TARGET),
            ms(spec_only)
        );
    }
    let _ = std::fs::remove_file(&out);
    println!();
}

/// Copies `from` into `to`, extracting every zip bundle into a folder of its
/// own (so the bare validator, which reads no zip, gets the same files).
fn copy_extracted(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read the assets").flatten() {
        let p = e.path();
        let dest = to.join(e.file_name());
        if p.is_dir() {
            copy_extracted(&p, &dest);
        } else if p.extension().is_some_and(|x| x.eq_ignore_ascii_case("zip")) {
            extract(&p, &to.join(format!("{}.unzipped", e.file_name().to_string_lossy())));
        } else {
            std::fs::copy(&p, &dest).expect("copy");
        }
    }
}

/// `n` small generated inputs in `dir`: GLBs, .gltf files with an external
/// .bin (some with an external texture, some whose .bin is missing) and
/// embedded .gltf files, of cubes, grids, quads and spheres, some with
/// defects (flipped or degenerate triangles, indices out of range).
fn small_folder(dir: &Path, n: usize) -> usize {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut written = 0;
    for i in 0..n {
        let k = i as u32;
        let mut prim = match i % 4 {
            0 => cube(1.0 + (k % 5) as f32),
            1 => grid(2 + k % 9, 1.0),
            2 => sphere(6 + k % 11, 4 + k % 7, 1.0),
            _ => quad(1.0),
        };
        match i % 10 {
            3 => prim.flip_triangles(0..1),
            5 => prim.add_degenerate(),
            // An index past the last vertex: a validator error.
            7 if prim.indices.is_some() => {
                if let Some(ix) = prim.indices.as_mut() {
                    ix[0] = 100_000;
                }
            }
            _ => {}
        }
        let textured = i % 6 == 1;
        if textured {
            prim.material = Some(0);
        }
        let mut doc = Doc::single(prim);
        if textured {
            doc.materials.push(Material { base_color_texture: Some(0), ..Material::default() });
            doc.textures.push(Texture { source: 0 });
            let uri = (i % 12 == 1).then(|| format!("tex{i}.png"));
            doc.images.push(Image { bytes: png(8 + k % 8, 8), mime: "image/png".into(), uri });
        }
        let stem = format!("m{i:04}");
        let mut out: Vec<(String, Vec<u8>)> = match i % 5 {
            0 | 1 | 4 => vec![(format!("{stem}.glb"), doc.to_glb())],
            2 => doc.to_gltf_files(&stem),
            _ => vec![(format!("{stem}.gltf"), doc.to_gltf_embedded())],
        };
        for img in &doc.images {
            if let Some(uri) = &img.uri
                && !out.iter().any(|(n, _)| n == uri)
            {
                out.push((uri.clone(), img.bytes.clone()));
            }
        }
        if i % 50 == 12 {
            // A .gltf whose .bin is missing: both read what they can.
            out.retain(|(name, _)| !name.ends_with(".bin"));
        }
        for (name, bytes) in out {
            std::fs::write(dir.join(name), bytes).expect("write");
        }
        written += 1;
    }
    written
}

/// Folder runs: meshcheck against the bare validator over the same folder.
fn folders(root: &Path, bin: &Path, tmp: &Path, runs: usize) {
    let shared = tmp.join("shared");
    copy_extracted(&root.join("../shared/assets"), &shared);
    let small = tmp.join("small");
    let made = small_folder(&small, SMALL_FILES);
    println!(
        "## Folders, whole processes\n\n`{} validate FOLDER --format json --no-config` (checks_only, SPEC-001 on, \
         `-j` all cores) against `node benches/validator_folder.js FOLDER` (one Node process validating every .glb and \
         .gltf of the folder in turn, from disk, maxIssues 0 as meshcheck's driver), spawn to exit, median of {runs} \
         interleaved runs after a warm-up of each. Per-file overhead: (meshcheck - validator) / files.\n",
        bin.display()
    );
    println!(
        "| folder | files | bare validator (ms) | meshcheck (ms) | ratio | overhead (ms/file) | target | \
         meshcheck --only SPEC-001 (ms) | ratio |"
    );
    println!("|---|--:|--:|--:|--:|--:|---|--:|--:|");
    let out = tmp.join("folder-out.json");
    let rows: [(&str, &Path, f64); 2] = [
        ("../shared/assets (zips extracted)", &shared, RATIO_TARGET),
        ("generated small files", &small, SMALL_FOLDER_TARGET),
    ];
    for (label, dir, target) in rows {
        let mut files = 0usize;
        let t = interleaved(
            &mut [
                &mut || {
                    let t = time_process(&mut meshcheck_cmd(bin, dir, &[]), &out);
                    let reports: serde_json::Value =
                        serde_json::from_slice(&std::fs::read(&out).expect("the reports")).expect("JSON reports");
                    files = reports.as_array().map_or(0, Vec::len);
                    t
                },
                &mut || time_process(&mut meshcheck_cmd(bin, dir, &["--only", "SPEC-001"]), &out),
                &mut || time_process(&mut node_cmd(root, "validator_folder.js", dir), &out),
            ],
            runs,
        );
        let (ours, spec_only, theirs) = (t[0], t[1], t[2]);
        if dir == small.as_path() {
            assert_eq!(files, made, "one report per generated file");
        }
        let r = ours.as_secs_f64() / theirs.as_secs_f64();
        let r_spec = spec_only.as_secs_f64() / theirs.as_secs_f64();
        let per_file = (ours.as_secs_f64() - theirs.as_secs_f64()) * 1e3 / files.max(1) as f64;
        println!(
            "| {label} | {files} | {} | {} | {r:.2} | {per_file:.2} | <= {target}: {} | {} | {r_spec:.2} |",
            ms(theirs),
            ms(ours),
            verdict(r, target),
            ms(spec_only)
        );
    }
    println!();
}
