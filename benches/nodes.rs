//! Several nodes (issue 21): `meshcheck serve` processes, as operators run
//! them, on one PostgreSQL database (a throwaway cluster) and one S3 bucket
//! (s3s-fs), both started here on loopback. Two measurements, in one run:
//!
//! 1. Job throughput with 1, 2 and 3 nodes: `MESHCHECK_BENCH_JOBS` (default
//!    24) inputs over the 20 MB synchronous limit are uploaded first, then
//!    queued back to back (`POST /v1/validate {"blob_id"}`, round-robin over
//!    the nodes); the clock runs from the first queueing to the last job
//!    done (polled in the database). Each node runs its default workers (one
//!    per core) and a fresh database and bucket prefix per node count.
//! 2. checks_only latency at 8 clients on one node backed by SQLite (the
//!    default) and on one node backed by PostgreSQL: `MESHCHECK_BENCH_REQUESTS`
//!    (default 200) multipart validations of a generated ~1 MB sphere, each
//!    client with its own keep-alive connection and scale-plan key.
//!
//! ```sh
//! cargo bench --bench nodes
//! ```
//!
//! Prints markdown (the tables in BENCHMARKS.md) on stdout, progress on
//! stderr. Needs PostgreSQL's server binaries and s3s-fs, as the tests do.

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};
use support::serve_process::{Served, create_account, serve_command, start};
use support::testkit::{Doc, padded_glb, sphere};
use support::{postgres, s3};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn node(dir: &Path, db: Option<&str>, bucket: Option<(&s3::S3Server, &str)>) -> Served {
    let mut cmd = serve_command(dir);
    if let Some(db) = db {
        cmd.args(["--database", db]);
    }
    if let Some((b, prefix)) = bucket {
        cmd.args(["--blob-store", &format!("s3://{}/{prefix}", b.bucket)]).envs(b.env());
    }
    start(cmd, Duration::from_secs(120)).unwrap_or_else(|e| panic!("serve: {e}"))
}

/// Jobs per minute with `n` nodes.
fn jobs_per_minute(n: usize, jobs: usize, bucket: &s3::S3Server, glb: &[u8]) -> (f64, f64) {
    let tmp = tempfile::tempdir().unwrap();
    let db = postgres::database();
    let prefix = format!("bench{n}");
    let acct = create_account(tmp.path(), "scale", &["--database", &db]).unwrap();
    let mut nodes: Vec<Served> =
        (0..n).map(|i| node(&tmp.path().join(format!("n{i}")), Some(&db), Some((bucket, &prefix)))).collect();
    let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(300)).build().unwrap();
    let mut blobs = Vec::new();
    for i in 0..jobs {
        let base = format!("http://{}", nodes[i % n].addr);
        let up: Value =
            http.post(format!("{base}/v1/uploads")).header("x-api-key", &acct.key).send().unwrap().json().unwrap();
        let put = http.put(up["upload_url"].as_str().unwrap()).header("x-api-key", &acct.key).body(glb.to_vec()).send();
        assert_eq!(put.unwrap().status(), 200);
        blobs.push(up["blob_id"].as_str().unwrap().to_string());
    }
    let mut pg = ::postgres::Client::connect(&db, ::postgres::NoTls).unwrap();
    let started = Instant::now();
    for (i, blob) in blobs.iter().enumerate() {
        let base = format!("http://{}", nodes[i % n].addr);
        let r = http
            .post(format!("{base}/v1/validate"))
            .header("x-api-key", &acct.key)
            .json(&json!({"blob_id": blob}))
            .send();
        assert_eq!(r.unwrap().status(), 202);
    }
    loop {
        let done: i64 = pg.query_one("SELECT COUNT(*) FROM jobs WHERE status = 'done'", &[]).unwrap().get(0);
        let failed: i64 = pg.query_one("SELECT COUNT(*) FROM jobs WHERE status = 'failed'", &[]).unwrap().get(0);
        assert_eq!(failed, 0, "a job failed");
        if done as usize == jobs {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let wall = started.elapsed().as_secs_f64();
    for s in &mut nodes {
        let _ = s.stop(Duration::from_secs(60));
    }
    (jobs as f64 / wall * 60.0, wall)
}

/// checks_only at 8 clients on one node: (p50, p95, p99, max) in ms and req/s.
fn checks_only_latency(dir: &Path, db: Option<&str>, requests: usize, body: &(String, Vec<u8>)) -> [f64; 5] {
    let mut server = node(dir, db, None);
    let clients = 8;
    let keys: Vec<String> = (0..clients)
        .map(|_| {
            let mut extra = vec![];
            if let Some(db) = db {
                extra = vec!["--database", db];
            }
            create_account(dir, "scale", &extra).unwrap().key
        })
        .collect();
    let url = format!("http://{}/v1/validate", server.addr);
    let per = requests.div_ceil(clients);
    let started = Instant::now();
    let mut all: Vec<f64> = std::thread::scope(|sc| {
        let handles: Vec<_> = keys
            .iter()
            .map(|key| {
                let url = url.clone();
                sc.spawn(move || {
                    let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
                    let send = || {
                        let t = Instant::now();
                        let r = http
                            .post(&url)
                            .header("x-api-key", key)
                            .header("content-type", &body.0)
                            .body(body.1.clone())
                            .send()
                            .unwrap();
                        assert_eq!(r.status(), 200, "{:?}", r.text());
                        t.elapsed().as_secs_f64() * 1000.0
                    };
                    send();
                    (0..per).map(|_| send()).collect::<Vec<f64>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let wall = started.elapsed().as_secs_f64();
    let _ = server.stop(Duration::from_secs(60));
    all.sort_by(f64::total_cmp);
    let pct = |p: f64| all[((all.len() as f64 * p).ceil() as usize).clamp(1, all.len()) - 1];
    [pct(0.50), pct(0.95), pct(0.99), *all.last().unwrap(), all.len() as f64 / wall]
}

fn main() {
    let jobs = env_usize("MESHCHECK_BENCH_JOBS", 24);
    let requests = env_usize("MESHCHECK_BENCH_REQUESTS", 200);
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let bucket = s3::start().unwrap_or_else(|e| panic!("s3s-fs: {e}"));
    let glb = padded_glb(21_000_000);
    println!("Machine: {cores} CPUs; PostgreSQL cluster and s3s-fs on loopback; `meshcheck serve` processes.\n");
    println!("| nodes | jobs | wall (s) | jobs per minute |");
    println!("|--:|--:|--:|--:|");
    for n in 1..=3 {
        eprintln!("nodes: {n}");
        let (per_min, wall) = jobs_per_minute(n, jobs, &bucket, &glb);
        println!("| {n} | {jobs} | {wall:.1} | {per_min:.1} |");
    }
    let sphere_glb = Doc::single(sphere(160, 143, 1.0)).to_glb();
    let body = support::multipart::upload(&sphere_glb, &[("mode", "checks_only"), ("profile", "web")]);
    println!("\n| store | clients | requests | p50 (ms) | p95 (ms) | p99 (ms) | max (ms) | req/s |");
    println!("|---|--:|--:|--:|--:|--:|--:|--:|");
    for (name, db) in [("SQLite", None), ("PostgreSQL", Some(postgres::database()))] {
        eprintln!("checks_only on {name}");
        let tmp = tempfile::tempdir().unwrap();
        let [p50, p95, p99, max, rps] = checks_only_latency(tmp.path(), db.as_deref(), requests, &body);
        println!("| {name} | 8 | {requests} | {p50:.0} | {p95:.0} | {p99:.0} | {max:.0} | {rps:.1} |");
    }
}
