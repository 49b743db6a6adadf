//! SPEC-001 benchmark: meshcheck's whole checks_only run (its own loader and
//! checks plus the Khronos glTF-Validator in a warm Node process, beside
//! them) against the same validator run bare in Node on the same file
//! (`benches/validator_direct.js`), both warm, plus a warm-pool validation of
//! Box.glb.
//!
//! `cargo bench --bench spec001` (needs `npm ci`). Targets: the whole run at
//! most 1.3x the bare validator's wall time; Box.glb through the warm pool
//! under 20 ms.

/// The test support (code-built assets under `testkit`), shared with the
/// integration tests.
#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;
use support::testkit;

use crate::testkit::{Doc, sphere};
use meshcheck::asset::Input;
use meshcheck::engine::{self, Options};
use meshcheck::validator::Validator;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const ASSETS: &[&str] = &[
    "khronos-sample-models/Avocado.zip",
    "khronos-sample-models/FlightHelmet.zip",
    "khronos-sample-models/NormalTangentTest.glb",
    "khronos-sample-models/CesiumMilkTruck.zip",
    "other/subpass_scene_opaque.gltf",
];
const RATIO_TARGET: f64 = 1.3;
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

fn main() {
    let runs = std::env::var("MESHCHECK_BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(7usize).max(5);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let validator = match Validator::global() {
        Ok(v) => v,
        Err(e) => {
            println!("SPEC-001 benchmark skipped: {e}");
            return;
        }
    };
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

    println!("# SPEC-001 benchmark\n");
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
    for f in &files {
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let go = || engine::validate(Input::from_path(f).expect("readable"), &opts).expect("a report");
        let first = go();
        let mut times = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            std::hint::black_box(go());
            times.push(t.elapsed());
        }
        let ours = median(times);
        let theirs = bare(&root, f, runs);
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
