//! The janitor: the scheduled work (hard-deleting what has expired: reports
//! and renders, their stills, unused uploads; putting jobs whose lease ran
//! out back in the queue; forgetting full rate-limit buckets; deleting
//! orphaned blobs; on every node, the copies of job inputs a crash left in
//! `spill/`) on a schedule, until shutdown. With several nodes on one
//! store, one node at a time runs a pass (the store's advisory lock), and a
//! node started with `--no-janitor` never does.

use super::state::AppState;

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pass {
    /// Reports and renders hard-deleted.
    pub reports: usize,
    /// Unused uploads expired.
    pub uploads: usize,
    /// Jobs whose lease ran out, queued again.
    pub released: usize,
}

/// One pass of the scheduled work (see the module docs).
pub fn janitor_pass(state: &AppState) -> Pass {
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
    let released = match state.store.release_expired_leases(now) {
        Ok(ids) => {
            for id in &ids {
                state.metrics.lease_takeover();
                tracing::warn!(job = %id, "a job's lease ran out: queued again for another node");
            }
            if !ids.is_empty() {
                state.job_wake.notify_one();
            }
            ids.len()
        }
        Err(e) => {
            tracing::error!(error = %e, "lease expiry failed");
            0
        }
    };
    if let Err(e) = state.store.prune_buckets(state.clock.now_ms() - super::ratelimit::FULL_AFTER_MS) {
        tracing::error!(error = %e, "bucket pruning failed");
    }
    // Blobs and stills no row references, once an hour old (a node may be
    // between writing a blob and recording it).
    super::jobs::sweep_orphans(state);
    super::media::sweep_orphans(state);
    if reports + uploads + screenshots + released > 0 {
        tracing::info!(reports, uploads, screenshots, released, "janitor pass");
    }
    Pass { reports, uploads, released }
}

/// Runs [`janitor_pass`] every `janitor_every` until shutdown, on one node
/// at a time.
pub async fn janitor(state: AppState) {
    let mut stopping = state.stopping.subscribe();
    loop {
        let st = state.clone();
        let ran = tokio::task::spawn_blocking(move || {
            // Each node's own copies of job inputs, left by a crash.
            super::work::sweep_spill(&st);
            st.store.exclusive("janitor", &mut || {
                janitor_pass(&st);
            })
        })
        .await;
        match ran {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => tracing::debug!("another node is running the janitor"),
            Ok(Err(e)) => tracing::error!(error = %e, "could not take the janitor lock"),
            Err(e) => tracing::error!(error = %e, "the janitor pass failed"),
        }
        tokio::select! {
            _ = stopping.wait_for(|s| *s) => return,
            _ = tokio::time::sleep(state.config.janitor_every) => {}
        }
    }
}
