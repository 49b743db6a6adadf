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
    /// Text stamped on the stills (the demo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<String>,
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
        Ok(Options {
            drawer: Default::default(),
            profile,
            mode: self.mode,
            selection: Default::default(),
            validator,
            watermark: self.watermark.clone(),
        })
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

/// Parses either shape of a validate request.
pub async fn parse(state: &AppState, req: Request) -> ApiResult<Request1> {
    const FIELDS: &[&str] =
        &["url", "blob_id", "profile", "mode", "overrides", "screenshots", "webhook_url", "weld_tolerance"];
    let mut form = read_form(state, req, FIELDS).await?;
    let overrides = match form.json("overrides")? {
        None => Vec::new(),
        Some(Value::Object(m)) => parse_overrides(m)?,
        Some(_) => {
            return Err(Error::field(
                "overrides",
                "not a JSON object",
                "overrides must be a JSON object of key to number",
            )
            .into());
        }
    };
    let screenshots = match form.text("screenshots").as_deref().map(str::trim) {
        None | Some("false") | Some("0") => false,
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
    let weld_tolerance = form.typed::<f64>("weld_tolerance", "a number")?;
    let mode = form.text("mode").as_deref().map(parse_mode).transpose()?.unwrap_or(Mode::ChecksOnly);
    let profile = form.text("profile").unwrap_or_else(|| "web".into());
    let webhook_url = form.text("webhook_url");
    let (source, filename) = form.source()?;
    let params = Params {
        profile,
        mode,
        overrides,
        weld_tolerance,
        screenshots,
        filename: filename.unwrap_or_default(),
        watermark: None,
    };
    Ok(Request1 { source, params, webhook_url })
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
    if params.screenshots && params.mode != Mode::Full {
        return Err(Error::field(
            "screenshots",
            "needs mode full",
            "screenshots are the renderer's stills: ask for mode full with screenshots true",
        )
        .into());
    }
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
        let spec = jobs::JobSpec {
            kind: "validate",
            params: serde_json::to_string(&params).map_err(ApiError::internal)?,
            cost: params.cost(),
        };
        let envelope = jobs::enqueue(&state, &caller, spec, loaded, webhook_url).await?;
        return Ok((StatusCode::ACCEPTED, axum::Json(envelope)).into_response());
    }
    let report = run_sync(&state, &caller, params, loaded).await?;
    Ok(json_response(StatusCode::OK, report))
}

/// A JSON body that is already serialised.
pub fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A charge taken inside an engine gate (once the input has passed every
/// check the input alone decides) and refunded if the call then fails for a
/// reason that is not the caller's (INTERNAL, RENDER_FAILED, or whatever
/// `refund_on` names).
pub struct Meter {
    st: AppState,
    account: crate::store::Account,
    allowance: i64,
    cost: i64,
    reason: &'static str,
    /// The ledger reference: the report, render or inspection id.
    pub reference: String,
    charged: std::sync::atomic::AtomicBool,
}

impl Meter {
    /// A meter for `cost` credits of `caller` under `reference`.
    pub fn new(st: &AppState, caller: &Caller, cost: i64, reason: &'static str, reference: String) -> Meter {
        Meter {
            st: st.clone(),
            account: caller.account.clone(),
            allowance: caller.plan.monthly_credits,
            cost,
            reason,
            reference,
            charged: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The charged account's id.
    pub fn account_id(&self) -> String {
        self.account.id.clone()
    }

    /// Charges (the gate): INSUFFICIENT_CREDITS when the balance is short.
    pub fn charge(&self) -> crate::error::Result<()> {
        let now = self.st.clock.now();
        let period = super::clock::period_start(self.account.created_at, now);
        match self.st.store.charge(
            &self.account.id,
            self.cost,
            self.allowance,
            period,
            self.reason,
            &self.reference,
            now,
        )? {
            Charge::Charged { .. } => {
                self.charged.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            }
            Charge::Insufficient { balance, required } => Err(insufficient(balance, required)),
        }
    }

    /// Refunds the charge when `out` failed with a server fault or one of `also`.
    pub fn settle<T>(&self, out: &crate::error::Result<T>, also: &[ErrorCode]) {
        if let Err(e) = out
            && self.charged.load(std::sync::atomic::Ordering::SeqCst)
            && (is_server_fault(e.code) || also.contains(&e.code))
            && let Err(r) = self.st.store.refund(&self.reference, "refund: call failed", self.st.clock.now())
        {
            tracing::error!(error = %r, "refund failed");
        }
    }
}

/// Runs a synchronous validation: charged in the gate, stored, refunded on
/// a server fault. The whole of it runs on the engine pool, so a client
/// that hangs up does not leave a charge without a stored report.
pub async fn run_sync(state: &AppState, caller: &Caller, params: Params, loaded: Loaded) -> ApiResult<String> {
    let st = state.clone();
    let meter = Meter::new(state, caller, params.cost(), "validate", crate::store::random_id("rpt_", 24));
    let out = state
        .run_engine(move || {
            let Loaded { bytes, filename: _, blob } = loaded;
            let now = st.clock.now();
            let mut opts = params.options(st.validator.clone())?;
            opts.drawer = st.drawer.clone();
            let input = crate::asset::Input::from_bytes(params.filename.clone(), bytes);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::engine::validate_gated(input, &opts, &|| meter.charge())
            }))
            .unwrap_or_else(|_| Err(Error::internal("the engine panicked")));
            drop(blob);
            let out = result.and_then(|(report, stills)| {
                let keep = if params.screenshots { stills.as_ref() } else { None };
                store_report(&st, &meter.account.id, &meter.reference, report, keep, now)
            });
            meter.settle(&out, &[]);
            out
        })
        .await??;
    Ok(out)
}

/// Stamps a report with its id and expiry, stores its stills (when given:
/// full mode with `screenshots`) under signed URLs, stores it for the
/// account and returns its JSON: the one path by which sync calls, jobs and
/// the demo keep reports. Nothing is left behind when storing fails.
pub fn store_report(
    st: &AppState,
    account_id: &str,
    report_id: &str,
    mut report: crate::report::Report,
    stills: Option<&crate::render::Rendered>,
    now: i64,
) -> crate::error::Result<String> {
    let expires = now + st.config.report_ttl_s;
    report.report_id = Some(report_id.to_string());
    report.expires_at = Some(super::clock::rfc3339(expires));
    if let Some(r) = stills {
        let owner = super::media::Owner { id: report_id, account_id, now, expires_at: expires };
        let shots = super::media::store_stills(st, &owner, &r.stills)?;
        report.screenshots = Some(
            r.stills
                .iter()
                .zip(&shots)
                .enumerate()
                .map(|(i, (still, shot))| crate::report::Screenshot {
                    url: Some(super::media::url(st, shot)),
                    ..still.screenshot(i)
                })
                .collect(),
        );
    }
    let stored = serde_json::to_string(&report)
        .map_err(|e| Error::internal(e.to_string()))
        .and_then(|body| st.store.put_report(report_id, account_id, now, expires, &body).map(|_| body));
    if stored.is_err() && stills.is_some() {
        super::media::delete_owner(st, report_id);
    }
    stored
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
