//! The janitor: hard-deletes what has expired (reports and renders, their
//! stills, unused uploads) on a schedule, until shutdown.

use super::state::AppState;

/// Hard-deletes expired reports and renders (leaving tombstones), their
/// stored stills, and unused uploads; returns (reports, uploads).
pub fn janitor_pass(state: &AppState) -> (usize, usize) {
    let now = state.clock.now();
    let reports = state.store.expire_reports(now).unwrap_or_else(|e| {
        tracing::error!(error = %e, "report expiry failed");
        0
    });
    let uploads = match state.store.expire_uploads(now) {
        Ok(list) => {
            for u in &list {
                let _ = state.blobs.delete(&u.blob_id);
            }
            list.len()
        }
        Err(e) => {
            tracing::error!(error = %e, "upload expiry failed");
            0
        }
    };
    let screenshots = super::media::expire(state, now);
    if reports + uploads + screenshots > 0 {
        tracing::info!(reports, uploads, screenshots, "janitor deleted expired data");
    }
    (reports, uploads)
}

/// Runs [`janitor_pass`] every `janitor_every` until shutdown.
pub async fn janitor(state: AppState) {
    let mut stopping = state.stopping.subscribe();
    loop {
        janitor_pass(&state);
        tokio::select! {
            _ = stopping.wait_for(|s| *s) => return,
            _ = tokio::time::sleep(state.config.janitor_every) => {}
        }
    }
}
