//! Benchmark of "load plus the implemented checks": [`meshcheck::engine::validate`]
//! on the largest shared assets and on a generated 1,000,000-triangle GLB.
//!
//! Run with `cargo bench --bench engine` (a plain `main`, no harness). It prints
//! markdown tables:
//!
//! 1. In-process, median and min over N runs after a warm-up:
//!    - `validate` with default options. That includes SPEC-001, which sends the
//!      file to the Khronos glTF-Validator in a warm Node process (the
//!      process-wide pool) on a second thread, beside meshcheck's own work.
//!    - `validate` with own checks: meshcheck's own loader and checks, one
//!      core. The 20M triangles/s target is judged on this, on the generated mesh.
//!    - The same own work split into `asset::load` and `engine::report_for`.
//! 2. The release CLI as a process per file (`target/release/meshcheck validate
//!    FILE --format json`, with and without `--skip` own): wall time,
//!    startup included, and peak resident memory against the target of
//!    2 x file size + 50 MB. Needs `cargo build --release` first; skipped without it.
//! 3. With `MESHCHECK_BENCH_PEERS=1`: `bench/peers.sh` times the Khronos
//!    glTF-Validator and glTF-Transform (NodeIO + inspect), and meshcheck's CLI,
//!    one process per file on the same input.
//!
//! `MESHCHECK_BENCH_RUNS` sets N (default 7, at least 5). MB here is 2^20 bytes.

/// The test support (code-built assets under `testkit`), shared with the
/// integration tests.
#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;
use support::testkit;

use crate::testkit::{Doc, sphere};
use meshcheck::asset::{self, Input, bundle};
use meshcheck::engine::{self, Options, Selection};
use meshcheck::report::{InputFormat, Report, Status};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The shared assets measured: the largest by bytes (of the three near-identical
/// `Node_NegativeScale_0x.zip` only one) plus the largest `.gltf`, which loads
/// its resources from disk.
const ASSETS: &[&str] = &[
    "khronos-sample-models/Avocado.zip",
    "khronos-sample-models/FlightHelmet.zip",
    "khronos-asset-generator/Node_NegativeScale_05.zip",
    "khronos-sample-models/NormalTangentTest.glb",
    "other/subpass_scene_opaque.gltf",
];

/// What the "own" columns leave out: SPEC-001 (the Node validator) and the
/// mesh-analysis checks (GEO, TOP, UV-002/004/005), which
/// `benches/trimesh_bench.py` measures against trimesh. What remains is the
/// loader plus the engine issue's checks: the scope of its targets.
const OWN_SKIP: &str = "SPEC-001,GEO,TOP,UV-002,UV-004,UV-005";

/// Triangles per second on one core, loaded and counted (judged on the generated mesh).
const TARGET_TRIS_PER_SEC: f64 = 20e6;
/// Peak memory budget: this many times the file size ...
const MEM_FACTOR: u64 = 2;
/// ... plus this many bytes.
const MEM_BASE: u64 = 50 << 20;

/// One file to measure.
struct Case {
    /// Name shown in the tables.
    label: String,
    /// Where it is on disk (the CLI and the peers read it from there).
    path: PathBuf,
    /// Its bytes, read once; every in-process run gets a fresh copy.
    bytes: Vec<u8>,
    /// Whether it is the generated mesh the throughput target is judged on.
    generated: bool,
}

impl Case {
    fn input(&self) -> Input {
        Input {
            filename: self.label.clone(),
            bytes: self.bytes.clone().into(),
            resolver: Box::new(bundle::DirResolver::new(bundle::parent_dir(&self.path))),
        }
    }
}

/// In-process results for one case.
struct EngineRow {
    format: &'static str,
    triangles: u64,
    /// Bytes the memory budget is based on: the file, plus external resources for a .gltf.
    budget_bytes: u64,
    /// Checks that ran / were skipped, and SPEC-001's status, in the default report.
    checks_ran: String,
    /// `validate` with default options (None when the validator is not installed).
    full: Option<Vec<Duration>>,
    /// `validate` with own checks.
    own: Vec<Duration>,
    load: Vec<Duration>,
    checks: Vec<Duration>,
}

impl EngineRow {
    fn own_rate(&self) -> f64 {
        self.triangles as f64 / median(&self.own).as_secs_f64()
    }
}

/// Process results for one case and one set of CLI arguments.
struct CliRow {
    wall: Vec<Duration>,
    /// GNU time's max RSS (the largest single process of the tree), in kB.
    max_rss_kb: Option<u64>,
    /// Sum over the process tree of each process's VmHWM, polled, in kB.
    tree_kb: Option<u64>,
}

impl CliRow {
    /// The figure the memory target is judged on: the tree sum, or GNU
    /// time's value when that is larger (polling can miss the last moments).
    fn peak_kb(&self) -> Option<u64> {
        self.tree_kb.max(self.max_rss_kb)
    }
}

/// One line of `bench/peers.sh` output.
struct PeerRow {
    median_ms: String,
    peak_kb: Option<u64>,
    triangles: String,
    input: String,
}

fn main() {
    let runs = std::env::var("MESHCHECK_BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(7usize).max(5);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let models = root.join("../shared/assets/models");
    let full_opts = Options::default();
    let own_opts = Options {
        selection: Selection::parse(&[], &[OWN_SKIP.to_string()]).expect("known check IDs and families"),
        ..Options::default()
    };
    let validator_note = match full_opts.spec_validator() {
        Ok(_) => None,
        Err(e) => Some(format!("{e}")),
    };

    let mut cases = Vec::new();
    for rel in ASSETS {
        let path = models.join(rel);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let label = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
                cases.push(Case { label, path, bytes, generated: false });
            }
            Err(e) => eprintln!("skipping {}: {e}", path.display()),
        }
    }

    let dir = std::env::temp_dir().join("meshcheck-bench");
    std::fs::create_dir_all(&dir).expect("create the temp folder for the generated GLB");
    let t = Instant::now();
    let glb = Doc::single(sphere(1000, 501, 1.0)).to_glb();
    let generate = t.elapsed();
    let glb_path = dir.join("sphere_1m.glb");
    std::fs::write(&glb_path, &glb).expect("write the generated GLB");
    eprintln!("generated {} ({} bytes) in {}", glb_path.display(), glb.len(), ms(generate));
    cases.push(Case { label: "sphere_1m.glb (generated)".into(), path: glb_path, bytes: glb, generated: true });

    println!("# meshcheck engine benchmark\n");
    println!(
        "N = {runs} runs per measurement after one warm-up; {} logical CPUs; meshcheck's own work is \
         single-threaded per file.\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    if let Some(note) = &validator_note {
        println!("SPEC-001's validator is not available, so the default-options columns are empty: {note}\n");
    }

    // 1. In-process.
    let started = Instant::now();
    let mut engine_rows = Vec::new();
    for case in &cases {
        eprintln!("engine: {}", case.label);
        let full = validator_note.is_none().then_some(&full_opts);
        engine_rows.push(bench_engine(case, full, &own_opts, runs));
    }
    print_engine_table(&cases, &engine_rows);

    // 2. The CLI as a process.
    let bin = release_binary(&root);
    let mut cli_rows: Vec<(Option<CliRow>, CliRow)> = Vec::new();
    match &bin {
        Some(bin) => {
            for case in &cases {
                eprintln!("cli: {}", case.label);
                let full = validator_note.is_none().then(|| bench_cli(bin, case, runs, &[]));
                let own = bench_cli(bin, case, runs, &["--skip", OWN_SKIP]);
                cli_rows.push((full, own));
            }
            print_cli_table(bin, &cases, &engine_rows, &cli_rows);
        }
        None => {
            println!(
                "## Release CLI, one process per file\n\nSkipped: no `target/release/meshcheck`. \
                 The wall-time and peak-memory columns need `cargo build --release --bin meshcheck` first.\n"
            );
        }
    }

    // 3. Peers.
    if std::env::var("MESHCHECK_BENCH_PEERS").is_ok_and(|v| v == "1") {
        let peers = run_peers(&root, bin.as_deref(), &cases);
        print_peer_table(&cases, &peers);
    } else {
        println!(
            "## Peers\n\nNot run. Set `MESHCHECK_BENCH_PEERS=1` to time the Khronos glTF-Validator and glTF-Transform \
             on the same files (`bench/peers.sh`; needs node and npm, installs into /tmp).\n"
        );
    }
    summarise(&cases, &engine_rows, &cli_rows);
    eprintln!("benchmark took {:.0} s", started.elapsed().as_secs_f64());
}

fn bench_engine(case: &Case, full: Option<&Options>, own: &Options, runs: usize) -> EngineRow {
    // Warm-up (starts the validator pool), and the facts about the asset.
    let asset = asset::load(case.input()).unwrap_or_else(|e| panic!("{} does not load: {e}", case.label));
    let triangles = asset.scene.triangles();
    let format = match asset.info.format {
        InputFormat::Glb => "glb",
        InputFormat::Gltf => "gltf",
        InputFormat::Zip => "zip",
    };
    let budget_bytes = match asset.info.format {
        InputFormat::Gltf => asset.asset_bytes,
        _ => case.bytes.len() as u64,
    };
    drop(asset);
    let warm = match full {
        Some(opts) => engine::validate(case.input(), opts),
        None => engine::validate(case.input(), own),
    };
    let checks_ran = match &warm {
        Ok(report) => checks_summary(report),
        Err(e) => format!("error: {e}"),
    };
    let _ = engine::validate(case.input(), own);

    let time_validate = |opts: &Options| -> Vec<Duration> {
        (0..runs)
            .map(|_| {
                let input = case.input();
                let t = Instant::now();
                let report = engine::validate(input, opts);
                let d = t.elapsed();
                std::hint::black_box(report).expect("validate");
                d
            })
            .collect()
    };
    let full = full.map(&time_validate);
    let own_times = time_validate(own);
    let (mut load, mut checks) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        let input = case.input();
        let t = Instant::now();
        let asset = asset::load(input).expect("load");
        let loaded = t.elapsed();
        let report = engine::report_for(&asset, own);
        checks.push(t.elapsed() - loaded);
        load.push(loaded);
        std::hint::black_box(report);
    }
    EngineRow { format, triangles, budget_bytes, checks_ran, full, own: own_times, load, checks }
}

/// "12 ran, 1 skipped; SPEC-001 fail".
fn checks_summary(report: &Report) -> String {
    let skipped = report.checks.iter().filter(|c| c.status == Status::Skipped).count();
    let spec = report.checks.iter().find(|c| c.id == "SPEC-001").map(|c| c.status.as_str());
    format!("{} ran, {skipped} skipped; SPEC-001 {}", report.checks.len() - skipped, spec.unwrap_or("absent"))
}

/// The release binary beside this bench's own target folder, if it was built.
fn release_binary(root: &Path) -> Option<PathBuf> {
    let beside =
        std::env::current_exe().ok().and_then(|exe| exe.parent()?.parent().map(|release| release.join("meshcheck")));
    let candidates = [beside, Some(root.join("target/release/meshcheck"))];
    candidates.into_iter().flatten().find(|p| p.is_file())
}

fn cli_command(bin: &Path, file: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("validate").arg(file).args(["--format", "json"]).args(extra).stdout(Stdio::null()).stderr(Stdio::null());
    cmd
}

fn bench_cli(bin: &Path, case: &Case, runs: usize, extra: &[&str]) -> CliRow {
    // Warm-up (page cache), then wall time with a blocking wait.
    let _ = cli_command(bin, &case.path, extra).status();
    let mut wall = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let status = cli_command(bin, &case.path, extra).status().expect("spawn meshcheck");
        wall.push(t.elapsed());
        // Exit 1 is a failing verdict; 2 or more is an error.
        assert!(status.code().is_some_and(|c| c <= 1), "meshcheck failed on {}: {status}", case.label);
    }
    // GNU time's max RSS (wait4 rusage), when present.
    let time_bin = Path::new("/usr/bin/time");
    let mut max_rss_kb = None;
    if time_bin.is_file() {
        let out = std::env::temp_dir().join(format!("meshcheck-bench-rss-{}", std::process::id()));
        for _ in 0..2 {
            let mut cmd = Command::new(time_bin);
            cmd.args(["-f", "%M", "-o"]).arg(&out).arg(bin).arg("validate").arg(&case.path);
            cmd.args(["--format", "json"]).args(extra).stdout(Stdio::null()).stderr(Stdio::null());
            let kb = cmd
                .status()
                .ok()
                .and_then(|_| std::fs::read_to_string(&out).ok())
                .and_then(|s| s.lines().filter_map(|l| l.trim().parse::<u64>().ok()).next_back());
            max_rss_kb = max_rss_kb.max(kb);
        }
        let _ = std::fs::remove_file(&out);
    }
    // The process tree's VmHWM, polled.
    let mut tree_kb = None;
    for _ in 0..3 {
        tree_kb = tree_kb.max(poll_tree_peak_kb(cli_command(bin, &case.path, extra)));
    }
    CliRow { wall, max_rss_kb, tree_kb }
}

/// Runs `cmd`, polling `/proc/PID/status` VmHWM (the peak resident set) of it
/// and of its child processes every millisecond until it exits; returns the
/// sum over processes of the largest value seen for each. A lower bound for
/// each process (its last milliseconds can be missed), an upper bound for the
/// tree (the processes need not peak at the same moment).
fn poll_tree_peak_kb(mut cmd: Command) -> Option<u64> {
    let mut child = cmd.spawn().ok()?;
    let root = child.id();
    let mut peaks: BTreeMap<u32, u64> = BTreeMap::new();
    loop {
        for pid in support::procfs::tree(root) {
            if let Some(kb) = support::procfs::status(pid).and_then(|s| s.kb("VmHWM")) {
                let e = peaks.entry(pid).or_default();
                *e = (*e).max(kb);
            }
        }
        if child.try_wait().ok()?.is_some() {
            return (!peaks.is_empty()).then(|| peaks.values().sum());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn run_peers(root: &Path, bin: Option<&Path>, cases: &[Case]) -> HashMap<(String, String), PeerRow> {
    let script = root.join("bench/peers.sh");
    let mut cmd = Command::new("bash");
    cmd.arg(&script).args(cases.iter().map(|c| &c.path)).env("MESHCHECK_BENCH_RUNS", "5");
    if let Some(bin) = bin {
        cmd.env("MESHCHECK_BIN", bin);
    }
    cmd.stderr(Stdio::inherit());
    let mut rows = HashMap::new();
    match cmd.output() {
        Ok(out) => {
            if !out.status.success() {
                eprintln!("bench/peers.sh exited with {}", out.status);
            }
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                let f: Vec<&str> = line.split('\t').collect();
                if let [tool, file, median, _min, peak, tris, input] = f[..] {
                    rows.insert(
                        (tool.to_string(), file.to_string()),
                        PeerRow {
                            median_ms: median.to_string(),
                            peak_kb: peak.parse().ok(),
                            triangles: tris.to_string(),
                            input: input.to_string(),
                        },
                    );
                }
            }
        }
        Err(e) => eprintln!("cannot run {}: {e}", script.display()),
    }
    rows
}

fn print_engine_table(cases: &[Case], rows: &[EngineRow]) {
    println!("## In-process engine (`engine::validate`)\n");
    println!(
        "| asset | format | size | triangles | checks (default options) | validate, default options | \
         validate, own checks | min | load | checks | Mtris/s own (1 core) | Mtris/s default | \
         target 20M tris/s |"
    );
    println!("|---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|---|");
    for (case, r) in cases.iter().zip(rows) {
        let rate = r.own_rate();
        let verdict =
            if case.generated { if rate >= TARGET_TRIS_PER_SEC { "PASS" } else { "MISS" } } else { "n/a (small mesh)" };
        let full = r.full.as_ref().map(|f| ms(median(f))).unwrap_or_else(|| "-".into());
        let full_rate = r
            .full
            .as_ref()
            .map(|f| format!("{:.1}", r.triangles as f64 / median(f).as_secs_f64() / 1e6))
            .unwrap_or_else(|| "-".into());
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {} | {} |",
            case.label,
            r.format,
            mb(case.bytes.len() as u64),
            r.triangles,
            r.checks_ran,
            full,
            ms(median(&r.own)),
            ms(min(&r.own)),
            ms(median(&r.load)),
            ms(median(&r.checks)),
            rate / 1e6,
            full_rate,
            verdict
        );
    }
    println!(
        "\nTimes are medians unless marked min (min is of the own-checks runs). \"default options\" includes \
         SPEC-001: the Khronos glTF-Validator in a warm Node process, run on a second thread beside meshcheck's own \
         work. \"own checks\" is meshcheck's own work on one core: `asset::load` plus `engine::report_for` \
         with SPEC-001 and the mesh-analysis checks (GEO, TOP, UV-002/004/005; see trimesh_bench.py) skipped, \
         plus dropping the asset; load and checks are the same work timed separately \
         in their own runs.\n"
    );
}

fn print_cli_table(bin: &Path, cases: &[Case], engine_rows: &[EngineRow], rows: &[(Option<CliRow>, CliRow)]) {
    println!("## Release CLI, one process per file (`{} validate FILE --format json`)\n", bin.display());
    println!(
        "| asset | wall, default | peak RSS, default (meshcheck + node) | wall, `--skip` own | \
         peak RSS, `--skip` own | budget (2 x size + 50 MB) | memory target, default / skip |"
    );
    println!("|---|--:|--:|--:|--:|--:|---|");
    for ((case, e), (full, own)) in cases.iter().zip(engine_rows).zip(rows) {
        let budget = MEM_FACTOR * e.budget_bytes + MEM_BASE;
        let judge = |kb: Option<u64>| match kb {
            Some(kb) if kb * 1024 < budget => "PASS",
            Some(_) => "MISS",
            None => "-",
        };
        let peak = |kb: Option<u64>| kb.map(|kb| mb(kb * 1024)).unwrap_or_else(|| "-".into());
        let full_peak = full.as_ref().and_then(CliRow::peak_kb);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} / {} |",
            case.label,
            full.as_ref().map(|f| ms(median(&f.wall))).unwrap_or_else(|| "-".into()),
            peak(full_peak),
            ms(median(&own.wall)),
            peak(own.peak_kb()),
            mb(budget),
            judge(full_peak),
            judge(own.peak_kb())
        );
    }
    println!(
        "\nWall time: median, spawn to exit, process startup included (by default that includes starting Node for \
         SPEC-001). Peak RSS: the larger of GNU time's max RSS (`/usr/bin/time -f %M`, max of 2 runs; the largest \
         single process) and the sum over the process tree of each process's VmHWM polled from /proc every ms \
         (max of 3 runs). For a .gltf the size includes its external resources.\n"
    );
}

fn print_peer_table(cases: &[Case], peers: &HashMap<(String, String), PeerRow>) {
    println!("## Peers, one process per file (`bench/peers.sh`, the same input for every tool)\n");
    if peers.is_empty() {
        println!("No peer results (see the messages on stderr).\n");
        return;
    }
    let tools = ["meshcheck-cli", "meshcheck-own", "gltf-validator", "gltf-transform"];
    println!(
        "| asset | input given | meshcheck | meshcheck `--skip` own | gltf-validator | gltf-transform inspect | \
         max RSS (same order) | triangles (same order) |"
    );
    println!("|---|---|--:|--:|--:|--:|--:|--:|");
    for case in cases {
        let file = case.path.to_string_lossy().into_owned();
        let get = |tool: &str| peers.get(&(tool.to_string(), file.clone()));
        let Some(input) = tools.iter().find_map(|t| get(t)).map(|r| r.input.clone()) else { continue };
        let given = if input == file {
            "as is".to_string()
        } else {
            format!("extracted {}", Path::new(&input).file_name().map(|f| f.to_string_lossy()).unwrap_or_default())
        };
        let time = |t: &str| match get(t) {
            Some(r) if r.median_ms == "error" => "error".to_string(),
            Some(r) => format!("{} ms", r.median_ms),
            None => "-".into(),
        };
        let peak = |t: &str| get(t).and_then(|r| r.peak_kb).map(|kb| mb(kb * 1024)).unwrap_or_else(|| "-".into());
        let tris = |t: &str| get(t).map(|r| r.triangles.clone()).unwrap_or_else(|| "-".into());
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            case.label,
            given,
            time(tools[0]),
            time(tools[1]),
            time(tools[2]),
            time(tools[3]),
            tools.map(peak).join(" / "),
            tools.map(tris).join(" / ")
        );
    }
    println!(
        "\nMedian of 5 runs after a warm-up; wall time of a whole process per file, startup included (Node for the \
         peers and for meshcheck's SPEC-001), timed the same way for every tool. Neither peer reads zip bundles, so \
         a bundle is extracted first and every tool gets its main file. \"error\": the tool exits with an error on \
         that file. Max RSS is GNU time's (the largest single process, not the sum with a Node child). Triangles: \
         meshcheck and the glTF-Transform script count per node instance; the validator's totalTriangleCount counts \
         each mesh once.\n"
    );
}

fn summarise(cases: &[Case], engine_rows: &[EngineRow], cli_rows: &[(Option<CliRow>, CliRow)]) {
    println!("## Targets\n");
    for (i, (case, e)) in cases.iter().zip(engine_rows).enumerate() {
        if !case.generated {
            continue;
        }
        let rate = e.own_rate();
        println!(
            "- Throughput, {}, meshcheck's own load + checks on one core: {:.1}M tris/s (load {} + checks {}) \
             against 20M: **{}**",
            case.label,
            rate / 1e6,
            ms(median(&e.load)),
            ms(median(&e.checks)),
            if rate >= TARGET_TRIS_PER_SEC { "PASS" } else { "MISS" }
        );
        if let Some(full) = &e.full {
            let rate = e.triangles as f64 / median(full).as_secs_f64();
            println!(
                "- Throughput, {}, default options (with SPEC-001's Node validator): {:.1}M tris/s against 20M: **{}**",
                case.label,
                rate / 1e6,
                if rate >= TARGET_TRIS_PER_SEC { "PASS" } else { "MISS" }
            );
        }
        if let Some((full, own)) = cli_rows.get(i) {
            let budget = MEM_FACTOR * e.budget_bytes + MEM_BASE;
            let rows = [("default", full.as_ref()), ("`--skip` own", Some(own))];
            for (what, row) in rows {
                if let Some(kb) = row.and_then(CliRow::peak_kb) {
                    println!(
                        "- Peak memory, {}, CLI {what}: {} against {}: **{}**",
                        case.label,
                        mb(kb * 1024),
                        mb(budget),
                        if kb * 1024 < budget { "PASS" } else { "MISS" }
                    );
                }
            }
        }
    }
    if cli_rows.is_empty() {
        return;
    }
    for (what, pick) in [("default", 0), ("`--skip` own", 1)] {
        let mut misses = Vec::new();
        let mut measured = 0;
        for ((case, e), (full, own)) in cases.iter().zip(engine_rows).zip(cli_rows) {
            let row = if pick == 0 { full.as_ref() } else { Some(own) };
            let Some(kb) = row.and_then(CliRow::peak_kb) else { continue };
            measured += 1;
            if kb * 1024 >= MEM_FACTOR * e.budget_bytes + MEM_BASE {
                misses.push(case.label.as_str());
            }
        }
        if measured == 0 {
            continue;
        }
        if misses.is_empty() {
            println!("- Peak memory, CLI {what}, all {measured} files within 2 x size + 50 MB: **PASS**");
        } else {
            println!(
                "- Peak memory, CLI {what}: **MISS** for {} of {measured} files ({})",
                misses.len(),
                misses.join(", ")
            );
        }
    }
}

fn median(d: &[Duration]) -> Duration {
    let mut v = d.to_vec();
    v.sort();
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2 }
}

fn min(d: &[Duration]) -> Duration {
    d.iter().copied().min().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / (1u64 << 20) as f64)
}
