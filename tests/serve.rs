//! `meshcheck serve`: in-process router tests for every endpoint and error
//! code of issue 7, and end-to-end tests on 127.0.0.1:0 with a real HTTP
//! client (uploads, async jobs with webhooks, restart recovery, SSRF).
//! Every test checks at the end that the blob folder is empty.

use crate::support::multipart;
use crate::testkit::{self, Doc, padded_glb};
use crate::util::model;
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use meshcheck::server::clock::{Clock, SystemClock};
use meshcheck::server::{self, AppState, Config};
use meshcheck::store::sqlite::SqliteStore;
use meshcheck::store::{Blobs, DirBlobs, Store};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tower::ServiceExt;

/// A server's state over a data folder, with a clock the test can move.
pub(crate) struct Srv {
    pub(crate) state: AppState,
    pub(crate) clock: Arc<SystemClock>,
    pub(crate) store: Arc<SqliteStore>,
    pub(crate) dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

pub(crate) fn validator() -> Option<Arc<meshcheck::validator::Validator>> {
    Some(meshcheck::validator::Validator::global().expect("the reference validator (npm ci) is installed"))
}

pub(crate) fn srv_at(dir: &Path, tweak: impl FnOnce(&mut Config)) -> Srv {
    srv_over(dir, Arc::new(DirBlobs::new(dir.join("blobs")).unwrap()), tweak)
}

/// [`srv_at`] with its input blobs in `blobs` (a bucket, say).
pub(crate) fn srv_over(dir: &Path, blobs: Arc<dyn Blobs>, tweak: impl FnOnce(&mut Config)) -> Srv {
    let mut config = Config::new(dir.to_path_buf(), "http://meshcheck.test");
    config.workers = 1;
    tweak(&mut config);
    let store = Arc::new(SqliteStore::open(&dir.join("meshcheck.sqlite")).unwrap());
    let clock = Arc::new(SystemClock::new());
    let shots = Arc::new(DirBlobs::new(dir.join("screenshots")).unwrap());
    let state = AppState::with_parts(config, store.clone(), blobs, shots, clock.clone(), validator()).unwrap();
    Srv { state, clock, store, dir: dir.to_path_buf(), _tmp: None }
}

pub(crate) fn srv() -> Srv {
    srv_with(|_| {})
}

pub(crate) fn srv_with(tweak: impl FnOnce(&mut Config)) -> Srv {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = srv_at(tmp.path(), tweak);
    s._tmp = Some(tmp);
    s
}

impl Srv {
    pub(crate) fn app(&self) -> Router {
        server::router(self.state.clone())
    }
    pub(crate) fn account(&self, plan: &str) -> (String, String) {
        let (a, key) = self.store.create_account(plan, None, self.clock.now()).unwrap();
        (a.id, key)
    }
    pub(crate) fn blobs_left(&self) -> Vec<String> {
        DirBlobs::new(self.dir.join("blobs")).unwrap().ids().unwrap()
    }
    pub(crate) fn assert_no_blobs(&self) {
        assert_eq!(self.blobs_left(), Vec::<String>::new(), "the blob folder must be empty");
    }
    pub(crate) async fn call(&self, req: Request<Body>) -> Resp {
        let resp = self.app().oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Resp { status, headers, bytes: bytes.to_vec(), json }
    }
    pub(crate) async fn get(&self, path: &str, key: Option<&str>) -> Resp {
        let mut b = Request::get(path);
        if let Some(k) = key {
            b = b.header("x-api-key", k);
        }
        self.call(b.body(Body::empty()).unwrap()).await
    }
    pub(crate) async fn post_json(&self, path: &str, key: &str, body: Value) -> Resp {
        self.call(
            Request::post(path)
                .header("x-api-key", key)
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
    }
    pub(crate) async fn post_file(&self, key: &str, file: &[u8], fields: &[(&str, &str)]) -> Resp {
        self.post_form("/v1/validate", Some(key), file, fields).await
    }
    pub(crate) async fn post_form(&self, path: &str, key: Option<&str>, file: &[u8], fields: &[(&str, &str)]) -> Resp {
        let (ctype, body) = multipart::upload(file, fields);
        let mut b = Request::post(path);
        if let Some(k) = key {
            b = b.header("x-api-key", k);
        }
        self.call(b.header("content-type", ctype).body(Body::from(body)).unwrap()).await
    }
    pub(crate) async fn balance(&self, key: &str) -> i64 {
        self.get("/v1/account", Some(key)).await.json["balance"].as_i64().unwrap()
    }
}

#[derive(Debug)]
pub(crate) struct Resp {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) bytes: Vec<u8>,
    pub(crate) json: Value,
}

impl Resp {
    pub(crate) fn code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or("")
    }
    pub(crate) fn expect(&self, status: u16, code: &str) -> &Self {
        assert_eq!(self.status.as_u16(), status, "{}", String::from_utf8_lossy(&self.bytes));
        assert_eq!(self.code(), code, "{}", self.json);
        assert!(self.json["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
        self
    }
    pub(crate) fn ok(&self, status: u16) -> &Value {
        assert_eq!(self.status.as_u16(), status, "{}", String::from_utf8_lossy(&self.bytes));
        &self.json
    }
}

pub(crate) fn box_glb() -> Vec<u8> {
    std::fs::read(model("khronos-sample-models/Box.glb")).unwrap()
}

// ---------------------------------------------------------------- auth

#[tokio::test]
async fn keys_are_required_and_checked() {
    let s = srv();
    let (_, key) = s.account("free");
    for path in ["/v1/account", "/v1/jobs/job_x", "/v1/reports/rpt_x"] {
        s.get(path, None).await.expect(401, "MISSING_API_KEY");
        s.get(path, Some("mk_live_0000000000000000000000000000000")).await.expect(401, "INVALID_API_KEY");
    }
    s.call(Request::post("/v1/validate").body(Body::empty()).unwrap()).await.expect(401, "MISSING_API_KEY");
    s.call(Request::post("/v1/uploads").body(Body::empty()).unwrap()).await.expect(401, "MISSING_API_KEY");
    s.call(Request::put("/v1/uploads/upl_x").body(Body::empty()).unwrap()).await.expect(401, "MISSING_API_KEY");
    let r = s.get("/v1/account", Some(&key)).await;
    r.ok(200);
    for h in ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "x-request-id"] {
        assert!(r.headers.contains_key(h), "{h} missing");
    }
    assert_eq!(r.headers["ratelimit-limit"], "10");
    // A revoked key stops working.
    s.store.revoke_key(&key, s.clock.now()).unwrap();
    s.get("/v1/account", Some(&key)).await.expect(401, "INVALID_API_KEY");
}

/// Every operation the OpenAPI document marks as needing a key answers 401
/// without one and with an unknown one, before reading its body or its ids.
#[tokio::test]
async fn every_authenticated_operation_in_the_openapi_document_needs_a_key() {
    let s = srv();
    let doc = s.get("/v1/openapi.json", None).await.ok(200).clone();
    let mut checked = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            if op["security"].as_array().is_none_or(|a| a.is_empty()) {
                continue;
            }
            let concrete = path.replace("{id}", "x_1").replace("{upload_id}", "upl_1").replace("{file}", "f.png");
            for (key, code) in
                [(None, "MISSING_API_KEY"), (Some("mk_live_0000000000000000000000000000000"), "INVALID_API_KEY")]
            {
                let mut req = Request::builder().method(method.to_uppercase().as_str()).uri(&concrete);
                if let Some(k) = key {
                    req = req.header("x-api-key", k);
                }
                let r = s.call(req.header("content-type", "application/json").body(Body::from("{}")).unwrap()).await;
                assert_eq!(r.status, 401, "{method} {concrete} with {key:?}: {}", r.json);
                assert_eq!(r.json["error"]["code"], code, "{method} {concrete}");
            }
            checked.push(format!("{method} {path}"));
        }
    }
    checked.sort();
    for op in ["post /v1/validate", "post /v1/render", "post /v1/inspect", "get /v1/account", "post /v1/billing/portal"]
    {
        assert!(checked.iter().any(|c| c == op), "{op} is in the document: {checked:?}");
    }
    assert!(checked.len() >= 10, "{checked:?}");
}

#[tokio::test]
async fn the_account_snapshot() {
    let s = srv();
    let (_, key) = s.account("indie");
    let a = s.get("/v1/account", Some(&key)).await.ok(200).clone();
    assert_eq!(
        a["plan"],
        json!({"name": "indie", "monthly_credits": 3000, "rate_per_min": 30, "max_file_bytes": 100_000_000})
    );
    assert!(a["webhook_secret"].as_str().unwrap().starts_with("whsec_"));
    assert_eq!(a["subscription"], json!({"provider": null, "subscription_id": null}));
    assert_eq!(a["balance"], 3000);
    assert_eq!(a["usage"]["credits_used"], 0);
    assert!(a["usage"]["period_start"].as_str().unwrap().ends_with('Z'));
}

// ---------------------------------------------------------------- validate

#[tokio::test]
async fn multipart_validate_charges_stores_and_refetches() {
    let s = srv();
    let (_, key) = s.account("free");
    let (_, other) = s.account("free");
    let r = s.post_file(&key, &box_glb(), &[("profile", "mobile"), ("overrides", r#"{"max_tris": 10}"#)]).await;
    let report = r.ok(200).clone();
    assert_eq!(report["schema_version"], "1.2");
    assert_eq!(report["profile"]["name"], "mobile");
    assert_eq!(report["input"]["filename"], "model.glb");
    let perf = report["checks"].as_array().unwrap().iter().find(|c| c["id"] == "PERF-001").unwrap();
    assert_eq!(perf["threshold"]["max_tris"], 10);
    assert_eq!(perf["status"], "fail");
    let spec = report["checks"].as_array().unwrap().iter().find(|c| c["id"] == "SPEC-001").unwrap();
    assert_eq!(spec["status"], "pass", "SPEC-001 ran on the warm validator");
    let id = report["report_id"].as_str().unwrap();
    assert!(id.starts_with("rpt_"));
    assert!(report["expires_at"].as_str().is_some());
    // Re-fetch: the same bytes.
    let again = s.get(&format!("/v1/reports/{id}"), Some(&key)).await;
    assert_eq!(again.ok(200), &report);
    // Another account sees nothing.
    s.get(&format!("/v1/reports/{id}"), Some(&other)).await.expect(404, "NOT_FOUND");
    assert_eq!(s.balance(&key).await, 299);
    assert_eq!(s.balance(&other).await, 300);
    // Full mode costs 2 (the renderer ships).
    let full = s.post_file(&key, &box_glb(), &[("mode", "full")]).await;
    assert_eq!(full.ok(200)["mode"], "full");
    assert_eq!(s.balance(&key).await, 297);
    s.assert_no_blobs();
}

#[tokio::test]
async fn a_document_with_errors_gets_its_report_and_is_charged_as_one() {
    let s = srv();
    let (_, key) = s.account("free");
    // A node naming a mesh that does not exist, and a default scene that does not exist.
    let (mut json, bin) = crate::testkit::Doc::single(crate::testkit::cube(1.0)).to_json(crate::testkit::Layout::Glb);
    json["nodes"].as_array_mut().unwrap().push(json!({"mesh": 9}));
    json["scenes"][0]["nodes"].as_array_mut().unwrap().push(json!(1));
    json["scene"] = json!(3);
    let glb = crate::testkit::glb_from_parts(&json, &bin);
    let r = s.post_file(&key, &glb, &[]).await;
    let report = r.ok(200).clone();
    assert_eq!(report["stats"]["triangles"], 12);
    let notes: Vec<&str> = report["notes"].as_array().unwrap().iter().map(|n| n["pointer"].as_str().unwrap()).collect();
    assert_eq!(notes, ["/scene", "/nodes/1/mesh"]);
    let spec = report["checks"].as_array().unwrap().iter().find(|c| c["id"] == "SPEC-001").unwrap();
    assert_eq!(spec["status"], "fail", "the validator's findings are in SPEC-001");
    assert_eq!(s.balance(&key).await, 299);
    s.assert_no_blobs();
}

#[tokio::test]
async fn bad_requests_are_refused_before_any_charge() {
    let s = srv();
    let (_, key) = s.account("scale");
    let glb = box_glb();
    // Shape.
    s.post_json("/v1/validate", &key, json!({})).await.expect(400, "BAD_REQUEST");
    s.post_json("/v1/validate", &key, json!({"url": "https://example.com/a.glb", "blob_id": "blob_x"}))
        .await
        .expect(400, "BAD_REQUEST");
    s.post_json("/v1/validate", &key, json!({"blob_id": "blob_x", "colour": 1})).await.expect(400, "BAD_REQUEST");
    s.post_json("/v1/validate", &key, json!({"blob_id": "blob_x", "profile": "desktop"}))
        .await
        .expect(400, "BAD_REQUEST");
    let r = s.post_json("/v1/validate", &key, json!({"blob_id": "blob_x", "overrides": {"max_polys": 5}})).await;
    r.expect(400, "BAD_REQUEST");
    assert_eq!(r.json["error"]["detail"]["field"], "overrides");
    s.post_json("/v1/validate", &key, json!({"blob_id": "blob_x", "overrides": {"max_tris": "many"}}))
        .await
        .expect(400, "BAD_REQUEST");
    s.post_json("/v1/validate", &key, json!({"blob_id": "blob_x", "mode": "fast"})).await.expect(400, "BAD_REQUEST");
    s.post_file(&key, &glb, &[("overrides", "[1]")]).await.expect(400, "BAD_REQUEST");
    s.post_file(&key, &glb, &[("colour", "red")]).await.expect(400, "BAD_REQUEST");
    s.post_file(&key, &glb, &[("url", "https://example.com/a.glb")]).await.expect(400, "BAD_REQUEST");
    s.post_file(&key, &[], &[("profile", "web")]).await.expect(400, "BAD_REQUEST");
    s.call(
        Request::post("/v1/validate")
            .header("x-api-key", &key)
            .header("content-type", "text/plain")
            .body(Body::from("x"))
            .unwrap(),
    )
    .await
    .expect(415, "UNSUPPORTED_FORMAT");
    // Size: the multipart body cap, with {bytes, max_bytes}.
    let r = s.post_file(&key, &vec![0u8; 4_600_000], &[]).await;
    r.expect(413, "FILE_TOO_LARGE");
    assert_eq!(r.json["error"]["detail"]["max_bytes"], 4_500_000);
    assert!(r.json["error"]["detail"]["bytes"].as_u64().unwrap() > 4_500_000);
    // Format and content: the input alone decides, nothing is charged.
    s.post_file(&key, b"hello, not a model", &[]).await.expect(415, "UNSUPPORTED_FORMAT");
    let mut broken = glb.clone();
    broken.truncate(200);
    s.post_file(&key, &broken, &[]).await.expect(422, "MALFORMED_GLTF");
    // A zip bundle whose .gltf names a missing .bin.
    let files = Doc::single(testkit::cube(1.0)).to_gltf_files("m");
    let gltf_only: Vec<(String, Vec<u8>)> = files.into_iter().filter(|(n, _)| n.ends_with(".gltf")).collect();
    s.post_file(&key, &testkit::zip(&gltf_only), &[]).await.expect(422, "BUNDLE_INCOMPLETE");
    // Unknown blob.
    s.post_json("/v1/validate", &key, json!({"blob_id": "blob_nope"})).await.expect(404, "NOT_FOUND");
    assert_eq!(s.balance(&key).await, 40_000);
    let acct = s.store.accounts().unwrap().remove(0);
    assert!(s.store.ledger(&acct.id, acct.created_at).unwrap().is_empty(), "no ledger rows");
}

#[tokio::test]
async fn credits_run_out_with_402_and_the_ledger_explains_the_balance() {
    let s = srv();
    let (id, key) = s.account("free");
    let now = s.clock.now();
    // Spend 299 of 300 credits.
    s.store.charge(&id, 299, 300, now, "test", "seed", now).unwrap();
    let r = s.post_file(&key, &box_glb(), &[("mode", "full")]).await;
    r.expect(402, "INSUFFICIENT_CREDITS");
    assert_eq!(r.json["error"]["detail"], json!({"balance": 1, "required": 2}));
    s.post_file(&key, &box_glb(), &[]).await.ok(200);
    let r = s.post_file(&key, &box_glb(), &[]).await;
    r.expect(402, "INSUFFICIENT_CREDITS");
    assert_eq!(r.json["error"]["detail"], json!({"balance": 0, "required": 1}));
    // Input errors still come first, free.
    s.post_file(&key, b"not a model", &[]).await.expect(415, "UNSUPPORTED_FORMAT");
    let ledger = s.store.ledger(&id, now).unwrap();
    assert_eq!(ledger.iter().map(|r| r.1).sum::<i64>(), 300);
    assert_eq!(ledger.len(), 2);
    // A new month: the allowance is back, nothing rolls over.
    s.clock.advance(32 * 86_400);
    assert_eq!(s.balance(&key).await, 300);
    s.assert_no_blobs();
}

/// A server fault after the charge (here the database refusing to store the
/// report) is answered 500 INTERNAL without its cause, and refunded.
#[tokio::test]
async fn a_server_fault_after_the_charge_is_refunded_and_hidden() {
    let s = srv();
    let (id, key) = s.account("free");
    let db = rusqlite::Connection::open(s.dir.join("meshcheck.sqlite")).unwrap();
    db.execute_batch(
        "CREATE TRIGGER fail_reports BEFORE INSERT ON reports BEGIN SELECT RAISE(ABORT, 'simulated fault at /srv/secret'); END;",
    )
    .unwrap();
    let r = s.post_file(&key, &box_glb(), &[]).await;
    r.expect(500, "INTERNAL");
    assert!(!r.json.to_string().contains("secret"), "the cause stays in the log: {}", r.json);
    assert_eq!(s.balance(&key).await, 300);
    let created = s.store.account(&id).unwrap().unwrap().created_at;
    let rows: Vec<i64> = s.store.ledger(&id, created).unwrap().iter().map(|r| r.1).collect();
    assert_eq!(rows, vec![1, -1], "charged once the input loaded, then refunded");
    db.execute_batch("DROP TRIGGER fail_reports;").unwrap();
    s.post_file(&key, &box_glb(), &[]).await.ok(200);
    assert_eq!(s.balance(&key).await, 299);
    s.assert_no_blobs();
}

#[tokio::test]
async fn rate_limits_exhaust_and_recover() {
    let s = srv();
    let (_, key) = s.account("free");
    for i in 0..10 {
        let r = s.get("/v1/account", Some(&key)).await;
        r.ok(200);
        assert_eq!(r.headers["ratelimit-remaining"], (9 - i).to_string().as_str());
    }
    let r = s.get("/v1/account", Some(&key)).await;
    r.expect(429, "RATE_LIMITED");
    assert_eq!(r.headers["retry-after"], "6");
    assert_eq!(r.json["error"]["detail"]["retry_after_s"], 6);
    assert_eq!(r.headers["ratelimit-remaining"], "0");
    // Every authenticated route shares the key's bucket.
    s.post_file(&key, &box_glb(), &[]).await.expect(429, "RATE_LIMITED");
    s.call(Request::post("/v1/uploads").header("x-api-key", &key).body(Body::empty()).unwrap())
        .await
        .expect(429, "RATE_LIMITED");
    s.clock.advance(6);
    s.get("/v1/account", Some(&key)).await.ok(200);
    s.get("/v1/account", Some(&key)).await.expect(429, "RATE_LIMITED");
    s.clock.advance(60);
    for _ in 0..10 {
        s.get("/v1/account", Some(&key)).await.ok(200);
    }
    // Public routes: 60 per minute per client IP, then 429.
    for _ in 0..60 {
        s.get("/llms.txt", None).await.ok(200);
    }
    s.get("/v1/openapi.json", None).await.expect(429, "RATE_LIMITED");
    // Guessing keys spends the same per-IP bucket.
    s.get("/v1/account", Some("mk_live_guess")).await.expect(429, "RATE_LIMITED");
    s.get("/healthz", None).await.ok(200);
}

// ---------------------------------------------------------------- uploads

async fn upload(s: &Srv, key: &str, bytes: Vec<u8>) -> String {
    let begin = s.call(Request::post("/v1/uploads").header("x-api-key", key).body(Body::empty()).unwrap()).await;
    let b = begin.ok(201).clone();
    assert!(b["max_bytes"].as_u64().unwrap() > 0);
    let url = b["upload_url"].as_str().unwrap();
    let path = url.strip_prefix("http://meshcheck.test").unwrap();
    let len = bytes.len();
    let put = s
        .call(
            Request::put(path)
                .header("x-api-key", key)
                .header("content-type", "application/octet-stream")
                .body(Body::from(bytes))
                .unwrap(),
        )
        .await;
    assert_eq!(put.ok(200), &json!({"blob_id": b["blob_id"], "bytes": len}));
    // Single use.
    s.call(Request::put(path).header("x-api-key", key).body(Body::from("again")).unwrap())
        .await
        .expect(404, "NOT_FOUND");
    b["blob_id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn uploads_are_single_use_account_bound_and_deleted_after_validation() {
    let s = srv();
    let (_, key) = s.account("scale");
    let (_, other) = s.account("scale");
    // Bound to the account: another key cannot PUT to it.
    let begin = s.call(Request::post("/v1/uploads").header("x-api-key", &key).body(Body::empty()).unwrap()).await;
    let url = begin.json["upload_url"].as_str().unwrap().strip_prefix("http://meshcheck.test").unwrap().to_string();
    s.call(Request::put(&url).header("x-api-key", &other).body(Body::from(box_glb())).unwrap())
        .await
        .expect(404, "NOT_FOUND");
    let blob = upload(&s, &key, box_glb()).await;
    assert_eq!(s.blobs_left(), vec![blob.clone()]);
    // Another account cannot use the blob either.
    s.post_json("/v1/validate", &other, json!({"blob_id": blob})).await.expect(404, "NOT_FOUND");
    let r = s.post_json("/v1/validate", &key, json!({"blob_id": blob, "profile": "pc"})).await;
    assert_eq!(r.ok(200)["profile"]["name"], "pc");
    s.assert_no_blobs();
    s.post_json("/v1/validate", &key, json!({"blob_id": blob})).await.expect(404, "NOT_FOUND");
    // A failed validation deletes the bytes too, and costs nothing.
    let blob = upload(&s, &key, b"garbage, not a model".to_vec()).await;
    s.post_json("/v1/validate", &key, json!({"blob_id": blob})).await.expect(415, "UNSUPPORTED_FORMAT");
    s.assert_no_blobs();
    assert_eq!(s.balance(&key).await, 39_999);
}

#[tokio::test]
async fn uploads_enforce_the_plan_cap_while_streaming_and_expire() {
    let s = srv();
    let (_, key) = s.account("free");
    let begin = s.call(Request::post("/v1/uploads").header("x-api-key", &key).body(Body::empty()).unwrap()).await;
    assert_eq!(begin.json["max_bytes"], 25_000_000);
    let path = begin.json["upload_url"].as_str().unwrap().strip_prefix("http://meshcheck.test").unwrap().to_string();
    // A streamed body (no Content-Length) past the cap.
    let chunks = (0..26).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![0u8; 1_000_000])));
    let body = Body::from_stream(futures_util::stream::iter(chunks));
    let r = s.call(Request::put(&path).header("x-api-key", &key).body(body).unwrap()).await;
    r.expect(413, "FILE_TOO_LARGE");
    assert_eq!(r.json["error"]["detail"]["max_bytes"], 25_000_000);
    s.assert_no_blobs();
    // Declared too large: refused before reading.
    let begin = s.call(Request::post("/v1/uploads").header("x-api-key", &key).body(Body::empty()).unwrap()).await;
    let path = begin.json["upload_url"].as_str().unwrap().strip_prefix("http://meshcheck.test").unwrap().to_string();
    let r = s
        .call(
            Request::put(&path)
                .header("x-api-key", &key)
                .header("content-length", "30000000")
                .body(Body::from(vec![0u8; 10]))
                .unwrap(),
        )
        .await;
    r.expect(413, "FILE_TOO_LARGE");
    assert_eq!(r.json["error"]["detail"]["bytes"], 30_000_000);
    // Stored but never used: gone after 24 hours.
    let blob = upload(&s, &key, box_glb()).await;
    let begin = s.call(Request::post("/v1/uploads").header("x-api-key", &key).body(Body::empty()).unwrap()).await;
    let unused = begin.json["upload_url"].as_str().unwrap().strip_prefix("http://meshcheck.test").unwrap().to_string();
    s.clock.advance(86_400);
    server::janitor::janitor_pass(&s.state);
    s.assert_no_blobs();
    s.post_json("/v1/validate", &key, json!({"blob_id": blob})).await.expect(404, "NOT_FOUND");
    s.call(Request::put(&unused).header("x-api-key", &key).body(Body::from(box_glb())).unwrap())
        .await
        .expect(404, "NOT_FOUND");
}

// ---------------------------------------------------------------- jobs and reports

#[tokio::test]
async fn jobs_and_reports_are_account_scoped() {
    let s = srv();
    let (_, key) = s.account("free");
    s.get("/v1/jobs/job_nope", Some(&key)).await.expect(404, "JOB_NOT_FOUND");
    s.get("/v1/reports/rpt_nope", Some(&key)).await.expect(404, "NOT_FOUND");
}

#[tokio::test]
async fn reports_expire_after_30_days_with_410() {
    let s = srv();
    let (_, key) = s.account("free");
    let (_, other) = s.account("free");
    let id = s.post_file(&key, &box_glb(), &[]).await.json["report_id"].as_str().unwrap().to_string();
    let path = format!("/v1/reports/{id}");
    s.clock.advance(29 * 86_400);
    server::janitor::janitor_pass(&s.state);
    s.get(&path, Some(&key)).await.ok(200);
    s.clock.advance(86_400);
    server::janitor::janitor_pass(&s.state);
    s.get(&path, Some(&key)).await.expect(410, "REPORT_EXPIRED");
    s.get(&path, Some(&other)).await.expect(404, "NOT_FOUND");
    let n: i64 = rusqlite::Connection::open(s.dir.join("meshcheck.sqlite"))
        .unwrap()
        .query_row("SELECT COUNT(*) FROM reports", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0, "hard-deleted");
}

// ---------------------------------------------------------------- public documents

#[tokio::test]
async fn public_documents() {
    let s = srv();
    let doc = s.get("/v1/openapi.json", None).await.ok(200).clone();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "1.1.0");
    for (method, path, ..) in server::openapi::ROUTES {
        assert!(doc["paths"][path][method].is_object(), "{method} {path}");
    }
    let codes: Vec<&str> = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for code in
        ["MISSING_API_KEY", "INSUFFICIENT_CREDITS", "RATE_LIMITED", "FETCH_FAILED", "REPORT_EXPIRED", "INTERNAL"]
    {
        assert!(codes.contains(&code), "{code}");
    }
    assert!(!doc.to_string().contains("#/$defs/"), "refs point into components");
    for name in ["report", "check_result"] {
        let r = s.get(&format!("/v1/schema/{name}.json"), None).await;
        assert_eq!(r.ok(200)["$schema"], "https://json-schema.org/draft/2020-12/schema");
        assert!(r.headers.contains_key("ratelimit-limit"));
    }
    s.get("/v1/schema/nope.json", None).await.expect(404, "NOT_FOUND");
    let llms = s.get("/llms.txt", None).await;
    assert_eq!(llms.status, 200);
    assert!(llms.headers["content-type"].to_str().unwrap().starts_with("text/plain"));
    let text = String::from_utf8(llms.bytes).unwrap();
    for needle in ["POST /v1/validate", "Credits", "Privacy", "http://meshcheck.test/v1/openapi.json", "deleted"] {
        assert!(text.contains(needle), "{needle}");
    }
    assert_eq!(s.get("/healthz", None).await.ok(200)["status"], "ok");
    s.get("/v1/nothing", None).await.expect(404, "NOT_FOUND");
}

/// Every route of the router is in the OpenAPI document and the other way round.
#[tokio::test]
async fn openapi_describes_exactly_the_routes() {
    let s = srv();
    let (_, key) = s.account("scale");
    for (method, path, ..) in server::openapi::ROUTES {
        let concrete = path.replace("{upload_id}", "upl_x").replace("{id}", "x").replace("{name}", "report");
        let req = Request::builder().method(method.to_uppercase().as_str()).uri(&concrete).header("x-api-key", &key);
        let r = s.call(req.body(Body::empty()).unwrap()).await;
        assert!(
            !(r.status == 404 && r.json["error"]["message"].as_str().unwrap_or("").starts_with("no endpoint")),
            "{method} {path} is described but not routed"
        );
        assert_ne!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
    }
}

// ---------------------------------------------------------------- end to end

pub(crate) struct Running {
    pub(crate) addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
    pub(crate) async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.task.await.unwrap().unwrap();
    }
}

pub(crate) async fn start(s: &Srv) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let state = s.state.clone();
    let task = tokio::spawn(server::serve(listener, state, async move {
        let _ = rx.await;
    }));
    // serve() recovers (requeues jobs, sweeps orphaned blobs) before it
    // accepts: wait for /healthz so in-process calls cannot race the sweep.
    let http = reqwest::Client::new();
    for _ in 0..500 {
        if http.get(format!("http://{addr}/healthz")).send().await.is_ok_and(|r| r.status() == 200) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    Running { addr, stop: Some(tx), task }
}

/// A job's status straight from the store (polling over HTTP would spend the
/// key's rate limit).
pub(crate) fn job_status(s: &Srv, key: &str, job: &str) -> String {
    let account = s.store.account_for_key(key).unwrap().unwrap();
    s.store.job(job, &account.id).unwrap().unwrap().status
}

/// Waits (up to 60 s) until `done(status)`; returns the last status.
pub(crate) async fn wait_job(s: &Srv, key: &str, job: &str, done: impl Fn(&str) -> bool) -> String {
    let mut st = String::new();
    for _ in 0..600 {
        st = job_status(s, key, job);
        if done(&st) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    st
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_upload_validate_by_blob_and_refetch() {
    let s = srv();
    let (_, key) = s.account("free");
    let run = start(&s).await;
    let http = reqwest::Client::new();
    let begin: Value =
        http.post(run.url("/v1/uploads")).header("x-api-key", &key).send().await.unwrap().json().await.unwrap();
    let path = begin["upload_url"].as_str().unwrap().strip_prefix("http://meshcheck.test").unwrap();
    let put = http.put(run.url(path)).header("x-api-key", &key).body(box_glb()).send().await.unwrap();
    assert_eq!(put.status(), 200);
    let report: Value = {
        let r = http
            .post(run.url("/v1/validate"))
            .header("x-api-key", &key)
            .json(&json!({"blob_id": begin["blob_id"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert!(r.headers().contains_key("ratelimit-remaining"));
        r.json().await.unwrap()
    };
    assert_eq!(report["verdict"], "pass");
    let again: Value = http
        .get(run.url(&format!("/v1/reports/{}", report["report_id"].as_str().unwrap())))
        .header("x-api-key", &key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(again, report);
    run.stop().await;
    s.assert_no_blobs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_async_job_with_a_signed_webhook() {
    let (hook_addr, mut hooks) = crate::fakes::webhook_receiver(200).await;
    let s = srv_with(|c| c.allow_exact_targets = vec![hook_addr]);
    let (_, key) = s.account("studio");
    let run = start(&s).await;
    let http = reqwest::Client::new();
    let glb = padded_glb(28_000_000);
    // Upload (above the multipart cap), then validate by blob: above 20 MB, a job.
    let begin: Value =
        http.post(run.url("/v1/uploads")).header("x-api-key", &key).send().await.unwrap().json().await.unwrap();
    let path = begin["upload_url"].as_str().unwrap().strip_prefix("http://meshcheck.test").unwrap().to_string();
    assert_eq!(http.put(run.url(&path)).header("x-api-key", &key).body(glb).send().await.unwrap().status(), 200);
    let webhook_url = format!("http://{hook_addr}/hook");
    let r = http
        .post(run.url("/v1/validate"))
        .header("x-api-key", &key)
        .json(&json!({"blob_id": begin["blob_id"], "webhook_url": webhook_url}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let env: Value = r.json().await.unwrap();
    assert_eq!(env["status"], "queued");
    assert!(env["result"].is_null());
    let poll = env["poll"].as_str().unwrap().to_string();
    assert_eq!(poll, format!("/v1/jobs/{}", env["job_id"].as_str().unwrap()));
    let job_id = env["job_id"].as_str().unwrap().to_string();
    wait_job(&s, &key, &job_id, |st| st == "done" || st == "failed").await;
    let done: Value = http.get(run.url(&poll)).header("x-api-key", &key).send().await.unwrap().json().await.unwrap();
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["result"]["schema_version"], "1.2");
    assert!(done["result"]["input"]["bytes"].as_u64().unwrap() >= 28_000_000);
    // The webhook: once, signed with the account's secret.
    let (headers, body) =
        tokio::time::timeout(std::time::Duration::from_secs(30), hooks.recv()).await.unwrap().unwrap();
    let secret = s.get("/v1/account", Some(&key)).await.json["webhook_secret"].as_str().unwrap().to_string();
    let id = headers["webhook-id"].to_str().unwrap();
    let ts: i64 = headers["webhook-timestamp"].to_str().unwrap().parse().unwrap();
    let sig = headers["webhook-signature"].to_str().unwrap();
    assert!(server::webhook::verify(&secret, id, ts, sig, &body, s.clock.now(), 300));
    assert!(!server::webhook::verify("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", id, ts, sig, &body, s.clock.now(), 300));
    let posted: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(posted, done);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(hooks.try_recv().is_err(), "delivered once");
    // The report is stored like a synchronous one.
    let rid = done["result"]["report_id"].as_str().unwrap();
    assert_eq!(s.get(&format!("/v1/reports/{rid}"), Some(&key)).await.ok(200), &done["result"]);
    run.stop().await;
    s.assert_no_blobs();
    assert_eq!(s.balance(&key).await, 9_999);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_webhooks_are_retried_under_the_same_id() {
    let (hook_addr, mut hooks) = crate::fakes::webhook_receiver(500).await;
    let s = srv_with(|c| {
        c.allow_exact_targets = vec![hook_addr];
        c.webhook_backoff = std::time::Duration::from_secs(1);
        c.webhook_attempts = 3;
    });
    let (_, key) = s.account("studio");
    let run = start(&s).await;
    // An async job that fails (not a model): refunded, and its failure is delivered.
    let blob = {
        let http = reqwest::Client::new();
        let begin: Value =
            http.post(run.url("/v1/uploads")).header("x-api-key", &key).send().await.unwrap().json().await.unwrap();
        let path = begin["upload_url"].as_str().unwrap().strip_prefix("http://meshcheck.test").unwrap().to_string();
        let mut bytes = padded_glb(21_000_000);
        bytes[20..40].copy_from_slice(&[b'x'; 20]);
        http.put(run.url(&path)).header("x-api-key", &key).body(bytes).send().await.unwrap();
        begin["blob_id"].as_str().unwrap().to_string()
    };
    let r = s
        .post_json("/v1/validate", &key, json!({"blob_id": blob, "webhook_url": format!("http://{hook_addr}/hook")}))
        .await;
    r.ok(202);
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (h, body) = tokio::time::timeout(std::time::Duration::from_secs(20), hooks.recv()).await.unwrap().unwrap();
        ids.push(h["webhook-id"].to_str().unwrap().to_string());
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["status"], "failed");
        assert_eq!(v["result"]["error"]["code"], "MALFORMED_GLTF");
    }
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "same webhook-id on every attempt");
    run.stop().await;
    assert_eq!(s.balance(&key).await, 10_000, "a failed job is refunded");
    s.assert_no_blobs();
}

/// A webhook target that accepts the connection and never answers (and one
/// that answers 500) holds neither a job worker nor the other deliveries:
/// while three attempts hang, a further job runs to done and a fourth job's
/// webhook reaches a healthy target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_a_hanging_webhook_target_blocks_no_worker_and_no_other_delivery() {
    let hang = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hang_addr = hang.local_addr().unwrap();
    let (accepted_tx, mut accepted) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = hang.accept().await {
            held.push(sock); // kept open, never read or answered
            let _ = accepted_tx.send(());
        }
    });
    let (ok_addr, mut hooks) = crate::fakes::webhook_receiver(200).await;
    let s = srv_with(|c| {
        c.allow_exact_targets = vec![hang_addr, ok_addr];
        // Long enough that no hanging attempt ends during the test.
        c.webhook_timeout = std::time::Duration::from_secs(300);
        c.workers = 1;
    });
    let (_, key) = s.account("scale");
    let run = start(&s).await;
    let glb = padded_glb(21_000_000);
    let queue = |hook: Option<String>| {
        let (s, key, glb) = (&s, &key, glb.clone());
        async move {
            let blob = upload(s, key, glb).await;
            let mut body = json!({"blob_id": blob});
            if let Some(h) = hook {
                body["webhook_url"] = json!(h);
            }
            s.post_json("/v1/validate", key, body).await.ok(202)["job_id"].as_str().unwrap().to_string()
        }
    };
    let mut hanging = Vec::new();
    for _ in 0..3 {
        hanging.push(queue(Some(format!("http://{hang_addr}/hook"))).await);
    }
    for job in &hanging {
        assert_eq!(wait_job(&s, &key, job, |st| st == "done").await, "done");
    }
    for _ in 0..3 {
        tokio::time::timeout(std::time::Duration::from_secs(30), accepted.recv())
            .await
            .expect("each hanging webhook connects")
            .unwrap();
    }
    // The one worker is free: a job without a webhook runs to done.
    let plain = queue(None).await;
    assert_eq!(wait_job(&s, &key, &plain, |st| st == "done").await, "done");
    // And the delivery pool is not held by the hanging three.
    let healthy = queue(Some(format!("http://{ok_addr}/hook"))).await;
    let (_, body) =
        tokio::time::timeout(std::time::Duration::from_secs(60), hooks.recv()).await.expect("delivered").unwrap();
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["job_id"], healthy.as_str());
    // The three hanging attempts are still in flight (none has ended, none retried).
    let pending = s.store.claim_deliveries(i64::MAX, 64, i64::MAX).unwrap();
    let stuck: Vec<_> = pending.iter().filter(|d| hanging.contains(&d.job_id)).collect();
    assert_eq!(stuck.len(), 3, "{pending:?}");
    assert!(stuck.iter().all(|d| d.attempts == 0));
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_restart_recovers_interrupted_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let key;
    let job_a;
    let job_b;
    {
        // A server whose workers never start a job: two queued jobs, then stop.
        let s = srv_at(tmp.path(), |c| c.workers = 1);
        key = s.account("studio").1;
        let glb = padded_glb(21_000_000);
        let a = upload(&s, &key, glb.clone()).await;
        let b = upload(&s, &key, glb).await;
        job_a = s.post_json("/v1/validate", &key, json!({"blob_id": a})).await.ok(202)["job_id"]
            .as_str()
            .unwrap()
            .to_string();
        job_b = s.post_json("/v1/validate", &key, json!({"blob_id": b})).await.ok(202)["job_id"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(s.balance(&key).await, 9_998);
        // Simulate a crash in the middle of both: processing, one of them on its last attempt.
        let db = rusqlite::Connection::open(tmp.path().join("meshcheck.sqlite")).unwrap();
        db.execute("UPDATE jobs SET status = 'processing', attempts = 1 WHERE id = ?1", [&job_a]).unwrap();
        db.execute("UPDATE jobs SET status = 'processing', attempts = 3 WHERE id = ?1", [&job_b]).unwrap();
        // And a stray blob from an interrupted upload, past the sweep's one-hour margin.
        std::fs::write(tmp.path().join("blobs/blob_stray"), b"partial").unwrap();
        let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        std::fs::File::options()
            .write(true)
            .open(tmp.path().join("blobs/blob_stray"))
            .and_then(|f| f.set_modified(two_hours_ago))
            .unwrap();
    }
    let s = srv_at(tmp.path(), |c| c.workers = 1);
    let run = start(&s).await;
    let a = wait_job(&s, &key, &job_a, |st| st == "done" || st == "failed").await;
    let b = wait_job(&s, &key, &job_b, |st| st == "done" || st == "failed").await;
    let status = (a, b);
    assert_eq!(status, ("done".to_string(), "failed".to_string()));
    let b = s.get(&format!("/v1/jobs/{job_b}"), Some(&key)).await;
    assert_eq!(b.json["result"]["error"]["code"], "INTERNAL");
    assert_eq!(s.balance(&key).await, 9_999, "the failed job was refunded");
    run.stop().await;
    s.assert_no_blobs();
    assert_eq!(s.store.integrity_check().unwrap(), "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_shutdown_puts_a_running_job_back_and_a_restart_finishes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let key;
    let job;
    {
        let s = srv_at(tmp.path(), |c| c.shutdown_grace = std::time::Duration::ZERO);
        key = s.account("studio").1;
        let blob = upload(&s, &key, padded_glb(28_000_000)).await;
        let run = start(&s).await;
        job = s.post_json("/v1/validate", &key, json!({"blob_id": blob})).await.ok(202)["job_id"]
            .as_str()
            .unwrap()
            .to_string();
        // Stop as soon as a worker has it.
        wait_job(&s, &key, &job, |st| st != "queued").await;
        run.stop().await;
        let st = job_status(&s, &key, &job);
        assert!(st == "queued" || st == "done", "never stuck in processing: {st}");
    }
    let s = srv_at(tmp.path(), |_| {});
    let run = start(&s).await;
    let st = wait_job(&s, &key, &job, |st| st == "done" || st == "failed").await;
    assert_eq!(st, "done");
    run.stop().await;
    s.assert_no_blobs();
    assert_eq!(s.balance(&key).await, 9_999, "charged once");
}

// ---------------------------------------------------------------- url fetch and SSRF

/// A tiny HTTP server: `/asset.glb` serves Box.glb, `/hop` redirects to `target`.
async fn asset_server(target: String) -> SocketAddr {
    crate::fakes::file_host(box_glb(), target).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_fetches_are_ssrf_guarded() {
    let inner = asset_server(String::new()).await;
    let allowed = asset_server(format!("http://127.0.0.1:{}/asset.glb", inner.port())).await;
    let s = srv_with(|c| c.allow_exact_targets = vec![allowed]);
    let (_, key) = s.account("scale");
    // The allowed test server itself works.
    let r = s.post_json("/v1/validate", &key, json!({"url": format!("http://{allowed}/asset.glb")})).await;
    assert_eq!(r.ok(200)["input"]["filename"], "asset.glb");
    let p = inner.port();
    for url in [
        format!("http://127.0.0.1:{p}/asset.glb"),
        format!("http://2130706433:{p}/asset.glb"),
        format!("http://0x7f000001:{p}/asset.glb"),
        format!("http://0x7f.1:{p}/asset.glb"),
        format!("http://0177.0.0.1:{p}/asset.glb"),
        format!("http://127.1:{p}/asset.glb"),
        format!("http://[::1]:{p}/asset.glb"),
        format!("http://[::ffff:127.0.0.1]:{p}/asset.glb"),
        format!("http://localhost:{p}/asset.glb"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://10.0.0.1/a.glb".to_string(),
        "http://[fe80::1]/a.glb".to_string(),
        "http://100.64.0.1/a.glb".to_string(),
        "http://0.0.0.0/a.glb".to_string(),
        // A redirect from the allowed server into loopback.
        format!("http://{allowed}/hop"),
        "ftp://example.com/a.glb".to_string(),
        "file:///etc/passwd".to_string(),
    ] {
        let r = s.post_json("/v1/validate", &key, json!({"url": url})).await;
        r.expect(422, "FETCH_FAILED");
        assert_eq!(r.json["error"]["detail"]["field"], "url", "{url}");
    }
    // A webhook target is guarded the same way (async calls).
    assert_eq!(s.balance(&key).await, 39_999);
    s.assert_no_blobs();
}

// ---------------------------------------------------------------- the binary

/// `meshcheck accounts`, `keys` and `serve` as a user runs them: the key is
/// printed once, the server announces its address, serves, stops cleanly on
/// SIGTERM, and its logs hold neither the key nor the file's bytes.
#[test]
fn the_binary_serves_until_sigterm_and_logs_no_secrets() {
    use crate::support::serve_process::{create_account, serve_command, start};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let created = create_account(tmp.path(), "indie", &["--email", "a@example.com"]).unwrap();
    let key = created.key.clone();
    assert!(key.starts_with("mk_live_") && key.len() == 40);
    let list = crate::util::run(&["accounts", "list", "--data-dir", dir]);
    let listed = String::from_utf8(list.stdout).unwrap();
    assert!(listed.contains(&created.id) && listed.contains("indie"));
    assert!(!listed.contains(&key), "keys are never shown again");
    let second = crate::util::run(&["keys", "create", "--account", &created.id, "--data-dir", dir]);
    let key2 = String::from_utf8(second.stdout).unwrap().trim().to_string();
    assert!(key2.starts_with("mk_live_"));
    assert!(crate::util::run(&["keys", "revoke", &key2[..12], "--data-dir", dir]).status.success());
    assert_eq!(crate::util::run(&["keys", "revoke", &key2, "--data-dir", dir]).status.code(), Some(2));

    let mut cmd = serve_command(tmp.path());
    cmd.env("MESHCHECK_LOG", "info")
        // Secrets of the third-party services: none may reach the logs.
        .env("STRIPE_SECRET_KEY", "sk_test_logcheck_0123456789")
        .env("STRIPE_WEBHOOK_SECRET", "whsec_logcheck_0123456789")
        .env("STRIPE_PRICE_INDIE", "price_i")
        .env("STRIPE_PRICE_STUDIO", "price_s")
        .env("STRIPE_PRICE_SCALE", "price_c")
        .env("MESHCHECK_VISION_URL", "http://127.0.0.1:9/v1")
        .env("MESHCHECK_VISION_MODEL", "m")
        .env("MESHCHECK_VISION_API_KEY", "sk-vision-logcheck-0123456789");
    let mut server = start(cmd, std::time::Duration::from_secs(60)).unwrap();
    let addr = server.addr.clone();
    let http = reqwest::blocking::Client::new();
    let account = http.get(format!("http://{addr}/v1/account")).header("x-api-key", &key).send().unwrap();
    assert_eq!(account.status(), 200);
    let revoked = http.get(format!("http://{addr}/v1/account")).header("x-api-key", &key2).send().unwrap();
    assert_eq!(revoked.status(), 401);
    let glb = box_glb();
    let (ctype, body) = multipart::upload(&glb, &[]);
    let r = http
        .post(format!("http://{addr}/v1/validate"))
        .header("x-api-key", &key)
        .header("content-type", ctype)
        .body(body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let status = server.stop(std::time::Duration::from_secs(60)).unwrap();
    assert!(status.success(), "clean exit on SIGTERM: {status:?}");
    let all = server.take_logs().collect::<Vec<_>>().join("\n");
    assert!(all.contains("\"request_id\""), "requests are logged with ids");
    assert!(all.contains("/v1/validate"));
    assert!(!all.contains(&key) && !all.contains(&key2) && !all.contains("mk_live_"), "no key in the logs");
    assert!(!all.contains("whsec_"), "no webhook secret in the logs");
    assert!(
        !all.contains("logcheck_0123456789") && !all.contains("logcheck-0123456789"),
        "no Stripe or vision key in the logs"
    );
    assert!(std::fs::read_dir(tmp.path().join("blobs")).unwrap().next().is_none());
}

/// `--no-janitor` (Config::janitor false): the node never runs the
/// scheduled work; with it on, the same expired report is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_the_janitor_never_runs_the_scheduled_work() {
    use meshcheck::server::clock::Clock as _;
    use meshcheck::store::ReportLookup;
    for janitor in [false, true] {
        let s = srv_with(|c| {
            c.janitor = janitor;
            c.janitor_every = std::time::Duration::from_millis(50);
        });
        s.store.put_report("rpt_x", "acct_a", 0, s.clock.now() + 10, "{}").unwrap();
        s.clock.advance(20);
        let run = start(&s).await;
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
        let got = s.store.report("rpt_x", "acct_a").unwrap();
        run.stop().await;
        let want = if janitor { ReportLookup::Expired } else { ReportLookup::Found("{}".into()) };
        assert_eq!(got, want, "janitor {janitor}");
    }
}
