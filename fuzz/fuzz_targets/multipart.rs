//! Fuzz target for the service's multipart parsing, through the real router
//! in process: the fuzz bytes are the body of a `multipart/form-data`
//! request (fixed boundary `fuzzboundary`) sent to
//!
//! - POST /v1/validate with a valid API key: the request log, the key check
//!   (`auth::require_key`), `input::read_form` (the capped body, axum's
//!   Multipart, the `file` part and each text field once), then the
//!   handler's reading of every field (`overrides` JSON, `screenshots`,
//!   `weld_tolerance`, `mode`, `profile`, `url`, `blob_id`, `webhook_url`)
//!   and the options they make;
//! - POST /demo/validate: its own multipart loop (`file`, `profile`).
//!
//! The server runs with the file limits at 0 bytes (`hard_max_bytes`,
//! `demo_max_bytes`), so every request that parses stops at 413
//! FILE_TOO_LARGE (or 400/404/415 before it) instead of reaching the engine,
//! the reference validator (Node.js) or the job queue: those are fuzzed by
//! the other targets, and nothing here touches the network (`url` fetching
//! is off; `webhook_url` is only checked after the size limit). The invariant:
//! every answer is a 4xx with the JSON error envelope, never a 5xx, a panic
//! or a hang.
//!
//! Run with `cargo fuzz run multipart`.

#![no_main]

use axum::body::Body;
use axum::http::{Request, header};
use meshcheck::server::clock::{Clock, SystemClock};
use meshcheck::server::{self, AppState, Config};
use meshcheck::store::sqlite::SqliteStore;
use meshcheck::store::{BlobWriter, Blobs, Store};
use std::sync::{Arc, LazyLock};
use tower::ServiceExt;

pub const BOUNDARY: &str = "fuzzboundary";

/// Blobs that are never kept: with the size limits at 0 none is written.
struct NoBlobs;

/// A writer that keeps nothing.
struct Sink;

impl BlobWriter for Sink {
    fn write_all(&mut self, _bytes: &[u8]) -> std::io::Result<()> {
        Ok(())
    }
    fn finish(self: Box<Self>) -> std::io::Result<()> {
        Ok(())
    }
}

impl Blobs for NoBlobs {
    fn writer(&self, _id: &str) -> std::io::Result<Box<dyn BlobWriter>> {
        Ok(Box::new(Sink))
    }
    fn read(&self, _id: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::ErrorKind::NotFound.into())
    }
    fn delete(&self, _id: &str) -> std::io::Result<()> {
        Ok(())
    }
    fn ids(&self) -> std::io::Result<Vec<String>> {
        Ok(Vec::new())
    }
    fn ids_older_than(&self, _unix_secs: i64) -> std::io::Result<Vec<String>> {
        Ok(Vec::new())
    }
}

struct Service {
    rt: tokio::runtime::Runtime,
    app: axum::Router,
    key: String,
}

static SERVICE: LazyLock<Service> = LazyLock::new(|| {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let mut config = Config::new(std::env::temp_dir().join("meshcheck-fuzz-multipart"), "http://meshcheck.fuzz");
    config.workers = 1;
    config.rate_limits = false;
    config.hard_max_bytes = 0;
    config.demo_max_bytes = 0;
    config.fetch_allow_hosts = Some(Vec::new());
    let store = Arc::new(SqliteStore::in_memory().expect("an in-memory store"));
    let clock = Arc::new(SystemClock::new());
    let (_, key) = store.create_account("free", None, clock.now()).expect("an account");
    let state = AppState::with_parts(config, store, Arc::new(NoBlobs), Arc::new(NoBlobs), clock, None)
        .expect("the service state");
    Service { rt, app: server::router(state), key }
});

fn call(svc: &Service, path: &str, body: &[u8]) {
    let req = Request::post(path)
        .header("x-api-key", &svc.key)
        .header(header::CONTENT_TYPE, format!("multipart/form-data; boundary={BOUNDARY}"))
        .header(header::CONTENT_LENGTH, body.len())
        .body(Body::from(body.to_vec()))
        .expect("a request");
    let (status, bytes) = svc.rt.block_on(async {
        let resp = svc.app.clone().oneshot(req).await.expect("the router is infallible");
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.expect("a readable response body");
        (status, bytes)
    });
    let text = String::from_utf8_lossy(&bytes);
    assert!(status.is_client_error(), "POST {path} answered {status}: {text}");
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    assert!(v.pointer("/error/code").is_some_and(|c| c.is_string()), "no error envelope: {text}");
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let svc = &*SERVICE;
    call(svc, "/v1/validate", data);
    call(svc, "/demo/validate", data);
});
