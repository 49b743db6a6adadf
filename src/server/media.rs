//! Stored stills and turntables: PNG and GIF files in the screenshot store
//! (DATA/screenshots, or `screenshots/` in a bucket), one row each, kept
//! exactly as long as the report, render or inspection they belong to, and
//! served only through signed URLs.
//!
//! - A URL is `{base_url}/v1/screenshots/{id}.{png|gif}?exp={unix}&sig={sig}`
//!   where `sig` is the unpadded base64url HMAC-SHA256 of `"{id}.{ext}:{exp}"`
//!   under the server's URL key (a random setting made at first start, kept
//!   in the database, never logged). `exp` is the owner's expiry, so a URL
//!   dies with its report; changing `exp` or the id breaks the signature.
//! - A bad or missing signature is 404 NOT_FOUND (the same answer as an
//!   unknown file, so the route tells a forger nothing); a valid signature
//!   past `exp` is 410 REPORT_EXPIRED.
//! - The janitor deletes rows and files at expiry; at start, files no row
//!   names (a crash between writing and recording) are deleted once an hour
//!   old.

use super::error::{ApiError, ApiResult};
use super::state::AppState;
use crate::error::{Error, ErrorCode};
use crate::render::Angle;
use crate::store::{Shot, random_id};
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{KeyInit, Mac};

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

fn mac(key: &[u8], file: &str, exp: i64) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(format!("{file}:{exp}").as_bytes());
    mac
}

/// The signature of `file` (`{id}.{ext}`) valid until `exp`.
pub fn sign(key: &[u8], file: &str, exp: i64) -> String {
    URL_SAFE_NO_PAD.encode(mac(key, file, exp).finalize().into_bytes())
}

/// Whether `sig` signs `file` until `exp` (constant-time comparison).
pub fn verify(key: &[u8], file: &str, exp: i64, sig: &str) -> bool {
    URL_SAFE_NO_PAD.decode(sig).is_ok_and(|bytes| mac(key, file, exp).verify_slice(&bytes).is_ok())
}

/// The signed URL of a stored file.
pub fn url(state: &AppState, shot: &Shot) -> String {
    let file = format!("{}.{}", shot.id, shot.ext);
    let sig = sign(&state.url_key, &file, shot.expires_at);
    format!("{}/v1/screenshots/{file}?exp={}&sig={sig}", state.config.base_url, shot.expires_at)
}

/// Who a stored file belongs to and until when.
#[derive(Debug, Clone)]
pub struct Owner<'a> {
    /// The report, render or inspection id.
    pub id: &'a str,
    /// Its account.
    pub account_id: &'a str,
    /// Now.
    pub now: i64,
    /// The owner's expiry.
    pub expires_at: i64,
}

/// Stores the stills of a render as PNGs and returns their rows, in order.
pub fn store_stills(
    state: &AppState,
    owner: &Owner,
    stills: &[crate::render::Still],
) -> crate::error::Result<Vec<Shot>> {
    let pngs: Vec<Png> = stills
        .iter()
        .enumerate()
        .map(|(i, s)| Png {
            name: s.angle.file_stem(i),
            angle: s.angle,
            size: s.image.width(),
            bytes: crate::render::image_out::png(&s.image),
        })
        .collect();
    store_pngs(state, owner, &pngs)
}

/// A PNG to store.
pub struct Png {
    /// The view's name.
    pub name: String,
    /// The view.
    pub angle: Angle,
    /// Width and height.
    pub size: u32,
    /// The file.
    pub bytes: Vec<u8>,
}

/// Stores PNGs and returns their rows, in order. On any error the files
/// written so far are deleted.
pub fn store_pngs(state: &AppState, owner: &Owner, pngs: &[Png]) -> crate::error::Result<Vec<Shot>> {
    let mut shots = Vec::with_capacity(pngs.len());
    for png in pngs {
        let shot = new_shot(owner, png.name.clone(), "png", png.angle, png.size);
        if let Err(e) = state.shots.put(&shot.id, &png.bytes) {
            delete_files(state, &shots);
            return Err(Error::internal(format!("storing a still: {e}")));
        }
        shots.push(shot);
    }
    if let Err(e) = state.store.put_shots(&shots) {
        delete_files(state, &shots);
        return Err(e);
    }
    Ok(shots)
}

/// Stores a turntable GIF and returns its row.
pub fn store_gif(state: &AppState, owner: &Owner, gif: &[u8], elevation: f64, size: u32) -> crate::error::Result<Shot> {
    let shot = new_shot(owner, "turntable".into(), "gif", Angle { rv: elevation, rh: 0.0 }, size);
    state.shots.put(&shot.id, gif).map_err(|e| Error::internal(format!("storing a turntable: {e}")))?;
    if let Err(e) = state.store.put_shots(std::slice::from_ref(&shot)) {
        delete_files(state, std::slice::from_ref(&shot));
        return Err(e);
    }
    Ok(shot)
}

fn new_shot(owner: &Owner, name: String, ext: &str, angle: Angle, size: u32) -> Shot {
    Shot {
        id: random_id("shot_", 24),
        owner_id: owner.id.to_string(),
        account_id: owner.account_id.to_string(),
        name,
        ext: ext.into(),
        rv: angle.rv,
        rh: angle.rh,
        size: size as i64,
        created_at: owner.now,
        expires_at: owner.expires_at,
    }
}

fn delete_files(state: &AppState, shots: &[Shot]) {
    for s in shots {
        if let Err(e) = state.shots.delete(&s.id) {
            tracing::error!(shot = %s.id, error = %e, "could not delete a stored still");
        }
    }
}

/// Deletes an owner's stored files and rows (its report could not be stored).
pub fn delete_owner(state: &AppState, owner_id: &str) {
    match state.store.delete_shots_of(owner_id) {
        Ok(gone) => delete_files(state, &gone),
        Err(e) => tracing::error!(owner = %owner_id, error = %e, "could not delete stored stills"),
    }
}

/// Deletes files past expiry (the janitor); how many.
pub fn expire(state: &AppState, now: i64) -> usize {
    match state.store.expire_shots(now) {
        Ok(gone) => {
            delete_files(state, &gone);
            gone.len()
        }
        Err(e) => {
            tracing::error!(error = %e, "screenshot expiry failed");
            0
        }
    }
}

/// Deletes files that no row names once they are an hour old (called at
/// start, before serving; [`crate::store::ORPHAN_MARGIN_S`]: a younger one
/// may be a still another server is about to record).
pub fn sweep_orphans(state: &AppState) {
    let Ok(ids) = state.shots.ids_older_than(state.clock.now() - crate::store::ORPHAN_MARGIN_S) else { return };
    for id in ids {
        if matches!(state.store.shot(&id), Ok(None)) {
            tracing::info!(shot = %id, "deleting an unrecorded screenshot file");
            let _ = state.shots.delete(&id);
        }
    }
}

/// The query of a signed URL.
#[derive(Debug, serde::Deserialize)]
pub struct Signed {
    exp: Option<String>,
    sig: Option<String>,
}

/// GET /v1/screenshots/{id}.{png|gif}?exp=&sig=: public, authorised by the signature alone.
pub async fn screenshot(
    State(state): State<AppState>,
    Path(file): Path<String>,
    Query(q): Query<Signed>,
) -> ApiResult<Response> {
    let missing = || ApiError::not_found(format!("no screenshot at {file} (or its signature is not valid)"));
    let (Some(exp), Some(sig)) = (q.exp.and_then(|e| e.parse::<i64>().ok()), q.sig) else { return Err(missing()) };
    if !verify(&state.url_key, &file, exp, &sig) {
        return Err(missing());
    }
    let now = state.clock.now();
    let (id, ext) = file.rsplit_once('.').ok_or_else(missing)?;
    let shot = state.store.shot(id)?;
    if now >= exp || shot.as_ref().is_some_and(|s| now >= s.expires_at) {
        return Err(ApiError::new(
            ErrorCode::ReportExpired,
            "this screenshot passed its 30-day retention (it expires with its report)",
        ));
    }
    let Some(shot) = shot.filter(|s| s.ext == ext) else { return Err(missing()) };
    let shots = state.shots.clone();
    let sid = shot.id.clone();
    let bytes =
        tokio::task::spawn_blocking(move || shots.read(&sid)).await.map_err(ApiError::internal)?.map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                missing()
            } else {
                ApiError::internal(format!("reading a screenshot: {e}"))
            }
        })?;
    let ctype = if shot.ext == "gif" { "image/gif" } else { "image/png" };
    let max_age = (shot.expires_at - now).clamp(0, 86_400);
    Ok((
        [
            (header::CONTENT_TYPE, ctype.to_string()),
            (header::CACHE_CONTROL, format!("private, max-age={max_age}, immutable")),
            (header::HeaderName::from_static("x-content-type-options"), "nosniff".to_string()),
        ],
        bytes,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_bind_the_file_and_the_expiry() {
        let key = b"0123456789abcdef";
        let sig = sign(key, "shot_a.png", 1000);
        assert!(verify(key, "shot_a.png", 1000, &sig));
        assert!(!verify(key, "shot_a.png", 1001, &sig), "extending the expiry breaks it");
        assert!(!verify(key, "shot_b.png", 1000, &sig), "another file");
        assert!(!verify(key, "shot_a.gif", 1000, &sig), "another type");
        assert!(!verify(b"another key", "shot_a.png", 1000, &sig));
        assert!(!verify(key, "shot_a.png", 1000, ""));
        assert!(!verify(key, "shot_a.png", 1000, "not base64!"));
        let mut tampered = sig.clone().into_bytes();
        tampered[0] = if tampered[0] == b'A' { b'B' } else { b'A' };
        assert!(!verify(key, "shot_a.png", 1000, std::str::from_utf8(&tampered).unwrap()));
    }
}
