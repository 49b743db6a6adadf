//! Renderer benchmark: six 1024x1024 stills of Box, FlightHelmet and a
//! generated 1M-triangle mesh, in process (device warm) and as whole CLI
//! processes (`meshcheck validate --mode full` with every check, and
//! `meshcheck render`), on whatever adapter wgpu picks (lavapipe without a GPU).
//! Then a folder of 16 copies of FlightHelmet in full mode, one process:
//! wall time and the peak resident memory of the process tree (meshcheck and
//! its render worker), against the 600 MB bound (issue 18).
//!
//! ```sh
//! cargo build --release --bin meshcheck
//! cargo bench --bench render          # MESHCHECK_BENCH_RUNS=N (default 5)
//! ```
//!
//! Prints markdown on stdout (the tables in BENCHMARKS.md), progress on stderr.

/// The test support (code-built assets under `testkit`), shared with the
/// integration tests.
#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;
use support::testkit;

use crate::testkit::{Doc, sphere};
use meshcheck::asset::{self, Input, LoadOptions};
use meshcheck::render::{Renderer, Request};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time_process(bin: &Path, args: &[&str], runs: usize) -> (f64, bool) {
    let mut times = Vec::new();
    let mut ok = true;
    for i in 0..=runs {
        let start = Instant::now();
        let status = Command::new(bin).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status();
        let t = start.elapsed().as_secs_f64();
        ok &= status.map(|s| s.code().is_some_and(|c| c <= 1)).unwrap_or(false);
        if i > 0 {
            times.push(t);
        }
    }
    (median(times), ok)
}

fn main() {
    let runs: usize = std::env::var("MESHCHECK_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(5).max(3);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let models = root.join("../shared/assets/models/khronos-sample-models");
    let dir = std::env::temp_dir().join("meshcheck-bench");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let sphere_path = dir.join("sphere_1m.glb");
    if !sphere_path.is_file() {
        eprintln!("writing {}", sphere_path.display());
        std::fs::write(&sphere_path, Doc::single(sphere(1000, 501, 1.0)).to_glb()).expect("write the 1M mesh");
    }
    let files = [models.join("Box.glb"), models.join("FlightHelmet.zip"), sphere_path];
    let bin = root.join("target/release/meshcheck");
    let renderer = match Renderer::shared() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("no renderer: {}", e.message);
            std::process::exit(4);
        }
    };
    let info = renderer.adapter().clone();
    println!("Adapter: {} ({}, {}); {} runs after one warm-up, median.\n", info.name, info.backend, info.driver, runs);
    println!(
        "| asset | triangles | 6 stills 1024x1024, in process (ms) | per still (ms) | `validate --mode full` process (s) | `render` process (s) | target |"
    );
    println!("|---|--:|--:|--:|--:|--:|---|");
    let out_dir = dir.join("render-out");
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_string();
        eprintln!("{name}: in process ...");
        let opened = asset::open(Input::from_path(f).expect("read")).expect("open");
        let asset = asset::load_opened_with(&opened, LoadOptions { keep_images: true }).expect("load");
        let req = Request::standard(1024);
        let mut times = Vec::new();
        let mut triangles = 0;
        for i in 0..=runs {
            let start = Instant::now();
            let out = renderer.render(&asset, &req).expect("render");
            let t = start.elapsed().as_secs_f64() * 1000.0;
            triangles = out.triangles;
            if i > 0 {
                times.push(t);
            }
        }
        let stills_ms = median(times);
        eprintln!("{name}: processes ...");
        let file = f.to_str().expect("utf-8 path");
        let (full_s, full_ok) = time_process(&bin, &["validate", file, "--mode", "full", "--format", "json"], runs);
        let (render_s, render_ok) = time_process(&bin, &["render", file, "--out", out_dir.to_str().unwrap()], runs);
        let target = match name.as_str() {
            "FlightHelmet.zip" => format!("full validate < 8 s: {}", if full_s < 8.0 { "PASS" } else { "MISS" }),
            "Box.glb" => format!("full validate < 1 s: {}", if full_s < 1.0 { "PASS" } else { "MISS" }),
            _ => "-".into(),
        };
        let flag = |ok: bool| if ok { "" } else { " (error)" };
        println!(
            "| {name} | {triangles} | {stills_ms:.0} | {:.0} | {full_s:.2}{} | {render_s:.2}{} | {target} |",
            stills_ms / 6.0,
            flag(full_ok),
            flag(render_ok)
        );
    }
    println!(
        "\nIn process: `Renderer::render` of the six standard views at 1024x1024 with 4x MSAA, the device already open: scene upload (buffers, texture decode and mips), drawing, read-back and compositing; PNG encoding excluded. Processes: spawn to exit, everything included (device start, shader compile, SPEC-001's Node validator for `validate`, PNG encoding and writing for `render`)."
    );
    folder_run(&bin, &models.join("FlightHelmet.zip"), &dir);
}

/// Resident bytes of `pid` (0 once it has gone).
fn rss(pid: u32) -> u64 {
    support::procfs::status(pid).and_then(|s| s.kb("VmRSS")).map_or(0, |kb| kb * 1024)
}

/// 16 copies of `model` validated in full mode by one process (SPEC-001
/// skipped: the Node validator is measured elsewhere): wall time and the
/// peak of the process tree's summed RSS, polled every 20 ms.
fn folder_run(bin: &Path, model: &Path, dir: &Path) {
    let folder = dir.join("folder16");
    std::fs::create_dir_all(&folder).expect("folder");
    for i in 0..16 {
        std::fs::copy(model, folder.join(format!("copy{i:02}.zip"))).expect("copy");
    }
    eprintln!("folder of 16 in full mode ...");
    let start = Instant::now();
    let mut child = Command::new(bin)
        .args(["validate", "--mode", "full", "--skip", "SPEC-001", "--format", "json"])
        .arg(&folder)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn meshcheck");
    let mut peak = 0u64;
    while child.try_wait().expect("wait").is_none() {
        peak = peak.max(support::procfs::tree(child.id()).into_iter().map(rss).sum());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let wall = start.elapsed().as_secs_f64();
    let mb = peak as f64 / 1e6;
    println!("\n| run | wall (s) | peak RSS, process tree (MB) | target < 600 MB |\n|---|--:|--:|---|");
    println!(
        "| `validate --mode full` over 16 copies of {} | {wall:.1} | {mb:.0} | {} |",
        model.file_name().and_then(|n| n.to_str()).unwrap_or("?"),
        if mb < 600.0 { "PASS" } else { "MISS" }
    );
}
