//! Request input, whatever its shape: a multipart form or a JSON body read
//! under a cap, its one source (`file`, `url` or `blob_id`), and the loaded
//! bytes with the upload blob to delete afterwards. Every endpoint that
//! takes an asset (validate, render, inspect) reads it here.

use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use super::state::AppState;
use crate::error::{Error, ErrorCode};
use crate::store::upload_state;
use axum::body::Body;
use axum::extract::{FromRequest, Multipart, Request};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use serde_json::{Map, Value};

/// Where the bytes come from.
#[derive(Debug)]
pub enum Source {
    /// A multipart `file`.
    Bytes(Vec<u8>),
    /// `url`, fetched by the server.
    Url(String),
    /// `blob_id` of a finished upload.
    Blob(String),
}

fn one_source(file: Option<Vec<u8>>, url: Option<String>, blob_id: Option<String>) -> Result<Source, ApiError> {
    let given = file.is_some() as u8 + url.is_some() as u8 + blob_id.is_some() as u8;
    if given != 1 {
        return Err(Error::field(
            "input",
            if given == 0 { "missing" } else { "ambiguous" },
            format!("give exactly one of file, url and blob_id (got {given})"),
        )
        .into());
    }
    Ok(match (file, url, blob_id) {
        (Some(b), _, _) => Source::Bytes(b),
        (_, Some(u), _) => Source::Url(u),
        (_, _, Some(b)) => Source::Blob(b),
        _ => unreachable!("exactly one is set"),
    })
}

/// Reads the body with a cap: 413 FILE_TOO_LARGE past it.
pub async fn read_capped(body: Body, content_length: Option<u64>, cap: u64, what: &str) -> ApiResult<bytes::Bytes> {
    if let Some(n) = content_length.filter(|&n| n > cap) {
        return Err(ApiError::too_large(n, cap, what));
    }
    match http_body_util::Limited::new(body, cap as usize).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            Err(ApiError::too_large(content_length.unwrap_or(cap + 1), cap, what))
        }
        Err(e) => Err(Error::bad_request(format!("could not read the request body: {e}")).into()),
    }
}

/// A request body of either shape, before the endpoint reads its fields:
/// multipart text fields (JSON-valued ones such as `overrides` still as
/// text) or a JSON object, plus the multipart `file`.
pub enum Form {
    /// multipart/form-data.
    Multipart {
        /// The `file` part and its name.
        file: Option<(Vec<u8>, Option<String>)>,
        /// The other parts, as text.
        text: std::collections::BTreeMap<String, String>,
    },
    /// application/json.
    Json(Map<String, Value>),
}

/// Reads a request body: multipart (capped at the multipart limit; only
/// `fields` and `file` accepted, each once) or JSON (64 KiB, an object;
/// `file` refused with the way to send one); any other type is 415.
pub async fn read_form(state: &AppState, req: Request, fields: &[&str]) -> ApiResult<Form> {
    let ctype =
        req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    let content_length = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse().ok());
    let unknown = |name: &str| -> ApiError {
        Error::field(name, "unknown", format!("unknown field {name:?}; fields: file, {}", fields.join(", "))).into()
    };
    if ctype.starts_with("multipart/form-data") {
        let (parts, body) = req.into_parts();
        let bytes = read_capped(body, content_length, state.config.multipart_max_bytes, "the multipart body").await?;
        let req = Request::from_parts(parts, Body::from(bytes));
        let mut mp = Multipart::from_request(req, &())
            .await
            .map_err(|e| Error::bad_request(format!("not a valid multipart body: {}", e.body_text())))?;
        let mut file = None;
        let mut text = std::collections::BTreeMap::new();
        while let Some(field) =
            mp.next_field().await.map_err(|e| Error::bad_request(format!("bad multipart body: {}", e.body_text())))?
        {
            let name = field.name().unwrap_or("").to_string();
            if name == "file" {
                if file.is_some() {
                    return Err(Error::field("file", "repeated", "give one file").into());
                }
                let filename = field.file_name().map(|f| f.rsplit(['/', '\\']).next().unwrap_or(f).to_string());
                let bytes =
                    field.bytes().await.map_err(|e| Error::bad_request(format!("bad file part: {}", e.body_text())))?;
                file = Some((bytes.to_vec(), filename));
            } else if fields.contains(&name.as_str()) {
                let value = field.text().await.map_err(|e| Error::field(&name, "not text", e.body_text()))?;
                if text.insert(name.clone(), value).is_some() {
                    return Err(Error::field(&name, "repeated", format!("field {name} given twice")).into());
                }
            } else {
                return Err(unknown(&name));
            }
        }
        Ok(Form::Multipart { file, text })
    } else if ctype.starts_with("application/json") {
        let bytes = read_capped(req.into_body(), content_length, 64 << 10, "the JSON body").await?;
        let body: Map<String, Value> = serde_json::from_slice(&bytes)
            .map_err(|e| Error::field("body", "invalid JSON", format!("the body must be a JSON object: {e}")))?;
        if body.contains_key("file") {
            return Err(Error::field(
                "file",
                "multipart only",
                "send a file as multipart/form-data, or upload it first (POST /v1/uploads) and pass blob_id",
            )
            .into());
        }
        if let Some(k) = body.keys().find(|k| !fields.contains(&k.as_str())) {
            return Err(unknown(k));
        }
        Ok(Form::Json(body))
    } else {
        Err(ApiError::new(
            ErrorCode::UnsupportedFormat,
            format!(
                "send multipart/form-data (with file) or application/json (with url or blob_id); got content type {:?}",
                if ctype.is_empty() { "none" } else { ctype.as_str() }
            ),
        )
        .detail(serde_json::json!({"field": "content-type", "reason": "unsupported media type"})))
    }
}

impl Form {
    /// A field as text: a multipart part, or a JSON string (other JSON
    /// values as their JSON text). Empty multipart values count as absent.
    pub fn text(&mut self, name: &str) -> Option<String> {
        match self {
            Form::Multipart { text, .. } => text.remove(name).filter(|s| !s.trim().is_empty()),
            Form::Json(m) => match m.remove(name)? {
                Value::Null => None,
                Value::String(s) => Some(s),
                other => Some(other.to_string()),
            },
        }
    }

    /// A field holding JSON: parsed from a multipart part's text, or the JSON value itself.
    pub fn json(&mut self, name: &str) -> ApiResult<Option<Value>> {
        match self {
            Form::Multipart { text, .. } => match text.remove(name).filter(|s| !s.trim().is_empty()) {
                None => Ok(None),
                Some(s) => serde_json::from_str(&s)
                    .map(Some)
                    .map_err(|e| Error::field(name, "not JSON", format!("{name} must be JSON: {e}")).into()),
            },
            Form::Json(m) => Ok(m.remove(name).filter(|v| !v.is_null())),
        }
    }

    /// A field as a `T`: multipart text parsed by `FromStr`-like `parse`, or a JSON value.
    pub fn typed<T: serde::de::DeserializeOwned>(&mut self, name: &str, what: &str) -> ApiResult<Option<T>> {
        let v = match self {
            Form::Multipart { text, .. } => match text.remove(name).filter(|s| !s.trim().is_empty()) {
                None => return Ok(None),
                // Numbers and booleans arrive as text: read them as JSON, else as a string.
                Some(s) => serde_json::from_str(s.trim()).unwrap_or(Value::String(s)),
            },
            Form::Json(m) => match m.remove(name) {
                None | Some(Value::Null) => return Ok(None),
                Some(v) => v,
            },
        };
        serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|_| Error::field(name, what, format!("{name} must be {what}, got {v}")).into())
    }

    /// The one input: `file`, `url` or `blob_id` (400 when none or several), and the file's name.
    pub fn source(&mut self) -> ApiResult<(Source, Option<String>)> {
        let (file, filename) = match self {
            Form::Multipart { file, .. } => match file.take() {
                Some((b, n)) => (Some(b), n),
                None => (None, None),
            },
            Form::Json(_) => (None, None),
        };
        let url = self.text("url");
        let blob_id = self.text("blob_id");
        Ok((one_source(file, url, blob_id)?, filename))
    }
}

/// The bytes of a request's input, with the blob to delete afterwards.
pub struct Loaded {
    /// The input bytes.
    pub bytes: Vec<u8>,
    /// The name shown in the report.
    pub filename: String,
    /// The upload's blob, deleted when this is dropped unless handed to a job.
    pub blob: Option<BlobGuard>,
}

/// Deletes a blob when dropped: on success, error, panic or cancellation.
pub struct BlobGuard {
    state: AppState,
    id: Option<String>,
}

impl BlobGuard {
    /// Guards `id`.
    pub fn new(state: &AppState, id: &str) -> BlobGuard {
        BlobGuard { state: state.clone(), id: Some(id.to_string()) }
    }
    /// Hands the blob over (to a job); it is no longer deleted here.
    pub fn keep(mut self) -> String {
        self.id.take().unwrap_or_default()
    }
}

impl Drop for BlobGuard {
    fn drop(&mut self) {
        if let Some(id) = self.id.take()
            && let Err(e) = self.state.blobs.delete(&id)
        {
            tracing::error!(blob = %id, error = %e, "could not delete a blob");
        }
    }
}

/// Fetches, reads or takes the input; enforces the size limits.
pub async fn load(state: &AppState, caller: &Caller, source: Source, max_bytes: u64) -> ApiResult<Loaded> {
    match source {
        Source::Bytes(bytes) => {
            if bytes.len() as u64 > max_bytes {
                return Err(ApiError::too_large(bytes.len() as u64, max_bytes, "the file"));
            }
            Ok(Loaded { bytes, filename: String::new(), blob: None })
        }
        Source::Url(url) => {
            let cap = state.config.fetch_max_bytes.min(max_bytes);
            let bytes = state.fetcher.get(&url, cap, state.config.fetch_timeout).await.map_err(|e| match e {
                super::fetch::FetchError::TooLarge { bytes, max_bytes } => {
                    ApiError::too_large(bytes, max_bytes, "the file at url")
                }
                other => ApiError::new(ErrorCode::FetchFailed, format!("could not fetch url: {other}"))
                    .detail(serde_json::json!({"field": "url", "reason": other.to_string()})),
            })?;
            let filename = url::Url::parse(&url)
                .ok()
                .and_then(|u| u.path_segments().and_then(|mut s| s.next_back().map(str::to_string)))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "download".into());
            Ok(Loaded { bytes, filename, blob: None })
        }
        Source::Blob(blob_id) => {
            let upload = state.store.upload_by_blob(&blob_id, &caller.account.id)?;
            let Some(upload) = upload.filter(|u| u.state == upload_state::STORED) else {
                return Err(ApiError::not_found(format!(
                    "no stored upload {blob_id} for this account (a blob_id is used once, and expires after 24 hours)"
                )));
            };
            // Taken now, so two requests cannot both use it.
            if !state.store.move_upload(&upload.id, upload_state::STORED, upload_state::CONSUMED, None)? {
                return Err(ApiError::not_found(format!("upload {blob_id} is already being validated")));
            }
            let guard = BlobGuard::new(state, &blob_id);
            let size = upload.bytes.unwrap_or(0) as u64;
            if size > max_bytes {
                return Err(ApiError::too_large(size, max_bytes, "the upload"));
            }
            let blobs = state.blobs.clone();
            let id = blob_id.clone();
            let bytes = tokio::task::spawn_blocking(move || blobs.read(&id))
                .await
                .map_err(ApiError::internal)?
                .map_err(|e| ApiError::internal(format!("reading blob: {e}")))?;
            Ok(Loaded { bytes, filename: blob_id, blob: Some(guard) })
        }
    }
}

/// The largest input a caller may send: min(plan, 250 MB).
pub fn max_bytes_for(state: &AppState, caller: &Caller) -> u64 {
    caller.plan.max_file_bytes.min(state.config.hard_max_bytes)
}

/// Refuses inputs that are neither GLB, zip nor glTF JSON, before any charge.
pub fn sniff(bytes: &[u8]) -> ApiResult<()> {
    crate::asset::sniff(bytes).map(|_| ()).map_err(ApiError)
}

/// Checks a webhook URL (async calls): http(s), and not a guarded address.
pub async fn check_webhook(state: &AppState, url: &str) -> ApiResult<()> {
    state
        .fetcher
        .check_url(url)
        .await
        .map_err(|e| Error::field("webhook_url", "refused", format!("webhook_url cannot be used: {e}")).into())
}

/// A JSON body that is already serialised.
pub fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
