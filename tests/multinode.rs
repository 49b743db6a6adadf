//! Several `meshcheck serve` nodes on one PostgreSQL database and one S3
//! bucket (s3s-fs, a real S3-protocol server; issue 21): async jobs queued across the nodes, one node killed
//! with SIGKILL while it holds jobs, and every job still finishes on
//! another node, charged once, its webhook sent under one message id, its
//! uploaded bytes gone, its report readable from every node; the per-key
//! request limit is one bucket for all nodes.

use crate::support::serve_process::{Served, create_account, serve_command, start};
use crate::support::{postgres, s3};
use crate::testkit::padded_glb;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

/// A node: its own data folder (nothing shared there), the shared database
/// and bucket, one job worker, a 4-second lease so a dead node's jobs move
/// on quickly.
fn node(dir: &Path, db: &str, bucket: &s3::S3Server) -> Served {
    let mut cmd = serve_command(dir);
    cmd.args(["--database", db, "--workers", "1", "--job-lease", "4", "--allow-private-targets"])
        .args(["--blob-store", &format!("s3://{}/nodes", bucket.bucket)])
        .envs(bucket.env());
    start(cmd, Duration::from_secs(60)).unwrap()
}

/// The node id a server logged at start.
fn node_id(s: &Served) -> String {
    s.early
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["fields"]["message"] == "meshcheck serve listening")
        .and_then(|v| v["fields"]["node"].as_str().map(String::from))
        .expect("the listening line names the node")
}

/// A loopback webhook receiver on its own thread: the (webhook-id, job_id) of each POST.
fn receiver() -> (String, std::sync::mpsc::Receiver<(String, String)>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            listener.set_nonblocking(true).unwrap();
            let app = axum::Router::new().route(
                "/hook",
                axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                    let tx = tx.clone();
                    async move {
                        let id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
                        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let _ = tx.send((id, v["job_id"].as_str().unwrap_or("").to_string()));
                        axum::http::StatusCode::OK
                    }
                }),
            );
            let l = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    (format!("http://{addr}/hook"), rx)
}

#[test]
fn a_killed_node_s_jobs_finish_elsewhere_charged_once_and_limits_are_shared() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let db = postgres::database();
    let bucket = s3::start().unwrap();
    let acct = create_account(dir, "studio", &["--database", &db]).unwrap();
    let mut nodes: Vec<Served> = (0..3).map(|i| node(&dir.join(format!("node{i}")), &db, &bucket)).collect();
    let ids: Vec<String> = nodes.iter().map(node_id).collect();
    let addrs: Vec<String> = nodes.iter().map(|n| n.addr.clone()).collect();
    let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(120)).build().unwrap();
    let (hook, hooks) = receiver();

    // Nine async jobs (inputs over the 20 MB synchronous limit), queued
    // round-robin across the nodes, each input uploaded first.
    let glb = padded_glb(21_000_000);
    let mut jobs = Vec::new();
    for i in 0..9 {
        let base = format!("http://{}", addrs[i % 3]);
        let up: Value =
            http.post(format!("{base}/v1/uploads")).header("x-api-key", &acct.key).send().unwrap().json().unwrap();
        let put_url = up["upload_url"].as_str().unwrap();
        let put = http.put(put_url).header("x-api-key", &acct.key).body(glb.clone()).send().unwrap();
        assert_eq!(put.status(), 200, "{:?}", put.text());
        let env: Value = http
            .post(format!("{base}/v1/validate"))
            .header("x-api-key", &acct.key)
            .json(&json!({"blob_id": up["blob_id"], "webhook_url": hook}))
            .send()
            .unwrap()
            .json()
            .unwrap();
        jobs.push(env["job_id"].as_str().unwrap_or_else(|| panic!("a job: {env}")).to_string());
    }

    // Kill, with SIGKILL, the first node seen holding a job.
    let mut pg = ::postgres::Client::connect(&db, ::postgres::NoTls).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let victim = loop {
        let owners: Vec<String> = pg
            .query("SELECT lease_owner FROM jobs WHERE status = 'processing' AND lease_owner IS NOT NULL", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        if let Some(i) = ids.iter().position(|id| owners.contains(id)) {
            break i;
        }
        assert!(Instant::now() < deadline, "no node took a job");
        std::thread::sleep(Duration::from_millis(10));
    };
    nodes[victim].kill9();
    let orphaned: Vec<String> = pg
        .query("SELECT id FROM jobs WHERE status = 'processing' AND lease_owner = $1", &[&ids[victim]])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(!orphaned.is_empty(), "the node died holding a job");
    let survivors: Vec<usize> = (0..3).filter(|&i| i != victim).collect();

    // Every job finishes, on the surviving nodes.
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let open: i64 =
            pg.query_one("SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'processing')", &[]).unwrap().get(0);
        if open == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{open} jobs still open");
        std::thread::sleep(Duration::from_millis(200));
    }
    for job in &jobs {
        let row = pg.query_one("SELECT status, attempts FROM jobs WHERE id = $1", &[job]).unwrap();
        let (status, attempts): (String, i64) = (row.get(0), row.get(1));
        assert_eq!(status, "done", "{job}");
        if orphaned.contains(job) {
            assert!(attempts >= 2, "{job} was taken over: {attempts}");
        }
        // Charged once, never refunded.
        let ledger: Vec<i64> = pg
            .query("SELECT credits FROM ledger WHERE reference = $1", &[job])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(ledger.len(), 1, "{job}: {ledger:?}");
        assert!(ledger[0] > 0);
    }
    let takeovers = nodes
        .iter_mut()
        .enumerate()
        .filter(|(i, _)| *i != victim)
        .flat_map(|(_, n)| {
            let lines: Vec<String> =
                std::iter::from_fn(|| n.logs.recv_timeout(Duration::from_millis(200)).ok()).collect();
            lines
        })
        .filter(|l| l.contains("took over a job whose lease ran out") || l.contains("queued again for another node"))
        .count();
    assert!(takeovers >= 1, "the surviving nodes logged the takeover");

    // One webhook message per job (a resend would reuse its id).
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut by_job: HashMap<String, HashSet<String>> = HashMap::new();
    while by_job.len() < jobs.len() && Instant::now() < deadline {
        if let Ok((id, job)) = hooks.recv_timeout(Duration::from_millis(500)) {
            by_job.entry(job).or_default().insert(id);
        }
    }
    for job in &jobs {
        assert_eq!(by_job.get(job).map(HashSet::len), Some(1), "{job}: {by_job:?}");
    }

    // No uploaded bytes left; every report readable from every live node.
    let left = bucket.objects("nodes/blobs");
    assert!(left.is_empty(), "uploaded bytes left in the bucket: {left:?}");
    for i in 0..3 {
        let local = dir.join(format!("node{i}/blobs"));
        let files: Vec<_> = std::fs::read_dir(&local).into_iter().flatten().flatten().map(|e| e.file_name()).collect();
        assert!(files.is_empty(), "node {i} kept bytes locally: {files:?}");
    }
    for &i in &survivors {
        let addr = &addrs[i];
        for job in &jobs {
            let v: Value = http
                .get(format!("http://{addr}/v1/jobs/{job}"))
                .header("x-api-key", &acct.key)
                .send()
                .unwrap()
                .json()
                .unwrap();
            assert_eq!(v["status"], "done", "{v}");
            let report = v["result"]["report_id"].as_str().expect("a report id");
            let r =
                http.get(format!("http://{addr}/v1/reports/{report}")).header("x-api-key", &acct.key).send().unwrap();
            assert_eq!(r.status(), 200);
        }
    }

    // The per-key limit is one bucket across nodes: a free key (10 per
    // minute) gets 10 answers in all, not 10 from each node.
    let free = create_account(dir, "free", &["--database", &db]).unwrap();
    let mut ok = 0;
    let mut limited = 0;
    for i in 0..20 {
        let r = http
            .get(format!("http://{}/v1/account", addrs[survivors[i % 2]]))
            .header("x-api-key", &free.key)
            .send()
            .unwrap();
        match r.status().as_u16() {
            200 => ok += 1,
            429 => {
                limited += 1;
                assert!(r.headers().get("retry-after").is_some());
            }
            s => panic!("status {s}"),
        }
    }
    assert_eq!((ok, limited), (10, 10));
    // `meshcheck keys` and `accounts` reach the shared database too.
    let out = crate::util::bin().args(["keys", "create", "--account", &acct.id, "--database", &db]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let key = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let r = http.get(format!("http://{}/v1/account", addrs[survivors[0]])).header("x-api-key", &key).send().unwrap();
    assert_eq!(r.status(), 200);
    let out = crate::util::bin().args(["accounts", "list", "--database", &db]).output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains(&acct.id) && listed.contains(&free.id), "{listed}");
    for &i in &survivors {
        assert!(nodes[i].stop(Duration::from_secs(60)).unwrap().success());
    }
}
