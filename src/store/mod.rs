//! Storage behind two small traits: [`Store`] (accounts, keys, the credit
//! ledger, reports, uploads, jobs, webhook deliveries) and [`Blobs`] (the
//! transient bytes of uploads and queued jobs, and the stored stills).
//!
//! The single-node default is SQLite ([`sqlite::SqliteStore`]) plus folders
//! ([`DirBlobs`]); a blob-store URL `s3://BUCKET[/PREFIX]` keeps the blobs in
//! an S3-compatible bucket instead ([`s3::S3Blobs`]; the URL is read by
//! [`blob_store`]). The handlers only see the traits, so a PostgreSQL store
//! can be added without touching them (DESIGN.md "Service decisions").
//!
//! Times are Unix seconds, UTC. Every method is synchronous; a [`Store`]
//! method is short (one statement or one transaction), a [`Blobs`] method
//! moves one blob.

pub mod blob_store;
pub mod database;
pub mod postgres;
pub mod s3;
pub mod sqlite;

use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// An account.
#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    /// `acct_...`.
    pub id: String,
    /// Contact address, if given.
    pub email: Option<String>,
    /// Plan name: free, indie, studio or scale.
    pub plan: String,
    /// The webhook signing secret, `whsec_...`.
    pub webhook_secret: String,
    /// Creation time; monthly periods count from it.
    pub created_at: i64,
    /// The payment provider's customer id, once there is one.
    pub customer_id: Option<String>,
    /// The payment provider while a subscription is active.
    pub subscription_provider: Option<String>,
    /// The provider's subscription id while one is active.
    pub subscription_id: Option<String>,
}

/// A key as listed (the key itself is never stored).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyInfo {
    /// The first 12 characters of the key.
    pub prefix: String,
    /// Its account.
    pub account_id: String,
    /// When it was made.
    pub created_at: i64,
    /// When it was revoked, if it was.
    pub revoked_at: Option<i64>,
}

/// The outcome of a charge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charge {
    /// Charged; the balance after it.
    Charged {
        /// Credits left in the period.
        balance: i64,
    },
    /// Not charged: the balance does not cover it.
    Insufficient {
        /// Credits left in the period.
        balance: i64,
        /// Credits the call costs.
        required: i64,
    },
}

/// A report looked up for an account.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportLookup {
    /// The stored report JSON.
    Found(String),
    /// It existed and was deleted at the end of its retention.
    Expired,
    /// No such report for this account.
    Missing,
}

/// Upload states.
pub mod upload_state {
    /// The URL is issued, no bytes yet (or a PUT is streaming).
    pub const PENDING: &str = "pending";
    /// A PUT is streaming the bytes.
    pub const RECEIVING: &str = "receiving";
    /// The bytes are in the blob folder.
    pub const STORED: &str = "stored";
    /// Validated (or refused); the bytes are gone.
    pub const CONSUMED: &str = "consumed";
    /// Never used within 24 hours; the bytes (if any) are gone.
    pub const EXPIRED: &str = "expired";
}

/// An upload.
#[derive(Debug, Clone, PartialEq)]
pub struct Upload {
    /// `upl_...`, the path segment of the upload URL.
    pub id: String,
    /// `blob_...`, what POST /v1/validate takes.
    pub blob_id: String,
    /// Its account.
    pub account_id: String,
    /// One of [`upload_state`].
    pub state: String,
    /// Bytes stored.
    pub bytes: Option<i64>,
    /// When an unused upload is deleted.
    pub expires_at: i64,
}

/// A job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// `job_...`.
    pub id: String,
    /// Its account.
    pub account_id: String,
    /// What it runs: `validate`.
    pub kind: String,
    /// queued, processing, done or failed.
    pub status: String,
    /// The validated request, JSON.
    pub params: String,
    /// The transient blob holding the input bytes, until processed.
    pub input: Option<String>,
    /// Where to POST the finished envelope.
    pub webhook_url: Option<String>,
    /// Credits charged for it (refunded on a server fault).
    pub credits: i64,
    /// Times a worker has picked it up.
    pub attempts: i64,
    /// The node holding it while processing.
    pub lease_owner: Option<String>,
    /// When that lease runs out, Unix seconds.
    pub lease_until: Option<i64>,
    /// The report (done) or error envelope (failed), JSON.
    pub result: Option<String>,
    /// Creation time.
    pub created_at: i64,
    /// Last change.
    pub updated_at: i64,
}

/// A stored still or turntable: a file in the screenshot store plus this row.
#[derive(Debug, Clone, PartialEq)]
pub struct Shot {
    /// `shot_...`, the file's name in the screenshot store.
    pub id: String,
    /// The report (`rpt_`), render (`rnd_`) or inspection (`ins_`) it belongs to.
    pub owner_id: String,
    /// Its account.
    pub account_id: String,
    /// The view's name (`front`, ..., `turntable`).
    pub name: String,
    /// `png` or `gif`.
    pub ext: String,
    /// Elevation of the view, degrees.
    pub rv: f64,
    /// Azimuth of the view, degrees.
    pub rh: f64,
    /// Width and height in pixels.
    pub size: i64,
    /// When it was made.
    pub created_at: i64,
    /// When it is deleted (its owner's expiry).
    pub expires_at: i64,
}

/// A webhook message and its delivery state.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// `msg_...`, sent as `webhook-id` on every attempt.
    pub id: String,
    /// The job it reports.
    pub job_id: String,
    /// The account whose secret signs it.
    pub account_id: String,
    /// The target.
    pub url: String,
    /// The JobEnvelope, JSON.
    pub body: String,
    /// pending, delivered or failed.
    pub state: String,
    /// Attempts made.
    pub attempts: i64,
    /// When the next attempt is due.
    pub next_at: i64,
}

/// Accounts, keys, credits, reports, uploads, jobs, webhook deliveries.
pub trait Store: Send + Sync {
    /// Creates an account and its first key; returns both (the key in clear, once).
    fn create_account(&self, plan: &str, email: Option<&str>, now: i64) -> Result<(Account, String)>;
    /// Every account, oldest first.
    fn accounts(&self) -> Result<Vec<Account>>;
    /// One account.
    fn account(&self, id: &str) -> Result<Option<Account>>;
    /// Keys of an account.
    fn keys(&self, account_id: &str) -> Result<Vec<KeyInfo>>;
    /// A new key for an account (NOT_FOUND when there is no such account).
    fn create_key(&self, account_id: &str, prefix: &str, now: i64) -> Result<String>;
    /// Revokes the key given in full or by its 12-character prefix; how many were revoked.
    fn revoke_key(&self, key_or_prefix: &str, now: i64) -> Result<usize>;
    /// The account of a live key.
    fn account_for_key(&self, key: &str) -> Result<Option<Account>>;
    /// Credits used in the period starting at `period`.
    fn credits_used(&self, account_id: &str, period: i64) -> Result<i64>;
    /// Charges `credits` when `allowance - used` covers them, atomically.
    #[allow(clippy::too_many_arguments)]
    fn charge(
        &self,
        account_id: &str,
        credits: i64,
        allowance: i64,
        period: i64,
        reason: &str,
        reference: &str,
        now: i64,
    ) -> Result<Charge>;
    /// Refunds what is still charged under `reference` (idempotent); the credits refunded.
    fn refund(&self, reference: &str, reason: &str, now: i64) -> Result<i64>;
    /// Ledger rows of an account in a period: (at, credits, reason, reference).
    fn ledger(&self, account_id: &str, period: i64) -> Result<Vec<(i64, i64, String, String)>>;
    /// Stores a report.
    fn put_report(&self, id: &str, account_id: &str, created_at: i64, expires_at: i64, body: &str) -> Result<()>;
    /// A report of this account.
    fn report(&self, id: &str, account_id: &str) -> Result<ReportLookup>;
    /// Hard-deletes reports past expiry, leaving tombstones; how many.
    fn expire_reports(&self, now: i64) -> Result<usize>;
    /// Issues an upload.
    fn create_upload(&self, account_id: &str, now: i64, expires_at: i64) -> Result<Upload>;
    /// An upload by its id.
    fn upload(&self, id: &str) -> Result<Option<Upload>>;
    /// An upload by its blob id, for this account.
    fn upload_by_blob(&self, blob_id: &str, account_id: &str) -> Result<Option<Upload>>;
    /// Moves an upload from `from` to `to` (compare and set); whether it moved.
    fn move_upload(&self, id: &str, from: &str, to: &str, bytes: Option<i64>) -> Result<bool>;
    /// Uploads not consumed by `now` (pending, receiving or stored past expiry), marked expired.
    fn expire_uploads(&self, now: i64) -> Result<Vec<Upload>>;
    /// Charges the job's credits (when `allowance - used` covers them) and
    /// queues it, in one transaction: a crash leaves both or neither.
    fn charge_and_queue(&self, job: &Job, allowance: i64, period: i64, reason: &str) -> Result<Charge>;
    /// A job of this account.
    fn job(&self, id: &str, account_id: &str) -> Result<Option<Job>>;
    /// Takes the oldest job that is queued, or processing under a lease
    /// that ran out by `now` (a takeover), for `node` until `lease_until`
    /// (status processing, attempts + 1). Safe when several nodes claim at once.
    fn claim_job(&self, node: &str, now: i64, lease_until: i64) -> Result<Option<Claimed>>;
    /// Extends the lease `node` holds on a processing job; false when the
    /// lease is no longer this node's (it ran out and another node took the job).
    fn renew_lease(&self, id: &str, node: &str, lease_until: i64) -> Result<bool>;
    /// Finishes a job `node` holds in one transaction: the status and
    /// result, the refund (when asked) and the webhook message (the outbox)
    /// commit together or not at all. False (nothing changed) when the
    /// lease is no longer this node's.
    fn finish_job(&self, fin: &Finish<'_>) -> Result<bool>;
    /// Puts a processing job `node` holds back in the queue (shutdown); whether it did.
    fn release_job(&self, id: &str, node: &str, now: i64) -> Result<bool>;
    /// Puts back in the queue every processing job whose lease ran out by
    /// `now` (its node died, and no worker has claimed it since); their ids.
    fn release_expired_leases(&self, now: i64) -> Result<Vec<String>>;
    /// Jobs left in processing (under any lease) by a stopped server.
    fn interrupted_jobs(&self) -> Result<Vec<Job>>;
    /// Puts a processing job back in the queue whatever its lease (restart
    /// recovery of a single-node store, where no other node can hold it).
    fn requeue_job(&self, id: &str, now: i64) -> Result<()>;
    /// How many jobs are in each status (queued, processing, done, failed),
    /// as (status, count) in status order; a status no job has is left out.
    /// Read at every metrics scrape, so one cheap aggregate.
    fn job_counts(&self) -> Result<Vec<(String, i64)>>;
    /// Blob ids still needed: inputs of unfinished jobs and stored uploads (a
    /// PUT in progress is protected from sweeps by their age margin instead).
    fn live_blobs(&self) -> Result<Vec<String>>;
    /// Records a webhook message to deliver.
    fn insert_delivery(&self, d: &Delivery, now: i64) -> Result<()>;
    /// Claims up to `limit` pending deliveries due by `now`: their next
    /// attempt moves to `hold_until`, so no other node sends them meanwhile,
    /// and a node that dies while sending leaves them due again then. The
    /// rows come back as claimed (`next_at` = `hold_until`).
    fn claim_deliveries(&self, now: i64, limit: usize, hold_until: i64) -> Result<Vec<Delivery>>;
    /// Records an attempt: the new state, attempts, next due time and HTTP status.
    fn update_delivery(&self, id: &str, state: &str, attempts: i64, next_at: i64, status: Option<i64>) -> Result<()>;
    /// Records stored stills (their files are already in the screenshot store).
    fn put_shots(&self, shots: &[Shot]) -> Result<()>;
    /// One stored still.
    fn shot(&self, id: &str) -> Result<Option<Shot>>;
    /// The stills of a report, render or inspection of this account, in order.
    fn shots_of(&self, owner_id: &str, account_id: &str) -> Result<Vec<Shot>>;
    /// Deletes the rows of stills past expiry and returns them (the caller deletes the files).
    fn expire_shots(&self, now: i64) -> Result<Vec<Shot>>;
    /// Deletes the rows of an owner's stills and returns them.
    fn delete_shots_of(&self, owner_id: &str) -> Result<Vec<Shot>>;
    /// A server setting, set to `value` first if it has none.
    fn setting_or_insert(&self, key: &str, value: &str) -> Result<String>;
    /// Sets a server setting.
    fn set_setting(&self, key: &str, value: &str) -> Result<()>;
    /// Moves an account to `plan` with its payment state (a `None` customer keeps the one it has).
    fn set_billing(
        &self,
        account_id: &str,
        plan: &str,
        customer_id: Option<&str>,
        provider: Option<&str>,
        subscription_id: Option<&str>,
    ) -> Result<bool>;
    /// The account with this subscription id, else with this customer id.
    fn account_by_billing(&self, customer_id: Option<&str>, subscription_id: Option<&str>) -> Result<Option<Account>>;
    /// Records a payment-provider event id; false when it was seen before.
    fn first_billing_event(&self, id: &str, kind: &str, now: i64) -> Result<bool>;
    /// Reads and replaces the token bucket `key` atomically: `update` gets
    /// its stored state (`None` for a new bucket) and returns the state to
    /// store. Nodes sharing the store share the bucket.
    fn update_bucket(&self, key: &str, update: &mut (dyn FnMut(Option<Bucket>) -> Bucket + Send)) -> Result<()>;
    /// Deletes buckets last touched before `before_ms` (they are full again).
    fn prune_buckets(&self, before_ms: i64) -> Result<usize>;
    /// Runs `work` unless another node is running work under the same name
    /// (a PostgreSQL advisory lock); whether it ran. A single-node store always runs it.
    fn exclusive(&self, name: &str, work: &mut (dyn FnMut() + Send)) -> Result<bool>;
    /// Whether several nodes may share this store (then restart recovery is
    /// left to lease expiry, and limits go through [`Store::update_bucket`]).
    fn shared(&self) -> bool;
    /// Calls `wake` whenever any node queues a job (PostgreSQL `LISTEN`), on a
    /// thread of its own, until the process ends. A single-node store has
    /// nothing to listen to: the queueing handler wakes its workers directly.
    fn listen_jobs(&self, wake: Box<dyn Fn() + Send + Sync>) -> Result<()>;
}

/// A token bucket as stored: `units` (one request is 60,000) at `at_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// Units in the bucket.
    pub units: i64,
    /// When they were counted, Unix milliseconds.
    pub at_ms: i64,
}

/// A claimed job.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    /// The job, as processing under this node's lease.
    pub job: Job,
    /// Whether it was taken over from a node whose lease ran out.
    pub took_over: bool,
}

/// How a job ends ([`Store::finish_job`]).
#[derive(Debug, Clone)]
pub struct Finish<'a> {
    /// The job.
    pub id: &'a str,
    /// The node that holds its lease.
    pub node: &'a str,
    /// done or failed.
    pub status: &'a str,
    /// The report (done) or error envelope (failed), JSON.
    pub result: &'a str,
    /// Refund what the job was charged, with this ledger reason.
    pub refund: Option<&'a str>,
    /// The webhook message to record with it (the outbox).
    pub delivery: Option<&'a Delivery>,
    /// When.
    pub now: i64,
}

/// How old an unreferenced blob or still must be before a sweep deletes it,
/// seconds: one hour. Several servers may share one blob store, and one of
/// them writes a blob (a job's input, a render's stills) moments before it
/// records the row that references it; a sweep elsewhere in between must not
/// take it. Uploads, jobs and renders finish their writes well within this.
pub const ORPHAN_MARGIN_S: i64 = 3600;

/// The bytes of blobs that a server keeps out of its database: the
/// transient bytes of uploads and queued jobs (the server deletes each on
/// every path once it is processed), and the stored stills that live as long
/// as their report. Ids are `[A-Za-z0-9_]+`; any other id is refused with
/// `InvalidInput`, so no id can name a path or key outside the store.
///
/// Every method is synchronous; the server calls them from its handlers, its
/// blocking pool and its background tasks alike.
pub trait Blobs: Send + Sync {
    /// A writer for a new blob. It is visible under `id` only once
    /// [`BlobWriter::finish`] returns; a writer dropped unfinished leaves
    /// nothing. Blobs are never replaced: when `id` is already stored, this
    /// or the writer's `finish` fails with `AlreadyExists`.
    fn writer(&self, id: &str) -> std::io::Result<Box<dyn BlobWriter>>;
    /// Stores a whole blob (as [`Blobs::writer`] does).
    fn put(&self, id: &str, bytes: &[u8]) -> std::io::Result<()> {
        let mut w = self.writer(id)?;
        w.write_all(bytes)?;
        w.finish()
    }
    /// Reads a blob (`NotFound` when there is none).
    fn read(&self, id: &str) -> std::io::Result<Vec<u8>>;
    /// The blob as a file on this machine, where the store keeps blobs as
    /// files (a blob's file is never rewritten: blobs are never replaced);
    /// `None` where it does not (a bucket) or there is no such blob.
    fn local_file(&self, _id: &str) -> Option<PathBuf> {
        None
    }
    /// Deletes a blob (no error when it is already gone).
    fn delete(&self, id: &str) -> std::io::Result<()>;
    /// Every blob present, sorted.
    fn ids(&self) -> std::io::Result<Vec<String>>;
    /// The blobs last modified before `unix_secs` (Unix seconds), sorted: what
    /// an orphan sweep may consider (see [`ORPHAN_MARGIN_S`]).
    fn ids_older_than(&self, unix_secs: i64) -> std::io::Result<Vec<String>>;
}

/// A blob being written (see [`Blobs::writer`]).
pub trait BlobWriter: Send {
    /// Appends bytes.
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()>;
    /// Commits the blob: from here it is visible under its id. Fails with
    /// `AlreadyExists` when another writer committed the same id first (and
    /// leaves that blob as it was).
    fn finish(self: Box<Self>) -> std::io::Result<()>;
}

/// Refuses an id that is not `[A-Za-z0-9_]+`.
pub fn check_blob_id(id: &str) -> std::io::Result<()> {
    // Ids are ours (prefix + base62), but never let one name a path outside the store.
    if is_blob_id(id) { Ok(()) } else { Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "bad blob id")) }
}

/// Whether `id` is `[A-Za-z0-9_]+`.
pub fn is_blob_id(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Blobs as files in one folder: `DIR/ID`.
///
/// A writer writes `DIR/.ID.RANDOM.partial` and, when finished, links it to
/// `DIR/ID` (a hard link never replaces a file, so a blob is never
/// overwritten) and removes the partial file; a dropped writer removes it.
/// Partial files a crash left behind are removed when the folder is opened,
/// once they are [`ORPHAN_MARGIN_S`] old. Modification times are the files'.
#[derive(Debug, Clone)]
pub struct DirBlobs {
    dir: PathBuf,
}

impl DirBlobs {
    /// Blobs under `dir` (created if missing).
    pub fn new(dir: PathBuf) -> std::io::Result<DirBlobs> {
        std::fs::create_dir_all(&dir)?;
        let stale = SystemTime::now() - Duration::from_secs(ORPHAN_MARGIN_S as u64);
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let partial = name.to_str().is_some_and(|n| n.starts_with('.') && n.ends_with(PARTIAL));
            if partial && entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t < stale) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(DirBlobs { dir })
    }

    fn path(&self, id: &str) -> std::io::Result<PathBuf> {
        check_blob_id(id)?;
        Ok(self.dir.join(id))
    }

    fn list(&self, before: Option<SystemTime>) -> std::io::Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let Some(name) = entry.file_name().to_str().filter(|n| is_blob_id(n)).map(str::to_string) else {
                continue;
            };
            if let Some(before) = before {
                match entry.metadata().and_then(|m| m.modified()) {
                    Ok(t) if t < before => {}
                    Ok(_) => continue,
                    // Deleted since the listing: not there any more.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                }
            }
            out.push(name);
        }
        out.sort();
        Ok(out)
    }
}

/// The suffix of a [`DirBlobs`] writer's partial file.
const PARTIAL: &str = ".partial";

impl Blobs for DirBlobs {
    fn writer(&self, id: &str) -> std::io::Result<Box<dyn BlobWriter>> {
        let dest = self.path(id)?;
        if dest.try_exists()? {
            return Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, format!("blob {id} exists")));
        }
        let partial = self.dir.join(format!(".{id}.{}{PARTIAL}", random_id("", 12)));
        let file = std::fs::OpenOptions::new().write(true).create_new(true).open(&partial)?;
        Ok(Box::new(DirWriter { file: Some(std::io::BufWriter::with_capacity(256 << 10, file)), partial, dest }))
    }
    fn read(&self, id: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.path(id)?)
    }
    fn local_file(&self, id: &str) -> Option<PathBuf> {
        self.path(id).ok().filter(|p| p.is_file())
    }
    fn delete(&self, id: &str) -> std::io::Result<()> {
        match std::fs::remove_file(self.path(id)?) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
    fn ids(&self) -> std::io::Result<Vec<String>> {
        self.list(None)
    }
    fn ids_older_than(&self, unix_secs: i64) -> std::io::Result<Vec<String>> {
        let before = if unix_secs >= 0 {
            SystemTime::UNIX_EPOCH + Duration::from_secs(unix_secs as u64)
        } else {
            SystemTime::UNIX_EPOCH - Duration::from_secs(unix_secs.unsigned_abs())
        };
        self.list(Some(before))
    }
}

/// A [`DirBlobs`] writer: a partial file, linked to the blob's name by `finish`.
struct DirWriter {
    file: Option<std::io::BufWriter<std::fs::File>>,
    partial: PathBuf,
    dest: PathBuf,
}

impl BlobWriter for DirWriter {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match &mut self.file {
            Some(f) => f.write_all(bytes),
            None => Err(std::io::Error::other("the blob writer is closed")),
        }
    }
    fn finish(mut self: Box<Self>) -> std::io::Result<()> {
        let file = self.file.take().ok_or_else(|| std::io::Error::other("the blob writer is closed"))?;
        drop(file.into_inner().map_err(|e| e.into_error())?);
        // Drop removes the partial file whether or not the link was made.
        std::fs::hard_link(&self.partial, &self.dest)
    }
}

impl Drop for DirWriter {
    fn drop(&mut self) {
        self.file.take();
        let _ = std::fs::remove_file(&self.partial);
    }
}

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `prefix` + `n` random base62 characters from the OS's generator.
pub fn random_id(prefix: &str, n: usize) -> String {
    let mut out = String::with_capacity(prefix.len() + n);
    out.push_str(prefix);
    let mut buf = [0u8; 64];
    while out.len() < prefix.len() + n {
        getrandom::fill(&mut buf).expect("the OS random generator works");
        // 248 = 4 * 62: rejection keeps every character equally likely.
        for &b in buf.iter().filter(|&&b| b < 248) {
            if out.len() == prefix.len() + n {
                break;
            }
            out.push(BASE62[(b % 62) as usize] as char);
        }
    }
    out
}

/// Key prefix of account keys.
pub const LIVE_KEY_PREFIX: &str = "mk_live_";
/// Key prefix of the demo account's keys.
pub const DEMO_KEY_PREFIX: &str = "mk_demo_";

/// A new API key: the prefix and 32 base62 characters.
pub fn new_key(prefix: &str) -> String {
    random_id(prefix, 32)
}

/// SHA-256 of a key, lower-case hex: the only form a key is stored in.
pub fn key_hash(key: &str) -> String {
    hex(&Sha256::digest(key.as_bytes()))
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A database error: logged by the server, answered as INTERNAL without detail.
pub(crate) fn db_error(e: impl std::fmt::Display) -> Error {
    Error::internal(format!("database: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_base62_of_the_asked_length() {
        let k = new_key(LIVE_KEY_PREFIX);
        assert_eq!(k.len(), 8 + 32);
        assert!(k.starts_with("mk_live_"));
        assert!(k[8..].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(new_key(LIVE_KEY_PREFIX), k);
        assert_eq!(key_hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn dir_blobs_refuse_paths() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = DirBlobs::new(dir.path().join("b")).unwrap();
        assert!(blobs.put("../x", b"1").is_err());
        blobs.put("blob_1", b"hello").unwrap();
        assert!(blobs.put("blob_1", b"again").is_err(), "create_new");
        assert_eq!(blobs.read("blob_1").unwrap(), b"hello");
        assert_eq!(blobs.ids().unwrap(), vec!["blob_1".to_string()]);
        blobs.delete("blob_1").unwrap();
        blobs.delete("blob_1").unwrap();
        assert!(blobs.ids().unwrap().is_empty());
    }
}
