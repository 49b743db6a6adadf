//! Service soak benchmark: the real `meshcheck serve` binary under a bounded,
//! mixed load, watched for 5xx answers, memory growth and leaked file
//! descriptors.
//!
//! ```sh
//! cargo bench --bench soak
//! # MESHCHECK_SOAK_REQUESTS=N   HTTP requests to send (default 20000)
//! # MESHCHECK_SOAK_CLIENTS=N    concurrent clients (default 16)
//! # MESHCHECK_SOAK_CAP_S=S      wall-clock cap of the load (default and maximum 300)
//! ```
//!
//! Setup: a fresh temporary data folder; one `scale` account per client
//! (`meshcheck accounts create --plan scale --json`, 40,000 credits each, far
//! more than a client spends); then `meshcheck serve --addr 127.0.0.1:0
//! --no-rate-limits --allow-private-targets --log-format json` as a
//! subprocess, whose address is read from its "meshcheck serve listening"
//! log line (`tests/support/serve_process.rs`, as the tests start it).
//! `--no-rate-limits` because 20,000 requests from one IP would otherwise be
//! mostly 429s (credits still apply); `--allow-private-targets` because the
//! async jobs' webhooks go to a small receiver this bench runs on 127.0.0.1
//! (it answers 200 and counts deliveries). `XDG_RUNTIME_DIR` is pointed at a private temporary folder
//! when unset, and `MESHCHECK_CONFIG` at a file that does not exist, so no
//! user config changes the server. Everything stays on 127.0.0.1.
//!
//! Load: `MESHCHECK_SOAK_REQUESTS` HTTP requests (default 20,000) from
//! `MESHCHECK_SOAK_CLIENTS` tokio tasks (default 16), each with its own
//! reqwest client (one keep-alive connection) and its own key, each picking
//! an operation at random (a fixed seed per task) with these weights per
//! 1,000 operations:
//!
//! | weight | operation | requests |
//! |--:|---|---|
//! | 340 | POST /v1/validate, multipart, a 1.2 kB cube GLB (testkit), `checks_only` | 1 (200) |
//! | 140 | GET /healthz | 1 (200) |
//! | 100 | GET /v1/account | 1 (200) |
//! | 100 | GET /v1/reports/{id} of a report this client made earlier | 1 (200) |
//! | 60 | upload flow: POST /v1/uploads, PUT the cube to `upload_url`, POST /v1/validate `{"blob_id"}` | 3 (201, 200, 200) |
//! | 5 | async job: upload a 21 MB GLB (a cube with a padded buffer; above the 20 MB synchronous limit, so the validate is a job), POST /v1/validate `{"blob_id", "webhook_url"}`, then poll GET /v1/jobs/{id} every 250 ms until done | 3 (201, 200, 202) + polls (200) |
//! | 40 | GET /v1/account without a key | 1 (401) |
//! | 40 | GET /v1/reports/rpt_... that does not exist | 1 (404) |
//! | 40 | POST /v1/validate, multipart, a text file | 1 (415) |
//! | 40 | POST /v1/validate, `application/json`, malformed JSON | 1 (400) |
//! | 45 | GET /v1/openapi.json | 1 (200) |
//! | 50 | GET /llms.txt | 1 (200) |
//!
//! The validates (about 40% of the requests) are the CPU; the rest is the
//! cheap traffic a service also carries. The load stops once the request
//! budget is spent or at the wall-clock cap (300 s at most), whichever comes
//! first; the requests actually sent are reported. A multi-request
//! operation that has started is finished, so the count can pass the budget
//! by a few requests (job polling stops at the cap).
//!
//! Watching: a thread samples the server every second: VmRSS from
//! /proc/PID/status and the entries of /proc/PID/fd, and the same for every
//! descendant process (the Node.js reference validators, a render worker if
//! any), found through /proc/PID/task/*/children (`tests/support/procfs.rs`,
//! shared with the engine and render benches). Warm-up is the
//! first 20% of the request budget (4,000 of 20,000), or the first 60 s if
//! that comes sooner; a sample is taken the moment it ends. After the load,
//! the clients are dropped, the bench waits for outstanding webhook
//! deliveries (up to 15 s), then 2 s more, and takes the final sample.
//!
//! Criteria (a PASS/FAIL line each; the process exits 1 if one fails, 2 if
//! the server cannot be set up):
//! - no 5xx answers, no transport errors and no failed jobs;
//! - RSS flat: the server's RSS at the end is within 10% of its warm-up
//!   value (its peak after warm-up and a least-squares trend are printed
//!   too). The children are Node.js processes whose V8 heaps take longer
//!   than the warm-up to reach their plateau and then saw-tooth with garbage
//!   collection (measured on 2 CPUs: 288 MB for the two validators at 10 s,
//!   then 320-480 MB from 20 s to the end of a 90,000-request, 250 s run), so
//!   end-versus-warm-up would judge the collector, not a leak: the
//!   children's total is judged by its peaks instead, the late peak (second
//!   half of the samples after warm-up, and the end) within 10% of the early
//!   peak (warm-up and the first half), so peaks that keep climbing fail;
//! - no fd leak: the server's fd count at the end (clients gone, 2 s idle)
//!   is at most its warm-up count (taken with the 16 client connections
//!   open), and at most its count before the load, each plus a tolerance of
//!   4 (connections the server's own webhook client may keep to the
//!   receiver) and 3 pipes for each validator process the pool started
//!   since; the children's total fd count likewise may grow only by 4 plus
//!   their own count's growth times their per-process fds;
//! - the server stops on SIGTERM with exit status 0.
//!
//! Prints markdown tables on stdout and progress on stderr.

/// The test support (code-built assets under `testkit`, the loopback
/// `fakes`), shared with the integration tests.
#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;
use support::serve_process::{self, Served};
use support::{fakes, testkit};

use crate::testkit::Doc;
use bytes::Bytes;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Default HTTP requests of the load (MESHCHECK_SOAK_REQUESTS).
const DEFAULT_REQUESTS: usize = 20_000;
/// Default concurrent clients (MESHCHECK_SOAK_CLIENTS).
const DEFAULT_CLIENTS: usize = 16;
/// Hard wall-clock cap of the load (MESHCHECK_SOAK_CAP_S may only lower it).
const HARD_CAP: Duration = Duration::from_secs(300);
/// Warm-up: this share of the request budget, or of the cap's time, whichever ends first.
const WARMUP_SHARE: f64 = 0.2;
/// RSS may end at most this far above its warm-up value.
const RSS_TOLERANCE: f64 = 0.10;
/// Extra fds allowed at the end over the warm-up count (see the header).
const FD_TOLERANCE: i64 = 4;
/// Pipes the server holds per validator process (stdin, stdout, stderr).
const FDS_PER_CHILD: i64 = 3;
/// Size of the async job's input: above the 20 MB synchronous limit.
const BIG_BYTES: usize = 21_000_000;
/// Idle pause before the final sample.
const IDLE: Duration = Duration::from_secs(2);

/// The server's pid once started, so that `fail` can stop it.
static SERVER_PID: AtomicI32 = AtomicI32::new(0);

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("soak bench: {msg}");
    let pid = SERVER_PID.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: signalling the child process this bench started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    std::process::exit(2);
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

fn shell(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

// ---------------------------------------------------------------------------
// Request bodies.

fn multipart(fields: &[(&str, &str)], file: &[u8], filename: &str, ctype: &str) -> (String, Bytes) {
    let file = support::multipart::File { filename, content_type: ctype, bytes: file };
    let (ctype, body) = support::multipart::form(fields, Some(file));
    (ctype, Bytes::from(body))
}

/// Everything the clients send, built once.
struct Bodies {
    cube: Bytes,
    big: Bytes,
    validate_ctype: String,
    validate: Bytes,
    text_ctype: String,
    text: Bytes,
}

impl Bodies {
    fn new() -> Bodies {
        let cube = Doc::single(testkit::cube(1.0)).to_glb();
        let fields = [("mode", "checks_only"), ("profile", "web")];
        let (validate_ctype, validate) = multipart(&fields, &cube, "cube.glb", "application/octet-stream");
        let (text_ctype, text) =
            multipart(&fields, b"this is a shopping list, not a 3D model\n", "notes.txt", "text/plain");
        Bodies {
            cube: Bytes::from(cube),
            big: Bytes::from(testkit::padded_glb(BIG_BYTES)),
            validate_ctype,
            validate,
            text_ctype,
            text,
        }
    }
}

// ---------------------------------------------------------------------------
// The mix.

/// What one HTTP request was, for the tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Validate,
    Healthz,
    Account,
    Report,
    UploadBegin,
    UploadPut,
    ValidateBlob,
    AsyncBegin,
    AsyncPut,
    ValidateAsync,
    JobPoll,
    NoKey,
    UnknownReport,
    TextFile,
    BadJson,
    OpenApi,
    Llms,
}

impl Kind {
    const ALL: [Kind; 17] = [
        Kind::Validate,
        Kind::Healthz,
        Kind::Account,
        Kind::Report,
        Kind::UploadBegin,
        Kind::UploadPut,
        Kind::ValidateBlob,
        Kind::AsyncBegin,
        Kind::AsyncPut,
        Kind::ValidateAsync,
        Kind::JobPoll,
        Kind::NoKey,
        Kind::UnknownReport,
        Kind::TextFile,
        Kind::BadJson,
        Kind::OpenApi,
        Kind::Llms,
    ];

    /// Label, route, expected status.
    fn describe(self) -> (&'static str, &'static str, u16) {
        match self {
            Kind::Validate => ("validate (multipart cube)", "POST /v1/validate", 200),
            Kind::Healthz => ("healthz", "GET /healthz", 200),
            Kind::Account => ("account", "GET /v1/account", 200),
            Kind::Report => ("stored report", "GET /v1/reports/{id}", 200),
            Kind::UploadBegin => ("upload: begin", "POST /v1/uploads", 201),
            Kind::UploadPut => ("upload: PUT cube", "PUT /v1/uploads/{id}", 200),
            Kind::ValidateBlob => ("upload: validate blob", "POST /v1/validate", 200),
            Kind::AsyncBegin => ("async: begin upload", "POST /v1/uploads", 201),
            Kind::AsyncPut => ("async: PUT 21 MB", "PUT /v1/uploads/{id}", 200),
            Kind::ValidateAsync => ("async: validate blob (job)", "POST /v1/validate", 202),
            Kind::JobPoll => ("async: poll job", "GET /v1/jobs/{id}", 200),
            Kind::NoKey => ("error: no key", "GET /v1/account", 401),
            Kind::UnknownReport => ("error: unknown report", "GET /v1/reports/{id}", 404),
            Kind::TextFile => ("error: text file", "POST /v1/validate", 415),
            Kind::BadJson => ("error: bad JSON", "POST /v1/validate", 400),
            Kind::OpenApi => ("openapi", "GET /v1/openapi.json", 200),
            Kind::Llms => ("llms.txt", "GET /llms.txt", 200),
        }
    }
}

/// One operation a client picks (some are several requests).
#[derive(Clone, Copy, Debug)]
enum Op {
    Validate,
    Healthz,
    Account,
    Report,
    Upload,
    Async,
    NoKey,
    UnknownReport,
    TextFile,
    BadJson,
    OpenApi,
    Llms,
}

/// Weights per 1,000 operations (the table in the header).
const MIX: [(Op, u32); 12] = [
    (Op::Validate, 340),
    (Op::Healthz, 140),
    (Op::Account, 100),
    (Op::Report, 100),
    (Op::Upload, 60),
    (Op::Async, 5),
    (Op::NoKey, 40),
    (Op::UnknownReport, 40),
    (Op::TextFile, 40),
    (Op::BadJson, 40),
    (Op::OpenApi, 45),
    (Op::Llms, 50),
];

// ---------------------------------------------------------------------------
// The load generator.

/// State the clients share.
struct Shared {
    base: String,
    hook_url: String,
    bodies: Bodies,
    budget: usize,
    warmup_at: usize,
    cap_at: Instant,
    issued: AtomicUsize,
    warm_tx: Mutex<mpsc::Sender<Msg>>,
    transport_errors: Mutex<Vec<String>>,
}

impl Shared {
    /// Whether another operation may start.
    fn more(&self) -> bool {
        self.issued.load(Ordering::SeqCst) < self.budget && Instant::now() < self.cap_at
    }
    fn count_one(&self) {
        let n = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.warmup_at {
            let _ = self.warm_tx.lock().map(|tx| tx.send(Msg::Warmup));
        }
    }
}

/// One request's outcome: 0 for a transport error or a timeout.
struct Sample {
    kind: Kind,
    status: u16,
    ms: f32,
}

#[derive(Default)]
struct Jobs {
    started: usize,
    done: usize,
    failed: Vec<String>,
    abandoned: usize,
    poll_ms: Vec<f64>,
}

/// One load-generating client.
struct Gen {
    shared: Arc<Shared>,
    http: reqwest::Client,
    key: String,
    rng: u64,
    reports: Vec<String>,
    samples: Vec<Sample>,
    jobs: Jobs,
}

impl Gen {
    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn pick(&mut self) -> Op {
        let total: u32 = MIX.iter().map(|(_, w)| w).sum();
        let mut r = (self.next() % u64::from(total)) as u32;
        for (op, w) in MIX {
            if r < w {
                return op;
            }
            r -= w;
        }
        Op::Healthz
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.shared.base)
    }

    /// Sends one request, reads the whole answer, records it.
    async fn call(&mut self, kind: Kind, req: reqwest::RequestBuilder) -> (u16, Bytes) {
        self.shared.count_one();
        let start = Instant::now();
        let out = match req.send().await {
            Ok(r) => {
                let s = r.status().as_u16();
                r.bytes().await.map(|b| (s, b)).map_err(|e| e.to_string())
            }
            Err(e) => Err(e.to_string()),
        };
        let ms = start.elapsed().as_secs_f32() * 1000.0;
        let (status, body) = out.unwrap_or_else(|e| {
            if let Ok(mut v) = self.shared.transport_errors.lock()
                && v.len() < 5
            {
                v.push(format!("{}: {e}", kind.describe().0));
            }
            (0, Bytes::new())
        });
        self.samples.push(Sample { kind, status, ms });
        (status, body)
    }

    /// POST /v1/validate with this client's key and the given body.
    fn post_validate(&self, content_type: &str, body: Bytes) -> reqwest::RequestBuilder {
        self.http
            .post(self.url("/v1/validate"))
            .header("x-api-key", &self.key)
            .header("content-type", content_type)
            .body(body)
    }

    async fn validate_multipart(&mut self) {
        let b = &self.shared.bodies;
        let req = self.post_validate(&b.validate_ctype, b.validate.clone());
        let (status, body) = self.call(Kind::Validate, req).await;
        if status == 200
            && let Some(id) =
                serde_json::from_slice::<Value>(&body).ok().and_then(|v| v["report_id"].as_str().map(String::from))
        {
            if self.reports.len() >= 64 {
                let i = (self.next() % 64) as usize;
                self.reports[i] = id;
            } else {
                self.reports.push(id);
            }
        }
    }

    /// POST /v1/uploads then PUT the bytes; the blob id if both succeeded.
    async fn upload(&mut self, begin: Kind, put: Kind, bytes: Bytes) -> Option<String> {
        let req = self.http.post(self.url("/v1/uploads")).header("x-api-key", &self.key);
        let (status, body) = self.call(begin, req).await;
        if status != 201 {
            return None;
        }
        let v: Value = serde_json::from_slice(&body).ok()?;
        let blob_id = v["blob_id"].as_str()?.to_string();
        let mut upload_url = v["upload_url"].as_str()?.to_string();
        if upload_url.starts_with('/') {
            upload_url = self.url(&upload_url);
        }
        let req = self
            .http
            .put(upload_url)
            .header("x-api-key", &self.key)
            .header("content-type", "application/octet-stream")
            .body(bytes);
        let (status, _) = self.call(put, req).await;
        (status == 200).then_some(blob_id)
    }

    async fn validate_json(&mut self, kind: Kind, body: Value) -> (u16, Bytes) {
        let req = self
            .http
            .post(self.url("/v1/validate"))
            .header("x-api-key", &self.key)
            .header("content-type", "application/json")
            .body(body.to_string());
        self.call(kind, req).await
    }

    async fn async_job(&mut self) {
        let big = self.shared.bodies.big.clone();
        let Some(blob_id) = self.upload(Kind::AsyncBegin, Kind::AsyncPut, big).await else { return };
        let hook = self.shared.hook_url.clone();
        let (status, body) = self
            .validate_json(Kind::ValidateAsync, json!({"blob_id": blob_id, "mode": "checks_only", "webhook_url": hook}))
            .await;
        if status != 202 {
            return;
        }
        let Some(job_id) =
            serde_json::from_slice::<Value>(&body).ok().and_then(|v| v["job_id"].as_str().map(String::from))
        else {
            return;
        };
        self.jobs.started += 1;
        let start = Instant::now();
        loop {
            if Instant::now() >= self.shared.cap_at || start.elapsed() > Duration::from_secs(120) {
                self.jobs.abandoned += 1;
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
            let req = self.http.get(self.url(&format!("/v1/jobs/{job_id}"))).header("x-api-key", &self.key);
            let (status, body) = self.call(Kind::JobPoll, req).await;
            if status != 200 {
                continue;
            }
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            match v["status"].as_str() {
                Some("done") => {
                    self.jobs.done += 1;
                    self.jobs.poll_ms.push(start.elapsed().as_secs_f64() * 1000.0);
                    return;
                }
                Some("failed") => {
                    let code = v["result"]["error"]["code"].as_str().unwrap_or("?").to_string();
                    self.jobs.failed.push(format!("{job_id}: {code}"));
                    return;
                }
                _ => {}
            }
        }
    }

    async fn op(&mut self, op: Op) {
        match op {
            Op::Validate => self.validate_multipart().await,
            Op::Healthz => {
                let req = self.http.get(self.url("/healthz"));
                self.call(Kind::Healthz, req).await;
            }
            Op::Account => {
                let req = self.http.get(self.url("/v1/account")).header("x-api-key", &self.key);
                self.call(Kind::Account, req).await;
            }
            Op::Report => {
                if self.reports.is_empty() {
                    return self.validate_multipart().await;
                }
                let i = (self.next() % self.reports.len() as u64) as usize;
                let id = self.reports[i].clone();
                let req = self.http.get(self.url(&format!("/v1/reports/{id}"))).header("x-api-key", &self.key);
                self.call(Kind::Report, req).await;
            }
            Op::Upload => {
                let cube = self.shared.bodies.cube.clone();
                if let Some(blob_id) = self.upload(Kind::UploadBegin, Kind::UploadPut, cube).await {
                    self.validate_json(Kind::ValidateBlob, json!({"blob_id": blob_id, "mode": "checks_only"})).await;
                }
            }
            Op::Async => self.async_job().await,
            Op::NoKey => {
                let req = self.http.get(self.url("/v1/account"));
                self.call(Kind::NoKey, req).await;
            }
            Op::UnknownReport => {
                let id = format!("rpt_soakunknown{:016x}", self.next());
                let req = self.http.get(self.url(&format!("/v1/reports/{id}"))).header("x-api-key", &self.key);
                self.call(Kind::UnknownReport, req).await;
            }
            Op::TextFile => {
                let b = &self.shared.bodies;
                let req = self.post_validate(&b.text_ctype, b.text.clone());
                self.call(Kind::TextFile, req).await;
            }
            Op::BadJson => {
                let req = self.post_validate(
                    "application/json",
                    Bytes::from_static(br#"{"blob_id": "upl_x", "mode": "checks_only""#),
                );
                self.call(Kind::BadJson, req).await;
            }
            Op::OpenApi => {
                let req = self.http.get(self.url("/v1/openapi.json"));
                self.call(Kind::OpenApi, req).await;
            }
            Op::Llms => {
                let req = self.http.get(self.url("/llms.txt"));
                self.call(Kind::Llms, req).await;
            }
        }
    }

    async fn run(mut self) -> Gen {
        while self.shared.more() {
            let op = self.pick();
            self.op(op).await;
        }
        self
    }
}

// ---------------------------------------------------------------------------
// /proc sampling.

/// One process at one moment.
#[derive(Clone, Debug, Default)]
struct ProcStat {
    pid: i32,
    name: String,
    rss_kb: u64,
    fds: i64,
}

/// The server and its descendants at one moment.
#[derive(Clone, Debug)]
struct Snap {
    t_s: f64,
    requests: usize,
    server: ProcStat,
    children: Vec<ProcStat>,
}

impl Snap {
    fn children_rss_kb(&self) -> u64 {
        self.children.iter().map(|c| c.rss_kb).sum()
    }
    fn children_fds(&self) -> i64 {
        self.children.iter().map(|c| c.fds).sum()
    }
}

fn proc_stat(pid: i32) -> Option<ProcStat> {
    let status = support::procfs::status(pid as u32)?;
    let name = status.field("Name").unwrap_or_default().to_string();
    let rss_kb = status.kb("VmRSS").unwrap_or(0);
    let fds = support::procfs::fd_count(pid as u32).unwrap_or(-1);
    Some(ProcStat { pid, name, rss_kb, fds })
}

fn snapshot(pid: i32, start: Instant, requests: usize) -> Snap {
    let server = proc_stat(pid).unwrap_or(ProcStat { pid, ..Default::default() });
    let children = support::procfs::descendants(pid as u32).into_iter().filter_map(|p| proc_stat(p as i32)).collect();
    Snap { t_s: start.elapsed().as_secs_f64(), requests, server, children }
}

enum Msg {
    Warmup,
    Stop,
}

/// Samples every second until told to stop; returns the samples and the
/// index of the warm-up sample.
fn sampler(
    pid: i32,
    start: Instant,
    shared: Arc<Shared>,
    warm_after: Duration,
    rx: mpsc::Receiver<Msg>,
) -> (Vec<Snap>, Option<usize>) {
    let mut snaps = Vec::new();
    let mut warm = None;
    let mut next = Instant::now() + Duration::from_secs(1);
    loop {
        let wait = next.saturating_duration_since(Instant::now());
        let n = || shared.issued.load(Ordering::SeqCst);
        match rx.recv_timeout(wait) {
            Ok(Msg::Warmup) => {
                if warm.is_none() {
                    snaps.push(snapshot(pid, start, n()));
                    warm = Some(snaps.len() - 1);
                }
            }
            Ok(Msg::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                snaps.push(snapshot(pid, start, n()));
                if warm.is_none() && start.elapsed() >= warm_after {
                    warm = Some(snaps.len() - 1);
                }
                next += Duration::from_secs(1);
            }
        }
    }
    (snaps, warm)
}

// ---------------------------------------------------------------------------
// The server.

/// What the log reader saw.
#[derive(Default)]
struct LogStats {
    lines: usize,
    warn: usize,
    error: usize,
    errors: Vec<String>,
}

struct Server {
    served: Served,
    pid: i32,
    logs: std::thread::JoinHandle<LogStats>,
}

fn create_account(data: &Path) -> String {
    serve_process::create_account(data, "scale", &[]).unwrap_or_else(|e| fail(e)).key
}

fn start_server(data: &Path, config: &Path) -> Server {
    let mut cmd = serve_process::serve_command(data);
    cmd.args(["--no-rate-limits", "--allow-private-targets"])
        .env("MESHCHECK_LOG", "info")
        .env("MESHCHECK_CONFIG", config)
        .env_remove("MESHCHECK_BASE_URL")
        .env_remove("MESHCHECK_FETCH_ALLOW_HOSTS")
        .env_remove("MESHCHECK_RENDER_IN_PROCESS")
        .env_remove("MESHCHECK_VISION_URL")
        .env_remove("STRIPE_SECRET_KEY");
    let mut served = serve_process::start(cmd, Duration::from_secs(120)).unwrap_or_else(|e| fail(e));
    let pid = served.pid();
    SERVER_PID.store(pid, Ordering::SeqCst);
    let lines = served.take_logs();
    let logs = std::thread::spawn(move || {
        let mut st = LogStats::default();
        for line in lines {
            st.lines += 1;
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            match v["level"].as_str() {
                Some("WARN") => st.warn += 1,
                Some("ERROR") => {
                    st.error += 1;
                    if st.errors.len() < 5 {
                        st.errors.push(line.chars().take(300).collect());
                    }
                }
                // A line that is not JSON (a panic message): show it.
                None if !line.trim().is_empty() => {
                    st.error += 1;
                    if st.errors.len() < 5 {
                        st.errors.push(line.chars().take(300).collect());
                    }
                }
                _ => {}
            }
        }
        st
    });
    Server { served, pid, logs }
}

/// SIGTERM, then waits up to 60 s (running jobs get 30 s); the exit status if it stopped.
fn stop_server(server: &mut Server) -> Result<std::process::ExitStatus, String> {
    let stopped = server.served.stop(Duration::from_secs(60));
    SERVER_PID.store(0, Ordering::SeqCst);
    stopped
}

/// The shared webhook receiver (tests/support/fakes.rs), its deliveries counted.
async fn webhook_receiver(count: Arc<AtomicUsize>) -> (String, tokio::task::JoinHandle<()>) {
    let (addr, mut deliveries) = fakes::webhook_receiver(200).await;
    let task = tokio::spawn(async move {
        while deliveries.recv().await.is_some() {
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    (format!("http://{addr}/hook"), task)
}

// ---------------------------------------------------------------------------
// Statistics.

/// Nearest-rank percentile of sorted values.
fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Least-squares slope of (t, y), per minute.
fn slope_per_min(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if points.len() < 3 {
        return f64::NAN;
    }
    let mt = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let num: f64 = points.iter().map(|p| (p.0 - mt) * (p.1 - my)).sum();
    let den: f64 = points.iter().map(|p| (p.0 - mt).powi(2)).sum();
    if den == 0.0 { f64::NAN } else { num / den * 60.0 }
}

fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "FAIL" }
}

// ---------------------------------------------------------------------------

fn main() {
    let budget = env_usize("MESHCHECK_SOAK_REQUESTS", DEFAULT_REQUESTS).max(1);
    let clients = env_usize("MESHCHECK_SOAK_CLIENTS", DEFAULT_CLIENTS).max(1);
    let cap = Duration::from_secs(env_usize("MESHCHECK_SOAK_CAP_S", HARD_CAP.as_secs() as usize) as u64).min(HARD_CAP);
    let warmup_at = ((budget as f64 * WARMUP_SHARE).ceil() as usize).max(1);
    let warm_after = cap.mul_f64(WARMUP_SHARE);

    // Mesa (a render worker, if one ever starts) warns without XDG_RUNTIME_DIR.
    let _runtime_dir = if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| fail(format!("temp dir: {e}")));
        // SAFETY: no other thread exists yet.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", dir.path()) };
        Some(dir)
    } else {
        None
    };
    let tmp = tempfile::tempdir().unwrap_or_else(|e| fail(format!("temp dir: {e}")));
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap_or_else(|e| fail(format!("{}: {e}", data.display())));
    let no_config = tmp.path().join("no-config.toml");

    eprintln!("soak: creating {clients} scale accounts ...");
    let keys: Vec<String> = (0..clients).map(|_| create_account(&data)).collect();
    eprintln!("soak: starting meshcheck serve ...");
    let mut server = start_server(&data, &no_config);
    let base = format!("http://{}", server.served.addr);
    eprintln!("soak: server pid {} on {}", server.pid, server.served.addr);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(format!("tokio runtime: {e}")));
    let hook_count = Arc::new(AtomicUsize::new(0));
    let (hook_url, hook_task) = rt.block_on(webhook_receiver(hook_count.clone()));

    // Sanity: the server answers and validates.
    let bodies = Bodies::new();
    rt.block_on(async {
        let http = reqwest::Client::new();
        let h = http.get(format!("{base}/healthz")).send().await.map(|r| r.status().as_u16());
        if h.as_ref().ok() != Some(&200) {
            fail(format!("GET /healthz: {h:?}"));
        }
        let r = http
            .post(format!("{base}/v1/validate"))
            .header("x-api-key", &keys[0])
            .header("content-type", &bodies.validate_ctype)
            .body(bodies.validate.clone())
            .send()
            .await
            .unwrap_or_else(|e| fail(format!("sanity validate: {e}")));
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        if status != 200 || v["report_id"].as_str().is_none() {
            fail(format!("sanity validate: {status}: {v}"));
        }
    });
    std::thread::sleep(IDLE);
    let t0 = Instant::now();
    let start_snap = snapshot(server.pid, t0, 0);

    // The load.
    let (tx, rx) = mpsc::channel::<Msg>();
    let shared = Arc::new(Shared {
        base: base.clone(),
        hook_url,
        bodies,
        budget,
        warmup_at,
        cap_at: Instant::now() + cap,
        issued: AtomicUsize::new(0),
        warm_tx: Mutex::new(tx.clone()),
        transport_errors: Mutex::new(Vec::new()),
    });
    let sampler_thread = {
        let shared = shared.clone();
        let pid = server.pid;
        std::thread::spawn(move || sampler(pid, t0, shared, warm_after, rx))
    };
    eprintln!(
        "soak: {budget} requests from {clients} clients (cap {} s; warm-up {warmup_at} requests or {} s) ...",
        cap.as_secs(),
        warm_after.as_secs()
    );
    let load_start = Instant::now();
    let progress_stop = Arc::new(AtomicBool::new(false));
    let gens: Vec<Gen> = rt.block_on(async {
        let progress = {
            let shared = shared.clone();
            let stop = progress_stop.clone();
            tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    eprintln!(
                        "soak: {:>5.0} s, {} requests",
                        load_start.elapsed().as_secs_f64(),
                        shared.issued.load(Ordering::SeqCst)
                    );
                }
            })
        };
        let mut handles = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let http = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap_or_else(|e| fail(format!("HTTP client: {e}")));
            let g = Gen {
                shared: shared.clone(),
                http,
                key: key.clone(),
                rng: 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 1) | 1,
                reports: Vec::new(),
                samples: Vec::new(),
                jobs: Jobs::default(),
            };
            handles.push(tokio::spawn(g.run()));
        }
        let mut gens = Vec::new();
        for h in handles {
            gens.push(h.await.unwrap_or_else(|e| fail(format!("client task failed: {e}"))));
        }
        progress_stop.store(true, Ordering::SeqCst);
        progress.abort();
        gens
    });
    let load_s = load_start.elapsed().as_secs_f64();
    let sent = shared.issued.load(Ordering::SeqCst);
    let capped = sent < budget;
    let end_load = snapshot(server.pid, t0, sent);
    let _ = tx.send(Msg::Stop);
    drop(tx);
    let (mut snaps, warm_idx) = sampler_thread.join().unwrap_or_else(|_| fail("sampler thread panicked"));
    eprintln!("soak: {sent} requests in {load_s:.1} s; dropping the clients, waiting for webhooks ...");

    // Tear the clients down, keep what they recorded.
    let mut samples = Vec::new();
    let mut jobs = Jobs::default();
    for g in gens {
        samples.extend(g.samples);
        jobs.started += g.jobs.started;
        jobs.done += g.jobs.done;
        jobs.failed.extend(g.jobs.failed);
        jobs.abandoned += g.jobs.abandoned;
        jobs.poll_ms.extend(g.jobs.poll_ms);
    }
    let transport_errors = shared.transport_errors.lock().map(|v| v.clone()).unwrap_or_default();
    drop(shared);
    let settle = Instant::now();
    while hook_count.load(Ordering::SeqCst) < jobs.started && settle.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(IDLE);
    let end_idle = snapshot(server.pid, t0, sent);
    let blobs_left = std::fs::read_dir(data.join("blobs")).map(|d| d.count()).unwrap_or(0);
    let hooks = hook_count.load(Ordering::SeqCst);

    eprintln!("soak: stopping the server (SIGTERM) ...");
    let stopped = stop_server(&mut server);
    let logs = server.logs.join().unwrap_or_default();
    hook_task.abort();
    drop(rt);

    // ------------------------------------------------------------------ report
    let warm_idx = warm_idx.unwrap_or_else(|| {
        // The run ended before warm-up did (a tiny budget): the first sample stands in.
        if snaps.is_empty() {
            snaps.push(end_load.clone());
        }
        0
    });
    let warm = snaps[warm_idx].clone();
    let mut after: Vec<Snap> = snaps[warm_idx + 1..].to_vec();
    after.push(end_load.clone());

    let nproc = shell("nproc", &[]).unwrap_or_else(|| "?".into());
    let commit = shell("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "?".into());
    let dirty = shell("git", &["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "Machine: {nproc} CPUs (nproc), load average at the end {}; commit {commit}{}. Server: `meshcheck serve --addr 127.0.0.1:0 --no-rate-limits --allow-private-targets` (pid {}, {}), fresh data folder, {clients} scale accounts.\n",
        loadavg.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        if dirty { " (with uncommitted changes)" } else { "" },
        server.pid,
        server.served.addr
    );

    // Per kind.
    let mut by_kind: BTreeMap<Kind, Vec<&Sample>> = BTreeMap::new();
    for s in &samples {
        by_kind.entry(s.kind).or_default().push(s);
    }
    let statuses = |v: &[&Sample]| {
        let mut m = BTreeMap::<u16, usize>::new();
        for s in v {
            *m.entry(s.status).or_default() += 1;
        }
        m.iter()
            .map(|(k, n)| if *k == 0 { format!("{n}× transport") } else { format!("{n}× {k}") })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut unexpected_total = 0;
    println!(
        "| request kind | route | expected | sent | statuses | unexpected | p50 (ms) | p95 (ms) | p99 (ms) | max (ms) |"
    );
    println!("|---|---|--:|--:|---|--:|--:|--:|--:|--:|");
    for kind in Kind::ALL {
        let (label, route, expect) = kind.describe();
        let v = by_kind.get(&kind).map(Vec::as_slice).unwrap_or(&[]);
        let unexpected = v.iter().filter(|s| s.status != expect).count();
        unexpected_total += unexpected;
        let mut ms: Vec<f64> = v.iter().map(|s| f64::from(s.ms)).collect();
        ms.sort_by(f64::total_cmp);
        println!(
            "| {label} | {route} | {expect} | {} | {} | {unexpected} | {:.1} | {:.1} | {:.1} | {:.1} |",
            v.len(),
            statuses(v),
            pct(&ms, 50.0),
            pct(&ms, 95.0),
            pct(&ms, 99.0),
            ms.last().copied().unwrap_or(f64::NAN)
        );
    }
    let mut all_ms: Vec<f64> = samples.iter().map(|s| f64::from(s.ms)).collect();
    all_ms.sort_by(f64::total_cmp);
    let all_refs: Vec<&Sample> = samples.iter().collect();
    println!(
        "| **all** | | | {} | {} | {unexpected_total} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
        samples.len(),
        statuses(&all_refs),
        pct(&all_ms, 50.0),
        pct(&all_ms, 95.0),
        pct(&all_ms, 99.0),
        all_ms.last().copied().unwrap_or(f64::NAN)
    );

    let five_xx = samples.iter().filter(|s| s.status >= 500).count();
    let transport = samples.iter().filter(|s| s.status == 0).count();
    jobs.poll_ms.sort_by(f64::total_cmp);

    // Resources.
    let max_server = after.iter().map(|s| s.server.rss_kb).max().unwrap_or(0);
    let max_children = after.iter().map(|s| s.children_rss_kb()).max().unwrap_or(0);
    let max_server_fds = after.iter().map(|s| s.server.fds).max().unwrap_or(0);
    let max_children_fds = after.iter().map(|s| s.children_fds()).max().unwrap_or(0);
    let max_children_n = after.iter().map(|s| s.children.len()).max().unwrap_or(0);
    let trend = |f: &dyn Fn(&Snap) -> f64| {
        let pts: Vec<(f64, f64)> = std::iter::once(&warm).chain(after.iter()).map(|s| (s.t_s, f(s))).collect();
        slope_per_min(&pts)
    };
    let server_trend = trend(&|s| mb(s.server.rss_kb));
    let children_trend = trend(&|s| mb(s.children_rss_kb()));
    let pctc = |end: f64, w: f64| if w > 0.0 { (end / w - 1.0) * 100.0 } else { f64::NAN };

    println!(
        "| process | metric | start (idle) | warm-up end ({} req, {:.0} s) | max after warm-up | end of load | end (clients dropped, {} s idle) | end vs warm-up | trend after warm-up |",
        warm.requests,
        warm.t_s,
        IDLE.as_secs()
    );
    println!("|---|---|--:|--:|--:|--:|--:|--:|--:|");
    println!(
        "| server | RSS (MB) | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:+.1}% | {:+.2} MB/min |",
        mb(start_snap.server.rss_kb),
        mb(warm.server.rss_kb),
        mb(max_server),
        mb(end_load.server.rss_kb),
        mb(end_idle.server.rss_kb),
        pctc(end_idle.server.rss_kb as f64, warm.server.rss_kb as f64),
        server_trend
    );
    println!(
        "| server | open fds | {} | {} | {} | {} | {} | {:+} | |",
        start_snap.server.fds,
        warm.server.fds,
        max_server_fds,
        end_load.server.fds,
        end_idle.server.fds,
        end_idle.server.fds - warm.server.fds
    );
    println!(
        "| children | processes | {} | {} | {} | {} | {} | {:+} | |",
        start_snap.children.len(),
        warm.children.len(),
        max_children_n,
        end_load.children.len(),
        end_idle.children.len(),
        end_idle.children.len() as i64 - warm.children.len() as i64
    );
    println!(
        "| children | RSS, total (MB) | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:+.1}% | {:+.2} MB/min |",
        mb(start_snap.children_rss_kb()),
        mb(warm.children_rss_kb()),
        mb(max_children),
        mb(end_load.children_rss_kb()),
        mb(end_idle.children_rss_kb()),
        pctc(end_idle.children_rss_kb() as f64, warm.children_rss_kb() as f64),
        children_trend
    );
    println!(
        "| children | open fds, total | {} | {} | {} | {} | {} | {:+} | |\n",
        start_snap.children_fds(),
        warm.children_fds(),
        max_children_fds,
        end_load.children_fds(),
        end_idle.children_fds(),
        end_idle.children_fds() - warm.children_fds()
    );
    let names: Vec<String> = end_idle
        .children
        .iter()
        .map(|c| format!("{} {} ({:.0} MB, {} fds)", c.pid, c.name, mb(c.rss_kb), c.fds))
        .collect();
    println!("Children at the end: {}.\n", if names.is_empty() { "none".into() } else { names.join("; ") });

    // Timeline: about a dozen samples.
    let timeline: Vec<&Snap> = std::iter::once(&start_snap).chain(snaps.iter()).chain([&end_load, &end_idle]).collect();
    let step = timeline.len().div_ceil(12).max(1);
    println!("| t (s) | requests | server RSS (MB) | server fds | children | children RSS (MB) | children fds |");
    println!("|--:|--:|--:|--:|--:|--:|--:|");
    for (i, s) in timeline.iter().enumerate() {
        if i % step == 0 || i + 1 == timeline.len() || i == warm_idx + 1 {
            println!(
                "| {:.0} | {} | {:.1} | {} | {} | {:.1} | {} |",
                s.t_s,
                s.requests,
                mb(s.server.rss_kb),
                s.server.fds,
                s.children.len(),
                mb(s.children_rss_kb()),
                s.children_fds()
            );
        }
    }
    println!();

    // Summary.
    println!("| summary | value |");
    println!("|---|---|");
    println!(
        "| requests sent | {sent} of {budget}{} |",
        if capped { format!(" (stopped at the {} s cap)", cap.as_secs()) } else { String::new() }
    );
    println!("| load wall time | {load_s:.1} s |");
    println!("| throughput | {:.1} req/s |", sent as f64 / load_s);
    println!("| 5xx answers | {five_xx} |");
    println!(
        "| transport errors | {transport}{} |",
        if transport > 0 { format!(" ({transport_errors:?})") } else { String::new() }
    );
    println!("| unexpected statuses (incl. 5xx) | {unexpected_total} |");
    println!(
        "| async jobs | {} started, {} done, {} failed{}, {} abandoned at the cap; time to done p50 {:.0} ms, max {:.0} ms |",
        jobs.started,
        jobs.done,
        jobs.failed.len(),
        if jobs.failed.is_empty() { String::new() } else { format!(" ({})", jobs.failed.join(", ")) },
        jobs.abandoned,
        pct(&jobs.poll_ms, 50.0),
        jobs.poll_ms.last().copied().unwrap_or(f64::NAN)
    );
    println!("| webhook deliveries received | {hooks} |");
    println!("| blobs left in DATA/blobs at the end | {blobs_left} |");
    println!(
        "| server log | {} lines, {} WARN, {} ERROR{} |",
        logs.lines,
        logs.warn,
        logs.error,
        if logs.errors.is_empty() { String::new() } else { format!(": {:?}", logs.errors) }
    );
    println!(
        "| server stop (SIGTERM) | {} |\n",
        match &stopped {
            Ok(s) => format!("{s}"),
            Err(e) => e.clone(),
        }
    );

    // Criteria.
    let ok_errors = five_xx == 0 && transport == 0 && jobs.failed.is_empty();
    let limit = |w: u64| w as f64 * (1.0 + RSS_TOLERANCE);
    let server_flat = (end_idle.server.rss_kb as f64) <= limit(warm.server.rss_kb);
    // Children: the late peak against the early peak (see the header).
    let half = after.len() / 2;
    let early_peak = std::iter::once(&warm).chain(&after[..half]).map(Snap::children_rss_kb).max().unwrap_or(0);
    let late_peak = after[half..].iter().chain([&end_idle]).map(Snap::children_rss_kb).max().unwrap_or(0);
    let children_flat = (late_peak as f64) <= limit(early_peak);
    let peak_within = (max_server as f64) <= limit(warm.server.rss_kb);
    let new_children = (end_idle.children.len() as i64 - warm.children.len() as i64).max(0);
    let new_since_start = (end_idle.children.len() as i64 - start_snap.children.len() as i64).max(0);
    let server_fd_allowed = warm.server.fds + FD_TOLERANCE + FDS_PER_CHILD * new_children;
    let server_fd_allowed_start = start_snap.server.fds + FD_TOLERANCE + FDS_PER_CHILD * new_since_start;
    let per_child_fds = if warm.children.is_empty() { 0 } else { warm.children_fds() / warm.children.len() as i64 };
    let children_fd_allowed = warm.children_fds() + FD_TOLERANCE + per_child_fds * new_children;
    let fds_ok = end_idle.server.fds <= server_fd_allowed
        && end_idle.server.fds <= server_fd_allowed_start
        && end_idle.children_fds() <= children_fd_allowed;
    let stop_ok = matches!(&stopped, Ok(s) if s.success());

    println!(
        "- {}: no 5xx, no transport errors, no failed jobs ({five_xx} 5xx, {transport} transport errors, {} failed jobs)",
        verdict(ok_errors),
        jobs.failed.len()
    );
    println!(
        "- {}: server RSS flat within {:.0}% of warm-up ({:.1} MB at warm-up → {:.1} MB at the end, {:+.1}%; peak after warm-up {:.1} MB, {} 10%; trend {:+.2} MB/min)",
        verdict(server_flat),
        RSS_TOLERANCE * 100.0,
        mb(warm.server.rss_kb),
        mb(end_idle.server.rss_kb),
        pctc(end_idle.server.rss_kb as f64, warm.server.rss_kb as f64),
        mb(max_server),
        if peak_within { "within" } else { "above" },
        server_trend
    );
    println!(
        "- {}: children's RSS (total) flat within {:.0}%: late peak {:.1} MB vs early peak {:.1} MB, {:+.1}% (warm-up {:.1} MB → end {:.1} MB, {:+.1}%; trend {:+.2} MB/min)",
        verdict(children_flat),
        RSS_TOLERANCE * 100.0,
        mb(late_peak),
        mb(early_peak),
        pctc(late_peak as f64, early_peak as f64),
        mb(warm.children_rss_kb()),
        mb(end_idle.children_rss_kb()),
        pctc(end_idle.children_rss_kb() as f64, warm.children_rss_kb() as f64),
        children_trend
    );
    println!(
        "- {}: no fd leak (server {} before the load, {} at warm-up → {} at the end, allowed {}; children {} → {}, allowed {children_fd_allowed})",
        verdict(fds_ok),
        start_snap.server.fds,
        warm.server.fds,
        end_idle.server.fds,
        server_fd_allowed.min(server_fd_allowed_start),
        warm.children_fds(),
        end_idle.children_fds()
    );
    println!(
        "- {}: the server stops on SIGTERM with status 0 ({})",
        verdict(stop_ok),
        match &stopped {
            Ok(s) => format!("{s}"),
            Err(e) => e.clone(),
        }
    );
    let all = ok_errors && server_flat && children_flat && fds_ok && stop_ok;
    println!("\nOverall: **{}**", verdict(all));
    drop(tmp);
    if !all {
        std::process::exit(1);
    }
}
