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
//! - Cost: 2 credits per started block of 6 stills (1-6: 2, 7-12: 4); a
//!   turntable adds 2, so a turntable with up to 6 stills costs 4
//!   (DESIGN.md "Render"). Charged once the input has loaded; a renderer
//!   failure (502 RENDER_FAILED) or a server fault is refunded.
//! - The stills (PNG) and the GIF are stored for 30 days under signed URLs
//!   (see [`super::media`]); the report is kept as `rnd_...` for
//!   POST /v1/inspect's `render_id` and expires with them.

use super::AppState;
use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use super::media::{self, Owner};
use super::validate::{Form, Meter, check_webhook, json_response, load, max_bytes_for, read_form, sniff};
use crate::engine::RenderJob;
use crate::error::Error;
use crate::render::{Angle, Background, DEFAULT_SIZE, Request as Stills, STANDARD_ANGLES, rig::TURNTABLE_ELEVATION};
use crate::report::TurntableSpec;
use axum::Extension;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

/// A render request as validated; stored with a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// The views.
    pub angles: Vec<Angle>,
    /// Still size.
    pub size: u32,
    /// `#RRGGBB` or `transparent`.
    pub background: String,
    /// The turntable, if asked for.
    pub turntable: Option<TurntableSpec>,
    /// The name shown in the report.
    pub filename: String,
}

impl Params {
    /// Credits: 2 per started block of 6 stills, plus 2 for a turntable.
    pub fn cost(&self) -> i64 {
        let blocks = self.angles.len().div_ceil(6).max(1) as i64;
        2 * blocks + if self.turntable.is_some() { 2 } else { 0 }
    }

    /// The engine's request (BAD_REQUEST when a bound is broken).
    pub fn job(&self) -> crate::error::Result<RenderJob> {
        let background =
            Background::parse(&self.background).map_err(|why| Error::field("background", "format", why))?;
        let job = RenderJob {
            request: Stills { angles: self.angles.clone(), size: self.size, background, watermark: None },
            turntable: self.turntable.clone(),
        };
        job.check()?;
        Ok(job)
    }
}

/// Reads the request's fields.
async fn parse(state: &AppState, req: Request) -> ApiResult<(super::validate::Source, Params, Option<String>)> {
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
    let params = Params { angles, size, background, turntable, filename: filename.unwrap_or_default() };
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
        let spec = super::jobs::JobSpec {
            kind: "render",
            params: serde_json::to_string(&params).map_err(ApiError::internal)?,
            cost: params.cost(),
        };
        let envelope = super::jobs::enqueue(&state, &caller, spec, loaded, webhook_url).await?;
        return Ok((StatusCode::ACCEPTED, axum::Json(envelope)).into_response());
    }
    let meter = Meter::new(&state, &caller, params.cost(), "render", crate::store::random_id("rnd_", 24));
    let st = state.clone();
    let body = state
        .run_engine(move || {
            let super::validate::Loaded { bytes, filename: _, blob } = loaded;
            let out = run(&st, &meter.account_id(), &meter.reference, &params, &job, bytes, &|| meter.charge());
            drop(blob);
            meter.settle(&out, &[]);
            out
        })
        .await??;
    Ok(json_response(StatusCode::OK, body))
}

/// Renders, stores the stills, the GIF and the report; returns the report's JSON.
fn run(
    st: &AppState,
    account_id: &str,
    render_id: &str,
    params: &Params,
    job: &RenderJob,
    bytes: Vec<u8>,
    gate: &dyn Fn() -> crate::error::Result<()>,
) -> crate::error::Result<String> {
    let input = crate::asset::Input::from_bytes(params.filename.clone(), bytes);
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::engine::render_gated(input, job, &st.drawer, gate)
    }))
    .unwrap_or_else(|_| Err(Error::internal("the renderer panicked")))?;
    let now = st.clock.now();
    let expires = now + st.config.report_ttl_s;
    let owner = Owner { id: render_id, account_id, now, expires_at: expires };
    let mut report = out.report;
    report.render_id = Some(render_id.to_string());
    report.expires_at = Some(super::clock::rfc3339(expires));
    let stored = (|| {
        let shots = media::store_stills(st, &owner, &out.stills)?;
        for (entry, shot) in report.screenshots.iter_mut().zip(&shots) {
            entry.url = Some(media::url(st, shot));
        }
        if let (Some(gif), Some(tt)) = (&out.gif, report.turntable.as_mut()) {
            let shot = media::store_gif(st, &owner, gif, TURNTABLE_ELEVATION, tt.size)?;
            tt.url = Some(media::url(st, &shot));
        }
        let body = serde_json::to_string(&report).map_err(|e| Error::internal(e.to_string()))?;
        st.store.put_report(render_id, account_id, now, expires, &body)?;
        Ok(body)
    })();
    if stored.is_err() {
        media::delete_owner(st, render_id);
    }
    stored
}

/// Runs a queued render (charged when it was queued).
pub fn run_job(st: &AppState, account_id: &str, params: &str, bytes: Vec<u8>) -> crate::error::Result<String> {
    let params: Params = serde_json::from_str(params).map_err(|e| Error::internal(format!("job params: {e}")))?;
    let job = params.job()?;
    run(st, account_id, &crate::store::random_id("rnd_", 24), &params, &job, bytes, &|| Ok(()))
}
