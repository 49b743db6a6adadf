//! GET /v1/jobs/{id}, GET /v1/reports/{id} and GET /v1/account: free,
//! account-scoped reads. Another account's job or report is 404, exactly as
//! if it did not exist.

use super::auth::Caller;
use super::clock::{period_start, rfc3339};
use super::error::{ApiError, ApiResult};
use super::input::json_response;
use super::state::AppState;
use crate::error::ErrorCode;
use crate::store::ReportLookup;
use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

/// GET /v1/jobs/{id}.
pub async fn job(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Value>> {
    let job = state
        .store
        .job(&id, &caller.account.id)?
        .ok_or_else(|| ApiError::new(ErrorCode::JobNotFound, format!("no job {id} for this account")))?;
    Ok(axum::Json(super::jobs::envelope(&job)))
}

/// GET /v1/reports/{id}.
pub async fn report(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    // Render reports share the table (ids rnd_); this route serves validate reports.
    if !id.starts_with("rpt_") {
        return Err(ApiError::not_found(format!("no report {id} for this account")));
    }
    match state.store.report(&id, &caller.account.id)? {
        ReportLookup::Found(body) => Ok(json_response(StatusCode::OK, body)),
        ReportLookup::Expired => Err(ApiError::new(
            ErrorCode::ReportExpired,
            format!("report {id} passed its 30-day retention and was deleted"),
        )),
        ReportLookup::Missing => Err(ApiError::not_found(format!("no report {id} for this account"))),
    }
}

/// The account snapshot.
pub fn snapshot(state: &AppState, caller: &Caller) -> crate::error::Result<Value> {
    let a = &caller.account;
    let now = state.clock.now();
    let period = period_start(a.created_at, now);
    let used = state.store.credits_used(&a.id, period)?;
    let provider = a.subscription_provider.clone();
    Ok(json!({
        "plan": {
            "name": caller.plan.name,
            "monthly_credits": caller.plan.monthly_credits,
            "rate_per_min": caller.plan.rate_per_min,
            "max_file_bytes": caller.plan.max_file_bytes.min(state.config.hard_max_bytes),
        },
        "webhook_secret": a.webhook_secret,
        "subscription": {
            "provider": provider,
            "subscription_id": if provider.is_some() { a.subscription_id.clone() } else { None },
        },
        "balance": (caller.plan.monthly_credits - used).max(0),
        "usage": {"period_start": rfc3339(period), "credits_used": used},
    }))
}

/// GET /v1/account.
pub async fn account(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> ApiResult<axum::Json<Value>> {
    Ok(axum::Json(snapshot(&state, &caller)?))
}
