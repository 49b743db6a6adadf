//! The public documents (no key, limited per client IP): the OpenAPI
//! description, the JSON Schemas, /llms.txt; and /healthz (unlimited, for
//! load balancers), plus the JSON 404 for unknown paths.

use super::error::{ApiError, ApiResult};
use super::openapi::{self, SCHEMAS};
use super::state::AppState;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::OnceLock;

/// GET /v1/openapi.json.
pub async fn openapi(State(state): State<AppState>) -> Response {
    static DOC: OnceLock<String> = OnceLock::new();
    let body = DOC.get_or_init(|| openapi::document(&state.config.base_url).to_string()).clone();
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// GET /v1/schema/{name}.json.
pub async fn schema(Path(file): Path<String>) -> ApiResult<Response> {
    let name = file.strip_suffix(".json").unwrap_or("");
    let Some((_, text)) = SCHEMAS.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = SCHEMAS.iter().map(|(n, _)| *n).collect();
        return Err(ApiError::not_found(format!("no schema {file}; schemas: {}", names.join(", "))));
    };
    Ok(([(header::CONTENT_TYPE, "application/schema+json")], *text).into_response())
}

/// GET /llms.txt (its prices filled in from [`super::prices`]).
pub async fn llms(State(state): State<AppState>) -> Response {
    let text = super::prices::fill(include_str!("llms.txt")).replace("{base_url}", &state.config.base_url);
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}

/// GET /healthz: 200 while the database answers and the server is not stopping.
pub async fn healthz(State(state): State<AppState>) -> Response {
    let db = state.store.account("acct_healthz").is_ok();
    let ok = db && !state.is_stopping();
    let status = if ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let body = serde_json::json!({
        "status": if ok { "ok" } else { "unavailable" },
        "version": env!("CARGO_PKG_VERSION"),
        "database": db,
        "validator": state.validator.is_some(),
    });
    (status, axum::Json(body)).into_response()
}

/// Unknown paths: the error envelope, 404 NOT_FOUND.
pub async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("no endpoint at {}; see /v1/openapi.json", uri.path()))
}
