//! POST /v1/inspect: a vision model's answer about renders of an asset.
//!
//! - Input: exactly one of a multipart `file`, `url`, `blob_id` (each
//!   rendered fresh at the six standard angles, 512 px, the stills stored
//!   for 30 days under the inspection's id) or `render_id` (the stored stills
//!   of a prior POST /v1/render, or of a full-mode validate with
//!   `screenshots: true`, given by its `rpt_` id; 404 when unknown or when
//!   it has no stored stills, 410 REPORT_EXPIRED past its retention).
//! - `check` is required: VIS-001 with `prompt`, VIS-002 alone, VIS-003 with
//!   `question` (400 otherwise, before anything is read or charged).
//! - Priced by [`super::prices`] (8 credits), charged once the input has
//!   loaded (before the model is asked) and refunded when the model gives no valid answer (503
//!   INSPECT_UNAVAILABLE) or the server or renderer fails. No provider
//!   configured is 503 with nothing charged.
//! - The model is any OpenAI-compatible endpoint (`MESHCHECK_VISION_*`, see
//!   [`crate::vision`]); the answer is checked against the check's schema.

use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use super::input::{Form, Source, load, max_bytes_for, read_form, sniff};
use super::media::{self, Owner, Png};
use super::metering::Meter;
use super::prices::Call;
use super::state::AppState;
use crate::error::{Error, ErrorCode};
use crate::store::{ReportLookup, Shot};
use crate::vision::{self, Check};
use axum::Extension;
use axum::extract::{Request, State};
use axum::response::Response;

/// POST /v1/inspect.
pub async fn inspect(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    req: Request,
) -> ApiResult<Response> {
    const FIELDS: &[&str] = &["url", "blob_id", "render_id", "check", "prompt", "question"];
    let mut form: Form = read_form(&state, req, FIELDS).await?;
    let id = form
        .text("check")
        .ok_or_else(|| Error::field("check", "required", "check is required: VIS-001, VIS-002 or VIS-003"))?;
    let (prompt, question) = (form.text("prompt"), form.text("question"));
    let check = Check::parse(&id, prompt.as_deref(), question.as_deref())?;
    let render_id = form.text("render_id");
    let either = |why: &str| -> ApiError {
        Error::field("input", why, "give exactly one of file, url, blob_id and render_id").into()
    };
    let source = match (render_id, form.source()) {
        (None, Ok(s)) => Ok(s),
        (Some(_), Ok(_)) => return Err(either("ambiguous")),
        (render_id, Err(e)) => match (render_id, reason(&e).as_deref()) {
            (Some(r), Some("missing")) => Err(r),
            (None, Some("missing")) => return Err(either("missing")),
            (Some(_), _) => return Err(either("ambiguous")),
            (None, _) => return Err(e),
        },
    };
    let Some(config) = state.config.vision.clone() else {
        return Err(ApiError(
            Error::new(ErrorCode::InspectUnavailable, "no vision model is configured on this server")
                .with_detail(serde_json::json!({"reason": "not_configured"})),
        ));
    };
    let inspect_id = crate::store::random_id("ins_", 24);
    let meter = std::sync::Arc::new(Meter::new(&state, &caller, Call::Inspect, inspect_id.clone()));
    let stills = match source {
        Err(render_id) => {
            let stills = stored_stills(&state, &caller, &render_id).await?;
            meter.charge()?;
            stills
        }
        Ok((source, filename)) => fresh_stills(&state, &caller, source, filename, &meter).await?,
    };
    let m = meter.clone();
    let out = tokio::task::spawn_blocking(move || {
        let out = vision::inspect(&config, &check, &stills).map(|mut answer| {
            answer.inspect_id = Some(inspect_id);
            answer
        });
        m.settle(&out, &[ErrorCode::InspectUnavailable]);
        out
    })
    .await
    .map_err(ApiError::internal)?;
    if let Err(e) = &out
        && e.code == ErrorCode::InspectUnavailable
    {
        // The stills rendered for it are of no use now.
        media::delete_owner(&state, &meter.reference);
    }
    let body = serde_json::to_string(&out?).map_err(ApiError::internal)?;
    Ok(super::input::json_response(axum::http::StatusCode::OK, body))
}

/// The stills of a stored render or report, reduced to the model's size.
async fn stored_stills(state: &AppState, caller: &Caller, render_id: &str) -> ApiResult<Vec<vision::Still>> {
    match state.store.report(render_id, &caller.account.id)? {
        ReportLookup::Found(_) => {}
        ReportLookup::Expired => {
            return Err(ApiError::new(
                ErrorCode::ReportExpired,
                format!("{render_id} passed its 30-day retention; its stills were deleted"),
            ));
        }
        ReportLookup::Missing => {
            return Err(ApiError::not_found(format!("no render or report {render_id} for this account")));
        }
    }
    let shots: Vec<Shot> =
        state.store.shots_of(render_id, &caller.account.id)?.into_iter().filter(|s| s.ext == "png").collect();
    if shots.is_empty() {
        return Err(ApiError::not_found(format!(
            "{render_id} has no stored stills: render it (POST /v1/render) or validate with mode full and screenshots true"
        )));
    }
    let st = state.clone();
    tokio::task::spawn_blocking(move || {
        shots
            .iter()
            .map(|s| {
                let bytes = st.shots.read(&s.id).map_err(|e| Error::internal(format!("reading a still: {e}")))?;
                let png = shrink(&bytes)?;
                Ok(vision::Still {
                    shot: vision::Shot {
                        name: s.name.clone(),
                        angle: crate::render::Angle { rv: s.rv, rh: s.rh },
                        size: png.1,
                        path: None,
                        url: Some(media::url(&st, s)),
                    },
                    png: png.0,
                })
            })
            .collect::<crate::error::Result<Vec<_>>>()
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError)
}

/// A PNG no larger than the model's still size, and its width.
fn shrink(bytes: &[u8]) -> crate::error::Result<(Vec<u8>, u32)> {
    let img = image::load_from_memory(bytes).map_err(|e| Error::internal(format!("a stored still: {e}")))?.into_rgba8();
    if img.width() <= vision::STILL_SIZE && img.height() <= vision::STILL_SIZE {
        return Ok((bytes.to_vec(), img.width()));
    }
    let small = image::DynamicImage::ImageRgba8(img).thumbnail(vision::STILL_SIZE, vision::STILL_SIZE).into_rgba8();
    Ok((crate::render::image_out::png(&small), small.width()))
}

/// Loads the input, charges, renders the six standard views and stores them.
async fn fresh_stills(
    state: &AppState,
    caller: &Caller,
    source: Source,
    filename: Option<String>,
    meter: &std::sync::Arc<Meter>,
) -> ApiResult<Vec<vision::Still>> {
    let loaded = load(state, caller, source, max_bytes_for(state, caller)).await?;
    sniff(&loaded.bytes)?;
    let name =
        filename.unwrap_or_else(|| if loaded.filename.is_empty() { "upload".into() } else { loaded.filename.clone() });
    let st = state.clone();
    let m = meter.clone();
    let out = state
        .run_engine(move || {
            let super::input::Loaded { bytes, filename: _, blob } = loaded;
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> crate::error::Result<_> {
                let input = crate::asset::Input::from_bytes(name, bytes);
                let source = crate::render::Source::for_drawer(&st.drawer, &input);
                let opened = crate::asset::open(input)?;
                let local = matches!(st.drawer, crate::render::Drawer::Local);
                let asset = crate::asset::load_opened_with(&opened, crate::asset::LoadOptions { keep_images: local })?;
                drop(opened);
                m.charge()?;
                let stills = crate::engine::vision_stills_with(&st.drawer, &source, &asset)?;
                let now = st.clock.now();
                let account_id = m.account_id();
                let owner =
                    Owner { id: &m.reference, account_id: &account_id, now, expires_at: now + st.config.report_ttl_s };
                let pngs: Vec<Png> = stills
                    .iter()
                    .map(|s| Png {
                        name: s.shot.name.clone(),
                        angle: s.shot.angle,
                        size: s.shot.size,
                        bytes: s.png.clone(),
                    })
                    .collect();
                let shots = media::store_pngs(&st, &owner, &pngs)?;
                Ok(stills
                    .into_iter()
                    .zip(&shots)
                    .map(|(mut s, shot)| {
                        s.shot.url = Some(media::url(&st, shot));
                        s
                    })
                    .collect::<Vec<_>>())
            }))
            .unwrap_or_else(|_| Err(Error::internal("the renderer panicked")));
            drop(blob);
            m.settle(&out, &[]);
            out
        })
        .await??;
    Ok(out)
}

/// The `reason` in an error's detail.
fn reason(e: &ApiError) -> Option<String> {
    e.0.detail.as_deref().and_then(|d| d.get("reason")).and_then(|r| r.as_str()).map(str::to_string)
}
