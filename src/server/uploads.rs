//! Presigned-style uploads for files above the multipart cap.
//!
//! POST /v1/uploads issues `{blob_id, upload_url, max_bytes}`; the URL is
//! bound to the account (the PUT needs the same account's key) and single
//! use: the first PUT moves the upload from pending to receiving, so a
//! second one is refused (404 NOT_FOUND). The PUT streams into the blob
//! store, enforcing the plan's cap chunk by chunk (413 FILE_TOO_LARGE, the
//! unfinished blob dropped), in batches of 1 MiB written on the blocking
//! pool; the blob is committed only once the whole body is in. Unused
//! uploads expire after 24 hours (janitor).

use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use super::input::{BlobGuard, max_bytes_for};
use super::state::AppState;
use crate::store::upload_state;
use axum::Extension;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Serialize;

/// The begin response.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct UploadBegin {
    /// What POST /v1/validate takes once the bytes are stored.
    pub blob_id: String,
    /// Where to PUT the bytes (single use, this account only).
    pub upload_url: String,
    /// The most bytes the PUT may carry.
    pub max_bytes: u64,
}

/// The stored response.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct UploadStored {
    /// The blob.
    pub blob_id: String,
    /// Bytes stored.
    pub bytes: u64,
}

/// POST /v1/uploads.
pub async fn begin(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> ApiResult<Response> {
    let now = state.clock.now();
    let up = state.store.create_upload(&caller.account.id, now, now + state.config.upload_ttl_s)?;
    let body = UploadBegin {
        blob_id: up.blob_id,
        upload_url: format!("{}/v1/uploads/{}", state.config.base_url, up.id),
        max_bytes: max_bytes_for(&state, &caller),
    };
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// PUT /v1/uploads/{upload_id}.
pub async fn put(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(upload_id): Path<String>,
    req: Request,
) -> ApiResult<Response> {
    let missing = || ApiError::not_found("no open upload with this id for this account (upload URLs are single use)");
    let up = state.store.upload(&upload_id)?.filter(|u| u.account_id == caller.account.id).ok_or_else(missing)?;
    if up.state != upload_state::PENDING || up.expires_at <= state.clock.now() {
        return Err(missing());
    }
    let max = max_bytes_for(&state, &caller);
    let content_length: Option<u64> =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse().ok());
    if let Some(n) = content_length.filter(|&n| n > max) {
        return Err(ApiError::too_large(n, max, "the upload"));
    }
    if !state.store.move_upload(&up.id, upload_state::PENDING, upload_state::RECEIVING, None)? {
        return Err(missing());
    }
    // From here the blob is gone on every path but success: an unfinished
    // writer leaves nothing, and the guard deletes a finished one.
    let guard = BlobGuard::new(&state, &up.blob_id);
    let written = stream_to_blob(&state, &up.blob_id, req.into_body(), max).await;
    let bytes = match written {
        Ok(n) => n,
        Err(e) => {
            state.store.move_upload(&up.id, upload_state::RECEIVING, upload_state::EXPIRED, None)?;
            return Err(e);
        }
    };
    if !state.store.move_upload(&up.id, upload_state::RECEIVING, upload_state::STORED, Some(bytes as i64))? {
        return Err(missing());
    }
    guard.keep();
    Ok((StatusCode::OK, axum::Json(UploadStored { blob_id: up.blob_id, bytes })).into_response())
}

/// Bytes gathered from the body before one write on the blocking pool.
const BATCH: usize = 1 << 20;

async fn stream_to_blob(state: &AppState, blob_id: &str, body: Body, max: u64) -> ApiResult<u64> {
    let blobs = state.blobs.clone();
    let id = blob_id.to_string();
    // The writers' calls may wait on disk or network: never on this runtime thread.
    let mut writer = tokio::task::spawn_blocking(move || blobs.writer(&id))
        .await
        .map_err(ApiError::internal)?
        .map_err(|e| ApiError::internal(format!("opening blob: {e}")))?;
    let mut stream = body.into_data_stream();
    let mut total = 0u64;
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let chunk = stream.next().await;
        let end = chunk.is_none();
        if let Some(chunk) = chunk {
            let chunk =
                chunk.map_err(|e| crate::error::Error::bad_request(format!("the upload was interrupted: {e}")))?;
            total += chunk.len() as u64;
            if total > max {
                return Err(ApiError::too_large(total, max, "the upload"));
            }
            batch.extend_from_slice(&chunk);
        }
        if batch.len() >= BATCH || (end && !batch.is_empty()) {
            let (w, mut b, written) = tokio::task::spawn_blocking(move || {
                let written = writer.write_all(&batch);
                (writer, batch, written)
            })
            .await
            .map_err(ApiError::internal)?;
            written.map_err(|e| ApiError::internal(format!("writing blob: {e}")))?;
            b.clear();
            (writer, batch) = (w, b);
        }
        if end {
            break;
        }
    }
    tokio::task::spawn_blocking(move || writer.finish())
        .await
        .map_err(ApiError::internal)?
        .map_err(|e| ApiError::internal(format!("writing blob: {e}")))?;
    Ok(total)
}
