//! `meshcheck serve`: the engine over the /v1 HTTP API (axum on tokio).
//!
//! [`router`] builds the routes over an [`AppState`]; [`serve`] runs them on
//! a listener with the background tasks (job workers, webhook deliveries,
//! the janitor) until a shutdown signal, then drains: running jobs finish
//! within the grace period or go back to the queue.
//!
//! - [`state`]: the settings ([`Config`]) and the shared [`AppState`].
//! - [`auth`]: X-Api-Key, the per-key and per-IP token buckets, RateLimit-* headers.
//! - [`input`]: request input (multipart or JSON; `file`, `url` or
//!   `blob_id`) read under its caps into one loaded input.
//! - [`metering`]: charges taken in the engine's gate and refunded on our faults.
//! - [`prices`]: the price list, every priced operation and its credits, and
//!   what one request costs.
//! - [`reports`]: report storage (ids, expiry, stills under signed URLs).
//! - [`work`]: the work by kind ([`work::Work`]: validate, render), run by
//!   the synchronous handlers and the queue alike.
//! - [`validate`]: POST /v1/validate (multipart and JSON: file, url, blob_id).
//! - [`uploads`]: POST /v1/uploads and PUT /v1/uploads/{id}.
//! - [`jobs`]: the persisted queue, its workers, restart recovery.
//! - [`deliveries`]: webhook delivery; [`janitor`]: expiry of stored data.
//! - [`metrics`]: the operators' metrics (`state.metrics`); [`admin`]: the
//!   admin listener that serves them as `GET /metrics`, apart from the API.
//! - [`resources`]: GET /v1/jobs/{id}, /v1/reports/{id}, /v1/account.
//! - [`public`]: /v1/openapi.json, /v1/schema/{name}.json, /llms.txt, /healthz.
//! - [`fetch`]: the SSRF-guarded HTTP client for `url` and webhooks.
//! - [`render`]: POST /v1/render (stills and turntables).
//! - [`inspect`]: POST /v1/inspect (the vision model).
//! - [`media`]: stored stills and turntables, served through signed URLs.
//! - [`demo`]: the drag-and-drop page at `/` and POST /demo/validate.
//! - [`billing`]: Stripe Checkout, Customer Portal and its signed webhook;
//!   [`stripe`] the provider's configuration and calls, [`stripe_signature`]
//!   its webhook signatures.

pub mod admin;
pub mod auth;
pub mod billing;
pub mod clock;
pub mod deliveries;
pub mod demo;
pub mod error;
pub mod fetch;
pub mod fetch_policy;
pub mod fetch_resolve;
pub mod input;
pub mod inspect;
pub mod janitor;
pub mod jobs;
pub mod media;
pub mod metering;
pub mod metrics;
pub mod openapi;
pub mod plan;
pub mod prices;
pub mod public;
pub mod ratelimit;
pub mod render;
pub mod reports;
pub mod resources;
pub mod state;
pub mod stripe;
pub mod stripe_signature;
pub mod uploads;
pub mod validate;
pub mod webhook;
pub mod work;

use axum::Router;
use axum::routing::{get, post, put};
pub use state::{AppState, Config, Inner, MB};
use std::net::SocketAddr;

/// The routes. Authenticated routes sit behind [`auth::require_key`]; the
/// public documents behind [`auth::per_ip`]; `/healthz` is unlimited.
pub fn router(state: AppState) -> Router {
    let authed = Router::new()
        .route("/v1/validate", post(validate::validate))
        .route("/v1/uploads", post(uploads::begin))
        .route("/v1/uploads/{upload_id}", put(uploads::put))
        .route("/v1/jobs/{id}", get(resources::job))
        .route("/v1/reports/{id}", get(resources::report))
        .route("/v1/account", get(resources::account))
        .route("/v1/render", post(render::render))
        .route("/v1/inspect", post(inspect::inspect))
        .route("/v1/billing/checkout", post(billing::checkout))
        .route("/v1/billing/portal", post(billing::portal))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), auth::require_key));
    let public = Router::new()
        .route("/v1/openapi.json", get(public::openapi))
        .route("/v1/schema/{file}", get(public::schema))
        .route("/llms.txt", get(public::llms))
        .route("/", get(demo::page))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), auth::per_ip));
    let media = Router::new()
        .route("/v1/screenshots/{file}", get(media::screenshot))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), auth::per_ip_media));
    Router::new()
        .merge(authed)
        .merge(public)
        .merge(media)
        .route("/healthz", get(public::healthz))
        .route("/demo/validate", post(demo::validate))
        .route("/v1/billing/webhook", post(billing::webhook))
        .fallback(public::not_found)
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::request_log))
        .with_state(state)
}

/// Serves until `shutdown` completes, with the job workers, the webhook
/// sender and the janitor running beside the routes. Before accepting work
/// it recovers what a stopped server left (a single-node store): interrupted
/// jobs go back to the queue (failed with a refund when claimed a fourth
/// time) and orphaned blobs are deleted; with a shared store, leases decide.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    jobs::recover(&state);
    // A shared store tells this node when any node queues a job.
    let wake = state.clone();
    if let Err(e) = state.store.listen_jobs(Box::new(move || wake.job_wake.notify_one())) {
        tracing::error!(error = %e, "cannot listen for queued jobs; workers poll every second");
    }
    tracing::info!(node = %state.node, shared = state.store.shared(), janitor = state.config.janitor, "node starting");
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..state.config.workers.max(1) {
        tasks.spawn(jobs::worker(state.clone()));
    }
    tasks.spawn(deliveries::webhook_sender(state.clone()));
    if state.config.janitor {
        tasks.spawn(janitor::janitor(state.clone()));
    }
    let app = router(state.clone()).into_make_service_with_connect_info::<SocketAddr>();
    let stop_state = state.clone();
    let result = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down: no new work; running jobs get the grace period");
            stop_state.stopping.send_replace(true);
            stop_state.job_wake.notify_waiters();
            stop_state.webhook_wake.notify_waiters();
        })
        .await;
    state.stopping.send_replace(true);
    state.job_wake.notify_waiters();
    state.webhook_wake.notify_waiters();
    while tasks.join_next().await.is_some() {}
    result
}

/// Resolves on SIGTERM or Ctrl-C.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    // The handlers are installed here, before the caller announces its
    // address, so a SIGTERM sent the moment the address is known is a clean
    // shutdown, not the default action (termination by the signal).
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    async move {
        let ctrl_c = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        #[cfg(unix)]
        let term = async move {
            match term {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let term = std::future::pending::<()>();
        tokio::select! {
            _ = ctrl_c => {},
            _ = term => {},
        }
    }
}
