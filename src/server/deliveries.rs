//! Webhook delivery: a sender task that POSTs due deliveries (signed,
//! Standard Webhooks) with its own concurrency, so a target that hangs never
//! blocks a job worker; retried with doubling backoff under the same id.
//! Messages are rows written with the job's finish (an outbox); a node
//! claims due ones for the length of an attempt, so with several nodes each
//! attempt is made by one of them.
//! Every attempt is counted in the metrics by outcome, and every message
//! given up.

use super::metrics::WebhookOutcome;
use super::state::AppState;
use crate::store::Delivery;
use std::time::Duration;

/// Delivers due webhooks until shutdown, several at once, never blocking the workers.
pub async fn webhook_sender(state: AppState) {
    let mut stopping = state.stopping.subscribe();
    let inflight = std::sync::Arc::new(tokio::sync::Semaphore::new(16));
    let sending = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashSet::<String>::new()));
    loop {
        if state.is_stopping() {
            return;
        }
        // Claimed for longer than one attempt can take: no other node sends
        // them meanwhile, and if this node dies they fall due again.
        let now = state.clock.now();
        let hold = now + state.config.webhook_timeout.as_secs() as i64 + 30;
        let due = state.store.claim_deliveries(now, 64, hold).unwrap_or_else(|e| {
            tracing::error!(error = %e, "could not list webhooks");
            Vec::new()
        });
        for d in due {
            if !sending.lock().unwrap_or_else(|p| p.into_inner()).insert(d.id.clone()) {
                continue;
            }
            let Ok(permit) = inflight.clone().acquire_owned().await else { return };
            let st = state.clone();
            let sending = sending.clone();
            tokio::spawn(async move {
                let _permit = permit;
                deliver(&st, &d).await;
                sending.lock().unwrap_or_else(|p| p.into_inner()).remove(&d.id);
            });
        }
        tokio::select! {
            _ = state.webhook_wake.notified() => {}
            _ = stopping.changed() => {}
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    }
}

async fn deliver(state: &AppState, d: &Delivery) {
    let account = match state.store.account(&d.account_id) {
        Ok(Some(a)) => a,
        _ => {
            tracing::warn!(webhook = %d.id, job = %d.job_id, "webhook given up: its account is gone");
            state.metrics.webhook_given_up();
            let _ = state.store.update_delivery(&d.id, "failed", d.attempts, d.next_at, None);
            return;
        }
    };
    let now = state.clock.now();
    let headers = super::webhook::headers(&account.webhook_secret, &d.id, now, d.body.as_bytes());
    let outcome =
        state.webhook_fetcher.post(&d.url, &headers, d.body.clone().into_bytes(), state.config.webhook_timeout).await;
    let attempts = d.attempts + 1;
    let status = outcome.as_ref().ok().map(|s| *s as i64);
    let ok = matches!(outcome, Ok(s) if (200..300).contains(&s));
    let (st, next) = if ok {
        ("delivered", now)
    } else if attempts >= state.config.webhook_attempts {
        ("failed", now)
    } else {
        let backoff = state.config.webhook_backoff.as_secs_f64() * 2f64.powi(attempts as i32 - 1);
        ("pending", now + backoff.ceil() as i64)
    };
    state.metrics.webhook_attempt(match &outcome {
        _ if ok => WebhookOutcome::Delivered,
        Ok(_) => WebhookOutcome::Rejected,
        Err(_) => WebhookOutcome::Unreachable,
    });
    if st == "failed" {
        state.metrics.webhook_given_up();
    }
    match &outcome {
        Ok(s) => tracing::info!(webhook = %d.id, job = %d.job_id, status = s, attempts, state = st, "webhook attempt"),
        Err(e) => {
            tracing::warn!(webhook = %d.id, job = %d.job_id, error = %e, attempts, state = st, "webhook attempt failed")
        }
    }
    if let Err(e) = state.store.update_delivery(&d.id, st, attempts, next, status) {
        tracing::error!(error = %e, "could not record a webhook attempt");
    }
}
