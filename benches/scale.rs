//! Memory and throughput by input size (issue 22, point 1): generated GLBs
//! from about 1 MB to the service's 250 MB ceiling, each a UV sphere with
//! normals and one UV set (the shape of a scanned or CAD export: positions,
//! normals, UVs and 32-bit indices, about 28 bytes a triangle, so 250 MB is
//! about 9M triangles).
//!
//! For every size, in one run:
//! 1. **CLI**: `meshcheck validate FILE --format json --skip SPEC-001` (every
//!    check but the Node validator, one process): wall time, triangles per
//!    second, and peak resident memory as the kernel reports it for the
//!    process (`wait4`'s `ru_maxrss`), against 3 x the file's size.
//!    The default run (`meshcheck validate FILE --format json`, SPEC-001
//!    included) is measured too, its own peak read from `VmHWM` every 2 ms
//!    (`ru_maxrss` would fold in its Node child's).
//! 2. **Peer**: the Khronos glTF-Validator alone in Node on the same file
//!    (`benches/validator_direct.js`), timed and measured the same way.
//! 3. **serve, async path**: one `meshcheck serve` process (release binary,
//!    SQLite, a temporary data folder); each file is uploaded
//!    (`POST /v1/uploads`, `PUT`), queued (`POST /v1/validate {"blob_id"}`,
//!    202) and polled to done. The server's peak (`VmHWM`, reset through
//!    `/proc/PID/clear_refs` before each job) is its own process: SPEC-001's
//!    Node validator is a child, reported in its own column.
//!
//! ```sh
//! cargo bench --bench scale
//! MESHCHECK_BENCH_SIZES_MB=1,32,250 MESHCHECK_BENCH_RUNS=3 cargo bench --bench scale
//! ```
//!
//! With `MESHCHECK_BENCH_KEEP=1` the generated spheres stay in
//! `$TMPDIR/meshcheck-bench/scale/sphere_{MB}mb.glb` (to compare reports or
//! profile one file); otherwise each is deleted once measured.
//!
//! **The floor.** Before the sizes, the same three are measured on the
//! smallest sphere the generator makes (`sphere(4, 2)`: 8 triangles, about 1
//! KB): what the process holds whatever its input (the binary's code and
//! its libraries as they are paged in, the thread pool, the profile), and,
//! for serve, the server's resident memory when a job is queued plus what
//! the floor's own job rose above it (its threads, buffers, report). Each
//! row then gives the peak's ratio to the file twice: whole, and above
//! that floor (the memory the input itself costs). At 1 and 8 MB the floor
//! is most of the peak (BENCHMARKS.md, "Thirty-first step").
//!
//! MB here is 10^6 bytes, as the service's limit is written. Needs Node and
//! the validator (`npm ci`) for the peer and for serve's SPEC-001.

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::serve_process::{create_account, serve_command, start};
use support::testkit::{Doc, sphere};

/// Peak memory target: this many times the input's size.
const TARGET_FACTOR: f64 = 3.0;
/// Bytes in the service's MB.
const MB: f64 = 1e6;

fn env_list(name: &str, default: &[f64]) -> Vec<f64> {
    std::env::var(name)
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

/// The floor's input: the smallest sphere [`sphere`] makes, 8 triangles.
fn generate_floor(dir: &Path) -> PathBuf {
    let path = dir.join("sphere_floor.glb");
    std::fs::write(&path, Doc::single(sphere(4, 2, 1.0)).to_glb()).unwrap();
    path
}

/// A sphere of about `mb` MB: `rings` x `2 rings` quads, two triangles each.
fn generate(dir: &Path, mb: f64) -> (PathBuf, u64, u64) {
    // About 28 bytes a triangle (12 of indices, 16 of vertex data at two
    // triangles a vertex); 2 % under, so 250 stays under the service's limit.
    let tris = (0.98 * mb * MB / 28.0).max(100.0);
    let rings = ((tris / 4.0).sqrt().round() as u32).max(4);
    let path = dir.join(format!("sphere_{mb}mb.glb"));
    let glb = Doc::single(sphere(2 * rings, rings, 1.0)).to_glb();
    std::fs::write(&path, &glb).unwrap();
    let triangles = 4 * rings as u64 * rings as u64 - 2 * 2 * rings as u64;
    (path, glb.len() as u64, triangles)
}

/// Runs `cmd` to its end: wall time, exit status and the child's peak
/// resident memory in bytes (`ru_maxrss`, exact, no polling).
// The child is reaped by `wait4` below, which `std` cannot see.
#[allow(clippy::zombie_processes)]
fn measured(mut cmd: Command) -> (Duration, i32, u64) {
    // A child's `ru_maxrss` starts from the high-water mark of the memory it
    // was started from: at `exec`, Linux keeps the larger of the new
    // program's peak and the parent's (this bench, which has just built a
    // sphere of up to 250 MB). Reset that mark to what the bench holds now,
    // after handing its freed heap back, so that the child's figure is its
    // own (the bench's few MB resident are the floor; `floor()` reports it).
    reset_own_peak();
    let start = Instant::now();
    let child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, writing into locals we own.
    let r = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    assert!(r > 0, "wait4 failed");
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    (wall, code, usage.ru_maxrss as u64 * 1024)
}

/// Runs `cmd` to its end, reading its own high-water mark of resident
/// memory (`VmHWM`) every 2 ms: wall time, exit status and that peak in
/// bytes. For a process with children of its own (meshcheck with SPEC-001,
/// whose Node validator `ru_maxrss` would fold in): the mark only rises, so
/// the last reading holds every peak but one in the final 2 ms, when the
/// report is written and nothing is built.
fn polled(mut cmd: Command) -> (Duration, i32, u64) {
    let start = Instant::now();
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn");
    let mut peak = 0u64;
    let status = loop {
        if let Some(kb) = support::procfs::status(child.id()).and_then(|s| s.kb("VmHWM")) {
            peak = peak.max(kb * 1024);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    (start.elapsed(), status.code().unwrap_or(-1), peak)
}

/// Hands the bench's freed heap back to the kernel and resets its
/// high-water mark of resident memory (`/proc/self/clear_refs`, 5) to what
/// it holds now.
fn reset_own_peak() {
    // SAFETY: malloc_trim only returns free heap memory to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the bench's peak resident memory");
}

/// The bench's own peak resident memory since the last reset (bytes): the
/// least a child started now can report.
fn floor() -> u64 {
    support::procfs::status(std::process::id()).and_then(|s| s.kb("VmHWM")).unwrap_or(0) * 1024
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

struct Row {
    mb: f64,
    bytes: u64,
    triangles: u64,
    cli_s: f64,
    cli_peak: u64,
    spec_s: f64,
    spec_peak: u64,
    peer_s: f64,
    peer_peak: u64,
    serve: Option<(f64, u64, u64, u64)>,
}

fn main() {
    let sizes = env_list("MESHCHECK_BENCH_SIZES_MB", &[1.0, 8.0, 32.0, 64.0, 128.0, 250.0]);
    let runs = std::env::var("MESHCHECK_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(3usize).max(1);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_meshcheck"));
    let validator = std::env::var("MESHCHECK_GLTF_VALIDATOR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("node_modules/gltf-validator"));
    let dir = std::env::temp_dir().join("meshcheck-bench/scale");
    std::fs::create_dir_all(&dir).unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let account = create_account(tmp.path(), "scale", &[]).expect("account");
    let mut served = start(serve_command(tmp.path()), Duration::from_secs(60)).expect("serve");
    let base = format!("http://{}", served.addr);
    let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(900)).build().unwrap();

    let mut bench_floor = 0u64;
    let floors = {
        let path = generate_floor(&dir);
        let mut f = Floors::default();
        for _ in 0..runs {
            let [cli, spec, peer] = three_paths(&exe, &root, &validator, &path, &mut bench_floor);
            f.cli = f.cli.max(cli.2);
            f.spec = f.spec.max(spec.2);
            f.peer = f.peer.max(peer.2);
        }
        if let Some((_, server, _, idle)) = serve_async(&http, &base, &account.key, served.pid(), &path) {
            f.serve_job = server.saturating_sub(idle);
        }
        let _ = std::fs::remove_file(&path);
        f
    };

    let mut rows = Vec::new();
    for &mb in &sizes {
        eprintln!("scale: generating {mb} MB");
        let (path, bytes, triangles) = generate(&dir, mb);
        let mut cli = Vec::new();
        let mut cli_peak = 0;
        let mut spec = Vec::new();
        let mut spec_peak = 0;
        let mut peer = Vec::new();
        let mut peer_peak = 0;
        for run in 0..runs {
            eprintln!("scale: {mb} MB run {}", run + 1);
            let [c, s, p] = three_paths(&exe, &root, &validator, &path, &mut bench_floor);
            cli.push(c.0.as_secs_f64());
            cli_peak = cli_peak.max(c.2);
            spec.push(s.0.as_secs_f64());
            spec_peak = spec_peak.max(s.2);
            peer.push(p.0.as_secs_f64());
            peer_peak = peer_peak.max(p.2);
        }
        let serve = serve_async(&http, &base, &account.key, served.pid(), &path);
        rows.push(Row {
            mb,
            bytes,
            triangles,
            cli_s: median(cli),
            cli_peak,
            spec_s: median(spec),
            spec_peak,
            peer_s: median(peer),
            peer_peak,
            serve,
        });
        if std::env::var_os("MESHCHECK_BENCH_KEEP").is_none() {
            let _ = std::fs::remove_file(&path);
        }
    }
    let _ = served.stop(Duration::from_secs(30));
    print(&rows, runs, bench_floor, &floors);
}

/// One run of `path` through the CLI with every check but SPEC-001, the
/// CLI's default run (meshcheck's own peak, its Node child apart) and the
/// bare validator: wall time, exit status and peak of each. `bench_floor`
/// keeps the most the bench held when it started the first.
fn three_paths(
    exe: &Path,
    root: &Path,
    validator: &Path,
    path: &Path,
    bench_floor: &mut u64,
) -> [(Duration, i32, u64); 3] {
    let cli = measured(cli_command(exe, path));
    *bench_floor = (*bench_floor).max(floor());
    let spec = polled(spec_command(exe, path));
    for code in [cli.1, spec.1] {
        assert!(code == 0 || code == 1, "meshcheck exited {code} on {}", path.display());
    }
    let peer = measured(peer_command(root, validator, path));
    assert_eq!(peer.1, 0, "the bare validator failed on {}", path.display());
    [cli, spec, peer]
}

/// The CLI with every check but SPEC-001.
fn cli_command(exe: &Path, path: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(["validate", "--format", "json", "--skip", "SPEC-001"]).arg(path);
    cmd
}

/// The CLI's default run, SPEC-001 included.
fn spec_command(exe: &Path, path: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(["validate", "--format", "json"]).arg(path);
    cmd
}

/// The bare Khronos validator in Node.
fn peer_command(root: &Path, validator: &Path, path: &Path) -> Command {
    let mut cmd = Command::new("node");
    cmd.arg(root.join("benches/validator_direct.js")).arg(path).env("MESHCHECK_GLTF_VALIDATOR", validator);
    cmd
}

/// Peaks on the floor's sphere (bytes): what each process holds whatever
/// its input. `serve_job` is that job's rise over the server's resident
/// memory when it was queued: a job's floor is the server's idle memory,
/// which [`serve_async`] reads per job, plus this.
#[derive(Default)]
struct Floors {
    cli: u64,
    spec: u64,
    peer: u64,
    serve_job: u64,
}

/// One file through serve's async path: seconds from queueing to done, the
/// server's peak, the peak of its Node children and the server's resident
/// memory when the job was queued (its floor; bytes), or `None` when the
/// job did not finish.
fn serve_async(
    http: &reqwest::blocking::Client,
    base: &str,
    key: &str,
    pid: i32,
    path: &Path,
) -> Option<(f64, u64, u64, u64)> {
    let up: Value = http.post(format!("{base}/v1/uploads")).header("x-api-key", key).send().ok()?.json().ok()?;
    let file = std::fs::File::open(path).ok()?;
    let put = http.put(up["upload_url"].as_str()?).header("x-api-key", key).body(file).send().ok()?;
    if !put.status().is_success() {
        eprintln!("scale: PUT answered {}", put.status());
        return None;
    }
    // Reset the peak of the server and of its children (the validator pool).
    let pids = support::procfs::tree(pid as u32);
    for p in &pids {
        let _ = std::fs::write(format!("/proc/{p}/clear_refs"), "5");
    }
    // Right after the reset the mark is what the server holds: its floor.
    let idle = peak(pid as u32);
    let started = Instant::now();
    let r = http
        .post(format!("{base}/v1/validate"))
        .header("x-api-key", key)
        .json(&json!({"blob_id": up["blob_id"], "mode": "checks_only"}))
        .send()
        .ok()?;
    let status = r.status();
    let body: Value = r.json().ok()?;
    let poll = match status.as_u16() {
        202 => body["poll"].as_str()?.to_string(),
        200 => return Some((started.elapsed().as_secs_f64(), peak(pid as u32), children_peak(pid as u32), idle)),
        s => {
            eprintln!("scale: validate answered {s}: {body}");
            return None;
        }
    };
    let (mut server, mut kids) = (0u64, 0u64);
    loop {
        server = server.max(peak(pid as u32));
        kids = kids.max(children_peak(pid as u32));
        let job: Value = http.get(format!("{base}{poll}")).header("x-api-key", key).send().ok()?.json().ok()?;
        match job["status"].as_str() {
            Some("done") => break,
            Some("failed") => {
                eprintln!("scale: job failed: {job}");
                return None;
            }
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    let secs = started.elapsed().as_secs_f64();
    Some((secs, server.max(peak(pid as u32)), kids.max(children_peak(pid as u32)), idle))
}

fn peak(pid: u32) -> u64 {
    support::procfs::status(pid).and_then(|s| s.kb("VmHWM")).unwrap_or(0) * 1024
}

fn children_peak(pid: u32) -> u64 {
    support::procfs::descendants(pid).into_iter().map(peak).sum()
}

fn print(rows: &[Row], runs: usize, bench_floor: u64, floors: &Floors) {
    let mbs = |b: u64| format!("{:.1}", b as f64 / MB);
    let ratio = |peak: u64, size: u64| peak as f64 / size as f64;
    // The peak above the process's floor, against the file.
    let above = |peak: u64, floor: u64, size: u64| peak.saturating_sub(floor) as f64 / size as f64;
    let verdict = |r: f64| if r <= TARGET_FACTOR { "PASS" } else { "MISS" };
    println!(
        "Median of {runs} runs (wall); peak = largest of the runs. MB = 10^6 bytes. Target: peak <= {TARGET_FACTOR} x file size, \
         judged whole and above the floor (the same command's peak on an 8-triangle sphere: meshcheck {} MB, \
         the default run {} MB, the bare validator {} MB). The bench itself held at most {} MB when it started a \
         command (part of every floor).\n",
        mbs(floors.cli),
        mbs(floors.spec),
        mbs(floors.peer),
        mbs(bench_floor)
    );
    println!(
        "| file | size (MB) | triangles | meshcheck (s) | meshcheck Mtris/s | meshcheck peak (MB) | peak / size | target | above floor / size | target | validator alone (s) | validator Mtris/s | validator peak (MB) | validator peak / size | validator above floor / size |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|---|--:|---|--:|--:|--:|--:|--:|");
    for r in rows {
        let (whole, own) = (ratio(r.cli_peak, r.bytes), above(r.cli_peak, floors.cli, r.bytes));
        println!(
            "| sphere {} MB | {} | {} | {:.3} | {:.2} | {} | {:.2} | {} | {:.2} | {} | {:.3} | {:.2} | {} | {:.2} | {:.2} |",
            r.mb,
            mbs(r.bytes),
            r.triangles,
            r.cli_s,
            r.triangles as f64 / r.cli_s / 1e6,
            mbs(r.cli_peak),
            whole,
            verdict(whole),
            own,
            verdict(own),
            r.peer_s,
            r.triangles as f64 / r.peer_s / 1e6,
            mbs(r.peer_peak),
            ratio(r.peer_peak, r.bytes),
            above(r.peer_peak, floors.peer, r.bytes),
        );
    }
    println!(
        "\nCLI, the default run (`meshcheck validate FILE --format json`, SPEC-001 included): meshcheck's own peak \
         (`VmHWM`, read every 2 ms), its Node validator apart:\n"
    );
    println!(
        "| file | size (MB) | meshcheck (s) | meshcheck peak (MB) | peak / size | target | above floor / size | target |"
    );
    println!("|---|--:|--:|--:|--:|---|--:|---|");
    for r in rows {
        let (whole, own) = (ratio(r.spec_peak, r.bytes), above(r.spec_peak, floors.spec, r.bytes));
        println!(
            "| sphere {} MB | {} | {:.3} | {} | {:.2} | {} | {:.2} | {} |",
            r.mb,
            mbs(r.bytes),
            r.spec_s,
            mbs(r.spec_peak),
            whole,
            verdict(whole),
            own,
            verdict(own)
        );
    }
    println!(
        "\nserve, async path (upload, `POST /v1/validate {{\"blob_id\"}}`, poll to done; every check, SPEC-001 included). \
         The floor is the server's resident memory when the job was queued (its idle memory) plus what the floor's \
         own job rose above its idle memory ({} MB: the job's threads, buffers and stored report):\n",
        mbs(floors.serve_job)
    );
    println!(
        "| file | size (MB) | queued to done (s) | Mtris/s | server peak (MB) | server peak / size | target | server floor (MB) | above floor / size | target | validator children peak (MB) |"
    );
    println!("|---|--:|--:|--:|--:|--:|---|--:|--:|---|--:|");
    for r in rows {
        match r.serve {
            Some((s, server, kids, idle)) => {
                let floor = idle + floors.serve_job;
                let (whole, own) = (ratio(server, r.bytes), above(server, floor, r.bytes));
                println!(
                    "| sphere {} MB | {} | {:.2} | {:.2} | {} | {:.2} | {} | {} | {:.2} | {} | {} |",
                    r.mb,
                    mbs(r.bytes),
                    s,
                    r.triangles as f64 / s / 1e6,
                    mbs(server),
                    whole,
                    verdict(whole),
                    mbs(floor),
                    own,
                    verdict(own),
                    mbs(kids)
                );
            }
            None => {
                println!("| sphere {} MB | {} | failed | - | - | - | MISS | - | - | MISS | - |", r.mb, mbs(r.bytes))
            }
        }
    }
}
