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
//! - A claimed job is leased to its node (`Config::job_lease`); the worker
//!   renews the lease while the engine runs. When a node dies, its lease
//!   runs out and another node's worker claims the job again (a takeover);
//!   a job claimed a fourth time is failed with a refund. The finish (status,
//!   result, refund, webhook message) is one transaction and only the lease's
//!   holder can make it, so a job is charged once and reported once
//!   whichever node finishes it.
//! - On shutdown a worker lets its running job finish within the grace
//!   period, else releases it to the queue. On start, a single-node store's
//!   jobs left in processing by a crash are queued again at once; blobs
//!   nobody references are deleted once an hour old (a
//!   blob store may be shared by nodes still writing theirs).
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
use crate::store::{Charge, Claimed, Delivery, Finish, Job, random_id};
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
        lease_owner: None,
        lease_until: None,
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

/// Recovers what a stopped server left behind (called before serving). A
/// single-node store's processing jobs were left by a dead process: they go
/// back to the queue at once (or fail after three attempts). With a shared
/// store another node may hold them, so their leases decide instead.
pub fn recover(state: &AppState) {
    if state.store.shared() {
        return;
    }
    let now = state.clock.now();
    match state.store.interrupted_jobs() {
        Ok(jobs) => {
            for job in jobs {
                tracing::info!(job = %job.id, "queueing an interrupted job again");
                if let Err(e) = state.store.requeue_job(&job.id, now) {
                    tracing::error!(error = %e, "requeue failed");
                }
            }
        }
        Err(e) => tracing::error!(error = %e, "could not list interrupted jobs"),
    }
    sweep_orphans(state);
    super::media::sweep_orphans(state);
}

/// Deletes blobs that no queued job or stored upload references, once they
/// are an hour old ([`crate::store::ORPHAN_MARGIN_S`]): a younger one may be
/// the input of a job another server is about to insert.
pub fn sweep_orphans(state: &AppState) {
    let before = state.clock.now() - crate::store::ORPHAN_MARGIN_S;
    let (Ok(present), Ok(live)) = (state.blobs.ids_older_than(before), state.store.live_blobs()) else { return };
    for id in present.into_iter().filter(|id| !live.contains(id)) {
        tracing::info!(blob = %id, "deleting an orphaned blob");
        let _ = state.blobs.delete(&id);
    }
}

/// The webhook message of a finished job, when it asked for one.
fn webhook_message(state: &AppState, job: &Job, status: &str, result: &str) -> Option<Delivery> {
    let url = job.webhook_url.as_ref()?;
    let mut finished = job.clone();
    finished.status = status.into();
    finished.result = Some(result.to_string());
    Some(Delivery {
        id: random_id("msg_", 24),
        job_id: job.id.clone(),
        account_id: job.account_id.clone(),
        url: url.clone(),
        body: envelope(&finished).to_string(),
        state: "pending".into(),
        attempts: 0,
        next_at: state.clock.now(),
    })
}

/// Finishes a job this node holds: status, result, refund (when it failed)
/// and webhook message in one transaction; then deletes its input. Nothing
/// happens when the lease was lost to another node (that node finishes it).
fn finish(state: &AppState, job: &Job, outcome: crate::error::Result<String>) {
    let (status, body) = match outcome {
        Ok(body) => ("done", body),
        Err(e) => {
            if e.code == crate::error::ErrorCode::Internal {
                tracing::error!(job = %job.id, cause = %e.message, "job failed");
            }
            ("failed", public_envelope(&e).to_string())
        }
    };
    let delivery = webhook_message(state, job, status, &body);
    let fin = Finish {
        id: &job.id,
        node: &state.node,
        status,
        result: &body,
        refund: (status == "failed").then_some("refund: job failed"),
        delivery: delivery.as_ref(),
        now: state.clock.now(),
    };
    match state.store.finish_job(&fin) {
        Ok(true) => {
            if fin.refund.is_some() {
                state.metrics.credits_refunded(job.credits);
            }
            if let Some(b) = &job.input {
                let _ = state.blobs.delete(b);
            }
            if delivery.is_some() {
                state.webhook_wake.notify_one();
            }
        }
        Ok(false) => tracing::warn!(job = %job.id, "the job's lease was lost to another node; its result is dropped"),
        Err(e) => tracing::error!(job = %job.id, error = %e, "could not finish a job"),
    }
}

/// One worker: claims and runs jobs until shutdown.
pub async fn worker(state: AppState) {
    let mut stopping = state.stopping.subscribe();
    loop {
        if state.is_stopping() {
            return;
        }
        let now = state.clock.now();
        let claimed = state.store.claim_job(&state.node, now, now + lease_secs(&state));
        match claimed {
            Ok(Some(Claimed { job, took_over })) => {
                use tracing::Instrument;
                let span = tracing::info_span!("job", job = %job.id);
                if took_over {
                    state.metrics.lease_takeover();
                    tracing::warn!(parent: &span, attempts = job.attempts, "took over a job whose lease ran out");
                }
                if job.attempts > MAX_ATTEMPTS {
                    let _enter = span.enter();
                    tracing::warn!("failing a job interrupted three times");
                    finish(&state, &job, Err(Error::internal("the job was interrupted three times")));
                    continue;
                }
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

/// The lease in whole seconds (at least 3, so a renewal every third fits).
fn lease_secs(state: &AppState) -> i64 {
    (state.config.job_lease.as_secs() as i64).max(3)
}

async fn run_job(state: &AppState, job: Job) {
    let Some(input) = job.input.clone() else {
        return finish(state, &job, Err(Error::internal("the job has no input")));
    };
    let st = state.clone();
    let account_id = job.account_id.clone();
    let job_id = job.id.clone();
    let (kind, params) = (job.kind.clone(), job.params.clone());
    let work = state.run_engine(move || -> crate::error::Result<String> {
        let bytes = st.blobs.read(&input).map_err(|e| Error::internal(format!("reading job input: {e}")))?;
        let file = st.blobs.local_file(&input);
        let work = Work::parse(&kind, &params)?;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work.run(&st, &account_id, bytes, file.as_deref())))
            .unwrap_or_else(|_| Err(Error::internal("the engine panicked")))
    });
    tokio::pin!(work);
    let mut stopping = state.stopping.subscribe();
    let lease = lease_secs(state);
    let mut renew = tokio::time::interval(Duration::from_secs((lease / 3) as u64));
    renew.tick().await;
    let result = loop {
        tokio::select! {
            r = &mut work => break r,
            _ = renew.tick() => {
                match state.store.renew_lease(&job_id, &state.node, state.clock.now() + lease) {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!("the job's lease ran out and another node took it; this run is dropped");
                        return;
                    }
                    Err(e) => tracing::error!(error = %e, "could not renew a job's lease"),
                }
            }
            _ = async {
                let _ = stopping.wait_for(|s| *s).await;
                tokio::time::sleep(state.config.shutdown_grace).await;
            } => {
                tracing::warn!(job = %job_id, "shutdown grace over: the job goes back to the queue");
                if let Err(e) = state.store.release_job(&job_id, &state.node, state.clock.now()) {
                    tracing::error!(error = %e, "requeue failed");
                }
                return;
            }
        }
    };
    finish(state, &job, result.and_then(|r| r));
}
