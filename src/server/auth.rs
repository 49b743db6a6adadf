//! Authentication and rate limits as middleware, plus the request log.
//!
//! - [`require_key`]: `X-Api-Key` to an account (401 MISSING_API_KEY or
//!   INVALID_API_KEY), then the key's token bucket (429 RATE_LIMITED with
//!   Retry-After). Requests without a valid key spend their client IP's
//!   public bucket, so guessing keys is limited too.
//! - [`per_ip`]: the public routes' bucket per client IP.
//! - Every response of both carries RateLimit-Limit, RateLimit-Remaining and
//!   RateLimit-Reset.
//! - [`request_log`]: a request id (`X-Request-Id`: a load balancer's when
//!   sane, else made here; returned on the response), the request's span
//!   carrying it (`request_id`), one log line per request (method, route
//!   template, status, time) and the request's count and latency in the
//!   metrics. Never bodies, keys or query strings.

use super::error::ApiError;
use super::plan::{self, Plan};
use super::ratelimit::Decision;
use super::state::AppState;
use crate::error::ErrorCode;
use crate::store::{Account, key_hash};
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;

/// The caller of an authenticated route, put in the request's extensions.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The account.
    pub account: Account,
    /// Its plan.
    pub plan: Plan,
}

/// The client's IP as the socket saw it ("unknown" in in-process tests).
pub fn client_ip(req: &Request) -> String {
    req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip().to_string()).unwrap_or_else(|| "unknown".into())
}

pub(crate) fn set_headers(headers: &mut HeaderMap, d: &Decision) {
    for (name, value) in
        [("ratelimit-limit", d.limit), ("ratelimit-remaining", d.remaining), ("ratelimit-reset", d.reset_s)]
    {
        headers.insert(name, HeaderValue::from(value));
    }
}

pub(crate) fn limited(d: &Decision) -> Response {
    let mut resp = ApiError::new(
        ErrorCode::RateLimited,
        format!("rate limit of {} requests per minute reached; retry in {} s", d.limit, d.retry_after_s),
    )
    .detail(serde_json::json!({"retry_after_s": d.retry_after_s}))
    .into_response();
    set_headers(resp.headers_mut(), d);
    resp
}

/// Takes a token from the client IP's public bucket.
fn take_ip(state: &AppState, req: &Request, per_min: u64) -> Decision {
    state.take(&format!("ip:{}", client_ip(req)), per_min)
}

/// Authenticates the key and applies its plan's rate limit.
pub async fn require_key(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let key = req.headers().get("x-api-key").and_then(|v| v.to_str().ok()).map(str::trim).map(str::to_string);
    let refuse = |req: &Request, code: ErrorCode, message: &str| {
        let d = take_ip(&state, req, state.config.public_per_min);
        if !d.allowed {
            return limited(&d);
        }
        let mut resp = ApiError::new(code, message).into_response();
        set_headers(resp.headers_mut(), &d);
        resp
    };
    let Some(key) = key.filter(|k| !k.is_empty()) else {
        return refuse(&req, ErrorCode::MissingApiKey, "send your API key in the X-Api-Key header");
    };
    let account = match state.store.account_for_key(&key) {
        Ok(a) => a,
        Err(e) => return ApiError(e).into_response(),
    };
    let Some(account) = account else {
        return refuse(&req, ErrorCode::InvalidApiKey, "the API key is unknown or revoked");
    };
    let Some(plan) = plan::plan(&account.plan) else {
        return ApiError::internal(format!("account {} has unknown plan {}", account.id, account.plan)).into_response();
    };
    let d = state.take(&format!("key:{}", key_hash(&key)), plan.rate_per_min as u64);
    if !d.allowed {
        return limited(&d);
    }
    tracing::Span::current().record("account", account.id.as_str());
    req.extensions_mut().insert(Caller { account, plan });
    let mut resp = next.run(req).await;
    set_headers(resp.headers_mut(), &d);
    resp
}

/// The public routes' per-IP limit.
pub async fn per_ip(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let d = take_ip(&state, &req, state.config.public_per_min);
    if !d.allowed {
        return limited(&d);
    }
    let mut resp = next.run(req).await;
    set_headers(resp.headers_mut(), &d);
    resp
}

/// The screenshot route's own, larger per-IP bucket: a page shows several
/// stills per report, and the signed URL is the authorisation.
pub async fn per_ip_media(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let d = state.take(&format!("media:{}", client_ip(&req)), state.config.media_per_min);
    if !d.allowed {
        return limited(&d);
    }
    let mut resp = next.run(req).await;
    set_headers(resp.headers_mut(), &d);
    resp
}

/// The longest incoming `X-Request-Id` taken as it is.
pub const MAX_REQUEST_ID: usize = 64;

/// An incoming request id, when sane: 1 to [`MAX_REQUEST_ID`] visible ASCII
/// characters (no spaces, no control characters), so it is safe in a log
/// line and a header.
pub fn sane_request_id(v: &HeaderValue) -> Option<&str> {
    v.to_str().ok().filter(|v| !v.is_empty() && v.len() <= MAX_REQUEST_ID && v.bytes().all(|b| b.is_ascii_graphic()))
}

/// Request ids, one log line per request and the request metrics.
pub async fn request_log(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get("x-request-id")
        .and_then(sane_request_id)
        .map(str::to_string)
        .unwrap_or_else(|| crate::store::random_id("req_", 16));
    if let Ok(v) = HeaderValue::from_str(&id) {
        req.headers_mut().insert("x-request-id", v);
    }
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string())
        .unwrap_or_else(|| super::metrics::UNMATCHED.into());
    let method = req.method().clone();
    let span =
        tracing::info_span!("request", request_id = %id, %method, route = %route, account = tracing::field::Empty);
    let started = std::time::Instant::now();
    let mut resp = {
        use tracing::Instrument;
        next.run(req).instrument(span.clone()).await
    };
    let elapsed = started.elapsed();
    state.metrics.http_request(&route, &method, resp.status().as_u16(), elapsed);
    let _enter = span.enter();
    tracing::info!(status = resp.status().as_u16(), ms = elapsed.as_millis() as u64, "request");
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert("x-request-id", v);
    }
    resp
}
