//! Demo mode: the drag-and-drop page at `/` and POST /demo/validate.
//!
//! - The page is one HTML file (its CSS and JS inline) embedded in the
//!   binary; no build step, no third-party requests.
//! - POST /demo/validate takes a multipart `file` (and optionally `profile`)
//!   without an API key. The server validates it in full mode with its own
//!   demo account: a `mk_demo_` key made at start (the account once, stored
//!   in the settings; a fresh key each start, the older ones revoked), held
//!   in memory and never sent to the browser. Its credits are the demo
//!   account's (plan `scale`), charged at the price list's demo price
//!   ([`super::prices::Call::Demo`]: a full validation's).
//! - Limits: 4.4 MB file (413 FILE_TOO_LARGE above), 10 requests per minute
//!   per client IP (429 with Retry-After); screenshots are watermarked
//!   "meshcheck demo" and stored like any report's (30 days, signed URLs).

use super::auth::{Caller, client_ip, limited, set_headers};
use super::error::{ApiError, ApiResult};
use super::input::read_capped;
use super::prices::Call;
use super::state::AppState;
use super::work::ValidateParams;
use crate::error::{Error, ErrorCode};
use crate::report::Mode;
use crate::store::DEMO_KEY_PREFIX;
use axum::body::Body;
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Text stamped on the demo's stills.
pub const WATERMARK: &str = "meshcheck demo";
/// Plan of the demo account.
pub const DEMO_PLAN: &str = "scale";
/// Room for the multipart framing around the file.
const FRAMING: u64 = 64 << 10;

const PAGE_SOURCE: &str = include_str!("demo/index.html");

/// The page with the check catalog's labels filled in: the families'
/// prefixes, labels and blurbs and each check's gauge, from the check
/// definitions (so the page never names a check the engine lacks).
static PAGE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| page_with_labels(PAGE_SOURCE));

/// The palette and type the page shares with the HTML report card.
const PALETTE: &str = include_str!("../palette.css");

/// `source` with its placeholders filled in: the shared palette
/// (`src/palette.css`), and the catalog's labels: the families, the gauges
/// and the number of checks.
pub fn page_with_labels(source: &str) -> String {
    use crate::checks::catalog::{CATALOG, FAMILIES};
    let families: Vec<serde_json::Value> =
        FAMILIES.iter().map(|f| serde_json::json!({"prefix": f.prefix, "label": f.label, "blurb": f.blurb})).collect();
    let gauges: serde_json::Map<String, serde_json::Value> =
        CATALOG.iter().filter_map(|c| c.gauge.map(|(m, t)| (c.id.to_string(), serde_json::json!([m, t])))).collect();
    // JSON inside a script element: `<` escaped so no `</script>` can close it.
    let js = |v: serde_json::Value| v.to_string().replace('<', "\\u003c");
    source
        .replacen("/*meshcheck:palette*/", PALETTE, 1)
        .replacen("/*meshcheck:families*/[]", &js(serde_json::Value::Array(families)), 1)
        .replacen("/*meshcheck:gauges*/{}", &js(serde_json::Value::Object(gauges)), 1)
        .replacen("<!--meshcheck:check-count-->", &CATALOG.len().to_string(), 1)
}

/// GET /: the demo page.
pub async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        PAGE.as_str(),
    )
        .into_response()
}

/// The demo account's caller, making the account (once) and a key (once
/// per process) on first use.
pub fn caller(state: &AppState) -> crate::error::Result<Caller> {
    let mut held = state.demo_key.lock().unwrap_or_else(|p| p.into_inner());
    if held.is_none() {
        let now = state.clock.now();
        let id = match state.store.setting_or_insert("demo_account_id", "")? {
            id if !id.is_empty() && state.store.account(&id)?.is_some() => id,
            _ => {
                let (account, live_key) = state.store.create_account(DEMO_PLAN, Some("demo@meshcheck.invalid"), now)?;
                state.store.revoke_key(&live_key, now)?;
                state.store.set_setting("demo_account_id", &account.id)?;
                account.id
            }
        };
        let key = state.store.create_key(&id, DEMO_KEY_PREFIX, now)?;
        for old in state.store.keys(&id)? {
            if old.revoked_at.is_none() && !key.starts_with(&old.prefix) {
                state.store.revoke_key(&old.prefix, now)?;
            }
        }
        *held = Some(key);
    }
    let key = held.as_deref().unwrap_or_default();
    let account = state.store.account_for_key(key)?.ok_or_else(|| Error::internal("the demo key is not live"))?;
    let plan = super::plan::plan(&account.plan).ok_or_else(|| Error::internal("the demo account has no plan"))?;
    Ok(Caller { account, plan })
}

/// POST /demo/validate.
pub async fn validate(State(state): State<AppState>, req: Request) -> Response {
    let d = state.take(&format!("demo:{}", client_ip(&req)), state.config.demo_per_min);
    if !d.allowed {
        return limited(&d);
    }
    let mut resp = match run(&state, req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    set_headers(resp.headers_mut(), &d);
    resp
}

async fn run(state: &AppState, req: Request) -> ApiResult<Response> {
    let max = state.config.demo_max_bytes;
    let ctype = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !ctype.to_ascii_lowercase().starts_with("multipart/form-data") {
        return Err(ApiError::new(ErrorCode::UnsupportedFormat, "send the file as multipart/form-data"));
    }
    let content_length: Option<u64> =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse().ok());
    if let Some(n) = content_length.filter(|&n| n > max + FRAMING) {
        return Err(ApiError::too_large(n, max, "the demo file"));
    }
    let (parts, body) = req.into_parts();
    let bytes = read_capped(body, content_length, max + FRAMING, "the demo file").await.map_err(|e| {
        // The cap in words is the file's, not the framing's.
        if e.0.code == ErrorCode::FileTooLarge { ApiError::too_large(max + 1, max, "the demo file") } else { e }
    })?;
    let mut mp = Multipart::from_request(Request::from_parts(parts, Body::from(bytes)), &())
        .await
        .map_err(|e| Error::bad_request(format!("not a valid multipart body: {}", e.body_text())))?;
    let mut file = None;
    let mut filename = String::from("upload");
    let mut profile = String::from("web");
    while let Some(field) =
        mp.next_field().await.map_err(|e| Error::bad_request(format!("bad multipart body: {}", e.body_text())))?
    {
        match field.name().unwrap_or("") {
            "file" => {
                if let Some(n) = field.file_name() {
                    filename = n.rsplit(['/', '\\']).next().unwrap_or(n).to_string();
                }
                file = Some(field.bytes().await.map_err(|e| Error::bad_request(e.body_text()))?.to_vec());
            }
            "profile" => profile = field.text().await.map_err(|e| Error::bad_request(e.body_text()))?,
            other => {
                return Err(
                    Error::field(other, "unknown", format!("unknown field {other:?}; fields: file, profile")).into()
                );
            }
        }
    }
    let Some(file) = file else {
        return Err(Error::field("file", "missing", "drop a .glb or a .zip bundle").into());
    };
    if file.len() as u64 > max {
        return Err(ApiError::too_large(file.len() as u64, max, "the demo file"));
    }
    let params = ValidateParams {
        profile,
        mode: Mode::Full,
        overrides: Vec::new(),
        weld_tolerance: None,
        screenshots: true,
        filename,
        watermark: Some(WATERMARK.into()),
    };
    params.options(None)?;
    super::input::sniff(&file)?;
    let st = state.clone();
    let caller = tokio::task::spawn_blocking(move || caller(&st)).await.map_err(ApiError::internal)??;
    let loaded = super::input::Loaded { bytes: file, filename: String::new(), blob: None };
    let body = super::validate::run_sync(state, &caller, Call::Demo, params, loaded).await?;
    Ok(super::input::json_response(StatusCode::OK, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_carries_every_family_and_gauge_of_the_catalog() {
        let page = page_with_labels(PAGE_SOURCE);
        assert!(!page.contains("/*meshcheck:") && !page.contains("<!--meshcheck:"), "a label placeholder is left");
        let count = format!(">{} checks, measured against a budget<", crate::checks::catalog::CATALOG.len());
        assert!(page.contains(&count), "{count}");
        for f in crate::checks::catalog::FAMILIES {
            assert!(page.contains(&format!("\"prefix\":\"{}\",\"label\":\"{}\"", f.prefix, f.label)), "{}", f.prefix);
        }
        for c in crate::checks::catalog::CATALOG.iter() {
            if let Some((m, t)) = c.gauge {
                assert!(page.contains(&format!("\"{}\":[\"{m}\",\"{t}\"]", c.id)), "{}", c.id);
            }
        }
    }
}
