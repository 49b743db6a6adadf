//! POST /v1/validate: multipart (`file`) or JSON (`url` or `blob_id`), the
//! same options in both, sync up to 20 MB and a job above.
//!
//! The order of refusals follows the specification's Errors rule 1: the
//! request's shape (400, 415), then the input's size (413), then its format
//! (415 UNSUPPORTED_FORMAT), and only then credits. A synchronous call is
//! charged inside the engine's gate, once the asset has loaded, so a
//! malformed or incomplete input (422) costs nothing; a job is charged when
//! it is queued and refunded if it fails.

use super::AppState;
use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use super::jobs;
use crate::engine::Options;
use crate::error::{Error, ErrorCode};
use crate::profile::Profile;
use crate::report::Mode;
use crate::store::{Charge, upload_state};
use axum::Extension;
use axum::body::Body;
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Everything besides the bytes that decides a validation; stored with a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Built-in profile name.
    pub profile: String,
    /// checks_only or full.
    pub mode: Mode,
    /// Budget overrides, in the order given.
    pub overrides: Vec<(String, f64)>,
    /// Weld tolerance in metres, when given.
    pub weld_tolerance: Option<f64>,
    /// Whether screenshots were asked for.
    pub screenshots: bool,
    /// The name shown in the report.
    pub filename: String,
}

impl Params {
    /// The credits a validation costs: 1 checks_only, 2 full (the renderer runs).
    pub fn cost(&self) -> i64 {
        match self.mode {
            Mode::ChecksOnly => 1,
            Mode::Full => 2,
        }
    }

    /// Engine options (BAD_REQUEST on an unknown profile or override key).
    pub fn options(
        &self,
        validator: Option<std::sync::Arc<crate::validator::Validator>>,
    ) -> crate::error::Result<Options> {
        // Built-in names only: the service never reads a profile path from disk.
        let mut profile = Profile::builtin(&self.profile)
            .map_err(|e| Error::field("profile", "unknown", e.message).with_help("profiles: web, mobile, pc, hero"))?;
        for (k, v) in &self.overrides {
            profile
                .apply_override(k, *v)
                .map_err(|e| Error::field("overrides", "unknown key or bad value", e.message))?;
        }
        if let Some(w) = self.weld_tolerance {
            profile.set_weld_tolerance(w).map_err(|e| Error::field("weld_tolerance", "range", e.message))?;
        }
        Ok(Options { profile, mode: self.mode, selection: Default::default(), validator, watermark: None })
    }
}

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

/// A parsed request.
#[derive(Debug)]
pub struct Request1 {
    /// The input.
    pub source: Source,
    /// The options.
    pub params: Params,
    /// Where to POST the job's result (async only).
    pub webhook_url: Option<String>,
}

/// The JSON shape.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonBody {
    url: Option<String>,
    blob_id: Option<String>,
    file: Option<Value>,
    profile: Option<String>,
    mode: Option<String>,
    overrides: Option<Map<String, Value>>,
    screenshots: Option<bool>,
    webhook_url: Option<String>,
    weld_tolerance: Option<f64>,
}

fn parse_mode(s: &str) -> Result<Mode, ApiError> {
    match s {
        "checks_only" => Ok(Mode::ChecksOnly),
        "full" => Ok(Mode::Full),
        other => Err(Error::field("mode", "enum", format!("mode must be checks_only or full, got {other:?}")).into()),
    }
}

fn parse_overrides(map: Map<String, Value>) -> Result<Vec<(String, f64)>, ApiError> {
    let mut out = Vec::new();
    for (k, v) in map {
        let Some(x) = v.as_f64() else {
            return Err(
                Error::field("overrides", "not a number", format!("override {k} must be a number, got {v}")).into()
            );
        };
        out.push((k, x));
    }
    Ok(out)
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

/// Parses either shape of the request.
pub async fn parse(state: &AppState, req: Request) -> ApiResult<Request1> {
    let ctype =
        req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    let content_length = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse().ok());
    if ctype.starts_with("multipart/form-data") {
        let (parts, body) = req.into_parts();
        let bytes = read_capped(body, content_length, state.config.multipart_max_bytes, "the multipart body").await?;
        let req = Request::from_parts(parts, Body::from(bytes));
        let mut mp = Multipart::from_request(req, &())
            .await
            .map_err(|e| Error::bad_request(format!("not a valid multipart body: {}", e.body_text())))?;
        parse_multipart(&mut mp).await
    } else if ctype.starts_with("application/json") {
        let bytes = read_capped(req.into_body(), content_length, 64 << 10, "the JSON body").await?;
        let body: JsonBody = serde_json::from_slice(&bytes).map_err(|e| {
            Error::field("body", "invalid JSON", format!("the JSON body does not match the request schema: {e}"))
        })?;
        if body.file.is_some() {
            return Err(Error::field(
                "file",
                "multipart only",
                "send a file as multipart/form-data, or upload it first (POST /v1/uploads) and pass blob_id",
            )
            .into());
        }
        let params = Params {
            profile: body.profile.unwrap_or_else(|| "web".into()),
            mode: body.mode.as_deref().map(parse_mode).transpose()?.unwrap_or(Mode::ChecksOnly),
            overrides: parse_overrides(body.overrides.unwrap_or_default())?,
            weld_tolerance: body.weld_tolerance,
            screenshots: body.screenshots.unwrap_or(false),
            filename: String::new(),
        };
        let source = one_source(None, body.url, body.blob_id)?;
        Ok(Request1 { source, params, webhook_url: body.webhook_url })
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

async fn parse_multipart(mp: &mut Multipart) -> ApiResult<Request1> {
    let mut file = None;
    let mut filename = None;
    let mut text: std::collections::BTreeMap<String, String> = Default::default();
    loop {
        let field =
            mp.next_field().await.map_err(|e| Error::bad_request(format!("bad multipart body: {}", e.body_text())))?;
        let Some(field) = field else { break };
        let name = field.name().unwrap_or("").to_string();
        match name.as_str() {
            "file" => {
                if file.is_some() {
                    return Err(Error::field("file", "repeated", "give one file").into());
                }
                filename = field.file_name().map(|f| f.rsplit(['/', '\\']).next().unwrap_or(f).to_string());
                let bytes =
                    field.bytes().await.map_err(|e| Error::bad_request(format!("bad file part: {}", e.body_text())))?;
                file = Some(bytes.to_vec());
            }
            "url" | "blob_id" | "profile" | "mode" | "overrides" | "screenshots" | "webhook_url" | "weld_tolerance" => {
                let value = field.text().await.map_err(|e| Error::field(&name, "not text", e.body_text()))?;
                if text.insert(name.clone(), value).is_some() {
                    return Err(Error::field(&name, "repeated", format!("field {name} given twice")).into());
                }
            }
            other => {
                return Err(Error::field(other, "unknown", format!(
                    "unknown field {other:?}; fields: file, profile, mode, overrides, screenshots, webhook_url, weld_tolerance"
                ))
                .into());
            }
        }
    }
    let overrides = match text.remove("overrides").filter(|s| !s.trim().is_empty()) {
        None => Vec::new(),
        Some(s) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Object(m)) => parse_overrides(m)?,
            _ => {
                return Err(Error::field(
                    "overrides",
                    "not a JSON object",
                    "overrides must be a JSON object of key to number",
                )
                .into());
            }
        },
    };
    let screenshots = match text.remove("screenshots").as_deref().map(str::trim) {
        None | Some("") | Some("false") | Some("0") => false,
        Some("true") | Some("1") => true,
        Some(other) => {
            return Err(Error::field(
                "screenshots",
                "not a boolean",
                format!("screenshots must be true or false, got {other:?}"),
            )
            .into());
        }
    };
    let weld_tolerance = match text.remove("weld_tolerance").filter(|s| !s.trim().is_empty()) {
        None => None,
        Some(s) => Some(s.trim().parse::<f64>().map_err(|_| {
            Error::field("weld_tolerance", "not a number", format!("weld_tolerance must be a number, got {s:?}"))
        })?),
    };
    let params = Params {
        profile: text.remove("profile").filter(|s| !s.is_empty()).unwrap_or_else(|| "web".into()),
        mode: text
            .remove("mode")
            .filter(|s| !s.is_empty())
            .as_deref()
            .map(parse_mode)
            .transpose()?
            .unwrap_or(Mode::ChecksOnly),
        overrides,
        weld_tolerance,
        screenshots,
        filename: filename.unwrap_or_default(),
    };
    let source = one_source(file, text.remove("url"), text.remove("blob_id"))?;
    Ok(Request1 { source, params, webhook_url: text.remove("webhook_url").filter(|s| !s.is_empty()) })
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

/// The handler.
pub async fn validate(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    req: Request,
) -> ApiResult<Response> {
    let Request1 { source, mut params, webhook_url } = parse(&state, req).await?;
    // Options first: an unknown profile or override is 400 before any fetch.
    params.options(None)?;
    let max = max_bytes_for(&state, &caller);
    let loaded = load(&state, &caller, source, max).await?;
    if params.filename.is_empty() {
        params.filename = loaded.filename.clone();
    }
    if params.filename.is_empty() {
        params.filename = "upload".into();
    }
    sniff(&loaded.bytes)?;
    if loaded.bytes.len() as u64 > state.config.sync_max_bytes {
        if let Some(u) = &webhook_url {
            check_webhook(&state, u).await?;
        }
        let envelope = jobs::enqueue(&state, &caller, params, loaded, webhook_url).await?;
        return Ok((StatusCode::ACCEPTED, axum::Json(envelope)).into_response());
    }
    let report = run_sync(&state, &caller, params, loaded).await?;
    Ok(json_response(StatusCode::OK, report))
}

/// A JSON body that is already serialised.
pub fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Runs a synchronous validation: charged in the gate, stored, refunded on
/// a server fault. The whole of it runs on the engine pool, so a client
/// that hangs up does not leave a charge without a stored report.
pub async fn run_sync(state: &AppState, caller: &Caller, params: Params, loaded: Loaded) -> ApiResult<String> {
    let st = state.clone();
    let account = caller.account.clone();
    let plan = caller.plan;
    let out = state
        .run_engine(move || {
            let Loaded { bytes, filename: _, blob } = loaded;
            let report_id = crate::store::random_id("rpt_", 24);
            let now = st.clock.now();
            let period = super::clock::period_start(account.created_at, now);
            let cost = params.cost();
            let charged = std::sync::atomic::AtomicBool::new(false);
            let gate = || -> crate::error::Result<()> {
                match st.store.charge(&account.id, cost, plan.monthly_credits, period, "validate", &report_id, now)? {
                    Charge::Charged { .. } => {
                        charged.store(true, std::sync::atomic::Ordering::SeqCst);
                        Ok(())
                    }
                    Charge::Insufficient { balance, required } => Err(insufficient(balance, required)),
                }
            };
            let opts = params.options(st.validator.clone())?;
            let input = crate::asset::Input::from_bytes(params.filename.clone(), bytes);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::engine::validate_gated(input, &opts, &gate)
            }))
            .unwrap_or_else(|_| Err(Error::internal("the engine panicked")));
            drop(blob);
            let out = result.and_then(|(report, _stills)| store_report(&st, &account.id, &report_id, report, now));
            if let Err(e) = &out
                && charged.load(std::sync::atomic::Ordering::SeqCst)
                && is_server_fault(e.code)
                && let Err(r) = st.store.refund(&report_id, "refund: server fault", st.clock.now())
            {
                tracing::error!(error = %r, "refund failed");
            }
            out
        })
        .await??;
    Ok(out)
}

/// Stamps a report with its id and expiry, stores it for the account and
/// returns its JSON: the one path by which sync calls and jobs keep reports.
pub fn store_report(
    st: &AppState,
    account_id: &str,
    report_id: &str,
    mut report: crate::report::Report,
    now: i64,
) -> crate::error::Result<String> {
    let expires = now + st.config.report_ttl_s;
    report.report_id = Some(report_id.to_string());
    report.expires_at = Some(super::clock::rfc3339(expires));
    let body = serde_json::to_string(&report).map_err(|e| Error::internal(e.to_string()))?;
    st.store.put_report(report_id, account_id, now, expires, &body)?;
    Ok(body)
}

/// 402 INSUFFICIENT_CREDITS with `{balance, required}`.
pub fn insufficient(balance: i64, required: i64) -> Error {
    Error::new(
        ErrorCode::InsufficientCredits,
        format!("this call costs {required} credits and the balance is {balance}"),
    )
    .with_detail(serde_json::json!({"balance": balance, "required": required}))
}

/// Errors that are our fault: the charge is refunded.
pub fn is_server_fault(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::Internal | ErrorCode::RenderFailed)
}
