//! The persisted job queue: charging and queueing, its workers, restart
//! recovery, and recording a finished job's webhook (delivered by
//! [`super::deliveries`]); the janitor is [`super::janitor`].
//!
//! - A job is a row (queued, processing, done, failed) plus its input bytes
//!   as a transient blob. It is charged when queued; a failed job is
//!   refunded (its error was either the input's, which the rule "charge
//!   only after the input passed" forgives, or ours).
//! - Workers claim the oldest queued job, run the engine on the blocking
//!   pool, store the report, finish the row, delete the blob (on every path)
//!   and, when a `webhook_url` was given, record a delivery.
//! - On shutdown a worker lets its running job finish within the grace
//!   period, else puts it back in the queue. On start, jobs left in
//!   processing by a crash are queued again, or failed with a refund after
//!   three attempts; blobs nobody references are deleted.
//! - Webhooks: the finished JobEnvelope, signed (Standard Webhooks), POSTed
//!   by a sender task with its own concurrency, so a target that hangs never
//!   blocks a worker; retried with doubling backoff under the same id.

use super::auth::Caller;
use super::clock::period_start;
use super::error::{ApiError, ApiResult, public_envelope};
use super::input::{BlobGuard, Loaded};
use super::metering::insufficient;
use super::state::AppState;
use super::work::{JobSpec, Work};
use crate::error::Error;
use crate::store::{Charge, Delivery, Job, random_id};
use serde_json::{Value, json};
use std::time::Duration;

/// Attempts before an interrupted job is failed instead of run again.
const MAX_ATTEMPTS: i64 = 3;

/// The JobEnvelope of a job row.
pub fn envelope(job: &Job) -> Value {
    let result = match job.status.as_str() {
        "done" | "failed" => job.result.as_deref().and_then(|r| serde_json::from_str(r).ok()).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    json!({"job_id": job.id, "status": job.status, "poll": format!("/v1/jobs/{}", job.id), "result": result})
}

/// Charges and queues a job; the blob (if any) now belongs to the job.
pub async fn enqueue(
    state: &AppState,
    caller: &Caller,
    spec: JobSpec,
    loaded: Loaded,
    webhook_url: Option<String>,
) -> ApiResult<Value> {
    let now = state.clock.now();
    let job_id = random_id("job_", 24);
    let cost = spec.cost;
    let period = period_start(caller.account.created_at, now);
    let Loaded { bytes, filename: _, blob } = loaded;
    // The input must sit on disk for a persisted queue: an upload's blob is
    // kept as it is; fetched bytes are written to a new one.
    let input = match blob {
        Some(guard) => guard.keep(),
        None => {
            let id = random_id("blob_", 24);
            let blobs = state.blobs.clone();
            let id2 = id.clone();
            tokio::task::spawn_blocking(move || blobs.put(&id2, &bytes))
                .await
                .map_err(ApiError::internal)?
                .map_err(|e| ApiError::internal(format!("storing job input: {e}")))?;
            id
        }
    };
    let guard = BlobGuard::new(state, &input);
    let job = Job {
        id: job_id.clone(),
        account_id: caller.account.id.clone(),
        kind: spec.kind.into(),
        status: "queued".into(),
        params: spec.params,
        input: Some(input),
        webhook_url,
        credits: cost,
        attempts: 0,
        result: None,
        created_at: now,
        updated_at: now,
    };
    // One transaction: a crash leaves a charged, queued job or neither.
    let reason = format!("{} (job)", spec.kind);
    match state.store.charge_and_queue(&job, caller.plan.monthly_credits, period, &reason)? {
        Charge::Charged { .. } => {}
        Charge::Insufficient { balance, required } => return Err(insufficient(balance, required).into()),
    }
    state.metrics.credits_charged(cost);
    tracing::info!(job = %job.id, kind = %job.kind, credits = cost, "job queued");
    guard.keep();
    state.job_wake.notify_one();
    Ok(envelope(&job))
}

/// Recovers what a stopped server left behind (called before serving).
pub fn recover(state: &AppState) {
    let now = state.clock.now();
    match state.store.interrupted_jobs() {
        Ok(jobs) => {
            // One listing of the blob folder, not one per job.
            let present = state.blobs.ids().unwrap_or_default();
            for job in jobs {
                let input_ok = job.input.as_deref().is_some_and(|b| present.iter().any(|i| i == b));
                if job.attempts >= MAX_ATTEMPTS || !input_ok {
                    let why = if input_ok { "the job was interrupted three times" } else { "the job's input was lost" };
                    tracing::warn!(job = %job.id, why, "failing an interrupted job");
                    fail(state, &job, Error::internal(why));
                } else {
                    tracing::info!(job = %job.id, "queueing an interrupted job again");
                    if let Err(e) = state.store.requeue_job(&job.id, now) {
                        tracing::error!(error = %e, "requeue failed");
                    }
                }
            }
        }
        Err(e) => tracing::error!(error = %e, "could not list interrupted jobs"),
    }
    sweep_orphans(state);
    super::media::sweep_orphans(state);
}

/// Deletes blobs that no queued job or stored upload references.
pub fn sweep_orphans(state: &AppState) {
    let (Ok(live), Ok(present)) = (state.store.live_blobs(), state.blobs.ids()) else { return };
    for id in present.into_iter().filter(|id| !live.contains(id)) {
        tracing::info!(blob = %id, "deleting an orphaned blob");
        let _ = state.blobs.delete(&id);
    }
}

/// Finishes a job as failed, refunds it, deletes its input, queues its webhook.
fn fail(state: &AppState, job: &Job, e: Error) {
    let now = state.clock.now();
    if e.code == crate::error::ErrorCode::Internal {
        tracing::error!(job = %job.id, cause = %e.message, "job failed");
    }
    let body = public_envelope(&e).to_string();
    if let Err(err) = state.store.finish_job(&job.id, "failed", &body, now) {
        tracing::error!(error = %err, "could not finish a job");
    }
    match state.store.refund(&job.id, "refund: job failed", now) {
        Ok(credits) => state.metrics.credits_refunded(credits),
        Err(err) => tracing::error!(error = %err, "refund failed"),
    }
    if let Some(b) = &job.input {
        let _ = state.blobs.delete(b);
    }
    queue_webhook(state, job, "failed", Some(body));
}

fn queue_webhook(state: &AppState, job: &Job, status: &str, result: Option<String>) {
    let Some(url) = &job.webhook_url else { return };
    let mut finished = job.clone();
    finished.status = status.into();
    finished.result = result;
    let d = Delivery {
        id: random_id("msg_", 24),
        job_id: job.id.clone(),
        account_id: job.account_id.clone(),
        url: url.clone(),
        body: envelope(&finished).to_string(),
        state: "pending".into(),
        attempts: 0,
        next_at: state.clock.now(),
    };
    match state.store.insert_delivery(&d, state.clock.now()) {
        Ok(()) => state.webhook_wake.notify_one(),
        Err(e) => tracing::error!(error = %e, "could not queue a webhook"),
    }
}

/// One worker: claims and runs jobs until shutdown.
pub async fn worker(state: AppState) {
    let mut stopping = state.stopping.subscribe();
    loop {
        if state.is_stopping() {
            return;
        }
        let claimed = state.store.claim_job(state.clock.now());
        match claimed {
            Ok(Some(job)) => {
                use tracing::Instrument;
                let span = tracing::info_span!("job", job = %job.id);
                span.in_scope(|| tracing::info!(kind = %job.kind, attempt = job.attempts, "job started"));
                run_job(&state, job).instrument(span).await
            }
            Ok(None) => {
                tokio::select! {
                    _ = state.job_wake.notified() => {}
                    _ = stopping.changed() => {}
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "could not claim a job");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

async fn run_job(state: &AppState, job: Job) {
    let Some(input) = job.input.clone() else {
        return fail(state, &job, Error::internal("the job has no input"));
    };
    let st = state.clone();
    let account_id = job.account_id.clone();
    let job_id = job.id.clone();
    let (kind, params) = (job.kind.clone(), job.params.clone());
    let work = state.run_engine(move || -> crate::error::Result<String> {
        let bytes = st.blobs.read(&input).map_err(|e| Error::internal(format!("reading job input: {e}")))?;
        let work = Work::parse(&kind, &params)?;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work.run(&st, &account_id, bytes)))
            .unwrap_or_else(|_| Err(Error::internal("the engine panicked")))
    });
    tokio::pin!(work);
    let mut stopping = state.stopping.subscribe();
    let result = tokio::select! {
        r = &mut work => r,
        _ = async {
            let _ = stopping.wait_for(|s| *s).await;
            tokio::time::sleep(state.config.shutdown_grace).await;
        } => {
            tracing::warn!(job = %job_id, "shutdown grace over: the job goes back to the queue");
            if let Err(e) = state.store.requeue_job(&job_id, state.clock.now()) {
                tracing::error!(error = %e, "requeue failed");
            }
            return;
        }
    };
    match result.and_then(|r| r) {
        Ok(body) => {
            if let Err(e) = state.store.finish_job(&job.id, "done", &body, state.clock.now()) {
                tracing::error!(error = %e, "could not finish a job");
            }
            if let Some(b) = &job.input {
                let _ = state.blobs.delete(b);
            }
            queue_webhook(state, &job, "done", Some(body));
        }
        Err(e) => fail(state, &job, e),
    }
}
