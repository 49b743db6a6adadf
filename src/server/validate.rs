//! POST /v1/validate: multipart (`file`) or JSON (`url` or `blob_id`), the
//! same options in both, sync up to 20 MB and a job above.
//!
//! The order of refusals follows the specification's Errors rule 1: the
//! request's shape (400, 415), then the input's size (413), then its format
//! (415 UNSUPPORTED_FORMAT), and only then credits. A synchronous call is
//! charged inside the engine's gate, once the asset has loaded, so a
//! malformed or incomplete input (422) costs nothing; a job is charged when
//! it is queued and refunded if it fails.

use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use super::input::{Loaded, Source, check_webhook, json_response, load, max_bytes_for, read_form, sniff};
use super::jobs;
use super::metering::Meter;
use super::prices::Call;
use super::reports::store_report;
use super::state::AppState;
use super::work::{ValidateParams, Work};
use crate::error::Error;
use crate::report::Mode;
use axum::Extension;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

#[derive(Debug)]
pub struct ValidateRequest {
    /// The input.
    pub source: Source,
    /// The options.
    pub params: ValidateParams,
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

/// Parses either shape of a validate request.
pub async fn parse(state: &AppState, req: Request) -> ApiResult<ValidateRequest> {
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
    let params = ValidateParams {
        profile,
        mode,
        overrides,
        weld_tolerance,
        screenshots,
        filename: filename.unwrap_or_default(),
        watermark: None,
    };
    Ok(ValidateRequest { source, params, webhook_url })
}

/// The handler.
pub async fn validate(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    req: Request,
) -> ApiResult<Response> {
    let ValidateRequest { source, mut params, webhook_url } = parse(&state, req).await?;
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
        let spec = Work::Validate(params).spec()?;
        let envelope = jobs::enqueue(&state, &caller, spec, loaded, webhook_url).await?;
        return Ok((StatusCode::ACCEPTED, axum::Json(envelope)).into_response());
    }
    let report = run_sync(&state, &caller, params.call(), params, loaded).await?;
    Ok(json_response(StatusCode::OK, report))
}

/// Runs a synchronous validation priced as `call`: charged in the gate,
/// stored, refunded on a server fault. The whole of it runs on the engine
/// pool, so a client that hangs up does not leave a charge without a stored
/// report.
pub async fn run_sync(
    state: &AppState,
    caller: &Caller,
    call: Call,
    params: ValidateParams,
    loaded: Loaded,
) -> ApiResult<String> {
    let st = state.clone();
    let meter = Meter::new(state, caller, call, crate::store::random_id("rpt_", 24));
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
                store_report(&st, &meter.account_id(), &meter.reference, report, keep, now)
            });
            meter.settle(&out, &[]);
            out
        })
        .await??;
    Ok(out)
}
