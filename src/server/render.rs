//! POST /v1/render: stills (and a turntable GIF) of one asset under the
//! studio rig, from a multipart `file`, a `url` or a `blob_id`.
//!
//! - Fields: `angles` (1 to 12 `{rv, rh}`; omitted: the six standard
//!   views), `size` (128 to 1024, default 1024), `background` (`#RRGGBB` or
//!   `transparent`), `lighting` (`studio` only), `turntable` (`{frames 8..120
//!   default 36, format "gif", size 128..1024 default 512}`), `webhook_url`
//!   (jobs only). Multipart sends `angles` and `turntable` as JSON text.
//!   Every bound is checked before the input is read: 400 BAD_REQUEST.
//! - Stills of an input up to 20 MB answer 200 with the render report; a
//!   turntable, or an input above 20 MB, is a job (202).
//! - Cost: the price list's ([`super::prices`]): 2 credits per started
//!   block of 6 stills (1-6: 2, 7-12: 4); a turntable adds 2, so a turntable
//!   with up to 6 stills costs 4. Charged once the input has loaded; a
//!   renderer failure (502 RENDER_FAILED) or a server fault is refunded.
//! - The stills (PNG) and the GIF are stored for 30 days under signed URLs
//!   (see [`super::media`]); the report is kept as `rnd_...` for
//!   POST /v1/inspect's `render_id` and expires with them.

use super::auth::Caller;
use super::error::ApiResult;
use super::input::{Form, Loaded, Source, check_webhook, json_response, load, max_bytes_for, read_form, sniff};
use super::metering::Meter;
use super::state::AppState;
use super::work::{RenderParams, Work, render_and_store};
use crate::error::Error;
use crate::render::{Angle, Background, DEFAULT_SIZE, STANDARD_ANGLES};
use crate::report::TurntableSpec;
use axum::Extension;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Reads the request's fields.
async fn parse(state: &AppState, req: Request) -> ApiResult<(Source, RenderParams, Option<String>)> {
    const FIELDS: &[&str] = &["url", "blob_id", "angles", "size", "background", "lighting", "turntable", "webhook_url"];
    let mut form: Form = read_form(state, req, FIELDS).await?;
    let angles = match form.json("angles")? {
        None => STANDARD_ANGLES.iter().map(|(_, a)| *a).collect(),
        Some(v) => serde_json::from_value::<Vec<Angle>>(v).map_err(|e| {
            Error::field(
                "angles",
                "format",
                format!("angles must be a JSON array of {{\"rv\": number, \"rh\": number}}: {e}"),
            )
        })?,
    };
    let size = form.typed::<u32>("size", "an integer from 128 to 1024")?.unwrap_or(DEFAULT_SIZE);
    let background = form.text("background").unwrap_or_else(|| Background::default().to_string());
    if let Some(l) = form.text("lighting").filter(|l| l != "studio") {
        return Err(
            Error::field("lighting", "enum", format!("lighting must be studio (the fixed rig), got {l:?}")).into()
        );
    }
    let turntable = match form.json("turntable")? {
        None => None,
        Some(v) => Some(serde_json::from_value::<TurntableSpec>(v).map_err(|e| {
            Error::field(
                "turntable",
                "format",
                format!("turntable must be an object with frames, format \"gif\" and size: {e}"),
            )
        })?),
    };
    let webhook_url = form.text("webhook_url");
    let (source, filename) = form.source()?;
    let params = RenderParams { angles, size, background, turntable, filename: filename.unwrap_or_default() };
    Ok((source, params, webhook_url))
}

/// POST /v1/render.
pub async fn render(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    req: Request,
) -> ApiResult<Response> {
    let (source, mut params, webhook_url) = parse(&state, req).await?;
    // Every bound first: 400 before any fetch or charge.
    let job = params.job()?;
    let loaded = load(&state, &caller, source, max_bytes_for(&state, &caller)).await?;
    if params.filename.is_empty() {
        params.filename = if loaded.filename.is_empty() { "upload".into() } else { loaded.filename.clone() };
    }
    sniff(&loaded.bytes)?;
    if params.turntable.is_some() || loaded.bytes.len() as u64 > state.config.sync_max_bytes {
        if let Some(u) = &webhook_url {
            check_webhook(&state, u).await?;
        }
        let spec = Work::Render(params).spec()?;
        let envelope = super::jobs::enqueue(&state, &caller, spec, loaded, webhook_url).await?;
        return Ok((StatusCode::ACCEPTED, axum::Json(envelope)).into_response());
    }
    let meter = Meter::new(&state, &caller, params.call(), crate::store::random_id("rnd_", 24));
    let st = state.clone();
    let body = state
        .run_engine(move || {
            let Loaded { bytes, filename: _, blob } = loaded;
            let out =
                render_and_store(&st, &meter.account_id(), &meter.reference, &params, &job, bytes, &|| meter.charge());
            drop(blob);
            meter.settle(&out, &[]);
            out
        })
        .await??;
    Ok(json_response(StatusCode::OK, body))
}
