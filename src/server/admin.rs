//! The admin listener: `GET /metrics` ([`super::metrics`]) on an address of
//! its own (`meshcheck serve --metrics-addr`), never on the public router.
//! Operators point their scraper at it and keep it off the internet: it
//! needs no key, is not rate limited, and tells how busy the service is.
//! It stops with the server.

use super::metrics::CONTENT_TYPE;
use super::state::AppState;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The admin routes: `GET /metrics`; anything else is 404.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found: the admin listener serves GET /metrics\n") })
        .with_state(state)
}

/// GET /metrics: the Prometheus text exposition. The job counts come from
/// the store, a short query, run off the async threads.
async fn metrics(State(state): State<AppState>) -> Response {
    let st = state.clone();
    match tokio::task::spawn_blocking(move || st.metrics.encode()).await {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "metrics: the scrape failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// Serves the admin routes on `listener` until the server begins to stop.
pub async fn serve(listener: tokio::net::TcpListener, state: AppState) -> std::io::Result<()> {
    let mut stopping = state.stopping.subscribe();
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async move {
            let _ = stopping.wait_for(|s| *s).await;
        })
        .await
}
