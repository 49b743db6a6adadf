//! Service load benchmark: `POST /v1/validate` on the real `meshcheck serve`
//! stack, in process on 127.0.0.1:0, driven by its own bounded load generator.
//!
//! The server is [`server::serve`] over [`AppState::open`] on a temporary data
//! folder: SQLite store, blob folder, the warm Node validator pool, default
//! [`Config`] (engine slots = cores). The load generator is tokio tasks with
//! one reqwest client each (one keep-alive connection, reused), each sending
//! a fixed number of requests back to back. Two cases, chosen with
//! `MESHCHECK_BENCH_CASE`:
//!
//! - `load` (the default): every request is a multipart upload with
//!   `mode=checks_only` and `profile=web`, so the server runs every check
//!   (SPEC-001 on the warm validator included), charges a credit and stores
//!   the report, exactly as for a customer. Each client spends its own
//!   "scale" keys, a fresh one every 100 requests, so the 120-per-minute
//!   token bucket never answers 429. Two assets (Box.glb and a generated
//!   ~1 MB sphere: the shared assets hold no GLB between 0.8 and 1.5 MB),
//!   each at 8 and at 32 clients: a warm-up of two requests per client, then
//!   400 requests at 8 clients and 800 at 32, capped at 60 s of wall clock
//!   per configuration.
//! - `full`: full mode (every check plus the renderer's six 1024 px stills)
//!   on FlightHelmet.zip (6.3 MB, above the 4.5 MB multipart cap), sent the
//!   way a customer must send it: POST /v1/uploads, PUT the bytes to the
//!   `upload_url`, POST /v1/validate `{"blob_id", "mode": "full"}`. Each
//!   request's latency is the three calls end to end; the validate call is
//!   also reported alone. First an in-process breakdown (the engine without
//!   HTTP, full and checks_only, and the renderer alone), then 2 warm-up
//!   requests and 4 sequential ones on one client, then 24 requests at 4
//!   clients with `screenshots` false (judged: p95 under the specification's
//!   8 s) and 24 with `screenshots` true (the stills stored, signed URLs
//!   returned). Each client has its own "scale" keys, a fresh one every 30
//!   requests (3 calls a request: 90 of the bucket's 120; 2 credits a
//!   request, far below 40,000).
//! - `all`: both.
//!
//! ```sh
//! cargo bench --bench serve        # MESHCHECK_BENCH_REQUESTS=N: N at 8 clients, 2N at 32 (default 400)
//! MESHCHECK_BENCH_CASE=full cargo bench --bench serve
//! # stills are drawn in a render worker process, as `meshcheck serve` does;
//! # MESHCHECK_BENCH_RENDER=in-process draws in the server instead
//! # MESHCHECK_BENCH_FULL_REQUESTS=N (default 24), MESHCHECK_BENCH_FULL_CLIENTS=N (default 4)
//! # MESHCHECK_BENCH_RENDER_WORKERS=1,2: the full case once per worker count, each on a
//! # fresh server (the breakdown with the first only), then a table side by side;
//! # each worker gets LP_NUM_THREADS = cores / workers unless LP_NUM_THREADS is set
//! ```
//!
//! Prints markdown on stdout (the tables in BENCHMARKS.md), progress on
//! stderr. Exits non-zero only when the server cannot be set up or a sanity
//! request fails, never on a missed target. The full case needs a graphics
//! adapter (Mesa's lavapipe without a GPU); `XDG_RUNTIME_DIR` is pointed at a
//! private temporary folder when unset, which silences Mesa's warning.

/// The test support (code-built assets under `testkit`), shared with the
/// integration tests.
#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;
use support::testkit;

use crate::testkit::{Doc, sphere};
use bytes::Bytes;
use meshcheck::server::{self, AppState, Config};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// Requests per API key before a client moves to its next key (bucket capacity is 120).
const PER_KEY: usize = 100;
/// Unrecorded requests per client before the measured phase.
const WARMUP_PER_CLIENT: usize = 2;
/// Wall-clock cap of one configuration's measured phase.
const CAP: Duration = Duration::from_secs(60);
/// The target judged: p95 of the 1 MB asset at 8 clients (the spec allows 3 s).
const TARGET_P95_MS: f64 = 300.0;

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("serve bench: {msg}");
    std::process::exit(2);
}

/// The load's request: `mode=checks_only`, `profile=web`, then the file.
fn multipart(file: &[u8], filename: &str) -> (String, Bytes) {
    let fields = [("mode", "checks_only"), ("profile", "web")];
    let (ctype, body) = support::multipart::form(&fields, Some(support::multipart::File::model(filename, file)));
    (ctype, Bytes::from(body))
}

fn shell(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// The request every client sends for one asset.
#[derive(Clone)]
struct Target {
    url: String,
    ctype: String,
    body: Bytes,
}

/// One load-generating client: its connection and its keys.
struct Client {
    http: reqwest::Client,
    keys: Vec<String>,
    sent: usize,
}

/// One request's outcome: latency and status (0 for a transport error or timeout).
struct Sample {
    ms: f64,
    status: u16,
}

impl Client {
    async fn send(&mut self, t: &Target) -> Sample {
        let key = &self.keys[(self.sent / PER_KEY).min(self.keys.len() - 1)];
        self.sent += 1;
        let start = Instant::now();
        let resp = self
            .http
            .post(&t.url)
            .header("x-api-key", key)
            .header("content-type", &t.ctype)
            .body(t.body.clone())
            .send()
            .await;
        let status = match resp {
            // The whole body is read: the latency is the full answer.
            Ok(r) => {
                let s = r.status().as_u16();
                if r.bytes().await.is_ok() { s } else { 0 }
            }
            Err(_) => 0,
        };
        Sample { ms: start.elapsed().as_secs_f64() * 1000.0, status }
    }
}

/// Runs `per_client` requests on every client at once, each stopping early
/// past `deadline`; gives the clients back with every sample.
async fn phase(
    clients: Vec<Client>,
    target: &Target,
    per_client: usize,
    deadline: Option<Instant>,
) -> (Vec<Client>, Vec<Sample>) {
    let mut handles = Vec::new();
    for mut c in clients {
        let t = target.clone();
        handles.push(tokio::spawn(async move {
            let mut samples = Vec::with_capacity(per_client);
            for _ in 0..per_client {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                samples.push(c.send(&t).await);
            }
            (c, samples)
        }));
    }
    let mut clients = Vec::new();
    let mut samples = Vec::new();
    for h in handles {
        let (c, s) = h.await.unwrap_or_else(|e| fail(format!("client task failed: {e}")));
        clients.push(c);
        samples.extend(s);
    }
    (clients, samples)
}

/// Nearest-rank percentile of sorted values.
fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

struct Row {
    asset: String,
    clients: usize,
    requests: usize,
    errors: usize,
    error_kinds: String,
    wall_s: f64,
    capped: bool,
    p50: f64,
    p95: f64,
    p99: f64,
    max: f64,
}

async fn run_config(state: &AppState, target: &Target, asset: &str, clients: usize, total: usize) -> Row {
    let per_client = total.div_ceil(clients);
    let keys_each = (WARMUP_PER_CLIENT + per_client).div_ceil(PER_KEY);
    let mut pool = Vec::with_capacity(clients);
    for _ in 0..clients {
        let keys = (0..keys_each)
            .map(|_| {
                state
                    .store
                    .create_account("scale", None, unix_now())
                    .map(|(_, key)| key)
                    .unwrap_or_else(|e| fail(format!("cannot create an account: {}", e.message)))
            })
            .collect();
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .timeout(Duration::from_secs(120))
            .build()
            .unwrap_or_else(|e| fail(format!("cannot build the HTTP client: {e}")));
        pool.push(Client { http, keys, sent: 0 });
    }
    eprintln!("{asset}, {clients} clients: warm-up ({WARMUP_PER_CLIENT} per client) ...");
    let (pool, _) = phase(pool, target, WARMUP_PER_CLIENT, None).await;
    eprintln!("{asset}, {clients} clients: {} requests ...", per_client * clients);
    let start = Instant::now();
    let (_pool, samples) = phase(pool, target, per_client, Some(start + CAP)).await;
    let wall_s = start.elapsed().as_secs_f64();
    let mut kinds = std::collections::BTreeMap::<u16, usize>::new();
    for s in samples.iter().filter(|s| s.status != 200) {
        *kinds.entry(s.status).or_default() += 1;
    }
    let error_kinds = kinds
        .iter()
        .map(|(k, n)| if *k == 0 { format!("{n}x transport") } else { format!("{n}x {k}") })
        .collect::<Vec<_>>()
        .join(", ");
    let mut ms: Vec<f64> = samples.iter().map(|s| s.ms).collect();
    ms.sort_by(f64::total_cmp);
    Row {
        asset: asset.to_string(),
        clients,
        requests: samples.len(),
        errors: kinds.values().sum(),
        error_kinds,
        wall_s,
        capped: samples.len() < per_client * clients,
        p50: pct(&ms, 50.0),
        p95: pct(&ms, 95.0),
        p99: pct(&ms, 99.0),
        max: ms.last().copied().unwrap_or(f64::NAN),
    }
}

/// One request before the run: the server answers 200 with a report whose SPEC-001 ran.
async fn sanity(state: &AppState, target: &Target, asset: &str) -> String {
    let (_, key) = state
        .store
        .create_account("scale", None, unix_now())
        .unwrap_or_else(|e| fail(format!("cannot create an account: {}", e.message)));
    let resp = reqwest::Client::new()
        .post(&target.url)
        .header("x-api-key", key)
        .header("content-type", &target.ctype)
        .body(target.body.clone())
        .send()
        .await
        .unwrap_or_else(|e| fail(format!("{asset}: request failed: {e}")));
    let status = resp.status();
    let body = resp.bytes().await.unwrap_or_else(|e| fail(format!("{asset}: body: {e}")));
    if status != 200 {
        fail(format!("{asset}: status {status}: {}", String::from_utf8_lossy(&body)));
    }
    let report: serde_json::Value =
        serde_json::from_slice(&body).unwrap_or_else(|e| fail(format!("{asset}: not JSON: {e}")));
    let spec = report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == "SPEC-001"))
        .and_then(|c| c["status"].as_str())
        .unwrap_or("missing")
        .to_string();
    if spec != "pass" {
        fail(format!("{asset}: SPEC-001 is {spec}, expected pass on the warm validator"));
    }
    let checks = report["checks"].as_array().map_or(0, |c| c.len());
    format!("{asset}: 200, {checks} checks, SPEC-001 {spec}, report {}", report["report_id"].as_str().unwrap_or("?"))
}

// ---------------------------------------------------------------------------
// Full mode: FlightHelmet through the upload flow.

/// Clients of the judged full-mode configuration (MESHCHECK_BENCH_FULL_CLIENTS overrides).
const FULL_CLIENTS: usize = 4;
/// Unrecorded full-mode requests (one client) before anything is measured.
const FULL_WARMUP: usize = 2;
/// Full-mode requests sent one at a time by one client (the no-queue baseline).
const FULL_SEQUENTIAL: usize = 4;
/// In-process runs of each breakdown stage (median reported).
const BREAKDOWN_RUNS: usize = 3;
/// The specification's target: p95 of a synchronous full-mode validation.
const FULL_TARGET_P95_MS: f64 = 8000.0;
/// Wall-clock cap of one full-mode configuration.
const FULL_CAP: Duration = Duration::from_secs(480);

/// This process's resident memory in MB (Linux; NaN elsewhere): the server's, as it runs in process.
fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .map_or(f64::NAN, |kb: f64| kb / 1024.0)
}

fn since_ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// Full-mode requests per API key (three calls each: 90 of the bucket's 120).
const FULL_PER_KEY: usize = 30;

/// One full-mode client: its connection and its keys, a fresh one every [`FULL_PER_KEY`] requests.
struct FullClient {
    http: reqwest::Client,
    keys: Vec<String>,
    sent: usize,
}

impl FullClient {
    fn next_key(&mut self) -> String {
        let key = self.keys[(self.sent / FULL_PER_KEY).min(self.keys.len() - 1)].clone();
        self.sent += 1;
        key
    }
}

/// What every full-mode request sends.
#[derive(Clone)]
struct FullTarget {
    base: String,
    zip: Bytes,
    screenshots: bool,
}

/// One full-mode request: the time of each call and of the whole, and the
/// failure (`validate 429`, `put transport`, ...) if any.
#[derive(Default)]
struct FullSample {
    begin_ms: f64,
    put_ms: f64,
    validate_ms: f64,
    total_ms: f64,
    error: Option<String>,
}

/// Sends one call and reads the whole answer as JSON; the error is `"{what} {status}"`.
async fn call_json(req: reqwest::RequestBuilder, want: u16, what: &str) -> Result<serde_json::Value, (String, String)> {
    let resp = req.send().await.map_err(|e| (format!("{what} transport"), e.to_string()))?;
    let status = resp.status().as_u16();
    let body = resp.bytes().await.map_err(|e| (format!("{what} transport"), e.to_string()))?;
    if status != want {
        return Err((format!("{what} {status}"), String::from_utf8_lossy(&body).chars().take(400).collect()));
    }
    serde_json::from_slice(&body).map_err(|e| (format!("{what} not JSON"), e.to_string()))
}

/// Begin an upload, PUT the bytes, validate the blob in full mode; the
/// report must be 200 with a verdict (and six stored stills when asked for).
async fn full_request(c: &mut FullClient, t: &FullTarget) -> (FullSample, Result<serde_json::Value, (String, String)>) {
    let key = c.next_key();
    let c = &*c;
    let mut s = FullSample::default();
    let start = Instant::now();
    let result = async {
        let t0 = Instant::now();
        let begin =
            call_json(c.http.post(format!("{}/v1/uploads", t.base)).header("x-api-key", &key), 201, "begin").await?;
        s.begin_ms = since_ms(t0);
        let blob_id = begin["blob_id"].as_str().unwrap_or_default().to_string();
        let upload_url = begin["upload_url"].as_str().unwrap_or_default().to_string();
        if blob_id.is_empty() || upload_url.is_empty() {
            return Err(("begin shape".to_string(), begin.to_string()));
        }
        let t0 = Instant::now();
        let put = c
            .http
            .put(&upload_url)
            .header("x-api-key", &key)
            .header("content-type", "application/zip")
            .body(t.zip.clone());
        let stored = call_json(put, 200, "put").await?;
        s.put_ms = since_ms(t0);
        if stored["bytes"].as_u64() != Some(t.zip.len() as u64) {
            return Err(("put bytes".to_string(), stored.to_string()));
        }
        let mut body = serde_json::json!({"blob_id": blob_id, "mode": "full"});
        if t.screenshots {
            body["screenshots"] = true.into();
        }
        let t0 = Instant::now();
        let validate = c.http.post(format!("{}/v1/validate", t.base)).header("x-api-key", &key).json(&body);
        let report = call_json(validate, 200, "validate").await?;
        s.validate_ms = since_ms(t0);
        if !matches!(report["verdict"].as_str(), Some("pass" | "warn" | "fail")) || report["mode"] != "full" {
            return Err(("validate no verdict".to_string(), report.to_string().chars().take(400).collect()));
        }
        let stills = report["screenshots"].as_array().map_or(0, |a| a.iter().filter(|s| s["url"].is_string()).count());
        if t.screenshots && stills != 6 {
            return Err(("validate stills".to_string(), format!("{stills} stills with a URL, expected 6")));
        }
        Ok(report)
    }
    .await;
    s.total_ms = since_ms(start);
    if let Err((kind, detail)) = &result {
        eprintln!("  error: {kind}: {detail}");
        s.error = Some(kind.clone());
    }
    (s, result)
}

/// Runs `per_client` full-mode requests on every client at once, each stopping early past `deadline`.
async fn full_phase(
    clients: Vec<FullClient>,
    target: &FullTarget,
    per_client: usize,
    deadline: Option<Instant>,
) -> (Vec<FullClient>, Vec<FullSample>) {
    let mut handles = Vec::new();
    for mut c in clients {
        let t = target.clone();
        handles.push(tokio::spawn(async move {
            let mut samples = Vec::with_capacity(per_client);
            for _ in 0..per_client {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                samples.push(full_request(&mut c, &t).await.0);
            }
            (c, samples)
        }));
    }
    let mut clients = Vec::new();
    let mut samples = Vec::new();
    for h in handles {
        let (c, s) = h.await.unwrap_or_else(|e| fail(format!("client task failed: {e}")));
        clients.push(c);
        samples.extend(s);
    }
    (clients, samples)
}

/// `n` clients with "scale" keys enough for `requests` requests each.
fn full_clients(state: &AppState, n: usize, requests: usize) -> Vec<FullClient> {
    (0..n)
        .map(|_| {
            let keys = (0..requests.div_ceil(FULL_PER_KEY).max(1))
                .map(|_| {
                    state
                        .store
                        .create_account("scale", None, unix_now())
                        .map(|(_, key)| key)
                        .unwrap_or_else(|e| fail(format!("cannot create an account: {}", e.message)))
                })
                .collect();
            let http = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .timeout(Duration::from_secs(300))
                .build()
                .unwrap_or_else(|e| fail(format!("cannot build the HTTP client: {e}")));
            FullClient { http, keys, sent: 0 }
        })
        .collect()
}

/// p50, p95, p99 and max of some values.
#[derive(Clone, Copy)]
struct Pcts {
    p50: f64,
    p95: f64,
    p99: f64,
    max: f64,
}

impl Pcts {
    fn of(values: impl Iterator<Item = f64>) -> Pcts {
        let mut v: Vec<f64> = values.collect();
        v.sort_by(f64::total_cmp);
        Pcts { p50: pct(&v, 50.0), p95: pct(&v, 95.0), p99: pct(&v, 99.0), max: v.last().copied().unwrap_or(f64::NAN) }
    }

    /// `p50 / p95 / p99 / max` in seconds.
    fn secs(&self) -> String {
        format!("{:.2} / {:.2} / {:.2} / {:.2}", self.p50 / 1e3, self.p95 / 1e3, self.p99 / 1e3, self.max / 1e3)
    }
}

struct FullRow {
    label: String,
    clients: usize,
    requests: usize,
    errors: usize,
    error_kinds: String,
    wall_s: f64,
    capped: bool,
    total: Pcts,
    validate: Pcts,
    begin_p50: f64,
    put_p50: f64,
    rss_after_mb: f64,
}

fn full_row(label: &str, clients: usize, asked: usize, samples: &[FullSample], wall_s: f64) -> FullRow {
    let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
    for e in samples.iter().filter_map(|s| s.error.as_deref()) {
        *kinds.entry(e).or_default() += 1;
    }
    // Percentiles of the requests that succeeded (the errors are counted apart).
    let ok = || samples.iter().filter(|s| s.error.is_none());
    FullRow {
        label: label.to_string(),
        clients,
        requests: samples.len(),
        errors: kinds.values().sum(),
        error_kinds: kinds.iter().map(|(k, n)| format!("{n}x {k}")).collect::<Vec<_>>().join(", "),
        wall_s,
        capped: samples.len() < asked,
        total: Pcts::of(ok().map(|s| s.total_ms)),
        validate: Pcts::of(ok().map(|s| s.validate_ms)),
        begin_p50: Pcts::of(ok().map(|s| s.begin_ms)).p50,
        put_p50: Pcts::of(ok().map(|s| s.put_ms)).p50,
        rss_after_mb: rss_mb(),
    }
}

/// Median wall time of `runs` calls of `f`, in milliseconds.
fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut v: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            since_ms(t)
        })
        .collect();
    v.sort_by(f64::total_cmp);
    pct(&v, 50.0)
}

/// The in-process costs of one full-mode request, without HTTP, one at a
/// time (median of [`BREAKDOWN_RUNS`] after one warm-up): the engine in full
/// mode and in checks_only mode (warm SPEC-001 validator), and the renderer
/// alone (six 1024 px stills of the loaded asset). Returns markdown lines.
fn breakdown(state: &AppState, name: &str, zip: &[u8]) -> Vec<String> {
    use meshcheck::asset::{self, Input, LoadOptions};
    use meshcheck::report::Mode;
    use meshcheck::server::work::ValidateParams;
    let opts = |mode: Mode| {
        let params = ValidateParams {
            profile: "web".into(),
            mode,
            overrides: Vec::new(),
            weld_tolerance: None,
            screenshots: false,
            filename: name.into(),
            watermark: None,
        };
        params.options(state.validator.clone()).unwrap_or_else(|e| fail(format!("options: {}", e.message)))
    };
    let engine = |mode: Mode| {
        let o = opts(mode);
        let run = || {
            meshcheck::engine::validate_with_stills(Input::from_bytes(name, zip.to_vec()), &o)
                .unwrap_or_else(|e| fail(format!("engine ({mode:?}): {}", e.message)));
        };
        run();
        median_ms(BREAKDOWN_RUNS, run)
    };
    let full = engine(Mode::Full);
    let checks = engine(Mode::ChecksOnly);
    let renderer = meshcheck::render::Renderer::shared().unwrap_or_else(|e| fail(format!("renderer: {}", e.message)));
    // Time of the render alone, and the stills drawn.
    let load_and_render = || {
        let opened = asset::open(Input::from_bytes(name, zip.to_vec())).unwrap_or_else(|e| fail(e.message));
        let a = asset::load_opened_with(&opened, LoadOptions { keep_images: true }).unwrap_or_else(|e| fail(e.message));
        let t = Instant::now();
        let r = renderer
            .render(&a, &meshcheck::render::Request::standard(meshcheck::render::DEFAULT_SIZE))
            .unwrap_or_else(|e| fail(format!("render: {}", e.message)));
        (since_ms(t), r.stills.len())
    };
    let (_, stills) = load_and_render();
    let mut render_ms: Vec<f64> = (0..BREAKDOWN_RUNS).map(|_| load_and_render().0).collect();
    render_ms.sort_by(f64::total_cmp);
    let render = pct(&render_ms, 50.0);
    let a = renderer.adapter();
    vec![
        format!("Adapter: {} ({}, {}; software: {}).\n", a.name, a.backend, a.driver, a.software),
        format!(
            "In process, no HTTP, one at a time (median of {BREAKDOWN_RUNS} after one warm-up): engine full mode {full:.0} ms; engine checks_only {checks:.0} ms; renderer alone ({stills} stills of {px} px, the asset already loaded) {render:.0} ms.\n",
            px = meshcheck::render::DEFAULT_SIZE
        ),
    ]
}

/// The full-mode case: returns the markdown it prints.
async fn full_case(state: &AppState, base: &str, machine: &str, with_breakdown: bool) -> (Vec<String>, Vec<FullRow>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("../shared/assets/models/khronos-sample-models/FlightHelmet.zip");
    let zip = std::fs::read(&path).unwrap_or_else(|e| fail(format!("{}: {e}", path.display())));
    let files = zip::ZipArchive::new(std::io::Cursor::new(&zip[..]))
        .unwrap_or_else(|e| fail(format!("{}: {e}", path.display())))
        .len();
    let name = "FlightHelmet.zip";
    let clients: usize =
        std::env::var("MESHCHECK_BENCH_FULL_CLIENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(FULL_CLIENTS).max(1);
    let requests: usize =
        std::env::var("MESHCHECK_BENCH_FULL_REQUESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(24).max(clients);
    let per_client = requests.div_ceil(clients);
    let over_cap = zip.len() as u64 > state.config.multipart_max_bytes;
    let zip = Bytes::from(zip);
    let mut target = FullTarget { base: base.to_string(), zip: zip.clone(), screenshots: false };

    // Sanity: one request of each kind, checked in full.
    for shots in [false, true] {
        let t = FullTarget { screenshots: shots, ..target.clone() };
        let mut client = full_clients(state, 1, 1).pop().unwrap_or_else(|| fail("no client"));
        let (s, report) = full_request(&mut client, &t).await;
        let report = report.unwrap_or_else(|(kind, detail)| fail(format!("{name}: sanity request: {kind}: {detail}")));
        let status = |id: &str| {
            report["checks"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["id"] == id))
                .and_then(|c| c["status"].as_str())
                .unwrap_or("missing")
                .to_string()
        };
        let rnd: Vec<String> = report["checks"]
            .as_array()
            .map(|c| {
                c.iter()
                    .filter(|c| c["id"].as_str().is_some_and(|id| id.starts_with("RND-")))
                    .map(|c| format!("{} {}", c["id"].as_str().unwrap_or("?"), c["status"].as_str().unwrap_or("?")))
                    .collect()
            })
            .unwrap_or_default();
        if rnd.is_empty() || rnd.iter().any(|r| r.ends_with(" skipped")) {
            fail(format!("{name}: the renderer's checks did not run: {rnd:?}"));
        }
        if status("SPEC-001") == "missing" || status("SPEC-001") == "skipped" {
            fail(format!("{name}: SPEC-001 did not run"));
        }
        eprintln!(
            "{name} (screenshots {shots}): 200 in {:.2} s (begin {:.0} ms, PUT {:.0} ms, validate {:.2} s), verdict {}, SPEC-001 {}, {}, {} stills stored",
            s.total_ms / 1e3,
            s.begin_ms,
            s.put_ms,
            s.validate_ms / 1e3,
            report["verdict"].as_str().unwrap_or("?"),
            status("SPEC-001"),
            rnd.join(", "),
            report["screenshots"].as_array().map_or(0, |a| a.len())
        );
    }

    let mut out = Vec::new();
    if with_breakdown {
        eprintln!("{name}: in-process breakdown ...");
        let st = state.clone();
        let z = zip.clone();
        let rss_before = rss_mb();
        out = tokio::task::spawn_blocking(move || breakdown(&st, name, &z))
            .await
            .unwrap_or_else(|e| fail(format!("breakdown task failed: {e}")));
        out.push(format!(
            "Process RSS (server, load generator and in-process runs together): {rss_before:.0} MB after the two sanity requests, {:.0} MB after the breakdown.\n",
            rss_mb()
        ));
    }

    let mut rows = Vec::new();
    eprintln!("{name}: warm-up ({FULL_WARMUP} requests, one client) ...");
    let one = full_clients(state, 1, FULL_WARMUP + FULL_SEQUENTIAL);
    let (one, _) = full_phase(one, &target, FULL_WARMUP, None).await;
    eprintln!("{name}: {FULL_SEQUENTIAL} sequential requests ...");
    let start = Instant::now();
    let (_, samples) = full_phase(one, &target, FULL_SEQUENTIAL, Some(start + FULL_CAP)).await;
    rows.push(full_row("sequential, screenshots false", 1, FULL_SEQUENTIAL, &samples, start.elapsed().as_secs_f64()));
    for shots in [false, true] {
        target.screenshots = shots;
        let n = per_client * clients;
        eprintln!("{name}: {n} requests at {clients} clients, screenshots {shots} ...");
        let pool = full_clients(state, clients, per_client);
        let start = Instant::now();
        let (_, samples) = full_phase(pool, &target, per_client, Some(start + FULL_CAP)).await;
        let label = format!("{clients} clients, screenshots {shots}");
        rows.push(full_row(&label, clients, n, &samples, start.elapsed().as_secs_f64()));
    }

    let mut md = vec![
        format!("{machine}\n"),
        format!(
            "Asset: {name} ({} bytes; {files} files: .gltf, .bin and PNG textures), {} the {} byte multipart cap, so every request is the upload flow: POST /v1/uploads, PUT the bytes to upload_url, POST /v1/validate {{\"blob_id\", \"mode\": \"full\"}} (profile web). One keep-alive connection and its own scale keys (a fresh one every {FULL_PER_KEY} requests) per client; {FULL_WARMUP} warm-up requests on one client first. End to end = the three calls; validate = the last call alone. Percentiles over the requests that succeeded.\n",
            zip.len(),
            if over_cap { "above" } else { "within" },
            state.config.multipart_max_bytes
        ),
    ];
    md.append(&mut out);
    md.push("| run | clients | requests | errors | wall (s) | throughput (req/min) | end to end p50 / p95 / p99 / max (s) | validate call p50 / p95 / p99 / max (s) | begin p50 (ms) | PUT p50 (ms) | process RSS after (MB) |".into());
    md.push("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|".into());
    for r in &rows {
        md.push(format!(
            "| {} | {} | {}{} | {}{} | {:.1} | {:.1} | {} | {} | {:.1} | {:.1} | {:.0} |",
            r.label,
            r.clients,
            r.requests,
            if r.capped { format!(" ({} s cap)", FULL_CAP.as_secs()) } else { String::new() },
            r.errors,
            if r.errors > 0 { format!(" ({})", r.error_kinds) } else { String::new() },
            r.wall_s,
            r.requests as f64 / r.wall_s * 60.0,
            r.total.secs(),
            r.validate.secs(),
            r.begin_p50,
            r.put_p50,
            r.rss_after_mb
        ));
    }
    if let Some(r) = rows.iter().find(|r| r.label == format!("{clients} clients, screenshots false")) {
        let pass = r.total.p95 < FULL_TARGET_P95_MS && r.errors == 0 && !r.capped;
        md.push(format!(
            "\nTarget (full mode, {name}, {clients} clients, screenshots false: end-to-end p95 < {:.0} s with 0 errors): p50 {:.2} s, p95 {:.2} s, p99 {:.2} s, max {:.2} s, {} errors: **{}**",
            FULL_TARGET_P95_MS / 1e3,
            r.total.p50 / 1e3,
            r.total.p95 / 1e3,
            r.total.p99 / 1e3,
            r.total.max / 1e3,
            r.errors,
            if pass { "PASS" } else { "FAIL" }
        ));
    }
    (md, rows)
}

/// How one configuration of the full case drew: its worker count and
/// llvmpipe threads per worker, in words.
fn render_setup(state: &AppState) -> String {
    match &state.drawer {
        meshcheck::render::Drawer::Local => "in process".into(),
        meshcheck::render::Drawer::Worker(p) => format!("{} worker{}", p.size(), if p.size() == 1 { "" } else { "s" }),
    }
}

/// llvmpipe's threads per worker for a pool of `workers`, in words.
fn lp_threads(state: &AppState) -> String {
    let cores = meshcheck::render::worker::cores();
    let workers = match &state.drawer {
        meshcheck::render::Drawer::Worker(p) => p.size(),
        meshcheck::render::Drawer::Local => 1,
    };
    match std::env::var("LP_NUM_THREADS") {
        Ok(v) => format!("{v} (LP_NUM_THREADS set)"),
        Err(_) => match meshcheck::render::worker::threads_per_worker(workers, cores) {
            Some(n) => format!("{n} (cores / workers)"),
            None => format!("{cores} (llvmpipe default: every core)"),
        },
    }
}

/// The render configurations to compare: MESHCHECK_BENCH_RENDER_WORKERS,
/// a comma-separated list of worker counts (for example `1,2`), each run
/// on a fresh server; without it, the server's default alone.
fn worker_counts() -> Vec<Option<usize>> {
    match std::env::var("MESHCHECK_BENCH_RENDER_WORKERS") {
        Err(_) => vec![None],
        Ok(list) => list
            .split(',')
            .map(|n| match n.trim().parse::<usize>() {
                Ok(n) if n >= 1 => Some(n),
                _ => fail(format!("MESHCHECK_BENCH_RENDER_WORKERS must list worker counts of 1 or more, got {list:?}")),
            })
            .collect(),
    }
}

/// The load case (checks_only, Box.glb and the 1 MB sphere at 8 and 32 clients).
async fn load_case(state: &AppState, base_url: &str, machine: &str) {
    let base: usize = std::env::var("MESHCHECK_BENCH_REQUESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(400).max(8);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let box_path = root.join("../shared/assets/models/khronos-sample-models/Box.glb");
    let box_glb = std::fs::read(&box_path).unwrap_or_else(|e| fail(format!("{}: {e}", box_path.display())));
    // 2 * 160 * 142 = 45,440 triangles on 22,864 vertices (positions, normals,
    // UVs; u16 indices): about 1.0 MB. The shared assets hold no GLB between
    // 0.8 and 1.5 MB.
    let (segments, rings) = (160u32, 143u32);
    let sphere_glb = Doc::single(sphere(segments, rings, 1.0)).to_glb();
    let sphere_name =
        format!("sphere_1mb.glb (generated, {} bytes, {} tris)", sphere_glb.len(), 2 * segments * (rings - 1));
    let assets = [
        (format!("Box.glb ({} bytes)", box_glb.len()), multipart(&box_glb, "Box.glb")),
        (sphere_name.clone(), multipart(&sphere_glb, "sphere_1mb.glb")),
    ];
    let url = format!("{base_url}/v1/validate");
    let targets: Vec<(String, Target)> =
        assets.into_iter().map(|(name, (ctype, body))| (name, Target { url: url.clone(), ctype, body })).collect();
    for (name, t) in &targets {
        eprintln!("{}", sanity(state, t, name).await);
    }

    let mut rows = Vec::new();
    for (name, t) in &targets {
        for (clients, total) in [(8, base), (32, base * 2)] {
            rows.push(run_config(state, t, name, clients, total).await);
        }
    }

    println!("{machine}\n");
    println!(
        "Each client: one keep-alive connection, {WARMUP_PER_CLIENT} warm-up requests, then its share back to back; cap {} s per configuration. Multipart, mode checks_only, profile web.\n",
        CAP.as_secs()
    );
    println!(
        "| asset | clients | requests | errors (non-200) | wall (s) | throughput (req/s) | p50 (ms) | p95 (ms) | p99 (ms) | max (ms) |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for r in &rows {
        println!(
            "| {} | {} | {}{} | {}{} | {:.1} | {:.1} | {:.0} | {:.0} | {:.0} | {:.0} |",
            r.asset,
            r.clients,
            r.requests,
            if r.capped { " (60 s cap)" } else { "" },
            r.errors,
            if r.errors > 0 { format!(" ({})", r.error_kinds) } else { String::new() },
            r.wall_s,
            r.requests as f64 / r.wall_s,
            r.p50,
            r.p95,
            r.p99,
            r.max
        );
    }
    let judged = rows.iter().find(|r| r.asset == sphere_name && r.clients == 8);
    if let Some(r) = judged {
        let pass = r.p95 < TARGET_P95_MS && r.errors == 0;
        println!(
            "\nTarget (1 MB asset, 8 clients: p95 < {TARGET_P95_MS:.0} ms with 0 errors; the spec's limit is 3 s): p95 {:.0} ms, {} errors: **{}**",
            r.p95,
            r.errors,
            if pass { "PASS" } else { "MISS" }
        );
    }
}

fn main() {
    let case = std::env::var("MESHCHECK_BENCH_CASE").unwrap_or_else(|_| "load".into());
    let (run_load, run_full) = match case.as_str() {
        "load" => (true, false),
        "full" => (false, true),
        "all" => (true, true),
        other => fail(format!("MESHCHECK_BENCH_CASE must be load (the default), full or all, got {other:?}")),
    };
    // Mesa warns on every device start without XDG_RUNTIME_DIR: give it a
    // private folder, kept until the end.
    let _runtime_dir = if run_full && std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| fail(format!("temp dir: {e}")));
        // SAFETY: no other thread exists yet (the tokio runtime is built below).
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", dir.path()) };
        Some(dir)
    } else {
        None
    };

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(format!("tokio runtime: {e}")));
    let counts = worker_counts();
    let mut compared: Vec<(String, String, Vec<FullRow>)> = Vec::new();
    for (i, workers) in counts.iter().enumerate() {
        let (run_load, with_breakdown) = (run_load && i == 0, i == 0);
        let tmp = tempfile::tempdir().unwrap_or_else(|e| fail(format!("temp dir: {e}")));
        rt.block_on(async {
            let listener =
                tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| fail(format!("bind: {e}")));
            let addr = listener.local_addr().unwrap_or_else(|e| fail(format!("local addr: {e}")));
            let base_url = format!("http://{addr}");
            let mut config = Config::new(tmp.path().to_path_buf(), &base_url);
            if let Some(n) = std::env::var("MESHCHECK_BENCH_SLOTS").ok().and_then(|v| v.parse().ok()) {
                config.engine_slots = n;
            }
            // Draw as `meshcheck serve` does: in replaceable worker processes
            // (MESHCHECK_BENCH_RENDER_WORKERS of them, else the default),
            // unless MESHCHECK_BENCH_RENDER=in-process.
            if std::env::var("MESHCHECK_BENCH_RENDER").as_deref() != Ok("in-process") {
                let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_meshcheck"));
                config.render_worker = Some((exe, meshcheck::render::worker::Limits::default()));
            }
            if let Some(n) = workers {
                config.render_workers = *n;
            }
            let (job_workers, slots) = (config.workers, config.engine_slots);
            let state = AppState::open(config).unwrap_or_else(|e| fail(format!("AppState::open: {}", e.message)));
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let server = tokio::spawn(server::serve(listener, state.clone(), async move {
                let _ = stop_rx.await;
            }));

            let nproc = shell("nproc", &[]).unwrap_or_else(|| "?".into());
            let commit = shell("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "?".into());
            let dirty =
                shell("git", &["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
            let (setup, threads) = (render_setup(&state), lp_threads(&state));
            let machine = format!(
                "Machine: {nproc} CPUs (nproc); commit {commit}{}; server in process on {addr}: {job_workers} job workers, {slots} engine slots, warm validator pool; stills drawn {}{}.",
                if dirty { " (with uncommitted changes)" } else { "" },
                if setup == "in process" { setup.clone() } else { format!("by {setup}") },
                if setup == "in process" { String::new() } else { format!(", llvmpipe threads per worker: {threads}") },
            );
            if run_load {
                load_case(&state, &base_url, &machine).await;
            }
            if run_full {
                eprintln!("full case: stills drawn {setup}, llvmpipe threads per worker {threads}");
                let (md, rows) = full_case(&state, &base_url, &machine, with_breakdown).await;
                if run_load || i > 0 {
                    println!();
                }
                for line in md {
                    println!("{line}");
                }
                compared.push((setup, threads, rows));
            }

            let _ = stop_tx.send(());
            match tokio::time::timeout(Duration::from_secs(40), server).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) => eprintln!("server stopped with an error: {e}"),
                Ok(Err(e)) => eprintln!("server task failed: {e}"),
                Err(_) => eprintln!("server did not stop within 40 s"),
            }
        });
    }
    if compared.len() > 1 {
        println!("\nThe configurations side by side (same run, same asset; end to end, seconds):\n");
        println!(
            "| render | llvmpipe threads per worker | sequential p50 / max | req/min | clients | screenshots false: p50 / p95 / p99 / max | req/min | screenshots true: p50 / p95 / p99 / max | req/min | errors |"
        );
        println!("|---|---|---|--:|--:|---|--:|---|--:|--:|");
        for (setup, threads, rows) in &compared {
            let find = |p: &str| rows.iter().find(|r| r.label.starts_with(p));
            let cell = |r: Option<&FullRow>| {
                r.map_or(("-".to_string(), "-".to_string()), |r| {
                    (r.total.secs(), format!("{:.1}", r.requests as f64 / r.wall_s * 60.0))
                })
            };
            let seq = find("sequential");
            let (no, yes) = (
                rows.iter().find(|r| r.label.ends_with("screenshots false") && r.clients > 1),
                rows.iter().find(|r| r.label.ends_with("screenshots true")),
            );
            let seq_cell =
                seq.map_or("-".to_string(), |r| format!("{:.2} / {:.2}", r.total.p50 / 1e3, r.total.max / 1e3));
            let ((no_s, no_t), (yes_s, yes_t)) = (cell(no), cell(yes));
            println!(
                "| {setup} | {threads} | {seq_cell} | {} | {} | {no_s} | {no_t} | {yes_s} | {yes_t} | {} |",
                cell(seq).1,
                no.map_or(0, |r| r.clients),
                rows.iter().map(|r| r.errors).sum::<usize>()
            );
        }
    }
}
